//! fillseq, fillrandom and fillsync: new databases.

use std::time::Instant;

use super::{Ctx, Measurement, SALT_FILL};
use crate::data::Permutation;
use crate::engines::{Engine, Result};
use crate::latency::Latency;
use crate::progress::Progress;
use crate::workload::{fillsync_count, SALT_FILLSYNC};

/// fillseq / fillrandom: `num` keys, `batch` per transaction.
pub(super) fn fill<E: Engine>(ctx: &Ctx<'_, E>, sequential: bool) -> Result<Measurement> {
    let (n, batch, ks) = (ctx.p.num, ctx.p.batch, ctx.keys.size());
    let perm = Permutation::new(n, ctx.p.seed ^ SALT_FILL);
    let label = if sequential { "fillseq" } else { "fillrandom" };
    let progress = Progress::new(label, Some(n));
    let mut keybuf = vec![0u8; batch * ks];
    let mut idxs = Vec::with_capacity(batch);
    let mut lat = Latency::new();
    let start = Instant::now();
    let mut i = 0;
    while i < n {
        let m = (batch as u64).min(n - i);
        idxs.clear();
        idxs.extend((i..i + m).map(|x| if sequential { x } else { perm.get(x) }));
        for (k, &idx) in keybuf.chunks_exact_mut(ks).zip(&idxs) {
            ctx.keys.write(idx, k);
        }
        // A new vector per transaction: it borrows `keybuf`, rewritten next round.
        let pairs: Vec<(&[u8], &[u8])> = keybuf
            .chunks_exact(ks)
            .zip(&idxs)
            .map(|(k, &idx)| (k, ctx.values.get(idx, 0)))
            .collect();
        let t = Instant::now();
        ctx.engine.write_batch(&pairs, sequential)?;
        lat.record(t.elapsed(), m);
        progress.inc(m);
        i += m;
    }
    let wall_s = start.elapsed().as_secs_f64();
    progress.finish();
    Ok(Measurement {
        wall_s,
        threads: 1,
        write_ops: n,
        bytes_written: n * (ks + ctx.values.size()) as u64,
        write_latency: lat.summary(),
        ..Measurement::default()
    })
}

/// fillsync: `num/1000` keys in random order, one durable commit per write. The keys
/// are the first `num/1000` of a seeded permutation (`KeySet::FillSyncPrefix`).
pub(super) fn fill_sync<E: Engine>(ctx: &Ctx<'_, E>) -> Result<Measurement> {
    let n = fillsync_count(ctx.p.num);
    let perm = Permutation::new(ctx.p.num, ctx.p.seed ^ SALT_FILLSYNC);
    let mut key = vec![0u8; ctx.keys.size()];
    let mut lat = Latency::new();
    let start = Instant::now();
    for i in 0..n {
        let idx = perm.get(i);
        ctx.keys.write(idx, &mut key);
        let t = Instant::now();
        ctx.engine
            .write_batch(&[(&key, ctx.values.get(idx, 0))], false)?;
        lat.record(t.elapsed(), 1);
    }
    Ok(Measurement {
        wall_s: start.elapsed().as_secs_f64(),
        threads: 1,
        write_ops: n,
        bytes_written: n * (key.len() + ctx.values.size()) as u64,
        write_latency: lat.summary(),
        ..Measurement::default()
    })
}
