//! Copies of an environment: `mdb_env_copy`, `mdb_env_copy2`,
//! `mdb_env_copyfd`, `mdb_env_copyfd2`.

use std::ffi::{c_char, c_int, c_uint, CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::consts::*;
use crate::env::with_env;
use crate::error::to_code;
use crate::MDB_env;

/// Copies the environment to directory `path` (`mdb_env_copy`), which
/// Sarsen creates if missing.
///
/// # Safety
///
/// `env` is a handle; `path` is NULL (`EINVAL`) or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_copy(env: *mut MDB_env, path: *const c_char) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { mdb_env_copy2(env, path, 0) }
}

/// Copies the environment to directory `path`, compacting with
/// `MDB_CP_COMPACT` (`mdb_env_copy2`).
///
/// # Safety
///
/// `env` is a handle; `path` is NULL (`EINVAL`) or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_copy2(
    env: *mut MDB_env,
    path: *const c_char,
    flags: c_uint,
) -> c_int {
    if path.is_null() || flags & !MDB_CP_COMPACT != 0 {
        return libc::EINVAL;
    }
    // SAFETY: non-NULL and NUL-terminated per the contract.
    let p = PathBuf::from(OsStr::from_bytes(
        unsafe { CStr::from_ptr(path) }.to_bytes(),
    ));
    // SAFETY: forwarded contract.
    unsafe {
        with_env(env, |_, e| {
            let r = if flags & MDB_CP_COMPACT != 0 {
                e.compact_copy_to(&p)
            } else {
                e.copy_to(&p)
            };
            r.map(|_| ()).map_err(|e| to_code(&e))
        })
    }
}

/// Writes a copy of the environment's data file to descriptor `fd`
/// (`mdb_env_copyfd`), at its current offset, as LMDB: a consistent copy
/// of the newest snapshot streamed straight to the descriptor
/// (`Env::copy_to_writer`; a pipe works). The result is a Sarsen data
/// file, openable with `MDB_NOSUBDIR`. Nothing is synced; `fd` stays open.
///
/// # Safety
///
/// `env` is a handle; `fd` an open descriptor, writable, left open.
#[no_mangle]
pub unsafe extern "C" fn mdb_env_copyfd(env: *mut MDB_env, fd: c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { mdb_env_copyfd2(env, fd, 0) }
}

/// [`mdb_env_copyfd`], compacting with `MDB_CP_COMPACT`
/// (`mdb_env_copyfd2`). A compact copy is built in a temporary directory
/// (`Env::compact_copy_to`, which needs the copy's size free in
/// `$TMPDIR`) whose `data.sdb` is then written to `fd`.
///
/// # Safety
///
/// As [`mdb_env_copyfd`].
#[no_mangle]
pub unsafe extern "C" fn mdb_env_copyfd2(env: *mut MDB_env, fd: c_int, flags: c_uint) -> c_int {
    use std::os::fd::FromRawFd;
    if fd < 0 || flags & !MDB_CP_COMPACT != 0 {
        return libc::EINVAL;
    }
    let io = |e: std::io::Error| e.raw_os_error().unwrap_or(libc::EIO);
    // SAFETY: forwarded contract.
    unsafe {
        with_env(env, |_, e| {
            // SAFETY: the caller's open descriptor, borrowed: ManuallyDrop
            // keeps it open.
            let mut dst = std::mem::ManuallyDrop::new(std::fs::File::from_raw_fd(fd));
            if flags & MDB_CP_COMPACT == 0 {
                return e
                    .copy_to_writer(&mut *dst)
                    .map(|_| ())
                    .map_err(|e| to_code(&e));
            }
            let tmp = std::env::temp_dir().join(format!(
                "sarsen-copyfd-{}-{}",
                std::process::id(),
                COPIES.fetch_add(1, Ordering::Relaxed)
            ));
            let out = e
                .compact_copy_to(&tmp)
                .map_err(|e| to_code(&e))
                .and_then(|_| {
                    let mut src = std::fs::File::open(tmp.join("data.sdb")).map_err(io)?;
                    std::io::copy(&mut src, &mut *dst).map(|_| ()).map_err(io)
                });
            let _ = std::fs::remove_dir_all(&tmp);
            out
        })
    }
}

/// Numbers the temporary directories of a compacting `mdb_env_copyfd2`.
static COPIES: AtomicUsize = AtomicUsize::new(0);
