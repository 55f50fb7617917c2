//! Cursors and range iterators.
//!
//! A cursor keeps the path from the root to its current leaf entry in a
//! fixed-size stack (no allocation) and moves along leaves by climbing to
//! the nearest ancestor with a neighbour, as LMDB's `mdb_cursor_sibling`.
//! Keys and values it returns borrow the transaction: zero copy. The
//! moves across the values of a DUPSORT database are in [`dup`].

mod dup;

use std::ops::{Bound, RangeBounds};

pub use crate::btree::walk::Entry;
pub(crate) use crate::btree::walk::RawCursor;

use crate::btree::dup::Dups;
use crate::error::Result;
use crate::order::Order;
use crate::page::DbRecord;
use crate::store::AnySource;

/// A cursor over one database (LMDB's `MDB_cursor`, read operations).
///
/// Positioning calls return the entry they land on, or `None` past either
/// end. An unpositioned cursor's `next` is `first` and its `prev` is `last`;
/// after running off the end, `prev` returns the last entry again (and
/// symmetrically at the start).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// let env = unsafe { sarsen::Env::open(dir.path()) }.unwrap();
/// let db = env.main_db();
/// let mut txn = env.write_txn().unwrap();
/// for k in [b"a", b"b", b"c"] {
///     txn.put(db, k, b"v").unwrap();
/// }
/// let mut c = txn.cursor(db).unwrap();
/// assert_eq!(c.seek(b"b").unwrap().map(|e| e.0), Some(&b"b"[..]));
/// assert_eq!(c.next().unwrap().map(|e| e.0), Some(&b"c"[..]));
/// assert_eq!(c.next().unwrap(), None);
/// assert_eq!(c.prev().unwrap().map(|e| e.0), Some(&b"c"[..]));
/// ```
pub struct Cursor<'txn> {
    raw: RawCursor<'txn>,
    /// The duplicate mode of a DUPSORT database.
    dups: Option<Dups<'txn>>,
    /// Where the cursor stands among the current key's values (DUPSORT).
    sub: dup::Sub<'txn>,
    /// `get_multiple` output gathered from a sub-tree leaf.
    multi: Vec<u8>,
}

impl<'txn> Cursor<'txn> {
    pub(crate) fn new(
        src: AnySource<'txn>,
        rec: DbRecord,
        ord: Order<'txn>,
        dup_order: Option<Order<'txn>>,
    ) -> Result<Cursor<'txn>> {
        let dups = Dups::of(rec.flags, dup_order)
            .map_err(|what| crate::Error::corrupted(u64::from(rec.root), what))?;
        Ok(Cursor {
            raw: RawCursor::new(src, rec, ord),
            dups,
            sub: dup::Sub::One,
            multi: Vec::new(),
        })
    }

    /// Moves to the first entry (smallest key; in a DUPSORT database its
    /// first value). `MDB_FIRST`.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`](crate::Error::Corrupted) if a page the move reads is damaged; the
    /// cursor's position is then unspecified.
    pub fn first(&mut self) -> Result<Option<Entry<'txn>>> {
        let e = self.raw.first()?;
        self.land(e, true)
    }
    /// Moves to the last entry (largest key; in a DUPSORT database its
    /// last value). `MDB_LAST`.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`](crate::Error::Corrupted) if a page the move reads is damaged; the
    /// cursor's position is then unspecified.
    pub fn last(&mut self) -> Result<Option<Entry<'txn>>> {
        let e = self.raw.last()?;
        self.land(e, false)
    }
    /// Moves to the next entry: in a DUPSORT database the next value of
    /// this key, else the first value of the next key. `MDB_NEXT`.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`](crate::Error::Corrupted) if a page the move reads is damaged; the
    /// cursor's position is then unspecified.
    #[allow(clippy::should_implement_trait)]
    #[inline]
    pub fn next(&mut self) -> Result<Option<Entry<'txn>>> {
        if self.dups.is_none() {
            return self.raw.next();
        }
        self.step_pair(true)
    }
    /// Moves to the previous entry (in a DUPSORT database the previous
    /// value, or the last value of the previous key). `MDB_PREV`.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`](crate::Error::Corrupted) if a page the move reads is damaged; the
    /// cursor's position is then unspecified.
    #[inline]
    pub fn prev(&mut self) -> Result<Option<Entry<'txn>>> {
        if self.dups.is_none() {
            return self.raw.prev();
        }
        self.step_pair(false)
    }
    /// The entry under the cursor, `None` when unpositioned or past an end.
    /// `MDB_GET_CURRENT`.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`](crate::Error::Corrupted) if the page under the cursor, or the overflow
    /// run of its value, is damaged.
    pub fn current(&self) -> Result<Option<Entry<'txn>>> {
        if self.dups.is_none() {
            return self.raw.current();
        }
        self.current_pair()
    }
    /// Moves to the first entry whose key is `>= key` in the database's
    /// [`KeyOrder`](crate::KeyOrder) (its first value, in a DUPSORT
    /// database). `MDB_SET_RANGE`.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`](crate::Error::Corrupted) if a page the move reads is damaged; the
    /// cursor's position is then unspecified.
    pub fn seek(&mut self, key: &[u8]) -> Result<Option<Entry<'txn>>> {
        let e = self.raw.seek(key)?;
        self.land(e, true)
    }
    /// The cursor engine under this cursor (a write cursor saves its path).
    pub(crate) fn raw(&self) -> &RawCursor<'txn> {
        &self.raw
    }

    /// Whether the cursor stands on an entry (libmdbx's
    /// `mdbx_cursor_on_first`/`on_last` need one; `false` before the first
    /// move and after moving past either end).
    pub fn is_positioned(&self) -> bool {
        self.raw.is_at()
    }

    /// Whether the cursor stands on the first entry (libmdbx's
    /// `mdbx_cursor_on_first`).
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`](crate::Error::Corrupted) if a page the look-ahead reads is damaged; the
    /// cursor itself does not move.
    pub fn is_first(&self) -> Result<bool> {
        if !self.is_positioned() {
            return Ok(false);
        }
        Ok(self.probe().prev()?.is_none())
    }

    /// Whether the cursor stands on the last entry (libmdbx's
    /// `mdbx_cursor_on_last`).
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`](crate::Error::Corrupted) if a page the look-ahead reads is damaged; the
    /// cursor itself does not move.
    pub fn is_last(&self) -> Result<bool> {
        if !self.is_positioned() {
            return Ok(false);
        }
        Ok(self.probe().next()?.is_none())
    }

    /// A copy of this cursor for looking ahead (without the
    /// `get_multiple` buffer).
    fn probe(&self) -> Cursor<'txn> {
        Cursor {
            raw: self.raw.clone(),
            dups: self.dups,
            sub: self.sub.clone(),
            multi: Vec::new(),
        }
    }

    /// Whether the cursor has moved past the last entry (libmdbx's
    /// `mdbx_cursor_eof`; also after `seek` found no key at or above its
    /// argument). `prev` then returns the last entry.
    pub fn is_past_end(&self) -> bool {
        self.raw.is_past_end()
    }

    /// Whether the cursor has moved before the first entry.
    pub(crate) fn is_before_start(&self) -> bool {
        self.raw.is_before_start()
    }

    /// Moves to `key` and returns its value (its first value, in a
    /// DUPSORT database), or `None` if absent (the cursor then stands on
    /// the next larger key). `MDB_SET_KEY`.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`](crate::Error::Corrupted) if a page the move reads is damaged; the
    /// cursor's position is then unspecified.
    pub fn seek_exact(&mut self, key: &[u8]) -> Result<Option<&'txn [u8]>> {
        Ok(match self.seek(key)? {
            Some((k, v)) if k == key => Some(v),
            _ => None,
        })
    }
}

/// An iterator over a key range of one database, in the database's key
/// order ([`KeyOrder`](crate::KeyOrder); the range bounds too); `.rev()`
/// walks it backwards. Items are `Result`s: a damaged page ends the
/// iteration with one `Err`.
pub struct Iter<'txn> {
    front: Cursor<'txn>,
    back: Cursor<'txn>,
    start: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
    front_started: bool,
    back_started: bool,
    /// The last entries returned from either end.
    front_key: Option<Entry<'txn>>,
    back_key: Option<Entry<'txn>>,
    done: bool,
}

fn own(b: Bound<&&[u8]>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl<'txn> Iter<'txn> {
    pub(crate) fn new<'k, R: RangeBounds<&'k [u8]>>(
        src: AnySource<'txn>,
        rec: DbRecord,
        ord: Order<'txn>,
        dup_order: Option<Order<'txn>>,
        range: R,
    ) -> Result<Iter<'txn>> {
        let c = Cursor::new(src, rec, ord, dup_order)?;
        Ok(Iter {
            front: c.probe(),
            back: c,
            start: own(range.start_bound()),
            end: own(range.end_bound()),
            front_started: false,
            back_started: false,
            front_key: None,
            back_key: None,
            done: false,
        })
    }

    fn first_front(&mut self) -> Result<Option<Entry<'txn>>> {
        match &self.start {
            Bound::Unbounded => self.front.first(),
            Bound::Included(k) => self.front.seek(k),
            Bound::Excluded(k) => match self.front.seek(k)? {
                Some((fk, _)) if fk == k.as_slice() => self.front.next_nodup(),
                e => Ok(e),
            },
        }
    }

    fn first_back(&mut self) -> Result<Option<Entry<'txn>>> {
        let (k, incl) = match &self.end {
            Bound::Unbounded => return self.back.last(),
            Bound::Included(k) => (k, true),
            Bound::Excluded(k) => (k, false),
        };
        match self.back.seek(k)? {
            Some((bk, _)) if incl && bk == k.as_slice() => self.back.last_dup(),
            Some(_) => self.back.prev(),
            None => self.back.last(),
        }
    }

    #[inline]
    fn in_end(&self, k: &[u8]) -> bool {
        let ord = self.front.raw.order();
        match &self.end {
            Bound::Unbounded => true,
            Bound::Included(e) => !ord.lt(e, k),
            Bound::Excluded(e) => ord.lt(k, e),
        }
    }

    #[inline]
    fn in_start(&self, k: &[u8]) -> bool {
        let ord = self.front.raw.order();
        match &self.start {
            Bound::Unbounded => true,
            Bound::Included(s) => !ord.lt(k, s),
            Bound::Excluded(s) => ord.lt(s, k),
        }
    }

    /// Whether `k`, the next item going forward (`fwd`) or back, is in
    /// the range and short of the other side's last item.
    #[inline(never)]
    fn inside(&self, e: Entry<'_>, fwd: bool) -> bool {
        if fwd {
            self.in_end(e.0) && self.back_key.is_none_or(|b| self.pair_lt(e, b))
        } else {
            self.in_start(e.0) && self.front_key.is_none_or(|f| self.pair_lt(f, e))
        }
    }

    /// Whether entry `a` comes before `b`: by key, then (DUPSORT) by value.
    fn pair_lt(&self, a: Entry<'_>, b: Entry<'_>) -> bool {
        match self.front.raw.order().cmp(a.0, b.0) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal => self.front.dups.is_some_and(|d| d.ord.lt(a.1, b.1)),
        }
    }

    #[inline]
    fn finish(&mut self, r: Result<Option<Entry<'txn>>>, fwd: bool) -> Option<Result<Entry<'txn>>> {
        match r {
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
            Ok(None) => {
                self.done = true;
                None
            }
            Ok(Some((k, v))) => {
                // A whole scan compares nothing: keep that path small
                // enough to inline.
                let open = if fwd {
                    matches!(self.end, Bound::Unbounded) && self.back_key.is_none()
                } else {
                    matches!(self.start, Bound::Unbounded) && self.front_key.is_none()
                };
                if !open && !self.inside((k, v), fwd) {
                    self.done = true;
                    return None;
                }
                if fwd {
                    self.front_key = Some((k, v));
                } else {
                    self.back_key = Some((k, v));
                }
                Some(Ok((k, v)))
            }
        }
    }
}

impl<'txn> Iterator for Iter<'txn> {
    type Item = Result<Entry<'txn>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = if self.front_started {
            self.front.next()
        } else {
            self.front_started = true;
            self.first_front()
        };
        self.finish(r, true)
    }
}

impl DoubleEndedIterator for Iter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = if self.back_started {
            self.back.prev()
        } else {
            self.back_started = true;
            self.first_back()
        };
        self.finish(r, false)
    }
}
