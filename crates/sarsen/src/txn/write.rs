//! The write transaction: begin on the published snapshot, reads of its
//! own changes, writes through the B+tree, commit and abort.

use std::ops::RangeBounds;

use std::sync::MutexGuard;

use super::catalog::{check_key, check_sizes, estimate, get_in, list};
use super::{commit, dup};
use crate::cursor::{Cursor, Iter};
use crate::db::{Database, Stat};
use crate::error::{Error, Result};
use crate::order::Order;
use crate::page::DbRecord;
use crate::shared::Shared;
use crate::store::AnySource;
use crate::writer::{NamedDb, TxnState};

/// The write transaction (LMDB's `MDB_txn` without `MDB_RDONLY`). One at a
/// time per environment, across processes. Changes are visible to this
/// transaction at once and to others after [`commit`](RwTxn::commit);
/// dropping it without committing aborts.
///
/// A failed operation either leaves the transaction usable, with its
/// earlier writes, or breaks it, and the transaction then refuses writes
/// and its commit with [`Error::BadTxn`](crate::Error::BadTxn) and can only be aborted (LMDB's
/// `MDB_BAD_TXN` rule): which one is [`Error::leaves_txn_usable`](crate::Error::leaves_txn_usable) of the
/// error. Most calls that fail change nothing; the few that are several
/// writes in one call say in their `# Errors` what a failure leaves done.
///
/// A value read through it borrows it, so it cannot be held across a write:
///
/// ```compile_fail
/// # let dir = tempfile::tempdir().unwrap();
/// let env = unsafe { sarsen::Env::open(dir.path()) }.unwrap();
/// let db = env.main_db();
/// let mut w = env.write_txn().unwrap();
/// let v = w.get(db, b"k").unwrap();
/// w.put(db, b"k2", b"v").unwrap(); // error: `w` is borrowed by `v`
/// drop(v);
/// ```
pub struct RwTxn<'env> {
    pub(super) env: &'env Shared,
    pub(super) w: MutexGuard<'env, TxnState>,
    /// An operation failed after changing pages: the transaction can only abort.
    pub(super) broken: bool,
    pub(super) done: bool,
}

impl<'env> RwTxn<'env> {
    pub(crate) fn begin(env: &'env Shared) -> Result<RwTxn<'env>> {
        if env.read_only {
            return Err(Error::ReadOnly);
        }
        env.check_fork()?;
        let w = env.lock_writer_mutex();
        let head = env.group.enter(env)?;
        // From here every exit, an error or a panic in the slow-reader
        // handler included, drops `txn`, which releases the writer lock.
        let mut txn = RwTxn {
            env,
            w,
            broken: false,
            done: false,
        };
        txn.start(head)?;
        Ok(txn)
    }

    /// As [`begin`](RwTxn::begin), without waiting: `Ok(None)` when another
    /// thread holds the writer mutex or another environment the writer lock
    /// (for work that may be skipped and must never wait on a writer that
    /// may be waiting for the caller: the automatic compaction).
    pub(crate) fn try_begin(env: &'env Shared) -> Result<Option<RwTxn<'env>>> {
        if env.read_only {
            return Err(Error::ReadOnly);
        }
        env.check_fork()?;
        let Some(w) = env.try_lock_writer_mutex() else {
            return Ok(None);
        };
        let Some(head) = env.group.try_enter(env)? else {
            return Ok(None);
        };
        let mut txn = RwTxn {
            env,
            w,
            broken: false,
            done: false,
        };
        txn.start(head)?;
        Ok(Some(txn))
    }

    /// Sets up the writer for a new transaction: on the head of this
    /// environment's group-commit chain if it has one (commits written but
    /// not yet synced, `group.rs`), else on the published snapshot
    /// (repaired first if its writer died publishing it, and checked
    /// against the current meta page).
    pub(super) fn start(&mut self, head: Option<super::group::Pending>) -> Result<()> {
        let env = self.env;
        env.check_synced()?;
        let (p, ws, slot) = match head {
            Some(h) => (h.p, env.lock.writer_shared(), h.slot),
            None => {
                let (p, ws) = env.writer_view()?;
                env.erase_orphan_metas(&p, &ws)?;
                (p, ws, ws.meta_current)
            }
        };
        // Another process may have cut the file since this one last wrote.
        env.map.refresh_after_shrinks(env.lock.shrinks())?;
        let w = &mut self.w;
        w.reset();
        let last = p.txnid;
        let next = p.next_pgno as u32;
        w.store
            .pager
            .begin(last + 1, next, env.upper_pgno, env.growth_pgno);
        w.store.gc = DbRecord::from_words(&p.gc);
        w.store.inline = match w.last_meta {
            Some((lp, ls, l)) if ls == slot && lp == p => l,
            _ => env.inline_gc_of(slot, &p)?,
        };
        w.catalog = DbRecord::from_words(&p.catalog);
        w.main = DbRecord::from_words(&p.main);
        // After the trees are set: the slow-reader handler reads the GC.
        let oldest = super::slow::oldest_after_handler(env, w, last)?;
        let mut bound = oldest.map_or(last, |o| o.min(last));
        if env.durability != crate::options::Durability::NoSync {
            // Keep the last durable commit intact until a newer one is.
            bound = bound.min(ws.durable_txnid);
        }
        w.store.gc_bound = bound;
        // The automatic compaction asked for this transaction's commit:
        // its first load takes every reusable record, so that its own
        // allocations too take the lowest free pages (`txn/compact.rs`).
        w.store.load_all_first = super::compact::due_for(env, bound);
        Ok(())
    }

    /// Txnid this transaction will commit as.
    pub fn txnid(&self) -> u64 {
        self.w.txnid()
    }

    pub(super) fn src(&self) -> AnySource<'_> {
        AnySource::Write(self.w.view())
    }

    /// The value of `key` in `db`, including this transaction's changes;
    /// in a DUPSORT database, the key's first value. A key of the wrong
    /// length for an integer order, or longer than any key can be, finds
    /// nothing.
    ///
    /// # Errors
    ///
    /// [`Error::DbNotFound`](crate::Error::DbNotFound) if the named database `db` does not exist in
    /// this transaction's view (never created, or dropped);
    /// [`Error::NoComparator`](crate::Error::NoComparator) or [`Error::KeyOrderMismatch`](crate::Error::KeyOrderMismatch) if a user
    /// comparator orders its keys and none, or one of another name, is
    /// attached to the handle; [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a handle this
    /// environment never handed out; [`Error::Corrupted`](crate::Error::Corrupted) if a page read is
    /// damaged. Reads work in a broken transaction too (no
    /// [`Error::BadTxn`](crate::Error::BadTxn)).
    /// In a DUPSORT database whose values a user comparator sorts, also
    /// [`Error::NoComparator`](crate::Error::NoComparator) or [`Error::DupModeMismatch`](crate::Error::DupModeMismatch) for that
    /// comparator.
    pub fn get(&self, db: Database, key: &[u8]) -> Result<Option<&[u8]>> {
        let (rec, ord) = self.tree_ord(db)?;
        if !ord.fits(key) {
            return Ok(None);
        }
        let dc = self.dup_order_of(db, &rec)?;
        get_in(self.w.view(), &rec, ord, dc, key)
    }

    /// A write cursor over `db` (LMDB's cursor in a write transaction):
    /// it moves as a [`Cursor`] and also puts, replaces, deletes and
    /// merges where it stands. It borrows the transaction mutably.
    ///
    /// # Errors
    ///
    /// [`Error::DbNotFound`](crate::Error::DbNotFound) if the named database does not exist in this
    /// transaction's view; [`Error::NoComparator`](crate::Error::NoComparator) or
    /// [`Error::DupModeMismatch`](crate::Error::DupModeMismatch) if a user comparator sorts a DUPSORT
    /// database's values and none, or one of another name, is attached;
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a handle this environment never
    /// handed out; [`Error::Corrupted`](crate::Error::Corrupted) if the catalog is damaged. A
    /// missing key comparator shows at the cursor's first move.
    pub fn cursor_mut(&mut self, db: Database) -> Result<crate::RwCursor<'_, 'env>> {
        crate::RwCursor::new(self, db)
    }

    /// A cursor over `db`, seeing this transaction's changes, unpositioned.
    ///
    /// # Errors
    ///
    /// As [`get`](RwTxn::get); a damaged page is met by the cursor's moves.
    pub fn cursor(&self, db: Database) -> Result<Cursor<'_>> {
        let (rec, ord) = self.tree_ord(db)?;
        Cursor::new(self.src(), rec, ord, self.dup_order_of(db, &rec)?)
    }

    /// All entries of `db` in key order.
    ///
    /// # Errors
    ///
    /// As [`get`](RwTxn::get); a damaged page met while iterating is the
    /// iterator's last item, an `Err`.
    pub fn iter(&self, db: Database) -> Result<Iter<'_>> {
        self.range(db, ..)
    }

    /// The entries of `db` in `range`, in key order (see [`RoTxn::range`](crate::RoTxn::range)).
    ///
    /// # Errors
    ///
    /// As [`iter`](RwTxn::iter).
    pub fn range<'k, R: RangeBounds<&'k [u8]>>(&self, db: Database, range: R) -> Result<Iter<'_>> {
        let (rec, ord) = self.tree_ord(db)?;
        let dc = self.dup_order_of(db, &rec)?;
        Iter::new(self.src(), rec, ord, dc, range)
    }

    /// Statistics of `db` as this transaction sees it, from its tree
    /// record (no page of the tree is read).
    ///
    /// # Errors
    ///
    /// [`Error::DbNotFound`](crate::Error::DbNotFound) if the named database does not exist in this
    /// transaction's view; [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a handle this
    /// environment never handed out; [`Error::Corrupted`](crate::Error::Corrupted) if the catalog is
    /// damaged. No comparator is needed.
    pub fn stat(&self, db: Database) -> Result<Stat> {
        Ok(Stat::from_record(&self.tree(db)?, self.env.page_size))
    }

    /// [`RoTxn::estimate_range`](crate::RoTxn::estimate_range) on this transaction's view.
    ///
    /// # Errors
    ///
    /// [`Error::DbNotFound`](crate::Error::DbNotFound) if the named database `db` does not exist in
    /// this transaction's view (never created, or dropped);
    /// [`Error::NoComparator`](crate::Error::NoComparator) or [`Error::KeyOrderMismatch`](crate::Error::KeyOrderMismatch) if a user
    /// comparator orders its keys and none, or one of another name, is
    /// attached to the handle; [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a handle this
    /// environment never handed out; [`Error::Corrupted`](crate::Error::Corrupted) if a page read is
    /// damaged. Reads work in a broken transaction too (no
    /// [`Error::BadTxn`](crate::Error::BadTxn)).
    pub fn estimate_range(
        &self,
        db: Database,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> Result<u64> {
        let (rec, ord) = self.tree_ord(db)?;
        estimate(self.w.view(), &rec, ord, lo, hi)
    }

    /// Names of the named databases in this transaction's view, sorted
    /// bytewise.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`](crate::Error::Corrupted) if a catalog page is damaged.
    pub fn list_dbs(&self) -> Result<Vec<String>> {
        list(self.src(), self.w.catalog)
    }
}

impl<'env> RwTxn<'env> {
    /// Merges `operand` into `key` of `db` with the database's merge
    /// operator (RocksDB's `Merge`), in one descent of the tree: the
    /// operator gets the stored value (or `None`) and the operand, and its
    /// result replaces the value at once, visible to this transaction's
    /// reads and atomic with its commit. A result equal to the stored value
    /// writes nothing.
    ///
    /// Merge is defined on databases with one value per key: on a DUPSORT
    /// database it is [`Error::WrongDupMode`](crate::Error::WrongDupMode) (a merge there could mean a
    /// new value or a change of one, and neither is what RocksDB's merge
    /// means).
    ///
    /// # Errors
    ///
    /// Each of these leaves the transaction as it was:
    /// [`Error::NoMergeOperator`](crate::Error::NoMergeOperator) if none is attached to the handle;
    /// [`Error::MergeOperatorMismatch`](crate::Error::MergeOperatorMismatch) if another process recorded another
    /// operator for the database since it was opened; [`Error::Merge`](crate::Error::Merge) if
    /// the operator refuses; [`Error::WrongDupMode`](crate::Error::WrongDupMode) on a DUPSORT database;
    /// [`Error::KeyTooLarge`](crate::Error::KeyTooLarge); [`Error::BadKeySize`](crate::Error::BadKeySize) for a key of the wrong
    /// length for an integer order; [`Error::ValueTooLarge`](crate::Error::ValueTooLarge) for a result
    /// over [`Env::max_value_size`](crate::Env::max_value_size); [`Error::UpperBoundReached`](crate::Error::UpperBoundReached);
    /// [`Error::DbNotFound`](crate::Error::DbNotFound); [`Error::NoComparator`](crate::Error::NoComparator) or
    /// [`Error::KeyOrderMismatch`](crate::Error::KeyOrderMismatch) for a user comparator not attached. And:
    /// [`Error::BadTxn`](crate::Error::BadTxn) once an earlier failure broke the transaction;
    /// [`Error::Corrupted`](crate::Error::Corrupted) for a damaged page on the path, and in
    /// write-map mode [`Error::DiskFull`](crate::Error::DiskFull) or [`Error::Io`](crate::Error::Io) when the file
    /// grows: these three break the transaction (its later writes and its
    /// commit give `BadTxn`). Every other error leaves the transaction as
    /// it was ([`Error::leaves_txn_usable`](crate::Error::leaves_txn_usable)).
    ///
    /// ```
    /// use sarsen::{merge::Uint64Add, DbOptions};
    /// # fn main() -> Result<(), sarsen::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let env = unsafe { sarsen::Env::open(dir.path())? };
    /// let mut w = env.write_txn()?;
    /// let db = w.open_db_with(None, &DbOptions::new().merge_operator(Uint64Add))?.unwrap();
    /// w.merge(db, b"visits", &2u64.to_le_bytes())?;
    /// w.merge(db, b"visits", &3u64.to_le_bytes())?;
    /// assert_eq!(w.get(db, b"visits")?, Some(&5u64.to_le_bytes()[..]));
    /// // A 4-byte operand is refused, and the counter stays at 5.
    /// assert!(matches!(w.merge(db, b"visits", b"four"), Err(sarsen::Error::Merge { .. })));
    /// assert_eq!(w.get(db, b"visits")?, Some(&5u64.to_le_bytes()[..]));
    /// w.commit()?;
    /// # Ok(())
    /// # }
    /// ```
    #[inline]
    pub fn merge(&mut self, db: Database, key: &[u8], operand: &[u8]) -> Result<()> {
        self.merge_many(db, key, &[operand])
    }

    /// Merges `operands` into `key`, in order, with one descent and one
    /// call of the operator: the same result as merging them one by one.
    ///
    /// # Errors
    ///
    /// As [`merge`](RwTxn::merge), and [`Error::InvalidArgument`](crate::Error::InvalidArgument) for an
    /// empty `operands` (the transaction stays as it was).
    pub fn merge_many(&mut self, db: Database, key: &[u8], operands: &[&[u8]]) -> Result<()> {
        if self.broken {
            return Err(Error::BadTxn);
        }
        let max = self.env.layout.max_key;
        if key.len() > max {
            return Err(Error::KeyTooLarge {
                len: key.len(),
                max,
            });
        }
        if operands.is_empty() {
            return Err(Error::InvalidArgument("merge without operands".into()));
        }
        let env = self.env;
        let Some(op) = env.registry.operator(db) else {
            return Err(Error::NoMergeOperator {
                db: env.registry.name(db)?.unwrap_or_default().into(),
            });
        };
        let must_record = self.check_recorded(db, op.as_ref())?;
        let mut out = std::mem::take(&mut self.w.merge_buf);
        let r = self.change(db, |t, _| {
            dup::refuse_dups(t.rec, "merge")?;
            check_key(t.ord, key)?;
            t.merge(key, &mut out, |old, out| {
                op.full_merge(key, old, operands, out)
                    .map_err(|source| Error::Merge {
                        operator: op.name().into(),
                        source,
                    })
            })
        });
        self.w.merge_buf = out;
        r?;
        if must_record {
            self.record_operator(db, op.name())?;
        }
        Ok(())
    }

    pub(super) fn put_catalog(&mut self, name: &str, rec: &DbRecord) -> Result<()> {
        if self.broken {
            return Err(Error::BadTxn);
        }
        let mut cat = self.w.catalog;
        let r = self
            .w
            .tree(&mut cat, Order::Bytewise)
            .put(name.as_bytes(), &rec.encode());
        match &r {
            Ok(()) => self.w.catalog = cat,
            Err(e) if !e.leaves_txn_usable() => self.broken = true,
            Err(_) => {}
        }
        r
    }

    /// Inserts `key` with `value` into `db`, replacing any value it had.
    /// In a DUPSORT database it adds `value` to the key's values instead
    /// (LMDB's `mdb_put` without flags), and a pair already there is left
    /// as it is; [`put_no_dup_data`](RwTxn::put_no_dup_data) also says
    /// whether it added.
    ///
    /// # Errors
    ///
    /// Each of these leaves the transaction as it was:
    /// [`Error::KeyTooLarge`](crate::Error::KeyTooLarge) (over [`Env::max_key_size`](crate::Env::max_key_size); in a DUPSORT
    /// database over 52 bytes less); [`Error::ValueTooLarge`](crate::Error::ValueTooLarge) (over
    /// [`Env::max_value_size`](crate::Env::max_value_size); in a DUPSORT database over what fits with
    /// the key in one leaf node, at most `max_key_size`);
    /// [`Error::BadKeySize`](crate::Error::BadKeySize) (a database of integer keys);
    /// [`Error::BadValueSize`](crate::Error::BadValueSize) (a `DUPFIXED` database or integer
    /// duplicates); [`Error::UpperBoundReached`](crate::Error::UpperBoundReached); [`Error::DbNotFound`](crate::Error::DbNotFound);
    /// [`Error::NoComparator`](crate::Error::NoComparator), [`Error::KeyOrderMismatch`](crate::Error::KeyOrderMismatch) or
    /// [`Error::DupModeMismatch`](crate::Error::DupModeMismatch) for a user comparator not attached;
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a handle this environment never
    /// handed out. And:
    /// [`Error::BadTxn`](crate::Error::BadTxn) once an earlier failure broke the transaction;
    /// [`Error::Corrupted`](crate::Error::Corrupted) for a damaged page on the path, and in
    /// write-map mode [`Error::DiskFull`](crate::Error::DiskFull) or [`Error::Io`](crate::Error::Io) when the file
    /// grows: these three break the transaction (its later writes and its
    /// commit give `BadTxn`). Every other error leaves the transaction as
    /// it was ([`Error::leaves_txn_usable`](crate::Error::leaves_txn_usable)).
    pub fn put(&mut self, db: Database, key: &[u8], value: &[u8]) -> Result<()> {
        check_sizes(self.env, key, value)?;
        self.change(db, |t, dc| {
            check_key(t.ord, key)?;
            if let Some(d) = dup::dups_of(t.rec, dc)? {
                return dup::put(t, d, key, value).map(drop);
            }
            t.put(key, value)
        })
    }

    /// Deletes `key` from `db`; returns whether it was there. In a DUPSORT
    /// database the key goes with all its values
    /// ([`delete_dup`](RwTxn::delete_dup) removes one pair). A key longer
    /// than any key can be, or of the wrong length for an integer order,
    /// is not there.
    ///
    /// # Errors
    ///
    /// Each of these leaves the transaction as it was:
    /// [`Error::DbNotFound`](crate::Error::DbNotFound); [`Error::NoComparator`](crate::Error::NoComparator),
    /// [`Error::KeyOrderMismatch`](crate::Error::KeyOrderMismatch) or [`Error::DupModeMismatch`](crate::Error::DupModeMismatch) for a
    /// user comparator not attached; [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a
    /// handle this environment never handed out;
    /// [`Error::UpperBoundReached`](crate::Error::UpperBoundReached) (a delete writes new copies of the
    /// pages on its path, and reserves them first). And:
    /// [`Error::BadTxn`](crate::Error::BadTxn) once an earlier failure broke the transaction;
    /// [`Error::Corrupted`](crate::Error::Corrupted) for a damaged page on the path, and in
    /// write-map mode [`Error::DiskFull`](crate::Error::DiskFull) or [`Error::Io`](crate::Error::Io) when the file
    /// grows: these three break the transaction (its later writes and its
    /// commit give `BadTxn`). Every other error leaves the transaction as
    /// it was ([`Error::leaves_txn_usable`](crate::Error::leaves_txn_usable)).
    pub fn delete(&mut self, db: Database, key: &[u8]) -> Result<bool> {
        if key.len() > self.env.layout.max_key {
            // No key that long is stored, but the errors of any other
            // delete still apply.
            if self.broken {
                return Err(Error::BadTxn);
            }
            return self.tree(db).map(|_| false);
        }
        self.change(db, |t, dc| {
            if !t.ord.fits(key) {
                return Ok(false);
            }
            if let Some(d) = dup::dups_of(t.rec, dc)? {
                return Ok(t.delete_all(d, key)? > 0);
            }
            t.delete(key)
        })
    }

    /// Removes every entry of `db` (LMDB's `mdb_drop(.., 0)`), keeping its
    /// settings and sequence. Its pages are freed without being copied:
    /// each branch and leaf page is read, to find the overflow runs and
    /// duplicate sub-trees below it, but no overflow page is.
    ///
    /// # Errors
    ///
    /// [`Error::DbNotFound`](crate::Error::DbNotFound) and [`Error::InvalidArgument`](crate::Error::InvalidArgument) (an unknown
    /// handle) leave the transaction as it was; no comparator is needed.
    /// [`Error::BadTxn`](crate::Error::BadTxn) once an earlier failure broke the transaction;
    /// [`Error::Corrupted`](crate::Error::Corrupted) for a damaged page of the tree, which breaks
    /// it.
    pub fn clear_db(&mut self, db: Database) -> Result<()> {
        self.change(db, |t, _| t.free_tree())
    }

    /// Deletes the named database `db` and its entries (LMDB's
    /// `mdb_drop(.., 1)`); later use of the handle gives
    /// [`Error::DbNotFound`](crate::Error::DbNotFound) until it is created again. On the main
    /// database this is [`clear_db`](RwTxn::clear_db).
    ///
    /// # Errors
    ///
    /// [`Error::BadTxn`](crate::Error::BadTxn) once an earlier failure broke
    /// the transaction, [`Error::DbNotFound`](crate::Error::DbNotFound) for
    /// a dropped database: nothing changes. Removing the name from the
    /// catalog comes first and can give
    /// [`Error::UpperBoundReached`](crate::Error::UpperBoundReached), which
    /// leaves the transaction as it was, or [`Error::Corrupted`](crate::Error::Corrupted)
    /// and in write-map mode [`Error::DiskFull`](crate::Error::DiskFull) or
    /// [`Error::Io`](crate::Error::Io), which break it. Freeing the tree's
    /// pages then takes no page; only a damaged tree fails there
    /// ([`Error::Corrupted`](crate::Error::Corrupted)), and breaks the
    /// transaction, whose name is already gone.
    pub fn drop_db(&mut self, db: Database) -> Result<()> {
        let Some(name) = self.env.registry.name(db)? else {
            return self.clear_db(db);
        };
        self.current(db)?;
        let mut cat = self.w.catalog;
        let r = self
            .w
            .tree(&mut cat, Order::Bytewise)
            .delete(name.as_bytes());
        match &r {
            Ok(_) => self.w.catalog = cat,
            Err(e) if !e.leaves_txn_usable() => self.broken = true,
            Err(_) => {}
        }
        r?;
        if let Err(e) = self.clear_db(db) {
            self.broken = true;
            return Err(e);
        }
        *self.named(db)? = NamedDb::absent();
        Ok(())
    }

    /// Commits: after it returns, new read transactions see the changes,
    /// and (in [`Durability::Durable`](crate::Durability::Durable) mode)
    /// they survive a crash.
    ///
    /// A transaction that changed nothing writes nothing.
    ///
    /// # Errors
    ///
    /// [`Error::BadTxn`](crate::Error::BadTxn) if an earlier operation broke the transaction;
    /// [`Error::UpperBoundReached`](crate::Error::UpperBoundReached) if the catalog entries or the list of
    /// freed pages need pages past the upper bound; [`Error::DiskFull`](crate::Error::DiskFull) or
    /// [`Error::Io`](crate::Error::Io) from growing, writing or syncing the file (after a
    /// failed `fdatasync` every later write of the environment gives
    /// [`Error::SyncFailed`](crate::Error::SyncFailed) until it is opened again); [`Error::Corrupted`](crate::Error::Corrupted)
    /// if a page the commit updates is damaged; [`Error::Forked`](crate::Error::Forked) in a
    /// process forked after the transaction began (it is the parent's; the
    /// child drops it without touching the writer lock). Whatever the
    /// error, the transaction has ended: nothing of it is visible or
    /// durable, and the last commit stays as it was.
    pub fn commit(mut self) -> Result<()> {
        // A transaction begun before `fork()` is the parent's: from the
        // child it would write and publish beside it.
        self.env.check_fork()?;
        if self.broken {
            return Err(Error::BadTxn);
        }
        // Only a child leaked with `mem::forget` leaves a checkpoint: its
        // changes stay, as if it had committed.
        self.w.drop_checkpoints();
        let freed = self.w.pager().freed.len() as u64;
        let txnid = self.w.txnid();
        let r = commit::commit(self.env, &mut self.w);
        self.finish();
        // Let the next writer of this environment in (dropping `self`
        // releases the writer mutex) before waiting for a sync or giving
        // space back, which takes the writer again.
        let env = self.env;
        drop(self);
        if let commit::Outcome::Pending(txnid) = r? {
            env.group.wait_durable(env, txnid, true)?;
        }
        crate::env::after_commit(env, freed, txnid);
        Ok(())
    }

    /// Sets how this transaction's commit is made durable, instead of the
    /// environment's [`Durability`](crate::Durability) (heed's run-time
    /// switch of LMDB's `MDB_NOSYNC` with `mdb_env_set_flags`, redb's
    /// `WriteTransaction::set_durability`): a bulk load can commit
    /// `SafeNoSync` in a `Durable` environment, and a `NoSync` environment
    /// can make one commit durable. A `Durable` commit after unsynced ones
    /// syncs twice (data, then meta), as [`Env::sync`](crate::Env::sync)
    /// would.
    ///
    /// The environment's crash guarantee holds whatever the transactions
    /// ask: outside a `NoSync` environment, `NoSync` commits as
    /// `SafeNoSync` (unsynced, and rolled back after a system crash, never
    /// corrupt). Auto-sync thresholds (`EnvOptions::sync_bytes`,
    /// `sync_period`) apply to the mode the commit is made in.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let env = unsafe { sarsen::Env::open(dir.path()) }.unwrap();
    /// let db = env.main_db();
    /// let mut w = env.write_txn()?;
    /// w.set_durability(sarsen::Durability::SafeNoSync);
    /// w.put(db, b"k", b"v")?;
    /// let txnid = w.txnid();
    /// w.commit()?;
    /// assert!(env.info()?.durable_txnid < txnid);
    /// env.sync()?;
    /// assert_eq!(env.info()?.durable_txnid, txnid);
    /// # Ok::<(), sarsen::Error>(())
    /// ```
    pub fn set_durability(&mut self, durability: crate::Durability) {
        self.w.durability = Some(durability);
    }

    /// Discards every change (also done when the transaction is dropped).
    pub fn abort(mut self) {
        self.finish();
    }

    pub(super) fn finish(&mut self) {
        if !self.done {
            self.done = true;
            self.w.reset();
            // Releases the writer lock unless commits of the group-commit
            // chain wait for their sync. In a forked child the lock is the
            // parent's, and so is the group state (its mutex may have been
            // held by a thread that does not exist here): touch neither.
            if !self.env.forked() {
                self.env.group.leave(self.env);
            }
        }
    }
}

impl Drop for RwTxn<'_> {
    fn drop(&mut self) {
        self.finish();
    }
}
