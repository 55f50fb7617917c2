//! Write cursors: LMDB's cursor of a write transaction, which moves like a
//! read cursor and also writes where it stands (`mdb_cursor_put` with and
//! without `MDB_CURRENT`, `mdb_cursor_del`, with `MDB_NODUPDATA`), and
//! merges at the current key (the cursor-level form of RocksDB's merge).
//!
//! The cursor remembers the pair it stands on and finds it again for each
//! move, so a write never leaves it pointing into a rewritten page: a move
//! costs one descent more than a read cursor's, and returned slices borrow
//! the cursor, so none is held across a write.

use super::write::RwTxn;
use crate::cursor::{Cursor, Entry};
use crate::db::Database;
use crate::error::{Error, Result};

/// Where a write cursor stands.
#[derive(Clone, Debug)]
enum At {
    /// Not positioned: `next` goes to the first pair, `prev` to the last.
    Unset,
    /// On this key and value.
    On(Vec<u8>, Vec<u8>),
    /// Where this pair was before `delete_current` removed it: `next`
    /// returns the pair after it, `prev` the pair before (LMDB's `C_DEL`).
    Deleted(Vec<u8>, Vec<u8>),
    /// Past the last pair.
    PastEnd,
    /// Before the first pair.
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
pub struct RwCursor<'t, 'env> {
    txn: &'t mut RwTxn<'env>,
    db: Database,
    dups: bool,
    at: At,
}

impl<'t, 'env> RwCursor<'t, 'env> {
    pub(crate) fn new(txn: &'t mut RwTxn<'env>, db: Database) -> Result<RwCursor<'t, 'env>> {
        let dups = txn.dup_mode(db)?.is_some();
        Ok(RwCursor {
            txn,
            db,
            dups,
            at: At::Unset,
        })
    }

    /// Runs `op` on a read cursor placed on the current pair and takes
    /// the place where the read cursor ends up (a failed `seek_exact`
    /// stands on the next key, a failed `next_dup` where it was, as with
    /// [`Cursor`]); returns the pair `op` found.
    fn go(
        &mut self,
        op: impl for<'c> FnOnce(&mut Cursor<'c>, &At) -> Result<Option<Entry<'c>>>,
    ) -> Result<Option<Entry<'_>>> {
        let (next, found) = {
            let mut c = self.txn.cursor(self.db)?;
            if let At::On(k, v) = &self.at {
                seek_pair(&mut c, k, v, self.dups)?;
            }
            let found = op(&mut c, &self.at)?.is_some();
            let next = match c.current()? {
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
        Ok(if found { self.entry() } else { None })
    }

    fn entry(&self) -> Option<Entry<'_>> {
        match &self.at {
            At::On(k, v) => Some((k, v)),
            _ => None,
        }
    }

    /// The pair under the cursor, `None` when unpositioned, past an end
    /// or after `delete_current`. `MDB_GET_CURRENT`.
    pub fn current(&self) -> Option<Entry<'_>> {
        self.entry()
    }

    /// Moves to the first pair. `MDB_FIRST`.
    ///
    /// # Errors
    ///
    /// Those of [`RwTxn::cursor`] (each move finds its place again through
    /// a read cursor) and of the read cursor's move; the cursor then stays
    /// where it was.
    pub fn first(&mut self) -> Result<Option<Entry<'_>>> {
        self.go(|c, _| c.first())
    }

    /// Moves to the last pair. `MDB_LAST`.
    ///
    /// # Errors
    ///
    /// Those of [`RwTxn::cursor`] (each move finds its place again through
    /// a read cursor) and of the read cursor's move; the cursor then stays
    /// where it was.
    pub fn last(&mut self) -> Result<Option<Entry<'_>>> {
        self.go(|c, _| c.last())
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
        let dups = self.dups;
        self.go(move |c, at| match at {
            At::On(..) => c.next(),
            At::Unset | At::BeforeStart => c.first(),
            At::PastEnd => Ok(None),
            At::Deleted(k, v) => seek_pair(c, k, v, dups),
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
        let dups = self.dups;
        self.go(move |c, at| match at {
            At::On(..) => c.prev(),
            At::Unset | At::PastEnd => c.last(),
            At::BeforeStart => Ok(None),
            At::Deleted(k, v) => match seek_pair(c, k, v, dups)? {
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
        self.go(|c, _| c.seek(key))
    }

    /// Moves to `key` (its first value); `None` if absent. `MDB_SET_KEY`.
    ///
    /// # Errors
    ///
    /// Those of [`RwTxn::cursor`] (each move finds its place again through
    /// a read cursor) and of the read cursor's move; the cursor then stays
    /// where it was.
    pub fn seek_exact(&mut self, key: &[u8]) -> Result<Option<Entry<'_>>> {
        self.go(|c, _| match c.seek(key)? {
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
        self.go(|c, _| c.next_dup())
    }

    /// [`Cursor::prev_dup`] (`MDB_PREV_DUP`); `None` leaves the cursor.
    ///
    /// # Errors
    ///
    /// Those of [`RwTxn::cursor`] (each move finds its place again through
    /// a read cursor) and of the read cursor's move; the cursor then stays
    /// where it was.
    pub fn prev_dup(&mut self) -> Result<Option<Entry<'_>>> {
        self.go(|c, _| c.prev_dup())
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
        self.go(|c, at| match at {
            At::On(..) => c.next_nodup(),
            At::Unset | At::BeforeStart => c.first(),
            At::PastEnd => Ok(None),
            At::Deleted(k, _) => match c.seek(k)? {
                Some((ck, _)) if ck == k.as_slice() => c.next_nodup(),
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
        self.go(|c, at| match at {
            At::On(..) => c.prev_nodup(),
            At::Unset | At::PastEnd => c.last(),
            At::BeforeStart => Ok(None),
            At::Deleted(k, _) => match c.seek(k)? {
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
        self.go(|c, _| c.seek_both(key, value))
    }

    /// [`Cursor::seek_both_range`] (`MDB_GET_BOTH_RANGE`).
    ///
    /// # Errors
    ///
    /// As [`seek_both`](RwCursor::seek_both).
    pub fn seek_both_range(&mut self, key: &[u8], value: &[u8]) -> Result<Option<Entry<'_>>> {
        self.go(|c, _| c.seek_both_range(key, value))
    }

    /// [`Cursor::dup_count`] (`mdb_cursor_count`).
    ///
    /// # Errors
    ///
    /// Those of [`RwTxn::cursor`] and of finding the current pair again
    /// ([`Error::Corrupted`] for a damaged page).
    pub fn dup_count(&self) -> Result<u64> {
        let At::On(k, v) = &self.at else {
            return Ok(0);
        };
        let mut c = self.txn.cursor(self.db)?;
        seek_pair(&mut c, k, v, self.dups)?;
        c.dup_count()
    }

    /// Puts `key` with `value` as [`RwTxn::put`] does (in a DUPSORT
    /// database, adds the pair) and stands on it. `mdb_cursor_put`.
    ///
    /// # Errors
    ///
    /// Those of [`RwTxn::put`]; the cursor stays where it was.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.txn.put(self.db, key, value)?;
        self.at = At::On(key.to_vec(), value.to_vec());
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
        let At::On(k, old) = &self.at else {
            return Err(Error::InvalidArgument(
                "put_current: the cursor is on no pair".into(),
            ));
        };
        let (k, old) = (k.clone(), old.clone());
        self.txn.put(self.db, &k, value)?;
        if self.dups && old != value {
            self.txn.delete_dup(self.db, &k, &old)?;
        }
        self.at = At::On(k, value.to_vec());
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
        let At::On(k, v) = &self.at else {
            return Err(Error::InvalidArgument(
                "delete_current: the cursor is on no pair".into(),
            ));
        };
        let gone = if self.dups {
            self.txn.delete_dup(self.db, k, v)?
        } else {
            self.txn.delete(self.db, k)?
        };
        if !gone {
            return Err(Error::corrupted(
                0,
                "the pair under a write cursor was not found",
            ));
        }
        self.deleted();
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
        let At::On(k, _) = &self.at else {
            return Err(Error::InvalidArgument(
                "delete_current_key: the cursor is on no pair".into(),
            ));
        };
        self.txn.delete(self.db, k)?;
        self.deleted();
        Ok(())
    }

    fn deleted(&mut self) {
        if let At::On(k, v) = std::mem::replace(&mut self.at, At::Unset) {
            self.at = At::Deleted(k, v);
        }
    }

    /// Merges `operand` into the value under the cursor with the
    /// database's merge operator, as [`RwTxn::merge`] (the cursor-level
    /// form of RocksDB's `Merge`), and stands on the result.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the cursor is on no pair; those of
    /// [`RwTxn::merge`], leaving the value as it was; those of
    /// [`RwTxn::get`] for reading the result back.
    pub fn merge_current(&mut self, operand: &[u8]) -> Result<()> {
        let At::On(k, _) = &self.at else {
            return Err(Error::InvalidArgument(
                "merge_current: the cursor is on no pair".into(),
            ));
        };
        let k = k.clone();
        self.txn.merge(self.db, &k, operand)?;
        let v = self.txn.get(self.db, &k)?.unwrap_or_default().to_vec();
        self.at = At::On(k, v);
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
