//! Differential test: Sarsen against real LMDB (`lmdb-master-sys`, LMDB 0.9.70 of
//! the mdb.master branch) on the same seeded random programs, for the features
//! both have today.
//!
//! A program is a flat list of instructions ([`Instr`]): transactions (write, read,
//! nested write children up to depth 3, each committed or aborted), `put`
//! (`mdb_put` flags 0), `put_no_overwrite` (`MDB_NOOVERWRITE`), `append`
//! (`MDB_APPEND`), `get`, `delete`, `clear_db` (`mdb_drop(.., 0)`), cursor sessions
//! (`MDB_FIRST`/`LAST`/`NEXT`/`PREV`/`SET_RANGE`/`SET`/`SET_KEY`/`GET_CURRENT`) in
//! read and write transactions, write-cursor sessions (Sarsen's `RwCursor`: the
//! moves, `mdb_cursor_put` flags 0 and `MDB_CURRENT`, `mdb_cursor_del` with and
//! without `MDB_NODUPDATA`, some in walks that delete or rewrite as they go), a
//! read transaction held across later write transactions (a pinned snapshot),
//! and reopening both environments. Databases are either the main one alone
//! or one to four named ones, each in one key order: bytewise, reverse
//! (`MDB_REVERSEKEY`), or native `u32`/`u64` (`MDB_INTEGERKEY` with 4- or 8-byte
//! keys). Keys are 1..=511 bytes (LMDB's default limit; 480 when Sarsen's page
//! is 1 KiB), values 0..=12000 bytes (overflow pages in both).
//!
//! Half the cases have DUPSORT databases (`MDB_DUPSORT`, Sarsen's
//! `DbOptions::dup_sort`), with values in bytewise, reverse (`MDB_REVERSEDUP`) or
//! `u32`/`u64` order (`MDB_INTEGERDUP`), with or without `MDB_DUPFIXED`. There,
//! besides the operations above, `put_no_dup_data` (`MDB_NODUPDATA`),
//! `append_dup` (`MDB_APPENDDUP`), `delete_dup` (`mdb_del` with a value) and the
//! cursor moves `GET_BOTH`, `GET_BOTH_RANGE`, `NEXT_DUP`, `PREV_DUP`,
//! `FIRST_DUP`, `LAST_DUP`, `NEXT_NODUP`, `PREV_NODUP`, `mdb_cursor_count` and
//! (DUPFIXED) `GET_MULTIPLE` with `NEXT_MULTIPLE`. Their keys are few (1 to 40
//! per database, at most 400 bytes) and their values come from per-key value
//! spaces (hundreds for a third of the keys; 1..=511 bytes, or under DUPFIXED
//! one size of 2..=511 per database; key and value within Sarsen's node), put
//! in bursts and deleted in sweeps, so that Sarsen's values move from a single
//! value to an inline list to a sub-tree and back (the ignored `coverage`
//! test counts it).
//!
//! Each engine runs the program alone and records one [`Outcome`] per
//! instruction; the two lists must be equal. After every transaction (nested ones
//! too, in the parent's view) a `Check` records every database in full, forward
//! and backward, its entry count (`mdb_stat`'s `ms_entries`, Sarsen's
//! `stat(db).entries`) and, DUPSORT, every key with its value count, forward by
//! `NEXT_NODUP` and backward by `PREV_NODUP`. Sarsen's page size (1, 2 or 4 KiB)
//! and write-map mode vary by case: LMDB's 4 KiB tree has other shapes, the
//! results must not.
//!
//! Where the two legitimately differ (the cursor cases and empty keys are pinned
//! by `documented_differences`, the DUPSORT ones by `documented_dup_differences`):
//! - A move that fails at an end (`NEXT` past the last entry, `PREV` before the
//!   first): LMDB's cursor stays on that last (first) entry, so `GET_CURRENT`
//!   returns it and the opposite move returns its neighbour; Sarsen's stands past
//!   the end, `current()` is `None`, and the opposite move returns the end entry.
//!   After a missed `MDB_SET`/`SET_KEY` LMDB's cursor is at the insertion point
//!   inside a leaf (possibly past its last node), Sarsen's on the next larger key.
//!   So after such a failed move, `NEXT`, `PREV` and `GET_CURRENT` are not
//!   compared (`Outcome::Unchecked`; Sarsen runs them, LMDB does not) until a
//!   `FIRST`, `LAST` or `SET*` positions the cursor again. A `SET_RANGE` past
//!   the last key is defined in both (next: none, prev: the last entry,
//!   current: none) and compared.
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
//! DUPSORT (the types of the outcomes compared as one: `MDB_KEYEXIST` of
//! `MDB_NODUPDATA` vs `false`, of `MDB_APPENDDUP` vs `Error::KeyNotGreater`):
//! - `MDB_APPENDDUP` checks only that the value sorts after its key's last
//!   value, whatever the key; Sarsen's `append_dup` appends after the
//!   database's last pair, so a key below the last key is `KeyNotGreater`. The
//!   LMDB executor gives a refusal for such a key without calling LMDB (`mdb_cmp`
//!   against the last key), and `MDB_APPENDDUP` otherwise.
//! - Moves that fail, as above (a move not compared is run on Sarsen, which
//!   must not fail, and not on LMDB): a failed `NEXT_NODUP` or `PREV_NODUP` is
//!   a failed step (then not compared); `GET_BOTH` and `GET_BOTH_RANGE` that
//!   find nothing leave the position unspecified in both (then not compared).
//!   A `NEXT_DUP` or `PREV_DUP` that finds nothing stays on its pair in both
//!   (compared).
//! - After a missed `SET*` or `GET_BOTH*`, and after a `SET_RANGE` past the end,
//!   LMDB's cursor may stand past the last node of a leaf without its end flag,
//!   where its DUPSORT `NEXT`, `NEXT_DUP`, `NEXT_NODUP` and count read a node
//!   that is not there. So the moves not compared there are not run on LMDB
//!   (Sarsen runs them, unchecked). After a `SET_RANGE` past the end, `PREV`,
//!   `PREV_NODUP` and `GET_CURRENT` are compared; LMDB's `PREV_DUP` goes to the
//!   last pair there, as `PREV` does, Sarsen's finds nothing.
//! - From a cursor never positioned LMDB's `NEXT_DUP`/`PREV_DUP` move as
//!   `NEXT`/`PREV` do, to the first/last pair; Sarsen's find nothing (not
//!   compared). `FIRST_DUP`, `LAST_DUP` and the count there: LMDB `EINVAL`,
//!   Sarsen `None` and 0 (compared as those).
//! - LMDB's `FIRST_DUP`/`LAST_DUP` set no key when the key has several values;
//!   the LMDB executor reads it with `GET_CURRENT`.
//! - `GET_MULTIPLE` returns, in LMDB, the whole sub-page or sub-tree leaf the
//!   cursor is in (values before the current one too), and on a key with one
//!   value no data, or a page of the key the cursor came from; Sarsen returns
//!   from the current value on, and a key's one value. So `Move::Multiple` is
//!   `FIRST_DUP`, then `GET_MULTIPLE` and `NEXT_MULTIPLE` until none, compared
//!   as the key and the concatenated batches (the engines cut them in
//!   different places), with a key's one value standing for LMDB's batches
//!   when its count is 1. Each batch must hold whole values.
//! - `MDB_DUPFIXED`: LMDB requires one value size in the whole database,
//!   Sarsen one per key; programs use one per database. And LMDB mishandles
//!   1-byte DUPFIXED values (a sub-page's slots are 2 bytes): in the main
//!   database, three 1-byte values of one key, committed, make the next read
//!   transaction's `MDB_LAST` fault (SIGBUS); larger programs fault in named
//!   databases too. Programs use sizes of 2 bytes and more there. (Not pinned:
//!   a test cannot survive the fault.)
//! - Empty values: LMDB keeps one only while it is its key's only value (a
//!   sub-page holds its values as keys, which cannot be empty): adding a
//!   second value drops it (counting both), adding it beside others is
//!   `MDB_BAD_VALSIZE`. Programs use values of at least one byte there.
//! - LMDB requires `MDB_CURRENT` on DUPSORT to keep the value's place; Sarsen's
//!   `put_current` moves the pair where it sorts. Programs rewrite a DUPSORT
//!   pair with its own value only.
//!
//! Write cursors:
//! - `put_current`, `delete_current` and `delete_current_key` off a pair are
//!   errors in Sarsen and undefined in LMDB: they run only where both stand on
//!   one pair (else neither runs them and they give `Unchecked`).
//! - After a delete at the cursor LMDB's stands on the next pair, flagged so
//!   that `NEXT` returns it, and `GET_CURRENT` returns it too; Sarsen's
//!   `current()` is `None` and it remembers the deleted pair. `NEXT` and `PREV`
//!   are compared there (the pair after, the pair before); any other read
//!   clears LMDB's flag, so the others are not (and the cursor is then lost).
//! - Two LMDB bugs (pinned by `lmdb_cursor_write_bugs`): a cursor that steps
//!   from a key with several values to one with a single value keeps the
//!   first key's sub-cursor, and deleting the single value leaves that
//!   sub-cursor, stale, on the next key, so `NEXT` returns a value at the old
//!   index and a delete there may take the whole key (its value count is the
//!   old key's); and a put of a new key at a cursor keeps the end flag of an
//!   earlier failed `NEXT`, so that after a delete there `NEXT` finds nothing
//!   though pairs follow. The LMDB executor places its cursor again on its
//!   pair (`GET_BOTH`, or `SET_KEY`) before each delete at a cursor, which
//!   clears both.
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

use generate::{gen_case, gen_program, max_key_for, mix, Case, DbSpec, Dups, Order, Val, B};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use report::{compare, report};
use sarsen::{Cursor, Database, DbOptions, Durability, Env, EnvOptions, Error, Iter, KeyOrder};
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
    // DUPSORT only, from here on.
    /// `MDB_GET_BOTH`, Sarsen `seek_both`.
    GetBoth(B, Val),
    /// `MDB_GET_BOTH_RANGE`, Sarsen `seek_both_range`.
    GetBothRange(B, Val),
    /// `MDB_NEXT_DUP`, Sarsen `next_dup` (and so on).
    NextDup,
    PrevDup,
    FirstDup,
    LastDup,
    NextNoDup,
    PrevNoDup,
    /// `mdb_cursor_count`, Sarsen `dup_count`.
    Count,
    /// DUPFIXED: `MDB_FIRST_DUP`, then `MDB_GET_MULTIPLE` and
    /// `MDB_NEXT_MULTIPLE` until none; the outcome is the key and the
    /// concatenated batches (the engines cut them differently).
    Multiple,
}

impl Move {
    /// Whether the move starts from where the cursor stands (else it
    /// positions from scratch).
    fn relative(&self) -> bool {
        !matches!(
            self,
            Move::First
                | Move::Last
                | Move::SetRange(_)
                | Move::Set(_)
                | Move::SetKey(_)
                | Move::GetBoth(..)
                | Move::GetBothRange(..)
        )
    }
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
    /// DUPSORT: `MDB_NODUPDATA`, `put_no_dup_data`.
    PutNoDupData(usize, B, Val),
    /// DUPSORT: `MDB_APPENDDUP`, `append_dup`.
    AppendDup(usize, B, Val),
    /// DUPSORT: `mdb_del` with a value, `delete_dup`.
    DelData(usize, B, Val),
    Get(usize, B),
    /// Opens a cursor; `Move`s follow until `CursorClose`.
    CursorOpen(usize),
    /// Opens a write cursor (`mdb_cursor_open` in a write transaction,
    /// Sarsen's `cursor_mut`); `Move`s and the `Cur*` writes follow until
    /// `CursorClose`.
    WCursorOpen(usize),
    Move(Move),
    /// `mdb_cursor_put` flags 0, `RwCursor::put`.
    CurPut(B, Val),
    /// `MDB_CURRENT`, `put_current`: this value, or (`None`) the one there
    /// (on DUPSORT LMDB requires the value to keep its place). Run only on
    /// a pair.
    CurPutCurrent(Option<Val>),
    /// `mdb_cursor_del`, `delete_current`. Run only on a pair.
    CurDel,
    /// `mdb_cursor_del` with `MDB_NODUPDATA`, `delete_current_key`. Run
    /// only on a pair.
    CurDelKey,
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
    /// `MDB_NODUPDATA`: whether the pair was added.
    Added(bool),
    /// `MDB_APPEND` of a key not above the last, `MDB_APPENDDUP` of a pair
    /// not above the last.
    Refused,
    Entry(Option<(B, B)>),
    /// `mdb_cursor_count`.
    Count(u64),
    /// A cursor result the engines define differently (see the module doc).
    Unchecked,
    /// Every database in full.
    Snapshot(Vec<DbSnap>),
    /// An unexpected error or panic: the engine stopped there.
    Error(String),
}

/// A database's entries, in a scan's order.
type Scan = Vec<(B, B)>;

/// One database in full: its entry count, its pairs forward and backward,
/// and (DUPSORT) its keys with their value counts, forward by `NEXT_NODUP`
/// and backward by `PREV_NODUP`.
#[derive(Clone, Debug, PartialEq)]
struct DbSnap {
    entries: u64,
    fwd: Scan,
    bwd: Scan,
    keys_fwd: Vec<(B, u64)>,
    keys_bwd: Vec<(B, u64)>,
}

/// What a cursor move gave.
enum Got {
    Pair(Option<(B, B)>),
    Count(u64),
}

/// Where a cursor stands, as far as the compared outcomes tell (so the same
/// for both engines).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum At {
    /// No move has found a pair (the cursor is new, or its database empty).
    Fresh,
    /// On the same pair in both.
    On,
    /// Past the end after a `SET_RANGE` that found nothing.
    PastEnd,
    /// Where a write cursor's pair was deleted: `NEXT` gives the pair after
    /// it, `PREV` the pair before.
    Deleted,
    /// The engines' cursors may stand in different places (see the module
    /// doc), until a move that positions from scratch.
    Lost,
}

/// A cursor's [`At`] in a database with or without duplicates.
struct Pos {
    at: At,
    dups: bool,
}

impl Pos {
    fn new(dups: bool) -> Pos {
        Pos {
            at: At::Fresh,
            dups,
        }
    }

    /// Whether the engines define `m` alike here.
    fn checked(&self, m: &Move) -> bool {
        match self.at {
            At::On => true,
            At::Lost => !m.relative(),
            // LMDB's cursor stands on the next pair, flagged so that NEXT
            // returns it; any other read clears the flag, Sarsen's has none.
            At::Deleted => !m.relative() || matches!(m, Move::Next | Move::Prev),
            // From a cursor never positioned LMDB's NEXT_DUP and PREV_DUP go
            // to the first and last pair; Sarsen's find nothing.
            At::Fresh => !matches!(m, Move::NextDup | Move::PrevDup),
            // Without DUPSORT, all moves are the same in both. With it,
            // LMDB's PREV_DUP goes to the last pair, Sarsen's finds nothing;
            // and LMDB cannot run the forward moves (`lmdb_skips`).
            At::PastEnd => {
                !self.dups
                    || !m.relative()
                    || matches!(m, Move::Prev | Move::PrevNoDup | Move::Current)
            }
        }
    }

    /// Whether LMDB must not run `m`: any move not compared (Sarsen runs
    /// them all, and they must not fail). After a missed `SET*` or
    /// `GET_BOTH*` LMDB's cursor may stand past the last node of a leaf,
    /// where a DUPSORT `NEXT`, `NEXT_DUP`, `NEXT_NODUP` or count reads a node
    /// that is not there.
    fn lmdb_skips(&self, m: &Move) -> bool {
        !self.checked(m)
    }

    /// The outcome of `m`, which gave `r`, and the cursor's new state.
    fn outcome(&mut self, m: &Move, r: Got) -> Outcome {
        if !self.checked(m) {
            self.at = At::Lost;
            return Outcome::Unchecked;
        }
        let r = match r {
            Got::Count(n) => return Outcome::Count(n),
            Got::Pair(r) => r,
        };
        let found = r.is_some();
        self.at = match m {
            // No move, or one that stays where it was when it finds nothing
            // (on a pair, both; unpositioned, both; `Deleted` allows none).
            Move::Current | Move::Count | Move::NextDup | Move::PrevDup => self.at,
            Move::FirstDup | Move::LastDup | Move::Multiple => self.at,
            _ if found => At::On,
            // An empty database.
            Move::First | Move::Last => At::Fresh,
            Move::SetRange(_) => At::PastEnd,
            // After a failed step or a missed SET the engines stand apart.
            _ => At::Lost,
        };
        match m {
            Move::Set(_) => Outcome::Found(r.map(|(_, v)| v)),
            _ => Outcome::Entry(r),
        }
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
        for (i, spec) in self.case.dbs.iter().enumerate() {
            self.dbs[i] = t
                .open_db_with(spec.0.as_deref(), &spec.sarsen())?
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
                    let spec = &self.case.dbs[*i];
                    let r = match spec {
                        DbSpec(name, Order::Bytewise, None) => t.create_db(name.as_deref()),
                        DbSpec(name, ..) => t.create_db_with(name.as_deref(), &spec.sarsen()),
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
                Instr::PutNoDupData(i, k, v) => {
                    t.put_no_dup_data(db(i), k, &v.bytes()).map(Outcome::Added)
                }
                Instr::AppendDup(i, k, v) => match t.append_dup(db(i), k, &v.bytes()) {
                    Err(Error::KeyNotGreater) => Ok(Outcome::Refused),
                    r => r.map(|()| Outcome::Ok),
                },
                Instr::DelData(i, k, v) => t.delete_dup(db(i), k, &v.bytes()).map(Outcome::Deleted),
                Instr::WCursorOpen(i) => {
                    self.s_wcursor(t, *i)?;
                    continue;
                }
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
        let mut pos = Pos::new(self.case.dbs[db].2.is_some());
        loop {
            let m = match self.at() {
                Some(Instr::Move(m)) => m,
                Some(Instr::CursorClose) => {
                    self.emit(Outcome::Ok);
                    return Ok(());
                }
                _ => return Err(self.unexpected("in a cursor session")),
            };
            // Sarsen runs even what LMDB skips (`Pos::lmdb_skips`).
            let r = s_move(&mut c, m).map_err(|e| self.fail(e))?;
            let o = pos.outcome(m, r);
            self.emit(o);
        }
    }

    fn s_wcursor(&mut self, t: &mut RwTxn<'_>, db: usize) -> Flow {
        let mut c = t.cursor_mut(self.dbs[db]).map_err(|e| self.fail(e))?;
        self.emit(Outcome::Ok);
        let mut pos = Pos::new(self.case.dbs[db].2.is_some());
        loop {
            let on = pos.at == At::On;
            let r = match self.at() {
                Some(Instr::CursorClose) => {
                    self.emit(Outcome::Ok);
                    return Ok(());
                }
                Some(Instr::Move(m)) => {
                    let r = s_wmove(&mut c, m).map_err(|e| self.fail(e))?;
                    let o = pos.outcome(m, r);
                    self.emit(o);
                    continue;
                }
                Some(Instr::CurPut(k, v)) => {
                    pos.at = At::On;
                    c.put(k, &v.bytes())
                }
                Some(Instr::CurPutCurrent(v)) if on => {
                    let v = match v {
                        Some(v) => v.bytes(),
                        None => c.current().map_or(Vec::new(), |e| e.1.to_vec()),
                    };
                    c.put_current(&v)
                }
                Some(Instr::CurDel) if on => {
                    pos.at = At::Deleted;
                    c.delete_current()
                }
                Some(Instr::CurDelKey) if on => {
                    pos.at = At::Deleted;
                    c.delete_current_key()
                }
                // Off a pair: run in neither engine.
                Some(Instr::CurPutCurrent(_) | Instr::CurDel | Instr::CurDelKey) => {
                    self.emit(Outcome::Unchecked);
                    continue;
                }
                _ => return Err(self.unexpected("in a write-cursor session")),
            };
            let r = r.map(|()| Outcome::Ok);
            self.emit_or_fail(r)?;
        }
    }

    fn s_snapshot<V: View>(&self, v: &V) -> sarsen::Result<Outcome> {
        let mut snaps = Vec::new();
        for (i, &db) in self.dbs.iter().enumerate() {
            let entries = v.v_stat(db)?.entries;
            let fwd = v
                .v_iter(db)?
                .map(|e| e.map(owned))
                .collect::<sarsen::Result<_>>()?;
            let bwd = v
                .v_iter(db)?
                .rev()
                .map(|e| e.map(owned))
                .collect::<sarsen::Result<_>>()?;
            let (mut keys_fwd, mut keys_bwd) = (Vec::new(), Vec::new());
            if self.case.dbs[i].2.is_some() {
                let mut c = v.v_cursor(db)?;
                let mut e = c.first()?;
                while let Some((k, _)) = e {
                    keys_fwd.push((B(k.to_vec()), c.dup_count()?));
                    e = c.next_nodup()?;
                }
                let mut e = c.last()?;
                while let Some((k, _)) = e {
                    keys_bwd.push((B(k.to_vec()), c.dup_count()?));
                    e = c.prev_nodup()?;
                }
            }
            snaps.push(DbSnap {
                entries,
                fwd,
                bwd,
                keys_fwd,
                keys_bwd,
            });
        }
        Ok(Outcome::Snapshot(snaps))
    }
}

/// Runs `m` on a Sarsen cursor; an error as text (Sarsen's, or the
/// harness's on a malformed batch).
fn s_move(c: &mut Cursor<'_>, m: &Move) -> Result<Got, String> {
    let pair = |r: sarsen::Result<Option<(&[u8], &[u8])>>| {
        r.map(|e| Got::Pair(e.map(owned)))
            .map_err(|e| e.to_string())
    };
    match m {
        Move::First => pair(c.first()),
        Move::Last => pair(c.last()),
        Move::Next => pair(c.next()),
        Move::Prev => pair(c.prev()),
        Move::Current => pair(c.current()),
        Move::SetRange(k) => pair(c.seek(k)),
        Move::Set(k) | Move::SetKey(k) => pair(c.seek_exact(k).map(|v| v.map(|v| (&k[..], v)))),
        Move::GetBoth(k, v) => pair(c.seek_both(k, &v.bytes())),
        Move::GetBothRange(k, v) => pair(c.seek_both_range(k, &v.bytes())),
        Move::NextDup => pair(c.next_dup()),
        Move::PrevDup => pair(c.prev_dup()),
        Move::FirstDup => pair(c.first_dup()),
        Move::LastDup => pair(c.last_dup()),
        Move::NextNoDup => pair(c.next_nodup()),
        Move::PrevNoDup => pair(c.prev_nodup()),
        Move::Count => c.dup_count().map(Got::Count).map_err(|e| e.to_string()),
        Move::Multiple => s_multiple(c).map_err(|e| e.to_string()),
    }
}

/// Runs `m` on a Sarsen write cursor (which has no `FIRST_DUP`, `LAST_DUP`
/// or `GET_MULTIPLE`).
fn s_wmove(c: &mut sarsen::RwCursor<'_, '_>, m: &Move) -> Result<Got, String> {
    let pair = |r: sarsen::Result<Option<(&[u8], &[u8])>>| {
        r.map(|e| Got::Pair(e.map(owned)))
            .map_err(|e| e.to_string())
    };
    match m {
        Move::First => pair(c.first()),
        Move::Last => pair(c.last()),
        Move::Next => pair(c.next()),
        Move::Prev => pair(c.prev()),
        Move::Current => pair(Ok(c.current())),
        Move::SetRange(k) => pair(c.seek(k)),
        Move::Set(k) | Move::SetKey(k) => pair(c.seek_exact(k)),
        Move::GetBoth(k, v) => pair(c.seek_both(k, &v.bytes())),
        Move::GetBothRange(k, v) => pair(c.seek_both_range(k, &v.bytes())),
        Move::NextDup => pair(c.next_dup()),
        Move::PrevDup => pair(c.prev_dup()),
        Move::NextNoDup => pair(c.next_nodup()),
        Move::PrevNoDup => pair(c.prev_nodup()),
        Move::Count => c.dup_count().map(Got::Count).map_err(|e| e.to_string()),
        Move::FirstDup | Move::LastDup | Move::Multiple => {
            Err(format!("harness: {m:?} on a write cursor"))
        }
    }
}

/// `Move::Multiple` on a Sarsen cursor.
fn s_multiple(c: &mut Cursor<'_>) -> Result<Got, Box<dyn std::error::Error>> {
    let Some((k, first)) = c.first_dup()? else {
        return Ok(Got::Pair(None));
    };
    let (k, size) = (B(k.to_vec()), first.len());
    let mut all = Vec::new();
    let mut batch = c.get_multiple()?.map(|(bk, b)| (bk == &k[..], b.to_vec()));
    while let Some((same_key, b)) = batch {
        if !same_key || b.is_empty() || b.len() % size != 0 {
            let n = b.len();
            Err(format!("harness: a batch of {n} bytes, values of {size}"))?;
        }
        all.extend_from_slice(&b);
        batch = c.next_multiple()?.map(|(bk, b)| (bk == &k[..], b.to_vec()));
    }
    Ok(Got::Pair(Some((k, B(all)))))
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
        for (i, spec) in self.case.dbs.iter().enumerate() {
            self.dbs[i] = t.open_db(spec.0.as_deref(), spec.lmdb_flags())?;
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
                    let spec = &self.case.dbs[*i];
                    let r = t.open_db(spec.0.as_deref(), spec.lmdb_flags() | lmdb::MDB_CREATE);
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
                Instr::PutNoDupData(i, k, v) => t
                    .put_unless_exists(db(i), k, &v.bytes(), lmdb::MDB_NODUPDATA)
                    .map(Outcome::Added),
                // Sarsen appends after the database's last pair only; LMDB
                // takes any key (see the module doc).
                Instr::AppendDup(i, k, v) => match t.below_last(db(i), k) {
                    Ok(true) => Ok(Outcome::Refused),
                    Ok(false) => t
                        .put_unless_exists(db(i), k, &v.bytes(), lmdb::MDB_APPENDDUP)
                        .map(|added| if added { Outcome::Ok } else { Outcome::Refused }),
                    Err(e) => Err(e),
                },
                Instr::DelData(i, k, v) => t.del_data(db(i), k, &v.bytes()).map(Outcome::Deleted),
                Instr::WCursorOpen(i) => {
                    self.l_wcursor(t, *i)?;
                    continue;
                }
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
        let mut c = t.cursor(self.dbs[db]).map_err(|e| self.fail(e))?;
        self.emit(Outcome::Ok);
        let mut pos = Pos::new(self.case.dbs[db].2.is_some());
        loop {
            let m = match self.at() {
                Some(Instr::Move(m)) => m,
                Some(Instr::CursorClose) => {
                    self.emit(Outcome::Ok);
                    return Ok(());
                }
                _ => return Err(self.unexpected("in a cursor session")),
            };
            // Not run, so unchecked (`lmdb_skips` implies it).
            let r = if pos.lmdb_skips(m) {
                Got::Pair(None)
            } else {
                l_move(&mut c, m).map_err(|e| self.fail(e))?
            };
            let o = pos.outcome(m, r);
            self.emit(o);
        }
    }

    fn l_wcursor(&mut self, t: &mut lmdb::Txn<'_>, db: usize) -> Flow {
        use lmdb::{MDB_CURRENT, MDB_GET_CURRENT, MDB_NODUPDATA};
        let mut c = t.write_cursor(self.dbs[db]).map_err(|e| self.fail(e))?;
        self.emit(Outcome::Ok);
        let mut pos = Pos::new(self.case.dbs[db].2.is_some());
        loop {
            let on = pos.at == At::On;
            let r = match self.at() {
                Some(Instr::CursorClose) => {
                    self.emit(Outcome::Ok);
                    return Ok(());
                }
                Some(Instr::Move(m)) => {
                    let r = if pos.lmdb_skips(m) {
                        Got::Pair(None)
                    } else {
                        l_move(&mut c, m).map_err(|e| self.fail(e))?
                    };
                    let o = pos.outcome(m, r);
                    self.emit(o);
                    continue;
                }
                Some(Instr::CurPut(k, v)) => {
                    pos.at = At::On;
                    c.put(k, &v.bytes(), 0)
                }
                // MDB_CURRENT takes the key too: the one the cursor is on.
                Some(Instr::CurPutCurrent(v)) if on => match c.get(MDB_GET_CURRENT, None, None) {
                    Ok(Some((k, old))) => {
                        let v = v.as_ref().map_or(old, |v| v.bytes());
                        c.put(&k, &v, MDB_CURRENT)
                    }
                    Ok(None) => Err(lmdb::Code(lmdb::MDB_PROBLEM)),
                    Err(e) => Err(e),
                },
                Some(Instr::CurDel) if on => {
                    pos.at = At::Deleted;
                    l_refresh(&mut c, pos.dups).and_then(|()| c.del(0))
                }
                Some(Instr::CurDelKey) if on => {
                    pos.at = At::Deleted;
                    l_refresh(&mut c, pos.dups).and_then(|()| c.del(MDB_NODUPDATA))
                }
                Some(Instr::CurPutCurrent(_) | Instr::CurDel | Instr::CurDelKey) => {
                    self.emit(Outcome::Unchecked);
                    continue;
                }
                _ => return Err(self.unexpected("in a write-cursor session")),
            };
            let r = r.map(|()| Outcome::Ok);
            self.emit_or_fail(r)?;
        }
    }

    fn l_snapshot(&self, t: &lmdb::Txn<'_>) -> lmdb::Res<Outcome> {
        use lmdb::{MDB_FIRST, MDB_LAST, MDB_NEXT, MDB_NEXT_NODUP, MDB_PREV, MDB_PREV_NODUP};
        let mut snaps = Vec::new();
        for (i, &dbi) in self.dbs.iter().enumerate() {
            let scan = |first: u32, step: u32| -> lmdb::Res<Scan> {
                let (mut c, mut v) = (t.cursor(dbi)?, Vec::new());
                let mut e = c.get(first, None, None)?;
                while let Some((k, d)) = e {
                    v.push((B(k), B(d)));
                    e = c.get(step, None, None)?;
                }
                Ok(v)
            };
            let keys = |first: u32, step: u32| -> lmdb::Res<Vec<(B, u64)>> {
                let (mut c, mut v) = (t.cursor(dbi)?, Vec::new());
                let mut e = c.get(first, None, None)?;
                while let Some((k, _)) = e {
                    v.push((B(k), c.count()?));
                    e = c.get(step, None, None)?;
                }
                Ok(v)
            };
            let dups = self.case.dbs[i].2.is_some();
            snaps.push(DbSnap {
                entries: t.entries(dbi)?,
                fwd: scan(MDB_FIRST, MDB_NEXT)?,
                bwd: scan(MDB_LAST, MDB_PREV)?,
                keys_fwd: if dups {
                    keys(MDB_FIRST, MDB_NEXT_NODUP)?
                } else {
                    Vec::new()
                },
                keys_bwd: if dups {
                    keys(MDB_LAST, MDB_PREV_NODUP)?
                } else {
                    Vec::new()
                },
            });
        }
        Ok(Outcome::Snapshot(snaps))
    }
}

/// Runs `m` on an LMDB cursor.
fn l_move(c: &mut lmdb::Cursor<'_>, m: &Move) -> lmdb::Res<Got> {
    use lmdb::{Code, MDB_FIRST, MDB_FIRST_DUP, MDB_GET_BOTH, MDB_GET_BOTH_RANGE};
    use lmdb::{MDB_GET_CURRENT, MDB_LAST, MDB_LAST_DUP, MDB_NEXT, MDB_NEXT_DUP};
    use lmdb::{MDB_NEXT_NODUP, MDB_PREV, MDB_PREV_DUP, MDB_PREV_NODUP};
    use lmdb::{MDB_SET, MDB_SET_KEY, MDB_SET_RANGE};
    let (op, key, data) = match m {
        Move::First => (MDB_FIRST, None, None),
        Move::Last => (MDB_LAST, None, None),
        Move::Next => (MDB_NEXT, None, None),
        Move::Prev => (MDB_PREV, None, None),
        Move::Current => (MDB_GET_CURRENT, None, None),
        Move::SetRange(k) => (MDB_SET_RANGE, Some(&k[..]), None),
        Move::Set(k) => (MDB_SET, Some(&k[..]), None),
        Move::SetKey(k) => (MDB_SET_KEY, Some(&k[..]), None),
        Move::GetBoth(k, v) => (MDB_GET_BOTH, Some(&k[..]), Some(v.bytes())),
        Move::GetBothRange(k, v) => (MDB_GET_BOTH_RANGE, Some(&k[..]), Some(v.bytes())),
        Move::NextDup => (MDB_NEXT_DUP, None, None),
        Move::PrevDup => (MDB_PREV_DUP, None, None),
        Move::FirstDup => (MDB_FIRST_DUP, None, None),
        Move::LastDup => (MDB_LAST_DUP, None, None),
        Move::NextNoDup => (MDB_NEXT_NODUP, None, None),
        Move::PrevNoDup => (MDB_PREV_NODUP, None, None),
        // Never positioned: LMDB says EINVAL, Sarsen 0.
        Move::Count => {
            return match c.count() {
                Err(Code(libc::EINVAL)) => Ok(Got::Count(0)),
                r => r.map(Got::Count),
            }
        }
        Move::Multiple => return l_multiple(c),
    };
    let dup_end = matches!(op, MDB_FIRST_DUP | MDB_LAST_DUP);
    Ok(Got::Pair(
        match c.get(op, key, data.as_deref()) {
            // Never positioned: LMDB says EINVAL, Sarsen "no entry".
            Err(Code(libc::EINVAL)) if dup_end || op == MDB_GET_CURRENT => None,
            // FIRST_DUP and LAST_DUP give no key (LMDB sets it only for a key
            // with one value): take the one the cursor stands on.
            Ok(Some(_)) if dup_end => c.get(MDB_GET_CURRENT, None, None)?,
            r => r?,
        }
        .map(|(k, v)| (B(k), B(v))),
    ))
}

/// Before a delete at an LMDB write cursor: places it again on the pair it
/// stands on (`GET_BOTH`, or `SET_KEY` without DUPSORT), clearing what
/// earlier moves left in it, which two LMDB bugs make wrong after the
/// delete (see the module doc and `lmdb_cursor_write_bugs`): the sub-cursor
/// of a key it stepped from, and the end flag of a failed `NEXT` that a put
/// of a new key at the cursor keeps.
fn l_refresh(c: &mut lmdb::Cursor<'_>, dups: bool) -> lmdb::Res<()> {
    use lmdb::{MDB_GET_BOTH, MDB_GET_CURRENT, MDB_SET_KEY};
    let Some((k, v)) = c.get(MDB_GET_CURRENT, None, None)? else {
        return Err(lmdb::Code(lmdb::MDB_PROBLEM));
    };
    let again = match dups {
        true => c.get(MDB_GET_BOTH, Some(&k), Some(&v))?,
        false => c.get(MDB_SET_KEY, Some(&k), None)?,
    };
    match again {
        Some(_) => Ok(()),
        None => Err(lmdb::Code(lmdb::MDB_PROBLEM)),
    }
}

/// `Move::Multiple` on an LMDB cursor. A key with one value may have no
/// sub-page, and then GET_MULTIPLE returns no data (or a page of the key
/// the cursor stood on before): its one value stands for the batch (see
/// the module doc).
fn l_multiple(c: &mut lmdb::Cursor<'_>) -> lmdb::Res<Got> {
    use lmdb::MDB_GET_CURRENT;
    use lmdb::{Code, MDB_FIRST_DUP, MDB_GET_MULTIPLE, MDB_NEXT_MULTIPLE};
    match c.get(MDB_FIRST_DUP, None, None) {
        Err(Code(libc::EINVAL)) | Ok(None) => return Ok(Got::Pair(None)),
        r => r?,
    };
    // FIRST_DUP may give no key (see `l_move`).
    let Some((k, first)) = c.get(MDB_GET_CURRENT, None, None)? else {
        return Err(Code(lmdb::MDB_PROBLEM));
    };
    if c.count()? == 1 {
        return Ok(Got::Pair(Some((B(k), B(first)))));
    }
    let mut all = Vec::new();
    let mut batch = c.get(MDB_GET_MULTIPLE, None, None)?;
    while let Some((_, b)) = batch {
        if b.is_empty() || b.len() % first.len() != 0 {
            // A malformed batch: the harness's assumption is wrong.
            return Err(Code(lmdb::MDB_PROBLEM));
        }
        all.extend_from_slice(&b);
        batch = c.get(MDB_NEXT_MULTIPLE, None, None)?;
    }
    Ok(Got::Pair(Some((B(k), B(all)))))
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

    pub use ffi::MDB_PROBLEM;
    pub use ffi::{MDB_APPEND, MDB_APPENDDUP, MDB_BAD_VALSIZE, MDB_CREATE, MDB_CURRENT};
    pub use ffi::{MDB_DUPFIXED, MDB_DUPSORT, MDB_INTEGERDUP, MDB_NODUPDATA, MDB_REVERSEDUP};
    pub use ffi::{MDB_FIRST, MDB_FIRST_DUP, MDB_GET_BOTH, MDB_GET_BOTH_RANGE, MDB_GET_CURRENT};
    pub use ffi::{MDB_GET_MULTIPLE, MDB_LAST, MDB_LAST_DUP, MDB_NEXT, MDB_NEXT_DUP};
    pub use ffi::{MDB_INTEGERKEY, MDB_KEYEXIST, MDB_PREV, MDB_PREV_DUP, MDB_REVERSEKEY};
    pub use ffi::{MDB_NEXT_MULTIPLE, MDB_NEXT_NODUP, MDB_PREV_NODUP};
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

        /// `mdb_put` with `flags` (`MDB_NODUPDATA`, `MDB_APPENDDUP`): `false`
        /// on `MDB_KEYEXIST`.
        pub fn put_unless_exists(
            &mut self,
            dbi: Dbi,
            key: &[u8],
            data: &[u8],
            flags: u32,
        ) -> Res<bool> {
            let (mut k, mut d) = (val(key), val(data));
            // SAFETY: as in `put`.
            match unsafe { ffi::mdb_put(self.0, dbi, &mut k, &mut d, flags) } {
                ffi::MDB_SUCCESS => Ok(true),
                ffi::MDB_KEYEXIST => Ok(false),
                rc => Err(Code(rc)),
            }
        }

        /// `mdb_del` with data: whether the pair was there.
        pub fn del_data(&mut self, dbi: Dbi, key: &[u8], data: &[u8]) -> Res<bool> {
            let (mut k, mut d) = (val(key), val(data));
            // SAFETY: as in `put`.
            match unsafe { ffi::mdb_del(self.0, dbi, &mut k, &mut d) } {
                ffi::MDB_SUCCESS => Ok(true),
                ffi::MDB_NOTFOUND => Ok(false),
                rc => Err(Code(rc)),
            }
        }

        /// Whether `key` sorts below the database's last key (`mdb_cmp`).
        pub fn below_last(&self, dbi: Dbi, key: &[u8]) -> Res<bool> {
            let Some((last, _)) = self.cursor(dbi)?.get(ffi::MDB_LAST, None, None)? else {
                return Ok(false);
            };
            let (a, b) = (val(key), val(&last));
            // SAFETY: the transaction is live, `dbi` open, both point to live
            // slices.
            Ok(unsafe { ffi::mdb_cmp(self.0, dbi, &a, &b) } < 0)
        }

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

        /// A cursor that may write (`Cursor::put`, `Cursor::del`): it
        /// borrows the write transaction mutably, so nothing else reads or
        /// writes it meanwhile.
        pub fn write_cursor(&mut self, dbi: Dbi) -> Res<Cursor<'_>> {
            self.cursor(dbi)
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

    impl Cursor<'_> {
        /// `mdb_cursor_get` with `op`, (for the SET ops) `key` and (for the
        /// GET_BOTH ops) `data`; `None` on `MDB_NOTFOUND`. GET_MULTIPLE and
        /// NEXT_MULTIPLE return the batch (values back to back) as the data.
        pub fn get(
            &mut self,
            op: u32,
            key: Option<&[u8]>,
            data: Option<&[u8]>,
        ) -> Res<Option<(Vec<u8>, Vec<u8>)>> {
            let (mut k, mut d) = (val(key.unwrap_or(&[])), val(data.unwrap_or(&[])));
            // SAFETY: the cursor is open in a live transaction that cannot
            // change meanwhile (it is borrowed); `k` and `d` point to live
            // slices.
            match unsafe { ffi::mdb_cursor_get(self.0, &mut k, &mut d, op) } {
                // SAFETY: both come from the successful call just made (or are
                // still our own slices, as `k` for MDB_SET).
                ffi::MDB_SUCCESS => Ok(Some(unsafe { (copy(&k), copy(&d)) })),
                ffi::MDB_NOTFOUND => Ok(None),
                rc => Err(Code(rc)),
            }
        }

        /// `mdb_cursor_put` with `flags` (0 or `MDB_CURRENT`), in a write
        /// transaction.
        pub fn put(&mut self, key: &[u8], data: &[u8], flags: u32) -> Res<()> {
            let (mut k, mut d) = (val(key), val(data));
            // SAFETY: a cursor from `write_cursor`: open in a live write
            // transaction with no live child, which nothing else uses
            // meanwhile (the cursor borrows it mutably); `k` and `d` point
            // to live slices (LMDB copies them).
            check(unsafe { ffi::mdb_cursor_put(self.0, &mut k, &mut d, flags) })
        }

        /// `mdb_cursor_del` with `flags` (0 or `MDB_NODUPDATA`).
        pub fn del(&mut self, flags: u32) -> Res<()> {
            // SAFETY: as in `put`.
            check(unsafe { ffi::mdb_cursor_del(self.0, flags) })
        }

        /// `mdb_cursor_count`.
        pub fn count(&self) -> Res<u64> {
            let mut n = 0;
            // SAFETY: the cursor is open in a live transaction; the out
            // pointer is valid.
            check(unsafe { ffi::mdb_cursor_count(self.0, &mut n) })?;
            Ok(n as u64)
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
/// reverse must be caught, and so must bytewise values where LMDB's are in
/// reverse order (`MDB_REVERSEDUP`).
#[test]
fn harness_catches_a_wrong_order() {
    let rev = Some(Dups {
        order: Order::Reverse,
        fixed: false,
    });
    for (order, dups) in [(Order::Reverse, None), (Order::Bytewise, rev)] {
        let dbs = vec![DbSpec(Some("db0".into()), order, dups)];
        let case = gen_program(7, SmallRng::seed_from_u64(7), 4096, false, dbs);
        let mut wrong = case.clone();
        wrong.dbs[0].1 = Order::Bytewise;
        wrong.dbs[0].2 = dups.map(|d| Dups {
            order: Order::Bytewise,
            ..d
        });
        let m = compare(&run_lmdb(&case), &run_sarsen(&wrong));
        let m = m.expect("a wrong order must be caught");
        assert!(
            !matches!(m.1, Some(Outcome::Error(_))),
            "LMDB failed: {:?}",
            m.1
        );
    }
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
        let mut l = |op, key: Option<&[u8]>| lc.get(op, key, None).unwrap();
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
        assert_eq!(lc.get(MDB_GET_CURRENT, None, None), Err(Code(libc::EINVAL)));
        assert_eq!(s(st.cursor(db).unwrap().current()), None);
    }
    // Empty keys: LMDB refuses them, Sarsen's bytewise order takes them.
    assert_eq!(lt.put(dbi, b"", b"v", 0), Err(Code(MDB_BAD_VALSIZE)));
    st.put(db, b"", b"v").unwrap();
    assert_eq!(st.get(db, b"").unwrap(), Some(&b"v"[..]));
}

/// The DUPSORT differences the module doc lists, pinned likewise.
#[test]
fn documented_dup_differences() {
    use lmdb::{Code, MDB_APPENDDUP, MDB_CREATE, MDB_DUPFIXED, MDB_DUPSORT, MDB_FIRST_DUP};
    use lmdb::{MDB_GET_BOTH, MDB_GET_MULTIPLE, MDB_NEXT_DUP, MDB_NEXT_NODUP, MDB_PREV_DUP};
    use lmdb::{MDB_SET_KEY, MDB_SET_RANGE};
    let ldir = tempfile::tempdir().unwrap();
    let le = lmdb::Env::open(ldir.path(), MAP_SIZE, 8).unwrap();
    let mut lt = le.begin(false).unwrap();
    let lf = lt
        .open_db(Some("f"), MDB_DUPSORT | MDB_DUPFIXED | MDB_CREATE)
        .unwrap();
    let lv = lt.open_db(Some("v"), MDB_DUPSORT | MDB_CREATE).unwrap();
    let sdir = tempfile::tempdir().unwrap();
    let case = Case {
        seed: 0,
        page_size: 4096,
        write_map: false,
        dbs: vec![],
        prog: vec![],
    };
    let se = open_sarsen(sdir.path(), &case).unwrap();
    let mut st = se.write_txn().unwrap();
    let fixed = DbSpec(
        None,
        Order::Bytewise,
        Some(Dups {
            order: Order::Bytewise,
            fixed: true,
        }),
    );
    let sf = st.create_db_with(Some("f"), &fixed.sarsen()).unwrap();
    let sv = st
        .create_db_with(Some("v"), &DbOptions::new().dup_sort(KeyOrder::Bytewise))
        .unwrap();
    // a: 1 2 3, b: 1, c: 1 2 (one-byte values).
    for (k, v) in [
        (b"a", b"1"),
        (b"a", b"2"),
        (b"a", b"3"),
        (b"b", b"1"),
        (b"c", b"1"),
        (b"c", b"2"),
    ] {
        lt.put(lf, k, v, 0).unwrap();
        st.put(sf, k, v).unwrap();
    }
    let e = |k: &[u8], v: &[u8]| Some((k.to_vec(), v.to_vec()));
    let s = |r: sarsen::Result<Option<(&[u8], &[u8])>>| {
        r.unwrap().map(|(k, v)| (k.to_vec(), v.to_vec()))
    };
    {
        let (mut lc, mut sc) = (lt.cursor(lf).unwrap(), st.cursor(sf).unwrap());
        // Never positioned: LMDB's NEXT_DUP and PREV_DUP move as NEXT and
        // PREV would; FIRST_DUP and the count are EINVAL.
        assert_eq!(lc.get(MDB_FIRST_DUP, None, None), Err(Code(libc::EINVAL)));
        assert_eq!(s(sc.first_dup()), None);
        assert_eq!(lc.count(), Err(Code(libc::EINVAL)));
        assert_eq!(sc.dup_count().unwrap(), 0);
        assert_eq!(
            (lc.get(MDB_NEXT_DUP, None, None).unwrap(), s(sc.next_dup())),
            (e(b"a", b"1"), None)
        );
        let (mut lc, mut sc) = (lt.cursor(lf).unwrap(), st.cursor(sf).unwrap());
        assert_eq!(
            (lc.get(MDB_PREV_DUP, None, None).unwrap(), s(sc.prev_dup())),
            (e(b"c", b"2"), None)
        );
        // FIRST_DUP on a key with several values gives no key.
        assert_eq!(
            lc.get(MDB_SET_KEY, Some(b"a"), None).unwrap(),
            e(b"a", b"1")
        );
        assert_eq!(s(sc.seek_both(b"a", b"1")), e(b"a", b"1"));
        assert_eq!(
            (
                lc.get(MDB_FIRST_DUP, None, None).unwrap(),
                s(sc.first_dup())
            ),
            (e(b"", b"1"), e(b"a", b"1"))
        );
        // GET_MULTIPLE from the middle of a key: LMDB's batch is the whole
        // sub-page, Sarsen's starts at the current value.
        assert_eq!(
            lc.get(MDB_GET_BOTH, Some(b"a"), Some(b"2")).unwrap(),
            e(b"a", b"2")
        );
        assert_eq!(s(sc.seek_both(b"a", b"2")), e(b"a", b"2"));
        let batch = |r: Option<(&[u8], &[u8])>| r.map(|(_, b)| b.to_vec());
        assert_eq!(
            lc.get(MDB_GET_MULTIPLE, None, None).unwrap().map(|x| x.1),
            Some(b"123".to_vec())
        );
        assert_eq!(batch(sc.get_multiple().unwrap()), Some(b"23".to_vec()));
        // GET_MULTIPLE on a key with one value: LMDB returns the sub-page of
        // the key the cursor came from.
        assert_eq!(
            (
                lc.get(MDB_NEXT_NODUP, None, None).unwrap(),
                s(sc.next_nodup())
            ),
            (e(b"b", b"1"), e(b"b", b"1"))
        );
        assert_eq!(
            lc.get(MDB_GET_MULTIPLE, None, None).unwrap().map(|x| x.1),
            Some(b"123".to_vec())
        );
        assert_eq!(batch(sc.get_multiple().unwrap()), Some(b"1".to_vec()));
        // Past the end after SET_RANGE: LMDB's PREV_DUP goes to the last pair.
        assert_eq!(
            (
                lc.get(MDB_SET_RANGE, Some(b"d"), None).unwrap(),
                s(sc.seek(b"d"))
            ),
            (None, None)
        );
        assert_eq!(
            (lc.get(MDB_PREV_DUP, None, None).unwrap(), s(sc.prev_dup())),
            (e(b"c", b"2"), None)
        );
    }
    // APPENDDUP of a key below the last: LMDB appends to that key's values,
    // Sarsen appends after the database's last pair only.
    assert_eq!(
        lt.put_unless_exists(lf, b"a", b"4", MDB_APPENDDUP),
        Ok(true)
    );
    assert!(matches!(
        st.append_dup(sf, b"a", b"4"),
        Err(Error::KeyNotGreater)
    ));
    // An empty value beside others: LMDB loses it when the key gets a
    // second value (and counts both), and refuses a second empty one;
    // Sarsen keeps it.
    for v in [&b""[..], b"x"] {
        lt.put(lv, b"k", v, 0).unwrap();
        st.put(sv, b"k", v).unwrap();
    }
    let mut lc = lt.cursor(lv).unwrap();
    assert_eq!(
        lc.get(MDB_SET_KEY, Some(b"k"), None).unwrap(),
        e(b"k", b"x")
    );
    assert_eq!((lc.count(), lt.entries(lv)), (Ok(1), Ok(2)));
    drop(lc);
    let all: Vec<(&[u8], &[u8])> = st.iter(sv).unwrap().map(|e| e.unwrap()).collect();
    assert_eq!(all, [(&b"k"[..], &b""[..]), (b"k", b"x")]);
    assert_eq!(st.stat(sv).unwrap().entries, 2);
    assert_eq!(lt.put(lv, b"j", b"", 0), Ok(()));
    assert_eq!(lt.put(lv, b"j", b"y", 0), Ok(()));
    assert_eq!(lt.put(lv, b"j", b"", 0), Err(Code(lmdb::MDB_BAD_VALSIZE)));
}

/// The LMDB bugs the module doc lists, which `l_refresh` works around: a
/// write cursor that steps from a key with several values to one with a
/// single value and deletes it is left on the next key with the sub-cursor
/// of the first; a put of a new key at a cursor keeps the end flag of a
/// failed `NEXT`, which `NEXT` obeys after a delete.
#[test]
fn lmdb_cursor_write_bugs() {
    use lmdb::MDB_SET_RANGE;
    use lmdb::{MDB_CREATE, MDB_DUPSORT, MDB_GET_BOTH, MDB_NEXT, MDB_SET_KEY};
    let ldir = tempfile::tempdir().unwrap();
    let le = lmdb::Env::open(ldir.path(), MAP_SIZE, 8).unwrap();
    let mut lt = le.begin(false).unwrap();
    let sdir = tempfile::tempdir().unwrap();
    let case = Case {
        seed: 0,
        page_size: 4096,
        write_map: false,
        dbs: vec![],
        prog: vec![],
    };
    let se = open_sarsen(sdir.path(), &case).unwrap();
    let mut st = se.write_txn().unwrap();
    let opts = DbOptions::new().dup_sort(KeyOrder::Bytewise);
    let e = |k: &[u8], v: &[u8]| Some((k.to_vec(), v.to_vec()));
    let s = |r: sarsen::Result<Option<(&[u8], &[u8])>>| {
        r.unwrap().map(|(k, v)| (k.to_vec(), v.to_vec()))
    };
    // NEXT after the delete returns the value the old sub-cursor's index
    // points at: c's third value, not its first.
    let ld = lt.open_db(Some("d"), MDB_DUPSORT | MDB_CREATE).unwrap();
    let sd = st.create_db_with(Some("d"), &opts).unwrap();
    let pairs = [(b"a", b"1"), (b"a", b"2"), (b"a", b"3"), (b"b", b"1")];
    let pairs = pairs
        .into_iter()
        .chain([(b"c", b"1"), (b"c", b"2"), (b"c", b"3"), (b"c", b"4")]);
    for (k, v) in pairs {
        lt.put(ld, k, v, 0).unwrap();
        st.put(sd, k, v).unwrap();
    }
    {
        let (mut lc, mut sc) = (lt.write_cursor(ld).unwrap(), st.cursor_mut(sd).unwrap());
        assert_eq!(
            lc.get(MDB_GET_BOTH, Some(b"a"), Some(b"3")).unwrap(),
            e(b"a", b"3")
        );
        assert_eq!(s(sc.seek_both(b"a", b"3")), e(b"a", b"3"));
        assert_eq!(
            (lc.get(MDB_NEXT, None, None).unwrap(), s(sc.next())),
            (e(b"b", b"1"), e(b"b", b"1"))
        );
        lc.del(0).unwrap();
        sc.delete_current().unwrap();
        assert_eq!(
            (lc.get(MDB_NEXT, None, None).unwrap(), s(sc.next())),
            (e(b"c", b"3"), e(b"c", b"1"))
        );
    }
    // With a first key whose sub-page holds one value, the next delete at
    // the cursor takes the whole next key: c's second value is lost.
    let ld = lt.open_db(Some("l"), MDB_DUPSORT | MDB_CREATE).unwrap();
    let sd = st.create_db_with(Some("l"), &opts).unwrap();
    for (k, v) in [
        (b"a", b"1"),
        (b"a", b"2"),
        (b"b", b"1"),
        (b"c", b"1"),
        (b"c", b"2"),
    ] {
        lt.put(ld, k, v, 0).unwrap();
        st.put(sd, k, v).unwrap();
    }
    assert_eq!(lt.del_data(ld, b"a", b"1"), Ok(true));
    assert!(st.delete_dup(sd, b"a", b"1").unwrap());
    {
        let (mut lc, mut sc) = (lt.write_cursor(ld).unwrap(), st.cursor_mut(sd).unwrap());
        assert_eq!(
            lc.get(MDB_SET_KEY, Some(b"a"), None).unwrap(),
            e(b"a", b"2")
        );
        assert_eq!(s(sc.seek_exact(b"a")), e(b"a", b"2"));
        assert_eq!(
            (lc.get(MDB_NEXT, None, None).unwrap(), s(sc.next())),
            (e(b"b", b"1"), e(b"b", b"1"))
        );
        lc.del(0).unwrap();
        sc.delete_current().unwrap();
        assert_eq!(
            (lc.get(MDB_NEXT, None, None).unwrap(), s(sc.next())),
            (e(b"c", b"1"), e(b"c", b"1"))
        );
        lc.del(0).unwrap();
        sc.delete_current().unwrap();
    }
    assert_eq!(
        (lt.get(ld, b"c"), st.get(sd, b"c").unwrap()),
        (Ok(None), Some(&b"2"[..]))
    );
    // LMDB's entry count still counts it.
    assert_eq!((lt.entries(ld), st.stat(sd).unwrap().entries), (Ok(2), 2));
    // A put of a new key at the cursor after NEXT ran off the end keeps
    // LMDB's end flag: once that pair is deleted, NEXT finds nothing though
    // `b` follows.
    let ld = lt.open_db(Some("p"), MDB_CREATE).unwrap();
    let sd = st.create_db(Some("p")).unwrap();
    lt.put(ld, b"b", b"1", 0).unwrap();
    st.put(sd, b"b", b"1").unwrap();
    {
        let (mut lc, mut sc) = (lt.write_cursor(ld).unwrap(), st.cursor_mut(sd).unwrap());
        assert_eq!(
            lc.get(MDB_SET_RANGE, Some(b"a"), None).unwrap(),
            e(b"b", b"1")
        );
        assert_eq!(s(sc.seek(b"a")), e(b"b", b"1"));
        assert_eq!(
            (lc.get(MDB_NEXT, None, None).unwrap(), s(sc.next())),
            (None, None)
        );
        lc.put(b"a", b"1", 0).unwrap();
        sc.put(b"a", b"1").unwrap();
        lc.del(0).unwrap();
        sc.delete_current().unwrap();
        assert_eq!(
            (lc.get(MDB_NEXT, None, None).unwrap(), s(sc.next())),
            (None, e(b"b", b"1"))
        );
    }
}

/// What the default cases exercise (run with `--ignored --nocapture`): per
/// kind of instruction and outcome, how often; the most values a key held;
/// how often a key's values went from a list that fits inline in Sarsen's
/// node to more than fit (so a sub-tree) and back, from one `Check` to a
/// later one.
#[test]
#[ignore]
fn coverage() {
    use std::collections::BTreeMap;
    let mut n: BTreeMap<String, u64> = BTreeMap::new();
    let mut add = |k: String| *n.entry(k).or_default() += 1;
    let (mut most, mut to_tree, mut to_list) = (0, 0, 0);
    for seed in seeds() {
        let case = gen_case(seed);
        let node_max = (case.page_size as usize - 20) / 2;
        let out = run_lmdb(&case);
        let dups = case.dbs.iter().filter(|d| d.2.is_some()).count();
        add(format!("case with {dups} DUPSORT dbs"));
        // Per database and key: whether its values were last seen inline.
        let mut inline: BTreeMap<(usize, B), bool> = BTreeMap::new();
        for (ins, o) in case.prog.iter().zip(&out) {
            let ins = match ins {
                Instr::Move(m) => format!("{m:?}"),
                i => format!("{i:?}"),
            };
            let name = ins.split('(').next().unwrap_or("").to_string();
            let o = match o {
                Outcome::Snapshot(s) => {
                    for (db, d) in s.iter().enumerate() {
                        let Some(dups) = case.dbs[db].2 else { continue };
                        most = d.keys_fwd.iter().map(|k| k.1).max().unwrap_or(0).max(most);
                        let mut size: BTreeMap<&B, usize> = BTreeMap::new();
                        for (k, v) in &d.fwd {
                            let per = if dups.fixed { 0 } else { 2 };
                            *size.entry(k).or_insert(10 + k.len() + 2) += v.len() + per;
                        }
                        for (k, len) in size {
                            let fits = len <= node_max;
                            let small = len <= node_max / 2;
                            match inline.insert((db, k.clone()), fits) {
                                Some(true) if !fits => to_tree += 1,
                                Some(false) if small => to_list += 1,
                                _ => {}
                            }
                        }
                    }
                    "Snapshot".into()
                }
                Outcome::Entry(e) => format!("Entry({})", e.is_some()),
                Outcome::Found(e) => format!("Found({})", e.is_some()),
                Outcome::Error(e) => e.clone(),
                o => format!("{o:?}"),
            };
            let o = o.split('(').next().unwrap_or("").to_string()
                + if o.contains("true") {
                    "+"
                } else if o.contains("false") {
                    "-"
                } else {
                    ""
                };
            add(format!("{name:>16} {o}"));
        }
    }
    for (k, v) in n {
        println!("{v:8} {k}");
    }
    println!("most values of one key: {most}");
    println!("keys from inline to a sub-tree: {to_tree}, back to a small list: {to_list}");
}
