//! Giving space back: truncating the data file (libmdbx's geometry shrink).
//!
//! Commits move the end of the pages in use (`next_pgno`) back over free
//! pages that end the file (`Pager::refund_tail`); this module cuts the
//! file itself once enough lies past that end ([`shrink`]).
//!
//! **Where the file may end.** No byte that someone may still read is cut:
//! - every page below the `next_pgno` of a snapshot a reader holds, in any
//!   process (reader slots record it, `io/slots.rs`);
//! - every page below the `next_pgno` of a commit that open might pick
//!   after a crash: the durable (steady) commit and every newer meta on
//!   disk, so a crash before or after the truncation reaches the disk
//!   finds a file long enough for whichever meta it trusts. In a `NoSync`
//!   environment, whose crash guarantee is none, the newest commit only.
//! - the geometry's lower bound.
//!
//! **Other processes.** The writer lock is held, so no writer extends the
//! file meanwhile. A writer in another process knows the length it last
//! grew the file to and, in write-map mode, which blocks it allocated:
//! writing a page through its map past the new end would raise `SIGBUS`.
//! The lock file counts truncations, and a writer that sees the count move
//! forgets what it knew past the file's end before it writes
//! (`Map::refresh_after_shrinks`, at the start of each write transaction).
//!
//! **Crash safety.** The truncation is not synced: a crash may leave the
//! longer file, which opens exactly as the shorter one (the bytes past the
//! end of every trusted commit are never read).

use crate::error::Result;
use crate::io::Map;
use crate::options::Durability;
use crate::page::meta::{Meta, META_LEN};
use crate::shared::Shared;

/// How the target length is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cut {
    /// After a commit: keep the sparse margin and whole growth steps of a
    /// grown file, and cut only when that gives back the shrink threshold
    /// or more.
    Threshold,
    /// [`Env::compact`](crate::Env::compact): cut right after the last page
    /// anyone may read, if that gives back anything.
    Exact,
}

/// The smallest length, bytes, the file may have now (see the module doc).
fn floor(env: &Shared) -> Result<u64> {
    let (p, ws) = env.writer_view()?;
    let mut need = p.next_pgno.max(u64::from(env.lower_pgno));
    let oldest_trusted = if env.durability == Durability::NoSync {
        p.txnid
    } else {
        ws.durable_txnid.min(p.txnid)
    };
    let ps = u64::from(env.page_size);
    let mut buf = [0u8; META_LEN];
    for slot in 0..3u64 {
        env.file.read_at(&mut buf, slot * ps)?;
        // A slot that does not decode cannot be picked at open.
        if let Ok(m) = Meta::decode(&buf) {
            if m.txnid >= oldest_trusted {
                need = need.max(u64::from(m.next_pgno));
            }
        }
    }
    if let Some(r) = env.lock.max_reader_next() {
        need = need.max(r);
    }
    Ok(need.saturating_mul(ps))
}

/// Truncates the data file as `cut` says, if it may and it is worth it.
/// Returns the new length, bytes, or `None` when the file was left as it
/// was. Call with the writer lock held and the group-commit chain empty
/// (every commit of this environment published).
///
/// # Errors
///
/// [`Error::Io`](crate::Error::Io) from reading the meta pages, `fstat` or
/// `ftruncate`; those of reading the published snapshot. The file is then
/// as long as before or as the target: either opens the same.
pub(crate) fn shrink(env: &Shared, cut: Cut) -> Result<Option<u64>> {
    if env.read_only || env.lock.is_private() || (cut == Cut::Threshold && env.shrink_bytes == 0) {
        return Ok(None);
    }
    let need = floor(env)?;
    let ps = u64::from(env.page_size);
    let target = match cut {
        Cut::Exact => need,
        Cut::Threshold => Map::grown_len(
            need,
            u64::from(env.growth_pgno) * ps,
            u64::from(env.upper_pgno) * ps,
        ),
    };
    let len = env.file.len()?;
    let worth = match cut {
        Cut::Exact => len > target,
        Cut::Threshold => len.saturating_sub(target) >= env.shrink_bytes,
    };
    if !worth {
        return Ok(None);
    }
    // Forget first: should the truncation fail half-way (it does not, but
    // the map must never trust a length it cannot prove), the next growth
    // re-extends the file.
    env.map.forget_beyond(target);
    env.lock.count_shrink();
    env.file.truncate(target)?;
    Ok(Some(target))
}

/// Whether a commit should look at the file's length: a cheap test,
/// without locks, that the file runs past the length it would be given
/// for the published snapshot by at least the shrink threshold.
pub(crate) fn worth_a_look(env: &Shared, file_len: u64, next_pgno: u64) -> bool {
    if env.shrink_bytes == 0 || env.read_only {
        return false;
    }
    let ps = u64::from(env.page_size);
    let target = Map::grown_len(
        next_pgno.max(u64::from(env.lower_pgno)).saturating_mul(ps),
        u64::from(env.growth_pgno) * ps,
        u64::from(env.upper_pgno) * ps,
    );
    file_len.saturating_sub(target) >= env.shrink_bytes
}
