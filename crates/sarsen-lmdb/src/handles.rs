//! Handles as slab indices with a generation.
//!
//! The pointers this library gives to C (`MDB_env *`, `MDB_txn *`,
//! `MDB_cursor *`) are not addresses: each is a number naming a slot of
//! its kind's slab and the generation the slot had when the handle was
//! given out, with the kind in its low two bits:
//!
//! ```text
//! bit 63 ......... 26 | 25 .......... 2 | 1 0
//!      generation      |   slot index    | kind (1 env, 2 txn, 3 cursor)
//! ```
//!
//! A slot holds the address of its object, its generation (the number of
//! handles it has given out), and while it is live the handle it gave out
//! (0 otherwise). Looking a handle up compares it with its slot's live
//! handle, so a NULL, closed, stale (its slot since reused), foreign,
//! forged or wrong-kind handle gives `EINVAL` and no memory is touched but
//! the slab's own, which is never freed. An address (of anything, 4-byte
//! aligned) has kind bits 0 and is refused at once.
//!
//! Nothing on the lookup path takes a lock: slabs are chunks that never
//! move (a fixed table of chunk pointers, each set once), and a slot's
//! live handle and object are atomics. Ending a handle clears its slot's
//! live handle with a compare-and-swap (so of two racing ends one wins),
//! and the slot goes back to a lock-free free list (a Treiber stack whose
//! head carries a tag against ABA) only once its object is cleaned up, so
//! a slot is never handed out while its old object is still in use.
//!
//! A slot can keep its object when it is freed ([`Slab::recycle`]): the
//! next handle from that slot reuses it, so a transaction handle costs no
//! allocation once its slot has been used.
//!
//! As before, a check can only tell that the handle was live at the time
//! of the check: LMDB's rules forbid ending a handle while another thread
//! uses it. Generations have 38 bits: a stale handle is mistaken for a
//! live one only if its slot was reused 2^38 times meanwhile.

use std::ffi::c_int;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

const KIND_BITS: u32 = 2;
const INDEX_BITS: u32 = 24;
const GEN_SHIFT: u32 = KIND_BITS + INDEX_BITS;
const GEN_MASK: u64 = (1 << (64 - GEN_SHIFT)) - 1;
/// Slots in one chunk.
const CHUNK_BITS: u32 = 12;
const CHUNK: usize = 1 << CHUNK_BITS;
/// Chunks a slab can have: `CHUNKS * CHUNK` is `2^INDEX_BITS` slots.
const CHUNKS: usize = 1 << (INDEX_BITS - CHUNK_BITS);

// Handles are 64-bit numbers carried in pointers.
const _: () = assert!(usize::BITS == 64);
// A slot's offset in its chunk is its index shifted.
const _: () = assert!(std::mem::size_of::<Slot>() == 32);

/// One slot: the handle it gave out while that is live (0 otherwise), the
/// handles it has given out, the next free slot (index + 1, 0 for none)
/// while on the free list, and the object. 32 bytes.
struct Slot {
    live: AtomicU64,
    gen: AtomicU64,
    next: AtomicU32,
    obj: AtomicPtr<()>,
}

/// A slab of handles of one kind. See the module docs.
pub(crate) struct Slab {
    kind: u64,
    chunks: [AtomicPtr<Slot>; CHUNKS],
    /// Slots handed out at least once (the next new index).
    used: AtomicU32,
    /// Free list head: tag (upper 32 bits) | index + 1 (0: empty).
    free: AtomicU64,
    /// Taken to allocate a chunk (rare: every 4096 slots).
    grow: Mutex<()>,
}

/// Environment handles.
pub(crate) static ENVS: Slab = Slab::new(1);
/// Transaction handles.
pub(crate) static TXNS: Slab = Slab::new(2);
/// Cursor handles.
pub(crate) static CURSORS: Slab = Slab::new(3);

/// A handle ended by [`Slab::retire`]: its slot, not yet free, and its object.
pub(crate) struct Retired {
    index: u32,
    /// The handle's object.
    pub(crate) obj: *mut (),
}

impl Slab {
    const fn new(kind: u64) -> Slab {
        Slab {
            kind,
            chunks: [const { AtomicPtr::new(ptr::null_mut()) }; CHUNKS],
            used: AtomicU32::new(0),
            free: AtomicU64::new(0),
            grow: Mutex::new(()),
        }
    }

    /// The slot of `index`, if its chunk exists.
    #[inline]
    fn slot(&self, index: u32) -> Option<&Slot> {
        let chunk = self.chunks[(index >> CHUNK_BITS) as usize].load(Ordering::Acquire);
        if chunk.is_null() {
            return None;
        }
        // SAFETY: a chunk is an array of `CHUNK` slots, allocated once and
        // never freed; the offset is below `CHUNK`.
        Some(unsafe { &*chunk.add(index as usize & (CHUNK - 1)) })
    }

    /// Slot index of handle `h`, if it is of this kind.
    #[inline]
    fn decode(&self, h: usize) -> Option<u32> {
        let h = h as u64;
        if h & ((1 << KIND_BITS) - 1) != self.kind {
            return None;
        }
        Some(((h >> KIND_BITS) & ((1 << INDEX_BITS) - 1)) as u32)
    }

    /// The object of live handle `h`, or `None`.
    #[inline]
    pub(crate) fn get(&self, h: usize) -> Option<*mut ()> {
        let slot = self.slot(self.decode(h)?)?;
        // A free slot's is 0, and `h`'s kind bits are not.
        if slot.live.load(Ordering::Acquire) != h as u64 {
            return None;
        }
        Some(slot.obj.load(Ordering::Acquire))
    }

    /// A free slot, and the object it kept (NULL if none). Publish an
    /// object in it with [`Slab::publish`]. `ENOMEM` when every slot of
    /// this kind is live.
    pub(crate) fn alloc(&self) -> Result<(u32, *mut ()), c_int> {
        let mut head = self.free.load(Ordering::Acquire);
        loop {
            let top = head as u32;
            if top == 0 {
                break;
            }
            let slot = self.slot(top - 1).ok_or(libc::ENOMEM)?;
            let next = slot.next.load(Ordering::Relaxed);
            let new = ((head >> 32).wrapping_add(1) << 32) | u64::from(next);
            match self
                .free
                .compare_exchange_weak(head, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Ok((top - 1, slot.obj.load(Ordering::Acquire))),
                Err(h) => head = h,
            }
        }
        let index = self.used.fetch_add(1, Ordering::AcqRel);
        if index >= 1 << INDEX_BITS {
            self.used.fetch_sub(1, Ordering::AcqRel);
            return Err(libc::ENOMEM);
        }
        if self.slot(index).is_none() {
            self.add_chunk(index);
        }
        Ok((index, ptr::null_mut()))
    }

    /// Allocates the chunk of `index` unless another thread did.
    #[cold]
    fn add_chunk(&self, index: u32) {
        let _g = self.grow.lock().unwrap_or_else(|e| e.into_inner());
        let cell = &self.chunks[(index >> CHUNK_BITS) as usize];
        if cell.load(Ordering::Acquire).is_null() {
            let chunk: Box<[Slot]> = (0..CHUNK)
                .map(|_| Slot {
                    live: AtomicU64::new(0),
                    gen: AtomicU64::new(0),
                    next: AtomicU32::new(0),
                    obj: AtomicPtr::new(ptr::null_mut()),
                })
                .collect();
            // Never freed: lookups may read any slot at any time.
            cell.store(Box::leak(chunk).as_mut_ptr(), Ordering::Release);
        }
    }

    /// Makes slot `index` (from [`Slab::alloc`]) live with object `obj`;
    /// the handle.
    pub(crate) fn publish(&self, index: u32, obj: *mut ()) -> usize {
        let slot = self.slot(index).expect("allocated slot");
        slot.obj.store(obj, Ordering::Release);
        // The slot is ours alone until `live` is set.
        let g = slot.gen.load(Ordering::Relaxed).wrapping_add(1);
        slot.gen.store(g, Ordering::Relaxed);
        let h = ((g & GEN_MASK) << GEN_SHIFT) | (u64::from(index) << KIND_BITS) | self.kind;
        slot.live.store(h, Ordering::Release);
        h as usize
    }

    /// Gives back slot `index` from [`Slab::alloc`], never published,
    /// keeping object `obj` (NULL for none) for the next [`Slab::alloc`].
    pub(crate) fn unalloc(&self, index: u32, obj: *mut ()) {
        let slot = self.slot(index).expect("allocated slot");
        slot.obj.store(obj, Ordering::Release);
        self.push_free(index);
    }

    /// Ends live handle `h`: from now on it is refused. Its slot is not
    /// free until [`Slab::recycle`]. `None` if `h` is not live (or another
    /// thread ended it first).
    pub(crate) fn retire(&self, h: usize) -> Option<Retired> {
        let index = self.decode(h)?;
        let slot = self.slot(index)?;
        slot.live
            .compare_exchange(h as u64, 0, Ordering::AcqRel, Ordering::Acquire)
            .ok()?;
        Some(Retired {
            index,
            obj: slot.obj.load(Ordering::Acquire),
        })
    }

    /// Frees the slot of a retired handle, which keeps its object for the
    /// next [`Slab::alloc`] if `keep` (else forgets it: the caller frees
    /// it). Call once the object is no longer used.
    pub(crate) fn recycle(&self, r: Retired, keep: bool) {
        let slot = self.slot(r.index).expect("retired slot");
        if !keep {
            slot.obj.store(ptr::null_mut(), Ordering::Relaxed);
        }
        self.push_free(r.index);
    }

    /// Puts slot `index` on the free list.
    fn push_free(&self, index: u32) {
        let slot = self.slot(index).expect("allocated slot");
        let mut head = self.free.load(Ordering::Acquire);
        loop {
            slot.next.store(head as u32, Ordering::Relaxed);
            let new = ((head >> 32).wrapping_add(1) << 32) | u64::from(index + 1);
            match self
                .free
                .compare_exchange_weak(head, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return,
                Err(h) => head = h,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_forged_and_foreign_handles_are_refused() {
        let s = Slab::new(2);
        let mut x = 5u64;
        let (i, spare) = s.alloc().unwrap();
        assert!(spare.is_null());
        let h = s.publish(i, &mut x as *mut u64 as *mut ());
        assert_eq!(s.get(h), Some(&mut x as *mut u64 as *mut ()));
        // Another kind's slab, an address, NULL, a forged generation.
        assert_eq!(ENVS.get(h), None);
        assert_eq!(s.get(&x as *const u64 as usize), None);
        assert_eq!(s.get(0), None);
        assert_eq!(s.get(h + (1 << GEN_SHIFT)), None);
        assert_eq!(s.get(h - (1 << GEN_SHIFT)), None);
        let r = s.retire(h).unwrap();
        assert!(s.retire(h).is_none());
        assert_eq!(s.get(h), None);
        s.recycle(r, true);
        // The slot comes back with its object, under a new generation.
        let (j, spare) = s.alloc().unwrap();
        assert_eq!((j, spare), (i, &mut x as *mut u64 as *mut ()));
        let h2 = s.publish(j, spare);
        assert_ne!(h, h2);
        assert_eq!(s.get(h), None);
        assert!(s.get(h2).is_some());
        // A free slot gives out no handle: the next generation's, forged,
        // is refused until the slot is taken again.
        let r = s.retire(h2).unwrap();
        s.recycle(r, false);
        assert_eq!(s.get(h2 + (1 << GEN_SHIFT)), None);
        assert_eq!(s.get(h2), None);
        let (_, spare) = s.alloc().unwrap();
        assert!(spare.is_null());
    }

    #[test]
    fn threads_never_share_a_slot() {
        let s: &'static Slab = Box::leak(Box::new(Slab::new(3)));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                std::thread::spawn(move || {
                    let mut mine = Vec::new();
                    for n in 0..20_000usize {
                        let (i, _) = s.alloc().unwrap();
                        let h = s.publish(i, (t * 1_000_000 + n + 1) as *mut ());
                        mine.push((h, t * 1_000_000 + n + 1));
                        if n % 3 != 0 {
                            let (h, v) = mine.swap_remove(n % mine.len());
                            assert_eq!(s.get(h), Some(v as *mut ()));
                            let r = s.retire(h).unwrap();
                            s.recycle(r, n % 2 == 0);
                        }
                    }
                    for (h, v) in mine {
                        assert_eq!(s.get(h), Some(v as *mut ()));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
}
