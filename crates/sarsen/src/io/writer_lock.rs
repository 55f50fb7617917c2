//! The cross-process writer lock: a futex word in the lock file, taken and
//! released without a system call when no one waits (the role of LMDB's
//! process-shared robust mutex, `MDB_ROBUST`), with the owner's death
//! detected through an OFD lock rather than a thread id, so that it holds
//! across PID namespaces, users and `fork`.
//!
//! - **Owner ids.** An environment's first write takes an owner id `k`
//!   (`1..2^31`, from a counter in the lock file) and an exclusive OFD lock
//!   on byte `OWNER_BASE + k`, held until the lock file is closed. The
//!   kernel drops it when the process dies, in whatever namespace it ran;
//!   a `fork` child lets go of its copy (`io/fork.rs`). So "owner `k` is
//!   alive" is "someone holds byte `OWNER_BASE + k`".
//! - **The word** (`u32` at [`WRITER_WORD`]): 0 when free, else the
//!   owner's id, with [`WAITERS`] set once someone sleeps on it. Taking it
//!   is a compare-and-swap from 0; releasing it is a swap to 0, and a
//!   `FUTEX_WAKE` only if [`WAITERS`] was set.
//! - **A dead owner.** A waiter sleeps with a timeout and then checks the
//!   owner's OFD lock; once it is gone it swaps its own id in for the dead
//!   one's (a compare-and-swap, so one waiter wins). The next transaction
//!   then repairs what the dead writer left, as after any writer's death
//!   (`recovery.rs`, and the half-written publish in `lock.rs`).
//! - **A damaged word.** An id no one holds is taken over like a dead
//!   owner's; this environment's own id, found while none of its threads
//!   writes, is taken back. A word naming another live environment that is
//!   not writing makes writers wait until that environment writes or
//!   closes: a stall, never two writers.
//! - **Read-only mounts.** A private reader on a read-only mount of the same
//!   files holds a shared lock over every owner byte (`lock.rs`,
//!   `guard_read_only`), so a writer's first write waits until it closes.

use std::os::unix::io::AsRawFd;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::lock::{ofd_held, ofd_lock, LockFile};
use crate::error::{Error, Result};

/// Lock-file header word (`u32`): the writer lock.
pub(crate) const WRITER_WORD: usize = 288;
/// Lock-file header word (`u64`): the last owner id handed out.
pub(crate) const OWNER_COUNTER: usize = 296;
/// First byte of the owner locks: byte `OWNER_BASE + k` is owner `k`'s.
pub(crate) const OWNER_BASE: i64 = 1 << 34;
/// Owner ids are `1..=OWNER_MAX`.
pub(crate) const OWNER_MAX: u32 = (1 << 31) - 1;
/// Bit of the writer word: a waiter sleeps on it.
const WAITERS: u32 = 1 << 31;
/// Longest sleep before a waiter checks the owner is alive again.
const POLL_MAX: Duration = Duration::from_millis(50);
/// How long a handover waits for the woken waiter to take the lock.
const HANDOVER_WAIT: Duration = Duration::from_millis(1);

impl LockFile {
    /// This environment's owner id, taken (with its OFD lock) at the first
    /// call. With `wait`, waits while a reader on a read-only mount holds
    /// the owner bytes (or byte 0, as readers of lock-file format 2 do);
    /// without, gives `Busy` then. Called with the environment's writer
    /// mutex held, so one thread at a time.
    fn owner_id(&self, wait: bool) -> Result<u32> {
        let k = self.owner.load(Ordering::Relaxed);
        if k != 0 {
            return Ok(k);
        }
        let Some(f) = &self.file else {
            return Err(Error::ReadOnly);
        };
        let fd = f.as_raw_fd();
        // A read-only-mount reader of format 2 holds a shared lock on byte
        // 0 (that format's writer lock) and refuses to open once a writer
        // of any format has the environment open: waiting for byte 0 once,
        // here, is enough to keep from writing under it.
        if !ofd_lock(fd, 0, libc::F_WRLCK, wait)? {
            return Err(Error::Busy);
        }
        ofd_lock(fd, 0, libc::F_UNLCK, false)?;
        let counter = self.word(OWNER_COUNTER);
        // An id whose byte someone holds is in use (the counter wrapped, or
        // the lock file was damaged), or a read-only-mount reader holds
        // them all: try the next ones, then wait for one.
        for attempt in 0..8 {
            let n = counter.fetch_add(1, Ordering::Relaxed);
            let k = (n % u64::from(OWNER_MAX)) as u32 + 1;
            let last = attempt == 7 && wait;
            if ofd_lock(fd, OWNER_BASE + i64::from(k), libc::F_WRLCK, last)? {
                self.owner.store(k, Ordering::Relaxed);
                return Ok(k);
            }
        }
        Err(Error::Busy)
    }

    /// Whether owner `k`'s environment is alive (holds its owner byte).
    fn owner_alive(&self, k: u32) -> Result<bool> {
        match &self.file {
            Some(f) if (1..=OWNER_MAX).contains(&k) => {
                ofd_held(f.as_raw_fd(), OWNER_BASE + i64::from(k))
            }
            _ => Ok(false),
        }
    }

    /// The writer word.
    fn writer_word(&self) -> &AtomicU32 {
        self.word32(WRITER_WORD)
    }

    /// One attempt at the writer lock: takes it if free, or if its owner
    /// is dead or this environment itself (none of whose threads writes:
    /// the caller holds the environment's writer mutex). Returns the word
    /// seen when another live owner holds it.
    fn try_take(&self, k: u32) -> Result<std::result::Result<(), u32>> {
        let w = self.writer_word();
        let mut v = w.load(Ordering::Relaxed);
        loop {
            if v == 0 {
                match w.compare_exchange(0, k, Ordering::Acquire, Ordering::Relaxed) {
                    Ok(_) => return Ok(Ok(())),
                    Err(now) => {
                        v = now;
                        continue;
                    }
                }
            }
            let owner = v & !WAITERS;
            if owner != k && self.owner_alive(owner)? {
                return Ok(Err(v));
            }
            // Dead, damaged or our own stale id: take it over. Waiters the
            // word named keep being woken by our release.
            match w.compare_exchange(v, k | (v & WAITERS), Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return Ok(Ok(())),
                Err(now) => v = now,
            }
        }
    }

    /// Takes the cross-process writer lock, waiting for it. The caller
    /// holds the environment's writer mutex.
    pub(crate) fn lock_writer(&self) -> Result<()> {
        let k = self.owner_id(true)?;
        let w = self.writer_word();
        let mut sleep = Duration::from_micros(200);
        loop {
            let v = match self.try_take(k)? {
                Ok(()) => return Ok(()),
                Err(v) => v,
            };
            if v & WAITERS == 0
                && w.compare_exchange(v, v | WAITERS, Ordering::Relaxed, Ordering::Relaxed)
                    .is_err()
            {
                continue;
            }
            futex_wait(w, v | WAITERS, sleep);
            sleep = (sleep * 2).min(POLL_MAX);
        }
    }

    /// Tries the writer lock without waiting (a reader that finds a publish
    /// cut short). `Ok(false)` when another live environment holds it, or
    /// a reader on a read-only mount keeps this one from writing.
    pub(crate) fn try_lock_writer(&self) -> Result<bool> {
        if self.file.is_none() {
            return Ok(false);
        }
        let k = match self.owner_id(false) {
            Ok(k) => k,
            Err(Error::Busy) => return Ok(false),
            Err(e) => return Err(e),
        };
        Ok(self.try_take(k)?.is_ok())
    }

    /// Whether another environment sleeps waiting for the writer lock (the
    /// waiters bit of the word; this environment's own threads wait on its
    /// writer mutex instead).
    pub(crate) fn writer_contended(&self) -> bool {
        self.file.is_some() && self.writer_word().load(Ordering::Relaxed) & WAITERS != 0
    }

    /// Releases the writer lock to a waiting environment: releases it, then
    /// gives a woken waiter up to [`HANDOVER_WAIT`] to take it before the
    /// caller tries again (a caller that took it straight back would win
    /// the race every time: the waiter must first be scheduled).
    pub(crate) fn hand_over_writer(&self) {
        self.unlock_writer();
        let start = std::time::Instant::now();
        while self.writer_word().load(Ordering::Relaxed) == 0 && start.elapsed() < HANDOVER_WAIT {
            std::thread::yield_now();
        }
    }

    /// Releases the writer lock, waking the waiters if any sleeps.
    pub(crate) fn unlock_writer(&self) {
        if self.file.is_none() {
            return;
        }
        let old = self.writer_word().swap(0, Ordering::Release);
        if old & WAITERS != 0 {
            futex_wake(self.writer_word());
        }
    }
}

/// Sleeps while `*w == v`, at most `timeout` (`FUTEX_WAIT` on a shared
/// mapping, so it pairs with wakes from other processes). Spurious returns
/// are fine: the caller checks again.
fn futex_wait(w: &AtomicU32, v: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `w` is a live, 4-byte aligned word of the shared mapping;
    // FUTEX_WAIT only reads it and sleeps; `ts` outlives the call.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            w.as_ptr(),
            libc::FUTEX_WAIT,
            v,
            &ts as *const libc::timespec,
        )
    };
}

/// Wakes every process and thread sleeping on `w`.
fn futex_wake(w: &AtomicU32) {
    // SAFETY: `w` is a live, 4-byte aligned word of the shared mapping;
    // FUTEX_WAKE only looks up its sleepers.
    unsafe { libc::syscall(libc::SYS_futex, w.as_ptr(), libc::FUTEX_WAKE, i32::MAX) };
}
