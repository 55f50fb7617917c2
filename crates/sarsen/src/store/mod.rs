//! The page store under the B+tree: where the tree's pages come from and
//! where its changes go.
//!
//! - Read views ([`Source`]): [`MapSource`], a snapshot's pages in the map;
//!   the writer's view, its dirty pages first and then the map; and
//!   [`AnySource`], either of the two for cursors.
//! - [`PageStore`]: the calls a changing tree makes (copy-on-write,
//!   allocation, freeing, dirty bytes), implemented by the [`Pager`] alone
//!   (the tree's unit tests) and by the write transaction, which refills
//!   the pager from the GC when a tree reserves pages.
//!
//! Nothing here knows the tree's node layout beyond page headers, or any
//! transaction state beyond pages.

mod claims;
mod marks;
mod pager;
#[cfg(test)]
mod tests;

pub(crate) use pager::{Pager, WSource};

use crate::error::{Error, Result};
use crate::io::buf::PageBuf;
use crate::io::Map;
use crate::page::{self, Kind, Layout, LeafValue, Page, Pgno};

/// Where pages come from. Copy, so views borrow the source's lifetime `'a`
/// rather than a local.
pub(crate) trait Source<'a>: Copy {
    /// The branch or leaf page `pgno`, validated.
    fn page(self, pgno: Pgno) -> Result<Page<'a>>;
    /// The bytes of a leaf value (reading its overflow run if it has one).
    fn value(self, v: LeafValue<'a>) -> Result<&'a [u8]>;
    /// Asks the CPU to start loading page `pgno`, which the caller expects
    /// to read soon (a scan's next leaf). A hint: nothing is validated or
    /// read, and a number the source does not hold is ignored.
    #[inline]
    fn prefetch_page(self, pgno: Pgno) {
        let _ = pgno;
    }
}

/// A snapshot's view of the map: pages below `limit` only.
#[derive(Clone, Copy)]
pub(crate) struct MapSource<'a> {
    pub map: &'a Map,
    pub layout: Layout,
    pub limit: Pgno,
}

impl<'a> Source<'a> for MapSource<'a> {
    #[inline]
    fn page(self, pgno: Pgno) -> Result<Page<'a>> {
        map_page(self.map, &self.layout, self.limit, pgno)
    }
    #[inline]
    fn value(self, v: LeafValue<'a>) -> Result<&'a [u8]> {
        match v {
            LeafValue::Inline(b) => Ok(b),
            LeafValue::Overflow { pgno, len, .. } => {
                map_overflow(self.map, &self.layout, self.limit, pgno, len)
            }
        }
    }
    /// Pages below the snapshot's limit only (as [`map_page`]): the
    /// range advised lies inside the map and below the file's end.
    #[inline]
    fn prefetch_page(self, pgno: Pgno) {
        if !(page::META_PAGES..self.limit).contains(&pgno) {
            return;
        }
        let psize = self.layout.psize;
        if let Some(b) = self.map.slice(pgno as usize * psize, psize) {
            page::prefetch_ahead(b);
        }
    }
}

/// Page `pgno` from the map, checked to lie below `limit` (past which the
/// file may end) and beyond the meta pages.
#[inline]
pub(crate) fn map_page<'a>(map: &'a Map, l: &Layout, limit: Pgno, pgno: Pgno) -> Result<Page<'a>> {
    Page::new(map_page_bytes(map, l, limit, pgno)?, pgno)
}

/// The `page_size` bytes of page `pgno` in the map, unvalidated; errors as
/// [`map_page`].
#[inline]
pub(crate) fn map_page_bytes<'a>(
    map: &'a Map,
    l: &Layout,
    limit: Pgno,
    pgno: Pgno,
) -> Result<&'a [u8]> {
    if pgno < page::META_PAGES || pgno >= limit {
        return Err(page_out_of_range(pgno, limit));
    }
    map.slice(pgno as usize * l.psize, l.psize)
        .ok_or_else(|| Error::corrupted(u64::from(pgno), "page outside the map"))
}

/// The error of [`map_page_bytes`] for a page number outside `3..limit`
/// (out of line: the formatting stays off the inlined read path).
#[cold]
#[inline(never)]
fn page_out_of_range(pgno: Pgno, limit: Pgno) -> Error {
    Error::corrupted(
        u64::from(pgno),
        format!("page number outside the allocated pages 3..{limit}"),
    )
}

/// The `len`-byte value stored in the overflow run at `pgno`.
pub(crate) fn map_overflow<'a>(
    map: &'a Map,
    l: &Layout,
    limit: Pgno,
    pgno: Pgno,
    len: usize,
) -> Result<&'a [u8]> {
    let n = l.overflow_pages(len);
    if pgno < page::META_PAGES || u64::from(pgno) + n as u64 > u64::from(limit) {
        return Err(Error::corrupted(
            u64::from(pgno),
            "overflow run outside the allocated pages",
        ));
    }
    let b = map
        .slice(pgno as usize * l.psize, n * l.psize)
        .ok_or_else(|| Error::corrupted(u64::from(pgno), "overflow run outside the map"))?;
    page::check_overflow(b, pgno, n)?;
    Ok(&b[page::HDR..page::HDR + len])
}

/// Pages of a read transaction or of the writer.
#[derive(Clone, Copy)]
pub(crate) enum AnySource<'a> {
    Map(MapSource<'a>),
    Write(WSource<'a>),
}

impl<'a> Source<'a> for AnySource<'a> {
    #[inline]
    fn page(self, pgno: Pgno) -> Result<Page<'a>> {
        match self {
            AnySource::Map(s) => s.page(pgno),
            AnySource::Write(s) => s.page(pgno),
        }
    }
    #[inline]
    fn value(self, v: LeafValue<'a>) -> Result<&'a [u8]> {
        match self {
            AnySource::Map(s) => s.value(v),
            AnySource::Write(s) => s.value(v),
        }
    }
    #[inline]
    fn prefetch_page(self, pgno: Pgno) {
        if let AnySource::Map(s) = self {
            s.prefetch_page(pgno);
        }
    }
}

/// The page store a changing B+tree works on (as redb's `PageAllocator`
/// under its `MutateHelper`). Every page the tree changes is dirty: it was
/// allocated by [`new_page`](PageStore::new_page), copied by
/// [`touch`](PageStore::touch), or written by
/// [`write_overflow`](PageStore::write_overflow) in this transaction.
///
/// Errors are `Corrupted` when a page number from the file is out of
/// place (the store checks what the tree hands it), and
/// `UpperBoundReached` when the file may not grow enough.
pub(crate) trait PageStore {
    /// The read view: dirty pages first, then the snapshot in the map.
    fn view(&self) -> WSource<'_>;
    /// Sizes derived from the page size.
    fn layout(&self) -> Layout;
    /// Txnid of the transaction under way (stamped on new pages).
    fn txnid(&self) -> u64;
    /// Makes sure `pages` pages can be allocated, `run` of them contiguous,
    /// before an operation changes anything, so that running out of space
    /// fails cleanly: `UpperBoundReached`, with nothing changed.
    fn reserve(&mut self, pages: usize, run: usize) -> Result<()>;
    /// A fresh dirty page of `kind`, empty.
    fn new_page(&mut self, kind: Kind) -> Result<Pgno>;
    /// Copy-on-write: makes page `pgno` dirty, returning its (possibly new)
    /// number; the old page is freed. The caller re-links the parent.
    fn touch(&mut self, pgno: Pgno) -> Result<Pgno>;
    /// Frees `n` pages at `pgno`.
    fn free(&mut self, pgno: Pgno, n: usize) -> Result<()>;
    /// Frees the overflow run a leaf node names, checked to lie inside the
    /// allocated pages.
    fn free_run(&mut self, pgno: Pgno, n: usize) -> Result<()>;
    /// Writes `value` into a new overflow run: (first page, checksum).
    fn write_overflow(&mut self, value: &[u8]) -> Result<(Pgno, u64)>;
    /// The bytes of dirty page `pgno`, to change.
    fn dirty_mut(&mut self, pgno: Pgno) -> Result<&mut [u8]>;
    /// Dirty page (or run) `pgno`, if it is dirty.
    fn dirty(&self, pgno: Pgno) -> Option<&PageBuf>;
    /// A write's descent is about to read leaf `pgno`: whether it is dirty
    /// (see [`Pager::approach_leaf`]).
    fn approach_leaf(&mut self, pgno: Pgno) -> bool;
    /// Takes dirty page `pgno` out of the dirty set (a split rebuilds it
    /// and puts it back with [`put_dirty`](PageStore::put_dirty)).
    fn take_dirty(&mut self, pgno: Pgno) -> Option<PageBuf>;
    /// Puts back a page taken with [`take_dirty`](PageStore::take_dirty).
    fn put_dirty(&mut self, pgno: Pgno, b: PageBuf);
    /// A one-page scratch buffer.
    fn buffer(&mut self) -> Box<[u8]>;
    /// Returns a buffer from [`buffer`](PageStore::buffer) or
    /// [`take_dirty`](PageStore::take_dirty) for reuse.
    fn recycle(&mut self, b: PageBuf);
    /// Whether page `pgno` is dirty.
    #[inline]
    fn is_dirty(&self, pgno: Pgno) -> bool {
        self.dirty(pgno).is_some()
    }
}

/// The pager alone: a store with no GC to refill from (what the tree's own
/// unit tests run on). Reserving counts the reclaimed pages and the room
/// below the upper bound.
impl PageStore for Pager {
    #[inline]
    fn view(&self) -> WSource<'_> {
        Pager::view(self)
    }
    #[inline]
    fn layout(&self) -> Layout {
        self.layout
    }
    #[inline]
    fn txnid(&self) -> u64 {
        self.txnid
    }
    fn reserve(&mut self, pages: usize, run: usize) -> Result<()> {
        let have_run = self.has_run(run);
        self.room(pages, run, have_run)
    }
    fn new_page(&mut self, kind: Kind) -> Result<Pgno> {
        Pager::new_page(self, kind)
    }
    #[inline]
    fn touch(&mut self, pgno: Pgno) -> Result<Pgno> {
        Pager::touch(self, pgno)
    }
    fn free(&mut self, pgno: Pgno, n: usize) -> Result<()> {
        Pager::free(self, pgno, n)
    }
    fn free_run(&mut self, pgno: Pgno, n: usize) -> Result<()> {
        Pager::free_run(self, pgno, n)
    }
    fn write_overflow(&mut self, value: &[u8]) -> Result<(Pgno, u64)> {
        Pager::write_overflow(self, value)
    }
    #[inline]
    fn dirty_mut(&mut self, pgno: Pgno) -> Result<&mut [u8]> {
        Pager::dirty_mut(self, pgno)
    }
    #[inline]
    fn dirty(&self, pgno: Pgno) -> Option<&PageBuf> {
        self.dirty.get(&pgno)
    }
    #[inline]
    fn approach_leaf(&mut self, pgno: Pgno) -> bool {
        Pager::approach_leaf(self, pgno)
    }
    fn take_dirty(&mut self, pgno: Pgno) -> Option<PageBuf> {
        Pager::take_dirty(self, pgno)
    }
    fn put_dirty(&mut self, pgno: Pgno, b: PageBuf) {
        Pager::put_dirty(self, pgno, b)
    }
    fn buffer(&mut self) -> Box<[u8]> {
        Pager::buffer(self)
    }
    fn recycle(&mut self, b: PageBuf) {
        Pager::recycle(self, b)
    }
}

/// An in-memory page store for the B+tree's unit tests: a [`Pager`] whose
/// snapshot is empty (every page it serves is one it allocated, kept in
/// heap buffers), over the map of an empty file that nothing reads.
#[cfg(test)]
pub(crate) mod testing {
    use std::sync::Arc;

    use super::Pager;
    use crate::io::{DataFile, Map};
    use crate::page::{Layout, Pgno, META_PAGES};

    /// A pager for transaction 1 with `psize`-byte pages that may allocate
    /// up to `upper` pages, and the directory holding its (empty) file.
    pub(crate) fn mem_pager(psize: u32, upper: Pgno) -> (tempfile::TempDir, Pager) {
        let dir = tempfile::tempdir().expect("temporary directory");
        let file = DataFile::open(&dir.path().join("data"), false, true).expect("data file");
        let len = upper as usize * psize as usize;
        let map = Map::new(&file, len, false, false, false).expect("map");
        let mut p = Pager::new(Arc::new(map), Layout::new(psize));
        p.begin(1, META_PAGES, upper, 1);
        (dir, p)
    }
}
