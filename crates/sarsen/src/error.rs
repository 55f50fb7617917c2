//! Typed errors. Every fallible call in Sarsen returns [`Result`].
//!
//! A failed operation leaves the database as it was before the call: a
//! failed `put` changes nothing in the transaction's view, a failed `commit`
//! leaves the last committed state intact and durable as it was.

use std::io;

/// The error type of every Sarsen operation.
///
/// The enum is `#[non_exhaustive]`: later versions may add variants.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O error other than a full disk, with the
    /// operation that failed (`"pwrite"`, `"fdatasync"`, `"open"`, ...).
    #[error("I/O error in {op}: {source}")]
    Io {
        /// The system call or step that failed.
        op: &'static str,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The file system is full (`ENOSPC` or `EDQUOT`) while growing or writing
    /// the data file. The transaction that hit it is aborted; the database
    /// stays at its previous commit and is writable again once space returns.
    #[error("disk full while {op}")]
    DiskFull {
        /// The step that hit the limit.
        op: &'static str,
    },
    /// The data file is damaged: a page or meta page failed a bounds,
    /// kind, order or checksum check. `page` is the page number (0..=2 are
    /// meta pages), `what` says which check failed.
    #[error("database corrupted at page {page}: {what}")]
    Corrupted {
        /// Page number where the problem was found.
        page: u64,
        /// What check failed.
        what: String,
    },
    /// A key longer than [`Env::max_key_size`](crate::Env::max_key_size)
    /// bytes (2016 at 4 KiB pages, about half a page as in libmdbx).
    #[error("key of {len} bytes exceeds the limit of {max} bytes")]
    KeyTooLarge {
        /// Length of the key given, bytes.
        len: usize,
        /// The limit for this page size, bytes.
        max: usize,
    },
    /// A value longer than [`Env::max_value_size`](crate::Env::max_value_size)
    /// (0x7fff_ffff bytes, about 2 GiB).
    #[error("value of {len} bytes exceeds the limit of {max} bytes")]
    ValueTooLarge {
        /// Length of the value given, bytes.
        len: usize,
        /// The limit, bytes.
        max: usize,
    },
    /// The file would have to grow past the upper bound of its geometry
    /// (LMDB's `MDB_MAP_FULL`, which Sarsen only returns at the upper bound,
    /// 1 TiB by default). The transaction that hit it is aborted.
    #[error("database file would exceed its upper bound of {upper} bytes")]
    UpperBoundReached {
        /// The upper bound, bytes.
        upper: u64,
    },
    /// A named database does not exist (it was never created or was dropped).
    #[error("database {name:?} not found")]
    DbNotFound {
        /// The database name.
        name: String,
    },
    /// More named databases opened in this environment than
    /// [`EnvOptions::max_dbs`](crate::EnvOptions::max_dbs) (LMDB's `MDB_DBS_FULL`).
    #[error("too many named databases (limit {max})")]
    DbsFull {
        /// The limit.
        max: u32,
    },
    /// Every reader slot of the lock file is in use (LMDB's `MDB_READERS_FULL`).
    #[error("all {max} reader slots are in use")]
    ReadersFull {
        /// Number of reader slots.
        max: u32,
    },
    /// [`RwTxn::append`](crate::RwTxn::append) of a key that is not greater
    /// than the database's last key (LMDB's `MDB_APPEND` returns
    /// `MDB_KEYEXIST`). Nothing was written.
    #[error("append of a key not greater than the last key")]
    KeyNotGreater,
    /// The environment is opened exclusively by another opener, or an
    /// exclusive open found it open elsewhere
    /// ([`EnvOptions::exclusive`](crate::EnvOptions::exclusive); libmdbx's
    /// `MDBX_BUSY`).
    #[error("environment is in use: opened exclusively, or open elsewhere for an exclusive open")]
    Busy,
    /// A write was attempted on an environment opened read-only.
    #[error("environment is opened read-only")]
    ReadOnly,
    /// An argument is out of its range (page size, geometry, database name).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// An earlier operation of this write transaction failed after it had
    /// changed pages; the transaction can only be aborted (LMDB's
    /// `MDB_BAD_TXN`). The database is unchanged.
    #[error("transaction failed earlier and must be aborted")]
    BadTxn,
    /// A merge operator refused to merge (its
    /// [`full_merge`](crate::MergeOperator::full_merge) returned an error,
    /// for example [`Uint64Add`](crate::merge::Uint64Add) given a value
    /// that is not 8 bytes). That merge did nothing; the transaction stays
    /// usable.
    #[error("merge operator {operator:?} refused: {source}")]
    Merge {
        /// The operator's name.
        operator: String,
        /// What the operator said.
        #[source]
        source: crate::MergeError,
    },
    /// A database was opened with a merge operator whose name differs from
    /// the one recorded for it in the catalog (or attached to its handle
    /// earlier in this environment), as RocksDB refuses a column family
    /// opened with another comparator. `db` is the database's name, empty
    /// for the main database.
    #[error("database {db:?} has merge operator {recorded:?}, not {given:?}")]
    MergeOperatorMismatch {
        /// The database's name ("" for the main database).
        db: String,
        /// The operator's name recorded in the catalog or attached before.
        recorded: String,
        /// The operator's name given now.
        given: String,
    },
    /// [`RwTxn::merge`](crate::RwTxn::merge) on a database handle with no
    /// merge operator attached (see
    /// [`DbOptions::merge_operator`](crate::DbOptions::merge_operator)).
    #[error("database {db:?} has no merge operator attached")]
    NoMergeOperator {
        /// The database's name ("" for the main database).
        db: String,
    },
    /// A database was opened with a key order other than the one recorded
    /// for it ([`DbOptions::key_order`](crate::DbOptions::key_order)), or
    /// with a user comparator whose name differs from the recorded one or
    /// from the one attached to its handle earlier (LMDB's
    /// `MDB_INCOMPATIBLE`; RocksDB refuses a column family opened with
    /// another comparator). `db` is empty for the main database.
    #[error("database {db:?} is ordered by {recorded}, not {given}")]
    KeyOrderMismatch {
        /// The database's name ("" for the main database).
        db: String,
        /// The order recorded (or attached before).
        recorded: String,
        /// The order given now.
        given: String,
    },
    /// A database whose keys are in a user comparator's order was used
    /// without that comparator attached to its handle (give it with
    /// [`DbOptions::key_order`](crate::DbOptions::key_order) when opening
    /// the database): its keys cannot be searched without it.
    #[error("database {db:?} is ordered by comparator {name:?}, which is not attached")]
    NoComparator {
        /// The database's name ("" for the main database).
        db: String,
        /// The comparator's name recorded for the database.
        name: String,
    },
    /// A key whose length does not fit the database's integer key order
    /// ([`KeyOrder::U32`](crate::KeyOrder::U32) takes 4-byte keys,
    /// [`KeyOrder::U64`](crate::KeyOrder::U64) 8-byte keys; LMDB's
    /// `MDB_BAD_VALSIZE`). Nothing was written.
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
    /// (LMDB's `MDB_BAD_VALSIZE`). Nothing was written.
    #[error("value of {len} bytes where {expected}-byte values are stored")]
    BadValueSize {
        /// Length of the value given, bytes.
        len: usize,
        /// The length the values must have, bytes.
        expected: usize,
    },
    /// The operation is defined only for databases with (or only without)
    /// duplicates: `merge`, `replace` and `take` on a DUPSORT database;
    /// `delete_dup`, `put_no_dup_data` and `append_dup` on one without.
    /// Nothing was written.
    #[error("{op} needs a database {needs}")]
    WrongDupMode {
        /// The operation.
        op: &'static str,
        /// What it needs: "with duplicates (DUPSORT)" or "without duplicates".
        needs: &'static str,
    },
    /// The database records another duplicate mode than the one given
    /// when opening it (LMDB's `MDB_INCOMPATIBLE` for `MDB_DUPSORT`,
    /// `MDB_DUPFIXED`, `MDB_INTEGERDUP`, `MDB_REVERSEDUP`).
    #[error("database {db:?} has duplicate mode {recorded}, opened with {given}")]
    DupModeMismatch {
        /// The database's name (empty for the main database).
        db: String,
        /// The recorded mode.
        recorded: String,
        /// The mode given.
        given: String,
    },
    /// The environment was opened by another process: this process is a
    /// `fork()` child of the one that called [`EnvOptions::open`](crate::EnvOptions::open).
    /// The child shares the parent's lock-file description, so the
    /// writer lock would not exclude it and its reader slots would be the
    /// parent's: every use of the inherited `Env` (and of transactions
    /// begun before the fork) is refused, and dropping them in the child
    /// leaves the parent's locks and slots alone. Open the environment
    /// again in the child (LMDB documents the same rule: an `MDB_env` is
    /// used only by the process that opened it).
    #[error("environment used in a forked child of the process that opened it; open it again in this process")]
    Forked,
    /// An earlier `fdatasync` of the data file failed. Linux may then have
    /// marked the pages it could not write clean, so a later sync would
    /// succeed without writing them (PostgreSQL's "fsyncgate"): writes and
    /// syncs are refused in every process that has the environment open,
    /// until all close it and it is opened again, which verifies the
    /// newest commit against the disk. Reads go on.
    #[error("an earlier sync of the data file failed; reopen the environment to write again")]
    SyncFailed,
    /// The file was made by an incompatible format version or another program.
    #[error("incompatible file: {0}")]
    Incompatible(String),
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

    /// Whether a write operation failing with this error left the
    /// transaction as it was (checked before anything changed).
    pub(crate) fn leaves_txn_intact(&self) -> bool {
        matches!(
            self,
            Error::KeyTooLarge { .. }
                | Error::ValueTooLarge { .. }
                | Error::UpperBoundReached { .. }
                | Error::DbNotFound { .. }
                | Error::DbsFull { .. }
                | Error::InvalidArgument(_)
                | Error::Merge { .. }
                | Error::MergeOperatorMismatch { .. }
                | Error::NoMergeOperator { .. }
                | Error::KeyNotGreater
                | Error::KeyOrderMismatch { .. }
                | Error::NoComparator { .. }
                | Error::BadKeySize { .. }
                | Error::BadValueSize { .. }
                | Error::WrongDupMode { .. }
                | Error::DupModeMismatch { .. }
        )
    }

    /// Classifies an OS error from step `op`: a full disk becomes `DiskFull`.
    pub(crate) fn io(op: &'static str, source: io::Error) -> Error {
        match source.raw_os_error() {
            Some(libc::ENOSPC) | Some(libc::EDQUOT) => Error::DiskFull { op },
            _ => Error::Io { op, source },
        }
    }
}
