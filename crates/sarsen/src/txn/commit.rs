//! Commit: checksums, GC, page writes, the meta page, sync, publish.
//!
//! Order of a commit of txnid T:
//! 1. write each changed database's catalog entry (record and settings);
//! 2. save the freed pages under T ([`gc::save`]): in the meta's inline GC
//!    when the lists fit, else in the GC tree;
//! 3. seal the trees: checksums bottom-up over dirty pages;
//! 4. grow the file, write the dirty pages (sorted, coalesced `pwritev`);
//! 5. write the meta page into a slot that is neither the current nor the
//!    last durable one, and sync as the durability mode says;
//! 6. publish the snapshot in the lock file: the commit point for readers.
//!
//! In `Durable` mode steps 4 and 5 end with a single `fdatasync`: should
//! the system crash before it completes, the meta may be on disk while
//! some pages are not; open then finds a checksum mismatch among the pages
//! of T and falls back to T-1, whose pages T never overwrote.

use crate::btree::seal;
use crate::error::{Error, Result};
use crate::io::buf::PageBuf;
use crate::io::lock::Published;
use crate::options::Durability;
use crate::page::meta::{self, Meta, META_LEN};
use crate::page::Pgno;
use crate::shared::Shared;
use crate::writer::{gc, TxnState};

/// Writes each changed database's catalog entry: its record (sealed) and
/// settings; for the main database (index 0), its settings under the empty
/// name, with a zero record.
fn write_catalog(env: &Shared, w: &mut TxnState, entry: &mut Vec<u8>) -> Result<()> {
    for dbi in 0..w.dbs.len() {
        let Some(mut nd) = w.dbs[dbi].clone() else {
            continue;
        };
        if !nd.dirty || !nd.exists {
            continue;
        }
        if dbi == 0 {
            nd.rec = crate::page::DbRecord::default();
        } else {
            seal::seal(&mut w.store, &mut nd.rec)?;
        }
        let name = env
            .registry
            .name(crate::db::Database { dbi: dbi as u32 })?
            .unwrap_or_default();
        let e = crate::page::CatalogEntry {
            rec: nd.rec,
            merge: nd.merge.as_deref(),
            comparator: nd.comparator.as_deref(),
            canary: nd.canary,
            dup_comparator: nd.dup_comparator.as_deref(),
        };
        e.encode(entry);
        let mut cat = w.catalog;
        w.tree(&mut cat, crate::order::Order::Bytewise)
            .put(name.as_bytes(), entry)?;
        w.catalog = cat;
    }
    Ok(())
}

/// What a commit left to do once the writer mutex is released.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Nothing: the commit is published (and as durable as its mode says),
    /// or there was nothing to commit.
    Done,
    /// The commit with this txnid is written, in the group-commit chain:
    /// it is durable and visible once a sync covers it
    /// ([`Group::wait_durable`](super::group::Group::wait_durable)).
    Pending(u64),
}

/// Commits the writer's transaction.
pub(crate) fn commit(env: &Shared, w: &mut TxnState) -> Result<Outcome> {
    let dbs_dirty = w.dbs.iter().flatten().any(|n| n.dirty);
    let empty =
        w.pager().dirty.is_empty() && w.pager().freed.is_empty() && !dbs_dirty && !w.main_changed;
    if !empty {
        // The automatic compaction's share, if the last look asked for it.
        super::compact::in_commit(env, w)?;
    }
    // Free pages ending the file go back to its unallocated end, before
    // the GC is saved so that no record lists them (a transaction that
    // only loaded such pages commits for this alone: compaction's last
    // pass).
    let refunded = w.store.pager.refund_tail();
    if empty && refunded == 0 {
        return Ok(Outcome::Done);
    }
    // A sync that failed since this transaction began (a sync of this
    // environment's group-commit chain, whose head it may build on, or any
    // process's) leaves nothing this transaction could publish safely.
    env.check_synced()?;
    let mut entry = std::mem::take(&mut w.merge_buf);
    let r = write_catalog(env, w, &mut entry);
    w.merge_buf = entry;
    r?;
    gc::save(&mut w.store)?;
    let (mut main, mut cat, mut gcr) = (w.main, w.catalog, w.store.gc);
    seal::seal(&mut w.store, &mut main)?;
    seal::seal(&mut w.store, &mut cat)?;
    seal::seal(&mut w.store, &mut gcr)?;
    (w.main, w.catalog, w.store.gc) = (main, cat, gcr);

    grow(env, w.pager().next_pgno)?;
    write_pages(env, w)?;
    write_meta(env, w)
}

/// Grows the file to hold `next_pgno` pages, in whole growth steps.
fn grow(env: &Shared, next_pgno: Pgno) -> Result<()> {
    let ps = u64::from(env.page_size);
    env.map.grow(
        u64::from(next_pgno) * ps,
        u64::from(env.growth_pgno) * ps,
        u64::from(env.upper_pgno) * ps,
    )
}

/// Writes the dirty pages in page-number order, one `pwritev` per run of
/// consecutive pages.
fn write_pages(env: &Shared, w: &TxnState) -> Result<()> {
    let ps = env.page_size as usize;
    let dirty = &w.pager().dirty;
    let mut pgnos: Vec<Pgno> = dirty
        .iter()
        .filter(|(_, b)| b.needs_write())
        .map(|(p, _)| *p)
        .collect();
    pgnos.sort_unstable();
    let mut run: Vec<&[u8]> = Vec::new();
    let mut run_start: Pgno = 0;
    let mut run_end: Pgno = 0;
    for p in pgnos {
        let b: &[u8] = &dirty[&p];
        if run.is_empty() || p != run_end {
            if !run.is_empty() {
                env.file
                    .write_vectored_at(&run, u64::from(run_start) * ps as u64)?;
                run.clear();
            }
            run_start = p;
        }
        run.push(b);
        run_end = p + (b.len() / ps) as Pgno;
    }
    if !run.is_empty() {
        env.file
            .write_vectored_at(&run, u64::from(run_start) * ps as u64)?;
    }
    Ok(())
}

/// The meta slot to write: neither the current meta nor the last durable.
/// Both are below 3 (checked against the meta pages at the writer's
/// start); the arithmetic stays in 0..3 whatever they are, so a meta is
/// never written past the meta pages.
fn next_slot(current: u8, steady: u8) -> u8 {
    let (c, s) = (current % 3, steady % 3);
    if c == s {
        (c + 1) % 3
    } else {
        3 - c - s
    }
}

/// Builds the meta of the writer's state.
fn build_meta(env: &Shared, w: &TxnState, txnid: u64, flags: u32) -> Meta {
    Meta {
        page_size: env.page_size,
        txnid,
        flags,
        next_pgno: w.pager().next_pgno,
        lower: env.lower_pgno,
        upper: env.upper_pgno,
        growth: env.growth_pgno,
        shrink: 0,
        boot_id: env.boot_id,
        gc: w.store.gc,
        catalog: w.catalog,
        main: w.main,
        canary: [0; 4],
        base: 0,
        inline_gc: w.store.inline_out,
    }
}

/// Writes the meta page into `slot` (through the map in write-map mode,
/// else with `pwrite`); on a failed write or sync, puts the slot's old bytes
/// back so a later open cannot pick up a commit reported as failed.
fn put_meta(env: &Shared, slot: u8, m: &Meta, sync: bool) -> Result<()> {
    let off = u64::from(slot) * u64::from(env.page_size);
    let mut old = [0u8; META_LEN];
    if let Some(b) = env.map.slice(off as usize, META_LEN) {
        old.copy_from_slice(b);
    }
    let mut buf = [0u8; META_LEN];
    m.encode(&mut buf);
    let write = |bytes: &[u8]| -> Result<()> {
        match env.map.page_mut(off as usize, META_LEN) {
            Some(p) => {
                PageBuf::mapped(p).copy_from_slice(bytes);
                Ok(())
            }
            None => env.file.write_at(bytes, off),
        }
    };
    let r = write(&buf).and_then(|_| if sync { env.sync_data() } else { Ok(()) });
    if r.is_err() {
        let _ = write(&old);
    }
    r
}

/// The durability of a commit: the one its transaction asked for, else the
/// environment's. Outside a `NoSync` environment a commit asking for
/// `NoSync` is made as `SafeNoSync`: the environment keeps the last durable
/// commit's pages for the fallback after a system crash, which a `NoSync`
/// meta (trusted as it is) would defeat.
pub(crate) fn effective_durability(env: Durability, asked: Option<Durability>) -> Durability {
    match asked {
        Some(Durability::NoSync) if env != Durability::NoSync => Durability::SafeNoSync,
        Some(d) => d,
        None => env,
    }
}

/// The state a commit publishes.
fn published_of(w: &TxnState) -> Published {
    Published {
        txnid: w.txnid(),
        next_pgno: u64::from(w.pager().next_pgno),
        catalog: w.catalog.to_words(),
        main: w.main.to_words(),
        gc: w.store.gc.to_words(),
    }
}

/// Writes the meta of a `Durable` commit into the group-commit chain
/// (`group.rs`): no sync here, no publish; the caller waits for a sync that
/// covers it. A commit whose predecessor is durable is written as any
/// one-sync commit (`STEADY | ONE_SYNC`); one on unsynced commits of the
/// chain gets `GROUP` and the durable txnid as its `base`, so that open
/// after a system crash verifies every page newer than `base`.
fn append_to_chain(env: &Shared, w: &mut TxnState) -> Result<Outcome> {
    let txnid = w.txnid();
    let mut written = 0;
    env.group.append(env, published_of(w), |slot, ws| {
        written = slot;
        let one_sync = ws.durable_txnid + 1 == txnid;
        let mut m = build_meta(env, w, txnid, meta::STEADY | meta::ONE_SYNC);
        if !one_sync {
            m.flags = meta::GROUP;
            m.base = ws.durable_txnid;
        }
        put_meta(env, slot, &m, false)
    })?;
    w.last_meta = Some((published_of(w), written, w.store.inline_out));
    if env.durability == Durability::Durable {
        w.unsynced_commits = false;
    }
    Ok(Outcome::Pending(txnid))
}

fn write_meta(env: &Shared, w: &mut TxnState) -> Result<Outcome> {
    let mut mode = effective_durability(env.durability, w.durability);
    // Group commit for `Durable` commits (not in a `NoSync` environment,
    // whose reuse bound does not keep the last durable commit), when the
    // chain has commits or the published commit is durable; anything else
    // first waits for the chain to be published.
    if mode == Durability::Durable && env.durability != Durability::NoSync {
        if env.group.pending() {
            return append_to_chain(env, w);
        }
        // A new chain starts only on a durable published commit in the
        // steady slot: its slot choice keeps the steady slot, so the
        // published meta must be that one.
        let ws = env.lock.writer_shared();
        if ws.durable_txnid == env.published()?.txnid && ws.meta_current == ws.meta_steady {
            return append_to_chain(env, w);
        }
    } else {
        env.group.flush(env)?;
    }
    let mut ws = env.lock.writer_shared();
    let prev = env.published()?;
    // With auto-sync thresholds (`EnvOptions::sync_bytes`, `sync_period`):
    // a commit that brings the bytes written since the last durable commit
    // (its pages and meta page included) to the threshold, or comes a
    // period after it, is made durable.
    let auto = env.auto_sync.applies(mode);
    let mut bytes = 0;
    if auto {
        let ps = u64::from(env.page_size);
        bytes = w
            .pager()
            .dirty
            .values()
            .map(|b| b.len() as u64)
            .sum::<u64>()
            + ps;
        let (unsynced, synced_at) = env.lock.unsynced();
        let since = crate::io::lock::monotonic_ns().saturating_sub(synced_at);
        if env.auto_sync.due(unsynced.saturating_add(bytes), since) {
            mode = Durability::Durable;
        }
    }
    let slot = next_slot(ws.meta_current, ws.meta_steady);
    // One sync is enough only when every page this commit relies on, other
    // than its own, was already durable: after unsynced commits, sync the
    // data first and then the meta (two syncs, as LMDB).
    let one_sync = ws.durable_txnid == prev.txnid;
    if mode == Durability::Durable && !one_sync {
        env.sync_data()?;
    }
    let flags = match mode {
        Durability::Durable if one_sync => meta::STEADY | meta::ONE_SYNC,
        Durability::Durable => meta::STEADY,
        Durability::NoMetaSync => meta::STEADY,
        Durability::SafeNoSync => 0,
        Durability::NoSync => meta::NO_SYNC,
    };
    if mode == Durability::NoMetaSync {
        env.sync_data()?;
    }
    let m = build_meta(env, w, w.txnid(), flags);
    put_meta(env, slot, &m, mode == Durability::Durable)?;
    if env.durability == Durability::Durable {
        w.unsynced_commits = mode != Durability::Durable;
    }
    if mode == Durability::Durable {
        env.lock.mark_synced(crate::io::lock::monotonic_ns());
    } else if auto {
        env.lock.add_unsynced(bytes);
    }
    match mode {
        Durability::Durable => {
            ws.durable_txnid = w.txnid();
            ws.meta_steady = slot;
        }
        Durability::NoMetaSync if ws.current_steady => {
            // The data sync above made the previous meta durable too; it
            // counts only if it was written steady (an unsynced
            // SafeNoSync meta is not trusted after a crash, synced or not).
            ws.durable_txnid = prev.txnid;
            ws.meta_steady = ws.meta_current;
        }
        _ => {}
    }
    ws.meta_current = slot;
    ws.current_steady = flags & meta::STEADY != 0;
    let p = published_of(w);
    env.lock.publish(&p, &ws);
    w.last_meta = Some((p, slot, w.store.inline_out));
    Ok(Outcome::Done)
}

/// `Env::sync`: makes the newest commit durable. Called with the writer
/// lock held. Syncs the data, then writes a steady copy of the current
/// meta (same txnid) into a free slot and syncs again.
pub(crate) fn sync_steady(env: &Shared) -> Result<()> {
    let (p, ws) = env.writer_view()?;
    env.sync_data()?;
    if ws.durable_txnid >= p.txnid && ws.meta_current == ws.meta_steady {
        return Ok(());
    }
    let off = u64::from(ws.meta_current) * u64::from(env.page_size);
    let mut cur = [0u8; META_LEN];
    env.file.read_at(&mut cur, off)?;
    let mut m = Meta::decode(&cur).map_err(|_| {
        Error::corrupted(
            u64::from(ws.meta_current),
            "current meta unreadable at sync",
        )
    })?;
    if m.txnid != p.txnid {
        return Err(Error::corrupted(
            u64::from(ws.meta_current),
            "current meta is not the published commit",
        ));
    }
    m.flags = meta::STEADY;
    let slot = next_slot(ws.meta_current, ws.meta_steady);
    put_meta(env, slot, &m, true)?;
    env.lock.set_durable(p.txnid, slot, slot);
    Ok(())
}
