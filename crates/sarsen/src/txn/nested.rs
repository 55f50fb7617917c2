//! Nested write transactions (LMDB's `mdb_txn_begin(env, parent, ..)`):
//! a child of a write transaction commits into its parent or aborts alone.
//!
//! There is one writer state for the whole stack. Beginning a child pushes
//! a [`Checkpoint`] of the parent's small state (trees, named databases,
//! append hint) and a mark in the pager (`store/marks.rs`: free lists, page
//! counter, and the original bytes of the parent's dirty pages the child
//! changes). Abort restores both, so every page number the child took
//! returns to the free lists; commit keeps the state as it is.

use std::ops::{Deref, DerefMut};

use super::write::RwTxn;
use crate::error::{Error, Result};

/// A nested write transaction: a child of an [`RwTxn`] (or of another
/// `NestedTxn`), LMDB's `mdb_txn_begin(env, parent, 0, ..)`. Begin one
/// with [`RwTxn::nested`].
///
/// It dereferences to [`RwTxn`], so every read and write method works on
/// it, and it sees its parent's uncommitted changes.
/// [`commit`](NestedTxn::commit) folds its changes into the parent
/// (nothing is written to the file: only the outermost commit writes);
/// [`abort`](NestedTxn::abort), or dropping it, puts the parent back
/// exactly as it was when the child began. While it lives the parent is
/// mutably borrowed, so it cannot be used (LMDB forbids it by rule):
///
/// ```compile_fail,E0499
/// # let dir = tempfile::tempdir().unwrap();
/// let env = unsafe { sarsen::Env::open(dir.path()) }.unwrap();
/// let db = env.main_db();
/// let mut w = env.write_txn().unwrap();
/// let mut child = w.nested().unwrap();
/// w.put(db, b"k", b"v").unwrap(); // error: `w` is borrowed by `child`
/// child.commit().unwrap();
/// ```
///
/// and a value read through it cannot outlive it:
///
/// ```compile_fail,E0597
/// # let dir = tempfile::tempdir().unwrap();
/// let env = unsafe { sarsen::Env::open(dir.path()) }.unwrap();
/// let db = env.main_db();
/// let mut w = env.write_txn().unwrap();
/// let v = {
///     let child = w.nested().unwrap();
///     child.get(db, b"k").unwrap() // error: `child` does not live long enough
/// };
/// drop(v);
/// ```
///
/// If an operation breaks the child (an error after pages changed, which
/// makes later operations fail with [`Error::BadTxn`]), the parent is not
/// broken: aborting the child, or a commit that fails with `BadTxn`,
/// restores it.
pub struct NestedTxn<'p, 'env> {
    txn: &'p mut RwTxn<'env>,
    /// Index of its checkpoint in `Writer::nest`, and the checkpoint's id.
    depth: usize,
    id: u64,
    done: bool,
}

impl<'env> RwTxn<'env> {
    /// Begins a nested write transaction, a child of this one (LMDB's
    /// `mdb_txn_begin` with a parent): its changes reach this transaction
    /// only if it commits, and through this one the file only when the
    /// outermost transaction commits. Children nest to any depth:
    /// `nested()` on a [`NestedTxn`] begins a grandchild.
    ///
    /// Cost: beginning copies the small state (the three tree records, the
    /// named databases' states, the free lists as page numbers) but no
    /// page. The first change the child makes to a page that was already
    /// dirty copies that page once (LMDB's way); pages the child allocates
    /// cost nothing extra. Abort writes the copies back, commit hands them
    /// to the enclosing child if there is one and otherwise frees them.
    ///
    /// Where Sarsen differs from LMDB: the parent cannot be used while the
    /// child lives (a borrow, not a runtime rule); nesting works in
    /// write-map mode too (LMDB refuses `MDB_WRITEMAP` parents, libmdbx
    /// allows them); and database handles are names, so a database a
    /// child created and then aborted simply does not exist in the parent
    /// ([`Error::DbNotFound`]) while its handle stays valid.
    ///
    /// # Errors
    ///
    /// [`Error::BadTxn`] if this transaction is broken (an earlier write
    /// failed after changing pages): nothing is begun, and the only thing
    /// left to do with it is to abort. Beginning allocates no page, so it
    /// cannot run out of space.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let env = unsafe { sarsen::Env::open(dir.path()) }.unwrap();
    /// let db = env.main_db();
    /// let mut w = env.write_txn()?;
    /// w.put(db, b"a", b"1")?;
    /// let mut child = w.nested()?;
    /// child.put(db, b"b", b"2")?;
    /// assert_eq!(child.get(db, b"a")?, Some(&b"1"[..])); // sees the parent
    /// let mut grandchild = child.nested()?;
    /// grandchild.delete(db, b"a")?;
    /// grandchild.abort(); // "a" is back
    /// child.commit()?; // "b" is now the parent's
    /// assert_eq!(w.get(db, b"a")?, Some(&b"1"[..]));
    /// assert_eq!(w.get(db, b"b")?, Some(&b"2"[..]));
    /// w.commit()?;
    /// # Ok::<(), sarsen::Error>(())
    /// ```
    pub fn nested(&mut self) -> Result<NestedTxn<'_, 'env>> {
        if self.broken {
            return Err(Error::BadTxn);
        }
        let depth = self.w.nest.len();
        let id = self.w.checkpoint();
        Ok(NestedTxn {
            txn: self,
            depth,
            id,
            done: false,
        })
    }
}

impl NestedTxn<'_, '_> {
    /// Commits into the parent (LMDB's `mdb_txn_commit` of a child): the
    /// parent now sees every change, and they reach the file when the
    /// outermost transaction commits, or vanish if it (or any transaction
    /// between) aborts. Writes nothing and cannot run out of space: the
    /// saved copies of the parent's pages are dropped, or handed to the
    /// enclosing child.
    ///
    /// # Errors
    ///
    /// [`Error::BadTxn`] if an operation broke this child, or if the
    /// transaction it belongs to no longer holds its checkpoint: it is then
    /// aborted, and the parent is as it was when the child began (still
    /// usable). [`Error::Io`] or [`Error::DiskFull`] only in write-map mode, if a page's view
    /// cannot be made again while rolling back; the parent is then broken.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let env = unsafe { sarsen::Env::open(dir.path()) }.unwrap();
    /// let db = env.main_db();
    /// let mut w = env.write_txn()?;
    /// let mut child = w.nested()?;
    /// child.put(db, b"k", b"v")?;
    /// child.commit()?;
    /// assert_eq!(w.get(db, b"k")?, Some(&b"v"[..]));
    /// # Ok::<(), sarsen::Error>(())
    /// ```
    pub fn commit(mut self) -> Result<()> {
        self.end(true)
    }

    /// Discards this child's changes (LMDB's `mdb_txn_abort` of a child;
    /// dropping it does the same): the parent is exactly as it was when
    /// the child began, and the pages the child took return to the
    /// parent's free lists, so aborted children never grow the file.
    /// Cost: one page copy back per parent page the child changed.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let env = unsafe { sarsen::Env::open(dir.path()) }.unwrap();
    /// let db = env.main_db();
    /// let mut w = env.write_txn()?;
    /// w.put(db, b"k", b"parent")?;
    /// let mut child = w.nested()?;
    /// child.put(db, b"k", b"child")?;
    /// child.abort();
    /// assert_eq!(w.get(db, b"k")?, Some(&b"parent"[..]));
    /// # Ok::<(), sarsen::Error>(())
    /// ```
    pub fn abort(mut self) {
        let _ = self.end(false);
    }

    /// Ends this child: commit (unless it is broken) or roll back. Children
    /// of it that were leaked with `mem::forget` count as committed.
    fn end(&mut self, commit: bool) -> Result<()> {
        if self.done {
            return Ok(());
        }
        self.done = true;
        let t = &mut *self.txn;
        if t.w.nest.get(self.depth).map(|c| c.id) != Some(self.id) {
            // Not this child's writer (the transaction behind it was
            // swapped out): nothing of it to end.
            return if commit { Err(Error::BadTxn) } else { Ok(()) };
        }
        while t.w.nest.len() > self.depth + 1 {
            t.w.fold();
        }
        if commit && !t.broken {
            t.w.fold();
            return Ok(());
        }
        // The parent was not broken when the child began.
        let r = t.w.roll_back();
        t.broken = r.is_err();
        match r {
            Err(e) => Err(e),
            Ok(()) if commit => Err(Error::BadTxn),
            Ok(()) => Ok(()),
        }
    }
}

impl<'env> Deref for NestedTxn<'_, 'env> {
    type Target = RwTxn<'env>;
    fn deref(&self) -> &RwTxn<'env> {
        self.txn
    }
}

impl<'env> DerefMut for NestedTxn<'_, 'env> {
    fn deref_mut(&mut self) -> &mut RwTxn<'env> {
        self.txn
    }
}

impl Drop for NestedTxn<'_, '_> {
    fn drop(&mut self) {
        let _ = self.end(false);
    }
}
