//! What the instruction-count drivers share (`*_cost.rs`): the harness's
//! keys, its random load, and an environment set up as the harness runs
//! Sarsen, with the map capped at 1 GiB so that valgrind can reserve it.

#![allow(dead_code)] // each driver uses its share

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use sarsen::{Database, Durability, Env, EnvOptions, Result};

/// The `n` of the command line's argument `at` (after the program name),
/// or `default`.
pub fn arg(at: usize, default: u64) -> u64 {
    std::env::args()
        .nth(at)
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Key `i`: 16 decimal digits with leading zeros (the harness's key
/// format), without the formatter, whose cost would hide the engine's.
pub fn key(i: u64) -> [u8; 16] {
    let mut k = [b'0'; 16];
    let mut x = i;
    for b in k.iter_mut().rev() {
        *b = b'0' + (x % 10) as u8;
        x /= 10;
    }
    k
}

/// `NoSync`, a writable map (the harness's settings for Sarsen), a 1 GiB
/// upper bound.
pub fn options() -> EnvOptions {
    EnvOptions::new()
        .durability(Durability::NoSync)
        .write_map(true)
        .max_size(1 << 30)
}

/// Opens `o` in `dir`, a temporary directory of this process's own.
pub fn open(o: EnvOptions, dir: &std::path::Path) -> Result<Env> {
    // SAFETY: the directory is this process's own; nothing else maps it.
    unsafe { o.open(dir) }
}

/// Puts keys `0..n` in a random order (seed 301), 1,000 per transaction,
/// each with 100 bytes of its index's low byte.
pub fn load(env: &Env, db: Database, n: u64) -> Result<()> {
    let mut order: Vec<u64> = (0..n).collect();
    order.shuffle(&mut SmallRng::seed_from_u64(301));
    for chunk in order.chunks(1000) {
        let mut w = env.write_txn()?;
        for &i in chunk {
            w.put(db, &key(i), &[i as u8; 100])?;
        }
        w.commit()?;
    }
    Ok(())
}
