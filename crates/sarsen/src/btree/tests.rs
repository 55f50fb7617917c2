//! Unit tests of the B+tree on the in-memory page store
//! (`store::testing`): splits, merges and rebalancing, overflow runs,
//! DUPSORT sub-trees and sealing, each against a `BTreeMap` model and a
//! walk that checks the tree's shape.

use std::collections::{BTreeMap, BTreeSet};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::dup::{self, Dups, Vals};
use super::walk::RawCursor;
use super::{seal, Source, Tree, TreeState};
use crate::error::Error;
use crate::order::Order;
use crate::page::node::{DUPS, SUBTREE};
use crate::page::record::DUPSORT;
use crate::page::{checksum, DbRecord, LeafValue, Pgno, META_PAGES};
use crate::store::testing::mem_pager;
use crate::store::{PageStore, Pager};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Every pair of the tree `rec`, in order.
fn contents(p: &Pager, rec: &DbRecord) -> Model {
    let mut c = RawCursor::new(p.view(), *rec, Order::Bytewise);
    let mut out = Model::new();
    let mut e = c.first().expect("first");
    while let Some((k, v)) = e {
        out.insert(k.to_vec(), v.to_vec());
        e = c.next().expect("next");
    }
    out
}

/// What [`shape`] counts.
#[derive(Default, Debug, PartialEq)]
struct Counts {
    leaves: u64,
    branches: u64,
    overflow: u64,
    entries: u64,
}

/// Walks the tree `rec` and checks its shape: every leaf at the recorded
/// depth, no empty page below the root, keys of each page inside the
/// bounds its parent's separators give. Returns what it counted.
fn shape(p: &Pager, rec: &DbRecord) -> Counts {
    let mut n = Counts::default();
    if rec.root != 0 {
        walk(p, rec.root, rec.depth as usize, None, None, true, &mut n);
    }
    n
}

fn walk(
    p: &Pager,
    pgno: Pgno,
    levels: usize,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
    root: bool,
    n: &mut Counts,
) {
    let l = p.layout;
    let pg = p.view().page(pgno).expect("page");
    assert!(levels >= 1, "tree deeper than recorded at {pgno}");
    assert_eq!(pg.is_leaf(), levels == 1, "page {pgno} at the wrong level");
    assert!(root || pg.len() > 0, "empty page {pgno} below the root");
    let in_bounds = |k: &[u8]| lo.is_none_or(|lo| lo <= k) && hi.is_none_or(|hi| k < hi);
    if pg.is_leaf() {
        n.leaves += 1;
        let mut prev: Option<&[u8]> = None;
        for i in 0..pg.len() {
            let nd = pg.leaf(i).expect("leaf node");
            assert!(
                in_bounds(nd.key),
                "key outside its parent's bounds in {pgno}"
            );
            assert!(
                prev.is_none_or(|k| k < nd.key),
                "keys out of order in {pgno}"
            );
            prev = Some(nd.key);
            if let LeafValue::Overflow { len, .. } = nd.value {
                n.overflow += l.overflow_pages(len) as u64;
            }
            n.entries += 1;
        }
        return;
    }
    n.branches += 1;
    for i in 0..pg.len() {
        let b = pg.branch(i).expect("branch node");
        let lo = if i == 0 { lo } else { Some(b.key) };
        let next = (i + 1 < pg.len()).then(|| pg.branch(i + 1).expect("branch node").key);
        let hi = next.or(hi);
        walk(p, b.child, levels - 1, lo, hi, false, n);
    }
}

/// Checks `rec` against the model and its own counts.
fn assert_matches(p: &Pager, rec: &DbRecord, model: &Model) {
    assert_eq!(&contents(p, rec), model);
    let n = shape(p, rec);
    assert_eq!(n.entries, rec.entries, "entries");
    assert_eq!(n.entries, model.len() as u64, "entries against the model");
    assert_eq!(n.leaves, rec.leaf_pages, "leaf pages");
    assert_eq!(n.branches, rec.branch_pages, "branch pages");
    assert_eq!(n.overflow, rec.overflow_pages, "overflow pages");
}

/// Whether every page allocated is back in the free lists (all pages of
/// the in-memory store are this transaction's, so freed ones are reusable
/// at once).
fn assert_no_leak(p: &Pager) {
    let allocated = (p.next_pgno - META_PAGES) as usize;
    let free: BTreeSet<Pgno> = p.reclaimed.iter().copied().collect();
    assert_eq!(free.len(), p.reclaimed.len(), "a page freed twice");
    assert_eq!(free.len(), allocated, "pages leaked");
    assert!(p.freed.is_empty());
    assert!(
        p.dirty.is_empty(),
        "dirty pages left after the tree emptied"
    );
}

fn key(rng: &mut StdRng) -> Vec<u8> {
    let len = rng.random_range(1..40);
    (0..len).map(|_| rng.random_range(b'a'..=b'h')).collect()
}

fn value(rng: &mut StdRng) -> Vec<u8> {
    // Mostly inline; one in ten is an overflow run at 512-byte pages.
    let len = if rng.random_ratio(1, 10) {
        rng.random_range(300..3000)
    } else {
        rng.random_range(0..100)
    };
    (0..len).map(|_| rng.random()).collect()
}

#[test]
fn random_puts_and_deletes_match_a_model() {
    for seed in 0..4 {
        let (_dir, mut p) = mem_pager(512, 1 << 20);
        let mut st = TreeState::default();
        let mut rec = DbRecord::default();
        let mut model = Model::new();
        let mut rng = StdRng::seed_from_u64(seed);
        let mut max_depth = 0;
        for op in 0..4000 {
            let mut t = Tree::new(&mut p, &mut st, &mut rec, Order::Bytewise);
            if rng.random_ratio(2, 3) {
                let (k, v) = (key(&mut rng), value(&mut rng));
                t.put(&k, &v).expect("put");
                model.insert(k, v);
            } else {
                let k = key(&mut rng);
                let had = t.delete(&k).expect("delete");
                assert_eq!(had, model.remove(&k).is_some(), "delete's answer");
            }
            max_depth = max_depth.max(rec.depth);
            if op % 250 == 0 {
                assert_matches(&p, &rec, &model);
            }
        }
        assert_matches(&p, &rec, &model);
        assert!(max_depth >= 3, "small pages must split to three levels");
        // Empty it in random order: merges and rebalancing all the way.
        let mut keys: Vec<Vec<u8>> = model.keys().cloned().collect();
        while !keys.is_empty() {
            let k = keys.swap_remove(rng.random_range(0..keys.len()));
            let mut t = Tree::new(&mut p, &mut st, &mut rec, Order::Bytewise);
            assert!(t.delete(&k).expect("delete"));
            model.remove(&k);
            if keys.len().is_multiple_of(97) {
                assert_matches(&p, &rec, &model);
            }
        }
        assert_eq!((rec.root, rec.depth), (0, 0));
        assert_no_leak(&p);
    }
}

#[test]
fn sequential_puts_pack_leaves_fuller_than_random_ones() {
    let keys: Vec<Vec<u8>> = (0..3000u32).map(|i| i.to_be_bytes().to_vec()).collect();
    let leaves = |order: &[usize]| {
        let (_dir, mut p) = mem_pager(512, 1 << 20);
        let mut st = TreeState::default();
        let mut rec = DbRecord::default();
        let mut model = Model::new();
        for &i in order {
            let mut t = Tree::new(&mut p, &mut st, &mut rec, Order::Bytewise);
            t.put(&keys[i], b"value").expect("put");
            model.insert(keys[i].clone(), b"value".to_vec());
        }
        assert_matches(&p, &rec, &model);
        rec.leaf_pages
    };
    let seq: Vec<usize> = (0..keys.len()).collect();
    let mut shuffled = seq.clone();
    let mut rng = StdRng::seed_from_u64(7);
    for i in (1..shuffled.len()).rev() {
        shuffled.swap(i, rng.random_range(0..=i));
    }
    let (s, r) = (leaves(&seq), leaves(&shuffled));
    // A split at the right edge leaves the left page full; a random split
    // leaves two half-full pages, which fill to about 70% on average.
    assert!(s * 5 < r * 4, "sequential {s} leaves, random {r}");
}

#[test]
fn append_refuses_a_key_that_does_not_sort_last_and_changes_nothing() {
    let (_dir, mut p) = mem_pager(512, 1 << 20);
    let mut st = TreeState::default();
    let mut rec = DbRecord::default();
    let mut model = Model::new();
    for i in 0..500u32 {
        let k = (i * 2).to_be_bytes();
        Tree::new(&mut p, &mut st, &mut rec, Order::Bytewise)
            .append(&k, b"v")
            .expect("append");
        model.insert(k.to_vec(), b"v".to_vec());
    }
    let before = rec;
    for k in [0u32, 1, 501, 998] {
        let r =
            Tree::new(&mut p, &mut st, &mut rec, Order::Bytewise).append(&k.to_be_bytes(), b"x");
        assert!(matches!(r, Err(Error::KeyNotGreater)), "{k}: {r:?}");
        assert_eq!(rec, before);
    }
    assert_matches(&p, &rec, &model);
}

#[test]
fn a_failed_reserve_changes_nothing() {
    // Room for a few dozen pages: puts fail with `UpperBoundReached` long
    // before the model runs out of keys, and deletes make room again, so
    // the free pages hover where a put's worst case (a split at every
    // level, a new root, an overflow run) no longer fits.
    let mut failures = 0;
    for seed in 0..12 {
        let (_dir, mut p) = mem_pager(512, META_PAGES + 40);
        let mut st = TreeState::default();
        let mut rec = DbRecord::default();
        let mut model = Model::new();
        let mut rng = StdRng::seed_from_u64(seed);
        for _ in 0..3000 {
            let mut t = Tree::new(&mut p, &mut st, &mut rec, Order::Bytewise);
            if model.is_empty() || rng.random_ratio(3, 4) {
                let (k, v) = (key(&mut rng), value(&mut rng));
                match t.put(&k, &v) {
                    Ok(()) => {
                        model.insert(k, v);
                    }
                    Err(Error::UpperBoundReached { .. }) => {
                        failures += 1;
                        assert_matches(&p, &rec, &model);
                    }
                    Err(e) => panic!("put: {e}"),
                }
            } else {
                let i = rng.random_range(0..model.len());
                let k = model.keys().nth(i).cloned().unwrap_or_default();
                match t.delete(&k) {
                    Ok(found) => {
                        assert!(found);
                        model.remove(&k);
                    }
                    // A delete reserves its worst case (a merge at every
                    // level) too.
                    Err(Error::UpperBoundReached { .. }) => {
                        failures += 1;
                        assert_matches(&p, &rec, &model);
                    }
                    Err(e) => panic!("delete: {e}"),
                }
            }
        }
        assert_matches(&p, &rec, &model);
    }
    assert!(failures > 100, "the bound was reached {failures} times");
}

/// The values stored for `key` in the DUPSORT tree `rec`, and the flags of
/// its leaf node.
fn dup_values(p: &Pager, rec: &DbRecord, d: Dups<'_>, key: &[u8]) -> (Vec<Vec<u8>>, u8) {
    let (path, found) = super::descend(p.view(), rec, Order::Bytewise, key).expect("descend");
    assert!(found);
    let leaf = path.leaf();
    let nd = p.view().page(leaf.pgno).unwrap().leaf(leaf.idx()).unwrap();
    let vals = match dup::vals(&nd, d, leaf.pgno).expect("values") {
        Vals::One(v) => vec![v.to_vec()],
        Vals::List(l) => (0..l.len()).map(|i| l.get(i).unwrap().to_vec()).collect(),
        Vals::Tree(sub) => contents(p, &sub).into_keys().collect(),
    };
    (vals, nd.flags)
}

#[test]
fn duplicates_move_to_a_subtree_and_back_inline() {
    let (_dir, mut p) = mem_pager(512, 1 << 20);
    let mut st = TreeState::default();
    let mut rec = DbRecord {
        flags: DUPSORT,
        ..DbRecord::default()
    };
    let d = Dups::of(rec.flags, None).unwrap().unwrap();
    let mut model: BTreeSet<Vec<u8>> = BTreeSet::new();
    let mut rng = StdRng::seed_from_u64(11);
    let mut saw_list = false;
    while model.len() < 300 {
        let v: Vec<u8> = (0..rng.random_range(1..12)).map(|_| rng.random()).collect();
        let added = Tree::new(&mut p, &mut st, &mut rec, Order::Bytewise)
            .put_dup(d, b"key", &v)
            .expect("put_dup");
        assert_eq!(added, model.insert(v));
        let (vals, flags) = dup_values(&p, &rec, d, b"key");
        assert_eq!(vals, model.iter().cloned().collect::<Vec<_>>());
        saw_list |= flags & DUPS != 0;
        assert_eq!(rec.entries, model.len() as u64);
    }
    assert!(saw_list, "a few values are a list in the node");
    assert_ne!(
        dup_values(&p, &rec, d, b"key").1 & SUBTREE,
        0,
        "many are a sub-tree"
    );
    let pages = rec.leaf_pages + rec.branch_pages;
    assert!(pages > 2, "the sub-tree's pages count in the record");
    // Delete down to two values: back inline as a list.
    let all: Vec<Vec<u8>> = model.iter().cloned().collect();
    for v in &all[2..] {
        let gone = Tree::new(&mut p, &mut st, &mut rec, Order::Bytewise)
            .delete_dup(d, b"key", v)
            .expect("delete_dup");
        assert!(gone);
        model.remove(v);
        assert_eq!(
            dup_values(&p, &rec, d, b"key").0,
            model.iter().cloned().collect::<Vec<_>>()
        );
    }
    let (_, flags) = dup_values(&p, &rec, d, b"key");
    assert_eq!(flags & (DUPS | SUBTREE), DUPS);
    assert_eq!((rec.entries, rec.leaf_pages, rec.branch_pages), (2, 1, 0));
    let n = Tree::new(&mut p, &mut st, &mut rec, Order::Bytewise)
        .delete_all(d, b"key")
        .expect("delete_all");
    assert_eq!(n, 2);
    assert_eq!(rec.root, 0);
    assert_no_leak(&p);
}

#[test]
fn seal_links_every_branch_to_its_childs_checksum() {
    let (_dir, mut p) = mem_pager(512, 1 << 20);
    let mut st = TreeState::default();
    let mut rec = DbRecord::default();
    let mut rng = StdRng::seed_from_u64(5);
    for _ in 0..1500 {
        let (k, v) = (key(&mut rng), value(&mut rng));
        Tree::new(&mut p, &mut st, &mut rec, Order::Bytewise)
            .put(&k, &v)
            .expect("put");
    }
    seal::seal(&mut p, &mut rec).expect("seal");
    assert!(assert_sealed(&p, &rec) > 100);
}

/// Checks the checksums of the sealed tree `rec`: the root's in the
/// record, each branch link's and overflow reference's in the node.
/// Returns how many links it checked.
fn assert_sealed(p: &Pager, rec: &DbRecord) -> usize {
    assert_eq!(rec.mod_txnid, p.txnid());
    let root = p.view().page(rec.root).unwrap();
    assert_eq!(rec.root_cksum, checksum(root.bytes()));
    let mut stack = vec![rec.root];
    let mut links = 0;
    while let Some(pgno) = stack.pop() {
        let pg = p.view().page(pgno).unwrap();
        for i in 0..pg.len() {
            if pg.is_leaf() {
                if let LeafValue::Overflow { pgno, cksum, .. } = pg.leaf(i).unwrap().value {
                    assert_eq!(cksum, checksum(p.dirty(pgno).unwrap()), "run {pgno}");
                    links += 1;
                }
                continue;
            }
            let b = pg.branch(i).unwrap();
            let child = p.view().page(b.child).unwrap();
            assert_eq!(b.cksum, checksum(child.bytes()), "link {pgno}:{i}");
            stack.push(b.child);
            links += 1;
        }
    }
    links
}

/// Appends keep the hint on the right edge through every split (the next
/// append goes to the new leaf without a descent), leave each page they
/// move on from full, and seal with the checksums the splits kept until a
/// later put changes those leaves.
#[test]
fn appends_keep_the_hint_across_splits_and_fill_each_page() {
    let (_dir, mut p) = mem_pager(512, 1 << 20);
    let mut st = TreeState::default();
    let mut rec = DbRecord::default();
    let mut model = Model::new();
    let mut rng = StdRng::seed_from_u64(11);
    for i in 0..4000u32 {
        let k = (i * 2).to_be_bytes();
        let v = vec![i as u8; rng.random_range(0..60)];
        Tree::new(&mut p, &mut st, &mut rec, Order::Bytewise)
            .append(&k, &v)
            .expect("append");
        model.insert(k.to_vec(), v);
        let (root, hint) = st.append.expect("hint kept after every append");
        assert_eq!(root, rec.root);
        assert_eq!(hint.len, rec.depth as usize);
        let leaf = p.view().page(hint.leaf().pgno).unwrap();
        assert_eq!(leaf.leaf(leaf.len() - 1).unwrap().key, &k[..], "append {i}");
    }
    assert!(rec.depth >= 3, "depth {}", rec.depth);
    assert_matches(&p, &rec, &model);
    // Each leaf is filled until the next node does not fit: the greedy
    // packing of the pairs in order.
    let cap = 512 - crate::page::HDR;
    let (mut leaves, mut used) = (1, 0);
    for (k, v) in &model {
        let len = crate::page::node::leaf_len(k.len(), v.len(), false) + 2;
        if used + len > cap {
            leaves += 1;
            used = 0;
        }
        used += len;
    }
    assert_eq!(rec.leaf_pages, leaves);
    // Puts into leaves the appends left behind (odd keys, free after the
    // even ones) drop their kept checksums; seal hashes those again.
    for i in (1..8000u32).step_by(797) {
        let k = i.to_be_bytes();
        Tree::new(&mut p, &mut st, &mut rec, Order::Bytewise)
            .put(&k, b"middle")
            .expect("put");
        model.insert(k.to_vec(), b"middle".to_vec());
    }
    assert!(st.append.is_none());
    assert_matches(&p, &rec, &model);
    seal::seal(&mut p, &mut rec).expect("seal");
    assert!(assert_sealed(&p, &rec) as u64 >= rec.leaf_pages);
}
