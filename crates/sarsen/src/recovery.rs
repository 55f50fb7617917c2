//! Recovery: which meta page to trust at open, and the repair of a
//! snapshot whose writer died while publishing it (design.md §4, "Open-time
//! meta selection").
//!
//! A meta page is trusted if it is known to have been published or synced,
//! or if the pages its commit wrote verify against their checksums;
//! anything else is discarded:
//!
//! - **Written in another boot** (or an unknown one): a `STEADY` or
//!   `NO_SYNC` meta is trusted, a `ONE_SYNC` one only if its commit
//!   verifies, an unsynced one never (the boot-id rule).
//! - **Written in this boot:** the page cache holds every write of this
//!   boot, but a writer may have died between writing a meta and
//!   publishing it, and a later writer may then have reused the pages that
//!   meta names (they were free in the published state). Such a meta is
//!   trusted without checks only if the previous life's lock file shows it
//!   published (its txnid below the published one, or equal with the same
//!   records); otherwise its commit is verified.
//! - **After a failed sync** (the previous life's lock file says so), the
//!   page cache may hold pages the disk lost: the cache is dropped and each
//!   candidate is verified in full, every page of its trees, from the disk.
//!
//! The chosen state is then made durable with one `fdatasync` before it is
//! published as durable: a meta that a dead process wrote but never synced
//! is counted durable only once it is.

use crate::error::{Error, Result};
use crate::io::lock::{PrevLife, Published, WriterShared};
use crate::io::DataFile;
use crate::page::inline_gc::InlineGc;
use crate::page::meta::{self, Meta, MetaError, META_LEN};
use crate::page::{DbRecord, LeafValue, Page, Pgno, MAX_PAGE, META_PAGES, MIN_PAGE};
use crate::shared::Shared;
use crate::store::MapSource;

/// A meta page found at open, with its slot.
pub(crate) struct Found {
    pub slot: u8,
    pub meta: Meta,
}

/// How to walk a tree when verifying it.
#[derive(Clone, Copy)]
struct Walk<'a> {
    src: MapSource<'a>,
    /// Every page, not only those the commit wrote (`FRESH` links).
    all: bool,
    /// The tree holds duplicate sub-trees (DUPSORT).
    dups: bool,
    /// Pages written at or before this txnid are durable already.
    base: u64,
}

/// Whether `m`'s records are those of the published snapshot `p`.
fn same_records(m: &Meta, p: &Published) -> bool {
    m.catalog.to_words() == p.catalog && m.main.to_words() == p.main && m.gc.to_words() == p.gc
}

/// Whether the previous life is known to have published `m` (or a later
/// commit, so that `m` was published or overwritten before it).
fn known_published(m: &Meta, prev: Option<&PrevLife>) -> bool {
    match prev.and_then(|l| l.published) {
        Some(p) => m.txnid < p.txnid || (m.txnid == p.txnid && same_records(m, &p)),
        None => false,
    }
}

impl Shared {
    /// Picks the meta to trust, makes the file durable up to it, publishes
    /// it with its durable state, and overwrites rejected newer metas so
    /// they can never win later. Runs in the first opener (alone) and in
    /// a repair (writer lock held).
    pub(crate) fn recover(&self, metas: &[Found], prev: Option<&PrevLife>) -> Result<()> {
        let full = prev.is_some_and(|l| l.sync_failed);
        if full {
            // What the cache holds may not be on the disk: read the disk.
            self.sync_data()?;
            self.file.evict_cache()?;
        }
        let mut order: Vec<&Found> = metas.iter().collect();
        order.sort_by_key(|f| {
            let published = known_published(&f.meta, prev);
            std::cmp::Reverse((f.meta.txnid, published, f.meta.flags & meta::STEADY))
        });
        let len = self.file.len()?;
        let mut rejected = Vec::new();
        let mut chosen = None;
        let mut last_err = None;
        for f in &order {
            match self.trust(&f.meta, len, prev, full) {
                Ok(()) => {
                    chosen = Some(*f);
                    break;
                }
                Err(e) => {
                    rejected.push(f.slot);
                    last_err = Some(e);
                }
            }
        }
        let Some(c) = chosen else {
            return Err(last_err.unwrap_or_else(|| Error::corrupted(0, "no valid meta page")));
        };
        // A `GROUP` meta that was not rejected verified (or was published,
        // which happens only after its sync): as durable as a steady one.
        let durable = |m: &Meta| m.flags & (meta::STEADY | meta::GROUP) != 0;
        let found_steady = order
            .iter()
            .filter(|f| f.meta.txnid <= c.meta.txnid && durable(&f.meta))
            .find(|f| !rejected.contains(&f.slot))
            .copied();
        let writable = !self.read_only && !self.lock.is_private();
        if !rejected.is_empty() && !self.read_only {
            let mut buf = vec![0u8; self.page_size as usize];
            c.meta.encode(&mut buf);
            for slot in &rejected {
                self.file.write_at(
                    &buf[..META_LEN],
                    u64::from(*slot) * u64::from(self.page_size),
                )?;
            }
        }
        // No steady meta at or below the chosen one survives: the chosen
        // one becomes the durable commit, so it must be written steady (a
        // copy in another slot, made durable by the sync below), or a
        // reboot would reject it after writers reused older pages.
        let made_steady = match found_steady {
            None if writable && !durable(&c.meta) => {
                let slot = rejected.first().copied().unwrap_or((c.slot + 1) % 3);
                let mut m = c.meta;
                m.flags = meta::STEADY;
                let mut buf = vec![0u8; self.page_size as usize];
                m.encode(&mut buf);
                self.file.write_at(
                    &buf[..META_LEN],
                    u64::from(slot) * u64::from(self.page_size),
                )?;
                Some(Found { slot, meta: m })
            }
            _ => None,
        };
        let steady = found_steady.or(made_steady.as_ref()).unwrap_or(c);
        if !self.lock.is_private() {
            // What a dead process wrote but never synced is durable only
            // from here: without this, a meta that never reached the disk
            // would count as durable, and the next writer would reuse pages
            // that the meta really on the disk still names.
            self.sync_data()?;
        }
        let m = &c.meta;
        let p = Published {
            txnid: m.txnid,
            next_pgno: u64::from(m.next_pgno),
            catalog: m.catalog.to_words(),
            main: m.main.to_words(),
            gc: m.gc.to_words(),
        };
        let w = WriterShared {
            durable_txnid: steady.meta.txnid,
            meta_current: c.slot,
            meta_steady: steady.slot,
            current_steady: durable(&c.meta),
        };
        self.lock.publish(&p, &w);
        Ok(())
    }

    /// Repairs a snapshot left half-published by a writer that died in
    /// `publish` (the seqlock counter stays odd). Call with the writer lock
    /// held. The newest meta in the file is the one being published (no
    /// writer ran since), but whether it was synced is unknown: it is
    /// verified like any meta of this boot not known published.
    pub(crate) fn repair_published(&self) -> Result<()> {
        let metas = read_metas(&self.file)?;
        let prev = PrevLife {
            published: None,
            sync_failed: self.lock.sync_failed(),
        };
        self.recover(&metas, Some(&prev))
    }

    /// The published snapshot and writer words as a holder of the writer
    /// lock builds on them: repaired first if a writer died publishing
    /// them, then checked against the meta pages ([`Env::validate_published`](crate::Env::validate_published)).
    /// Every writer-lock holder that writes metas starts here
    /// (`RwTxn::begin`, `Env::sync`).
    pub(crate) fn writer_view(&self) -> Result<(Published, WriterShared)> {
        if self.lock.publishing() {
            self.repair_published()?;
        }
        let p = self.published()?;
        let ws = self.lock.writer_shared();
        self.validate_published(&p, &ws)?;
        Ok((p, ws))
    }

    /// Checks the lock file's published state against the meta pages it
    /// names, before a writer builds on it: the current slot must hold a
    /// valid meta of the published commit (txnid, next page, records), the
    /// steady slot one of the durable txnid. A stray write into the lock
    /// file would otherwise steer the writer (a meta slot number onto a
    /// data page, a free-page bound past live pages). Reads the two metas
    /// through the map: no system call, no checksum (the meta's own
    /// fields are compared, which a stray write cannot match by chance).
    pub(crate) fn validate_published(&self, p: &Published, ws: &WriterShared) -> Result<()> {
        let bad = |what: String| Err(Error::corrupted(0, format!("lock file: {what}")));
        if ws.meta_current >= META_PAGES as u8 || ws.meta_steady >= META_PAGES as u8 {
            return bad(format!(
                "meta slots {} and {} out of range",
                ws.meta_current, ws.meta_steady
            ));
        }
        if ws.durable_txnid > p.txnid {
            return bad(format!(
                "durable txnid {} past the published {}",
                ws.durable_txnid, p.txnid
            ));
        }
        let state = (p.next_pgno, [&p.gc, &p.catalog, &p.main]);
        if !Meta::holds(self.mapped_meta(ws.meta_current)?, p.txnid, Some(state)) {
            return bad(format!(
                "published commit {} is not the one in meta page {}",
                p.txnid, ws.meta_current
            ));
        }
        if !Meta::holds(self.mapped_meta(ws.meta_steady)?, ws.durable_txnid, None) {
            return bad(format!(
                "durable commit {} is not the one in meta page {}",
                ws.durable_txnid, ws.meta_steady
            ));
        }
        Ok(())
    }

    /// Overwrites every meta slot that is neither the current nor the
    /// steady one and holds a commit the lock file never published (newer
    /// than the published txnid, or the same txnid with other records):
    /// the meta of a writer that died between writing it and publishing
    /// it. Its pages are free in the published state, so this writer may
    /// reuse them; and if that meta reached the disk marked `STEADY` (the
    /// pages were synced first), a power loss would make open trust it
    /// whatever it names. So it is replaced by a copy of the current meta,
    /// and the copy is synced, before this transaction writes any page.
    /// Costs two loads per slot when there is none.
    pub(crate) fn erase_orphan_metas(&self, p: &Published, ws: &WriterShared) -> Result<()> {
        let state = (p.next_pgno, [&p.gc, &p.catalog, &p.main]);
        let mut erased = false;
        for slot in 0..META_PAGES as u8 {
            if slot == ws.meta_current || slot == ws.meta_steady {
                continue;
            }
            let b = self.mapped_meta(slot)?;
            if Meta::peek_txnid(b).is_none_or(|t| t < p.txnid) {
                continue;
            }
            let orphan = match Meta::decode(b) {
                Ok(m) => {
                    m.txnid > p.txnid
                        || (m.txnid == p.txnid && !Meta::holds(b, p.txnid, Some(state)))
                }
                // Never trusted at open: nothing to erase.
                Err(_) => false,
            };
            if orphan {
                let cur = self.mapped_meta(ws.meta_current)?.to_vec();
                let off = u64::from(slot) * u64::from(self.page_size);
                self.file.write_at(&cur, off)?;
                erased = true;
            }
        }
        if erased {
            self.sync_data()?;
        }
        Ok(())
    }

    /// The inline GC of the meta page in `slot`, which must hold the
    /// commit `p` (the one a writer begins on). Read through the map, with
    /// the writer lock held (no other process writes a meta meanwhile).
    ///
    /// # Errors
    ///
    /// `Corrupted` if the slot holds another commit or does not decode.
    pub(crate) fn inline_gc_of(&self, slot: u8, p: &Published) -> Result<InlineGc> {
        let b = self.mapped_meta(slot)?;
        let state = (p.next_pgno, [&p.gc, &p.catalog, &p.main]);
        let m = Meta::decode(b)
            .ok()
            .filter(|_| Meta::holds(b, p.txnid, Some(state)));
        m.map(|m| m.inline_gc).ok_or_else(|| {
            Error::corrupted(
                u64::from(slot),
                format!("meta page {slot} is not a valid meta of commit {}", p.txnid),
            )
        })
    }

    /// The inline GC of the snapshot `p` as a reader sees it: from the meta
    /// slot that still holds that commit, read with `pread` (a writer may
    /// be writing another slot meanwhile). `None` once later commits have
    /// overwritten it (a snapshot three or more commits old).
    ///
    /// # Errors
    ///
    /// Those of reading the file; `Corrupted` if a slot names the commit
    /// but does not decode, three reads in a row (one read may catch a
    /// writer overwriting that slot half-way).
    pub(crate) fn snapshot_inline_gc(&self, p: &Published) -> Result<Option<InlineGc>> {
        let state = (p.next_pgno, [&p.gc, &p.catalog, &p.main]);
        let mut b = [0u8; META_LEN];
        for slot in 0..META_PAGES {
            for attempt in 0..3 {
                let off = u64::from(slot) * u64::from(self.page_size);
                self.file.read_at(&mut b, off)?;
                if !Meta::holds(&b, p.txnid, Some(state)) {
                    break;
                }
                match Meta::decode(&b) {
                    Ok(m) => return Ok(Some(m.inline_gc)),
                    Err(_) if attempt < 2 => std::thread::yield_now(),
                    Err(_) => {
                        let what = format!(
                            "meta page {slot} names commit {} but does not decode",
                            p.txnid
                        );
                        return Err(Error::corrupted(u64::from(slot), what));
                    }
                }
            }
        }
        Ok(None)
    }

    /// The bytes of the meta page in `slot`, read through the map.
    fn mapped_meta(&self, slot: u8) -> Result<&[u8]> {
        let off = usize::from(slot) * self.page_size as usize;
        self.map
            .slice(off, META_LEN)
            .ok_or_else(|| Error::corrupted(u64::from(slot), "meta page outside the map"))
    }

    /// Whether meta `m` can be trusted after a possible crash.
    fn trust(&self, m: &Meta, file_len: u64, prev: Option<&PrevLife>, full: bool) -> Result<()> {
        let need = u64::from(m.next_pgno) * u64::from(m.page_size);
        if need > file_len {
            return Err(Error::corrupted(
                u64::from(m.next_pgno),
                format!("file is {file_len} bytes, its newest commit needs {need}"),
            ));
        }
        if m.page_size != self.page_size {
            return Err(Error::corrupted(0, "meta pages disagree on the page size"));
        }
        let same_boot = m.boot_id == self.boot_id && m.boot_id != [0; 16];
        if !same_boot && m.flags & (meta::STEADY | meta::NO_SYNC | meta::GROUP) == 0 {
            return Err(Error::corrupted(
                0,
                "unsynced commit from before a system restart",
            ));
        }
        if full {
            // After a failed sync nothing in the cache is known durable.
            return self.verify_commit(m, true);
        }
        if same_boot {
            // The OS kept every write of this boot, but a dead writer's
            // meta that was never published may name reused pages.
            if known_published(m, prev) {
                return Ok(());
            }
            return self.verify_commit(m, false);
        }
        if m.flags & (meta::ONE_SYNC | meta::GROUP) != 0 {
            self.verify_commit(m, false)?;
        }
        Ok(())
    }

    /// Verifies the checksums of every page that commit `m` reaches and
    /// that was written after its base: for a `GROUP` meta, the last
    /// durable txnid when it was written (every commit of its chain); for
    /// any other, the txnid before it (the pages reached through `FRESH`
    /// links from roots it wrote). With `all`, every page its trees reach.
    fn verify_commit(&self, m: &Meta, all: bool) -> Result<()> {
        let src = MapSource {
            map: &self.map,
            layout: self.layout,
            limit: m.next_pgno,
        };
        let base = if m.flags & meta::GROUP != 0 {
            m.base
        } else {
            m.txnid - 1
        };
        let mut seen = crate::btree::Visited::default();
        for rec in [&m.gc, &m.catalog, &m.main] {
            self.verify_tree(src, rec, base, all, &mut seen)?;
        }
        if m.catalog.root != 0 {
            let mut c = crate::cursor::RawCursor::new(
                crate::store::AnySource::Map(src),
                m.catalog,
                crate::order::Order::Bytewise,
            );
            let mut e = c.first()?;
            while let Some((_, v)) = e {
                // Record and settings: a value longer than a record is a
                // database with settings, and must be verified too.
                let entry = crate::page::CatalogEntry::decode(v).map_err(|what| {
                    Error::corrupted(u64::from(m.catalog.root), format!("catalog entry: {what}"))
                })?;
                self.verify_tree(src, &entry.rec, base, all, &mut seen)?;
                e = c.next()?;
            }
        }
        Ok(())
    }

    fn verify_tree(
        &self,
        src: MapSource<'_>,
        rec: &DbRecord,
        base: u64,
        all: bool,
        seen: &mut crate::btree::Visited,
    ) -> Result<()> {
        // `mod_txnid` 0 (a root collapsed onto a clean child) says nothing
        // about when the root was written: its header does, once it
        // verifies.
        if rec.root == 0 || (rec.mod_txnid != 0 && rec.mod_txnid <= base && !all) {
            return Ok(());
        }
        let depth = crate::btree::check_depth(rec)?;
        let dups = rec.flags & crate::page::record::DUPSORT != 0;
        let walk = Walk {
            src,
            all,
            dups,
            base,
        };
        self.verify_page(walk, rec.root, rec.root_cksum, depth, seen)
    }

    /// Verifies page `pgno` against `sum` and, if it was written after the
    /// walk's base, what it links to that may be too. A `FRESH` link's
    /// target was written by the same commit as this page, so it is
    /// verified; any other target is older than this page, and can be
    /// newer than the base only if this page is at least two commits past
    /// it (a commit of a group-commit chain): then it is verified too, and
    /// its own (now authentic) header txnid says whether to go deeper.
    fn verify_page(
        &self,
        walk: Walk<'_>,
        pgno: Pgno,
        sum: u64,
        levels: usize,
        seen: &mut crate::btree::Visited,
    ) -> Result<()> {
        seen.enter(pgno)?;
        let ps = self.layout.psize;
        let bytes = self
            .map
            .slice(pgno as usize * ps, ps)
            .filter(|_| pgno >= META_PAGES && pgno < walk.src.limit)
            .ok_or_else(|| Error::corrupted(u64::from(pgno), "page outside the file"))?;
        if crate::page::checksum(bytes) != sum || levels == 0 {
            return Err(Error::corrupted(
                u64::from(pgno),
                "checksum mismatch in a commit being recovered",
            ));
        }
        let written = crate::page::rd64(bytes, 8);
        if !walk.all && written <= walk.base {
            return Ok(());
        }
        // Links without `FRESH` point at pages older than this one: newer
        // than the base only if this page is more than one commit past it.
        let older_too = walk.all || written > walk.base.saturating_add(1);
        let follow = |flags: u8| older_too || flags & crate::page::node::FRESH != 0;
        let p = Page::new(bytes, pgno)?;
        for i in 0..p.len() {
            if !p.is_leaf() {
                let n = p.branch(i)?;
                if follow(n.flags) {
                    self.verify_page(walk, n.child, n.cksum, levels - 1, seen)?;
                }
                continue;
            }
            let n = p.leaf(i)?;
            if !follow(n.flags) {
                continue;
            }
            if walk.dups && n.flags & crate::page::node::SUBTREE != 0 {
                self.verify_subtree(walk, pgno, &n, seen)?;
                continue;
            }
            if let LeafValue::Overflow {
                pgno: run,
                len,
                cksum,
            } = n.value
            {
                self.verify_run(walk, run, len, cksum)?;
            }
        }
        Ok(())
    }

    /// Verifies the duplicate sub-tree whose record is leaf node `n` of
    /// page `pgno`, if it was written after the walk's base.
    fn verify_subtree(
        &self,
        walk: Walk<'_>,
        pgno: Pgno,
        n: &crate::page::LeafNode<'_>,
        seen: &mut crate::btree::Visited,
    ) -> Result<()> {
        let r = match n.value {
            LeafValue::Inline(v) => DbRecord::decode(v),
            LeafValue::Overflow { .. } => None,
        }
        .ok_or_else(|| Error::corrupted(u64::from(pgno), "damaged duplicate sub-tree record"))?;
        if !walk.all && r.mod_txnid != 0 && r.mod_txnid <= walk.base {
            return Ok(());
        }
        let depth = crate::btree::check_depth(&r)?;
        let sub = Walk {
            dups: false,
            ..walk
        };
        self.verify_page(sub, r.root, r.root_cksum, depth, seen)
    }

    /// Verifies the overflow run at `run` holding a `len`-byte value
    /// against its reference's checksum.
    fn verify_run(&self, walk: Walk<'_>, run: Pgno, len: usize, cksum: u64) -> Result<()> {
        let ps = self.layout.psize;
        let np = self.layout.overflow_pages(len);
        let b = self
            .map
            .slice(run as usize * ps, np * ps)
            .filter(|_| {
                run >= META_PAGES && u64::from(run) + np as u64 <= u64::from(walk.src.limit)
            })
            .ok_or_else(|| Error::corrupted(u64::from(run), "overflow run outside the file"))?;
        if crate::page::checksum(b) != cksum {
            return Err(Error::corrupted(
                u64::from(run),
                "overflow checksum mismatch in a commit being recovered",
            ));
        }
        Ok(())
    }
}

/// Reads the three meta pages. The page size is not known before a meta is
/// read, so each power of two is tried for the positions of metas 1 and 2.
pub(crate) fn read_metas(file: &DataFile) -> Result<Vec<Found>> {
    let len = file.len()?;
    let mut found = Vec::new();
    let mut buf = [0u8; META_LEN];
    let mut version = None;
    let mut ps = MIN_PAGE;
    while ps <= MAX_PAGE {
        for slot in 0..META_PAGES as u8 {
            if slot == 0 && ps != MIN_PAGE {
                continue;
            }
            let off = u64::from(slot) * u64::from(ps);
            if off + META_LEN as u64 > len {
                continue;
            }
            file.read_at(&mut buf, off)?;
            match Meta::decode(&buf) {
                Ok(m) if slot == 0 || m.page_size == ps => {
                    if !found.iter().any(|f: &Found| f.slot == slot) {
                        found.push(Found { slot, meta: m });
                    }
                }
                Ok(_) | Err(MetaError::Foreign) | Err(MetaError::Invalid(_)) => {}
                Err(MetaError::Version(v)) => version = Some(v),
            }
        }
        ps *= 2;
    }
    if found.is_empty() {
        if let Some(v) = version {
            return Err(Error::Incompatible(format!(
                "format version {v}, this build reads {}",
                meta::FORMAT_VERSION
            )));
        }
        return Err(Error::corrupted(
            0,
            "no valid meta page (not a Sarsen file, or all three damaged)",
        ));
    }
    // All metas must agree with the newest on the page size.
    let ps = found
        .iter()
        .max_by_key(|f| f.meta.txnid)
        .map(|f| f.meta.page_size)
        .unwrap_or(MIN_PAGE);
    found.retain(|f| f.meta.page_size == ps);
    Ok(found)
}

/// This boot of the OS, as 16 bytes (zero if unknown). A commit written in
/// the same boot cannot have lost writes to a crash of the process alone.
pub(crate) fn boot_id() -> [u8; 16] {
    match std::fs::read("/proc/sys/kernel/random/boot_id") {
        Ok(b) => twox_hash::XxHash3_128::oneshot(&b).to_le_bytes(),
        Err(_) => [0; 16],
    }
}
