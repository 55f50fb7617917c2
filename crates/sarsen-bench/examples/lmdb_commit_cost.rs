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
mod common;

use common::{begin, key_of, ok, put};
use ffi::{MDB_dbi, MDB_env};
use lmdb_master_sys as ffi;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Puts one value under each of `keys` in write transactions of their own.
///
/// # Safety
///
/// `env` is open and `dbi` is a handle of it.
#[inline(never)]
unsafe fn commits(env: *mut MDB_env, dbi: MDB_dbi, keys: &[[u8; 16]]) {
    let mut v = [0u8; 100];
    for (i, key) in keys.iter().enumerate() {
        v.fill(i as u8);
        let txn = begin(env);
        put(txn, dbi, key, &v, 0);
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
    let mut rng = SmallRng::seed_from_u64(7);
    let keys: Vec<[u8; 16]> = (0..m).map(|_| key_of(rng.random_range(0..n))).collect();
    // SAFETY: each handle comes from a successful LMDB call and is used only on
    // this thread while it is open; every MDB_val points at live Rust bytes.
    unsafe {
        let env = common::open(dir.path(), !pwrite);
        let dbi = common::load(env, n);
        let t = std::time::Instant::now();
        commits(env, dbi, &keys);
        eprintln!("{} commits in {:.3} s", m, t.elapsed().as_secs_f64());
        ffi::mdb_env_close(env);
    }
}
