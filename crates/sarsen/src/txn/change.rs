//! How a write transaction finds a database's tree record and its key
//! orders (in its own named-database state, else the catalog), and runs
//! one change on a tree: [`RwTxn::change`] looks them up once and
//! [`RwTxn::apply`] runs the change on the record in place, counting it
//! for write cursors and breaking the transaction on a failure that
//! leaves pages changed.

use super::catalog::{key_order_of, lookup, lookup_entry, resolve_order};
use super::write::RwTxn;
use crate::btree::{self, Tree};
use crate::db::Database;
use crate::error::{Error, Result};
use crate::order::{KeyOrder, Order};
use crate::page::DbRecord;
use crate::writer::{NamedDb, WriteStore};

impl<'env> RwTxn<'env> {
    /// The tree of `db` as this transaction sees it.
    pub(super) fn tree(&self, db: Database) -> Result<DbRecord> {
        let Some(name) = self.env.registry.name(db)? else {
            return Ok(self.w.main);
        };
        match self.w.dbs.get(db.dbi as usize).and_then(Option::as_ref) {
            Some(n) if n.exists => Ok(n.rec),
            Some(_) => Err(Error::DbNotFound { name: name.into() }),
            None => lookup(self.w.view(), &self.w.catalog, name),
        }
    }

    /// The order of `db`'s tree `rec`.
    #[inline]
    pub(super) fn order(&self, db: Database, rec: &DbRecord) -> Result<Order<'env>> {
        // Built-in orders without a call: the result stays in registers on
        // every write's path.
        if let Ok(Some(o)) = Order::builtin(rec.flags) {
            return Ok(o);
        }
        self.order_custom(db, rec)
    }

    /// [`order`](RwTxn::order) of a tree with a user comparator (or a
    /// damaged order code).
    #[inline(never)]
    fn order_custom(&self, db: Database, rec: &DbRecord) -> Result<Order<'env>> {
        let env = self.env;
        resolve_order(env, db, rec, || {
            if let Some(n) = self.w.dbs.get(db.dbi as usize).and_then(Option::as_ref) {
                return Ok(n.comparator.as_deref());
            }
            let name = env.registry.name(db)?.unwrap_or_default();
            let e = lookup_entry(self.w.view(), &self.w.catalog, name)?;
            Ok(e.and_then(|e| e.comparator))
        })
    }

    /// The user order of `db`'s duplicate values, if its record says it
    /// has one (`None` otherwise: built-in orders need no lookup).
    pub(crate) fn dup_order(&self, db: Database) -> Result<Option<Order<'env>>> {
        self.dup_order_of(db, &self.tree(db)?)
    }

    /// [`dup_order`](RwTxn::dup_order) of `db`'s tree `rec`, already read
    /// (reads and cursors have it: no second catalog lookup).
    #[inline]
    pub(super) fn dup_order_of(&self, db: Database, rec: &DbRecord) -> Result<Option<Order<'env>>> {
        if !btree::dup::custom_dups(rec.flags) {
            return Ok(None);
        }
        self.dup_order_custom(db)
    }

    /// [`dup_order_of`](RwTxn::dup_order_of) of a DUPSORT tree with a
    /// user duplicate comparator.
    #[inline(never)]
    fn dup_order_custom(&self, db: Database) -> Result<Option<Order<'env>>> {
        let env = self.env;
        let recorded = match self.w.dbs.get(db.dbi as usize).and_then(Option::as_ref) {
            Some(n) => n.dup_comparator.clone(),
            None => {
                let name = env.registry.name(db)?.unwrap_or_default();
                let e = lookup_entry(self.w.view(), &self.w.catalog, name)?;
                e.and_then(|e| e.dup_comparator).map(Into::into)
            }
        };
        env.registry.dup_order(db, recorded.as_deref()).map(Some)
    }

    /// The tree of `db` as this transaction sees it, and its key order.
    pub(super) fn tree_ord(&self, db: Database) -> Result<(DbRecord, Order<'env>)> {
        let rec = self.tree(db)?;
        Ok((rec, self.order(db, &rec)?))
    }

    /// The key order of `db` (see [`RoTxn::key_order`](crate::RoTxn::key_order)).
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
    pub fn key_order(&self, db: Database) -> Result<KeyOrder> {
        Ok(key_order_of(self.env, db, self.tree_ord(db)?.1))
    }

    /// The duplicate mode of `db` (see [`RoTxn::dup_mode`](crate::RoTxn::dup_mode)).
    ///
    /// # Errors
    ///
    /// [`Error::DbNotFound`](crate::Error::DbNotFound) if the named database does not exist in this
    /// transaction's view; [`Error::NoComparator`](crate::Error::NoComparator) or
    /// [`Error::DupModeMismatch`](crate::Error::DupModeMismatch) if a user comparator sorts its values
    /// and none, or one of another name, is attached to the handle;
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a handle this environment never
    /// handed out; [`Error::Corrupted`](crate::Error::Corrupted) if the catalog is damaged.
    pub fn dup_mode(&self, db: Database) -> Result<Option<crate::DupMode>> {
        self.dup_order(db)?;
        let c = self.env.registry.dup_comparator(db);
        Ok(crate::DupMode::of(self.tree(db)?.flags, c))
    }

    /// Loads the state of named `db` for writing. For the main database
    /// (`dbi` 0), only the settings count: its tree is `self.w.main`.
    pub(super) fn named(&mut self, db: Database) -> Result<&mut NamedDb> {
        let name = self.env.registry.name(db)?.unwrap_or_default();
        let i = db.dbi as usize;
        if self.w.dbs.len() <= i {
            self.w.dbs.resize(i + 1, None);
        }
        if self.w.dbs[i].is_none() {
            let st = match lookup_entry(self.w.view(), &self.w.catalog, name)? {
                Some(e) => NamedDb {
                    rec: e.rec,
                    exists: true,
                    dirty: false,
                    merge: e.merge.map(Into::into),
                    comparator: e.comparator.map(Into::into),
                    canary: e.canary,
                    dup_comparator: e.dup_comparator.map(Into::into),
                },
                None => NamedDb::absent(),
            };
            self.w.dbs[i] = Some(st);
        }
        self.w.dbs[i]
            .as_mut()
            .ok_or_else(|| Error::InvalidArgument("database state missing".into()))
    }

    /// Runs a change on `db`'s tree, given with its key order and the
    /// order of its duplicates (`None` unless it has a custom one), looked
    /// up once with the record; marks the transaction broken if it fails
    /// after changing pages.
    pub(super) fn change<T>(
        &mut self,
        db: Database,
        f: impl FnOnce(&mut Tree<'_, WriteStore>, Option<Order<'env>>) -> Result<T>,
    ) -> Result<T> {
        let rec = self.current(db)?;
        let ord = self.order(db, &rec)?;
        let dc = self.dup_order_of(db, &rec)?;
        self.apply(db, rec, ord, |t| f(t, dc))
    }

    /// The record of `db`'s tree, for a change: `BadTxn` once the
    /// transaction is broken, `DbNotFound` for a dropped database.
    #[inline]
    pub(super) fn current(&mut self, db: Database) -> Result<DbRecord> {
        if self.broken {
            return Err(Error::BadTxn);
        }
        if db.dbi == 0 {
            return Ok(self.w.main);
        }
        self.current_named(db)
    }

    /// [`current`](RwTxn::current) of a named database.
    #[inline(never)]
    fn current_named(&mut self, db: Database) -> Result<DbRecord> {
        let n = self.named(db)?;
        if !n.exists {
            let name = self.env.registry.name(db)?.unwrap_or_default();
            return Err(Error::DbNotFound { name: name.into() });
        }
        Ok(n.rec)
    }

    /// Runs `f` on `db`'s tree record where the transaction keeps it
    /// (`before`, its value, is [`current`](RwTxn::current) for `db`), and
    /// puts `before` back if `f` fails.
    ///
    /// In place, and with the result rebuilt from its parts rather than
    /// moved: a copy of the record back, or of the whole `Result` (as large
    /// as an `Error`), would load what the tree has just stored in smaller
    /// pieces, a stall on every write.
    pub(super) fn apply<T>(
        &mut self,
        db: Database,
        before: DbRecord,
        ord: Order<'env>,
        f: impl FnOnce(&mut Tree<'_, WriteStore>) -> Result<T>,
    ) -> Result<T> {
        // Broken until `f` returns: a user comparator or merge operator
        // that panics leaves the tree half changed, and a caller that
        // catches the unwind must not commit it (std's `Mutex` poisoning).
        // Callers come through `current`, which refuses a broken
        // transaction, so the success paths below restore `false`.
        debug_assert!(!self.broken, "apply on a broken transaction");
        self.broken = true;
        let w = &mut *self.w;
        // A write cursor's saved place holds only while this count does.
        w.tree.changes = w.tree.changes.wrapping_add(1);
        let r = if db.dbi == 0 {
            match f(&mut Tree::new(&mut w.store, &mut w.tree, &mut w.main, ord)) {
                Ok(v) => {
                    // A change of the record alone (its sequence) must
                    // commit too.
                    if !w.main_changed {
                        w.main_changed = w.main != before;
                    }
                    self.broken = false;
                    return Ok(v);
                }
                Err(e) => {
                    w.main = before;
                    e
                }
            }
        } else {
            let Some(Some(n)) = w.dbs.get_mut(db.dbi as usize) else {
                self.broken = false;
                return Err(Error::InvalidArgument("database state missing".into()));
            };
            match f(&mut Tree::new(&mut w.store, &mut w.tree, &mut n.rec, ord)) {
                Ok(v) => {
                    n.dirty |= n.rec != before;
                    self.broken = false;
                    return Ok(v);
                }
                Err(e) => {
                    n.rec = before;
                    e
                }
            }
        };
        self.broken = !r.leaves_txn_usable();
        Err(r)
    }
}
