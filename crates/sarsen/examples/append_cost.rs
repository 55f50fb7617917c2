//! The harness's fillseq in one process, for instruction counts under
//! callgrind (`valgrind --tool=callgrind`): `N` keys (default 200,000) of 16
//! bytes in ascending order with 100-byte values, written with
//! `RwTxn::append` in transactions of 1,000 puts, in `NoSync` with a
//! writable map (as the harness runs Sarsen). The map is capped at 1 GiB so
//! that valgrind can reserve it.
//!
//! ```text
//! cargo build --release -p sarsen --example append_cost
//! valgrind --tool=callgrind target/release/examples/append_cost 300000
//! ```
fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000);
    let dir = tempfile::tempdir().unwrap();
    // SAFETY: the directory is this process's own temporary directory; nothing
    // else maps or changes its files.
    let env = unsafe {
        sarsen::EnvOptions::new()
            .durability(sarsen::Durability::NoSync)
            .write_map(true)
            .max_size(1 << 30)
            .open(dir.path())
    }
    .unwrap();
    let db = env.main_db();
    let mut v = [7u8; 100];
    let mut i = 0;
    while i < n {
        let mut w = env.write_txn().unwrap();
        for _ in 0..1000.min(n - i) {
            let key = key_of(i);
            v[..8].copy_from_slice(&i.to_le_bytes());
            w.append(db, &key, &v).unwrap();
            i += 1;
        }
        w.commit().unwrap();
    }
    println!("{:?}", env.info().unwrap());
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
