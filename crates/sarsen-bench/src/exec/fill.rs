//! fillseq and fillrandom: new databases loaded in transactions of `batch`.

use std::time::Instant;

use super::{Ctx, Measurement, SALT_FILL};
use crate::data::Permutation;
use crate::engines::{Engine, Result};
use crate::latency::Latency;
use crate::progress::Progress;

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
