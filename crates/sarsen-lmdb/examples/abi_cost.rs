//! The cost of the C API layer: the same workloads through Sarsen's Rust
//! API and through the `mdb_*` functions (called from Rust through the
//! rlib: the code path a C caller takes, less the PLT).
//!
//! `cargo run --release -p sarsen-lmdb --example abi_cost [N]`

use std::ffi::CString;
use std::ptr;
use std::time::Instant;

use lmdb::*;

fn key(i: u64) -> [u8; 12] {
    let mut k = [0u8; 12];
    k.copy_from_slice(format!("{i:012}").as_bytes());
    k
}

fn ns(t: Instant, n: u64) -> f64 {
    t.elapsed().as_nanos() as f64 / n as f64
}

fn ok(rc: i32) {
    assert_eq!(rc, 0, "{}", lmdb::error::describe(rc));
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000);
    let order: Vec<u64> = (0..n).map(|i| i * 7919 % n).collect();
    let probe: Vec<u64> = (0..n).map(|i| i * 104_729 % n).collect();
    let val = [b'x'; 100];

    // Sarsen's Rust API.
    let dir = tempfile::tempdir().unwrap();
    // SAFETY: nothing else touches the files.
    let env = unsafe {
        sarsen::EnvOptions::new()
            .durability(sarsen::Durability::NoSync)
            .open(dir.path())
    }
    .unwrap();
    let db = env.main_db();
    let t = Instant::now();
    let mut w = env.write_txn().unwrap();
    for &i in &order {
        w.put(db, &key(i), &val).unwrap();
    }
    w.commit().unwrap();
    let rust_put = ns(t, n);
    let t = Instant::now();
    let r = env.read_txn().unwrap();
    let mut sum = 0usize;
    for &i in &probe {
        sum += r.get(db, &key(i)).unwrap().unwrap().len();
    }
    let rust_get = ns(t, n);
    let t = Instant::now();
    let mut c = r.cursor(db).unwrap();
    while let Some((_, v)) = c.next().unwrap() {
        sum += v.len();
    }
    let rust_scan = ns(t, n);
    drop(c);
    drop(r);
    let t = Instant::now();
    for _ in 0..n / 10 {
        drop(env.read_txn().unwrap());
    }
    let rust_ro = ns(t, n / 10);
    drop(env);

    // The C API.
    let dir2 = tempfile::tempdir().unwrap();
    let p = CString::new(dir2.path().to_str().unwrap()).unwrap();
    let (mut cp, mut cg, mut cs, mut cr) = (0.0, 0.0, 0.0, 0.0);
    // SAFETY: live handles throughout, one thread.
    unsafe {
        let mut env = ptr::null_mut();
        ok(mdb_env_create(&mut env));
        ok(mdb_env_open(env, p.as_ptr(), MDB_NOSYNC, 0o644));
        let mut txn = ptr::null_mut();
        let mut dbi = 0;
        let t = Instant::now();
        ok(mdb_txn_begin(env, ptr::null_mut(), 0, &mut txn));
        ok(mdb_dbi_open(txn, ptr::null(), 0, &mut dbi));
        for &i in &order {
            let k = key(i);
            let mut kv = MDB_val {
                mv_size: 12,
                mv_data: k.as_ptr() as *mut _,
            };
            let mut vv = MDB_val {
                mv_size: 100,
                mv_data: val.as_ptr() as *mut _,
            };
            ok(mdb_put(txn, dbi, &mut kv, &mut vv, 0));
        }
        ok(mdb_txn_commit(txn));
        cp += ns(t, n);
        let t = Instant::now();
        ok(mdb_txn_begin(env, ptr::null_mut(), MDB_RDONLY, &mut txn));
        let mut out = MDB_val {
            mv_size: 0,
            mv_data: ptr::null_mut(),
        };
        for &i in &probe {
            let k = key(i);
            let mut kv = MDB_val {
                mv_size: 12,
                mv_data: k.as_ptr() as *mut _,
            };
            ok(mdb_get(txn, dbi, &mut kv, &mut out));
            sum += out.mv_size;
        }
        cg += ns(t, n);
        let t = Instant::now();
        let mut c = ptr::null_mut();
        ok(mdb_cursor_open(txn, dbi, &mut c));
        let mut kv = out;
        while mdb_cursor_get(c, &mut kv, &mut out, MDB_NEXT) == 0 {
            sum += out.mv_size;
        }
        mdb_cursor_close(c);
        mdb_txn_abort(txn);
        cs += ns(t, n);
        let t = Instant::now();
        for _ in 0..n / 10 {
            ok(mdb_txn_begin(env, ptr::null_mut(), MDB_RDONLY, &mut txn));
            mdb_txn_abort(txn);
        }
        cr += ns(t, n / 10);
        mdb_env_close(env);
    }
    println!("ns/op        Rust API   C API   C/Rust");
    for (name, r, c) in [
        ("put", rust_put, cp),
        ("get", rust_get, cg),
        ("scan", rust_scan, cs),
        ("read txn", rust_ro, cr),
    ] {
        println!("{name:<10} {r:>9.0} {c:>7.0} {:>8.2}", c / r);
    }
    assert!(sum > 0);
}
