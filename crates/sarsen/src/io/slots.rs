//! The reader table of the lock file (LMDB's `MDB_reader` array): one slot
//! per reading thread of an environment, holding the txnid of the snapshot
//! it reads so that writers in every process keep that snapshot's pages.
//!
//! Reader slot (64 bytes, one cache line, so readers never share a line),
//! at byte `HEADER + 64 × i` of the lock file:
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0  | 8 | txnid of the snapshot being read; 0 = idle |
//! | 8  | 4 | pid of the owner, as its own PID namespace sees it (informational only) |
//! | 12 | 4 | busy: 1 while a read transaction uses the slot |
//! | 16 | 8 | owner token: random per environment, 0 = slot free |
//! | 24 | 8 | thread tag of the last user (informational) |
//! | 32 | 8 | the snapshot's next unallocated page number: the file is never cut below it while the txnid is set |
//! | 40 | 24 | reserved |
//!
//! **Ownership** is the token, never the pid: pids repeat across PID
//! namespaces (two containers each have a pid 1) and are reused. Each
//! `Env` draws a random 64-bit token at open.
//!
//! **Liveness** is a lock per slot: the owner holds an exclusive OFD lock
//! on byte `2^33 + i` of the lock file from before it writes its token into
//! slot `i` until it frees the slot or its process dies (the kernel drops
//! the lock then; file locks belong to the file, not to a PID namespace).
//! A slot with a token whose byte nobody holds belongs to a dead
//! environment. A claimer takes the byte before the slot, and a reclaimer
//! takes the byte before it clears a dead slot, so the two never act on one
//! slot at once; inside one environment (one open file description, whose
//! locks do not exclude each other) a mutex serialises them.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::PoisonError;

use super::lock::{ofd_held, ofd_lock, LockFile, HEADER, SLOT};
use crate::error::Result;

/// Liveness byte of slot 0; slot `i` locks this plus `i`.
const SLOT_LOCK_BASE: i64 = 1 << 33;

/// The liveness byte of slot `i`.
fn slot_byte(i: u32) -> i64 {
    SLOT_LOCK_BASE + i64::from(i)
}

/// A random owner token for a new environment (never 0). Uses the
/// kernel's random source; if that fails, a hash of the time, the pid, the
/// boot and a counter (still unique in practice: it only has to differ
/// from every other live environment's).
pub(crate) fn new_owner_token() -> u64 {
    let mut b = [0u8; 8];
    // SAFETY: getrandom writes at most `b.len()` bytes into `b`.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    let mut t = u64::from_le_bytes(b);
    if n != b.len() as isize {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let seed = format!(
            "{now} {} {} {:?}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            std::fs::read("/proc/sys/kernel/random/boot_id").unwrap_or_default()
        );
        t = twox_hash::XxHash3_64::oneshot(seed.as_bytes());
    }
    t.max(1)
}

impl LockFile {
    fn slot_off(&self, i: u32) -> usize {
        HEADER + SLOT * i as usize
    }

    /// Snapshot txnid published in slot `i` (0 = idle).
    pub(crate) fn slot_txnid(&self, i: u32) -> &AtomicU64 {
        self.word(self.slot_off(i))
    }

    /// Next unallocated page number of the snapshot in slot `i`, stored
    /// before its txnid (see [`LockFile::max_reader_next`]).
    pub(crate) fn slot_next(&self, i: u32) -> &AtomicU64 {
        self.word(self.slot_off(i) + 32)
    }

    fn slot_pid(&self, i: u32) -> &AtomicU32 {
        self.word32(self.slot_off(i) + 8)
    }

    fn slot_busy(&self, i: u32) -> &AtomicU32 {
        self.word32(self.slot_off(i) + 12)
    }

    fn slot_owner(&self, i: u32) -> &AtomicU64 {
        self.word(self.slot_off(i) + 16)
    }

    fn slot_tid(&self, i: u32) -> &AtomicU64 {
        self.word(self.slot_off(i) + 24)
    }

    fn high_water(&self) -> &AtomicU64 {
        self.word(248)
    }

    /// Takes or releases slot `i`'s liveness byte; `Ok(false)` if another
    /// open file description holds it. A private table has no file and no
    /// other process: every byte is free.
    fn slot_lock(&self, i: u32, kind: libc::c_int) -> Result<bool> {
        match &self.file {
            Some(f) => {
                use std::os::unix::io::AsRawFd;
                ofd_lock(f.as_raw_fd(), slot_byte(i), kind, false)
            }
            None => Ok(true),
        }
    }

    /// Tries to make slot `i`, owned by the environment with token `owner`,
    /// busy for a new read transaction: one compare-and-swap.
    #[inline]
    pub(crate) fn try_use_slot(&self, i: u32, owner: u64) -> bool {
        if i >= self.slots || self.slot_owner(i).load(Ordering::Acquire) != owner {
            return false;
        }
        self.slot_busy(i)
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Finds a slot for a new read transaction of environment `owner`:
    /// first an idle slot it already owns, else a free slot it claims.
    /// Returns the slot, busy, or `None` when the table is full.
    ///
    /// A claimed slot is busy before its token is stored (Release), so
    /// another thread of the same environment, which checks the token
    /// (Acquire) and then swaps busy from 0, cannot take it too.
    pub(crate) fn claim_slot(&self, owner: u64, pid: u32, tid: u64) -> Result<Option<u32>> {
        let high = (self.high_water().load(Ordering::Acquire) as u32).min(self.slots);
        for i in 0..high {
            if self.try_use_slot(i, owner) {
                self.slot_tid(i).store(tid, Ordering::Relaxed);
                return Ok(Some(i));
            }
        }
        let _g = self.claims.lock().unwrap_or_else(PoisonError::into_inner);
        for i in 0..self.slots {
            if self.slot_owner(i).load(Ordering::Acquire) != 0 {
                continue;
            }
            // The byte first: a live claimer or owner elsewhere holds it.
            if !self.slot_lock(i, libc::F_WRLCK)? {
                continue;
            }
            if self.slot_owner(i).load(Ordering::Acquire) != 0 {
                self.slot_lock(i, libc::F_UNLCK)?;
                continue;
            }
            self.slot_busy(i).store(1, Ordering::Relaxed);
            self.slot_txnid(i).store(0, Ordering::Relaxed);
            self.slot_pid(i).store(pid, Ordering::Relaxed);
            self.slot_tid(i).store(tid, Ordering::Relaxed);
            self.slot_owner(i).store(owner, Ordering::Release);
            #[cfg(feature = "fault-injection")]
            self.pause_in_claim();
            self.high_water()
                .fetch_max(u64::from(i) + 1, Ordering::SeqCst);
            return Ok(Some(i));
        }
        Ok(None)
    }

    /// Ends the read transaction using slot `i`; the slot stays owned by
    /// its environment for the next one.
    #[inline]
    pub(crate) fn release_slot(&self, i: u32) {
        self.slot_txnid(i).store(0, Ordering::Release);
        self.slot_busy(i).store(0, Ordering::Release);
    }

    /// Frees every slot owned by environment `owner` (at `Env` drop) and
    /// releases their liveness bytes.
    pub(crate) fn free_slots(&self, owner: u64) {
        let _g = self.claims.lock().unwrap_or_else(PoisonError::into_inner);
        for i in 0..self.slots {
            if self.slot_owner(i).load(Ordering::Acquire) == owner {
                self.clear_slot(i);
                let _ = self.slot_lock(i, libc::F_UNLCK);
            }
        }
    }

    /// Clears slot `i`'s fields and then frees it (token last).
    fn clear_slot(&self, i: u32) {
        self.slot_txnid(i).store(0, Ordering::SeqCst);
        self.slot_busy(i).store(0, Ordering::Relaxed);
        self.slot_pid(i).store(0, Ordering::Relaxed);
        self.slot_owner(i).store(0, Ordering::Release);
    }

    /// The oldest snapshot txnid any reader is using, or `None` if no
    /// reader is active. The writer calls this at the start of each
    /// transaction. If the oldest reader's environment is another one and
    /// has died, dead slots are reclaimed first (one `fcntl` when the
    /// oldest reader is another environment's, none when it is `own`'s).
    pub(crate) fn oldest_reader(&self, own: u64) -> Result<Option<u64>> {
        let (oldest, slot) = self.scan_oldest();
        let Some(i) = slot else {
            return Ok(oldest);
        };
        let owner = self.slot_owner(i).load(Ordering::Acquire);
        if owner == 0 || owner == own || self.slot_alive(i)? {
            return Ok(oldest);
        }
        self.reclaim_dead(own)?;
        Ok(self.scan_oldest().0)
    }

    /// The slot of the oldest active snapshot: (pid, thread tag, txnid).
    pub(crate) fn oldest_slot(&self) -> Option<(u32, u64, u64)> {
        let i = self.scan_oldest().1?;
        Some((
            self.slot_pid(i).load(Ordering::Acquire),
            self.slot_tid(i).load(Ordering::Relaxed),
            self.slot_txnid(i).load(Ordering::Acquire),
        ))
    }

    /// The largest next unallocated page number of the snapshots readers
    /// hold (`None` when no reader is active): pages below it may be read,
    /// so the data file must not be cut below it. A reader stores its
    /// snapshot's page count (Release) before its txnid (SeqCst), and this
    /// loads the txnid (SeqCst) before the count, so a txnid seen comes
    /// with its count. A reader whose txnid this scan misses rechecks the
    /// published snapshot after storing it (`RoTxn::on_slot`): it either
    /// reads the snapshot the caller (the writer) published, whose count
    /// the caller includes, or retries on it.
    pub(crate) fn max_reader_next(&self) -> Option<u64> {
        let high = (self.high_water().load(Ordering::SeqCst) as u32).min(self.slots);
        let mut max = None;
        for i in 0..high {
            if self.slot_txnid(i).load(Ordering::SeqCst) != 0 {
                let n = self.slot_next(i).load(Ordering::Acquire);
                max = Some(max.map_or(n, |m: u64| m.max(n)));
            }
        }
        max
    }

    /// The oldest active snapshot txnid and its slot.
    fn scan_oldest(&self) -> (Option<u64>, Option<u32>) {
        let high = (self.high_water().load(Ordering::SeqCst) as u32).min(self.slots);
        let mut oldest: (Option<u64>, Option<u32>) = (None, None);
        for i in 0..high {
            let t = self.slot_txnid(i).load(Ordering::SeqCst);
            if t != 0 && oldest.0.is_none_or(|o| t < o) {
                oldest = (Some(t), Some(i));
            }
        }
        oldest
    }

    /// Whether slot `i`'s owner (another environment) is alive: it holds
    /// the slot's liveness byte.
    fn slot_alive(&self, i: u32) -> Result<bool> {
        match &self.file {
            Some(f) => {
                use std::os::unix::io::AsRawFd;
                ofd_held(f.as_raw_fd(), slot_byte(i))
            }
            // A private table holds this environment's slots only.
            None => Ok(true),
        }
    }

    /// Frees every slot whose environment is dead (LMDB's
    /// `mdb_reader_check`). Returns how many were freed. Slots of `own`
    /// are left alone.
    pub(crate) fn reclaim_dead(&self, own: u64) -> Result<u32> {
        if self.file.is_none() {
            return Ok(0);
        }
        let _g = self.claims.lock().unwrap_or_else(PoisonError::into_inner);
        let high = (self.high_water().load(Ordering::SeqCst) as u32).min(self.slots);
        let mut freed = 0;
        for i in 0..high {
            let owner = self.slot_owner(i).load(Ordering::Acquire);
            if owner == 0 || owner == own {
                continue;
            }
            // Taking the byte proves the owner dead and keeps claimers out.
            if !self.slot_lock(i, libc::F_WRLCK)? {
                continue;
            }
            if self.slot_owner(i).load(Ordering::Acquire) == owner {
                self.clear_slot(i);
                freed += 1;
            }
            self.slot_lock(i, libc::F_UNLCK)?;
        }
        Ok(freed)
    }

    /// The claimed reader slots: (pid, thread tag, snapshot txnid or 0 when idle).
    pub(crate) fn reader_slots(&self) -> Vec<(u32, u64, u64)> {
        let high = (self.high_water().load(Ordering::Acquire) as u32).min(self.slots);
        (0..high)
            .filter(|&i| self.slot_owner(i).load(Ordering::Acquire) != 0)
            .map(|i| {
                (
                    self.slot_pid(i).load(Ordering::Relaxed),
                    self.slot_tid(i).load(Ordering::Relaxed),
                    self.slot_txnid(i).load(Ordering::Acquire),
                )
            })
            .collect()
    }

    /// Reader slots in use (claimed by some environment).
    pub(crate) fn readers_used(&self) -> u32 {
        (0..self.slots)
            .filter(|&i| self.slot_owner(i).load(Ordering::Relaxed) != 0)
            .count() as u32
    }
}
