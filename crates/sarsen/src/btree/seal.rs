//! Checksums at commit: a Merkle tree over the B+tree, as redb keeps.
//!
//! Each branch node holds the XXH3-64 of its child page, each overflow
//! reference the XXH3-64 of its run, and the tree record the root's. Only
//! dirty pages are hashed, bottom up along the paths copy-on-write already
//! rewrote. The `FRESH` flag marks a child written by the same commit, so
//! that open can verify exactly the pages of the newest commit.

use crate::error::{Error, Result};
use crate::page::node::{self, FRESH};
use crate::page::{edit, DbRecord, Page, Pgno};
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

/// Hashes dirty page `pgno` after sealing the dirty pages below it. The
/// writer keeps `FRESH` exact on dirty pages (set on every link it points
/// at a dirty page, cleared when it copies an older page), so only `FRESH`
/// links are followed: the cost is the dirty pages, not their fan-out.
fn seal_page(w: &mut Writer, pgno: Pgno) -> Result<u64> {
    let mut links: Vec<(usize, Pgno)> = Vec::new();
    {
        let b = w.dirty.get(&pgno).map(|b| &b[..]).unwrap_or(&[]);
        let p = Page::new(b, pgno)?;
        if !p.is_leaf() {
            p.fresh_links(&mut links)?;
            #[cfg(debug_assertions)]
            for i in 0..p.len() {
                let nd = p.branch(i)?;
                debug_assert!(
                    nd.flags & FRESH != 0 || !w.is_dirty(nd.child),
                    "dirty child {} without FRESH",
                    nd.child
                );
            }
        }
    }
    for (i, child) in links {
        if !w.is_dirty(child) {
            return Err(Error::corrupted(
                u64::from(pgno),
                "FRESH link to a page not written by this commit",
            ));
        }
        let sum = seal_page(w, child)?;
        node::set_branch_child(edit::node_mut(w.dirty_mut(pgno)?, i), child, sum, FRESH);
    }
    Ok(crate::page::checksum(w.dirty_mut(pgno)?))
}
