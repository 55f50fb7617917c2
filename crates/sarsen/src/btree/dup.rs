//! Writes to DUPSORT trees (LMDB's `MDB_DUPSORT`): several sorted values
//! per key, stored once per key.
//!
//! A key's values live in its leaf node: a single value as in any tree;
//! two or more as a duplicate list ([`crate::page::dup`]) while the list
//! fits inline in the node; beyond that, in a duplicate sub-tree, an
//! ordinary B+tree whose keys are the values (with empty values), whose
//! 64-byte record is the node's value. A sub-tree that shrinks to one leaf
//! whose list would fill at most half a node moves back inline (LMDB never
//! moves back; the hysteresis keeps a key at the boundary from moving on
//! every write).
//!
//! The main tree's record counts every pair in `entries` and the pages of
//! its sub-trees in its page counts, as LMDB's `mdb_stat` does.
//!
//! Each operation reserves free pages for its worst case before it changes
//! anything, so an error leaves the tree as it was.

use super::{descend, Source, Tree};
use crate::error::{Error, Result};
use crate::order::{Order, CODE_CUSTOM};
use crate::page::dup::{self as list, DupList};
use crate::page::node::{self, DUPS, FRESH, SUBTREE};
use crate::page::record::{DUPFIXED, DUPSORT, DUP_ORDER_SHIFT, RECORD_LEN};
use crate::page::{DbRecord, LeafNode, LeafValue, Pgno};
use crate::store::PageStore;

/// The duplicate mode of a DUPSORT tree, from its record's flags.
#[derive(Clone, Copy)]
pub(crate) struct Dups<'a> {
    /// Order of the values of one key (LMDB's `MDB_REVERSEDUP`,
    /// `MDB_INTEGERDUP`, `mdb_set_dupsort`; bytewise by default).
    pub ord: Order<'a>,
    /// All values of one key have one size (LMDB's `MDB_DUPFIXED`).
    pub fixed: bool,
    /// The recorded order code of the values (the sub-trees' key order).
    code: u16,
}

impl<'a> Dups<'a> {
    /// The duplicate mode recorded in `flags`: `None` for unique keys.
    /// `custom` is the user order of the values, for a record that says
    /// it has one. `Err` for an unknown order code, or a user order
    /// without `custom`.
    pub(crate) fn of(
        flags: u16,
        custom: Option<Order<'a>>,
    ) -> std::result::Result<Option<Dups<'a>>, &'static str> {
        if flags & DUPSORT == 0 {
            return Ok(None);
        }
        let fixed = flags & DUPFIXED != 0;
        let code = dup_code(flags);
        match Order::builtin(code) {
            Ok(Some(ord)) => Ok(Some(Dups { ord, fixed, code })),
            Ok(None) => match custom {
                Some(ord) => Ok(Some(Dups { ord, fixed, code })),
                None => Err("user order of duplicate values without its comparator"),
            },
            Err(_) => Err("unknown duplicate order in the tree record's flags"),
        }
    }

    /// The record flags of a duplicate sub-tree: its key order is the
    /// duplicate order.
    pub(crate) fn sub_flags(&self) -> u16 {
        self.code
    }
}

/// The duplicate order code in record flags `flags`.
pub(crate) fn dup_code(flags: u16) -> u16 {
    (flags >> DUP_ORDER_SHIFT) & 7
}

/// Whether record flags `flags` say a user comparator sorts the values.
pub(crate) fn custom_dups(flags: u16) -> bool {
    flags & DUPSORT != 0 && dup_code(flags) == CODE_CUSTOM
}

/// The values held by one leaf node of a DUPSORT tree.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Vals<'a> {
    One(&'a [u8]),
    List(DupList<'a>),
    Tree(DbRecord),
}

/// Reads the values of leaf node `n` of page `pgno` of a DUPSORT tree.
pub(crate) fn vals<'a>(n: &LeafNode<'a>, d: Dups<'_>, pgno: Pgno) -> Result<Vals<'a>> {
    let bad = |what: &str| Error::corrupted(u64::from(pgno), what.to_string());
    let LeafValue::Inline(v) = n.value else {
        return Err(bad("overflow value in a DUPSORT database"));
    };
    match n.flags & (DUPS | SUBTREE) {
        0 => Ok(Vals::One(v)),
        DUPS => match DupList::parse(v, d.fixed) {
            Some(l) if l.len() >= 2 => Ok(Vals::List(l)),
            _ => Err(bad("damaged duplicate list")),
        },
        SUBTREE => match DbRecord::decode(v) {
            Some(r) if r.flags == d.sub_flags() && r.root != 0 => Ok(Vals::Tree(r)),
            _ => Err(bad("damaged duplicate sub-tree record")),
        },
        _ => Err(bad("leaf node flagged both duplicate list and sub-tree")),
    }
}

/// The values of `key` in the DUPSORT tree `rec`, or `None`.
pub(crate) fn lookup<'a, S: Source<'a>>(
    s: S,
    rec: &DbRecord,
    ord: Order<'_>,
    d: Dups<'_>,
    key: &[u8],
) -> Result<Option<Vals<'a>>> {
    if rec.root == 0 {
        return Ok(None);
    }
    let (path, found) = descend(s, rec, ord, key)?;
    if !found {
        return Ok(None);
    }
    let leaf = path.leaf();
    let n = s.page(leaf.pgno)?.leaf(leaf.idx())?;
    vals(&n, d, leaf.pgno).map(Some)
}

/// The first value of a sub-tree: down its left edge. A leaf without
/// nodes below a branch is `Corrupted` (deletes free the leaves they
/// empty), so the walk is one page per level on any file.
pub(crate) fn first_in<'a, S: Source<'a>>(s: S, sub: &DbRecord) -> Result<&'a [u8]> {
    let depth = super::check_depth(sub)?;
    let mut pgno = sub.root;
    for level in 0..depth {
        let p = s.page(pgno)?;
        if p.is_leaf() != (level + 1 == depth) {
            return Err(super::bad_level(pgno));
        }
        if !p.is_leaf() {
            pgno = p.branch(0)?.child;
            continue;
        }
        if p.len() == 0 {
            let what = if level == 0 {
                "empty duplicate sub-tree"
            } else {
                "leaf without nodes below a branch"
            };
            return Err(Error::corrupted(u64::from(pgno), what));
        }
        return Ok(p.leaf(0)?.key);
    }
    Err(Error::corrupted(
        u64::from(sub.root),
        "empty duplicate sub-tree",
    ))
}

/// `BadValueSize` unless `val` has the size of the key's other values.
fn check_fixed(d: Dups<'_>, have: usize, val: &[u8]) -> Result<()> {
    if d.fixed && have != val.len() {
        return Err(Error::BadValueSize {
            len: val.len(),
            expected: have,
        });
    }
    Ok(())
}

impl<S: PageStore> Tree<'_, S> {
    /// Free pages to reserve before changing the values of a key: the main
    /// tree's worst case, a sub-tree's, and a new sub-tree of a few pages.
    fn reserve_dup(&mut self, sub_depth: u16) -> Result<()> {
        let pages = 2 * (self.rec.depth as usize + 1) + 1 + 2 * (sub_depth as usize + 1) + 1 + 4;
        self.store.reserve(pages, 0)
    }

    /// Adds `val` to the values of `key` in the DUPSORT tree `self.rec` (sorted by
    /// `self.ord`, values by `d`). Returns `false`, changing nothing, if the pair
    /// is already there. The caller has checked the sizes.
    pub(crate) fn put_dup(&mut self, d: Dups<'_>, key: &[u8], val: &[u8]) -> Result<bool> {
        let mut copy = Vec::new();
        let old = match lookup(self.store.view(), self.rec, self.ord, d, key)? {
            None => {
                self.put(key, val)?;
                return Ok(true);
            }
            Some(Vals::Tree(sub)) => return self.put_in_subtree(d, key, val, sub),
            Some(v) => copy_vals(v, &mut copy)?,
        };
        let vals = split_copy(&copy, &old);
        let (i, eq) = position(&vals, val, d.ord);
        if eq {
            return Ok(false);
        }
        check_fixed(d, vals[0].len(), val)?;
        self.reserve_dup(0)?;
        let mut all = vals;
        all.insert(i, val);
        self.store_values(d, key, &all)?;
        self.rec.entries = self.rec.entries.saturating_add(1);
        Ok(true)
    }

    /// [`put_dup`](Tree::put_dup) into a key whose values are in the sub-tree `sub`.
    fn put_in_subtree(
        &mut self,
        d: Dups<'_>,
        key: &[u8],
        val: &[u8],
        mut sub: DbRecord,
    ) -> Result<bool> {
        let s = self.store.view();
        if super::get(s, &sub, d.ord, val)?.is_some() {
            return Ok(false);
        }
        check_fixed(d, first_in(s, &sub)?.len(), val)?;
        self.reserve_dup(sub.depth)?;
        let before = sub;
        self.with(&mut sub, d.ord).put(val, &[])?;
        self.store_tree(key, &sub)?;
        add_pages(self.rec, &before, &sub);
        self.rec.entries = self.rec.entries.saturating_add(1);
        Ok(true)
    }

    /// Removes the pair `key`/`val`; returns whether it was there.
    pub(crate) fn delete_dup(&mut self, d: Dups<'_>, key: &[u8], val: &[u8]) -> Result<bool> {
        let mut copy = Vec::new();
        let old = match lookup(self.store.view(), self.rec, self.ord, d, key)? {
            None => return Ok(false),
            Some(Vals::One(v)) => {
                if d.ord.cmp(v, val).is_ne() {
                    return Ok(false);
                }
                return self.delete(key);
            }
            Some(Vals::Tree(sub)) => return self.delete_in_subtree(d, key, val, sub),
            Some(v) => copy_vals(v, &mut copy)?,
        };
        let mut vals = split_copy(&copy, &old);
        let (i, eq) = position(&vals, val, d.ord);
        if !eq {
            return Ok(false);
        }
        self.reserve_dup(0)?;
        vals.remove(i);
        self.store_values(d, key, &vals)?;
        self.rec.entries = self.rec.entries.saturating_sub(1);
        Ok(true)
    }

    /// [`delete_dup`](Tree::delete_dup) from a key whose values are in the sub-tree `sub`.
    fn delete_in_subtree(
        &mut self,
        d: Dups<'_>,
        key: &[u8],
        val: &[u8],
        mut sub: DbRecord,
    ) -> Result<bool> {
        if super::get(self.store.view(), &sub, d.ord, val)?.is_none() {
            return Ok(false);
        }
        self.reserve_dup(sub.depth)?;
        let before = sub;
        self.with(&mut sub, d.ord).delete(val)?;
        if sub.root == 0 {
            // Its only value (a sub-tree holds two or more unless damaged):
            // the key goes, and with it the one pair `delete` counts.
            add_pages(self.rec, &before, &sub);
            return self.delete(key);
        }
        self.rec.entries = self.rec.entries.saturating_sub(1);
        let back = if sub.entries == 1 {
            // One value left, at any depth (merges can leave levels above it).
            Some(vec![first_in(self.store.view(), &sub)?.to_vec()])
        } else if sub.depth == 1 {
            self.small_tree_values(&sub, key.len())?
        } else {
            None
        };
        match back {
            Some(copy) => {
                // Back inline: the sub-tree's pages go, the list replaces it.
                let vals: Vec<&[u8]> = copy.iter().map(|v| &v[..]).collect();
                let mut gone = sub;
                self.with(&mut gone, d.ord).free_tree()?;
                add_pages(self.rec, &before, &DbRecord::default());
                self.store_values(d, key, &vals)?;
            }
            None => {
                self.store_tree(key, &sub)?;
                add_pages(self.rec, &before, &sub);
            }
        }
        Ok(true)
    }

    /// The values of the one-leaf sub-tree `sub` if, as a list, they would
    /// fill at most half a node (or are a single value), else `None`.
    fn small_tree_values(&self, sub: &DbRecord, klen: usize) -> Result<Option<Vec<Vec<u8>>>> {
        let p = self.store.view().page(sub.root)?;
        let n = p.len();
        if n == 0 || !p.is_leaf() {
            // A sub-tree of depth 1 holds its (two or more) values in one leaf.
            return Err(Error::corrupted(
                u64::from(sub.root),
                "duplicate sub-tree root is not a leaf with values",
            ));
        }
        let mut bytes = 0;
        for i in 0..n {
            bytes += p.leaf(i)?.key.len();
        }
        let enc = list::encoded_len(n, bytes, false);
        let l = self.store.layout();
        if n > 1 && 2 + node::LEAF_HDR + klen + enc > l.node_max / 2 {
            return Ok(None);
        }
        (0..n)
            .map(|i| Ok(p.leaf(i)?.key.to_vec()))
            .collect::<Result<Vec<_>>>()
            .map(Some)
    }

    /// Removes `key` and all its values; returns how many values it had.
    pub(crate) fn delete_all(&mut self, d: Dups<'_>, key: &[u8]) -> Result<u64> {
        let count = match lookup(self.store.view(), self.rec, self.ord, d, key)? {
            None => return Ok(0),
            Some(Vals::One(_)) => 1,
            Some(Vals::List(l)) => l.len() as u64,
            // A sub-tree is never empty; its record's count comes from the
            // file, so it is checked before anything changes.
            Some(Vals::Tree(sub)) if sub.entries == 0 => {
                return Err(Error::corrupted(
                    u64::from(sub.root),
                    "duplicate sub-tree record counts no values",
                ))
            }
            Some(Vals::Tree(sub)) => {
                self.reserve_dup(0)?;
                let mut gone = sub;
                self.with(&mut gone, d.ord).free_tree()?;
                add_pages(self.rec, &sub, &DbRecord::default());
                sub.entries
            }
        };
        self.delete(key)?;
        self.rec.entries = self.rec.entries.saturating_sub(count.saturating_sub(1));
        Ok(count)
    }

    /// Writes `vals` (sorted, distinct, at least one) as the values of `key`:
    /// a single value, a list, or (when the list does not fit inline) a new
    /// sub-tree.
    fn store_values(&mut self, d: Dups<'_>, key: &[u8], vals: &[&[u8]]) -> Result<()> {
        if let [one] = vals {
            return self.put_node(key, one, 0);
        }
        let mut enc = Vec::new();
        list::encode(vals, d.fixed, &mut enc);
        if self.store.layout().inline(key.len(), enc.len()) {
            return self.put_node(key, &enc, DUPS);
        }
        let mut sub = DbRecord {
            flags: d.sub_flags(),
            ..DbRecord::default()
        };
        for v in vals {
            self.with(&mut sub, d.ord).put(v, &[])?;
        }
        self.store_tree(key, &sub)?;
        add_pages(self.rec, &DbRecord::default(), &sub);
        Ok(())
    }

    /// Writes the sub-tree record `sub` as the value of `key`, `FRESH` when
    /// its root is dirty (its checksum is filled in at commit).
    fn store_tree(&mut self, key: &[u8], sub: &DbRecord) -> Result<()> {
        let fresh = if self.store.is_dirty(sub.root) {
            FRESH
        } else {
            0
        };
        let bytes: [u8; RECORD_LEN] = sub.encode();
        self.put_node(key, &bytes, SUBTREE | fresh)
    }
}

/// Adds the page counts of `after` minus those of `before` to `rec`.
fn add_pages(rec: &mut DbRecord, before: &DbRecord, after: &DbRecord) {
    let f = |r: u64, b: u64, a: u64| r.saturating_add(a).saturating_sub(b);
    rec.branch_pages = f(rec.branch_pages, before.branch_pages, after.branch_pages);
    rec.leaf_pages = f(rec.leaf_pages, before.leaf_pages, after.leaf_pages);
    rec.overflow_pages = f(
        rec.overflow_pages,
        before.overflow_pages,
        after.overflow_pages,
    );
}

/// Copies the inline values `v` into `out` (they borrow a page the writer
/// is about to change); returns each value's range in `out`.
fn copy_vals(v: Vals<'_>, out: &mut Vec<u8>) -> Result<Vec<(usize, usize)>> {
    let mut ranges = Vec::new();
    let mut push = |x: &[u8]| {
        ranges.push((out.len(), x.len()));
        out.extend_from_slice(x);
    };
    match v {
        Vals::One(x) => push(x),
        Vals::List(l) => {
            for i in 0..l.len() {
                let x = l
                    .get(i)
                    .ok_or_else(|| Error::corrupted(0, "damaged duplicate list"))?;
                push(x);
            }
        }
        Vals::Tree(_) => {}
    }
    Ok(ranges)
}

fn split_copy<'c>(copy: &'c [u8], ranges: &[(usize, usize)]) -> Vec<&'c [u8]> {
    ranges.iter().map(|&(at, n)| &copy[at..at + n]).collect()
}

/// Index of the first value `>= val` in sorted `vals`, and whether equal.
fn position(vals: &[&[u8]], val: &[u8], ord: Order<'_>) -> (usize, bool) {
    match vals.binary_search_by(|v| ord.cmp(v, val)) {
        Ok(i) => (i, true),
        Err(i) => (i, false),
    }
}
