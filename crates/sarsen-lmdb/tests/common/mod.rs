//! Helpers shared by the integration tests.

use std::path::PathBuf;
use std::process::Command;

/// The directory holding a `liblmdb.so` built from the current sources.
/// `cargo test` builds the library only as an rlib for the tests, so this
/// runs `cargo build -p sarsen-lmdb` (a no-op when up to date) into the
/// same target directory (the test binary runs from
/// `<target>/<profile>/deps`) and returns `<target>/debug`.
pub fn lib_dir() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().unwrap();
            let target = exe.parent().unwrap().parent().unwrap().parent().unwrap();
            let o = Command::new(env!("CARGO"))
                .args(["build", "-p", "sarsen-lmdb"])
                .env("CARGO_TARGET_DIR", target)
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "cargo build -p sarsen-lmdb failed:\n{}",
                String::from_utf8_lossy(&o.stderr)
            );
            let dir = target.join("debug");
            assert!(
                dir.join("liblmdb.so").exists(),
                "no liblmdb.so in {}",
                dir.display()
            );
            dir
        })
        .clone()
}

/// The directory of LMDB's C sources in the cargo registry.
pub fn lmdb_src() -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    let mut found: Vec<PathBuf> = std::fs::read_dir(home.join("registry/src"))
        .ok()?
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("lmdb-master-sys-")
        })
        .map(|e| e.path().join("lmdb/libraries/liblmdb"))
        .filter(|p| p.join("mtest.c").exists())
        .collect();
    found.sort();
    found.pop()
}

/// Reports a test skipped for want of `cc` or LMDB's sources; with
/// `SARSEN_LMDB_REQUIRE_C` set (as `.ci/run` sets it), fails instead, so CI
/// cannot pass these tests by skipping them.
pub fn skip(why: &str) {
    if std::env::var_os("SARSEN_LMDB_REQUIRE_C").is_some() {
        panic!("{why}, and SARSEN_LMDB_REQUIRE_C is set");
    }
    eprintln!("{why}");
}
