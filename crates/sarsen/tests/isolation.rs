//! Snapshot isolation across threads.
//!
//! A writer commits thousands of small transactions; transaction `i` writes `k{i}`, rewrites or
//! deletes some older keys and sets `counter = i`. Readers opened at different points hold their
//! `RoTxn` while the writer runs and must see exactly the state after transaction `counter`
//! (computed by replaying the writer's deterministic operations into a `BTreeMap`), the same
//! txnid, and nothing newer, for as long as they hold the snapshot.
//!
//! `SARSEN_TEST_SCALE=n` multiplies the number of writer transactions.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::Duration;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sarsen::{Database, Durability, Env, RoTxn, RwTxn};

/// Sets the flag when dropped, so readers waiting for the writer stop even
/// if the writer panics (a failure must fail, not hang).
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("k{i:06}").into_bytes()
}

/// The deterministic effects of writer transaction `i` (1-based).
fn ops_of(i: u64) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    let mut ops = vec![(
        key(i),
        Some(format!("v{i}-{}", "x".repeat((i % 40) as usize)).into_bytes()),
    )];
    if i.is_multiple_of(3) {
        ops.push((key(i / 3), Some(format!("u{i}").into_bytes())));
    }
    if i.is_multiple_of(7) && i > 3 {
        ops.push((key(i - 3), None));
    }
    if i.is_multiple_of(101) {
        // an occasional large value (overflow pages)
        ops.push((
            b"big".to_vec(),
            Some(vec![(i % 251) as u8; 9000 + (i as usize % 3000)]),
        ));
    }
    ops.push((b"counter".to_vec(), Some(i.to_be_bytes().to_vec())));
    ops
}

fn apply(m: &mut Map, i: u64) {
    for (k, v) in ops_of(i) {
        match v {
            Some(v) => {
                m.insert(k, v);
            }
            None => {
                m.remove(&k);
            }
        }
    }
}

fn state(c: u64) -> Map {
    let mut m = Map::new();
    for i in 1..=c {
        apply(&mut m, i);
    }
    m
}

fn write_txn_i(w: &mut RwTxn, db: Database, i: u64) {
    for (k, v) in ops_of(i) {
        match v {
            Some(v) => w.put(db, &k, &v).unwrap(),
            None => {
                w.delete(db, &k).unwrap();
            }
        }
    }
}

fn counter_of(r: &RoTxn, db: Database) -> u64 {
    r.get(db, b"counter")
        .unwrap()
        .map(|v| u64::from_be_bytes(v.try_into().expect("counter is 8 bytes")))
        .unwrap_or(0)
}

fn writer_txns() -> u64 {
    3000 * scale() as u64
}

/// Long-lived readers opened at different txnids each see exactly their snapshot while the
/// writer commits thousands of transactions; short-lived readers do the same in a loop.
#[test]
fn readers_see_exactly_their_snapshot() {
    readers_see_exactly_their_snapshot_with(false);
}

/// The same with the writer building pages in the shared map readers read.
#[test]
fn readers_see_exactly_their_snapshot_write_map() {
    readers_see_exactly_their_snapshot_with(true);
}

fn readers_see_exactly_their_snapshot_with(write_map: bool) {
    let (seed, _) = base_seed("readers_see_exactly_their_snapshot");
    let n = writer_txns();
    let dir = tempfile::tempdir().unwrap();
    let env = open(
        dir.path(),
        opts(4096, Durability::NoSync).write_map(write_map),
    );
    let db = env.main_db();
    let progress = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    let observed: Mutex<Vec<(u64, u64)>> = Mutex::new(Vec::new()); // (txnid, counter)
    let stale_checks = AtomicU64::new(0);

    // Check the whole snapshot: full scans both ways, stat, and point gets.
    let verify = |r: &RoTxn, c: u64, exp: &Map, rng: &mut StdRng, what: &str| {
        assert_eq!(
            counter_of(r, db),
            c,
            "{what}: counter changed under a held snapshot"
        );
        check_db(r, db, exp, what, true);
        for _ in 0..50 {
            let i = rng.random_range(0..n + 5);
            let k = key(i);
            let got = r.get(db, &k).unwrap();
            assert_eq!(
                got,
                exp.get(&k).map(|v| v.as_slice()),
                "{what}: get {}",
                show(&k)
            );
        }
    };

    std::thread::scope(|s| {
        let env = &env;
        let (progress, done, observed, stale_checks) = (&progress, &done, &observed, &stale_checks);

        // writer
        s.spawn(move || {
            let _done = SetOnDrop(done);
            for i in 1..=n {
                let mut w = env.write_txn().unwrap();
                write_txn_i(&mut w, db, i);
                w.commit().unwrap();
                progress.store(i, Ordering::Release);
            }
        });

        // long-lived readers, started at staggered points, each holding its snapshot to the end
        let n_long = 6u64;
        for j in 0..n_long {
            s.spawn(move || {
                let mut rng = StdRng::seed_from_u64(mix(seed ^ j));
                let start_at = j * n / n_long;
                while progress.load(Ordering::Acquire) < start_at {
                    if done.load(Ordering::Acquire) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                let r = env.read_txn().unwrap();
                let id = r.txnid();
                let c = counter_of(&r, db);
                assert!(c >= start_at, "long reader {j}: counter {c} older than progress {start_at} seen before opening");
                let exp = state(c);
                observed.lock().unwrap().push((id, c));
                let what = format!("long reader {j} (txnid {id}, counter {c})");
                verify(&r, c, &exp, &mut rng, &what);
                // re-verify repeatedly while the writer moves on
                let mut rounds = 0;
                loop {
                    let finished = done.load(Ordering::Acquire);
                    let p = progress.load(Ordering::Acquire);
                    verify(&r, c, &exp, &mut rng, &what);
                    assert_eq!(r.txnid(), id, "{what}: txnid changed");
                    if p > c {
                        stale_checks.fetch_add(1, Ordering::Relaxed);
                    }
                    rounds += 1;
                    if finished {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                assert!(rounds >= 1);
            });
        }

        // short-lived readers: open, verify, wait until the writer has moved on, verify, drop
        for j in 0..4u64 {
            s.spawn(move || {
                let mut rng = StdRng::seed_from_u64(mix(seed ^ (100 + j)));
                let mut cache: HashMap<u64, Map> = HashMap::new();
                while !done.load(Ordering::Acquire) {
                    let r = env.read_txn().unwrap();
                    let id = r.txnid();
                    let c = counter_of(&r, db);
                    let exp = cache.entry(c).or_insert_with(|| state(c)).clone();
                    observed.lock().unwrap().push((id, c));
                    let what = format!("short reader {j} (txnid {id}, counter {c})");
                    verify(&r, c, &exp, &mut rng, &what);
                    let target = c + rng.random_range(1..=60);
                    while progress.load(Ordering::Acquire) < target && !done.load(Ordering::Acquire)
                    {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    if progress.load(Ordering::Acquire) > c {
                        stale_checks.fetch_add(1, Ordering::Relaxed);
                    }
                    verify(&r, c, &exp, &mut rng, &what);
                    assert_eq!(r.txnid(), id, "{what}: txnid changed");
                    drop(r);
                    cache.retain(|k, _| *k + 200 > c);
                }
            });
        }
    });

    // the final state is the replay of every transaction
    let r = env.read_txn().unwrap();
    assert_eq!(counter_of(&r, db), n);
    check_db(&r, db, &state(n), "final state", true);

    eprintln!(
        "{} snapshots observed, {} checks of a snapshot older than the writer",
        observed.lock().unwrap().len(),
        stale_checks.load(Ordering::Relaxed)
    );
    // snapshots agree across readers: one counter per txnid, and txnid order = counter order
    let mut obs = observed.into_inner().unwrap();
    obs.sort();
    obs.dedup();
    for w in obs.windows(2) {
        let ((id0, c0), (id1, c1)) = (w[0], w[1]);
        assert!(id0 != id1, "txnid {id0} seen with counters {c0} and {c1}");
        assert!(c1 > c0, "txnid {id0} < {id1} but counter {c0} >= {c1}");
    }
    assert!(obs.len() >= 3, "too few snapshots observed: {}", obs.len());
    // the held snapshots really were older than the writer (the test exercised isolation)
    assert!(
        stale_checks.load(Ordering::Relaxed) > 0,
        "no snapshot was checked while older than the writer"
    );
}

/// Many more reader threads than cores, each opening and dropping readers in a tight loop while
/// a writer commits; every snapshot must be internally consistent.
#[test]
fn many_readers_in_a_loop() {
    many_readers_in_a_loop_with(false);
}

/// The same in write-map mode.
#[test]
fn many_readers_in_a_loop_write_map() {
    many_readers_in_a_loop_with(true);
}

fn many_readers_in_a_loop_with(write_map: bool) {
    let n = writer_txns() * 2 / 3;
    let dir = tempfile::tempdir().unwrap();
    let env = open(
        dir.path(),
        opts(4096, Durability::NoSync)
            .max_readers(64)
            .write_map(write_map),
    );
    let db = env.main_db();
    // expected entry count and content of k{c} after each transaction
    let mut lens = vec![0u64];
    let mut m = Map::new();
    let mut last_vals = vec![None];
    for i in 1..=n {
        apply(&mut m, i);
        lens.push(m.len() as u64);
        last_vals.push(m.get(&key(i)).cloned());
    }
    let done = AtomicBool::new(false);
    let threads = 16;
    let barrier = Barrier::new(threads + 1);
    let total = AtomicU64::new(0);
    std::thread::scope(|s| {
        let (env, done, lens, last_vals, barrier, total) =
            (&env, &done, &lens, &last_vals, &barrier, &total);
        for t in 0..threads {
            s.spawn(move || {
                barrier.wait();
                let mut count = 0u64;
                let mut last_c = 0;
                loop {
                    let finished = done.load(Ordering::Acquire);
                    let r = env.read_txn().unwrap();
                    let c = counter_of(&r, db);
                    assert!(
                        c >= last_c,
                        "thread {t}: snapshot went backwards ({last_c} -> {c})"
                    );
                    last_c = c;
                    let what = format!("thread {t} counter {c}");
                    assert_eq!(
                        r.stat(db).unwrap().entries,
                        lens[c as usize],
                        "{what}: stat.entries"
                    );
                    if c > 0 {
                        assert_eq!(
                            r.get(db, &key(c)).unwrap().map(|v| v.to_vec()),
                            last_vals[c as usize],
                            "{what}: k{c}"
                        );
                    }
                    assert_eq!(
                        r.get(db, &key(c + 1)).unwrap(),
                        None,
                        "{what}: k{} visible",
                        c + 1
                    );
                    // a short range scan from the newest key
                    let lo = key(c.saturating_sub(5));
                    let n_range = r.range(db, lo.as_slice()..).unwrap().count() as u64;
                    assert!(
                        n_range <= 7,
                        "{what}: range from {} returned {n_range} entries",
                        show(&lo)
                    );
                    if t == 0 && count.is_multiple_of(50) {
                        let info = env.info().unwrap();
                        assert!(info.readers_used <= info.max_readers, "{info:?}");
                        assert_eq!(info.max_readers, 64);
                    }
                    drop(r);
                    count += 1;
                    if finished {
                        break;
                    }
                }
                total.fetch_add(count, Ordering::Relaxed);
            });
        }
        barrier.wait();
        let _done = SetOnDrop(done);
        for i in 1..=n {
            let mut w = env.write_txn().unwrap();
            write_txn_i(&mut w, db, i);
            w.commit().unwrap();
        }
    });
    eprintln!(
        "{} read transactions by {threads} threads",
        total.load(Ordering::Relaxed)
    );
    assert!(total.load(Ordering::Relaxed) >= threads as u64);
    let r = env.read_txn().unwrap();
    assert_eq!(counter_of(&r, db), n);
    check_db(&r, db, &state(n), "final", true);
}

fn assert_send<T: Send>() {}
fn assert_sync<T: Sync>() {}

/// `RoTxn` is `Send`: a snapshot opened on one thread reads the same data on another thread
/// after the writer has moved on, and can be sent back.
#[test]
fn rotxn_sent_to_another_thread() {
    assert_send::<RoTxn<'static>>();
    assert_send::<Env>();
    assert_sync::<Env>();
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path(), opts(4096, Durability::NoSync));
    let db = env.main_db();
    let c0 = 500;
    for i in 1..=c0 {
        let mut w = env.write_txn().unwrap();
        write_txn_i(&mut w, db, i);
        w.commit().unwrap();
    }
    let exp = state(c0);
    let r = env.read_txn().unwrap();
    let id = r.txnid();
    std::thread::scope(|s| {
        // writer thread moves on
        s.spawn(|| {
            for i in c0 + 1..=c0 + 300 {
                let mut w = env.write_txn().unwrap();
                write_txn_i(&mut w, db, i);
                w.commit().unwrap();
            }
        })
        .join()
        .unwrap();
        // move the snapshot to another thread, read there, send it back
        let exp = &exp;
        let r = s
            .spawn(move || {
                assert_eq!(r.txnid(), id);
                assert_eq!(counter_of(&r, db), c0);
                check_db(&r, db, exp, "snapshot on another thread", true);
                r
            })
            .join()
            .unwrap();
        check_db(&r, db, exp, "snapshot back on the first thread", true);
        assert_eq!(counter_of(&r, db), c0);
    });
    let r2 = env.read_txn().unwrap();
    assert_eq!(counter_of(&r2, db), c0 + 300);
    check_db(&r2, db, &state(c0 + 300), "new snapshot", true);
}

/// One thread may hold several snapshots and a write transaction at the same time.
#[test]
fn snapshots_and_writer_on_one_thread() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path(), opts(512, Durability::NoSync));
    let db = env.main_db();
    let mut snaps: Vec<(RoTxn, u64)> = Vec::new();
    for i in 1..=200u64 {
        if i % 25 == 0 {
            let r = env.read_txn().unwrap();
            let c = counter_of(&r, db);
            assert_eq!(c, i - 1);
            snaps.push((r, c));
        }
        let mut w = env.write_txn().unwrap();
        write_txn_i(&mut w, db, i);
        w.commit().unwrap();
    }
    let mut ids: Vec<u64> = Vec::new();
    for (r, c) in &snaps {
        assert_eq!(counter_of(r, db), *c);
        check_db(r, db, &state(*c), &format!("snapshot at counter {c}"), true);
        ids.push(r.txnid());
    }
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "snapshot txnids not increasing: {ids:?}"
    );
}

/// Write transactions are serialized: concurrent read-modify-write increments never lose updates.
#[test]
fn writers_are_serialized() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path(), opts(4096, Durability::NoSync));
    let db = env.main_db();
    let threads = 4u64;
    let per = 150 * scale() as u64;
    let ids: Mutex<Vec<u64>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for t in 0..threads {
            let (env, ids) = (&env, &ids);
            s.spawn(move || {
                for j in 0..per {
                    let mut w = env.write_txn().unwrap();
                    let c = w
                        .get(db, b"counter")
                        .unwrap()
                        .map(|v| u64::from_be_bytes(v.try_into().unwrap()))
                        .unwrap_or(0);
                    w.put(db, format!("t{t}-{j:05}").as_bytes(), &c.to_be_bytes())
                        .unwrap();
                    w.put(db, b"counter", &(c + 1).to_be_bytes()).unwrap();
                    ids.lock().unwrap().push(w.txnid());
                    w.commit().unwrap();
                }
            });
        }
    });
    let r = env.read_txn().unwrap();
    assert_eq!(counter_of(&r, db), threads * per, "lost updates");
    assert_eq!(r.stat(db).unwrap().entries, threads * per + 1);
    // every write txn had a distinct txnid, and every increment value was seen exactly once
    let mut ids = ids.into_inner().unwrap();
    ids.sort();
    let len = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), len, "two write transactions shared a txnid");
    let mut seen: Vec<u64> = r
        .iter(db)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|(k, _)| k.starts_with(b"t"))
        .map(|(_, v)| u64::from_be_bytes(v.try_into().unwrap()))
        .collect();
    seen.sort();
    assert_eq!(seen, (0..threads * per).collect::<Vec<_>>());
}
