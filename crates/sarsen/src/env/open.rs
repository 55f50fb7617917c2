//! Opening an environment: the files, the first opener's recovery, the
//! map over the agreed upper bound.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::Env;
use crate::db::Registry;
use crate::error::{Error, Result};
use crate::io::lock::Opened;
use crate::io::{DataFile, LockFile, Map};
use crate::options::{Durability, EnvOptions, DEFAULT_UPPER};
use crate::page::meta::{self, Meta};
use crate::page::{Layout, Pgno, MAX_PAGE, MAX_PGNO, META_PAGES, MIN_PAGE};
use crate::recovery::{boot_id, read_metas};
use crate::shared::Shared;
use crate::store::Pager;
use crate::writer::TxnState;

impl EnvOptions {
    /// Opens or creates the environment at `path`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a bad page size or reader count,
    /// `no_lock` without `read_only`, or a read-only open of an empty file;
    /// [`Error::Incompatible`] for a file of another format, or a lock file
    /// of another format held open by a live process; [`Error::Corrupted`]
    /// when no meta page can be trusted, or (with
    /// [`validation`](EnvOptions::validation)) for the first problem the
    /// check finds; [`Error::Busy`] (see
    /// [`exclusive`](EnvOptions::exclusive)); [`Error::DiskFull`] creating
    /// the file, or allocating its blocks in
    /// [`write_map`](EnvOptions::write_map) mode; [`Error::Io`] from the
    /// OS, among them a lock file this process may not write. Nothing is
    /// left open; a file the open created stays.
    ///
    /// # Safety
    ///
    /// The data file is memory-mapped and values are returned as slices of
    /// the map. If anything other than Sarsen (in this or another process)
    /// modifies or truncates the file while it is open, those slices can
    /// change under you or the process can fault: that cannot be made safe
    /// in Rust, so the caller promises it will not happen (as with heed's
    /// `EnvOpenOptions::open` and memmap2's `Mmap::map`).
    pub unsafe fn open(&self, path: impl AsRef<Path>) -> Result<Env> {
        Env::open_with(self, path.as_ref())
    }
}

/// Source of unique environment ids (reader slot ownership).
static NEXT_UID: AtomicU64 = AtomicU64::new(1);

impl Env {
    pub(super) fn open_with(o: &EnvOptions, path: &Path) -> Result<Env> {
        let ps = o.page_size;
        if !ps.is_power_of_two() || !(MIN_PAGE..=MAX_PAGE).contains(&ps) {
            return Err(Error::InvalidArgument(format!(
                "page size {ps} is not a power of two in 512..=65536"
            )));
        }
        if o.max_readers == 0 || o.max_readers > 1 << 16 {
            return Err(Error::InvalidArgument(
                "max_readers must be 1..=65536".into(),
            ));
        }
        let (data_path, lock_path) = if o.single_file {
            let mut l = path.as_os_str().to_owned();
            l.push("-lock");
            (path.to_path_buf(), PathBuf::from(l))
        } else {
            if !o.read_only {
                std::fs::create_dir_all(path).map_err(|e| Error::io("create directory", e))?;
            }
            (path.join("data.sdb"), path.join("lock.sdb"))
        };
        let file = DataFile::open(&data_path, o.read_only, true)?;
        #[cfg(feature = "fault-injection")]
        let file = file.with_faults(o.fault.clone());
        if o.no_lock && !o.read_only {
            return Err(Error::InvalidArgument(
                "no_lock is only for read-only environments".into(),
            ));
        }
        let (lock, opened) = if o.no_lock {
            (LockFile::private(o.max_readers, None)?, Opened::First(None))
        } else {
            match LockFile::open(&lock_path, o.max_readers, o.exclusive) {
                Err(Error::Io { source, .. }) if o.read_only && lock_on_read_only_fs(&source) => (
                    LockFile::private(o.max_readers, Some(&lock_path))?,
                    Opened::First(None),
                ),
                Err(Error::Io { source, .. }) if permission_denied(&source) => {
                    return Err(Error::Io {
                        op: "open lock file for writing (every opener, read-only too, \
                             needs it so writers see its readers; use \
                             EnvOptions::no_lock only if nothing writes the database)",
                        source,
                    });
                }
                r => r?,
            }
        };
        let boot_id = o.boot_id.unwrap_or_else(boot_id);
        if file.len()? == 0 {
            if o.read_only {
                return Err(Error::InvalidArgument(
                    "read-only open of an empty file".into(),
                ));
            }
            create(&file, ps, o, boot_id)?;
            // The new file's name must survive a crash as its bytes do.
            let dir = data_path.parent().unwrap_or(Path::new("."));
            sync_dir(if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            })?;
        }
        let metas = read_metas(&file)?;
        let newest = metas
            .iter()
            .max_by_key(|f| (f.meta.txnid, f.meta.flags & meta::STEADY))
            .ok_or_else(|| Error::corrupted(0, "no valid meta page"))?;
        let page_size = newest.meta.page_size;
        let layout = Layout::new(page_size);
        // Every opener maps the same upper bound: the first opener's (its
        // option or the recorded bound, the larger), so no process's map
        // ends before pages another may grow the file to.
        let want_upper = match opened {
            Opened::Joined => lock.upper_pgno(),
            Opened::First(_) => o.max_size.unwrap_or(DEFAULT_UPPER) / u64::from(page_size),
        };
        let upper_pgno = want_upper
            .max(u64::from(newest.meta.upper))
            .clamp(u64::from(META_PAGES) + 1, u64::from(MAX_PGNO)) as Pgno;
        let map = Arc::new(Map::new(
            &file,
            upper_pgno as usize * page_size as usize,
            o.write_map && !o.read_only,
            o.read_ahead,
            o.write_map
                && !o.read_only
                && matches!(o.durability, Durability::NoSync | Durability::SafeNoSync),
        )?);
        let growth_pgno = (o.growth_step / u64::from(page_size)).clamp(1, 1 << 20) as Pgno;
        // Without a lock file other processes' readers are unseen: never cut.
        let shrink_bytes = if lock.is_private() {
            0
        } else {
            o.shrink_threshold
        };
        let shared = Shared {
            path: path.to_path_buf(),
            file,
            map: Arc::clone(&map),
            lock,
            layout,
            page_size,
            lower_pgno: newest.meta.lower.max(META_PAGES),
            upper_pgno,
            growth_pgno,
            durability: o.durability,
            read_only: o.read_only,
            slow_readers: o.slow_readers.clone(),
            auto_sync: o.auto_sync,
            shrink_bytes,
            auto_compact: o.auto_compact,
            freed_since_compact: Default::default(),
            look_after: Default::default(),
            due_after: Default::default(),
            compact_backoff: std::sync::atomic::AtomicU64::new(1),
            shrink_skip: Default::default(),
            compact_due: Default::default(),
            shrink_backoff: Default::default(),
            shrink_last_next: Default::default(),
            compacting: Default::default(),
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
            token: crate::io::slots::new_owner_token(),
            pid: std::process::id(),
            fork_gen: crate::io::lock::fork_generation(),
            crashed: false,
            boot_id,
            registry: Registry::new(o.max_dbs),
            writer: Mutex::new(TxnState::new(Pager::new(map, layout))),
            writer_spinner: Default::default(),
            multi_cpu: std::thread::available_parallelism().is_ok_and(|n| n.get() > 1),
            group: Default::default(),
        };
        if let Opened::First(prev) = &opened {
            shared.recover(&metas, prev.as_deref())?;
            // Recovery ends with a sync: the published commit is durable.
            shared.lock.mark_synced(crate::io::lock::monotonic_ns());
            shared.lock.set_upper_pgno(u64::from(upper_pgno));
            shared.lock.downgrade()?;
        }
        #[cfg(feature = "fault-injection")]
        if let Some(n) = o.die_in_publish {
            shared.lock.set_die_in_publish(n);
        }
        #[cfg(feature = "fault-injection")]
        shared.lock.set_claim_pause(o.claim_pause_ms);
        let env = Env { shared };
        if o.validation {
            let r = env.check()?;
            if let Some(p) = r.problems.first() {
                return Err(Error::corrupted(
                    p.page,
                    format!(
                        "validation at open: {} ({} problems in all)",
                        p.what, r.problems_total
                    ),
                ));
            }
        }
        if o.write_map && !o.read_only {
            // Pages are written through the map: allocate the blocks of every
            // page in use (filling holes any sparse growth left).
            let ps = u64::from(page_size);
            let next = env.shared.published()?.next_pgno;
            env.shared.map.grow(
                next * ps,
                u64::from(growth_pgno) * ps,
                u64::from(upper_pgno) * ps,
            )?;
        }
        Ok(env)
    }
}

/// Whether opening the lock file failed because its file system is
/// read-only: nothing can be writing the database then.
fn lock_on_read_only_fs(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::EROFS)
}

/// Whether opening the lock file failed for want of permission.
fn permission_denied(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM))
}

/// `fsync` of a directory, so that a file created in it survives a crash.
fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io("fsync directory", e))
}

/// Writes the first meta page of a new file.
fn create(file: &DataFile, ps: u32, o: &EnvOptions, boot_id: [u8; 16]) -> Result<()> {
    let upper = (o.max_size.unwrap_or(DEFAULT_UPPER) / u64::from(ps))
        .clamp(u64::from(META_PAGES) + 1, u64::from(MAX_PGNO)) as u32;
    let m = Meta {
        page_size: ps,
        txnid: 1,
        flags: meta::STEADY,
        next_pgno: META_PAGES,
        lower: META_PAGES,
        upper,
        growth: (o.growth_step / u64::from(ps)).clamp(1, 1 << 20) as u32,
        boot_id,
        ..Meta::default()
    };
    let mut buf = vec![0u8; ps as usize * META_PAGES as usize];
    m.encode(&mut buf[..ps as usize]);
    file.write_at(&buf, 0)?;
    file.sync_data()
}
