//! `sarsen load`: reads the text of `mdb_dump` or `sarsen dump` (see
//! [`crate::text`]) into a database, creating it if missing.
//!
//! Each section is loaded in one write transaction, committed at its
//! `DATA=END`: a section that fails (a bad line, a key already present
//! under `-n`, the end of the input before `DATA=END`) leaves nothing of
//! itself, and the sections before it stay loaded. `--commit-every N`
//! commits every N entries instead, for loads larger than memory (a write
//! transaction keeps the pages it changed in memory until it commits).
//!
//! A section's header flags ([`DbFlags`]) say how its database sorts and
//! holds its data: `reversekey=1` is [`KeyOrder::ReverseBytewise`],
//! `integerkey=1` is [`KeyOrder::U32`] or [`KeyOrder::U64`] as the first
//! key is 4 bytes (LMDB's `unsigned int`) or 8 (`size_t`), and `dupsort=1`
//! makes a DUPSORT database ([`DbOptions::dup_sort`]) whose values are
//! bytewise, reversed (`reversedup=1`) or integers (`integerdup=1`, sized
//! by the first value), with `dupfixed=1` [`DbOptions::dup_fixed`]. An
//! empty section with an integer flag takes an existing database's integer
//! size, or 8 bytes. Every later key (value) must have the first one's
//! integer size. A database that exists already must have the modes the
//! header gives (no flag: bytewise keys, no duplicates), else the section
//! fails naming both. `-T` input has no header: it goes into the database
//! as it is, or a new plain one.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::PathBuf;
use std::process::ExitCode;

use sarsen::{Database, DbOptions, Env, KeyOrder, RwTxn};

use crate::open::DbPath;
use crate::text::{show_key, DbFlags, ParseError, Reader};

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
    /// (with --commit-every, nothing since the last commit). In a DUPSORT
    /// database (dupsort=1), at a key and value pair already present.
    /// mdb_load -N skips such keys instead.
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
    load_db(&env, a, a.name.as_deref(), None, None, |k, v| {
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
        load_db(env, a, name, line, Some(&h.flags), |k, v| {
            reader.pair(format, k, v)
        })?;
    }
    if env.is_none() {
        a.db.open_rw(true, None).map_err(Stop::Failed)?;
    }
    Ok(())
}

/// Puts the pairs `next` yields (each with its key's line number) into
/// database `name` (the main one for `None`), created if missing in the
/// modes `flags` give (see the module's comment; `None`: as it is, or
/// plain); `name_line` is the line that named it, for errors.
fn load_db(
    env: &Env,
    a: &Args,
    name: Option<&str>,
    name_line: Option<u64>,
    flags: Option<&DbFlags>,
    mut next: impl FnMut(&mut Vec<u8>, &mut Vec<u8>) -> Result<Option<u64>, ParseError>,
) -> Result<(), Stop> {
    let what = match name {
        Some(n) => format!("database {n:?}"),
        None => "the main database".to_owned(),
    };
    let at = |line: Option<u64>, msg: String| {
        Stop::Failed(match line {
            Some(l) => format!("line {l}: {what}: {msg}"),
            None => format!("{what}: {msg}"),
        })
    };
    let failed = |line: Option<u64>, e: sarsen::Error| at(line, e.to_string());
    let mut txn = env.write_txn().map_err(|e| failed(None, e))?;
    let (mut key, mut value) = (Vec::new(), Vec::new());
    // The first pair, read before the database is created: an integer
    // flag takes its size from it.
    let mut pending = next(&mut key, &mut value)?;
    let first = pending.map(|l| (l, key.len(), value.len()));
    let (db, sizes) = match flags {
        None => (
            txn.create_db(name).map_err(|e| failed(name_line, e))?,
            Sizes::default(),
        ),
        Some(f) => create_in_modes(&mut txn, name, f, first)
            .map_err(|(line, msg)| at(line.or(name_line), msg))?,
    };
    let dups = txn
        .dup_mode(db)
        .map_err(|e| failed(name_line, e))?
        .is_some();
    let mut batch = 0;
    let progress = crate::progress::Progress::new("load", "entries");
    while let Some(line) = pending {
        progress.inc();
        sizes
            .check(&key, &value)
            .map_err(|(off, msg)| at(Some(line + off), msg))?;
        let put = |txn: &mut RwTxn<'_>| txn.put(db, &key, &value).map(|()| true);
        // Whether the pair went in: under -n not if the key (in a DUPSORT
        // database, the pair) is present.
        let added = if !a.no_overwrite {
            put(&mut txn)
        } else if dups {
            txn.put_no_dup_data(db, &key, &value)
        } else {
            match txn.get(db, &key) {
                Ok(Some(_)) => Ok(false),
                Ok(None) => put(&mut txn),
                Err(e) => Err(e),
            }
        }
        .map_err(|e| failed(Some(line), e))?;
        if !added {
            let with = if dups {
                format!(" with value {}", show_key(&value))
            } else {
                String::new()
            };
            return Err(Stop::Exists(format!(
                "line {line}: key {}{with} already exists in {what}",
                show_key(&key)
            )));
        }
        batch += 1;
        if a.commit_every > 0 && batch == a.commit_every {
            txn.commit().map_err(|e| failed(Some(line), e))?;
            txn = env.write_txn().map_err(|e| failed(Some(line), e))?;
            batch = 0;
        }
        pending = next(&mut key, &mut value)?;
    }
    progress.finish();
    txn.commit().map_err(|e| failed(None, e))
}

/// The integer sizes a section's data must keep, set by its first key
/// (`integerkey=1`) and first value (`integerdup=1`).
#[derive(Default)]
struct Sizes {
    key: Option<usize>,
    value: Option<usize>,
}

impl Sizes {
    /// Checks a pair; on error the offset of the bad line from the key's
    /// (0 for the key, 1 for the value) and what is wrong.
    fn check(&self, key: &[u8], value: &[u8]) -> Result<(), (u64, String)> {
        let bad = |off, flag, what, len, n| {
            Err((
                off,
                format!(
                    "{flag}=1: a {what} of {len} bytes after a first {what} of {n}: \
                     integer {what}s are all 4 bytes (unsigned int) or all 8 (size_t)"
                ),
            ))
        };
        match (self.key, self.value) {
            (Some(n), _) if key.len() != n => bad(0, "integerkey", "key", key.len(), n),
            (_, Some(n)) if value.len() != n => bad(1, "integerdup", "value", value.len(), n),
            _ => Ok(()),
        }
    }
}

/// The integer order of an `integerkey` or `integerdup` database whose
/// first key (value) is `len` bytes, `None` for an empty section: then
/// `existing`'s integer order if it has one, else 8-byte integers.
///
/// Errors: a first key (value) of neither 4 nor 8 bytes.
fn integer_order(
    flag: &str,
    what: &str,
    len: Option<usize>,
    existing: Option<KeyOrder>,
) -> Result<KeyOrder, String> {
    match (len, existing) {
        (Some(4), _) | (None, Some(KeyOrder::U32)) => Ok(KeyOrder::U32),
        (Some(8), _) | (None, _) => Ok(KeyOrder::U64),
        (Some(n), _) => Err(format!(
            "{flag}=1 but the first {what} is {n} bytes: integer {what}s are 4 bytes \
             (unsigned int) or 8 (size_t)"
        )),
    }
}

/// Creates database `name` in the modes `f` gives, or opens it if it
/// exists with them; `first` is the section's first pair (its line, key
/// length, value length), `None` for an empty section. Returns the
/// handle and the integer sizes the data must keep.
///
/// Errors, with the line to blame if not the header's: a first key or
/// value of an integer flag that is neither 4 nor 8 bytes; an existing
/// database with another key order or duplicate mode (the engine's
/// [`sarsen::Error::KeyOrderMismatch`] and
/// [`sarsen::Error::DupModeMismatch`], or a DUPSORT database for a
/// header without `dupsort=1`); those of
/// [`RwTxn::create_db_with`].
fn create_in_modes(
    txn: &mut RwTxn<'_>,
    name: Option<&str>,
    f: &DbFlags,
    first: Option<(u64, usize, usize)>,
) -> Result<(Database, Sizes), (Option<u64>, String)> {
    let existing = if first.is_none() && (f.integerkey || f.integerdup) {
        existing_orders(txn, name).map_err(|e| (None, e.to_string()))?
    } else {
        (None, None)
    };
    let first_line = first.map(|p| p.0);
    let mut sizes = Sizes::default();
    let key_order = if f.reversekey {
        KeyOrder::ReverseBytewise
    } else if f.integerkey {
        let o = integer_order("integerkey", "key", first.map(|p| p.1), existing.0)
            .map_err(|m| (first_line, m))?;
        sizes.key = Some(if matches!(o, KeyOrder::U32) { 4 } else { 8 });
        o
    } else {
        KeyOrder::Bytewise
    };
    let mut opts = DbOptions::new().key_order(key_order);
    if f.dupsort {
        let order = if f.reversedup {
            KeyOrder::ReverseBytewise
        } else if f.integerdup {
            let o = integer_order("integerdup", "value", first.map(|p| p.2), existing.1)
                .map_err(|m| (first_line.map(|l| l + 1), m))?;
            sizes.value = Some(if matches!(o, KeyOrder::U32) { 4 } else { 8 });
            o
        } else {
            KeyOrder::Bytewise
        };
        opts = opts.dup_sort(order);
        if f.dupfixed {
            opts = opts.dup_fixed();
        }
    }
    let hint = "load it into another database (-s NAME) or drop it first";
    let db = txn.create_db_with(name, &opts).map_err(|e| {
        let msg = match &e {
            sarsen::Error::KeyOrderMismatch {
                recorded, given, ..
            } => {
                format!("exists with key order {recorded}, but the header asks for {given}: {hint}")
            }
            sarsen::Error::DupModeMismatch {
                recorded, given, ..
            } => format!(
                "exists with duplicate mode {recorded}, but the header asks for {given}: {hint}"
            ),
            _ => e.to_string(),
        };
        (None, msg)
    })?;
    if !f.dupsort
        && txn
            .dup_mode(db)
            .map_err(|e| (None, e.to_string()))?
            .is_some()
    {
        return Err((
            None,
            format!(
                "exists with sorted duplicates (DUPSORT), but the header has no dupsort=1: {hint}"
            ),
        ));
    }
    Ok((db, sizes))
}

/// The key order and the order of the values of database `name` if it
/// exists (`None` for what it does not have).
fn existing_orders(
    txn: &mut RwTxn<'_>,
    name: Option<&str>,
) -> sarsen::Result<(Option<KeyOrder>, Option<KeyOrder>)> {
    let Some(db) = txn.open_db(name)? else {
        return Ok((None, None));
    };
    let dups = txn.dup_mode(db)?.map(|m| m.order);
    Ok((Some(txn.key_order(db)?), dups))
}
