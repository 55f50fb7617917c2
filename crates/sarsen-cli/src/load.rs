//! `sarsen load`: reads the text of `mdb_dump` or `sarsen dump` (see
//! [`crate::text`]) into a database, creating it if missing.
//!
//! Each section is loaded in one write transaction, committed at its
//! `DATA=END`: a section that fails (a bad line, a key already present
//! under `-n`, the end of the input before `DATA=END`) leaves nothing of
//! itself, and the sections before it stay loaded. `--commit-every N`
//! commits every N entries instead, for loads larger than memory (a write
//! transaction keeps the pages it changed in memory until it commits).

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::PathBuf;
use std::process::ExitCode;

use sarsen::Env;

use crate::open::DbPath;
use crate::text::{show_key, ParseError, Reader};

/// Arguments of `sarsen load`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    db: DbPath,
    /// Load into the named database NAME (created if missing), whatever
    /// the headers say; without it each section goes to the database its
    /// `database=` line names, or to the main database.
    #[arg(short = 's', long = "name", value_name = "NAME")]
    name: Option<String>,
    /// Read from FILE instead of standard input.
    #[arg(short, long, value_name = "FILE")]
    file: Option<PathBuf>,
    /// Plain text input (mdb_load -T): no header, key and value lines
    /// alternate, printable ASCII as is, `\\` for a backslash and `\xx`
    /// (two hex digits) for any byte.
    #[arg(short = 'T', long = "text")]
    text: bool,
    /// Stop with exit code 1 at a key already present (in the database or
    /// earlier in the input), naming it; nothing of its section is loaded
    /// (with --commit-every, nothing since the last commit). mdb_load -N
    /// skips such keys instead.
    #[arg(short = 'n', long)]
    no_overwrite: bool,
    /// Commit every N entries instead of once per section (0: once per
    /// section).
    #[arg(long, value_name = "N", default_value_t = 0)]
    commit_every: u64,
}

/// Why a load stopped before the end of its input.
enum Stop {
    /// A key was already present under `-n`: exit code 1.
    Exists(String),
    /// Bad input, or a database that could not be opened or written: exit
    /// code 2.
    Failed(String),
}

impl From<ParseError> for Stop {
    fn from(e: ParseError) -> Stop {
        Stop::Failed(e.to_string())
    }
}

/// Loads the input; exit code 1 for a key already present under `-n`.
pub fn run(a: &Args) -> Result<ExitCode, String> {
    let input: Box<dyn BufRead> = match &a.file {
        Some(f) => {
            let file = File::open(f).map_err(|e| format!("{}: {e}", f.display()))?;
            Box::new(BufReader::with_capacity(1 << 16, file))
        }
        None => Box::new(io::stdin().lock()),
    };
    let mut reader = Reader::new(input);
    let r = if a.text {
        load_plain(a, &mut reader)
    } else {
        load_sections(a, &mut reader)
    };
    match r {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(Stop::Exists(msg)) => {
            eprintln!("sarsen: {msg}");
            Ok(ExitCode::from(1))
        }
        Err(Stop::Failed(msg)) => Err(msg),
    }
}

/// `-T`: one run of key and value lines into `-s NAME` or the main database.
fn load_plain<R: BufRead>(a: &Args, reader: &mut Reader<R>) -> Result<(), Stop> {
    let env = a.db.open_rw(true, None).map_err(Stop::Failed)?;
    load_db(&env, a, a.name.as_deref(), None, |k, v| {
        reader.plain_pair(k, v)
    })
}

/// Every section of a dump, each into its database. The environment is
/// created with the first header's `db_pagesize` if it is missing.
fn load_sections<R: BufRead>(a: &Args, reader: &mut Reader<R>) -> Result<(), Stop> {
    let mut env: Option<Env> = None;
    while let Some(h) = reader.header()? {
        for (line, keyword) in &h.ignored {
            eprintln!("sarsen: line {line}: unrecognized keyword ignored: {keyword}");
        }
        if env.is_none() {
            env = Some(a.db.open_rw(true, h.page_size).map_err(Stop::Failed)?);
        }
        let Some(env) = env.as_ref() else {
            continue;
        };
        let (name, line) = match (&a.name, &h.database) {
            (Some(n), _) => (Some(n.as_str()), None),
            (None, Some((n, l))) => (Some(n.as_str()), Some(*l)),
            (None, None) => (None, None),
        };
        let format = h.format();
        load_db(env, a, name, line, |k, v| reader.pair(format, k, v))?;
    }
    if env.is_none() {
        a.db.open_rw(true, None).map_err(Stop::Failed)?;
    }
    Ok(())
}

/// Puts the pairs `next` yields (each with its key's line number) into
/// database `name` (the main one for `None`), created if missing;
/// `name_line` is the line that named it, for errors.
fn load_db(
    env: &Env,
    a: &Args,
    name: Option<&str>,
    name_line: Option<u64>,
    mut next: impl FnMut(&mut Vec<u8>, &mut Vec<u8>) -> Result<Option<u64>, ParseError>,
) -> Result<(), Stop> {
    let what = match name {
        Some(n) => format!("database {n:?}"),
        None => "the main database".to_owned(),
    };
    let failed = |line: Option<u64>, e: sarsen::Error| {
        Stop::Failed(match line {
            Some(l) => format!("line {l}: {what}: {e}"),
            None => format!("{what}: {e}"),
        })
    };
    let mut txn = env.write_txn().map_err(|e| failed(None, e))?;
    let db = txn.create_db(name).map_err(|e| failed(name_line, e))?;
    let (mut key, mut value) = (Vec::new(), Vec::new());
    let mut batch = 0;
    let progress = crate::progress::Progress::new("load", "entries");
    while let Some(line) = next(&mut key, &mut value)? {
        progress.inc();
        if a.no_overwrite
            && txn
                .get(db, &key)
                .map_err(|e| failed(Some(line), e))?
                .is_some()
        {
            return Err(Stop::Exists(format!(
                "line {line}: key {} already exists in {what}",
                show_key(&key)
            )));
        }
        txn.put(db, &key, &value)
            .map_err(|e| failed(Some(line), e))?;
        batch += 1;
        if a.commit_every > 0 && batch == a.commit_every {
            txn.commit().map_err(|e| failed(Some(line), e))?;
            txn = env.write_txn().map_err(|e| failed(Some(line), e))?;
            batch = 0;
        }
    }
    progress.finish();
    txn.commit().map_err(|e| failed(None, e))
}
