//! Several processes on one database: writers and readers in child
//! processes against a model of the committed states, a child killed while
//! it holds the writer lock, and a read-only opener in another process.
//!
//! Each writer commit increments its own counter `c<id>`, adds key
//! `k<id>:<n>` and increments `total`, in one transaction. In every
//! snapshot, `total` must equal the sum of the counters and each writer's
//! keys must number exactly its counter: a torn or lost commit breaks it.

mod common;

use std::io::{BufRead, BufReader};

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sarsen::{Env, EnvOptions, Error, RoTxn};

const WRITERS: u64 = 3;
const COMMITS: u64 = 60;

fn open(dir: &Path, read_only: bool) -> sarsen::Result<Env> {
    // SAFETY: the test's own temporary directory, shared only by Sarsen
    // environments of this test's processes.
    unsafe { EnvOptions::new().read_only(read_only).open(dir) }
}

fn u64_at(r: &RoTxn, key: &str) -> u64 {
    r.get(r.open_db(None).unwrap().unwrap(), key.as_bytes())
        .unwrap()
        .map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap()))
}

/// Checks the invariant of one snapshot; returns the total.
fn check_snapshot(r: &RoTxn) -> u64 {
    let db = r.open_db(None).unwrap().unwrap();
    let mut sum = 0;
    for id in 0..WRITERS {
        let n = u64_at(r, &format!("c{id}"));
        let prefix = format!("k{id}:");
        let keys = r
            .iter(db)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().0.starts_with(prefix.as_bytes()))
            .count() as u64;
        assert_eq!(
            keys,
            n,
            "writer {id}: keys against counter at {}",
            r.txnid()
        );
        sum += n;
    }
    let total = u64_at(r, "total");
    assert_eq!(total, sum, "total against counters at txnid {}", r.txnid());
    total
}

/// The child side, chosen by `SARSEN_MP_MODE`.
#[test]
#[ignore = "helper: run by the multi-process tests in a child process"]
fn multi_process_child() {
    let (Some(mode), Some(dir)) = (
        std::env::var("SARSEN_MP_MODE").ok(),
        std::env::var_os("SARSEN_MP_DIR"),
    ) else {
        return;
    };
    let dir = Path::new(&dir);
    let id: u64 = std::env::var("SARSEN_MP_ID").map_or(0, |s| s.parse().unwrap());
    match mode.as_str() {
        "writer" => writer(dir, id),
        "reader" => {
            let env = open(dir, false).unwrap();
            let mut seen = 0;
            loop {
                let total = check_snapshot(&env.read_txn().unwrap());
                seen += 1;
                if total == WRITERS * COMMITS {
                    break;
                }
            }
            println!("snapshots {seen}");
        }
        "lockholder" => {
            let env = open(dir, false).unwrap();
            let mut w = env.write_txn().unwrap();
            w.put(env.main_db(), b"uncommitted", b"x").unwrap();
            println!("locked");
            std::thread::sleep(Duration::from_secs(600));
        }
        "readonly" => {
            let env = open(dir, true).unwrap();
            let r = env.read_txn().unwrap();
            println!("readonly txnid {} total {}", r.txnid(), check_snapshot(&r));
            let refused = matches!(env.write_txn(), Err(Error::ReadOnly));
            assert!(refused, "a read-only environment began a write");
            println!("write refused");
        }
        "try_open" => match open(dir, false) {
            Ok(_) => println!("open ok"),
            Err(Error::Busy) => println!("open busy"),
            Err(e) => panic!("open failed: {e}"),
        },
        other => panic!("unknown mode {other}"),
    }
}

/// A writer child: `COMMITS` transactions, each acknowledged on stdout.
fn writer(dir: &Path, id: u64) {
    let env = open(dir, false).unwrap();
    let db = env.main_db();
    for n in 0..COMMITS {
        let mut w = env.write_txn().unwrap();
        let get = |w: &sarsen::RwTxn, k: &str| {
            w.get(db, k.as_bytes())
                .unwrap()
                .map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap()))
        };
        let c = get(&w, &format!("c{id}"));
        assert_eq!(c, n, "writer {id} sees its own commits");
        let total = get(&w, "total");
        w.put(db, format!("c{id}").as_bytes(), &(c + 1).to_le_bytes())
            .unwrap();
        w.put(db, format!("k{id}:{n:04}").as_bytes(), &[id as u8; 100])
            .unwrap();
        w.put(db, b"total", &(total + 1).to_le_bytes()).unwrap();
        let txnid = w.txnid();
        w.commit().unwrap();
        println!("commit {txnid} {id} {n}");
    }
}

fn spawn(dir: &Path, mode: &str, id: u64) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["multi_process_child", "--exact", "--ignored", "--nocapture"])
        .env("SARSEN_MP_MODE", mode)
        .env("SARSEN_MP_DIR", dir)
        .env("SARSEN_MP_ID", id.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for a child; its stdout lines, or a panic with its stderr.
fn finish(child: Child) -> Vec<String> {
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "child failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn writers_and_readers_in_several_processes_agree_with_the_model() {
    let dir = tempfile::tempdir().unwrap();
    drop(open(dir.path(), false).unwrap());
    let readers: Vec<Child> = (0..2).map(|i| spawn(dir.path(), "reader", i)).collect();
    let writers: Vec<Child> = (0..WRITERS)
        .map(|i| spawn(dir.path(), "writer", i))
        .collect();
    let mut txnids = Vec::new();
    for w in writers {
        for line in finish(w) {
            if let Some(rest) = line.strip_prefix("commit ") {
                txnids.push(rest.split(' ').next().unwrap().parse::<u64>().unwrap());
            }
        }
    }
    for r in readers {
        assert!(finish(r).iter().any(|l| l.starts_with("snapshots ")));
    }
    // Every acknowledged commit has its own txnid: the writer lock
    // serialised the processes.
    txnids.sort_unstable();
    txnids.dedup();
    assert_eq!(txnids.len() as u64, WRITERS * COMMITS);
    let env = open(dir.path(), false).unwrap();
    let r = env.read_txn().unwrap();
    assert_eq!(check_snapshot(&r), WRITERS * COMMITS);
    assert_eq!(r.txnid(), *txnids.last().unwrap());
    common::assert_check(&env, "after the writers");
}

#[test]
fn a_writer_killed_holding_the_lock_lets_the_next_one_in() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path(), false).unwrap();
    let mut child = spawn(dir.path(), "lockholder", 0);
    // The test harness prints its own lines first.
    let out = BufReader::new(child.stdout.take().unwrap());
    let locked = out.lines().map_while(Result::ok).any(|l| l == "locked");
    if !locked {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the child did not take the writer lock");
    }
    let before = env.read_txn().unwrap().txnid();
    std::thread::scope(|s| {
        // The waiter reports when it got the lock. (Timing its wait from
        // inside the thread was flaky: under load the thread can start
        // late in the 300 ms below.)
        let waiter = s.spawn(|| {
            let mut w = env.write_txn().unwrap();
            let locked_at = Instant::now();
            w.put(env.main_db(), b"after", b"y").unwrap();
            w.commit().unwrap();
            locked_at
        });
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            !waiter.is_finished(),
            "the lock holder is alive: the writer waits"
        );
        let killed_at = Instant::now();
        child.kill().unwrap();
        child.wait().unwrap();
        let locked_at = waiter.join().unwrap();
        assert!(
            locked_at >= killed_at,
            "the writer got in only once the holder died"
        );
    });
    let r = env.read_txn().unwrap();
    assert_eq!(r.txnid(), before + 1);
    assert_eq!(r.get(env.main_db(), b"uncommitted").unwrap(), None);
    assert_eq!(r.get(env.main_db(), b"after").unwrap(), Some(&b"y"[..]));
    drop(r);
    common::assert_check(&env, "after the killed writer");
}

#[test]
fn a_read_only_process_reads_committed_data_and_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path(), false).unwrap();
    let db = env.main_db();
    let mut w = env.write_txn().unwrap();
    w.put(db, b"c0", &5u64.to_le_bytes()).unwrap();
    for n in 0..5 {
        w.put(db, format!("k0:{n:04}").as_bytes(), b"v").unwrap();
    }
    w.put(db, b"total", &5u64.to_le_bytes()).unwrap();
    w.commit().unwrap();
    let committed = env.read_txn().unwrap().txnid();
    // A write transaction is open (uncommitted changes) while it reads.
    let mut w = env.write_txn().unwrap();
    w.put(db, b"total", &99u64.to_le_bytes()).unwrap();
    let lines = finish(spawn(dir.path(), "readonly", 0));
    let want = [
        format!("readonly txnid {committed} total 5"),
        "write refused".into(),
    ];
    let said: Vec<&String> = lines.iter().filter(|l| want.contains(l)).collect();
    assert_eq!(said, [&want[0], &want[1]], "{lines:?}");
    w.abort();
}

fn exclusive(dir: &Path) -> sarsen::Result<Env> {
    // SAFETY: as in `open`.
    unsafe { EnvOptions::new().exclusive(true).open(dir) }
}

/// What a child process got when it tried to open the environment.
fn child_open(dir: &Path) -> String {
    let lines = finish(spawn(dir, "try_open", 0));
    lines.into_iter().find(|l| l.starts_with("open ")).unwrap()
}

#[test]
fn an_exclusive_open_keeps_others_out_and_needs_the_environment_alone() {
    let dir = tempfile::tempdir().unwrap();
    let shared = open(dir.path(), false).unwrap();
    assert!(matches!(exclusive(dir.path()), Err(Error::Busy)));
    drop(shared);
    let ex = exclusive(dir.path()).unwrap();
    let mut w = ex.write_txn().unwrap();
    w.put(ex.main_db(), b"k", b"v").unwrap();
    w.commit().unwrap();
    assert_eq!(child_open(dir.path()), "open busy");
    assert!(matches!(open(dir.path(), false), Err(Error::Busy)));
    assert!(matches!(open(dir.path(), true), Err(Error::Busy)));
    drop(ex);
    assert_eq!(child_open(dir.path()), "open ok");
    let env = open(dir.path(), false).unwrap();
    let r = env.read_txn().unwrap();
    assert_eq!(r.get(env.main_db(), b"k").unwrap(), Some(&b"v"[..]));
}
