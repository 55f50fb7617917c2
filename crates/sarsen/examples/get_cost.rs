//! Instruction counts of point reads, one read transaction per get, for
//! callgrind (the harness's readrandom, without its child processes and its
//! 1 TiB map, which valgrind cannot reserve):
//!
//! ```text
//! cargo build --release -p sarsen --example get_cost
//! valgrind --tool=callgrind --toggle-collect='get_cost::gets' \
//!     target/release/examples/get_cost get 200000 100000    # or renew
//! ```
//!
//! Loads `n` keys (16-byte decimal keys, 100-byte values) in random order,
//! 1,000 per write transaction, as the harness's untimed fillrandom does,
//! then does `gets` gets of keys drawn at random from them. `get` begins
//! and ends a read transaction for each (the harness's Sarsen engine);
//! `renew` keeps one transaction, reset between gets and renewed for each
//! (`reset_in_place`/`renew_in_place`, as the harness's LMDB engine does
//! with `mdb_txn_reset`/`mdb_txn_renew`). The keys are made before the
//! collected function runs. Divide the collected instructions by `gets`.

mod common;

use common::{key, load};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sarsen::{Database, Env, Result};

/// Gets each of `keys`, each in a read transaction of its own (`renew`:
/// one transaction renewed for each get and reset after it); returns the
/// keys found and the sum of their values' first bytes, so that nothing
/// read is optimised away.
#[inline(never)]
fn gets(env: &Env, db: Database, keys: &[[u8; 16]], renew: bool) -> Result<(u64, u64)> {
    let (mut found, mut sum) = (0u64, 0u64);
    if renew {
        let mut r = env.read_txn()?;
        r.reset_in_place();
        for k in keys {
            r.renew_in_place()?;
            if let Some(v) = r.get(db, k)? {
                found += 1;
                sum += u64::from(v.first().copied().unwrap_or(0));
            }
            r.reset_in_place();
        }
    } else {
        for k in keys {
            let r = env.read_txn()?;
            if let Some(v) = r.get(db, k)? {
                found += 1;
                sum += u64::from(v.first().copied().unwrap_or(0));
            }
        }
    }
    Ok((found, sum))
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "get".into());
    let n: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(200_000);
    let count: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let renew = match mode.as_str() {
        "get" => false,
        "renew" => true,
        other => {
            eprintln!("unknown mode {other}: get or renew");
            std::process::exit(2);
        }
    };
    let dir = tempfile::tempdir()?;
    let env = common::open(common::options().read_ahead(false), dir.path())?;
    let db = env.main_db();
    load(&env, db, n)?;
    let mut rng = SmallRng::seed_from_u64(17);
    let keys: Vec<[u8; 16]> = (0..count).map(|_| key(rng.random_range(0..n))).collect();
    let (found, sum) = gets(&env, db, &keys, renew)?;
    println!("{mode}: {found} of {count} found, checksum {sum}");
    Ok(())
}
