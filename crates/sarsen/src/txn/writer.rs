//! The write transaction's working state: dirty pages, the page allocator
//! and copy-on-write. It lives in the environment behind the writer mutex
//! and is reused from one write transaction to the next, so its buffers
//! (dirty pages, free lists) are allocated once, not per operation.
//!
//! Invariant (the soundness argument for handing out `&[u8]` into the map):
//! the writer never writes a page reachable from a snapshot that a reader
//! may hold. It writes only dirty pages, and a dirty page's number comes
//! either from past the end of the file or from the GC, where it was
//! recorded as freed by a transaction no older than every live reader's
//! snapshot (see [`Writer::gc_bound`]).
//!
//! A damaged or hostile GC can break that argument, so the writer checks
//! what it can cheaply ([`Claims`]): no page is taken from the GC twice, or
//! both taken from the GC and released from a tree, and `touch` never
//! copies a page onto itself. Page numbers handed out are therefore
//! distinct from each other and from the page being copied, so no two
//! writable views overlap and no writable view covers a page the writer
//! reads through the map (write-map mode, design.md §6).

use rustc_hash::FxHashMap;

use crate::error::{Error, Result};
use crate::io::buf::PageBuf;
use crate::io::Map;
use crate::page::{self, DbRecord, Kind, Layout, LeafValue, Page, Pgno, META_PAGES};
use crate::store::Source;
use crate::txn::nested::Checkpoint;

/// State of the named databases touched by a write transaction.
#[derive(Clone, Debug)]
pub(crate) struct NamedDb {
    /// The tree as this transaction sees it.
    pub rec: DbRecord,
    /// Whether the database exists (false after `drop_db`).
    pub exists: bool,
    /// Whether `rec` or the settings changed and must be written to the
    /// catalog at commit.
    pub dirty: bool,
    /// Name of the merge operator recorded for the database.
    pub merge: Option<Box<str>>,
    /// Name of the user comparator recorded for the database (its record's
    /// flags say the order is a user comparator's).
    pub comparator: Option<Box<str>>,
    /// The canary (main database's entry only).
    pub canary: Option<[u64; 4]>,
    /// Name of the user comparator recorded for the duplicate values.
    pub dup_comparator: Option<Box<str>>,
}

impl NamedDb {
    /// A database that does not exist.
    pub(crate) fn absent() -> NamedDb {
        NamedDb {
            rec: DbRecord::default(),
            exists: false,
            dirty: false,
            merge: None,
            comparator: None,
            canary: None,
            dup_comparator: None,
        }
    }
}

/// The writer's reusable state.
pub(crate) struct Writer {
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
    /// GC records of transactions `<=` this bound hold reusable pages.
    pub gc_bound: u64,
    /// Set while commit saves the GC: allocation then stops loading records.
    pub committing: bool,
    /// Set while a GC record is being deleted after loading it.
    pub loading_gc: bool,
    pub gc: DbRecord,
    pub catalog: DbRecord,
    pub main: DbRecord,
    /// Named databases by handle index. Index 0 holds only the main
    /// database's settings (its tree is `main`).
    pub dbs: Vec<Option<NamedDb>>,
    /// Scratch buffer for building nodes.
    pub scratch: Vec<u8>,
    /// Buffer for merge results and catalog entries.
    pub merge_buf: Vec<u8>,
    /// The main database's record changed (for a change of its sequence
    /// alone, which dirties no page).
    pub main_changed: bool,
    /// The last snapshot reported to the slow-reader handler (pid, txnid):
    /// each is reported once. Kept across transactions.
    pub slow_reported: Option<(u32, u64)>,
    /// The rightmost path of the tree with this root, left by a put that
    /// appended there (see `insert::append_path`). Cleared by any other
    /// change to that tree.
    pub append_hint: Option<(Pgno, crate::btree::Path)>,
    /// Checkpoints of the nested transactions under way, innermost last
    /// (see `txn/nested.rs`). Empty outside nested transactions.
    pub nest: Vec<Checkpoint>,
    /// Numbers the checkpoints, so a nested transaction finds its own.
    pub nest_serial: u64,
    /// The leaf that `touch` copied last (0: none), whose checksum is taken
    /// when `touch` copies another (see [`Writer::touch`]).
    last_leaf: Pgno,
    /// Pages of the snapshot this transaction took from the GC or released
    /// from its trees: each may do so once (see [`Claims`]).
    pub claims: Claims,
}

/// One bit per page of the snapshot (`3..file_pgno`): set when the writer
/// takes the page from a GC record or frees it from a tree (`touch`,
/// `free`). A page may be claimed once per transaction, so in a file whose
/// GC lists a page twice, or lists a page a tree still uses, the second
/// claim fails with `Corrupted` before any view of the page is made. That
/// keeps every page number the allocator hands out distinct from every
/// other allocated page and from every page the writer releases, which the
/// writable views of write-map mode rely on (design.md §6).
///
/// The bits live in chunks of [`CLAIM_CHUNK`] pages, made when a page of
/// one is first claimed and kept across transactions, so memory follows
/// the pages claimed rather than a `next_pgno` a damaged meta may set to
/// 2^31. `list` holds the set bits: clearing costs what was claimed.
#[derive(Default)]
pub(crate) struct Claims {
    chunks: Vec<Option<Box<[u64; CLAIM_CHUNK / 64]>>>,
    list: Vec<Pgno>,
}

/// Pages per chunk of [`Claims`] (a 512-byte bitmap).
const CLAIM_CHUNK: usize = 4096;

impl Claims {
    /// Sets the bit of page `p`; false if it was set already.
    #[inline]
    fn claim(&mut self, p: Pgno) -> bool {
        let c = p as usize / CLAIM_CHUNK;
        if c >= self.chunks.len() {
            self.chunks.resize_with(c + 1, || None);
        }
        let Some(slot) = self.chunks.get_mut(c) else {
            return false;
        };
        let chunk = slot.get_or_insert_with(|| Box::new([0; CLAIM_CHUNK / 64]));
        let (w, m) = (p as usize % CLAIM_CHUNK / 64, 1u64 << (p % 64));
        if chunk[w] & m != 0 {
            return false;
        }
        chunk[w] |= m;
        self.list.push(p);
        true
    }

    /// How many pages are claimed (a nested transaction's checkpoint).
    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    /// Forgets every claim after the first `len`.
    pub(crate) fn truncate(&mut self, len: usize) {
        for p in self.list.drain(len.min(self.list.len())..) {
            if let Some(Some(chunk)) = self.chunks.get_mut(p as usize / CLAIM_CHUNK) {
                chunk[p as usize % CLAIM_CHUNK / 64] &= !(1u64 << (p % 64));
            }
        }
    }
}

impl Writer {
    pub(crate) fn new(layout: Layout) -> Writer {
        Writer {
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
            gc_bound: 0,
            committing: false,
            loading_gc: false,
            gc: DbRecord::default(),
            catalog: DbRecord::default(),
            main: DbRecord::default(),
            dbs: Vec::new(),
            scratch: Vec::new(),
            merge_buf: Vec::new(),
            slow_reported: None,
            main_changed: false,
            append_hint: None,
            nest: Vec::new(),
            nest_serial: 0,
            last_leaf: 0,
            claims: Claims::default(),
        }
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

    /// Forgets the append hint if it belongs to the tree rooted at `root`
    /// (called before any change other than an appending put).
    pub(crate) fn clear_hint(&mut self, root: Pgno) {
        if self.append_hint.as_ref().is_some_and(|(r, _)| *r == root) {
            self.append_hint = None;
        }
    }

    /// Drops all uncommitted state, keeping buffers for reuse.
    pub(crate) fn reset(&mut self) {
        let bufs: Vec<PageBuf> = self.dirty.drain().map(|(_, b)| b).collect();
        // Draining and clearing a hash table cost its capacity, not its
        // length: after one large transaction, every small one would pay
        // for the large one's table twice (measured: a quarter of the time
        // of one-put commits after a 1M-record load). Give the memory back
        // once it is far larger than what transactions use.
        let cap = self.dirty.capacity();
        if cap > 4096 && cap > 8 * bufs.len() {
            self.dirty.shrink_to(2 * bufs.len());
        }
        for b in bufs {
            self.recycle(b);
        }
        self.freed.clear();
        self.reclaimed.clear();
        self.dbs.clear();
        self.committing = false;
        self.append_hint = None;
        self.main_changed = false;
        self.last_leaf = 0;
        self.claims.truncate(0);
        self.drop_checkpoints();
    }

    /// The read view of this transaction.
    pub(crate) fn source<'a>(&'a self, map: &'a Map) -> WSource<'a> {
        WSource { w: self, map }
    }

    /// Mutable bytes of dirty page `pgno`.
    pub(crate) fn dirty_mut(&mut self, pgno: Pgno) -> Result<&mut [u8]> {
        if !self.nest.is_empty() {
            self.save_original(pgno);
        }
        self.dirty
            .get_mut(&pgno)
            .map(|b| &mut b[..])
            .ok_or_else(|| Error::corrupted(u64::from(pgno), "page expected dirty is not"))
    }

    pub(crate) fn is_dirty(&self, pgno: Pgno) -> bool {
        self.dirty.contains_key(&pgno)
    }

    /// Takes dirty page `pgno` out of the dirty set (a split puts it back).
    pub(crate) fn take_dirty(&mut self, pgno: Pgno) -> Option<PageBuf> {
        if !self.nest.is_empty() {
            self.save_original(pgno);
        }
        self.dirty.remove(&pgno)
    }

    /// Under a nested transaction: before the first change to a dirty page
    /// the transaction did not allocate itself, keeps a copy of its bytes
    /// in the checkpoint, so that an abort can put them back.
    fn save_original(&mut self, pgno: Pgno) {
        let Some(cp) = self.nest.last() else {
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
        if let Some(cp) = self.nest.last_mut() {
            cp.pages.insert(pgno, Some(copy));
        }
    }

    /// Under a nested transaction: notes that it allocated page `pgno`
    /// (an abort drops the page; its number returns with the free lists).
    fn note_new(&mut self, pgno: Pgno) {
        if let Some(cp) = self.nest.last_mut() {
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
        if b.len() == self.layout.psize && self.pool.len() < 4096 {
            self.pool.push(b);
        }
    }

    /// The buffer for `n` freshly allocated pages at `pgno`: their own bytes
    /// in the map in write-map mode (growing the file first), else heap.
    pub(crate) fn page_buf(&mut self, map: &Map, pgno: Pgno, n: usize) -> Result<PageBuf> {
        let ps = self.layout.psize;
        if map.writable() {
            let end = (pgno as usize + n) * ps;
            map.grow(
                end as u64,
                u64::from(self.growth_pgno) * ps as u64,
                u64::from(self.upper_pgno) * ps as u64,
            )?;
            return map
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
    /// else from the end of the file. GC records are loaded only by
    /// [`Writer::reserve`], before an operation changes anything, so that an
    /// allocation in the middle of one never spends the pages reserved for
    /// it on deleting a GC record.
    pub(crate) fn alloc(&mut self, map: &Map, n: usize) -> Result<Pgno> {
        if n == 1 {
            if let Some(p) = self.reclaimed.pop() {
                self.prefetch_next_free(map);
                return Ok(p);
            }
        } else if let Some(p) = take_run(&mut self.reclaimed, n) {
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

    /// In write-map mode, starts loading the free page the next one-page
    /// allocation will return. A reused page was last written long ago, so
    /// the copy into it would otherwise wait for its lines from memory
    /// (measured: random merges into 10M records 0.975x the time). The page
    /// is below the file end: it belonged to an older snapshot.
    fn prefetch_next_free(&self, map: &Map) {
        if !map.writable() {
            return;
        }
        if let Some(&next) = self.reclaimed.last() {
            let ps = self.layout.psize;
            if let Some(b) = map.slice(next as usize * ps, ps) {
                page::prefetch(b);
            }
        }
    }

    /// Makes sure `pages` pages can be allocated, `run` of them contiguous
    /// (an overflow run, taken from the end of the file). Operations call
    /// this before changing anything, so that running out of space fails
    /// cleanly. Reuse comes first: GC records are loaded until the reclaimed
    /// pages alone cover the operation, and only then is the end of the
    /// file counted.
    pub(crate) fn reserve(&mut self, map: &Map, pages: usize, run: usize) -> Result<()> {
        // An overflow run wants `run` consecutive free pages: keep loading
        // records while none is there (the file end is the last resort).
        let mut have_run = run <= 1 || has_run(&mut self.reclaimed, run);
        while !self.committing && (self.reclaimed.len() < pages || !have_run) {
            if !crate::txn::gc::load_record(self, map)? {
                break;
            }
            have_run = have_run || has_run(&mut self.reclaimed, run);
        }
        let tail = u64::from(self.upper_pgno.saturating_sub(self.next_pgno));
        if self.reclaimed.len() as u64 + tail >= pages as u64 && (have_run || tail >= run as u64) {
            return Ok(());
        }
        Err(Error::UpperBoundReached {
            upper: u64::from(self.upper_pgno) * self.layout.psize as u64,
        })
    }

    /// Allocates a fresh dirty page of `kind`.
    pub(crate) fn new_page(&mut self, map: &Map, kind: Kind) -> Result<Pgno> {
        let pgno = self.alloc(map, 1)?;
        let mut b = self.page_buf(map, pgno, 1)?;
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
            match self.nest.last_mut() {
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
    pub(crate) fn touch(&mut self, map: &Map, pgno: Pgno) -> Result<Pgno> {
        if self.dirty.contains_key(&pgno) {
            return Ok(pgno);
        }
        let new = self.alloc(map, 1)?;
        if new == pgno {
            // Only a GC that lists a page still in a tree hands it out, and
            // copying a page onto itself would make a writable view of the
            // bytes the copy reads (write-map mode).
            return Err(Error::corrupted(
                u64::from(pgno),
                "GC lists a page still in a tree",
            ));
        }
        let mut b = self.page_buf(map, new, 1)?;
        let leaf = {
            // Copy the header and slots, then the nodes, skipping the free
            // gap between them (as LMDB's mdb_page_copy). The gap's stale
            // bytes are harmless: the checksum covers what is written.
            let src = self.source(map).page(pgno)?;
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

    /// Takes the checksum of the leaf `touch` copied before `next`, which
    /// it copies now. A write that moves on to another leaf is usually done
    /// with the last one, whose bytes are still in the CPU cache; at commit
    /// they would be loaded again from memory (measured: leaves were half
    /// of seal's cost for random merges into 10M records). Seal uses the
    /// checksum unless the page changed since, which `PageBuf` tracks.
    fn hash_behind(&mut self, next: Pgno) {
        let prev = std::mem::replace(&mut self.last_leaf, next);
        if let Some(b) = self.dirty.get_mut(&prev) {
            b.hash_leaf();
        }
    }

    /// Writes `value` into a new overflow run; returns (first page, checksum).
    pub(crate) fn write_overflow(&mut self, map: &Map, value: &[u8]) -> Result<(Pgno, u64)> {
        let n = self.layout.overflow_pages(value.len());
        let pgno = self.alloc(map, n)?;
        let mut b = self.page_buf(map, pgno, n)?;
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

/// Whether `list` holds `n` consecutive page numbers (sorts it).
fn has_run(list: &mut [Pgno], n: usize) -> bool {
    if list.len() < n {
        return false;
    }
    list.sort_unstable_by(|a, b| b.cmp(a));
    list.windows(n).any(is_run)
}

/// Removes a run of `n` consecutive page numbers from `list`, if it holds
/// one, and returns its first page.
fn take_run(list: &mut Vec<Pgno>, n: usize) -> Option<Pgno> {
    if list.len() < n {
        return None;
    }
    list.sort_unstable_by(|a, b| b.cmp(a));
    // Descending order: a run p, p+1, .., p+n-1 sits at i+n-1 .. i.
    let i = list.windows(n).position(is_run)?;
    let lo = list[i + n - 1];
    list.drain(i..i + n);
    Some(lo)
}

/// The write transaction's read view: dirty pages first, then the map.
#[derive(Clone, Copy)]
pub(crate) struct WSource<'a> {
    w: &'a Writer,
    map: &'a Map,
}

impl<'a> Source<'a> for WSource<'a> {
    #[inline]
    fn page(self, pgno: Pgno) -> Result<Page<'a>> {
        match self.w.dirty.get(&pgno) {
            Some(b) => Page::new(&b[..self.w.layout.psize], pgno),
            None => {
                let l = &self.w.layout;
                let b = crate::store::map_page_bytes(self.map, l, self.w.file_pgno, pgno)?;
                page::prefetch(b);
                Page::new(b, pgno)
            }
        }
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
                None => crate::store::map_overflow(
                    self.map,
                    &self.w.layout,
                    self.w.file_pgno,
                    pgno,
                    len,
                ),
            },
        }
    }
}
