//! The key-value state machine and its snapshots.
//!
//! Layout: database `kv` holds the map (bytewise keys, with the merge
//! operator of [`StateMachineOptions`]); database `meta` holds `applied`
//! (the last applied log id) and `membership` (bincode). Each call of
//! `apply` is one write transaction: the commands, the last-applied id and
//! the membership commit together or not at all.
//!
//! The environment runs in [`Durability::SafeNoSync`]: an applied entry is
//! also in the durable log, and openraft re-applies from the last applied
//! id after a restart. It is synced before a snapshot is handed out (so
//! the log can be purged up to it) and when a snapshot is installed.
//!
//! Snapshot files live in `snapshots/` beside the environment; the newest
//! is `current.snap` (format in `snapshot.rs`).

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use openraft::storage::RaftStateMachine;
use openraft::{
    EntryPayload, ErrorSubject, ErrorVerb, LogId, OptionalSend, RaftSnapshotBuilder, Snapshot,
    SnapshotMeta, StorageError, StoredMembership,
};
use sarsen::{Database, DbOptions, Durability, Env, MergeOperator, RwTxn};

use crate::error::{decode, encode, Result};
use crate::snapshot::{read_meta, SnapshotReader, SnapshotWriter};
use crate::{open_env, Command, Node, NodeId, Reply, StoreError, TypeConfig};

type Entry = openraft::Entry<TypeConfig>;
type Meta = SnapshotMeta<NodeId, Node>;
type Membership = StoredMembership<NodeId, Node>;

const APPLIED: &[u8] = b"applied";
const MEMBERSHIP: &[u8] = b"membership";
const CURRENT: &str = "current.snap";

/// Options of a [`StateMachine`].
#[derive(Clone, Default)]
pub struct StateMachineOptions {
    merge: Option<Arc<dyn MergeOperator>>,
}

impl StateMachineOptions {
    /// No merge operator: [`Command::Merge`] is refused.
    pub fn new() -> StateMachineOptions {
        StateMachineOptions::default()
    }

    /// The operator that [`Command::Merge`] applies (a `sarsen::merge`
    /// operator or your own). Every node of a cluster must use the same
    /// one: Sarsen records its name and refuses to open the state machine
    /// with another.
    pub fn merge_operator(mut self, op: impl MergeOperator) -> StateMachineOptions {
        self.merge = Some(Arc::new(op));
        self
    }
}

struct Inner {
    env: Env,
    kv: Database,
    meta: Database,
    snapshots: PathBuf,
    /// Serialises replacing `current.snap`.
    current: Mutex<()>,
    seq: AtomicU64,
}

/// openraft's state machine on Sarsen: a key-value map (see the module
/// notes).
pub struct StateMachine {
    inner: Arc<Inner>,
}

/// Builds snapshots of a [`StateMachine`] from one read transaction each,
/// while the state machine goes on applying.
pub struct SnapshotBuilder {
    inner: Arc<Inner>,
}

/// Local reads of a [`StateMachine`]'s map, for serving clients (after
/// `Raft::ensure_linearizable` for a linearizable read). Cheap to clone.
#[derive(Clone)]
pub struct KvReader {
    inner: Arc<Inner>,
}

fn sto(e: StoreError, subject: ErrorSubject<NodeId>, verb: ErrorVerb) -> StorageError<NodeId> {
    e.into_storage(subject, verb)
}

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

/// Errors of a command that leave the transaction intact and happen the
/// same way on every node: the command is refused, the log goes on.
fn refused(e: &sarsen::Error) -> bool {
    matches!(
        e,
        sarsen::Error::KeyTooLarge { .. }
            | sarsen::Error::ValueTooLarge { .. }
            | sarsen::Error::Merge { .. }
            | sarsen::Error::NoMergeOperator { .. }
            | sarsen::Error::InvalidArgument(_)
            | sarsen::Error::BadKeySize { .. }
            | sarsen::Error::BadValueSize { .. }
    )
}

fn apply_command(w: &mut RwTxn<'_>, kv: Database, cmd: &Command) -> Result<Reply> {
    let key = match cmd {
        Command::Put { key, .. } | Command::Delete { key } | Command::Merge { key, .. } => key,
        Command::Batch(cmds) => {
            let mut replies = Vec::with_capacity(cmds.len());
            for c in cmds {
                replies.push(match c {
                    Command::Batch(_) => Reply::Refused("a batch inside a batch".into()),
                    c => apply_command(w, kv, c)?,
                });
            }
            return Ok(Reply::Batch(replies));
        }
    };
    if key.is_empty() {
        return Ok(Reply::Refused("empty key".into()));
    }
    let r = match cmd {
        Command::Put { key, value } => w.put(kv, key, value).map(|()| Reply::Done),
        Command::Delete { key } => w.delete(kv, key).map(Reply::Deleted),
        Command::Merge { key, operand } => match w.merge(kv, key, operand) {
            Ok(()) => w
                .get(kv, key)
                .map(|v| Reply::Merged(v.unwrap_or_default().to_vec())),
            Err(e) => Err(e),
        },
        Command::Batch(_) => return Ok(Reply::Refused("a batch inside a batch".into())),
    };
    match r {
        Ok(reply) => Ok(reply),
        Err(e) if refused(&e) => Ok(Reply::Refused(e.to_string())),
        Err(e) => Err(e.into()),
    }
}

impl Inner {
    fn applied_state(&self) -> Result<(Option<LogId<NodeId>>, Membership)> {
        let r = self.env.read_txn()?;
        let applied = match r.get(self.meta, APPLIED)? {
            Some(b) => decode("last applied id", b)?,
            None => None,
        };
        let membership = match r.get(self.meta, MEMBERSHIP)? {
            Some(b) => decode("membership", b)?,
            None => Membership::default(),
        };
        Ok((applied, membership))
    }

    fn apply(&self, entries: Vec<Entry>) -> Result<Vec<Reply>> {
        let mut replies = Vec::with_capacity(entries.len());
        let Some(last) = entries.last().map(|e| e.log_id) else {
            return Ok(replies);
        };
        let mut w = self.env.write_txn()?;
        let mut membership = None;
        for e in &entries {
            replies.push(match &e.payload {
                EntryPayload::Blank => Reply::Done,
                EntryPayload::Normal(cmd) => apply_command(&mut w, self.kv, cmd)?,
                EntryPayload::Membership(m) => {
                    membership = Some(Membership::new(Some(e.log_id), m.clone()));
                    Reply::Done
                }
            });
        }
        w.put(self.meta, APPLIED, &encode("last applied id", &Some(last))?)?;
        if let Some(m) = membership {
            w.put(self.meta, MEMBERSHIP, &encode("membership", &m)?)?;
        }
        w.commit()?;
        Ok(replies)
    }

    fn new_id(&self, last: Option<LogId<NodeId>>) -> String {
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        match last {
            Some(l) => format!(
                "{}-{}-{}-{n}",
                l.leader_id.term, l.leader_id.node_id, l.index
            ),
            None => format!("none-{n}"),
        }
    }

    fn tmp_path(&self, what: &str) -> PathBuf {
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        self.snapshots.join(format!("{what}-{n}.tmp"))
    }

    /// Makes the finished file at `tmp` the current snapshot unless the
    /// current one is newer; removes `tmp` otherwise.
    fn publish(&self, tmp: &Path, meta: &Meta) -> Result<()> {
        let _g = self.current.lock().unwrap_or_else(|e| e.into_inner());
        let current = self.snapshots.join(CURRENT);
        let newer_exists = match File::open(&current) {
            Ok(f) => read_meta(BufReader::new(f))
                .map(|m| m.last_log_id > meta.last_log_id)
                .unwrap_or(false),
            Err(_) => false,
        };
        if newer_exists {
            fs::remove_file(tmp)?;
            return Ok(());
        }
        fs::rename(tmp, &current)?;
        File::open(&self.snapshots)?.sync_all()?;
        Ok(())
    }

    fn build(&self) -> Result<(Meta, File)> {
        let tmp = self.tmp_path("build");
        let meta = {
            let r = self.env.read_txn()?;
            let applied: Option<LogId<NodeId>> = match r.get(self.meta, APPLIED)? {
                Some(b) => decode("last applied id", b)?,
                None => None,
            };
            let last_membership = match r.get(self.meta, MEMBERSHIP)? {
                Some(b) => decode("membership", b)?,
                None => Membership::default(),
            };
            let meta = Meta {
                last_log_id: applied,
                last_membership,
                snapshot_id: self.new_id(applied),
            };
            let out = BufWriter::new(File::create(&tmp)?);
            let mut w = SnapshotWriter::new(out, &meta)?;
            for item in r.iter(self.kv)? {
                let (k, v) = item?;
                w.record(k, v)?;
            }
            let out = w.finish()?;
            out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
            meta
        };
        // Everything the snapshot holds reaches the disk before openraft
        // may purge the log up to it.
        self.env.sync()?;
        let file = File::open(&tmp)?;
        self.publish(&tmp, &meta)?;
        Ok((meta, file))
    }

    fn current(&self) -> Result<Option<(Meta, File)>> {
        let _g = self.current.lock().unwrap_or_else(|e| e.into_inner());
        let mut file = match File::open(self.snapshots.join(CURRENT)) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let meta = read_meta(BufReader::new(&mut file))?;
        file.seek(SeekFrom::Start(0))?;
        Ok(Some((meta, file)))
    }

    fn install(&self, meta: &Meta, mut data: File) -> Result<()> {
        data.seek(SeekFrom::Start(0))?;
        let tmp = self.tmp_path("install");
        let copy = BufWriter::new(File::create(&tmp)?);
        let result = self.install_from(meta, &mut data, copy);
        match result {
            Ok(copy) => {
                copy.into_inner().map_err(|e| e.into_error())?.sync_all()?;
                self.publish(&tmp, meta)
            }
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    fn install_from(
        &self,
        meta: &Meta,
        data: &mut File,
        copy: BufWriter<File>,
    ) -> Result<BufWriter<File>> {
        let input = BufReader::new(data);
        let (mut r, file_meta) = SnapshotReader::new(
            input,
            copy,
            self.env.max_key_size(),
            self.env.max_value_size(),
        )?;
        if &file_meta != meta {
            return Err(StoreError::BadSnapshot(format!(
                "the file holds snapshot {} but {} is being installed",
                file_meta.snapshot_id, meta.snapshot_id
            )));
        }
        let mut w = self.env.write_txn()?;
        w.clear_db(self.kv)?;
        let (mut k, mut v) = (Vec::new(), Vec::new());
        while r.next_record(&mut k, &mut v)? {
            // Records come in key order: append refuses any other.
            w.append(self.kv, &k, &v).map_err(|e| match e {
                sarsen::Error::KeyNotGreater => {
                    StoreError::BadSnapshot("records out of key order".into())
                }
                e => e.into(),
            })?;
        }
        w.put(
            self.meta,
            APPLIED,
            &encode("last applied id", &meta.last_log_id)?,
        )?;
        w.put(
            self.meta,
            MEMBERSHIP,
            &encode("membership", &meta.last_membership)?,
        )?;
        w.commit()?;
        self.env.sync()?;
        Ok(r.into_copy())
    }
}

impl StateMachine {
    /// Opens (creating if needed) the state machine in directory `dir`.
    ///
    /// # Errors
    /// [`StoreError::Sarsen`] when the environment cannot be opened (in use:
    /// [`sarsen::Error::Busy`]) or was created with another merge operator
    /// ([`sarsen::Error::MergeOperatorMismatch`]), [`StoreError::Io`] when
    /// a directory cannot be created or cleaned.
    pub fn open(dir: &Path, options: StateMachineOptions) -> Result<StateMachine> {
        let env = open_env(dir, Durability::SafeNoSync)?;
        let mut w = env.write_txn()?;
        let mut kv_opts = DbOptions::new();
        if let Some(op) = options.merge {
            kv_opts = kv_opts.merge_operator_arc(op);
        }
        let kv = w.create_db_with(Some("kv"), &kv_opts)?;
        let meta = w.create_db(Some("meta"))?;
        w.commit()?;
        env.sync()?;
        let snapshots = dir.join("snapshots");
        fs::create_dir_all(&snapshots)?;
        for e in fs::read_dir(&snapshots)? {
            let p = e?.path();
            if p.extension().is_some_and(|x| x == "tmp") {
                fs::remove_file(p)?;
            }
        }
        let seq = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0);
        let inner = Arc::new(Inner {
            env,
            kv,
            meta,
            snapshots,
            current: Mutex::new(()),
            seq: AtomicU64::new(seq),
        });
        Ok(StateMachine { inner })
    }

    /// A reader of the map, usable after the state machine has been handed
    /// to openraft.
    pub fn reader(&self) -> KvReader {
        KvReader {
            inner: self.inner.clone(),
        }
    }
}

impl KvReader {
    /// The value of `key`, if present.
    ///
    /// # Errors
    /// [`StoreError::Sarsen`] when the read fails.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let r = self.inner.env.read_txn()?;
        Ok(r.get(self.inner.kv, key)?.map(<[u8]>::to_vec))
    }

    /// Every key and value, in key order, from one read transaction, with
    /// the last applied log id of that same state.
    ///
    /// # Errors
    /// [`StoreError::Sarsen`] when the read fails, [`StoreError::Decode`]
    /// for a damaged applied id.
    #[allow(clippy::type_complexity)]
    pub fn dump(&self) -> Result<(Option<LogId<NodeId>>, Vec<(Vec<u8>, Vec<u8>)>)> {
        let r = self.inner.env.read_txn()?;
        let applied = match r.get(self.inner.meta, APPLIED)? {
            Some(b) => decode("last applied id", b)?,
            None => None,
        };
        let mut out = Vec::new();
        for item in r.iter(self.inner.kv)? {
            let (k, v) = item?;
            out.push((k.to_vec(), v.to_vec()));
        }
        Ok((applied, out))
    }

    /// The last applied log id and the membership, from one read
    /// transaction.
    ///
    /// # Errors
    /// [`StoreError::Sarsen`] when the read fails, [`StoreError::Decode`]
    /// for a damaged record.
    pub fn applied_state(&self) -> Result<(Option<LogId<NodeId>>, Membership)> {
        self.inner.applied_state()
    }
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError<NodeId>> {
        let (meta, file) = blocking(&self.inner, |i| i.build())
            .await
            .map_err(|e| sto(e, ErrorSubject::Snapshot(None), ErrorVerb::Write))?;
        Ok(Snapshot {
            meta,
            snapshot: Box::new(tokio::fs::File::from_std(file)),
        })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<NodeId>>, Membership), StorageError<NodeId>> {
        blocking(&self.inner, |i| i.applied_state())
            .await
            .map_err(|e| sto(e, ErrorSubject::StateMachine, ErrorVerb::Read))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Reply>, StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<Entry> = entries.into_iter().collect();
        blocking(&self.inner, move |i| i.apply(entries))
            .await
            .map_err(|e| sto(e, ErrorSubject::StateMachine, ErrorVerb::Write))
    }

    async fn get_snapshot_builder(&mut self) -> SnapshotBuilder {
        SnapshotBuilder {
            inner: self.inner.clone(),
        }
    }

    async fn begin_receiving_snapshot(
        &mut self,
    ) -> Result<Box<tokio::fs::File>, StorageError<NodeId>> {
        let file = blocking(&self.inner, |i| {
            let path = i.tmp_path("receive");
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)?;
            // Nameless from now on: nothing to clean up whatever happens.
            fs::remove_file(&path)?;
            Ok(file)
        })
        .await
        .map_err(|e| sto(e, ErrorSubject::Snapshot(None), ErrorVerb::Write))?;
        Ok(Box::new(tokio::fs::File::from_std(file)))
    }

    async fn install_snapshot(
        &mut self,
        meta: &Meta,
        snapshot: Box<tokio::fs::File>,
    ) -> Result<(), StorageError<NodeId>> {
        let signature = Some(meta.signature());
        let file = snapshot.into_std().await;
        let meta = meta.clone();
        blocking(&self.inner, move |i| i.install(&meta, file))
            .await
            .map_err(|e| sto(e, ErrorSubject::Snapshot(signature), ErrorVerb::Write))
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<TypeConfig>>, StorageError<NodeId>> {
        let current = blocking(&self.inner, |i| i.current())
            .await
            .map_err(|e| sto(e, ErrorSubject::Snapshot(None), ErrorVerb::Read))?;
        Ok(current.map(|(meta, file)| Snapshot {
            meta,
            snapshot: Box::new(tokio::fs::File::from_std(file)),
        }))
    }
}
