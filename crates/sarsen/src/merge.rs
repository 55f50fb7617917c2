//! Merge operators: read-modify-write of one value in one call (RocksDB's
//! `MergeOperator`).
//!
//! A database opened with an operator (see [`DbOptions::merge_operator`](crate::DbOptions::merge_operator))
//! accepts [`RwTxn::merge`](crate::RwTxn::merge): the writer descends to the
//! key once, hands the stored value (or `None`) and the operands to
//! [`MergeOperator::full_merge`], and writes the result in place. Unlike
//! RocksDB, which stores operands and folds them at read or compaction time,
//! Sarsen merges eagerly: the result is an ordinary value, visible to the
//! same transaction at once, committed or aborted with it, and read back by
//! any reader without the operator.
//!
//! RocksDB's optional *partial* merge (folding operands without the base
//! value) has no counterpart: the base value is always at hand when Sarsen
//! merges, so a partial merge would never be called.
//!
//! The operator's [`name`](MergeOperator::name) is recorded in the catalog
//! the first time a write transaction opens the database with it or merges
//! into it; opening it later with an operator of another name is
//! [`Error::MergeOperatorMismatch`](crate::Error::MergeOperatorMismatch).

use std::fmt;

/// Longest operator name recorded in the catalog, bytes.
pub const MAX_MERGE_NAME: usize = 255;

/// Why an operator refused to merge: returned by
/// [`MergeOperator::full_merge`] and reported by
/// [`RwTxn::merge`](crate::RwTxn::merge) as
/// [`Error::Merge`](crate::Error::Merge). The stored value is left unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergeError {
    what: String,
}

impl MergeError {
    /// An error saying `what` went wrong (shown to the caller of `merge`).
    pub fn new(what: impl Into<String>) -> MergeError {
        MergeError { what: what.into() }
    }

    /// What went wrong.
    pub fn what(&self) -> &str {
        &self.what
    }
}

impl fmt::Display for MergeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)
    }
}

impl std::error::Error for MergeError {}

/// A merge operator: computes a key's new value from its stored value and
/// one or more operands (RocksDB's `MergeOperator::FullMergeV2`).
///
/// Implementations must be deterministic: the same inputs give the same
/// output, since the name recorded in the catalog is all that ties a
/// database to its operator. They report failure with [`MergeError`] and
/// should not panic; if one does inside a write and the caller catches the
/// unwind, that write transaction is broken: its later writes and its
/// commit return [`Error::BadTxn`](crate::Error::BadTxn), as a panic
/// poisons std's `Mutex`, and nothing of it is committed.
///
/// ```
/// use sarsen::{DbOptions, MergeError, MergeOperator};
///
/// /// Keeps the longest value seen.
/// struct Longest;
///
/// impl MergeOperator for Longest {
///     fn name(&self) -> &str {
///         "longest"
///     }
///     fn full_merge(
///         &self,
///         _key: &[u8],
///         existing: Option<&[u8]>,
///         operands: &[&[u8]],
///         out: &mut Vec<u8>,
///     ) -> Result<(), MergeError> {
///         let best = existing
///             .into_iter()
///             .chain(operands.iter().copied())
///             .max_by_key(|v| v.len())
///             .ok_or_else(|| MergeError::new("no operands"))?;
///         out.extend_from_slice(best);
///         Ok(())
///     }
/// }
///
/// # fn main() -> Result<(), sarsen::Error> {
/// # let dir = tempfile::tempdir().unwrap();
/// let env = unsafe { sarsen::Env::open(dir.path())? };
/// let mut w = env.write_txn()?;
/// let db = w.create_db_with(Some("words"), &DbOptions::new().merge_operator(Longest))?;
/// w.merge(db, b"k", b"ab")?;
/// w.merge(db, b"k", b"abcd")?;
/// w.merge(db, b"k", b"a")?;
/// assert_eq!(w.get(db, b"k")?, Some(&b"abcd"[..]));
/// w.commit()?;
/// # Ok(())
/// # }
/// ```
pub trait MergeOperator: Send + Sync + 'static {
    /// The name recorded in the catalog: 1 to [`MAX_MERGE_NAME`] bytes.
    /// Two operators with the same name must compute the same results.
    fn name(&self) -> &str;

    /// Writes into `out` (empty on entry) the value that `key` holds after
    /// applying `operands`, in order, to `existing` (`None` when the key is
    /// absent). `operands` holds at least one operand.
    ///
    /// # Errors
    ///
    /// Return a [`MergeError`] to refuse the merge (an operand or stored
    /// value the operator cannot read, say). That aborts this merge only:
    /// the caller gets [`Error::Merge`](crate::Error::Merge), the value
    /// stays as it was, whatever `out` holds, and the transaction stays
    /// usable.
    fn full_merge(
        &self,
        key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
        out: &mut Vec<u8>,
    ) -> Result<(), MergeError>;
}

/// Reads an 8-byte little-endian word, or says which input was not one.
fn word(v: &[u8], which: &str, op: &str) -> Result<u64, MergeError> {
    <[u8; 8]>::try_from(v)
        .map(u64::from_le_bytes)
        .map_err(|_| MergeError::new(format!("{op}: {which} is {} bytes, not 8", v.len())))
}

/// Wrapping sum of an optional 8-byte base and 8-byte operands.
fn add_words(
    op: &str,
    existing: Option<&[u8]>,
    operands: &[&[u8]],
    out: &mut Vec<u8>,
) -> Result<(), MergeError> {
    let mut sum = match existing {
        Some(v) => word(v, "the stored value", op)?,
        None => 0,
    };
    for o in operands {
        sum = sum.wrapping_add(word(o, "an operand", op)?);
    }
    out.extend_from_slice(&sum.to_le_bytes());
    Ok(())
}

/// Unsigned 64-bit counter: the value and every operand are 8 bytes,
/// little-endian; the new value is their sum modulo 2^64 (an absent key
/// counts as 0). Name `"uint64add"`, as db_bench's `--merge_operator`.
///
/// Mirrors RocksDB's `UInt64AddOperator`, except that a stored value or
/// operand of any length other than 8 is an error
/// ([`Error::Merge`](crate::Error::Merge)), where RocksDB logs it and
/// counts it as 0.
///
/// ```
/// use sarsen::{merge::Uint64Add, MergeOperator};
/// let mut out = Vec::new();
/// let one = 1u64.to_le_bytes();
/// Uint64Add.full_merge(b"k", Some(&41u64.to_le_bytes()), &[&one], &mut out).unwrap();
/// assert_eq!(out, 42u64.to_le_bytes());
/// assert!(Uint64Add.full_merge(b"k", Some(b"abc"), &[&one], &mut Vec::new()).is_err());
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Uint64Add;

impl MergeOperator for Uint64Add {
    fn name(&self) -> &str {
        "uint64add"
    }
    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
        out: &mut Vec<u8>,
    ) -> Result<(), MergeError> {
        add_words("uint64add", existing, operands, out)
    }
}

/// Signed 64-bit counter: the value and every operand are 8-byte
/// little-endian two's-complement integers; the new value is their
/// wrapping sum (an absent key counts as 0). Name `"int64add"`.
///
/// Two's-complement addition gives the same bytes as [`Uint64Add`]; the
/// separate name records that the database holds signed counters. RocksDB
/// has no built-in signed counter.
///
/// ```
/// use sarsen::{merge::Int64Add, MergeOperator};
/// let mut out = Vec::new();
/// let minus_five = (-5i64).to_le_bytes();
/// Int64Add.full_merge(b"k", Some(&3i64.to_le_bytes()), &[&minus_five], &mut out).unwrap();
/// assert_eq!(out, (-2i64).to_le_bytes());
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Int64Add;

impl MergeOperator for Int64Add {
    fn name(&self) -> &str {
        "int64add"
    }
    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
        out: &mut Vec<u8>,
    ) -> Result<(), MergeError> {
        add_words("int64add", existing, operands, out)
    }
}

/// The greatest of the stored value and the operands, compared bytewise
/// (`memcmp` order, a prefix before its extensions). Name `"max"`.
/// Mirrors RocksDB's `MaxOperator`.
///
/// ```
/// use sarsen::{merge::Max, MergeOperator};
/// let mut out = Vec::new();
/// Max.full_merge(b"k", Some(b"b"), &[b"a", b"ba"], &mut out).unwrap();
/// assert_eq!(out, b"ba");
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Max;

impl MergeOperator for Max {
    fn name(&self) -> &str {
        "max"
    }
    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
        out: &mut Vec<u8>,
    ) -> Result<(), MergeError> {
        let best = existing.into_iter().chain(operands.iter().copied()).max();
        out.extend_from_slice(best.unwrap_or_default());
        Ok(())
    }
}

/// The least of the stored value and the operands, compared bytewise.
/// Name `"min"`. RocksDB has no built-in counterpart; it is [`Max`]
/// reversed.
///
/// ```
/// use sarsen::{merge::Min, MergeOperator};
/// let mut out = Vec::new();
/// Min.full_merge(b"k", None, &[b"b", b"ab"], &mut out).unwrap();
/// assert_eq!(out, b"ab");
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Min;

impl MergeOperator for Min {
    fn name(&self) -> &str {
        "min"
    }
    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
        out: &mut Vec<u8>,
    ) -> Result<(), MergeError> {
        let least = existing.into_iter().chain(operands.iter().copied()).min();
        out.extend_from_slice(least.unwrap_or_default());
        Ok(())
    }
}

/// Concatenation: the stored value followed by each operand, with an
/// optional delimiter between consecutive parts (none before the first
/// part when the key is absent). Name `"append"` without a delimiter,
/// `"append:"` followed by the delimiter's bytes in lowercase hex with one.
///
/// Mirrors RocksDB's `StringAppendOperator` (whose delimiter defaults to
/// `,`; here the default is none).
///
/// ```
/// use sarsen::{merge::Append, MergeOperator};
/// let comma = Append::with_delimiter(b",");
/// assert_eq!(comma.name(), "append:2c");
/// let mut out = Vec::new();
/// comma.full_merge(b"k", Some(b"a"), &[b"b", b"c"], &mut out).unwrap();
/// assert_eq!(out, b"a,b,c");
/// ```
#[derive(Clone, Debug, Default)]
pub struct Append {
    delimiter: Vec<u8>,
    name: String,
}

impl Append {
    /// Plain concatenation, no delimiter.
    pub fn new() -> Append {
        Append::with_delimiter(b"")
    }

    /// Concatenation with `delimiter` between parts. A delimiter longer
    /// than 124 bytes gives a name too long to record: attaching it fails
    /// with [`Error::InvalidArgument`](crate::Error::InvalidArgument).
    pub fn with_delimiter(delimiter: &[u8]) -> Append {
        let mut name = String::from("append");
        if !delimiter.is_empty() {
            name.push(':');
            for b in delimiter {
                name.push_str(&format!("{b:02x}"));
            }
        }
        Append {
            delimiter: delimiter.to_vec(),
            name,
        }
    }
}

impl MergeOperator for Append {
    fn name(&self) -> &str {
        &self.name
    }
    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
        out: &mut Vec<u8>,
    ) -> Result<(), MergeError> {
        for (i, part) in existing
            .into_iter()
            .chain(operands.iter().copied())
            .enumerate()
        {
            if i > 0 {
                out.extend_from_slice(&self.delimiter);
            }
            out.extend_from_slice(part);
        }
        Ok(())
    }
}

/// Write-once values: a key that holds a value keeps it; an absent key
/// takes the first operand. Name `"put_if_absent"`. A merge that leaves the
/// value as it was writes nothing. (LMDB's `MDB_NOOVERWRITE` put as a merge;
/// RocksDB has no built-in counterpart.)
///
/// ```
/// use sarsen::{merge::PutIfAbsent, MergeOperator};
/// let mut out = Vec::new();
/// PutIfAbsent.full_merge(b"k", None, &[b"first", b"second"], &mut out).unwrap();
/// assert_eq!(out, b"first");
/// out.clear();
/// PutIfAbsent.full_merge(b"k", Some(b"first"), &[b"third"], &mut out).unwrap();
/// assert_eq!(out, b"first");
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct PutIfAbsent;

impl MergeOperator for PutIfAbsent {
    fn name(&self) -> &str {
        "put_if_absent"
    }
    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
        out: &mut Vec<u8>,
    ) -> Result<(), MergeError> {
        let v = existing
            .or_else(|| operands.first().copied())
            .ok_or_else(|| MergeError::new("put_if_absent: no operand"))?;
        out.extend_from_slice(v);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(op: &dyn MergeOperator, existing: Option<&[u8]>, ops: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        op.full_merge(b"k", existing, ops, &mut out).unwrap();
        out
    }

    #[test]
    fn counters_wrap_and_refuse_other_lengths() {
        let max = u64::MAX.to_le_bytes();
        let two = 2u64.to_le_bytes();
        assert_eq!(run(&Uint64Add, Some(&max), &[&two]), 1u64.to_le_bytes());
        assert_eq!(run(&Uint64Add, None, &[&two, &two]), 4u64.to_le_bytes());
        let min = i64::MIN.to_le_bytes();
        let m1 = (-1i64).to_le_bytes();
        assert_eq!(run(&Int64Add, Some(&min), &[&m1]), i64::MAX.to_le_bytes());
        for op in [&Uint64Add as &dyn MergeOperator, &Int64Add] {
            let mut out = Vec::new();
            let e = op.full_merge(b"k", None, &[&two, b"1234567"], &mut out);
            assert!(e.unwrap_err().what().contains("7 bytes"));
            let e = op.full_merge(b"k", Some(b""), &[&two], &mut out);
            assert!(e.unwrap_err().what().contains("stored value"));
        }
    }

    #[test]
    fn order_operators_compare_bytewise() {
        assert_eq!(run(&Max, None, &[b"a", b"", b"ab"]), b"ab");
        assert_eq!(run(&Min, Some(b"a"), &[b"", b"ab"]), b"");
        assert_eq!(run(&Max, Some(b"z"), &[b"y"]), b"z");
    }

    #[test]
    fn append_places_delimiters_between_parts_only() {
        assert_eq!(run(&Append::new(), Some(b"x"), &[b"y", b"z"]), b"xyz");
        let d = Append::with_delimiter(b"--");
        assert_eq!(d.name(), "append:2d2d");
        assert_eq!(run(&d, None, &[b"a"]), b"a");
        assert_eq!(run(&d, None, &[b"a", b"b"]), b"a--b");
        assert_eq!(run(&d, Some(b""), &[b"b"]), b"--b");
        assert!(crate::db::check_operator_name(Append::with_delimiter(&[0; 125]).name()).is_err());
    }
}
