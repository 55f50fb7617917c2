//! Groups the writes of concurrent clients into one log entry
//! ([`Command::Batch`]): while one entry is being replicated and synced,
//! the writes that arrive wait here and go out together in the next one.
//! A write that arrives alone goes out alone, at once.

use openraft::error::{ClientWriteError, ForwardToLeader, RaftError};
use sarsen_raft::{Command, Node, NodeId, Raft, Reply};
use tokio::sync::{mpsc, oneshot};

/// Most commands in one entry.
const MAX_BATCH: usize = 256;

/// What became of one write.
pub enum Outcome {
    /// Committed and applied at log index `index`.
    Applied {
        /// The entry's log index (shared by the writes of one batch).
        index: u64,
        /// The state machine's reply to this write.
        reply: Reply,
    },
    /// This node is not the leader.
    NotLeader(ForwardToLeader<NodeId, Node>),
    /// Raft failed (shutting down, no quorum in time, storage).
    Failed(String),
}

/// A write waiting for its entry.
pub type Waiting = (Command, oneshot::Sender<Outcome>);

/// Sends the queued writes through `raft`, grouped, one entry in flight
/// at a time; runs until every sender is dropped.
pub async fn run(raft: Raft, mut rx: mpsc::Receiver<Waiting>) {
    while let Some(first) = rx.recv().await {
        let mut group = vec![first];
        while group.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(w) => group.push(w),
                Err(_) => break,
            }
        }
        let (cmds, waiting): (Vec<Command>, Vec<oneshot::Sender<Outcome>>) =
            group.into_iter().unzip();
        let alone = cmds.len() == 1;
        let cmd = if alone {
            cmds.into_iter()
                .next()
                .unwrap_or(Command::Batch(Vec::new()))
        } else {
            Command::Batch(cmds)
        };
        let outcomes: Vec<Outcome> = match raft.client_write(cmd).await {
            Ok(resp) => {
                let index = resp.log_id.index;
                match (alone, resp.data) {
                    (true, reply) => vec![Outcome::Applied { index, reply }],
                    (false, Reply::Batch(replies)) if replies.len() == waiting.len() => replies
                        .into_iter()
                        .map(|reply| Outcome::Applied { index, reply })
                        .collect(),
                    (false, other) => {
                        let why = format!("a batch was answered with {other:?}");
                        waiting
                            .iter()
                            .map(|_| Outcome::Failed(why.clone()))
                            .collect()
                    }
                }
            }
            Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f))) => waiting
                .iter()
                .map(|_| Outcome::NotLeader(f.clone()))
                .collect(),
            Err(e) => waiting
                .iter()
                .map(|_| Outcome::Failed(e.to_string()))
                .collect(),
        };
        for (tx, outcome) in waiting.into_iter().zip(outcomes) {
            let _ = tx.send(outcome);
        }
    }
}
