//! The read-only shared mapping of the data file.

use std::os::unix::io::AsRawFd;
use std::ptr::NonNull;

use crate::error::{Error, Result};
use crate::io::DataFile;

/// A read-only `MAP_SHARED` mapping of the data file, reserved once over the
/// upper bound of the geometry (`len` bytes). Bytes past the end of the file
/// must not be touched (the kernel would raise `SIGBUS`): callers only read
/// pages below the snapshot's next page number, and the writer grows the file
/// past a page before any snapshot names it.
pub(crate) struct Map {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is read-only for its whole life and unmapped only in
// Drop; sharing `&[u8]` views across threads is sound.
unsafe impl Send for Map {}
// SAFETY: as above; no interior mutability through the map.
unsafe impl Sync for Map {}

impl Map {
    /// Maps `len` bytes of `file`, read-only and shared.
    pub(crate) fn new(file: &DataFile, len: usize) -> Result<Map> {
        if len == 0 {
            return Err(Error::InvalidArgument("empty map".into()));
        }
        // SAFETY: a fresh mapping at an address the kernel chooses; no
        // existing memory is affected. The fd is open for reading.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED | libc::MAP_NORESERVE,
                file.file().as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::io("mmap", std::io::Error::last_os_error()));
        }
        let ptr = NonNull::new(p as *mut u8)
            .ok_or_else(|| Error::io("mmap", std::io::Error::other("null mapping")))?;
        Ok(Map { ptr, len })
    }

    /// The bytes `[off, off + len)` of the file, or `None` when the range
    /// leaves the reservation. The caller guarantees the range lies below the
    /// file's end (see the type's doc).
    #[inline]
    pub(crate) fn slice(&self, off: usize, len: usize) -> Option<&[u8]> {
        let end = off.checked_add(len)?;
        if end > self.len {
            return None;
        }
        // SAFETY: `[off, end)` is inside the live mapping (checked above);
        // the mapping is read-only and lives as long as `self`. Pages below
        // the file end are backed, per the caller contract. Writers never
        // modify a page reachable from a live snapshot (copy-on-write), so
        // the bytes seen through the returned slice do not change while the
        // snapshot that found them is open.
        Some(unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(off), len) })
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the region mapped in `new`; no borrow of
        // it outlives `self` (slices borrow `&self`).
        unsafe { libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, self.len) };
    }
}
