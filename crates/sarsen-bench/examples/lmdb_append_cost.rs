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
mod common;

use common::{begin, key_of, main_db, ok, put};
use lmdb_master_sys as ffi;

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000);
    let dir = tempfile::tempdir().unwrap();
    let mut v = [7u8; 100];
    // SAFETY: each handle comes from a successful LMDB call and is used only on
    // this thread while it is open; every MDB_val points at live Rust bytes.
    unsafe {
        let env = common::open(dir.path(), true);
        let mut dbi = None;
        let mut i = 0;
        while i < n {
            let txn = begin(env);
            let db = *dbi.get_or_insert_with(|| main_db(txn));
            for _ in 0..1000.min(n - i) {
                v[..8].copy_from_slice(&i.to_le_bytes());
                put(txn, db, &key_of(i), &v, ffi::MDB_APPEND);
                i += 1;
            }
            ok("mdb_txn_commit", ffi::mdb_txn_commit(txn));
        }
        ffi::mdb_env_close(env);
    }
}
