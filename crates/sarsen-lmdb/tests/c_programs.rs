//! LMDB's own test programs (`mtest*.c`, from the LMDB source the
//! `lmdb-master-sys` crate brings into the cargo registry) and our abuse
//! program, compiled unchanged against `include/lmdb.h` with `cc`, linked
//! to the `liblmdb.so` cargo built for this test run, and run in a
//! temporary directory. Skipped (with a message) when `cc` or the LMDB
//! source is missing.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{lib_dir, lmdb_src};

fn have_cc() -> bool {
    Command::new("cc").arg("--version").output().is_ok()
}

/// Compiles `src` against our header and library into `out`.
fn compile(src: &Path, out: &Path) {
    let inc = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let lib = lib_dir();
    let o = Command::new("cc")
        .arg("-o")
        .arg(out)
        .arg(src)
        .arg("-I")
        .arg(&inc)
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-llmdb", "-lpthread", "-ldl", "-lm"])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "cc {} failed:\n{}",
        src.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Runs `exe` with `args` in `dir`; asserts exit 0; returns its stdout.
fn sh(dir: &Path, exe: &Path, args: &[&str]) -> Vec<u8> {
    let o = Command::new(exe)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{} {args:?} exited with {:?}\nstderr:\n{}",
        exe.display(),
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// Compiles and runs `src` in a fresh directory holding an empty `testdb`
/// (and `testdb2`); asserts it exits 0.
fn run(src: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("prog");
    compile(src, &exe);
    std::fs::create_dir(dir.path().join("testdb")).unwrap();
    std::fs::create_dir(dir.path().join("testdb2")).unwrap();
    let o = Command::new(&exe).current_dir(dir.path()).output().unwrap();
    assert!(
        o.status.success(),
        "{} exited with {:?}\nstdout:\n{}\nstderr:\n{}",
        src.display(),
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn mtest(name: &str) {
    if !have_cc() {
        common::skip(&format!("skipping {name}: no C compiler (cc)"));
        return;
    }
    let Some(src) = lmdb_src() else {
        common::skip(&format!(
            "skipping {name}: LMDB's sources (lmdb-master-sys) are not in the cargo registry"
        ));
        return;
    };
    run(&src.join(name));
}

#[test]
fn mtest_c() {
    mtest("mtest.c");
}

#[test]
fn mtest2_c() {
    mtest("mtest2.c");
}

#[test]
fn mtest3_c() {
    mtest("mtest3.c");
}

#[test]
fn mtest4_c() {
    mtest("mtest4.c");
}

#[test]
fn mtest5_c() {
    mtest("mtest5.c");
}

/// LMDB's `mtest.c` (a 10 MiB map) with 2 GiB of address space
/// (`ulimit -v`): too little for Sarsen's default 1 TiB reservation, so
/// `mdb_env_open` falls back to the map size the program set; it must run
/// as it runs on real LMDB under the same limit.
#[test]
fn mtest_c_with_little_address_space() {
    if !have_cc() {
        common::skip("skipping mtest.c under ulimit -v: no C compiler (cc)");
        return;
    }
    let Some(src) = lmdb_src() else {
        common::skip(
            "skipping mtest.c under ulimit -v: LMDB's sources are not in the cargo registry",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (real, ours) = build_both(&src.join("mtest.c"), &src, d);
    for exe in [&real, &ours] {
        let db = d.join("testdb");
        let _ = std::fs::remove_dir_all(&db);
        std::fs::create_dir(&db).unwrap();
        let o = Command::new("sh")
            .arg("-c")
            .arg("ulimit -v 2097152 && exec \"$0\"")
            .arg(exe)
            .current_dir(d)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{} under ulimit -v 2 GiB: {:?}\n{}",
            exe.display(),
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
fn readme_example_c() {
    if !have_cc() {
        common::skip("skipping example.c: no C compiler (cc)");
        return;
    }
    run(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/example.c"));
}

#[test]
fn abuse_c() {
    if !have_cc() {
        common::skip("skipping abuse.c: no C compiler (cc)");
        return;
    }
    run(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/abuse.c"));
}

/// LMDB's tools `mdb_stat`, `mdb_dump`, `mdb_load`, `mdb_copy` and
/// `mdb_drop`, compiled unchanged, on databases written by `mtest.c`
/// (main database) and `mtest3.c` (a DUPSORT named database): each exits
/// 0, and dump | load | dump gives the first dump back, by name (`-s`) and
/// of every database (`-a`).
#[test]
fn lmdb_tools() {
    if !have_cc() {
        common::skip("skipping the LMDB tools: no C compiler (cc)");
        return;
    }
    let Some(src) = lmdb_src() else {
        common::skip("skipping the LMDB tools: LMDB's sources are not in the cargo registry");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let tool = |name: &str| {
        let exe = d.join(name);
        compile(&src.join(format!("{name}.c")), &exe);
        exe
    };
    let (mtest, mtest3) = (tool("mtest"), tool("mtest3"));
    let (stat, dump, load, copy, drop) = (
        tool("mdb_stat"),
        tool("mdb_dump"),
        tool("mdb_load"),
        tool("mdb_copy"),
        tool("mdb_drop"),
    );
    std::fs::create_dir(d.join("testdb")).unwrap();
    sh(d, &mtest, &[]);
    let st = String::from_utf8(sh(d, &stat, &["-e", "testdb"])).unwrap();
    assert!(st.contains("Entries:"), "{st}");
    // Round trip of the main database.
    let d1 = sh(d, &dump, &["testdb"]);
    std::fs::write(d.join("d1"), &d1).unwrap();
    std::fs::create_dir(d.join("loaded")).unwrap();
    sh(d, &load, &["-f", "d1", "loaded"]);
    assert_eq!(sh(d, &dump, &["loaded"]), d1);
    // Copies, plain and compacting.
    sh(d, &copy, &["testdb", "copy"]);
    assert_eq!(sh(d, &dump, &["copy"]), d1);
    sh(d, &copy, &["-c", "testdb", "copyc"]);
    assert_eq!(sh(d, &dump, &["copyc"]), d1);
    // To stdout (mdb_env_copyfd): a single data file, read with -n.
    let file = sh(d, &copy, &["testdb"]);
    std::fs::write(d.join("copy.sdb"), file).unwrap();
    assert_eq!(sh(d, &dump, &["-n", "copy.sdb"]), d1);
    // Drop empties the main database.
    sh(d, &drop, &["loaded"]);
    let st = String::from_utf8(sh(d, &stat, &["loaded"])).unwrap();
    assert!(st.contains("Entries: 0"), "{st}");
    // A DUPSORT named database, by name.
    let d3 = d.join("t3");
    std::fs::create_dir_all(d3.join("testdb")).unwrap();
    sh(&d3, &mtest3, &[]);
    let a = sh(&d3, &dump, &["-s", "id2", "testdb"]);
    assert!(String::from_utf8_lossy(&a).contains("dupsort=1"));
    std::fs::write(d3.join("a"), &a).unwrap();
    std::fs::create_dir(d3.join("loaded")).unwrap();
    sh(&d3, &load, &["-f", "a", "-s", "id2", "loaded"]);
    assert_eq!(sh(&d3, &dump, &["-s", "id2", "loaded"]), a);
    sh(&d3, &drop, &["-d", "-s", "id2", "loaded"]);
    // Every database (-a): the tools find the named ones as keys of the
    // main database.
    let all = sh(&d3, &dump, &["-a", "testdb"]);
    assert!(String::from_utf8_lossy(&all).contains("database=id2"));
    std::fs::write(d3.join("all"), &all).unwrap();
    std::fs::create_dir(d3.join("loaded_all")).unwrap();
    sh(&d3, &load, &["-f", "all", "loaded_all"]);
    assert_eq!(sh(&d3, &dump, &["-a", "loaded_all"]), all);
    let st = String::from_utf8(sh(&d3, &stat, &["-a", "loaded_all"])).unwrap();
    assert!(st.contains("Status of id2"), "{st}");
}

/// Builds C program `prog` twice in `d`: against real LMDB (compiled from
/// the registry's `mdb.c`/`midl.c` in `src`) and against our library.
/// Returns (LMDB's, ours).
fn build_both(prog: &Path, src: &Path, d: &Path) -> (PathBuf, PathBuf) {
    let name = prog.file_stem().unwrap().to_string_lossy().into_owned();
    let ours = d.join(format!("{name}_sarsen"));
    compile(prog, &ours);
    let real = d.join(format!("{name}_lmdb"));
    let o = Command::new("cc")
        .arg("-O1")
        .arg("-o")
        .arg(&real)
        .arg(prog)
        .arg(src.join("mdb.c"))
        .arg(src.join("midl.c"))
        .arg("-I")
        .arg(src)
        .arg("-lpthread")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "building {name} with LMDB failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    (real, ours)
}

/// Builds C program `tests/c/<name>` against real LMDB and against our
/// library, runs both in a fresh directory holding an empty `testdb` (and
/// no `testdb2`, which a program may make), and
/// asserts their outputs are equal; returns LMDB's. `None` (with a
/// message) without `cc` or LMDB's sources.
fn same_as_lmdb(name: &str) -> Option<String> {
    if !have_cc() {
        common::skip(&format!("skipping {name}: no C compiler (cc)"));
        return None;
    }
    let Some(src) = lmdb_src() else {
        common::skip(&format!(
            "skipping {name}: LMDB's sources are not in the cargo registry"
        ));
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let prog = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(name);
    let (real, ours) = build_both(&prog, &src, d);
    let run = |exe: &Path| {
        let db = d.join("testdb");
        let _ = std::fs::remove_dir_all(&db);
        let _ = std::fs::remove_dir_all(d.join("testdb2"));
        std::fs::create_dir(&db).unwrap();
        String::from_utf8(sh(d, exe, &[])).unwrap()
    };
    let (l, s) = (run(&real), run(&ours));
    if l != s {
        let diff: Vec<String> = l
            .lines()
            .zip(s.lines())
            .filter(|(a, b)| a != b)
            .map(|(a, b)| format!("LMDB:   {a}\nSarsen: {b}"))
            .collect();
        panic!(
            "{name} differs:\n{}\n\nLMDB's whole output:\n{l}",
            diff.join("\n")
        );
    }
    Some(l)
}

/// `tests/c/named.c`: named databases seen through the main database
/// (cursor walks, `mdb_get`, counts, writes of a name's key, a plain key
/// opened as a database, nested, dropped and aborted creations), built
/// against real LMDB and against our library: the outputs must be equal.
#[test]
fn named_databases_in_main_as_lmdb() {
    if let Some(l) = same_as_lmdb("named.c") {
        assert!(
            l.contains("committed fwd: a/1 b/48 m/1 n/48 z/1 zz/48 zzz/1"),
            "{l}"
        );
    }
}

/// `tests/c/cmp.c`: `mdb_set_compare` on a named and on the main database,
/// `mdb_set_dupsort`, across a reopen, built against real LMDB and against
/// our library: the outputs must be equal.
#[test]
fn comparison_functions_as_lmdb() {
    if let Some(l) = same_as_lmdb("cmp.c") {
        assert!(l.contains("nums: 1=v 7=v 9=v 10=v 25=v 100=v 300=v"), "{l}");
    }
}

/// `tests/c/prevmulti.c`: `MDB_PREV_MULTIPLE` on a DUPFIXED database (its
/// checks, an unset cursor, keys with one value, a page of values and many
/// pages, backward sweeps, where the cursor stands after), in a write and
/// a read transaction, built against real LMDB and against our library:
/// the outputs (what does not depend on which values share a page) must
/// be equal.
#[test]
fn prev_multiple_as_lmdb() {
    if let Some(l) = same_as_lmdb("prevmulti.c") {
        assert!(
            l.contains("end rc=-30798 some=1 contiguous=1 down to first=1"),
            "{l}"
        );
    }
}

/// `tests/c/envfd.c`: `mdb_env_get_fd` (before open, the data file itself,
/// its access mode, the same descriptor each call, closed with the
/// environment, read-only in a read-only environment) and
/// `mdb_env_copyfd`/`mdb_env_copyfd2` (at the descriptor's offset, to a
/// pipe, to a read-only descriptor, compacting; each copy read back), the
/// plain copies with no temporary directory to be had, built against real
/// LMDB and against our library: the outputs must be equal.
#[test]
fn env_fd_and_copies_to_a_descriptor_as_lmdb() {
    if let Some(l) = same_as_lmdb("envfd.c") {
        assert!(
            l.contains("get_fd: rc=0 same=1 data file=1 mode=rdwr"),
            "{l}"
        );
        assert!(l.contains("copyfd to a pipe: rc=0 child=0"), "{l}");
        assert!(l.contains("after close: fd closed"), "{l}");
    }
}

/// `tests/c/renew.c`: read transactions reset and renewed, cursors renewed
/// on them (what they see, and the calls refused: a renewal of a live or a
/// write transaction, a cursor renewed on a reset or a write one, reads of
/// a reset one), built against real LMDB and against our library: the
/// outputs must be equal.
#[test]
fn reset_and_renew_as_lmdb() {
    if let Some(l) = same_as_lmdb("renew.c") {
        assert!(l.contains("get late rc=-30798"), "{l}");
        assert!(l.contains("get late rc=0 v=x"), "{l}");
    }
}

/// `tests/c/diff.c`, a seeded random program over the API that prints
/// every call's outcome (puts with `NOOVERWRITE`/`NODUPDATA`, gets,
/// deletes with and without a value, cursor moves of every kind in read
/// and write transactions, cursor puts and deletes, counts, aborts, full
/// dumps and entry counts after each transaction, on a plain and a DUPSORT
/// database), built against real LMDB (compiled here from the registry's
/// `mdb.c`/`midl.c`) and against our library: the outputs must be equal.
/// `SARSEN_CAPI_DIFF_SEEDS` seeds (default 24) of 100 transactions.
#[test]
fn differential_against_lmdb() {
    if !have_cc() {
        common::skip("skipping the differential: no C compiler (cc)");
        return;
    }
    let Some(src) = lmdb_src() else {
        common::skip("skipping the differential: LMDB's sources are not in the cargo registry");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let prog = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/diff.c");
    let (real, ours) = build_both(&prog, &src, d);
    let seeds: u64 = std::env::var("SARSEN_CAPI_DIFF_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(24);
    for seed in 1..=seeds {
        let run = |exe: &Path| {
            let db = d.join("testdb");
            let _ = std::fs::remove_dir_all(&db);
            std::fs::create_dir(&db).unwrap();
            sh(d, exe, &[&seed.to_string(), "100"])
        };
        let (l, s) = (run(&real), run(&ours));
        if l != s {
            let (l, s) = (String::from_utf8_lossy(&l), String::from_utf8_lossy(&s));
            let line = l
                .lines()
                .zip(s.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            let from = line.saturating_sub(8);
            let ctx = |t: &str| t.lines().skip(from).take(10).collect::<Vec<_>>().join("\n");
            panic!(
                "seed {seed}: outputs differ at line {}\nLMDB:\n{}\nSarsen:\n{}",
                line + 1,
                ctx(&l),
                ctx(&s)
            );
        }
    }
}
