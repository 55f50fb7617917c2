//! `--check`: every workload on tiny data for every engine, with the children
//! verifying what they read against what was written.

use std::process::ExitCode;

use crate::cli::{Cli, Params};
use crate::data::KeyFormat;
use crate::engines::{EngineKind, MergeOperator};
use crate::runner::{unique_engines, Series, Session, Step};
use crate::store::DbRoot;
use crate::workload::Workload;

/// Keys in a check run.
const CHECK_NUM: u64 = 2000;

/// One step of a check: a workload with its reader or writer threads and gets per
/// read transaction.
struct CheckStep(Workload, usize, usize);

/// The steps on ordinary values, in order: each fill followed by reads and writes of
/// its database, so that every workload runs on every kind of key set (all keys, the
/// fillsync subset, all but the deleted).
fn value_steps() -> Vec<CheckStep> {
    use Workload::*;
    [
        (FillSeq, 1, 1),
        (ReadRandom, 2, 1),
        (ReadSeq, 1, 1),
        (ReadReverse, 1, 1),
        (FillRandom, 1, 1),
        (ReadRandom, 2, 16),
        (Overwrite, 2, 1),
        (ReadSeq, 1, 1),
        (ReadWhileWriting, 2, 1),
        (UpdateRandom, 2, 1),
        (ReadRandom, 1, 1),
        (DeleteRandom, 2, 1),
        (ReadSeq, 1, 1),
        (ReadReverse, 1, 1),
        (ReadRandom, 2, 7),
        (Overwrite, 1, 1),
        (UpdateRandom, 1, 1),
        (ReadSeq, 1, 1),
        (FillSync, 2, 1),
        (ReadSeq, 1, 1),
        (ReadRandom, 2, 1),
        (ReadWhileWriting, 2, 4),
        (Overwrite, 2, 1),
        (ReadReverse, 1, 1),
        (DeleteRandom, 1, 1),
        (FillSeq, 1, 1),
        (RetainRandom, 1, 1),
        (ReadSeq, 1, 1),
        (ReadRandom, 2, 1),
        (FillRandom, 1, 1),
        (PopFront, 1, 1),
        (ReadReverse, 1, 1),
        (PopFront, 1, 1),
        (UpdateRandom, 1, 1),
        (ReadSeq, 1, 1),
    ]
    .into_iter()
    .map(|(w, t, rb)| CheckStep(w, t, rb))
    .collect()
}

/// The steps on 8-byte counters: read-modify-write and merge must keep sums exact.
fn counter_steps(merge: bool) -> Vec<CheckStep> {
    use Workload::*;
    let mut v = vec![CheckStep(FillRandom, 1, 1), CheckStep(UpdateRandom, 2, 1)];
    if merge {
        v.push(CheckStep(MergeRandom, 2, 1));
        v.push(CheckStep(UpdateRandom, 1, 1));
    }
    v.push(CheckStep(ReadSeq, 1, 1));
    v
}

/// Problems with the counts a step reported (the child checks the data itself).
fn count_problems(w: Workload, step: &Step, p: &Params) -> Vec<String> {
    let m = &step.run.m;
    let mut out = Vec::new();
    let mut expect = |what: &str, got: u64, want: u64| {
        if got != want {
            out.push(format!("{what}: {got}, expected {want}"));
        }
    };
    let all_keys = step.before.is_some_and(|s| s.all_keys());
    match w {
        Workload::FillSeq | Workload::FillRandom | Workload::FillSync => {
            expect("writes", m.write_ops, w.fill_count(p.num));
        }
        Workload::ReadRandom | Workload::ReadWhileWriting => {
            expect("reads", m.read_ops, p.threads as u64 * p.reads);
            if all_keys {
                expect("found", m.found, m.read_ops);
            }
        }
        Workload::ReadSeq | Workload::ReadReverse => {
            expect(
                "entries scanned",
                m.read_ops,
                step.before.map_or(0, |s| s.entries),
            );
        }
        Workload::Overwrite | Workload::MergeRandom => expect("writes", m.write_ops, p.writes),
        Workload::UpdateRandom => {
            expect("writes", m.write_ops, p.writes);
            if step.before.is_some() {
                expect("found", m.found, m.write_ops);
            }
        }
        Workload::RetainRandom => {
            let before = step.before.map_or(0, |s| s.entries);
            expect("entries visited", m.read_ops, before);
            if let Some(after) = w.state_after(p, step.before) {
                expect("deletes", m.write_ops, before - after.entries);
            }
        }
        Workload::PopFront => {
            let before = step.before.map_or(0, |s| s.entries);
            expect("deletes", m.write_ops, p.writes.min(before));
        }
        Workload::DeleteRandom => {
            let want = if all_keys {
                p.writes.min(p.num)
            } else {
                p.writes
            };
            expect("deletes", m.write_ops, want);
        }
    }
    let counting = w == Workload::MergeRandom || (w == Workload::UpdateRandom && p.counters());
    let lossy = w == Workload::UpdateRandom && m.lost_updates.is_some();
    if counting && !lossy && m.counters_exact != Some(true) {
        out.push(format!("counters exact: {:?}", m.counters_exact));
    }
    out
}

/// The parameters of a check: tiny data, with `value_size` bytes per value.
fn check_params(cli: &Cli, value_size: usize) -> Params {
    let mut p = cli.params();
    p.num = CHECK_NUM;
    p.reads = CHECK_NUM;
    p.writes = CHECK_NUM / 4;
    p.threads = 2;
    p.batch = 128;
    p.read_batch = 1;
    p.duration = 0;
    p.writes_per_second = 0;
    p.value_size = value_size;
    p.merge_operator = Some(MergeOperator::Uint64Add);
    p.cache_bytes = 16 << 20;
    p.key_size = p.key_size.max(KeyFormat::digits_needed(CHECK_NUM - 1));
    p
}

/// Runs `steps` on `engine` in a new session; returns the number of failed steps.
fn run_steps(cli: &Cli, p: &Params, engine: EngineKind, steps: &[CheckStep]) -> usize {
    let root = match DbRoot::new(cli.db.as_deref()) {
        Ok(r) => r,
        Err(e) => {
            println!("FAIL  {}: {e}", engine.name());
            return 1;
        }
    };
    let series = Series {
        engine,
        alloc: None,
    };
    let mut session = Session::new(root, p.clone(), true);
    let mut failures = 0;
    for &CheckStep(w, threads, read_batch) in steps {
        if w.needs_cursor_delete() && !engine.has_cursor_delete() {
            println!(
                "skip  {:<8} {:<17} no cursor delete",
                engine.name(),
                w.name()
            );
            continue;
        }
        let mut p = p.clone();
        p.threads = threads;
        p.read_batch = read_batch;
        session.set_shape(threads, read_batch);
        let (problems, summary) = match session.run_step(series, w) {
            Ok(step) => {
                let mut v = step.run.m.errors.clone();
                v.extend(count_problems(w, &step, &p));
                (v, summary(&step))
            }
            Err(err) => (vec![format!("run failed: {err}")], String::new()),
        };
        report_step(engine, w, &summary, &problems);
        failures += usize::from(!problems.is_empty());
    }
    failures
}

/// Runs the check; prints one line per step and exits non-zero on any mismatch.
pub fn check(cli: &Cli) -> ExitCode {
    let p = check_params(cli, cli.params().value_size);
    println!(
        "sarsen-bench --check: num {}, reads {} per thread, writes {}, batch {}, key_size {}, \
         value_size {} (then 8-byte counters)",
        p.num, p.reads, p.writes, p.batch, p.key_size, p.value_size
    );
    let mut failures = 0;
    for e in unique_engines(cli) {
        if !e.is_built() {
            println!("FAIL  {}: {}", e.name(), e.not_built());
            failures += 1;
            continue;
        }
        failures += run_steps(cli, &p, e, &value_steps());
        let counters = check_params(cli, 8);
        failures += run_steps(cli, &counters, e, &counter_steps(e.has_merge()));
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
    parts.push(format!("{} thread(s)", m.threads));
    parts.join(", ")
}

fn report_step(e: EngineKind, w: Workload, summary: &str, problems: &[String]) {
    if problems.is_empty() {
        println!("ok    {:<8} {:<17} {summary}", e.name(), w.name());
    } else {
        println!("FAIL  {:<8} {:<17} {summary}", e.name(), w.name());
        for p in problems {
            println!("        {p}");
        }
    }
}
