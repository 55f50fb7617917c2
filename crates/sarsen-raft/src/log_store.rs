//! The Raft log, vote and purge point in a Sarsen environment.
//!
//! Layout: database `log` maps an entry's index (8 bytes, big-endian, so
//! that bytewise order is index order) to the entry (bincode); database
//! `meta` holds `vote`, `committed` and `purged` (bincode). The environment
//! runs in [`Durability::SafeNoSync`](sarsen::Durability::SafeNoSync) and
//! one thread, the log writer, does every write, in the order of the calls:
//!
//! - `append` puts its entries in an in-memory overlay (so they are
//!   readable when it returns, as openraft requires) and queues them. The
//!   writer takes every append queued, commits them in one transaction,
//!   drops them from the overlay, syncs the file once and calls every
//!   callback: group commit. openraft's core never waits for a sync (Sarsen
//!   holds its writer lock while it syncs, so the core would stall behind
//!   every sync if it committed appends itself).
//! - `truncate`, `purge` and `save_vote` are queued behind the appends and
//!   return once committed and synced.
//!
//! Readers look at the overlay first, then at Sarsen: the writer commits a
//! batch before it drops it from the overlay, so no entry is missed.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{
    ErrorSubject, ErrorVerb, LogId, LogState, OptionalSend, RaftLogId, RaftLogReader, StorageError,
    Vote,
};
use sarsen::{Database, Durability, Env};
use tokio::sync::oneshot;

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
    /// Appended entries not committed yet, by index.
    overlay: Mutex<BTreeMap<u64, Entry>>,
}

/// A write other than an append, done by the writer in call order.
enum Op {
    Truncate(LogId<NodeId>),
    Purge(LogId<NodeId>),
    Vote(Vote<NodeId>),
    Committed(Option<LogId<NodeId>>),
}

enum Job {
    Append {
        entries: Vec<(LogId<NodeId>, Vec<u8>)>,
        callback: LogFlushed<TypeConfig>,
    },
    Write {
        op: Op,
        done: oneshot::Sender<Result<()>>,
    },
}

/// openraft's log storage on Sarsen: entries, vote, committed id and purge
/// point in one environment of their own (see the module notes).
///
/// Dropping it stops its writer thread (after the queued writes and a last
/// sync) and closes the environment once every [`LogReader`] is gone too.
pub struct LogStore {
    inner: Arc<Inner>,
    jobs: Option<mpsc::Sender<Job>>,
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

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
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
        // The overlay first: an entry leaves it only once committed.
        let mut out: BTreeMap<u64, Entry> = lock(&self.overlay)
            .range(range)
            .map(|(i, e)| (*i, e.clone()))
            .collect();
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
        for item in r.range(self.log, &from[..]..)? {
            let (k, v) = item?;
            let Some(index) = index_of(k) else {
                return Err(StoreError::BadLogKey { len: k.len() });
            };
            if !range.contains(&index) {
                break;
            }
            if out.contains_key(&index) {
                continue;
            }
            let entry: Entry = decode("log entry", v)?;
            if entry.get_log_id().index != index {
                return Err(StoreError::MisplacedEntry {
                    stored: index,
                    actual: entry.get_log_id().index,
                });
            }
            out.insert(index, entry);
        }
        Ok(out.into_values().collect())
    }

    fn log_state(&self) -> Result<LogState<TypeConfig>> {
        let newest = lock(&self.overlay).values().last().map(|e| e.log_id);
        let r = self.env.read_txn()?;
        let purged: Option<LogId<NodeId>> = match r.get(self.meta, PURGED)? {
            Some(b) => decode("purge point", b)?,
            None => None,
        };
        let mut c = r.cursor(self.log)?;
        let stored = match c.last()? {
            Some((_, v)) => Some(*decode::<Entry>("log entry", v)?.get_log_id()),
            None => None,
        };
        Ok(LogState {
            last_purged_log_id: purged,
            last_log_id: newest.max(stored).max(purged),
        })
    }

    /// Commits the entries of `batch` in one transaction and drops them
    /// from the overlay.
    fn commit_appends(&self, batch: &[Job]) -> Result<()> {
        let mut w = self.env.write_txn()?;
        for job in batch {
            if let Job::Append { entries, .. } = job {
                for (id, bytes) in entries {
                    w.put(self.log, &key(id.index), bytes)?;
                }
            }
        }
        w.commit()?;
        let mut overlay = lock(&self.overlay);
        for job in batch {
            if let Job::Append { entries, .. } = job {
                for (id, _) in entries {
                    if overlay.get(&id.index).is_some_and(|e| e.log_id == *id) {
                        overlay.remove(&id.index);
                    }
                }
            }
        }
        Ok(())
    }

    fn write(&self, op: &Op) -> Result<()> {
        let mut w = self.env.write_txn()?;
        let sync = match op {
            Op::Truncate(id) => {
                w.delete_range(self.log, &key(id.index)[..]..)?;
                true
            }
            Op::Purge(id) => {
                // The purge point in the same transaction: the log never
                // claims fewer purged entries than it lacks.
                w.put(self.meta, PURGED, &encode("purge point", &Some(*id))?)?;
                w.delete_range(self.log, ..=&key(id.index)[..])?;
                true
            }
            Op::Vote(v) => {
                w.put(self.meta, VOTE, &encode("vote", v)?)?;
                true
            }
            Op::Committed(c) => {
                // Not synced: a committed id lost in a system crash is
                // only an optimisation lost (the leader tells it again).
                w.put(self.meta, COMMITTED, &encode("committed id", c)?)?;
                false
            }
        };
        w.commit()?;
        if sync {
            self.env.sync()?;
        }
        Ok(())
    }
}

/// The log writer: every write, in call order; appends in groups.
fn writer(inner: &Inner, jobs: &mpsc::Receiver<Job>) {
    let mut next = None;
    loop {
        let Some(job) = next.take().or_else(|| jobs.recv().ok()) else {
            return;
        };
        match job {
            Job::Write { op, done } => {
                let _ = done.send(inner.write(&op));
            }
            first @ Job::Append { .. } => {
                let mut batch = vec![first];
                loop {
                    match jobs.try_recv() {
                        Ok(j @ Job::Append { .. }) => batch.push(j),
                        Ok(other) => {
                            next = Some(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                let result = inner
                    .commit_appends(&batch)
                    .and_then(|()| Ok(inner.env.sync()?));
                for job in batch {
                    if let Job::Append { callback, .. } = job {
                        callback.log_io_completed(result.as_ref().map(|_| ()).map_err(io_err));
                    }
                }
            }
        }
    }
}

impl LogStore {
    /// Opens (creating if needed) the log store in directory `dir`.
    ///
    /// # Errors
    /// [`StoreError::Sarsen`] when the environment cannot be opened (in use
    /// by another opener: [`sarsen::Error::Busy`]), [`StoreError::Io`] when
    /// `dir` cannot be created, [`StoreError::Task`] when the writer thread
    /// cannot be started.
    pub fn open(dir: &Path) -> Result<LogStore> {
        let env = open_env(dir, Durability::SafeNoSync)?;
        let mut w = env.write_txn()?;
        let log = w.create_db(Some("log"))?;
        let meta = w.create_db(Some("meta"))?;
        w.commit()?;
        env.sync()?;
        let inner = Arc::new(Inner {
            env,
            log,
            meta,
            overlay: Mutex::new(BTreeMap::new()),
        });
        let (tx, rx) = mpsc::channel::<Job>();
        let state = inner.clone();
        let thread = std::thread::Builder::new()
            .name("sarsen-raft-log".into())
            .spawn(move || writer(&state, &rx))
            .map_err(|e| StoreError::Task(e.to_string()))?;
        Ok(LogStore {
            inner,
            jobs: Some(tx),
            thread: Some(thread),
        })
    }

    /// Entries with indexes in `range`, in order. For tests and tools;
    /// openraft reads through `RaftLogReader`.
    ///
    /// # Errors
    /// [`StoreError::Sarsen`] on a read failure, [`StoreError::Decode`] for
    /// a damaged entry.
    pub fn entries(&self, range: impl RangeBounds<u64>) -> Result<Vec<Entry>> {
        self.inner
            .entries((range.start_bound().cloned(), range.end_bound().cloned()))
    }

    fn send(&self, job: Job) -> Result<()> {
        match &self.jobs {
            Some(tx) => tx.send(job).map_err(|_| StoreError::SyncThreadGone),
            None => Err(StoreError::SyncThreadGone),
        }
    }

    /// Queues `op` behind every earlier write and waits until it is done.
    async fn write(&self, op: Op) -> Result<()> {
        let (done, wait) = oneshot::channel();
        self.send(Job::Write { op, done })?;
        wait.await.map_err(|_| StoreError::SyncThreadGone)?
    }
}

impl Drop for LogStore {
    fn drop(&mut self) {
        self.jobs.take();
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
        self.write(Op::Vote(*vote))
            .await
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
        self.write(Op::Committed(committed))
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
        let mut decoded = Vec::new();
        for e in entries {
            let bytes = encode("log entry", &e)
                .map_err(|e| sto(e, ErrorSubject::Logs, ErrorVerb::Write))?;
            encoded.push((e.log_id, bytes));
            decoded.push(e);
        }
        // Readable from now on; committed and synced by the writer.
        lock(&self.inner.overlay).extend(decoded.into_iter().map(|e| (e.log_id.index, e)));
        self.send(Job::Append {
            entries: encoded,
            callback,
        })
        .map_err(|e| sto(e, ErrorSubject::Logs, ErrorVerb::Write))
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        self.write(Op::Truncate(log_id))
            .await
            .map_err(|e| sto(e, ErrorSubject::Log(log_id), ErrorVerb::Delete))
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        self.write(Op::Purge(log_id))
            .await
            .map_err(|e| sto(e, ErrorSubject::Log(log_id), ErrorVerb::Delete))
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use openraft::storage::RaftLogStorageExt;
    use openraft::{CommittedLeaderId, EntryPayload};

    use super::*;

    fn blank(index: u64) -> Entry {
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
            payload: EntryPayload::Blank,
        }
    }

    fn committed(inner: &Inner) -> usize {
        let r = inner.env.read_txn().unwrap();
        let n = r.iter(inner.log).unwrap().count();
        n
    }

    #[test]
    fn appended_entries_are_readable_before_they_are_committed_and_synced() {
        let dir = tempfile::tempdir().unwrap();
        let rt = tokio::runtime::Runtime::new().unwrap();
        let mut store = LogStore::open(dir.path()).unwrap();
        let inner = store.inner.clone();
        let mut reader = rt.block_on(store.get_log_reader());
        // Holding Sarsen's writer keeps the log writer from committing.
        let hold = inner.env.write_txn().unwrap();
        let task = rt.spawn(async move {
            let r = store.blocking_append((1..=3).map(blank)).await;
            r.map(|()| store)
        });
        let start = Instant::now();
        let seen = rt.block_on(async {
            loop {
                let e = reader.try_get_log_entries(..).await.unwrap();
                if !e.is_empty() || start.elapsed() > Duration::from_secs(5) {
                    return e;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        });
        assert_eq!(seen, (1..=3).map(blank).collect::<Vec<_>>());
        let state = rt.block_on(blocking(&inner, |i| i.log_state())).unwrap();
        assert_eq!(state.last_log_id, Some(blank(3).log_id));
        assert_eq!(
            committed(&inner),
            0,
            "not committed while the writer is held"
        );
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !task.is_finished(),
            "the callback came before the entries were synced"
        );
        drop(hold);
        let store = rt.block_on(task).unwrap().unwrap();
        assert_eq!(committed(&inner), 3);
        assert!(lock(&inner.overlay).is_empty());
        assert_eq!(store.entries(2..).unwrap(), vec![blank(2), blank(3)]);
    }
}
