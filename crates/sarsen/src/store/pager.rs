//! The pager: the page half of a write transaction. Dirty pages, the
//! allocator (free pages reclaimed from the GC, then the end of the file),
//! copy-on-write, freeing, overflow runs, and the page part of nested
//! transactions' checkpoints. It lives in the environment behind the writer
//! mutex and is reused from one write transaction to the next, so its
//! buffers (dirty pages, free lists) are allocated once, not per operation.
//!
//! Invariant (the soundness argument for handing out `&[u8]` into the map):
//! the writer never writes a page reachable from a snapshot that a reader
//! may hold. It writes only dirty pages, and a dirty page's number comes
//! either from past the end of the file or from the GC, where it was
//! recorded as freed by a transaction no older than every live reader's
//! snapshot (the GC bound of `txn/`).
//!
//! A damaged or hostile GC can break that argument, so the pager checks
//! what it can cheaply ([`Claims`]): no page is taken from the GC twice, or
//! both taken from the GC and released from a tree, and `touch` never
//! copies a page onto itself. Page numbers handed out are therefore
//! distinct from each other and from the page being copied, so no two
//! writable views overlap and no writable view covers a page the writer
//! reads through the map (write-map mode, design.md §6).

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::claims::Claims;
use super::Source;
use crate::error::{Error, Result};
use crate::io::buf::PageBuf;
use crate::io::Map;
use crate::page::{self, Kind, Layout, LeafValue, Page, Pgno, META_PAGES};

/// At most this many spare one-page buffers are kept for reuse.
const POOL_PAGES: usize = 4096;

/// The pager's state. Between transactions it holds only buffers.
pub(crate) struct Pager {
    /// The map of the data file (shared with the environment).
    pub map: Arc<Map>,
    pub layout: Layout,
    /// Txnid of the transaction under way.
    pub txnid: u64,
    /// Dirty pages by number: one page, or a whole overflow run.
    pub dirty: FxHashMap<Pgno, PageBuf>,
    /// Spare one-page buffers.
    pool: Vec<Box<[u8]>>,
    /// Pages freed by this transaction that older snapshots may still read:
    /// recorded in the GC under `txnid` at commit.
    pub freed: Vec<Pgno>,
    /// Free pages this transaction may use now.
    pub reclaimed: Vec<Pgno>,
    /// First page number past the allocated pages.
    pub next_pgno: Pgno,
    /// Pages below this number exist in the file (the published
    /// `next_pgno` at begin); clean pages at or above it cannot exist.
    pub file_pgno: Pgno,
    /// The geometry's upper bound, pages.
    pub upper_pgno: Pgno,
    /// The file's growth step, pages.
    pub growth_pgno: Pgno,
    /// The leaf that `touch` copied last (0: none), whose checksum is taken
    /// when a write's descent reaches a clean leaf ([`Pager::approach_leaf`])
    /// or `touch` copies another (see [`Pager::hash_behind`]).
    last_leaf: Pgno,
    /// The first `kept_run` pages of `reclaimed` are a run of consecutive
    /// pages an operation counted on for its overflow value
    /// ([`Pager::keep_run`]): one-page allocations leave them alone.
    pub kept_run: usize,
    /// Pages of the snapshot this transaction took from the GC or released
    /// from its trees: each may do so once (see [`Claims`]).
    pub claims: Claims,
    /// The page part of the checkpoints of the nested transactions under
    /// way, innermost last. Empty outside nested transactions.
    pub marks: Vec<Mark>,
}

/// The pager's state when a nested transaction began, and the original
/// bytes of the pages it has changed since (`marks.rs`).
pub(crate) struct Mark {
    pub(super) next_pgno: Pgno,
    /// Length of `freed` (only appended to between commits).
    pub(super) freed: usize,
    pub(super) reclaimed: Vec<Pgno>,
    /// The kept run at the front of `reclaimed` (see [`Pager::kept_run`]).
    pub(super) kept_run: usize,
    /// Number of pages claimed.
    pub(super) claims: usize,
    /// Pages this nested transaction has changed: `Some(bytes)` for a page
    /// (or overflow run) that was dirty when it began, with those bytes;
    /// `None` for a page it allocated.
    pub(crate) pages: FxHashMap<Pgno, Option<Box<[u8]>>>,
}

impl Pager {
    /// An idle pager over `map` with pages laid out as `layout`.
    pub(crate) fn new(map: Arc<Map>, layout: Layout) -> Pager {
        Pager {
            map,
            layout,
            txnid: 0,
            dirty: FxHashMap::default(),
            pool: Vec::new(),
            freed: Vec::new(),
            reclaimed: Vec::new(),
            next_pgno: 0,
            file_pgno: 0,
            upper_pgno: 0,
            growth_pgno: 1,
            last_leaf: 0,
            kept_run: 0,
            claims: Claims::default(),
            marks: Vec::new(),
        }
    }

    /// Starts transaction `txnid` on a snapshot of `next_pgno` pages, in a
    /// file that may grow by `growth_pgno` pages at a time up to
    /// `upper_pgno`. The pager must be reset.
    pub(crate) fn begin(
        &mut self,
        txnid: u64,
        next_pgno: Pgno,
        upper_pgno: Pgno,
        growth_pgno: Pgno,
    ) {
        self.txnid = txnid;
        self.next_pgno = next_pgno;
        self.file_pgno = next_pgno;
        self.upper_pgno = upper_pgno;
        self.growth_pgno = growth_pgno;
    }

    /// Drops all uncommitted pages, keeping buffers for reuse.
    pub(crate) fn reset(&mut self) {
        // Draining or clearing a hash table costs its capacity, not its
        // length, and a transaction begins and ends with a reset: after one
        // large transaction every small one would pay for the large one's
        // table twice. So an empty table is left alone, and a table far
        // larger than what this transaction used gives its memory back.
        if !self.dirty.is_empty() {
            let len = self.dirty.len();
            let cap = self.dirty.capacity();
            let (pool, psize) = (&mut self.pool, self.layout.psize);
            for (_, b) in self.dirty.drain() {
                if let Some(b) = b.into_heap() {
                    if b.len() == psize && pool.len() < POOL_PAGES {
                        pool.push(b);
                    }
                }
            }
            if cap > 256 && cap > 8 * len {
                self.dirty.shrink_to(2 * len);
            }
        }
        self.freed.clear();
        self.reclaimed.clear();
        self.last_leaf = 0;
        self.kept_run = 0;
        self.claims.truncate(0);
        self.drop_marks();
    }

    /// The read view of this transaction: dirty pages, then the map.
    #[inline]
    pub(crate) fn view(&self) -> WSource<'_> {
        WSource { w: self }
    }

    /// Whether `pages` pages, `run` of them contiguous (an overflow run),
    /// can be allocated from the reclaimed pages and the room left below
    /// the upper bound, given whether the reclaimed pages hold such a run
    /// (`have_run`). `UpperBoundReached` otherwise.
    pub(crate) fn room(&self, pages: usize, run: usize, have_run: bool) -> Result<()> {
        let tail = u64::from(self.upper_pgno.saturating_sub(self.next_pgno));
        if self.reclaimed.len() as u64 + tail >= pages as u64 && (have_run || tail >= run as u64) {
            return Ok(());
        }
        Err(Error::UpperBoundReached {
            upper: u64::from(self.upper_pgno) * self.layout.psize as u64,
        })
    }

    /// Moves a run of `run` consecutive reclaimed pages to the front of
    /// `reclaimed` and keeps it there for the operation's overflow value:
    /// one-page allocations take the other reclaimed pages, then the end
    /// of the file, never a page of the run (taking one would break the run
    /// that the room check counted on). Any earlier kept run is released.
    pub(crate) fn keep_run(&mut self, run: usize) {
        self.kept_run = 0;
        if run <= 1 {
            return;
        }
        if let Some(lo) = take_run(&mut self.reclaimed, run) {
            self.reclaimed.splice(0..0, lo..lo + run as Pgno);
            self.kept_run = run;
        }
    }

    /// Whether the reclaimed pages hold a run of `run` consecutive pages
    /// (always, for `run <= 1`).
    pub(crate) fn has_run(&self, run: usize) -> bool {
        run <= 1 || has_run(&self.reclaimed, run)
    }

    /// Puts back dirty page `pgno`, taken with [`Pager::take_dirty`].
    pub(crate) fn put_dirty(&mut self, pgno: Pgno, b: PageBuf) {
        self.dirty.insert(pgno, b);
    }

    /// Claims page `p` of the snapshot (see [`Claims`]); `Corrupted`, with
    /// `what`, if it lies outside `3..file_pgno` or was claimed already.
    #[inline]
    pub(crate) fn claim(&mut self, p: Pgno, what: &'static str) -> Result<()> {
        if p < META_PAGES || p >= self.file_pgno || !self.claims.claim(p) {
            return Err(Error::corrupted(u64::from(p), what));
        }
        Ok(())
    }

    /// Mutable bytes of dirty page `pgno`.
    #[inline]
    pub(crate) fn dirty_mut(&mut self, pgno: Pgno) -> Result<&mut [u8]> {
        if !self.marks.is_empty() {
            self.save_original(pgno);
        }
        self.dirty
            .get_mut(&pgno)
            .map(|b| &mut b[..])
            .ok_or_else(|| Error::corrupted(u64::from(pgno), "page expected dirty is not"))
    }

    #[inline]
    pub(crate) fn is_dirty(&self, pgno: Pgno) -> bool {
        self.dirty.contains_key(&pgno)
    }

    /// Takes dirty page `pgno` out of the dirty set (a split puts it back).
    #[inline]
    pub(crate) fn take_dirty(&mut self, pgno: Pgno) -> Option<PageBuf> {
        if !self.marks.is_empty() {
            self.save_original(pgno);
        }
        self.dirty.remove(&pgno)
    }

    /// Under a nested transaction: before the first change to a dirty page
    /// the transaction did not allocate itself, keeps a copy of its bytes
    /// in the checkpoint, so that an abort can put them back.
    fn save_original(&mut self, pgno: Pgno) {
        let Some(cp) = self.marks.last() else {
            return;
        };
        if cp.pages.contains_key(&pgno) {
            return;
        }
        let Some(b) = self.dirty.get(&pgno) else {
            return;
        };
        let copy = if b.len() == self.layout.psize {
            let mut c = self
                .pool
                .pop()
                .unwrap_or_else(|| vec![0u8; self.layout.psize].into_boxed_slice());
            c.copy_from_slice(b);
            c
        } else {
            Box::from(&b[..])
        };
        if let Some(cp) = self.marks.last_mut() {
            cp.pages.insert(pgno, Some(copy));
        }
    }

    /// Under a nested transaction: notes that it allocated page `pgno`
    /// (an abort drops the page; its number returns with the free lists).
    fn note_new(&mut self, pgno: Pgno) {
        if let Some(cp) = self.marks.last_mut() {
            cp.pages.entry(pgno).or_insert(None);
        }
    }

    /// A one-page heap buffer, from the pool when possible.
    pub(crate) fn buffer(&mut self) -> Box<[u8]> {
        self.pool
            .pop()
            .unwrap_or_else(|| vec![0u8; self.layout.psize].into_boxed_slice())
    }

    /// Returns a buffer to the pool (mapped buffers need nothing).
    pub(crate) fn recycle(&mut self, b: PageBuf) {
        if let Some(b) = b.into_heap() {
            self.recycle_heap(b);
        }
    }

    /// Returns a heap buffer to the pool.
    pub(crate) fn recycle_heap(&mut self, b: Box<[u8]>) {
        if b.len() == self.layout.psize && self.pool.len() < POOL_PAGES {
            self.pool.push(b);
        }
    }

    /// The buffer for `n` freshly allocated pages at `pgno`: their own bytes
    /// in the map in write-map mode (growing the file first), else heap.
    pub(crate) fn page_buf(&mut self, pgno: Pgno, n: usize) -> Result<PageBuf> {
        let ps = self.layout.psize;
        if self.map.writable() {
            let end = (pgno as usize + n) * ps;
            self.map.grow(
                end as u64,
                u64::from(self.growth_pgno) * ps as u64,
                u64::from(self.upper_pgno) * ps as u64,
            )?;
            return self
                .map
                .page_mut(pgno as usize * ps, n * ps)
                .map(PageBuf::mapped)
                .ok_or_else(|| {
                    Error::corrupted(u64::from(pgno), "allocated page outside the map")
                });
        }
        Ok(PageBuf::heap(if n == 1 {
            self.buffer()
        } else {
            vec![0u8; n * ps].into_boxed_slice()
        }))
    }

    /// Allocates `n` contiguous page numbers: from the reclaimed free pages,
    /// else from the end of the file. The pager loads no GC record: its
    /// store does, in [`PageStore::reserve`](super::PageStore::reserve) and
    /// before a one-page allocation finds no reclaimed page (loading only
    /// reads the GC tree, so it may happen in the middle of an operation).
    #[inline]
    pub(crate) fn alloc(&mut self, n: usize) -> Result<Pgno> {
        if n == 1 {
            if self.reclaimed.len() > self.kept_run {
                if let Some(p) = self.reclaimed.pop() {
                    self.prefetch_next_free();
                    return Ok(p);
                }
            }
        } else if let Some(p) = take_run(&mut self.reclaimed, n) {
            self.kept_run = 0;
            return Ok(p);
        }
        let p = self.next_pgno;
        let end = u64::from(p) + n as u64;
        if end > u64::from(self.upper_pgno) {
            return Err(Error::UpperBoundReached {
                upper: u64::from(self.upper_pgno) * self.layout.psize as u64,
            });
        }
        self.next_pgno = end as Pgno;
        Ok(p)
    }

    /// Orders all the reclaimed pages after the kept run, descending, so
    /// that one-page allocations, which take from the end, hand out the
    /// lowest page first and the end of the file empties
    /// ([`Pager::refund_tail`]). Stable, so that sorted runs (records
    /// loaded one after another) are merged in linear time.
    pub(crate) fn sort_reclaimed(&mut self) {
        let from = self.kept_run.min(self.reclaimed.len());
        self.reclaimed[from..].sort_by(|a, b| b.cmp(a));
    }

    /// Gives back to the unallocated end of the file the reclaimed pages
    /// that end it: while page `next_pgno - 1` is reclaimed, it leaves
    /// `reclaimed` and `next_pgno` moves back over it (libmdbx's refund).
    /// Returns how many pages were given back. A reclaimed page is
    /// unreachable from every snapshot a reader may hold (it came from a
    /// GC record at or below the bound, or this transaction allocated it),
    /// so a later allocation from the end may hand it out again, as it
    /// would from the GC.
    pub(crate) fn refund_tail(&mut self) -> usize {
        let top = self.reclaimed[self.kept_run.min(self.reclaimed.len())..]
            .iter()
            .max()
            .copied();
        if top.is_none_or(|t| t.checked_add(1) != Some(self.next_pgno)) {
            return 0;
        }
        self.sort_reclaimed();
        let from = self.kept_run.min(self.reclaimed.len());
        let mut n = 0;
        while let Some(&p) = self.reclaimed.get(from + n) {
            if p.checked_add(1) != Some(self.next_pgno) {
                break;
            }
            self.next_pgno = p;
            n += 1;
        }
        self.reclaimed.drain(from..from + n);
        n
    }

    /// In write-map mode, starts loading the free page the next one-page
    /// allocation will return. A reused page was last written long ago, so
    /// the copy into it would otherwise wait for its lines from memory. The
    /// page is below the file end: it belonged to an older snapshot. Into
    /// the second-level cache (`page::prefetch_ahead`), as the descent's
    /// prefetch: its 64 requests would otherwise wait for the few buffers
    /// that track first-level misses, stalling the copy under way.
    fn prefetch_next_free(&self) {
        if !self.map.writable() {
            return;
        }
        if let Some(&next) = self.reclaimed.last() {
            let ps = self.layout.psize;
            if let Some(b) = self.map.slice(next as usize * ps, ps) {
                page::prefetch_ahead(b);
            }
        }
    }

    /// Allocates a fresh dirty page of `kind`.
    pub(crate) fn new_page(&mut self, kind: Kind) -> Result<Pgno> {
        let pgno = self.alloc(1)?;
        let mut b = self.page_buf(pgno, 1)?;
        page::init(&mut b, pgno, kind, self.txnid);
        self.note_new(pgno);
        self.dirty.insert(pgno, b);
        Ok(pgno)
    }

    /// Frees `n` pages starting at `pgno`. A page this transaction wrote is
    /// reusable at once; an older one only once no snapshot can see it.
    /// `Corrupted` (a damaged tree) if a dirty `pgno` is not `n` pages
    /// long, or if an older page was freed already or is listed in the GC.
    pub(crate) fn free(&mut self, pgno: Pgno, n: usize) -> Result<()> {
        if let Some(b) = self.dirty.remove(&pgno) {
            if b.len() != n * self.layout.psize {
                // Another length than allocated: the other pages are not
                // this buffer's to give back.
                self.dirty.insert(pgno, b);
                return Err(Error::corrupted(
                    u64::from(pgno),
                    "page freed with another length than it has",
                ));
            }
            match self.marks.last_mut() {
                // The first change to a page dirty before the nested
                // transaction began: its buffer becomes the saved original
                // (a mapped page's bytes are copied: the view must go).
                Some(cp) if !cp.pages.contains_key(&pgno) => {
                    let orig = if b.needs_write() {
                        b.into_heap().unwrap_or_default()
                    } else {
                        Box::from(&b[..])
                    };
                    cp.pages.insert(pgno, Some(orig));
                }
                _ => self.recycle(b),
            }
            self.reclaimed.extend((0..n as Pgno).map(|i| pgno + i));
        } else {
            for i in 0..n as Pgno {
                let what = "page freed twice, or freed from a tree and listed free in the GC";
                self.claim(pgno.saturating_add(i), what)?;
            }
            self.freed.extend((0..n as Pgno).map(|i| pgno + i));
        }
        Ok(())
    }

    /// Frees an overflow run named by a leaf node, after checking that the
    /// run lies inside the allocated pages (the node may come from a
    /// damaged file).
    pub(crate) fn free_run(&mut self, pgno: Pgno, n: usize) -> Result<()> {
        if pgno < page::META_PAGES || u64::from(pgno) + n as u64 > u64::from(self.next_pgno) {
            return Err(Error::corrupted(
                u64::from(pgno),
                "overflow run outside the allocated pages",
            ));
        }
        self.free(pgno, n)
    }

    /// Copy-on-write: makes page `pgno` dirty, returning its (possibly new)
    /// number. The old page is freed; the caller updates the parent's
    /// pointer when the number changed.
    pub(crate) fn touch(&mut self, pgno: Pgno) -> Result<Pgno> {
        if self.dirty.contains_key(&pgno) {
            return Ok(pgno);
        }
        let new = self.alloc(1)?;
        if new == pgno {
            // Only a GC that lists a page still in a tree hands it out, and
            // copying a page onto itself would make a writable view of the
            // bytes the copy reads (write-map mode).
            return Err(Error::corrupted(
                u64::from(pgno),
                "GC lists a page still in a tree",
            ));
        }
        let mut b = self.page_buf(new, 1)?;
        let leaf = {
            // Copy the header and slots, then the nodes, skipping the free
            // gap between them (as LMDB's mdb_page_copy). The gap's stale
            // bytes are harmless: the checksum covers what is written. The
            // page is clean, so its bytes are in the map (where a descent
            // to it has prefetched them).
            let src = Page::new(
                super::map_page_bytes(&self.map, &self.layout, self.file_pgno, pgno)?,
                pgno,
            )?;
            let s = src.bytes();
            let lo = page::HDR + 2 * src.len();
            let hi = s.len() - (src.used() - 2 * src.len());
            b[..lo].copy_from_slice(&s[..lo]);
            b[hi..].copy_from_slice(&s[hi..]);
            src.is_leaf()
        };
        // The original leaves the tree: it must be in the snapshot, and
        // neither freed already nor taken from the GC (a page the GC
        // lists while a tree uses it).
        if let Err(e) = self.claim(
            pgno,
            "page copied is freed already or listed free in the GC",
        ) {
            self.recycle(b);
            return Err(e);
        }
        // The copy keeps the older commit's `FRESH` marks; sealing clears
        // them (`btree::seal`).
        page::set_identity(&mut b, new, self.txnid);
        self.note_new(new);
        self.dirty.insert(new, b);
        self.freed.push(pgno);
        if leaf {
            self.hash_behind(new);
        }
        Ok(new)
    }

    /// A write's descent is about to read `pgno`, the leaf at its end.
    /// Returns whether the page is dirty. If it is not, the write will copy
    /// it, so this starts loading all of it (as [`WSource::page_dirty`])
    /// and, while its lines arrive from memory, takes the checksum of the
    /// leaf `touch` copied last (see [`Pager::hash_behind`]), whose bytes
    /// are still in the CPU cache.
    pub(crate) fn approach_leaf(&mut self, pgno: Pgno) -> bool {
        if self.dirty.contains_key(&pgno) {
            return true;
        }
        if let Ok(b) = super::map_page_bytes(&self.map, &self.layout, self.file_pgno, pgno) {
            page::prefetch_ahead(b);
        }
        let prev = std::mem::take(&mut self.last_leaf);
        if prev != 0 {
            if let Some(b) = self.dirty.get_mut(&prev) {
                b.hash_leaf();
            }
        }
        false
    }

    /// Takes the checksum of the leaf `touch` copied before `next`, which
    /// it copies now. A write that moves on to another leaf is usually done
    /// with the last one, whose bytes are still in the CPU cache; at commit
    /// they would be loaded again from memory. Seal uses the checksum
    /// unless the page changed since, which `PageBuf` tracks.
    fn hash_behind(&mut self, next: Pgno) {
        let prev = std::mem::replace(&mut self.last_leaf, next);
        if let Some(b) = self.dirty.get_mut(&prev) {
            b.hash_leaf();
        }
    }

    /// Writes `value` into a new overflow run; returns (first page, checksum).
    pub(crate) fn write_overflow(&mut self, value: &[u8]) -> Result<(Pgno, u64)> {
        let n = self.layout.overflow_pages(value.len());
        let pgno = self.alloc(n)?;
        let mut b = self.page_buf(pgno, n)?;
        page::init_overflow(&mut b, pgno, n as u32, self.txnid);
        b[page::HDR..page::HDR + value.len()].copy_from_slice(value);
        b[page::HDR + value.len()..].fill(0);
        let sum = page::checksum(&b);
        self.note_new(pgno);
        self.dirty.insert(pgno, b);
        Ok((pgno, sum))
    }
}

/// Whether `w` (descending) is a run of consecutive page numbers. Checked
/// step by step, so duplicates (possible only in a damaged GC) never pass.
fn is_run(w: &[Pgno]) -> bool {
    w.windows(2).all(|p| p[0].checked_sub(1) == Some(p[1]))
}

/// The first page of a run of `n` consecutive page numbers in `list`, if
/// it holds one. Searched in a sorted copy: the order of `list` is the
/// allocation order (and, at commit, which GC record each page is written
/// back under), which sorting it would scramble.
fn find_run(list: &[Pgno], n: usize) -> Option<Pgno> {
    if list.len() < n {
        return None;
    }
    let mut sorted = list.to_vec();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    // Descending order: a run p, p+1, .., p+n-1 sits at i+n-1 .. i. The
    // lowest run, as one-page allocations take the lowest page.
    let i = sorted.windows(n).rposition(is_run)?;
    Some(sorted[i + n - 1])
}

/// Whether `list` holds `n` consecutive page numbers.
pub(crate) fn has_run(list: &[Pgno], n: usize) -> bool {
    find_run(list, n).is_some()
}

/// Removes a run of `n` consecutive page numbers from `list`, if it holds
/// one, and returns its first page; the other pages keep their order.
fn take_run(list: &mut Vec<Pgno>, n: usize) -> Option<Pgno> {
    let lo = find_run(list, n)?;
    let end = lo + n as Pgno;
    list.retain(|&p| p < lo || p >= end);
    Some(lo)
}

/// The write transaction's read view: dirty pages first, then the map.
#[derive(Clone, Copy)]
pub(crate) struct WSource<'a> {
    w: &'a Pager,
}

impl<'a> WSource<'a> {
    /// Page `pgno` as [`Source::page`] reads it, and whether it is dirty.
    #[inline]
    pub(crate) fn page_dirty(self, pgno: Pgno) -> Result<(Page<'a>, bool)> {
        match self.w.dirty.get(&pgno) {
            Some(b) => Ok((Page::new(&b[..self.w.layout.psize], pgno)?, true)),
            None => {
                let l = &self.w.layout;
                let b = crate::store::map_page_bytes(&self.w.map, l, self.w.file_pgno, pgno)?;
                // A write copies the clean page it reaches, so every line
                // will be read: all are asked for at once, so that the
                // misses of the binary search and the copy overlap. Into
                // the second-level cache: 64 first-level requests would
                // wait for the few buffers that track first-level misses,
                // stalling the search that needs only a few of the lines.
                page::prefetch_ahead(b);
                Ok((Page::new(b, pgno)?, false))
            }
        }
    }

    /// Page `pgno`, which [`Pager::approach_leaf`] has just found `dirty`
    /// or not: a clean page is read from the map without a look-up.
    #[inline]
    pub(crate) fn page_known(self, pgno: Pgno, dirty: bool) -> Result<Page<'a>> {
        if dirty {
            return self.page(pgno);
        }
        let b = crate::store::map_page_bytes(&self.w.map, &self.w.layout, self.w.file_pgno, pgno)?;
        Page::new(b, pgno)
    }
}

impl<'a> Source<'a> for WSource<'a> {
    #[inline]
    fn page(self, pgno: Pgno) -> Result<Page<'a>> {
        self.page_dirty(pgno).map(|(p, _)| p)
    }

    fn value(self, v: LeafValue<'a>) -> Result<&'a [u8]> {
        match v {
            LeafValue::Inline(b) => Ok(b),
            LeafValue::Overflow { pgno, len, .. } => match self.w.dirty.get(&pgno) {
                Some(b) => {
                    let n = self.w.layout.overflow_pages(len);
                    page::check_overflow(&b[..], pgno, n)?;
                    b.get(page::HDR..page::HDR + len).ok_or_else(|| {
                        Error::corrupted(u64::from(pgno), "overflow value past its run")
                    })
                }
                None => {
                    super::map_overflow(&self.w.map, &self.w.layout, self.w.file_pgno, pgno, len)
                }
            },
        }
    }
}
