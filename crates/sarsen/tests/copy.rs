//! Hot backup: physical and compact copies, into a directory or to a
//! writer, taken while a writer commits equal one committed state exactly,
//! pass the integrity check, keep merge operator names, and open and take
//! writes like the source. A copy to a writer is the bytes of a copy to a
//! directory; the data file's descriptor is the data file's.

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sarsen::merge::{Max, Uint64Add};
use sarsen::{DbOptions, Durability, Env, EnvOptions, Error};

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

fn open(dir: &std::path::Path) -> Env {
    // SAFETY: the test's own temporary directories; nothing else maps them.
    unsafe {
        EnvOptions::new()
            .page_size(1024)
            .durability(Durability::NoSync)
            .open(dir)
    }
    .unwrap()
}

/// Main database and "side": their contents.
fn contents(env: &Env) -> (Map, Map) {
    let r = env.read_txn().unwrap();
    let side = r.open_db(Some("side")).unwrap().unwrap();
    let read = |db| {
        r.iter(db)
            .unwrap()
            .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
            .collect()
    };
    (read(env.main_db()), read(side))
}

/// A writer that takes at most 1000 bytes per call.
struct Dribble<W>(W);

impl<W: Write> Write for Dribble<W> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.write(&b[..b.len().min(1000)])
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[test]
fn copies_taken_beside_a_writer_equal_a_committed_state() {
    let base = tempfile::tempdir().unwrap();
    let env = open(&base.path().join("src"));
    let mut w = env.write_txn().unwrap();
    let main = w
        .create_db_with(None, &DbOptions::new().merge_operator(Uint64Add))
        .unwrap();
    let side = w.create_db(Some("side")).unwrap();
    w.commit().unwrap();
    // The states committed so far, by txnid.
    let states: Mutex<BTreeMap<u64, (Map, Map)>> = Mutex::new(BTreeMap::new());
    states
        .lock()
        .unwrap()
        .insert(env.read_txn().unwrap().txnid(), contents(&env));
    let stop = AtomicBool::new(false);
    let copies = std::thread::scope(|s| {
        s.spawn(|| {
            let mut rng = SmallRng::seed_from_u64(9);
            while !stop.load(Ordering::Acquire) {
                let mut w = env.write_txn().unwrap();
                for _ in 0..50 {
                    let k = rng.random_range(0..2000u32).to_be_bytes();
                    match rng.random_range(0..4) {
                        0 => drop(w.delete(main, &k).unwrap()),
                        1 => w.merge(main, &k, &3u64.to_le_bytes()).unwrap(),
                        2 => w
                            .put(side, &k, &vec![7; rng.random_range(0..3000)])
                            .unwrap(),
                        _ => drop(w.delete(side, &k).unwrap()),
                    }
                }
                let txnid = w.txnid();
                w.commit().unwrap();
                states.lock().unwrap().insert(txnid, contents(&env));
            }
        });
        let mut made = Vec::new();
        for i in 0..9 {
            std::thread::sleep(std::time::Duration::from_millis(30));
            let dir = base.path().join(format!("copy{i}"));
            let info = match i % 3 {
                0 => env.copy_to(&dir).unwrap(),
                1 => env.compact_copy_to(&dir).unwrap(),
                _ => {
                    // Through a writer that takes a few bytes at a time.
                    std::fs::create_dir(&dir).unwrap();
                    let f = std::fs::File::create(dir.join("data.sdb")).unwrap();
                    let mut out = Dribble(f);
                    env.copy_to_writer(&mut out).unwrap()
                }
            };
            made.push((dir, info));
        }
        stop.store(true, Ordering::Release);
        made
    });
    let states = states.into_inner().unwrap();
    for (i, (dir, info)) in copies.iter().enumerate() {
        let copy = open(dir);
        common::assert_check(&copy, "copy");
        let want = &states[&info.txnid];
        assert_eq!(&contents(&copy), want, "copy {i} of txnid {}", info.txnid);
        if i % 3 != 1 {
            assert_eq!(copy.read_txn().unwrap().txnid(), info.txnid);
            let len = std::fs::metadata(dir.join("data.sdb")).unwrap().len();
            assert_eq!(info.bytes, len, "copy {i}");
        } else {
            let n = (want.0.len() + want.1.len()) as u64;
            assert_eq!(info.entries, n);
        }
        // The merge operator's name came along: another one is refused.
        let mut w = copy.write_txn().unwrap();
        let e = w.open_db_with(None, &DbOptions::new().merge_operator(Max));
        assert!(
            matches!(e, Err(Error::MergeOperatorMismatch { .. })),
            "{e:?}"
        );
        let db = w
            .open_db_with(None, &DbOptions::new().merge_operator(Uint64Add))
            .unwrap()
            .unwrap();
        w.merge(db, b"new", &1u64.to_le_bytes()).unwrap();
        w.commit().unwrap();
        common::assert_check(&copy, "copy after a write");
    }
}

#[test]
fn a_compact_copy_is_no_larger_and_the_destination_must_be_free() {
    let base = tempfile::tempdir().unwrap();
    let env = open(&base.path().join("src"));
    let mut w = env.write_txn().unwrap();
    w.create_db(Some("side")).unwrap();
    for i in 0..20_000u32 {
        w.put(env.main_db(), &i.to_be_bytes(), &[1; 50]).unwrap();
    }
    w.commit().unwrap();
    // Delete most of it: the source keeps its pages, free.
    let mut w = env.write_txn().unwrap();
    for i in 0..18_000u32 {
        w.delete(env.main_db(), &i.to_be_bytes()).unwrap();
    }
    w.commit().unwrap();
    let full = env.copy_to(base.path().join("full")).unwrap();
    let compact = env.compact_copy_to(base.path().join("compact")).unwrap();
    assert!(
        compact.bytes * 4 < full.bytes,
        "compact {} vs full {}",
        compact.bytes,
        full.bytes
    );
    assert_eq!(compact.entries, 2000);
    assert_eq!(
        contents(&open(&base.path().join("compact"))),
        contents(&env)
    );
    // A directory that holds a database is refused, and left as it was.
    let again = env.copy_to(base.path().join("full"));
    assert!(matches!(again, Err(Error::InvalidArgument(_))), "{again:?}");
    assert_eq!(contents(&open(&base.path().join("full"))), contents(&env));
}

/// A copy to a writer is, byte for byte, the data file of a copy to a
/// directory of the same snapshot (free pages as zeros), also for a source
/// with free pages inside; a failing writer's error comes back, ENOSPC as
/// `DiskFull`, and the source is unchanged.
#[test]
fn a_copy_to_a_writer_is_the_data_file_of_a_copy() {
    let base = tempfile::tempdir().unwrap();
    let env = open(&base.path().join("src"));
    let mut w = env.write_txn().unwrap();
    let side = w.create_db(Some("side")).unwrap();
    for i in 0..5_000u32 {
        w.put(env.main_db(), &i.to_be_bytes(), &[1; 60]).unwrap();
        w.put(side, &i.to_le_bytes(), &vec![2; (i % 7) as usize * 400])
            .unwrap();
    }
    w.commit().unwrap();
    let mut w = env.write_txn().unwrap();
    for i in (0..5_000u32).step_by(3) {
        w.delete(env.main_db(), &i.to_be_bytes()).unwrap();
        w.delete(side, &i.to_le_bytes()).unwrap();
    }
    w.commit().unwrap();
    let info = env.copy_to(base.path().join("dir")).unwrap();
    let file = std::fs::read(base.path().join("dir/data.sdb")).unwrap();
    let mut bytes = Vec::new();
    let winfo = env.copy_to_writer(&mut bytes).unwrap();
    assert_eq!((winfo.txnid, winfo.bytes), (info.txnid, info.bytes));
    assert_eq!(bytes.len(), file.len());
    assert!(bytes == file, "the copy to a writer differs from the file");
    // Some page of the copy is a free page of the source: zeros.
    let ps = 1024;
    assert!(bytes[3 * ps..]
        .chunks(ps)
        .any(|p| p.iter().all(|&b| b == 0)));
    // It opens as a single-file environment, equal to the source.
    let one = base.path().join("one.sdb");
    std::fs::write(&one, &bytes).unwrap();
    // SAFETY: the test's own file.
    let copy = unsafe { EnvOptions::new().single_file(true).open(&one) }.unwrap();
    assert_eq!(contents(&copy), contents(&env));
    common::assert_check(&copy, "copy to a writer");

    /// Fails with `errno` once `left` bytes are written.
    struct Failing(usize, i32);
    impl Write for Failing {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            if self.0 == 0 {
                return Err(std::io::Error::from_raw_os_error(self.1));
            }
            let n = b.len().min(self.0);
            self.0 -= n;
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let e = env.copy_to_writer(&mut Failing(5000, libc::EPIPE));
    assert!(matches!(e, Err(Error::Io { .. })), "{e:?}");
    let e = env.copy_to_writer(&mut Failing(100_000, libc::ENOSPC));
    assert!(matches!(e, Err(Error::DiskFull { .. })), "{e:?}");
    assert_eq!(contents(&env), contents(&copy));
}

/// `Env::data_fd` is a descriptor of the data file, open for reading and
/// writing, or for reading only in a read-only environment.
#[test]
fn the_data_fd_is_the_data_file() {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("src");
    let env = open(&dir);
    let mut w = env.write_txn().unwrap();
    w.put(env.main_db(), b"k", b"v").unwrap();
    w.commit().unwrap();
    let access = |env: &Env| {
        let fd = env.data_fd().as_raw_fd();
        // SAFETY: F_GETFL on a descriptor the environment keeps open.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        flags & libc::O_ACCMODE
    };
    let ino = |env: &Env| {
        let f = std::fs::File::from(env.data_fd().try_clone_to_owned().unwrap());
        f.metadata().unwrap().ino()
    };
    let data = std::fs::metadata(dir.join("data.sdb")).unwrap();
    assert_eq!(ino(&env), data.ino());
    assert_eq!(access(&env), libc::O_RDWR);
    drop(env);
    // SAFETY: the test's own directory.
    let ro = unsafe { EnvOptions::new().read_only(true).open(&dir) }.unwrap();
    assert_eq!(ino(&ro), data.ino());
    assert_eq!(access(&ro), libc::O_RDONLY);
}
