//! Shared by the crash suites (`power_loss.rs`, `faults.rs`, `kill9.rs`):
//! a deterministic workload over the main database and one named database,
//! and the model it is checked against.
#![allow(dead_code)]

use std::collections::BTreeMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sarsen::{Env, RwTxn};

/// The named database the workload writes besides the main one.
pub const SIDE: &str = "side";

/// Contents of the main database (index 0) and of `SIDE` (index 1).
pub type Model = [BTreeMap<Vec<u8>, Vec<u8>>; 2];

/// One change of the workload.
#[derive(Clone, Debug)]
pub enum Change {
    /// Put a value (database index, key, value).
    Put(usize, Vec<u8>, Vec<u8>),
    /// Delete a key (database index, key), present or not.
    Del(usize, Vec<u8>),
}

/// The changes of one transaction, derived from `seed` alone: puts (some
/// values long enough for overflow runs at `page_size`) and deletes over a
/// key space of 400 keys per database, so later transactions rewrite and
/// delete what earlier ones wrote and free pages get reused.
pub fn changes(seed: u64, page_size: u32, n: usize) -> Vec<Change> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let db = usize::from(rng.random_bool(0.3));
            let key = format!("k{:05}", rng.random_range(0..400u32)).into_bytes();
            if rng.random_bool(0.25) {
                return Change::Del(db, key);
            }
            let len = if rng.random_bool(0.08) {
                rng.random_range(page_size as usize..3 * page_size as usize)
            } else {
                rng.random_range(0..60)
            };
            let fill: u8 = rng.random();
            let v: Vec<u8> = (0..len).map(|i| fill.wrapping_add(i as u8)).collect();
            Change::Put(db, key, v)
        })
        .collect()
}

/// Applies `changes` in a write transaction (creating `SIDE` if needed).
pub fn apply_txn(w: &mut RwTxn<'_>, changes: &[Change]) -> sarsen::Result<()> {
    let dbs = [w.create_db(None)?, w.create_db(Some(SIDE))?];
    for c in changes {
        match c {
            Change::Put(d, k, v) => w.put(dbs[*d], k, v)?,
            Change::Del(d, k) => {
                w.delete(dbs[*d], k)?;
            }
        }
    }
    Ok(())
}

/// Applies `changes` to the model.
pub fn apply_model(m: &mut Model, changes: &[Change]) {
    for c in changes {
        match c {
            Change::Put(d, k, v) => {
                m[*d].insert(k.clone(), v.clone());
            }
            Change::Del(d, k) => {
                m[*d].remove(k);
            }
        }
    }
}

/// One transaction of the workload: its changes, committed.
pub fn commit(env: &Env, changes: &[Change]) -> sarsen::Result<u64> {
    let mut w = env.write_txn()?;
    let t = w.txnid();
    apply_txn(&mut w, changes)?;
    w.commit()?;
    Ok(t)
}

/// What the environment holds now, and the txnid it holds it at.
pub fn contents(env: &Env) -> (u64, Model) {
    try_contents(env).expect("reading the environment")
}

/// [`contents`], returning the error of a damaged or unreadable file.
pub fn try_contents(env: &Env) -> sarsen::Result<(u64, Model)> {
    let r = env.read_txn()?;
    let mut m = Model::default();
    let dbs = [Some(env.main_db()), r.open_db(Some(SIDE))?];
    for (i, db) in dbs.iter().enumerate() {
        let Some(db) = db else { continue };
        for e in r.iter(*db)? {
            let (k, v) = e?;
            m[i].insert(k.to_vec(), v.to_vec());
        }
    }
    Ok((r.txnid(), m))
}

/// A short description of where two models differ.
pub fn diff(got: &Model, want: &Model) -> String {
    for i in 0..2 {
        if got[i] != want[i] {
            let missing = want[i].keys().filter(|k| !got[i].contains_key(*k)).count();
            let extra = got[i].keys().filter(|k| !want[i].contains_key(*k)).count();
            let changed = want[i]
                .iter()
                .filter(|(k, v)| got[i].get(*k).is_some_and(|g| g != *v))
                .count();
            return format!(
                "db {i}: {} entries, model {}: {missing} missing, {extra} extra, {changed} changed",
                got[i].len(),
                want[i].len()
            );
        }
    }
    "equal".into()
}
