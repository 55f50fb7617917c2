//! State every opener of one environment shares through the lock file,
//! tested with two environments in one process (two open file
//! descriptions, so their locks exclude each other as two processes'
//! would):
//!
//! - the upper bound of the map: the first opener's holds for all, so a
//!   later opener asking for more cannot grow the file past an earlier
//!   one's map (which would then read `Corrupted` "page outside the map");
//! - the writer lock after a slow-reader handler panics inside
//!   `write_txn`: it must be released, or every other opener waits forever.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use sarsen::{Env, EnvOptions, Error};

fn open(dir: &Path, o: EnvOptions) -> Env {
    // SAFETY: the test's own temporary directory, used only by Sarsen
    // environments of this test.
    unsafe { o.open(dir) }.unwrap()
}

/// A later opener asking for a larger upper bound gets the first
/// opener's: whatever it commits, the first can read, and its writes stop
/// at the shared bound with `UpperBoundReached`.
#[test]
fn every_opener_maps_the_first_openers_upper_bound() {
    let dir = tempfile::tempdir().unwrap();
    let small = 64 * 4096;
    let a = open(dir.path(), EnvOptions::new().max_size(small));
    let b = open(dir.path(), EnvOptions::new().max_size(64 << 20));
    let mut model = BTreeMap::new();
    let mut full = false;
    for i in 0..400u32 {
        let mut w = b.write_txn().unwrap();
        let key = i.to_be_bytes();
        let value = vec![i as u8; 1500];
        match w.put(b.main_db(), &key, &value).and_then(|_| w.commit()) {
            Ok(()) => {
                model.insert(key.to_vec(), value);
            }
            Err(Error::UpperBoundReached { upper }) => {
                assert_eq!(upper, small, "the bound reported");
                full = true;
                break;
            }
            Err(e) => panic!("commit {i}: {e}"),
        }
    }
    let r = a.read_txn().unwrap();
    let got: BTreeMap<Vec<u8>, Vec<u8>> = r
        .iter(a.main_db())
        .unwrap()
        .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
        .collect();
    assert!(got == model, "the first opener reads what the second wrote");
    common::assert_check(&a, "after the second opener filled the file");
    assert!(full, "400 values of 1500 bytes fit in 64 pages");
    assert_eq!(
        b.info().unwrap().geometry.upper,
        a.info().unwrap().geometry.upper,
        "the second opener's upper bound"
    );
}

/// A slow-reader handler that panics unwinds out of `write_txn`; the
/// writer lock must be free afterwards for another opener.
#[test]
fn a_panicking_slow_reader_handler_releases_the_writer_lock() {
    let dir = tempfile::tempdir().unwrap();
    let a = open(
        dir.path(),
        EnvOptions::new().slow_reader_handler(2, |_| panic!("handler panics")),
    );
    let old = a.read_txn().unwrap();
    let mut panicked = false;
    for i in 0..5u32 {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut w = a.write_txn().unwrap();
            w.put(a.main_db(), &i.to_be_bytes(), b"v").unwrap();
            w.commit().unwrap();
        }));
        if r.is_err() {
            panicked = true;
            break;
        }
    }
    assert!(panicked, "the handler ran and panicked");
    drop(old);
    // Another open file description: it waits on the writer lock if the
    // panic left it held, so wait for it from a thread, bounded.
    let path = dir.path().to_path_buf();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let b = open(&path, EnvOptions::new());
        let r = b.write_txn().map(|w| w.commit());
        let _ = tx.send(r.is_ok());
    });
    let got = rx.recv_timeout(Duration::from_secs(20));
    assert_eq!(
        got,
        Ok(true),
        "a second opener's write transaction after the panic"
    );
}

/// A lock file header that no opener holds was left by a previous life:
/// an opener that waited on a first opener which then died before
/// resetting it must not join that stale life, but reset it itself. The
/// stale header here names a root page past the file, so a reader on it
/// would fail.
#[test]
fn a_header_no_opener_holds_is_reset_not_joined() {
    use std::os::unix::io::AsRawFd;
    let dir = tempfile::tempdir().unwrap();
    {
        let env = open(dir.path(), EnvOptions::new());
        let mut w = env.write_txn().unwrap();
        w.put(env.main_db(), b"k", b"v").unwrap();
        w.commit().unwrap();
    }
    // The previous life's header, with the main record's root (offset 104)
    // pointing far past the file.
    let lock_path = dir.path().join("lock.sdb");
    let mut header = std::fs::read(&lock_path).unwrap();
    header[104..108].copy_from_slice(&0x00ff_ffffu32.to_le_bytes());
    std::fs::write(&lock_path, &header).unwrap();
    // A "first opener" holds the liveness byte exclusively, as if it were
    // about to reset the file, while another opener waits.
    let holder = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&lock_path)
        .unwrap();
    let lock_byte = |kind: libc::c_int| {
        // SAFETY: a zeroed flock is a valid plain C struct; fcntl gets a
        // valid descriptor and a pointer to it.
        let mut fl: libc::flock = unsafe { std::mem::zeroed() };
        fl.l_type = kind as libc::c_short;
        fl.l_whence = libc::SEEK_SET as libc::c_short;
        fl.l_start = 1;
        fl.l_len = 1;
        // SAFETY: as above.
        let r = unsafe { libc::fcntl(holder.as_raw_fd(), libc::F_OFD_SETLK, &mut fl) };
        assert_eq!(r, 0, "fcntl");
    };
    lock_byte(libc::F_WRLCK);
    let path = dir.path().to_path_buf();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let env = open(&path, EnvOptions::new());
        let r = env
            .read_txn()
            .and_then(|r| r.get(env.main_db(), b"k").map(|v| v.map(<[u8]>::to_vec)));
        let _ = tx.send(r.map_err(|e| e.to_string()));
    });
    std::thread::sleep(Duration::from_millis(200));
    // The first opener dies without resetting the file.
    drop(holder);
    let got = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the waiting opener");
    assert_eq!(
        got,
        Ok(Some(b"v".to_vec())),
        "read through the waiting opener"
    );
}
