//! Runs `sarsen-bench --check`: every workload on tiny data for every engine, with
//! what is read verified against what was written.

use std::process::Command;

#[test]
fn check_passes_for_all_engines() {
    let db = tempfile::tempdir().expect("temp dir");
    let out = Command::new(env!("CARGO_BIN_EXE_sarsen-bench"))
        .args(["--check", "--engines", "sarsen,lmdb", "--db"])
        .arg(db.path())
        .output()
        .expect("run sarsen-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "sarsen-bench --check failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(stdout.contains("check passed"), "{stdout}");
    for engine in ["sarsen", "lmdb"] {
        for workload in [
            "fillseq",
            "fillrandom",
            "fillsync",
            "readrandom",
            "readseq",
            "readwhilewriting",
        ] {
            let line = format!("ok    {engine:<7} {workload}");
            assert!(stdout.contains(&line), "missing {line:?} in:\n{stdout}");
        }
    }
}

#[test]
fn bad_flags_are_usage_errors_not_panics() {
    for args in [
        &["--num", "0"][..],
        &["--benchmarks", "nosuchworkload"],
        &["--engines", "nosuchengine"],
        &["--num", "1000000", "--key_size", "3"],
        &["--threads", "0"],
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
fn small_benchmark_prints_tables_and_json() {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("out.json");
    let out = Command::new(env!("CARGO_BIN_EXE_sarsen-bench"))
        .args([
            "--num",
            "3000",
            "--benchmarks",
            "readrandom,fillseq,readwhilewriting",
        ])
        .args(["--engines", "sarsen,lmdb", "--db"])
        .arg(dir.path().join("db"))
        .arg(format!("--json={}", json.display()))
        .output()
        .expect("run sarsen-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for needle in [
        "## readrandom",
        "## fillseq",
        "## readwhilewriting",
        "ratio sarsen/lmdb",
        "found: sarsen 3000 of 3000",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json written"))
            .expect("valid json");
    let records = doc["records"].as_array().expect("records");
    assert_eq!(records.len(), 6);
    assert!(records
        .iter()
        .all(|r| r["ops_per_sec"].as_f64().is_some_and(|x| x > 0.0)));
}
