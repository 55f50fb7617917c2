//! Write cursors: LMDB's cursor of a write transaction, which moves like a
//! read cursor and also writes where it stands (`mdb_cursor_put` with and
//! without `MDB_CURRENT`, `mdb_cursor_del`, with `MDB_NODUPDATA`), and
//! merges at the current key (the cursor-level form of RocksDB's merge).
//!
//! Without DUPSORT the cursor keeps its place (`place.rs`): the path it
//! stands at, current while nothing but the cursor's own deletes and value
//! replacements that stay in one leaf changed the tree, so a step, and a
//! step after such a write, reads one leaf and searches nothing. Any other
//! change (a split or merge, a write by key, a write that failed) leaves
//! the place stale, and the cursor then finds its pair again by its key, a
//! descent, as it does in a DUPSORT database for every move. Without
//! DUPSORT the cursor never keeps a copy of a value: the pair it reports
//! is read from the tree, through the place or by the key, so no write,
//! failed or not, can leave it reporting a value the tree does not hold.
//! Returned slices borrow the cursor, so none is held across a write.

use super::catalog::{check_key, check_sizes};
use super::place::{self, Landing, Place};
use super::write::RwTxn;
use crate::cursor::{Cursor, Entry};
use crate::db::Database;
use crate::error::{Error, Result};
use crate::order::Order;
use crate::page::DbRecord;

/// Where a write cursor stands. `On` and `Deleted` occur only in a DUPSORT
/// database, `Here` and `Gone` only without DUPSORT.
#[derive(Clone, Debug)]
enum At {
    /// Not positioned: `next` goes to the first pair, `prev` to the last.
    Unset,
    /// On this pair, found again by a seek for each move (in a DUPSORT
    /// database a pair is its own name: its value cannot change under it).
    On(Vec<u8>, Vec<u8>),
    /// Where this pair was before `delete_current` removed it: `next`
    /// returns the pair after it, `prev` the pair before (LMDB's `C_DEL`).
    Deleted(Vec<u8>, Vec<u8>),
    /// On the pair whose key is `RwCursor::key`: at `RwCursor::place`
    /// while that is current (see [`RwCursor::placed_on`]), else found
    /// again by the key.
    Here,
    /// After `delete_current` removed the pair whose key was
    /// `RwCursor::key` (`C_DEL` again): a current place's leaf index names
    /// the pair that followed it; else found again by the key.
    Gone,
    /// Past the last pair.
    PastEnd,
    /// Before the first pair.
    BeforeStart,
}

/// Where a move that starts from the cursor's pair starts, by key (a place
/// without DUPSORT names its pair by the key alone).
#[derive(Clone, Copy)]
enum Origin<'a> {
    Unset,
    On(&'a [u8], &'a [u8]),
    Deleted(&'a [u8], &'a [u8]),
    PastEnd,
    BeforeStart,
}

/// A cursor over one database of a write transaction, from
/// [`RwTxn::cursor_mut`](crate::RwTxn::cursor_mut). It borrows the
/// transaction mutably; the keys and values it returns borrow the cursor.
///
/// ```
/// # fn main() -> Result<(), sarsen::Error> {
/// # let dir = tempfile::tempdir().unwrap();
/// let env = unsafe { sarsen::Env::open(dir.path())? };
/// let db = env.main_db();
/// let mut w = env.write_txn()?;
/// for k in [b"a", b"b", b"c"] {
///     w.put(db, k, b"old")?;
/// }
/// let mut c = w.cursor_mut(db)?;
/// while let Some((k, _)) = c.next()? {
///     if k == b"b" {
///         c.delete_current()?;
///     } else {
///         c.put_current(b"new")?;
///     }
/// }
/// drop(c);
/// let all: Vec<(&[u8], &[u8])> = w.iter(db)?.collect::<Result<_, _>>()?;
/// assert_eq!(all, [(&b"a"[..], &b"new"[..]), (b"c", b"new")]);
/// # Ok(())
/// # }
/// ```
///
/// While it lives, nothing else can write (so it can keep its place in the
/// tree across its own writes):
///
/// ```compile_fail
/// # let dir = tempfile::tempdir().unwrap();
/// # let env = unsafe { sarsen::Env::open(dir.path()) }.unwrap();
/// let db = env.main_db();
/// let mut w = env.write_txn().unwrap();
/// let mut c = w.cursor_mut(db).unwrap();
/// c.first().unwrap();
/// w.put(db, b"k", b"v").unwrap(); // error: `w` is borrowed by `c`
/// c.delete_current().unwrap();
/// ```
pub struct RwCursor<'t, 'env> {
    txn: &'t mut RwTxn<'env>,
    db: Database,
    dups: bool,
    at: At,
    /// The key under `Here`, or deleted under `Gone`.
    key: Vec<u8>,
    /// Where `Here` or `Gone` stands, when known: set with them, and
    /// meaningless in any other state. Kept out of `At` so that a step or a
    /// delete updates the path in place rather than moving it.
    place: Option<Place>,
    /// The tree's record and key order as of a change count.
    view: Option<(u64, DbRecord, Order<'env>)>,
}

impl<'t, 'env> RwCursor<'t, 'env> {
    pub(crate) fn new(txn: &'t mut RwTxn<'env>, db: Database) -> Result<RwCursor<'t, 'env>> {
        let dups = txn.dup_mode(db)?.is_some();
        Ok(RwCursor {
            txn,
            db,
            dups,
            at: At::Unset,
            key: Vec::new(),
            place: None,
            view: None,
        })
    }

    /// The transaction's count of tree changes: every change to any tree,
    /// made or attempted, counts (`RwTxn::apply`), and while the cursor
    /// lives only it can change anything.
    fn changes(&self) -> u64 {
        self.txn.w.tree.changes
    }

    /// Whether the cursor stands on its pair (`Here`) or after it
    /// (`Gone`), if it has a place that is current: saved after the last
    /// change counted.
    fn placed_on(&self) -> Option<bool> {
        let on = match self.at {
            At::Here => true,
            At::Gone => false,
            _ => return None,
        };
        let pl = self.place.as_ref()?;
        (pl.gen == self.changes()).then_some(on)
    }

    /// Where a move from the current pair starts.
    fn origin(&self) -> Origin<'_> {
        match &self.at {
            At::Unset => Origin::Unset,
            At::On(k, v) => Origin::On(k, v),
            At::Deleted(k, v) => Origin::Deleted(k, v),
            At::Here => Origin::On(&self.key, &[]),
            At::Gone => Origin::Deleted(&self.key, &[]),
            At::PastEnd => Origin::PastEnd,
            At::BeforeStart => Origin::BeforeStart,
        }
    }

    /// The tree's record and key order, looked up again after a change
    /// that was not the cursor's own.
    fn view(&mut self) -> Result<(DbRecord, Order<'env>)> {
        let n = self.changes();
        match self.view {
            Some((g, rec, ord)) if g == n => Ok((rec, ord)),
            _ => {
                let (rec, ord) = self.txn.tree_ord(self.db)?;
                self.view = Some((n, rec, ord));
                Ok((rec, ord))
            }
        }
    }

    /// After a change of the cursor's own through its place that left the
    /// tree `rec` and stayed in the leaf: the view and the place (whose
    /// path the change updated) are current again.
    fn placed(&mut self, rec: DbRecord, on: bool) {
        let gen = self.changes();
        if let Some(v) = &mut self.view {
            *v = (gen, rec, v.2);
        }
        if let Some(pl) = &mut self.place {
            pl.gen = gen;
            pl.dirty = pl.path.all_levels();
        }
        self.at = if on { At::Here } else { At::Gone };
    }

    /// Stands on (`on`) or after the pair of `self.key` with no place: it
    /// is found again by the key.
    fn unplaced(&mut self, on: bool) {
        self.place = None;
        self.at = if on { At::Here } else { At::Gone };
    }

    /// After a write by key that left the cursor on the pair `key`, `value`
    /// (without DUPSORT the value is read from the tree when asked for).
    fn on_pair(&mut self, key: Vec<u8>, value: &[u8]) {
        if self.dups {
            self.at = At::On(key, value.to_vec());
        } else {
            self.key = key;
            self.unplaced(true);
        }
    }

    /// After a delete by key of the pair `key`, `value` under the cursor.
    fn off_pair(&mut self, key: Vec<u8>, value: Vec<u8>) {
        if self.dups {
            self.at = At::Deleted(key, value);
        } else {
            self.key = key;
            self.unplaced(false);
        }
    }

    /// One step from the current place, on its pair (`on`) or after it
    /// (see [`placed_on`](Self::placed_on)), from leaf index `start` if
    /// given, else from the place's.
    fn step(&mut self, start: Option<usize>, on: bool, fwd: bool) -> Result<Option<Entry<'_>>> {
        let view = self.view()?;
        let src = self.txn.src();
        let Some(pl) = &mut self.place else {
            return Err(Error::corrupted(0, "a write cursor's place is missing"));
        };
        let leaf = place::leaf_pgno(&pl.path);
        let (e, landing) = place::step(src, view, &mut pl.path, start, on, fwd)?;
        if place::leaf_pgno(&pl.path) != leaf {
            pl.dirty = 0;
        }
        self.at = match landing {
            Landing::At => At::Here,
            Landing::PastEnd => At::PastEnd,
            Landing::BeforeStart => At::BeforeStart,
        };
        if let Some((k, _)) = e {
            self.key.clear();
            self.key.extend_from_slice(k);
        }
        Ok(e)
    }

    /// Runs `op` on a read cursor, placed on the current pair first when
    /// `from_here`, and takes the place where the read cursor ends up (a
    /// failed `seek_exact` stands on the next key, a failed `next_dup`
    /// where it was, as with [`Cursor`]); returns the pair `op` found.
    fn go(
        &mut self,
        from_here: bool,
        op: impl for<'c, 'o> FnOnce(&mut Cursor<'c>, Origin<'o>) -> Result<Option<Entry<'c>>>,
    ) -> Result<Option<Entry<'_>>> {
        let gen = self.changes();
        let (next, found) = {
            let mut c = self.txn.cursor(self.db)?;
            let from = self.origin();
            if let (true, Origin::On(k, v)) = (from_here, from) {
                seek_pair(&mut c, k, v, self.dups)?;
            }
            let found = op(&mut c, from)?.is_some();
            let next = match c.current()? {
                Some((k, _)) if !self.dups => {
                    self.key.clear();
                    self.key.extend_from_slice(k);
                    self.place = c.raw().path().map(|path| Place {
                        path,
                        gen,
                        dirty: 0,
                    });
                    Some(At::Here)
                }
                Some((k, v)) => Some(At::On(k.to_vec(), v.to_vec())),
                None if c.is_past_end() => Some(At::PastEnd),
                None if c.is_before_start() => Some(At::BeforeStart),
                // The read cursor never moved (a dup move from no pair).
                None => None,
            };
            (next, found)
        };
        if let Some(at) = next {
            self.at = at;
        }
        if !found {
            return Ok(None);
        }
        self.entry()
    }

    fn entry(&self) -> Result<Option<Entry<'_>>> {
        match &self.at {
            At::On(k, v) => Ok(Some((k, v))),
            At::Here => match &self.place {
                Some(pl) if pl.gen == self.changes() => place::entry_at(self.txn.src(), &pl.path),
                // No current place (a write by key, a split, a failed
                // write): the pair of the key, if it is still there.
                _ => {
                    let mut c = self.txn.cursor(self.db)?;
                    Ok(c.seek(&self.key)?
                        .filter(|(k, _)| *k == self.key.as_slice()))
                }
            },
            _ => Ok(None),
        }
    }

    /// The pair under the cursor, `None` when unpositioned, past an end
    /// or after `delete_current`. `MDB_GET_CURRENT`. Without DUPSORT it is
    /// read from the tree (after a write other than a delete or value
    /// replacement that stayed in its leaf, by a search for the key): a
    /// damaged page met there also gives `None`.
    pub fn current(&self) -> Option<Entry<'_>> {
        self.entry().ok().flatten()
    }

    /// Moves to the first pair. `MDB_FIRST`.
    ///
    /// # Errors
    ///
    /// Those of [`RwTxn::cursor`] (each move finds its place again through
    /// a read cursor) and of the read cursor's move; the cursor then stays
    /// where it was.
    pub fn first(&mut self) -> Result<Option<Entry<'_>>> {
        // A place on the left edge (every branch index 0) is in the first
        // leaf: its first pair is the first (a queue popped from the front).
        if let (Some(_), Some(pl)) = (self.placed_on(), &self.place) {
            let up = pl.path.len.saturating_sub(1);
            if pl.path.steps[..up].iter().all(|s| s.idx() == 0) {
                // As after a delete of a pair before index 0: a forward
                // step from there lands on index 0.
                return self.step(Some(0), false, true);
            }
        }
        self.go(false, |c, _| c.first())
    }

    /// Moves to the last pair. `MDB_LAST`.
    ///
    /// # Errors
    ///
    /// Those of [`RwTxn::cursor`] (each move finds its place again through
    /// a read cursor) and of the read cursor's move; the cursor then stays
    /// where it was.
    pub fn last(&mut self) -> Result<Option<Entry<'_>>> {
        self.go(false, |c, _| c.last())
    }

    /// Moves to the next pair (after `delete_current`, to the pair that
    /// followed the deleted one). `MDB_NEXT`.
    ///
    /// # Errors
    ///
    /// Those of [`RwTxn::cursor`] (each move finds its place again through
    /// a read cursor) and of the read cursor's move; the cursor then stays
    /// where it was.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Entry<'_>>> {
        if let Some(on) = self.placed_on() {
            return self.step(None, on, true);
        }
        let dups = self.dups;
        self.go(true, move |c, at| match at {
            Origin::On(..) => c.next(),
            Origin::Unset | Origin::BeforeStart => c.first(),
            Origin::PastEnd => Ok(None),
            Origin::Deleted(k, v) => seek_pair(c, k, v, dups),
        })
    }

    /// Moves to the previous pair. `MDB_PREV`.
    ///
    /// # Errors
    ///
    /// Those of [`RwTxn::cursor`] (each move finds its place again through
    /// a read cursor) and of the read cursor's move; the cursor then stays
    /// where it was.
    pub fn prev(&mut self) -> Result<Option<Entry<'_>>> {
        if let Some(on) = self.placed_on() {
            return self.step(None, on, false);
        }
        let dups = self.dups;
        self.go(true, move |c, at| match at {
            Origin::On(..) => c.prev(),
            Origin::Unset | Origin::PastEnd => c.last(),
            Origin::BeforeStart => Ok(None),
            Origin::Deleted(k, v) => match seek_pair(c, k, v, dups)? {
                Some(_) => c.prev(),
                None => c.last(),
            },
        })
    }

    /// Moves to the first pair whose key is `>= key`. `MDB_SET_RANGE`.
    ///
    /// # Errors
    ///
    /// Those of [`RwTxn::cursor`] (each move finds its place again through
    /// a read cursor) and of the read cursor's move; the cursor then stays
    /// where it was.
    pub fn seek(&mut self, key: &[u8]) -> Result<Option<Entry<'_>>> {
        self.go(false, |c, _| c.seek(key))
    }

    /// Moves to `key` (its first value); `None` if absent. `MDB_SET_KEY`.
    ///
    /// # Errors
    ///
    /// Those of [`RwTxn::cursor`] (each move finds its place again through
    /// a read cursor) and of the read cursor's move; the cursor then stays
    /// where it was.
    pub fn seek_exact(&mut self, key: &[u8]) -> Result<Option<Entry<'_>>> {
        self.go(false, |c, _| match c.seek(key)? {
            Some((k, v)) if k == key => Ok(Some((k, v))),
            _ => Ok(None),
        })
    }

    /// [`Cursor::next_dup`] (`MDB_NEXT_DUP`); `None` leaves the cursor.
    ///
    /// # Errors
    ///
    /// Those of [`RwTxn::cursor`] (each move finds its place again through
    /// a read cursor) and of the read cursor's move; the cursor then stays
    /// where it was.
    pub fn next_dup(&mut self) -> Result<Option<Entry<'_>>> {
        self.go(true, |c, _| c.next_dup())
    }

    /// [`Cursor::prev_dup`] (`MDB_PREV_DUP`); `None` leaves the cursor.
    ///
    /// # Errors
    ///
    /// Those of [`RwTxn::cursor`] (each move finds its place again through
    /// a read cursor) and of the read cursor's move; the cursor then stays
    /// where it was.
    pub fn prev_dup(&mut self) -> Result<Option<Entry<'_>>> {
        self.go(true, |c, _| c.prev_dup())
    }

    /// [`Cursor::next_nodup`] (`MDB_NEXT_NODUP`): past the end, nothing;
    /// after `delete_current`, the first pair of the next key.
    ///
    /// # Errors
    ///
    /// Those of [`RwTxn::cursor`] (each move finds its place again through
    /// a read cursor) and of the read cursor's move; the cursor then stays
    /// where it was.
    pub fn next_nodup(&mut self) -> Result<Option<Entry<'_>>> {
        if !self.dups {
            return self.next();
        }
        self.go(true, |c, at| match at {
            Origin::On(..) => c.next_nodup(),
            Origin::Unset | Origin::BeforeStart => c.first(),
            Origin::PastEnd => Ok(None),
            Origin::Deleted(k, _) => match c.seek(k)? {
                Some((ck, _)) if ck == k => c.next_nodup(),
                e => Ok(e),
            },
        })
    }

    /// [`Cursor::prev_nodup`] (`MDB_PREV_NODUP`): before the start,
    /// nothing; after `delete_current`, the last pair of the previous key.
    ///
    /// # Errors
    ///
    /// Those of [`RwTxn::cursor`] (each move finds its place again through
    /// a read cursor) and of the read cursor's move; the cursor then stays
    /// where it was.
    pub fn prev_nodup(&mut self) -> Result<Option<Entry<'_>>> {
        if !self.dups {
            return self.prev();
        }
        self.go(true, |c, at| match at {
            Origin::On(..) => c.prev_nodup(),
            Origin::Unset | Origin::PastEnd => c.last(),
            Origin::BeforeStart => Ok(None),
            Origin::Deleted(k, _) => match c.seek(k)? {
                Some(_) => c.prev_nodup(),
                None => c.last(),
            },
        })
    }

    /// [`Cursor::seek_both`] (`MDB_GET_BOTH`).
    ///
    /// # Errors
    ///
    /// [`Error::WrongDupMode`] without DUPSORT; those of the other moves.
    pub fn seek_both(&mut self, key: &[u8], value: &[u8]) -> Result<Option<Entry<'_>>> {
        self.go(false, |c, _| c.seek_both(key, value))
    }

    /// [`Cursor::seek_both_range`] (`MDB_GET_BOTH_RANGE`).
    ///
    /// # Errors
    ///
    /// As [`seek_both`](RwCursor::seek_both).
    pub fn seek_both_range(&mut self, key: &[u8], value: &[u8]) -> Result<Option<Entry<'_>>> {
        self.go(false, |c, _| c.seek_both_range(key, value))
    }

    /// [`Cursor::dup_count`] (`mdb_cursor_count`).
    ///
    /// # Errors
    ///
    /// Those of [`RwTxn::cursor`] and of finding the current pair again
    /// ([`Error::Corrupted`] for a damaged page).
    pub fn dup_count(&self) -> Result<u64> {
        let (k, v) = match self.origin() {
            Origin::On(k, v) => (k, v),
            _ => return Ok(0),
        };
        let mut c = self.txn.cursor(self.db)?;
        seek_pair(&mut c, k, v, self.dups)?;
        c.dup_count()
    }

    /// The pair under the cursor, to write at by its key: the key, and in
    /// a DUPSORT database the value; `what`'s error when it is on no pair.
    fn pair(&self, what: &str) -> Result<(Vec<u8>, Vec<u8>)> {
        match self.origin() {
            Origin::On(k, v) => Ok((k.to_vec(), v.to_vec())),
            _ => Err(Error::InvalidArgument(format!(
                "{what}: the cursor is on no pair"
            ))),
        }
    }

    /// Puts `key` with `value` as [`RwTxn::put`] does (in a DUPSORT
    /// database, adds the pair) and stands on it. `mdb_cursor_put`.
    ///
    /// # Errors
    ///
    /// Those of [`RwTxn::put`]; the cursor stays where it was.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.txn.put(self.db, key, value)?;
        self.on_pair(key.to_vec(), value);
        Ok(())
    }

    /// Replaces the value under the cursor (`MDB_CURRENT`). In a DUPSORT
    /// database the current pair is replaced by `key`/`value` and the
    /// cursor moves to it wherever it sorts (LMDB requires the new value
    /// to sort in the same place; Sarsen moves it instead).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the cursor is on no pair; those of
    /// [`RwTxn::put`], leaving the pair as it was. In a DUPSORT database
    /// the replacement is two writes, a put of the new pair and a
    /// [`RwTxn::delete_dup`] of the old: an error of the second leaves
    /// both pairs in the database (and the cursor on the old one), even
    /// when it leaves the transaction usable.
    pub fn put_current(&mut self, value: &[u8]) -> Result<()> {
        if self.placed_on() == Some(true) {
            return self.put_here(value);
        }
        let (k, old) = self.pair("put_current")?;
        self.txn.put(self.db, &k, value)?;
        if self.dups && old != value {
            self.txn.delete_dup(self.db, &k, &old)?;
        }
        self.on_pair(k, value);
        Ok(())
    }

    /// `put_current` at a current place: the value is replaced through the
    /// saved path, which stays current unless the leaf split. On an error
    /// the cursor keeps its place, stale if the transaction counted a
    /// change.
    fn put_here(&mut self, value: &[u8]) -> Result<()> {
        let (Some(pl), key) = (&mut self.place, &self.key) else {
            return Err(Error::corrupted(0, "a write cursor's place is missing"));
        };
        let (path, dirty) = (&mut pl.path, pl.dirty);
        check_sizes(self.txn.env, key, value)?;
        let (stayed, rec) = self.txn.change(self.db, |t, _| {
            place::check_path(path, t.rec)?;
            check_key(t.ord, key)?;
            let stayed = t.put_at_path(path, key, value, dirty)?;
            Ok((stayed, *t.rec))
        })?;
        if stayed {
            self.placed(rec, true);
        } else {
            self.unplaced(true);
        }
        Ok(())
    }

    /// Deletes the pair under the cursor (`mdb_cursor_del`); `next` then
    /// returns the pair that followed it and `prev` the one before.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the cursor is on no pair; those of
    /// [`RwTxn::delete`] (in a DUPSORT database, of [`RwTxn::delete_dup`]);
    /// [`Error::Corrupted`] if the pair is no longer there.
    pub fn delete_current(&mut self) -> Result<()> {
        if self.placed_on() == Some(true) {
            return self.delete_here();
        }
        let (k, v) = self.pair("delete_current")?;
        let gone = if self.dups {
            self.txn.delete_dup(self.db, &k, &v)?
        } else {
            self.txn.delete(self.db, &k)?
        };
        if !gone {
            return Err(Error::corrupted(
                0,
                "the pair under a write cursor was not found",
            ));
        }
        self.off_pair(k, v);
        Ok(())
    }

    /// `delete_current` at a current place: the node goes through the saved
    /// path, which stays current, its index now on the next pair, unless
    /// pages were merged or freed. On an error the cursor keeps its place,
    /// stale if the transaction counted a change.
    fn delete_here(&mut self) -> Result<()> {
        let Some(pl) = &mut self.place else {
            return Err(Error::corrupted(0, "a write cursor's place is missing"));
        };
        let (path, dirty) = (&mut pl.path, pl.dirty);
        let (stayed, rec) = self.txn.change(self.db, |t, _| {
            place::check_path(path, t.rec)?;
            let stayed = t.delete_at(path, dirty)?;
            Ok((stayed, *t.rec))
        })?;
        if stayed {
            self.placed(rec, false);
        } else {
            self.unplaced(false);
        }
        Ok(())
    }

    /// Deletes the current key with all its values (`mdb_cursor_del` with
    /// `MDB_NODUPDATA`); without DUPSORT, as [`delete_current`](Self::delete_current).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the cursor is on no pair; those of
    /// [`RwTxn::delete`].
    pub fn delete_current_key(&mut self) -> Result<()> {
        if !self.dups {
            return self.delete_current();
        }
        let (k, v) = self.pair("delete_current_key")?;
        self.txn.delete(self.db, &k)?;
        self.off_pair(k, v);
        Ok(())
    }

    /// Merges `operand` into the value under the cursor with the
    /// database's merge operator, as [`RwTxn::merge`] (the cursor-level
    /// form of RocksDB's `Merge`), and stands on the result.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the cursor is on no pair; those of
    /// [`RwTxn::merge`], leaving the value as it was (and the cursor on
    /// it); in a DUPSORT database, those of [`RwTxn::get`] for reading
    /// the result back.
    pub fn merge_current(&mut self, operand: &[u8]) -> Result<()> {
        let (k, _) = self.pair("merge_current")?;
        self.txn.merge(self.db, &k, operand)?;
        // (A merge refuses a DUPSORT database; without DUPSORT the value
        // is read from the tree when asked for.)
        let v = match self.dups {
            true => self.txn.get(self.db, &k)?.unwrap_or_default().to_vec(),
            false => Vec::new(),
        };
        self.on_pair(k, &v);
        Ok(())
    }
}

/// Moves `c` to the first pair `>= (k, v)` (by key, then, in a DUPSORT
/// database, by value).
fn seek_pair<'c>(c: &mut Cursor<'c>, k: &[u8], v: &[u8], dups: bool) -> Result<Option<Entry<'c>>> {
    if dups {
        if let Some(e) = c.seek_both_range(k, v)? {
            return Ok(Some(e));
        }
        return match c.seek(k)? {
            Some((ck, _)) if ck == k => c.next_nodup(),
            e => Ok(e),
        };
    }
    c.seek(k)
}
