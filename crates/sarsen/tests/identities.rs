//! Processes with different identities on one environment: a reader
//! running as another user, and readers that have the same pid (1) in
//! different PID namespaces.
//!
//! The model is a writer (this process) that commits overwrites of the same
//! keys, so every page freed by a commit is reused by a later one unless a
//! live reader's snapshot pins it, and readers in child processes that keep
//! one read transaction open and compare what it reads before and after the
//! overwrites. A snapshot that changes under a live read transaction is the
//! harm every test here looks for; the errors and reader-table listings are
//! checked as well.
//!
//! * Another user (`nobody`, uid 65534) cannot open the lock file (created
//!   0644) for writing: its read-only open must fail with `Error::Io`
//!   rather than fall back to a private reader table that writers cannot
//!   see (review defect 2). With `no_lock(true)` it reads through a private
//!   table. With the lock file world-writable, its snapshot is protected.
//! * Two pid-1 processes (separate PID namespaces, `unshare --pid --fork`):
//!   one dropping its `Env` must not free the other's reader slots, and a
//!   killed one's slot is reclaimed although the other pid 1 lives (review
//!   defect 3).
//!
//! Needs root (setuid, namespaces); each test prints why it skips otherwise.

mod procs_common;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use procs_common::{self as pc, Kid, WAIT};
use sarsen::{Env, EnvOptions, Error};

/// Keys the writer rewrites (200-byte values: ~15 leaf pages).
const KEYS: u32 = 400;
/// Overwrite commits while a reader holds its snapshot.
const ROUNDS: u64 = 30;
/// The uid and gid of `nobody`.
const NOBODY: u32 = 65534;

/// FNV-1a digest of every entry, to compare snapshots across processes.
fn digest(entries: &[(Vec<u8>, Vec<u8>)]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (k, v) in entries {
        for b in k.iter().chain(v).chain(&[0xff]) {
            h = (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    h
}

/// `(txnid, entries, digest)` of the newest commit as `env` reads it.
fn summary(env: &Env) -> (u64, usize, u64) {
    let r = env.read_txn().unwrap();
    let c = pc::contents(&r, env.main_db()).unwrap();
    (r.txnid(), c.len(), digest(&c))
}

/// This process's pid as seen from the outermost PID namespace (the
/// first field of `NSpid`; `/proc` is the parent's mount here).
fn outer_pid() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))
        .and_then(|f| f.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(std::process::id)
}

/// Child side. Opens the environment (read-only / no-lock per the
/// parameters), begins one read transaction, says `ready <txnid> <entries>
/// <digest> <pid> <outer pid>`, then obeys: `check` re-reads the snapshot
/// (`same` / `changed ...`), `drop` ends the transaction and drops the
/// `Env` (`dropped`). End of input: exit.
#[test]
#[ignore = "helper: run by the identity tests in a child process"]
fn identities_child() {
    let Some((_, dir)) = pc::role() else { return };
    let o = EnvOptions::new()
        .read_only(pc::param("RO") == 1)
        .no_lock(pc::param("NOLOCK") == 1);
    let env = match pc::open_with(&dir, o) {
        Ok(env) => env,
        Err(e @ Error::Io { .. }) => return pc::say(&format!("open err io {e}")),
        Err(e) => return pc::say(&format!("open err other {e:?}")),
    };
    pc::say("open ok");
    let r = env.read_txn().unwrap();
    let first = pc::contents(&r, env.main_db()).unwrap();
    pc::say(&format!(
        "ready {} {} {} {} {}",
        r.txnid(),
        first.len(),
        digest(&first),
        std::process::id(),
        outer_pid()
    ));
    while let Some(cmd) = pc::hear() {
        match cmd.as_str() {
            "check" => match pc::contents(&r, env.main_db()) {
                Ok(now) => match pc::first_diff(&now, &first) {
                    None => pc::say("same"),
                    Some(d) => pc::say(&format!("changed {d}")),
                },
                Err(e) => pc::say(&format!("changed (read error: {e})")),
            },
            "drop" => {
                drop(r);
                drop(env);
                pc::say("dropped");
                while pc::hear().is_some() {}
                return;
            }
            other => pc::say(&format!("error: unexpected command {other}")),
        }
    }
}

/// A reader child with the given options.
fn reader_cmd(cmd: Command, ro: bool, no_lock: bool) -> Command {
    let mut c = cmd;
    c.env("SARSEN_PROCS_RO", u8::from(ro).to_string())
        .env("SARSEN_PROCS_NOLOCK", u8::from(no_lock).to_string());
    c
}

/// A reader child running as `nobody`. It runs a copy of this test
/// binary placed in `dir` (which `nobody` may read and search): the build's
/// own directory may be closed to other users (a clone in a `mktemp -d`).
fn nobody_reader(dir: &Path, no_lock: bool) -> Kid {
    let exe = dir.join("reader-exe");
    if !exe.exists() {
        std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut c = Command::new(&exe);
    pc::child_args(&mut c, "identities_child", "reader", dir);
    let mut c = reader_cmd(c, true, no_lock);
    c.uid(NOBODY).gid(NOBODY);
    Kid::spawn(c, "nobody reader")
}

/// What a `ready` line says.
struct Ready {
    txnid: u64,
    entries: usize,
    digest: u64,
    pid: u32,
    outer: u32,
}

fn ready(kid: &mut Kid) -> Result<Ready, String> {
    let l = kid.expect("ready", WAIT)?;
    let f: Vec<u64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
    Ok(Ready {
        txnid: f[0],
        entries: f[1] as usize,
        digest: f[2],
        pid: f[3] as u32,
        outer: f[4] as u32,
    })
}

/// A database in a fresh directory that `nobody` may read, with one
/// commit of the key set.
fn shared_dir() -> (tempfile::TempDir, Env) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let env = pc::open(dir.path());
    pc::write_round(&env, KEYS, 0);
    (dir, env)
}

/// Holds `kid`'s snapshot while this process overwrites every key
/// `ROUNDS` times, then asks it to re-read. Pushes the harm if it changed.
fn overwrite_under(env: &Env, kid: &mut Kid, first_round: u64, problems: &mut Vec<String>) {
    pc::overwrite(env, KEYS, first_round, ROUNDS);
    kid.send("check");
    match kid.expect("", WAIT) {
        Ok(l) if l == "same" => {}
        Ok(l) => problems.push(format!(
            "HARM: {}'s live read transaction saw its snapshot change while this \
             process committed {ROUNDS} overwrites: {l}",
            kid.name
        )),
        Err(e) => problems.push(e),
    }
}

#[test]
fn a_read_only_open_as_another_user_needs_the_lock_file() {
    if !pc::is_root() {
        eprintln!("skipped: needs root to run a child as uid {NOBODY}");
        return;
    }
    let (dir, env) = shared_dir();
    let lock = dir.path().join("lock.sdb");
    let mode = std::fs::metadata(&lock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644, "the lock file is created 0644");
    let mut problems = Vec::new();

    // 1. Without write access to the lock file: an error, not a private table.
    let mut kid = nobody_reader(dir.path(), false);
    match kid.expect("open", WAIT) {
        Ok(l) if l.starts_with("err io") => {}
        Ok(l) if l == "ok" => {
            problems.push(
                "a read-only open as another user succeeded without write access to \
                 the lock file (expected Error::Io): its readers are invisible to writers"
                    .into(),
            );
            match ready(&mut kid) {
                Ok(_) => overwrite_under(&env, &mut kid, 1, &mut problems),
                Err(e) => problems.push(e),
            }
        }
        Ok(l) => problems.push(format!("open as another user: {l} (expected err io)")),
        Err(e) => problems.push(e),
    }
    drop(kid);

    // 2. With no_lock (the caller promises no writer): a private table.
    let want = summary(&env);
    let mut kid = nobody_reader(dir.path(), true);
    match kid.expect("open", WAIT).and_then(|l| {
        if l == "ok" {
            ready(&mut kid)
        } else {
            Err(format!("no_lock open as another user: {l}"))
        }
    }) {
        Ok(r) if (r.txnid, r.entries, r.digest) == want => {}
        Ok(r) => problems.push(format!(
            "no_lock reader read (txnid {}, {} entries, digest {:x}), committed is {want:?}",
            r.txnid, r.entries, r.digest
        )),
        Err(e) => problems.push(e),
    }
    pc::report("read-only open as another user", &problems);
}

#[test]
fn another_users_reader_through_a_world_writable_lock_file_keeps_its_snapshot() {
    if !pc::is_root() {
        eprintln!("skipped: needs root to run a child as uid {NOBODY}");
        return;
    }
    let (dir, env) = shared_dir();
    let lock = dir.path().join("lock.sdb");
    std::fs::set_permissions(&lock, std::fs::Permissions::from_mode(0o666)).unwrap();
    let want = summary(&env);
    let mut problems = Vec::new();
    let mut kid = nobody_reader(dir.path(), false);
    match kid.expect("open", WAIT).and_then(|l| {
        if l == "ok" {
            ready(&mut kid)
        } else {
            Err(format!("open as another user with a 0666 lock file: {l}"))
        }
    }) {
        Ok(r) => {
            if (r.txnid, r.entries, r.digest) != want {
                problems.push(format!(
                    "the other user's reader began at txnid {}, committed is {want:?}",
                    r.txnid
                ));
            }
            let listed = env.readers().unwrap();
            if !listed
                .iter()
                .any(|x| x.pid == kid.id() && x.txnid == Some(r.txnid))
            {
                problems.push(format!(
                    "the reader table does not list the other user's snapshot \
                     (pid {}, txnid {}): {listed:?}",
                    kid.id(),
                    r.txnid
                ));
            }
            overwrite_under(&env, &mut kid, 1, &mut problems);
        }
        Err(e) => problems.push(e),
    }
    pc::report("other user's reader", &problems);
}

/// Whether `unshare --pid --fork` works here.
fn namespaces_work() -> bool {
    Command::new("unshare")
        .args(["--pid", "--fork", "--kill-child", "true"])
        .status()
        .is_ok_and(|s| s.success())
}

/// A read-write reader child that is pid 1 of a new PID namespace. Killing
/// the `unshare` wrapper kills it too (`--kill-child`).
fn pid1_reader(dir: &Path, name: &str) -> Result<(Kid, Ready), String> {
    let mut c = Command::new("unshare");
    c.args(["--pid", "--fork", "--kill-child"])
        .arg(std::env::current_exe().unwrap());
    pc::child_args(&mut c, "identities_child", "reader", dir);
    let mut kid = Kid::spawn(reader_cmd(c, false, false), name);
    kid.expect("open", WAIT).and_then(|l| match l.as_str() {
        "ok" => Ok(()),
        other => Err(format!("{name}: open {other}")),
    })?;
    let r = ready(&mut kid)?;
    if r.pid != 1 {
        return Err(format!("{name} is pid {}, not 1", r.pid));
    }
    Ok((kid, r))
}

/// Whether the reader table lists a snapshot at `txnid`.
fn listed(env: &Env, txnid: u64) -> bool {
    env.readers()
        .unwrap()
        .iter()
        .any(|x| x.txnid == Some(txnid))
}

#[test]
fn a_pid1_env_dropping_leaves_another_pid1_readers_snapshot_alone() {
    if !namespaces_work() {
        eprintln!("skipped: cannot create a PID namespace here (unshare --pid --fork failed)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let env = pc::open(dir.path());
    pc::write_round(&env, KEYS, 0);
    let mut problems = Vec::new();
    let (mut x, rx) = pid1_reader(dir.path(), "pid-1 reader X").unwrap();
    let (mut y, ry) = pid1_reader(dir.path(), "pid-1 reader Y").unwrap();
    assert_eq!(rx.txnid, ry.txnid);
    // X closes its environment and exits; Y's read transaction lives on.
    x.send("drop");
    if let Err(e) = x.expect("dropped", WAIT) {
        problems.push(e);
    }
    x.close_stdin();
    if let Err(e) = x.wait(WAIT) {
        problems.push(e);
    }
    if !listed(&env, ry.txnid) {
        problems.push(format!(
            "after X (pid 1) dropped its Env the reader table no longer lists Y's \
             snapshot {} (Y is pid 1 too, alive, in another namespace)",
            ry.txnid
        ));
    }
    overwrite_under(&env, &mut y, 1, &mut problems);
    pc::report("pid-1 drop", &problems);
}

#[test]
fn a_killed_pid1_readers_slot_is_reclaimed_while_another_pid1_lives() {
    if !namespaces_work() {
        eprintln!("skipped: cannot create a PID namespace here (unshare --pid --fork failed)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let env = pc::open(dir.path());
    pc::write_round(&env, KEYS, 0);
    let mut problems = Vec::new();
    let (mut x, rx) = pid1_reader(dir.path(), "pid-1 reader X").unwrap();
    pc::write_round(&env, KEYS, 1);
    let (mut y, ry) = pid1_reader(dir.path(), "pid-1 reader Y").unwrap();
    assert!(rx.txnid < ry.txnid, "X and Y read different commits");
    assert!(listed(&env, rx.txnid) && listed(&env, ry.txnid));
    // SIGKILL to X itself (its pid outside the namespace), then reap the wrapper.
    // SAFETY: kill has no memory-safety preconditions; the pid is our
    // grandchild, alive until its `unshare` parent is reaped below.
    assert_eq!(unsafe { libc::kill(rx.outer as i32, libc::SIGKILL) }, 0);
    if let Err(e) = x.wait(WAIT) {
        problems.push(e);
    }
    let freed = env.reader_check().unwrap();
    if freed < 1 {
        problems.push(format!(
            "reader_check freed {freed} slots after pid-1 reader X was killed \
             (another pid 1, Y, still has the environment open)"
        ));
    }
    if listed(&env, rx.txnid) {
        problems.push(format!(
            "the killed reader's snapshot {} is still listed: {:?}",
            rx.txnid,
            env.readers().unwrap()
        ));
    }
    if !listed(&env, ry.txnid) {
        problems.push(format!(
            "the live pid-1 reader Y's snapshot {} was freed with the dead one's",
            ry.txnid
        ));
    }
    overwrite_under(&env, &mut y, 2, &mut problems);
    pc::report("killed pid-1 reader", &problems);
}
