//! Range estimates from root-to-leaf paths (libmdbx's `mdbx_estimate_range`):
//! where a key would stand in key order, in O(depth), without reading the
//! pages between two keys.
//!
//! A key's position is estimated as a fraction of the tree: at each page of
//! its path with `n` children (or `n` entries, at the leaf) where it takes
//! index `i`, the fraction is `i / n` plus `1 / n` of the fraction in the
//! child it descends to. That assumes siblings hold equal counts; the rank
//! is the fraction times the tree's entries. Errors come from sibling
//! subtrees filled unevenly.

use super::{descend, Source};
use crate::error::Result;
use crate::page::DbRecord;

/// The estimated number of entries with keys `< key` in the tree `rec`.
pub(crate) fn rank<'a, S: Source<'a>>(s: S, rec: &DbRecord, key: &[u8]) -> Result<f64> {
    if rec.root == 0 || rec.entries == 0 {
        return Ok(0.0);
    }
    let (path, _) = descend(s, rec, key)?;
    let mut frac = 0.0;
    for level in (0..path.len).rev() {
        let st = path.steps[level];
        let n = s.page(st.pgno)?.len().max(1) as f64;
        frac = (st.idx as f64 + frac) / n;
    }
    Ok((frac * rec.entries as f64).min(rec.entries as f64))
}
