//! LevelDB through the raw C API of `leveldb-sys`, linked against Debian's
//! `libleveldb` (1.23, package `libleveldb-dev`) by the links override in the
//! workspace's `.cargo/config.toml`: the LevelDB 1.22 bundled in leveldb-sys does not
//! build with gcc 12, and the override also keeps cmake out of the build.
//!
//! Configured as LevelDB's own `db_bench` runs it (Symas' reports name no LevelDB
//! setting beyond compression): LevelDB's defaults (4 MiB write buffer, 4 KiB blocks,
//! no bloom filter, as `db_bench`'s `--bloom_bits=-1`) except
//! - compression off (Symas built every engine without compression),
//! - an LRU block cache of exactly [`OpenOptions::cache_bytes`], the budget every
//!   engine with a block cache gets (0 means LevelDB caches no blocks),
//! - `max_open_files` at LevelDB's maximum (50000), so that the table cache never
//!   closes a table (RocksDB's `max_open_files = -1`),
//! - `create_if_missing`.
//!
//! [`SyncMode::Async`] writes with `sync = false` and [`SyncMode::Durable`] with
//! `sync = true` (one fdatasync of the log per write batch); LevelDB has no switch to
//! turn its log off, so asynchronous writes still append every batch to it.
//!
//! Every `*_batch` method is one `leveldb_write` of one write batch. LevelDB has no
//! merge operator. All `unsafe` code of the LevelDB engine is in this module.

use std::ffi::{c_char, CStr, CString};
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr;

use leveldb_sys as ffi;

use super::{Engine, OpenOptions, Reader, Result, SyncMode, UpdateFn};

/// `max_open_files`: the largest value LevelDB accepts (it clips larger ones).
const MAX_OPEN_FILES: i32 = 50_000;

/// A failed LevelDB call: the C function and the message LevelDB returned.
#[derive(Debug)]
pub struct LevelDbError {
    op: &'static str,
    msg: String,
}

impl fmt::Display for LevelDbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.op, self.msg)
    }
}

impl std::error::Error for LevelDbError {}

/// Calls `f` with a fresh `char** errptr` for a LevelDB C function and turns an
/// error LevelDB stored there into a [`LevelDbError`], freeing LevelDB's string.
fn call<T>(op: &'static str, f: impl FnOnce(*mut *mut c_char) -> T) -> Result<T> {
    let mut err: *mut c_char = ptr::null_mut();
    let out = f(&mut err);
    if err.is_null() {
        return Ok(out);
    }
    // SAFETY: LevelDB sets `*errptr` only to a NUL-terminated string it allocated
    // with malloc (strdup); we copy it before freeing it, once, with leveldb_free.
    let msg = unsafe {
        let msg = CStr::from_ptr(err).to_string_lossy().into_owned();
        ffi::leveldb_free(err.cast());
        msg
    };
    Err(Box::new(LevelDbError { op, msg }))
}

/// A value `leveldb_get` returned: a malloc'ed copy, freed on drop.
struct Value {
    ptr: *mut c_char,
    len: usize,
}

impl std::ops::Deref for Value {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.bytes()
    }
}

impl Value {
    /// The value's bytes.
    fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            &[]
        } else {
            // SAFETY: `ptr` is a live allocation of `len` bytes made by leveldb_get
            // and owned by `self` until drop.
            unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.len) }
        }
    }
}

impl Drop for Value {
    fn drop(&mut self) {
        // SAFETY: `ptr` was allocated by LevelDB (malloc) and is freed once, here.
        unsafe { ffi::leveldb_free(self.ptr.cast()) };
    }
}

/// Point lookup of `key`.
///
/// A found empty value relies on glibc's `malloc(0)` returning a unique non-null
/// pointer (LevelDB copies values with `malloc(len)`); elsewhere it may read as
/// absent. The harness never stores empty values.
///
/// # Safety
/// `db` must be an open database and `ro` live read options (with, if any, a
/// snapshot of `db` that has not been released).
unsafe fn get(
    db: *mut ffi::leveldb_t,
    ro: *const ffi::leveldb_readoptions_t,
    key: &[u8],
) -> Result<Option<Value>> {
    let mut len = 0;
    let ptr = call("leveldb_get", |err| {
        // SAFETY: per this function's contract; `key` is a live slice LevelDB only
        // reads, `len` and `err` are valid out-pointers.
        unsafe { ffi::leveldb_get(db, ro, key.as_ptr().cast(), key.len(), &mut len, err) }
    })?;
    Ok((!ptr.is_null()).then_some(Value { ptr, len }))
}

/// A LevelDB write batch, destroyed on drop.
struct Batch(*mut ffi::leveldb_writebatch_t);

impl Batch {
    /// An empty batch.
    fn new() -> Self {
        // SAFETY: creates a new empty batch; it is destroyed once, in `drop`.
        Batch(unsafe { ffi::leveldb_writebatch_create() })
    }

    /// Adds a put of `key` to `value`.
    fn put(&mut self, key: &[u8], value: &[u8]) {
        // SAFETY: the batch is live; LevelDB copies the key and value.
        unsafe {
            ffi::leveldb_writebatch_put(
                self.0,
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
            )
        };
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        // SAFETY: the batch came from leveldb_writebatch_create and is destroyed once.
        unsafe { ffi::leveldb_writebatch_destroy(self.0) };
    }
}

/// An open LevelDB database and the option objects it was opened and writes with.
pub struct LevelDbEngine {
    /// The database; null only while `open` has not opened it yet.
    db: *mut ffi::leveldb_t,
    /// Open options, destroyed after the database is closed.
    options: *mut ffi::leveldb_options_t,
    /// The LRU block cache the options point to; destroyed after closing.
    cache: *mut ffi::leveldb_cache_t,
    /// Write options of every batch (`sync` per [`SyncMode`]).
    write_opts: *mut ffi::leveldb_writeoptions_t,
    /// Write options with `sync = true`, for [`Engine::sync`].
    sync_opts: *mut ffi::leveldb_writeoptions_t,
    /// Default read options (no snapshot), for scans and `update_batch` gets.
    read_opts: *mut ffi::leveldb_readoptions_t,
}

// SAFETY: a LevelDB `DB` may be used by many threads at once without external
// synchronization (LevelDB's documented contract), and so may its cache. The option
// objects are only read by LevelDB after `open` sets them. No iterator, snapshot or
// per-thread read options outlive the method that creates them, except in
// `LevelDbReader`, which is neither Send nor Sync.
unsafe impl Send for LevelDbEngine {}
// SAFETY: see `Send` above; `&LevelDbEngine` only reaches thread-safe entry points.
unsafe impl Sync for LevelDbEngine {}

impl LevelDbEngine {
    /// Writes `batch` with `opts`, one of the engine's write options.
    fn write(&self, batch: &Batch, opts: *const ffi::leveldb_writeoptions_t) -> Result<()> {
        call("leveldb_write", |err| {
            // SAFETY: `db` is open, `opts` is one of this engine's live write
            // options, `batch` is live; `err` is a valid out-pointer.
            unsafe { ffi::leveldb_write(self.db, opts, batch.0, err) }
        })
    }
}

impl Engine for LevelDbEngine {
    type Reader<'a> = LevelDbReader<'a>;

    /// The database is files read through LevelDB's block cache. Note that LevelDB
    /// (1.23, 64-bit) reads up to 1000 table files through read-only mmaps, so table
    /// pages it touched also count in the process's RSS (as file-backed pages).
    const MAPS_DB: bool = false;
    /// LevelDB groups concurrent writers' batches into one log write.
    const CONCURRENT_WRITERS: bool = true;

    fn version() -> String {
        // SAFETY: both functions only return constants compiled into the library.
        let (major, minor) =
            unsafe { (ffi::leveldb_major_version(), ffi::leveldb_minor_version()) };
        format!("LevelDB {major}.{minor} (system libleveldb, leveldb-sys 2.0.9)")
    }

    fn config(opts: &OpenOptions) -> String {
        let sync = match opts.sync {
            SyncMode::Async => "sync=false (log always written)",
            SyncMode::Durable => "sync=true per batch",
        };
        format!(
            "{sync}; LRU block cache {} B, no compression, no bloom filter, \
             max_open_files {MAX_OPEN_FILES}, 4 MiB write buffer (defaults otherwise)",
            opts.cache_bytes
        )
    }

    fn open(dir: &Path, opts: &OpenOptions) -> Result<Self> {
        let path = CString::new(dir.as_os_str().as_bytes())?;
        let cache_bytes = usize::try_from(opts.cache_bytes)?;
        // SAFETY: these constructors allocate new objects with default settings; the
        // engine owns them from here on and its `drop` destroys each once, after
        // closing the database (still null here, which `drop` skips).
        let mut engine = unsafe {
            LevelDbEngine {
                db: ptr::null_mut(),
                options: ffi::leveldb_options_create(),
                cache: ffi::leveldb_cache_create_lru(cache_bytes),
                write_opts: ffi::leveldb_writeoptions_create(),
                sync_opts: ffi::leveldb_writeoptions_create(),
                read_opts: ffi::leveldb_readoptions_create(),
            }
        };
        // SAFETY: every object is live; the options keep a pointer to the cache,
        // which outlives the database (see `drop`).
        unsafe {
            let o = engine.options;
            ffi::leveldb_options_set_create_if_missing(o, 1);
            ffi::leveldb_options_set_cache(o, engine.cache);
            ffi::leveldb_options_set_compression(o, ffi::Compression::No);
            ffi::leveldb_options_set_max_open_files(o, MAX_OPEN_FILES);
            ffi::leveldb_writeoptions_set_sync(
                engine.write_opts,
                u8::from(opts.sync == SyncMode::Durable),
            );
            ffi::leveldb_writeoptions_set_sync(engine.sync_opts, 1);
        }
        engine.db = call("leveldb_open", |err| {
            // SAFETY: the options are live and `path` is NUL-terminated; `err` is a
            // valid out-pointer. On failure LevelDB returns null and sets `err`.
            unsafe { ffi::leveldb_open(engine.options, path.as_ptr(), err) }
        })?;
        if engine.db.is_null() {
            return Err("leveldb_open returned no database and no error".into());
        }
        Ok(engine)
    }

    /// LevelDB has no append mode, so `sorted_append` changes nothing (`db_bench`'s
    /// `fillseq` also writes plain puts).
    fn write_batch(&self, pairs: &[(&[u8], &[u8])], _sorted_append: bool) -> Result<()> {
        let mut batch = Batch::new();
        for (k, v) in pairs {
            batch.put(k, v);
        }
        self.write(&batch, self.write_opts)
    }

    /// Deletes are blind tombstones in an LSM tree: returns `keys.len()`.
    fn delete_batch(&self, keys: &[&[u8]]) -> Result<u64> {
        let batch = Batch::new();
        for k in keys {
            // SAFETY: the batch is live; LevelDB copies the key.
            unsafe { ffi::leveldb_writebatch_delete(batch.0, k.as_ptr().cast(), k.len()) };
        }
        self.write(&batch, self.write_opts)?;
        Ok(keys.len() as u64)
    }

    /// A plain get per key (no snapshot, as `db_bench`'s `updaterandom`), then every
    /// put in one batch. A write batch cannot be read, so the batch's own puts are
    /// also kept in a map, for keys that repeat in `keys`.
    fn update_batch(&self, keys: &[&[u8]], update: &mut UpdateFn<'_>) -> Result<u64> {
        let (written, found) = super::update_unreadable_batch(keys, update, |k| {
            // SAFETY: `db` is open and `read_opts` live, without a snapshot.
            unsafe { get(self.db, self.read_opts, k) }
        })?;
        let mut batch = Batch::new();
        for (k, v) in &written {
            batch.put(k, v);
        }
        self.write(&batch, self.write_opts)?;
        Ok(found)
    }

    fn reader(&self) -> Result<LevelDbReader<'_>> {
        // SAFETY: new read options owned by the reader, destroyed once in its drop.
        let (plain, batch) = unsafe {
            (
                ffi::leveldb_readoptions_create(),
                ffi::leveldb_readoptions_create(),
            )
        };
        Ok(LevelDbReader {
            engine: self,
            plain,
            batch,
        })
    }

    /// One iterator over the whole database (LevelDB pins an implicit snapshot when
    /// it creates it), forward from the first key or backward from the last.
    fn scan<F: FnMut(&[u8], &[u8])>(&self, reverse: bool, mut visit: F) -> Result<u64> {
        // SAFETY: `db` is open and `read_opts` live; the iterator is destroyed below,
        // before the engine can be dropped (`&self` is borrowed until then).
        let it = unsafe { ffi::leveldb_create_iterator(self.db, self.read_opts) };
        // SAFETY: `it` is a live iterator.
        unsafe {
            if reverse {
                ffi::leveldb_iter_seek_to_last(it);
            } else {
                ffi::leveldb_iter_seek_to_first(it);
            }
        }
        let mut n = 0;
        // SAFETY: `it` is a live iterator.
        while unsafe { ffi::leveldb_iter_valid(it) } != 0 {
            let (mut klen, mut vlen) = (0usize, 0usize);
            // SAFETY: `it` is valid (checked above), so key and value point to
            // `klen`/`vlen` bytes owned by the iterator until it moves; both slices
            // are dropped before the next/prev below. The length out-pointers come
            // from live locals (leveldb-sys declares them const; LevelDB writes them).
            unsafe {
                let k = ffi::leveldb_iter_key(it, ptr::addr_of_mut!(klen) as *const usize);
                let v = ffi::leveldb_iter_value(it, ptr::addr_of_mut!(vlen) as *const usize);
                visit(raw_slice(k, klen), raw_slice(v, vlen));
                if reverse {
                    ffi::leveldb_iter_prev(it);
                } else {
                    ffi::leveldb_iter_next(it);
                }
            }
            n += 1;
        }
        let status = call("leveldb_iter_get_error", |err| {
            // SAFETY: `it` is live; `err` is a valid `char**` (leveldb-sys declares
            // it `*const *const`, LevelDB stores a malloc'ed message through it).
            unsafe { ffi::leveldb_iter_get_error(it, err as *const *const c_char) }
        });
        // SAFETY: `it` came from leveldb_create_iterator and is destroyed once.
        unsafe { ffi::leveldb_iter_destroy(it) };
        status.map(|()| n)
    }

    /// The C API exposes no `FlushWAL`/`SyncWAL`: this writes an empty batch with
    /// `sync = true`, which fdatasyncs the current log and so everything written to
    /// it. Data of a memtable being compacted when this runs is durable once that
    /// compaction (which syncs its table and the manifest) finishes.
    fn sync(&self) -> Result<()> {
        self.write(&Batch::new(), self.sync_opts)
    }
}

impl Drop for LevelDbEngine {
    fn drop(&mut self) {
        // SAFETY: every pointer came from its LevelDB constructor and is freed once.
        // The database is closed first (it uses the options and the cache); no
        // reader or iterator is alive (they borrow the engine).
        unsafe {
            if !self.db.is_null() {
                ffi::leveldb_close(self.db);
            }
            ffi::leveldb_options_destroy(self.options);
            ffi::leveldb_cache_destroy(self.cache);
            ffi::leveldb_writeoptions_destroy(self.write_opts);
            ffi::leveldb_writeoptions_destroy(self.sync_opts);
            ffi::leveldb_readoptions_destroy(self.read_opts);
        }
    }
}

/// Borrows `len` bytes at `p` (LevelDB's key or value pointer).
///
/// # Safety
/// `p` must point to `len` readable bytes (or `len` be 0) that stay unchanged for
/// the returned lifetime.
unsafe fn raw_slice<'a>(p: *const c_char, len: usize) -> &'a [u8] {
    if len == 0 {
        &[]
    } else {
        // SAFETY: per this function's contract.
        unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) }
    }
}

/// A thread's read options: plain ones for gets and ones that carry the snapshot of
/// a `get_batch`.
pub struct LevelDbReader<'a> {
    /// The engine, whose database is open while the reader lives.
    engine: &'a LevelDbEngine,
    /// Read options without a snapshot, for `get`.
    plain: *mut ffi::leveldb_readoptions_t,
    /// Read options that carry a `get_batch`'s snapshot during the call.
    batch: *mut ffi::leveldb_readoptions_t,
}

impl Reader for LevelDbReader<'_> {
    /// A plain `leveldb_get` (the latest state, no snapshot), as `db_bench`.
    #[inline]
    fn get<R, F: FnOnce(&[u8]) -> R>(&mut self, key: &[u8], f: F) -> Result<Option<R>> {
        // SAFETY: the engine's database is open (borrowed for `'a`) and `plain` is
        // live and has no snapshot.
        let value = unsafe { get(self.engine.db, self.plain, key)? };
        Ok(value.map(|v| f(v.bytes())))
    }

    /// Every key under one snapshot, taken for the batch and released after it.
    fn get_batch(
        &mut self,
        keys: &[&[u8]],
        visit: &mut dyn FnMut(usize, Option<&[u8]>),
    ) -> Result<()> {
        let db = self.engine.db;
        // SAFETY: `db` is open; the snapshot is released below, and cleared from
        // `batch` first, so `batch` never refers to a released snapshot.
        let snapshot = unsafe { ffi::leveldb_create_snapshot(db) };
        // SAFETY: `batch` is live and `snapshot` belongs to `db`.
        unsafe { ffi::leveldb_readoptions_set_snapshot(self.batch, snapshot) };
        let mut out = Ok(());
        for (i, key) in keys.iter().enumerate() {
            // SAFETY: `db` is open; `batch` is live with the unreleased snapshot.
            match unsafe { get(db, self.batch, key) } {
                Ok(v) => visit(i, v.as_ref().map(Value::bytes)),
                Err(e) => {
                    out = Err(e);
                    break;
                }
            }
        }
        // SAFETY: `batch` is live (a null snapshot means "latest"); `snapshot` came
        // from leveldb_create_snapshot on `db` and is released once.
        unsafe {
            ffi::leveldb_readoptions_set_snapshot(self.batch, ptr::null());
            ffi::leveldb_release_snapshot(db, snapshot);
        }
        out
    }
}

impl Drop for LevelDbReader<'_> {
    fn drop(&mut self) {
        // SAFETY: both came from leveldb_readoptions_create and are destroyed once;
        // `batch` holds no snapshot between calls.
        unsafe {
            ffi::leveldb_readoptions_destroy(self.plain);
            ffi::leveldb_readoptions_destroy(self.batch);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn conformance() {
        crate::engines::conformance::run::<super::LevelDbEngine>();
    }
}
