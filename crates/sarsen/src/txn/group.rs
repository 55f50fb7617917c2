//! Group commit: durable commits from several threads of one environment
//! share one `fdatasync` (RocksDB's and PostgreSQL's group commit, without
//! their log; design.md §4, "Group commit").
//!
//! A `Durable` commit writes its pages and its meta page, hands the writer
//! mutex to the next thread, and waits until a sync that began after its
//! meta write has completed. The first waiter that finds no sync running
//! runs one for everyone: it syncs once, then publishes the newest commit
//! the sync covers (readers only ever see durable commits, as without group
//! commit) and wakes the others. Before it syncs, it gives the threads the
//! last sync released a short time to append their next commits
//! ([`Group::gather`]), so that one sync covers every thread that commits
//! in a loop.
//!
//! **The chain.** Commits written but not yet synced form a chain on top of
//! the last published (durable) commit. This environment keeps holding the
//! cross-process writer lock while the chain is not empty, so the next
//! transaction of any thread here builds on its head (`Pending`) instead of
//! on the lock file's published snapshot, and other processes wait, as they
//! would for a commit's sync. The lock is released once the chain is
//! published and no transaction of this environment runs.
//!
//! **Why one sync is enough.** A commit of the chain whose predecessor was
//! not yet durable is written with the `GROUP` flag and `base`, the last
//! durable txnid when it was written. After a system crash, open verifies
//! every page newer than `base` that the commit's trees reach
//! (`recovery.rs`), and falls back past a commit whose pages did not all
//! land. Pages freed by a commit of the chain are not reused before it is
//! durable: the reuse bound of every transaction stops at the durable
//! txnid (design.md §6), which the chain does not move.
//!
//! **Meta slots.** A commit of the chain never overwrites the steady slot
//! (the last durable commit) nor the slot of a sync in progress (the commit
//! it will publish); it may overwrite the head's slot, which holds a commit
//! nobody was told about and nobody can read yet.

use std::sync::{Condvar, Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::io::lock::{Published, WriterShared};
use crate::shared::Shared;

/// A commit written (pages and meta) but not yet published.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pending {
    /// What publishing it makes visible.
    pub p: Published,
    /// The meta slot it was written to.
    pub slot: u8,
}

#[derive(Default)]
struct State {
    /// This environment holds the cross-process writer lock.
    holds_lock: bool,
    /// A transaction (or `Env::sync`) of this environment holds the writer
    /// mutex and works under the writer lock.
    active: bool,
    /// The newest commit of the chain, if it is not yet published.
    head: Option<Pending>,
    /// While a sync runs: the commit it will publish.
    syncing: Option<Pending>,
    /// The newest txnid this environment published durable.
    published: u64,
    /// A sync of the chain failed: commits up to this txnid failed.
    failed_through: u64,
    /// A waiter is gathering the chain before it syncs (the leader of the
    /// next sync): other waiters wait for that sync.
    gathering: bool,
    /// A waiter that must not be kept waiting (`flush`) asked the
    /// gathering leader to sync now.
    hurry: bool,
    /// Commits appended in this environment's life.
    appends: u64,
    /// `appends` when the running sync began: the commits it covers.
    syncing_appends: u64,
    /// `appends` covered by the syncs that published.
    covered_appends: u64,
    /// `appends` when the last sync published.
    published_appends: u64,
    /// Commits the last sync made durable: the threads it released, which
    /// the next sync waits for (see [`Group::gather`]).
    released: u64,
    /// Running mean of a sync's duration, nanoseconds (7/8 old, 1/8 new).
    sync_ns: u64,
}

/// The group-commit state of one environment (one per [`Shared`]).
#[derive(Default)]
pub(crate) struct Group {
    state: Mutex<State>,
    /// Signalled when a sync ends (its commits are published, or failed).
    done: Condvar,
    /// Signalled when a commit is appended while a leader gathers.
    appended: Condvar,
}

impl Group {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts work under the writer lock (a write transaction, `Env::sync`).
    /// Call with the environment's writer mutex held. Takes the
    /// cross-process writer lock unless this environment holds it already,
    /// and returns the chain's head, on which the transaction must build,
    /// if there is one.
    ///
    /// # Errors
    ///
    /// Those of taking the writer lock.
    pub(crate) fn enter(&self, env: &Shared) -> Result<Option<Pending>> {
        let mut g = self.lock();
        g.active = true;
        if g.holds_lock {
            if !env.lock.writer_contended() {
                return Ok(g.head);
            }
            // Another environment (process) waits: publish the chain and
            // let it in before this transaction, so a busy chain cannot
            // keep it out for good.
            drop(g);
            if let Err(e) = self.flush(env) {
                self.leave(env);
                return Err(e);
            }
            g = self.lock();
            if g.holds_lock {
                if g.head.is_some() || g.syncing.is_some() {
                    // Not reached: the writer mutex kept the chain from
                    // growing while it was flushed.
                    return Ok(g.head);
                }
                g.holds_lock = false;
                drop(g);
                env.lock.hand_over_writer();
            }
        } else {
            drop(g);
        }
        // Not under the state mutex: this may wait for another process.
        // No sync of ours runs (the lock is held while one does), so
        // nothing else changes the state meanwhile.
        let r = env.lock.lock_writer();
        let mut g = self.lock();
        match r {
            Ok(()) => {
                g.holds_lock = true;
                Ok(None)
            }
            Err(e) => {
                g.active = false;
                Err(e)
            }
        }
    }

    /// As [`enter`](Group::enter), without waiting: `Ok(None)` when another
    /// environment holds the cross-process writer lock, or waits for it
    /// while this one holds it (work that may be skipped, such as the
    /// automatic compaction after a commit, must never wait for a writer
    /// that may itself be waiting for the committing thread).
    ///
    /// # Errors
    ///
    /// Those of trying the writer lock.
    pub(crate) fn try_enter(&self, env: &Shared) -> Result<Option<Option<Pending>>> {
        let mut g = self.lock();
        if g.holds_lock {
            if env.lock.writer_contended() {
                return Ok(None);
            }
            g.active = true;
            return Ok(Some(g.head));
        }
        drop(g);
        if !env.lock.try_lock_writer()? {
            return Ok(None);
        }
        let mut g = self.lock();
        g.holds_lock = true;
        g.active = true;
        Ok(Some(None))
    }

    /// Ends work under the writer lock. Call with the writer mutex still
    /// held. Releases the writer lock unless the chain still has commits
    /// to publish (the sync that publishes them releases it then).
    pub(crate) fn leave(&self, env: &Shared) {
        let mut g = self.lock();
        g.active = false;
        self.release_if_idle(env, &mut g);
    }

    /// Releases the cross-process writer lock if this environment holds it
    /// with nothing to publish and no transaction running. In a forked
    /// child the lock is the parent's and stays.
    fn release_if_idle(&self, env: &Shared, g: &mut State) {
        if g.holds_lock && !g.active && g.head.is_none() && g.syncing.is_none() {
            g.holds_lock = false;
            if !env.forked() {
                env.lock.unlock_writer();
            }
        }
    }

    /// Whether this environment holds the writer lock (for the reader's
    /// repair of a publish cut short: a publish of ours is never cut short
    /// while we live).
    pub(crate) fn holds_lock(&self) -> bool {
        self.lock().holds_lock
    }

    /// Writes a commit of the chain: `write` gets the slot to use and the
    /// durable txnid, and writes the meta page; the commit becomes the head.
    /// Call with the writer mutex held, for a commit built on `base` (the
    /// head, or the published snapshot when the chain is empty).
    ///
    /// # Errors
    ///
    /// Those of `write`; [`Error::SyncFailed`] if a sync of the chain
    /// failed since this transaction began.
    pub(crate) fn append(
        &self,
        env: &Shared,
        p: Published,
        write: impl FnOnce(u8, &WriterShared) -> Result<()>,
    ) -> Result<()> {
        let mut g = self.lock();
        if g.failed_through != 0 {
            return Err(Error::SyncFailed);
        }
        let ws = env.lock.writer_shared();
        let slot = next_free_slot(
            ws.meta_steady,
            g.syncing.map(|s| s.slot),
            g.head.map(|h| h.slot),
        );
        write(slot, &ws)?;
        g.head = Some(Pending { p, slot });
        g.appends += 1;
        if g.gathering {
            self.appended.notify_one();
        }
        Ok(())
    }

    /// Whether the chain has commits waiting for a sync.
    pub(crate) fn pending(&self) -> bool {
        let g = self.lock();
        g.head.is_some() || g.syncing.is_some()
    }

    /// Waits until commit `txnid` of the chain is durable and published,
    /// running the sync itself if none runs. Call without the writer mutex
    /// (other threads go on committing meanwhile). With `gather`, a thread
    /// that is to run the sync first lets the threads the last sync
    /// released append their next commits ([`gather`](Group::gather));
    /// without it (`flush`), it syncs at once and cuts short any gathering.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] from the sync this thread ran, [`Error::SyncFailed`]
    /// when a sync another thread ran for this commit failed; either way
    /// the commit is not published and, since every later write of the
    /// environment fails until it is reopened, never will be.
    pub(crate) fn wait_durable(&self, env: &Shared, txnid: u64, gather: bool) -> Result<()> {
        let mut g = self.lock();
        loop {
            if g.published >= txnid {
                return Ok(());
            }
            if g.failed_through >= txnid {
                return Err(Error::SyncFailed);
            }
            if g.syncing.is_some() || g.gathering {
                if g.gathering && !gather {
                    g.hurry = true;
                    self.appended.notify_all();
                }
                g = self.done.wait(g).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            if g.head.is_none() {
                // Neither published, failed, syncing nor pending: the
                // commit was never appended here.
                return Err(Error::corrupted(
                    0,
                    format!("commit {txnid} waits for a sync but is not in the chain"),
                ));
            }
            if gather {
                g = self.gather(g);
            }
            let Some(target) = g.head else {
                continue;
            };
            g.syncing = Some(target);
            g.syncing_appends = g.appends;
            drop(g);
            let started = std::time::Instant::now();
            let r = env.sync_data();
            let took = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
            g = self.lock();
            g.sync_ns = match g.sync_ns {
                0 => took,
                m => (m - m / 8).saturating_add(took / 8),
            };
            let ok = r.is_ok();
            self.finish_sync(env, &mut g, target, ok);
            self.done.notify_all();
            if !ok && target.p.txnid >= txnid {
                return r;
            }
        }
    }

    /// Before a sync: waits until the threads the last sync released (its
    /// commits' threads, which usually commit again at once) have appended
    /// their next commits, so this sync covers them too; at most a
    /// quarter of a mean sync, and not at all once a `flush` asks for the
    /// sync.
    ///
    /// Without the wait, the threads split into two cohorts that take
    /// turns: those a sync releases append while the next sync (started
    /// at once by a thread it did not cover) runs without them, so each
    /// sync covers half the threads and each commit waits for two syncs.
    /// One thread never waits here: the only thread the last sync
    /// released is the one appending. (PostgreSQL's `commit_delay` and
    /// MySQL's `binlog_group_commit_sync_delay` wait a fixed time; this
    /// waits only for threads known to be coming back.)
    fn gather<'a>(&self, mut g: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        if g.appends.saturating_sub(g.published_appends) >= g.released {
            return g;
        }
        g.gathering = true;
        // A quarter of a mean sync: long enough for threads that commit
        // in a loop to come back (a commit costs far less than a sync),
        // short enough that a thread that does not come back adds little
        // to the leader's wait; never more than 50 ms, whatever a stalled
        // sync did to the mean.
        let wait = std::time::Duration::from_nanos((g.sync_ns / 4).min(50_000_000));
        let deadline = std::time::Instant::now() + wait;
        while g.appends.saturating_sub(g.published_appends) < g.released && !g.hurry {
            let now = std::time::Instant::now();
            if now >= deadline {
                break;
            }
            g = self
                .appended
                .wait_timeout(g, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        g.gathering = false;
        g.hurry = false;
        g
    }

    /// With the state locked, after the sync for `target`: publish it (it is
    /// durable now, and so is every commit before it), or, if the sync
    /// failed, fail every commit of the chain and erase their metas.
    fn finish_sync(&self, env: &Shared, g: &mut State, target: Pending, ok: bool) {
        g.syncing = None;
        if ok {
            let ws = WriterShared {
                durable_txnid: target.p.txnid,
                meta_current: target.slot,
                meta_steady: target.slot,
                current_steady: true,
            };
            env.lock.publish(&target.p, &ws);
            env.lock.mark_synced(crate::io::lock::monotonic_ns());
            // Every commit of the chain up to the target is durable: the
            // commits appended before the sync began.
            g.released = g.syncing_appends.saturating_sub(g.covered_appends);
            g.covered_appends = g.syncing_appends;
            g.published_appends = g.appends;
            g.published = target.p.txnid;
            if g.head.is_some_and(|h| h.p.txnid == target.p.txnid) {
                g.head = None;
            }
        } else {
            // Every commit of the chain fails; nothing is published. Their
            // metas must not be picked at the next open, which verifies
            // commits of this boot that were never published: put copies
            // of the published meta over them (best effort: the file is
            // failing, and recovery verifies every page from the disk
            // after a failed sync anyway).
            g.failed_through = g.head.map_or(target.p.txnid, |h| h.p.txnid);
            g.head = None;
            let ws = env.lock.writer_shared();
            if let Some(p) = env.lock.try_published(1 << 10) {
                let _ = env.erase_orphan_metas(&p, &ws);
            }
        }
        self.release_if_idle(env, g);
    }

    /// Waits until the chain is published (or failed): before work that
    /// must start from the published snapshot (`Env::sync`, a commit in a
    /// non-durable mode). Call with the writer mutex held, so the chain
    /// does not grow meanwhile.
    ///
    /// # Errors
    ///
    /// Those of [`wait_durable`](Group::wait_durable).
    pub(crate) fn flush(&self, env: &Shared) -> Result<()> {
        let last = {
            let g = self.lock();
            if g.failed_through != 0 {
                return Err(Error::SyncFailed);
            }
            match g.head.or(g.syncing) {
                Some(h) => h.p.txnid,
                None => return Ok(()),
            }
        };
        self.wait_durable(env, last, false)
    }
}

/// The meta slot for a commit of the chain: never the steady one nor the
/// one a running sync will publish; the head's only when no other is left
/// (its commit was never published or acknowledged).
fn next_free_slot(steady: u8, syncing: Option<u8>, head: Option<u8>) -> u8 {
    let steady = steady % 3;
    let taken = |s: u8| s == steady || Some(s) == syncing;
    (0..3u8)
        .find(|&s| !taken(s) && Some(s) != head)
        .or_else(|| (0..3u8).find(|&s| !taken(s)))
        .unwrap_or((steady + 1) % 3)
}

#[cfg(test)]
mod tests {
    use super::next_free_slot;

    #[test]
    fn slot_choice_keeps_the_steady_and_syncing_metas() {
        for steady in 0..3u8 {
            for syncing in [None, Some(0), Some(1), Some(2)] {
                if syncing == Some(steady) {
                    continue;
                }
                for head in [None, Some(0), Some(1), Some(2)] {
                    if head == Some(steady) {
                        continue;
                    }
                    let s = next_free_slot(steady, syncing, head);
                    assert!(s < 3);
                    assert_ne!(s, steady, "{steady} {syncing:?} {head:?}");
                    assert_ne!(Some(s), syncing, "{steady} {syncing:?} {head:?}");
                    // The head is overwritten only when both others are taken.
                    if Some(s) == head {
                        assert!(syncing.is_some() && syncing != head);
                    }
                }
            }
        }
    }
}
