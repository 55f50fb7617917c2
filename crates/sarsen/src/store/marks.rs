//! The page part of nested write transactions (LMDB's nested txns): what
//! a child must put back when it aborts.
//!
//! Dirty pages are not copied when a child begins: the first time the child
//! changes, splits or frees a page that was dirty before it began, the
//! pager keeps a copy of that page's bytes in the child's [`Mark`]
//! (`Pager::save_original`), and pages the child allocates are noted there
//! too. Abort puts the saved bytes back, drops the child's pages and
//! restores the free lists and page counter, so every page number the child
//! took returns to the free lists. Commit keeps the pages as they are and
//! hands the saved originals to the mark below, if any.

use std::collections::hash_map::Entry;

use rustc_hash::FxHashMap;

use super::pager::{Mark, Pager};
use crate::error::Result;
use crate::io::buf::PageBuf;
use crate::page::Pgno;

impl Pager {
    /// Begins a nested transaction: pushes a mark.
    pub(crate) fn mark(&mut self) {
        let m = Mark {
            next_pgno: self.next_pgno,
            freed: self.freed.len(),
            reclaimed: self.reclaimed.clone(),
            kept_run: self.kept_run,
            claims: self.claims.len(),
            pages: FxHashMap::default(),
        };
        self.marks.push(m);
    }

    /// Commits the innermost nested transaction into the one below: the
    /// pages stay; its saved originals go to the mark below, unless that
    /// one has the page already (then its copy is the older one).
    pub(crate) fn fold(&mut self) {
        let Some(m) = self.marks.pop() else {
            return;
        };
        let mut spare = Vec::new();
        match self.marks.last_mut() {
            Some(below) => {
                for (pgno, orig) in m.pages {
                    match below.pages.entry(pgno) {
                        Entry::Vacant(v) => {
                            v.insert(orig);
                        }
                        Entry::Occupied(_) => spare.extend(orig),
                    }
                }
            }
            None => spare.extend(m.pages.into_values().flatten()),
        }
        for b in spare {
            self.recycle_heap(b);
        }
    }

    /// Aborts the innermost nested transaction: drops the pages it
    /// allocated, puts back the bytes of the pages it changed, and
    /// restores the free lists and page counter of its mark. Fails only if
    /// a page's view cannot be made again in write-map mode.
    pub(crate) fn roll_back(&mut self) -> Result<()> {
        let Some(m) = self.marks.pop() else {
            return Ok(());
        };
        self.next_pgno = m.next_pgno;
        debug_assert!(self.freed.len() >= m.freed, "freed shrank in a child");
        self.freed.truncate(m.freed);
        self.reclaimed = m.reclaimed;
        self.kept_run = m.kept_run;
        // The pages the child took from the GC are back in its records,
        // and the pages it freed are back in the trees.
        self.claims.truncate(m.claims);
        // First drop every page the child allocated, so that no view of
        // the map overlaps a page put back below.
        let mut originals = Vec::new();
        for (pgno, orig) in m.pages {
            match orig {
                None => {
                    if let Some(b) = self.dirty.remove(&pgno) {
                        self.recycle(b);
                    }
                }
                Some(o) => originals.push((pgno, o)),
            }
        }
        let mut r = Ok(());
        for (pgno, orig) in originals {
            if let Err(e) = self.put_back(pgno, orig) {
                r = Err(e);
            }
        }
        r
    }

    /// Makes `orig` the bytes of dirty page (or run) `pgno` again.
    fn put_back(&mut self, pgno: Pgno, orig: Box<[u8]>) -> Result<()> {
        if let Some(b) = self.dirty.get_mut(&pgno) {
            if b.len() == orig.len() {
                let old = b.restore(orig);
                self.recycle_heap(old);
                return Ok(());
            }
        }
        // Freed by the child (maybe reallocated at another length): drop
        // whatever is there and make the page again.
        if let Some(b) = self.dirty.remove(&pgno) {
            self.recycle(b);
        }
        let b = if self.map.writable() {
            let n = orig.len() / self.layout.psize;
            let mut b = self.page_buf(pgno, n)?;
            b.copy_from_slice(&orig);
            self.recycle_heap(orig);
            b
        } else {
            PageBuf::heap(orig)
        };
        self.dirty.insert(pgno, b);
        Ok(())
    }

    /// Forgets every mark (the outermost transaction ends).
    pub(crate) fn drop_marks(&mut self) {
        while !self.marks.is_empty() {
            self.fold();
        }
    }
}
