//! `MDB_cursor`: a cursor handle.
//!
//! A Sarsen cursor borrows its transaction, and a write cursor borrows it
//! mutably, while LMDB lets a program interleave several cursors with
//! `mdb_put`/`mdb_del` in one transaction. So a cursor handle keeps its
//! position as a copy of the pair it stands on, and each call opens a
//! Sarsen [`Cursor`] on the transaction, seeks back to that pair, moves,
//! and saves the new pair. When the pair has gone (deleted through this
//! cursor or another path) the cursor stands on the pair that followed it,
//! as an LMDB cursor does after `mdb_cursor_del`.

use std::ffi::{c_int, c_uint};
use std::mem::MaybeUninit;
use std::ptr;

use sarsen::{Cursor, Database, Entry};

use crate::consts::*;
use crate::dbi::{put, reserve};
use crate::error::to_code;
use crate::handles::CURSORS;
use crate::main_view::{self, MAIN_DBI};
use crate::txn::{txn_mut, MDB_txn, View};
use crate::{code, guard, guard_or, store, CResult, MDB_dbi, MDB_val};

/// Where a cursor stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pos {
    /// Never positioned, or a failed `MDB_SET*`/`MDB_GET_BOTH*`.
    Unset,
    /// On the saved pair.
    At,
    /// The saved pair was deleted through this cursor: on the pair after it.
    Deleted,
    /// Past the last pair, after an `MDB_SET_RANGE` that found nothing:
    /// as in LMDB, `MDB_NEXT` finds nothing, `MDB_PREV` the last pair.
    End,
}

/// A cursor handle (LMDB's `MDB_cursor`), from [`mdb_cursor_open`].
pub struct MDB_cursor {
    /// This cursor's handle (what C holds, see [`crate::handles`]).
    handle: usize,
    /// The transaction's object, NULL once a read transaction ended (until
    /// `mdb_cursor_renew`).
    txn: *mut MDB_txn,
    dbi: MDB_dbi,
    db: Database,
    dup: bool,
    pos: Pos,
    key: Vec<u8>,
    val: Vec<u8>,
    /// The values `MDB_GET_MULTIPLE` returned (the Sarsen cursor's buffer
    /// dies with it).
    multi: Vec<u8>,
    /// In a read transaction, after a successful move: the Sarsen cursor
    /// standing on the saved pair, kept so the next call need not seek
    /// (the snapshot cannot change under it). Its borrow of the
    /// transaction's `RoTxn` (in the boxed transaction handle, where it
    /// does not move) is erased; it is dropped before that
    /// transaction ends or is reset (`clear_live`), and whenever a move
    /// fails (the Sarsen cursor's state after a failed move is not
    /// LMDB's).
    live: Option<Box<Cursor<'static>>>,
    /// The allocation of a Sarsen cursor no longer used (dropped in
    /// place), for the next one: a cursor renewed, or moved in a write
    /// transaction, allocates nothing ([`MDB_cursor::boxed`]).
    spare: Option<Box<MaybeUninit<Cursor<'static>>>>,
    /// `key`/`val` are behind: `MDB_NEXT`/`MDB_PREV` moved `live` without
    /// saving its pair (see [`MDB_cursor::sync`]).
    stale: bool,
}

/// Where a restored Sarsen cursor stands.
enum Restored<'a> {
    Unset,
    /// On the saved pair.
    Exact(Entry<'a>),
    /// The saved pair is gone; on the pair after it (`None`: past the end).
    Ahead(Option<Entry<'a>>),
}

fn err(e: sarsen::Error) -> c_int {
    to_code(&e)
}

impl MDB_cursor {
    /// Drops the kept Sarsen cursor, keeping its allocation.
    fn drop_live(&mut self) {
        if let Some(l) = self.live.take() {
            self.recycle(l);
        }
    }

    /// Drops Sarsen cursor `b` in place and keeps its allocation for
    /// [`boxed`](Self::boxed).
    fn recycle(&mut self, b: Box<Cursor<'_>>) {
        let p = Box::into_raw(b);
        // SAFETY: `p` is a live `Box<Cursor>`'s: its cursor is dropped once,
        // here, and its memory, of the layout of any `Cursor<'_>`, is then
        // owned as uninitialised by a box of the same layout.
        unsafe {
            ptr::drop_in_place(p);
            self.spare = Some(Box::from_raw(p.cast::<MaybeUninit<Cursor<'static>>>()));
        }
    }

    /// `c` in a box: the spare allocation if there is one.
    fn boxed<'a>(&mut self, c: Cursor<'a>) -> Box<Cursor<'a>> {
        match self.spare.take() {
            Some(b) => {
                let p = Box::into_raw(b).cast::<Cursor<'a>>();
                // SAFETY: `p` is a box's allocation of a `Cursor`'s layout
                // holding nothing (see `recycle`): written, it is a live
                // `Box<Cursor>` again.
                unsafe {
                    p.write(c);
                    Box::from_raw(p)
                }
            }
            None => Box::new(c),
        }
    }

    /// Brings `key`/`val` up to where the kept cursor stands, after
    /// `MDB_NEXT`/`MDB_PREV` steps that did not save it. Every path but
    /// those steps calls this before reading `key`/`val` or dropping `live`.
    fn sync(&mut self) {
        if std::mem::take(&mut self.stale) {
            match self.live.as_ref().map(|l| l.current()) {
                Some(Ok(Some(e))) => self.save(e),
                // The kept cursor stands on its pair (a read snapshot does
                // not change); an error reading it leaves no position.
                _ => {
                    self.pos = Pos::Unset;
                    self.drop_live();
                }
            }
        }
    }

    /// `MDB_NEXT`/`MDB_PREV` (`next`) on the kept cursor of a read
    /// transaction, standing on the saved pair: the step a scan repeats,
    /// without seeking back or copying the pair. `None` if there is no kept
    /// cursor.
    fn step_live(&mut self, next: bool) -> Option<CResult<Entry<'static>>> {
        if self.pos != Pos::At {
            return None;
        }
        let l = self.live.as_mut()?;
        let moved = if next { l.next() } else { l.prev() };
        Some(match moved {
            Ok(Some(e)) => {
                self.stale = true;
                Ok(e)
            }
            // Past an end: as LMDB, the cursor stays on the end pair.
            Ok(None) => match if next { l.last() } else { l.first() } {
                Ok(Some(e)) => {
                    self.stale = false;
                    self.save(e);
                    Err(MDB_NOTFOUND)
                }
                r => {
                    self.stale = false;
                    self.pos = Pos::Unset;
                    self.drop_live();
                    Err(r.map_or_else(err, |_| MDB_NOTFOUND))
                }
            },
            Err(e) => {
                self.stale = false;
                self.pos = Pos::Unset;
                self.drop_live();
                Err(err(e))
            }
        })
    }

    /// Saves the position `e` (its value only in a DUPSORT database: a
    /// key alone finds a pair elsewhere).
    fn save(&mut self, e: Entry<'_>) {
        self.pos = Pos::At;
        self.key.clear();
        self.key.extend_from_slice(e.0);
        if self.dup {
            self.val.clear();
            self.val.extend_from_slice(e.1);
        }
    }

    /// Seeks `c` back to the saved position.
    fn restore<'a>(&self, c: &mut Cursor<'a>) -> CResult<Restored<'a>> {
        self.restore_from(c, false)
    }

    /// [`restore`](Self::restore); `live`: `c` is the kept cursor, on the
    /// saved pair already.
    fn restore_from<'a>(&self, c: &mut Cursor<'a>, live: bool) -> CResult<Restored<'a>> {
        match self.pos {
            Pos::Unset => return Ok(Restored::Unset),
            Pos::End => return Ok(Restored::Ahead(None)),
            Pos::At | Pos::Deleted => {}
        }
        if live && self.pos == Pos::At {
            if let Some(e) = c.current().map_err(err)? {
                return Ok(Restored::Exact(e));
            }
        }
        let (k, v) = (&self.key[..], &self.val[..]);
        if self.dup {
            if self.pos == Pos::At {
                if let Some(e) = c.seek_both(k, v).map_err(err)? {
                    return Ok(Restored::Exact(e));
                }
            }
            if let Some(e) = c.seek_both_range(k, v).map_err(err)? {
                if self.pos == Pos::At || e.1 != v {
                    return Ok(Restored::Ahead(Some(e)));
                }
                return Ok(Restored::Ahead(c.next().map_err(err)?));
            }
            return Ok(Restored::Ahead(match c.seek(k).map_err(err)? {
                Some((k2, _)) if k2 == k => c.next_nodup().map_err(err)?,
                e => e,
            }));
        }
        match c.seek(k).map_err(err)? {
            Some(e) if e.0 == k && self.pos == Pos::At => Ok(Restored::Exact(e)),
            Some(e) if e.0 == k => Ok(Restored::Ahead(c.next().map_err(err)?)),
            e => Ok(Restored::Ahead(e)),
        }
    }
}

/// Drops the kept Sarsen cursor of each of `cursors` (their read
/// transaction is being reset or ended).
///
/// # Safety
///
/// Each pointer is a live cursor handle.
pub(crate) unsafe fn clear_live(cursors: &[*mut MDB_cursor]) {
    for &c in cursors {
        // SAFETY: live per the contract.
        let c = unsafe { &mut *c };
        c.sync();
        c.drop_live();
    }
}

/// Frees cursor `c` or (`detach_only`) detaches it from its ended
/// transaction.
///
/// # Safety
///
/// `c` is the object of a live cursor handle.
pub(crate) unsafe fn free_cursor(c: *mut MDB_cursor, detach_only: bool) {
    if detach_only {
        // SAFETY: live per the contract.
        let c = unsafe { &mut *c };
        c.sync();
        c.drop_live();
        c.txn = ptr::null_mut();
    } else {
        // SAFETY: live per the contract.
        let h = unsafe { (*c).handle };
        if let Some(r) = CURSORS.retire(h) {
            // SAFETY: the object of the handle that was live until just
            // now, a `Box<MDB_cursor>` we published; its slot is not free
            // yet, so nobody else uses it.
            drop(unsafe { Box::from_raw(r.obj as *mut MDB_cursor) });
            CURSORS.recycle(r, false);
        }
    }
}

/// The cursor handle behind `p`, or `EINVAL`.
///
/// # Safety
///
/// As every C entry point: a cursor is used by one thread at a time.
#[inline]
unsafe fn cursor_mut<'a>(p: *mut MDB_cursor) -> CResult<&'a mut MDB_cursor> {
    let o = CURSORS.get(p.addr()).ok_or(libc::EINVAL)?;
    // SAFETY: the object of a live handle: a `Box<MDB_cursor>` we published.
    Ok(unsafe { &mut *(o as *mut MDB_cursor) })
}

/// The cursor and its transaction (`EINVAL` when detached).
///
/// # Safety
///
/// As [`cursor_mut`].
unsafe fn parts<'a>(p: *mut MDB_cursor) -> CResult<(&'a mut MDB_cursor, &'a mut MDB_txn)> {
    // SAFETY: forwarded.
    let c = unsafe { cursor_mut(p) }?;
    if c.txn.is_null() {
        return Err(libc::EINVAL);
    }
    // SAFETY: a cursor's transaction is live while `txn` is set (ending
    // a transaction detaches or frees its cursors; `mdb_cursor_renew`
    // moves it), so it needs no second look-up in the table of live
    // handles; used by one thread at a time (LMDB's rule).
    let t = unsafe { &mut *c.txn };
    t.flush()?;
    Ok((c, t))
}

/// Opens a cursor on database `dbi` (`mdb_cursor_open`).
///
/// # Safety
///
/// `txn` is a live transaction handle; `cursor` NULL (`EINVAL`) or writable.
#[no_mangle]
pub unsafe extern "C" fn mdb_cursor_open(
    txn: *mut MDB_txn,
    dbi: MDB_dbi,
    cursor: *mut *mut MDB_cursor,
) -> c_int {
    guard(|| {
        if cursor.is_null() {
            return libc::EINVAL;
        }
        let r = (|| {
            // SAFETY: checked.
            let t = unsafe { txn_mut(txn) }?;
            // As LMDB: `EINVAL` for a dbi the transaction does not have (any
            // in a reset one), then `MDB_BAD_TXN` in a failed or parent
            // transaction.
            let crate::env::DbiInfo { db, dup, .. } = t.db(dbi)?;
            t.view()?;
            let (slot, _) = CURSORS.alloc()?;
            let c = Box::into_raw(Box::new(MDB_cursor {
                handle: 0,
                txn: t,
                dbi,
                db,
                dup,
                pos: Pos::Unset,
                key: Vec::new(),
                val: Vec::new(),
                multi: Vec::new(),
                live: None,
                spare: None,
                stale: false,
            }));
            let handle = CURSORS.publish(slot, c as *mut ());
            // SAFETY: `c` is ours alone until the handle is given out.
            unsafe { (*c).handle = handle };
            t.cursors.push(c);
            // SAFETY: non-NULL, writable per the contract.
            unsafe { cursor.write(ptr::without_provenance_mut(handle)) };
            Ok(())
        })();
        code(r)
    })
}

/// Closes a cursor (`mdb_cursor_close`). A cursor of a write transaction
/// is closed by the transaction's end already; closing it again is a
/// no-op here (undefined in LMDB).
///
/// # Safety
///
/// `cursor` is a cursor handle, not used after this call.
#[no_mangle]
pub unsafe extern "C" fn mdb_cursor_close(cursor: *mut MDB_cursor) {
    guard_or((), || {
        // SAFETY: checked.
        let Ok(c) = (unsafe { cursor_mut(cursor) }) else {
            return;
        };
        let obj: *mut MDB_cursor = c;
        if !c.txn.is_null() {
            // SAFETY: a cursor's transaction is live while `txn` is set.
            let t = unsafe { &mut *c.txn };
            t.cursors.retain(|&p| !ptr::eq(p, obj));
        }
        // SAFETY: the object of a live handle.
        unsafe { free_cursor(obj, false) };
    })
}

/// Attaches a read-only cursor to read transaction `txn` (`mdb_cursor_renew`).
///
/// # Safety
///
/// `txn` is a live read transaction handle, `cursor` a cursor handle.
#[no_mangle]
pub unsafe extern "C" fn mdb_cursor_renew(txn: *mut MDB_txn, cursor: *mut MDB_cursor) -> c_int {
    guard(|| {
        let r = (|| {
            // SAFETY: checked.
            let c = unsafe { cursor_mut(cursor) }?;
            // SAFETY: checked.
            let t = unsafe { txn_mut(txn) }?;
            if !t.rdonly {
                return Err(libc::EINVAL);
            }
            // A reset transaction has no database handles: `EINVAL`, as LMDB.
            let info = t.db(c.dbi)?;
            let obj: *mut MDB_cursor = c;
            let tp: *mut MDB_txn = t;
            if ptr::eq(c.txn, tp) {
                t.cursors.retain(|&p| !ptr::eq(p, obj));
            } else if !c.txn.is_null() {
                // SAFETY: a cursor's transaction is live while `txn` is
                // set; another transaction than `t`.
                let old = unsafe { &mut *c.txn };
                old.cursors.retain(|&p| !ptr::eq(p, obj));
            }
            (c.db, c.dup) = (info.db, info.dup);
            c.txn = tp;
            c.pos = Pos::Unset;
            c.drop_live();
            c.stale = false;
            t.cursors.push(obj);
            Ok(())
        })();
        code(r)
    })
}

/// The cursor's transaction (`mdb_cursor_txn`); NULL if invalid or detached.
///
/// # Safety
///
/// `cursor` is a cursor handle.
#[no_mangle]
pub unsafe extern "C" fn mdb_cursor_txn(cursor: *mut MDB_cursor) -> *mut MDB_txn {
    guard_or(ptr::null_mut(), || {
        // SAFETY: checked.
        match unsafe { cursor_mut(cursor) } {
            // SAFETY: a cursor's transaction is live while `txn` is set.
            Ok(c) if !c.txn.is_null() => ptr::without_provenance_mut(unsafe { (*c.txn).handle }),
            _ => ptr::null_mut(),
        }
    })
}

/// The cursor's database (`mdb_cursor_dbi`); 0 if invalid.
///
/// # Safety
///
/// `cursor` is a cursor handle.
#[no_mangle]
pub unsafe extern "C" fn mdb_cursor_dbi(cursor: *mut MDB_cursor) -> MDB_dbi {
    guard_or(0, || {
        // SAFETY: checked.
        unsafe { cursor_mut(cursor) }.map_or(0, |c| c.dbi)
    })
}

/// Moves the cursor (`mdb_cursor_get`): every operation of LMDB 0.9. As in LMDB, a move past either end
/// gives `MDB_NOTFOUND` and leaves the cursor where it was, and a failed
/// `MDB_SET`/`MDB_SET_KEY`/`MDB_SET_RANGE`/`MDB_GET_BOTH*` leaves it
/// unpositioned.
///
/// # Safety
///
/// `cursor` is a cursor handle; `key` and `data` are NULL or point to
/// `MDB_val`s (inputs for the `SET`/`GET_BOTH` operations describe
/// readable bytes). Returned bytes stay valid until the transaction ends
/// or writes.
#[no_mangle]
pub unsafe extern "C" fn mdb_cursor_get(
    cursor: *mut MDB_cursor,
    key: *mut MDB_val,
    data: *mut MDB_val,
    op: c_int,
) -> c_int {
    guard(|| {
        let r = (|| {
            // SAFETY: checked.
            let (c, t) = unsafe { parts(cursor) }?;
            // SAFETY: forwarded contract.
            unsafe { get(c, t, key, data, op) }
        })();
        code(r)
    })
}

/// Reads the input `MDB_val` at `p` (`EINVAL` if NULL).
///
/// # Safety
///
/// `p` is NULL or points to an `MDB_val` describing readable bytes.
unsafe fn input<'b>(p: *const MDB_val) -> CResult<&'b [u8]> {
    if p.is_null() {
        return Err(libc::EINVAL);
    }
    // SAFETY: per the contract.
    Ok(unsafe { MDB_val::bytes(&*p) })
}

/// Reads the input key at `p`: `EINVAL` if NULL, `MDB_BAD_VALSIZE` if empty.
///
/// # Safety
///
/// As [`input`].
unsafe fn input_key<'b>(p: *const MDB_val) -> CResult<&'b [u8]> {
    if p.is_null() {
        return Err(libc::EINVAL);
    }
    // SAFETY: per the contract.
    unsafe { MDB_val::key(&*p) }
}

/// `MDB_PREV_MULTIPLE` for the cursor `sc` on key `k`, value `at` of a
/// DUPFIXED database: the run of `k`'s values before the one holding `at`
/// (packed, `None` if that is the first). LMDB's runs are the pages of the
/// key's sub-tree; here they are the runs `get_multiple`/`next_multiple`
/// return (a sub-tree leaf, or the key's inline list), found by walking
/// them from the key's first value: the cost grows with `at`'s rank.
fn prev_batch(sc: &mut Cursor<'_>, k: &[u8], at: &[u8]) -> CResult<Option<Vec<u8>>> {
    if sc.seek_both(k, at).map_err(err)?.is_none() || sc.first_dup().map_err(err)?.is_none() {
        return Ok(None);
    }
    let mut prev: Option<Vec<u8>> = None;
    let mut run = sc.get_multiple().map_err(err)?.map(|(_, v)| v.to_vec());
    while let Some(vals) = run {
        if vals.chunks_exact(at.len().max(1)).any(|x| x == at) {
            return Ok(prev);
        }
        prev = Some(vals);
        run = sc.next_multiple().map_err(err)?.map(|(_, v)| v.to_vec());
    }
    // `at` is gone (not found in its key's values): no run before it.
    Ok(None)
}

/// # Safety
///
/// As [`mdb_cursor_get`].
unsafe fn get(
    c: &mut MDB_cursor,
    t: &mut MDB_txn,
    key: *mut MDB_val,
    data: *mut MDB_val,
    op: c_int,
) -> CResult<()> {
    let ro = matches!(t.view()?, View::Ro(_));
    if c.live.is_none()
        && c.dbi == MAIN_DBI
        && !c.dup
        && MERGED_OPS.contains(&op)
        && !main_view::none_shown(t)?
    {
        let names = main_view::names(t)?;
        // SAFETY: forwarded contract.
        return unsafe { merged_get(c, t, &names, key, data, op) };
    }
    if ro && matches!(op, MDB_NEXT | MDB_PREV) {
        if let Some(r) = c.step_live(op == MDB_NEXT) {
            let e = r?;
            // SAFETY: NULL or writable per the contract.
            unsafe {
                store(key, MDB_val::of(e.0));
                store(data, MDB_val::of(e.1));
            }
            return Ok(());
        }
    }
    c.sync();
    let v = t.view()?;
    if !(ro && c.pos == Pos::At) {
        c.drop_live();
    }
    let kept = c.live.take();
    let live = kept.is_some();
    // Boxed: the cursor is large, and kept ones move in and out of `live`.
    let mut sc: Box<Cursor<'_>> = match kept {
        Some(k) => k,
        None => c.boxed(v.cursor(c.db).map_err(err)?),
    };
    let mut set_key = true;
    let found: Option<Entry<'_>> = match op {
        MDB_FIRST => sc.first().map_err(err)?,
        MDB_LAST => sc.last().map_err(err)?,
        MDB_NEXT | MDB_NEXT_DUP | MDB_NEXT_NODUP => match c.restore_from(&mut sc, live)? {
            Restored::Unset => sc.first().map_err(err)?,
            Restored::Exact(_) => match op {
                MDB_NEXT => sc.next(),
                MDB_NEXT_DUP => sc.next_dup(),
                _ => sc.next_nodup(),
            }
            .map_err(err)?,
            Restored::Ahead(Some(e)) if op == MDB_NEXT_NODUP && e.0 == &c.key[..] => {
                sc.next_nodup().map_err(err)?
            }
            Restored::Ahead(Some(e)) if op == MDB_NEXT_DUP && e.0 != &c.key[..] => None,
            Restored::Ahead(e) => e,
        },
        MDB_PREV | MDB_PREV_DUP | MDB_PREV_NODUP => match c.restore_from(&mut sc, live)? {
            Restored::Unset => sc.last().map_err(err)?,
            Restored::Exact(_) | Restored::Ahead(Some(_)) => match op {
                MDB_PREV => sc.prev(),
                MDB_PREV_DUP => sc.prev_dup(),
                _ => sc.prev_nodup(),
            }
            .map_err(err)?,
            Restored::Ahead(None) if op == MDB_PREV_DUP => None,
            Restored::Ahead(None) => sc.last().map_err(err)?,
        },
        MDB_FIRST_DUP | MDB_LAST_DUP => match c.restore_from(&mut sc, live)? {
            Restored::Exact(_) if op == MDB_FIRST_DUP => sc.first_dup().map_err(err)?,
            Restored::Exact(_) => sc.last_dup().map_err(err)?,
            _ => return Err(libc::EINVAL),
        },
        MDB_GET_CURRENT => match c.restore_from(&mut sc, live)? {
            Restored::Unset => return Err(libc::EINVAL),
            Restored::Exact(e) => Some(e),
            Restored::Ahead(e) => e,
        },
        MDB_SET | MDB_SET_KEY | MDB_SET_RANGE => {
            // SAFETY: per the contract.
            let k = unsafe { input_key(key) }?;
            set_key = op != MDB_SET;
            let e = sc.seek(k).map_err(err)?;
            match e {
                Some(e) if op == MDB_SET_RANGE || e.0 == k => Some(e),
                _ => {
                    // Past the end; in an empty database LMDB's cursor is
                    // not positioned at all (GET_CURRENT: EINVAL).
                    let end = op == MDB_SET_RANGE && sc.last().map_err(err)?.is_some();
                    c.pos = if end { Pos::End } else { Pos::Unset };
                    None
                }
            }
        }
        MDB_GET_BOTH | MDB_GET_BOTH_RANGE => {
            // SAFETY: per the contract.
            let (k, d) = unsafe { (input_key(key)?, input(data)?) };
            set_key = false;
            if !c.dup {
                return Err(MDB_INCOMPATIBLE); // as LMDB
            }
            let e = if op == MDB_GET_BOTH {
                sc.seek_both(k, d)
            } else {
                sc.seek_both_range(k, d)
            }
            .map_err(err)?;
            if e.is_none() {
                c.pos = Pos::Unset;
            }
            e
        }
        MDB_GET_MULTIPLE | MDB_NEXT_MULTIPLE => {
            let m = match (op, c.restore_from(&mut sc, live)?) {
                (MDB_GET_MULTIPLE, Restored::Exact(_)) => sc.get_multiple(),
                (MDB_GET_MULTIPLE, _) => return Err(libc::EINVAL),
                (_, Restored::Unset) => match sc.first().map_err(err)? {
                    Some(_) => sc.get_multiple(),
                    None => Ok(None),
                },
                (_, Restored::Exact(_)) => sc.next_multiple(),
                (_, Restored::Ahead(Some(e))) if e.0 == &c.key[..] => sc.get_multiple(),
                (_, Restored::Ahead(_)) => Ok(None),
            }
            .map_err(err)?;
            let Some((k, vals)) = m else {
                return Err(MDB_NOTFOUND);
            };
            c.multi.clear();
            c.multi.extend_from_slice(vals);
            if let Some(e) = sc.current().map_err(err)? {
                c.save(e);
            }
            // SAFETY: NULL or writable per the contract.
            unsafe {
                store(key, MDB_val::of(k));
                store(data, MDB_val::of(&c.multi));
            }
            return Ok(());
        }
        MDB_PREV_MULTIPLE => {
            // As LMDB: the checks, then (unpositioned) the last pair.
            if data.is_null() {
                return Err(libc::EINVAL);
            }
            if !c.dup || !v.dup_mode(c.db).map_err(err)?.is_some_and(|d| d.fixed) {
                return Err(MDB_INCOMPATIBLE);
            }
            let (at, from_last) = match c.restore_from(&mut sc, live)? {
                Restored::Exact(e) | Restored::Ahead(Some(e)) => (e, false),
                Restored::Unset => (sc.last().map_err(err)?.ok_or(MDB_NOTFOUND)?, true),
                Restored::Ahead(None) => return Err(MDB_NOTFOUND),
            };
            let (k, at) = (at.0, at.1.to_vec());
            // On `MDB_NOTFOUND` the cursor stays where it is (LMDB's
            // cursor stays on its page), on the last pair if it was unset.
            c.save((k, &at));
            let batch = prev_batch(&mut sc, k, &at)?.ok_or(MDB_NOTFOUND)?;
            let last = &batch[batch.len() - at.len()..];
            c.save((k, last));
            c.multi = batch;
            // SAFETY: NULL or writable per the contract. As LMDB, `key` is
            // set only when the cursor was unset (LMDB's `MDB_LAST` sets it).
            unsafe {
                if from_last {
                    store(key, MDB_val::of(k));
                }
                store(data, MDB_val::of(&c.multi));
            }
            return Ok(());
        }
        _ => return Err(libc::EINVAL),
    };
    let Some(e) = found else {
        if matches!(op, MDB_FIRST | MDB_LAST) {
            c.pos = Pos::Unset;
        }
        c.recycle(sc);
        return Err(MDB_NOTFOUND);
    };
    c.save(e);
    if ro {
        // SAFETY: lifetime erasure; see the `live` field: the borrowed
        // `RoTxn` stays in place and outlives the kept cursor.
        c.live = Some(unsafe { std::mem::transmute::<Box<Cursor<'_>>, Box<Cursor<'static>>>(sc) });
    } else {
        c.recycle(sc);
    }
    // SAFETY: NULL or writable per the contract.
    unsafe {
        if set_key {
            store(key, MDB_val::of(e.0));
        }
        store(data, MDB_val::of(e.1));
    }
    Ok(())
}

/// The cursor operations that see the named databases' records in the main
/// database ([`crate::main_view`]); the others are DUPSORT operations, which
/// a plain main database refuses anyway.
const MERGED_OPS: [c_int; 10] = [
    MDB_FIRST,
    MDB_LAST,
    MDB_NEXT,
    MDB_NEXT_NODUP,
    MDB_PREV,
    MDB_PREV_NODUP,
    MDB_GET_CURRENT,
    MDB_SET,
    MDB_SET_KEY,
    MDB_SET_RANGE,
];

/// `mdb_cursor_get` with `op` (one of [`MERGED_OPS`]) on the main database
/// as LMDB shows it: its pairs and the named databases' `names`, merged.
/// Every call seeks (no kept cursor); this runs only where named databases
/// exist.
///
/// # Safety
///
/// As [`mdb_cursor_get`].
unsafe fn merged_get(
    c: &mut MDB_cursor,
    t: &mut MDB_txn,
    names: &[Vec<u8>],
    key: *mut MDB_val,
    data: *mut MDB_val,
    op: c_int,
) -> CResult<()> {
    use main_view::{exact, lower, upper, Found};
    c.sync();
    c.drop_live();
    let mut set_key = true;
    let here = c.key.clone();
    let found = match op {
        MDB_FIRST => lower(t, names, None, true)?,
        MDB_LAST => upper(t, names, None)?,
        MDB_NEXT | MDB_NEXT_NODUP => match c.pos {
            Pos::Unset => lower(t, names, None, true)?,
            Pos::At => lower(t, names, Some(&here), false)?,
            Pos::Deleted => lower(t, names, Some(&here), true)?,
            Pos::End => None,
        },
        MDB_PREV | MDB_PREV_NODUP => match c.pos {
            Pos::Unset | Pos::End => upper(t, names, None)?,
            Pos::At | Pos::Deleted => upper(t, names, Some(&here))?,
        },
        MDB_GET_CURRENT => match c.pos {
            Pos::Unset => return Err(libc::EINVAL),
            Pos::End => None,
            // The pair, or the one after it if it went meanwhile.
            Pos::At | Pos::Deleted => lower(t, names, Some(&here), true)?,
        },
        _ => {
            // SAFETY: per the contract.
            let k = unsafe { input_key(key) }?;
            set_key = op != MDB_SET;
            let f = if op == MDB_SET_RANGE {
                lower(t, names, Some(k), true)?
            } else {
                exact(t, names, k)?
            };
            if f.is_none() {
                c.pos = if op == MDB_SET_RANGE {
                    Pos::End
                } else {
                    Pos::Unset
                };
            }
            f
        }
    };
    let (k, v) = match found {
        Some(Found::Pair(e)) => (e.0, e.1),
        Some(Found::Name(n)) => main_view::record(t, &n)?,
        None => {
            if matches!(op, MDB_FIRST | MDB_LAST) {
                c.pos = Pos::Unset;
            }
            return Err(MDB_NOTFOUND);
        }
    };
    c.pos = Pos::At;
    c.key.clear();
    c.key.extend_from_slice(k);
    // SAFETY: NULL or writable per the contract; both stay valid until the
    // transaction ends or writes.
    unsafe {
        if set_key {
            store(key, MDB_val::of(k));
        }
        store(data, MDB_val::of(v));
    }
    Ok(())
}

/// Stores a pair through the cursor and stands on it (`mdb_cursor_put`),
/// with `mdb_put`'s flags plus `MDB_CURRENT` (replace the value under the
/// cursor; `key` is then ignored) and `MDB_MULTIPLE` (DUPFIXED: `data[0]`
/// gives the size and address of packed values, `data[1].mv_size` their
/// count, set to the number stored), `MDB_RESERVE` as `mdb_put`.
///
/// # Safety
///
/// `cursor` is a cursor handle of a write transaction; `key` and `data`
/// point to `MDB_val`s describing readable bytes (`data` to two with
/// `MDB_MULTIPLE`).
#[no_mangle]
pub unsafe extern "C" fn mdb_cursor_put(
    cursor: *mut MDB_cursor,
    key: *mut MDB_val,
    data: *mut MDB_val,
    flags: c_uint,
) -> c_int {
    guard(|| {
        if key.is_null() || data.is_null() {
            return libc::EINVAL;
        }
        let r = (|| {
            // SAFETY: checked.
            let (c, t) = unsafe { parts(cursor) }?;
            // SAFETY: forwarded contract.
            unsafe { cursor_put(c, t, key, data, flags) }
        })();
        code(r)
    })
}

/// # Safety
///
/// As [`mdb_cursor_put`], with `key` and `data` non-NULL.
unsafe fn cursor_put(
    c: &mut MDB_cursor,
    t: &mut MDB_txn,
    key: *mut MDB_val,
    data: *mut MDB_val,
    flags: c_uint,
) -> CResult<()> {
    c.sync();
    let (db, dup) = (c.db, c.dup);
    if t.db(c.dbi)?.int && flags & MDB_CURRENT == 0 {
        // SAFETY: per the contract; under `MDB_MULTIPLE` the first of two
        // `MDB_val`s gives a value's size.
        let (k, len) = unsafe { (MDB_val::bytes(&*key), (*data).mv_size) };
        crate::dbi::fit_integers(t, c.dbi, db, k, len)?;
    }
    if c.dbi == MAIN_DBI {
        // SAFETY: per the contract.
        let k = if flags & MDB_CURRENT != 0 {
            c.key.clone()
        } else {
            unsafe { MDB_val::bytes(&*key) }.to_vec()
        };
        if main_view::is_record(t, MAIN_DBI, &k)? {
            return Err(MDB_INCOMPATIBLE); // a named database's record, as LMDB
        }
    }
    let w = t.rw()?;
    if flags & MDB_MULTIPLE != 0 {
        // SAFETY: two `MDB_val`s per the contract.
        let (d0, d1) = unsafe { (*data, &mut *data.add(1)) };
        // SAFETY: per the contract.
        let k = unsafe { MDB_val::key(&*key) }?.to_vec();
        let (size, count) = (d0.mv_size, d1.mv_size);
        if !dup || size == 0 {
            return Err(libc::EINVAL);
        }
        let mut done = 0;
        let rest = flags & !(MDB_MULTIPLE | MDB_CURRENT);
        let mut last = Vec::new();
        for i in 0..count {
            let mut one = MDB_val {
                mv_size: size,
                // SAFETY: `count` values of `size` bytes per the contract.
                mv_data: unsafe { (d0.mv_data as *mut u8).add(i * size) }.cast(),
            };
            if let Err(e) = put(w, db, dup, &k, &mut one, rest & !MDB_RESERVE) {
                d1.mv_size = done;
                return Err(e);
            }
            // SAFETY: as above.
            last = unsafe { MDB_val::bytes(&one) }.to_vec();
            done += 1;
        }
        d1.mv_size = done;
        c.key = k;
        c.val = last;
        c.pos = Pos::At;
        return Ok(());
    }
    // SAFETY: per the contract.
    let (k, d) = unsafe { (MDB_val::key(&*key)?.to_vec(), &mut *data) };
    if flags & MDB_CURRENT != 0 {
        if c.pos != Pos::At {
            return Err(libc::EINVAL);
        }
        let ck = c.key.clone();
        if dup {
            w.delete_dup(db, &ck, &c.val).map_err(err)?;
        }
        let buf = put(w, db, dup, &ck, d, flags & !MDB_CURRENT)?;
        // SAFETY: per the contract.
        c.val = unsafe { MDB_val::bytes(d) }.to_vec();
        if let Some(buf) = buf {
            reserve(t, db, &ck, d, buf);
        }
        return Ok(());
    }
    let r = put(w, db, dup, &k, d, flags);
    if matches!(r, Ok(_) | Err(MDB_KEYEXIST)) {
        // SAFETY: per the contract (or the stored value, on MDB_KEYEXIST).
        c.val = unsafe { MDB_val::bytes(d) }.to_vec();
        c.pos = Pos::At;
        c.key.clone_from(&k);
    }
    if let Some(buf) = r? {
        reserve(t, db, &k, d, buf);
    }
    Ok(())
}

/// Deletes the pair under the cursor (`mdb_cursor_del`), or with
/// `MDB_NODUPDATA` every value of its key. The cursor then stands on the
/// pair that followed: `MDB_NEXT` returns it, `MDB_PREV` the one before.
///
/// # Safety
///
/// `cursor` is a cursor handle of a write transaction.
#[no_mangle]
pub unsafe extern "C" fn mdb_cursor_del(cursor: *mut MDB_cursor, flags: c_uint) -> c_int {
    guard(|| {
        let r = (|| {
            // SAFETY: checked.
            let (c, t) = unsafe { parts(cursor) }?;
            c.sync();
            if matches!(c.pos, Pos::Unset | Pos::End) || flags & !MDB_NODUPDATA != 0 {
                return Err(libc::EINVAL);
            }
            if c.pos == Pos::Deleted {
                // As LMDB: the cursor stands on the pair after the one
                // deleted, which goes now (`MDB_NOTFOUND` past the end).
                let v = t.view()?;
                let mut sc = v.cursor(c.db).map_err(err)?;
                match c.restore(&mut sc)? {
                    Restored::Ahead(Some(e)) | Restored::Exact(e) => c.save(e),
                    _ => return Err(MDB_NOTFOUND),
                }
            }
            if main_view::is_record(t, c.dbi, &c.key)? {
                // A named database's record: as LMDB, the transaction can
                // then only abort.
                t.rw()?;
                t.failed = true;
                return Err(MDB_INCOMPATIBLE);
            }
            let w = t.rw()?;
            let found = if c.dup && flags & MDB_NODUPDATA == 0 {
                w.delete_dup(c.db, &c.key, &c.val)
            } else {
                w.delete(c.db, &c.key)
            }
            .map_err(err)?;
            if c.dup && flags & MDB_NODUPDATA != 0 {
                // Every value went: resume at the next key's first value.
                c.val.clear();
            }
            c.pos = Pos::Deleted;
            // As LMDB: a cursor that deleted a database's last pair is
            // unpositioned (EINVAL for GET_CURRENT and del, not NOTFOUND).
            if t.view()?
                .cursor(c.db)
                .map_err(err)?
                .first()
                .map_err(err)?
                .is_none()
            {
                c.pos = Pos::Unset;
            }
            if found {
                Ok(())
            } else {
                Err(MDB_NOTFOUND)
            }
        })();
        code(r)
    })
}

/// The number of values of the key under the cursor (`mdb_cursor_count`;
/// `MDB_INCOMPATIBLE` without DUPSORT, as LMDB).
///
/// # Safety
///
/// `cursor` is a cursor handle; `countp` NULL (`EINVAL`) or writable.
#[no_mangle]
pub unsafe extern "C" fn mdb_cursor_count(cursor: *mut MDB_cursor, countp: *mut usize) -> c_int {
    guard(|| {
        if countp.is_null() {
            return libc::EINVAL;
        }
        let r = (|| {
            // SAFETY: checked.
            let (c, t) = unsafe { parts(cursor) }?;
            c.sync();
            if !c.dup {
                return Err(MDB_INCOMPATIBLE); // as LMDB
            }
            let v = t.view()?;
            let mut sc = v.cursor(c.db).map_err(err)?;
            match c.restore(&mut sc)? {
                Restored::Exact(_) => {}
                Restored::Unset => return Err(libc::EINVAL),
                Restored::Ahead(Some(_)) => {}
                Restored::Ahead(None) => return Err(MDB_NOTFOUND),
            }
            let n = sc.dup_count().map_err(err)?;
            // SAFETY: non-NULL, writable per the contract.
            unsafe { store(countp, n as usize) };
            Ok(())
        })();
        code(r)
    })
}
