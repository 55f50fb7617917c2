//! Several process lives in one boot, then a power loss.
//!
//! `power_loss.rs` models one process life and then a power loss. Here a
//! database lives through several processes of one boot (one boot id):
//! each life is the first opener (the previous process died), recovers,
//! checks what it found against the model (the last acknowledged commit or
//! one in flight), commits, and dies at a chosen data file operation (a
//! halt of its `FaultPlan`: that operation and every later one never reach
//! the file), or closes. All lives record into one log; crash images cut
//! at each sync of the later lives (and at the end) are opened in a new
//! boot and must be clean and hold a state the contract allows: never
//! older than the newest commit acknowledged durable (`Durable`: every one;
//! `NoMetaSync`: all but the last; `SafeNoSync`: the last `Env::sync` or
//! clean close), and equal to a committed or in-flight state of the model.
//!
//! The first life dies at each of its kill points in turn (just before and
//! just after each meta write and each `fdatasync`, found by a dry run, and
//! a clean close), each with 1 + `SARSEN_TEST_SCALE` continuations in
//! which later lives die at a random one of theirs. `orphan_*`
//! kills a writer between its meta write and its publish while another
//! environment stays open and goes on writing, then reopens in the boot.
//!
//! `SARSEN_TEST_SCALE` multiplies the commits per life (3) and adds
//! continuations, `SARSEN_TEST_CASES` sets the random landings per crash
//! point (default 1, besides none, all, and all but the metas);
//! `SARSEN_SEED` replays a test's base seed.

mod common;
mod crash_common;
mod lives_common;

use std::path::Path;

use crash_common::changes;
use lives_common::{kill_points, open, probe, reopen, run_life, History, Life, Outcome, Summary};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sarsen::fault::{Fault, Kill, Op, OpKind};
use sarsen::Durability::{self, Durable, NoMetaSync, SafeNoSync};

/// Runs `lives` on `dir`, the first dying at `k0` (of `first_ops`, its
/// dry run's operations), the others at a random kill point, and reopens
/// once more in the boot. Returns the first op of the second life.
fn run_lives(
    dir: &Path,
    h: &mut History,
    lives: &[Life],
    (k0, first_ops): (u64, usize),
    rng: &mut StdRng,
) -> (usize, Result<(), String>) {
    let mut from = 0;
    for (i, life) in lives.iter().enumerate() {
        let (kill, ops) = if i == 0 {
            (k0, first_ops)
        } else {
            let ops = probe(dir, h, life);
            let points = kill_points(&ops);
            (points[rng.random_range(0..points.len())], ops.len())
        };
        // Both ways of dying: the engine sees EIO (and runs its error
        // path), or nothing more of it runs.
        let how = if rng.random_bool(0.5) {
            Kill::Unwind
        } else {
            Kill::Eio
        };
        if i == 1 {
            from = h.root.log_len();
        }
        h.story
            .push(format!("life {i} dies at op {kill} ({how:?})"));
        let life = Life {
            kill: Some((kill, how)),
            ..*life
        };
        match run_life(dir, h, &life) {
            Err(e) => return (from, Err(format!("life {i}: {e}"))),
            // The dry run and the life must agree, or the kill points
            // are not where they seem.
            Ok(died) => assert_eq!(
                died,
                kill < ops as u64,
                "life {i}: kill at op {kill} of a dry run of {ops}: {}",
                h.story.join(", ")
            ),
        }
    }
    (from, reopen(dir, h))
}

/// Every kill point of the first life, each followed by lives that die at
/// random points, then power-loss images of the later lives.
fn lives(modes: &[Durability], ps: u32) -> Summary {
    let name = format!("lives {modes:?} ps {ps}");
    let (seed, _) = common::base_seed(&name);
    let _f = common::OnFail(format!("SEED={seed}"));
    let commits = 3 * common::scale();
    let random = common::cases(1);
    let lives: Vec<Life> = modes
        .iter()
        .enumerate()
        .map(|(i, m)| Life {
            mode: *m,
            commits,
            seed: common::mix(seed ^ i as u64),
            kill: None,
        })
        .collect();
    let empty = tempfile::tempdir().unwrap();
    let dry = probe(empty.path(), &History::new(ps), &lives[0]);
    let (first, first_ops) = (kill_points(&dry), dry.len());
    let mut sum = Summary::default();
    // Each kill point of the first life, with 1 + scale ways on.
    let ways = 1 + common::scale();
    let runs = first.iter().flat_map(|k| std::iter::repeat_n(*k, ways));
    for (j, k0) in runs.enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = History::new(ps);
        let mut rng = StdRng::seed_from_u64(common::mix(seed ^ (j as u64) << 32));
        let (from, r) = run_lives(dir.path(), &mut h, &lives, (k0, first_ops), &mut rng);
        sum.scenario(&format!("{name}, first life killed at op {k0}"), &h, r);
        if from > 0 {
            sum.images
                .add(h.judge_images(from..usize::MAX, random, seed ^ j as u64));
        }
    }
    sum.print(&name);
    sum
}

/// Runs [`lives`] for each of `configs` and fails if any failed.
fn all_lives(name: &str, configs: &[(&[Durability], u32)]) {
    let mut sum = Summary::default();
    for (modes, ps) in configs {
        sum.add(lives(modes, *ps));
    }
    sum.print(name);
    assert!(sum.images.images > 100, "{name}: too few crash images");
    // Some images lost the commit in flight: the cuts reach the syncs.
    assert!(sum.images.fell_back > 0, "{name}: no image fell back");
    sum.assert_clean(name);
}

#[test]
fn lives_durable() {
    let d: &[Durability] = &[Durable, Durable, Durable];
    all_lives("lives_durable", &[(d, 512), (d, 4096)]);
}

#[test]
fn lives_no_meta_sync() {
    let n: &[Durability] = &[NoMetaSync, NoMetaSync, NoMetaSync];
    all_lives("lives_no_meta_sync", &[(n, 512), (n, 4096)]);
}

#[test]
fn lives_safe_no_sync() {
    let s: &[Durability] = &[SafeNoSync, SafeNoSync, SafeNoSync];
    all_lives("lives_safe_no_sync", &[(s, 512), (s, 4096)]);
}

/// One mode per life: `Durable` on top of a dead `NoMetaSync` or
/// `SafeNoSync` process and the other way round.
#[test]
fn lives_mixed_modes() {
    let a: &[Durability] = &[NoMetaSync, Durable, SafeNoSync];
    let b: &[Durability] = &[SafeNoSync, NoMetaSync, Durable];
    all_lives(
        "lives_mixed_modes",
        &[(a, 512), (b, 512), (a, 4096), (b, 4096)],
    );
}

/// How the second writer's commit ends after the first writer died.
#[derive(Clone, Copy, Debug)]
enum End {
    /// Its process dies at this operation of the commit.
    Kill(u64),
    /// This write of the commit fails (`ENOSPC`); it then closes cleanly.
    Fail(u64),
}

/// One orphan scenario, run.
struct Orphaned {
    h: History,
    /// How the boot's last reopen went.
    reopen: Result<(), String>,
    /// The first op of A's last commit.
    from: usize,
    /// The reopen's first sync (the end of the log if none).
    synced: usize,
}

/// Writers A (`Durable`) and B (`b_mode`) share the file. A dies right
/// after writing the meta page of a commit, before publishing it: an
/// orphan meta in the page cache. B, open all along (so it recovers
/// nothing), starts the same txnid on the published state, reusing the
/// pages the orphan references, and ends as `end` says. Then the boot's
/// next first opener must not trust the orphan over what it overwrote.
/// `None` when `end` is past B's commit.
fn orphan(ps: u32, b_mode: Durability, end: End, seed: u64) -> Option<Orphaned> {
    let dir = tempfile::tempdir().unwrap();
    let mut h = History::new(ps);
    let (plan_a, plan_b) = (h.root.sharing_log(), h.root.sharing_log());
    let a = open(
        dir.path(),
        Durable,
        ps,
        lives_common::BOOT_RUN,
        Some(plan_a.clone()),
    )
    .unwrap();
    let b = open(
        dir.path(),
        b_mode,
        ps,
        lives_common::BOOT_RUN,
        Some(plan_b.clone()),
    )
    .unwrap();
    for i in 0..4u64 {
        let c = changes(common::mix(seed ^ i), ps, 30);
        let done = if i % 2 == 0 {
            h.commit(&a, &plan_a, Durable, &c)
        } else {
            h.commit(&b, &plan_b, b_mode, &c)
        };
        assert_eq!(done, Outcome::Done);
    }
    let from = h.root.log_len();
    let metas = 3 * u64::from(ps);
    let mut wrote_meta = false;
    plan_a.halt_when(Kill::Unwind, move |o| {
        let hit = wrote_meta;
        wrote_meta |= o.kind == OpKind::Write && o.offset < metas;
        hit
    });
    let c = changes(common::mix(seed ^ 0xA), ps, 30);
    assert_eq!(h.commit(&a, &plan_a, Durable, &c), Outcome::Killed);
    a.simulate_crash();
    match end {
        End::Kill(n) => plan_b.halt_at(plan_b.ops() + n, Kill::Unwind),
        End::Fail(n) => plan_b.fail(Fault {
            kind: OpKind::Write,
            nth: n,
            errno: libc::ENOSPC,
            torn: false,
            sticky: false,
        }),
    }
    let c = changes(common::mix(seed ^ 0xB), ps, 30);
    match h.commit(&b, &plan_b, b_mode, &c) {
        Outcome::Done => {
            plan_b.cancel_halt();
            return None;
        }
        Outcome::Killed => b.simulate_crash(),
        Outcome::Failed => {
            h.sync(&plan_b, b_mode, || {
                drop(b);
                Ok(())
            });
        }
    }
    h.story.push(format!("B's commit ends: {end:?}"));
    let reopen_at = h.root.log_len();
    let r = reopen(dir.path(), &mut h);
    let log = h.root.log();
    let synced = (reopen_at..log.len())
        .find(|i| matches!(log[*i], Op::Sync { .. }))
        .unwrap_or(log.len());
    Some(Orphaned {
        h,
        reopen: r,
        from,
        synced,
    })
}

/// Which power losses an orphan test judges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cuts {
    /// After B's death, up to the boot's reopen's first sync (the state
    /// B's death left, with whatever the reopen wrote before it synced).
    BeforeReopen,
    /// After the reopen's first sync (and at the end of the log).
    FromReopen,
}

/// Every way B's commit can end (killed at each of its operations, or
/// failing at each of its writes), for both B modes and page sizes.
fn orphan_suite(name: &str, cuts: Cuts, judge_reopen: bool) {
    let (seed, _) = common::base_seed(name);
    let _f = common::OnFail(format!("SEED={seed}"));
    let random = common::cases(1);
    let mut sum = Summary::default();
    for ps in [512, 4096] {
        for b_mode in [Durable, NoMetaSync] {
            let ends = (0..32).map(End::Kill).chain((0..32).map(End::Fail));
            let mut kind_done = None;
            for end in ends {
                let kind = matches!(end, End::Kill(_));
                if kind_done == Some(kind) {
                    continue;
                }
                let Some(Orphaned {
                    h,
                    reopen: r,
                    from,
                    synced,
                }) = orphan(ps, b_mode, end, seed)
                else {
                    kind_done = Some(kind); // past B's commit
                    continue;
                };
                let what = format!("ps {ps}, B {b_mode:?}, B's commit: {end:?}");
                let r = if judge_reopen { r } else { Ok(()) };
                sum.scenario(&what, &h, r);
                let range = match cuts {
                    Cuts::BeforeReopen => from..synced,
                    Cuts::FromReopen => synced + 1..usize::MAX,
                };
                let n = match end {
                    End::Kill(n) | End::Fail(n) => n,
                };
                sum.images.add(h.judge_images(range, random, seed ^ n));
            }
        }
    }
    sum.print(name);
    assert!(sum.scenarios >= 16, "too few variants: {}", sum.scenarios);
    sum.assert_clean(name);
}

/// Defect 12 of the review: a writer killed between its meta write and its
/// publish leaves an orphan meta that the boot's next first opener must
/// not trust once another writer has reused its pages; nor may a power
/// loss after that reopen find it.
#[test]
fn orphan_meta_same_boot_reopen() {
    orphan_suite("orphan_meta_same_boot_reopen", Cuts::FromReopen, true);
}

/// The same orphan, with the power loss striking after B's death and
/// before any reopen: the orphan's meta may reach the disk with B's pages
/// over its own, and a new boot must still not open it.
#[test]
fn orphan_meta_power_loss_before_reopen() {
    orphan_suite(
        "orphan_meta_power_loss_before_reopen",
        Cuts::BeforeReopen,
        false,
    );
}
