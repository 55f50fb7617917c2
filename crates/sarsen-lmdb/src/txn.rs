//! `MDB_txn`: a transaction handle owning a Sarsen transaction.
//!
//! Lifetimes: Sarsen's transactions borrow the [`sarsen::Env`]. The `Env`
//! is boxed by the environment handle and reached as `&'static Env` (see
//! [`MDB_env::env`](crate::env::MDB_env)); it is freed only by
//! `mdb_env_close` when the handle's count of live transactions is zero,
//! so a transaction's `'static` borrow never outlives it. A nested
//! transaction borrows its parent's `RwTxn`, which is boxed (its address
//! never changes) and not touched while the child lives: every call on a
//! transaction with a live child gives `MDB_BAD_TXN`, and ending a parent
//! ends its child first.

use std::ffi::{c_int, c_uint};
use std::ptr;
use std::sync::atomic::Ordering;

use sarsen::{Cursor, Database, DupMode, KeyOrder, NestedTxn, RoTxn, RwTxn, Stat};

use crate::consts::*;
use crate::cursor::{clear_live, free_cursor, MDB_cursor};
use crate::env::{env_ref, DbiInfo, MDB_env};
use crate::error::to_code;
use crate::handles::TXNS;
use crate::{guard, guard_or, CResult};

/// What a transaction handle holds.
// A read transaction inline: renewing one allocates nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum State {
    /// A read transaction. Not boxed: the transaction handle is, and the
    /// kept cursors that borrow it are dropped before the state changes
    /// (`clear_live`). `mdb_txn_reset` and `mdb_txn_renew` reset and renew
    /// it in place (`MDB_txn::idle` in between).
    Ro(RoTxn<'static>),
    /// A top-level write transaction.
    Rw(Box<RwTxn<'static>>),
    /// A nested write transaction (its parent is `MDB_txn::parent`).
    Nested(Box<NestedTxn<'static, 'static>>),
}

/// A transaction handle (LMDB's `MDB_txn`), from [`mdb_txn_begin`], freed
/// by [`mdb_txn_commit`] or [`mdb_txn_abort`].
///
/// The handle C holds is a slab handle ([`crate::handles`]); the object
/// stays with its slot when the transaction ends and is reused by the next
/// transaction begun in that slot, so a transaction costs no allocation
/// (its vectors keep their capacity, and its copy of the environment's
/// database handles stays valid while they do not change).
pub struct MDB_txn {
    /// This transaction's handle (what C holds).
    pub(crate) handle: usize,
    /// The environment handle's object.
    pub(crate) env: *const MDB_env,
    /// The parent's object (NULL for a top-level transaction).
    parent: *mut MDB_txn,
    /// The live child's object, or NULL.
    child: *mut MDB_txn,
    pub(crate) state: Option<State>,
    /// Cursors opened in this transaction and not closed.
    pub(crate) cursors: Vec<*mut MDB_cursor>,
    pub(crate) rdonly: bool,
    /// A read transaction after `mdb_txn_reset` (its `RoTxn` reset in
    /// place, holding no snapshot) and before `mdb_txn_renew`.
    pub(crate) idle: bool,
    /// While `idle`: `dbi_version` before the reset (set to 0 meanwhile:
    /// a reset transaction has no database handles, as in LMDB) and the
    /// snapshot's txnid (`mdb_txn_id` still gives it, as LMDB's).
    idle_kept: (u64, u64),
    /// An `MDB_RESERVE` put whose value the program is still writing:
    /// the database, the key, and the buffer handed out. Stored by the
    /// next call on this transaction (or its commit).
    pub(crate) reserved: Option<(Database, Vec<u8>, Vec<u8>)>,
    /// The named databases the main database shows, once asked
    /// ([`crate::main_view::names`]); `None` after a database is created
    /// or dropped.
    pub(crate) names: Option<Vec<Vec<u8>>>,
    /// Keys and `MDB_db` records of names returned through the main
    /// database, kept until the transaction ends.
    pub(crate) records: Vec<Box<[u8]>>,
    /// A write failed in a way after which LMDB allows only an abort: every
    /// call but `mdb_txn_abort` is then `MDB_BAD_TXN` (a commit aborts).
    pub(crate) failed: bool,
    /// A copy of the environment's database handles, current while
    /// `dbi_version` equals the environment's (0: no copy).
    dbis: Vec<Option<DbiInfo>>,
    dbi_version: u64,
}

/// Read access to a transaction of either kind.
pub(crate) enum View<'a> {
    Ro(&'a RoTxn<'static>),
    Rw(&'a RwTxn<'static>),
}

impl<'a> View<'a> {
    pub(crate) fn get(&self, db: Database, key: &[u8]) -> sarsen::Result<Option<&'a [u8]>> {
        match self {
            View::Ro(t) => t.get(db, key),
            View::Rw(t) => t.get(db, key),
        }
    }
    pub(crate) fn cursor(&self, db: Database) -> sarsen::Result<Cursor<'a>> {
        match self {
            View::Ro(t) => t.cursor(db),
            View::Rw(t) => t.cursor(db),
        }
    }
    pub(crate) fn stat(&self, db: Database) -> sarsen::Result<Stat> {
        match self {
            View::Ro(t) => t.stat(db),
            View::Rw(t) => t.stat(db),
        }
    }
    pub(crate) fn dup_mode(&self, db: Database) -> sarsen::Result<Option<DupMode>> {
        match self {
            View::Ro(t) => t.dup_mode(db),
            View::Rw(t) => t.dup_mode(db),
        }
    }
    pub(crate) fn key_order(&self, db: Database) -> sarsen::Result<KeyOrder> {
        match self {
            View::Ro(t) => t.key_order(db),
            View::Rw(t) => t.key_order(db),
        }
    }
    pub(crate) fn list_dbs(&self) -> sarsen::Result<Vec<String>> {
        match self {
            View::Ro(t) => t.list_dbs(),
            View::Rw(t) => t.list_dbs(),
        }
    }
}

impl MDB_txn {
    /// The environment handle (live while this transaction is: see the
    /// module docs).
    pub(crate) fn envh(&self) -> &MDB_env {
        // SAFETY: the environment handle is freed only when no transaction
        // is live (`mdb_env_close` leaks it otherwise).
        unsafe { &*self.env }
    }

    fn usable(&self) -> CResult<()> {
        if self.child.is_null() && !self.failed {
            Ok(())
        } else {
            Err(MDB_BAD_TXN)
        }
    }

    /// Read access, or `MDB_BAD_TXN` (reset, or a child is live).
    pub(crate) fn view(&self) -> CResult<View<'_>> {
        self.usable()?;
        match self.state.as_ref() {
            Some(State::Ro(t)) if !self.idle => Ok(View::Ro(t)),
            Some(State::Rw(t)) => Ok(View::Rw(t)),
            Some(State::Nested(t)) => Ok(View::Rw(t)),
            _ => Err(MDB_BAD_TXN),
        }
    }

    /// Write access: `EACCES` in a read transaction (as LMDB).
    #[inline]
    pub(crate) fn rw(&mut self) -> CResult<&mut RwTxn<'static>> {
        self.usable()?;
        if self.rdonly {
            // Checked without `&mut` to the state: a read transaction's
            // cursors may hold borrows of its `RoTxn`.
            return Err(libc::EACCES);
        }
        // The common case first, without a jump table.
        match self.state.as_mut() {
            Some(State::Rw(t)) => Ok(t),
            other => rw_of(other),
        }
    }

    /// Stores the value of a pending `MDB_RESERVE` put.
    #[inline]
    pub(crate) fn flush(&mut self) -> CResult<()> {
        if self.reserved.is_none() {
            return Ok(());
        }
        self.flush_reserved()
    }

    #[cold]
    #[inline(never)]
    fn flush_reserved(&mut self) -> CResult<()> {
        if let Some((db, k, v)) = self.reserved.take() {
            self.rw()?.put(db, &k, &v).map_err(|e| to_code(&e))?;
        }
        Ok(())
    }

    /// What `dbi` stands for, or `EINVAL` for a number never given out
    /// or in a reset transaction (as LMDB): from this transaction's copy
    /// of the environment's table, taken again when the table has changed
    /// (no lock while it has not).
    #[inline]
    pub(crate) fn db(&mut self, dbi: crate::MDB_dbi) -> CResult<DbiInfo> {
        let v = self.envh().dbi_version.load(Ordering::Acquire);
        if v != self.dbi_version {
            self.copy_dbis()?;
        }
        self.dbis
            .get(dbi as usize)
            .copied()
            .flatten()
            .ok_or(libc::EINVAL)
    }

    /// Takes the environment's table of database handles again; `EINVAL`
    /// in a reset transaction (whose `dbi_version` is 0, so every `db`
    /// call gets here).
    #[cold]
    #[inline(never)]
    fn copy_dbis(&mut self) -> CResult<()> {
        if self.idle {
            return Err(libc::EINVAL);
        }
        // SAFETY: as `envh`; not through it, to borrow `dbis` mutably.
        let env = unsafe { &*self.env };
        self.dbi_version = env.copy_dbis(&mut self.dbis);
        Ok(())
    }
}

/// [`MDB_txn::rw`] of a state other than a top-level write transaction.
#[cold]
fn rw_of(s: Option<&mut State>) -> CResult<&mut RwTxn<'static>> {
    match s {
        Some(State::Rw(t)) => Ok(t),
        Some(State::Nested(t)) => Ok(t),
        Some(State::Ro(_)) => Err(libc::EACCES),
        None => Err(MDB_BAD_TXN),
    }
}

/// The object of transaction handle `p`, or `EINVAL`.
#[inline]
pub(crate) fn txn_ptr(p: *mut MDB_txn) -> CResult<*mut MDB_txn> {
    Ok(TXNS.get(p.addr()).ok_or(libc::EINVAL)? as *mut MDB_txn)
}

/// The transaction handle behind `p`, or `EINVAL`.
///
/// # Safety
///
/// As every C entry point: a transaction is used by one thread at a time.
#[inline]
pub(crate) unsafe fn txn_mut<'a>(p: *mut MDB_txn) -> CResult<&'a mut MDB_txn> {
    let o = txn_ptr(p)?;
    // SAFETY: the object of a live handle, a `Box<MDB_txn>` we published,
    // used by one thread at a time (LMDB's rule).
    let t = unsafe { &mut *o };
    t.flush()?;
    Ok(t)
}

/// Begins a transaction (`mdb_txn_begin`): a read transaction with
/// `MDB_RDONLY` (or in an environment opened with it), else a write
/// transaction; with `parent`, a write transaction nested in it.
///
/// # Safety
///
/// `env` is an open environment handle, `parent` NULL or a live write
/// transaction of it, `txn` NULL (`EINVAL`) or writable.
#[no_mangle]
pub unsafe extern "C" fn mdb_txn_begin(
    env: *mut MDB_env,
    parent: *mut MDB_txn,
    flags: c_uint,
    txn: *mut *mut MDB_txn,
) -> c_int {
    guard(|| {
        if txn.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: forwarded contract.
        match unsafe { begin(env, parent, flags) } {
            Ok(t) => {
                // SAFETY: non-NULL and writable per the contract.
                unsafe { txn.write(t) };
                MDB_SUCCESS
            }
            Err(e) => e,
        }
    })
}

/// # Safety
///
/// As [`mdb_txn_begin`].
unsafe fn begin(env: *mut MDB_env, parent: *mut MDB_txn, flags: c_uint) -> CResult<*mut MDB_txn> {
    // SAFETY: checked.
    let h = unsafe { env_ref(env) }?;
    let e = h.env()?;
    let rdonly = flags & MDB_RDONLY != 0 || h.rdonly();
    let parent_obj = if parent.is_null() {
        ptr::null_mut()
    } else {
        txn_ptr(parent)?
    };
    let (slot, spare) = TXNS.alloc()?;
    let spare = spare as *mut MDB_txn;
    let t = if spare.is_null() {
        Box::into_raw(Box::new(MDB_txn {
            handle: 0,
            env: h,
            parent: parent_obj,
            child: ptr::null_mut(),
            state: None,
            cursors: Vec::new(),
            reserved: None,
            names: None,
            records: Vec::new(),
            failed: false,
            rdonly,
            idle: false,
            idle_kept: (0, 0),
            dbis: Vec::new(),
            dbi_version: 0,
        }))
    } else {
        // SAFETY: the object a free slot kept: an ended transaction's
        // `Box<MDB_txn>`, cleaned up by `end` (no state, cursors, records)
        // and used by nobody until we publish it.
        let o = unsafe { &mut *spare };
        o.env = h;
        o.parent = parent_obj;
        o.rdonly = rdonly;
        o.idle = false;
        spare
    };
    // SAFETY: `t` is ours alone until published; the Sarsen transaction
    // is made in place (a read transaction is not moved twice).
    let o = unsafe { &mut *t };
    let made = if !parent.is_null() {
        // SAFETY: checked.
        unsafe { txn_mut(parent) }.and_then(|p| {
            if !ptr::eq(p.env, h) || rdonly || p.rdonly {
                return Err(libc::EINVAL);
            }
            let child = p.rw()?.nested().map_err(|e| to_code(&e))?;
            // SAFETY: lifetime erasure. The child borrows the parent's
            // boxed `RwTxn`, which stays put and unused until the child
            // ends (module docs): `usable` refuses the parent while
            // `child` is set.
            let child: NestedTxn<'static, 'static> = unsafe { std::mem::transmute(child) };
            o.state = Some(State::Nested(Box::new(child)));
            Ok(())
        })
    } else if rdonly {
        e.read_txn()
            .map(|r| o.state = Some(State::Ro(r)))
            .map_err(|e| to_code(&e))
    } else {
        e.write_txn()
            .map(|mut w| {
                w.set_durability(crate::env::durability_now(h));
                o.state = Some(State::Rw(Box::new(w)));
            })
            .map_err(|e| to_code(&e))
    };
    if let Err(e) = made {
        // The slot goes back, keeping its object.
        TXNS.unalloc(slot, t as *mut ());
        return Err(e);
    }
    h.live_txns.fetch_add(1, Ordering::AcqRel);
    let handle = TXNS.publish(slot, t as *mut ());
    // SAFETY: `t` is ours alone until the handle is given out.
    unsafe { (*t).handle = handle };
    if !parent_obj.is_null() {
        // SAFETY: checked live above; single-threaded use per LMDB's rule.
        unsafe { (*parent_obj).child = t };
    }
    Ok(ptr::without_provenance_mut(handle))
}

/// Ends transaction `t` (committing if `commit`) and frees its handle,
/// after ending its child (committing it too if `commit`). Read-transaction cursors are detached (they
/// stay valid for `mdb_cursor_renew`/`mdb_cursor_close`); write-transaction
/// cursors are freed, as in LMDB.
///
/// # Safety
///
/// `t` is a transaction handle, used by no other thread; `from_parent`:
/// its parent is being ended (and ends it).
unsafe fn end(t: usize, commit: bool, from_parent: bool) -> c_int {
    // From here on the handle is refused; the slot is freed at the end.
    let Some(r) = TXNS.retire(t) else {
        return libc::EINVAL;
    };
    // SAFETY: the object of the handle that was live until just now; its
    // slot is not free before `recycle` below, so it is ours.
    let b = unsafe { &mut *(r.obj as *mut MDB_txn) };
    let mut rc = MDB_SUCCESS;
    if !b.child.is_null() {
        // As LMDB: committing a parent commits its child first (and fails
        // if that fails); aborting it aborts the child.
        // SAFETY: a child is live while its parent's `child` points to it.
        rc = unsafe { end((*b.child).handle, commit, true) };
        b.child = ptr::null_mut();
    }
    if commit && rc == MDB_SUCCESS && b.failed {
        rc = MDB_BAD_TXN;
    }
    if commit && rc == MDB_SUCCESS {
        if let Err(e) = b.flush() {
            rc = e;
        }
    }
    let mut cursors = std::mem::take(&mut b.cursors);
    for &c in &cursors {
        // SAFETY: cursors in the list are live and belong to this txn.
        unsafe { free_cursor(c, b.rdonly) };
    }
    cursors.clear();
    b.cursors = cursors;
    if commit && rc == MDB_SUCCESS && matches!(b.state, Some(State::Rw(_) | State::Nested(_))) {
        match b.state.take() {
            Some(State::Rw(w)) => {
                if let Err(e) = w.commit() {
                    rc = to_code(&e);
                }
            }
            Some(State::Nested(n)) => {
                if let Err(e) = n.commit() {
                    rc = to_code(&e);
                }
            }
            _ => {}
        }
    } else {
        // Dropped in place (a read transaction is not moved out first).
        b.state = None;
    }
    // A parent being ended drops its pointer itself.
    if !b.parent.is_null() && !from_parent {
        // SAFETY: a live parent outlives its child, and is not in use
        // while the child lives.
        unsafe {
            (*b.parent).child = ptr::null_mut();
            // The child may have created or dropped databases.
            (*b.parent).names = None;
        }
    }
    // Clean for the next transaction of this slot (see `begin`).
    b.parent = ptr::null_mut();
    b.reserved = None;
    b.names = None;
    b.records.clear();
    b.failed = false;
    b.idle = false;
    b.envh().live_txns.fetch_sub(1, Ordering::AcqRel);
    TXNS.recycle(r, true);
    rc
}

/// Commits and frees the transaction (`mdb_txn_commit`); a read
/// transaction just ends. The handle is freed even on error.
///
/// # Safety
///
/// `txn` is a live transaction handle, not used after this call.
#[no_mangle]
pub unsafe extern "C" fn mdb_txn_commit(txn: *mut MDB_txn) -> c_int {
    guard(|| {
        // SAFETY: checked by `end`; used by one thread (LMDB's rule).
        unsafe { end(txn.addr(), true, false) }
    })
}

/// Aborts and frees the transaction (`mdb_txn_abort`).
///
/// # Safety
///
/// `txn` is a live transaction handle, not used after this call.
#[no_mangle]
pub unsafe extern "C" fn mdb_txn_abort(txn: *mut MDB_txn) {
    guard_or((), || {
        // SAFETY: checked by `end`; used by one thread (LMDB's rule).
        unsafe { end(txn.addr(), false, false) };
    })
}

/// Ends a read transaction's snapshot but keeps the handle and its reader
/// slot for [`mdb_txn_renew`] (`mdb_txn_reset`), in place
/// (`RoTxn::reset_in_place`: nothing moved or freed). No effect on others.
///
/// # Safety
///
/// `txn` is a live transaction handle.
#[no_mangle]
pub unsafe extern "C" fn mdb_txn_reset(txn: *mut MDB_txn) {
    guard_or((), || {
        // SAFETY: checked.
        let Ok(t) = (unsafe { txn_mut(txn) }) else {
            return;
        };
        if t.idle {
            return;
        }
        if let Some(State::Ro(_)) = t.state {
            // SAFETY: the list holds this transaction's live cursors.
            unsafe { clear_live(&t.cursors) };
            if let Some(State::Ro(r)) = t.state.as_mut() {
                t.idle_kept = (t.dbi_version, r.txnid());
                r.reset_in_place();
            }
            t.dbi_version = 0;
            t.idle = true;
            t.names = None;
            // What mdb_get returned of the snapshot is no longer valid.
            t.records.clear();
        }
    })
}

/// Starts a new snapshot on a reset read transaction (`mdb_txn_renew`), in
/// place (`RoTxn::renew_in_place`: no slot claimed, nothing moved). On
/// error the transaction stays reset.
///
/// # Safety
///
/// `txn` is a live transaction handle.
#[no_mangle]
pub unsafe extern "C" fn mdb_txn_renew(txn: *mut MDB_txn) -> c_int {
    guard(|| {
        // SAFETY: checked.
        let t = match unsafe { txn_mut(txn) } {
            Ok(t) => t,
            Err(e) => return e,
        };
        match t.state.as_mut() {
            Some(State::Ro(r)) if t.idle => match r.renew_in_place() {
                Ok(()) => {
                    t.idle = false;
                    // Current again unless the table changed meanwhile.
                    t.dbi_version = t.idle_kept.0;
                    MDB_SUCCESS
                }
                Err(e) => to_code(&e),
            },
            _ => libc::EINVAL,
        }
    })
}

/// The environment of a transaction (`mdb_txn_env`); NULL if invalid.
///
/// # Safety
///
/// `txn` is a live transaction handle.
#[no_mangle]
pub unsafe extern "C" fn mdb_txn_env(txn: *mut MDB_txn) -> *mut MDB_env {
    guard_or(ptr::null_mut(), || {
        // SAFETY: checked.
        match unsafe { txn_mut(txn) } {
            Ok(t) => ptr::without_provenance_mut(t.envh().handle),
            Err(_) => ptr::null_mut(),
        }
    })
}

/// The transaction's id (`mdb_txn_id`): the snapshot's txnid for a read
/// transaction (after `mdb_txn_reset`, the snapshot it had, as LMDB), the
/// txnid it will commit as for a write one; 0 if invalid. Numbered as
/// LMDB's (see [`lmdb_txnid`]).
///
/// # Safety
///
/// `txn` is a live transaction handle.
#[no_mangle]
pub unsafe extern "C" fn mdb_txn_id(txn: *mut MDB_txn) -> usize {
    guard_or(0, || {
        // SAFETY: checked.
        let Ok(t) = (unsafe { txn_mut(txn) }) else {
            return 0;
        };
        (match &t.state {
            Some(State::Ro(_)) if t.idle => lmdb_txnid(t.idle_kept.1),
            Some(State::Ro(r)) => lmdb_txnid(r.txnid()),
            Some(State::Rw(w)) => lmdb_txnid(w.txnid()),
            Some(State::Nested(n)) => lmdb_txnid(n.txnid()),
            _ => 0,
        }) as usize
    })
}

/// A Sarsen txnid as LMDB numbers it: Sarsen's creation of an environment
/// is commit 1, LMDB's is 0, so an LMDB program sees 0 for a new
/// environment's snapshot and 1 for its first write transaction.
pub fn lmdb_txnid(sarsen: u64) -> u64 {
    sarsen.saturating_sub(1)
}
