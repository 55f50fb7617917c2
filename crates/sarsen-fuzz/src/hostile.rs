//! The `hostile_file` target: a small valid database, damaged.
//!
//! A template database (several levels at 512-byte pages, overflow runs,
//! named databases, a merge operator's name in the catalog, GC records, a
//! DUPSORT database whose keys hold one value, inline duplicate lists or
//! duplicate sub-trees of hundreds of values, and a DUPFIXED one) is built
//! once and kept as bytes. Each input picks a template, open flags and
//! a list of [`Mutation`]s: byte flips, byte strings, 16- and 32-bit fields
//! overwritten (lengths, counts, page numbers), pages swapped, copied or
//! zeroed, the file truncated or extended, and meta checksums recomputed so
//! that damaged meta fields get past the checksum. The result is written to
//! a scratch directory and [`exercise`]d: opened, read through every read
//! path with bounded work, checked, copied, written, committed, reopened.
//!
//! An error anywhere is fine. A panic, a hang or a crash is a failure, and
//! so is data that differs from every commit of the template (or keys out
//! of order, or more entries than the template ever had) while
//! `Env::check` finds nothing: reads do not verify checksums, `check` does.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::OnceLock;

use arbitrary::Arbitrary;
use sarsen::merge::Uint64Add;
use sarsen::{Database, DbOptions, Durability, Env, EnvOptions, Error, KeyOrder, RoTxn};

/// The entries of one database as key/value pairs (a DUPSORT key has
/// several; values of the templates' DUPSORT databases are bytewise, so
/// pairs sort as the databases keep them).
pub type Map = BTreeSet<(Vec<u8>, Vec<u8>)>;

/// The contents of every database of one commit: name (`""` for the main
/// database) to entries.
pub type Contents = BTreeMap<String, Map>;

/// Open flags of one attempt.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub struct OpenFlags {
    /// `EnvOptions::write_map`.
    pub write_map: bool,
    /// Open as if after a reboot (another boot id): metas are verified or
    /// rolled back at open.
    pub foreign_boot: bool,
    /// `EnvOptions::read_only` (nothing is written).
    pub read_only: bool,
}

/// One change to the file. Page numbers are taken modulo the number of
/// pages the file has at that point, offsets modulo the page size.
#[derive(Arbitrary, Debug, Clone)]
pub enum Mutation {
    /// XOR a byte.
    FlipByte {
        /// Byte position (modulo the length).
        pos: u32,
        /// Mask (0 is taken as 0xff).
        xor: u8,
    },
    /// Overwrite `len % 9` bytes.
    Bytes {
        /// Byte position (modulo the length).
        pos: u32,
        /// How many.
        len: u8,
        /// The bytes.
        bytes: [u8; 8],
    },
    /// Overwrite a little-endian 16-bit field (counts, lengths, offsets).
    U16 {
        /// Page.
        page: u16,
        /// Offset in the page.
        off: u16,
        /// Value.
        value: u16,
    },
    /// Overwrite a little-endian 32-bit field (page numbers, lengths).
    U32 {
        /// Page.
        page: u16,
        /// Offset in the page.
        off: u16,
        /// Value.
        value: u32,
    },
    /// Write a page number that exists (modulo the page count + 2).
    Pgno {
        /// Page.
        page: u16,
        /// Offset in the page.
        off: u16,
        /// The page number written.
        target: u16,
    },
    /// Swap two pages.
    SwapPages {
        /// One page.
        a: u16,
        /// The other.
        b: u16,
    },
    /// Copy one page over another.
    CopyPage {
        /// Source.
        from: u16,
        /// Destination.
        to: u16,
    },
    /// Zero a page.
    ZeroPage {
        /// Page.
        page: u16,
    },
    /// Cut the file to `len` modulo (its length + 1) bytes.
    Truncate {
        /// New length before the modulo.
        len: u32,
    },
    /// Append zero pages.
    Extend {
        /// How many (modulo 64).
        pages: u8,
    },
    /// Recompute the checksum of meta slot `slot % 3`.
    FixMeta {
        /// Slot.
        slot: u8,
    },
}

/// A whole `hostile_file` input.
#[derive(Arbitrary, Debug, Clone)]
pub struct HostileInput {
    /// The 4096-byte-page template instead of the 512-byte one.
    pub big_pages: bool,
    /// How to open.
    pub open: OpenFlags,
    /// The damage (at most 32 mutations used).
    pub mutations: Vec<Mutation>,
}

/// A template database.
pub struct Template {
    /// The data file, cut at the last page in use.
    pub bytes: Vec<u8>,
    /// The lock file the template's environment left: written beside each
    /// damaged copy, it shows the newest commit published, so a same-boot
    /// open trusts that commit without verifying its pages, as it trusts
    /// any commit a live environment published. (Without it, open verifies
    /// the newest commit and rolls damage in it back; the fuzzing must
    /// reach the readers and writers too.)
    pub lock: Vec<u8>,
    /// Page size, bytes.
    pub page_size: u32,
    /// The contents after each commit, oldest first.
    pub history: Vec<Contents>,
    /// The most entries any commit had.
    pub max_entries: usize,
}

/// The template with 512-byte (`big = false`) or 4096-byte pages, built on
/// first use.
pub fn template(big: bool) -> &'static Template {
    static SMALL: OnceLock<Template> = OnceLock::new();
    static BIG: OnceLock<Template> = OnceLock::new();
    if big {
        BIG.get_or_init(|| build_template(4096, 600))
    } else {
        SMALL.get_or_init(|| build_template(512, 250))
    }
}

fn pattern(seed: u32, len: usize) -> Vec<u8> {
    let mut v = crate::input_bytes(u64::from(seed), len);
    if let Some(b) = v.first_mut() {
        *b = b'v';
    }
    v
}

/// Options of the template's DUPSORT database `dups`.
pub fn dups_options() -> DbOptions {
    DbOptions::new().dup_sort(KeyOrder::Bytewise)
}

/// Options of the template's DUPFIXED database `fixed` (8-byte values).
pub fn fixed_options() -> DbOptions {
    DbOptions::new().dup_fixed()
}

/// Values of the DUPSORT key `dk{j}` in round `round` of `n`-key
/// templates: key 0 gets hundreds of values over the rounds (a sub-tree
/// of two levels), key 1 tens (a one-leaf sub-tree, or a list at 4096-byte
/// pages), keys 2..10 a few (inline lists), the rest one or two.
fn dup_values(j: u32, round: u32, n: u32) -> std::ops::Range<u32> {
    let per = match j {
        0 => n / 3,
        1 => n / 10,
        2..=9 => j,
        _ => 1 + j % 2,
    };
    round * per..(round + 1) * per
}

/// Writes one round of the DUPSORT databases: `dups` (values of 3 to 40
/// bytes) and `fixed` (8 bytes, every other value); the last round
/// deletes pairs and keys.
fn write_dups(w: &mut sarsen::RwTxn, round: u32, n: u32) {
    let dups = w.create_db_with(Some("dups"), &dups_options()).unwrap();
    let fixed = w.create_db_with(Some("fixed"), &fixed_options()).unwrap();
    for j in 0..24u32 {
        let k = format!("dk{j:02}");
        for i in dup_values(j, round, n) {
            let mut v = format!("dv{i:05}").into_bytes();
            v.resize(3 + (i as usize * 7 + j as usize) % 38, b'.');
            w.put(dups, k.as_bytes(), &v).unwrap();
            if i % 2 == 0 {
                let f = u64::from(i).wrapping_mul(0x9e37_79b9) | u64::from(j) << 56;
                w.put(fixed, k.as_bytes(), &f.to_be_bytes()).unwrap();
            }
        }
    }
    if round == 2 {
        for j in [0u32, 1, 3, 7] {
            let k = format!("dk{j:02}");
            let vals: Vec<Vec<u8>> = w
                .range(dups, k.as_bytes()..=k.as_bytes())
                .unwrap()
                .map(|e| e.unwrap().1.to_vec())
                .step_by(3)
                .collect();
            for v in vals {
                assert!(w.delete_dup(dups, k.as_bytes(), &v).unwrap());
            }
        }
        w.delete(dups, b"dk05").unwrap();
        w.delete(fixed, b"dk01").unwrap();
    }
}

/// Builds a template: `n` keys in the main database over three commits
/// (some values in overflow runs), a counter database `alpha` with its
/// operator recorded, `beta`, and `gamma` created and dropped; deletes and
/// overwrites leave GC records; the DUPSORT databases of [`write_dups`].
fn build_template(page_size: u32, n: u32) -> Template {
    let dir = crate::scratch_dir();
    let o = EnvOptions::new()
        .page_size(page_size)
        .durability(Durability::Durable);
    // SAFETY: a private scratch directory.
    let env = unsafe { o.open(dir.path()) }.expect("template open");
    let main = env.main_db();
    let counters = DbOptions::new().merge_operator(Uint64Add);
    let mut history = Vec::new();
    for round in 0..3u32 {
        let mut w = env.write_txn().unwrap();
        let alpha = w.create_db_with(Some("alpha"), &counters).unwrap();
        let beta = w.create_db(Some("beta")).unwrap();
        for i in (round..n).step_by(3) {
            let len = if i % 37 == 5 {
                1500 + i as usize
            } else {
                (i % 90) as usize
            };
            let k = format!("key{:05}", i * 7);
            w.put(main, k.as_bytes(), &pattern(i, len)).unwrap();
            w.merge(alpha, &(i % 40).to_be_bytes(), &u64::from(i).to_le_bytes())
                .unwrap();
            if i % 5 == round {
                w.put(beta, &pattern(i, 12), &pattern(i + 1, 40)).unwrap();
            }
        }
        if round == 1 {
            let g = w.create_db(Some("gamma")).unwrap();
            w.put(g, b"g", b"gone soon").unwrap();
        }
        write_dups(&mut w, round, n);
        if round == 2 {
            let g = w.open_db(Some("gamma")).unwrap().unwrap();
            w.drop_db(g).unwrap();
            for i in (0..n).step_by(4) {
                w.delete(main, format!("key{:05}", i * 7).as_bytes())
                    .unwrap();
            }
        }
        w.commit().unwrap();
        history.push(contents(&env.read_txn().unwrap(), usize::MAX).expect("template read"));
    }
    let r = env.read_txn().unwrap();
    assert!(r.stat(main).unwrap().depth >= 2, "template too shallow");
    let dups = r.open_db(Some("dups")).unwrap().unwrap();
    let mut c = r.cursor(dups).unwrap();
    c.seek(b"dk00").unwrap();
    assert!(c.dup_count().unwrap() > 150, "no large sub-tree");
    let report = env.check().unwrap();
    assert!(report.is_ok(), "template check: {:?}", report.problems);
    let used = env.info().unwrap().next_pgno * u64::from(page_size);
    drop(r);
    drop(env);
    let mut bytes = std::fs::read(dir.path().join("data.sdb")).expect("reading the template");
    let lock =
        std::fs::read(dir.path().join("lock.sdb")).expect("reading the template's lock file");
    bytes.truncate(used as usize);
    let max_entries = history
        .iter()
        .map(|c| c.values().map(Map::len).sum::<usize>())
        .max()
        .unwrap_or(0);
    Template {
        bytes,
        lock,
        page_size,
        history,
        max_entries,
    }
}

/// Applies `muts` (at most 32) to a copy of the template's bytes.
pub fn mutate(t: &Template, muts: &[Mutation]) -> Vec<u8> {
    let ps = t.page_size as usize;
    let mut b = t.bytes.clone();
    for m in muts.iter().take(32) {
        let pages = (b.len() / ps).max(1);
        let page = |p: u16| (p as usize % pages) * ps;
        let at = |b: &mut Vec<u8>, pos: usize, bytes: &[u8]| {
            for (i, x) in bytes.iter().enumerate() {
                if let Some(d) = b.get_mut(pos + i) {
                    *d = *x;
                }
            }
        };
        match m {
            Mutation::FlipByte { pos, xor } => {
                if !b.is_empty() {
                    let i = *pos as usize % b.len();
                    b[i] ^= if *xor == 0 { 0xff } else { *xor };
                }
            }
            Mutation::Bytes { pos, len, bytes } => {
                let pos = *pos as usize % b.len().max(1);
                at(&mut b, pos, &bytes[..*len as usize % 9]);
            }
            Mutation::U16 {
                page: p,
                off,
                value,
            } => at(&mut b, page(*p) + *off as usize % ps, &value.to_le_bytes()),
            Mutation::U32 {
                page: p,
                off,
                value,
            } => at(&mut b, page(*p) + *off as usize % ps, &value.to_le_bytes()),
            Mutation::Pgno {
                page: p,
                off,
                target,
            } => {
                let v = (*target as usize % (pages + 2)) as u32;
                at(&mut b, page(*p) + *off as usize % ps, &v.to_le_bytes())
            }
            Mutation::SwapPages { a, b: c } => {
                let (x, y) = (page(*a), page(*c));
                if x != y && y + ps <= b.len() && x + ps <= b.len() {
                    let tmp = b[x..x + ps].to_vec();
                    b.copy_within(y..y + ps, x);
                    b[y..y + ps].copy_from_slice(&tmp);
                }
            }
            Mutation::CopyPage { from, to } => {
                let (x, y) = (page(*from), page(*to));
                if x + ps <= b.len() && y + ps <= b.len() {
                    b.copy_within(x..x + ps, y);
                }
            }
            Mutation::ZeroPage { page: p } => {
                let x = page(*p);
                let end = (x + ps).min(b.len());
                b[x.min(end)..end].fill(0);
            }
            Mutation::Truncate { len } => b.truncate(*len as usize % (b.len() + 1)),
            Mutation::Extend { pages } => b.resize(b.len() + (*pages as usize % 64) * ps, 0),
            Mutation::FixMeta { slot } => {
                let x = (*slot as usize % 3) * ps;
                // The checksum of the meta's format: of bytes 0..312 at 312
                // (format 1), else of 0..504 at 504 (format 2).
                let at = if b.get(x + 8) == Some(&1) { 312 } else { 504 };
                if x + at + 8 <= b.len() {
                    let sum = xxhash_rust::xxh3::xxh3_64(&b[x..x + at]);
                    b[x + at..x + at + 8].copy_from_slice(&sum.to_le_bytes());
                }
            }
        }
    }
    b
}

fn err_name(e: &Error) -> String {
    let s = format!("{e:?}");
    s.split([' ', '{', '(']).next().unwrap_or("").to_string()
}

/// Reads every database of `r` with at most `limit` entries each:
/// `Ok(contents)`, or `Err` naming the first error, or a runaway or
/// unordered scan (prefixed `RUNAWAY` / `UNORDERED`).
pub fn contents(r: &RoTxn, limit: usize) -> Result<Contents, String> {
    let mut c = Contents::new();
    let names = r
        .list_dbs()
        .map_err(|e| format!("list_dbs:{}", err_name(&e)))?;
    let mut dbs = vec![(String::new(), r.open_db(None).map_err(|e| err_name(&e))?)];
    for n in names {
        let h = r
            .open_db(Some(&n))
            .map_err(|e| format!("open_db:{}", err_name(&e)))?;
        dbs.push((n, h));
    }
    for (name, h) in dbs {
        let h = h.ok_or_else(|| format!("listed db {name:?} cannot be opened"))?;
        c.insert(name, scan(r, h, limit, false)?);
    }
    Ok(c)
}

fn scan(r: &RoTxn, db: Database, limit: usize, rev: bool) -> Result<Map, String> {
    let it = r.iter(db).map_err(|e| format!("iter:{}", err_name(&e)))?;
    let mut m = Map::new();
    let mut prev: Option<(Vec<u8>, Vec<u8>)> = None;
    let mut step = |e: sarsen::Result<(&[u8], &[u8])>| -> Result<(), String> {
        let (k, v) = e.map_err(|e| format!("next:{}", err_name(&e)))?;
        if m.len() >= limit {
            return Err(format!("RUNAWAY: more than {limit} entries"));
        }
        // Pairs: a DUPSORT key comes once per value, values in order.
        let p = (k.to_vec(), v.to_vec());
        if prev
            .as_ref()
            .is_some_and(|q| if rev { p >= *q } else { p <= *q })
        {
            return Err("UNORDERED: pairs out of order".into());
        }
        m.insert(p.clone());
        prev = Some(p);
        Ok(())
    };
    if rev {
        it.rev().try_for_each(&mut step)?;
    } else {
        it.into_iter().try_for_each(&mut step)?;
    }
    Ok(m)
}

mod exercise;

pub use exercise::{exercise, exercise_bytes, run};

/// Builds both templates now (a fuzz target's set-up).
pub fn warm_up() {
    template(false);
    template(true);
}

/// Writes `bytes` as the data file of a new scratch directory, beside the
/// template's lock file.
fn write_file(dir: &Path, bytes: &[u8], lock: &[u8]) {
    std::fs::write(dir.join("data.sdb"), bytes).expect("writing the damaged file");
    std::fs::write(dir.join("lock.sdb"), lock).expect("writing the lock file");
}
