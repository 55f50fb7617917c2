//! The file gives space back (issue 23) while other processes use it.
//!
//! - A reader process holds a snapshot of a large database and reads every
//!   page of it again and again (checking each value against the model of
//!   that snapshot), while this process deletes most of the data, commits
//!   and compacts. The reader must never fault (a cut below its pages
//!   would raise `SIGBUS`: its exit status says) and must read exactly its
//!   snapshot; the file must not be cut below the snapshot's pages while it
//!   lives, and must shrink once it has ended.
//! - Two worker processes take turns growing the file (writing a round of
//!   keys) and shrinking it (deleting most of a round, `Env::compact`), in
//!   write-map and default mode, first one after the other and then both
//!   at once. A writer that does not notice the other's truncation writes
//!   past the end of the file (through the map: `SIGBUS`). Both must keep
//!   working, and the contents must equal the model, with `Env::check`
//!   clean.
//!
//! Children are this test binary re-executed (`procs_common`).
//! `SARSEN_TEST_SCALE` multiplies the data.

mod common;
mod procs_common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use procs_common::{self as pc, Kid, WAIT};
use sarsen::{Env, EnvOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Small thresholds, so that megabytes of data shrink many times over.
fn options(write_map: bool) -> EnvOptions {
    EnvOptions::new()
        .write_map(write_map)
        .growth_step(64 << 10)
        .shrink_threshold(64 << 10)
}

fn open(dir: &Path, write_map: bool) -> Env {
    pc::open_with(dir, options(write_map)).unwrap_or_else(|e| panic!("open: {e}"))
}

fn file_len(dir: &Path) -> u64 {
    std::fs::metadata(dir.join("data.sdb")).unwrap().len()
}

/// Bytes of `len` derived from `seed`.
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut z = common::mix(seed);
    (0..len)
        .map(|i| {
            if i % 8 == 0 {
                z = common::mix(z);
            }
            (z >> ((i % 8) * 8)) as u8
        })
        .collect()
}

// ---------------------------------------------------------------------------
// The snapshot of the reader test: keys `s0000000..`, values derived from
// the index (one in 37 an overflow value of several pages).

fn snap_keys() -> u64 {
    12_000 * common::scale() as u64
}

/// Keys `0..snap_live()` are in the reader's snapshot: the rest were
/// deleted just before it, so that the snapshot ends in free pages (its
/// end, `next_pgno`, lies past every page it can reach).
fn snap_live() -> u64 {
    snap_keys() * 2 / 3
}

fn snap_key(i: u64) -> Vec<u8> {
    format!("s{i:07}").into_bytes()
}

fn snap_value(i: u64) -> Vec<u8> {
    let len = if i.is_multiple_of(37) {
        5000 + (i % 3000) as usize
    } else {
        80 + (i * 7 % 200) as usize
    };
    bytes(i, len)
}

// ---------------------------------------------------------------------------
// The rounds of the grow/shrink test: round `r` writes keys `g<r>:<i>`;
// shrinking it deletes all but one in ten.

fn round_keys() -> u64 {
    3000 * common::scale() as u64
}

fn round_key(r: u64, i: u64) -> Vec<u8> {
    format!("g{r:03}:{i:06}").into_bytes()
}

fn round_value(r: u64, i: u64) -> Vec<u8> {
    let len = if i.is_multiple_of(53) {
        6000 + (i % 1000) as usize
    } else {
        100 + ((i * 13 + r) % 300) as usize
    };
    bytes(r << 32 | i, len)
}

fn kept(i: u64) -> bool {
    i.is_multiple_of(10)
}

/// The model after the rounds `grown` were written and `shrunk` shrunk.
fn rounds_model(grown: impl Iterator<Item = u64>, shrunk: &[u64]) -> Model {
    let mut m = Model::new();
    for r in grown {
        for i in 0..round_keys() {
            if !shrunk.contains(&r) || kept(i) {
                m.insert(round_key(r, i), round_value(r, i));
            }
        }
    }
    m
}

/// Every entry of the main database, or why it could not be read.
fn entries(env: &Env) -> Result<Model, String> {
    let r = env.read_txn().map_err(|e| format!("read_txn: {e}"))?;
    let mut m = Model::new();
    for e in r.iter(env.main_db()).map_err(|e| format!("iter: {e}"))? {
        let (k, v) = e.map_err(|e| format!("iteration: {e}"))?;
        m.insert(k.to_vec(), v.to_vec());
    }
    Ok(m)
}

fn same(got: &Model, want: &Model) -> Result<(), String> {
    if got == want {
        return Ok(());
    }
    let missing = want.keys().filter(|k| !got.contains_key(*k)).count();
    let extra = got.keys().filter(|k| !want.contains_key(*k)).count();
    let changed = want
        .iter()
        .filter(|(k, v)| got.get(*k).is_some_and(|g| g != *v))
        .count();
    Err(format!(
        "{} entries, model {}: {missing} missing, {extra} extra, {changed} changed",
        got.len(),
        want.len()
    ))
}

// ---------------------------------------------------------------------------
// Children.

#[test]
#[ignore = "helper: run by the tests of this file in a child process"]
fn shrink_procs_child() {
    let Some((role, dir)) = pc::role() else {
        return;
    };
    match role.as_str() {
        "reader" => reader(&dir),
        "worker" => worker(&dir, pc::param("WMAP") == 1),
        other => panic!("unknown role {other}"),
    }
}

/// Holds one snapshot and reads all of it, over and over, until told to
/// stop. `req <k>` asks for a whole pass begun after the request; it is
/// answered `pass <k>` when done.
fn reader(dir: &Path) {
    let env = open(dir, false);
    let n = snap_live();
    let db = env.main_db();
    let r = env.read_txn().unwrap();
    pc::say(&format!("snap {}", r.txnid()));
    let req = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    {
        let (req, stop) = (Arc::clone(&req), Arc::clone(&stop));
        std::thread::spawn(move || {
            while let Some(l) = pc::hear() {
                if let Some(k) = l.strip_prefix("req ") {
                    req.store(k.parse().unwrap(), Ordering::SeqCst);
                } else if l == "stop" {
                    break;
                }
            }
            stop.store(true, Ordering::SeqCst);
        });
    }
    let mut passes = 0u64;
    let mut answered = 0;
    loop {
        let k = req.load(Ordering::SeqCst);
        let stopping = stop.load(Ordering::SeqCst);
        // Every entry, in order, against the model of the snapshot.
        let mut i = 0;
        for e in r.iter(db).unwrap() {
            let (key, v) = e.unwrap();
            assert!(i < n, "pass {passes}: more than {n} entries");
            assert_eq!(key, &snap_key(i)[..], "pass {passes}: key #{i}");
            assert!(v == snap_value(i), "pass {passes}: value of key #{i}");
            i += 1;
        }
        assert_eq!(i, n, "pass {passes}: entries");
        // And point reads, which walk from the root.
        for j in 0..200 {
            let x = common::mix(passes * 1000 + j) % n;
            let v = r.get(db, &snap_key(x)).unwrap();
            assert!(v == Some(&snap_value(x)[..]), "pass {passes}: get #{x}");
        }
        passes += 1;
        if k > answered {
            pc::say(&format!("pass {k}"));
            answered = k;
        }
        if stopping {
            break;
        }
    }
    drop(r);
    pc::say(&format!("done {passes}"));
}

/// Runs commands: `grow <r>` writes round `r`, `shrink <r>` deletes most
/// of it and compacts, `verify <spec>` checks the contents, `quit`.
fn worker(dir: &Path, write_map: bool) {
    let env = open(dir, write_map);
    let db = env.main_db();
    pc::say("ready");
    while let Some(l) = pc::hear() {
        let mut it = l.split(' ');
        let (cmd, r) = (
            it.next().unwrap(),
            it.next().map(|s| s.parse::<u64>().unwrap()),
        );
        match cmd {
            "grow" => {
                let r = r.unwrap();
                let n = round_keys();
                for chunk in (0..n).collect::<Vec<_>>().chunks(250) {
                    let mut w = env.write_txn().unwrap();
                    for &i in chunk {
                        w.put(db, &round_key(r, i), &round_value(r, i)).unwrap();
                    }
                    w.commit().unwrap();
                }
                pc::say(&format!("grown {r} {}", file_len(dir)));
            }
            "shrink" => {
                let r = r.unwrap();
                let before = file_len(dir);
                // In two commits, the second half first (the pages that
                // end the file).
                for half in [1, 0] {
                    let n = round_keys();
                    let mut w = env.write_txn().unwrap();
                    for i in half * n / 2..(half + 1) * n / 2 {
                        if !kept(i) {
                            assert!(w.delete(db, &round_key(r, i)).unwrap(), "{r}:{i} is there");
                        }
                    }
                    w.commit().unwrap();
                }
                let c = env.compact().unwrap();
                pc::say(&format!(
                    "shrunk {r} {before} {} {} {}",
                    c.len_before, c.len_after, c.pages_moved
                ));
            }
            "quit" => break,
            other => panic!("unknown command {other}"),
        }
    }
    let report = env.check().unwrap();
    assert!(report.is_ok(), "check: {:?}", report.problems);
    drop(env);
    pc::say("bye");
}

fn spawn(dir: &Path, role: &str, write_map: bool, name: &str) -> Kid {
    let mut c = pc::child_cmd("shrink_procs_child", role, dir);
    c.env("SARSEN_PROCS_WMAP", u64::from(write_map).to_string());
    Kid::spawn(c, name)
}

fn expect(k: &mut Kid, word: &str) -> String {
    k.expect(word, 3 * WAIT).unwrap_or_else(|e| panic!("{e}"))
}

/// Waits for `k` to end and asserts it ended well (not killed by a
/// signal: `SIGBUS` from a read or write past the end of the file).
fn ended_well(k: &mut Kid) {
    let st = k.wait(3 * WAIT).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        st.success(),
        "{} ended with {st:?} (a signal: {:?}); stderr:\n{}",
        k.name,
        std::os::unix::process::ExitStatusExt::signal(&st),
        k.stderr()
    );
}

// ---------------------------------------------------------------------------
// Tests.

#[test]
fn a_reader_in_another_process_keeps_its_snapshot_while_the_file_shrinks() {
    reader_keeps_its_snapshot(false);
}

#[test]
fn a_reader_in_another_process_keeps_its_snapshot_while_a_write_map_writer_shrinks() {
    reader_keeps_its_snapshot(true);
}

/// The reader test, this process writing in `write_map` mode or not.
fn reader_keeps_its_snapshot(write_map: bool) {
    let t0 = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    // No automatic compaction: the free tail of the snapshot stays (and
    // `Env::compact` below does what it would).
    let env = pc::open_with(dir, options(write_map).auto_compact(false)).unwrap();
    let db = env.main_db();
    let ps = u64::from(env.page_size());
    let all: Vec<u64> = (0..snap_keys()).collect();
    for chunk in all.chunks(2000) {
        let mut w = env.write_txn().unwrap();
        for &i in chunk {
            w.put(db, &snap_key(i), &snap_value(i)).unwrap();
        }
        w.commit().unwrap();
    }
    // The newest third goes, and a few more commits (rewrites of values as
    // they are) move the pages the delete wrote lower: the pages that end
    // the file are free in the snapshot.
    let n = snap_live();
    let mut w = env.write_txn().unwrap();
    for i in n..snap_keys() {
        assert!(w.delete(db, &snap_key(i)).unwrap());
    }
    w.commit().unwrap();
    for pad in 0..5 {
        let mut w = env.write_txn().unwrap();
        w.put(db, &snap_key(pad * 97), &snap_value(pad * 97))
            .unwrap();
        w.commit().unwrap();
    }
    let info = env.info().unwrap();
    let snap_end = info.next_pgno * ps;
    let full = file_len(dir);
    assert!(
        info.gc_pages * ps > snap_end / 8,
        "the snapshot has few free pages: {info:?}"
    );
    let mut model: Model = (0..n).map(|i| (snap_key(i), snap_value(i))).collect();

    let mut a = spawn(dir, "reader", false, "reader");
    let t: u64 = expect(&mut a, "snap ").parse().unwrap();
    assert_eq!(t, info.last_txnid, "the reader's snapshot");
    let mut req = 0;
    // After each step, a whole pass of the reader begun after it.
    let mut step = |a: &mut Kid, what: &str| {
        req += 1;
        a.send(&format!("req {req}"));
        let got = expect(a, "pass ");
        assert_eq!(got, req.to_string(), "after {what}");
        let len = file_len(dir);
        assert!(
            len >= snap_end,
            "after {what}: the file ({len}) was cut below the reader's snapshot ({snap_end})"
        );
    };
    step(&mut a, "the reader began");
    // Delete nine in ten, in three commits.
    for part in 0..3 {
        let mut w = env.write_txn().unwrap();
        for i in (part * n / 3..(part + 1) * n / 3).filter(|i| i % 10 != 0) {
            assert!(w.delete(db, &snap_key(i)).unwrap());
            model.remove(&snap_key(i));
        }
        w.commit().unwrap();
        step(&mut a, &format!("delete commit {part}"));
    }
    // Rewrites of survivors.
    for round in 0..3u64 {
        let mut w = env.write_txn().unwrap();
        for i in (0..n).filter(|i| i % 10 == 0).step_by(3) {
            let v = bytes(round << 40 | i, 150);
            w.put(db, &snap_key(i), &v).unwrap();
            model.insert(snap_key(i), v);
        }
        w.commit().unwrap();
        step(&mut a, &format!("rewrite {round}"));
    }
    let held = env.compact().unwrap();
    step(&mut a, "compact");
    let held2 = env.compact().unwrap();
    step(&mut a, "second compact");
    same(&entries(&env).unwrap(), &model).unwrap();
    let held_len = file_len(dir);
    eprintln!("full {full}, snapshot end {snap_end}; with the reader: {held:?} {held2:?}");

    a.send("stop");
    let passes: u64 = expect(&mut a, "done ").parse().unwrap();
    ended_well(&mut a);
    assert!(passes > req, "{passes} passes for {req} requests");

    // The reader is gone: the next commit and compaction give back what
    // it held.
    let mut w = env.write_txn().unwrap();
    w.put(db, b"after", b"the reader").unwrap();
    model.insert(b"after".to_vec(), b"the reader".to_vec());
    w.commit().unwrap();
    let c = env.compact().unwrap();
    let live = {
        let i = env.info().unwrap();
        (i.next_pgno - i.gc_pages) * ps
    };
    eprintln!("after the reader: {c:?}, live {live}; {:.1?}", t0.elapsed());
    assert!(
        c.len_after < held_len && c.len_after < snap_end / 2,
        "the file did not shrink once the reader ended: {c:?}, {held_len} with the reader, snapshot end {snap_end}"
    );
    same(&entries(&env).unwrap(), &model).unwrap();
    common::assert_check(&env, "after the reader");
}

/// One process grows, the other shrinks, roles swapping each round; then
/// both at once.
fn grow_and_shrink(write_map: bool) {
    let t0 = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    // Create the file, and read it from this process too.
    let env = open(dir, write_map);
    let mut kids = [
        spawn(dir, "worker", write_map, "worker 0"),
        spawn(dir, "worker", write_map, "worker 1"),
    ];
    for k in &mut kids {
        expect(k, "ready");
    }
    let mut grown: Vec<u64> = Vec::new();
    let mut shrunk: Vec<u64> = Vec::new();
    let check_model = |env: &Env, grown: &[u64], shrunk: &[u64], when: &str| {
        let want = rounds_model(grown.iter().copied(), shrunk);
        let got = entries(env).unwrap_or_else(|e| panic!("{when}: {e}"));
        if let Err(e) = same(&got, &want) {
            panic!("write_map {write_map}, {when}: {e}");
        }
    };
    // One after the other.
    let rounds = 4;
    for r in 0..rounds {
        let (g, s) = ((r % 2) as usize, (1 - r % 2) as usize);
        kids[g].send(&format!("grow {r}"));
        let len_grown: u64 = expect(&mut kids[g], &format!("grown {r}")).parse().unwrap();
        grown.push(r);
        check_model(&env, &grown, &shrunk, &format!("round {r} grown"));
        kids[s].send(&format!("shrink {r}"));
        let got = expect(&mut kids[s], &format!("shrunk {r}"));
        let v: Vec<u64> = got.split(' ').map(|x| x.parse().unwrap()).collect();
        shrunk.push(r);
        check_model(&env, &grown, &shrunk, &format!("round {r} shrunk"));
        eprintln!("write_map {write_map} round {r}: grown to {len_grown}, shrunk {v:?}");
        assert!(
            v[2] < len_grown,
            "write_map {write_map} round {r}: the file did not shrink ({len_grown} grown, {v:?})"
        );
    }
    // Both at once: one grows round r + 1 while the other shrinks round r.
    for r in rounds..3 * rounds {
        let (g, s) = ((r % 2) as usize, (1 - r % 2) as usize);
        if r == rounds {
            kids[s].send(&format!("grow {r}"));
            expect(&mut kids[s], &format!("grown {r}"));
            grown.push(r);
        }
        kids[g].send(&format!("grow {}", r + 1));
        kids[s].send(&format!("shrink {r}"));
        expect(&mut kids[g], &format!("grown {}", r + 1));
        expect(&mut kids[s], &format!("shrunk {r}"));
        grown.push(r + 1);
        shrunk.push(r);
        check_model(&env, &grown, &shrunk, &format!("concurrent round {r}"));
    }
    for k in &mut kids {
        k.send("quit");
        expect(k, "bye");
        ended_well(k);
    }
    check_model(&env, &grown, &shrunk, "at the end");
    common::assert_check(&env, &format!("write_map {write_map}: at the end"));
    drop(env);
    // And from a fresh open.
    let env = open(dir, write_map);
    check_model(&env, &grown, &shrunk, "reopened");
    common::assert_check(&env, &format!("write_map {write_map}: reopened"));
    eprintln!(
        "write_map {write_map}: {} rounds, final length {}; {:.1?}",
        grown.len(),
        file_len(dir),
        t0.elapsed()
    );
}

#[test]
fn two_processes_grow_and_shrink_in_turn_default_mode() {
    grow_and_shrink(false);
}

#[test]
fn two_processes_grow_and_shrink_in_turn_write_map() {
    grow_and_shrink(true);
}
