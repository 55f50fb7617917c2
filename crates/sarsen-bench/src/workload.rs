//! The db_bench workloads and what a database holds after each.

use serde::{Deserialize, Serialize};

use crate::cli::Params;
use crate::data::{mix64, Permutation};

/// Seed salt of the permutation whose first keys fillsync writes.
pub const SALT_FILLSYNC: u64 = 0x2;
/// Seed salt of the permutation whose first keys deleterandom deletes.
pub const SALT_DELETE: u64 = 0x3;
/// Seed salt of the hash that picks the keys retainrandom deletes.
pub const SALT_RETAIN: u64 = 0x4;

/// Whether retainrandom keeps the key of `idx` (about half of the keys, picked
/// by a hash of the index and the seed): the predicate its cursor walk tests.
#[inline]
pub fn retained(seed: u64, idx: u64) -> bool {
    mix64(idx ^ seed ^ SALT_RETAIN) & 1 == 0
}

/// A db_bench workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    /// Write `num` keys in ascending order, `batch` per transaction, into a new DB.
    #[value(name = "fillseq")]
    FillSeq,
    /// Write a random permutation of `num` keys, `batch` per transaction, into a new DB.
    #[value(name = "fillrandom")]
    FillRandom,
    /// Write `num/1000` random keys into a new DB, one durable commit per write,
    /// shared among `threads` writer threads on every engine (distinct keys each).
    #[value(name = "fillsync")]
    FillSync,
    /// Rewrite `writes` random existing keys with new values, `batch` per transaction.
    #[value(name = "overwrite")]
    Overwrite,
    /// `reads` gets of random keys per reader thread, one read transaction per get
    /// (per `read_batch` gets with `--read_batch`).
    #[value(name = "readrandom")]
    ReadRandom,
    /// One ordered scan of the whole DB.
    #[value(name = "readseq")]
    ReadSeq,
    /// One scan of the whole DB in descending key order.
    #[value(name = "readreverse")]
    ReadReverse,
    /// Reader threads doing readrandom while one writer overwrites random existing
    /// keys, one write per transaction, until the readers finish.
    #[value(name = "readwhilewriting")]
    ReadWhileWriting,
    /// Get a random existing key and put a new value to it (read-modify-write),
    /// `batch` per transaction; with 8-byte values, the value is a counter and the
    /// new value is the old one plus 1.
    #[value(name = "updaterandom")]
    UpdateRandom,
    /// Merge the operand 1 into random existing keys with the uint64add merge
    /// operator, `batch` per transaction (engines with a merge operator only).
    #[value(name = "mergerandom")]
    MergeRandom,
    /// Delete `writes` distinct random keys, `batch` per transaction.
    #[value(name = "deleterandom")]
    DeleteRandom,
    /// One write transaction walks every key with a write cursor and deletes
    /// those a hash of the key index picks (about half): a retain/extract-if
    /// loop (engines with a cursor delete only).
    #[value(name = "retainrandom")]
    RetainRandom,
    /// Delete the first key `writes` times through a cursor (a queue's pop from
    /// the front), `batch` per transaction (engines with a cursor delete only).
    #[value(name = "popfront")]
    PopFront,
}

impl Workload {
    /// The db_bench name.
    pub fn name(self) -> &'static str {
        match self {
            Workload::FillSeq => "fillseq",
            Workload::FillRandom => "fillrandom",
            Workload::FillSync => "fillsync",
            Workload::Overwrite => "overwrite",
            Workload::ReadRandom => "readrandom",
            Workload::ReadSeq => "readseq",
            Workload::ReadReverse => "readreverse",
            Workload::ReadWhileWriting => "readwhilewriting",
            Workload::UpdateRandom => "updaterandom",
            Workload::MergeRandom => "mergerandom",
            Workload::DeleteRandom => "deleterandom",
            Workload::RetainRandom => "retainrandom",
            Workload::PopFront => "popfront",
        }
    }

    /// The workload of a db_bench name.
    pub fn from_name(name: &str) -> Option<Workload> {
        <Workload as clap::ValueEnum>::from_str(name, false).ok()
    }

    /// Whether the workload starts from a new, empty database.
    pub fn is_fill(self) -> bool {
        matches!(
            self,
            Workload::FillSeq | Workload::FillRandom | Workload::FillSync
        )
    }

    /// Whether the workload reports separate read and write rates.
    pub fn is_mixed(self) -> bool {
        self == Workload::ReadWhileWriting
    }

    /// Whether the workload runs `threads` reader threads.
    pub fn has_readers(self) -> bool {
        matches!(self, Workload::ReadRandom | Workload::ReadWhileWriting)
    }

    /// Whether the workload writes existing keys with `threads` writer threads (on
    /// engines that allow concurrent writers; one thread elsewhere).
    pub fn has_writers(self) -> bool {
        matches!(
            self,
            Workload::Overwrite
                | Workload::UpdateRandom
                | Workload::MergeRandom
                | Workload::DeleteRandom
        )
    }

    /// Whether the workload's writer threads each commit their own durable
    /// transactions into a new database (fillsync): every engine runs `threads` of
    /// them, single-writer engines queuing on their writer lock, so that the rate
    /// against threads shows whether concurrent commits share their syncs (group
    /// commit).
    pub fn has_commit_writers(self) -> bool {
        self == Workload::FillSync
    }

    /// Whether the workload deletes through a write cursor (engines without
    /// one skip it).
    pub fn needs_cursor_delete(self) -> bool {
        matches!(self, Workload::RetainRandom | Workload::PopFront)
    }

    /// Whether `--threads` applies.
    pub fn is_threaded(self) -> bool {
        self.has_readers() || self.has_writers() || self.has_commit_writers()
    }

    /// Whether the workload is a full scan.
    pub fn is_scan(self) -> bool {
        matches!(self, Workload::ReadSeq | Workload::ReadReverse)
    }

    /// Whether the workload writes (so that `--sync` applies to it).
    pub fn writes(self) -> bool {
        self.is_fill()
            || self.has_writers()
            || self.needs_cursor_delete()
            || self == Workload::ReadWhileWriting
    }

    /// Keys written by the workload, when it is a fill, with `num` keys.
    pub fn fill_count(self, num: u64) -> u64 {
        match self {
            Workload::FillSync => fillsync_count(num),
            _ => num,
        }
    }

    /// What the database holds after this workload ran on `before`.
    pub fn state_after(self, p: &Params, before: Option<DbState>) -> Option<DbState> {
        let rewritten = before.map(|s| DbState {
            pristine: false,
            ..s
        });
        match self {
            Workload::FillSeq | Workload::FillRandom => Some(DbState {
                entries: p.num,
                keys: KeySet::All,
                pristine: true,
            }),
            Workload::FillSync => {
                let n = fillsync_count(p.num);
                Some(DbState {
                    entries: n,
                    keys: if n == p.num {
                        KeySet::All
                    } else {
                        KeySet::FillSyncPrefix
                    },
                    pristine: true,
                })
            }
            Workload::ReadRandom | Workload::ReadSeq | Workload::ReadReverse => before,
            Workload::ReadWhileWriting
            | Workload::Overwrite
            | Workload::UpdateRandom
            | Workload::MergeRandom => rewritten,
            Workload::DeleteRandom => match before {
                Some(s) if s.keys == KeySet::All => {
                    let deleted = p.writes.min(p.num);
                    Some(DbState {
                        entries: p.num - deleted,
                        keys: if deleted == 0 {
                            KeySet::All
                        } else {
                            KeySet::AllButDeleted
                        },
                        pristine: s.pristine,
                    })
                }
                // Random deletes from a subset: what remains is not tracked.
                _ => None,
            },
            Workload::RetainRandom => match before {
                Some(s) if s.keys == KeySet::All => Some(DbState {
                    entries: (0..p.num).filter(|&i| retained(p.seed, i)).count() as u64,
                    keys: KeySet::Retained,
                    pristine: s.pristine,
                }),
                _ => None,
            },
            Workload::PopFront => match before {
                // The first keys of `All` or of a suffix leave a shorter suffix.
                Some(s) if matches!(s.keys, KeySet::All | KeySet::Suffix) => Some(DbState {
                    entries: s.entries - p.writes.min(s.entries),
                    keys: KeySet::Suffix,
                    pristine: s.pristine,
                }),
                _ => None,
            },
        }
    }
}

/// Writes done by fillsync: `num/1000`, at least one.
pub fn fillsync_count(num: u64) -> u64 {
    (num / 1000).max(1)
}

/// The operations `0..total` that thread `t` of `threads` does: contiguous,
/// disjoint shares that together cover `0..total`, each within one of the
/// others' length (empty for every thread past `total`). `threads` of 0 is
/// taken as 1.
pub fn thread_share(total: u64, threads: usize, t: usize) -> std::ops::Range<u64> {
    let threads = threads.max(1) as u128;
    let at = |i: usize| (u128::from(total) * (i as u128).min(threads) / threads) as u64;
    at(t)..at(t + 1)
}

/// Which key indexes of `0..num` a database holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeySet {
    /// Every index of `0..num`.
    All,
    /// The first `entries` indexes of the fillsync permutation.
    FillSyncPrefix,
    /// Every index except the first `num - entries` of the deleterandom permutation.
    AllButDeleted,
    /// The indexes that [`retained`] keeps (what retainrandom leaves of `All`).
    Retained,
    /// The last `entries` indexes, `num - entries..num` (what popfront leaves).
    Suffix,
}

/// What a database is known to hold, for verification and for choosing existing keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DbState {
    /// Number of entries.
    pub entries: u64,
    /// Which keys exist.
    pub keys: KeySet,
    /// Every value is the fill's value (generation 0): nothing was overwritten.
    pub pristine: bool,
}

impl DbState {
    /// Every key index in `0..num` is present.
    pub fn all_keys(&self) -> bool {
        self.keys == KeySet::All
    }

    /// Whether the database holds key index `idx`, where that is cheap to tell
    /// (`None` for the permutation-based sets).
    pub fn holds(&self, p: &Params, idx: u64) -> Option<bool> {
        match self.keys {
            KeySet::All => Some(idx < p.num),
            KeySet::Retained => Some(idx < p.num && retained(p.seed, idx)),
            KeySet::Suffix => Some(idx < p.num && idx >= p.num - self.entries),
            KeySet::FillSyncPrefix | KeySet::AllButDeleted => None,
        }
    }
}

/// Picks existing keys of a database uniformly at random.
pub struct ExistingKeys {
    num: u64,
    seed: u64,
    state: Option<DbState>,
    perm: Option<Permutation>,
}

impl ExistingKeys {
    /// Keys of a database with `num` key indexes in state `state` (None: unknown, so
    /// any index of `0..num`).
    pub fn new(p: &Params, state: Option<DbState>) -> Self {
        let perm = match state.map(|s| s.keys) {
            Some(KeySet::FillSyncPrefix) => Some(Permutation::new(p.num, p.seed ^ SALT_FILLSYNC)),
            Some(KeySet::AllButDeleted) => Some(Permutation::new(p.num, p.seed ^ SALT_DELETE)),
            _ => None,
        };
        ExistingKeys {
            num: p.num,
            seed: p.seed,
            state,
            perm,
        }
    }

    /// The key index that `r`, uniform in `0..u64::MAX`, picks.
    #[inline]
    pub fn pick(&self, r: u64) -> u64 {
        match (self.state, &self.perm) {
            (Some(s), Some(perm)) if s.entries > 0 => match s.keys {
                KeySet::FillSyncPrefix => perm.get(r % s.entries),
                _ => perm.get(self.num - s.entries + r % s.entries),
            },
            (Some(s), None) if s.entries > 0 && s.keys == KeySet::Suffix => {
                self.num - s.entries + r % s.entries
            }
            (Some(s), None) if s.entries > 0 && s.keys == KeySet::Retained => {
                // The next retained index at or after a uniform one (about
                // two tries; the set is not empty).
                let mut i = r % self.num;
                while !retained(self.seed, i) {
                    i = (i + 1) % self.num;
                }
                i
            }
            _ => r % self.num,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn params(num: u64, threads: usize) -> Params {
        Params {
            num,
            reads: num,
            writes: num,
            key_size: 16,
            value_size: 100,
            threads,
            batch: 1,
            read_batch: 1,
            seed: 301,
            duration: 0,
            writes_per_second: 0,
            sync: false,
            merge_operator: None,
            cache_bytes: 0,
            wt_lsm: false,
            write_map: true,
        }
    }

    /// fillsync's writer threads write distinct keys that together are exactly
    /// the keys the runner then records as present (`KeySet::FillSyncPrefix`, whose
    /// keys `ExistingKeys` picks from), for thread counts below, at and above the
    /// number of writes.
    #[test]
    fn fillsync_threads_write_distinct_keys_covering_its_key_set() {
        for (num, threads) in [
            (1, 1),
            (999, 3),
            (5000, 1),
            (5000, 2),
            (7000, 4),
            (9000, 8),
            (3000, 8),
        ] {
            let p = params(num, threads);
            let n = fillsync_count(num);
            let perm = Permutation::new(num, p.seed ^ SALT_FILLSYNC);
            let mut written = BTreeSet::new();
            let mut sizes = Vec::new();
            for t in 0..threads {
                let share = thread_share(n, threads, t);
                sizes.push(share.end - share.start);
                for i in share {
                    assert!(
                        written.insert(perm.get(i)),
                        "num {num}: thread {t} repeats a key"
                    );
                }
            }
            let (lo, hi) = (sizes.iter().min(), sizes.iter().max());
            assert!(
                hi.zip(lo).is_some_and(|(h, l)| h - l <= 1),
                "uneven shares {sizes:?}"
            );
            // The model: the database fillsync leaves, as the runner records it.
            let state = Workload::FillSync
                .state_after(&p, None)
                .expect("a fill's state");
            assert_eq!(state.entries, written.len() as u64);
            let model: BTreeSet<u64> = (0..n).map(|i| perm.get(i)).collect();
            assert_eq!(written, model, "num {num}, {threads} threads");
            if state.keys == KeySet::FillSyncPrefix {
                let keys = ExistingKeys::new(&p, Some(state));
                for r in (0..4 * n).map(mix64) {
                    assert!(
                        model.contains(&keys.pick(r)),
                        "picked a key fillsync did not write"
                    );
                }
            } else {
                assert_eq!(state.keys, KeySet::All);
                assert_eq!(model, (0..num).collect());
            }
        }
    }

    #[test]
    fn thread_shares_split_evenly_and_cover_everything() {
        for (total, threads) in [(0, 1), (0, 3), (1, 4), (10, 3), (1000, 8), (u64::MAX, 7)] {
            let mut next = 0;
            for t in 0..threads {
                let s = thread_share(total, threads, t);
                assert_eq!(s.start, next, "shares are contiguous");
                next = s.end;
            }
            assert_eq!(next, total, "shares cover 0..{total}");
            assert!(thread_share(total, threads, threads + 3).is_empty());
        }
        assert_eq!(thread_share(5, 0, 0), 0..5);
    }

    #[test]
    fn only_fillsync_has_commit_writers_and_it_is_threaded() {
        assert!(Workload::FillSync.has_commit_writers() && Workload::FillSync.is_threaded());
        for w in [Workload::FillSeq, Workload::FillRandom, Workload::Overwrite] {
            assert!(!w.has_commit_writers(), "{w:?}");
        }
        assert!(!Workload::FillSeq.is_threaded() && !Workload::ReadSeq.is_threaded());
    }
}
