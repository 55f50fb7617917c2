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

use super::insert::{branch_node, remove_leaf_node, set_child, touch_path};
use super::{descend, Path, Source};
use crate::error::{Error, Result};
use crate::io::Map;
use crate::order::Order;
use crate::page::{edit, DbRecord, Kind, Page, Pgno, HDR};
use crate::txn::writer::Writer;

/// Deletes `key` from `rec`, a tree sorted by `ord`; `Ok(false)` if it was
/// not there.
pub(crate) fn delete(
    w: &mut Writer,
    map: &Map,
    rec: &mut DbRecord,
    ord: Order<'_>,
    key: &[u8],
) -> Result<bool> {
    if rec.root == 0 {
        return Ok(false);
    }
    w.clear_hint(rec.root);
    let (mut path, found) = descend(w.source(map), rec, ord, key)?;
    if !found {
        return Ok(false);
    }
    // The path, plus a sibling touched by a merge at every level above the leaf.
    w.reserve(map, 2 * rec.depth as usize + 1, 0)?;
    touch_path(w, map, rec, &mut path)?;
    let leaf = path.leaf();
    remove_leaf_node(w, rec, leaf.pgno, leaf.idx())?;
    rec.entries = rec.entries.saturating_sub(1);
    rebalance(w, map, rec, &path)?;
    Ok(true)
}

/// Merges under-filled pages from the leaf of `path` upwards.
pub(crate) fn rebalance(w: &mut Writer, map: &Map, rec: &mut DbRecord, path: &Path) -> Result<()> {
    let cap = w.layout.psize - HDR;
    let mut level = path.len - 1;
    while level > 0 {
        let pg = path.steps[level].pgno;
        let (kind, n, used) = {
            let p = w.source(map).page(pg)?;
            (p.kind(), p.len(), p.used())
        };
        let min = if kind == Kind::Leaf { 1 } else { 2 };
        if n >= min && used >= cap / 4 {
            return Ok(());
        }
        let parent = path.steps[level - 1];
        if !merge_with_sibling(w, map, rec, parent.pgno, parent.idx(), kind)? {
            if n > 0 {
                return Ok(());
            }
            // Empty, and its parent has no other child to merge it with:
            // it goes, and the parent, now empty too, is next.
            drop_only_child(w, rec, parent.pgno, pg, kind)?;
        }
        level -= 1;
    }
    collapse_root(w, map, rec)
}

/// Removes the empty page `pg`, the only child of dirty branch `ppg`, from
/// the tree, leaving `ppg` without children.
fn drop_only_child(
    w: &mut Writer,
    rec: &mut DbRecord,
    ppg: Pgno,
    pg: Pgno,
    kind: Kind,
) -> Result<()> {
    let pb = w.dirty_mut(ppg)?;
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
    w.free(pg, 1)?;
    match kind {
        Kind::Leaf => rec.leaf_pages = rec.leaf_pages.saturating_sub(1),
        _ => rec.branch_pages = rec.branch_pages.saturating_sub(1),
    }
    Ok(())
}

/// Merges child `idx` of dirty branch `ppg` with a neighbour when both fit
/// in one page. Returns whether a merge happened.
fn merge_with_sibling(
    w: &mut Writer,
    map: &Map,
    rec: &mut DbRecord,
    ppg: Pgno,
    idx: usize,
    kind: Kind,
) -> Result<bool> {
    let cap = w.layout.psize - HDR;
    let (li, ri, lpg, rpg, sep) = {
        let s = w.source(map);
        let pp = s.page(ppg)?;
        if pp.len() < 2 {
            return Ok(false);
        }
        let (li, ri) = if idx > 0 { (idx - 1, idx) } else { (0, 1) };
        let r = pp.branch(ri)?;
        (li, ri, pp.branch(li)?.child, r.child, r.key.to_vec())
    };
    let (lused, lempty, rbuf) = {
        let s = w.source(map);
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
    let newl = w.touch(map, lpg)?;
    if newl != lpg {
        set_child(w, ppg, li, newl)?;
    }
    let lb = w.dirty_mut(newl)?;
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
    let pb = w.dirty_mut(ppg)?;
    let len = Page::new(pb, ppg)?.branch(ri)?.stored_len();
    edit::remove(pb, ri, len);
    w.free(rpg, 1)?;
    match kind {
        Kind::Leaf => rec.leaf_pages = rec.leaf_pages.saturating_sub(1),
        _ => rec.branch_pages = rec.branch_pages.saturating_sub(1),
    }
    Ok(true)
}

/// Removes empty or single-child roots.
fn collapse_root(w: &mut Writer, map: &Map, rec: &mut DbRecord) -> Result<()> {
    while rec.root != 0 {
        let root = rec.root;
        let (leaf, n, child) = {
            let p = w.source(map).page(root)?;
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
            w.free(root, 1)?;
            rec.root = 0;
            rec.depth = 0;
            rec.leaf_pages = 0;
            rec.branch_pages = 0;
            rec.root_cksum = 0;
            return Ok(());
        }
        if leaf {
            return Ok(());
        }
        let Some((child, cksum)) = child else {
            return Ok(());
        };
        if rec.depth <= 1 || child == root {
            return Err(Error::corrupted(
                u64::from(root),
                "root branch at leaf depth or naming itself",
            ));
        }
        w.free(root, 1)?;
        rec.root = child;
        rec.root_cksum = cksum;
        rec.mod_txnid = 0;
        rec.depth = rec.depth.saturating_sub(1);
        rec.branch_pages = rec.branch_pages.saturating_sub(1);
    }
    Ok(())
}
