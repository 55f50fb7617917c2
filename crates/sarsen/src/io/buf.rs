//! Dirty page buffers: heap memory, or (write-map mode) the page's own
//! bytes in a writable map, each with the checksum of its bytes once it
//! has been taken.

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

/// Where the bytes of a [`PageBuf`] live.
enum Mem {
    /// Written to the file at commit.
    Heap(Box<[u8]>),
    /// Already in the file's pages (write-map mode).
    Mapped(MapPage),
}

/// The bytes of one dirty page (or overflow run).
///
/// It can keep the XXH3-64 of its bytes ([`PageBuf::leaf_checksum`]).
/// Invariant: a kept checksum is that of the current bytes. It holds
/// because the bytes change only through `&mut [u8]` from `DerefMut`
/// (the fields are private to this module), and `DerefMut` forgets the
/// checksum.
pub(crate) struct PageBuf {
    mem: Mem,
    /// The checksum of the bytes, if taken since they last changed.
    sum: Option<u64>,
}

impl PageBuf {
    /// A heap buffer.
    pub(crate) fn heap(b: Box<[u8]>) -> PageBuf {
        PageBuf {
            mem: Mem::Heap(b),
            sum: None,
        }
    }

    /// A view of the writable map.
    pub(crate) fn mapped(m: MapPage) -> PageBuf {
        PageBuf {
            mem: Mem::Mapped(m),
            sum: None,
        }
    }

    /// Whether commit must write this buffer to the file.
    pub(crate) fn needs_write(&self) -> bool {
        matches!(self.mem, Mem::Heap(_))
    }

    /// The heap memory, for reuse; `None` for a view of the map.
    pub(crate) fn into_heap(self) -> Option<Box<[u8]>> {
        match self.mem {
            Mem::Heap(b) => Some(b),
            Mem::Mapped(_) => None,
        }
    }

    /// Makes `orig` the bytes: a heap buffer takes it and returns its old
    /// memory; a view of the map copies it in and returns `orig`. Both
    /// lengths must be equal (checked by the caller).
    pub(crate) fn restore(&mut self, orig: Box<[u8]>) -> Box<[u8]> {
        self.sum = None;
        match &mut self.mem {
            Mem::Heap(h) => std::mem::replace(h, orig),
            Mem::Mapped(_) => {
                self.copy_from_slice(&orig);
                orig
            }
        }
    }

    /// Takes and keeps the checksum ([`crate::page::checksum`]) of a leaf
    /// page; does nothing for any other page. A write transaction calls it
    /// when it moves on to another leaf, while this one's bytes are still
    /// in the CPU cache, so that commit need not load them again.
    pub(crate) fn hash_leaf(&mut self) {
        if self.sum.is_none() && self.get(4) == Some(&(crate::page::Kind::Leaf as u8)) {
            self.sum = Some(crate::page::checksum(self));
        }
    }

    /// The checksum [`PageBuf::hash_leaf`] kept, if the bytes have not
    /// changed since: then the page is a leaf whose checksum is this.
    pub(crate) fn leaf_checksum(&self) -> Option<u64> {
        self.sum
    }
}

impl Deref for PageBuf {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        match &self.mem {
            Mem::Heap(b) => b,
            // SAFETY: per `MapPage::new`, the range is mapped, backed and
            // exclusively the writer's; `&self` borrows it.
            Mem::Mapped(m) => unsafe { std::slice::from_raw_parts(m.ptr.as_ptr(), m.len) },
        }
    }
}

impl DerefMut for PageBuf {
    /// Forgets the kept checksum: the caller may change the bytes.
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        self.sum = None;
        match &mut self.mem {
            Mem::Heap(b) => b,
            // SAFETY: as in `deref`; `&mut self` makes the access unique.
            Mem::Mapped(m) => unsafe { std::slice::from_raw_parts_mut(m.ptr.as_ptr(), m.len) },
        }
    }
}
