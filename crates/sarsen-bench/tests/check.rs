//! Tests of the harness itself, through its binary: `--check` on every built engine,
//! argument errors, the report's columns, JSON and output folder, thread lists,
//! `--use_existing_db`, and allocator preloading.

use std::path::Path;
use std::process::{Command, Output};

/// Every engine this test binary's features build.
fn built_engines() -> Vec<&'static str> {
    let mut v = vec!["sarsen", "lmdb"];
    for (on, name) in [
        (cfg!(feature = "libmdbx"), "libmdbx"),
        (cfg!(feature = "redb"), "redb"),
        (cfg!(feature = "fjall"), "fjall"),
        (cfg!(feature = "sled"), "sled"),
        (cfg!(feature = "rocksdb"), "rocksdb"),
        (cfg!(feature = "leveldb"), "leveldb"),
        (cfg!(feature = "bdb"), "bdb"),
        (cfg!(feature = "wiredtiger"), "wiredtiger"),
        (cfg!(feature = "sarsen-capi"), "sarsen-capi"),
    ] {
        if on {
            v.push(name);
        }
    }
    v
}

/// Builds Sarsen's `liblmdb.so` (crate `sarsen-lmdb`) beside the harness binary,
/// where the `sarsen-capi` engine looks for it (a no-op when up to date).
fn build_capi_library() {
    static BUILT: std::sync::Once = std::sync::Once::new();
    BUILT.call_once(|| {
        let bin = Path::new(env!("CARGO_BIN_EXE_sarsen-bench"));
        // <target>/<profile>/sarsen-bench
        let profile = bin.parent().expect("profile directory");
        let target = profile.parent().expect("target directory");
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "-p", "sarsen-lmdb"]);
        if profile.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let o = cmd
            .env("CARGO_TARGET_DIR", target)
            .output()
            .expect("run cargo");
        assert!(
            o.status.success(),
            "cargo build -p sarsen-lmdb failed:\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
    });
}

fn bench(args: &[&str], db: &Path) -> Output {
    if cfg!(feature = "sarsen-capi") {
        build_capi_library();
    }
    Command::new(env!("CARGO_BIN_EXE_sarsen-bench"))
        .args(args)
        .arg("--db")
        .arg(db)
        .output()
        .expect("run sarsen-bench")
}

fn ok(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "sarsen-bench failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn records(path: &Path) -> Vec<serde_json::Value> {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("json written"))
            .expect("valid json");
    doc["records"].as_array().expect("records").clone()
}

#[test]
fn check_passes_for_every_built_engine() {
    let db = tempfile::tempdir().expect("temp dir");
    let engines = built_engines();
    let out = bench(&["--check", "--engines", &engines.join(",")], db.path());
    let stdout = ok(&out);
    assert!(stdout.contains("check passed"), "{stdout}");
    for engine in &engines {
        for workload in [
            "fillseq",
            "fillrandom",
            "fillsync",
            "overwrite",
            "readrandom",
            "readseq",
            "readreverse",
            "readwhilewriting",
            "updaterandom",
            "deleterandom",
        ] {
            let line = format!("ok    {engine:<8} {workload}");
            assert!(stdout.contains(&line), "missing {line:?} in:\n{stdout}");
        }
    }
}

/// `--write_map false`: the same verification with Sarsen and LMDB writing
/// through `pwrite` (their default mode), their tables labelled `-pwrite`
/// and their configuration without a writable map.
#[test]
fn check_passes_without_write_map() {
    let db = tempfile::tempdir().expect("temp dir");
    let stdout = ok(&bench(
        &[
            "--check",
            "--engines",
            "sarsen,lmdb",
            "--write_map",
            "false",
        ],
        db.path(),
    ));
    assert!(stdout.contains("check passed"), "{stdout}");
    let dir = tempfile::tempdir().expect("temp dir");
    let json = db.path().join("pwrite.json");
    ok(&bench(
        &[
            "--num=2000",
            "--benchmarks=fillrandom,overwrite",
            "--engines=sarsen,lmdb",
            "--write_map=false",
            &format!("--json={}", json.display()),
        ],
        dir.path(),
    ));
    let recs = records(&json);
    assert_eq!(recs.len(), 4);
    for r in recs {
        let engine = r["engine"].as_str().expect("engine");
        assert_eq!(r["series"], format!("{engine}-pwrite"));
        let config = r["config"].as_str().expect("config");
        assert!(
            !config.contains("write_map(true)") && !config.contains("MDB_WRITEMAP"),
            "{config}"
        );
    }
}

/// `--wt_lsm`: the same verification on WiredTiger's LSM tree, and its tables
/// labelled `wiredtiger-lsm`; a B-tree database is not silently opened as an LSM
/// tree.
#[cfg(feature = "wiredtiger")]
#[test]
fn check_passes_for_wiredtiger_lsm() {
    let db = tempfile::tempdir().expect("temp dir");
    let stdout = ok(&bench(
        &["--check", "--engines", "wiredtiger", "--wt_lsm"],
        db.path(),
    ));
    assert!(stdout.contains("check passed"), "{stdout}");
    let dir = tempfile::tempdir().expect("temp dir");
    let json = db.path().join("lsm.json");
    let stdout = ok(&bench(
        &[
            "--num=2000",
            "--benchmarks=fillrandom,readrandom",
            "--engines=sarsen,wiredtiger",
            "--wt_lsm",
            &format!("--json={}", json.display()),
        ],
        dir.path(),
    ));
    assert!(stdout.contains("| wiredtiger-lsm |"), "{stdout}");
    for r in records(&json) {
        if r["engine"] == "wiredtiger" {
            assert_eq!(r["series"], "wiredtiger-lsm");
            let config = r["config"].as_str().expect("config");
            assert!(config.contains("lsm:bench"), "{config}");
        }
    }
    // The B-tree's database, reused with --wt_lsm, is refused with a reason.
    let out = bench(
        &[
            "--num=2000",
            "--benchmarks=fillrandom,readrandom",
            "--engines=wiredtiger",
        ],
        dir.path(),
    );
    ok(&out);
    let out = bench(
        &[
            "--num=2000",
            "--benchmarks=readrandom",
            "--engines=wiredtiger",
            "--use_existing_db",
            "--wt_lsm",
        ],
        dir.path(),
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("B-tree") && stderr.contains("--wt_lsm"),
        "{stderr}"
    );
}

#[test]
fn bad_flags_are_usage_errors_not_panics() {
    for args in [
        &["--num", "0"][..],
        &["--benchmarks", "nosuchworkload"],
        &["--engines", "nosuchengine"],
        &["--num", "1000000", "--key_size", "3"],
        &["--threads", "0"],
        &["--threads", "1,0"],
        &["--benchmarks", "mergerandom"],
        &["--sync", "maybe"],
        &["--malloc", "nosuchmalloc"],
        &["--read_batch", "0"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_sarsen-bench"))
            .args(args)
            .output()
            .expect("run sarsen-bench");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("error"), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[test]
fn report_has_every_column_and_json_and_out_folder() {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("out.json");
    let out_dir = dir.path().join("results");
    let out = bench(
        &[
            "--num=3000",
            "--benchmarks=readrandom,fillseq,readwhilewriting,fillsync,deleterandom",
            "--engines=sarsen,lmdb",
            "--threads=1,2",
            "--writes=100",
            &format!("--json={}", json.display()),
            &format!("--out={}", out_dir.display()),
        ],
        &dir.path().join("db"),
    );
    let stdout = ok(&out);
    for needle in [
        "## readrandom, 1 thread(s)",
        "## readrandom, 2 thread(s)",
        "## fillseq",
        "## readwhilewriting, 2 thread(s)",
        "## deleterandom, 1 thread(s)",
        "## fillsync, 1 thread(s)",
        "## fillsync, 2 thread(s)",
        "## fillsync against writer threads",
        "| commits/s |",
        "| scaling |",
        "ratio sarsen/lmdb",
        "found: sarsen 3000 of 3000",
        "| p99.9 us |",
        "| write amp |",
        "| total (MB) |",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
    // Single-writer engines run deleterandom once, not once per thread count.
    assert!(!stdout.contains("## deleterandom, 2 thread(s)"), "{stdout}");
    let recs = records(&json);
    // readrandom x2, fillseq, readwhilewriting x2, fillsync x2 (writer threads on
    // every engine), deleterandom: per engine.
    assert_eq!(recs.len(), 16, "{recs:#?}");
    for r in &recs {
        let w = r["workload"].as_str().expect("workload");
        let num = |f: &str| r[f].as_f64().unwrap_or_else(|| panic!("{w}: {f} in {r}"));
        assert!(num("ops_per_sec") > 0.0, "{r}");
        assert!(
            num("wall_s") > 0.0 && num("process_wall_s") >= num("wall_s"),
            "{r}"
        );
        assert!(
            num("peak_rss_bytes") > 0.0 && num("db_size_bytes") > 0.0,
            "{r}"
        );
        assert!(num("total_bytes") >= num("peak_rss_bytes"), "{r}");
        assert!(num("cpu_pct") > 0.0, "{r}");
        assert!(
            num("p50_us") <= num("p99_us") && num("p99_us") <= num("p999_us"),
            "{r}"
        );
        if w != "readrandom" {
            assert!(num("write_amp") > 0.0, "{w}: {r}");
        }
        if w == "fillsync" {
            assert_eq!(r["sync"], true, "{r}");
            // One put per commit: the commit rate is the write rate.
            assert_eq!(num("commits_per_sec"), num("write_ops_per_sec"), "{r}");
            assert_eq!(num("write_ops"), 3.0, "{r}");
            // Durable commits wait for the device: the process sleeps.
            assert!(num("vol_ctx_sw") > 0.0, "{r}");
        }
        if w == "readwhilewriting" {
            assert!(num("write_ops") > 0.0 && num("write_p50_us") > 0.0, "{r}");
        }
        assert!(!r["config"].as_str().unwrap_or("").is_empty(), "{r}");
    }
    let threads: Vec<u64> = recs
        .iter()
        .filter(|r| r["workload"] == "readwhilewriting")
        .map(|r| r["threads"].as_u64().expect("threads"))
        .collect();
    assert_eq!(threads, [1, 1, 2, 2]);
    let fillsync: Vec<(&str, u64)> = recs
        .iter()
        .filter(|r| r["workload"] == "fillsync")
        .map(|r| {
            let engine = r["engine"].as_str().expect("engine");
            (engine, r["threads"].as_u64().expect("threads"))
        })
        .collect();
    assert_eq!(
        fillsync,
        [("sarsen", 1), ("lmdb", 1), ("sarsen", 2), ("lmdb", 2)]
    );
    assert!(recs
        .iter()
        .filter(|r| r["workload"] != "fillsync")
        .all(|r| r["commits_per_sec"].is_null()));
    let report = std::fs::read_to_string(out_dir.join("report.md")).expect("report.md");
    assert!(
        report.contains("## fillseq") && report.contains("command:"),
        "{report}"
    );
    assert_eq!(records(&out_dir.join("results.json")).len(), recs.len());
    for chart in [
        "readwhilewriting-reads.svg",
        "readwhilewriting-writes.svg",
        "load-time.svg",
        "throughput.svg",
        "fillsync-threads.svg",
    ] {
        let svg = std::fs::read_to_string(out_dir.join(chart)).expect(chart);
        assert!(svg.contains("sarsen") && svg.contains("lmdb"), "{chart}");
    }
}

#[test]
fn use_existing_db_reuses_matching_databases_only() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("db");
    let run = |extra: &[&str]| {
        let mut args = vec!["--num=2000", "--engines=sarsen,lmdb"];
        args.extend_from_slice(extra);
        let out = bench(&args, &db);
        let stdout = ok(&out);
        (stdout, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (_, stderr) = run(&["--benchmarks=fillseq,deleterandom", "--writes=500"]);
    assert!(!stderr.contains("untimed fillrandom"), "{stderr}");
    // The second run reads what the first left: 1500 keys after 500 deletes.
    let (stdout, stderr) = run(&["--benchmarks=readseq", "--use_existing_db"]);
    assert!(!stderr.contains("untimed fillrandom"), "{stderr}");
    assert!(
        stdout.contains("entries scanned: sarsen 1500, lmdb 1500"),
        "{stdout}"
    );
    // Without the flag, or with other data, a new database is loaded.
    let (stdout, stderr) = run(&["--benchmarks=readseq"]);
    assert!(stderr.contains("untimed fillrandom"), "{stderr}");
    assert!(stdout.contains("entries scanned: sarsen 2000"), "{stdout}");
    let (_, stderr) = run(&[
        "--benchmarks=readseq",
        "--use_existing_db",
        "--value_size=50",
    ]);
    assert!(stderr.contains("ignoring the sarsen database"), "{stderr}");
    assert!(stderr.contains("untimed fillrandom"), "{stderr}");
}

#[test]
fn malloc_preloads_each_allocator_or_names_the_missing_package() {
    let dir = tempfile::tempdir().expect("temp dir");
    let jemalloc = Path::new("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2").exists();
    let out = bench(
        &[
            "--num=2000",
            "--benchmarks=fillrandom,readrandom",
            "--engines=sarsen",
            "--malloc=glibc,jemalloc",
        ],
        &dir.path().join("db"),
    );
    if jemalloc {
        let stdout = ok(&out);
        assert!(stdout.contains("| sarsen-glibc "), "{stdout}");
        assert!(stdout.contains("| sarsen-jemalloc "), "{stdout}");
    } else {
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("libjemalloc2"), "{stderr}");
    }
}

/// Each repetition of deleterandom deletes keys that exist: the runner loads the
/// database again when the run before left other keys than the first run had
/// (the second of three runs once timed deletes of keys already gone).
#[test]
fn repeated_deleterandom_finds_every_key_it_deletes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("d.json");
    ok(&bench(
        &[
            "--num=2000",
            "--benchmarks=fillseq,deleterandom",
            "--engines=sarsen",
            "--repeat=3",
            &format!("--json={}", json.display()),
        ],
        &dir.path().join("db"),
    ));
    let deletes: Vec<_> = records(&json)
        .into_iter()
        .filter(|r| r["workload"] == "deleterandom")
        .collect();
    assert_eq!(deletes.len(), 3);
    for r in &deletes {
        assert_eq!(r["found"], r["ops"], "a run deleted absent keys: {r}");
        assert_eq!(r["ops"].as_u64(), Some(2000), "{r}");
    }
}

#[test]
fn repeat_shows_medians_and_report_merges_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    let stdout = ok(&bench(
        &[
            "--num=2000",
            "--benchmarks=fillseq,readrandom",
            "--engines=sarsen,lmdb",
            "--repeat=3",
            &format!("--json={}", a.display()),
        ],
        &dir.path().join("db1"),
    ));
    assert!(stdout.contains("| runs |"), "{stdout}");
    assert!(stdout.contains("median rate"), "{stdout}");
    let recs = records(&a);
    assert_eq!(recs.len(), 12);
    let runs: Vec<u64> = recs
        .iter()
        .map(|r| r["run"].as_u64().expect("run"))
        .collect();
    // Repetitions go round the engines: run 1 of each, then run 2 of each.
    assert_eq!(&runs[..6], [0, 0, 1, 1, 2, 2]);
    let series: Vec<&str> = recs[..6]
        .iter()
        .map(|r| r["series"].as_str().expect("series"))
        .collect();
    assert_eq!(
        series,
        ["sarsen", "lmdb", "sarsen", "lmdb", "sarsen", "lmdb"]
    );
    ok(&bench(
        &[
            "--num=2000",
            "--benchmarks=readseq",
            "--engines=sarsen",
            &format!("--json={}", b.display()),
        ],
        &dir.path().join("db2"),
    ));
    let out_dir = dir.path().join("merged");
    let out = Command::new(env!("CARGO_BIN_EXE_sarsen-bench"))
        .arg("report")
        .arg(format!("--out={}", out_dir.display()))
        .args([&a, &b])
        .output()
        .expect("run sarsen-bench report");
    ok(&out);
    let report = std::fs::read_to_string(out_dir.join("report.md")).expect("report.md");
    // One line per merged run under the title, real line breaks (an earlier
    // version wrote the two characters `\n`, which Markdown shows as text).
    let lines: Vec<&str> = report.lines().collect();
    assert_eq!(lines.first(), Some(&"# sarsen-bench report"), "{report}");
    let runs = lines.iter().filter(|l| l.starts_with("run: `")).count();
    assert_eq!(runs, 2, "one run line per JSON file in:\n{report}");
    assert!(!report.contains("\\n"), "escaped line break in:\n{report}");
    for needle in [
        "## fillseq",
        "## readrandom, 1 thread(s)",
        "## readseq",
        "| runs |",
    ] {
        assert!(report.contains(needle), "missing {needle:?} in:\n{report}");
    }
    assert!(report.contains("ratio sarsen/lmdb"), "{report}");
    assert_eq!(records(&out_dir.join("results.json")).len(), 13);
    assert!(out_dir.join("load-time.svg").exists());
    // A file that is not a report is an error, not a panic.
    let bad = Command::new(env!("CARGO_BIN_EXE_sarsen-bench"))
        .arg("report")
        .arg(format!("--out={}", out_dir.display()))
        .arg(dir.path().join("missing.json"))
        .output()
        .expect("run sarsen-bench report");
    assert_eq!(bad.status.code(), Some(1), "{bad:?}");
}
