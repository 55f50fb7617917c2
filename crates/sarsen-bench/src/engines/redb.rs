//! redb through its public API, configured as redb's own benchmark
//! (`crates/redb-bench/benches/common.rs` in the redb repository) drives it:
//!
//! - one table `TableDefinition<&[u8], &[u8]>` in one file, `redb.db`, in the
//!   directory;
//! - `Durability::None` on every write transaction for asynchronous workloads (redb's
//!   "nosync" setting), the default `Durability::Immediate` (one fsync'd commit) for
//!   durable ones; [`Engine::sync`] commits an empty `Durability::Immediate`
//!   transaction, which makes every earlier non-durable commit durable;
//! - the cache size (`Builder::set_cache_size`) is [`OpenOptions::cache_bytes`], the
//!   budget every engine gets (redb's default of 1 GiB when it is 0);
//! - sorted appends go through redb's appending cursor
//!   (`Table::upper_bound_mut(Unbounded)` and `CursorMut::insert_before`), as redb's
//!   benchmark inserts sorted data; other writes are `Table::insert`;
//! - one `begin_read` per get, and one for a whole batch of gets or a scan.
//!
//! redb reads and writes its file with `pread`/`pwrite` through its own page cache;
//! it does not map the file, so [`Engine::MAPS_DB`] is false. It has one writer at a
//! time and no merge operator.

use std::ops::Bound;
use std::path::Path;

use ::redb::{
    Builder, CursorError, Database, Durability, ReadableDatabase, ReadableTable, TableDefinition,
    WriteTransaction,
};

use super::{Engine, OpenOptions, Reader, Result, SyncMode, UpdateFn};

/// The one table the benchmark uses.
const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("bench");

/// Name of the database file inside the engine's directory.
const FILE: &str = "redb.db";

/// The redb version this module is built against (pinned in `Cargo.toml`).
const VERSION: &str = "redb 4.4.0";

/// A redb database holding the benchmark's table.
pub struct RedbEngine {
    /// The open database file.
    db: Database,
    /// `Durability::None` for asynchronous workloads, `Immediate` for durable ones.
    durability: Durability,
}

impl RedbEngine {
    /// Begins a write transaction with the durability the engine was opened with.
    fn write_txn(&self) -> Result<WriteTransaction> {
        let mut txn = self.db.begin_write()?;
        txn.set_durability(self.durability)?;
        Ok(txn)
    }
}

impl Engine for RedbEngine {
    type Reader<'a> = RedbReader<'a>;

    const MAPS_DB: bool = false;

    fn version() -> String {
        VERSION.into()
    }

    fn config(opts: &OpenOptions) -> String {
        let durability = match opts.sync {
            SyncMode::Async => "Durability::None",
            SyncMode::Durable => "Durability::Immediate",
        };
        let cache = match opts.cache_bytes {
            0 => "default (1 GiB)".to_string(),
            n => format!("{n} bytes"),
        };
        format!("{durability}, cache {cache}; appending cursor for fillseq; begin_read per get")
    }

    fn open(dir: &Path, opts: &OpenOptions) -> Result<Self> {
        let mut builder = Builder::new();
        if opts.cache_bytes > 0 {
            builder.set_cache_size(usize::try_from(opts.cache_bytes)?);
        }
        let db = builder.create(dir.join(FILE))?;
        let durability = match opts.sync {
            SyncMode::Async => Durability::None,
            SyncMode::Durable => Durability::Immediate,
        };
        let engine = RedbEngine { db, durability };
        // Create the table, so that read transactions can open it in an empty store.
        let txn = engine.write_txn()?;
        txn.open_table(TABLE)?;
        txn.commit()?;
        Ok(engine)
    }

    fn write_batch(&self, pairs: &[(&[u8], &[u8])], sorted_append: bool) -> Result<()> {
        let txn = self.write_txn()?;
        {
            let mut table = txn.open_table(TABLE)?;
            let mut rest = pairs;
            if sorted_append {
                // The cursor at the end of the table buffers ascending inserts and
                // splices packed leaves into the tree. A key that is not above the
                // last one (the caller broke the append contract) ends the run; it and
                // the pairs after it take the ordinary path.
                let mut cursor = table.upper_bound_mut(Bound::<&[u8]>::Unbounded)?;
                let mut done = 0;
                for &(k, v) in pairs {
                    match cursor.insert_before(k, v) {
                        Ok(()) => done += 1,
                        Err(CursorError::UnorderedKey) => break,
                        Err(e) => return Err(e.into()),
                    }
                }
                cursor.close()?;
                rest = &pairs[done..];
            }
            for &(k, v) in rest {
                table.insert(k, v)?;
            }
        }
        txn.commit()?;
        Ok(())
    }

    fn delete_batch(&self, keys: &[&[u8]]) -> Result<u64> {
        let txn = self.write_txn()?;
        let mut found = 0;
        {
            let mut table = txn.open_table(TABLE)?;
            for &k in keys {
                found += u64::from(table.remove(k)?.is_some());
            }
        }
        txn.commit()?;
        Ok(found)
    }

    fn retain(&self, delete: &mut dyn FnMut(&[u8]) -> bool) -> Result<(u64, u64)> {
        // redb's `Table::retain` is its cursor-walk delete (an extract-if loop).
        let txn = self.write_txn()?;
        let (mut seen, mut gone) = (0, 0);
        {
            let mut table = txn.open_table(TABLE)?;
            table.retain(|k, _| {
                seen += 1;
                let del = delete(k);
                gone += u64::from(del);
                !del
            })?;
        }
        txn.commit()?;
        Ok((seen, gone))
    }

    fn pop_front(&self, n: u64) -> Result<u64> {
        let txn = self.write_txn()?;
        let mut gone = 0;
        {
            let mut table = txn.open_table(TABLE)?;
            while gone < n && table.pop_first()?.is_some() {
                gone += 1;
            }
        }
        txn.commit()?;
        Ok(gone)
    }

    fn has_cursor_delete() -> bool {
        true
    }

    fn update_batch(&self, keys: &[&[u8]], update: &mut UpdateFn<'_>) -> Result<u64> {
        let txn = self.write_txn()?;
        let mut found = 0;
        let mut buf = Vec::new();
        {
            let mut table = txn.open_table(TABLE)?;
            for (i, &k) in keys.iter().enumerate() {
                buf.clear();
                {
                    // The write transaction's table sees this batch's earlier puts.
                    let old = ReadableTable::get(&table, k)?;
                    found += u64::from(old.is_some());
                    update(i, old.as_ref().map(|g| g.value()), &mut buf);
                }
                table.insert(k, buf.as_slice())?;
            }
        }
        txn.commit()?;
        Ok(found)
    }

    fn reader(&self) -> Result<RedbReader<'_>> {
        Ok(RedbReader { db: &self.db })
    }

    fn scan<F: FnMut(&[u8], &[u8])>(&self, reverse: bool, mut visit: F) -> Result<u64> {
        let txn = self.db.begin_read()?;
        let table = txn.open_table(TABLE)?;
        let range = ReadableTable::range::<&[u8]>(&table, ..)?;
        let mut n = 0;
        if reverse {
            for entry in range.rev() {
                let (k, v) = entry?;
                visit(k.value(), v.value());
                n += 1;
            }
        } else {
            for entry in range {
                let (k, v) = entry?;
                visit(k.value(), v.value());
                n += 1;
            }
        }
        Ok(n)
    }

    fn sync(&self) -> Result<()> {
        // An empty durable commit persists every non-durable commit before it.
        let mut txn = self.db.begin_write()?;
        txn.set_durability(Durability::Immediate)?;
        txn.commit()?;
        Ok(())
    }
}

/// Reads through a new read transaction per get, as redb's benchmark does for its
/// random reads across threads.
pub struct RedbReader<'a> {
    /// The engine's database.
    db: &'a Database,
}

impl Reader for RedbReader<'_> {
    #[inline]
    fn get<R, F: FnOnce(&[u8]) -> R>(&mut self, key: &[u8], f: F) -> Result<Option<R>> {
        let txn = self.db.begin_read()?;
        let table = txn.open_table(TABLE)?;
        // The trait's lifetime-bound accessor, as redb's benchmark calls it, rather than
        // the inherent reference-counted one that shadows it.
        let value = ReadableTable::get(&table, key)?;
        Ok(value.map(|g| f(g.value())))
    }

    fn get_batch(
        &mut self,
        keys: &[&[u8]],
        visit: &mut dyn FnMut(usize, Option<&[u8]>),
    ) -> Result<()> {
        let txn = self.db.begin_read()?;
        let table = txn.open_table(TABLE)?;
        for (i, &k) in keys.iter().enumerate() {
            let value = ReadableTable::get(&table, k)?;
            visit(i, value.as_ref().map(|g| g.value()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    /// The shared engine conformance test.
    #[test]
    fn conformance() {
        crate::engines::conformance::run::<super::RedbEngine>();
    }

    /// A "sorted append" whose keys are not all above the store's (a broken caller)
    /// still writes every pair, through the ordinary path after the first misfit.
    #[test]
    fn append_out_of_order_falls_back() {
        use crate::engines::{Engine, OpenOptions, SyncMode};

        let dir = tempfile::tempdir().expect("temp dir");
        let opts = OpenOptions {
            sync: SyncMode::Async,
            data_bytes: 1 << 20,
            readers: 1,
            random_reads: false,
            merge_operator: None,
            cache_bytes: 8 << 20,
            wt_lsm: false,
            write_map: true,
        };
        let e = super::RedbEngine::open(dir.path(), &opts).expect("open");
        e.write_batch(&[(b"b", b"1"), (b"d", b"1")], true)
            .expect("append");
        // "e" appends, "c" does not (below "e"), "d" exists, "f" follows the misfit.
        e.write_batch(
            &[(b"e", b"2"), (b"c", b"2"), (b"d", b"2"), (b"f", b"2")],
            true,
        )
        .expect("append out of order");
        let mut got = Vec::new();
        e.scan(false, |k, v| got.push((k.to_vec(), v.to_vec())))
            .expect("scan");
        let want: Vec<(Vec<u8>, Vec<u8>)> =
            [("b", "1"), ("c", "2"), ("d", "2"), ("e", "2"), ("f", "2")]
                .iter()
                .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
                .collect();
        assert_eq!(got, want);
    }
}
