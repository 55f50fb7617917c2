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
