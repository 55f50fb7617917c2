//! The operations that came with DUPSORT: pair writes, duplicate cursor
//! moves, write cursors, `put_reserve`, the canary, and the refusals of
//! operations that have no meaning on one kind of database.

use std::collections::{BTreeSet, VecDeque};

use sarsen::{Canary, Cursor, RwCursor};

use super::dups::{is_fixed, kind, num_val, res, CPos, Limits, Pair, Pairs, E};
use super::*;

/// What a cursor move returned, owned, errors reduced to their kind.
#[derive(Clone, Debug, PartialEq)]
enum Out {
    Pair(Option<Pair>),
    Val(Option<Vec<u8>>),
    Count(u64),
    Multi(Option<Pair>),
    Err(E),
}

fn pair_out(r: sarsen::Result<Option<(&[u8], &[u8])>>, what: &str) -> Out {
    match r {
        Ok(e) => Out::Pair(e.map(|(k, v)| (k.to_vec(), v.to_vec()))),
        Err(e) => Out::Err(kind(&e, what)),
    }
}

/// Whether `(k, v)` is in database `idx` of `st`.
fn has_pair(st: &State, idx: usize, k: &[u8], v: &[u8]) -> bool {
    if idx < DBS {
        st.dbs[idx]
            .as_ref()
            .is_some_and(|m| m.get(k).is_some_and(|x| x == v))
    } else {
        st.dups[idx - DBS]
            .as_ref()
            .is_some_and(|m| m.get(k).is_some_and(|s| s.contains(v)))
    }
}

/// The model of `put` (and `put_no_dup_data`) into `idx`: `Ok(added)`.
fn m_put(st: &mut State, lim: Limits, idx: usize, k: &[u8], v: &[u8]) -> Result<bool, E> {
    // `put` checks the key's length before the database.
    if k.len() > lim.max_key {
        return Err(E::KeyTooLarge);
    }
    if !st.exists(idx) {
        return Err(E::NotFound);
    }
    if idx < DBS {
        st.dbs[idx].as_mut().unwrap().insert(k.to_vec(), v.to_vec());
        return Ok(true);
    }
    if let Some(e) = lim.dup_pair(k, v) {
        return Err(e);
    }
    let m = st.dups[idx - DBS].as_mut().unwrap();
    match m.get_mut(k) {
        Some(set) if set.contains(v) => Ok(false),
        Some(set) if is_fixed(idx) && set.first().unwrap().len() != v.len() => Err(E::BadValueSize),
        Some(set) => Ok(set.insert(v.to_vec())),
        None => {
            m.insert(k.to_vec(), BTreeSet::from([v.to_vec()]));
            Ok(true)
        }
    }
}

/// The model of `delete_dup`.
fn m_delete_dup(st: &mut State, idx: usize, k: &[u8], v: &[u8]) -> Result<bool, E> {
    if !st.exists(idx) {
        return Err(E::NotFound);
    }
    if idx < DBS {
        return Err(E::WrongDupMode);
    }
    let m = st.dups[idx - DBS].as_mut().unwrap();
    let Some(set) = m.get_mut(k) else {
        return Ok(false);
    };
    let gone = set.remove(v);
    if set.is_empty() {
        m.remove(k);
    }
    Ok(gone)
}

/// The model of `delete` (a whole key).
fn m_delete_key(st: &mut State, idx: usize, k: &[u8]) -> Result<bool, E> {
    if !st.exists(idx) {
        return Err(E::NotFound);
    }
    Ok(if idx < DBS {
        st.dbs[idx].as_mut().unwrap().remove(k).is_some()
    } else {
        st.dups[idx - DBS].as_mut().unwrap().remove(k).is_some()
    })
}

fn inside(k: &[u8], lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    (match lo {
        Bound::Unbounded => true,
        Bound::Included(b) => k >= b.as_slice(),
        Bound::Excluded(b) => k > b.as_slice(),
    }) && (match hi {
        Bound::Unbounded => true,
        Bound::Included(b) => k <= b.as_slice(),
        Bound::Excluded(b) => k < b.as_slice(),
    })
}

/// The model of `delete_range`: pairs removed.
fn m_delete_range(
    st: &mut State,
    idx: usize,
    lo: &Bound<Vec<u8>>,
    hi: &Bound<Vec<u8>>,
) -> Result<u64, E> {
    if !st.exists(idx) {
        return Err(E::NotFound);
    }
    let mut n = 0u64;
    if idx < DBS {
        st.dbs[idx].as_mut().unwrap().retain(|k, _| {
            let gone = inside(k, lo, hi);
            n += u64::from(gone);
            !gone
        });
    } else {
        st.dups[idx - DBS].as_mut().unwrap().retain(|k, s| {
            let gone = inside(k, lo, hi);
            if gone {
                n += s.len() as u64;
            }
            !gone
        });
    }
    Ok(n)
}

/// The model of `append_dup`.
fn m_append_dup(st: &mut State, lim: Limits, idx: usize, k: &[u8], v: &[u8]) -> Result<(), E> {
    if !st.exists(idx) {
        return Err(E::NotFound);
    }
    if idx < DBS {
        return Err(E::WrongDupMode);
    }
    let last = st.dups[idx - DBS]
        .as_ref()
        .unwrap()
        .iter()
        .next_back()
        .map(|(k, s)| (k.clone(), s.last().unwrap().clone()));
    if last.is_some_and(|l| (l.0.as_slice(), l.1.as_slice()) >= (k, v)) {
        return Err(E::KeyNotGreater);
    }
    m_put(st, lim, idx, k, v).map(drop)
}

/// The value `(k, v)` merged by the operator of `idx` (plain databases).
fn m_merge(st: &mut State, lim: Limits, idx: usize, k: &[u8], operand: &[u8]) -> Result<(), E> {
    if k.len() > lim.max_key {
        return Err(E::KeyTooLarge);
    }
    if idx >= DBS {
        return Err(if is_fixed(idx) {
            E::NoMergeOperator
        } else {
            E::WrongDupMode
        });
    }
    let m = st.dbs[idx].as_mut().ok_or(E::NotFound)?;
    let v = model_merge(idx, m.get(k).map(Vec::as_slice), &[operand.to_vec()]).ok_or(E::Merge)?;
    m.insert(k.to_vec(), v);
    Ok(())
}

fn pairs_in(pairs: &[Pair], lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> VecDeque<Pair> {
    pairs
        .iter()
        .filter(|(k, _)| inside(k, lo, hi))
        .cloned()
        .collect()
}

/// The key and value a move uses: an existing pair for an odd variation,
/// else the operation's, shifted by half the variation.
fn target(
    pairs: &[Pair],
    key: &DKey,
    value: &DVal,
    var: u8,
    n: usize,
    idx: usize,
    max_key: usize,
) -> Pair {
    if var % 2 == 1 && !pairs.is_empty() {
        return pairs[(var as usize * 7919 + n * 31) % pairs.len()].clone();
    }
    (
        key.shifted(var / 2).bytes(max_key),
        value.shifted(var / 2).bytes(idx, max_key),
    )
}

/// Checks a `get_multiple` batch `got` against the values of `k` from
/// `from` on (`rest`): it must be a non-empty run of them from the start
/// (the whole `rest` when `all`); moves the model to the last value in it.
fn multi(k: &[u8], rest: &[Pair], all: bool, got: &Out, pos: &mut CPos) -> Out {
    let whole: Vec<u8> = rest.iter().flat_map(|p| p.1.iter().copied()).collect();
    let want = Out::Multi(Some((k.to_vec(), whole.clone())));
    let size = rest[0].1.len();
    let n = match got {
        Out::Multi(Some((gk, b))) if gk == k && whole.starts_with(b) => {
            if size == 0 {
                1
            } else if !b.is_empty() && b.len() % size == 0 {
                b.len() / size
            } else {
                return want;
            }
        }
        _ => return want,
    };
    if all && n != rest.len() {
        return want;
    }
    *pos = CPos::At(rest[n - 1].clone());
    got.clone()
}

/// The model of a read-cursor move; `None` where the result is not
/// compared (a relative move from an unspecified position).
#[allow(clippy::too_many_arguments)]
fn model_dmove(
    p: &Pairs<'_>,
    pos: &mut CPos,
    mv: DMove,
    (tk, tv): (&[u8], &[u8]),
    dup: bool,
    fixed: bool,
    got: &Out,
) -> Option<Out> {
    use CPos::*;
    let at = match pos.clone() {
        At(q) => Some(q),
        _ => None,
    };
    let multi_mode = if !dup || !fixed {
        Some(Out::Err(E::WrongDupMode))
    } else {
        None
    };
    Some(match mv {
        DMove::First => Out::Pair(p.first(pos)),
        DMove::Last => Out::Pair(p.last(pos)),
        DMove::Seek => Out::Pair(p.seek(tk, pos)),
        DMove::SeekExact => Out::Val(p.seek(tk, pos).filter(|e| e.0 == tk).map(|e| e.1)),
        DMove::SeekBoth | DMove::SeekBothRange if !dup => Out::Err(E::WrongDupMode),
        DMove::SeekBoth | DMove::SeekBothRange => {
            let r = p.both_range(tk, tv);
            let r = r.filter(|x| mv == DMove::SeekBothRange || x.1 == tv);
            *pos = r.clone().map_or(Unknown, At);
            Out::Pair(r)
        }
        DMove::GetMultiple | DMove::AllMultiple if multi_mode.is_some() => multi_mode.unwrap(),
        DMove::NextMultiple if !dup => Out::Err(E::WrongDupMode),
        _ if *pos == Unknown => return None,
        DMove::Next => match pos.clone() {
            At(q) => Out::Pair(p.after(&q, true, pos)),
            PastEnd => Out::Pair(None),
            _ => Out::Pair(p.first(pos)),
        },
        DMove::Prev => match pos.clone() {
            At(q) => Out::Pair(p.before(&q, pos)),
            BeforeStart => Out::Pair(None),
            _ => Out::Pair(p.last(pos)),
        },
        DMove::Current => Out::Pair(at),
        DMove::NextDup | DMove::PrevDup => {
            Out::Pair(at.and_then(|q| p.dup_step(&q, mv == DMove::NextDup, pos)))
        }
        DMove::FirstDup | DMove::LastDup => Out::Pair(at.map(|q| {
            let vs = p.vals(&q.0);
            let x = if mv == DMove::FirstDup {
                vs.first()
            } else {
                vs.last()
            };
            let x = x.unwrap().clone();
            *pos = At(x.clone());
            x
        })),
        DMove::NextNodup => match pos.clone() {
            At(q) => Out::Pair(p.next_key(&q.0, pos)),
            PastEnd => Out::Pair(None),
            _ => Out::Pair(p.first(pos)),
        },
        DMove::PrevNodup => match pos.clone() {
            At(q) => Out::Pair(p.prev_key(&q.0, pos)),
            BeforeStart => Out::Pair(None),
            _ => Out::Pair(p.last(pos)),
        },
        DMove::DupCount => Out::Count(at.map_or(0, |q| p.vals(&q.0).len() as u64)),
        DMove::GetMultiple | DMove::AllMultiple => match at {
            None => Out::Multi(None),
            Some(q) => {
                let vs = p.vals(&q.0);
                let i = vs.iter().position(|x| *x == q).unwrap();
                multi(&q.0, &vs[i..], mv == DMove::AllMultiple, got, pos)
            }
        },
        // Refused before the cursor moves, as LMDB does.
        DMove::NextMultiple if !dup || !fixed => Out::Err(E::WrongDupMode),
        DMove::NextMultiple => match at {
            None => Out::Multi(None),
            Some(q) => {
                let vs = p.vals(&q.0);
                let i = vs.iter().position(|x| *x == q).unwrap();
                if i + 1 == vs.len() {
                    Out::Multi(None)
                } else {
                    multi(&q.0, &vs[i + 1..], false, got, pos)
                }
            }
        },
    })
}

fn multi_out(r: sarsen::Result<Option<(&[u8], &[u8])>>, what: &str) -> Out {
    match r {
        Ok(e) => Out::Multi(e.map(|(k, v)| (k.to_vec(), v.to_vec()))),
        Err(e) => Out::Err(kind(&e, what)),
    }
}

fn real_dmove(c: &mut Cursor<'_>, mv: DMove, (tk, tv): (&[u8], &[u8]), what: &str) -> Out {
    match mv {
        DMove::Next => pair_out(c.next(), what),
        DMove::Prev => pair_out(c.prev(), what),
        DMove::Current => pair_out(c.current(), what),
        DMove::First => pair_out(c.first(), what),
        DMove::Last => pair_out(c.last(), what),
        DMove::Seek => pair_out(c.seek(tk), what),
        DMove::SeekExact => match c.seek_exact(tk) {
            Ok(v) => Out::Val(v.map(<[u8]>::to_vec)),
            Err(e) => Out::Err(kind(&e, what)),
        },
        DMove::NextDup => pair_out(c.next_dup(), what),
        DMove::PrevDup => pair_out(c.prev_dup(), what),
        DMove::FirstDup => pair_out(c.first_dup(), what),
        DMove::LastDup => pair_out(c.last_dup(), what),
        DMove::NextNodup => pair_out(c.next_nodup(), what),
        DMove::PrevNodup => pair_out(c.prev_nodup(), what),
        DMove::SeekBoth => pair_out(c.seek_both(tk, tv), what),
        DMove::SeekBothRange => pair_out(c.seek_both_range(tk, tv), what),
        DMove::DupCount => match c.dup_count() {
            Ok(n) => Out::Count(n),
            Err(e) => Out::Err(kind(&e, what)),
        },
        DMove::GetMultiple => multi_out(c.get_multiple(), what),
        DMove::NextMultiple => multi_out(c.next_multiple(), what),
        DMove::AllMultiple => {
            let (k, mut all) = match c.get_multiple() {
                Ok(Some((k, b))) => (k.to_vec(), b.to_vec()),
                r => return multi_out(r, what),
            };
            for _ in 0..10_000 {
                match c.next_multiple() {
                    Ok(Some((k2, b))) => {
                        assert_eq!(k2, k.as_slice(), "{what}: next_multiple changed key");
                        all.extend_from_slice(b);
                    }
                    Ok(None) => break,
                    Err(e) => return Out::Err(kind(&e, what)),
                }
            }
            Out::Multi(Some((k, all)))
        }
    }
}

/// The model of a write-cursor move that does not write. The write
/// cursor builds a read cursor for each move and places it only when it
/// stands on a pair: from anywhere else `next`, `prev`, `next_nodup` and
/// `prev_nodup` follow the read cursor's rules (and, after
/// `delete_current`, go from where the deleted pair was, as LMDB), and
/// every other move starts from an unplaced read cursor, keeping the old
/// place when that finds nothing.
fn model_wmove(
    p: &Pairs<'_>,
    pos: &mut CPos,
    mv: WMove,
    t: (&[u8], &[u8]),
    dup: bool,
) -> Option<Out> {
    use CPos::*;
    if mv == WMove::SeekExact {
        // The write cursor's `seek_exact` returns the pair.
        return Some(Out::Pair(p.seek(t.0, pos).filter(|e| e.0 == t.0)));
    }
    let dmove = match mv {
        WMove::Next => DMove::Next,
        WMove::Prev => DMove::Prev,
        WMove::Current => DMove::Current,
        WMove::First => DMove::First,
        WMove::Last => DMove::Last,
        WMove::Seek => DMove::Seek,
        WMove::NextDup => DMove::NextDup,
        WMove::PrevDup => DMove::PrevDup,
        WMove::NextNodup => DMove::NextNodup,
        WMove::PrevNodup => DMove::PrevNodup,
        WMove::SeekBoth => DMove::SeekBoth,
        WMove::SeekBothRange => DMove::SeekBothRange,
        WMove::DupCount => DMove::DupCount,
        _ => unreachable!("a write: {mv:?}"),
    };
    let none = Out::Count(0);
    match pos.clone() {
        At(_) | Unknown => model_dmove(p, pos, dmove, t, dup, false, &none),
        other => match mv {
            WMove::Next => Some(Out::Pair(match other {
                PastEnd => None,
                Deleted(q) => p.after(&q, false, pos),
                _ => p.first(pos),
            })),
            WMove::Prev => Some(Out::Pair(match other {
                BeforeStart => None,
                Deleted(q) => p.before(&q, pos),
                _ => p.last(pos),
            })),
            WMove::NextNodup => Some(Out::Pair(match other {
                PastEnd => None,
                Deleted(q) => p.next_key(&q.0, pos),
                _ => p.first(pos),
            })),
            WMove::PrevNodup => Some(Out::Pair(match other {
                BeforeStart => None,
                Deleted(q) => p.prev_key(&q.0, pos),
                _ => p.last(pos),
            })),
            _ => {
                let mut fresh = Unset;
                let r = model_dmove(p, &mut fresh, dmove, t, dup, false, &none);
                if fresh != Unset {
                    *pos = fresh;
                }
                r
            }
        },
    }
}

fn real_wmove(c: &mut RwCursor<'_, '_>, mv: WMove, (tk, tv): (&[u8], &[u8]), what: &str) -> Out {
    let r = match mv {
        WMove::Next => c.next(),
        WMove::Prev => c.prev(),
        WMove::Current => Ok(c.current()),
        WMove::First => c.first(),
        WMove::Last => c.last(),
        WMove::Seek => c.seek(tk),
        WMove::SeekExact => c.seek_exact(tk),
        WMove::NextDup => c.next_dup(),
        WMove::PrevDup => c.prev_dup(),
        WMove::NextNodup => c.next_nodup(),
        WMove::PrevNodup => c.prev_nodup(),
        WMove::SeekBoth => c.seek_both(tk, tv),
        WMove::SeekBothRange => c.seek_both_range(tk, tv),
        WMove::DupCount => {
            return match c.dup_count() {
                Ok(n) => Out::Count(n),
                Err(e) => Out::Err(kind(&e, what)),
            }
        }
        _ => unreachable!("a write: {mv:?}"),
    };
    pair_out(r, what)
}

impl Session<'_, '_> {
    pub(super) fn dget(&self, v: &dyn ViewDyn, st: &State, idx: usize, key: &DKey) {
        let Some(h) = self.handle(v, st, idx) else {
            return;
        };
        let k = key.bytes(self.max_key);
        let got = v
            .get_dyn(h, &k)
            .unwrap_or_else(|e| panic!("{}: {e:?}", self.what))
            .map(<[u8]>::to_vec);
        let want = Pairs(&st.pairs(idx)).vals(&k).first().map(|p| p.1.clone());
        assert_eq!(got, want, "{}", self.what);
    }

    pub(super) fn drange(
        &self,
        v: &dyn ViewDyn,
        st: &State,
        idx: usize,
        lo: &DBound,
        hi: &DBound,
        ends: &[bool],
    ) {
        let Some(h) = self.handle(v, st, idx) else {
            return;
        };
        let (lo, hi) = (lo.bound(self.max_key), hi.bound(self.max_key));
        let mut exp = pairs_in(&st.pairs(idx), &lo, &hi);
        let mut it = match v.range_dyn(h, as_ref(&lo), as_ref(&hi)) {
            Ok(it) => it,
            Err(Error::InvalidArgument(_)) if exp.is_empty() => return,
            Err(e) => panic!("{}: {e:?}", self.what),
        };
        let steps = ends.iter().copied().chain(std::iter::repeat(false));
        for (n, back) in steps.enumerate() {
            let got = if back { it.next_back() } else { it.next() };
            let got = got.map(|r| {
                let (k, v) = r.unwrap_or_else(|e| panic!("{}: {e:?}", self.what));
                (k.to_vec(), v.to_vec())
            });
            let want = if back {
                exp.pop_back()
            } else {
                exp.pop_front()
            };
            assert!(
                got == want,
                "{}: item #{n} (back: {back}) differs: got {got:?}, want {want:?}",
                self.what
            );
            if got.is_none() {
                break;
            }
        }
    }

    pub(super) fn dcursor(
        &self,
        v: &dyn ViewDyn,
        st: &State,
        idx: usize,
        key: &DKey,
        value: &DVal,
        moves: &[u8],
    ) {
        let Some(h) = self.handle(v, st, idx) else {
            return;
        };
        let pairs = st.pairs(idx);
        let p = Pairs(&pairs);
        let mut c = v
            .cursor_dyn(h)
            .unwrap_or_else(|e| panic!("{}: {e:?}", self.what));
        let mut pos = CPos::Unset;
        let mut trail = Vec::new();
        for (n, &b) in moves.iter().enumerate() {
            let (mv, var) = decode_dmove(b);
            let (tk, tv) = target(&pairs, key, value, var, n, idx, self.max_key);
            let t = (tk.as_slice(), tv.as_slice());
            let got = real_dmove(&mut c, mv, t, &self.what);
            let from = pos.clone();
            let want = model_dmove(&p, &mut pos, mv, t, idx >= DBS, is_fixed(idx), &got);
            trail.push(mv);
            if let Some(want) = want {
                assert!(
                    got == want,
                    "{}: db {idx} move #{n} {mv:?} ({tk:?}, {tv:?}) from {from:?}: got {got:?}, want {want:?}; moves {trail:?}",
                    self.what
                );
            }
        }
    }

    /// The handle for a write to `idx`, creating a DUPSORT database on
    /// first use; as [`Session::write_handle`].
    fn thandle(&mut self, idx: usize) -> Option<(Database, bool)> {
        if idx >= DBS && !self.pending.exists(idx) {
            self.create(idx);
        }
        self.write_handle(idx)
    }

    /// Compares a write's result with the model's (already applied).
    fn same<T: PartialEq + std::fmt::Debug>(&self, got: sarsen::Result<T>, want: Result<T, E>) {
        let got = res(got, &self.what);
        assert_eq!(got, want, "{}", self.what);
    }

    pub(super) fn dup_write(&mut self, op: &Op) {
        let (mk, lim) = (self.max_key, self.lim);
        match op {
            Op::DupPut { t, key, value } | Op::DupPutNoDup { t, key, value } => {
                let idx = t.idx();
                let (k, v) = (key.bytes(mk), value.bytes(idx, mk));
                let no_dup = matches!(op, Op::DupPutNoDup { .. });
                self.tput(idx, &k, &v, no_dup);
            }
            Op::DupAppend {
                t,
                key,
                value,
                after_last,
            } => {
                let idx = t.idx();
                let (mut k, mut v) = (key.bytes(mk), value.bytes(idx, mk));
                if *after_last & 3 != 0 {
                    if let Some((lk, lv)) = self.pending.pairs(idx).pop() {
                        (k, v) = (lk, lv);
                        if after_last & 2 != 0 {
                            k = key.shifted(1).bytes(mk);
                        }
                        if after_last & 1 != 0 {
                            if is_fixed(idx) {
                                // The same size, one greater (big-endian).
                                if let Some(i) = v.iter().rposition(|b| *b != 0xff) {
                                    v[i] += 1;
                                    v[i + 1..].fill(0);
                                }
                            } else {
                                v.push(0);
                            }
                        }
                    }
                }
                let Some((h, _)) = self.thandle(idx) else {
                    return;
                };
                let got = self.w.as_mut().unwrap().append_dup(h, &k, &v);
                let want = m_append_dup(&mut self.pending, lim, idx, &k, &v);
                self.same(got, want);
            }
            Op::DupDelete {
                t,
                key,
                value,
                pick,
            } => {
                let idx = t.idx();
                let (mut k, mut v) = (key.bytes(mk), value.bytes(idx, mk));
                let pairs = self.pending.pairs(idx);
                if pick % 2 == 1 && !pairs.is_empty() {
                    (k, v) = pairs[*pick as usize / 2 % pairs.len()].clone();
                }
                let Some((h, _)) = self.thandle(idx) else {
                    return;
                };
                let got = self.w.as_mut().unwrap().delete_dup(h, &k, &v);
                let want = m_delete_dup(&mut self.pending, idx, &k, &v);
                self.same(got, want);
            }
            Op::DupDeleteKey { t, key } => {
                let idx = t.idx();
                let k = key.bytes(mk);
                let Some((h, _)) = self.thandle(idx) else {
                    return;
                };
                let got = self.w.as_mut().unwrap().delete(h, &k);
                let want = m_delete_key(&mut self.pending, idx, &k);
                self.same(got, want);
            }
            Op::DeleteRange { t, lo, hi } => {
                let idx = t.idx();
                let (lo, hi) = (lo.bound(mk), hi.bound(mk));
                let Some((h, _)) = self.thandle(idx) else {
                    return;
                };
                let got = self
                    .w
                    .as_mut()
                    .unwrap()
                    .delete_range(h, (as_ref(&lo), as_ref(&hi)));
                let want = m_delete_range(&mut self.pending, idx, &lo, &hi);
                self.same(got, want);
            }
            Op::DupFill {
                t,
                key,
                start,
                count,
                step,
                pad,
            } => {
                let idx = t.idx();
                let k = key.bytes(mk);
                for i in 0..u32::from(*count) {
                    let n = u32::from(*start) + i * u32::from(*step).max(1);
                    let v = num_val(idx, n, *pad as usize % 48);
                    self.tput(idx, &k, &v, false);
                }
            }
            Op::WCursor {
                t,
                key,
                value,
                moves,
                count,
            } => {
                let moves = &moves[..*count as usize % (moves.len() + 1)];
                self.stats.moves += moves.len() as u64;
                self.wcursor(t.idx(), key, value, moves);
            }
            Op::PutReserve { t, key, len, seed } => {
                let idx = t.idx();
                let k = key.bytes(mk);
                let v = pattern(*seed, *len as usize % 3000);
                let Some((h, _)) = self.thandle(idx) else {
                    return;
                };
                let w = self.w.as_mut().unwrap();
                let got = w.put_reserve(h, &k, v.len(), |b| b.copy_from_slice(&v));
                let want = m_put(&mut self.pending, lim, idx, &k, &v).map(drop);
                self.same(got, want);
            }
            Op::PutCanary { x, y, z } => {
                let w = self.w.as_mut().unwrap();
                let v = w.txnid();
                w.put_canary(Canary {
                    x: *x,
                    y: *y,
                    z: *z,
                    v: 0,
                })
                .unwrap_or_else(|e| panic!("{}: put_canary: {e:?}", self.what));
                self.pending.canary = [*x, *y, *z, v];
                let c = w.canary().expect("canary");
                assert_eq!([c.x, c.y, c.z, c.v], self.pending.canary, "{}", self.what);
            }
            Op::DupDrop { t, clear } => self.drop_or_clear(t.idx(), !clear),
            Op::DupOther {
                t,
                key,
                value,
                which,
            } => {
                let idx = t.idx();
                let (k, v) = (key.bytes(mk), value.bytes(idx, mk));
                let Some((h, exists)) = self.thandle(idx) else {
                    return;
                };
                if which % 3 == 0 && idx < DBS {
                    return self.merge(idx, &k, &[v]);
                }
                let w = self.w.as_mut().unwrap();
                match which % 3 {
                    0 => {
                        let got = w.merge(h, &k, &v);
                        let want = m_merge(&mut self.pending, lim, idx, &k, &v);
                        self.same(got, want);
                    }
                    1 => {
                        let got = w.replace(h, &k, &v);
                        let want = if !exists {
                            Err(E::NotFound)
                        } else if idx >= DBS {
                            Err(E::WrongDupMode)
                        } else {
                            let old = self.pending.dbs[idx].as_ref().unwrap().get(&k).cloned();
                            m_put(&mut self.pending, lim, idx, &k, &v).map(|_| old)
                        };
                        self.same(got, want);
                    }
                    _ => {
                        let got = w.take(h, &k);
                        let want = if !exists {
                            Err(E::NotFound)
                        } else if idx >= DBS {
                            Err(E::WrongDupMode)
                        } else {
                            Ok(self.pending.dbs[idx].as_mut().unwrap().remove(&k))
                        };
                        self.same(got, want);
                    }
                }
            }
            Op::DupDeleteSome {
                t,
                key,
                count,
                skip,
                stride,
            } => {
                let idx = t.idx();
                let k = key.bytes(mk);
                let vals: Vec<Vec<u8>> = Pairs(&self.pending.pairs(idx))
                    .vals(&k)
                    .iter()
                    .skip(*skip as usize % 8)
                    .step_by(*stride as usize % 4 + 1)
                    .take(*count as usize)
                    .map(|p| p.1.clone())
                    .collect();
                let Some((h, _)) = self.thandle(idx) else {
                    return;
                };
                for v in vals {
                    let got = self.w.as_mut().unwrap().delete_dup(h, &k, &v);
                    let want = m_delete_dup(&mut self.pending, idx, &k, &v);
                    self.same(got, want);
                }
                // The key's first value, or none, as the model says.
                let got = self
                    .w
                    .as_ref()
                    .unwrap()
                    .get(h, &k)
                    .map(|v| v.map(<[u8]>::to_vec));
                let want = Pairs(&self.pending.pairs(idx))
                    .vals(&k)
                    .first()
                    .map(|p| p.1.clone());
                let want = if self.pending.exists(idx) {
                    Ok(want)
                } else {
                    Err(E::NotFound)
                };
                self.same(got, want);
            }
            _ => unreachable!("not a write: {op:?}"),
        }
    }

    /// `put` (or `put_no_dup_data`) into any database, against the model.
    fn tput(&mut self, idx: usize, k: &[u8], v: &[u8], no_dup: bool) {
        let lim = self.lim;
        let Some((h, _)) = self.thandle(idx) else {
            return;
        };
        let w = self.w.as_mut().unwrap();
        if no_dup {
            let got = w.put_no_dup_data(h, k, v);
            let want = if idx < DBS && self.pending.exists(idx) {
                Err(E::WrongDupMode)
            } else if idx < DBS {
                Err(E::NotFound)
            } else {
                m_put(&mut self.pending, lim, idx, k, v)
            };
            self.same(got, want);
        } else {
            let got = w.put(h, k, v);
            let want = m_put(&mut self.pending, lim, idx, k, v).map(drop);
            self.same(got, want);
        }
    }

    /// A write-cursor walk over database `idx` against the model.
    fn wcursor(&mut self, idx: usize, key: &DKey, value: &DVal, moves: &[u8]) {
        let (mk, lim) = (self.max_key, self.lim);
        let Some((h, exists)) = self.thandle(idx) else {
            return;
        };
        let what = self.what.clone();
        let w = self.w.as_mut().unwrap();
        let mut c = match w.cursor_mut(h) {
            Ok(c) if exists => c,
            r => {
                return assert!(
                    !exists && matches!(r, Err(Error::DbNotFound { .. })),
                    "{what}: cursor_mut: {:?}",
                    r.err()
                )
            }
        };
        let st = &mut self.pending;
        let dup = idx >= DBS;
        let mut pos = CPos::Unset;
        let mut trail = Vec::new();
        for (n, &b) in moves.iter().enumerate() {
            let (mv, var) = decode_wmove(b);
            let pairs = st.pairs(idx);
            let (tk, tv) = target(&pairs, key, value, var, n, idx, mk);
            let t = (tk.as_slice(), tv.as_slice());
            let from = pos.clone();
            trail.push(mv);
            let ctx = || {
                format!("{what}: db {idx} write-cursor move #{n} {mv:?} ({tk:?}, {tv:?}) from {from:?}; moves {trail:?}")
            };
            let on = match &pos {
                CPos::At(q) => Some(q.clone()),
                _ => None,
            };
            match mv {
                WMove::Put => {
                    let got = res(c.put(&tk, &tv), &what);
                    let want = m_put(st, lim, idx, &tk, &tv).map(drop);
                    assert_eq!(got, want, "{}", ctx());
                    if got.is_ok() {
                        pos = CPos::At((tk.clone(), tv.clone()));
                    }
                }
                WMove::PutCurrent
                | WMove::DeleteCurrent
                | WMove::DeleteCurrentKey
                | WMove::MergeCurrent
                    if pos == CPos::Unknown =>
                {
                    // Not on a pair (else the place would be known), but
                    // the error may depend on where: not modelled.
                }
                WMove::PutCurrent => {
                    let got = res(c.put_current(&tv), &what);
                    let want = match &on {
                        None => Err(E::InvalidArgument),
                        Some((k, old)) => {
                            let mut after = st.clone();
                            let r = m_put(&mut after, lim, idx, k, &tv);
                            if r.is_ok() && dup && *old != tv {
                                m_delete_dup(&mut after, idx, k, old).unwrap();
                            }
                            if r.is_ok() {
                                *st = after;
                                pos = CPos::At((k.clone(), tv.clone()));
                            }
                            r.map(drop)
                        }
                    };
                    assert_eq!(got, want, "{}", ctx());
                }
                WMove::DeleteCurrent | WMove::DeleteCurrentKey => {
                    let got = res(
                        if mv == WMove::DeleteCurrent {
                            c.delete_current()
                        } else {
                            c.delete_current_key()
                        },
                        &what,
                    );
                    let want = match &on {
                        None => Err(E::InvalidArgument),
                        Some((k, v)) => {
                            if mv == WMove::DeleteCurrent && dup {
                                assert!(m_delete_dup(st, idx, k, v).unwrap());
                            } else {
                                assert!(m_delete_key(st, idx, k).unwrap());
                            }
                            pos = CPos::Deleted((k.clone(), v.clone()));
                            Ok(())
                        }
                    };
                    assert_eq!(got, want, "{}", ctx());
                }
                WMove::MergeCurrent => {
                    let got = res(c.merge_current(&tv), &what);
                    let want = match &on {
                        None => Err(E::InvalidArgument),
                        Some((k, _)) => {
                            let r = m_merge(st, lim, idx, k, &tv);
                            if r.is_ok() {
                                let v = st.dbs[idx].as_ref().unwrap()[k].clone();
                                pos = CPos::At((k.clone(), v));
                            }
                            r
                        }
                    };
                    assert_eq!(got, want, "{}", ctx());
                }
                _ => {
                    let got = real_wmove(&mut c, mv, t, &what);
                    let p = Pairs(&pairs);
                    let want = model_wmove(&p, &mut pos, mv, t, dup);
                    if let Some(want) = want {
                        assert_eq!(got, want, "{}", ctx());
                    }
                    if pos == CPos::Unknown {
                        // Where the write cursor stands is known if it is on a pair.
                        if let Some((k, v)) = c.current() {
                            pos = CPos::At((k.to_vec(), v.to_vec()));
                        }
                    }
                }
            }
            if let Some((k, v)) = c.current() {
                assert!(
                    has_pair(st, idx, k, v),
                    "{}: the cursor stands on a pair the model lacks",
                    ctx()
                );
            }
        }
    }
}
