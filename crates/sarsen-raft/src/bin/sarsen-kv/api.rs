//! The node's HTTP routes: the key-value API for clients, the admin calls,
//! and the Raft RPCs from peers.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use openraft::error::{CheckIsLeaderError, ClientWriteError, ForwardToLeader, RaftError};
use openraft::raft::{AppendEntriesRequest, InstallSnapshotRequest, VoteRequest};
use sarsen_raft::{Command, KvReader, Node, NodeId, Raft, Reply, TypeConfig};
use serde::{Deserialize, Serialize};

use crate::batch::Outcome;

/// What every handler needs.
pub struct App {
    /// This node's id.
    pub id: NodeId,
    /// This node's address, `host:port`.
    pub addr: String,
    /// The Raft handle.
    pub raft: Raft,
    /// Local reads of the state machine.
    pub kv: KvReader,
    /// The queue of the write batcher ([`crate::batch::run`]).
    pub writes: tokio::sync::mpsc::Sender<crate::batch::Waiting>,
}

type Shared = State<Arc<App>>;

/// Every route of the node, on `app`.
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/kv/{key}", put(put_key).get(get_key).delete(delete_key))
        .route("/kv/{key}/merge", post(merge_key))
        .route("/admin/init", post(init))
        .route("/admin/add-learner", post(add_learner))
        .route("/admin/change-membership", post(change_membership))
        .route("/admin/metrics", get(metrics))
        .route("/admin/dump", get(dump))
        .route("/admin/snapshot", post(snapshot))
        .route("/raft/append", post(raft_append))
        .route("/raft/vote", post(raft_vote))
        .route("/raft/snapshot", post(raft_snapshot))
        .with_state(app)
}

fn text(status: StatusCode, msg: impl Into<String>) -> Response {
    (status, msg.into()).into_response()
}

/// 421 with the leader's address in `x-leader`, or 503 when none is known.
fn not_leader(f: &ForwardToLeader<NodeId, Node>) -> Response {
    match &f.leader_node {
        Some(node) => {
            let mut h = HeaderMap::new();
            if let Ok(v) = HeaderValue::from_str(&node.addr) {
                h.insert("x-leader", v);
            }
            (
                StatusCode::MISDIRECTED_REQUEST,
                h,
                format!(
                    "not the leader; leader is {} at {}",
                    f.leader_id.unwrap_or_default(),
                    node.addr
                ),
            )
                .into_response()
        }
        None => text(StatusCode::SERVICE_UNAVAILABLE, "no leader known"),
    }
}

#[derive(Serialize)]
struct Written {
    index: u64,
    reply: Reply,
}

async fn write(app: &App, cmd: Command) -> Response {
    let (tx, rx) = tokio::sync::oneshot::channel();
    if app.writes.send((cmd, tx)).await.is_err() {
        return text(StatusCode::SERVICE_UNAVAILABLE, "shutting down");
    }
    match rx.await {
        Ok(Outcome::Applied {
            reply: Reply::Refused(why),
            ..
        }) => text(StatusCode::BAD_REQUEST, why),
        Ok(Outcome::Applied { index, reply }) => Json(Written { index, reply }).into_response(),
        Ok(Outcome::NotLeader(f)) => not_leader(&f),
        Ok(Outcome::Failed(why)) => text(StatusCode::SERVICE_UNAVAILABLE, why),
        Err(_) => text(StatusCode::SERVICE_UNAVAILABLE, "shutting down"),
    }
}

async fn put_key(State(app): Shared, Path(key): Path<String>, body: Bytes) -> Response {
    write(
        &app,
        Command::Put {
            key: key.into_bytes(),
            value: body.to_vec(),
        },
    )
    .await
}

async fn delete_key(State(app): Shared, Path(key): Path<String>) -> Response {
    write(
        &app,
        Command::Delete {
            key: key.into_bytes(),
        },
    )
    .await
}

async fn merge_key(State(app): Shared, Path(key): Path<String>, body: Bytes) -> Response {
    write(
        &app,
        Command::Merge {
            key: key.into_bytes(),
            operand: body.to_vec(),
        },
    )
    .await
}

#[derive(Deserialize)]
struct ReadMode {
    #[serde(default)]
    local: bool,
}

/// Linearizable by default (this node must be the leader and confirm it
/// with a quorum); `?local=true` reads this node's state as it is.
async fn get_key(
    State(app): Shared,
    Path(key): Path<String>,
    Query(mode): Query<ReadMode>,
) -> Response {
    if !mode.local {
        match app.raft.ensure_linearizable().await {
            Ok(_) => {}
            Err(RaftError::APIError(CheckIsLeaderError::ForwardToLeader(f))) => {
                return not_leader(&f)
            }
            Err(e) => return text(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
        }
    }
    let kv = app.kv.clone();
    match tokio::task::spawn_blocking(move || kv.get(key.as_bytes())).await {
        Ok(Ok(Some(v))) => (StatusCode::OK, v).into_response(),
        Ok(Ok(None)) => text(StatusCode::NOT_FOUND, "no such key"),
        Ok(Err(e)) => text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// Body: `{"nodes": {"1": "127.0.0.1:21001", ...}}`; empty or absent: this
/// node alone.
#[derive(Deserialize, Default)]
struct InitBody {
    #[serde(default)]
    nodes: BTreeMap<NodeId, String>,
}

async fn init(State(app): Shared, body: Option<Json<InitBody>>) -> Response {
    let mut nodes: BTreeMap<NodeId, Node> = body
        .map(|b| b.0)
        .unwrap_or_default()
        .nodes
        .into_iter()
        .map(|(id, a)| (id, Node::new(a)))
        .collect();
    if nodes.is_empty() {
        nodes.insert(app.id, Node::new(&app.addr));
    }
    match app.raft.initialize(nodes).await {
        Ok(()) => text(StatusCode::OK, "initialized"),
        Err(e) => text(StatusCode::CONFLICT, e.to_string()),
    }
}

#[derive(Deserialize)]
struct LearnerBody {
    id: NodeId,
    addr: String,
}

/// Adds a learner and waits until it has caught up with the leader's log.
async fn add_learner(State(app): Shared, Json(b): Json<LearnerBody>) -> Response {
    match app.raft.add_learner(b.id, Node::new(b.addr), true).await {
        Ok(r) => Json(serde_json::json!({"index": r.log_id.index})).into_response(),
        Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f))) => not_leader(&f),
        Err(e) => text(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
    }
}

#[derive(Deserialize)]
struct MembersBody {
    members: Vec<NodeId>,
    #[serde(default)]
    retain: bool,
}

/// Makes `members` the voters (each must be a node already: a learner or
/// a voter). Voters left out leave the cluster, or stay as learners with
/// `"retain": true`. A node to be wiped must leave first: openraft's leader
/// refuses (panics on) a member whose log goes backwards.
async fn change_membership(State(app): Shared, Json(b): Json<MembersBody>) -> Response {
    let members: std::collections::BTreeSet<NodeId> = b.members.into_iter().collect();
    match app.raft.change_membership(members, b.retain).await {
        Ok(r) => Json(serde_json::json!({"index": r.log_id.index})).into_response(),
        Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f))) => not_leader(&f),
        Err(e) => text(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
    }
}

async fn metrics(State(app): Shared) -> Response {
    let m = app.raft.metrics().borrow().clone();
    Json(m).into_response()
}

/// Every key and value of this node (values as UTF-8, lossily), with the
/// last applied index: for tests and inspection of small data sets.
async fn dump(State(app): Shared) -> Response {
    let kv = app.kv.clone();
    match tokio::task::spawn_blocking(move || kv.dump()).await {
        Ok(Ok((applied, pairs))) => {
            let pairs: BTreeMap<String, String> = pairs
                .into_iter()
                .map(|(k, v)| {
                    (
                        String::from_utf8_lossy(&k).into_owned(),
                        String::from_utf8_lossy(&v).into_owned(),
                    )
                })
                .collect();
            Json(serde_json::json!({"applied": applied.map(|l| l.index), "pairs": pairs}))
                .into_response()
        }
        Ok(Err(e)) => text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// Builds a snapshot now (openraft then purges the log behind it as its
/// configuration allows).
async fn snapshot(State(app): Shared) -> Response {
    match app.raft.trigger().snapshot().await {
        Ok(()) => text(StatusCode::OK, "snapshot triggered"),
        Err(e) => text(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
    }
}

fn bin<T: Serialize>(v: &T) -> Response {
    match bincode::serialize(v) {
        Ok(b) => (StatusCode::OK, b).into_response(),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

fn undecodable(e: bincode::Error) -> Response {
    text(StatusCode::BAD_REQUEST, format!("undecodable RPC: {e}"))
}

async fn raft_append(State(app): Shared, body: Bytes) -> Response {
    let req: AppendEntriesRequest<TypeConfig> = match bincode::deserialize(&body) {
        Ok(r) => r,
        Err(e) => return undecodable(e),
    };
    bin(&app.raft.append_entries(req).await)
}

async fn raft_vote(State(app): Shared, body: Bytes) -> Response {
    let req: VoteRequest<NodeId> = match bincode::deserialize(&body) {
        Ok(r) => r,
        Err(e) => return undecodable(e),
    };
    bin(&app.raft.vote(req).await)
}

async fn raft_snapshot(State(app): Shared, body: Bytes) -> Response {
    let req: InstallSnapshotRequest<TypeConfig> = match bincode::deserialize(&body) {
        Ok(r) => r,
        Err(e) => return undecodable(e),
    };
    bin(&app.raft.install_snapshot(req).await)
}
