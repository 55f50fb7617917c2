//! In-place compaction inside write transactions: take every reusable
//! free page, and move every page in use that lies where the file should
//! end into the lowest of them (`btree/relocate.rs`). The commit then gives
//! back the free pages that end the file (`Pager::refund_tail`), and the
//! pages the moves freed become reusable once no snapshot can see them,
//! for the next transaction to give back.
//!
//! Two callers: `Env::compact` (`env/compact.rs`) runs passes as write
//! transactions of their own ([`RwTxn::relocate_tail`]); the automatic
//! compaction does the same work inside the next commit of the user's own
//! transactions ([`in_commit`]), so that it never adds a commit (a txnid)
//! that no caller made.

use std::sync::atomic::Ordering;

use super::RwTxn;
use crate::btree::walk::RawCursor;
use crate::error::Result;
use crate::order::Order;
use crate::page::record::RECORD_LEN;
use crate::page::{DbRecord, Pgno};
use crate::shared::Shared;
use crate::store::PageStore;
use crate::writer::{gc, TxnState};

/// What a pass found and did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Pass {
    /// Pages in use: `next_pgno` minus the reusable free pages.
    pub in_use: u64,
    /// `next_pgno` when it began.
    pub next_before: u64,
    /// Free pages below the target end (`in_use`): as many pages in use lie
    /// at or above it, which a pass moves.
    pub to_move: u64,
    /// Free pages that end the file (the run below `next_before`): what
    /// the commit gives back without moving anything.
    pub tail: u64,
    /// Pages at or above the target end that it moved.
    pub moved: u64,
}

impl Pass {
    /// What a pass over the free pages `free` (sorted descending) of a file
    /// whose pages in use end at `next` would do.
    fn of(free: &[Pgno], next: u64) -> Pass {
        let in_use = next.saturating_sub(free.len() as u64);
        Pass {
            in_use,
            next_before: next,
            to_move: free.iter().filter(|&&pg| u64::from(pg) < in_use).count() as u64,
            tail: free
                .iter()
                .zip(1..)
                .take_while(|&(&pg, i)| u64::from(pg) + i == next)
                .count() as u64,
            moved: 0,
        }
    }

    /// Pages the pass gives back in the end.
    pub(crate) fn gain(&self) -> u64 {
        self.next_before.saturating_sub(self.in_use)
    }
}

/// What the automatic compaction asks of the next commit
/// (`Shared::compact_due`).
pub(crate) const DUE_NONE: u8 = 0;
/// Move the pages in use out of the tail, then give it back (next commit).
pub(crate) const DUE_RELOCATE: u8 = 1;
/// Give back the free tail (load every reusable record; the commit's
/// refund does the rest).
pub(crate) const DUE_REFUND: u8 = 2;

impl RwTxn<'_> {
    /// The transaction's reuse bound: GC records of commits at or below it
    /// hold pages it may reuse.
    pub(crate) fn gc_bound(&self) -> u64 {
        self.w.store.gc_bound
    }

    /// One pass of `Env::compact`: loads every reusable GC record and moves
    /// the pages of every tree (the catalog, the main database, each named
    /// database with its overflow runs and duplicate sub-trees, and the GC
    /// tree itself) that lie at or above the page count in use to lower
    /// free pages. Commit to make it count.
    ///
    /// # Errors
    ///
    /// `Corrupted` for a damaged tree or GC; those of allocation and page
    /// reads. The transaction is then broken (it can only be aborted).
    pub(crate) fn relocate_tail(&mut self) -> Result<Pass> {
        let env = self.env;
        let r = relocate_loaded(env, &mut self.w);
        if r.is_err() {
            self.broken = true;
        }
        r
    }

    /// What a pass would find, read from the reusable GC records without
    /// loading them (nothing is claimed or changed; the caller drops the
    /// transaction). `None` when fewer than `at_least` pages are free (the
    /// record lengths are summed first; page numbers are collected and
    /// sorted only past that).
    ///
    /// # Errors
    ///
    /// `Corrupted` for a damaged GC tree; those of reading pages.
    pub(crate) fn look(&self, at_least: u64) -> Result<Option<Pass>> {
        let w = &*self.w;
        let mut c = RawCursor::new(w.view(), w.store.gc, Order::Bytewise);
        let reusable = || {
            let groups = w.store.inline.iter();
            groups
                .filter(|(t, _)| *t <= w.store.gc_bound)
                .map(|(_, l)| l)
        };
        let mut n = reusable().map(|l| l.len() as u64).sum::<u64>();
        let mut e = c.first()?;
        while let Some((k, v)) = e {
            if gc::key_txnid(k).is_none_or(|t| t > w.store.gc_bound) {
                break;
            }
            n += v.len() as u64 / 4;
            e = c.next()?;
        }
        if n < at_least {
            return Ok(None);
        }
        let mut free = Vec::with_capacity(n as usize);
        free.extend(reusable().flatten());
        let mut e = c.first()?;
        while let Some((k, v)) = e {
            if gc::key_txnid(k).is_none_or(|t| t > w.store.gc_bound) {
                break;
            }
            free.extend(v.chunks_exact(4).map(|b| crate::page::rd32(b, 0)));
            e = c.next()?;
        }
        free.sort_unstable_by(|a, b| b.cmp(a));
        Ok(Some(Pass::of(&free, u64::from(w.store.pager.next_pgno))))
    }
}

/// The automatic compaction's share of a commit, before anything else of
/// it: if the last look asked for it (`Shared::compact_due`) and this
/// transaction may reuse what it counted, loads every reusable record (the
/// commit then gives back the free tail) and, for [`DUE_RELOCATE`], moves
/// the pages in use out of the tail when that is still worth it; the next
/// commit then gives back what they occupied ([`DUE_REFUND`]).
///
/// # Errors
///
/// Those of loading the GC and moving pages: the commit fails, and the
/// database stays as it was.
pub(crate) fn in_commit(env: &Shared, w: &mut TxnState) -> Result<()> {
    if !due_for(env, w.store.gc_bound) {
        return Ok(());
    }
    let due = env.compact_due.swap(DUE_NONE, Ordering::Relaxed);
    gc::load_all(&mut w.store)?;
    if due != DUE_RELOCATE {
        return Ok(());
    }
    let pass = measure_loaded(w);
    // Moves take at most about twice their count of free pages (a page and
    // an ancestor); with fewer reclaimed, the copies would go to the end.
    let room = w.store.pager.reclaimed.len() as u64;
    if pass.to_move == 0 || pass.to_move.saturating_mul(4) > pass.gain() || room < 2 * pass.to_move
    {
        return Ok(());
    }
    let limit = pass.in_use.min(u64::from(Pgno::MAX)) as Pgno;
    relocate_all(env, w, limit)?;
    // What this commit moves away is reusable from the next bound past it.
    env.due_after.store(w.txnid(), Ordering::Relaxed);
    env.compact_due.store(DUE_REFUND, Ordering::Relaxed);
    Ok(())
}

/// Whether the last look asked a commit for compaction work and a
/// transaction whose reuse bound is `bound` may reuse what it counted
/// (such a transaction loads every reusable record at its start, so that
/// its own allocations take the lowest free pages too).
pub(crate) fn due_for(env: &Shared, bound: u64) -> bool {
    env.compact_due.load(Ordering::Relaxed) != DUE_NONE
        && bound >= env.due_after.load(Ordering::Relaxed)
}

/// What a pass over the loaded records would do (`reclaimed` sorted
/// descending, as `gc::load_all` leaves it).
fn measure_loaded(w: &TxnState) -> Pass {
    let p = &w.store.pager;
    Pass::of(
        &p.reclaimed[p.kept_run.min(p.reclaimed.len())..],
        u64::from(p.next_pgno),
    )
}

/// `Env::compact`'s pass: loads every reusable record and moves what lies
/// at or above the pages in use.
fn relocate_loaded(env: &Shared, w: &mut TxnState) -> Result<Pass> {
    gc::load_all(&mut w.store)?;
    let mut pass = measure_loaded(w);
    if pass.to_move > 0 {
        let limit = pass.in_use.min(u64::from(Pgno::MAX)) as Pgno;
        pass.moved = relocate_all(env, w, limit)?;
    }
    Ok(pass)
}

/// Moves the pages at or above `limit` of every tree: the named databases
/// (through this transaction's view of those it opened, marked changed so
/// that commit writes their entries; through their catalog entries, sealed
/// and rewritten here, for the others), the main database, the catalog and
/// the GC tree. Relocation compares no key, so custom orders need not be
/// known. Returns the pages moved.
fn relocate_all(env: &Shared, w: &mut TxnState, limit: Pgno) -> Result<u64> {
    let mut moved = 0;
    let mut seen_names: Vec<String> = Vec::new();
    for dbi in 1..w.dbs.len() {
        let Some(mut nd) = w.dbs[dbi].take() else {
            continue;
        };
        if let Some(name) = env.registry.name(crate::db::Database { dbi: dbi as u32 })? {
            seen_names.push(name.to_string());
        }
        let r = if nd.exists {
            let before = nd.rec.root;
            w.tree(&mut nd.rec, Order::Bytewise)
                .relocate(limit)
                .map(|m| (m, nd.rec.root != before))
        } else {
            Ok((0, false))
        };
        let (m, changed) = match r {
            Ok(x) => x,
            Err(e) => {
                w.dbs[dbi] = Some(nd);
                return Err(e);
            }
        };
        moved += m;
        nd.dirty |= changed;
        w.dbs[dbi] = Some(nd);
    }
    let names = {
        let mut c = RawCursor::new(w.view(), w.catalog, Order::Bytewise);
        let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut e = c.first()?;
        while let Some((k, v)) = e {
            if !seen_names.iter().any(|n| n.as_bytes() == k) {
                out.push((k.to_vec(), v.to_vec()));
            }
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
        let m = w.tree(&mut rec, Order::Bytewise).relocate(limit)?;
        if !w.store.is_dirty(rec.root) {
            continue;
        }
        moved += m;
        crate::btree::seal::seal(&mut w.store, &mut rec)?;
        entry[..RECORD_LEN].copy_from_slice(&rec.encode());
        let mut cat = w.catalog;
        let r = w.tree(&mut cat, Order::Bytewise).put(&name, &entry);
        w.catalog = cat;
        r?;
    }
    let mut main = w.main;
    moved += w.tree(&mut main, Order::Bytewise).relocate(limit)?;
    w.main_changed |= main.root != w.main.root;
    w.main = main;
    let mut cat = w.catalog;
    moved += w.tree(&mut cat, Order::Bytewise).relocate(limit)?;
    w.catalog = cat;
    let mut gc = w.store.gc;
    moved += w.tree(&mut gc, Order::Bytewise).relocate(limit)?;
    w.store.gc = gc;
    Ok(moved)
}
