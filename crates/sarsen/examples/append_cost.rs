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
mod common;

fn main() {
    let n = common::arg(1, 200_000);
    let dir = tempfile::tempdir().unwrap();
    let env = common::open(common::options(), dir.path()).unwrap();
    let db = env.main_db();
    let mut v = [7u8; 100];
    let mut i = 0;
    while i < n {
        let mut w = env.write_txn().unwrap();
        for _ in 0..1000.min(n - i) {
            let key = common::key(i);
            v[..8].copy_from_slice(&i.to_le_bytes());
            w.append(db, &key, &v).unwrap();
            i += 1;
        }
        w.commit().unwrap();
    }
    println!("{:?}", env.info().unwrap());
}
