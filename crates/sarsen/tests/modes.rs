//! Put modes and the other LMDB/libmdbx write operations against a
//! `BTreeMap` model: `put_no_overwrite`, `append` (sorted and out of order),
//! `replace`, `take`, `delete_range` with every bound kind, sequences with
//! commit and abort; cursor state queries; read transaction reset/renew;
//! transaction info and `is_dirty`.

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;

use common::{base_seed, cases, mix, OnFail};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sarsen::{Database, Env, EnvOptions, Error, RwTxn};

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

fn open(dir: &std::path::Path) -> Env {
    // SAFETY: the test's own temporary directory; nothing else maps it.
    unsafe { EnvOptions::new().page_size(512).open(dir) }.unwrap()
}

fn key(rng: &mut SmallRng) -> Vec<u8> {
    format!("{:03}", rng.random_range(0..300)).into_bytes()
}

fn contents(w: &RwTxn, db: Database) -> Map {
    w.iter(db)
        .unwrap()
        .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
        .collect()
}

fn bound(rng: &mut SmallRng) -> Bound<Vec<u8>> {
    match rng.random_range(0..3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(key(rng)),
        _ => Bound::Excluded(key(rng)),
    }
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// One random step on `w` and the model `m`, with sequence model `seq`.
fn step(rng: &mut SmallRng, w: &mut RwTxn, db: Database, m: &mut Map, seq: &mut u64) -> String {
    let k = key(rng);
    let max = if rng.random_ratio(1, 20) { 900 } else { 20 };
    let v = vec![rng.random::<u8>(); rng.random_range(0..max)];
    match rng.random_range(0..8) {
        7 => {
            w.put_reserve(db, &k, v.len(), |b| b.copy_from_slice(&v))
                .unwrap();
            m.insert(k.clone(), v);
            format!("put_reserve {k:?}")
        }
        0 => {
            let got = w.put_no_overwrite(db, &k, &v).unwrap().map(<[u8]>::to_vec);
            assert_eq!(got.as_ref(), m.get(&k));
            m.entry(k.clone()).or_insert(v);
            format!("put_no_overwrite {k:?}")
        }
        1 => {
            let last = m.keys().next_back().cloned();
            let r = w.append(db, &k, &v);
            if last.as_ref().is_some_and(|l| &k <= l) {
                assert!(matches!(r, Err(Error::KeyNotGreater)), "{r:?}");
            } else {
                r.unwrap();
                m.insert(k.clone(), v);
            }
            format!("append {k:?}")
        }
        2 => {
            let old = w.replace(db, &k, &v).unwrap();
            assert_eq!(old, m.insert(k.clone(), v));
            format!("replace {k:?}")
        }
        3 => {
            assert_eq!(w.take(db, &k).unwrap(), m.remove(&k));
            format!("take {k:?}")
        }
        4 if rng.random_ratio(1, 3) => {
            let (lo, hi) = (bound(rng), bound(rng));
            let inverted = match (&lo, &hi) {
                (
                    Bound::Included(a) | Bound::Excluded(a),
                    Bound::Included(b) | Bound::Excluded(b),
                ) => a > b,
                _ => false,
            };
            if inverted {
                return String::new();
            }
            // `BTreeMap::range` refuses `(x, x)` with an excluded end: empty.
            let empty = match (&lo, &hi) {
                (Bound::Excluded(a), Bound::Excluded(b) | Bound::Included(b))
                | (Bound::Included(a), Bound::Excluded(b)) => a == b,
                _ => false,
            };
            let doomed: Vec<Vec<u8>> = if empty {
                Vec::new()
            } else {
                m.range((lo.clone(), hi.clone()))
                    .map(|(k, _)| k.clone())
                    .collect()
            };
            let n = w.delete_range(db, (as_ref(&lo), as_ref(&hi))).unwrap();
            assert_eq!(n, doomed.len() as u64, "delete_range {lo:?} {hi:?}");
            doomed.iter().for_each(|k| drop(m.remove(k)));
            format!("delete_range {lo:?} {hi:?}")
        }
        5 => {
            let inc = rng.random_range(0..5);
            assert_eq!(w.next_sequence(db, inc).unwrap(), *seq);
            *seq += inc;
            format!("next_sequence {inc}")
        }
        _ => {
            w.put(db, &k, &v).unwrap();
            m.insert(k.clone(), v);
            format!("put {k:?}")
        }
    }
}

#[test]
fn write_modes_match_the_model() {
    let (base, replay) = base_seed("modes");
    for c in 0..if replay { 1 } else { cases(4) } {
        let seed = if replay { base } else { mix(base ^ c as u64) };
        let mut rng = SmallRng::seed_from_u64(seed);
        let dir = tempfile::tempdir().unwrap();
        let env = open(dir.path());
        let mut w = env.write_txn().unwrap();
        let db = if c % 2 == 0 {
            env.main_db()
        } else {
            w.create_db(Some("named")).unwrap()
        };
        w.commit().unwrap();
        let (mut committed, mut seq_committed) = (Map::new(), 0u64);
        let mut trace = OnFail(format!("SEED={seed}\n"));
        for _ in 0..40 {
            let (mut m, mut seq) = (committed.clone(), seq_committed);
            let mut w = env.write_txn().unwrap();
            for _ in 0..rng.random_range(1..30) {
                let what = step(&mut rng, &mut w, db, &mut m, &mut seq);
                trace.0.push_str(&what);
                trace.0.push('\n');
            }
            assert_eq!(contents(&w, db), m);
            assert_eq!(w.sequence(db).unwrap(), seq);
            if rng.random_ratio(1, 4) {
                w.abort();
            } else {
                w.commit().unwrap();
                (committed, seq_committed) = (m, seq);
            }
            let r = env.read_txn().unwrap();
            assert_eq!(r.sequence(db).unwrap(), seq_committed);
            assert_eq!(r.iter(db).unwrap().count(), committed.len());
            drop(r);
            common::assert_check(&env, "after the transaction");
        }
    }
}

#[test]
fn a_sequence_alone_commits() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path());
    let mut w = env.write_txn().unwrap();
    assert_eq!(w.next_sequence(env.main_db(), 7).unwrap(), 0);
    w.commit().unwrap();
    assert_eq!(env.read_txn().unwrap().sequence(env.main_db()).unwrap(), 7);
    let mut w = env.write_txn().unwrap();
    w.next_sequence(env.main_db(), u64::MAX - 7).unwrap();
    assert!(matches!(
        w.next_sequence(env.main_db(), 1),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(w.sequence(env.main_db()).unwrap(), u64::MAX);
}

#[test]
fn cursor_states_follow_its_moves() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path());
    let db = env.main_db();
    let mut w = env.write_txn().unwrap();
    for i in 0..500u32 {
        w.put(db, &i.to_be_bytes(), &[0; 30]).unwrap();
    }
    w.commit().unwrap();
    let r = env.read_txn().unwrap();
    let mut c = r.cursor(db).unwrap();
    assert!(!c.is_positioned() && !c.is_past_end());
    c.first().unwrap();
    assert!(c.is_positioned() && c.is_first().unwrap() && !c.is_last().unwrap());
    c.next().unwrap();
    assert!(!c.is_first().unwrap());
    c.last().unwrap();
    assert!(c.is_last().unwrap() && !c.is_first().unwrap());
    assert_eq!(c.next().unwrap(), None);
    assert!(c.is_past_end() && !c.is_positioned() && !c.is_last().unwrap());
    assert!(c.prev().unwrap().is_some());
    assert!(c.is_last().unwrap());
    assert_eq!(c.seek(&[0xff; 5]).unwrap(), None);
    assert!(c.is_past_end());
    c.seek(&250u32.to_be_bytes()).unwrap();
    assert!(c.is_positioned() && !c.is_first().unwrap() && !c.is_last().unwrap());
}

#[test]
fn reset_and_renew_reuse_the_slot_and_see_new_commits() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path());
    let db = env.main_db();
    let r = env.read_txn().unwrap();
    let mut idle = r.reset();
    for i in 0..5u32 {
        let mut w = env.write_txn().unwrap();
        w.put(db, b"k", &i.to_be_bytes()).unwrap();
        let txnid = w.txnid();
        w.commit().unwrap();
        // While reset, the slot pins nothing: it is not a reader.
        assert_eq!(env.info().unwrap().oldest_reader_txnid, None);
        let r = idle.renew();
        assert_eq!(r.txnid(), txnid);
        assert_eq!(r.get(db, b"k").unwrap(), Some(&i.to_be_bytes()[..]));
        assert_eq!(r.info().lag, 0);
        assert_eq!(env.info().unwrap().oldest_reader_txnid, Some(txnid));
        idle = r.reset();
    }
    let slots = env.readers().unwrap().len();
    drop(idle);
    drop(env.read_txn().unwrap());
    assert_eq!(env.readers().unwrap().len(), slots, "one slot all along");
}

#[test]
fn txn_info_and_is_dirty() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path());
    let db = env.main_db();
    let mut w = env.write_txn().unwrap();
    for i in 0..2000u32 {
        w.put(db, &i.to_be_bytes(), &[1; 20]).unwrap();
    }
    w.commit().unwrap();
    let old = env.read_txn().unwrap();
    let mut w = env.write_txn().unwrap();
    assert!(!w
        .is_dirty(w.get(db, &7u32.to_be_bytes()).unwrap().unwrap())
        .unwrap());
    w.put(db, &7u32.to_be_bytes(), &[2; 20]).unwrap();
    assert!(w
        .is_dirty(w.get(db, &7u32.to_be_bytes()).unwrap().unwrap())
        .unwrap());
    assert!(!w
        .is_dirty(w.get(db, &1999u32.to_be_bytes()).unwrap().unwrap())
        .unwrap());
    assert!(matches!(
        w.is_dirty(b"elsewhere"),
        Err(Error::InvalidArgument(_))
    ));
    let info = w.info();
    assert_eq!(info.txnid, old.txnid() + 1);
    // The path to key 7 was copied: at least a leaf and the root.
    assert!(info.dirty_pages >= 2, "{info:?}");
    assert!(info.retired_pages >= 2, "{info:?}");
    w.commit().unwrap();
    assert_eq!(old.info().lag, 1);
    assert_eq!(env.info().unwrap().oldest_reader_txnid, Some(old.txnid()));
}
