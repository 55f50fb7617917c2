//! What a write transaction owns: its page store (the pager, refilled from
//! the GC), the records of the main, catalog and GC trees, the named
//! databases it opened, the checkpoints of nested transactions, and the
//! B+tree's state between operations. One [`TxnState`] lives in the
//! environment behind the writer mutex and is reused from one write
//! transaction to the next, so its buffers are allocated once.

use crate::btree::TreeState;
use crate::error::Result;
use crate::io::buf::PageBuf;
use crate::page::inline_gc::InlineGc;
use crate::page::{DbRecord, Kind, Layout, Pgno};
use crate::store::{PageStore, Pager, WSource};
pub(crate) mod gc;
mod nested;

use nested::Checkpoint;

/// State of the named databases touched by a write transaction.
#[derive(Clone, Debug)]
pub(crate) struct NamedDb {
    /// The tree as this transaction sees it.
    pub rec: DbRecord,
    /// Whether the database exists (false after `drop_db`).
    pub exists: bool,
    /// Whether `rec` or the settings changed and must be written to the
    /// catalog at commit.
    pub dirty: bool,
    /// Name of the merge operator recorded for the database.
    pub merge: Option<Box<str>>,
    /// Name of the user comparator recorded for the database (its record's
    /// flags say the order is a user comparator's).
    pub comparator: Option<Box<str>>,
    /// The canary (main database's entry only).
    pub canary: Option<[u64; 4]>,
    /// Name of the user comparator recorded for the duplicate values.
    pub dup_comparator: Option<Box<str>>,
}

impl NamedDb {
    /// A database that does not exist.
    pub(crate) fn absent() -> NamedDb {
        NamedDb {
            rec: DbRecord::default(),
            exists: false,
            dirty: false,
            merge: None,
            comparator: None,
            canary: None,
            dup_comparator: None,
        }
    }
}

/// The write transaction's page store: the [`Pager`], refilled from the
/// GC when a tree reserves pages (`gc::load_record` reads the GC tree;
/// commit's `gc::save` changes it through this same store).
pub(crate) struct WriteStore {
    pub pager: Pager,
    /// The GC tree's record as this transaction sees it.
    pub gc: DbRecord,
    /// GC records of transactions `<=` this bound hold reusable pages.
    pub gc_bound: u64,
    /// Set while commit saves the GC: reserving then loads no records.
    pub committing: bool,
    /// The GC records loaded, in load order (newest txnid first).
    pub loaded: Vec<gc::Loaded>,
    /// No record is left to load: set when a search for one found none,
    /// until the transaction ends or a nested one is rolled back (the GC
    /// tree gains no reusable record while a transaction runs).
    pub gc_exhausted: bool,
    /// The GC tree's pages on the paths to the records loaded: no record
    /// may hand one out (`gc::load_record`).
    pub gc_paths: rustc_hash::FxHashSet<Pgno>,
    /// The GC tree's pages on the path to its right edge, where commit adds
    /// records (no record may hand one out either), for the GC tree of
    /// this record: kept across transactions while the tree is unchanged
    /// (`gc::read_edge`).
    pub gc_edge: (DbRecord, Vec<Pgno>),
    /// The automatic compaction asked for this transaction's commit: the
    /// first load of GC records loads them all, sorted once, so that the
    /// transaction's own allocations take the lowest free pages too
    /// (`txn/compact.rs`). A transaction that allocates nothing loads
    /// nothing.
    pub load_all_first: bool,
    /// Buffers of commit's GC save (two plans and a record's value), kept
    /// so that a commit allocates none once they have grown.
    pub plans: (gc::Plan, gc::Plan, Vec<u8>),
    /// The inline GC of the meta this transaction began on: the newest
    /// free-page lists, loaded before the GC tree's records.
    pub inline: InlineGc,
    /// The next group of `inline` to look at when loading.
    pub inline_next: usize,
    /// The groups of `inline` loaded (bit `i` for group `i`).
    pub inline_loaded: u32,
    /// The inline GC commit writes into its meta page (`gc::save`).
    pub inline_out: InlineGc,
}

impl WriteStore {
    /// Loads every reusable record if the automatic compaction asked for
    /// it and none was loaded yet.
    #[inline]
    fn load_all_if_asked(&mut self) -> Result<()> {
        if self.load_all_first && !self.committing {
            self.load_all_first = false;
            gc::load_all(self)?;
        }
        Ok(())
    }

    /// Before a one-page allocation: loads GC records while no reclaimed
    /// page is left and one is (an empty record yields none: commit writes
    /// a record it used up empty, and deletes it once loaded again).
    /// Loading only reads the GC tree, so it may happen in the middle of an
    /// operation on another tree; not while commit saves the GC
    /// (`committing`), whose tree is then half changed.
    #[inline]
    fn refill(&mut self) -> Result<()> {
        self.load_all_if_asked()?;
        while self.short() && gc::load_record(self)? {}
        Ok(())
    }

    /// Whether a one-page allocation now would find no reclaimed page, and
    /// a record may be loaded.
    #[inline]
    fn short(&self) -> bool {
        self.pager.reclaimed.len() <= self.pager.kept_run && !self.committing
    }
}

impl PageStore for WriteStore {
    #[inline]
    fn view(&self) -> WSource<'_> {
        self.pager.view()
    }
    #[inline]
    fn layout(&self) -> Layout {
        self.pager.layout
    }
    #[inline]
    fn txnid(&self) -> u64 {
        self.pager.txnid
    }

    /// GC records are loaded here only as far as the room check needs them
    /// (the end of the file counts too, up to the upper bound) or for an
    /// overflow run of `run` consecutive pages, which is then kept apart
    /// from the one-page allocations ([`Pager::keep_run`]). Single pages
    /// are loaded when an allocation finds none reclaimed
    /// ([`WriteStore::refill`]), so reuse still comes before the end of the
    /// file, and an operation loads only the records it uses rather than
    /// its worst case.
    fn reserve(&mut self, pages: usize, run: usize) -> Result<()> {
        self.load_all_if_asked()?;
        let mut have_run = self.pager.has_run(run);
        while !self.committing && (!have_run || self.pager.room(pages, run, have_run).is_err()) {
            if !gc::load_record(self)? {
                break;
            }
            have_run = have_run || self.pager.has_run(run);
        }
        self.pager.keep_run(run);
        self.pager.room(pages, run, have_run)
    }
    fn new_page(&mut self, kind: Kind) -> Result<Pgno> {
        self.refill()?;
        self.pager.new_page(kind)
    }
    #[inline]
    fn touch(&mut self, pgno: Pgno) -> Result<Pgno> {
        // The cheap test first: most touches find reclaimed pages (or a
        // dirty page, which needs none).
        if self.short() && !self.pager.is_dirty(pgno) {
            self.refill()?;
        }
        self.pager.touch(pgno)
    }
    fn free(&mut self, pgno: Pgno, n: usize) -> Result<()> {
        self.pager.free(pgno, n)
    }
    fn free_run(&mut self, pgno: Pgno, n: usize) -> Result<()> {
        self.pager.free_run(pgno, n)
    }
    fn write_overflow(&mut self, value: &[u8]) -> Result<(Pgno, u64)> {
        self.refill()?;
        self.pager.write_overflow(value)
    }
    #[inline]
    fn dirty_mut(&mut self, pgno: Pgno) -> Result<&mut [u8]> {
        self.pager.dirty_mut(pgno)
    }
    #[inline]
    fn dirty(&self, pgno: Pgno) -> Option<&PageBuf> {
        self.pager.dirty.get(&pgno)
    }
    #[inline]
    fn approach_leaf(&mut self, pgno: Pgno) -> bool {
        self.pager.approach_leaf(pgno)
    }
    fn take_dirty(&mut self, pgno: Pgno) -> Option<PageBuf> {
        self.pager.take_dirty(pgno)
    }
    fn put_dirty(&mut self, pgno: Pgno, b: PageBuf) {
        self.pager.put_dirty(pgno, b)
    }
    fn buffer(&mut self) -> Box<[u8]> {
        self.pager.buffer()
    }
    fn recycle(&mut self, b: PageBuf) {
        self.pager.recycle(b)
    }
}

/// The write transaction's state.
pub(crate) struct TxnState {
    /// Pages, and the GC they are refilled from.
    pub store: WriteStore,
    /// What the B+tree keeps between operations (the append hint).
    pub tree: TreeState,
    pub catalog: DbRecord,
    pub main: DbRecord,
    /// Named databases by handle index. Index 0 holds only the main
    /// database's settings (its tree is `main`).
    pub dbs: Vec<Option<NamedDb>>,
    /// Buffer for merge results and catalog entries.
    pub merge_buf: Vec<u8>,
    /// The main database's record changed (for a change of its sequence
    /// alone, which dirties no page).
    pub main_changed: bool,
    /// The last snapshot reported to the slow-reader handler (pid, txnid):
    /// each is reported once. Kept across transactions.
    pub slow_reported: Option<(u32, u64)>,
    /// The last commit this environment wrote: its published state, its
    /// meta slot and the inline GC of its meta, so that the next
    /// transaction built on it does not decode the meta again. Kept across
    /// transactions; set only once the meta is written.
    pub last_meta: Option<(crate::io::lock::Published, u8, InlineGc)>,
    /// Checkpoints of the nested transactions under way, innermost last
    /// (see `txn/nested.rs`). Empty outside nested transactions.
    pub nest: Vec<Checkpoint>,
    /// Numbers the checkpoints, so a nested transaction finds its own.
    pub nest_serial: u64,
    /// The durability this transaction's commit asked for
    /// (`RwTxn::set_durability`), instead of the environment's.
    pub durability: Option<crate::options::Durability>,
    /// A `Durable` environment made a commit unsynced (a transaction asked
    /// for less) since its last sync: its drop syncs. Kept across
    /// transactions.
    pub unsynced_commits: bool,
}

impl TxnState {
    pub(crate) fn new(pager: Pager) -> TxnState {
        TxnState {
            store: WriteStore {
                pager,
                gc: DbRecord::default(),
                gc_bound: 0,
                committing: false,
                loaded: Vec::new(),
                plans: Default::default(),
                gc_exhausted: false,
                gc_paths: rustc_hash::FxHashSet::default(),
                gc_edge: (DbRecord::default(), Vec::new()),
                load_all_first: false,
                inline: InlineGc::default(),
                inline_next: 0,
                inline_loaded: 0,
                inline_out: InlineGc::default(),
            },
            tree: TreeState::default(),
            catalog: DbRecord::default(),
            main: DbRecord::default(),
            dbs: Vec::new(),
            merge_buf: Vec::new(),
            slow_reported: None,
            last_meta: None,
            main_changed: false,
            nest: Vec::new(),
            nest_serial: 0,
            durability: None,
            unsynced_commits: false,
        }
    }

    /// The pager.
    #[inline]
    pub(crate) fn pager(&self) -> &Pager {
        &self.store.pager
    }

    /// The read view of this transaction.
    #[inline]
    pub(crate) fn view(&self) -> WSource<'_> {
        self.store.pager.view()
    }

    /// Txnid of the transaction under way.
    #[inline]
    pub(crate) fn txnid(&self) -> u64 {
        self.store.pager.txnid
    }

    /// The tree `rec`, sorted by `ord`, in this transaction's store.
    #[inline]
    pub(crate) fn tree<'t>(
        &'t mut self,
        rec: &'t mut DbRecord,
        ord: crate::order::Order<'t>,
    ) -> crate::btree::Tree<'t, WriteStore> {
        crate::btree::Tree::new(&mut self.store, &mut self.tree, rec, ord)
    }

    /// Drops all uncommitted state, keeping buffers for reuse.
    pub(crate) fn reset(&mut self) {
        self.store.pager.reset();
        self.store.committing = false;
        self.store.loaded.clear();
        self.store.gc_exhausted = false;
        self.store.gc_paths.clear();
        self.store.load_all_first = false;
        self.store.inline.clear();
        self.store.inline_next = 0;
        self.store.inline_loaded = 0;
        self.store.inline_out.clear();
        self.store.plans.0.shrink();
        self.store.plans.1.shrink();
        self.tree.append = None;
        self.dbs.clear();
        self.main_changed = false;
        self.durability = None;
        self.drop_checkpoints();
    }
}
