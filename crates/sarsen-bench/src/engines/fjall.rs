//! fjall (an LSM tree in Rust) through its public API, configured as fjall's own
//! benchmarks drive it:
//!
//! - a plain (non-transactional) `Database` in the directory with one keyspace,
//!   `bench`, created with default options;
//! - every `*_batch` method is one atomic `WriteBatch` (`Database::batch`, `insert` /
//!   `remove`, `commit`), the unit fjall's own `batch_write` benchmark measures;
//! - `manual_journal_persist(true)`, as the fjall author's rust-storage-bench opens it:
//!   for asynchronous workloads a commit leaves its journal entry in fjall's write
//!   buffer, never fsync'd per commit (RocksDB's `manual_wal_flush`); for durable ones
//!   each batch commits with `durability(Some(PersistMode::SyncAll))`, so the journal
//!   is fsync'd before the commit returns (the mode redb's comparison benchmark uses
//!   for fjall's synchronous commits); [`Engine::sync`] is
//!   `Database::persist(PersistMode::SyncAll)`, and dropping the database persists
//!   the journal too;
//! - the block cache (`cache_size`) is [`OpenOptions::cache_bytes`], the budget every
//!   engine gets (fjall's default, 32 MiB, when it is 0); other settings keep fjall's
//!   defaults.
//!
//! A `WriteBatch` cannot be read, so [`Engine::update_batch`] reads the committed
//! value (or, for a key that repeats in the batch, the value this batch last wrote,
//! from a small map) and writes the new values in one batch. Like RocksDB's
//! `WriteBatch`, it is atomic but not isolated from other writers. Point gets are plain
//! `Keyspace::get`s (each reads the latest snapshot); a batch of gets shares one
//! `Database::snapshot`, and a scan is one keyspace iterator (itself a snapshot).
//!
//! [`Engine::delete_batch`] returns `keys.len()`: a tombstone is written without
//! looking the key up. fjall 3 has no merge operator, so [`Engine::merge_batch`] is
//! unsupported. Writers may run on many threads: they build and read concurrently,
//! and each commit takes the journal lock only for its append and memtable insert,
//! as RocksDB's write group serializes WAL appends.

use std::path::Path;

use ::fjall::{Database, Keyspace, KeyspaceCreateOptions, OwnedWriteBatch, PersistMode, Readable};

use super::{Engine, OpenOptions, Reader, Result, SyncMode, UpdateFn};

/// Name of the one keyspace the benchmark uses.
const KEYSPACE: &str = "bench";

/// The fjall version this module is built against (pinned in `Cargo.toml`).
const VERSION: &str = "fjall 3.1.13";

/// A fjall database and its benchmark keyspace.
pub struct FjallEngine {
    /// The open database (journal, keyspaces, block cache, background workers).
    db: Database,
    /// The benchmark's keyspace.
    ks: Keyspace,
    /// `Some(SyncAll)` for durable commits, `None` to leave the journal buffered.
    commit_persist: Option<PersistMode>,
}

impl FjallEngine {
    /// A new write batch that commits with the engine's durability.
    fn batch(&self) -> OwnedWriteBatch {
        self.db.batch().durability(self.commit_persist)
    }
}

impl Engine for FjallEngine {
    type Reader<'a> = FjallReader<'a>;

    const CONCURRENT_WRITERS: bool = true;

    const MAPS_DB: bool = false;

    fn version() -> String {
        VERSION.into()
    }

    fn config(opts: &OpenOptions) -> String {
        let commit = match opts.sync {
            SyncMode::Async => "no persist per commit",
            SyncMode::Durable => "PersistMode::SyncAll per commit",
        };
        let cache = match opts.cache_bytes {
            0 => "default (32 MiB)".to_string(),
            n => format!("{n} bytes"),
        };
        format!("manual_journal_persist(true), {commit}, cache {cache}; one WriteBatch per batch")
    }

    fn open(dir: &Path, opts: &OpenOptions) -> Result<Self> {
        let mut builder = Database::builder(dir).manual_journal_persist(true);
        if opts.cache_bytes > 0 {
            builder = builder.cache_size(opts.cache_bytes);
        }
        let db = builder.open()?;
        let ks = db.keyspace(KEYSPACE, KeyspaceCreateOptions::default)?;
        let commit_persist = match opts.sync {
            SyncMode::Async => None,
            SyncMode::Durable => Some(PersistMode::SyncAll),
        };
        Ok(FjallEngine {
            db,
            ks,
            commit_persist,
        })
    }

    fn write_batch(&self, pairs: &[(&[u8], &[u8])], _sorted_append: bool) -> Result<()> {
        // An LSM tree has no append mode: sorted keys take the same path.
        let mut batch = self.batch();
        for &(k, v) in pairs {
            batch.insert(&self.ks, k, v);
        }
        batch.commit()?;
        Ok(())
    }

    fn delete_batch(&self, keys: &[&[u8]]) -> Result<u64> {
        let mut batch = self.batch();
        for &k in keys {
            batch.remove(&self.ks, k);
        }
        batch.commit()?;
        Ok(keys.len() as u64)
    }

    fn update_batch(&self, keys: &[&[u8]], update: &mut UpdateFn<'_>) -> Result<u64> {
        let (written, found) =
            super::update_unreadable_batch(keys, update, |k| Ok(self.ks.get(k)?))?;
        let mut batch = self.batch();
        for (k, v) in written {
            batch.insert(&self.ks, k, v);
        }
        batch.commit()?;
        Ok(found)
    }

    fn reader(&self) -> Result<FjallReader<'_>> {
        Ok(FjallReader { engine: self })
    }

    fn scan<F: FnMut(&[u8], &[u8])>(&self, reverse: bool, mut visit: F) -> Result<u64> {
        let iter = self.ks.iter();
        let mut n = 0;
        let mut each = |guard: ::fjall::Guard| -> Result<()> {
            let (k, v) = guard.into_inner()?;
            visit(&k, &v);
            n += 1;
            Ok(())
        };
        if reverse {
            iter.rev().try_for_each(&mut each)?;
        } else {
            iter.into_iter().try_for_each(&mut each)?;
        }
        Ok(n)
    }

    fn sync(&self) -> Result<()> {
        Ok(self.db.persist(PersistMode::SyncAll)?)
    }
}

/// Reads through the engine's keyspace: a plain point get per get, one snapshot per
/// batch of gets.
pub struct FjallReader<'a> {
    /// The engine read from.
    engine: &'a FjallEngine,
}

impl Reader for FjallReader<'_> {
    #[inline]
    fn get<R, F: FnOnce(&[u8]) -> R>(&mut self, key: &[u8], f: F) -> Result<Option<R>> {
        let value = self.engine.ks.get(key)?;
        Ok(value.as_deref().map(f))
    }

    fn get_batch(
        &mut self,
        keys: &[&[u8]],
        visit: &mut dyn FnMut(usize, Option<&[u8]>),
    ) -> Result<()> {
        let snapshot = self.engine.db.snapshot();
        for (i, &k) in keys.iter().enumerate() {
            let value = snapshot.get(&self.engine.ks, k)?;
            visit(i, value.as_deref());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    /// The shared engine conformance test.
    #[test]
    fn conformance() {
        crate::engines::conformance::run::<super::FjallEngine>();
    }
}
