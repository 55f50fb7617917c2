//! Database handles and the non-cursor reads and writes: `mdb_dbi_*`,
//! `mdb_stat`, `mdb_drop`, `mdb_get`, `mdb_put`, `mdb_del`, `mdb_cmp`.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

use sarsen::{Database, DbOptions, KeyOrder, RwTxn};

use crate::consts::*;
use crate::env::{env_ref, DbiInfo};
use crate::error::to_code;
use crate::main_view::{self, MAIN_DBI};
use crate::txn::{txn_mut, MDB_txn, State, View};
use crate::{code, guard, guard_or, store, CResult, MDB_dbi, MDB_env, MDB_stat, MDB_val};

/// Flags `mdb_dbi_open` accepts.
const DBI_FLAGS: c_uint = MDB_REVERSEKEY
    | MDB_DUPSORT
    | MDB_INTEGERKEY
    | MDB_DUPFIXED
    | MDB_INTEGERDUP
    | MDB_REVERSEDUP
    | MDB_CREATE;

/// Sarsen's largest value, bytes (`Env::max_value_size`).
const MAX_VALUE: usize = 0x7fff_ffff;

/// Flags `mdb_put` accepts.
const PUT_FLAGS: c_uint =
    MDB_NOOVERWRITE | MDB_NODUPDATA | MDB_CURRENT | MDB_RESERVE | MDB_APPEND | MDB_APPENDDUP;

fn err(e: sarsen::Error) -> c_int {
    to_code(&e)
}

/// The `DbOptions` for `flags`; `int_key`/`int_dup` pick the width LMDB's
/// integer flags leave open (Sarsen records one: 8 bytes, `size_t`,
/// first, then 4, `unsigned int`).
fn options(flags: c_uint, int_key: KeyOrder, int_dup: KeyOrder) -> DbOptions {
    let mut o = DbOptions::new();
    if flags & MDB_INTEGERKEY != 0 {
        o = o.key_order(int_key);
    } else if flags & MDB_REVERSEKEY != 0 {
        o = o.key_order(KeyOrder::ReverseBytewise);
    }
    if flags & MDB_DUPSORT != 0 {
        let d = if flags & MDB_INTEGERDUP != 0 {
            int_dup
        } else if flags & MDB_REVERSEDUP != 0 {
            KeyOrder::ReverseBytewise
        } else {
            KeyOrder::Bytewise
        };
        o = o.dup_sort(d);
        if flags & (MDB_DUPFIXED | MDB_INTEGERDUP) != 0 {
            o = o.dup_fixed();
        }
    }
    o
}

/// Why [`open_once`] failed: an engine error (kept whole: its
/// `NoComparator` is retried) or an LMDB code.
enum OpenErr {
    Engine(sarsen::Error),
    Code(c_int),
}

impl From<c_int> for OpenErr {
    fn from(c: c_int) -> OpenErr {
        OpenErr::Code(c)
    }
}

/// [`open_once`], attaching this layer's comparators to a database that
/// records them (`mdb_set_compare`, `mdb_set_dupsort`).
fn open_with_comparators(
    t: &mut MDB_txn,
    name: Option<&str>,
    flags: c_uint,
    o: &DbOptions,
) -> CResult<Database> {
    let mut o = o.clone();
    for _ in 0..3 {
        match open_once(t, name, flags, &o) {
            Ok(db) => return Ok(db),
            // A comparator not attached yet, or an order given from the
            // flags where the database records one of ours.
            Err(OpenErr::Engine(
                sarsen::Error::NoComparator { name: c, .. }
                | sarsen::Error::KeyOrderMismatch { recorded: c, .. }
                | sarsen::Error::DupModeMismatch { recorded: c, .. },
            )) => match crate::compare::with_trampoline(t.envh(), name, &o, &c) {
                Some(with) => o = with,
                None => return Err(MDB_INCOMPATIBLE),
            },
            Err(OpenErr::Engine(e)) => return Err(err(e)),
            Err(OpenErr::Code(c)) => return Err(c),
        }
    }
    Err(MDB_INCOMPATIBLE)
}

/// Opens (with `MDB_CREATE`, creates) database `name` with options `o`.
fn open_once(
    t: &mut MDB_txn,
    name: Option<&str>,
    flags: c_uint,
    o: &DbOptions,
) -> Result<Database, OpenErr> {
    let eng = OpenErr::Engine;
    // Shared access for a read transaction: its cursors may hold borrows
    // of the `RoTxn` (see `cursor.rs`).
    // As LMDB: a name that is a plain key of the main database is not a
    // database (`MDB_INCOMPATIBLE`), when no database has that name.
    let main = main_view::main(t)?;
    let plain_key = |v: View<'_>| -> Result<bool, OpenErr> {
        match name {
            Some(n) => Ok(v.get(main, n.as_bytes()).map_err(eng)?.is_some()),
            None => Ok(false),
        }
    };
    match t.state.as_ref() {
        // As LMDB: creating in a read transaction is EACCES (when missing).
        Some(State::Ro(r)) if !t.idle => match r.open_db_with(name, o).map_err(eng)? {
            Some(db) => Ok(db),
            None if plain_key(View::Ro(r))? => Err(MDB_INCOMPATIBLE.into()),
            None if flags & MDB_CREATE != 0 => Err(libc::EACCES.into()),
            None => Err(MDB_NOTFOUND.into()),
        },
        _ => {
            let w = t.rw()?;
            if let Some(db) = w.open_db_with(name, o).map_err(eng)? {
                return Ok(db);
            }
            if plain_key(View::Rw(w))? {
                return Err(MDB_INCOMPATIBLE.into());
            }
            if flags & MDB_CREATE == 0 {
                return Err(MDB_NOTFOUND.into());
            }
            let db = w.create_db_with(name, o).map_err(eng)?;
            t.names = None;
            Ok(db)
        }
    }
}

/// Opens (with `MDB_CREATE`, creates) a database (`mdb_dbi_open`); a NULL
/// `name` is the main database. See the README for the flag mapping:
/// `MDB_INTEGERKEY`/`MDB_INTEGERDUP` databases are created with 8-byte
/// (`size_t`) integers; an existing one recorded with 4-byte integers is
/// opened as such.
///
/// # Safety
///
/// `txn` is a live transaction handle; `name` NULL or NUL-terminated;
/// `dbi` NULL (`EINVAL`) or writable.
#[no_mangle]
pub unsafe extern "C" fn mdb_dbi_open(
    txn: *mut MDB_txn,
    name: *const c_char,
    flags: c_uint,
    dbi: *mut MDB_dbi,
) -> c_int {
    guard(|| {
        if dbi.is_null() || flags & !DBI_FLAGS != 0 {
            return libc::EINVAL;
        }
        // SAFETY: checked.
        let t = match unsafe { txn_mut(txn) } {
            Ok(t) => t,
            Err(e) => return e,
        };
        let name = if name.is_null() {
            None
        } else {
            // SAFETY: non-NULL, NUL-terminated per the contract.
            match unsafe { CStr::from_ptr(name) }.to_str() {
                Ok(s) => Some(s),
                Err(_) => return libc::EINVAL,
            }
        };
        let widths = [KeyOrder::U64, KeyOrder::U32];
        let mut last = MDB_NOTFOUND;
        for k in &widths {
            for d in &widths {
                let o = options(flags, k.clone(), d.clone());
                match open_with_comparators(t, name, flags, &o) {
                    Ok(db) => {
                        let dup = match is_dup(t, db) {
                            Ok(d) => d,
                            Err(e) => return e,
                        };
                        let int = flags & (MDB_INTEGERKEY | MDB_INTEGERDUP) != 0;
                        let info = DbiInfo { db, dup, int };
                        let n = t.envh().dbi_of(info, name.is_none());
                        if let Some(name) = name {
                            let mut m =
                                t.envh().dbi_names.lock().unwrap_or_else(|e| e.into_inner());
                            m.insert(n, name.to_string());
                        }
                        // SAFETY: non-NULL, writable per the contract.
                        unsafe { dbi.write(n) };
                        return MDB_SUCCESS;
                    }
                    Err(MDB_INCOMPATIBLE) => last = MDB_INCOMPATIBLE,
                    Err(e) => return e,
                }
            }
        }
        last
    })
}

/// Runs `f` on transaction `txn`, the database of `dbi` and whether it is
/// DUPSORT.
///
/// # Safety
///
/// `txn` is a live transaction handle.
unsafe fn with_db(
    txn: *mut MDB_txn,
    dbi: MDB_dbi,
    f: impl FnOnce(&mut MDB_txn, Database, DbiInfo) -> CResult<()>,
) -> c_int {
    guard(|| {
        // SAFETY: checked.
        let r = unsafe { txn_mut(txn) }.and_then(|t| {
            let info = t.db(dbi)?;
            f(t, info.db, info)
        });
        code(r)
    })
}

/// Statistics of a database (`mdb_stat`).
///
/// # Safety
///
/// `txn` is a live transaction handle; `stat` NULL (`EINVAL`) or writable.
#[no_mangle]
pub unsafe extern "C" fn mdb_stat(txn: *mut MDB_txn, dbi: MDB_dbi, stat: *mut MDB_stat) -> c_int {
    if stat.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: forwarded contract.
    unsafe {
        with_db(txn, dbi, |t, db, _| {
            let mut s = MDB_stat::from(t.view()?.stat(db).map_err(err)?);
            if dbi == MAIN_DBI && !main_view::none_shown(t)? {
                let names = main_view::names(t)?;
                let main = main_view::main(t)?;
                s.ms_entries += main_view::record_count(&t.view()?, main, &names)? as usize;
            }
            // SAFETY: non-NULL, writable per the contract.
            store(stat, s);
            Ok(())
        })
    }
}

fn order_flags(o: &KeyOrder, reverse: c_uint, integer: c_uint) -> c_uint {
    match o {
        KeyOrder::ReverseBytewise => reverse,
        KeyOrder::U32 | KeyOrder::U64 => integer,
        _ => 0,
    }
}

/// The flags database `db` records, as `mdb_dbi_open` takes them.
pub(crate) fn flags_of(v: &View<'_>, db: Database) -> CResult<c_uint> {
    let mut f = order_flags(
        &v.key_order(db).map_err(err)?,
        MDB_REVERSEKEY,
        MDB_INTEGERKEY,
    );
    if let Some(d) = v.dup_mode(db).map_err(err)? {
        f |= MDB_DUPSORT | order_flags(&d.order, MDB_REVERSEDUP, MDB_INTEGERDUP);
        if d.fixed {
            f |= MDB_DUPFIXED;
        }
    }
    Ok(f)
}

/// The flags a database records (`mdb_dbi_flags`), as `mdb_dbi_open` takes them.
///
/// # Safety
///
/// `txn` is a live transaction handle; `flags` NULL (`EINVAL`) or writable.
#[no_mangle]
pub unsafe extern "C" fn mdb_dbi_flags(
    txn: *mut MDB_txn,
    dbi: MDB_dbi,
    flags: *mut c_uint,
) -> c_int {
    if flags.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: forwarded contract.
    unsafe {
        with_db(txn, dbi, |t, db, _| {
            let f = flags_of(&t.view()?, db)?;
            // SAFETY: non-NULL, writable per the contract.
            store(flags, f);
            Ok(())
        })
    }
}

/// Forgets a database handle number (`mdb_dbi_close`). As in LMDB this is
/// rarely needed; the number may be given out again.
///
/// # Safety
///
/// `env` is an environment handle.
#[no_mangle]
pub unsafe extern "C" fn mdb_dbi_close(env: *mut MDB_env, dbi: MDB_dbi) {
    guard_or((), || {
        // SAFETY: checked.
        if let Ok(h) = unsafe { env_ref(env) } {
            h.forget_dbi(dbi);
        }
    })
}

/// Empties a database (`del` 0) or deletes it and closes its handle
/// (`del` 1; on the main database, empties it) (`mdb_drop`).
///
/// # Safety
///
/// `txn` is a live write transaction handle.
#[no_mangle]
pub unsafe extern "C" fn mdb_drop(txn: *mut MDB_txn, dbi: MDB_dbi, del: c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        with_db(txn, dbi, |t, db, _| {
            let w = t.rw()?;
            if del != 0 && dbi >= 2 {
                w.drop_db(db).map_err(err)?;
                t.names = None;
                t.envh().forget_dbi(dbi);
                Ok(())
            } else {
                w.clear_db(db).map_err(err)
            }
        })
    }
}

/// Reads a key's value (its first value, in a DUPSORT database) into
/// `*data` (`mdb_get`); `MDB_NOTFOUND` if absent. The bytes stay valid
/// until the transaction ends or writes.
///
/// # Safety
///
/// `txn` is a live transaction handle; `key` points to an `MDB_val`
/// describing readable bytes; `data` is writable. Either NULL: `EINVAL`.
#[no_mangle]
pub unsafe extern "C" fn mdb_get(
    txn: *mut MDB_txn,
    dbi: MDB_dbi,
    key: *mut MDB_val,
    data: *mut MDB_val,
) -> c_int {
    if key.is_null() || data.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: forwarded contract.
    unsafe {
        with_db(txn, dbi, |t, db, _| {
            // SAFETY: non-NULL and valid per the contract.
            let k = MDB_val::key(&*key)?;
            if let Some(v) = t.view()?.get(db, k).map_err(err)? {
                store(data, MDB_val::of(v));
                return Ok(());
            }
            // A named database's record, in the main database.
            if main_view::is_record(t, dbi, k)? {
                let (_, rec) = main_view::record(t, k)?;
                store(data, MDB_val::of(rec));
                return Ok(());
            }
            Err(MDB_NOTFOUND)
        })
    }
}

/// The width of an integer order for an integer of `len` bytes, if it is
/// not `o`'s: `MDB_INTEGERKEY`/`MDB_INTEGERDUP` take `unsigned int` (4
/// bytes) or `size_t` (8) integers.
fn refit(o: &KeyOrder, len: usize) -> Option<KeyOrder> {
    match (o, len) {
        (KeyOrder::U64, 4) => Some(KeyOrder::U32),
        (KeyOrder::U32, 8) => Some(KeyOrder::U64),
        _ => None,
    }
}

/// Before a put of `key` and a value of `val_len` bytes into integer
/// database `dbi` (`MDB_INTEGERKEY` or `MDB_INTEGERDUP`): LMDB compares integers of the
/// size it is given, 4 or 8 bytes, while Sarsen records one width when it
/// creates a database (8 bytes here, before any key is seen). So while the
/// database is empty, a put of the other width re-creates a named one
/// (dropped and created again in this transaction, with the same name,
/// options and Sarsen handle) with that width, and opens the main one
/// with it (an empty main database takes it). An abort undoes it with the
/// rest.
pub(crate) fn fit_integers(
    t: &mut MDB_txn,
    dbi: MDB_dbi,
    db: Database,
    key: &[u8],
    val_len: usize,
) -> CResult<()> {
    let v = t.view()?;
    let order = v.key_order(db).map_err(err)?;
    let dups = v.dup_mode(db).map_err(err)?;
    let key_to = refit(&order, key.len());
    let dup_to = dups.as_ref().and_then(|d| refit(&d.order, val_len));
    if key_to.is_none() && dup_to.is_none() || v.stat(db).map_err(err)?.entries != 0 {
        return Ok(()); // Sarsen checks the sizes in the put
    }
    let name = t.envh().dbi_name(dbi);
    let mut o = DbOptions::new().key_order(key_to.unwrap_or(order));
    if let Some(d) = dups {
        o = o.dup_sort(dup_to.unwrap_or(d.order));
        if d.fixed {
            o = o.dup_fixed();
        }
    }
    let w = t.rw()?;
    let Some(name) = name else {
        // The main database is not re-created: while empty it takes the
        // other width when opened with it.
        return match w.open_db_with(None, &o).map_err(err)? {
            Some(m) if m == db => Ok(()),
            _ => Err(MDB_PANIC),
        };
    };
    w.drop_db(db).map_err(err)?;
    let again = w.create_db_with(Some(&name), &o).map_err(err)?;
    // The environment's registry gives a name the same handle for life.
    if again != db {
        return Err(MDB_PANIC);
    }
    Ok(())
}

/// Whether `db` is DUPSORT in `t`'s view.
pub(crate) fn is_dup(t: &MDB_txn, db: Database) -> CResult<bool> {
    Ok(t.view()?.dup_mode(db).map_err(err)?.is_some())
}

/// Puts `key`/`*data` with LMDB's `flags` (shared by `mdb_put` and
/// `mdb_cursor_put`). With `MDB_NOOVERWRITE` on an existing key, `*data`
/// gets the value there and the result is `MDB_KEYEXIST`.
pub(crate) fn put(
    w: &mut RwTxn<'static>,
    db: Database,
    dup: bool,
    key: &[u8],
    data: &mut MDB_val,
    flags: c_uint,
) -> CResult<Option<Vec<u8>>> {
    if flags & MDB_RESERVE != 0 {
        // Put zeros now (so that size, order and NOOVERWRITE errors come
        // from this call), hand the program a buffer, store it later.
        if dup {
            return Err(libc::EINVAL);
        }
        if data.mv_size > MAX_VALUE {
            return Err(MDB_BAD_VALSIZE); // before allocating it
        }
        let zeros = vec![0u8; data.mv_size];
        let mut z = MDB_val::of(&zeros);
        let r = put(w, db, dup, key, &mut z, flags & !MDB_RESERVE);
        if r == Err(MDB_KEYEXIST) {
            *data = z;
        }
        r?;
        return Ok(Some(zeros));
    }
    // SAFETY: the caller of the C function promises `data` describes
    // readable bytes.
    let val = unsafe { MDB_val::bytes(data) };
    if flags & MDB_NOOVERWRITE != 0 {
        return match w.put_no_overwrite(db, key, val).map_err(err)? {
            Some(old) => {
                *data = MDB_val::of(old);
                Err(MDB_KEYEXIST)
            }
            None => Ok(None),
        };
    }
    if dup && flags & MDB_NODUPDATA != 0 {
        return match w.put_no_dup_data(db, key, val).map_err(err)? {
            true => Ok(None),
            false => Err(MDB_KEYEXIST),
        };
    }
    let r = if dup && flags & MDB_APPENDDUP != 0 {
        w.append_dup(db, key, val)
    } else if flags & MDB_APPEND != 0 {
        w.append(db, key, val)
    } else {
        w.put(db, key, val)
    };
    r.map_err(err).map(|()| None)
}

/// Records the buffer of an `MDB_RESERVE` put in `t` and points `*data` at it.
pub(crate) fn reserve(t: &mut MDB_txn, db: Database, key: &[u8], data: &mut MDB_val, buf: Vec<u8>) {
    let r = t.reserved.insert((db, key.to_vec(), buf));
    *data = MDB_val {
        mv_size: r.2.len(),
        mv_data: r.2.as_mut_ptr().cast(),
    };
}

/// Stores a key/value pair (`mdb_put`) with flags `MDB_NOOVERWRITE`,
/// `MDB_NODUPDATA`, `MDB_APPEND`, `MDB_APPENDDUP`, `MDB_CURRENT`
/// (treated as a plain put), `MDB_RESERVE` (not in a DUPSORT database:
/// `*data` gets a zeroed buffer of `mv_size` bytes to fill before the next
/// call on the transaction, which stores it).
///
/// # Safety
///
/// `txn` is a live write transaction handle; `key` and `data` point to
/// `MDB_val`s describing readable bytes (NULL: `EINVAL`).
#[no_mangle]
pub unsafe extern "C" fn mdb_put(
    txn: *mut MDB_txn,
    dbi: MDB_dbi,
    key: *mut MDB_val,
    data: *mut MDB_val,
    flags: c_uint,
) -> c_int {
    if key.is_null() || data.is_null() || flags & !PUT_FLAGS != 0 {
        return libc::EINVAL;
    }
    // SAFETY: forwarded contract.
    unsafe {
        with_db(txn, dbi, |t, db, info| {
            let dup = info.dup;
            // SAFETY: non-NULL and valid per the contract.
            let k = MDB_val::key(&*key)?;
            if info.int {
                fit_integers(t, dbi, db, k, (*data).mv_size)?;
            }
            if main_view::is_record(t, dbi, k)? {
                // A named database's record: as LMDB, `MDB_KEYEXIST` with
                // it under `MDB_NOOVERWRITE`, else `MDB_INCOMPATIBLE`.
                t.rw()?;
                if flags & MDB_NOOVERWRITE != 0 {
                    *data = MDB_val::of(main_view::record(t, k)?.1);
                    return Err(MDB_KEYEXIST);
                }
                return Err(MDB_INCOMPATIBLE);
            }
            if flags == 0 {
                // The common case, without `put`'s dispatch on flags.
                let v = MDB_val::bytes(&*data);
                return t.rw()?.put(db, k, v).map_err(err);
            }
            if let Some(buf) = put(t.rw()?, db, dup, k, &mut *data, flags)? {
                reserve(t, db, k, &mut *data, buf);
            }
            Ok(())
        })
    }
}

/// Deletes a key with all its values, or with `data` in a DUPSORT
/// database only that pair (`mdb_del`); `data` is ignored otherwise, as in
/// LMDB. `MDB_NOTFOUND` if absent.
///
/// # Safety
///
/// `txn` is a live write transaction handle; `key` points to an
/// `MDB_val` (NULL: `EINVAL`); `data` is NULL or points to one.
#[no_mangle]
pub unsafe extern "C" fn mdb_del(
    txn: *mut MDB_txn,
    dbi: MDB_dbi,
    key: *mut MDB_val,
    data: *mut MDB_val,
) -> c_int {
    if key.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: forwarded contract.
    unsafe {
        with_db(txn, dbi, |t, db, info| {
            let dup = info.dup;
            // SAFETY: non-NULL and valid per the contract.
            let k = MDB_val::key(&*key)?;
            if main_view::is_record(t, dbi, k)? {
                // A named database's record: as LMDB, the transaction
                // can then only abort.
                t.rw()?;
                t.failed = true;
                return Err(MDB_INCOMPATIBLE);
            }
            let w = t.rw()?;
            let found = if dup && !data.is_null() {
                // SAFETY: non-NULL and valid per the contract.
                w.delete_dup(db, k, MDB_val::bytes(&*data))
            } else {
                w.delete(db, k)
            }
            .map_err(err)?;
            if found {
                Ok(())
            } else {
                Err(MDB_NOTFOUND)
            }
        })
    }
}

/// Compares `a` and `b` as keys of `dbi` (`mdb_cmp`) or, with `dup`, as
/// its duplicate values.
///
/// # Safety
///
/// As [`mdb_cmp`].
unsafe fn compare(
    txn: *mut MDB_txn,
    dbi: MDB_dbi,
    a: *const MDB_val,
    b: *const MDB_val,
    dup: bool,
) -> c_int {
    if a.is_null() || b.is_null() {
        return 0;
    }
    guard_or(0, || {
        // SAFETY: checked.
        let Ok(t) = (unsafe { txn_mut(txn) }) else {
            return 0;
        };
        let Ok(DbiInfo { db, .. }) = t.db(dbi) else {
            return 0;
        };
        let Ok(v) = t.view() else { return 0 };
        let order = if dup {
            match v.dup_mode(db) {
                Ok(Some(d)) => d.order,
                _ => KeyOrder::Bytewise,
            }
        } else {
            v.key_order(db).unwrap_or_default()
        };
        // SAFETY: non-NULL and valid per the contract.
        let (a, b) = unsafe { (MDB_val::bytes(&*a), MDB_val::bytes(&*b)) };
        order.compare(a, b) as c_int
    })
}

/// Compares two keys in the order of database `dbi` (`mdb_cmp`): <0, 0, >0.
///
/// # Safety
///
/// `txn` is a live transaction handle; `a` and `b` point to `MDB_val`s
/// describing readable bytes.
#[no_mangle]
pub unsafe extern "C" fn mdb_cmp(
    txn: *mut MDB_txn,
    dbi: MDB_dbi,
    a: *const MDB_val,
    b: *const MDB_val,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { compare(txn, dbi, a, b, false) }
}

/// Compares two values in the duplicate order of DUPSORT database `dbi`
/// (`mdb_dcmp`).
///
/// # Safety
///
/// As [`mdb_cmp`].
#[no_mangle]
pub unsafe extern "C" fn mdb_dcmp(
    txn: *mut MDB_txn,
    dbi: MDB_dbi,
    a: *const MDB_val,
    b: *const MDB_val,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { compare(txn, dbi, a, b, true) }
}

/// Accepts a relocation function (`mdb_set_relfunc`): Sarsen never maps
/// at a fixed address, so it is never called.
///
/// # Safety
///
/// `txn` is a live transaction handle.
#[no_mangle]
pub unsafe extern "C" fn mdb_set_relfunc(
    txn: *mut MDB_txn,
    dbi: MDB_dbi,
    rel: Option<crate::MDB_rel_func>,
) -> c_int {
    let _ = rel;
    // SAFETY: forwarded contract.
    unsafe { with_db(txn, dbi, |_, _, _| Ok(())) }
}

/// Accepts a relocation context (`mdb_set_relctx`); see [`mdb_set_relfunc`].
///
/// # Safety
///
/// `txn` is a live transaction handle.
#[no_mangle]
pub unsafe extern "C" fn mdb_set_relctx(
    txn: *mut MDB_txn,
    dbi: MDB_dbi,
    ctx: *mut c_void,
) -> c_int {
    let _ = ctx;
    // SAFETY: forwarded contract.
    unsafe { with_db(txn, dbi, |_, _, _| Ok(())) }
}
