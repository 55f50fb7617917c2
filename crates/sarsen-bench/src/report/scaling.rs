//! The thread-scaling summary of fillsync: for each series and writer-thread
//! count, the durable commits per second of all threads together, the latency of
//! one commit, and the rate against the series' own at the fewest threads. Group
//! commit shows as a rate that grows with threads while the latency stays flat;
//! commits serialized one sync each show as a flat rate and a latency that grows
//! with threads.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::table::{markdown, medians, opt};
use super::Record;
use crate::workload::Workload;

/// The Markdown section "fillsync against writer threads" of `rows` (records of
/// workload `w`, any thread counts, repetitions reduced to their median rate), or
/// an empty string when `w` is not fillsync or `rows` have fewer than two thread
/// counts.
pub fn scaling(w: Workload, rows: &[Record]) -> String {
    if !w.has_commit_writers() {
        return String::new();
    }
    let rows: Vec<&Record> = rows.iter().filter(|r| r.workload == w.name()).collect();
    let counts: BTreeSet<usize> = rows.iter().map(|r| r.threads).collect();
    if counts.len() < 2 {
        return String::new();
    }
    let mut series: Vec<&str> = Vec::new();
    for r in &rows {
        if !series.contains(&r.series.as_str()) {
            series.push(&r.series);
        }
    }
    let mut cells = Vec::new();
    let mut repeated = false;
    for s in &series {
        let mut base: Option<f64> = None;
        for &t in &counts {
            let of: Vec<Record> = rows
                .iter()
                .filter(|r| r.series == *s && r.threads == t)
                .map(|r| (*r).clone())
                .collect();
            let Some(&(r, runs)) = medians(w, &of).first() else {
                continue;
            };
            repeated |= runs > 1;
            let rate = r.commits_per_sec.unwrap_or(r.ops_per_sec);
            let rate0 = *base.get_or_insert(rate);
            let against = if rate0 > 0.0 {
                format!("{:.2}x", rate / rate0)
            } else {
                "n/a".to_string()
            };
            cells.push(vec![
                s.to_string(),
                t.to_string(),
                format!("{rate:.0}"),
                opt(r.p50_us),
                opt(r.p99_us),
                against,
            ]);
        }
    }
    let mut out = format!("## {} against writer threads\n\n", w.name());
    let _ = writeln!(
        out,
        "one put per durable transaction by each writer thread (distinct keys); \
         commits/s of all threads together; p50/p99: latency of one commit (us); \
         scaling: commits/s against the series' own at its fewest threads\n"
    );
    let head = [
        "engine",
        "threads",
        "commits/s",
        "p50 us",
        "p99 us",
        "scaling",
    ];
    out.push_str(&markdown(&head, &cells));
    out.push('\n');
    if repeated {
        let _ = writeln!(out, "each row: the run with the median rate of its runs  ");
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(series: &str, w: &str, threads: usize, rate: f64, run: usize) -> Record {
        Record {
            engine: series.to_string(),
            series: series.to_string(),
            workload: w.to_string(),
            threads,
            run,
            ops_per_sec: rate,
            write_ops_per_sec: rate,
            commits_per_sec: (w == "fillsync").then_some(rate),
            p50_us: Some(1e6 / rate),
            p99_us: Some(2e6 / rate),
            ..Record::default()
        }
    }

    #[test]
    fn one_row_per_series_and_thread_count_with_medians_and_scaling() {
        let mut rows = Vec::new();
        for t in [1, 2, 4] {
            // Three runs each: the median is the middle rate.
            for (run, f) in [1.1, 1.0, 0.5].into_iter().enumerate() {
                rows.push(rec("sarsen", "fillsync", t, 4000.0 * f, run));
                rows.push(rec("rocksdb", "fillsync", t, 2000.0 * t as f64 * f, run));
            }
        }
        let s = scaling(Workload::FillSync, &rows);
        assert!(s.starts_with("## fillsync against writer threads\n"), "{s}");
        assert!(s.contains("the run with the median rate"), "{s}");
        let lines: Vec<&str> = s.lines().filter(|l| l.starts_with("| ")).collect();
        // Header and rule, then the rows: series in order of appearance, threads
        // ascending.
        assert_eq!(lines.len(), 2 + 6, "{s}");
        let cells = |i: usize| -> Vec<String> {
            lines[i]
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        };
        assert_eq!(
            cells(2),
            ["sarsen", "1", "4000", "250.00", "500.00", "1.00x"]
        );
        assert_eq!(
            cells(4),
            ["sarsen", "4", "4000", "250.00", "500.00", "1.00x"]
        );
        assert_eq!(cells(5)[..3], ["rocksdb", "1", "2000"]);
        assert_eq!(cells(7)[..3], ["rocksdb", "4", "8000"]);
        assert_eq!(cells(7)[5], "4.00x");
    }

    #[test]
    fn nothing_for_one_thread_count_or_other_workloads() {
        let one = [rec("sarsen", "fillsync", 1, 4000.0, 0)];
        assert_eq!(scaling(Workload::FillSync, &one), "");
        let rows = [
            rec("sarsen", "overwrite", 1, 4000.0, 0),
            rec("sarsen", "overwrite", 2, 4000.0, 0),
        ];
        assert_eq!(scaling(Workload::Overwrite, &rows), "");
        // Records of another workload do not count towards fillsync's thread counts.
        let mixed = [
            rec("sarsen", "fillsync", 1, 4000.0, 0),
            rec("sarsen", "overwrite", 2, 4000.0, 0),
        ];
        assert_eq!(scaling(Workload::FillSync, &mixed), "");
        assert_eq!(scaling(Workload::FillSync, &[]), "");
    }
}
