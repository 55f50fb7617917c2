//! Comparing the two engines' outcomes, and reporting a difference: both
//! outcomes, the program up to it, and a smaller program that still differs
//! (delta debugging within a time budget).

use std::fmt::Write as _;
use std::ops::Range;
use std::time::{Duration, Instant};

use super::{run_lmdb, run_sarsen, Case, Instr, Outcome};

/// The first instruction whose outcomes differ, and both outcomes.
pub(super) type Mismatch = (usize, Option<Outcome>, Option<Outcome>);

pub(super) fn compare(lmdb: &[Outcome], sarsen: &[Outcome]) -> Option<Mismatch> {
    let i = (0..lmdb.len().max(sarsen.len())).find(|&i| lmdb.get(i) != sarsen.get(i))?;
    Some((i, lmdb.get(i).cloned(), sarsen.get(i).cloned()))
}

pub(super) fn run_case(case: &Case) -> Option<Mismatch> {
    compare(&run_lmdb(case), &run_sarsen(case))
}

/// Both outcomes, briefly; for snapshots, where they first differ.
fn explain(a: &Option<Outcome>, b: &Option<Outcome>) -> String {
    let one = |o: &Option<Outcome>| match o {
        None => "(nothing: stopped earlier)".to_string(),
        Some(Outcome::Snapshot(s)) => format!("Snapshot of {} databases", s.len()),
        Some(o) => format!("{o:?}"),
    };
    let mut s = format!("  LMDB:   {}\n  Sarsen: {}\n", one(a), one(b));
    if let (Some(Outcome::Snapshot(x)), Some(Outcome::Snapshot(y))) = (a, b) {
        for (db, (x, y)) in x.iter().zip(y).enumerate() {
            if x.entries != y.entries {
                let (n, m) = (x.entries, y.entries);
                let _ = writeln!(s, "  db{db}: entries LMDB {n} Sarsen {m}");
            }
            first_difference(&mut s, db, "forward scan", &x.fwd, &y.fwd);
            first_difference(&mut s, db, "backward scan", &x.bwd, &y.bwd);
            first_difference(&mut s, db, "keys forward", &x.keys_fwd, &y.keys_fwd);
            first_difference(&mut s, db, "keys backward", &x.keys_bwd, &y.keys_bwd);
        }
    }
    s
}

/// Where two lists (LMDB's, Sarsen's) first differ, if they do.
fn first_difference<T: PartialEq + std::fmt::Debug>(
    s: &mut String,
    db: usize,
    what: &str,
    xs: &[T],
    ys: &[T],
) {
    let Some(i) = (0..xs.len().max(ys.len())).find(|&i| xs.get(i) != ys.get(i)) else {
        return;
    };
    let (n, m) = (xs.len(), ys.len());
    let _ = writeln!(
        s,
        "  db{db} {what} ({n} vs {m} items), first difference at #{i}:"
    );
    let _ = writeln!(
        s,
        "    LMDB:   {:?}\n    Sarsen: {:?}",
        xs.get(i),
        ys.get(i)
    );
}

/// Whether `ins` begins (1) or ends (-1) a transaction, a pinned snapshot or
/// a cursor session.
fn nesting(ins: &Instr) -> i32 {
    match ins {
        Instr::BeginWrite | Instr::BeginRead | Instr::BeginNested => 1,
        Instr::CursorOpen(_) | Instr::WCursorOpen(_) | Instr::Pin => 1,
        Instr::Commit | Instr::Abort | Instr::CursorClose | Instr::Unpin => -1,
        _ => 0,
    }
}

/// The program from `from` on, as numbered, indented lines.
fn listing(prog: &[Instr], from: usize) -> String {
    let (mut s, mut depth) = (String::new(), 0i32);
    for (i, ins) in prog.iter().enumerate() {
        depth += nesting(ins).min(0);
        if i >= from {
            let _ = writeln!(s, "{i:6}  {:w$}{ins:?}", "", w = 2 * depth as usize);
        }
        depth += nesting(ins).max(0);
    }
    s
}

/// `prog[..=last]` with whatever is open closed (cursor, transactions aborted,
/// snapshot unpinned), so that it still runs.
fn close_open(prog: &[Instr], last: usize) -> Vec<Instr> {
    let mut p = prog[..=last.min(prog.len() - 1)].to_vec();
    let mut open = Vec::new();
    for ins in &p {
        match (nesting(ins), ins) {
            (1, Instr::CursorOpen(_) | Instr::WCursorOpen(_)) => open.push(Instr::CursorClose),
            (1, Instr::Pin) => open.push(Instr::Unpin),
            (1, _) => open.push(Instr::Abort),
            (-1, _) => drop(open.pop()),
            _ => {}
        }
    }
    p.extend(open.into_iter().rev());
    p
}

/// Index of the end of what `prog[i]` begins.
fn end_of(prog: &[Instr], i: usize) -> usize {
    let mut depth = 0;
    for (j, ins) in prog.iter().enumerate().skip(i) {
        depth += nesting(ins);
        if depth == 0 {
            return j;
        }
    }
    prog.len() - 1
}

/// Units the shrinker may remove without unbalancing the program (kind 0:
/// transactions and pinned snapshots with the `Check` after them, but not the
/// first transaction, which creates the databases; 1: cursor sessions; 2:
/// single instructions).
fn units(prog: &[Instr], kind: u8) -> Vec<Range<usize>> {
    let skip = end_of(prog, 0) + 1;
    let mut v = Vec::new();
    for (i, ins) in prog.iter().enumerate().skip(skip) {
        let cursor = matches!(ins, Instr::CursorOpen(_) | Instr::WCursorOpen(_));
        v.push(match (kind, nesting(ins)) {
            (0, 1) if !cursor => {
                let e = end_of(prog, i) + 1;
                i..e + usize::from(prog.get(e) == Some(&Instr::Check))
            }
            (1, 1) if cursor => i..end_of(prog, i) + 1,
            (2, 0) => i..i + 1,
            _ => continue,
        });
    }
    v
}

/// A smaller program that still makes the engines differ (delta debugging
/// over transactions, cursor sessions, then single instructions), within a
/// time budget.
fn shrink(case: &Case, index: usize) -> Case {
    let secs = std::env::var("SARSEN_DIFF_SHRINK_SECS")
        .ok()
        .and_then(|s| s.parse().ok());
    let deadline = Instant::now() + Duration::from_secs(secs.unwrap_or(60));
    let mut best = Case {
        prog: close_open(&case.prog, index),
        ..case.clone()
    };
    if run_case(&best).is_none() {
        return case.clone();
    }
    for kind in [0, 1, 2, 0, 2] {
        let (mut chunk, mut i) = (units(&best.prog, kind).len().div_ceil(2).max(1), 0);
        while Instant::now() < deadline {
            let us = units(&best.prog, kind);
            if i >= us.len() {
                if chunk == 1 {
                    break;
                }
                (chunk, i) = (chunk.div_ceil(2), 0);
                continue;
            }
            let cut = &us[i..(i + chunk).min(us.len())];
            let keep = |j: &usize| !cut.iter().any(|r| r.contains(j));
            let prog = (0..best.prog.len())
                .filter(keep)
                .map(|j| best.prog[j].clone())
                .collect();
            let cand = Case {
                prog,
                ..best.clone()
            };
            if run_case(&cand).is_some() {
                best = cand;
            } else {
                i += chunk;
            }
        }
    }
    best
}

pub(super) fn report(case: &Case, (index, lmdb, sarsen): &Mismatch) -> String {
    let seed = case.seed;
    let mut s = format!("Sarsen and LMDB differ: seed {seed} (replay: SARSEN_DIFF_SEED={seed}), ");
    let what = case
        .prog
        .get(*index)
        .map_or("(the end)".into(), |i| format!("{i:?}"));
    let _ = write!(s, "instruction #{index}: {what}\n{}", explain(lmdb, sarsen));
    let (page, wmap, dbs) = (case.page_size, case.write_map, &case.dbs);
    let _ = writeln!(
        s,
        "case: Sarsen page {page}, write_map {wmap}, databases {dbs:?}"
    );
    let upto = close_open(&case.prog, *index);
    let path = std::env::temp_dir().join(format!("sarsen-lmdb-diff-{seed}.txt"));
    let saved = match std::fs::write(&path, listing(&upto, 0)) {
        Ok(()) => format!("all of it in {}", path.display()),
        Err(e) => format!("not saved: {e}"),
    };
    let from = index.saturating_sub(40);
    let shown = listing(&upto[..=(*index).min(upto.len() - 1)], from);
    let _ = writeln!(s, "program so far (from #{from}; {saved}):\n{shown}");
    let small = shrink(case, *index);
    if let Some((i, a, b)) = run_case(&small) {
        let n = small.prog.len();
        let _ = writeln!(
            s,
            "smallest failing program found ({n} instructions), differing at #{i}:"
        );
        let _ = write!(s, "{}{}", explain(&a, &b), listing(&small.prog, 0));
    }
    s
}
