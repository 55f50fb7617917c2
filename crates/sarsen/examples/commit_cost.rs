//! Instruction counts of one-put write transactions, for callgrind (the
//! writer of the harness's readwhilewriting, without its reader threads):
//!
//! ```text
//! cargo build --release -p sarsen --example commit_cost
//! valgrind --tool=callgrind --toggle-collect='commit_cost::commits' \
//!     target/release/examples/commit_cost 100000 30000 [pwrite]
//! ```
//!
//! Loads `n` keys (16-byte decimal keys, 100-byte values) in random order,
//! 1,000 per write transaction, then makes `m` write transactions that each
//! put one key drawn at random from them and commit, in `NoSync` with a
//! writable map (the harness's settings; `pwrite`: without it, the default
//! mode). Divide the collected instructions
//! by `m`. Prints the commits' wall-clock time to stderr.

mod common;

use common::{key, load};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sarsen::{Database, Env, Result};

/// Commits one put of each of `keys`, each in a write transaction of its own.
#[inline(never)]
fn commits(env: &Env, db: Database, keys: &[[u8; 16]]) -> Result<()> {
    for (i, k) in keys.iter().enumerate() {
        let mut w = env.write_txn()?;
        w.put(db, k, &[i as u8; 100])?;
        w.commit()?;
    }
    Ok(())
}

fn main() -> Result<()> {
    let n = common::arg(1, 100_000);
    let m = common::arg(2, 30_000);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let pwrite = std::env::args().nth(3).is_some_and(|a| a == "pwrite");
    let env = common::open(common::options().write_map(!pwrite), dir.path())?;
    let db = env.main_db();
    load(&env, db, n)?;
    let mut rng = SmallRng::seed_from_u64(7);
    let keys: Vec<[u8; 16]> = (0..m).map(|_| key(rng.random_range(0..n))).collect();
    let t = std::time::Instant::now();
    commits(&env, db, &keys)?;
    eprintln!("{} commits in {:.3} s", m, t.elapsed().as_secs_f64());
    println!("{:?}", env.info()?);
    Ok(())
}
