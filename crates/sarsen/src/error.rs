//! Typed errors. Every fallible call in Sarsen returns [`Result`].
//!
//! The public contract (when each error occurs and what it leaves
//! usable) is documented on [`Error`] and [`Recovery`].

use std::io;

/// The error type of every Sarsen operation.
///
/// # What an error leaves usable
///
/// No error changes what is committed: the last commit stays intact, and
/// durable if it was. What a failed call leaves of its transaction and its
/// environment is public, per variant, as [`Error::recovery`] (a
/// [`Recovery`]) and its short form [`Error::leaves_txn_usable`]:
///
/// - Most errors are found before anything changes. The call did nothing;
///   a write transaction it was made in keeps its earlier writes and can go
///   on and commit ([`Recovery::Continue`]).
/// - A failure of the storage (a damaged page, an OS error, a full disk)
///   in a write operation may come after the operation has changed pages.
///   The transaction is then broken: its later writes and its commit give
///   [`Error::BadTxn`], and it can only be aborted ([`Recovery::AbortTxn`];
///   LMDB's `MDB_BAD_TXN` rule). A failed commit ends its transaction in
///   any case.
/// - After a failed sync of the data file, or in a `fork()` child, the
///   environment itself refuses to go on until it is opened again
///   ([`Recovery::ReopenEnv`]).
///
/// # When each error occurs
///
/// The variants are grouped by the step that first returns them, as bbolt
/// groups its errors (redb splits them into one enum per step instead):
///
/// | step | errors |
/// |---|---|
/// | opening the environment ([`EnvOptions::open`](crate::EnvOptions::open)) | [`Busy`](Error::Busy), [`Incompatible`](Error::Incompatible), [`InvalidArgument`](Error::InvalidArgument), [`Corrupted`](Error::Corrupted), [`Io`](Error::Io), [`DiskFull`](Error::DiskFull) |
/// | beginning a transaction ([`Env::read_txn`](crate::Env::read_txn), [`Env::write_txn`](crate::Env::write_txn)) | [`ReadOnly`](Error::ReadOnly), [`ReadersFull`](Error::ReadersFull), [`SyncFailed`](Error::SyncFailed), [`Forked`](Error::Forked), [`Corrupted`](Error::Corrupted), [`Io`](Error::Io) |
/// | opening a database ([`RwTxn::create_db_with`](crate::RwTxn::create_db_with) and the other `open_db`/`create_db` calls) | [`DbNotFound`](Error::DbNotFound), [`DbsFull`](Error::DbsFull), [`KeyOrderMismatch`](Error::KeyOrderMismatch), [`NoComparator`](Error::NoComparator), [`DupModeMismatch`](Error::DupModeMismatch), [`MergeOperatorMismatch`](Error::MergeOperatorMismatch), [`InvalidArgument`](Error::InvalidArgument) |
/// | an operation in a transaction (`get`, `put`, `merge`, cursors, ...) | [`KeyTooLarge`](Error::KeyTooLarge), [`ValueTooLarge`](Error::ValueTooLarge), [`BadKeySize`](Error::BadKeySize), [`BadValueSize`](Error::BadValueSize), [`KeyNotGreater`](Error::KeyNotGreater), [`WrongDupMode`](Error::WrongDupMode), [`NoMergeOperator`](Error::NoMergeOperator), [`Merge`](Error::Merge), [`InvalidArgument`](Error::InvalidArgument), [`BadTxn`](Error::BadTxn), and the storage errors below |
/// | storage, in an operation or at commit | [`UpperBoundReached`](Error::UpperBoundReached), [`DiskFull`](Error::DiskFull), [`Io`](Error::Io), [`Corrupted`](Error::Corrupted) |
/// | committing ([`RwTxn::commit`](crate::RwTxn::commit)) | [`BadTxn`](Error::BadTxn) and the storage errors |
///
/// Each variant's documentation says when it occurs, what it leaves of the
/// write transaction and of the environment, and what to do.
///
/// The enum is `#[non_exhaustive]`: later versions may add variants.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    // ---- Opening an environment ----
    /// The environment is opened exclusively by another opener, or an
    /// exclusive open found it open elsewhere
    /// ([`EnvOptions::exclusive`](crate::EnvOptions::exclusive); libmdbx's
    /// `MDBX_BUSY`).
    ///
    /// When: [`EnvOptions::open`](crate::EnvOptions::open). Nothing was
    /// opened; environments and transactions already open are untouched
    /// ([`Recovery::Continue`]). Open again once the other opener has
    /// closed it.
    #[error("environment is in use: opened exclusively, or open elsewhere for an exclusive open")]
    Busy,
    /// The data file was made by an incompatible format version or another
    /// program, or the lock file has another format and is held open by a
    /// live process.
    ///
    /// When: [`EnvOptions::open`](crate::EnvOptions::open). Nothing was
    /// opened or written ([`Recovery::Continue`]). Open the file with the
    /// program and version that made it.
    #[error("incompatible file: {0}")]
    Incompatible(String),

    // ---- Beginning a transaction ----
    /// [`Env::write_txn`](crate::Env::write_txn) on an environment opened
    /// read-only ([`EnvOptions::read_only`](crate::EnvOptions::read_only);
    /// LMDB's `EACCES` for `mdb_txn_begin` on an `MDB_RDONLY` environment).
    ///
    /// When: beginning a write transaction. Nothing began; the environment
    /// stays usable for reading ([`Recovery::Continue`]).
    #[error("environment is opened read-only")]
    ReadOnly,
    /// Every reader slot of the lock file is in use (LMDB's
    /// `MDB_READERS_FULL`); `max` is
    /// [`EnvOptions::max_readers`](crate::EnvOptions::max_readers) of the
    /// first opener.
    ///
    /// When: [`Env::read_txn`](crate::Env::read_txn) (and calls that take
    /// a snapshot, such as [`Env::check`](crate::Env::check)), after the
    /// slots of dead processes were freed. Nothing began; other
    /// transactions, a write transaction of this thread included, are
    /// untouched ([`Recovery::Continue`]). End read transactions, or open
    /// the environment anew with more slots once every process has closed
    /// it.
    #[error("all {max} reader slots are in use")]
    ReadersFull {
        /// Number of reader slots.
        max: u32,
    },
    /// An earlier `fdatasync` of the data file failed. Linux may then have
    /// marked the pages it could not write clean, so a later sync would
    /// succeed without writing them (PostgreSQL's "fsyncgate"): writes and
    /// syncs are refused in every process that has the environment open,
    /// until all close it and it is opened again, which verifies the
    /// newest commit against the disk. Reads go on.
    ///
    /// When: [`Env::write_txn`](crate::Env::write_txn) and
    /// [`Env::sync`](crate::Env::sync), after the failed sync was reported
    /// as [`Error::Io`]. The environment can only read
    /// ([`Recovery::ReopenEnv`]): drop every `Env` of it, in every process,
    /// and open it again.
    #[error("an earlier sync of the data file failed; reopen the environment to write again")]
    SyncFailed,
    /// The environment was opened by another process: this process is a
    /// `fork()` child of the one that called [`EnvOptions::open`](crate::EnvOptions::open).
    /// The child shares the parent's lock-file description, so the
    /// writer lock would not exclude it and its reader slots would be the
    /// parent's: the inherited `Env` refuses to begin transactions, sync
    /// or free reader slots, and dropping it (or transactions it inherited)
    /// in the child leaves the parent's locks and slots alone. Open the
    /// environment again in the child (LMDB documents the same rule: an
    /// `MDB_env` is used only by the process that opened it).
    ///
    /// When: [`Env::read_txn`](crate::Env::read_txn),
    /// [`Env::write_txn`](crate::Env::write_txn),
    /// [`InactiveRoTxn::renew`](crate::InactiveRoTxn::renew),
    /// [`Env::sync`](crate::Env::sync),
    /// [`Env::reader_check`](crate::Env::reader_check) and the calls that
    /// begin a snapshot. Transactions begun before the fork are not
    /// checked: drop them in the child unused. The inherited environment
    /// is unusable in the child ([`Recovery::ReopenEnv`]); the parent is
    /// unaffected.
    #[error("environment used in a forked child of the process that opened it; open it again in this process")]
    Forked,

    // ---- Opening a database ----
    /// A named database does not exist: it was never created, or it was
    /// dropped (by [`RwTxn::drop_db`](crate::RwTxn::drop_db), in this
    /// transaction or in the commit this snapshot reads).
    ///
    /// When: any use of the handle of a dropped database. Nothing changed
    /// ([`Recovery::Continue`]); create the database again to use the
    /// handle.
    #[error("database {name:?} not found")]
    DbNotFound {
        /// The database name.
        name: String,
    },
    /// More named databases opened in this environment than
    /// [`EnvOptions::max_dbs`](crate::EnvOptions::max_dbs) (LMDB's
    /// `MDB_DBS_FULL`). Handles are never given back while the `Env`
    /// lives.
    ///
    /// When: opening or creating a database by a name this `Env` has not
    /// handed out before. Nothing changed ([`Recovery::Continue`]); open
    /// the environment with a larger `max_dbs`.
    #[error("too many named databases (limit {max})")]
    DbsFull {
        /// The limit.
        max: u32,
    },
    /// A database was opened with a key order other than the one recorded
    /// for it ([`DbOptions::key_order`](crate::DbOptions::key_order)), or
    /// with a user comparator whose name differs from the recorded one or
    /// from the one attached to its handle earlier (LMDB's
    /// `MDB_INCOMPATIBLE`; RocksDB refuses a column family opened with
    /// another comparator). `db` is empty for the main database.
    ///
    /// When: opening a database with options, and any use of a handle
    /// whose attached comparator's name differs from the recorded one.
    /// Nothing changed ([`Recovery::Continue`]); open with the recorded
    /// order.
    #[error("database {db:?} is ordered by {recorded}, not {given}")]
    KeyOrderMismatch {
        /// The database's name ("" for the main database).
        db: String,
        /// The order recorded (or attached before).
        recorded: String,
        /// The order given now.
        given: String,
    },
    /// A database whose keys (or duplicate values) are in a user
    /// comparator's order was used without that comparator attached to its
    /// handle (give it with
    /// [`DbOptions::key_order`](crate::DbOptions::key_order) or
    /// [`DbOptions::dup_sort`](crate::DbOptions::dup_sort) when opening the
    /// database): its keys cannot be searched without it.
    ///
    /// When: opening the database, or any use of its handle. Nothing
    /// changed ([`Recovery::Continue`]); open it with its comparator.
    #[error("database {db:?} is ordered by comparator {name:?}, which is not attached")]
    NoComparator {
        /// The database's name ("" for the main database).
        db: String,
        /// The comparator's name recorded for the database.
        name: String,
    },
    /// The database records another duplicate mode than the one given
    /// when opening it (LMDB's `MDB_INCOMPATIBLE` for `MDB_DUPSORT`,
    /// `MDB_DUPFIXED`, `MDB_INTEGERDUP`, `MDB_REVERSEDUP`), or its values'
    /// user comparator has another name than the recorded or attached one.
    ///
    /// When: opening a database with options, and any use of a handle
    /// whose attached comparator of values differs from the recorded one.
    /// Nothing changed ([`Recovery::Continue`]); open it with its recorded
    /// mode, or without [`DbOptions::dup_sort`](crate::DbOptions::dup_sort)
    /// to accept it.
    #[error("database {db:?} has duplicate mode {recorded}, opened with {given}")]
    DupModeMismatch {
        /// The database's name (empty for the main database).
        db: String,
        /// The recorded mode.
        recorded: String,
        /// The mode given.
        given: String,
    },
    /// A database was opened with a merge operator whose name differs from
    /// the one recorded for it in the catalog (or attached to its handle
    /// earlier in this environment), as RocksDB refuses a column family
    /// opened with another comparator. `db` is the database's name, empty
    /// for the main database.
    ///
    /// When: opening a database with options, and
    /// [`RwTxn::merge`](crate::RwTxn::merge) when another process recorded
    /// another operator since the handle got its own. Nothing changed
    /// ([`Recovery::Continue`]); open with the recorded operator.
    #[error("database {db:?} has merge operator {recorded:?}, not {given:?}")]
    MergeOperatorMismatch {
        /// The database's name ("" for the main database).
        db: String,
        /// The operator's name recorded in the catalog or attached before.
        recorded: String,
        /// The operator's name given now.
        given: String,
    },

    // ---- An operation in a transaction ----
    /// A key longer than the database takes: over
    /// [`Env::max_key_size`](crate::Env::max_key_size) bytes (2016 at
    /// 4 KiB pages, about half a page as in libmdbx), or in a DUPSORT
    /// database over 52 bytes less (its node must hold a sub-tree record).
    /// `max` is the limit that applied.
    ///
    /// When: writes (`put`, `append`, `merge`, ...). Checked before
    /// anything changes ([`Recovery::Continue`]). Reads and deletes of such
    /// a key find nothing instead.
    #[error("key of {len} bytes exceeds the limit of {max} bytes")]
    KeyTooLarge {
        /// Length of the key given, bytes.
        len: usize,
        /// The limit for this page size, bytes.
        max: usize,
    },
    /// A value longer than the database takes: over
    /// [`Env::max_value_size`](crate::Env::max_value_size) (0x7fff_ffff
    /// bytes, about 2 GiB), or in a DUPSORT database over what fits with
    /// its key in one leaf node (at most `max_key_size` bytes). A merge
    /// whose result is that long gives it too. `max` is the limit that
    /// applied.
    ///
    /// When: writes. Checked before anything changes
    /// ([`Recovery::Continue`]).
    #[error("value of {len} bytes exceeds the limit of {max} bytes")]
    ValueTooLarge {
        /// Length of the value given, bytes.
        len: usize,
        /// The limit, bytes.
        max: usize,
    },
    /// A key whose length does not fit the database's integer key order
    /// ([`KeyOrder::U32`](crate::KeyOrder::U32) takes 4-byte keys,
    /// [`KeyOrder::U64`](crate::KeyOrder::U64) 8-byte keys; LMDB's
    /// `MDB_BAD_VALSIZE`).
    ///
    /// When: writes; reads and deletes of such a key find nothing instead.
    /// Nothing was written ([`Recovery::Continue`]).
    #[error("key of {len} bytes in a database of {expected}-byte integer keys")]
    BadKeySize {
        /// Length of the key given, bytes.
        len: usize,
        /// The length the database's keys have, bytes.
        expected: usize,
    },
    /// A value whose size does not fit a DUPSORT database: in a
    /// `DUPFIXED` database, a size other than that of the key's other
    /// values; with integer duplicates, a size other than 4 or 8 bytes
    /// (LMDB's `MDB_BAD_VALSIZE`).
    ///
    /// When: writes to a DUPSORT database. Nothing was written
    /// ([`Recovery::Continue`]).
    #[error("value of {len} bytes where {expected}-byte values are stored")]
    BadValueSize {
        /// Length of the value given, bytes.
        len: usize,
        /// The length the values must have, bytes.
        expected: usize,
    },
    /// [`RwTxn::append`](crate::RwTxn::append) of a key that is not greater
    /// than the database's last key, or
    /// [`RwTxn::append_dup`](crate::RwTxn::append_dup) of a pair that would
    /// not be the database's last (LMDB's `MDB_APPEND` returns
    /// `MDB_KEYEXIST`).
    ///
    /// When: those two calls. Nothing was written
    /// ([`Recovery::Continue`]); write the pair with `put` instead.
    #[error("append of a key not greater than the last key")]
    KeyNotGreater,
    /// The operation is defined only for databases with (or only without)
    /// duplicates: `merge`, `replace` and `take` on a DUPSORT database;
    /// `delete_dup`, `put_no_dup_data`, `append_dup`, and the cursors'
    /// `seek_both` and `seek_both_range` on one without; the cursors'
    /// `get_multiple` and `next_multiple` on one that is not `DUPFIXED`.
    ///
    /// When: those calls, before they change anything or move the cursor
    /// ([`Recovery::Continue`]).
    #[error("{op} needs a database {needs}")]
    WrongDupMode {
        /// The operation.
        op: &'static str,
        /// What it needs: "with duplicates (DUPSORT)", "without duplicates"
        /// or "with fixed-size duplicates (DUPFIXED)".
        needs: &'static str,
    },
    /// [`RwTxn::merge`](crate::RwTxn::merge) on a database handle with no
    /// merge operator attached (see
    /// [`DbOptions::merge_operator`](crate::DbOptions::merge_operator)).
    ///
    /// When: `merge`, `merge_many`, `RwCursor::merge_current`. Nothing
    /// changed ([`Recovery::Continue`]); open the database with its
    /// operator.
    #[error("database {db:?} has no merge operator attached")]
    NoMergeOperator {
        /// The database's name ("" for the main database).
        db: String,
    },
    /// A merge operator refused to merge (its
    /// [`full_merge`](crate::MergeOperator::full_merge) returned an error,
    /// for example [`Uint64Add`](crate::merge::Uint64Add) given a value
    /// that is not 8 bytes).
    ///
    /// When: `merge`, `merge_many`, `RwCursor::merge_current`. That merge
    /// did nothing; the transaction stays usable ([`Recovery::Continue`]).
    #[error("merge operator {operator:?} refused: {source}")]
    Merge {
        /// The operator's name.
        operator: String,
        /// What the operator said.
        #[source]
        source: crate::MergeError,
    },
    /// An argument is out of its range: an option of
    /// [`EnvOptions`](crate::EnvOptions) (page size, reader count,
    /// `no_lock` without `read_only`), a database name (empty or longer
    /// than the longest key), a merge operator's or comparator's name
    /// (empty or over 255 bytes), a handle this `Env` did not give, a
    /// `merge_many` without operands, a sequence that would overflow, a
    /// copy into a directory that holds a data file, a write cursor's call
    /// on no pair, a slice [`RwTxn::is_dirty`](crate::RwTxn::is_dirty)
    /// cannot place.
    ///
    /// When: opening the environment or a database, and operations. Checked
    /// before anything changes ([`Recovery::Continue`]).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// An earlier operation of this write transaction failed after it had
    /// changed pages; the transaction can only be aborted (LMDB's
    /// `MDB_BAD_TXN`). The database is unchanged.
    ///
    /// When: every write, [`RwTxn::nested`](crate::RwTxn::nested) and
    /// [`RwTxn::commit`](crate::RwTxn::commit) of a broken transaction, and
    /// the commit of a nested transaction that an operation broke. Reads
    /// still work but may see part of the failed operation. Abort (drop)
    /// the transaction ([`Recovery::AbortTxn`]); in a nested transaction
    /// that is the child, after which the parent is as it was when the
    /// child began and stays usable.
    #[error("transaction failed earlier and must be aborted")]
    BadTxn,

    // ---- Storage, in an operation or at commit ----
    /// The file would have to grow past the upper bound of its geometry
    /// ([`EnvOptions::max_size`](crate::EnvOptions::max_size); LMDB's
    /// `MDB_MAP_FULL`, which Sarsen only returns at the upper bound,
    /// 1 TiB by default).
    ///
    /// When: writes and commits. A write reserves the pages it may need
    /// before it changes anything, so a write that gets this changed
    /// nothing and the transaction stays usable ([`Recovery::Continue`]):
    /// it can go on (smaller writes may still fit) and commit. Its commit
    /// needs pages too (for the catalog and the list of freed pages) and
    /// can fail with this error; the transaction is then gone and nothing
    /// of it is visible. The environment stays usable: reopen it with a
    /// larger `max_size` to go past the bound.
    #[error("database file would exceed its upper bound of {upper} bytes")]
    UpperBoundReached {
        /// The upper bound, bytes.
        upper: u64,
    },
    /// The file system is full (`ENOSPC` or `EDQUOT`) while growing or writing
    /// the data file.
    ///
    /// When: commits; creating the file at open; in write-map mode
    /// ([`EnvOptions::write_map`](crate::EnvOptions::write_map)) also
    /// writes, when the file grows under them; copies. A write transaction
    /// that got it is broken ([`Recovery::AbortTxn`]): abort it (a failed
    /// commit has ended it already). The database stays at its previous
    /// commit and is writable again once space returns.
    #[error("disk full while {op}")]
    DiskFull {
        /// The step that hit the limit.
        op: &'static str,
    },
    /// An operating-system I/O error other than a full disk, with the
    /// operation that failed (`"pwrite"`, `"fdatasync"`, `"open"`, ...).
    ///
    /// When: any step that touches the files. A write transaction that got
    /// it is broken ([`Recovery::AbortTxn`]). The environment stays usable,
    /// except after a failed `"fdatasync"`: from then on writes give
    /// [`Error::SyncFailed`] until the environment is opened again.
    #[error("I/O error in {op}: {source}")]
    Io {
        /// The system call or step that failed.
        op: &'static str,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The data file (or the lock file's published state) is damaged: a
    /// page or meta page failed a bounds, kind, order or checksum check.
    /// `page` is the page number (0..=2 are meta pages; 0 also stands for
    /// damage not tied to a page), `what` says which check failed.
    ///
    /// When: opening (no meta page can be trusted, or
    /// [`EnvOptions::validation`](crate::EnvOptions::validation) found a
    /// problem), beginning a transaction, and any read or write that meets
    /// the damaged page. A write transaction that got it is broken
    /// ([`Recovery::AbortTxn`]): a write marks it so; a read does not, but
    /// the damage stays in the snapshot it writes on, so abort it as well.
    /// Other pages stay readable; [`Env::check`](crate::Env::check) lists
    /// the damage.
    #[error("database corrupted at page {page}: {what}")]
    Corrupted {
        /// Page number where the problem was found.
        page: u64,
        /// What check failed.
        what: String,
    },
}

/// What an [`Error`] leaves usable, and so what the caller does next:
/// the answer of [`Error::recovery`].
///
/// It is about the call that returned the error, and the write transaction
/// and environment it was made on; what is committed is never affected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Recovery {
    /// The call was refused before it changed anything: a write
    /// transaction it was made in keeps its earlier writes and can go on
    /// and commit, and the environment is as it was. Handle the cause (a
    /// shorter key, another handle, a free reader slot, ...) and go on.
    Continue,
    /// The write transaction the call was made in is broken, or ended if
    /// the call was its commit: abort (drop) it. Its later writes and its
    /// commit give [`Error::BadTxn`]; in a nested transaction, aborting the
    /// child restores the parent as it was when the child began. The
    /// environment stays usable: begin a new write transaction.
    AbortTxn,
    /// The environment refuses to go on in this process until it is opened
    /// again: after a failed sync ([`Error::SyncFailed`]) it only reads,
    /// until every process has closed it; in a `fork()` child
    /// ([`Error::Forked`]) it is not usable at all. Drop it and open it
    /// again.
    ReopenEnv,
}

/// `Result` with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// A `Corrupted` error for `page`.
    pub(crate) fn corrupted(page: u64, what: impl Into<String>) -> Error {
        Error::Corrupted {
            page,
            what: what.into(),
        }
    }

    /// What this error leaves usable: the transaction, the environment,
    /// or neither (see [`Recovery`]; each variant's documentation says the
    /// same in words).
    ///
    /// [`Recovery::Continue`]: every error checked before anything changes,
    /// [`UpperBoundReached`](Error::UpperBoundReached) included (writes
    /// reserve their pages first). [`Recovery::AbortTxn`]:
    /// [`BadTxn`](Error::BadTxn) and the storage failures
    /// [`Corrupted`](Error::Corrupted), [`Io`](Error::Io) and
    /// [`DiskFull`](Error::DiskFull). [`Recovery::ReopenEnv`]:
    /// [`SyncFailed`](Error::SyncFailed) and [`Forked`](Error::Forked).
    ///
    /// ```
    /// use sarsen::{Error, Recovery};
    /// # fn main() -> Result<(), Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let env = unsafe { sarsen::Env::open(dir.path())? };
    /// let mut w = env.write_txn()?;
    /// w.put(env.main_db(), b"kept", b"1")?;
    /// let long = vec![0u8; env.max_key_size() + 1];
    /// let e = w.put(env.main_db(), &long, b"v").unwrap_err();
    /// assert_eq!(e.recovery(), Recovery::Continue);
    /// w.commit()?; // "kept" is committed
    /// # Ok(())
    /// # }
    /// ```
    pub fn recovery(&self) -> Recovery {
        match self {
            Error::Busy
            | Error::Incompatible(_)
            | Error::ReadOnly
            | Error::ReadersFull { .. }
            | Error::DbNotFound { .. }
            | Error::DbsFull { .. }
            | Error::KeyOrderMismatch { .. }
            | Error::NoComparator { .. }
            | Error::DupModeMismatch { .. }
            | Error::MergeOperatorMismatch { .. }
            | Error::KeyTooLarge { .. }
            | Error::ValueTooLarge { .. }
            | Error::BadKeySize { .. }
            | Error::BadValueSize { .. }
            | Error::KeyNotGreater
            | Error::WrongDupMode { .. }
            | Error::NoMergeOperator { .. }
            | Error::Merge { .. }
            | Error::InvalidArgument(_)
            | Error::UpperBoundReached { .. } => Recovery::Continue,
            Error::BadTxn | Error::DiskFull { .. } | Error::Io { .. } | Error::Corrupted { .. } => {
                Recovery::AbortTxn
            }
            Error::SyncFailed | Error::Forked => Recovery::ReopenEnv,
        }
    }

    /// Whether a write transaction whose call failed with this error is
    /// still usable: its earlier writes are intact, and it can go on and
    /// commit them. `true` exactly when [`recovery`](Error::recovery) is
    /// [`Recovery::Continue`]. When `false`, abort it: a write that failed
    /// so has marked it broken, and its later writes and commit give
    /// [`Error::BadTxn`].
    ///
    /// This is the rule [`RwTxn`](crate::RwTxn) itself applies when an
    /// operation fails. One thing it does not say, documented where it
    /// applies: a call that is several writes may have done part of its
    /// work when it fails and the transaction stays usable
    /// ([`RwTxn::delete_range`](crate::RwTxn::delete_range),
    /// [`RwCursor::put_current`](crate::RwCursor::put_current) in a
    /// DUPSORT database, [`RwTxn::create_db_with`](crate::RwTxn::create_db_with)
    /// refusing the options of a database it has just created).
    pub fn leaves_txn_usable(&self) -> bool {
        self.recovery() == Recovery::Continue
    }

    /// Classifies an OS error from step `op`: a full disk becomes `DiskFull`.
    pub(crate) fn io(op: &'static str, source: io::Error) -> Error {
        match source.raw_os_error() {
            Some(libc::ENOSPC) | Some(libc::EDQUOT) => Error::DiskFull { op },
            _ => Error::Io { op, source },
        }
    }
}
