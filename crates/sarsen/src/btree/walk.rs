//! The cursor engine shared by read cursors, the writer's own walks (GC,
//! catalog, append checks) and the checker: a root-to-leaf stack of page
//! views over any [`Source`], moved along leaves as LMDB's
//! `mdb_cursor_sibling` does.

use super::{bad_level, check_depth, Path, Step, MAX_DEPTH};
use crate::error::{Error, Result};
use crate::order::Order;
use crate::page::{DbRecord, LeafNode, Page, Pgno};
use crate::store::{AnySource, Source};

/// A key and its value, both borrowed from the transaction.
pub type Entry<'txn> = (&'txn [u8], &'txn [u8]);

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
pub(crate) struct RawCursor<'a, S = AnySource<'a>> {
    src: S,
    rec: DbRecord,
    ord: Order<'a>,
    stack: [(Page<'a>, usize); MAX_DEPTH],
    depth: usize,
    pos: Pos,
}

impl<'a, S: Source<'a>> RawCursor<'a, S> {
    /// A cursor over the tree `rec` in `src`, whose keys are sorted by `ord`.
    pub(crate) fn new(src: S, rec: DbRecord, ord: Order<'a>) -> RawCursor<'a, S> {
        RawCursor {
            src,
            rec,
            ord,
            stack: [(Page::empty(), 0); MAX_DEPTH],
            depth: 0,
            pos: Pos::Unset,
        }
    }

    /// A cursor standing at `path`, a root-to-leaf path of the tree `rec`
    /// that the caller knows to be current (a write cursor's saved place):
    /// each page is read again, nothing is searched. The leaf index may be
    /// the leaf's length (just past its last node), from which `step`
    /// moves to the next leaf or back to the last node.
    pub(crate) fn at_path(
        src: S,
        rec: DbRecord,
        ord: Order<'a>,
        path: &Path,
    ) -> Result<RawCursor<'a, S>> {
        let depth = check_depth(&rec)?;
        if path.len != depth || depth == 0 || path.steps[0].pgno != rec.root {
            return Err(Error::corrupted(
                u64::from(rec.root),
                "a cursor's saved path does not match its tree",
            ));
        }
        let mut c = RawCursor::new(src, rec, ord);
        for (level, st) in path.steps[..depth].iter().enumerate() {
            let p = src.page(st.pgno)?;
            if p.is_leaf() != (level + 1 == depth) {
                return Err(bad_level(st.pgno));
            }
            c.stack[level] = (p, st.idx());
        }
        c.depth = depth;
        c.pos = Pos::At;
        c.no_empty_leaf()?;
        Ok(c)
    }

    /// The root-to-leaf path of pages and indexes the cursor stands at.
    pub(crate) fn path(&self) -> Option<Path> {
        if !self.is_at() {
            return None;
        }
        let mut path = Path::new();
        for (st, (p, i)) in path.steps.iter_mut().zip(&self.stack[..self.depth]) {
            *st = Step::new(p.pgno(), *i);
        }
        path.len = self.depth;
        Some(path)
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

    /// The page numbers on the cursor's path from the root.
    pub(crate) fn path_pgnos(&self) -> impl Iterator<Item = Pgno> + '_ {
        self.stack[..self.depth].iter().map(|(p, _)| p.pgno())
    }

    /// Moves to index `i` of the current leaf (which the caller checked).
    pub(crate) fn set_leaf_idx(&mut self, i: usize) {
        if self.depth > 0 {
            self.stack[self.depth - 1].1 = i;
        }
    }

    /// Whether the cursor stands on an entry.
    pub(crate) fn is_at(&self) -> bool {
        self.pos == Pos::At && self.depth > 0
    }

    /// Whether the cursor ran off the last entry.
    pub(crate) fn is_past_end(&self) -> bool {
        self.pos == Pos::PastEnd
    }

    /// Whether the cursor ran off the first entry.
    pub(crate) fn is_before_start(&self) -> bool {
        self.pos == Pos::BeforeStart
    }

    /// The order of the tree's keys.
    pub(crate) fn order(&self) -> Order<'a> {
        self.ord
    }

    /// Where the cursor's pages come from.
    pub(crate) fn source(&self) -> S {
        self.src
    }

    /// The tree's record.
    pub(crate) fn record(&self) -> &DbRecord {
        &self.rec
    }

    /// Descends from `pgno` at `level` to a leaf, taking the first child
    /// (`left`) or the last at each branch.
    fn descend_edge(&mut self, mut pgno: Pgno, mut level: usize, left: bool) -> Result<()> {
        let depth = check_depth(&self.rec)?;
        while level < depth {
            let p = self.src.page(pgno)?;
            if p.is_leaf() != (level + 1 == depth) {
                return Err(bad_level(pgno));
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
            return self.step_leaf(true);
        }
        self.prefetch_sibling(true);
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
            return self.step_leaf(false);
        }
        self.prefetch_sibling(false);
        self.current()
    }

    /// Moves to the first entry with a key `>= key` (in the tree's order).
    pub(crate) fn seek(&mut self, key: &[u8]) -> Result<Option<Entry<'a>>> {
        if self.rec.root == 0 {
            self.pos = Pos::PastEnd;
            return Ok(None);
        }
        let depth = check_depth(&self.rec)?;
        let mut pgno = self.rec.root;
        for level in 0..depth {
            let p = self.src.page(pgno)?;
            if p.is_leaf() != (level + 1 == depth) {
                return Err(bad_level(pgno));
            }
            if p.is_leaf() {
                let (i, _) = p.search_leaf(key, self.ord)?;
                self.stack[level] = (p, i);
                self.depth = depth;
                self.pos = Pos::At;
                self.no_empty_leaf()?;
                if i >= p.len() {
                    self.stack[level].1 = p.len().saturating_sub(1);
                    return self.step_leaf(true);
                }
                return self.current();
            }
            let i = p.search_branch(key, self.ord)?;
            self.stack[level] = (p, i);
            pgno = p.branch(i)?.child;
        }
        Err(bad_level(pgno))
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
    /// a neighbour with an inline value in the same leaf, works on the
    /// stack in place and is inlined into the caller's loop (copying page
    /// views, or a call returning the entry through memory, costs more
    /// than the step itself); everything else is [`step_leaf`](Self::step_leaf).
    #[inline(always)]
    fn step(&mut self, fwd: bool) -> Result<Option<Entry<'a>>> {
        if let Some((p, i)) = self.stack.get_mut(self.depth.wrapping_sub(1)) {
            // Backwards from index 0 wraps to a number past any leaf's
            // length, which `leaf_inline` refuses.
            let j = if fwd {
                i.wrapping_add(1)
            } else {
                i.wrapping_sub(1)
            };
            if let Some(e) = p.leaf_inline(j) {
                *i = j;
                return Ok(Some(e));
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
    #[inline(never)]
    fn step_leaf(&mut self, fwd: bool) -> Result<Option<Entry<'a>>> {
        let Some(top) = self.depth.checked_sub(1) else {
            return Ok(None);
        };
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
        self.prefetch_sibling(fwd);
        self.current()
    }

    /// Asks the source to start loading the leaf after the current one in
    /// direction `fwd`, when the current leaf's parent names it: a scan
    /// reads its entries in key order, which is not the order of their
    /// bytes in the page, so without the hint the leaf's cache lines
    /// arrive one miss at a time. The next sibling under another parent
    /// is not looked for (one leaf in a branch's fan-out).
    #[inline]
    fn prefetch_sibling(&self, fwd: bool) {
        if self.depth < 2 {
            return;
        }
        let (bp, bi) = self.stack[self.depth - 2];
        let ni = if fwd { bi + 1 } else { bi.wrapping_sub(1) };
        if ni < bp.len() {
            if let Ok(n) = bp.branch(ni) {
                self.src.prefetch_page(n.child);
            }
        }
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
fn entry<'a, S: Source<'a>>(src: S, p: &Page<'a>, i: usize) -> Result<Entry<'a>> {
    let n = p.leaf(i)?;
    Ok((n.key, src.value(n.value)?))
}
