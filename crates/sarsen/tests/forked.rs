//! `fork()` after open (review defect 4): a child forked from a process
//! that has the environment open shares its lock file's open file
//! description, so the OFD writer lock does not exclude it and its reader
//! slots are the parent's. Every use of the inherited `Env` in the child
//! must fail with `Error::Forked`, and dropping the inherited `Env`,
//! `RoTxn` or `RwTxn` in the child must leave the parent's reader slot and
//! writer lock alone.
//!
//! The model: the parent holds a read transaction (or a write transaction)
//! across the fork; after the child has exited, the parent's snapshot must
//! survive many overwrites unchanged, another process must be able to take
//! the writer lock exactly when the parent does not hold it, and every
//! commit (the parent's and the other process's) must be in the database
//! with its own txnid.
//!
//! The child of the raw `fork` only calls the Sarsen methods under test,
//! drops what it inherited, writes one byte to a pipe and `_exit`s. The
//! tests of this file run one at a time (a file-level mutex), so at the
//! fork no other test thread of this binary is inside Sarsen.

mod procs_common;

use std::os::fd::RawFd;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use procs_common::{self as pc, Kid, WAIT};
use sarsen::{Env, Error, RoTxn};

/// Keys the parent rewrites (200-byte values).
const KEYS: u32 = 400;
/// Overwrite commits while the parent's snapshot is held.
const ROUNDS: u64 = 30;
/// Bits of the child's report: which calls returned `Error::Forked`.
const READ_FORKED: u8 = 1;
const WRITE_FORKED: u8 = 2;
const SYNC_FORKED: u8 = 4;
const COMMIT_FORKED: u8 = 8;
/// The child panicked.
const CHILD_PANICKED: u8 = 0x80;

/// One fork test at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Child side of the helper process (not of the raw fork): opens the
/// environment, says `opened`, commits key `helper`, says `committed
/// <txnid>`, and waits for end of input.
#[test]
#[ignore = "helper: run by the fork tests in a child process"]
fn forked_helper() {
    let Some((role, dir)) = pc::role() else {
        return;
    };
    if role == "fork-and-die" {
        fork_and_die(&dir);
    }
    let env = pc::open(&dir);
    pc::say("opened");
    let mut w = env.write_txn().unwrap();
    let t = w.txnid();
    w.put(env.main_db(), b"helper", &t.to_le_bytes()).unwrap();
    w.commit().unwrap();
    pc::say(&format!("committed {t}"));
    while pc::hear().is_some() {}
}

fn helper(dir: &Path) -> Kid {
    Kid::spawn(
        pc::child_cmd("forked_helper", "writer", dir),
        "helper writer",
    )
}

/// A pipe: (read end, write end), both close-on-exec.
fn pipe() -> (RawFd, RawFd) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(r, 0, "pipe2: {}", std::io::Error::last_os_error());
    (fds[0], fds[1])
}

/// The two sides of a fork.
enum Side {
    /// In the child: the pipe's write end.
    Child(RawFd),
    /// In the parent: the child's pid and the pipe's read end.
    Parent(libc::pid_t, RawFd),
}

/// Forks, with a pipe for the child's one-byte report.
fn fork() -> Side {
    let (rd, wr) = pipe();
    // SAFETY: fork has no memory-safety preconditions. The child runs only
    // the Sarsen calls under test and drops, one write and _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        return Side::Child(wr);
    }
    // SAFETY: closing the parent's copy of the write end, which it owns.
    unsafe { libc::close(wr) };
    Side::Parent(pid, rd)
}

/// Runs `f` in the child, catching a panic (the child must never unwind
/// into its copy of the test harness).
fn guarded(f: impl FnOnce() -> u8) -> u8 {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(CHILD_PANICKED)
}

/// In the child: writes the report byte and `_exit`s.
fn child_exit(wr: RawFd, code: u8) -> ! {
    // SAFETY: writing one byte from a live buffer to our pipe, then _exit,
    // which runs no destructors or atexit handlers of the parent's state.
    unsafe {
        libc::write(wr, (&code as *const u8).cast(), 1);
        libc::_exit(0)
    }
}

/// The child's report byte, waiting at most `WAIT`; reaps the child (kills
/// it if it hangs).
fn child_report(pid: libc::pid_t, rd: RawFd) -> Result<u8, String> {
    let mut pfd = libc::pollfd {
        fd: rd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll on one live pollfd.
    let ready = unsafe { libc::poll(&mut pfd, 1, WAIT.as_millis() as i32) };
    let mut code = 0u8;
    // SAFETY: reading at most one byte into a live u8.
    let got = ready == 1 && unsafe { libc::read(rd, (&mut code as *mut u8).cast(), 1) } == 1;
    // SAFETY: closing our read end.
    unsafe { libc::close(rd) };
    let end = Instant::now() + WAIT;
    let mut status = 0;
    loop {
        // SAFETY: waitpid on our own child with a live status word.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            break;
        }
        if Instant::now() > end {
            // SAFETY: kill and reap our own hung child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return Err("the forked child hung (killed after the timeout)".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    if !got {
        return Err(format!(
            "the forked child reported nothing (status {status:#x})"
        ));
    }
    if code & CHILD_PANICKED != 0 {
        return Err("the forked child panicked".into());
    }
    Ok(code)
}

/// Problems with which of the child's calls returned `Error::Forked`.
fn check_bits(code: u8, want: u8, problems: &mut Vec<String>) {
    for (bit, call) in [
        (READ_FORKED, "env.read_txn()"),
        (WRITE_FORKED, "env.write_txn()"),
        (SYNC_FORKED, "env.sync()"),
        (COMMIT_FORKED, "commit of the parent's write transaction"),
    ] {
        if want & bit != 0 && code & bit == 0 {
            problems.push(format!(
                "{call} in the forked child did not return Err(Error::Forked)"
            ));
        }
    }
}

fn forked(r: sarsen::Result<impl Sized>) -> bool {
    matches!(r, Err(Error::Forked))
}

/// Whether this process's reader slot still shows `txnid`.
fn own_slot_listed(env: &Env, txnid: u64) -> bool {
    env.readers()
        .unwrap()
        .iter()
        .any(|x| x.pid == std::process::id() && x.txnid == Some(txnid))
}

/// The parent's overwrites, bounded (a hang fails instead of blocking).
fn overwrite_bounded(env: &Arc<Env>, first: u64, problems: &mut Vec<String>) {
    let e = Arc::clone(env);
    if pc::bounded(WAIT * 2, move || pc::overwrite(&e, KEYS, first, ROUNDS)).is_none() {
        problems.push("the parent's overwrites did not finish (writer lock?)".into());
    }
}

/// Commits `key` in the parent (bounded); its txnid, or a problem.
fn parent_commit(env: &Arc<Env>, key: &'static [u8]) -> Result<u64, String> {
    let e = Arc::clone(env);
    pc::bounded(WAIT, move || {
        let mut w = e.write_txn().map_err(|x| format!("write_txn: {x}"))?;
        let t = w.txnid();
        w.put(e.main_db(), key, b"v").unwrap();
        w.commit().map_err(|x| format!("commit: {x}"))?;
        Ok(t)
    })
    .unwrap_or_else(|| Err("a write transaction in the parent hung".into()))
}

/// Re-reads `r` and compares with `before`.
fn snapshot_unchanged(r: &RoTxn, env: &Env, before: &[(Vec<u8>, Vec<u8>)]) -> Option<String> {
    match pc::contents(r, env.main_db()) {
        Ok(now) => pc::first_diff(&now, before),
        Err(e) => Some(format!("read error: {e}")),
    }
}

#[test]
fn a_forked_child_cannot_use_the_env_and_leaves_the_parents_reader_alone() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let env = Arc::new(pc::open(dir.path()));
    pc::write_round(&env, KEYS, 0);
    let r = env.read_txn().unwrap();
    let before = pc::contents(&r, env.main_db()).unwrap();
    let snap = r.txnid();
    let mut problems = Vec::new();

    let (pid, rd) = match fork() {
        Side::Child(wr) => {
            let mut code = guarded(|| {
                let mut code = 0;
                if forked(env.read_txn()) {
                    code |= READ_FORKED;
                }
                if forked(env.sync()) {
                    code |= SYNC_FORKED;
                }
                match env.write_txn() {
                    Err(Error::Forked) => code |= WRITE_FORKED,
                    // A child that exits inside a write transaction (the old
                    // engine let it begin one on the parent's lock description).
                    Ok(w) => std::mem::forget(w),
                    Err(_) => {}
                }
                code
            });
            // Drop what the child inherited: the parent's RoTxn and Env.
            code |= guarded(move || {
                drop(r);
                0
            });
            code |= guarded(move || {
                drop(env);
                0
            });
            child_exit(wr, code)
        }
        Side::Parent(pid, rd) => (pid, rd),
    };
    match child_report(pid, rd) {
        Ok(code) => check_bits(
            code,
            READ_FORKED | WRITE_FORKED | SYNC_FORKED,
            &mut problems,
        ),
        Err(e) => problems.push(e),
    }
    if !own_slot_listed(&env, snap) {
        problems.push(format!(
            "after the forked child exited, the reader table no longer lists the \
             parent's snapshot {snap}: {:?}",
            env.readers().unwrap()
        ));
    }
    // Another process can write: the child holds no writer lock.
    let mut h = helper(dir.path());
    let helper_txnid = match h.expect("committed", WAIT) {
        Ok(t) => t.parse::<u64>().ok(),
        Err(e) => {
            problems.push(format!(
                "HARM: another process could not take the writer lock after the forked \
                 child exited (the child kept it on the parent's lock description): {e}"
            ));
            h.kill();
            None
        }
    };
    overwrite_bounded(&env, 1, &mut problems);
    if let Some(d) = snapshot_unchanged(&r, &env, &before) {
        problems.push(format!(
            "HARM: the parent's live read transaction (txnid {snap}) changed under it \
             after the forked child exited and {ROUNDS} overwrites: {d}"
        ));
    }
    drop(r);
    match parent_commit(&env, b"parent") {
        Ok(t) => {
            let r = env.read_txn().unwrap();
            let expect = snap + ROUNDS + 1 + u64::from(helper_txnid.is_some());
            if r.txnid() != t || t != expect {
                problems.push(format!(
                    "parent's commit got txnid {t}, newest is {}, expected {expect}",
                    r.txnid()
                ));
            }
            if r.get(env.main_db(), b"parent").unwrap() != Some(&b"v"[..]) {
                problems.push("the parent's own commit is not visible".into());
            }
            if helper_txnid.is_some() && r.get(env.main_db(), b"helper").unwrap().is_none() {
                problems.push("the helper's commit was lost".into());
            }
        }
        Err(e) => problems.push(e),
    }
    let rep = env.check().unwrap();
    if !rep.is_ok() {
        problems.push(format!("check: {:?}", rep.problems));
    }
    pc::report("fork with a read transaction", &problems);
}

#[test]
fn a_forked_child_dropping_the_parents_write_txn_keeps_the_writer_lock() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let env = Arc::new(pc::open(dir.path()));
    pc::write_round(&env, KEYS, 0);
    let mut w = env.write_txn().unwrap();
    let parent_txnid = w.txnid();
    w.put(env.main_db(), b"parent", b"v").unwrap();
    let mut problems = Vec::new();

    let (pid, rd) = match fork() {
        Side::Child(wr) => {
            // The inherited write transaction: committing it must fail
            // with `Forked` (it would write and publish beside the parent),
            // and dropping it then (an abort) must not release the
            // parent's writer lock.
            let mut code = guarded(move || if forked(w.commit()) { COMMIT_FORKED } else { 0 });
            code |= guarded(|| {
                let mut code = 0;
                if forked(env.sync()) {
                    code |= SYNC_FORKED;
                }
                if forked(env.read_txn()) {
                    code |= READ_FORKED;
                }
                code
            });
            code |= guarded(move || {
                drop(env);
                0
            });
            child_exit(wr, code)
        }
        Side::Parent(pid, rd) => (pid, rd),
    };
    match child_report(pid, rd) {
        Ok(code) => check_bits(
            code,
            READ_FORKED | SYNC_FORKED | COMMIT_FORKED,
            &mut problems,
        ),
        Err(e) => problems.push(e),
    }
    // The parent still holds the writer lock: another process must wait.
    let mut h = helper(dir.path());
    if let Err(e) = h.expect("opened", WAIT) {
        problems.push(e);
    }
    let early = h.expect("committed", Duration::from_millis(1500));
    if let Ok(t) = &early {
        problems.push(format!(
            "HARM: another process committed txnid {t} while the parent's write \
             transaction {parent_txnid} was open: the forked child released the \
             parent's writer lock"
        ));
    }
    if let Err(e) = w.commit() {
        problems.push(format!("the parent's commit failed: {e}"));
    }
    match early.or_else(|_| h.expect("committed", WAIT)) {
        Ok(t) if t.parse::<u64>() == Ok(parent_txnid + 1) => {}
        Ok(t) => problems.push(format!(
            "the helper committed txnid {t}, expected {} (after the parent's)",
            parent_txnid + 1
        )),
        Err(e) if e.contains("ended") => {} // already reported above
        Err(e) => problems.push(e),
    }
    let r = env.read_txn().unwrap();
    for k in [&b"parent"[..], b"helper"] {
        if r.get(env.main_db(), k).unwrap().is_none() {
            problems.push(format!("commit of {:?} lost", String::from_utf8_lossy(k)));
        }
    }
    drop(r);
    let rep = env.check().unwrap();
    if !rep.is_ok() {
        problems.push(format!("check: {:?}", rep.problems));
    }
    pc::report("fork with a write transaction", &problems);
}

/// Helper role `fork-and-die`: opens the environment, begins a write
/// transaction (so it holds the writer lock), forks a child that only
/// sleeps, says `grandchild <pid>`, and kills itself. This process is
/// single-threaded at the fork (a re-run test binary with one test thread).
fn fork_and_die(dir: &Path) -> ! {
    let env = pc::open(dir);
    let w = env.write_txn().unwrap();
    // SAFETY: fork in a single-threaded process; the child only sleeps
    // and `_exit`s.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: sleep and _exit are async-signal-safe.
        unsafe {
            libc::sleep(30);
            libc::_exit(0);
        }
    }
    pc::say(&format!("grandchild {pid}"));
    std::mem::forget(w);
    // SAFETY: raising a signal has no memory-safety preconditions.
    unsafe {
        libc::raise(libc::SIGKILL);
    }
    unreachable!("SIGKILL returned");
}

/// A process that dies holding the writer lock, leaving behind a `fork`
/// child that never touched the environment: the child must not keep the
/// dead process's locks alive (it shares their open file description), so
/// another process's write transaction gets the lock at once, not when the
/// child exits 30 s later.
#[test]
fn a_fork_child_does_not_keep_a_dead_parents_writer_lock() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    drop(pc::open(dir.path()));
    let mut h = Kid::spawn(
        pc::child_cmd("forked_helper", "fork-and-die", dir.path()),
        "fork-and-die",
    );
    let line = h.expect("grandchild", WAIT).unwrap();
    let grandchild: i32 = line.split_whitespace().last().unwrap().parse().unwrap();
    let _ = h.wait(WAIT);
    let path = dir.path().to_path_buf();
    let got = pc::bounded(Duration::from_secs(10), move || {
        let env = pc::open(&path);
        env.write_txn().and_then(|w| w.commit()).is_ok()
    });
    // SAFETY: killing the sleeping grandchild this test made; it is reaped
    // by init once its parent (the helper) is gone.
    unsafe {
        libc::kill(grandchild, libc::SIGKILL);
    }
    assert_eq!(
        got,
        Some(true),
        "a write transaction while the dead writer's fork child lives"
    );
}
