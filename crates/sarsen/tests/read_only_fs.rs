//! A database on a read-only file system opens read-only (its lock file
//! cannot be written, so the reader table is private), reads everything,
//! passes the check, and refuses to write. Needs permission to mount a
//! tmpfs; skips otherwise.

use std::path::PathBuf;
use std::process::Command;

use sarsen::{Env, EnvOptions, Error};

/// Held by each test for its whole run. A `mount` one test spawns shares,
/// until it execs, the process's open file descriptions, the other test's
/// lock files among them: their locks would outlive the other test's
/// closing its environment for that moment (flaky "open elsewhere").
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

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
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
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

/// A read-only bind mount of a directory that is writable elsewhere (a
/// container given a volume read-only) also gives `EROFS`, though writers
/// may run on the other mount. A read-only open there is refused while the
/// environment is open through the writable path; when it is not, the
/// reader holds a shared lock on the writer byte, so a writer that starts
/// on the writable path waits until the reader closes instead of reusing
/// the pages of its snapshot.
#[test]
fn a_read_only_bind_mount_of_a_live_environment() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(fs) = Tmpfs::mount() else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root)");
        return;
    };
    let src = fs.0.join("db");
    let dst = fs.0.join("ro");
    std::fs::create_dir_all(&dst).unwrap();
    // SAFETY: the test's own file system; only Sarsen maps its files.
    let writer = unsafe { Env::open(&src) }.unwrap();
    let mut w = writer.write_txn().unwrap();
    w.put(writer.main_db(), b"k", b"v1").unwrap();
    w.commit().unwrap();
    let bind = |args: &[&str]| {
        Command::new("mount")
            .args(args)
            .status()
            .is_ok_and(|s| s.success())
    };
    let (s, d) = (src.to_str().unwrap(), dst.to_str().unwrap());
    if !bind(&["--bind", s, d]) || !bind(&["-o", "remount,bind,ro", d]) {
        eprintln!("skipped: cannot make a read-only bind mount here");
        return;
    }
    let _unbind = Unmount(dst.clone());
    // SAFETY: as above.
    let live = unsafe { EnvOptions::new().read_only(true).open(&dst) };
    assert!(
        matches!(&live, Err(Error::Io { source, .. }) if source.raw_os_error() == Some(libc::EROFS)),
        "read-only open through the read-only mount while open elsewhere: {:?}",
        live.as_ref().err()
    );
    drop(writer);
    // SAFETY: as above.
    let reader = unsafe { EnvOptions::new().read_only(true).open(&dst) }.unwrap();
    let r = reader.read_txn().unwrap();
    assert_eq!(r.get(reader.main_db(), b"k").unwrap(), Some(&b"v1"[..]));
    let (tx, rx) = std::sync::mpsc::channel();
    let path = src.clone();
    std::thread::spawn(move || {
        // SAFETY: as above.
        let env = unsafe { Env::open(&path) }.unwrap();
        let mut w = env.write_txn().unwrap();
        w.put(env.main_db(), b"k", b"v2").unwrap();
        let _ = tx.send(w.commit().is_ok());
    });
    let early = rx.recv_timeout(std::time::Duration::from_millis(500));
    assert!(
        early.is_err(),
        "a writer committed while the read-only reader lived"
    );
    assert_eq!(r.get(reader.main_db(), b"k").unwrap(), Some(&b"v1"[..]));
    drop(r);
    drop(reader);
    let late = rx.recv_timeout(std::time::Duration::from_secs(20));
    assert_eq!(late, Ok(true), "the writer once the reader closed");
}

/// Unmounts a bind mount on drop.
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}
