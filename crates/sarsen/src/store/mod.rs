//! The page store under the B+tree: where the tree's pages come from and
//! where its changes go.
//!
//! - Read views ([`Source`]): [`MapSource`], a snapshot's pages in the map;
//!   the writer's view, its dirty pages first and then the map; and
//!   [`AnySource`], either of the two for cursors.
//! - [`PageStore`]: the calls a changing tree makes (copy-on-write,
//!   allocation, freeing, dirty bytes).
//!
//! Nothing here knows the tree's node layout beyond page headers, or any
//! transaction state beyond pages.

use crate::error::{Error, Result};
use crate::io::Map;
use crate::page::{self, Layout, LeafValue, Page, Pgno};
use crate::txn::writer::WSource;

/// Where pages come from. Copy, so views borrow the source's lifetime `'a`
/// rather than a local.
pub(crate) trait Source<'a>: Copy {
    /// The branch or leaf page `pgno`, validated.
    fn page(self, pgno: Pgno) -> Result<Page<'a>>;
    /// The bytes of a leaf value (reading its overflow run if it has one).
    fn value(self, v: LeafValue<'a>) -> Result<&'a [u8]>;
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
}

/// Page `pgno` from the map, checked to lie below `limit` (past which the
/// file may end) and beyond the meta pages.
#[inline]
pub(crate) fn map_page<'a>(map: &'a Map, l: &Layout, limit: Pgno, pgno: Pgno) -> Result<Page<'a>> {
    Page::new(map_page_bytes(map, l, limit, pgno)?, pgno)
}

/// The `page_size` bytes of page `pgno` in the map, unvalidated; errors as
/// [`map_page`].
pub(crate) fn map_page_bytes<'a>(
    map: &'a Map,
    l: &Layout,
    limit: Pgno,
    pgno: Pgno,
) -> Result<&'a [u8]> {
    if pgno < page::META_PAGES || pgno >= limit {
        return Err(Error::corrupted(
            u64::from(pgno),
            format!("page number outside the allocated pages 3..{limit}"),
        ));
    }
    map.slice(pgno as usize * l.psize, l.psize)
        .ok_or_else(|| Error::corrupted(u64::from(pgno), "page outside the map"))
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
}
