//! Differential test: Sarsen against real LMDB (`lmdb-master-sys`, LMDB 0.9.70 of
//! the mdb.master branch) on the same seeded random programs, for the features
//! both have today.
//!
//! A program is a flat list of instructions ([`Instr`]): transactions (write, read,
//! nested write children up to depth 3, each committed or aborted), `put`
//! (`mdb_put` flags 0), `put_no_overwrite` (`MDB_NOOVERWRITE`), `append`
//! (`MDB_APPEND`), `get`, `delete`, `clear_db` (`mdb_drop(.., 0)`), cursor sessions
//! (`MDB_FIRST`/`LAST`/`NEXT`/`PREV`/`SET_RANGE`/`SET`/`SET_KEY`/`GET_CURRENT`) in
//! read and write transactions, a read transaction held across later write
//! transactions (a pinned snapshot), and reopening both environments. Databases are
//! either the main one alone or one to four named ones, each in one key order:
//! bytewise, reverse (`MDB_REVERSEKEY`), or native `u32`/`u64` (`MDB_INTEGERKEY`
//! with 4- or 8-byte keys). Keys are 1..=511 bytes (LMDB's default limit; 480 when
//! Sarsen's page is 1 KiB), values 0..=12000 bytes (overflow pages in both).
//! Each engine runs the program alone and records one [`Outcome`] per
//! instruction; the two lists must be equal. After every transaction (nested ones
//! too, in the parent's view) a `Check` records every database in full, forward
//! and backward, and its entry count (`mdb_stat`'s `ms_entries`, Sarsen's
//! `stat(db).entries`). Sarsen's page size (1, 2 or 4 KiB) and write-map mode vary
//! by case: LMDB's 4 KiB tree has other shapes, the results must not.
//!
//! Where the two legitimately differ (the cursor cases and empty keys are pinned
//! by `documented_differences`):
//! - A move that fails at an end (`NEXT` past the last entry, `PREV` before the
//!   first): LMDB's cursor stays on that last (first) entry, so `GET_CURRENT`
//!   returns it and the opposite move returns its neighbour; Sarsen's stands past
//!   the end, `current()` is `None`, and the opposite move returns the end entry.
//!   After a missed `MDB_SET`/`SET_KEY` LMDB's cursor is at the insertion point
//!   inside a leaf (possibly past its last node), Sarsen's on the next larger key.
//!   So after such a failed move, `NEXT`, `PREV` and `GET_CURRENT` are run but not
//!   compared (`Outcome::Unchecked`) until a `FIRST`, `LAST` or `SET*` positions
//!   the cursor again. A `SET_RANGE` past the last key is defined in both (next:
//!   none, prev: the last entry, current: none) and compared.
//! - `GET_CURRENT` on a cursor never positioned: LMDB `EINVAL`, Sarsen `None`;
//!   compared as "no entry".
//! - Empty keys: LMDB refuses them (`MDB_BAD_VALSIZE`), Sarsen stores them in a
//!   bytewise database. Programs use keys of at least one byte.
//! - `MDB_APPEND` of a key not above the last: `MDB_KEYEXIST` vs
//!   `Error::KeyNotGreater`; `MDB_NOOVERWRITE` of a present key: `MDB_KEYEXIST`
//!   with the value vs `Some(value)`. Each pair is compared as one outcome.
//! - LMDB keeps the named databases' records in the main database, so a case
//!   uses either the main database alone or named ones only.
//!
//! Knobs: `SARSEN_DIFF_CASES=<n>` (default 32 cases), `SARSEN_DIFF_SEED=<u64>`
//! replays one case, `SARSEN_DIFF_SHRINK_SECS` (default 60) bounds the search for
//! a smaller failing program. A failure prints the seed, the instruction index,
//! both outcomes, the program so far (all of it in a file under the temp dir) and
//! the smallest failing program found.
//!
//! Layout: this file holds the instructions, the two executors, the LMDB
//! wrapper and the tests; `lmdb_differential/generate.rs` the cases and their
//! random programs; `lmdb_differential/report.rs` the comparison, the report and
//! the shrinking.

#[path = "lmdb_differential/generate.rs"]
mod generate;
#[path = "lmdb_differential/report.rs"]
mod report;

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use generate::{gen_case, gen_program, max_key_for, Case, DbSpec, Order, Val, B};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use report::{compare, report};
use sarsen::{Cursor, Database, DbOptions, Durability, Env, EnvOptions, Error, Iter};
use sarsen::{RoTxn, RwTxn, Stat};

/// LMDB's map: address space only, plenty for a case.
const MAP_SIZE: usize = 64 << 20;
/// LMDB's default (and this build's) longest key.
const LMDB_MAX_KEY: usize = 511;

// ---------------------------------------------------------------------------
// Programs

/// A cursor move (`mdb_cursor_get` operation).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Move {
    First,
    Last,
    Next,
    Prev,
    /// `MDB_SET_RANGE`, Sarsen `seek`.
    SetRange(B),
    /// `MDB_SET` (the value only), Sarsen `seek_exact`.
    Set(B),
    /// `MDB_SET_KEY` (key and value), Sarsen `seek_exact`.
    SetKey(B),
    /// `MDB_GET_CURRENT`, Sarsen `current`.
    Current,
    // DUPSORT moves go here: GetBoth, GetBothRange, NextDup, PrevDup, NextNoDup,
    // PrevNoDup, FirstDup, LastDup, Count (mdb_cursor_count), GetMultiple,
    // NextMultiple; `move_outcome` says which are defined after a failed move.
}

/// One step of a program; each yields one [`Outcome`]. Fields: the database
/// (an index into [`Case::dbs`]), then key and value.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Instr {
    BeginWrite,
    BeginRead,
    /// A child of the innermost write transaction.
    BeginNested,
    /// Ends the innermost transaction.
    Commit,
    /// Ends the innermost transaction (the only end of a read one).
    Abort,
    /// Close and reopen both environments (between transactions).
    Reopen,
    /// Begins a read transaction held across the write transactions that
    /// follow, until `Unpin` (snapshot isolation, page reuse).
    Pin,
    Unpin,
    /// `Check` in the pinned read transaction.
    CheckPinned,
    /// `mdb_dbi_open` with `MDB_CREATE`, `create_db` / `create_db_with`.
    CreateDb(usize),
    /// `mdb_put` flags 0, `put`.
    Put(usize, B, Val),
    /// `MDB_NOOVERWRITE`, `put_no_overwrite`.
    PutNoOverwrite(usize, B, Val),
    /// `MDB_APPEND`, `append`.
    Append(usize, B, Val),
    Del(usize, B),
    /// `mdb_drop(.., 0)`, `clear_db`.
    Clear(usize),
    // DUPSORT writes go here: PutNoDupData (MDB_NODUPDATA), PutAppendDup
    // (MDB_APPENDDUP), DelData (mdb_del with a data argument).
    Get(usize, B),
    /// Opens a cursor; `Move`s follow until `CursorClose`.
    CursorOpen(usize),
    Move(Move),
    CursorClose,
    /// Every database in full, both ways, and its entry count: outside a
    /// transaction in a new read transaction, inside in that one's view.
    Check,
}

/// What one instruction gave. Both engines must give equal lists.
#[derive(Clone, Debug, PartialEq)]
enum Outcome {
    Ok,
    /// `get`, `MDB_SET`, `put_no_overwrite` (the value there, `None` if it
    /// inserted).
    Found(Option<B>),
    Deleted(bool),
    /// `MDB_APPEND` of a key not above the last.
    Refused,
    Entry(Option<(B, B)>),
    /// A cursor result the engines define differently (see the module doc).
    Unchecked,
    /// Per database: the entry count, the forward and the backward scans.
    Snapshot(Vec<(u64, Scan, Scan)>),
    /// An unexpected error or panic: the engine stopped there.
    Error(String),
}

/// A database's entries, in a scan's order.
type Scan = Vec<(B, B)>;

/// The outcome of a cursor move, and the cursor's new comparability: after a
/// failed `NEXT`, `PREV`, `SET` or `SET_KEY` the engines' cursors stand in
/// different places (`lost`) until a move that positions from scratch.
fn move_outcome(lost: &mut bool, m: &Move, r: Option<(B, B)>) -> Outcome {
    let checked = !(*lost && matches!(m, Move::Next | Move::Prev | Move::Current));
    match m {
        Move::Current => {}
        // A step from where the engines disagree leads where they may disagree.
        Move::Next | Move::Prev if *lost => {}
        Move::Next | Move::Prev | Move::Set(_) | Move::SetKey(_) => *lost = r.is_none(),
        // An entry, an empty database, or past the end after SET_RANGE: the
        // same in both.
        Move::First | Move::Last | Move::SetRange(_) => *lost = false,
    }
    match (checked, m) {
        (false, _) => Outcome::Unchecked,
        (true, Move::Set(_)) => Outcome::Found(r.map(|(_, v)| v)),
        (true, _) => Outcome::Entry(r),
    }
}

// ---------------------------------------------------------------------------
// Execution: one executor per engine, of the same shape. Each walks the
// program, nesting by recursion as the engines' child transactions borrow
// their parents, and records one outcome per instruction.

/// Execution stopped at an unexpected error (already recorded).
struct Stop;
type Flow<T = ()> = Result<T, Stop>;

/// A program being run on one engine, whose database handles are `D`.
struct Run<'p, D> {
    case: &'p Case,
    pc: usize,
    out: Vec<Outcome>,
    dbs: Vec<D>,
}

impl<'p, D> Run<'p, D> {
    fn at(&self) -> Option<&'p Instr> {
        self.case.prog.get(self.pc)
    }
    fn emit(&mut self, o: Outcome) {
        self.out.push(o);
        self.pc += 1;
    }
    fn fail(&mut self, e: impl fmt::Display) -> Stop {
        self.out.push(Outcome::Error(e.to_string()));
        Stop
    }
    fn emit_or_fail<E: fmt::Display>(&mut self, r: Result<Outcome, E>) -> Flow {
        r.map(|o| self.emit(o)).map_err(|e| self.fail(e))
    }
    fn unexpected(&mut self, where_: &str) -> Stop {
        let what = self
            .at()
            .map_or("the end".to_string(), |i| format!("{i:?}"));
        self.fail(format!("harness: unexpected {what} {where_}"))
    }
}

/// Runs `body` on a fresh `Run`, turning a panic into an `Error` outcome.
fn run_guarded<'p, D>(case: &'p Case, body: impl FnOnce(&mut Run<'p, D>) -> Flow) -> Vec<Outcome> {
    let mut run = Run {
        case,
        pc: 0,
        out: Vec::new(),
        dbs: Vec::new(),
    };
    if let Err(p) = catch_unwind(AssertUnwindSafe(|| body(&mut run))) {
        let msg = (p.downcast_ref::<String>().cloned())
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
        run.out.truncate(run.pc);
        run.out.push(Outcome::Error(format!(
            "panic: {}",
            msg.unwrap_or_default()
        )));
    }
    run.out
}

// --- Sarsen ---------------------------------------------------------------

/// The read side common to Sarsen's read and write transactions.
trait View {
    fn v_get(&self, db: Database, key: &[u8]) -> sarsen::Result<Option<&[u8]>>;
    fn v_cursor(&self, db: Database) -> sarsen::Result<Cursor<'_>>;
    fn v_iter(&self, db: Database) -> sarsen::Result<Iter<'_>>;
    fn v_stat(&self, db: Database) -> sarsen::Result<Stat>;
}

macro_rules! impl_view {
    ($t:ident) => {
        impl View for $t<'_> {
            fn v_get(&self, db: Database, key: &[u8]) -> sarsen::Result<Option<&[u8]>> {
                $t::get(self, db, key)
            }
            fn v_cursor(&self, db: Database) -> sarsen::Result<Cursor<'_>> {
                $t::cursor(self, db)
            }
            fn v_iter(&self, db: Database) -> sarsen::Result<Iter<'_>> {
                $t::iter(self, db)
            }
            fn v_stat(&self, db: Database) -> sarsen::Result<Stat> {
                $t::stat(self, db)
            }
        }
    };
}
impl_view!(RoTxn);
impl_view!(RwTxn);

fn open_sarsen(dir: &Path, case: &Case) -> sarsen::Result<Env> {
    let o = EnvOptions::new()
        .page_size(case.page_size)
        .write_map(case.write_map);
    let o = o.durability(Durability::NoSync).max_dbs(8);
    // SAFETY: the test's own temporary directory; nothing else maps the file.
    let env = unsafe { o.open(dir) }?;
    assert!(
        env.max_key_size() >= max_key_for(case.page_size),
        "keys too long for Sarsen"
    );
    Ok(env)
}

fn run_sarsen(case: &Case) -> Vec<Outcome> {
    let dir = tempfile::tempdir().expect("tempdir");
    run_guarded(case, |run: &mut Run<'_, Database>| run.s_top(dir.path()))
}

fn owned((k, v): (&[u8], &[u8])) -> (B, B) {
    (B(k.to_vec()), B(v.to_vec()))
}

impl Run<'_, Database> {
    fn s_top(&mut self, dir: &Path) -> Flow {
        let mut env = open_sarsen(dir, self.case).map_err(|e| self.fail(e))?;
        while self.s_session(&env)? {
            drop(env);
            env = open_sarsen(dir, self.case).map_err(|e| self.fail(e))?;
            let r = self.s_reopen(&env);
            self.emit_or_fail(r)?;
        }
        Ok(())
    }

    /// Runs instructions outside transactions until the end (`false`) or a
    /// `Reopen` (`true`).
    fn s_session(&mut self, env: &Env) -> Flow<bool> {
        let mut pinned = None;
        while let Some(ins) = self.at() {
            match ins {
                Instr::BeginWrite => {
                    let mut t = env.write_txn().map_err(|e| self.fail(e))?;
                    self.emit(Outcome::Ok);
                    let r = if self.s_write(&mut t)? {
                        t.commit()
                    } else {
                        t.abort();
                        Ok(())
                    };
                    self.emit_or_fail(r.map(|()| Outcome::Ok))?;
                }
                Instr::BeginRead => {
                    let t = env.read_txn().map_err(|e| self.fail(e))?;
                    self.emit(Outcome::Ok);
                    while !matches!(self.at(), Some(Instr::Abort)) {
                        self.s_read(&t)?;
                    }
                    drop(t);
                    self.emit(Outcome::Ok);
                }
                Instr::Check => {
                    let t = env.read_txn().map_err(|e| self.fail(e))?;
                    let r = self.s_snapshot(&t);
                    self.emit_or_fail(r)?;
                }
                Instr::Pin => {
                    pinned = Some(env.read_txn().map_err(|e| self.fail(e))?);
                    self.emit(Outcome::Ok);
                }
                Instr::Unpin => {
                    pinned = None;
                    self.emit(Outcome::Ok);
                }
                Instr::CheckPinned if pinned.is_some() => {
                    let r = self.s_snapshot(pinned.as_ref().expect("pinned"));
                    self.emit_or_fail(r)?;
                }
                Instr::Reopen => return Ok(true),
                _ => return Err(self.unexpected("outside a transaction")),
            }
        }
        Ok(false)
    }

    /// Opens every database again (checking its recorded order).
    fn s_reopen(&mut self, env: &Env) -> sarsen::Result<Outcome> {
        let mut t = env.write_txn()?;
        for (i, DbSpec(name, order)) in self.case.dbs.iter().enumerate() {
            let opts = DbOptions::new().key_order(order.sarsen());
            self.dbs[i] = t
                .open_db_with(name.as_deref(), &opts)?
                .ok_or(Error::BadTxn)?;
        }
        t.commit().map(|()| Outcome::Ok)
    }

    /// Runs a write transaction's body; returns whether it ends with `Commit`.
    fn s_write(&mut self, t: &mut RwTxn<'_>) -> Flow<bool> {
        loop {
            let Some(ins) = self.at() else {
                return Err(self.unexpected("in a write transaction"));
            };
            let db = |i: &usize| self.dbs[*i];
            let r: sarsen::Result<Outcome> = match ins {
                Instr::Commit => return Ok(true),
                Instr::Abort => return Ok(false),
                Instr::BeginNested => {
                    let mut c = t.nested().map_err(|e| self.fail(e))?;
                    self.emit(Outcome::Ok);
                    let r = if self.s_write(&mut c)? {
                        c.commit()
                    } else {
                        c.abort();
                        Ok(())
                    };
                    r.map(|()| Outcome::Ok)
                }
                Instr::CreateDb(i) => {
                    let DbSpec(name, order) = &self.case.dbs[*i];
                    let r = match order {
                        Order::Bytewise => t.create_db(name.as_deref()),
                        o => t.create_db_with(
                            name.as_deref(),
                            &DbOptions::new().key_order(o.sarsen()),
                        ),
                    };
                    r.map(|h| self.dbs.push(h)).map(|()| Outcome::Ok)
                }
                Instr::Put(i, k, v) => t.put(db(i), k, &v.bytes()).map(|()| Outcome::Ok),
                Instr::PutNoOverwrite(i, k, v) => t
                    .put_no_overwrite(db(i), k, &v.bytes())
                    .map(|old| Outcome::Found(old.map(|v| B(v.to_vec())))),
                Instr::Append(i, k, v) => match t.append(db(i), k, &v.bytes()) {
                    Err(Error::KeyNotGreater) => Ok(Outcome::Refused),
                    r => r.map(|()| Outcome::Ok),
                },
                Instr::Del(i, k) => t.delete(db(i), k).map(Outcome::Deleted),
                Instr::Clear(i) => t.clear_db(db(i)).map(|()| Outcome::Ok),
                // DUPSORT writes go here (and in `l_write`).
                _ => {
                    self.s_read(&*t)?;
                    continue;
                }
            };
            self.emit_or_fail(r)?;
        }
    }

    /// Runs one read instruction (or cursor session) in `v`.
    fn s_read<V: View>(&mut self, v: &V) -> Flow {
        let r = match self.at() {
            Some(Instr::Get(i, k)) => v
                .v_get(self.dbs[*i], k)
                .map(|o| Outcome::Found(o.map(|v| B(v.to_vec())))),
            Some(Instr::Check) => self.s_snapshot(v),
            Some(Instr::CursorOpen(i)) => return self.s_cursor(v, *i),
            _ => return Err(self.unexpected("in a transaction")),
        };
        self.emit_or_fail(r)
    }

    fn s_cursor<V: View>(&mut self, v: &V, db: usize) -> Flow {
        let mut c = v.v_cursor(self.dbs[db]).map_err(|e| self.fail(e))?;
        self.emit(Outcome::Ok);
        let mut lost = false;
        loop {
            let m = match self.at() {
                Some(Instr::Move(m)) => m,
                Some(Instr::CursorClose) => {
                    self.emit(Outcome::Ok);
                    return Ok(());
                }
                _ => return Err(self.unexpected("in a cursor session")),
            };
            let r = match m {
                Move::First => c.first(),
                Move::Last => c.last(),
                Move::Next => c.next(),
                Move::Prev => c.prev(),
                Move::Current => c.current(),
                Move::SetRange(k) => c.seek(k),
                Move::Set(k) | Move::SetKey(k) => c.seek_exact(k).map(|v| v.map(|v| (&k[..], v))),
            };
            let r = r.map_err(|e| self.fail(e))?;
            let o = move_outcome(&mut lost, m, r.map(owned));
            self.emit(o);
        }
    }

    fn s_snapshot<V: View>(&self, v: &V) -> sarsen::Result<Outcome> {
        let mut snaps = Vec::new();
        for &db in &self.dbs {
            let entries = v.v_stat(db)?.entries;
            let fwd = v
                .v_iter(db)?
                .map(|e| e.map(owned))
                .collect::<sarsen::Result<_>>()?;
            let rev = v
                .v_iter(db)?
                .rev()
                .map(|e| e.map(owned))
                .collect::<sarsen::Result<_>>()?;
            snaps.push((entries, fwd, rev));
        }
        Ok(Outcome::Snapshot(snaps))
    }
}

// --- LMDB -----------------------------------------------------------------

fn run_lmdb(case: &Case) -> Vec<Outcome> {
    let dir = tempfile::tempdir().expect("tempdir");
    run_guarded(case, |run: &mut Run<'_, lmdb::Dbi>| run.l_top(dir.path()))
}

impl Run<'_, lmdb::Dbi> {
    fn l_top(&mut self, dir: &Path) -> Flow {
        let mut env = lmdb::Env::open(dir, MAP_SIZE, 8).map_err(|e| self.fail(e))?;
        while self.l_session(&env)? {
            drop(env);
            env = lmdb::Env::open(dir, MAP_SIZE, 8).map_err(|e| self.fail(e))?;
            let r = self.l_reopen(&env);
            self.emit_or_fail(r)?;
        }
        Ok(())
    }

    fn l_session(&mut self, env: &lmdb::Env) -> Flow<bool> {
        let mut pinned = None;
        while let Some(ins) = self.at() {
            match ins {
                Instr::BeginWrite => {
                    let mut t = env.begin(false).map_err(|e| self.fail(e))?;
                    self.emit(Outcome::Ok);
                    let r = if self.l_write(&mut t)? {
                        t.commit()
                    } else {
                        t.abort()
                    };
                    self.emit_or_fail(r.map(|()| Outcome::Ok))?;
                }
                Instr::BeginRead => {
                    let t = env.begin(true).map_err(|e| self.fail(e))?;
                    self.emit(Outcome::Ok);
                    while !matches!(self.at(), Some(Instr::Abort)) {
                        self.l_read(&t)?;
                    }
                    self.emit_or_fail(t.abort().map(|()| Outcome::Ok))?;
                }
                Instr::Check => {
                    let t = env.begin(true).map_err(|e| self.fail(e))?;
                    let r = self.l_snapshot(&t);
                    self.emit_or_fail(r)?;
                }
                Instr::Pin => {
                    pinned = Some(env.begin(true).map_err(|e| self.fail(e))?);
                    self.emit(Outcome::Ok);
                }
                Instr::Unpin => {
                    pinned = None;
                    self.emit(Outcome::Ok);
                }
                Instr::CheckPinned if pinned.is_some() => {
                    let r = self.l_snapshot(pinned.as_ref().expect("pinned"));
                    self.emit_or_fail(r)?;
                }
                Instr::Reopen => return Ok(true),
                _ => return Err(self.unexpected("outside a transaction")),
            }
        }
        Ok(false)
    }

    fn l_reopen(&mut self, env: &lmdb::Env) -> lmdb::Res<Outcome> {
        let mut t = env.begin(false)?;
        for (i, DbSpec(name, order)) in self.case.dbs.iter().enumerate() {
            self.dbs[i] = t.open_db(name.as_deref(), order.lmdb_flags())?;
        }
        t.commit().map(|()| Outcome::Ok)
    }

    fn l_write(&mut self, t: &mut lmdb::Txn<'_>) -> Flow<bool> {
        loop {
            let Some(ins) = self.at() else {
                return Err(self.unexpected("in a write transaction"));
            };
            let db = |i: &usize| self.dbs[*i];
            let r: lmdb::Res<Outcome> = match ins {
                Instr::Commit => return Ok(true),
                Instr::Abort => return Ok(false),
                Instr::BeginNested => {
                    let mut c = t.nested().map_err(|e| self.fail(e))?;
                    self.emit(Outcome::Ok);
                    let r = if self.l_write(&mut c)? {
                        c.commit()
                    } else {
                        c.abort()
                    };
                    r.map(|()| Outcome::Ok)
                }
                Instr::CreateDb(i) => {
                    let DbSpec(name, order) = &self.case.dbs[*i];
                    let r = t.open_db(name.as_deref(), order.lmdb_flags() | lmdb::MDB_CREATE);
                    r.map(|h| self.dbs.push(h)).map(|()| Outcome::Ok)
                }
                Instr::Put(i, k, v) => t.put(db(i), k, &v.bytes(), 0).map(|()| Outcome::Ok),
                Instr::PutNoOverwrite(i, k, v) => t
                    .put_no_overwrite(db(i), k, &v.bytes())
                    .map(|o| Outcome::Found(o.map(B))),
                Instr::Append(i, k, v) => match t.put(db(i), k, &v.bytes(), lmdb::MDB_APPEND) {
                    Err(lmdb::Code(lmdb::MDB_KEYEXIST)) => Ok(Outcome::Refused),
                    r => r.map(|()| Outcome::Ok),
                },
                Instr::Del(i, k) => t.del(db(i), k).map(Outcome::Deleted),
                Instr::Clear(i) => t.clear(db(i)).map(|()| Outcome::Ok),
                // DUPSORT writes go here (and in `s_write`).
                _ => {
                    self.l_read(t)?;
                    continue;
                }
            };
            self.emit_or_fail(r)?;
        }
    }

    fn l_read(&mut self, t: &lmdb::Txn<'_>) -> Flow {
        let r = match self.at() {
            Some(Instr::Get(i, k)) => t.get(self.dbs[*i], k).map(|o| Outcome::Found(o.map(B))),
            Some(Instr::Check) => self.l_snapshot(t),
            Some(Instr::CursorOpen(i)) => return self.l_cursor(t, *i),
            _ => return Err(self.unexpected("in a transaction")),
        };
        self.emit_or_fail(r)
    }

    fn l_cursor(&mut self, t: &lmdb::Txn<'_>, db: usize) -> Flow {
        use lmdb::{Code, MDB_FIRST, MDB_GET_CURRENT, MDB_LAST, MDB_NEXT, MDB_PREV};
        use lmdb::{MDB_SET, MDB_SET_KEY, MDB_SET_RANGE};
        let mut c = t.cursor(self.dbs[db]).map_err(|e| self.fail(e))?;
        self.emit(Outcome::Ok);
        let mut lost = false;
        loop {
            let m = match self.at() {
                Some(Instr::Move(m)) => m,
                Some(Instr::CursorClose) => {
                    self.emit(Outcome::Ok);
                    return Ok(());
                }
                _ => return Err(self.unexpected("in a cursor session")),
            };
            let (op, key) = match m {
                Move::First => (MDB_FIRST, None),
                Move::Last => (MDB_LAST, None),
                Move::Next => (MDB_NEXT, None),
                Move::Prev => (MDB_PREV, None),
                Move::Current => (MDB_GET_CURRENT, None),
                Move::SetRange(k) => (MDB_SET_RANGE, Some(&k[..])),
                Move::Set(k) => (MDB_SET, Some(&k[..])),
                Move::SetKey(k) => (MDB_SET_KEY, Some(&k[..])),
            };
            let r = match c.get(op, key) {
                // Never positioned: LMDB says EINVAL, Sarsen "no entry".
                Err(Code(libc::EINVAL)) if op == MDB_GET_CURRENT => None,
                r => r.map_err(|e| self.fail(e))?,
            };
            let o = move_outcome(&mut lost, m, r.map(|(k, v)| (B(k), B(v))));
            self.emit(o);
        }
    }

    fn l_snapshot(&self, t: &lmdb::Txn<'_>) -> lmdb::Res<Outcome> {
        let mut snaps = Vec::new();
        for &dbi in &self.dbs {
            let scan = |first: u32, step: u32| -> lmdb::Res<Scan> {
                let (mut c, mut v) = (t.cursor(dbi)?, Vec::new());
                let mut e = c.get(first, None)?;
                while let Some((k, d)) = e {
                    v.push((B(k), B(d)));
                    e = c.get(step, None)?;
                }
                Ok(v)
            };
            let fwd = scan(lmdb::MDB_FIRST, lmdb::MDB_NEXT)?;
            snaps.push((t.entries(dbi)?, fwd, scan(lmdb::MDB_LAST, lmdb::MDB_PREV)?));
        }
        Ok(Outcome::Snapshot(snaps))
    }
}

/// A small safe wrapper over the LMDB calls the test makes. Every value LMDB
/// returns is copied out at once, so no borrow of the map escapes a call;
/// lifetimes keep a transaction within its environment, a child within its
/// parent (which cannot be used meanwhile, as LMDB requires), and a cursor
/// within its transaction.
mod lmdb {
    use std::ffi::{c_int, c_void, CStr, CString};
    use std::fmt;
    use std::marker::PhantomData;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;
    use std::ptr;

    pub use ffi::{MDB_APPEND, MDB_BAD_VALSIZE, MDB_CREATE, MDB_FIRST, MDB_GET_CURRENT};
    pub use ffi::{MDB_INTEGERKEY, MDB_KEYEXIST, MDB_LAST, MDB_NEXT, MDB_PREV, MDB_REVERSEKEY};
    pub use ffi::{MDB_SET, MDB_SET_KEY, MDB_SET_RANGE};
    use lmdb_master_sys as ffi;

    pub type Dbi = ffi::MDB_dbi;

    /// An LMDB return code other than success.
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub struct Code(pub c_int);

    impl fmt::Display for Code {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            // SAFETY: mdb_strerror takes any code and returns a static (or
            // strerror-owned) NUL-terminated string.
            let msg = unsafe { CStr::from_ptr(ffi::mdb_strerror(self.0)) };
            write!(f, "lmdb: {} ({})", msg.to_string_lossy(), self.0)
        }
    }
    impl fmt::Debug for Code {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            fmt::Display::fmt(self, f)
        }
    }

    pub type Res<T> = Result<T, Code>;

    fn check(rc: c_int) -> Res<()> {
        if rc == ffi::MDB_SUCCESS {
            Ok(())
        } else {
            Err(Code(rc))
        }
    }

    fn val(b: &[u8]) -> ffi::MDB_val {
        ffi::MDB_val {
            mv_size: b.len(),
            mv_data: b.as_ptr() as *mut c_void,
        }
    }

    /// Copies the bytes an `MDB_val` points to.
    ///
    /// # Safety
    /// `v` must come from a successful LMDB read in a transaction that is
    /// still live and unchanged since, or point to a live Rust slice.
    unsafe fn copy(v: &ffi::MDB_val) -> Vec<u8> {
        if v.mv_size == 0 {
            return Vec::new();
        }
        // SAFETY: per the contract, `mv_size` readable bytes at `mv_data`.
        unsafe { std::slice::from_raw_parts(v.mv_data as *const u8, v.mv_size) }.to_vec()
    }

    /// An open environment (one directory).
    pub struct Env(*mut ffi::MDB_env);

    impl Env {
        /// Opens (creating) the environment in `dir`, with `MDB_NOSYNC`, and
        /// `MDB_NOTLS` so that a thread may hold several read transactions.
        pub fn open(dir: &Path, map_size: usize, max_dbs: u32) -> Res<Env> {
            let path = CString::new(dir.as_os_str().as_bytes()).expect("path without NUL");
            let mut env = ptr::null_mut();
            // SAFETY: the out pointer is valid.
            check(unsafe { ffi::mdb_env_create(&mut env) })?;
            // From here dropping `e` closes `env`, on errors too.
            let e = Env(env);
            // SAFETY: `env` is created and not yet open, as the setters require.
            check(unsafe { ffi::mdb_env_set_mapsize(env, map_size) })?;
            // SAFETY: as above.
            check(unsafe { ffi::mdb_env_set_maxdbs(env, max_dbs) })?;
            let flags = ffi::MDB_NOSYNC | ffi::MDB_NOMETASYNC | ffi::MDB_NOTLS;
            // SAFETY: `env` is created; `path` is a NUL-terminated directory.
            check(unsafe { ffi::mdb_env_open(env, path.as_ptr(), flags, 0o644) })?;
            // SAFETY: `env` is open.
            let max_key = unsafe { ffi::mdb_env_get_maxkeysize(env) };
            assert_eq!(max_key as usize, super::LMDB_MAX_KEY, "LMDB's key limit");
            Ok(e)
        }

        /// Begins a top-level transaction.
        pub fn begin(&self, read_only: bool) -> Res<Txn<'_>> {
            let flags = if read_only { ffi::MDB_RDONLY } else { 0 };
            let mut txn = ptr::null_mut();
            // SAFETY: `env` is open, the out pointer valid. This thread holds no
            // other write transaction of this environment (the executors'
            // structure), and read ones may share it (MDB_NOTLS).
            check(unsafe { ffi::mdb_txn_begin(self.0, ptr::null_mut(), flags, &mut txn) })?;
            Ok(Txn(txn, PhantomData))
        }
    }

    impl Drop for Env {
        fn drop(&mut self) {
            // SAFETY: created by mdb_env_create, closed once; every transaction
            // borrows the `Env` and so has ended.
            unsafe { ffi::mdb_env_close(self.0) };
        }
    }

    /// A live transaction; aborted on drop unless committed.
    pub struct Txn<'a>(*mut ffi::MDB_txn, PhantomData<&'a ()>);

    impl Txn<'_> {
        /// Begins a child of this write transaction, borrowing it: LMDB allows
        /// no other use of a parent while a child lives.
        pub fn nested(&mut self) -> Res<Txn<'_>> {
            let mut txn = ptr::null_mut();
            // SAFETY: `self.0` is a live write transaction without a live child
            // (the borrow); its environment pointer is valid while it lives.
            let env = unsafe { ffi::mdb_txn_env(self.0) };
            // SAFETY: as above; the out pointer is valid.
            check(unsafe { ffi::mdb_txn_begin(env, self.0, 0, &mut txn) })?;
            Ok(Txn(txn, PhantomData))
        }

        /// `mdb_dbi_open`; `name: None` is the main database.
        pub fn open_db(&mut self, name: Option<&str>, flags: u32) -> Res<Dbi> {
            let name = name.map(|n| CString::new(n).expect("name without NUL"));
            let (p, mut dbi) = (name.as_ref().map_or(ptr::null(), |n| n.as_ptr()), 0);
            // SAFETY: the transaction is live; `p` is null or a NUL-terminated
            // string; the out pointer is valid.
            check(unsafe { ffi::mdb_dbi_open(self.0, p, flags, &mut dbi) })?;
            Ok(dbi)
        }

        pub fn get(&self, dbi: Dbi, key: &[u8]) -> Res<Option<Vec<u8>>> {
            let (mut k, mut d) = (val(key), val(&[]));
            // SAFETY: the transaction is live with no live child, `dbi` opened in
            // its environment, `k` points to a live slice; `d` is an out value.
            match unsafe { ffi::mdb_get(self.0, dbi, &mut k, &mut d) } {
                // SAFETY: `d` comes from the successful mdb_get just made.
                ffi::MDB_SUCCESS => Ok(Some(unsafe { copy(&d) })),
                ffi::MDB_NOTFOUND => Ok(None),
                rc => Err(Code(rc)),
            }
        }

        /// `mdb_put` with `flags` (0 or `MDB_APPEND`).
        pub fn put(&mut self, dbi: Dbi, key: &[u8], data: &[u8], flags: u32) -> Res<()> {
            let (mut k, mut d) = (val(key), val(data));
            // SAFETY: a live write transaction with no live child, `dbi` open,
            // `k` and `d` point to live slices (LMDB copies them).
            check(unsafe { ffi::mdb_put(self.0, dbi, &mut k, &mut d, flags) })
        }

        /// `mdb_put` with `MDB_NOOVERWRITE`: `Some(existing)` on `MDB_KEYEXIST`.
        pub fn put_no_overwrite(
            &mut self,
            dbi: Dbi,
            key: &[u8],
            data: &[u8],
        ) -> Res<Option<Vec<u8>>> {
            let (mut k, mut d) = (val(key), val(data));
            // SAFETY: as in `put`.
            match unsafe { ffi::mdb_put(self.0, dbi, &mut k, &mut d, ffi::MDB_NOOVERWRITE) } {
                ffi::MDB_SUCCESS => Ok(None),
                // SAFETY: on MDB_KEYEXIST LMDB points `d` at the stored value.
                ffi::MDB_KEYEXIST => Ok(Some(unsafe { copy(&d) })),
                rc => Err(Code(rc)),
            }
        }

        /// `mdb_del` without data: whether the key was there.
        pub fn del(&mut self, dbi: Dbi, key: &[u8]) -> Res<bool> {
            let mut k = val(key);
            // SAFETY: as in `put`; a null data pointer deletes the key.
            match unsafe { ffi::mdb_del(self.0, dbi, &mut k, ptr::null_mut()) } {
                ffi::MDB_SUCCESS => Ok(true),
                ffi::MDB_NOTFOUND => Ok(false),
                rc => Err(Code(rc)),
            }
        }

        // DUPSORT: `del_data` (mdb_del with a data argument) goes here, and the
        // flags MDB_NODUPDATA and MDB_APPENDDUP to `put`.

        /// `mdb_drop(.., 0)`: empties the database, keeps the handle.
        pub fn clear(&mut self, dbi: Dbi) -> Res<()> {
            // SAFETY: a live write transaction with no live child, `dbi` open.
            check(unsafe { ffi::mdb_drop(self.0, dbi, 0) })
        }

        /// `mdb_stat`'s `ms_entries`.
        pub fn entries(&self, dbi: Dbi) -> Res<u64> {
            // SAFETY: MDB_stat is plain integers; all-zero is a valid value.
            let mut st: ffi::MDB_stat = unsafe { std::mem::zeroed() };
            // SAFETY: the transaction is live, `dbi` open, the out pointer valid.
            check(unsafe { ffi::mdb_stat(self.0, dbi, &mut st) })?;
            Ok(st.ms_entries as u64)
        }

        pub fn cursor(&self, dbi: Dbi) -> Res<Cursor<'_>> {
            let mut cur = ptr::null_mut();
            // SAFETY: the transaction is live, `dbi` open, the out pointer valid.
            check(unsafe { ffi::mdb_cursor_open(self.0, dbi, &mut cur) })?;
            Ok(Cursor(cur, PhantomData))
        }

        pub fn commit(mut self) -> Res<()> {
            let txn = std::mem::replace(&mut self.0, ptr::null_mut());
            // SAFETY: `txn` is live with no live child or cursor (they borrow
            // it); commit frees it whatever it returns.
            check(unsafe { ffi::mdb_txn_commit(txn) })
        }

        /// Aborts (as dropping does); cannot fail.
        pub fn abort(self) -> Res<()> {
            Ok(())
        }
    }

    impl Drop for Txn<'_> {
        fn drop(&mut self) {
            if !self.0.is_null() {
                // SAFETY: the transaction is live; its children and cursors have
                // ended (they borrow it); abort frees it.
                unsafe { ffi::mdb_txn_abort(self.0) };
            }
        }
    }

    /// A cursor; closed on drop, before its transaction ends.
    pub struct Cursor<'t>(*mut ffi::MDB_cursor, PhantomData<&'t ()>);

    // DUPSORT: `count` (mdb_cursor_count) goes here; the DUPSORT moves use `get`
    // (GET_MULTIPLE and NEXT_MULTIPLE return a data array of fixed-size items).
    impl Cursor<'_> {
        /// `mdb_cursor_get` with `op` and (for the SET ops) `key`; `None` on
        /// `MDB_NOTFOUND`.
        pub fn get(&mut self, op: u32, key: Option<&[u8]>) -> Res<Option<(Vec<u8>, Vec<u8>)>> {
            let (mut k, mut d) = (val(key.unwrap_or(&[])), val(&[]));
            // SAFETY: the cursor is open in a live transaction that cannot
            // change meanwhile (it is borrowed); `k` points to a live slice.
            match unsafe { ffi::mdb_cursor_get(self.0, &mut k, &mut d, op) } {
                // SAFETY: both come from the successful call just made (`k` may
                // still be our own slice, for MDB_SET).
                ffi::MDB_SUCCESS => Ok(Some(unsafe { (copy(&k), copy(&d)) })),
                ffi::MDB_NOTFOUND => Ok(None),
                rc => Err(Code(rc)),
            }
        }
    }

    impl Drop for Cursor<'_> {
        fn drop(&mut self) {
            // SAFETY: opened by mdb_cursor_open, closed once, while its
            // transaction lives (the borrow).
            unsafe { ffi::mdb_cursor_close(self.0) };
        }
    }
}

// ---------------------------------------------------------------------------
// Tests

/// splitmix64, for spreading case numbers into seeds.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn seeds() -> Vec<u64> {
    let var = |v: &str| std::env::var(v).ok().map(|s| s.trim().parse().expect(v));
    if let Some(seed) = var("SARSEN_DIFF_SEED") {
        return vec![seed];
    }
    (0..var("SARSEN_DIFF_CASES").unwrap_or(32))
        .map(|i| mix(0x5a25_e11d_1ff0 + i))
        .collect()
}

#[test]
fn sarsen_matches_lmdb() {
    for seed in seeds() {
        let case = gen_case(seed);
        let lmdb = run_lmdb(&case);
        if let Some(m) = compare(&lmdb, &run_sarsen(&case)) {
            panic!("{}", report(&case, &m));
        }
        // Equal lists could still both stop early (an LMDB error, or a
        // program the executors do not accept): the whole program must run.
        let stopped = matches!(lmdb.last(), Some(Outcome::Error(_)));
        let (n, last) = (lmdb.len(), lmdb.last());
        assert!(
            !stopped && n == case.prog.len(),
            "seed {seed}: both stopped after {n} instructions: {last:?}"
        );
    }
}

/// The harness can fail: a Sarsen database in bytewise order where LMDB's is
/// reverse must be caught.
#[test]
fn harness_catches_a_wrong_order() {
    let dbs = vec![DbSpec(Some("db0".into()), Order::Reverse)];
    let case = gen_program(7, SmallRng::seed_from_u64(7), 4096, false, dbs);
    let mut wrong = case.clone();
    wrong.dbs[0].1 = Order::Bytewise;
    let m = compare(&run_lmdb(&case), &run_sarsen(&wrong)).expect("a wrong order must be caught");
    assert!(
        !matches!(m.1, Some(Outcome::Error(_))),
        "LMDB failed: {:?}",
        m.1
    );
}

/// The differences the module doc lists, pinned so that a change on either
/// side shows.
#[test]
fn documented_differences() {
    use lmdb::MDB_SET_RANGE;
    use lmdb::{Code, MDB_BAD_VALSIZE, MDB_FIRST, MDB_GET_CURRENT, MDB_LAST, MDB_NEXT, MDB_PREV};
    let ldir = tempfile::tempdir().unwrap();
    let le = lmdb::Env::open(ldir.path(), MAP_SIZE, 8).unwrap();
    let mut lt = le.begin(false).unwrap();
    let dbi = lt.open_db(None, 0).unwrap();
    let sdir = tempfile::tempdir().unwrap();
    let case = Case {
        seed: 0,
        page_size: 4096,
        write_map: false,
        dbs: vec![],
        prog: vec![],
    };
    let se = open_sarsen(sdir.path(), &case).unwrap();
    let (db, mut st) = (se.main_db(), se.write_txn().unwrap());
    for k in [b"a", b"b", b"c"] {
        lt.put(dbi, k, b"v", 0).unwrap();
        st.put(db, k, b"v").unwrap();
    }
    let e = |k: &[u8]| Some((k.to_vec(), b"v".to_vec()));
    let s = |r: sarsen::Result<Option<(&[u8], &[u8])>>| {
        r.unwrap().map(|(k, v)| (k.to_vec(), v.to_vec()))
    };
    {
        let (mut lc, mut sc) = (lt.cursor(dbi).unwrap(), st.cursor(db).unwrap());
        let mut l = |op, key: Option<&[u8]>| lc.get(op, key).unwrap();
        // Past the last entry: LMDB stays on it, Sarsen stands past it.
        assert_eq!((l(MDB_LAST, None), s(sc.last())), (e(b"c"), e(b"c")));
        assert_eq!((l(MDB_NEXT, None), s(sc.next())), (None, None));
        assert_eq!((l(MDB_GET_CURRENT, None), s(sc.current())), (e(b"c"), None));
        assert_eq!((l(MDB_PREV, None), s(sc.prev())), (e(b"b"), e(b"c")));
        // Before the first: the same, mirrored.
        assert_eq!((l(MDB_FIRST, None), s(sc.first())), (e(b"a"), e(b"a")));
        assert_eq!((l(MDB_PREV, None), s(sc.prev())), (None, None));
        assert_eq!((l(MDB_GET_CURRENT, None), s(sc.current())), (e(b"a"), None));
        assert_eq!((l(MDB_NEXT, None), s(sc.next())), (e(b"b"), e(b"a")));
        // SET_RANGE past the end: the same in both.
        assert_eq!(
            (l(MDB_SET_RANGE, Some(b"d")), s(sc.seek(b"d"))),
            (None, None)
        );
        assert_eq!((l(MDB_GET_CURRENT, None), s(sc.current())), (None, None));
        assert_eq!((l(MDB_NEXT, None), s(sc.next())), (None, None));
        assert_eq!((l(MDB_PREV, None), s(sc.prev())), (e(b"c"), e(b"c")));
    }
    {
        // A cursor never positioned: EINVAL vs None.
        let mut lc = lt.cursor(dbi).unwrap();
        assert_eq!(lc.get(MDB_GET_CURRENT, None), Err(Code(libc::EINVAL)));
        assert_eq!(s(st.cursor(db).unwrap().current()), None);
    }
    // Empty keys: LMDB refuses them, Sarsen's bytewise order takes them.
    assert_eq!(lt.put(dbi, b"", b"v", 0), Err(Code(MDB_BAD_VALSIZE)));
    st.put(db, b"", b"v").unwrap();
    assert_eq!(st.get(db, b"").unwrap(), Some(&b"v"[..]));
}
