//! The child side: runs one workload on one engine and measures its timed section.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::cli::Params;
use crate::data::{mix64, KeyFormat, Permutation, Values};
use crate::engines::{Engine, EngineKind, OpenOptions, Reader, Result, SyncMode};
use crate::workload::{fillsync_count, DbState, Workload};

/// Seed salts, so that each random stream is independent of the others.
const SALT_FILL: u64 = 0x1;
const SALT_FILLSYNC: u64 = 0x2;
const SALT_READ: u64 = 0x100;
const SALT_WRITE: u64 = 0x200;
/// Most verification messages kept.
const MAX_ERRORS: usize = 20;

/// One (engine, workload) run, as passed from the parent to a child process.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Spec {
    /// Engine to open.
    pub engine: EngineKind,
    /// Workload to run.
    pub workload: Workload,
    /// The engine's database directory (exists; empty for fills).
    pub dir: PathBuf,
    /// Workload parameters.
    pub params: Params,
    /// What the database holds before the workload (None for a new one).
    pub before: Option<DbState>,
    /// Verify what is read against what was written (`--check`).
    pub verify: bool,
}

/// What a child measured, sent to the parent as one JSON line on stdout.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Measurement {
    /// Seconds of the timed section.
    pub wall_s: f64,
    /// Gets done, or entries visited by a scan.
    pub read_ops: u64,
    /// Puts done.
    pub write_ops: u64,
    /// Gets that found their key.
    pub found: u64,
    /// Bytes of keys and values written.
    pub bytes_written: u64,
    /// Bytes of values (and keys, for scans) read.
    pub bytes_read: u64,
    /// Verification failures (only with `verify`).
    pub errors: Vec<String>,
}

/// Runs `spec` in this process.
pub fn run_spec(spec: &Spec) -> Result<Measurement> {
    crate::with_engine!(spec.engine, E => run::<E>(spec), missing => Err(spec.engine.not_built()))
}

/// Everything a workload needs, shared by its threads.
struct Ctx<'a, E> {
    engine: &'a E,
    p: &'a Params,
    keys: KeyFormat,
    values: Values,
    before: Option<DbState>,
    /// What readers may see: `before`, except that values change under readwhilewriting.
    read_state: Option<DbState>,
    verify: bool,
    errors: Mutex<Vec<String>>,
}

impl<E> Ctx<'_, E> {
    fn error(&self, msg: String) {
        let mut errors = self.errors.lock().unwrap_or_else(|e| e.into_inner());
        if errors.len() < MAX_ERRORS {
            errors.push(msg);
        }
    }

    /// Checks a value read for key `idx` against the database state.
    fn check_value(&self, state: Option<DbState>, idx: u64, v: &[u8]) {
        let pristine = state.is_some_and(|s| s.pristine);
        if pristine && v != self.values.get(idx, 0) {
            self.error(format!("key {idx}: value differs from the one written"));
        } else if v.len() != self.values.size() {
            self.error(format!(
                "key {idx}: value has {} bytes, not {}",
                v.len(),
                self.values.size()
            ));
        }
    }
}

fn run<E: Engine>(spec: &Spec) -> Result<Measurement> {
    let p = &spec.params;
    let w = spec.workload;
    let opts = OpenOptions {
        sync: if w == Workload::FillSync {
            SyncMode::Durable
        } else {
            SyncMode::Async
        },
        data_bytes: p.num.saturating_mul((p.key_size + p.value_size) as u64),
        readers: u32::try_from(p.threads)?,
        random_reads: matches!(w, Workload::ReadRandom | Workload::ReadWhileWriting),
        merge_operator: None,
        cache_bytes: 0,
    };
    let engine = E::open(&spec.dir, &opts)?;
    let ctx = Ctx {
        engine: &engine,
        p,
        keys: KeyFormat::new(p.key_size),
        values: Values::new(p.value_size, p.seed),
        before: spec.before,
        read_state: match w {
            Workload::ReadWhileWriting => w.state_after(p, spec.before),
            _ => spec.before,
        },
        verify: spec.verify,
        errors: Mutex::new(Vec::new()),
    };
    let mut m = match w {
        Workload::FillSeq => fill(&ctx, true)?,
        Workload::FillRandom => fill(&ctx, false)?,
        Workload::FillSync => fill_sync(&ctx)?,
        Workload::ReadRandom => read_random(&ctx)?,
        Workload::ReadSeq => read_seq(&ctx)?,
        Workload::ReadWhileWriting => read_while_writing(&ctx)?,
    };
    if spec.verify {
        if w.is_fill() {
            engine.sync()?;
        }
        // readseq checked its own scan.
        if let Some(after) = w
            .state_after(p, spec.before)
            .filter(|_| w != Workload::ReadSeq)
        {
            verify_scan(&ctx, after)?;
        }
    }
    m.errors = ctx.errors.into_inner().unwrap_or_else(|e| e.into_inner());
    Ok(m)
}

/// fillseq / fillrandom: `num` keys, `batch` per transaction.
fn fill<E: Engine>(ctx: &Ctx<'_, E>, sequential: bool) -> Result<Measurement> {
    let (n, batch, ks) = (ctx.p.num, ctx.p.batch, ctx.keys.size());
    let perm = Permutation::new(n, ctx.p.seed ^ SALT_FILL);
    let mut keybuf = vec![0u8; batch * ks];
    let mut idxs = Vec::with_capacity(batch);
    let start = Instant::now();
    let mut i = 0;
    while i < n {
        let m = (batch as u64).min(n - i);
        idxs.clear();
        idxs.extend((i..i + m).map(|x| if sequential { x } else { perm.get(x) }));
        for (k, &idx) in keybuf.chunks_exact_mut(ks).zip(&idxs) {
            ctx.keys.write(idx, k);
        }
        let pairs: Vec<(&[u8], &[u8])> = keybuf
            .chunks_exact(ks)
            .zip(&idxs)
            .map(|(k, &idx)| (k, ctx.values.get(idx, 0)))
            .collect();
        ctx.engine.write_batch(&pairs, sequential)?;
        i += m;
    }
    Ok(Measurement {
        wall_s: start.elapsed().as_secs_f64(),
        write_ops: n,
        bytes_written: n * (ks + ctx.values.size()) as u64,
        ..Measurement::default()
    })
}

/// fillsync: `num/1000` keys in random order, one durable commit per write. The keys
/// are the first `num/1000` of a seeded permutation (see [`existing_key`]).
fn fill_sync<E: Engine>(ctx: &Ctx<'_, E>) -> Result<Measurement> {
    let n = fillsync_count(ctx.p.num);
    let perm = Permutation::new(ctx.p.num, ctx.p.seed ^ SALT_FILLSYNC);
    let mut key = vec![0u8; ctx.keys.size()];
    let start = Instant::now();
    for i in 0..n {
        let idx = perm.get(i);
        ctx.keys.write(idx, &mut key);
        ctx.engine
            .write_batch(&[(&key, ctx.values.get(idx, 0))], false)?;
    }
    Ok(Measurement {
        wall_s: start.elapsed().as_secs_f64(),
        write_ops: n,
        bytes_written: n * (key.len() + ctx.values.size()) as u64,
        ..Measurement::default()
    })
}

/// Counters of one reader thread.
#[derive(Default)]
struct ReadStats {
    ops: u64,
    found: u64,
    bytes: u64,
}

/// One readrandom thread: random keys of `0..num`, one read transaction per get.
fn reader_thread<E: Engine>(ctx: &Ctx<'_, E>, thread: usize, start: Instant) -> Result<ReadStats> {
    let mut reader = ctx.engine.reader()?;
    let mut rng = SmallRng::seed_from_u64(mix64(ctx.p.seed ^ SALT_READ ^ thread as u64));
    let mut key = vec![0u8; ctx.keys.size()];
    let deadline = (ctx.p.duration > 0).then(|| start + Duration::from_secs(ctx.p.duration));
    let mut st = ReadStats::default();
    loop {
        match deadline {
            Some(d) => {
                if st.ops % 256 == 0 && Instant::now() >= d {
                    break;
                }
            }
            None => {
                if st.ops >= ctx.p.reads {
                    break;
                }
            }
        }
        let idx = rng.random_range(0..ctx.p.num);
        ctx.keys.write(idx, &mut key);
        let got = reader.get(&key, |v| {
            if ctx.verify {
                ctx.check_value(ctx.read_state, idx, v);
            }
            v.len()
        })?;
        st.ops += 1;
        if let Some(len) = got {
            st.found += 1;
            st.bytes += len as u64;
        }
    }
    Ok(st)
}

/// Runs `threads` reader threads to completion; returns their summed counters.
fn run_readers<E: Engine>(ctx: &Ctx<'_, E>, start: Instant) -> Result<ReadStats> {
    let results: Vec<Result<ReadStats>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..ctx.p.threads)
            .map(|t| s.spawn(move || reader_thread(ctx, t, start)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("reader thread panicked".into()))
            })
            .collect()
    });
    let mut total = ReadStats::default();
    for r in results {
        let r = r?;
        total.ops += r.ops;
        total.found += r.found;
        total.bytes += r.bytes;
    }
    if ctx.verify && ctx.read_state.is_some_and(|s| s.all_keys) && total.found != total.ops {
        ctx.error(format!(
            "found {} of {} keys that all exist",
            total.found, total.ops
        ));
    }
    Ok(total)
}

/// readrandom.
fn read_random<E: Engine>(ctx: &Ctx<'_, E>) -> Result<Measurement> {
    let start = Instant::now();
    let st = run_readers(ctx, start)?;
    Ok(Measurement {
        wall_s: start.elapsed().as_secs_f64(),
        read_ops: st.ops,
        found: st.found,
        bytes_read: st.bytes,
        ..Measurement::default()
    })
}

/// A random existing key index: any of `0..num` when the DB holds them all, else one
/// of the keys fillsync wrote (the only fill that writes a subset).
fn existing_key(
    p: &Params,
    state: Option<DbState>,
    sync_perm: &Permutation,
    rng: &mut SmallRng,
) -> u64 {
    match state {
        Some(s) if !s.all_keys && s.entries > 0 => sync_perm.get(rng.random_range(0..s.entries)),
        _ => rng.random_range(0..p.num),
    }
}

/// The readwhilewriting writer: overwrites random existing keys, one per transaction,
/// with new values, until `stop`. Returns the number of writes.
fn writer_thread<E: Engine>(ctx: &Ctx<'_, E>, stop: &AtomicBool) -> Result<u64> {
    let mut rng = SmallRng::seed_from_u64(mix64(ctx.p.seed ^ SALT_WRITE));
    let sync_perm = Permutation::new(ctx.p.num, ctx.p.seed ^ SALT_FILLSYNC);
    let mut key = vec![0u8; ctx.keys.size()];
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let idx = existing_key(ctx.p, ctx.before, &sync_perm, &mut rng);
        ctx.keys.write(idx, &mut key);
        ctx.engine
            .write_batch(&[(&key, ctx.values.get(idx, n + 1))], false)?;
        n += 1;
    }
    Ok(n)
}

/// readwhilewriting: readers run to completion while one writer overwrites.
fn read_while_writing<E: Engine>(ctx: &Ctx<'_, E>) -> Result<Measurement> {
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let (reads, writes, wall) = std::thread::scope(|s| {
        let writer = s.spawn(|| writer_thread(ctx, &stop));
        let reads = run_readers(ctx, start);
        let wall = start.elapsed();
        stop.store(true, Ordering::Relaxed);
        let writes = writer
            .join()
            .unwrap_or_else(|_| Err("writer thread panicked".into()));
        (reads, writes, wall)
    });
    let (reads, writes) = (reads?, writes?);
    Ok(Measurement {
        wall_s: wall.as_secs_f64(),
        read_ops: reads.ops,
        write_ops: writes,
        found: reads.found,
        bytes_read: reads.bytes,
        bytes_written: writes * (ctx.keys.size() + ctx.values.size()) as u64,
        errors: Vec::new(),
    })
}

/// Checks the entries of a scan: well-formed keys in strictly ascending order, and
/// values as written.
struct ScanChecker<'c, 'a, E> {
    ctx: &'c Ctx<'a, E>,
    state: DbState,
    last: Option<u64>,
}

impl<E> ScanChecker<'_, '_, E> {
    fn visit(&mut self, k: &[u8], v: &[u8]) {
        let Some(idx) = self.ctx.keys.parse(k).filter(|&i| i < self.ctx.p.num) else {
            self.ctx.error(format!(
                "scan: unexpected key {:?}",
                String::from_utf8_lossy(k)
            ));
            return;
        };
        if self.last.is_some_and(|l| l >= idx) {
            self.ctx
                .error(format!("scan: key {idx} after key {:?}", self.last));
        }
        self.last = Some(idx);
        self.ctx.check_value(Some(self.state), idx, v);
    }

    fn finish(self, count: u64) {
        if count != self.state.entries {
            self.ctx.error(format!(
                "scan: {count} entries, expected {}",
                self.state.entries
            ));
        }
    }
}

/// readseq: one ordered scan of the whole database.
fn read_seq<E: Engine>(ctx: &Ctx<'_, E>) -> Result<Measurement> {
    let mut bytes = 0u64;
    let mut checker = ctx.before.filter(|_| ctx.verify).map(|state| ScanChecker {
        ctx,
        state,
        last: None,
    });
    let start = Instant::now();
    let n = ctx.engine.scan(false, |k, v| {
        bytes += (k.len() + v.len()) as u64;
        if let Some(c) = checker.as_mut() {
            c.visit(k, v);
        }
    })?;
    let wall_s = start.elapsed().as_secs_f64();
    if let Some(c) = checker {
        c.finish(n);
    }
    Ok(Measurement {
        wall_s,
        read_ops: n,
        found: n,
        bytes_read: bytes,
        ..Measurement::default()
    })
}

/// After a workload in `--check` mode: scans everything and checks it against `state`.
fn verify_scan<E: Engine>(ctx: &Ctx<'_, E>, state: DbState) -> Result<()> {
    let mut checker = ScanChecker {
        ctx,
        state,
        last: None,
    };
    let n = ctx.engine.scan(false, |k, v| checker.visit(k, v))?;
    checker.finish(n);
    Ok(())
}
