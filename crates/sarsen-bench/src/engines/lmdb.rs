//! LMDB through raw `lmdb-master-sys` FFI, configured as in Symas' db_bench_mdb runs:
//! `MDB_WRITEMAP | MDB_NOSYNC` (plus `MDB_NOMETASYNC`) for asynchronous commits, no
//! `MDB_NOSYNC` for durable ones, `MDB_APPEND` for sequential fills, `MDB_NORDAHEAD`
//! for random reads, and one reset/renewed read transaction per get.
//!
//! The engine calls LMDB through a table of function pointers, [`Api`], as a C
//! program linked to a shared `liblmdb.so` calls it through the PLT: [`LMDB`] holds
//! the functions of the LMDB built into this binary, and the `sarsen-capi` engine
//! runs this same code on the table of Sarsen's `liblmdb.so` (see
//! [`super::sarsen_capi`]), so the two differ only in the library.
//!
//! All `unsafe` code of the LMDB engine is in this module.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::fmt;
use std::marker::PhantomData;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr;

use ffi::{MDB_cursor, MDB_cursor_op, MDB_dbi, MDB_env, MDB_txn, MDB_val};
use lmdb_master_sys as ffi;

use super::{Engine, OpenOptions, Reader, Result, SyncMode, UpdateFn};

/// Declares [`Api`], the table of the LMDB functions the engine calls, and
/// [`LMDB`], that table for the LMDB built into this binary.
macro_rules! lmdb_api {
    ($($name:ident: fn($($arg:ty),*) $(-> $ret:ty)?;)*) => {
        /// The LMDB functions the engine calls, each with LMDB 0.9's C signature.
        #[derive(Clone, Copy)]
        pub struct Api {
            $(
                #[doc = concat!("`", stringify!($name), "`.")]
                pub $name: unsafe extern "C" fn($($arg),*) $(-> $ret)?,
            )*
        }

        /// The functions of the LMDB built into this binary (`lmdb-master-sys`).
        pub static LMDB: Api = Api { $($name: ffi::$name,)* };

        #[cfg(feature = "sarsen-capi")]
        impl Api {
            /// The same functions from a dynamically loaded library.
            ///
            /// # Errors
            /// A function the library does not export.
            ///
            /// # Safety
            /// Each symbol of `lib` with an LMDB function's name must be that function,
            /// with LMDB 0.9's signature.
            pub unsafe fn load(lib: &'static libloading::Library) -> Result<Api> {
                Ok(Api {
                    $(
                        // SAFETY: the caller promises the symbol has this signature;
                        // `lib` is never unloaded, so the pointer stays valid.
                        $name: *unsafe {
                            lib.get::<unsafe extern "C" fn($($arg),*) $(-> $ret)?>(
                                concat!(stringify!($name), "\0").as_bytes(),
                            )
                        }?,
                    )*
                })
            }
        }
    };
}

lmdb_api! {
    mdb_version: fn(*mut c_int, *mut c_int, *mut c_int) -> *mut c_char;
    mdb_strerror: fn(c_int) -> *mut c_char;
    mdb_env_create: fn(*mut *mut MDB_env) -> c_int;
    mdb_env_set_mapsize: fn(*mut MDB_env, ffi::mdb_size_t) -> c_int;
    mdb_env_set_maxreaders: fn(*mut MDB_env, c_uint) -> c_int;
    mdb_env_open: fn(*mut MDB_env, *const c_char, c_uint, ffi::mdb_mode_t) -> c_int;
    mdb_env_close: fn(*mut MDB_env);
    mdb_env_sync: fn(*mut MDB_env, c_int) -> c_int;
    mdb_txn_begin: fn(*mut MDB_env, *mut MDB_txn, c_uint, *mut *mut MDB_txn) -> c_int;
    mdb_txn_commit: fn(*mut MDB_txn) -> c_int;
    mdb_txn_abort: fn(*mut MDB_txn);
    mdb_txn_reset: fn(*mut MDB_txn);
    mdb_txn_renew: fn(*mut MDB_txn) -> c_int;
    mdb_dbi_open: fn(*mut MDB_txn, *const c_char, c_uint, *mut MDB_dbi) -> c_int;
    mdb_get: fn(*mut MDB_txn, MDB_dbi, *mut MDB_val, *mut MDB_val) -> c_int;
    mdb_put: fn(*mut MDB_txn, MDB_dbi, *mut MDB_val, *mut MDB_val, c_uint) -> c_int;
    mdb_del: fn(*mut MDB_txn, MDB_dbi, *mut MDB_val, *mut MDB_val) -> c_int;
    mdb_cursor_open: fn(*mut MDB_txn, MDB_dbi, *mut *mut MDB_cursor) -> c_int;
    mdb_cursor_get: fn(*mut MDB_cursor, *mut MDB_val, *mut MDB_val, MDB_cursor_op) -> c_int;
    mdb_cursor_close: fn(*mut MDB_cursor);
    mdb_cursor_del: fn(*mut MDB_cursor, c_uint) -> c_int;
}

/// The LMDB library an [`LmdbEngine`] calls.
pub trait Library: 'static {
    /// The library's functions (loaded on first use, if it is loaded).
    ///
    /// # Errors
    /// The library cannot be found or loaded.
    fn api() -> Result<&'static Api>;

    /// What the engine's `config` line says of the library (empty for LMDB).
    fn describe() -> String;
}

/// LMDB itself, as built into this binary.
pub struct Lmdb;

impl Library for Lmdb {
    fn api() -> Result<&'static Api> {
        Ok(&LMDB)
    }

    fn describe() -> String {
        String::new()
    }
}

/// A failed LMDB call.
#[derive(Debug)]
pub struct LmdbError {
    op: &'static str,
    code: c_int,
    /// The library's text for `code`.
    msg: String,
}

impl fmt::Display for LmdbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} ({})", self.op, self.msg, self.code)
    }
}

impl std::error::Error for LmdbError {}

/// `Ok` for `MDB_SUCCESS`, else the error of `op` with the text `api` gives it.
fn check(api: &Api, op: &'static str, code: c_int) -> Result<()> {
    if code == ffi::MDB_SUCCESS {
        Ok(())
    } else {
        // SAFETY: mdb_strerror accepts any error code and returns a pointer to a static
        // (or strerror-owned) NUL-terminated string.
        let msg = unsafe { CStr::from_ptr((api.mdb_strerror)(code)) };
        let msg = msg.to_string_lossy().into_owned();
        Err(Box::new(LmdbError { op, code, msg }))
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

/// An open LMDB environment and its unnamed database, in library `L`.
pub struct LmdbEngine<L: Library = Lmdb> {
    api: &'static Api,
    env: *mut ffi::MDB_env,
    dbi: ffi::MDB_dbi,
    _lib: PhantomData<L>,
}

// SAFETY: an MDB_env may be used by many threads at once: every method here begins
// and ends its own transaction on the calling thread, LMDB serializes write
// transactions with its writer mutex, and read transactions (without MDB_NOTLS) bind
// a reader slot to the thread that uses them. No MDB_txn or cursor is shared between
// threads (`LmdbReader` is neither Send nor Sync).
unsafe impl<L: Library> Send for LmdbEngine<L> {}
// SAFETY: see `Send` above; `&LmdbEngine` only gives access to thread-safe entry points.
unsafe impl<L: Library> Sync for LmdbEngine<L> {}

impl<L: Library> LmdbEngine<L> {
    /// Runs `f` in a write transaction and commits it, aborting on error.
    fn in_write_txn(&self, f: impl FnOnce(*mut ffi::MDB_txn) -> Result<()>) -> Result<()> {
        let mut txn = ptr::null_mut();
        // SAFETY: `self.env` is open; the out pointer is valid.
        check(self.api, "mdb_txn_begin", unsafe {
            (self.api.mdb_txn_begin)(self.env, ptr::null_mut(), 0, &mut txn)
        })?;
        if let Err(e) = f(txn) {
            // SAFETY: `txn` is a live write transaction; abort frees it.
            unsafe { (self.api.mdb_txn_abort)(txn) };
            return Err(e);
        }
        // SAFETY: `txn` is live; commit frees it whether it succeeds or not.
        check(self.api, "mdb_txn_commit", unsafe {
            (self.api.mdb_txn_commit)(txn)
        })
    }

    /// Runs `f` with a cursor on the database in a write transaction, then
    /// closes the cursor and commits (aborting on error).
    fn with_write_cursor(&self, f: impl FnOnce(*mut MDB_cursor) -> Result<()>) -> Result<()> {
        self.in_write_txn(|txn| {
            let mut cursor = ptr::null_mut();
            // SAFETY: `txn` is a live write transaction and `dbi` open.
            check(self.api, "mdb_cursor_open", unsafe {
                (self.api.mdb_cursor_open)(txn, self.dbi, &mut cursor)
            })?;
            let r = f(cursor);
            // SAFETY: the cursor belongs to `txn`, closed once before it ends.
            unsafe { (self.api.mdb_cursor_close)(cursor) };
            r
        })
    }

    /// `mdb_cursor_get` with `op`: the key under the cursor after the move,
    /// `None` at `MDB_NOTFOUND`.
    ///
    /// # Safety
    /// `cursor` must be open on a live transaction; the key is valid until
    /// the next write of that transaction.
    unsafe fn cursor_key<'c>(
        &self,
        cursor: *mut MDB_cursor,
        op: MDB_cursor_op,
    ) -> Result<Option<&'c [u8]>> {
        let (mut key, mut data) = (val(&[]), val(&[]));
        // SAFETY: the caller's promise; out values are valid.
        match unsafe { (self.api.mdb_cursor_get)(cursor, &mut key, &mut data, op) } {
            // SAFETY: from a successful mdb_cursor_get (the caller bounds its use).
            ffi::MDB_SUCCESS => Ok(Some(unsafe { bytes(&key) })),
            ffi::MDB_NOTFOUND => Ok(None),
            rc => check(self.api, "mdb_cursor_get", rc).map(|()| None),
        }
    }
}

impl<L: Library> Engine for LmdbEngine<L> {
    type Reader<'a> = LmdbReader<'a>;

    const MAPS_DB: bool = true;

    fn config(opts: &OpenOptions) -> String {
        let mut c = String::new();
        if opts.write_map {
            c.push_str("MDB_WRITEMAP | ");
        }
        c.push_str(match opts.sync {
            SyncMode::Async => "MDB_NOSYNC | MDB_NOMETASYNC",
            SyncMode::Durable => "durable commits",
        });
        if opts.random_reads {
            c.push_str(" | MDB_NORDAHEAD");
        }
        c.push_str("; MDB_APPEND for fillseq; reset/renew read txn per get");
        c.push_str(&L::describe());
        c
    }

    fn version() -> String {
        let api = match L::api() {
            Ok(api) => api,
            Err(e) => return format!("not loaded: {e}"),
        };
        // SAFETY: null out-pointers are allowed; the result is a static C string.
        let v = unsafe {
            CStr::from_ptr((api.mdb_version)(
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
        let mut flags = if opts.write_map { ffi::MDB_WRITEMAP } else { 0 };
        if opts.sync == SyncMode::Async {
            flags |= ffi::MDB_NOSYNC | ffi::MDB_NOMETASYNC;
        }
        if opts.random_reads {
            flags |= ffi::MDB_NORDAHEAD;
        }
        let api = L::api()?;
        let mut env = ptr::null_mut();
        // SAFETY: the out pointer is valid.
        check(api, "mdb_env_create", unsafe {
            (api.mdb_env_create)(&mut env)
        })?;
        // From here on, dropping `engine` closes `env`, including on errors below.
        let mut engine = LmdbEngine {
            api,
            env,
            dbi: 0,
            _lib: PhantomData,
        };
        // SAFETY: `env` was created and not yet opened, as these setters require.
        check(api, "mdb_env_set_mapsize", unsafe {
            (api.mdb_env_set_mapsize)(env, usize::try_from(map_size)?)
        })?;
        // SAFETY: as above.
        check(api, "mdb_env_set_maxreaders", unsafe {
            (api.mdb_env_set_maxreaders)(env, opts.readers.max(126) + 2)
        })?;
        // SAFETY: `env` is created, `path` is a NUL-terminated existing directory.
        check(api, "mdb_env_open", unsafe {
            (api.mdb_env_open)(env, path.as_ptr(), flags, 0o644)
        })?;
        let mut dbi = 0;
        engine.in_write_txn(|txn| {
            // SAFETY: `txn` is a live write transaction; a null name is the main DB.
            check(api, "mdb_dbi_open", unsafe {
                (api.mdb_dbi_open)(txn, ptr::null(), 0, &mut dbi)
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
                check(self.api, "mdb_put", unsafe {
                    (self.api.mdb_put)(txn, self.dbi, &mut key, &mut data, flags)
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
                let rc = unsafe { (self.api.mdb_del)(txn, self.dbi, &mut key, ptr::null_mut()) };
                match rc {
                    ffi::MDB_SUCCESS => found += 1,
                    ffi::MDB_NOTFOUND => {}
                    rc => check(self.api, "mdb_del", rc)?,
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
                let rc = unsafe { (self.api.mdb_get)(txn, self.dbi, &mut key, &mut data) };
                buf.clear();
                match rc {
                    ffi::MDB_SUCCESS => {
                        found += 1;
                        // SAFETY: `data` came from a successful mdb_get in `txn` and is
                        // used before the put below changes the database.
                        update(i, Some(unsafe { bytes(&data) }), &mut buf);
                    }
                    ffi::MDB_NOTFOUND => update(i, None, &mut buf),
                    rc => check(self.api, "mdb_get", rc)?,
                }
                let mut data = val(&buf);
                // SAFETY: as for mdb_get; LMDB copies `buf`.
                check(self.api, "mdb_put", unsafe {
                    (self.api.mdb_put)(txn, self.dbi, &mut key, &mut data, 0)
                })?;
            }
            Ok(())
        })?;
        Ok(found)
    }

    fn reader(&self) -> Result<LmdbReader<'_>> {
        let mut txn = ptr::null_mut();
        // SAFETY: `self.env` is open; the out pointer is valid.
        check(self.api, "mdb_txn_begin(RDONLY)", unsafe {
            (self.api.mdb_txn_begin)(self.env, ptr::null_mut(), ffi::MDB_RDONLY, &mut txn)
        })?;
        // SAFETY: `txn` is a live read-only transaction; each get renews it.
        unsafe { (self.api.mdb_txn_reset)(txn) };
        Ok(LmdbReader {
            api: self.api,
            txn,
            dbi: self.dbi,
            _engine: PhantomData,
        })
    }

    fn retain(&self, delete: &mut dyn FnMut(&[u8]) -> bool) -> Result<(u64, u64)> {
        let (mut seen, mut gone) = (0, 0);
        self.with_write_cursor(|cursor| {
            // SAFETY: `cursor` is open on the live write transaction; each key is
            // used before the cursor's delete, the transaction's next write.
            while let Some(k) = unsafe { self.cursor_key(cursor, ffi::MDB_NEXT)? } {
                seen += 1;
                if delete(k) {
                    // SAFETY: the cursor stands on `k`; after the delete MDB_NEXT
                    // returns the entry that followed it.
                    check(self.api, "mdb_cursor_del", unsafe {
                        (self.api.mdb_cursor_del)(cursor, 0)
                    })?;
                    gone += 1;
                }
            }
            Ok(())
        })?;
        Ok((seen, gone))
    }

    fn pop_front(&self, n: u64) -> Result<u64> {
        let mut gone = 0;
        self.with_write_cursor(|cursor| {
            // SAFETY: `cursor` is open on the live write transaction; the key
            // is not used.
            while gone < n && unsafe { self.cursor_key(cursor, ffi::MDB_FIRST)? }.is_some() {
                // SAFETY: the cursor stands on the first entry.
                check(self.api, "mdb_cursor_del", unsafe {
                    (self.api.mdb_cursor_del)(cursor, 0)
                })?;
                gone += 1;
            }
            Ok(())
        })?;
        Ok(gone)
    }

    fn has_cursor_delete() -> bool {
        true
    }

    fn scan<F: FnMut(&[u8], &[u8])>(&self, reverse: bool, mut visit: F) -> Result<u64> {
        let step = if reverse {
            ffi::MDB_PREV
        } else {
            ffi::MDB_NEXT
        };
        let mut txn = ptr::null_mut();
        // SAFETY: `self.env` is open; the out pointer is valid.
        check(self.api, "mdb_txn_begin(RDONLY)", unsafe {
            (self.api.mdb_txn_begin)(self.env, ptr::null_mut(), ffi::MDB_RDONLY, &mut txn)
        })?;
        let mut cursor = ptr::null_mut();
        // SAFETY: `txn` is live and `dbi` open.
        let rc = unsafe { (self.api.mdb_cursor_open)(txn, self.dbi, &mut cursor) };
        if rc != ffi::MDB_SUCCESS {
            // SAFETY: `txn` is live; abort frees it.
            unsafe { (self.api.mdb_txn_abort)(txn) };
            return check(self.api, "mdb_cursor_open", rc).map(|()| 0);
        }
        let (mut key, mut data) = (val(&[]), val(&[]));
        let mut n = 0;
        let rc = loop {
            // SAFETY: `cursor` is open on the live `txn`; out values are valid.
            let rc = unsafe { (self.api.mdb_cursor_get)(cursor, &mut key, &mut data, step) };
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
            (self.api.mdb_cursor_close)(cursor);
            (self.api.mdb_txn_abort)(txn);
        }
        if rc == ffi::MDB_NOTFOUND {
            Ok(n)
        } else {
            check(self.api, "mdb_cursor_get", rc).map(|()| n)
        }
    }

    fn sync(&self) -> Result<()> {
        // SAFETY: `self.env` is open.
        check(self.api, "mdb_env_sync", unsafe {
            (self.api.mdb_env_sync)(self.env, 1)
        })
    }
}

impl<L: Library> Drop for LmdbEngine<L> {
    fn drop(&mut self) {
        // SAFETY: `env` came from mdb_env_create and is closed exactly once; every
        // transaction and reader borrowing the engine has ended (the borrow checker
        // keeps `LmdbReader`s from outliving it).
        unsafe { (self.api.mdb_env_close)(self.env) };
    }
}

/// A read-only transaction kept reset between gets and renewed for each one, as
/// Symas' db_bench_mdb does.
pub struct LmdbReader<'a> {
    api: &'static Api,
    txn: *mut ffi::MDB_txn,
    dbi: ffi::MDB_dbi,
    /// The engine whose environment the transaction belongs to.
    _engine: PhantomData<&'a ()>,
}

impl Reader for LmdbReader<'_> {
    #[inline]
    fn get<R, F: FnOnce(&[u8]) -> R>(&mut self, key: &[u8], f: F) -> Result<Option<R>> {
        // SAFETY: `txn` is a reset read-only transaction of this thread.
        check(self.api, "mdb_txn_renew", unsafe {
            (self.api.mdb_txn_renew)(self.txn)
        })?;
        let mut k = val(key);
        let mut data = val(&[]);
        // SAFETY: `txn` is live again, `dbi` open, `k` points to `key`.
        let rc = unsafe { (self.api.mdb_get)(self.txn, self.dbi, &mut k, &mut data) };
        let out = match rc {
            // SAFETY: `data` came from a successful mdb_get and is only used by `f`,
            // before the reset below.
            ffi::MDB_SUCCESS => Ok(Some(f(unsafe { bytes(&data) }))),
            ffi::MDB_NOTFOUND => Ok(None),
            rc => check(self.api, "mdb_get", rc).map(|()| None),
        };
        // SAFETY: `txn` is a live read-only transaction; reset releases its snapshot.
        unsafe { (self.api.mdb_txn_reset)(self.txn) };
        out
    }

    fn get_batch(
        &mut self,
        keys: &[&[u8]],
        visit: &mut dyn FnMut(usize, Option<&[u8]>),
    ) -> Result<()> {
        // SAFETY: `txn` is a reset read-only transaction of this thread.
        check(self.api, "mdb_txn_renew", unsafe {
            (self.api.mdb_txn_renew)(self.txn)
        })?;
        let mut out = Ok(());
        for (i, key) in keys.iter().enumerate() {
            let mut k = val(key);
            let mut data = val(&[]);
            // SAFETY: `txn` is live, `dbi` open, `k` points to `key`.
            let rc = unsafe { (self.api.mdb_get)(self.txn, self.dbi, &mut k, &mut data) };
            match rc {
                // SAFETY: `data` came from a successful mdb_get; used before the reset.
                ffi::MDB_SUCCESS => visit(i, Some(unsafe { bytes(&data) })),
                ffi::MDB_NOTFOUND => visit(i, None),
                rc => {
                    out = check(self.api, "mdb_get", rc);
                    break;
                }
            }
        }
        // SAFETY: `txn` is a live read-only transaction; reset releases its snapshot.
        unsafe { (self.api.mdb_txn_reset)(self.txn) };
        out
    }
}

impl Drop for LmdbReader<'_> {
    fn drop(&mut self) {
        // SAFETY: `txn` is a (reset) read-only transaction, freed exactly once here,
        // while the environment is still open (`'a` borrows the engine).
        unsafe { (self.api.mdb_txn_abort)(self.txn) };
    }
}
