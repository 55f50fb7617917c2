//! Integrity check of a snapshot: every tree, every page, every checksum,
//! and the free-page accounting (libmdbx's `mdbx_chk`, LMDB's `mdb_stat`
//! walk, bbolt's `Tx.Check`).
//!
//! The walk reads the snapshot of a read transaction, so it runs beside
//! writers and sees one consistent state. In that state every page number
//! in `3..next_pgno` must be exactly one of: a page of one tree (the GC,
//! the catalog, the main database, a named database; an overflow run counts
//! all its pages), or listed once in a GC record. Free pages themselves are
//! never read: a writer may already be reusing them.
//!
//! Damage is reported, not returned as an error: the walk goes on past a
//! bad page (skipping what lies under it) so one report lists every problem
//! it can reach. The walk keeps a byte per page it meets, in chunks made
//! on demand ([`PageUses`]), so its memory follows the pages the trees and
//! the GC name, not a `next_pgno` that a damaged meta may set to 2^31.

use crate::btree::dup::{Dups, Vals};
use crate::btree::MAX_DEPTH;
use crate::db::{Database, Registry};
use crate::order::{self, Order};
use crate::page::inline_gc::InlineGc;
use crate::page::node::LeafValue;
use crate::page::LeafNode;
use crate::page::{self, CatalogEntry, DbRecord, Page, Pgno, HDR, META_PAGES};
use crate::store::MapSource;
use crate::writer::gc;

mod report;
mod uses;

pub use report::{CheckReport, Problem, TreeReport, MAX_LISTED_PROBLEMS};
pub(crate) use uses::PageUses;
use uses::Use;

/// The walk's state.
struct Walk<'a> {
    src: MapSource<'a>,
    uses: PageUses,
    report: CheckReport,
    /// The key order of the tree being walked; `None`: not checked (a user
    /// comparator not attached in this environment).
    ord: Option<Order<'a>>,
    /// The duplicate mode of the tree being walked (DUPSORT).
    dups: Option<Dups<'a>>,
    /// Whether the duplicate order is known (a user comparator of values
    /// is attached): if not, the order of values is not checked.
    dup_ord_known: bool,
}

/// A named database found in the catalog: name, record, the names of its
/// key comparator and of its duplicate values' comparator.
type NamedTree = (String, DbRecord, Option<String>, Option<String>);

/// What a snapshot's meta names: its trees' records and its inline GC
/// (`None` when its meta page is no longer in the file).
#[derive(Clone, Copy)]
pub(crate) struct Trees<'t> {
    pub gc: &'t DbRecord,
    pub inline: Option<&'t InlineGc>,
    pub catalog: &'t DbRecord,
    pub main: &'t DbRecord,
}

/// Checks the snapshot `src` of txnid `txnid` with the given tree records.
pub(crate) fn check(
    src: MapSource<'_>,
    txnid: u64,
    trees: Trees<'_>,
    registry: &Registry,
) -> CheckReport {
    walk(src, txnid, trees, registry).0
}

/// [`check`], and what each page number below `next_pgno` is used for
/// (a physical copy carries the pages [`PageUses::in_tree`]). Keys are checked
/// in each database's order; a user comparator's order only when the
/// comparator is attached to the database's handle in `registry`.
pub(crate) fn walk<'a>(
    src: MapSource<'a>,
    txnid: u64,
    trees: Trees<'_>,
    registry: &'a Registry,
) -> (CheckReport, PageUses) {
    let Trees {
        gc: gc_rec,
        inline,
        catalog,
        main,
    } = trees;
    let pages = u64::from(src.limit);
    let mut w = Walk {
        src,
        uses: PageUses::default(),
        report: CheckReport {
            txnid,
            page_size: src.layout.psize as u32,
            pages,
            ..CheckReport::default()
        },
        ord: Some(Order::Bytewise),
        dups: None,
        dup_ord_known: true,
    };
    w.tree("gc", gc_rec, |w, k, v, pgno| w.gc_record(k, v, pgno, txnid));
    w.inline_gc(inline, gc_rec);
    let mut named: Vec<NamedTree> = Vec::new();
    let mut main_cmp = [None, None];
    w.tree("catalog", catalog, |w, k, v, pgno| {
        w.catalog_entry(k, v, pgno, &mut named, &mut main_cmp)
    });
    let [main_cmp, main_dcmp] = main_cmp;
    w.ord = w.tree_order(
        "main",
        main,
        main_cmp.as_deref(),
        registry.comparator(Database::MAIN),
    );
    w.set_dups(
        "main",
        main,
        main_dcmp.as_deref(),
        registry.dup_comparator(Database::MAIN),
    );
    w.tree("main", main, |_, _, _, _| {});
    for (name, rec, cmp, dcmp) in &named {
        let db = registry.find(name);
        let attached = db.and_then(|db| registry.comparator(db));
        w.ord = w.tree_order(name, rec, cmp.as_deref(), attached);
        let dattached = db.and_then(|db| registry.dup_comparator(db));
        w.set_dups(name, rec, dcmp.as_deref(), dattached);
        w.tree(name, rec, |_, _, _, _| {});
    }
    w.leaks(inline.is_none());
    (w.report, w.uses)
}

impl<'a> Walk<'a> {
    fn problem(&mut self, page: u64, tree: &str, what: impl Into<String>) {
        self.report.push(page, tree, what);
    }

    /// The order to check tree `name` in: its record's flags, the
    /// comparator name recorded in the catalog, and the comparator
    /// attached to its handle (`None`: the order is not checked).
    fn tree_order(
        &mut self,
        name: &str,
        rec: &DbRecord,
        recorded: Option<&str>,
        attached: Option<&'a std::sync::Arc<dyn order::Comparator>>,
    ) -> Option<Order<'a>> {
        let at = u64::from(rec.root);
        match Order::builtin(rec.flags) {
            Err(what) => {
                self.problem(at, name, what);
                None
            }
            Ok(Some(o)) => {
                if recorded.is_some() {
                    let what = "a comparator is named for a database in a built-in key order";
                    self.problem(at, name, what);
                }
                Some(o)
            }
            Ok(None) => {
                let Some(recorded) = recorded else {
                    self.problem(at, name, "user key order without a comparator name");
                    return None;
                };
                attached
                    .filter(|c| c.name() == recorded)
                    .map(|c| Order::Custom(&**c))
            }
        }
    }

    /// Marks `n` pages from `pgno` as used for `u`; a problem if any is
    /// outside the snapshot or already used.
    fn mark(&mut self, pgno: Pgno, n: usize, u: Use, tree: &str) -> bool {
        let end = u64::from(pgno) + n as u64;
        if pgno < META_PAGES || end > self.report.pages {
            let what = format!(
                "page range {pgno}..{end} outside the allocated pages 3..{}",
                self.report.pages
            );
            self.problem(u64::from(pgno), tree, what);
            return false;
        }
        let mut ok = true;
        for p in pgno..end as Pgno {
            let what = match (self.uses.get(p as usize), u) {
                (Use::Unseen, _) => {
                    self.uses.set(p as usize, u);
                    continue;
                }
                (Use::Tree, Use::Tree) => "page reached twice in the trees",
                (Use::Tree, Use::Free) | (Use::Free, Use::Tree) => {
                    "page both in a tree and listed free in the GC"
                }
                (Use::Free, Use::Free) => "page listed free twice in the GC",
                (_, Use::Unseen) => continue,
            };
            self.problem(u64::from(p), tree, what);
            ok = false;
        }
        ok
    }

    /// Walks the tree `rec` named `name`, calling `leaf` for every entry.
    fn tree(
        &mut self,
        name: &str,
        rec: &DbRecord,
        mut leaf: impl FnMut(&mut Self, &[u8], &[u8], Pgno),
    ) {
        let mut t = TreeReport {
            name: name.into(),
            depth: u32::from(rec.depth),
            ..TreeReport::default()
        };
        let depth = rec.depth as usize;
        if (depth == 0) != (rec.root == 0) || depth > MAX_DEPTH {
            let what = format!("record has root {} and depth {depth}", rec.root);
            self.problem(u64::from(rec.root), name, what);
        } else if rec.root != 0 {
            let top = Node {
                pgno: rec.root,
                cksum: rec.root_cksum,
                levels: depth,
                lo: None,
                hi: None,
            };
            self.page(name, top, &mut t, &mut leaf);
        }
        let counted = [
            ("branch pages", t.branch_pages, rec.branch_pages),
            ("leaf pages", t.leaf_pages, rec.leaf_pages),
            ("overflow pages", t.overflow_pages, rec.overflow_pages),
            ("entries", t.entries, rec.entries),
        ];
        for (what, found, recorded) in counted {
            if found != recorded {
                let msg = format!("record says {recorded} {what}, the walk found {found}");
                self.problem(u64::from(rec.root), name, msg);
            }
        }
        self.report.tree_pages += t.branch_pages + t.leaf_pages + t.overflow_pages;
        self.report.trees.push(t);
    }

    /// Checks one page and everything under it.
    fn page(
        &mut self,
        tree: &str,
        n: Node<'a>,
        t: &mut TreeReport,
        leaf: &mut impl FnMut(&mut Self, &[u8], &[u8], Pgno),
    ) {
        if !self.mark(n.pgno, 1, Use::Tree, tree) {
            return;
        }
        let at = u64::from(n.pgno);
        let p = match crate::store::Source::page(self.src, n.pgno) {
            Ok(p) => p,
            Err(e) => return self.problem(at, tree, error_what(e)),
        };
        if page::checksum(p.bytes()) != n.cksum {
            self.problem(at, tree, "checksum mismatch");
        }
        if p.is_leaf() != (n.levels == 1) {
            let what = format!(
                "{:?} page where the tree's depth wants the other kind",
                p.kind()
            );
            return self.problem(at, tree, what);
        }
        if p.is_leaf() {
            t.leaf_pages += 1;
            self.leaf_page(tree, &p, &n, t, leaf);
        } else {
            t.branch_pages += 1;
            self.branch_page(tree, &p, &n, t, leaf);
        }
    }

    fn leaf_page(
        &mut self,
        tree: &str,
        p: &Page<'a>,
        n: &Node<'a>,
        t: &mut TreeReport,
        leaf: &mut impl FnMut(&mut Self, &[u8], &[u8], Pgno),
    ) {
        let at = u64::from(n.pgno);
        if p.len() == 0 {
            // Deletes free an emptied leaf (see `btree/delete.rs`).
            self.problem(at, tree, "leaf page without nodes");
        }
        let mut prev: Option<&[u8]> = None;
        for i in 0..p.len() {
            let nd = match p.leaf(i) {
                Ok(nd) => nd,
                Err(e) => return self.problem(at, tree, error_what(e)),
            };
            if let Some(what) = order_problem(self.ord, prev, nd.key, n.lo, n.hi) {
                self.problem(at, tree, format!("leaf node {i}: {what}"));
            }
            prev = Some(nd.key);
            t.entries += 1;
            if let Some(d) = self.dups {
                self.dup_node(tree, &nd, d, n.pgno, t);
                continue;
            }
            let value = match nd.value {
                LeafValue::Inline(v) => Some(v),
                LeafValue::Overflow { pgno, len, cksum } => {
                    self.overflow(tree, pgno, len, cksum, t)
                }
            };
            if let Some(v) = value {
                leaf(self, nd.key, v, n.pgno);
            }
        }
    }

    /// Takes the duplicate mode in `rec`'s flags for the walk of tree
    /// `name`: a user order of values by the comparator `attached` if it has
    /// the `recorded` name, else with the order of values unchecked.
    fn set_dups(
        &mut self,
        name: &str,
        rec: &DbRecord,
        recorded: Option<&str>,
        attached: Option<&'a std::sync::Arc<dyn order::Comparator>>,
    ) {
        let custom = attached
            .filter(|c| recorded == Some(c.name()))
            .map(|c| Order::Custom(&**c));
        let user = crate::btree::dup::custom_dups(rec.flags);
        self.dup_ord_known = !user || custom.is_some();
        // Unchecked: any order stands in, and order problems are not reported.
        let custom = custom.or(user.then_some(Order::Bytewise));
        self.dups = Dups::of(rec.flags, custom).unwrap_or_else(|what| {
            self.problem(u64::from(rec.root), name, what);
            None
        });
    }

    /// Checks the values of one leaf node of a DUPSORT tree: a single
    /// value, a sorted list, or a sub-tree (walked like any tree, in the
    /// duplicate order, its pages and values counted into `t`).
    fn dup_node(
        &mut self,
        tree: &str,
        nd: &LeafNode<'a>,
        d: Dups<'a>,
        pgno: Pgno,
        t: &mut TreeReport,
    ) {
        let at = u64::from(pgno);
        let vals = match crate::btree::dup::vals(nd, d, pgno) {
            Ok(v) => v,
            Err(e) => return self.problem(at, tree, error_what(e)),
        };
        let size_ok = |v: &[u8]| d.ord.key_size().is_none_or(|n| n == v.len());
        match vals {
            Vals::One(v) => {
                if !size_ok(v) {
                    self.problem(at, tree, "duplicate value of the wrong integer size");
                }
            }
            Vals::List(l) => {
                t.entries += l.len() as u64 - 1;
                let mut prev: Option<&[u8]> = None;
                for i in 0..l.len() {
                    let Some(v) = l.get(i) else {
                        return self.problem(at, tree, "damaged duplicate list");
                    };
                    let disorder = self.dup_ord_known && prev.is_some_and(|p| !d.ord.lt(p, v));
                    if disorder || !size_ok(v) {
                        let what =
                            format!("duplicate list value {i} out of order or of a wrong size");
                        self.problem(at, tree, what);
                    }
                    prev = Some(v);
                }
            }
            Vals::Tree(r) => self.dup_tree(tree, &r, d, t),
        }
    }

    /// Walks a duplicate sub-tree and checks its record's counts.
    fn dup_tree(&mut self, tree: &str, r: &DbRecord, d: Dups<'a>, t: &mut TreeReport) {
        let depth = r.depth as usize;
        if depth == 0 || depth > MAX_DEPTH {
            let what = format!("duplicate sub-tree of depth {depth}");
            return self.problem(u64::from(r.root), tree, what);
        }
        let mut sub = TreeReport::default();
        let saved = (self.ord, self.dups);
        (self.ord, self.dups) = (self.dup_ord_known.then_some(d.ord), None);
        let top = Node {
            pgno: r.root,
            cksum: r.root_cksum,
            levels: depth,
            lo: None,
            hi: None,
        };
        self.page(
            tree,
            top,
            &mut sub,
            &mut |w: &mut Self, k: &[u8], v: &[u8], p| {
                let sized = d.ord.key_size().is_none_or(|n| n == k.len());
                if !v.is_empty() || !sized {
                    w.problem(
                        u64::from(p),
                        "duplicate sub-tree",
                        "value in a sub-tree, or key of a wrong size",
                    );
                }
            },
        );
        (self.ord, self.dups) = saved;
        let counts = [
            (sub.branch_pages, r.branch_pages),
            (sub.leaf_pages, r.leaf_pages),
            (sub.overflow_pages, r.overflow_pages),
            (sub.entries, r.entries),
        ];
        if counts.iter().any(|(a, b)| a != b) || sub.entries < 2 {
            let what = format!("duplicate sub-tree record counts {counts:?} (found, recorded)");
            self.problem(u64::from(r.root), tree, what);
        }
        t.branch_pages += sub.branch_pages;
        t.leaf_pages += sub.leaf_pages;
        t.overflow_pages += sub.overflow_pages;
        t.entries += sub.entries.saturating_sub(1);
    }

    /// Checks an overflow run; its value if the run is sound.
    fn overflow(
        &mut self,
        tree: &str,
        pgno: Pgno,
        len: usize,
        cksum: u64,
        t: &mut TreeReport,
    ) -> Option<&'a [u8]> {
        let src = self.src;
        let l = src.layout;
        if len > page::MAX_VALUE {
            self.problem(
                u64::from(pgno),
                tree,
                "overflow value longer than the limit",
            );
            return None;
        }
        let np = l.overflow_pages(len);
        if !self.mark(pgno, np, Use::Tree, tree) {
            return None;
        }
        t.overflow_pages += np as u64;
        let run = src.map.slice(pgno as usize * l.psize, np * l.psize);
        let Some(run) = run else {
            self.problem(u64::from(pgno), tree, "overflow run outside the map");
            return None;
        };
        if let Err(e) = page::check_overflow(run, pgno, np) {
            self.problem(u64::from(pgno), tree, error_what(e));
            return None;
        }
        if page::checksum(run) != cksum {
            self.problem(u64::from(pgno), tree, "overflow run checksum mismatch");
        }
        run.get(HDR..HDR + len)
    }

    fn branch_page(
        &mut self,
        tree: &str,
        p: &Page<'a>,
        n: &Node<'a>,
        t: &mut TreeReport,
        leaf: &mut impl FnMut(&mut Self, &[u8], &[u8], Pgno),
    ) {
        let at = u64::from(n.pgno);
        let mut nodes = Vec::with_capacity(p.len());
        for i in 0..p.len() {
            match p.branch(i) {
                Ok(nd) => nodes.push(nd),
                Err(e) => return self.problem(at, tree, error_what(e)),
            }
        }
        if nodes.is_empty() {
            return self.problem(at, tree, "branch page without children");
        }
        if !nodes[0].key.is_empty() {
            self.problem(at, tree, "first branch node has a key");
        }
        for i in 1..nodes.len() {
            let prev = (i > 1).then(|| nodes[i - 1].key);
            if let Some(what) = order_problem(self.ord, prev, nodes[i].key, n.lo, n.hi) {
                self.problem(at, tree, format!("branch node {i}: {what}"));
            }
        }
        for (i, nd) in nodes.iter().enumerate() {
            let child = Node {
                pgno: nd.child,
                cksum: nd.cksum,
                levels: n.levels - 1,
                lo: if i == 0 { n.lo } else { Some(nd.key) },
                hi: nodes.get(i + 1).map(|x| x.key).or(n.hi),
            };
            self.page(tree, child, t, leaf);
        }
    }

    /// One GC record: pages listed free, by a commit no newer than the snapshot.
    fn gc_record(&mut self, k: &[u8], v: &[u8], pgno: Pgno, txnid: u64) {
        let at = u64::from(pgno);
        match gc::key_txnid(k) {
            Some(t) if t <= txnid => {}
            Some(t) => self.problem(at, "gc", format!("record of txnid {t} after the snapshot")),
            None => return self.problem(at, "gc", "record key is not 12 bytes"),
        }
        if !v.len().is_multiple_of(4) {
            return self.problem(at, "gc", "record value is not a list of page numbers");
        }
        for c in v.chunks_exact(4) {
            let p = page::rd32(c, 0);
            if self.mark(p, 1, Use::Free, "gc") {
                self.report.free_pages += 1;
            }
        }
    }

    /// One catalog entry: a named database to walk, or the main database's
    /// settings (its comparator's name goes to `main_cmp`).
    fn catalog_entry(
        &mut self,
        k: &[u8],
        v: &[u8],
        pgno: Pgno,
        named: &mut Vec<NamedTree>,
        main_cmp: &mut [Option<String>; 2],
    ) {
        let at = u64::from(pgno);
        let e = match CatalogEntry::decode(v) {
            Ok(e) => e,
            Err(what) => return self.problem(at, "catalog", what),
        };
        if k.is_empty() {
            if e.rec != DbRecord::default() {
                self.problem(
                    at,
                    "catalog",
                    "the main database's settings carry a tree record",
                );
            }
            *main_cmp = [
                e.comparator.map(Into::into),
                e.dup_comparator.map(Into::into),
            ];
            return;
        }
        match std::str::from_utf8(k) {
            Ok(name) => named.push((
                name.into(),
                e.rec,
                e.comparator.map(Into::into),
                e.dup_comparator.map(Into::into),
            )),
            Err(_) => self.problem(at, "catalog", "database name is not UTF-8"),
        }
    }

    /// The groups of the snapshot's inline GC: pages listed free. (The
    /// meta's decode checked their txnids and range; the GC tree must not
    /// hold a record of the same txnid.)
    fn inline_gc(&mut self, inline: Option<&InlineGc>, gc_rec: &DbRecord) {
        let Some(l) = inline else {
            return;
        };
        for (t, pages) in l.iter() {
            let mut c = crate::cursor::RawCursor::new(
                crate::store::AnySource::Map(self.src),
                *gc_rec,
                Order::Bytewise,
            );
            if let Ok(Some((found, _))) = c.seek(&gc::key(t, 0)) {
                if gc::key_txnid(found) == Some(t) {
                    self.problem(
                        u64::from(gc_rec.root),
                        "gc",
                        format!("txnid {t} both in the GC tree and in the inline GC"),
                    );
                }
            }
            for &p in pages {
                if self.mark(p, 1, Use::Free, "inline gc") {
                    self.report.free_pages += 1;
                }
            }
        }
    }

    /// Pages neither in a tree nor listed free, reported as runs. Without
    /// the inline GC (`unread`: the snapshot's meta page was overwritten by
    /// later commits), up to as many as it can hold are taken to be it:
    /// counted free, not reported, [`CheckReport::inline_gc_unread`].
    fn leaks(&mut self, unread: bool) {
        let runs = self
            .uses
            .unseen_runs(META_PAGES as usize, self.report.pages as usize);
        let unseen: usize = runs.iter().map(|(s, e)| e - s).sum();
        if unread {
            self.report.inline_gc_unread = true;
            if unseen <= crate::page::inline_gc::MAX_PAGES {
                self.report.free_pages += unseen as u64;
                return;
            }
        }
        for (start, end) in runs {
            let what = format!("pages {start}..{end} are in no tree and not listed free (leaked)");
            self.problem(start as u64, "", what);
        }
    }
}

/// A page to visit: where, its expected checksum, levels left including
/// it, and the key range its keys must fall in (`lo` inclusive, `hi` exclusive).
#[derive(Clone, Copy)]
struct Node<'k> {
    pgno: Pgno,
    cksum: u64,
    levels: usize,
    lo: Option<&'k [u8]>,
    hi: Option<&'k [u8]>,
}

/// Whether `key` follows `prev` strictly and lies in `lo..hi` in the
/// tree's order `ord` (`None`: not checked), and has the size an integer
/// order wants.
fn order_problem(
    ord: Option<Order<'_>>,
    prev: Option<&[u8]>,
    key: &[u8],
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
) -> Option<&'static str> {
    let ord = ord?;
    if !ord.fits(key) {
        return Some("key of the wrong size for the integer key order");
    }
    if prev.is_some_and(|p| !ord.lt(p, key)) {
        return Some("key not greater than the one before it");
    }
    if lo.is_some_and(|lo| ord.lt(key, lo)) {
        return Some("key below its parent's separator");
    }
    if hi.is_some_and(|hi| !ord.lt(key, hi)) {
        return Some("key at or above the next separator in the parent");
    }
    None
}

/// The `what` of a `Corrupted` error, or the error's text.
fn error_what(e: crate::Error) -> String {
    match e {
        crate::Error::Corrupted { what, .. } => what,
        other => other.to_string(),
    }
}
