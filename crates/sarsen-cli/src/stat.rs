//! `sarsen stat`: environment information and per-database statistics.

use std::process::ExitCode;

use sarsen::Stat;

use crate::open::DbPath;

/// Arguments of `sarsen stat`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    db: DbPath,
    /// Also list the reader table: pid, thread, snapshot txnid and lag of
    /// every claimed slot (as mdb_stat -r).
    #[arg(short, long)]
    readers: bool,
}

/// Prints the statistics.
pub fn run(a: &Args) -> Result<ExitCode, String> {
    let env = a.db.open()?;
    let info = env.info().map_err(|e| e.to_string())?;
    let g = &info.geometry;
    println!("Environment");
    println!("  page size: {} B", info.page_size);
    println!(
        "  geometry: lower {} B, now {} B, upper {} B, growth step {} B, shrink threshold {} B",
        g.lower, g.now, g.upper, g.growth_step, g.shrink_threshold
    );
    println!(
        "  pages used: {} ({} B)",
        info.next_pgno,
        info.next_pgno * u64::from(info.page_size)
    );
    println!("  pages free in the GC: {}", info.gc_pages);
    println!(
        "  free tail: {} pages ({} B) of the GC end the pages used",
        info.free_tail_pages,
        info.free_tail_pages * u64::from(info.page_size)
    );
    println!(
        "  last txnid: {}, durable txnid: {}",
        info.last_txnid, info.durable_txnid
    );
    println!(
        "  readers: {} used of {}",
        info.readers_used, info.max_readers
    );
    if a.readers {
        print_readers(&env)?;
    }
    let txn = env.read_txn().map_err(|e| e.to_string())?;
    let main = txn.stat(env.main_db()).map_err(|e| e.to_string())?;
    print_stat("main database", &main);
    for name in txn.list_dbs().map_err(|e| e.to_string())? {
        let db = txn
            .open_db(Some(&name))
            .map_err(|e| format!("{name}: {e}"))?
            .ok_or_else(|| format!("{name}: listed but not found"))?;
        let st = txn.stat(db).map_err(|e| format!("{name}: {e}"))?;
        print_stat(&format!("database {name:?}"), &st);
    }
    Ok(ExitCode::SUCCESS)
}

/// The reader table, one line per claimed slot (this command's own slot
/// is among them once it has read).
fn print_readers(env: &sarsen::Env) -> Result<(), String> {
    let readers = env.readers().map_err(|e| e.to_string())?;
    println!("Readers ({} slots claimed)", readers.len());
    println!(
        "  {:>10} {:>8} {:>20} {:>10}",
        "pid", "thread", "txnid", "lag"
    );
    for r in readers {
        let txnid = r.txnid.map_or("-".to_string(), |t| t.to_string());
        println!(
            "  {:>10} {:>8} {:>20} {:>10}",
            r.pid, r.thread, txnid, r.lag
        );
    }
    Ok(())
}

fn print_stat(title: &str, s: &Stat) {
    println!("{title}");
    println!("  depth: {}", s.depth);
    println!("  branch pages: {}", s.branch_pages);
    println!("  leaf pages: {}", s.leaf_pages);
    println!("  overflow pages: {}", s.overflow_pages);
    println!("  entries: {}", s.entries);
}
