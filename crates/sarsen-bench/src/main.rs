//! `sarsen-bench`: db_bench-style benchmarks of Sarsen against its peers (LMDB,
//! libmdbx, redb, fjall, sled, RocksDB, LevelDB, Berkeley DB, WiredTiger), each
//! (engine, workload) in its own child process.
//!
//! See `cargo run --release -p sarsen-bench -- --help`, and `/work/shared/BENCHMARKS.md`
//! for the workloads and columns.

mod chart;
mod check;
mod cli;
mod data;
mod engines;
mod exec;
mod latency;
mod proc;
mod progress;
mod report;
mod runner;
mod store;
mod workload;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

fn main() -> ExitCode {
    // SAFETY: called first, before any thread exists; restores the default SIGPIPE
    // action (Rust ignores it), so that `sarsen-bench | head` ends quietly instead of
    // panicking on a closed stdout.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let cli = Cli::parse();
    match &cli.command {
        Some(Command::Child { spec }) => child_main(spec),
        Some(Command::Report { out, files }) => match report::merge_reports(files, out) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("sarsen-bench report: {e}");
                ExitCode::FAILURE
            }
        },
        None if cli.check => check::check(&cli),
        None => runner::bench(&cli),
    }
}

/// The hidden `__child` subcommand: runs one spec and prints its measurement as JSON.
fn child_main(spec: &str) -> ExitCode {
    let spec: exec::Spec = match serde_json::from_str(spec) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("sarsen-bench __child: bad spec: {e}");
            return ExitCode::from(2);
        }
    };
    match exec::run_spec(&spec) {
        Ok(m) => match serde_json::to_string(&m) {
            Ok(json) => {
                println!("{json}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("sarsen-bench __child: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            eprintln!(
                "sarsen-bench: {} on {}: {e}",
                spec.workload.name(),
                spec.engine.name()
            );
            ExitCode::FAILURE
        }
    }
}
