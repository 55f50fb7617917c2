//! The storage engines under test, each behind the [`Engine`] trait in its own module.
//!
//! To add a peer (libmdbx, RocksDB, redb, ...): write one module implementing
//! [`Engine`] and [`Reader`], add a variant to [`EngineKind`], and one arm to
//! [`EngineKind::version`] and to `exec::run_spec`.

pub mod lmdb;
pub mod sarsen;

use std::path::Path;

use serde::{Deserialize, Serialize};

/// Errors from engines and the harness.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// Result with a boxed error.
pub type Result<T> = std::result::Result<T, BoxError>;

/// The engines the harness can drive.
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
    /// LMDB (lmdb-master-sys, the `mdb.master` branch).
    Lmdb,
}

impl EngineKind {
    /// Name used in tables, JSON and directory names.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Sarsen => "sarsen",
            EngineKind::Lmdb => "lmdb",
        }
    }

    /// Version string of the engine library.
    pub fn version(self) -> String {
        match self {
            EngineKind::Sarsen => sarsen::SarsenEngine::version(),
            EngineKind::Lmdb => lmdb::LmdbEngine::version(),
        }
    }
}

/// When commits reach stable storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncMode {
    /// Commits are not flushed (LMDB `MDB_NOSYNC`, Sarsen `Durability::NoSync`).
    Async,
    /// Every commit is fsync'd before it returns.
    Durable,
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
}

/// One key-value store opened on a directory.
///
/// An engine is shared by reference between reader threads and one writer thread.
pub trait Engine: Sized + Sync {
    /// Per-thread read handle, see [`Reader`].
    type Reader<'a>: Reader
    where
        Self: 'a;

    /// Version string of the engine library.
    fn version() -> String;

    /// Opens the store in `dir` (an existing directory), creating it if empty.
    fn open(dir: &Path, opts: &OpenOptions) -> Result<Self>;

    /// Writes all `pairs` in one write transaction and commits it. With
    /// `sorted_append`, the keys are ascending and greater than every key in the store,
    /// and the engine may use an append mode (LMDB `MDB_APPEND`).
    fn write_batch(&self, pairs: &[(&[u8], &[u8])], sorted_append: bool) -> Result<()>;

    /// A read handle for the calling thread.
    fn reader(&self) -> Result<Self::Reader<'_>>;

    /// Scans every entry in key order in one read transaction, calling `visit` on
    /// each; returns the number of entries.
    fn scan<F: FnMut(&[u8], &[u8])>(&self, visit: F) -> Result<u64>;

    /// Flushes all committed data to stable storage.
    fn sync(&self) -> Result<()>;
}

/// A thread's read handle.
pub trait Reader {
    /// Looks `key` up in a fresh read transaction (one transaction per call) and, if
    /// found, returns `f` applied to the value.
    fn get<R, F: FnOnce(&[u8]) -> R>(&mut self, key: &[u8], f: F) -> Result<Option<R>>;
}
