//! Typed, bounds-checked views over page bytes.
//!
//! Every page except the three meta pages starts with this header:
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0  | 4 | page number (catches misdirected writes) |
//! | 4  | 1 | kind: 1 branch, 2 leaf, 3 overflow (4, 5 reserved for DUPFIXED leaves and duplicate sub-pages) |
//! | 5  | 1 | flags (reserved, 0) |
//! | 6  | 2 | entry count (branch/leaf) |
//! | 8  | 8 | txnid of the transaction that wrote the page |
//! | 16 | 2 | bytes used by nodes at the end of the page (branch/leaf) |
//! | 18 | 2 | reserved, 0 |
//! | 16 | 4 | overflow: number of pages in the run (overlays the two above) |
//!
//! Branch and leaf pages follow LMDB's slotted layout: after the 20-byte
//! header, an array of `u16` slots (absolute byte offsets of nodes, in key
//! order) grows up; nodes are packed from the end of the page down, with no
//! gaps (deletion compacts). Free space is the gap between the two.
//! Node layouts are in [`node`]. All integers are little-endian.
//!
//! Views validate the header when made and every offset and length before
//! use, so a damaged page gives [`Error::Corrupted`](crate::Error), never a
//! panic or an out-of-bounds read.

pub(crate) mod dup;
pub(crate) mod inline_gc;
pub(crate) mod meta;
pub(crate) mod node;
pub(crate) mod record;

pub(crate) use node::{BranchNode, LeafNode, LeafValue};
pub(crate) use record::{CatalogEntry, DbRecord};

use std::cmp::Ordering;

use crate::error::{Error, Result};
use crate::order::Order;

/// A page number: the page's byte offset divided by the page size.
pub(crate) type Pgno = u32;

/// Size of the page header, bytes.
pub(crate) const HDR: usize = 20;
/// Smallest and largest page sizes, bytes.
pub(crate) const MIN_PAGE: u32 = 512;
pub(crate) const MAX_PAGE: u32 = 65536;
/// Number of meta pages at the start of the file.
pub(crate) const META_PAGES: u32 = 3;
/// Largest page number (2^31 - 1, as libmdbx): keeps `pgno + count` of an
/// overflow run from wrapping.
pub(crate) const MAX_PGNO: u32 = 0x7fff_ffff;
/// Longest value, bytes.
pub(crate) const MAX_VALUE: usize = 0x7fff_ffff;

/// Page kinds (header byte 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Branch = 1,
    Leaf = 2,
    Overflow = 3,
}

/// Asks the CPU to start loading every cache line of `b`, a page the
/// caller is about to read whole (seal's next dirty pages), into its
/// first-level cache. A hint only: it changes no state a program can
/// observe.
#[inline]
pub(crate) fn prefetch(b: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    prefetch_lines::<{ core::arch::x86_64::_MM_HINT_T0 }>(b);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = b;
}

/// Asks the CPU to start loading every cache line of `b` into its
/// second-level cache, for a page the caller will read whole while it
/// still works on something else: a scan's next leaf, the page a write
/// descends to and will copy, the free page the next copy goes to. Not
/// into the first level, as [`prefetch`] does: a page's 64 requests would
/// wait there for the few buffers that track first-level misses, stalling
/// the loop that issues them and the work meanwhile. A hint only: it
/// changes no state a program can observe.
#[inline]
pub(crate) fn prefetch_ahead(b: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    prefetch_lines::<{ core::arch::x86_64::_MM_HINT_T1 }>(b);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = b;
}

/// `_mm_prefetch` with hint `H` of every 64-byte line of `b`, eight lines
/// per turn (page sizes are multiples of 512 bytes), so that the loop's own
/// instructions stay few beside the prefetches.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch_lines<const H: i32>(b: &[u8]) {
    #[inline(always)]
    fn line<const H: i32>(p: *const u8) {
        // SAFETY: `_mm_prefetch` needs SSE, which every x86-64 CPU has. A
        // prefetch never faults, even on an unmapped address; callers pass
        // addresses inside `b` anyway.
        unsafe { core::arch::x86_64::_mm_prefetch::<H>(p.cast()) };
    }
    let mut blocks = b.chunks_exact(512);
    for blk in &mut blocks {
        for k in 0..8 {
            line::<H>(blk[k * 64..].as_ptr());
        }
    }
    for l in blocks.remainder().chunks(64) {
        line::<H>(l.as_ptr());
    }
}

/// XXH3-64 of `b`: the checksum of pages, overflow runs and meta pages.
/// `twox-hash` picks its AVX2 or SSE2 code at run time (about twice the
/// speed of a build for the x86-64 baseline); the value is the same.
#[inline]
pub(crate) fn checksum(b: &[u8]) -> u64 {
    twox_hash::XxHash3_64::oneshot(b)
}

#[inline]
pub(crate) fn rd16(b: &[u8], off: usize) -> u16 {
    // One range check for the word (indexing each byte checks each).
    let mut a = [0u8; 2];
    a.copy_from_slice(&b[off..off + 2]);
    u16::from_le_bytes(a)
}
#[inline]
pub(crate) fn rd32(b: &[u8], off: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[off..off + 4]);
    u32::from_le_bytes(a)
}
#[inline]
pub(crate) fn rd64(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(a)
}
#[inline]
pub(crate) fn wr16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}
#[inline]
pub(crate) fn wr32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}
#[inline]
pub(crate) fn wr64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// Sizes derived from the page size.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout {
    /// Page size, bytes.
    pub psize: usize,
    /// Largest node plus its slot, bytes: half the space after the header,
    /// so every branch and leaf page holds at least two nodes.
    pub node_max: usize,
    /// Longest key, bytes.
    pub max_key: usize,
}

impl Layout {
    pub(crate) fn new(psize: u32) -> Layout {
        let psize = psize as usize;
        let node_max = (psize - HDR) / 2;
        Layout {
            psize,
            node_max,
            max_key: node_max - 2 - node::LEAF_HDR - node::OVERFLOW_REF,
        }
    }

    /// Whether a value of `vlen` bytes with a key of `klen` bytes is stored
    /// inline in the leaf node (else in an overflow run).
    #[inline]
    pub(crate) fn inline(&self, klen: usize, vlen: usize) -> bool {
        2 + node::LEAF_HDR + klen + vlen <= self.node_max
    }

    /// Pages in an overflow run holding `vlen` bytes.
    pub(crate) fn overflow_pages(&self, vlen: usize) -> usize {
        (HDR + vlen).div_ceil(self.psize)
    }
}

/// Longest search key compared word by word inline
/// ([`bytewise_cmp`](crate::order::bytewise_cmp)): at most four words per
/// probe, whatever the length of the page's key. Longer ones go through
/// the slice comparison's `memcmp`, quicker over long runs.
const SHORT_KEY: usize = 32;

/// A validated read-only view of a branch or leaf page. Invariant (the
/// slot reads rely on it): its slot array, `HDR + 2 * n` bytes with the
/// header, lies inside `b`; only [`Page::new`], which checks it, and
/// [`Page::empty`], with no slots, make one, and nothing changes a field.
#[derive(Clone, Copy)]
pub(crate) struct Page<'a> {
    b: &'a [u8],
    pgno: Pgno,
    kind: Kind,
    n: usize,
    node_lo: usize,
}

impl<'a> Page<'a> {
    /// Validates the header of the branch or leaf page `pgno` in `b`.
    #[inline]
    pub(crate) fn new(b: &'a [u8], pgno: Pgno) -> Result<Page<'a>> {
        let bad = |what: &str| Err(Error::corrupted(u64::from(pgno), what));
        if b.len() < HDR + 4 {
            return bad("page shorter than its header");
        }
        if rd32(b, 0) != pgno {
            return bad("page number in header does not match its position");
        }
        let kind = match b[4] {
            1 => Kind::Branch,
            2 => Kind::Leaf,
            3 => return bad("overflow page where a branch or leaf was expected"),
            _ => return bad("unknown page kind"),
        };
        let n = rd16(b, 6) as usize;
        let used = rd16(b, 16) as usize;
        if HDR + 2 * n + used > b.len() {
            return bad("entry count and node bytes exceed the page");
        }
        Ok(Page {
            b,
            pgno,
            kind,
            n,
            node_lo: b.len() - used,
        })
    }

    /// A placeholder view with no nodes (fills unused cursor stack slots).
    pub(crate) fn empty() -> Page<'a> {
        Page {
            b: &[],
            pgno: 0,
            kind: Kind::Leaf,
            n: 0,
            node_lo: 0,
        }
    }

    pub(crate) fn bytes(&self) -> &'a [u8] {
        self.b
    }
    #[inline]
    pub(crate) fn pgno(&self) -> Pgno {
        self.pgno
    }

    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }
    #[inline]
    pub(crate) fn is_leaf(&self) -> bool {
        self.kind == Kind::Leaf
    }
    /// Number of nodes.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.n
    }
    /// Free bytes between the slot array and the nodes.
    pub(crate) fn free(&self) -> usize {
        self.node_lo - HDR - 2 * self.n
    }
    /// Bytes used by slots and nodes.
    pub(crate) fn used(&self) -> usize {
        self.b.len() - HDR - self.free()
    }

    #[cold]
    fn err(&self, what: &str) -> Error {
        Error::corrupted(u64::from(self.pgno), what)
    }

    /// Byte offset of node `i`, checked to lie in the node area.
    #[inline]
    fn node_off(&self, i: usize) -> Result<usize> {
        let off = self.slot(i)?;
        if off >= self.b.len() {
            return Err(self.err("slot points outside the node area"));
        }
        Ok(off)
    }

    /// The offset in slot `i`, checked against the entry count and the
    /// start of the node area (not yet against the page's end).
    #[inline(always)]
    fn slot(&self, i: usize) -> Result<usize> {
        if i >= self.n {
            return Err(self.err("node index past the entry count"));
        }
        // SAFETY: `HDR + 2 * n <= b.len()` holds for every `Page` (`new`
        // checks it; `empty` has no nodes, so no `i` gets here), and
        // `i < n`: the two bytes of slot `i` lie inside `b`. An unaligned
        // read of a `[u8; 2]` (alignment 1) from a shared slice.
        let slot = unsafe { self.b.as_ptr().add(HDR + 2 * i).cast::<[u8; 2]>().read() };
        let off = u16::from_le_bytes(slot) as usize;
        if off < self.node_lo {
            return Err(self.err("slot points outside the node area"));
        }
        Ok(off)
    }

    /// Indices, children and flags of the branch nodes carrying `FRESH`
    /// (links to pages written by the transaction under way, or stale marks
    /// of the commit the page was copied from). Reads only the flag
    /// byte and child number of each node: commit calls this on every
    /// dirty branch page.
    pub(crate) fn fresh_links(&self, out: &mut Vec<(usize, Pgno, u8)>) -> Result<()> {
        // One pass over the slot array, with the checks of `node_off`
        // hoisted: a dirty branch has a hundred nodes or more.
        let b = self.b;
        let slots = b
            .get(HDR..HDR + 2 * self.n)
            .ok_or_else(|| self.err("slot array overruns the page"))?;
        for (i, s) in slots.chunks_exact(2).enumerate() {
            let off = u16::from_le_bytes([s[0], s[1]]) as usize;
            if off < self.node_lo {
                return Err(self.err("slot points outside the node area"));
            }
            let Some(nd) = b.get(off..off + node::BRANCH_HDR) else {
                return Err(self.err("branch node overruns the page"));
            };
            if nd[12] & node::FRESH != 0 {
                out.push((i, u32::from_le_bytes([nd[0], nd[1], nd[2], nd[3]]), nd[12]));
            }
        }
        Ok(())
    }

    /// Indices, targets and flags of the leaf nodes carrying `FRESH`: an
    /// overflow reference (`BIG`, target the run's first page) or a
    /// duplicate sub-tree record (`SUBTREE`, target its root). Commit calls
    /// this on the dirty leaves of trees that have overflow values or
    /// duplicates, where a `FRESH` mark may be stale (see `btree::seal`).
    pub(crate) fn fresh_leaf_links(&self, out: &mut Vec<(usize, Pgno, u8)>) -> Result<()> {
        for i in 0..self.len() {
            let n = self.leaf(i)?;
            if n.flags & node::FRESH == 0 {
                continue;
            }
            match n.value {
                LeafValue::Overflow { .. } if n.flags & node::SUBTREE != 0 => {
                    return Err(self.err("sub-tree record in an overflow run"));
                }
                LeafValue::Overflow { pgno, .. } => out.push((i, pgno, n.flags)),
                LeafValue::Inline(v) if n.flags & node::SUBTREE != 0 => {
                    let r = DbRecord::decode(v).ok_or_else(|| {
                        Error::corrupted(u64::from(self.pgno), "damaged duplicate sub-tree record")
                    })?;
                    out.push((i, r.root, n.flags));
                }
                // A `FRESH` mark on a plain value means nothing; it is cleared.
                LeafValue::Inline(_) => out.push((i, 0, n.flags)),
            }
        }
        Ok(())
    }

    /// Leaf node `i`.
    #[inline]
    pub(crate) fn leaf(&self, i: usize) -> Result<LeafNode<'a>> {
        let off = self.node_off(i)?;
        LeafNode::parse(&self.b[off..]).ok_or_else(|| self.err("leaf node overruns the page"))
    }

    /// Key and inline value of leaf node `i`, for the cursor's hot path:
    /// inlined into the caller, so nothing goes through memory. `None`
    /// when [`leaf`](Page::leaf) would have more to say (an overflow
    /// value, or any check failing): the caller then takes that slow path,
    /// which gives the same result or the error.
    #[inline(always)]
    pub(crate) fn leaf_inline(&self, i: usize) -> Option<(&'a [u8], &'a [u8])> {
        if i >= self.n {
            return None;
        }
        let b = self.b;
        // Fixed-size views, so each read below needs no bounds check of
        // its own: one check per slice taken.
        let slot: &[u8; 2] = b.get(HDR + 2 * i..HDR + 2 * i + 2)?.try_into().ok()?;
        let off = u16::from_le_bytes(*slot) as usize;
        if off < self.node_lo {
            return None;
        }
        let h: &[u8; node::LEAF_HDR] = b.get(off..off + node::LEAF_HDR)?.try_into().ok()?;
        if h[0] & node::BIG != 0 {
            return None;
        }
        let klen = u16::from_le_bytes([h[2], h[3]]) as usize;
        let vlen = u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as usize;
        let k0 = off + node::LEAF_HDR;
        let kv = b.get(k0..k0 + klen + vlen)?;
        kv.split_at_checked(klen)
    }

    /// Branch node `i`.
    #[inline]
    pub(crate) fn branch(&self, i: usize) -> Result<BranchNode<'a>> {
        let off = self.node_off(i)?;
        BranchNode::parse(&self.b[off..]).ok_or_else(|| self.err("branch node overruns the page"))
    }

    /// The raw bytes of node `i` (header, key and value or reference).
    pub(crate) fn raw_node(&self, i: usize) -> Result<&'a [u8]> {
        let off = self.node_off(i)?;
        let len = match self.kind {
            Kind::Leaf => self.leaf(i)?.stored_len(),
            _ => self.branch(i)?.stored_len(),
        };
        Ok(&self.b[off..off + len])
    }

    /// The key of node `i` alone (the search hot path parses nothing
    /// else): its length is at `LEN_AT` in a node header of `H` bytes.
    /// Fixed-size views, so that each read needs one range check.
    #[inline(always)]
    fn key_at<const LEN_AT: usize, const H: usize>(&self, i: usize) -> Result<&'a [u8]> {
        let off = self.slot(i)?;
        let Some((h, rest)) = self.b.get(off..).and_then(<[u8]>::split_first_chunk::<H>) else {
            return Err(self.err(if off >= self.b.len() {
                "slot points outside the node area"
            } else {
                "node header overruns the page"
            }));
        };
        let klen = u16::from_le_bytes([h[LEN_AT], h[LEN_AT + 1]]) as usize;
        rest.get(..klen)
            .ok_or_else(|| self.err("key overruns the page"))
    }

    /// Leaf: the first index whose key is `>= key` in `ord`, and whether
    /// it is equal. The bytewise order gets its own monomorphised search
    /// (no dispatch): word by word for a short key, by `memcmp` else.
    #[inline]
    pub(crate) fn search_leaf(&self, key: &[u8], ord: Order<'_>) -> Result<(usize, bool)> {
        match ord {
            Order::Bytewise if key.len() <= SHORT_KEY => {
                self.search_leaf_by(|k| crate::order::bytewise_cmp(k, key))
            }
            Order::Bytewise => self.search_leaf_by(|k| k.cmp(key)),
            _ => self.search_leaf_by(|k| ord.cmp_search(k, key)),
        }
    }

    #[inline(always)]
    fn search_leaf_by(&self, cmp: impl Fn(&[u8]) -> Ordering) -> Result<(usize, bool)> {
        let (mut lo, mut hi) = (0usize, self.n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match cmp(self.key_at::<2, { node::LEAF_HDR }>(mid)?) {
                Ordering::Less => lo = mid + 1,
                Ordering::Equal => return Ok((mid, true)),
                Ordering::Greater => hi = mid,
            }
        }
        Ok((lo, false))
    }

    /// Branch: the index of the child whose range holds `key` (the last node
    /// whose key is `<= key` in `ord`; node 0 counts as less than every key).
    #[inline]
    pub(crate) fn search_branch(&self, key: &[u8], ord: Order<'_>) -> Result<usize> {
        match ord {
            Order::Bytewise if key.len() <= SHORT_KEY => {
                self.search_branch_by(|k| crate::order::bytewise_cmp(k, key))
            }
            Order::Bytewise => self.search_branch_by(|k| k.cmp(key)),
            _ => self.search_branch_by(|k| ord.cmp_search(k, key)),
        }
    }

    #[inline(always)]
    fn search_branch_by(&self, cmp: impl Fn(&[u8]) -> Ordering) -> Result<usize> {
        if self.n == 0 {
            return Err(self.err("branch page without children"));
        }
        let (mut lo, mut hi) = (1usize, self.n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match cmp(self.key_at::<14, { node::BRANCH_HDR }>(mid)?) {
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Ok(mid),
                Ordering::Less => lo = mid + 1,
            }
        }
        Ok(lo - 1)
    }
}

/// Header of an overflow run's first page: checks number, kind and count.
pub(crate) fn check_overflow(b: &[u8], pgno: Pgno, pages: usize) -> Result<()> {
    let bad = |what: &str| Err(Error::corrupted(u64::from(pgno), what));
    if b.len() < HDR {
        return bad("overflow page shorter than its header");
    }
    if rd32(b, 0) != pgno {
        return bad("overflow page number in header does not match its position");
    }
    if b[4] != Kind::Overflow as u8 {
        return bad("expected an overflow page");
    }
    if rd32(b, 16) as usize != pages {
        return bad("overflow run length does not match its value length");
    }
    Ok(())
}

/// Writes a fresh header for page `pgno` of `kind` into `b`.
pub(crate) fn init(b: &mut [u8], pgno: Pgno, kind: Kind, txnid: u64) {
    b[..HDR].fill(0);
    wr32(b, 0, pgno);
    b[4] = kind as u8;
    wr64(b, 8, txnid);
}

/// Writes the header of an overflow run of `pages` pages.
pub(crate) fn init_overflow(b: &mut [u8], pgno: Pgno, pages: u32, txnid: u64) {
    init(b, pgno, Kind::Overflow, txnid);
    wr32(b, 16, pages);
}

/// Rewrites the page number and txnid of a page copied from elsewhere.
pub(crate) fn set_identity(b: &mut [u8], pgno: Pgno, txnid: u64) {
    wr32(b, 0, pgno);
    wr64(b, 8, txnid);
}

/// Mutators over a page buffer whose header we wrote (a dirty page). They
/// trust the page's own header, which the writer keeps consistent.
pub(crate) mod edit {
    use super::*;

    fn count(b: &[u8]) -> usize {
        rd16(b, 6) as usize
    }
    fn used(b: &[u8]) -> usize {
        rd16(b, 16) as usize
    }
    /// Free bytes in the page.
    pub(crate) fn free(b: &[u8]) -> usize {
        b.len() - HDR - 2 * count(b) - used(b)
    }

    /// Inserts a node whose bytes `write` fills (`len` bytes) at index `i`.
    /// The caller checked `free(b) >= len + 2`.
    pub(crate) fn insert_with(b: &mut [u8], i: usize, len: usize, write: impl FnOnce(&mut [u8])) {
        let n = count(b);
        let u = used(b);
        let off = b.len() - u - len;
        write(&mut b[off..off + len]);
        let s = HDR + 2 * i;
        b.copy_within(s..HDR + 2 * n, s + 2);
        wr16(b, s, off as u16);
        wr16(b, 6, (n + 1) as u16);
        wr16(b, 16, (u + len) as u16);
    }

    /// Inserts the raw node bytes `node` at index `i`; `false` if no room.
    pub(crate) fn insert_raw(b: &mut [u8], i: usize, node: &[u8]) -> bool {
        if free(b) < node.len() + 2 {
            return false;
        }
        insert_with(b, i, node.len(), |d| d.copy_from_slice(node));
        true
    }

    /// Removes node `i` (of stored length `len`), compacting the node area.
    pub(crate) fn remove(b: &mut [u8], i: usize, len: usize) {
        let n = count(b);
        let u = used(b);
        let lo = b.len() - u;
        let off = rd16(b, HDR + 2 * i) as usize;
        // Shift the nodes below `off` up by `len`, over the removed node.
        b.copy_within(lo..off, lo + len);
        b.copy_within(HDR + 2 * (i + 1)..HDR + 2 * n, HDR + 2 * i);
        // One pass over the slots left, without a range check per slot
        // (a select the compiler can vectorize).
        for s in b[HDR..HDR + 2 * (n - 1)].chunks_exact_mut(2) {
            let o = u16::from_le_bytes([s[0], s[1]]);
            let moved = if usize::from(o) < off {
                o.wrapping_add(len as u16)
            } else {
                o
            };
            s.copy_from_slice(&moved.to_le_bytes());
        }
        wr16(b, 6, (n - 1) as u16);
        wr16(b, 16, (u - len) as u16);
    }

    /// Mutable bytes of node `i` (from its start to the page end).
    pub(crate) fn node_mut(b: &mut [u8], i: usize) -> &mut [u8] {
        let off = rd16(b, HDR + 2 * i) as usize;
        &mut b[off..]
    }
}
