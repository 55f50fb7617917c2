//! `sarsen-kv`: one node of a replicated key-value store, openraft over
//! Sarsen, with an HTTP API.
//!
//! ```text
//! sarsen-kv --id 1 --addr 127.0.0.1:21001 --dir /tmp/kv1
//! ```
//!
//! Clients: `PUT /kv/{key}` (body: the value), `DELETE /kv/{key}`,
//! `POST /kv/{key}/merge` (body: the operand, appended to the value),
//! `GET /kv/{key}` (linearizable, through the leader; `?local=true` for this
//! node's state). A node that is not the leader answers writes and reads
//! with 421 and the leader's address in `x-leader`.
//!
//! Admin: `POST /admin/init` (`{"nodes": {"1": "host:port", ...}}`, empty
//! for this node alone), `POST /admin/add-learner` (`{"id": 2, "addr":
//! "host:port"}`), `POST /admin/change-membership` (`{"members": [1,2,3]}`; voters left out
//! leave the cluster unless `"retain": true` keeps them as learners),
//! `GET /admin/metrics`, `GET /admin/dump`, `POST /admin/snapshot`.

mod api;
mod batch;
mod network;

use std::path::PathBuf;
use std::sync::Arc;

use clap::Parser;
use openraft::{Config, SnapshotPolicy};
use sarsen::merge::Append;
use sarsen_raft::{NodeId, Raft, StateMachineOptions};

#[derive(Parser)]
#[command(about = "One node of a Sarsen key-value store replicated by openraft")]
struct Args {
    /// This node's id (unique in the cluster, not 0).
    #[arg(long)]
    id: NodeId,
    /// Address to listen on and to be reached at, host:port.
    #[arg(long)]
    addr: String,
    /// Directory of this node's log and state machine.
    #[arg(long)]
    dir: PathBuf,
    /// Leader heartbeat interval, ms (elections time out after 3-6 of them).
    #[arg(long, default_value_t = 100)]
    heartbeat_ms: u64,
    /// Build a snapshot after this many log entries since the last one.
    #[arg(long, default_value_t = 10_000)]
    snapshot_every: u64,
    /// Log entries kept behind a snapshot (for followers slightly behind).
    #[arg(long, default_value_t = 1_000)]
    keep_logs: u64,
}

#[derive(Debug, thiserror::Error)]
enum Fail {
    #[error("store: {0}")]
    Store(#[from] sarsen_raft::StoreError),
    #[error("config: {0}")]
    Config(#[from] openraft::ConfigError),
    #[error("raft: {0}")]
    Raft(#[from] openraft::error::Fatal<NodeId>),
    #[error("listen on {addr}: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
    #[error("http: {0}")]
    Http(#[from] reqwest::Error),
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("SARSEN_KV_LOG"))
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    match run(args).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sarsen-kv: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Fail> {
    let config = Config {
        cluster_name: "sarsen-kv".into(),
        heartbeat_interval: args.heartbeat_ms,
        election_timeout_min: args.heartbeat_ms * 3,
        election_timeout_max: args.heartbeat_ms * 6,
        snapshot_policy: SnapshotPolicy::LogsSinceLast(args.snapshot_every),
        max_in_snapshot_log_to_keep: args.keep_logs,
        snapshot_max_chunk_size: 1 << 20,
        ..Default::default()
    }
    .validate()?;
    let (log, sm) = sarsen_raft::open(
        &args.dir,
        StateMachineOptions::new().merge_operator(Append::new()),
    )?;
    let kv = sm.reader();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()?;
    let network = network::Network { client };
    let raft = Raft::new(args.id, Arc::new(config), network, log, sm).await?;
    let (writes, waiting) = tokio::sync::mpsc::channel(4096);
    tokio::spawn(batch::run(raft.clone(), waiting));
    let app = Arc::new(api::App {
        writes,
        id: args.id,
        addr: args.addr.clone(),
        raft: raft.clone(),
        kv,
    });
    let listener = tokio::net::TcpListener::bind(&args.addr)
        .await
        .map_err(|source| Fail::Listen {
            addr: args.addr.clone(),
            source,
        })?;
    eprintln!("sarsen-kv: node {} listening on {}", args.id, args.addr);
    let served = axum::serve(listener, api::router(app)).with_graceful_shutdown(async {
        let _ = tokio::signal::ctrl_c().await;
    });
    let r = served.await.map_err(|source| Fail::Listen {
        addr: args.addr.clone(),
        source,
    });
    let _ = raft.shutdown().await;
    r
}
