//! Range estimates against exact counts: for trees filled by random
//! inserts and deletes, every estimate is within a fraction of the entries
//! (3% at 4 KiB pages, 10% at 512-byte pages, whose few entries per page
//! vary more) plus two leaves' worth of the true count.

mod common;

use std::collections::BTreeSet;

use common::{base_seed, cases, mix};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sarsen::EnvOptions;

#[test]
fn estimates_are_within_the_stated_error() {
    let (base, _) = base_seed("estimate");
    let mut worst: f64 = 0.0;
    let shapes = [(512u32, 3_000u32), (4096, 60_000), (512, 40_000)];
    for case in 0..shapes.len() * cases(1) {
        let (page, n) = shapes[case % shapes.len()];
        let mut rng = SmallRng::seed_from_u64(mix(base ^ case as u64));
        let dir = tempfile::tempdir().unwrap();
        // SAFETY: the test's own temporary directory; nothing else maps it.
        let env = unsafe { EnvOptions::new().page_size(page).open(dir.path()) }.unwrap();
        let db = env.main_db();
        let mut model = BTreeSet::new();
        let mut w = env.write_txn().unwrap();
        for _ in 0..n {
            let k = rng.random_range(0..u32::MAX).to_be_bytes();
            w.put(db, &k, &[0; 24]).unwrap();
            model.insert(k);
        }
        // Some deletes, so pages are not all filled alike.
        let doomed: Vec<[u8; 4]> = model
            .iter()
            .filter(|_| rng.random_ratio(1, 4))
            .copied()
            .collect();
        for k in &doomed {
            w.delete(db, k).unwrap();
            model.remove(k);
        }
        w.commit().unwrap();
        let r = env.read_txn().unwrap();
        let st = r.stat(db).unwrap();
        let per_leaf = st.entries as f64 / st.leaf_pages as f64;
        let share = if page >= 4096 { 0.03 } else { 0.10 };
        let allowed = share * st.entries as f64 + 2.0 * per_leaf;
        assert_eq!(r.estimate_range(db, None, None).unwrap(), st.entries);
        for _ in 0..500 {
            let a = rng.random_range(0..u32::MAX).to_be_bytes();
            let b = rng.random_range(0..u32::MAX).to_be_bytes();
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            let exact = model.range(lo..hi).count() as f64;
            let est = r.estimate_range(db, Some(&lo), Some(&hi)).unwrap() as f64;
            let err = (est - exact).abs();
            worst = worst.max(err / st.entries as f64);
            assert!(
                err <= allowed,
                "page {page}: [{lo:?}, {hi:?}): estimate {est}, exact {exact}, allowed {allowed}"
            );
            assert_eq!(
                r.estimate_range(db, Some(&hi), Some(&lo)).unwrap(),
                0,
                "inverted"
            );
        }
        // A range inside one leaf is exact: neighbours of one key.
        let keys: Vec<&[u8; 4]> = model.iter().collect();
        let i = keys.len() / 2;
        let est = r
            .estimate_range(db, Some(keys[i]), Some(keys[i + 1]))
            .unwrap();
        assert!(est <= 1 + (2.0 * per_leaf) as u64);
    }
    eprintln!("worst error: {:.4} of the entries", worst);
}
