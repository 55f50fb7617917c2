//! Dirty page buffers: heap memory, or (write-map mode) the page's own
//! bytes in a writable map.

use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// A range of the writable map holding a dirty page or overflow run.
pub(crate) struct MapPage {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a MapPage is only created and used by the writer, which holds the
// writer lock; moving it across threads moves that exclusive access.
unsafe impl Send for MapPage {}

impl MapPage {
    /// # Safety
    /// `ptr..ptr+len` must be inside a live writable mapping, backed by the
    /// file, and no other reference to those bytes may exist while the
    /// `MapPage` is used (the writer's dirty set holds one entry per page,
    /// and no snapshot can reach a dirty page).
    pub(crate) unsafe fn new(ptr: NonNull<u8>, len: usize) -> MapPage {
        MapPage { ptr, len }
    }
}

/// The bytes of one dirty page (or overflow run).
pub(crate) enum PageBuf {
    /// Written to the file at commit.
    Heap(Box<[u8]>),
    /// Already in the file's pages (write-map mode).
    Mapped(MapPage),
}

impl PageBuf {
    /// Whether commit must write this buffer to the file.
    pub(crate) fn needs_write(&self) -> bool {
        matches!(self, PageBuf::Heap(_))
    }
}

impl Deref for PageBuf {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            PageBuf::Heap(b) => b,
            // SAFETY: per `MapPage::new`, the range is mapped, backed and
            // exclusively the writer's; `&self` borrows it.
            PageBuf::Mapped(m) => unsafe { std::slice::from_raw_parts(m.ptr.as_ptr(), m.len) },
        }
    }
}

impl DerefMut for PageBuf {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            PageBuf::Heap(b) => b,
            // SAFETY: as in `deref`; `&mut self` makes the access unique.
            PageBuf::Mapped(m) => unsafe { std::slice::from_raw_parts_mut(m.ptr.as_ptr(), m.len) },
        }
    }
}
