//! How an environment is opened: [`EnvOptions`], the [`Durability`] modes
//! and the [`Geometry`] of the file.

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
    /// the last durable commit (the last [`Env::sync`](crate::Env::sync), or the last commit
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
    /// Current file length. Each growth sets it past the pages in use
    /// ([`EnvInfo::next_pgno`](crate::EnvInfo::next_pgno) × page size) by
    /// half their size, at least one growth step and at most 64 MiB,
    /// rounded up to whole growth steps and capped at the upper bound. That
    /// margin is sparse (no disk blocks) and lets the kernel's readahead
    /// work near the end of the data.
    pub now: u64,
    /// Upper bound: the file never grows past it (address space for it is
    /// reserved once at open).
    pub upper: u64,
    /// The unit the file grows in: its length is a multiple of it (up to
    /// the upper bound), and in write-map mode its blocks are allocated
    /// that many at a time.
    pub growth_step: u64,
    /// Shrink threshold (libmdbx's `shrink_threshold`): a commit truncates
    /// the file once it would give back at least this many bytes (0: the
    /// file never shrinks by itself). See [`EnvOptions::shrink_threshold`].
    pub shrink_threshold: u64,
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
    pub(crate) page_size: u32,
    pub(crate) max_size: Option<u64>,
    pub(crate) growth_step: u64,
    pub(crate) durability: Durability,
    pub(crate) single_file: bool,
    pub(crate) max_readers: u32,
    pub(crate) max_dbs: u32,
    pub(crate) read_only: bool,
    pub(crate) no_lock: bool,
    pub(crate) validation: bool,
    pub(crate) exclusive: bool,
    pub(crate) slow_readers: Option<crate::readers::SlowReaders>,
    pub(crate) read_ahead: bool,
    pub(crate) write_map: bool,
    pub(crate) boot_id: Option<[u8; 16]>,
    pub(crate) auto_sync: AutoSync,
    pub(crate) shrink_threshold: u64,
    pub(crate) auto_compact: bool,
    #[cfg(feature = "fault-injection")]
    pub(crate) fault: Option<crate::io::fault::FaultPlan>,
    #[cfg(feature = "fault-injection")]
    pub(crate) die_in_publish: Option<u64>,
    #[cfg(feature = "fault-injection")]
    pub(crate) claim_pause_ms: u64,
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
            auto_sync: AutoSync::default(),
            shrink_threshold: DEFAULT_SHRINK,
            auto_compact: true,
            #[cfg(feature = "fault-injection")]
            fault: None,
            #[cfg(feature = "fault-injection")]
            die_in_publish: None,
            #[cfg(feature = "fault-injection")]
            claim_pause_ms: 0,
        }
    }
}

/// The thresholds that make a commit of a non-durable mode durable
/// ([`EnvOptions::sync_bytes`], [`EnvOptions::sync_period`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct AutoSync {
    /// Bytes written by commits since the last durable one.
    pub bytes: Option<u64>,
    /// Nanoseconds since the last durable commit.
    pub period_ns: Option<u64>,
}

impl AutoSync {
    /// Whether a threshold is set and applies to commits in `mode`.
    #[inline]
    pub(crate) fn applies(&self, mode: Durability) -> bool {
        (self.bytes.is_some() || self.period_ns.is_some())
            && matches!(mode, Durability::SafeNoSync | Durability::NoMetaSync)
    }

    /// Whether a commit that brings the bytes written since the last
    /// durable commit to `unsynced`, `since_ns` after it, is to be made
    /// durable.
    pub(crate) fn due(&self, unsynced: u64, since_ns: u64) -> bool {
        self.bytes.is_some_and(|b| unsynced >= b) || self.period_ns.is_some_and(|p| since_ns >= p)
    }
}

/// Default shrink threshold, bytes.
pub(crate) const DEFAULT_SHRINK: u64 = 16 << 20;

/// Default upper bound of the file, bytes (1 TiB of address space, not of disk).
pub(crate) const DEFAULT_UPPER: u64 = 1 << 40;

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
    /// past it fail with [`Error::UpperBoundReached`](crate::Error::UpperBoundReached).
    ///
    /// The bound is the environment's, not the opener's: the first process
    /// to open it (when no other has it open) sets it, and every later
    /// opener maps that bound whatever it asks for, so that no process can
    /// grow the file past another's map. It takes effect anew once every
    /// process has closed the environment. [`Env::info`](crate::Env::info) reports the bound
    /// in force.
    pub fn max_size(mut self, bytes: u64) -> Self {
        self.max_size = Some(bytes);
        self
    }

    /// The unit the file grows in, bytes (default 1 MiB; rounded down to
    /// whole pages, 1 to 2^20 of them): the file's length is rounded up to
    /// a multiple of it, and in write-map mode its blocks are allocated
    /// that many at a time. Each growth also runs the length up to 64 MiB
    /// ahead of the pages in use, sparse (see [`Geometry::now`]).
    pub fn growth_step(mut self, bytes: u64) -> Self {
        self.growth_step = bytes;
        self
    }

    /// The shrink threshold, bytes (libmdbx's `shrink_threshold` of
    /// `mdbx_env_set_geometry`; default 16 MiB; 0: the file never shrinks
    /// by itself, only [`Env::compact`](crate::Env::compact) shrinks it).
    ///
    /// After a commit, once the file runs past the length it would be
    /// given for the pages in use (their end plus the sparse margin of
    /// [`Geometry::now`], in whole growth steps, never below the lower
    /// bound) by at least this many bytes, the file is truncated to that
    /// length. The end of the pages in use moves back at commit over free
    /// pages at the end of the file (libmdbx's continuous compaction); free
    /// pages are reused lowest first within each GC record (and across all
    /// of them in compaction), and the automatic compaction
    /// ([`EnvOptions::auto_compact`]) empties the end of the file.
    ///
    /// The file is never cut below a page that a live snapshot in any
    /// process, or a commit that open might pick after a crash, may read:
    /// in `SafeNoSync` and `NoMetaSync` the shrink waits for the next
    /// durable commit or [`Env::sync`](crate::Env::sync). While an old
    /// snapshot is open, little or nothing may be given back; the rest is
    /// after it ends.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let env = unsafe {
    ///     sarsen::EnvOptions::new()
    ///         .shrink_threshold(4 << 20)
    ///         .open(dir.path())
    /// }
    /// .unwrap();
    /// assert_eq!(env.info().unwrap().geometry.shrink_threshold, 4 << 20);
    /// ```
    pub fn shrink_threshold(mut self, bytes: u64) -> Self {
        self.shrink_threshold = bytes;
        self
    }

    /// Whether commits compact the file by themselves (default on). Once
    /// the pages freed since the last look reach a quarter of the shrink
    /// threshold and no snapshot can see them (no older reader; in the
    /// non-durable modes, after a sync), the next commits move the pages in
    /// use out of the end of the file into lower free pages and give the
    /// end back, as [`Env::compact`](crate::Env::compact) does but inside
    /// the caller's own commits (no commit, no txnid, is added): when at
    /// least three quarters of the file's pages are free (so the file is
    /// kept within about four times its pages in use, and a mass delete
    /// compacts only a few times), that gives back at least the threshold,
    /// and it moves at most a quarter as many pages as it gives back
    /// (libmdbx gives back only a free tail; this also moves pages in use).
    /// Off, only free pages that end the file are given back by
    /// themselves, once they reach the threshold. With a shrink threshold
    /// of 0, neither happens. In the non-durable modes the freed pages
    /// count once a sync made them durable ([`Env::sync`](crate::Env::sync),
    /// auto-sync); a reader holding a snapshot from before them delays it
    /// until it ends.
    pub fn auto_compact(mut self, on: bool) -> Self {
        self.auto_compact = on;
        self
    }

    /// When commits are synced (default [`Durability::Durable`]).
    pub fn durability(mut self, d: Durability) -> Self {
        self.durability = d;
        self
    }

    /// In [`Durability::SafeNoSync`] and [`Durability::NoMetaSync`], makes
    /// a commit durable (as a [`Durability::Durable`] commit is) once the
    /// commits since the last durable one have written `bytes` bytes or
    /// more (libmdbx's `MDBX_opt_sync_bytes`). A commit's bytes are its
    /// pages and its meta page. Counted in the lock file, over every
    /// process; checked at commit, with no background thread. Ignored in
    /// the other modes (`NoSync` may reuse the pages of the last durable
    /// commit, so a sync there would not bound what a crash loses).
    /// Default: off.
    ///
    /// ```
    /// use sarsen::{Durability, EnvOptions};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let env = unsafe {
    ///     EnvOptions::new()
    ///         .durability(Durability::SafeNoSync)
    ///         .sync_bytes(64 << 20) // at most 64 MiB of commits at risk
    ///         .open(dir.path())
    /// }
    /// .unwrap();
    /// # drop(env);
    /// ```
    pub fn sync_bytes(mut self, bytes: u64) -> Self {
        self.auto_sync.bytes = Some(bytes);
        self
    }

    /// In [`Durability::SafeNoSync`] and [`Durability::NoMetaSync`], makes
    /// a commit durable once `period` has passed since the last durable
    /// commit (libmdbx's `MDBX_opt_sync_period`), measured on the
    /// system's monotonic clock and shared by every process. Checked at
    /// commit, with no background thread: a period with no commit syncs
    /// nothing until the next one (call [`Env::sync`](crate::Env::sync)
    /// for that). Ignored in the other modes, as
    /// [`sync_bytes`](EnvOptions::sync_bytes). Default: off.
    pub fn sync_period(mut self, period: std::time::Duration) -> Self {
        self.auto_sync.period_ns = Some(u64::try_from(period.as_nanos()).unwrap_or(u64::MAX));
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
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) at open otherwise). Set by the first
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

    /// Open without write access; [`Env::write_txn`](crate::Env::write_txn) then returns
    /// [`Error::ReadOnly`](crate::Error::ReadOnly). The file must exist. Other processes may write
    /// meanwhile; this one's readers see each commit as usual, because
    /// they take slots in the shared reader table of the lock file, which
    /// must therefore be writable. Only when the lock file is on a
    /// read-only file system (`EROFS`) is the reader table kept in this
    /// process's memory instead, as LMDB and libmdbx do; since the same
    /// files may be writable through another mount, the open then fails if
    /// the environment is open elsewhere, and otherwise holds off writers
    /// (they wait) until this `Env` closes. Lacking permission to write the lock file (another
    /// user, a container given the volume read-only) is an error
    /// ([`Error::Io`](crate::Error::Io) from opening the lock file), not a private table: a
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
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument).
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
    /// [`Error::Busy`](crate::Error::Busy) if another process has the environment open, and
    /// while this `Env` lives, other processes' opens fail with
    /// [`Error::Busy`](crate::Error::Busy). Default off. Environments of the same process are
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
    /// [`Error::DiskFull`](crate::Error::DiskFull), not a fault (on file systems without
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
    /// [`Env::check`](crate::Env::check) on the newest snapshot before returning, and refuse
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
}
