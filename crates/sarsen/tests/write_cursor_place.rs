//! A write cursor keeps its place across its own deletes and value
//! replacements (LMDB's cursor keeps its page stack): random interleavings
//! of cursor moves, `delete_current`, `delete_current_key`, `put_current`
//! and cursor puts, with puts and deletes through the transaction between
//! cursors, against a `BTreeSet` of pairs with a model cursor, with and
//! without DUPSORT, at 512-byte pages with values up to overflow size, so
//! that deletes merge leaves and replacements split them under the cursor;
//! then whole retain loops and pops from either end.

mod common;

use std::collections::BTreeSet;

use common::{assert_check, base_seed, cases, mix, OnFail};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sarsen::{Database, DbOptions, EnvOptions, KeyOrder, RwCursor, RwTxn};

type Pair = (Vec<u8>, Vec<u8>);

/// The model cursor's place (LMDB's rules: after a delete, `next` is the
/// pair after the deleted one and `prev` the pair before).
#[derive(Clone, Debug)]
enum At {
    Unset,
    On(Pair),
    Deleted(Pair),
    PastEnd,
    BeforeStart,
}

struct Model {
    set: BTreeSet<Pair>,
    dups: bool,
    at: At,
}

impl Model {
    fn land(&mut self, found: Option<Pair>, fwd: bool) -> Option<Pair> {
        self.at = match &found {
            Some(p) => At::On(p.clone()),
            None if fwd => At::PastEnd,
            None => At::BeforeStart,
        };
        found
    }
    fn after(&self, p: &Pair, incl: bool) -> Option<Pair> {
        self.set
            .range(p.clone()..)
            .find(|x| incl || *x != p)
            .cloned()
    }
    fn before(&self, p: &Pair) -> Option<Pair> {
        self.set.range(..p.clone()).next_back().cloned()
    }
    fn next(&mut self) -> Option<Pair> {
        let f = match &self.at {
            At::On(p) => self.after(p, false),
            At::Deleted(p) => self.after(p, true),
            At::Unset | At::BeforeStart => self.set.first().cloned(),
            At::PastEnd => None,
        };
        self.land(f, true)
    }
    fn prev(&mut self) -> Option<Pair> {
        let f = match &self.at {
            At::On(p) | At::Deleted(p) => self.before(p),
            At::Unset | At::PastEnd => self.set.last().cloned(),
            At::BeforeStart => None,
        };
        self.land(f, false)
    }
    fn first(&mut self) -> Option<Pair> {
        let f = self.set.first().cloned();
        self.land(f, true)
    }
    fn last(&mut self) -> Option<Pair> {
        let f = self.set.last().cloned();
        self.land(f, false)
    }
    fn seek(&mut self, k: &[u8]) -> Option<Pair> {
        let f = self.after(&(k.to_vec(), Vec::new()), true);
        self.land(f, true)
    }
    /// A put as `RwTxn::put`: in a DUPSORT database adds the pair, else
    /// replaces the key's value.
    fn put(&mut self, p: Pair) {
        if !self.dups {
            self.set.retain(|x| x.0 != p.0);
        }
        self.set.insert(p);
    }
    fn delete_key(&mut self, k: &[u8]) {
        self.set.retain(|x| x.0 != k);
    }
}

fn key(rng: &mut SmallRng) -> Vec<u8> {
    format!("k{:03}", rng.random_range(0..300)).into_bytes()
}

/// Mostly short values; one in twenty past the inline limit of a 512-byte
/// page without DUPSORT (an overflow run), and one in five long enough that
/// a replacement can split the leaf.
fn value(rng: &mut SmallRng, dups: bool) -> Vec<u8> {
    let len = match rng.random_range(0..20) {
        0 if !dups => rng.random_range(200..700),
        1..=4 => rng.random_range(40..100),
        _ => rng.random_range(1..12),
    };
    let b = rng.random_range(b'a'..=b'z');
    vec![b; len]
}

fn own(e: Option<(&[u8], &[u8])>) -> Option<Pair> {
    e.map(|(k, v)| (k.to_vec(), v.to_vec()))
}

/// Places a new cursor where the model cursor stands (a pair it is on, or
/// the pair a delete left it before).
fn reposition(c: &mut RwCursor<'_, '_>, m: &mut Model) {
    let p = match m.at.clone() {
        At::On(p) if m.set.contains(&p) => p,
        _ => {
            m.at = At::Unset;
            return;
        }
    };
    let got = if m.dups {
        c.seek_both(&p.0, &p.1).unwrap()
    } else {
        c.seek_exact(&p.0).unwrap()
    };
    assert_eq!(own(got), Some(p), "reposition");
}

/// One random cursor operation on both cursors; returns its name.
fn cursor_op(c: &mut RwCursor<'_, '_>, m: &mut Model, rng: &mut SmallRng) -> &'static str {
    let on = match &m.at {
        At::On(p) => Some(p.clone()),
        _ => None,
    };
    match rng.random_range(0..100) {
        0..=29 => {
            assert_eq!(own(c.next().unwrap()), m.next(), "next");
            "next"
        }
        30..=44 => {
            assert_eq!(own(c.prev().unwrap()), m.prev(), "prev");
            "prev"
        }
        45..=46 => {
            assert_eq!(own(c.first().unwrap()), m.first(), "first");
            "first"
        }
        47..=48 => {
            assert_eq!(own(c.last().unwrap()), m.last(), "last");
            "last"
        }
        49..=50 => {
            let k = key(rng);
            assert_eq!(own(c.seek(&k).unwrap()), m.seek(&k), "seek");
            "seek"
        }
        51..=52 => {
            let p = (key(rng), value(rng, m.dups));
            c.put(&p.0, &p.1).unwrap();
            m.put(p.clone());
            m.at = At::On(p);
            "put"
        }
        53..=67 => {
            let v = value(rng, m.dups);
            let r = c.put_current(&v);
            match on {
                Some(old) => {
                    r.unwrap();
                    m.set.remove(&old);
                    let p = (old.0, v);
                    m.set.insert(p.clone());
                    m.at = At::On(p);
                }
                None => assert!(r.is_err(), "put_current on no pair"),
            }
            "put_current"
        }
        68..=95 => {
            let r = c.delete_current();
            match on {
                Some(p) => {
                    r.unwrap();
                    m.set.remove(&p);
                    m.at = At::Deleted(p);
                }
                None => assert!(r.is_err(), "delete_current on no pair"),
            }
            "delete_current"
        }
        _ => {
            let r = c.delete_current_key();
            match on {
                Some(p) => {
                    r.unwrap();
                    m.delete_key(&p.0);
                    m.at = At::Deleted(p);
                }
                None => assert!(r.is_err(), "delete_current_key on no pair"),
            }
            "delete_current_key"
        }
    }
}

/// One random write through the transaction itself.
fn txn_op(w: &mut RwTxn<'_>, db: Database, m: &mut Model, rng: &mut SmallRng) {
    let k = key(rng);
    match rng.random_range(0..3) {
        0 => {
            let v = value(rng, m.dups);
            w.put(db, &k, &v).unwrap();
            m.put((k, v));
        }
        1 => {
            let had = m.set.iter().any(|x| x.0 == k);
            assert_eq!(w.delete(db, &k).unwrap(), had, "txn delete");
            m.delete_key(&k);
        }
        _ => {
            // A pair that exists, when there is one near `k`.
            let Some(p) = m.after(&(k, Vec::new()), true) else {
                return;
            };
            if m.dups {
                assert!(w.delete_dup(db, &p.0, &p.1).unwrap());
                m.set.remove(&p);
            } else {
                assert!(w.delete(db, &p.0).unwrap());
                m.set.remove(&p);
            }
        }
    }
}

fn contents(w: &RwTxn<'_>, db: Database) -> Vec<Pair> {
    w.iter(db)
        .unwrap()
        .map(|e| own(Some(e.unwrap())).unwrap())
        .collect()
}

fn open_db(w: &mut RwTxn<'_>, dups: bool) -> Database {
    let mut opts = DbOptions::new();
    if dups {
        opts = opts.dup_sort(KeyOrder::Bytewise);
    }
    w.create_db_with(Some("t"), &opts).unwrap()
}

fn interleavings(seed: u64, dups: bool) {
    let _g = OnFail(format!("dups {dups}, SEED={seed}"));
    let mut rng = SmallRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let env = common::open(dir.path(), EnvOptions::new().page_size(512).max_dbs(2));
    let mut m = Model {
        set: BTreeSet::new(),
        dups,
        at: At::Unset,
    };
    for round in 0..12 {
        let mut w = env.write_txn().unwrap();
        let db = open_db(&mut w, dups);
        // Fill up first, so that the cursor has leaves to delete across.
        for _ in 0..rng.random_range(0..300) {
            let p = (key(&mut rng), value(&mut rng, dups));
            w.put(db, &p.0, &p.1).unwrap();
            m.put(p);
        }
        m.at = At::Unset;
        let mut log = Vec::new();
        for burst in 0..8 {
            {
                let mut c = w.cursor_mut(db).unwrap();
                reposition(&mut c, &mut m);
                for _ in 0..rng.random_range(1..120) {
                    let _l = OnFail(format!("round {round}, burst {burst}, ops {log:?}"));
                    log.push(cursor_op(&mut c, &mut m, &mut rng));
                    let want = match &m.at {
                        At::On(p) => Some(p.clone()),
                        _ => None,
                    };
                    assert_eq!(own(c.current()), want, "current");
                }
            }
            for _ in 0..rng.random_range(0..6) {
                txn_op(&mut w, db, &mut m, &mut rng);
            }
            log.push("txn writes");
            let want: Vec<Pair> = m.set.iter().cloned().collect();
            assert_eq!(
                contents(&w, db),
                want,
                "contents, round {round} burst {burst}"
            );
        }
        w.commit().unwrap();
        assert_check(&env, &format!("round {round}"));
    }
}

#[test]
fn cursor_places_survive_interleaved_writes() {
    let (base, replay) = base_seed("write_cursor_place");
    let n = if replay { 1 } else { cases(4) };
    for c in 0..n as u64 {
        for dups in [false, true] {
            let seed = if replay {
                base
            } else {
                mix(base ^ c << 8 ^ u64::from(dups))
            };
            interleavings(seed, dups);
        }
    }
}

/// Whole loops: a retain over every pair (deleting a random third), then
/// pops from the front and from the back through `first`/`last` and
/// `delete_current`, against the model, with and without DUPSORT.
fn loops(seed: u64, dups: bool) {
    let _g = OnFail(format!("loops: dups {dups}, SEED={seed}"));
    let mut rng = SmallRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let env = common::open(dir.path(), EnvOptions::new().page_size(512).max_dbs(2));
    let mut w = env.write_txn().unwrap();
    let db = open_db(&mut w, dups);
    let mut set = BTreeSet::new();
    for _ in 0..1500 {
        let p = (key(&mut rng), value(&mut rng, dups));
        if !dups {
            set.retain(|x: &Pair| x.0 != p.0);
        }
        w.put(db, &p.0, &p.1).unwrap();
        set.insert(p);
    }
    let mut seen = Vec::new();
    {
        let mut c = w.cursor_mut(db).unwrap();
        while let Some((k, v)) = c.next().unwrap() {
            let p = (k.to_vec(), v.to_vec());
            seen.push(p.clone());
            if rng.random_range(0..3) == 0 {
                c.delete_current().unwrap();
                set.remove(&p);
            }
        }
    }
    assert_eq!(seen.len(), seen.iter().collect::<BTreeSet<_>>().len());
    assert_eq!(contents(&w, db), set.iter().cloned().collect::<Vec<_>>());
    {
        let mut c = w.cursor_mut(db).unwrap();
        for i in 0..400 {
            let front = i % 3 != 0;
            let got = own(if front { c.first() } else { c.last() }.unwrap());
            let want = if front { set.first() } else { set.last() }.cloned();
            assert_eq!(got, want, "pop {i}");
            let Some(p) = want else { break };
            c.delete_current().unwrap();
            set.remove(&p);
        }
    }
    assert_eq!(contents(&w, db), set.iter().cloned().collect::<Vec<_>>());
    w.commit().unwrap();
    assert_check(&env, "after the loops");
}

#[test]
fn retain_and_pop_loops_match_the_model() {
    let (base, replay) = base_seed("write_cursor_loops");
    let n = if replay { 1 } else { cases(3) };
    for c in 0..n as u64 {
        for dups in [false, true] {
            let seed = if replay {
                base
            } else {
                mix(base ^ c << 8 ^ u64::from(dups))
            };
            loops(seed, dups);
        }
    }
}
