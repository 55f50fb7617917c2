//! The `sarsen` command run as a child process on real databases: exit
//! codes and output of `check` and `stat` against what the library reports.

use std::path::Path;
use std::process::{Command, Output};

use sarsen::{Env, EnvOptions};

fn sarsen(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sarsen"))
        .args(args)
        .output()
        .expect("run sarsen")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A database with 2000 keys in the main database and 30 in "named".
fn build(dir: &Path) {
    // SAFETY: the test's own temporary directory; nothing else maps it.
    let env: Env = unsafe { EnvOptions::new().page_size(512).open(dir) }.unwrap();
    let mut w = env.write_txn().unwrap();
    let named = w.create_db(Some("named")).unwrap();
    for i in 0..2000u32 {
        w.put(env.main_db(), &i.to_be_bytes(), &[1; 30]).unwrap();
    }
    for i in 0..30u32 {
        w.put(named, &i.to_be_bytes(), b"v").unwrap();
    }
    w.commit().unwrap();
    let mut w = env.write_txn().unwrap();
    for i in 0..500u32 {
        w.delete(env.main_db(), &i.to_be_bytes()).unwrap();
    }
    w.commit().unwrap();
}

#[test]
fn check_passes_a_healthy_database_and_fails_a_damaged_one() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let path = dir.path().to_str().unwrap();
    let o = sarsen(&["check", path]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let out = stdout(&o);
    assert!(out.contains("no problems"), "{out}");
    let main_line = out.lines().find(|l| l.starts_with("main ")).unwrap();
    assert!(main_line.trim_end().ends_with(" 1500"), "{main_line}");
    assert!(out.lines().any(|l| l.starts_with("named ")), "{out}");
    assert_eq!(sarsen(&["check", "--quiet", path]).stdout, b"");

    // Damage the byte in the middle of every used page after the metas.
    let file = dir.path().join("data.sdb");
    let mut bytes = std::fs::read(&file).unwrap();
    // SAFETY: as in `build`.
    let env: Env = unsafe { EnvOptions::new().read_only(true).open(dir.path()) }.unwrap();
    let pages = env.info().unwrap().next_pgno as usize;
    drop(env);
    for p in 3..pages {
        bytes[p * 512 + 256] ^= 0x55;
    }
    std::fs::write(&file, &bytes).unwrap();
    let o = sarsen(&["check", path]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("problem: page "), "{out}");
    assert!(out.lines().last().unwrap().ends_with(" problems"), "{out}");
}

#[test]
fn stat_prints_what_the_library_reports() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let o = sarsen(&["stat", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    // SAFETY: as in `build`.
    let env: Env = unsafe { EnvOptions::new().read_only(true).open(dir.path()) }.unwrap();
    let info = env.info().unwrap();
    assert!(
        out.contains(&format!("last txnid: {}", info.last_txnid)),
        "{out}"
    );
    assert!(
        out.contains("entries: 1500") && out.contains("entries: 30"),
        "{out}"
    );
    assert!(out.contains("database \"named\""), "{out}");
    // With -r, a reader held by this process is listed with its txnid.
    let held = env.read_txn().unwrap();
    let o = sarsen(&["stat", "-r", dir.path().to_str().unwrap()]);
    let out = stdout(&o);
    let me = std::process::id().to_string();
    let line = out
        .lines()
        .find(|l| l.split_whitespace().next() == Some(me.as_str()))
        .unwrap_or_else(|| panic!("no reader line for pid {me}: {out}"));
    assert_eq!(
        line.split_whitespace().nth(2),
        Some(held.txnid().to_string().as_str())
    );
}

#[test]
fn copy_and_compact_copy_check_clean_and_hold_the_same_data() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let src = dir.path().to_str().unwrap();
    for (flag, name) in [(None, "plain"), (Some("--compact"), "compact")] {
        let dest = tempfile::tempdir().unwrap();
        let to = dest.path().join(name);
        let mut args = vec!["copy", src, to.to_str().unwrap()];
        args.extend(flag);
        let o = sarsen(&args);
        assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
        assert_eq!(sarsen(&["check", "-q", to.to_str().unwrap()]).stdout, b"");
        let dump = |p: &str| stdout(&sarsen(&["dump", "-a", p]));
        assert_eq!(dump(to.to_str().unwrap()), dump(src), "{name}");
        // A second copy into the same place is refused.
        assert_eq!(sarsen(&args).status.code(), Some(2));
    }
}

#[test]
fn usage_errors_and_missing_databases_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing-here");
    let o = sarsen(&["check", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nothing-here"));
    assert_eq!(sarsen(&["frobnicate"]).status.code(), Some(2));
    for sub in ["copy", "check", "stat", "dump", "load", "drop"] {
        let o = sarsen(&[sub, "--help"]);
        assert_eq!(o.status.code(), Some(0));
        assert!(stdout(&o).contains("--single-file"));
    }
}

/// `--no-lock` reads a database whose lock file cannot be opened (here a
/// directory stands in its place), and only for the read-only subcommands.
#[test]
fn no_lock_reads_without_the_lock_file() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let lock = dir.path().join("lock.sdb");
    std::fs::remove_file(&lock).unwrap();
    std::fs::create_dir(&lock).unwrap();
    let path = dir.path().to_str().unwrap();
    assert_eq!(sarsen(&["check", path]).status.code(), Some(2));
    let o = sarsen(&["check", "--no-lock", path]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let stat = stdout(&sarsen(&["stat", "--no-lock", path]));
    assert!(stat.contains("1500"), "{stat}");
    let o = sarsen(&["drop", "--no-lock", path]);
    assert_ne!(o.status.code(), Some(0), "drop with --no-lock");
}
