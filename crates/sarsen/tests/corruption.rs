//! Damaged files: a database of a few thousand entries (several levels deep, with overflow
//! values and named databases) is closed, damaged, reopened and read and written. Every attempt
//! must either work or return an `Error`: never panic, never hang, never crash the process.
//!
//! Kinds of damage: random bytes in data pages, truncated tail, whole pages zeroed, garbage in one
//! meta page (strict: the database must open from another meta and show the last or the
//! previous commit, and stay writable), garbage in two meta pages.
//!
//! Each variant runs in a child process (this test binary, running the ignored test
//! `corruption_child`), so that a crash (SIGSEGV/SIGBUS) or a hang is attributed to the variant
//! that caused it and the remaining variants still run.
//!
//! Replay: `SARSEN_SEED=<base seed> SARSEN_VARIANT=<i> cargo test -p sarsen --test corruption <test>`.
//! More variants: `SARSEN_TEST_CASES=500`.

mod common;

use std::collections::{BTreeMap, VecDeque};
use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use sarsen::{Database, Durability, Env, EnvOptions, Error, RoTxn};

/// Time one variant may take in the child before it counts as a hang.
const VARIANT_TIMEOUT: Duration = Duration::from_secs(60);
/// Time the parent waits for any output from the child before killing it.
const CHILD_SILENCE: Duration = Duration::from_secs(150);

#[derive(Clone, Default, Debug, PartialEq)]
struct State {
    main: Map,
    named: BTreeMap<String, Map>,
}

impl State {
    fn len(&self) -> usize {
        self.main.len() + self.named.values().map(|m| m.len()).sum::<usize>()
    }
}

fn diff(a: &State, b: &State) -> String {
    if a.named.keys().ne(b.named.keys()) {
        return format!(
            "db names {:?} vs {:?}",
            a.named.keys().collect::<Vec<_>>(),
            b.named.keys().collect::<Vec<_>>()
        );
    }
    let mut pairs = vec![("main".to_string(), &a.main, &b.main)];
    for (n, m) in &a.named {
        pairs.push((n.clone(), m, &b.named[n]));
    }
    for (n, x, y) in pairs {
        if x != y {
            let first = x.iter().zip(y.iter()).position(|(p, q)| p != q);
            let what = match first.map(|i| (x.iter().nth(i).unwrap(), y.iter().nth(i).unwrap())) {
                Some(((k1, v1), (k2, v2))) if k1 == k2 => {
                    format!("value of {}: {} vs {}", show(k1), show(v1), show(v2))
                }
                Some(((k1, _), (k2, _))) => format!("key {} vs {}", show(k1), show(k2)),
                None => "one is a prefix of the other".into(),
            };
            return format!(
                "db {n}: {} vs {} entries, first difference at #{first:?}: {what}",
                x.len(),
                y.len()
            );
        }
    }
    "equal".into()
}

// ------------------------------------------------------------------------------------------------
// template database

struct Template {
    dir: tempfile::TempDir,
    page_size: u32,
    prev: State,
    last: State,
    /// Every committed state, oldest first.
    history: Vec<State>,
    used_pages: u64,
}

fn build_template(page_size: u32, seed: u64) -> Template {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(seed);
    let env = open(dir.path(), opts(page_size, Durability::Durable));
    let main = env.main_db();
    let mut st = State::default();
    let mut history: Vec<State> = Vec::new();
    let mut w = env.write_txn().unwrap();
    let alpha = w.create_db(Some("alpha")).unwrap();
    let beta = w.create_db(Some("beta")).unwrap();
    st.named.insert("alpha".into(), Map::new());
    st.named.insert("beta".into(), Map::new());
    w.commit().unwrap();
    history.push(st.clone());
    let put = |w: &mut sarsen::RwTxn,
               st: &mut State,
               db: Database,
               name: &str,
               k: Vec<u8>,
               v: Vec<u8>| {
        w.put(db, &k, &v).unwrap();
        if name == "main" {
            &mut st.main
        } else {
            st.named.get_mut(name).unwrap()
        }
        .insert(k, v);
    };
    for _ in 0..4 {
        let mut w = env.write_txn().unwrap();
        for _ in 0..750 {
            let k = format!("m/{:06}", rng.random_range(0..100_000)).into_bytes();
            let len = if rng.random_range(0..150) == 0 {
                rng.random_range(5000..20_000)
            } else {
                rng.random_range(0..200)
            };
            let mut v = vec![0u8; len];
            fill_pattern(&mut v, rng.random());
            put(&mut w, &mut st, main, "main", k, v);
        }
        for _ in 0..375 {
            let k = format!(
                "alpha-key-with-a-longer-shared-prefix/{:08}",
                rng.random_range(0..1_000_000)
            )
            .into_bytes();
            let v = vec![rng.random(); rng.random_range(0..60)];
            put(&mut w, &mut st, alpha, "alpha", k, v);
        }
        for _ in 0..100 {
            let k = rng.random::<u32>().to_be_bytes().to_vec();
            let v = vec![rng.random(); rng.random_range(300..600)];
            put(&mut w, &mut st, beta, "beta", k, v);
        }
        w.commit().unwrap();
        history.push(st.clone());
    }
    // deletes and overwrites
    let mut w = env.write_txn().unwrap();
    let keys: Vec<Vec<u8>> = st.main.keys().cloned().collect();
    for k in keys {
        if rng.random_bool(0.2) {
            assert!(w.delete(main, &k).unwrap());
            st.main.remove(&k);
        }
    }
    let keys: Vec<Vec<u8>> = st.named["alpha"].keys().cloned().collect();
    for k in keys.iter().filter(|_| rng.random_bool(0.1)) {
        put(
            &mut w,
            &mut st,
            alpha,
            "alpha",
            k.clone(),
            b"overwritten".to_vec(),
        );
    }
    w.commit().unwrap();
    history.push(st.clone());
    let mut w = env.write_txn().unwrap();
    let keys: Vec<Vec<u8>> = st.main.keys().cloned().collect();
    for _ in 0..100 {
        let k = keys.choose(&mut rng).unwrap().clone();
        put(
            &mut w,
            &mut st,
            main,
            "main",
            k,
            vec![9u8; rng.random_range(0..300)],
        );
    }
    w.commit().unwrap();
    history.push(st.clone());
    let prev = st.clone();
    // the final commit is small
    let mut w = env.write_txn().unwrap();
    put(
        &mut w,
        &mut st,
        main,
        "main",
        b"last-commit".to_vec(),
        b"yes".to_vec(),
    );
    let keys: Vec<Vec<u8>> = st.named["alpha"].keys().take(5).cloned().collect();
    for k in keys {
        assert!(w.delete(alpha, &k).unwrap());
        st.named.get_mut("alpha").unwrap().remove(&k);
    }
    for i in 0..5u8 {
        put(&mut w, &mut st, beta, "beta", vec![0xff, i], vec![i; 10]);
    }
    w.commit().unwrap();
    history.push(st.clone());
    let last = st;
    let info = env.info().unwrap();
    let r = env.read_txn().unwrap();
    let depth = r.stat(main).unwrap().depth;
    assert!(depth >= 2, "template main tree depth {depth}: too shallow");
    match read_state(&r, usize::MAX) {
        Ok(s) => assert!(
            s == last,
            "template does not match its model: {}",
            diff(&s, &last)
        ),
        Err(e) => panic!("template unreadable: {e}"),
    }
    drop(r);
    drop(env);
    Template {
        dir,
        page_size,
        prev,
        last,
        history,
        used_pages: info.next_pgno,
    }
}

// ------------------------------------------------------------------------------------------------
// damage

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    DataBytes,
    Truncate,
    ZeroPages,
    OneMeta,
    TwoMetas,
}

impl Kind {
    fn parse(s: &str) -> Kind {
        match s {
            "data_bytes" => Kind::DataBytes,
            "truncate" => Kind::Truncate,
            "zero_pages" => Kind::ZeroPages,
            "one_meta" => Kind::OneMeta,
            "two_metas" => Kind::TwoMetas,
            _ => panic!("unknown kind {s}"),
        }
    }
    fn name(self) -> &'static str {
        match self {
            Kind::DataBytes => "data_bytes",
            Kind::Truncate => "truncate",
            Kind::ZeroPages => "zero_pages",
            Kind::OneMeta => "one_meta",
            Kind::TwoMetas => "two_metas",
        }
    }
}

fn write_at(f: &mut std::fs::File, off: u64, bytes: &[u8]) {
    f.seek(SeekFrom::Start(off)).unwrap();
    f.write_all(bytes).unwrap();
}

fn garbage_meta(f: &mut std::fs::File, rng: &mut StdRng, m: u64, ps: u64) -> String {
    match rng.random_range(0..4) {
        0 => {
            let mut b = vec![0u8; ps as usize];
            rng.fill(&mut b[..]);
            write_at(f, m * ps, &b);
            format!("meta {m}: whole page random")
        }
        1 => {
            write_at(f, m * ps, &vec![0u8; ps as usize]);
            format!("meta {m}: whole page zeroed")
        }
        2 => {
            let off = rng.random_range(0..320u64);
            let len = rng.random_range(1..=64u64).min(ps - off);
            let mut b = vec![0u8; len as usize];
            rng.fill(&mut b[..]);
            write_at(f, m * ps + off, &b);
            format!("meta {m}: {len} random bytes at +{off}")
        }
        _ => {
            let off = rng.random_range(0..320u64);
            let mut cur = [0u8; 1];
            f.seek(SeekFrom::Start(m * ps + off)).unwrap();
            f.read_exact(&mut cur).unwrap();
            let bit = 1u8 << rng.random_range(0..8);
            write_at(f, m * ps + off, &[cur[0] ^ bit]);
            format!("meta {m}: bit flip at +{off}")
        }
    }
}

/// Applies the damage to `path`; returns a description.
fn damage(kind: Kind, path: &Path, t: &Template, rng: &mut StdRng, i: usize) -> String {
    let ps = t.page_size as u64;
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let len = f.metadata().unwrap().len();
    let used = t.used_pages.min(len / ps).max(4);
    let data_page = |rng: &mut StdRng| rng.random_range(3..used);
    match kind {
        Kind::DataBytes => {
            let mut d = Vec::new();
            for _ in 0..rng.random_range(1..=4) {
                let p = data_page(rng);
                for _ in 0..rng.random_range(1..=8) {
                    let off = if rng.random_bool(0.5) {
                        rng.random_range(0..64)
                    } else {
                        rng.random_range(0..ps)
                    };
                    let n = rng.random_range(1..=16u64).min(ps - off);
                    let mut cur = vec![0u8; n as usize];
                    f.seek(SeekFrom::Start(p * ps + off)).unwrap();
                    f.read_exact(&mut cur).unwrap();
                    for b in cur.iter_mut() {
                        *b ^= rng.random_range(1..=255u8);
                    }
                    write_at(&mut f, p * ps + off, &cur);
                    d.push(format!("page {p}+{off}:{n}"));
                }
            }
            format!("random bytes at {}", d.join(" "))
        }
        Kind::Truncate => {
            let new_len = match rng.random_range(0..20) {
                0..=9 => rng.random_range(3..used) * ps,
                10..=13 => rng.random_range(3 * ps..len),
                // only the unused tail beyond the last allocated page
                14..=16 if used * ps < len => rng.random_range(used * ps..len),
                _ => rng.random_range(0..3 * ps),
            };
            f.set_len(new_len).unwrap();
            format!(
                "truncated {len} -> {new_len} bytes ({} pages)",
                new_len as f64 / ps as f64
            )
        }
        Kind::ZeroPages => {
            let mut d = Vec::new();
            for _ in 0..rng.random_range(1..=4) {
                let p = data_page(rng);
                write_at(&mut f, p * ps, &vec![0u8; ps as usize]);
                d.push(p.to_string());
            }
            format!("zeroed pages {}", d.join(","))
        }
        Kind::OneMeta => {
            let m = (i % 3) as u64;
            garbage_meta(&mut f, rng, m, ps)
        }
        Kind::TwoMetas => {
            let skip = rng.random_range(0..3u64);
            let mut d = Vec::new();
            for m in (0..3).filter(|m| *m != skip) {
                d.push(garbage_meta(&mut f, rng, m, ps));
            }
            d.join("; ")
        }
    }
}

// ------------------------------------------------------------------------------------------------
// attempts

fn err_name(e: &Error) -> String {
    let s = format!("{e:?}");
    s.split([' ', '{', '(']).next().unwrap_or("").to_string()
}

fn scan(r: &RoTxn, db: Database, limit: usize, rev: bool) -> Result<Map, String> {
    let it = r.iter(db).map_err(|e| format!("iter: {}", err_name(&e)))?;
    let mut m = Map::new();
    let mut n = 0usize;
    let mut prev: Option<Vec<u8>> = None;
    let mut push = |e: sarsen::Result<(&[u8], &[u8])>| -> Result<(), String> {
        let (k, v) = e.map_err(|e| format!("iter next: {}", err_name(&e)))?;
        n += 1;
        if n > limit {
            return Err(format!(
                "RUNAWAY: iteration yielded more than {limit} entries"
            ));
        }
        if let Some(p) = &prev {
            if (!rev && k <= p.as_slice()) || (rev && k >= p.as_slice()) {
                return Err(format!(
                    "UNORDERED: iteration (rev={rev}) returned {} after {} without an error",
                    show(k),
                    show(p)
                ));
            }
        }
        prev = Some(k.to_vec());
        m.insert(k.to_vec(), v.to_vec());
        Ok(())
    };
    if rev {
        for e in it.rev() {
            push(e)?;
        }
    } else {
        for e in it {
            push(e)?;
        }
    }
    Ok(m)
}

/// Reads every database; Err(first error).
fn read_state(r: &RoTxn, limit: usize) -> Result<State, String> {
    let mut st = State::default();
    let names = r
        .list_dbs()
        .map_err(|e| format!("list_dbs: {}", err_name(&e)))?;
    st.main = scan(
        r,
        r.open_db(None)
            .map_err(|e| format!("open_db(None): {}", err_name(&e)))?
            .ok_or("no main db")?,
        limit,
        false,
    )?;
    for n in names {
        let h = r
            .open_db(Some(&n))
            .map_err(|e| format!("open_db({n}): {}", err_name(&e)))?
            .ok_or_else(|| format!("listed db {n} cannot be opened"))?;
        st.named.insert(n, scan(r, h, limit, false)?);
    }
    Ok(st)
}

/// Exercises every read path; errors are fine, only panics/hangs/runaways are not.
fn read_everything(
    env: &Env,
    t: &Template,
    rng: &mut StdRng,
    limit: usize,
    notes: &mut Vec<String>,
) -> Result<(), String> {
    let _ = env.info();
    let r = match env.read_txn() {
        Ok(r) => r,
        Err(e) => {
            notes.push(format!("read_txn:{}", err_name(&e)));
            return Ok(());
        }
    };
    let _ = r.txnid();
    let mut dbs = vec![("main".to_string(), env.main_db())];
    match r.list_dbs() {
        Ok(names) => {
            for n in names {
                match r.open_db(Some(&n)) {
                    Ok(Some(h)) => dbs.push((n, h)),
                    Ok(None) => notes.push(format!("listed db {n:?} missing")),
                    Err(e) => notes.push(format!("open_db:{}", err_name(&e))),
                }
            }
        }
        Err(e) => notes.push(format!("list_dbs:{}", err_name(&e))),
    }
    for name in ["alpha", "beta", "gamma"] {
        let _ = r.open_db(Some(name));
    }
    for (name, db) in &dbs {
        let model = if name == "main" {
            Some(&t.last.main)
        } else {
            t.last.named.get(name)
        };
        for rev in [false, true] {
            match scan(&r, *db, limit, rev) {
                Ok(_) => {}
                Err(e) if e.starts_with("RUNAWAY") => return Err(format!("db {name}: {e}")),
                Err(e) => notes.push(format!("{name} scan:{e}")),
            }
        }
        if let Err(e) = r.stat(*db) {
            notes.push(format!("stat:{}", err_name(&e)));
        }
        let keys: Vec<&Vec<u8>> = model.map(|m| m.keys().collect()).unwrap_or_default();
        for _ in 0..200 {
            let k: Vec<u8> = match keys.choose(rng) {
                Some(k) if rng.random_bool(0.8) => (*k).clone(),
                _ => rng.random::<[u8; 6]>().to_vec(),
            };
            if let Err(e) = r.get(*db, &k) {
                notes.push(format!("get:{}", err_name(&e)));
                break;
            }
        }
        if let Ok(mut c) = r.cursor(*db) {
            let _ = c.first();
            for _ in 0..50 {
                if !matches!(c.next(), Ok(Some(_))) {
                    break;
                }
            }
            let _ = c.last();
            for _ in 0..50 {
                if !matches!(c.prev(), Ok(Some(_))) {
                    break;
                }
            }
            for _ in 0..30 {
                if let Some(k) = keys.choose(rng) {
                    let _ = c.seek(k);
                    let _ = c.current();
                    let _ = c.next();
                    let _ = c.seek_exact(k);
                }
            }
        }
        for _ in 0..5 {
            let (a, b) = (rng.random::<[u8; 3]>(), rng.random::<[u8; 3]>());
            if let Ok(it) = r.range(*db, &a[..]..=&b[..]) {
                let mut n = 0;
                for e in it {
                    n += 1;
                    if e.is_err() || n > limit {
                        break;
                    }
                }
            }
            if let Ok(it) = r.range(*db, &a[..]..) {
                for e in it.rev().take(100) {
                    if e.is_err() {
                        break;
                    }
                }
            }
        }
    }
    Ok(())
}

/// Tries a write transaction; returns a note.
fn try_write(env: &Env, t: &Template, rng: &mut StdRng) -> String {
    let mut w = match env.write_txn() {
        Ok(w) => w,
        Err(e) => return format!("write_txn:{}", err_name(&e)),
    };
    let main = env.main_db();
    for i in 0..50u32 {
        let v = vec![i as u8; rng.random_range(0..3000)];
        if let Err(e) = w.put(main, format!("post-{i}").as_bytes(), &v) {
            return format!("put:{}", err_name(&e));
        }
    }
    let keys: Vec<&Vec<u8>> = t.last.main.keys().collect();
    for _ in 0..20 {
        if let Err(e) = w.delete(main, keys.choose(rng).unwrap()) {
            return format!("delete:{}", err_name(&e));
        }
    }
    match w.open_db(Some("alpha")) {
        Ok(Some(a)) => {
            if let Err(e) = w.put(a, b"alpha-post", b"x") {
                return format!("put alpha:{}", err_name(&e));
            }
        }
        Ok(None) => {}
        Err(e) => return format!("open_db alpha:{}", err_name(&e)),
    }
    match w.create_db(Some("gamma")) {
        Ok(g) => {
            if let Err(e) = w.put(g, b"g", b"g") {
                return format!("put gamma:{}", err_name(&e));
            }
        }
        Err(e) => return format!("create_db:{}", err_name(&e)),
    }
    match w.commit() {
        Ok(()) => "commit:ok".into(),
        Err(e) => format!("commit:{}", err_name(&e)),
    }
}

fn env_opts() -> EnvOptions {
    // bound the file size in case the damage makes the engine believe the file is huge
    EnvOptions::new().max_size(256 << 20)
}

/// A lenient attempt: anything but panics, hangs, crashes and runaway iteration is fine.
/// Returns a summary for the statistics.
fn attempt_lenient(dir: &Path, t: &Template, rng: &mut StdRng) -> Result<String, String> {
    let limit = t.last.len() * 2 + 1000;
    let env = match unsafe { env_opts().open(dir) } {
        Ok(env) => env,
        Err(e) => return Ok(format!("open:{} | {e:?}", err_name(&e))),
    };
    let mut notes = Vec::new();
    read_everything(&env, t, rng, limit, &mut notes)?;
    let mut detail = String::new();
    let data = match env
        .read_txn()
        .map_err(|e| err_name(&e))
        .and_then(|r| read_state(&r, limit))
    {
        Ok(s) if s == t.last => "data=last",
        Ok(s) if s == t.prev => "data=prev",
        Ok(s) if t.history.contains(&s) => "data=older-commit",
        Ok(s) => {
            detail = format!("differs from last commit: {}", diff(&s, &t.last));
            "data=SILENTLY-DIFFERENT"
        }
        Err(e) if e.starts_with("RUNAWAY") => return Err(e),
        Err(e) if e.starts_with("UNORDERED") => {
            detail = e;
            "data=UNORDERED-UNDETECTED"
        }
        Err(e) => {
            detail = e;
            "data=read-error"
        }
    };
    // The integrity check must run to the end on any file, and must see
    // damage that reads let through (reads do not verify checksums).
    let check = match env.check() {
        Ok(r) if r.is_ok() => "check=ok",
        Ok(_) => "check=problems",
        Err(e) => return Err(format!("check returned an error: {e:?}")),
    };
    if check == "check=ok" && (data.contains("DIFFERENT") || data.contains("UNDETECTED")) {
        return Err(format!("check found nothing, but {data}: {detail}"));
    }
    let w = try_write(&env, t, rng);
    if w == "commit:ok" {
        read_everything(&env, t, rng, limit + 100, &mut notes)?;
    }
    drop(env);
    // and once more after reopening
    if let Ok(env) = unsafe { env_opts().open(dir) } {
        read_everything(&env, t, rng, limit + 100, &mut notes)?;
        let _ = try_write(&env, t, rng);
    }
    let w = w.split(':').next_back().unwrap_or("").to_string();
    Ok(format!(
        "open:ok {data} {check} write={w} read-errors:{} | {detail} {}",
        if notes.is_empty() { "none" } else { "some" },
        notes.first().cloned().unwrap_or_default()
    ))
}

/// Garbage in one meta page: must open from another meta, show the last or previous commit,
/// and stay writable (also across reopen).
fn attempt_one_meta(dir: &Path, t: &Template) -> Result<String, String> {
    let limit = t.last.len() * 2 + 1000;
    let env = unsafe { env_opts().open(dir) }.map_err(|e| format!("open failed: {e:?}"))?;
    let r = env.read_txn().map_err(|e| format!("read_txn: {e:?}"))?;
    let shown = read_state(&r, limit).map_err(|e| format!("reading: {e}"))?;
    drop(r);
    let which = if shown == t.last {
        "last"
    } else if shown == t.prev {
        "prev"
    } else {
        return Err(format!(
            "data matches neither the last commit ({}) nor the previous one ({})",
            diff(&shown, &t.last),
            diff(&shown, &t.prev)
        ));
    };
    let mut expected = shown;
    // several commits, so every meta slot (including the damaged one) gets rewritten
    for c in 0..4u8 {
        let mut w = env
            .write_txn()
            .map_err(|e| format!("write_txn #{c}: {e:?}"))?;
        let k = format!("post-damage-{c}").into_bytes();
        w.put(env.main_db(), &k, &[c; 100])
            .map_err(|e| format!("put #{c}: {e:?}"))?;
        w.commit().map_err(|e| format!("commit #{c}: {e:?}"))?;
        expected.main.insert(k, vec![c; 100]);
    }
    let check = |env: &Env, what: &str| -> Result<(), String> {
        let r = env
            .read_txn()
            .map_err(|e| format!("{what}: read_txn: {e:?}"))?;
        let s = read_state(&r, limit).map_err(|e| format!("{what}: {e}"))?;
        if s != expected {
            return Err(format!("{what}: {}", diff(&s, &expected)));
        }
        Ok(())
    };
    check(&env, "after writing")?;
    drop(env);
    let env = unsafe { env_opts().open(dir) }.map_err(|e| format!("reopen failed: {e:?}"))?;
    check(&env, "after reopen")?;
    Ok(format!("shows={which}"))
}

// ------------------------------------------------------------------------------------------------
// child process

static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

fn variant_seed(base: u64, kind: Kind, i: usize) -> u64 {
    mix(base ^ mix(i as u64 + 1) ^ (kind as u64) << 56)
}

#[test]
#[ignore = "helper: run by the corruption tests in a child process"]
fn corruption_child() {
    let Ok(kind) = std::env::var("SARSEN_CORRUPTION_CHILD") else {
        return;
    };
    let kind = Kind::parse(&kind);
    let var = |n: &str| std::env::var(n).unwrap().parse::<u64>().unwrap();
    let base = var("SARSEN_CORRUPTION_BASE");
    let (from, to) = (
        var("SARSEN_CORRUPTION_FROM") as usize,
        var("SARSEN_CORRUPTION_TO") as usize,
    );
    std::panic::set_hook(Box::new(|info| {
        let msg = format!("{info}").replace('\n', " | ");
        eprintln!("panic: {msg}");
        *LAST_PANIC.lock().unwrap() = Some(msg);
    }));
    let templates: Vec<Arc<Template>> = [512u32, 4096]
        .iter()
        .map(|&ps| Arc::new(build_template(ps, mix(base ^ ps as u64))))
        .collect();
    println!("@@ READY");
    for i in from..to {
        let vseed = variant_seed(base, kind, i);
        let t = templates[(vseed % 2) as usize].clone();
        println!("@@ START {i}");
        let vdir = tempfile::tempdir().unwrap();
        std::fs::copy(t.dir.path().join("data.sdb"), vdir.path().join("data.sdb")).unwrap();
        let mut rng = StdRng::seed_from_u64(vseed);
        let desc = damage(kind, &vdir.path().join("data.sdb"), &t, &mut rng, i);
        println!("@@ DAMAGE {i} page_size={} {desc}", t.page_size);
        let (tx, rx) = mpsc::channel();
        let path: PathBuf = vdir.path().to_path_buf();
        let t2 = t.clone();
        std::thread::spawn(move || {
            let r = catch_unwind(AssertUnwindSafe(|| {
                if kind == Kind::OneMeta {
                    attempt_one_meta(&path, &t2)
                } else {
                    attempt_lenient(&path, &t2, &mut rng)
                }
            }));
            let _ = tx.send(r.map_err(|p| {
                LAST_PANIC.lock().unwrap().take().unwrap_or_else(|| {
                    p.downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default()
                })
            }));
        });
        match rx.recv_timeout(VARIANT_TIMEOUT) {
            Ok(Ok(Ok(summary))) => println!("@@ OK {i} {summary}"),
            Ok(Ok(Err(msg))) => println!("@@ FAIL {i} {msg}"),
            Ok(Err(panic)) => println!("@@ PANIC {i} {panic}"),
            Err(_) => {
                println!("@@ HANG {i} no result after {VARIANT_TIMEOUT:?}");
                std::process::exit(3);
            }
        }
    }
    println!("@@ END");
}

// ------------------------------------------------------------------------------------------------
// parent

fn run_kind(kind: Kind, default_variants: usize) {
    let (base, _) = base_seed(kind.name());
    let (from, to) = match std::env::var("SARSEN_VARIANT") {
        Ok(v) => {
            let i: usize = v.trim().parse().expect("SARSEN_VARIANT");
            (i, i + 1)
        }
        Err(_) => (0, cases(default_variants)),
    };
    let exe = std::env::current_exe().unwrap();
    let verbose = std::env::var_os("SARSEN_VERBOSE").is_some();
    let mut failures: Vec<String> = Vec::new();
    let mut stats: BTreeMap<String, usize> = BTreeMap::new();
    let mut next = from;
    while next < to {
        let mut child = Command::new(&exe)
            .args([
                "corruption_child",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("SARSEN_CORRUPTION_CHILD", kind.name())
            .env("SARSEN_CORRUPTION_BASE", base.to_string())
            .env("SARSEN_CORRUPTION_FROM", next.to_string())
            .env("SARSEN_CORRUPTION_TO", to.to_string())
            .env("RUST_BACKTRACE", "0")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawning the child test process");
        let (tx, rx) = mpsc::channel::<String>();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let err_tail: Arc<Mutex<VecDeque<String>>> = Arc::default();
        let err = child.stderr.take().unwrap();
        let et = err_tail.clone();
        let err_thread = std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let mut q = et.lock().unwrap();
                if q.len() >= 20 {
                    q.pop_front();
                }
                q.push_back(line);
            }
        });
        let start = next;
        let mut current: Option<usize> = None;
        let mut damage_desc = String::new();
        let mut killed = false;
        loop {
            match rx.recv_timeout(CHILD_SILENCE) {
                Ok(line) => {
                    let Some(rest) = line.strip_prefix("@@ ") else {
                        continue;
                    };
                    let mut parts = rest.splitn(3, ' ');
                    let tag = parts.next().unwrap_or("");
                    let idx: Option<usize> = parts.next().and_then(|s| s.parse().ok());
                    let msg = parts.next().unwrap_or("").to_string();
                    match (tag, idx) {
                        ("START", Some(i)) => {
                            current = Some(i);
                            damage_desc.clear();
                        }
                        ("DAMAGE", Some(_)) => damage_desc = msg,
                        ("OK", Some(i)) => {
                            if verbose {
                                eprintln!("  variant {i} [{damage_desc}]: {msg}");
                            }
                            let key = msg.split(" | ").next().unwrap_or("").to_string();
                            *stats.entry(key).or_default() += 1;
                            current = None;
                            next = i + 1;
                        }
                        ("FAIL" | "PANIC" | "HANG", Some(i)) => {
                            failures.push(format!("variant {i} [{damage_desc}]: {tag}: {msg}"));
                            current = None;
                            next = i + 1;
                        }
                        _ => {}
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let _ = child.kill();
                    killed = true;
                    if let Some(i) = current {
                        failures.push(format!("variant {i} [{damage_desc}]: HANG: child silent for {CHILD_SILENCE:?}, killed"));
                        next = i + 1;
                        current = None;
                    }
                    break;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        let status = child.wait().unwrap();
        let _ = err_thread.join();
        let tail = err_tail
            .lock()
            .unwrap()
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n    ");
        if let Some(i) = current {
            failures.push(format!("variant {i} [{damage_desc}]: CRASH: child process died ({status}) during this variant; stderr tail:\n    {tail}"));
            next = i + 1;
        } else if next == start && next < to {
            failures.push(format!(
                "child made no progress ({status}, killed={killed}); stderr tail:\n    {tail}"
            ));
            break;
        }
    }
    eprintln!(
        "[{}] base SEED={base}: outcomes of {} variants:",
        kind.name(),
        to - from
    );
    for (k, v) in &stats {
        eprintln!("  {v:4} x {k}");
    }
    if !failures.is_empty() {
        panic!(
            "{} of {} damaged-file variants failed (replay one: SARSEN_SEED={base} SARSEN_VARIANT=<i> cargo test -p sarsen --test corruption {}):\n  {}",
            failures.len(),
            to - from,
            kind.name(),
            failures.join("\n  ")
        );
    }
}

#[test]
fn data_bytes() {
    run_kind(Kind::DataBytes, 40);
}

#[test]
fn truncate() {
    run_kind(Kind::Truncate, 30);
}

#[test]
fn zero_pages() {
    run_kind(Kind::ZeroPages, 30);
}

#[test]
fn one_meta() {
    run_kind(Kind::OneMeta, 30);
}

#[test]
fn two_metas() {
    run_kind(Kind::TwoMetas, 20);
}
