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
    let dups = rec.flags & crate::page::record::DUPSORT != 0;
    rec.root_cksum = seal_page(w, rec.root, dups)?;
    rec.mod_txnid = w.txnid;
    Ok(())
}

/// Hashes dirty page `pgno` after sealing the dirty pages below it. The
/// writer keeps `FRESH` exact on dirty pages (set on every link it points
/// at a dirty page, cleared when it copies an older page), so only `FRESH`
/// links are followed: the cost is the dirty pages, not their fan-out.
///
/// In a DUPSORT tree (`dups`), a leaf node that holds a sub-tree record
/// with `FRESH` has a dirty sub-tree: it is sealed first, and its root's
/// checksum and this txnid go into the record in the node.
fn seal_page(w: &mut Writer, pgno: Pgno, dups: bool) -> Result<u64> {
    let mut links: Vec<(usize, Pgno)> = Vec::new();
    let leaf = {
        let b = w.dirty.get(&pgno).map(|b| &b[..]).unwrap_or(&[]);
        let p = Page::new(b, pgno)?;
        if p.is_leaf() {
            if dups {
                p.fresh_subtrees(&mut links)?;
            }
        } else {
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
        p.is_leaf()
    };
    for (i, child) in links {
        if !w.is_dirty(child) {
            return Err(Error::corrupted(
                u64::from(pgno),
                "FRESH link to a page not written by this commit",
            ));
        }
        if leaf {
            seal_subtree(w, pgno, i, child)?;
            continue;
        }
        let sum = seal_page(w, child, dups)?;
        node::set_branch_child(edit::node_mut(w.dirty_mut(pgno)?, i), child, sum, FRESH);
    }
    Ok(crate::page::checksum(w.dirty_mut(pgno)?))
}

/// Seals the dirty duplicate sub-tree rooted at `root`, whose record is the
/// value of node `i` of dirty leaf `pgno`, and stamps the record.
fn seal_subtree(w: &mut Writer, pgno: Pgno, i: usize, root: Pgno) -> Result<()> {
    let sum = seal_page(w, root, false)?;
    let txnid = w.txnid;
    let b = w.dirty_mut(pgno)?;
    let at = {
        let p = Page::new(b, pgno)?;
        let n = p.leaf(i)?;
        node::LEAF_HDR + n.key.len()
    };
    let d = edit::node_mut(b, i);
    let rec = d
        .get_mut(at..at + crate::page::record::RECORD_LEN)
        .ok_or_else(|| Error::corrupted(u64::from(pgno), "sub-tree record outside the page"))?;
    crate::page::record::stamp_root(rec, sum, txnid);
    Ok(())
}
