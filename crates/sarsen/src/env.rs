//! The environment: one data file, its map and its lock file.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::db::{Database, Registry};
use crate::error::{Error, Result};
use crate::io::lock::{Opened, Published};
use crate::io::{DataFile, LockFile, Map};
use crate::page::meta::{self, Meta};
use crate::page::{Layout, Pgno, MAX_PAGE, MAX_PGNO, META_PAGES, MIN_PAGE};
use crate::recovery::{boot_id, read_metas};
use crate::store::Pager;
use crate::txn::writer::TxnState;
use crate::txn::{RoTxn, RwTxn};

/// When commits are made durable (LMDB's `MDB_NOSYNC`/`MDB_NOMETASYNC`,
/// libmdbx's `SYNC_DURABLE`/`NOMETASYNC`/`SAFE_NOSYNC`/`UTTERLY_NOSYNC`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Durability {
    /// Every commit is durable when `commit` returns. Sarsen writes the
    /// dirty pages and the meta page and syncs once: the checksums in the
    /// tree let open detect a commit whose pages did not all reach the disk
    /// and fall back to the previous one (LMDB syncs twice for this).
    #[default]
    Durable,
    /// Data is synced at each commit, the meta page is not: after a system
    /// crash the last commit may be lost, never corrupted (LMDB's
    /// `MDB_NOMETASYNC`). Each commit makes the previous one durable.
    NoMetaSync,
    /// Commits are not synced. After a system crash the database opens at
    /// the last durable commit (the last [`Env::sync`], or the last commit
    /// of a durable session), never corrupted: pages that commit needs are
    /// not reused until the next sync (libmdbx's `SAFE_NOSYNC`). A process
    /// crash loses nothing (the OS still has the pages). Dropping the `Env`
    /// syncs.
    SafeNoSync,
    /// Nothing is synced, not even at drop; free pages are reused at once.
    /// After a system crash the database may be corrupt, exactly as LMDB's
    /// `MDB_NOSYNC` warns. A process crash loses nothing. For bulk loads
    /// that can be redone, and benchmarks.
    NoSync,
}

/// Sizes of the data file (libmdbx's geometry), in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Geometry {
    /// Size the file starts at.
    pub lower: u64,
    /// Current file length. It runs up to 64 MiB ahead of the pages in use
    /// ([`EnvInfo::next_pgno`] × page size): each growth sets it 64 MiB
    /// past the pages needed, rounded up to whole growth steps and capped
    /// at the upper bound. That margin is sparse (no disk blocks) and lets
    /// the kernel's readahead work near the end of the data.
    pub now: u64,
    /// Upper bound: the file never grows past it (address space for it is
    /// reserved once at open).
    pub upper: u64,
    /// The unit the file grows in: its length is a multiple of it (up to
    /// the upper bound), and in write-map mode its blocks are allocated
    /// that many at a time.
    pub growth_step: u64,
}

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
    /// Txnid of the oldest snapshot any reader holds (in any process), if
    /// one is open: pages freed after it cannot be reused yet.
    pub oldest_reader_txnid: Option<u64>,
}

/// How to open an environment. Builder methods take and return `self`.
///
/// ```
/// use sarsen::{Durability, EnvOptions};
/// # let dir = tempfile::tempdir().unwrap();
/// let env = unsafe {
///     EnvOptions::new()
///         .page_size(4096)
///         .durability(Durability::SafeNoSync)
///         .open(dir.path())
/// }
/// .unwrap();
/// assert_eq!(env.page_size(), 4096);
/// ```
#[derive(Clone, Debug)]
pub struct EnvOptions {
    page_size: u32,
    max_size: Option<u64>,
    growth_step: u64,
    durability: Durability,
    single_file: bool,
    max_readers: u32,
    max_dbs: u32,
    read_only: bool,
    no_lock: bool,
    validation: bool,
    exclusive: bool,
    slow_readers: Option<crate::readers::SlowReaders>,
    read_ahead: bool,
    write_map: bool,
    boot_id: Option<[u8; 16]>,
    #[cfg(feature = "fault-injection")]
    fault: Option<crate::io::fault::FaultPlan>,
    #[cfg(feature = "fault-injection")]
    die_in_publish: Option<u64>,
    #[cfg(feature = "fault-injection")]
    claim_pause_ms: u64,
}

impl Default for EnvOptions {
    fn default() -> Self {
        EnvOptions {
            page_size: 4096,
            max_size: None,
            growth_step: 1 << 20,
            durability: Durability::Durable,
            single_file: false,
            max_readers: 126,
            max_dbs: 128,
            read_only: false,
            no_lock: false,
            validation: false,
            exclusive: false,
            slow_readers: None,
            read_ahead: true,
            write_map: false,
            boot_id: None,
            #[cfg(feature = "fault-injection")]
            fault: None,
            #[cfg(feature = "fault-injection")]
            die_in_publish: None,
            #[cfg(feature = "fault-injection")]
            claim_pause_ms: 0,
        }
    }
}

/// Default upper bound of the file, bytes (1 TiB of address space, not of disk).
const DEFAULT_UPPER: u64 = 1 << 40;

impl EnvOptions {
    /// Default options: 4096-byte pages, durable commits, a directory layout.
    pub fn new() -> EnvOptions {
        EnvOptions::default()
    }

    /// Page size in bytes for a new file: a power of two in 512..=65536
    /// (default 4096). An existing file keeps its own.
    pub fn page_size(mut self, bytes: u32) -> Self {
        self.page_size = bytes;
        self
    }

    /// Upper bound of the file in bytes (default 1 TiB; raised to the
    /// file's recorded bound if that is larger). Address space for it is
    /// reserved once; only the pages in use take disk or memory. Writes
    /// past it fail with [`Error::UpperBoundReached`].
    ///
    /// The bound is the environment's, not the opener's: the first process
    /// to open it (when no other has it open) sets it, and every later
    /// opener maps that bound whatever it asks for, so that no process can
    /// grow the file past another's map. It takes effect anew once every
    /// process has closed the environment. [`Env::info`] reports the bound
    /// in force.
    pub fn max_size(mut self, bytes: u64) -> Self {
        self.max_size = Some(bytes);
        self
    }

    /// The unit the file grows in, bytes (default 1 MiB; rounded down to
    /// whole pages, 1 to 2^20 of them): the file's length is rounded up to
    /// a multiple of it, and in write-map mode its blocks are allocated
    /// that many at a time. Each growth also runs the length 64 MiB ahead
    /// of the pages in use, sparse (see [`Geometry::now`]).
    pub fn growth_step(mut self, bytes: u64) -> Self {
        self.growth_step = bytes;
        self
    }

    /// When commits are synced (default [`Durability::Durable`]).
    pub fn durability(mut self, d: Durability) -> Self {
        self.durability = d;
        self
    }

    /// `false` (default): the path is a directory holding `data.sdb` and
    /// `lock.sdb`, created if missing. `true`: the path is the data file and
    /// the lock file is the path with `-lock` appended (LMDB's `MDB_NOSUBDIR`).
    pub fn single_file(mut self, yes: bool) -> Self {
        self.single_file = yes;
        self
    }

    /// Reader slots in the lock file, 1 to 65536 (default 126, as LMDB;
    /// [`Error::InvalidArgument`] at open otherwise). Set by the first
    /// process to open the environment; later openers use its number.
    pub fn max_readers(mut self, n: u32) -> Self {
        self.max_readers = n;
        self
    }

    /// Named databases this `Env` can hand out handles for (default 128).
    pub fn max_dbs(mut self, n: u32) -> Self {
        self.max_dbs = n;
        self
    }

    /// Open without write access; [`Env::write_txn`] then returns
    /// [`Error::ReadOnly`]. The file must exist. Other processes may write
    /// meanwhile; this one's readers see each commit as usual, because
    /// they take slots in the shared reader table of the lock file, which
    /// must therefore be writable. Only when the lock file is on a
    /// read-only file system (`EROFS`) is the reader table kept in this
    /// process's memory instead, as LMDB and libmdbx do; since the same
    /// files may be writable through another mount, the open then fails if
    /// the environment is open elsewhere, and otherwise holds off writers
    /// (they wait) until this `Env` closes. Lacking permission to write the lock file (another
    /// user, a container given the volume read-only) is an error
    /// ([`Error::Io`] from opening the lock file), not a private table: a
    /// writer elsewhere would not see this process's readers and would
    /// reuse the pages of their snapshots. See [`EnvOptions::no_lock`].
    pub fn read_only(mut self, yes: bool) -> Self {
        self.read_only = yes;
        self
    }

    /// With [`read_only`](EnvOptions::read_only): do not use the lock
    /// file at all; keep the reader table in this process's memory (LMDB's
    /// `MDB_NOLOCK` for a read-only environment). The caller promises that
    /// no process writes the database while this `Env` is open: a writer
    /// would not see these readers and could reuse their pages. Default
    /// off. On a writable environment, open fails with
    /// [`Error::InvalidArgument`].
    pub fn no_lock(mut self, yes: bool) -> Self {
        self.no_lock = yes;
        self
    }

    /// Reports readers that lag `lag` or more commits behind (libmdbx's
    /// Handle-Slow-Readers callback): at the start of a write transaction,
    /// if the oldest reader's snapshot is that far behind, `handler` gets
    /// its pid, thread, txnid, lag and the pages it keeps from reuse, once
    /// per snapshot. It returns [`SlowReaderAction::Keep`](crate::SlowReaderAction::Keep)
    /// to let the file grow, or, having ended the reader's process,
    /// [`SlowReaderAction::Retry`](crate::SlowReaderAction::Retry) to have
    /// the writer free dead processes' slots and look again. Sarsen never
    /// ends a reader itself. The handler runs with the writer lock held: it
    /// must not begin a write transaction on this environment. Default: no
    /// handler.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::sync::Arc;
    /// use sarsen::{EnvOptions, SlowReaderAction};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let worst = Arc::new(AtomicU64::new(0));
    /// let w2 = Arc::clone(&worst);
    /// let env = unsafe {
    ///     EnvOptions::new()
    ///         .slow_reader_handler(3, move |r| {
    ///             w2.fetch_max(r.lag, Ordering::Relaxed);
    ///             SlowReaderAction::Keep
    ///         })
    ///         .open(dir.path())?
    /// };
    /// let old = env.read_txn()?;
    /// for i in 0..5u32 {
    ///     let mut w = env.write_txn()?;
    ///     w.put(env.main_db(), &i.to_be_bytes(), b"v")?;
    ///     w.commit()?;
    /// }
    /// assert_eq!(worst.load(Ordering::Relaxed), 3);
    /// drop(old);
    /// # Ok::<(), sarsen::Error>(())
    /// ```
    pub fn slow_reader_handler(
        mut self,
        lag: u64,
        handler: impl Fn(&crate::SlowReader) -> crate::SlowReaderAction + Send + Sync + 'static,
    ) -> Self {
        self.slow_readers = Some(crate::readers::SlowReaders {
            lag: lag.max(1),
            handler: std::sync::Arc::new(handler),
        });
        self
    }

    /// Exclusive use (libmdbx's `MDBX_EXCLUSIVE`): the open fails with
    /// [`Error::Busy`] if another process has the environment open, and
    /// while this `Env` lives, other processes' opens fail with
    /// [`Error::Busy`]. Default off. Environments of the same process are
    /// other openers too.
    pub fn exclusive(mut self, yes: bool) -> Self {
        self.exclusive = yes;
        self
    }

    /// Read-ahead on page faults of the map (default on). Turn it off for
    /// random reads of a database larger than the memory it may use: a fault
    /// then reads one page instead of a window around it, which the kernel
    /// would otherwise read in and evict again (LMDB's `MDB_NORDAHEAD`, which
    /// does the same with `madvise(MADV_RANDOM)`).
    pub fn read_ahead(mut self, yes: bool) -> Self {
        self.read_ahead = yes;
        self
    }

    /// Write-map mode (LMDB's `MDB_WRITEMAP`): the writer builds dirty
    /// pages directly in a writable shared map instead of heap buffers
    /// written with `pwrite` at commit. Faster for large transactions and
    /// small ones alike (no copy into the kernel at commit), at the cost
    /// that a stray write through a bad pointer elsewhere in the process
    /// could reach the file. Every block of the file is allocated at open
    /// and the file grows with `fallocate`, so a full disk is an
    /// [`Error::DiskFull`], not a fault (on file systems without
    /// `fallocate`, such as some network ones, it can fault). Default off.
    ///
    /// With [`Durability::NoSync`] or [`Durability::SafeNoSync`] and
    /// [`EnvOptions::read_ahead`] on, the map also asks the kernel for huge
    /// page-cache folios (`madvise(MADV_HUGEPAGE)`), so that writing through
    /// the map takes one page fault per 2 MiB instead of per page after each
    /// write-back; the kernel then writes back whole 2 MiB folios. Not in
    /// the modes that sync every commit, where that would multiply the
    /// bytes each sync writes.
    pub fn write_map(mut self, yes: bool) -> Self {
        self.write_map = yes;
        self
    }

    /// Test hook: open as if the OS had this boot id, so a test can make
    /// open treat the last session as ended by a system crash (and verify
    /// or roll back unsynced commits). Not part of the stable API.
    #[doc(hidden)]
    pub fn assume_boot_id(mut self, id: [u8; 16]) -> Self {
        self.boot_id = Some(id);
        self
    }

    /// Test hook (feature `fault-injection`): every write and sync of the
    /// data file goes through `plan`, which can fail them and records
    /// them (see [`crate::fault`]). Not part of the stable API.
    #[cfg(feature = "fault-injection")]
    #[doc(hidden)]
    pub fn fault_plan(mut self, plan: crate::io::fault::FaultPlan) -> Self {
        self.fault = Some(plan);
        self
    }

    /// Paranoid open, for files from untrusted sources: run
    /// [`Env::check`] on the newest snapshot before returning, and refuse
    /// a database with any problem (libmdbx's `MDBX_VALIDATION` checks
    /// pages as they are read; this walks the whole file once). Besides
    /// every checksum it verifies that the free-page lists (GC) and the
    /// trees agree: a GC that lists a live page would let the writer
    /// overwrite it. Costs a read of every page in use. Default off.
    ///
    /// ```
    /// use sarsen::EnvOptions;
    /// # let dir = tempfile::tempdir().unwrap();
    /// let env = unsafe { EnvOptions::new().validation(true).open(dir.path())? };
    /// # Ok::<(), sarsen::Error>(())
    /// ```
    pub fn validation(mut self, yes: bool) -> Self {
        self.validation = yes;
        self
    }

    /// Test hook (feature `fault-injection`): the `n`-th snapshot this
    /// environment publishes after open (counting from 1: commits and
    /// repairs, not the first opener's initial publish) stops half-way, with the
    /// seqlock odd and the fields half-written, and the process kills
    /// itself with `SIGKILL`: a writer that died mid-publish. Not part of
    /// the stable API.
    #[cfg(feature = "fault-injection")]
    #[doc(hidden)]
    pub fn die_in_publish(mut self, n: u64) -> Self {
        self.die_in_publish = Some(n);
        self
    }

    /// Test hook (feature `fault-injection`): each reader-slot claim of
    /// this environment sleeps `ms` milliseconds once the slot's owner
    /// token is visible to other threads, as a claimer preempted there
    /// would. Not part of the stable API.
    #[cfg(feature = "fault-injection")]
    #[doc(hidden)]
    pub fn pause_in_slot_claim(mut self, ms: u64) -> Self {
        self.claim_pause_ms = ms;
        self
    }

    /// Opens or creates the environment at `path`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a bad page size or reader count,
    /// `no_lock` without `read_only`, or a read-only open of an empty file;
    /// [`Error::Incompatible`] for a file of another format, or a lock file
    /// of another format held open by a live process; [`Error::Corrupted`]
    /// when no meta page can be trusted, or (with
    /// [`validation`](EnvOptions::validation)) for the first problem the
    /// check finds; [`Error::Busy`] (see
    /// [`exclusive`](EnvOptions::exclusive)); [`Error::DiskFull`] creating
    /// the file, or allocating its blocks in
    /// [`write_map`](EnvOptions::write_map) mode; [`Error::Io`] from the
    /// OS, among them a lock file this process may not write. Nothing is
    /// left open; a file the open created stays.
    ///
    /// # Safety
    ///
    /// The data file is memory-mapped and values are returned as slices of
    /// the map. If anything other than Sarsen (in this or another process)
    /// modifies or truncates the file while it is open, those slices can
    /// change under you or the process can fault: that cannot be made safe
    /// in Rust, so the caller promises it will not happen (as with heed's
    /// `EnvOpenOptions::open` and memmap2's `Mmap::map`).
    pub unsafe fn open(&self, path: impl AsRef<Path>) -> Result<Env> {
        Env::open_with(self, path.as_ref())
    }
}

/// Source of unique environment ids (reader slot ownership).
static NEXT_UID: AtomicU64 = AtomicU64::new(1);

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
    pub(crate) path: PathBuf,
    pub(crate) file: DataFile,
    pub(crate) map: Arc<Map>,
    pub(crate) lock: LockFile,
    pub(crate) layout: Layout,
    pub(crate) page_size: u32,
    pub(crate) lower_pgno: Pgno,
    pub(crate) upper_pgno: Pgno,
    pub(crate) growth_pgno: Pgno,
    pub(crate) durability: Durability,
    pub(crate) read_only: bool,
    pub(crate) slow_readers: Option<crate::readers::SlowReaders>,
    pub(crate) uid: u64,
    /// Random owner token of this environment's reader slots (`io/slots.rs`).
    pub(crate) token: u64,
    pub(crate) pid: u32,
    /// [`crate::io::lock::fork_generation`] at open: a different value
    /// means this is a forked child ([`Error::Forked`]).
    pub(crate) fork_gen: u64,
    /// Set by [`Env::simulate_crash`]: drop as a killed process would.
    pub(crate) crashed: bool,
    pub(crate) boot_id: [u8; 16],
    pub(crate) registry: Registry,
    pub(crate) writer: Mutex<TxnState>,
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

    fn open_with(o: &EnvOptions, path: &Path) -> Result<Env> {
        let ps = o.page_size;
        if !ps.is_power_of_two() || !(MIN_PAGE..=MAX_PAGE).contains(&ps) {
            return Err(Error::InvalidArgument(format!(
                "page size {ps} is not a power of two in 512..=65536"
            )));
        }
        if o.max_readers == 0 || o.max_readers > 1 << 16 {
            return Err(Error::InvalidArgument(
                "max_readers must be 1..=65536".into(),
            ));
        }
        let (data_path, lock_path) = if o.single_file {
            let mut l = path.as_os_str().to_owned();
            l.push("-lock");
            (path.to_path_buf(), PathBuf::from(l))
        } else {
            if !o.read_only {
                std::fs::create_dir_all(path).map_err(|e| Error::io("create directory", e))?;
            }
            (path.join("data.sdb"), path.join("lock.sdb"))
        };
        let file = DataFile::open(&data_path, o.read_only, true)?;
        #[cfg(feature = "fault-injection")]
        let file = file.with_faults(o.fault.clone());
        if o.no_lock && !o.read_only {
            return Err(Error::InvalidArgument(
                "no_lock is only for read-only environments".into(),
            ));
        }
        let (lock, opened) = if o.no_lock {
            (LockFile::private(o.max_readers, None)?, Opened::First(None))
        } else {
            match LockFile::open(&lock_path, o.max_readers, o.exclusive) {
                Err(Error::Io { source, .. }) if o.read_only && lock_on_read_only_fs(&source) => (
                    LockFile::private(o.max_readers, Some(&lock_path))?,
                    Opened::First(None),
                ),
                Err(Error::Io { source, .. }) if permission_denied(&source) => {
                    return Err(Error::Io {
                        op: "open lock file for writing (every opener, read-only too, \
                             needs it so writers see its readers; use \
                             EnvOptions::no_lock only if nothing writes the database)",
                        source,
                    });
                }
                r => r?,
            }
        };
        let boot_id = o.boot_id.unwrap_or_else(boot_id);
        if file.len()? == 0 {
            if o.read_only {
                return Err(Error::InvalidArgument(
                    "read-only open of an empty file".into(),
                ));
            }
            create(&file, ps, o, boot_id)?;
            // The new file's name must survive a crash as its bytes do.
            let dir = data_path.parent().unwrap_or(Path::new("."));
            sync_dir(if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            })?;
        }
        let metas = read_metas(&file)?;
        let newest = metas
            .iter()
            .max_by_key(|f| (f.meta.txnid, f.meta.flags & meta::STEADY))
            .ok_or_else(|| Error::corrupted(0, "no valid meta page"))?;
        let page_size = newest.meta.page_size;
        let layout = Layout::new(page_size);
        // Every opener maps the same upper bound: the first opener's (its
        // option or the recorded bound, the larger), so no process's map
        // ends before pages another may grow the file to.
        let want_upper = match opened {
            Opened::Joined => lock.upper_pgno(),
            Opened::First(_) => o.max_size.unwrap_or(DEFAULT_UPPER) / u64::from(page_size),
        };
        let upper_pgno = want_upper
            .max(u64::from(newest.meta.upper))
            .clamp(u64::from(META_PAGES) + 1, u64::from(MAX_PGNO)) as Pgno;
        let map = Arc::new(Map::new(
            &file,
            upper_pgno as usize * page_size as usize,
            o.write_map && !o.read_only,
            o.read_ahead,
            o.write_map
                && !o.read_only
                && matches!(o.durability, Durability::NoSync | Durability::SafeNoSync),
        )?);
        let growth_pgno = (o.growth_step / u64::from(page_size)).clamp(1, 1 << 20) as Pgno;
        let env = Env {
            path: path.to_path_buf(),
            file,
            map: Arc::clone(&map),
            lock,
            layout,
            page_size,
            lower_pgno: newest.meta.lower.max(META_PAGES),
            upper_pgno,
            growth_pgno,
            durability: o.durability,
            read_only: o.read_only,
            slow_readers: o.slow_readers.clone(),
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
            token: crate::io::slots::new_owner_token(),
            pid: std::process::id(),
            fork_gen: crate::io::lock::fork_generation(),
            crashed: false,
            boot_id,
            registry: Registry::new(o.max_dbs),
            writer: Mutex::new(TxnState::new(Pager::new(map, layout))),
        };
        if let Opened::First(prev) = &opened {
            env.recover(&metas, prev.as_deref())?;
            env.lock.set_upper_pgno(u64::from(upper_pgno));
            env.lock.downgrade()?;
        }
        #[cfg(feature = "fault-injection")]
        if let Some(n) = o.die_in_publish {
            env.lock.set_die_in_publish(n);
        }
        #[cfg(feature = "fault-injection")]
        env.lock.set_claim_pause(o.claim_pause_ms);
        if o.validation {
            let r = env.check()?;
            if let Some(p) = r.problems.first() {
                return Err(Error::corrupted(
                    p.page,
                    format!(
                        "validation at open: {} ({} problems in all)",
                        p.what, r.problems_total
                    ),
                ));
            }
        }
        if o.write_map && !o.read_only {
            // Pages are written through the map: allocate the blocks of every
            // page in use (filling holes any sparse growth left).
            let ps = u64::from(page_size);
            let next = env.published()?.next_pgno;
            env.map.grow(
                next * ps,
                u64::from(growth_pgno) * ps,
                u64::from(upper_pgno) * ps,
            )?;
        }
        Ok(env)
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
        RoTxn::begin(self)
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
        RwTxn::begin(self)
    }

    /// The unnamed main database, which always exists.
    pub fn main_db(&self) -> Database {
        Database::MAIN
    }

    /// The page size, bytes.
    pub fn page_size(&self) -> u32 {
        self.page_size
    }

    /// Longest key, bytes: about half a page (2016 at 4096-byte pages,
    /// 224 at 512, 32736 at 65536), so that every page holds two nodes.
    pub fn max_key_size(&self) -> usize {
        self.layout.max_key
    }

    /// Longest value, bytes (0x7fff_ffff). Values longer than fit in a
    /// leaf node go to overflow pages.
    pub fn max_value_size(&self) -> usize {
        crate::page::MAX_VALUE
    }

    /// The path the environment was opened at.
    pub fn path(&self) -> &Path {
        &self.path
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
        if self.read_only {
            return Ok(());
        }
        self.check_fork()?;
        self.check_synced()?;
        let _g = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        self.lock.lock_writer()?;
        let r = crate::txn::commit::sync_steady(self);
        self.lock.unlock_writer();
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
        let newest = match read_metas(&self.file) {
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
        self.check_fork()?;
        self.lock.reclaim_dead(self.token)
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
        let last = self.lock.published_txnid();
        Ok(self
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
        let oldest = self.lock.oldest_slot().map(|(_, _, t)| t);
        let txn = self.read_txn()?;
        let gc_pages = txn.gc_pages()?;
        let ws = self.lock.writer_shared();
        let ps = u64::from(self.page_size);
        Ok(EnvInfo {
            page_size: self.page_size,
            geometry: Geometry {
                lower: u64::from(self.lower_pgno) * ps,
                now: self.file.len()?,
                upper: u64::from(self.upper_pgno) * ps,
                growth_step: u64::from(self.growth_pgno) * ps,
            },
            last_txnid: txn.txnid(),
            durable_txnid: ws.durable_txnid,
            next_pgno: txn.next_pgno(),
            readers_used: self.lock.readers_used(),
            oldest_reader_txnid: oldest,
            max_readers: self.lock.slots(),
            gc_pages,
        })
    }
}

impl Env {
    /// The published snapshot. Wait-free unless a commit is publishing at
    /// this instant. If the seqlock stays odd, the writer may have died
    /// half-way through its publish: whoever can take the writer lock (no
    /// live writer holds it then) repairs the snapshot from the metas
    /// ([`Env::repair_published`]). A publish held by a live writer is
    /// waited for, at most [`LockFile::publish_wait`] (then `Corrupted`).
    #[inline]
    pub(crate) fn published(&self) -> Result<Published> {
        match self.lock.try_published(1 << 10) {
            Some(p) => Ok(p),
            None => self.published_slow(),
        }
    }

    /// [`Env::published`] when a publish is in progress or was cut short.
    #[cold]
    fn published_slow(&self) -> Result<Published> {
        let start = std::time::Instant::now();
        loop {
            if let Some(p) = self.lock.try_published(1 << 10) {
                return Ok(p);
            }
            // This process's writer first: its threads share the lock
            // file's description, whose writer lock would not exclude them.
            let own = match self.writer.try_lock() {
                Ok(g) => Some(g),
                Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => None,
            };
            if own.is_some() && self.lock.try_lock_writer()? {
                let r = if self.lock.publishing() {
                    self.repair_published()
                } else {
                    Ok(())
                };
                self.lock.unlock_writer();
                r?;
                continue;
            }
            drop(own);
            if start.elapsed() > self.lock.publish_wait() {
                return Err(Error::corrupted(
                    0,
                    "lock file: the published snapshot stayed half-written while a writer held the writer lock",
                ));
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// `fdatasync` of the data file. A failure marks the environment, in
    /// every process, as unable to write ([`Error::SyncFailed`]): Linux may
    /// have marked the pages it could not write clean, and a later sync
    /// would not write them again.
    pub(crate) fn sync_data(&self) -> Result<()> {
        let r = self.file.sync_data();
        if r.is_err() {
            self.lock.set_sync_failed();
        }
        r
    }

    /// [`Error::SyncFailed`] once a sync has failed in this life of the
    /// environment (in any process).
    pub(crate) fn check_synced(&self) -> Result<()> {
        if self.lock.sync_failed() {
            return Err(Error::SyncFailed);
        }
        Ok(())
    }

    /// Whether this process is a `fork()` child of the one that opened
    /// the environment: a relaxed load, no system call.
    #[inline]
    pub(crate) fn forked(&self) -> bool {
        crate::io::lock::fork_generation() != self.fork_gen
    }

    /// [`Error::Forked`] in a forked child.
    #[inline]
    pub(crate) fn check_fork(&self) -> Result<()> {
        if self.forked() {
            return Err(Error::Forked);
        }
        Ok(())
    }

    /// Test hook: closes the environment as the death of its process
    /// would: no sync, reader slots left as they are, the lock file's
    /// descriptor closed (so its locks vanish, as the kernel drops a dead
    /// process's). The next opener that is alone recovers as after a
    /// crash of every process in this boot. Not part of the stable API.
    #[doc(hidden)]
    pub fn simulate_crash(mut self) {
        self.crashed = true;
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        if self.crashed || self.forked() || std::process::id() != self.pid {
            // A dead process does nothing more; a forked child must not
            // touch the parent's slots, locks or syncs.
            return;
        }
        if matches!(
            self.durability,
            Durability::SafeNoSync | Durability::NoMetaSync
        ) {
            let _ = self.sync();
        }
        self.lock.free_slots(self.token);
    }
}

/// Whether opening the lock file failed because its file system is
/// read-only: nothing can be writing the database then.
fn lock_on_read_only_fs(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::EROFS)
}

/// Whether opening the lock file failed for want of permission.
fn permission_denied(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM))
}

/// `fsync` of a directory, so that a file created in it survives a crash.
fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io("fsync directory", e))
}

/// Writes the first meta page of a new file.
fn create(file: &DataFile, ps: u32, o: &EnvOptions, boot_id: [u8; 16]) -> Result<()> {
    let upper = (o.max_size.unwrap_or(DEFAULT_UPPER) / u64::from(ps))
        .clamp(u64::from(META_PAGES) + 1, u64::from(MAX_PGNO)) as u32;
    let m = Meta {
        page_size: ps,
        txnid: 1,
        flags: meta::STEADY,
        next_pgno: META_PAGES,
        lower: META_PAGES,
        upper,
        growth: (o.growth_step / u64::from(ps)).clamp(1, 1 << 20) as u32,
        boot_id,
        ..Meta::default()
    };
    let mut buf = vec![0u8; ps as usize * META_PAGES as usize];
    m.encode(&mut buf[..ps as usize]);
    file.write_at(&buf, 0)?;
    file.sync_data()
}
