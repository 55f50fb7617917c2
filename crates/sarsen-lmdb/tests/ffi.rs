//! The C API called from Rust through the rlib: LMDB's semantics at the
//! edges (cursor ends, deletes under a cursor, duplicates, nested and
//! reset transactions, error codes).

use std::ffi::{c_int, CStr, CString};
use std::ptr;

use lmdb::*;

fn ok(rc: c_int) {
    assert_eq!(rc, 0, "{}", lmdb::error::describe(rc));
}

fn val(b: &[u8]) -> MDB_val {
    MDB_val {
        mv_size: b.len(),
        mv_data: b.as_ptr() as *mut _,
    }
}

fn bytes(v: &MDB_val) -> Vec<u8> {
    // SAFETY: the library returned it, valid until the txn writes or ends.
    unsafe { std::slice::from_raw_parts(v.mv_data as *const u8, v.mv_size) }.to_vec()
}

fn empty() -> MDB_val {
    MDB_val {
        mv_size: 0,
        mv_data: ptr::null_mut(),
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    env: *mut MDB_env,
}

impl Fixture {
    fn new(flags: u32) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let mut env = ptr::null_mut();
        let p = CString::new(dir.path().to_str().unwrap()).unwrap();
        // SAFETY: valid pointers.
        unsafe {
            ok(mdb_env_create(&mut env));
            ok(mdb_env_set_maxdbs(env, 8));
            ok(mdb_env_set_mapsize(env, 1 << 20));
            ok(mdb_env_open(env, p.as_ptr(), flags, 0o644));
        }
        Fixture { _dir: dir, env }
    }

    fn txn(&self, flags: u32) -> *mut MDB_txn {
        let mut t = ptr::null_mut();
        // SAFETY: a live env.
        ok(unsafe { mdb_txn_begin(self.env, ptr::null_mut(), flags, &mut t) });
        t
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        // SAFETY: a live env.
        unsafe { mdb_env_close(self.env) };
    }
}

unsafe fn open_db(t: *mut MDB_txn, name: &str, flags: u32) -> MDB_dbi {
    let mut dbi = 0;
    let n = CString::new(name).unwrap();
    // SAFETY: per the caller.
    ok(unsafe { mdb_dbi_open(t, n.as_ptr(), flags | MDB_CREATE, &mut dbi) });
    dbi
}

unsafe fn put(t: *mut MDB_txn, dbi: MDB_dbi, k: &[u8], v: &[u8], flags: u32) -> c_int {
    let (mut k, mut v) = (val(k), val(v));
    // SAFETY: per the caller.
    unsafe { mdb_put(t, dbi, &mut k, &mut v, flags) }
}

unsafe fn cget(c: *mut MDB_cursor, op: c_int) -> Result<(Vec<u8>, Vec<u8>), c_int> {
    let (mut k, mut v) = (empty(), empty());
    // SAFETY: per the caller.
    match unsafe { mdb_cursor_get(c, &mut k, &mut v, op) } {
        0 => Ok((bytes(&k), bytes(&v))),
        e => Err(e),
    }
}

#[test]
fn version_and_strerror() {
    let (mut a, mut b, mut c) = (0, 0, 0);
    // SAFETY: valid pointers.
    let s = unsafe { CStr::from_ptr(mdb_version(&mut a, &mut b, &mut c)) };
    assert_eq!((a, b, c), (0, 9, 31));
    assert!(s.to_str().unwrap().starts_with("LMDB 0.9.31"));
    assert!(lmdb::error::describe(MDB_NOTFOUND).starts_with("MDB_NOTFOUND"));
    assert!(lmdb::error::describe(MDB_INVALID).contains("mdb_dump -a | sarsen load"));
    assert_eq!(
        lmdb::error::describe(libc::ENOENT),
        "No such file or directory"
    );
}

#[test]
fn put_get_del_and_flags() {
    let f = Fixture::new(MDB_NOSYNC);
    let t = f.txn(0);
    // SAFETY: live handles throughout.
    unsafe {
        let dbi = open_db(t, "a", 0);
        ok(put(t, dbi, b"k", b"v1", 0));
        let (mut k, mut v) = (val(b"k"), val(b"zz"));
        assert_eq!(
            mdb_put(t, dbi, &mut k, &mut v, MDB_NOOVERWRITE),
            MDB_KEYEXIST
        );
        assert_eq!(bytes(&v), b"v1");
        assert_eq!(put(t, dbi, b"a", b"x", MDB_APPEND), MDB_KEYEXIST);
        ok(put(t, dbi, b"z", b"x", MDB_APPEND));
        let mut out = empty();
        ok(mdb_get(t, dbi, &mut val(b"z"), &mut out));
        assert_eq!(bytes(&out), b"x");
        ok(mdb_del(t, dbi, &mut val(b"z"), ptr::null_mut()));
        assert_eq!(
            mdb_del(t, dbi, &mut val(b"z"), ptr::null_mut()),
            MDB_NOTFOUND
        );
        assert_eq!(mdb_get(t, dbi, &mut val(b"z"), &mut out), MDB_NOTFOUND);
        let mut st = MDB_stat::default();
        ok(mdb_stat(t, dbi, &mut st));
        assert_eq!(st.ms_entries, 1);
        // MDB_RESERVE: fill the buffer, the next call stores it.
        let (mut k, mut v) = (
            val(b"r"),
            MDB_val {
                mv_size: 3,
                mv_data: ptr::null_mut(),
            },
        );
        ok(mdb_put(t, dbi, &mut k, &mut v, MDB_RESERVE));
        assert_eq!(bytes(&v), [0, 0, 0]);
        std::ptr::copy_nonoverlapping(b"abc".as_ptr(), v.mv_data as *mut u8, 3);
        ok(mdb_get(t, dbi, &mut val(b"r"), &mut out));
        assert_eq!(bytes(&out), b"abc");
        let mut v = MDB_val {
            mv_size: 2,
            mv_data: ptr::null_mut(),
        };
        assert_eq!(
            mdb_put(
                t,
                dbi,
                &mut val(b"r"),
                &mut v,
                MDB_RESERVE | MDB_NOOVERWRITE
            ),
            MDB_KEYEXIST
        );
        assert_eq!(bytes(&v), b"abc");
        ok(mdb_del(t, dbi, &mut val(b"r"), ptr::null_mut()));
        let mut fl = 0;
        ok(mdb_dbi_flags(t, dbi, &mut fl));
        assert_eq!(fl, 0);
        ok(mdb_txn_commit(t));
    }
    let r = f.txn(MDB_RDONLY);
    // SAFETY: live handles.
    unsafe {
        let mut dbi = 0;
        ok(mdb_dbi_open(r, c"a".as_ptr(), 0, &mut dbi));
        assert_eq!(
            mdb_dbi_open(r, c"missing".as_ptr(), 0, &mut dbi),
            MDB_NOTFOUND
        );
        assert_eq!(put(r, dbi, b"q", b"q", 0), libc::EACCES);
        mdb_txn_abort(r);
    }
}

#[test]
fn cursor_ends_and_delete() {
    let f = Fixture::new(MDB_NOSYNC);
    let t = f.txn(0);
    // SAFETY: live handles throughout.
    unsafe {
        let dbi = open_db(t, "c", 0);
        for k in [b"a", b"b", b"c", b"d"] {
            ok(put(t, dbi, k, k, 0));
        }
        let mut c = ptr::null_mut();
        ok(mdb_cursor_open(t, dbi, &mut c));
        assert_eq!(cget(c, MDB_NEXT).unwrap().0, b"a"); // unpositioned NEXT = FIRST
        assert_eq!(cget(c, MDB_LAST).unwrap().0, b"d");
        assert_eq!(cget(c, MDB_NEXT), Err(MDB_NOTFOUND));
        assert_eq!(cget(c, MDB_GET_CURRENT).unwrap().0, b"d"); // stays on the last
        assert_eq!(cget(c, MDB_PREV).unwrap().0, b"c");
        // Delete under the cursor: NEXT gives the follower, PREV the one before.
        ok(mdb_cursor_del(c, 0));
        assert_eq!(cget(c, MDB_NEXT).unwrap().0, b"d");
        assert_eq!(cget(c, MDB_PREV).unwrap().0, b"b");
        // A miss of MDB_SET leaves it unpositioned.
        let (mut k, mut v) = (val(b"bb"), empty());
        assert_eq!(mdb_cursor_get(c, &mut k, &mut v, MDB_SET), MDB_NOTFOUND);
        assert_eq!(cget(c, MDB_GET_CURRENT), Err(libc::EINVAL));
        let mut k = val(b"bb");
        ok(mdb_cursor_get(c, &mut k, &mut v, MDB_SET_RANGE));
        assert_eq!(bytes(&k), b"d");
        // mdb_put behind the cursor's back, then move on.
        ok(put(t, dbi, b"e", b"e", 0));
        assert_eq!(cget(c, MDB_NEXT).unwrap().0, b"e");
        // Cursor put stands on the new pair.
        let (mut k, mut v) = (val(b"b5"), val(b"x"));
        ok(mdb_cursor_put(c, &mut k, &mut v, 0));
        assert_eq!(cget(c, MDB_NEXT).unwrap().0, b"d");
        let mut n = 0;
        assert_eq!(mdb_cursor_count(c, &mut n), MDB_INCOMPATIBLE);
        ok(mdb_txn_commit(t));
        // The write txn's cursor went with it.
        assert_eq!(cget(c, MDB_FIRST), Err(libc::EINVAL));
    }
}

#[test]
fn dupsort_cursor() {
    let f = Fixture::new(MDB_NOSYNC);
    let t = f.txn(0);
    // SAFETY: live handles throughout.
    unsafe {
        let dbi = open_db(t, "d", MDB_DUPSORT);
        for (k, v) in [
            ("a", "1"),
            ("a", "2"),
            ("a", "3"),
            ("b", "1"),
            ("c", "1"),
            ("c", "2"),
        ] {
            ok(put(t, dbi, k.as_bytes(), v.as_bytes(), 0));
        }
        assert_eq!(put(t, dbi, b"a", b"2", MDB_NODUPDATA), MDB_KEYEXIST);
        let mut fl = 0;
        ok(mdb_dbi_flags(t, dbi, &mut fl));
        assert_eq!(fl, MDB_DUPSORT);
        let mut c = ptr::null_mut();
        ok(mdb_cursor_open(t, dbi, &mut c));
        assert_eq!(cget(c, MDB_FIRST).unwrap(), (b"a".to_vec(), b"1".to_vec()));
        assert_eq!(cget(c, MDB_NEXT_DUP).unwrap().1, b"2");
        let mut n = 0;
        ok(mdb_cursor_count(c, &mut n));
        assert_eq!(n, 3);
        assert_eq!(cget(c, MDB_LAST_DUP).unwrap().1, b"3");
        assert_eq!(cget(c, MDB_NEXT_DUP), Err(MDB_NOTFOUND));
        assert_eq!(cget(c, MDB_NEXT_NODUP).unwrap().0, b"b");
        assert_eq!(
            cget(c, MDB_PREV_NODUP).unwrap(),
            (b"a".to_vec(), b"3".to_vec())
        );
        assert_eq!(cget(c, MDB_FIRST_DUP).unwrap().1, b"1");
        let (mut k, mut v) = (val(b"c"), val(b"2"));
        ok(mdb_cursor_get(c, &mut k, &mut v, MDB_GET_BOTH));
        let (mut k, mut v) = (val(b"a"), val(b"25"));
        ok(mdb_cursor_get(c, &mut k, &mut v, MDB_GET_BOTH_RANGE));
        assert_eq!(bytes(&v), b"3");
        // Delete one pair, then the rest of a key.
        let (mut k, mut v) = (val(b"a"), val(b"2"));
        ok(mdb_cursor_get(c, &mut k, &mut v, MDB_GET_BOTH));
        ok(mdb_cursor_del(c, 0));
        assert_eq!(cget(c, MDB_NEXT).unwrap(), (b"a".to_vec(), b"3".to_vec()));
        ok(mdb_cursor_del(c, MDB_NODUPDATA));
        assert_eq!(cget(c, MDB_NEXT).unwrap(), (b"b".to_vec(), b"1".to_vec()));
        ok(mdb_del(t, dbi, &mut val(b"c"), &mut val(b"1")));
        let mut st = MDB_stat::default();
        ok(mdb_stat(t, dbi, &mut st));
        assert_eq!(st.ms_entries, 2); // b/1, c/2
        mdb_cursor_close(c);
        ok(mdb_txn_commit(t));
    }
}

#[test]
fn nested_reset_renew() {
    let f = Fixture::new(MDB_NOSYNC);
    let t = f.txn(0);
    // SAFETY: live handles throughout.
    unsafe {
        let mut dbi = 0;
        ok(mdb_dbi_open(t, ptr::null(), 0, &mut dbi));
        ok(put(t, dbi, b"p", b"1", 0));
        let mut child = ptr::null_mut();
        ok(mdb_txn_begin(f.env, t, 0, &mut child));
        assert_eq!(put(t, dbi, b"x", b"x", 0), MDB_BAD_TXN); // parent busy
        ok(put(child, dbi, b"c1", b"1", 0));
        mdb_txn_abort(child);
        ok(mdb_txn_begin(f.env, t, 0, &mut child));
        ok(put(child, dbi, b"c2", b"1", 0));
        ok(mdb_txn_commit(child));
        let mut v = empty();
        assert_eq!(mdb_get(t, dbi, &mut val(b"c1"), &mut v), MDB_NOTFOUND);
        ok(mdb_get(t, dbi, &mut val(b"c2"), &mut v));
        // Committing a parent commits its live child first (as LMDB).
        ok(mdb_txn_begin(f.env, t, 0, &mut child));
        ok(put(child, dbi, b"c3", b"1", 0));
        ok(mdb_txn_commit(t));
        assert_eq!(mdb_txn_commit(child), libc::EINVAL); // freed with its parent
        let r0 = f.txn(MDB_RDONLY);
        ok(mdb_get(r0, dbi, &mut val(b"c3"), &mut v));
        mdb_txn_abort(r0);

        let r = f.txn(MDB_RDONLY);
        let id = mdb_txn_id(r);
        assert!(id > 0);
        mdb_txn_reset(r);
        // As LMDB: a reset transaction has no database handles.
        assert_eq!(mdb_get(r, dbi, &mut val(b"p"), &mut v), libc::EINVAL);
        assert_eq!(mdb_txn_id(r), id);
        let w = f.txn(0);
        ok(put(w, dbi, b"new", b"1", 0));
        ok(mdb_txn_commit(w));
        ok(mdb_txn_renew(r));
        assert!(mdb_txn_id(r) > id);
        ok(mdb_get(r, dbi, &mut val(b"new"), &mut v));
        // A read cursor outlives its transaction and can be renewed.
        let mut c = ptr::null_mut();
        ok(mdb_cursor_open(r, dbi, &mut c));
        mdb_txn_abort(r);
        assert_eq!(cget(c, MDB_FIRST), Err(libc::EINVAL));
        let r2 = f.txn(MDB_RDONLY);
        ok(mdb_cursor_renew(r2, c));
        assert_eq!(cget(c, MDB_FIRST).unwrap().0, b"c2");
        assert_eq!(mdb_cursor_txn(c), r2);
        assert_eq!(mdb_cursor_dbi(c), dbi);
        // Reset and renew under a moved cursor (its kept Sarsen cursor
        // must go before the snapshot does).
        assert_eq!(cget(c, MDB_NEXT).unwrap().0, b"c3");
        mdb_txn_reset(r2);
        assert_eq!(cget(c, MDB_NEXT), Err(MDB_BAD_TXN));
        ok(mdb_txn_renew(r2));
        ok(mdb_cursor_renew(r2, c));
        assert_eq!(cget(c, MDB_GET_CURRENT), Err(libc::EINVAL));
        assert_eq!(cget(c, MDB_LAST).unwrap().0, b"p");
        mdb_txn_abort(r2);
        mdb_cursor_close(c);
    }
}

#[test]
fn integer_and_reverse_keys() {
    let f = Fixture::new(MDB_NOSYNC);
    let t = f.txn(0);
    // SAFETY: live handles throughout.
    unsafe {
        let i = open_db(t, "int", MDB_INTEGERKEY);
        for n in [300usize, 2, 70000] {
            ok(put(t, i, &n.to_ne_bytes(), b"", 0));
        }
        assert_eq!(put(t, i, b"abc", b"", 0), MDB_BAD_VALSIZE);
        let mut c = ptr::null_mut();
        ok(mdb_cursor_open(t, i, &mut c));
        assert_eq!(cget(c, MDB_FIRST).unwrap().0, 2usize.to_ne_bytes());
        let mut fl = 0;
        ok(mdb_dbi_flags(t, i, &mut fl));
        assert_eq!(fl, MDB_INTEGERKEY);
        let r = open_db(t, "rev", MDB_REVERSEKEY);
        ok(put(t, r, b"ab", b"", 0));
        ok(put(t, r, b"ba", b"", 0));
        let mut c2 = ptr::null_mut();
        ok(mdb_cursor_open(t, r, &mut c2));
        assert_eq!(cget(c2, MDB_FIRST).unwrap().0, b"ba");
        assert!(mdb_cmp(t, r, &val(b"ba"), &val(b"ab")) < 0);
        ok(mdb_txn_commit(t));
    }
}

#[test]
fn lmdb_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.mdb"), b"lmdb").unwrap();
    let p = CString::new(dir.path().to_str().unwrap()).unwrap();
    let mut env = ptr::null_mut();
    // SAFETY: valid pointers.
    unsafe {
        ok(mdb_env_create(&mut env));
        assert_eq!(mdb_env_open(env, p.as_ptr(), 0, 0o644), MDB_INVALID);
        mdb_env_close(env);
        ok(mdb_env_create(&mut env));
        // A single LMDB file (its meta page's magic at byte 16).
        let file = dir.path().join("lmdb-file");
        let mut head = vec![0u8; 4096];
        head[16..20].copy_from_slice(&0xBEEF_C0DEu32.to_ne_bytes());
        std::fs::write(&file, head).unwrap();
        let f = CString::new(file.to_str().unwrap()).unwrap();
        ok(mdb_env_create(&mut env));
        assert_eq!(
            mdb_env_open(env, f.as_ptr(), MDB_NOSUBDIR, 0o644),
            MDB_INVALID
        );
        mdb_env_close(env);
        ok(mdb_env_create(&mut env));
        let missing = CString::new(dir.path().join("nope").to_str().unwrap()).unwrap();
        assert_eq!(mdb_env_open(env, missing.as_ptr(), 0, 0o644), libc::ENOENT);
        mdb_env_close(env);
    }
}

#[test]
fn env_info_flags_and_close_with_live_txn() {
    let f = Fixture::new(MDB_NOSYNC | MDB_NOTLS);
    // SAFETY: live handles throughout.
    unsafe {
        let mut fl = 0;
        ok(mdb_env_get_flags(f.env, &mut fl));
        assert_eq!(fl & (MDB_NOSYNC | MDB_NOTLS), MDB_NOSYNC | MDB_NOTLS);
        // After open the durability flags may change (for later write
        // transactions); the others that shape the open environment may not.
        assert_eq!(mdb_env_set_flags(f.env, MDB_WRITEMAP, 1), libc::EINVAL);
        assert_eq!(mdb_env_set_flags(f.env, MDB_RDONLY, 1), libc::EINVAL);
        ok(mdb_env_set_flags(f.env, MDB_NOSYNC, 0));
        ok(mdb_env_get_flags(f.env, &mut fl));
        assert_eq!(fl & MDB_NOSYNC, 0);
        let mut info = std::mem::zeroed::<MDB_envinfo>();
        ok(mdb_env_info(f.env, &mut info));
        assert_eq!(info.me_maxreaders, 126);
        let mut path = ptr::null();
        ok(mdb_env_get_path(f.env, &mut path));
        assert!(!CStr::from_ptr(path).to_bytes().is_empty());
        let mut x = 7u8;
        ok(mdb_env_set_userctx(f.env, (&mut x as *mut u8).cast()));
        assert_eq!(mdb_env_get_userctx(f.env), (&mut x as *mut u8).cast());
        assert!(mdb_env_get_maxkeysize(f.env) > 511);
        let mut dead = -1;
        ok(mdb_reader_check(f.env, &mut dead));
        assert_eq!(dead, 0);
        ok(mdb_env_sync(f.env, 1));
        let mut fd = -1;
        ok(mdb_env_get_fd(f.env, &mut fd));
        let mut st = std::mem::zeroed::<libc::stat>();
        assert_eq!(libc::fstat(fd, &mut st), 0);
        assert!(st.st_size > 0);
    }
    // Closing an env with a live transaction leaks instead of freeing.
    let g = Fixture::new(MDB_NOSYNC);
    let r = g.txn(MDB_RDONLY);
    // SAFETY: the handles stay memory-safe (leaked env).
    unsafe {
        mdb_env_close(g.env);
        let mut dbi = 0;
        ok(mdb_dbi_open(r, ptr::null(), 0, &mut dbi));
        mdb_txn_abort(r);
        let mut st = MDB_stat::default();
        assert_eq!(mdb_env_stat(g.env, &mut st), libc::EINVAL);
    }
    std::mem::forget(g); // its env handle is closed already
}

/// Read transactions and cursors on four threads while a fifth commits:
/// handles come from shared slabs, nothing deadlocks, every
/// reader sees a consistent snapshot (both keys equal).
#[test]
fn threads() {
    let f = Fixture::new(MDB_NOSYNC);
    let env = f.env as usize;
    let t = f.txn(0);
    let mut dbi = 0;
    // SAFETY: live handles.
    unsafe {
        ok(mdb_dbi_open(t, ptr::null(), 0, &mut dbi));
        ok(put(t, dbi, b"a", &0u64.to_ne_bytes(), 0));
        ok(put(t, dbi, b"b", &0u64.to_ne_bytes(), 0));
        ok(mdb_txn_commit(t));
    }
    std::thread::scope(|s| {
        s.spawn(move || {
            for i in 1..=200u64 {
                let mut w = ptr::null_mut();
                // SAFETY: the env outlives the scope; one thread per txn.
                unsafe {
                    ok(mdb_txn_begin(
                        env as *mut MDB_env,
                        ptr::null_mut(),
                        0,
                        &mut w,
                    ));
                    ok(put(w, dbi, b"a", &i.to_ne_bytes(), 0));
                    ok(put(w, dbi, b"b", &i.to_ne_bytes(), 0));
                    ok(mdb_txn_commit(w));
                }
            }
        });
        for _ in 0..4 {
            s.spawn(move || {
                for _ in 0..300 {
                    let mut r = ptr::null_mut();
                    let mut c = ptr::null_mut();
                    // SAFETY: as above.
                    unsafe {
                        ok(mdb_txn_begin(
                            env as *mut MDB_env,
                            ptr::null_mut(),
                            MDB_RDONLY,
                            &mut r,
                        ));
                        ok(mdb_cursor_open(r, dbi, &mut c));
                        let (_, a) = cget(c, MDB_FIRST).unwrap();
                        let (_, b) = cget(c, MDB_NEXT).unwrap();
                        assert_eq!(a, b);
                        mdb_cursor_close(c);
                        mdb_txn_abort(r);
                    }
                }
            });
        }
    });
}

/// LMDB's answers that py-lmdb's test suite checks: empty keys, txn ids of
/// a new environment, creating in a read transaction, `maxdbs` 0.
#[test]
fn lmdb_edge_codes() {
    let dir = tempfile::tempdir().unwrap();
    let p = CString::new(dir.path().to_str().unwrap()).unwrap();
    let mut env = ptr::null_mut();
    // SAFETY: live handles throughout.
    unsafe {
        ok(mdb_env_create(&mut env));
        ok(mdb_env_set_maxdbs(env, 0));
        ok(mdb_env_open(env, p.as_ptr(), MDB_NOSYNC, 0o644));
        let mut r = ptr::null_mut();
        ok(mdb_txn_begin(env, ptr::null_mut(), MDB_RDONLY, &mut r));
        assert_eq!(mdb_txn_id(r), 0); // a new environment's snapshot, as LMDB
        let mut dbi = 0;
        assert_eq!(
            mdb_dbi_open(r, c"x".as_ptr(), MDB_CREATE, &mut dbi),
            libc::EACCES
        );
        mdb_txn_abort(r);
        let mut w = ptr::null_mut();
        ok(mdb_txn_begin(env, ptr::null_mut(), 0, &mut w));
        assert_eq!(mdb_txn_id(w), 1);
        assert_eq!(
            mdb_dbi_open(w, c"x".as_ptr(), MDB_CREATE, &mut dbi),
            MDB_DBS_FULL
        );
        ok(mdb_dbi_open(w, ptr::null(), 0, &mut dbi));
        assert_eq!(put(w, dbi, b"", b"v", 0), MDB_BAD_VALSIZE);
        let mut v = empty();
        assert_eq!(mdb_get(w, dbi, &mut val(b""), &mut v), MDB_BAD_VALSIZE);
        let mut c = ptr::null_mut();
        ok(mdb_cursor_open(w, dbi, &mut c));
        let mut k = val(b"");
        assert_eq!(
            mdb_cursor_get(c, &mut k, &mut v, MDB_SET_RANGE),
            MDB_BAD_VALSIZE
        );
        ok(put(w, dbi, b"k", b"v", 0));
        ok(mdb_txn_commit(w));
        let mut info = std::mem::zeroed::<MDB_envinfo>();
        ok(mdb_env_info(env, &mut info));
        ok(mdb_txn_begin(env, ptr::null_mut(), MDB_RDONLY, &mut r));
        assert_eq!(mdb_txn_id(r), 1);
        mdb_txn_abort(r);
        assert_eq!(info.me_last_txnid, 1);
        mdb_env_close(env);
    }
}

/// A handle stays refused once ended, also after its slot (and its
/// transaction object) is reused by new handles, on this thread or
/// another; the new handles work.
#[test]
fn stale_handles_are_refused_after_reuse() {
    let f = Fixture::new(MDB_NOSYNC);
    let mut dbi = 0;
    let w = f.txn(0);
    // SAFETY: live handles, and ended ones only passed back to be refused.
    unsafe {
        ok(mdb_dbi_open(w, ptr::null(), 0, &mut dbi));
        ok(put(w, dbi, b"k", b"v", 0));
        ok(mdb_txn_commit(w));
        let old = f.txn(MDB_RDONLY);
        let mut oldc = ptr::null_mut();
        ok(mdb_cursor_open(old, dbi, &mut oldc));
        mdb_cursor_close(oldc);
        mdb_txn_abort(old);
        let mut oldenv = ptr::null_mut();
        ok(mdb_env_create(&mut oldenv));
        mdb_env_close(oldenv);
        let check = |txn: *mut MDB_txn, c: *mut MDB_cursor, e: *mut MDB_env| {
            let mut v = empty();
            assert_eq!(mdb_get(txn, dbi, &mut val(b"k"), &mut v), libc::EINVAL);
            assert_eq!(mdb_txn_renew(txn), libc::EINVAL);
            assert_eq!(mdb_txn_id(txn), 0);
            assert_eq!(mdb_txn_commit(txn), libc::EINVAL);
            mdb_txn_abort(txn);
            let (mut k, mut v) = (empty(), empty());
            assert_eq!(mdb_cursor_get(c, &mut k, &mut v, MDB_FIRST), libc::EINVAL);
            assert!(mdb_cursor_txn(c).is_null());
            mdb_cursor_close(c);
            let mut fl = 0;
            assert_eq!(mdb_env_get_flags(e, &mut fl), libc::EINVAL);
        };
        // The next handles (the slot just freed, on this thread).
        let r = f.txn(MDB_RDONLY);
        let mut c = ptr::null_mut();
        ok(mdb_cursor_open(r, dbi, &mut c));
        let mut e = ptr::null_mut();
        ok(mdb_env_create(&mut e));
        check(old, oldc, oldenv);
        assert_eq!(mdb_cursor_txn(c), r);
        mdb_env_close(e);
        mdb_cursor_close(c);
        mdb_txn_abort(r);
        let (old, oldc, oldenv) = (old as usize, oldc as usize, oldenv as usize);
        let env = f.env as usize;
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    for _ in 0..50 {
                        let mut envs = Vec::new();
                        let mut e = ptr::null_mut();
                        ok(mdb_env_create(&mut e));
                        envs.push(e);
                        let mut r = ptr::null_mut();
                        let flags = MDB_RDONLY;
                        ok(mdb_txn_begin(env as *mut _, ptr::null_mut(), flags, &mut r));
                        assert_ne!(r as usize, old);
                        let mut c = ptr::null_mut();
                        ok(mdb_cursor_open(r, dbi, &mut c));
                        assert_ne!(c as usize, oldc);
                        let (mut k, mut v) = (empty(), empty());
                        ok(mdb_cursor_get(c, &mut k, &mut v, MDB_FIRST));
                        assert_eq!(bytes(&v), b"v");
                        assert_eq!(mdb_cursor_txn(c), r);
                        check(old as *mut _, oldc as *mut _, oldenv as *mut _);
                        mdb_cursor_close(c);
                        mdb_txn_abort(r);
                        for e in envs {
                            mdb_env_close(e);
                        }
                    }
                });
            }
        });
        check(old as *mut _, oldc as *mut _, oldenv as *mut _);
    }
}

/// Database handles opened or closed after a transaction object last
/// looked at the table (its copy is refreshed): a new one works in a
/// transaction that reuses an older object, a closed one is refused in a
/// transaction that used it.
#[test]
fn database_handles_seen_after_changes() {
    let f = Fixture::new(MDB_NOSYNC);
    // SAFETY: live handles.
    unsafe {
        let w = f.txn(0);
        let mut main = 0;
        ok(mdb_dbi_open(w, ptr::null(), 0, &mut main));
        ok(mdb_txn_commit(w));
        for _ in 0..4 {
            let r = f.txn(MDB_RDONLY);
            let mut v = empty();
            assert_eq!(mdb_get(r, main, &mut val(b"none"), &mut v), MDB_NOTFOUND);
            mdb_txn_abort(r);
        }
        let w = f.txn(0);
        let d = open_db(w, "x", 0);
        ok(put(w, d, b"k", b"v", 0));
        ok(mdb_txn_commit(w));
        let r = f.txn(MDB_RDONLY);
        let mut v = empty();
        ok(mdb_get(r, d, &mut val(b"k"), &mut v));
        assert_eq!(bytes(&v), b"v");
        mdb_dbi_close(f.env, d);
        assert_eq!(mdb_get(r, d, &mut val(b"k"), &mut v), libc::EINVAL);
        mdb_txn_abort(r);
    }
}

/// `mdb_env_set_flags` with `MDB_NOSYNC` after open (heed's run-time
/// switch): the write transactions begun while it is set commit unsynced
/// (Sarsen's `SafeNoSync` in an environment opened durable), the ones
/// after it is cleared durably. Read back through the Rust API on the same
/// files (durable txnid against the last txnid).
#[test]
fn sync_flags_switch_at_run_time() {
    let f = Fixture::new(0);
    // SAFETY: a live env and pointers to live values.
    let commit = |k: &[u8]| unsafe {
        let t = f.txn(0);
        let mut dbi = 0;
        ok(mdb_dbi_open(t, ptr::null(), 0, &mut dbi));
        ok(put(t, dbi, k, b"v", 0));
        ok(mdb_txn_commit(t));
    };
    // SAFETY: the test's own directory, also open through the C API here.
    let rust = unsafe { sarsen::Env::open(f._dir.path()) }.unwrap();
    let synced = || {
        let i = rust.info().unwrap();
        i.durable_txnid == i.last_txnid
    };
    commit(b"a");
    assert!(synced(), "a default commit is durable");
    for (on, key, durable) in [(1, &b"b"[..], false), (0, b"c", true)] {
        // SAFETY: a live env.
        ok(unsafe { mdb_env_set_flags(f.env, MDB_NOSYNC, on) });
        let mut flags = 0;
        // SAFETY: a live env and a writable u32.
        ok(unsafe { mdb_env_get_flags(f.env, &mut flags) });
        assert_eq!(flags & MDB_NOSYNC != 0, on == 1);
        commit(key);
        assert_eq!(synced(), durable, "commit with MDB_NOSYNC {on}");
    }
}
