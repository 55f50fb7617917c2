//! `sarsen drop`: empties a database, or deletes a named one (LMDB's
//! `mdb_drop`).

use std::process::ExitCode;

use crate::open::DbPath;

/// Arguments of `sarsen drop`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    db: DbPath,
    /// The named database to empty or delete; without it the main database
    /// is emptied.
    #[arg(short = 's', long = "name", value_name = "NAME")]
    name: Option<String>,
    /// Delete the named database itself, not only its entries (mdb_drop -d).
    /// The main database can only be emptied, so this needs -s.
    #[arg(short, long, requires = "name")]
    delete: bool,
}

/// Empties or deletes the database in one write transaction.
pub fn run(a: &Args) -> Result<ExitCode, String> {
    let env = a.db.open_rw(false, None)?;
    let what = match &a.name {
        Some(n) => format!("database {n:?}"),
        None => "the main database".to_owned(),
    };
    let mut txn = env.write_txn().map_err(|e| e.to_string())?;
    let db = txn
        .open_db(a.name.as_deref())
        .map_err(|e| format!("{what}: {e}"))?
        .ok_or_else(|| format!("{what} not found"))?;
    if a.delete {
        txn.drop_db(db)
    } else {
        txn.clear_db(db)
    }
    .map_err(|e| format!("{what}: {e}"))?;
    txn.commit().map_err(|e| format!("{what}: {e}"))?;
    Ok(ExitCode::SUCCESS)
}
