//! The harness's fillrandom and overwrite in one process, for instruction
//! counts under callgrind (`valgrind --tool=callgrind`): `N` keys (default
//! 200,000) of 16 bytes with 100-byte values, put in a random order in
//! transactions of 1,000 puts, then all written again in another order, in
//! `NoSync` with a writable map (as the harness runs Sarsen; `common`).
//!
//! ```text
//! cargo build --release -p sarsen --example fill_cost
//! valgrind --tool=callgrind target/release/examples/fill_cost 300000
//! ```
mod common;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

fn main() {
    let n = common::arg(1, 200_000);
    let dir = tempfile::tempdir().unwrap();
    let env = common::open(common::options(), dir.path()).unwrap();
    let db = env.main_db();
    common::load(&env, db, n).unwrap();
    // The overwrite: every key again, in another random order.
    let mut keys: Vec<u64> = (0..n).collect();
    keys.shuffle(&mut SmallRng::seed_from_u64(1));
    for c in keys.chunks(1000) {
        let mut w = env.write_txn().unwrap();
        for &k in c {
            w.put(db, &common::key(k), &[!(k as u8); 100]).unwrap();
        }
        w.commit().unwrap();
    }
    println!("{:?}", env.info().unwrap());
}
