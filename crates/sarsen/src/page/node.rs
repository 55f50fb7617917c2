//! Node layouts inside branch and leaf pages.
//!
//! Leaf node:
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0 | 1 | flags: `BIG` 0x01 value in an overflow run; `DUPS` 0x02 the value is a duplicate list, `SUBTREE` 0x04 the value is a duplicate sub-tree's record (DUPSORT, see [`super::dup`]); `FRESH` 0x08 the overflow run or sub-tree root was written by the same transaction as this page |
//! | 1 | 1 | reserved, 0 |
//! | 2 | 2 | key length, bytes |
//! | 4 | 4 | value length, bytes (the whole value, also when in an overflow run) |
//! | 8 | k | key |
//! | 8+k | v | value, inline; or for `BIG`: first page number (4) + XXH3-64 checksum of the run (8) |
//!
//! Branch node:
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0  | 4 | child page number |
//! | 4  | 8 | XXH3-64 checksum of the child page |
//! | 12 | 1 | flags: `FRESH` 0x08 the child was written by the same transaction as this page |
//! | 13 | 1 | reserved, 0 |
//! | 14 | 2 | key length, bytes (0 for node 0, whose key is implicit) |
//! | 16 | k | key: the smallest key that may be found under this child |

use super::{rd16, rd32, rd64, wr16, wr32, wr64, Pgno};

/// Leaf node header size, bytes.
pub(crate) const LEAF_HDR: usize = 8;
/// Branch node header size, bytes.
pub(crate) const BRANCH_HDR: usize = 16;
/// Size of an overflow reference in a leaf node, bytes.
pub(crate) const OVERFLOW_REF: usize = 12;

/// Leaf flag: the value is in an overflow run.
pub(crate) const BIG: u8 = 0x01;
/// Leaf flag (DUPSORT): the value is a duplicate list ([`super::dup`]),
/// LMDB's `F_DUPDATA` on a sub-page.
pub(crate) const DUPS: u8 = 0x02;
/// Leaf flag (DUPSORT): the value is the 64-byte record of a duplicate
/// sub-tree, LMDB's `F_SUBDATA | F_DUPDATA`.
pub(crate) const SUBTREE: u8 = 0x04;
/// Flag: the referenced page or run was written by the same transaction as
/// the page holding this node (used to verify a one-sync commit at open).
pub(crate) const FRESH: u8 = 0x08;

/// A leaf node's value: inline bytes or a reference to an overflow run.
#[derive(Clone, Copy, Debug)]
pub(crate) enum LeafValue<'a> {
    Inline(&'a [u8]),
    Overflow { pgno: Pgno, len: usize, cksum: u64 },
}

/// A parsed leaf node.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LeafNode<'a> {
    pub flags: u8,
    pub key: &'a [u8],
    pub value: LeafValue<'a>,
}

impl<'a> LeafNode<'a> {
    /// Parses a leaf node at the start of `b` (which runs to the page end).
    #[inline]
    pub(crate) fn parse(b: &'a [u8]) -> Option<LeafNode<'a>> {
        if b.len() < LEAF_HDR {
            return None;
        }
        let flags = b[0];
        let klen = rd16(b, 2) as usize;
        let vlen = rd32(b, 4) as usize;
        let key = b.get(LEAF_HDR..LEAF_HDR + klen)?;
        let v = LEAF_HDR + klen;
        let value = if flags & BIG != 0 {
            let r = b.get(v..v + OVERFLOW_REF)?;
            LeafValue::Overflow {
                pgno: rd32(r, 0),
                len: vlen,
                cksum: rd64(r, 4),
            }
        } else {
            LeafValue::Inline(b.get(v..v + vlen)?)
        };
        Some(LeafNode { flags, key, value })
    }

    /// Bytes this node occupies in the page (without its slot).
    pub(crate) fn stored_len(&self) -> usize {
        LEAF_HDR
            + self.key.len()
            + match self.value {
                LeafValue::Inline(v) => v.len(),
                LeafValue::Overflow { .. } => OVERFLOW_REF,
            }
    }
}

/// Bytes of a leaf node with a `klen`-byte key and an inline value of
/// `vlen` bytes (or an overflow reference if `big`).
pub(crate) fn leaf_len(klen: usize, vlen: usize, big: bool) -> usize {
    LEAF_HDR + klen + if big { OVERFLOW_REF } else { vlen }
}

/// Writes a leaf node into `d` (exactly `leaf_len` bytes).
pub(crate) fn write_leaf(d: &mut [u8], key: &[u8], value: &LeafValue<'_>, flags: u8) {
    d[1] = 0;
    wr16(d, 2, key.len() as u16);
    d[LEAF_HDR..LEAF_HDR + key.len()].copy_from_slice(key);
    let v = LEAF_HDR + key.len();
    match *value {
        LeafValue::Inline(val) => {
            // FRESH stays only on a sub-tree record.
            d[0] = if flags & SUBTREE != 0 {
                flags & !BIG
            } else {
                flags & !(BIG | FRESH)
            };
            wr32(d, 4, val.len() as u32);
            d[v..v + val.len()].copy_from_slice(val);
        }
        LeafValue::Overflow { pgno, len, cksum } => {
            d[0] = flags | BIG;
            wr32(d, 4, len as u32);
            wr32(d, v, pgno);
            wr64(d, v + 4, cksum);
        }
    }
}

/// A parsed branch node.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BranchNode<'a> {
    pub child: Pgno,
    pub cksum: u64,
    pub flags: u8,
    pub key: &'a [u8],
}

impl<'a> BranchNode<'a> {
    /// Parses a branch node at the start of `b`.
    #[inline]
    pub(crate) fn parse(b: &'a [u8]) -> Option<BranchNode<'a>> {
        if b.len() < BRANCH_HDR {
            return None;
        }
        let klen = rd16(b, 14) as usize;
        Some(BranchNode {
            child: rd32(b, 0),
            cksum: rd64(b, 4),
            flags: b[12],
            key: b.get(BRANCH_HDR..BRANCH_HDR + klen)?,
        })
    }

    /// Bytes this node occupies (without its slot).
    pub(crate) fn stored_len(&self) -> usize {
        BRANCH_HDR + self.key.len()
    }
}

/// Bytes of a branch node with a `klen`-byte key.
pub(crate) fn branch_len(klen: usize) -> usize {
    BRANCH_HDR + klen
}

/// Writes a branch node into `d` (exactly `branch_len` bytes).
pub(crate) fn write_branch(d: &mut [u8], key: &[u8], child: Pgno, cksum: u64, flags: u8) {
    wr32(d, 0, child);
    wr64(d, 4, cksum);
    d[12] = flags;
    d[13] = 0;
    wr16(d, 14, key.len() as u16);
    d[BRANCH_HDR..BRANCH_HDR + key.len()].copy_from_slice(key);
}

/// Sets the child, checksum and flags of the branch node at the start of `d`.
pub(crate) fn set_branch_child(d: &mut [u8], child: Pgno, cksum: u64, flags: u8) {
    wr32(d, 0, child);
    wr64(d, 4, cksum);
    d[12] = flags;
}
