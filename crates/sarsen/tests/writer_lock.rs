//! The cross-process writer lock (`io/writer_lock.rs`: a futex word in the
//! lock file, owners' deaths seen through their OFD locks):
//!
//! * writers in two processes and several threads each add 1 to a shared
//!   counter many times: the sum must be exact (no two writers at once);
//! * a child that dies (SIGKILL) holding the lock, in the middle of a
//!   write transaction, must not stop the next writer, whose state is the
//!   last commit;
//! * garbage in the lock word (an id no one holds, with or without the
//!   waiters bit, this environment's own id) must not stop a writer.
//!
//! Lock-file offsets (format version 3, `io/lock.rs`): the writer word is
//! the `u32` at byte 288, the owner-id counter the `u64` at 296.

mod procs_common;

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use procs_common::{self as pc, Kid, WAIT};
use sarsen::Env;

const WRITER_WORD: u64 = 288;
const OWNER_COUNTER: u64 = 296;

fn counter(env: &Env) -> u64 {
    let r = env.read_txn().unwrap();
    r.get(env.main_db(), b"counter")
        .unwrap()
        .map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap()))
}

/// Adds 1 to the counter `n` times, one write transaction each.
fn bump(env: &Env, n: u64) {
    for _ in 0..n {
        let mut w = env.write_txn().unwrap();
        let c = w
            .get(env.main_db(), b"counter")
            .unwrap()
            .map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap()));
        w.put(env.main_db(), b"counter", &(c + 1).to_le_bytes())
            .unwrap();
        w.commit().unwrap();
    }
}

/// Child: bumps the counter `N` times from `THREADS` threads, says `done`.
#[test]
#[ignore = "helper: run by the writer lock tests in a child process"]
fn writer_lock_bumper() {
    let Some((_, dir)) = pc::role() else {
        return;
    };
    let env = Arc::new(pc::open(&dir));
    let (threads, n) = (pc::param("THREADS"), pc::param("N"));
    pc::say("opened");
    let hs: Vec<_> = (0..threads)
        .map(|_| {
            let env = env.clone();
            std::thread::spawn(move || bump(&env, n))
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    pc::say("done");
    while pc::hear().is_some() {}
}

/// Child: begins a write transaction, puts a key, says `holding`, and
/// waits to be killed.
#[test]
#[ignore = "helper: run by the writer lock tests in a child process"]
fn writer_lock_holder() {
    let Some((_, dir)) = pc::role() else {
        return;
    };
    let env = pc::open(&dir);
    let mut w = env.write_txn().unwrap();
    w.put(env.main_db(), b"uncommitted", b"x").unwrap();
    pc::say("holding");
    while pc::hear().is_some() {}
    drop(w);
}

fn kid(helper: &str, dir: &Path, threads: u64, n: u64) -> Kid {
    let mut c = pc::child_cmd(helper, "child", dir);
    c.env("SARSEN_PROCS_THREADS", threads.to_string())
        .env("SARSEN_PROCS_N", n.to_string());
    Kid::spawn(c, helper)
}

#[test]
fn writers_in_two_processes_exclude_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let env = Arc::new(pc::open(dir.path()));
    let (threads, n) = (3u64, 150u64);
    let mut k = kid("writer_lock_bumper", dir.path(), threads, n);
    k.expect("opened", WAIT).unwrap();
    let hs: Vec<_> = (0..threads)
        .map(|_| {
            let env = env.clone();
            std::thread::spawn(move || bump(&env, n))
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    k.expect("done", Duration::from_secs(120)).unwrap();
    assert_eq!(counter(&env), 2 * threads * n, "lost updates");
    k.close_stdin();
    k.wait(WAIT).unwrap();
}

#[test]
fn a_writer_killed_holding_the_lock_does_not_stop_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let env = Arc::new(pc::open(dir.path()));
    bump(&env, 3);
    for round in 0..3u64 {
        let mut k = kid("writer_lock_holder", dir.path(), 0, 0);
        k.expect("holding", WAIT).unwrap();
        // A writer of this process waits for the child, and goes on once
        // it is killed.
        let e = env.clone();
        let waiter = std::thread::spawn(move || bump(&e, 1));
        std::thread::sleep(Duration::from_millis(100));
        assert!(!waiter.is_finished(), "a writer ran beside the child's");
        k.kill();
        let done = pc::bounded(Duration::from_secs(10), move || waiter.join().is_ok());
        assert_eq!(done, Some(true), "round {round}: the writer did not go on");
        assert_eq!(counter(&env), 4 + round);
        let r = env.read_txn().unwrap();
        assert_eq!(r.get(env.main_db(), b"uncommitted").unwrap(), None);
    }
    assert!(env.check().unwrap().is_ok());
}

#[test]
fn garbage_in_the_writer_word_does_not_stop_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let env = Arc::new(pc::open(dir.path()));
    bump(&env, 1);
    let lock = OpenOptions::new()
        .read(true)
        .write(true)
        .open(dir.path().join("lock.sdb"))
        .unwrap();
    let mut c = [0u8; 8];
    lock.read_exact_at(&mut c, OWNER_COUNTER).unwrap();
    // This environment took the last id handed out.
    let own = u64::from_le_bytes(c) as u32;
    let mut expect = 1;
    for word in [
        own,
        own | 1 << 31,
        own + 1,
        (own + 1) | 1 << 31,
        1 << 31,
        0x7fff_ffff,
        u32::MAX,
        0xdead_beef,
    ] {
        lock.write_all_at(&word.to_le_bytes(), WRITER_WORD).unwrap();
        let e = env.clone();
        let done = pc::bounded(Duration::from_secs(10), move || bump(&e, 1));
        assert!(done.is_some(), "a writer stalled on word {word:#x}");
        expect += 1;
        assert_eq!(counter(&env), expect);
    }
    let mut w = [0u8; 4];
    lock.read_exact_at(&mut w, WRITER_WORD).unwrap();
    assert_eq!(u32::from_le_bytes(w), 0, "the lock is free after a write");
}
