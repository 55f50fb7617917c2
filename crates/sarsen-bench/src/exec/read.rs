//! readrandom, readseq, readreverse and readwhilewriting.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::{Ctx, Measurement, ScanChecker, SALT_READ, SALT_WRITE};
use crate::data::mix64;
use crate::engines::{Engine, Reader, Result};
use crate::latency::Latency;
use crate::progress::Progress;
use crate::workload::ExistingKeys;

/// Reads the first and the last byte of a value found by a get or a scan, as an
/// application would, so that engines returning a pointer into their map pay for
/// bringing the value's pages in (a 4,000-byte value's overflow pages), like
/// engines that copy it. Returns the value's length.
///
/// The bytes themselves go through `black_box`, not references to them: a
/// reference needs only the address, and a version that passed `(v.first(),
/// v.last())` let the compiler skip the loads, so LMDB's and libmdbx's gets never
/// read an overflow page while Sarsen's, which checks the run's header, did.
#[inline]
fn touch(v: &[u8]) -> usize {
    std::hint::black_box((v.first().copied(), v.last().copied()));
    v.len()
}

/// Counters of one reader thread.
#[derive(Default)]
struct ReadStats {
    ops: u64,
    found: u64,
    bytes: u64,
    lat: Latency,
}

impl ReadStats {
    fn add(&mut self, other: ReadStats) {
        self.ops += other.ops;
        self.found += other.found;
        self.bytes += other.bytes;
        self.lat.merge(&other.lat);
    }
}

/// When a thread stops: after `reads` operations, or at a deadline.
struct Until {
    reads: u64,
    deadline: Option<Instant>,
}

impl Until {
    fn new(ctx_duration: u64, reads: u64, start: Instant) -> Self {
        Until {
            reads,
            deadline: (ctx_duration > 0).then(|| start + Duration::from_secs(ctx_duration)),
        }
    }

    /// How many more gets to do in the next round of at most `max`; 0 = stop.
    #[inline]
    fn next(&self, done: u64, max: u64) -> u64 {
        match self.deadline {
            Some(d) => {
                if Instant::now() >= d {
                    0
                } else {
                    max
                }
            }
            None => max.min(self.reads - done),
        }
    }
}

/// One readrandom thread: random keys of `0..num`, one read transaction per get (or
/// per `read_batch` gets).
fn reader_thread<E: Engine>(
    ctx: &Ctx<'_, E>,
    thread: usize,
    start: Instant,
    progress: &Progress,
) -> Result<ReadStats> {
    let mut reader = ctx.engine.reader()?;
    let mut rng = SmallRng::seed_from_u64(mix64(ctx.p.seed ^ SALT_READ ^ thread as u64));
    let until = Until::new(ctx.p.duration, ctx.p.reads, start);
    let ks = ctx.keys.size();
    let rb = ctx.p.read_batch;
    // Gets between deadline checks and progress updates.
    let round = if rb > 1 { rb as u64 } else { 256 };
    let mut keybuf = vec![0u8; ks * rb];
    let mut idxs = vec![0u64; rb];
    let mut st = ReadStats::default();
    loop {
        let n = until.next(st.ops, round);
        if n == 0 {
            break;
        }
        if rb == 1 {
            for _ in 0..n {
                let idx = rng.random_range(0..ctx.p.num);
                let key = &mut keybuf[..ks];
                ctx.keys.write(idx, key);
                let t = Instant::now();
                let got = reader.get(key, |v| {
                    if ctx.verify {
                        ctx.check_value(ctx.read_state, idx, v);
                    }
                    touch(v)
                })?;
                st.lat.record(t.elapsed(), 1);
                if let Some(len) = got {
                    st.found += 1;
                    st.bytes += len as u64;
                }
            }
        } else {
            let n = n as usize;
            for (k, idx) in keybuf.chunks_exact_mut(ks).zip(&mut idxs).take(n) {
                *idx = rng.random_range(0..ctx.p.num);
                ctx.keys.write(*idx, k);
            }
            let keys: Vec<&[u8]> = keybuf.chunks_exact(ks).take(n).collect();
            let t = Instant::now();
            reader.get_batch(&keys, &mut |i, v| {
                if let Some(v) = v {
                    if ctx.verify {
                        ctx.check_value(ctx.read_state, idxs[i], v);
                    }
                    st.found += 1;
                    st.bytes += touch(v) as u64;
                }
            })?;
            st.lat.record(t.elapsed(), n as u64);
        }
        st.ops += n;
        progress.inc(n);
    }
    Ok(st)
}

/// Runs `threads` reader threads to completion; returns their summed counters.
fn run_readers<E: Engine>(ctx: &Ctx<'_, E>, start: Instant, label: &str) -> Result<ReadStats> {
    let total = (ctx.p.duration == 0).then(|| ctx.p.reads * ctx.p.threads as u64);
    let progress = Progress::new(label, total);
    let results: Vec<Result<ReadStats>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..ctx.p.threads)
            .map(|t| {
                let progress = &progress;
                s.spawn(move || reader_thread(ctx, t, start, progress))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("reader thread panicked".into()))
            })
            .collect()
    });
    progress.finish();
    let mut total = ReadStats::default();
    for r in results {
        total.add(r?);
    }
    if ctx.read_state.is_some_and(|s| s.all_keys()) && total.found != total.ops {
        ctx.error(format!(
            "found {} of {} keys that all exist",
            total.found, total.ops
        ));
    }
    Ok(total)
}

/// readrandom.
pub(super) fn read_random<E: Engine>(ctx: &Ctx<'_, E>) -> Result<Measurement> {
    let start = Instant::now();
    let st = run_readers(ctx, start, "readrandom")?;
    Ok(Measurement {
        wall_s: start.elapsed().as_secs_f64(),
        threads: ctx.p.threads,
        read_ops: st.ops,
        found: st.found,
        bytes_read: st.bytes,
        read_latency: st.lat.summary(),
        ..Measurement::default()
    })
}

/// The readwhilewriting writer: overwrites random existing keys, one per transaction,
/// with new values, until `stop`, at most `writes_per_second`; at least once, so that
/// the write columns always have a figure. Sets `ready` when it starts writing.
/// Returns the number of writes and their latencies.
fn writer_thread<E: Engine>(
    ctx: &Ctx<'_, E>,
    stop: &AtomicBool,
    ready: &AtomicBool,
) -> Result<(u64, Latency)> {
    let mut rng = SmallRng::seed_from_u64(mix64(ctx.p.seed ^ SALT_WRITE));
    let existing = ExistingKeys::new(ctx.p, ctx.before);
    let mut key = vec![0u8; ctx.keys.size()];
    let mut lat = Latency::new();
    let wps = ctx.p.writes_per_second;
    let start = Instant::now();
    let mut n = 0u64;
    ready.store(true, Ordering::Release);
    loop {
        if wps > 0 {
            // Paced: write n is due at n / wps seconds.
            let due = start + Duration::from_secs_f64(n as f64 / wps as f64);
            let now = Instant::now();
            if due > now {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                std::thread::sleep((due - now).min(Duration::from_millis(50)));
                continue;
            }
        }
        let idx = existing.pick(rng.random());
        ctx.keys.write(idx, &mut key);
        let t = Instant::now();
        ctx.engine
            .write_batch(&[(&key, ctx.values.get(idx, n + 1))], false)?;
        lat.record(t.elapsed(), 1);
        n += 1;
        if stop.load(Ordering::Relaxed) {
            break;
        }
    }
    Ok((n, lat))
}

/// readwhilewriting: readers run to completion while one writer overwrites. The
/// readers start once the writer has: on tiny data (`--check`, a loaded machine) they
/// could otherwise finish before the writer's thread ran at all.
pub(super) fn read_while_writing<E: Engine>(ctx: &Ctx<'_, E>) -> Result<Measurement> {
    let stop = AtomicBool::new(false);
    let ready = AtomicBool::new(false);
    let (reads, writes, wall) = std::thread::scope(|s| {
        let writer = s.spawn(|| writer_thread(ctx, &stop, &ready));
        while !ready.load(Ordering::Acquire) && !writer.is_finished() {
            std::thread::yield_now();
        }
        let start = Instant::now();
        let reads = run_readers(ctx, start, "readwhilewriting");
        let wall = start.elapsed();
        stop.store(true, Ordering::Relaxed);
        let writes = writer
            .join()
            .unwrap_or_else(|_| Err("writer thread panicked".into()));
        (reads, writes, wall)
    });
    let (reads, (writes, wlat)) = (reads?, writes?);
    Ok(Measurement {
        wall_s: wall.as_secs_f64(),
        threads: ctx.p.threads,
        read_ops: reads.ops,
        write_ops: writes,
        found: reads.found,
        bytes_read: reads.bytes,
        bytes_written: writes * (ctx.keys.size() + ctx.values.size()) as u64,
        read_latency: reads.lat.summary(),
        write_latency: wlat.summary(),
        ..Measurement::default()
    })
}

/// readseq / readreverse: one scan of the whole database, ascending or descending.
pub(super) fn read_seq<E: Engine>(ctx: &Ctx<'_, E>, reverse: bool) -> Result<Measurement> {
    let mut bytes = 0u64;
    let mut checker = ctx.before.filter(|_| ctx.verify).map(|state| ScanChecker {
        ctx,
        state,
        reverse,
        last: None,
    });
    let start = Instant::now();
    let n = ctx.engine.scan(reverse, |k, v| {
        bytes += (k.len() + touch(v)) as u64;
        if let Some(c) = checker.as_mut() {
            c.visit(k, v);
        }
    })?;
    let wall_s = start.elapsed().as_secs_f64();
    if let Some(c) = checker {
        c.finish(n);
    } else if let Some(state) = ctx.before {
        if n != state.entries {
            ctx.error(format!("scan: {n} entries, expected {}", state.entries));
        }
    }
    Ok(Measurement {
        wall_s,
        threads: 1,
        read_ops: n,
        found: n,
        bytes_read: bytes,
        ..Measurement::default()
    })
}
