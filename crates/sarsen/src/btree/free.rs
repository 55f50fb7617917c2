//! Releasing a whole tree (clear and drop of a database).

use super::{check_depth, Source, Tree, Visited};
use crate::error::{Error, Result};
use crate::page::node::SUBTREE;
use crate::page::{DbRecord, LeafValue, Pgno};
use crate::store::PageStore;

impl<S: PageStore> Tree<'_, S> {
    /// Frees every page of `self.rec` (and its overflow runs) and empties it.
    pub(crate) fn free_tree(&mut self) -> Result<()> {
        if self.rec.root != 0 {
            self.state.clear_hint(self.rec.root);
            let depth = check_depth(self.rec)?;
            let mut seen = Visited::default();
            let dups = self.rec.flags & crate::page::record::DUPSORT != 0;
            self.free_page(self.rec.root, depth, dups, &mut seen)?;
        }
        let flags = self.rec.flags;
        let seq = self.rec.sequence;
        *self.rec = DbRecord {
            flags,
            sequence: seq,
            ..DbRecord::default()
        };
        Ok(())
    }

    /// Frees page `pgno` and everything below it (`seen`: see [`Visited`]),
    /// with the duplicate sub-trees of its leaves in a DUPSORT tree (`dups`).
    fn free_page(
        &mut self,
        pgno: Pgno,
        levels: usize,
        dups: bool,
        seen: &mut Visited,
    ) -> Result<()> {
        seen.enter(pgno)?;
        if levels == 0 {
            return Err(Error::corrupted(
                u64::from(pgno),
                "tree deeper than its recorded depth",
            ));
        }
        let l = self.store.layout();
        let mut children = Vec::new();
        let mut runs = Vec::new();
        let mut subs = Vec::new();
        {
            let p = self.store.view().page(pgno)?;
            if p.is_leaf() != (levels == 1) {
                return Err(super::bad_level(pgno));
            }
            for i in 0..p.len() {
                if p.is_leaf() {
                    let n = p.leaf(i)?;
                    match n.value {
                        LeafValue::Overflow { pgno, len, .. } => {
                            runs.push((pgno, l.overflow_pages(len)))
                        }
                        LeafValue::Inline(v) if dups && n.flags & SUBTREE != 0 => {
                            let r = DbRecord::decode(v).ok_or_else(|| {
                                Error::corrupted(
                                    u64::from(pgno),
                                    "damaged duplicate sub-tree record",
                                )
                            })?;
                            subs.push(r);
                        }
                        LeafValue::Inline(_) => {}
                    }
                } else {
                    children.push(p.branch(i)?.child);
                }
            }
        }
        for c in children {
            self.free_page(c, levels - 1, dups, seen)?;
        }
        for r in subs {
            self.state.clear_hint(r.root);
            let depth = check_depth(&r)?;
            if depth > 0 {
                self.free_page(r.root, depth, false, seen)?;
            }
        }
        for (r, n) in runs {
            self.store.free_run(r, n)?;
        }
        self.store.free(pgno, 1)
    }
}
