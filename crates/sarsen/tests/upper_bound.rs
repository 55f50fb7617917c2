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

/// `drop_db` in a full file: removing the name needs pages for the
/// catalog, so it can hit the bound; it must then change nothing (the
/// database and its entries intact, the transaction usable), and succeed
/// once deletes have made room. The catalog is made deeper than the main
/// tree (many long names), so that filling the file through the main tree
/// leaves less room than a catalog delete reserves.
#[test]
fn drop_db_at_the_upper_bound_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let env = unsafe {
        EnvOptions::new()
            .page_size(512)
            .max_size(400 * 512)
            .growth_step(512)
            .max_dbs(300)
            .open(dir.path())
    }
    .unwrap();
    let name = |i: u32| format!("{i:03}-{}", "n".repeat(90));
    let mut w = env.write_txn().unwrap();
    for i in 0..200 {
        w.create_db(Some(&name(i))).unwrap();
    }
    let named = w.create_db(Some("victim")).unwrap();
    for i in 0..20u32 {
        w.put(named, &i.to_be_bytes(), b"named value").unwrap();
    }
    w.commit().unwrap();
    let mut w = env.write_txn().unwrap();
    let want = contents(w.iter(named));
    let main = env.main_db();
    // Fill the file with overflow values in a one-leaf main tree, the
    // runs ever shorter, until not even a one-page run fits.
    let mut filled = Vec::new();
    let mut run = 64usize;
    let mut k = 0u32;
    while run > 0 {
        match w.put(main, &k.to_be_bytes(), &vec![1u8; run * 512 - 100]) {
            Ok(()) => {
                filled.push(k);
                k += 1;
            }
            Err(Error::UpperBoundReached { .. }) => run /= 2,
            Err(e) => panic!("put: {e}"),
        }
    }
    let mut refused = false;
    loop {
        match w.drop_db(named) {
            Ok(()) => break,
            Err(Error::UpperBoundReached { .. }) => {
                refused = true;
                assert_eq!(
                    contents(w.iter(named)),
                    want,
                    "drop_db changed the database"
                );
                // Still usable: delete a value to make room, and retry.
                let k = filled.pop().expect("room made");
                assert!(w.delete(main, &k.to_be_bytes()).unwrap());
            }
            Err(e) => panic!("drop_db: {e}"),
        }
    }
    assert!(refused, "the file was not full enough to test the bound");
    assert!(matches!(w.iter(named), Err(Error::DbNotFound { .. })));
    w.commit().unwrap();
    let r = env.read_txn().unwrap();
    assert_eq!(r.open_db(Some("victim")).unwrap(), None);
    assert_eq!(r.list_dbs().unwrap().len(), 200);
}
