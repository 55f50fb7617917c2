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
//! The session on the image is recorded too, and a second power loss is
//! judged before each of its syncs (recovery's rewrite of rejected metas,
//! the new commit, the sync at drop): the image must then open at the
//! recovered commit or the new one, never at one rejected the first time.
//!
//! With auto-sync thresholds (`EnvOptions::sync_bytes`), the commits the
//! engine makes durable on its own (it says so in `EnvInfo::durable_txnid`)
//! must survive every image as a `Durable` commit does.
//!
//! `SARSEN_TEST_CASES` sets the random images per crash point (default 8),
//! `SARSEN_TEST_SCALE` multiplies the commits of the workload.

mod common;
mod crash_common;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::Path;

use crash_common::{apply_model, changes, commit, contents, diff, Model};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sarsen::fault::{crash_image, crash_image_over, CrashImage, FaultPlan, Landing, Op};
use sarsen::{Durability, Env, EnvOptions};

/// The boot of the workload, and the boot after the power loss.
const BOOT_RUN: [u8; 16] = [0xA1; 16];
const BOOT_AFTER: [u8; 16] = [0xB2; 16];
/// The boot after a second power loss.
const BOOT_THIRD: [u8; 16] = [0xC4; 16];

/// A call that wrote to the log: ops `start..end` are its.
#[derive(Clone, Copy, Debug)]
struct Call {
    /// The commit made, or the commit made durable by a sync.
    txnid: u64,
    start: usize,
    end: usize,
    /// Whether the meta it wrote is steady (trusted after a reboot): the
    /// commits of `Durable` and `NoMetaSync` environments, and syncs.
    steady: bool,
    /// The newest commit durable once the call has returned (what the
    /// engine itself counts on when it reuses pages).
    durable: u64,
}

/// What the workload did, for building and judging crash images.
struct Run {
    /// Durability of the environment that opens the images.
    mode: Durability,
    name: String,
    page_size: u32,
    log: Vec<Op>,
    /// Commits the engine made durable by an auto-sync threshold.
    auto_durable: usize,
    /// Commits, `Env::sync` calls and the syncs at drop, in order.
    calls: Vec<Call>,
    /// The model at each txnid (txnid 1 is the new, empty file).
    states: BTreeMap<u64, Model>,
}

thread_local! {
    /// The `sync_bytes` threshold of every environment this test's thread
    /// opens (0: none).
    static SYNC_BYTES: Cell<u64> = const { Cell::new(0) };
}

fn open(dir: &Path, mode: Durability, ps: u32, boot: [u8; 16], plan: Option<FaultPlan>) -> Env {
    let mut o = EnvOptions::new()
        .durability(mode)
        .page_size(ps)
        .assume_boot_id(boot);
    let auto = SYNC_BYTES.with(Cell::get);
    if auto > 0 {
        o = o.sync_bytes(auto);
    }
    if let Some(p) = plan {
        o = o.fault_plan(p);
    }
    unsafe { o.open(dir) }.unwrap_or_else(|e| panic!("open {}: {e}", dir.display()))
}

/// The workload's bookkeeping while it runs.
struct Driver {
    plan: FaultPlan,
    run: Run,
    model: Model,
    /// The newest commit and whether its meta (or a synced copy) is steady.
    last: u64,
    last_steady: bool,
    durable: u64,
    /// Commits of a non-durable mode the engine made durable (auto-sync).
    auto_durable: usize,
}

impl Driver {
    /// A sync of environment `env` in `mode`, explicit or at drop.
    fn sync(&mut self, mode: Durability, sync: impl FnOnce()) {
        let start = self.plan.log_len();
        sync();
        if mode == Durability::Durable || mode == Durability::NoSync {
            return; // Durable: nothing to do; NoSync: not at drop.
        }
        self.durable = self.last;
        self.last_steady = true;
        self.run.calls.push(Call {
            txnid: self.last,
            start,
            end: self.plan.log_len(),
            steady: true,
            durable: self.durable,
        });
    }

    /// One commit of `changes` in environment `env` in `mode`.
    fn commit(&mut self, env: &Env, mode: Durability, c: &[crash_common::Change]) {
        let start = self.plan.log_len();
        let txnid = commit(env, c).unwrap();
        if self.plan.log_len() == start {
            // Nothing changed (deletes of absent keys): no commit was made
            // and the txnid was not used.
            return;
        }
        // A commit the engine says is durable (every `Durable` one, and
        // those an auto-sync threshold made durable) must be.
        let made_durable = env.info().unwrap().durable_txnid == txnid;
        if made_durable && mode != Durability::Durable {
            self.auto_durable += 1;
        }
        match mode {
            _ if made_durable => self.durable = txnid,
            Durability::Durable => panic!("durable commit {txnid} not counted durable"),
            // The data sync made the previous meta durable, if steady.
            Durability::NoMetaSync if self.last_steady => self.durable = self.last,
            _ => {}
        }
        let steady = made_durable || matches!(mode, Durability::NoMetaSync);
        (self.last, self.last_steady) = (txnid, steady);
        self.run.calls.push(Call {
            txnid,
            start,
            end: self.plan.log_len(),
            steady,
            durable: self.durable,
        });
        apply_model(&mut self.model, c);
        self.run.states.insert(txnid, self.model.clone());
    }
}

/// Runs the workload: `commits` commits, each in an environment of a
/// random one of `modes` (all open on one file, sharing one plan), with an
/// `Env::sync` after some, then drops the environments.
fn workload(modes: &[Durability], page_size: u32, commits: usize, seed: u64) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let plan = FaultPlan::recording();
    let envs: Vec<Env> = modes
        .iter()
        .map(|m| open(dir.path(), *m, page_size, BOOT_RUN, Some(plan.clone())))
        .collect();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut d = Driver {
        plan: plan.clone(),
        run: Run {
            mode: if modes.len() == 1 {
                modes[0]
            } else {
                Durability::Durable
            },
            name: format!("{modes:?} ps {page_size}"),
            page_size,
            log: Vec::new(),
            auto_durable: 0,
            calls: Vec::new(),
            states: BTreeMap::from([(1, Model::default())]),
        },
        model: Model::default(),
        last: 1,
        last_steady: true,
        durable: 1,
        auto_durable: 0,
    };
    for i in 0..commits {
        let e = rng.random_range(0..envs.len());
        let n = rng.random_range(1..=60);
        let c = changes(common::mix(seed ^ i as u64), page_size, n);
        d.commit(&envs[e], modes[e], &c);
        let e = rng.random_range(0..envs.len());
        if modes[e] != Durability::Durable && rng.random_bool(0.3) {
            d.sync(modes[e], || envs[e].sync().unwrap());
        }
    }
    for (env, mode) in envs.into_iter().zip(modes) {
        d.sync(*mode, || drop(env));
    }
    d.run.log = plan.log();
    d.run.auto_durable = d.auto_durable;
    d.run
}

impl Run {
    /// The txnids an image cut at op `p` may open at, lowest first: from
    /// the newest commit durable by then to the newest that may have
    /// written something, among those with a steady meta.
    fn allowed(&self, p: usize) -> Vec<u64> {
        let durable = self
            .calls
            .iter()
            .filter(|c| c.end <= p)
            .map(|c| c.durable)
            .max()
            .unwrap_or(1);
        let started: Vec<&Call> = self.calls.iter().filter(|c| c.start < p).collect();
        let newest = started.iter().map(|c| c.txnid).max().unwrap_or(1);
        (durable..=newest)
            .filter(|t| *t == 1 || started.iter().any(|c| c.txnid == *t && c.steady))
            .collect()
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

/// Opens one crash image and judges it, then runs one commit on it and
/// judges a second power loss at each sync of that session. Returns the
/// txnid it opened at and the number of second-crash images.
fn judge(run: &Run, image: &CrashImage, p: usize, what: &str, seed: u64) -> (u64, usize) {
    let dir = tempfile::tempdir().unwrap();
    image.write_to(&dir.path().join("data.sdb")).unwrap();
    let plan = FaultPlan::recording();
    let env = open(
        dir.path(),
        run.mode,
        run.page_size,
        BOOT_AFTER,
        Some(plan.clone()),
    );
    let when = format!("{} {what}", run.name);
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
    let t2 = commit(&env, &extra).unwrap_or_else(|e| panic!("{when}: commit after recovery: {e}"));
    let mut want2 = want.clone();
    apply_model(&mut want2, &extra);
    drop(env);
    let env = open(dir.path(), run.mode, run.page_size, BOOT_AFTER, None);
    common::assert_check(&env, &format!("{when}, after a commit and reopen"));
    let (_, got) = contents(&env);
    assert!(
        got == want2,
        "{when}: after recovery: {}",
        diff(&got, &want2)
    );
    drop(env);
    // A second power loss during that session (recovery's rewrite of
    // rejected metas, the commit, the sync at drop): the recovered commit
    // or the new one, and never a commit rejected the first time.
    let log = plan.log();
    let mut points: Vec<usize> = (0..log.len())
        .filter(|i| matches!(log[*i], Op::Sync { .. }))
        .collect();
    points.push(log.len());
    for (i, &q) in points.iter().enumerate() {
        let second = crash_image_over(
            image,
            &log,
            q,
            Landing::Random(common::mix(seed ^ q as u64)),
        );
        let dir = tempfile::tempdir().unwrap();
        second.write_to(&dir.path().join("data.sdb")).unwrap();
        let env = open(dir.path(), run.mode, run.page_size, BOOT_THIRD, None);
        let when = format!("{when}, second crash before op {q}");
        common::assert_check(&env, &when);
        let (t3, got) = contents(&env);
        let ok = if i + 1 == points.len() {
            t3 == t2
        } else {
            t3 == t || t3 == t2
        };
        assert!(
            ok,
            "{when}: opened at {t3}, recovered {t}, then committed {t2}"
        );
        let want = if t3 == t { want } else { &want2 };
        assert!(got == *want, "{when}: txnid {t3}: {}", diff(&got, want));
    }
    (t, points.len())
}

/// Builds and judges every crash image of one workload. Returns the number
/// of images and how many opened at an older commit than the newest allowed.
fn power_loss(modes: &[Durability], page_size: u32) -> (usize, usize) {
    power_loss_counting(modes, page_size).0
}

/// [`power_loss`], also returning the commits auto-sync made durable.
fn power_loss_counting(modes: &[Durability], page_size: u32) -> ((usize, usize), usize) {
    let (seed, _) = common::base_seed(&format!("power_loss {modes:?} {page_size}"));
    let commits = 24 * common::scale();
    let random = common::cases(8);
    let run = workload(modes, page_size, commits, seed);
    let _f = common::OnFail(format!("SEED={seed}"));
    let mut images = 0;
    let mut fell_back = 0;
    let mut second = 0;
    for p in run.crash_points() {
        let mut landings = vec![Landing::Nothing, Landing::Everything];
        landings.extend(
            (0..random).map(|i| Landing::Random(common::mix(seed ^ (p * 1000 + i) as u64))),
        );
        for l in landings {
            let image = crash_image(&run.log, p, l);
            let what = format!("crash before op {p}, {l:?}");
            let (t, n) = judge(&run, &image, p, &what, seed ^ images as u64);
            images += 1;
            second += n;
            if Some(&t) != run.allowed(p).last() {
                fell_back += 1;
            }
        }
    }
    eprintln!(
        "power_loss {}: {} ops, {} crash points, {images} images, {fell_back} at an older commit; {second} second-crash images",
        run.name,
        run.log.len(),
        run.crash_points().len()
    );
    ((images, fell_back), run.auto_durable)
}

#[test]
fn power_loss_durable() {
    for ps in [512, 4096] {
        let (images, fell_back) = power_loss(&[Durability::Durable], ps);
        assert!(images > 20);
        // Some images lost part of the commit in flight and rolled back.
        assert!(fell_back > 0, "no image rolled back: the test is too weak");
    }
}

#[test]
fn power_loss_no_meta_sync() {
    for ps in [512, 4096] {
        let (images, fell_back) = power_loss(&[Durability::NoMetaSync], ps);
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
        let (images, _) = power_loss(&[Durability::SafeNoSync], ps);
        assert!(images > 20);
    }
}

/// Three environments on one file, one per mode, committing in turn: a
/// `Durable` commit on top of unsynced ones (two syncs), `NoMetaSync`
/// after `SafeNoSync`, syncs from either.
#[test]
fn power_loss_mixed_modes() {
    let modes = [
        Durability::Durable,
        Durability::NoMetaSync,
        Durability::SafeNoSync,
    ];
    for ps in [512, 4096] {
        let (images, _) = power_loss(&modes, ps);
        assert!(images > 20);
    }
}

/// `SafeNoSync` and `NoMetaSync` with a 16 KiB `sync_bytes` threshold: the
/// commits that reach it are synced, and no image loses one of them.
#[test]
fn power_loss_auto_sync() {
    SYNC_BYTES.with(|b| b.set(16 << 10));
    for mode in [Durability::SafeNoSync, Durability::NoMetaSync] {
        for ps in [512, 4096] {
            let ((images, _), auto) = power_loss_counting(&[mode], ps);
            assert!(images > 20);
            assert!(auto > 0, "{mode:?}: no commit reached the threshold");
        }
    }
}
