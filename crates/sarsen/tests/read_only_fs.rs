//! A database on a read-only file system opens read-only (its lock file
//! cannot be written, so the reader table is private), reads everything,
//! passes the check, and refuses to write. Needs permission to mount a
//! tmpfs; skips otherwise.

use std::path::PathBuf;
use std::process::Command;

use sarsen::{Env, EnvOptions, Error};

/// A tmpfs mounted for the test, unmounted on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount() -> Option<Tmpfs> {
        let dir = tempfile::tempdir().ok()?.keep();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=16m", "tmpfs"])
            .arg(&dir)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        ok.then_some(Tmpfs(dir))
    }

    fn remount_read_only(&self) -> bool {
        Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn a_read_only_file_system_is_read_through_a_private_reader_table() {
    let Some(fs) = Tmpfs::mount() else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root)");
        return;
    };
    let dir = fs.0.join("db");
    let mut model = Vec::new();
    {
        // SAFETY: the test's own file system; nothing else maps it.
        let env = unsafe { Env::open(&dir) }.unwrap();
        let mut w = env.write_txn().unwrap();
        for i in 0..3000u32 {
            let (k, v) = (i.to_be_bytes().to_vec(), vec![i as u8; 50]);
            w.put(env.main_db(), &k, &v).unwrap();
            model.push((k, v));
        }
        w.commit().unwrap();
    }
    // Without the lock file too: it cannot be created on the read-only mount.
    std::fs::remove_file(dir.join("lock.sdb")).unwrap();
    assert!(fs.remount_read_only(), "remount read-only");
    // SAFETY: as above; the file system is now read-only.
    let env = unsafe { EnvOptions::new().read_only(true).open(&dir) }.unwrap();
    let r = env.read_txn().unwrap();
    let got: Vec<(Vec<u8>, Vec<u8>)> = r
        .iter(env.main_db())
        .unwrap()
        .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
        .collect();
    assert_eq!(got, model);
    drop(r);
    assert!(env.check().unwrap().is_ok());
    assert!(matches!(env.write_txn(), Err(Error::ReadOnly)));
    assert!(!dir.join("lock.sdb").exists());
    // A writable open is refused by the file system.
    // SAFETY: as above.
    assert!(unsafe { Env::open(&dir) }.is_err());
}
