//! Checksums at commit: a Merkle tree over the B+tree, as redb keeps.
//!
//! Each branch node holds the XXH3-64 of its child page, each overflow
//! reference the XXH3-64 of its run, and the tree record the root's. Only
//! dirty pages are hashed, bottom up along the paths copy-on-write already
//! rewrote. The `FRESH` flag marks a child written by the same commit, so
//! that open can verify exactly the pages of the newest commit.

use crate::error::Result;
use crate::page::node::{self, FRESH};
use crate::page::{edit, DbRecord, LeafValue, Page, Pgno};
use crate::txn::writer::Writer;

/// Computes the checksums of the dirty part of `rec` and stamps the root's.
pub(crate) fn seal(w: &mut Writer, rec: &mut DbRecord) -> Result<()> {
    if rec.root == 0 || !w.is_dirty(rec.root) {
        return Ok(());
    }
    rec.root_cksum = seal_page(w, rec.root)?;
    rec.mod_txnid = w.txnid;
    Ok(())
}

fn seal_page(w: &mut Writer, pgno: Pgno) -> Result<u64> {
    let n = Page::new(w.dirty_mut(pgno)?, pgno)?.len();
    let leaf = Page::new(w.dirty_mut(pgno)?, pgno)?.is_leaf();
    for i in 0..n {
        if leaf {
            let b = w.dirty_mut(pgno)?;
            let nd = Page::new(b, pgno)?.leaf(i)?;
            if let LeafValue::Overflow {
                pgno: run, cksum, ..
            } = nd.value
            {
                let fresh = w.is_dirty(run);
                let b = w.dirty_mut(pgno)?;
                let flags = nd_flags(b, pgno, i)? & !FRESH;
                node::set_leaf_overflow(
                    edit::node_mut(b, i),
                    cksum,
                    if fresh { flags | FRESH } else { flags },
                );
            }
        } else {
            let b = w.dirty_mut(pgno)?;
            let nd = Page::new(b, pgno)?.branch(i)?;
            let (child, old_sum, flags) = (nd.child, nd.cksum, nd.flags & !FRESH);
            let (sum, flags) = if w.is_dirty(child) {
                (seal_page(w, child)?, flags | FRESH)
            } else {
                (old_sum, flags)
            };
            node::set_branch_child(edit::node_mut(w.dirty_mut(pgno)?, i), child, sum, flags);
        }
    }
    Ok(xxhash_rust::xxh3::xxh3_64(w.dirty_mut(pgno)?))
}

fn nd_flags(b: &[u8], pgno: Pgno, i: usize) -> Result<u8> {
    Ok(Page::new(b, pgno)?.leaf(i)?.flags)
}
