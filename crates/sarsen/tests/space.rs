//! Space reuse: rewriting and deleting the same records over and over must not grow the file
//! without bound (freed pages are reused), and a held reader pins pages only while it lives.
//!
//! `SARSEN_SPACE_RECORDS` (default 100000) and `SARSEN_SPACE_ROUNDS` (default 50) size the main test.

mod common;

use std::path::Path;

use common::*;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use sarsen::{Database, Durability, Env, RwTxn};

fn key(i: u32) -> Vec<u8> {
    format!("rec{i:08}").into_bytes()
}

/// Value of record `i` written in round `r`, phase `p`. Sizes vary with (i, r, p); about one
/// record in 250 gets an overflow-sized value in every other round.
fn val(r: u32, i: u32, p: u32) -> Vec<u8> {
    let len = if i.is_multiple_of(250) && (r + p).is_multiple_of(2) {
        5000 + (i as usize % 3000)
    } else {
        8 + ((i as usize * 31 + r as usize * 17 + p as usize * 5) % 120)
    };
    let mut v = vec![0u8; len];
    fill_pattern(&mut v, ((r as u64) << 40) ^ ((p as u64) << 32) ^ i as u64);
    v
}

/// (bytes of pages in use, next_pgno × page size; disk blocks the data file
/// occupies). The file's apparent length runs a sparse margin ahead of the
/// pages in use (for the kernel's readahead), so it is not a measure of
/// space; both of these are.
fn sizes(env: &Env, dir: &Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let info = env.info().unwrap();
    let blocks = std::fs::metadata(dir.join("data.sdb")).unwrap().blocks() * 512;
    (info.next_pgno * u64::from(info.page_size), blocks)
}

/// Current version (round, phase) of each record; None = absent.
struct Model {
    ver: Vec<Option<(u32, u32)>>,
}

impl Model {
    fn check_sample(&self, env: &Env, db: Database, rng: &mut StdRng, n: usize, what: &str) {
        let r = env.read_txn().unwrap();
        let present = self.ver.iter().filter(|v| v.is_some()).count() as u64;
        assert_eq!(r.stat(db).unwrap().entries, present, "{what}: stat.entries");
        for _ in 0..n {
            let i = rng.random_range(0..self.ver.len() as u32);
            let got = r.get(db, &key(i)).unwrap();
            let exp = self.ver[i as usize].map(|(rr, p)| val(rr, i, p));
            assert!(
                got == exp.as_deref(),
                "{what}: record {i}: got {} expected {}",
                show_opt(got),
                show_opt(exp.as_deref())
            );
        }
    }

    fn check_full(&self, env: &Env, db: Database, what: &str) {
        let r = env.read_txn().unwrap();
        let mut it = r.iter(db).unwrap();
        for (i, v) in self.ver.iter().enumerate() {
            let Some((rr, p)) = v else { continue };
            let (k, got) = it
                .next()
                .unwrap_or_else(|| panic!("{what}: iteration ended before record {i}"))
                .unwrap();
            assert_eq!(k, key(i as u32).as_slice(), "{what}: key order");
            assert!(
                got == val(*rr, i as u32, *p).as_slice(),
                "{what}: value of record {i}"
            );
        }
        assert!(it.next().is_none(), "{what}: extra entries");
    }
}

fn put_batch(w: &mut RwTxn, db: Database, m: &mut Model, idx: &[u32], r: u32, p: u32) {
    for &i in idx {
        w.put(db, &key(i), &val(r, i, p)).unwrap();
        m.ver[i as usize] = Some((r, p));
    }
}

#[test]
fn rewrite_and_delete_rounds_keep_file_size_bounded() {
    let n = env_usize("SARSEN_SPACE_RECORDS", 100_000) as u32;
    let rounds = env_usize("SARSEN_SPACE_ROUNDS", 50) as u32;
    let (seed, _) = base_seed("rewrite_and_delete_rounds_keep_file_size_bounded");
    let mut rng = StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let env = open(
        dir.path(),
        opts(4096, Durability::NoSync).growth_step(1 << 20),
    );
    let db = env.main_db();
    let mut m = Model {
        ver: vec![None; n as usize],
    };
    let all: Vec<u32> = (0..n).collect();
    let mut base: Option<u64> = None;
    let mut trajectory = Vec::new();
    for r in 0..rounds {
        // 1. rewrite every record, 1000 per txn, batches in random order
        let mut chunks: Vec<&[u32]> = all.chunks(1000).collect();
        chunks.shuffle(&mut rng);
        for c in chunks {
            let mut w = env.write_txn().unwrap();
            put_batch(&mut w, db, &mut m, c, r, 0);
            w.commit()
                .unwrap_or_else(|e| panic!("round {r}, rewrite phase: commit: {e:?}"));
        }
        // 2. delete half of them
        let half: Vec<u32> = all.iter().copied().filter(|i| (i + r) % 2 == 0).collect();
        for c in half.chunks(1000) {
            let mut w = env.write_txn().unwrap();
            for &i in c {
                assert!(
                    w.delete(db, &key(i)).unwrap(),
                    "round {r}: delete of present record {i}"
                );
                m.ver[i as usize] = None;
            }
            w.commit()
                .unwrap_or_else(|e| panic!("round {r}, delete phase: commit: {e:?}"));
        }
        if r == 0 {
            m.check_sample(&env, db, &mut rng, 1000, "round 0 after delete");
        }
        // 3. reinsert them
        for c in half.chunks(1000) {
            let mut w = env.write_txn().unwrap();
            put_batch(&mut w, db, &mut m, c, r, 1);
            w.commit()
                .unwrap_or_else(|e| panic!("round {r}, reinsert phase: commit: {e:?}"));
        }
        // 4. a few transactions of scattered updates (touch many leaves each)
        for _ in 0..5 {
            let idx: Vec<u32> = (0..500).map(|_| rng.random_range(0..n)).collect();
            let mut w = env.write_txn().unwrap();
            put_batch(&mut w, db, &mut m, &idx, r, 2);
            w.commit()
                .unwrap_or_else(|e| panic!("round {r}, scattered phase: commit: {e:?}"));
        }
        let what = format!("round {r}");
        m.check_sample(&env, db, &mut rng, 2000, &what);
        common::assert_check(&env, &what);
        if r % 10 == 9 || r + 1 == rounds {
            m.check_full(&env, db, &what);
        }
        let (now, len) = sizes(&env, dir.path());
        trajectory.push((now, len));
        match base {
            None => base = Some(now.max(len)),
            Some(b) => {
                let limit = b + b / 2;
                assert!(
                    now <= limit && len <= limit,
                    "{what}: data file grew to pages in use={now} / disk blocks={len}, over 1.5x the size after round 0 ({b}); sizes per round: {trajectory:?}"
                );
            }
        }
    }
    eprintln!("file sizes per round (geometry.now, file len): {trajectory:?}");
    m.check_full(&env, db, "end");
    drop(env);
    // and everything is still there after reopening
    let env = open(dir.path(), opts(4096, Durability::NoSync));
    m.check_full(&env, env.main_db(), "after reopen");
    // Emptied, the file gives its space back by itself (issue 23): the
    // next commits move what is left out of the tail, give the tail back
    // and cut the file.
    let db = env.main_db();
    for c in all.chunks(5000) {
        let mut w = env.write_txn().unwrap();
        for &i in c {
            if m.ver[i as usize].take().is_some() {
                assert!(w.delete(db, &key(i)).unwrap(), "final delete of {i}");
            }
        }
        w.commit().unwrap();
    }
    for i in 0..3 {
        let mut w = env.write_txn().unwrap();
        put_batch(&mut w, db, &mut m, &[i], rounds, 3);
        w.commit().unwrap();
    }
    m.check_full(&env, db, "emptied");
    common::assert_check(&env, "emptied");
    // Within the default shrink threshold (16 MiB) of one record: what is
    // left to give back is less than a compaction is started for.
    let (now, _) = sizes(&env, dir.path());
    let len = std::fs::metadata(dir.path().join("data.sdb"))
        .unwrap()
        .len();
    let threshold = env.info().unwrap().geometry.shrink_threshold;
    let before = trajectory.last().map_or(0, |t| t.0);
    assert!(
        now <= threshold && len <= threshold && len < before / 2,
        "emptied: pages in use end at {now} bytes, file {len} bytes (before: {trajectory:?})"
    );
}

/// A reader held open pins the pages of its snapshot (which must stay intact while the file may
/// grow); once it is dropped, the freed pages are reused and the file stops growing.
#[test]
fn held_reader_pins_pages_until_dropped() {
    let n = 20_000u32;
    let step = 1u64 << 18;
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path(), opts(4096, Durability::NoSync).growth_step(step));
    let db = env.main_db();
    let mut m = Model {
        ver: vec![None; n as usize],
    };
    let all: Vec<u32> = (0..n).collect();
    let rewrite = |m: &mut Model, r: u32| {
        for c in all.chunks(1000) {
            let mut w = env.write_txn().unwrap();
            put_batch(&mut w, db, m, c, r, 0);
            w.commit().unwrap();
        }
    };
    rewrite(&mut m, 0);
    rewrite(&mut m, 1);
    let (s0, _) = sizes(&env, dir.path());

    let pin = env.read_txn().unwrap();
    let pinned = Model { ver: m.ver.clone() };
    let mut pinned_sizes = Vec::new();
    for r in 2..10 {
        rewrite(&mut m, r);
        pinned_sizes.push(sizes(&env, dir.path()));
    }
    // the pinned snapshot is intact: none of its pages were reused
    {
        let mut it = pin.iter(db).unwrap();
        for (i, v) in pinned.ver.iter().enumerate() {
            let (rr, p) = v.unwrap();
            let (k, got) = it.next().expect("pinned snapshot ended early").unwrap();
            assert_eq!(k, key(i as u32).as_slice());
            assert!(
                got == val(rr, i as u32, p).as_slice(),
                "pinned snapshot: record {i} changed"
            );
        }
        assert!(it.next().is_none());
    }
    let (s_drop, len_drop) = sizes(&env, dir.path());
    drop(pin);
    eprintln!("size before pin {s0}, while pinned {pinned_sizes:?}, at drop {s_drop}/{len_drop}");

    let limit = s_drop.max(len_drop) + s_drop / 10 + step;
    let mut after = Vec::new();
    for r in 10..25 {
        rewrite(&mut m, r);
        let (now, len) = sizes(&env, dir.path());
        after.push((now, len));
        assert!(
            now <= limit && len <= limit,
            "file kept growing after the reader was dropped: size at drop {s_drop}, now {now}/{len} (round {r}); after drop: {after:?}"
        );
    }
    m.check_full(&env, db, "after the pinned phase");
    eprintln!("sizes after drop: {after:?}");
}

/// Puts 20,000 records in one commit and deletes three in four in the
/// next: a GC of hundreds of free pages for small commits to reuse. Returns
/// the main database and the model.
fn fill_and_free(env: &Env) -> (Database, Model) {
    let db = env.main_db();
    let mut m = Model {
        ver: vec![None; 20_000],
    };
    let all: Vec<u32> = (0..20_000).collect();
    let mut w = env.write_txn().unwrap();
    put_batch(&mut w, db, &mut m, &all, 0, 0);
    w.commit().unwrap();
    let mut w = env.write_txn().unwrap();
    for i in (0..20_000u32).filter(|i| i % 4 != 0) {
        assert!(w.delete(db, &key(i)).unwrap());
        m.ver[i as usize] = None;
    }
    w.commit().unwrap();
    (db, m)
}

/// Small commits that are not yet durable reuse the pages an older,
/// durable commit freed, until those run out; the file does not grow.
///
/// In `SafeNoSync` only pages freed by durable commits are reusable, so
/// each small commit takes a few pages from the record of the large delete
/// below. The pages it leaves must stay where they are
/// reusable: saved again under the small commit's own (not yet durable)
/// txnid, they would be out of reach until the next sync, and every commit
/// would extend the file instead.
#[test]
fn unsynced_small_commits_reuse_pages_freed_before_the_last_sync() {
    {
        let mode = Durability::SafeNoSync;
        let dir = tempfile::tempdir().unwrap();
        let env = unsafe {
            sarsen::EnvOptions::new()
                .durability(mode)
                .page_size(4096)
                .open(dir.path())
        }
        .unwrap();
        let (db, mut m) = fill_and_free(&env);
        env.sync().unwrap();
        let before = env.info().unwrap();
        let mut rng = StdRng::seed_from_u64(7);
        let commits = 40;
        for r in 1..=commits {
            let mut w = env.write_txn().unwrap();
            put_batch(
                &mut w,
                db,
                &mut m,
                &[4 * rng.random_range(0..5_000u32)],
                r,
                1,
            );
            w.commit().unwrap();
        }
        let after = env.info().unwrap();
        assert_eq!(
            after.durable_txnid, before.durable_txnid,
            "{mode:?}: no commit synced"
        );
        // Each commit takes a few pages; the delete freed far more than 40 commits take.
        assert!(
            before.gc_pages > 10 * commits as u64,
            "{mode:?}: the delete freed only {} pages",
            before.gc_pages
        );
        // The GC tree's own rarer splits may take a page from the end of
        // the file; pages left unreachable would cost several per commit.
        assert!(
            after.next_pgno <= before.next_pgno + commits as u64 / 10,
            "{mode:?}: the file grew from {} to {} pages while reusable pages were in the GC",
            before.next_pgno,
            after.next_pgno
        );
        m.check_full(&env, db, "after the small commits");
    }
}

/// One-put commits while readers hold one of the last few snapshots (so
/// each writer's reuse bound is one to three commits back, as beside a
/// busy reader thread) reuse the pages freed before, and do not grow the
/// file: records that commits used up and wrote empty must not stop the
/// search for reusable pages.
#[test]
fn small_commits_behind_a_lagging_reader_reuse_pages() {
    let dir = tempfile::tempdir().unwrap();
    let env = unsafe {
        sarsen::EnvOptions::new()
            .durability(Durability::NoSync)
            .page_size(4096)
            .open(dir.path())
    }
    .unwrap();
    let (db, mut m) = fill_and_free(&env);
    let before = env.info().unwrap();
    let commits = 3000u32;
    let mut rng = StdRng::seed_from_u64(11);
    let mut held = std::collections::VecDeque::new();
    for r in 1..=commits {
        // Readers of the last one to three snapshots, as a busy reader
        // thread leaves them: the bound moves back and forth.
        held.push_back(env.read_txn().unwrap());
        while held.len() > rng.random_range(1..=3) {
            held.pop_front();
        }
        let mut w = env.write_txn().unwrap();
        put_batch(
            &mut w,
            db,
            &mut m,
            &[4 * rng.random_range(0..5_000u32)],
            r,
            1,
        );
        w.commit().unwrap();
    }
    drop(held);
    let after = env.info().unwrap();
    assert!(
        before.gc_pages > 300,
        "the delete freed only {} pages",
        before.gc_pages
    );
    // A few pages per commit from the end of the file would be thousands.
    assert!(
        after.next_pgno <= before.next_pgno + u64::from(commits) / 30,
        "the file grew from {} to {} pages while {} were free",
        before.next_pgno,
        after.next_pgno,
        before.gc_pages
    );
    m.check_full(&env, db, "after the small commits");
}
