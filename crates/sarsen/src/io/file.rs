//! The data file: positioned writes, growth and sync.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::Path;

use crate::error::{Error, Result};

/// Most buffers handed to one `pwritev` call (Linux `IOV_MAX`).
const IOV_MAX: usize = 1024;

/// The data file of an environment.
pub(crate) struct DataFile {
    file: File,
    /// Test builds: the plan every write and sync goes through.
    #[cfg(feature = "fault-injection")]
    fault: Option<crate::io::fault::FaultPlan>,
}

impl DataFile {
    /// Opens (and with `create`, creates) the data file at `path`.
    pub(crate) fn open(path: &Path, read_only: bool, create: bool) -> Result<DataFile> {
        let file = OpenOptions::new()
            .read(true)
            .write(!read_only)
            .create(create && !read_only)
            .mode(0o644)
            .open(path)
            .map_err(|e| Error::io("open data file", e))?;
        Ok(DataFile {
            file,
            #[cfg(feature = "fault-injection")]
            fault: None,
        })
    }

    /// Test builds: routes every write and sync through `plan`.
    #[cfg(feature = "fault-injection")]
    pub(crate) fn with_faults(mut self, plan: Option<crate::io::fault::FaultPlan>) -> DataFile {
        self.fault = plan;
        self
    }

    /// The underlying file, for mapping.
    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    /// Current length of the file, bytes.
    pub(crate) fn len(&self) -> Result<u64> {
        Ok(self
            .file
            .metadata()
            .map_err(|e| Error::io("fstat", e))?
            .len())
    }

    /// Reads exactly `buf.len()` bytes at `offset`.
    pub(crate) fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.file
            .read_exact_at(buf, offset)
            .map_err(|e| Error::io("pread", e))
    }

    /// Writes all of `buf` at `offset`.
    pub(crate) fn write_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        #[cfg(feature = "fault-injection")]
        if let Some(plan) = &self.fault {
            return plan.write("pwrite", &[buf], offset, |b, o| self.raw_write(b, o));
        }
        self.raw_write_at(buf, offset)
    }

    /// Writes the buffers back to back starting at `offset`, with as few
    /// `pwritev` calls as the kernel allows.
    pub(crate) fn write_vectored_at(&self, bufs: &[&[u8]], offset: u64) -> Result<()> {
        #[cfg(feature = "fault-injection")]
        if let Some(plan) = &self.fault {
            return plan.write("pwritev", bufs, offset, |b, o| self.raw_write(b, o));
        }
        self.raw_write(bufs, offset)
    }

    fn raw_write_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        self.file
            .write_all_at(buf, offset)
            .map_err(|e| Error::io("pwrite", e))
    }

    /// The write itself: `pwrite` for one buffer, else `pwritev`.
    fn raw_write(&self, bufs: &[&[u8]], mut offset: u64) -> Result<()> {
        if let [buf] = bufs {
            return self.raw_write_at(buf, offset);
        }
        for group in bufs.chunks(IOV_MAX) {
            let total: usize = group.iter().map(|b| b.len()).sum();
            let iov: Vec<libc::iovec> = group
                .iter()
                .map(|b| libc::iovec {
                    iov_base: b.as_ptr() as *mut libc::c_void,
                    iov_len: b.len(),
                })
                .collect();
            // SAFETY: every iovec points into a live borrowed slice of its
            // stated length; pwritev only reads them. The fd is open.
            let n = unsafe {
                libc::pwritev(
                    self.file.as_raw_fd(),
                    iov.as_ptr(),
                    iov.len() as libc::c_int,
                    offset as libc::off_t,
                )
            };
            if n < 0 {
                return Err(Error::io("pwritev", std::io::Error::last_os_error()));
            }
            let n = n as usize;
            if n < total {
                // Short write: finish the rest buffer by buffer.
                let mut skip = n;
                let mut off = offset + n as u64;
                for b in group {
                    if skip >= b.len() {
                        skip -= b.len();
                        continue;
                    }
                    self.raw_write_at(&b[skip..], off)?;
                    off += (b.len() - skip) as u64;
                    skip = 0;
                }
            }
            offset += total as u64;
        }
        Ok(())
    }

    /// Cuts the file to `len` bytes (`ftruncate`). Nothing is synced: until
    /// a later sync, a crash may leave the longer file, which is as valid.
    pub(crate) fn truncate(&self, len: u64) -> Result<()> {
        let raw = || {
            self.file
                .set_len(len)
                .map_err(|e| Error::io("ftruncate", e))
        };
        #[cfg(feature = "fault-injection")]
        if let Some(plan) = &self.fault {
            return plan.set_len(len, raw);
        }
        raw()
    }

    /// Makes written data durable (`fdatasync`).
    pub(crate) fn sync_data(&self) -> Result<()> {
        #[cfg(feature = "fault-injection")]
        if let Some(plan) = &self.fault {
            return plan.sync(|| {
                self.raw_sync()?;
                self.len()
            });
        }
        self.raw_sync()
    }

    /// Drops the file's clean pages from the page cache, so that the next
    /// reads come from the disk (after a failed sync, the cache may hold
    /// pages the disk lost). Advisory: pages mapped elsewhere may stay.
    pub(crate) fn evict_cache(&self) -> Result<()> {
        use std::os::unix::io::AsRawFd;
        // SAFETY: posix_fadvise on a valid descriptor; it touches no memory.
        let r =
            unsafe { libc::posix_fadvise(self.file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if r != 0 {
            return Err(Error::io(
                "posix_fadvise",
                std::io::Error::from_raw_os_error(r),
            ));
        }
        Ok(())
    }

    fn raw_sync(&self) -> Result<()> {
        self.file.sync_data().map_err(|e| Error::io("fdatasync", e))
    }
}
