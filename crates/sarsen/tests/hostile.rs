//! Hostile files: a healthy database is written, closed, and patched the way
//! an attacker would (a GC record that lists a page a tree still uses, or
//! one page twice; two overflow references to one run; a branch that names
//! one child many times; a sub-tree record that counts no values; a meta
//! whose `next_pgno` is far beyond what the trees use). Each must give
//! `Corrupted`, never a panic, undefined behaviour, an unbounded walk or a
//! huge allocation. The writer cases run in both write modes: in write-map
//! mode a page handed out twice would be two writable views of one page.
//!
//! The patches go through a small reader of the format (design.md §2):
//! normal reads do not verify checksums, so a patched page is read as it is.

use std::alloc::{GlobalAlloc, Layout, System};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use sarsen::{DbOptions, Durability, Env, EnvOptions, Error, KeyOrder};

// ------------------------------------------------------------------------------------------------
// allocation meter (for the check of a huge `next_pgno`)

/// The system allocator, counting live bytes and their peak.
struct Meter;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Meter {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static METER: Meter = Meter;

/// The tests of this file run one at a time, so that the meter sees one.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

// ------------------------------------------------------------------------------------------------
// a reader of the format

const PS: usize = 512;
const DATA: &str = "data.sdb";
const LOCK: &str = "lock.sdb";
const FRESH: u8 = 0x08;
const SUBTREE: u8 = 0x04;

fn rd16(b: &[u8], at: usize) -> usize {
    u16::from_le_bytes([b[at], b[at + 1]]) as usize
}
fn rd32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn wr32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// A tree record's root and depth.
#[derive(Clone, Copy, Debug)]
struct Rec {
    root: u32,
    depth: usize,
}

fn rec_at(b: &[u8], at: usize) -> Rec {
    Rec {
        root: rd32(b, at),
        depth: rd16(b, at + 4),
    }
}

/// Byte offset of the newest meta page.
fn newest_meta(f: &[u8]) -> usize {
    (0..3)
        .map(|i| i * PS)
        .filter(|&o| &f[o..o + 8] == b"SARSEN\0\x01")
        .max_by_key(|&o| u64::from_le_bytes(f[o + 16..o + 24].try_into().unwrap()))
        .expect("a meta page")
}

fn gc_rec(f: &[u8]) -> Rec {
    rec_at(f, newest_meta(f) + 64)
}
fn main_rec(f: &[u8]) -> Rec {
    rec_at(f, newest_meta(f) + 192)
}

fn pg(f: &[u8], p: u32) -> &[u8] {
    &f[p as usize * PS..(p as usize + 1) * PS]
}
fn count(page: &[u8]) -> usize {
    rd16(page, 6)
}
/// Byte offset (in the file) of node `i` of page `p`.
fn node_at(f: &[u8], p: u32, i: usize) -> usize {
    p as usize * PS + rd16(pg(f, p), 20 + 2 * i)
}
fn child(f: &[u8], p: u32, i: usize) -> u32 {
    rd32(f, node_at(f, p, i))
}
/// Leaf node `i` of page `p`: flags, key range and value range (file offsets).
fn leaf(f: &[u8], p: u32, i: usize) -> (u8, std::ops::Range<usize>, std::ops::Range<usize>) {
    let at = node_at(f, p, i);
    let k = rd16(f, at + 2);
    let v = rd32(f, at + 4) as usize;
    let big = f[at] & 0x01 != 0;
    let vlen = if big { 12 } else { v };
    (f[at], at + 8..at + 8 + k, at + 8 + k..at + 8 + k + vlen)
}

/// Every page of the tree `r` (branches and leaves) with its level (0: root).
fn pages(f: &[u8], r: Rec) -> Vec<(u32, usize)> {
    let mut out = Vec::new();
    let mut todo = if r.root == 0 {
        vec![]
    } else {
        vec![(r.root, 0)]
    };
    while let Some((p, l)) = todo.pop() {
        out.push((p, l));
        if l + 1 < r.depth {
            for i in 0..count(pg(f, p)) {
                todo.push((child(f, p, i), l + 1));
            }
        }
    }
    out
}

/// The last leaf of tree `r` (where its largest key is).
fn last_leaf(f: &[u8], r: Rec) -> u32 {
    let mut p = r.root;
    for _ in 1..r.depth {
        p = child(f, p, count(pg(f, p)) - 1);
    }
    p
}

/// The file offsets of the page numbers in the newest GC record (the one a
/// writer loads first), in the order stored.
fn newest_gc_entries(f: &[u8]) -> Vec<usize> {
    let r = gc_rec(f);
    assert!(r.root != 0, "the database has GC records");
    let l = last_leaf(f, r);
    let (_, _, v) = leaf(f, l, count(pg(f, l)) - 1);
    v.step_by(4).collect()
}

thread_local! {
    /// The lock file the last template's environment left in this test's
    /// thread.
    static LOCK_FILE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The data file in `dir`; keeps its lock file for [`with_file`].
fn read(dir: &Path) -> Vec<u8> {
    let lock = std::fs::read(dir.join(LOCK)).unwrap_or_default();
    LOCK_FILE.with(|l| *l.borrow_mut() = lock);
    std::fs::read(dir.join(DATA)).unwrap()
}

/// A fresh directory holding `f` as its data file, with the lock file the
/// template left. That lock file shows the newest commit published, so
/// open trusts it without verifying its pages (without it, open verifies
/// the newest commit and rolls a patched one back). The patches do not
/// fix checksums, which an attacker could: the defences under test must
/// hold without them.
fn with_file(f: &[u8]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join(DATA), f).unwrap();
    let lock = LOCK_FILE.with(|l| l.borrow().clone());
    if !lock.is_empty() {
        std::fs::write(d.path().join(LOCK), lock).unwrap();
    }
    d
}

fn options(write_map: bool, durability: Durability) -> EnvOptions {
    EnvOptions::new()
        .page_size(PS as u32)
        .durability(durability)
        .write_map(write_map)
        .max_dbs(4)
}

fn open_env(dir: &Path, write_map: bool) -> Env {
    // SAFETY: the test's own temporary directory; nothing else maps it.
    unsafe { options(write_map, Durability::Durable).open(dir) }.unwrap()
}

fn key(i: u32) -> Vec<u8> {
    format!("key-{i:06}").into_bytes()
}

/// A main database several levels deep, with GC records from overwrites,
/// and (when `big`) overflow values.
fn template(big: bool) -> Vec<u8> {
    let d = tempfile::tempdir().unwrap();
    {
        let env = open_env(d.path(), false);
        let db = env.main_db();
        for round in 0..4u32 {
            let mut w = env.write_txn().unwrap();
            for i in 0..600u32 {
                if round == 0 || i % (round + 1) == 0 {
                    w.put(db, &key(i), &[round as u8; 24]).unwrap();
                }
            }
            if big && round == 0 {
                w.put(db, b"big-a", &[1; 1500]).unwrap();
                w.put(db, b"big-b", &[2; 1500]).unwrap();
            }
            w.commit().unwrap();
        }
    }
    read(d.path())
}

/// Runs `f` on each write mode; a panic fails the test with the mode.
fn each_mode(what: &str, mut f: impl FnMut(bool)) {
    for wm in [false, true] {
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| f(wm))) {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("{what}, write_map {wm}: panicked: {msg}");
        }
    }
}

/// Puts keys (each reserving, so loading GC records) until one fails;
/// that error, or `None` if all `n` worked (the commit must too).
fn write_until_error(env: &Env, n: u32) -> Option<Error> {
    let db = env.main_db();
    let mut w = env.write_txn().unwrap();
    for i in 0..n {
        if let Err(e) = w.put(db, &key(i * 7 % 600), b"new value, longer than before") {
            return Some(e);
        }
    }
    w.commit().unwrap();
    None
}

fn expect_corrupted(e: Option<Error>, page: u32, what: &str) {
    match e {
        Some(Error::Corrupted { page: p, .. }) if p == u64::from(page) => {}
        other => panic!("{what}: expected Corrupted at page {page}, got {other:?}"),
    }
}

/// As [`expect_corrupted`], for an error that must name the GC as the cause
/// (raised where the record is loaded, not by a later symptom).
fn expect_gc_refused(e: Option<Error>, page: u32, what: &str) {
    match &e {
        Some(Error::Corrupted { what: w, .. }) if w.contains("GC") => {
            expect_corrupted(e, page, what)
        }
        other => panic!("{what}: expected the GC record refused at page {page}, got {other:?}"),
    }
}

// ------------------------------------------------------------------------------------------------
// the writer: the GC must not hand out a page twice or a page in use

#[test]
fn gc_listing_the_page_being_copied_is_refused() {
    let _serial = serial();
    let mut f = template(false);
    // The writer loads the newest record and deletes it from the GC, which
    // copies the GC's root first, into the page it pops first: the last.
    let gc_root = gc_rec(&f).root;
    let last = *newest_gc_entries(&f).last().unwrap();
    wr32(&mut f, last, gc_root);
    each_mode("GC lists its own root", |wm| {
        let d = with_file(&f);
        let env = open_env(d.path(), wm);
        let db = env.main_db();
        let mut w = env.write_txn().unwrap();
        let e = w.put(db, b"a new key", b"v").err();
        expect_gc_refused(e, gc_root, "put");
        assert!(matches!(w.commit(), Err(Error::BadTxn)));
    });
}

#[test]
fn gc_listing_a_page_twice_is_refused() {
    let _serial = serial();
    let f0 = template(false);
    let at = newest_gc_entries(&f0);
    assert!(
        at.len() >= 2,
        "the newest GC record lists two pages or more"
    );
    // Twice in one record, next to each other and far apart.
    for (a, b) in [(at.len() - 2, at.len() - 1), (0, at.len() - 1)] {
        let mut f = f0.clone();
        let dup = rd32(&f, at[b]);
        wr32(&mut f, at[a], dup);
        each_mode("GC lists one page twice", |wm| {
            let d = with_file(&f);
            let env = open_env(d.path(), wm);
            expect_gc_refused(write_until_error(&env, 1), dup, "the put that loads it");
        });
    }
}

#[test]
fn gc_listing_a_page_in_two_records_is_refused() {
    let _serial = serial();
    let f0 = template(false);
    // The second newest record: the one before the newest in the last GC
    // leaf (the template's GC fits one leaf), which a writer loads second.
    let r = gc_rec(&f0);
    let l = last_leaf(&f0, r);
    let n = count(pg(&f0, l));
    assert!(n >= 2, "two GC records in the last GC leaf");
    // The newest older record that lists a page (save may leave empty ones).
    let older = (0..n - 1)
        .rev()
        .map(|i| leaf(&f0, l, i).2)
        .find(|v| !v.is_empty())
        .expect("an older GC record listing a page");
    let mut f = f0.clone();
    let dup = rd32(&f, older.start);
    let first_new = newest_gc_entries(&f)[0];
    wr32(&mut f, first_new, dup);
    each_mode("two GC records list one page", |wm| {
        let d = with_file(&f);
        let env = open_env(d.path(), wm);
        // Enough puts to load both records (or fail on the way).
        expect_gc_refused(write_until_error(&env, 400), dup, "puts");
    });
}

#[test]
fn gc_listing_a_page_outside_the_file_is_refused() {
    let _serial = serial();
    let f0 = template(false);
    let next = rd32(&f0, newest_meta(&f0) + 28);
    let last = *newest_gc_entries(&f0).last().unwrap();
    for bad in [0, 2, next, next + 1000, u32::MAX] {
        let mut f = f0.clone();
        wr32(&mut f, last, bad);
        each_mode("GC lists a page outside 3..next_pgno", |wm| {
            let d = with_file(&f);
            let env = open_env(d.path(), wm);
            expect_gc_refused(write_until_error(&env, 1), bad, "put");
        });
    }
}

/// A GC record naming any page of any tree, wherever the writer then puts
/// it, gives an error or a clean commit: never a panic. Each page is tried
/// once, in one write mode and one place in the record, the cases taking
/// turns (an open costs more than the writes).
#[test]
fn gc_listing_any_live_page_never_panics() {
    let _serial = serial();
    let f0 = template(true);
    let mut live: Vec<u32> = Vec::new();
    for r in [
        gc_rec(&f0),
        main_rec(&f0),
        rec_at(&f0, newest_meta(&f0) + 128),
    ] {
        live.extend(pages(&f0, r).into_iter().map(|(p, _)| p));
    }
    let at = newest_gc_entries(&f0);
    let mut refused = 0;
    for (j, &p) in live.iter().enumerate() {
        let wm = j % 2 == 1;
        let slot = if j % 4 < 2 {
            *at.last().unwrap()
        } else {
            at[0]
        };
        let mut f = f0.clone();
        wr32(&mut f, slot, p);
        let case = AssertUnwindSafe(|| {
            let d = with_file(&f);
            // SAFETY: the test's own temporary directory.
            let env = unsafe { options(wm, Durability::NoSync).open(d.path()) }.unwrap();
            let db = env.main_db();
            let mut w = env.write_txn().unwrap();
            let mut r = Ok(());
            for i in 0..60u32 {
                r = if i % 3 == 0 {
                    w.delete(db, &key(i * 11 % 600)).map(|_| ())
                } else {
                    w.put(db, &key(i * 13 % 700), &[9; 40])
                };
                if r.is_err() {
                    break;
                }
            }
            let r = r.and_then(|_| w.commit());
            // Whatever was committed reads without a panic.
            let rt = env.read_txn().unwrap();
            let _ = rt.iter(db).map(|it| it.count());
            let _ = env.check();
            matches!(r, Err(Error::Corrupted { .. }))
        });
        match catch_unwind(case) {
            Ok(r) => refused += usize::from(r),
            Err(_) => panic!("GC lists live page {p} (write_map {wm}): panicked"),
        }
    }
    // Most such pages are copied or freed by these writes, or handed out
    // while still linked: the claims refuse those.
    assert!(refused > 0, "no live page in the GC was refused");
}

/// The child of branch `p` a search for `k` (bytewise) takes: its index.
fn child_for(f: &[u8], p: u32, k: &[u8]) -> usize {
    (1..count(pg(f, p)))
        .take_while(|&i| {
            let at = node_at(f, p, i);
            &f[at + 16..at + 16 + rd16(f, at + 14)] <= k
        })
        .last()
        .unwrap_or(0)
}

/// The GC hands out the main root's other children, pages the tree still
/// links to: the writer fills them with copies of GC pages and of the root
/// a put then changes, whose copy links to them as if they were clean.
/// Nothing cheap sees that before the commit. Debug builds find it when
/// sealing; release builds do not look (`check` reports the damage).
/// Neither panics.
#[test]
fn gc_handing_out_live_branches_never_panics() {
    let _serial = serial();
    let f0 = template(false);
    let m = main_rec(&f0);
    let k = key(300);
    let on_path = child_for(&f0, m.root, &k);
    let others: Vec<u32> = (0..count(pg(&f0, m.root)))
        .filter(|&i| i != on_path)
        .map(|i| child(&f0, m.root, i))
        .collect();
    let at = newest_gc_entries(&f0);
    let mut f = f0.clone();
    for (slot, &p) in at.iter().rev().zip(&others) {
        wr32(&mut f, *slot, p);
    }
    // Links from an older commit (no `FRESH`), which seal does not follow.
    for i in 0..count(pg(&f0, m.root)) {
        let at = node_at(&f, m.root, i);
        f[at + 12] &= !FRESH;
    }
    each_mode("GC hands out live branches", |wm| {
        let d = with_file(&f);
        let env = open_env(d.path(), wm);
        let mut w = env.write_txn().unwrap();
        let r = w.put(env.main_db(), &k, b"x").and_then(|_| w.commit());
        if cfg!(debug_assertions) {
            assert!(matches!(r, Err(Error::Corrupted { .. })), "{r:?}");
        }
    });
}

#[test]
fn overflow_runs_freed_twice_are_refused() {
    let _serial = serial();
    let mut f = template(true);
    // Point big-b's reference at big-a's run: deleting both frees it twice.
    let refs = overflow_refs(&f);
    let [(ka, a), (kb, b)] = &refs[..] else {
        panic!("two overflow values: {refs:?}");
    };
    let run = rd32(&f, *a);
    wr32(&mut f, *b, run);
    each_mode("two references to one run", |wm| {
        let d = with_file(&f);
        let env = open_env(d.path(), wm);
        let db = env.main_db();
        let mut w = env.write_txn().unwrap();
        assert!(w.delete(db, ka).unwrap());
        expect_corrupted(w.delete(db, kb).err(), run, "the second delete");
    });
}

/// The overflow references of the main tree: key and file offset of the
/// reference (first page, then checksum), in key order.
fn overflow_refs(f: &[u8]) -> Vec<(Vec<u8>, usize)> {
    let m = main_rec(f);
    let mut refs = Vec::new();
    for (p, l) in pages(f, m) {
        if l + 1 != m.depth {
            continue;
        }
        for i in 0..count(pg(f, p)) {
            let (flags, k, v) = leaf(f, p, i);
            if flags & 0x01 != 0 {
                refs.push((f[k].to_vec(), v.start));
            }
        }
    }
    refs.sort();
    refs
}

#[test]
fn gc_handing_out_the_first_page_of_a_run_then_freeing_the_run_is_refused() {
    let _serial = serial();
    let mut f = template(true);
    let (k, at) = overflow_refs(&f).remove(0);
    let run = rd32(&f, at);
    // Popped first: the GC's own delete copies a GC page into it, so the
    // run's first page is a dirty one-page buffer when the run is freed.
    let last = *newest_gc_entries(&f).last().unwrap();
    wr32(&mut f, last, run);
    each_mode("GC hands out a run's first page", |wm| {
        let d = with_file(&f);
        let env = open_env(d.path(), wm);
        let mut w = env.write_txn().unwrap();
        expect_corrupted(w.delete(env.main_db(), &k).err(), run, "delete");
    });
}

// ------------------------------------------------------------------------------------------------
// scans: a branch naming one child many times

/// Points every node of each branch on the left edge of tree `r` at that
/// branch's first child, and returns the leaf they all reach.
fn repeat_first_children(f: &mut [u8], r: Rec) -> u32 {
    let mut p = r.root;
    for _ in 1..r.depth {
        let c = child(f, p, 0);
        for i in 1..count(pg(f, p)) {
            let at = node_at(f, p, i);
            wr32(f, at, c);
            f[at + 12] &= !FRESH;
        }
        p = c;
    }
    p
}

/// Scans forward or back, at most `cap` items; the items before the end
/// and how it ended.
fn scan(env: &Env, db: sarsen::Database, fwd: bool, cap: usize) -> (usize, sarsen::Result<()>) {
    let r = env.read_txn().unwrap();
    let mut it = r.iter(db).unwrap();
    let mut n = 0;
    while n < cap {
        match if fwd { it.next() } else { it.next_back() } {
            None => break,
            Some(Ok(_)) => n += 1,
            Some(Err(e)) => return (n, Err(e)),
        }
    }
    (n, Ok(()))
}

#[test]
fn a_branch_repeating_one_child_ends_a_scan() {
    let _serial = serial();
    let mut f = template(false);
    let m = main_rec(&f);
    assert!(m.depth >= 3, "the template is three levels deep or more");
    let l0 = repeat_first_children(&mut f, m);
    let in_leaf = count(pg(&f, l0));
    let d = with_file(&f);
    let env = open_env(d.path(), false);
    for fwd in [true, false] {
        // Each leaf is visited once: the scan stops at the first repeat,
        // after the entries of the one leaf every path reaches.
        let (n, end) = scan(&env, env.main_db(), fwd, 1_000_000);
        assert!(
            matches!(end, Err(Error::Corrupted { page, .. }) if page == u64::from(l0)),
            "forward {fwd}: {end:?} after {n} items"
        );
        assert_eq!(n, in_leaf, "forward {fwd}: items before the error");
    }
}

#[test]
fn a_branch_repeating_an_empty_leaf_ends_a_scan() {
    let _serial = serial();
    let mut f = template(false);
    let m = main_rec(&f);
    let l0 = repeat_first_children(&mut f, m);
    // No nodes: count 0, nothing used.
    let h = l0 as usize * PS;
    f[h + 6..h + 8].fill(0);
    f[h + 16..h + 18].fill(0);
    let d = with_file(&f);
    let env = open_env(d.path(), false);
    for fwd in [true, false] {
        let (n, end) = scan(&env, env.main_db(), fwd, 1_000_000);
        assert!(
            matches!(end, Err(Error::Corrupted { page, .. }) if page == u64::from(l0)),
            "forward {fwd}: {end:?} after {n} items"
        );
        assert_eq!(n, 0);
    }
}

/// A DUPSORT database whose key "k" has a sub-tree of `n` values three
/// levels deep; the file and the sub-tree record's file offset.
fn dup_template(n: u32) -> (Vec<u8>, usize) {
    let d = tempfile::tempdir().unwrap();
    {
        let env = open_env(d.path(), false);
        let mut w = env.write_txn().unwrap();
        let db = w
            .create_db_with(None, &DbOptions::new().dup_sort(KeyOrder::Bytewise))
            .unwrap();
        for i in 0..n {
            w.put(db, b"k", format!("value-{i:06}").as_bytes()).unwrap();
        }
        w.put(db, b"j", b"one").unwrap();
        w.put(db, b"l", b"one").unwrap();
        w.commit().unwrap();
    }
    let f = read(d.path());
    let m = main_rec(&f);
    for (p, l) in pages(&f, m) {
        if l + 1 != m.depth {
            continue;
        }
        for i in 0..count(pg(&f, p)) {
            let (flags, k, v) = leaf(&f, p, i);
            if flags & SUBTREE != 0 && &f[k] == b"k" {
                return (f, v.start);
            }
        }
    }
    panic!("no sub-tree for key k");
}

#[test]
fn a_sub_tree_branch_repeating_one_child_ends_a_scan() {
    let _serial = serial();
    let (mut f, at) = dup_template(3000);
    let sub = rec_at(&f, at);
    assert!(sub.depth >= 3, "sub-tree depth {}", sub.depth);
    let l0 = repeat_first_children(&mut f, sub);
    let in_leaf = count(pg(&f, l0));
    let d = with_file(&f);
    let env = open_env(d.path(), false);
    let db = env.main_db();
    for fwd in [true, false] {
        let (n, end) = scan(&env, db, fwd, 1_000_000);
        assert!(
            matches!(end, Err(Error::Corrupted { page, .. }) if page == u64::from(l0)),
            "forward {fwd}: {end:?} after {n} items"
        );
        // "j" or "l" comes first, then the one leaf's values.
        assert_eq!(n, 1 + in_leaf, "forward {fwd}: items before the error");
    }
    // The dup cursor's own moves too.
    let r = env.read_txn().unwrap();
    let mut c = r.cursor(db).unwrap();
    assert!(c.seek(b"k").unwrap().is_some());
    let mut n = 0;
    let end = loop {
        match c.next_dup() {
            Ok(Some(_)) if n < 1_000_000 => n += 1,
            other => break other,
        }
    };
    assert!(
        matches!(end, Err(Error::Corrupted { .. })),
        "{end:?} after {n}"
    );
    assert_eq!(n, in_leaf - 1);
}

#[test]
fn a_sub_tree_record_of_no_values_is_refused() {
    let _serial = serial();
    let (mut f, at) = dup_template(200);
    // entries, at offset 48 of the record
    f[at + 48..at + 56].fill(0);
    let sub = rec_at(&f, at);
    each_mode("sub-tree record counting no values", |wm| {
        let d = with_file(&f);
        let env = open_env(d.path(), wm);
        let mut w = env.write_txn().unwrap();
        expect_corrupted(w.delete(env.main_db(), b"k").err(), sub.root, "delete");
    });
}

// ------------------------------------------------------------------------------------------------
// check: a `next_pgno` far beyond the pages in use

/// The template with its newest meta claiming `huge` pages, backed by a
/// sparse file that long; its directory and the real `next_pgno`.
fn huge_next_pgno(huge: u32) -> (tempfile::TempDir, u32) {
    let mut f = template(false);
    let m = newest_meta(&f);
    let next = rd32(&f, m + 28);
    wr32(&mut f, m + 28, huge);
    wr32(&mut f, m + 36, huge);
    // Format 2's checksum, of bytes 0..504, at 504.
    let sum = twox_hash::XxHash3_64::oneshot(&f[m..m + 504]);
    f[m + 504..m + 512].copy_from_slice(&sum.to_le_bytes());
    let d = with_file(&f);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(d.path().join(DATA))
        .unwrap();
    file.set_len(u64::from(huge) * PS as u64).unwrap();
    (d, next)
}

/// Runs `f`; the peak of the bytes it allocated.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let r = f();
    (r, PEAK.load(Ordering::Relaxed) - before)
}

/// 32 GiB of 512-byte pages.
const HUGE: u32 = 1 << 26;

#[test]
fn check_of_a_huge_next_pgno_reports_it_without_a_huge_allocation() {
    let _serial = serial();
    let (d, next) = huge_next_pgno(HUGE);
    let env = open_env(d.path(), false);
    let (r, grew) = peak_of(|| env.check().unwrap());
    assert!(
        grew < 4 << 20,
        "check allocated {grew} bytes for {HUGE} pages"
    );
    let leak = format!("pages {next}..{HUGE} are in no tree and not listed free (leaked)");
    assert!(
        r.problems.iter().any(|p| p.what == leak),
        "{:#?}",
        r.problems
    );
}

/// The writer's claims on pages (`Writer::claims`) cost what it claims,
/// not a bit per page of the snapshot.
#[test]
fn a_write_on_a_huge_next_pgno_allocates_what_it_uses() {
    let _serial = serial();
    let (d, _) = huge_next_pgno(HUGE);
    // Default mode: write-map mode would allocate the file's blocks.
    let env = open_env(d.path(), false);
    let db = env.main_db();
    let (r, grew) = peak_of(|| {
        let mut w = env.write_txn()?;
        for i in 0..50u32 {
            w.put(db, &key(i * 7), b"a new value")?;
        }
        w.commit()
    });
    r.unwrap();
    assert!(
        grew < 2 << 20,
        "a write allocated {grew} bytes for {HUGE} pages"
    );
    assert_eq!(
        env.read_txn().unwrap().get(db, &key(7)).unwrap(),
        Some(&b"a new value"[..])
    );
}
