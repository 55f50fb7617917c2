//! LMDB's side of `sarsen/examples/cursor_cost.rs`, for instruction counts
//! under callgrind: loads `n` keys (default 100,000; 16-byte decimal keys,
//! 100-byte values) in the same random order, 1,000 per write transaction,
//! with `MDB_WRITEMAP | MDB_NOSYNC | MDB_NOMETASYNC` (as the harness runs
//! LMDB) and a 1 GiB map; then `retain` walks every key with `MDB_NEXT` in
//! one write transaction and deletes (`mdb_cursor_del`) those whose hash
//! `cursor_cost` picks, or `popfront` deletes the first key (`MDB_FIRST`)
//! `n` times, 1,000 per transaction. Divide the collected instructions by
//! `n`.
//!
//! ```text
//! cargo build --release -p sarsen-bench --example lmdb_cursor_cost
//! valgrind --tool=callgrind --toggle-collect='lmdb_cursor_cost::retain' \
//!     target/release/examples/lmdb_cursor_cost retain 100000
//! valgrind --tool=callgrind --toggle-collect='lmdb_cursor_cost::pop_front' \
//!     target/release/examples/lmdb_cursor_cost popfront 100000
//! ```
use std::ptr;

mod common;

use common::{begin, ok};
use ffi::{MDB_dbi, MDB_env, MDB_val};
use lmdb_master_sys as ffi;

/// An empty `MDB_val` for LMDB to fill.
fn empty() -> MDB_val {
    MDB_val {
        mv_size: 0,
        mv_data: ptr::null_mut(),
    }
}

/// Deletes every key whose hash is odd (as `cursor_cost::retain`); returns
/// the deletes.
///
/// # Safety
///
/// `env` is open and `dbi` is a handle of it.
#[inline(never)]
unsafe fn retain(env: *mut MDB_env, dbi: MDB_dbi) -> u64 {
    let txn = begin(env);
    let mut c = ptr::null_mut();
    ok("mdb_cursor_open", ffi::mdb_cursor_open(txn, dbi, &mut c));
    let mut gone = 0;
    let (mut k, mut v) = (empty(), empty());
    // After `mdb_cursor_del` the cursor rests on the next pair, and
    // `MDB_NEXT` returns that pair.
    while ffi::mdb_cursor_get(c, &mut k, &mut v, ffi::MDB_NEXT) == ffi::MDB_SUCCESS {
        let key = std::slice::from_raw_parts(k.mv_data as *const u8, k.mv_size);
        let h = key.iter().fold(0u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        if (h >> 7) & 1 == 1 {
            ok("mdb_cursor_del", ffi::mdb_cursor_del(c, 0));
            gone += 1;
        }
    }
    ffi::mdb_cursor_close(c);
    ok("mdb_txn_commit", ffi::mdb_txn_commit(txn));
    gone
}

/// Deletes the first key `n` times, 1,000 per transaction.
///
/// # Safety
///
/// `env` is open and `dbi` is a handle of it.
#[inline(never)]
unsafe fn pop_front(env: *mut MDB_env, dbi: MDB_dbi, n: u64) -> u64 {
    let mut gone = 0;
    while gone < n {
        let txn = begin(env);
        let mut c = ptr::null_mut();
        ok("mdb_cursor_open", ffi::mdb_cursor_open(txn, dbi, &mut c));
        let end = (gone + 1000).min(n);
        let (mut k, mut v) = (empty(), empty());
        while gone < end
            && ffi::mdb_cursor_get(c, &mut k, &mut v, ffi::MDB_FIRST) == ffi::MDB_SUCCESS
        {
            ok("mdb_cursor_del", ffi::mdb_cursor_del(c, 0));
            gone += 1;
        }
        ffi::mdb_cursor_close(c);
        ok("mdb_txn_commit", ffi::mdb_txn_commit(txn));
    }
    gone
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "retain".into());
    let n: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let dir = tempfile::tempdir().unwrap();
    // SAFETY: each handle comes from a successful LMDB call and is used only on
    // this thread while it is open.
    unsafe {
        let env = common::open(dir.path(), true);
        let dbi = common::load(env, n);
        let gone = match mode.as_str() {
            "retain" => retain(env, dbi),
            "popfront" => pop_front(env, dbi, n),
            other => {
                eprintln!("unknown mode {other}: retain or popfront");
                std::process::exit(2);
            }
        };
        println!("{mode}: {gone} deleted of {n}");
        ffi::mdb_env_close(env);
    }
}
