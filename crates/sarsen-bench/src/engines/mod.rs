//! The storage engines under test, each behind the [`Engine`] trait in its own module.
//!
//! Sarsen and LMDB (from its bundled C source) are always built. Each peer is behind
//! a cargo feature of its name: `redb`, `fjall` and `sled` build with cargo alone and
//! are default features; `libmdbx` and `rocksdb` need libclang for bindgen (RocksDB
//! also a long C++ build), `leveldb` a Debian package, and `bdb` and `wiredtiger` a
//! Debian package and libclang, so they are off by default (see the README for the
//! command that installs what they need).
//!
//! To add a peer: write one module implementing [`Engine`] and [`Reader`], add a
//! variant to [`EngineKind`] and one line to [`with_engine!`].

#[cfg(feature = "bdb")]
pub mod bdb;
#[cfg(feature = "fjall")]
pub mod fjall;
#[cfg(feature = "leveldb")]
pub mod leveldb;
#[cfg(feature = "libmdbx")]
pub mod libmdbx;
pub mod lmdb;
#[cfg(feature = "redb")]
pub mod redb;
#[cfg(feature = "rocksdb")]
pub mod rocksdb;
pub mod sarsen;
#[cfg(feature = "sarsen-capi")]
pub mod sarsen_capi;
#[cfg(feature = "sled")]
pub mod sled;
#[cfg(feature = "wiredtiger")]
pub mod wiredtiger;

use std::path::Path;

use serde::{Deserialize, Serialize};

/// Errors from engines and the harness.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// Result with a boxed error.
pub type Result<T> = std::result::Result<T, BoxError>;

/// The engines the harness can drive (built or not: see [`EngineKind::is_built`]).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// Sarsen, the engine this harness measures.
    Sarsen,
    /// Sarsen through LMDB's C API: the `lmdb` engine's code calling Sarsen's
    /// `liblmdb.so` (crate `sarsen-lmdb`; cargo feature `sarsen-capi`).
    #[serde(rename = "sarsen-capi")]
    SarsenCapi,
    /// LMDB (lmdb-master-sys, the `mdb.master` branch).
    Lmdb,
    /// libmdbx (the `libmdbx` crate; cargo feature `libmdbx`).
    Libmdbx,
    /// redb.
    Redb,
    /// fjall, an LSM tree in Rust.
    Fjall,
    /// RocksDB (the `rocksdb` crate, bundled build; cargo feature `rocksdb`).
    Rocksdb,
    /// LevelDB (Debian's libleveldb through `leveldb-sys`; cargo feature `leveldb`).
    Leveldb,
    /// sled 0.34.
    Sled,
    /// Berkeley DB 5.3 (Debian's libdb5.3; cargo feature `bdb`).
    Bdb,
    /// WiredTiger 3.2 (Debian's libwiredtiger; cargo feature `wiredtiger`): its
    /// B-tree, or its LSM tree with `--wt_lsm`.
    Wiredtiger,
}

/// Runs `$body` with the type alias `$E` bound to the [`Engine`] of `$kind`, or
/// evaluates `$missing` when that engine was not compiled in.
#[macro_export]
macro_rules! with_engine {
    ($kind:expr, $E:ident => $body:expr, missing => $missing:expr) => {{
        use $crate::engines::EngineKind as K;
        match $kind {
            K::Sarsen => {
                type $E = $crate::engines::sarsen::SarsenEngine;
                $body
            }
            K::Lmdb => {
                type $E = $crate::engines::lmdb::LmdbEngine;
                $body
            }
            #[cfg(feature = "sarsen-capi")]
            K::SarsenCapi => {
                type $E = $crate::engines::sarsen_capi::SarsenCapiEngine;
                $body
            }
            #[cfg(feature = "redb")]
            K::Redb => {
                type $E = $crate::engines::redb::RedbEngine;
                $body
            }
            #[cfg(feature = "fjall")]
            K::Fjall => {
                type $E = $crate::engines::fjall::FjallEngine;
                $body
            }
            #[cfg(feature = "sled")]
            K::Sled => {
                type $E = $crate::engines::sled::SledEngine;
                $body
            }
            #[cfg(feature = "libmdbx")]
            K::Libmdbx => {
                type $E = $crate::engines::libmdbx::MdbxEngine;
                $body
            }
            #[cfg(feature = "rocksdb")]
            K::Rocksdb => {
                type $E = $crate::engines::rocksdb::RocksEngine;
                $body
            }
            #[cfg(feature = "leveldb")]
            K::Leveldb => {
                type $E = $crate::engines::leveldb::LevelDbEngine;
                $body
            }
            #[cfg(feature = "bdb")]
            K::Bdb => {
                type $E = $crate::engines::bdb::BdbEngine;
                $body
            }
            #[cfg(feature = "wiredtiger")]
            K::Wiredtiger => {
                type $E = $crate::engines::wiredtiger::WtEngine;
                $body
            }
            #[allow(unreachable_patterns)]
            _ => $missing,
        }
    }};
}

impl EngineKind {
    /// Name used in tables, JSON and directory names.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Sarsen => "sarsen",
            EngineKind::SarsenCapi => "sarsen-capi",
            EngineKind::Lmdb => "lmdb",
            EngineKind::Libmdbx => "libmdbx",
            EngineKind::Redb => "redb",
            EngineKind::Fjall => "fjall",
            EngineKind::Rocksdb => "rocksdb",
            EngineKind::Leveldb => "leveldb",
            EngineKind::Sled => "sled",
            EngineKind::Bdb => "bdb",
            EngineKind::Wiredtiger => "wiredtiger",
        }
    }

    /// The cargo feature that builds this engine, if it is not always built.
    pub fn feature(self) -> Option<&'static str> {
        match self {
            EngineKind::Sarsen | EngineKind::Lmdb => None,
            other => Some(other.name()),
        }
    }

    /// Whether this binary was built with the engine.
    pub fn is_built(self) -> bool {
        with_engine!(self, E => { let _ = std::marker::PhantomData::<E>; true }, missing => false)
    }

    /// The error for an engine this binary was built without.
    pub fn not_built(self) -> BoxError {
        format!(
            "engine {} is not built in; rebuild sarsen-bench with `--features {}`",
            self.name(),
            self.feature().unwrap_or("?")
        )
        .into()
    }

    /// Version string of the engine library.
    pub fn version(self) -> String {
        with_engine!(self, E => E::version(), missing => "not built".to_string())
    }

    /// How the harness configures the engine for `opts`, in one line.
    pub fn config(self, opts: &OpenOptions) -> String {
        with_engine!(self, E => E::config(opts), missing => "not built".to_string())
    }

    /// Whether the engine's database lives in the process's memory map.
    pub fn maps_db(self) -> bool {
        with_engine!(self, E => E::MAPS_DB, missing => false)
    }

    /// Whether the engine honours [`OpenOptions::write_map`] (a map it can write
    /// through or not).
    pub fn has_write_map(self) -> bool {
        matches!(
            self,
            EngineKind::Sarsen | EngineKind::SarsenCapi | EngineKind::Lmdb
        )
    }

    /// Whether the engine lets several threads write at once.
    pub fn concurrent_writers(self) -> bool {
        with_engine!(self, E => E::CONCURRENT_WRITERS, missing => false)
    }

    /// Whether the engine has a merge operator.
    pub fn has_merge(self) -> bool {
        with_engine!(self, E => E::has_merge(), missing => false)
    }

    /// Whether the engine deletes through a cursor (retainrandom, popfront).
    pub fn has_cursor_delete(self) -> bool {
        with_engine!(self, E => E::has_cursor_delete(), missing => false)
    }
}

/// When commits reach stable storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncMode {
    /// Commits are not flushed (LMDB `MDB_NOSYNC`, Sarsen `Durability::NoSync`,
    /// RocksDB with the WAL off, redb `Durability::None`).
    Async,
    /// Every commit is on stable storage (fsync'd) before it returns.
    Durable,
}

/// A merge operator an engine opens its database with (RocksDB's names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum MergeOperator {
    /// Values and operands are 8-byte little-endian unsigned integers; merge adds
    /// the operand, wrapping (RocksDB's `UInt64AddOperator`). A missing value is 0.
    #[value(name = "uint64add")]
    Uint64Add,
}

/// How a workload opens an engine.
#[derive(Clone, Copy, Debug)]
pub struct OpenOptions {
    /// Commit durability.
    pub sync: SyncMode,
    /// Expected bytes of keys and values, to size a fixed map large enough.
    pub data_bytes: u64,
    /// Reader threads that will be open at once.
    pub readers: u32,
    /// The workload reads at random (engines may disable read-ahead).
    pub random_reads: bool,
    /// The merge operator to attach, for engines that have merge.
    pub merge_operator: Option<MergeOperator>,
    /// Bytes of block cache for engines that have one (RocksDB, LevelDB, fjall);
    /// the same budget for all of them.
    pub cache_bytes: u64,
    /// WiredTiger opens its LSM tree instead of its B-tree (`--wt_lsm`); other
    /// engines ignore it.
    pub wt_lsm: bool,
    /// Engines with a memory map write through it (`true`, LMDB's `MDB_WRITEMAP`), or
    /// with `pwrite` from private dirty pages (`false`: each one's default). Sarsen
    /// and LMDB honour it; libmdbx (whose Rust crate fixes the mode in a type
    /// parameter) and the other engines ignore it. `--write_map`.
    pub write_map: bool,
}

/// A new value for a key, computed from its current one by `Engine::update_batch`:
/// called with the index of the key in the batch, the value the key holds in the
/// write transaction (None if absent), and an empty buffer to fill with the new value.
pub type UpdateFn<'f> = dyn FnMut(usize, Option<&[u8]>, &mut Vec<u8>) + 'f;

/// The new value of each distinct key of a batch, by key.
pub type BatchWrites<'k> = std::collections::HashMap<&'k [u8], Vec<u8>>;

/// `Engine::update_batch` for engines whose write batch cannot be read (LSM
/// `WriteBatch`es, sled's `Batch`): runs `update` over `keys` in order, reading a
/// key's value with `get` unless this batch already wrote it, and returns the new
/// value of each distinct key (to write as one batch) and how many keys existed.
pub fn update_unreadable_batch<'k, V: std::ops::Deref<Target = [u8]>>(
    keys: &[&'k [u8]],
    update: &mut UpdateFn<'_>,
    mut get: impl FnMut(&[u8]) -> Result<Option<V>>,
) -> Result<(BatchWrites<'k>, u64)> {
    let mut written = BatchWrites::with_capacity(keys.len());
    let mut found = 0;
    for (i, &k) in keys.iter().enumerate() {
        let mut buf = Vec::new();
        match written.get(k) {
            Some(old) => {
                found += 1;
                update(i, Some(old), &mut buf);
            }
            None => {
                let old = get(k)?;
                found += u64::from(old.is_some());
                update(i, old.as_deref(), &mut buf);
            }
        }
        written.insert(k, buf);
    }
    Ok((written, found))
}

/// The error of an engine asked for an operation it does not have.
pub fn unsupported(engine: &str, what: &str) -> BoxError {
    format!("{engine} has no {what}").into()
}

/// One key-value store opened on a directory.
///
/// An engine is shared by reference between reader threads and writer threads; every
/// `*_batch` method is one write transaction (one `WriteBatch` for LSM engines), committed
/// with the [`SyncMode`] the engine was opened with.
pub trait Engine: Sized + Sync {
    /// Per-thread read handle, see [`Reader`].
    type Reader<'a>: Reader
    where
        Self: 'a;

    /// Whether several threads may write at once without serializing on one lock
    /// (LSM engines). The harness gives single-writer engines one writer thread.
    const CONCURRENT_WRITERS: bool = false;

    /// Whether the database lives in the process's memory map, so that the process's
    /// RSS already counts the database pages it touched.
    const MAPS_DB: bool;

    /// Version string of the engine library.
    fn version() -> String;

    /// How the harness configured the engine, in one line for reports.
    fn config(opts: &OpenOptions) -> String;

    /// Opens the store in `dir` (an existing directory), creating it if empty.
    fn open(dir: &Path, opts: &OpenOptions) -> Result<Self>;

    /// Writes all `pairs` in one write transaction and commits it. With
    /// `sorted_append`, the keys are ascending and greater than every key in the store,
    /// and the engine may use an append mode (LMDB `MDB_APPEND`).
    fn write_batch(&self, pairs: &[(&[u8], &[u8])], sorted_append: bool) -> Result<()>;

    /// Deletes `keys` in one write transaction; returns how many of them existed
    /// (engines that cannot tell cheaply, such as LSM trees, return `keys.len()`).
    fn delete_batch(&self, keys: &[&[u8]]) -> Result<u64>;

    /// Read-modify-write of `keys` in one write transaction: for each key in order,
    /// gets its value, calls `update` for the new one, and puts it. Returns how many
    /// keys existed. This is db_bench's `updaterandom` unit.
    fn update_batch(&self, keys: &[&[u8]], update: &mut UpdateFn<'_>) -> Result<u64>;

    /// Merges each operand into its key with the merge operator the engine was opened
    /// with, in one write transaction, in order. Engines without merge return
    /// [`unsupported`].
    fn merge_batch(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        let _ = pairs;
        Err(unsupported("this engine", "merge operator"))
    }

    /// Whether [`Engine::merge_batch`] works.
    fn has_merge() -> bool {
        false
    }

    /// Walks every entry in key order with a write cursor, in one write
    /// transaction, deleting through the cursor each key for which `delete`
    /// returns true (a retain/extract-if loop); returns the entries visited and
    /// the entries deleted. Engines without a cursor delete return
    /// [`unsupported`].
    fn retain(&self, delete: &mut dyn FnMut(&[u8]) -> bool) -> Result<(u64, u64)> {
        let _ = delete;
        Err(unsupported("this engine", "cursor delete"))
    }

    /// Deletes the first entry in key order `n` times through a cursor (fewer
    /// if the store runs empty), in one write transaction; returns how many it
    /// deleted. Engines without a cursor delete return [`unsupported`].
    fn pop_front(&self, n: u64) -> Result<u64> {
        let _ = n;
        Err(unsupported("this engine", "cursor delete"))
    }

    /// Whether [`Engine::retain`] and [`Engine::pop_front`] work.
    fn has_cursor_delete() -> bool {
        false
    }

    /// A read handle for the calling thread.
    fn reader(&self) -> Result<Self::Reader<'_>>;

    /// Scans every entry in key order (descending with `reverse`) in one read
    /// transaction, calling `visit` on each; returns the number of entries.
    fn scan<F: FnMut(&[u8], &[u8])>(&self, reverse: bool, visit: F) -> Result<u64>;

    /// Flushes all committed data to stable storage.
    fn sync(&self) -> Result<()>;
}

/// A thread's read handle.
pub trait Reader {
    /// Looks `key` up in a fresh read transaction (one transaction per call) and, if
    /// found, returns `f` applied to the value.
    fn get<R, F: FnOnce(&[u8]) -> R>(&mut self, key: &[u8], f: F) -> Result<Option<R>>;

    /// Looks every key of `keys` up in one read transaction (one snapshot), calling
    /// `visit` with the key's index in `keys` and its value, if found.
    fn get_batch(
        &mut self,
        keys: &[&[u8]],
        visit: &mut dyn FnMut(usize, Option<&[u8]>),
    ) -> Result<()>;
}

/// A conformance test every engine module runs on itself: each [`Engine`] and
/// [`Reader`] method against a `BTreeMap` model, through two reopenings.
#[cfg(test)]
pub mod conformance {
    use std::collections::BTreeMap;

    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    fn opts(sync: SyncMode, merge: bool, wt_lsm: bool) -> OpenOptions {
        OpenOptions {
            sync,
            data_bytes: 1 << 20,
            readers: 2,
            random_reads: true,
            merge_operator: merge.then_some(MergeOperator::Uint64Add),
            cache_bytes: 8 << 20,
            wt_lsm,
            write_map: true,
        }
    }

    fn key(i: u32) -> Vec<u8> {
        format!("{i:08}").into_bytes()
    }

    fn scan_all<E: Engine>(e: &E, reverse: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        let n = e
            .scan(reverse, |k, v| out.push((k.to_vec(), v.to_vec())))
            .expect("scan");
        assert_eq!(n as usize, out.len(), "scan count");
        out
    }

    fn check_model<E: Engine>(e: &E, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
        let fwd: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(scan_all(e, false), fwd, "forward scan");
        let mut rev = fwd.clone();
        rev.reverse();
        assert_eq!(scan_all(e, true), rev, "reverse scan");
        let mut r = e.reader().expect("reader");
        for i in (0..300).step_by(7) {
            let k = key(i);
            let got = r.get(&k, |v| v.to_vec()).expect("get");
            assert_eq!(got.as_ref(), model.get(&k), "get {i}");
        }
        let keys: Vec<Vec<u8>> = (0..300).step_by(3).map(key).collect();
        let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
        let mut seen = 0;
        r.get_batch(&refs, &mut |i, v| {
            assert_eq!(
                v.map(<[u8]>::to_vec).as_ref(),
                model.get(&keys[i]),
                "get_batch"
            );
            seen += 1;
        })
        .expect("get_batch");
        assert_eq!(seen, keys.len());
    }

    /// `Engine::retain` (deleting the keys whose last digit is below 3 plus
    /// `round`) and `Engine::pop_front` of 7, against the model, where the
    /// engine has them.
    fn cursor_deletes<E: Engine>(e: &E, model: &mut BTreeMap<Vec<u8>, Vec<u8>>, round: usize) {
        if !E::has_cursor_delete() {
            assert!(e.pop_front(1).is_err());
            return;
        }
        let cut = b'0' + 3 + (round % 5) as u8;
        let pick = |k: &[u8]| k.last().is_some_and(|&b| b < cut);
        let before = model.len() as u64;
        let (seen, gone) = e.retain(&mut |k| pick(k)).expect("retain");
        model.retain(|k, _| !pick(k));
        assert_eq!(
            (seen, gone),
            (before, before - model.len() as u64),
            "retain counts"
        );
        check_model(e, model);
        let popped = e.pop_front(7).expect("pop_front");
        let want = model.len().min(7);
        let firsts: Vec<Vec<u8>> = model.keys().take(want).cloned().collect();
        for k in firsts {
            model.remove(&k);
        }
        assert_eq!(popped, want as u64, "pop_front count");
        check_model(e, model);
    }

    /// Random puts, appends, deletes, updates (with repeated keys in one batch) and,
    /// where the engine has them, uint64add merges; the store must match the model
    /// after every batch and after reopening.
    pub fn run<E: Engine>() {
        run_with::<E>(false);
    }

    /// [`run`] with [`OpenOptions::wt_lsm`] set as given.
    pub fn run_with<E: Engine>(wt_lsm: bool) {
        let dir = tempfile::tempdir().expect("temp dir");
        let merge = E::has_merge();
        let mut model = BTreeMap::new();
        let mut rng = SmallRng::seed_from_u64(7);
        {
            let e = E::open(dir.path(), &opts(SyncMode::Async, merge, wt_lsm)).expect("open");
            // An append of ascending keys into the empty store.
            let pairs: Vec<(Vec<u8>, Vec<u8>)> =
                (0..100).map(|i| (key(i), vec![i as u8; 8])).collect();
            let refs: Vec<(&[u8], &[u8])> = pairs.iter().map(|(k, v)| (&k[..], &v[..])).collect();
            e.write_batch(&refs, true).expect("append");
            model.extend(pairs);
            check_model(&e, &model);
            for round in 0..20 {
                let ks: Vec<Vec<u8>> = (0..20).map(|_| key(rng.random_range(0..300))).collect();
                let refs: Vec<&[u8]> = ks.iter().map(|k| k.as_slice()).collect();
                match round % 4 {
                    0 => {
                        let vals: Vec<Vec<u8>> = (0..20).map(|j| vec![j as u8; 8]).collect();
                        let pairs: Vec<(&[u8], &[u8])> = refs
                            .iter()
                            .copied()
                            .zip(vals.iter().map(|v| &v[..]))
                            .collect();
                        e.write_batch(&pairs, false).expect("put");
                        for (k, v) in pairs {
                            model.insert(k.to_vec(), v.to_vec());
                        }
                    }
                    1 => {
                        let found = e.delete_batch(&refs).expect("delete");
                        let mut expect = 0;
                        for k in &refs {
                            expect += u64::from(model.remove(*k).is_some());
                        }
                        if found != refs.len() as u64 {
                            assert_eq!(found, expect, "delete_batch found count");
                        }
                    }
                    2 => {
                        // Add one to an 8-byte little-endian counter; keys repeat, so
                        // each get must see the batch's own earlier puts.
                        let mut expect = 0;
                        let found = e
                            .update_batch(&refs, &mut |i, old, out| {
                                let want = model.get(refs[i]);
                                assert_eq!(old, want.map(|v| v.as_slice()), "update sees");
                                let n = old.map_or(0, |v| {
                                    u64::from_le_bytes(v.try_into().unwrap_or([0; 8]))
                                });
                                out.extend_from_slice(&(n.wrapping_add(1)).to_le_bytes());
                                expect += u64::from(want.is_some());
                                model.insert(refs[i].to_vec(), out.clone());
                            })
                            .expect("update");
                        assert_eq!(found, expect, "update_batch found count");
                    }
                    _ if merge => {
                        let one = 1u64.to_le_bytes();
                        let pairs: Vec<(&[u8], &[u8])> =
                            refs.iter().map(|&k| (k, &one[..])).collect();
                        e.merge_batch(&pairs).expect("merge");
                        for k in &refs {
                            let v = model.entry(k.to_vec()).or_insert_with(|| vec![0; 8]);
                            let n = u64::from_le_bytes(v[..].try_into().expect("8 bytes"));
                            *v = n.wrapping_add(1).to_le_bytes().to_vec();
                        }
                    }
                    _ => assert!(e.merge_batch(&[(b"k", b"v")]).is_err()),
                }
                check_model(&e, &model);
                if round % 5 == 4 {
                    cursor_deletes(&e, &mut model, round);
                }
            }
            e.sync().expect("sync");
        }
        let e = E::open(dir.path(), &opts(SyncMode::Durable, merge, wt_lsm)).expect("reopen");
        check_model(&e, &model);
        e.write_batch(&[(b"durable", b"x")], false)
            .expect("durable put");
        model.insert(b"durable".to_vec(), b"x".to_vec());
        drop(e);
        let e = E::open(dir.path(), &opts(SyncMode::Async, merge, wt_lsm)).expect("reopen");
        check_model(&e, &model);
        assert!(!E::version().is_empty());
        assert!(!E::config(&opts(SyncMode::Async, merge, wt_lsm)).is_empty());
    }

    #[test]
    fn sarsen() {
        run::<super::sarsen::SarsenEngine>();
    }

    #[test]
    fn lmdb() {
        run::<super::lmdb::LmdbEngine>();
    }
}
