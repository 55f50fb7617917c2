//! The copy-on-write B+tree: search (this file), insert and split
//! (`insert`), delete and rebalance (`delete`), checksums at commit (`seal`)
//! and whole-tree release (`free`).
//!
//! Read paths are generic over a [`Source`] of pages (`store/`): the map
//! bounded by a snapshot for read transactions, dirty pages then the map
//! for the writer. Write paths take a [`PageStore`](crate::store::PageStore).

pub(crate) mod delete;
pub(crate) mod dup;
pub(crate) mod estimate;
pub(crate) mod free;
pub(crate) mod insert;
pub(crate) mod relocate;
pub(crate) mod seal;
pub(crate) mod walk;

#[cfg(test)]
mod tests;

use crate::error::{Error, Result};
use crate::order::Order;
use crate::page::{DbRecord, Pgno};
use crate::store::PageStore;
pub(crate) use crate::store::Source;

/// Deepest tree accepted (as LMDB's cursor stack). With at least two keys
/// per page this is far beyond any file that fits in 2^31 pages.
pub(crate) const MAX_DEPTH: usize = 32;

/// Checks a tree's depth before descending it.
#[inline]
pub(crate) fn check_depth(rec: &DbRecord) -> Result<usize> {
    let d = rec.depth as usize;
    if d > MAX_DEPTH || (d == 0) != (rec.root == 0) {
        return Err(bad_depth(rec));
    }
    Ok(d)
}

/// The error of [`check_depth`] (out of line: the inlined check stays two
/// comparisons).
#[cold]
#[inline(never)]
fn bad_depth(rec: &DbRecord) -> Error {
    let what = if rec.depth as usize > MAX_DEPTH {
        "tree deeper than 32 levels"
    } else {
        "tree depth and root disagree"
    };
    Error::corrupted(u64::from(rec.root), what)
}

/// The pages a whole-tree walk (freeing a tree, verifying a commit) has
/// reached. Each page has one place in one tree, so a page reached twice
/// means a damaged tree: an error, rather than a double free or, with
/// shared children, exponential work.
#[derive(Default)]
pub(crate) struct Visited(rustc_hash::FxHashSet<Pgno>);

impl Visited {
    /// Records `pgno`; `Corrupted` if it was reached before.
    pub(crate) fn enter(&mut self, pgno: Pgno) -> Result<()> {
        if self.0.insert(pgno) {
            Ok(())
        } else {
            Err(Error::corrupted(
                u64::from(pgno),
                "page reachable twice in one tree walk",
            ))
        }
    }
}

/// Error for a page whose kind does not fit its level.
pub(crate) fn bad_level(pgno: Pgno) -> Error {
    Error::corrupted(
        u64::from(pgno),
        "page kind does not match its level in the tree",
    )
}

/// Point lookup in a tree sorted by `ord`: touches only the root-to-leaf path, allocates nothing.
#[inline]
pub(crate) fn get<'a, S: Source<'a>>(
    s: S,
    rec: &DbRecord,
    ord: Order<'_>,
    key: &[u8],
) -> Result<Option<&'a [u8]>> {
    if rec.root == 0 {
        return Ok(None);
    }
    let depth = check_depth(rec)?;
    let mut pgno = rec.root;
    for level in 1..=depth {
        let p = s.page(pgno)?;
        if p.is_leaf() != (level == depth) {
            return Err(bad_level(pgno));
        }
        if p.is_leaf() {
            let (i, eq) = p.search_leaf(key, ord)?;
            if !eq {
                return Ok(None);
            }
            // An inline value straight from the node; anything else (an
            // overflow value, or a check failing) through the full parse.
            if let Some((_, v)) = p.leaf_inline(i) {
                return Ok(Some(v));
            }
            return s.value(p.leaf(i)?.value).map(Some);
        }
        pgno = p.branch(p.search_branch(key, ord)?)?.child;
    }
    Err(bad_level(pgno))
}

/// One level of a descent: the page and the index taken in it. Eight
/// bytes, so that a [`Path`] (copied whole into and out of the append hint)
/// stays small: an index in a page is below the page size, far under 2^32.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Step {
    pub pgno: Pgno,
    at: u32,
}

impl Step {
    pub(crate) fn new(pgno: Pgno, idx: usize) -> Step {
        Step {
            pgno,
            at: idx as u32,
        }
    }

    /// The index taken in the page.
    #[inline]
    pub(crate) fn idx(&self) -> usize {
        self.at as usize
    }

    pub(crate) fn set_idx(&mut self, idx: usize) {
        self.at = idx as u32;
    }
}

/// A page's kind and fill as rebalancing weighs them: its entries and the
/// bytes its slots and nodes use.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fill {
    pub kind: crate::page::Kind,
    pub entries: usize,
    pub used: usize,
}

/// A root-to-leaf path (fixed size: no allocation).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Path {
    pub steps: [Step; MAX_DEPTH],
    pub len: usize,
}

impl Path {
    pub(crate) fn new() -> Path {
        Path {
            steps: [Step::default(); MAX_DEPTH],
            len: 0,
        }
    }
    pub(crate) fn leaf(&self) -> Step {
        self.steps[self.len - 1]
    }

    /// The mask of every level of the path (bit `i` for `steps[i]`), as
    /// [`Tree::touch_path_known`] takes it after a change through the
    /// path made each of its pages dirty.
    pub(crate) fn all_levels(&self) -> u32 {
        1u32.checked_shl(self.len as u32)
            .map_or(u32::MAX, |b| b - 1)
    }
}

/// Descends to the leaf where `key` is or would be in `ord`. Returns the path (leaf
/// index = first key `>= key`) and whether the key was found.
pub(crate) fn descend<'a, S: Source<'a>>(
    s: S,
    rec: &DbRecord,
    ord: Order<'_>,
    key: &[u8],
) -> Result<(Path, bool)> {
    let depth = check_depth(rec)?;
    let mut path = Path::new();
    let mut pgno = rec.root;
    for level in 1..=depth {
        let p = s.page(pgno)?;
        if p.is_leaf() != (level == depth) {
            return Err(bad_level(pgno));
        }
        if p.is_leaf() {
            let (i, eq) = p.search_leaf(key, ord)?;
            path.steps[level - 1] = Step::new(pgno, i);
            path.len = level;
            return Ok((path, eq));
        }
        let i = p.search_branch(key, ord)?;
        path.steps[level - 1] = Step::new(pgno, i);
        pgno = p.branch(i)?.child;
    }
    Err(bad_level(pgno))
}

/// What the B+tree keeps between the operations of one write transaction.
#[derive(Default)]
pub(crate) struct TreeState {
    /// The rightmost path of the tree with this root, left by a put that
    /// appended there (see `insert::append_path`). Cleared by any other
    /// change to that tree.
    pub append: Option<(Pgno, Path)>,
    /// Scratch buffer for building nodes.
    pub scratch: Vec<u8>,
    /// Changes made to any tree in this transaction so far (counted by the
    /// transaction layer): a write cursor's saved place is current while
    /// this count is what it was after the cursor's own last change.
    pub changes: u64,
}

impl TreeState {
    /// Forgets the append hint if it belongs to the tree rooted at `root`
    /// (called before any change other than an appending put).
    #[inline]
    pub(crate) fn clear_hint(&mut self, root: Pgno) {
        if self.append.as_ref().is_some_and(|(r, _)| *r == root) {
            self.append = None;
        }
    }
}

/// One change to one tree (as redb's `MutateHelper`): the page store it
/// changes, the state kept between operations, the tree's record (changed
/// in place: root, depth, counts) and the order of its keys. The
/// operations are in `insert`, `delete`, `dup` and `free`.
pub(crate) struct Tree<'t, S> {
    pub store: &'t mut S,
    pub state: &'t mut TreeState,
    pub rec: &'t mut DbRecord,
    pub ord: Order<'t>,
}

impl<'t, S: PageStore> Tree<'t, S> {
    /// [`descend`] for a write to `key`, in the store's view, with the
    /// levels whose pages were dirty: bit `i` of the mask for
    /// `path.steps[i]`. The view found that out anyway, so
    /// [`touch_path_known`](Tree::touch_path_known) need not look the
    /// pages up again. At the leaf, the store first starts loading a clean
    /// page (which the write will copy) and works while its lines arrive
    /// ([`PageStore::approach_leaf`]). The path is written into `path`
    /// (a few hundred bytes: returned, it would be copied on the way out);
    /// returns whether the key was found, and the mask.
    #[inline]
    pub(crate) fn descend_to_write(&mut self, key: &[u8], path: &mut Path) -> Result<(bool, u32)> {
        let depth = check_depth(self.rec)?;
        path.len = 0;
        let mut dirty = 0u32;
        let mut pgno = self.rec.root;
        for level in 1..=depth {
            let (p, d) = if level == depth {
                let d = self.store.approach_leaf(pgno);
                (self.store.view().page_known(pgno, d)?, d)
            } else {
                self.store.view().page_dirty(pgno)?
            };
            dirty |= u32::from(d) << (level - 1);
            if p.is_leaf() != (level == depth) {
                return Err(bad_level(pgno));
            }
            if p.is_leaf() {
                let (i, eq) = p.search_leaf(key, self.ord)?;
                path.steps[level - 1] = Step::new(pgno, i);
                path.len = level;
                return Ok((eq, dirty));
            }
            let i = p.search_branch(key, self.ord)?;
            path.steps[level - 1] = Step::new(pgno, i);
            pgno = p.branch(i)?.child;
        }
        Err(bad_level(pgno))
    }

    /// The tree `rec`, sorted by `ord`, in `store`.
    #[inline]
    pub(crate) fn new(
        store: &'t mut S,
        state: &'t mut TreeState,
        rec: &'t mut DbRecord,
        ord: Order<'t>,
    ) -> Tree<'t, S> {
        Tree {
            store,
            state,
            rec,
            ord,
        }
    }

    /// Another tree in the same store (a duplicate sub-tree).
    #[inline]
    pub(crate) fn with<'u>(&'u mut self, rec: &'u mut DbRecord, ord: Order<'u>) -> Tree<'u, S> {
        Tree {
            store: &mut *self.store,
            state: &mut *self.state,
            rec,
            ord,
        }
    }
}
