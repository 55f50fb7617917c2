//! Cases (the databases, their key orders and duplicate modes, Sarsen's
//! settings) and their random programs: keys from per-database pools (so
//! operations hit), append sequences above them, values from empty to several
//! overflow pages, write transactions with nested children, read
//! transactions, pinned snapshots, cursor sessions. DUPSORT databases get
//! small key spaces and per-key value spaces (hundreds of values for hot
//! keys), bursts of puts into one key and sweeps deleting most of its values,
//! so that Sarsen's values move between a key's inline list and a sub-tree
//! and back.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Deref;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use sarsen::{DbOptions, KeyOrder};

use super::{lmdb, Instr, Move, LMDB_MAX_KEY};

/// A database's key order, in both engines' terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Order {
    Bytewise,
    Reverse,
    U32,
    U64,
}

impl Order {
    const ALL: [Order; 4] = [Order::Bytewise, Order::Reverse, Order::U32, Order::U64];

    pub(super) fn sarsen(self) -> KeyOrder {
        match self {
            Order::Bytewise => KeyOrder::Bytewise,
            Order::Reverse => KeyOrder::ReverseBytewise,
            Order::U32 => KeyOrder::U32,
            Order::U64 => KeyOrder::U64,
        }
    }

    pub(super) fn lmdb_flags(self) -> u32 {
        match self {
            Order::Bytewise => 0,
            Order::Reverse => lmdb::MDB_REVERSEKEY,
            Order::U32 | Order::U64 => lmdb::MDB_INTEGERKEY,
        }
    }
}

/// The duplicate mode of a DUPSORT database: the order of a key's values
/// (`MDB_DUPSORT`; `MDB_REVERSEDUP`; `MDB_INTEGERDUP` with 4- or 8-byte
/// native values) and whether all values of a key have one size
/// (`MDB_DUPFIXED`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Dups {
    pub(super) order: Order,
    pub(super) fixed: bool,
}

impl Dups {
    /// `a` against `b` in the order of values.
    fn cmp(self, a: &[u8], b: &[u8]) -> Ordering {
        let int = |x: &[u8]| {
            let mut w = [0u8; 8];
            w[..x.len()].copy_from_slice(x);
            u64::from_ne_bytes(w)
        };
        match self.order {
            Order::Bytewise => a.cmp(b),
            Order::Reverse => a.iter().rev().cmp(b.iter().rev()),
            Order::U32 | Order::U64 if cfg!(target_endian = "little") => int(a).cmp(&int(b)),
            Order::U32 | Order::U64 => a.cmp(b),
        }
    }
}

/// One database of a case: the main one (name `None`) or a named one, its
/// key order and its duplicate mode (`None`: unique keys).
#[derive(Clone, Debug)]
pub(super) struct DbSpec(
    pub(super) Option<String>,
    pub(super) Order,
    pub(super) Option<Dups>,
);

impl DbSpec {
    /// `mdb_dbi_open`'s flags (without `MDB_CREATE`).
    pub(super) fn lmdb_flags(&self) -> u32 {
        let Some(d) = self.2 else {
            return self.1.lmdb_flags();
        };
        let fixed = if d.fixed { lmdb::MDB_DUPFIXED } else { 0 };
        let order = match d.order {
            Order::Bytewise => 0,
            Order::Reverse => lmdb::MDB_REVERSEDUP,
            Order::U32 | Order::U64 => lmdb::MDB_INTEGERDUP,
        };
        self.1.lmdb_flags() | lmdb::MDB_DUPSORT | fixed | order
    }

    /// Sarsen's options for the same database.
    pub(super) fn sarsen(&self) -> DbOptions {
        let o = DbOptions::new().key_order(self.1.sarsen());
        match self.2 {
            None => o,
            Some(d) if d.fixed => o.dup_sort(d.order.sarsen()).dup_fixed(),
            Some(d) => o.dup_sort(d.order.sarsen()),
        }
    }
}

/// A byte string (key or value) that prints as short hex.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct B(pub(super) Vec<u8>);

impl Deref for B {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for B {
    /// Whole up to 20 bytes, else the ends, the length and a hash.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = |s: &[u8]| s.iter().map(|x| format!("{x:02x}")).collect::<String>();
        let b = &self.0;
        if b.len() <= 20 {
            return write!(f, "'{}'", h(b));
        }
        let fnv = b.iter().fold(0xcbf2_9ce4_8422_2325u64, |a, &x| {
            (a ^ u64::from(x)).wrapping_mul(0x100_0000_01b3)
        });
        let (head, tail) = (h(&b[..8]), h(&b[b.len() - 4..]));
        write!(f, "'{head}..{tail}'({}B #{:08x})", b.len(), fnv as u32)
    }
}

/// A value: a length and a pattern seed (so listings stay short), or the
/// bytes themselves (a DUPSORT database's values, which must sort and hit).
#[derive(Clone, PartialEq, Eq)]
pub(super) enum Val {
    Pat(u32, u8),
    Raw(B),
}

impl Val {
    pub(super) fn bytes(&self) -> Vec<u8> {
        match self {
            Val::Pat(len, seed) => {
                let f = |i: u32| (i.wrapping_mul(0x9E37_79B1) >> 24) as u8 ^ seed;
                (0..*len).map(f).collect()
            }
            Val::Raw(b) => b.0.clone(),
        }
    }
}

impl fmt::Debug for Val {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Val::Pat(len, seed) => write!(f, "v{len}/{seed}"),
            Val::Raw(b) => write!(f, "{b:?}"),
        }
    }
}

/// splitmix64: case numbers into seeds, value indices into bytes.
pub(super) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a of a key: its value space and, under DUPFIXED, its value size.
fn khash(k: &[u8]) -> u64 {
    let h = k.iter().fold(0xcbf2_9ce4_8422_2325u64, |a, &x| {
        (a ^ u64::from(x)).wrapping_mul(0x100_0000_01b3)
    });
    mix(h)
}

/// A generated case: the environments' settings and the program.
#[derive(Clone, Debug)]
pub(super) struct Case {
    pub(super) seed: u64,
    /// Sarsen's page size (LMDB uses the OS page, 4 KiB).
    pub(super) page_size: u32,
    pub(super) write_map: bool,
    pub(super) dbs: Vec<DbSpec>,
    pub(super) prog: Vec<Instr>,
}

const ALPHABET: [u8; 8] = [0x00, 0x01, b'a', b'b', 0x7f, 0x80, 0xfe, 0xff];
const U32_EDGES: [u32; 8] = [
    0,
    1,
    0xff,
    0x100,
    0xffff,
    0x7fff_ffff,
    0x8000_0000,
    u32::MAX,
];

struct Gen {
    rng: SmallRng,
    dbs: Vec<DbSpec>,
    page_size: u32,
    /// Keys each database's operations mostly draw from, so that they hit.
    pools: Vec<Vec<B>>,
    /// Each database's last append-sequence number.
    append_next: Vec<u64>,
    /// Whether other keys may sort above the append sequence (else most
    /// appends would be refused).
    high: bool,
    /// Per DUPSORT database: how its keys' values are drawn.
    vals: Vec<Option<DupVals>>,
    /// DUPSORT: the values (as indices) the program has put into each key
    /// and not deleted since, ignoring aborts: so that deletes and
    /// `GET_BOTH` hit more often than at random.
    put: BTreeMap<(usize, B), BTreeSet<u32>>,
    prog: Vec<Instr>,
}

/// The values of a DUPSORT database's keys: value `i` of a key is a fixed
/// function of the key and `i`, so that puts, deletes and `GET_BOTH` hit.
struct DupVals {
    /// How many values a hot key draws from (a third of the keys are hot;
    /// the others draw from a few).
    span: u32,
    /// DUPFIXED (not integer): the size of every value. LMDB requires one
    /// size in the database (Sarsen only per key), so its keys are kept short
    /// enough for it to fit beside them.
    size: usize,
}

/// Sarsen's largest node plus its slot (`Layout::node_max`).
fn node_max(page_size: u32) -> usize {
    (page_size as usize - 20) / 2
}

/// The longest key the case uses: LMDB's limit, or Sarsen's at small pages
/// (`Env::max_key_size`: about half a page less headers; 480 at 1 KiB,
/// asserted at open).
pub(super) fn max_key_for(page_size: u32) -> usize {
    LMDB_MAX_KEY.min(node_max(page_size) - 22)
}

/// The longest key of a DUPSORT database in the programs (Sarsen's limit,
/// `node_max - 74`, is 428 at 1 KiB).
fn max_dup_key(page_size: u32) -> usize {
    400.min(node_max(page_size) - 74)
}

/// The longest value of a DUPSORT database with a key of `klen` bytes:
/// LMDB's 511 (its key limit), Sarsen's key limit, and Sarsen's rule that
/// key and value fit inline in one node.
fn max_dup_val(page_size: u32, klen: usize) -> usize {
    max_key_for(page_size).min(node_max(page_size) - 10 - klen)
}

pub(super) fn gen_case(seed: u64) -> Case {
    let mut rng = SmallRng::seed_from_u64(seed);
    let page_size = [1024, 2048, 4096, 4096][rng.random_range(0..4)];
    let write_map = rng.random_bool(0.3);
    // The main database alone, or one to four named ones.
    let main_only = rng.random_bool(0.3);
    let n = if main_only {
        1
    } else {
        rng.random_range(1..=4)
    };
    let name = |i| (!main_only).then(|| format!("db{i}"));
    // Half the cases have DUPSORT databases, in any duplicate mode.
    let dup_case = rng.random_bool(0.5);
    let dbs = (0..n)
        .map(|i| {
            let order = Order::ALL[rng.random_range(0..4)];
            let dups = (dup_case && (i == 0 || rng.random_bool(0.5))).then(|| {
                let order = Order::ALL[rng.random_range(0..4)];
                let int = matches!(order, Order::U32 | Order::U64);
                let fixed = rng.random_bool(if int { 0.6 } else { 0.35 });
                Dups { order, fixed }
            });
            DbSpec(name(i), order, dups)
        })
        .collect();
    gen_program(seed, rng, page_size, write_map, dbs)
}

pub(super) fn gen_program(
    seed: u64,
    rng: SmallRng,
    page_size: u32,
    wmap: bool,
    dbs: Vec<DbSpec>,
) -> Case {
    let n = dbs.len();
    let (pools, append_next, prog) = (vec![Vec::new(); n], vec![0; n], vec![Instr::BeginWrite]);
    let mut g = Gen {
        rng,
        dbs,
        page_size,
        pools,
        append_next,
        high: false,
        vals: Vec::new(),
        put: BTreeMap::new(),
        prog,
    };
    g.high = g.rng.random_bool(0.25);
    for db in 0..n {
        let dups = g.dbs[db].2;
        let vals = dups.map(|d| DupVals {
            span: [8, 40, 300, 900][g.rng.random_range(0..4)],
            size: {
                // Not 1: LMDB mishandles 1-byte DUPFIXED values (see the
                // module doc). One size for the database, as LMDB requires.
                let all = [2, 3, 4, 7, 8, 16, 33, 100, 250, 511];
                let s = all[g.rng.random_range(0..all.len())];
                // Room for a key of 10 bytes at least.
                let fits = s.min(max_dup_val(page_size, 10));
                if d.fixed {
                    fits
                } else {
                    0
                }
            },
        });
        g.vals.push(vals);
        // DUPSORT databases: few keys, so that keys get many values.
        let sizes = if dups.is_some() {
            [1, 3, 8, 40]
        } else {
            [4, 30, 120, 400]
        };
        for _ in 0..sizes[g.rng.random_range(0..4)] {
            let k = g.fresh_key(db);
            g.pools[db].push(k);
        }
        g.prog.push(Instr::CreateDb(db));
    }
    g.prog.extend([Instr::Commit, Instr::Check]);
    // Top-level transactions left under a pinned snapshot.
    let mut pinned = 0;
    for _ in 0..g.rng.random_range(10..=40) {
        if pinned == 0 && g.rng.random_bool(0.05) {
            g.prog.extend([Instr::Reopen, Instr::Check]);
        }
        if pinned == 0 && g.rng.random_bool(0.15) {
            g.prog.push(Instr::Pin);
            pinned = g.rng.random_range(1..=6);
        }
        if g.rng.random_bool(0.25) {
            g.prog.push(Instr::BeginRead);
            for _ in 0..g.rng.random_range(1..=8) {
                g.read_op();
            }
            g.prog.push(Instr::Abort);
        } else {
            g.prog.push(Instr::BeginWrite);
            g.write_block(0);
            g.end(0.75);
        }
        if pinned > 0 {
            g.prog.push(Instr::CheckPinned);
            pinned -= 1;
            if pinned == 0 {
                g.prog.push(Instr::Unpin);
            }
        }
    }
    let (dbs, prog) = (g.dbs, g.prog);
    Case {
        seed,
        page_size,
        write_map: wmap,
        dbs,
        prog,
    }
}

impl Gen {
    fn order(&self, db: usize) -> Order {
        self.dbs[db].1
    }

    fn dups(&self, db: usize) -> Option<Dups> {
        self.dbs[db].2
    }

    fn max_key(&self, db: usize) -> usize {
        match (self.dups(db), &self.vals[db]) {
            (Some(d), Some(v)) if d.fixed && v.size > 0 => {
                // Key and value within Sarsen's node (`max_dup_val`).
                let room = node_max(self.page_size) - 10 - v.size;
                max_dup_key(self.page_size).min(room)
            }
            (Some(_), _) => max_dup_key(self.page_size),
            (None, _) => max_key_for(self.page_size),
        }
    }

    /// A key not drawn from the pool, below the append sequence unless `high`.
    fn fresh_key(&mut self, db: usize) -> B {
        let mut k = self.any_key(db);
        let msb = if cfg!(target_endian = "little") {
            k.len() - 1
        } else {
            0
        };
        let (i, above) = match self.order(db) {
            Order::Bytewise => (0, k.starts_with(&[0xff, 0xff])),
            Order::Reverse => (k.len() - 1, k.ends_with(&[0xff, 0xff])),
            Order::U32 | Order::U64 => (msb, k[msb] >= 0xf0),
        };
        if above && !self.high {
            k[i] = 0xef;
        }
        B(k)
    }

    /// Short keys over a small alphabet (shared prefixes and suffixes), some
    /// long ones, or a variation of a pool key; integers near edges, small, or
    /// anywhere.
    fn any_key(&mut self, db: usize) -> Vec<u8> {
        let (order, max_key) = (self.order(db), self.max_key(db));
        let r = &mut self.rng;
        let edge = U32_EDGES[r.random_range(0..U32_EDGES.len())];
        match order {
            Order::U32 => match r.random_range(0..10) {
                0..4 => r.random_range(0..64u32),
                4..7 => r.random(),
                _ => edge,
            }
            .to_ne_bytes()
            .to_vec(),
            Order::U64 => match r.random_range(0..10) {
                0..4 => r.random_range(0..64),
                4..6 => r.random(),
                6..8 => u64::from(r.random_range(0..4u32)) << r.random_range(8..64),
                _ => u64::from(edge) << 32,
            }
            .to_ne_bytes()
            .to_vec(),
            Order::Bytewise | Order::Reverse => {
                let pool = &self.pools[db];
                if !pool.is_empty() && r.random_bool(0.2) {
                    let mut k = pool[r.random_range(0..pool.len())].0.clone();
                    let c = ALPHABET[r.random_range(0..8)];
                    match r.random_range(0..3) {
                        0 if k.len() < max_key => k.push(c),
                        1 if k.len() < max_key => k.insert(0, c),
                        _ if k.len() > 1 => k.truncate(k.len() - 1),
                        _ => k.push(c),
                    }
                    return k;
                }
                let len = match r.random_range(0..100) {
                    0..60 => r.random_range(1..=6),
                    60..88 => r.random_range(7..=40),
                    _ => r.random_range(41..=max_key.max(41)),
                };
                // DUPFIXED with large values keeps keys short.
                let len = len.min(max_key);
                let mut byte = || {
                    if r.random_bool(0.75) {
                        ALPHABET[r.random_range(0..8)]
                    } else {
                        r.random()
                    }
                };
                (0..len).map(|_| byte()).collect()
            }
        }
    }

    /// A key for an operation: mostly from the pool.
    fn key(&mut self, db: usize) -> B {
        let p = if self.dups(db).is_some() { 0.95 } else { 0.85 };
        if !self.pools[db].is_empty() && self.rng.random_bool(p) {
            return self.pools[db][self.rng.random_range(0..self.pools[db].len())].clone();
        }
        let k = self.fresh_key(db);
        if self.rng.random_bool(0.5) {
            self.pools[db].push(k.clone());
        }
        k
    }

    /// The next key of the database's append sequence, above every key of
    /// `fresh_key` in its order (unless `high`).
    fn append_key(&mut self, db: usize) -> B {
        self.append_next[db] += self.rng.random_range(1..=3);
        let n = self.append_next[db];
        let k = B(match self.order(db) {
            Order::Bytewise => [&[0xff, 0xff][..], &(n as u32).to_be_bytes()].concat(),
            Order::Reverse => [&(n as u32).to_le_bytes()[..], &[0xff, 0xff]].concat(),
            Order::U32 => (0xf000_0000u32 + n as u32).to_ne_bytes().to_vec(),
            Order::U64 => ((0xfu64 << 60) + n).to_ne_bytes().to_vec(),
        });
        if self.rng.random_bool(0.3) {
            self.pools[db].push(k.clone());
        }
        k
    }

    /// A value for `key` in `db`: of the key's value space in a DUPSORT
    /// database (often one put before), else of any length from 0 to
    /// several overflow pages.
    fn val(&mut self, db: usize, key: &B) -> Val {
        if self.dups(db).is_some() {
            let i = self.dup_idx(db, key);
            return self.dup_val(db, key, i);
        }
        let r = &mut self.rng;
        let len = match r.random_range(0..100) {
            0..6 => 0,
            6..60 => r.random_range(1..=24),
            60..85 => r.random_range(25..=600),
            85..95 => r.random_range(601..=3000),
            _ => r.random_range(3001..=12000),
        };
        Val::Pat(len, r.random())
    }

    /// The index of a value of `key` in the DUPSORT database `db`: one put
    /// before (two times in five, if any), else any of its span.
    fn dup_idx(&mut self, db: usize, key: &B) -> u32 {
        let span = self.span(db, key);
        let put = self.put.get(&(db, key.clone()));
        match put {
            Some(p) if !p.is_empty() && self.rng.random_bool(0.4) => {
                let n = self.rng.random_range(0..p.len());
                *p.iter().nth(n).expect("in range")
            }
            _ => self.rng.random_range(0..span),
        }
    }

    /// A value for a put of `key` into `db`, noted as put if DUPSORT.
    fn put_val(&mut self, db: usize, key: &B) -> Val {
        if self.dups(db).is_none() {
            return self.val(db, key);
        }
        let i = self.rng.random_range(0..self.span(db, key));
        self.put.entry((db, key.clone())).or_default().insert(i);
        self.dup_val(db, key, i)
    }

    /// How many values `key` of the DUPSORT database `db` draws from: the
    /// database's span for a hot key (a third), a few for the others.
    fn span(&self, db: usize, key: &[u8]) -> u32 {
        let span = self.vals[db].as_ref().expect("DUPSORT").span;
        let h = khash(key);
        if h.is_multiple_of(3) {
            span
        } else {
            span.min(2 + (h >> 8) as u32 % 7)
        }
    }

    /// Value `i` of `key` in the DUPSORT database `db`. Never empty: LMDB
    /// cannot keep an empty value beside others (see the module doc).
    fn dup_val(&self, db: usize, key: &[u8], i: u32) -> Val {
        let d = self.dups(db).expect("DUPSORT");
        let vals = self.vals[db].as_ref().expect("DUPSORT");
        let h = mix(u64::from(i) ^ ((db as u64) << 40));
        let edge = u64::from(U32_EDGES[(h % 8) as usize]);
        // Small, near an edge, or anywhere.
        let int = match i % 4 {
            0 | 1 => u64::from(i),
            2 => edge.wrapping_add((h >> 8) % 3),
            _ => h >> 16,
        };
        let bytes = match d.order {
            Order::U32 => (int as u32).to_ne_bytes().to_vec(),
            Order::U64 => match i % 4 {
                2 => ((edge << 32) | ((h >> 8) % 3)).to_ne_bytes().to_vec(),
                _ => int.to_ne_bytes().to_vec(),
            },
            Order::Bytewise | Order::Reverse => {
                let max = max_dup_val(self.page_size, key.len());
                // Fixed: the key's size. Else groups of three values share a
                // byte stream and differ in length (prefixes of each other).
                let (len, stream) = if d.fixed {
                    (vals.size, h)
                } else {
                    let l = match mix(h) % 100 {
                        0..45 => 1 + h % 4,
                        45..80 => 5 + h % 12,
                        80..95 => 17 + h % 48,
                        _ => 65 + h % 447,
                    };
                    (l as usize, mix(u64::from(i / 3) ^ ((db as u64) << 40)))
                };
                let byte = |j: u64| {
                    let x = mix(stream ^ j);
                    if !x.is_multiple_of(4) {
                        ALPHABET[(x >> 8) as usize % 8]
                    } else {
                        (x >> 16) as u8
                    }
                };
                let mut v: Vec<u8> = (0..len.clamp(1, max) as u64).map(byte).collect();
                if d.order == Order::Reverse {
                    v.reverse();
                }
                v
            }
        };
        Val::Raw(B(bytes))
    }

    /// `Commit` with probability `p`, else `Abort`, then a `Check`.
    fn end(&mut self, p: f64) {
        let end = if self.rng.random_bool(p) {
            Instr::Commit
        } else {
            Instr::Abort
        };
        self.prog.extend([end, Instr::Check]);
    }

    /// The body of a write transaction at `depth` (0: outermost).
    fn write_block(&mut self, depth: usize) {
        for _ in 0..self.rng.random_range(0..=if depth == 0 { 60 } else { 25 }) {
            let db = self.rng.random_range(0..self.dbs.len());
            let ins = match self.rng.random_range(0..100) {
                0..68 if self.dups(db).is_some() => {
                    self.dup_write(db);
                    continue;
                }
                0..30 => {
                    let k = self.key(db);
                    Instr::Put(db, k.clone(), self.put_val(db, &k))
                }
                30..38 => {
                    let k = self.key(db);
                    Instr::PutNoOverwrite(db, k.clone(), self.put_val(db, &k))
                }
                38..44 => {
                    self.append_burst(db);
                    continue;
                }
                44..54 => Instr::Get(db, self.key(db)),
                54..68 => Instr::Del(db, self.key(db)),
                68 if self.rng.random_bool(0.15) => {
                    self.put.retain(|(d, _), _| *d != db);
                    Instr::Clear(db)
                }
                69..82 => {
                    if self.rng.random_bool(0.4) {
                        self.write_cursor_session(db);
                    } else {
                        self.cursor_session(db);
                    }
                    continue;
                }
                82..87 if depth < 3 => {
                    self.prog.push(Instr::BeginNested);
                    self.write_block(depth + 1);
                    self.end(0.55);
                    continue;
                }
                87..89 => Instr::Check,
                _ if self.dups(db).is_some() => {
                    self.dup_write(db);
                    continue;
                }
                _ => {
                    let k = self.key(db);
                    Instr::Put(db, k.clone(), self.put_val(db, &k))
                }
            };
            self.prog.push(ins);
        }
    }

    /// A write to the DUPSORT database `db`: mostly single pairs, now and
    /// then a burst of puts into one key, a sweep deleting most of a key's
    /// values, or appends.
    fn dup_write(&mut self, db: usize) {
        let k = self.key(db);
        let ins = match self.rng.random_range(0..100) {
            0..34 => Instr::Put(db, k.clone(), self.put_val(db, &k)),
            34..44 => Instr::PutNoDupData(db, k.clone(), self.put_val(db, &k)),
            44..49 => Instr::PutNoOverwrite(db, k.clone(), self.put_val(db, &k)),
            49..58 => Instr::Get(db, k),
            58..63 => {
                self.put.remove(&(db, k.clone()));
                Instr::Del(db, k)
            }
            63..86 => {
                let i = self.dup_idx(db, &k);
                if let Some(p) = self.put.get_mut(&(db, k.clone())) {
                    p.remove(&i);
                }
                Instr::DelData(db, k.clone(), self.dup_val(db, &k, i))
            }
            86..91 => return self.dup_burst(db),
            91..94 => return self.dup_sweep(db),
            94..97 => return self.append_dup_burst(db),
            _ => return self.append_burst(db),
        };
        self.prog.push(ins);
    }

    /// A hot key of the DUPSORT database `db` (any key if none is hot).
    fn hot_key(&mut self, db: usize) -> B {
        let span = self.vals[db].as_ref().expect("DUPSORT").span;
        let pool = &self.pools[db];
        let hot: Vec<usize> = (0..pool.len())
            .filter(|&i| self.span(db, &pool[i]) == span)
            .collect();
        match hot.len() {
            0 => self.key(db),
            n => self.pools[db][hot[self.rng.random_range(0..n)]].clone(),
        }
    }

    /// Many puts into one key (hundreds when its span allows), which turns
    /// its values into a sub-tree.
    fn dup_burst(&mut self, db: usize) {
        let k = self.hot_key(db);
        let span = self.span(db, &k);
        let n = self.rng.random_range(span.div_ceil(4)..=span.min(400));
        for _ in 0..n {
            let v = self.put_val(db, &k);
            let ins = if self.rng.random_bool(0.8) {
                Instr::Put(db, k.clone(), v)
            } else {
                Instr::PutNoDupData(db, k.clone(), v)
            };
            self.prog.push(ins);
        }
    }

    /// Deletes most of one key's values (those put, and a few others), in
    /// random order, which moves them back from a sub-tree to a list and to
    /// a single value.
    fn dup_sweep(&mut self, db: usize) {
        let k = self.hot_key(db);
        let put = self.put.remove(&(db, k.clone())).unwrap_or_default();
        let span = self.span(db, &k);
        let others: Vec<u32> = (0..span.div_ceil(10))
            .map(|_| self.rng.random_range(0..span))
            .collect();
        let mut idx: Vec<u32> = put.into_iter().chain(others).collect();
        idx.shuffle(&mut self.rng);
        let keep = [0.0, 0.03, 0.15][self.rng.random_range(0..3)];
        for i in idx {
            if !self.rng.random_bool(keep) {
                let v = self.dup_val(db, &k, i);
                self.prog.push(Instr::DelData(db, k.clone(), v));
            }
        }
    }

    /// `MDB_APPENDDUP`s of ascending values, into a new last key or a pool
    /// key, now and then one out of order.
    fn append_dup_burst(&mut self, db: usize) {
        let d = self.dups(db).expect("DUPSORT");
        let k = if self.rng.random_bool(0.7) {
            self.append_key(db)
        } else {
            self.key(db)
        };
        let n = self.rng.random_range(1..=self.span(db, &k).min(150));
        let mut vs: Vec<Vec<u8>> = (0..n).map(|_| self.put_val(db, &k).bytes()).collect();
        vs.sort_by(|a, b| d.cmp(a, b));
        if self.rng.random_bool(0.8) {
            vs.dedup();
        }
        for v in vs {
            let v = if self.rng.random_bool(0.05) {
                self.put_val(db, &k)
            } else {
                Val::Raw(B(v))
            };
            self.prog.push(Instr::AppendDup(db, k.clone(), v));
        }
    }

    /// Appends of increasing keys, now and then one out of order.
    fn append_burst(&mut self, db: usize) {
        let long = self.rng.random_bool(0.12);
        for _ in 0..self.rng.random_range(if long { 40..=150 } else { 1..=12 }) {
            let key = if self.rng.random_bool(0.1) {
                self.key(db)
            } else {
                self.append_key(db)
            };
            let val = self.put_val(db, &key);
            self.prog.push(Instr::Append(db, key, val));
        }
    }

    fn read_op(&mut self) {
        let db = self.rng.random_range(0..self.dbs.len());
        match self.rng.random_range(0..10) {
            0..4 => {
                let ins = Instr::Get(db, self.key(db));
                self.prog.push(ins);
            }
            4..9 => self.cursor_session(db),
            _ => self.prog.push(Instr::Check),
        }
    }

    /// Random moves, sometimes after a walk of many steps one way.
    fn cursor_session(&mut self, db: usize) {
        self.prog.push(Instr::CursorOpen(db));
        let dups = self.dups(db);
        if self.rng.random_bool(0.15) {
            let (start, step) = match self.rng.random_range(0..if dups.is_some() { 8 } else { 4 }) {
                0 => (vec![Move::First], Move::Next),
                1 => (vec![Move::Last], Move::Prev),
                2 => (vec![Move::SetRange(self.key(db))], Move::Next),
                3 => (vec![Move::SetRange(self.key(db))], Move::Prev),
                4 => (vec![Move::SetKey(self.hot_key(db))], Move::NextDup),
                5 => (
                    vec![Move::SetKey(self.hot_key(db)), Move::LastDup],
                    Move::PrevDup,
                ),
                6 => (vec![Move::First], Move::NextNoDup),
                _ => (vec![Move::Last], Move::PrevNoDup),
            };
            self.prog.extend(start.into_iter().map(Instr::Move));
            for _ in 0..self.rng.random_range(20..=150) {
                let m = match self.rng.random_range(0..20) {
                    0 => Move::Current,
                    1 if dups.is_some() => Move::Count,
                    _ => step.clone(),
                };
                self.prog.push(Instr::Move(m));
            }
        }
        for _ in 0..self.rng.random_range(1..=16) {
            let m = match dups {
                None => self.plain_move(db),
                Some(d) => self.dup_move(db, d),
            };
            self.prog.push(Instr::Move(m));
        }
        self.prog.push(Instr::CursorClose);
    }

    /// Writes through a cursor among its moves, sometimes in a walk that
    /// deletes or rewrites pairs as it goes. The writes at the cursor run
    /// only where both engines stand on one pair (see the executors).
    fn write_cursor_session(&mut self, db: usize) {
        self.prog.push(Instr::WCursorOpen(db));
        let dups = self.dups(db);
        if self.rng.random_bool(0.35) {
            let (start, step) = match self.rng.random_range(0..3) {
                0 => (Move::First, Move::Next),
                1 => (Move::Last, Move::Prev),
                _ => (Move::SetRange(self.key(db)), Move::Next),
            };
            self.prog.push(Instr::Move(start));
            let (del, put) = ([0.1, 0.3, 0.7][self.rng.random_range(0..3)], 0.15);
            for _ in 0..self.rng.random_range(5..=120) {
                let r = self.rng.random::<f64>();
                if r < del {
                    let key = dups.is_some() && self.rng.random_bool(0.15);
                    self.prog
                        .push(if key { Instr::CurDelKey } else { Instr::CurDel });
                } else if r < del + put {
                    let v = self.current_val(db);
                    self.prog.push(Instr::CurPutCurrent(v));
                }
                self.prog.push(Instr::Move(step.clone()));
            }
        }
        for _ in 0..self.rng.random_range(1..=16) {
            let ins = match self.rng.random_range(0..100) {
                0..10 => {
                    let k = self.key(db);
                    Instr::CurPut(k.clone(), self.put_val(db, &k))
                }
                10..18 => Instr::CurPutCurrent(self.current_val(db)),
                18..26 => Instr::CurDel,
                26..30 if dups.is_some() => Instr::CurDelKey,
                _ => Instr::Move(match dups {
                    None => self.plain_move(db),
                    // No FIRST_DUP, LAST_DUP or GET_MULTIPLE on a write cursor.
                    Some(d) => loop {
                        let m = self.dup_move(db, d);
                        if !matches!(m, Move::FirstDup | Move::LastDup | Move::Multiple) {
                            break m;
                        }
                    },
                }),
            };
            self.prog.push(ins);
        }
        self.prog.push(Instr::CursorClose);
    }

    /// The value for `MDB_CURRENT`: on DUPSORT the one there (it must keep
    /// its place), else mostly a new one.
    fn current_val(&mut self, db: usize) -> Option<Val> {
        if self.dups(db).is_some() || self.rng.random_bool(0.1) {
            return None;
        }
        Some(self.val(db, &B(Vec::new())))
    }

    fn plain_move(&mut self, db: usize) -> Move {
        match self.rng.random_range(0..100) {
            0..10 => Move::First,
            10..20 => Move::Last,
            20..45 => Move::Next,
            45..65 => Move::Prev,
            65..73 => Move::SetRange(self.key(db)),
            73..77 => Move::SetRange(self.append_key_peek(db)),
            77..83 => Move::Set(self.key(db)),
            83..89 => Move::SetKey(self.key(db)),
            _ => Move::Current,
        }
    }

    fn dup_move(&mut self, db: usize, d: Dups) -> Move {
        let k = self.key(db);
        match self.rng.random_range(0..100) {
            0..6 => Move::First,
            6..12 => Move::Last,
            12..25 => Move::Next,
            25..34 => Move::Prev,
            34..43 => Move::NextDup,
            43..49 => Move::PrevDup,
            49..52 => Move::FirstDup,
            52..55 => Move::LastDup,
            55..61 => Move::NextNoDup,
            61..66 => Move::PrevNoDup,
            66..70 => Move::SetRange(k),
            70..72 => Move::SetRange(self.append_key_peek(db)),
            72..74 => Move::Set(k),
            74..77 => Move::SetKey(k),
            77..83 => {
                let v = self.val(db, &k);
                Move::GetBoth(k, v)
            }
            83..89 => {
                let v = self.val(db, &k);
                Move::GetBothRange(k, v)
            }
            89..94 => Move::Count,
            94..97 if d.fixed => Move::Multiple,
            _ => Move::Current,
        }
    }

    /// A key near the end of the append sequence, for seeks past the end.
    fn append_key_peek(&mut self, db: usize) -> B {
        let saved = self.append_next[db];
        let k = self.append_key(db);
        self.append_next[db] = saved.saturating_sub(self.rng.random_range(0..3));
        k
    }
}
