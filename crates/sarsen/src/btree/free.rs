//! Releasing a whole tree (clear and drop of a database).

use super::{check_depth, Source, Visited};
use crate::error::{Error, Result};
use crate::io::Map;
use crate::page::{DbRecord, LeafValue, Pgno};
use crate::txn::writer::Writer;

/// Frees every page of `rec` (and its overflow runs) and empties it.
pub(crate) fn free_tree(w: &mut Writer, map: &Map, rec: &mut DbRecord) -> Result<()> {
    if rec.root != 0 {
        w.clear_hint(rec.root);
        let depth = check_depth(rec)?;
        let mut seen = Visited::default();
        free_page(w, map, rec.root, depth, &mut seen)?;
    }
    let flags = rec.flags;
    let seq = rec.sequence;
    *rec = DbRecord {
        flags,
        sequence: seq,
        ..DbRecord::default()
    };
    Ok(())
}

/// Frees page `pgno` and everything below it (`seen`: see [`Visited`]).
fn free_page(
    w: &mut Writer,
    map: &Map,
    pgno: Pgno,
    levels: usize,
    seen: &mut Visited,
) -> Result<()> {
    seen.enter(pgno)?;
    if levels == 0 {
        return Err(Error::corrupted(
            u64::from(pgno),
            "tree deeper than its recorded depth",
        ));
    }
    let l = w.layout;
    let mut children = Vec::new();
    let mut runs = Vec::new();
    {
        let p = w.source(map).page(pgno)?;
        if p.is_leaf() != (levels == 1) {
            return Err(super::bad_level(pgno));
        }
        for i in 0..p.len() {
            if p.is_leaf() {
                if let LeafValue::Overflow { pgno, len, .. } = p.leaf(i)?.value {
                    runs.push((pgno, l.overflow_pages(len)));
                }
            } else {
                children.push(p.branch(i)?.child);
            }
        }
    }
    for c in children {
        free_page(w, map, c, levels - 1, seen)?;
    }
    for (r, n) in runs {
        w.free_run(r, n)?;
    }
    w.free(pgno, 1);
    Ok(())
}
