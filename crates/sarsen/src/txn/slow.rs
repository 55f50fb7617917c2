//! The slow-reader check at the start of a write transaction (libmdbx's
//! Handle-Slow-Readers): the oldest reader, reported to the handler when
//! it lags, decides how far back pages may be reused.

use crate::error::Result;
use crate::readers::{SlowReader, SlowReaderAction};
use crate::shared::Shared;
use crate::writer::TxnState;

/// At the start of a write transaction whose newest commit is `last`:
/// reports the oldest reader to the handler if it lags by the threshold or
/// more (once per snapshot), and returns the oldest reader's txnid after
/// the handler's decision.
pub(crate) fn oldest_after_handler(
    env: &Shared,
    w: &mut TxnState,
    last: u64,
) -> Result<Option<u64>> {
    let oldest = env.lock.oldest_reader(env.token)?;
    let (Some(sr), Some(t)) = (&env.slow_readers, oldest) else {
        return Ok(oldest);
    };
    let lag = last.saturating_sub(t);
    if lag < sr.lag {
        return Ok(oldest);
    }
    let Some((pid, thread, txnid)) = env.lock.oldest_slot() else {
        return Ok(oldest);
    };
    if w.slow_reported == Some((pid, txnid)) {
        return Ok(oldest);
    }
    w.slow_reported = Some((pid, txnid));
    let pinned_pages = crate::writer::gc::pages_after(&w.store, txnid)?;
    let r = SlowReader {
        pid,
        thread,
        txnid,
        lag,
        pinned_pages,
    };
    match (sr.handler)(&r) {
        SlowReaderAction::Keep => Ok(oldest),
        SlowReaderAction::Retry => {
            env.lock.reclaim_dead(env.token)?;
            env.lock.oldest_reader(env.token)
        }
    }
}
