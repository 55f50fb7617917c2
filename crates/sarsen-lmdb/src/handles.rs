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
use std::collections::HashMap;
use std::ffi::c_int;
use std::hash::{BuildHasherDefault, Hasher};
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

/// Hashes a handle's address: live addresses are distinct and 8-byte
/// aligned, so one multiply (Fibonacci hashing) spreads them.
#[derive(Default)]
struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64 >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Live handles by address.
type Table = HashMap<usize, Kind, BuildHasherDefault<AddrHasher>>;

static LIVE: Mutex<Option<Table>> = Mutex::new(None);

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

/// Runs `f` on the table, under its lock.
fn with_table<R>(f: impl FnOnce(&mut Table) -> R) -> R {
    let mut g = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(Table::default))
}

/// Records `p` as a live handle of kind `k`.
pub(crate) fn register<T>(p: *mut T, k: Kind) {
    with_table(|t| t.insert(p as usize, k));
}

/// Forgets `p`; whether it was a live handle of kind `k`.
pub(crate) fn unregister<T>(p: *mut T, k: Kind) -> bool {
    with_table(|t| unregister_in(t, p as usize, k))
}

fn unregister_in(t: &mut Table, p: usize, k: Kind) -> bool {
    if t.get(&p) == Some(&k) {
        t.remove(&p);
        // Under the lock: a thread that fills its cache after this sees
        // the new epoch, or filled it from a table without `p`.
        EPOCH.fetch_add(1, Ordering::AcqRel);
        true
    } else {
        false
    }
}

/// Whether `p` is a live handle of kind `k`.
#[inline]
pub(crate) fn is_live<T>(p: *const T, k: Kind) -> bool {
    let p = p as usize;
    if p == 0 || !p.is_multiple_of(8) {
        return false;
    }
    let want = tag(p, k);
    let epoch = EPOCH.load(Ordering::Acquire);
    let (seen_epoch, seen) = SEEN.get();
    if seen_epoch == epoch && seen.contains(&want) {
        return true;
    }
    look_up(p, k, epoch)
}

/// [`is_live`] past this thread's cache: the table, under its lock; a live
/// handle is then cached. `epoch` was read before the lookup: if `p` is
/// unregistered meanwhile, the epoch moves on and the entry is not used.
#[cold]
#[inline(never)]
fn look_up(p: usize, k: Kind, epoch: u64) -> bool {
    if with_table(|t| t.get(&p) != Some(&k)) {
        return false;
    }
    let (seen_epoch, mut seen) = SEEN.get();
    if seen_epoch != epoch {
        seen = [0; CACHED];
    }
    seen.rotate_right(1);
    seen[0] = tag(p, k);
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
