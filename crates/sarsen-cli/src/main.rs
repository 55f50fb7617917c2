//! `sarsen`: the operator's command for Sarsen databases, one subcommand per
//! module (LMDB's `mdb_stat`, libmdbx's `mdbx_chk`).
//!
//! Exit codes: 0 success; 1 `check` found problems; 2 a usage error or a
//! database that could not be opened or read.

mod check;
mod open;
mod stat;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Tools for Sarsen databases.
#[derive(Parser)]
#[command(name = "sarsen", version, about)]
struct Cli {
    #[command(subcommand)]
    cmd: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Verify every page, checksum, key order and the free-page accounting
    /// (as mdbx_chk). Exit code 1 if anything is wrong.
    Check(check::Args),
    /// Print the environment's geometry, txnids, readers and the statistics
    /// of every database (as mdb_stat -e -a).
    Stat(stat::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Command::Check(a) => check::run(&a),
        Command::Stat(a) => stat::run(&a),
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            eprintln!("sarsen: {e}");
            ExitCode::from(2)
        }
    }
}
