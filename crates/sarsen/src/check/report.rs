//! What [`RoTxn::check`](crate::RoTxn::check) returns: the problems found
//! and per-tree counts.

use std::fmt;

/// Reports longer than this many problems stop listing them (the count in
/// [`CheckReport::problems_total`] goes on).
pub const MAX_LISTED_PROBLEMS: usize = 1000;

/// One thing wrong with the database, found by [`RoTxn::check`](crate::RoTxn::check).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Problem {
    /// Page number where it was found (0..=2 are meta pages).
    pub page: u64,
    /// The tree it belongs to: `"gc"`, `"catalog"`, `"main"`, or the name
    /// of a named database; `""` for the file as a whole.
    pub tree: String,
    /// What is wrong, in words.
    pub what: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.tree.is_empty() {
            write!(f, "page {}: {}", self.page, self.what)
        } else {
            write!(f, "page {} ({}): {}", self.page, self.tree, self.what)
        }
    }
}

/// What one tree holds, as the walk counted it (compare
/// [`Stat`](crate::Stat), which is what the tree's record says).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TreeReport {
    /// `"gc"`, `"catalog"`, `"main"`, or the named database's name.
    pub name: String,
    /// Levels, 0 for an empty tree.
    pub depth: u32,
    /// Branch pages reached.
    pub branch_pages: u64,
    /// Leaf pages reached.
    pub leaf_pages: u64,
    /// Overflow pages reached (every page of every run).
    pub overflow_pages: u64,
    /// Entries in the leaves.
    pub entries: u64,
}

/// The outcome of a check: per-tree counts, page accounting and problems.
/// [`is_ok`](CheckReport::is_ok) is the verdict.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct CheckReport {
    /// Txnid of the snapshot checked.
    pub txnid: u64,
    /// Page size, bytes.
    pub page_size: u32,
    /// Pages allocated in the snapshot (`next_pgno`, including the 3 meta pages).
    pub pages: u64,
    /// Pages in trees (branch, leaf and overflow pages of all trees).
    pub tree_pages: u64,
    /// Pages listed free in the GC.
    pub free_pages: u64,
    /// Each tree walked: GC, catalog, main, then the named databases in name order.
    pub trees: Vec<TreeReport>,
    /// The problems found, at most [`MAX_LISTED_PROBLEMS`].
    pub problems: Vec<Problem>,
    /// Problems found in all, listed or not.
    pub problems_total: u64,
    /// The snapshot's meta page had been overwritten by later commits, so
    /// the free-page lists it carried (its inline GC, design.md §7) could
    /// not be read: pages in no tree and not in the GC tree, up to as many
    /// as those lists can hold (43), were taken to be them and counted in
    /// `free_pages`. Check a recent snapshot for the full accounting.
    pub inline_gc_unread: bool,
}

impl CheckReport {
    /// Whether no problem was found.
    pub fn is_ok(&self) -> bool {
        self.problems_total == 0
    }

    /// Records a problem (listed while fewer than [`MAX_LISTED_PROBLEMS`]).
    pub(crate) fn push(&mut self, page: u64, tree: &str, what: impl Into<String>) {
        self.problems_total += 1;
        if self.problems.len() < MAX_LISTED_PROBLEMS {
            self.problems.push(Problem {
                page,
                tree: tree.into(),
                what: what.into(),
            });
        }
    }
}
