//! The Raft log, vote and purge point in a Sarsen environment.
//!
//! Layout: database `log` maps an entry's index (8 bytes, big-endian, so
//! that bytewise order is index order) to the entry (bincode); database
//! `meta` holds `vote`, `committed` and `purged` (bincode). The environment
//! runs in [`Durability::SafeNoSync`](sarsen::Durability::SafeNoSync): an
//! append commits at once, so the entries are readable when `append`
//! returns, and a background thread then syncs the file once for every
//! append that is waiting, calling their callbacks (group commit). The
//! vote, a truncation and a purge are synced before they return.

use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{
    ErrorSubject, ErrorVerb, LogId, LogState, OptionalSend, RaftLogId, RaftLogReader, StorageError,
    Vote,
};
use sarsen::{Database, Durability, Env};

use crate::error::{decode, encode, Result};
use crate::{open_env, NodeId, StoreError, TypeConfig};

type Entry = openraft::Entry<TypeConfig>;

const VOTE: &[u8] = b"vote";
const COMMITTED: &[u8] = b"committed";
const PURGED: &[u8] = b"purged";

struct Inner {
    env: Env,
    log: Database,
    meta: Database,
}

/// openraft's log storage on Sarsen: entries, vote, committed id and purge
/// point in one environment of their own (see the module notes).
///
/// Dropping it stops its sync thread (after a last sync) and closes the
/// environment once every [`LogReader`] is gone too.
pub struct LogStore {
    inner: Arc<Inner>,
    flush: Option<mpsc::Sender<LogFlushed<TypeConfig>>>,
    thread: Option<JoinHandle<()>>,
}

/// Reads log entries beside the [`LogStore`] (openraft's replication tasks
/// hold these). Cheap to clone.
#[derive(Clone)]
pub struct LogReader {
    inner: Arc<Inner>,
}

fn key(index: u64) -> [u8; 8] {
    index.to_be_bytes()
}

fn index_of(key: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(key.try_into().ok()?))
}

fn io_err(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

fn sto(e: StoreError, subject: ErrorSubject<NodeId>, verb: ErrorVerb) -> StorageError<NodeId> {
    e.into_storage(subject, verb)
}

/// Runs `f` on the blocking pool with the store's state.
async fn blocking<T, F>(inner: &Arc<Inner>, f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce(&Inner) -> Result<T> + Send + 'static,
{
    let inner = inner.clone();
    tokio::task::spawn_blocking(move || f(&inner))
        .await
        .map_err(|e| StoreError::Task(e.to_string()))?
}

impl Inner {
    fn get_meta<T: serde::de::DeserializeOwned>(
        &self,
        name: &'static str,
        k: &[u8],
    ) -> Result<Option<T>> {
        let r = self.env.read_txn()?;
        match r.get(self.meta, k)? {
            Some(bytes) => Ok(Some(decode(name, bytes)?)),
            None => Ok(None),
        }
    }

    fn entries(&self, range: (Bound<u64>, Bound<u64>)) -> Result<Vec<Entry>> {
        let start = match range.0 {
            Bound::Included(i) => i,
            Bound::Excluded(i) => match i.checked_add(1) {
                Some(i) => i,
                None => return Ok(Vec::new()),
            },
            Bound::Unbounded => 0,
        };
        let r = self.env.read_txn()?;
        let from = key(start);
        let mut out = Vec::new();
        for item in r.range(self.log, &from[..]..)? {
            let (k, v) = item?;
            let Some(index) = index_of(k) else {
                return Err(StoreError::BadSnapshot("log key of a wrong size".into()));
            };
            let past = match range.1 {
                Bound::Included(e) => index > e,
                Bound::Excluded(e) => index >= e,
                Bound::Unbounded => false,
            };
            if past {
                break;
            }
            let entry: Entry = decode("log entry", v)?;
            if entry.get_log_id().index != index {
                return Err(StoreError::MisplacedEntry {
                    stored: index,
                    actual: entry.get_log_id().index,
                });
            }
            out.push(entry);
        }
        Ok(out)
    }

    fn log_state(&self) -> Result<LogState<TypeConfig>> {
        let r = self.env.read_txn()?;
        let purged: Option<LogId<NodeId>> = match r.get(self.meta, PURGED)? {
            Some(b) => decode("purge point", b)?,
            None => None,
        };
        let mut c = r.cursor(self.log)?;
        let last = match c.last()? {
            Some((_, v)) => Some(*decode::<Entry>("log entry", v)?.get_log_id()),
            None => purged,
        };
        Ok(LogState {
            last_purged_log_id: purged,
            last_log_id: last,
        })
    }
}

impl LogStore {
    /// Opens (creating if needed) the log store in directory `dir`.
    ///
    /// # Errors
    /// [`StoreError::Sarsen`] when the environment cannot be opened (in use
    /// by another opener: [`sarsen::Error::Busy`]), [`StoreError::Io`] when
    /// `dir` cannot be created, [`StoreError::Task`] when the sync thread
    /// cannot be started.
    pub fn open(dir: &Path) -> Result<LogStore> {
        let env = open_env(dir, Durability::SafeNoSync)?;
        let mut w = env.write_txn()?;
        let log = w.create_db(Some("log"))?;
        let meta = w.create_db(Some("meta"))?;
        w.commit()?;
        env.sync()?;
        let inner = Arc::new(Inner { env, log, meta });
        let (tx, rx) = mpsc::channel::<LogFlushed<TypeConfig>>();
        let syncer = inner.clone();
        let thread = std::thread::Builder::new()
            .name("sarsen-raft-log-sync".into())
            .spawn(move || sync_loop(&syncer, &rx))
            .map_err(|e| StoreError::Task(e.to_string()))?;
        Ok(LogStore {
            inner,
            flush: Some(tx),
            thread: Some(thread),
        })
    }

    /// Entries with indexes in `range`, in order (a hole ends nothing: the
    /// log has none). For tests and tools; openraft reads through
    /// `RaftLogReader`.
    ///
    /// # Errors
    /// [`StoreError::Sarsen`] on a read failure, [`StoreError::Decode`] for
    /// a damaged entry.
    pub fn entries(&self, range: impl RangeBounds<u64>) -> Result<Vec<Entry>> {
        self.inner
            .entries((range.start_bound().cloned(), range.end_bound().cloned()))
    }
}

fn sync_loop(inner: &Inner, rx: &mpsc::Receiver<LogFlushed<TypeConfig>>) {
    while let Ok(first) = rx.recv() {
        let mut waiting = vec![first];
        while let Ok(more) = rx.try_recv() {
            waiting.push(more);
        }
        // Everything committed before these callbacks were queued reaches
        // the disk with this one sync.
        let result = inner.env.sync();
        for cb in waiting {
            cb.log_io_completed(result.as_ref().map(|_| ()).map_err(io_err));
        }
    }
}

impl Drop for LogStore {
    fn drop(&mut self) {
        self.flush.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl RaftLogReader<TypeConfig> for LogReader {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError<NodeId>> {
        let r = (range.start_bound().cloned(), range.end_bound().cloned());
        blocking(&self.inner, move |i| i.entries(r))
            .await
            .map_err(|e| sto(e, ErrorSubject::Logs, ErrorVerb::Read))
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError<NodeId>> {
        LogReader {
            inner: self.inner.clone(),
        }
        .try_get_log_entries(range)
        .await
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogReader;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError<NodeId>> {
        blocking(&self.inner, |i| i.log_state())
            .await
            .map_err(|e| sto(e, ErrorSubject::Logs, ErrorVerb::Read))
    }

    async fn get_log_reader(&mut self) -> LogReader {
        LogReader {
            inner: self.inner.clone(),
        }
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), StorageError<NodeId>> {
        let vote = *vote;
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let s = LogStoreRef(&inner);
            s.put_synced("vote", VOTE, &vote)
        })
        .await
        .map_err(|e| StoreError::Task(e.to_string()))
        .and_then(|r| r)
        .map_err(|e| sto(e, ErrorSubject::Vote, ErrorVerb::Write))
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, StorageError<NodeId>> {
        blocking(&self.inner, |i| i.get_meta("vote", VOTE))
            .await
            .map_err(|e| sto(e, ErrorSubject::Vote, ErrorVerb::Read))
    }

    async fn save_committed(
        &mut self,
        committed: Option<LogId<NodeId>>,
    ) -> Result<(), StorageError<NodeId>> {
        // Not synced: a committed id lost in a system crash is only an
        // optimisation lost (openraft learns it again from the leader).
        blocking(&self.inner, move |i| {
            let bytes = encode("committed id", &committed)?;
            let mut w = i.env.write_txn()?;
            w.put(i.meta, COMMITTED, &bytes)?;
            w.commit()?;
            Ok(())
        })
        .await
        .map_err(|e| sto(e, ErrorSubject::Store, ErrorVerb::Write))
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<NodeId>>, StorageError<NodeId>> {
        blocking(&self.inner, |i| {
            Ok(
                i.get_meta::<Option<LogId<NodeId>>>("committed id", COMMITTED)?
                    .flatten(),
            )
        })
        .await
        .map_err(|e| sto(e, ErrorSubject::Store, ErrorVerb::Read))
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut encoded = Vec::new();
        for e in entries {
            let bytes = encode("log entry", &e)
                .map_err(|e| sto(e, ErrorSubject::Logs, ErrorVerb::Write))?;
            encoded.push((e.get_log_id().index, bytes));
        }
        blocking(&self.inner, move |i| {
            let mut w = i.env.write_txn()?;
            for (index, bytes) in &encoded {
                w.put(i.log, &key(*index), bytes)?;
            }
            w.commit()?;
            Ok(())
        })
        .await
        .map_err(|e| sto(e, ErrorSubject::Logs, ErrorVerb::Write))?;
        // Readable now; durable when the sync thread calls back.
        match &self.flush {
            Some(tx) => tx.send(callback).map_err(|_| {
                sto(
                    StoreError::SyncThreadGone,
                    ErrorSubject::Logs,
                    ErrorVerb::Write,
                )
            }),
            None => Err(sto(
                StoreError::SyncThreadGone,
                ErrorSubject::Logs,
                ErrorVerb::Write,
            )),
        }
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        blocking(&self.inner, move |i| {
            let from = key(log_id.index);
            let mut w = i.env.write_txn()?;
            w.delete_range(i.log, &from[..]..)?;
            w.commit()?;
            i.env.sync()?;
            Ok(())
        })
        .await
        .map_err(|e| sto(e, ErrorSubject::Log(log_id), ErrorVerb::Delete))
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        blocking(&self.inner, move |i| {
            let through = key(log_id.index);
            let point = encode("purge point", &Some(log_id))?;
            let mut w = i.env.write_txn()?;
            // The purge point first, in the same transaction: the log never
            // claims fewer purged entries than it lacks.
            w.put(i.meta, PURGED, &point)?;
            w.delete_range(i.log, ..=&through[..])?;
            w.commit()?;
            i.env.sync()?;
            Ok(())
        })
        .await
        .map_err(|e| sto(e, ErrorSubject::Log(log_id), ErrorVerb::Delete))
    }
}

/// Borrowed store state for the synced metadata writes.
struct LogStoreRef<'a>(&'a Inner);

impl LogStoreRef<'_> {
    fn put_synced<T: serde::Serialize>(
        &self,
        name: &'static str,
        k: &'static [u8],
        v: &T,
    ) -> Result<()> {
        let bytes = encode(name, v)?;
        let mut w = self.0.env.write_txn()?;
        w.put(self.0.meta, k, &bytes)?;
        w.commit()?;
        self.0.env.sync()?;
        Ok(())
    }
}
