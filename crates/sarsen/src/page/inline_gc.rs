//! The inline GC of a meta page (format version 2): the newest lists of
//! free pages, carried in the commit's own meta page instead of the GC
//! tree. A one-put commit frees the few pages of its path and reuses those
//! the commit before it freed; with the lists in the meta page (written by
//! every commit anyway) it changes no GC tree page at all. LMDB and
//! libmdbx keep every list in their GC tree (`FREE_DBI`); this is Sarsen's.
//!
//! Layout, offsets in the meta page:
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 296 | 2 | number of groups `g`, `u16` LE |
//! | 298 | 2 | number of pages `n`, `u16` LE |
//! | 320 | 12·g | per group: txnid `u64` LE, page count `u32` LE; txnids strictly descending |
//! | 320 + 12·g | 4·n | page numbers `u32` LE, group after group, in no order within a group |
//!
//! `12·g + 4·n ≤ 184` (the area ends at 504, where the meta checksum is),
//! and `g ≤ 8`. A group of txnid `t` means what a GC record of key `(t, _)`
//! means (design.md §7): its pages are reusable by a writer whose bound is
//! at least `t`. A txnid is in the inline GC or in the GC tree, never both.

use super::{rd32, rd64, wr32, wr64, Pgno, META_PAGES};

/// First byte of the inline area in the meta page.
pub(crate) const AREA_START: usize = 320;
/// End (exclusive) of the inline area: the format-2 meta checksum follows.
pub(crate) const AREA_END: usize = 504;
/// Most groups an inline GC holds.
pub(crate) const MAX_GROUPS: usize = 8;
/// Most pages an inline GC holds (with one group).
pub(crate) const MAX_PAGES: usize = (AREA_END - AREA_START - 12) / 4;

/// The inline GC of one commit: up to [`MAX_GROUPS`] groups, each a txnid
/// and the pages it freed (or left unused), newest first.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct InlineGc {
    groups: usize,
    /// Group `i` is `txnids[i]`, pages `pages[ends[i-1]..ends[i]]`.
    txnids: [u64; MAX_GROUPS],
    ends: [u8; MAX_GROUPS],
    pages: [Pgno; MAX_PAGES],
}

impl Default for InlineGc {
    fn default() -> Self {
        InlineGc {
            groups: 0,
            txnids: [0; MAX_GROUPS],
            ends: [0; MAX_GROUPS],
            pages: [0; MAX_PAGES],
        }
    }
}

impl InlineGc {
    /// Whether `groups` groups of `pages` pages in all fit.
    pub(crate) fn fits(groups: usize, pages: usize) -> bool {
        groups <= MAX_GROUPS && 12 * groups + 4 * pages <= AREA_END - AREA_START
    }

    /// Number of groups.
    pub(crate) fn len(&self) -> usize {
        self.groups
    }

    /// Pages in all groups.
    pub(crate) fn pages_len(&self) -> usize {
        self.end(self.groups)
    }

    fn end(&self, i: usize) -> usize {
        if i == 0 {
            0
        } else {
            usize::from(self.ends[i - 1])
        }
    }

    /// Group `i`: its txnid and pages. `i < len()`.
    pub(crate) fn group(&self, i: usize) -> (u64, &[Pgno]) {
        (self.txnids[i], &self.pages[self.end(i)..self.end(i + 1)])
    }

    /// The groups, newest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, &[Pgno])> {
        (0..self.groups).map(|i| self.group(i))
    }

    /// Empties the list.
    pub(crate) fn clear(&mut self) {
        self.groups = 0;
    }

    /// Appends a group older than every group in the list. An empty
    /// `pages` adds nothing. Returns `false`, changing nothing, if it does
    /// not fit or is not older.
    pub(crate) fn push(&mut self, txnid: u64, pages: &[Pgno]) -> bool {
        if pages.is_empty() {
            return true;
        }
        let (from, n) = (self.pages_len(), pages.len());
        if !Self::fits(self.groups + 1, from + n)
            || (self.groups > 0 && self.txnids[self.groups - 1] <= txnid)
        {
            return false;
        }
        self.pages[from..from + n].copy_from_slice(pages);
        self.txnids[self.groups] = txnid;
        // `from + n <= MAX_PAGES < 256`.
        self.ends[self.groups] = (from + n) as u8;
        self.groups += 1;
        true
    }

    /// Writes the counts at 296 and the area into meta page bytes `b`
    /// (at least [`AREA_END`] bytes, zeroed by the caller).
    pub(crate) fn encode(&self, b: &mut [u8]) {
        let n = self.pages_len();
        b[296..298].copy_from_slice(&(self.groups as u16).to_le_bytes());
        b[298..300].copy_from_slice(&(n as u16).to_le_bytes());
        let mut at = AREA_START;
        for (t, list) in self.iter() {
            wr64(b, at, t);
            wr32(b, at + 8, list.len() as u32);
            at += 12;
        }
        for &p in &self.pages[..n] {
            wr32(b, at, p);
            at += 4;
        }
    }

    /// Reads the inline GC of a format-2 meta page of commit `txnid` whose
    /// next unallocated page is `next_pgno`. Checks the counts, that the
    /// groups' txnids are in `1..=txnid` and strictly descending, that no
    /// group is empty and that every page is in `3..next_pgno`.
    ///
    /// # Errors
    ///
    /// What is wrong, for `MetaError::Invalid`.
    pub(crate) fn decode(b: &[u8], txnid: u64, next_pgno: Pgno) -> Result<Self, &'static str> {
        if b.len() < AREA_END {
            return Err("meta page too short for its inline GC");
        }
        let g = usize::from(u16::from_le_bytes([b[296], b[297]]));
        let n = usize::from(u16::from_le_bytes([b[298], b[299]]));
        if !Self::fits(g, n) {
            return Err("inline GC larger than its area");
        }
        let mut l = InlineGc::default();
        let mut at = AREA_START + 12 * g;
        for i in 0..g {
            let t = rd64(b, AREA_START + 12 * i);
            let c = rd32(b, AREA_START + 12 * i + 8) as usize;
            if t == 0 || t > txnid || (i > 0 && t >= l.txnids[i - 1]) {
                return Err("inline GC txnids out of order");
            }
            if c == 0 || l.pages_len() + c > n {
                return Err("inline GC group counts disagree with its length");
            }
            let from = l.pages_len();
            for j in 0..c {
                let p = rd32(b, at);
                if !(META_PAGES..next_pgno).contains(&p) {
                    return Err("inline GC names a page outside the allocated pages");
                }
                l.pages[from + j] = p;
                at += 4;
            }
            l.txnids[i] = t;
            l.ends[i] = (from + c) as u8;
            l.groups = i + 1;
        }
        if l.pages_len() != n {
            return Err("inline GC group counts disagree with its length");
        }
        Ok(l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model_of(l: &InlineGc) -> Vec<(u64, Vec<Pgno>)> {
        l.iter().map(|(t, p)| (t, p.to_vec())).collect()
    }

    #[test]
    fn round_trip_matches_the_groups_pushed() {
        let mut l = InlineGc::default();
        let mut model = Vec::new();
        let mut t = 1000;
        let mut next = 10;
        // Push groups of growing size until one does not fit.
        for size in 1.. {
            let pages: Vec<Pgno> = (next..next + size).collect();
            let fits = InlineGc::fits(l.len() + 1, l.pages_len() + pages.len());
            assert_eq!(l.push(t, &pages), fits);
            if !fits {
                break;
            }
            model.push((t, pages));
            next += size;
            t -= 7;
        }
        assert!(model.len() > 2);
        assert_eq!(model_of(&l), model);
        let mut b = [0u8; 512];
        l.encode(&mut b);
        let d = InlineGc::decode(&b, 1000, next).expect("decodes");
        assert_eq!(model_of(&d), model);
        assert_eq!(d, l);
    }

    #[test]
    fn push_refuses_a_newer_group_and_keeps_the_list() {
        let mut l = InlineGc::default();
        assert!(l.push(50, &[5, 6]));
        let before = l;
        assert!(!l.push(50, &[7]));
        assert!(!l.push(51, &[7]));
        assert_eq!(l, before);
        assert!(l.push(49, &[]));
        assert_eq!(l, before);
        let full: Vec<Pgno> = (100..100 + MAX_PAGES as Pgno).collect();
        assert!(!l.push(10, &full));
        assert_eq!(l, before);
    }

    #[test]
    fn decode_rejects_bad_lists() {
        let mut l = InlineGc::default();
        assert!(l.push(9, &[3, 4]));
        assert!(l.push(8, &[5]));
        let mut good = [0u8; 512];
        l.encode(&mut good);
        assert!(InlineGc::decode(&good, 9, 6).is_ok());
        // A page at or past the end of the allocated pages.
        assert!(InlineGc::decode(&good, 9, 5).is_err());
        // A group newer than the commit.
        assert!(InlineGc::decode(&good, 8, 6).is_err());
        let cases: [(usize, u8); 4] = [
            (296, 9),             // too many groups
            (298, 2),             // page count disagrees
            (AREA_START + 8, 0),  // an empty group
            (AREA_START + 12, 9), // txnids not descending
        ];
        for (at, v) in cases {
            let mut b = good;
            b[at] = v;
            assert!(InlineGc::decode(&b, 9, 6).is_err(), "byte {at} = {v}");
        }
        let mut b = good;
        b[298] = 200;
        assert!(InlineGc::decode(&b, 9, 6).is_err());
    }
}
