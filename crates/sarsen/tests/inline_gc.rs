//! The inline GC (design.md §7, format version 2): small commits carry their free-page lists in
//! their own meta page instead of the GC tree. Checked against a `BTreeMap` model and the
//! integrity check (which accounts for every page), with readers pinning lists, nested
//! transactions rolling loads back, snapshots whose meta is gone, and a format-1 file.

mod common;

use common::*;
use sarsen::{Durability, Env};

const DATA: &str = "data.sdb";
const PS: usize = 4096;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:07}").into_bytes()
}

fn val(i: u32, round: u32) -> Vec<u8> {
    let mut v = vec![0u8; 40 + (i as usize * 7) % 60];
    fill_pattern(&mut v, (u64::from(round) << 32) | u64::from(i));
    v
}

/// An environment with `n` keys written in one commit, and its model.
fn filled(dir: &std::path::Path, n: u32, d: Durability) -> (Env, Map) {
    let env = open(dir, opts(PS as u32, d));
    let mut model = Map::new();
    let mut w = env.write_txn().unwrap();
    for i in 0..n {
        w.put(env.main_db(), &key(i), &val(i, 0)).unwrap();
        model.insert(key(i), val(i, 0));
    }
    w.commit().unwrap();
    (env, model)
}

/// One put of key `i` in its own transaction, in the model too.
fn put_one(env: &Env, model: &mut Map, i: u32, round: u32) {
    let mut w = env.write_txn().unwrap();
    w.put(env.main_db(), &key(i), &val(i, round)).unwrap();
    w.commit().unwrap();
    model.insert(key(i), val(i, round));
}

fn assert_model(env: &Env, model: &Map, what: &str) {
    let r = env.read_txn().unwrap();
    check_db(&r, env.main_db(), model, what, false);
}

/// Closes `env`, opens it again and checks it against the model.
fn reopened(env: Env, dir: &std::path::Path, d: Durability, model: &Map) {
    drop(env);
    let env = open(dir, opts(PS as u32, d));
    assert_check(&env, "reopened");
    assert_model(&env, model, "reopened");
}

/// Pages other than the metas that differ between two images of the file.
fn changed_pages(a: &[u8], b: &[u8]) -> u64 {
    let pages = a.len().max(b.len()) / PS;
    let page = |f: &[u8], p: usize| f.get(p * PS..(p + 1) * PS).map(<[u8]>::to_vec);
    (3..pages).filter(|&p| page(a, p) != page(b, p)).count() as u64
}

/// The GC tree's shape: (leaf pages, entries).
fn gc_tree(env: &Env) -> (u64, u64) {
    let r = env.check().unwrap();
    assert!(r.is_ok(), "{:?}", r.problems);
    let gc = &r.trees[0];
    assert_eq!(gc.name, "gc");
    (gc.leaf_pages, gc.entries)
}

#[test]
fn one_put_commits_leave_the_gc_tree_alone() {
    for d in [Durability::Durable, Durability::NoSync] {
        let dir = tempfile::tempdir().unwrap();
        let (env, mut model) = filled(dir.path(), 20_000, d);
        // Overwrites in batches put records into the GC tree.
        for round in 1..3 {
            let mut w = env.write_txn().unwrap();
            for i in (0..20_000).step_by(3) {
                w.put(env.main_db(), &key(i), &val(i, round)).unwrap();
                model.insert(key(i), val(i, round));
            }
            w.commit().unwrap();
        }
        for i in 0..5 {
            put_one(&env, &mut model, i * 997, 3);
        }
        let tree = gc_tree(&env);
        assert!(tree.1 > 0, "{d:?}: the batches left GC records");
        let end = env.info().unwrap().next_pgno;
        let depth = u64::from(env.check().unwrap().trees[2].depth);
        let path = dir.path().join(DATA);
        for i in 0..300 {
            let before = (i % 15 == 0).then(|| std::fs::read(&path).unwrap());
            put_one(&env, &mut model, (i * 7919) % 20_000, 4 + i);
            if let Some(before) = before {
                // The commit wrote the path to its leaf and a meta: no GC page.
                let after = std::fs::read(&path).unwrap();
                let written = changed_pages(&before, &after);
                assert_eq!(written, depth, "{d:?}: commit {i} wrote {written} pages");
            }
            if i % 50 == 0 {
                assert_check(&env, &format!("{d:?}: commit {i}"));
            }
        }
        assert_eq!(gc_tree(&env), tree, "{d:?}: the GC tree changed");
        assert_eq!(env.info().unwrap().next_pgno, end, "{d:?}: the file grew");
        assert_model(&env, &model, &format!("{d:?}"));
    }
}

#[test]
fn pinned_lists_spill_into_the_gc_tree_and_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let (env, mut model) = filled(dir.path(), 5_000, Durability::NoSync);
    let held = env.read_txn().unwrap();
    let held_model = model.clone();
    let mut spilled = false;
    let before = gc_tree(&env);
    for i in 0..60 {
        put_one(&env, &mut model, (i * 101) % 5_000, 1 + i);
        assert_check(&env, &format!("commit {i} under a reader"));
        spilled |= gc_tree(&env) != before;
    }
    assert!(
        spilled,
        "the reader's pinned lists never reached the GC tree"
    );
    check_db(
        &held,
        env.main_db(),
        &held_model,
        "the held snapshot",
        false,
    );
    // The held snapshot's meta was overwritten long ago: its check takes the
    // pages in no tree and not in the GC tree to be its inline GC.
    let r = held.check().unwrap();
    assert!(r.is_ok(), "{:?}", r.problems);
    drop(held);
    let end = env.info().unwrap().next_pgno;
    for i in 0..200 {
        put_one(&env, &mut model, (i * 37) % 5_000, 100 + i);
    }
    assert_check(&env, "after the reader");
    let grown = env.info().unwrap().next_pgno - end;
    assert!(
        grown <= 8,
        "the file grew {grown} pages with nothing pinned"
    );
    assert_model(&env, &model, "after the reader");
    reopened(env, dir.path(), Durability::NoSync, &model);
}

#[test]
fn safe_no_sync_keeps_lists_until_a_sync() {
    let dir = tempfile::tempdir().unwrap();
    let (env, mut model) = filled(dir.path(), 5_000, Durability::SafeNoSync);
    for i in 0..40 {
        put_one(&env, &mut model, (i * 13) % 5_000, 1 + i);
        if i % 10 == 9 {
            env.sync().unwrap();
        }
        assert_check(&env, &format!("commit {i}"));
    }
    assert_model(&env, &model, "end");
    reopened(env, dir.path(), Durability::SafeNoSync, &model);
}

#[test]
fn aborted_nested_transactions_give_back_loaded_lists() {
    let dir = tempfile::tempdir().unwrap();
    let (env, mut model) = filled(dir.path(), 5_000, Durability::NoSync);
    for i in 0..5 {
        put_one(&env, &mut model, i * 11, 1);
    }
    for round in 0..20u32 {
        let mut w = env.write_txn().unwrap();
        let mut child = w.nested().unwrap();
        for i in 0..3 {
            let k = (round * 131 + i * 1_000) % 5_000;
            child.put(env.main_db(), &key(k), &val(k, 99)).unwrap();
        }
        child.abort();
        let k = (round * 17) % 5_000;
        w.put(env.main_db(), &key(k), &val(k, 2 + round)).unwrap();
        model.insert(key(k), val(k, 2 + round));
        w.commit().unwrap();
        assert_check(&env, &format!("round {round}"));
    }
    assert_model(&env, &model, "end");
}

/// The newest meta slot's offset in `f`: the valid meta with the largest txnid.
fn metas(f: &[u8]) -> Vec<usize> {
    (0..3)
        .map(|s| s * PS)
        .filter(|&m| &f[m..m + 6] == b"SARSEN")
        .collect()
}

fn rd32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

#[test]
fn a_format_1_file_opens_and_is_written_as_format_2() {
    let dir = tempfile::tempdir().unwrap();
    // One commit of inserts frees no page: every meta's inline GC is empty,
    // so each can be rewritten in format 1 without losing a page.
    let (env, model) = filled(dir.path(), 3_000, Durability::Durable);
    drop(env);
    let path = dir.path().join(DATA);
    let mut f = std::fs::read(&path).unwrap();
    let slots = metas(&f);
    assert!(!slots.is_empty());
    for &m in &slots {
        assert_eq!(rd32(&f, m + 8), 2, "meta at {m} is format 2");
        assert_eq!(rd32(&f, m + 296), 0, "meta at {m} carries an inline GC");
        f[m + 8..m + 12].copy_from_slice(&1u32.to_le_bytes());
        f[m + 296..m + 512].fill(0);
        let sum = twox_hash::XxHash3_64::oneshot(&f[m..m + 312]);
        f[m + 312..m + 320].copy_from_slice(&sum.to_le_bytes());
    }
    std::fs::write(&path, &f).unwrap();
    std::fs::remove_file(dir.path().join("lock.sdb")).ok();
    let env = open(dir.path(), opts(PS as u32, Durability::Durable));
    assert_check(&env, "format 1");
    assert_model(&env, &model, "format 1");
    let mut model = model;
    for i in 0..20 {
        put_one(&env, &mut model, i * 100, 1);
    }
    assert_check(&env, "written");
    drop(env);
    let f = std::fs::read(&path).unwrap();
    let newest = metas(&f)
        .into_iter()
        .max_by_key(|&m| u64::from_le_bytes(f[m + 16..m + 24].try_into().unwrap()))
        .unwrap();
    assert_eq!(rd32(&f, newest + 8), 2, "the newest meta is format 2");
    let env = open(dir.path(), opts(PS as u32, Durability::Durable));
    assert_check(&env, "reopened");
    assert_model(&env, &model, "reopened");
}

#[test]
fn check_reports_a_damaged_meta_of_its_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let (env, mut model) = filled(dir.path(), 2_000, Durability::Durable);
    put_one(&env, &mut model, 7, 1);
    assert_check(&env, "before");
    let path = dir.path().join(DATA);
    let f = std::fs::read(&path).unwrap();
    let txnid = |m: usize| u64::from_le_bytes(f[m + 16..m + 24].try_into().unwrap());
    let newest = metas(&f).into_iter().max_by_key(|&m| txnid(m)).unwrap();
    // One bit of the inline GC's area of the snapshot's own meta.
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    let byte = [f[newest + 340] ^ 0x10];
    std::os::unix::fs::FileExt::write_at(&file, &byte, (newest + 340) as u64).unwrap();
    let r = env.check().unwrap();
    assert!(
        r.problems
            .iter()
            .any(|p| p.what.contains("does not decode")),
        "{:?}",
        r.problems
    );
}
