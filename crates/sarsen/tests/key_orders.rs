//! Key orders (LMDB's `MDB_REVERSEKEY`, `MDB_INTEGERKEY`, `mdb_set_compare`)
//! against a `BTreeMap` whose keys sort by the same order: random puts,
//! deletes, gets, range scans both ways, cursor seeks, `append` of
//! ascending keys and `delete_range`, with commit, abort and reopen, for
//! the bytewise, reverse, `u32`, `u64` and two user orders; `check` after
//! every commit. Also: the order is recorded and checked on reopen, integer
//! orders refuse keys of another size, a user comparator must be attached,
//! and a compact copy keeps the order.

mod common;

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;

use common::{assert_check, base_seed, cases, mix, OnFail};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sarsen::{Comparator, Database, DbOptions, Env, EnvOptions, Error, KeyOrder, RwTxn};

/// Case-insensitive ASCII, ties broken bytewise.
struct NoCase;
impl Comparator for NoCase {
    fn name(&self) -> &str {
        "nocase"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        let lower = |k: &[u8]| k.to_ascii_lowercase();
        lower(a).cmp(&lower(b)).then_with(|| a.cmp(b))
    }
}

/// Shorter keys first, then bytewise.
struct ByLen;
impl Comparator for ByLen {
    fn name(&self) -> &str {
        "bylen"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        a.len().cmp(&b.len()).then_with(|| a.cmp(b))
    }
}

/// A model key: bytes sorted by the database's order.
#[derive(Clone)]
struct K(Vec<u8>, &'static KeyOrder);
impl PartialEq for K {
    fn eq(&self, o: &K) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for K {}
impl PartialOrd for K {
    fn partial_cmp(&self, o: &K) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for K {
    fn cmp(&self, o: &K) -> Ordering {
        self.1.compare(&self.0, &o.0)
    }
}

type Model = BTreeMap<K, Vec<u8>>;

/// The orders under test, each with a name for messages.
fn orders() -> Vec<(&'static str, &'static KeyOrder)> {
    let leak = |o: KeyOrder| -> &'static KeyOrder { Box::leak(Box::new(o)) };
    vec![
        ("bytewise", leak(KeyOrder::Bytewise)),
        ("reverse", leak(KeyOrder::ReverseBytewise)),
        ("u32", leak(KeyOrder::U32)),
        ("u64", leak(KeyOrder::U64)),
        ("nocase", leak(KeyOrder::custom(NoCase))),
        ("bylen", leak(KeyOrder::custom(ByLen))),
    ]
}

fn open(dir: &Path) -> Env {
    // SAFETY: the test's own temporary directory; nothing else maps it.
    unsafe { EnvOptions::new().page_size(512).max_dbs(4).open(dir) }.unwrap()
}

/// A random key for `ord`: integers spread so that their native bytes do
/// not sort like their values; short strings over `aAbB.` otherwise, so
/// case variants, shared prefixes and shared suffixes are common.
fn key(rng: &mut SmallRng, ord: &KeyOrder) -> Vec<u8> {
    match ord.key_size() {
        Some(4) => (rng.random_range(0..3000u32) * 997).to_ne_bytes().to_vec(),
        Some(_) => (rng.random_range(0..3000u64) * 0x1_0000_0101)
            .to_ne_bytes()
            .to_vec(),
        None => {
            let len = rng.random_range(0..7);
            (0..len).map(|_| b"aAbB."[rng.random_range(0..5)]).collect()
        }
    }
}

fn value(rng: &mut SmallRng) -> Vec<u8> {
    let max = if rng.random_ratio(1, 30) { 700 } else { 24 };
    vec![rng.random::<u8>(); rng.random_range(0..max)]
}

fn bound(rng: &mut SmallRng, ord: &KeyOrder) -> Bound<Vec<u8>> {
    match rng.random_range(0..3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(key(rng, ord)),
        _ => Bound::Excluded(key(rng, ord)),
    }
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The model's keys within `lo..hi` in order `ord`, in order.
fn model_range(
    m: &Model,
    ord: &KeyOrder,
    lo: &Bound<Vec<u8>>,
    hi: &Bound<Vec<u8>>,
) -> Vec<Vec<u8>> {
    let after_lo = |k: &[u8]| match lo {
        Bound::Unbounded => true,
        Bound::Included(b) => ord.compare(k, b) != Ordering::Less,
        Bound::Excluded(b) => ord.compare(k, b) == Ordering::Greater,
    };
    let before_hi = |k: &[u8]| match hi {
        Bound::Unbounded => true,
        Bound::Included(b) => ord.compare(k, b) != Ordering::Greater,
        Bound::Excluded(b) => ord.compare(k, b) == Ordering::Less,
    };
    m.keys()
        .map(|k| &k.0)
        .filter(|k| after_lo(k) && before_hi(k))
        .cloned()
        .collect()
}

fn db_opts(ord: &KeyOrder) -> DbOptions {
    DbOptions::new().key_order(ord.clone())
}

/// Every entry of `db` forward and backward against the model.
fn compare_all(w: &RwTxn, db: Database, m: &Model, when: &str) {
    let fwd: Vec<(Vec<u8>, Vec<u8>)> = w
        .iter(db)
        .unwrap()
        .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
        .collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = m.iter().map(|(k, v)| (k.0.clone(), v.clone())).collect();
    assert_eq!(fwd, want, "{when}: forward iteration");
    let back: Vec<Vec<u8>> = w
        .iter(db)
        .unwrap()
        .rev()
        .map(|e| e.unwrap().0.to_vec())
        .collect();
    let want_back: Vec<Vec<u8>> = m.keys().rev().map(|k| k.0.clone()).collect();
    assert_eq!(back, want_back, "{when}: backward iteration");
}

/// One random operation on `w` and the pending model `m`.
fn step(
    rng: &mut SmallRng,
    w: &mut RwTxn,
    db: Database,
    ord: &'static KeyOrder,
    m: &mut Model,
) -> String {
    let k = key(rng, ord);
    let mk = K(k.clone(), ord);
    match rng.random_range(0..10) {
        0..=2 => {
            let v = value(rng);
            w.put(db, &k, &v).unwrap();
            m.insert(mk, v);
            format!("put {k:?}")
        }
        3 => {
            assert_eq!(
                w.delete(db, &k).unwrap(),
                m.remove(&mk).is_some(),
                "delete {k:?}"
            );
            format!("delete {k:?}")
        }
        4 => {
            assert_eq!(
                w.get(db, &k).unwrap().map(<[u8]>::to_vec),
                m.get(&mk).cloned(),
                "get {k:?}"
            );
            format!("get {k:?}")
        }
        5 => {
            // Ascending appends after the last key, and one that is not.
            let mut batch: Vec<K> = (0..rng.random_range(1..30))
                .map(|_| K(key(rng, ord), ord))
                .collect();
            batch.sort();
            batch.dedup();
            let last = m.keys().next_back().cloned();
            for b in batch {
                let r = w.append(db, &b.0, b"app");
                let greater = m.keys().next_back().is_none_or(|l| &b > l);
                if greater {
                    r.unwrap();
                    m.insert(b, b"app".to_vec());
                } else {
                    assert!(
                        matches!(r, Err(Error::KeyNotGreater)),
                        "append {:?}: {r:?}",
                        b.0
                    );
                }
            }
            format!("append batch after {:?}", last.map(|k| k.0))
        }
        6 => {
            let (lo, hi) = (bound(rng, ord), bound(rng, ord));
            let want = model_range(m, ord, &lo, &hi);
            let got: Vec<Vec<u8>> = w
                .range(db, (as_ref(&lo), as_ref(&hi)))
                .unwrap()
                .map(|e| e.unwrap().0.to_vec())
                .collect();
            assert_eq!(got, want, "range {lo:?}..{hi:?}");
            let back: Vec<Vec<u8>> = w
                .range(db, (as_ref(&lo), as_ref(&hi)))
                .unwrap()
                .rev()
                .map(|e| e.unwrap().0.to_vec())
                .collect();
            let want_back: Vec<Vec<u8>> = want.iter().rev().cloned().collect();
            assert_eq!(back, want_back, "range {lo:?}..{hi:?} backwards");
            format!("range {lo:?}..{hi:?}")
        }
        7 => {
            let mut c = w.cursor(db).unwrap();
            let got = c.seek(&k).unwrap().map(|e| e.0.to_vec());
            let mut it = m.range(mk.clone()..).map(|(k, _)| k.0.clone());
            assert_eq!(got, it.next(), "seek {k:?}");
            assert_eq!(
                c.next().unwrap().map(|e| e.0.to_vec()),
                if got.is_some() { it.next() } else { None }
            );
            let before = m.range(..mk).next_back().map(|(k, _)| k.0.clone());
            let mut c = w.cursor(db).unwrap();
            if c.seek(&k).unwrap().is_some() {
                assert_eq!(
                    c.prev().unwrap().map(|e| e.0.to_vec()),
                    before,
                    "prev after seek {k:?}"
                );
            }
            format!("seek {k:?}")
        }
        8 => {
            let (lo, hi) = (bound(rng, ord), bound(rng, ord));
            let want = model_range(m, ord, &lo, &hi);
            let n = w.delete_range(db, (as_ref(&lo), as_ref(&hi))).unwrap();
            assert_eq!(n, want.len() as u64, "delete_range {lo:?}..{hi:?}");
            for k in want {
                m.remove(&K(k, ord));
            }
            format!("delete_range {lo:?}..{hi:?}")
        }
        _ => {
            // A key of the wrong size for an integer order.
            if let Some(size) = ord.key_size() {
                let bad = vec![7u8; size - 1];
                let r = w.put(db, &bad, b"x");
                assert!(
                    matches!(r, Err(Error::BadKeySize { len, expected }) if len == size - 1 && expected == size),
                    "{r:?}"
                );
                assert_eq!(w.get(db, &bad).unwrap(), None);
                assert!(!w.delete(db, &bad).unwrap());
                assert!(matches!(
                    w.append(db, &[0; 9], b"x"),
                    Err(Error::BadKeySize { .. })
                ));
            }
            "wrong-size key".into()
        }
    }
}

/// One case: a database in `ord` (the main database or a named one) under
/// random transactions, committed or aborted, reopened now and then.
fn run_case(seed: u64, label: &str, ord: &'static KeyOrder, main: bool) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let name = if main { None } else { Some("t") };
    let mut env = open(dir.path());
    let mut committed = Model::new();
    let txns = 14 * common::scale();
    for t in 0..txns {
        let mut w = env.write_txn().unwrap();
        let db = w.create_db_with(name, &db_opts(ord)).unwrap();
        let mut m = committed.clone();
        let mut log = OnFail(format!("SEED={seed} order={label} main={main} txn={t}"));
        for _ in 0..rng.random_range(1..120) {
            let what = step(&mut rng, &mut w, db, ord, &mut m);
            log.0.push_str("\n  ");
            log.0.push_str(&what);
        }
        compare_all(&w, db, &m, &log.0);
        if rng.random_ratio(1, 4) {
            w.abort();
        } else {
            w.commit().unwrap();
            committed = m;
            assert_check(&env, &log.0);
        }
        if rng.random_ratio(1, 4) {
            drop(env);
            env = open(dir.path());
        }
        let r = env.read_txn().unwrap();
        let Some(db) = r.open_db_with(name, &db_opts(ord)).unwrap() else {
            // Never committed: the named database does not exist yet.
            assert!(committed.is_empty(), "{}", log.0);
            continue;
        };
        let got: Vec<Vec<u8>> = r.iter(db).unwrap().map(|e| e.unwrap().0.to_vec()).collect();
        let want: Vec<Vec<u8>> = committed.keys().map(|k| k.0.clone()).collect();
        assert_eq!(got, want, "{}: after the transaction", log.0);
        for k in committed.keys().take(20) {
            assert_eq!(
                r.get(db, &k.0).unwrap(),
                committed.get(k).map(Vec::as_slice)
            );
        }
        drop(log);
    }
}

#[test]
fn model_every_order() {
    let (base, replay) = base_seed("key_orders::model");
    let n = if replay { 1 } else { cases(2) };
    for (i, (label, ord)) in orders().into_iter().enumerate() {
        for c in 0..n {
            let seed = if replay {
                base
            } else {
                mix(base ^ (i as u64 * 1000 + c as u64))
            };
            run_case(seed, label, ord, c % 2 == 1);
        }
    }
}

fn is_mismatch<T: std::fmt::Debug>(r: sarsen::Result<T>) -> bool {
    matches!(r, Err(Error::KeyOrderMismatch { .. }))
}

#[test]
fn recorded_order_is_checked_on_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let env = open(dir.path());
        let mut w = env.write_txn().unwrap();
        let rev = w
            .create_db_with(Some("rev"), &db_opts(&KeyOrder::ReverseBytewise))
            .unwrap();
        w.put(rev, b"ab", b"1").unwrap();
        w.put(rev, b"ba", b"2").unwrap();
        let ints = w
            .create_db_with(Some("ints"), &db_opts(&KeyOrder::U32))
            .unwrap();
        w.put(ints, &1u32.to_ne_bytes(), b"").unwrap();
        w.commit().unwrap();
    }
    let env = open(dir.path());
    let mut w = env.write_txn().unwrap();
    for o in [KeyOrder::Bytewise, KeyOrder::U32, KeyOrder::custom(NoCase)] {
        assert!(
            is_mismatch(w.open_db_with(Some("rev"), &db_opts(&o))),
            "{o:?}"
        );
    }
    assert!(is_mismatch(
        w.open_db_with(Some("ints"), &db_opts(&KeyOrder::U64))
    ));
    assert!(is_mismatch(
        w.create_db_with(Some("ints"), &db_opts(&KeyOrder::Bytewise))
    ));
    // The transaction is still usable, and the recorded order is used when
    // none is given (libmdbx's MDBX_DB_ACCEDE).
    let rev = w.open_db(Some("rev")).unwrap().unwrap();
    assert!(matches!(
        w.key_order(rev).unwrap(),
        KeyOrder::ReverseBytewise
    ));
    let keys: Vec<&[u8]> = w.iter(rev).unwrap().map(|e| e.unwrap().0).collect();
    assert_eq!(keys, [&b"ba"[..], b"ab"]);
    assert!(w
        .open_db_with(Some("rev"), &db_opts(&KeyOrder::ReverseBytewise))
        .unwrap()
        .is_some());
    drop(w);
    let r = env.read_txn().unwrap();
    assert!(is_mismatch(
        r.open_db_with(Some("rev"), &db_opts(&KeyOrder::Bytewise))
    ));
    assert!(is_mismatch(
        r.open_db_with(Some("ints"), &db_opts(&KeyOrder::U64))
    ));
}

#[test]
fn main_database_takes_an_order_while_empty() {
    let dir = tempfile::tempdir().unwrap();
    {
        let env = open(dir.path());
        let mut w = env.write_txn().unwrap();
        let db = w
            .open_db_with(None, &db_opts(&KeyOrder::U64))
            .unwrap()
            .unwrap();
        for i in [5u64, 1 << 40, 3] {
            w.put(db, &i.to_ne_bytes(), b"").unwrap();
        }
        w.commit().unwrap();
    }
    let env = open(dir.path());
    let mut w = env.write_txn().unwrap();
    assert!(is_mismatch(
        w.open_db_with(None, &db_opts(&KeyOrder::Bytewise))
    ));
    assert!(is_mismatch(w.open_db_with(None, &db_opts(&KeyOrder::U32))));
    let db = env.main_db();
    assert!(matches!(w.key_order(db).unwrap(), KeyOrder::U64));
    let keys: Vec<u64> = w
        .iter(db)
        .unwrap()
        .map(|e| u64::from_ne_bytes(e.unwrap().0.try_into().unwrap()))
        .collect();
    assert_eq!(keys, [3, 5, 1 << 40]);
    drop(w);
    assert_check(&env, "main in u64 order");

    // A main database that holds keys keeps its bytewise order.
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path());
    let mut w = env.write_txn().unwrap();
    w.put(env.main_db(), b"k", b"v").unwrap();
    assert!(is_mismatch(
        w.open_db_with(None, &db_opts(&KeyOrder::ReverseBytewise))
    ));
}

#[test]
fn integer_keys_of_another_size_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path());
    let mut w = env.write_txn().unwrap();
    let op = DbOptions::new()
        .key_order(KeyOrder::U32)
        .merge_operator(sarsen::merge::Uint64Add);
    let db = w.create_db_with(Some("ints"), &op).unwrap();
    for bad in [&b""[..], b"abc", b"abcde", &[0; 8]] {
        let r = w.put(db, bad, b"v");
        assert!(
            matches!(r, Err(Error::BadKeySize { len, expected: 4 }) if len == bad.len()),
            "{r:?}"
        );
        assert!(matches!(
            w.append(db, bad, b"v"),
            Err(Error::BadKeySize { .. })
        ));
        assert!(matches!(
            w.merge(db, bad, &1u64.to_le_bytes()),
            Err(Error::BadKeySize { .. })
        ));
        assert!(matches!(
            w.put_no_overwrite(db, bad, b"v"),
            Err(Error::BadKeySize { .. })
        ));
        assert_eq!(w.get(db, bad).unwrap(), None);
        assert!(!w.delete(db, bad).unwrap());
        assert_eq!(w.take(db, bad).unwrap(), None);
    }
    // The transaction is intact and takes good keys.
    w.merge(db, &7u32.to_ne_bytes(), &2u64.to_le_bytes())
        .unwrap();
    w.put(db, &300u32.to_ne_bytes(), b"v").unwrap();
    w.commit().unwrap();
    let r = env.read_txn().unwrap();
    assert_eq!(r.get(db, b"abc").unwrap(), None);
    assert_eq!(
        r.get(db, &7u32.to_ne_bytes()).unwrap(),
        Some(&2u64.to_le_bytes()[..])
    );
    assert_eq!(r.stat(db).unwrap().entries, 2);
}

#[test]
fn user_comparator_must_be_attached() {
    let dir = tempfile::tempdir().unwrap();
    {
        let env = open(dir.path());
        let mut w = env.write_txn().unwrap();
        let db = w
            .create_db_with(Some("words"), &db_opts(&KeyOrder::custom(NoCase)))
            .unwrap();
        for k in [&b"b"[..], b"A", b"a", b"B"] {
            w.put(db, k, b"").unwrap();
        }
        w.commit().unwrap();
        assert_check(&env, "nocase");
    }
    let env = open(dir.path());
    {
        let r = env.read_txn().unwrap();
        assert!(
            matches!(r.open_db(Some("words")), Err(Error::NoComparator { name, .. }) if name == "nocase")
        );
        assert!(is_mismatch(r.open_db_with(
            Some("words"),
            &db_opts(&KeyOrder::custom(ByLen))
        )));
        assert!(is_mismatch(
            r.open_db_with(Some("words"), &db_opts(&KeyOrder::Bytewise))
        ));
        // The database is listed, and the check walks it (order unchecked).
        assert_eq!(r.list_dbs().unwrap(), ["words"]);
        assert!(r.check().unwrap().is_ok());
    }
    {
        let mut w = env.write_txn().unwrap();
        assert!(matches!(
            w.open_db(Some("words")),
            Err(Error::NoComparator { .. })
        ));
        assert!(matches!(
            w.create_db(Some("words")),
            Err(Error::NoComparator { .. })
        ));
        assert!(is_mismatch(w.open_db_with(
            Some("words"),
            &db_opts(&KeyOrder::custom(ByLen))
        )));
    }
    let r = env.read_txn().unwrap();
    let db = r
        .open_db_with(Some("words"), &db_opts(&KeyOrder::custom(NoCase)))
        .unwrap()
        .unwrap();
    let keys: Vec<&[u8]> = r.iter(db).unwrap().map(|e| e.unwrap().0).collect();
    assert_eq!(keys, [&b"A"[..], b"a", b"B", b"b"]);
    // Attached now: a plain open works, another name is refused.
    assert!(r.open_db(Some("words")).unwrap().is_some());
    drop(r);
    let mut w = env.write_txn().unwrap();
    assert!(is_mismatch(w.open_db_with(
        Some("words"),
        &db_opts(&KeyOrder::custom(ByLen))
    )));
    // A dropped database can be created again in another built-in order.
    w.drop_db(db).unwrap();
    let db = w
        .create_db_with(Some("words"), &db_opts(&KeyOrder::ReverseBytewise))
        .unwrap();
    w.put(db, b"za", b"").unwrap();
    w.put(db, b"az", b"").unwrap();
    let keys: Vec<&[u8]> = w.iter(db).unwrap().map(|e| e.unwrap().0).collect();
    assert_eq!(keys, [&b"za"[..], b"az"]);
    w.commit().unwrap();
    assert_check(&env, "recreated in reverse order");
}

#[test]
fn compact_copy_keeps_the_order() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path());
    let mut w = env.write_txn().unwrap();
    let main = w
        .open_db_with(None, &db_opts(&KeyOrder::ReverseBytewise))
        .unwrap()
        .unwrap();
    let words = w
        .create_db_with(Some("words"), &db_opts(&KeyOrder::custom(ByLen)))
        .unwrap();
    for i in 0..500u32 {
        let k = format!("{}", i * 7919).into_bytes();
        w.put(main, &k, b"m").unwrap();
        w.put(words, &k, b"w").unwrap();
    }
    w.commit().unwrap();
    let out = tempfile::tempdir().unwrap();
    env.compact_copy_to(out.path()).unwrap();
    let copy = open(out.path());
    assert_check(&copy, "compact copy");
    let r = env.read_txn().unwrap();
    let c = copy.read_txn().unwrap();
    let cw = c
        .open_db_with(Some("words"), &db_opts(&KeyOrder::custom(ByLen)))
        .unwrap()
        .unwrap();
    assert!(matches!(
        c.key_order(copy.main_db()).unwrap(),
        KeyOrder::ReverseBytewise
    ));
    for (a, b) in [(main, copy.main_db()), (words, cw)] {
        let want: Vec<&[u8]> = r.iter(a).unwrap().map(|e| e.unwrap().0).collect();
        let got: Vec<&[u8]> = c.iter(b).unwrap().map(|e| e.unwrap().0).collect();
        assert_eq!(got, want);
    }
}

/// Calls left before [`Trap`] panics (0: never).
static TRAP_IN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Bytewise, but panics on the `TRAP_IN`-th call from when it is set.
struct Trap;
impl Comparator for Trap {
    fn name(&self) -> &str {
        "trap"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        use std::sync::atomic::Ordering::Relaxed;
        let left = TRAP_IN.load(Relaxed);
        if left != 0 {
            TRAP_IN.store(left - 1, Relaxed);
            assert!(left != 1, "the comparator panics");
        }
        a.cmp(b)
    }
}

/// A comparator that panics inside a write, with the unwind caught by the
/// caller (as a server's task runtime does): the transaction is broken
/// from then on (writes and commit give `BadTxn`, as std's `Mutex` is
/// poisoned), so a tree left half changed is never committed. Each round
/// sets the panic at another comparison of a batch of puts and deletes;
/// the database must always hold the last committed state of a model.
#[test]
fn a_panicking_comparator_breaks_the_transaction() {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::sync::atomic::Ordering::Relaxed;
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path());
    let ord: &'static KeyOrder = Box::leak(Box::new(KeyOrder::custom(Trap)));
    let mut w = env.write_txn().unwrap();
    let db = w.create_db_with(Some("trap"), &db_opts(ord)).unwrap();
    w.commit().unwrap();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let (seed, _) = base_seed("a_panicking_comparator_breaks_the_transaction");
    eprintln!("seed {seed}");
    let mut rng = SmallRng::seed_from_u64(mix(seed));
    let mut panicked = 0;
    for round in 1..=120u64 {
        let mut w = env.write_txn().unwrap();
        let mut pending = model.clone();
        TRAP_IN.store(round * 7, Relaxed);
        let r = catch_unwind(AssertUnwindSafe(|| -> sarsen::Result<()> {
            for _ in 0..40 {
                let k = format!("{:04}", rng.random_range(0..600)).into_bytes();
                if rng.random_bool(0.05) {
                    // A range delete runs the order between its deletes too.
                    let hi = format!("{:04}", rng.random_range(0..600)).into_bytes();
                    w.delete_range(db, &k[..]..&hi[..])?;
                    if hi <= k {
                        continue;
                    }
                    let gone: Vec<Vec<u8>> = pending
                        .range::<[u8], _>((Bound::Included(&k[..]), Bound::Excluded(&hi[..])))
                        .map(|(k, _)| k.clone())
                        .collect();
                    for g in gone {
                        pending.remove(&g);
                    }
                } else if rng.random_bool(0.25) {
                    w.delete(db, &k)?;
                    pending.remove(&k);
                } else {
                    let v = vec![round as u8; rng.random_range(1..60)];
                    w.put(db, &k, &v)?;
                    pending.insert(k, v);
                }
            }
            Ok(())
        }));
        TRAP_IN.store(0, Relaxed);
        match r {
            Ok(r) => {
                r.unwrap();
                w.commit().unwrap();
                model = pending;
            }
            Err(_) => {
                panicked += 1;
                assert!(matches!(w.put(db, b"after", b"x"), Err(Error::BadTxn)));
                assert!(matches!(w.delete(db, b"after"), Err(Error::BadTxn)));
                assert!(matches!(w.commit(), Err(Error::BadTxn)));
            }
        }
        let r = env.read_txn().unwrap();
        let got: BTreeMap<Vec<u8>, Vec<u8>> = r
            .iter(db)
            .unwrap()
            .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
            .collect();
        assert!(
            got == model,
            "round {round}: the database is not the last commit"
        );
    }
    assert!(
        panicked > 20,
        "the comparator panicked in {panicked} rounds"
    );
    assert_check(&env, "after panicking comparators");
}
