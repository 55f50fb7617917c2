//! Records and their presentation: Markdown tables in the style of Symas' reports, and
//! JSON for machines.

mod scaling;
mod table;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::chart::ChartRow;
use crate::cli::Params;
use crate::engines::{EngineKind, Result};
use crate::runner::{Series, Step};
use crate::workload::Workload;

pub use scaling::scaling;
pub use table::{header, table};

/// Bytes per MB in the tables.
const MB: f64 = 1e6;

/// Every column of one (engine, workload) run.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(test, derive(Default))]
pub struct Record {
    /// Engine name.
    pub engine: String,
    /// Allocator preloaded into the child (`glibc`, `jemalloc`, `tcmalloc`), or empty
    /// when none was chosen.
    pub allocator: String,
    /// The series label: the engine, or `engine-allocator` (`wiredtiger-lsm` for
    /// WiredTiger with `--wt_lsm`).
    pub series: String,
    /// How the engine was configured for this workload.
    pub config: String,
    /// Workload name.
    pub workload: String,
    /// Repetition of this (series, workload, threads) in its run, from 0
    /// (`--repeat`); tables show the median of the repetitions.
    #[serde(default)]
    pub run: usize,
    /// Keys in the key space.
    pub num: u64,
    /// Reads per reader thread (readrandom, readwhilewriting).
    pub reads: u64,
    /// Threads doing the workload's operations: readers (readrandom,
    /// readwhilewriting), writers (overwrite, updaterandom, mergerandom,
    /// deleterandom: 1 on single-writer engines; fillsync: every engine), 1
    /// otherwise.
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
    /// Durable commits per second of all writer threads together, for fillsync (one
    /// put per commit, so `write_ops / wall_s`); None for other workloads.
    #[serde(default)]
    pub commits_per_sec: Option<f64>,
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
    /// Increments lost by concurrent get-then-put without isolation (updaterandom
    /// with several writer threads on LSM engines and sled).
    #[serde(default)]
    pub lost_updates: Option<u64>,
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
    pub fn new(series: Series, workload: Workload, p: &Params, step: &Step, run: usize) -> Self {
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
            engine: series.engine.name().to_string(),
            allocator: series.alloc.map_or("", |a| a.name()).to_string(),
            series: if opts.wt_lsm && series.engine == EngineKind::Wiredtiger {
                format!("{}-lsm", series.name())
            } else if !opts.write_map && series.engine.has_write_map() {
                format!("{}-pwrite", series.name())
            } else {
                series.name()
            },
            config: series.engine.config(&opts),
            workload: workload.name().to_string(),
            run,
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
            commits_per_sec: workload
                .has_commit_writers()
                .then(|| per(m.write_ops, wall)),
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
            lost_updates: m.lost_updates,
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

/// The JSON document `--json` writes.
#[derive(Serialize, Deserialize)]
pub struct JsonReport {
    /// The command line that produced the records.
    pub command: String,
    /// Its workload parameters (threads: the first `--threads` count).
    pub params: Params,
    /// The engines with their versions.
    pub engines: Vec<JsonEngine>,
    /// One record per (series, workload, threads, repetition).
    pub records: Vec<Record>,
}

/// An engine in the JSON document.
#[derive(Clone, Serialize, Deserialize)]
pub struct JsonEngine {
    /// Engine name.
    pub name: String,
    /// Library version.
    pub version: String,
    /// Cargo feature that builds it, if any.
    pub feature: Option<String>,
}

impl JsonReport {
    /// The document of this process's run.
    pub fn new(p: &Params, engines: &[EngineKind], records: &[Record]) -> Self {
        JsonReport {
            command: command_line(),
            params: p.clone(),
            engines: engines
                .iter()
                .map(|&e| JsonEngine {
                    name: e.name().to_string(),
                    version: e.version(),
                    feature: e.feature().map(str::to_string),
                })
                .collect(),
            records: records.to_vec(),
        }
    }

    /// Writes the document as pretty JSON to `path`.
    pub fn write(&self, path: &Path) -> Result<()> {
        let mut text = serde_json::to_string_pretty(self)?;
        text.push('\n');
        std::fs::write(path, text)?;
        Ok(())
    }

    /// Reads a document written by [`JsonReport::write`].
    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()).into())
    }
}

/// Writes `report.md` (the Markdown report `text`), `results.json` and the SVG
/// charts (see [`crate::chart`]) into `dir` (created if missing).
pub fn write_out(dir: &Path, text: &str, doc: &JsonReport) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("report.md"), text)?;
    doc.write(&dir.join("results.json"))?;
    let rows: Vec<ChartRow> = doc
        .records
        .iter()
        .map(|r| ChartRow {
            engine: r.engine.clone(),
            allocator: r.allocator.clone(),
            workload: r.workload.clone(),
            threads: r.threads,
            ops_per_sec: r.ops_per_sec,
            read_ops_per_sec: r.read_ops_per_sec,
            write_ops_per_sec: r.write_ops_per_sec,
            wall_s: r.wall_s,
        })
        .collect();
    let p = &doc.params;
    let title = format!(
        "sarsen-bench: {} records, {}-byte keys, {}-byte values",
        p.num, p.key_size, p.value_size
    );
    crate::chart::write_charts(dir, &title, &rows)?;
    Ok(())
}

/// The `report` subcommand: merges the records of several JSON files (runs of the
/// reproduction scripts, repetitions) into one report, JSON file and charts in `out`.
pub fn merge_reports(files: &[std::path::PathBuf], out: &Path) -> Result<()> {
    let mut docs = Vec::new();
    for f in files {
        docs.push(JsonReport::read(f)?);
    }
    let first = docs.first().ok_or("report: no JSON files given")?;
    let mut text = String::from("# sarsen-bench report\n\n");
    for d in &docs {
        text.push_str(&format!("run: `{}`  \n", d.command));
    }
    let mut engines: Vec<JsonEngine> = Vec::new();
    for e in docs.iter().flat_map(|d| &d.engines) {
        if !engines.iter().any(|x| x.name == e.name) {
            engines.push(e.clone());
        }
    }
    let names: Vec<String> = engines
        .iter()
        .map(|e| format!("{} ({})", e.name, e.version))
        .collect();
    text.push_str(&format!("engines: {}\n\n", names.join(", ")));
    // Sections in order of first appearance: (workload, threads), each rendered with
    // the parameters of the run it first appeared in.
    let mut sections: Vec<(String, usize, usize)> = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        for r in &d.records {
            if !sections
                .iter()
                .any(|(w, t, _)| *w == r.workload && *t == r.threads)
            {
                sections.push((r.workload.clone(), r.threads, i));
            }
        }
    }
    let all: Vec<Record> = docs.iter().flat_map(|d| d.records.clone()).collect();
    for (w, t, i) in &sections {
        let Some(workload) = Workload::from_name(w) else {
            continue;
        };
        let rows: Vec<Record> = all
            .iter()
            .filter(|r| r.workload == *w && r.threads == *t)
            .cloned()
            .collect();
        let mut p = docs[*i].params.clone();
        p.threads = *t;
        text.push_str(&table(workload, &p, &rows, &[]));
    }
    let mut scaled: Vec<&str> = Vec::new();
    for (w, _, _) in &sections {
        if !scaled.contains(&w.as_str()) {
            scaled.push(w);
            if let Some(workload) = Workload::from_name(w) {
                let rows: Vec<Record> = all.iter().filter(|r| r.workload == *w).cloned().collect();
                text.push_str(&scaling(workload, &rows));
            }
        }
    }
    let merged = JsonReport {
        command: command_line(),
        params: first.params.clone(),
        engines,
        records: all,
    };
    write_out(out, &text, &merged)
}
