//! LMDB through raw `lmdb-master-sys` FFI, configured as in Symas' db_bench_mdb runs:
//! `MDB_WRITEMAP | MDB_NOSYNC` (plus `MDB_NOMETASYNC`) for asynchronous commits, no
//! `MDB_NOSYNC` for durable ones, `MDB_APPEND` for sequential fills, `MDB_NORDAHEAD`
//! for random reads, and one reset/renewed read transaction per get.
//!
//! All `unsafe` code of the LMDB engine is in this module.

use std::ffi::{c_int, c_void, CStr, CString};
use std::fmt;
use std::marker::PhantomData;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr;

use lmdb_master_sys as ffi;

use super::{Engine, OpenOptions, Reader, Result, SyncMode, UpdateFn};

/// A failed LMDB call.
#[derive(Debug)]
pub struct LmdbError {
    op: &'static str,
    code: c_int,
}

impl fmt::Display for LmdbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // SAFETY: mdb_strerror accepts any error code and returns a pointer to a static
        // (or strerror-owned) NUL-terminated string.
        let msg = unsafe { CStr::from_ptr(ffi::mdb_strerror(self.code)) };
        write!(f, "{}: {} ({})", self.op, msg.to_string_lossy(), self.code)
    }
}

impl std::error::Error for LmdbError {}

fn check(op: &'static str, code: c_int) -> Result<()> {
    if code == ffi::MDB_SUCCESS {
        Ok(())
    } else {
        Err(Box::new(LmdbError { op, code }))
    }
}

fn val(bytes: &[u8]) -> ffi::MDB_val {
    ffi::MDB_val {
        mv_size: bytes.len(),
        mv_data: bytes.as_ptr() as *mut c_void,
    }
}

/// Borrows the bytes an `MDB_val` returned by LMDB points to.
///
/// # Safety
/// `v` must come from a successful `mdb_get`/`mdb_cursor_get`, and the result must not
/// outlive the transaction (or its next reset or update) that produced it.
unsafe fn bytes<'a>(v: &ffi::MDB_val) -> &'a [u8] {
    if v.mv_size == 0 {
        &[]
    } else {
        // SAFETY: per this function's contract, LMDB guarantees `mv_size` readable bytes
        // at `mv_data`, valid until the transaction ends.
        unsafe { std::slice::from_raw_parts(v.mv_data as *const u8, v.mv_size) }
    }
}

/// Smallest map LMDB gets: it is only address space (sparse with `MDB_WRITEMAP`).
const MIN_MAP_SIZE: u64 = 64 << 30;

/// An open LMDB environment and its unnamed database.
pub struct LmdbEngine {
    env: *mut ffi::MDB_env,
    dbi: ffi::MDB_dbi,
}

// SAFETY: an MDB_env may be used by many threads at once: every method here begins
// and ends its own transaction on the calling thread, LMDB serializes write
// transactions with its writer mutex, and read transactions (without MDB_NOTLS) bind
// a reader slot to the thread that uses them. No MDB_txn or cursor is shared between
// threads (`LmdbReader` is neither Send nor Sync).
unsafe impl Send for LmdbEngine {}
// SAFETY: see `Send` above; `&LmdbEngine` only gives access to thread-safe entry points.
unsafe impl Sync for LmdbEngine {}

impl LmdbEngine {
    /// Runs `f` in a write transaction and commits it, aborting on error.
    fn in_write_txn(&self, f: impl FnOnce(*mut ffi::MDB_txn) -> Result<()>) -> Result<()> {
        let mut txn = ptr::null_mut();
        // SAFETY: `self.env` is open; the out pointer is valid.
        check("mdb_txn_begin", unsafe {
            ffi::mdb_txn_begin(self.env, ptr::null_mut(), 0, &mut txn)
        })?;
        if let Err(e) = f(txn) {
            // SAFETY: `txn` is a live write transaction; abort frees it.
            unsafe { ffi::mdb_txn_abort(txn) };
            return Err(e);
        }
        // SAFETY: `txn` is live; commit frees it whether it succeeds or not.
        check("mdb_txn_commit", unsafe { ffi::mdb_txn_commit(txn) })
    }
}

impl Engine for LmdbEngine {
    type Reader<'a> = LmdbReader<'a>;

    const MAPS_DB: bool = true;

    fn config(opts: &OpenOptions) -> String {
        let mut c = String::from("MDB_WRITEMAP");
        if opts.sync == SyncMode::Async {
            c.push_str(" | MDB_NOSYNC | MDB_NOMETASYNC");
        }
        if opts.random_reads {
            c.push_str(" | MDB_NORDAHEAD");
        }
        c.push_str("; MDB_APPEND for fillseq; reset/renew read txn per get");
        c
    }

    fn version() -> String {
        // SAFETY: null out-pointers are allowed; the result is a static C string.
        let v = unsafe {
            CStr::from_ptr(ffi::mdb_version(
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
            ))
        };
        v.to_string_lossy().into_owned()
    }

    fn open(dir: &Path, opts: &OpenOptions) -> Result<Self> {
        let path = CString::new(dir.as_os_str().as_bytes())?;
        let map_size = MIN_MAP_SIZE.max(opts.data_bytes.saturating_mul(4));
        let mut flags = ffi::MDB_WRITEMAP;
        if opts.sync == SyncMode::Async {
            flags |= ffi::MDB_NOSYNC | ffi::MDB_NOMETASYNC;
        }
        if opts.random_reads {
            flags |= ffi::MDB_NORDAHEAD;
        }
        let mut env = ptr::null_mut();
        // SAFETY: the out pointer is valid.
        check("mdb_env_create", unsafe { ffi::mdb_env_create(&mut env) })?;
        // From here on, dropping `engine` closes `env`, including on errors below.
        let mut engine = LmdbEngine { env, dbi: 0 };
        // SAFETY: `env` was created and not yet opened, as these setters require.
        check("mdb_env_set_mapsize", unsafe {
            ffi::mdb_env_set_mapsize(env, usize::try_from(map_size)?)
        })?;
        // SAFETY: as above.
        check("mdb_env_set_maxreaders", unsafe {
            ffi::mdb_env_set_maxreaders(env, opts.readers.max(126) + 2)
        })?;
        // SAFETY: `env` is created, `path` is a NUL-terminated existing directory.
        check("mdb_env_open", unsafe {
            ffi::mdb_env_open(env, path.as_ptr(), flags, 0o644)
        })?;
        let mut dbi = 0;
        engine.in_write_txn(|txn| {
            // SAFETY: `txn` is a live write transaction; a null name is the main DB.
            check("mdb_dbi_open", unsafe {
                ffi::mdb_dbi_open(txn, ptr::null(), 0, &mut dbi)
            })
        })?;
        engine.dbi = dbi;
        Ok(engine)
    }

    fn write_batch(&self, pairs: &[(&[u8], &[u8])], sorted_append: bool) -> Result<()> {
        let flags = if sorted_append { ffi::MDB_APPEND } else { 0 };
        self.in_write_txn(|txn| {
            for (k, v) in pairs {
                let (mut key, mut data) = (val(k), val(v));
                // SAFETY: `txn` is a live write transaction on this env, `dbi` is open,
                // and `key`/`data` point to live slices; LMDB copies them.
                check("mdb_put", unsafe {
                    ffi::mdb_put(txn, self.dbi, &mut key, &mut data, flags)
                })?;
            }
            Ok(())
        })
    }

    fn delete_batch(&self, keys: &[&[u8]]) -> Result<u64> {
        let mut found = 0;
        self.in_write_txn(|txn| {
            for k in keys {
                let mut key = val(k);
                // SAFETY: `txn` is a live write transaction, `dbi` is open, `key`
                // points to a live slice; a null data pointer deletes the key.
                let rc = unsafe { ffi::mdb_del(txn, self.dbi, &mut key, ptr::null_mut()) };
                match rc {
                    ffi::MDB_SUCCESS => found += 1,
                    ffi::MDB_NOTFOUND => {}
                    rc => check("mdb_del", rc)?,
                }
            }
            Ok(())
        })?;
        Ok(found)
    }

    fn update_batch(&self, keys: &[&[u8]], update: &mut UpdateFn<'_>) -> Result<u64> {
        let mut found = 0;
        let mut buf = Vec::new();
        self.in_write_txn(|txn| {
            for (i, k) in keys.iter().enumerate() {
                let mut key = val(k);
                let mut data = val(&[]);
                // SAFETY: `txn` is a live write transaction, `dbi` open, `key` live.
                let rc = unsafe { ffi::mdb_get(txn, self.dbi, &mut key, &mut data) };
                buf.clear();
                match rc {
                    ffi::MDB_SUCCESS => {
                        found += 1;
                        // SAFETY: `data` came from a successful mdb_get in `txn` and is
                        // used before the put below changes the database.
                        update(i, Some(unsafe { bytes(&data) }), &mut buf);
                    }
                    ffi::MDB_NOTFOUND => update(i, None, &mut buf),
                    rc => check("mdb_get", rc)?,
                }
                let mut data = val(&buf);
                // SAFETY: as for mdb_get; LMDB copies `buf`.
                check("mdb_put", unsafe {
                    ffi::mdb_put(txn, self.dbi, &mut key, &mut data, 0)
                })?;
            }
            Ok(())
        })?;
        Ok(found)
    }

    fn reader(&self) -> Result<LmdbReader<'_>> {
        let mut txn = ptr::null_mut();
        // SAFETY: `self.env` is open; the out pointer is valid.
        check("mdb_txn_begin(RDONLY)", unsafe {
            ffi::mdb_txn_begin(self.env, ptr::null_mut(), ffi::MDB_RDONLY, &mut txn)
        })?;
        // SAFETY: `txn` is a live read-only transaction; each get renews it.
        unsafe { ffi::mdb_txn_reset(txn) };
        Ok(LmdbReader {
            txn,
            dbi: self.dbi,
            _engine: PhantomData,
        })
    }

    fn scan<F: FnMut(&[u8], &[u8])>(&self, reverse: bool, mut visit: F) -> Result<u64> {
        let step = if reverse {
            ffi::MDB_PREV
        } else {
            ffi::MDB_NEXT
        };
        let mut txn = ptr::null_mut();
        // SAFETY: `self.env` is open; the out pointer is valid.
        check("mdb_txn_begin(RDONLY)", unsafe {
            ffi::mdb_txn_begin(self.env, ptr::null_mut(), ffi::MDB_RDONLY, &mut txn)
        })?;
        let mut cursor = ptr::null_mut();
        // SAFETY: `txn` is live and `dbi` open.
        let rc = unsafe { ffi::mdb_cursor_open(txn, self.dbi, &mut cursor) };
        if rc != ffi::MDB_SUCCESS {
            // SAFETY: `txn` is live; abort frees it.
            unsafe { ffi::mdb_txn_abort(txn) };
            return check("mdb_cursor_open", rc).map(|()| 0);
        }
        let (mut key, mut data) = (val(&[]), val(&[]));
        let mut n = 0;
        let rc = loop {
            // SAFETY: `cursor` is open on the live `txn`; out values are valid.
            let rc = unsafe { ffi::mdb_cursor_get(cursor, &mut key, &mut data, step) };
            if rc != ffi::MDB_SUCCESS {
                break rc;
            }
            // SAFETY: both came from a successful mdb_cursor_get and are used before
            // the transaction ends.
            visit(unsafe { bytes(&key) }, unsafe { bytes(&data) });
            n += 1;
        };
        // SAFETY: the cursor belongs to `txn`, closed once before the txn is freed.
        unsafe {
            ffi::mdb_cursor_close(cursor);
            ffi::mdb_txn_abort(txn);
        }
        if rc == ffi::MDB_NOTFOUND {
            Ok(n)
        } else {
            check("mdb_cursor_get", rc).map(|()| n)
        }
    }

    fn sync(&self) -> Result<()> {
        // SAFETY: `self.env` is open.
        check("mdb_env_sync", unsafe { ffi::mdb_env_sync(self.env, 1) })
    }
}

impl Drop for LmdbEngine {
    fn drop(&mut self) {
        // SAFETY: `env` came from mdb_env_create and is closed exactly once; every
        // transaction and reader borrowing the engine has ended (the borrow checker
        // keeps `LmdbReader`s from outliving it).
        unsafe { ffi::mdb_env_close(self.env) };
    }
}

/// A read-only transaction kept reset between gets and renewed for each one, as
/// Symas' db_bench_mdb does.
pub struct LmdbReader<'a> {
    txn: *mut ffi::MDB_txn,
    dbi: ffi::MDB_dbi,
    _engine: PhantomData<&'a LmdbEngine>,
}

impl Reader for LmdbReader<'_> {
    #[inline]
    fn get<R, F: FnOnce(&[u8]) -> R>(&mut self, key: &[u8], f: F) -> Result<Option<R>> {
        // SAFETY: `txn` is a reset read-only transaction of this thread.
        check("mdb_txn_renew", unsafe { ffi::mdb_txn_renew(self.txn) })?;
        let mut k = val(key);
        let mut data = val(&[]);
        // SAFETY: `txn` is live again, `dbi` open, `k` points to `key`.
        let rc = unsafe { ffi::mdb_get(self.txn, self.dbi, &mut k, &mut data) };
        let out = match rc {
            // SAFETY: `data` came from a successful mdb_get and is only used by `f`,
            // before the reset below.
            ffi::MDB_SUCCESS => Ok(Some(f(unsafe { bytes(&data) }))),
            ffi::MDB_NOTFOUND => Ok(None),
            rc => check("mdb_get", rc).map(|()| None),
        };
        // SAFETY: `txn` is a live read-only transaction; reset releases its snapshot.
        unsafe { ffi::mdb_txn_reset(self.txn) };
        out
    }

    fn get_batch(
        &mut self,
        keys: &[&[u8]],
        visit: &mut dyn FnMut(usize, Option<&[u8]>),
    ) -> Result<()> {
        // SAFETY: `txn` is a reset read-only transaction of this thread.
        check("mdb_txn_renew", unsafe { ffi::mdb_txn_renew(self.txn) })?;
        let mut out = Ok(());
        for (i, key) in keys.iter().enumerate() {
            let mut k = val(key);
            let mut data = val(&[]);
            // SAFETY: `txn` is live, `dbi` open, `k` points to `key`.
            let rc = unsafe { ffi::mdb_get(self.txn, self.dbi, &mut k, &mut data) };
            match rc {
                // SAFETY: `data` came from a successful mdb_get; used before the reset.
                ffi::MDB_SUCCESS => visit(i, Some(unsafe { bytes(&data) })),
                ffi::MDB_NOTFOUND => visit(i, None),
                rc => {
                    out = check("mdb_get", rc);
                    break;
                }
            }
        }
        // SAFETY: `txn` is a live read-only transaction; reset releases its snapshot.
        unsafe { ffi::mdb_txn_reset(self.txn) };
        out
    }
}

impl Drop for LmdbReader<'_> {
    fn drop(&mut self) {
        // SAFETY: `txn` is a (reset) read-only transaction, freed exactly once here,
        // while the environment is still open (`'a` borrows the engine).
        unsafe { ffi::mdb_txn_abort(self.txn) };
    }
}
