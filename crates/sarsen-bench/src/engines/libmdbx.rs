//! libmdbx (the `libmdbx` crate, bundling libmdbx 0.14.4 through `mdbx-sys`),
//! configured like the LMDB engine and like libmdbx's own benchmark runs:
//!
//! - **Asynchronous commits** ([`SyncMode::Async`]): `MDBX_WRITEMAP |
//!   MDBX_UTTERLY_NOSYNC`. libmdbx documents `MDBX_UTTERLY_NOSYNC` as the exact
//!   counterpart of LMDB's `MDB_NOSYNC`: nothing is flushed at commit and freed pages
//!   are recycled as soon as no reader needs them. `MDBX_SAFE_NOSYNC` is not: it keeps
//!   the last *synced* snapshot alive, so pages freed since then cannot be reused, the
//!   file grows, and libmdbx flushes on its own whenever it would otherwise have to
//!   grow it; that is a different (safer, slower) trade-off than the
//!   `MDB_WRITEMAP | MDB_NOSYNC | MDB_NOMETASYNC` LMDB runs with here.
//!   (`MDB_NOMETASYNC` adds nothing once nothing is synced, in either engine.)
//! - **Durable commits** ([`SyncMode::Durable`]): `MDBX_WRITEMAP | MDBX_SYNC_DURABLE`,
//!   which flushes the data pages, then the meta page, at every commit, as LMDB does
//!   without its no-sync flags.
//! - `MDBX_NORDAHEAD` for random-read workloads ([`OpenOptions::random_reads`]), as
//!   LMDB's `MDB_NORDAHEAD`; `MDBX_APPEND` for sorted appends (fillseq), as
//!   `MDB_APPEND`.
//! - **Geometry**: libmdbx grows its file on demand inside a reserved address range.
//!   The upper bound is that of LMDB's map, `max(64 GiB, 4 × data_bytes)`. The file
//!   grows in steps of 16 MiB (libmdbx's own default for a database starting at its
//!   default 256 KiB lower bound): libmdbx `fallocate`s each step, so the step is
//!   disk space the "DB size" column counts, and a larger one would mostly inflate
//!   it. The file is never shrunk (LMDB never shrinks its file either). Page size is
//!   libmdbx's default, the OS page (4 KiB), as LMDB's.
//! - At least `readers + 2` reader slots (as LMDB: `max(readers, 126) + 2`). Every
//!   other option keeps libmdbx's default.
//! - One read transaction per get, prepared once per reader
//!   (`MDBX_TXN_RDONLY_PREPARE`) and renewed/reset around every get, as the LMDB
//!   engine does after Symas' db_bench_mdb: a renew reuses the transaction's reader slot, where a fresh
//!   transaction would allocate one and bind a slot under a lock.
//!
//! The environment is opened with the crate's safe API, which also sets
//! `MDBX_NOSTICKYTHREADS` (read transactions own their reader slot instead of their
//! thread's; with one prepared transaction per reader thread this changes nothing on
//! the hot path). Transactions go through the raw C API (`mdbx-sys`), because the safe
//! API has no reset/renew, and begins and commits every write transaction on a
//! helper thread through two channel round trips, which would dominate the
//! one-write-per-transaction workloads. All `unsafe` code of the libmdbx engine is in
//! this module.

use std::ffi::{c_int, c_void, CStr};
use std::fmt;
use std::marker::PhantomData;
use std::mem;
use std::path::Path;
use std::ptr;

use libmdbx::{Database, DatabaseOptions, Mode, ReadWriteOptions, WriteMap};
use mdbx_sys as ffi;

use super::{Engine, OpenOptions, Reader, Result, SyncMode, UpdateFn};

/// Smallest upper bound of the database file (only address space until used).
const MIN_MAX_SIZE: u64 = 64 << 30;

/// Step by which libmdbx grows the database file.
const GROWTH_STEP: u64 = 16 << 20;

/// A failed libmdbx call.
#[derive(Debug)]
pub struct MdbxError {
    /// The libmdbx function that failed.
    op: &'static str,
    /// Its error.
    err: libmdbx::Error,
}

impl fmt::Display for MdbxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.op, self.err)
    }
}

impl std::error::Error for MdbxError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.err)
    }
}

/// Wraps an error of the safe API with the operation that failed.
fn op_err(op: &'static str) -> impl FnOnce(libmdbx::Error) -> super::BoxError {
    move |err| Box::new(MdbxError { op, err })
}

/// `Ok` for `MDBX_SUCCESS`, else the error of `op`.
fn check(op: &'static str, code: c_int) -> Result<()> {
    if code == ffi::MDBX_SUCCESS {
        Ok(())
    } else {
        Err(op_err(op)(libmdbx::Error::from_err_code(code)))
    }
}

/// An `MDBX_val` pointing to `bytes` (libmdbx only reads through it).
fn val(bytes: &[u8]) -> ffi::MDBX_val {
    ffi::MDBX_val {
        iov_base: bytes.as_ptr() as *mut c_void,
        iov_len: bytes.len(),
    }
}

/// Borrows the bytes an `MDBX_val` returned by libmdbx points to.
///
/// # Safety
/// `v` must come from a successful `mdbx_get`/`mdbx_cursor_get`, and the result must
/// not outlive the transaction (or its next reset, or the next change made in it)
/// that produced it.
unsafe fn bytes<'a>(v: &ffi::MDBX_val) -> &'a [u8] {
    if v.iov_len == 0 {
        &[]
    } else {
        // SAFETY: per this function's contract, libmdbx guarantees `iov_len` readable
        // bytes at `iov_base` until the transaction ends or changes the database.
        unsafe { std::slice::from_raw_parts(v.iov_base as *const u8, v.iov_len) }
    }
}

/// An open libmdbx environment and its main (unnamed) table.
pub struct MdbxEngine {
    /// The environment (closed when dropped).
    db: Database<WriteMap>,
    /// Handle of the main table, valid while the environment is open.
    dbi: ffi::MDBX_dbi,
}

// `MdbxEngine` is Send and Sync through `Database`. Every method below begins and
// ends its own transactions on the calling thread: write transactions are begun and
// committed (or aborted) on one thread, as libmdbx requires, and serialized by its
// writer lock; read transactions are owned by one `MdbxReader` (neither Send nor
// Sync) or one `scan` call, and never shared between threads.

/// A write transaction, aborted on drop unless committed, so that neither an error
/// nor a panic in the caller's code leaves libmdbx's writer lock held.
struct WriteTxn(*mut ffi::MDBX_txn);

impl WriteTxn {
    /// Begins a write transaction on the calling thread (waiting for the writer lock).
    fn begin(env: *mut ffi::MDBX_env) -> Result<Self> {
        let mut txn = ptr::null_mut();
        // SAFETY: `env` is open (it belongs to a live `Database`); the out pointer is
        // valid; a null parent begins a top-level transaction.
        check("mdbx_txn_begin", unsafe {
            ffi::mdbx_txn_begin_ex(
                env,
                ptr::null_mut(),
                ffi::MDBX_TXN_READWRITE,
                &mut txn,
                ptr::null_mut(),
            )
        })?;
        Ok(WriteTxn(txn))
    }

    /// Commits the transaction (on the thread that began it) and frees it.
    fn commit(self) -> Result<()> {
        let txn = self.0;
        mem::forget(self);
        // SAFETY: `txn` is a live write transaction begun on this thread (libmdbx
        // checks nothing else, since the crate builds it with MDBX_TXN_CHECKOWNER=0);
        // commit frees it whether it succeeds or not.
        let rc = unsafe { ffi::mdbx_txn_commit_ex(txn, ptr::null_mut()) };
        // MDBX_RESULT_TRUE: nothing to commit (only from an empty transaction here,
        // as transactions that failed are aborted rather than committed).
        if rc == ffi::MDBX_RESULT_TRUE {
            Ok(())
        } else {
            check("mdbx_txn_commit", rc)
        }
    }
}

impl Drop for WriteTxn {
    fn drop(&mut self) {
        // SAFETY: `self.0` is a live write transaction of this thread that was not
        // committed; abort frees it and releases the writer lock.
        unsafe { ffi::mdbx_txn_abort_ex(self.0, ptr::null_mut()) };
    }
}

/// A read-only transaction and a cursor on it, for one scan; both are freed on drop.
struct ScanCursor {
    /// The read-only transaction.
    txn: *mut ffi::MDBX_txn,
    /// A cursor on the main table in `txn`, or null before it is opened.
    cursor: *mut ffi::MDBX_cursor,
}

impl Drop for ScanCursor {
    fn drop(&mut self) {
        // SAFETY: the cursor (if opened) belongs to `txn`; it is closed, then the
        // transaction aborted (freed), each exactly once.
        unsafe {
            if !self.cursor.is_null() {
                ffi::mdbx_cursor_close(self.cursor);
            }
            ffi::mdbx_txn_abort_ex(self.txn, ptr::null_mut());
        }
    }
}

impl MdbxEngine {
    /// The raw environment handle, valid while `self.db` is.
    fn env(&self) -> *mut ffi::MDBX_env {
        self.db.ptr().0
    }

    /// Runs `f` in a write transaction and commits it; aborts it on error.
    fn in_write_txn(&self, f: impl FnOnce(*mut ffi::MDBX_txn) -> Result<()>) -> Result<()> {
        let txn = WriteTxn::begin(self.env())?;
        f(txn.0)?;
        txn.commit()
    }

    /// Runs `f` with a cursor on the main table in a write transaction, then
    /// closes the cursor and commits (aborting on error).
    fn with_write_cursor(&self, f: impl FnOnce(*mut ffi::MDBX_cursor) -> Result<()>) -> Result<()> {
        self.in_write_txn(|txn| {
            let mut cursor = ptr::null_mut();
            // SAFETY: `txn` is a live write transaction and `dbi` open.
            check("mdbx_cursor_open", unsafe {
                ffi::mdbx_cursor_open(txn, self.dbi, &mut cursor)
            })?;
            let r = f(cursor);
            // SAFETY: the cursor belongs to `txn`, closed once before it ends.
            unsafe { ffi::mdbx_cursor_close(cursor) };
            r
        })
    }

    /// The database file's upper bound for `opts`.
    fn max_size(opts: &OpenOptions) -> u64 {
        MIN_MAX_SIZE.max(opts.data_bytes.saturating_mul(4))
    }

    /// Reader slots for `opts`.
    fn max_readers(opts: &OpenOptions) -> u32 {
        opts.readers.max(126) + 2
    }
}

impl Engine for MdbxEngine {
    type Reader<'a> = MdbxReader<'a>;

    const MAPS_DB: bool = true;

    fn version() -> String {
        // SAFETY: `mdbx_version` is an immutable static of the linked library.
        let v = unsafe { &ffi::mdbx_version };
        let mut s = format!("libmdbx {}.{}.{}.{}", v.major, v.minor, v.patch, v.tweak);
        if !v.git.describe.is_null() {
            // SAFETY: a non-null `describe` is a static NUL-terminated string.
            let d = unsafe { CStr::from_ptr(v.git.describe) };
            s.push_str(&format!(" ({})", d.to_string_lossy()));
        }
        s
    }

    fn config(opts: &OpenOptions) -> String {
        let mut c = String::from("MDBX_WRITEMAP");
        c.push_str(match opts.sync {
            SyncMode::Async => " | MDBX_UTTERLY_NOSYNC",
            SyncMode::Durable => " | MDBX_SYNC_DURABLE",
        });
        if opts.random_reads {
            c.push_str(" | MDBX_NORDAHEAD");
        }
        c.push_str(&format!(
            " | MDBX_NOSTICKYTHREADS; upper {} GiB, growth {} MiB, no shrink; {} readers; \
             MDBX_APPEND for fillseq; reset/renew read txn per get",
            Self::max_size(opts) >> 30,
            GROWTH_STEP >> 20,
            Self::max_readers(opts),
        ));
        c
    }

    fn open(dir: &Path, opts: &OpenOptions) -> Result<Self> {
        let options = DatabaseOptions {
            max_readers: Some(Self::max_readers(opts)),
            mode: Mode::ReadWrite(ReadWriteOptions {
                sync_mode: match opts.sync {
                    SyncMode::Async => libmdbx::SyncMode::UtterlyNoSync,
                    SyncMode::Durable => libmdbx::SyncMode::Durable,
                },
                min_size: None,
                max_size: Some(isize::try_from(Self::max_size(opts))?),
                growth_step: Some(isize::try_from(GROWTH_STEP)?),
                // Zero disables shrinking.
                shrink_threshold: Some(0),
            }),
            no_rdahead: opts.random_reads,
            ..DatabaseOptions::default()
        };
        let db = Database::<WriteMap>::open_with_options(dir, options)
            .map_err(op_err("mdbx_env_open"))?;
        // The main table always exists; its handle stays valid while the env is open.
        let dbi = {
            let txn = db.begin_ro_txn().map_err(op_err("mdbx_txn_begin"))?;
            let table = txn.open_table(None).map_err(op_err("mdbx_dbi_open"))?;
            table.dbi()
        };
        Ok(MdbxEngine { db, dbi })
    }

    fn write_batch(&self, pairs: &[(&[u8], &[u8])], sorted_append: bool) -> Result<()> {
        let flags = if sorted_append {
            ffi::MDBX_APPEND
        } else {
            ffi::MDBX_UPSERT
        };
        self.in_write_txn(|txn| {
            for (k, v) in pairs {
                let (key, mut data) = (val(k), val(v));
                // SAFETY: `txn` is a live write transaction on this env, `dbi` is open,
                // and `key`/`data` point to live slices; libmdbx copies them.
                check("mdbx_put", unsafe {
                    ffi::mdbx_put(txn, self.dbi, &key, &mut data, flags)
                })?;
            }
            Ok(())
        })
    }

    fn delete_batch(&self, keys: &[&[u8]]) -> Result<u64> {
        let mut found = 0;
        self.in_write_txn(|txn| {
            for k in keys {
                let key = val(k);
                // SAFETY: `txn` is a live write transaction, `dbi` is open, `key`
                // points to a live slice; a null data pointer deletes the key.
                let rc = unsafe { ffi::mdbx_del(txn, self.dbi, &key, ptr::null()) };
                match rc {
                    ffi::MDBX_SUCCESS => found += 1,
                    ffi::MDBX_NOTFOUND => {}
                    rc => check("mdbx_del", rc)?,
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
                let key = val(k);
                let mut data = val(&[]);
                // SAFETY: `txn` is a live write transaction, `dbi` open, `key` live.
                let rc = unsafe { ffi::mdbx_get(txn, self.dbi, &key, &mut data) };
                buf.clear();
                match rc {
                    ffi::MDBX_SUCCESS => {
                        found += 1;
                        // SAFETY: `data` came from a successful mdbx_get in `txn` and is
                        // used before the put below changes the database.
                        update(i, Some(unsafe { bytes(&data) }), &mut buf);
                    }
                    ffi::MDBX_NOTFOUND => update(i, None, &mut buf),
                    rc => check("mdbx_get", rc)?,
                }
                let mut data = val(&buf);
                // SAFETY: as for mdbx_get; libmdbx copies `buf`.
                check("mdbx_put", unsafe {
                    ffi::mdbx_put(txn, self.dbi, &key, &mut data, ffi::MDBX_UPSERT)
                })?;
            }
            Ok(())
        })?;
        Ok(found)
    }

    fn reader(&self) -> Result<MdbxReader<'_>> {
        let mut txn = ptr::null_mut();
        // SAFETY: the env is open; the out pointer is valid. RDONLY_PREPARE allocates
        // the transaction and binds a reader slot without starting it; each get
        // renews it.
        check("mdbx_txn_begin(RDONLY_PREPARE)", unsafe {
            ffi::mdbx_txn_begin_ex(
                self.env(),
                ptr::null_mut(),
                ffi::MDBX_TXN_RDONLY_PREPARE,
                &mut txn,
                ptr::null_mut(),
            )
        })?;
        Ok(MdbxReader {
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
            while let Some(k) = unsafe { cursor_key(cursor, ffi::MDBX_NEXT)? } {
                seen += 1;
                if delete(k) {
                    // SAFETY: the cursor stands on `k`; after the delete MDBX_NEXT
                    // returns the entry that followed it.
                    check("mdbx_cursor_del", unsafe {
                        ffi::mdbx_cursor_del(cursor, ffi::MDBX_UPSERT)
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
            while gone < n && unsafe { cursor_key(cursor, ffi::MDBX_FIRST)? }.is_some() {
                // SAFETY: the cursor stands on the first entry.
                check("mdbx_cursor_del", unsafe {
                    ffi::mdbx_cursor_del(cursor, ffi::MDBX_UPSERT)
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
        let (first, step) = if reverse {
            (ffi::MDBX_LAST, ffi::MDBX_PREV)
        } else {
            (ffi::MDBX_FIRST, ffi::MDBX_NEXT)
        };
        let mut txn = ptr::null_mut();
        // SAFETY: the env is open; the out pointer is valid.
        check("mdbx_txn_begin(RDONLY)", unsafe {
            ffi::mdbx_txn_begin_ex(
                self.env(),
                ptr::null_mut(),
                ffi::MDBX_TXN_RDONLY,
                &mut txn,
                ptr::null_mut(),
            )
        })?;
        // From here on, dropping `sc` frees the transaction (and the cursor).
        let mut sc = ScanCursor {
            txn,
            cursor: ptr::null_mut(),
        };
        // SAFETY: `sc.txn` is live and `dbi` open; the out pointer is valid.
        check("mdbx_cursor_open", unsafe {
            ffi::mdbx_cursor_open(sc.txn, self.dbi, &mut sc.cursor)
        })?;
        let (mut key, mut data) = (val(&[]), val(&[]));
        let mut op = first;
        let mut n = 0;
        loop {
            // SAFETY: `sc.cursor` is open on the live `sc.txn`; out values are valid.
            let rc = unsafe { ffi::mdbx_cursor_get(sc.cursor, &mut key, &mut data, op) };
            match rc {
                // SAFETY: both came from a successful mdbx_cursor_get and are used
                // before the transaction ends.
                ffi::MDBX_SUCCESS => visit(unsafe { bytes(&key) }, unsafe { bytes(&data) }),
                ffi::MDBX_NOTFOUND => return Ok(n),
                rc => return check("mdbx_cursor_get", rc).map(|()| n),
            }
            n += 1;
            op = step;
        }
    }

    fn sync(&self) -> Result<()> {
        self.db
            .sync(true)
            .map(drop)
            .map_err(op_err("mdbx_env_sync"))
    }
}

/// `mdbx_cursor_get` with `op`: the key under the cursor after the move, `None`
/// at `MDBX_NOTFOUND`.
///
/// # Safety
/// `cursor` must be open on a live transaction; the key is valid until the next
/// write of that transaction.
unsafe fn cursor_key<'c>(
    cursor: *mut ffi::MDBX_cursor,
    op: ffi::MDBX_cursor_op,
) -> Result<Option<&'c [u8]>> {
    let (mut key, mut data) = (val(&[]), val(&[]));
    // SAFETY: the caller's promise; out values are valid.
    match unsafe { ffi::mdbx_cursor_get(cursor, &mut key, &mut data, op) } {
        // SAFETY: from a successful mdbx_cursor_get (the caller bounds its use).
        ffi::MDBX_SUCCESS => Ok(Some(unsafe { bytes(&key) })),
        ffi::MDBX_NOTFOUND => Ok(None),
        rc => check("mdbx_cursor_get", rc).map(|()| None),
    }
}

/// A read-only transaction kept reset between gets and renewed for each one, as the
/// LMDB engine does.
pub struct MdbxReader<'a> {
    /// The read-only transaction: reset (or only prepared) between calls.
    txn: *mut ffi::MDBX_txn,
    /// The engine's main table.
    dbi: ffi::MDBX_dbi,
    /// Keeps the environment open while the transaction exists.
    _engine: PhantomData<&'a MdbxEngine>,
}

impl Reader for MdbxReader<'_> {
    #[inline]
    fn get<R, F: FnOnce(&[u8]) -> R>(&mut self, key: &[u8], f: F) -> Result<Option<R>> {
        // SAFETY: `txn` is a prepared or reset read-only transaction of this reader.
        check("mdbx_txn_renew", unsafe { ffi::mdbx_txn_renew(self.txn) })?;
        let k = val(key);
        let mut data = val(&[]);
        // SAFETY: `txn` is live again, `dbi` open, `k` points to `key`.
        let rc = unsafe { ffi::mdbx_get(self.txn, self.dbi, &k, &mut data) };
        let out = match rc {
            // SAFETY: `data` came from a successful mdbx_get and is only used by `f`,
            // before the reset below.
            ffi::MDBX_SUCCESS => Ok(Some(f(unsafe { bytes(&data) }))),
            ffi::MDBX_NOTFOUND => Ok(None),
            rc => check("mdbx_get", rc).map(|()| None),
        };
        // SAFETY: `txn` is a live read-only transaction; reset releases its snapshot
        // and keeps its reader slot for the next renew.
        let rc = unsafe { ffi::mdbx_txn_reset(self.txn) };
        out.and_then(|v| check("mdbx_txn_reset", rc).map(|()| v))
    }

    fn get_batch(
        &mut self,
        keys: &[&[u8]],
        visit: &mut dyn FnMut(usize, Option<&[u8]>),
    ) -> Result<()> {
        // SAFETY: `txn` is a prepared or reset read-only transaction of this reader.
        check("mdbx_txn_renew", unsafe { ffi::mdbx_txn_renew(self.txn) })?;
        let mut out = Ok(());
        for (i, key) in keys.iter().enumerate() {
            let k = val(key);
            let mut data = val(&[]);
            // SAFETY: `txn` is live, `dbi` open, `k` points to `key`.
            let rc = unsafe { ffi::mdbx_get(self.txn, self.dbi, &k, &mut data) };
            match rc {
                // SAFETY: `data` came from a successful mdbx_get; used before the reset.
                ffi::MDBX_SUCCESS => visit(i, Some(unsafe { bytes(&data) })),
                ffi::MDBX_NOTFOUND => visit(i, None),
                rc => {
                    out = check("mdbx_get", rc);
                    break;
                }
            }
        }
        // SAFETY: `txn` is a live read-only transaction; reset releases its snapshot.
        let rc = unsafe { ffi::mdbx_txn_reset(self.txn) };
        out.and_then(|()| check("mdbx_txn_reset", rc))
    }
}

impl Drop for MdbxReader<'_> {
    fn drop(&mut self) {
        // SAFETY: `txn` is a read-only transaction (prepared, reset or, after a panic
        // in a get's closure, live), freed exactly once here, while the environment
        // is still open (`'a` borrows the engine).
        unsafe { ffi::mdbx_txn_abort_ex(self.txn, ptr::null_mut()) };
    }
}

#[cfg(test)]
mod tests {
    /// The engine conformance test (see `engines::conformance`).
    #[test]
    fn conformance() {
        crate::engines::conformance::run::<super::MdbxEngine>();
    }
}
