//! Storage: the data file, its memory map, and the lock file.
//!
//! All `unsafe` outside `page/` lives here. The data file is mapped once,
//! read-only and `MAP_SHARED`, over the whole upper bound of the geometry, so
//! the file can grow without remapping under readers. Writes go through
//! `pwrite`/`pwritev`, never through the map: a stray pointer cannot corrupt
//! the file.

pub(crate) mod buf;
pub(crate) mod file;
pub(crate) mod lock;
pub(crate) mod mmap;

pub(crate) use file::DataFile;
pub(crate) use lock::LockFile;
pub(crate) use mmap::Map;
