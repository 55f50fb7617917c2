//! The reader table as users see it: the list of readers (LMDB's
//! `mdb_reader_list`) and the slow-reader handler (libmdbx's
//! Handle-Slow-Readers callback, `mdbx_env_set_hsr`).

use std::fmt;
use std::sync::Arc;

/// One slot of the reader table (LMDB's `mdb_reader_list` line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReaderInfo {
    /// Process that owns the slot.
    pub pid: u32,
    /// Number of the thread that last used it, unique within its process
    /// (not the OS thread id).
    pub thread: u64,
    /// Txnid of the snapshot being read, `None` if no read transaction is
    /// using the slot now.
    pub txnid: Option<u64>,
    /// Commits made since that snapshot (0 when idle): the snapshot pins
    /// the pages those commits freed.
    pub lag: u64,
}

/// A reader whose snapshot lags behind, as reported to the slow-reader
/// handler ([`EnvOptions::slow_reader_handler`](crate::EnvOptions::slow_reader_handler)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SlowReader {
    /// Process holding the snapshot.
    pub pid: u32,
    /// Number of the thread that began it, unique within its process.
    pub thread: u64,
    /// Txnid of the snapshot.
    pub txnid: u64,
    /// Commits made since that snapshot.
    pub lag: u64,
    /// Pages freed by those commits, which cannot be reused while the
    /// snapshot lives (so the file grows instead), in pages of the
    /// environment's page size.
    pub pinned_pages: u64,
}

/// What a slow-reader handler decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SlowReaderAction {
    /// Leave the reader alone: the writer goes on and the file grows as
    /// needed.
    Keep,
    /// The handler has ended the reader's process (for example with
    /// `kill`): the writer frees the slots of dead processes and looks for
    /// the oldest reader again. A reader of a live process is never
    /// evicted: its slices into the map must stay valid.
    Retry,
}

/// The handler's type: called with the writer lock held, so it must not
/// begin a write transaction of the same environment.
pub type SlowReaderHandler = Arc<dyn Fn(&SlowReader) -> SlowReaderAction + Send + Sync>;

/// The handler and the lag, in commits, from which it is called.
#[derive(Clone)]
pub(crate) struct SlowReaders {
    pub lag: u64,
    pub handler: SlowReaderHandler,
}

impl fmt::Debug for SlowReaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlowReaders")
            .field("lag", &self.lag)
            .finish()
    }
}
