//! Auto-sync thresholds (`EnvOptions::sync_bytes`, `sync_period`, from
//! libmdbx): which commits of the non-durable modes the engine makes
//! durable, read back from `EnvInfo` against a count kept by the test.
//! That those commits survive a power loss is `power_loss.rs`'s
//! `power_loss_auto_sync`.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sarsen::{Durability, Env, EnvOptions};

fn open(dir: &std::path::Path, o: EnvOptions) -> Env {
    unsafe { o.page_size(4096).open(dir) }.unwrap()
}

/// Commits `n` random puts; returns the commit's txnid and a lower bound
/// of its bytes (the pages dirty before commit, and the meta page).
fn commit_puts(env: &Env, rng: &mut StdRng, n: usize) -> (u64, u64) {
    let mut w = env.write_txn().unwrap();
    for _ in 0..n {
        let k: [u8; 8] = rng.random();
        w.put(env.main_db(), &k, &[7u8; 100]).unwrap();
    }
    let txnid = w.txnid();
    let at_least = (w.info().dirty_pages + 1) * 4096;
    w.commit().unwrap();
    (txnid, at_least)
}

/// Pages a commit of a few puts can add to those dirty before it: the
/// GC tree's path and a split, generously.
const GC_PAGES: u64 = 8;

#[test]
fn sync_bytes_bounds_the_bytes_not_yet_durable() {
    const LIMIT: u64 = 256 << 10;
    for mode in [Durability::SafeNoSync, Durability::NoMetaSync] {
        let dir = tempfile::tempdir().unwrap();
        let env = open(
            dir.path(),
            EnvOptions::new().durability(mode).sync_bytes(LIMIT),
        );
        let mut rng = StdRng::seed_from_u64(1);
        let mut synced = 0;
        let mut before = env.info().unwrap().unsynced_bytes;
        assert_eq!(before, 0, "{mode:?}: a new file is durable");
        for _ in 0..300 {
            let n = rng.random_range(1..40);
            let (txnid, at_least) = commit_puts(&env, &mut rng, n);
            let info = env.info().unwrap();
            assert!(info.unsynced_bytes < LIMIT, "{mode:?}: {info:?}");
            if info.durable_txnid == txnid {
                // Made durable here: it reached the threshold. `at_least`
                // leaves out the GC pages commit itself changes (a path of
                // the GC tree, and a split: a few pages).
                assert_eq!(info.unsynced_bytes, 0);
                assert!(before + at_least + GC_PAGES * 4096 >= LIMIT);
                synced += 1;
            } else {
                assert!(
                    info.unsynced_bytes >= before + at_least,
                    "{mode:?}: {info:?}"
                );
            }
            before = info.unsynced_bytes;
        }
        assert!(synced >= 3, "{mode:?}: {synced} durable commits");
        // `Env::sync` starts the count again.
        env.sync().unwrap();
        assert_eq!(env.info().unwrap().unsynced_bytes, 0);
    }
}

#[test]
fn without_a_threshold_or_in_no_sync_mode_nothing_is_made_durable() {
    for o in [
        EnvOptions::new().durability(Durability::SafeNoSync),
        EnvOptions::new()
            .durability(Durability::NoSync)
            .sync_bytes(4096),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let env = open(dir.path(), o);
        let mut rng = StdRng::seed_from_u64(2);
        let first = env.info().unwrap().durable_txnid;
        for _ in 0..50 {
            commit_puts(&env, &mut rng, 20);
        }
        let info = env.info().unwrap();
        assert_eq!(info.durable_txnid, first, "{info:?}");
        assert_eq!(info.unsynced_bytes, 0, "not counted: {info:?}");
    }
}

#[test]
fn sync_period_makes_the_first_commit_after_it_durable() {
    let dir = tempfile::tempdir().unwrap();
    let period = Duration::from_millis(400);
    let env = open(
        dir.path(),
        EnvOptions::new()
            .durability(Durability::SafeNoSync)
            .sync_period(period),
    );
    let mut rng = StdRng::seed_from_u64(3);
    // Right after open (whose recovery synced): not yet.
    let (t1, _) = commit_puts(&env, &mut rng, 5);
    assert!(env.info().unwrap().durable_txnid < t1);
    std::thread::sleep(period + Duration::from_millis(50));
    let (t2, _) = commit_puts(&env, &mut rng, 5);
    assert_eq!(env.info().unwrap().durable_txnid, t2);
    // The period starts again at that commit.
    let (t3, _) = commit_puts(&env, &mut rng, 5);
    assert_eq!(env.info().unwrap().durable_txnid, t2, "{t3} synced early");
}

#[test]
fn the_count_is_shared_by_every_environment_on_the_file() {
    const LIMIT: u64 = 128 << 10;
    let dir = tempfile::tempdir().unwrap();
    let o = EnvOptions::new()
        .durability(Durability::SafeNoSync)
        .sync_bytes(LIMIT);
    let a = open(dir.path(), o.clone());
    let b = open(dir.path(), o);
    let mut rng = StdRng::seed_from_u64(4);
    let mut total = 0;
    let mut synced = false;
    for i in 0..200 {
        let env = if i % 2 == 0 { &a } else { &b };
        let (txnid, at_least) = commit_puts(env, &mut rng, 10);
        let info = b.info().unwrap();
        if info.durable_txnid == txnid {
            synced = true;
            break;
        }
        total += at_least;
        assert_eq!(a.info().unwrap().unsynced_bytes, info.unsynced_bytes);
    }
    assert!(synced, "no commit was made durable");
    assert!(total < LIMIT, "synced only after {total} bytes from both");
}
