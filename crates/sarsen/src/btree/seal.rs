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
    // One pass to find the nodes that link to other pages; leaves without
    // overflow values (the common case) need no change before hashing.
    let mut links: Vec<(usize, Pgno, u64, u8)> = Vec::new();
    let leaf = {
        let b = w.dirty.get(&pgno).map(|b| &b[..]).unwrap_or(&[]);
        let p = Page::new(b, pgno)?;
        for i in 0..p.len() {
            if p.is_leaf() {
                let nd = p.leaf(i)?;
                if let LeafValue::Overflow {
                    pgno: run, cksum, ..
                } = nd.value
                {
                    links.push((i, run, cksum, nd.flags));
                }
            } else {
                let nd = p.branch(i)?;
                links.push((i, nd.child, nd.cksum, nd.flags));
            }
        }
        p.is_leaf()
    };
    for (i, target, sum, flags) in links {
        let fresh = w.is_dirty(target);
        let flags = if fresh { flags | FRESH } else { flags & !FRESH };
        if leaf {
            node::set_leaf_overflow(edit::node_mut(w.dirty_mut(pgno)?, i), sum, flags);
        } else {
            let sum = if fresh { seal_page(w, target)? } else { sum };
            node::set_branch_child(edit::node_mut(w.dirty_mut(pgno)?, i), target, sum, flags);
        }
    }
    Ok(xxhash_rust::xxh3::xxh3_64(w.dirty_mut(pgno)?))
}
