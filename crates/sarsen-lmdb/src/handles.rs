//! The table of live handles. Every handle this library gives out is a
//! `Box` turned into a raw pointer and registered here with its kind; a
//! pointer is dereferenced only after `check` finds it registered with
//! the expected kind, so a NULL, closed, freed or foreign handle gives
//! `EINVAL` instead of undefined behaviour.
//!
//! The table is behind one mutex; to spare a lock per call, each thread
//! remembers the last few handles it found live, valid while no handle has
//! been unregistered since (a global epoch, bumped by every
//! `unregister`). A cached answer is no weaker than a locked lookup: both
//! can only tell that the handle was live at the time of the check (LMDB's
//! rules forbid closing a handle while another thread uses it).

use std::cell::Cell;
use std::collections::BTreeMap;
use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// What a registered pointer points to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An `MDB_env`.
    Env,
    /// An `MDB_txn`.
    Txn,
    /// An `MDB_cursor`.
    Cursor,
}

static LIVE: Mutex<BTreeMap<usize, Kind>> = Mutex::new(BTreeMap::new());

/// Bumped by every [`unregister`]: a thread's cache of live handles is
/// valid while it holds the value the cache was filled under.
static EPOCH: AtomicU64 = AtomicU64::new(0);

/// Handles a thread's cache holds.
const CACHED: usize = 4;

thread_local! {
    /// This thread's recently confirmed handles (address | kind, 0 for
    /// none) and the epoch they were confirmed in.
    static SEEN: Cell<(u64, [usize; CACHED])> = const { Cell::new((0, [0; CACHED])) };
}

/// `p` and `k` in one word: handles are boxes of 8-byte-aligned structs,
/// so the low bits of the address are free.
fn tag(p: usize, k: Kind) -> usize {
    p | (k as usize + 1)
}

fn table() -> std::sync::MutexGuard<'static, BTreeMap<usize, Kind>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Records `p` as a live handle of kind `k`.
pub(crate) fn register<T>(p: *mut T, k: Kind) {
    table().insert(p as usize, k);
}

/// Forgets `p`; whether it was a live handle of kind `k`.
pub(crate) fn unregister<T>(p: *mut T, k: Kind) -> bool {
    let mut t = table();
    if t.get(&(p as usize)) == Some(&k) {
        t.remove(&(p as usize));
        // Under the lock: a thread that fills its cache after this sees
        // the new epoch, or filled it from a table without `p`.
        EPOCH.fetch_add(1, Ordering::AcqRel);
        true
    } else {
        false
    }
}

/// Whether `p` is a live handle of kind `k`.
pub(crate) fn is_live<T>(p: *const T, k: Kind) -> bool {
    let p = p as usize;
    if p == 0 || !p.is_multiple_of(8) {
        return false;
    }
    let want = tag(p, k);
    let epoch = EPOCH.load(Ordering::Acquire);
    let (seen_epoch, mut seen) = SEEN.get();
    if seen_epoch == epoch && seen.contains(&want) {
        return true;
    }
    if table().get(&p) != Some(&k) {
        return false;
    }
    // `epoch` was read before the lookup: if `p` was unregistered since,
    // the epoch moved on and the entry is never used.
    if seen_epoch != epoch {
        seen = [0; CACHED];
    }
    seen.rotate_right(1);
    seen[0] = want;
    SEEN.set((epoch, seen));
    true
}

/// `Ok(p)` if `p` is a live handle of kind `k`, else `EINVAL`.
pub(crate) fn check<T>(p: *const T, k: Kind) -> Result<*const T, c_int> {
    if is_live(p, k) {
        Ok(p)
    } else {
        Err(libc::EINVAL)
    }
}
