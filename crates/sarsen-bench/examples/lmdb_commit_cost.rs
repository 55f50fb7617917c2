//! LMDB's side of `sarsen/examples/commit_cost.rs`, for instruction counts
//! under callgrind: loads `n` keys (default 100,000; 16-byte decimal keys,
//! 100-byte values) in the same random order, 1,000 per write transaction,
//! then makes `m` write transactions (default 30,000) that each put one key
//! drawn at random from them (the same draws) and commit, with
//! `MDB_WRITEMAP | MDB_NOSYNC | MDB_NOMETASYNC` (as the harness runs LMDB;
//! `pwrite` as the third argument: without `MDB_WRITEMAP`) and a 1 GiB map.
//! Divide the collected instructions by `m`.
//!
//! ```text
//! cargo build --release -p sarsen-bench --example lmdb_commit_cost
//! valgrind --tool=callgrind --toggle-collect='lmdb_commit_cost::commits' \
//!     target/release/examples/lmdb_commit_cost 100000 30000 [pwrite]
//! ```
use std::ffi::{c_void, CString};
use std::ptr;

use ffi::{MDB_dbi, MDB_env};
use lmdb_master_sys as ffi;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

/// Panics with the call's name unless LMDB returned success.
fn ok(call: &str, rc: i32) {
    assert_eq!(rc, ffi::MDB_SUCCESS, "{call} failed: {rc}");
}

/// Puts `value` under each of `keys` in write transactions of their own.
///
/// # Safety
///
/// `env` is open and `dbi` is a handle of it.
#[inline(never)]
unsafe fn commits(env: *mut MDB_env, dbi: MDB_dbi, keys: &[[u8; 16]]) {
    let mut v = [0u8; 100];
    for (i, key) in keys.iter().enumerate() {
        v.fill(i as u8);
        let mut txn = ptr::null_mut();
        ok(
            "mdb_txn_begin",
            ffi::mdb_txn_begin(env, ptr::null_mut(), 0, &mut txn),
        );
        let mut k = ffi::MDB_val {
            mv_size: key.len(),
            mv_data: key.as_ptr() as *mut c_void,
        };
        let mut d = ffi::MDB_val {
            mv_size: v.len(),
            mv_data: v.as_mut_ptr() as *mut c_void,
        };
        ok("mdb_put", ffi::mdb_put(txn, dbi, &mut k, &mut d, 0));
        ok("mdb_txn_commit", ffi::mdb_txn_commit(txn));
    }
}

fn main() {
    let arg = |i: usize, d: u64| {
        std::env::args()
            .nth(i)
            .and_then(|s| s.parse().ok())
            .unwrap_or(d)
    };
    let (n, m) = (arg(1, 100_000), arg(2, 30_000));
    let pwrite = std::env::args().nth(3).is_some_and(|a| a == "pwrite");
    let dir = tempfile::tempdir().unwrap();
    let path = CString::new(dir.path().to_str().unwrap()).unwrap();
    let mut order: Vec<u64> = (0..n).collect();
    order.shuffle(&mut SmallRng::seed_from_u64(301));
    let mut rng = SmallRng::seed_from_u64(7);
    let keys: Vec<[u8; 16]> = (0..m).map(|_| key_of(rng.random_range(0..n))).collect();
    // SAFETY: each handle comes from a successful LMDB call and is used only on
    // this thread while it is open; every MDB_val points at live Rust bytes.
    unsafe {
        let mut env = ptr::null_mut();
        ok("mdb_env_create", ffi::mdb_env_create(&mut env));
        ok(
            "mdb_env_set_mapsize",
            ffi::mdb_env_set_mapsize(env, 1 << 30),
        );
        let mut flags = ffi::MDB_NOSYNC | ffi::MDB_NOMETASYNC;
        if !pwrite {
            flags |= ffi::MDB_WRITEMAP;
        }
        ok(
            "mdb_env_open",
            ffi::mdb_env_open(env, path.as_ptr(), flags, 0o644),
        );
        let mut dbi = 0;
        for (c, chunk) in order.chunks(1000).enumerate() {
            let mut txn = ptr::null_mut();
            ok(
                "mdb_txn_begin",
                ffi::mdb_txn_begin(env, ptr::null_mut(), 0, &mut txn),
            );
            if c == 0 {
                ok(
                    "mdb_dbi_open",
                    ffi::mdb_dbi_open(txn, ptr::null(), 0, &mut dbi),
                );
            }
            for &i in chunk {
                let key = key_of(i);
                let mut v = [i as u8; 100];
                let mut k = ffi::MDB_val {
                    mv_size: key.len(),
                    mv_data: key.as_ptr() as *mut c_void,
                };
                let mut d = ffi::MDB_val {
                    mv_size: v.len(),
                    mv_data: v.as_mut_ptr() as *mut c_void,
                };
                ok("mdb_put", ffi::mdb_put(txn, dbi, &mut k, &mut d, 0));
            }
            ok("mdb_txn_commit", ffi::mdb_txn_commit(txn));
        }
        let t = std::time::Instant::now();
        commits(env, dbi, &keys);
        eprintln!("{} commits in {:.3} s", m, t.elapsed().as_secs_f64());
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
