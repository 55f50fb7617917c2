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
use crate::btree::{Path, Source};
use crate::error::{Error, Result};
use crate::order::Order;
use crate::page::DbRecord;
use crate::store::AnySource;

/// A saved path and the transaction's change count it is current for.
#[derive(Clone, Copy, Debug)]
pub(super) struct Place {
    pub path: Path,
    pub gen: u64,
}

/// Where a step ends (a path inline: boxing it would allocate per step).
#[allow(clippy::large_enum_variant)]
pub(super) enum Landing {
    /// On the entry at this path.
    At(Path),
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

/// The entry at the end of `path`, `None` if its index is past the leaf.
pub(super) fn entry_at<'a>(src: AnySource<'a>, path: &Path) -> Result<Option<Entry<'a>>> {
    let leaf = path.leaf();
    let p = src.page(leaf.pgno)?;
    if leaf.idx() >= p.len() {
        return Ok(None);
    }
    let n = p.leaf(leaf.idx())?;
    Ok(Some((n.key, src.value(n.value)?)))
}

/// One step forward (`fwd`) or back from the current path `path` of the tree
/// `rec`. `on`: the cursor stands on the entry at the leaf index; otherwise
/// a delete removed it, and the index names the entry that followed it
/// (possibly the leaf's length), where a forward step lands.
pub(super) fn step<'a>(
    src: AnySource<'a>,
    rec: DbRecord,
    ord: Order<'a>,
    mut path: Path,
    on: bool,
    fwd: bool,
) -> Result<(Option<Entry<'a>>, Landing)> {
    let top = path.len - 1;
    let i = path.steps[top].idx();
    let target = match (fwd, on) {
        (true, true) => i.checked_add(1),
        (true, false) => Some(i),
        (false, _) => i.checked_sub(1),
    };
    let p = src.page(path.steps[top].pgno)?;
    if let Some(t) = target.filter(|&t| t < p.len()) {
        // The common case: a neighbour in the same leaf.
        path.steps[top].set_idx(t);
        let n = p.leaf(t)?;
        return Ok((Some((n.key, src.value(n.value)?)), Landing::At(path)));
    }
    // Across a leaf's edge, as a read cursor steps (from the leaf's length
    // after a delete at its end, `next` moves to the next leaf).
    let mut c = RawCursor::at_path(src, rec, ord, &path)?;
    let e = if fwd { c.next()? } else { c.prev()? };
    let landing = match c.path() {
        Some(p) => Landing::At(p),
        None if c.is_past_end() => Landing::PastEnd,
        None => Landing::BeforeStart,
    };
    Ok((e, landing))
}
