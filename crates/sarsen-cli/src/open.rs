//! Opening a database for the tools: read-only, any page size.

use std::path::PathBuf;

use sarsen::{Env, EnvOptions};

/// Where the database is, shared by every subcommand.
#[derive(clap::Args, Debug)]
pub struct DbPath {
    /// The database: a directory holding data.sdb and lock.sdb, or with
    /// --single-file the data file itself.
    pub path: PathBuf,
    /// PATH is the data file (EnvOptions::single_file).
    #[arg(long)]
    pub single_file: bool,
}

/// Named databases a tool can open at once.
const MAX_DBS: u32 = 10_000;

impl DbPath {
    /// Opens the database read-only.
    ///
    /// Errors: those of [`EnvOptions::open`], with the path.
    pub fn open(&self) -> Result<Env, String> {
        let o = EnvOptions::new()
            .read_only(true)
            .single_file(self.single_file)
            .max_dbs(MAX_DBS);
        // SAFETY: the tools only read; the caller (the operator) promises that
        // no program truncates or rewrites the file behind Sarsen's back, the
        // same promise every Sarsen user makes.
        unsafe { o.open(&self.path) }.map_err(|e| format!("{}: {e}", self.path.display()))
    }
}
