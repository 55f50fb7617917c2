//! The file gives space back (issue 23): free pages at the end of the file
//! return to its unallocated end at commit, the file is truncated past the
//! shrink threshold, and `Env::compact` moves pages in use down in place.
//! Every test checks the data against a `BTreeMap` model and the file with
//! `Env::check`.
//!
//! `SARSEN_SHRINK_MB` (default 24) sizes the churn tests' fill, in MiB of
//! values; the figure is 1024.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use sarsen::{Env, EnvOptions};

fn fill_mb() -> u64 {
    std::env::var("SARSEN_SHRINK_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24)
}

fn file_len(dir: &Path) -> u64 {
    std::fs::metadata(dir.join("data.sdb")).unwrap().len()
}

/// Pages in use (next_pgno minus the GC's free pages), bytes.
fn live(env: &Env) -> u64 {
    let i = env.info().unwrap();
    (i.next_pgno - i.gc_pages) * u64::from(i.page_size)
}

fn value(k: u64) -> Vec<u8> {
    let mut v = vec![0u8; 100 + (k % 200) as usize];
    for (j, b) in v.iter_mut().enumerate() {
        *b = (k as usize * 31 + j) as u8;
    }
    v
}

/// Fills about `mb` MiB of random keys in 1000-put transactions.
fn fill(env: &Env, mb: u64, rng: &mut StdRng, model: &mut BTreeMap<Vec<u8>, Vec<u8>>) {
    let db = env.main_db();
    let n = mb * (1 << 20) / 200;
    let mut keys: Vec<u64> = (0..n).collect();
    keys.shuffle(rng);
    for chunk in keys.chunks(1000) {
        let mut w = env.write_txn().unwrap();
        for &k in chunk {
            let key = format!("k{:012}", k.wrapping_mul(0x9e37_79b9) % (1 << 40)).into_bytes();
            let v = value(k);
            w.put(db, &key, &v).unwrap();
            model.insert(key, v);
        }
        w.commit().unwrap();
    }
}

fn delete_fraction(env: &Env, frac: f64, rng: &mut StdRng, model: &mut BTreeMap<Vec<u8>, Vec<u8>>) {
    let db = env.main_db();
    let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
    let mut w = env.write_txn().unwrap();
    for k in keys {
        if rng.random_bool(frac) {
            assert!(w.delete(db, &k).unwrap());
            model.remove(&k);
        }
    }
    w.commit().unwrap();
}

fn same_as_model(env: &Env, model: &BTreeMap<Vec<u8>, Vec<u8>>, what: &str) {
    let r = env.read_txn().unwrap();
    let got: Vec<(Vec<u8>, Vec<u8>)> = r
        .iter(env.main_db())
        .unwrap()
        .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())))
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(got.len(), model.len(), "{what}: entries");
    assert!(
        got.iter().map(|(k, v)| (k, v)).eq(model.iter()),
        "{what}: contents differ"
    );
    let report = env.check().unwrap();
    assert!(
        report.problems.is_empty(),
        "{what}: check: {:?}",
        report.problems
    );
}

#[test]
fn churn_shrinks_by_itself_then_compact_to_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let env = unsafe { EnvOptions::new().shrink_threshold(1 << 20).open(dir.path()) }.unwrap();
    let mut rng = StdRng::seed_from_u64(23);
    let mut model = BTreeMap::new();
    fill(&env, fill_mb(), &mut rng, &mut model);
    let full = file_len(dir.path());
    eprintln!("after fill: len {full} info {:?}", env.info().unwrap());
    delete_fraction(&env, 0.9, &mut rng, &mut model);
    // One more commit: the deleted pages are reusable from it on.
    let mut w = env.write_txn().unwrap();
    w.put(env.main_db(), b"after", b"x").unwrap();
    model.insert(b"after".to_vec(), b"x".to_vec());
    w.commit().unwrap();
    same_as_model(&env, &model, "after the auto shrink");
    let info = env.info().unwrap();
    let used = info.next_pgno * u64::from(info.page_size);
    eprintln!(
        "full {full} now {} next {used} live {}",
        file_len(dir.path()),
        live(&env)
    );
    assert!(
        used <= 2 * live(&env),
        "end of pages in use {used} vs live {}",
        live(&env)
    );
    assert!(
        file_len(dir.path()) <= 2 * live(&env),
        "file {} for {} live",
        file_len(dir.path()),
        live(&env)
    );
    assert!(file_len(dir.path()) < full);
    let c = env.compact().unwrap();
    eprintln!("{c:?} live {}", live(&env));
    same_as_model(&env, &model, "after compact");
    assert!(
        c.len_after as f64 <= 1.1 * live(&env) as f64,
        "compact left {} for {} live",
        c.len_after,
        live(&env)
    );
}

#[test]
fn an_old_reader_keeps_its_pages_and_the_shrink_waits_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let env = unsafe { EnvOptions::new().open(dir.path()) }.unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    let mut model = BTreeMap::new();
    fill(&env, fill_mb(), &mut rng, &mut model);
    let seen = model.clone();
    let reader = env.read_txn().unwrap();
    let snap_end = env.info().unwrap().next_pgno * 4096;
    delete_fraction(&env, 0.9, &mut rng, &mut model);
    for i in 0..3u32 {
        let mut w = env.write_txn().unwrap();
        w.put(env.main_db(), &i.to_be_bytes(), b"x").unwrap();
        model.insert(i.to_be_bytes().to_vec(), b"x".to_vec());
        w.commit().unwrap();
    }
    let c = env.compact().unwrap();
    // Nothing the reader can reach was reused or cut: it reads its snapshot whole.
    let got: Vec<(Vec<u8>, Vec<u8>)> = reader
        .iter(env.main_db())
        .unwrap()
        .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())))
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        got.iter().map(|(k, v)| (k, v)).eq(seen.iter()),
        "the old snapshot changed"
    );
    assert!(c.len_after >= snap_end, "cut below a live snapshot");
    assert!(file_len(dir.path()) >= snap_end);
    drop(reader);
    // Once it ends, the next commit gives the space back.
    let mut w = env.write_txn().unwrap();
    w.put(env.main_db(), b"after", b"y").unwrap();
    model.insert(b"after".to_vec(), b"y".to_vec());
    w.commit().unwrap();
    same_as_model(&env, &model, "after the reader ended");
    assert!(
        file_len(dir.path()) <= 2 * live(&env),
        "file {} for {} live once the reader ended",
        file_len(dir.path()),
        live(&env)
    );
}
