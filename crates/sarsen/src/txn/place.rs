//! A write cursor's saved place. LMDB keeps its cursor's page stack valid
//! across the cursor's own writes; a write cursor here keeps the
//! root-to-leaf path of page numbers and indexes it stands at, with the
//! transaction's count of tree changes when it saved it. While the count has
//! not moved, the path is current: a step reads the leaf again (one page
//! look-up) and moves within it, or restores the whole path to cross to a
//! neighbouring leaf, with no search from the root. A delete or a value
//! replaced through the cursor that stays in its leaf leaves the path
//! current (`Tree::delete_at`, `Tree::put_at_path`).

use crate::btree::walk::{Entry, RawCursor};
use crate::btree::{Path, Source, Step};
use crate::error::{Error, Result};
use crate::order::Order;
use crate::page::DbRecord;
use crate::store::AnySource;

/// A saved path and the transaction's change count it is current for.
#[derive(Clone, Copy, Debug)]
pub(super) struct Place {
    pub path: Path,
    pub gen: u64,
    /// Levels of `path` known to be dirty pages (bit `i` for
    /// `path.steps[i]`): all of them after a change through the place
    /// (which touched the whole path), kept by steps within the leaf,
    /// none after a step to another leaf or a place found by a search. A
    /// page stays dirty until commit, and while the change count holds
    /// nothing but this cursor has changed the tree, so the next change
    /// through the place skips their dirty-page look-ups.
    pub dirty: u32,
}

/// Where a step ends.
pub(super) enum Landing {
    /// On the entry at the (updated) path.
    At,
    /// Past the last entry.
    PastEnd,
    /// Before the first entry.
    BeforeStart,
}

/// Refuses a path that does not start at the root of `rec` or does not
/// reach its leaves: a write through a place must never follow a path of
/// another tree (the change count says it is current; this checks it).
pub(super) fn check_path(path: &Path, rec: &DbRecord) -> Result<()> {
    if path.len == 0 || path.len != rec.depth as usize || path.steps[0].pgno != rec.root {
        return Err(Error::corrupted(
            u64::from(rec.root),
            "a write cursor's saved path does not match its tree",
        ));
    }
    Ok(())
}

/// The leaf step of `path` (a saved path is never empty; if one were,
/// `Corrupted`, not a panic).
fn leaf_step(path: &Path) -> Result<Step> {
    match path.len.checked_sub(1).and_then(|t| path.steps.get(t)) {
        Some(st) => Ok(*st),
        None => Err(Error::corrupted(0, "a write cursor's saved path is empty")),
    }
}

/// The page number of the leaf of `path` (`None` for an empty path).
pub(super) fn leaf_pgno(path: &Path) -> Option<crate::page::Pgno> {
    leaf_step(path).ok().map(|s| s.pgno)
}

/// The entry at the end of `path`, `None` if its index is past the leaf.
pub(super) fn entry_at<'a>(src: AnySource<'a>, path: &Path) -> Result<Option<Entry<'a>>> {
    let leaf = leaf_step(path)?;
    let p = src.page(leaf.pgno)?;
    if leaf.idx() >= p.len() {
        return Ok(None);
    }
    let n = p.leaf(leaf.idx())?;
    Ok(Some((n.key, src.value(n.value)?)))
}

/// One step forward (`fwd`) or back from `path`, a current path of the tree
/// `rec`, which it updates in place (a path is a few hundred bytes: a step
/// within a leaf copies none). The step starts at leaf index `start`, or
/// the path's own, `i`, and `on`: the cursor stands on the entry there;
/// otherwise a delete removed it, and `i` names the entry that followed it
/// (possibly the leaf's length), where a forward step lands.
/// On an error, and past either end, `path` is left as it was.
pub(super) fn step<'a>(
    src: AnySource<'a>,
    (rec, ord): (DbRecord, Order<'a>),
    path: &mut Path,
    start: Option<usize>,
    on: bool,
    fwd: bool,
) -> Result<(Option<Entry<'a>>, Landing)> {
    let leaf = leaf_step(path)?;
    let i = start.unwrap_or(leaf.idx());
    let target = match (fwd, on) {
        (true, true) => i.checked_add(1),
        (true, false) => Some(i),
        (false, _) => i.checked_sub(1),
    };
    let p = src.page(leaf.pgno)?;
    if let Some(t) = target.filter(|&t| t < p.len()) {
        // The common case: a neighbour in the same leaf.
        let n = p.leaf(t)?;
        let e = (n.key, src.value(n.value)?);
        path.steps[path.len - 1].set_idx(t);
        return Ok((Some(e), Landing::At));
    }
    // Across a leaf's edge, as a read cursor steps from index `i` (from the
    // leaf's length after a delete at its end, `next` moves to the next
    // leaf).
    let mut from = *path;
    from.steps[from.len - 1].set_idx(i);
    let mut c = RawCursor::at_path(src, rec, ord, &from)?;
    let e = if fwd { c.next()? } else { c.prev()? };
    let landing = match c.path() {
        Some(p) => {
            *path = p;
            Landing::At
        }
        None if c.is_past_end() => Landing::PastEnd,
        None => Landing::BeforeStart,
    };
    Ok((e, landing))
}
