//! LMDB's side of `sarsen/examples/append_cost.rs`, for instruction counts
//! under callgrind: `N` keys (default 200,000) of 16 bytes in ascending order
//! with 100-byte values, put with `MDB_APPEND` in transactions of 1,000 puts,
//! with `MDB_WRITEMAP | MDB_NOSYNC | MDB_NOMETASYNC` (as the harness runs
//! LMDB) and a 1 GiB map.
//!
//! ```text
//! cargo build --release -p sarsen-bench --example lmdb_append_cost
//! valgrind --tool=callgrind target/release/examples/lmdb_append_cost 300000
//! ```
use std::ffi::{c_void, CString};
use std::ptr;

use lmdb_master_sys as ffi;

/// Panics with the call's name unless LMDB returned success.
fn ok(call: &str, rc: i32) {
    assert_eq!(rc, ffi::MDB_SUCCESS, "{call} failed: {rc}");
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000);
    let dir = tempfile::tempdir().unwrap();
    let path = CString::new(dir.path().to_str().unwrap()).unwrap();
    let mut v = [7u8; 100];
    // SAFETY: each handle comes from a successful LMDB call and is used only on
    // this thread while it is open; every MDB_val points at live Rust bytes.
    unsafe {
        let mut env = ptr::null_mut();
        ok("mdb_env_create", ffi::mdb_env_create(&mut env));
        ok(
            "mdb_env_set_mapsize",
            ffi::mdb_env_set_mapsize(env, 1 << 30),
        );
        let flags = ffi::MDB_WRITEMAP | ffi::MDB_NOSYNC | ffi::MDB_NOMETASYNC;
        ok(
            "mdb_env_open",
            ffi::mdb_env_open(env, path.as_ptr(), flags, 0o644),
        );
        let mut dbi = 0;
        let mut i = 0;
        while i < n {
            let mut txn = ptr::null_mut();
            ok(
                "mdb_txn_begin",
                ffi::mdb_txn_begin(env, ptr::null_mut(), 0, &mut txn),
            );
            if dbi == 0 {
                ok(
                    "mdb_dbi_open",
                    ffi::mdb_dbi_open(txn, ptr::null(), 0, &mut dbi),
                );
            }
            for _ in 0..1000.min(n - i) {
                let key = key_of(i);
                v[..8].copy_from_slice(&i.to_le_bytes());
                let mut k = ffi::MDB_val {
                    mv_size: key.len(),
                    mv_data: key.as_ptr() as *mut c_void,
                };
                let mut d = ffi::MDB_val {
                    mv_size: v.len(),
                    mv_data: v.as_mut_ptr() as *mut c_void,
                };
                ok(
                    "mdb_put",
                    ffi::mdb_put(txn, dbi, &mut k, &mut d, ffi::MDB_APPEND),
                );
                i += 1;
            }
            ok("mdb_txn_commit", ffi::mdb_txn_commit(txn));
        }
        ffi::mdb_env_close(env);
    }
}

/// `i` as 16 decimal digits with leading zeros (the harness's key format),
/// without the formatter, whose cost would hide the engine's.
fn key_of(mut i: u64) -> [u8; 16] {
    let mut k = [b'0'; 16];
    for d in k.iter_mut().rev() {
        *d = b'0' + (i % 10) as u8;
        i /= 10;
    }
    k
}
