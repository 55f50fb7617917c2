//! What the C API does without allocating, counted by a global allocator:
//! a read transaction reset and renewed (`mdb_txn_reset`/`mdb_txn_renew`,
//! in place), a cursor renewed on it (`mdb_cursor_renew`) and moved, and a
//! write transaction's cursor moved, allocate nothing once warm. (One test
//! in this binary: the count is global.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::CString;
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};

use lmdb::*;

/// The system allocator, counting allocations.
struct Counting;

static ALLOCS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded contract.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded contract.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static A: Counting = Counting;

fn ok(rc: i32) {
    assert_eq!(rc, 0, "{}", lmdb::error::describe(rc));
}

fn val(b: &[u8]) -> MDB_val {
    MDB_val {
        mv_size: b.len(),
        mv_data: b.as_ptr() as *mut _,
    }
}

/// Allocations made by `f`.
fn allocs(f: impl FnOnce()) -> usize {
    let before = ALLOCS.load(Ordering::Relaxed);
    f();
    ALLOCS.load(Ordering::Relaxed) - before
}

#[test]
fn renewals_and_cursor_moves_allocate_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = CString::new(dir.path().to_str().unwrap()).unwrap();
    let keys: Vec<[u8; 8]> = (0..500u64).map(|i| (i * 3).to_be_bytes()).collect();
    // SAFETY: live handles throughout, one thread.
    unsafe {
        let (mut env, mut txn, mut dbi) = (ptr::null_mut(), ptr::null_mut(), 0);
        ok(mdb_env_create(&mut env));
        ok(mdb_env_open(env, p.as_ptr(), MDB_NOSYNC, 0o644));
        ok(mdb_txn_begin(env, ptr::null_mut(), 0, &mut txn));
        ok(mdb_dbi_open(txn, ptr::null(), 0, &mut dbi));
        for k in &keys {
            ok(mdb_put(txn, dbi, &mut val(k), &mut val(&[7; 40]), 0));
        }
        ok(mdb_txn_commit(txn));

        // A read transaction renewed per lookup, its cursor renewed on it.
        let (mut r, mut c) = (ptr::null_mut(), ptr::null_mut());
        ok(mdb_txn_begin(env, ptr::null_mut(), MDB_RDONLY, &mut r));
        ok(mdb_cursor_open(r, dbi, &mut c));
        mdb_txn_reset(r);
        let (mut k, mut v) = (val(&[]), val(&[]));
        let mut round = |i: usize| {
            ok(mdb_txn_renew(r));
            ok(mdb_get(r, dbi, &mut val(&keys[i]), &mut v));
            ok(mdb_cursor_renew(r, c));
            let mut sk = val(&keys[i]);
            ok(mdb_cursor_get(c, &mut sk, &mut v, MDB_SET));
            ok(mdb_cursor_get(c, &mut k, &mut v, MDB_NEXT));
            ok(mdb_cursor_get(c, &mut k, &mut v, MDB_GET_CURRENT));
            mdb_txn_reset(r);
        };
        round(0);
        let n = allocs(|| (1..200).for_each(&mut round));
        assert_eq!(n, 0, "allocations in 199 renewed reads");
        mdb_cursor_close(c);
        mdb_txn_abort(r);

        // A write transaction's cursor.
        ok(mdb_txn_begin(env, ptr::null_mut(), 0, &mut txn));
        ok(mdb_cursor_open(txn, dbi, &mut c));
        ok(mdb_cursor_get(c, &mut k, &mut v, MDB_FIRST));
        ok(mdb_cursor_get(c, &mut k, &mut v, MDB_NEXT));
        let n = allocs(|| {
            for key in &keys[10..200] {
                let mut sk = val(key);
                ok(mdb_cursor_get(c, &mut sk, &mut v, MDB_SET_KEY));
                ok(mdb_cursor_get(c, &mut k, &mut v, MDB_NEXT));
                ok(mdb_cursor_get(c, &mut k, &mut v, MDB_PREV));
                ok(mdb_cursor_get(c, &mut k, &mut v, MDB_GET_CURRENT));
            }
        });
        assert_eq!(n, 0, "allocations in 760 write-cursor moves");
        mdb_txn_abort(txn);
        mdb_env_close(env);
    }
}
