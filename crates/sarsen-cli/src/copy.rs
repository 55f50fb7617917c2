//! `sarsen copy`: a hot backup of a live database (LMDB's `mdb_copy`).

use std::path::PathBuf;
use std::process::ExitCode;

use crate::open::DbPath;

/// Arguments of `sarsen copy`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    db: DbPath,
    /// Directory to write the copy into (created if missing; it must not
    /// hold a database already).
    dest: PathBuf,
    /// Rewrite every database in key order into full pages and leave free
    /// pages out (mdb_copy -c); the copy starts at a new txnid.
    #[arg(short, long)]
    compact: bool,
}

/// Copies the newest snapshot of the database while writers go on.
pub fn run(a: &Args) -> Result<ExitCode, String> {
    let env = a.db.open()?;
    let progress = crate::progress::Progress::busy("copying");
    let info = if a.compact {
        env.compact_copy_to(&a.dest)
    } else {
        env.copy_to(&a.dest)
    }
    .map_err(|e| format!("copy to {}: {e}", a.dest.display()));
    progress.finish();
    let info = info?;
    println!(
        "copied txnid {} to {}: {} bytes",
        info.txnid,
        a.dest.display(),
        info.bytes
    );
    Ok(ExitCode::SUCCESS)
}
