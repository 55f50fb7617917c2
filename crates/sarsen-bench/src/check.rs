//! `--check`: every workload on tiny data for every engine, with the children
//! verifying what they read against what was written.

use std::process::ExitCode;

use crate::cli::Cli;
use crate::data::KeyFormat;
use crate::engines::EngineKind;
use crate::runner::{unique_engines, Session, Step};
use crate::store::DbRoot;
use crate::workload::Workload;

/// Keys in a check run.
const CHECK_NUM: u64 = 2000;

/// The steps of a check, in order: each fill followed by the reads of its database.
const STEPS: [Workload; 15] = [
    Workload::FillSeq,
    Workload::ReadRandom,
    Workload::ReadSeq,
    Workload::FillRandom,
    Workload::ReadRandom,
    Workload::ReadSeq,
    Workload::ReadWhileWriting,
    Workload::ReadRandom,
    Workload::ReadSeq,
    Workload::FillSync,
    Workload::ReadSeq,
    Workload::ReadRandom,
    Workload::ReadWhileWriting,
    Workload::ReadSeq,
    Workload::FillSeq,
];

/// Problems with the counts a step reported (the child checks the data itself).
fn count_problems(w: Workload, step: &Step, threads: usize, reads: u64, num: u64) -> Vec<String> {
    let m = &step.run.m;
    let mut out = Vec::new();
    let mut expect = |what: &str, got: u64, want: u64| {
        if got != want {
            out.push(format!("{what}: {got}, expected {want}"));
        }
    };
    match w {
        Workload::FillSeq | Workload::FillRandom | Workload::FillSync => {
            expect("writes", m.write_ops, w.fill_count(num));
        }
        Workload::ReadRandom | Workload::ReadWhileWriting => {
            expect("reads", m.read_ops, threads as u64 * reads);
            if step.before.is_some_and(|s| s.all_keys) {
                expect("found", m.found, m.read_ops);
            }
        }
        Workload::ReadSeq => {
            expect(
                "entries scanned",
                m.read_ops,
                step.before.map_or(0, |s| s.entries),
            );
        }
    }
    out
}

/// Runs the check; prints one line per step and exits non-zero on any mismatch.
pub fn check(cli: &Cli) -> ExitCode {
    let mut p = cli.params();
    p.num = CHECK_NUM;
    p.reads = CHECK_NUM;
    p.threads = 2;
    p.batch = 128;
    p.duration = 0;
    p.key_size = p.key_size.max(KeyFormat::digits_needed(CHECK_NUM - 1));
    let root = match DbRoot::new(cli.db.as_deref()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("sarsen-bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "sarsen-bench --check: num {}, reads {} x {} threads, batch {}, key_size {}, value_size {}",
        p.num, p.reads, p.threads, p.batch, p.key_size, p.value_size
    );
    let mut session = Session::new(root, p.clone(), true);
    let mut failures = 0;
    for e in unique_engines(cli) {
        for w in STEPS {
            let (problems, summary) = match session.run_step(e, w) {
                Ok(step) => {
                    let mut v = step.run.m.errors.clone();
                    v.extend(count_problems(w, &step, p.threads, p.reads, p.num));
                    (v, summary(&step))
                }
                Err(err) => (vec![format!("run failed: {err}")], String::new()),
            };
            report_step(e, w, &summary, &problems);
            failures += usize::from(!problems.is_empty());
        }
    }
    if failures == 0 {
        println!("check passed");
        ExitCode::SUCCESS
    } else {
        println!("check FAILED: {failures} step(s)");
        ExitCode::FAILURE
    }
}

/// What a step did, in a few words.
fn summary(step: &Step) -> String {
    let m = &step.run.m;
    let mut parts = Vec::new();
    if m.read_ops > 0 {
        parts.push(format!("{} read, {} found", m.read_ops, m.found));
    }
    if m.write_ops > 0 {
        parts.push(format!("{} written", m.write_ops));
    }
    parts.join(", ")
}

fn report_step(e: EngineKind, w: Workload, summary: &str, problems: &[String]) {
    if problems.is_empty() {
        println!("ok    {:<7} {:<17} {summary}", e.name(), w.name());
    } else {
        println!("FAIL  {:<7} {:<17} {summary}", e.name(), w.name());
        for p in problems {
            println!("        {p}");
        }
    }
}
