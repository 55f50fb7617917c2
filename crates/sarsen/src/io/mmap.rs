//! The shared mapping of the data file.

use std::fs::File;
use std::os::unix::io::AsRawFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use super::buf::MapPage;
use super::file::DataFile;
use crate::error::{Error, Result};

/// A `MAP_SHARED` mapping of the data file, reserved once over the upper
/// bound of the geometry (`len` bytes). Read-only by default; writable in
/// write-map mode, where the writer builds dirty pages in place.
///
/// Bytes past the end of the file must not be touched (the kernel would
/// raise `SIGBUS`): readers only read pages below their snapshot's next
/// page number, the writer grows the file past a page before any snapshot
/// names it, and in write-map mode before it writes the page.
pub(crate) struct Map {
    ptr: NonNull<u8>,
    len: usize,
    writable: bool,
    /// The data file, for growing it (a second handle, owned by the map).
    file: File,
    /// File length as last seen by this process, bytes.
    file_len: AtomicU64,
    /// Write-map mode: bytes from the start of the file whose blocks this
    /// process has allocated (page writes through the map stay below it).
    alloc_len: AtomicU64,
    /// The lock file's truncation count when this process last learnt the
    /// file's length (see [`Map::refresh_after_shrinks`]).
    shrinks_seen: AtomicU64,
}

// SAFETY: shared views are read-only slices of pages no writer modifies
// (copy-on-write); writable views exist only in the writer, under its lock.
unsafe impl Send for Map {}
// SAFETY: as above.
unsafe impl Sync for Map {}

impl Map {
    /// Maps `len` bytes of `file`, shared; writable if `writable`. Without
    /// `read_ahead`, the kernel is told to expect random access
    /// (`MADV_RANDOM`), so a page fault reads one page rather than a window
    /// around it (LMDB's `MDB_NORDAHEAD`). With it and `huge_folios`, the
    /// kernel is asked for huge pages (`MADV_HUGEPAGE`): see
    /// [`Map::huge_folios`].
    pub(crate) fn new(
        file: &DataFile,
        len: usize,
        writable: bool,
        read_ahead: bool,
        huge_folios: bool,
    ) -> Result<Map> {
        if len == 0 {
            return Err(Error::InvalidArgument("empty map".into()));
        }
        let handle = file.file().try_clone().map_err(|e| Error::io("dup", e))?;
        let prot = if writable {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // SAFETY: a fresh mapping at an address the kernel chooses; no
        // existing memory is affected. The fd is open with matching access.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
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
        if !read_ahead {
            // SAFETY: `p` is the start of the `len`-byte mapping just made;
            // advice changes no memory contents. A failure only leaves the
            // kernel's default read-around, so it is not an error.
            unsafe { libc::madvise(p, len, libc::MADV_RANDOM) };
        } else if huge_folios {
            Map::huge_folios(p, len);
        }
        let len_now = file.len()?;
        let file_len = AtomicU64::new(len_now);
        Ok(Map {
            ptr,
            len,
            writable,
            file: handle,
            file_len,
            alloc_len: AtomicU64::new(0),
            shrinks_seen: AtomicU64::new(0),
        })
    }

    /// Asks that page faults in the mapping at `p` (`len` bytes) fill the
    /// page cache in huge folios (2 MiB on x86-64) where the kernel and
    /// file system can (`MADV_HUGEPAGE`; Linux 6.x with large-folio
    /// support, as ext4 and XFS have). Write-map mode builds the file's
    /// pages by writing through the map, and with 4 KiB folios every page
    /// takes a write fault again after each periodic write-back, a large
    /// share of a long random-write run's system time. With huge folios
    /// one fault covers 512 pages. The cost is write-back granularity: a write
    /// fault marks the whole folio dirty, so the kernel writes 2 MiB for
    /// any page changed in it; the caller asks only in modes that never
    /// sync per commit. A kernel that refuses the advice (`EINVAL`) keeps
    /// its default, so failure is ignored.
    fn huge_folios(p: *mut libc::c_void, len: usize) {
        // SAFETY: `p` is the start of a `len`-byte mapping made by the
        // caller; advice changes no memory contents.
        unsafe { libc::madvise(p, len, libc::MADV_HUGEPAGE) };
    }

    /// Whether the writer builds dirty pages in the map (write-map mode).
    pub(crate) fn writable(&self) -> bool {
        self.writable
    }

    /// The offset in the map of the byte at address `addr`, if the map's
    /// reservation holds it (address arithmetic only; nothing is read).
    pub(crate) fn offset_of(&self, addr: usize) -> Option<usize> {
        let base = self.ptr.as_ptr() as usize;
        addr.checked_sub(base).filter(|&off| off < self.len)
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
        // SAFETY: `[off, end)` is inside the live mapping (checked above)
        // and lives as long as `self`. Pages below the file end are backed,
        // per the caller contract. Writers never modify a page reachable
        // from a live snapshot (copy-on-write), so the bytes seen through
        // the returned slice do not change while the snapshot that found
        // them is open.
        Some(unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(off), len) })
    }

    /// A writable view of `[off, off + len)` for a page the writer has just
    /// allocated, or for the meta slot it is writing (no reader reads meta
    /// pages through the map; snapshots come from the lock file). `None` unless the map is writable and the range lies
    /// inside both the reservation and the allocated part of the file.
    pub(crate) fn page_mut(&self, off: usize, len: usize) -> Option<MapPage> {
        let end = off.checked_add(len)?;
        if !self.writable || end > self.len || end as u64 > self.alloc_len.load(Ordering::Relaxed) {
            return None;
        }
        // SAFETY: in bounds (checked); `add` stays inside the mapping.
        let p = unsafe { self.ptr.as_ptr().add(off) };
        let p = NonNull::new(p)?;
        // SAFETY: mapped, writable and backed by the file (checked above).
        // Exclusivity: only the writer calls this, for a page it allocated
        // (past every snapshot's reach), and keeps one buffer per page.
        Some(unsafe { MapPage::new(p, len) })
    }

    /// Makes pages below byte `need` usable: the file at least that long,
    /// and in write-map mode its blocks allocated (`fallocate`, in multiples
    /// of `step` bytes), so a full disk is an error here rather than a
    /// fault when the page is first written through the map. Never past
    /// `upper`, never shrinking.
    ///
    /// The file's apparent size runs a margin beyond the pages in use
    /// ([`Map::grown_len`]: half their size, at most [`SPARSE_AHEAD`]). That slack is sparse (no disk blocks, and never written), and it
    /// matters: the kernel's mmap readahead stops at the end of the file, so
    /// a file that ends right after its last page gets only small page-cache
    /// folios there, and many more page faults.
    pub(crate) fn grow(&self, need: u64, step: u64, upper: u64) -> Result<()> {
        let step = step.max(1);
        if need > self.file_len.load(Ordering::Relaxed) {
            // Another process may have grown it: never shrink on a stale length.
            let len = self
                .file
                .metadata()
                .map_err(|e| Error::io("fstat", e))?
                .len();
            let len = if need > len {
                let target = Map::grown_len(need, step, upper);
                self.file
                    .set_len(target)
                    .map_err(|e| Error::io("ftruncate", e))?;
                target
            } else {
                len
            };
            self.file_len.store(len, Ordering::Relaxed);
        }
        let from = self.alloc_len.load(Ordering::Relaxed);
        if !self.writable || need <= from {
            return Ok(());
        }
        let to = need
            .div_ceil(step)
            .saturating_mul(step)
            .min(self.file_len.load(Ordering::Relaxed))
            .max(need);
        // SAFETY: fallocate on an open fd over a range inside the file.
        let r = unsafe {
            libc::fallocate(
                self.file.as_raw_fd(),
                0,
                from as libc::off_t,
                (to - from) as libc::off_t,
            )
        };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            // Without fallocate (some file systems) there is nothing to
            // reserve; a full disk can then fault in write-map mode.
            if e.raw_os_error() != Some(libc::EOPNOTSUPP) {
                return Err(Error::io("fallocate", e));
            }
        }
        self.alloc_len.store(to, Ordering::Relaxed);
        Ok(())
    }
}

impl Map {
    /// The file length this process last saw or set, bytes (no system
    /// call: for cheap tests only).
    pub(crate) fn known_len(&self) -> u64 {
        self.file_len.load(Ordering::Relaxed)
    }

    /// Called by a writer, under the writer lock, with the lock file's
    /// truncation count: if another writer cut the file since this process
    /// last looked, forgets the length and blocks it knew beyond the
    /// file's end now (one `fstat`).
    pub(crate) fn refresh_after_shrinks(&self, shrinks: u64) -> Result<()> {
        if self.shrinks_seen.load(Ordering::Relaxed) == shrinks {
            return Ok(());
        }
        let len = self
            .file
            .metadata()
            .map_err(|e| Error::io("fstat", e))?
            .len();
        self.forget_beyond(len);
        self.shrinks_seen.store(shrinks, Ordering::Relaxed);
        Ok(())
    }

    /// Forgets what this process knew of the file's length and allocated
    /// blocks beyond `len` bytes: the file was cut to `len`, by this
    /// process ([`Map::truncate`]) or another. The next [`Map::grow`] past
    /// it extends the file again (and allocates its blocks in write-map
    /// mode) before any page there is written through the map, which would
    /// otherwise raise `SIGBUS` past the end of the file.
    pub(crate) fn forget_beyond(&self, len: u64) {
        self.file_len.fetch_min(len, Ordering::Relaxed);
        self.alloc_len.fetch_min(len, Ordering::Relaxed);
    }

    /// The apparent length [`Map::grow`] gives a file whose pages in use
    /// end at byte `need`: a sparse margin beyond it of half of `need`,
    /// at least one `step` and at most [`SPARSE_AHEAD`], in whole `step`s,
    /// at most `upper` (and at least `need`). Proportional below the cap,
    /// so that a small database's file stays within twice its pages.
    pub(crate) fn grown_len(need: u64, step: u64, upper: u64) -> u64 {
        let step = step.max(1);
        let margin = (need / 2).clamp(step.min(SPARSE_AHEAD), SPARSE_AHEAD);
        need.saturating_add(margin)
            .div_ceil(step)
            .saturating_mul(step)
            .min(upper)
            .max(need)
    }
}

/// How far the file's apparent size runs ahead of the pages in use, bytes
/// (sparse: see [`Map::grow`]).
const SPARSE_AHEAD: u64 = 64 << 20;

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the region mapped in `new`; no borrow of
        // it outlives `self` (slices borrow `&self`; the writer's mapped
        // buffers are dropped or unused by then).
        unsafe { libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, self.len) };
    }
}
