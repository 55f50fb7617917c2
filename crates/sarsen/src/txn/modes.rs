//! Write operations beyond `put` and `delete`: LMDB's put flags
//! (`MDB_NOOVERWRITE`, `MDB_APPEND`), libmdbx's `mdbx_replace`, range
//! deletes, and per-database sequences (`mdbx_dbi_sequence`).

use std::ops::{Bound, RangeBounds};

use super::RwTxn;
use crate::btree::walk::RawCursor;
use crate::db::Database;
use crate::error::{Error, Result};
use crate::page::Pgno;

impl RwTxn<'_> {
    /// Inserts `key` with `value` only if `key` is absent (LMDB's
    /// `MDB_NOOVERWRITE`): returns `None` when it inserted, or the value
    /// already there (and writes nothing). In a DUPSORT database the key
    /// counts as present with any value, and its first value is returned.
    ///
    /// # Errors
    ///
    /// As [`put`](RwTxn::put), and those of [`get`](RwTxn::get) for the
    /// lookup.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let env = unsafe { sarsen::Env::open(dir.path()) }.unwrap();
    /// let db = env.main_db();
    /// let mut w = env.write_txn()?;
    /// assert_eq!(w.put_no_overwrite(db, b"k", b"first")?, None);
    /// assert_eq!(w.put_no_overwrite(db, b"k", b"second")?, Some(&b"first"[..]));
    /// # Ok::<(), sarsen::Error>(())
    /// ```
    pub fn put_no_overwrite(
        &mut self,
        db: Database,
        key: &[u8],
        value: &[u8],
    ) -> Result<Option<&[u8]>> {
        if key.len() <= self.env.layout.max_key && self.get(db, key)?.is_some() {
            return self.get(db, key);
        }
        self.put(db, key, value)?;
        Ok(None)
    }

    /// Appends `key` with `value` after the database's last key (LMDB's
    /// `MDB_APPEND`): for loading sorted data. Pages at the end of the tree
    /// are left full rather than split in half, so a database loaded in
    /// order takes the fewest pages (plain `put` of ascending keys does the
    /// same; `append` also checks the order).
    ///
    /// "Greater" is in the database's [`KeyOrder`](crate::KeyOrder).
    ///
    /// In a DUPSORT database `key` must sort after the last key too: a
    /// pair under the last key is [`append_dup`](RwTxn::append_dup)'s.
    ///
    /// # Errors
    ///
    /// [`Error::KeyNotGreater`] if `key` is not greater than the last key
    /// (LMDB gives `MDB_KEYEXIST`), leaving the transaction as it was;
    /// those of [`put`](RwTxn::put).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let env = unsafe { sarsen::Env::open(dir.path()) }.unwrap();
    /// let db = env.main_db();
    /// let mut w = env.write_txn()?;
    /// for i in 0..1000u32 {
    ///     w.append(db, &i.to_be_bytes(), b"value")?;
    /// }
    /// assert!(matches!(w.append(db, &5u32.to_be_bytes(), b"v"), Err(sarsen::Error::KeyNotGreater)));
    /// # Ok::<(), sarsen::Error>(())
    /// ```
    pub fn append(&mut self, db: Database, key: &[u8], value: &[u8]) -> Result<()> {
        super::catalog::check_sizes(self.env, key, value)?;
        self.change(db, |t, dc| {
            super::catalog::check_key(t.ord, key)?;
            match super::dup::dups_of(t.rec, dc)? {
                Some(d) => {
                    if !t.sorts_last(key)? {
                        return Err(Error::KeyNotGreater);
                    }
                    super::dup::put(t, d, key, value).map(drop)
                }
                None => t.append(key, value),
            }
        })
    }

    /// Puts `key` with a `len`-byte value that `fill` writes (LMDB's
    /// `MDB_RESERVE`): for serialising straight into the database's buffer
    /// instead of building the value first. `fill` gets `len` zeroed bytes
    /// and must write the whole value; it runs before anything changes, so
    /// a panic in it leaves the transaction as it was.
    ///
    /// LMDB hands out the page bytes themselves, to be filled before the
    /// next operation; Sarsen's pages carry checksums, so the value is
    /// filled in a buffer the writer owns and copied into the page or
    /// overflow run (one `memcpy`). The closure form keeps the filling
    /// inside the call, where a later version can hash a run after `fill`
    /// returns and drop the copy without changing the API.
    ///
    /// # Errors
    ///
    /// [`Error::ValueTooLarge`] for a `len` over
    /// [`Env::max_value_size`](crate::Env::max_value_size), before `fill`
    /// runs; [`Error::BadTxn`] once an earlier failure broke the
    /// transaction, also before `fill` runs; then those of
    /// [`put`](RwTxn::put).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let env = unsafe { sarsen::Env::open(dir.path()) }.unwrap();
    /// let db = env.main_db();
    /// let mut w = env.write_txn()?;
    /// w.put_reserve(db, b"squares", 10, |buf| {
    ///     for (i, b) in buf.iter_mut().enumerate() {
    ///         *b = (i * i) as u8;
    ///     }
    /// })?;
    /// assert_eq!(w.get(db, b"squares")?, Some(&[0u8, 1, 4, 9, 16, 25, 36, 49, 64, 81][..]));
    /// # Ok::<(), sarsen::Error>(())
    /// ```
    pub fn put_reserve(
        &mut self,
        db: Database,
        key: &[u8],
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<()> {
        if len > crate::page::MAX_VALUE {
            return Err(Error::ValueTooLarge {
                len,
                max: crate::page::MAX_VALUE,
            });
        }
        if self.broken {
            return Err(Error::BadTxn);
        }
        let mut buf = std::mem::take(&mut self.w.merge_buf);
        buf.clear();
        buf.resize(len, 0);
        fill(&mut buf);
        let r = self.put(db, key, &buf);
        self.w.merge_buf = buf;
        r
    }

    /// Puts `key` with `value` and returns the value it replaced, if any
    /// (libmdbx's `mdbx_replace`; the old value is copied out, since its
    /// page is rewritten).
    ///
    /// # Errors
    ///
    /// [`Error::WrongDupMode`] on a DUPSORT database; those of
    /// [`get`](RwTxn::get) and [`put`](RwTxn::put).
    pub fn replace(&mut self, db: Database, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        super::dup::refuse_dups(&self.tree(db)?, "replace")?;
        let old = if key.len() <= self.env.layout.max_key {
            self.get(db, key)?.map(<[u8]>::to_vec)
        } else {
            None
        };
        self.put(db, key, value)?;
        Ok(old)
    }

    /// Deletes `key` and returns the value it had (libmdbx's
    /// `mdbx_replace` with no new value), or `None` if it was absent.
    ///
    /// # Errors
    ///
    /// [`Error::WrongDupMode`] on a DUPSORT database; those of
    /// [`get`](RwTxn::get) and [`delete`](RwTxn::delete).
    pub fn take(&mut self, db: Database, key: &[u8]) -> Result<Option<Vec<u8>>> {
        super::dup::refuse_dups(&self.tree(db)?, "take")?;
        if key.len() > self.env.layout.max_key {
            return Ok(None);
        }
        let Some(old) = self.get(db, key)?.map(<[u8]>::to_vec) else {
            return Ok(None);
        };
        self.delete(db, key)?;
        Ok(Some(old))
    }

    /// Deletes every key of `db` in `range` (`a..b`, `a..=b`, `a..`, `..b`,
    /// `..` over `&[u8]`, bounds in the database's
    /// [`KeyOrder`](crate::KeyOrder)); returns how many entries went (in a
    /// DUPSORT database, every value of each key). Each delete descends once from
    /// the root, so the cost is that of the deletes; `clear_db` empties a
    /// whole database faster.
    ///
    /// The keys are deleted one by one, each as a
    /// [`delete`](RwTxn::delete): an error stops the walk with the keys
    /// before it deleted, even when the error leaves the transaction
    /// usable.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let env = unsafe { sarsen::Env::open(dir.path()) }.unwrap();
    /// let db = env.main_db();
    /// let mut w = env.write_txn()?;
    /// for k in [&b"a"[..], b"b", b"c", b"d"] {
    ///     w.put(db, k, b"")?;
    /// }
    /// assert_eq!(w.delete_range(db, &b"b"[..]..=&b"c"[..])?, 2);
    /// let left: Vec<&[u8]> = w.iter(db)?.map(|e| e.unwrap().0).collect();
    /// assert_eq!(left, [&b"a"[..], b"d"]);
    /// # Ok::<(), sarsen::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Those of [`iter`](RwTxn::iter) and [`delete`](RwTxn::delete);
    /// [`Error::Corrupted`] if a key the walk found cannot be deleted.
    pub fn delete_range<'k, R: RangeBounds<&'k [u8]>>(
        &mut self,
        db: Database,
        range: R,
    ) -> Result<u64> {
        let (from, mut skip_from) = match range.start_bound() {
            Bound::Included(k) => (Some(k.to_vec()), false),
            Bound::Excluded(k) => (Some(k.to_vec()), true),
            Bound::Unbounded => (None, false),
        };
        // `None`: from the first key (the empty key is not the smallest in
        // every order).
        let mut from = from;
        let end = range.end_bound().map(|k| k.to_vec());
        if self.broken {
            return Err(Error::BadTxn);
        }
        let mut n = 0;
        let mut key = Vec::new();
        loop {
            // Broken while the walk runs the key order: a user comparator
            // that panics there must not leave a range half deleted in a
            // transaction the caller can still commit (as `apply`).
            // The walk only reads: an error it returns leaves the
            // transaction as usable as a failed `get` does.
            self.broken = true;
            let found = self.next_in_range(db, from.as_deref(), skip_from, &end, &mut key);
            self.broken = false;
            skip_from = false;
            let Some(root) = found? else { break };
            let gone = self.change(db, |t, dc| match super::dup::dups_of(t.rec, dc)? {
                Some(d) => t.delete_all(d, &key),
                None => t.delete(&key).map(u64::from),
            })?;
            if gone == 0 {
                return Err(Error::corrupted(
                    u64::from(root),
                    "a key the cursor found could not be deleted",
                ));
            }
            n += gone;
            let next = from.get_or_insert_with(Vec::new);
            std::mem::swap(next, &mut key);
        }
        Ok(n)
    }

    /// [`delete_range`](RwTxn::delete_range)'s walk: the first key of
    /// `db` at or after `from` (after it with `skip_from`; from the first
    /// key without `from`) that is still inside `end`, copied into `key`;
    /// returns the tree's root page for messages, or `None` past the range.
    fn next_in_range(
        &self,
        db: Database,
        from: Option<&[u8]>,
        skip_from: bool,
        end: &Bound<Vec<u8>>,
        key: &mut Vec<u8>,
    ) -> Result<Option<Pgno>> {
        let (rec, ord) = self.tree_ord(db)?;
        let mut c = RawCursor::new(self.src(), rec, ord);
        let mut e = match from {
            Some(f) => c.seek(f)?,
            None => c.first()?,
        };
        if skip_from && e.is_some_and(|(k, _)| Some(k) == from) {
            e = c.next()?;
        }
        let Some((k, _)) = e else { return Ok(None) };
        let inside = match end {
            Bound::Included(h) => !ord.lt(h, k),
            Bound::Excluded(h) => ord.lt(k, h),
            Bound::Unbounded => true,
        };
        if !inside {
            return Ok(None);
        }
        key.clear();
        key.extend_from_slice(k);
        Ok(Some(rec.root))
    }

    /// The database's sequence (libmdbx's `mdbx_dbi_sequence`): a counter
    /// kept in its record, changed only by
    /// [`next_sequence`](RwTxn::next_sequence) and committed or aborted with
    /// the transaction. Starts at 0.
    ///
    /// # Errors
    ///
    /// As [`stat`](RwTxn::stat).
    pub fn sequence(&self, db: Database) -> Result<u64> {
        Ok(self.tree(db)?.sequence)
    }

    /// Adds `increment` to the database's sequence and returns the value
    /// before (so `next_sequence(db, 1)` hands out 0, 1, 2, ...).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] if the sequence would pass `u64::MAX` (it
    /// is left unchanged); [`Error::DbNotFound`]; [`Error::BadTxn`] once an
    /// earlier failure broke the transaction. Nothing is written before
    /// commit, so none of these breaks it.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let env = unsafe { sarsen::Env::open(dir.path()) }.unwrap();
    /// let mut w = env.write_txn()?;
    /// let ids = w.create_db(Some("ids"))?;
    /// assert_eq!(w.next_sequence(ids, 1)?, 0);
    /// assert_eq!(w.next_sequence(ids, 10)?, 1);
    /// w.commit()?;
    /// assert_eq!(env.read_txn()?.sequence(ids)?, 11);
    /// # Ok::<(), sarsen::Error>(())
    /// ```
    pub fn next_sequence(&mut self, db: Database, increment: u64) -> Result<u64> {
        self.change(db, |t, _| {
            let old = t.rec.sequence;
            t.rec.sequence = old.checked_add(increment).ok_or_else(|| {
                Error::InvalidArgument(format!("sequence {old} + {increment} overflows"))
            })?;
            Ok(old)
        })
    }
}
