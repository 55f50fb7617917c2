//! Multimaps (LMDB's `MDB_DUPSORT`, with `MDB_DUPFIXED`, `MDB_REVERSEDUP`
//! and `MDB_INTEGERDUP`) against a model `BTreeMap<key, sorted values>`:
//! random puts (plain, `put_no_dup_data`, `append_dup`), deletes of one
//! pair and of whole keys, `delete_range`, gets, full scans both ways,
//! bounded ranges, and every duplicate cursor move (`next_dup`,
//! `prev_dup`, `first_dup`, `last_dup`, `next_nodup`, `prev_nodup`,
//! `seek_both`, `seek_both_range`, `dup_count`, `get_multiple` /
//! `next_multiple`), with commit, abort, nested transactions and reopen.
//! Values of varied sizes at 512-byte and 4 KiB pages move keys between a
//! single value, an inline list and a sub-tree, and back; `check` runs
//! after every commit. Also: the duplicate mode is recorded and checked on
//! reopen, and the operations of the other mode are refused.

mod common;

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;

use common::{assert_check, base_seed, cases, mix, OnFail};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sarsen::{Database, DbOptions, Env, EnvOptions, Error, KeyOrder, RoTxn, RwTxn};

/// Values by length, then bytewise (a user comparator of values).
struct ByLen;
impl sarsen::Comparator for ByLen {
    fn name(&self) -> &str {
        "bylen"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        a.len().cmp(&b.len()).then_with(|| a.cmp(b))
    }
}

/// One duplicate configuration under test.
#[derive(Clone, Copy, Debug)]
struct Mode {
    order: fn() -> KeyOrder,
    /// Value size for DUPFIXED or integer values; `None`: any size.
    size: Option<usize>,
    fixed: bool,
    page: u32,
}

/// A model: each key's values, sorted by the mode's value order.
type Model = BTreeMap<Vec<u8>, Vec<Vec<u8>>>;

fn cmp_vals(m: &Mode, a: &[u8], b: &[u8]) -> Ordering {
    (m.order)().compare(a, b)
}

fn model_put(model: &mut Model, m: &Mode, k: &[u8], v: &[u8]) -> bool {
    let vals = model.entry(k.to_vec()).or_default();
    match vals.binary_search_by(|x| cmp_vals(m, x, v)) {
        Ok(_) => false,
        Err(i) => {
            vals.insert(i, v.to_vec());
            true
        }
    }
}

fn model_del(model: &mut Model, m: &Mode, k: &[u8], v: &[u8]) -> bool {
    let Some(vals) = model.get_mut(k) else {
        return false;
    };
    let Ok(i) = vals.binary_search_by(|x| cmp_vals(m, x, v)) else {
        return false;
    };
    vals.remove(i);
    if vals.is_empty() {
        model.remove(k);
    }
    true
}

fn pairs(model: &Model) -> Vec<(Vec<u8>, Vec<u8>)> {
    model
        .iter()
        .flat_map(|(k, vs)| vs.iter().map(move |v| (k.clone(), v.clone())))
        .collect()
}

fn opts(m: &Mode) -> DbOptions {
    let o = DbOptions::new().dup_sort((m.order)());
    if m.fixed {
        o.dup_fixed()
    } else {
        o
    }
}

fn key(rng: &mut SmallRng) -> Vec<u8> {
    // Few keys, so that keys collect many values; some long keys.
    let k = rng.random_range(0..12u32);
    let mut b = format!("key{k:02}").into_bytes();
    if k == 11 {
        b.resize(150, b'x');
    }
    b
}

fn value(rng: &mut SmallRng, m: &Mode, k: &[u8], page: u32) -> Vec<u8> {
    if let Some(n) = m.size {
        // A narrow range, so that deletes hit.
        let x = rng.random_range(0..400u64);
        return x.to_ne_bytes()[..n].to_vec();
    }
    let max = if page == 512 {
        224usize.min(236 - k.len())
    } else {
        300
    };
    let len = match rng.random_range(0..10) {
        0 => 0,
        1..=6 => rng.random_range(1..8),
        _ => rng.random_range(8..=max),
    };
    let fill = rng.random_range(0..60u8);
    let mut v = vec![fill; len];
    if len > 0 {
        v[0] = rng.random_range(0..30);
    }
    v
}

/// Compares every pair of `db` with the model: a forward and a backward
/// scan, per-key gets and counts.
fn compare(txn: &impl Reader, db: Database, model: &Model, what: &str) {
    let want = pairs(model);
    let got: Vec<(Vec<u8>, Vec<u8>)> = txn.pairs(db, true);
    assert_eq!(got, want, "{what}: forward scan");
    let mut back = txn.pairs(db, false);
    back.reverse();
    assert_eq!(back, want, "{what}: backward scan");
    assert_eq!(txn.entries(db), want.len() as u64, "{what}: stat entries");
    for (k, vs) in model {
        assert_eq!(txn.first(db, k).as_deref(), Some(&vs[0][..]), "{what}: get");
        assert_eq!(txn.count(db, k), vs.len() as u64, "{what}: dup_count");
    }
}

/// Read operations of `RoTxn` and `RwTxn` the test needs.
trait Reader {
    fn pairs(&self, db: Database, fwd: bool) -> Vec<(Vec<u8>, Vec<u8>)>;
    fn entries(&self, db: Database) -> u64;
    fn first(&self, db: Database, k: &[u8]) -> Option<Vec<u8>>;
    fn count(&self, db: Database, k: &[u8]) -> u64;
}

macro_rules! reader {
    ($t:ty) => {
        impl Reader for $t {
            fn pairs(&self, db: Database, fwd: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
                let it = self.iter(db).unwrap();
                let own = |e: sarsen::Result<(&[u8], &[u8])>| {
                    let (k, v) = e.unwrap();
                    (k.to_vec(), v.to_vec())
                };
                if fwd {
                    it.map(own).collect()
                } else {
                    it.rev().map(own).collect()
                }
            }
            fn entries(&self, db: Database) -> u64 {
                self.stat(db).unwrap().entries
            }
            fn first(&self, db: Database, k: &[u8]) -> Option<Vec<u8>> {
                self.get(db, k).unwrap().map(<[u8]>::to_vec)
            }
            fn count(&self, db: Database, k: &[u8]) -> u64 {
                let mut c = self.cursor(db).unwrap();
                match c.seek_exact(k).unwrap() {
                    Some(_) => c.dup_count().unwrap(),
                    None => 0,
                }
            }
        }
    };
}
reader!(RoTxn<'_>);
reader!(RwTxn<'_>);

/// Duplicate cursor moves from a random key, against the model.
fn cursor_moves(txn: &RwTxn<'_>, db: Database, m: &Mode, model: &Model, rng: &mut SmallRng) {
    let Some((k, vs)) = model.iter().nth(rng.random_range(0..model.len().max(1))) else {
        return;
    };
    let mut c = txn.cursor(db).unwrap();
    // next_dup across the key, then stays at the end.
    let mut got = vec![c.seek_exact(k).unwrap().unwrap().to_vec()];
    while let Some((ck, v)) = c.next_dup().unwrap() {
        assert_eq!(ck, &k[..]);
        got.push(v.to_vec());
    }
    assert_eq!(&got, vs, "next_dup");
    assert_eq!(c.current().unwrap().unwrap().1, &vs[vs.len() - 1][..]);
    // prev_dup back to the start.
    let mut back = vec![c.current().unwrap().unwrap().1.to_vec()];
    while let Some((_, v)) = c.prev_dup().unwrap() {
        back.push(v.to_vec());
    }
    back.reverse();
    assert_eq!(&back, vs, "prev_dup");
    assert_eq!(c.last_dup().unwrap().unwrap().1, &vs[vs.len() - 1][..]);
    assert_eq!(c.first_dup().unwrap().unwrap().1, &vs[0][..]);
    // next_nodup / prev_nodup land on the neighbours' first / last value.
    let next = model
        .range::<[u8], _>((Bound::Excluded(&k[..]), Bound::Unbounded))
        .next();
    let got = c
        .next_nodup()
        .unwrap()
        .map(|(k, v)| (k.to_vec(), v.to_vec()));
    assert_eq!(
        got,
        next.map(|(k, vs)| (k.clone(), vs[0].clone())),
        "next_nodup"
    );
    c.seek_exact(k).unwrap();
    let prev = model
        .range::<[u8], _>((Bound::Unbounded, Bound::Excluded(&k[..])))
        .next_back();
    let got = c
        .prev_nodup()
        .unwrap()
        .map(|(k, v)| (k.to_vec(), v.to_vec()));
    let want = prev.map(|(k, vs)| (k.clone(), vs[vs.len() - 1].clone()));
    assert_eq!(got, want, "prev_nodup");
    // seek_both / seek_both_range with a present and a random value.
    let present = &vs[rng.random_range(0..vs.len())];
    let got = c.seek_both(k, present).unwrap().map(|e| e.1.to_vec());
    assert_eq!(got.as_ref(), Some(present), "seek_both present");
    let probe = value(rng, m, k, m.page);
    let want_exact = vs.iter().find(|v| cmp_vals(m, v, &probe).is_eq());
    let got = c.seek_both(k, &probe).unwrap().map(|e| e.1.to_vec());
    assert_eq!(got.as_ref(), want_exact, "seek_both random");
    let want_range = vs.iter().find(|v| cmp_vals(m, v, &probe).is_ge());
    let got = c.seek_both_range(k, &probe).unwrap().map(|e| e.1.to_vec());
    assert_eq!(got.as_ref(), want_range, "seek_both_range");
    if m.fixed {
        c.seek_exact(k).unwrap();
        let mut all = Vec::new();
        let mut batch = c.get_multiple().unwrap().map(|(_, b)| b.to_vec());
        while let Some(b) = batch {
            all.extend_from_slice(&b);
            batch = c.next_multiple().unwrap().map(|(_, b)| b.to_vec());
        }
        assert_eq!(all, vs.concat(), "get_multiple/next_multiple");
    }
}

/// A bounded range scan both ways, against the model.
fn range_scan(txn: &RwTxn<'_>, db: Database, model: &Model, rng: &mut SmallRng) {
    let a = key(rng);
    let b = key(rng);
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    let incl = rng.random_bool(0.5);
    let want: Vec<(Vec<u8>, Vec<u8>)> = pairs(model)
        .into_iter()
        .filter(|(k, _)| *k >= lo && if incl { *k <= hi } else { *k < hi })
        .collect();
    let own = |e: sarsen::Result<(&[u8], &[u8])>| {
        let (k, v) = e.unwrap();
        (k.to_vec(), v.to_vec())
    };
    let it = if incl {
        txn.range(db, &lo[..]..=&hi[..]).unwrap()
    } else {
        txn.range(db, &lo[..]..&hi[..]).unwrap()
    };
    let got: Vec<_> = it.map(own).collect();
    assert_eq!(
        got,
        want,
        "range {}..{}",
        common::show(&lo),
        common::show(&hi)
    );
    let it = if incl {
        txn.range(db, &lo[..]..=&hi[..]).unwrap()
    } else {
        txn.range(db, &lo[..]..&hi[..]).unwrap()
    };
    let mut got: Vec<_> = it.rev().map(own).collect();
    got.reverse();
    assert_eq!(got, want, "range reversed");
}

/// One random write on `txn` and the model.
fn write_op(
    w: &mut RwTxn<'_>,
    db: Database,
    m: &Mode,
    model: &mut Model,
    rng: &mut SmallRng,
) -> String {
    let k = key(rng);
    let v = value(rng, m, &k, m.page);
    let fixed_ok =
        |model: &Model, v: &[u8]| !m.fixed || model.get(&k).is_none_or(|vs| vs[0].len() == v.len());
    match rng.random_range(0..100) {
        0..=49 => {
            let r = w.put(db, &k, &v);
            if fixed_ok(model, &v) {
                r.unwrap();
                model_put(model, m, &k, &v);
            } else {
                assert!(matches!(r, Err(Error::BadValueSize { .. })), "{r:?}");
            }
            format!("put {} {}", common::show(&k), common::show(&v))
        }
        50..=59 => {
            if fixed_ok(model, &v) {
                let added = w.put_no_dup_data(db, &k, &v).unwrap();
                assert_eq!(added, model_put(model, m, &k, &v), "put_no_dup_data");
            }
            format!("put_no_dup_data {}", common::show(&k))
        }
        60..=79 => {
            // Delete a present value most of the time.
            let v = match model.get(&k) {
                Some(vs) if rng.random_bool(0.8) => vs[rng.random_range(0..vs.len())].clone(),
                _ => v,
            };
            let gone = w.delete_dup(db, &k, &v).unwrap();
            assert_eq!(gone, model_del(model, m, &k, &v), "delete_dup");
            format!("delete_dup {} {}", common::show(&k), common::show(&v))
        }
        80..=85 => {
            let gone = w.delete(db, &k).unwrap();
            assert_eq!(gone, model.remove(&k).is_some(), "delete");
            format!("delete {}", common::show(&k))
        }
        86..=87 => {
            let hi = key(rng);
            let (lo, hi) = if k <= hi { (k, hi) } else { (hi, k) };
            let n = w.delete_range(db, &lo[..]..&hi[..]).unwrap();
            let keys: Vec<Vec<u8>> = model
                .range(lo.clone()..hi.clone())
                .map(|e| e.0.clone())
                .collect();
            let want: usize = keys.iter().map(|k| model.remove(k).unwrap().len()).sum();
            assert_eq!(n, want as u64, "delete_range count");
            format!("delete_range {}..{}", common::show(&lo), common::show(&hi))
        }
        _ => {
            // append_dup after the last pair, or refused.
            let last = pairs(model).pop();
            let after = last
                .as_ref()
                .is_none_or(|(lk, lv)| lk < &k || (lk == &k && cmp_vals(m, lv, &v).is_lt()));
            let r = w.append_dup(db, &k, &v);
            if after && fixed_ok(model, &v) {
                r.unwrap();
                model_put(model, m, &k, &v);
            } else if !after {
                assert!(matches!(r, Err(Error::KeyNotGreater)), "{r:?}");
            }
            format!("append_dup {} {}", common::show(&k), common::show(&v))
        }
    }
}

fn modes() -> Vec<Mode> {
    let mut out = Vec::new();
    for page in [512u32, 4096] {
        out.push(Mode {
            order: || KeyOrder::Bytewise,
            size: None,
            fixed: false,
            page,
        });
        out.push(Mode {
            order: || KeyOrder::ReverseBytewise,
            size: None,
            fixed: false,
            page,
        });
        out.push(Mode {
            order: || KeyOrder::U32,
            size: Some(4),
            fixed: true,
            page,
        });
        out.push(Mode {
            order: || KeyOrder::U64,
            size: Some(8),
            fixed: false,
            page,
        });
        out.push(Mode {
            order: || KeyOrder::Bytewise,
            size: Some(8),
            fixed: true,
            page,
        });
        out.push(Mode {
            order: || KeyOrder::custom(ByLen),
            size: None,
            fixed: false,
            page,
        });
    }
    out
}

fn env_at(path: &Path, m: &Mode) -> Env {
    let o = EnvOptions::new().page_size(m.page).max_dbs(4);
    common::open(path, o)
}

fn run_case(m: Mode, seed: u64) {
    let _g = OnFail(format!("mode {m:?}, SEED={seed}"));
    let mut rng = SmallRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let mut env = env_at(dir.path(), &m);
    let mut model = Model::new();
    let mut log: Vec<String> = Vec::new();
    for round in 0..40 {
        let mut w = env.write_txn().unwrap();
        let db = w.create_db_with(Some("multi"), &opts(&m)).unwrap();
        let mut scratch = model.clone();
        let ops = rng.random_range(1..60);
        for _ in 0..ops {
            log.push(write_op(&mut w, db, &m, &mut scratch, &mut rng));
        }
        // A nested transaction whose changes are kept or dropped.
        if rng.random_bool(0.3) {
            let mut inner = scratch.clone();
            let mut n = w.nested().unwrap();
            for _ in 0..rng.random_range(1..20) {
                log.push(write_op(&mut n, db, &m, &mut inner, &mut rng));
            }
            if rng.random_bool(0.5) {
                n.commit().unwrap();
                scratch = inner;
            } else {
                n.abort();
            }
        }
        let _l = OnFail(format!(
            "round {round}, last ops: {:?}",
            &log[log.len().saturating_sub(12)..]
        ));
        compare(&w, db, &scratch, "in the write txn");
        cursor_moves(&w, db, &m, &scratch, &mut rng);
        range_scan(&w, db, &scratch, &mut rng);
        if rng.random_bool(0.8) {
            w.commit().unwrap();
            model = scratch;
            assert_check(&env, &format!("round {round}"));
        } else {
            w.abort();
        }
        let r = env.read_txn().unwrap();
        if let Some(db) = r.open_db(Some("multi")).unwrap() {
            compare(&r, db, &model, "after commit");
        }
        drop(r);
        if rng.random_bool(0.1) {
            drop(env);
            env = env_at(dir.path(), &m);
        }
    }
}

#[test]
fn dupsort_matches_the_model() {
    let (base, replay) = base_seed("dupsort");
    let n = if replay { 1 } else { cases(2) };
    for (mi, m) in modes().into_iter().enumerate() {
        for c in 0..n {
            run_case(
                m,
                if replay {
                    base
                } else {
                    mix(base ^ (mi as u64) << 32 ^ c as u64)
                },
            );
        }
    }
}

#[test]
fn dup_mode_is_recorded_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let env = common::open(dir.path(), EnvOptions::new().max_dbs(4));
    let mut w = env.write_txn().unwrap();
    let d = w
        .create_db_with(
            Some("d"),
            &DbOptions::new().dup_sort(KeyOrder::ReverseBytewise),
        )
        .unwrap();
    let plain = w.create_db(Some("plain")).unwrap();
    w.put(d, b"k", b"v").unwrap();
    w.commit().unwrap();
    drop(env);
    let env = common::open(dir.path(), EnvOptions::new().max_dbs(4));
    let mut w = env.write_txn().unwrap();
    // Opening without options accepts; with another mode it is refused.
    assert!(w.open_db(Some("d")).unwrap().is_some());
    let r = w.open_db_with(Some("d"), &DbOptions::new().dup_sort(KeyOrder::Bytewise));
    assert!(matches!(r, Err(Error::DupModeMismatch { .. })), "{r:?}");
    let r = w.open_db_with(Some("plain"), &DbOptions::new().dup_fixed());
    assert!(matches!(r, Err(Error::DupModeMismatch { .. })), "{r:?}");
    // The other mode's operations are refused, and change nothing.
    let merge = w.merge(d, b"k", b"x");
    assert!(matches!(
        merge,
        Err(Error::NoMergeOperator { .. }) | Err(Error::WrongDupMode { .. })
    ));
    assert!(matches!(
        w.replace(d, b"k", b"x"),
        Err(Error::WrongDupMode { .. })
    ));
    assert!(matches!(w.take(d, b"k"), Err(Error::WrongDupMode { .. })));
    assert!(matches!(
        w.delete_dup(plain, b"k", b"v"),
        Err(Error::WrongDupMode { .. })
    ));
    assert!(matches!(
        w.put_no_dup_data(plain, b"k", b"v"),
        Err(Error::WrongDupMode { .. })
    ));
    let mut c = w.cursor(plain).unwrap();
    assert!(matches!(
        c.seek_both(b"k", b"v"),
        Err(Error::WrongDupMode { .. })
    ));
    drop(c);
    assert_eq!(w.get(d, b"k").unwrap(), Some(&b"v"[..]));
    // Sizes: a DUPSORT key leaves room for a sub-tree record.
    let long = vec![1u8; env.max_key_size()];
    assert!(matches!(
        w.put(d, &long, b"v"),
        Err(Error::KeyTooLarge { .. })
    ));
    w.put(plain, &long, b"v").unwrap();
    // The main database takes a duplicate mode while it is empty.
    let main = w
        .open_db_with(None, &DbOptions::new().dup_fixed())
        .unwrap()
        .unwrap();
    w.put(main, b"a", &[1, 2]).unwrap();
    w.put(main, b"a", &[0, 2]).unwrap();
    assert!(matches!(
        w.put(main, b"a", &[1]),
        Err(Error::BadValueSize {
            len: 1,
            expected: 2
        })
    ));
    assert_eq!(w.get(main, b"a").unwrap(), Some(&[0u8, 2][..]));
    w.commit().unwrap();
    assert_check(&env, "modes");
}

#[test]
fn a_user_order_of_values_is_recorded_and_required() {
    let dir = tempfile::tempdir().unwrap();
    let env = common::open(dir.path(), EnvOptions::new().max_dbs(4));
    let by_len = DbOptions::new().dup_sort(KeyOrder::custom(ByLen));
    let mut w = env.write_txn().unwrap();
    let db = w.create_db_with(Some("d"), &by_len).unwrap();
    for v in [&b"ccc"[..], b"a", b"bb", b"b"] {
        w.put(db, b"k", v).unwrap();
    }
    w.commit().unwrap();
    drop(env);
    // A new environment: the comparator must be given again.
    let env = common::open(dir.path(), EnvOptions::new().max_dbs(4));
    let r = env.read_txn().unwrap();
    let db = r.open_db(Some("d")).unwrap().unwrap();
    assert!(matches!(r.get(db, b"k"), Err(Error::NoComparator { .. })));
    drop(r);
    let mut w = env.write_txn().unwrap();
    let other = DbOptions::new().dup_sort(KeyOrder::Bytewise);
    let e = w.open_db_with(Some("d"), &other);
    assert!(matches!(e, Err(Error::DupModeMismatch { .. })), "{e:?}");
    let db = w.open_db_with(Some("d"), &by_len).unwrap().unwrap();
    let vals: Vec<&[u8]> = w.iter(db).unwrap().map(|e| e.unwrap().1).collect();
    assert_eq!(vals, [&b"a"[..], b"b", b"bb", b"ccc"]);
    assert!(matches!(w.dup_mode(db).unwrap(), Some(m) if m.order.compare(b"zz", b"a").is_gt()));
    w.commit().unwrap();
    assert_check(&env, "user order of values");
}

#[test]
fn a_read_transaction_of_a_fresh_env_checks_and_attaches_the_order_of_values() {
    let dir = tempfile::tempdir().unwrap();
    let by_len = DbOptions::new().dup_sort(KeyOrder::custom(ByLen));
    let want: Vec<&[u8]> = vec![b"a", b"b", b"bb", b"ccc"];
    {
        let env = common::open(dir.path(), EnvOptions::new().max_dbs(4));
        let mut w = env.write_txn().unwrap();
        let db = w.create_db_with(Some("d"), &by_len).unwrap();
        w.create_db(Some("plain")).unwrap();
        for v in want.iter().rev() {
            w.put(db, b"k", v).unwrap();
        }
        w.commit().unwrap();
    }
    // A new environment whose first transaction is a read.
    let env = common::open(dir.path(), EnvOptions::new().max_dbs(4));
    let r = env.read_txn().unwrap();
    let bytewise = DbOptions::new().dup_sort(KeyOrder::Bytewise);
    for (name, o) in [("d", &bytewise), ("plain", &by_len)] {
        let e = r.open_db_with(Some(name), o);
        assert!(
            matches!(e, Err(Error::DupModeMismatch { .. })),
            "{name}: {e:?}"
        );
    }
    let db = r.open_db_with(Some("d"), &by_len).unwrap().unwrap();
    let vals: Vec<&[u8]> = r.iter(db).unwrap().map(|e| e.unwrap().1).collect();
    assert_eq!(vals, want);
    // A pair found by the order of values, and one the other order would
    // put elsewhere.
    let mut c = r.cursor(db).unwrap();
    assert!(c.seek_both(b"k", b"bb").unwrap().is_some());
    assert_eq!(c.dup_count().unwrap(), 4);
    assert_eq!(c.next_dup().unwrap().map(|e| e.1), Some(&b"ccc"[..]));
}

#[test]
fn compact_copy_keeps_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let env = common::open(
        &dir.path().join("a"),
        EnvOptions::new().page_size(512).max_dbs(4),
    );
    let m = Mode {
        order: || KeyOrder::custom(ByLen),
        size: None,
        fixed: false,
        page: 512,
    };
    let mut rng = SmallRng::seed_from_u64(7);
    let mut model = Model::new();
    let mut w = env.write_txn().unwrap();
    let db = w.create_db_with(Some("multi"), &opts(&m)).unwrap();
    for _ in 0..600 {
        let k = key(&mut rng);
        let v = value(&mut rng, &m, &k, 512);
        w.put(db, &k, &v).unwrap();
        model_put(&mut model, &m, &k, &v);
    }
    w.commit().unwrap();
    let to = dir.path().join("b");
    env.compact_copy_to(&to).unwrap();
    let copy = common::open(&to, EnvOptions::new().max_dbs(4));
    assert_check(&copy, "copy");
    // The user order of values must be attached to the copy's handle.
    let mut w = copy.write_txn().unwrap();
    w.open_db_with(Some("multi"), &opts(&m)).unwrap().unwrap();
    w.commit().unwrap();
    assert_check(&copy, "copy, comparator attached");
    let r = copy.read_txn().unwrap();
    let db = r.open_db(Some("multi")).unwrap().unwrap();
    compare(&r, db, &model, "copy");
}

/// Found by the differential test against LMDB, with values as long as a
/// key may be (two to a page at 1 KiB): a delete that empties a sub-tree
/// leaf whose parent cannot merge leaves the leaf empty, and the next put
/// looked for the sub-tree's first value there (`Corrupted`); and a
/// sub-tree emptied value by value, or down to one value above an empty
/// leaf, must end as no key or a single value.
#[test]
fn sub_trees_of_maximal_values_survive_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let env = common::open(dir.path(), EnvOptions::new().page_size(1024));
    let opts = DbOptions::new().dup_sort(KeyOrder::Bytewise);
    let mut w = env.write_txn().unwrap();
    let db = w.open_db_with(None, &opts).unwrap().unwrap();
    for b in [5u8, 3, 7, 1] {
        w.put(db, b"k", &[b; 480]).unwrap();
    }
    assert!(w.delete_dup(db, b"k", &[1; 480]).unwrap());
    w.put(db, b"k", &[0; 480]).unwrap();
    let vals: Vec<u8> = w.iter(db).unwrap().map(|e| e.unwrap().1[0]).collect();
    assert_eq!(vals, [0, 3, 5, 7]);
    w.commit().unwrap();
    assert_check(&env, "after the put");
    let mut w = env.write_txn().unwrap();
    for b in 10..20u8 {
        w.put(db, b"j", &[b; 480]).unwrap();
    }
    for b in (10..20u8).rev() {
        assert!(w.delete_dup(db, b"j", &[b; 480]).unwrap());
        let left = w
            .iter(db)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().0 == b"j")
            .count();
        assert_eq!(left, usize::from(b - 10));
    }
    for b in [3u8, 0, 7, 5] {
        assert!(w.delete_dup(db, b"k", &[b; 480]).unwrap());
    }
    assert_eq!(w.stat(db).unwrap().entries, 0);
    w.commit().unwrap();
    assert_check(&env, "emptied");
}
