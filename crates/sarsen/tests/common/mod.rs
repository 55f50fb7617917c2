//! Shared helpers for the Sarsen integration tests.
//!
//! Environment variables understood by the suites:
//! * `SARSEN_SEED=<u64>`        replay one case with this seed (printed as `SEED=...` on failure)
//! * `SARSEN_TEST_CASES=<n>`    number of random cases / variants (default: small, CI friendly)
//! * `SARSEN_TEST_SCALE=<n>`    multiplier for loop lengths in the heavier tests (default 1)
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::ops::Bound;
use std::path::Path;

use sarsen::{Cursor, Database, Durability, Env, EnvOptions, Iter, Result, RoTxn, RwTxn, Stat};

pub type Map = BTreeMap<Vec<u8>, Vec<u8>>;

/// Seed for a randomized test. `SARSEN_SEED` replays; otherwise a fresh random seed.
/// The seed is always printed so that the harness shows it when the test fails.
pub fn base_seed(test: &str) -> (u64, bool) {
    match std::env::var("SARSEN_SEED") {
        Ok(s) => {
            let s = s.trim();
            let v = if let Some(h) = s.strip_prefix("0x") {
                u64::from_str_radix(h, 16).expect("SARSEN_SEED: bad hex")
            } else {
                s.parse().expect("SARSEN_SEED: not a u64")
            };
            eprintln!("[{test}] replaying SEED={v}");
            (v, true)
        }
        Err(_) => {
            let v: u64 = rand::random();
            eprintln!("[{test}] base SEED={v}");
            (v, false)
        }
    }
}

/// Number of random cases: `SARSEN_TEST_CASES` (or `PROPTEST_CASES`) overrides `default`.
pub fn cases(default: usize) -> usize {
    for var in ["SARSEN_TEST_CASES", "PROPTEST_CASES"] {
        if let Ok(s) = std::env::var(var) {
            if let Ok(n) = s.trim().parse::<usize>() {
                return n.max(1);
            }
        }
    }
    default
}

/// The seeds of a randomized test's cases: `SARSEN_SEED` alone when it is
/// set (a replay), else [`cases`]`(default)` seeds derived from a fresh
/// base seed, which [`base_seed`] prints.
pub fn case_seeds(test: &str, default: usize) -> Vec<u64> {
    let (base, replay) = base_seed(test);
    if replay {
        return vec![base];
    }
    (0..cases(default)).map(|c| mix(base ^ c as u64)).collect()
}

pub fn scale() -> usize {
    std::env::var("SARSEN_TEST_SCALE")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .unwrap_or(1)
        .max(1)
}

pub fn env_usize(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(default)
}

/// Strict mode: the integrity check of the whole database must find nothing.
pub fn assert_check(env: &Env, when: &str) {
    let r = env
        .check()
        .unwrap_or_else(|e| panic!("{when}: check failed to run: {e}"));
    assert!(
        r.is_ok(),
        "{when}: check found {} problems: {:#?}",
        r.problems_total,
        &r.problems[..r.problems.len().min(20)]
    );
}

/// splitmix64: derive independent per-case seeds from a base seed.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Prints `msg` when dropped during a panic (i.e. when the test fails).
pub struct OnFail(pub String);
impl Drop for OnFail {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("{}", self.0);
        }
    }
}

/// Short printable form of a byte string (length + head) for assertion messages.
pub fn show(b: &[u8]) -> String {
    let mut s = format!("[{}B]", b.len());
    let head = &b[..b.len().min(24)];
    if head.iter().all(|c| c.is_ascii_graphic() || *c == b' ') {
        let _ = write!(s, "\"{}\"", String::from_utf8_lossy(head));
    } else {
        for c in head {
            let _ = write!(s, "{c:02x}");
        }
    }
    if b.len() > 24 {
        s.push('…');
    }
    s
}

pub fn show_opt(b: Option<&[u8]>) -> String {
    match b {
        None => "None".into(),
        Some(b) => show(b),
    }
}

pub fn show_bound(b: &Bound<Vec<u8>>) -> String {
    match b {
        Bound::Included(k) => format!("Included({})", show(k)),
        Bound::Excluded(k) => format!("Excluded({})", show(k)),
        Bound::Unbounded => "Unbounded".into(),
    }
}

pub fn opts(page_size: u32, durability: Durability) -> EnvOptions {
    EnvOptions::new()
        .page_size(page_size)
        .durability(durability)
}

pub fn open(path: &Path, o: EnvOptions) -> Env {
    unsafe { o.open(path) }.unwrap_or_else(|e| panic!("opening {}: {e:?}", path.display()))
}

/// The read operations shared by `RoTxn` and `RwTxn`, so that checks can be written once.
pub trait View {
    fn v_get(&self, db: Database, key: &[u8]) -> Result<Option<&[u8]>>;
    fn v_iter(&self, db: Database) -> Result<Iter<'_>>;
    fn v_range(&self, db: Database, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Result<Iter<'_>>;
    fn v_cursor(&self, db: Database) -> Result<Cursor<'_>>;
    fn v_stat(&self, db: Database) -> Result<Stat>;
    fn v_open_db(&mut self, name: Option<&str>) -> Result<Option<Database>>;
    fn v_list_dbs(&self) -> Result<Vec<String>>;
    fn v_txnid(&self) -> u64;
}

macro_rules! impl_view {
    ($t:ident) => {
        impl<'e> View for $t<'e> {
            fn v_get(&self, db: Database, key: &[u8]) -> Result<Option<&[u8]>> {
                self.get(db, key)
            }
            fn v_iter(&self, db: Database) -> Result<Iter<'_>> {
                self.iter(db)
            }
            fn v_range(
                &self,
                db: Database,
                lo: Bound<&[u8]>,
                hi: Bound<&[u8]>,
            ) -> Result<Iter<'_>> {
                self.range(db, (lo, hi))
            }
            fn v_cursor(&self, db: Database) -> Result<Cursor<'_>> {
                self.cursor(db)
            }
            fn v_stat(&self, db: Database) -> Result<Stat> {
                self.stat(db)
            }
            fn v_open_db(&mut self, name: Option<&str>) -> Result<Option<Database>> {
                self.open_db(name)
            }
            fn v_list_dbs(&self) -> Result<Vec<String>> {
                self.list_dbs()
            }
            fn v_txnid(&self) -> u64 {
                self.txnid()
            }
        }
    };
}
impl_view!(RoTxn);
impl_view!(RwTxn);

/// Collects an iterator into owned pairs, panicking on error.
pub fn collect<'a, I>(it: I, what: &str) -> Vec<(Vec<u8>, Vec<u8>)>
where
    I: Iterator<Item = Result<(&'a [u8], &'a [u8])>>,
{
    it.map(|r| {
        let (k, v) = r.unwrap_or_else(|e| panic!("{what}: iteration error {e:?}"));
        (k.to_vec(), v.to_vec())
    })
    .collect()
}

/// Compares the result of a scan with the expected entries, with a readable message.
pub fn assert_entries<'a, I>(got: &[(Vec<u8>, Vec<u8>)], expected: I, what: &str)
where
    I: IntoIterator<Item = (&'a Vec<u8>, &'a Vec<u8>)>,
{
    let mut n = 0;
    let mut exp = expected.into_iter();
    loop {
        match (got.get(n), exp.next()) {
            (None, None) => return,
            (Some((k, v)), Some((ek, ev))) => {
                if k != ek {
                    panic!(
                        "{what}: entry #{n}: got key {} expected key {}",
                        show(k),
                        show(ek)
                    );
                }
                if v != ev {
                    panic!(
                        "{what}: entry #{n} key {}: got value {} expected {}",
                        show(k),
                        show(v),
                        show(ev)
                    );
                }
            }
            (Some((k, _)), None) => {
                panic!(
                    "{what}: extra entry #{n} key {} (expected only {n} entries)",
                    show(k)
                )
            }
            (None, Some((ek, _))) => panic!(
                "{what}: missing entry #{n} key {} (got only {} entries)",
                show(ek),
                got.len()
            ),
        }
        n += 1;
    }
}

/// Full forward scan (and optionally backward scan and stat) of `db` compared with `model`.
pub fn check_db<V: View>(txn: &V, db: Database, model: &Map, what: &str, deep: bool) {
    let got = collect(
        txn.v_iter(db)
            .unwrap_or_else(|e| panic!("{what}: iter: {e:?}")),
        what,
    );
    assert_entries(&got, model.iter(), &format!("{what}: forward iter"));
    if deep {
        let mut rev = collect(
            txn.v_iter(db)
                .unwrap_or_else(|e| panic!("{what}: iter: {e:?}"))
                .rev(),
            what,
        );
        rev.reverse();
        assert_entries(
            &rev,
            model.iter(),
            &format!("{what}: reverse iter (reversed)"),
        );
        let st = txn
            .v_stat(db)
            .unwrap_or_else(|e| panic!("{what}: stat: {e:?}"));
        assert_eq!(
            st.entries,
            model.len() as u64,
            "{what}: stat.entries vs model len ({st:?})"
        );
    }
}

/// Deterministic pseudo-random bytes (cheap; used for large values).
pub fn fill_pattern(buf: &mut [u8], seed: u64) {
    let mut s = mix(seed);
    for chunk in buf.chunks_mut(8) {
        s = mix(s);
        let b = s.to_le_bytes();
        chunk.copy_from_slice(&b[..chunk.len()]);
    }
}

/// A merge operator (`"picky"`) that appends its operands to the value and
/// refuses any operand that starts with `!`, so that a merge can fail.
pub struct Picky;

impl sarsen::MergeOperator for Picky {
    fn name(&self) -> &str {
        "picky"
    }
    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
        out: &mut Vec<u8>,
    ) -> std::result::Result<(), sarsen::MergeError> {
        out.extend_from_slice(existing.unwrap_or_default());
        for o in operands {
            if o.first() == Some(&b'!') {
                return Err(sarsen::MergeError::new("picky: an operand starts with !"));
            }
            out.extend_from_slice(o);
        }
        Ok(())
    }
}
