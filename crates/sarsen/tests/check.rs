//! The integrity check: it accounts for every page of a healthy database,
//! finds a flipped byte in every page that a tree uses (and none in free
//! pages, which it must not read), and runs beside a writer.

mod common;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sarsen::merge::Uint64Add;
use sarsen::{DbOptions, Durability, Env, EnvOptions};

fn open(dir: &std::path::Path) -> sarsen::Result<Env> {
    // SAFETY: the test's own temporary directory; nothing else maps it.
    unsafe {
        EnvOptions::new()
            .page_size(512)
            .durability(Durability::Durable)
            .max_dbs(8)
            .open(dir)
    }
}

/// A database with every kind of page: several levels, overflow runs, named
/// databases, catalog settings and GC records.
fn template(dir: &std::path::Path, seed: u64) {
    let env = open(dir).unwrap();
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut w = env.write_txn().unwrap();
    let main = w
        .create_db_with(None, &DbOptions::new().merge_operator(Uint64Add))
        .unwrap();
    let dbs: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|n| w.create_db(Some(n)).unwrap())
        .collect();
    w.commit().unwrap();
    for t in 0..12 {
        let mut w = env.write_txn().unwrap();
        for i in 0..60u32 {
            let k = (rng.random_range(0..400u32)).to_be_bytes();
            let db = dbs[i as usize % dbs.len()];
            let len = if i % 17 == 0 { 1500 } else { 20 };
            w.put(db, &k, &vec![t as u8; len]).unwrap();
            w.merge(main, &k, &1u64.to_le_bytes()).unwrap();
        }
        for _ in 0..20 {
            let k = (rng.random_range(0..400u32)).to_be_bytes();
            w.delete(dbs[0], &k).unwrap();
        }
        w.commit().unwrap();
    }
}

#[test]
fn every_page_is_accounted_for() {
    let dir = tempfile::tempdir().unwrap();
    template(dir.path(), 1);
    let env = open(dir.path()).unwrap();
    let r = env.check().unwrap();
    assert!(r.is_ok(), "{:#?}", r.problems);
    assert_eq!(3 + r.tree_pages + r.free_pages, r.pages);
    assert!(r.free_pages > 0, "the template has GC records");
    let names: Vec<&str> = r.trees.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["gc", "catalog", "main", "a", "b", "c"]);
    let rtx = env.read_txn().unwrap();
    for t in &r.trees[2..] {
        let db = rtx
            .open_db((t.name != "main").then_some(&t.name[..]))
            .unwrap();
        let st = rtx.stat(db.unwrap()).unwrap();
        assert_eq!(
            (
                st.depth,
                st.branch_pages,
                st.leaf_pages,
                st.overflow_pages,
                st.entries
            ),
            (
                t.depth,
                t.branch_pages,
                t.leaf_pages,
                t.overflow_pages,
                t.entries
            ),
            "{}",
            t.name
        );
    }
    assert!(r.trees.iter().any(|t| t.overflow_pages > 0 && t.depth > 1));
}

#[test]
fn a_flipped_byte_in_any_used_page_is_found() {
    let dir = tempfile::tempdir().unwrap();
    template(dir.path(), 2);
    let (pages, tree_pages, txnid) = {
        let env = open(dir.path()).unwrap();
        let r = env.check().unwrap();
        assert!(r.is_ok(), "{:#?}", r.problems);
        (r.pages, r.tree_pages, r.txnid)
    };
    let file = dir.path().join("data.sdb");
    // Only the allocated pages: the rest of the file is a sparse margin.
    let mut pristine = std::fs::read(&file).unwrap();
    pristine.truncate(pages as usize * 512);
    let mut rng = SmallRng::seed_from_u64(3);
    let mut found = 0;
    for p in 3..pages as usize {
        let damaged = tempfile::tempdir().unwrap();
        let mut bytes = pristine.clone();
        let off = p * 512 + rng.random_range(0..512);
        bytes[off] ^= 1 << rng.random_range(0..8);
        std::fs::write(damaged.path().join("data.sdb"), &bytes).unwrap();
        // Without the lock file, open cannot know the newest commit was
        // published: it verifies that commit's pages and, finding one
        // damaged, rolls back to the commit before (which never read it).
        let detected = match open(damaged.path()) {
            Ok(env) => {
                let r = env.check().unwrap();
                for pr in &r.problems {
                    assert!(!pr.what.is_empty());
                }
                !r.is_ok() || r.txnid < txnid
            }
            Err(_) => true,
        };
        found += u64::from(detected);
    }
    // Every page in a tree is covered by a checksum; free pages are not read.
    assert_eq!(found, tree_pages);
}

#[test]
fn check_runs_beside_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    // SAFETY: the test's own temporary directory; nothing else maps it.
    let env = unsafe {
        EnvOptions::new()
            .page_size(512)
            .durability(Durability::NoSync)
            .open(dir.path())
    }
    .unwrap();
    let db = env.main_db();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut rng = SmallRng::seed_from_u64(4);
            for _ in 0..300 {
                let mut w = env.write_txn().unwrap();
                for _ in 0..30 {
                    let k = rng.random_range(0..3000u32).to_be_bytes();
                    if rng.random_bool(0.3) {
                        w.delete(db, &k).unwrap();
                    } else {
                        w.put(db, &k, &[7; 40]).unwrap();
                    }
                }
                w.commit().unwrap();
            }
            stop.store(true, std::sync::atomic::Ordering::Release);
        });
        let mut checks = 0;
        while !stop.load(std::sync::atomic::Ordering::Acquire) || checks == 0 {
            common::assert_check(&env, "beside the writer");
            checks += 1;
        }
    });
}

/// `EnvOptions::validation` refuses at open exactly the damaged copies
/// that `Env::check` finds problems in, and opens the others.
#[test]
fn validation_at_open_agrees_with_check() {
    let dir = tempfile::tempdir().unwrap();
    template(dir.path(), 4);
    let pages = open(dir.path()).unwrap().check().unwrap().pages;
    let mut pristine = std::fs::read(dir.path().join("data.sdb")).unwrap();
    pristine.truncate(pages as usize * 512);
    let mut rng = SmallRng::seed_from_u64(5);
    let (mut refused, mut opened) = (0, 0);
    for p in (3..pages as usize).step_by(3) {
        let damaged = tempfile::tempdir().unwrap();
        let mut bytes = pristine.clone();
        bytes[p * 512 + rng.random_range(0..512)] ^= 1 << rng.random_range(0..8);
        std::fs::write(damaged.path().join("data.sdb"), &bytes).unwrap();
        // The plain open first: it may roll back a damaged newest commit,
        // and rewrite its meta, so the validating open sees the same file.
        let found = match open(damaged.path()) {
            Ok(env) => !env.check().unwrap().is_ok(),
            Err(_) => continue,
        };
        // SAFETY: the test's own temporary directory; nothing else maps it.
        let v = unsafe {
            EnvOptions::new()
                .page_size(512)
                .validation(true)
                .open(damaged.path())
        };
        match v {
            Err(sarsen::Error::Corrupted { .. }) if found => refused += 1,
            Ok(_) if !found => opened += 1,
            Err(e) => panic!("page {p}: check found {found}, validating open gave {e}"),
            Ok(_) => panic!("page {p}: check found problems, validating open accepted"),
        }
    }
    assert!(
        refused > 0 && opened > 0,
        "{refused} refused, {opened} opened"
    );
}
