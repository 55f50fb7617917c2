//! `sarsen-kv-bench`: replicated writes per second and latency on a 3-node
//! `sarsen-kv` cluster on loopback, beside a 1-node cluster (openraft and
//! HTTP without replication) and plain Sarsen (one durable commit per
//! write, no network), each with 1 and 8 client threads.
//!
//! ```text
//! cargo build --release -p sarsen-raft
//! target/release/sarsen-kv-bench --writes 3000 --runs 3
//! ```
//!
//! Every write is a `PUT` of a new key (16 bytes) with a value of
//! `--value-size` bytes (100), acknowledged once committed by a quorum and
//! applied on the leader. Each client thread runs its own connection and
//! sends its next write when the last is acknowledged. Latency is measured
//! per write at the client.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;
use sarsen_raft::client::KvClient;

#[derive(Parser)]
#[command(about = "Replicated write throughput and latency of sarsen-kv on loopback")]
struct Args {
    /// Writes per configuration (split over the client threads).
    #[arg(long, default_value_t = 4000)]
    writes: usize,
    /// Client thread counts to run.
    #[arg(long, value_delimiter = ',', default_value = "1,8")]
    threads: Vec<usize>,
    /// Value size, bytes.
    #[arg(long, default_value_t = 100)]
    value_size: usize,
    /// The sarsen-kv binary (default: beside this one).
    #[arg(long)]
    node_bin: Option<PathBuf>,
    /// Runs of each configuration; the run of median throughput is shown.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Directory for the nodes' data (default: a new temporary directory).
    #[arg(long)]
    dir: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
enum Fail {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("client: {0}")]
    Client(#[from] sarsen_raft::client::ClientError),
    #[error("http: {0}")]
    Http(#[from] reqwest::Error),
    #[error("sarsen: {0}")]
    Sarsen(#[from] sarsen::Error),
    #[error("{0}")]
    Other(String),
}

struct Nodes(Vec<Child>);

impl Drop for Nodes {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn free_addr() -> Result<String, Fail> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.to_string())
}

/// Starts `n` nodes and makes them one cluster; returns their addresses.
fn start_cluster(
    bin: &Path,
    dir: &Path,
    n: u64,
    rt: &tokio::runtime::Runtime,
) -> Result<(Nodes, Vec<String>), Fail> {
    let mut nodes = Nodes(Vec::new());
    let mut addrs = Vec::new();
    for id in 1..=n {
        let addr = free_addr()?;
        let child = Command::new(bin)
            .args(["--id", &id.to_string(), "--addr", &addr])
            .arg("--dir")
            .arg(dir.join(format!("n{id}")))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        nodes.0.push(child);
        addrs.push(addr);
    }
    rt.block_on(async {
        let http = reqwest::Client::new();
        for a in &addrs {
            let start = Instant::now();
            while http
                .get(format!("http://{a}/admin/metrics"))
                .send()
                .await
                .is_err()
            {
                if start.elapsed() > Duration::from_secs(20) {
                    return Err(Fail::Other(format!("node at {a} did not start")));
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        let l = &addrs[0];
        http.post(format!("http://{l}/admin/init"))
            .send()
            .await?
            .error_for_status()?;
        for (i, a) in addrs.iter().enumerate().skip(1) {
            let body = serde_json::json!({"id": i + 1, "addr": a});
            http.post(format!("http://{l}/admin/add-learner"))
                .json(&body)
                .send()
                .await?
                .error_for_status()?;
        }
        let members: Vec<usize> = (1..=addrs.len()).collect();
        let body = serde_json::json!({ "members": members });
        http.post(format!("http://{l}/admin/change-membership"))
            .json(&body)
            .send()
            .await?
            .error_for_status()?;
        Ok::<(), Fail>(())
    })?;
    Ok((nodes, addrs))
}

struct Figures {
    writes: usize,
    secs: f64,
    p50_us: u64,
    p99_us: u64,
}

fn figures(mut lat: Vec<Duration>, secs: f64) -> Figures {
    lat.sort();
    let at = |q: f64| {
        lat.get(((lat.len() as f64 * q) as usize).min(lat.len().saturating_sub(1)))
            .map_or(0, |d| d.as_micros() as u64)
    };
    Figures {
        writes: lat.len(),
        secs,
        p50_us: at(0.50),
        p99_us: at(0.99),
    }
}

/// Median time of 200 rewrite-and-fdatasync of one 4 KiB block, ms: the
/// disk's sync cost at the moment of the run.
fn sync_probe(path: &Path) -> Result<f64, Fail> {
    use std::io::{Seek, SeekFrom, Write};
    let mut f = std::fs::File::create(path)?;
    let block = [7u8; 4096];
    let mut times = Vec::with_capacity(200);
    for _ in 0..200 {
        let s = Instant::now();
        f.seek(SeekFrom::Start(0))?;
        f.write_all(&block)?;
        f.sync_data()?;
        times.push(s.elapsed());
    }
    let _ = std::fs::remove_file(path);
    times.sort();
    Ok(times[times.len() / 2].as_secs_f64() * 1000.0)
}

/// The run of median throughput.
fn median(mut runs: Vec<Figures>) -> Figures {
    runs.sort_by(|a, b| (a.writes as f64 / a.secs).total_cmp(&(b.writes as f64 / b.secs)));
    let mid = runs.len() / 2;
    runs.swap_remove(mid)
}

/// `threads` clients each doing `writes / threads` puts against `addrs`.
fn run_cluster(
    addrs: &[String],
    threads: usize,
    writes: usize,
    value: &[u8],
    tag: &str,
) -> Result<Figures, Fail> {
    let per = writes / threads;
    let start = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (addrs, value, tag) = (addrs.to_vec(), value.to_vec(), tag.to_string());
            std::thread::spawn(move || -> Result<Vec<Duration>, Fail> {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                rt.block_on(async {
                    let mut c = KvClient::new(addrs);
                    let mut lat = Vec::with_capacity(per);
                    for i in 0..per {
                        let key = format!("{tag}-{t:02}-{i:08}");
                        let s = Instant::now();
                        c.put(&key, &value).await?;
                        lat.push(s.elapsed());
                    }
                    Ok(lat)
                })
            })
        })
        .collect();
    let mut lat = Vec::new();
    for h in handles {
        lat.extend(
            h.join()
                .map_err(|_| Fail::Other("client thread panicked".into()))??,
        );
    }
    Ok(figures(lat, start.elapsed().as_secs_f64()))
}

/// The same writes on plain Sarsen: one durable write transaction each.
fn run_sarsen(
    dir: &Path,
    threads: usize,
    writes: usize,
    value: &[u8],
    tag: &str,
) -> Result<Figures, Fail> {
    std::fs::create_dir_all(dir)?;
    // SAFETY: the environment is in a directory this run created for it;
    // nothing else maps or rewrites its file.
    #[allow(unsafe_code)]
    let env = unsafe {
        sarsen::EnvOptions::new()
            .durability(sarsen::Durability::Durable)
            .open(dir)?
    };
    let per = writes / threads;
    let start = Instant::now();
    let lat = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let env = &env;
                s.spawn(move || -> Result<Vec<Duration>, Fail> {
                    let mut lat = Vec::with_capacity(per);
                    for i in 0..per {
                        let key = format!("{tag}-{t:02}-{i:08}");
                        let st = Instant::now();
                        let mut w = env.write_txn()?;
                        w.put(env.main_db(), key.as_bytes(), value)?;
                        w.commit()?;
                        lat.push(st.elapsed());
                    }
                    Ok(lat)
                })
            })
            .collect();
        let mut lat = Vec::new();
        for h in handles {
            lat.extend(
                h.join()
                    .map_err(|_| Fail::Other("writer thread panicked".into()))??,
            );
        }
        Ok::<_, Fail>(lat)
    })?;
    Ok(figures(lat, start.elapsed().as_secs_f64()))
}

fn main() -> std::process::ExitCode {
    match run(Args::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sarsen-kv-bench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<(), Fail> {
    let bin = match args.node_bin {
        Some(b) => b,
        None => std::env::current_exe()?.with_file_name("sarsen-kv"),
    };
    let tmp;
    let dir = match args.dir {
        Some(d) => d,
        None => {
            tmp = std::env::temp_dir().join(format!("sarsen-kv-bench-{}", std::process::id()));
            tmp
        }
    };
    let value = vec![b'v'; args.value_size];
    std::fs::create_dir_all(&dir)?;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load.split_whitespace().next().unwrap_or("?").to_string();
    println!(
        "fdatasync of a 4 KiB write: p50 {:.2} ms; load average {load}",
        sync_probe(&dir.join("probe"))?
    );
    println!();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    println!("| setup | client threads | writes | writes/s | p50 ms | p99 ms |");
    println!("|---|---|---|---|---|---|");
    let show = |setup: &str, threads: usize, f: &Figures| {
        println!(
            "| {setup} | {threads} | {} | {:.0} | {:.2} | {:.2} |",
            f.writes,
            f.writes as f64 / f.secs,
            f.p50_us as f64 / 1000.0,
            f.p99_us as f64 / 1000.0
        );
    };
    // Both clusters stay up and the runs interleave, so that a slow
    // moment of the disk or the machine falls on every setup alike.
    let (three, a3) = start_cluster(&bin, &dir.join("cluster3"), 3, &rt)?;
    let (one, a1) = start_cluster(&bin, &dir.join("cluster1"), 1, &rt)?;
    let setups = [
        "sarsen-kv, 3 nodes",
        "sarsen-kv, 1 node",
        "plain Sarsen, durable commit per write",
    ];
    let mut results: Vec<Vec<Vec<Figures>>> = setups
        .iter()
        .map(|_| args.threads.iter().map(|_| Vec::new()).collect())
        .collect();
    for r in 0..args.runs.max(1) {
        for (ti, &t) in args.threads.iter().enumerate() {
            let t = t.max(1);
            let tag = format!("t{t}r{r}");
            results[0][ti].push(run_cluster(&a3, t, args.writes, &value, &tag)?);
            results[1][ti].push(run_cluster(&a1, t, args.writes, &value, &tag)?);
            let d = dir.join(format!("sarsen-t{t}-r{r}"));
            results[2][ti].push(run_sarsen(&d, t, args.writes, &value, &tag)?);
        }
    }
    drop((three, one));
    for (setup, per_threads) in setups.iter().zip(results) {
        for (&t, runs) in args.threads.iter().zip(per_threads) {
            show(setup, t, &median(runs));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
