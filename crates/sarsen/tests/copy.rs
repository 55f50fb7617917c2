//! Hot backup: physical and compact copies taken while a writer commits
//! equal one committed state exactly, pass the integrity check, keep merge
//! operator names, and open and take writes like the source.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sarsen::merge::{Max, Uint64Add};
use sarsen::{DbOptions, Durability, Env, EnvOptions, Error};

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

fn open(dir: &std::path::Path) -> Env {
    // SAFETY: the test's own temporary directories; nothing else maps them.
    unsafe {
        EnvOptions::new()
            .page_size(1024)
            .durability(Durability::NoSync)
            .open(dir)
    }
    .unwrap()
}

/// Main database and "side": their contents.
fn contents(env: &Env) -> (Map, Map) {
    let r = env.read_txn().unwrap();
    let side = r.open_db(Some("side")).unwrap().unwrap();
    let read = |db| {
        r.iter(db)
            .unwrap()
            .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
            .collect()
    };
    (read(env.main_db()), read(side))
}

#[test]
fn copies_taken_beside_a_writer_equal_a_committed_state() {
    let base = tempfile::tempdir().unwrap();
    let env = open(&base.path().join("src"));
    let mut w = env.write_txn().unwrap();
    let main = w
        .create_db_with(None, &DbOptions::new().merge_operator(Uint64Add))
        .unwrap();
    let side = w.create_db(Some("side")).unwrap();
    w.commit().unwrap();
    // The states committed so far, by txnid.
    let states: Mutex<BTreeMap<u64, (Map, Map)>> = Mutex::new(BTreeMap::new());
    states
        .lock()
        .unwrap()
        .insert(env.read_txn().unwrap().txnid(), contents(&env));
    let stop = AtomicBool::new(false);
    let copies = std::thread::scope(|s| {
        s.spawn(|| {
            let mut rng = SmallRng::seed_from_u64(9);
            while !stop.load(Ordering::Acquire) {
                let mut w = env.write_txn().unwrap();
                for _ in 0..50 {
                    let k = rng.random_range(0..2000u32).to_be_bytes();
                    match rng.random_range(0..4) {
                        0 => drop(w.delete(main, &k).unwrap()),
                        1 => w.merge(main, &k, &3u64.to_le_bytes()).unwrap(),
                        2 => w
                            .put(side, &k, &vec![7; rng.random_range(0..3000)])
                            .unwrap(),
                        _ => drop(w.delete(side, &k).unwrap()),
                    }
                }
                let txnid = w.txnid();
                w.commit().unwrap();
                states.lock().unwrap().insert(txnid, contents(&env));
            }
        });
        let mut made = Vec::new();
        for i in 0..6 {
            std::thread::sleep(std::time::Duration::from_millis(30));
            let dir = base.path().join(format!("copy{i}"));
            let info = if i % 2 == 0 {
                env.copy_to(&dir).unwrap()
            } else {
                env.compact_copy_to(&dir).unwrap()
            };
            made.push((dir, info));
        }
        stop.store(true, Ordering::Release);
        made
    });
    let states = states.into_inner().unwrap();
    for (i, (dir, info)) in copies.iter().enumerate() {
        let copy = open(dir);
        common::assert_check(&copy, "copy");
        let want = &states[&info.txnid];
        assert_eq!(&contents(&copy), want, "copy {i} of txnid {}", info.txnid);
        if i % 2 == 0 {
            assert_eq!(copy.read_txn().unwrap().txnid(), info.txnid);
        } else {
            let n = (want.0.len() + want.1.len()) as u64;
            assert_eq!(info.entries, n);
        }
        // The merge operator's name came along: another one is refused.
        let mut w = copy.write_txn().unwrap();
        let e = w.open_db_with(None, &DbOptions::new().merge_operator(Max));
        assert!(
            matches!(e, Err(Error::MergeOperatorMismatch { .. })),
            "{e:?}"
        );
        let db = w
            .open_db_with(None, &DbOptions::new().merge_operator(Uint64Add))
            .unwrap()
            .unwrap();
        w.merge(db, b"new", &1u64.to_le_bytes()).unwrap();
        w.commit().unwrap();
        common::assert_check(&copy, "copy after a write");
    }
}

#[test]
fn a_compact_copy_is_no_larger_and_the_destination_must_be_free() {
    let base = tempfile::tempdir().unwrap();
    let env = open(&base.path().join("src"));
    let mut w = env.write_txn().unwrap();
    w.create_db(Some("side")).unwrap();
    for i in 0..20_000u32 {
        w.put(env.main_db(), &i.to_be_bytes(), &[1; 50]).unwrap();
    }
    w.commit().unwrap();
    // Delete most of it: the source keeps its pages, free.
    let mut w = env.write_txn().unwrap();
    for i in 0..18_000u32 {
        w.delete(env.main_db(), &i.to_be_bytes()).unwrap();
    }
    w.commit().unwrap();
    let full = env.copy_to(base.path().join("full")).unwrap();
    let compact = env.compact_copy_to(base.path().join("compact")).unwrap();
    assert!(
        compact.bytes * 4 < full.bytes,
        "compact {} vs full {}",
        compact.bytes,
        full.bytes
    );
    assert_eq!(compact.entries, 2000);
    assert_eq!(
        contents(&open(&base.path().join("compact"))),
        contents(&env)
    );
    // A directory that holds a database is refused, and left as it was.
    let again = env.copy_to(base.path().join("full"));
    assert!(matches!(again, Err(Error::InvalidArgument(_))), "{again:?}");
    assert_eq!(contents(&open(&base.path().join("full"))), contents(&env));
}
