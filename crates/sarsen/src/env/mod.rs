//! The environment: the public handle over the state its transactions
//! share (`shared.rs`), and its options (`options.rs`).

mod compact;
mod open;

pub use compact::Compaction;
pub(crate) use compact::{after_commit, after_sync};

use std::path::Path;

use crate::db::Database;
use crate::error::{Error, Result};
use crate::options::{Durability, EnvOptions, Geometry};
use crate::recovery::read_metas;
use crate::shared::Shared;
use crate::txn::{RoTxn, RwTxn};

/// Facts about an environment (LMDB's `MDB_envinfo`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EnvInfo {
    /// Page size, bytes.
    pub page_size: u32,
    /// File sizes, bytes.
    pub geometry: Geometry,
    /// Txnid of the newest commit.
    pub last_txnid: u64,
    /// Txnid of the newest commit known durable.
    pub durable_txnid: u64,
    /// First never-allocated page number (pages `0..next_pgno` are in use or free).
    pub next_pgno: u64,
    /// Reader slots claimed by open environments.
    pub readers_used: u32,
    /// Reader slots in the lock file.
    pub max_readers: u32,
    /// Pages recorded free in the GC tree (reusable now or once readers move on).
    pub gc_pages: u64,
    /// The free tail: pages of the GC that end the pages in use (the run
    /// `next_pgno - free_tail_pages .. next_pgno`, all free). A commit that
    /// loads them gives them back to the unallocated end once no snapshot
    /// can see them: compaction, the automatic one included, loads them all
    /// (design.md §7).
    pub free_tail_pages: u64,
    /// Txnid of the oldest snapshot any reader holds (in any process), if
    /// one is open: pages freed after it cannot be reused yet.
    pub oldest_reader_txnid: Option<u64>,
    /// Bytes written by the commits since the last durable one (libmdbx's
    /// `mi_unsync_volume`), counted by environments with
    /// [`EnvOptions::sync_bytes`] or [`EnvOptions::sync_period`] in
    /// [`Durability::SafeNoSync`] or [`Durability::NoMetaSync`]; 0 after a
    /// durable commit or [`Env::sync`].
    pub unsynced_bytes: u64,
}

/// An open environment: a database file with its named databases.
/// `Send + Sync`: share it across threads by reference or `Arc`.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// let env = unsafe { sarsen::Env::open(dir.path()) }.unwrap();
/// let db = env.main_db();
/// let mut w = env.write_txn().unwrap();
/// w.put(db, b"hello", b"world").unwrap();
/// w.commit().unwrap();
/// let r = env.read_txn().unwrap();
/// assert_eq!(r.get(db, b"hello").unwrap(), Some(&b"world"[..]));
/// ```
pub struct Env {
    pub(crate) shared: Shared,
}

impl Env {
    /// Opens or creates an environment at `path` with default options.
    ///
    /// # Errors
    ///
    /// Those of [`EnvOptions::open`].
    ///
    /// # Safety
    ///
    /// See [`EnvOptions::open`].
    pub unsafe fn open(path: impl AsRef<Path>) -> Result<Env> {
        Env::open_with(&EnvOptions::default(), path.as_ref())
    }

    /// Starts a read transaction on the newest commit. Wait-free: no lock,
    /// no system call, no allocation (the thread's reader slot is reused).
    /// Each open read transaction holds a reader slot, so up to
    /// [`EnvOptions::max_readers`] may be open at once, over every thread
    /// and process. The one exception
    /// is a writer that died half-way through publishing a commit: the
    /// first reader or writer that can take the writer lock then repairs
    /// the snapshot from the meta pages, which costs an `fdatasync` (and,
    /// after a failed sync, a verification of every page).
    ///
    /// # Errors
    ///
    /// [`Error::ReadersFull`] when every reader slot is in use;
    /// [`Error::Forked`] in a `fork()` child of the process that opened
    /// the environment; [`Error::Corrupted`] if the published snapshot
    /// stays half-written for 10 s while a live writer holds the writer
    /// lock; errors of the repair above.
    pub fn read_txn(&self) -> Result<RoTxn<'_>> {
        RoTxn::begin(&self.shared)
    }

    /// Starts the write transaction, waiting while another (in this or
    /// another process) is open.
    ///
    /// # Errors
    ///
    /// [`Error::ReadOnly`]; [`Error::Forked`] in a `fork()` child of the
    /// process that opened the environment; [`Error::SyncFailed`] after a
    /// failed sync in any process; [`Error::Corrupted`] if the lock file's
    /// published state disagrees with the meta pages (a stray write into
    /// the lock file), or if repairing a snapshot whose writer died while
    /// publishing it finds no meta to trust; [`Error::Io`].
    pub fn write_txn(&self) -> Result<RwTxn<'_>> {
        RwTxn::begin(&self.shared)
    }

    /// The unnamed main database, which always exists.
    pub fn main_db(&self) -> Database {
        Database::MAIN
    }

    /// The page size, bytes.
    pub fn page_size(&self) -> u32 {
        self.shared.page_size
    }

    /// Longest key, bytes: about half a page (2016 at 4096-byte pages,
    /// 224 at 512, 32736 at 65536), so that every page holds two nodes.
    pub fn max_key_size(&self) -> usize {
        self.shared.layout.max_key
    }

    /// Longest value, bytes (0x7fff_ffff). Values longer than fit in a
    /// leaf node go to overflow pages.
    pub fn max_value_size(&self) -> usize {
        crate::page::MAX_VALUE
    }

    /// The path the environment was opened at.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// Makes every commit durable now (needed only in the non-durable
    /// modes). Waits for the writer lock.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] (a failed `fdatasync` also makes every later write
    /// and sync fail with [`Error::SyncFailed`], in every process, until
    /// the environment is reopened); [`Error::SyncFailed`] after such a
    /// failure; [`Error::Forked`]; [`Error::Corrupted`] if the current
    /// meta page no longer holds the published commit. On a read-only
    /// environment it does nothing and cannot fail.
    pub fn sync(&self) -> Result<()> {
        let s = &self.shared;
        if s.read_only {
            return Ok(());
        }
        s.check_fork()?;
        s.check_synced()?;
        let mut g = s.writer.lock().unwrap_or_else(|e| e.into_inner());
        // Commits of the group-commit chain are synced and published
        // first; the writer mutex keeps the chain from growing meanwhile.
        s.group.flush(s)?;
        if s.group.enter(s)?.is_some() {
            s.group.leave(s);
            return Err(crate::Error::corrupted(
                0,
                "group-commit chain grew during Env::sync",
            ));
        }
        let r = crate::txn::commit::sync_steady(s);
        if r.is_ok() {
            s.lock.mark_synced(crate::io::lock::monotonic_ns());
            g.unsynced_commits = false;
            // The newest commit is durable now: the file may be cut to it.
            // A failed truncation leaves the longer file, as valid.
            let _ = crate::txn::shrink::shrink(s, crate::txn::shrink::Cut::Threshold);
        }
        s.group.leave(s);
        drop(g);
        if r.is_ok() {
            // The pages the unsynced commits freed are reusable now.
            after_sync(s);
        }
        r
    }

    /// Checks the whole database: [`RoTxn::check`](crate::RoTxn::check) on the newest snapshot,
    /// plus the meta pages, of which one must be valid and hold that
    /// snapshot's commit or a newer one. Runs beside writers.
    ///
    /// # Errors
    ///
    /// Those of [`read_txn`](Env::read_txn) ([`Error::ReadersFull`] among
    /// them); [`Error::Io`] reading the meta pages. Damage is reported in
    /// the [`CheckReport`](crate::CheckReport), not as an error.
    pub fn check(&self) -> Result<crate::CheckReport> {
        let txn = self.read_txn()?;
        let mut report = txn.check()?;
        let newest = match read_metas(&self.shared.file) {
            Ok(found) => found.iter().map(|f| f.meta.txnid).max(),
            Err(Error::Corrupted { .. }) => None,
            Err(e) => return Err(e),
        };
        if newest.is_none_or(|t| t < report.txnid) {
            let what = format!(
                "no valid meta page holds commit {} or a newer one",
                report.txnid
            );
            report.push(0, "", what);
        }
        Ok(report)
    }

    /// Writes a consistent copy of the newest snapshot into the directory
    /// `dir` (created if missing; it must not hold a database), while
    /// writers go on: LMDB's `mdb_env_copy`. Pages of the snapshot's trees
    /// keep their page numbers, free pages become zeros, and the copy opens
    /// at the snapshot's txnid. See [`compact_copy_to`](Env::compact_copy_to)
    /// for a dense copy.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] if `dir` holds a data file;
    /// [`Error::Corrupted`] if the source fails its check (a damaged
    /// database is not copied page by page); [`Error::Io`],
    /// [`Error::DiskFull`]; those of [`read_txn`](Env::read_txn) for the
    /// snapshot. On error no data file is left in `dir`.
    ///
    /// ```
    /// # let src = tempfile::tempdir().unwrap();
    /// # let dst = tempfile::tempdir().unwrap();
    /// let env = unsafe { sarsen::Env::open(src.path())? };
    /// let mut w = env.write_txn()?;
    /// w.put(env.main_db(), b"k", b"v")?;
    /// w.commit()?;
    /// let info = env.copy_to(dst.path().join("backup"))?;
    /// let copy = unsafe { sarsen::Env::open(dst.path().join("backup"))? };
    /// assert_eq!(copy.read_txn()?.txnid(), info.txnid);
    /// assert_eq!(copy.read_txn()?.get(copy.main_db(), b"k")?, Some(&b"v"[..]));
    /// # Ok::<(), sarsen::Error>(())
    /// ```
    pub fn copy_to(&self, dir: impl AsRef<Path>) -> Result<crate::CopyInfo> {
        let txn = self.read_txn()?;
        crate::copy::copy_physical(self, &txn, dir.as_ref())
    }

    /// Writes a compacted copy of the newest snapshot into `dir` (LMDB's
    /// `mdb_env_copy2` with `MDB_CP_COMPACT`): every database re-inserted in
    /// key order into a new file, pages filled full, no free pages, merge
    /// operator names kept. The copy starts at a new txnid.
    ///
    /// # Errors
    ///
    /// As [`copy_to`](Env::copy_to), except that damage in the source
    /// shows up as the error of the read that meets it; and
    /// [`Error::NoComparator`] (or a mismatch error) for a database whose
    /// user comparator is not attached to this environment's handle,
    /// since the copy is built in that order.
    pub fn compact_copy_to(&self, dir: impl AsRef<Path>) -> Result<crate::CopyInfo> {
        let txn = self.read_txn()?;
        crate::copy::copy_compact(self, &txn, dir.as_ref())
    }

    /// Frees the reader slots of environments whose process died without
    /// closing them (LMDB's `mdb_reader_check`, libmdbx's
    /// `mdbx_reader_check`); returns how many. Each slot is owned by a
    /// random per-`Env` token, and its owner holds a lock on a byte of the
    /// lock file for that slot, which the kernel drops when the process
    /// dies: so pids reused, or equal across PID namespaces (containers),
    /// never make a dead slot look alive or a live one dead. Write
    /// transactions do this by themselves when the oldest reader's
    /// environment is dead, and read transactions when the table is full.
    ///
    /// # Errors
    ///
    /// [`Error::Forked`] in a `fork()` child; [`Error::Io`] if a lock
    /// cannot be queried.
    pub fn reader_check(&self) -> Result<u32> {
        self.shared.check_fork()?;
        self.shared.lock.reclaim_dead(self.shared.token)
    }

    /// The reader table: every claimed slot, in every process that has
    /// the environment open (LMDB's `mdb_reader_list`, libmdbx's
    /// `mdbx_reader_list`). A slot stays claimed by its environment between
    /// read transactions; `txnid` is `None` while it is idle.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let env = unsafe { sarsen::Env::open(dir.path())? };
    /// let r = env.read_txn()?;
    /// let me = std::process::id();
    /// let readers = env.readers()?;
    /// assert!(readers.iter().any(|x| x.pid == me && x.txnid == Some(r.txnid()) && x.lag == 0));
    /// # Ok::<(), sarsen::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// None: the table is read from memory (the lock file's map, or the
    /// private table of a lock-free read-only environment), with no
    /// system call that could fail.
    pub fn readers(&self) -> Result<Vec<crate::ReaderInfo>> {
        let last = self.shared.lock.published_txnid();
        Ok(self
            .shared
            .lock
            .reader_slots()
            .into_iter()
            .map(|(pid, thread, t)| crate::ReaderInfo {
                pid,
                thread,
                txnid: (t != 0).then_some(t),
                lag: if t == 0 { 0 } else { last.saturating_sub(t) },
            })
            .collect())
    }

    /// Geometry, txnids, readers and free pages.
    ///
    /// # Errors
    ///
    /// Those of [`read_txn`](Env::read_txn), for the snapshot it reads;
    /// [`Error::Io`] if the file's length cannot be read;
    /// [`Error::Corrupted`] if a page of the free-page tree is damaged.
    pub fn info(&self) -> Result<EnvInfo> {
        // Before this call's own snapshot, which would count as a reader.
        let oldest = self.shared.lock.oldest_slot().map(|(_, _, t)| t);
        let txn = self.read_txn()?;
        let (gc_pages, free_tail_pages) = txn.gc_pages()?;
        let ws = self.shared.lock.writer_shared();
        let ps = u64::from(self.shared.page_size);
        Ok(EnvInfo {
            page_size: self.shared.page_size,
            geometry: Geometry {
                lower: u64::from(self.shared.lower_pgno) * ps,
                now: self.shared.file.len()?,
                upper: u64::from(self.shared.upper_pgno) * ps,
                growth_step: u64::from(self.shared.growth_pgno) * ps,
                shrink_threshold: self.shared.shrink_bytes,
            },
            last_txnid: txn.txnid(),
            durable_txnid: ws.durable_txnid,
            next_pgno: txn.next_pgno(),
            readers_used: self.shared.lock.readers_used(),
            oldest_reader_txnid: oldest,
            unsynced_bytes: self.shared.lock.unsynced().0,
            max_readers: self.shared.lock.slots(),
            gc_pages,
            free_tail_pages,
        })
    }

    /// Test hook: closes the environment as the death of its process
    /// would: no sync, reader slots left as they are, the lock file's
    /// descriptor closed (so its locks vanish, as the kernel drops a dead
    /// process's). The next opener that is alone recovers as after a
    /// crash of every process in this boot. Not part of the stable API.
    #[doc(hidden)]
    pub fn simulate_crash(mut self) {
        self.shared.crashed = true;
    }
}

impl Drop for Env {
    /// In the modes whose commits are not all durable when they return
    /// (`SafeNoSync`, `NoMetaSync`), closing syncs them, as libmdbx's
    /// `mdbx_env_close` does, and so does a `Durable` environment whose own
    /// last commit was made unsynced
    /// ([`RwTxn::set_durability`](crate::RwTxn::set_durability)); `NoSync`
    /// leaves that to the caller.
    fn drop(&mut self) {
        if !self.shared.live_at_drop() {
            return;
        }
        let unsynced = match self.shared.durability {
            Durability::SafeNoSync | Durability::NoMetaSync => true,
            Durability::Durable => {
                self.shared
                    .writer
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .unsynced_commits
            }
            _ => false,
        };
        if unsynced {
            let _ = self.sync();
        }
    }
}
