//! The long stress run: one writer thread and several reader threads on one
//! environment, reopened every epoch.
//!
//! The writer runs random transactions (puts with some values in overflow
//! runs, deletes, merges with four built-in operators, clears, a named
//! database dropped and created again, some transactions aborted) and keeps
//! a model of every committed state by txnid. Each transaction also puts
//! its own txnid under the main database's key `__txn`. Readers take
//! snapshots and check that each one equals the committed model state of
//! its txnid: names of databases, every entry forwards, a range backwards,
//! and again after holding the snapshot while the writer goes on (pages a
//! snapshot can reach must not be rewritten). `Env::check` runs every few
//! commits and at the end of each epoch; each reopen (with another
//! durability mode, and write-map mode every other epoch) must show the
//! last commit.
//!
//! `cargo run --release -p sarsen-fuzz --bin sarsen-stress -- --minutes 10`

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sarsen::{Database, DbOptions, Durability, Env, EnvOptions, RoTxn, RwTxn};

use crate::api::{model_merge, operator};

type Map = BTreeMap<Vec<u8>, Vec<u8>>;
/// Database name (`""` for main) to entries.
type State = BTreeMap<String, Map>;

/// The databases: name and the index of its operator in [`operator`]
/// (`None`: no operator; this one is dropped and created again).
const DBS: [(&str, Option<usize>); 5] = [
    ("", Some(3)),
    ("counters", Some(1)),
    ("hi", Some(2)),
    ("logs", Some(0)),
    ("plain", None),
];

/// How a stress run goes.
#[derive(Clone, Debug)]
pub struct StressConfig {
    /// How long the whole run takes.
    pub duration: Duration,
    /// How long each epoch lasts (the environment is reopened between).
    pub epoch: Duration,
    /// Reader threads.
    pub readers: usize,
    /// Seed of the writer's and readers' choices.
    pub seed: u64,
    /// Where the database lives (a scratch directory if `None`).
    pub dir: Option<PathBuf>,
    /// `Env::check` every this many commits.
    pub check_every: u64,
}

impl Default for StressConfig {
    fn default() -> StressConfig {
        StressConfig {
            duration: Duration::from_secs(60),
            epoch: Duration::from_secs(15),
            readers: 3,
            seed: 1,
            dir: None,
            check_every: 50,
        }
    }
}

/// What a stress run did.
#[derive(Clone, Debug, Default)]
pub struct StressReport {
    /// Wall time.
    pub elapsed: Duration,
    /// Epochs (each one opens the environment).
    pub epochs: u64,
    /// Committed write transactions.
    pub commits: u64,
    /// Aborted ones.
    pub aborts: u64,
    /// Puts, deletes, merges, clears, drops and creates.
    pub ops: u64,
    /// Merges among them.
    pub merges: u64,
    /// Snapshots readers compared with the model (each twice).
    pub snapshots_verified: u64,
    /// Entries readers compared.
    pub entries_compared: u64,
    /// Clean `Env::check` runs.
    pub checks: u64,
    /// The last txnid.
    pub last_txnid: u64,
    /// Entries at the end.
    pub entries: u64,
}

/// Shared between the writer and the readers of one epoch.
struct Shared {
    history: Mutex<BTreeMap<u64, Arc<State>>>,
    latest: AtomicU64,
    /// Per reader: a txnid whose state must be kept (0: none).
    hazards: Vec<AtomicU64>,
    stop: AtomicBool,
    failure: Mutex<Option<String>>,
    verified: AtomicU64,
    compared: AtomicU64,
}

impl Shared {
    fn fail(&self, msg: String) {
        let mut f = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        f.get_or_insert(msg);
        self.stop.store(true, SeqCst);
    }
}

fn options(epoch: u64) -> EnvOptions {
    let d = match epoch % 4 {
        0 => Durability::Durable,
        1 => Durability::SafeNoSync,
        2 => Durability::NoMetaSync,
        _ => Durability::NoSync,
    };
    EnvOptions::new()
        .page_size(if epoch == 0 { 1024 } else { 4096 })
        .durability(d)
        .write_map(epoch % 2 == 1)
        .max_size(4 << 30)
}

fn db_opts(i: usize) -> DbOptions {
    match DBS[i].1 {
        Some(op) => DbOptions::new().merge_operator_arc(operator(op)),
        None => DbOptions::new(),
    }
}

/// Runs the stress test; `Err` describes the first failure.
pub fn run(cfg: &StressConfig) -> Result<StressReport, String> {
    let scratch = crate::scratch_dir();
    let dir = cfg
        .dir
        .clone()
        .unwrap_or_else(|| scratch.path().to_path_buf());
    let start = Instant::now();
    let mut rep = StressReport::default();
    let mut model: (u64, Arc<State>) = (0, Arc::new(State::from([(String::new(), Map::new())])));
    let mut rng = StdRng::seed_from_u64(cfg.seed);
    while rep.epochs == 0 || start.elapsed() < cfg.duration {
        // SAFETY: the directory belongs to this run.
        let env = unsafe { options(rep.epochs).open(&dir) }.map_err(|e| format!("open: {e:?}"))?;
        if model.0 == 0 {
            model.0 = env.read_txn().map_err(|e| format!("{e:?}"))?.txnid();
        }
        verify_reopen(&env, &model)?;
        let shared = Shared {
            history: Mutex::new(BTreeMap::from([(model.0, model.1.clone())])),
            latest: AtomicU64::new(model.0),
            hazards: (0..cfg.readers).map(|_| AtomicU64::new(0)).collect(),
            stop: AtomicBool::new(false),
            failure: Mutex::new(None),
            verified: AtomicU64::new(0),
            compared: AtomicU64::new(0),
        };
        let left = cfg.duration.saturating_sub(start.elapsed());
        let until = Instant::now() + cfg.epoch.min(left);
        std::thread::scope(|s| {
            for r in 0..cfg.readers {
                let (env, shared) = (&env, &shared);
                let seed = crate::mix(cfg.seed ^ (rep.epochs << 8) ^ r as u64);
                s.spawn(move || reader(env, shared, r, seed));
            }
            let w = writer(&env, &shared, &mut model, &mut rng, &mut rep, until, cfg);
            if let Err(e) = w {
                shared.fail(e);
            }
            shared.stop.store(true, SeqCst);
        });
        if let Some(f) = shared.failure.lock().unwrap().take() {
            return Err(format!("epoch {}: {f}", rep.epochs));
        }
        check(&env, "end of epoch")?;
        rep.checks += 1;
        rep.snapshots_verified += shared.verified.load(SeqCst);
        rep.entries_compared += shared.compared.load(SeqCst);
        rep.epochs += 1;
    }
    // SAFETY: as above.
    let env = unsafe { options(0).open(&dir) }.map_err(|e| format!("last open: {e:?}"))?;
    verify_reopen(&env, &model)?;
    check(&env, "last open")?;
    rep.checks += 1;
    rep.last_txnid = model.0;
    rep.entries = model.1.values().map(|m| m.len() as u64).sum();
    rep.elapsed = start.elapsed();
    Ok(rep)
}

fn check(env: &Env, what: &str) -> Result<(), String> {
    let r = env.check().map_err(|e| format!("{what}: check: {e:?}"))?;
    if !r.is_ok() {
        return Err(format!(
            "{what}: check found {} problems: {:?}",
            r.problems_total,
            &r.problems[..r.problems.len().min(5)]
        ));
    }
    Ok(())
}

/// After an open: the newest snapshot is the last commit, and equals it.
fn verify_reopen(env: &Env, model: &(u64, Arc<State>)) -> Result<(), String> {
    let r = env.read_txn().map_err(|e| format!("read_txn: {e:?}"))?;
    if r.txnid() != model.0 {
        return Err(format!(
            "reopened at txnid {}, last commit {}",
            r.txnid(),
            model.0
        ));
    }
    compare(&r, &model.1, &mut StdRng::seed_from_u64(model.0), true).map(|_| ())
}

/// Compares snapshot `r` with `st`; returns the entries compared.
fn compare(r: &RoTxn, st: &State, rng: &mut StdRng, full: bool) -> Result<u64, String> {
    let names: Vec<&String> = st.keys().filter(|n| !n.is_empty()).collect();
    let listed = r.list_dbs().map_err(|e| format!("list_dbs: {e:?}"))?;
    if listed.iter().collect::<Vec<_>>() != names {
        return Err(format!(
            "txnid {}: list_dbs {listed:?}, model {names:?}",
            r.txnid()
        ));
    }
    let mut n = 0;
    for (name, m) in st {
        let h = match r.open_db((!name.is_empty()).then_some(name.as_str())) {
            Ok(Some(h)) => h,
            other => return Err(format!("open_db({name}): {other:?}")),
        };
        let what = format!("txnid {} db {name:?}", r.txnid());
        if full || rng.random_bool(0.5) {
            let mut it = m.iter();
            for e in r.iter(h).map_err(|e| format!("{what}: iter: {e:?}"))? {
                let (k, v) = e.map_err(|e| format!("{what}: next: {e:?}"))?;
                if it.next() != Some((&k.to_vec(), &v.to_vec())) {
                    return Err(format!("{what}: entry {} differs from the model", n));
                }
                n += 1;
            }
            if it.next().is_some() {
                return Err(format!("{what}: scan ended before the model"));
            }
        }
        n += compare_range_back(r, h, m, rng, &what)?;
    }
    Ok(n)
}

/// A random range, walked backwards, against the model.
fn compare_range_back(
    r: &RoTxn,
    h: Database,
    m: &Map,
    rng: &mut StdRng,
    what: &str,
) -> Result<u64, String> {
    let (a, b) = (
        key(rng.random_range(0..2000)),
        key(rng.random_range(0..2000)),
    );
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    let got: Result<Vec<_>, _> = r
        .range(h, lo.as_slice()..hi.as_slice())
        .map_err(|e| format!("{what}: range: {e:?}"))?
        .rev()
        .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())))
        .collect();
    let got = got.map_err(|e| format!("{what}: range next: {e:?}"))?;
    let want: Vec<_> = m
        .range(lo..hi)
        .rev()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if got != want {
        return Err(format!("{what}: backward range differs from the model"));
    }
    Ok(got.len() as u64)
}

fn key(n: u32) -> Vec<u8> {
    format!("k{n:05}").into_bytes()
}

/// A reader thread: snapshots checked against the model until told to stop.
fn reader(env: &Env, sh: &Shared, idx: usize, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    while !sh.stop.load(SeqCst) {
        if let Err(e) = read_once(env, sh, idx, &mut rng) {
            sh.fail(format!("reader {idx}: {e}"));
        }
        sh.hazards[idx].store(0, SeqCst);
    }
}

fn read_once(env: &Env, sh: &Shared, idx: usize, rng: &mut StdRng) -> Result<(), String> {
    // Protect the newest state from pruning before taking the snapshot
    // (a hazard pointer: publish, then confirm it is still the newest).
    loop {
        let l = sh.latest.load(SeqCst);
        sh.hazards[idx].store(l, SeqCst);
        if sh.latest.load(SeqCst) == l {
            break;
        }
    }
    let r = env.read_txn().map_err(|e| format!("read_txn: {e:?}"))?;
    let t = r.txnid();
    let deadline = Instant::now() + Duration::from_secs(60);
    let st = loop {
        if let Some(st) = sh.history.lock().unwrap().get(&t) {
            break st.clone();
        }
        if Instant::now() > deadline || sh.stop.load(SeqCst) {
            return Ok(());
        }
        std::thread::yield_now();
    };
    if let Some(v) = st[""].get(&b"__txn"[..]) {
        if v.as_slice() != t.to_le_bytes() {
            return Err(format!("snapshot {t}: __txn holds {v:?}"));
        }
    }
    let n = compare(&r, &st, rng, true)?;
    // Hold the snapshot while the writer goes on, then compare again.
    std::thread::sleep(Duration::from_micros(rng.random_range(0..3000)));
    let m = compare(&r, &st, rng, false)?;
    sh.verified.fetch_add(1, SeqCst);
    sh.compared.fetch_add(n + m, SeqCst);
    Ok(())
}

mod writer;
use writer::writer;
