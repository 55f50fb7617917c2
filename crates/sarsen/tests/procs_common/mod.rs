//! Helpers shared by the process-identity suites (`identities.rs`,
//! `forked.rs`, `publish_kill.rs`, `slot_race.rs`, `lock_garbage.rs`):
//! child processes that are this test binary re-executed with a role in
//! `SARSEN_PROCS_ROLE`, a line protocol on their stdin and stdout (lines of
//! the protocol start with `@@ `, so the harness's own lines are skipped),
//! bounded waits, and the snapshot checks every suite uses.
//!
//! Every wait here has a timeout: a regression that hangs an engine call
//! fails the test instead of hanging CI.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sarsen::{Env, EnvOptions, RoTxn};

/// Prefix of protocol lines.
pub const TAG: &str = "@@ ";
/// Default bound of a wait for a child's answer.
pub const WAIT: Duration = Duration::from_secs(20);

/// The role and directory this process was started with, if it is a child.
pub fn role() -> Option<(String, PathBuf)> {
    let role = std::env::var("SARSEN_PROCS_ROLE").ok()?;
    let dir = std::env::var_os("SARSEN_PROCS_DIR")?;
    Some((role, PathBuf::from(dir)))
}

/// A numeric parameter given to a child.
pub fn param(name: &str) -> u64 {
    std::env::var(format!("SARSEN_PROCS_{name}"))
        .unwrap_or_else(|_| panic!("child parameter {name} missing"))
        .parse()
        .unwrap()
}

/// Prints one protocol line (flushed at once).
pub fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{TAG}{line}").unwrap();
    out.flush().unwrap();
}

/// Blocks until the parent sends a line; `None` when stdin closes.
pub fn hear() -> Option<String> {
    let mut s = String::new();
    match std::io::stdin().read_line(&mut s) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(s.trim().to_owned()),
    }
}

/// The command that re-runs this test binary as child `helper` (an
/// ignored test of the same file) in `role` on `dir`.
pub fn child_cmd(helper: &str, role: &str, dir: &Path) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    child_args(&mut c, helper, role, dir);
    c
}

/// Adds the test-harness arguments and role variables of a child to `c`.
pub fn child_args(c: &mut Command, helper: &str, role: &str, dir: &Path) {
    c.args([helper, "--exact", "--ignored", "--nocapture"])
        .args(["--test-threads", "1"])
        .env("SARSEN_PROCS_ROLE", role)
        .env("SARSEN_PROCS_DIR", dir);
}

/// A running child process and its line channel.
pub struct Kid {
    pub name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
}

impl Kid {
    /// Starts `cmd` with piped stdin, stdout and stderr. A spawn that
    /// finds its executable busy is tried again: a test that has just
    /// written a copy of its binary (`identities.rs`) races every thread
    /// of the harness that forks, whose child holds the copy's write
    /// descriptor until it execs (ETXTBSY, the known race of exec after
    /// write in a threaded process).
    pub fn spawn(mut cmd: Command, name: &str) -> Kid {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut tries = 0;
        let mut child = loop {
            match cmd.spawn() {
                Ok(c) => break c,
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 100 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => panic!("spawning {name}: {e}"),
            }
        };
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in out.lines().map_while(Result::ok) {
                // The harness may print `test name ... ` on the same line.
                if let Some(at) = l.find(TAG) {
                    if tx.send(l[at + TAG.len()..].to_owned()).is_err() {
                        break;
                    }
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let (err, sink) = (child.stderr.take().unwrap(), Arc::clone(&stderr));
        std::thread::spawn(move || {
            for l in BufReader::new(err).lines().map_while(Result::ok) {
                let mut s = sink.lock().unwrap();
                s.push_str(&l);
                s.push('\n');
            }
        });
        Kid {
            name: name.to_owned(),
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
        }
    }

    /// The child's stderr so far (for failure messages).
    pub fn stderr(&self) -> String {
        let s = self.stderr.lock().unwrap().clone();
        let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(12)..].join("\n")
    }

    /// The next protocol line, or an error describing why none came.
    pub fn next(&mut self, timeout: Duration) -> Result<String, String> {
        match self.lines.recv_timeout(timeout) {
            Ok(l) => Ok(l),
            Err(RecvTimeoutError::Timeout) => Err(format!(
                "{}: no answer within {timeout:?} (hung?); stderr:\n{}",
                self.name,
                self.stderr()
            )),
            Err(RecvTimeoutError::Disconnected) => {
                std::thread::sleep(Duration::from_millis(100));
                Err(format!(
                    "{}: ended ({:?}) without answering; stderr:\n{}",
                    self.name,
                    self.child.try_wait(),
                    self.stderr()
                ))
            }
        }
    }

    /// Every protocol line received and not yet read.
    pub fn drain(&mut self) -> Vec<String> {
        self.lines.try_iter().collect()
    }

    /// Waits for a line starting with `word`; returns the rest of it.
    pub fn expect(&mut self, word: &str, timeout: Duration) -> Result<String, String> {
        let end = Instant::now() + timeout;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let l = self.next(left)?;
            if let Some(rest) = l.strip_prefix(word) {
                return Ok(rest.trim().to_owned());
            }
            if l.starts_with("error") {
                return Err(format!("{}: {l}", self.name));
            }
        }
    }

    /// Sends one line to the child's stdin.
    pub fn send(&mut self, line: &str) {
        if let Some(s) = &mut self.stdin {
            let _ = writeln!(s, "{line}");
            let _ = s.flush();
        }
    }

    /// Closes the child's stdin (it sees end of input).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// OS pid of the child (for a namespaced child: of the `unshare` wrapper).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the child to end; kills it after `timeout`.
    pub fn wait(&mut self, timeout: Duration) -> Result<ExitStatus, String> {
        let end = Instant::now() + timeout;
        loop {
            if let Some(s) = self.child.try_wait().map_err(|e| e.to_string())? {
                return Ok(s);
            }
            if Instant::now() >= end {
                self.kill();
                return Err(format!(
                    "{}: did not end within {timeout:?}; killed. stderr:\n{}",
                    self.name,
                    self.stderr()
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGKILL and reap.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Kid {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.kill();
        }
    }
}

/// Runs `f` on a detached thread and waits at most `timeout` for it. `None`
/// if it did not finish: the thread is left behind (a hung engine call
/// cannot be cancelled), and the caller fails the test.
pub fn bounded<T: Send + 'static>(
    timeout: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(timeout).ok()
}

/// Opens `dir` with `o`.
pub fn open_with(dir: &Path, o: EnvOptions) -> sarsen::Result<Env> {
    // SAFETY: the test's own temporary directory; only Sarsen environments
    // of this test's processes map its files.
    unsafe { o.open(dir) }
}

/// Opens `dir` read-write with default options, panicking on error.
pub fn open(dir: &Path) -> Env {
    open_with(dir, EnvOptions::new()).unwrap_or_else(|e| panic!("open {}: {e:?}", dir.display()))
}

/// Key `i` of the shared key set.
pub fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// The value of key `i` written in overwrite round `round`: 200 bytes, so
/// a few hundred keys span many pages and every round rewrites all of them.
pub fn value(i: u32, round: u64) -> Vec<u8> {
    let mut v = format!("r{round:08}-k{i:06}-").into_bytes();
    v.resize(200, (round as u8) ^ (i as u8));
    v
}

/// One commit that (over)writes keys `0..n` with round `round`'s values.
pub fn write_round(env: &Env, n: u32, round: u64) {
    let mut w = env.write_txn().unwrap();
    for i in 0..n {
        w.put(env.main_db(), &key(i), &value(i, round)).unwrap();
    }
    w.commit().unwrap();
}

/// `rounds` commits of overwrites of keys `0..n`, starting at `first`, so
/// freed pages are reused by later rounds unless a reader pins them.
pub fn overwrite(env: &Env, n: u32, first: u64, rounds: u64) {
    for r in first..first + rounds {
        write_round(env, n, r);
    }
}

/// The entries of a tree, in order.
pub type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// Every entry of the main tree in `r`, or a description of the read error.
pub fn contents(r: &RoTxn, db: sarsen::Database) -> Result<Entries, String> {
    let mut out = Vec::new();
    for e in r.iter(db).map_err(|e| format!("iter: {e}"))? {
        let (k, v) = e.map_err(|e| format!("iteration: {e}"))?;
        out.push((k.to_vec(), v.to_vec()));
    }
    Ok(out)
}

/// Describes the first difference between two entry lists.
pub fn first_diff(got: &[(Vec<u8>, Vec<u8>)], want: &[(Vec<u8>, Vec<u8>)]) -> Option<String> {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if g != w {
            return Some(format!(
                "entry #{i}: got {} = {} expected {} = {}",
                String::from_utf8_lossy(&g.0),
                String::from_utf8_lossy(&g.1[..g.1.len().min(24)]),
                String::from_utf8_lossy(&w.0),
                String::from_utf8_lossy(&w.1[..w.1.len().min(24)]),
            ));
        }
    }
    (got.len() != want.len()).then(|| format!("{} entries, expected {}", got.len(), want.len()))
}

/// Whether this process runs as root (the identity tests need it).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Panics with every problem found, or returns if there were none.
pub fn report(test: &str, problems: &[String]) {
    assert!(
        problems.is_empty(),
        "{test}: {} problem(s):\n - {}",
        problems.len(),
        problems.join("\n - ")
    );
}
