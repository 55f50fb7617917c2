//! Reader slots of a process killed with SIGKILL while it held read
//! transactions: `reader_check` frees them, a write transaction frees them
//! by itself when the dead reader is the oldest (so pages it pinned are
//! reused), and a full reader table makes room by freeing them.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use sarsen::{Env, EnvOptions};

/// Number of read transactions the child holds (one per thread).
const CHILD_READERS: usize = 2;

fn open(dir: &Path) -> Env {
    // SAFETY: the test's own temporary directory; only Sarsen (this process
    // and its child) maps it.
    unsafe { EnvOptions::new().max_readers(3).open(dir) }.unwrap()
}

/// Child side: holds `CHILD_READERS` read transactions, says "ready", waits
/// to be killed.
#[test]
#[ignore = "helper: run by the stale-reader tests in a child process"]
fn stale_reader_child() {
    let Some(dir) = std::env::var_os("SARSEN_STALE_DIR") else {
        return;
    };
    let env = open(Path::new(&dir));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        for _ in 0..CHILD_READERS {
            let tx = tx.clone();
            let env = &env;
            s.spawn(move || {
                let r = env.read_txn().unwrap();
                tx.send(r.txnid()).unwrap();
                std::thread::sleep(std::time::Duration::from_secs(600));
                drop(r);
            });
        }
        for _ in 0..CHILD_READERS {
            rx.recv().unwrap();
        }
        println!("ready");
    });
}

/// Starts the child on `dir` and waits until its readers are in place.
fn spawn_child(dir: &Path) -> Child {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["stale_reader_child", "--exact", "--ignored", "--nocapture"])
        .env("SARSEN_STALE_DIR", dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    let ready = out
        .lines()
        .map_while(Result::ok)
        .any(|l| l.trim() == "ready");
    if !ready {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the child ended before its readers were ready");
    }
    child
}

fn kill(mut child: Child) {
    child.kill().unwrap(); // SIGKILL: no destructor runs in the child
    child.wait().unwrap();
}

fn fill(env: &Env, round: u8) {
    let mut w = env.write_txn().unwrap();
    for i in 0..2000u32 {
        w.put(env.main_db(), &i.to_be_bytes(), &[round; 100])
            .unwrap();
    }
    w.commit().unwrap();
}

#[test]
fn reader_check_frees_the_slots_of_a_killed_process() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path());
    fill(&env, 0);
    let child = spawn_child(dir.path());
    // The child's slots are live: nothing to free.
    assert_eq!(env.reader_check().unwrap(), 0);
    kill(child);
    assert_eq!(env.reader_check().unwrap(), CHILD_READERS as u32);
    assert_eq!(env.reader_check().unwrap(), 0);
    drop(env.read_txn().unwrap());
    assert_eq!(
        env.info().unwrap().readers_used,
        1,
        "only this process's slot"
    );
}

#[test]
fn a_write_transaction_frees_a_dead_oldest_reader_and_reuses_its_pages() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path());
    fill(&env, 0);
    let child = spawn_child(dir.path());
    kill(child);
    // Every round rewrites every value. With the dead reader's snapshot
    // pinned, each round would need fresh pages; freed, the file stops
    // growing after the first rounds.
    for round in 1..4 {
        fill(&env, round);
    }
    let settled = env.info().unwrap().next_pgno;
    for round in 4..30 {
        fill(&env, round);
    }
    assert_eq!(env.info().unwrap().next_pgno, settled, "pages are reused");
    assert_eq!(
        env.reader_check().unwrap(),
        0,
        "already freed by the writer"
    );
}

#[test]
fn a_full_reader_table_makes_room_by_freeing_dead_slots() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path());
    fill(&env, 0);
    let child = spawn_child(dir.path());
    // 3 slots: the child holds 2; this thread takes the third.
    let r1 = env.read_txn().unwrap();
    let r2 = std::thread::scope(|s| s.spawn(|| env.read_txn().map(|r| r.txnid())).join());
    assert!(
        matches!(r2.unwrap(), Err(sarsen::Error::ReadersFull { max: 3 })),
        "the table is full while the child lives"
    );
    kill(child);
    let t = std::thread::scope(|s| s.spawn(|| env.read_txn().map(|r| r.txnid())).join());
    assert_eq!(t.unwrap().unwrap(), r1.txnid());
}

#[test]
fn the_slow_reader_handler_is_told_once_and_may_end_the_reader() {
    use sarsen::SlowReaderAction;
    use std::sync::{Arc, Mutex};

    let dir = tempfile::tempdir().unwrap();
    {
        let env = open(dir.path());
        fill(&env, 0);
    }
    let child = Arc::new(Mutex::new(None::<Child>));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (c2, s2) = (Arc::clone(&child), Arc::clone(&seen));
    // SAFETY: as in `open`.
    let env = unsafe {
        EnvOptions::new()
            .max_readers(3)
            .slow_reader_handler(4, move |r| {
                s2.lock().unwrap().push(*r);
                // End the reader's process, as an operator's handler might.
                if let Some(c) = c2.lock().unwrap().take() {
                    kill(c);
                }
                SlowReaderAction::Retry
            })
            .open(dir.path())
    }
    .unwrap();
    let kid = spawn_child(dir.path());
    let kid_pid = kid.id();
    *child.lock().unwrap() = Some(kid);
    let snapshot = env.read_txn().unwrap().txnid();
    for round in 1..=10 {
        fill(&env, round);
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "one report per snapshot: {seen:?}");
    let r = seen[0];
    assert_eq!((r.pid, r.txnid, r.lag), (kid_pid, snapshot, 4));
    assert!(r.pinned_pages > 0, "four rewrites freed pages: {r:?}");
    // Retry freed the dead process's slots at once.
    assert!(env.readers().unwrap().iter().all(|x| x.pid != kid_pid));
    // With the reader gone, rewrites reuse pages.
    let settled = env.info().unwrap().next_pgno;
    for round in 11..20 {
        fill(&env, round);
    }
    // (The end may even move back: free pages ending the file are given back.)
    let now = env.info().unwrap().next_pgno;
    assert!(
        now <= settled,
        "rewrites grew the file: {settled} -> {now} pages"
    );
}
