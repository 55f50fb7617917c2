//! Transaction introspection: libmdbx's `mdbx_txn_info` and `mdbx_is_dirty`.

use super::{RoTxn, RwTxn};
use crate::error::{Error, Result};

/// What a transaction is and holds (libmdbx's `MDBX_txn_info`). Page counts
/// are in pages of the environment's page size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TxnInfo {
    /// The snapshot's txnid (read), or the txnid it will commit as (write).
    pub txnid: u64,
    /// Read: commits made since the snapshot. Write: 0.
    pub lag: u64,
    /// Pages allocated in the file (`next_pgno`) as this transaction sees it.
    pub pages_used: u64,
    /// Write: pages this transaction has written (copied or new), each page
    /// of an overflow run counted. Read: 0.
    pub dirty_pages: u64,
    /// Write: pages it has freed that older snapshots may still read.
    pub retired_pages: u64,
    /// Write: pages it may still take before growing the file (free pages
    /// loaded from the GC plus those up to the geometry's upper bound).
    pub pages_left: u64,
}

impl RoTxn<'_> {
    /// Txnid, lag behind the newest commit, and pages in use of this snapshot.
    pub fn info(&self) -> TxnInfo {
        TxnInfo {
            txnid: self.txnid,
            lag: self.env.lock.published_txnid().saturating_sub(self.txnid),
            pages_used: u64::from(self.src.limit),
            ..TxnInfo::default()
        }
    }
}

impl RwTxn<'_> {
    /// Txnid, dirty and retired pages, and the room left of this write
    /// transaction.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let env = unsafe { sarsen::Env::open(dir.path()) }.unwrap();
    /// let mut w = env.write_txn()?;
    /// assert_eq!(w.info().dirty_pages, 0);
    /// w.put(env.main_db(), b"k", b"v")?;
    /// assert_eq!(w.info().dirty_pages, 1); // the new root leaf
    /// # Ok::<(), sarsen::Error>(())
    /// ```
    pub fn info(&self) -> TxnInfo {
        let w = self.w.pager();
        let ps = w.layout.psize;
        let dirty: usize = w.dirty.values().map(|b| b.len() / ps).sum();
        TxnInfo {
            txnid: w.txnid,
            lag: 0,
            pages_used: u64::from(w.next_pgno),
            dirty_pages: dirty as u64,
            retired_pages: w.freed.len() as u64,
            pages_left: w.reclaimed.len() as u64
                + u64::from(w.upper_pgno.saturating_sub(w.next_pgno)),
        }
    }

    /// Whether `value`, a slice this transaction returned, lies on a page
    /// it has written (libmdbx's `mdbx_is_dirty`): such a value changes or
    /// moves with the next write, while a clean one stays valid for the
    /// transaction (the borrow checker already stops holding either across
    /// a write).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] if `value` is neither in the map nor in a
    /// page this transaction has written (a copy, say).
    pub fn is_dirty(&self, value: &[u8]) -> Result<bool> {
        let addr = value.as_ptr() as usize;
        let ps = self.w.pager().layout.psize;
        if let Some(off) = self.env.map.offset_of(addr) {
            return Ok(self.w.pager().is_dirty((off / ps) as crate::page::Pgno));
        }
        let in_buffer = self.w.pager().dirty.values().any(|b| {
            let start = b.as_ptr() as usize;
            addr >= start && addr < start + b.len()
        });
        if in_buffer {
            Ok(true)
        } else {
            Err(Error::InvalidArgument(
                "the slice is not a value of this transaction".into(),
            ))
        }
    }
}
