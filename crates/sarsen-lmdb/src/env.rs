//! `MDB_env`: an environment handle owning a boxed [`sarsen::Env`].

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use sarsen::{Database, Durability, Env, EnvOptions};

use crate::consts::*;
use crate::error::to_code;
use crate::handles::ENVS;
use crate::{code, guard, guard_or, store, CResult, MDB_envinfo, MDB_stat};

/// Env flags accepted by `mdb_env_open`.
const OPEN_FLAGS: c_uint = MDB_FIXEDMAP
    | MDB_NOSUBDIR
    | MDB_NOSYNC
    | MDB_RDONLY
    | MDB_NOMETASYNC
    | MDB_WRITEMAP
    | MDB_MAPASYNC
    | MDB_NOTLS
    | MDB_NOLOCK
    | MDB_NORDAHEAD
    | MDB_NOMEMINIT;

/// Flags `mdb_env_set_flags` may change after open: the durability flags
/// (each write transaction begun after the change commits in the mode they
/// name, [`durability_now`]) and those with no effect on an open Sarsen
/// environment.
const RUNTIME_FLAGS: c_uint =
    MDB_NOSYNC | MDB_NOMETASYNC | MDB_MAPASYNC | MDB_NOMEMINIT | MDB_NOTLS;

/// The Sarsen durability that keeps the promise of LMDB's env `flags`, or
/// a stronger one: `MDB_NOSYNC` → `NoSync`, `MDB_MAPASYNC` → `SafeNoSync`,
/// `MDB_NOMETASYNC` → `NoMetaSync`, else `Durable`.
fn durability_of(flags: c_uint) -> Durability {
    if flags & MDB_NOSYNC != 0 {
        Durability::NoSync
    } else if flags & MDB_MAPASYNC != 0 {
        Durability::SafeNoSync
    } else if flags & MDB_NOMETASYNC != 0 {
        Durability::NoMetaSync
    } else {
        Durability::Durable
    }
}

/// The durability the env's flags ask for now (`mdb_env_set_flags` may
/// change them after open; heed switches `MDB_NOSYNC` this way): a write
/// transaction begun now commits in it (`RwTxn::set_durability`; outside
/// an environment opened `MDB_NOSYNC`, `MDB_NOSYNC` commits as Sarsen's
/// `SafeNoSync`, unsynced but never corrupt after a crash).
pub(crate) fn durability_now(h: &MDB_env) -> Durability {
    durability_of(h.cfg.lock().unwrap_or_else(|e| e.into_inner()).flags)
}

/// Settings given before `mdb_env_open`.
struct Config {
    flags: c_uint,
    max_readers: c_uint,
    max_dbs: Option<c_uint>,
    map_size: usize,
    path: Option<CString>,
    userctx: usize,
}

/// Where a database's comparison function is kept: an `MDB_cmp_func`, or
/// NULL before one is set (see [`crate::compare`]).
pub(crate) type CmpSlot = Arc<AtomicPtr<()>>;

/// What a database handle number stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DbiInfo {
    /// The Sarsen handle.
    pub(crate) db: Database,
    /// Whether it is DUPSORT (fixed when it was created).
    pub(crate) dup: bool,
    /// Whether it was opened with `MDB_INTEGERKEY` or `MDB_INTEGERDUP`.
    pub(crate) int: bool,
}

/// A number never used before as a version of any environment's table of
/// database handles (so a transaction object reused in another
/// environment never takes its old copy for current).
fn new_dbi_version() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// An environment handle (LMDB's `MDB_env`). Created by
/// [`mdb_env_create`], opened by [`mdb_env_open`], freed by
/// [`mdb_env_close`].
pub struct MDB_env {
    /// This environment's handle (what C holds, see [`crate::handles`]).
    pub(crate) handle: usize,
    cfg: Mutex<Config>,
    /// Opened with `MDB_RDONLY` (read without the lock on `cfg`).
    rdonly: AtomicBool,
    /// The open environment (`Box::into_raw`), NULL before open.
    env: AtomicPtr<Env>,
    /// Transactions begun and not yet ended.
    pub(crate) live_txns: AtomicUsize,
    /// Database handles: index `MDB_dbi`; 0 is never used (LMDB's free
    /// list), 1 is the main database once a transaction opened it.
    pub(crate) dbis: RwLock<Vec<Option<DbiInfo>>>,
    /// Set anew (under the write lock of `dbis`) by every change of
    /// `dbis`, from [`new_dbi_version`]: a transaction's copy of the table
    /// is current while it holds this value (see
    /// [`crate::txn::MDB_txn::db`]).
    pub(crate) dbi_version: AtomicU64,
    /// The names of the named databases, by `MDB_dbi` (for re-creating
    /// one: [`crate::dbi::fit_integers`], [`crate::compare`]).
    pub(crate) dbi_names: Mutex<HashMap<crate::MDB_dbi, String>>,
    /// The functions `mdb_set_compare` (`false`) and `mdb_set_dupsort`
    /// (`true`) set, by database name (`None`: the main database).
    pub(crate) cmp_slots: Mutex<HashMap<(Option<String>, bool), CmpSlot>>,
}

impl MDB_env {
    /// The open Sarsen environment, or `EINVAL` before open.
    pub(crate) fn env(&self) -> CResult<&'static Env> {
        let p = self.env.load(Ordering::Acquire);
        if p.is_null() {
            return Err(libc::EINVAL);
        }
        // SAFETY: `p` came from `Box::into_raw` at open and is freed only by
        // `mdb_env_close` when no transaction is live; LMDB's contract (and
        // ours) is that no other call on this handle runs after close. The
        // `'static` borrow is what transactions hold, see `txn.rs`.
        Ok(unsafe { &*p })
    }

    /// The env flags given at create/open.
    pub(crate) fn flags(&self) -> c_uint {
        self.cfg.lock().unwrap_or_else(|e| e.into_inner()).flags
    }

    /// Whether the environment was opened with `MDB_RDONLY`.
    #[inline]
    pub(crate) fn rdonly(&self) -> bool {
        self.rdonly.load(Ordering::Relaxed)
    }

    /// Copies the table of database handles into `into`; its version.
    pub(crate) fn copy_dbis(&self, into: &mut Vec<Option<DbiInfo>>) -> u64 {
        let t = self.dbis.read().unwrap_or_else(|e| e.into_inner());
        into.clear();
        into.extend_from_slice(&t);
        // Under the lock: writers move it on under the write lock.
        self.dbi_version.load(Ordering::Acquire)
    }

    /// The `MDB_dbi` of database `info`, giving it a number if it has none.
    pub(crate) fn dbi_of(&self, info: DbiInfo, main: bool) -> crate::MDB_dbi {
        let mut t = self.dbis.write().unwrap_or_else(|e| e.into_inner());
        self.dbi_version.store(new_dbi_version(), Ordering::Release);
        if t.len() < 2 {
            t.resize(2, None);
        }
        let entry = Some(info);
        if main {
            t[1] = entry;
            return 1;
        }
        if let Some(i) = t.iter().skip(2).position(|d| *d == entry) {
            return (i + 2) as crate::MDB_dbi;
        }
        if let Some(i) = t.iter().skip(2).position(|d| d.is_none()) {
            t[i + 2] = entry;
            return (i + 2) as crate::MDB_dbi;
        }
        t.push(entry);
        (t.len() - 1) as crate::MDB_dbi
    }

    /// The name of named database `dbi`.
    pub(crate) fn dbi_name(&self, dbi: crate::MDB_dbi) -> Option<String> {
        let m = self.dbi_names.lock().unwrap_or_else(|e| e.into_inner());
        m.get(&dbi).cloned()
    }

    /// Forgets the number `dbi` (`mdb_dbi_close`, `mdb_drop(.., 1)`).
    pub(crate) fn forget_dbi(&self, dbi: crate::MDB_dbi) {
        let mut t = self.dbis.write().unwrap_or_else(|e| e.into_inner());
        self.dbi_version.store(new_dbi_version(), Ordering::Release);
        if dbi >= 2 {
            if let Some(d) = t.get_mut(dbi as usize) {
                *d = None;
            }
        }
    }
}

/// The environment handle behind `p`, or `EINVAL`.
///
/// # Safety
///
/// As every C entry point: a live handle is not being closed concurrently.
#[inline]
pub(crate) unsafe fn env_ref<'a>(p: *const MDB_env) -> CResult<&'a MDB_env> {
    let o = ENVS.get(p.addr()).ok_or(libc::EINVAL)?;
    // SAFETY: `p` is a live handle, so `o` is the `Box<MDB_env>` published
    // for it. The handle is shared (`&`): its mutable parts sit behind
    // locks/atomics.
    Ok(unsafe { &*(o as *const MDB_env) })
}

/// Creates an environment handle (`mdb_env_create`); `*env` gets it.
///
/// # Safety
///
/// `env` is NULL (giving `EINVAL`) or valid for a write of a pointer.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_create(env: *mut *mut MDB_env) -> c_int {
    guard(|| {
        if env.is_null() {
            return libc::EINVAL;
        }
        let slot = match ENVS.alloc() {
            Ok((slot, _)) => slot,
            Err(e) => return e,
        };
        let h = Box::into_raw(Box::new(MDB_env {
            handle: 0,
            rdonly: AtomicBool::new(false),
            cfg: Mutex::new(Config {
                flags: 0,
                max_readers: 126,
                max_dbs: None,
                map_size: 0,
                path: None,
                userctx: 0,
            }),
            env: AtomicPtr::new(ptr::null_mut()),
            live_txns: AtomicUsize::new(0),
            dbis: RwLock::new(Vec::new()),
            dbi_version: AtomicU64::new(new_dbi_version()),
            dbi_names: Mutex::new(HashMap::new()),
            cmp_slots: Mutex::new(HashMap::new()),
        }));
        let handle = ENVS.publish(slot, h as *mut ());
        // SAFETY: `h` is ours alone until the handle is given out below.
        unsafe { (*h).handle = handle };
        // SAFETY: `env` is non-NULL and the caller promises it is writable.
        unsafe { env.write(ptr::without_provenance_mut(handle)) };
        MDB_SUCCESS
    })
}

/// Whether `dir` holds an LMDB environment and no Sarsen one.
fn holds_lmdb(path: &Path, nosubdir: bool) -> bool {
    if nosubdir {
        // A single LMDB file starts with a meta page whose magic is
        // 0xBEEFC0DE at byte 16 (after the page header).
        use std::io::Read;
        let mut head = [0u8; 20];
        let read = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head));
        return read.is_ok() && head[16..20] == 0xBEEF_C0DEu32.to_ne_bytes();
    }
    path.join("data.mdb").exists() && !path.join("data.sdb").exists()
}

/// Opens the environment at `path` (`mdb_env_open`). See the README for
/// how each flag maps to Sarsen. Without `MDB_NOSUBDIR` the directory must
/// exist (`ENOENT`); it holds Sarsen's `data.sdb` and `lock.sdb`. A
/// directory holding LMDB's `data.mdb` and no `data.sdb` gives
/// `MDB_INVALID`, whose text names the migration
/// (`mdb_dump -a | sarsen load`). `mode` is not used (files are created
/// with the process's umask). On error the handle can only be closed.
///
/// # Safety
///
/// `env` is a handle from [`mdb_env_create`]; `path` is NULL or a
/// NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_open(
    env: *mut MDB_env,
    path: *const c_char,
    flags: c_uint,
    mode: libc::mode_t,
) -> c_int {
    let _ = mode;
    guard(|| {
        // SAFETY: checked by `env_ref`.
        let h = match unsafe { env_ref(env) } {
            Ok(h) => h,
            Err(e) => return e,
        };
        if path.is_null() || flags & !OPEN_FLAGS != 0 || !h.env.load(Ordering::Acquire).is_null() {
            return libc::EINVAL;
        }
        // SAFETY: non-NULL and NUL-terminated per the contract.
        let cpath = unsafe { CStr::from_ptr(path) };
        let p = PathBuf::from(OsStr::from_bytes(cpath.to_bytes()));
        code(open(h, &p, cpath, flags))
    })
}

fn open(h: &MDB_env, p: &Path, cpath: &CStr, flags: c_uint) -> CResult<()> {
    let mut cfg = h.cfg.lock().unwrap_or_else(|e| e.into_inner());
    let nosubdir = flags & MDB_NOSUBDIR != 0;
    let rdonly = flags & MDB_RDONLY != 0;
    if !nosubdir && !p.is_dir() {
        return Err(libc::ENOENT);
    }
    if holds_lmdb(p, nosubdir) {
        return Err(MDB_INVALID);
    }
    if flags & MDB_NOLOCK != 0 && !rdonly {
        return Err(libc::EINVAL);
    }
    let durability = durability_of(flags);
    let mut o = EnvOptions::new()
        .durability(durability)
        .single_file(nosubdir)
        .read_only(rdonly)
        .no_lock(flags & MDB_NOLOCK != 0)
        .write_map(flags & MDB_WRITEMAP != 0)
        .read_ahead(flags & MDB_NORDAHEAD == 0)
        .max_readers(cfg.max_readers);
    if let Some(n) = cfg.max_dbs {
        o = o.max_dbs(n);
    }
    // Sarsen reserves address space for the file's upper bound (1 TiB by
    // default) at open. Where that much is refused (`ulimit -v`, valgrind),
    // the largest of 64 GiB, 4 GiB and the map size the program set that
    // can be reserved is asked for instead. (Probed before opening: a new
    // environment records the bound it was created with.)
    let mut bound = None;
    for b in [1u64 << 40, 64 << 30, 4 << 30, cfg.map_size as u64] {
        if b > 0 && can_reserve(b) {
            bound = (b < 1 << 40).then_some(b);
            break;
        }
    }
    if let Some(b) = bound {
        o = o.max_size(b);
    }
    // SAFETY: LMDB's contract: nothing but the library modifies the files
    // while they are open (see `sarsen::EnvOptions::open`).
    let opened = unsafe { o.open(p) };
    let env = opened.map_err(|e| match e {
        // No meta page to trust: not a Sarsen file, as LMDB says of a
        // file without its magic.
        sarsen::Error::Corrupted { page: 0..=2, .. } => MDB_INVALID,
        e => to_code(&e),
    })?;
    cfg.flags |= flags;
    h.rdonly.store(rdonly, Ordering::Relaxed);
    cfg.path = Some(cpath.to_owned());
    h.env.store(Box::into_raw(Box::new(env)), Ordering::Release);
    Ok(())
}

/// Whether `bytes` of address space can be reserved now.
fn can_reserve(bytes: u64) -> bool {
    let Ok(len) = usize::try_from(bytes) else {
        return false;
    };
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE;
    // SAFETY: a new inaccessible anonymous mapping at an address the kernel
    // chooses, unmapped at once; no existing memory is affected.
    unsafe {
        let p = libc::mmap(ptr::null_mut(), len, libc::PROT_NONE, flags, -1, 0);
        if p == libc::MAP_FAILED {
            return false;
        }
        libc::munmap(p, len);
    }
    true
}

/// Closes the environment and frees the handle (`mdb_env_close`). Every
/// transaction must have ended first (LMDB's rule); if some are still live
/// the handle is ended (refused from then on) but its memory and the environment are
/// leaked, so those transactions stay memory-safe until they end.
///
/// # Safety
///
/// `env` is a handle from [`mdb_env_create`], not used after this call.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_close(env: *mut MDB_env) {
    guard_or((), || {
        // SAFETY: checked.
        let Ok(h) = (unsafe { env_ref(env) }) else {
            return;
        };
        let live = h.live_txns.load(Ordering::Acquire);
        let Some(r) = ENVS.retire(env.addr()) else {
            return;
        };
        let obj = r.obj as *mut MDB_env;
        // The slot forgets the object: freed below, or leaked.
        ENVS.recycle(r, false);
        if live > 0 {
            return;
        }
        // SAFETY: the object of a handle that was live until just now, a
        // `Box<MDB_env>` no transaction borrows.
        let h = unsafe { Box::from_raw(obj) };
        let p = h.env.swap(ptr::null_mut(), Ordering::AcqRel);
        if !p.is_null() {
            // SAFETY: from `Box::into_raw` in `open`; no transaction is live.
            drop(unsafe { Box::from_raw(p) });
        }
    })
}

/// Runs `f` on the open environment of handle `env`.
///
/// # Safety
///
/// As [`env_ref`].
pub(crate) unsafe fn with_env(
    env: *const MDB_env,
    f: impl FnOnce(&MDB_env, &Env) -> CResult<()>,
) -> c_int {
    guard(|| {
        // SAFETY: checked by `env_ref`.
        let h = match unsafe { env_ref(env) } {
            Ok(h) => h,
            Err(e) => return e,
        };
        code(h.env().and_then(|e| f(h, e)))
    })
}

/// Runs `f` on the settings of handle `env` (open or not).
///
/// # Safety
///
/// As [`env_ref`].
unsafe fn with_cfg(
    env: *const MDB_env,
    f: impl FnOnce(&MDB_env, &mut Config) -> CResult<()>,
) -> c_int {
    guard(|| {
        // SAFETY: checked by `env_ref`.
        let h = match unsafe { env_ref(env) } {
            Ok(h) => h,
            Err(e) => return e,
        };
        let mut c = h.cfg.lock().unwrap_or_else(|e| e.into_inner());
        code(f(h, &mut c))
    })
}

/// Whether the handle's environment is open.
fn is_open(h: &MDB_env) -> bool {
    !h.env.load(Ordering::Acquire).is_null()
}

/// Records the map size (`mdb_env_set_mapsize`). Accepted as a hint: the
/// file grows on its own; `MDB_MAP_FULL` comes only at Sarsen's upper
/// bound (1 TiB by default).
///
/// # Safety
///
/// `env` is a handle from [`mdb_env_create`].
#[no_mangle]
pub unsafe extern "C" fn mdb_env_set_mapsize(env: *mut MDB_env, size: usize) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(env, |_, c| {
            c.map_size = size;
            Ok(())
        })
    }
}

/// Sets the number of reader slots, before open (`mdb_env_set_maxreaders`).
///
/// # Safety
///
/// `env` is a handle from [`mdb_env_create`].
#[no_mangle]
pub unsafe extern "C" fn mdb_env_set_maxreaders(env: *mut MDB_env, readers: c_uint) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(env, |h, c| {
            if readers == 0 || is_open(h) {
                return Err(libc::EINVAL);
            }
            c.max_readers = readers;
            Ok(())
        })
    }
}

/// The number of reader slots (`mdb_env_get_maxreaders`).
///
/// # Safety
///
/// `env` is a handle; `readers` is NULL (`EINVAL`) or writable.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_get_maxreaders(env: *mut MDB_env, readers: *mut c_uint) -> c_int {
    if readers.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(env, |h, c| {
            let n = match h.env() {
                Ok(e) => e.info().map_err(|e| to_code(&e))?.max_readers,
                Err(_) => c.max_readers,
            };
            // SAFETY: non-NULL, writable per the contract.
            store(readers, n);
            Ok(())
        })
    }
}

/// Sets the number of named databases, before open (`mdb_env_set_maxdbs`).
///
/// # Safety
///
/// `env` is a handle from [`mdb_env_create`].
#[no_mangle]
pub unsafe extern "C" fn mdb_env_set_maxdbs(env: *mut MDB_env, dbs: crate::MDB_dbi) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(env, |h, c| {
            if is_open(h) {
                return Err(libc::EINVAL);
            }
            c.max_dbs = Some(dbs);
            Ok(())
        })
    }
}

/// The longest key, bytes (`mdb_env_get_maxkeysize`): Sarsen's limit for
/// DUPSORT keys and values, the smallest of its limits (1942 at 4 KiB
/// pages); -1 for an invalid handle.
///
/// # Safety
///
/// `env` is a handle from [`mdb_env_create`].
#[no_mangle]
pub unsafe extern "C" fn mdb_env_get_maxkeysize(env: *mut MDB_env) -> c_int {
    guard_or(-1, || {
        // SAFETY: checked by `env_ref`.
        match unsafe { env_ref(env) } {
            Ok(h) => match h.env() {
                Ok(e) => e.max_key_size().saturating_sub(74) as c_int,
                Err(_) => 2016 - 74,
            },
            Err(_) => -1,
        }
    })
}

/// Flushes the data file (`mdb_env_sync`); `force` is not needed: every
/// call syncs.
///
/// # Safety
///
/// `env` is a handle from [`mdb_env_create`].
#[no_mangle]
pub unsafe extern "C" fn mdb_env_sync(env: *mut MDB_env, force: c_int) -> c_int {
    let _ = force;
    // SAFETY: forwarded contract.
    unsafe { with_env(env, |_, e| e.sync().map_err(|e| to_code(&e))) }
}

/// Statistics of the main database (`mdb_env_stat`).
///
/// # Safety
///
/// `env` is a handle; `stat` is NULL (`EINVAL`) or writable.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_stat(env: *mut MDB_env, stat: *mut MDB_stat) -> c_int {
    if stat.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: forwarded contract.
    unsafe {
        with_env(env, |h, _| {
            // `&'static`, as transaction views hold it (see `MDB_env::env`).
            let e = h.env()?;
            let r = e.read_txn().map_err(|e| to_code(&e))?;
            let mut s = MDB_stat::from(r.stat(e.main_db()).map_err(|e| to_code(&e))?);
            // As LMDB: the named databases' records count as entries.
            let v = crate::txn::View::Ro(&r);
            let names = crate::main_view::names_in(&v, e.main_db())?;
            s.ms_entries += crate::main_view::record_count(&v, e.main_db(), &names)? as usize;
            // SAFETY: non-NULL, writable per the contract.
            store(stat, s);
            Ok(())
        })
    }
}

/// Facts about the environment (`mdb_env_info`).
///
/// # Safety
///
/// `env` is a handle; `info` is NULL (`EINVAL`) or writable.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_info(env: *mut MDB_env, info: *mut MDB_envinfo) -> c_int {
    if info.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: forwarded contract.
    unsafe {
        with_env(env, |_, e| {
            let i = e.info().map_err(|e| to_code(&e))?;
            let v = MDB_envinfo {
                me_mapaddr: ptr::null_mut(),
                me_mapsize: i.geometry.upper as usize,
                me_last_pgno: i.next_pgno.saturating_sub(1) as usize,
                me_last_txnid: crate::txn::lmdb_txnid(i.last_txnid) as usize,
                me_maxreaders: i.max_readers,
                me_numreaders: i.readers_used,
            };
            // SAFETY: non-NULL, writable per the contract.
            store(info, v);
            Ok(())
        })
    }
}

/// The path given to open (`mdb_env_get_path`); valid until close.
///
/// # Safety
///
/// `env` is a handle; `path` is NULL (`EINVAL`) or writable.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_get_path(env: *mut MDB_env, path: *mut *const c_char) -> c_int {
    if path.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(env, |_, c| {
            let p = c.path.as_ref().ok_or(libc::EINVAL)?;
            // SAFETY: non-NULL, writable; the CString lives until close.
            store(path, p.as_ptr());
            Ok(())
        })
    }
}

/// Sets or clears flags (`mdb_env_set_flags`): before open any open flag;
/// after open only those without effect on an open Sarsen environment
/// (`MDB_NOMEMINIT`, `MDB_NOTLS`). Durability is fixed at open, so
/// changing `MDB_NOSYNC`, `MDB_NOMETASYNC` or `MDB_MAPASYNC` after open is
/// `EINVAL`.
///
/// # Safety
///
/// `env` is a handle from [`mdb_env_create`].
#[no_mangle]
pub unsafe extern "C" fn mdb_env_set_flags(
    env: *mut MDB_env,
    flags: c_uint,
    onoff: c_int,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(env, |h, c| {
            let allowed = if is_open(h) {
                RUNTIME_FLAGS
            } else {
                OPEN_FLAGS
            };
            if flags & !allowed != 0 {
                return Err(libc::EINVAL);
            }
            if onoff != 0 {
                c.flags |= flags;
            } else {
                c.flags &= !flags;
            }
            Ok(())
        })
    }
}

/// The env flags (`mdb_env_get_flags`).
///
/// # Safety
///
/// `env` is a handle; `flags` is NULL (`EINVAL`) or writable.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_get_flags(env: *mut MDB_env, flags: *mut c_uint) -> c_int {
    if flags.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(env, |_, c| {
            // SAFETY: non-NULL, writable per the contract.
            store(flags, c.flags);
            Ok(())
        })
    }
}

/// Stores an application pointer in the handle (`mdb_env_set_userctx`).
///
/// # Safety
///
/// `env` is a handle from [`mdb_env_create`].
#[no_mangle]
pub unsafe extern "C" fn mdb_env_set_userctx(env: *mut MDB_env, ctx: *mut c_void) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(env, |_, c| {
            c.userctx = ctx as usize;
            Ok(())
        })
    }
}

/// The application pointer (`mdb_env_get_userctx`); NULL for an invalid
/// handle.
///
/// # Safety
///
/// `env` is a handle from [`mdb_env_create`].
#[no_mangle]
pub unsafe extern "C" fn mdb_env_get_userctx(env: *mut MDB_env) -> *mut c_void {
    guard_or(ptr::null_mut(), || {
        // SAFETY: checked by `env_ref`.
        match unsafe { env_ref(env) } {
            Ok(h) => h.cfg.lock().unwrap_or_else(|e| e.into_inner()).userctx as *mut c_void,
            Err(_) => ptr::null_mut(),
        }
    })
}

/// Accepts an assertion callback (`mdb_env_set_assert`); Sarsen reports
/// problems as error codes and never calls it.
///
/// # Safety
///
/// `env` is a handle from [`mdb_env_create`].
#[no_mangle]
pub unsafe extern "C" fn mdb_env_set_assert(
    env: *mut MDB_env,
    func: Option<crate::MDB_assert_func>,
) -> c_int {
    let _ = func;
    // SAFETY: forwarded contract.
    unsafe { with_cfg(env, |_, _| Ok(())) }
}

/// Frees reader slots of dead processes (`mdb_reader_check`); `*dead`
/// gets their number.
///
/// # Safety
///
/// `env` is a handle; `dead` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn mdb_reader_check(env: *mut MDB_env, dead: *mut c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        with_env(env, |_, e| {
            let n = e.reader_check().map_err(|e| to_code(&e))?;
            // SAFETY: NULL or writable per the contract.
            store(dead, n as c_int);
            Ok(())
        })
    }
}

/// Lists the reader slots in use through `func`, one line each
/// (`mdb_reader_list`): a header line, then `pid thread txnid` per slot.
///
/// # Safety
///
/// `env` is a handle; `func` is NULL (`EINVAL`) or a valid callback that
/// accepts `ctx`.
#[no_mangle]
pub unsafe extern "C" fn mdb_reader_list(
    env: *mut MDB_env,
    func: Option<crate::MDB_msg_func>,
    ctx: *mut c_void,
) -> c_int {
    let Some(func) = func else {
        return libc::EINVAL;
    };
    // SAFETY: forwarded contract.
    unsafe {
        with_env(env, |h, e| {
            let rs = e.readers().map_err(|e| to_code(&e))?;
            let mut lines = vec!["    pid     thread     txnid\n".to_string()];
            // With MDB_NOTLS an LMDB reader slot is released when its
            // transaction ends; Sarsen keeps idle slots for the thread:
            // list only those holding a snapshot then.
            let notls = h.flags() & MDB_NOTLS != 0;
            let rs: Vec<_> = rs
                .into_iter()
                .filter(|r| !notls || r.txnid.is_some())
                .collect();
            if rs.is_empty() {
                lines = vec!["(no active readers)\n".to_string()];
            }
            for r in rs {
                let t = r
                    .txnid
                    .map_or("-".to_string(), |t| crate::txn::lmdb_txnid(t).to_string());
                lines.push(format!("{:10} {:10x} {:>10}\n", r.pid, r.thread, t));
            }
            for l in lines {
                let c = CString::new(l).map_err(|_| libc::EINVAL)?;
                // SAFETY: the caller promises `func` accepts a string and `ctx`.
                if func(c.as_ptr(), ctx) < 0 {
                    return Err(libc::EIO);
                }
            }
            Ok(())
        })
    }
}

/// The data file's descriptor (`mdb_env_get_fd`): Sarsen's own
/// (`Env::data_fd`), open for reading and writing (reading only with
/// `MDB_RDONLY`), closed with the environment; -1 before
/// `mdb_env_open`, as LMDB. For `fstat`, `fdatasync` and the like:
/// writing through it corrupts the environment, as in LMDB.
///
/// # Safety
///
/// `env` is a handle; `fd` is NULL (`EINVAL`) or writable.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_get_fd(env: *mut MDB_env, fd: *mut c_int) -> c_int {
    use std::os::fd::AsRawFd;
    if fd.is_null() {
        return libc::EINVAL;
    }
    guard(|| {
        // SAFETY: checked by `env_ref`.
        let h = match unsafe { env_ref(env) } {
            Ok(h) => h,
            Err(e) => return e,
        };
        let raw = h.env().map_or(-1, |e| e.data_fd().as_raw_fd());
        // SAFETY: non-NULL, writable per the contract.
        unsafe { store(fd, raw) };
        MDB_SUCCESS
    })
}
