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
    /// Write `num/1000` random keys into a new DB, one durable commit per write.
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

    /// Whether the workload deletes through a write cursor (engines without
    /// one skip it).
    pub fn needs_cursor_delete(self) -> bool {
        matches!(self, Workload::RetainRandom | Workload::PopFront)
    }

    /// Whether `--threads` applies.
    pub fn is_threaded(self) -> bool {
        self.has_readers() || self.has_writers()
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
