//! RocksDB through the `rocksdb` crate (0.25.0, default features off: RocksDB 11.8.1
//! built from the source bundled in `librocksdb-sys`, with no compression library and
//! the system's malloc).
//!
//! Configured as Symas' benchmark reports ran RocksDB ("RocksDB's default settings,
//! except that the cache size was set to 32GB and the write buffer size was set to
//! 256MB"), and otherwise as RocksDB's own `db_bench` defaults:
//! - an LRU block cache of exactly [`OpenOptions::cache_bytes`], the budget every
//!   engine with a block cache gets (0 means RocksDB caches no blocks; `db_bench`
//!   now defaults to a HyperClockCache, Symas' runs predate it);
//! - a 256 MiB write buffer (memtable), as Symas;
//! - compression off (Symas built and ran every engine without compression);
//! - no bloom filter: `db_bench`'s default `--bloom_bits=-1` keeps the table
//!   options' default, no filter policy, and Symas' plain RocksDB runs used that
//!   default (only their tuned "RocksDBpfx" run set `--bloom_bits=10`);
//! - `max_open_files = -1` (every table file stays open; RocksDB's default);
//! - `create_if_missing`.
//!
//! [`SyncMode::Async`] writes with the WAL off (`WriteOptions::disable_wal`, as
//! `db_bench --disable_wal=1`; the memtables are flushed when the database closes)
//! and [`SyncMode::Durable`] with the WAL on and `sync = true` (one fsync of the WAL
//! per write batch).
//!
//! With [`MergeOperator::Uint64Add`] the database gets [`uint64add`], RocksDB's
//! `UInt64AddOperator` written in Rust (the crate does not expose RocksDB's built-in
//! merge operators). Every `*_batch` method is one `WriteBatch`.
//!
//! No `unsafe` code: the `rocksdb` crate wraps RocksDB's C API.

use std::path::Path;

use ::rocksdb::{
    BlockBasedOptions, Cache, DBCompressionType, MergeOperands, Options, ReadOptions, WriteBatch,
    WriteOptions, DB, DEFAULT_COLUMN_FAMILY_NAME,
};

use super::{unsupported, Engine, MergeOperator, OpenOptions, Reader, Result, SyncMode, UpdateFn};

/// The RocksDB release bundled in librocksdb-sys 0.19.0+11.8.1 (its C API has no
/// version call).
const ROCKSDB_VERSION: &str = "11.8.1";

/// Memtable size, as in Symas' RocksDB runs.
const WRITE_BUFFER_BYTES: usize = 256 << 20;

/// RocksDB's `UInt64AddOperator` as a full and partial merge: values and operands are
/// 8-byte little-endian integers and merging adds them, wrapping; a missing value is
/// 0. A value or operand of another length counts as 0, as in RocksDB (which also
/// logs an error to its info log; this one cannot reach that log).
///
/// Addition is associative, so the same function is the partial merge (called with
/// no existing value, it sums operands into one).
pub fn uint64add(
    _key: &[u8],
    existing: Option<&[u8]>,
    operands: &MergeOperands,
) -> Option<Vec<u8>> {
    let sum = operands
        .iter()
        .fold(existing.map_or(0, decode_u64), |sum, op| {
            sum.wrapping_add(decode_u64(op))
        });
    Some(sum.to_le_bytes().to_vec())
}

/// An 8-byte little-endian integer, or 0 for a value of another length.
fn decode_u64(v: &[u8]) -> u64 {
    v.try_into().map_or(0, u64::from_le_bytes)
}

/// An open RocksDB database and the options its reads and writes use.
pub struct RocksEngine {
    /// The database.
    db: DB,
    /// Options of every write batch (WAL and sync per [`SyncMode`]).
    write_opts: WriteOptions,
    /// The merge operator the database was opened with. Only `merge_batch` reads
    /// it, and the benchmark binary does not merge yet (hence the allow).
    #[allow(dead_code)]
    merge: Option<MergeOperator>,
}

impl RocksEngine {
    /// Writes `batch` with the engine's write options.
    fn write(&self, batch: WriteBatch) -> Result<()> {
        Ok(self.db.write_opt(batch, &self.write_opts)?)
    }
}

impl Engine for RocksEngine {
    type Reader<'a> = RocksReader<'a>;

    /// Table files are read with `pread` into the block cache (RocksDB's default,
    /// no `allow_mmap_reads`).
    const MAPS_DB: bool = false;
    /// RocksDB groups concurrent writers' batches (one WAL write per group).
    const CONCURRENT_WRITERS: bool = true;

    fn version() -> String {
        format!("RocksDB {ROCKSDB_VERSION} (rocksdb crate 0.25.0, bundled)")
    }

    fn config(opts: &OpenOptions) -> String {
        let wal = match opts.sync {
            SyncMode::Async => "WAL off",
            SyncMode::Durable => "WAL on, sync=true per batch",
        };
        let merge = match opts.merge_operator {
            Some(MergeOperator::Uint64Add) => ", uint64add merge operator",
            None => "",
        };
        format!(
            "{wal}; LRU block cache {} B, no compression, no bloom filter, \
             {} MiB write buffer, max_open_files -1{merge} (defaults otherwise)",
            opts.cache_bytes,
            WRITE_BUFFER_BYTES >> 20
        )
    }

    fn open(dir: &Path, opts: &OpenOptions) -> Result<Self> {
        let mut table = BlockBasedOptions::default();
        table.set_block_cache(&Cache::new_lru_cache(usize::try_from(opts.cache_bytes)?));
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_block_based_table_factory(&table);
        o.set_write_buffer_size(WRITE_BUFFER_BYTES);
        o.set_compression_type(DBCompressionType::None);
        o.set_max_open_files(-1);
        match opts.merge_operator {
            Some(MergeOperator::Uint64Add) => {
                o.set_merge_operator_associative("uint64add", uint64add);
            }
            None => {}
        }
        // Opened with the default column family named, with the same options, so that
        // `cf_handle` finds it for batched MultiGet (plain `DB::open` keeps no handle).
        let db = DB::open_cf_with_opts(&o, dir, [(DEFAULT_COLUMN_FAMILY_NAME, o.clone())])?;
        let mut write_opts = WriteOptions::default();
        match opts.sync {
            SyncMode::Async => write_opts.disable_wal(true),
            SyncMode::Durable => write_opts.set_sync(true),
        }
        Ok(RocksEngine {
            db,
            write_opts,
            merge: opts.merge_operator,
        })
    }

    /// RocksDB has no append mode, so `sorted_append` changes nothing (`db_bench`'s
    /// `fillseq` also writes plain puts).
    fn write_batch(&self, pairs: &[(&[u8], &[u8])], _sorted_append: bool) -> Result<()> {
        let mut batch = WriteBatch::default();
        for (k, v) in pairs {
            batch.put(k, v);
        }
        self.write(batch)
    }

    /// Deletes are blind tombstones in an LSM tree: returns `keys.len()`.
    fn delete_batch(&self, keys: &[&[u8]]) -> Result<u64> {
        let mut batch = WriteBatch::default();
        for k in keys {
            batch.delete(k);
        }
        self.write(batch)?;
        Ok(keys.len() as u64)
    }

    /// A plain get per key (no snapshot, as `db_bench`'s `updaterandom`), then every
    /// put in one batch. A write batch cannot be read, so the batch's own puts are
    /// also kept in a map, for keys that repeat in `keys`.
    fn update_batch(&self, keys: &[&[u8]], update: &mut UpdateFn<'_>) -> Result<u64> {
        let read_opts = ReadOptions::default();
        let (written, found) = super::update_unreadable_batch(keys, update, |k| {
            Ok(self.db.get_pinned_opt(k, &read_opts)?)
        })?;
        let mut batch = WriteBatch::default();
        for (k, v) in &written {
            batch.put(k, v);
        }
        self.write(batch)?;
        Ok(found)
    }

    /// One batch of merges with the database's merge operator; an error if it was
    /// opened without one.
    fn merge_batch(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        if self.merge.is_none() {
            return Err(unsupported("this RocksDB database", "merge operator"));
        }
        let mut batch = WriteBatch::default();
        for (k, v) in pairs {
            batch.merge(k, v);
        }
        self.write(batch)
    }

    fn has_merge() -> bool {
        true
    }

    fn reader(&self) -> Result<RocksReader<'_>> {
        Ok(RocksReader {
            db: &self.db,
            read_opts: ReadOptions::default(),
        })
    }

    /// One iterator over the whole database (it pins an implicit snapshot), forward
    /// from the first key or backward from the last.
    fn scan<F: FnMut(&[u8], &[u8])>(&self, reverse: bool, mut visit: F) -> Result<u64> {
        let mut it = self.db.raw_iterator_opt(ReadOptions::default());
        if reverse {
            it.seek_to_last();
        } else {
            it.seek_to_first();
        }
        let mut n = 0;
        while let Some((k, v)) = it.item() {
            visit(k, v);
            n += 1;
            if reverse {
                it.prev();
            } else {
                it.next();
            }
        }
        it.status()?;
        Ok(n)
    }

    /// Flushes the memtables to table files and waits (RocksDB syncs them and the
    /// manifest): everything committed is then durable, with the WAL off or on.
    fn sync(&self) -> Result<()> {
        Ok(self.db.flush()?)
    }
}

/// A thread's read handle: the database and read options without a snapshot.
pub struct RocksReader<'a> {
    /// The engine's database.
    db: &'a DB,
    /// Options of plain gets (no snapshot).
    read_opts: ReadOptions,
}

impl Reader for RocksReader<'_> {
    /// A plain point get of the latest state (no snapshot), as `db_bench`.
    #[inline]
    fn get<R, F: FnOnce(&[u8]) -> R>(&mut self, key: &[u8], f: F) -> Result<Option<R>> {
        let value = self.db.get_pinned_opt(key, &self.read_opts)?;
        Ok(value.map(|v| f(&v)))
    }

    /// One batched MultiGet under one snapshot, taken for the call.
    fn get_batch(
        &mut self,
        keys: &[&[u8]],
        visit: &mut dyn FnMut(usize, Option<&[u8]>),
    ) -> Result<()> {
        let cf = self
            .db
            .cf_handle(DEFAULT_COLUMN_FAMILY_NAME)
            .ok_or("RocksDB has no default column family handle")?;
        let snapshot = self.db.snapshot();
        let mut opts = ReadOptions::default();
        opts.set_snapshot(&snapshot);
        let values = self
            .db
            .batched_multi_get_cf_opt(cf, keys.iter(), false, &opts);
        for (i, v) in values.into_iter().enumerate() {
            visit(i, v?.as_deref());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conformance() {
        crate::engines::conformance::run::<super::RocksEngine>();
    }

    /// The merge operator's arithmetic, through a real database: wrapping add,
    /// missing and wrong-length values as 0, partial merges of stacked operands.
    #[test]
    fn uint64add_semantics() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_merge_operator_associative("uint64add", uint64add);
        let db = DB::open(&o, dir.path()).expect("open");
        let le = |n: u64| n.to_le_bytes();
        db.merge(b"new", le(5)).expect("merge");
        db.merge(b"new", le(7)).expect("merge");
        db.put(b"wrap", le(u64::MAX)).expect("put");
        db.merge(b"wrap", le(2)).expect("merge");
        db.put(b"bad", b"abc").expect("put");
        db.merge(b"bad", le(3)).expect("merge");
        db.merge(b"bad", b"xy").expect("merge");
        db.flush().expect("flush");
        db.merge(b"new", le(1)).expect("merge");
        let get = |k: &[u8]| db.get(k).expect("get").expect("present");
        assert_eq!(get(b"new"), le(13));
        assert_eq!(get(b"wrap"), le(1));
        assert_eq!(get(b"bad"), le(3));
    }
}
