//! Three `sarsen-kv` processes on loopback: writes through the leader, the
//! leader SIGKILLed mid-stream, a new leader, every acknowledged write on
//! every node, the killed node restarted and caught up, a wiped node
//! re-added and caught up by snapshot. Bounded: 1,200 writes, every wait
//! with a deadline, the whole test under two minutes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sarsen_raft::client::KvClient;
use serde_json::Value;

const WRITES: usize = 1200;
const WRITERS: usize = 4;
const KILL_AT: usize = 300;

struct Node {
    id: u64,
    addr: String,
    dir: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

impl Node {
    fn start(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_sarsen-kv"))
            .args(["--id", &self.id.to_string(), "--addr", &self.addr])
            .arg("--dir")
            .arg(&self.dir)
            .args([
                "--heartbeat-ms",
                "50",
                "--snapshot-every",
                "200",
                "--keep-logs",
                "10",
            ])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
    }

    /// SIGKILL (what `Child::kill` sends on Unix), and reap.
    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

fn free_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

async fn metrics(http: &reqwest::Client, addr: &str) -> Option<Value> {
    let r = http
        .get(format!("http://{addr}/admin/metrics"))
        .send()
        .await
        .ok()?;
    r.json().await.ok()
}

async fn wait_for<F, Fut>(what: &str, limit: Duration, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while !f().await {
        assert!(
            start.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn post(http: &reqwest::Client, addr: &str, path: &str, body: Value) -> Value {
    let mut req = http.post(format!("http://{addr}{path}"));
    if !body.is_null() {
        req = req.json(&body);
    }
    let r = req.send().await.unwrap();
    let status = r.status();
    let text = r.text().await.unwrap();
    assert!(status.is_success(), "{path} on {addr}: {status} {text}");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

async fn leader_of(http: &reqwest::Client, nodes: &[&Node]) -> Option<u64> {
    for n in nodes {
        if let Some(m) = metrics(http, &n.addr).await {
            if m["state"] == "Leader" {
                return Some(n.id);
            }
        }
    }
    None
}

/// Waits until `node` has applied `index`, then checks that it holds every
/// acknowledged write.
async fn assert_holds(
    http: &reqwest::Client,
    node: &Node,
    index: u64,
    acked: &BTreeMap<String, String>,
) {
    wait_for(
        &format!("node {} to apply index {index}", node.id),
        Duration::from_secs(30),
        || async {
            metrics(http, &node.addr)
                .await
                .and_then(|m| m["last_applied"]["index"].as_u64())
                .is_some_and(|a| a >= index)
        },
    )
    .await;
    let dump: Value = http
        .get(format!("http://{}/admin/dump", node.addr))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let pairs = dump["pairs"].as_object().unwrap();
    let mut missing = 0;
    for (k, v) in acked {
        if pairs.get(k).and_then(Value::as_str) != Some(v.as_str()) {
            missing += 1;
        }
    }
    assert_eq!(
        missing,
        0,
        "node {} lacks {missing} of {} acknowledged writes",
        node.id,
        acked.len()
    );
}

fn dir_log(root: &Path, id: u64) -> (PathBuf, PathBuf) {
    (root.join(format!("n{id}")), root.join(format!("n{id}.log")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_nodes_survive_a_killed_leader_and_a_wiped_follower() {
    let started = Instant::now();
    let root = tempfile::tempdir().unwrap();
    let mut nodes: Vec<Node> = (1..=3)
        .map(|id| {
            let (dir, log) = dir_log(root.path(), id);
            Node {
                id,
                addr: free_addr(),
                dir,
                log,
                child: None,
            }
        })
        .collect();
    for n in &mut nodes {
        n.start();
    }
    let http = reqwest::Client::new();
    for n in &nodes {
        wait_for("the nodes to listen", Duration::from_secs(20), || async {
            metrics(&http, &n.addr).await.is_some()
        })
        .await;
    }

    // Node 1 alone, then 2 and 3 as learners, then all three voters.
    let a1 = nodes[0].addr.clone();
    post(&http, &a1, "/admin/init", Value::Null).await;
    wait_for("node 1 to lead", Duration::from_secs(10), || async {
        metrics(&http, &a1)
            .await
            .is_some_and(|m| m["state"] == "Leader")
    })
    .await;
    for n in &nodes[1..] {
        post(
            &http,
            &a1,
            "/admin/add-learner",
            serde_json::json!({"id": n.id, "addr": n.addr}),
        )
        .await;
    }
    post(
        &http,
        &a1,
        "/admin/change-membership",
        serde_json::json!({"members": [1, 2, 3]}),
    )
    .await;

    // Writers through the leader; the leader is killed once KILL_AT writes
    // are acknowledged.
    let addrs: Vec<String> = nodes.iter().map(|n| n.addr.clone()).collect();
    let acked = Arc::new(Mutex::new(BTreeMap::<String, String>::new()));
    let attempted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let (addrs, acked, attempted) = (addrs.clone(), acked.clone(), attempted.clone());
        writers.push(tokio::spawn(async move {
            let mut c = KvClient::new(addrs);
            let mut failed = 0;
            loop {
                let i = attempted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if i >= WRITES {
                    return failed;
                }
                let (k, v) = (format!("w{w}-{i}"), format!("value-{i}-{w}"));
                match c.put(&k, v.as_bytes()).await {
                    Ok(_) => {
                        acked.lock().unwrap().insert(k, v);
                    }
                    Err(_) => failed += 1,
                }
            }
        }));
    }
    wait_for("the first writes", Duration::from_secs(60), || async {
        acked.lock().unwrap().len() >= KILL_AT
    })
    .await;
    let old = leader_of(&http, &nodes.iter().collect::<Vec<_>>())
        .await
        .expect("a leader");
    let acked_before_kill = acked.lock().unwrap().len();
    nodes[(old - 1) as usize].kill();
    let killed_at = Instant::now();

    let mut failed = 0;
    for w in writers {
        failed += w.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    let after_kill = acked.len() - acked_before_kill;
    assert!(
        after_kill >= 500,
        "only {after_kill} writes acknowledged after the kill"
    );
    assert!(
        failed <= 2 * WRITERS,
        "{failed} writes failed (at most the ones in flight at the kill)"
    );
    let live: Vec<&Node> = nodes.iter().filter(|n| n.child.is_some()).collect();
    let new = leader_of(&http, &live).await.expect("a new leader");
    assert_ne!(new, old);
    eprintln!(
        "leader {old} killed; {new} leads; {after_kill} writes after the kill, {failed} failed"
    );
    let _ = killed_at;

    // Every acknowledged write, linearizably from the leader and locally
    // from every live node.
    let leader_addr = nodes[(new - 1) as usize].addr.clone();
    let last = metrics(&http, &leader_addr).await.unwrap()["last_applied"]["index"]
        .as_u64()
        .unwrap();
    let mut c = KvClient::new(vec![leader_addr.clone()]);
    for (k, v) in acked.iter().step_by(37) {
        assert_eq!(
            c.get(k).await.unwrap().as_deref(),
            Some(v.as_bytes()),
            "linearizable read of {k}"
        );
    }
    for n in nodes.iter().filter(|n| n.child.is_some()) {
        assert_holds(&http, n, last, &acked).await;
    }

    // The killed node comes back and catches up.
    nodes[(old - 1) as usize].start();
    assert_holds(&http, &nodes[(old - 1) as usize], last, &acked).await;

    // A follower leaves the cluster, is wiped and re-added: the leader has purged its log
    // behind a snapshot, so the node catches up by installing it.
    post(&http, &leader_addr, "/admin/snapshot", Value::Null).await;
    wait_for(
        "the leader to purge its log",
        Duration::from_secs(20),
        || async {
            metrics(&http, &leader_addr)
                .await
                .and_then(|m| m["purged"]["index"].as_u64())
                .is_some_and(|p| p > 100)
        },
    )
    .await;
    let wiped = nodes.iter().find(|n| n.id != new).unwrap().id;
    let others: Vec<u64> = (1..=3).filter(|&i| i != wiped).collect();
    post(
        &http,
        &leader_addr,
        "/admin/change-membership",
        serde_json::json!({"members": others}),
    )
    .await;
    let node = &mut nodes[(wiped - 1) as usize];
    node.kill();
    std::fs::remove_dir_all(&node.dir).unwrap();
    node.start();
    let (id, addr) = (node.id, node.addr.clone());
    wait_for(
        "the wiped node to listen",
        Duration::from_secs(20),
        || async { metrics(&http, &addr).await.is_some() },
    )
    .await;
    post(
        &http,
        &leader_addr,
        "/admin/add-learner",
        serde_json::json!({"id": id, "addr": addr}),
    )
    .await;
    post(
        &http,
        &leader_addr,
        "/admin/change-membership",
        serde_json::json!({"members": [1, 2, 3]}),
    )
    .await;
    let node = &nodes[(wiped - 1) as usize];
    assert_holds(&http, node, last, &acked).await;
    let m = metrics(&http, &node.addr).await.unwrap();
    assert!(
        m["snapshot"]["index"].as_u64().is_some(),
        "the wiped node caught up without a snapshot: {m}"
    );

    // And the cluster still takes writes with all three voters.
    let mut c = KvClient::new(addrs);
    c.put("after", b"all").await.unwrap();
    assert_eq!(c.get("after").await.unwrap().as_deref(), Some(&b"all"[..]));
    let took = started.elapsed();
    eprintln!("cluster test took {took:?}");
    assert!(took < Duration::from_secs(120));
}
