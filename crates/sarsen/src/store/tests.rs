//! Unit tests of the pager on its own: allocation order, overflow runs,
//! the claims that refuse a page released twice, and nested marks.

use super::testing::mem_pager;
use super::PageStore;
use crate::error::Error;
use crate::page::{Kind, META_PAGES};

#[test]
fn freed_pages_of_this_transaction_are_reused_before_the_file_grows() {
    let (_dir, mut p) = mem_pager(512, 1000);
    let a: Vec<_> = (0..8).map(|_| p.new_page(Kind::Leaf).unwrap()).collect();
    assert_eq!(a, (META_PAGES..META_PAGES + 8).collect::<Vec<_>>());
    for &pg in &a[2..5] {
        PageStore::free(&mut p, pg, 1).unwrap();
    }
    // Three pages free: a run of three is taken from them, not the end.
    let end = p.next_pgno;
    let (run, _) = p.write_overflow(&[7u8; 1200]).unwrap();
    assert_eq!(run, a[2]);
    assert_eq!(p.next_pgno, end);
    assert!(p.reclaimed.is_empty());
    // Nothing free now: the next page comes from the end.
    assert_eq!(p.new_page(Kind::Leaf).unwrap(), end);
}

#[test]
fn a_page_released_twice_or_outside_the_snapshot_is_corrupted() {
    let (_dir, mut p) = mem_pager(512, 1000);
    // A snapshot of 100 pages (never read here: freeing reads no bytes).
    p.begin(2, 100, 1000, 1);
    PageStore::free(&mut p, 50, 1).unwrap();
    assert!(matches!(
        PageStore::free(&mut p, 50, 1),
        Err(Error::Corrupted { .. })
    ));
    assert!(matches!(
        PageStore::free_run(&mut p, 99, 2),
        Err(Error::Corrupted { .. })
    ));
    assert!(matches!(
        PageStore::free(&mut p, 150, 1),
        Err(Error::Corrupted { .. })
    ));
    assert_eq!(p.freed, vec![50]);
}

#[test]
fn reserve_counts_free_pages_and_the_room_below_the_upper_bound() {
    let (_dir, mut p) = mem_pager(512, META_PAGES + 10);
    let pages: Vec<_> = (0..6).map(|_| p.new_page(Kind::Leaf).unwrap()).collect();
    p.reserve(4, 0).unwrap();
    assert!(matches!(
        p.reserve(5, 0),
        Err(Error::UpperBoundReached { .. })
    ));
    PageStore::free(&mut p, pages[0], 1).unwrap();
    PageStore::free(&mut p, pages[3], 1).unwrap();
    p.reserve(6, 0).unwrap();
    // Four pages at the end: a run of four fits there, five nowhere.
    p.reserve(6, 4).unwrap();
    assert!(matches!(
        p.reserve(6, 5),
        Err(Error::UpperBoundReached { .. })
    ));
}

#[test]
fn rolling_back_a_mark_restores_pages_and_free_lists() {
    let (_dir, mut p) = mem_pager(512, 1000);
    let a = p.new_page(Kind::Leaf).unwrap();
    let b = p.new_page(Kind::Leaf).unwrap();
    PageStore::free(&mut p, b, 1).unwrap();
    p.dirty_mut(a).unwrap()[100] = 1;
    let (next, reclaimed) = (p.next_pgno, p.reclaimed.clone());
    p.mark();
    p.dirty_mut(a).unwrap()[100] = 2;
    let c = p.new_page(Kind::Leaf).unwrap();
    assert_eq!(c, b, "the child reuses the parent's free page");
    let d = p.new_page(Kind::Branch).unwrap();
    PageStore::free(&mut p, a, 1).unwrap();
    p.roll_back().unwrap();
    assert_eq!(p.dirty_mut(a).unwrap()[100], 1);
    assert!(!p.is_dirty(c) && !p.is_dirty(d));
    assert_eq!((p.next_pgno, &p.reclaimed), (next, &reclaimed));
    // A committed child keeps its changes.
    p.mark();
    p.dirty_mut(a).unwrap()[100] = 3;
    p.fold();
    assert!(p.marks.is_empty());
    assert_eq!(p.dirty_mut(a).unwrap()[100], 3);
}

/// A model of the free pages: a set, and the end of the pages in use.
#[test]
fn refund_gives_back_exactly_the_free_pages_that_end_the_file() {
    use std::collections::BTreeSet;
    let mut rng = 0x5eed_u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for case in 0..200 {
        let (_dir, mut p) = mem_pager(512, 10_000);
        let end = META_PAGES + 50 + (next() % 200) as u32;
        p.begin(2, end, 10_000, 1);
        let mut free = BTreeSet::new();
        for _ in 0..(next() % 120) {
            free.insert(META_PAGES + (next() % u64::from(end - META_PAGES)) as u32);
        }
        // Sometimes a free tail, as deletes at the end of the file leave.
        if case % 2 == 0 {
            free.extend(end - (next() % 30) as u32..end);
        }
        p.reclaimed = free.iter().copied().collect();
        let n = p.refund_tail();
        let mut model_end = end;
        while free.remove(&(model_end - 1)) {
            model_end -= 1;
        }
        assert_eq!(p.next_pgno, model_end, "case {case}: end");
        assert_eq!(n as u32, end - model_end, "case {case}: count");
        let left: BTreeSet<_> = p.reclaimed.iter().copied().collect();
        assert_eq!(left, free, "case {case}: pages left free");
        // Allocation takes the lowest free page first.
        p.sort_reclaimed();
        if let Some(&lowest) = free.iter().next() {
            assert_eq!(p.alloc(1).unwrap(), lowest, "case {case}: lowest first");
        }
    }
}

#[test]
fn approach_leaf_says_whether_the_page_is_dirty_and_a_bad_number_is_corrupted() {
    let (_dir, mut p) = mem_pager(512, 1000);
    let leaf = p.new_page(Kind::Leaf).unwrap();
    assert!(p.approach_leaf(leaf));
    assert!(p.view().page_known(leaf, true).unwrap().is_leaf());
    // Not dirty and past the snapshot (empty here): no view, an error.
    assert!(!p.approach_leaf(500));
    assert!(matches!(
        p.view().page_known(500, false),
        Err(Error::Corrupted { .. })
    ));
}
