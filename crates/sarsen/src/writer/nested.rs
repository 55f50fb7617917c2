//! The transaction's part of a nested write transaction's checkpoint: the
//! tree records, named databases and append hint to restore on abort (the
//! pages' part is the pager's mark, `store/marks.rs`).

use super::{NamedDb, TxnState};
use crate::btree::Path;
use crate::error::Result;
use crate::page::{DbRecord, Pgno};

/// The transaction's state when a nested transaction began (its pages'
/// part is the pager's mark).
pub(crate) struct Checkpoint {
    pub(crate) id: u64,
    main: DbRecord,
    catalog: DbRecord,
    gc: DbRecord,
    /// How many GC records were loaded.
    loaded: usize,
    /// How far the inline GC was looked at, and which groups were loaded.
    inline: (usize, u32),
    main_changed: bool,
    dbs: Vec<Option<NamedDb>>,
    append_hint: Option<(Pgno, Path)>,
}

impl TxnState {
    /// Begins a nested transaction: pushes a checkpoint; returns its id.
    pub(crate) fn checkpoint(&mut self) -> u64 {
        self.nest_serial += 1;
        let cp = Checkpoint {
            id: self.nest_serial,
            main: self.main,
            catalog: self.catalog,
            gc: self.store.gc,
            loaded: self.store.loaded.len(),
            inline: (self.store.inline_next, self.store.inline_loaded),
            main_changed: self.main_changed,
            dbs: self.dbs.clone(),
            append_hint: self.tree.append,
        };
        self.nest.push(cp);
        self.store.pager.mark();
        self.nest_serial
    }

    /// Commits the innermost nested transaction into the one below.
    pub(crate) fn fold(&mut self) {
        if self.nest.pop().is_some() {
            self.store.pager.fold();
        }
    }

    /// Forgets every checkpoint (the outermost transaction ends).
    pub(crate) fn drop_checkpoints(&mut self) {
        while !self.nest.is_empty() {
            self.fold();
        }
    }

    /// Aborts the innermost nested transaction: restores the state of its
    /// checkpoint and rolls the pager back to its mark. Fails only if a
    /// page's view cannot be made again in write-map mode.
    pub(crate) fn roll_back(&mut self) -> Result<()> {
        let Some(cp) = self.nest.pop() else {
            return Ok(());
        };
        self.main = cp.main;
        self.catalog = cp.catalog;
        self.store.gc = cp.gc;
        self.store.loaded.truncate(cp.loaded);
        (self.store.inline_next, self.store.inline_loaded) = cp.inline;
        self.store.gc_exhausted = false;
        self.main_changed = cp.main_changed;
        self.dbs = cp.dbs;
        self.tree.append = cp.append_hint;
        self.store.pager.roll_back()
    }
}
