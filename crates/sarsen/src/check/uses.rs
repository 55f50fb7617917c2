//! The walk's record of what each page number is used for.

use std::collections::BTreeMap;

/// What a page number is used for, as far as the walk has seen.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Use {
    Unseen,
    Tree,
    Free,
}

/// Pages per chunk of [`PageUses`].
const CHUNK: usize = 4096;

/// What each page number is used for, as far as the walk has seen: a byte
/// per page, in chunks of [`CHUNK`] pages made when the walk first marks a
/// page of one.
#[derive(Default)]
pub(crate) struct PageUses {
    chunks: BTreeMap<usize, Box<[Use; CHUNK]>>,
}

impl PageUses {
    pub(super) fn get(&self, p: usize) -> Use {
        self.chunks
            .get(&(p / CHUNK))
            .map_or(Use::Unseen, |c| c[p % CHUNK])
    }

    pub(super) fn set(&mut self, p: usize, u: Use) {
        let c = self
            .chunks
            .entry(p / CHUNK)
            .or_insert_with(|| Box::new([Use::Unseen; CHUNK]));
        c[p % CHUNK] = u;
    }

    /// Whether a tree uses page `p`.
    pub(crate) fn in_tree(&self, p: usize) -> bool {
        self.get(p) == Use::Tree
    }

    /// The runs of pages in `from..to` the walk has not seen, in order:
    /// a chunk never made is one run (or part of one) without a look at
    /// its pages.
    pub(crate) fn unseen_runs(&self, from: usize, to: usize) -> Vec<(usize, usize)> {
        let mut runs: Vec<(usize, usize)> = Vec::new();
        let mut add = |a: usize, b: usize| match runs.last_mut() {
            Some(r) if r.1 == a => r.1 = b,
            _ => runs.push((a, b)),
        };
        let mut p = from;
        while p < to {
            let end = ((p / CHUNK + 1) * CHUNK).min(to);
            match self.chunks.get(&(p / CHUNK)) {
                None => add(p, end),
                Some(c) => {
                    for q in p..end {
                        if c[q % CHUNK] == Use::Unseen {
                            add(q, q + 1);
                        }
                    }
                }
            }
            p = end;
        }
        runs
    }
}
