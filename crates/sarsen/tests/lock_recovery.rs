//! A process that dies while opening an environment (after resetting the
//! lock file, before publishing the snapshot) must not make the next opener
//! trust an empty table. Regression test: the next opener used to join with
//! txnid 0 and, in write-map mode, wrote over meta page 0.

use std::fs::OpenOptions;
use std::os::unix::io::AsRawFd;

use sarsen::{Env, EnvOptions};

/// Takes an OFD lock of `kind` on byte 1 (the liveness byte) of `fd`.
fn lock_liveness(fd: i32, kind: i32) {
    // SAFETY: a zeroed flock is a valid C struct; fcntl gets a live pointer.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = kind as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = 1;
    fl.l_len = 1;
    // SAFETY: as above.
    let r = unsafe { libc::fcntl(fd, libc::F_OFD_SETLK, &mut fl) };
    assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
}

#[test]
fn opener_after_one_that_died_half_way_recovers() {
    let dir = tempfile::tempdir().unwrap();
    {
        let env = unsafe { Env::open(dir.path()) }.unwrap();
        for t in 0..3u32 {
            let mut w = env.write_txn().unwrap();
            for i in 0..100u32 {
                w.put(env.main_db(), &(i + 100 * t).to_be_bytes(), b"value")
                    .unwrap();
            }
            w.commit().unwrap();
        }
    }
    // Opener A: exclusive liveness lock, lock file reset (header without
    // the magic, as Sarsen writes it before publishing), then it dies.
    let lf = OpenOptions::new()
        .read(true)
        .write(true)
        .open(dir.path().join("lock.sdb"))
        .unwrap();
    lock_liveness(lf.as_raw_fd(), libc::F_WRLCK);
    lf.set_len(0).unwrap();
    lf.set_len(256 + 64 * 126).unwrap();
    let path = dir.path().to_path_buf();
    let b = std::thread::spawn(move || {
        let env = unsafe { EnvOptions::new().write_map(true).open(&path) }.unwrap();
        let r = env.read_txn().unwrap();
        assert_eq!(r.txnid(), 4, "the joiner must see the last commit");
        assert_eq!(r.iter(env.main_db()).unwrap().count(), 300);
        drop(r);
        let mut w = env.write_txn().unwrap();
        w.put(env.main_db(), b"x", b"y").unwrap();
        w.commit().unwrap();
    });
    std::thread::sleep(std::time::Duration::from_millis(200));
    drop(lf); // A dies: its locks go with its file description
    b.join().unwrap();
    let env = unsafe { Env::open(dir.path()) }.unwrap();
    let r = env.read_txn().unwrap();
    assert_eq!(r.txnid(), 5);
    assert_eq!(r.iter(env.main_db()).unwrap().count(), 301);
}
