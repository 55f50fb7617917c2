//! Garbage in the lock file (review defect 7). The lock file is writable
//! by every opener, so a stray write (another program, a bug elsewhere)
//! can damage the snapshot the last commit published there. The data file
//! is the truth: a writer that trusts a damaged published snapshot may
//! allocate pages over live data or write a meta page onto a data page.
//!
//! The model is the last committed state (a map and its txnid). While
//! environments are open in this process and in a child process, garbage
//! is written over the published area of the lock file. Then:
//!
//! * the next `write_txn()` must return `Error::Corrupted` (not succeed on
//!   the garbage, not panic, not hang: it runs in a thread with a timeout);
//! * once every environment is closed, the data file must open cleanly at
//!   the last committed state, with `Env::check()` reporting no problems
//!   (the first opener rebuilds the lock file).
//!
//! A lock file full of random bytes when no process has the environment
//! open must open fine: the first opener resets it.
//!
//! The offsets of the published fields are named below (lock-file format
//! version 3, `io/lock.rs`); adjust them if the header layout changes.

mod procs_common;

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use procs_common::{self as pc, Kid, WAIT};
use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};
use sarsen::{Env, Error};

/// Snapshot seqlock counter (odd while a writer publishes).
const SEQLOCK: u64 = 16;
/// Published txnid.
const TXNID: u64 = 24;
/// Published next unallocated page number.
const NEXT_PGNO: u64 = 32;
/// Published tree records: catalog, main, GC (64 bytes each).
const RECORDS: u64 = 40;
const MAIN_RECORD: u64 = RECORDS + 64;
/// Txnid of the newest durable commit.
const DURABLE_TXNID: u64 = 232;
/// Meta slots: byte 0 = current, byte 1 = steady.
const META_SLOTS: u64 = 240;
/// End of the published area the garbage covers.
const PUBLISHED_END: u64 = 256;
/// Size of a lock file with the default 126 reader slots (format 3).
const LOCK_LEN: usize = 320 + 64 * 126;

/// Keys committed before the damage (200-byte values: many pages).
const KEYS: u32 = 600;

/// A way to damage the published area.
#[derive(Clone, Copy, Debug)]
enum Damage {
    /// Random bytes over all of it, the seqlock counter left even (a
    /// stable state, not a publish in progress).
    Random,
    /// The current meta slot names a data page.
    MetaSlot,
    /// The next page number points into live data.
    NextPgnoLow,
    /// A txnid far ahead of the last commit.
    TxnidAhead,
    /// The main tree's record is random (its root pgno too).
    MainRecord,
}

fn damage(lock: &Path, d: Damage, rng: &mut StdRng) {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(lock)
        .unwrap();
    let at = |off: u64, bytes: &[u8]| f.write_all_at(bytes, off).unwrap();
    match d {
        Damage::Random => {
            let mut g = vec![0u8; (PUBLISHED_END - SEQLOCK) as usize];
            rng.fill_bytes(&mut g);
            at(SEQLOCK, &g);
            let seq = rng.random::<u64>() & !1;
            at(SEQLOCK, &seq.to_le_bytes());
        }
        Damage::MetaSlot => at(META_SLOTS, &[9, 9]),
        Damage::NextPgnoLow => at(NEXT_PGNO, &3u64.to_le_bytes()),
        Damage::TxnidAhead => {
            let mut t = [0u8; 8];
            f.read_exact_at(&mut t, TXNID).unwrap();
            let ahead = u64::from_le_bytes(t) + 1000;
            at(TXNID, &ahead.to_le_bytes());
            at(DURABLE_TXNID, &ahead.to_le_bytes());
        }
        Damage::MainRecord => {
            let mut g = [0u8; 64];
            rng.fill_bytes(&mut g);
            at(MAIN_RECORD, &g);
        }
    }
}

/// Child side: opens the environment, begins and ends a read transaction,
/// says `opened`, keeps the environment open until end of input.
#[test]
#[ignore = "helper: run by the lock garbage tests in a child process"]
fn lock_garbage_child() {
    let Some((_, dir)) = pc::role() else {
        return;
    };
    let env = pc::open(&dir);
    drop(env.read_txn().unwrap());
    pc::say("opened");
    while pc::hear().is_some() {}
}

/// The committed model: keys `0..KEYS` at round `rounds - 1`.
fn committed(env: &Env, rounds: u64) -> (u64, pc::Entries) {
    pc::overwrite(env, KEYS, 0, rounds);
    let r = env.read_txn().unwrap();
    (r.txnid(), pc::contents(&r, env.main_db()).unwrap())
}

/// What the first `write_txn` after the damage did.
fn first_write(env: &Arc<Env>) -> Option<Result<String, String>> {
    let e = Arc::clone(env);
    pc::bounded(WAIT, move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            match e.write_txn() {
                Err(Error::Corrupted { .. }) => Ok("corrupted".to_owned()),
                Err(x) => Err(format!("write_txn returned {x:?}, not Corrupted")),
                Ok(mut w) => {
                    // Go on as a program would: the harm shows at reopen.
                    let t = w.txnid();
                    let put = w.put(e.main_db(), b"after-garbage", b"x");
                    let c = w.commit();
                    Err(format!(
                        "write_txn succeeded on the garbage (txnid {t}; put {put:?}, commit {c:?})"
                    ))
                }
            }
        }));
        r.unwrap_or_else(|_| Err("write_txn panicked".into()))
    })
}

/// Reopens `dir` (alone) and compares with the model.
fn reopen_matches(dir: &Path, txnid: u64, model: &[(Vec<u8>, Vec<u8>)]) -> Vec<String> {
    let env = match pc::open_with(dir, sarsen::EnvOptions::new()) {
        Ok(env) => env,
        Err(e) => return vec![format!("HARM: the data file no longer opens: {e}")],
    };
    let mut problems = Vec::new();
    match env.read_txn() {
        Ok(r) => {
            let got = pc::contents(&r, env.main_db());
            if r.txnid() != txnid {
                problems.push(format!(
                    "HARM: reopened at txnid {}, the last commit was {txnid}",
                    r.txnid()
                ));
            }
            match got {
                Ok(got) => {
                    problems.extend(pc::first_diff(&got, model).map(|d| {
                        format!("HARM: reopened contents differ from the last commit: {d}")
                    }))
                }
                Err(e) => problems.push(format!("HARM: reading after reopen: {e}")),
            }
        }
        Err(e) => problems.push(format!("read_txn after reopen: {e}")),
    }
    match env.check() {
        Ok(rep) if rep.is_ok() => {}
        Ok(rep) => problems.push(format!(
            "HARM: check after reopen found {} problems: {:?}",
            rep.problems_total,
            &rep.problems[..rep.problems.len().min(3)]
        )),
        Err(e) => problems.push(format!("check after reopen: {e}")),
    }
    problems
}

#[test]
fn garbage_in_the_published_snapshot_stops_the_writer_and_spares_the_data() {
    let seed = rand::random::<u64>();
    eprintln!("SEED={seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let mut problems = Vec::new();
    for d in [
        Damage::Random,
        Damage::MetaSlot,
        Damage::NextPgnoLow,
        Damage::TxnidAhead,
        Damage::MainRecord,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let env = Arc::new(pc::open(dir.path()));
        let (txnid, model) = committed(&env, 4);
        let mut kid = Kid::spawn(
            pc::child_cmd("lock_garbage_child", "holder", dir.path()),
            "holder",
        );
        if let Err(e) = kid.expect("opened", WAIT) {
            problems.push(e);
            continue;
        }
        damage(&dir.path().join("lock.sdb"), d, &mut rng);
        match first_write(&env) {
            None => {
                problems.push(format!("{d:?}: HARM: write_txn hung on the garbage"));
                // The hung thread keeps the environment open: stop here.
                break;
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => problems.push(format!("{d:?}: {e}")),
        }
        kid.close_stdin();
        if let Err(e) = kid.wait(WAIT) {
            problems.push(e);
        }
        drop(env);
        for p in reopen_matches(dir.path(), txnid, &model) {
            problems.push(format!("{d:?} (seed {seed}): {p}"));
        }
    }
    pc::report("garbage in the lock file", &problems);
}

#[test]
fn a_lock_file_of_random_bytes_is_reset_by_the_first_opener() {
    let seed = rand::random::<u64>();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut problems = Vec::new();
    for (i, len) in [0, 100, 320, LOCK_LEN, 3 * LOCK_LEN]
        .into_iter()
        .enumerate()
    {
        let dir = tempfile::tempdir().unwrap();
        let (txnid, model) = committed(&pc::open(dir.path()), 3);
        let mut junk = vec![0u8; len];
        rng.fill_bytes(&mut junk);
        if i % 2 == 1 && len >= 16 {
            // A real-looking magic and version in front of the junk.
            junk[..8].copy_from_slice(b"SARSNLCK");
            junk[8..12].copy_from_slice(&2u32.to_le_bytes());
        }
        std::fs::write(dir.path().join("lock.sdb"), &junk).unwrap();
        let what = format!("lock file of {len} random bytes (seed {seed})");
        problems.extend(
            reopen_matches(dir.path(), txnid, &model)
                .into_iter()
                .map(|p| format!("{what}: {p}")),
        );
        let e = Arc::new(pc::open(dir.path()));
        let e2 = Arc::clone(&e);
        match pc::bounded(WAIT, move || pc::write_round(&e2, KEYS, 99)) {
            Some(()) => {
                let r = e.read_txn().unwrap();
                if r.txnid() != txnid + 1 {
                    problems.push(format!("{what}: a commit after it got txnid {}", r.txnid()));
                }
            }
            None => problems.push(format!("{what}: a write after reopening hung")),
        }
    }
    pc::report("random lock file", &problems);
}
