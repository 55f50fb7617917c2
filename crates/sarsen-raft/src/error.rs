//! The crate's error type and its conversion into openraft's `StorageError`.

use openraft::{AnyError, ErrorSubject, ErrorVerb, StorageError, StorageIOError};

use crate::NodeId;

/// Why a store operation failed.
///
/// Every variant is a failure of the storage itself (the disk, the
/// database, a damaged file), never of a client's command: a command that
/// the state machine refuses (a key too long, a merge operand the operator
/// rejects) is answered with [`Reply::Refused`](crate::Reply::Refused) and
/// the log moves on. openraft receives these wrapped in its
/// [`StorageError`] and stops the node, as it must when storage fails.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Sarsen reported an error (I/O, a full disk, a damaged file, ...).
    #[error("sarsen: {0}")]
    Sarsen(#[from] sarsen::Error),
    /// A stored record (log entry, vote, applied state) did not decode.
    #[error("undecodable {what}: {source}")]
    Decode {
        /// Which record.
        what: &'static str,
        /// The decoder's complaint.
        source: bincode::Error,
    },
    /// A record could not be encoded (should not happen for these types).
    #[error("unencodable {what}: {source}")]
    Encode {
        /// Which record.
        what: &'static str,
        /// The encoder's complaint.
        source: bincode::Error,
    },
    /// Reading or writing a snapshot file failed.
    #[error("snapshot file: {0}")]
    Io(#[from] std::io::Error),
    /// A snapshot file is damaged or is not the snapshot it claims to be.
    #[error("bad snapshot: {0}")]
    BadSnapshot(String),
    /// The log holds an entry under another index than its own.
    #[error("log entry stored at index {stored} has index {actual}")]
    MisplacedEntry {
        /// The index it is stored under.
        stored: u64,
        /// The index in its log id.
        actual: u64,
    },
    /// The log holds a key that is not an 8-byte index.
    #[error("log key of {len} bytes")]
    BadLogKey {
        /// Its length.
        len: usize,
    },
    /// A blocking task running a store operation panicked or was cancelled.
    #[error("store task failed: {0}")]
    Task(String),
    /// The background thread that syncs the log is gone.
    #[error("the log's sync thread has stopped")]
    SyncThreadGone,
}

impl StoreError {
    /// Wraps the error as openraft's [`StorageError`] about `subject`, with
    /// the action `verb`.
    pub fn into_storage(
        self,
        subject: ErrorSubject<NodeId>,
        verb: ErrorVerb,
    ) -> StorageError<NodeId> {
        StorageError::IO {
            source: StorageIOError::new(subject, verb, AnyError::new(&self)),
        }
    }
}

/// Shorthand used throughout the crate.
pub(crate) type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Decodes a bincode record, naming it in the error. bincode 1.3 decoding
/// from a slice checks every length against the bytes left and caps the
/// space it reserves for sequences, so damaged input is an error, never a
/// huge allocation (the test below keeps that true).
pub(crate) fn decode<T: serde::de::DeserializeOwned>(
    what: &'static str,
    bytes: &[u8],
) -> Result<T> {
    bincode::deserialize(bytes).map_err(|source| StoreError::Decode { what, source })
}

/// Encodes a bincode record, naming it in the error.
pub(crate) fn encode<T: serde::Serialize>(what: &'static str, value: &T) -> Result<Vec<u8>> {
    bincode::serialize(value).map_err(|source| StoreError::Encode { what, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_length_past_the_input_is_an_error_not_an_allocation() {
        for value in [
            bincode::serialize("abc").unwrap(),
            bincode::serialize(&vec![1u8, 2, 3]).unwrap(),
        ] {
            let mut bytes = value;
            bytes[..8].copy_from_slice(&u64::MAX.to_le_bytes());
            assert!(matches!(
                decode::<String>("v", &bytes),
                Err(StoreError::Decode { what: "v", .. })
            ));
            assert!(matches!(
                decode::<Vec<u8>>("v", &bytes),
                Err(StoreError::Decode { what: "v", .. })
            ));
        }
    }
}
