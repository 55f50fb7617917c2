//! The record that describes one B+tree: kept in the meta page for the GC,
//! catalog and main trees, and as the catalog's value for each named
//! database (LMDB's `MDB_db`).
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0  | 4 | root page number; 0 = empty tree |
//! | 4  | 2 | depth (0 for an empty tree, 1 when the root is a leaf) |
//! | 6  | 2 | flags: bits 0..4 the key order (0 bytewise, 1 reverse bytewise, 2 `u32` integer keys, 3 `u64` integer keys, 4 a user comparator named in the settings; others reserved); bit 4 `DUPSORT` (several values per key), bit 5 `DUPFIXED` (the values of a key have one size), bits 6..9 the duplicate order (codes 0..=3 as the key order's); bits 9..16 reserved |
//! | 8  | 8 | XXH3-64 checksum of the root page |
//! | 16 | 8 | txnid of the commit that last wrote the root |
//! | 24 | 8 | branch pages |
//! | 32 | 8 | leaf pages |
//! | 40 | 8 | overflow pages |
//! | 48 | 8 | entries |
//! | 56 | 8 | sequence (reserved, 0) |
//!
//! In the catalog, a database's value is its record followed by its
//! settings, a list of tagged fields (none: the value is 64 bytes):
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0  | 64 | the record above (all zero for the main database, whose record is in the meta page) |
//! | 64 | 1  | tag: 1 = name of the merge operator, 2 = name of the user comparator (both UTF-8), 3 = the canary (main database only: x, y, z and the txnid that wrote them, four `u64`, 32 bytes), 4 = name of the user comparator of duplicate values (UTF-8); other tags are reserved |
//! | 65 | 1  | length `n` of the field, bytes (1..=255) |
//! | 66 | n  | the field |
//! | ...| | further fields, each tag, length, bytes |
//!
//! The main database's settings are the catalog entry under the empty
//! name, which no named database can have.

use super::{rd16, rd32, rd64, wr16, wr32, wr64, Pgno};

/// Record flag: a multimap (LMDB's `MDB_DUPSORT`).
pub(crate) const DUPSORT: u16 = 0x0010;
/// Record flag: the values of each key have one size (LMDB's `MDB_DUPFIXED`).
pub(crate) const DUPFIXED: u16 = 0x0020;
/// Shift of the duplicate order's code (3 bits) in the record flags.
pub(crate) const DUP_ORDER_SHIFT: u16 = 6;
/// Mask of every duplicate-mode bit in the record flags.
pub(crate) const DUP_MASK: u16 = 0x01f0;

/// Encoded size of a record, bytes.
pub(crate) const RECORD_LEN: usize = 64;
/// A tree record as 64-bit words (as the lock file publishes it).
pub(crate) const RECORD_WORDS: usize = RECORD_LEN / 8;

/// A B+tree's root and statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct DbRecord {
    pub root: Pgno,
    pub depth: u16,
    pub flags: u16,
    pub root_cksum: u64,
    pub mod_txnid: u64,
    pub branch_pages: u64,
    pub leaf_pages: u64,
    pub overflow_pages: u64,
    pub entries: u64,
    pub sequence: u64,
}

impl DbRecord {
    /// Encodes into 64 bytes.
    pub(crate) fn encode(&self) -> [u8; RECORD_LEN] {
        let mut b = [0u8; RECORD_LEN];
        wr32(&mut b, 0, self.root);
        wr16(&mut b, 4, self.depth);
        wr16(&mut b, 6, self.flags);
        wr64(&mut b, 8, self.root_cksum);
        wr64(&mut b, 16, self.mod_txnid);
        wr64(&mut b, 24, self.branch_pages);
        wr64(&mut b, 32, self.leaf_pages);
        wr64(&mut b, 40, self.overflow_pages);
        wr64(&mut b, 48, self.entries);
        wr64(&mut b, 56, self.sequence);
        b
    }

    /// Decodes 64 bytes; `None` if `b` is not exactly a record.
    pub(crate) fn decode(b: &[u8]) -> Option<DbRecord> {
        if b.len() != RECORD_LEN {
            return None;
        }
        Some(DbRecord {
            root: rd32(b, 0),
            depth: rd16(b, 4),
            flags: rd16(b, 6),
            root_cksum: rd64(b, 8),
            mod_txnid: rd64(b, 16),
            branch_pages: rd64(b, 24),
            leaf_pages: rd64(b, 32),
            overflow_pages: rd64(b, 40),
            entries: rd64(b, 48),
            sequence: rd64(b, 56),
        })
    }

    /// As the eight words published in the lock file (the same layout as
    /// the encoded bytes, read as little-endian `u64`s).
    pub(crate) fn to_words(self) -> [u64; RECORD_WORDS] {
        [
            u64::from(self.root) | u64::from(self.depth) << 32 | u64::from(self.flags) << 48,
            self.root_cksum,
            self.mod_txnid,
            self.branch_pages,
            self.leaf_pages,
            self.overflow_pages,
            self.entries,
            self.sequence,
        ]
    }

    /// From the eight words published in the lock file.
    #[inline]
    pub(crate) fn from_words(w: &[u64; RECORD_WORDS]) -> DbRecord {
        DbRecord {
            root: w[0] as u32,
            depth: (w[0] >> 32) as u16,
            flags: (w[0] >> 48) as u16,
            root_cksum: w[1],
            mod_txnid: w[2],
            branch_pages: w[3],
            leaf_pages: w[4],
            overflow_pages: w[5],
            entries: w[6],
            sequence: w[7],
        }
    }
}

/// Writes a root checksum and the txnid that sealed it into the encoded
/// record `b` (64 bytes), leaving the other fields.
pub(crate) fn stamp_root(b: &mut [u8], cksum: u64, txnid: u64) {
    wr64(b, 8, cksum);
    wr64(b, 16, txnid);
}

/// Settings tag: the merge operator's name.
const TAG_MERGE: u8 = 1;
/// Settings tag: the user comparator's name (record order code 4).
const TAG_COMPARATOR: u8 = 2;
/// Settings tag (main database only): the canary, four `u64` words.
const TAG_CANARY: u8 = 3;
/// Settings tag: the user comparator of duplicate values (DUPSORT order
/// code 4).
const TAG_DUP_COMPARATOR: u8 = 4;

/// A catalog value: a database's record and settings, borrowed from the page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CatalogEntry<'a> {
    pub rec: DbRecord,
    /// Name of the merge operator recorded for the database.
    pub merge: Option<&'a str>,
    /// Name of the user comparator recorded for the database.
    pub comparator: Option<&'a str>,
    /// The environment's canary (x, y, z, txnid), in the main database's
    /// entry.
    pub canary: Option<[u64; 4]>,
    /// Name of the user comparator of the database's duplicate values.
    pub dup_comparator: Option<&'a str>,
}

impl<'a> CatalogEntry<'a> {
    /// Decodes a catalog value; `Err` says what is wrong with it.
    pub(crate) fn decode(b: &'a [u8]) -> Result<CatalogEntry<'a>, &'static str> {
        let rec = b
            .get(..RECORD_LEN)
            .and_then(DbRecord::decode)
            .ok_or("catalog value shorter than a record")?;
        let mut merge = None;
        let mut comparator = None;
        let mut canary = None;
        let mut dup_comparator = None;
        let mut rest = &b[RECORD_LEN..];
        while let [tag, len, tail @ ..] = rest {
            let n = usize::from(*len);
            let field = tail.get(..n).ok_or("catalog setting overruns its value")?;
            match *tag {
                TAG_MERGE if n > 0 => {
                    let name = std::str::from_utf8(field)
                        .map_err(|_| "merge operator name is not UTF-8")?;
                    merge = Some(name);
                }
                TAG_COMPARATOR if n > 0 => {
                    let name =
                        std::str::from_utf8(field).map_err(|_| "comparator name is not UTF-8")?;
                    comparator = Some(name);
                }
                TAG_DUP_COMPARATOR if n > 0 => {
                    let name =
                        std::str::from_utf8(field).map_err(|_| "comparator name is not UTF-8")?;
                    dup_comparator = Some(name);
                }
                TAG_CANARY if n == 32 => {
                    canary = Some([0, 8, 16, 24].map(|o| rd64(field, o)));
                }
                _ => return Err("unknown catalog setting"),
            }
            rest = &tail[n..];
        }
        if !rest.is_empty() {
            return Err("catalog setting overruns its value");
        }
        Ok(CatalogEntry {
            rec,
            merge,
            comparator,
            canary,
            dup_comparator,
        })
    }

    /// Encodes into `out` (cleared first). The caller has checked that the
    /// names are 1..=255 bytes.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&self.rec.encode());
        let names = [
            (TAG_MERGE, self.merge),
            (TAG_COMPARATOR, self.comparator),
            (TAG_DUP_COMPARATOR, self.dup_comparator),
        ];
        for (tag, name) in names {
            if let Some(name) = name {
                let n = name.len().min(255);
                out.extend_from_slice(&[tag, n as u8]);
                out.extend_from_slice(&name.as_bytes()[..n]);
            }
        }
        if let Some(c) = self.canary {
            out.extend_from_slice(&[TAG_CANARY, 32]);
            for w in c {
                out.extend_from_slice(&w.to_le_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_entries_round_trip_and_reject_damage() {
        let rec = DbRecord {
            root: 9,
            depth: 1,
            entries: 3,
            ..DbRecord::default()
        };
        let mut b = Vec::new();
        for (merge, comparator) in [
            (None, None),
            (None, Some("nocase")),
            (Some("uint64add"), None),
        ] {
            let e = CatalogEntry {
                rec,
                merge,
                comparator,
                canary: None,
                dup_comparator: None,
            };
            e.encode(&mut b);
            assert_eq!(CatalogEntry::decode(&b), Ok(e));
        }
        let both = CatalogEntry {
            rec,
            merge: Some("max"),
            comparator: Some("nocase"),
            canary: Some([1, u64::MAX, 3, 4]),
            dup_comparator: Some("bylen"),
        };
        both.encode(&mut b);
        assert_eq!(CatalogEntry::decode(&b), Ok(both));
        CatalogEntry {
            rec,
            merge: Some("uint64add"),
            comparator: None,
            canary: None,
            dup_comparator: None,
        }
        .encode(&mut b);
        assert!(CatalogEntry::decode(&b[..63]).is_err());
        assert!(CatalogEntry::decode(&b[..b.len() - 1]).is_err());
        assert!(CatalogEntry::decode(&b[..65]).is_err());
        let mut unknown = b.clone();
        unknown[64] = 7;
        assert!(CatalogEntry::decode(&unknown).is_err());
        let mut bad_utf8 = b.clone();
        bad_utf8[66] = 0xff;
        assert!(CatalogEntry::decode(&bad_utf8).is_err());
    }

    #[test]
    fn words_match_bytes() {
        let r = DbRecord {
            root: 0x1234_5678,
            depth: 7,
            flags: 0xbeef,
            root_cksum: 1,
            mod_txnid: 2,
            branch_pages: 3,
            leaf_pages: 4,
            overflow_pages: 5,
            entries: 6,
            sequence: 8,
        };
        let b = r.encode();
        let w: [u64; RECORD_WORDS] = std::array::from_fn(|i| rd64(&b, 8 * i));
        assert_eq!(w, r.to_words());
        assert_eq!(DbRecord::from_words(&w), r);
        assert_eq!(DbRecord::decode(&b), Some(r));
    }
}
