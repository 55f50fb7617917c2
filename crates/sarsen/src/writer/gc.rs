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
use crate::page::inline_gc::InlineGc;
use crate::page::{rd32, Pgno, META_PAGES};

/// Key of chunk `chunk` of the record of `txnid`.
pub(crate) fn key(txnid: u64, chunk: u32) -> [u8; 12] {
    let mut k = [0u8; 12];
    k[..8].copy_from_slice(&txnid.to_be_bytes());
    k[8..].copy_from_slice(&chunk.to_be_bytes());
    k
}

/// Txnid of a record key.
pub(crate) fn key_txnid(k: &[u8]) -> Option<u64> {
    (k.len() == 12).then(|| u64::from_be_bytes(k[..8].try_into().unwrap_or_default()))
}

/// Pages listed in GC records (or inline GC groups) of commits after
/// `txnid`: about those a reader of snapshot `txnid` keeps from reuse (a
/// lower bound: commit writes the pages a transaction left unused back
/// under the older keys they were loaded from, see [`save`]).
pub(crate) fn pages_after(s: &WriteStore, txnid: u64) -> Result<u64> {
    let mut c = RawCursor::new(s.pager.view(), s.gc, Order::Bytewise);
    let mut n = 0;
    let mut e = c.seek(&key(txnid.saturating_add(1), 0))?;
    while let Some((_, v)) = e {
        n += v.len() as u64 / 4;
        e = c.next()?;
    }
    let inline = s.inline.iter().filter(|(t, _)| *t > txnid);
    Ok(n + inline.map(|(_, l)| l.len() as u64).sum::<u64>())
}

/// Page numbers one record chunk holds at this page size.
fn chunk_capacity(s: &WriteStore) -> usize {
    (s.pager.layout.max_key + crate::page::node::OVERFLOW_REF - 12) / 4
}

/// A GC record the transaction loaded: its key and the pages it held. The
/// record stays in the GC tree until commit, where it is rewritten with
/// the pages left unused (at most as many as it held) or deleted.
#[derive(Clone, Debug)]
pub(crate) struct Loaded {
    key: [u8; 12],
    pages: Vec<Pgno>,
}

/// Moves the pages of the newest reusable record not loaded yet into the
/// pager's reclaimed pages. The record itself stays in the GC tree (see
/// [`save`]). Returns `false` when no record is old enough.
pub(crate) fn load_record(w: &mut WriteStore) -> Result<bool> {
    let before = w.pager.reclaimed.len();
    if !load_unsorted(w)? {
        return Ok(false);
    }
    // The record's pages, lowest last, go in front of those loaded before
    // (after the kept run): allocation takes from the end, so the record
    // loaded first (the newest: its pages were freed last and are the most
    // likely to be cached) is used up first, lowest page first, and the
    // older records are left as they were, with nothing to rewrite.
    let p = &mut w.pager;
    let at = p.kept_run.min(before);
    p.reclaimed[before..].sort_unstable_by(|a, b| b.cmp(a));
    let n = p.reclaimed.len() - before;
    p.reclaimed[at..].rotate_right(n);
    Ok(true)
}

/// Loads every reusable record not loaded yet and sorts all the reclaimed
/// pages once, lowest last: every allocation then takes the lowest free
/// page (compaction; one sort, not one per record).
pub(crate) fn load_all(w: &mut WriteStore) -> Result<()> {
    while load_unsorted(w)? {}
    w.pager.sort_reclaimed();
    Ok(())
}

/// [`load_record`] without the sort: the next reusable group of the
/// inline GC, else the next reusable record of the GC tree.
fn load_unsorted(w: &mut WriteStore) -> Result<bool> {
    if load_inline(w)? {
        return Ok(true);
    }
    if w.gc.root == 0 || w.gc_exhausted {
        return Ok(false);
    }
    let (k, pages) = {
        let mut c = RawCursor::new(w.pager.view(), w.gc, Order::Bytewise);
        // Records are loaded newest first: below the last one loaded, else
        // at or below the bound.
        let found = match w.loaded.last() {
            Some(l) => match c.seek(&l.key)? {
                Some(_) => c.prev()?,
                None => c.last()?,
            },
            // The newest record is usually reusable (no reader holds an
            // older snapshot): the right edge first, which is also the
            // path commit adds records along.
            None => match c.last()? {
                Some((k, _)) if key_txnid(k).is_some_and(|t| t <= w.gc_bound) => c.current()?,
                _ => {
                    let bound = key(w.gc_bound, u32::MAX);
                    match c.seek(&bound)? {
                        Some((k, _)) if k == bound => c.current()?,
                        Some(_) => c.prev()?,
                        None => c.last()?,
                    }
                }
            },
        };
        let Some((k, v)) = found else {
            w.gc_exhausted = true;
            return Ok(false);
        };
        let Ok(k) = <[u8; 12]>::try_from(k) else {
            return Err(Error::corrupted(
                u64::from(w.gc.root),
                "GC key of wrong length",
            ));
        };
        if key_txnid(&k).is_none_or(|t| t > w.gc_bound) {
            w.gc_exhausted = true;
            return Ok(false);
        }
        if w.loaded.last().is_some_and(|l| k >= l.key) {
            return Err(Error::corrupted(
                u64::from(w.gc.root),
                "GC records out of order",
            ));
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
        w.gc_paths.extend(c.path_pgnos());
        (k, pages)
    };
    take(w, &pages)?;
    w.loaded.push(Loaded { key: k, pages });
    Ok(true)
}

/// Loads the next group of the inline GC that the bound allows (groups
/// are newest first; a newer one is skipped and stays in the list).
fn load_inline(w: &mut WriteStore) -> Result<bool> {
    while w.inline_next < w.inline.len() {
        let i = w.inline_next;
        w.inline_next += 1;
        let (t, list) = w.inline.group(i);
        let mut pages = [0; crate::page::inline_gc::MAX_PAGES];
        let pages = &mut pages[..list.len()];
        pages.copy_from_slice(list);
        if t > w.gc_bound {
            // Kept for later, but claimed: a page it shares with a record
            // loaded later, or that a tree releases, is damage to refuse
            // now, not a page to hand out or give back to the file's end
            // while the meta still lists it.
            claim_all(w, pages)?;
            continue;
        }
        if let Some(&p) = pages.iter().find(|&&p| p >= w.pager.file_pgno) {
            return Err(Error::corrupted(
                u64::from(p),
                "inline GC names a page outside the file",
            ));
        }
        take(w, pages)?;
        w.inline_loaded |= 1 << i;
        return Ok(true);
    }
    Ok(false)
}

/// Checks the pages of a record or inline group being loaded and adds them
/// to the reclaimed pages (at the end: `load_record` moves them in front,
/// `load_all` sorts everything once).
fn take(w: &mut WriteStore, pages: &[Pgno]) -> Result<()> {
    // A page on the path to a loaded record, or to the right edge where
    // commit adds records, is one commit copies when it rewrites the GC:
    // handed out before, it would be overwritten while the GC tree still
    // reads it.
    read_edge(w)?;
    let on_path = |p: &Pgno| w.gc_edge.1.contains(p) || w.gc_paths.contains(p);
    if let Some(&p) = pages.iter().find(|p| on_path(p)) {
        return Err(Error::corrupted(
            u64::from(p),
            "GC lists a page of its own tree",
        ));
    }
    // A page listed twice (in this record or one loaded before), or one a
    // tree of this transaction has released (so a tree still used it), is
    // refused before it can be handed out: two writable views of one page,
    // or a copy onto itself, would follow (design.md §6).
    claim_all(w, pages)?;
    w.pager.reclaimed.extend_from_slice(pages);
    Ok(())
}

/// Claims every page of `pages` ([`crate::store::Pager::claim`]), or none.
fn claim_all(w: &mut WriteStore, pages: &[Pgno]) -> Result<()> {
    let claimed = w.pager.claims.len();
    for &p in pages {
        if let Err(e) = w
            .pager
            .claim(p, "GC lists a page twice, or a page still in a tree")
        {
            w.pager.claims.truncate(claimed);
            return Err(e);
        }
    }
    Ok(())
}

/// Reads the GC tree's pages on the path to its right edge into
/// [`WriteStore::gc_edge`], unless they are those of this tree already.
fn read_edge(w: &mut WriteStore) -> Result<()> {
    if w.gc_edge.0 != w.gc {
        w.gc_edge.1.clear();
        if w.gc.root != 0 {
            let mut c = RawCursor::new(w.pager.view(), w.gc, Order::Bytewise);
            c.last()?;
            w.gc_edge.1.extend(c.path_pgnos());
        }
        w.gc_edge.0 = w.gc;
    }
    Ok(())
}

/// Loads records until `pages` pages are reclaimed or none is left: the
/// pages commit's changes to the GC tree take come from the GC itself
/// rather than the end of the file, as far as the records loaded suffice.
/// No record can be loaded while the tree is being changed, so this runs
/// between changes, for their usual need (see [`change_pages`]).
fn load_until(w: &mut WriteStore, pages: usize) -> Result<()> {
    while w.pager.reclaimed.len() < pages && load_record(w)? {}
    Ok(())
}

/// Pages a change to the GC tree at commit usually takes: a copy of each
/// page on the path to the new records, at the right edge (their key is
/// above every record's), that is not dirty yet; the loaded records are
/// the next keys down, usually in the same leaf. A split or merge takes
/// pages from the end of the file when no reclaimed page is left: loading
/// records for the worst case would load an old one at most commits, to
/// leave it unused.
fn change_pages(w: &WriteStore) -> Result<usize> {
    if w.gc.root == 0 {
        return Ok(0);
    }
    let mut c = RawCursor::new(w.pager.view(), w.gc, Order::Bytewise);
    c.last()?;
    Ok(c.path_pgnos()
        .filter(|p| !w.pager.dirty.contains_key(p))
        .count())
}

/// Records the transaction's free pages at commit, in the records of the
/// GC:
/// - each record loaded ([`load_record`]) is rewritten with as many of the
///   reclaimed pages left unused as it held, or fewer, and deleted when
///   none are left for it. Its key stays: the pages are older than any
///   snapshot a reader holds, whichever record named them, and a record
///   left where it was is not rewritten by the next transactions (a
///   one-put transaction moves only the few pages it used, not every page
///   of the record it took them from);
/// - the pages this transaction freed from trees, and reclaimed pages
///   beyond the loaded records' room, go into new records under its txnid.
///
/// Saving changes the GC tree, which can free pages (copy-on-write of GC
/// pages) and take pages (copies and splits, from `reclaimed` first). The
/// deletes come first, while pages may still be loaded for them; then the
/// rewrites settle: no record is deleted any more (a record no longer
/// needed is written empty, and deleted by the next transaction that loads
/// it), so no merge ever frees a page, and the lists change only in two
/// bounded ways: `freed` grows when a clean GC page is first copied, and
/// `reclaimed` shrinks by the pages taken, from its end. A shrink changes
/// the last non-empty record, rewritten shorter in place without
/// allocating; a growth lengthens the last new chunk by one entry, which
/// can cost one split.
pub(crate) fn save(w: &mut WriteStore) -> Result<()> {
    w.committing = true;
    w.inline_out.clear();
    // No GC record loaded: if the new lists fit in the meta page, the GC
    // tree is left as it is.
    if w.loaded.is_empty() && build_inline(w, 0) {
        return Ok(());
    }
    let need = delete_used(w)?;
    load_until(w, need)?;
    // Copy the path where the new records go first, so that the pages the
    // copies free are in `freed` before the first record is written (the
    // loaded records are the next keys down, usually in the same leaf).
    let mut state = TreeState::default();
    let (mut gc, first) = (w.gc, key(w.pager.txnid, 0));
    let r = Tree::new(w, &mut state, &mut gc, Order::Bytewise).touch_to(&first);
    w.gc = gc;
    r?;
    let cap = chunk_capacity(w).max(1);
    // Buffers kept across commits: `saved`, what the GC tree holds of the
    // records a plan names (at first the loaded records as loaded), and
    // `plan`, what this pass writes.
    let (mut saved, mut plan, mut v) = std::mem::take(&mut w.plans);
    saved.clear();
    for l in &w.loaded {
        saved.push(l.key, &l.pages);
    }
    // The loaded records first, the new lists in the meta page if they fit
    // once those settle, else every list into the tree.
    let mut r = Ok(());
    for spill in [false, true] {
        plan.fill(w, cap, 0, spill);
        r = settle(w, &mut state, cap, (&mut saved, &mut plan), &mut v, spill);
        if r.is_err() || spill || build_inline(w, plan.pages.len()) {
            break;
        }
    }
    w.plans = (saved, plan, v);
    r
}

/// Builds the inline GC commit writes ([`WriteStore::inline_out`]): this
/// transaction's group (the freed pages and the reclaimed ones from
/// `reclaimed[from..]` beyond the loaded inline groups' shares), then each
/// group of the inline GC it began with, whole if it was not loaded, else
/// with its share. Returns `false`, leaving it empty, if that does not fit
/// in the meta page.
fn build_inline(w: &mut WriteStore, from: usize) -> bool {
    let (p, base, out) = (&w.pager, &w.inline, &mut w.inline_out);
    out.clear();
    let loaded = |i: usize| w.inline_loaded & (1 << i) != 0;
    // Each loaded group's share: the reclaimed pages from `from` on, at
    // most as many as it held.
    let mut shares = [(0, 0); crate::page::inline_gc::MAX_GROUPS];
    let mut at = from.min(p.reclaimed.len());
    let (mut groups, mut pages) = (0, 0);
    for (i, (_, list)) in base.iter().enumerate() {
        let n = if loaded(i) {
            let n = list.len().min(p.reclaimed.len() - at);
            shares[i] = (at, at + n);
            at += n;
            n
        } else {
            list.len()
        };
        groups += usize::from(n > 0);
        pages += n;
    }
    let own = p.freed.len() + p.reclaimed.len() - at;
    if !InlineGc::fits(groups + usize::from(own > 0), pages + own) {
        return false;
    }
    let mut buf = [0; crate::page::inline_gc::MAX_PAGES];
    let own_pages = &mut buf[..own];
    let (f, r) = own_pages.split_at_mut(p.freed.len());
    f.copy_from_slice(&p.freed);
    r.copy_from_slice(&p.reclaimed[at..]);
    let mut ok = out.push(p.txnid, own_pages);
    for (i, (t, list)) in base.iter().enumerate() {
        let list = if loaded(i) {
            &p.reclaimed[shares[i].0..shares[i].1]
        } else {
            list
        };
        ok &= out.push(t, list);
    }
    debug_assert!(ok, "inline GC counted to fit but did not");
    // A page recorded free must not be one this commit writes.
    debug_assert!(
        out.iter()
            .all(|(_, l)| l.iter().all(|pg| !p.dirty.contains_key(pg))),
        "inline GC names a dirty page"
    );
    if !ok {
        out.clear();
    }
    ok
}

/// The passes of [`save`]: writes `plan` where it differs from `saved`,
/// plans again (a write can take and free pages), and stops when the new
/// plan is the one just written. New chunks no longer needed are written
/// empty: a plan has at least as many as the one before. With `spill`,
/// the plans hold every list (see [`Plan::fill`]).
fn settle(
    w: &mut WriteStore,
    state: &mut TreeState,
    cap: usize,
    (saved, plan): (&mut Plan, &mut Plan),
    v: &mut Vec<u8>,
    spill: bool,
) -> Result<()> {
    for _ in 0..64 {
        write_plan(w, state, plan, saved, v)?;
        // Content, not length: a pass can both take a page and free one.
        let chunks = plan.new_chunks;
        // The next plan, into the buffer of the one the tree no longer holds.
        saved.fill(w, cap, chunks, spill);
        if *plan == *saved {
            // A page recorded free must not be one this commit writes.
            debug_assert!(
                plan.pages.iter().all(|pg| !w.pager.dirty.contains_key(pg)),
                "GC record names a dirty page"
            );
            return Ok(());
        }
        // The tree holds what this pass wrote; the next pass writes the new plan.
        std::mem::swap(saved, plan);
    }
    Err(Error::corrupted(
        u64::from(w.gc.root),
        "GC record did not settle while saving the free list",
    ))
}

/// Puts every record of `plan` that `saved` does not hold as it is. `v` is
/// the value's buffer.
fn write_plan(
    w: &mut WriteStore,
    state: &mut TreeState,
    plan: &Plan,
    saved: &Plan,
    v: &mut Vec<u8>,
) -> Result<()> {
    for (k, list) in plan.iter() {
        if saved.iter().any(|(sk, sl)| sk == k && sl == list) {
            continue;
        }
        v.clear();
        for p in list {
            v.extend_from_slice(&p.to_le_bytes());
        }
        let mut gc = w.gc;
        let r = Tree::new(w, state, &mut gc, Order::Bytewise).put(k, v);
        w.gc = gc;
        r?;
    }
    Ok(())
}

/// Deletes the loaded records that no reclaimed page is left for (see
/// [`Plan`]), one at a time, until none is: a delete may take pages,
/// leaving fewer for the others. The pages the copy of the GC path will
/// take count as used: a record they would empty is deleted now, in the
/// same copy, rather than written empty and left for a later transaction
/// to find and delete. Returns the pages the copy of the GC path will
/// still take ([`change_pages`]).
fn delete_used(w: &mut WriteStore) -> Result<usize> {
    let mut state = TreeState::default();
    let mut need = change_pages(w)?;
    loop {
        load_until(w, need)?;
        let mut left = w.pager.reclaimed.len().saturating_sub(need);
        let mut used = None;
        for (i, l) in w.loaded.iter().enumerate().rev() {
            if left == 0 || l.pages.is_empty() {
                used = Some(i);
                break;
            }
            left -= l.pages.len().min(left);
        }
        let Some(i) = used else {
            return Ok(need);
        };
        // The record stays in `loaded` while it is deleted: a delete that
        // loads another record looks below the oldest loaded one.
        let k = w.loaded[i].key;
        let mut gc = w.gc;
        let r = Tree::new(w, &mut state, &mut gc, Order::Bytewise).delete(&k);
        w.gc = gc;
        if !r? {
            return Err(Error::corrupted(
                u64::from(w.gc.root),
                "GC record found by scan but not by search",
            ));
        }
        w.loaded.remove(i);
        // A dirty page stays dirty: only a path that was not needs a look.
        // (A delete never leaves a clean page on the right-edge path: a
        // merge goes into the left page, copied first, and `collapse_root`
        // promotes a dirty child. Were that to change, `need` would be low
        // and a record might be written empty again, as before: a wasted
        // record, not a lost page.)
        if need > 0 {
            need = change_pages(w)?;
        }
    }
}

/// The GC records commit writes, key and pages, in buffers kept across
/// commits ([`WriteStore::plans`]): the loaded records, the oldest first,
/// each with its share of the reclaimed pages from the front (where
/// [`load_record`] put their own, so pages taken from the end shrink the
/// newest share first), then the freed pages and the rest of the reclaimed
/// ones in chunks under this transaction's txnid, at least `chunks` of
/// them (empty ones last).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Each record's key and the end of its pages in `pages` (each starts
    /// where the one before ends).
    records: Vec<([u8; 12], usize)>,
    /// The pages of every record, in record order.
    pages: Vec<Pgno>,
    /// Chunks under this transaction's txnid (the last records).
    new_chunks: usize,
}

impl Plan {
    fn clear(&mut self) {
        self.records.clear();
        self.pages.clear();
        self.new_chunks = 0;
    }

    /// Gives back the memory of a plan far larger than a usual commit's
    /// (a mass delete's), between transactions.
    pub(crate) fn shrink(&mut self) {
        const KEEP: usize = 4096;
        if self.pages.capacity() > KEEP || self.records.capacity() > KEEP {
            *self = Plan::default();
        }
    }

    fn push(&mut self, key: [u8; 12], pages: &[Pgno]) {
        self.pages.extend_from_slice(pages);
        self.records.push((key, self.pages.len()));
    }

    /// The records, key and pages, in order.
    fn iter(&self) -> impl Iterator<Item = (&[u8; 12], &[Pgno])> {
        let mut from = 0;
        self.records.iter().map(move |(k, end)| {
            let list = &self.pages[from..*end];
            from = *end;
            (k, list)
        })
    }

    /// Replaces the plan with the records `w` would write now: the loaded
    /// records with their shares; without `spill`, nothing else (the rest
    /// goes to the inline GC, [`build_inline`]); with it, each group of the
    /// inline GC the transaction began with (whole, or its share if it was
    /// loaded; written empty rather than left out when nothing is left for
    /// it, so that no record is deleted while the tree settles), then the
    /// rest in chunks under this transaction's txnid, at least `chunks`.
    fn fill(&mut self, w: &WriteStore, cap: usize, chunks: usize, spill: bool) {
        self.clear();
        let p = &w.pager;
        let mut from = 0;
        for l in w.loaded.iter().rev() {
            let to = (from + l.pages.len()).min(p.reclaimed.len());
            self.push(l.key, &p.reclaimed[from..to]);
            from = to;
        }
        if !spill {
            return;
        }
        for (i, (t, list)) in w.inline.iter().enumerate() {
            if w.inline_loaded & (1 << i) != 0 {
                let to = (from + list.len()).min(p.reclaimed.len());
                self.push(key(t, 0), &p.reclaimed[from..to]);
                from = to;
            } else {
                self.push(key(t, 0), list);
            }
        }
        // The rest in chunks of `cap` pages: a record ends every `cap`
        // pages and at the last one.
        let start = self.pages.len();
        self.pages
            .extend(p.freed.iter().chain(&p.reclaimed[from..]));
        let end = self.pages.len();
        let mut n = 0;
        for at in (start..end).step_by(cap) {
            self.records.push((key(p.txnid, n), (at + cap).min(end)));
            n += 1;
        }
        while (n as usize) < chunks {
            self.push(key(p.txnid, n), &[]);
            n += 1;
        }
        self.new_chunks = n as usize;
    }
}
