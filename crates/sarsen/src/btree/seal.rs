//! Checksums at commit: a Merkle tree over the B+tree, as redb keeps.
//!
//! Each branch node holds the XXH3-64 of its child page, each overflow
//! reference the XXH3-64 of its run, and the tree record the root's. Only
//! dirty pages are hashed, bottom up along the paths copy-on-write already
//! rewrote. The `FRESH` flag marks a child written by the same commit, so
//! that open can verify exactly the pages of the newest commit.
//!
//! Invariant on a dirty page, between operations: every link to a dirty
//! page (child, overflow run, duplicate sub-tree root) carries `FRESH`,
//! because the writer sets it whenever it points a link at a page it
//! allocated. A link to a clean page may still carry the `FRESH` of the
//! older commit the page was copied from: copy-on-write copies the page
//! as it is, and sealing clears those stale marks. Clearing them here
//! rather than at the copy visits only the marked links, where the copy
//! would rewrite every node of every copied page.

use super::Visited;
use crate::error::{Error, Result};
use crate::page::node::{self, FRESH, SUBTREE};
use crate::page::{edit, DbRecord, Page, Pgno};
use crate::store::PageStore;

/// Computes the checksums of the dirty part of `rec` and stamps the root's.
pub(crate) fn seal<S: PageStore>(s: &mut S, rec: &mut DbRecord) -> Result<()> {
    if rec.root == 0 || !s.is_dirty(rec.root) {
        return Ok(());
    }
    let dups = rec.flags & crate::page::record::DUPSORT != 0;
    let tree = Tree {
        // Leaves carry `FRESH` marks only on overflow references and
        // sub-tree records: in a tree with neither there are none to clear,
        // and the leaves need no scan.
        leaf_links: dups || rec.overflow_pages > 0,
        dups,
    };
    let mut cx = Walk::default();
    rec.root_cksum = seal_page(s, rec.root, tree, &mut cx)?;
    rec.mod_txnid = s.txnid();
    Ok(())
}

/// The state of one seal's walk.
#[derive(Default)]
struct Walk {
    /// Pages reached so far (see [`seal_page`]).
    seen: Visited,
    /// The `FRESH` links of the pages on the walk's path, a segment per
    /// page, the deepest last: one buffer for the whole walk rather than a
    /// list per page.
    links: Vec<(usize, Pgno, u8)>,
}

/// What sealing needs to know of the tree a page belongs to.
#[derive(Clone, Copy)]
struct Tree {
    /// Whether its leaves may hold `FRESH` links (overflow values or
    /// duplicate sub-trees).
    leaf_links: bool,
    /// Whether it is a DUPSORT tree (its sub-trees are sealed with it).
    dups: bool,
}

/// Hashes dirty page `pgno` after sealing the dirty pages below it,
/// following only `FRESH` links (the cost is the dirty pages, not their
/// fan-out) and clearing the stale ones, whose target is not dirty.
///
/// A page reached twice (`Walk::seen`) is an error: each page has one parent,
/// and a damaged free list that handed out a live page could otherwise
/// make a cycle.
fn seal_page<S: PageStore>(s: &mut S, pgno: Pgno, tree: Tree, cx: &mut Walk) -> Result<u64> {
    cx.seen.enter(pgno)?;
    let start = cx.links.len();
    let leaf = {
        let b = s.dirty(pgno).map(|b| &b[..]).unwrap_or(&[]);
        let p = Page::new(b, pgno)?;
        if p.is_leaf() {
            if tree.leaf_links {
                p.fresh_leaf_links(&mut cx.links)?;
            }
        } else {
            p.fresh_links(&mut cx.links)?;
            // Debug builds check every link (release builds pay only for
            // the marked ones). Only a damaged GC that handed out a page a
            // tree still links to breaks this, so it is an error, not an
            // assertion: a hostile file must not make a debug build panic.
            #[cfg(debug_assertions)]
            for i in 0..p.len() {
                let nd = p.branch(i)?;
                if nd.flags & FRESH == 0 && s.is_dirty(nd.child) {
                    return Err(Error::corrupted(
                        u64::from(nd.child),
                        "dirty child linked without FRESH (a free page still in a tree)",
                    ));
                }
            }
        }
        p.is_leaf()
    };
    let end = cx.links.len();
    // A leaf hashed since its last change (`Writer::touch`) needs nothing
    // more in a tree whose leaves hold no links: it is neither loaded again
    // nor sealed, its kept checksum goes into the branch.
    let use_kept = !leaf && !tree.leaf_links;
    for &(_, target, _) in &cx.links[start..end.min(start + PREFETCH_AHEAD)] {
        prefetch_dirty(s, target, use_kept);
    }
    for n in start..end {
        let (i, target, flags) = cx.links[n];
        // The dirty pages were written while the transaction ran and are
        // cold by now: keep loading the next ones while this one is sealed.
        if n + PREFETCH_AHEAD < end {
            prefetch_dirty(s, cx.links[n + PREFETCH_AHEAD].1, use_kept);
        }
        // `None`: not dirty; else the checksum the buffer kept, if any.
        let dirty = match s.dirty(target) {
            Some(b) if target != 0 => Some(b.leaf_checksum().filter(|_| use_kept)),
            _ => None,
        };
        match dirty {
            None => {
                // Stale: the target was written by an older commit.
                let at = if leaf { 0 } else { 12 };
                edit::node_mut(s.dirty_mut(pgno)?, i)[at] &= !FRESH;
            }
            Some(_) if leaf => {
                // Else a dirty overflow run, whose checksum was set when it
                // was written.
                if flags & SUBTREE != 0 && tree.dups {
                    seal_subtree(s, pgno, i, target, cx)?;
                }
            }
            Some(kept) => {
                let sum = match kept {
                    Some(sum) => {
                        cx.seen.enter(target)?;
                        sum
                    }
                    None => seal_page(s, target, tree, cx)?,
                };
                node::set_branch_child(edit::node_mut(s.dirty_mut(pgno)?, i), target, sum, FRESH);
            }
        }
    }
    cx.links.truncate(start);
    let b = s
        .dirty(pgno)
        .ok_or_else(|| Error::corrupted(u64::from(pgno), "page expected dirty is not"))?;
    // A leaf whose links left it unchanged keeps the checksum it had.
    Ok(b.leaf_checksum()
        .unwrap_or_else(|| crate::page::checksum(b)))
}

/// How many dirty children ahead seal asks for. Once leaves are hashed
/// behind the writer, sealing a branch is short, and one page ahead leaves
/// part of the next one's load exposed; more than two ahead gains nothing.
const PREFETCH_AHEAD: usize = 2;

/// Starts loading dirty page `pgno` into the cache, if it is dirty (and,
/// with `use_kept`, if seal will need its bytes: it kept no checksum).
fn prefetch_dirty<S: PageStore>(s: &S, pgno: Pgno, use_kept: bool) {
    if let Some(b) = s.dirty(pgno) {
        if use_kept && b.leaf_checksum().is_some() {
            return;
        }
        crate::page::prefetch(&b[..s.layout().psize.min(b.len())]);
    }
}

/// Seals the dirty duplicate sub-tree rooted at `root`, whose record is the
/// value of node `i` of dirty leaf `pgno`, and stamps the record.
fn seal_subtree<S: PageStore>(
    s: &mut S,
    pgno: Pgno,
    i: usize,
    root: Pgno,
    cx: &mut Walk,
) -> Result<()> {
    let sub = Tree {
        leaf_links: false,
        dups: false,
    };
    let sum = seal_page(s, root, sub, cx)?;
    let txnid = s.txnid();
    let b = s.dirty_mut(pgno)?;
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
