//! A write cursor keeps its place across its own deletes and value
//! replacements (LMDB's cursor keeps its page stack): random interleavings
//! of cursor moves, `delete_current`, `delete_current_key`, `put_current`,
//! `merge_current` and cursor puts, with puts and deletes through the
//! transaction between cursors, against a `BTreeSet` of pairs with a model
//! cursor, with and without DUPSORT, in the main or a named database, in
//! both write modes, some bursts in nested transactions that commit or
//! abort, at 512-byte pages with values up to overflow size, so that
//! deletes merge leaves and replacements split them under the cursor. Writes
//! through the cursor also fail: merges the operator refuses, keys too long,
//! values too large for a DUPSORT database and, near a small upper bound,
//! `UpperBoundReached` from any write; each must leave the cursor on its
//! pair, value included. Then whole retain loops and pops from either end.

mod common;

use std::collections::BTreeSet;

use common::{assert_check, base_seed, cases, mix, OnFail};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sarsen::{Database, DbOptions, Env, EnvOptions, Error, KeyOrder, RwCursor, RwTxn};

type Pair = (Vec<u8>, Vec<u8>);

/// How a case is set up.
#[derive(Clone, Copy, Debug)]
struct Setup {
    dups: bool,
    /// The main database rather than a named one (without DUPSORT).
    main: bool,
    write_map: bool,
    /// A small upper bound: any write may fail with `UpperBoundReached`,
    /// which must change nothing (without DUPSORT, whose `put_current` is
    /// two writes).
    tight: bool,
}

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
    tight: bool,
    max_key: usize,
    /// Writes refused with `UpperBoundReached` so far.
    full: usize,
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

/// An error kind a write must fail with.
type Want = Option<fn(&Error) -> bool>;

fn no_pair(e: &Error) -> bool {
    matches!(e, Error::InvalidArgument(_))
}

/// Checks a write's result against the model's prediction, `want`: `None`
/// for success, else the error it must give. Near the upper bound a write
/// may fail with `UpperBoundReached` instead of succeeding. Returns whether
/// the write happened (the model then makes it too).
fn wrote(m: &mut Model, r: sarsen::Result<()>, want: Want, what: &str) -> bool {
    match (r, want) {
        (Ok(()), None) => true,
        (Err(Error::UpperBoundReached { .. }), None) if m.tight => {
            m.full += 1;
            false
        }
        (Err(e), Some(is)) if is(&e) => false,
        (r, want) => panic!(
            "{what}: {r:?}, but the model wants an error: {}",
            want.is_some()
        ),
    }
}

/// One random cursor operation on both cursors; returns its name.
fn cursor_op(c: &mut RwCursor<'_, '_>, m: &mut Model, rng: &mut SmallRng) -> &'static str {
    let on = match &m.at {
        At::On(p) => Some(p.clone()),
        _ => None,
    };
    // On no pair, the writes at the cursor fail before anything else.
    let at_pair = |want: Want| {
        if on.is_some() {
            want
        } else {
            Some(no_pair as fn(&Error) -> bool)
        }
    };
    match rng.random_range(0..110) {
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
            if wrote(m, c.put(&p.0, &p.1), None, "put") {
                m.put(p.clone());
                m.at = At::On(p);
            }
            "put"
        }
        53..=67 => {
            let v = value(rng, m.dups);
            if wrote(m, c.put_current(&v), at_pair(None), "put_current") {
                replace(m, on.unwrap(), v);
            }
            "put_current"
        }
        68..=95 => {
            if wrote(m, c.delete_current(), at_pair(None), "delete_current") {
                let p = on.unwrap();
                m.set.remove(&p);
                m.at = At::Deleted(p);
            }
            "delete_current"
        }
        96..=97 => {
            let r = c.delete_current_key();
            if wrote(m, r, at_pair(None), "delete_current_key") {
                let p = on.unwrap();
                m.delete_key(&p.0);
                m.at = At::Deleted(p);
            }
            "delete_current_key"
        }
        98..=103 => merge_op(c, m, rng, on),
        104..=106 => {
            // Past what a DUPSORT value may be; several overflow pages without.
            let v = vec![b'v'; rng.random_range(1500..5000)];
            let want: Want = if m.dups {
                Some(|e| matches!(e, Error::ValueTooLarge { .. }))
            } else {
                None
            };
            if wrote(m, c.put_current(&v), at_pair(want), "long put_current") {
                replace(m, on.unwrap(), v);
            }
            "long put_current"
        }
        _ => {
            let k = vec![b'k'; m.max_key + 1];
            let r = c.put(&k, b"v");
            wrote(
                m,
                r,
                Some(|e| matches!(e, Error::KeyTooLarge { .. })),
                "put too long a key",
            );
            "put too long a key"
        }
    }
}

/// The value of the pair `old` the model cursor is on becomes `v`.
fn replace(m: &mut Model, old: Pair, v: Vec<u8>) {
    m.set.remove(&old);
    let p = (old.0, v);
    m.set.insert(p.clone());
    m.at = At::On(p);
}

/// `merge_current` with `common::Picky`, whose operand is refused one time in three.
fn merge_op(
    c: &mut RwCursor<'_, '_>,
    m: &mut Model,
    rng: &mut SmallRng,
    on: Option<Pair>,
) -> &'static str {
    let refuse = rng.random_range(0..3) == 0;
    let mut operand = value(rng, true);
    if refuse {
        operand[0] = b'!';
    }
    let want: Want = match (&on, m.dups, refuse) {
        (None, ..) => Some(no_pair),
        (Some(_), true, _) => Some(|e| matches!(e, Error::WrongDupMode { .. })),
        (Some(_), false, true) => Some(|e| matches!(e, Error::Merge { .. })),
        (Some(_), false, false) => None,
    };
    if wrote(m, c.merge_current(&operand), want, "merge_current") {
        let p = on.unwrap();
        let mut v = p.1.clone();
        v.extend_from_slice(&operand);
        replace(m, p, v);
    }
    if refuse {
        "refused merge_current"
    } else {
        "merge_current"
    }
}

/// One random write through the transaction itself.
fn txn_op(w: &mut RwTxn<'_>, db: Database, m: &mut Model, rng: &mut SmallRng) {
    let k = key(rng);
    match rng.random_range(0..3) {
        0 => {
            let v = value(rng, m.dups);
            if wrote(m, w.put(db, &k, &v), None, "txn put") {
                m.put((k, v));
            }
        }
        1 => {
            let had = m.set.iter().any(|x| x.0 == k);
            let r = w.delete(db, &k).map(|g| assert_eq!(g, had, "txn delete"));
            if wrote(m, r, None, "txn delete") {
                m.delete_key(&k);
            }
        }
        _ => {
            // A pair that exists, when there is one near `k`.
            let Some(p) = m.after(&(k, Vec::new()), true) else {
                return;
            };
            let r = if m.dups {
                w.delete_dup(db, &p.0, &p.1)
            } else {
                w.delete(db, &p.0)
            };
            if wrote(
                m,
                r.map(|g| assert!(g, "txn delete of {p:?}")),
                None,
                "txn delete",
            ) {
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

/// The database under test, with `common::Picky` as its merge operator.
fn open_db(w: &mut RwTxn<'_>, s: Setup) -> Database {
    let mut opts = DbOptions::new().merge_operator(common::Picky);
    if s.dups {
        opts = opts.dup_sort(KeyOrder::Bytewise);
    }
    let name = if s.main { None } else { Some("t") };
    w.create_db_with(name, &opts).unwrap()
}

fn env_for(dir: &std::path::Path, s: Setup) -> Env {
    let mut o = EnvOptions::new()
        .page_size(512)
        .max_dbs(2)
        .write_map(s.write_map);
    if s.tight {
        o = o.max_size(80 * 512).growth_step(512);
    }
    common::open(dir, o)
}

/// A case's setup from its seed (so that `SARSEN_SEED` replays it).
fn setup(seed: u64, dups: bool, tight: bool) -> Setup {
    Setup {
        dups,
        main: !dups && seed & 1 == 1,
        write_map: seed & 2 == 2,
        tight,
    }
}

/// Rounds of bursts of cursor operations (some in a nested transaction
/// that commits or aborts) and writes through the transaction; returns
/// how many writes `UpperBoundReached` refused.
fn interleavings(seed: u64, s: Setup) -> usize {
    let _g = OnFail(format!("{s:?}, SEED={seed}"));
    let mut rng = SmallRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let env = env_for(dir.path(), s);
    let mut m = Model {
        set: BTreeSet::new(),
        dups: s.dups,
        at: At::Unset,
        tight: s.tight,
        max_key: env.max_key_size(),
        full: 0,
    };
    for round in 0..12 {
        let committed = m.set.clone();
        let mut w = env.write_txn().unwrap();
        let db = open_db(&mut w, s);
        // Fill up first, so that the cursor has leaves to delete across.
        for _ in 0..rng.random_range(0..300) {
            let p = (key(&mut rng), value(&mut rng, s.dups));
            if wrote(&mut m, w.put(db, &p.0, &p.1), None, "fill") {
                m.put(p);
            }
        }
        m.at = At::Unset;
        let mut log = Vec::new();
        for burst in 0..8 {
            let _l = OnFail(format!("round {round}, burst {burst}"));
            match rng.random_range(0..4) {
                0 => {
                    let saved = (m.set.clone(), m.at.clone());
                    let mut n = w.nested().unwrap();
                    burst_ops(&mut n, db, &mut m, &mut rng, &mut log);
                    n.abort();
                    (m.set, m.at) = saved;
                    log.push("nested abort");
                }
                1 => {
                    let mut n = w.nested().unwrap();
                    burst_ops(&mut n, db, &mut m, &mut rng, &mut log);
                    n.commit().unwrap();
                    log.push("nested commit");
                }
                _ => burst_ops(&mut w, db, &mut m, &mut rng, &mut log),
            }
            for _ in 0..rng.random_range(0..6) {
                txn_op(&mut w, db, &mut m, &mut rng);
            }
            log.push("txn writes");
            let want: Vec<Pair> = m.set.iter().cloned().collect();
            assert_eq!(contents(&w, db), want, "contents");
        }
        match w.commit() {
            Ok(()) => assert_check(&env, &format!("round {round}")),
            // Near the upper bound the commit's own pages may not fit.
            Err(Error::UpperBoundReached { .. }) if s.tight => {
                m.full += 1;
                m.set = committed;
            }
            Err(e) => panic!("round {round}: commit: {e:?}"),
        }
    }
    m.full
}

/// A cursor placed where the model cursor stands, then random cursor
/// operations, each followed by a check of the pair it stands on.
fn burst_ops(
    w: &mut RwTxn<'_>,
    db: Database,
    m: &mut Model,
    rng: &mut SmallRng,
    log: &mut Vec<&'static str>,
) {
    let mut c = w.cursor_mut(db).unwrap();
    reposition(&mut c, m);
    for _ in 0..rng.random_range(1..120) {
        let _l = OnFail(format!("the operations before the failing one: {log:?}"));
        let op = cursor_op(&mut c, m, rng);
        log.push(op);
        let want = match &m.at {
            At::On(p) => Some(p.clone()),
            _ => None,
        };
        assert_eq!(own(c.current()), want, "current after {op}");
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
            interleavings(seed, setup(seed, dups, false));
        }
    }
}

/// Near a small upper bound every write may fail: the cursor must stay on
/// its pair (its value too) and move on from there.
#[test]
fn failed_writes_leave_the_cursor_on_its_pair() {
    let (base, replay) = base_seed("write_cursor_full");
    let n = if replay { 1 } else { cases(4) };
    let mut full = 0;
    for c in 0..n as u64 {
        let seed = if replay { base } else { mix(base ^ c << 8) };
        full += interleavings(seed, setup(seed, false, true));
    }
    eprintln!("[write_cursor_full] {full} writes refused at the upper bound");
    assert!(full > 0, "no write met the upper bound");
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
    let db = open_db(&mut w, setup(seed, dups, false));
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
