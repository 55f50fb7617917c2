//! Delete and rebalance.
//!
//! After a node leaves a page, a page below a quarter full (or a leaf with
//! no node, a branch with one child) is merged with a sibling when both fit
//! in one page; the parent loses the separator and is checked in turn. A
//! root branch left with one child is replaced by that child, so the tree
//! shrinks by a level; an empty root leaf leaves an empty tree. Pages that
//! cannot merge stay as they are, so a branch can be left with one child
//! (its sibling too full to merge with). If that child empties, it has no
//! sibling to merge into: it is removed, and the branch, now empty, merges
//! or goes in turn. So no page is left without a node.
//!
//! A file written before that rule may hold an empty leaf under a branch of
//! one child. `check` reports it and search still finds every key, but a
//! cursor that reaches it fails with `Corrupted`: stepping over empty
//! leaves would let a hostile branch that names one empty leaf many times
//! make a scan take K^depth steps (`cursor::RawCursor::step_leaf`).
//! `append` compares with the last key rather than trusting a descent to
//! end at the right edge.

use super::insert::branch_node;
use super::{Fill, Path, Source, Tree};
use crate::error::{Error, Result};
use crate::page::{edit, Kind, Page, Pgno, HDR};
use crate::store::PageStore;

impl<S: PageStore> Tree<'_, S> {
    /// Deletes `key` from `self.rec`, a tree sorted by `self.ord`; `Ok(false)` if it was
    /// not there.
    pub(crate) fn delete(&mut self, key: &[u8]) -> Result<bool> {
        if self.rec.root == 0 {
            return Ok(false);
        }
        self.state.clear_hint(self.rec.root);
        // As a put's descent: the levels found dirty are not looked up
        // again, and the leaf copied last is hashed while this one loads.
        let mut path = Path::new();
        let (found, dirty) = self.descend_to_write(key, &mut path)?;
        if !found {
            return Ok(false);
        }
        self.delete_at(&mut path, dirty)?;
        Ok(true)
    }

    /// Deletes the node at the end of `path`, the current path to a stored
    /// key (from a descent, or a write cursor's place): no descent. `path` is
    /// left naming the pages it made dirty. Returns whether the delete stayed
    /// in that leaf (no page merged or freed), so that the path's leaf index
    /// now names the node after the deleted one (or the leaf's length).
    /// The levels set in `dirty` are known to be dirty pages already (see
    /// [`touch_path_known`](Tree::touch_path_known)): a write cursor's
    /// place after a change through it.
    pub(crate) fn delete_at(&mut self, path: &mut Path, dirty: u32) -> Result<bool> {
        self.state.clear_hint(self.rec.root);
        // The path, plus a sibling touched by a merge at every level above the leaf.
        self.store.reserve(2 * self.rec.depth as usize + 1, 0)?;
        self.touch_path_known(path, dirty)?;
        let leaf = path.leaf();
        let fill = self.remove_leaf_node(leaf.pgno, leaf.idx())?;
        self.rec.entries = self.rec.entries.saturating_sub(1);
        Ok(!self.rebalance(path, Some(fill))?)
    }

    /// Merges under-filled pages from the leaf of `path` upwards, the
    /// leaf's fill given if known (`leaf`). Returns whether any page was
    /// merged or freed (or the root replaced).
    pub(crate) fn rebalance(&mut self, path: &Path, mut leaf: Option<Fill>) -> Result<bool> {
        let cap = self.store.layout().psize - HDR;
        let mut level = path.len - 1;
        let mut changed = false;
        while level > 0 {
            let pg = path.steps[level].pgno;
            let Fill {
                kind,
                entries: n,
                used,
            } = match leaf.take() {
                Some(f) => f,
                None => {
                    let p = self.store.view().page(pg)?;
                    Fill {
                        kind: p.kind(),
                        entries: p.len(),
                        used: p.used(),
                    }
                }
            };
            let min = if kind == Kind::Leaf { 1 } else { 2 };
            if n >= min && used >= cap / 4 {
                return Ok(changed);
            }
            let parent = path.steps[level - 1];
            if !self.merge_with_sibling(parent.pgno, parent.idx(), kind)? {
                if n > 0 {
                    return Ok(changed);
                }
                // Empty, and its parent has no other child to merge it with:
                // it goes, and the parent, now empty too, is next.
                self.drop_only_child(parent.pgno, pg, kind)?;
            }
            changed = true;
            level -= 1;
        }
        Ok(self.collapse_root()? || changed)
    }

    /// Removes the empty page `pg`, the only child of dirty branch `ppg`, from
    /// the tree, leaving `ppg` without children.
    fn drop_only_child(&mut self, ppg: Pgno, pg: Pgno, kind: Kind) -> Result<()> {
        let pb = self.store.dirty_mut(ppg)?;
        let len = {
            let p = Page::new(pb, ppg)?;
            let only = p.branch(0)?;
            if p.len() != 1 || only.child != pg {
                return Err(Error::corrupted(
                    u64::from(ppg),
                    "empty page is not the only child",
                ));
            }
            only.stored_len()
        };
        edit::remove(pb, 0, len);
        self.store.free(pg, 1)?;
        match kind {
            Kind::Leaf => self.rec.leaf_pages = self.rec.leaf_pages.saturating_sub(1),
            _ => self.rec.branch_pages = self.rec.branch_pages.saturating_sub(1),
        }
        Ok(())
    }

    /// Merges child `idx` of dirty branch `ppg` with a neighbour when both fit
    /// in one page. Returns whether a merge happened.
    fn merge_with_sibling(&mut self, ppg: Pgno, idx: usize, kind: Kind) -> Result<bool> {
        let cap = self.store.layout().psize - HDR;
        let (li, ri, lpg, rpg, sep) = {
            let s = self.store.view();
            let pp = s.page(ppg)?;
            if pp.len() < 2 {
                return Ok(false);
            }
            let (li, ri) = if idx > 0 { (idx - 1, idx) } else { (0, 1) };
            let r = pp.branch(ri)?;
            (li, ri, pp.branch(li)?.child, r.child, r.key.to_vec())
        };
        let (lused, lempty, rbuf) = {
            let s = self.store.view();
            let lp = s.page(lpg)?;
            let rp = s.page(rpg)?;
            if lp.kind() != kind || rp.kind() != kind {
                return Err(Error::corrupted(
                    u64::from(rpg),
                    "siblings of different kinds",
                ));
            }
            (lp.used(), lp.len() == 0, rp.bytes().to_vec())
        };
        // The right page's nodes may carry stale `FRESH` marks of an older
        // commit; they move with the nodes, and sealing clears them.
        let rp = Page::new(&rbuf, rpg)?;
        // The separator becomes the key of the right branch's first child,
        // unless that child becomes the first of the page (a left branch left
        // empty by `drop_only_child`), whose first node has no key.
        let sep_key: &[u8] = if lempty { &[] } else { &sep };
        let extra = if kind == Kind::Branch && rp.len() > 0 {
            sep_key.len()
        } else {
            0
        };
        if lused + rp.used() + extra > cap {
            return Ok(false);
        }
        let newl = self.store.touch(lpg)?;
        if newl != lpg {
            self.set_child(ppg, li, newl)?;
        }
        let lb = self.store.dirty_mut(newl)?;
        let base = Page::new(lb, newl)?.len();
        for k in 0..rp.len() {
            let at = base + k;
            let ok = if kind == Kind::Branch && k == 0 {
                let b = rp.branch(0)?;
                edit::insert_raw(lb, at, &branch_node(sep_key, b.child, b.cksum, b.flags))
            } else {
                edit::insert_raw(lb, at, rp.raw_node(k)?)
            };
            if !ok {
                return Err(Error::corrupted(u64::from(rpg), "merged page overflows"));
            }
        }
        let pb = self.store.dirty_mut(ppg)?;
        let len = Page::new(pb, ppg)?.branch(ri)?.stored_len();
        edit::remove(pb, ri, len);
        self.store.free(rpg, 1)?;
        match kind {
            Kind::Leaf => self.rec.leaf_pages = self.rec.leaf_pages.saturating_sub(1),
            _ => self.rec.branch_pages = self.rec.branch_pages.saturating_sub(1),
        }
        Ok(true)
    }

    /// Removes empty or single-child roots; whether it removed one.
    fn collapse_root(&mut self) -> Result<bool> {
        let mut changed = false;
        while self.rec.root != 0 {
            let root = self.rec.root;
            let (leaf, n, child) = {
                let p = self.store.view().page(root)?;
                let child = if !p.is_leaf() && p.len() == 1 {
                    Some(p.branch(0)?)
                } else {
                    None
                };
                (p.is_leaf(), p.len(), child.map(|c| (c.child, c.cksum)))
            };
            if n == 0 {
                // An empty root leaf, or a root branch whose last child went
                // (`drop_only_child`): the tree is empty.
                self.store.free(root, 1)?;
                self.rec.root = 0;
                self.rec.depth = 0;
                self.rec.leaf_pages = 0;
                self.rec.branch_pages = 0;
                self.rec.root_cksum = 0;
                return Ok(true);
            }
            if leaf {
                return Ok(changed);
            }
            let Some((child, cksum)) = child else {
                return Ok(changed);
            };
            if self.rec.depth <= 1 || child == root {
                return Err(Error::corrupted(
                    u64::from(root),
                    "root branch at leaf depth or naming itself",
                ));
            }
            self.store.free(root, 1)?;
            self.rec.root = child;
            self.rec.root_cksum = cksum;
            self.rec.mod_txnid = 0;
            self.rec.depth = self.rec.depth.saturating_sub(1);
            self.rec.branch_pages = self.rec.branch_pages.saturating_sub(1);
            changed = true;
        }
        Ok(changed)
    }
}
