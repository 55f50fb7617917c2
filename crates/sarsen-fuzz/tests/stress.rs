//! The stress run, bounded for CI: a few seconds of one writer and three
//! readers with two reopens. Longer: `SARSEN_STRESS_SECONDS=600`, or the
//! `sarsen-stress` binary (`--minutes N`).

use std::time::Duration;

use sarsen_fuzz::stress::{run, StressConfig};

#[test]
fn stress_bounded() {
    let secs: f64 = std::env::var("SARSEN_STRESS_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4.0);
    let cfg = StressConfig {
        duration: Duration::from_secs_f64(secs),
        epoch: Duration::from_secs_f64((secs / 3.0).clamp(0.5, 15.0)),
        readers: 3,
        seed: sarsen_fuzz::base_seed("stress"),
        dir: None,
        check_every: 25,
    };
    let rep = run(&cfg).unwrap_or_else(|e| panic!("stress (SARSEN_SEED={}): {e}", cfg.seed));
    eprintln!("[stress] {rep:?}");
    assert!(rep.epochs >= 2, "{rep:?}");
    assert!(rep.commits > 20 && rep.merges > 0, "{rep:?}");
    assert!(
        rep.snapshots_verified > 0 && rep.entries_compared > 0,
        "{rep:?}"
    );
}
