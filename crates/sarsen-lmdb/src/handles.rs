//! The table of live handles. Every handle this library gives out is a
//! `Box` turned into a raw pointer and registered here with its kind; a
//! pointer is dereferenced only after `check` finds it registered with
//! the expected kind, so a NULL, closed, freed or foreign handle gives
//! `EINVAL` instead of undefined behaviour.

use std::collections::BTreeMap;
use std::ffi::c_int;
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
        true
    } else {
        false
    }
}

/// Whether `p` is a live handle of kind `k`.
pub(crate) fn is_live<T>(p: *const T, k: Kind) -> bool {
    !p.is_null() && table().get(&(p as usize)) == Some(&k)
}

/// `Ok(p)` if `p` is a live handle of kind `k`, else `EINVAL`.
pub(crate) fn check<T>(p: *const T, k: Kind) -> Result<*const T, c_int> {
    if is_live(p, k) {
        Ok(p)
    } else {
        Err(libc::EINVAL)
    }
}
