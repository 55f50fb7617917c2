//! Database handles, the registry of names, and statistics.
//!
//! The catalog tree maps each named database's name (its UTF-8 bytes) to a
//! 64-byte [`DbRecord`](crate::page::DbRecord) holding its root and counts
//! (LMDB keeps these in its main database; Sarsen keeps them in a separate
//! catalog, so the unnamed main database holds only user keys).

use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::{Error, Result};
use crate::merge::MergeOperator;
use crate::order::{self, Comparator, KeyOrder, Order};
use crate::page::DbRecord;

/// A handle to a database of an environment: the unnamed main database or a
/// named one (LMDB's `MDB_dbi`). Cheap to copy; valid for the life of the
/// [`Env`](crate::Env) that gave it. Keys are ordered bytewise (`memcmp`,
/// a shorter key before its extensions) unless the database was created
/// with another [`KeyOrder`] ([`DbOptions::key_order`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Database {
    pub(crate) dbi: u32,
}

impl Database {
    /// The unnamed main database.
    pub(crate) const MAIN: Database = Database { dbi: 0 };
}

/// How to open a database: what `mdb_dbi_open`'s flags and RocksDB's
/// column-family options say. Given to
/// [`RwTxn::create_db_with`](crate::RwTxn::create_db_with),
/// [`RwTxn::open_db_with`](crate::RwTxn::open_db_with) and
/// [`RoTxn::open_db_with`](crate::RoTxn::open_db_with).
///
/// ```
/// use sarsen::{merge::Uint64Add, DbOptions};
/// # fn main() -> Result<(), sarsen::Error> {
/// # let dir = tempfile::tempdir().unwrap();
/// let env = unsafe { sarsen::Env::open(dir.path())? };
/// let mut w = env.write_txn()?;
/// let hits = w.create_db_with(Some("hits"), &DbOptions::new().merge_operator(Uint64Add))?;
/// w.merge(hits, b"/index.html", &1u64.to_le_bytes())?;
/// w.commit()?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct DbOptions {
    pub(crate) merge: Option<Arc<dyn MergeOperator>>,
    pub(crate) order: Option<KeyOrder>,
    /// The duplicate mode: `Some((order of the values, DUPFIXED))`.
    pub(crate) dups: Option<(KeyOrder, bool)>,
}

impl DbOptions {
    /// No merge operator, no key order required.
    pub fn new() -> DbOptions {
        DbOptions::default()
    }

    /// The order of the database's keys (LMDB's `MDB_REVERSEKEY` and
    /// `MDB_INTEGERKEY` flags of `mdb_dbi_open`, `mdb_set_compare`;
    /// RocksDB's `Options::comparator`). A database created with it
    /// records it; the main database, which always exists, takes it from
    /// the first write transaction that opens it with an order while it is
    /// empty and still bytewise. Opening a database that records another
    /// order (or a comparator of another name) fails with
    /// [`Error::KeyOrderMismatch`].
    ///
    /// Without this option an existing database is opened in the order it
    /// records (libmdbx's `MDBX_DB_ACCEDE`) and a new one is bytewise; a
    /// database that records a user comparator must be opened with it
    /// ([`Error::NoComparator`] otherwise). The comparator is attached to
    /// the handle for the life of the environment, like a merge operator.
    ///
    /// ```
    /// use sarsen::{DbOptions, KeyOrder};
    /// # fn main() -> Result<(), sarsen::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let env = unsafe { sarsen::Env::open(dir.path())? };
    /// let mut w = env.write_txn()?;
    /// let ids = w.create_db_with(Some("ids"), &DbOptions::new().key_order(KeyOrder::U64))?;
    /// for id in [300u64, 2, 70_000] {
    ///     w.put(ids, &id.to_ne_bytes(), b"")?;
    /// }
    /// let first = w.iter(ids)?.next().unwrap()?.0;
    /// assert_eq!(first, &2u64.to_ne_bytes()[..]);
    /// assert!(matches!(w.put(ids, b"abc", b""), Err(sarsen::Error::BadKeySize { len: 3, expected: 8 })));
    /// # Ok(())
    /// # }
    /// ```
    pub fn key_order(mut self, order: KeyOrder) -> DbOptions {
        self.order = Some(order);
        self
    }

    /// Makes the database a multimap (LMDB's `MDB_DUPSORT`): each key
    /// holds a sorted set of values, in `order` (bytewise by default;
    /// [`KeyOrder::ReverseBytewise`] is LMDB's `MDB_REVERSEDUP`,
    /// [`KeyOrder::U32`]/[`KeyOrder::U64`] its `MDB_INTEGERDUP`;
    /// [`KeyOrder::Custom`] a user comparator, LMDB's `mdb_set_dupsort`,
    /// recorded by name and attached to the handle as a key comparator is,
    /// by [`RwTxn::create_db_with`](crate::RwTxn::create_db_with) and
    /// [`RwTxn::open_db_with`](crate::RwTxn::open_db_with) only).
    ///
    /// Recorded when the database is created (for the main database, by
    /// the first write transaction that opens it while it is empty; an
    /// empty main database recorded with `U32` values takes `U64` values
    /// in the same mode and the other way round, as LMDB's
    /// `MDB_INTEGERDUP` compares integers of the size it is given);
    /// opening a database that records another duplicate mode in a write
    /// transaction is
    /// [`Error::DupModeMismatch`](crate::Error::DupModeMismatch), and
    /// opening without this option accepts the recorded one.
    ///
    /// In a DUPSORT database [`put`](crate::RwTxn::put) adds a value to
    /// its key's set (a pair already there is left alone),
    /// [`get`](crate::RwTxn::get) returns a key's first value,
    /// [`delete`](crate::RwTxn::delete) removes a key with all its values
    /// and [`delete_dup`](crate::RwTxn::delete_dup) one pair; cursors and
    /// iterators visit every pair, values in order within each key. A key
    /// is at most [`Env::max_key_size`](crate::Env::max_key_size) − 52
    /// bytes (its node must be able to hold a 64-byte sub-tree record in
    /// place of the 12-byte overflow reference the plain limit allows
    /// for), and a value at most `max_key_size` bytes, with key and value
    /// together fitting in one leaf node.
    ///
    /// ```
    /// use sarsen::{DbOptions, KeyOrder};
    /// # fn main() -> Result<(), sarsen::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let env = unsafe { sarsen::Env::open(dir.path())? };
    /// let mut w = env.write_txn()?;
    /// let tags = w.create_db_with(Some("tags"), &DbOptions::new().dup_sort(KeyOrder::Bytewise))?;
    /// for (k, v) in [("rust", "fast"), ("rust", "safe"), ("c", "fast"), ("rust", "fast")] {
    ///     w.put(tags, k.as_bytes(), v.as_bytes())?;
    /// }
    /// let pairs: Vec<(&[u8], &[u8])> = w.iter(tags)?.collect::<Result<_, _>>()?;
    /// assert_eq!(pairs, [(&b"c"[..], &b"fast"[..]), (b"rust", b"fast"), (b"rust", b"safe")]);
    /// assert_eq!(w.stat(tags)?.entries, 3);
    /// # Ok(())
    /// # }
    /// ```
    pub fn dup_sort(mut self, order: KeyOrder) -> DbOptions {
        let fixed = self.dups.as_ref().is_some_and(|d| d.1);
        self.dups = Some((order, fixed));
        self
    }

    /// Makes the database a multimap whose values of one key all have one
    /// size (LMDB's `MDB_DUPFIXED`, which implies `MDB_DUPSORT`; with
    /// bytewise values unless [`dup_sort`](DbOptions::dup_sort) gives an
    /// order). A key's values are then packed back to back in its node
    /// while they fit, and [`Cursor::get_multiple`](crate::Cursor::get_multiple)
    /// returns them in batches. A value of another size than its key's
    /// others is [`Error::BadValueSize`](crate::Error::BadValueSize).
    pub fn dup_fixed(mut self) -> DbOptions {
        let order = self.dups.take().map_or(KeyOrder::Bytewise, |d| d.0);
        self.dups = Some((order, true));
        self
    }

    /// These options with the duplicate mode `m`.
    pub(crate) fn with_dup_mode(self, m: Option<DupMode>) -> DbOptions {
        match m {
            None => self,
            Some(m) if m.fixed => self.dup_sort(m.order).dup_fixed(),
            Some(m) => self.dup_sort(m.order),
        }
    }

    /// The record flags of the duplicate mode asked for (0 for none).
    pub(crate) fn dup_flags(&self) -> Result<u16> {
        use crate::page::record::{DUPFIXED, DUPSORT, DUP_ORDER_SHIFT};
        let Some((order, fixed)) = &self.dups else {
            return Ok(0);
        };
        let code = order.as_order().code();
        Ok(DUPSORT | if *fixed { DUPFIXED } else { 0 } | code << DUP_ORDER_SHIFT)
    }

    /// The name of the user comparator of duplicate values asked for.
    pub(crate) fn dup_comparator_name(&self) -> Option<&str> {
        match &self.dups {
            Some((KeyOrder::Custom(c), _)) => Some(c.name()),
            _ => None,
        }
    }

    /// Attaches `op` as the database's merge operator (RocksDB's
    /// `Options::merge_operator`): [`RwTxn::merge`](crate::RwTxn::merge)
    /// then works on it. Its name is recorded in the catalog by the first
    /// write transaction that opens the database with it or merges into it;
    /// once recorded, opening with an operator of another name fails with
    /// [`Error::MergeOperatorMismatch`]. Opening without an operator is
    /// always allowed: values are stored merged, so reads and puts need none.
    pub fn merge_operator(self, op: impl MergeOperator) -> DbOptions {
        self.merge_operator_arc(Arc::new(op))
    }

    /// [`merge_operator`](DbOptions::merge_operator) with a shared operator.
    pub fn merge_operator_arc(mut self, op: Arc<dyn MergeOperator>) -> DbOptions {
        self.merge = Some(op);
        self
    }
}

impl fmt::Debug for DbOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DbOptions")
            .field("merge_operator", &self.merge.as_ref().map(|m| m.name()))
            .field("key_order", &self.order)
            .field("dups", &self.dups)
            .finish()
    }
}

/// The duplicate mode of a DUPSORT database (LMDB's `MDB_DUPSORT` flags,
/// as `mdb_dbi_flags` reports them), from
/// [`RoTxn::dup_mode`](crate::RoTxn::dup_mode).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct DupMode {
    /// Order of the values of one key: bytewise, reverse (`MDB_REVERSEDUP`)
    /// or integer (`MDB_INTEGERDUP`).
    pub order: KeyOrder,
    /// The values of one key all have one size (`MDB_DUPFIXED`).
    pub fixed: bool,
}

impl DupMode {
    /// The mode in record flags `f`, or `None` for unique keys; `custom`
    /// is the comparator of values, for a record that says it has one.
    pub(crate) fn of(f: u16, custom: Option<&Arc<dyn Comparator>>) -> Option<DupMode> {
        use crate::page::record::{DUPFIXED, DUPSORT, DUP_ORDER_SHIFT};
        if f & DUPSORT == 0 {
            return None;
        }
        let order = match ((f >> DUP_ORDER_SHIFT) & 7, custom) {
            (order::CODE_REVERSE, _) => KeyOrder::ReverseBytewise,
            (order::CODE_U32, _) => KeyOrder::U32,
            (order::CODE_U64, _) => KeyOrder::U64,
            (order::CODE_CUSTOM, Some(c)) => KeyOrder::Custom(Arc::clone(c)),
            _ => KeyOrder::Bytewise,
        };
        Some(DupMode {
            order,
            fixed: f & DUPFIXED != 0,
        })
    }
}

/// Statistics of one database (LMDB's `MDB_stat`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stat {
    /// Page size, bytes.
    pub page_size: u32,
    /// Height of the B+tree: 0 when empty, 1 when the root is a leaf.
    pub depth: u32,
    /// Branch (internal) pages.
    pub branch_pages: u64,
    /// Leaf pages.
    pub leaf_pages: u64,
    /// Overflow pages (values too large for a leaf node).
    pub overflow_pages: u64,
    /// Key/value pairs (in a DUPSORT database, every value of every key;
    /// its page counts include the duplicate sub-trees, as LMDB's).
    pub entries: u64,
}

impl Stat {
    pub(crate) fn from_record(r: &DbRecord, page_size: u32) -> Stat {
        Stat {
            page_size,
            depth: u32::from(r.depth),
            branch_pages: r.branch_pages,
            leaf_pages: r.leaf_pages,
            overflow_pages: r.overflow_pages,
            entries: r.entries,
        }
    }
}

/// Names of the databases handed out by an environment, by handle index,
/// and the merge operators and comparators attached to them. Append-only
/// and lock-free to read, so resolving a handle costs no lock.
pub(crate) struct Registry {
    names: Box<[OnceLock<Box<str>>]>,
    operators: Box<[OnceLock<Arc<dyn MergeOperator>>]>,
    comparators: Box<[OnceLock<Arc<dyn Comparator>>]>,
    dup_comparators: Box<[OnceLock<Arc<dyn Comparator>>]>,
    len: AtomicU32,
    add: Mutex<()>,
}

impl Registry {
    /// A registry for up to `max` named databases (plus the main one).
    pub(crate) fn new(max: u32) -> Registry {
        Registry {
            names: (0..=max).map(|_| OnceLock::new()).collect(),
            operators: (0..=max).map(|_| OnceLock::new()).collect(),
            comparators: (0..=max).map(|_| OnceLock::new()).collect(),
            dup_comparators: (0..=max).map(|_| OnceLock::new()).collect(),
            len: AtomicU32::new(1),
            add: Mutex::new(()),
        }
    }

    /// The handle for `name`, registering it on first use.
    pub(crate) fn handle(&self, name: &str) -> Result<Database> {
        if let Some(db) = self.find(name) {
            return Ok(db);
        }
        let _g = self.add.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(db) = self.find(name) {
            return Ok(db);
        }
        let i = self.len.load(Ordering::Acquire);
        if i as usize >= self.names.len() {
            return Err(Error::DbsFull {
                max: self.names.len() as u32 - 1,
            });
        }
        let _ = self.names[i as usize].set(name.into());
        self.len.store(i + 1, Ordering::Release);
        Ok(Database { dbi: i })
    }

    /// The handle of `name` if it has one (registers nothing).
    pub(crate) fn find(&self, name: &str) -> Option<Database> {
        let n = self.len.load(Ordering::Acquire);
        (1..n)
            .find(|&i| self.names[i as usize].get().is_some_and(|s| &**s == name))
            .map(|dbi| Database { dbi })
    }

    /// The name of a named database handle; `None` for the main database.
    pub(crate) fn name(&self, db: Database) -> Result<Option<&str>> {
        if db.dbi == 0 {
            return Ok(None);
        }
        self.names
            .get(db.dbi as usize)
            .and_then(|n| n.get())
            .map(|s| Some(&**s))
            .ok_or_else(|| Error::InvalidArgument(format!("unknown database handle {}", db.dbi)))
    }
}

impl Registry {
    /// Attaches `op` to `db` for the life of the environment. Attaching an
    /// operator of the same name again is a no-op.
    ///
    /// Errors: [`Error::MergeOperatorMismatch`] if another operator is
    /// attached; [`Error::InvalidArgument`] for a name of 0 or over 255 bytes.
    pub(crate) fn attach(&self, db: Database, op: &Arc<dyn MergeOperator>) -> Result<()> {
        check_operator_name(op.name())?;
        let slot = self
            .operators
            .get(db.dbi as usize)
            .ok_or_else(|| Error::InvalidArgument(format!("unknown database handle {}", db.dbi)))?;
        let have = slot.get_or_init(|| Arc::clone(op));
        if have.name() != op.name() {
            return Err(Error::MergeOperatorMismatch {
                db: self.name(db)?.unwrap_or_default().into(),
                recorded: have.name().into(),
                given: op.name().into(),
            });
        }
        Ok(())
    }

    /// The merge operator attached to `db`, if any.
    #[inline]
    pub(crate) fn operator(&self, db: Database) -> Option<&Arc<dyn MergeOperator>> {
        self.operators.get(db.dbi as usize).and_then(OnceLock::get)
    }
}

impl Registry {
    /// Attaches the user comparator `c` to `db` for the life of the
    /// environment; attaching one of the same name again is a no-op.
    ///
    /// Errors: [`Error::KeyOrderMismatch`] if one of another name is
    /// attached; [`Error::InvalidArgument`] for a name of 0 or over 255 bytes.
    pub(crate) fn attach_comparator(&self, db: Database, c: &Arc<dyn Comparator>) -> Result<()> {
        order::check_name(c.name())?;
        let slot = self
            .comparators
            .get(db.dbi as usize)
            .ok_or_else(|| Error::InvalidArgument(format!("unknown database handle {}", db.dbi)))?;
        let have = slot.get_or_init(|| Arc::clone(c));
        if have.name() != c.name() {
            return Err(Error::KeyOrderMismatch {
                db: self.name(db)?.unwrap_or_default().into(),
                recorded: order::describe(order::CODE_CUSTOM, Some(have.name())),
                given: order::describe(order::CODE_CUSTOM, Some(c.name())),
            });
        }
        Ok(())
    }

    /// The comparator attached to `db`, if any.
    #[inline]
    pub(crate) fn comparator(&self, db: Database) -> Option<&Arc<dyn Comparator>> {
        self.comparators
            .get(db.dbi as usize)
            .and_then(OnceLock::get)
    }

    /// The user order of `db`, whose record says it has one, named
    /// `recorded` in the catalog: the attached comparator, which must have
    /// that name.
    pub(crate) fn custom_order(&self, db: Database, recorded: Option<&str>) -> Result<Order<'_>> {
        let dbname = || -> Result<String> { Ok(self.name(db)?.unwrap_or_default().into()) };
        let Some(c) = self.comparator(db) else {
            return Err(Error::NoComparator {
                db: dbname()?,
                name: recorded.unwrap_or_default().into(),
            });
        };
        if recorded != Some(c.name()) {
            return Err(Error::KeyOrderMismatch {
                db: dbname()?,
                recorded: order::describe(order::CODE_CUSTOM, recorded),
                given: order::describe(order::CODE_CUSTOM, Some(c.name())),
            });
        }
        Ok(Order::Custom(&**c))
    }
}

impl Registry {
    /// Attaches `c` as the comparator of `db`'s duplicate values, for the
    /// life of the environment; one of the same name again is a no-op.
    ///
    /// Errors: [`Error::DupModeMismatch`] if one of another name is attached.
    pub(crate) fn attach_dup_comparator(
        &self,
        db: Database,
        c: &Arc<dyn Comparator>,
    ) -> Result<()> {
        let slot = self
            .dup_comparators
            .get(db.dbi as usize)
            .ok_or_else(|| Error::InvalidArgument(format!("unknown database handle {}", db.dbi)))?;
        let have = slot.get_or_init(|| Arc::clone(c));
        if have.name() != c.name() {
            return Err(Error::DupModeMismatch {
                db: self.name(db)?.unwrap_or_default().into(),
                recorded: order::describe(order::CODE_CUSTOM, Some(have.name())),
                given: order::describe(order::CODE_CUSTOM, Some(c.name())),
            });
        }
        Ok(())
    }

    /// The comparator of `db`'s duplicate values attached, if any.
    pub(crate) fn dup_comparator(&self, db: Database) -> Option<&Arc<dyn Comparator>> {
        self.dup_comparators
            .get(db.dbi as usize)
            .and_then(OnceLock::get)
    }

    /// The order of `db`'s duplicate values, whose record says a user
    /// comparator named `recorded` sorts them: the attached one, which must
    /// have that name.
    ///
    /// Errors: [`Error::NoComparator`], [`Error::DupModeMismatch`].
    pub(crate) fn dup_order(&self, db: Database, recorded: Option<&str>) -> Result<Order<'_>> {
        let dbname = || -> Result<String> { Ok(self.name(db)?.unwrap_or_default().into()) };
        let c = self
            .dup_comparators
            .get(db.dbi as usize)
            .and_then(OnceLock::get);
        let Some(c) = c else {
            return Err(Error::NoComparator {
                db: dbname()?,
                name: recorded.unwrap_or_default().into(),
            });
        };
        if recorded != Some(c.name()) {
            return Err(Error::DupModeMismatch {
                db: dbname()?,
                recorded: order::describe(order::CODE_CUSTOM, recorded),
                given: order::describe(order::CODE_CUSTOM, Some(c.name())),
            });
        }
        Ok(Order::Custom(&**c))
    }
}

/// Checks a database name: 1 to `max` bytes.
pub(crate) fn check_name(name: &str, max: usize) -> Result<()> {
    if name.is_empty() || name.len() > max {
        return Err(Error::InvalidArgument(format!(
            "database name must be 1..={max} bytes, got {}",
            name.len()
        )));
    }
    Ok(())
}

/// Checks an operator's name before it is recorded.
pub(crate) fn check_operator_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > crate::merge::MAX_MERGE_NAME {
        return Err(Error::InvalidArgument(format!(
            "merge operator name must be 1..={} bytes, got {}",
            crate::merge::MAX_MERGE_NAME,
            name.len()
        )));
    }
    Ok(())
}
