//! `sarsen check`: the integrity check of `Env::check`, printed.

use std::process::ExitCode;

use crate::open::DbPath;

/// Arguments of `sarsen check`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    db: DbPath,
    /// Print only the problems (and nothing when there are none).
    #[arg(short, long)]
    quiet: bool,
}

/// Runs the check; exit code 1 if it found problems.
pub fn run(a: &Args) -> Result<ExitCode, String> {
    let env = a.db.open()?;
    let progress = crate::progress::Progress::busy("checking");
    let r = env.check().map_err(|e| e.to_string());
    progress.finish();
    let r = r?;
    if !a.quiet {
        println!(
            "txnid {}, page size {} B, {} pages: {} in trees, {} free, 3 meta",
            r.txnid, r.page_size, r.pages, r.tree_pages, r.free_pages
        );
        println!(
            "{:<24} {:>5} {:>10} {:>10} {:>10} {:>12}",
            "tree", "depth", "branch", "leaf", "overflow", "entries"
        );
        for t in &r.trees {
            println!(
                "{:<24} {:>5} {:>10} {:>10} {:>10} {:>12}",
                t.name, t.depth, t.branch_pages, t.leaf_pages, t.overflow_pages, t.entries
            );
        }
    }
    for p in &r.problems {
        println!("problem: {p}");
    }
    if r.problems_total > r.problems.len() as u64 {
        println!(
            "... and {} more",
            r.problems_total - r.problems.len() as u64
        );
    }
    if r.is_ok() {
        if !a.quiet {
            println!("no problems");
        }
        Ok(ExitCode::SUCCESS)
    } else {
        println!("{} problems", r.problems_total);
        Ok(ExitCode::from(1))
    }
}
