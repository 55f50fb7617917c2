//! The long stress run (`sarsen_fuzz::stress`): one writer, several
//! readers, merges, named databases, periodic reopen and `check`.
//!
//! ```text
//! cargo run --release -p sarsen-fuzz --bin sarsen-stress -- --minutes 10 [--readers 3]
//!     [--epoch-seconds 15] [--seed N] [--dir PATH] [--check-every 50]
//! ```
//! Exit status 0 when nothing failed, 1 on a failure (printed), 2 on bad
//! arguments.

use std::time::Duration;

use sarsen_fuzz::stress::{run, StressConfig};

fn main() {
    let mut cfg = StressConfig {
        seed: rand_seed(),
        ..StressConfig::default()
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let val = args.get(i + 1).cloned().unwrap_or_default();
        let secs = |v: &str| v.parse::<f64>().map(Duration::from_secs_f64).ok();
        let ok = match args[i].as_str() {
            "--minutes" => secs(&val).map(|d| cfg.duration = d * 60).is_some(),
            "--seconds" => secs(&val).map(|d| cfg.duration = d).is_some(),
            "--epoch-seconds" => secs(&val).map(|d| cfg.epoch = d).is_some(),
            "--readers" => val.parse().map(|n| cfg.readers = n).is_ok(),
            "--seed" => val.parse().map(|n| cfg.seed = n).is_ok(),
            "--check-every" => val.parse().map(|n| cfg.check_every = n).is_ok(),
            "--dir" => {
                cfg.dir = Some(val.clone().into());
                true
            }
            "-h" | "--help" => {
                println!("sarsen-stress [--minutes N | --seconds N] [--readers N] [--epoch-seconds N] [--seed N] [--dir PATH] [--check-every N]");
                return;
            }
            _ => false,
        };
        if !ok {
            eprintln!("sarsen-stress: bad argument {} {val}", args[i]);
            std::process::exit(2);
        }
        i += 2;
    }
    eprintln!("sarsen-stress: {cfg:?}");
    match run(&cfg) {
        Ok(rep) => println!("sarsen-stress: OK (seed {}): {rep:#?}", cfg.seed),
        Err(e) => {
            println!("sarsen-stress: FAILED (seed {}): {e}", cfg.seed);
            std::process::exit(1);
        }
    }
}

fn rand_seed() -> u64 {
    rand::random()
}
