//! In-place compaction ([`Env::compact`], redb's `Database::compact`), the
//! automatic compaction's look after commits, and the truncation attempt
//! after them (libmdbx's continuous compaction goes as far as giving back a
//! free tail; this also moves pages in use out of the tail).
//!
//! `Env::compact` is a few write transactions of its own
//! (`txn/compact.rs`): the first moves every page in use at or above the
//! target end into the lowest free pages; its commit gives back the free
//! tail it can, and the next one the pages the moves freed (reusable once
//! no snapshot can see them); it stops when a pass neither moves a page nor
//! lowers the end. Then the file is truncated (`txn/shrink.rs`). The
//! automatic compaction does the same work inside the callers' own next
//! commits (`txn/compact.rs::in_commit`), after a look here asks for it.
//! Readers keep their snapshots throughout: nothing a live snapshot can
//! reach is reused or cut, so with an old reader open a compaction gives
//! back little or nothing, and the rest after it ends.

use std::sync::atomic::Ordering;

use super::Env;
use crate::error::Result;
use crate::options::Durability;
use crate::shared::Shared;
use crate::txn::compact::{DUE_NONE, DUE_REFUND, DUE_RELOCATE};
use crate::txn::shrink::{self, Cut};
use crate::txn::RwTxn;

/// What [`Env::compact`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Compaction {
    /// The data file's length before, bytes.
    pub len_before: u64,
    /// The data file's length after, bytes.
    pub len_after: u64,
    /// Pages in use that were moved to lower pages.
    pub pages_moved: u64,
    /// Write transactions committed (each a durable commit, except in a
    /// `NoSync` environment).
    pub commits: u32,
}

/// Passes after which a compaction stops even if it still makes progress
/// (each pass moves what the previous one could not: the GC's own pages,
/// pages blocked by readers that have since ended).
const MAX_PASSES: u32 = 8;

impl Env {
    /// Compacts the data file in place (redb's `Database::compact`): moves
    /// the pages in use into the lowest free pages and truncates the file
    /// right after the last page anyone may read, without the sparse
    /// margin (it is added again when the file next grows). Each step is a
    /// commit of its own, durable outside a `NoSync` environment, so a
    /// crash at any point leaves a file that opens at a committed state
    /// holding the same data. Readers keep
    /// their snapshots, in every process: pages they can reach are neither
    /// reused nor cut, so the file shrinks less while an old snapshot is
    /// open (a later `compact`, or the automatic one, takes the rest).
    ///
    /// Takes the writer lock for each step, like any write transaction.
    /// With an old snapshot open, little or nothing is given back (the
    /// pages a pass moves stay in that snapshot).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let env = unsafe { sarsen::Env::open(dir.path()) }.unwrap();
    /// let db = env.main_db();
    /// let mut w = env.write_txn()?;
    /// for i in 0..20_000u32 {
    ///     w.put(db, &i.to_be_bytes(), &[7u8; 100])?;
    /// }
    /// w.commit()?;
    /// let mut w = env.write_txn()?;
    /// for i in 0..19_000u32 {
    ///     w.delete(db, &i.to_be_bytes())?;
    /// }
    /// w.commit()?;
    /// let c = env.compact()?;
    /// assert!(c.len_after < c.len_before);
    /// assert_eq!(env.read_txn()?.get(db, &19_999u32.to_be_bytes())?, Some(&[7u8; 100][..]));
    /// # Ok::<(), sarsen::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::ReadOnly`](crate::Error::ReadOnly) in a read-only
    /// environment; those of [`write_txn`](Env::write_txn) and
    /// [`RwTxn::commit`](crate::RwTxn::commit); `Corrupted` if a tree or
    /// the GC is damaged. Steps committed before an error stay committed
    /// (each holds the same data).
    pub fn compact(&self) -> Result<Compaction> {
        compact(&self.shared)
    }
}

/// Whether work under the writer lock waits for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    /// Wait, as any write transaction does (`Env::compact`).
    Block,
    /// Skip the work when another thread or process has the writer: the
    /// automatic compaction runs in a thread whose commit has not returned
    /// yet, and a writer that took the lock may be waiting for that return
    /// (waiting here would deadlock).
    Skip,
}

/// Runs compaction passes, each a write transaction of its own, then cuts
/// the file right after the last page anyone may read.
fn compact(env: &Shared) -> Result<Compaction> {
    let _busy = Busy::enter(env);
    let mut c = Compaction {
        len_before: env.file.len()?,
        ..Compaction::default()
    };
    let mut last_next = env.published()?.next_pgno;
    for _ in 0..MAX_PASSES {
        let mut txn = RwTxn::begin(env)?;
        // Durable, so that the next pass may reuse what this one freed (a
        // `NoSync` environment reuses freed pages without a sync).
        if env.durability != Durability::NoSync {
            txn.set_durability(Durability::Durable);
        }
        let pass = txn.relocate_tail()?;
        txn.commit()?;
        c.commits += 1;
        c.pages_moved += pass.moved;
        let next = env.published()?.next_pgno;
        if pass.moved == 0 && next >= last_next {
            break;
        }
        last_next = next;
    }
    with_writer(env, Wait::Block, |env| shrink::shrink(env, Cut::Exact))?;
    c.len_after = env.file.len()?;
    Ok(c)
}

/// Runs `f` with the writer lock held and every commit of this
/// environment's group-commit chain published (as `Env::sync` does).
/// `Ok(None)` if skipped: `Wait::Skip` and the writer busy, or commits of
/// the chain waiting for their sync.
fn with_writer<T>(
    env: &Shared,
    wait: Wait,
    f: impl FnOnce(&Shared) -> Result<T>,
) -> Result<Option<T>> {
    env.check_fork()?;
    env.check_synced()?;
    let _g = match wait {
        Wait::Block => {
            let g = env.writer.lock().unwrap_or_else(|e| e.into_inner());
            env.group.flush(env)?;
            if env.group.enter(env)?.is_some() {
                env.group.leave(env);
                return Err(crate::Error::corrupted(
                    0,
                    "group-commit chain grew under the writer mutex",
                ));
            }
            g
        }
        Wait::Skip => {
            let Some(g) = env.try_lock_writer_mutex() else {
                return Ok(None);
            };
            match env.group.try_enter(env)? {
                None => return Ok(None),
                Some(Some(_)) => {
                    env.group.leave(env);
                    return Ok(None);
                }
                Some(None) => g,
            }
        }
    };
    let r = env
        .map
        .refresh_after_shrinks(env.lock.shrinks())
        .and_then(|()| f(env));
    env.group.leave(env);
    r.map(Some)
}

/// After a commit that succeeded (`freed`: the pages it freed from its
/// trees): counts them, and once the pages freed since the last look reach
/// a quarter of the shrink threshold (times a back-off) and no snapshot
/// can see them any more, looks at the GC ([`look`]), which may ask the
/// next commit to compact. Then cuts the file if it runs past its pages in
/// use by the threshold (an attempt that cuts nothing, held back by a
/// reader or the durable commit, makes the next ones wait a doubling
/// number of commits, at most 16, until the end of the pages in use moves
/// back). Never waits for the writer: a writer that took it
/// may be waiting for this commit to return, so work that finds it busy is
/// skipped and retried after a later commit. Errors are dropped: the commit
/// is done and durable as its mode says.
pub(crate) fn after_commit(env: &Shared, freed: u64, txnid: u64) {
    if env.shrink_bytes == 0 || env.read_only || env.compacting() {
        return;
    }
    env.freed_since_compact.fetch_add(freed, Ordering::Relaxed);
    maybe_look(env, txnid);
    let Ok(p) = env.published() else {
        return;
    };
    if !shrink::worth_a_look(env, env.map.known_len(), p.next_pgno) {
        return;
    }
    // A lower end of the pages in use may let a cut through at once.
    if env.shrink_last_next.swap(p.next_pgno, Ordering::Relaxed) > p.next_pgno {
        env.shrink_skip.store(0, Ordering::Relaxed);
        env.shrink_backoff.store(0, Ordering::Relaxed);
    }
    let skip = env.shrink_skip.load(Ordering::Relaxed);
    if skip > 0 {
        env.shrink_skip.store(skip - 1, Ordering::Relaxed);
        return;
    }
    let cut = with_writer(env, Wait::Skip, |env| shrink::shrink(env, Cut::Threshold));
    let next_skip = match cut {
        Ok(Some(Some(_))) | Ok(None) => 0,
        _ => (env.shrink_backoff.load(Ordering::Relaxed) * 2).clamp(1, 16),
    };
    env.shrink_backoff.store(next_skip, Ordering::Relaxed);
    env.shrink_skip.store(next_skip, Ordering::Relaxed);
}

/// After `Env::sync` made the newest commit durable: the look the commits
/// of a non-durable mode could not make (their freed pages were not yet
/// durable). Never waits for the writer.
pub(crate) fn after_sync(env: &Shared) {
    if env.shrink_bytes == 0 || env.read_only || env.compacting() {
        return;
    }
    if let Ok(p) = env.published() {
        maybe_look(env, p.txnid);
    }
}

/// Looks at the GC ([`look`]) once the pages freed since the last look
/// reach a quarter of the shrink threshold (times a back-off) and the
/// commit that brought them there (`txnid`, remembered until the look
/// runs) is one no snapshot can see past: its freed pages, and all counted
/// before, are then reusable.
fn maybe_look(env: &Shared, txnid: u64) {
    let ps = u64::from(env.page_size);
    let look_every = (env.shrink_bytes / ps / 4)
        .max(1)
        .saturating_mul(env.compact_backoff.load(Ordering::Relaxed).max(1));
    if env.freed_since_compact.load(Ordering::Relaxed) < look_every {
        return;
    }
    // The first commit past the count: later ones must not push it on, or
    // readers that overlap every commit would hold the look back forever.
    let _ = env
        .look_after
        .compare_exchange(0, txnid, Ordering::Relaxed, Ordering::Relaxed);
    if reusable(env, env.look_after.load(Ordering::Relaxed)) {
        let _ = look(env);
    }
}

/// Whether pages freed by commit `after` and before are reusable: no
/// reader holds an older snapshot, and (outside `NoSync`) it is durable.
fn reusable(env: &Shared, after: u64) -> bool {
    let ws = env.lock.writer_shared();
    if env.durability != Durability::NoSync && ws.durable_txnid < after {
        return false;
    }
    env.lock
        .oldest_reader(env.token)
        .ok()
        .flatten()
        .is_none_or(|o| o >= after)
}

/// The automatic compaction's look, in a write transaction that is then
/// dropped (it commits nothing; the writer is tried, never waited for):
/// the reusable GC records' lengths first, then, past the shrink threshold,
/// their pages. It asks the next commit (`txn/compact.rs::in_commit`) to
/// move the pages in use out of the tail when at least three quarters of
/// the file's pages are free (the file is over four times its data; a mass
/// delete then compacts only a few times), the file would give back at
/// least the threshold, and at most a quarter as many pages must move as
/// are given back (`EnvOptions::auto_compact`); else to give back the free
/// tail when that reaches the threshold. A look that finds the threshold
/// free but asks nothing doubles the freed pages the next one waits for
/// (up to 64 times), so a fragmented file is not scanned after every few
/// commits.
fn look(env: &Shared) -> Result<()> {
    let ps = u64::from(env.page_size);
    let Some(txn) = RwTxn::try_begin(env)? else {
        return Ok(());
    };
    // Counted from here: a look skipped for a busy writer is retried.
    env.freed_since_compact.store(0, Ordering::Relaxed);
    env.look_after.store(0, Ordering::Relaxed);
    let at_least = env.shrink_bytes.div_ceil(ps);
    let pass = txn.look(at_least)?;
    // What it counted is reusable by a transaction whose bound is at least
    // the look's own.
    let bound = txn.gc_bound();
    drop(txn);
    // Little free (the cheap sum alone): nothing to back off from.
    let Some(pass) = pass else {
        return Ok(());
    };
    let p = pass;
    let relocate = env.auto_compact
        && p.gain() >= p.in_use.saturating_mul(3)
        && p.gain().saturating_mul(ps) >= env.shrink_bytes
        && p.to_move > 0
        && p.to_move.saturating_mul(4) <= p.gain();
    let due = if relocate {
        DUE_RELOCATE
    } else if p.tail.saturating_mul(ps) >= env.shrink_bytes {
        DUE_REFUND
    } else {
        DUE_NONE
    };
    if due == DUE_NONE {
        let b = env.compact_backoff.load(Ordering::Relaxed).max(1);
        env.compact_backoff
            .store((b * 2).min(64), Ordering::Relaxed);
    } else {
        env.compact_backoff.store(1, Ordering::Relaxed);
        env.due_after.store(bound, Ordering::Relaxed);
        env.compact_due.store(due, Ordering::Relaxed);
    }
    Ok(())
}

/// Marks a compaction under way in this environment, so that its own
/// commits do not start another (`after_commit`). The flag is cleared by
/// the guard that set it (`.1`), not by a nested one.
struct Busy<'a>(&'a Shared, bool);

impl<'a> Busy<'a> {
    fn enter(env: &'a Shared) -> Busy<'a> {
        let was = env.compacting.swap(true, Ordering::AcqRel);
        Busy(env, !was)
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        if self.1 {
            self.0.compacting.store(false, Ordering::Release);
        }
    }
}

impl Shared {
    /// Whether a compaction of this environment is under way.
    pub(crate) fn compacting(&self) -> bool {
        self.compacting.load(Ordering::Acquire)
    }
}
