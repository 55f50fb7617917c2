//! Cases (the databases, their key orders, Sarsen's settings) and their random
//! programs: keys from per-database pools (so operations hit), append
//! sequences above them, values from empty to several overflow pages, write
//! transactions with nested children, read transactions, pinned snapshots,
//! cursor sessions.

use std::fmt;
use std::ops::Deref;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sarsen::KeyOrder;

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

/// One database of a case: the main one (name `None`) or a named one.
// DUPSORT: a third field, the duplicate mode (MDB_DUPSORT with MDB_DUPFIXED,
// MDB_INTEGERDUP, MDB_REVERSEDUP), goes here, with its flags beside `lmdb_flags`.
#[derive(Clone, Debug)]
pub(super) struct DbSpec(pub(super) Option<String>, pub(super) Order);

/// A byte string (key or value) that prints as short hex.
#[derive(Clone, PartialEq, Eq)]
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

/// A value, kept as its length and a pattern seed so listings stay short.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Val(u32, u8);

impl Val {
    pub(super) fn bytes(self) -> Vec<u8> {
        let f = |i: u32| (i.wrapping_mul(0x9E37_79B1) >> 24) as u8 ^ self.1;
        (0..self.0).map(f).collect()
    }
}

impl fmt::Debug for Val {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}/{}", self.0, self.1)
    }
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
    max_key: usize,
    /// Keys each database's operations mostly draw from, so that they hit.
    pools: Vec<Vec<B>>,
    /// Each database's last append-sequence number.
    append_next: Vec<u64>,
    /// Whether other keys may sort above the append sequence (else most
    /// appends would be refused).
    high: bool,
    prog: Vec<Instr>,
}

/// The longest key the case uses: LMDB's limit, or Sarsen's at small pages
/// (`Env::max_key_size`: about half a page less headers; 480 at 1 KiB,
/// asserted at open).
pub(super) fn max_key_for(page_size: u32) -> usize {
    LMDB_MAX_KEY.min((page_size as usize - 20) / 2 - 22)
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
    let dbs = (0..n)
        .map(|i| DbSpec(name(i), Order::ALL[rng.random_range(0..4)]))
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
    let max_key = max_key_for(page_size);
    let (pools, append_next, prog) = (vec![Vec::new(); n], vec![0; n], vec![Instr::BeginWrite]);
    let mut g = Gen {
        rng,
        dbs,
        max_key,
        pools,
        append_next,
        high: false,
        prog,
    };
    g.high = g.rng.random_bool(0.25);
    for db in 0..n {
        for _ in 0..[4, 30, 120, 400][g.rng.random_range(0..4)] {
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
        let order = self.order(db);
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
                        0 if k.len() < self.max_key => k.push(c),
                        1 if k.len() < self.max_key => k.insert(0, c),
                        _ if k.len() > 1 => k.truncate(k.len() - 1),
                        _ => k.push(c),
                    }
                    return k;
                }
                let len = match r.random_range(0..100) {
                    0..60 => r.random_range(1..=6),
                    60..88 => r.random_range(7..=40),
                    _ => r.random_range(41..=self.max_key),
                };
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
        if !self.pools[db].is_empty() && self.rng.random_bool(0.85) {
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

    /// Lengths from 0 to several overflow pages.
    fn val(&mut self) -> Val {
        let r = &mut self.rng;
        let len = match r.random_range(0..100) {
            0..6 => 0,
            6..60 => r.random_range(1..=24),
            60..85 => r.random_range(25..=600),
            85..95 => r.random_range(601..=3000),
            _ => r.random_range(3001..=12000),
        };
        Val(len, r.random())
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
                0..30 => Instr::Put(db, self.key(db), self.val()),
                30..38 => Instr::PutNoOverwrite(db, self.key(db), self.val()),
                38..44 => {
                    self.append_burst(db);
                    continue;
                }
                44..54 => Instr::Get(db, self.key(db)),
                54..68 => Instr::Del(db, self.key(db)),
                68 if self.rng.random_bool(0.15) => Instr::Clear(db),
                69..82 => {
                    self.cursor_session(db);
                    continue;
                }
                82..87 if depth < 3 => {
                    self.prog.push(Instr::BeginNested);
                    self.write_block(depth + 1);
                    self.end(0.55);
                    continue;
                }
                87..89 => Instr::Check,
                _ => Instr::Put(db, self.key(db), self.val()),
            };
            self.prog.push(ins);
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
            let val = self.val();
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
        if self.rng.random_bool(0.15) {
            let (start, step) = match self.rng.random_range(0..4) {
                0 => (Move::First, Move::Next),
                1 => (Move::Last, Move::Prev),
                2 => (Move::SetRange(self.key(db)), Move::Next),
                _ => (Move::SetRange(self.key(db)), Move::Prev),
            };
            self.prog.push(Instr::Move(start));
            for _ in 0..self.rng.random_range(20..=150) {
                let m = if self.rng.random_bool(0.05) {
                    Move::Current
                } else {
                    step.clone()
                };
                self.prog.push(Instr::Move(m));
            }
        }
        for _ in 0..self.rng.random_range(1..=16) {
            let m = match self.rng.random_range(0..100) {
                0..10 => Move::First,
                10..20 => Move::Last,
                20..45 => Move::Next,
                45..65 => Move::Prev,
                65..73 => Move::SetRange(self.key(db)),
                73..77 => Move::SetRange(self.append_key_peek(db)),
                77..83 => Move::Set(self.key(db)),
                83..89 => Move::SetKey(self.key(db)),
                _ => Move::Current,
            };
            self.prog.push(Instr::Move(m));
        }
        self.prog.push(Instr::CursorClose);
    }

    /// A key near the end of the append sequence, for seeks past the end.
    fn append_key_peek(&mut self, db: usize) -> B {
        let saved = self.append_next[db];
        let k = self.append_key(db);
        self.append_next[db] = saved.saturating_sub(self.rng.random_range(0..3));
        k
    }
}
