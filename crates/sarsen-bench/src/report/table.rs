//! The Markdown report: a preamble, then one section per workload (and thread count)
//! with a table in the columns of Symas' reports, found counts and ratios.

use std::fmt::Write as _;
use std::path::Path;

use super::{command_line, Record, MB};
use crate::cli::Params;
use crate::engines::EngineKind;
use crate::workload::{fillsync_count, Workload};

/// The report's preamble: command, engines, machine and parameters.
pub fn header(p: &Params, engines: &[EngineKind], db: &Path) -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let versions: Vec<String> = engines
        .iter()
        .map(|e| format!("{} ({})", e.name(), e.version()))
        .collect();
    let mut s = String::new();
    let _ = writeln!(s, "# sarsen-bench\n");
    let _ = writeln!(s, "command: `{}`  ", command_line());
    let _ = writeln!(s, "engines: {}  ", versions.join(", "));
    let _ = writeln!(
        s,
        "machine: {cpus} CPUs; databases under {}  ",
        db.display()
    );
    let _ = writeln!(
        s,
        "data: num {}, key_size {} (zero-padded decimal), value_size {}, seed {}; \
         reads {} per thread, threads {}, batch {}{}\n",
        p.num,
        p.key_size,
        p.value_size,
        p.seed,
        p.reads,
        p.threads,
        p.batch,
        if p.duration > 0 {
            format!(", duration {} s", p.duration)
        } else {
            String::new()
        },
    );
    s
}

/// What a workload did, in words.
fn describe(w: Workload, p: &Params) -> String {
    let per_txn = if p.read_batch > 1 {
        format!("{} gets per read transaction", p.read_batch)
    } else {
        "one read transaction per get".to_string()
    };
    let readers = if p.duration > 0 {
        format!("{} reader thread(s) for {} s", p.threads, p.duration)
    } else {
        format!("{} reader thread(s) x {} gets", p.threads, p.reads)
    };
    let writers = format!(
        "{} operations, {} per transaction, by {} writer thread(s) where the engine \
         allows concurrent writers (else 1)",
        p.writes, p.batch, p.threads
    );
    let sync = if p.sync { "; durable commits" } else { "" };
    match w {
        Workload::FillSeq => format!(
            "{} writes in ascending key order, {} per transaction (LMDB, libmdbx: append \
             mode), new DB{sync}",
            p.num, p.batch
        ),
        Workload::FillRandom => format!(
            "{} writes in random key order, {} per transaction, new DB{sync}",
            p.num, p.batch
        ),
        Workload::FillSync => format!(
            "{} writes in random key order, one durable (fsync'd) commit each, shared by \
             {} writer thread(s) (distinct keys each, on every engine), new DB; ops/s is \
             commits/s, latency is per commit",
            fillsync_count(p.num),
            p.threads
        ),
        Workload::Overwrite => format!("new values for random existing keys: {writers}{sync}"),
        Workload::ReadRandom => format!("{readers} of random keys, {per_txn}"),
        Workload::ReadSeq => "one ordered scan of the whole DB".to_string(),
        Workload::ReadReverse => "one scan of the whole DB in descending order".to_string(),
        Workload::ReadWhileWriting => format!(
            "{readers} of random keys, {per_txn}, while 1 writer overwrites random keys, \
             one write per transaction{}{sync}; micros/op is per get per reader thread",
            if p.writes_per_second > 0 {
                format!(" at most {} per second", p.writes_per_second)
            } else {
                String::new()
            }
        ),
        Workload::UpdateRandom => format!(
            "get then put of random existing keys{}: {writers}{sync}",
            if p.counters() {
                " (8-byte counters, +1)"
            } else {
                ""
            }
        ),
        Workload::MergeRandom => {
            format!("uint64add merge of 1 into random existing keys: {writers}{sync}")
        }
        Workload::DeleteRandom => format!("deletes of distinct random keys: {writers}{sync}"),
        Workload::RetainRandom => format!(
            "one write transaction walks every key with a write cursor and deletes about half \
             (a hash of the key index picks them) through it{sync}"
        ),
        Workload::PopFront => format!(
            "deletes of the first key through a cursor, {} per transaction{sync}",
            p.batch
        ),
    }
}

/// Renders rows as a Markdown table with aligned columns (first column left-aligned).
pub(super) fn markdown(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut width: Vec<usize> = head.iter().map(|h| h.len()).collect();
    for r in rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let line = |cells: Vec<String>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&width)
            .enumerate()
            .map(|(i, (c, &w))| {
                if i == 0 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        format!("| {} |\n", padded.join(" | "))
    };
    let mut s = line(head.iter().map(|h| h.to_string()).collect());
    let rule: Vec<String> = width
        .iter()
        .enumerate()
        .map(|(i, &w)| {
            let dashes = "-".repeat(w.saturating_sub(1));
            if i == 0 {
                format!(":{dashes}")
            } else {
                format!("{dashes}:")
            }
        })
        .collect();
    s.push_str(&line(rule));
    for r in rows {
        s.push_str(&line(r.clone()));
    }
    s
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}x", a / b)
    } else {
        "n/a".to_string()
    }
}

pub(super) fn opt(x: Option<f64>) -> String {
    x.map_or("-".to_string(), |v| format!("{v:.2}"))
}

fn mb(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / MB)
}

/// The columns of a workload's table, and the cells of one record.
fn columns(w: Workload) -> Vec<&'static str> {
    let mut head = vec!["engine"];
    if w.is_mixed() {
        head.extend(["read ops/s", "write ops/s"]);
    } else {
        head.push("ops/s");
    }
    head.extend(["micros/op", "p50 us", "p99 us", "p99.9 us"]);
    if w.is_mixed() {
        head.extend(["write p50 us", "write p99 us", "write p99.9 us"]);
    }
    head.extend([
        "wall (s)",
        "user (s)",
        "sys (s)",
        "CPU %",
        "DB size (MB)",
        "peak RSS (MB)",
        "total (MB)",
        "vol ctx sw",
        "invol ctx sw",
        "fs in (blocks)",
        "fs out (blocks)",
        "write amp",
    ]);
    head
}

fn cells(w: Workload, r: &Record) -> Vec<String> {
    let mut c = vec![r.series.clone()];
    if w.is_mixed() {
        c.push(format!("{:.0}", r.read_ops_per_sec));
        c.push(format!("{:.0}", r.write_ops_per_sec));
    } else {
        c.push(format!("{:.0}", r.ops_per_sec));
    }
    c.extend([
        format!("{:.3}", r.micros_per_op),
        opt(r.p50_us),
        opt(r.p99_us),
        opt(r.p999_us),
    ]);
    if w.is_mixed() {
        c.extend([
            opt(r.write_p50_us),
            opt(r.write_p99_us),
            opt(r.write_p999_us),
        ]);
    }
    c.extend([
        format!("{:.3}", r.wall_s),
        format!("{:.3}", r.user_s),
        format!("{:.3}", r.sys_s),
        format!("{:.0}", r.cpu_pct),
        mb(r.db_size_bytes),
        mb(r.peak_rss_bytes),
        mb(r.total_bytes),
        r.vol_ctx_sw.to_string(),
        r.invol_ctx_sw.to_string(),
        r.fs_read_blocks.to_string(),
        r.fs_write_blocks.to_string(),
        r.write_amp.map_or("-".to_string(), |a| format!("{a:.2}")),
    ]);
    c
}

/// The rate a workload is judged by: reads per second for readwhilewriting, else
/// operations per second.
fn rate(w: Workload, r: &Record) -> f64 {
    if w.is_mixed() {
        r.read_ops_per_sec
    } else {
        r.ops_per_sec
    }
}

/// One record per series, in order of first appearance: the repetition with the
/// median rate (the upper middle one of an even count), with the number of
/// repetitions.
pub(super) fn medians(w: Workload, rows: &[Record]) -> Vec<(&Record, usize)> {
    let mut groups: Vec<Vec<&Record>> = Vec::new();
    for r in rows {
        match groups.iter_mut().find(|g| g[0].series == r.series) {
            Some(g) => g.push(r),
            None => groups.push(vec![r]),
        }
    }
    groups
        .into_iter()
        .map(|mut g| {
            g.sort_by(|a, b| rate(w, a).total_cmp(&rate(w, b)));
            (g[g.len() / 2], g.len())
        })
        .collect()
}

/// The Markdown section of one workload: description, table, found counts, notes,
/// and the throughput ratio of Sarsen to each peer. Repetitions of a series are
/// reduced to their median.
pub fn table(w: Workload, p: &Params, rows: &[Record], notes: &[String]) -> String {
    let title = if w.is_threaded() {
        format!("{}, {} thread(s)", w.name(), p.threads)
    } else {
        w.name().to_string()
    };
    let mut s = format!("## {title}\n\n{}\n\n", describe(w, p));
    let med = medians(w, rows);
    let repeated = med.iter().any(|&(_, n)| n > 1);
    if !med.is_empty() {
        let mut head = columns(w);
        if repeated {
            head.insert(1, "runs");
        }
        let cells: Vec<Vec<String>> = med
            .iter()
            .map(|&(r, n)| {
                let mut c = cells(w, r);
                if repeated {
                    c.insert(1, n.to_string());
                }
                c
            })
            .collect();
        s.push_str(&markdown(&head, &cells));
        s.push('\n');
        if repeated {
            let _ = writeln!(s, "each row: the run with the median rate of its runs  ");
        }
    }
    if w.has_readers() || w == Workload::UpdateRandom || w == Workload::DeleteRandom {
        let found: Vec<String> = med
            .iter()
            .map(|(r, _)| {
                let of = if w.has_readers() { r.read_ops } else { r.ops };
                format!("{} {} of {}", r.series, r.found, of)
            })
            .collect();
        let _ = writeln!(s, "found: {}  ", found.join(", "));
    }
    if w.is_scan() {
        let n: Vec<String> = med
            .iter()
            .map(|(r, _)| format!("{} {}", r.series, r.read_ops))
            .collect();
        let _ = writeln!(s, "entries scanned: {}  ", n.join(", "));
    }
    let counters: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            r.counters_exact.map(|ok| match (ok, r.lost_updates) {
                (true, _) => format!("{} exact", r.series),
                (false, Some(n)) => format!(
                    "{} lost {n} updates (concurrent get-then-put is not isolated)",
                    r.series
                ),
                (false, None) => format!("{} WRONG", r.series),
            })
        })
        .collect();
    if !counters.is_empty() {
        let _ = writeln!(
            s,
            "counters (sum grew by the number of increments): {}  ",
            counters.join(", ")
        );
    }
    for n in notes {
        let _ = writeln!(s, "{n}  ");
    }
    let sarsen = EngineKind::Sarsen.name();
    for &(ours, _) in med.iter().filter(|(r, _)| r.engine == sarsen) {
        let peers = med
            .iter()
            .filter(|(r, _)| r.engine != sarsen && r.allocator == ours.allocator);
        for &(peer, _) in peers {
            if w.is_mixed() {
                let _ = writeln!(
                    s,
                    "ratio {}/{}: reads {}, writes {}  ",
                    ours.series,
                    peer.series,
                    ratio(ours.read_ops_per_sec, peer.read_ops_per_sec),
                    ratio(ours.write_ops_per_sec, peer.write_ops_per_sec)
                );
            } else {
                let _ = writeln!(
                    s,
                    "ratio {}/{}: {}  ",
                    ours.series,
                    peer.series,
                    ratio(ours.ops_per_sec, peer.ops_per_sec)
                );
            }
        }
    }
    s.push('\n');
    s
}
