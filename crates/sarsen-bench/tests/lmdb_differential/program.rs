// The programs and their execution, shared by the differential tests (a
// fragment for `include!`: the including module imports what it uses,
// as `lmdb_differential.rs` and `sarsen-lmdb/tests/capi_differential.rs` do).

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
