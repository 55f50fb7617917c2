//! The `api_ops` target: a sequence of operations decoded from the fuzzer's
//! bytes, run against Sarsen and a `BTreeMap` model of every database.
//!
//! The model holds the committed state and, while a write transaction is
//! open, its pending state. Reads go through the open write transaction
//! (against the pending state) or a fresh read transaction (against the
//! committed one); held snapshots are checked against the state they were
//! taken at, however many commits later. Every result is compared with the
//! model, every error must be the one the model predicts, and after every
//! commit `Env::check` must find nothing. Any disagreement panics.
//!
//! Seven databases take part: the main one and the named `a`, `b`, `c`, `d`,
//! each with a built-in merge operator (see [`operator`]), and two DUPSORT
//! multimaps, `m` (values of any size) and `f` (DUPFIXED), modelled as
//! `BTreeMap<key, BTreeSet<value>>` (see `dups.rs`). The operations that
//! came with DUPSORT (pair writes, `delete_range`, read-cursor walks with
//! every duplicate move, write-cursor walks that write where they stand,
//! `put_reserve`, the canary) address all seven.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use arbitrary::Arbitrary;
use sarsen::merge::{Append, Max, Min, PutIfAbsent, Uint64Add};
use sarsen::{
    Cursor, Database, DbOptions, Durability, Env, EnvOptions, Error, Iter, MergeOperator, RoTxn,
    RwTxn,
};

/// Names of the named databases; index 0 is the main database.
pub const NAMES: [&str; 4] = ["a", "b", "c", "d"];
/// Number of databases (main + named).
pub const DBS: usize = NAMES.len() + 1;
/// Operations run per input at most (the rest of a longer input is ignored).
pub const MAX_OPS: usize = 3000;

/// Which database an operation addresses (taken modulo [`DBS`]).
#[derive(Arbitrary, Debug, Clone, Copy)]
pub struct DbSel(pub u8);

impl DbSel {
    fn idx(self) -> usize {
        self.0 as usize % DBS
    }
}

/// A key. `Num` keys come from a small space so that operations meet.
#[derive(Arbitrary, Debug, Clone)]
pub enum Key {
    /// `k` and four decimal digits of `n % 2048`.
    Num(u16),
    /// The first `len % 7` bytes, the empty key included.
    Short {
        /// Length before the modulo.
        len: u8,
        /// The bytes.
        bytes: [u8; 6],
    },
    /// `len % (max_key + 3)` bytes: up to the maximum and two past it.
    Long {
        /// Pattern seed.
        seed: u8,
        /// Length before the modulo.
        len: u16,
    },
}

/// A value (or a merge operand).
#[derive(Arbitrary, Debug, Clone)]
pub enum Value {
    /// Eight little-endian bytes: what the counters take.
    Word(u64),
    /// The first `len % 9` bytes.
    Short {
        /// Length before the modulo.
        len: u8,
        /// The bytes.
        bytes: [u8; 8],
    },
    /// `len % 9000` patterned bytes: large ones go to overflow runs.
    Pattern {
        /// Pattern seed.
        seed: u8,
        /// Length before the modulo.
        len: u16,
    },
}

/// One end of a range.
#[derive(Arbitrary, Debug, Clone)]
pub enum KeyBound {
    /// No bound.
    Unbounded,
    /// Up to or from the key, included.
    Included(Key),
    /// Excluded.
    Excluded(Key),
}

/// A cursor movement (decoded from three bits of [`Op::Cursor`]'s `moves`).
#[derive(Debug, Clone)]
pub enum Move {
    /// `Cursor::next`.
    Next,
    /// `Cursor::prev`.
    Prev,
    /// `Cursor::current`.
    Current,
    /// `Cursor::first`.
    First,
    /// `Cursor::last`.
    Last,
    /// `Cursor::seek`.
    Seek(Key),
    /// `Cursor::seek_exact`.
    SeekExact(Key),
}

/// One operation. Writes open a write transaction if none is open.
#[derive(Arbitrary, Debug, Clone)]
pub enum Op {
    /// `put`.
    Put {
        /// Database.
        db: DbSel,
        /// Key.
        key: Key,
        /// Value.
        value: Value,
    },
    /// `delete`.
    Delete {
        /// Database.
        db: DbSel,
        /// Key.
        key: Key,
    },
    /// Deletes up to `count % 64` present keys from `from` on.
    DeleteSome {
        /// Database.
        db: DbSel,
        /// First key.
        from: Key,
        /// How many.
        count: u8,
    },
    /// Puts `count` keys `Num(start + i * step)`, all with `value`.
    Fill {
        /// Database.
        db: DbSel,
        /// First number.
        start: u16,
        /// How many.
        count: u8,
        /// Stride.
        step: u8,
        /// Value.
        value: Value,
    },
    /// `merge_many` with the first `count % 5` operands and the database's
    /// operator (no operands: refused).
    Merge {
        /// Database.
        db: DbSel,
        /// Key.
        key: Key,
        /// How many operands.
        count: u8,
        /// Operands.
        operands: [Value; 4],
    },
    /// `get`.
    Get {
        /// Database.
        db: DbSel,
        /// Key.
        key: Key,
    },
    /// `range`, taking `steps % 33` items from the front (bit clear) or
    /// the back (bit set) as the bits of `ends` say, then the rest from the
    /// front.
    Range {
        /// Database.
        db: DbSel,
        /// Start.
        lo: KeyBound,
        /// End.
        hi: KeyBound,
        /// Which end each step takes.
        ends: u32,
        /// How many steps follow `ends`.
        steps: u8,
    },
    /// A cursor walk of `count % 22` moves, three bits each of `moves`
    /// (next, prev, current, first, last, seek, seek_exact, next); seeks
    /// go to `key`, or to `Num` keys near it.
    Cursor {
        /// Database.
        db: DbSel,
        /// Seek target.
        key: Key,
        /// The moves.
        moves: u64,
        /// How many.
        count: u8,
    },
    /// `create_db_with` the database's operator (main: `create_db(None)`).
    CreateDb {
        /// Database.
        db: DbSel,
    },
    /// `drop_db` (main: clears).
    DropDb {
        /// Database.
        db: DbSel,
    },
    /// `clear_db`.
    ClearDb {
        /// Database.
        db: DbSel,
    },
    /// Takes a read snapshot and keeps it (at most 3, oldest dropped).
    Snapshot,
    /// Checks the oldest held snapshot against its state, and drops it.
    VerifyHeld,
    /// Commits the write transaction, if any; then checks everything.
    Commit,
    /// Aborts the write transaction, if any (or drops it).
    Abort {
        /// Drop instead of `abort`.
        drop: bool,
    },
    /// Drops everything and opens the environment again.
    Reopen {
        /// `EnvOptions::write_map`.
        write_map: bool,
        /// Durability mode (modulo 4).
        durability: u8,
    },
    // The variants below came with DUPSORT; they address any of the seven
    // databases through a [`Target`] (half of them the two DUPSORT ones).
    /// `put` (in a DUPSORT database: adds the pair).
    DupPut {
        /// Database.
        t: Target,
        /// Key.
        key: DKey,
        /// Value.
        value: DVal,
    },
    /// `put_no_dup_data` (`WrongDupMode` without DUPSORT).
    DupPutNoDup {
        /// Database.
        t: Target,
        /// Key.
        key: DKey,
        /// Value.
        value: DVal,
    },
    /// `append_dup` (`KeyNotGreater` unless after the last pair).
    DupAppend {
        /// Database.
        t: Target,
        /// Key.
        key: DKey,
        /// Value.
        value: DVal,
        /// Append after the last pair instead: its key with a value one
        /// greater (bit 0), or the next `Small` key (bit 1).
        after_last: u8,
    },
    /// `delete_dup` (one pair).
    DupDelete {
        /// Database.
        t: Target,
        /// Key.
        key: DKey,
        /// Value.
        value: DVal,
        /// Delete an existing pair instead (the `pick`-th, when odd).
        pick: u16,
    },
    /// `delete` (a key with all its values).
    DupDeleteKey {
        /// Database.
        t: Target,
        /// Key.
        key: DKey,
    },
    /// `delete_range`.
    DeleteRange {
        /// Database.
        t: Target,
        /// Start.
        lo: DBound,
        /// End.
        hi: DBound,
    },
    /// Puts `count` values `Num(start + i * step)` under one key, each
    /// padded with `pad % 48` bytes (sub-trees of hundreds of values).
    DupFill {
        /// Database.
        t: Target,
        /// Key.
        key: DKey,
        /// First number.
        start: u16,
        /// How many.
        count: u8,
        /// Stride.
        step: u8,
        /// Padding of variable-size values.
        pad: u8,
    },
    /// `get` (a DUPSORT key's first value).
    DupGet {
        /// Database.
        t: Target,
        /// Key.
        key: DKey,
    },
    /// `range` over pairs, as [`Op::Range`].
    DupRange {
        /// Database.
        t: Target,
        /// Start.
        lo: DBound,
        /// End.
        hi: DBound,
        /// Which end each step takes.
        ends: u32,
        /// How many steps follow `ends`.
        steps: u8,
    },
    /// A read-cursor walk with the duplicate moves ([`DMove`]), one byte
    /// each, `count % 25` of them.
    DupCursor {
        /// Database.
        t: Target,
        /// Seek key.
        key: DKey,
        /// Seek value.
        value: DVal,
        /// The moves.
        moves: [u8; 24],
        /// How many.
        count: u8,
    },
    /// A write-cursor walk ([`WMove`]: moves, put, put_current,
    /// delete_current, delete_current_key, merge_current), `count % 17`.
    WCursor {
        /// Database.
        t: Target,
        /// Key.
        key: DKey,
        /// Value.
        value: DVal,
        /// The moves.
        moves: [u8; 16],
        /// How many.
        count: u8,
    },
    /// `put_reserve` of `len % 3000` bytes filled from `seed`.
    PutReserve {
        /// Database.
        t: Target,
        /// Key.
        key: DKey,
        /// Length before the modulo.
        len: u16,
        /// Pattern seed.
        seed: u8,
    },
    /// `put_canary`.
    PutCanary {
        /// User word.
        x: u64,
        /// User word.
        y: u64,
        /// User word.
        z: u64,
    },
    /// `canary` of the current view.
    GetCanary,
    /// `drop_db` (or `clear_db`) of the target.
    DupDrop {
        /// Database.
        t: Target,
        /// `clear_db` instead.
        clear: bool,
    },
    /// `merge` (bit 0 of `which` clear), `replace` or `take`: refused
    /// with `WrongDupMode` on DUPSORT.
    DupOther {
        /// Database.
        t: Target,
        /// Key.
        key: DKey,
        /// Value or operand.
        value: DVal,
        /// Which operation, modulo 3.
        which: u8,
    },
    /// `delete_dup` of up to `count` values of one key, every
    /// `stride % 4 + 1`-th from the `skip % 8`-th: shrinks sub-trees back
    /// to lists, single values and nothing.
    DupDeleteSome {
        /// Database.
        t: Target,
        /// Key.
        key: DKey,
        /// How many at most.
        count: u8,
        /// Values skipped before the first.
        skip: u8,
        /// Stride.
        stride: u8,
    },
}

/// A whole `api_ops` input.
#[derive(Arbitrary, Debug, Clone)]
pub struct ApiInput {
    /// 512-byte pages (deep trees from few keys) instead of 4096.
    pub small_pages: bool,
    /// The operations.
    pub ops: Vec<Op>,
}

/// What a run did, for the figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ApiStats {
    /// Operations run.
    pub ops: u64,
    /// Commits that wrote something or not.
    pub commits: u64,
    /// Environments opened.
    pub opens: u64,
    /// `Env::check` runs (all clean).
    pub checks: u64,
    /// Moves of the read and write cursor walks that came with DUPSORT.
    pub moves: u64,
    /// The most pairs a DUPSORT database held at a commit.
    pub max_dup_pairs: u64,
}

impl std::ops::AddAssign for ApiStats {
    fn add_assign(&mut self, o: ApiStats) {
        self.ops += o.ops;
        self.commits += o.commits;
        self.opens += o.opens;
        self.checks += o.checks;
        self.moves += o.moves;
        self.max_dup_pairs = self.max_dup_pairs.max(o.max_dup_pairs);
    }
}

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

/// The model: one map per database, `None` for a named database that does
/// not exist (the main database always exists), the two DUPSORT
/// databases, and the canary's words (`x`, `y`, `z`, `v`).
#[derive(Clone, Debug, PartialEq)]
pub struct State {
    dbs: [Option<Map>; DBS],
    dups: [Option<DupMap>; 2],
    canary: [u64; 4],
}

impl Default for State {
    fn default() -> State {
        State {
            dbs: [Some(Map::new()), None, None, None, None],
            dups: [None, None],
            canary: [0; 4],
        }
    }
}

/// The merge operator of database `idx`: main `append:2c`, `a` `uint64add`,
/// `b` `max`, `c` `min`, `d` `put_if_absent`.
pub fn operator(idx: usize) -> Arc<dyn MergeOperator> {
    match idx {
        0 => Arc::new(Append::with_delimiter(b",")),
        1 => Arc::new(Uint64Add),
        2 => Arc::new(Max),
        3 => Arc::new(Min),
        _ => Arc::new(PutIfAbsent),
    }
}

/// What the operator of `idx` gives, computed independently of Sarsen's
/// code; `None` where it refuses.
pub fn model_merge(idx: usize, old: Option<&[u8]>, ops: &[Vec<u8>]) -> Option<Vec<u8>> {
    let parts = || old.into_iter().chain(ops.iter().map(|o| o.as_slice()));
    match idx {
        0 => Some(parts().collect::<Vec<_>>().join(&b","[..])),
        1 => {
            let mut sum = 0u64;
            for p in parts() {
                sum = sum.wrapping_add(u64::from_le_bytes(p.try_into().ok()?));
            }
            Some(sum.to_le_bytes().to_vec())
        }
        2 => parts().max().map(<[u8]>::to_vec),
        3 => parts().min().map(<[u8]>::to_vec),
        _ => old
            .or(ops.first().map(|o| o.as_slice()))
            .map(<[u8]>::to_vec),
    }
}

fn db_name(idx: usize) -> Option<&'static str> {
    match idx {
        0 => None,
        i if i < DBS => Some(NAMES[i - 1]),
        i => Some(DUP_NAMES[i - DBS]),
    }
}

fn db_options(idx: usize) -> DbOptions {
    if idx >= DBS {
        return dups::dup_options(idx);
    }
    DbOptions::new().merge_operator_arc(operator(idx))
}

fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| seed.wrapping_add((i as u8).wrapping_mul(31)) ^ (i >> 8) as u8)
        .collect()
}

fn num_key(n: u32) -> Vec<u8> {
    format!("k{:04}", n % 2048).into_bytes()
}

impl Key {
    /// The key's bytes for an environment whose longest key is `max_key`.
    pub fn bytes(&self, max_key: usize) -> Vec<u8> {
        match self {
            Key::Num(n) => num_key(u32::from(*n)),
            Key::Short { len, bytes } => bytes[..*len as usize % 7].to_vec(),
            Key::Long { seed, len } => {
                let mut k = pattern(*seed, *len as usize % (max_key + 3));
                if let Some(b) = k.first_mut() {
                    *b = b'L';
                }
                k
            }
        }
    }
}

impl Value {
    /// The value's bytes.
    pub fn bytes(&self) -> Vec<u8> {
        match self {
            Value::Word(w) => w.to_le_bytes().to_vec(),
            Value::Short { len, bytes } => bytes[..*len as usize % 9].to_vec(),
            Value::Pattern { seed, len } => pattern(*seed, *len as usize % 9000),
        }
    }
}

fn bound(b: &KeyBound, max_key: usize) -> Bound<Vec<u8>> {
    match b {
        KeyBound::Unbounded => Bound::Unbounded,
        KeyBound::Included(k) => Bound::Included(k.bytes(max_key)),
        KeyBound::Excluded(k) => Bound::Excluded(k.bytes(max_key)),
    }
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
    }
}

fn durability(d: u8) -> Durability {
    match d % 4 {
        0 => Durability::Durable,
        1 => Durability::NoMetaSync,
        2 => Durability::SafeNoSync,
        _ => Durability::NoSync,
    }
}

/// Read operations of both transaction kinds.
trait View {
    fn get(&self, db: Database, key: &[u8]) -> sarsen::Result<Option<&[u8]>>;
    fn range(&self, db: Database, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> sarsen::Result<Iter<'_>>;
    fn cursor(&self, db: Database) -> sarsen::Result<Cursor<'_>>;
    fn entries(&self, db: Database) -> sarsen::Result<u64>;
    fn list_dbs(&self) -> sarsen::Result<Vec<String>>;
    fn canary(&self) -> sarsen::Result<sarsen::Canary>;
}

macro_rules! impl_view {
    ($t:ident) => {
        impl View for $t<'_> {
            fn get(&self, db: Database, key: &[u8]) -> sarsen::Result<Option<&[u8]>> {
                $t::get(self, db, key)
            }
            fn range(
                &self,
                db: Database,
                lo: Bound<&[u8]>,
                hi: Bound<&[u8]>,
            ) -> sarsen::Result<Iter<'_>> {
                $t::range(self, db, (lo, hi))
            }
            fn cursor(&self, db: Database) -> sarsen::Result<Cursor<'_>> {
                $t::cursor(self, db)
            }
            fn entries(&self, db: Database) -> sarsen::Result<u64> {
                $t::stat(self, db).map(|s| s.entries)
            }
            fn list_dbs(&self) -> sarsen::Result<Vec<String>> {
                $t::list_dbs(self)
            }
            fn canary(&self) -> sarsen::Result<sarsen::Canary> {
                $t::canary(self)
            }
        }
    };
}
impl_view!(RoTxn);
impl_view!(RwTxn);

type Owned = Option<(Vec<u8>, Vec<u8>)>;

fn owned(e: sarsen::Result<Option<(&[u8], &[u8])>>, what: &str) -> Owned {
    e.unwrap_or_else(|e| panic!("{what}: {e:?}"))
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
}

fn entry(m: &Map, k: Option<&Vec<u8>>) -> Owned {
    k.map(|k| (k.clone(), m[k].clone()))
}

/// Compares everything `view` shows with `st`: the list of named
/// databases, the canary, and each database (pairs, for the DUPSORT ones)
/// forwards, backwards and by `stat`.
fn verify_state<V: View>(view: &V, st: &State, handles: &[Option<Database>; ALL], what: &str) {
    let mut names: Vec<String> = (1..ALL)
        .filter(|&i| st.exists(i))
        .map(|i| db_name(i).unwrap().to_string())
        .collect();
    names.sort();
    let listed = view
        .list_dbs()
        .unwrap_or_else(|e| panic!("{what}: list_dbs: {e:?}"));
    assert_eq!(listed, names, "{what}: list_dbs");
    let c = view
        .canary()
        .unwrap_or_else(|e| panic!("{what}: canary: {e:?}"));
    assert_eq!([c.x, c.y, c.z, c.v], st.canary, "{what}: canary");
    for (i, h) in handles.iter().enumerate() {
        if !st.exists(i) {
            continue;
        }
        let pairs = st.pairs(i);
        let h = h.unwrap_or_else(|| panic!("{what}: no handle for db {i}"));
        let it = |rev: bool| -> Vec<(Vec<u8>, Vec<u8>)> {
            let it = view
                .range(h, Bound::Unbounded, Bound::Unbounded)
                .unwrap_or_else(|e| panic!("{what}: iter db {i}: {e:?}"));
            let items: sarsen::Result<Vec<_>> = if rev {
                it.rev().collect()
            } else {
                it.collect()
            };
            let mut v: Vec<_> = items
                .unwrap_or_else(|e| panic!("{what}: iterating db {i}: {e:?}"))
                .into_iter()
                .map(|(k, v)| (k.to_vec(), v.to_vec()))
                .collect();
            if rev {
                v.reverse();
            }
            v
        };
        assert!(it(false) == pairs, "{what}: db {i} forward scan differs");
        assert!(it(true) == pairs, "{what}: db {i} backward scan differs");
        let n = view
            .entries(h)
            .unwrap_or_else(|e| panic!("{what}: stat db {i}: {e:?}"));
        assert_eq!(n, pairs.len() as u64, "{what}: stat entries of db {i}");
    }
}

/// The model's cursor: where it stands.
#[derive(Clone, Debug, PartialEq)]
enum Pos {
    Unset,
    At(Vec<u8>),
    PastEnd,
    BeforeStart,
}

/// Applies `mv` to the model cursor `pos` over `m`; returns what the real
/// cursor must return (`seek_exact` returns the value only, here as a pair
/// with an empty key).
fn model_move(m: &Map, pos: &mut Pos, mv: &Move, max_key: usize) -> Owned {
    let first = |pos: &mut Pos| match m.keys().next() {
        Some(k) => {
            *pos = Pos::At(k.clone());
            entry(m, Some(k))
        }
        None => {
            *pos = Pos::PastEnd;
            None
        }
    };
    let last = |pos: &mut Pos| match m.keys().next_back() {
        Some(k) => {
            *pos = Pos::At(k.clone());
            entry(m, Some(k))
        }
        None => {
            *pos = Pos::BeforeStart;
            None
        }
    };
    let seek = |pos: &mut Pos, k: &[u8]| match m.range(k.to_vec()..).next() {
        Some((k, _)) => {
            *pos = Pos::At(k.clone());
            entry(m, Some(k))
        }
        None => {
            *pos = Pos::PastEnd;
            None
        }
    };
    match mv {
        Move::First => first(pos),
        Move::Last => last(pos),
        Move::Current => match pos {
            Pos::At(k) => entry(m, Some(k)),
            _ => None,
        },
        Move::Seek(k) => seek(pos, &k.bytes(max_key)),
        Move::SeekExact(k) => {
            let k = k.bytes(max_key);
            seek(pos, &k)
                .filter(|(f, _)| *f == k)
                .map(|(_, v)| (Vec::new(), v))
        }
        Move::Next => match pos.clone() {
            Pos::Unset | Pos::BeforeStart => first(pos),
            Pos::PastEnd => None,
            Pos::At(k) => {
                let n = m.range((Bound::Excluded(k), Bound::Unbounded)).next();
                *pos = n.map_or(Pos::PastEnd, |(k, _)| Pos::At(k.clone()));
                entry(m, n.map(|(k, _)| k))
            }
        },
        Move::Prev => match pos.clone() {
            Pos::Unset | Pos::PastEnd => last(pos),
            Pos::BeforeStart => None,
            Pos::At(k) => {
                let n = m.range(..k).next_back();
                *pos = n.map_or(Pos::BeforeStart, |(k, _)| Pos::At(k.clone()));
                entry(m, n.map(|(k, _)| k))
            }
        },
    }
}

/// The moves of an [`Op::Cursor`].
pub fn decode_moves(key: &Key, moves: u64, count: u8) -> Vec<Move> {
    (0..u32::from(count) % 22)
        .map(|i| {
            let target = match key {
                Key::Num(n) => Key::Num(n.wrapping_add(i as u16 * 3)),
                k => k.clone(),
            };
            match (moves >> (3 * i)) & 7 {
                0 | 7 => Move::Next,
                1 => Move::Prev,
                2 => Move::Current,
                3 => Move::First,
                4 => Move::Last,
                5 => Move::Seek(target),
                _ => Move::SeekExact(target),
            }
        })
        .collect()
}

fn real_move(c: &mut Cursor<'_>, mv: &Move, max_key: usize) -> Owned {
    let what = format!("cursor {mv:?}");
    match mv {
        Move::First => owned(c.first(), &what),
        Move::Last => owned(c.last(), &what),
        Move::Current => owned(c.current(), &what),
        Move::Next => owned(c.next(), &what),
        Move::Prev => owned(c.prev(), &what),
        Move::Seek(k) => owned(c.seek(&k.bytes(max_key)), &what),
        Move::SeekExact(k) => c
            .seek_exact(&k.bytes(max_key))
            .unwrap_or_else(|e| panic!("{what}: {e:?}"))
            .map(|v| (Vec::new(), v.to_vec())),
    }
}

mod dups;
mod session;

pub use dups::{
    decode_dmove, decode_wmove, DBound, DKey, DMove, DVal, DupMap, Target, WMove, ALL, DUP_NAMES,
};
pub use session::{run_ops, run_ops_from};

/// Runs one `api_ops` input in a fresh scratch directory.
pub fn run(input: &ApiInput) -> ApiStats {
    let dir = crate::scratch_dir();
    let page_size = if input.small_pages { 512 } else { 4096 };
    let ops = &input.ops[..input.ops.len().min(MAX_OPS)];
    run_ops(dir.path(), page_size, ops)
}

impl ApiInput {
    /// Decodes fuzzer bytes: the page-size flag, then operations one after
    /// another (each with `arbitrary`) until the bytes run out or
    /// [`MAX_OPS`]. Unlike `arbitrary_take_rest`, no byte is spent on
    /// "one more?", so random bytes give long sequences too.
    pub fn from_bytes(data: &[u8]) -> ApiInput {
        let mut u = arbitrary::Unstructured::new(data);
        let small_pages = u.arbitrary().unwrap_or(true);
        let mut ops = Vec::new();
        while !u.is_empty() && ops.len() < MAX_OPS {
            match Op::arbitrary(&mut u) {
                Ok(op) => ops.push(op),
                Err(_) => break,
            }
        }
        ApiInput { small_pages, ops }
    }
}

/// Decodes `data` as the fuzz target does ([`ApiInput::from_bytes`]) and
/// runs it.
pub fn run_bytes(data: &[u8]) -> ApiStats {
    run(&ApiInput::from_bytes(data))
}

/// Opens `path` with the options of this harness.
fn open(path: &Path, page_size: u32, write_map: bool, d: Durability) -> Env {
    let o = EnvOptions::new()
        .page_size(page_size)
        .write_map(write_map)
        .durability(d)
        .max_size(1 << 30);
    // SAFETY: the scratch directory is private to this run.
    unsafe { o.open(path) }.unwrap_or_else(|e| panic!("opening the environment: {e:?}"))
}

fn expect_err(r: sarsen::Result<impl std::fmt::Debug>, ok: fn(&Error) -> bool, what: &str) {
    match r {
        Err(e) if ok(&e) => {}
        other => panic!("{what}: expected a specific error, got {other:?}"),
    }
}

/// The range `lo..hi` of `m` as owned pairs.
fn model_range(m: &Map, lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> VecDeque<(Vec<u8>, Vec<u8>)> {
    let inside = |k: &Vec<u8>| {
        (match lo {
            Bound::Unbounded => true,
            Bound::Included(b) => k >= b,
            Bound::Excluded(b) => k > b,
        }) && (match hi {
            Bound::Unbounded => true,
            Bound::Included(b) => k <= b,
            Bound::Excluded(b) => k < b,
        })
    };
    m.iter()
        .filter(|(k, _)| inside(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}
