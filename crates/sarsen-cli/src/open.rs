//! Opening a database for the tools: read-only for those that only read,
//! read-write for `load` (which may create it) and `drop`.

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
    /// Read without the lock file (EnvOptions::no_lock, LMDB's
    /// MDB_NOLOCK): for a database no process writes, whose lock file this
    /// user may not write. Read-only subcommands only.
    #[arg(long)]
    pub no_lock: bool,
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
            .no_lock(self.no_lock)
            .single_file(self.single_file)
            .max_dbs(MAX_DBS);
        self.open_with(&o)
    }

    /// Opens the database for writing. With `create` a missing database is
    /// created (and its directory), with `page_size` if given (an existing
    /// file keeps its own); without it a missing database is an error.
    ///
    /// Errors: no database at the path when `create` is false; those of
    /// [`EnvOptions::open`], with the path.
    pub fn open_rw(&self, create: bool, page_size: Option<u32>) -> Result<Env, String> {
        let data = if self.single_file {
            self.path.clone()
        } else {
            self.path.join("data.sdb")
        };
        if self.no_lock {
            return Err("--no-lock is only for the read-only subcommands".into());
        }
        if !create && !data.is_file() {
            return Err(format!("{}: no database there", self.path.display()));
        }
        let mut o = EnvOptions::new()
            .single_file(self.single_file)
            .max_dbs(MAX_DBS);
        if let Some(ps) = page_size {
            o = o.page_size(ps);
        }
        self.open_with(&o)
    }

    /// Opens the database at the path with `o`, the one place the tools
    /// map a file.
    fn open_with(&self, o: &EnvOptions) -> Result<Env, String> {
        // SAFETY: the tools read and write only through Sarsen; the caller
        // (the operator) promises that no program truncates or rewrites the
        // file behind Sarsen's back, the same promise every Sarsen user makes.
        unsafe { o.open(&self.path) }.map_err(|e| format!("{}: {e}", self.path.display()))
    }
}
