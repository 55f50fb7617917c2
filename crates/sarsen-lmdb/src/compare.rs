//! `mdb_set_compare` and `mdb_set_dupsort`: a program's own order of the
//! keys, or of a DUPSORT database's values.
//!
//! LMDB keeps a function pointer on the open handle and records nothing;
//! Sarsen records a comparator's name with the database when it is
//! created and needs the comparator attached to open it. So a database
//! given a function is recorded with the comparator name
//! [`KEY_CMP`] (or [`DUP_CMP`]), and a comparator of that name,
//! attached to the handle for the environment's life, calls whatever
//! function the program set last (bytewise until it sets one, as LMDB's
//! default until `mdb_set_compare` is called). `mdb_set_compare` on an
//! empty database records the name (re-creating a named database in the
//! transaction, or giving the empty main database its order); on a
//! database already recorded with it, it sets the function; on a database
//! holding pairs in another order it is `MDB_INCOMPATIBLE` (LMDB would
//! compare them with the new function and misplace them).

use std::cmp::Ordering;
use std::ffi::c_int;
use std::sync::atomic::{AtomicPtr, Ordering as AtomicOrdering};
use std::sync::Arc;

use sarsen::{Comparator, DbOptions, KeyOrder};

use crate::consts::*;
use crate::env::MDB_env;
use crate::error::to_code;
use crate::txn::{txn_mut, MDB_txn};
use crate::{code, guard, CResult, MDB_cmp_func, MDB_dbi, MDB_val};

/// The comparator name recorded for a database ordered by `mdb_set_compare`.
pub const KEY_CMP: &str = "lmdb:mdb_set_compare";
/// The comparator name recorded for duplicate values ordered by `mdb_set_dupsort`.
pub const DUP_CMP: &str = "lmdb:mdb_set_dupsort";

/// A Sarsen comparator calling the C function in its slot (bytewise while
/// the slot is empty).
pub(crate) struct Trampoline {
    name: &'static str,
    slot: Arc<AtomicPtr<()>>,
}

impl Comparator for Trampoline {
    fn name(&self) -> &str {
        self.name
    }

    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        let f = self.slot.load(AtomicOrdering::Acquire);
        if f.is_null() {
            return a.cmp(b);
        }
        // SAFETY: the slot holds only `MDB_cmp_func` pointers
        // (`set_function`), and function pointers and `*mut ()` have one
        // size.
        let f = unsafe { std::mem::transmute::<*mut (), MDB_cmp_func>(f) };
        let (va, vb) = (MDB_val::of(a), MDB_val::of(b));
        // SAFETY: the program promised a comparison function taking two
        // `MDB_val`s (mdb_set_compare's contract); both point to live bytes.
        unsafe { f(&va, &vb) }.cmp(&0)
    }
}

impl MDB_env {
    /// The slot of the function ordering database `name`'s keys (or, with
    /// `dup`, its values), created empty on first use.
    fn cmp_slot(&self, name: Option<&str>, dup: bool) -> crate::env::CmpSlot {
        let mut m = self.cmp_slots.lock().unwrap_or_else(|e| e.into_inner());
        let key = (name.map(str::to_string), dup);
        Arc::clone(m.entry(key).or_default())
    }

    /// A [`Trampoline`] for database `name`'s keys (or values, with `dup`).
    pub(crate) fn trampoline(&self, name: Option<&str>, dup: bool) -> KeyOrder {
        KeyOrder::Custom(Arc::new(Trampoline {
            name: if dup { DUP_CMP } else { KEY_CMP },
            slot: self.cmp_slot(name, dup),
        }))
    }
}

/// `o` with this layer's comparator for the one a database records, as
/// `recorded` names it (the comparator's name from `Error::NoComparator`,
/// or the recorded order as `KeyOrderMismatch`/`DupModeMismatch` describe
/// it); `None` if that is not one of this layer's, or `o` has it already.
pub(crate) fn with_trampoline(
    env: &MDB_env,
    name: Option<&str>,
    o: &DbOptions,
    recorded: &str,
) -> Option<DbOptions> {
    if recorded.contains(DUP_CMP) {
        Some(o.clone().dup_sort(env.trampoline(name, true)))
    } else if recorded.contains(KEY_CMP) {
        Some(o.clone().key_order(env.trampoline(name, false)))
    } else {
        None
    }
}

/// `mdb_set_compare` (`dup` false) and `mdb_set_dupsort` (`dup` true).
fn set_function(t: &mut MDB_txn, dbi: MDB_dbi, f: MDB_cmp_func, dup: bool) -> CResult<()> {
    let err = |e: sarsen::Error| to_code(&e);
    let info = t.db(dbi)?;
    let db = info.db;
    if dup && !info.dup {
        return Err(libc::EINVAL);
    }
    let name = if dbi == crate::main_view::MAIN_DBI {
        None
    } else {
        Some(t.envh().dbi_name(dbi).ok_or(libc::EINVAL)?)
    };
    let v = t.view()?;
    let order = v.key_order(db).map_err(err)?;
    let dups = v.dup_mode(db).map_err(err)?;
    let current = if dup {
        dups.as_ref().map(|d| &d.order)
    } else {
        Some(&order)
    };
    let ours = matches!(current, Some(KeyOrder::Custom(c))
        if c.name() == if dup { DUP_CMP } else { KEY_CMP });
    // Record the name: only while the database is empty, and in a write
    // transaction (a read transaction only sets the function: an empty
    // database has nothing to order yet).
    if !ours && v.stat(db).map_err(err)?.entries != 0 {
        return Err(MDB_INCOMPATIBLE);
    }
    if !ours && !t.rdonly {
        let env = t.envh();
        let mut o = DbOptions::new();
        o = o.key_order(if dup {
            order
        } else {
            env.trampoline(name.as_deref(), false)
        });
        if let Some(d) = dups {
            o = o.dup_sort(if dup {
                env.trampoline(name.as_deref(), true)
            } else {
                d.order
            });
            if d.fixed {
                o = o.dup_fixed();
            }
        }
        let w = t.rw()?;
        match name.as_deref() {
            // The empty main database takes the order of the first writer
            // that gives one.
            None => {
                w.create_db_with(None, &o).map_err(err)?;
            }
            Some(n) => {
                w.drop_db(db).map_err(err)?;
                if w.create_db_with(Some(n), &o).map_err(err)? != db {
                    return Err(MDB_PANIC); // a name keeps its handle for life
                }
            }
        }
    }
    let slot = t.envh().cmp_slot(name.as_deref(), dup);
    slot.store(f as *mut (), AtomicOrdering::Release);
    Ok(())
}

/// Sets the function ordering the keys of database `dbi`
/// (`mdb_set_compare`). As in LMDB, call it before any other use of the
/// database in every process, with the same function: the function is
/// this process's, the database records only that it has one
/// (`lmdb:mdb_set_compare`). On an empty database (one just created, or
/// the empty main database) a write transaction records that (a read
/// transaction sets the function only); on a database holding pairs in
/// another order it is `MDB_INCOMPATIBLE`.
///
/// # Safety
///
/// `txn` is a live transaction handle; `cmp` is NULL (`EINVAL`) or a
/// function comparing two `MDB_val`s, callable from any thread, valid
/// while the environment is open.
#[no_mangle]
pub unsafe extern "C" fn mdb_set_compare(
    txn: *mut MDB_txn,
    dbi: MDB_dbi,
    cmp: Option<MDB_cmp_func>,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { set(txn, dbi, cmp, false) }
}

/// Sets the function ordering the values of DUPSORT database `dbi`
/// (`mdb_set_dupsort`), as [`mdb_set_compare`] does for keys (recorded as
/// `lmdb:mdb_set_dupsort`; `EINVAL` on a database without DUPSORT).
///
/// # Safety
///
/// As [`mdb_set_compare`].
#[no_mangle]
pub unsafe extern "C" fn mdb_set_dupsort(
    txn: *mut MDB_txn,
    dbi: MDB_dbi,
    cmp: Option<MDB_cmp_func>,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { set(txn, dbi, cmp, true) }
}

/// # Safety
///
/// As [`mdb_set_compare`].
unsafe fn set(txn: *mut MDB_txn, dbi: MDB_dbi, cmp: Option<MDB_cmp_func>, dup: bool) -> c_int {
    guard(|| {
        let Some(f) = cmp else {
            return libc::EINVAL;
        };
        // SAFETY: checked.
        code(unsafe { txn_mut(txn) }.and_then(|t| set_function(t, dbi, f, dup)))
    })
}
