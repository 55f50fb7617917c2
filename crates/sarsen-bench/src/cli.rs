//! Command-line flags, named and defaulted as in LevelDB/RocksDB `db_bench`.

use std::path::PathBuf;

use clap::{CommandFactory, Parser, Subcommand};
use serde::{Deserialize, Serialize};

use crate::data::KeyFormat;
use crate::engines::EngineKind;
use crate::workload::Workload;

/// Benchmark Sarsen against its peers with db_bench workloads, one child process per
/// (engine, workload) so that CPU time, RSS and context switches are each engine's own.
#[derive(Parser, Debug, Clone)]
#[command(name = "sarsen-bench", version, about, long_about = None)]
pub struct Cli {
    /// Comma-separated workloads, run in order.
    #[arg(
        long = "benchmarks",
        value_delimiter = ',',
        default_value = "fillseq,fillrandom,readrandom,readseq,readwhilewriting,fillsync"
    )]
    pub benchmarks: Vec<Workload>,

    /// Comma-separated engines; each workload runs on each engine in this order.
    #[arg(long = "engines", value_delimiter = ',', default_value = "sarsen,lmdb")]
    pub engines: Vec<EngineKind>,

    /// Number of keys (key indexes are 0..num).
    #[arg(long = "num", default_value_t = 1_000_000,
          value_parser = clap::value_parser!(u64).range(1..=4_000_000_000))]
    pub num: u64,

    /// Reads per reader thread in readrandom and readwhilewriting (default: num).
    #[arg(long = "reads", value_parser = clap::value_parser!(u64).range(1..))]
    pub reads: Option<u64>,

    /// Key length in bytes: the key index as zero-padded decimal (`%016d` at 16).
    #[arg(long = "key_size", default_value_t = 16,
          value_parser = clap::value_parser!(u16).range(1..=511))]
    pub key_size: u16,

    /// Value length in bytes (random bytes from a seeded generator).
    #[arg(long = "value_size", default_value_t = 100,
          value_parser = clap::value_parser!(u32).range(0..=(1 << 24)))]
    pub value_size: u32,

    /// Reader threads for readrandom and readwhilewriting.
    #[arg(long = "threads", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub threads: u16,

    /// Writes per transaction in fillseq and fillrandom.
    #[arg(long = "batch", default_value_t = 1000,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub batch: u32,

    /// Directory for the databases (one subdirectory per engine); default: a fresh
    /// temporary directory under /tmp, removed at exit. A given directory must be empty
    /// or one that sarsen-bench used before.
    #[arg(long = "db")]
    pub db: Option<PathBuf>,

    /// Seed of every random generator (values, key orders, reads).
    #[arg(long = "seed", default_value_t = 301)]
    pub seed: u64,

    /// Seconds each reader runs in readrandom and readwhilewriting; 0 = count based.
    #[arg(long = "duration", default_value_t = 0)]
    pub duration: u64,

    /// Write every record (engine x workload, all columns) as JSON to FILE.
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Run every workload on tiny data for every engine and verify the results
    /// instead of benchmarking; exits non-zero on any mismatch.
    #[arg(long = "check")]
    pub check: bool,

    /// Internal: run one (engine, workload) in this process.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Hidden subcommands.
#[derive(Subcommand, Debug, Clone)]
pub enum Command {
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
    /// Key length in bytes.
    pub key_size: usize,
    /// Value length in bytes.
    pub value_size: usize,
    /// Reader threads.
    pub threads: usize,
    /// Writes per transaction in batched fills.
    pub batch: usize,
    /// Random seed.
    pub seed: u64,
    /// Reader run time in seconds (0 = count based).
    pub duration: u64,
}

impl Cli {
    /// The workload parameters, after validating combinations clap cannot check.
    /// Exits with a clap-style usage error when they are inconsistent.
    pub fn params(&self) -> Params {
        let key_size = usize::from(self.key_size);
        let needed = KeyFormat::digits_needed(self.num - 1);
        if key_size < needed {
            Cli::command()
                .error(
                    clap::error::ErrorKind::ValueValidation,
                    format!(
                        "--key_size {key_size} cannot hold {needed}-digit key indexes of --num {}",
                        self.num
                    ),
                )
                .exit();
        }
        if self.benchmarks.is_empty() || self.engines.is_empty() {
            Cli::command()
                .error(
                    clap::error::ErrorKind::ValueValidation,
                    "--benchmarks and --engines must not be empty",
                )
                .exit();
        }
        Params {
            num: self.num,
            reads: self.reads.unwrap_or(self.num),
            key_size,
            value_size: self.value_size as usize,
            threads: usize::from(self.threads),
            batch: self.batch as usize,
            seed: self.seed,
            duration: self.duration,
        }
    }
}
