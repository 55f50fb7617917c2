//! Write cursors (`RwTxn::cursor_mut`; LMDB's `mdb_cursor_put`,
//! `MDB_CURRENT`, `mdb_cursor_del`) against a model cursor over a sorted
//! list of pairs: random moves, puts, replaces at the cursor, deletes at
//! the cursor followed by moves (LMDB's "next after delete" rule) and
//! merges at the cursor, in databases with and without DUPSORT, at
//! 512-byte pages so that pages split and merge under the cursor; the
//! database is compared and checked after each transaction.

mod common;

use common::{assert_check, base_seed, cases, mix, OnFail};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sarsen::{merge::Uint64Add, DbOptions, EnvOptions, KeyOrder, RwCursor};

type Pair = (Vec<u8>, Vec<u8>);

/// The model cursor's place, as the engine's.
#[derive(Clone, Debug)]
enum At {
    Unset,
    On(Pair),
    Deleted(Pair),
    PastEnd,
    BeforeStart,
}

struct Model {
    pairs: Vec<Pair>,
    dups: bool,
    at: At,
}

impl Model {
    fn set(&mut self, found: Option<Pair>, fwd: bool) -> Option<Pair> {
        self.at = match &found {
            Some(p) => At::On(p.clone()),
            None if fwd => At::PastEnd,
            None => At::BeforeStart,
        };
        found
    }
    fn next(&mut self) -> Option<Pair> {
        let f = match &self.at {
            At::On(p) => self.pairs.iter().find(|x| *x > p).cloned(),
            At::Deleted(p) => self.pairs.iter().find(|x| *x >= p).cloned(),
            At::Unset | At::BeforeStart => self.pairs.first().cloned(),
            At::PastEnd => None,
        };
        self.set(f, true)
    }
    fn prev(&mut self) -> Option<Pair> {
        let f = match &self.at {
            At::On(p) | At::Deleted(p) => self.pairs.iter().rev().find(|x| *x < p).cloned(),
            At::Unset | At::PastEnd => self.pairs.last().cloned(),
            At::BeforeStart => None,
        };
        self.set(f, false)
    }
    fn seek(&mut self, k: &[u8]) -> Option<Pair> {
        let f = self.pairs.iter().find(|x| x.0.as_slice() >= k).cloned();
        self.set(f, true)
    }
    fn next_dup(&mut self) -> Option<Pair> {
        let At::On(p) = &self.at else { return None };
        let f = self.pairs.iter().find(|x| *x > p && x.0 == p.0).cloned();
        if f.is_some() {
            self.at = At::On(f.clone().unwrap());
        }
        f
    }
    fn put(&mut self, p: Pair) {
        if !self.dups {
            self.pairs.retain(|x| x.0 != p.0);
        }
        if let Err(i) = self.pairs.binary_search(&p) {
            self.pairs.insert(i, p.clone());
        }
        self.at = At::On(p);
    }
    fn remove(&mut self, p: &Pair) {
        self.pairs.retain(|x| x != p);
    }
}

fn own(e: Option<(&[u8], &[u8])>) -> Option<Pair> {
    e.map(|(k, v)| (k.to_vec(), v.to_vec()))
}

fn key(rng: &mut SmallRng) -> Vec<u8> {
    format!("k{:03}", rng.random_range(0..60u32)).into_bytes()
}

fn value(rng: &mut SmallRng, merge: bool) -> Vec<u8> {
    if merge {
        return rng.random_range(0..1000u64).to_le_bytes().to_vec();
    }
    let len = rng.random_range(0..40);
    vec![rng.random_range(b'a'..=b'z'); len]
}

/// One random operation on both cursors; returns its name.
fn step(c: &mut RwCursor<'_, '_>, m: &mut Model, merge: bool, rng: &mut SmallRng) -> &'static str {
    match rng.random_range(0..100) {
        0..=24 => {
            let before = format!("{:?}", m.at);
            assert_eq!(
                own(c.next().unwrap()),
                m.next(),
                "next from {before} in {:?}",
                m.pairs
                    .iter()
                    .map(|p| String::from_utf8_lossy(&p.0).into_owned())
                    .collect::<Vec<_>>()
            );
            "next"
        }
        25..=39 => {
            assert_eq!(own(c.prev().unwrap()), m.prev(), "prev");
            "prev"
        }
        40..=44 => {
            let k = key(rng);
            assert_eq!(own(c.seek(&k).unwrap()), m.seek(&k), "seek");
            "seek"
        }
        45..=49 => {
            assert_eq!(own(c.next_dup().unwrap()), m.next_dup(), "next_dup");
            "next_dup"
        }
        50..=64 => {
            let p = (key(rng), value(rng, merge));
            c.put(&p.0, &p.1).unwrap();
            m.put(p);
            "put"
        }
        65..=79 => {
            let v = value(rng, merge);
            let r = c.put_current(&v);
            match m.at.clone() {
                At::On(old) => {
                    r.unwrap();
                    m.remove(&old);
                    m.put((old.0, v));
                }
                _ => assert!(r.is_err()),
            }
            "put_current"
        }
        80..=94 => {
            let r = c.delete_current();
            match m.at.clone() {
                At::On(p) => {
                    r.unwrap();
                    m.remove(&p);
                    m.at = At::Deleted(p);
                }
                _ => assert!(r.is_err()),
            }
            "delete_current"
        }
        _ if merge => {
            let r = c.merge_current(&1u64.to_le_bytes());
            match m.at.clone() {
                At::On(old) => {
                    r.unwrap();
                    let n = u64::from_le_bytes(old.1.clone().try_into().unwrap()) + 1;
                    m.remove(&old);
                    m.put((old.0, n.to_le_bytes().to_vec()));
                }
                _ => assert!(r.is_err()),
            }
            "merge_current"
        }
        _ => {
            assert_eq!(
                own(c.first().unwrap()),
                m.set(m.pairs.first().cloned(), true)
            );
            "first"
        }
    }
}

fn run(seed: u64, dups: bool, merge: bool) {
    let _g = OnFail(format!("dups {dups}, merge {merge}, SEED={seed}"));
    let mut rng = SmallRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let env = common::open(dir.path(), EnvOptions::new().page_size(512));
    let mut opts = DbOptions::new();
    if dups {
        opts = opts.dup_sort(KeyOrder::Bytewise);
    }
    if merge {
        opts = opts.merge_operator(Uint64Add);
    }
    let mut m = Model {
        pairs: Vec::new(),
        dups,
        at: At::Unset,
    };
    for round in 0..30 {
        let mut w = env.write_txn().unwrap();
        let db = w.open_db_with(None, &opts).unwrap().unwrap();
        let saved = m.pairs.clone();
        m.at = At::Unset;
        let mut log = Vec::new();
        {
            let mut c = w.cursor_mut(db).unwrap();
            for _ in 0..rng.random_range(1..80) {
                let _l = OnFail(format!("round {round}, ops {log:?}"));
                log.push(step(&mut c, &mut m, merge, &mut rng));
                assert_eq!(
                    own(c.current()),
                    match &m.at {
                        At::On(p) => Some(p.clone()),
                        _ => None,
                    },
                    "current after {log:?}"
                );
            }
        }
        let got: Vec<Pair> = w
            .iter(db)
            .unwrap()
            .map(|e| own(Some(e.unwrap())).unwrap())
            .collect();
        assert_eq!(got, m.pairs, "contents after round {round}");
        if rng.random_bool(0.8) {
            w.commit().unwrap();
            assert_check(&env, &format!("round {round}"));
        } else {
            drop(w);
            m.pairs = saved;
        }
    }
}

#[test]
fn write_cursors_match_the_model() {
    let (base, replay) = base_seed("write_cursor");
    let n = if replay { 1 } else { cases(3) };
    for c in 0..n as u64 {
        for (i, (dups, merge)) in [(false, false), (true, false), (false, true)]
            .into_iter()
            .enumerate()
        {
            run(
                if replay {
                    base
                } else {
                    mix(base ^ c << 8 ^ i as u64)
                },
                dups,
                merge,
            );
        }
    }
}

/// LMDB's rules, found by the `api_ops` fuzz target: a write cursor's
/// `next_nodup` past the end finds nothing and after `delete_current`
/// goes to the next key (not to the first pair), and `next_multiple`
/// without DUPFIXED is refused before the cursor moves.
#[test]
fn nodup_moves_off_a_pair_and_refused_next_multiple_follow_lmdb() {
    let dir = tempfile::tempdir().unwrap();
    let env = common::open(dir.path(), EnvOptions::new().max_dbs(2));
    let mut w = env.write_txn().unwrap();
    let opts = DbOptions::new().dup_sort(KeyOrder::Bytewise);
    let db = w.create_db_with(Some("m"), &opts).unwrap();
    for (k, v) in [("a", "1"), ("a", "2"), ("b", "1"), ("c", "1")] {
        w.put(db, k.as_bytes(), v.as_bytes()).unwrap();
    }
    let mut c = w.cursor_mut(db).unwrap();
    c.last().unwrap();
    assert_eq!(c.next().unwrap(), None);
    assert_eq!(own(c.next_nodup().unwrap()), None);
    assert_eq!(own(c.prev_nodup().unwrap()).unwrap().0, b"c");
    c.seek(b"b").unwrap();
    c.delete_current().unwrap();
    assert_eq!(own(c.next_nodup().unwrap()).unwrap().0, b"c");
    c.seek(b"a").unwrap();
    c.next_dup().unwrap();
    c.delete_current().unwrap(); // (a, 2)
    let back = own(c.prev_nodup().unwrap());
    assert_eq!(back, None, "no key before a");
    drop(c);
    let mut rc = w.cursor(db).unwrap();
    rc.first().unwrap();
    assert!(rc.next_multiple().is_err());
    assert_eq!(rc.current().unwrap(), Some((&b"a"[..], &b"1"[..])));
}
