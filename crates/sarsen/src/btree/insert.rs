//! Insert, overwrite and page split.
//!
//! The writer descends, makes the whole path dirty (copy-on-write, top
//! down), then changes the leaf in place. A page that cannot take a node
//! splits in two; the split inserts a separator into the parent, which may
//! split in turn; a root split adds a level.

use super::{descend, Fill, Path, Source, Step, Tree};
use crate::error::{Error, Result};
use crate::io::buf::PageBuf;
use crate::page::node::{self, BranchNode, LeafValue, FRESH};
use crate::page::{edit, Kind, Page, Pgno, HDR};
use crate::store::PageStore;

impl<S: PageStore> Tree<'_, S> {
    /// Inserts or overwrites `key` with `val` in the tree `self.rec`.
    ///
    /// The caller has checked the key and value sizes. Before anything is
    /// changed, enough free pages are reserved for the worst case (a split at
    /// every level plus a new root and the overflow run), so running out of
    /// space fails cleanly with `UpperBoundReached` and changes nothing.
    pub(crate) fn put(&mut self, key: &[u8], val: &[u8]) -> Result<()> {
        self.put_node(key, val, 0)
    }

    /// [`put`] with the leaf node flags `flags` (0, or a DUPSORT node's
    /// `DUPS`/`SUBTREE`, with `FRESH` for a sub-tree written by this commit).
    pub(crate) fn put_node(&mut self, key: &[u8], val: &[u8], flags: u8) -> Result<()> {
        if flags == 0 && matches!(self.append_to_hint(key, val)?, Hinted::Done) {
            return Ok(());
        }
        self.put_unhinted(key, val, flags)
    }

    /// [`put_node`] past the hint's fast path (which did not apply, or was
    /// not tried).
    fn put_unhinted(&mut self, key: &[u8], val: &[u8], flags: u8) -> Result<()> {
        self.reserve_for(key.len(), val.len())?;
        if self.rec.root == 0 {
            let pgno = self.store.new_page(Kind::Leaf)?;
            self.rec.root = pgno;
            self.rec.depth = 1;
            self.rec.leaf_pages = self.rec.leaf_pages.saturating_add(1);
        }
        let (path, found, hinted) = match self.append_path(key)? {
            Some(path) => (path, false, true),
            None => {
                let mut path = Path::new();
                let (found, dirty) = self.descend_to_write(key, &mut path)?;
                self.touch_path_known(&mut path, dirty)?;
                (path, found, false)
            }
        };
        self.put_at(key, val, flags, &path, found, hinted)
    }

    /// Appends `key` = `val` after the last key of the tree `self.rec` (LMDB's
    /// `MDB_APPEND`). `KeyNotGreater`, before anything changes, unless `key`
    /// sorts after every key in `self.ord`. After an append, or a put at the right
    /// edge, the append hint makes the check one compare with the last key of
    /// the hinted leaf, and no descent is needed.
    pub(crate) fn append(&mut self, key: &[u8], val: &[u8]) -> Result<()> {
        match self.append_to_hint(key, val)? {
            Hinted::Done => return Ok(()),
            // The hinted leaf ends the tree: its last key is the tree's.
            Hinted::Last => {}
            Hinted::Miss => {
                if !self.sorts_last(key)? {
                    return Err(Error::KeyNotGreater);
                }
            }
        }
        self.put_unhinted(key, val, 0)
    }

    /// The append hint's fast path: when the last change to `self.rec` appended at
    /// its right edge, `key` sorts after the last key of that leaf, and the
    /// inline node fits there, inserts it with no descent and no reservation
    /// (nothing is allocated). LMDB's `MDB_APPEND` likewise goes to the last
    /// leaf its cursor holds. Changes nothing unless it returns `Done`.
    fn append_to_hint(&mut self, key: &[u8], val: &[u8]) -> Result<Hinted> {
        let pgno = match &self.state.append {
            Some((root, hint)) if *root == self.rec.root => hint.leaf().pgno,
            _ => return Ok(Hinted::Miss),
        };
        if !self.store.is_dirty(pgno) {
            return Ok(Hinted::Miss);
        }
        let inline = self.store.layout().inline(key.len(), val.len());
        let b = self.store.dirty_mut(pgno)?;
        let n = {
            let p = Page::new(b, pgno)?;
            let n = p.len();
            if n == 0 || !self.ord.lt(p.leaf(n - 1)?.key, key) {
                return Ok(Hinted::Miss);
            }
            n
        };
        let len = node::leaf_len(key.len(), val.len(), false);
        if !inline || edit::free(b) < len + 2 {
            return Ok(Hinted::Last);
        }
        // The node is written in place: no scratch copy.
        edit::insert_with(b, n, len, |d| {
            node::write_leaf(d, key, &LeafValue::Inline(val), 0)
        });
        self.rec.entries = self.rec.entries.saturating_add(1);
        Ok(Hinted::Done)
    }

    /// Whether `key` sorts after every key of the tree `self.rec` in `self.ord` (true for
    /// an empty tree). This reads the last key: a descent for `key` may end
    /// short of the right edge, before a leaf that deletes left empty with its
    /// separator (see `delete.rs`).
    pub(crate) fn sorts_last(&self, key: &[u8]) -> Result<bool> {
        let src = crate::store::AnySource::Write(self.store.view());
        let mut c = super::walk::RawCursor::new(src, *self.rec, self.ord);
        Ok(c.last()?.is_none_or(|(last, _)| self.ord.lt(last, key)))
    }

    /// Merges into `key` of the non-empty tree or the empty tree `self.rec` with one
    /// descent: `f` gets the stored value (or `None`) and writes the new one
    /// into `out`, which is then stored as [`put`] would. Nothing changes if
    /// `f` fails, if the new value is too long, or if it equals the stored one.
    pub(crate) fn merge(
        &mut self,
        key: &[u8],
        out: &mut Vec<u8>,
        f: impl FnOnce(Option<&[u8]>, &mut Vec<u8>) -> Result<()>,
    ) -> Result<()> {
        out.clear();
        if self.rec.root == 0 {
            f(None, out)?;
            check_value_len(out.len())?;
            return self.put(key, out);
        }
        let (mut path, found) = descend(self.store.view(), self.rec, self.ord, key)?;
        {
            let s = self.store.view();
            let old = if found {
                let leaf = path.leaf();
                Some(s.value(s.page(leaf.pgno)?.leaf(leaf.idx())?.value)?)
            } else {
                None
            };
            f(old, out)?;
            if old == Some(&out[..]) {
                return Ok(());
            }
        }
        check_value_len(out.len())?;
        // Reserving may load GC records, which changes only the GC tree: the
        // path found above stays valid.
        self.reserve_for(key.len(), out.len())?;
        self.state.clear_hint(self.rec.root);
        self.touch_path(&mut path)?;
        self.put_at(key, out, 0, &path, found, false)
    }

    /// Replaces the value of `key`, stored at the end of `path` (the current
    /// path to it: a write cursor's place), with `val`: no descent. `path` is
    /// left naming the pages it made dirty. Returns whether the change stayed
    /// in that leaf (no split), so that the path still names `key`. The
    /// levels set in `dirty` are known to be dirty, as for
    /// [`delete_at`](Tree::delete_at).
    pub(crate) fn put_at_path(
        &mut self,
        path: &mut Path,
        key: &[u8],
        val: &[u8],
        dirty: u32,
    ) -> Result<bool> {
        self.reserve_for(key.len(), val.len())?;
        self.state.clear_hint(self.rec.root);
        self.touch_path_known(path, dirty)?;
        // Only a split of the leaf adds a leaf page.
        let leaf_pages = self.rec.leaf_pages;
        self.put_at(key, val, 0, path, true, false)?;
        Ok(self.rec.leaf_pages == leaf_pages)
    }

    /// Reserves free pages for the worst case of writing a `len`-byte value
    /// with a `klen`-byte key into `self.rec`: a split at every level, a new root,
    /// and an overflow run.
    fn reserve_for(&mut self, klen: usize, len: usize) -> Result<()> {
        let l = self.store.layout();
        let run = if l.inline(klen, len) {
            0
        } else {
            l.overflow_pages(len)
        };
        self.store
            .reserve(2 * (self.rec.depth as usize + 1) + 1 + run, run)
    }

    /// Writes `key` = `val` at the end of `path` (dirty, with the leaf index
    /// where the key is or goes; `found` if it is there). `hinted`: the path
    /// came from the append hint, so it ends at the right edge of the tree.
    fn put_at(
        &mut self,
        key: &[u8],
        val: &[u8],
        flags: u8,
        path: &Path,
        found: bool,
        hinted: bool,
    ) -> Result<()> {
        let l = self.store.layout();
        let big = !l.inline(key.len(), val.len());
        let run = if big { l.overflow_pages(val.len()) } else { 0 };
        let leaf = path.leaf();
        if found {
            if self.overwrite_in_place(leaf.pgno, leaf.idx(), val, big, flags)? {
                return Ok(());
            }
            self.remove_leaf_node(leaf.pgno, leaf.idx())?;
            self.rec.entries = self.rec.entries.saturating_sub(1);
        }
        let value = if big {
            let (pgno, cksum) = self.store.write_overflow(val)?;
            self.rec.overflow_pages = self.rec.overflow_pages.saturating_add(run as u64);
            LeafValue::Overflow {
                pgno,
                len: val.len(),
                cksum,
            }
        } else {
            LeafValue::Inline(val)
        };
        let mut scratch = std::mem::take(&mut self.state.scratch);
        scratch.clear();
        scratch.resize(node::leaf_len(key.len(), val.len(), big), 0);
        // A new overflow run is dirty: its reference is FRESH.
        node::write_leaf(&mut scratch, key, &value, if big { FRESH } else { flags });
        let leaf_pages = self.rec.leaf_pages;
        // A hinted path ends at the right edge by construction.
        let at_end = hinted || (!found && self.is_rightmost(path, path.len)?);
        let r = self.insert_node(path, path.len - 1, leaf.idx(), &scratch);
        self.state.scratch = scratch;
        r?;
        self.rec.entries = self.rec.entries.saturating_add(1);
        // Appended at the right edge without a split: the next put of a larger
        // key can go straight to this leaf. A hinted path came from the hint,
        // which still holds it (the leaf index in a hint is not used).
        if at_end && self.rec.leaf_pages == leaf_pages {
            if !hinted
                || self
                    .state
                    .append
                    .as_ref()
                    .is_none_or(|(r, _)| *r != self.rec.root)
            {
                self.state.append = Some((self.rec.root, *path));
            }
        } else if at_end {
            // An append split: the key starts a new rightmost leaf, and the
            // whole right edge is dirty (the path was, the new pages are).
            // The hint moves there, so that the next append neither reads
            // the last key again nor descends. A tree whose edge cannot be
            // walked keeps no hint; the next change reports it.
            self.state.append = self.right_edge().ok().map(|p| (self.rec.root, p));
        } else if hinted {
            self.state.append = None;
        }
        Ok(())
    }

    /// The path along the right edge of the tree `self.rec`: the last node
    /// of each branch, and the leaf's index past its last node.
    fn right_edge(&self) -> Result<Path> {
        let depth = super::check_depth(self.rec)?;
        let s = self.store.view();
        let mut path = Path::new();
        let mut pgno = self.rec.root;
        for level in 1..=depth {
            let p = s.page(pgno)?;
            if p.is_leaf() != (level == depth) {
                return Err(super::bad_level(pgno));
            }
            let n = p.len();
            if p.is_leaf() {
                path.steps[level - 1] = Step::new(pgno, n);
                path.len = level;
                return Ok(path);
            }
            let last = n
                .checked_sub(1)
                .ok_or_else(|| Error::corrupted(u64::from(pgno), "branch page without nodes"))?;
            path.steps[level - 1] = Step::new(pgno, last);
            pgno = p.branch(last)?.child;
        }
        Err(super::bad_level(pgno))
    }

    /// Sequential inserts without `MDB_APPEND`: if the last put into this tree
    /// appended at its right edge (and nothing else changed the tree since),
    /// and `key` sorts after the last key of that rightmost leaf (in `self.ord`),
    /// returns the (dirty) path to the end of that leaf, skipping the descent.
    fn append_path(&mut self, key: &[u8]) -> Result<Option<Path>> {
        // A hint for another tree stays valid: this put does not touch it. A
        // hint for this tree that does not apply is dropped, and so is this
        // one if the put splits; `put_at` keeps it when the path holds.
        let Some((root, hint)) = &self.state.append else {
            return Ok(None);
        };
        if *root != self.rec.root {
            return Ok(None);
        }
        let leaf = hint.leaf().pgno;
        let n = if self.store.is_dirty(leaf) {
            let p = self.store.view().page(leaf)?;
            let n = p.len();
            (n > 0 && self.ord.lt(p.leaf(n - 1)?.key, key)).then_some(n)
        } else {
            None
        };
        let Some(n) = n else {
            self.state.append = None;
            return Ok(None);
        };
        let mut path = *hint;
        path.steps[path.len - 1].set_idx(n);
        Ok(Some(path))
    }

    /// Replaces the value of node `idx` in dirty leaf `pgno` (and sets its
    /// flags to `flags`) when the new value is inline and exactly as long as an
    /// inline old one.
    fn overwrite_in_place(
        &mut self,
        pgno: Pgno,
        idx: usize,
        val: &[u8],
        big: bool,
        flags: u8,
    ) -> Result<bool> {
        if big {
            return Ok(false);
        }
        let b = self.store.dirty_mut(pgno)?;
        let (klen, same) = {
            let p = Page::new(b, pgno)?;
            let n = p.leaf(idx)?;
            let same = matches!(n.value, LeafValue::Inline(v) if v.len() == val.len());
            (n.key.len(), same)
        };
        if same {
            let d = edit::node_mut(b, idx);
            let v = node::LEAF_HDR + klen;
            d[0] = flags;
            d[v..v + val.len()].copy_from_slice(val);
        }
        Ok(same)
    }

    /// Removes node `idx` from dirty leaf `pgno`, freeing its overflow run.
    /// Returns what [`rebalance`](Tree::rebalance) looks at next, the
    /// leaf's fill after the removal (one look-up of the page, not two).
    pub(crate) fn remove_leaf_node(&mut self, pgno: Pgno, idx: usize) -> Result<Fill> {
        let l = self.store.layout();
        let b = self.store.dirty_mut(pgno)?;
        let (len, run, kind, n) = {
            let p = Page::new(b, pgno)?;
            let n = p.leaf(idx)?;
            let run = match n.value {
                LeafValue::Overflow { pgno, len, .. } => Some((pgno, l.overflow_pages(len))),
                LeafValue::Inline(_) => None,
            };
            (n.stored_len(), run, p.kind(), p.len())
        };
        edit::remove(b, idx, len);
        let fill = Fill {
            kind,
            entries: n.saturating_sub(1),
            used: b.len() - HDR - edit::free(b),
        };
        if let Some((ov, n)) = run {
            self.store.free_run(ov, n)?;
            self.rec.overflow_pages = self.rec.overflow_pages.saturating_sub(n as u64);
        }
        Ok(fill)
    }

    /// Makes the pages on the path to `key` dirty (copy-on-write) and changes
    /// no entry: for a caller that must know which pages its next changes
    /// there free before making them (the GC's save at commit). Reserves
    /// the path's pages first, as a put does.
    pub(crate) fn touch_to(&mut self, key: &[u8]) -> Result<()> {
        if self.rec.root == 0 {
            return Ok(());
        }
        self.store.reserve(usize::from(self.rec.depth), 0)?;
        self.state.clear_hint(self.rec.root);
        let (mut path, _) = descend(self.store.view(), self.rec, self.ord, key)?;
        self.touch_path(&mut path)
    }

    /// Makes every page on `path` dirty, top down, pointing each parent at its
    /// child's new page number.
    pub(crate) fn touch_path(&mut self, path: &mut Path) -> Result<()> {
        self.touch_path_known(path, 0)
    }

    /// [`touch_path`](Tree::touch_path) for a path whose pages at the
    /// levels set in `dirty` (bit `i` for `path.steps[i]`) are known to be
    /// dirty: the descent that found the path has just looked them up, and
    /// nothing has changed the store since. They are not looked up again.
    /// A wrong bit cannot make a write reach a clean page: every change
    /// goes through `dirty_mut`, which fails with `Corrupted` for a page
    /// that is not dirty.
    pub(crate) fn touch_path_known(&mut self, path: &mut Path, dirty: u32) -> Result<()> {
        for level in 0..path.len {
            if dirty >> level & 1 != 0 {
                continue;
            }
            let old = path.steps[level].pgno;
            let new = self.store.touch(old)?;
            if new == old {
                continue;
            }
            path.steps[level].pgno = new;
            if level == 0 {
                self.rec.root = new;
            } else {
                let parent = path.steps[level - 1];
                self.set_child(parent.pgno, parent.idx(), new)?;
            }
        }
        Ok(())
    }

    /// Points node `idx` of dirty branch `pgno` at the dirty page `child`
    /// (marked `FRESH`; the checksum is filled in at commit).
    pub(crate) fn set_child(&mut self, pgno: Pgno, idx: usize, child: Pgno) -> Result<()> {
        let b = self.store.dirty_mut(pgno)?;
        Page::new(b, pgno)?.branch(idx)?;
        node::set_branch_child(edit::node_mut(b, idx), child, 0, FRESH);
        Ok(())
    }

    /// Inserts the raw node `nd` at `idx` of the dirty page at `path[level]`,
    /// splitting as needed.
    pub(crate) fn insert_node(
        &mut self,
        path: &Path,
        level: usize,
        idx: usize,
        nd: &[u8],
    ) -> Result<()> {
        let pg = path.steps[level].pgno;
        if edit::insert_raw(self.store.dirty_mut(pg)?, idx, nd) {
            return Ok(());
        }
        let rightmost = self.is_rightmost(path, level)?;
        let src = self
            .store
            .take_dirty(pg)
            .ok_or_else(|| Error::corrupted(u64::from(pg), "page to split is not dirty"))?;
        self.split(path, level, idx, nd, src, rightmost)
    }

    /// Whether the page at `path[level]` is the last at every level above it.
    /// With `level == path.len`, whether the leaf index is also past the last
    /// node (an insert there appends at the right edge of the tree).
    fn is_rightmost(&self, path: &Path, level: usize) -> Result<bool> {
        let s = self.store.view();
        for j in 0..level {
            let st = path.steps[j];
            let n = s.page(st.pgno)?.len();
            let last = if j + 1 == path.len {
                n
            } else {
                n.saturating_sub(1)
            };
            if st.idx() != last {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Splits the page `src` (removed from the dirty set) while inserting `nd`
    /// at `idx`: the left half keeps the page number, the right half gets a new
    /// page, and the right half's first key goes up to the parent.
    fn split(
        &mut self,
        path: &Path,
        level: usize,
        idx: usize,
        nd: &[u8],
        mut src: PageBuf,
        rightmost: bool,
    ) -> Result<()> {
        let pg = path.steps[level].pgno;
        let (kind, old_n) = {
            let p = Page::new(&src, pg)?;
            (p.kind(), p.len())
        };
        let (sep, right) = if rightmost && idx == old_n {
            // Append split (sorted loads): the page keeps every node it has,
            // full, and the new node alone starts the right page. Nothing to
            // rebuild or copy.
            let right = self.store.new_page(kind)?;
            let (sep, first) = match kind {
                Kind::Branch => {
                    let b = BranchNode::parse(nd).ok_or_else(|| {
                        Error::corrupted(u64::from(pg), "branch node to insert is short")
                    })?;
                    (b.key.to_vec(), branch_node(&[], b.child, b.cksum, b.flags))
                }
                _ => {
                    let n = node::LeafNode::parse(nd).ok_or_else(|| {
                        Error::corrupted(u64::from(pg), "leaf node to insert is short")
                    })?;
                    (n.key.to_vec(), nd.to_vec())
                }
            };
            edit::insert_raw(self.store.dirty_mut(right)?, 0, &first);
            // A sorted load does not come back to the left page: its checksum
            // is taken now, while its bytes are in the CPU cache, not at
            // commit. Any later change to it drops the kept checksum
            // (`PageBuf`), and seal then hashes it again.
            src.hash_leaf();
            self.store.put_dirty(pg, src);
            (sep, right)
        } else {
            let left = self.build_halves(pg, idx, nd, &src, rightmost)?;
            // The left half goes back into the page's own buffer (in write-map
            // mode, its bytes in the file).
            src.copy_from_slice(&left.buf);
            self.store.recycle(PageBuf::heap(left.buf));
            self.store.put_dirty(pg, src);
            (left.sep, left.right)
        };
        match kind {
            Kind::Leaf => self.rec.leaf_pages = self.rec.leaf_pages.saturating_add(1),
            _ => self.rec.branch_pages = self.rec.branch_pages.saturating_add(1),
        }
        let link = branch_node(&sep, right, 0, FRESH);
        if level == 0 {
            self.new_root(pg, &link)
        } else {
            let parent = path.steps[level - 1];
            self.insert_node(path, level - 1, parent.idx() + 1, &link)
        }
    }

    /// Distributes the nodes of `src` plus `nd` (at `idx`) over a new left
    /// buffer and a new right page.
    fn build_halves(
        &mut self,
        pg: Pgno,
        idx: usize,
        nd: &[u8],
        src: &[u8],
        rightmost: bool,
    ) -> Result<Halves> {
        let p = Page::new(src, pg)?;
        let kind = p.kind();
        let n = p.len();
        let item = |k: usize| -> Result<&[u8]> {
            match k.cmp(&idx) {
                std::cmp::Ordering::Less => p.raw_node(k),
                std::cmp::Ordering::Equal => Ok(nd),
                std::cmp::Ordering::Greater => p.raw_node(k - 1),
            }
        };
        let key_of = |raw: &[u8]| -> Result<Vec<u8>> {
            let k = match kind {
                Kind::Leaf => node::LeafNode::parse(raw).map(|n| n.key),
                _ => BranchNode::parse(raw).map(|n| n.key),
            };
            k.map(<[u8]>::to_vec)
                .ok_or_else(|| Error::corrupted(u64::from(pg), "node overruns page in split"))
        };
        let mut sizes = Vec::with_capacity(n + 1);
        let mut keylens = Vec::with_capacity(n + 1);
        for k in 0..=n {
            let raw = item(k)?;
            sizes.push(raw.len() + 2);
            keylens.push(if kind == Kind::Branch {
                key_of(raw)?.len()
            } else {
                0
            });
        }
        let cap = self.store.layout().psize - HDR;
        let s = choose_split(&sizes, &keylens, cap, rightmost && idx == n)
            .ok_or_else(|| Error::corrupted(u64::from(pg), "no split point fits"))?;
        let sep = key_of(item(s)?)?;

        let right = self.store.new_page(kind)?;
        let mut left = self.store.buffer();
        crate::page::init(&mut left, pg, kind, self.store.txnid());
        for k in 0..s {
            if !edit::insert_raw(&mut left, k, item(k)?) {
                return Err(Error::corrupted(u64::from(pg), "split half overflows"));
            }
        }
        let rb = self.store.dirty_mut(right)?;
        for k in s..=n {
            let raw = item(k)?;
            let ok = if kind == Kind::Branch && k == s {
                let b = BranchNode::parse(raw)
                    .ok_or_else(|| Error::corrupted(u64::from(pg), "branch node overruns page"))?;
                edit::insert_raw(rb, 0, &branch_node(&[], b.child, b.cksum, b.flags))
            } else {
                edit::insert_raw(rb, k - s, raw)
            };
            if !ok {
                return Err(Error::corrupted(u64::from(pg), "split half overflows"));
            }
        }
        Ok(Halves {
            buf: left,
            sep,
            right,
        })
    }

    /// Adds a level: a new root branch over `left` and the node `link`.
    fn new_root(&mut self, left: Pgno, link: &[u8]) -> Result<()> {
        if self.rec.depth as usize >= super::MAX_DEPTH {
            return Err(Error::corrupted(
                u64::from(self.rec.root),
                "tree would exceed 32 levels",
            ));
        }
        let root = self.store.new_page(Kind::Branch)?;
        let b = self.store.dirty_mut(root)?;
        edit::insert_raw(b, 0, &branch_node(&[], left, 0, FRESH));
        edit::insert_raw(b, 1, link);
        self.rec.root = root;
        self.rec.depth += 1;
        self.rec.branch_pages = self.rec.branch_pages.saturating_add(1);
        Ok(())
    }
}

/// `ValueTooLarge` for a value over the format's limit.
fn check_value_len(len: usize) -> Result<()> {
    if len > crate::page::MAX_VALUE {
        return Err(Error::ValueTooLarge {
            len,
            max: crate::page::MAX_VALUE,
        });
    }
    Ok(())
}

/// Picks the number of items that stay left. `sizes` are node+slot bytes;
/// `keylens` the key lengths (branches drop the key of the right half's
/// first node). `append`: sequential insert at the right edge of the tree,
/// where leaving the left page full gives densely packed pages.
fn choose_split(sizes: &[usize], keylens: &[usize], cap: usize, append: bool) -> Option<usize> {
    let total: usize = sizes.iter().sum();
    let n = sizes.len();
    let fits = |s: usize, left: usize| left <= cap && total - left - keylens[s] <= cap;
    let left_all: usize = sizes[..n - 1].iter().sum();
    if append && fits(n - 1, left_all) {
        return Some(n - 1);
    }
    let mut best: Option<(usize, usize)> = None;
    let mut left = 0;
    for s in 1..n {
        left += sizes[s - 1];
        if fits(s, left) {
            let worst = left.max(total - left - keylens[s]);
            if best.is_none_or(|(_, b)| worst < b) {
                best = Some((s, worst));
            }
        }
    }
    best.map(|(s, _)| s)
}

/// Encodes a branch node.
pub(crate) fn branch_node(key: &[u8], child: Pgno, cksum: u64, flags: u8) -> Vec<u8> {
    let mut v = vec![0u8; node::branch_len(key.len())];
    node::write_branch(&mut v, key, child, cksum, flags);
    v
}

/// The outcome of splitting a page: its new left half (to copy back into
/// the page), the separator key, and the new right page.
struct Halves {
    buf: Box<[u8]>,
    sep: Vec<u8>,
    right: Pgno,
}

/// What the append hint made of a put ([`Tree::append_to_hint`]).
enum Hinted {
    /// The node went into the hinted leaf.
    Done,
    /// The key sorts after every key of the tree, but its value is not
    /// inline or the hinted leaf has no room for it: nothing changed.
    Last,
    /// The hint does not apply: nothing changed.
    Miss,
}
