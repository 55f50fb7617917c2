//! In-place compaction ([`Env::compact`], redb's `Database::compact`) and
//! its automatic form after commits that free much (libmdbx's continuous
//! compaction goes as far as giving back a free tail; this also moves
//! pages in use out of the tail).
//!
//! A compaction is a few write transactions (`txn/compact.rs`): the first
//! moves every page in use at or above the target end into the lowest free
//! pages; its commit gives back the free tail it can, and the next one the
//! pages the moves freed (reusable once no snapshot can see them); it stops
//! when a pass neither moves a page nor lowers the end. Then the file is
//! truncated (`txn/shrink.rs`). Readers keep their snapshots throughout:
//! nothing a live snapshot can reach is reused or cut, so with an old
//! reader open a compaction gives back less, and the rest after it ends.

use std::sync::atomic::Ordering;

use super::Env;
use crate::error::Result;
use crate::options::Durability;
use crate::shared::Shared;
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
    /// Write transactions committed (each a durable commit).
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
    /// durable commit of its own, so a crash at any point leaves a file
    /// that opens at a committed state holding the same data. Readers keep
    /// their snapshots, in every process: pages they can reach are neither
    /// reused nor cut, so the file shrinks less while an old snapshot is
    /// open (a later `compact`, or the automatic one, takes the rest).
    ///
    /// Takes the writer lock for each step, like any write transaction.
    /// An environment without a lock file ([`EnvOptions::no_lock`](crate::EnvOptions::no_lock))
    /// moves pages but does not truncate.
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
        compact(&self.shared, Cut::Exact)
    }
}

/// Runs compaction passes, then truncates as `cut` says.
pub(crate) fn compact(env: &Shared, cut: Cut) -> Result<Compaction> {
    let _busy = Busy::enter(env);
    let mut c = Compaction {
        len_before: env.file.len()?,
        ..Compaction::default()
    };
    let mut last_next = u64::MAX;
    for _ in 0..MAX_PASSES {
        let mut txn = RwTxn::begin(env)?;
        // Durable, so that the next pass may reuse what this one freed.
        txn.set_durability(Durability::Durable);
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
    with_writer(env, |env| shrink::shrink(env, cut))?;
    // The count of freed pages stays: if a reader held some back, the
    // automatic compaction after a later commit takes them.
    c.len_after = env.file.len()?;
    Ok(c)
}

/// Runs `f` with the writer lock held and every commit of this
/// environment's group-commit chain published (as `Env::sync` does).
pub(crate) fn with_writer<T>(env: &Shared, f: impl FnOnce(&Shared) -> Result<T>) -> Result<T> {
    env.check_fork()?;
    env.check_synced()?;
    let _g = env.writer.lock().unwrap_or_else(|e| e.into_inner());
    env.group.flush(env)?;
    if env.group.enter(env)?.is_some() {
        env.group.leave(env);
        return Err(crate::Error::corrupted(
            0,
            "group-commit chain grew under the writer mutex",
        ));
    }
    env.map.refresh_after_shrinks(env.lock.shrinks())?;
    let r = f(env);
    env.group.leave(env);
    r
}

/// After a commit that succeeded (`freed`: the pages it freed from its
/// trees): counts them, and once the pages freed since the last look reach
/// a quarter of the shrink threshold (times a back-off) and no snapshot
/// can see them any more, looks at the GC ([`auto_compact`]). Otherwise,
/// cuts the file if it runs past its pages in use by the threshold.
/// Errors are dropped: the commit is done and durable as its mode says,
/// and what this leaves undone is retried after a later commit.
pub(crate) fn after_commit(env: &Shared, freed: u64, txnid: u64) {
    if env.shrink_bytes == 0 || env.read_only || env.compacting() {
        return;
    }
    let ps = u64::from(env.page_size);
    let pending = env.freed_since_compact.fetch_add(freed, Ordering::Relaxed) + freed;
    if freed > 0 {
        env.compact_after.fetch_max(txnid, Ordering::Relaxed);
    }
    let look_every = (env.shrink_bytes / ps / 4)
        .max(1)
        .saturating_mul(env.compact_backoff.load(Ordering::Relaxed).max(1));
    if env.auto_compact && pending >= look_every && reusable(env) {
        let _ = auto_compact(env);
        return;
    }
    let Ok(p) = env.published() else {
        return;
    };
    if shrink::worth_a_look(env, env.map.known_len(), p.next_pgno) {
        let _ = with_writer(env, |env| shrink::shrink(env, Cut::Threshold));
    }
}

/// Whether the pages freed by the commits counted so far are reusable:
/// no reader holds a snapshot older than the newest of them, and (outside
/// `NoSync`) it is durable.
fn reusable(env: &Shared) -> bool {
    let after = env.compact_after.load(Ordering::Relaxed);
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

/// The automatic compaction. A look at the GC's reusable pages (the
/// lengths of its records) says how much a compaction could give back; if
/// that reaches the shrink threshold, a measure of the pages in use above
/// the target end says what it would move, and the file is compacted when
/// that is at most a quarter of what it gives back (a file emptied by
/// deletes whose remaining pages are low needs only its free tail cut,
/// which a pass does without moving anything). A measure that finds too
/// much to move doubles the freed pages the next look waits for (up to
/// 64 times), so a fragmented file is not measured after every few
/// commits.
fn auto_compact(env: &Shared) -> Result<()> {
    // One at a time: another thread of this environment may be at it.
    let busy = Busy::enter(env);
    if !busy.1 {
        return Ok(());
    }
    env.freed_since_compact.store(0, Ordering::Relaxed);
    let ps = u64::from(env.page_size);
    let free = RwTxn::begin(env)?.reusable_pages()?;
    if free.saturating_mul(ps) >= env.shrink_bytes {
        let pass = RwTxn::begin(env)?.measure_tail()?;
        let gain = pass.next_before.saturating_sub(pass.in_use);
        if gain.saturating_mul(ps) >= env.shrink_bytes && pass.to_move.saturating_mul(4) <= gain {
            env.compact_backoff.store(1, Ordering::Relaxed);
            compact(env, Cut::Threshold)?;
            return Ok(());
        }
        let b = env.compact_backoff.load(Ordering::Relaxed).max(1);
        env.compact_backoff.store((b * 2).min(64), Ordering::Relaxed);
    }
    with_writer(env, |env| shrink::shrink(env, Cut::Threshold))?;
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
