//! Functions of LMDB 0.9's API not implemented yet: exported so that
//! programs link, each returning `ENOTSUP` (the README lists them and what
//! each needs).

use std::ffi::c_int;

use crate::{MDB_cmp_func, MDB_dbi, MDB_txn};

/// Not yet supported (`ENOTSUP`): Sarsen attaches a comparator when a
/// database is opened (`DbOptions::key_order`), by name; LMDB sets it on
/// an open handle, by function pointer.
///
/// # Safety
///
/// Always safe; `unsafe` as every function of the C API.
#[no_mangle]
pub unsafe extern "C" fn mdb_set_compare(
    txn: *mut MDB_txn,
    dbi: MDB_dbi,
    cmp: Option<MDB_cmp_func>,
) -> c_int {
    let _ = (txn, dbi, cmp);
    libc::ENOTSUP
}

/// Not yet supported (`ENOTSUP`), as [`mdb_set_compare`].
///
/// # Safety
///
/// Always safe; `unsafe` as every function of the C API.
#[no_mangle]
pub unsafe extern "C" fn mdb_set_dupsort(
    txn: *mut MDB_txn,
    dbi: MDB_dbi,
    cmp: Option<MDB_cmp_func>,
) -> c_int {
    let _ = (txn, dbi, cmp);
    libc::ENOTSUP
}
