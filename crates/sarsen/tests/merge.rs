//! Merge operators against a model: random interleavings of put, delete,
//! merge, merge_many and reads, committed or aborted, for every built-in
//! operator and a user operator that refuses some operands. The model
//! applies each operator's documented semantics with its own code, so a
//! fault in either the operator or the engine's merge path shows up.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::{base_seed, cases, mix, OnFail};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sarsen::merge::{Append, Int64Add, Max, Min, PutIfAbsent, Uint64Add};
use sarsen::{Database, DbOptions, Env, EnvOptions, Error, MergeOperator};

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

/// The operators under test, each with the model of its semantics.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Uint64,
    Int64,
    Max,
    Min,
    AppendComma,
    PutIfAbsent,
    Picky,
}

const KINDS: [Kind; 7] = [
    Kind::Uint64,
    Kind::Int64,
    Kind::Max,
    Kind::Min,
    Kind::AppendComma,
    Kind::PutIfAbsent,
    Kind::Picky,
];

impl Kind {
    fn operator(self) -> Arc<dyn MergeOperator> {
        match self {
            Kind::Uint64 => Arc::new(Uint64Add),
            Kind::Int64 => Arc::new(Int64Add),
            Kind::Max => Arc::new(Max),
            Kind::Min => Arc::new(Min),
            Kind::AppendComma => Arc::new(Append::with_delimiter(b",")),
            Kind::PutIfAbsent => Arc::new(PutIfAbsent),
            Kind::Picky => Arc::new(common::Picky),
        }
    }

    /// The value after merging `ops` into `old`, or `None` if the operator
    /// must refuse.
    fn model(self, old: Option<&Vec<u8>>, ops: &[Vec<u8>]) -> Option<Vec<u8>> {
        match self {
            Kind::Uint64 | Kind::Int64 => {
                let as_int = |v: &Vec<u8>| -> Option<i128> {
                    let b: [u8; 8] = v.as_slice().try_into().ok()?;
                    Some(match self {
                        Kind::Uint64 => i128::from(u64::from_le_bytes(b)),
                        _ => i128::from(i64::from_le_bytes(b)),
                    })
                };
                let mut sum = match old {
                    Some(v) => as_int(v)?,
                    None => 0,
                };
                for o in ops {
                    sum += as_int(o)?;
                }
                // Reduce modulo 2^64 to the operator's 8 bytes.
                let bits = sum.rem_euclid(1i128 << 64) as u64;
                Some(bits.to_le_bytes().to_vec())
            }
            Kind::Max => old.into_iter().chain(ops).max().cloned(),
            Kind::Min => old.into_iter().chain(ops).min().cloned(),
            Kind::AppendComma => {
                let parts: Vec<&[u8]> = old.into_iter().chain(ops).map(Vec::as_slice).collect();
                Some(parts.join(&b","[..]))
            }
            Kind::PutIfAbsent => Some(old.unwrap_or(&ops[0]).clone()),
            Kind::Picky => {
                if ops.iter().any(|o| o.first() == Some(&b'!')) {
                    return None;
                }
                let mut v = old.cloned().unwrap_or_default();
                ops.iter().for_each(|o| v.extend_from_slice(o));
                Some(v)
            }
        }
    }

    /// A random operand (sometimes one the operator must refuse).
    fn operand(self, rng: &mut SmallRng) -> Vec<u8> {
        match self {
            Kind::Uint64 | Kind::Int64 => {
                if rng.random_ratio(1, 20) {
                    vec![1; rng.random_range(0..12)]
                } else {
                    let n: u64 = match rng.random_range(0..3) {
                        0 => rng.random_range(0..10),
                        1 => u64::MAX - rng.random_range(0..10),
                        _ => rng.random(),
                    };
                    n.to_le_bytes().to_vec()
                }
            }
            Kind::Picky if rng.random_ratio(1, 8) => b"!no".to_vec(),
            _ => {
                // Mostly short; now and then long enough for an overflow run.
                let len = if rng.random_ratio(1, 30) {
                    rng.random_range(500..3000)
                } else {
                    rng.random_range(0..12)
                };
                (0..len).map(|_| rng.random_range(b'a'..=b'e')).collect()
            }
        }
    }
}

fn open(dir: &std::path::Path, page_size: u32) -> Env {
    // SAFETY: the test's own temporary directory; nothing else maps it.
    unsafe { EnvOptions::new().page_size(page_size).max_dbs(4).open(dir) }.unwrap()
}

/// Opens (creating) the database under test with `kind`'s operator.
fn open_db(env: &Env, name: Option<&str>, kind: Kind) -> Database {
    let mut w = env.write_txn().unwrap();
    let db = w
        .create_db_with(name, &DbOptions::new().merge_operator_arc(kind.operator()))
        .unwrap();
    w.commit().unwrap();
    db
}

fn contents(env: &Env, db: Database) -> Map {
    let r = env.read_txn().unwrap();
    r.iter(db)
        .unwrap()
        .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
        .collect()
}

/// One random case: `txns` transactions of random operations.
fn run_case(seed: u64, kind: Kind, page_size: u32, txns: usize) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let name = rng.random_bool(0.5).then_some("counters");
    let mut env = open(dir.path(), page_size);
    let mut db = open_db(&env, name, kind);
    let mut committed = Map::new();
    let mut trace = OnFail(format!(
        "SEED={seed} kind={kind:?} page={page_size} db={name:?}\n"
    ));
    let keys: Vec<Vec<u8>> = (0..40u32)
        .map(|i| format!("k{}", i * 7 % 40).into_bytes())
        .collect();
    for t in 0..txns {
        if rng.random_ratio(1, 10) {
            drop(env);
            env = open(dir.path(), page_size);
            db = open_db(&env, name, kind);
            trace.0.push_str("reopen\n");
        }
        let mut model = committed.clone();
        let mut w = env.write_txn().unwrap();
        for _ in 0..rng.random_range(1..40) {
            let k = &keys[rng.random_range(0..keys.len())];
            match rng.random_range(0..10) {
                0 => {
                    let v = kind.operand(&mut rng);
                    trace.0.push_str(&format!("put {k:?} {}\n", v.len()));
                    w.put(db, k, &v).unwrap();
                    model.insert(k.clone(), v);
                }
                1 => {
                    trace.0.push_str(&format!("delete {k:?}\n"));
                    assert_eq!(w.delete(db, k).unwrap(), model.remove(k).is_some());
                }
                2 => {
                    let got = w.get(db, k).unwrap().map(<[u8]>::to_vec);
                    assert_eq!(got.as_ref(), model.get(k), "get {k:?}");
                }
                n => {
                    let count = if n == 3 { rng.random_range(1..5) } else { 1 };
                    let ops: Vec<Vec<u8>> = (0..count).map(|_| kind.operand(&mut rng)).collect();
                    trace.0.push_str(&format!("merge {k:?} {ops:?}\n"));
                    let refs: Vec<&[u8]> = ops.iter().map(Vec::as_slice).collect();
                    let r = if count == 1 && rng.random_bool(0.5) {
                        w.merge(db, k, refs[0])
                    } else {
                        w.merge_many(db, k, &refs)
                    };
                    let want = kind.model(model.get(k), &ops);
                    match (r, want) {
                        (Ok(()), Some(v)) => {
                            model.insert(k.clone(), v);
                        }
                        (Err(Error::Merge { operator, .. }), None) => {
                            assert_eq!(operator, kind.operator().name());
                        }
                        (r, want) => panic!("merge gave {r:?}, model {want:?}"),
                    }
                    let got = w.get(db, k).unwrap().map(<[u8]>::to_vec);
                    assert_eq!(got.as_ref(), model.get(k), "after merge of {k:?}");
                }
            }
            if model.get(k).is_some_and(|v| v.len() > 20_000) {
                w.delete(db, k).unwrap();
                model.remove(k);
            }
        }
        let seen: Map = w
            .iter(db)
            .unwrap()
            .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
            .collect();
        assert_eq!(seen, model, "txn {t} before commit");
        assert_eq!(w.stat(db).unwrap().entries, model.len() as u64);
        if rng.random_ratio(1, 4) {
            trace.0.push_str("abort\n");
            w.abort();
        } else {
            trace.0.push_str("commit\n");
            w.commit().unwrap();
            committed = model;
            common::assert_check(&env, "after commit");
        }
        assert_eq!(contents(&env, db), committed, "txn {t} after end");
    }
}

#[test]
fn merges_match_the_model_for_every_operator() {
    let (base, replay) = base_seed("merge_model");
    let n = if replay { 1 } else { cases(2) };
    for (i, kind) in KINDS.iter().enumerate() {
        for c in 0..n {
            let seed = if replay {
                base
            } else {
                mix(base ^ (i as u64) << 40 ^ c as u64)
            };
            let page = if c % 2 == 0 { 4096 } else { 512 };
            run_case(seed, *kind, page, 60);
        }
    }
}

#[test]
fn the_operator_name_is_recorded_and_checked_on_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let add = DbOptions::new().merge_operator(Uint64Add);
    let max = DbOptions::new().merge_operator(Max);
    {
        let env = open(dir.path(), 4096);
        let mut w = env.write_txn().unwrap();
        // Recorded by open/create alone, with nothing else written.
        w.open_db_with(None, &add).unwrap().unwrap();
        w.create_db_with(Some("named"), &add).unwrap();
        w.commit().unwrap();
        // The same environment refuses a second operator on one handle.
        let r = env.read_txn().unwrap();
        let e = r.open_db_with(None, &max).unwrap_err();
        assert!(matches!(e, Error::MergeOperatorMismatch { .. }), "{e}");
        assert_eq!(r.list_dbs().unwrap(), ["named"]);
    }
    let env = open(dir.path(), 4096);
    for name in [None, Some("named")] {
        let r = env.read_txn().unwrap();
        match r.open_db_with(name, &max) {
            Err(Error::MergeOperatorMismatch {
                db,
                recorded,
                given,
            }) => {
                assert_eq!(db, name.unwrap_or(""));
                assert_eq!((recorded.as_str(), given.as_str()), ("uint64add", "max"));
            }
            other => panic!("{other:?}"),
        }
        drop(r);
        let mut w = env.write_txn().unwrap();
        assert!(matches!(
            w.open_db_with(name, &max),
            Err(Error::MergeOperatorMismatch { .. })
        ));
        // Without an operator the database opens, reads and takes puts, but
        // refuses merges.
        let db = w.open_db(name).unwrap().unwrap();
        w.put(db, b"k", &7u64.to_le_bytes()).unwrap();
        assert!(matches!(
            w.merge(db, b"k", &1u64.to_le_bytes()),
            Err(Error::NoMergeOperator { .. })
        ));
        let db = w.open_db_with(name, &add).unwrap().unwrap();
        w.merge(db, b"k", &1u64.to_le_bytes()).unwrap();
        assert_eq!(w.get(db, b"k").unwrap(), Some(&8u64.to_le_bytes()[..]));
        w.commit().unwrap();
    }
}

#[test]
fn a_merge_records_the_operator_and_a_dropped_database_forgets_it() {
    let dir = tempfile::tempdir().unwrap();
    {
        let env = open(dir.path(), 4096);
        let mut w = env.write_txn().unwrap();
        let db = w.create_db(Some("d")).unwrap();
        w.commit().unwrap();
        // Attached by a read transaction, recorded by the first merge.
        let r = env.read_txn().unwrap();
        r.open_db_with(Some("d"), &DbOptions::new().merge_operator(Min))
            .unwrap();
        drop(r);
        let mut w = env.write_txn().unwrap();
        w.merge(db, b"k", b"b").unwrap();
        w.commit().unwrap();
    }
    let env = open(dir.path(), 4096);
    let mut w = env.write_txn().unwrap();
    assert!(matches!(
        w.open_db_with(Some("d"), &DbOptions::new().merge_operator(Max)),
        Err(Error::MergeOperatorMismatch { .. })
    ));
    let db = w.open_db(Some("d")).unwrap().unwrap();
    w.drop_db(db).unwrap();
    // Created again, the database has no operator: another one is accepted
    // (this environment attached none to the handle: the mismatch above
    // was caught before attaching).
    let db = w
        .create_db_with(Some("d"), &DbOptions::new().merge_operator(Max))
        .unwrap();
    w.merge(db, b"k", b"a").unwrap();
    w.commit().unwrap();
    assert_eq!(
        contents(&env, db),
        Map::from([(b"k".to_vec(), b"a".to_vec())])
    );
}

#[test]
fn refused_merges_leave_the_value_and_the_transaction_usable() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path(), 4096);
    let db = open_db(&env, None, Kind::Picky);
    let mut w = env.write_txn().unwrap();
    w.merge(db, b"k", b"ab").unwrap();
    let e = w.merge_many(db, b"k", &[b"c", b"!d"]).unwrap_err();
    assert!(
        matches!(&e, Error::Merge { operator, .. } if operator == "picky"),
        "{e}"
    );
    assert!(matches!(
        w.merge_many(db, b"k", &[]),
        Err(Error::InvalidArgument(_))
    ));
    let big = vec![0u8; env.max_key_size() + 1];
    assert!(matches!(
        w.merge(db, &big, b"x"),
        Err(Error::KeyTooLarge { .. })
    ));
    assert_eq!(w.get(db, b"k").unwrap(), Some(&b"ab"[..]));
    w.merge(db, b"k", b"c").unwrap();
    w.commit().unwrap();
    assert_eq!(
        contents(&env, db),
        Map::from([(b"k".to_vec(), b"abc".to_vec())])
    );
    // Aborted merges leave nothing behind.
    let mut w = env.write_txn().unwrap();
    w.merge(db, b"k", b"zzz").unwrap();
    w.merge(db, b"new", b"1").unwrap();
    w.abort();
    assert_eq!(
        contents(&env, db),
        Map::from([(b"k".to_vec(), b"abc".to_vec())])
    );
}
