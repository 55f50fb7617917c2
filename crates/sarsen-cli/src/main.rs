//! `sarsen`: the operator's command for Sarsen databases, one subcommand per
//! module (LMDB's `mdb_stat`, `mdb_dump`, `mdb_load`, `mdb_drop`, `mdb_copy`;
//! libmdbx's `mdbx_chk`).
//!
//! Exit codes: 0 success; 1 `check` found problems, or `load -n` met a key
//! already present; 2 a usage error, bad input, or a database that could
//! not be opened, read or written.

mod check;
mod copy;
mod drop;
mod dump;
mod load;
mod open;
mod progress;
mod stat;
mod text;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Tools for Sarsen databases.
#[derive(Parser)]
#[command(name = "sarsen", version, about)]
struct Cli {
    #[command(subcommand)]
    cmd: Command,
}

/// The subcommands, one module each.
#[derive(Subcommand)]
enum Command {
    /// Verify every page, checksum, key order and the free-page accounting
    /// (as mdbx_chk). Exit code 1 if anything is wrong.
    Check(check::Args),
    /// Print the environment's geometry, txnids, readers and the statistics
    /// of every database (as mdb_stat -e -a).
    Stat(stat::Args),
    /// Write a database as text in the format of LMDB's mdb_dump
    /// (VERSION=3), for `sarsen load` or mdb_load.
    ///
    /// Its key order and duplicate mode go in the header as mdb_dump's flags (dupsort,
    /// dupfixed, integerdup, reversedup, integerkey, reversekey); a DUPSORT
    /// database writes every (key, value) pair.
    Dump(dump::Args),
    /// Read the text of mdb_dump or `sarsen dump` into a database, creating
    /// it if missing (as mdb_load). Exit code 1 if -n met a key already
    /// present.
    ///
    /// A new database gets the modes its header's flags give (integerkey
    /// and integerdup: 4- or 8-byte integers, as the first key and value
    /// are); an existing one must have them. In a DUPSORT database -n
    /// stops at a key and value pair already present.
    Load(load::Args),
    /// Empty a database, or delete a named one with -d (as mdb_drop).
    Drop(drop::Args),
    /// Write a consistent copy of a live database into a new directory
    /// (as mdb_copy; -c/--compact as mdb_copy -c).
    Copy(copy::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Command::Check(a) => check::run(&a),
        Command::Stat(a) => stat::run(&a),
        Command::Dump(a) => dump::run(&a),
        Command::Load(a) => load::run(&a),
        Command::Drop(a) => drop::run(&a),
        Command::Copy(a) => copy::run(&a),
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            eprintln!("sarsen: {e}");
            ExitCode::from(2)
        }
    }
}
