//! Read and write transactions.

mod canary;
pub(crate) mod commit;
mod dup;
pub(crate) mod gc;
mod info;
mod modes;
mod nested;
pub(crate) mod writer;

use std::cell::Cell;
use std::ops::RangeBounds;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::MutexGuard;

use crate::btree::{self, Tree};
use crate::cursor::{Cursor, Iter};
use crate::db::{check_name, Database, DbOptions, Stat};
use crate::env::Env;
use crate::error::{Error, Result};
use crate::merge::MergeOperator;
use crate::order::{self, KeyOrder, Order, ORDER_MASK};
use crate::page::{CatalogEntry, DbRecord, MAX_VALUE};
use crate::store::AnySource;
use crate::store::MapSource;
pub use canary::Canary;
pub use info::TxnInfo;
pub use nested::NestedTxn;
use writer::{NamedDb, TxnState, WriteStore};

thread_local! {
    /// The reader slot this thread used last, per environment id: the next
    /// read transaction tries it first (one compare-and-swap).
    static SLOT_HINT: Cell<(u64, u32)> = const { Cell::new((0, 0)) };
}

/// A small number naming the calling thread (for the reader table).
fn thread_tag() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static TAG: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    TAG.with(|t| *t)
}

/// A read transaction: a consistent snapshot of the newest commit at the
/// time it began (LMDB's read-only `MDB_txn`). Writers committing later do
/// not change what it sees. Values borrow it: zero copy.
///
/// It holds a reader slot, which keeps the pages of its snapshot from
/// being reused: end long-lived ones, or the file grows. `Send` and `Sync`.
/// Writing through it is a compile error:
///
/// ```compile_fail
/// # let dir = tempfile::tempdir().unwrap();
/// let env = unsafe { sarsen::Env::open(dir.path()) }.unwrap();
/// let r = env.read_txn().unwrap();
/// r.put(env.main_db(), b"k", b"v"); // no `put` on RoTxn
/// ```
pub struct RoTxn<'env> {
    env: &'env Env,
    slot: u32,
    txnid: u64,
    src: MapSource<'env>,
    catalog: DbRecord,
    main: DbRecord,
    gc: DbRecord,
}

impl<'env> RoTxn<'env> {
    pub(crate) fn begin(env: &'env Env) -> Result<RoTxn<'env>> {
        env.check_fork()?;
        let lock = &env.lock;
        let (uid, hint) = SLOT_HINT.with(Cell::get);
        let slot = if uid == env.uid && lock.try_use_slot(hint, env.token) {
            hint
        } else {
            let claim = || lock.claim_slot(env.token, env.pid, thread_tag());
            // A full table may hold slots of dead processes: free them, retry.
            let s = match claim()? {
                Some(s) => Some(s),
                None if lock.reclaim_dead(env.token)? > 0 => claim()?,
                None => None,
            }
            .ok_or(Error::ReadersFull { max: lock.slots() })?;
            SLOT_HINT.with(|h| h.set((env.uid, s)));
            s
        };
        RoTxn::on_slot(env, slot)
    }

    /// A snapshot of the newest commit, read through the busy slot `slot`.
    /// On error the slot is released.
    fn on_slot(env: &'env Env, slot: u32) -> Result<RoTxn<'env>> {
        let lock = &env.lock;
        // Publish the snapshot's txnid, then check it is still the newest:
        // a writer that starts after the check sees the slot (SeqCst on both
        // sides), one that committed before it makes us retry.
        let p = loop {
            let p = match env.published() {
                Ok(p) => p,
                Err(e) => {
                    lock.release_slot(slot);
                    return Err(e);
                }
            };
            lock.slot_txnid(slot).store(p.txnid, Ordering::SeqCst);
            if lock.published_txnid() == p.txnid {
                break p;
            }
        };
        Ok(RoTxn {
            env,
            slot,
            txnid: p.txnid,
            src: MapSource {
                map: &env.map,
                layout: env.layout,
                limit: p.next_pgno.min(u64::from(env.upper_pgno)) as u32,
            },
            catalog: DbRecord::from_words(&p.catalog),
            main: DbRecord::from_words(&p.main),
            gc: DbRecord::from_words(&p.gc),
        })
    }

    /// Ends the snapshot but keeps the reader slot for a later
    /// [`InactiveRoTxn::renew`] (LMDB's `mdb_txn_reset`): pages the
    /// snapshot pinned become reusable, and the thread need not claim a
    /// slot again. Values read through this transaction cannot outlive it.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let env = unsafe { sarsen::Env::open(dir.path()) }.unwrap();
    /// let idle = env.read_txn()?.reset();
    /// let mut w = env.write_txn()?;
    /// w.put(env.main_db(), b"k", b"v")?;
    /// w.commit()?;
    /// let r = idle.renew()?; // the newest commit, on the same slot
    /// assert_eq!(r.get(env.main_db(), b"k")?, Some(&b"v"[..]));
    /// # Ok::<(), sarsen::Error>(())
    /// ```
    pub fn reset(self) -> InactiveRoTxn<'env> {
        let (env, slot) = (self.env, self.slot);
        env.lock.slot_txnid(slot).store(0, Ordering::SeqCst);
        // The slot stays busy (owned by the inactive transaction); `Drop`
        // would free it.
        std::mem::forget(self);
        InactiveRoTxn { env, slot }
    }

    /// Txnid of the snapshot.
    pub fn txnid(&self) -> u64 {
        self.txnid
    }

    pub(crate) fn next_pgno(&self) -> u64 {
        u64::from(self.src.limit)
    }

    /// The tree of `db` in this snapshot.
    fn tree(&self, db: Database) -> Result<DbRecord> {
        match self.env.registry.name(db)? {
            None => Ok(self.main),
            Some(name) => lookup(self.src, &self.catalog, name),
        }
    }

    /// The tree of `db` in this snapshot and the order of its keys.
    fn tree_ord(&self, db: Database) -> Result<(DbRecord, Order<'env>)> {
        let Some(name) = self.env.registry.name(db)? else {
            return Ok((self.main, self.order(db, &self.main, None)?));
        };
        match lookup_entry(self.src, &self.catalog, name)? {
            Some(e) => Ok((e.rec, self.order(db, &e.rec, e.comparator)?)),
            None => Err(Error::DbNotFound { name: name.into() }),
        }
    }

    /// The user order of the duplicate values of `db`'s tree `rec`, if its
    /// record says it has one.
    fn dup_order(&self, db: Database, rec: &DbRecord) -> Result<Option<Order<'env>>> {
        if !btree::dup::custom_dups(rec.flags) {
            return Ok(None);
        }
        let name = self.env.registry.name(db)?.unwrap_or_default();
        let e = lookup_entry(self.src, &self.catalog, name)?;
        let recorded = e.and_then(|e| e.dup_comparator);
        self.env.registry.dup_order(db, recorded).map(Some)
    }

    /// The order of `db`'s tree `rec`; `comparator` is the name recorded
    /// with a named database (the main database's is looked up here).
    fn order(&self, db: Database, rec: &DbRecord, comparator: Option<&str>) -> Result<Order<'env>> {
        resolve_order(self.env, db, rec, || {
            if db.dbi != 0 {
                return Ok(comparator);
            }
            Ok(lookup_entry(self.src, &self.catalog, "")?.and_then(|e| e.comparator))
        })
    }

    /// The duplicate mode of `db`: `None` for unique keys (LMDB's
    /// `mdb_dbi_flags` for `MDB_DUPSORT` and its companions).
    ///
    /// # Errors
    ///
    /// [`Error::DbNotFound`] if the named database does not exist in this
    /// snapshot; [`Error::NoComparator`] or [`Error::DupModeMismatch`] if
    /// a user comparator sorts its values and none, or one of another
    /// name, is attached to the handle; [`Error::InvalidArgument`] for a
    /// handle this environment never handed out; [`Error::Corrupted`] if
    /// the catalog is damaged.
    pub fn dup_mode(&self, db: Database) -> Result<Option<crate::DupMode>> {
        let rec = self.tree(db)?;
        self.dup_order(db, &rec)?;
        let c = self.env.registry.dup_comparator(db);
        Ok(crate::DupMode::of(rec.flags, c))
    }

    /// The key order of `db` (LMDB's `mdb_dbi_flags`, as far as the order
    /// goes): a user comparator's order needs it attached.
    ///
    /// # Errors
    ///
    /// [`Error::DbNotFound`] if the named database `db` does not exist in
    /// this snapshot (never created, or dropped); [`Error::NoComparator`]
    /// or [`Error::KeyOrderMismatch`] if a user comparator orders its keys
    /// and none, or one of another name, is attached to the handle;
    /// [`Error::InvalidArgument`] for a handle this environment never
    /// handed out; [`Error::Corrupted`] if a page read is damaged.
    pub fn key_order(&self, db: Database) -> Result<KeyOrder> {
        Ok(key_order_of(self.env, db, self.tree_ord(db)?.1))
    }

    /// The value of `key` in `db`, or `None`; in a DUPSORT database, the
    /// key's first value. Touches only the pages on the root-to-leaf path
    /// and allocates nothing. A key of the wrong length for an integer
    /// order, or longer than any key can be, finds nothing.
    ///
    /// # Errors
    ///
    /// [`Error::DbNotFound`] if the named database `db` does not exist in
    /// this snapshot (never created, or dropped); [`Error::NoComparator`]
    /// or [`Error::KeyOrderMismatch`] if a user comparator orders its keys
    /// and none, or one of another name, is attached to the handle;
    /// [`Error::InvalidArgument`] for a handle this environment never
    /// handed out; [`Error::Corrupted`] if a page read is damaged.
    /// In a DUPSORT database whose values a user comparator sorts, also
    /// [`Error::NoComparator`] or [`Error::DupModeMismatch`] for that
    /// comparator.
    #[inline]
    pub fn get(&self, db: Database, key: &[u8]) -> Result<Option<&[u8]>> {
        let (rec, ord) = if db.dbi == 0 && self.main.flags & ORDER_MASK == 0 {
            (self.main, Order::Bytewise)
        } else {
            self.tree_ord(db)?
        };
        if !ord.fits(key) {
            return Ok(None);
        }
        let dc = self.dup_order(db, &rec)?;
        get_in(self.src, &rec, ord, dc, key)
    }

    /// A cursor over `db`, unpositioned.
    ///
    /// # Errors
    ///
    /// As [`get`](RoTxn::get); a damaged page is met by the cursor's moves.
    pub fn cursor(&self, db: Database) -> Result<Cursor<'_>> {
        let (rec, ord) = self.tree_ord(db)?;
        Cursor::new(
            AnySource::Map(self.src),
            rec,
            ord,
            self.dup_order(db, &rec)?,
        )
    }

    /// All entries of `db` in key order (`.rev()` for descending).
    ///
    /// # Errors
    ///
    /// As [`get`](RoTxn::get); a damaged page met while iterating is the
    /// iterator's last item, an `Err`.
    pub fn iter(&self, db: Database) -> Result<Iter<'_>> {
        self.range(db, ..)
    }

    /// The entries of `db` whose keys fall in `range` (`..`, `a..b`,
    /// `a..=b`, `a..`, `..b` over `&[u8]`), in key order; `.rev()` walks
    /// them backwards. Order and bounds follow the database's
    /// [`KeyOrder`].
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let env = unsafe { sarsen::Env::open(dir.path()) }.unwrap();
    /// # let db = env.main_db();
    /// # let mut w = env.write_txn().unwrap();
    /// # for k in [&b"a"[..], b"b", b"c", b"d"] { w.put(db, k, b"").unwrap(); }
    /// # w.commit().unwrap();
    /// let r = env.read_txn().unwrap();
    /// let keys: Vec<&[u8]> = r
    ///     .range(db, &b"b"[..]..=&b"c"[..])
    ///     .unwrap()
    ///     .rev()
    ///     .map(|e| e.unwrap().0)
    ///     .collect();
    /// assert_eq!(keys, [&b"c"[..], b"b"]);
    /// ```
    ///
    /// # Errors
    ///
    /// As [`iter`](RoTxn::iter).
    pub fn range<'k, R: RangeBounds<&'k [u8]>>(&self, db: Database, range: R) -> Result<Iter<'_>> {
        let (rec, ord) = self.tree_ord(db)?;
        let dc = self.dup_order(db, &rec)?;
        Iter::new(AnySource::Map(self.src), rec, ord, dc, range)
    }

    /// The database's sequence in this snapshot (see
    /// [`RwTxn::next_sequence`]).
    ///
    /// # Errors
    ///
    /// [`Error::DbNotFound`] if the named database does not exist in this
    /// snapshot; [`Error::InvalidArgument`] for a handle this environment
    /// never handed out; [`Error::Corrupted`] if the catalog is damaged.
    /// No comparator is needed.
    pub fn sequence(&self, db: Database) -> Result<u64> {
        Ok(self.tree(db)?.sequence)
    }

    /// Statistics of `db` in this snapshot, from its tree record (no page
    /// of the tree is read).
    ///
    /// # Errors
    ///
    /// As [`sequence`](RoTxn::sequence).
    pub fn stat(&self, db: Database) -> Result<Stat> {
        Ok(Stat::from_record(&self.tree(db)?, self.env.page_size))
    }

    /// The approximate number of entries of `db` with keys in `lo..hi`
    /// (`None`: unbounded), from the two root-to-leaf paths alone, in
    /// O(depth) page reads plus the children of small top-level pages
    /// (libmdbx's `mdbx_estimate_range`). Each bound's position is taken as
    /// a fraction of the tree along its path, weighing the children of
    /// pages with at most 64 of them by their own sizes and the others
    /// equally, so the error comes from unevenly filled siblings. On trees
    /// filled by random inserts and deletes, `tests/estimate.rs` holds it
    /// within 3% of the database's entries plus two leaves' worth at 4 KiB
    /// pages, and within 10% plus two leaves at 512-byte pages. An empty or
    /// inverted range gives 0.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let env = unsafe { sarsen::Env::open(dir.path()) }.unwrap();
    /// let db = env.main_db();
    /// let mut w = env.write_txn()?;
    /// for i in 0..10_000u32 {
    ///     w.put(db, &i.to_be_bytes(), b"value")?;
    /// }
    /// w.commit()?;
    /// let r = env.read_txn()?;
    /// let n = r.estimate_range(db, Some(&1000u32.to_be_bytes()), Some(&3000u32.to_be_bytes()))?;
    /// assert!((1500..2500).contains(&n), "{n}");
    /// # Ok::<(), sarsen::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::DbNotFound`] if the named database `db` does not exist in
    /// this snapshot (never created, or dropped); [`Error::NoComparator`]
    /// or [`Error::KeyOrderMismatch`] if a user comparator orders its keys
    /// and none, or one of another name, is attached to the handle;
    /// [`Error::InvalidArgument`] for a handle this environment never
    /// handed out; [`Error::Corrupted`] if a page read is damaged.
    pub fn estimate_range(
        &self,
        db: Database,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> Result<u64> {
        let (rec, ord) = self.tree_ord(db)?;
        estimate(self.src, &rec, ord, lo, hi)
    }

    /// The handle of the named database `name` (registering it with the
    /// environment), or `None` if it does not exist in this snapshot.
    /// `None` as the name gives the main database.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a name of 0 or more than
    /// [`Env::max_key_size`](crate::Env::max_key_size) bytes;
    /// [`Error::DbsFull`] if the name is new to this `Env` and it has
    /// handed out [`EnvOptions::max_dbs`](crate::EnvOptions::max_dbs)
    /// handles; [`Error::NoComparator`] or [`Error::KeyOrderMismatch`] if
    /// the database records a user comparator and none, or one of another
    /// name, is attached to the handle (give it with
    /// [`open_db_with`](RoTxn::open_db_with)); [`Error::Corrupted`] if the
    /// catalog is damaged.
    pub fn open_db(&self, name: Option<&str>) -> Result<Option<Database>> {
        let Some(name) = name else {
            return Ok(Some(Database::MAIN));
        };
        let Some(db) = self.open_inner(name)? else {
            return Ok(None);
        };
        self.tree_ord(db)?;
        Ok(Some(db))
    }

    /// `open_db` without resolving the key order.
    fn open_inner(&self, name: &str) -> Result<Option<Database>> {
        check_name(name, self.env.layout.max_key)?;
        match lookup(self.src, &self.catalog, name) {
            Ok(_) => self.env.registry.handle(name).map(Some),
            Err(Error::DbNotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// [`open_db`](RoTxn::open_db) with options. A merge operator or key
    /// comparator in `opts` is attached to the handle for the life of the
    /// environment (a read transaction records nothing). The duplicate
    /// mode in `opts` ([`DbOptions::dup_sort`],
    /// [`DbOptions::dup_fixed`]) is neither checked nor attached here: a
    /// database whose values a user comparator sorts gets that comparator
    /// from [`RwTxn::open_db_with`] or
    /// [`RwTxn::create_db_with`].
    ///
    /// # Errors
    ///
    /// [`Error::MergeOperatorMismatch`] if the catalog records, or the
    /// handle already has, an operator of another name;
    /// [`Error::KeyOrderMismatch`] if the database records another key
    /// order, or the handle already has a comparator of another name;
    /// [`Error::InvalidArgument`] for an operator's or comparator's name of
    /// 0 or over 255 bytes; those of [`open_db`](RoTxn::open_db). An
    /// operator or comparator attached before the error stays attached.
    pub fn open_db_with(&self, name: Option<&str>, opts: &DbOptions) -> Result<Option<Database>> {
        let db = match name {
            None => Database::MAIN,
            Some(n) => match self.open_inner(n)? {
                Some(db) => db,
                None => return Ok(None),
            },
        };
        let entry = lookup_entry(self.src, &self.catalog, name.unwrap_or(""))?;
        if let Some(op) = &opts.merge {
            check_operator(name, entry.and_then(|e| e.merge), op.as_ref())?;
            self.env.registry.attach(db, op)?;
        }
        if let Some(o) = &opts.order {
            let rec = if db.dbi == 0 {
                self.main
            } else {
                entry.map(|e| e.rec).unwrap_or_default()
            };
            let recorded = entry.and_then(|e| e.comparator);
            // An empty main database takes its order from the first writer
            // that gives one; until then any order reads it alike.
            if !adoptable(db, &rec, recorded) {
                check_order(name, &rec, recorded, o)?;
            }
            if let KeyOrder::Custom(c) = o {
                self.env.registry.attach_comparator(db, c)?;
            }
        }
        self.tree_ord(db)?;
        Ok(Some(db))
    }

    /// Names of the named databases, sorted bytewise.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`] if a catalog page is damaged.
    pub fn list_dbs(&self) -> Result<Vec<String>> {
        list(AnySource::Map(self.src), self.catalog)
    }

    /// Checks the integrity of this snapshot (libmdbx's `mdbx_chk` walk):
    /// every page of every tree (GC, catalog, main, named databases) is in
    /// bounds, of the kind its level wants, matches the checksum its parent
    /// (or the tree's record) holds, has its keys in order and inside its
    /// parent's separators; overflow runs match their headers and
    /// checksums; each tree's counts match its record; GC records are no
    /// newer than the snapshot; and every page in `3..next_pgno` is in
    /// exactly one tree or listed free exactly once (no leak, no double
    /// use). Reads every page of the snapshot, so its cost is the database
    /// size; writers are not blocked.
    ///
    /// [`Env::check`](crate::Env::check) also checks the meta pages.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let env = unsafe { sarsen::Env::open(dir.path()) }.unwrap();
    /// let mut w = env.write_txn()?;
    /// for i in 0..1000u32 {
    ///     w.put(env.main_db(), &i.to_be_bytes(), b"value")?;
    /// }
    /// w.commit()?;
    /// let report = env.read_txn()?.check()?;
    /// assert!(report.is_ok(), "{:?}", report.problems);
    /// assert_eq!(report.trees[2].name, "main");
    /// assert_eq!(report.trees[2].entries, 1000);
    /// # Ok::<(), sarsen::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// None: damage, however bad, is reported in
    /// [`CheckReport::problems`](crate::CheckReport::problems), not as an
    /// error (the `Result` matches [`Env::check`](crate::Env::check),
    /// which can fail to begin its snapshot).
    pub fn check(&self) -> Result<crate::CheckReport> {
        Ok(crate::check::check(
            self.src,
            self.txnid,
            &self.gc,
            &self.catalog,
            &self.main,
            &self.env.registry,
        ))
    }

    /// The snapshot's page source, txnid, and GC, catalog and main records.
    pub(crate) fn parts(&self) -> (MapSource<'env>, u64, DbRecord, DbRecord, DbRecord) {
        (self.src, self.txnid, self.gc, self.catalog, self.main)
    }

    /// The merge operator name recorded for database `name` (`None`: main).
    pub(crate) fn merge_operator_name(&self, name: Option<&str>) -> Result<Option<String>> {
        let e = lookup_entry(self.src, &self.catalog, name.unwrap_or(""))?;
        Ok(e.and_then(|e| e.merge).map(String::from))
    }

    /// Pages recorded in the GC tree of this snapshot.
    pub(crate) fn gc_pages(&self) -> Result<u64> {
        let mut c =
            crate::cursor::RawCursor::new(AnySource::Map(self.src), self.gc, Order::Bytewise);
        let mut n = 0;
        let mut e = c.first()?;
        while let Some((_, v)) = e {
            n += v.len() as u64 / 4;
            e = c.next()?;
        }
        Ok(n)
    }
}

impl Drop for RoTxn<'_> {
    fn drop(&mut self) {
        // A forked child must not clear the parent's slot.
        if !self.env.forked() {
            self.env.lock.release_slot(self.slot);
        }
    }
}

/// A read transaction after [`RoTxn::reset`]: no snapshot, but its reader
/// slot kept (LMDB's reset `MDB_txn`). [`renew`](InactiveRoTxn::renew)
/// starts a snapshot of the newest commit on it; dropping it frees the slot.
pub struct InactiveRoTxn<'env> {
    env: &'env Env,
    slot: u32,
}

impl<'env> InactiveRoTxn<'env> {
    /// A snapshot of the newest commit on the kept slot (LMDB's
    /// `mdb_txn_renew`). No slot is claimed: the slot is already this
    /// transaction's.
    ///
    /// # Errors
    ///
    /// [`Error::Forked`] in a `fork()` child of the process that began
    /// it; [`Error::Corrupted`] if the lock file's published snapshot
    /// stays half-written (see [`Env::read_txn`](crate::Env::read_txn)).
    /// On error the slot is released (idle, still this environment's).
    pub fn renew(self) -> Result<RoTxn<'env>> {
        self.env.check_fork()?;
        let (env, slot) = (self.env, self.slot);
        std::mem::forget(self);
        RoTxn::on_slot(env, slot)
    }
}

impl Drop for InactiveRoTxn<'_> {
    fn drop(&mut self) {
        // A forked child must not clear the parent's slot.
        if !self.env.forked() {
            self.env.lock.release_slot(self.slot);
        }
    }
}

/// The value of `key` in the tree `rec`: in a DUPSORT tree, its first.
#[inline]
fn get_in<'a, S: crate::store::Source<'a>>(
    s: S,
    rec: &DbRecord,
    ord: Order<'_>,
    dup_order: Option<Order<'_>>,
    key: &[u8],
) -> Result<Option<&'a [u8]>> {
    if rec.flags & crate::page::record::DUPSORT == 0 {
        return btree::get(s, rec, ord, key);
    }
    let Some(d) = dup::dups_of(rec, dup_order)? else {
        return Ok(None);
    };
    Ok(match btree::dup::lookup(s, rec, ord, d, key)? {
        None => None,
        Some(btree::dup::Vals::One(v)) => Some(v),
        Some(btree::dup::Vals::List(l)) => l.get(0),
        Some(btree::dup::Vals::Tree(sub)) => Some(btree::dup::first_in(s, &sub)?),
    })
}

/// Estimated entries of the tree `rec` in `lo..hi`.
fn estimate<'a, S: crate::store::Source<'a>>(
    s: S,
    rec: &DbRecord,
    ord: crate::order::Order<'_>,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
) -> Result<u64> {
    let start = match lo {
        Some(k) => btree::estimate::rank(s, rec, ord, k)?,
        None => 0.0,
    };
    let end = match hi {
        Some(k) => btree::estimate::rank(s, rec, ord, k)?,
        None => rec.entries as f64,
    };
    Ok((end - start).max(0.0).round() as u64)
}

/// The record of named database `name` in the catalog `cat`.
fn lookup<'a, S: crate::store::Source<'a>>(s: S, cat: &DbRecord, name: &str) -> Result<DbRecord> {
    match lookup_entry(s, cat, name)? {
        Some(e) => Ok(e.rec),
        None => Err(Error::DbNotFound { name: name.into() }),
    }
}

/// The catalog entry of `name` (the empty name: the main database's
/// settings), or `None`.
fn lookup_entry<'a, S: crate::store::Source<'a>>(
    s: S,
    cat: &DbRecord,
    name: &str,
) -> Result<Option<CatalogEntry<'a>>> {
    let Some(v) = btree::get(s, cat, Order::Bytewise, name.as_bytes())? else {
        return Ok(None);
    };
    CatalogEntry::decode(v).map(Some).map_err(|what| {
        Error::corrupted(
            u64::from(cat.root),
            format!("catalog entry of {name:?}: {what}"),
        )
    })
}

/// `MergeOperatorMismatch` unless `op` has the `recorded` name (or none is).
fn check_operator(db: Option<&str>, recorded: Option<&str>, op: &dyn MergeOperator) -> Result<()> {
    match recorded {
        Some(r) if r != op.name() => Err(Error::MergeOperatorMismatch {
            db: db.unwrap_or_default().into(),
            recorded: r.into(),
            given: op.name().into(),
        }),
        _ => Ok(()),
    }
}

/// The order of `db`'s tree `rec`: from the record's flags, or the
/// comparator attached to the handle, which must have the name
/// `recorded` gives.
fn resolve_order<'e, 'r>(
    env: &'e Env,
    db: Database,
    rec: &DbRecord,
    recorded: impl FnOnce() -> Result<Option<&'r str>>,
) -> Result<Order<'e>> {
    match Order::builtin(rec.flags) {
        Ok(Some(o)) => Ok(o),
        Ok(None) => env.registry.custom_order(db, recorded()?),
        Err(what) => Err(Error::corrupted(u64::from(rec.root), what)),
    }
}

/// Whether the main database `db` (empty, bytewise, no comparator) takes
/// the order the first writer gives it.
fn adoptable(db: Database, rec: &DbRecord, comparator: Option<&str>) -> bool {
    db.dbi == 0 && rec.root == 0 && rec.flags & ORDER_MASK == 0 && comparator.is_none()
}

/// `KeyOrderMismatch` unless `given` is the order recorded in `rec` (and
/// the comparator name `comparator`).
fn check_order(
    db: Option<&str>,
    rec: &DbRecord,
    comparator: Option<&str>,
    given: &KeyOrder,
) -> Result<()> {
    let g = given.as_order();
    let code = rec.flags & ORDER_MASK;
    if code == g.code() && (code != order::CODE_CUSTOM || comparator == g.comparator_name()) {
        return Ok(());
    }
    Err(Error::KeyOrderMismatch {
        db: db.unwrap_or_default().into(),
        recorded: order::describe(code, comparator),
        given: g.describe(),
    })
}

/// How errors name the duplicate mode in record flags `f`.
fn describe_dups(f: u16, comparator: Option<&str>) -> String {
    use crate::page::record::{DUPFIXED, DUPSORT, DUP_ORDER_SHIFT};
    if f & DUPSORT == 0 {
        return "unique keys".into();
    }
    let fixed = if f & DUPFIXED != 0 { "DUPFIXED, " } else { "" };
    format!(
        "DUPSORT ({fixed}values {})",
        order::describe((f >> DUP_ORDER_SHIFT) & 7, comparator)
    )
}

/// The public form of `db`'s order `ord`.
fn key_order_of(env: &Env, db: Database, ord: Order<'_>) -> KeyOrder {
    match ord {
        Order::Bytewise => KeyOrder::Bytewise,
        Order::Reverse => KeyOrder::ReverseBytewise,
        Order::U32 => KeyOrder::U32,
        Order::U64 => KeyOrder::U64,
        Order::Custom(_) => env
            .registry
            .comparator(db)
            .map(|c| KeyOrder::Custom(std::sync::Arc::clone(c)))
            .unwrap_or_default(),
    }
}

/// `BadKeySize` for a key that an integer order does not take.
/// `KeyTooLarge` or `ValueTooLarge` for a pair over `env`'s limits.
fn check_sizes(env: &Env, key: &[u8], value: &[u8]) -> Result<()> {
    let max = env.layout.max_key;
    if key.len() > max {
        return Err(Error::KeyTooLarge {
            len: key.len(),
            max,
        });
    }
    if value.len() > MAX_VALUE {
        return Err(Error::ValueTooLarge {
            len: value.len(),
            max: MAX_VALUE,
        });
    }
    Ok(())
}

fn check_key(ord: Order<'_>, key: &[u8]) -> Result<()> {
    match ord.key_size() {
        Some(n) if key.len() != n => Err(Error::BadKeySize {
            len: key.len(),
            expected: n,
        }),
        _ => Ok(()),
    }
}

/// Names in a catalog (the empty name, the main database's settings, is
/// not one).
fn list(s: AnySource<'_>, cat: DbRecord) -> Result<Vec<String>> {
    let mut c = crate::cursor::RawCursor::new(s, cat, Order::Bytewise);
    let mut out = Vec::new();
    let mut e = c.first()?;
    while let Some((k, _)) = e {
        if !k.is_empty() {
            out.push(String::from_utf8_lossy(k).into_owned());
        }
        e = c.next()?;
    }
    Ok(out)
}

/// The write transaction (LMDB's `MDB_txn` without `MDB_RDONLY`). One at a
/// time per environment, across processes. Changes are visible to this
/// transaction at once and to others after [`commit`](RwTxn::commit);
/// dropping it without committing aborts.
///
/// A failed operation either leaves the transaction usable, with its
/// earlier writes, or breaks it, and the transaction then refuses writes
/// and its commit with [`Error::BadTxn`] and can only be aborted (LMDB's
/// `MDB_BAD_TXN` rule): which one is [`Error::leaves_txn_usable`] of the
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
    env: &'env Env,
    w: MutexGuard<'env, TxnState>,
    /// An operation failed after changing pages: the transaction can only abort.
    broken: bool,
    done: bool,
}

impl<'env> RwTxn<'env> {
    pub(crate) fn begin(env: &'env Env) -> Result<RwTxn<'env>> {
        if env.read_only {
            return Err(Error::ReadOnly);
        }
        env.check_fork()?;
        let w = env.writer.lock().unwrap_or_else(|e| e.into_inner());
        env.lock.lock_writer()?;
        // From here every exit, an error or a panic in the slow-reader
        // handler included, drops `txn`, which releases the writer lock.
        let mut txn = RwTxn {
            env,
            w,
            broken: false,
            done: false,
        };
        txn.start()?;
        Ok(txn)
    }

    /// Sets up the writer for a new transaction on the published snapshot
    /// (repaired first if its writer died publishing it, and checked
    /// against the current meta page).
    fn start(&mut self) -> Result<()> {
        let env = self.env;
        env.check_synced()?;
        let (p, ws) = env.writer_view()?;
        env.erase_orphan_metas(&p, &ws)?;
        let w = &mut self.w;
        w.reset();
        let last = p.txnid;
        let next = p.next_pgno as u32;
        w.store
            .pager
            .begin(last + 1, next, env.upper_pgno, env.growth_pgno);
        w.store.gc = DbRecord::from_words(&p.gc);
        w.catalog = DbRecord::from_words(&p.catalog);
        w.main = DbRecord::from_words(&p.main);
        // After the trees are set: the slow-reader handler reads the GC.
        let oldest = crate::readers::oldest_after_handler(env, w, last)?;
        let mut bound = oldest.map_or(last, |o| o.min(last));
        if env.durability != crate::Durability::NoSync {
            // Keep the last durable commit intact until a newer one is.
            bound = bound.min(ws.durable_txnid);
        }
        w.store.gc_bound = bound;
        Ok(())
    }

    /// Txnid this transaction will commit as.
    pub fn txnid(&self) -> u64 {
        self.w.txnid()
    }

    fn src(&self) -> AnySource<'_> {
        AnySource::Write(self.w.view())
    }

    /// The tree of `db` as this transaction sees it.
    fn tree(&self, db: Database) -> Result<DbRecord> {
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
    fn order(&self, db: Database, rec: &DbRecord) -> Result<Order<'env>> {
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
    fn dup_order_of(&self, db: Database, rec: &DbRecord) -> Result<Option<Order<'env>>> {
        if !btree::dup::custom_dups(rec.flags) {
            return Ok(None);
        }
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
    fn tree_ord(&self, db: Database) -> Result<(DbRecord, Order<'env>)> {
        let rec = self.tree(db)?;
        Ok((rec, self.order(db, &rec)?))
    }

    /// The key order of `db` (see [`RoTxn::key_order`]).
    ///
    /// # Errors
    ///
    /// [`Error::DbNotFound`] if the named database `db` does not exist in
    /// this transaction's view (never created, or dropped);
    /// [`Error::NoComparator`] or [`Error::KeyOrderMismatch`] if a user
    /// comparator orders its keys and none, or one of another name, is
    /// attached to the handle; [`Error::InvalidArgument`] for a handle this
    /// environment never handed out; [`Error::Corrupted`] if a page read is
    /// damaged. Reads work in a broken transaction too (no
    /// [`Error::BadTxn`]).
    pub fn key_order(&self, db: Database) -> Result<KeyOrder> {
        Ok(key_order_of(self.env, db, self.tree_ord(db)?.1))
    }

    /// The duplicate mode of `db` (see [`RoTxn::dup_mode`]).
    ///
    /// # Errors
    ///
    /// [`Error::DbNotFound`] if the named database does not exist in this
    /// transaction's view; [`Error::NoComparator`] or
    /// [`Error::DupModeMismatch`] if a user comparator sorts its values
    /// and none, or one of another name, is attached to the handle;
    /// [`Error::InvalidArgument`] for a handle this environment never
    /// handed out; [`Error::Corrupted`] if the catalog is damaged.
    pub fn dup_mode(&self, db: Database) -> Result<Option<crate::DupMode>> {
        self.dup_order(db)?;
        let c = self.env.registry.dup_comparator(db);
        Ok(crate::DupMode::of(self.tree(db)?.flags, c))
    }

    /// Loads the state of named `db` for writing. For the main database
    /// (`dbi` 0), only the settings count: its tree is `self.w.main`.
    fn named(&mut self, db: Database) -> Result<&mut NamedDb> {
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
    fn change<T>(
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
    fn current(&mut self, db: Database) -> Result<DbRecord> {
        if self.broken {
            return Err(Error::BadTxn);
        }
        if db.dbi == 0 {
            return Ok(self.w.main);
        }
        let n = self.named(db)?;
        if !n.exists {
            let name = self.env.registry.name(db)?.unwrap_or_default();
            return Err(Error::DbNotFound { name: name.into() });
        }
        Ok(n.rec)
    }

    /// Runs `f` on `rec`, [`current`](RwTxn::current) for `db`, and keeps
    /// the record it leaves if it succeeds.
    fn apply<T>(
        &mut self,
        db: Database,
        mut rec: DbRecord,
        ord: Order<'env>,
        f: impl FnOnce(&mut Tree<'_, WriteStore>) -> Result<T>,
    ) -> Result<T> {
        let before = rec;
        let r = f(&mut self.w.tree(&mut rec, ord));
        match &r {
            Ok(_) => {
                if db.dbi == 0 {
                    // A change of the record alone (its sequence) must
                    // commit too.
                    self.w.main_changed |= rec != before;
                    self.w.main = rec;
                } else if rec != before {
                    let n = self.named(db)?;
                    n.rec = rec;
                    n.dirty = true;
                }
            }
            Err(e) if !e.leaves_txn_usable() => self.broken = true,
            Err(_) => {}
        }
        r
    }

    /// The value of `key` in `db`, including this transaction's changes;
    /// in a DUPSORT database, the key's first value. A key of the wrong
    /// length for an integer order, or longer than any key can be, finds
    /// nothing.
    ///
    /// # Errors
    ///
    /// [`Error::DbNotFound`] if the named database `db` does not exist in
    /// this transaction's view (never created, or dropped);
    /// [`Error::NoComparator`] or [`Error::KeyOrderMismatch`] if a user
    /// comparator orders its keys and none, or one of another name, is
    /// attached to the handle; [`Error::InvalidArgument`] for a handle this
    /// environment never handed out; [`Error::Corrupted`] if a page read is
    /// damaged. Reads work in a broken transaction too (no
    /// [`Error::BadTxn`]).
    /// In a DUPSORT database whose values a user comparator sorts, also
    /// [`Error::NoComparator`] or [`Error::DupModeMismatch`] for that
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
    /// [`Error::DbNotFound`] if the named database does not exist in this
    /// transaction's view; [`Error::NoComparator`] or
    /// [`Error::DupModeMismatch`] if a user comparator sorts a DUPSORT
    /// database's values and none, or one of another name, is attached;
    /// [`Error::InvalidArgument`] for a handle this environment never
    /// handed out; [`Error::Corrupted`] if the catalog is damaged. A
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

    /// The entries of `db` in `range`, in key order (see [`RoTxn::range`]).
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
    /// [`Error::DbNotFound`] if the named database does not exist in this
    /// transaction's view; [`Error::InvalidArgument`] for a handle this
    /// environment never handed out; [`Error::Corrupted`] if the catalog is
    /// damaged. No comparator is needed.
    pub fn stat(&self, db: Database) -> Result<Stat> {
        Ok(Stat::from_record(&self.tree(db)?, self.env.page_size))
    }

    /// [`RoTxn::estimate_range`] on this transaction's view.
    ///
    /// # Errors
    ///
    /// [`Error::DbNotFound`] if the named database `db` does not exist in
    /// this transaction's view (never created, or dropped);
    /// [`Error::NoComparator`] or [`Error::KeyOrderMismatch`] if a user
    /// comparator orders its keys and none, or one of another name, is
    /// attached to the handle; [`Error::InvalidArgument`] for a handle this
    /// environment never handed out; [`Error::Corrupted`] if a page read is
    /// damaged. Reads work in a broken transaction too (no
    /// [`Error::BadTxn`]).
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
    /// [`Error::Corrupted`] if a catalog page is damaged.
    pub fn list_dbs(&self) -> Result<Vec<String>> {
        list(self.src(), self.w.catalog)
    }

    /// The handle of named database `name`, or `None` if it does not exist.
    /// `None` as the name gives the main database.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a name of 0 or more than
    /// [`Env::max_key_size`] bytes; [`Error::DbsFull`] if the name is new
    /// to this `Env` and it has handed out
    /// [`EnvOptions::max_dbs`](crate::EnvOptions::max_dbs) handles;
    /// [`Error::NoComparator`] or [`Error::KeyOrderMismatch`] if the
    /// database records a user comparator and none, or one of another
    /// name, is attached to the handle (give it with
    /// [`open_db_with`](RwTxn::open_db_with)); [`Error::Corrupted`] if the
    /// catalog is damaged. Nothing is written: the transaction stays as it
    /// was.
    pub fn open_db(&mut self, name: Option<&str>) -> Result<Option<Database>> {
        self.open_db_with(name, &DbOptions::new())
    }

    /// `open_db` without resolving the key order.
    fn open_inner(&mut self, name: Option<&str>) -> Result<Option<Database>> {
        let Some(name) = name else {
            return Ok(Some(Database::MAIN));
        };
        check_name(name, self.env.layout.max_key)?;
        let db = self.env.registry.handle(name)?;
        Ok(self.named(db)?.exists.then_some(db))
    }

    /// The handle of named database `name`, creating it if missing (LMDB's
    /// `mdb_dbi_open` with `MDB_CREATE`). `None` gives the main database.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a name of 0 or more than
    /// [`Env::max_key_size`] bytes; [`Error::DbsFull`] if the name is new
    /// to this `Env` and it has handed out
    /// [`EnvOptions::max_dbs`](crate::EnvOptions::max_dbs) handles;
    /// [`Error::NoComparator`] or [`Error::KeyOrderMismatch`] if an
    /// existing database records a user comparator and none, or one of
    /// another name, is attached to the handle. Writing a new database's
    /// catalog entry can give [`Error::UpperBoundReached`], and:
    /// [`Error::BadTxn`] once an earlier failure broke the transaction;
    /// [`Error::Corrupted`] for a damaged page on the path, and in
    /// write-map mode [`Error::DiskFull`] or [`Error::Io`] when the file
    /// grows: these three break the transaction (its later writes and its
    /// commit give `BadTxn`). Every other error leaves the transaction as
    /// it was ([`Error::leaves_txn_usable`]).
    pub fn create_db(&mut self, name: Option<&str>) -> Result<Database> {
        self.create_db_with(name, &DbOptions::new())
    }

    /// `create_db`, a new database in `order`, without checking the order
    /// of an existing one.
    fn create_inner(&mut self, name: Option<&str>, opts: &DbOptions) -> Result<Database> {
        let order = opts.order.as_ref();
        let Some(name) = name else {
            return Ok(Database::MAIN);
        };
        check_name(name, self.env.layout.max_key)?;
        let db = self.env.registry.handle(name)?;
        if self.named(db)?.exists {
            return Ok(db);
        }
        let ord = order.map_or(Order::Bytewise, KeyOrder::as_order);
        let comparator = ord.comparator_name();
        if let Some(c) = comparator {
            order::check_name(c)?;
        }
        let dcmp = opts.dup_comparator_name();
        if let Some(c) = dcmp {
            order::check_name(c)?;
        }
        let rec = DbRecord {
            flags: ord.code() | opts.dup_flags()?,
            ..DbRecord::default()
        };
        self.put_catalog(name, &rec)?;
        let n = self.named(db)?;
        *n = NamedDb {
            rec,
            exists: true,
            // The comparators' names go into the catalog at commit.
            dirty: comparator.is_some() || dcmp.is_some(),
            merge: None,
            comparator: comparator.map(Into::into),
            canary: None,
            dup_comparator: dcmp.map(Into::into),
        };
        Ok(db)
    }

    /// [`create_db`](RwTxn::create_db) with options: a new database gets
    /// the key order in `opts` ([`DbOptions::key_order`]); the merge
    /// operator in `opts` is attached to the handle and, if the catalog
    /// records none, recorded for the database when this transaction
    /// commits.
    ///
    /// # Errors
    ///
    /// [`Error::MergeOperatorMismatch`] if the catalog records, or the
    /// handle already has, an operator of another name;
    /// [`Error::KeyOrderMismatch`] if an existing database records another
    /// key order, or the handle already has a comparator of another name;
    /// [`Error::DupModeMismatch`] if it records another duplicate mode;
    /// [`Error::NoComparator`] if it records a user comparator and none is
    /// given or attached; [`Error::InvalidArgument`] for an operator's or
    /// comparator's name of 0 or over 255 bytes; those of
    /// [`create_db`](RwTxn::create_db).
    ///
    /// The options are checked against a new database after it is
    /// created: an error from them (an operator's name over 255 bytes,
    /// say) leaves the new database created, in a transaction that stays
    /// usable. Abort the transaction to undo it.
    pub fn create_db_with(&mut self, name: Option<&str>, opts: &DbOptions) -> Result<Database> {
        let db = self.create_inner(name, opts)?;
        self.apply_options(db, opts)?;
        self.tree_ord(db)?;
        Ok(db)
    }

    /// [`open_db`](RwTxn::open_db) with options, as
    /// [`create_db_with`](RwTxn::create_db_with) but without creating:
    /// `None` if the database does not exist. Nothing is written to the
    /// file before commit: an operator's name, and the order or duplicate
    /// mode an empty main database takes, are recorded when this
    /// transaction commits.
    ///
    /// # Errors
    ///
    /// [`Error::MergeOperatorMismatch`], [`Error::KeyOrderMismatch`],
    /// [`Error::DupModeMismatch`], [`Error::NoComparator`] and
    /// [`Error::InvalidArgument`] as for
    /// [`create_db_with`](RwTxn::create_db_with); [`Error::DbsFull`] if
    /// the name is new to this `Env` and it has handed out all its
    /// handles; [`Error::Corrupted`] if the catalog is damaged. Each leaves
    /// the transaction usable; an operator or comparator attached before
    /// the error stays attached.
    pub fn open_db_with(
        &mut self,
        name: Option<&str>,
        opts: &DbOptions,
    ) -> Result<Option<Database>> {
        let Some(db) = self.open_inner(name)? else {
            return Ok(None);
        };
        self.apply_options(db, opts)?;
        self.tree_ord(db)?;
        Ok(Some(db))
    }

    /// Checks `opts` against what the catalog records for `db`, attaches
    /// the comparator and the merge operator, and records the operator's
    /// name if none is (and the order of an empty main database).
    fn apply_options(&mut self, db: Database, opts: &DbOptions) -> Result<()> {
        if let Some(o) = &opts.order {
            self.apply_order(db, o)?;
        }
        if opts.dups.is_some() {
            self.apply_dups(db, opts)?;
        }
        let Some(op) = &opts.merge else {
            return Ok(());
        };
        let env = self.env;
        let must_record = self.check_recorded(db, op.as_ref())?;
        env.registry.attach(db, op)?;
        if must_record {
            self.record_operator(db, op.name())?;
        }
        Ok(())
    }

    /// Checks the order `o` against `db`'s, attaches its comparator, and
    /// gives it to an empty main database that has none yet.
    fn apply_order(&mut self, db: Database, o: &KeyOrder) -> Result<()> {
        let env = self.env;
        let name = env.registry.name(db)?;
        let rec = self.tree(db)?;
        let recorded = self.named(db)?.comparator.clone();
        let adopt = adoptable(db, &rec, recorded.as_deref());
        if !adopt {
            check_order(name, &rec, recorded.as_deref(), o)?;
        }
        let ord = o.as_order();
        if let Some(c) = ord.comparator_name() {
            order::check_name(c)?;
        }
        if let KeyOrder::Custom(c) = o {
            env.registry.attach_comparator(db, c)?;
        }
        if adopt && ord.code() != order::CODE_BYTEWISE {
            self.w.main.flags = (self.w.main.flags & !ORDER_MASK) | ord.code();
            self.w.main_changed = true;
            if let Some(c) = ord.comparator_name() {
                let n = self.named(db)?;
                n.comparator = Some(c.into());
                n.exists = true;
                n.dirty = true;
            }
        }
        Ok(())
    }

    /// Checks the duplicate mode `flags` against `db`'s, and gives it to
    /// an empty main database that has none yet.
    fn apply_dups(&mut self, db: Database, opts: &DbOptions) -> Result<()> {
        use crate::page::record::DUP_MASK;
        let flags = opts.dup_flags()?;
        let given = opts.dup_comparator_name();
        if let Some((KeyOrder::Custom(c), _)) = &opts.dups {
            order::check_name(c.name())?;
            self.env.registry.attach_dup_comparator(db, c)?;
        }
        let rec = self.tree(db)?;
        let recorded = rec.flags & DUP_MASK;
        let recorded_name = self.named(db)?.dup_comparator.clone();
        if recorded == flags && recorded_name.as_deref() == given {
            return Ok(());
        }
        if db.dbi == 0 && rec.root == 0 && recorded == 0 {
            self.w.main.flags = (self.w.main.flags & !DUP_MASK) | flags;
            self.w.main_changed = true;
            if let Some(c) = given {
                let n = self.named(db)?;
                n.dup_comparator = Some(c.into());
                n.exists = true;
                n.dirty = true;
            }
            return Ok(());
        }
        Err(Error::DupModeMismatch {
            db: self.env.registry.name(db)?.unwrap_or_default().into(),
            recorded: describe_dups(recorded, recorded_name.as_deref()),
            given: describe_dups(flags, given),
        })
    }

    /// Whether `db` has no operator recorded yet; `MergeOperatorMismatch`
    /// if it has one of another name than `op`'s.
    fn check_recorded(&mut self, db: Database, op: &dyn MergeOperator) -> Result<bool> {
        let name = self.env.registry.name(db)?;
        let recorded = self.named(db)?.merge.as_deref();
        check_operator(name, recorded, op)?;
        Ok(recorded.is_none())
    }

    /// Records `op_name` as `db`'s merge operator, written to the catalog
    /// at commit (for the main database, as the entry under the empty name).
    pub(crate) fn record_operator_name(&mut self, db: Database, op_name: &str) -> Result<()> {
        self.record_operator(db, op_name)
    }

    fn record_operator(&mut self, db: Database, op_name: &str) -> Result<()> {
        crate::merge::check_name(op_name)?;
        let main = db.dbi == 0;
        let n = self.named(db)?;
        if !n.exists && !main {
            return Ok(());
        }
        n.merge = Some(op_name.into());
        n.exists = true;
        n.dirty = true;
        Ok(())
    }

    /// Merges `operand` into `key` of `db` with the database's merge
    /// operator (RocksDB's `Merge`), in one descent of the tree: the
    /// operator gets the stored value (or `None`) and the operand, and its
    /// result replaces the value at once, visible to this transaction's
    /// reads and atomic with its commit. A result equal to the stored value
    /// writes nothing.
    ///
    /// Merge is defined on databases with one value per key: on a DUPSORT
    /// database it is [`Error::WrongDupMode`] (a merge there could mean a
    /// new value or a change of one, and neither is what RocksDB's merge
    /// means).
    ///
    /// # Errors
    ///
    /// Each of these leaves the transaction as it was:
    /// [`Error::NoMergeOperator`] if none is attached to the handle;
    /// [`Error::MergeOperatorMismatch`] if another process recorded another
    /// operator for the database since it was opened; [`Error::Merge`] if
    /// the operator refuses; [`Error::WrongDupMode`] on a DUPSORT database;
    /// [`Error::KeyTooLarge`]; [`Error::BadKeySize`] for a key of the wrong
    /// length for an integer order; [`Error::ValueTooLarge`] for a result
    /// over [`Env::max_value_size`]; [`Error::UpperBoundReached`];
    /// [`Error::DbNotFound`]; [`Error::NoComparator`] or
    /// [`Error::KeyOrderMismatch`] for a user comparator not attached. And:
    /// [`Error::BadTxn`] once an earlier failure broke the transaction;
    /// [`Error::Corrupted`] for a damaged page on the path, and in
    /// write-map mode [`Error::DiskFull`] or [`Error::Io`] when the file
    /// grows: these three break the transaction (its later writes and its
    /// commit give `BadTxn`). Every other error leaves the transaction as
    /// it was ([`Error::leaves_txn_usable`]).
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
    /// As [`merge`](RwTxn::merge), and [`Error::InvalidArgument`] for an
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

    fn put_catalog(&mut self, name: &str, rec: &DbRecord) -> Result<()> {
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
    /// [`Error::KeyTooLarge`] (over [`Env::max_key_size`]; in a DUPSORT
    /// database over 52 bytes less); [`Error::ValueTooLarge`] (over
    /// [`Env::max_value_size`]; in a DUPSORT database over what fits with
    /// the key in one leaf node, at most `max_key_size`);
    /// [`Error::BadKeySize`] (a database of integer keys);
    /// [`Error::BadValueSize`] (a `DUPFIXED` database or integer
    /// duplicates); [`Error::UpperBoundReached`]; [`Error::DbNotFound`];
    /// [`Error::NoComparator`], [`Error::KeyOrderMismatch`] or
    /// [`Error::DupModeMismatch`] for a user comparator not attached;
    /// [`Error::InvalidArgument`] for a handle this environment never
    /// handed out. And:
    /// [`Error::BadTxn`] once an earlier failure broke the transaction;
    /// [`Error::Corrupted`] for a damaged page on the path, and in
    /// write-map mode [`Error::DiskFull`] or [`Error::Io`] when the file
    /// grows: these three break the transaction (its later writes and its
    /// commit give `BadTxn`). Every other error leaves the transaction as
    /// it was ([`Error::leaves_txn_usable`]).
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
    /// [`Error::DbNotFound`]; [`Error::NoComparator`],
    /// [`Error::KeyOrderMismatch`] or [`Error::DupModeMismatch`] for a
    /// user comparator not attached; [`Error::InvalidArgument`] for a
    /// handle this environment never handed out;
    /// [`Error::UpperBoundReached`] (a delete writes new copies of the
    /// pages on its path, and reserves them first). And:
    /// [`Error::BadTxn`] once an earlier failure broke the transaction;
    /// [`Error::Corrupted`] for a damaged page on the path, and in
    /// write-map mode [`Error::DiskFull`] or [`Error::Io`] when the file
    /// grows: these three break the transaction (its later writes and its
    /// commit give `BadTxn`). Every other error leaves the transaction as
    /// it was ([`Error::leaves_txn_usable`]).
    pub fn delete(&mut self, db: Database, key: &[u8]) -> Result<bool> {
        if key.len() > self.env.layout.max_key {
            // No key that long is stored, but the errors of any other
            // delete still apply (found by the api_ops fuzz target).
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
    /// [`Error::DbNotFound`] and [`Error::InvalidArgument`] (an unknown
    /// handle) leave the transaction as it was; no comparator is needed.
    /// [`Error::BadTxn`] once an earlier failure broke the transaction;
    /// [`Error::Corrupted`] for a damaged page of the tree, which breaks
    /// it.
    pub fn clear_db(&mut self, db: Database) -> Result<()> {
        self.change(db, |t, _| t.free_tree())
    }

    /// Deletes the named database `db` and its entries (LMDB's
    /// `mdb_drop(.., 1)`); later use of the handle gives
    /// [`Error::DbNotFound`] until it is created again. On the main
    /// database this is [`clear_db`](RwTxn::clear_db).
    ///
    /// # Errors
    ///
    /// Those of [`clear_db`](RwTxn::clear_db), which runs first; then
    /// removing the name from the catalog can give
    /// [`Error::UpperBoundReached`], [`Error::Corrupted`], or in write-map
    /// mode [`Error::DiskFull`] or [`Error::Io`]. The database is emptied
    /// by then, so any error of this second step breaks the transaction,
    /// `UpperBoundReached` included (the one exception to
    /// [`Error::leaves_txn_usable`]): abort it.
    pub fn drop_db(&mut self, db: Database) -> Result<()> {
        self.clear_db(db)?;
        let Some(name) = self.env.registry.name(db)? else {
            return Ok(());
        };
        let mut cat = self.w.catalog;
        let r = self
            .w
            .tree(&mut cat, Order::Bytewise)
            .delete(name.as_bytes());
        match &r {
            Ok(_) => self.w.catalog = cat,
            // The database is already emptied: whatever the error, the
            // transaction no longer matches any state the caller asked for.
            Err(_) => self.broken = true,
        }
        r?;
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
    /// [`Error::BadTxn`] if an earlier operation broke the transaction;
    /// [`Error::UpperBoundReached`] if the catalog entries or the list of
    /// freed pages need pages past the upper bound; [`Error::DiskFull`] or
    /// [`Error::Io`] from growing, writing or syncing the file (after a
    /// failed `fdatasync` every later write of the environment gives
    /// [`Error::SyncFailed`] until it is opened again); [`Error::Corrupted`]
    /// if a page the commit updates is damaged. Whatever the error, the
    /// transaction has ended: nothing of it is visible or durable, and the
    /// last commit stays as it was.
    pub fn commit(mut self) -> Result<()> {
        if self.broken {
            return Err(Error::BadTxn);
        }
        // Only a child leaked with `mem::forget` leaves a checkpoint: its
        // changes stay, as if it had committed.
        self.w.drop_checkpoints();
        let r = commit::commit(self.env, &mut self.w);
        self.finish();
        r
    }

    /// Discards every change (also done when the transaction is dropped).
    pub fn abort(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        if !self.done {
            self.done = true;
            self.w.reset();
            // In a forked child the writer lock is the parent's.
            if !self.env.forked() {
                self.env.lock.unlock_writer();
            }
        }
    }
}

impl Drop for RwTxn<'_> {
    fn drop(&mut self) {
        self.finish();
    }
}
