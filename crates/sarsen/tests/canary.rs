//! The canary (libmdbx's `mdbx_canary_put`/`get`): random sets with
//! commit, abort, nested transactions and reopen against a model; a reader
//! keeps seeing the canary of its snapshot while later commits change it;
//! `v` is always the txnid of the transaction that set it; `check` stays
//! clean.

mod common;

use common::{assert_check, base_seed, mix, OnFail};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sarsen::{Canary, EnvOptions};

#[test]
fn canary_follows_commits_aborts_and_snapshots() {
    let (seed, _) = base_seed("canary");
    let _g = OnFail(format!("SEED={seed}"));
    let mut rng = SmallRng::seed_from_u64(mix(seed));
    let dir = tempfile::tempdir().unwrap();
    let mut model = Canary::default();
    // Each phase reopens the environment: the canary survives.
    for phase in 0..4 {
        let env = common::open(dir.path(), EnvOptions::new());
        let mut held = Vec::new();
        for round in 0..15 {
            let _r = OnFail(format!("phase {phase}, round {round}"));
            let mut w = env.write_txn().unwrap();
            assert_eq!(w.canary().unwrap(), model, "as the writer sees it");
            let mut next = model;
            if rng.random_bool(0.7) {
                let c = Canary {
                    x: rng.random(),
                    y: rng.random(),
                    z: rng.random(),
                    v: 12345,
                };
                w.put_canary(c).unwrap();
                next = Canary { v: w.txnid(), ..c };
                assert_eq!(w.canary().unwrap(), next);
            }
            if rng.random_bool(0.3) {
                let mut n = w.nested().unwrap();
                n.put_canary(Canary {
                    x: 1,
                    y: 2,
                    z: 3,
                    v: 0,
                })
                .unwrap();
                if rng.random_bool(0.5) {
                    next = Canary {
                        x: 1,
                        y: 2,
                        z: 3,
                        v: n.txnid(),
                    };
                    n.commit().unwrap();
                } else {
                    n.abort();
                }
                assert_eq!(w.canary().unwrap(), next, "after the nested transaction");
            }
            w.put(env.main_db(), &[round as u8], b"data").unwrap();
            if rng.random_bool(0.8) {
                w.commit().unwrap();
                model = next;
            } else {
                w.abort();
            }
            for (r, c) in &held {
                let r: &sarsen::RoTxn<'_> = r;
                assert_eq!(
                    r.canary().unwrap(),
                    *c,
                    "a reader keeps its snapshot's canary"
                );
            }
            if held.len() < 4 {
                held.push((env.read_txn().unwrap(), model));
            }
            assert_eq!(env.read_txn().unwrap().canary().unwrap(), model);
        }
        drop(held);
        assert_check(&env, "end of phase");
    }
}
