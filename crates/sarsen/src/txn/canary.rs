//! The canary (libmdbx's `MDBX_canary`, `mdbx_canary_put`/`get`): three
//! user words kept with the database and committed with the transaction
//! that sets them, plus the txnid of that transaction. Applications use it
//! to mark how far they have processed something (a replication position,
//! a log sequence number) atomically with the data.
//!
//! It is stored as a setting of the main database's catalog entry (tag 3),
//! so a reader sees the canary of its own snapshot, as it sees its data.

use super::catalog::lookup_entry;
use super::{RoTxn, RwTxn};
use crate::db::Database;
use crate::error::{Error, Result};

/// The canary: user words `x`, `y`, `z`, and `v`, the txnid of the
/// transaction that last set them (0 if none has). libmdbx's
/// `MDBX_canary`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Canary {
    /// User word.
    pub x: u64,
    /// User word.
    pub y: u64,
    /// User word.
    pub z: u64,
    /// Txnid of the transaction that last set the canary (set by Sarsen).
    pub v: u64,
}

impl Canary {
    fn of(words: Option<[u64; 4]>) -> Canary {
        let [x, y, z, v] = words.unwrap_or_default();
        Canary { x, y, z, v }
    }
}

impl RoTxn<'_> {
    /// The canary as of this snapshot (`mdbx_canary_get`).
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`] if the catalog is damaged.
    pub fn canary(&self) -> Result<Canary> {
        let e = lookup_entry(self.src, &self.catalog, "")?;
        Ok(Canary::of(e.and_then(|e| e.canary)))
    }
}

impl RwTxn<'_> {
    /// The canary as this transaction sees it, a change by
    /// [`put_canary`](RwTxn::put_canary) included.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`] if the catalog is damaged.
    pub fn canary(&self) -> Result<Canary> {
        if let Some(Some(n)) = self.w.dbs.first() {
            return Ok(Canary::of(n.canary));
        }
        let e = lookup_entry(self.w.view(), &self.w.catalog, "")?;
        Ok(Canary::of(e.and_then(|e| e.canary)))
    }

    /// Sets the canary's user words to `c.x`, `c.y`, `c.z`, committed with
    /// this transaction; `v` becomes this transaction's txnid, whatever
    /// `c.v` says (`mdbx_canary_put`).
    ///
    /// # Errors
    ///
    /// [`Error::BadTxn`] once an earlier failure broke the transaction;
    /// [`Error::Corrupted`] if the catalog is damaged. Nothing is written
    /// before commit, so neither breaks it.
    ///
    /// ```
    /// use sarsen::Canary;
    /// # fn main() -> Result<(), sarsen::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let env = unsafe { sarsen::Env::open(dir.path())? };
    /// let mut w = env.write_txn()?;
    /// let t = w.txnid();
    /// w.put(env.main_db(), b"event-41", b"...")?;
    /// w.put_canary(Canary { x: 41, ..Canary::default() })?;
    /// w.commit()?;
    /// let c = env.read_txn()?.canary()?;
    /// assert_eq!((c.x, c.v), (41, t));
    /// # Ok(())
    /// # }
    /// ```
    pub fn put_canary(&mut self, c: Canary) -> Result<()> {
        if self.broken {
            return Err(Error::BadTxn);
        }
        let txnid = self.w.txnid();
        let n = self.named(Database::MAIN)?;
        n.canary = Some([c.x, c.y, c.z, txnid]);
        n.exists = true;
        n.dirty = true;
        Ok(())
    }
}
