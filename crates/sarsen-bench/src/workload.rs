//! The db_bench workloads and what a database holds after each.

use serde::{Deserialize, Serialize};

use crate::cli::Params;

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
    /// `reads` gets of random keys per reader thread, one read transaction per get.
    #[value(name = "readrandom")]
    ReadRandom,
    /// One ordered scan of the whole DB.
    #[value(name = "readseq")]
    ReadSeq,
    /// Reader threads doing readrandom while one writer overwrites random existing
    /// keys, one write per transaction, until the readers finish.
    #[value(name = "readwhilewriting")]
    ReadWhileWriting,
}

impl Workload {
    /// The db_bench name.
    pub fn name(self) -> &'static str {
        match self {
            Workload::FillSeq => "fillseq",
            Workload::FillRandom => "fillrandom",
            Workload::FillSync => "fillsync",
            Workload::ReadRandom => "readrandom",
            Workload::ReadSeq => "readseq",
            Workload::ReadWhileWriting => "readwhilewriting",
        }
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
    pub fn is_threaded(self) -> bool {
        matches!(self, Workload::ReadRandom | Workload::ReadWhileWriting)
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
        match self {
            Workload::FillSeq | Workload::FillRandom => Some(DbState {
                entries: p.num,
                all_keys: true,
                pristine: true,
            }),
            Workload::FillSync => Some(DbState {
                entries: fillsync_count(p.num),
                all_keys: fillsync_count(p.num) == p.num,
                pristine: true,
            }),
            Workload::ReadRandom | Workload::ReadSeq => before,
            Workload::ReadWhileWriting => before.map(|s| DbState {
                pristine: false,
                ..s
            }),
        }
    }
}

/// Writes done by fillsync: `num/1000`, at least one.
pub fn fillsync_count(num: u64) -> u64 {
    (num / 1000).max(1)
}

/// What a database is known to hold, for verification in `--check` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DbState {
    /// Number of entries.
    pub entries: u64,
    /// Every key index in `0..num` is present.
    pub all_keys: bool,
    /// Every value is the fill's value (generation 0): nothing was overwritten.
    pub pristine: bool,
}
