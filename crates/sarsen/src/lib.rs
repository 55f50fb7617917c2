//! # Sarsen
//!
//! An embedded, transactional, ordered key-value store: a copy-on-write
//! B+tree in one memory-mapped file, in the family of LMDB and libmdbx.
//! ACID transactions, one writer at a time, any number of readers that never
//! block and are never blocked, no write-ahead log and no recovery step.
//!
//! - [`Env`]: an open database file ([`EnvOptions`] to configure).
//! - [`RoTxn`]: a read-only snapshot; [`RwTxn`]: the write transaction.
//! - [`Database`]: the unnamed main database or a named one.
//! - [`Cursor`] and [`Iter`]: ordered traversal and ranges.
//! - [`MergeOperator`] and the built-in operators of [`merge`]:
//!   read-modify-write in one call ([`RwTxn::merge`], from RocksDB).
//!
//! Keys are ordered bytewise unless a database is created with another
//! [`KeyOrder`] (reverse bytewise, native integers, or a user
//! [`Comparator`], from LMDB). Values returned by reads borrow the
//! transaction and point into the map (zero copy).
//!
//! ```
//! use sarsen::{Env, Error};
//! # fn main() -> Result<(), Error> {
//! # let dir = tempfile::tempdir().unwrap();
//! let env = unsafe { Env::open(dir.path())? };
//! let mut w = env.write_txn()?;
//! let fruit = w.create_db(Some("fruit"))?;
//! w.put(fruit, b"apple", b"red")?;
//! w.put(fruit, b"banana", b"yellow")?;
//! w.commit()?;
//!
//! let r = env.read_txn()?;
//! assert_eq!(r.get(fruit, b"apple")?, Some(&b"red"[..]));
//! for entry in r.iter(fruit)? {
//!     let (k, v) = entry?;
//!     println!("{} = {}", String::from_utf8_lossy(k), String::from_utf8_lossy(v));
//! }
//! # Ok(())
//! # }
//! ```
#![warn(missing_docs)]
#![warn(clippy::missing_errors_doc)]

mod btree;
mod check;
mod copy;
mod cursor;
mod db;
mod env;
mod error;
mod io;
pub mod merge;
mod options;
mod order;
mod page;
mod readers;
mod recovery;
mod shared;
mod store;
mod txn;
mod writer;

pub use check::{CheckReport, Problem, TreeReport, MAX_LISTED_PROBLEMS};
pub use copy::CopyInfo;
pub use cursor::{Cursor, Entry, Iter};
pub use db::{Database, DbOptions, DupMode, Stat};
pub use env::{Compaction, Env, EnvInfo};
pub use error::{Error, Recovery, Result};
pub use merge::{MergeError, MergeOperator};
pub use options::{Durability, EnvOptions, Geometry};
pub use order::{Comparator, KeyOrder, MAX_COMPARATOR_NAME};
pub use readers::{ReaderInfo, SlowReader, SlowReaderAction, SlowReaderHandler};
pub use txn::{Canary, InactiveRoTxn, NestedTxn, RoTxn, RwCursor, RwTxn, TxnInfo};

/// Test-only storage seam (cargo feature `fault-injection`): fail writes
/// and syncs of the data file, record them, and build power-loss images.
/// Not part of the stable API.
#[cfg(feature = "fault-injection")]
#[doc(hidden)]
pub use io::fault;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

/// The user guide's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/guide.md")]
pub struct GuideDoctests;
