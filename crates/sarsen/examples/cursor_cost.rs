//! Instruction counts of cursor loops, for callgrind (the harness's
//! retainrandom, popfront, readseq and readreverse, without its child
//! processes and its 1 TiB map, which valgrind cannot reserve):
//!
//! ```text
//! cargo build --release -p sarsen --example cursor_cost
//! valgrind --tool=callgrind --toggle-collect='cursor_cost::retain' \
//!     target/release/examples/cursor_cost retain 100000
//! valgrind --tool=callgrind --toggle-collect='cursor_cost::pop_front' \
//!     target/release/examples/cursor_cost popfront 100000
//! valgrind --tool=callgrind --toggle-collect='cursor_cost::scan' \
//!     target/release/examples/cursor_cost scan 100000     # or scanrev
//! ```
//!
//! Both load `n` keys (16-byte decimal keys, 100-byte values) in random order
//! first, as the harness's untimed fillrandom does. `retain` walks every key in
//! one write transaction and deletes about half of them through the cursor;
//! `popfront` deletes the first key `n` times, 1,000 per transaction.
//! `scan` and `scanrev` read every entry in one read transaction, ascending
//! or descending, and load one byte of each value, as the harness's scans.
//! Divide the collected instructions by `n`.

mod common;

use common::load;
use sarsen::{Database, Env, Result};

/// Deletes every key whose hash is odd (about half); returns the deletes.
#[inline(never)]
fn retain(env: &Env, db: Database) -> Result<u64> {
    let mut w = env.write_txn()?;
    let mut gone = 0;
    {
        let mut c = w.cursor_mut(db)?;
        while let Some((k, _)) = c.next()? {
            let h = k.iter().fold(0u64, |h, &b| {
                (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
            });
            if (h >> 7) & 1 == 1 {
                c.delete_current()?;
                gone += 1;
            }
        }
    }
    w.commit()?;
    Ok(gone)
}

/// Deletes the first key `n` times, 1,000 per transaction.
#[inline(never)]
fn pop_front(env: &Env, db: Database, n: u64) -> Result<u64> {
    let mut gone = 0;
    while gone < n {
        let mut w = env.write_txn()?;
        {
            let mut c = w.cursor_mut(db)?;
            let end = (gone + 1000).min(n);
            while gone < end && c.first()?.is_some() {
                c.delete_current()?;
                gone += 1;
            }
        }
        w.commit()?;
    }
    Ok(gone)
}

/// Reads every entry, ascending or (`rev`) descending; returns the number
/// of entries and the sum of the values' first bytes and key lengths, so
/// that nothing read is optimised away.
#[inline(never)]
fn scan(env: &Env, db: Database, rev: bool) -> Result<(u64, u64)> {
    let r = env.read_txn()?;
    let (mut n, mut sum) = (0u64, 0u64);
    let mut visit = |e: Result<(&[u8], &[u8])>| -> Result<()> {
        let (k, v) = e?;
        n += 1;
        sum += k.len() as u64 + u64::from(v.first().copied().unwrap_or(0));
        Ok(())
    };
    if rev {
        r.iter(db)?.rev().try_for_each(&mut visit)?;
    } else {
        r.iter(db)?.try_for_each(&mut visit)?;
    }
    Ok((n, sum))
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "retain".into());
    let n: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let dir = tempfile::tempdir()?;
    let env = common::open(common::options(), dir.path())?;
    let db = env.main_db();
    load(&env, db, n)?;
    let gone = match mode.as_str() {
        "retain" => retain(&env, db)?,
        "popfront" => pop_front(&env, db, n)?,
        "scan" | "scanrev" => {
            let (seen, sum) = scan(&env, db, mode == "scanrev")?;
            println!("{mode}: {seen} entries, checksum {sum}");
            return Ok(());
        }
        other => {
            eprintln!("unknown mode {other}: retain, popfront, scan or scanrev");
            std::process::exit(2);
        }
    };
    println!("{mode}: {gone} deleted of {n}");
    Ok(())
}
