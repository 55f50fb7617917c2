//! Storage: the data file, its memory map, and the lock file.
//!
//! All `unsafe` lives here. The data file is mapped once, `MAP_SHARED`,
//! over the whole upper bound of the geometry, so the file can grow without
//! remapping under readers. By default the map is read-only and dirty pages
//! are heap buffers written with `pwrite`/`pwritev` at commit, so a stray
//! pointer cannot corrupt the file; in write-map mode (LMDB's
//! `MDB_WRITEMAP`) the map is writable and the writer builds dirty pages in
//! place (`buf::PageBuf::Mapped`).

pub(crate) mod buf;
#[cfg(feature = "fault-injection")]
pub mod fault;
pub(crate) mod file;
mod fork;
pub(crate) mod lock;
pub(crate) mod mmap;
pub(crate) mod slots;
mod writer_lock;

pub(crate) use file::DataFile;
pub(crate) use lock::LockFile;
pub(crate) use mmap::Map;
