//! Near the upper bound: random puts and deletes in a file of a few dozen
//! pages, with long-lived readers pinning pages, going on after every
//! `UpperBoundReached`. Each such error must leave the transaction exactly
//! as it was (checked against a model), and commits must stay consistent.
//! Regression test for GC pages left reusable when deleting their record
//! failed at the bound (a live page then recorded free; the debug check
//! "GC record names a dirty page" fires on it).

use std::collections::BTreeMap;

use sarsen::{Durability, EnvOptions, Error, RoTxn};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

fn contents(it: sarsen::Result<sarsen::Iter<'_>>) -> Model {
    it.unwrap()
        .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
        .collect()
}

fn run(seed: u64, pages: u64, durability: Durability) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let env = unsafe {
        EnvOptions::new()
            .page_size(512)
            .max_size(pages * 512)
            .growth_step(512)
            .durability(durability)
            .open(dir.path())
    }
    .unwrap();
    let db = env.main_db();
    let mut committed = Model::new();
    let mut s = seed | 1;
    let mut full = 0;
    let mut held: Option<(RoTxn<'_>, Model)> = None;
    for t in 0..150u64 {
        if xorshift(&mut s).is_multiple_of(40) {
            held = None;
        }
        if held.is_none() && xorshift(&mut s).is_multiple_of(6) {
            held = Some((env.read_txn().unwrap(), committed.clone()));
        }
        let mut w = env.write_txn().unwrap();
        let mut m = committed.clone();
        for _ in 0..1 + xorshift(&mut s) % 12 {
            let k = format!("k{:04}", xorshift(&mut s) % 6).into_bytes();
            let r = if xorshift(&mut s).is_multiple_of(3) {
                w.delete(db, &k).map(|_| {
                    m.remove(&k);
                })
            } else {
                let len = if xorshift(&mut s).is_multiple_of(2) {
                    300 + xorshift(&mut s) % 900
                } else {
                    xorshift(&mut s) % 120
                };
                let v = vec![(t % 251) as u8; len as usize];
                w.put(db, &k, &v).map(|_| {
                    m.insert(k.clone(), v);
                })
            };
            match r {
                Ok(()) => {}
                Err(Error::UpperBoundReached { .. }) => {
                    full += 1;
                    assert_eq!(
                        contents(w.iter(db)),
                        m,
                        "seed {seed} txn {t}: view changed by a failed op"
                    );
                }
                Err(e) => panic!("seed {seed} txn {t}: {e:?}"),
            }
        }
        match w.commit() {
            Ok(()) => committed = m,
            Err(Error::UpperBoundReached { .. }) => {}
            Err(e) => panic!("seed {seed} txn {t}: commit: {e:?}"),
        }
        let r = env.read_txn().unwrap();
        assert_eq!(
            contents(r.iter(db)),
            committed,
            "seed {seed} txn {t}: committed state"
        );
        if let Some((h, hm)) = &held {
            assert_eq!(
                &contents(h.iter(db)),
                hm,
                "seed {seed} txn {t}: pinned snapshot changed"
            );
        }
    }
    full
}

#[test]
fn failed_ops_at_the_upper_bound_change_nothing() {
    let seeds: u64 = std::env::var("SARSEN_TEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let mut full = 0;
    for seed in 1..=seeds {
        for pages in [24u64, 40, 64, 128] {
            for d in [Durability::NoSync, Durability::Durable] {
                full += run(seed * 7919, pages, d);
            }
        }
    }
    assert!(
        full > 0,
        "the bound was never reached: the test tests nothing"
    );
    eprintln!("{full} operations hit the upper bound");
}
