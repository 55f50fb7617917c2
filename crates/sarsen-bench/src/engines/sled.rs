//! sled 0.34 through its public API, configured as sled's own benchmarks
//! (`benchmarks/criterion` in the sled repository) open it:
//!
//! - the default tree of a `sled::Db` in the directory, default mode;
//! - `flush_every_ms(None)`: no background flusher, so for asynchronous workloads a
//!   commit stays in sled's IO buffers until [`Engine::sync`] or the database is
//!   dropped (sled flushes on drop);
//! - for durable workloads every batch is followed by `Tree::flush` before it
//!   returns. sled documents `flush` as calling fsync, but 0.34 on Linux ends it with
//!   `sync_file_range`, which neither flushes the device's write cache nor syncs
//!   metadata; so that a durable commit is on stable storage as the harness requires
//!   (and as every other engine's is), the engine then `fdatasync`s sled's log file
//!   (`db` in the directory) through a handle of its own. [`Engine::sync`] does the
//!   same;
//! - `cache_capacity` is [`OpenOptions::cache_bytes`], the budget every engine gets
//!   (sled's default, 1 GiB, when it is 0);
//! - with [`MergeOperator::Uint64Add`] requested, the tree gets a `set_merge_operator`
//!   function adding 8-byte little-endian integers, wrapping (a missing or malformed
//!   value counts as 0, as in RocksDB's `UInt64AddOperator`).
//!
//! A batch of several writes is one `sled::Batch` applied with `Tree::apply_batch`,
//! atomic (sled seals the batch in its log). A batch of one write is a plain
//! `Tree::insert` or `Tree::remove`, atomic on its own and the way sled's benchmarks
//! write single keys: it stays off the process-wide lock that `apply_batch` takes
//! exclusively (and that, once taken, every later read in the process must share).
//! A `Batch` cannot be read, so [`Engine::update_batch`] reads the current value (or,
//! for a key that repeats in the batch, the value this batch last wrote, from a small
//! map) and applies the new values as one batch: atomic, not isolated from other
//! writers. sled's `Batch` and transactions have no merge, so [`Engine::merge_batch`]
//! calls `Tree::merge` per key (each merge atomic on its own key, the batch as a whole
//! not), then flushes once for a durable batch.
//!
//! sled has no read snapshots outside its (write) transactions: a get is a plain
//! `Tree::get`, a batch of gets is plain gets, and a scan is one tree iterator, none
//! of them isolated from concurrent writes. [`Engine::delete_batch`] returns
//! `keys.len()` for several keys (a `Batch` removal does not say whether the key
//! existed) and the real count for one (`Tree::remove` returns the old value).
//!
//! sled is lock-free for single-key operations and lets many threads write; batches
//! of several writes serialize on `apply_batch`'s exclusive lock while they apply.

use std::fs::File;
use std::path::Path;

use ::sled::{Batch, Config, Db};

use super::{Engine, MergeOperator, OpenOptions, Reader, Result, SyncMode, UpdateFn};

/// The sled version this module is built against (pinned in `Cargo.toml`).
const VERSION: &str = "sled 0.34.7";

/// A sled database; the benchmark uses its default tree.
pub struct SledEngine {
    /// The open database; its default tree holds the data.
    db: Db,
    /// sled's log file, opened read-only to `fdatasync` it after `Tree::flush`.
    log: File,
    /// Put every batch on stable storage before returning.
    durable: bool,
}

/// Name of sled's log file inside its directory.
const LOG_FILE: &str = "db";

impl SledEngine {
    /// Applies `batch` atomically, flushing it to stable storage if durable.
    fn commit(&self, batch: Batch) -> Result<()> {
        self.db.apply_batch(batch)?;
        self.flush_if_durable()
    }

    /// Writes sled's IO buffers out (`Tree::flush`) and `fdatasync`s its log file.
    fn flush_to_disk(&self) -> Result<()> {
        self.db.flush()?;
        self.log.sync_data()?;
        Ok(())
    }

    /// Puts everything written so far on stable storage when the engine is durable.
    fn flush_if_durable(&self) -> Result<()> {
        if self.durable {
            self.flush_to_disk()?;
        }
        Ok(())
    }
}

/// Reads an 8-byte little-endian integer; anything else counts as 0.
fn le_u64(bytes: &[u8]) -> u64 {
    bytes.try_into().map_or(0, u64::from_le_bytes)
}

/// sled merge operator for [`MergeOperator::Uint64Add`]: the old value plus the
/// operand, wrapping; a missing value is 0.
fn uint64_add(_key: &[u8], old: Option<&[u8]>, operand: &[u8]) -> Option<Vec<u8>> {
    let sum = old.map_or(0, le_u64).wrapping_add(le_u64(operand));
    Some(sum.to_le_bytes().to_vec())
}

impl Engine for SledEngine {
    type Reader<'a> = SledReader<'a>;

    const CONCURRENT_WRITERS: bool = true;

    const MAPS_DB: bool = false;

    fn version() -> String {
        VERSION.into()
    }

    fn config(opts: &OpenOptions) -> String {
        let commit = match opts.sync {
            SyncMode::Async => "no flush per commit",
            SyncMode::Durable => "flush() + fdatasync(db) after every batch",
        };
        let cache = match opts.cache_bytes {
            0 => "default (1 GiB)".to_string(),
            n => format!("{n} bytes"),
        };
        let merge = match opts.merge_operator {
            Some(MergeOperator::Uint64Add) => "; uint64add merge operator (per-key merge)",
            None => "",
        };
        format!(
            "flush_every_ms(None), {commit}, cache_capacity {cache}; apply_batch per batch{merge}"
        )
    }

    fn open(dir: &Path, opts: &OpenOptions) -> Result<Self> {
        let mut config = Config::new().path(dir).flush_every_ms(None);
        if opts.cache_bytes > 0 {
            config = config.cache_capacity(opts.cache_bytes);
        }
        let db = config.open()?;
        match opts.merge_operator {
            Some(MergeOperator::Uint64Add) => db.set_merge_operator(uint64_add),
            None => {}
        }
        let log = File::open(dir.join(LOG_FILE))?;
        Ok(SledEngine {
            db,
            log,
            durable: opts.sync == SyncMode::Durable,
        })
    }

    fn write_batch(&self, pairs: &[(&[u8], &[u8])], _sorted_append: bool) -> Result<()> {
        // sled has no append mode: sorted keys take the same path.
        if let &[(k, v)] = pairs {
            self.db.insert(k, v)?;
            return self.flush_if_durable();
        }
        let mut batch = Batch::default();
        for &(k, v) in pairs {
            batch.insert(k, v);
        }
        self.commit(batch)
    }

    fn delete_batch(&self, keys: &[&[u8]]) -> Result<u64> {
        if let [k] = keys {
            let found = self.db.remove(k)?.is_some();
            self.flush_if_durable()?;
            return Ok(u64::from(found));
        }
        let mut batch = Batch::default();
        for &k in keys {
            batch.remove(k);
        }
        self.commit(batch)?;
        Ok(keys.len() as u64)
    }

    fn update_batch(&self, keys: &[&[u8]], update: &mut UpdateFn<'_>) -> Result<u64> {
        let (written, found) =
            super::update_unreadable_batch(keys, update, |k| Ok(self.db.get(k)?))?;
        if written.len() == 1 {
            for (k, v) in written {
                self.db.insert(k, v)?;
            }
            self.flush_if_durable()?;
            return Ok(found);
        }
        let mut batch = Batch::default();
        for (k, v) in written {
            batch.insert(k, v);
        }
        self.commit(batch)?;
        Ok(found)
    }

    fn merge_batch(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        for &(k, operand) in pairs {
            self.db.merge(k, operand)?;
        }
        self.flush_if_durable()
    }

    fn has_merge() -> bool {
        true
    }

    fn reader(&self) -> Result<SledReader<'_>> {
        Ok(SledReader { db: &self.db })
    }

    fn scan<F: FnMut(&[u8], &[u8])>(&self, reverse: bool, mut visit: F) -> Result<u64> {
        let iter = self.db.iter();
        let mut n = 0;
        let mut each = |entry: ::sled::Result<(::sled::IVec, ::sled::IVec)>| -> Result<()> {
            let (k, v) = entry?;
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
        self.flush_to_disk()
    }
}

/// Reads through plain `Tree::get`s (sled has no read snapshots).
pub struct SledReader<'a> {
    /// The engine's database.
    db: &'a Db,
}

impl Reader for SledReader<'_> {
    #[inline]
    fn get<R, F: FnOnce(&[u8]) -> R>(&mut self, key: &[u8], f: F) -> Result<Option<R>> {
        let value = self.db.get(key)?;
        Ok(value.as_deref().map(f))
    }

    fn get_batch(
        &mut self,
        keys: &[&[u8]],
        visit: &mut dyn FnMut(usize, Option<&[u8]>),
    ) -> Result<()> {
        for (i, &k) in keys.iter().enumerate() {
            let value = self.db.get(k)?;
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
        crate::engines::conformance::run::<super::SledEngine>();
    }

    /// Batches of one write take the single-key path (`insert`/`remove`): they still
    /// see and count what they should, durable, across a reopening.
    #[test]
    fn single_write_batches() {
        use crate::engines::{Engine, OpenOptions, Reader, SyncMode};

        let dir = tempfile::tempdir().expect("temp dir");
        let opts = OpenOptions {
            sync: SyncMode::Durable,
            data_bytes: 1 << 20,
            readers: 1,
            random_reads: false,
            merge_operator: None,
            cache_bytes: 8 << 20,
            wt_lsm: false,
            write_map: true,
        };
        {
            let e = super::SledEngine::open(dir.path(), &opts).expect("open");
            e.write_batch(&[(b"a", b"1"), (b"b", b"1")], false)
                .expect("put");
            assert_eq!(e.delete_batch(&[b"a"]).expect("delete"), 1);
            assert_eq!(e.delete_batch(&[b"a"]).expect("delete"), 0);
            // One key twice: one write, seeing its own first put.
            let mut seen = Vec::new();
            let found = e
                .update_batch(&[b"b", b"b"], &mut |_, old, out| {
                    seen.push(old.map(<[u8]>::to_vec));
                    out.extend_from_slice(old.unwrap_or(b"").repeat(2).as_slice());
                    out.push(b'+');
                })
                .expect("update");
            assert_eq!(found, 2);
            assert_eq!(seen, [Some(b"1".to_vec()), Some(b"11+".to_vec())]);
        }
        // sled's flusher thread may still hold the directory's lock for a
        // moment after the drop: retry the reopen briefly.
        let mut tries = 0;
        let e = loop {
            match super::SledEngine::open(dir.path(), &opts) {
                Ok(e) => break e,
                Err(err) if tries < 50 => {
                    tries += 1;
                    let _ = err;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(err) => panic!("reopen: {err}"),
            }
        };
        let mut r = e.reader().expect("reader");
        assert_eq!(r.get(b"a", <[u8]>::to_vec).expect("get"), None);
        assert_eq!(
            r.get(b"b", <[u8]>::to_vec).expect("get"),
            Some(b"11+11++".to_vec())
        );
    }
}
