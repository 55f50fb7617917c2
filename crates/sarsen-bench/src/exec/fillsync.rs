//! fillsync: one put per durable commit into a new database, by `threads` writer
//! threads, each with its own share of the keys: the workload that shows whether
//! concurrent durable commits share their syncs (group commit).

use std::time::Instant;

use super::{Ctx, Measurement};
use crate::data::Permutation;
use crate::engines::{Engine, Result};
use crate::latency::Latency;
use crate::progress::Progress;
use crate::workload::{fillsync_count, thread_share, SALT_FILLSYNC};

/// What one fillsync writer thread did.
struct CommitStats {
    commits: u64,
    lat: Latency,
}

/// fillsync: the first `num/1000` keys of a seeded permutation (what the runner
/// then knows as `KeySet::FillSyncPrefix`), in permutation order, one durable
/// commit per key. Every engine runs `threads` writer threads, whether it lets
/// them write at once or queues them on its writer lock: thread `t` writes the
/// positions [`thread_share`] gives it, so the threads' keys are distinct and
/// together cover the prefix. Latency is per commit (the whole `write_batch` of
/// one pair, including any wait for the writer lock).
pub(super) fn fill_sync<E: Engine>(ctx: &Ctx<'_, E>) -> Result<Measurement> {
    let n = fillsync_count(ctx.p.num);
    let threads = ctx.p.threads.max(1);
    let perm = Permutation::new(ctx.p.num, ctx.p.seed ^ SALT_FILLSYNC);
    let progress = Progress::new("fillsync", Some(n));
    let start = Instant::now();
    let results: Vec<Result<CommitStats>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (perm, progress) = (&perm, &progress);
                let share = thread_share(n, threads, t);
                s.spawn(move || committer(ctx, perm, share, progress))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("fillsync writer thread panicked".into()))
            })
            .collect()
    });
    let wall_s = start.elapsed().as_secs_f64();
    progress.finish();
    let mut commits = 0;
    let mut lat = Latency::new();
    for r in results {
        let r = r?;
        commits += r.commits;
        lat.merge(&r.lat);
    }
    Ok(Measurement {
        wall_s,
        threads,
        write_ops: commits,
        bytes_written: commits * (ctx.keys.size() + ctx.values.size()) as u64,
        write_latency: lat.summary(),
        ..Measurement::default()
    })
}

/// One writer thread: a durable one-put transaction for each permutation position
/// of `share`.
fn committer<E: Engine>(
    ctx: &Ctx<'_, E>,
    perm: &Permutation,
    share: std::ops::Range<u64>,
    progress: &Progress,
) -> Result<CommitStats> {
    let mut key = vec![0u8; ctx.keys.size()];
    let mut st = CommitStats {
        commits: 0,
        lat: Latency::new(),
    };
    for i in share {
        let idx = perm.get(i);
        ctx.keys.write(idx, &mut key);
        let t = Instant::now();
        ctx.engine
            .write_batch(&[(&key, ctx.values.get(idx, 0))], false)?;
        st.lat.record(t.elapsed(), 1);
        st.commits += 1;
        progress.inc(1);
    }
    Ok(st)
}
