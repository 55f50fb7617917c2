//! `sarsen dump`: the databases as text in the format of LMDB's `mdb_dump`
//! (see [`crate::text`]), for `sarsen load` or `mdb_load`.
//!
//! A database's key order and duplicate mode go into its header as the
//! flags `mdb_dump` writes for them ([`DbFlags`]): `reversekey=1` for
//! [`KeyOrder::ReverseBytewise`], `integerkey=1` for [`KeyOrder::U32`] and
//! [`KeyOrder::U64`] (the key size tells them apart), and for a DUPSORT
//! database `duplicates=1`, `dupsort=1` and `dupfixed=1`, `integerdup=1`
//! or `reversedup=1` as its [`sarsen::DupMode`] says. A DUPSORT database
//! writes every (key, value) pair, values in order within each key, as
//! `mdb_dump` does.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use sarsen::{Database, Env, KeyOrder, RoTxn};

use crate::open::DbPath;
use crate::text::{self, DbFlags, DumpHeader, Format};

/// Arguments of `sarsen dump`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    db: DbPath,
    /// Dump the main database and then every named database, one section
    /// each (mdb_dump -a). The main database's section is left out when it
    /// is empty and named databases exist, as mdb_dump -a leaves it out.
    #[arg(short, long, conflicts_with = "name")]
    all: bool,
    /// Dump the named database NAME instead of the main database.
    #[arg(short = 's', long = "name", value_name = "NAME")]
    name: Option<String>,
    /// Write printable ASCII as is and escape other bytes (format=print)
    /// instead of writing every byte as two hex digits (format=bytevalue).
    #[arg(short, long)]
    print: bool,
    /// Write to FILE instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    file: Option<PathBuf>,
}

/// Writes the dump; every error (open, read, write) is exit code 2.
pub fn run(a: &Args) -> Result<ExitCode, String> {
    let env = a.db.open()?;
    let txn = env.read_txn().map_err(|e| e.to_string())?;
    let sections = sections(&env, &txn, a)?;
    if let Some(n) = sections
        .iter()
        .flat_map(|s| &s.0)
        .find(|n| n.contains('\n'))
    {
        return Err(format!(
            "database {n:?}: a name with a newline cannot be written in this format"
        ));
    }
    let out: Box<dyn Write> = match &a.file {
        Some(f) => Box::new(File::create(f).map_err(|e| format!("{}: {e}", f.display()))?),
        None => Box::new(io::stdout().lock()),
    };
    let mut out = BufWriter::with_capacity(1 << 16, out);
    let format = if a.print {
        Format::Print
    } else {
        Format::Bytevalue
    };
    let info = env.info().map_err(|e| e.to_string())?;
    for (name, db) in &sections {
        let what = |e: String| match name {
            Some(n) => format!("database {n:?}: {e}"),
            None => format!("main database: {e}"),
        };
        let header = DumpHeader {
            format,
            database: name.as_deref(),
            mapsize: info.geometry.upper,
            maxreaders: info.max_readers,
            page_size: info.page_size,
            flags: flags(&txn, *db).map_err(what)?,
        };
        dump_section(&txn, *db, &header, &mut out).map_err(what)?;
    }
    out.flush().map_err(|e| format!("writing output: {e}"))?;
    Ok(ExitCode::SUCCESS)
}

/// The databases to dump, in order: (name, handle), `None` for the main one.
fn sections(
    env: &Env,
    txn: &RoTxn<'_>,
    a: &Args,
) -> Result<Vec<(Option<String>, Database)>, String> {
    if let Some(name) = &a.name {
        let db = txn
            .open_db(Some(name))
            .map_err(|e| format!("database {name:?}: {e}"))?
            .ok_or_else(|| format!("database {name:?} not found"))?;
        return Ok(vec![(Some(name.clone()), db)]);
    }
    let mut out = vec![(None, env.main_db())];
    if !a.all {
        return Ok(out);
    }
    let names = txn.list_dbs().map_err(|e| e.to_string())?;
    let main_entries = txn.stat(env.main_db()).map_err(|e| e.to_string())?.entries;
    if main_entries == 0 && !names.is_empty() {
        out.clear();
    }
    for name in names {
        let db = txn
            .open_db(Some(&name))
            .map_err(|e| format!("database {name:?}: {e}"))?
            .ok_or_else(|| format!("database {name:?}: listed but not found"))?;
        out.push((Some(name), db));
    }
    Ok(out)
}

/// The header flags of `db`: its key order and duplicate mode as LMDB's
/// flags.
///
/// Errors: a user comparator for keys or values, which the format cannot
/// name (LMDB does not record comparators either).
fn flags(txn: &RoTxn<'_>, db: Database) -> Result<DbFlags, String> {
    let mut f = DbFlags::default();
    match txn.key_order(db).map_err(|e| e.to_string())? {
        KeyOrder::Bytewise => {}
        KeyOrder::ReverseBytewise => f.reversekey = true,
        KeyOrder::U32 | KeyOrder::U64 => f.integerkey = true,
        _ => return Err("keys in a user comparator's order cannot be dumped".to_owned()),
    }
    if let Some(mode) = txn.dup_mode(db).map_err(|e| e.to_string())? {
        f.dupsort = true;
        f.dupfixed = mode.fixed;
        match mode.order {
            KeyOrder::Bytewise => {}
            KeyOrder::ReverseBytewise => f.reversedup = true,
            KeyOrder::U32 | KeyOrder::U64 => f.integerdup = true,
            _ => return Err("values in a user comparator's order cannot be dumped".to_owned()),
        }
    }
    Ok(f)
}

/// Writes one section: header, key and value lines (every pair, a key once
/// for each of its values in a DUPSORT database), `DATA=END`.
fn dump_section(
    txn: &RoTxn<'_>,
    db: Database,
    header: &DumpHeader<'_>,
    out: &mut impl Write,
) -> Result<(), String> {
    let werr = |e: io::Error| format!("writing output: {e}");
    text::write_header(out, header).map_err(werr)?;
    let mut buf = Vec::new();
    let progress = crate::progress::Progress::new("dump", "entries");
    for entry in txn.iter(db).map_err(|e| e.to_string())? {
        let (k, v) = entry.map_err(|e| e.to_string())?;
        text::write_item(out, header.format, k, &mut buf).map_err(werr)?;
        text::write_item(out, header.format, v, &mut buf).map_err(werr)?;
        progress.inc();
    }
    progress.finish();
    out.write_all(b"DATA=END\n").map_err(werr)
}
