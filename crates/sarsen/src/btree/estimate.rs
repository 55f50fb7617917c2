//! Range estimates from root-to-leaf paths (libmdbx's `mdbx_estimate_range`):
//! where a key would stand in key order, from its path and a few pages next
//! to it, without reading the pages between two keys.
//!
//! A key's position is estimated as a fraction of the tree, bottom up along
//! its path: at a page where the descent takes child (or entry) `i` of `n`,
//! the fraction is the weight of children `0..i`, plus the child's weight
//! times the fraction inside it, over the total weight. Weights are 1 per
//! child, except under branch pages of at most [`WEIGHED_FANOUT`] children
//! (the top of the tree, where one uneven child moves the estimate most):
//! there each child weighs its own number of children or entries, read from
//! its page. The rank is the fraction times the tree's entries.

use super::{descend, Source};
use crate::error::Result;
use crate::order::Order;
use crate::page::DbRecord;

/// Branch pages with at most this many children have them weighed by
/// their own sizes (that many extra page reads at most, per such level).
const WEIGHED_FANOUT: usize = 64;

/// The estimated number of entries with keys before `key` (in the tree's
/// order `ord`) in the tree `rec`.
pub(crate) fn rank<'a, S: Source<'a>>(
    s: S,
    rec: &DbRecord,
    ord: Order<'_>,
    key: &[u8],
) -> Result<f64> {
    if rec.root == 0 || rec.entries == 0 {
        return Ok(0.0);
    }
    let (path, _) = descend(s, rec, ord, key)?;
    let mut frac = 0.0;
    for level in (0..path.len).rev() {
        let st = path.steps[level];
        let p = s.page(st.pgno)?;
        let n = p.len();
        if p.is_leaf() || n > WEIGHED_FANOUT {
            frac = (st.idx() as f64 + frac) / n.max(1) as f64;
            continue;
        }
        let (mut before, mut total, mut own) = (0.0, 0.0, 0.0);
        for i in 0..n {
            let w = s.page(p.branch(i)?.child)?.len().max(1) as f64;
            if i < st.idx() {
                before += w;
            } else if i == st.idx() {
                own = w;
            }
            total += w;
        }
        frac = (before + own * frac) / total;
    }
    Ok((frac * rec.entries as f64).min(rec.entries as f64))
}
