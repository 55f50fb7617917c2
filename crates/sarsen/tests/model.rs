//! Model-based test: random sequences of operations on the main database and several named
//! databases, checked step by step against a `BTreeMap` per database (the committed model plus
//! a pending model for the open write transaction).
//!
//! Replay a failure: `SARSEN_SEED=<seed printed as SEED=...> cargo test -p sarsen --test model <test>`
//! More cases: `SARSEN_TEST_CASES=50`; longer cases: `SARSEN_TEST_SCALE=4`.

mod common;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Bound;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::path::Path;

use common::*;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, RngCore, SeedableRng};
use sarsen::{Database, Durability, Env, EnvOptions, Error, RwTxn};

const NAMES: &[&str] = &[
    "alpha",
    "beta",
    "gamma",
    "d",
    "zz a-rather-long-database-name/with:odd chars \u{fc}",
];
const PAGE_SIZES: &[u32] = &[512, 1024, 4096, 16384, 65536];

#[derive(Clone, Copy, Debug)]
enum Expect {
    Same,
    New(u64),
    SameOrNew(u64),
}

#[derive(Clone, Default, Debug, PartialEq)]
struct State {
    main: Map,
    named: BTreeMap<String, Map>,
}

#[derive(Clone, Debug, PartialEq)]
enum Target {
    Main,
    Named(String),
}

impl State {
    fn map(&self, t: &Target) -> &Map {
        match t {
            Target::Main => &self.main,
            Target::Named(n) => &self.named[n],
        }
    }
    fn map_mut(&mut self, t: &Target) -> &mut Map {
        match t {
            Target::Main => &mut self.main,
            Target::Named(n) => self.named.get_mut(n).unwrap(),
        }
    }
}

/// Handles for the databases of one state (main handle is `Case::main`).
type Handles = HashMap<String, Database>;

struct Case {
    rng: StdRng,
    seed: u64,
    page_size: u32,
    max_key: usize,
    prefix: Vec<u8>,
    main: Option<Database>,
    committed: State,
    handles: Handles,
    /// Handles of named dbs whose drop was committed (must give DbNotFound).
    dropped: Vec<(String, Database)>,
    last_txnid: Option<u64>,
    log: VecDeque<String>,
    step: u64,
    tally: BTreeMap<&'static str, usize>,
    max_depth: u32,
    max_entries: usize,
}

fn in_bounds(k: &[u8], lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    let lo_ok = match lo {
        Bound::Unbounded => true,
        Bound::Included(b) => k >= b.as_slice(),
        Bound::Excluded(b) => k > b.as_slice(),
    };
    let hi_ok = match hi {
        Bound::Unbounded => true,
        Bound::Included(b) => k <= b.as_slice(),
        Bound::Excluded(b) => k < b.as_slice(),
    };
    lo_ok && hi_ok
}

fn as_ref_bound(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
    }
}

fn inverted(lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a > b,
        (Bound::Included(a), Bound::Excluded(b))
        | (Bound::Excluded(a), Bound::Included(b))
        | (Bound::Excluded(a), Bound::Excluded(b)) => a >= b,
        _ => false,
    }
}

fn owned(e: Option<(&[u8], &[u8])>) -> Option<(Vec<u8>, Vec<u8>)> {
    e.map(|(k, v)| (k.to_vec(), v.to_vec()))
}

fn show_entry(e: &Option<(Vec<u8>, Vec<u8>)>) -> String {
    match e {
        None => "None".into(),
        Some((k, v)) => format!("({}, {})", show(k), show(v)),
    }
}

impl Case {
    fn new(seed: u64, page_size: u32) -> Self {
        Case {
            rng: StdRng::seed_from_u64(seed),
            seed,
            page_size,
            max_key: 0,
            prefix: Vec::new(),
            main: None,
            committed: State::default(),
            handles: Handles::new(),
            dropped: Vec::new(),
            last_txnid: None,
            log: VecDeque::new(),
            step: 0,
            tally: BTreeMap::new(),
            max_depth: 0,
            max_entries: 0,
        }
    }

    fn tally(&mut self, k: &'static str) {
        *self.tally.entry(k).or_default() += 1;
    }

    fn log(&mut self, s: String) {
        self.step += 1;
        if self.log.len() >= 400 {
            self.log.pop_front();
        }
        self.log.push_back(format!("#{} {s}", self.step));
    }

    fn main(&self) -> Database {
        self.main.expect("main handle")
    }

    fn db(&self, h: &Handles, t: &Target) -> Database {
        match t {
            Target::Main => self.main(),
            Target::Named(n) => *h.get(n).unwrap_or_else(|| panic!("no handle for {n:?}")),
        }
    }

    // ---------------------------------------------------------------- generators

    fn pick_target(&mut self, st: &State) -> Target {
        if st.named.is_empty() || self.rng.random_bool(0.4) {
            Target::Main
        } else {
            let i = self.rng.random_range(0..st.named.len());
            Target::Named(st.named.keys().nth(i).unwrap().clone())
        }
    }

    fn existing_key(&mut self, m: &Map) -> Vec<u8> {
        let i = self.rng.random_range(0..m.len());
        m.keys().nth(i).unwrap().clone()
    }

    /// Keys of 0..=max_key bytes, biased small, sometimes exactly max, often sharing long
    /// prefixes or being prefixes of each other, often hitting existing keys.
    fn gen_key(&mut self, m: &Map) -> Vec<u8> {
        let max = self.max_key;
        let r = self.rng.random_range(0..100);
        match r {
            0..=27 if !m.is_empty() => self.existing_key(m),
            0..=42 => {
                let len = self.rng.random_range(0..=4usize.min(max));
                (0..len)
                    .map(|_| *[b'a', b'b', 0u8, 0xffu8].choose(&mut self.rng).unwrap())
                    .collect()
            }
            43..=57 => {
                // prefixes of one long shared prefix, optionally with a 1-byte suffix
                let plen = if self.rng.random_bool(0.3) {
                    self.rng.random_range(max.saturating_sub(8)..=max)
                } else {
                    self.rng.random_range(0..=max)
                };
                let mut k = self.prefix[..plen].to_vec();
                if k.len() < max && self.rng.random_bool(0.5) {
                    k.push(self.rng.random_range(b'0'..=b'3'));
                }
                k
            }
            58..=67 if !m.is_empty() => {
                // a neighbour of an existing key
                let mut k = self.existing_key(m);
                match self.rng.random_range(0..4) {
                    0 => {
                        let l = self.rng.random_range(0..=k.len());
                        k.truncate(l)
                    }
                    1 if k.len() < max => k.push(self.rng.random_range(0..=2u8)),
                    2 if !k.is_empty() => {
                        let l = k.len() - 1;
                        k[l] = k[l].wrapping_add(1)
                    }
                    _ if !k.is_empty() => {
                        let l = k.len() - 1;
                        k[l] = k[l].wrapping_sub(1)
                    }
                    _ => {}
                }
                k
            }
            58..=72 => {
                // exactly max_key bytes
                let mut k = if self.rng.random_bool(0.5) {
                    self.prefix[..max].to_vec()
                } else {
                    let mut k = vec![0u8; max];
                    self.rng.fill_bytes(&mut k);
                    k
                };
                if max > 0 {
                    k[max - 1] = self.rng.random_range(b'0'..=b'3');
                }
                k
            }
            _ => {
                let len = if self.rng.random_bool(0.8) {
                    self.rng.random_range(1..=16usize.min(max.max(1)))
                } else {
                    self.rng.random_range(0..=max)
                };
                let mut k = vec![0u8; len.min(max)];
                self.rng.fill_bytes(&mut k);
                k
            }
        }
    }

    fn gen_val(&mut self) -> Vec<u8> {
        let p = self.page_size as usize;
        let len = match self.rng.random_range(0..1000) {
            0..=59 => 0,
            60..=559 => self.rng.random_range(1..=32),
            560..=759 => self.rng.random_range(33..=p / 2),
            760..=899 => self.rng.random_range(p / 2..=p * 2),
            900..=989 => self.rng.random_range(p * 2..=p * 5),
            _ => self.rng.random_range(95_000..=110_000),
        };
        let mut v = vec![0u8; len];
        let s = self.rng.next_u64();
        fill_pattern(&mut v, s);
        v
    }

    fn gen_small_val(&mut self) -> Vec<u8> {
        let len = self.rng.random_range(0..=48);
        let mut v = vec![0u8; len];
        self.rng.fill_bytes(&mut v);
        v
    }

    fn gen_bound(&mut self, m: &Map) -> Bound<Vec<u8>> {
        match self.rng.random_range(0..10) {
            0..=1 => Bound::Unbounded,
            2..=5 => Bound::Included(self.gen_key(m)),
            _ => Bound::Excluded(self.gen_key(m)),
        }
    }

    // ---------------------------------------------------------------- read checks

    fn check_get<V: View>(&mut self, txn: &V, db: Database, m: &Map, what: &str) {
        let k = self.gen_key(m);
        self.tally("get");
        self.log(format!("{what} get {}", show(&k)));
        let got = txn
            .v_get(db, &k)
            .unwrap_or_else(|e| panic!("{what}: get {}: {e:?}", show(&k)));
        let exp = m.get(&k).map(|v| v.as_slice());
        if got != exp {
            panic!(
                "{what}: get {}: got {} expected {}",
                show(&k),
                show_opt(got),
                show_opt(exp)
            );
        }
    }

    fn check_range<V: View>(&mut self, txn: &V, db: Database, m: &Map, what: &str) {
        let lo = self.gen_bound(m);
        let hi = self.gen_bound(m);
        let mode = self.rng.random_range(0..3);
        self.tally("range");
        let desc = format!(
            "{what} range({}, {}) mode {mode}",
            show_bound(&lo),
            show_bound(&hi)
        );
        self.log(desc.clone());
        let exp: Vec<(&Vec<u8>, &Vec<u8>)> =
            m.iter().filter(|(k, _)| in_bounds(k, &lo, &hi)).collect();
        let it = match txn.v_range(db, as_ref_bound(&lo), as_ref_bound(&hi)) {
            Ok(it) => it,
            Err(Error::InvalidArgument(_)) if inverted(&lo, &hi) => return,
            Err(e) => panic!("{desc}: {e:?}"),
        };
        match mode {
            0 => assert_entries(&collect(it, &desc), exp.iter().copied(), &desc),
            1 => {
                let mut got = collect(it.rev(), &desc);
                got.reverse();
                assert_entries(
                    &got,
                    exp.iter().copied(),
                    &format!("{desc} (backward, reversed)"),
                );
            }
            _ => {
                // interleave next() and next_back(); both ends must meet exactly once
                let mut it = it;
                let mut exp: VecDeque<_> = exp.into_iter().collect();
                let mut n = 0;
                loop {
                    let back = self.rng.random_bool(0.5);
                    let got = if back { it.next_back() } else { it.next() };
                    let got = got.map(|r| r.unwrap_or_else(|e| panic!("{desc}: {e:?}")));
                    let e = if back {
                        exp.pop_back()
                    } else {
                        exp.pop_front()
                    };
                    match (got, e) {
                        (None, None) => break,
                        (Some((k, v)), Some((ek, ev))) => {
                            if k != ek.as_slice() || v != ev.as_slice() {
                                panic!(
                                    "{desc}: step {n} ({}) got ({}, {}) expected ({}, {})",
                                    if back { "next_back" } else { "next" },
                                    show(k),
                                    show(v),
                                    show(ek),
                                    show(ev)
                                );
                            }
                        }
                        (g, e) => panic!(
                            "{desc}: step {n} ({}): got {} expected {}",
                            if back { "next_back" } else { "next" },
                            show_entry(&owned(g)),
                            show_entry(&e.map(|(k, v)| (k.clone(), v.clone())))
                        ),
                    }
                    n += 1;
                }
            }
        }
    }

    fn check_cursor<V: View>(&mut self, txn: &V, db: Database, m: &Map, what: &str) {
        let entries: Vec<(&Vec<u8>, &Vec<u8>)> = m.iter().collect();
        let n = entries.len();
        let exp_at = |i: Option<usize>| -> Option<(Vec<u8>, Vec<u8>)> {
            i.and_then(|i| entries.get(i))
                .map(|(k, v)| ((*k).clone(), (*v).clone()))
        };
        let mut c = txn
            .v_cursor(db)
            .unwrap_or_else(|e| panic!("{what}: cursor: {e:?}"));
        // full walk: first/next.. or last/prev.. over the whole db; otherwise random moves
        let full: Option<bool> = if self.rng.random_bool(0.15) {
            Some(self.rng.random_bool(0.5))
        } else {
            None
        };
        let steps = if full.is_some() {
            (n + 1) * 7 / 6 + 3
        } else {
            self.rng.random_range(1..=40)
        };
        let mut pos: Option<usize> = None; // model position; None = cursor must be re-positioned
        let mut trace = String::new();
        for s in 0..steps {
            let (opname, got, exp): (String, _, _) = match (pos, full) {
                (None, Some(forward)) => {
                    if s > 0 {
                        break; // walked off the end
                    }
                    if forward {
                        let g = owned(c.first().unwrap_or_else(|e| panic!("{what}: first: {e:?}")));
                        pos = if n > 0 { Some(0) } else { None };
                        ("first".into(), g, exp_at(pos))
                    } else {
                        let g = owned(c.last().unwrap_or_else(|e| panic!("{what}: last: {e:?}")));
                        pos = n.checked_sub(1);
                        ("last".into(), g, exp_at(pos))
                    }
                }
                (Some(i), Some(forward)) => {
                    if s % 7 == 3 {
                        let g = owned(
                            c.current()
                                .unwrap_or_else(|e| panic!("{what}: current: {e:?}")),
                        );
                        ("current".into(), g, exp_at(Some(i)))
                    } else if forward {
                        let g = owned(c.next().unwrap_or_else(|e| panic!("{what}: next: {e:?}")));
                        pos = if i + 1 < n { Some(i + 1) } else { None };
                        ("next".into(), g, exp_at(pos))
                    } else {
                        let g = owned(c.prev().unwrap_or_else(|e| panic!("{what}: prev: {e:?}")));
                        pos = i.checked_sub(1);
                        ("prev".into(), g, exp_at(pos))
                    }
                }
                (None, None) => match self.rng.random_range(0..7) {
                    0 => {
                        let g = owned(c.first().unwrap_or_else(|e| panic!("{what}: first: {e:?}")));
                        pos = if n > 0 { Some(0) } else { None };
                        ("first".into(), g, exp_at(pos))
                    }
                    1 => {
                        let g = owned(c.last().unwrap_or_else(|e| panic!("{what}: last: {e:?}")));
                        pos = n.checked_sub(1);
                        ("last".into(), g, exp_at(pos))
                    }
                    2 | 3 => {
                        let k = self.gen_key(m);
                        let g = owned(c.seek(&k).unwrap_or_else(|e| panic!("{what}: seek: {e:?}")));
                        let i = entries.partition_point(|(ek, _)| ek.as_slice() < k.as_slice());
                        pos = if i < n { Some(i) } else { None };
                        (format!("seek({})", show(&k)), g, exp_at(pos))
                    }
                    4 if s == 0 => {
                        // next() on a fresh (unpositioned) cursor = first()
                        let g = owned(c.next().unwrap_or_else(|e| panic!("{what}: next: {e:?}")));
                        pos = if n > 0 { Some(0) } else { None };
                        ("next(unpositioned)".into(), g, exp_at(pos))
                    }
                    5 if s == 0 => {
                        // prev() on a fresh (unpositioned) cursor = last()
                        let g = owned(c.prev().unwrap_or_else(|e| panic!("{what}: prev: {e:?}")));
                        pos = n.checked_sub(1);
                        ("prev(unpositioned)".into(), g, exp_at(pos))
                    }
                    _ => {
                        let k = self.gen_key(m);
                        let g = c
                            .seek_exact(&k)
                            .unwrap_or_else(|e| panic!("{what}: seek_exact: {e:?}"))
                            .map(|v| v.to_vec());
                        let e = m.get(&k).cloned();
                        write_trace(&mut trace, &format!("seek_exact({})", show(&k)));
                        if g != e {
                            panic!(
                                "{what}: cursor seek_exact({}) got {} expected {} [trace:{trace}]",
                                show(&k),
                                show_opt(g.as_deref()),
                                show_opt(e.as_deref())
                            );
                        }
                        // the position after seek_exact is not part of the contract: re-position
                        continue;
                    }
                },
                (Some(i), None) => match self.rng.random_range(0..5) {
                    0 | 1 => {
                        let g = owned(c.next().unwrap_or_else(|e| panic!("{what}: next: {e:?}")));
                        pos = if i + 1 < n { Some(i + 1) } else { None };
                        ("next".into(), g, exp_at(pos))
                    }
                    2 => {
                        let g = owned(
                            c.current()
                                .unwrap_or_else(|e| panic!("{what}: current: {e:?}")),
                        );
                        ("current".into(), g, exp_at(Some(i)))
                    }
                    _ => {
                        let g = owned(c.prev().unwrap_or_else(|e| panic!("{what}: prev: {e:?}")));
                        pos = i.checked_sub(1);
                        ("prev".into(), g, exp_at(pos))
                    }
                },
            };
            write_trace(&mut trace, &opname);
            if got != exp {
                panic!(
                    "{what}: cursor {opname}: got {} expected {} [trace:{trace}] (db has {n} entries)",
                    show_entry(&got),
                    show_entry(&exp)
                );
            }
        }
        if full.is_some() {
            assert!(
                pos.is_none(),
                "{what}: full cursor walk did not reach the end (test bug)"
            );
        }
        self.tally("cursor_walk");
        self.log(format!("{what} cursor walk:{trace}"));
    }

    /// Too-large keys: put must fail with KeyTooLarge; get/delete may report "absent" or KeyTooLarge.
    fn too_large_key(&mut self) -> Vec<u8> {
        let max = self.max_key;
        let len = match self.rng.random_range(0..4) {
            0 => max + 1,
            1 => max + self.rng.random_range(2..=64),
            2 => max * 3 + 7,
            _ => 70_000,
        };
        let mut k = if len <= self.prefix.len() {
            self.prefix[..len].to_vec()
        } else {
            vec![b'K'; len]
        };
        k[len - 1] = b'z';
        k
    }

    fn check_too_large_reads<V: View>(&mut self, txn: &V, db: Database, what: &str) {
        let k = self.too_large_key();
        self.log(format!("{what} get too-large key len {}", k.len()));
        match txn.v_get(db, &k) {
            Ok(None) | Err(Error::KeyTooLarge { .. }) => {}
            other => panic!(
                "{what}: get with {}-byte key: {:?}",
                k.len(),
                other.map(|o| o.map(show))
            ),
        }
    }

    fn check_dbs_list<V: View>(&mut self, txn: &mut V, st: &State, what: &str) {
        let got = txn
            .v_list_dbs()
            .unwrap_or_else(|e| panic!("{what}: list_dbs: {e:?}"));
        let exp: Vec<String> = st.named.keys().cloned().collect();
        assert_eq!(got, exp, "{what}: list_dbs");
        for name in NAMES {
            let h = txn
                .v_open_db(Some(name))
                .unwrap_or_else(|e| panic!("{what}: open_db({name:?}): {e:?}"));
            assert_eq!(
                h.is_some(),
                st.named.contains_key(*name),
                "{what}: open_db({name:?}) existence"
            );
        }
        assert_eq!(
            txn.v_open_db(None).unwrap(),
            Some(self.main()),
            "{what}: open_db(None) is the main db"
        );
        assert_eq!(
            txn.v_open_db(Some("never-created")).unwrap(),
            None,
            "{what}: open_db(unknown)"
        );
    }

    /// Full check of every database of `st` (forward, backward, stat).
    fn check_all<V: View>(&mut self, txn: &mut V, st: &State, h: &Handles, what: &str) {
        self.check_dbs_list(txn, st, what);
        check_db(txn, self.main(), &st.main, &format!("{what} main"), true);
        for (name, m) in &st.named {
            let db = self.db(h, &Target::Named(name.clone()));
            check_db(txn, db, m, &format!("{what} db {name:?}"), true);
        }
    }

    /// Acquire handles for committed dbs that have none (after reopen / aborted drop).
    fn ensure_handles<V: View>(&mut self, txn: &mut V, h: &mut Handles, st: &State) {
        for name in st.named.keys() {
            if !h.contains_key(name) {
                let db = txn
                    .v_open_db(Some(name))
                    .unwrap_or_else(|e| panic!("open_db({name:?}): {e:?}"))
                    .unwrap_or_else(|| {
                        panic!("open_db({name:?}) = None but the db exists in the model")
                    });
                h.insert(name.clone(), db);
            }
        }
    }

    // ---------------------------------------------------------------- sessions

    fn verify_committed(&mut self, env: &Env, expect: Expect, what: &str) {
        let mut r = env
            .read_txn()
            .unwrap_or_else(|e| panic!("{what}: read_txn: {e:?}"));
        let id = r.txnid();
        match (self.last_txnid, expect) {
            (Some(last), Expect::New(wid)) => {
                assert!(wid > last, "{what}: write txnid {wid} not above last committed {last}");
                assert_eq!(id, wid, "{what}: snapshot txnid after committing a change in write txn {wid}");
            }
            (Some(last), Expect::SameOrNew(wid)) => assert!(
                id == last || id == wid,
                "{what}: snapshot txnid {id} after committing write txn {wid} without net change (last {last})"
            ),
            (Some(last), Expect::Same) => {
                assert_eq!(id, last, "{what}: snapshot txnid changed without a commit")
            }
            (None, _) => {}
        }
        self.last_txnid = Some(id);
        let info = env.info().unwrap_or_else(|e| panic!("{what}: info: {e:?}"));
        assert_eq!(
            info.last_txnid, id,
            "{what}: info.last_txnid vs snapshot txnid"
        );
        assert_eq!(info.page_size, self.page_size, "{what}: info.page_size");
        let mut h = std::mem::take(&mut self.handles);
        let st = self.committed.clone();
        self.ensure_handles(&mut r, &mut h, &st);
        self.check_all(&mut r, &st, &h, what);
        self.handles = h;
        let depth = r.stat(self.main()).unwrap().depth;
        self.max_depth = self.max_depth.max(depth);
        self.max_entries = self
            .max_entries
            .max(st.main.len() + st.named.values().map(|m| m.len()).sum::<usize>());
        // handles of committed-dropped dbs stay dead
        let dropped = self.dropped.clone();
        for (name, db) in dropped {
            if st.named.contains_key(&name) {
                continue;
            }
            match r.get(db, b"x") {
                Err(Error::DbNotFound { .. }) => {}
                other => panic!(
                    "{what}: get via handle of dropped db {name:?} ({db:?}): expected DbNotFound, got {:?}{}",
                    other.map(|o| o.map(show)),
                    if self.handles.values().any(|h| *h == db) { " (handle value was reused for a live db)" } else { "" }
                ),
            }
        }
    }

    fn read_session(&mut self, env: &Env) {
        self.tally("read_txn");
        self.log("read txn".into());
        let mut r = env.read_txn().unwrap();
        assert_eq!(
            Some(r.txnid()),
            self.last_txnid,
            "read txn sees the last committed txnid"
        );
        let mut h = std::mem::take(&mut self.handles);
        let st = std::mem::take(&mut self.committed);
        self.ensure_handles(&mut r, &mut h, &st);
        let n = self.rng.random_range(1..=30);
        for _ in 0..n {
            let t = self.pick_target(&st);
            let db = self.db(&h, &t);
            let m = st.map(&t);
            let what = format!("ro {t:?}");
            match self.rng.random_range(0..10) {
                0..=3 => self.check_get(&r, db, m, &what),
                4..=5 => self.check_range(&r, db, m, &what),
                6..=7 => self.check_cursor(&r, db, m, &what),
                8 => check_db(&r, db, m, &what, true),
                _ => {
                    self.check_dbs_list(&mut r, &st, &what);
                    self.check_too_large_reads(&r, db, &what);
                }
            }
        }
        self.handles = h;
        self.committed = st;
    }

    fn write_session(&mut self, env: &Env) {
        // sometimes hold a snapshot across the write txn (same thread)
        let snap = if self.rng.random_bool(0.12) {
            self.tally("snapshot_held");
            self.log("snapshot reader opened".into());
            Some((env.read_txn().unwrap(), self.committed.clone()))
        } else {
            None
        };
        let mut txn = env.write_txn().unwrap();
        let wid = txn.txnid();
        self.log(format!("write txn {wid}"));
        let mut st = self.committed.clone();
        let mut h = self.handles.clone();
        self.ensure_handles(&mut txn, &mut h, &st);
        let mut dropped = self.dropped.clone();
        let mut dirty = false;
        let nops = match self.rng.random_range(0..100) {
            0..=4 => 0,
            5..=54 => self.rng.random_range(1..=8),
            55..=89 => self.rng.random_range(8..=40),
            _ => self.rng.random_range(40..=120),
        };
        for _ in 0..nops {
            self.write_op(&mut txn, &mut st, &mut h, &mut dropped, &mut dirty);
        }
        let end = self.rng.random_range(0..100);
        if end < 75 {
            self.tally("commit");
            self.log(format!("commit {wid} (dirty={dirty})"));
            // full check of the pending state before committing
            self.check_all(&mut txn, &st, &h, "pre-commit");
            txn.commit()
                .unwrap_or_else(|e| panic!("commit {wid}: {e:?}"));
            // a transaction without net effect may skip the commit (txnid unchanged)
            let expect = if st != self.committed {
                Expect::New(wid)
            } else {
                Expect::SameOrNew(wid)
            };
            self.committed = st;
            self.handles = h;
            self.dropped = dropped;
            self.verify_committed(env, expect, "after commit");
            common::assert_check(env, "after commit");
        } else {
            if end < 88 {
                self.tally("abort");
                self.log(format!("abort {wid}"));
                txn.abort();
            } else {
                self.tally("drop_txn");
                self.log(format!("drop {wid} without commit"));
                drop(txn);
            }
            // handles of dbs dropped in the aborted txn are not trusted afterwards
            for (name, _) in &dropped {
                if self.committed.named.contains_key(name) {
                    self.handles.remove(name);
                }
            }
            self.verify_committed(env, Expect::Same, "after abort");
        }
        if let Some((snap, sst)) = snap {
            self.log("checking snapshot reader".into());
            let mut sh = Handles::new();
            for name in sst.named.keys() {
                let db = snap
                    .open_db(Some(name))
                    .unwrap_or_else(|e| panic!("snapshot open_db({name:?}): {e:?}"))
                    .unwrap_or_else(|| {
                        panic!("snapshot: db {name:?} vanished from an old snapshot")
                    });
                sh.insert(name.clone(), db);
            }
            assert_eq!(
                snap.list_dbs().unwrap(),
                sst.named.keys().cloned().collect::<Vec<_>>(),
                "snapshot list_dbs"
            );
            check_db(&snap, self.main(), &sst.main, "snapshot main", true);
            for (name, m) in &sst.named {
                check_db(&snap, sh[name], m, &format!("snapshot db {name:?}"), true);
            }
        }
    }

    fn post_check(&mut self, txn: &RwTxn, db: Database, m: &Map, what: &str) {
        if m.len() <= 300 || self.rng.random_bool(0.1) {
            check_db(txn, db, m, what, false);
        }
    }

    fn write_op(
        &mut self,
        txn: &mut RwTxn,
        st: &mut State,
        h: &mut Handles,
        dropped: &mut Vec<(String, Database)>,
        dirty: &mut bool,
    ) {
        let t = self.pick_target(st);
        let db = self.db(h, &t);
        let what = format!("rw {t:?}");
        match self.rng.random_range(0..100) {
            0..=39 => {
                let k = self.gen_key(st.map(&t));
                let v = self.gen_val();
                self.tally("put");
                self.log(format!("{what} put {} = {}", show(&k), show(&v)));
                txn.put(db, &k, &v).unwrap_or_else(|e| {
                    panic!("{what}: put {} ({} B value): {e:?}", show(&k), v.len())
                });
                let got = txn.get(db, &k).unwrap().map(|g| g.to_vec());
                assert!(
                    got.as_deref() == Some(v.as_slice()),
                    "{what}: get after put {}: got {}",
                    show(&k),
                    show_opt(got.as_deref())
                );
                st.map_mut(&t).insert(k, v);
                *dirty = true;
                self.post_check(txn, db, st.map(&t), &format!("{what} after put"));
            }
            40..=51 => {
                let k = self.gen_key(st.map(&t));
                self.tally("delete");
                self.log(format!("{what} delete {}", show(&k)));
                let existed = txn
                    .delete(db, &k)
                    .unwrap_or_else(|e| panic!("{what}: delete {}: {e:?}", show(&k)));
                let exp = st.map_mut(&t).remove(&k).is_some();
                assert_eq!(
                    existed,
                    exp,
                    "{what}: delete {} returned {existed}",
                    show(&k)
                );
                *dirty |= existed;
                assert_eq!(
                    txn.get(db, &k).unwrap(),
                    None,
                    "{what}: get after delete {}",
                    show(&k)
                );
                self.post_check(txn, db, st.map(&t), &format!("{what} after delete"));
            }
            52..=60 => self.check_get(&*txn, db, st.map(&t), &what),
            61..=66 => self.check_range(&*txn, db, st.map(&t), &what),
            67..=72 => self.check_cursor(&*txn, db, st.map(&t), &what),
            73..=75 => {
                let name = NAMES.choose(&mut self.rng).unwrap().to_string();
                self.tally("create_db");
                self.log(format!("create_db({name:?})"));
                let ndb = txn
                    .create_db(Some(&name))
                    .unwrap_or_else(|e| panic!("create_db({name:?}): {e:?}"));
                if !st.named.contains_key(&name) {
                    st.named.insert(name.clone(), Map::new());
                    *dirty = true;
                }
                h.insert(name.clone(), ndb);
                dropped.retain(|(n, _)| *n != name);
                check_db(
                    &*txn,
                    ndb,
                    &st.named[&name],
                    &format!("after create_db({name:?})"),
                    true,
                );
                let again = txn.create_db(None).unwrap();
                assert_eq!(again, self.main(), "create_db(None) is the main db");
            }
            76 => {
                self.tally("clear_db");
                self.log(format!("{what} clear_db"));
                txn.clear_db(db)
                    .unwrap_or_else(|e| panic!("{what}: clear_db: {e:?}"));
                st.map_mut(&t).clear();
                *dirty = true;
                check_db(
                    &*txn,
                    db,
                    st.map(&t),
                    &format!("{what} after clear_db"),
                    true,
                );
            }
            77 => {
                self.tally("drop_db");
                self.log(format!("{what} drop_db"));
                txn.drop_db(db)
                    .unwrap_or_else(|e| panic!("{what}: drop_db: {e:?}"));
                *dirty = true;
                match &t {
                    Target::Main => {
                        st.main.clear();
                        check_db(&*txn, db, &st.main, "main after drop_db(main)", true);
                    }
                    Target::Named(name) => {
                        st.named.remove(name);
                        h.remove(name);
                        dropped.push((name.clone(), db));
                        assert_eq!(
                            txn.open_db(Some(name)).unwrap(),
                            None,
                            "open_db after drop_db({name:?})"
                        );
                        self.check_dbs_list(txn, st, "after drop_db");
                    }
                }
            }
            78..=80 => {
                self.log(format!("{what} stat + full check"));
                check_db(&*txn, db, st.map(&t), &what, true);
            }
            81 => {
                self.log("list_dbs".into());
                self.check_dbs_list(txn, st, &what);
            }
            82..=83 => {
                // too-large key: KeyTooLarge, txn stays usable and unchanged
                let k = self.too_large_key();
                let v = self.gen_small_val();
                self.tally("key_too_large");
                self.log(format!("{what} put too-large key ({} B)", k.len()));
                match txn.put(db, &k, &v) {
                    Err(Error::KeyTooLarge { len, max }) => {
                        assert_eq!(len, k.len(), "KeyTooLarge.len");
                        assert_eq!(max, self.max_key, "KeyTooLarge.max");
                    }
                    other => panic!("{what}: put with {}-byte key (max {}): expected KeyTooLarge, got {other:?}", k.len(), self.max_key),
                }
                match txn.delete(db, &k) {
                    Ok(false) | Err(Error::KeyTooLarge { .. }) => {}
                    other => panic!("{what}: delete with {}-byte key: {other:?}", k.len()),
                }
                self.check_too_large_reads(&*txn, db, &what);
                check_db(
                    &*txn,
                    db,
                    st.map(&t),
                    &format!("{what} after KeyTooLarge"),
                    true,
                );
            }
            84 if !dropped.is_empty() => {
                let (name, ddb) = dropped.choose(&mut self.rng).unwrap().clone();
                let op = self.rng.random_range(0..9);
                self.tally("dropped_handle");
                self.log(format!("use dropped handle of {name:?} op {op}"));
                let r: Result<(), Error> = match op {
                    0 => txn.get(ddb, b"k").map(|_| ()),
                    1 => txn.put(ddb, b"k", b"v"),
                    2 => txn.delete(ddb, b"k").map(|_| ()),
                    3 => txn.iter(ddb).map(|_| ()),
                    4 => txn.range(ddb, ..).map(|_| ()),
                    5 => txn.cursor(ddb).map(|_| ()),
                    6 => txn.stat(ddb).map(|_| ()),
                    7 => txn.clear_db(ddb),
                    _ => txn.drop_db(ddb),
                };
                match r {
                    Err(Error::DbNotFound { name: n }) => assert_eq!(n, name, "DbNotFound.name"),
                    other => panic!(
                        "op {op} via handle {ddb:?} of dropped db {name:?}: expected DbNotFound, got {other:?}{}",
                        if h.values().any(|x| *x == ddb) { " (handle value reused by a live db)" } else { "" }
                    ),
                }
                self.check_all(txn, st, h, "after using a dropped handle");
            }
            85..=87 => {
                // bulk insert of small entries (grows the tree)
                let n = self.rng.random_range(50..=300);
                let seq = self.rng.random_bool(0.5);
                let plen = self
                    .rng
                    .random_range(0..=self.max_key.saturating_sub(4).min(200));
                let base: u32 = self.rng.random();
                self.tally("bulk_put");
                self.log(format!("{what} bulk put {n} (seq={seq}, prefix {plen})"));
                for i in 0..n as u32 {
                    let k = if seq {
                        let mut k = self.prefix[..plen].to_vec();
                        k.extend_from_slice(&(base.wrapping_add(i)).to_be_bytes());
                        k
                    } else {
                        self.gen_key(st.map(&t))
                    };
                    let v = self.gen_small_val();
                    txn.put(db, &k, &v)
                        .unwrap_or_else(|e| panic!("{what}: bulk put {}: {e:?}", show(&k)));
                    st.map_mut(&t).insert(k, v);
                }
                *dirty = true;
                check_db(
                    &*txn,
                    db,
                    st.map(&t),
                    &format!("{what} after bulk put"),
                    true,
                );
            }
            88..=89 if !st.map(&t).is_empty() => {
                // bulk delete of a large fraction (shrinks the tree)
                let m = st.map(&t);
                let frac = self.rng.random_range(0.3..=1.0);
                let mut keys: Vec<Vec<u8>> = m
                    .keys()
                    .filter(|_| self.rng.random_bool(frac))
                    .cloned()
                    .collect();
                use rand::seq::SliceRandom;
                keys.shuffle(&mut self.rng);
                self.tally("bulk_delete");
                self.log(format!("{what} bulk delete {} of {}", keys.len(), m.len()));
                for k in keys {
                    let existed = txn
                        .delete(db, &k)
                        .unwrap_or_else(|e| panic!("{what}: bulk delete {}: {e:?}", show(&k)));
                    assert!(
                        existed,
                        "{what}: bulk delete of existing key {} returned false",
                        show(&k)
                    );
                    st.map_mut(&t).remove(&k);
                    *dirty = true;
                }
                check_db(
                    &*txn,
                    db,
                    st.map(&t),
                    &format!("{what} after bulk delete"),
                    true,
                );
            }
            _ => {
                // overwrite an existing key with a value of a different size class
                let m = st.map(&t);
                if m.is_empty() {
                    return;
                }
                let k = self.existing_key(m);
                let v = self.gen_val();
                self.log(format!("{what} overwrite {} = {}", show(&k), show(&v)));
                txn.put(db, &k, &v)
                    .unwrap_or_else(|e| panic!("{what}: overwrite {}: {e:?}", show(&k)));
                st.map_mut(&t).insert(k, v);
                *dirty = true;
                self.post_check(txn, db, st.map(&t), &format!("{what} after overwrite"));
            }
        }
    }

    fn random_reopen_opts(&mut self) -> EnvOptions {
        let d = match self.rng.random_range(0..10) {
            0 => Durability::Durable,
            1 => Durability::NoMetaSync,
            2 => Durability::SafeNoSync,
            _ => Durability::NoSync,
        };
        // page_size is only used at creation: a different value must be ignored on reopen
        let ps = *PAGE_SIZES.choose(&mut self.rng).unwrap();
        // both write paths: heap pages written at commit, and write-map
        let wm = self.rng.random_bool(0.5);
        EnvOptions::new().page_size(ps).durability(d).write_map(wm)
    }

    fn run(&mut self, dir: &Path, n_txns: usize) {
        let mut t = 0;
        let mut first = true;
        while t < n_txns {
            let o = if first {
                let wm = self.rng.random_bool(0.5);
                opts(self.page_size, Durability::NoSync).write_map(wm)
            } else {
                self.random_reopen_opts()
            };
            let env = open(dir, o);
            assert_eq!(env.page_size(), self.page_size, "page size after (re)open");
            if first {
                self.max_key = env.max_key_size();
                assert!(
                    self.max_key >= 8,
                    "max_key_size {} unreasonably small",
                    self.max_key
                );
                let mut p = Vec::with_capacity(self.max_key);
                while p.len() < self.max_key {
                    p.extend_from_slice(b"shared-prefix/");
                }
                p.truncate(self.max_key);
                self.prefix = p;
                first = false;
            } else {
                assert_eq!(
                    env.max_key_size(),
                    self.max_key,
                    "max_key_size after reopen"
                );
            }
            self.log(format!("open env (max_key {})", self.max_key));
            self.main = Some(env.main_db());
            self.handles.clear();
            self.dropped.clear();
            self.verify_committed(&env, Expect::Same, "after open");
            while t < n_txns {
                t += 1;
                if self.rng.random_bool(0.2) {
                    self.read_session(&env);
                } else {
                    self.write_session(&env);
                }
                if self.rng.random_bool(0.07) {
                    self.tally("reopen");
                    self.log("close env".into());
                    break;
                }
            }
        }
    }
}

fn write_trace(trace: &mut String, op: &str) {
    if trace.len() < 2000 {
        trace.push(' ');
        trace.push_str(op);
    }
}

fn run_model(page_size: u32, default_cases: usize, default_txns: usize) {
    let test = format!("model_{page_size}");
    let (base, replay) = base_seed(&test);
    let n_cases = if replay { 1 } else { cases(default_cases) };
    let n_txns = default_txns * scale();
    for i in 0..n_cases {
        let seed = if replay {
            base
        } else {
            mix(base.wrapping_add(i as u64))
        };
        let dir = tempfile::tempdir().unwrap();
        let mut case = Case::new(seed, page_size);
        let res = catch_unwind(AssertUnwindSafe(|| case.run(dir.path(), n_txns)));
        if let Err(p) = res {
            eprintln!("---- last operations (most recent last) ----");
            for l in &case.log {
                eprintln!("{l}");
            }
            eprintln!("[{test}] FAILED case {i}: SEED={seed} (replay: SARSEN_SEED={seed} cargo test -p sarsen --test model {test})");
            resume_unwind(p);
        }
        eprintln!(
            "[{test}] case {i} SEED={}: max main depth {}, max entries {}, ops {:?}",
            case.seed, case.max_depth, case.max_entries, case.tally
        );
    }
}

#[test]
fn model_512() {
    run_model(512, 8, 80);
}

#[test]
fn model_4096() {
    run_model(4096, 8, 80);
}

#[test]
fn model_65536() {
    run_model(65536, 4, 60);
}

/// Keys above max_key_size give KeyTooLarge (with exact len/max) and leave the txn and the
/// database usable and unchanged; keys of exactly max_key_size work, at every page size.
#[test]
fn key_too_large_leaves_txn_usable() {
    for &ps in &[512u32, 4096, 65536] {
        let dir = tempfile::tempdir().unwrap();
        let env = open(dir.path(), opts(ps, Durability::NoSync));
        let max = env.max_key_size();
        assert!(max > 0);
        let main = env.main_db();
        let mut model = Map::new();
        let mut w = env.write_txn().unwrap();
        let named = w.create_db(Some("named")).unwrap();
        let mut nmodel = Map::new();
        for i in 0..200u32 {
            let mut k = vec![b'p'; (i as usize * 37) % (max + 1)];
            k.extend_from_slice(&i.to_be_bytes());
            k.truncate(max);
            let v = i.to_le_bytes().repeat((i % 7) as usize);
            w.put(main, &k, &v).unwrap();
            w.put(named, &k, &v).unwrap();
            model.insert(k.clone(), v.clone());
            nmodel.insert(k, v);
        }
        let exact = vec![0xffu8; max];
        w.put(main, &exact, b"exact-max").unwrap();
        model.insert(exact.clone(), b"exact-max".to_vec());
        w.commit().unwrap();

        let mut w = env.write_txn().unwrap();
        for len in [max + 1, max + 2, 2 * max, 100_000] {
            for db in [main, named] {
                let k = vec![0xffu8; len];
                match w.put(db, &k, b"v") {
                    Err(Error::KeyTooLarge { len: l, max: m }) => {
                        assert_eq!((l, m), (len, max), "page {ps}: KeyTooLarge fields");
                    }
                    other => panic!("page {ps}: put {len}-byte key (max {max}): {other:?}"),
                }
            }
            check_db(
                &w,
                main,
                &model,
                &format!("page {ps} main after KeyTooLarge"),
                true,
            );
            check_db(
                &w,
                named,
                &nmodel,
                &format!("page {ps} named after KeyTooLarge"),
                true,
            );
        }
        // the txn is still usable
        w.put(main, b"after", b"error").unwrap();
        model.insert(b"after".to_vec(), b"error".to_vec());
        assert!(w
            .delete(named, &nmodel.keys().next().unwrap().clone())
            .unwrap());
        nmodel.pop_first();
        w.commit().unwrap();
        let r = env.read_txn().unwrap();
        check_db(
            &r,
            main,
            &model,
            &format!("page {ps} main after commit"),
            true,
        );
        check_db(
            &r,
            named,
            &nmodel,
            &format!("page {ps} named after commit"),
            true,
        );
        assert_eq!(r.get(main, &exact).unwrap(), Some(&b"exact-max"[..]));
    }
}

/// Range syntax forms (`..`, `a..b`, `a..=b`, `a..`, `..b`, `..=b`) agree with the model.
#[test]
fn range_syntax_forms() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path(), opts(512, Durability::NoSync));
    let db = env.main_db();
    let (seed, _) = base_seed("range_syntax_forms");
    let mut rng = StdRng::seed_from_u64(seed);
    let mut model = Map::new();
    let mut w = env.write_txn().unwrap();
    for _ in 0..2000 {
        let len = rng.random_range(0..6);
        let k: Vec<u8> = (0..len).map(|_| rng.random_range(b'a'..=b'e')).collect();
        let v = rng.random::<u64>().to_be_bytes().to_vec();
        w.put(db, &k, &v).unwrap();
        model.insert(k, v);
    }
    w.commit().unwrap();
    let r = env.read_txn().unwrap();
    let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
    for _ in 0..200 {
        let a = keys[rng.random_range(0..keys.len())].clone();
        let b = keys[rng.random_range(0..keys.len())].clone();
        let (a, b) = if a <= b { (a, b) } else { (b, a) };
        let (a, b) = (a.as_slice(), b.as_slice());
        let f = |lo: Bound<&[u8]>, hi: Bound<&[u8]>| {
            model
                .iter()
                .filter(|(k, _)| {
                    let k = k.as_slice();
                    (match lo {
                        Bound::Included(x) => k >= x,
                        Bound::Excluded(x) => k > x,
                        Bound::Unbounded => true,
                    }) && (match hi {
                        Bound::Included(x) => k <= x,
                        Bound::Excluded(x) => k < x,
                        Bound::Unbounded => true,
                    })
                })
                .collect::<Vec<_>>()
        };
        use Bound::*;
        assert_entries(
            &collect(r.range(db, ..).unwrap(), ".."),
            f(Unbounded, Unbounded),
            "..",
        );
        assert_entries(
            &collect(r.range(db, a..b).unwrap(), "a..b"),
            f(Included(a), Excluded(b)),
            "a..b",
        );
        assert_entries(
            &collect(r.range(db, a..=b).unwrap(), "a..=b"),
            f(Included(a), Included(b)),
            "a..=b",
        );
        assert_entries(
            &collect(r.range(db, a..).unwrap(), "a.."),
            f(Included(a), Unbounded),
            "a..",
        );
        assert_entries(
            &collect(r.range(db, ..b).unwrap(), "..b"),
            f(Unbounded, Excluded(b)),
            "..b",
        );
        assert_entries(
            &collect(r.range(db, ..=b).unwrap(), "..=b"),
            f(Unbounded, Included(b)),
            "..=b",
        );
        let mut back = collect(r.range(db, a..=b).unwrap().rev(), "rev a..=b");
        back.reverse();
        assert_entries(&back, f(Included(a), Included(b)), "rev a..=b");
    }
}

/// Default layout (directory with data.sdb + lock.sdb) and single-file layout (path + path-lock)
/// both persist data across reopen.
#[test]
fn layouts_persist_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let (seed, _) = base_seed("layouts_persist_across_reopen");
    let mut rng = StdRng::seed_from_u64(seed);
    for single in [false, true] {
        let path = dir
            .path()
            .join(if single { "single.sdb" } else { "envdir" });
        let mut model = Map::new();
        for round in 0..3 {
            let env = open(
                &path,
                EnvOptions::new()
                    .single_file(single)
                    .durability(Durability::Durable),
            );
            if single {
                assert!(path.is_file(), "single_file: data file at path");
                let mut lock = path.clone().into_os_string();
                lock.push("-lock");
                assert!(
                    Path::new(&lock).exists(),
                    "single_file: lock file <path>-lock"
                );
            } else {
                assert!(path.join("data.sdb").is_file(), "data.sdb");
                assert!(path.join("lock.sdb").exists(), "lock.sdb");
            }
            let db = env.main_db();
            check_db(
                &env.read_txn().unwrap(),
                db,
                &model,
                &format!("single={single} round {round} after open"),
                true,
            );
            let mut w = env.write_txn().unwrap();
            for _ in 0..300 {
                let k = rng.random::<u16>().to_be_bytes().to_vec();
                if rng.random_bool(0.3) {
                    assert_eq!(w.delete(db, &k).unwrap(), model.remove(&k).is_some());
                } else {
                    let v = vec![round as u8; rng.random_range(0..600)];
                    w.put(db, &k, &v).unwrap();
                    model.insert(k, v);
                }
            }
            w.commit().unwrap();
        }
        let env = open(&path, EnvOptions::new().single_file(single));
        check_db(
            &env.read_txn().unwrap(),
            env.main_db(),
            &model,
            &format!("single={single} final"),
            true,
        );
    }
}
