//! I/O errors and a full disk at every write and every sync of a commit
//! (and of the `Env::sync` after it in the modes that need one), in the
//! default mode, for `Durable`, `NoMetaSync` and `SafeNoSync`.
//!
//! For each fault point a copy of a template database is opened with a
//! `FaultPlan` armed to fail that write or sync with `EIO` or `ENOSPC`,
//! once or for good (sticky), the failing write landing whole-nothing or
//! half (torn). The failed call must return the typed error (`Error::Io`
//! carrying `EIO`, or `Error::DiskFull`); the database must stay at the
//! previous commit (in the process and after a reopen), pass `Env::check`,
//! and take the same commit once the fault is gone, also after a reopen.

mod common;
mod crash_common;

use std::path::Path;

use crash_common::{apply_model, changes, commit, contents, diff, Change, Model};
use sarsen::fault::{CrashImage, Fault, FaultPlan, OpKind};
use sarsen::{Durability, Env, EnvOptions, Error};

const BOOT: [u8; 16] = [0xC3; 16];

fn open(dir: &Path, mode: Durability, plan: Option<FaultPlan>) -> Env {
    let mut o = EnvOptions::new().durability(mode).assume_boot_id(BOOT);
    if let Some(p) = plan {
        o = o.fault_plan(p);
    }
    unsafe { o.open(dir) }.unwrap_or_else(|e| panic!("open {}: {e}", dir.display()))
}

/// Whether `e` is what an injected `errno` must surface as.
fn is_typed(e: &Error, errno: i32) -> bool {
    match e {
        Error::DiskFull { .. } => errno == libc::ENOSPC,
        Error::Io { source, .. } => source.raw_os_error() == Some(errno) && errno != libc::ENOSPC,
        _ => false,
    }
}

/// The template: a database after a few commits in `mode`, and its model.
/// The file is kept in memory without its sparse tail, for quick copies.
/// It is copied before the `Env` is dropped, so the last commits of the
/// non-durable modes are not synced (the last session ended in a process
/// crash, which the same boot id trusts).
fn template(mode: Durability, seed: u64) -> (CrashImage, Model) {
    let tpl = tempfile::tempdir().unwrap();
    let dir = tpl.path();
    let env = open(dir, mode, None);
    let mut model = Model::default();
    for i in 0..8u64 {
        let c = changes(common::mix(seed ^ i), 4096, 150);
        commit(&env, &c).unwrap();
        apply_model(&mut model, &c);
    }
    let mut data = std::fs::read(dir.join("data.sdb")).unwrap();
    drop(env);
    let len = data.len() as u64;
    let end = data.iter().rposition(|b| *b != 0).map_or(0, |i| i + 1);
    data.truncate(end);
    (CrashImage { data, len }, model)
}

/// What happened to one fault point.
enum Outcome {
    /// The fault never fired: the point is past the last operation.
    NotReached,
    /// The commit failed.
    CommitFailed,
    /// The commit succeeded and the `Env::sync` after it failed.
    SyncFailed,
}

/// Runs the victim (the commit of `victim`, then `Env::sync` unless the
/// mode is `Durable`) on a copy of the template with `fault` armed, and
/// checks everything the fault must leave behind.
fn fault_point(
    tpl: &CrashImage,
    mode: Durability,
    prev: &Model,
    victim: &[Change],
    next: &Model,
    fault: Fault,
) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    tpl.write_to(&dir.path().join("data.sdb")).unwrap();
    let when = format!("{mode:?} {fault:?}");
    let plan = FaultPlan::new();
    let env = open(dir.path(), mode, Some(plan.clone()));
    plan.fail(fault);
    let committed = commit(&env, victim);
    let synced = match (&committed, mode) {
        (Ok(_), Durability::Durable) | (Err(_), _) => Ok(()),
        (Ok(_), _) => env.sync(),
    };
    let outcome = match (&committed, &synced) {
        _ if plan.fired() == 0 => {
            committed.unwrap_or_else(|e| panic!("{when}: failed with no fault: {e}"));
            synced.unwrap_or_else(|e| panic!("{when}: sync failed with no fault: {e}"));
            return Outcome::NotReached;
        }
        (Err(e), _) => {
            assert!(is_typed(e, fault.errno), "{when}: commit gave {e:?}");
            Outcome::CommitFailed
        }
        (Ok(_), Err(e)) => {
            assert!(is_typed(e, fault.errno), "{when}: sync gave {e:?}");
            Outcome::SyncFailed
        }
        (Ok(_), Ok(())) => panic!("{when}: the fault fired but every call succeeded"),
    };
    let want = match outcome {
        Outcome::CommitFailed => prev,
        _ => next,
    };
    let (_, got) = contents(&env);
    assert!(
        got == *want,
        "{when}: after the fault: {}",
        diff(&got, want)
    );
    common::assert_check(&env, &format!("{when}: after the fault"));
    if fault.kind == OpKind::Sync {
        // Linux may have dropped the pages the failed sync could not
        // write: no more writes until the environment is reopened.
        assert!(
            matches!(env.write_txn(), Err(Error::SyncFailed)),
            "{when}: a write transaction began after a failed sync"
        );
        assert!(
            matches!(env.sync(), Err(Error::SyncFailed)),
            "{when}: Env::sync after a failed sync"
        );
    }
    // The process goes away with the fault still armed (a sticky one keeps
    // failing the sync at drop), and the database is opened again.
    drop(env);
    let env = open(dir.path(), mode, None);
    let (_, got) = contents(&env);
    assert!(got == *want, "{when}: reopened: {}", diff(&got, want));
    common::assert_check(&env, &format!("{when}: reopened"));
    if let Outcome::CommitFailed = outcome {
        commit(&env, victim).unwrap_or_else(|e| panic!("{when}: commit again: {e}"));
    }
    env.sync()
        .unwrap_or_else(|e| panic!("{when}: sync again: {e}"));
    let (_, got) = contents(&env);
    assert!(got == *next, "{when}: written again: {}", diff(&got, next));
    common::assert_check(&env, &format!("{when}: written again"));
    drop(env);
    let env = open(dir.path(), mode, None);
    let (_, got) = contents(&env);
    assert!(got == *next, "{when}: reopened last: {}", diff(&got, next));
    outcome
}

/// Every fault point of a commit in `mode` on a template written in
/// `tpl_mode`; returns how many fired.
fn faults(mode: Durability, tpl_mode: Durability) -> usize {
    let (seed, _) = common::base_seed(&format!("faults {mode:?} on {tpl_mode:?}"));
    let _f = common::OnFail(format!("SEED={seed}"));
    let (tpl, prev) = template(tpl_mode, seed);
    let victim = changes(common::mix(seed ^ 0xfa17), 4096, 120 * common::scale());
    let mut next = prev.clone();
    apply_model(&mut next, &victim);
    assert!(next != prev);
    let (mut fired, mut commit_failed, mut sync_failed) = (0, 0, 0);
    let (mut writes, mut syncs) = (0, 0);
    for kind in [OpKind::Write, OpKind::Sync] {
        for errno in [libc::EIO, libc::ENOSPC] {
            for torn in [false, true] {
                if torn && kind == OpKind::Sync {
                    continue;
                }
                for sticky in [false, true] {
                    for nth in 0.. {
                        let f = Fault {
                            kind,
                            nth,
                            errno,
                            torn,
                            sticky,
                        };
                        match fault_point(&tpl, mode, &prev, &victim, &next, f) {
                            Outcome::NotReached => {
                                match kind {
                                    OpKind::Write => writes = nth,
                                    OpKind::Sync => syncs = nth,
                                }
                                break;
                            }
                            Outcome::CommitFailed => commit_failed += 1,
                            Outcome::SyncFailed => sync_failed += 1,
                        }
                        fired += 1;
                    }
                }
            }
        }
    }
    eprintln!(
        "faults {mode:?} on {tpl_mode:?}: {writes} writes and {syncs} syncs per victim, {fired} fault points: {commit_failed} failed the commit, {sync_failed} the Env::sync after it"
    );
    assert!(
        writes >= 2,
        "the victim commit wrote no pages: {writes} writes"
    );
    // Durable: one sync, or two on top of unsynced commits; NoMetaSync:
    // one, then two in Env::sync; SafeNoSync: none, then two.
    let want = match (mode, tpl_mode) {
        (Durability::Durable, Durability::Durable) => 1,
        (Durability::NoMetaSync, _) => 3,
        _ => 2,
    };
    assert_eq!(syncs, want, "syncs of the victim");
    if mode != Durability::Durable {
        assert!(sync_failed > 0);
    }
    fired
}

#[test]
fn faults_durable() {
    assert!(faults(Durability::Durable, Durability::Durable) > 10);
}

#[test]
fn faults_no_meta_sync() {
    assert!(faults(Durability::NoMetaSync, Durability::NoMetaSync) > 10);
}

#[test]
fn faults_safe_no_sync() {
    assert!(faults(Durability::SafeNoSync, Durability::SafeNoSync) > 10);
}

/// A `Durable` commit on top of unsynced `SafeNoSync` commits: it syncs
/// the data first and the meta second (two syncs), and a fault at either
/// must leave the unsynced commits as they were.
#[test]
fn faults_durable_after_unsynced() {
    assert!(faults(Durability::Durable, Durability::SafeNoSync) > 10);
}
