//! Running [`Op`]s on one open environment (a session ends at a reopen).

use std::collections::VecDeque;

use sarsen::{Database, Durability, Env, Error, RoTxn, RwTxn};

use super::*;

/// Runs `ops` on a new environment at `path` with `page_size`-byte pages,
/// checking each result against the model. Panics on any disagreement.
pub fn run_ops(path: &Path, page_size: u32, ops: &[Op]) -> ApiStats {
    run_ops_from(path, page_size, ops, State::default()).0
}

/// [`run_ops`] on an environment that must hold `committed` already (the
/// state an earlier run returned); returns the committed state at the end.
pub fn run_ops_from(
    path: &Path,
    page_size: u32,
    ops: &[Op],
    mut committed: State,
) -> (ApiStats, State) {
    let mut stats = ApiStats::default();
    let mut pos = 0;
    let (mut write_map, mut dur) = (false, Durability::NoSync);
    loop {
        let env = open(path, page_size, write_map, dur);
        stats.opens += 1;
        let mut s = Session::new(&env, &mut committed, &mut stats, page_size);
        let next = s.run(&ops[pos..]);
        let done = s.done;
        drop(s);
        drop(env);
        pos += done;
        match next {
            Some((wm, d)) => (write_map, dur) = (wm, d),
            None => break,
        }
    }
    // A last reopen: everything committed must be there.
    let env = open(path, page_size, false, Durability::NoSync);
    let mut s = Session::new(&env, &mut committed, &mut stats, page_size);
    s.check_env("final reopen");
    drop(s);
    (stats, committed)
}

struct Session<'e, 'm> {
    env: &'e Env,
    committed: &'m mut State,
    stats: &'m mut ApiStats,
    max_key: usize,
    lim: dups::Limits,
    handles: [Option<Database>; ALL],
    w: Option<RwTxn<'e>>,
    pending: State,
    held: VecDeque<(RoTxn<'e>, State)>,
    /// Operations of the slice consumed so far.
    done: usize,
    what: String,
}

impl<'e, 'm> Session<'e, 'm> {
    /// Opens every committed database with its operator and checks that
    /// the environment holds the committed state.
    fn new(
        env: &'e Env,
        committed: &'m mut State,
        stats: &'m mut ApiStats,
        page_size: u32,
    ) -> Session<'e, 'm> {
        let max_key = (page_size as usize - 20) / 2 - 22;
        assert_eq!(env.max_key_size(), max_key, "max_key_size");
        let mut handles = [None; ALL];
        let r = env.read_txn().expect("read_txn at open");
        for (i, h) in handles.iter_mut().enumerate() {
            let got = r
                .open_db_with(db_name(i), &db_options(i))
                .unwrap_or_else(|e| panic!("open_db_with db {i} at open: {e:?}"));
            assert_eq!(
                got.is_some(),
                committed.exists(i),
                "db {i} exists after reopen"
            );
            *h = got;
        }
        let s = Session {
            env,
            pending: committed.clone(),
            committed,
            stats,
            max_key,
            lim: dups::Limits::new(page_size),
            handles,
            w: None,
            held: VecDeque::new(),
            done: 0,
            what: "open".into(),
        };
        verify_state(&r, s.committed, &s.handles, "after open");
        drop(r);
        s
    }

    /// Runs ops until the end or a reopen (returned with its options).
    fn run(&mut self, ops: &[Op]) -> Option<(bool, Durability)> {
        for op in ops {
            self.done += 1;
            self.stats.ops += 1;
            self.what = format!("op #{} {op:?}", self.stats.ops);
            match op {
                Op::Reopen {
                    write_map,
                    durability: d,
                } => return Some((*write_map, durability(*d))),
                Op::Commit => self.commit(),
                Op::Abort { drop: d } => {
                    if let Some(w) = self.w.take() {
                        if *d {
                            drop(w)
                        } else {
                            w.abort()
                        }
                    }
                    self.pending = self.committed.clone();
                }
                Op::Snapshot => {
                    if self.held.len() == 3 {
                        self.held.pop_front();
                    }
                    let r = self.env.read_txn().expect("read_txn");
                    self.held.push_back((r, self.committed.clone()));
                }
                Op::VerifyHeld => {
                    if let Some((r, st)) = self.held.pop_front() {
                        verify_state(&r, &st, &self.handles, &self.what);
                    }
                }
                Op::Get { db, key } => self.read(|s, v, st| s.get(v, st, db.idx(), key)),
                Op::Range {
                    db,
                    lo,
                    hi,
                    ends,
                    steps,
                } => {
                    let ends: Vec<bool> = (0..u32::from(*steps) % 33)
                        .map(|i| ends >> i & 1 == 1)
                        .collect();
                    self.read(|s, v, st| s.range(v, st, db.idx(), lo, hi, &ends))
                }
                Op::Cursor {
                    db,
                    key,
                    moves,
                    count,
                } => {
                    let moves = decode_moves(key, *moves, *count);
                    self.read(|s, v, st| s.cursor(v, st, db.idx(), &moves))
                }
                Op::DupGet { t, key } => self.read(|s, v, st| s.dget(v, st, t.idx(), key)),
                Op::DupRange {
                    t,
                    lo,
                    hi,
                    ends,
                    steps,
                } => {
                    let ends: Vec<bool> = (0..u32::from(*steps) % 33)
                        .map(|i| ends >> i & 1 == 1)
                        .collect();
                    self.read(|s, v, st| s.drange(v, st, t.idx(), lo, hi, &ends))
                }
                Op::DupCursor {
                    t,
                    key,
                    value,
                    moves,
                    count,
                } => {
                    let moves = &moves[..*count as usize % (moves.len() + 1)];
                    self.stats.moves += moves.len() as u64;
                    self.read(|s, v, st| s.dcursor(v, st, t.idx(), key, value, moves))
                }
                Op::GetCanary => self.read(|s, v, st| {
                    let c = v
                        .canary_dyn()
                        .unwrap_or_else(|e| panic!("{}: canary: {e:?}", s.what));
                    assert_eq!([c.x, c.y, c.z, c.v], st.canary, "{}", s.what);
                }),
                _ => self.write(op),
            }
        }
        None
    }

    /// Runs a read against the write transaction (pending state) if one is
    /// open, else against a new read transaction (committed state).
    fn read(&self, f: impl FnOnce(&Self, &dyn ViewDyn, &State)) {
        match &self.w {
            Some(w) => f(self, w, &self.pending),
            None => {
                let r = self.env.read_txn().expect("read_txn");
                f(self, &r, self.committed)
            }
        }
    }

    /// The handle of `idx` if the view's model says it exists; checks that
    /// a known handle of a database that does not exist gives `DbNotFound`.
    fn handle(&self, v: &dyn ViewDyn, st: &State, idx: usize) -> Option<Database> {
        let h = self.handles[idx]?;
        if !st.exists(idx) {
            expect_err(v.get_dyn(h, b"x"), not_found, &self.what);
            return None;
        }
        Some(h)
    }

    fn get(&self, v: &dyn ViewDyn, st: &State, idx: usize, key: &Key) {
        let Some(h) = self.handle(v, st, idx) else {
            return;
        };
        let k = key.bytes(self.max_key);
        let got = v
            .get_dyn(h, &k)
            .unwrap_or_else(|e| panic!("{}: {e:?}", self.what));
        let m = st.dbs[idx].as_ref().unwrap();
        assert_eq!(got, m.get(&k).map(Vec::as_slice), "{}", self.what);
    }

    fn range(
        &self,
        v: &dyn ViewDyn,
        st: &State,
        idx: usize,
        lo: &KeyBound,
        hi: &KeyBound,
        ends: &[bool],
    ) {
        let Some(h) = self.handle(v, st, idx) else {
            return;
        };
        let (lo, hi) = (bound(lo, self.max_key), bound(hi, self.max_key));
        let mut exp = model_range(st.dbs[idx].as_ref().unwrap(), &lo, &hi);
        let mut it = match v.range_dyn(h, as_ref(&lo), as_ref(&hi)) {
            Ok(it) => it,
            Err(Error::InvalidArgument(_)) if exp.is_empty() => return,
            Err(e) => panic!("{}: {e:?}", self.what),
        };
        let steps = ends
            .iter()
            .take(64)
            .copied()
            .chain(std::iter::repeat(false));
        for (n, back) in steps.enumerate() {
            let got = if back { it.next_back() } else { it.next() };
            let got = got.map(|r| {
                let (k, v) = r.unwrap_or_else(|e| panic!("{}: {e:?}", self.what));
                (k.to_vec(), v.to_vec())
            });
            let want = if back {
                exp.pop_back()
            } else {
                exp.pop_front()
            };
            assert!(
                got == want,
                "{}: item #{n} (back: {back}) differs",
                self.what
            );
            if got.is_none() {
                break;
            }
        }
    }

    fn cursor(&self, v: &dyn ViewDyn, st: &State, idx: usize, moves: &[Move]) {
        let Some(h) = self.handle(v, st, idx) else {
            return;
        };
        let m = st.dbs[idx].as_ref().unwrap();
        let mut c = v
            .cursor_dyn(h)
            .unwrap_or_else(|e| panic!("{}: {e:?}", self.what));
        let mut pos = Pos::Unset;
        for (n, mv) in moves.iter().take(64).enumerate() {
            let want = model_move(m, &mut pos, mv, self.max_key);
            let got = real_move(&mut c, mv, self.max_key);
            assert!(
                got == want,
                "{}: move #{n} {mv:?} from {pos:?}: got {:?}, want {:?}",
                self.what,
                got.as_ref().map(|e| &e.0),
                want.as_ref().map(|e| &e.0)
            );
        }
    }

    /// Commits (if a write transaction is open) and checks everything.
    fn commit(&mut self) {
        if let Some(w) = self.w.take() {
            w.commit()
                .unwrap_or_else(|e| panic!("{}: commit: {e:?}", self.what));
            *self.committed = std::mem::take(&mut self.pending);
            self.pending = self.committed.clone();
            self.stats.commits += 1;
            for i in DBS..ALL {
                let n = self.committed.pairs(i).len() as u64;
                self.stats.max_dup_pairs = self.stats.max_dup_pairs.max(n);
            }
        }
        self.check_env(&self.what.clone());
    }

    /// `Env::check` is clean and a new snapshot equals the committed model.
    fn check_env(&mut self, what: &str) {
        let report = self
            .env
            .check()
            .unwrap_or_else(|e| panic!("{what}: check: {e:?}"));
        assert!(
            report.is_ok(),
            "{what}: check found {} problems: {:?}",
            report.problems_total,
            &report.problems[..report.problems.len().min(10)]
        );
        self.stats.checks += 1;
        let r = self.env.read_txn().expect("read_txn");
        verify_state(&r, self.committed, &self.handles, what);
    }
}

fn not_found(e: &Error) -> bool {
    matches!(e, Error::DbNotFound { .. })
}

/// Object-safe reads, so one function serves both transaction kinds.
trait ViewDyn {
    fn get_dyn(&self, db: Database, key: &[u8]) -> sarsen::Result<Option<&[u8]>>;
    fn range_dyn(
        &self,
        db: Database,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
    ) -> sarsen::Result<sarsen::Iter<'_>>;
    fn cursor_dyn(&self, db: Database) -> sarsen::Result<sarsen::Cursor<'_>>;
    fn canary_dyn(&self) -> sarsen::Result<sarsen::Canary>;
}

impl<T: View> ViewDyn for T {
    fn get_dyn(&self, db: Database, key: &[u8]) -> sarsen::Result<Option<&[u8]>> {
        self.get(db, key)
    }
    fn range_dyn(
        &self,
        db: Database,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
    ) -> sarsen::Result<sarsen::Iter<'_>> {
        self.range(db, lo, hi)
    }
    fn cursor_dyn(&self, db: Database) -> sarsen::Result<sarsen::Cursor<'_>> {
        self.cursor(db)
    }
    fn canary_dyn(&self) -> sarsen::Result<sarsen::Canary> {
        self.canary()
    }
}

mod dup;
mod write;
