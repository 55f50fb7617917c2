//! Cursors and range iterators.
//!
//! A cursor keeps the path from the root to its current leaf entry in a
//! fixed-size stack (no allocation) and moves along leaves by climbing to
//! the nearest ancestor with a neighbour, as LMDB's `mdb_cursor_sibling`.
//! Keys and values it returns borrow the transaction: zero copy. The
//! moves across the values of a DUPSORT database are in [`dup`].

mod dup;
mod write;

pub use write::RwCursor;

use std::ops::{Bound, RangeBounds};

use crate::btree::dup::Dups;
use crate::btree::{self, MapSource, Source, MAX_DEPTH};
use crate::error::{Error, Result};
use crate::order::Order;
use crate::page::{DbRecord, LeafNode, LeafValue, Page, Pgno};
use crate::txn::writer::WSource;

/// A key and its value, both borrowed from the transaction.
pub type Entry<'txn> = (&'txn [u8], &'txn [u8]);

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

/// Where a cursor stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pos {
    /// Not yet positioned: `next` starts at the first entry, `prev` at the last.
    Unset,
    /// On an entry.
    At,
    /// Moved past the last entry: `prev` returns the last.
    PastEnd,
    /// Moved before the first entry: `next` returns the first.
    BeforeStart,
}

/// The cursor engine.
#[derive(Clone)]
pub(crate) struct RawCursor<'a> {
    src: AnySource<'a>,
    rec: DbRecord,
    ord: Order<'a>,
    stack: [(Page<'a>, usize); MAX_DEPTH],
    depth: usize,
    pos: Pos,
}

impl<'a> RawCursor<'a> {
    /// A cursor over the tree `rec`, whose keys are sorted by `ord`.
    pub(crate) fn new(src: AnySource<'a>, rec: DbRecord, ord: Order<'a>) -> RawCursor<'a> {
        RawCursor {
            src,
            rec,
            ord,
            stack: [(Page::empty(), 0); MAX_DEPTH],
            depth: 0,
            pos: Pos::Unset,
        }
    }

    /// The entry under the cursor.
    #[inline]
    pub(crate) fn current(&self) -> Result<Option<Entry<'a>>> {
        if self.pos != Pos::At || self.depth == 0 {
            return Ok(None);
        }
        let (p, i) = &self.stack[self.depth - 1];
        entry(self.src, p, *i).map(Some)
    }

    /// The leaf node under the cursor and its page number.
    #[inline]
    pub(crate) fn current_node(&self) -> Result<Option<(LeafNode<'a>, Pgno)>> {
        if self.pos != Pos::At || self.depth == 0 {
            return Ok(None);
        }
        let (p, i) = &self.stack[self.depth - 1];
        Ok(Some((p.leaf(*i)?, p.pgno())))
    }

    /// The leaf page under the cursor and the index in it.
    pub(crate) fn leaf_pos(&self) -> Option<(Page<'a>, usize)> {
        (self.pos == Pos::At && self.depth > 0).then(|| self.stack[self.depth - 1])
    }

    /// Moves to index `i` of the current leaf (which the caller checked).
    pub(crate) fn set_leaf_idx(&mut self, i: usize) {
        if self.depth > 0 {
            self.stack[self.depth - 1].1 = i;
        }
    }

    /// The tree's record.
    pub(crate) fn record(&self) -> &DbRecord {
        &self.rec
    }

    /// Descends from `pgno` at `level` to a leaf, taking the first child
    /// (`left`) or the last at each branch.
    fn descend_edge(&mut self, mut pgno: Pgno, mut level: usize, left: bool) -> Result<()> {
        let depth = btree::check_depth(&self.rec)?;
        while level < depth {
            let p = self.src.page(pgno)?;
            if p.is_leaf() != (level + 1 == depth) {
                return Err(btree::bad_level(pgno));
            }
            let i = if left { 0 } else { p.len().saturating_sub(1) };
            self.stack[level] = (p, i);
            level += 1;
            if !p.is_leaf() {
                pgno = p.branch(i)?.child;
            }
        }
        self.depth = depth;
        Ok(())
    }

    /// Moves to the first entry.
    pub(crate) fn first(&mut self) -> Result<Option<Entry<'a>>> {
        if self.rec.root == 0 {
            self.pos = Pos::PastEnd;
            return Ok(None);
        }
        self.descend_edge(self.rec.root, 0, true)?;
        self.pos = Pos::At;
        if self.stack[self.depth - 1].0.len() == 0 {
            self.no_empty_leaf()?;
            return self.step(true);
        }
        self.current()
    }

    /// Moves to the last entry.
    pub(crate) fn last(&mut self) -> Result<Option<Entry<'a>>> {
        if self.rec.root == 0 {
            self.pos = Pos::BeforeStart;
            return Ok(None);
        }
        self.descend_edge(self.rec.root, 0, false)?;
        self.pos = Pos::At;
        if self.stack[self.depth - 1].0.len() == 0 {
            self.no_empty_leaf()?;
            return self.step(false);
        }
        self.current()
    }

    /// Moves to the first entry with a key `>= key` (in the tree's order).
    pub(crate) fn seek(&mut self, key: &[u8]) -> Result<Option<Entry<'a>>> {
        if self.rec.root == 0 {
            self.pos = Pos::PastEnd;
            return Ok(None);
        }
        let depth = btree::check_depth(&self.rec)?;
        let mut pgno = self.rec.root;
        for level in 0..depth {
            let p = self.src.page(pgno)?;
            if p.is_leaf() != (level + 1 == depth) {
                return Err(btree::bad_level(pgno));
            }
            if p.is_leaf() {
                let (i, _) = p.search_leaf(key, self.ord)?;
                self.stack[level] = (p, i);
                self.depth = depth;
                self.pos = Pos::At;
                self.no_empty_leaf()?;
                if i >= p.len() {
                    self.stack[level].1 = p.len().saturating_sub(1);
                    return self.step(true);
                }
                return self.current();
            }
            let i = p.search_branch(key, self.ord)?;
            self.stack[level] = (p, i);
            pgno = p.branch(i)?.child;
        }
        Err(btree::bad_level(pgno))
    }

    /// Moves to the next entry.
    #[inline]
    pub(crate) fn next(&mut self) -> Result<Option<Entry<'a>>> {
        match self.pos {
            Pos::Unset | Pos::BeforeStart => self.first(),
            Pos::PastEnd => Ok(None),
            Pos::At => self.step(true),
        }
    }

    /// Moves to the previous entry.
    #[inline]
    pub(crate) fn prev(&mut self) -> Result<Option<Entry<'a>>> {
        match self.pos {
            Pos::Unset | Pos::PastEnd => self.last(),
            Pos::BeforeStart => Ok(None),
            Pos::At => self.step(false),
        }
    }

    /// One entry forward or back from a positioned cursor. The common case,
    /// a neighbour in the same leaf, works on the stack in place (copying
    /// page views here costs more than the step itself).
    #[inline]
    fn step(&mut self, fwd: bool) -> Result<Option<Entry<'a>>> {
        if self.depth > 0 {
            let src = self.src;
            let (p, i) = &mut self.stack[self.depth - 1];
            if fwd && *i + 1 < p.len() {
                *i += 1;
                if let Some(e) = p.leaf_inline(*i) {
                    return Ok(Some(e));
                }
                return entry(src, p, *i).map(Some);
            }
            if !fwd && *i > 0 && *i <= p.len() {
                *i -= 1;
                if let Some(e) = p.leaf_inline(*i) {
                    return Ok(Some(e));
                }
                return entry(src, p, *i).map(Some);
            }
        }
        self.step_leaf(fwd)
    }

    /// `step` across a leaf boundary.
    ///
    /// Bounded on any file: the leaf it moves to must not be empty, and its
    /// keys must lie beyond the leaf it leaves (in the tree's order). So a
    /// scan in one direction visits each leaf at most once, and a branch
    /// that names one child many times (whose walk would take K^depth
    /// steps) fails with `Corrupted` at the first repeat. One comparison
    /// per leaf, none per key.
    fn step_leaf(&mut self, fwd: bool) -> Result<Option<Entry<'a>>> {
        let top = self.depth - 1;
        let (p, i) = self.stack[top];
        if fwd && i + 1 < p.len() {
            self.stack[top].1 = i + 1;
            return self.current();
        }
        if !fwd && i > 0 && i <= p.len() {
            self.stack[top].1 = i - 1;
            return self.current();
        }
        // The key the next leaf's keys must lie beyond (none from the
        // empty root leaf of an empty tree, which has no neighbour).
        let edge = match p.len() {
            0 => None,
            n => Some(p.leaf(if fwd { n - 1 } else { 0 })?.key),
        };
        // Climb to the nearest ancestor with a neighbour on that side.
        let mut level = top;
        let found = loop {
            if level == 0 {
                break None;
            }
            level -= 1;
            let (bp, bi) = self.stack[level];
            if fwd && bi + 1 < bp.len() {
                break Some((level, bi + 1));
            }
            if !fwd && bi > 0 {
                break Some((level, bi - 1));
            }
        };
        let Some((level, ni)) = found else {
            self.pos = if fwd { Pos::PastEnd } else { Pos::BeforeStart };
            return Ok(None);
        };
        self.stack[level].1 = ni;
        let child = self.stack[level].0.branch(ni)?.child;
        self.descend_edge(child, level + 1, fwd)?;
        self.no_empty_leaf()?;
        let (lp, _) = self.stack[self.depth - 1];
        if let Some(edge) = edge {
            let k = lp.leaf(if fwd { 0 } else { lp.len() - 1 })?.key;
            let beyond = if fwd {
                self.ord.lt(edge, k)
            } else {
                self.ord.lt(k, edge)
            };
            if !beyond {
                return Err(Error::corrupted(
                    u64::from(lp.pgno()),
                    "leaf keys not beyond the keys of the leaf before it",
                ));
            }
        }
        self.current()
    }

    /// `Corrupted` if the cursor's leaf has no node and is not the root:
    /// deletes free every leaf they empty (`btree/delete.rs`), and a walk
    /// through empty leaves would compare no key to stop a cycle.
    fn no_empty_leaf(&self) -> Result<()> {
        match self.depth.checked_sub(1).map(|t| &self.stack[t].0) {
            Some(p) if self.depth > 1 && p.len() == 0 => Err(Error::corrupted(
                u64::from(p.pgno()),
                "leaf without nodes below a branch",
            )),
            _ => Ok(()),
        }
    }
}

/// Entry `i` of leaf `p`.
#[inline(always)]
fn entry<'a>(src: AnySource<'a>, p: &Page<'a>, i: usize) -> Result<Entry<'a>> {
    let n = p.leaf(i)?;
    Ok((n.key, src.value(n.value)?))
}

/// A cursor over one database (LMDB's `MDB_cursor`, read operations).
///
/// Positioning calls return the entry they land on, or `None` past either
/// end. An unpositioned cursor's `next` is `first` and its `prev` is `last`;
/// after running off the end, `prev` returns the last entry again (and
/// symmetrically at the start).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// let env = unsafe { sarsen::Env::open(dir.path()) }.unwrap();
/// let db = env.main_db();
/// let mut txn = env.write_txn().unwrap();
/// for k in [b"a", b"b", b"c"] {
///     txn.put(db, k, b"v").unwrap();
/// }
/// let mut c = txn.cursor(db).unwrap();
/// assert_eq!(c.seek(b"b").unwrap().map(|e| e.0), Some(&b"b"[..]));
/// assert_eq!(c.next().unwrap().map(|e| e.0), Some(&b"c"[..]));
/// assert_eq!(c.next().unwrap(), None);
/// assert_eq!(c.prev().unwrap().map(|e| e.0), Some(&b"c"[..]));
/// ```
pub struct Cursor<'txn> {
    raw: RawCursor<'txn>,
    /// The duplicate mode of a DUPSORT database.
    dups: Option<Dups<'txn>>,
    /// Where the cursor stands among the current key's values (DUPSORT).
    sub: dup::Sub<'txn>,
    /// `get_multiple` output gathered from a sub-tree leaf.
    multi: Vec<u8>,
}

impl<'txn> Cursor<'txn> {
    pub(crate) fn new(
        src: AnySource<'txn>,
        rec: DbRecord,
        ord: Order<'txn>,
        dup_order: Option<Order<'txn>>,
    ) -> Result<Cursor<'txn>> {
        let dups = Dups::of(rec.flags, dup_order)
            .map_err(|what| crate::Error::corrupted(u64::from(rec.root), what))?;
        Ok(Cursor {
            raw: RawCursor::new(src, rec, ord),
            dups,
            sub: dup::Sub::One,
            multi: Vec::new(),
        })
    }

    /// Moves to the first entry (smallest key; in a DUPSORT database its
    /// first value). `MDB_FIRST`.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`] if a page the move reads is damaged; the
    /// cursor's position is then unspecified.
    pub fn first(&mut self) -> Result<Option<Entry<'txn>>> {
        let e = self.raw.first()?;
        self.land(e, true)
    }
    /// Moves to the last entry (largest key; in a DUPSORT database its
    /// last value). `MDB_LAST`.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`] if a page the move reads is damaged; the
    /// cursor's position is then unspecified.
    pub fn last(&mut self) -> Result<Option<Entry<'txn>>> {
        let e = self.raw.last()?;
        self.land(e, false)
    }
    /// Moves to the next entry: in a DUPSORT database the next value of
    /// this key, else the first value of the next key. `MDB_NEXT`.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`] if a page the move reads is damaged; the
    /// cursor's position is then unspecified.
    #[allow(clippy::should_implement_trait)]
    #[inline]
    pub fn next(&mut self) -> Result<Option<Entry<'txn>>> {
        if self.dups.is_none() {
            return self.raw.next();
        }
        self.step_pair(true)
    }
    /// Moves to the previous entry (in a DUPSORT database the previous
    /// value, or the last value of the previous key). `MDB_PREV`.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`] if a page the move reads is damaged; the
    /// cursor's position is then unspecified.
    #[inline]
    pub fn prev(&mut self) -> Result<Option<Entry<'txn>>> {
        if self.dups.is_none() {
            return self.raw.prev();
        }
        self.step_pair(false)
    }
    /// The entry under the cursor, `None` when unpositioned or past an end.
    /// `MDB_GET_CURRENT`.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`] if the page under the cursor, or the overflow
    /// run of its value, is damaged.
    pub fn current(&self) -> Result<Option<Entry<'txn>>> {
        if self.dups.is_none() {
            return self.raw.current();
        }
        self.current_pair()
    }
    /// Moves to the first entry whose key is `>= key` in the database's
    /// [`KeyOrder`](crate::KeyOrder) (its first value, in a DUPSORT
    /// database). `MDB_SET_RANGE`.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`] if a page the move reads is damaged; the
    /// cursor's position is then unspecified.
    pub fn seek(&mut self, key: &[u8]) -> Result<Option<Entry<'txn>>> {
        let e = self.raw.seek(key)?;
        self.land(e, true)
    }
    /// Whether the cursor stands on an entry (libmdbx's
    /// `mdbx_cursor_on_first`/`on_last` need one; `false` before the first
    /// move and after moving past either end).
    pub fn is_positioned(&self) -> bool {
        self.raw.pos == Pos::At && self.raw.depth > 0
    }

    /// Whether the cursor stands on the first entry (libmdbx's
    /// `mdbx_cursor_on_first`).
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`] if a page the look-ahead reads is damaged; the
    /// cursor itself does not move.
    pub fn is_first(&self) -> Result<bool> {
        if !self.is_positioned() {
            return Ok(false);
        }
        Ok(self.probe().prev()?.is_none())
    }

    /// Whether the cursor stands on the last entry (libmdbx's
    /// `mdbx_cursor_on_last`).
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`] if a page the look-ahead reads is damaged; the
    /// cursor itself does not move.
    pub fn is_last(&self) -> Result<bool> {
        if !self.is_positioned() {
            return Ok(false);
        }
        Ok(self.probe().next()?.is_none())
    }

    /// A copy of this cursor for looking ahead (without the
    /// `get_multiple` buffer).
    fn probe(&self) -> Cursor<'txn> {
        Cursor {
            raw: self.raw.clone(),
            dups: self.dups,
            sub: self.sub.clone(),
            multi: Vec::new(),
        }
    }

    /// Whether the cursor has moved past the last entry (libmdbx's
    /// `mdbx_cursor_eof`; also after `seek` found no key at or above its
    /// argument). `prev` then returns the last entry.
    pub fn is_past_end(&self) -> bool {
        self.raw.pos == Pos::PastEnd
    }

    /// Whether the cursor has moved before the first entry.
    pub(crate) fn is_before_start(&self) -> bool {
        self.raw.pos == Pos::BeforeStart
    }

    /// Moves to `key` and returns its value (its first value, in a
    /// DUPSORT database), or `None` if absent (the cursor then stands on
    /// the next larger key). `MDB_SET_KEY`.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`] if a page the move reads is damaged; the
    /// cursor's position is then unspecified.
    pub fn seek_exact(&mut self, key: &[u8]) -> Result<Option<&'txn [u8]>> {
        Ok(match self.seek(key)? {
            Some((k, v)) if k == key => Some(v),
            _ => None,
        })
    }
}

/// An iterator over a key range of one database, in the database's key
/// order ([`KeyOrder`](crate::KeyOrder); the range bounds too); `.rev()`
/// walks it backwards. Items are `Result`s: a damaged page ends the
/// iteration with one `Err`.
pub struct Iter<'txn> {
    front: Cursor<'txn>,
    back: Cursor<'txn>,
    start: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
    front_started: bool,
    back_started: bool,
    /// The last entries returned from either end.
    front_key: Option<Entry<'txn>>,
    back_key: Option<Entry<'txn>>,
    done: bool,
}

fn own(b: Bound<&&[u8]>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl<'txn> Iter<'txn> {
    pub(crate) fn new<'k, R: RangeBounds<&'k [u8]>>(
        src: AnySource<'txn>,
        rec: DbRecord,
        ord: Order<'txn>,
        dup_order: Option<Order<'txn>>,
        range: R,
    ) -> Result<Iter<'txn>> {
        let c = Cursor::new(src, rec, ord, dup_order)?;
        Ok(Iter {
            front: c.probe(),
            back: c,
            start: own(range.start_bound()),
            end: own(range.end_bound()),
            front_started: false,
            back_started: false,
            front_key: None,
            back_key: None,
            done: false,
        })
    }

    fn first_front(&mut self) -> Result<Option<Entry<'txn>>> {
        match &self.start {
            Bound::Unbounded => self.front.first(),
            Bound::Included(k) => self.front.seek(k),
            Bound::Excluded(k) => match self.front.seek(k)? {
                Some((fk, _)) if fk == k.as_slice() => self.front.next_nodup(),
                e => Ok(e),
            },
        }
    }

    fn first_back(&mut self) -> Result<Option<Entry<'txn>>> {
        let (k, incl) = match &self.end {
            Bound::Unbounded => return self.back.last(),
            Bound::Included(k) => (k, true),
            Bound::Excluded(k) => (k, false),
        };
        match self.back.seek(k)? {
            Some((bk, _)) if incl && bk == k.as_slice() => self.back.last_dup(),
            Some(_) => self.back.prev(),
            None => self.back.last(),
        }
    }

    #[inline]
    fn in_end(&self, k: &[u8]) -> bool {
        let ord = self.front.raw.ord;
        match &self.end {
            Bound::Unbounded => true,
            Bound::Included(e) => !ord.lt(e, k),
            Bound::Excluded(e) => ord.lt(k, e),
        }
    }

    #[inline]
    fn in_start(&self, k: &[u8]) -> bool {
        let ord = self.front.raw.ord;
        match &self.start {
            Bound::Unbounded => true,
            Bound::Included(s) => !ord.lt(k, s),
            Bound::Excluded(s) => ord.lt(s, k),
        }
    }

    /// Whether `k`, the next item going forward (`fwd`) or back, is in
    /// the range and short of the other side's last item.
    #[inline(never)]
    fn inside(&self, e: Entry<'_>, fwd: bool) -> bool {
        if fwd {
            self.in_end(e.0) && self.back_key.is_none_or(|b| self.pair_lt(e, b))
        } else {
            self.in_start(e.0) && self.front_key.is_none_or(|f| self.pair_lt(f, e))
        }
    }

    /// Whether entry `a` comes before `b`: by key, then (DUPSORT) by value.
    fn pair_lt(&self, a: Entry<'_>, b: Entry<'_>) -> bool {
        match self.front.raw.ord.cmp(a.0, b.0) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal => self.front.dups.is_some_and(|d| d.ord.lt(a.1, b.1)),
        }
    }

    #[inline]
    fn finish(&mut self, r: Result<Option<Entry<'txn>>>, fwd: bool) -> Option<Result<Entry<'txn>>> {
        match r {
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
            Ok(None) => {
                self.done = true;
                None
            }
            Ok(Some((k, v))) => {
                // A whole scan compares nothing: keep that path small
                // enough to inline.
                let open = if fwd {
                    matches!(self.end, Bound::Unbounded) && self.back_key.is_none()
                } else {
                    matches!(self.start, Bound::Unbounded) && self.front_key.is_none()
                };
                if !open && !self.inside((k, v), fwd) {
                    self.done = true;
                    return None;
                }
                if fwd {
                    self.front_key = Some((k, v));
                } else {
                    self.back_key = Some((k, v));
                }
                Some(Ok((k, v)))
            }
        }
    }
}

impl<'txn> Iterator for Iter<'txn> {
    type Item = Result<Entry<'txn>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = if self.front_started {
            self.front.next()
        } else {
            self.front_started = true;
            self.first_front()
        };
        self.finish(r, true)
    }
}

impl DoubleEndedIterator for Iter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = if self.back_started {
            self.back.prev()
        } else {
            self.back_started = true;
            self.first_back()
        };
        self.finish(r, false)
    }
}
