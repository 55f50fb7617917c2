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
use std::ffi::{c_void, CString};
use std::ptr;

use ffi::{MDB_dbi, MDB_env, MDB_val};
use lmdb_master_sys as ffi;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

/// Panics with the call's name unless LMDB returned success.
fn ok(call: &str, rc: i32) {
    assert_eq!(rc, ffi::MDB_SUCCESS, "{call} failed: {rc}");
}

/// An empty `MDB_val` for LMDB to fill.
fn empty() -> MDB_val {
    MDB_val {
        mv_size: 0,
        mv_data: ptr::null_mut(),
    }
}

/// Begins a write transaction.
///
/// # Safety
///
/// `env` is open.
unsafe fn begin(env: *mut MDB_env) -> *mut ffi::MDB_txn {
    let mut txn = ptr::null_mut();
    ok(
        "mdb_txn_begin",
        ffi::mdb_txn_begin(env, ptr::null_mut(), 0, &mut txn),
    );
    txn
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
    let path = CString::new(dir.path().to_str().unwrap()).unwrap();
    let mut order: Vec<u64> = (0..n).collect();
    order.shuffle(&mut SmallRng::seed_from_u64(301));
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
        for (c, chunk) in order.chunks(1000).enumerate() {
            let txn = begin(env);
            if c == 0 {
                ok(
                    "mdb_dbi_open",
                    ffi::mdb_dbi_open(txn, ptr::null(), 0, &mut dbi),
                );
            }
            for &i in chunk {
                let key = key_of(i);
                let mut v = [i as u8; 100];
                let mut k = MDB_val {
                    mv_size: key.len(),
                    mv_data: key.as_ptr() as *mut c_void,
                };
                let mut d = MDB_val {
                    mv_size: v.len(),
                    mv_data: v.as_mut_ptr() as *mut c_void,
                };
                ok("mdb_put", ffi::mdb_put(txn, dbi, &mut k, &mut d, 0));
            }
            ok("mdb_txn_commit", ffi::mdb_txn_commit(txn));
        }
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

/// `i` as 16 decimal digits with leading zeros (the harness's key format).
fn key_of(mut i: u64) -> [u8; 16] {
    let mut k = [b'0'; 16];
    for d in k.iter_mut().rev() {
        *d = b'0' + (i % 10) as u8;
        i /= 10;
    }
    k
}
