//! Sarsen errors as LMDB return codes; `mdb_strerror` and `mdb_version`.

use std::ffi::{c_char, c_int, CStr};

use crate::consts::*;

/// The LMDB return code for a Sarsen error.
///
/// `Forked` (an environment used in a `fork()` child of the process that
/// opened it) has no LMDB code: it is `EINVAL`, as LMDB documents such use
/// as invalid. `SyncFailed` is `EIO`.
pub fn to_code(e: &sarsen::Error) -> c_int {
    use sarsen::Error as E;
    match e {
        E::Io { source, .. } => source.raw_os_error().unwrap_or(libc::EIO),
        E::DiskFull { .. } => libc::ENOSPC,
        E::Corrupted { .. } => MDB_CORRUPTED,
        E::KeyTooLarge { .. }
        | E::ValueTooLarge { .. }
        | E::BadKeySize { .. }
        | E::BadValueSize { .. } => MDB_BAD_VALSIZE,
        E::UpperBoundReached { .. } => MDB_MAP_FULL,
        E::DbNotFound { .. } => MDB_NOTFOUND,
        E::DbsFull { .. } => MDB_DBS_FULL,
        E::ReadersFull { .. } => MDB_READERS_FULL,
        E::KeyNotGreater => MDB_KEYEXIST,
        E::Busy => libc::EBUSY,
        E::ReadOnly => libc::EACCES,
        E::InvalidArgument(_) => libc::EINVAL,
        E::BadTxn => MDB_BAD_TXN,
        E::KeyOrderMismatch { .. }
        | E::DupModeMismatch { .. }
        | E::WrongDupMode { .. }
        | E::NoComparator { .. }
        | E::MergeOperatorMismatch { .. }
        | E::NoMergeOperator { .. }
        | E::Merge { .. } => MDB_INCOMPATIBLE,
        E::Forked => libc::EINVAL,
        E::SyncFailed => libc::EIO,
        E::Incompatible(_) => MDB_INVALID,
        _ => MDB_PANIC,
    }
}

/// The text of each LMDB code, `MDB_KEYEXIST` first (NUL-terminated).
static TEXTS: [&str; 21] = [
    "MDB_KEYEXIST: Key/data pair already exists\0",
    "MDB_NOTFOUND: No matching key/data pair found\0",
    "MDB_PAGE_NOTFOUND: Requested page not found\0",
    "MDB_CORRUPTED: Located page was wrong type (the file is damaged)\0",
    "MDB_PANIC: Update of meta page failed or environment had fatal error\0",
    "MDB_VERSION_MISMATCH: Database environment version mismatch\0",
    "MDB_INVALID: File is not a Sarsen data file (an LMDB data.mdb? migrate it with: mdb_dump -a | sarsen load)\0",
    "MDB_MAP_FULL: Environment mapsize limit reached\0",
    "MDB_DBS_FULL: Environment maxdbs limit reached\0",
    "MDB_READERS_FULL: Environment maxreaders limit reached\0",
    "MDB_TLS_FULL: Thread-local storage keys full - too many environments open\0",
    "MDB_TXN_FULL: Transaction has too many dirty pages - transaction too big\0",
    "MDB_CURSOR_FULL: Internal error - cursor stack limit reached\0",
    "MDB_PAGE_FULL: Internal error - page has no more space\0",
    "MDB_MAP_RESIZED: Database contents grew beyond environment mapsize\0",
    "MDB_INCOMPATIBLE: Operation and DB incompatible, or DB flags changed\0",
    "MDB_BAD_RSLOT: Invalid reuse of reader locktable slot\0",
    "MDB_BAD_TXN: Transaction must abort, has a child, or is invalid\0",
    "MDB_BAD_VALSIZE: Unsupported size of key/DB name/data, or wrong DUPFIXED size\0",
    "MDB_BAD_DBI: The specified DBI handle was closed/changed unexpectedly\0",
    "\0",
];

/// The version string returned by [`mdb_version`].
static VERSION: &str = concat!(
    "LMDB 0.9.31: (Sarsen ",
    env!("CARGO_PKG_VERSION"),
    " LMDB-compatible library)\0"
);

/// The library version: a static string; `major`, `minor` and `patch` get
/// 0, 9 and 31 when not NULL.
///
/// # Safety
///
/// Each non-NULL pointer is valid for a write of an `int`.
#[no_mangle]
pub unsafe extern "C" fn mdb_version(
    major: *mut c_int,
    minor: *mut c_int,
    patch: *mut c_int,
) -> *mut c_char {
    // SAFETY: the caller promises each pointer is NULL or writable.
    unsafe {
        crate::store(major, MDB_VERSION_MAJOR);
        crate::store(minor, MDB_VERSION_MINOR);
        crate::store(patch, MDB_VERSION_PATCH);
    }
    VERSION.as_ptr() as *mut c_char
}

/// The text of return code `err`: a static string for LMDB's codes and 0,
/// the C library's `strerror` for errno values. Never NULL.
///
/// # Safety
///
/// Always safe to call; `unsafe` as every function of the C API. The
/// string for an errno value may be overwritten by a later call (as
/// `strerror`'s).
#[no_mangle]
pub unsafe extern "C" fn mdb_strerror(err: c_int) -> *mut c_char {
    if err == 0 {
        return c"Successful return: 0".as_ptr() as *mut c_char;
    }
    if (MDB_KEYEXIST..=MDB_LAST_ERRCODE).contains(&err) {
        return TEXTS[(err - MDB_KEYEXIST) as usize].as_ptr() as *mut c_char;
    }
    // SAFETY: strerror accepts any int and returns a NUL-terminated string.
    let s = unsafe { libc::strerror(err) };
    if s.is_null() {
        return c"Unknown error".as_ptr() as *mut c_char;
    }
    s
}

/// The text of `code`, for tests and messages.
pub fn describe(code: c_int) -> String {
    // SAFETY: mdb_strerror returns a valid NUL-terminated string.
    unsafe { CStr::from_ptr(mdb_strerror(code)) }
        .to_string_lossy()
        .into_owned()
}
