//! The state an environment's transactions share: the data file and its
//! map, the lock file, the page layout and geometry, the registry of
//! database handles, and the writer's state behind its mutex. [`Env`](crate::Env)
//! is the public handle over it; transactions borrow it, not the handle.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::db::Registry;
use crate::error::{Error, Result};
use crate::io::lock::Published;
use crate::io::{DataFile, LockFile, Map};
use crate::options::Durability;
use crate::page::{Layout, Pgno};
use crate::writer::TxnState;

pub(crate) struct Shared {
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
    /// When a commit of a non-durable mode is made durable.
    pub(crate) auto_sync: crate::options::AutoSync,
    /// Shrink threshold, bytes (0: the file never shrinks by itself).
    pub(crate) shrink_bytes: u64,
    /// Whether commits compact the file by themselves (`env/compact.rs`).
    pub(crate) auto_compact: bool,
    /// Auto-compaction: pages freed by this environment's commits since
    /// its last compaction pass.
    pub(crate) freed_since_compact: std::sync::atomic::AtomicU64,
    /// Auto-compaction: the commit whose freed pages brought the count to
    /// the look interval (0: not yet); the look waits until no snapshot
    /// older than it is held.
    pub(crate) look_after: std::sync::atomic::AtomicU64,
    /// Auto-compaction: the reuse bound a transaction needs for the work
    /// the last look asked of it (`compact_due`).
    pub(crate) due_after: std::sync::atomic::AtomicU64,
    /// Auto-compaction: how many times a quarter of the shrink threshold
    /// in freed pages the next look waits for (1 to 64).
    pub(crate) compact_backoff: std::sync::atomic::AtomicU64,
    /// Truncation attempts after commits: commits left to skip, and the
    /// skip after the next attempt that cuts nothing (doubling, at most
    /// 16; `env/compact.rs::after_commit`).
    pub(crate) shrink_skip: std::sync::atomic::AtomicU64,
    pub(crate) shrink_backoff: std::sync::atomic::AtomicU64,
    /// The published `next_pgno` at the last truncation check.
    pub(crate) shrink_last_next: std::sync::atomic::AtomicU64,
    /// What the automatic compaction asks of the next commit
    /// (`txn/compact.rs`: `DUE_NONE`, `DUE_RELOCATE`, `DUE_REFUND`).
    pub(crate) compact_due: std::sync::atomic::AtomicU8,
    /// A compaction of this environment is under way (`env/compact.rs`).
    pub(crate) compacting: std::sync::atomic::AtomicBool,
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
    /// A thread spins for [`writer`](Shared::writer) (at most one at a
    /// time; see [`Shared::lock_writer_mutex`]).
    pub(crate) writer_spinner: std::sync::atomic::AtomicBool,
    /// The process may run on more than one CPU (spinning for the writer
    /// mutex is pointless on one).
    pub(crate) multi_cpu: bool,
    /// Durable commits of this environment's threads waiting for one
    /// shared sync (`txn/group.rs`).
    pub(crate) group: crate::txn::group::Group,
}

/// How long one thread spins for the writer mutex before it sleeps.
const WRITER_SPIN: std::time::Duration = std::time::Duration::from_micros(50);

impl Shared {
    /// Takes this environment's writer mutex. A thread that finds it held
    /// first spins for it, up to [`WRITER_SPIN`], if no other thread is
    /// spinning and the machine has more than one CPU; then it sleeps on
    /// it. A write transaction holds the mutex for microseconds when
    /// threads commit in a loop (durable commits wait for their sync after
    /// letting it go, `txn/group.rs`), and waking a sleeping thread for
    /// each one costs more than the transaction: the spinner takes the
    /// mutex the moment it is released, while the next thread's wake-up
    /// overlaps the spinner's transaction. One spinner at most, so
    /// spinning threads never crowd out the holder.
    pub(crate) fn lock_writer_mutex(&self) -> MutexGuard<'_, TxnState> {
        use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
        if let Some(g) = self.try_lock_writer_mutex() {
            return g;
        }
        if self.multi_cpu
            && self
                .writer_spinner
                .compare_exchange(false, true, Acquire, Relaxed)
                .is_ok()
        {
            let until = std::time::Instant::now() + WRITER_SPIN;
            let got = loop {
                for _ in 0..32 {
                    std::hint::spin_loop();
                }
                if let Some(g) = self.try_lock_writer_mutex() {
                    break Some(g);
                }
                if std::time::Instant::now() >= until {
                    break None;
                }
            };
            self.writer_spinner.store(false, Release);
            if let Some(g) = got {
                return g;
            }
        }
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes this environment's writer mutex if no thread holds it (a
    /// poisoned mutex is taken too: a transaction's state is reset when
    /// the next one starts).
    pub(crate) fn try_lock_writer_mutex(&self) -> Option<MutexGuard<'_, TxnState>> {
        match self.writer.try_lock() {
            Ok(g) => Some(g),
            Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

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
            let own = self.try_lock_writer_mutex();
            // While this environment holds the writer lock for its
            // group-commit chain, the publish in progress is its own.
            if own.is_some() && !self.group.holds_lock() && self.lock.try_lock_writer()? {
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
}

impl Shared {
    /// Whether this process may still act on the environment at drop: not
    /// after a simulated crash (a dead process does nothing more), and not
    /// in a forked child, which must not touch the parent's slots, locks or
    /// syncs.
    pub(crate) fn live_at_drop(&self) -> bool {
        !self.crashed && !self.forked() && std::process::id() == self.pid
    }
}

impl Drop for Shared {
    /// Frees this environment's reader slots. (The sync of the non-durable
    /// modes is [`Env`](crate::Env)'s drop, which runs first.)
    fn drop(&mut self) {
        if self.live_at_drop() {
            self.lock.free_slots(self.token);
        }
    }
}
