//! Named databases as keys of the main database, as LMDB shows them.
//!
//! LMDB keeps each named database's record (an `MDB_db`) under its name in
//! the main database, and programs rely on it: `mdb_dump -a`, `mdb_stat -a`
//! and py-lmdb list the named databases by walking the main database with a
//! cursor. Sarsen keeps them in a catalog of their own. So where the main
//! database is plain (bytewise keys, no DUPSORT) and named databases
//! exist, this layer shows the main database as LMDB would: its pairs and
//! the names, merged in key order, each name with a 48-byte `MDB_db`
//! record (flags, depth, page counts and entries of that database; root
//! 0). Reads (`mdb_get`, cursor moves, `mdb_stat`'s entry count) see them;
//! writes of a name's key through the main database are refused with
//! `MDB_INCOMPATIBLE`, as LMDB refuses them, and so is opening a named
//! database whose name is a plain key of the main database. A name that is
//! also a plain key (possible in Sarsen only) shows the plain pair.

use sarsen::{Database, Entry, KeyOrder};

use crate::consts::*;
use crate::error::to_code;
use crate::txn::{MDB_txn, State, View};
use crate::CResult;

/// The main database's handle number.
pub(crate) const MAIN_DBI: crate::MDB_dbi = 1;

/// Bytes of an LMDB `MDB_db` record on a 64-bit system.
pub(crate) const RECORD_LEN: usize = 48;

fn err(e: sarsen::Error) -> i32 {
    to_code(&e)
}

/// The main database of `t`'s environment.
pub(crate) fn main(t: &MDB_txn) -> CResult<Database> {
    Ok(t.envh().env()?.main_db())
}

/// The names of the named databases, sorted bytewise, if the main database
/// of view `v` shows them (it is plain: bytewise, no DUPSORT); else empty.
pub(crate) fn names_in(v: &View<'_>, main: Database) -> CResult<Vec<Vec<u8>>> {
    let plain = matches!(v.key_order(main).map_err(err)?, KeyOrder::Bytewise)
        && v.dup_mode(main).map_err(err)?.is_none();
    if !plain {
        return Ok(Vec::new());
    }
    let mut n: Vec<Vec<u8>> = v
        .list_dbs()
        .map_err(err)?
        .into_iter()
        .map(String::into_bytes)
        .collect();
    n.sort();
    Ok(n)
}

/// [`names_in`] of transaction `t`, cached in it until it creates or drops
/// a database (or is reset).
pub(crate) fn names(t: &mut MDB_txn) -> CResult<Vec<Vec<u8>>> {
    if t.names.is_none() {
        let n = names_in(&t.view()?, main(t)?)?;
        t.names = Some(n);
    }
    Ok(t.names.clone().unwrap_or_default())
}

/// Whether `t` shows no named database in its main database (the common
/// case, checked without copying the names).
#[inline]
pub(crate) fn none_shown(t: &mut MDB_txn) -> CResult<bool> {
    match &t.names {
        Some(n) => Ok(n.is_empty()),
        None => fill_names(t),
    }
}

/// [`none_shown`] when `t` has not looked the names up yet.
#[cold]
#[inline(never)]
fn fill_names(t: &mut MDB_txn) -> CResult<bool> {
    names(t)?;
    Ok(!matches!(&t.names, Some(n) if !n.is_empty()))
}

/// How many of `names` are not plain keys of the main database of `v`:
/// what the main database's entry count adds.
pub(crate) fn record_count(v: &View<'_>, main: Database, names: &[Vec<u8>]) -> CResult<u64> {
    let mut n = 0;
    for name in names {
        n += u64::from(v.get(main, name).map_err(err)?.is_none());
    }
    Ok(n)
}

/// Whether `key` is the name of a named database the main database shows
/// and not also a plain key of it: a write of it through the main database
/// is `MDB_INCOMPATIBLE`.
#[inline]
pub(crate) fn is_record(t: &mut MDB_txn, dbi: crate::MDB_dbi, key: &[u8]) -> CResult<bool> {
    if dbi != MAIN_DBI || none_shown(t)? {
        return Ok(false);
    }
    is_shown_record(t, key)
}

/// [`is_record`] when the main database shows names.
#[inline(never)]
fn is_shown_record(t: &mut MDB_txn, key: &[u8]) -> CResult<bool> {
    let shown = t
        .names
        .as_ref()
        .is_some_and(|n| n.binary_search_by(|n| n[..].cmp(key)).is_ok());
    if !shown {
        return Ok(false);
    }
    Ok(t.view()?.get(main(t)?, key).map_err(err)?.is_none())
}

/// `name` and the `MDB_db` record of the named database of that name, as
/// LMDB returns a key and its value: copies kept by the transaction until
/// it ends.
pub(crate) fn record(t: &mut MDB_txn, name: &[u8]) -> CResult<(&'static [u8], &'static [u8])> {
    let key = keep(t, name.into());
    let name = std::str::from_utf8(name).map_err(|_| MDB_NOTFOUND)?;
    let db = match t.state.as_ref() {
        Some(State::Ro(r)) if !t.idle => r.open_db(Some(name)),
        _ => t.rw()?.open_db(Some(name)),
    };
    let mut rec = [0u8; RECORD_LEN];
    // A database whose comparator is not attached (Sarsen's custom orders)
    // cannot be opened here: its record stays zero.
    if let Ok(Some(db)) = db {
        let v = t.view()?;
        let s = v.stat(db).map_err(err)?;
        let flags = crate::dbi::flags_of(&v, db)?;
        rec[4..6].copy_from_slice(&(flags as u16).to_ne_bytes());
        rec[6..8].copy_from_slice(&(s.depth as u16).to_ne_bytes());
        for (i, x) in [s.branch_pages, s.leaf_pages, s.overflow_pages, s.entries]
            .into_iter()
            .enumerate()
        {
            rec[8 + 8 * i..16 + 8 * i].copy_from_slice(&x.to_ne_bytes());
        }
    }
    Ok((key, keep(t, rec.into())))
}

/// Keeps `b` in transaction `t` until it ends; the bytes, valid until then.
fn keep(t: &mut MDB_txn, b: Box<[u8]>) -> &'static [u8] {
    // SAFETY: the box is kept in `t.records` until the transaction handle
    // is freed, and never moved out or changed meanwhile (moving the `Box`
    // does not move its bytes): the slice stays valid while the program
    // may use it (until the transaction ends).
    let s: &'static [u8] = unsafe { &*(&*b as *const [u8]) };
    t.records.push(b);
    s
}

/// Where a merged move lands: a plain pair of the main database, or a name.
pub(crate) enum Found<'a> {
    Pair(Entry<'a>),
    Name(Vec<u8>),
}

impl Found<'_> {
    fn key(&self) -> &[u8] {
        match self {
            Found::Pair(e) => e.0,
            Found::Name(n) => n,
        }
    }
}

/// The first of the main database's keys and the names at or after `k`
/// (after, if `!inclusive`); `None` for `k` gives the first of all.
pub(crate) fn lower<'a>(
    t: &'a MDB_txn,
    names: &[Vec<u8>],
    k: Option<&[u8]>,
    inclusive: bool,
) -> CResult<Option<Found<'a>>> {
    let v = t.view()?;
    let mut c = v.cursor(main(t)?).map_err(err)?;
    let pair = match k {
        None => c.first().map_err(err)?,
        Some(k) => match c.seek(k).map_err(err)? {
            Some(e) if !inclusive && e.0 == k => c.next().map_err(err)?,
            e => e,
        },
    };
    let i = match k {
        None => 0,
        Some(k) => names.partition_point(|n| if inclusive { &n[..] < k } else { &n[..] <= k }),
    };
    let name = names.get(i);
    Ok(match (pair, name) {
        (Some(p), Some(n)) if &n[..] < p.0 => Some(Found::Name(n.clone())),
        (Some(p), _) => Some(Found::Pair(p)),
        (None, Some(n)) => Some(Found::Name(n.clone())),
        (None, None) => None,
    })
}

/// The last of the main database's keys and the names before `k`; `None`
/// for `k` gives the last of all.
pub(crate) fn upper<'a>(
    t: &'a MDB_txn,
    names: &[Vec<u8>],
    k: Option<&[u8]>,
) -> CResult<Option<Found<'a>>> {
    let v = t.view()?;
    let mut c = v.cursor(main(t)?).map_err(err)?;
    let pair = match k {
        None => c.last().map_err(err)?,
        Some(k) => match c.seek(k).map_err(err)? {
            Some(_) => c.prev().map_err(err)?,
            None => c.last().map_err(err)?,
        },
    };
    let i = match k {
        None => names.len(),
        Some(k) => names.partition_point(|n| &n[..] < k),
    };
    let name = i.checked_sub(1).and_then(|i| names.get(i));
    Ok(match (pair, name) {
        (Some(p), Some(n)) if &n[..] > p.0 => Some(Found::Name(n.clone())),
        (Some(p), _) => Some(Found::Pair(p)),
        (None, Some(n)) => Some(Found::Name(n.clone())),
        (None, None) => None,
    })
}

/// `key` exactly: its plain pair, or its name.
pub(crate) fn exact<'a>(
    t: &'a MDB_txn,
    names: &[Vec<u8>],
    key: &[u8],
) -> CResult<Option<Found<'a>>> {
    Ok(match lower(t, names, Some(key), true)? {
        Some(f) if f.key() == key => Some(f),
        _ => None,
    })
}
