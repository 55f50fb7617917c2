//! retainrandom and popfront: deletes through a write cursor, by one writer.

use std::time::Instant;

use super::{Ctx, Measurement};
use crate::engines::{Engine, Result};
use crate::latency::Latency;
use crate::progress::Progress;
use crate::workload::{retained, DbState};

/// retainrandom: one write transaction walks every key and deletes those that
/// [`retained`] does not keep; checks the counts against the database state.
pub(super) fn retain<E: Engine>(ctx: &Ctx<'_, E>) -> Result<Measurement> {
    let progress = Progress::new("retainrandom", ctx.before.map(|s| s.entries));
    let (seed, num) = (ctx.p.seed, ctx.p.num);
    let mut bad = 0u64;
    let mut lat = Latency::new();
    let start = Instant::now();
    let (seen, gone) = ctx.engine.retain(&mut |k| match ctx.keys.parse(k) {
        Some(idx) if idx < num => !retained(seed, idx),
        _ => {
            bad += 1;
            false
        }
    })?;
    let wall = start.elapsed();
    lat.record(wall, gone.max(1));
    progress.inc(seen);
    progress.finish();
    if bad > 0 {
        ctx.error(format!("retainrandom: {bad} keys not of the benchmark"));
    }
    if let Some(s) = ctx.before {
        expect(ctx, "retainrandom: entries visited", seen, s.entries);
    }
    if let Some(after) = state_after(ctx) {
        expect(
            ctx,
            "retainrandom: entries left",
            seen - gone,
            after.entries,
        );
    }
    Ok(Measurement {
        wall_s: wall.as_secs_f64(),
        threads: 1,
        read_ops: seen,
        write_ops: gone,
        found: gone,
        bytes_read: seen * ctx.keys.size() as u64,
        write_latency: lat.summary(),
        ..Measurement::default()
    })
}

/// popfront: deletes the first key `writes` times (fewer if the database runs
/// empty), `batch` per write transaction.
pub(super) fn pop_front<E: Engine>(ctx: &Ctx<'_, E>) -> Result<Measurement> {
    let total = ctx
        .before
        .map_or(ctx.p.writes, |s| ctx.p.writes.min(s.entries));
    let progress = Progress::new("popfront", Some(total));
    let mut lat = Latency::new();
    let mut done = 0;
    let start = Instant::now();
    while done < total {
        let m = (ctx.p.batch as u64).min(total - done);
        let t = Instant::now();
        let gone = ctx.engine.pop_front(m)?;
        lat.record(t.elapsed(), m);
        if gone != m {
            ctx.error(format!("popfront: {gone} of {m} deleted"));
            break;
        }
        progress.inc(m);
        done += m;
    }
    let wall_s = start.elapsed().as_secs_f64();
    progress.finish();
    Ok(Measurement {
        wall_s,
        threads: 1,
        write_ops: done,
        found: done,
        write_latency: lat.summary(),
        ..Measurement::default()
    })
}

fn state_after<E>(ctx: &Ctx<'_, E>) -> Option<DbState> {
    crate::workload::Workload::RetainRandom.state_after(ctx.p, ctx.before)
}

fn expect<E>(ctx: &Ctx<'_, E>, what: &str, got: u64, want: u64) {
    if got != want {
        ctx.error(format!("{what}: {got}, expected {want}"));
    }
}
