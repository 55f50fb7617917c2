//! Key orders: how the keys of one database are sorted (LMDB's
//! `MDB_REVERSEKEY`, `MDB_INTEGERKEY` and `mdb_set_compare`; RocksDB's
//! `Comparator`).
//!
//! A database's order is chosen when it is created
//! ([`DbOptions::key_order`](crate::DbOptions::key_order)) and recorded in
//! its tree record's flags (a user comparator also by name, in the catalog
//! settings). Every key comparison of that tree (page search, the append
//! hint, cursor seeks and range bounds, `append`, `delete_range`, the
//! integrity check) goes through [`Order`], a small `Copy` enum whose
//! bytewise arm is a plain slice comparison: the default order pays no
//! indirect call. The GC and catalog trees are always bytewise.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

/// Longest comparator name recorded in the catalog, bytes.
pub const MAX_COMPARATOR_NAME: usize = 255;

/// A user key order (LMDB's `mdb_set_compare`, RocksDB's `Comparator`).
///
/// `compare` must be a total order that is the same every time (the tree
/// on disk is sorted by it), and keys it calls `Equal` are the same key: a
/// case-insensitive order must break ties, for example bytewise. It must
/// not panic; if it does inside a write and the caller catches the unwind,
/// that write transaction is broken: its later writes and its commit
/// return [`Error::BadTxn`](crate::Error::BadTxn), as a panic poisons
/// std's `Mutex`, and nothing of it is committed. The [`name`](Comparator::name) is recorded in the catalog
/// when the database is created; opening it later needs a comparator of the
/// same name ([`Error::KeyOrderMismatch`](crate::Error::KeyOrderMismatch)
/// otherwise, [`Error::NoComparator`](crate::Error::NoComparator) without
/// one). Change the name whenever the order changes.
///
/// ```
/// use std::cmp::Ordering;
/// use sarsen::{Comparator, DbOptions, KeyOrder};
///
/// /// Case-insensitive ASCII, ties broken bytewise.
/// struct NoCase;
/// impl Comparator for NoCase {
///     fn name(&self) -> &str {
///         "nocase"
///     }
///     fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
///         let lower = |k: &[u8]| k.to_ascii_lowercase();
///         lower(a).cmp(&lower(b)).then_with(|| a.cmp(b))
///     }
/// }
/// # fn main() -> Result<(), sarsen::Error> {
/// # let dir = tempfile::tempdir().unwrap();
/// let env = unsafe { sarsen::Env::open(dir.path())? };
/// let mut w = env.write_txn()?;
/// let db = w.create_db_with(Some("words"), &DbOptions::new().key_order(KeyOrder::custom(NoCase)))?;
/// for k in [&b"banana"[..], b"Apple", b"cherry"] {
///     w.put(db, k, b"")?;
/// }
/// let keys: Vec<&[u8]> = w.iter(db)?.map(|e| e.unwrap().0).collect();
/// assert_eq!(keys, [&b"Apple"[..], b"banana", b"cherry"]);
/// # Ok(())
/// # }
/// ```
pub trait Comparator: Send + Sync + 'static {
    /// The comparator's name, 1..=255 bytes, recorded in the catalog.
    fn name(&self) -> &str;
    /// How `a` sorts against `b`.
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering;
}

/// The order of a database's keys, chosen with
/// [`DbOptions::key_order`](crate::DbOptions::key_order) when the database
/// is created and recorded with it.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum KeyOrder {
    /// Bytewise (`memcmp`), a key before its extensions: LMDB's default.
    #[default]
    Bytewise,
    /// Bytewise from the last byte to the first, a key before the longer
    /// keys it ends: LMDB's `MDB_REVERSEKEY` (for keys such as reversed
    /// domain names or little-endian numbers).
    ReverseBytewise,
    /// Every key is a 4-byte `u32` in native byte order, sorted as numbers:
    /// LMDB's `MDB_INTEGERKEY` with `unsigned int` keys. A put of a key of
    /// another length is [`Error::BadKeySize`](crate::Error::BadKeySize);
    /// a get or delete of one finds nothing. The file is then tied to the
    /// byte order of the machine, as LMDB's.
    U32,
    /// Every key is an 8-byte `u64` in native byte order: LMDB's
    /// `MDB_INTEGERKEY` with `size_t` keys (on 64-bit machines). As
    /// [`U32`](KeyOrder::U32) otherwise.
    U64,
    /// A user order (LMDB's `mdb_set_compare`, RocksDB's `Comparator`).
    Custom(Arc<dyn Comparator>),
}

impl KeyOrder {
    /// A [`Custom`](KeyOrder::Custom) order from a comparator.
    pub fn custom(c: impl Comparator) -> KeyOrder {
        KeyOrder::Custom(Arc::new(c))
    }

    /// How `a` sorts against `b` in this order, as the database sorts them.
    pub fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        self.as_order().cmp(a, b)
    }

    /// The length every key must have (4 or 8 for the integer orders).
    pub fn key_size(&self) -> Option<usize> {
        self.as_order().key_size()
    }

    /// The borrowed form used by the tree code.
    pub(crate) fn as_order(&self) -> Order<'_> {
        match self {
            KeyOrder::Bytewise => Order::Bytewise,
            KeyOrder::ReverseBytewise => Order::Reverse,
            KeyOrder::U32 => Order::U32,
            KeyOrder::U64 => Order::U64,
            KeyOrder::Custom(c) => Order::Custom(&**c),
        }
    }
}

impl fmt::Debug for KeyOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_order().describe())
    }
}

/// Mask of the key order in a tree record's flags; the other bits are
/// reserved for the duplicate mode.
pub(crate) const ORDER_MASK: u16 = 0x000f;
/// Order codes in a tree record's flags.
pub(crate) const CODE_BYTEWISE: u16 = 0;
pub(crate) const CODE_REVERSE: u16 = 1;
pub(crate) const CODE_U32: u16 = 2;
pub(crate) const CODE_U64: u16 = 3;
pub(crate) const CODE_CUSTOM: u16 = 4;

/// A key order as the tree code uses it: `Copy`, the user comparator
/// borrowed from the environment's registry.
#[derive(Clone, Copy)]
pub(crate) enum Order<'a> {
    Bytewise,
    Reverse,
    U32,
    U64,
    Custom(&'a dyn Comparator),
}

impl<'a> Order<'a> {
    /// How `a` sorts against `b`. Only the bytewise arm is inlined (the
    /// others are one call away, in `cmp_other`), so a hot path that takes
    /// an `Order` grows by a branch and a slice comparison, no more than
    /// one that compared bytes directly.
    #[inline]
    pub(crate) fn cmp(self, a: &[u8], b: &[u8]) -> Ordering {
        match self {
            Order::Bytewise => a.cmp(b),
            _ => self.cmp_other(a, b),
        }
    }

    /// The orders other than bytewise.
    #[inline(never)]
    fn cmp_other(self, a: &[u8], b: &[u8]) -> Ordering {
        match self {
            Order::Bytewise => a.cmp(b),
            Order::Reverse => reverse_cmp(a, b),
            Order::U32 | Order::U64 => int_cmp(a, b),
            Order::Custom(c) => c.compare(a, b),
        }
    }

    /// [`cmp`](Order::cmp) for page search, with the integer orders
    /// inlined too.
    #[inline(always)]
    pub(crate) fn cmp_search(self, a: &[u8], b: &[u8]) -> Ordering {
        match self {
            Order::U32 | Order::U64 => int_cmp(a, b),
            _ => self.cmp_other(a, b),
        }
    }

    /// `a < b`.
    #[inline]
    pub(crate) fn lt(self, a: &[u8], b: &[u8]) -> bool {
        self.cmp(a, b) == Ordering::Less
    }

    /// The length every key must have.
    #[inline]
    pub(crate) fn key_size(self) -> Option<usize> {
        match self {
            Order::U32 => Some(4),
            Order::U64 => Some(8),
            _ => None,
        }
    }

    /// Whether `key` can be in a tree of this order (integer orders take
    /// only keys of their size).
    #[inline]
    pub(crate) fn fits(self, key: &[u8]) -> bool {
        self.key_size().is_none_or(|n| key.len() == n)
    }

    /// The code recorded in the tree record's flags.
    pub(crate) fn code(self) -> u16 {
        match self {
            Order::Bytewise => CODE_BYTEWISE,
            Order::Reverse => CODE_REVERSE,
            Order::U32 => CODE_U32,
            Order::U64 => CODE_U64,
            Order::Custom(_) => CODE_CUSTOM,
        }
    }

    /// The user comparator's name, if any.
    pub(crate) fn comparator_name(self) -> Option<&'a str> {
        match self {
            Order::Custom(c) => Some(c.name()),
            _ => None,
        }
    }

    /// How errors name the order.
    pub(crate) fn describe(self) -> String {
        describe(self.code(), self.comparator_name())
    }

    /// The built-in order of a record's flags: `Ok(None)` for a user
    /// comparator, `Err` for an unknown code.
    pub(crate) fn builtin(flags: u16) -> Result<Option<Order<'static>>, &'static str> {
        match flags & ORDER_MASK {
            CODE_BYTEWISE => Ok(Some(Order::Bytewise)),
            CODE_REVERSE => Ok(Some(Order::Reverse)),
            CODE_U32 => Ok(Some(Order::U32)),
            CODE_U64 => Ok(Some(Order::U64)),
            CODE_CUSTOM => Ok(None),
            _ => Err("unknown key order in the tree record's flags"),
        }
    }
}

/// How errors name the order with `code` (and comparator `name`).
pub(crate) fn describe(code: u16, name: Option<&str>) -> String {
    match (code, name) {
        (CODE_BYTEWISE, _) => "bytewise".into(),
        (CODE_REVERSE, _) => "reverse bytewise".into(),
        (CODE_U32, _) => "u32 integer keys".into(),
        (CODE_U64, _) => "u64 integer keys".into(),
        (CODE_CUSTOM, Some(n)) => format!("comparator {n:?}"),
        (CODE_CUSTOM, None) => "a user comparator".into(),
        (c, _) => format!("unknown order {c}"),
    }
}

/// The bytewise order (`<[u8]>::cmp`: `memcmp`, then the shorter first),
/// inlined for the page search: eight bytes at a time as big-endian words,
/// then the last bytes one by one, with no call. The search uses it when
/// its own key is short, so that the loop runs a few turns at most.
#[inline(always)]
pub(crate) fn bytewise_cmp(a: &[u8], b: &[u8]) -> Ordering {
    let (mut x, mut y) = (a, b);
    while let (Some((p, xr)), Some((q, yr))) =
        (x.split_first_chunk::<8>(), y.split_first_chunk::<8>())
    {
        let (p, q) = (u64::from_be_bytes(*p), u64::from_be_bytes(*q));
        if p != q {
            return p.cmp(&q);
        }
        (x, y) = (xr, yr);
    }
    for (p, q) in x.iter().zip(y) {
        if p != q {
            return p.cmp(q);
        }
    }
    x.len().cmp(&y.len())
}

/// LMDB's `mdb_cmp_memnr`: bytes compared from the end; when one key ends
/// the other, the shorter first.
#[inline]
fn reverse_cmp(a: &[u8], b: &[u8]) -> Ordering {
    a.iter().rev().cmp(b.iter().rev())
}

/// Native unsigned integers: 4- and 8-byte keys as numbers. Keys of other
/// lengths (never stored; a search key or range bound of the wrong size)
/// sort by length first, then bytewise, so the order stays total.
#[inline]
fn int_cmp(a: &[u8], b: &[u8]) -> Ordering {
    if let (Ok(x), Ok(y)) = (<[u8; 8]>::try_from(a), <[u8; 8]>::try_from(b)) {
        return u64::from_ne_bytes(x).cmp(&u64::from_ne_bytes(y));
    }
    if let (Ok(x), Ok(y)) = (<[u8; 4]>::try_from(a), <[u8; 4]>::try_from(b)) {
        return u32::from_ne_bytes(x).cmp(&u32::from_ne_bytes(y));
    }
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// Checks a comparator's name before it is recorded.
pub(crate) fn check_name(name: &str) -> crate::Result<()> {
    if name.is_empty() || name.len() > MAX_COMPARATOR_NAME {
        return Err(crate::Error::InvalidArgument(format!(
            "comparator name must be 1..={MAX_COMPARATOR_NAME} bytes, got {}",
            name.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `bytewise_cmp` is the slice order, on keys that share prefixes of
    /// every length around the word size.
    #[test]
    fn bytewise_matches_slice_order() {
        use proptest::prelude::*;
        let key = || {
            (0usize..48, proptest::collection::vec(0u8..4, 0..48)).prop_map(|(p, mut v)| {
                // A run of one byte first, so that most pairs share a
                // prefix and differ late, or only in length.
                let p = p.min(v.len());
                v[..p].fill(1);
                v
            })
        };
        proptest!(|(a in key(), b in key())| {
            prop_assert_eq!(bytewise_cmp(&a, &b), a.cmp(&b));
            prop_assert_eq!(bytewise_cmp(&b, &a), b.cmp(&a));
            prop_assert_eq!(bytewise_cmp(&a, &a), Ordering::Equal);
        });
    }

    #[test]
    fn builtin_orders() {
        let o = Order::Reverse;
        assert_eq!(o.cmp(b"ba", b"ab"), Ordering::Less);
        assert_eq!(o.cmp(b"a", b"ba"), Ordering::Less);
        assert_eq!(o.cmp(b"", b"a"), Ordering::Less);
        let (one, big) = (1u32.to_ne_bytes(), 256u32.to_ne_bytes());
        assert_eq!(Order::U32.cmp(&one, &big), Ordering::Less);
        let (one, big) = (1u64.to_ne_bytes(), (1u64 << 40).to_ne_bytes());
        assert_eq!(Order::U64.cmp(&one, &big), Ordering::Less);
        assert_eq!(Order::U32.cmp(b"abc", b"abcd"), Ordering::Less);
        for code in 0..=3 {
            assert_eq!(Order::builtin(code).unwrap().unwrap().code(), code);
        }
        assert!(Order::builtin(CODE_CUSTOM).unwrap().is_none());
        assert!(Order::builtin(5).is_err());
    }
}
