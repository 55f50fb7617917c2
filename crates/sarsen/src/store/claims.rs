//! Which pages of the snapshot the writer has taken from the GC or released
//! from a tree in the transaction under way: each may be, once.

use crate::page::Pgno;

/// One bit per page of the snapshot (`3..file_pgno`): set when the writer
/// takes the page from a GC record or frees it from a tree (`touch`,
/// `free`). A page may be claimed once per transaction, so in a file whose
/// GC lists a page twice, or lists a page a tree still uses, the second
/// claim fails with `Corrupted` before any view of the page is made. That
/// keeps every page number the allocator hands out distinct from every
/// other allocated page and from every page the writer releases, which the
/// writable views of write-map mode rely on (design.md §6).
///
/// The bits live in chunks of [`CLAIM_CHUNK`] pages, made when a page of
/// one is first claimed and kept across transactions, so memory follows
/// the pages claimed rather than a `next_pgno` a damaged meta may set to
/// 2^31. `list` holds the set bits: clearing costs what was claimed.
#[derive(Default)]
pub(crate) struct Claims {
    chunks: Vec<Option<Box<[u64; CLAIM_CHUNK / 64]>>>,
    list: Vec<Pgno>,
}

/// Pages per chunk of [`Claims`] (a 512-byte bitmap).
const CLAIM_CHUNK: usize = 4096;

impl Claims {
    /// Sets the bit of page `p`; false if it was set already.
    #[inline]
    pub(crate) fn claim(&mut self, p: Pgno) -> bool {
        let c = p as usize / CLAIM_CHUNK;
        if c >= self.chunks.len() {
            self.chunks.resize_with(c + 1, || None);
        }
        let Some(slot) = self.chunks.get_mut(c) else {
            return false;
        };
        let chunk = slot.get_or_insert_with(|| Box::new([0; CLAIM_CHUNK / 64]));
        let (w, m) = (p as usize % CLAIM_CHUNK / 64, 1u64 << (p % 64));
        if chunk[w] & m != 0 {
            return false;
        }
        chunk[w] |= m;
        self.list.push(p);
        true
    }

    /// How many pages are claimed (a nested transaction's checkpoint).
    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    /// Forgets every claim after the first `len`.
    pub(crate) fn truncate(&mut self, len: usize) {
        for p in self.list.drain(len.min(self.list.len())..) {
            if let Some(Some(chunk)) = self.chunks.get_mut(p as usize / CLAIM_CHUNK) {
                chunk[p as usize % CLAIM_CHUNK / 64] &= !(1u64 << (p % 64));
            }
        }
    }
}
