//! Read transactions: a snapshot held by a reader slot ([`RoTxn`]), and a
//! reset one that keeps its slot for renewal ([`InactiveRoTxn`]).

use std::cell::Cell;
use std::ops::RangeBounds;
use std::sync::atomic::{AtomicU64, Ordering};

use super::catalog::{
    adoptable, check_dups, check_operator, check_order, estimate, get_in, key_order_of, list,
    lookup, lookup_entry, resolve_order,
};
use crate::btree;
use crate::cursor::{Cursor, Iter};
use crate::db::{check_name, Database, DbOptions, Stat};
use crate::error::{Error, Result};
use crate::order::{KeyOrder, Order, ORDER_MASK};
use crate::page::DbRecord;
use crate::shared::Shared;
use crate::store::{AnySource, MapSource};

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
    pub(super) env: &'env Shared,
    pub(super) slot: u32,
    pub(super) txnid: u64,
    pub(super) src: MapSource<'env>,
    pub(super) catalog: DbRecord,
    pub(super) main: DbRecord,
    pub(super) gc: DbRecord,
}

impl<'env> RoTxn<'env> {
    pub(crate) fn begin(env: &'env Shared) -> Result<RoTxn<'env>> {
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
        RoTxn::on_slot::<true>(env, slot)
    }

    /// A snapshot of the newest commit, read through the busy slot `slot`
    /// (which may hold an older snapshot's txnid: a renewal in place). On
    /// error the slot is released if `RELEASE`, else left busy with txnid
    /// 0 (idle). (A constant: a run-time flag cost `read_txn` five
    /// instructions.)
    pub(super) fn on_slot<const RELEASE: bool>(
        env: &'env Shared,
        slot: u32,
    ) -> Result<RoTxn<'env>> {
        let lock = &env.lock;
        // Publish the snapshot's txnid, then check it is still the newest:
        // a writer that starts after the check sees the slot (SeqCst on both
        // sides), one that committed before it makes us retry. Storing over
        // an older snapshot's txnid is as safe as over 0: the slot holds the
        // older one or this one, whose pages are read only once the check
        // passed.
        let p = loop {
            let p = match env.published() {
                Ok(p) => p,
                Err(e) => {
                    if RELEASE {
                        lock.release_slot(slot);
                    } else {
                        lock.slot_txnid(slot).store(0, Ordering::SeqCst);
                    }
                    return Err(e);
                }
            };
            // The page count first: a writer that sees the txnid sees it
            // too, and never cuts the file below it.
            lock.slot_next(slot).store(p.next_pgno, Ordering::Release);
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

    /// [`reset`](RoTxn::reset) in place, for a transaction kept in one
    /// place and reused (LMDB's `mdb_txn_reset` of a transaction object
    /// renewed later): the snapshot ends (its pages become reusable) and
    /// the reader slot stays this transaction's, idle. Until
    /// [`renew_in_place`](RoTxn::renew_in_place) the transaction reads as
    /// an empty environment (txnid 0, an empty main database, no named
    /// databases) and reads no page. Nothing read before can outlive the
    /// call (it borrows the transaction mutably).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let env = unsafe { sarsen::Env::open(dir.path()) }.unwrap();
    /// let mut r = env.read_txn()?;
    /// r.reset_in_place();
    /// assert_eq!(r.get(env.main_db(), b"k")?, None);
    /// let mut w = env.write_txn()?;
    /// w.put(env.main_db(), b"k", b"v")?;
    /// w.commit()?;
    /// r.renew_in_place()?; // the newest commit, on the same slot
    /// assert_eq!(r.get(env.main_db(), b"k")?, Some(&b"v"[..]));
    /// # Ok::<(), sarsen::Error>(())
    /// ```
    pub fn reset_in_place(&mut self) {
        if !self.env.forked() {
            self.env
                .lock
                .slot_txnid(self.slot)
                .store(0, Ordering::SeqCst);
        }
        self.empty();
    }

    /// Forgets the snapshot: no record, no page below the limit.
    fn empty(&mut self) {
        self.txnid = 0;
        self.src.limit = 0;
        self.catalog = DbRecord::default();
        self.main = DbRecord::default();
        self.gc = DbRecord::default();
    }

    /// [`InactiveRoTxn::renew`] in place: a snapshot of the newest commit
    /// on this transaction's reader slot, after
    /// [`reset_in_place`](RoTxn::reset_in_place), or in place of the
    /// snapshot it holds (which ends). No slot is claimed and nothing is
    /// allocated.
    ///
    /// # Errors
    ///
    /// [`Error::Forked`](crate::Error::Forked) in a `fork()` child of the
    /// process that began it (the transaction is left as it was);
    /// [`Error::Corrupted`](crate::Error::Corrupted) if the lock file's
    /// published snapshot stays half-written (see
    /// [`Env::read_txn`](crate::Env::read_txn)): the transaction is then
    /// left reset, its slot kept.
    pub fn renew_in_place(&mut self) -> Result<()> {
        self.env.check_fork()?;
        // Through `on_slot`, the path of every read transaction, then moved
        // in: the slot stays ours either way.
        match RoTxn::on_slot::<false>(self.env, self.slot) {
            Ok(t) => {
                // The new transaction's slot is this one's: it must not be
                // released, so `t` is not dropped.
                let t = std::mem::ManuallyDrop::new(t);
                self.txnid = t.txnid;
                self.src = t.src;
                (self.catalog, self.main, self.gc) = (t.catalog, t.main, t.gc);
                Ok(())
            }
            Err(e) => {
                self.empty();
                Err(e)
            }
        }
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
    pub(super) fn tree(&self, db: Database) -> Result<DbRecord> {
        match self.env.registry.name(db)? {
            None => Ok(self.main),
            Some(name) => lookup(self.src, &self.catalog, name),
        }
    }

    /// The tree of `db` in this snapshot and the order of its keys.
    pub(super) fn tree_ord(&self, db: Database) -> Result<(DbRecord, Order<'env>)> {
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
    pub(super) fn dup_order(&self, db: Database, rec: &DbRecord) -> Result<Option<Order<'env>>> {
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
    pub(super) fn order(
        &self,
        db: Database,
        rec: &DbRecord,
        comparator: Option<&str>,
    ) -> Result<Order<'env>> {
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
    /// [`Error::DbNotFound`](crate::Error::DbNotFound) if the named database does not exist in this
    /// snapshot; [`Error::NoComparator`](crate::Error::NoComparator) or [`Error::DupModeMismatch`](crate::Error::DupModeMismatch) if
    /// a user comparator sorts its values and none, or one of another
    /// name, is attached to the handle; [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a
    /// handle this environment never handed out; [`Error::Corrupted`](crate::Error::Corrupted) if
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
    /// [`Error::DbNotFound`](crate::Error::DbNotFound) if the named database `db` does not exist in
    /// this snapshot (never created, or dropped); [`Error::NoComparator`](crate::Error::NoComparator)
    /// or [`Error::KeyOrderMismatch`](crate::Error::KeyOrderMismatch) if a user comparator orders its keys
    /// and none, or one of another name, is attached to the handle;
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a handle this environment never
    /// handed out; [`Error::Corrupted`](crate::Error::Corrupted) if a page read is damaged.
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
    /// [`Error::DbNotFound`](crate::Error::DbNotFound) if the named database `db` does not exist in
    /// this snapshot (never created, or dropped); [`Error::NoComparator`](crate::Error::NoComparator)
    /// or [`Error::KeyOrderMismatch`](crate::Error::KeyOrderMismatch) if a user comparator orders its keys
    /// and none, or one of another name, is attached to the handle;
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a handle this environment never
    /// handed out; [`Error::Corrupted`](crate::Error::Corrupted) if a page read is damaged.
    /// In a DUPSORT database whose values a user comparator sorts, also
    /// [`Error::NoComparator`](crate::Error::NoComparator) or [`Error::DupModeMismatch`](crate::Error::DupModeMismatch) for that
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
        if rec.flags & crate::page::record::DUPSORT == 0 {
            return btree::get(self.src, &rec, ord, key);
        }
        self.get_dup(db, &rec, ord, key)
    }

    /// [`get`](RoTxn::get) in a DUPSORT tree `rec`: out of line, so that
    /// the inlined `get` of a plain tree stays small wherever it is
    /// compiled.
    #[inline(never)]
    fn get_dup(
        &self,
        db: Database,
        rec: &DbRecord,
        ord: Order<'_>,
        key: &[u8],
    ) -> Result<Option<&[u8]>> {
        let dc = self.dup_order(db, rec)?;
        get_in(self.src, rec, ord, dc, key)
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
    /// [`RwTxn::next_sequence`](crate::RwTxn::next_sequence)).
    ///
    /// # Errors
    ///
    /// [`Error::DbNotFound`](crate::Error::DbNotFound) if the named database does not exist in this
    /// snapshot; [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a handle this environment
    /// never handed out; [`Error::Corrupted`](crate::Error::Corrupted) if the catalog is damaged.
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
    /// [`Error::DbNotFound`](crate::Error::DbNotFound) if the named database `db` does not exist in
    /// this snapshot (never created, or dropped); [`Error::NoComparator`](crate::Error::NoComparator)
    /// or [`Error::KeyOrderMismatch`](crate::Error::KeyOrderMismatch) if a user comparator orders its keys
    /// and none, or one of another name, is attached to the handle;
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a handle this environment never
    /// handed out; [`Error::Corrupted`](crate::Error::Corrupted) if a page read is damaged.
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
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a name of 0 or more than
    /// [`Env::max_key_size`](crate::Env::max_key_size) bytes;
    /// [`Error::DbsFull`](crate::Error::DbsFull) if the name is new to this `Env` and it has
    /// handed out [`EnvOptions::max_dbs`](crate::EnvOptions::max_dbs)
    /// handles; [`Error::NoComparator`](crate::Error::NoComparator) or [`Error::KeyOrderMismatch`](crate::Error::KeyOrderMismatch) if
    /// the database records a user comparator and none, or one of another
    /// name, is attached to the handle (give it with
    /// [`open_db_with`](RoTxn::open_db_with)); [`Error::Corrupted`](crate::Error::Corrupted) if the
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
    pub(super) fn open_inner(&self, name: &str) -> Result<Option<Database>> {
        check_name(name, self.env.layout.max_key)?;
        match lookup(self.src, &self.catalog, name) {
            Ok(_) => self.env.registry.handle(name).map(Some),
            Err(Error::DbNotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// [`open_db`](RoTxn::open_db) with options. A merge operator or key
    /// comparator in `opts` is attached to the handle for the life of the
    /// environment (a read transaction records nothing). A duplicate mode
    /// in `opts` ([`DbOptions::dup_sort`], [`DbOptions::dup_fixed`]) is
    /// checked against the recorded one, and a user comparator of values
    /// in it is attached, so a read transaction of a fresh environment can
    /// read a database whose values it sorts (an empty main database with
    /// no duplicate mode recorded reads alike in any mode, and takes the
    /// comparator; one recorded with integer values reads alike with
    /// integers of the other width).
    ///
    /// # Errors
    ///
    /// [`Error::MergeOperatorMismatch`](crate::Error::MergeOperatorMismatch) if the catalog records, or the
    /// handle already has, an operator of another name;
    /// [`Error::KeyOrderMismatch`](crate::Error::KeyOrderMismatch) if the database records another key
    /// order, or the handle already has a comparator of another name;
    /// [`Error::DupModeMismatch`](crate::Error::DupModeMismatch) if it
    /// records another duplicate mode, or the handle already has a
    /// comparator of values of another name;
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for an operator's or comparator's name of
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
            if !adoptable(db, &rec, recorded, o) {
                check_order(name, &rec, recorded, o)?;
            }
            if let KeyOrder::Custom(c) = o {
                self.env.registry.attach_comparator(db, c)?;
            }
        }
        if opts.dups.is_some() {
            let rec = if db.dbi == 0 {
                self.main
            } else {
                entry.map(|e| e.rec).unwrap_or_default()
            };
            check_dups(
                self.env,
                db,
                &rec,
                entry.and_then(|e| e.dup_comparator),
                opts,
            )?;
        }
        self.tree_ord(db)?;
        Ok(Some(db))
    }

    /// Names of the named databases, sorted bytewise.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`](crate::Error::Corrupted) if a catalog page is damaged.
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
    /// exactly one tree or listed free exactly once, in the GC tree or the
    /// inline GC of the snapshot's meta page (no leak, no double use). A
    /// snapshot whose meta page later commits have overwritten is checked
    /// without its inline GC
    /// ([`CheckReport::inline_gc_unread`](crate::CheckReport::inline_gc_unread)). Reads every page of the snapshot, so its cost is the database
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
        let (inline, damage) = match self.inline_gc() {
            Ok(l) => (l, None),
            Err(e @ Error::Corrupted { .. }) => (None, Some(e)),
            Err(e) => return Err(e),
        };
        let trees = crate::check::Trees {
            gc: &self.gc,
            inline: inline.as_ref(),
            catalog: &self.catalog,
            main: &self.main,
        };
        let mut report = crate::check::check(self.src, self.txnid, trees, &self.env.registry);
        if let Some(e) = damage {
            report.push(0, "", e.to_string());
        }
        Ok(report)
    }

    /// The snapshot's page source, txnid, and GC, catalog and main records.
    pub(crate) fn parts(&self) -> (MapSource<'env>, u64, DbRecord, DbRecord, DbRecord) {
        (self.src, self.txnid, self.gc, self.catalog, self.main)
    }

    /// The snapshot's inline GC (the free-page lists its meta page
    /// carries), or `None` once later commits have overwritten that meta.
    pub(crate) fn inline_gc(&self) -> Result<Option<crate::page::inline_gc::InlineGc>> {
        self.env.snapshot_inline_gc(&crate::io::lock::Published {
            txnid: self.txnid,
            next_pgno: self.next_pgno(),
            catalog: self.catalog.to_words(),
            main: self.main.to_words(),
            gc: self.gc.to_words(),
        })
    }

    /// The merge operator name recorded for database `name` (`None`: main).
    pub(crate) fn merge_operator_name(&self, name: Option<&str>) -> Result<Option<String>> {
        let e = lookup_entry(self.src, &self.catalog, name.unwrap_or(""))?;
        Ok(e.and_then(|e| e.merge).map(String::from))
    }

    /// Pages recorded in the GC of this snapshot (its tree and, while its
    /// meta page is still in the file, its inline GC), and the free tail.
    pub(crate) fn gc_pages(&self) -> Result<(u64, u64)> {
        let mut c =
            crate::cursor::RawCursor::new(AnySource::Map(self.src), self.gc, Order::Bytewise);
        let mut pages = Vec::new();
        let mut e = c.first()?;
        while let Some((_, v)) = e {
            pages.extend(v.chunks_exact(4).map(|b| crate::page::rd32(b, 0)));
            e = c.next()?;
        }
        // A damaged meta is the check's to report; the counts go without it.
        if let Ok(Some(l)) = self.inline_gc() {
            pages.extend(l.iter().flat_map(|(_, l)| l.iter().copied()));
        }
        pages.sort_unstable();
        // The free tail: free pages that end the pages in use.
        let mut end = self.next_pgno();
        for &p in pages.iter().rev() {
            if u64::from(p) + 1 != end {
                break;
            }
            end -= 1;
        }
        Ok((pages.len() as u64, self.next_pgno() - end))
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

/// A read transaction after [`RoTxn::reset`](crate::RoTxn::reset): no snapshot, but its reader
/// slot kept (LMDB's reset `MDB_txn`). [`renew`](InactiveRoTxn::renew)
/// starts a snapshot of the newest commit on it; dropping it frees the slot.
pub struct InactiveRoTxn<'env> {
    pub(super) env: &'env Shared,
    pub(super) slot: u32,
}

impl<'env> InactiveRoTxn<'env> {
    /// A snapshot of the newest commit on the kept slot (LMDB's
    /// `mdb_txn_renew`). No slot is claimed: the slot is already this
    /// transaction's.
    ///
    /// # Errors
    ///
    /// [`Error::Forked`](crate::Error::Forked) in a `fork()` child of the process that began
    /// it; [`Error::Corrupted`](crate::Error::Corrupted) if the lock file's published snapshot
    /// stays half-written (see [`Env::read_txn`](crate::Env::read_txn)).
    /// On error the slot is released (idle, still this environment's).
    pub fn renew(self) -> Result<RoTxn<'env>> {
        self.env.check_fork()?;
        let (env, slot) = (self.env, self.slot);
        std::mem::forget(self);
        RoTxn::on_slot::<true>(env, slot)
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
