//! LMDB 0.9's C API over the Sarsen engine: `liblmdb.so`, `liblmdb.a` and
//! `include/lmdb.h`, so that a program written against LMDB links against
//! Sarsen unchanged.
//!
//! Every exported function is an `unsafe extern "C" fn`: C passes raw
//! pointers, and the caller promises what LMDB's documentation asks (a
//! non-NULL pointer points to memory of the right type and size, handles
//! are used by one thread at a time, every transaction ends before its
//! environment is closed). Within that, this layer adds checks LMDB does
//! not make: a NULL pointer, or a handle that is not a live handle of this
//! library (closed, freed, never created, of another kind), gives `EINVAL`
//! and is never dereferenced; no Rust panic crosses the boundary (it
//! becomes `MDB_PANIC`).
//!
//! Handles are numbers naming a slot and its generation in a slab of
//! their kind ([`handles`]), whose slot holds a heap object. A transaction handle owns a Sarsen transaction whose
//! borrow of the [`sarsen::Env`] is erased to `'static`; the `Env` is owned
//! by its environment handle and freed only when no transaction of it is
//! live (see [`env::mdb_env_close`]).
//!
//! See the crate README for the status of each function and the
//! differences from LMDB.
#![warn(missing_docs)]
#![allow(non_camel_case_types)]

pub mod compare;
pub mod consts;
pub mod copy;
pub mod cursor;
pub mod dbi;
pub mod env;
pub mod error;
pub mod handles;
pub mod main_view;
pub mod txn;

use std::ffi::{c_char, c_int};

pub use compare::{mdb_set_compare, mdb_set_dupsort};
pub use consts::*;
pub use copy::*;
pub use cursor::*;
pub use dbi::*;
pub use env::*;
pub use error::{mdb_strerror, mdb_version};
pub use txn::*;

/// A byte string: a key or a value (LMDB's `MDB_val`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MDB_val {
    /// Length in bytes.
    pub mv_size: usize,
    /// First byte.
    pub mv_data: *mut libc::c_void,
}

impl MDB_val {
    /// The bytes `v` points to.
    ///
    /// # Safety
    ///
    /// `v.mv_data` points to `v.mv_size` readable bytes (or `mv_size` is 0)
    /// that stay unchanged for `'a`.
    #[inline]
    pub(crate) unsafe fn bytes<'a>(v: &MDB_val) -> &'a [u8] {
        if v.mv_data.is_null() {
            return &[];
        }
        // SAFETY: the caller promises `mv_data` points to `mv_size` bytes
        // (none when `mv_size` is 0: a non-NULL pointer is then enough).
        unsafe { std::slice::from_raw_parts(v.mv_data as *const u8, v.mv_size) }
    }

    /// The key `v` points to: `MDB_BAD_VALSIZE` if empty, as LMDB (which
    /// refuses zero-length keys everywhere).
    ///
    /// # Safety
    ///
    /// As [`MDB_val::bytes`].
    pub(crate) unsafe fn key<'a>(v: &MDB_val) -> CResult<&'a [u8]> {
        if v.mv_size == 0 {
            return Err(MDB_BAD_VALSIZE);
        }
        // SAFETY: forwarded contract.
        Ok(unsafe { MDB_val::bytes(v) })
    }

    /// An `MDB_val` pointing at `b`.
    pub(crate) fn of(b: &[u8]) -> MDB_val {
        MDB_val {
            mv_size: b.len(),
            mv_data: b.as_ptr() as *mut libc::c_void,
        }
    }
}

/// A database handle number (LMDB's `MDB_dbi`).
pub type MDB_dbi = libc::c_uint;

/// Statistics of one database (LMDB's `MDB_stat`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MDB_stat {
    /// Page size, bytes.
    pub ms_psize: libc::c_uint,
    /// Height of the B+tree.
    pub ms_depth: libc::c_uint,
    /// Internal pages.
    pub ms_branch_pages: usize,
    /// Leaf pages.
    pub ms_leaf_pages: usize,
    /// Overflow pages.
    pub ms_overflow_pages: usize,
    /// Key/value pairs.
    pub ms_entries: usize,
}

impl From<sarsen::Stat> for MDB_stat {
    fn from(s: sarsen::Stat) -> MDB_stat {
        MDB_stat {
            ms_psize: s.page_size,
            ms_depth: s.depth,
            ms_branch_pages: s.branch_pages as usize,
            ms_leaf_pages: s.leaf_pages as usize,
            ms_overflow_pages: s.overflow_pages as usize,
            ms_entries: s.entries as usize,
        }
    }
}

/// Facts about an environment (LMDB's `MDB_envinfo`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MDB_envinfo {
    /// Always NULL: Sarsen never maps at a fixed address.
    pub me_mapaddr: *mut libc::c_void,
    /// Upper bound of the data file, bytes.
    pub me_mapsize: usize,
    /// Highest page number in use.
    pub me_last_pgno: usize,
    /// Newest committed transaction.
    pub me_last_txnid: usize,
    /// Reader slots.
    pub me_maxreaders: libc::c_uint,
    /// Reader slots in use.
    pub me_numreaders: libc::c_uint,
}

/// A comparison callback (LMDB's `MDB_cmp_func`).
pub type MDB_cmp_func = unsafe extern "C" fn(a: *const MDB_val, b: *const MDB_val) -> c_int;
/// A relocation callback (LMDB's `MDB_rel_func`; accepted, never called).
pub type MDB_rel_func = unsafe extern "C" fn(
    item: *mut MDB_val,
    oldptr: *mut libc::c_void,
    newptr: *mut libc::c_void,
    relctx: *mut libc::c_void,
);
/// An assertion callback (LMDB's `MDB_assert_func`; accepted, never called).
pub type MDB_assert_func = unsafe extern "C" fn(env: *mut MDB_env, msg: *const c_char);
/// A line printer for `mdb_reader_list` (LMDB's `MDB_msg_func`).
pub type MDB_msg_func = unsafe extern "C" fn(msg: *const c_char, ctx: *mut libc::c_void) -> c_int;

/// Runs `f`, turning a panic into `MDB_PANIC`: no panic crosses the C boundary.
#[inline(always)]
pub(crate) fn guard(f: impl FnOnce() -> c_int) -> c_int {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(MDB_PANIC)
}

/// Runs `f` for a function that returns no error code (or a pointer): a
/// panic gives `dflt`.
pub(crate) fn guard_or<T>(dflt: T, f: impl FnOnce() -> T) -> T {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(dflt)
}

/// `Ok` of a C call, or its error code.
pub(crate) type CResult<T> = Result<T, c_int>;

/// The code of a `CResult<()>`: 0 or the error.
pub(crate) fn code(r: CResult<()>) -> c_int {
    match r {
        Ok(()) => MDB_SUCCESS,
        Err(e) => e,
    }
}

/// Stores `v` at `p` if `p` is not NULL.
///
/// # Safety
///
/// `p` is NULL or valid for a write of a `T`.
pub(crate) unsafe fn store<T>(p: *mut T, v: T) {
    if !p.is_null() {
        // SAFETY: non-NULL, and the caller promises it is writable.
        unsafe { p.write(v) }
    }
}
