//! # sarsen-raft
//!
//! Sarsen as the storage of an [openraft](https://docs.rs/openraft/0.9)
//! cluster (openraft **0.9.25**, the newest release that is not an alpha):
//!
//! - [`LogStore`]: openraft's `RaftLogStorage` and `RaftLogReader`. The log,
//!   the vote and the purge point live in their own Sarsen environment;
//!   appends commit at once (readable on return) and reach the disk by a
//!   group sync shared by every append waiting for it.
//! - [`StateMachine`]: openraft's `RaftStateMachine`. A key-value map with
//!   [`Command::Put`], [`Command::Delete`] and [`Command::Merge`]; each batch
//!   of entries is one Sarsen write transaction together with the
//!   last-applied log id and the membership.
//! - [`SnapshotBuilder`]: a snapshot is written from one read transaction
//!   (consistent while the state machine keeps applying) to a file, which
//!   openraft streams to followers in chunks; a follower installs it in one
//!   write transaction.
//!
//! [`open`] opens both under one directory. The example node `sarsen-kv`
//! (this crate's binary) serves them over HTTP.
#![deny(missing_docs)]
#![deny(unsafe_code)]

use std::path::Path;

use serde::{Deserialize, Serialize};

pub mod client;
mod error;
mod log_store;
mod snapshot;
mod state_machine;

pub use error::StoreError;
pub use log_store::{LogReader, LogStore};
pub use state_machine::{KvReader, SnapshotBuilder, StateMachine, StateMachineOptions};

/// A node's id in the cluster.
pub type NodeId = u64;

/// Where a node is reached: its HTTP address, `host:port`.
pub type Node = openraft::BasicNode;

openraft::declare_raft_types!(
    /// The openraft type configuration of the Sarsen store: commands are
    /// [`Command`], replies [`Reply`], node ids `u64`, nodes
    /// [`openraft::BasicNode`], snapshots files ([`tokio::fs::File`]).
    pub TypeConfig:
        D = Command,
        R = Reply,
        NodeId = NodeId,
        Node = Node,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = tokio::fs::File,
        AsyncRuntime = openraft::TokioRuntime,
);

/// The `Raft` handle of a Sarsen-backed node.
pub type Raft = openraft::Raft<TypeConfig>;

/// A command of the key-value state machine, the application data of a log
/// entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Command {
    /// Set `key` to `value`.
    Put {
        /// The key, 1 byte to the state machine's maximum key size.
        key: Vec<u8>,
        /// The value, up to the maximum value size.
        value: Vec<u8>,
    },
    /// Remove `key` if present.
    Delete {
        /// The key.
        key: Vec<u8>,
    },
    /// Combine `operand` into the value of `key` with the state machine's
    /// merge operator ([`StateMachineOptions::merge_operator`]).
    Merge {
        /// The key.
        key: Vec<u8>,
        /// The operand handed to the operator.
        operand: Vec<u8>,
    },
    /// Several commands in one log entry, applied in order (each answered
    /// on its own, a refused one changing nothing): how a node groups the
    /// writes of concurrent clients into one replication round and one
    /// sync. A batch inside a batch is refused.
    Batch(Vec<Command>),
}

impl std::fmt::Display for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Command::Put { key, value } => {
                write!(f, "put({} bytes, {} bytes)", key.len(), value.len())
            }
            Command::Delete { key } => write!(f, "delete({} bytes)", key.len()),
            Command::Merge { key, operand } => {
                write!(f, "merge({} bytes, {} bytes)", key.len(), operand.len())
            }
            Command::Batch(cmds) => write!(f, "batch({} commands)", cmds.len()),
        }
    }
}

/// The state machine's answer to one applied log entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Reply {
    /// A blank or membership entry, or a put: done.
    Done,
    /// A delete: whether the key was there.
    Deleted(bool),
    /// A merge: the value now stored.
    Merged(Vec<u8>),
    /// A batch: the reply to each of its commands, in order.
    Batch(Vec<Reply>),
    /// The command was refused, the same way on every node (key empty or
    /// too long, value too long, an operand the merge operator rejects, a
    /// merge without an operator): nothing changed.
    Refused(String),
}

/// Opens (creating if needed) a node's log store in `dir/log` and its state
/// machine in `dir/sm`.
///
/// # Errors
/// [`StoreError::Sarsen`] when an environment cannot be opened (another
/// process has it open, permissions, a damaged file), [`StoreError::Io`]
/// when a directory cannot be created, [`StoreError::Decode`] for a damaged
/// record.
pub fn open(
    dir: &Path,
    sm_options: StateMachineOptions,
) -> Result<(LogStore, StateMachine), StoreError> {
    let log = LogStore::open(&dir.join("log"))?;
    let sm = StateMachine::open(&dir.join("sm"), sm_options)?;
    Ok((log, sm))
}

/// Opens a Sarsen environment in `dir` for this crate's exclusive use.
#[allow(unsafe_code)]
pub(crate) fn open_env(
    dir: &Path,
    durability: sarsen::Durability,
) -> Result<sarsen::Env, StoreError> {
    std::fs::create_dir_all(dir)?;
    let options = sarsen::EnvOptions::new()
        .durability(durability)
        .exclusive(true);
    // SAFETY: `Env::open` is unsafe because another program rewriting the
    // mapped file would change slices under us. The environment is opened
    // `exclusive` (no other Sarsen opener while we hold it), its directory
    // belongs to this store, and no slice of it leaves this crate: every
    // read copies its bytes out before the transaction ends.
    let env = unsafe { options.open(dir)? };
    Ok(env)
}
