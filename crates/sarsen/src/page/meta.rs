//! Meta pages: pages 0, 1 and 2 of the data file. Each commit writes one;
//! at open the newest valid one wins. Three, as libmdbx, so that a weak
//! (unsynced) commit never overwrites the last durable one.
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0   | 8  | magic `b"SARSEN\0\x01"` |
//! | 8   | 4  | format version (2; 1 is read too) |
//! | 12  | 4  | page size, bytes |
//! | 16  | 8  | txnid of this commit |
//! | 24  | 4  | flags: 0x1 steady (durable when written), 0x2 one-sync (pages of this commit were synced together with this meta: verify them after an OS crash), 0x4 written by a no-sync environment, 0x8 group (written on commits not yet durable, made durable with them by one sync: verify every page newer than `base` after an OS crash) |
//! | 28  | 4  | next unallocated page number |
//! | 32  | 4  | geometry lower bound, pages |
//! | 36  | 4  | geometry upper bound, pages |
//! | 40  | 4  | growth step, pages |
//! | 44  | 4  | shrink threshold, pages (reserved, 0) |
//! | 48  | 16 | boot id of the system that wrote it (XXH3-128 of Linux's boot_id) |
//! | 64  | 64 | GC tree record |
//! | 128 | 64 | catalog tree record |
//! | 192 | 64 | main tree record |
//! | 256 | 32 | canary: four user words (reserved, 0) |
//! | 288 | 8  | `base`: with the group flag, the txnid of the last durable commit when this one was written; else 0 |
//! | 296 | 4  | inline GC counts (format 2; `inline_gc.rs`) |
//! | 300 | 12 | reserved, 0 |
//! | 312 | 8  | XXH3-64 of bytes 0..312: where format 1 has its checksum, so a build that knows only format 1 reports `Version` |
//! | 320 | 184 | inline GC groups and pages (format 2) |
//! | 504 | 8  | XXH3-64 of bytes 0..504 |
//!
//! Format version 1 had no inline GC: bytes 296..312 were reserved and its
//! checksum, of bytes 0..312, was at 312. Version-1 metas are still read
//! (with an empty inline GC); commits write version 2.
use super::inline_gc::{InlineGc, AREA_END};
use super::record::RECORD_LEN;
use super::{rd32, rd64, wr32, wr64, DbRecord, Pgno, MAX_PAGE, MIN_PAGE};

/// Magic number at offset 0 of each meta page.
pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"SARSEN\x00\x01");
/// On-disk format version that commits write.
pub(crate) const FORMAT_VERSION: u32 = 2;
/// The format version before the inline GC, still read.
pub(crate) const FORMAT_VERSION_1: u32 = 1;
/// Encoded meta size, bytes (the smallest page size).
pub(crate) const META_LEN: usize = 512;
/// Where a format-1 meta's checksum is (of the bytes before it).
const SUM_1: usize = 312;
/// Where a format-2 meta's checksum is (of the bytes before it).
const SUM_2: usize = AREA_END;

/// Meta flag: the commit was durable when written.
pub(crate) const STEADY: u32 = 0x1;
/// Meta flag: data and meta were made durable by one sync.
pub(crate) const ONE_SYNC: u32 = 0x2;
/// Meta flag: written in no-sync mode.
pub(crate) const NO_SYNC: u32 = 0x4;
/// Meta flag: a commit of a group-commit chain, written on commits that
/// were not yet durable and made durable with them by one sync; after a
/// system crash every page newer than [`Meta::base`] must verify. Not
/// `STEADY`: a build that predates the flag would trust a `STEADY` meta
/// unverified. Such a build must not open the file after a system crash
/// either way (it would fall back past the chain to a commit whose pages
/// later commits reused); it knows only format version 1, and commits
/// write version 2 with a format-1 checksum too, so it refuses the meta
/// as another version (and the file, once no format-1 meta is left).
pub(crate) const GROUP: u32 = 0x8;

/// A decoded meta page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Meta {
    pub page_size: u32,
    pub txnid: u64,
    pub flags: u32,
    pub next_pgno: Pgno,
    pub lower: u32,
    pub upper: u32,
    pub growth: u32,
    pub shrink: u32,
    pub boot_id: [u8; 16],
    pub gc: DbRecord,
    pub catalog: DbRecord,
    pub main: DbRecord,
    pub canary: [u64; 4],
    /// With [`GROUP`]: the last durable txnid when this meta was written.
    pub base: u64,
    /// The newest free-page lists, carried here instead of in the GC tree.
    pub inline_gc: InlineGc,
}

/// Why a meta page was rejected.
#[derive(Debug)]
pub(crate) enum MetaError {
    /// Not a Sarsen meta page (wrong magic).
    Foreign,
    /// A Sarsen file of another format version.
    Version(u32),
    /// Torn, garbage or insane fields.
    Invalid(#[allow(dead_code)] &'static str),
}

impl Meta {
    /// Encodes into `b` (at least `META_LEN` bytes), checksum included.
    pub(crate) fn encode(&self, b: &mut [u8]) {
        b[..META_LEN].fill(0);
        wr64(b, 0, MAGIC);
        wr32(b, 8, FORMAT_VERSION);
        wr32(b, 12, self.page_size);
        wr64(b, 16, self.txnid);
        wr32(b, 24, self.flags);
        wr32(b, 28, self.next_pgno);
        wr32(b, 32, self.lower);
        wr32(b, 36, self.upper);
        wr32(b, 40, self.growth);
        wr32(b, 44, self.shrink);
        b[48..64].copy_from_slice(&self.boot_id);
        b[64..128].copy_from_slice(&self.gc.encode());
        b[128..192].copy_from_slice(&self.catalog.encode());
        b[192..256].copy_from_slice(&self.main.encode());
        for (i, c) in self.canary.iter().enumerate() {
            wr64(b, 256 + 8 * i, *c);
        }
        wr64(b, 288, self.base);
        self.inline_gc.encode(b);
        // Format 1's checksum too, where a build that knows only format 1
        // checks first: it then reads the version and refuses the file
        // (`Version(2)`) instead of taking the meta for damage and falling
        // back to an older format-1 meta whose pages were reused since.
        let old = super::checksum(&b[..SUM_1]);
        wr64(b, SUM_1, old);
        let sum = super::checksum(&b[..SUM_2]);
        wr64(b, SUM_2, sum);
    }

    /// The txnid of the meta page bytes `b` if they start with this
    /// format's magic, unverified (a cheap look before a full decode).
    pub(crate) fn peek_txnid(b: &[u8]) -> Option<u64> {
        (b.len() >= META_LEN && rd64(b, 0) == MAGIC).then(|| rd64(b, 16))
    }

    /// Whether the meta page bytes `b` are a meta of this format holding
    /// commit `txnid` and, if given, `next_pgno` and the records (GC,
    /// catalog, main, as `DbRecord` words, whose little-endian bytes are
    /// the records' layout). The page checksum is not verified: this is
    /// the writer's once-per-transaction check that the lock file names
    /// this meta, and costs a few compares.
    pub(crate) fn holds(
        b: &[u8],
        txnid: u64,
        state: Option<(u64, [&[u64; super::record::RECORD_WORDS]; 3])>,
    ) -> bool {
        if b.len() < META_LEN
            || rd64(b, 0) != MAGIC
            || !matches!(rd32(b, 8), FORMAT_VERSION | FORMAT_VERSION_1)
            || rd64(b, 16) != txnid
        {
            return false;
        }
        let Some((next_pgno, records)) = state else {
            return true;
        };
        u64::from(rd32(b, 28)) == next_pgno
            && records.iter().zip([64, 128, 192]).all(|(words, off)| {
                words
                    .iter()
                    .enumerate()
                    .all(|(i, w)| rd64(b, off + 8 * i) == *w)
            })
    }

    /// Decodes and validates a meta page.
    pub(crate) fn decode(b: &[u8]) -> Result<Meta, MetaError> {
        if b.len() < META_LEN {
            return Err(MetaError::Invalid("short meta page"));
        }
        if rd64(b, 0) != MAGIC {
            return Err(MetaError::Foreign);
        }
        let sum_at = |at: usize| rd64(b, at) == super::checksum(&b[..at]);
        let version = rd32(b, 8);
        let sum = match version {
            FORMAT_VERSION => SUM_2,
            FORMAT_VERSION_1 => SUM_1,
            // Another version: one whose checksum is where either of ours
            // is says so; anything else is damage.
            _ if sum_at(SUM_1) || sum_at(SUM_2) => return Err(MetaError::Version(version)),
            _ => return Err(MetaError::Invalid("meta checksum mismatch")),
        };
        if !sum_at(sum) {
            return Err(MetaError::Invalid("meta checksum mismatch"));
        }
        let rec = |off: usize| DbRecord::decode(&b[off..off + RECORD_LEN]).unwrap_or_default();
        let mut m = Meta {
            page_size: rd32(b, 12),
            txnid: rd64(b, 16),
            flags: rd32(b, 24),
            next_pgno: rd32(b, 28),
            lower: rd32(b, 32),
            upper: rd32(b, 36),
            growth: rd32(b, 40),
            shrink: rd32(b, 44),
            boot_id: b[48..64].try_into().unwrap_or_default(),
            gc: rec(64),
            catalog: rec(128),
            main: rec(192),
            canary: std::array::from_fn(|i| rd64(b, 256 + 8 * i)),
            base: rd64(b, 288),
            inline_gc: InlineGc::default(),
        };
        m.sane()?;
        if version == FORMAT_VERSION {
            m.inline_gc = InlineGc::decode(b, m.txnid, m.next_pgno).map_err(MetaError::Invalid)?;
        }
        Ok(m)
    }

    /// Field checks beyond the checksum.
    fn sane(&self) -> Result<(), MetaError> {
        let ps = self.page_size;
        if !ps.is_power_of_two() || !(MIN_PAGE..=MAX_PAGE).contains(&ps) {
            return Err(MetaError::Invalid("page size out of range"));
        }
        if self.next_pgno < super::META_PAGES || self.next_pgno > self.upper.max(super::META_PAGES)
        {
            return Err(MetaError::Invalid("next page number outside the geometry"));
        }
        if self.txnid == 0 && self.next_pgno != super::META_PAGES {
            return Err(MetaError::Invalid("txnid 0 with pages allocated"));
        }
        if self.flags & GROUP != 0 && self.base >= self.txnid {
            return Err(MetaError::Invalid("group base not below the txnid"));
        }
        for r in [&self.gc, &self.catalog, &self.main] {
            if r.root != 0 && (r.root < super::META_PAGES || r.root >= self.next_pgno) {
                return Err(MetaError::Invalid("tree root outside the allocated pages"));
            }
            if (r.root == 0) != (r.depth == 0) {
                return Err(MetaError::Invalid("tree depth and root disagree"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Meta {
        let mut inline_gc = InlineGc::default();
        assert!(inline_gc.push(41, &[7, 9, 8]));
        assert!(inline_gc.push(40, &[11]));
        Meta {
            page_size: 4096,
            txnid: 42,
            flags: STEADY,
            next_pgno: 20,
            lower: 3,
            upper: 1000,
            growth: 16,
            inline_gc,
            ..Meta::default()
        }
    }

    /// `b`, a format-2 meta without inline GC, rewritten in format 1.
    fn as_format_1(b: &mut [u8]) {
        wr32(b, 8, FORMAT_VERSION_1);
        b[296..META_LEN].fill(0);
        let sum = crate::page::checksum(&b[..SUM_1]);
        wr64(b, SUM_1, sum);
    }

    #[test]
    fn both_formats_decode_to_what_was_encoded() {
        let m = sample();
        let mut b = [0u8; META_LEN];
        m.encode(&mut b);
        assert_eq!(Meta::decode(&b).unwrap(), m);
        // What a build that knows only format 1 checks first holds too, so
        // it goes on to read the version and refuses it.
        assert_eq!(rd64(&b, SUM_1), crate::page::checksum(&b[..SUM_1]));
        assert_eq!(rd32(&b, 8), FORMAT_VERSION);
        let v1 = Meta {
            inline_gc: InlineGc::default(),
            ..m
        };
        v1.encode(&mut b);
        as_format_1(&mut b);
        assert_eq!(rd32(&b, 8), 1);
        assert_eq!(Meta::decode(&b).unwrap(), v1);
        assert!(Meta::holds(&b, 42, None));
    }

    #[test]
    fn damage_and_other_versions_are_told_apart() {
        let mut b = [0u8; META_LEN];
        sample().encode(&mut b);
        // A page number of the inline GC changed: the checksum covers it.
        let mut d = b;
        d[super::super::inline_gc::AREA_START + 24] ^= 1;
        assert!(matches!(Meta::decode(&d), Err(MetaError::Invalid(_))));
        // A later version, checksummed at either place.
        for at in [SUM_1, SUM_2] {
            let mut d = b;
            wr32(&mut d, 8, 3);
            let sum = crate::page::checksum(&d[..at]);
            wr64(&mut d, at, sum);
            assert!(matches!(Meta::decode(&d), Err(MetaError::Version(3))));
        }
        // Format 1 read with format 2's checksum place is damage.
        let mut d = b;
        wr32(&mut d, 8, FORMAT_VERSION_1);
        assert!(matches!(Meta::decode(&d), Err(MetaError::Invalid(_))));
    }
}
