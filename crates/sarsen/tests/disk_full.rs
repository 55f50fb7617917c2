//! A real full disk: a 4 MiB tmpfs. Writes until the file system is full,
//! then checks the error is `DiskFull`, the last commit is intact, and the
//! database is writable again once space returns. Needs permission to mount
//! (root, as on CI); skips with a message where that is refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use sarsen::{Durability, Env, EnvOptions, Error};

struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().ok()?.keep();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        ok.then_some(Tmpfs(dir))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn contents(env: &Env) -> Model {
    let r = env.read_txn().unwrap();
    r.iter(env.main_db())
        .unwrap()
        .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
        .collect()
}

fn fill_until_full(dir: &Path, ballast: &Path, write_map: bool, durability: Durability) {
    std::fs::write(ballast, vec![1u8; 1 << 20]).unwrap();
    let open = || {
        unsafe {
            EnvOptions::new()
                .durability(durability)
                .write_map(write_map)
                .growth_step(256 << 10)
                .open(dir)
        }
        .unwrap()
    };
    let env = open();
    let db = env.main_db();
    let mut model = Model::new();
    let mut full = None;
    'outer: for t in 0..10_000u32 {
        let mut w = env.write_txn().unwrap();
        let mut pending = model.clone();
        for j in 0..20u32 {
            let k = format!("k{t:05}-{j:02}").into_bytes();
            let v = vec![(t + j) as u8; 700];
            if let Err(e) = w.put(db, &k, &v) {
                full = Some(e);
                break 'outer;
            }
            pending.insert(k, v);
        }
        match w.commit() {
            Ok(()) => model = pending,
            Err(e) => {
                full = Some(e);
                break;
            }
        }
    }
    let e = full.expect("a 4 MiB file system never filled up");
    assert!(
        matches!(e, Error::DiskFull { .. }),
        "write_map {write_map}: expected DiskFull, got {e:?}"
    );
    assert!(
        model.len() > 100,
        "filled after only {} entries",
        model.len()
    );
    assert_eq!(
        contents(&env),
        model,
        "last commit must be intact after DiskFull"
    );

    // Space returns (another file goes away): delete some entries, write again.
    std::fs::remove_file(ballast).unwrap();
    let mut w = env.write_txn().unwrap();
    let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
    // A contiguous run: copy-on-write touches only the few leaves holding it.
    for k in keys.iter().take(200) {
        assert!(w.delete(db, k).unwrap());
        model.remove(k);
    }
    w.commit().unwrap();
    for t in 0..5u32 {
        let mut w = env.write_txn().unwrap();
        for j in 0..5u32 {
            let k = format!("again{t}-{j}").into_bytes();
            w.put(db, &k, b"v").unwrap();
            model.insert(k, b"v".to_vec());
        }
        w.commit().unwrap();
    }
    assert_eq!(contents(&env), model);
    drop(env);
    assert_eq!(contents(&open()), model, "after reopen");
}

#[test]
fn disk_full_is_an_error_and_changes_nothing() {
    for (write_map, durability) in [(false, Durability::Durable), (true, Durability::NoSync)] {
        let Some(fs) = Tmpfs::mount("4m") else {
            eprintln!("skipped: cannot mount a tmpfs here (needs root)");
            return;
        };
        fill_until_full(
            &fs.0.join("db"),
            &fs.0.join("ballast"),
            write_map,
            durability,
        );
    }
}
