//! Duplicate lists: the values of one key of a DUPSORT database, stored
//! inline in the key's leaf node while they fit (LMDB's sub-page).
//!
//! A leaf node of a DUPSORT database holds one of three things:
//!
//! | node flags | value bytes |
//! |---|---|
//! | neither `DUPS` nor `SUBTREE` | the key's only value |
//! | `DUPS` (0x02) | a duplicate list, below: two or more values |
//! | `SUBTREE` (0x04) | the 64-byte tree record of a duplicate sub-tree, whose keys are the values (with empty values) sorted by the duplicate order; `FRESH` (0x08) when its root was written by the same commit as the leaf |
//!
//! Duplicate list of a database with values of any size:
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0 | 2 | number of values `n` (≥ 2) |
//! | 2 | 2·n | end offset of each value, relative to the data area, non-decreasing |
//! | 2+2n | .. | the values, back to back, in duplicate order, no two equal |
//!
//! Duplicate list of a DUPFIXED database (LMDB's `MDB_DUPFIXED`), whose
//! values of one key all have the same size `s`:
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0 | 2 | value size `s` (≥ 1) |
//! | 2 | n·s | the values, packed, in duplicate order |
//!
//! Both give random access to value `i`, so a binary search finds a value
//! and a cursor steps both ways without decoding the list. Lengths are
//! checked on every access: a damaged list gives `None`, never a panic.

use super::{rd16, wr16};
use crate::order::Order;

/// A parsed duplicate list, borrowing its node's bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DupList<'a> {
    b: &'a [u8],
    n: usize,
    /// `Some(size)` for a packed (DUPFIXED) list.
    fixed: Option<usize>,
}

impl<'a> DupList<'a> {
    /// Parses a list; `None` if its lengths do not fit `b`.
    pub(crate) fn parse(b: &'a [u8], fixed: bool) -> Option<DupList<'a>> {
        if b.len() < 2 {
            return None;
        }
        let h = rd16(b, 0) as usize;
        if fixed {
            let data = b.len() - 2;
            if h == 0 || !data.is_multiple_of(h) {
                return None;
            }
            return Some(DupList {
                b,
                n: data / h,
                fixed: Some(h),
            });
        }
        let data = 2 + 2 * h;
        if data > b.len() || h == 0 {
            return None;
        }
        // The last end offset bounds all others once each is checked to
        // be no smaller than the one before (done in `get`).
        let last = rd16(b, 2 + 2 * (h - 1)) as usize;
        if data + last != b.len() {
            return None;
        }
        Some(DupList {
            b,
            n: h,
            fixed: None,
        })
    }

    /// Number of values.
    pub(crate) fn len(&self) -> usize {
        self.n
    }

    /// Value `i`; `None` past the end or in a damaged list.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<&'a [u8]> {
        if i >= self.n {
            return None;
        }
        if let Some(s) = self.fixed {
            return self.b.get(2 + i * s..2 + (i + 1) * s);
        }
        let data = 2 + 2 * self.n;
        let end = rd16(self.b, 2 + 2 * i) as usize;
        let start = if i == 0 {
            0
        } else {
            rd16(self.b, 2 * i) as usize
        };
        if start > end {
            return None;
        }
        self.b.get(data + start..data + end)
    }

    /// The index of the first value `>= v` in `ord`, and whether it equals
    /// `v`. `None` in a damaged list.
    pub(crate) fn search(&self, v: &[u8], ord: Order<'_>) -> Option<(usize, bool)> {
        let (mut lo, mut hi) = (0, self.n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match ord.cmp(self.get(mid)?, v) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Equal => return Some((mid, true)),
                std::cmp::Ordering::Greater => hi = mid,
            }
        }
        Some((lo, false))
    }

    /// The packed values of a DUPFIXED list (for `GET_MULTIPLE`).
    pub(crate) fn packed(&self) -> Option<&'a [u8]> {
        self.fixed.map(|_| &self.b[2..])
    }

    /// All values, in order; `None` in a damaged list.
    #[cfg(test)]
    pub(crate) fn values(&self) -> Option<Vec<&'a [u8]>> {
        (0..self.n).map(|i| self.get(i)).collect()
    }
}

/// Encoded size of a list of `n` values totalling `bytes` bytes.
pub(crate) fn encoded_len(n: usize, bytes: usize, fixed: bool) -> usize {
    if fixed {
        2 + bytes
    } else {
        2 + 2 * n + bytes
    }
}

/// Encodes `values` (sorted, distinct, at least two; for `fixed`, all of
/// one nonzero size; at most 65535 and data under 64 KiB, which a node
/// always satisfies) into `out`.
pub(crate) fn encode(values: &[&[u8]], fixed: bool, out: &mut Vec<u8>) {
    out.clear();
    let bytes: usize = values.iter().map(|v| v.len()).sum();
    out.resize(encoded_len(values.len(), bytes, fixed), 0);
    if fixed {
        let s = values.first().map_or(0, |v| v.len());
        wr16(out, 0, s as u16);
        let mut at = 2;
        for v in values {
            out[at..at + v.len()].copy_from_slice(v);
            at += v.len();
        }
        return;
    }
    wr16(out, 0, values.len() as u16);
    let data = 2 + 2 * values.len();
    let mut end = 0;
    for (i, v) in values.iter().enumerate() {
        out[data + end..data + end + v.len()].copy_from_slice(v);
        end += v.len();
        wr16(out, 2 + 2 * i, end as u16);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_round_trip_and_search() {
        for fixed in [false, true] {
            let vals: Vec<Vec<u8>> = (0u8..20).map(|i| vec![i * 3; 4]).collect();
            let refs: Vec<&[u8]> = vals.iter().map(|v| &v[..]).collect();
            let mut out = Vec::new();
            encode(&refs, fixed, &mut out);
            let l = DupList::parse(&out, fixed).unwrap();
            assert_eq!(l.len(), 20);
            assert_eq!(l.values().unwrap(), refs);
            for (i, v) in refs.iter().enumerate() {
                assert_eq!(l.search(v, Order::Bytewise), Some((i, true)));
            }
            assert_eq!(l.search(&[1; 4], Order::Bytewise), Some((1, false)));
            assert_eq!(l.search(&[255; 4], Order::Bytewise), Some((20, false)));
        }
    }

    #[test]
    fn damaged_lists_are_refused_or_read_as_none() {
        let vals: [&[u8]; 3] = [b"a", b"bb", b"ccc"];
        let mut out = Vec::new();
        encode(&vals, false, &mut out);
        for cut in 0..out.len() {
            assert!(DupList::parse(&out[..cut], false).is_none());
        }
        let mut bad = out.clone();
        wr16(&mut bad, 2, 5); // first end past the second
        let l = DupList::parse(&bad, false).unwrap();
        assert_eq!(l.get(1), None);
        assert!(DupList::parse(&[0, 0], true).is_none());
        assert!(DupList::parse(&[3, 0, 1, 2], true).is_none());
    }
}
