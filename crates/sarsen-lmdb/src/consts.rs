//! LMDB 0.9's constants: flags, cursor operations and return codes, with
//! the values of `include/lmdb.h`.

use std::ffi::{c_int, c_uint};

/// Major version of the LMDB interface implemented.
pub const MDB_VERSION_MAJOR: c_int = 0;
/// Minor version of the LMDB interface implemented.
pub const MDB_VERSION_MINOR: c_int = 9;
/// Patch level of the LMDB interface implemented.
pub const MDB_VERSION_PATCH: c_int = 31;

/// Env flag: accepted, no effect (Sarsen never maps at a fixed address).
pub const MDB_FIXEDMAP: c_uint = 0x01;
/// Env flag: the path is the data file, not a directory.
pub const MDB_NOSUBDIR: c_uint = 0x4000;
/// Env flag: commits are not synced ([`sarsen::Durability::NoSync`]).
pub const MDB_NOSYNC: c_uint = 0x10000;
/// Env flag (and txn flag): read-only.
pub const MDB_RDONLY: c_uint = 0x20000;
/// Env flag: the meta page is not synced ([`sarsen::Durability::NoMetaSync`]).
pub const MDB_NOMETASYNC: c_uint = 0x40000;
/// Env flag: write through the map ([`sarsen::EnvOptions::write_map`]).
pub const MDB_WRITEMAP: c_uint = 0x80000;
/// Env flag: asynchronous flushes ([`sarsen::Durability::SafeNoSync`]).
pub const MDB_MAPASYNC: c_uint = 0x100000;
/// Env flag: accepted (read transactions are not tied to threads).
pub const MDB_NOTLS: c_uint = 0x200000;
/// Env flag: no lock file ([`sarsen::EnvOptions::no_lock`], read-only only).
pub const MDB_NOLOCK: c_uint = 0x400000;
/// Env flag: no read-ahead ([`sarsen::EnvOptions::read_ahead`] off).
pub const MDB_NORDAHEAD: c_uint = 0x800000;
/// Env flag: accepted (Sarsen always zeroes unused page space).
pub const MDB_NOMEMINIT: c_uint = 0x1000000;

/// Db flag: keys ordered from their last byte.
pub const MDB_REVERSEKEY: c_uint = 0x02;
/// Db flag: several sorted values per key.
pub const MDB_DUPSORT: c_uint = 0x04;
/// Db flag: native-endian integer keys.
pub const MDB_INTEGERKEY: c_uint = 0x08;
/// Db flag: duplicate values of one size.
pub const MDB_DUPFIXED: c_uint = 0x10;
/// Db flag: native-endian integer duplicate values.
pub const MDB_INTEGERDUP: c_uint = 0x20;
/// Db flag: duplicate values ordered from their last byte.
pub const MDB_REVERSEDUP: c_uint = 0x40;
/// Db flag: create the database if missing.
pub const MDB_CREATE: c_uint = 0x40000;

/// Put flag: fail with `MDB_KEYEXIST` if the key exists.
pub const MDB_NOOVERWRITE: c_uint = 0x10;
/// Put flag: fail with `MDB_KEYEXIST` if the pair exists (DUPSORT).
pub const MDB_NODUPDATA: c_uint = 0x20;
/// Put flag: replace the pair under the cursor.
pub const MDB_CURRENT: c_uint = 0x40;
/// Put flag: reserve space for the value, filled by the program.
pub const MDB_RESERVE: c_uint = 0x10000;
/// Put flag: the key sorts after every key already there.
pub const MDB_APPEND: c_uint = 0x20000;
/// Put flag: the pair sorts after every pair already there (DUPSORT).
pub const MDB_APPENDDUP: c_uint = 0x40000;
/// Put flag: store several fixed-size values (DUPFIXED, cursor put).
pub const MDB_MULTIPLE: c_uint = 0x80000;

/// Copy flag: compact while copying.
pub const MDB_CP_COMPACT: c_uint = 0x01;

/// Cursor operation `MDB_FIRST`.
pub const MDB_FIRST: c_int = 0;
/// Cursor operation `MDB_FIRST_DUP`.
pub const MDB_FIRST_DUP: c_int = 1;
/// Cursor operation `MDB_GET_BOTH`.
pub const MDB_GET_BOTH: c_int = 2;
/// Cursor operation `MDB_GET_BOTH_RANGE`.
pub const MDB_GET_BOTH_RANGE: c_int = 3;
/// Cursor operation `MDB_GET_CURRENT`.
pub const MDB_GET_CURRENT: c_int = 4;
/// Cursor operation `MDB_GET_MULTIPLE`.
pub const MDB_GET_MULTIPLE: c_int = 5;
/// Cursor operation `MDB_LAST`.
pub const MDB_LAST: c_int = 6;
/// Cursor operation `MDB_LAST_DUP`.
pub const MDB_LAST_DUP: c_int = 7;
/// Cursor operation `MDB_NEXT`.
pub const MDB_NEXT: c_int = 8;
/// Cursor operation `MDB_NEXT_DUP`.
pub const MDB_NEXT_DUP: c_int = 9;
/// Cursor operation `MDB_NEXT_MULTIPLE`.
pub const MDB_NEXT_MULTIPLE: c_int = 10;
/// Cursor operation `MDB_NEXT_NODUP`.
pub const MDB_NEXT_NODUP: c_int = 11;
/// Cursor operation `MDB_PREV`.
pub const MDB_PREV: c_int = 12;
/// Cursor operation `MDB_PREV_DUP`.
pub const MDB_PREV_DUP: c_int = 13;
/// Cursor operation `MDB_PREV_NODUP`.
pub const MDB_PREV_NODUP: c_int = 14;
/// Cursor operation `MDB_SET`.
pub const MDB_SET: c_int = 15;
/// Cursor operation `MDB_SET_KEY`.
pub const MDB_SET_KEY: c_int = 16;
/// Cursor operation `MDB_SET_RANGE`.
pub const MDB_SET_RANGE: c_int = 17;
/// Cursor operation `MDB_PREV_MULTIPLE` (not supported: `ENOTSUP`).
pub const MDB_PREV_MULTIPLE: c_int = 18;

/// Success.
pub const MDB_SUCCESS: c_int = 0;
/// The key (or pair) is already there.
pub const MDB_KEYEXIST: c_int = -30799;
/// No such key, pair or database.
pub const MDB_NOTFOUND: c_int = -30798;
/// A page was not found (not returned by Sarsen).
pub const MDB_PAGE_NOTFOUND: c_int = -30797;
/// The file is damaged.
pub const MDB_CORRUPTED: c_int = -30796;
/// An internal error (here: a Rust panic caught at the boundary).
pub const MDB_PANIC: c_int = -30795;
/// The environment was made by another version.
pub const MDB_VERSION_MISMATCH: c_int = -30794;
/// Not a Sarsen file (for example an LMDB `data.mdb`).
pub const MDB_INVALID: c_int = -30793;
/// The data file reached its upper bound.
pub const MDB_MAP_FULL: c_int = -30792;
/// Too many named databases.
pub const MDB_DBS_FULL: c_int = -30791;
/// Every reader slot is in use.
pub const MDB_READERS_FULL: c_int = -30790;
/// Thread-local storage is full (not returned by Sarsen).
pub const MDB_TLS_FULL: c_int = -30789;
/// The transaction is too big (not returned by Sarsen).
pub const MDB_TXN_FULL: c_int = -30788;
/// Cursor stack too deep (not returned by Sarsen).
pub const MDB_CURSOR_FULL: c_int = -30787;
/// A page has no room (not returned by Sarsen).
pub const MDB_PAGE_FULL: c_int = -30786;
/// The map was resized elsewhere (not returned by Sarsen).
pub const MDB_MAP_RESIZED: c_int = -30785;
/// The operation or flags do not fit the database.
pub const MDB_INCOMPATIBLE: c_int = -30784;
/// A reader slot was used wrongly (not returned by Sarsen).
pub const MDB_BAD_RSLOT: c_int = -30783;
/// The transaction failed earlier, or cannot be used now.
pub const MDB_BAD_TXN: c_int = -30782;
/// A key or value of a bad size.
pub const MDB_BAD_VALSIZE: c_int = -30781;
/// A database handle that is not open.
pub const MDB_BAD_DBI: c_int = -30780;
/// The last LMDB error code.
pub const MDB_LAST_ERRCODE: c_int = MDB_BAD_DBI;
