//! What the `lmdb_*_cost` examples share: LMDB opened as the harness runs it
//! (`MDB_WRITEMAP | MDB_NOSYNC | MDB_NOMETASYNC`, a 1 GiB map), the
//! harness's key format, and the random-order load of `sarsen`'s
//! `examples/common` (the same order, so both sides count the same tree).
#![allow(dead_code)] // each example uses its own part

use std::ffi::{c_void, CString};
use std::ptr;

use ffi::{MDB_dbi, MDB_env, MDB_txn, MDB_val};
use lmdb_master_sys as ffi;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

/// Panics with the call's name unless LMDB returned success.
pub fn ok(call: &str, rc: i32) {
    assert_eq!(rc, ffi::MDB_SUCCESS, "{call} failed: {rc}");
}

/// Opens an environment in `dir` with a 1 GiB map, `MDB_NOSYNC |
/// MDB_NOMETASYNC`, and `MDB_WRITEMAP` if `write_map`.
///
/// # Safety
///
/// The returned handle is used on this thread only and closed once.
pub unsafe fn open(dir: &std::path::Path, write_map: bool) -> *mut MDB_env {
    let path = CString::new(dir.to_str().unwrap()).unwrap();
    let mut env = ptr::null_mut();
    ok("mdb_env_create", ffi::mdb_env_create(&mut env));
    ok(
        "mdb_env_set_mapsize",
        ffi::mdb_env_set_mapsize(env, 1 << 30),
    );
    let mut flags = ffi::MDB_NOSYNC | ffi::MDB_NOMETASYNC;
    if write_map {
        flags |= ffi::MDB_WRITEMAP;
    }
    ok(
        "mdb_env_open",
        ffi::mdb_env_open(env, path.as_ptr(), flags, 0o644),
    );
    env
}

/// Begins a write transaction.
///
/// # Safety
///
/// `env` is open.
pub unsafe fn begin(env: *mut MDB_env) -> *mut MDB_txn {
    let mut txn = ptr::null_mut();
    ok(
        "mdb_txn_begin",
        ffi::mdb_txn_begin(env, ptr::null_mut(), 0, &mut txn),
    );
    txn
}

/// An `MDB_val` over `b` (LMDB reads it only, as `mdb_put`'s key and data).
pub fn val(b: &[u8]) -> MDB_val {
    MDB_val {
        mv_size: b.len(),
        mv_data: b.as_ptr() as *mut c_void,
    }
}

/// Puts `value` under `key` with `flags`.
///
/// # Safety
///
/// `txn` is a live write transaction and `dbi` a handle of its environment.
pub unsafe fn put(txn: *mut MDB_txn, dbi: MDB_dbi, key: &[u8], value: &[u8], flags: u32) {
    let (mut k, mut d) = (val(key), val(value));
    ok("mdb_put", ffi::mdb_put(txn, dbi, &mut k, &mut d, flags));
}

/// Opens the main database in `txn`.
///
/// # Safety
///
/// `txn` is a live transaction.
pub unsafe fn main_db(txn: *mut MDB_txn) -> MDB_dbi {
    let mut dbi = 0;
    ok(
        "mdb_dbi_open",
        ffi::mdb_dbi_open(txn, ptr::null(), 0, &mut dbi),
    );
    dbi
}

/// Loads keys `0..n` (values `[i as u8; 100]`) in the random order of
/// `sarsen`'s `examples/common::load`, 1,000 per transaction; returns the
/// main database's handle.
///
/// # Safety
///
/// `env` is open.
pub unsafe fn load(env: *mut MDB_env, n: u64) -> MDB_dbi {
    let mut order: Vec<u64> = (0..n).collect();
    order.shuffle(&mut SmallRng::seed_from_u64(301));
    let txn = begin(env);
    let dbi = main_db(txn);
    ok("mdb_txn_commit", ffi::mdb_txn_commit(txn));
    for chunk in order.chunks(1000) {
        let txn = begin(env);
        for &i in chunk {
            put(txn, dbi, &key_of(i), &[i as u8; 100], 0);
        }
        ok("mdb_txn_commit", ffi::mdb_txn_commit(txn));
    }
    dbi
}

/// `i` as 16 decimal digits with leading zeros (the harness's key format),
/// without the formatter, whose cost would hide the engine's.
pub fn key_of(mut i: u64) -> [u8; 16] {
    let mut k = [b'0'; 16];
    for d in k.iter_mut().rev() {
        *d = b'0' + (i % 10) as u8;
        i /= 10;
    }
    k
}
