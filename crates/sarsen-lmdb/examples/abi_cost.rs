//! The cost of the C API layer: the same workloads through Sarsen's Rust
//! API and through the `mdb_*` functions (called from Rust through the
//! rlib: the code path a C caller takes, less the PLT), each phase in a
//! function of its own (`rust_*`, `c_*`), so that a profiler's inclusive
//! count of a phase's function is that phase's cost.
//!
//! ```sh
//! cargo run --release -p sarsen-lmdb --example abi_cost [N]
//! # repeatable instruction counts (N ops per phase; divide by N):
//! valgrind --tool=callgrind --callgrind-out-file=cg.out target/release/examples/abi_cost 20000
//! callgrind_annotate --inclusive=yes cg.out | grep -E 'abi_cost::(rust|c)_'
//! ```
//!
//! Both sides use a 4 GiB upper bound so that they run under valgrind
//! (the C side falls back to it when 1 TiB of address space is refused).

use std::ffi::CString;
use std::hint::black_box;
use std::ptr;
use std::time::Instant;

use lmdb::*;

const VALUE: [u8; 100] = [b'x'; 100];

fn key(i: u64) -> [u8; 12] {
    let mut k = [0u8; 12];
    k.copy_from_slice(format!("{i:012}").as_bytes());
    k
}

fn ok(rc: i32) {
    assert_eq!(rc, 0, "{}", lmdb::error::describe(rc));
}

fn val(b: &[u8]) -> MDB_val {
    MDB_val {
        mv_size: b.len(),
        mv_data: b.as_ptr() as *mut _,
    }
}

/// Runs `f` and returns its nanoseconds per one of `n` operations.
fn time(n: usize, f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_nanos() as f64 / n as f64
}

#[inline(never)]
fn rust_put(env: &sarsen::Env, keys: &[[u8; 12]]) {
    let db = env.main_db();
    let mut w = env.write_txn().unwrap();
    for k in keys {
        w.put(db, k, &VALUE).unwrap();
    }
    w.commit().unwrap();
}

#[inline(never)]
fn rust_get(env: &sarsen::Env, keys: &[[u8; 12]]) {
    let (db, r) = (env.main_db(), env.read_txn().unwrap());
    for k in keys {
        black_box(r.get(db, k).unwrap().unwrap().len());
    }
}

/// A read transaction per get (the `sarsen` bench engine's reader).
#[inline(never)]
fn rust_txn_get(env: &sarsen::Env, keys: &[[u8; 12]]) {
    let db = env.main_db();
    for k in keys {
        let r = env.read_txn().unwrap();
        black_box(r.get(db, k).unwrap().unwrap().len());
    }
}

#[inline(never)]
fn rust_scan(env: &sarsen::Env) {
    let r = env.read_txn().unwrap();
    let mut c = r.cursor(env.main_db()).unwrap();
    while let Some((_, v)) = c.next().unwrap() {
        black_box(v.len());
    }
}

#[inline(never)]
fn rust_txn(env: &sarsen::Env, n: usize) {
    for _ in 0..n {
        drop(black_box(env.read_txn().unwrap()));
    }
}

/// # Safety
/// `env` is open; no transaction is live.
#[inline(never)]
unsafe fn c_put(env: *mut MDB_env, dbi: MDB_dbi, keys: &[[u8; 12]]) {
    let mut txn = ptr::null_mut();
    // SAFETY: per the contract; every pointer is live.
    unsafe {
        ok(mdb_txn_begin(env, ptr::null_mut(), 0, &mut txn));
        for k in keys {
            ok(mdb_put(txn, dbi, &mut val(k), &mut val(&VALUE), 0));
        }
        ok(mdb_txn_commit(txn));
    }
}

/// # Safety
/// As [`c_put`].
#[inline(never)]
unsafe fn c_get(env: *mut MDB_env, dbi: MDB_dbi, keys: &[[u8; 12]]) {
    let (mut txn, mut out) = (ptr::null_mut(), val(&[]));
    // SAFETY: per the contract; every pointer is live.
    unsafe {
        ok(mdb_txn_begin(env, ptr::null_mut(), MDB_RDONLY, &mut txn));
        for k in keys {
            ok(mdb_get(txn, dbi, &mut val(k), &mut out));
            black_box(out.mv_size);
        }
        mdb_txn_abort(txn);
    }
}

/// A read transaction renewed per get and reset after (the `lmdb` and
/// `sarsen-capi` bench engines' reader).
///
/// # Safety
/// As [`c_put`].
#[inline(never)]
unsafe fn c_renew_get(env: *mut MDB_env, dbi: MDB_dbi, keys: &[[u8; 12]]) {
    let (mut txn, mut out) = (ptr::null_mut(), val(&[]));
    // SAFETY: per the contract; every pointer is live.
    unsafe {
        ok(mdb_txn_begin(env, ptr::null_mut(), MDB_RDONLY, &mut txn));
        mdb_txn_reset(txn);
        for k in keys {
            ok(mdb_txn_renew(txn));
            ok(mdb_get(txn, dbi, &mut val(k), &mut out));
            black_box(out.mv_size);
            mdb_txn_reset(txn);
        }
        mdb_txn_abort(txn);
    }
}

/// # Safety
/// As [`c_put`].
#[inline(never)]
unsafe fn c_scan(env: *mut MDB_env, dbi: MDB_dbi) {
    let (mut txn, mut c) = (ptr::null_mut(), ptr::null_mut());
    let (mut k, mut v) = (val(&[]), val(&[]));
    // SAFETY: per the contract; every pointer is live.
    unsafe {
        ok(mdb_txn_begin(env, ptr::null_mut(), MDB_RDONLY, &mut txn));
        ok(mdb_cursor_open(txn, dbi, &mut c));
        while mdb_cursor_get(c, &mut k, &mut v, MDB_NEXT) == 0 {
            black_box(v.mv_size);
        }
        mdb_cursor_close(c);
        mdb_txn_abort(txn);
    }
}

/// # Safety
/// As [`c_put`].
#[inline(never)]
unsafe fn c_txn(env: *mut MDB_env, n: usize) {
    let mut txn = ptr::null_mut();
    for _ in 0..n {
        // SAFETY: per the contract.
        unsafe {
            ok(mdb_txn_begin(env, ptr::null_mut(), MDB_RDONLY, &mut txn));
            mdb_txn_abort(txn);
        }
    }
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000);
    let order: Vec<[u8; 12]> = (0..n as u64).map(|i| key(i * 7919 % n as u64)).collect();
    let probe: Vec<[u8; 12]> = (0..n as u64).map(|i| key(i * 104_729 % n as u64)).collect();

    let dir = tempfile::tempdir().unwrap();
    // SAFETY: nothing else touches the files.
    let env = unsafe {
        sarsen::EnvOptions::new()
            .durability(sarsen::Durability::NoSync)
            .max_size(4 << 30)
            .open(dir.path())
    }
    .unwrap();
    let rust = [
        time(n, || rust_put(&env, &order)),
        time(n, || rust_get(&env, &probe)),
        time(n, || rust_txn_get(&env, &probe)),
        time(n, || rust_scan(&env)),
        time(n, || rust_txn(&env, n)),
    ];
    drop(env);

    let dir2 = tempfile::tempdir().unwrap();
    let p = CString::new(dir2.path().to_str().unwrap()).unwrap();
    // SAFETY: live handles throughout, one thread.
    let c = unsafe {
        let mut env = ptr::null_mut();
        ok(mdb_env_create(&mut env));
        ok(mdb_env_open(env, p.as_ptr(), MDB_NOSYNC, 0o644));
        let (mut txn, mut dbi) = (ptr::null_mut(), 0);
        ok(mdb_txn_begin(env, ptr::null_mut(), 0, &mut txn));
        ok(mdb_dbi_open(txn, ptr::null(), 0, &mut dbi));
        ok(mdb_txn_commit(txn));
        let c = [
            time(n, || c_put(env, dbi, &order)),
            time(n, || c_get(env, dbi, &probe)),
            time(n, || c_renew_get(env, dbi, &probe)),
            time(n, || c_scan(env, dbi)),
            time(n, || c_txn(env, n)),
        ];
        mdb_env_close(env);
        c
    };
    println!("ns/op                      Rust API   C API   C/Rust");
    let names = [
        "put (one write txn)",
        "get (one read txn)",
        "get (a read txn each)",
        "scan (MDB_NEXT)",
        "read txn begin+abort",
    ];
    for ((name, r), c) in names.iter().zip(rust).zip(c) {
        println!("{name:<24} {r:>9.0} {c:>7.0} {:>8.2}", c / r);
    }
}
