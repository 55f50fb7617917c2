//! Power loss at every sync point, for each durability mode (default mode;
//! write-map mode writes through the map, which the fault seam cannot see,
//! and `NoSync` promises nothing after a system crash, so neither is here).
//!
//! A workload of commits (and `Env::sync` calls) runs on a fresh database
//! with a recording `FaultPlan`. For each sync in the log, and for the end
//! of the log, crash images are built: everything up to the previous sync,
//! plus none, all, or random subsets of the writes since (some torn at
//! 512-byte sectors). Each image is opened as after a reboot (another boot
//! id), checked with `Env::check`, compared with the model of the commit it
//! opened at, which must be one the mode allows, written to, and reopened.
//!
//! `SARSEN_TEST_CASES` sets the random images per crash point (default 4),
//! `SARSEN_TEST_SCALE` multiplies the commits of the workload.

mod common;
mod crash_common;

use std::collections::BTreeMap;
use std::path::Path;

use crash_common::{apply_model, changes, commit, contents, diff, Model};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sarsen::fault::{crash_image, CrashImage, FaultPlan, Landing, Op};
use sarsen::{Durability, Env, EnvOptions};

/// The boot of the workload, and the boot after the power loss.
const BOOT_RUN: [u8; 16] = [0xA1; 16];
const BOOT_AFTER: [u8; 16] = [0xB2; 16];

/// A call that wrote to the log: ops `start..end` are its.
#[derive(Clone, Copy, Debug)]
struct Call {
    txnid: u64,
    start: usize,
    end: usize,
}

/// What the workload did, for building and judging crash images.
struct Run {
    mode: Durability,
    page_size: u32,
    log: Vec<Op>,
    commits: Vec<Call>,
    /// `Env::sync` calls, and the sync at drop in the modes that do one.
    syncs: Vec<Call>,
    /// The model at each txnid (txnid 1 is the new, empty file).
    states: BTreeMap<u64, Model>,
}

fn open(dir: &Path, mode: Durability, ps: u32, boot: [u8; 16], plan: Option<FaultPlan>) -> Env {
    let mut o = EnvOptions::new()
        .durability(mode)
        .page_size(ps)
        .assume_boot_id(boot);
    if let Some(p) = plan {
        o = o.fault_plan(p);
    }
    unsafe { o.open(dir) }.unwrap_or_else(|e| panic!("open {}: {e}", dir.display()))
}

/// Runs the workload: `commits` commits, with an `Env::sync` after some
/// (in the modes where it does something), then drops the `Env`.
fn workload(mode: Durability, page_size: u32, commits: usize, seed: u64) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let plan = FaultPlan::recording();
    let env = open(dir.path(), mode, page_size, BOOT_RUN, Some(plan.clone()));
    let mut rng = StdRng::seed_from_u64(seed);
    let mut model = Model::default();
    let mut run = Run {
        mode,
        page_size,
        log: Vec::new(),
        commits: Vec::new(),
        syncs: Vec::new(),
        states: BTreeMap::from([(1, Model::default())]),
    };
    for i in 0..commits {
        let n = rng.random_range(1..=60);
        let c = changes(common::mix(seed ^ i as u64), page_size, n);
        let start = plan.log_len();
        let txnid = commit(&env, &c).unwrap();
        if plan.log_len() == start {
            // Nothing changed (deletes of absent keys): no commit was made
            // and the txnid was not used.
            continue;
        }
        run.commits.push(Call {
            txnid,
            start,
            end: plan.log_len(),
        });
        apply_model(&mut model, &c);
        run.states.insert(txnid, model.clone());
        if mode != Durability::Durable && rng.random_bool(0.3) {
            let start = plan.log_len();
            env.sync().unwrap();
            run.syncs.push(Call {
                txnid,
                start,
                end: plan.log_len(),
            });
        }
    }
    let last = run.commits.last().map_or(1, |c| c.txnid);
    let start = plan.log_len();
    drop(env);
    if matches!(mode, Durability::SafeNoSync | Durability::NoMetaSync) {
        run.syncs.push(Call {
            txnid: last,
            start,
            end: plan.log_len(),
        });
    }
    run.log = plan.log();
    run
}

impl Run {
    /// The txnids an image cut at op `p` may open at, lowest first.
    fn allowed(&self, p: usize) -> Vec<u64> {
        let acked: Vec<u64> = self
            .commits
            .iter()
            .filter(|c| c.end <= p)
            .map(|c| c.txnid)
            .collect();
        let newest = acked.last().copied().unwrap_or(1);
        let before = acked.len().checked_sub(2).map_or(1, |i| acked[i]);
        // The newest commit that may have written something by then.
        let started = self
            .commits
            .iter()
            .filter(|c| c.start < p)
            .map(|c| c.txnid)
            .max()
            .unwrap_or(1);
        let synced = self
            .syncs
            .iter()
            .filter(|s| s.end <= p)
            .map(|s| s.txnid)
            .max()
            .unwrap_or(1);
        match self.mode {
            Durability::Durable => (newest..=started).collect(),
            Durability::NoMetaSync => (before.max(synced)..=started).collect(),
            _ => {
                // Only steady metas survive a reboot: the last sync, or
                // the one in flight.
                let mut v = vec![synced];
                for s in &self.syncs {
                    if s.start < p && p < s.end && s.txnid != synced {
                        v.push(s.txnid);
                    }
                }
                v
            }
        }
    }

    /// Crash points: before each sync that followed the file's creation,
    /// and the end of the log.
    fn crash_points(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self
            .log
            .iter()
            .enumerate()
            .filter(|(_, o)| matches!(o, Op::Sync { .. }))
            .map(|(i, _)| i)
            .skip(1)
            .collect();
        v.push(self.log.len());
        v
    }
}

/// Opens one crash image and judges it. Returns the txnid it opened at.
fn judge(run: &Run, image: &CrashImage, p: usize, what: &str) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    image.write_to(&dir.path().join("data.sdb")).unwrap();
    let env = open(dir.path(), run.mode, run.page_size, BOOT_AFTER, None);
    let when = format!("{:?} ps {} {what}", run.mode, run.page_size);
    common::assert_check(&env, &when);
    let (t, got) = contents(&env);
    let allowed = run.allowed(p);
    assert!(
        allowed.contains(&t),
        "{when}: opened at txnid {t}, allowed {allowed:?}"
    );
    let want = &run.states[&t];
    assert!(got == *want, "{when}: txnid {t}: {}", diff(&got, want));
    // Writable, and the next commit survives a reopen.
    let extra = changes(t ^ 0x5eed, run.page_size, 30);
    commit(&env, &extra).unwrap_or_else(|e| panic!("{when}: commit after recovery: {e}"));
    let mut want = want.clone();
    apply_model(&mut want, &extra);
    drop(env);
    let env = open(dir.path(), run.mode, run.page_size, BOOT_AFTER, None);
    common::assert_check(&env, &format!("{when}, after a commit and reopen"));
    let (_, got) = contents(&env);
    assert!(got == want, "{when}: after recovery: {}", diff(&got, &want));
    t
}

/// Builds and judges every crash image of one workload. Returns the number
/// of images and how many opened at each distance from the newest allowed.
fn power_loss(mode: Durability, page_size: u32) -> (usize, usize) {
    let (seed, _) = common::base_seed(&format!("power_loss {mode:?} {page_size}"));
    let commits = 12 * common::scale();
    let random = common::cases(4);
    let run = workload(mode, page_size, commits, seed);
    let _f = common::OnFail(format!("SEED={seed}"));
    let mut images = 0;
    let mut fell_back = 0;
    for p in run.crash_points() {
        let mut landings = vec![Landing::Nothing, Landing::Everything];
        landings.extend(
            (0..random).map(|i| Landing::Random(common::mix(seed ^ (p * 1000 + i) as u64))),
        );
        for l in landings {
            let image = crash_image(&run.log, p, l);
            let t = judge(&run, &image, p, &format!("crash before op {p}, {l:?}"));
            images += 1;
            if Some(&t) != run.allowed(p).last() {
                fell_back += 1;
            }
        }
    }
    eprintln!(
        "power_loss {mode:?} ps {page_size}: {} ops, {} crash points, {images} images, {fell_back} at an older commit",
        run.log.len(),
        run.crash_points().len()
    );
    (images, fell_back)
}

#[test]
fn power_loss_durable() {
    for ps in [512, 4096] {
        let (images, fell_back) = power_loss(Durability::Durable, ps);
        assert!(images > 20);
        // Some images lost part of the commit in flight and rolled back.
        assert!(fell_back > 0, "no image rolled back: the test is too weak");
    }
}

#[test]
fn power_loss_no_meta_sync() {
    for ps in [512, 4096] {
        let (images, fell_back) = power_loss(Durability::NoMetaSync, ps);
        assert!(images > 20);
        assert!(
            fell_back > 0,
            "no image lost a commit: the test is too weak"
        );
    }
}

#[test]
fn power_loss_safe_no_sync() {
    for ps in [512, 4096] {
        let (images, _) = power_loss(Durability::SafeNoSync, ps);
        assert!(images > 20);
    }
}
