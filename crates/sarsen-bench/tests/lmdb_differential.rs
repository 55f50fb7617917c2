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

include!("lmdb_differential/program.rs");

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

include!("lmdb_differential/lmdb.rs");

fn run_lmdb(case: &Case) -> Vec<Outcome> {
    run_lib(&lmdb::LMDB, case)
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
