//! Nested write transactions (`RwTxn::nested`, LMDB's child transactions).
//!
//! - A model test: random puts (some in overflow runs, some in sorted
//!   bursts), deletes, `Uint64Add` merges, creates and drops of named
//!   databases and sequence steps, in random trees of nested transactions
//!   (depth up to 4, each child committed, aborted or dropped at random,
//!   then the outermost committed or aborted), checked against a stack of
//!   `BTreeMap` models: after every child ends the parent sees the model's
//!   top, after the outermost ends the committed state equals the model
//!   and `Env::check` is clean. Page sizes 512 and 4096, with and without
//!   write-map mode.
//! - Abort in a loop: 200 children that each write about 50 pages and
//!   change the parent's pages, then abort: the parent is unchanged, the
//!   file does not grow, and `check` is clean after the outermost commit.
//! - Errors in a child: `KeyTooLarge` and a refused merge leave it usable;
//!   a damaged page breaks it (`BadTxn`), and aborting or committing it
//!   restores the parent, which commits normally.
//!
//! Replay: `SARSEN_SEED=<seed> cargo test -p sarsen --test nested`.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{assert_check, base_seed, cases, mix, OnFail};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sarsen::merge::Uint64Add;
use sarsen::{Database, DbOptions, Durability, Env, EnvOptions, Error, RwTxn};

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

/// Named databases the model test creates and drops.
const NAMES: [&str; 3] = ["alpha", "beta", "gamma"];

/// Every database's entries and sequence; a named database is present
/// while it exists. The main database is under `""`.
#[derive(Clone, Debug, Default, PartialEq)]
struct Model(BTreeMap<String, (Map, u64)>);

impl Model {
    fn new() -> Model {
        let mut m = Model::default();
        m.0.insert(String::new(), (Map::new(), 0));
        m
    }
}

fn open(dir: &Path, page: u32, write_map: bool) -> Env {
    let o = EnvOptions::new()
        .page_size(page)
        .write_map(write_map)
        .durability(Durability::NoSync)
        .growth_step(u64::from(page));
    // SAFETY: the test's own temporary directory; nothing else maps it.
    unsafe { o.open(dir) }.unwrap()
}

/// The main database, with the `Uint64Add` operator attached.
fn main_db(env: &Env) -> Database {
    let mut w = env.write_txn().unwrap();
    let db = w
        .open_db_with(None, &DbOptions::new().merge_operator(Uint64Add))
        .unwrap()
        .unwrap();
    w.commit().unwrap();
    db
}

struct Ctx {
    rng: SmallRng,
    main: Database,
    page: usize,
    keys: u32,
    log: Vec<String>,
}

impl Ctx {
    fn key(&mut self) -> Vec<u8> {
        let k = self.rng.random_range(0..self.keys);
        format!("k{k:05}").into_bytes()
    }

    fn value(&mut self) -> Vec<u8> {
        let len = match self.rng.random_range(0..20) {
            0 => self.rng.random_range(self.page..3 * self.page),
            1..=3 => 8,
            _ => self.rng.random_range(0..self.page / 8),
        };
        vec![self.rng.random::<u8>(); len]
    }

    /// A database of the model at random: the main one or a name.
    fn pick(&mut self, txn: &mut RwTxn) -> (String, Option<Database>) {
        if self.rng.random_bool(0.5) {
            return (String::new(), Some(self.main));
        }
        let name = NAMES[self.rng.random_range(0..NAMES.len())];
        (name.into(), txn.open_db(Some(name)).unwrap())
    }
}

/// One random operation on `txn` and the model `m`.
fn step(cx: &mut Ctx, txn: &mut RwTxn, m: &mut Model) {
    let (name, db) = cx.pick(txn);
    let Some(db) = db else {
        assert!(!m.0.contains_key(&name), "{name} missing");
        if cx.rng.random_bool(0.5) {
            cx.log.push(format!("create {name}"));
            txn.create_db(Some(&name)).unwrap();
            m.0.insert(name, (Map::new(), 0));
        }
        return;
    };
    let (map, seq) = m.0.get_mut(&name).expect("model has the database");
    let k = cx.key();
    match cx.rng.random_range(0..24) {
        0..=9 => {
            let v = cx.value();
            cx.log.push(format!("put {name} {k:?} [{}]", v.len()));
            txn.put(db, &k, &v).unwrap();
            map.insert(k, v);
        }
        10..=13 => {
            cx.log.push(format!("delete {name} {k:?}"));
            assert_eq!(txn.delete(db, &k).unwrap(), map.remove(&k).is_some());
        }
        14..=16 if name.is_empty() => {
            let add = cx.rng.random_range(0..1000u64);
            cx.log.push(format!("merge {k:?} +{add}"));
            let r = txn.merge(db, &k, &add.to_le_bytes());
            match map.get(&k).map(Vec::len) {
                None | Some(8) => {
                    r.unwrap();
                    let old = map
                        .get(&k)
                        .map_or(0, |v| u64::from_le_bytes(v[..].try_into().unwrap()));
                    map.insert(k, old.wrapping_add(add).to_le_bytes().to_vec());
                }
                Some(_) => assert!(matches!(r, Err(Error::Merge { .. })), "{r:?}"),
            }
        }
        17 => {
            // A sorted burst: the append hint's path.
            let n = cx.rng.random_range(10..80);
            cx.log.push(format!("burst {name} {k:?} x{n}"));
            for i in 0..n {
                let mut key = k.clone();
                key.extend_from_slice(format!("{i:03}").as_bytes());
                let v = vec![i as u8; cx.rng.random_range(0..40)];
                txn.put(db, &key, &v).unwrap();
                map.insert(key.clone(), v);
            }
        }
        18..=19 => {
            let inc = cx.rng.random_range(0..5);
            cx.log.push(format!("next_sequence {name} +{inc}"));
            assert_eq!(txn.next_sequence(db, inc).unwrap(), *seq);
            *seq += inc;
        }
        20 if !name.is_empty() => {
            cx.log.push(format!("drop {name}"));
            txn.drop_db(db).unwrap();
            m.0.remove(&name);
        }
        21 => {
            cx.log.push(format!("clear {name}"));
            txn.clear_db(db).unwrap();
            map.clear();
        }
        _ => {
            assert_eq!(txn.get(db, &k).unwrap(), map.get(&k).map(Vec::as_slice));
        }
    }
}

/// `txn` shows exactly model `m`.
fn verify(cx: &Ctx, txn: &mut RwTxn, m: &Model, when: &str) {
    let listed: Vec<String> = m.0.keys().filter(|n| !n.is_empty()).cloned().collect();
    assert_eq!(txn.list_dbs().unwrap(), listed, "{when}: list_dbs");
    for name in std::iter::once("").chain(NAMES) {
        let db = if name.is_empty() {
            Some(cx.main)
        } else {
            txn.open_db(Some(name)).unwrap()
        };
        match (db, m.0.get(name)) {
            (None, None) => {}
            (Some(db), Some((map, seq))) => {
                let got: Map = txn
                    .iter(db)
                    .unwrap()
                    .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
                    .collect();
                assert!(got == *map, "{when}: contents of {name:?} differ");
                assert_eq!(
                    txn.sequence(db).unwrap(),
                    *seq,
                    "{when}: sequence of {name:?}"
                );
                assert_eq!(
                    txn.stat(db).unwrap().entries,
                    map.len() as u64,
                    "{when}: {name:?}"
                );
            }
            (db, model) => panic!(
                "{when}: {name:?} exists: {} in txn, {} in model",
                db.is_some(),
                model.is_some()
            ),
        }
    }
}

/// Random steps and children on `txn`, whose model is the top of `stack`.
fn session(cx: &mut Ctx, txn: &mut RwTxn, stack: &mut Vec<Model>, depth: usize) {
    let steps = cx.rng.random_range(0..40);
    for _ in 0..steps {
        if depth < 4 && cx.rng.random_ratio(1, 10) {
            let top = stack.last().expect("a model").clone();
            stack.push(top);
            cx.log.push(format!("begin child at depth {}", depth + 1));
            let mut child = txn.nested().unwrap();
            session(cx, &mut child, stack, depth + 1);
            let done = stack.pop().expect("the child's model");
            match cx.rng.random_range(0..4) {
                0 | 1 => {
                    cx.log.push(format!("commit child at depth {}", depth + 1));
                    child.commit().unwrap();
                    *stack.last_mut().expect("a model") = done;
                }
                2 => {
                    cx.log.push(format!("abort child at depth {}", depth + 1));
                    child.abort();
                }
                _ => {
                    cx.log.push(format!("drop child at depth {}", depth + 1));
                    drop(child);
                }
            }
            let when = format!("after a child at depth {} ended", depth + 1);
            verify(cx, txn, stack.last().expect("a model"), &when);
        } else {
            step(cx, txn, stack.last_mut().expect("a model"));
        }
    }
}

fn model_case(seed: u64, page: u32, write_map: bool) {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path(), page, write_map);
    let mut cx = Ctx {
        rng: SmallRng::seed_from_u64(seed),
        main: main_db(&env),
        page: page as usize,
        keys: if page == 512 { 400 } else { 3000 },
        log: Vec::new(),
    };
    let mut committed = Model::new();
    for round in 0..6 {
        cx.log.push(format!("round {round}"));
        let mut stack = vec![committed.clone()];
        let mut w = env.write_txn().unwrap();
        session(&mut cx, &mut w, &mut stack, 0);
        let top = stack.pop().expect("the outermost model");
        if cx.rng.random_ratio(3, 4) {
            cx.log.push("commit".into());
            w.commit().unwrap();
            committed = top;
        } else {
            cx.log.push("abort".into());
            w.abort();
        }
        let mut w = env.write_txn().unwrap();
        let trail = OnFail(cx.log[cx.log.len().saturating_sub(40)..].join("\n"));
        verify(
            &cx,
            &mut w,
            &committed,
            &format!("round {round}: committed state"),
        );
        drop(w);
        assert_check(&env, &format!("round {round}"));
        drop(trail);
    }
}

#[test]
fn model_nested_trees() {
    let (base, replay) = base_seed("model_nested_trees");
    let n = if replay { 1 } else { cases(3) };
    for case in 0..n as u64 {
        for (i, (page, write_map)) in [(512, false), (512, true), (4096, false), (4096, true)]
            .into_iter()
            .enumerate()
        {
            let seed = mix(base ^ (case << 8) ^ i as u64);
            let _f = OnFail(format!(
                "SEED={base} case {case}: page {page}, write_map {write_map}, case seed {seed}"
            ));
            model_case(seed, page, write_map);
        }
    }
}

fn file_len(dir: &Path) -> u64 {
    std::fs::metadata(dir.join("data.sdb")).unwrap().len()
}

fn contents(txn: &RwTxn, db: Database) -> Map {
    txn.iter(db)
        .unwrap()
        .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
        .collect()
}

fn abort_loop(write_map: bool) {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path(), 4096, write_map);
    let db = env.main_db();
    let mut w = env.write_txn().unwrap();
    for i in 0..2000u32 {
        w.put(db, &i.to_be_bytes(), &[7u8; 100]).unwrap();
    }
    w.commit().unwrap();
    let mut w = env.write_txn().unwrap();
    // Dirty pages of the parent, which the children change in place.
    for i in (0..2000u32).step_by(7) {
        w.put(db, &i.to_be_bytes(), &[8u8; 100]).unwrap();
    }
    let before = contents(&w, db);
    let pages = w.info().pages_used;
    let dirty = w.info().dirty_pages;
    let mut len_after_first = 0;
    for round in 0..200u32 {
        let mut child = w.nested().unwrap();
        // About 50 pages: 20 overflow runs of 2 pages, and changes to
        // leaves the parent has dirty and to clean ones.
        for j in 0..20u32 {
            child
                .put(db, &(10_000 + j).to_be_bytes(), &vec![round as u8; 5000])
                .unwrap();
        }
        for i in (0..2000u32).step_by(40) {
            child.put(db, &i.to_be_bytes(), &[9u8; 60]).unwrap();
        }
        for i in (3..2000u32).step_by(97) {
            child.delete(db, &i.to_be_bytes()).unwrap();
        }
        assert!(child.info().dirty_pages >= dirty + 40);
        child.abort();
        assert_eq!(
            w.info().pages_used,
            pages,
            "round {round}: the page count grew"
        );
        assert_eq!(
            w.info().dirty_pages,
            dirty,
            "round {round}: dirty pages changed"
        );
        if round == 0 {
            len_after_first = file_len(dir.path());
        }
        if round % 50 == 0 {
            assert!(
                contents(&w, db) == before,
                "round {round}: the parent changed"
            );
        }
    }
    assert_eq!(file_len(dir.path()), len_after_first, "the file grew");
    assert!(contents(&w, db) == before);
    w.commit().unwrap();
    assert_check(&env, "after the outermost commit");
    // The commit itself may take a page or two for its GC record.
    let next = env.info().unwrap().next_pgno;
    assert!(
        next <= pages + 4,
        "pages of aborted children were kept: {next} > {pages} + 4"
    );
}

#[test]
fn abort_in_a_loop_does_not_grow() {
    abort_loop(false);
    abort_loop(true);
}

/// Whether `page` is a leaf (kind 2) whose first node has a 6-byte key
/// starting with `v` and a value starting with `marker` (design.md §2).
fn is_victim_leaf(page: &[u8], marker: &[u8]) -> bool {
    let u16_at = |o: usize| usize::from(u16::from_le_bytes([page[o], page[o + 1]]));
    if page[4] != 2 || u16_at(6) == 0 {
        return false;
    }
    let node = u16_at(20);
    if node + 8 + 6 + marker.len() > page.len() || u16_at(node + 2) != 6 {
        return false;
    }
    page[node + 8] == b'v' && page[node + 14..].starts_with(marker)
}

fn child_errors(write_map: bool) {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path(), 4096, write_map);
    let db = main_db(&env);
    let marker = b"VICTIM-VALUE-0123456789";
    let mut w = env.write_txn().unwrap();
    w.put(db, b"counter", &5u64.to_le_bytes()).unwrap();
    w.put(db, b"text", b"not a counter").unwrap();
    let victim = w.create_db(Some("victim")).unwrap();
    for i in 0..3000u32 {
        let mut v = marker.to_vec();
        v.extend_from_slice(&[1u8; 80]);
        w.put(victim, format!("v{i:05}").as_bytes(), &v).unwrap();
    }
    w.commit().unwrap();

    // Errors that leave the child usable.
    let mut w = env.write_txn().unwrap();
    w.put(db, b"parent", b"1").unwrap();
    let mut child = w.nested().unwrap();
    let long = vec![b'k'; env.max_key_size() + 1];
    assert!(matches!(
        child.put(db, &long, b"v"),
        Err(Error::KeyTooLarge { .. })
    ));
    assert!(matches!(
        child.merge(db, b"text", &1u64.to_le_bytes()),
        Err(Error::Merge { .. })
    ));
    assert!(matches!(
        child.merge(db, b"counter", b"bad"),
        Err(Error::Merge { .. })
    ));
    child.merge(db, b"counter", &2u64.to_le_bytes()).unwrap();
    child.put(db, b"child", b"2").unwrap();
    child.commit().unwrap();
    assert_eq!(
        w.get(db, b"counter").unwrap(),
        Some(&7u64.to_le_bytes()[..])
    );
    assert_eq!(w.get(db, b"child").unwrap(), Some(&b"2"[..]));
    w.commit().unwrap();
    drop(env);

    // Damage every leaf of "victim", so that a write there breaks the
    // transaction.
    let path = dir.path().join("data.sdb");
    let mut bytes = std::fs::read(&path).unwrap();
    let mut damaged = 0;
    for page in bytes.chunks_mut(4096) {
        if is_victim_leaf(page, marker) {
            page.fill(0);
            damaged += 1;
        }
    }
    assert!(damaged > 10, "{damaged} pages damaged");
    std::fs::write(&path, &bytes).unwrap();
    let env = open(dir.path(), 4096, write_map);
    let victim = env
        .read_txn()
        .unwrap()
        .open_db(Some("victim"))
        .unwrap()
        .unwrap();

    for commit in [false, true] {
        let mut w = env.write_txn().unwrap();
        w.put(db, b"parent", b"3").unwrap();
        let before = contents(&w, db);
        let mut child = w.nested().unwrap();
        child.put(db, b"child", b"lost").unwrap();
        child.delete(db, b"counter").unwrap();
        let e = child.put(victim, b"v00005", b"x").unwrap_err();
        assert!(matches!(e, Error::Corrupted { .. }), "{e:?}");
        assert!(matches!(child.put(db, b"k", b"v"), Err(Error::BadTxn)));
        assert!(matches!(child.nested().map(drop), Err(Error::BadTxn)));
        if commit {
            assert!(matches!(child.commit(), Err(Error::BadTxn)));
        } else {
            child.abort();
        }
        assert!(contents(&w, db) == before, "the parent changed");
        w.put(db, b"after", b"4").unwrap();
        let mut child = w.nested().unwrap();
        child.put(db, b"child", b"5").unwrap();
        child.commit().unwrap();
        w.commit().unwrap();
        let r = env.read_txn().unwrap();
        assert_eq!(r.get(db, b"parent").unwrap(), Some(&b"3"[..]));
        assert_eq!(r.get(db, b"child").unwrap(), Some(&b"5"[..]));
        assert_eq!(
            r.get(db, b"counter").unwrap(),
            Some(&7u64.to_le_bytes()[..])
        );
        assert_eq!(r.get(db, b"after").unwrap(), Some(&b"4"[..]));
    }
}

#[test]
fn errors_in_a_child_leave_the_parent_intact() {
    child_errors(false);
    child_errors(true);
}

/// A child leaked with `mem::forget` counts as committed.
#[test]
fn forgotten_child_counts_as_committed() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path(), 512, false);
    let db = env.main_db();
    let mut w = env.write_txn().unwrap();
    w.put(db, b"a", b"1").unwrap();
    {
        let mut child = w.nested().unwrap();
        child.put(db, b"b", b"2").unwrap();
        let mut grandchild = child.nested().unwrap();
        grandchild.put(db, b"c", b"3").unwrap();
        std::mem::forget(grandchild);
        child.abort();
    }
    assert_eq!(w.get(db, b"b").unwrap(), None);
    assert_eq!(w.get(db, b"c").unwrap(), None);
    let mut child = w.nested().unwrap();
    child.put(db, b"d", b"4").unwrap();
    std::mem::forget(child);
    w.commit().unwrap();
    let r = env.read_txn().unwrap();
    assert_eq!(r.get(db, b"d").unwrap(), Some(&b"4"[..]));
    drop(r);
    assert_check(&env, "after a forgotten child");
}
