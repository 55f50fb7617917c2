//! Records and their presentation: Markdown tables in the style of Symas' reports, and
//! JSON for machines.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::cli::Params;
use crate::engines::{EngineKind, Result};
use crate::runner::{Series, Step};
use crate::workload::{fillsync_count, Workload};

/// Bytes per MB in the tables.
const MB: f64 = 1e6;

/// Every column of one (engine, workload) run.
#[derive(Clone, Debug, Serialize)]
pub struct Record {
    /// Engine name.
    pub engine: &'static str,
    /// Allocator preloaded into the child (`glibc`, `jemalloc`, `tcmalloc`), or empty
    /// when none was chosen.
    pub allocator: &'static str,
    /// The series label: the engine, or `engine-allocator`.
    pub series: String,
    /// How the engine was configured for this workload.
    pub config: String,
    /// Workload name.
    pub workload: &'static str,
    /// Keys in the key space.
    pub num: u64,
    /// Reads per reader thread (readrandom, readwhilewriting).
    pub reads: u64,
    /// Threads doing the workload's operations: readers (readrandom,
    /// readwhilewriting), writers (overwrite, updaterandom, mergerandom,
    /// deleterandom: 1 on single-writer engines), 1 otherwise.
    pub threads: usize,
    /// Writes per transaction.
    pub batch: usize,
    /// Gets per read transaction.
    pub read_batch: usize,
    /// Durable commits (`--sync`, or fillsync).
    pub sync: bool,
    /// Block cache budget given to engines that have a cache, in bytes.
    pub cache_bytes: u64,
    /// The merge operator the engine was opened with.
    pub merge_operator: Option<crate::engines::MergeOperator>,
    /// Key length in bytes.
    pub key_size: usize,
    /// Value length in bytes.
    pub value_size: usize,
    /// Operations done: reads (or scanned entries) plus writes.
    pub ops: u64,
    /// Gets, or entries scanned.
    pub read_ops: u64,
    /// Puts.
    pub write_ops: u64,
    /// Gets that found their key (entries, for readseq).
    pub found: u64,
    /// Seconds of the timed section.
    pub wall_s: f64,
    /// Seconds the child process lived (open, timed section, close).
    pub process_wall_s: f64,
    /// `ops / wall_s`.
    pub ops_per_sec: f64,
    /// `read_ops / wall_s`.
    pub read_ops_per_sec: f64,
    /// `write_ops / wall_s`.
    pub write_ops_per_sec: f64,
    /// Microseconds per operation per thread (db_bench's convention): for readers,
    /// per get of one reader thread.
    pub micros_per_op: f64,
    /// Microseconds per write of the readwhilewriting writer (0 elsewhere).
    pub write_micros_per_op: f64,
    /// Median latency of one get (readers) or one write (writers, a transaction's
    /// time divided by its writes), in microseconds; None for scans.
    pub p50_us: Option<f64>,
    /// 99th percentile latency, microseconds.
    pub p99_us: Option<f64>,
    /// 99.9th percentile latency, microseconds.
    pub p999_us: Option<f64>,
    /// readwhilewriting's writer: median write latency, microseconds.
    pub write_p50_us: Option<f64>,
    /// readwhilewriting's writer: 99th percentile write latency, microseconds.
    pub write_p99_us: Option<f64>,
    /// readwhilewriting's writer: 99.9th percentile write latency, microseconds.
    pub write_p999_us: Option<f64>,
    /// User CPU seconds of the child process.
    pub user_s: f64,
    /// System CPU seconds of the child process.
    pub sys_s: f64,
    /// `(user_s + sys_s) / process_wall_s`, in percent.
    pub cpu_pct: f64,
    /// Bytes allocated on disk by the database after the run.
    pub db_size_bytes: u64,
    /// Peak RSS of the child process in bytes.
    pub peak_rss_bytes: u64,
    /// Memory the run took: peak RSS, plus the database's size when the database is
    /// not in the process's map (it then sits in the page cache besides), as in
    /// Symas' "Total Size" column.
    pub total_bytes: u64,
    /// Voluntary context switches of the child.
    pub vol_ctx_sw: u64,
    /// Involuntary context switches of the child.
    pub invol_ctx_sw: u64,
    /// 512-byte blocks read by file systems for the child.
    pub fs_read_blocks: u64,
    /// 512-byte blocks written (dirtied) by file systems for the child.
    pub fs_write_blocks: u64,
    /// Bytes of keys and values the workload wrote.
    pub bytes_written: u64,
    /// `fs_write_blocks * 512 / bytes_written`, when anything was written.
    pub write_amp: Option<f64>,
    /// Entries in the database before the run (None: new database).
    pub entries_before: Option<u64>,
    /// For updaterandom with 8-byte values and mergerandom: whether the counters'
    /// sum grew by exactly the number of increments.
    pub counters_exact: Option<bool>,
}

fn per(n: u64, d: f64) -> f64 {
    if d > 0.0 {
        n as f64 / d
    } else {
        0.0
    }
}

/// Microseconds per operation per thread: `threads * wall / ops`.
fn micros(threads: usize, wall_s: f64, ops: u64) -> f64 {
    if ops > 0 {
        threads as f64 * wall_s * 1e6 / ops as f64
    } else {
        0.0
    }
}

impl Record {
    /// The record of `step`, which ran `workload` on `series` with `p`.
    pub fn new(series: Series, workload: Workload, p: &Params, step: &Step) -> Self {
        let (m, u) = (&step.run.m, &step.run.usage);
        let threads = m.threads.max(1);
        let ops = m.read_ops + m.write_ops;
        let wall = m.wall_s;
        let micros_per_op = if workload.has_readers() {
            micros(threads, wall, m.read_ops)
        } else {
            micros(threads, wall, ops)
        };
        let write_micros_per_op = if workload.is_mixed() {
            micros(1, wall, m.write_ops)
        } else {
            0.0
        };
        let fs_write_bytes = u.out_blocks * 512;
        // Readers' latency where there are readers, else the writers'.
        let (lat, wlat) = if workload.has_readers() {
            (m.read_latency, m.write_latency)
        } else {
            (m.write_latency.or(m.read_latency), None)
        };
        let total_bytes = if series.engine.maps_db() {
            u.max_rss_bytes
        } else {
            u.max_rss_bytes + step.db_size_bytes
        };
        let opts = crate::exec::open_options(p, workload);
        Record {
            engine: series.engine.name(),
            allocator: series.alloc.map_or("", |a| a.name()),
            series: series.name(),
            config: series.engine.config(&opts),
            workload: workload.name(),
            num: p.num,
            reads: p.reads,
            threads,
            batch: p.batch,
            read_batch: p.read_batch,
            sync: opts.sync == crate::engines::SyncMode::Durable,
            cache_bytes: opts.cache_bytes,
            merge_operator: opts.merge_operator,
            key_size: p.key_size,
            value_size: p.value_size,
            ops,
            read_ops: m.read_ops,
            write_ops: m.write_ops,
            found: m.found,
            wall_s: wall,
            process_wall_s: step.run.process_wall_s,
            ops_per_sec: per(ops, wall),
            read_ops_per_sec: per(m.read_ops, wall),
            write_ops_per_sec: per(m.write_ops, wall),
            micros_per_op,
            write_micros_per_op,
            p50_us: lat.map(|l| l.p50_us),
            p99_us: lat.map(|l| l.p99_us),
            p999_us: lat.map(|l| l.p999_us),
            write_p50_us: wlat.map(|l| l.p50_us),
            write_p99_us: wlat.map(|l| l.p99_us),
            write_p999_us: wlat.map(|l| l.p999_us),
            user_s: u.user_s,
            sys_s: u.sys_s,
            cpu_pct: 100.0 * (u.user_s + u.sys_s) / step.run.process_wall_s.max(1e-9),
            db_size_bytes: step.db_size_bytes,
            peak_rss_bytes: u.max_rss_bytes,
            total_bytes,
            vol_ctx_sw: u.vol_ctx_sw,
            invol_ctx_sw: u.invol_ctx_sw,
            fs_read_blocks: u.in_blocks,
            fs_write_blocks: u.out_blocks,
            bytes_written: m.bytes_written,
            write_amp: (m.bytes_written > 0)
                .then(|| fs_write_bytes as f64 / m.bytes_written as f64),
            entries_before: step.before.map(|s| s.entries),
            counters_exact: m.counters_exact,
        }
    }
}

/// The command line, shell-quoted where needed, with the program's file name.
pub fn command_line() -> String {
    let mut args = std::env::args_os();
    let prog = args
        .next()
        .map(|a| {
            Path::new(&a)
                .file_name()
                .unwrap_or(&a)
                .to_string_lossy()
                .into_owned()
        })
        .unwrap_or_else(|| "sarsen-bench".into());
    let mut out = prog;
    for a in args {
        let a = a.to_string_lossy();
        let plain = !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_=,./:+@%".contains(c));
        out.push(' ');
        if plain {
            out.push_str(&a);
        } else {
            out.push('\'');
            out.push_str(&a.replace('\'', r"'\''"));
            out.push('\'');
        }
    }
    out
}

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
            "{} writes in random key order, one durable (fsync'd) commit each, new DB",
            fillsync_count(p.num)
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
    }
}

/// Renders rows as a Markdown table with aligned columns (first column left-aligned).
fn markdown(head: &[&str], rows: &[Vec<String>]) -> String {
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

fn opt(x: Option<f64>) -> String {
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

/// The Markdown section of one workload: description, table, found counts, notes,
/// and the throughput ratio of Sarsen to each peer.
pub fn table(w: Workload, p: &Params, rows: &[Record], notes: &[String]) -> String {
    let title = if w.is_threaded() {
        format!("{}, {} thread(s)", w.name(), p.threads)
    } else {
        w.name().to_string()
    };
    let mut s = format!("## {title}\n\n{}\n\n", describe(w, p));
    if !rows.is_empty() {
        let cells: Vec<Vec<String>> = rows.iter().map(|r| cells(w, r)).collect();
        s.push_str(&markdown(&columns(w), &cells));
        s.push('\n');
    }
    if w.has_readers() || w == Workload::UpdateRandom || w == Workload::DeleteRandom {
        let found: Vec<String> = rows
            .iter()
            .map(|r| format!("{} {} of {}", r.series, r.found, r.ops))
            .collect();
        let _ = writeln!(s, "found: {}  ", found.join(", "));
    }
    if w.is_scan() {
        let n: Vec<String> = rows
            .iter()
            .map(|r| format!("{} {}", r.series, r.read_ops))
            .collect();
        let _ = writeln!(s, "entries scanned: {}  ", n.join(", "));
    }
    let counters: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            r.counters_exact
                .map(|ok| format!("{} {}", r.series, if ok { "exact" } else { "WRONG" }))
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
    for ours in rows
        .iter()
        .filter(|r| r.engine == EngineKind::Sarsen.name())
    {
        let peers = rows
            .iter()
            .filter(|r| r.engine != ours.engine && r.allocator == ours.allocator);
        for peer in peers {
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

/// The JSON document `--json` writes.
#[derive(Serialize)]
struct JsonReport<'a> {
    command: String,
    params: &'a Params,
    engines: Vec<JsonEngine>,
    records: &'a [Record],
}

#[derive(Serialize)]
struct JsonEngine {
    name: &'static str,
    version: String,
    feature: Option<&'static str>,
}

/// Writes every record, with the command, parameters and engine versions, as JSON
/// to `path`.
pub fn write_json(
    path: &Path,
    p: &Params,
    engines: &[EngineKind],
    records: &[Record],
) -> Result<()> {
    let doc = JsonReport {
        command: command_line(),
        params: p,
        engines: engines
            .iter()
            .map(|&e| JsonEngine {
                name: e.name(),
                version: e.version(),
                feature: e.feature(),
            })
            .collect(),
        records,
    };
    let mut text = serde_json::to_string_pretty(&doc)?;
    text.push('\n');
    std::fs::write(path, text)?;
    Ok(())
}

/// Writes `report.md` (the Markdown report `text`), `results.json` and the SVG
/// charts into `dir` (created if missing).
pub fn write_out(
    dir: &Path,
    text: &str,
    p: &Params,
    engines: &[EngineKind],
    records: &[Record],
) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("report.md"), text)?;
    write_json(&dir.join("results.json"), p, engines, records)?;
    Ok(())
}
