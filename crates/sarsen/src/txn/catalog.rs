//! Named databases: catalog lookups shared by both kinds of transaction,
//! the checks of recorded settings (key order, duplicate mode, merge
//! operator) against a handle's, and opening and creating databases in a
//! write transaction.

use super::{dup, RwTxn};
use crate::btree;
use crate::db::{check_name, Database, DbOptions};
use crate::error::{Error, Result};
use crate::merge::MergeOperator;
use crate::order::{self, KeyOrder, Order, ORDER_MASK};
use crate::page::{CatalogEntry, DbRecord, MAX_VALUE};
use crate::shared::Shared;
use crate::store::AnySource;
use crate::writer::NamedDb;

/// The value of `key` in the tree `rec`: in a DUPSORT tree, its first.
#[inline]
pub(super) fn get_in<'a, S: crate::store::Source<'a>>(
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
pub(super) fn estimate<'a, S: crate::store::Source<'a>>(
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
pub(super) fn lookup<'a, S: crate::store::Source<'a>>(
    s: S,
    cat: &DbRecord,
    name: &str,
) -> Result<DbRecord> {
    match lookup_entry(s, cat, name)? {
        Some(e) => Ok(e.rec),
        None => Err(Error::DbNotFound { name: name.into() }),
    }
}

/// The catalog entry of `name` (the empty name: the main database's
/// settings), or `None`.
pub(super) fn lookup_entry<'a, S: crate::store::Source<'a>>(
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
pub(super) fn check_operator(
    db: Option<&str>,
    recorded: Option<&str>,
    op: &dyn MergeOperator,
) -> Result<()> {
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
pub(super) fn resolve_order<'e, 'r>(
    env: &'e Shared,
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

/// Whether the main database `db` takes the order `given` by the first
/// writer that gives one: it is empty and has no comparator, and it is
/// recorded bytewise (any order is taken) or with integer keys of one width
/// and `given` is an integer order too (LMDB's `MDB_INTEGERKEY` compares
/// integers of the size it is given, and an empty tree reads alike in any
/// order). Asking for another kind of order than a recorded integer one is
/// a `KeyOrderMismatch`, as for any database.
pub(super) fn adoptable(
    db: Database,
    rec: &DbRecord,
    comparator: Option<&str>,
    given: &KeyOrder,
) -> bool {
    let ints = |c: u16| matches!(c, order::CODE_U32 | order::CODE_U64);
    let code = rec.flags & ORDER_MASK;
    let takes = code == order::CODE_BYTEWISE || (ints(code) && ints(given.as_order().code()));
    db.dbi == 0 && rec.root == 0 && takes && comparator.is_none()
}

/// `KeyOrderMismatch` unless `given` is the order recorded in `rec` (and
/// the comparator name `comparator`).
pub(super) fn check_order(
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

/// Checks the duplicate mode of `opts` against the one `rec` records
/// (`recorded_name`: its comparator of values), and attaches a user
/// comparator of values to `db`'s handle. An empty main database with no
/// mode recorded passes in any mode (it reads alike; a write transaction
/// then records the given one), and so does one recorded with integer
/// values of one width given the same mode with the other width (LMDB's
/// `MDB_INTEGERDUP` compares integers of the size it is given; as
/// [`adoptable`] for keys).
pub(super) fn check_dups(
    env: &Shared,
    db: Database,
    rec: &DbRecord,
    recorded_name: Option<&str>,
    opts: &DbOptions,
) -> Result<()> {
    use crate::page::record::{DUP_MASK, DUP_ORDER_SHIFT};
    let flags = opts.dup_flags()?;
    let given = opts.dup_comparator_name();
    let recorded = rec.flags & DUP_MASK;
    let int = |f: u16| {
        matches!(
            (f >> DUP_ORDER_SHIFT) & 7,
            order::CODE_U32 | order::CODE_U64
        )
    };
    let order_bits = 7 << DUP_ORDER_SHIFT;
    let other_width = int(recorded)
        && int(flags)
        && recorded & !order_bits == flags & !order_bits
        && recorded_name.is_none();
    let empty_main = db.dbi == 0 && rec.root == 0 && (recorded == 0 || other_width);
    if (recorded != flags || recorded_name != given) && !empty_main {
        return Err(Error::DupModeMismatch {
            db: env.registry.name(db)?.unwrap_or_default().into(),
            recorded: describe_dups(recorded, recorded_name),
            given: describe_dups(flags, given),
        });
    }
    if let Some((KeyOrder::Custom(c), _)) = &opts.dups {
        order::check_name(c.name())?;
        env.registry.attach_dup_comparator(db, c)?;
    }
    Ok(())
}

/// How errors name the duplicate mode in record flags `f`.
pub(super) fn describe_dups(f: u16, comparator: Option<&str>) -> String {
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
pub(super) fn key_order_of(env: &Shared, db: Database, ord: Order<'_>) -> KeyOrder {
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
pub(super) fn check_sizes(env: &Shared, key: &[u8], value: &[u8]) -> Result<()> {
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

pub(super) fn check_key(ord: Order<'_>, key: &[u8]) -> Result<()> {
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
pub(super) fn list(s: AnySource<'_>, cat: DbRecord) -> Result<Vec<String>> {
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

impl<'env> RwTxn<'env> {
    /// The handle of named database `name`, or `None` if it does not exist.
    /// `None` as the name gives the main database.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a name of 0 or more than
    /// [`Env::max_key_size`](crate::Env::max_key_size) bytes; [`Error::DbsFull`] if the name is new
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
    pub(super) fn open_inner(&mut self, name: Option<&str>) -> Result<Option<Database>> {
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
    /// [`Env::max_key_size`](crate::Env::max_key_size) bytes; [`Error::DbsFull`] if the name is new
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
    pub(super) fn create_inner(
        &mut self,
        name: Option<&str>,
        opts: &DbOptions,
    ) -> Result<Database> {
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
    pub(super) fn apply_options(&mut self, db: Database, opts: &DbOptions) -> Result<()> {
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
    pub(super) fn apply_order(&mut self, db: Database, o: &KeyOrder) -> Result<()> {
        let env = self.env;
        let name = env.registry.name(db)?;
        let rec = self.tree(db)?;
        let recorded = self.named(db)?.comparator.clone();
        let adopt = adoptable(db, &rec, recorded.as_deref(), o);
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
        if adopt && ord.code() != rec.flags & ORDER_MASK {
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

    /// Checks the duplicate mode of `opts` against `db`'s and attaches a
    /// comparator of values ([`check_dups`]); an empty main database with
    /// no mode recorded takes the given one, and one recorded with integer
    /// values the other width.
    pub(super) fn apply_dups(&mut self, db: Database, opts: &DbOptions) -> Result<()> {
        use crate::page::record::DUP_MASK;
        let rec = self.tree(db)?;
        let recorded_name = self.named(db)?.dup_comparator.clone();
        check_dups(self.env, db, &rec, recorded_name.as_deref(), opts)?;
        let flags = opts.dup_flags()?;
        let given = opts.dup_comparator_name();
        if rec.flags & DUP_MASK == flags && recorded_name.as_deref() == given {
            return Ok(());
        }
        // Only an empty main database with no mode recorded, or with
        // integer values of the other width, gets here.
        self.w.main.flags = (self.w.main.flags & !DUP_MASK) | flags;
        self.w.main_changed = true;
        if let Some(c) = given {
            let n = self.named(db)?;
            n.dup_comparator = Some(c.into());
            n.exists = true;
            n.dirty = true;
        }
        Ok(())
    }

    /// Whether `db` has no operator recorded yet; `MergeOperatorMismatch`
    /// if it has one of another name than `op`'s.
    pub(super) fn check_recorded(&mut self, db: Database, op: &dyn MergeOperator) -> Result<bool> {
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

    pub(super) fn record_operator(&mut self, db: Database, op_name: &str) -> Result<()> {
        crate::db::check_operator_name(op_name)?;
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
}
