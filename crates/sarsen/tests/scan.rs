//! Whole-database and ranged scans of read transactions over trees of three
//! levels and more, against a BTreeMap: forward, backward, both ends at
//! once, and plain cursors that turn around mid-scan. Scans cross leaves
//! under one parent and under different parents (where a scan asks for the
//! next leaf ahead of time), over inline and overflow values; the same
//! database is scanned again from a second environment, as a reader in
//! another process would map it.

use std::collections::BTreeMap;
use std::ops::Bound;

use rand::{Rng, SeedableRng};
use sarsen::{Env, EnvOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn open(dir: &std::path::Path, ps: u32) -> Env {
    // SAFETY: the directory belongs to this test; nothing else maps it.
    unsafe { EnvOptions::new().page_size(ps).open(dir) }.unwrap()
}

/// Loads about `n` keys in random order with some deletes; about one value
/// in twenty is long enough for an overflow run.
fn load(env: &Env, n: u32, seed: u64) -> Model {
    let db = env.main_db();
    let mut model = Model::new();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    for _ in 0..(n / 500).max(1) {
        let mut w = env.write_txn().unwrap();
        for _ in 0..700 {
            let k = format!("{:010}", rng.random_range(0..n * 2)).into_bytes();
            if rng.random_bool(0.2) {
                assert_eq!(w.delete(db, &k).unwrap(), model.remove(&k).is_some());
                continue;
            }
            let vlen = if rng.random_bool(0.05) {
                rng.random_range(600..3000)
            } else {
                rng.random_range(0..40)
            };
            let v: Vec<u8> = (0..vlen).map(|_| rng.random()).collect();
            w.put(db, &k, &v).unwrap();
            model.insert(k, v);
        }
        w.commit().unwrap();
    }
    model
}

fn pairs<'a>(
    it: impl Iterator<Item = sarsen::Result<(&'a [u8], &'a [u8])>>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.map(|e| {
        let (k, v) = e.unwrap();
        (k.to_vec(), v.to_vec())
    })
    .collect()
}

fn model_pairs<'a>(
    it: impl Iterator<Item = (&'a Vec<u8>, &'a Vec<u8>)>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// Every way of scanning `env`'s main database agrees with `model`.
fn check_scans(env: &Env, model: &Model, seed: u64) {
    let db = env.main_db();
    let r = env.read_txn().unwrap();
    assert!(
        r.stat(db).unwrap().depth >= 3,
        "the test wants a deeper tree"
    );
    assert_eq!(pairs(r.iter(db).unwrap()), model_pairs(model.iter()));
    assert_eq!(
        pairs(r.iter(db).unwrap().rev()),
        model_pairs(model.iter().rev())
    );

    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let keys: Vec<&Vec<u8>> = model.keys().collect();
    for _ in 0..50 {
        // Both ends at once, in a random interleaving, meeting in the middle.
        let mut it = r.iter(db).unwrap();
        let mut m = model.iter();
        loop {
            let fwd = rng.random_bool(0.5);
            let (got, want) = if fwd {
                (it.next(), m.next())
            } else {
                (it.next_back(), m.next_back())
            };
            let got = got.map(|e| e.unwrap());
            assert_eq!(got, want.map(|(k, v)| (&k[..], &v[..])), "fwd {fwd}");
            if want.is_none() {
                break;
            }
        }

        // A range between two random keys, both directions.
        let a = keys[rng.random_range(0..keys.len())].as_slice();
        let b = keys[rng.random_range(0..keys.len())].as_slice();
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let want = model_pairs(model.range::<[u8], _>((Bound::Excluded(lo), Bound::Included(hi))));
        let got = pairs(
            r.range(db, (Bound::Excluded(lo), Bound::Included(hi)))
                .unwrap(),
        );
        assert_eq!(got, want);
        let mut back = pairs(
            r.range(db, (Bound::Excluded(lo), Bound::Included(hi)))
                .unwrap()
                .rev(),
        );
        back.reverse();
        assert_eq!(back, want);

        // A cursor that walks some steps one way from a random key, then
        // turns around.
        let mut c = r.cursor(db).unwrap();
        let start = keys[rng.random_range(0..keys.len())];
        let mut pos = keys.binary_search(&start).unwrap();
        assert_eq!(c.seek(start).unwrap().map(|e| e.0), Some(&start[..]));
        for turn in 0..2 {
            let fwd = (turn == 0) == rng.random_bool(0.5);
            for _ in 0..rng.random_range(0..400) {
                let want = if fwd {
                    pos.checked_add(1).filter(|&p| p < keys.len())
                } else {
                    pos.checked_sub(1)
                };
                let got = if fwd { c.next() } else { c.prev() }.unwrap();
                match want {
                    Some(p) => {
                        pos = p;
                        let k = keys[p];
                        assert_eq!(got, Some((&k[..], &model[k][..])));
                    }
                    None => {
                        assert_eq!(got, None);
                        break;
                    }
                }
            }
            // Past an end, the cursor turns back onto the last entry seen.
            if c.current().unwrap().is_none() {
                break;
            }
        }
    }
}

#[test]
fn scans_against_model() {
    for (ps, n, seed) in [(512u32, 6_000u32, 1u64), (4096, 60_000, 2)] {
        let dir = tempfile::tempdir().unwrap();
        let model = {
            let env = open(dir.path(), ps);
            let model = load(&env, n, seed);
            check_scans(&env, &model, seed);
            model
        };
        // A fresh environment maps the file anew: nothing of it is mapped
        // in this process before the scans fault it in.
        let env = open(dir.path(), ps);
        check_scans(&env, &model, seed + 10);
    }
}
