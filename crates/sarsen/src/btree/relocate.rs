//! Moving a tree's pages below a page number, for in-place compaction
//! (`env/compact.rs`; redb's `compact`, done by copy-on-write).
//!
//! A page at or above the limit is copied (`PageStore::touch`) to a page
//! the store allocates, lowest free page first, and every page above it on
//! its path is copied too so that its parent can point at the copy. Overflow
//! runs are rewritten into new runs, and duplicate sub-trees are moved the
//! same way, their records rewritten in the (copied) leaf. No entry changes;
//! checksums are recomputed at commit (`seal`), where the `FRESH` marks set
//! here lead.

use super::{check_depth, Source, Tree, Visited};
use crate::error::{Error, Result};
use crate::page::node::{FRESH, LEAF_HDR, SUBTREE};
use crate::page::record::{DUPSORT, RECORD_LEN};
use crate::page::{edit, rd16, wr32, wr64, DbRecord, LeafValue, Page, Pgno};
use crate::store::PageStore;

/// What a walk of one page found below it.
#[derive(Default)]
struct Below {
    /// Branch: (node index, child).
    children: Vec<(usize, Pgno)>,
    /// Leaf: (node index, first page, pages, value length, checksum) of
    /// each overflow run.
    runs: Vec<(usize, Pgno, usize, usize, u64)>,
    /// Leaf of a DUPSORT tree: (node index, record) of each sub-tree.
    subs: Vec<(usize, DbRecord)>,
}

impl<S: PageStore> Tree<'_, S> {
    /// Moves every page of the tree at or above `limit` (and the pages on
    /// the path to it) to pages the store allocates. Returns the number of
    /// pages at or above `limit` that were moved. Pages this transaction
    /// wrote are left where they are (they were allocated lowest first).
    ///
    /// # Errors
    ///
    /// `Corrupted` for a damaged tree (a page reached twice, wrong levels,
    /// an unreadable sub-tree record); those of allocation
    /// (`UpperBoundReached`) and reading pages.
    pub(crate) fn relocate(&mut self, limit: Pgno) -> Result<u64> {
        if self.rec.root == 0 {
            return Ok(0);
        }
        self.state.clear_hint(self.rec.root);
        let depth = check_depth(self.rec)?;
        let dups = self.rec.flags & DUPSORT != 0;
        let mut walk = Walk {
            limit,
            seen: Visited::default(),
            moved: 0,
            leaf_links: dups || self.rec.overflow_pages > 0,
        };
        let root = self.rec.root;
        if let Some(new) = self.move_page(root, depth, dups, &mut walk)? {
            self.rec.root = new;
        }
        Ok(walk.moved)
    }

    /// Moves page `pgno` (`levels` levels above the leaves, inclusive) if
    /// it or anything below it must move. Returns its new number if it
    /// moved (its parent must then point at it).
    fn move_page(
        &mut self,
        pgno: Pgno,
        levels: usize,
        dups: bool,
        walk: &mut Walk,
    ) -> Result<Option<Pgno>> {
        walk.seen.enter(pgno)?;
        if levels == 0 {
            return Err(Error::corrupted(
                u64::from(pgno),
                "tree deeper than its recorded depth",
            ));
        }
        let below = self.below(pgno, levels, dups)?;
        let mut me = pgno;
        if pgno >= walk.limit && !self.store.is_dirty(pgno) {
            me = self.store.touch(pgno)?;
            walk.moved += 1;
        }
        for (i, child) in below.children {
            // A leaf below the limit whose tree keeps no overflow run or
            // sub-tree in its leaves has nothing below it to move: not read.
            if levels == 2 && !walk.leaf_links && child < walk.limit {
                walk.seen.enter(child)?;
                continue;
            }
            if let Some(new) = self.move_page(child, levels - 1, dups, walk)? {
                me = self.own(me)?;
                self.set_child(me, i, new)?;
            }
        }
        for (i, run, n, len, cksum) in below.runs {
            let last = u64::from(run) + n as u64;
            if last <= u64::from(walk.limit) || self.store.is_dirty(run) {
                continue;
            }
            let value = self
                .store
                .view()
                .value(LeafValue::Overflow {
                    pgno: run,
                    len,
                    cksum,
                })?
                .to_vec();
            let (new, sum) = self.store.write_overflow(&value)?;
            self.store.free_run(run, n)?;
            me = self.own(me)?;
            let d = edit::node_mut(self.store.dirty_mut(me)?, i);
            let at = LEAF_HDR + usize::from(rd16(d, 2));
            wr32(d, at, new);
            wr64(d, at + 4, sum);
            d[0] |= FRESH;
            walk.moved += n as u64;
        }
        for (i, mut sub) in below.subs {
            let depth = check_depth(&sub)?;
            if depth == 0 {
                continue;
            }
            self.state.clear_hint(sub.root);
            let ord = self.ord;
            let root = sub.root;
            // A sub-tree's leaves hold bare values: no links.
            let links = std::mem::replace(&mut walk.leaf_links, false);
            let r = self.with(&mut sub, ord).move_page(root, depth, false, walk);
            walk.leaf_links = links;
            let Some(new) = r? else {
                continue;
            };
            sub.root = new;
            me = self.own(me)?;
            let d = edit::node_mut(self.store.dirty_mut(me)?, i);
            let at = LEAF_HDR + usize::from(rd16(d, 2));
            let rec = d.get_mut(at..at + RECORD_LEN).ok_or_else(|| {
                Error::corrupted(u64::from(me), "sub-tree record outside the page")
            })?;
            rec.copy_from_slice(&sub.encode());
            d[0] |= FRESH;
        }
        Ok((me != pgno).then_some(me))
    }

    /// Page `pgno`, dirty in this transaction: copies it first if it is not.
    fn own(&mut self, pgno: Pgno) -> Result<Pgno> {
        if self.store.is_dirty(pgno) {
            Ok(pgno)
        } else {
            self.store.touch(pgno)
        }
    }

    /// The children, overflow runs and sub-trees of page `pgno`, checked to
    /// be at the expected level.
    fn below(&self, pgno: Pgno, levels: usize, dups: bool) -> Result<Below> {
        let l = self.store.layout();
        let p: Page<'_> = self.store.view().page(pgno)?;
        if p.is_leaf() != (levels == 1) {
            return Err(super::bad_level(pgno));
        }
        let mut out = Below::default();
        for i in 0..p.len() {
            if !p.is_leaf() {
                out.children.push((i, p.branch(i)?.child));
                continue;
            }
            let n = p.leaf(i)?;
            match n.value {
                LeafValue::Overflow { pgno, len, cksum } => {
                    out.runs.push((i, pgno, l.overflow_pages(len), len, cksum))
                }
                LeafValue::Inline(v) if dups && n.flags & SUBTREE != 0 => {
                    let r = DbRecord::decode(v).ok_or_else(|| {
                        Error::corrupted(u64::from(pgno), "damaged duplicate sub-tree record")
                    })?;
                    out.subs.push((i, r));
                }
                LeafValue::Inline(_) => {}
            }
        }
        Ok(out)
    }
}

/// The state of one relocation walk.
struct Walk {
    limit: Pgno,
    seen: Visited,
    moved: u64,
    /// Whether the leaves of the tree being walked may hold overflow runs
    /// or duplicate sub-trees (else leaves below the limit are not read).
    leaf_links: bool,
}
