//! The inputs and the model of the DUPSORT databases, the duplicate cursor
//! moves and the write-cursor moves.
//!
//! Two DUPSORT databases join the five of [`super::NAMES`]: `m` (values of
//! any size, bytewise) and `f` (DUPFIXED, bytewise; the inputs give it
//! 8-byte values mostly). Their model is a `BTreeMap<key, BTreeSet<value>>`:
//! bytewise value order is `BTreeSet`'s. Cursor models work on the sorted
//! list of pairs, which for a database without duplicates is its map.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use arbitrary::Arbitrary;
use sarsen::{DbOptions, Error, KeyOrder};

use super::{pattern, Key, DBS};

/// Names of the DUPSORT databases: variable-size values, DUPFIXED.
pub const DUP_NAMES: [&str; 2] = ["m", "f"];
/// All databases: the five of [`DBS`] and the two DUPSORT ones.
pub const ALL: usize = DBS + DUP_NAMES.len();

/// A DUPSORT database's model.
pub type DupMap = BTreeMap<Vec<u8>, BTreeSet<Vec<u8>>>;
/// A key/value pair.
pub type Pair = (Vec<u8>, Vec<u8>);

/// Which database a new operation addresses: with bit 7 set one of the
/// five without duplicates (`& 0x7f` modulo 5), else `m` (even) or `f`.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub struct Target(pub u8);

impl Target {
    /// Index among [`ALL`]: 0..5 without duplicates, 5 `m`, 6 `f`.
    pub fn idx(self) -> usize {
        if self.0 & 0x80 != 0 {
            (self.0 & 0x7f) as usize % DBS
        } else {
            DBS + self.0 as usize % 2
        }
    }
}

/// Whether database `idx` is the DUPFIXED one.
pub(super) fn is_fixed(idx: usize) -> bool {
    idx == DBS + 1
}

/// Options of DUPSORT database `idx` (>= [`DBS`]): `m` has a merge
/// operator (so that merges reach the `WrongDupMode` refusal), `f` none.
pub(super) fn dup_options(idx: usize) -> DbOptions {
    let o = DbOptions::new().dup_sort(KeyOrder::Bytewise);
    if is_fixed(idx) {
        o.dup_fixed()
    } else {
        o.merge_operator(sarsen::merge::Max)
    }
}

/// A key of the new operations.
#[derive(Arbitrary, Debug, Clone)]
pub enum DKey {
    /// `d` and two digits of `n % 48`: few keys, so values pile up.
    Small(u8),
    /// Any key of the older operations (long ones too).
    Key(Key),
}

impl DKey {
    /// The key's bytes.
    pub fn bytes(&self, max_key: usize) -> Vec<u8> {
        match self {
            DKey::Small(n) => format!("d{:02}", n % 48).into_bytes(),
            DKey::Key(k) => k.bytes(max_key),
        }
    }

    /// The key `by` further on (`Small` keys only).
    pub fn shifted(&self, by: u8) -> DKey {
        match self {
            DKey::Small(n) => DKey::Small(n.wrapping_add(by)),
            k => k.clone(),
        }
    }
}

/// A value of the new operations.
#[derive(Arbitrary, Debug, Clone)]
pub enum DVal {
    /// `n % 4096`: `v` and five digits (variable-size databases), or eight
    /// big-endian bytes (DUPFIXED).
    Num(u16),
    /// Eight little-endian bytes.
    Word(u64),
    /// The first `len % 9` bytes (DUPFIXED: mostly the wrong size).
    Short {
        /// Length before the modulo.
        len: u8,
        /// The bytes.
        bytes: [u8; 8],
    },
    /// `len % (max_key + 3)` patterned bytes: past the value limit too.
    Pattern {
        /// Pattern seed.
        seed: u8,
        /// Length before the modulo.
        len: u16,
    },
}

impl DVal {
    /// The value's bytes for database `idx`.
    pub fn bytes(&self, idx: usize, max_key: usize) -> Vec<u8> {
        match self {
            DVal::Num(n) => num_val(idx, u32::from(*n), 0),
            DVal::Word(w) => w.to_le_bytes().to_vec(),
            DVal::Short { len, bytes } => bytes[..*len as usize % 9].to_vec(),
            DVal::Pattern { seed, len } => pattern(*seed, *len as usize % (max_key + 3)),
        }
    }

    /// The value `by` further on (`Num` values only).
    pub fn shifted(&self, by: u8) -> DVal {
        match self {
            DVal::Num(n) => DVal::Num(n.wrapping_add(u16::from(by))),
            v => v.clone(),
        }
    }
}

/// Value number `n` of database `idx`, padded by `pad` bytes (variable
/// sizes only).
pub(super) fn num_val(idx: usize, n: u32, pad: usize) -> Vec<u8> {
    if is_fixed(idx) {
        u64::from(n % 4096).to_be_bytes().to_vec()
    } else {
        let mut v = format!("v{:05}", n % 4096).into_bytes();
        v.resize(v.len() + pad, b'p');
        v
    }
}

/// One end of a range of the new operations.
#[derive(Arbitrary, Debug, Clone)]
pub enum DBound {
    /// No bound.
    Unbounded,
    /// Included.
    Included(DKey),
    /// Excluded.
    Excluded(DKey),
}

impl DBound {
    pub(super) fn bound(&self, max_key: usize) -> Bound<Vec<u8>> {
        match self {
            DBound::Unbounded => Bound::Unbounded,
            DBound::Included(k) => Bound::Included(k.bytes(max_key)),
            DBound::Excluded(k) => Bound::Excluded(k.bytes(max_key)),
        }
    }
}

/// A read-cursor move of [`super::Op::DupCursor`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DMove {
    /// `next`.
    Next,
    /// `prev`.
    Prev,
    /// `current`.
    Current,
    /// `first`.
    First,
    /// `last`.
    Last,
    /// `seek`.
    Seek,
    /// `seek_exact`.
    SeekExact,
    /// `next_dup`.
    NextDup,
    /// `prev_dup`.
    PrevDup,
    /// `first_dup`.
    FirstDup,
    /// `last_dup`.
    LastDup,
    /// `next_nodup`.
    NextNodup,
    /// `prev_nodup`.
    PrevNodup,
    /// `seek_both`.
    SeekBoth,
    /// `seek_both_range`.
    SeekBothRange,
    /// `dup_count`.
    DupCount,
    /// `get_multiple`.
    GetMultiple,
    /// `next_multiple`.
    NextMultiple,
    /// `get_multiple`, then `next_multiple` to the key's end: the batches
    /// together must be the key's values from the current one on.
    AllMultiple,
}

const DMOVES: [DMove; 19] = [
    DMove::Next,
    DMove::Prev,
    DMove::Current,
    DMove::First,
    DMove::Last,
    DMove::Seek,
    DMove::SeekExact,
    DMove::NextDup,
    DMove::PrevDup,
    DMove::FirstDup,
    DMove::LastDup,
    DMove::NextNodup,
    DMove::PrevNodup,
    DMove::SeekBoth,
    DMove::SeekBothRange,
    DMove::DupCount,
    DMove::GetMultiple,
    DMove::NextMultiple,
    DMove::AllMultiple,
];

/// A write-cursor move of [`super::Op::WCursor`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WMove {
    /// `next`.
    Next,
    /// `prev`.
    Prev,
    /// `current`.
    Current,
    /// `first`.
    First,
    /// `last`.
    Last,
    /// `seek`.
    Seek,
    /// `seek_exact`.
    SeekExact,
    /// `next_dup`.
    NextDup,
    /// `prev_dup`.
    PrevDup,
    /// `next_nodup`.
    NextNodup,
    /// `prev_nodup`.
    PrevNodup,
    /// `seek_both`.
    SeekBoth,
    /// `seek_both_range`.
    SeekBothRange,
    /// `dup_count`.
    DupCount,
    /// `put`.
    Put,
    /// `put_current`.
    PutCurrent,
    /// `delete_current`.
    DeleteCurrent,
    /// `delete_current_key`.
    DeleteCurrentKey,
    /// `merge_current`.
    MergeCurrent,
}

const WMOVES: [WMove; 19] = [
    WMove::Next,
    WMove::Prev,
    WMove::Current,
    WMove::First,
    WMove::Last,
    WMove::Seek,
    WMove::SeekExact,
    WMove::NextDup,
    WMove::PrevDup,
    WMove::NextNodup,
    WMove::PrevNodup,
    WMove::SeekBoth,
    WMove::SeekBothRange,
    WMove::DupCount,
    WMove::Put,
    WMove::PutCurrent,
    WMove::DeleteCurrent,
    WMove::DeleteCurrentKey,
    WMove::MergeCurrent,
];

/// A move byte: the move, and a variation (0..=13) that picks its key
/// and value: odd, an existing pair; even, the operation's shifted by
/// half of it.
pub fn decode_dmove(b: u8) -> (DMove, u8) {
    (DMOVES[b as usize % DMOVES.len()], b / DMOVES.len() as u8)
}

/// As [`decode_dmove`] for write-cursor moves.
pub fn decode_wmove(b: u8) -> (WMove, u8) {
    (WMOVES[b as usize % WMOVES.len()], b / WMOVES.len() as u8)
}

/// The error kinds the model predicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum E {
    /// `DbNotFound`.
    NotFound,
    /// `KeyTooLarge`.
    KeyTooLarge,
    /// `ValueTooLarge`.
    ValueTooLarge,
    /// `BadValueSize`.
    BadValueSize,
    /// `WrongDupMode`.
    WrongDupMode,
    /// `KeyNotGreater`.
    KeyNotGreater,
    /// `InvalidArgument`.
    InvalidArgument,
    /// `Merge` (the operator refused).
    Merge,
    /// `NoMergeOperator`.
    NoMergeOperator,
}

/// The kind of `e`; panics (with `what`) on an error the model never
/// predicts.
pub(super) fn kind(e: &Error, what: &str) -> E {
    match e {
        Error::DbNotFound { .. } => E::NotFound,
        Error::KeyTooLarge { .. } => E::KeyTooLarge,
        Error::ValueTooLarge { .. } => E::ValueTooLarge,
        Error::BadValueSize { .. } => E::BadValueSize,
        Error::WrongDupMode { .. } => E::WrongDupMode,
        Error::KeyNotGreater => E::KeyNotGreater,
        Error::InvalidArgument(_) => E::InvalidArgument,
        Error::Merge { .. } => E::Merge,
        Error::NoMergeOperator { .. } => E::NoMergeOperator,
        e => panic!("{what}: unexpected error {e:?}"),
    }
}

/// A result with its error reduced to its kind.
pub(super) fn res<T>(r: sarsen::Result<T>, what: &str) -> Result<T, E> {
    r.map_err(|e| kind(&e, what))
}

/// Size limits of one page size (docs/design.md, "Derived limits" and
/// "Duplicates").
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    pub max_key: usize,
    pub node_max: usize,
}

impl Limits {
    pub(super) fn new(page_size: u32) -> Limits {
        let node_max = (page_size as usize - 20) / 2;
        Limits {
            max_key: node_max - 22,
            node_max,
        }
    }

    /// The error a DUPSORT pair's sizes give, if any.
    pub(super) fn dup_pair(&self, k: &[u8], v: &[u8]) -> Option<E> {
        if k.len() > self.node_max - 74 {
            return Some(E::KeyTooLarge);
        }
        if v.len() > self.max_key.min(self.node_max - 10 - k.len()) {
            return Some(E::ValueTooLarge);
        }
        None
    }
}

/// Where a model cursor stands, over the list of pairs.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum CPos {
    Unset,
    At(Pair),
    /// A write cursor after `delete_current`: where this pair was.
    Deleted(Pair),
    PastEnd,
    BeforeStart,
    /// After a failed `seek_both`/`seek_both_range`: LMDB leaves the
    /// position unspecified, so results are not compared until a move
    /// that places the cursor anew.
    Unknown,
}

/// A sorted list of pairs and the model moves over it.
pub(super) struct Pairs<'a>(pub &'a [Pair]);

impl Pairs<'_> {
    fn at(&self, i: usize, pos: &mut CPos) -> Option<Pair> {
        let p = self.0[i].clone();
        *pos = CPos::At(p.clone());
        Some(p)
    }
    pub(super) fn first(&self, pos: &mut CPos) -> Option<Pair> {
        if self.0.is_empty() {
            *pos = CPos::PastEnd;
            return None;
        }
        self.at(0, pos)
    }
    pub(super) fn last(&self, pos: &mut CPos) -> Option<Pair> {
        if self.0.is_empty() {
            *pos = CPos::BeforeStart;
            return None;
        }
        self.at(self.0.len() - 1, pos)
    }
    /// Index of the first pair `>= p`.
    fn lower(&self, p: &Pair) -> usize {
        self.0.partition_point(|x| x < p)
    }
    /// The first pair after (`gt`) or at-or-after `p`, or past the end.
    pub(super) fn after(&self, p: &Pair, gt: bool, pos: &mut CPos) -> Option<Pair> {
        let mut i = self.lower(p);
        if gt && self.0.get(i) == Some(p) {
            i += 1;
        }
        if i >= self.0.len() {
            *pos = CPos::PastEnd;
            return None;
        }
        self.at(i, pos)
    }
    /// The last pair before `p`, or before the start.
    pub(super) fn before(&self, p: &Pair, pos: &mut CPos) -> Option<Pair> {
        match self.lower(p) {
            0 => {
                *pos = CPos::BeforeStart;
                None
            }
            i => self.at(i - 1, pos),
        }
    }
    /// First pair whose key is `>= k`.
    pub(super) fn seek(&self, k: &[u8], pos: &mut CPos) -> Option<Pair> {
        let i = self.0.partition_point(|x| x.0.as_slice() < k);
        if i >= self.0.len() {
            *pos = CPos::PastEnd;
            return None;
        }
        self.at(i, pos)
    }
    /// The values of key `k`.
    pub(super) fn vals(&self, k: &[u8]) -> &[Pair] {
        let a = self.0.partition_point(|x| x.0.as_slice() < k);
        let b = self.0.partition_point(|x| x.0.as_slice() <= k);
        &self.0[a..b]
    }
    /// The first pair of the key after `k`.
    pub(super) fn next_key(&self, k: &[u8], pos: &mut CPos) -> Option<Pair> {
        let b = self.0.partition_point(|x| x.0.as_slice() <= k);
        if b >= self.0.len() {
            *pos = CPos::PastEnd;
            return None;
        }
        self.at(b, pos)
    }
    /// The last pair of the key before `k`.
    pub(super) fn prev_key(&self, k: &[u8], pos: &mut CPos) -> Option<Pair> {
        match self.0.partition_point(|x| x.0.as_slice() < k) {
            0 => {
                *pos = CPos::BeforeStart;
                None
            }
            a => self.at(a - 1, pos),
        }
    }
    /// The next (`fwd`) or previous value of the key of `p`, moving there.
    pub(super) fn dup_step(&self, p: &Pair, fwd: bool, pos: &mut CPos) -> Option<Pair> {
        let i = self.lower(p);
        let j = if fwd { i + 1 } else { i.checked_sub(1)? };
        let q = self.0.get(j).filter(|q| q.0 == p.0)?;
        let q = q.clone();
        *pos = CPos::At(q.clone());
        Some(q)
    }
    /// The first value `>= v` of `k`.
    pub(super) fn both_range(&self, k: &[u8], v: &[u8]) -> Option<Pair> {
        self.vals(k).iter().find(|x| x.1.as_slice() >= v).cloned()
    }
}

/// Model state of the DUPSORT databases and the canary, beside the five
/// maps of [`super::State`].
impl super::State {
    /// Whether database `idx` (of [`ALL`]) exists.
    pub(super) fn exists(&self, idx: usize) -> bool {
        if idx < DBS {
            self.dbs[idx].is_some()
        } else {
            self.dups[idx - DBS].is_some()
        }
    }

    /// The pairs of database `idx` in order (empty if it does not exist).
    pub(super) fn pairs(&self, idx: usize) -> Vec<Pair> {
        if idx < DBS {
            return self.dbs[idx]
                .iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
        }
        self.dups[idx - DBS]
            .iter()
            .flatten()
            .flat_map(|(k, vs)| vs.iter().map(move |v| (k.clone(), v.clone())))
            .collect()
    }
}
