//! Cursor moves across the values of a DUPSORT database (LMDB's
//! `MDB_NEXT_DUP`, `MDB_PREV_DUP`, `MDB_FIRST_DUP`, `MDB_LAST_DUP`,
//! `MDB_NEXT_NODUP`, `MDB_PREV_NODUP`, `MDB_GET_BOTH`,
//! `MDB_GET_BOTH_RANGE`, `mdb_cursor_count`, `MDB_GET_MULTIPLE`,
//! `MDB_NEXT_MULTIPLE`).
//!
//! The main cursor stands on a key's leaf node; `Sub` says where among
//! that key's values: the only one, an index into its duplicate list, or a
//! second cursor over its duplicate sub-tree (LMDB's xcursor).

use super::{Cursor, Entry, RawCursor};
use crate::btree::dup::{self as bdup, Vals};
use crate::error::{Error, Result};
use crate::page::dup::DupList;

/// Where a cursor stands among the values of its current key.
#[derive(Clone)]
pub(super) enum Sub<'a> {
    /// The key has one value (always so without DUPSORT).
    One,
    /// Index `usize` of a duplicate list.
    List(DupList<'a>, usize),
    /// A cursor over the key's duplicate sub-tree (keys are the values);
    /// boxed, as its stack is large.
    Tree(Box<RawCursor<'a>>),
}

fn damaged() -> Error {
    Error::corrupted(0, "damaged duplicate list")
}

impl<'txn> Cursor<'txn> {
    /// Takes the entry `e` the main cursor landed on and, in a DUPSORT
    /// database, sets the cursor at its key's first value (`first`) or
    /// last, returning that pair.
    pub(super) fn land(
        &mut self,
        e: Option<Entry<'txn>>,
        first: bool,
    ) -> Result<Option<Entry<'txn>>> {
        let Some(d) = self.dups else {
            return Ok(e);
        };
        self.sub = Sub::One;
        if e.is_none() {
            return Ok(None);
        }
        let Some((n, pgno)) = self.raw.current_node()? else {
            return Ok(None);
        };
        match bdup::vals(&n, d, pgno)? {
            Vals::One(v) => Ok(Some((n.key, v))),
            Vals::List(l) => {
                let i = if first { 0 } else { l.len() - 1 };
                let v = l.get(i).ok_or_else(damaged)?;
                self.sub = Sub::List(l, i);
                Ok(Some((n.key, v)))
            }
            Vals::Tree(r) => {
                let mut c = RawCursor::new(self.raw.source(), r, d.ord);
                let x = if first { c.first()? } else { c.last()? };
                let (v, _) = x.ok_or_else(|| {
                    Error::corrupted(u64::from(r.root), "empty duplicate sub-tree")
                })?;
                self.sub = Sub::Tree(Box::new(c));
                Ok(Some((n.key, v)))
            }
        }
    }

    /// One value forward or back within the current key; `None` (the
    /// position unchanged) at its first or last value.
    fn sub_step(&mut self, fwd: bool) -> Result<Option<&'txn [u8]>> {
        match &mut self.sub {
            Sub::One => Ok(None),
            Sub::List(l, i) => {
                if fwd && *i + 1 < l.len() {
                    *i += 1;
                } else if !fwd && *i > 0 {
                    *i -= 1;
                } else {
                    return Ok(None);
                }
                l.get(*i).ok_or_else(damaged).map(Some)
            }
            Sub::Tree(c) => {
                let x = if fwd { c.next()? } else { c.prev()? };
                if let Some((v, _)) = x {
                    return Ok(Some(v));
                }
                // Back onto the value it stood on.
                if fwd {
                    c.last()?;
                } else {
                    c.first()?;
                }
                Ok(None)
            }
        }
    }

    /// `next`/`prev` of a DUPSORT database: across the values, then keys.
    pub(super) fn step_pair(&mut self, fwd: bool) -> Result<Option<Entry<'txn>>> {
        if self.is_positioned() {
            if let Some(v) = self.sub_step(fwd)? {
                return Ok(self.raw.current()?.map(|(k, _)| (k, v)));
            }
        }
        let e = if fwd {
            self.raw.next()?
        } else {
            self.raw.prev()?
        };
        self.land(e, fwd)
    }

    /// The key and value under a DUPSORT cursor.
    pub(super) fn current_pair(&self) -> Result<Option<Entry<'txn>>> {
        let Some((k, v)) = self.raw.current()? else {
            return Ok(None);
        };
        let v = match &self.sub {
            Sub::One => v,
            Sub::List(l, i) => l.get(*i).ok_or_else(damaged)?,
            Sub::Tree(c) => match c.current()? {
                Some((v, _)) => v,
                None => return Ok(None),
            },
        };
        Ok(Some((k, v)))
    }

    /// Moves to the next value of the current key (`MDB_NEXT_DUP`). At its
    /// last value, or unpositioned, returns `None` and stays. Without
    /// DUPSORT every key has one value, so this is always `None`.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`] if a page the move reads is damaged; the
    /// cursor's position is then unspecified.
    pub fn next_dup(&mut self) -> Result<Option<Entry<'txn>>> {
        self.dup_step(true)
    }

    /// Moves to the previous value of the current key (`MDB_PREV_DUP`);
    /// `None`, staying, at its first value.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`] if a page the move reads is damaged; the
    /// cursor's position is then unspecified.
    pub fn prev_dup(&mut self) -> Result<Option<Entry<'txn>>> {
        self.dup_step(false)
    }

    fn dup_step(&mut self, fwd: bool) -> Result<Option<Entry<'txn>>> {
        if !self.is_positioned() {
            return Ok(None);
        }
        match self.sub_step(fwd)? {
            Some(v) => Ok(self.raw.current()?.map(|(k, _)| (k, v))),
            None => Ok(None),
        }
    }

    /// Moves to the first value of the current key (`MDB_FIRST_DUP`);
    /// `None` when unpositioned.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`] if a page the move reads is damaged; the
    /// cursor's position is then unspecified.
    pub fn first_dup(&mut self) -> Result<Option<Entry<'txn>>> {
        let e = self.raw.current()?;
        self.land(e, true)
    }

    /// Moves to the last value of the current key (`MDB_LAST_DUP`);
    /// `None` when unpositioned.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`] if a page the move reads is damaged; the
    /// cursor's position is then unspecified.
    pub fn last_dup(&mut self) -> Result<Option<Entry<'txn>>> {
        let e = self.raw.current()?;
        self.land(e, false)
    }

    /// Moves to the first value of the next key (`MDB_NEXT_NODUP`); from an
    /// unpositioned cursor, to the first entry.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`] if a page the move reads is damaged; the
    /// cursor's position is then unspecified.
    pub fn next_nodup(&mut self) -> Result<Option<Entry<'txn>>> {
        let e = self.raw.next()?;
        self.land(e, true)
    }

    /// Moves to the last value of the previous key (`MDB_PREV_NODUP`, which
    /// lands on the last value as LMDB's does); from an unpositioned
    /// cursor, to the last entry.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`] if a page the move reads is damaged; the
    /// cursor's position is then unspecified.
    pub fn prev_nodup(&mut self) -> Result<Option<Entry<'txn>>> {
        let e = self.raw.prev()?;
        self.land(e, false)
    }

    /// Moves to the pair `key`/`value` (`MDB_GET_BOTH`); `None` if it is
    /// not there (the position is then unspecified, as in LMDB). Values
    /// compare in the database's duplicate order.
    ///
    /// # Errors
    ///
    /// [`Error::WrongDupMode`] without DUPSORT (LMDB's `MDB_INCOMPATIBLE`),
    /// before the cursor moves; [`Error::Corrupted`] if a page read is
    /// damaged.
    pub fn seek_both(&mut self, key: &[u8], value: &[u8]) -> Result<Option<Entry<'txn>>> {
        let d = self.need_dups("seek_both")?;
        Ok(match self.seek_both_range(key, value)? {
            Some((k, v)) if d.ord.cmp(v, value).is_eq() => Some((k, v)),
            _ => None,
        })
    }

    /// Moves to the first value `>= value` of `key` (`MDB_GET_BOTH_RANGE`);
    /// `None` if `key` is absent or has no such value.
    ///
    /// # Errors
    ///
    /// As [`seek_both`](Cursor::seek_both).
    pub fn seek_both_range(&mut self, key: &[u8], value: &[u8]) -> Result<Option<Entry<'txn>>> {
        let d = self.need_dups("seek_both_range")?;
        let k = match self.seek(key)? {
            Some((k, _)) if k == key => k,
            _ => return Ok(None),
        };
        if let Sub::One = self.sub {
            let v = self.current_pair()?.map(|e| e.1);
            return Ok(v.filter(|v| !d.ord.lt(v, value)).map(|v| (k, v)));
        }
        let v = match &mut self.sub {
            Sub::One => None,
            Sub::List(l, i) => {
                let (j, _) = l.search(value, d.ord).ok_or_else(damaged)?;
                if j >= l.len() {
                    None
                } else {
                    *i = j;
                    l.get(j)
                }
            }
            Sub::Tree(c) => c.seek(value)?.map(|(v, _)| v),
        };
        Ok(v.map(|v| (k, v)))
    }

    /// Number of values of the current key (`mdb_cursor_count`): 1 without
    /// DUPSORT, 0 when unpositioned.
    ///
    /// # Errors
    ///
    /// None: the count comes from what the cursor already holds (the
    /// key's value list, or its sub-tree's record), and no page is read.
    pub fn dup_count(&self) -> Result<u64> {
        if !self.is_positioned() {
            return Ok(0);
        }
        Ok(match &self.sub {
            Sub::One => 1,
            Sub::List(l, _) => l.len() as u64,
            Sub::Tree(c) => c.record().entries,
        })
    }

    /// From the current value on, the values of the current key that sit
    /// together in one list or sub-tree leaf (`MDB_GET_MULTIPLE`), as
    /// `(key, values)`: `values` holds them packed back to back, each the
    /// key's value size. The cursor moves to the last value returned, so
    /// that [`next_multiple`](Cursor::next_multiple) continues after it.
    /// `None` when unpositioned.
    ///
    /// # Errors
    ///
    /// [`Error::WrongDupMode`] unless the database is DUPFIXED, before the
    /// cursor moves; [`Error::Corrupted`] if a page read is damaged.
    pub fn get_multiple(&mut self) -> Result<Option<(&'txn [u8], &[u8])>> {
        self.need_fixed("get_multiple")?;
        let Some((k, v)) = self.current_pair()? else {
            return Ok(None);
        };
        self.multi.clear();
        match &mut self.sub {
            Sub::One => self.multi.extend_from_slice(v),
            Sub::List(l, i) => {
                let s = v.len();
                let packed = l.packed().ok_or_else(damaged)?;
                let rest = packed.get(*i * s..).ok_or_else(damaged)?;
                self.multi.extend_from_slice(rest);
                *i = l.len() - 1;
            }
            Sub::Tree(c) => {
                let Some((p, i)) = c.leaf_pos() else {
                    return Ok(None);
                };
                for j in i..p.len() {
                    self.multi.extend_from_slice(p.leaf(j)?.key);
                }
                c.set_leaf_idx(p.len() - 1);
            }
        }
        Ok(Some((k, &self.multi)))
    }

    /// Moves past the values the last `get_multiple`/`next_multiple`
    /// returned and returns the next batch of the same key
    /// (`MDB_NEXT_MULTIPLE`); `None` after the key's last value.
    ///
    /// # Errors
    ///
    /// As [`get_multiple`](Cursor::get_multiple).
    pub fn next_multiple(&mut self) -> Result<Option<(&'txn [u8], &[u8])>> {
        // Refused before the cursor moves.
        self.need_fixed("next_multiple")?;
        if !self.is_positioned() || self.sub_step(true)?.is_none() {
            return Ok(None);
        }
        self.get_multiple()
    }

    fn need_fixed(&self, op: &'static str) -> Result<()> {
        if !self.need_dups(op)?.fixed {
            return Err(Error::WrongDupMode {
                op,
                needs: "with fixed-size duplicates (DUPFIXED)",
            });
        }
        Ok(())
    }

    fn need_dups(&self, op: &'static str) -> Result<bdup::Dups<'txn>> {
        self.dups.ok_or(Error::WrongDupMode {
            op,
            needs: "with duplicates (DUPSORT)",
        })
    }
}
