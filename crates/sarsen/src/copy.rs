//! Hot backup: a consistent copy of a live database (LMDB's `mdb_env_copy2`,
//! libmdbx's `mdbx_env_copy`), taken from one read snapshot while writers
//! go on.
//!
//! - **Physical copy.** The pages of the snapshot's trees are written at
//!   their own page numbers; free pages (listed in the GC) become holes of
//!   zeros, because a writer may be reusing them and the snapshot never
//!   reads them. Meta page 0 describes the snapshot (same txnid, trees and
//!   geometry, `STEADY`), metas 1 and 2 are zero. The copy is as large as the
//!   snapshot's allocated pages and passes `check` exactly as the source.
//! - **Compact copy** (`MDB_CP_COMPACT`). Every database is re-inserted in
//!   key order into a new environment, so pages are filled full (the append
//!   path) and no free page is carried over; named databases keep their
//!   settings (the merge operator's name) and key order (a user comparator
//!   must be attached to the source's handle). The copy starts at a new txnid.
//!
//! Either way the copy is written as `data.sdb.tmp` in the destination
//! directory, synced, and renamed to `data.sdb`: a failed copy leaves no
//! data file behind.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::page::meta::{self, Meta};
use crate::page::{DbRecord, META_PAGES};
use crate::store::MapSource;
use crate::{Env, EnvOptions, RoTxn};

/// Entries a compact copy puts per write transaction (bounds the memory
/// its dirty pages take).
const COMPACT_BATCH: usize = 50_000;

/// Bytes a physical copy writes per `pwrite` at most.
const WRITE_CHUNK: usize = 1 << 20;

/// What a copy wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CopyInfo {
    /// Txnid of the source snapshot copied.
    pub txnid: u64,
    /// Size of the copy's data file, bytes.
    pub bytes: u64,
    /// Key/value pairs copied, over all databases (compact copies only; 0 otherwise).
    pub entries: u64,
}

/// The destination's data file and its temporary name.
fn dest_paths(dir: &Path) -> Result<(PathBuf, PathBuf)> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io("create copy directory", e))?;
    let data = dir.join("data.sdb");
    if data.exists() {
        return Err(Error::InvalidArgument(format!(
            "{} exists: a copy goes into a directory without a database",
            data.display()
        )));
    }
    Ok((data.clone(), dir.join("data.sdb.tmp")))
}

/// Syncs `tmp`, renames it to `data`, and syncs the directory.
fn publish(file: &File, tmp: &Path, data: &Path) -> Result<u64> {
    file.sync_all().map_err(|e| Error::io("fsync copy", e))?;
    let len = file
        .metadata()
        .map_err(|e| Error::io("fstat copy", e))?
        .len();
    std::fs::rename(tmp, data).map_err(|e| Error::io("rename copy", e))?;
    if let Some(dir) = data.parent() {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::io("fsync copy directory", e))?;
    }
    Ok(len)
}

/// A physical copy of the snapshot of `txn` into the directory `dir`.
pub(crate) fn copy_physical(env: &Env, txn: &RoTxn<'_>, dir: &Path) -> Result<CopyInfo> {
    let (src, txnid, gc, catalog, main) = txn.parts();
    let (report, in_tree) =
        crate::check::walk(src, txnid, &gc, &catalog, &main, &env.shared.registry);
    if let Some(p) = report.problems.first() {
        return Err(Error::corrupted(
            p.page,
            format!("the source fails its check ({p}); copy refused"),
        ));
    }
    let (data, tmp) = dest_paths(dir)?;
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(|e| Error::io("create copy", e))?;
    let r = write_pages(env, src, &in_tree, &file, txnid, [gc, catalog, main])
        .and_then(|_| publish(&file, &tmp, &data));
    match r {
        Ok(bytes) => Ok(CopyInfo {
            txnid,
            bytes,
            entries: 0,
        }),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Writes the metas and the tree pages of the snapshot into `file`.
fn write_pages(
    env: &Env,
    src: MapSource<'_>,
    in_tree: &crate::check::PageUses,
    file: &File,
    txnid: u64,
    [gc, catalog, main]: [DbRecord; 3],
) -> Result<()> {
    let ps = env.shared.page_size as usize;
    let next_pgno = src.limit;
    file.set_len(u64::from(next_pgno) * ps as u64)
        .map_err(|e| Error::io("ftruncate copy", e))?;
    let m = Meta {
        page_size: env.shared.page_size,
        txnid,
        flags: meta::STEADY,
        next_pgno,
        lower: env.shared.lower_pgno,
        upper: env.shared.upper_pgno,
        growth: env.shared.growth_pgno,
        shrink: 0,
        boot_id: env.shared.boot_id,
        gc,
        catalog,
        main,
        canary: [0; 4],
        base: 0,
    };
    let mut first = vec![0u8; ps];
    m.encode(&mut first);
    file.write_all_at(&first, 0)
        .map_err(|e| Error::io("write copy", e))?;
    // Runs of consecutive tree pages, each written from the map directly.
    let mut p = META_PAGES as usize;
    while p < next_pgno as usize {
        if !in_tree.in_tree(p) {
            p += 1;
            continue;
        }
        let start = p;
        while p < next_pgno as usize && in_tree.in_tree(p) && (p - start) * ps < WRITE_CHUNK {
            p += 1;
        }
        let bytes = src
            .map
            .slice(start * ps, (p - start) * ps)
            .ok_or_else(|| Error::corrupted(start as u64, "page outside the map"))?;
        file.write_all_at(bytes, (start * ps) as u64)
            .map_err(|e| Error::io("write copy", e))?;
    }
    Ok(())
}

/// A compact copy of the snapshot of `txn` into the directory `dir`.
pub(crate) fn copy_compact(env: &Env, txn: &RoTxn<'_>, dir: &Path) -> Result<CopyInfo> {
    let (data, tmp) = dest_paths(dir)?;
    let work = dir.join("compact.tmp");
    let _ = std::fs::remove_dir_all(&work);
    let r = fill_compact(env, txn, &work).and_then(|(entries, used)| {
        let file = OpenOptions::new()
            .write(true)
            .open(work.join("data.sdb"))
            .map_err(|e| Error::io("open compact copy", e))?;
        // Drop the sparse margin past the pages in use (it is regrown on
        // demand), so the copy's length is its size.
        file.set_len(used)
            .map_err(|e| Error::io("ftruncate copy", e))?;
        std::fs::rename(work.join("data.sdb"), &tmp).map_err(|e| Error::io("rename copy", e))?;
        let bytes = publish(&file, &tmp, &data)?;
        Ok(CopyInfo {
            txnid: txn.txnid(),
            bytes,
            entries,
        })
    });
    let _ = std::fs::remove_dir_all(&work);
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

/// Re-inserts every database of the snapshot, in key order, into a new
/// environment in `work`; returns the entries copied and the bytes of
/// pages the new file uses.
fn fill_compact(env: &Env, txn: &RoTxn<'_>, work: &Path) -> Result<(u64, u64)> {
    let mut names: Vec<Option<String>> = vec![None];
    names.extend(txn.list_dbs()?.into_iter().map(Some));
    let out = open_new(env, work, names.len() as u32)?;
    let mut entries = 0;
    for name in names {
        let Some(db) = txn.open_db(name.as_deref())? else {
            continue;
        };
        let merge = txn.merge_operator_name(name.as_deref())?;
        // The copy is built in the source's order (a user comparator's
        // order needs it attached to the source's handle).
        let opts = crate::DbOptions::new()
            .key_order(txn.key_order(db)?)
            .with_dup_mode(txn.dup_mode(db)?);
        let mut w = out.write_txn()?;
        let to = w.create_db_with(name.as_deref(), &opts)?;
        if let Some(op) = merge {
            w.record_operator_name(to, &op)?;
        }
        let mut n = 0;
        for e in txn.iter(db)? {
            let (k, v) = e?;
            if n == COMPACT_BATCH {
                w.commit()?;
                w = out.write_txn()?;
                n = 0;
            }
            w.put(to, k, v)?;
            n += 1;
            entries += 1;
        }
        w.commit()?;
    }
    out.sync()?;
    let used = out.info()?.next_pgno * u64::from(env.shared.page_size);
    Ok((entries, used))
}

/// A new environment in `work` with `env`'s page size and upper bound,
/// for `dbs` named databases.
fn open_new(env: &Env, work: &Path, dbs: u32) -> Result<Env> {
    let o = EnvOptions::new()
        .page_size(env.shared.page_size)
        .max_size(u64::from(env.shared.upper_pgno) * u64::from(env.shared.page_size))
        .growth_step(u64::from(env.shared.growth_pgno) * u64::from(env.shared.page_size))
        .durability(crate::Durability::SafeNoSync)
        .max_dbs(dbs);
    // SAFETY: `work` is a directory this copy just made for itself; nothing
    // else maps its files.
    unsafe { o.open(work) }
}
