//! One pass of in-place compaction, as a write transaction: take every
//! reusable free page, and move every page in use that lies where the file
//! should end into the lowest of them (`btree/relocate.rs`). The commit
//! then gives back the free pages that end the file (`Pager::refund_tail`),
//! and the pages the moves freed become reusable once no snapshot can see
//! them, for the next pass. `Env::compact` (`env/compact.rs`) runs passes.

use super::RwTxn;
use crate::btree::walk::RawCursor;
use crate::error::Result;
use crate::order::Order;
use crate::page::record::RECORD_LEN;
use crate::page::{DbRecord, Pgno};
use crate::store::PageStore;
use crate::writer::gc;

/// What one pass found and did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Pass {
    /// Pages in use before it: `next_pgno` minus the reusable free pages.
    pub in_use: u64,
    /// `next_pgno` when it began.
    pub next_before: u64,
    /// Free pages below the target end: as many pages in use lie at or
    /// above it, which a pass moves.
    pub to_move: u64,
    /// Pages at or above the target end that it moved.
    pub moved: u64,
}

impl RwTxn<'_> {
    /// Loads every reusable GC record and moves the pages of every tree
    /// (the catalog, the main database, each named database with its
    /// overflow runs and duplicate sub-trees, and the GC tree itself) that
    /// lie at or above the page count in use to lower free pages. Commit
    /// to make it count.
    ///
    /// # Errors
    ///
    /// `Corrupted` for a damaged tree or GC; those of allocation and page
    /// reads. The transaction must then be aborted.
    pub(crate) fn relocate_tail(&mut self) -> Result<Pass> {
        let r = self.relocate_inner();
        if r.is_err() {
            self.broken = true;
        }
        r
    }

    /// The pages of the GC records this transaction may reuse (txnid at or
    /// below its bound), counted from the records' lengths: a read of the
    /// GC tree's leaves, nothing loaded or claimed.
    ///
    /// # Errors
    ///
    /// `Corrupted` for a damaged GC tree; those of reading pages.
    pub(crate) fn reusable_pages(&self) -> Result<u64> {
        let w = &*self.w;
        let mut c = RawCursor::new(w.view(), w.store.gc, Order::Bytewise);
        let mut n = 0u64;
        let mut e = c.first()?;
        while let Some((k, v)) = e {
            if gc::key_txnid(k).is_none_or(|t| t > w.store.gc_bound) {
                break;
            }
            n += v.len() as u64 / 4;
            e = c.next()?;
        }
        Ok(n)
    }

    /// Loads every reusable GC record and measures what a pass would do,
    /// changing nothing (the caller aborts or goes on with
    /// [`relocate_tail`](RwTxn::relocate_tail)).
    ///
    /// # Errors
    ///
    /// `Corrupted` for a damaged GC; those of reading pages.
    pub(crate) fn measure_tail(&mut self) -> Result<Pass> {
        let w = &mut *self.w;
        while gc::load_record(&mut w.store)? {}
        let p = &w.store.pager;
        let next = u64::from(p.next_pgno);
        let in_use = next.saturating_sub(p.reclaimed.len() as u64);
        let to_move = p
            .reclaimed
            .iter()
            .filter(|&&pg| u64::from(pg) < in_use)
            .count() as u64;
        Ok(Pass {
            in_use,
            next_before: next,
            to_move,
            moved: 0,
        })
    }

    fn relocate_inner(&mut self) -> Result<Pass> {
        let mut pass = self.measure_tail()?;
        if pass.to_move == 0 {
            return Ok(pass);
        }
        let limit = pass.in_use.min(u64::from(Pgno::MAX)) as Pgno;
        let w = &mut *self.w;
        // Named databases first, from the catalog as it is: each moved tree
        // is sealed and its entry rewritten.
        let names = {
            let mut c = RawCursor::new(w.view(), w.catalog, Order::Bytewise);
            let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            let mut e = c.first()?;
            while let Some((k, v)) = e {
                out.push((k.to_vec(), v.to_vec()));
                e = c.next()?;
            }
            out
        };
        for (name, mut entry) in names {
            let Some(mut rec) = entry.get(..RECORD_LEN).and_then(DbRecord::decode) else {
                return Err(crate::Error::corrupted(
                    u64::from(w.catalog.root),
                    "damaged catalog entry",
                ));
            };
            if rec.root == 0 {
                continue;
            }
            let moved = w.tree(&mut rec, Order::Bytewise).relocate(limit)?;
            if !w.store.is_dirty(rec.root) {
                continue;
            }
            pass.moved += moved;
            crate::btree::seal::seal(&mut w.store, &mut rec)?;
            entry[..RECORD_LEN].copy_from_slice(&rec.encode());
            let mut cat = w.catalog;
            let r = w.tree(&mut cat, Order::Bytewise).put(&name, &entry);
            w.catalog = cat;
            r?;
        }
        let mut main = w.main;
        pass.moved += w.tree(&mut main, Order::Bytewise).relocate(limit)?;
        w.main_changed |= main.root != w.main.root;
        w.main = main;
        let mut cat = w.catalog;
        pass.moved += w.tree(&mut cat, Order::Bytewise).relocate(limit)?;
        w.catalog = cat;
        let mut gc = w.store.gc;
        pass.moved += w.tree(&mut gc, Order::Bytewise).relocate(limit)?;
        w.store.gc = gc;
        Ok(pass)
    }
}
