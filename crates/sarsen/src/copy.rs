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
//!
//! A physical copy can also be written to any [`Write`]
//! ([`Env::copy_to_writer`], LMDB's `mdb_env_copyfd`): the same bytes as
//! the data file of [`Env::copy_to`], in order, free pages and the unused
//! metas written as zeros; nothing is synced.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::page::inline_gc::InlineGc;
use crate::page::meta::{self, Meta};
use crate::page::{DbRecord, Pgno, META_PAGES};
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

/// What a physical copy of a snapshot writes: its pages, its txnid, its
/// trees' records (GC, catalog, main) and which pages are in its trees.
type Checked<'env> = (MapSource<'env>, u64, Recs, crate::check::PageUses);

/// The trees' records (GC, catalog, main) and the inline GC of a copy.
type Recs = ([DbRecord; 3], InlineGc);

/// The snapshot of `txn`, checked: a damaged source is not copied page by
/// page.
fn checked<'env>(env: &Env, txn: &RoTxn<'env>) -> Result<Checked<'env>> {
    let (src, txnid, gc, catalog, main) = txn.parts();
    let inline = txn.inline_gc()?;
    let trees = crate::check::Trees {
        gc: &gc,
        inline: inline.as_ref(),
        catalog: &catalog,
        main: &main,
    };
    let (report, in_tree) = crate::check::walk(src, txnid, trees, &env.shared.registry);
    if let Some(p) = report.problems.first() {
        return Err(Error::corrupted(
            p.page,
            format!("the source fails its check ({p}); copy refused"),
        ));
    }
    // Without the snapshot's meta, the pages the check took to be its
    // inline GC (no more than it holds) become the copy's, under its txnid.
    let inline = match inline {
        Some(l) => l,
        None => {
            let mut l = InlineGc::default();
            let runs = in_tree.unseen_runs(META_PAGES as usize, src.limit as usize);
            let pages: Vec<Pgno> = runs
                .into_iter()
                .flat_map(|(s, e)| s as Pgno..e as Pgno)
                .collect();
            if !l.push(txnid, &pages) {
                return Err(Error::corrupted(
                    0,
                    "free pages of the copy do not fit its meta",
                ));
            }
            l
        }
    };
    Ok((src, txnid, ([gc, catalog, main], inline), in_tree))
}

/// A physical copy of the snapshot of `txn` into the directory `dir`.
pub(crate) fn copy_physical(env: &Env, txn: &RoTxn<'_>, dir: &Path) -> Result<CopyInfo> {
    let (src, txnid, recs, in_tree) = checked(env, txn)?;
    let (data, tmp) = dest_paths(dir)?;
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(|e| Error::io("create copy", e))?;
    let len = u64::from(src.limit) * u64::from(env.shared.page_size);
    let r = file
        .set_len(len)
        .map_err(|e| Error::io("ftruncate copy", e))
        .and_then(|()| {
            write_pages(env, src, &in_tree, txnid, recs, |at, b| {
                file.write_all_at(b, at)
                    .map_err(|e| Error::io("write copy", e))
            })
        })
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

/// A physical copy of the snapshot of `txn` written to `out` (see the
/// module docs): the checked source, then its pages in order.
pub(crate) fn copy_physical_to<W: Write + ?Sized>(
    env: &Env,
    txn: &RoTxn<'_>,
    out: &mut W,
) -> Result<CopyInfo> {
    let (src, txnid, recs, in_tree) = checked(env, txn)?;
    let len = u64::from(src.limit) * u64::from(env.shared.page_size);
    let mut at = 0u64;
    // Writes the zeros from `at` to `to`, then `b` (pages come in order).
    let mut emit = |to: u64, b: &[u8]| -> Result<()> {
        static ZEROS: [u8; 64 << 10] = [0; 64 << 10];
        while at < to {
            let n = (to - at).min(ZEROS.len() as u64) as usize;
            out.write_all(&ZEROS[..n])
                .map_err(|e| Error::io("write copy", e))?;
            at += n as u64;
        }
        out.write_all(b).map_err(|e| Error::io("write copy", e))?;
        at += b.len() as u64;
        Ok(())
    };
    write_pages(env, src, &in_tree, txnid, recs, &mut emit)?;
    emit(len, &[])?;
    out.flush().map_err(|e| Error::io("write copy", e))?;
    Ok(CopyInfo {
        txnid,
        bytes: len,
        entries: 0,
    })
}

/// Gives the meta page and the tree pages of the snapshot to `emit` (its
/// offset in the copy and its bytes), in increasing offsets; the rest of
/// the copy (metas 1 and 2, free pages) is zeros.
fn write_pages(
    env: &Env,
    src: MapSource<'_>,
    in_tree: &crate::check::PageUses,
    txnid: u64,
    ([gc, catalog, main], inline_gc): Recs,
    mut emit: impl FnMut(u64, &[u8]) -> Result<()>,
) -> Result<()> {
    let ps = env.shared.page_size as usize;
    let next_pgno = src.limit;
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
        inline_gc,
    };
    let mut first = vec![0u8; ps];
    m.encode(&mut first);
    emit(0, &first)?;
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
        emit((start * ps) as u64, bytes)?;
    }
    Ok(())
}

impl Env {
    /// Writes a consistent copy of the newest snapshot to `out`, while
    /// writers go on (LMDB's `mdb_env_copyfd`): the bytes of the data file
    /// [`copy_to`](Env::copy_to) would make, in order, free pages as zeros,
    /// so `out` may be a pipe or a socket. Saved as a file, it opens as an
    /// environment with [`EnvOptions::single_file`](crate::EnvOptions::single_file)
    /// (or as `data.sdb` in a directory). Nothing is synced, and `out` is
    /// flushed but not closed; on error part of the copy may have been
    /// written.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`] if the source fails its check (a damaged
    /// database is not copied page by page); [`Error::Io`] and
    /// [`Error::DiskFull`] from `out`; those of
    /// [`read_txn`](Env::read_txn) for the snapshot.
    ///
    /// ```
    /// # let src = tempfile::tempdir().unwrap();
    /// # let dst = tempfile::tempdir().unwrap();
    /// let env = unsafe { sarsen::Env::open(src.path())? };
    /// let mut w = env.write_txn()?;
    /// w.put(env.main_db(), b"k", b"v")?;
    /// w.commit()?;
    /// let mut bytes = Vec::new();
    /// let info = env.copy_to_writer(&mut bytes)?;
    /// assert_eq!(info.bytes, bytes.len() as u64);
    /// let file = dst.path().join("backup.sdb");
    /// std::fs::write(&file, &bytes).unwrap();
    /// let copy = unsafe { sarsen::EnvOptions::new().single_file(true).open(&file)? };
    /// assert_eq!(copy.read_txn()?.get(copy.main_db(), b"k")?, Some(&b"v"[..]));
    /// # Ok::<(), sarsen::Error>(())
    /// ```
    pub fn copy_to_writer<W: Write + ?Sized>(&self, out: &mut W) -> Result<CopyInfo> {
        let txn = self.read_txn()?;
        copy_physical_to(self, &txn, out)
    }

    /// The data file's descriptor, as this environment opened it (read and
    /// write, or read-only with
    /// [`EnvOptions::read_only`](crate::EnvOptions::read_only)), for
    /// `fstat`, `fdatasync` or `posix_fadvise` (LMDB's `mdb_env_get_fd`).
    /// It closes with the environment. Writing through it, changing its
    /// length or closing it breaks the contract of
    /// [`Env::open`](crate::Env::open), as any other change to the file
    /// would.
    pub fn data_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.shared.file.file().as_fd()
    }
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
