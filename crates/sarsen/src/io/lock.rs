//! The lock file: a small file mapped shared and read-write by every process
//! that opens the environment. It holds the published snapshot (a seqlock),
//! the writer's bookkeeping, and the reader table (LMDB's `MDB_txninfo`;
//! the table's protocol is in `io/slots.rs`).
//!
//! Layout, format version 4 (all fields little-endian, 8-byte aligned,
//! accessed atomically):
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0   | 8  | magic `b"SARSNLCK"` |
//! | 8   | 4  | lock-file format version (4) |
//! | 12  | 4  | reader slots in the table |
//! | 16  | 8  | snapshot seqlock counter (odd while the writer publishes) |
//! | 24  | 8  | published txnid |
//! | 32  | 8  | published next unallocated page number |
//! | 40  | 64 | catalog tree record ([`DbRecord`](crate::page::DbRecord) layout) |
//! | 104 | 64 | main (unnamed) tree record |
//! | 168 | 64 | GC tree record |
//! | 232 | 8  | txnid of the newest durable (steady) commit |
//! | 240 | 8  | meta slots: byte 0 = current, byte 1 = steady; bit 16 = the current meta has the `STEADY` flag |
//! | 248 | 8  | high-water mark of claimed reader slots |
//! | 256 | 8  | upper bound of the map, pages: the first opener's, for every opener |
//! | 264 | 8  | flags: bit 0 = a sync of the data file failed (writes refused until all close) |
//! | 272 | 8  | bytes written by commits since the last durable one (auto-sync) |
//! | 280 | 8  | time of the last durable commit, ns on `CLOCK_MONOTONIC` (auto-sync) |
//! | 288 | 4  | writer lock: 0, or the owner id with bit 31 set while someone waits (`io/writer_lock.rs`) |
//! | 296 | 8  | last owner id handed out |
//! | 304 | 8  | truncations of the data file in this life: a writer that sees it change forgets the file length it knew |
//! | 312 | 8  | reserved |
//! | 320 | 64 × slots | reader slots (`io/slots.rs`) |
//!
//! Locks (`F_OFD_SETLK*`, so they belong to this open file description and
//! vanish when the process dies, in whatever PID namespace it ran): byte 1
//! is the liveness lock (shared by every opener;
//! exclusive only to the first opener, which then resets the table), byte 2
//! the sharing lock (shared by every opener for its life; exclusive for an
//! `exclusive` opener), byte `2^33 + i` the liveness lock of reader
//! slot `i`, held exclusively by the environment that owns the slot, and
//! byte `2^34 + k` the lock of writer owner id `k`, held exclusively by the
//! environment that took the id at its first write (`io/writer_lock.rs`).
//!
//! A `fork()` child shares its parent's open file description, and so its
//! locks: [`fork_generation`] lets an environment notice that it is used in
//! a child and refuse ([`Error::Forked`]).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

use crate::error::{Error, Result};
use crate::page::record::RECORD_WORDS;

pub(crate) use super::fork::fork_generation;
use super::fork::{register_lock, unregister_lock};

const MAGIC: u64 = u64::from_le_bytes(*b"SARSNLCK");
const VERSION: u32 = 4;
/// Size of the header before the reader slots, bytes.
pub(crate) const HEADER: usize = 320;
/// Size of one reader slot, bytes.
pub(crate) const SLOT: usize = 64;
/// Header word: the agreed upper bound, pages.
const UPPER: usize = 256;
/// Header word: flags ([`FLAG_SYNC_FAILED`]).
const FLAGS: usize = 264;
/// A sync of the data file failed in this life of the environment.
const FLAG_SYNC_FAILED: u64 = 1;
/// Header word: bytes written by commits since the last durable one.
const UNSYNCED: usize = 272;
/// Header word: `CLOCK_MONOTONIC` time of the last durable commit, ns.
const SYNCED_AT: usize = 280;
/// Offset of the count of truncations of the data file.
const SHRINKS: usize = 304;
/// How long a reader waits for a publish whose writer still holds the
/// writer lock before it reports the lock file as stuck.
const PUBLISH_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The snapshot a read transaction copies: what the newest commit published.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Published {
    pub txnid: u64,
    pub next_pgno: u64,
    pub catalog: [u64; RECORD_WORDS],
    pub main: [u64; RECORD_WORDS],
    pub gc: [u64; RECORD_WORDS],
}

/// Writer-only state also published in the lock file.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct WriterShared {
    pub durable_txnid: u64,
    pub meta_current: u8,
    pub meta_steady: u8,
    /// Whether the current meta was written with the `STEADY` flag (its
    /// pages were durable before it, so syncing makes it a durable commit).
    pub current_steady: bool,
}

/// The mapped lock file, or (for a read-only open on a read-only file
/// system) a private table in anonymous memory.
pub(crate) struct LockFile {
    /// `None` for a private table: no other process shares it, and no
    /// process can write the database (the file system is read-only).
    pub(super) file: Option<File>,
    ptr: NonNull<u8>,
    len: usize,
    pub(super) slots: u32,
    /// A private table's read-only handle on the lock file, holding a
    /// shared lock on the writer owner bytes (see [`LockFile::private`]).
    _guard: Option<File>,
    /// This environment's writer owner id, 0 until its first write
    /// (`io/writer_lock.rs`).
    pub(super) owner: AtomicU32,
    /// Serialises this environment's claims and reclaims of reader slots:
    /// its threads share one open file description, whose slot locks do
    /// not exclude each other.
    pub(crate) claims: std::sync::Mutex<()>,
    /// Test hook: publishes left before this process kills itself
    /// half-way through one (0 = never).
    #[cfg(feature = "fault-injection")]
    die_in_publish: AtomicU64,
    /// Test hook: milliseconds a slot claim sleeps once the slot's token
    /// is visible (a preempted claimer), 0 = none.
    #[cfg(feature = "fault-injection")]
    claim_pause_ms: AtomicU64,
}

// SAFETY: all shared fields are accessed through atomics; the mapping lives
// until Drop.
unsafe impl Send for LockFile {}
// SAFETY: as above.
unsafe impl Sync for LockFile {}

/// Whether this opener is alone (and so must initialise the shared state).
pub(crate) enum Opened {
    /// Alone: the table was reset. Carries what the previous life of the
    /// environment (the processes that had it open before, all gone now)
    /// left in the lock file, if its header was valid.
    First(Option<Box<PrevLife>>),
    Joined,
}

/// What the lock file said when the first opener found it, before the
/// reset: which commit the last life had published, and whether a sync
/// failed in it. Open uses it to tell a published meta from one written
/// but never published (a writer killed between the two).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PrevLife {
    /// The published snapshot, or `None` when a writer died publishing it.
    pub published: Option<Published>,
    /// A sync of the data file failed in that life.
    pub sync_failed: bool,
}

impl LockFile {
    /// Opens or creates the lock file and maps it. Takes the liveness lock:
    /// exclusively if no other process has the environment open (then the
    /// header and the reader table are reset and `Opened::First` returned,
    /// and the caller must call [`LockFile::publish`] and then
    /// [`LockFile::downgrade`]), otherwise shared.
    pub(crate) fn open(
        path: &Path,
        max_readers: u32,
        exclusive: bool,
    ) -> Result<(LockFile, Opened)> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .open(path)
            .map_err(|e| Error::io("open lock file", e))?;
        let fd = file.as_raw_fd();
        // The sharing byte first: an exclusive opener needs it alone, every
        // other opener holds it shared, so neither waits for the other.
        let share = if exclusive {
            libc::F_WRLCK
        } else {
            libc::F_RDLCK
        };
        if !ofd_lock(fd, 2, share, false)? {
            return Err(Error::Busy);
        }
        // The first opener writes the magic only once it has published the
        // snapshot (in `downgrade`). A joiner that finds no magic was let in
        // by a first opener that died or failed half-way: it lets go and
        // tries to become the first opener itself.
        let mut attempts = 0;
        let (first, slots) =
            loop {
                if ofd_lock(fd, 1, libc::F_WRLCK, false)? {
                    break (true, max_readers);
                }
                ofd_lock(fd, 1, libc::F_RDLCK, true)?;
                // A header is trusted only while another opener holds the
                // liveness lock too: one that no one holds was left by a
                // previous life (its first opener died before resetting it).
                let live = ofd_held(fd, 1)?;
                match read_slot_count(&file) {
                    Ok(slots) if live => break (false, slots),
                    Ok(_) | Err(_) if attempts < 200 => {
                        ofd_lock(fd, 1, libc::F_UNLCK, false)?;
                        attempts += 1;
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                    Ok(_) => return Err(Error::Incompatible(
                        "lock file header held by no opener, and this opener could not reset it"
                            .into(),
                    )),
                    Err(e) => return Err(e),
                }
            };
        let len = HEADER + SLOT * slots as usize;
        let prev = if first {
            read_prev_life(&file).map(Box::new)
        } else {
            None
        };
        if first {
            file.set_len(0)
                .map_err(|e| Error::io("ftruncate lock", e))?;
            file.set_len(len as u64)
                .map_err(|e| Error::io("ftruncate lock", e))?;
        }
        let flen = file
            .metadata()
            .map_err(|e| Error::io("fstat lock", e))?
            .len();
        if flen < len as u64 {
            return Err(Error::Incompatible(
                "lock file shorter than its table".into(),
            ));
        }
        // SAFETY: a fresh shared read-write mapping of `len` bytes of the
        // lock file, which is at least that long (checked above).
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::io("mmap lock", std::io::Error::last_os_error()));
        }
        let ptr = NonNull::new(p as *mut u8)
            .ok_or_else(|| Error::io("mmap lock", std::io::Error::other("null mapping")))?;
        // From here `lock`'s drop forgets it again.
        register_lock(fd, ptr.as_ptr(), len);
        let lock = LockFile {
            file: Some(file),
            _guard: None,
            owner: AtomicU32::new(0),
            ptr,
            len,
            slots,
            claims: std::sync::Mutex::new(()),
            #[cfg(feature = "fault-injection")]
            die_in_publish: AtomicU64::new(0),
            #[cfg(feature = "fault-injection")]
            claim_pause_ms: AtomicU64::new(0),
        };
        if first {
            lock.word(8).store(
                u64::from(VERSION) | (u64::from(slots) << 32),
                Ordering::Relaxed,
            );
            Ok((lock, Opened::First(prev)))
        } else {
            if lock.word(0).load(Ordering::Acquire) != MAGIC
                || lock.word(8).load(Ordering::Relaxed) as u32 != VERSION
            {
                return Err(Error::Incompatible("lock file has a foreign header".into()));
            }
            Ok((lock, Opened::Joined))
        }
    }

    /// A table in private anonymous memory, for a read-only environment
    /// whose lock file is on a read-only file system, or that was opened
    /// with `no_lock`. The caller publishes the snapshot, as a first opener
    /// does.
    ///
    /// A read-only mount does not prove that nothing writes: the same
    /// directory may be writable through another mount (a container given
    /// a volume read-only). So when the lock file exists (`guard_path`),
    /// it is opened read-only: if another opener holds its liveness lock,
    /// the environment is live elsewhere and this one could not register
    /// its readers there, so the open fails; otherwise this `Env` holds a
    /// shared lock over the writer owner bytes for its life, and a writer
    /// that starts elsewhere waits at its first write until it closes. Without a lock file nothing
    /// can be checked (`no_lock` promises there is no writer).
    pub(crate) fn private(max_readers: u32, guard_path: Option<&Path>) -> Result<LockFile> {
        let guard = match guard_path {
            Some(path) => guard_read_only(path)?,
            None => None,
        };
        let len = HEADER + SLOT * max_readers as usize;
        // SAFETY: a fresh private anonymous read-write mapping of `len`
        // bytes (zero-filled), owned by the returned value alone.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::io("mmap lock", std::io::Error::last_os_error()));
        }
        let ptr = NonNull::new(p as *mut u8)
            .ok_or_else(|| Error::io("mmap lock", std::io::Error::other("null mapping")))?;
        let lock = LockFile {
            file: None,
            _guard: guard,
            owner: AtomicU32::new(0),
            ptr,
            len,
            slots: max_readers,
            claims: std::sync::Mutex::new(()),
            #[cfg(feature = "fault-injection")]
            die_in_publish: AtomicU64::new(0),
            #[cfg(feature = "fault-injection")]
            claim_pause_ms: AtomicU64::new(0),
        };
        lock.word(8).store(
            u64::from(VERSION) | (u64::from(max_readers) << 32),
            Ordering::Relaxed,
        );
        Ok(lock)
    }

    /// After the first opener has published the initial snapshot: lets other
    /// processes in (exclusive liveness lock becomes shared).
    /// The magic is written here, last, so that a joiner never trusts a
    /// table whose snapshot was not published.
    pub(crate) fn downgrade(&self) -> Result<()> {
        self.word(0).store(MAGIC, Ordering::Release);
        match &self.file {
            Some(f) => ofd_lock(f.as_raw_fd(), 1, libc::F_RDLCK, true).map(|_| ()),
            None => Ok(()),
        }
    }

    /// Whether this is a private table (no lock file: a read-only file
    /// system, or `no_lock`).
    pub(crate) fn is_private(&self) -> bool {
        self.file.is_none()
    }

    /// The 8-byte word at byte `off` of the mapping.
    pub(super) fn word(&self, off: usize) -> &AtomicU64 {
        debug_assert!(
            off.is_multiple_of(8) && off + 8 <= self.len,
            "lock word out of range"
        );
        // SAFETY: in bounds and 8-aligned (the mapping is page-aligned);
        // every access to shared words goes through atomics, so concurrent
        // access from other threads and processes is not a data race.
        unsafe { &*(self.ptr.as_ptr().add(off) as *const AtomicU64) }
    }

    /// The 4-byte word at byte `off` of the mapping.
    pub(super) fn word32(&self, off: usize) -> &AtomicU32 {
        debug_assert!(
            off.is_multiple_of(4) && off + 4 <= self.len,
            "lock word out of range"
        );
        // SAFETY: as in `word`.
        unsafe { &*(self.ptr.as_ptr().add(off) as *const AtomicU32) }
    }

    /// Number of reader slots.
    pub(crate) fn slots(&self) -> u32 {
        self.slots
    }

    /// Reads the published snapshot (seqlock read side; wait-free unless a
    /// commit is being published at this instant, which takes nanoseconds).
    /// `None` after `spins` tries that found a publish in progress: its
    /// writer may have died half-way, which only a holder of the writer
    /// lock can tell and repair (`Env::published`).
    #[inline]
    pub(crate) fn try_published(&self, spins: u32) -> Option<Published> {
        let mut left = spins;
        loop {
            let s1 = self.word(16).load(Ordering::Acquire);
            if s1 & 1 == 1 {
                if left == 0 {
                    return None;
                }
                left -= 1;
                std::hint::spin_loop();
                continue;
            }
            let mut p = Published {
                txnid: self.word(24).load(Ordering::Relaxed),
                next_pgno: self.word(32).load(Ordering::Relaxed),
                ..Published::default()
            };
            for i in 0..RECORD_WORDS {
                p.catalog[i] = self.word(40 + 8 * i).load(Ordering::Relaxed);
                p.main[i] = self.word(104 + 8 * i).load(Ordering::Relaxed);
                p.gc[i] = self.word(168 + 8 * i).load(Ordering::Relaxed);
            }
            fence(Ordering::Acquire);
            if self.word(16).load(Ordering::Relaxed) == s1 {
                return Some(p);
            }
        }
    }

    /// Whether a publish is in progress (or was cut short by its writer's
    /// death): the seqlock counter is odd.
    pub(crate) fn publishing(&self) -> bool {
        self.word(16).load(Ordering::Acquire) & 1 == 1
    }

    /// How long a reader waits on a publish held by a live writer.
    pub(crate) fn publish_wait(&self) -> std::time::Duration {
        PUBLISH_WAIT
    }

    /// The published txnid alone (the recheck of a starting reader).
    #[inline]
    pub(crate) fn published_txnid(&self) -> u64 {
        self.word(24).load(Ordering::SeqCst)
    }

    /// Writer-only shared state. Call with the writer lock held.
    pub(crate) fn writer_shared(&self) -> WriterShared {
        let m = self.word(240).load(Ordering::Relaxed);
        WriterShared {
            durable_txnid: self.word(232).load(Ordering::Acquire),
            meta_current: m as u8,
            meta_steady: (m >> 8) as u8,
            current_steady: (m >> 16) & 1 == 1,
        }
    }

    /// Publishes a new snapshot and writer state (seqlock write side). Call
    /// with the writer lock held, after the meta page of the commit is
    /// written.
    /// A counter left odd by a writer that died publishing is taken as
    /// the start of this publish, which so also repairs it.
    pub(crate) fn publish(&self, p: &Published, w: &WriterShared) {
        let seq = self.word(16);
        let s = seq.load(Ordering::Relaxed) & !1;
        seq.store(s.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        self.word(32).store(p.next_pgno, Ordering::Relaxed);
        #[cfg(feature = "fault-injection")]
        self.maybe_die_in_publish();
        for i in 0..RECORD_WORDS {
            self.word(40 + 8 * i).store(p.catalog[i], Ordering::Relaxed);
            self.word(104 + 8 * i).store(p.main[i], Ordering::Relaxed);
            self.word(168 + 8 * i).store(p.gc[i], Ordering::Relaxed);
        }
        self.word(232).store(w.durable_txnid, Ordering::Relaxed);
        self.word(240).store(
            u64::from(w.meta_current)
                | (u64::from(w.meta_steady) << 8)
                | (u64::from(w.current_steady) << 16),
            Ordering::Relaxed,
        );
        // SeqCst pairs with a starting reader's SeqCst publish-then-recheck.
        self.word(24).store(p.txnid, Ordering::SeqCst);
        seq.store(s.wrapping_add(2), Ordering::Release);
    }

    /// Test hook: the `n`-th publish from now kills the process half-way.
    #[cfg(feature = "fault-injection")]
    pub(crate) fn set_die_in_publish(&self, n: u64) {
        self.die_in_publish.store(n, Ordering::Relaxed);
    }

    /// Test hook: slot claims pause `ms` milliseconds once the token is
    /// visible.
    #[cfg(feature = "fault-injection")]
    pub(crate) fn set_claim_pause(&self, ms: u64) {
        self.claim_pause_ms.store(ms, Ordering::Relaxed);
    }

    #[cfg(feature = "fault-injection")]
    pub(super) fn pause_in_claim(&self) {
        let ms = self.claim_pause_ms.load(Ordering::Relaxed);
        if ms > 0 {
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
    }

    #[cfg(feature = "fault-injection")]
    fn maybe_die_in_publish(&self) {
        let left = self.die_in_publish.load(Ordering::Relaxed);
        if left == 0 {
            return;
        }
        self.die_in_publish.store(left - 1, Ordering::Relaxed);
        if left == 1 {
            // SAFETY: raising a signal has no memory-safety preconditions.
            unsafe {
                libc::raise(libc::SIGKILL);
            }
        }
    }

    /// The upper bound every opener maps, pages (0 before the first
    /// opener has set it).
    pub(crate) fn upper_pgno(&self) -> u64 {
        self.word(UPPER).load(Ordering::Acquire)
    }

    /// Sets the upper bound (the first opener, before `downgrade`).
    pub(crate) fn set_upper_pgno(&self, pages: u64) {
        self.word(UPPER).store(pages, Ordering::Release);
    }

    /// Whether a sync of the data file failed in this life.
    pub(crate) fn sync_failed(&self) -> bool {
        self.word(FLAGS).load(Ordering::Acquire) & FLAG_SYNC_FAILED != 0
    }

    /// Bytes written by commits since the last durable one, and the
    /// monotonic time of that durable commit (ns). Read and changed by the
    /// writer, under the writer lock.
    pub(crate) fn unsynced(&self) -> (u64, u64) {
        (
            self.word(UNSYNCED).load(Ordering::Relaxed),
            self.word(SYNCED_AT).load(Ordering::Relaxed),
        )
    }

    /// Counts `bytes` more written by a commit that is not durable.
    pub(crate) fn add_unsynced(&self, bytes: u64) {
        let w = self.word(UNSYNCED);
        w.store(
            w.load(Ordering::Relaxed).saturating_add(bytes),
            Ordering::Relaxed,
        );
    }

    /// How many times a writer of this life of the lock file truncated the
    /// data file. A writer compares it with the count its process last
    /// saw before it writes through its map: another process may have cut
    /// the file shorter (`txn/shrink.rs`).
    pub(crate) fn shrinks(&self) -> u64 {
        self.word(SHRINKS).load(Ordering::Acquire)
    }

    /// Counts a truncation of the data file (writer lock held).
    pub(crate) fn count_shrink(&self) {
        self.word(SHRINKS).fetch_add(1, Ordering::AcqRel);
    }

    /// Records a durable commit (or sync) at monotonic time `now_ns`.
    pub(crate) fn mark_synced(&self, now_ns: u64) {
        self.word(UNSYNCED).store(0, Ordering::Relaxed);
        self.word(SYNCED_AT).store(now_ns, Ordering::Relaxed);
    }

    /// Records that a sync failed: every process refuses writes from now on.
    pub(crate) fn set_sync_failed(&self) {
        self.word(FLAGS)
            .fetch_or(FLAG_SYNC_FAILED, Ordering::AcqRel);
    }

    /// Only the durable txnid and meta slots (after `Env::sync`).
    pub(crate) fn set_durable(&self, durable_txnid: u64, steady_slot: u8, current_slot: u8) {
        self.word(232).store(durable_txnid, Ordering::Release);
        self.word(240).store(
            u64::from(current_slot) | (u64::from(steady_slot) << 8) | (1 << 16),
            Ordering::Relaxed,
        );
    }
}

impl Drop for LockFile {
    fn drop(&mut self) {
        if let Some(f) = &self.file {
            unregister_lock(f.as_raw_fd());
        }
        // SAFETY: unmapping exactly the region mapped in `open`; no
        // reference into it outlives `self`.
        unsafe { libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, self.len) };
    }
}

/// For a private table on a read-only mount: the lock file opened
/// read-only with a shared lock over the writer owner bytes, or `None` if there is
/// no lock file. `Busy`-like refusal (an `Io` error) when another opener
/// holds the liveness byte: the environment is open where its lock file is
/// writable, and a writer there would not see this opener's readers.
fn guard_read_only(path: &Path) -> Result<Option<File>> {
    let f = match OpenOptions::new().read(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("open lock file read-only", e)),
    };
    let fd = f.as_raw_fd();
    if ofd_held(fd, 1)? {
        return Err(Error::Io {
            op: "open lock file: it is on a read-only file system, but the environment is \
                 open elsewhere (a writable mount of the same files), where writers could \
                 not see this opener's readers",
            source: std::io::Error::from_raw_os_error(libc::EROFS),
        });
    }
    // Writers elsewhere wait for this reader to close (a read lock needs
    // only read access): every writer's first write takes an owner byte,
    // and writers of lock-file format 2 take byte 0 for each transaction.
    ofd_lock(fd, 0, libc::F_RDLCK, true)?;
    ofd_lock_range(
        fd,
        super::writer_lock::OWNER_BASE,
        i64::from(super::writer_lock::OWNER_MAX) + 1,
        libc::F_RDLCK,
        true,
    )?;
    Ok(Some(f))
}

/// Reads the slot count of an existing lock file's header.
fn read_slot_count(file: &File) -> Result<u32> {
    use std::os::unix::fs::FileExt;
    let mut h = [0u8; 16];
    file.read_exact_at(&mut h, 0)
        .map_err(|e| Error::io("read lock header", e))?;
    if u64::from_le_bytes(h[0..8].try_into().unwrap_or_default()) != MAGIC {
        return Err(Error::Incompatible("lock file has a foreign header".into()));
    }
    let slots = u32::from_le_bytes(h[12..16].try_into().unwrap_or_default());
    if slots == 0 || slots > 1 << 20 {
        return Err(Error::Incompatible(format!(
            "lock file names {slots} reader slots"
        )));
    }
    Ok(slots)
}

/// The previous life's published state and flags, read by the first
/// opener before it resets the file; `None` unless the header is this
/// format's. A torn snapshot (odd counter: its writer died publishing) is
/// reported as `published: None`.
fn read_prev_life(file: &File) -> Option<PrevLife> {
    use std::os::unix::fs::FileExt;
    let mut h = [0u8; HEADER];
    file.read_exact_at(&mut h, 0).ok()?;
    let w = |off: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&h[off..off + 8]);
        u64::from_le_bytes(b)
    };
    if w(0) != MAGIC || w(8) as u32 != VERSION {
        return None;
    }
    let published = (w(16) & 1 == 0).then(|| {
        let mut p = Published {
            txnid: w(24),
            next_pgno: w(32),
            ..Published::default()
        };
        for i in 0..RECORD_WORDS {
            p.catalog[i] = w(40 + 8 * i);
            p.main[i] = w(104 + 8 * i);
            p.gc[i] = w(168 + 8 * i);
        }
        p
    });
    Some(PrevLife {
        published,
        sync_failed: w(FLAGS) & FLAG_SYNC_FAILED != 0,
    })
}

/// Whether another open file description holds a lock on byte `byte`.
pub(super) fn ofd_held(fd: libc::c_int, byte: i64) -> Result<bool> {
    // SAFETY: a zeroed `flock` is a valid value of a plain C struct.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = libc::F_WRLCK as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = byte;
    fl.l_len = 1;
    // SAFETY: fcntl with a valid fd and a pointer to a live flock.
    let r = unsafe { libc::fcntl(fd, libc::F_OFD_GETLK, &mut fl as *mut libc::flock) };
    if r != 0 {
        return Err(Error::io("fcntl getlk", std::io::Error::last_os_error()));
    }
    Ok(fl.l_type != libc::F_UNLCK as libc::c_short)
}

/// Takes (or with `F_UNLCK` releases) an OFD lock on byte `byte`. Returns
/// `false` when `wait` is off and another holder conflicts.
pub(super) fn ofd_lock(fd: libc::c_int, byte: i64, kind: libc::c_int, wait: bool) -> Result<bool> {
    ofd_lock_range(fd, byte, 1, kind, wait)
}

/// [`ofd_lock`] over `len` bytes from `start`.
pub(super) fn ofd_lock_range(
    fd: libc::c_int,
    start: i64,
    len: i64,
    kind: libc::c_int,
    wait: bool,
) -> Result<bool> {
    // SAFETY: a zeroed `flock` is a valid value of a plain C struct.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = kind as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = start;
    fl.l_len = len;
    let cmd = if wait {
        libc::F_OFD_SETLKW
    } else {
        libc::F_OFD_SETLK
    };
    loop {
        // SAFETY: fcntl with a valid fd and a pointer to a live flock.
        let r = unsafe { libc::fcntl(fd, cmd, &mut fl as *mut libc::flock) };
        if r == 0 {
            return Ok(true);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EAGAIN) | Some(libc::EACCES) if !wait => return Ok(false),
            _ => return Err(Error::io("fcntl lock", e)),
        }
    }
}

/// The system's monotonic clock (`CLOCK_MONOTONIC`), ns: one clock for
/// every process of the boot, as the lock file is one per boot's life.
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable `timespec`; `CLOCK_MONOTONIC` is
    // always available on Linux. On failure `ts` stays zero.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}
