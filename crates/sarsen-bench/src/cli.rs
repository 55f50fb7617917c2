//! Command-line flags, named and defaulted as in LevelDB/RocksDB `db_bench`.

use std::path::PathBuf;

use clap::{ArgAction, CommandFactory, Parser, Subcommand};
use serde::{Deserialize, Serialize};

use crate::data::KeyFormat;
use crate::engines::{EngineKind, MergeOperator};
use crate::workload::Workload;

/// Benchmark Sarsen against its peers with db_bench workloads, one child process per
/// (engine, workload) so that CPU time, RSS and context switches are each engine's own.
#[derive(Parser, Debug, Clone)]
#[command(name = "sarsen-bench", version, about, long_about = None, args_override_self = true)]
pub struct Cli {
    /// Comma-separated workloads, run in order.
    #[arg(
        long = "benchmarks",
        value_delimiter = ',',
        default_value = "fillseq,fillrandom,overwrite,readrandom,readseq,readreverse,\
                         readwhilewriting,updaterandom,deleterandom,fillsync"
    )]
    pub benchmarks: Vec<Workload>,

    /// Comma-separated engines; each workload runs on each engine in this order.
    /// Peers other than LMDB need their cargo feature (see the README).
    #[arg(long = "engines", value_delimiter = ',', default_value = DEFAULT_ENGINES)]
    pub engines: Vec<EngineKind>,

    /// Number of keys (key indexes are 0..num).
    #[arg(long = "num", default_value_t = 1_000_000,
          value_parser = clap::value_parser!(u64).range(1..=4_000_000_000))]
    pub num: u64,

    /// Reads per reader thread in readrandom and readwhilewriting (default: num).
    #[arg(long = "reads", value_parser = clap::value_parser!(u64).range(1..))]
    pub reads: Option<u64>,

    /// Operations of overwrite, updaterandom, mergerandom and deleterandom, shared
    /// by their writer threads (default: num).
    #[arg(long = "writes", value_parser = clap::value_parser!(u64).range(1..))]
    pub writes: Option<u64>,

    /// Key length in bytes: the key index as zero-padded decimal (`%016d` at 16).
    #[arg(long = "key_size", default_value_t = 16,
          value_parser = clap::value_parser!(u16).range(1..=511))]
    pub key_size: u16,

    /// Value length in bytes (random bytes from a seeded generator; 8-byte values
    /// are counters for updaterandom and mergerandom).
    #[arg(long = "value_size", default_value_t = 100,
          value_parser = clap::value_parser!(u32).range(0..=(1 << 24)))]
    pub value_size: u32,

    /// Comma-separated thread counts: readers for readrandom and readwhilewriting,
    /// writers for overwrite/updaterandom/mergerandom/deleterandom (on engines that
    /// allow concurrent writers), and fillsync's writer threads (on every engine,
    /// each committing its own one-put durable transactions). Threaded workloads
    /// run once per count.
    #[arg(long = "threads", value_delimiter = ',', default_value = "1",
          value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub threads: Vec<u16>,

    /// Writes per transaction (or write batch) in fills and writing workloads.
    #[arg(long = "batch", default_value_t = 1000,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub batch: u32,

    /// Gets per read transaction in readrandom and readwhilewriting (1: one read
    /// transaction per get, as db_bench).
    #[arg(long = "read_batch", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub read_batch: u32,

    /// Directory for the databases (one subdirectory per engine); default: a fresh
    /// temporary directory under /tmp, removed at exit. A given directory must be empty
    /// or one that sarsen-bench used before.
    #[arg(long = "db")]
    pub db: Option<PathBuf>,

    /// Reuse the databases a previous run left in `--db` (with the same num, sizes and
    /// seed) instead of loading new ones for workloads that read.
    #[arg(long = "use_existing_db", default_value_t = false, num_args = 0..=1,
          default_missing_value = "true", action = ArgAction::Set, value_parser = parse_flag)]
    pub use_existing_db: bool,

    /// Make every write workload durable (one fsync'd commit per transaction);
    /// fillsync always is.
    #[arg(long = "sync", default_value_t = false, num_args = 0..=1,
          default_missing_value = "true", action = ArgAction::Set, value_parser = parse_flag)]
    pub sync: bool,

    /// Seed of every random generator (values, key orders, reads).
    #[arg(long = "seed", default_value_t = 301)]
    pub seed: u64,

    /// Seconds each reader runs in readrandom and readwhilewriting; 0 = count based.
    #[arg(long = "duration", default_value_t = 0)]
    pub duration: u64,

    /// Rate limit of the readwhilewriting writer in writes per second; 0 = unlimited.
    #[arg(long = "writes_per_second", default_value_t = 0)]
    pub writes_per_second: u64,

    /// Merge operator for mergerandom (RocksDB's names); mergerandom implies uint64add.
    #[arg(long = "merge_operator", value_enum)]
    pub merge_operator: Option<MergeOperator>,

    /// Block cache bytes for engines that have one (RocksDB, LevelDB, fjall, redb,
    /// sled, Berkeley DB, WiredTiger); the same budget for all.
    #[arg(long = "cache_size", default_value_t = 4 << 30)]
    pub cache_size: u64,

    /// WiredTiger: use its LSM tree (`lsm:` object) instead of its B-tree, as the
    /// `--use_lsm` of Symas' WiredTiger driver; its tables are labelled
    /// `wiredtiger-lsm`.
    #[arg(long = "wt_lsm", default_value_t = false, num_args = 0..=1,
          default_missing_value = "true", action = ArgAction::Set, value_parser = parse_flag)]
    pub wt_lsm: bool,

    /// Sarsen and LMDB (and sarsen-capi) write through a writable map
    /// (`true`, as Symas' reports run LMDB) or, with `false`, through `pwrite` of
    /// private dirty pages, each engine's default mode; their tables are labelled
    /// `ENGINE-pwrite`.
    #[arg(long = "write_map", default_value_t = true, num_args = 0..=1,
          default_missing_value = "true", action = ArgAction::Set, value_parser = parse_flag)]
    pub write_map: bool,

    /// Comma-separated allocators: re-run every engine's child with each preloaded
    /// (LD_PRELOAD of Debian's libjemalloc2 or libtcmalloc-minimal4; glibc = none).
    #[arg(long = "malloc", value_delimiter = ',', value_enum)]
    pub malloc: Vec<Allocator>,

    /// Run every step this many times, round the engines (run 1 of each, then
    /// run 2 of each); tables show the run with the median rate, and the JSON
    /// has every run.
    #[arg(long = "repeat", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,

    /// Write every record (engine x workload, all columns) as JSON to FILE.
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Write the report (report.md), the JSON (results.json) and SVG charts into DIR.
    #[arg(long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Run every workload on tiny data for every engine and verify the results
    /// instead of benchmarking; exits non-zero on any mismatch.
    #[arg(long = "check")]
    pub check: bool,

    /// Internal: run one (engine, workload) in this process.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The default `--engines`: Sarsen, LMDB, and every peer this binary was built with
/// of libmdbx and redb (the README's default comparison).
#[cfg(all(feature = "libmdbx", feature = "redb"))]
const DEFAULT_ENGINES: &str = "sarsen,lmdb,libmdbx,redb";
#[cfg(all(feature = "libmdbx", not(feature = "redb")))]
const DEFAULT_ENGINES: &str = "sarsen,lmdb,libmdbx";
#[cfg(all(not(feature = "libmdbx"), feature = "redb"))]
const DEFAULT_ENGINES: &str = "sarsen,lmdb,redb";
#[cfg(all(not(feature = "libmdbx"), not(feature = "redb")))]
const DEFAULT_ENGINES: &str = "sarsen,lmdb";

/// Parses db_bench-style boolean flags: `1`/`0`, `true`/`false`.
fn parse_flag(s: &str) -> Result<bool, String> {
    match s {
        "1" | "true" => Ok(true),
        "0" | "false" => Ok(false),
        _ => Err(format!("expected 1, 0, true or false, not {s:?}")),
    }
}

/// A memory allocator for the child processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Allocator {
    /// glibc's malloc (nothing preloaded).
    Glibc,
    /// jemalloc, Debian's libjemalloc2.
    Jemalloc,
    /// tcmalloc, Debian's libtcmalloc-minimal4.
    Tcmalloc,
}

impl Allocator {
    /// Name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Allocator::Glibc => "glibc",
            Allocator::Jemalloc => "jemalloc",
            Allocator::Tcmalloc => "tcmalloc",
        }
    }

    /// The shared library to preload, and the Debian package that has it.
    pub fn library(self) -> Option<(&'static str, &'static str)> {
        match self {
            Allocator::Glibc => None,
            Allocator::Jemalloc => {
                Some(("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "libjemalloc2"))
            }
            Allocator::Tcmalloc => Some((
                "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4",
                "libtcmalloc-minimal4",
            )),
        }
    }
}

/// Subcommands (without one, sarsen-bench runs the benchmark).
#[derive(Subcommand, Debug, Clone)]
pub enum Command {
    /// Merge the JSON files of earlier runs (`--json` or `--out`) into one report:
    /// report.md with a table per workload (the median of repeated runs),
    /// results.json and SVG charts in `--out`.
    Report {
        /// Directory to write into (created if missing).
        #[arg(long = "out", value_name = "DIR")]
        out: PathBuf,
        /// JSON files written by sarsen-bench.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Run one measurement described by a JSON spec and print the result as JSON.
    #[command(name = "__child", hide = true)]
    Child {
        /// The JSON-encoded [`crate::exec::Spec`].
        spec: String,
    },
}

/// Workload parameters shared by the parent and its children.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Params {
    /// Number of keys.
    pub num: u64,
    /// Reads per reader thread.
    pub reads: u64,
    /// Operations of the writing workloads, over all writer threads.
    pub writes: u64,
    /// Key length in bytes.
    pub key_size: usize,
    /// Value length in bytes.
    pub value_size: usize,
    /// Reader threads, or writer threads (of engines with concurrent writers; of
    /// every engine for fillsync), of this step.
    pub threads: usize,
    /// Writes per transaction.
    pub batch: usize,
    /// Gets per read transaction.
    pub read_batch: usize,
    /// Random seed.
    pub seed: u64,
    /// Reader run time in seconds (0 = count based).
    pub duration: u64,
    /// Rate limit of the readwhilewriting writer (0 = none).
    pub writes_per_second: u64,
    /// Durable commits for every write workload.
    pub sync: bool,
    /// Merge operator engines are opened with.
    pub merge_operator: Option<MergeOperator>,
    /// Block cache budget in bytes.
    pub cache_bytes: u64,
    /// WiredTiger uses its LSM tree (`--wt_lsm`).
    #[serde(default)]
    pub wt_lsm: bool,
    /// Map engines write through a writable map (`--write_map`).
    #[serde(default = "yes")]
    pub write_map: bool,
}

/// Serde's default for flags that default to true.
fn yes() -> bool {
    true
}

impl Params {
    /// Whether values are 8-byte little-endian counters (updaterandom adds 1).
    pub fn counters(&self) -> bool {
        self.value_size == 8
    }
}

impl Cli {
    /// The workload parameters (with the first `--threads` count), after validating
    /// combinations clap cannot check. Exits with a usage error when they are
    /// inconsistent.
    pub fn params(&self) -> Params {
        let key_size = usize::from(self.key_size);
        let needed = KeyFormat::digits_needed(self.num - 1);
        if key_size < needed {
            usage(format!(
                "--key_size {key_size} cannot hold {needed}-digit key indexes of --num {}",
                self.num
            ));
        }
        if self.benchmarks.is_empty() || self.engines.is_empty() || self.threads.is_empty() {
            usage("--benchmarks, --engines and --threads must not be empty".into());
        }
        let merging = self.benchmarks.contains(&Workload::MergeRandom);
        if merging && self.value_size != 8 {
            usage("mergerandom works on 8-byte counters: pass --value_size=8".into());
        }
        Params {
            num: self.num,
            reads: self.reads.unwrap_or(self.num),
            writes: self.writes.unwrap_or(self.num),
            key_size,
            value_size: self.value_size as usize,
            threads: usize::from(self.threads[0]),
            batch: self.batch as usize,
            read_batch: self.read_batch as usize,
            seed: self.seed,
            duration: self.duration,
            writes_per_second: self.writes_per_second,
            sync: self.sync,
            merge_operator: self
                .merge_operator
                .or(merging.then_some(MergeOperator::Uint64Add)),
            cache_bytes: self.cache_size,
            wt_lsm: self.wt_lsm,
            write_map: self.write_map,
        }
    }

    /// The allocators to run each engine with: `--malloc`, or the default (none
    /// preloaded, unlabelled).
    pub fn allocators(&self) -> Vec<Option<Allocator>> {
        if self.malloc.is_empty() {
            vec![None]
        } else {
            let mut out = Vec::new();
            for &a in &self.malloc {
                if !out.contains(&Some(a)) {
                    out.push(Some(a));
                }
            }
            out
        }
    }
}

/// Exits with a clap-style usage error.
fn usage(msg: String) -> ! {
    Cli::command()
        .error(clap::error::ErrorKind::ValueValidation, msg)
        .exit()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("sarsen-bench").chain(args.iter().copied()))
            .expect("valid arguments")
    }

    #[test]
    fn db_bench_style_flags_parse() {
        let c = parse(&[
            "--sync",
            "--use_existing_db=0",
            "--threads=1,2,4",
            "--writes=10",
        ]);
        assert!(c.sync && !c.use_existing_db);
        assert_eq!(c.threads, [1, 2, 4]);
        let p = c.params();
        assert_eq!((p.threads, p.writes, p.reads), (1, 10, 1_000_000));
        for (arg, want) in [
            ("--sync=1", true),
            ("--sync=true", true),
            ("--sync=0", false),
        ] {
            assert_eq!(parse(&[arg]).sync, want, "{arg}");
        }
        assert!(Cli::try_parse_from(["sarsen-bench", "--sync=yes"]).is_err());
        // A later flag overrides an earlier one, as in db_bench and scripts that
        // append their own arguments.
        assert_eq!(parse(&["--num=5", "--num=7"]).num, 7);
    }

    #[test]
    fn mergerandom_implies_uint64add_and_counters() {
        let p = parse(&["--benchmarks=mergerandom", "--value_size=8"]).params();
        assert_eq!(p.merge_operator, Some(MergeOperator::Uint64Add));
        assert!(p.counters());
        let p = parse(&["--benchmarks=fillrandom"]).params();
        assert_eq!(p.merge_operator, None);
        assert!(!p.counters());
    }

    #[test]
    fn allocators_default_to_none_and_drop_repeats() {
        assert_eq!(parse(&[]).allocators(), [None]);
        assert_eq!(
            parse(&["--malloc=jemalloc,glibc,jemalloc"]).allocators(),
            [Some(Allocator::Jemalloc), Some(Allocator::Glibc)]
        );
        assert!(Allocator::Glibc.library().is_none());
        assert!(Allocator::Tcmalloc
            .library()
            .is_some_and(|(lib, pkg)| lib.contains("tcmalloc") && pkg.contains("tcmalloc")));
    }
}
