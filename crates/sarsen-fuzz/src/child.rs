//! Seeded cases in child processes.
//!
//! A test calls [`run_in_children`], which runs the test binary again as a
//! child (the ignored test `child_test`), with the case range in
//! environment variables. The child calls [`child_main`], which runs each
//! case on a thread with a time limit and prints one line per case. A case
//! that crashes the child (a signal, an abort) or hangs it is reported with
//! its number and seed, and a new child goes on from the next case, so one
//! crash neither loses the test binary nor hides the other cases.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// What [`run_in_children`] saw.
#[derive(Debug, Default)]
pub struct ChildSummary {
    /// Cases that ran to the end.
    pub passed: usize,
    /// One line per failed case: panic, error, hang or crash, with its seed.
    pub failures: Vec<String>,
    /// How often each outcome summary (the text before ` | `) was seen.
    pub outcomes: std::collections::BTreeMap<String, usize>,
}

/// The seed of case `i` of a run with `base`.
pub fn case_seed(base: u64, i: usize) -> u64 {
    crate::mix(base ^ crate::mix(i as u64 + 1))
}

static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// The child side: if this process was started by [`run_in_children`] for
/// `kind`, runs its cases with `case(i, seed)` and returns `true`.
/// `case` returns a short outcome summary, or `Err` for a failure that is
/// not a panic. A case running longer than `limit` ends the child.
pub fn child_main(
    kind: &str,
    limit: Duration,
    case: impl Fn(usize, u64) -> Result<String, String> + Send + Sync + 'static,
) -> bool {
    if std::env::var("SARSEN_FUZZ_CHILD").ok().as_deref() != Some(kind) {
        return false;
    }
    let var = |n: &str| -> u64 { std::env::var(n).unwrap().parse().unwrap() };
    let base = var("SARSEN_FUZZ_BASE");
    let (from, to) = (
        var("SARSEN_FUZZ_FROM") as usize,
        var("SARSEN_FUZZ_TO") as usize,
    );
    std::panic::set_hook(Box::new(|info| {
        let msg = format!("{info}").replace('\n', " | ");
        *LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()) = Some(msg);
    }));
    let case = Arc::new(case);
    for i in from..to {
        let seed = case_seed(base, i);
        println!("@@ START {i}");
        let (tx, rx) = mpsc::channel();
        let c = case.clone();
        std::thread::spawn(move || {
            let r = catch_unwind(AssertUnwindSafe(|| c(i, seed)));
            let _ = tx.send(r.map_err(|p| {
                let last = LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()).take();
                last.or_else(|| p.downcast_ref::<String>().cloned())
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default()
            }));
        });
        match rx.recv_timeout(limit) {
            Ok(Ok(Ok(summary))) => println!("@@ OK {i} {}", summary.replace('\n', " ")),
            Ok(Ok(Err(msg))) => println!("@@ FAIL {i} {}", msg.replace('\n', " ")),
            Ok(Err(panic)) => println!("@@ PANIC {i} {panic}"),
            Err(_) => {
                println!("@@ HANG {i} no result after {limit:?}");
                std::process::exit(3);
            }
        }
    }
    println!("@@ END");
    true
}

/// The parent side: runs cases `from..to` of `kind` with base seed `base`
/// in children that run `child_test` of this test binary (an ignored test
/// that calls [`child_main`]). `silence` is how long the parent waits for
/// any line before it kills a child as hung.
pub fn run_in_children(
    kind: &str,
    child_test: &str,
    base: u64,
    from: usize,
    to: usize,
    silence: Duration,
) -> ChildSummary {
    let exe = std::env::current_exe().expect("current_exe");
    let mut sum = ChildSummary::default();
    let mut next = from;
    while next < to {
        let mut child = Command::new(&exe)
            .args([child_test, "--exact", "--ignored", "--nocapture"])
            .args(["--test-threads=1"])
            .env("SARSEN_FUZZ_CHILD", kind)
            .env("SARSEN_FUZZ_BASE", base.to_string())
            .env("SARSEN_FUZZ_FROM", next.to_string())
            .env("SARSEN_FUZZ_TO", to.to_string())
            .env("RUST_BACKTRACE", "0")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawning the child test process");
        let (tx, rx) = mpsc::channel::<String>();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let tail: Arc<Mutex<VecDeque<String>>> = Arc::default();
        let (err, t2) = (child.stderr.take().unwrap(), tail.clone());
        let err_thread = std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let mut q = t2.lock().unwrap();
                if q.len() >= 20 {
                    q.pop_front();
                }
                q.push_back(line);
            }
        });
        let start = next;
        let mut current = None;
        let mut killed = false;
        loop {
            let line = match rx.recv_timeout(silence) {
                Ok(line) => line,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let _ = child.kill();
                    killed = true;
                    break;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            };
            let Some(rest) = line.strip_prefix("@@ ") else {
                continue;
            };
            let mut parts = rest.splitn(3, ' ');
            let tag = parts.next().unwrap_or("");
            let Some(i) = parts.next().and_then(|s| s.parse::<usize>().ok()) else {
                continue;
            };
            let msg = parts.next().unwrap_or("").to_string();
            match tag {
                "START" => current = Some(i),
                "OK" => {
                    sum.passed += 1;
                    let key = msg.split(" | ").next().unwrap_or("").to_string();
                    *sum.outcomes.entry(key).or_default() += 1;
                    (current, next) = (None, i + 1);
                }
                _ => {
                    let seed = case_seed(base, i);
                    sum.failures
                        .push(format!("case {i} (case seed {seed}): {tag}: {msg}"));
                    (current, next) = (None, i + 1);
                }
            }
        }
        let status = child.wait().expect("waiting for the child");
        let _ = err_thread.join();
        let tail = tail.lock().unwrap().iter().cloned().collect::<Vec<_>>();
        if let Some(i) = current {
            let how = if killed { "HANG (killed)" } else { "CRASH" };
            sum.failures.push(format!(
                "case {i} (case seed {}): {how}: child ended ({status}) during this case; stderr tail:\n    {}",
                case_seed(base, i),
                tail.join("\n    ")
            ));
            next = i + 1;
        } else if next == start && next < to {
            sum.failures.push(format!(
                "child made no progress ({status}); stderr tail:\n    {}",
                tail.join("\n    ")
            ));
            break;
        }
    }
    sum
}
