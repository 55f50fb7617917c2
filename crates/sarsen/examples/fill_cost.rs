//! The harness's fillrandom and overwrite in one process, for instruction
//! counts under callgrind (`valgrind --tool=callgrind`): `N` keys (default
//! 200,000) of 16 bytes with 100-byte values, put in a random order in
//! transactions of 1,000 puts, then all written again, in `NoSync` with a
//! writable map (as the harness runs Sarsen). The map is capped at 1 GiB
//! so that valgrind can reserve it.
//!
//! ```text
//! cargo build --release -p sarsen --example fill_cost
//! valgrind --tool=callgrind target/release/examples/fill_cost 300000
//! ```
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
fn main() {
    let n: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000);
    let dir = tempfile::tempdir().unwrap();
    let env = unsafe {
        sarsen::EnvOptions::new()
            .durability(sarsen::Durability::NoSync)
            .write_map(true)
            .max_size(1 << 30)
            .open(dir.path())
    }
    .unwrap();
    let db = env.main_db();
    let mut keys: Vec<u32> = (0..n).collect();
    keys.shuffle(&mut StdRng::seed_from_u64(1));
    let v = [7u8; 100];
    for round in 0..2u8 {
        for c in keys.chunks(1000) {
            let mut w = env.write_txn().unwrap();
            for &k in c {
                let key = format!("{:016}", k);
                let mut val = v;
                val[0] = round;
                w.put(db, key.as_bytes(), &val).unwrap();
            }
            w.commit().unwrap();
        }
    }
    println!("{:?}", env.info().unwrap());
}
