//! The child side: runs one workload on one engine and measures its timed section.
//!
//! One module per kind of workload: [`fill`] (new databases), [`fillsync`]
//! (durable one-put commits by writer threads), [`read`] (gets, scans, and
//! readwhilewriting), [`write`] (writes to existing keys), [`cursor`] (deletes
//! through a write cursor).

mod cursor;
mod fill;
mod fillsync;
mod read;
mod write;

use std::path::PathBuf;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::cli::Params;
use crate::data::{KeyFormat, Values};
use crate::engines::{Engine, EngineKind, OpenOptions, Result, SyncMode};
use crate::latency::LatencySummary;
use crate::workload::{DbState, Workload};

/// Seed salts, so that each random stream is independent of the others.
const SALT_FILL: u64 = 0x1;
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
    /// Threads that did the workload's operations (readers, or writers).
    pub threads: usize,
    /// Gets done, or entries visited by a scan.
    pub read_ops: u64,
    /// Puts, merges or deletes done.
    pub write_ops: u64,
    /// Gets (or read-modify-writes, deletes) that found their key.
    pub found: u64,
    /// Bytes of keys and values written.
    pub bytes_written: u64,
    /// Bytes of values (and keys, for scans) read.
    pub bytes_read: u64,
    /// Latency per get (per entry for nothing: scans are not timed per entry).
    pub read_latency: Option<LatencySummary>,
    /// Latency per write: a transaction's time divided by its writes.
    pub write_latency: Option<LatencySummary>,
    /// For counter workloads: whether the counters' sum grew by exactly the number
    /// of increments.
    pub counters_exact: Option<bool>,
    /// Increments lost by concurrent, non-isolated read-modify-writes (updaterandom
    /// with several writer threads on an engine whose batches are not isolated).
    pub lost_updates: Option<u64>,
    /// Verification failures; always checked: counters, found counts of full key
    /// sets; with `--check`, every value read.
    pub errors: Vec<String>,
}

/// Runs `spec` in this process.
pub fn run_spec(spec: &Spec) -> Result<Measurement> {
    crate::with_engine!(spec.engine, E => run::<E>(spec), missing => Err(spec.engine.not_built()))
}

/// How `spec`'s engine is opened.
pub fn open_options(spec_params: &Params, w: Workload) -> OpenOptions {
    let p = spec_params;
    OpenOptions {
        sync: if w == Workload::FillSync || (p.sync && w.writes()) {
            SyncMode::Durable
        } else {
            SyncMode::Async
        },
        data_bytes: p.num.saturating_mul((p.key_size + p.value_size) as u64),
        readers: u32::try_from(p.threads).unwrap_or(u32::MAX),
        random_reads: matches!(w, Workload::ReadRandom | Workload::ReadWhileWriting),
        merge_operator: p.merge_operator,
        cache_bytes: p.cache_bytes,
        wt_lsm: p.wt_lsm,
        write_map: p.write_map,
    }
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
    let engine = E::open(&spec.dir, &open_options(p, w))?;
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
    if w.writes() && !w.is_fill() {
        // Write back what earlier steps left dirty, so that the kernel counts every page
        // this step dirties as a write (rusage counts a page once per clean -> dirty).
        syncfs(&spec.dir)?;
    }
    let mut m = match w {
        Workload::FillSeq => fill::fill(&ctx, true)?,
        Workload::FillRandom => fill::fill(&ctx, false)?,
        Workload::FillSync => fillsync::fill_sync(&ctx)?,
        Workload::ReadRandom => read::read_random(&ctx)?,
        Workload::ReadSeq => read::read_seq(&ctx, false)?,
        Workload::ReadReverse => read::read_seq(&ctx, true)?,
        Workload::ReadWhileWriting => read::read_while_writing(&ctx)?,
        Workload::Overwrite
        | Workload::UpdateRandom
        | Workload::MergeRandom
        | Workload::DeleteRandom => write::write_existing(&ctx, w)?,
        Workload::RetainRandom => cursor::retain(&ctx)?,
        Workload::PopFront => cursor::pop_front(&ctx)?,
    };
    if spec.verify {
        if w.writes() {
            engine.sync()?;
        }
        // Scans checked themselves.
        if let Some(after) = w.state_after(p, spec.before).filter(|_| !w.is_scan()) {
            verify_scan(&ctx, after)?;
        }
    }
    m.errors = ctx.errors.into_inner().unwrap_or_else(|e| e.into_inner());
    Ok(m)
}

/// Writes back every dirty page of the file system holding `dir` (`syncfs(2)`).
fn syncfs(dir: &std::path::Path) -> Result<()> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(dir)?;
    // SAFETY: `f` is an open descriptor for the duration of the call.
    if unsafe { libc::syncfs(f.as_raw_fd()) } != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    Ok(())
}

/// Checks the entries of a scan: well-formed keys in strictly ascending (or, for a
/// reverse scan, descending) order, and values as written.
struct ScanChecker<'c, 'a, E> {
    ctx: &'c Ctx<'a, E>,
    state: DbState,
    reverse: bool,
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
        let out_of_order = self
            .last
            .is_some_and(|l| if self.reverse { l <= idx } else { l >= idx });
        if out_of_order {
            self.ctx
                .error(format!("scan: key {idx} after key {:?}", self.last));
        }
        self.last = Some(idx);
        if self.state.holds(self.ctx.p, idx) == Some(false) {
            self.ctx
                .error(format!("scan: key {idx} should not be there"));
        }
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

/// After a workload in `--check` mode: scans everything and checks it against `state`.
fn verify_scan<E: Engine>(ctx: &Ctx<'_, E>, state: DbState) -> Result<()> {
    let mut checker = ScanChecker {
        ctx,
        state,
        reverse: false,
        last: None,
    };
    let n = ctx.engine.scan(false, |k, v| checker.visit(k, v))?;
    checker.finish(n);
    Ok(())
}

/// The wrapping sum of every value read as an 8-byte little-endian counter (values
/// of another length count as 0), and the number of entries.
fn counter_sum<E: Engine>(engine: &E) -> Result<(u64, u64)> {
    let mut sum = 0u64;
    let n = engine.scan(false, |_, v| {
        if let Ok(b) = <[u8; 8]>::try_from(v) {
            sum = sum.wrapping_add(u64::from_le_bytes(b));
        }
    })?;
    Ok((sum, n))
}
