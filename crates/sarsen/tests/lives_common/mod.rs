//! Several process lives in one boot, then a power loss (`power_loss_lives.rs`).
//!
//! A [`History`] follows one database through its lives: each life opens
//! the environment as a first opener (the previous one died), checks what
//! recovery found against the model, runs commits, and dies at a chosen
//! operation of the data file (a halt of its [`FaultPlan`], see
//! [`sarsen::fault`]) or closes. Every life's plan shares the history's
//! recording log, so [`crash_image`] builds the file a power loss at any
//! point of the whole boot would leave, and [`History::judge_images`] opens
//! those images in a new boot and judges them against the durability
//! contract.
#![allow(dead_code)]

use std::ops::Range;
use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sarsen::fault::{catch_kill, crash_image, FaultPlan, Kill, Landing, Op};
use sarsen::{Durability, Env, EnvOptions};

use crate::common;
use crate::crash_common::{apply_model, changes, commit, diff, try_contents, Change, Model};

/// The boot of every process life.
pub const BOOT_RUN: [u8; 16] = [0x5A; 16];
/// The boot after the power loss.
pub const BOOT_AFTER: [u8; 16] = [0x6B; 16];

/// Opens `dir` in `mode` at `ps`, in boot `boot`, with `plan` if given.
pub fn open(
    dir: &Path,
    mode: Durability,
    ps: u32,
    boot: [u8; 16],
    plan: Option<FaultPlan>,
) -> sarsen::Result<Env> {
    let mut o = EnvOptions::new()
        .durability(mode)
        .page_size(ps)
        .assume_boot_id(boot);
    if let Some(p) = plan {
        o = o.fault_plan(p);
    }
    unsafe { o.open(dir) }
}

/// `Env::check` must run and find nothing.
pub fn check_clean(env: &Env) -> Result<(), String> {
    let r = env
        .check()
        .map_err(|e| format!("check failed to run: {e}"))?;
    if r.is_ok() {
        return Ok(());
    }
    Err(format!(
        "check found {} problems, first {:?}",
        r.problems_total,
        r.problems.first()
    ))
}

/// A call that wrote (or may have written) to the log: ops `start..end`.
#[derive(Clone, Copy, Debug)]
pub struct Call {
    /// The commit made, or the commit a sync made durable.
    pub txnid: u64,
    pub start: usize,
    /// `None`: the process died in it (or it failed).
    pub end: Option<usize>,
    /// Whether the meta it writes is steady (trusted after a reboot).
    pub steady: bool,
    /// The newest commit the durability contract keeps once it returned.
    pub durable: u64,
}

/// How a call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Done,
    /// The plan's halt fired: the process is dead.
    Killed,
    /// It returned an error without a halt (a programmed fault).
    Failed,
}

/// One database's lives in one boot, and the model of every state.
#[derive(Clone)]
pub struct History {
    /// The recording plan whose log every life's plan shares.
    pub root: FaultPlan,
    pub page_size: u32,
    pub calls: Vec<Call>,
    /// Every state a commit may have left: txnid, first op of its call,
    /// contents (a txnid can be used twice when a commit died unwritten).
    pub states: Vec<(u64, usize, Model)>,
    /// The newest acknowledged (or recovered) state.
    pub model: Model,
    pub last: u64,
    /// Whether `last` has a steady meta (its commit's, or a synced copy).
    pub last_steady: bool,
    /// The newest commit the contract keeps.
    pub durable: u64,
    /// Commits that died or failed since the last recovery, which the next
    /// first opener may find: txnid, contents, steady.
    pub inflight: Vec<(u64, Model, bool)>,
    /// What happened, for failure messages.
    pub story: Vec<String>,
}

impl History {
    pub fn new(page_size: u32) -> History {
        History {
            root: FaultPlan::recording(),
            page_size,
            calls: Vec::new(),
            states: vec![(1, 0, Model::default())],
            model: Model::default(),
            last: 1,
            last_steady: true,
            durable: 1,
            inflight: Vec::new(),
            story: Vec::new(),
        }
    }

    /// Classifies the end of a call made through `plan`.
    fn outcome<T>(
        &mut self,
        plan: &FaultPlan,
        r: Option<sarsen::Result<T>>,
    ) -> (Outcome, Option<T>) {
        match r {
            None => (Outcome::Killed, None),
            Some(_) if plan.halted() => (Outcome::Killed, None),
            Some(Ok(t)) => (Outcome::Done, Some(t)),
            Some(Err(e)) => {
                self.story.push(format!("error: {e}"));
                (Outcome::Failed, None)
            }
        }
    }

    /// One commit of `c` in `env` (mode `mode`, data file plan `plan`).
    pub fn commit(
        &mut self,
        env: &Env,
        plan: &FaultPlan,
        mode: Durability,
        c: &[Change],
    ) -> Outcome {
        let start = self.root.log_len();
        let (how, txnid) = self.outcome(plan, catch_kill(|| commit(env, c)));
        let steady = matches!(mode, Durability::Durable | Durability::NoMetaSync);
        let mut after = self.model.clone();
        apply_model(&mut after, c);
        let Some(txnid) = txnid else {
            let txnid = self.last + 1;
            self.story.push(format!("{mode:?} commit {txnid} {how:?}"));
            self.calls.push(Call {
                txnid,
                start,
                end: None,
                steady,
                durable: self.durable,
            });
            self.states.push((txnid, start, after.clone()));
            self.inflight.push((txnid, after, steady));
            return how;
        };
        if self.root.log_len() == start {
            return Outcome::Done; // nothing changed: no commit was made
        }
        match mode {
            Durability::Durable => self.durable = txnid,
            Durability::NoMetaSync if self.last_steady => self.durable = self.last,
            _ => {}
        }
        (self.last, self.last_steady) = (txnid, steady);
        self.story.push(format!("{mode:?} commit {txnid}"));
        self.calls.push(Call {
            txnid,
            start,
            end: Some(self.root.log_len()),
            steady,
            durable: self.durable,
        });
        self.states.push((txnid, start, after.clone()));
        self.model = after;
        Outcome::Done
    }

    /// A sync in `mode` (`Env::sync`, or `sync` dropping the environment).
    pub fn sync(
        &mut self,
        plan: &FaultPlan,
        mode: Durability,
        sync: impl FnOnce() -> sarsen::Result<()>,
    ) -> Outcome {
        let start = self.root.log_len();
        let (how, _) = self.outcome(plan, catch_kill(sync));
        if mode == Durability::Durable {
            return how; // nothing to make durable
        }
        if how == Outcome::Done {
            (self.durable, self.last_steady) = (self.last, true);
        }
        self.story
            .push(format!("{mode:?} sync of {} {how:?}", self.last));
        self.calls.push(Call {
            txnid: self.last,
            start,
            end: (how == Outcome::Done).then(|| self.root.log_len()),
            steady: true,
            durable: self.durable,
        });
        how
    }

    /// A first opener in this boot found `env`'s state: it must be the
    /// last acknowledged commit or one that was in flight, and clean.
    pub fn recovered(&mut self, env: &Env) -> Result<(), String> {
        let (t, got) = try_contents(env).map_err(|e| format!("reading after recovery: {e}"))?;
        check_clean(env).map_err(|e| format!("recovered txnid {t}: {e}"))?;
        let inflight = std::mem::take(&mut self.inflight);
        if t == self.last && got == self.model {
            return Ok(());
        }
        if let Some((_, m, s)) = inflight.iter().find(|(i, m, _)| *i == t && *m == got) {
            self.story.push(format!("recovered in-flight {t}"));
            (self.last, self.model, self.last_steady) = (t, m.clone(), *s);
            return Ok(());
        }
        let want = inflight
            .iter()
            .find(|(i, ..)| *i == t)
            .map_or(&self.model, |(_, m, _)| m);
        Err(format!(
            "recovered txnid {t}, last acknowledged {}, in flight {:?}: {}",
            self.last,
            inflight.iter().map(|f| f.0).collect::<Vec<_>>(),
            diff(&got, want)
        ))
    }
}

/// One process life: `commits` commits in `mode` (an `Env::sync` after
/// some, in the modes that have one), then a clean close; the process dies
/// at its data file operation `kill.0` (counted from its open), if it
/// gets that far.
#[derive(Clone, Copy, Debug)]
pub struct Life {
    pub mode: Durability,
    pub commits: usize,
    pub seed: u64,
    pub kill: Option<(u64, Kill)>,
}

/// Runs `life` on `dir`. Returns whether the process died (its kill point
/// was reached), or an error if what recovery found is wrong or a call
/// failed without a kill.
pub fn run_life(dir: &Path, h: &mut History, life: &Life) -> Result<bool, String> {
    let ps = h.page_size;
    let plan = h.root.sharing_log();
    if let Some((n, how)) = life.kill {
        plan.halt_at(n, how);
    }
    let env = match catch_kill(|| open(dir, life.mode, ps, BOOT_RUN, Some(plan.clone()))) {
        Some(Ok(env)) => env,
        _ if plan.halted() => {
            h.story.push("killed in open".into());
            return Ok(true);
        }
        Some(Err(e)) => return Err(format!("open after a process death: {e}")),
        None => unreachable!("unwound without a halt"),
    };
    h.recovered(&env)?;
    let mut rng = StdRng::seed_from_u64(life.seed);
    for i in 0..life.commits {
        let n = rng.random_range(1..=40);
        let c = changes(common::mix(life.seed ^ i as u64), ps, n);
        let mut how = h.commit(&env, &plan, life.mode, &c);
        if how == Outcome::Done && life.mode != Durability::Durable && rng.random_bool(0.35) {
            how = h.sync(&plan, life.mode, || env.sync());
        }
        match how {
            Outcome::Done => {}
            Outcome::Killed => {
                env.simulate_crash();
                return Ok(true);
            }
            Outcome::Failed => {
                env.simulate_crash();
                return Err(format!("{} without a kill", h.story.join(", ")));
            }
        }
    }
    // A clean close (its sync too may be cut short by the kill).
    h.sync(&plan, life.mode, || {
        drop(env);
        Ok(())
    });
    Ok(plan.halted())
}

/// The kinds of a life's data file operations, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpClass {
    Page,
    Meta,
    Sync,
}

/// Runs `life` without a kill on a copy of `dir`'s data and lock files and
/// returns its operations (a life is deterministic given the files it
/// starts on).
pub fn probe(dir: &Path, h: &History, life: &Life) -> Vec<OpClass> {
    let copy = tempfile::tempdir().unwrap();
    // The lock file too: what the dead process left there is part of
    // what the next one finds.
    for f in ["data.sdb", "lock.sdb"] {
        if dir.join(f).exists() {
            std::fs::copy(dir.join(f), copy.path().join(f)).unwrap();
        }
    }
    let mut ph = h.clone();
    ph.root = FaultPlan::recording();
    let life = Life {
        kill: None,
        ..*life
    };
    // A wrong recovery shows up in the real run; the probe only counts.
    let _ = run_life(copy.path(), &mut ph, &life);
    let metas = 3 * u64::from(h.page_size);
    ph.root
        .log()
        .iter()
        .map(|o| match o {
            Op::Write { offset, .. } if *offset < metas => OpClass::Meta,
            Op::Write { .. } => OpClass::Page,
            Op::Sync { .. } => OpClass::Sync,
            Op::SetLen { .. } => OpClass::Page,
        })
        .collect()
}

/// Kill points of a life with operations `ops`: just before and just
/// after each meta write and each sync (the last of which is the clean
/// close, no kill).
pub fn kill_points(ops: &[OpClass]) -> Vec<u64> {
    let mut v: Vec<u64> = ops
        .iter()
        .enumerate()
        .filter(|(_, c)| **c != OpClass::Page)
        .flat_map(|(i, _)| [i as u64, i as u64 + 1])
        .collect();
    v.push(ops.len() as u64);
    v.sort_unstable();
    v.dedup();
    v
}

/// How a crash image failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bad {
    /// Open refused the file (no trusted meta, or `Corrupted` in recovery).
    Open,
    /// Reading the state or `Env::check` found corruption.
    Corrupt,
    /// It opened at a txnid the contract does not allow (older than the
    /// newest durable commit, or an unsteady one).
    Txnid,
    /// Clean, at an allowed txnid, but with contents no state had.
    Contents,
}

/// The result of judging crash images.
#[derive(Debug, Default)]
pub struct Verdicts {
    pub images: usize,
    pub failed: usize,
    /// Failed images by [`Bad`].
    pub by_kind: [usize; 4],
    /// Images that opened at an older state than the newest allowed.
    pub fell_back: usize,
    pub first: Vec<String>,
}

impl Verdicts {
    pub fn fail(&mut self, bad: Bad, what: String) {
        self.failed += 1;
        self.by_kind[bad as usize] += 1;
        if self.first.len() < 5 {
            self.first.push(what);
        }
    }

    pub fn add(&mut self, o: Verdicts) {
        self.images += o.images;
        self.failed += o.failed;
        for (a, b) in self.by_kind.iter_mut().zip(o.by_kind) {
            *a += b;
        }
        self.fell_back += o.fell_back;
        for f in o.first {
            if self.first.len() < 5 {
                self.first.push(f);
            }
        }
    }
}

impl History {
    /// The txnids an image cut at op `p` may open at: from the newest the
    /// contract kept by then to the newest whose call had started, among
    /// those with a steady meta.
    pub fn allowed(&self, p: usize) -> Vec<u64> {
        let durable = self
            .calls
            .iter()
            .filter(|c| c.end.is_some_and(|e| e <= p))
            .map(|c| c.durable)
            .max()
            .unwrap_or(1);
        let started: Vec<&Call> = self.calls.iter().filter(|c| c.start < p).collect();
        let newest = started.iter().map(|c| c.txnid).max().unwrap_or(1);
        (durable..=newest)
            .filter(|t| *t == 1 || started.iter().any(|c| c.txnid == *t && c.steady))
            .collect()
    }

    /// Judges the image a power loss before op `p` leaves with `landing`,
    /// opened in a new boot in `dir`.
    fn judge(&self, dir: &Path, p: usize, landing: Landing) -> Result<bool, (Bad, String)> {
        let log = self.root.log();
        let image = crash_image(&log, p, landing);
        image.write_to(&dir.join("data.sdb")).unwrap();
        let env = open(dir, Durability::Durable, self.page_size, BOOT_AFTER, None)
            .map_err(|e| (Bad::Open, format!("open: {e}")))?;
        let (t, got) = try_contents(&env).map_err(|e| (Bad::Corrupt, format!("read: {e}")))?;
        check_clean(&env).map_err(|e| (Bad::Corrupt, format!("txnid {t}: {e}")))?;
        let allowed = self.allowed(p);
        if !allowed.contains(&t) {
            let e = format!("opened at txnid {t}, allowed {allowed:?}");
            return Err((Bad::Txnid, e));
        }
        let fits = self
            .states
            .iter()
            .any(|(s, start, m)| *s == t && (*start < p || t == 1) && *m == got);
        if !fits {
            let m = self.states.iter().rev().find(|(s, ..)| *s == t);
            let d = m.map_or("no such state".into(), |(_, _, m)| diff(&got, m));
            let e = format!("txnid {t} holds no state the model had: {d}");
            return Err((Bad::Contents, e));
        }
        Ok(allowed.last() != Some(&t))
    }

    /// Crash images before every sync of ops `cuts` and at its end (or the
    /// log's, if it runs past it): none, all, all but the metas, and
    /// `random` random subsets of the writes since the last sync landed.
    pub fn judge_images(&self, cuts: Range<usize>, random: usize, seed: u64) -> Verdicts {
        let log = self.root.log();
        // Cut before each sync, and at the end, once something was durable
        // (a file whose creation never reached the disk has no state).
        let first_sync = log.iter().position(|o| matches!(o, Op::Sync { .. }));
        let Some(first_sync) = first_sync else {
            return Verdicts::default();
        };
        let end = cuts.end.min(log.len());
        let mut points: Vec<usize> = (cuts.start.max(first_sync + 1)..end)
            .filter(|i| matches!(log[*i], Op::Sync { .. }))
            .collect();
        points.push(end);
        let dir = tempfile::tempdir().unwrap();
        let mut v = Verdicts::default();
        for p in points {
            let mut landings = vec![
                Landing::Nothing,
                Landing::Everything,
                Landing::LostBelow(3 * u64::from(self.page_size)),
            ];
            landings.extend(
                (0..random).map(|i| Landing::Random(common::mix(seed ^ (p * 64 + i) as u64))),
            );
            for l in landings {
                v.images += 1;
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    self.judge(dir.path(), p, l)
                }));
                match r {
                    Ok(Ok(fell_back)) => v.fell_back += usize::from(fell_back),
                    Ok(Err((bad, e))) => v.fail(
                        bad,
                        format!(
                            "power loss before op {p} of {}, {l:?}: {e}; {}",
                            log.len(),
                            self.story.join(", ")
                        ),
                    ),
                    Err(_) => v.fail(
                        Bad::Corrupt,
                        format!("power loss before op {p}, {l:?}: panicked"),
                    ),
                }
            }
        }
        v
    }
}

/// The last open in this boot: a first opener (every earlier process is
/// dead or closed) that recovers and then dies at once.
pub fn reopen(dir: &Path, h: &mut History) -> Result<(), String> {
    let plan = h.root.sharing_log();
    let env = open(dir, Durability::Durable, h.page_size, BOOT_RUN, Some(plan))
        .map_err(|e| format!("reopen in the same boot: {e}"))?;
    let r = h.recovered(&env);
    env.simulate_crash();
    r.map_err(|e| format!("reopen in the same boot: {e}"))
}

/// What a set of scenarios found.
#[derive(Debug, Default)]
pub struct Summary {
    pub scenarios: usize,
    /// Scenarios in which a first opener of the same boot recovered a
    /// wrong or corrupt state.
    pub reopen_failed: usize,
    pub first_reopen: Vec<String>,
    pub images: Verdicts,
}

impl Summary {
    /// Counts one scenario: `reopen` is how its same-boot recoveries went.
    pub fn scenario(&mut self, what: &str, h: &History, reopen: Result<(), String>) {
        self.scenarios += 1;
        if let Err(e) = reopen {
            self.reopen_failed += 1;
            if self.first_reopen.len() < 3 {
                self.first_reopen
                    .push(format!("{what}: {e}; {}", h.story.join(", ")));
            }
        }
    }

    /// Adds another summary's counts.
    pub fn add(&mut self, o: Summary) {
        self.scenarios += o.scenarios;
        self.reopen_failed += o.reopen_failed;
        for f in o.first_reopen {
            if self.first_reopen.len() < 3 {
                self.first_reopen.push(f);
            }
        }
        self.images.add(o.images);
    }

    /// Prints the counts.
    pub fn print(&self, name: &str) {
        let i = &self.images;
        eprintln!(
            "{name}: {} scenarios, {} failed at a same-boot reopen; {} crash images, {} failed \
             (refused to open {}, corrupt {}, wrong txnid {}, wrong contents {}), {} at an older state",
            self.scenarios,
            self.reopen_failed,
            i.images,
            i.failed,
            i.by_kind[0],
            i.by_kind[1],
            i.by_kind[2],
            i.by_kind[3],
            i.fell_back
        );
    }

    /// Fails if anything failed.
    pub fn assert_clean(&self, name: &str) {
        let i = &self.images;
        assert!(
            self.reopen_failed == 0 && i.failed == 0,
            "{name}: {} of {} scenarios recovered a wrong state in the same boot, \
             {} of {} crash images failed.\nReopen: {:#?}\nImages: {:#?}",
            self.reopen_failed,
            self.scenarios,
            i.failed,
            i.images,
            self.first_reopen,
            i.first
        );
    }
}
