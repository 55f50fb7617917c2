//! Write operations of DUPSORT databases (LMDB's `MDB_DUPSORT`): adding
//! and removing single pairs, `MDB_NODUPDATA` and `MDB_APPENDDUP`. `put`,
//! `get` and `delete` dispatch here from `txn/mod.rs` when the tree record
//! says the database has duplicates.

use super::RwTxn;
use crate::btree::dup::Dups;
use crate::btree::Tree;
use crate::db::Database;
use crate::error::{Error, Result};
use crate::order::Order;
use crate::page::node::LEAF_HDR;
use crate::page::record::RECORD_LEN;
use crate::page::{DbRecord, Layout};
use crate::store::PageStore;
use crate::writer::WriteStore;

/// The duplicate mode of the tree `rec` (`None`: unique keys); `custom`
/// is the user order of its values when its record says it has one
/// ([`RwTxn::dup_order`] resolves it).
pub(crate) fn dups_of<'a>(rec: &DbRecord, custom: Option<Order<'a>>) -> Result<Option<Dups<'a>>> {
    Dups::of(rec.flags, custom).map_err(|what| Error::corrupted(u64::from(rec.root), what))
}

/// Longest key of a DUPSORT database, bytes: its node must be able to hold
/// a 64-byte sub-tree record (74 bytes less than the plain maximum's node
/// with an overflow reference allows).
pub(crate) fn max_dup_key(l: &Layout) -> usize {
    l.node_max - 2 - LEAF_HDR - RECORD_LEN
}

/// Checks a pair for a DUPSORT database: the key as [`max_dup_key`], the
/// value at most a key long (it may become a sub-tree key) and inline with
/// its key, and of the integer size of an integer duplicate order.
pub(crate) fn check_pair(l: &Layout, d: Dups<'_>, key: &[u8], val: &[u8]) -> Result<()> {
    let kmax = max_dup_key(l);
    if key.len() > kmax {
        return Err(Error::KeyTooLarge {
            len: key.len(),
            max: kmax,
        });
    }
    let vmax = l.max_key.min(l.node_max - 2 - LEAF_HDR - key.len());
    if val.len() > vmax {
        return Err(Error::ValueTooLarge {
            len: val.len(),
            max: vmax,
        });
    }
    match d.ord.key_size() {
        Some(n) if val.len() != n => Err(Error::BadValueSize {
            len: val.len(),
            expected: n,
        }),
        _ => Ok(()),
    }
}

/// `put` into a DUPSORT tree: checks the pair, adds it; `false` if it was
/// there.
pub(crate) fn put(
    t: &mut Tree<'_, WriteStore>,
    d: Dups<'_>,
    key: &[u8],
    val: &[u8],
) -> Result<bool> {
    check_pair(&t.store.layout(), d, key, val)?;
    t.put_dup(d, key, val)
}

impl RwTxn<'_> {
    /// Adds the pair `key`/`value` to the DUPSORT database `db` unless it
    /// is there (LMDB's `MDB_NODUPDATA`, which gives `MDB_KEYEXIST`):
    /// returns whether it was added. A plain [`put`](RwTxn::put) does the
    /// same but does not say.
    ///
    /// # Errors
    ///
    /// [`Error::WrongDupMode`] without DUPSORT; those of
    /// [`put`](RwTxn::put) in a DUPSORT database ([`Error::BadValueSize`]
    /// among them).
    ///
    /// ```
    /// use sarsen::{DbOptions, KeyOrder};
    /// # fn main() -> Result<(), sarsen::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let env = unsafe { sarsen::Env::open(dir.path())? };
    /// let mut w = env.write_txn()?;
    /// let db = w.create_db_with(Some("m"), &DbOptions::new().dup_sort(KeyOrder::Bytewise))?;
    /// assert!(w.put_no_dup_data(db, b"k", b"1")?);
    /// assert!(w.put_no_dup_data(db, b"k", b"2")?);
    /// assert!(!w.put_no_dup_data(db, b"k", b"1")?);
    /// assert_eq!(w.stat(db)?.entries, 2);
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_no_dup_data(&mut self, db: Database, key: &[u8], value: &[u8]) -> Result<bool> {
        self.change(db, |t, dc| {
            let d = need_dups(t.rec, dc, "put_no_dup_data")?;
            super::catalog::check_key(t.ord, key)?;
            put(t, d, key, value)
        })
    }

    /// Removes the one pair `key`/`value` from the DUPSORT database `db`
    /// (LMDB's `mdb_del` with a value); returns whether it was there. The
    /// key goes when its last value does.
    ///
    /// # Errors
    ///
    /// [`Error::WrongDupMode`] without DUPSORT (LMDB ignores the value
    /// there and deletes the key; Sarsen refuses rather than guess); those
    /// of [`delete`](RwTxn::delete).
    ///
    /// ```
    /// use sarsen::{DbOptions, KeyOrder};
    /// # fn main() -> Result<(), sarsen::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let env = unsafe { sarsen::Env::open(dir.path())? };
    /// let mut w = env.write_txn()?;
    /// let db = w.create_db_with(Some("m"), &DbOptions::new().dup_sort(KeyOrder::Bytewise))?;
    /// w.put(db, b"k", b"1")?;
    /// w.put(db, b"k", b"2")?;
    /// assert!(w.delete_dup(db, b"k", b"1")?);
    /// assert!(!w.delete_dup(db, b"k", b"1")?);
    /// assert_eq!(w.get(db, b"k")?, Some(&b"2"[..]));
    /// # Ok(())
    /// # }
    /// ```
    pub fn delete_dup(&mut self, db: Database, key: &[u8], value: &[u8]) -> Result<bool> {
        self.change(db, |t, dc| {
            let d = need_dups(t.rec, dc, "delete_dup")?;
            if !t.ord.fits(key) || key.len() > max_dup_key(&t.store.layout()) {
                return Ok(false);
            }
            t.delete_dup(d, key, value)
        })
    }

    /// Adds `key`/`value` after the last pair of the DUPSORT database `db`
    /// (LMDB's `MDB_APPENDDUP`, for loading sorted pairs): `key` must be
    /// greater than the last key, or equal to it with `value` greater than
    /// its last value. LMDB checks less: it takes any key whose last value
    /// sorts before `value`; Sarsen refuses a pair that is not the
    /// database's new last one, which is what a bulk load of sorted pairs
    /// needs checked.
    ///
    /// # Errors
    ///
    /// [`Error::KeyNotGreater`] otherwise, leaving the transaction as it
    /// was; [`Error::WrongDupMode`] without DUPSORT; those of
    /// [`get`](RwTxn::get) for reading the last pair, and of
    /// [`put`](RwTxn::put).
    pub fn append_dup(&mut self, db: Database, key: &[u8], value: &[u8]) -> Result<()> {
        let (rec, ord) = self.tree_ord(db)?;
        let d = need_dups(&rec, self.dup_order(db)?, "append_dup")?;
        let after = {
            let mut c = self.cursor(db)?;
            match c.last()? {
                None => true,
                Some((k, v)) => match ord.cmp(k, key) {
                    std::cmp::Ordering::Less => true,
                    std::cmp::Ordering::Equal => d.ord.lt(v, value),
                    std::cmp::Ordering::Greater => false,
                },
            }
        };
        if !after {
            return Err(Error::KeyNotGreater);
        }
        self.put(db, key, value)
    }
}

/// The duplicate mode of `rec`; `WrongDupMode` for `op` without one.
pub(crate) fn need_dups<'a>(
    rec: &DbRecord,
    custom: Option<Order<'a>>,
    op: &'static str,
) -> Result<Dups<'a>> {
    dups_of(rec, custom)?.ok_or(Error::WrongDupMode {
        op,
        needs: "with duplicates (DUPSORT)",
    })
}

/// `WrongDupMode` for `op` on a DUPSORT tree.
pub(crate) fn refuse_dups(rec: &DbRecord, op: &'static str) -> Result<()> {
    if rec.flags & crate::page::record::DUPSORT != 0 {
        return Err(Error::WrongDupMode {
            op,
            needs: "without duplicates (not DUPSORT)",
        });
    }
    Ok(())
}
