//! The GC tree: pages freed by each transaction, keyed by its txnid
//! (LMDB's FREE_DBI, libmdbx's GC).
//!
//! Record key (12 bytes): txnid as `u64` big-endian, then a chunk number as
//! `u32` big-endian, so records sort by txnid. Value: up to a leaf node's
//! inline capacity of page numbers, each `u32` little-endian, in no order.
//!
//! Reuse is newest first (LIFO, as libmdbx): the writer takes the record
//! with the largest txnid not above its bound, so recently freed, still
//! cached pages are written again first. Saving the GC at commit itself
//! frees and allocates GC pages; [`save`] repeats until the record it wrote
//! matches the free lists exactly.

use super::WriteStore;
use crate::btree::walk::RawCursor;
use crate::btree::{Tree, TreeState};
use crate::error::{Error, Result};
use crate::order::Order;
use crate::page::{rd32, Pgno, META_PAGES};

/// Key of chunk `chunk` of the record of `txnid`.
fn key(txnid: u64, chunk: u32) -> [u8; 12] {
    let mut k = [0u8; 12];
    k[..8].copy_from_slice(&txnid.to_be_bytes());
    k[8..].copy_from_slice(&chunk.to_be_bytes());
    k
}

/// Txnid of a record key.
pub(crate) fn key_txnid(k: &[u8]) -> Option<u64> {
    (k.len() == 12).then(|| u64::from_be_bytes(k[..8].try_into().unwrap_or_default()))
}

/// Pages listed in GC records of commits after `txnid`: those a reader of
/// snapshot `txnid` keeps from reuse.
pub(crate) fn pages_after(s: &WriteStore, txnid: u64) -> Result<u64> {
    let mut c = RawCursor::new(s.pager.view(), s.gc, Order::Bytewise);
    let mut n = 0;
    let mut e = c.seek(&key(txnid.saturating_add(1), 0))?;
    while let Some((_, v)) = e {
        n += v.len() as u64 / 4;
        e = c.next()?;
    }
    Ok(n)
}

/// Page numbers one record chunk holds at this page size.
fn chunk_capacity(s: &WriteStore) -> usize {
    (s.pager.layout.max_key + crate::page::node::OVERFLOW_REF - 12) / 4
}

/// Moves the newest reusable record into the pager's reclaimed pages and
/// deletes it from the GC. Returns `false` when no record is old enough.
pub(crate) fn load_record(w: &mut WriteStore) -> Result<bool> {
    if w.gc.root == 0 || w.loading_gc {
        return Ok(false);
    }
    let (k, pages) = {
        let mut c = RawCursor::new(w.pager.view(), w.gc, Order::Bytewise);
        let bound = key(w.gc_bound, u32::MAX);
        let found = match c.seek(&bound)? {
            Some((k, _)) if k == bound => c.current()?,
            Some(_) => c.prev()?,
            None => c.last()?,
        };
        let Some((k, v)) = found else {
            return Ok(false);
        };
        match key_txnid(k) {
            Some(t) if t <= w.gc_bound => {}
            Some(_) => return Ok(false),
            None => {
                return Err(Error::corrupted(
                    u64::from(w.gc.root),
                    "GC key of wrong length",
                ))
            }
        }
        if v.len() % 4 != 0 {
            return Err(Error::corrupted(
                u64::from(w.gc.root),
                "GC record length not a multiple of 4",
            ));
        }
        let mut pages = Vec::with_capacity(v.len() / 4);
        for i in 0..v.len() / 4 {
            let p = rd32(v, 4 * i);
            if p < META_PAGES || p >= w.pager.file_pgno {
                return Err(Error::corrupted(
                    u64::from(p),
                    "GC names a page outside the file",
                ));
            }
            pages.push(p);
        }
        (k.to_vec(), pages)
    };
    // A page listed twice (in this record or one loaded before), or one a
    // tree of this transaction has released (so a tree still used it), is
    // refused before it can be handed out: two writable views of one page,
    // or a copy onto itself, would follow (design.md §6).
    let claimed = w.pager.claims.len();
    for &p in &pages {
        if let Err(e) = w
            .pager
            .claim(p, "GC lists a page twice, or a page still in a tree")
        {
            w.pager.claims.truncate(claimed);
            return Err(e);
        }
    }
    let before = w.pager.reclaimed.len();
    w.pager.reclaimed.extend_from_slice(&pages);
    w.loading_gc = true;
    let mut gc = w.gc;
    // The GC tree never takes the append hint: its state is its own.
    let r = Tree::new(w, &mut TreeState::default(), &mut gc, Order::Bytewise).delete(&k);
    w.loading_gc = false;
    if r.is_err() {
        // The record stays in the GC, so its pages must not be reusable
        // (a failed reserve changed nothing, so the rest is as it was).
        w.pager.reclaimed.truncate(before);
        w.pager.claims.truncate(claimed);
        return r.map(|_| false);
    }
    w.gc = gc;
    if !r? {
        // The cursor found it but a search cannot: keys out of order. Going
        // on would load the same record forever.
        return Err(Error::corrupted(
            u64::from(w.gc.root),
            "GC record found by scan but not by search",
        ));
    }
    Ok(true)
}

/// Records this transaction's freed pages, and the reclaimed pages it did
/// not use, under its txnid. Runs at commit.
///
/// Saving changes the GC tree, which can free pages (copy-on-write of GC
/// pages) and take pages (copies and splits, from `reclaimed` first). To
/// settle, no record is deleted here (a chunk no longer needed is written
/// empty), so no merge ever frees a page and the list changes only in two
/// bounded ways: `freed` grows when a clean GC page is first copied, and
/// `reclaimed` shrinks by the pages taken. A shrink changes only the last
/// chunk, rewritten shorter in place without allocating; a growth lengthens
/// the last chunk by one entry, which can cost one split. No records are
/// loaded meanwhile (`committing`).
pub(crate) fn save(w: &mut WriteStore) -> Result<()> {
    w.committing = true;
    let cap = chunk_capacity(w).max(1);
    let mut saved: Vec<Vec<Pgno>> = Vec::new();
    let mut state = TreeState::default();
    for _ in 0..64 {
        let p = &w.pager;
        let list: Vec<Pgno> = p.freed.iter().chain(p.reclaimed.iter()).copied().collect();
        let mut chunks: Vec<Vec<Pgno>> = list.chunks(cap).map(<[Pgno]>::to_vec).collect();
        while chunks.len() < saved.len() {
            chunks.push(Vec::new());
        }
        for (i, c) in chunks.iter().enumerate() {
            if saved.get(i) == Some(c) {
                continue;
            }
            let mut v = Vec::with_capacity(4 * c.len());
            for p in c {
                v.extend_from_slice(&p.to_le_bytes());
            }
            let mut gc = w.gc;
            let k = key(w.pager.txnid, i as u32);
            let r = Tree::new(w, &mut state, &mut gc, Order::Bytewise).put(&k, &v);
            w.gc = gc;
            r?;
        }
        saved = chunks;
        // Content, not length: a round can both take a page and free one.
        let p = &w.pager;
        if p.freed.iter().chain(p.reclaimed.iter()).eq(list.iter()) {
            // A page recorded free must not be one this commit writes.
            debug_assert!(
                list.iter().all(|pg| !p.dirty.contains_key(pg)),
                "GC record names a dirty page"
            );
            return Ok(());
        }
    }
    Err(Error::corrupted(
        u64::from(w.gc.root),
        "GC record did not settle while saving the free list",
    ))
}
