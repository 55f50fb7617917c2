//! The harness's fillrandom and overwrite (or deleterandom) in one process,
//! for instruction counts under callgrind (`valgrind --tool=callgrind`): `N`
//! keys (default 200,000) of 16 bytes with 100-byte values, put in a random
//! order in transactions of 1,000 puts, then all written again in another
//! order, or with `delete` all deleted in another order, 1,000 per
//! transaction, in `NoSync` with a writable map (as the harness runs
//! Sarsen; `common`). Prints the second phase's wall-clock time to stderr.
//!
//! ```text
//! cargo build --release -p sarsen --example fill_cost
//! valgrind --tool=callgrind target/release/examples/fill_cost 300000
//! valgrind --tool=callgrind --toggle-collect='fill_cost::delete_all' \
//!     target/release/examples/fill_cost 300000 delete
//! ```
mod common;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use sarsen::{Database, Env};

/// Writes every key of `keys` again, 1,000 per write transaction.
#[inline(never)]
fn overwrite(env: &Env, db: Database, keys: &[u64]) {
    for c in keys.chunks(1000) {
        let mut w = env.write_txn().unwrap();
        for &k in c {
            w.put(db, &common::key(k), &[!(k as u8); 100]).unwrap();
        }
        w.commit().unwrap();
    }
}

/// Deletes every key of `keys`, 1,000 per write transaction.
#[inline(never)]
fn delete_all(env: &Env, db: Database, keys: &[u64]) {
    for c in keys.chunks(1000) {
        let mut w = env.write_txn().unwrap();
        for &k in c {
            assert!(w.delete(db, &common::key(k)).unwrap());
        }
        w.commit().unwrap();
    }
}

fn main() {
    let n = common::arg(1, 200_000);
    let delete = std::env::args().nth(2).is_some_and(|a| a == "delete");
    let dir = tempfile::tempdir().unwrap();
    let env = common::open(common::options(), dir.path()).unwrap();
    let db = env.main_db();
    common::load(&env, db, n).unwrap();
    // Every key again, in another random order.
    let mut keys: Vec<u64> = (0..n).collect();
    keys.shuffle(&mut SmallRng::seed_from_u64(1));
    let t = std::time::Instant::now();
    if delete {
        delete_all(&env, db, &keys);
    } else {
        overwrite(&env, db, &keys);
    }
    eprintln!("second phase: {:.3} s", t.elapsed().as_secs_f64());
    println!("{:?}", env.info().unwrap());
}
