//! `sarsen dump`, `load` and `drop` run as child processes: round trips
//! through the text format against a model of the contents, the same text
//! through LMDB's own `mdb_dump` and `mdb_load` (Debian's `lmdb-utils`;
//! those tests say they skip when the tools are missing), and the errors.
//! Databases with header flags (DUPSORT, DUPFIXED, INTEGERDUP, REVERSEDUP,
//! INTEGERKEY with 4- and 8-byte keys, REVERSEKEY) go both ways between
//! LMDB and Sarsen, each dump equal to the other's byte for byte, and are
//! checked against a model with its own orders.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use sarsen::{DbOptions, Env, EnvOptions, KeyOrder};

/// Every database of an environment: `None` is the main one.
type Contents = BTreeMap<Option<String>, BTreeMap<Vec<u8>, Vec<u8>>>;

/// Runs `program` with `args`, feeding it `input` on standard input.
fn run(program: &str, args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run {program}: {e}"));
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || {
        // A child that fails early closes its input: ignore the broken pipe.
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    out
}

fn sarsen(args: &[&str], input: &[u8]) -> Output {
    run(env!("CARGO_BIN_EXE_sarsen"), args, input)
}

/// Runs and asserts exit code 0; returns standard output.
fn ok(program: &str, args: &[&str], input: &[u8]) -> Vec<u8> {
    let o = run(program, args, input);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

fn sarsen_ok(args: &[&str], input: &[u8]) -> Vec<u8> {
    ok(env!("CARGO_BIN_EXE_sarsen"), args, input)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// xorshift64*: deterministic test data without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// `len` random bytes, never a backslash if `no_backslash`.
    fn bytes(&mut self, len: usize, no_backslash: bool) -> Vec<u8> {
        (0..len)
            .map(|_| loop {
                let b = self.next() as u8;
                if !(no_backslash && b == b'\\') {
                    break b;
                }
            })
            .collect()
    }
}

/// `n` random pairs: keys of 1..=max_key bytes, values mostly short, some
/// empty, some of 10 KB.
fn random_pairs(
    rng: &mut Rng,
    n: usize,
    max_key: usize,
    no_backslash: bool,
) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m = BTreeMap::new();
    while m.len() < n {
        let cap = if rng.below(4) == 0 {
            max_key
        } else {
            max_key.min(16)
        };
        let klen = 1 + rng.below(cap);
        let vlen = match rng.below(10) {
            0 => 0,
            1 => 10_240,
            _ => rng.below(100),
        };
        let k = rng.bytes(klen, no_backslash);
        let v = rng.bytes(vlen, no_backslash);
        m.insert(k, v);
    }
    m
}

/// Writes `contents` into a new Sarsen environment at `dir`.
fn build(dir: &Path, page_size: u32, contents: &Contents) {
    // SAFETY: the test's own temporary directory; nothing else maps it.
    let env: Env = unsafe { EnvOptions::new().page_size(page_size).open(dir) }.unwrap();
    let mut w = env.write_txn().unwrap();
    for (name, pairs) in contents {
        let db = w.create_db(name.as_deref()).unwrap();
        for (k, v) in pairs {
            w.put(db, k, v).unwrap();
        }
    }
    w.commit().unwrap();
}

/// Every database of the Sarsen environment at `dir`, the main one always.
fn contents(dir: &Path) -> Contents {
    // SAFETY: as in `build`.
    let env: Env = unsafe { EnvOptions::new().read_only(true).open(dir) }.unwrap();
    let r = env.read_txn().unwrap();
    let mut out = Contents::new();
    let mut names = vec![None];
    names.extend(r.list_dbs().unwrap().into_iter().map(Some));
    for name in names {
        let db = r.open_db(name.as_deref()).unwrap().unwrap();
        let pairs = r
            .iter(db)
            .unwrap()
            .map(|e| {
                let (k, v) = e.unwrap();
                (k.to_vec(), v.to_vec())
            })
            .collect();
        out.insert(name, pairs);
    }
    out
}

/// The model of a source: every single-byte key with a value of all 256
/// byte values, empty values, 10 KB values and random keys in the main
/// database; three named databases, one empty.
fn source_model() -> Contents {
    let mut rng = Rng(0x5eed_0001);
    let all: Vec<u8> = (0..=255).collect();
    let mut main = random_pairs(&mut rng, 300, 1000, false);
    for b in 0..=255u8 {
        let v = match b % 3 {
            0 => all.clone(),
            1 => Vec::new(),
            _ => rng.bytes(10_240, false),
        };
        main.insert(vec![b], v);
    }
    main.insert(all.clone(), all);
    let mut m = Contents::new();
    m.insert(None, main);
    m.insert(
        Some("alpha".into()),
        random_pairs(&mut rng, 200, 500, false),
    );
    m.insert(
        Some("beta gamma".into()),
        random_pairs(&mut rng, 50, 50, false),
    );
    m.insert(
        Some("\u{e9}t\u{e9} \\ =".into()),
        random_pairs(&mut rng, 20, 8, false),
    );
    m.insert(Some("empty".into()), BTreeMap::new());
    m
}

#[test]
fn dump_load_dump_round_trips_in_both_formats() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let model = source_model();
    // A page size other than the default: load creates with db_pagesize.
    build(&src, 8192, &model);
    assert!(contents(&src) == model, "source differs from the model");
    for (i, format) in [&[][..], &["-p"][..]].into_iter().enumerate() {
        let dump = |dir: &Path| {
            let mut args = vec!["dump", "-a", s(dir)];
            args.extend(format);
            sarsen_ok(&args, b"")
        };
        let text = dump(&src);
        let head = if format.is_empty() {
            "format=bytevalue"
        } else {
            "format=print"
        };
        assert!(text.starts_with(format!("VERSION=3\n{head}\n").as_bytes()));
        assert!(data_lines(&text).iter().all(|l| l.is_ascii()));
        let dst = tmp.path().join(format!("dst{i}"));
        sarsen_ok(&["load", s(&dst)], &text);
        assert!(contents(&dst) == model, "loaded database differs");
        assert!(dump(&dst) == text, "the second dump differs");

        // From a file, committing every 7 entries, into a single-file database.
        let file = tmp.path().join(format!("dump{i}.txt"));
        std::fs::write(&file, &text).unwrap();
        let single = tmp.path().join(format!("single{i}.sdb"));
        let args = ["load", "--single-file", "--commit-every", "7", "-f"];
        sarsen_ok(&[&args[..], &[s(&file), s(&single)][..]].concat(), b"");
        let out = tmp.path().join(format!("again{i}.txt"));
        let mut args = vec!["dump", "-a", "--single-file", "-f", s(&out), s(&single)];
        args.extend(format);
        assert_eq!(sarsen_ok(&args, b""), b"");
        assert!(
            std::fs::read(&out).unwrap() == text,
            "dump of the single file differs"
        );
    }
}

#[test]
fn dump_sections_and_load_name_override() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let model = source_model();
    build(&src, 4096, &model);
    // Without -a: the main database only; with -s: that database, named.
    let main = sarsen_ok(&["dump", s(&src)], b"");
    assert!(!String::from_utf8_lossy(&main).contains("database="));
    let alpha = sarsen_ok(&["dump", "-s", "alpha", s(&src)], b"");
    assert!(String::from_utf8_lossy(&alpha).contains("\ndatabase=alpha\n"));
    let o = sarsen(&["dump", "-s", "nope", s(&src)], b"");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("\"nope\" not found"), "{}", stderr(&o));
    assert_eq!(
        sarsen(&["dump", "-a", "-s", "alpha", s(&src)], b"")
            .status
            .code(),
        Some(2)
    );

    // -s on load puts every section into NAME, whatever the headers say.
    let dst = tmp.path().join("dst");
    sarsen_ok(&["load", "-s", "copy", s(&dst)], &alpha);
    sarsen_ok(&["load", "-s", "copy", s(&dst)], &main);
    let got = contents(&dst);
    let mut want = model[&Some("alpha".to_owned())].clone();
    want.extend(model[&None].clone());
    assert!(got[&Some("copy".to_owned())] == want, "-s copy differs");
    assert!(got[&None].is_empty());
    assert_eq!(got.len(), 2);

    // -a leaves out an empty main database when named ones exist.
    let named_only = tmp.path().join("named_only");
    let mut m = Contents::new();
    m.insert(None, BTreeMap::new());
    m.insert(Some("x".into()), model[&Some("alpha".to_owned())].clone());
    build(&named_only, 4096, &m);
    let text = String::from_utf8(sarsen_ok(&["dump", "-a", s(&named_only)], b"")).unwrap();
    assert_eq!(text.matches("VERSION=3").count(), 1);
    assert!(text.contains("database=x\n"));
}

#[test]
fn plain_text_mode_reads_key_and_value_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("db");
    let text = b"apple\nred\\0a\nback\\\\slash\n\\00\\ff\n\nempty key\n";
    sarsen_ok(&["load", "-T", s(&dst)], text);
    sarsen_ok(&["load", "-T", "-s", "fruit", s(&dst)], b"pear\ngreen\n");
    let got = contents(&dst);
    let main: BTreeMap<Vec<u8>, Vec<u8>> = [
        (&b"apple"[..], &b"red\n"[..]),
        (b"back\\slash", b"\x00\xff"),
        (b"", b"empty key"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_vec(), v.to_vec()))
    .collect();
    assert_eq!(got[&None], main);
    assert_eq!(got[&Some("fruit".to_owned())].len(), 1);
    let o = sarsen(&["load", "-T", s(&dst)], b"k\nv\nlonely\n");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("line 3"), "{}", stderr(&o));
}

/// A header for hand-written dumps.
const HEAD: &str = "VERSION=3\nformat=bytevalue\ntype=btree\nHEADER=END\n";

#[test]
fn headers_sarsen_cannot_honour_and_bad_lines_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("db");
    // Flags that cannot go together, or a flag that is neither 0 nor 1:
    // refused at HEADER=END (line 5), or at the flag's line (2).
    for (flags, line, why) in [
        (
            "duplicates=1\n",
            3,
            "unsorted duplicates (Berkeley DB's DB_DUP)",
        ),
        ("dupfixed=1\n", 3, "dupfixed=1 without dupsort=1"),
        (
            "reversedup=1\nintegerdup=0\n",
            4,
            "reversedup=1 without dupsort=1",
        ),
        ("integerkey=1\nreversekey=1\n", 4, "one key order"),
        ("dupsort=2\n", 2, "dupsort=2: a database flag is 0 or 1"),
    ] {
        let text = format!("VERSION=3\n{flags}HEADER=END\nDATA=END\n");
        let o = sarsen(&["load", s(&dst)], text.as_bytes());
        assert_eq!(o.status.code(), Some(2), "{flags}");
        let e = stderr(&o);
        assert!(
            e.contains(&format!("line {line}: ")) && e.contains(why),
            "{e}"
        );
    }
    let bad_hex = format!("{HEAD} 6b\n 01\n 6c\n 0x\nDATA=END\n");
    let o = sarsen(&["load", s(&dst)], bad_hex.as_bytes());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("line 8: "), "{}", stderr(&o));
    let truncated = format!("{HEAD} 6b\n 01\n");
    let o = sarsen(&["load", s(&dst)], truncated.as_bytes());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("before DATA=END"), "{}", stderr(&o));
    // Nothing of a failed section is loaded.
    assert!(contents(&dst)[&None].is_empty());
    let o = sarsen(
        &["load", "-f", s(&tmp.path().join("missing.txt")), s(&dst)],
        b"",
    );
    assert_eq!(o.status.code(), Some(2));
    // Unknown keywords are ignored with a warning, as mdb_load does.
    let o = sarsen(
        &["load", s(&dst)],
        format!("frob=1\n{HEAD} 6b\n 01\nDATA=END\n").as_bytes(),
    );
    assert_eq!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("line 1: unrecognized keyword ignored: frob"));
}

#[test]
fn no_overwrite_refuses_a_present_key_with_exit_1() {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("db");
    sarsen_ok(
        &["load", s(&dst)],
        format!("{HEAD} 6b\n 01\nDATA=END\n").as_bytes(),
    );
    let again = format!("{HEAD} 6a\n 00\n 6b\n 02\nDATA=END\n");
    let o = sarsen(&["load", "-n", s(&dst)], again.as_bytes());
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("line 7: key \"k\" already exists"), "{e}");
    // The section is not loaded: "j" is absent and "k" keeps its value.
    let main = &contents(&dst)[&None];
    assert_eq!(main.len(), 1);
    assert_eq!(main[&b"k".to_vec()], [1]);
    // Without -n the value is replaced; a key twice in the input is
    // "already present" under -n too.
    sarsen_ok(&["load", s(&dst)], again.as_bytes());
    assert_eq!(contents(&dst)[&None][&b"k".to_vec()], [2]);
    let twice = format!("{HEAD} 01\n 00\n 01\n 00\nDATA=END\n");
    assert_eq!(
        sarsen(&["load", "-n", s(&dst)], twice.as_bytes())
            .status
            .code(),
        Some(1)
    );
}

#[test]
fn drop_empties_and_deletes() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let model = source_model();
    build(&db, 4096, &model);
    let p = s(&db);
    sarsen_ok(&["drop", "-s", "alpha", p], b"");
    let got = contents(&db);
    assert!(got[&Some("alpha".to_owned())].is_empty());
    let beta = Some("beta gamma".to_owned());
    assert!(got[&beta] == model[&beta]);
    assert!(got[&None] == model[&None]);
    sarsen_ok(&["drop", "-d", "-s", "beta gamma", p], b"");
    assert!(!contents(&db).contains_key(&Some("beta gamma".to_owned())));
    sarsen_ok(&["drop", p], b"");
    let got = contents(&db);
    assert!(got[&None].is_empty());
    assert_eq!(got.len(), model.len() - 1);

    let o = sarsen(&["drop", "-d", "-s", "beta gamma", p], b"");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not found"), "{}", stderr(&o));
    assert_eq!(sarsen(&["drop", "-d", p], b"").status.code(), Some(2));
    let missing = tmp.path().join("missing");
    assert_eq!(sarsen(&["drop", s(&missing)], b"").status.code(), Some(2));
    assert!(!missing.exists(), "drop must not create a database");
}

/// Whether Debian's lmdb-utils are installed; says so when they are not.
fn have_lmdb_tools() -> bool {
    let found = ["mdb_dump", "mdb_load"].iter().all(|t| {
        Command::new(t)
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if !found {
        eprintln!("skipping: mdb_dump and mdb_load (Debian's lmdb-utils) are not installed");
    }
    found
}

/// A bytevalue section of `pairs` as mdb_load reads it, with a map size
/// that holds them.
fn lmdb_text(pairs: &BTreeMap<Vec<u8>, Vec<u8>>) -> Vec<u8> {
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let mut t =
        String::from("VERSION=3\nformat=bytevalue\ntype=btree\nmapsize=1073741824\nHEADER=END\n");
    for (k, v) in pairs {
        t.push_str(&format!(" {}\n {}\n", hex(k), hex(v)));
    }
    t.push_str("DATA=END\n");
    t.into_bytes()
}

/// The lines after each `HEADER=END` (the data), of every section.
fn data_lines(text: &[u8]) -> Vec<&[u8]> {
    let mut in_data = false;
    let mut out = Vec::new();
    for line in text.split(|&b| b == b'\n') {
        if line == b"HEADER=END" {
            in_data = true;
        } else if line == b"DATA=END" {
            in_data = false;
        } else if in_data {
            out.push(line);
        }
    }
    out
}

#[test]
fn lmdb_dumps_load_into_sarsen() {
    if !have_lmdb_tools() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x5eed_0002);
    // LMDB keys are at most 511 bytes. mdb_dump of lmdb-utils 0.9.24 writes
    // a backslash unescaped in -p output, so the main database, dumped in
    // both formats, has none.
    let main = random_pairs(&mut rng, 400, 511, true);
    let mut named = Contents::new();
    named.insert(
        Some("alpha".into()),
        random_pairs(&mut rng, 300, 511, false),
    );
    named.insert(Some("beta".into()), random_pairs(&mut rng, 40, 20, false));

    let lmdb_main = tmp.path().join("lmdb_main");
    std::fs::create_dir(&lmdb_main).unwrap();
    ok("mdb_load", &[s(&lmdb_main)], &lmdb_text(&main));
    let lmdb_named = tmp.path().join("lmdb_named");
    std::fs::create_dir(&lmdb_named).unwrap();
    for (name, pairs) in &named {
        let name = name.as_deref().unwrap();
        ok("mdb_load", &["-s", name, s(&lmdb_named)], &lmdb_text(pairs));
    }

    // mdb_dump -a writes every named database (not the main one, which in
    // LMDB holds their records); sarsen load reads them all.
    let text = ok("mdb_dump", &["-a", s(&lmdb_named)], b"");
    let dst = tmp.path().join("from_named");
    sarsen_ok(&["load", s(&dst)], &text);
    let mut want = named.clone();
    want.insert(None, BTreeMap::new());
    assert!(contents(&dst) == want, "named databases differ");

    for (i, format) in [&[][..], &["-p"][..]].into_iter().enumerate() {
        let text = ok("mdb_dump", &[format, &[s(&lmdb_main)][..]].concat(), b"");
        let dst = tmp.path().join(format!("from_main{i}"));
        sarsen_ok(&["load", s(&dst)], &text);
        assert!(contents(&dst)[&None] == main, "main database differs");
    }
}

#[test]
fn sarsen_dumps_load_into_lmdb() {
    if !have_lmdb_tools() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x5eed_0003);
    let mut model = Contents::new();
    let mut main = random_pairs(&mut rng, 400, 511, false);
    let all: Vec<u8> = (0..=255).collect();
    for b in 0..=255u8 {
        main.insert(vec![b], if b % 2 == 0 { all.clone() } else { Vec::new() });
    }
    model.insert(None, main);
    model.insert(
        Some("alpha".into()),
        random_pairs(&mut rng, 300, 511, false),
    );
    // mdb_load of lmdb-utils 0.9.24 misreads `\\` after an earlier escape
    // on the same line, so the print format goes to LMDB without backslashes.
    let mut plain = random_pairs(&mut rng, 200, 511, true);
    plain.insert(
        b"all but a backslash".to_vec(),
        all.iter().copied().filter(|&b| b != b'\\').collect(),
    );
    model.insert(Some("plain".into()), plain);
    let src = tmp.path().join("src");
    build(&src, 4096, &model);

    // The main database: mdb_load reads it, mdb_dump writes back the same
    // data lines.
    let text = sarsen_ok(&["dump", s(&src)], b"");
    let lmdb = tmp.path().join("lmdb_main");
    std::fs::create_dir(&lmdb).unwrap();
    ok("mdb_load", &[s(&lmdb)], &text);
    let back = ok("mdb_dump", &[s(&lmdb)], b"");
    assert!(
        data_lines(&back) == data_lines(&text),
        "main database differs"
    );

    // The print format.
    let text = sarsen_ok(&["dump", "-p", "-s", "plain", s(&src)], b"");
    let lmdb = tmp.path().join("lmdb_print");
    std::fs::create_dir(&lmdb).unwrap();
    ok("mdb_load", &[s(&lmdb)], &text);
    let back = ok("mdb_dump", &["-s", "plain", s(&lmdb)], b"");
    let ours = sarsen_ok(&["dump", "-s", "plain", s(&src)], b"");
    assert!(
        data_lines(&back) == data_lines(&ours),
        "print format differs"
    );

    // Everything with -a: the named databases come back from mdb_dump -a
    // as they were, and load into Sarsen again.
    let text = sarsen_ok(&["dump", "-a", s(&src)], b"");
    let lmdb = tmp.path().join("lmdb_all");
    std::fs::create_dir(&lmdb).unwrap();
    ok("mdb_load", &[s(&lmdb)], &text);
    let back = ok("mdb_dump", &["-a", s(&lmdb)], b"");
    let dst = tmp.path().join("dst");
    sarsen_ok(&["load", s(&dst)], &back);
    let mut want = model.clone();
    want.insert(None, BTreeMap::new());
    assert!(contents(&dst) == want, "named databases differ");
    for name in ["alpha", "plain"] {
        let ours = sarsen_ok(&["dump", "-s", name, s(&src)], b"");
        let theirs = ok("mdb_dump", &["-s", name, s(&lmdb)], b"");
        assert!(data_lines(&theirs) == data_lines(&ours), "{name} differs");
    }
}

/// An order of keys or of a key's values, written here apart from the
/// engine's so the model checks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sort {
    /// memcmp, a shorter key first (LMDB's default).
    Bytes,
    /// From the last byte (MDB_REVERSEKEY, MDB_REVERSEDUP).
    Reverse,
    /// Native-endian `unsigned int` (MDB_INTEGERKEY, MDB_INTEGERDUP).
    U32,
    /// Native-endian `size_t`.
    U64,
}

impl Sort {
    fn cmp(self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        match self {
            Sort::Bytes => a.cmp(b),
            Sort::Reverse => a.iter().rev().cmp(b.iter().rev()),
            Sort::U32 => u32::from_ne_bytes(a.try_into().unwrap())
                .cmp(&u32::from_ne_bytes(b.try_into().unwrap())),
            Sort::U64 => u64::from_ne_bytes(a.try_into().unwrap())
                .cmp(&u64::from_ne_bytes(b.try_into().unwrap())),
        }
    }

    fn key_order(self) -> KeyOrder {
        match self {
            Sort::Bytes => KeyOrder::Bytewise,
            Sort::Reverse => KeyOrder::ReverseBytewise,
            Sort::U32 => KeyOrder::U32,
            Sort::U64 => KeyOrder::U64,
        }
    }

    /// A random key or value for this order: 4 or 8 bytes for integers.
    fn random(self, rng: &mut Rng, max: usize) -> Vec<u8> {
        match self {
            Sort::U32 => (rng.next() as u32 >> (rng.below(4) * 8))
                .to_ne_bytes()
                .to_vec(),
            Sort::U64 => (rng.next() >> (rng.below(8) * 8)).to_ne_bytes().to_vec(),
            _ => {
                let len = 1 + rng.below(max);
                rng.bytes(len, false)
            }
        }
    }
}

/// A database with header flags, and its model: every pair in the order
/// the database keeps them.
#[derive(Clone, Debug)]
struct FlagDb {
    name: &'static str,
    keys: Sort,
    /// `Some((order of the values, DUPFIXED))` for DUPSORT.
    dups: Option<(Sort, bool)>,
    pairs: Vec<(Vec<u8>, Vec<u8>)>,
}

impl FlagDb {
    /// The flag lines mdb_dump writes for this database, in its order.
    fn flag_lines(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.dups.is_some() {
            out.push("duplicates=1");
        }
        if self.keys == Sort::Reverse {
            out.push("reversekey=1");
        }
        if self.dups.is_some() {
            out.push("dupsort=1");
        }
        if matches!(self.keys, Sort::U32 | Sort::U64) {
            out.push("integerkey=1");
        }
        if let Some((vals, fixed)) = self.dups {
            if fixed {
                out.push("dupfixed=1");
            }
            if matches!(vals, Sort::U32 | Sort::U64) {
                out.push("integerdup=1");
            }
            if vals == Sort::Reverse {
                out.push("reversedup=1");
            }
        }
        out
    }

    fn options(&self) -> DbOptions {
        let mut o = DbOptions::new().key_order(self.keys.key_order());
        if let Some((vals, fixed)) = self.dups {
            o = o.dup_sort(vals.key_order());
            if fixed {
                o = o.dup_fixed();
            }
        }
        o
    }

    /// Sorts and dedups `pairs` as the database keeps them.
    fn new(
        name: &'static str,
        keys: Sort,
        dups: Option<(Sort, bool)>,
        mut pairs: Vec<(Vec<u8>, Vec<u8>)>,
    ) -> FlagDb {
        let vals = dups.map(|d| d.0);
        let order = |a: &(Vec<u8>, Vec<u8>), b: &(Vec<u8>, Vec<u8>)| {
            keys.cmp(&a.0, &b.0)
                .then_with(|| vals.map_or(std::cmp::Ordering::Equal, |v| v.cmp(&a.1, &b.1)))
        };
        pairs.sort_by(order);
        let before = pairs.len();
        pairs.dedup_by(|b, a| order(a, b).is_eq());
        // A unique key with two values would leave the model ambiguous.
        assert!(
            dups.is_some() || pairs.len() == before,
            "{name}: a key twice"
        );
        FlagDb {
            name,
            keys,
            dups,
            pairs,
        }
    }
}

/// `n` distinct keys of `keys`, each with 1 to `per_key` values of
/// `vals` (one random size a key if `fixed`), and `heavy.0` more keys with
/// `heavy.1` values each.
fn dup_pairs(
    rng: &mut Rng,
    keys: Sort,
    vals: Sort,
    fixed: bool,
    n: usize,
    per_key: usize,
    heavy: (usize, usize),
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for i in 0..n + heavy.0 {
        let k = loop {
            let k = keys.random(rng, 24);
            if seen.insert(k.clone()) {
                break k;
            }
        };
        let count = if i < heavy.0 {
            heavy.1
        } else {
            1 + rng.below(per_key)
        };
        // DUPFIXED: one size a key; other values: mostly short, some of
        // hundreds of bytes (LMDB's values of a DUPSORT key are at most
        // 511 bytes).
        let size = 1 + rng.below(16);
        for _ in 0..count {
            let v = match vals {
                Sort::Bytes | Sort::Reverse if fixed => rng.bytes(size, false),
                Sort::Bytes | Sort::Reverse if rng.below(20) == 0 => {
                    let len = 100 + rng.below(400);
                    rng.bytes(len, false)
                }
                _ => vals.random(rng, 40),
            };
            out.push((k.clone(), v));
        }
    }
    out
}

/// `n` distinct `keys` with values of up to 60 bytes (some 10 KB).
fn unique_pairs(rng: &mut Rng, keys: Sort, n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = BTreeMap::new();
    while out.len() < n {
        let k = keys.random(rng, 40);
        let len = if rng.below(20) == 0 {
            10_240
        } else {
            rng.below(60)
        };
        out.insert(k, rng.bytes(len, false));
    }
    out.into_iter().collect()
}

/// One database of each flag combination (names in bytewise order, as
/// both `mdb_dump -a` and `sarsen dump -a` list them). LMDB 0.9.24 drops or
/// refuses an empty value in a DUPSORT database, so no value is empty.
fn flag_dbs() -> Vec<FlagDb> {
    let mut rng = Rng(0x5eed_0004);
    let r = &mut rng;
    // Keys that end one another (the shorter first), and the extremes of
    // integer keys, with the random ones.
    let with = |mut pairs: Vec<(Vec<u8>, Vec<u8>)>, keys: &[&[u8]]| {
        pairs.retain(|(k, _)| !keys.contains(&&k[..]));
        pairs.extend(keys.iter().map(|k| (k.to_vec(), k.to_vec())));
        pairs
    };
    let revkey = with(
        unique_pairs(r, Sort::Reverse, 300),
        &[b"a", b"ba", b"cba", b"\x00a", b"a\x00"],
    );
    let int32 = with(
        unique_pairs(r, Sort::U32, 300),
        &[&0u32.to_ne_bytes(), &u32::MAX.to_ne_bytes()],
    );
    let int64 = with(
        unique_pairs(r, Sort::U64, 300),
        &[&0u64.to_ne_bytes(), &u64::MAX.to_ne_bytes()],
    );
    let mut revdup = dup_pairs(r, Sort::Bytes, Sort::Reverse, false, 40, 20, (2, 300));
    for v in [&b"z"[..], b"yz", b"xyz", b"\xffz"] {
        revdup.push((b"suffixes".to_vec(), v.to_vec()));
    }
    let dbs = vec![
        FlagDb::new(
            "dupfixed",
            Sort::Bytes,
            Some((Sort::Bytes, true)),
            dup_pairs(r, Sort::Bytes, Sort::Bytes, true, 30, 40, (2, 900)),
        ),
        FlagDb::new(
            "dups",
            Sort::Bytes,
            Some((Sort::Bytes, false)),
            dup_pairs(r, Sort::Bytes, Sort::Bytes, false, 60, 12, (3, 600)),
        ),
        FlagDb::new(
            "fixed_u32",
            Sort::Bytes,
            Some((Sort::U32, true)),
            dup_pairs(r, Sort::Bytes, Sort::U32, true, 40, 30, (2, 1500)),
        ),
        FlagDb::new(
            "intdup_u32",
            Sort::Bytes,
            Some((Sort::U32, false)),
            dup_pairs(r, Sort::Bytes, Sort::U32, false, 20, 30, (1, 400)),
        ),
        FlagDb::new(
            "intkey_fixed_u64",
            Sort::U64,
            Some((Sort::U64, true)),
            dup_pairs(r, Sort::U64, Sort::U64, true, 40, 30, (2, 700)),
        ),
        FlagDb::new("intkey_u32", Sort::U32, None, int32),
        FlagDb::new("intkey_u64", Sort::U64, None, int64),
        FlagDb::new("revdup", Sort::Bytes, Some((Sort::Reverse, false)), revdup),
        FlagDb::new("revkey", Sort::Reverse, None, revkey),
    ];
    // Every DUPSORT database has a key with hundreds of values (a
    // sub-tree in both engines).
    for d in dbs.iter().filter(|d| d.dups.is_some()) {
        let most = d
            .pairs
            .chunk_by(|a, b| a.0 == b.0)
            .map(<[_]>::len)
            .max()
            .unwrap();
        assert!(most >= 250, "{}: at most {most} values a key", d.name);
    }
    dbs
}

/// Writes `dbs` into a new Sarsen environment at `dir` (4 KiB pages, as
/// LMDB's here), pairs in a shuffled order; `main` goes into the main
/// database instead of a named one.
fn build_flag_dbs(dir: &Path, dbs: &[FlagDb], main: bool) {
    // SAFETY: the test's own temporary directory; nothing else maps it.
    let env: Env = unsafe { EnvOptions::new().page_size(4096).max_dbs(20).open(dir) }.unwrap();
    let mut w = env.write_txn().unwrap();
    let mut rng = Rng(0x5eed_0005);
    for d in dbs {
        let name = (!main).then_some(d.name);
        let db = w.create_db_with(name, &d.options()).unwrap();
        let mut pairs = d.pairs.clone();
        for i in (1..pairs.len()).rev() {
            pairs.swap(i, rng.below(i + 1));
        }
        for (k, v) in &pairs {
            w.put(db, k, v).unwrap();
        }
    }
    w.commit().unwrap();
}

/// Checks the Sarsen environment at `dir` against `dbs`: each database's
/// key order, duplicate mode and every pair in order (`main`: the one of
/// `dbs` is the main database, and no named one exists).
fn assert_flag_dbs(dir: &Path, dbs: &[FlagDb], main: bool) {
    // SAFETY: as in `build_flag_dbs`.
    let env: Env = unsafe { EnvOptions::new().read_only(true).max_dbs(20).open(dir) }.unwrap();
    let r = env.read_txn().unwrap();
    let names: Vec<String> = dbs.iter().map(|d| d.name.to_owned()).collect();
    assert_eq!(r.list_dbs().unwrap(), if main { vec![] } else { names });
    for d in dbs {
        let name = (!main).then_some(d.name);
        let db = r.open_db(name).unwrap().unwrap();
        let order = r.key_order(db).unwrap();
        assert_eq!(
            format!("{order:?}"),
            format!("{:?}", d.keys.key_order()),
            "{}",
            d.name
        );
        let mode = r.dup_mode(db).unwrap();
        let mode = mode.map(|m| (format!("{:?}", m.order), m.fixed));
        let want = d.dups.map(|(o, f)| (format!("{:?}", o.key_order()), f));
        assert_eq!(mode, want, "{}", d.name);
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = r
            .iter(db)
            .unwrap()
            .map(|e| {
                let (k, v) = e.unwrap();
                (k.to_vec(), v.to_vec())
            })
            .collect();
        assert!(pairs == d.pairs, "{}: pairs differ from the model", d.name);
    }
}

/// A dump section as a test reads it: database name, header lines from
/// `type=btree` to `HEADER=END` (exclusive), and the pairs.
type Section = (Option<String>, Vec<String>, Vec<(Vec<u8>, Vec<u8>)>);

/// Parses a bytevalue dump.
fn sections(text: &[u8]) -> Vec<Section> {
    let text = std::str::from_utf8(text).unwrap();
    let unhex = |l: &str| -> Vec<u8> {
        let l = l.strip_prefix(' ').unwrap();
        (0..l.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&l[i..i + 2], 16).unwrap())
            .collect()
    };
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(first) = lines.next() {
        assert_eq!(first, "VERSION=3");
        let (mut name, mut head) = (None, Vec::new());
        for l in lines.by_ref() {
            if l == "HEADER=END" {
                break;
            }
            if let Some(n) = l.strip_prefix("database=") {
                name = Some(n.to_owned());
            } else if l != "format=bytevalue" {
                head.push(l.to_owned());
            }
        }
        let mut pairs = Vec::new();
        loop {
            let k = lines.next().unwrap();
            if k == "DATA=END" {
                break;
            }
            pairs.push((unhex(k), unhex(lines.next().unwrap())));
        }
        out.push((name, head, pairs));
    }
    out
}

/// Checks a dump against `dbs`: one section each, in order, with the flag
/// lines mdb_dump writes and the model's pairs.
fn assert_dump_matches(text: &[u8], dbs: &[FlagDb], main: bool) {
    let secs = sections(text);
    assert_eq!(secs.len(), dbs.len());
    for (d, (name, head, pairs)) in dbs.iter().zip(secs) {
        assert_eq!(name.as_deref(), (!main).then_some(d.name));
        // type, mapsize, maxreaders, the flags, db_pagesize.
        let flags: Vec<&str> = head[3..head.len() - 1].iter().map(|l| &l[..]).collect();
        assert_eq!(flags, d.flag_lines(), "{}", d.name);
        assert!(pairs == d.pairs, "{}: dumped pairs differ", d.name);
    }
}

/// The header lines Sarsen writes for a new environment's map size and
/// readers (`mapsize=…\nmaxreaders=…\n`), for LMDB databases made to
/// dump the same.
fn sarsen_geometry(tmp: &Path) -> String {
    let dir = tmp.join("geometry");
    sarsen_ok(&["load", s(&dir)], b"");
    let text = String::from_utf8(sarsen_ok(&["dump", s(&dir)], b"")).unwrap();
    text.lines()
        .filter(|l| l.starts_with("mapsize=") || l.starts_with("maxreaders="))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// A bytevalue dump of `dbs` as mdb_load reads it (pairs in order; `main`:
/// no `database=` lines), with `geometry` after `type=btree`.
fn flag_dump(dbs: &[FlagDb], main: bool, geometry: &str) -> Vec<u8> {
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let mut t = String::new();
    for d in dbs {
        t.push_str("VERSION=3\nformat=bytevalue\n");
        if !main {
            t.push_str(&format!("database={}\n", d.name));
        }
        t.push_str("type=btree\n");
        t.push_str(geometry);
        for l in d.flag_lines() {
            t.push_str(&format!("{l}\n"));
        }
        t.push_str("HEADER=END\n");
        for (k, v) in &d.pairs {
            t.push_str(&format!(" {}\n {}\n", hex(k), hex(v)));
        }
        t.push_str("DATA=END\n");
    }
    t.into_bytes()
}

#[test]
fn flag_databases_round_trip_through_sarsen() {
    let tmp = tempfile::tempdir().unwrap();
    let mut dbs = flag_dbs();
    // Sarsen keeps an empty value in a DUPSORT database.
    assert_eq!(dbs[1].name, "dups");
    dbs[1].pairs.insert(0, (vec![], vec![]));
    dbs[1].pairs.insert(1, (vec![], vec![0]));
    let src = tmp.path().join("src");
    build_flag_dbs(&src, &dbs, false);
    assert_flag_dbs(&src, &dbs, false);
    for (i, format) in [&[][..], &["-p"][..]].into_iter().enumerate() {
        let dump = |dir: &Path| sarsen_ok(&[&["dump", "-a", s(dir)][..], format].concat(), b"");
        let text = dump(&src);
        if format.is_empty() {
            assert_dump_matches(&text, &dbs, false);
        }
        let dst = tmp.path().join(format!("dst{i}"));
        sarsen_ok(&["load", "--commit-every", "100", s(&dst)], &text);
        assert_flag_dbs(&dst, &dbs, false);
        assert!(dump(&dst) == text, "the second dump differs");
    }
    // Into the main database, which takes the modes while it is empty.
    for d in &dbs {
        let text = sarsen_ok(&["dump", "-s", d.name, s(&src)], b"");
        let dst = tmp.path().join(format!("main_{}", d.name));
        let unnamed = String::from_utf8(text.clone()).unwrap().replacen(
            &format!("database={}\n", d.name),
            "",
            1,
        );
        sarsen_ok(&["load", s(&dst)], unnamed.as_bytes());
        let main = sarsen_ok(&["dump", s(&dst)], b"");
        assert_dump_matches(&main, std::slice::from_ref(d), true);
        assert_flag_dbs(&dst, std::slice::from_ref(d), true);
        // -s NAME puts the section into NAME, whatever the header says.
        sarsen_ok(&["load", "-s", d.name, s(&dst)], &main);
        let back = sarsen_ok(&["dump", "-s", d.name, s(&dst)], b"");
        assert!(back == text, "{}: the dump of -s differs", d.name);
    }
}

/// Asserts two dumps are the same bytes, showing the first line that differs.
fn assert_same_dump(ours: &[u8], theirs: &[u8], what: &str) {
    if ours == theirs {
        return;
    }
    let (a, b) = (
        String::from_utf8_lossy(ours),
        String::from_utf8_lossy(theirs),
    );
    let at = a.lines().zip(b.lines()).position(|(x, y)| x != y);
    let line = at.unwrap_or(a.lines().count().min(b.lines().count()));
    panic!(
        "{what}: dumps differ at line {}: sarsen {:?}, LMDB {:?} ({} and {} lines)",
        line + 1,
        a.lines().nth(line),
        b.lines().nth(line),
        a.lines().count(),
        b.lines().count()
    );
}

#[test]
fn flag_databases_round_trip_with_lmdb() {
    if !have_lmdb_tools() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dbs = flag_dbs();
    // LMDB databases get Sarsen's map size and readers, so that the two
    // dumps agree to the byte (mdb_load keeps them; sarsen load does not).
    let geometry = sarsen_geometry(tmp.path());
    let dir = |name: &str| {
        let d = tmp.path().join(name);
        std::fs::create_dir(&d).unwrap();
        d
    };

    // LMDB first: mdb_load makes the databases, and mdb_dump -a writes
    // them as the model says (LMDB sorts as the model does).
    let lmdb = dir("lmdb");
    ok("mdb_load", &[s(&lmdb)], &flag_dump(&dbs, false, &geometry));
    let theirs = ok("mdb_dump", &["-a", s(&lmdb)], b"");
    assert_dump_matches(&theirs, &dbs, false);
    let dst = tmp.path().join("from_lmdb");
    sarsen_ok(&["load", s(&dst)], &theirs);
    assert_flag_dbs(&dst, &dbs, false);
    let ours = sarsen_ok(&["dump", "-a", s(&dst)], b"");
    assert_same_dump(&ours, &theirs, "LMDB, mdb_dump, sarsen load, sarsen dump");

    // Sarsen first: the same databases dump as LMDB's did, and mdb_load
    // then mdb_dump give back the same text.
    let src = tmp.path().join("src");
    build_flag_dbs(&src, &dbs, false);
    let ours = sarsen_ok(&["dump", "-a", s(&src)], b"");
    assert_same_dump(&ours, &theirs, "the dumps of Sarsen's and LMDB's databases");
    let lmdb = dir("lmdb_back");
    ok("mdb_load", &[s(&lmdb)], &ours);
    let back = ok("mdb_dump", &["-a", s(&lmdb)], b"");
    assert_same_dump(&ours, &back, "Sarsen, sarsen dump, mdb_load, mdb_dump");

    // Each mode in the main database, both ways.
    for d in &dbs {
        let one = std::slice::from_ref(d);
        let lmdb = dir(&format!("lmdb_main_{}", d.name));
        ok("mdb_load", &[s(&lmdb)], &flag_dump(one, true, &geometry));
        let theirs = ok("mdb_dump", &[s(&lmdb)], b"");
        assert_dump_matches(&theirs, one, true);
        let dst = tmp.path().join(format!("main_from_lmdb_{}", d.name));
        sarsen_ok(&["load", s(&dst)], &theirs);
        assert_flag_dbs(&dst, one, true);
        let ours = sarsen_ok(&["dump", s(&dst)], b"");
        assert_same_dump(&ours, &theirs, d.name);

        let src = tmp.path().join(format!("main_src_{}", d.name));
        build_flag_dbs(&src, one, true);
        let ours = sarsen_ok(&["dump", s(&src)], b"");
        assert_same_dump(&ours, &theirs, d.name);
        let lmdb = dir(&format!("lmdb_main_back_{}", d.name));
        ok("mdb_load", &[s(&lmdb)], &ours);
        let back = ok("mdb_dump", &[s(&lmdb)], b"");
        assert_same_dump(&ours, &back, d.name);
    }
}

/// A hand-written section: `name` (or the main database), header lines
/// `flags`, then `data` (bytevalue pair lines).
fn section(name: Option<&str>, flags: &str, data: &str) -> Vec<u8> {
    let db = name.map_or(String::new(), |n| format!("database={n}\n"));
    format!("VERSION=3\n{db}{flags}HEADER=END\n{data}DATA=END\n").into_bytes()
}

/// Runs `sarsen load` into `dir` and asserts exit code 2 with `msgs` in
/// the message.
fn load_fails(dir: &Path, text: &[u8], msgs: &[&str]) {
    let o = sarsen(&["load", s(dir)], text);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    for m in msgs {
        assert!(e.contains(m), "{m:?} not in: {e}");
    }
}

#[test]
fn flags_the_data_or_the_database_do_not_fit_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("db");
    let ik = "integerkey=1\n";
    let idup = "dupsort=1\nintegerdup=1\n";
    let (u4, u8_) = ("01000000", "0100000000000000");

    // Integer sizes: the first key (value) 4 or 8 bytes, the rest alike.
    let cases: [(&str, String, &[&str]); 4] = [
        (ik, " 0102030405\n 00\n".into(), &["line 4: the main database: integerkey=1 but the first key is 5 bytes"]),
        (ik, format!(" {u4}\n 00\n {u8_}\n 00\n"), &["line 6: the main database: integerkey=1: a key of 8 bytes after a first key of 4"]),
        (idup, " 6b\n 010203\n".into(), &["line 6: the main database: integerdup=1 but the first value is 3 bytes"]),
        (idup, format!(" 6b\n {u8_}\n 6b\n {u4}\n"), &["line 8: the main database: integerdup=1: a value of 4 bytes after a first value of 8"]),
    ];
    for (flags, data, msgs) in cases {
        load_fails(&dst, &section(None, flags, &data), msgs);
    }
    // Nothing was loaded, and the main database took no mode.
    assert_flag_dbs(&dst, &[FlagDb::new("", Sort::Bytes, None, vec![])], true);

    // An existing database must have the header's modes.
    let plain = section(Some("p"), "", " 6b\n 00\n");
    let dups = section(Some("d"), "dupsort=1\n", " 6b\n 01\n 6b\n 02\n");
    let ints = section(Some("i"), ik, &format!(" {u4}\n 00\n"));
    sarsen_ok(&["load", s(&dst)], &[&plain[..], &dups, &ints].concat());
    let hint = "load it into another database (-s NAME) or drop it first";
    let mismatches: [(Vec<u8>, &str); 6] = [
        (
            section(Some("p"), "dupsort=1\n", ""),
            "line 2: database \"p\": exists with duplicate mode unique keys, but the header asks for DUPSORT",
        ),
        (
            section(Some("d"), "", " 6b\n 03\n"),
            "line 2: database \"d\": exists with sorted duplicates (DUPSORT), but the header has no dupsort=1",
        ),
        (
            section(Some("d"), "dupsort=1\nreversedup=1\n", ""),
            "line 2: database \"d\": exists with duplicate mode DUPSORT (values bytewise), but the header asks for DUPSORT (values reverse",
        ),
        (
            section(Some("p"), ik, &format!(" {u4}\n 00\n")),
            "line 2: database \"p\": exists with key order bytewise, but the header asks for u32",
        ),
        (
            section(Some("i"), ik, &format!(" {u8_}\n 00\n")),
            "line 2: database \"i\": exists with key order u32 integer keys, but the header asks for u64",
        ),
        (
            section(Some("i"), "", " 00\n 00\n"),
            "line 2: database \"i\": exists with key order u32 integer keys, but the header asks for bytewise",
        ),
    ];
    for (text, msg) in &mismatches {
        load_fails(&dst, text, &[msg, hint]);
    }
    // -s NAME checks the database it names.
    let o = sarsen(&["load", "-s", "p", s(&dst)], &dups);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("database \"p\": exists with duplicate mode"));

    // An empty integer section takes an existing database's size, or 8.
    sarsen_ok(&["load", s(&dst)], &section(Some("i"), ik, ""));
    sarsen_ok(
        &["load", s(&dst)],
        &section(Some("e"), &format!("{ik}{idup}"), ""),
    );
    let p = |pairs: &[(&[u8], &[u8])]| {
        pairs
            .iter()
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
            .collect::<Vec<_>>()
    };
    let one = 1u32.to_ne_bytes();
    let want = [
        FlagDb::new(
            "d",
            Sort::Bytes,
            Some((Sort::Bytes, false)),
            p(&[(b"k", &[1]), (b"k", &[2])]),
        ),
        FlagDb::new("e", Sort::U64, Some((Sort::U64, false)), vec![]),
        FlagDb::new("i", Sort::U32, None, p(&[(&one, &[0])])),
        FlagDb::new("p", Sort::Bytes, None, p(&[(b"k", &[0])])),
    ];
    assert_flag_dbs(&dst, &want, false);
}

#[test]
fn no_overwrite_refuses_a_present_pair_of_a_dupsort_database_with_exit_1() {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("db");
    let d = |data: &str| section(Some("d"), "dupsort=1\n", data);
    sarsen_ok(&["load", s(&dst)], &d(" 6b\n 01\n 6b\n 02\n"));
    // A new value of a present key is no conflict; a present pair is, and
    // nothing of its section is loaded.
    let o = sarsen(&["load", "-n", s(&dst)], &d(" 6b\n 03\n 6b\n 01\n"));
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("line 7: key \"k\" with value \"\\01\" already exists in database \"d\""),
        "{e}"
    );
    let twice = d(" 6a\n 01\n 6a\n 01\n");
    assert_eq!(
        sarsen(&["load", "-n", s(&dst)], &twice).status.code(),
        Some(1)
    );
    sarsen_ok(&["load", "-n", s(&dst)], &d(" 6b\n 03\n"));
    // Without -n a present pair is left as it is.
    sarsen_ok(&["load", s(&dst)], &d(" 6b\n 01\n 6a\n 00\n"));
    let pairs = [(b"j", 0), (b"k", 1), (b"k", 2), (b"k", 3)]
        .map(|(k, v)| (k.to_vec(), vec![v]))
        .to_vec();
    let want = FlagDb::new("d", Sort::Bytes, Some((Sort::Bytes, false)), pairs);
    assert_flag_dbs(&dst, &[want], false);
}
