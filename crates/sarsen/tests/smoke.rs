//! Random puts and deletes against a BTreeMap at three page sizes, with and
//! without write-map mode; the integrity check runs after every commit.

mod common;

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use sarsen::{Env, EnvOptions};

#[test]
fn smoke_random_against_model() {
    for (ps, wm) in [
        (512u32, false),
        (4096, false),
        (65536, false),
        (512, true),
        (4096, true),
        (65536, true),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let env = unsafe {
            EnvOptions::new()
                .page_size(ps)
                .write_map(wm)
                .open(dir.path())
        }
        .unwrap();
        let db = env.main_db();
        let mut model = BTreeMap::new();
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for round in 0..20 {
            let mut w = env.write_txn().unwrap();
            for _ in 0..500 {
                let k = format!("{:08}", rng.random_range(0..3000u32)).into_bytes();
                if rng.random_bool(0.3) {
                    let had = w.delete(db, &k).unwrap();
                    assert_eq!(had, model.remove(&k).is_some());
                } else {
                    let vlen = if rng.random_bool(0.05) {
                        rng.random_range(0..20000)
                    } else {
                        rng.random_range(0..100)
                    };
                    let v: Vec<u8> = (0..vlen).map(|_| rng.random()).collect();
                    w.put(db, &k, &v).unwrap();
                    model.insert(k, v);
                }
            }
            w.commit().unwrap();
            common::assert_check(&env, "after commit");
            let r = env.read_txn().unwrap();
            let got: Vec<(Vec<u8>, Vec<u8>)> = r
                .iter(db)
                .unwrap()
                .map(|e| {
                    let (k, v) = e.unwrap();
                    (k.to_vec(), v.to_vec())
                })
                .collect();
            let want: Vec<(Vec<u8>, Vec<u8>)> =
                model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            assert_eq!(got.len(), want.len(), "ps {ps} round {round}");
            assert!(got == want, "ps {ps} round {round}");
            assert_eq!(r.stat(db).unwrap().entries, model.len() as u64);
            let back: Vec<Vec<u8>> = r
                .iter(db)
                .unwrap()
                .rev()
                .map(|e| e.unwrap().0.to_vec())
                .collect();
            let wantback: Vec<Vec<u8>> = model.keys().rev().cloned().collect();
            assert!(back == wantback);
        }
        drop(env);
        let env = unsafe { Env::open(dir.path()) }.unwrap();
        let r = env.read_txn().unwrap();
        assert_eq!(r.iter(env.main_db()).unwrap().count(), model.len());
        eprintln!("ps {ps}: info {:?}", env.info().unwrap());
    }
}

/// Sorted puts take the append fast path; interleave them with everything
/// that must invalidate it (other trees, deletes, overwrites of the last
/// key, smaller keys, clears, page splits) and compare with a model.
#[test]
fn appends_interleaved_with_other_changes() {
    for ps in [512u32, 4096] {
        let dir = tempfile::tempdir().unwrap();
        let env = unsafe { EnvOptions::new().page_size(ps).open(dir.path()) }.unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let mut models: Vec<BTreeMap<Vec<u8>, Vec<u8>>> = vec![BTreeMap::new(); 2];
        let mut w = env.write_txn().unwrap();
        let dbs = [env.main_db(), w.create_db(Some("other")).unwrap()];
        let mut next = [0u32; 2];
        for step in 0..20_000u32 {
            let t = rng.random_range(0..2usize);
            let (db, m) = (dbs[t], &mut models[t]);
            match rng.random_range(0..100) {
                0..=79 => {
                    next[t] += rng.random_range(1..3);
                    let k = format!("{:08}", next[t]).into_bytes();
                    let v = vec![(step % 251) as u8; rng.random_range(0..60)];
                    w.put(db, &k, &v).unwrap();
                    m.insert(k, v);
                }
                80..=84 => {
                    if let Some(k) = m.keys().next_back().cloned() {
                        w.put(db, &k, b"last").unwrap();
                        m.insert(k, b"last".to_vec());
                    }
                }
                85..=89 => {
                    let k = format!("{:08}", rng.random_range(0..next[t] + 1)).into_bytes();
                    assert_eq!(w.delete(db, &k).unwrap(), m.remove(&k).is_some());
                }
                90..=91 => {
                    // Trim the tail: merges at the right edge, then appends again.
                    for _ in 0..rng.random_range(1..80) {
                        let Some(k) = m.keys().next_back().cloned() else {
                            break;
                        };
                        assert!(w.delete(db, &k).unwrap());
                        m.remove(&k);
                    }
                }
                92..=94 => {
                    let k = format!("{:08}x", rng.random_range(0..next[t] + 1)).into_bytes();
                    w.put(db, &k, b"mid").unwrap();
                    m.insert(k, b"mid".to_vec());
                }
                95..=96 if step % 7 == 0 => {
                    w.clear_db(db).unwrap();
                    m.clear();
                }
                _ => {
                    w.commit().unwrap();
                    w = env.write_txn().unwrap();
                }
            }
        }
        w.commit().unwrap();
        let r = env.read_txn().unwrap();
        for (db, m) in dbs.iter().zip(&models) {
            let got: Vec<(Vec<u8>, Vec<u8>)> = r
                .iter(*db)
                .unwrap()
                .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
                .collect();
            let want: Vec<(Vec<u8>, Vec<u8>)> =
                m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            assert!(got == want, "page size {ps}: tree differs from model");
            assert_eq!(r.stat(*db).unwrap().entries, m.len() as u64);
        }
    }
}
