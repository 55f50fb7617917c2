//! Every error is produced where it should be, and leaves the database readable, unchanged and
//! (where that makes sense) writable.

mod common;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sarsen::{Database, Durability, Env, EnvOptions, Error};

/// Fills the main db and a named db "n" with a few hundred entries over several commits.
fn populate(env: &Env, seed: u64) -> (Map, Map, Database) {
    let mut rng = StdRng::seed_from_u64(seed);
    let main = env.main_db();
    let (mut a, mut b) = (Map::new(), Map::new());
    let mut w = env.write_txn().unwrap();
    let named = w.create_db(Some("n")).unwrap();
    w.commit().unwrap();
    for _ in 0..4 {
        let mut w = env.write_txn().unwrap();
        for _ in 0..150 {
            let k = format!("key-{:05}", rng.random_range(0..2000)).into_bytes();
            let v = vec![rng.random::<u8>(); rng.random_range(0..300)];
            if rng.random_bool(0.5) {
                w.put(main, &k, &v).unwrap();
                a.insert(k, v);
            } else {
                w.put(named, &k, &v).unwrap();
                b.insert(k, v);
            }
        }
        w.commit().unwrap();
    }
    (a, b, named)
}

fn check_both(env: &Env, a: &Map, b: &Map, what: &str) {
    let r = env.read_txn().unwrap();
    let named = r.open_db(Some("n")).unwrap().expect("db n exists");
    check_db(&r, env.main_db(), a, &format!("{what}: main"), true);
    check_db(&r, named, b, &format!("{what}: n"), true);
}

#[test]
fn key_too_large() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path(), opts(4096, Durability::NoSync));
    let (mut a, b, named) = populate(&env, 1);
    let max = env.max_key_size();
    assert_eq!(max, 2016, "max_key_size at 4096-byte pages (contract)");
    let mut w = env.write_txn().unwrap();
    for db in [env.main_db(), named] {
        for len in [max + 1, max + 100, 10 * max] {
            match w.put(db, &vec![b'k'; len], b"v") {
                Err(Error::KeyTooLarge { len: l, max: m }) => assert_eq!((l, m), (len, max)),
                other => panic!("put {len}-byte key: {other:?}"),
            }
        }
    }
    check_db(&w, env.main_db(), &a, "in txn after KeyTooLarge", true);
    check_db(&w, named, &b, "in txn after KeyTooLarge", true);
    // the same txn still works, including a key of exactly max bytes and empty key/value
    w.put(env.main_db(), &vec![b'k'; max], b"max").unwrap();
    w.put(env.main_db(), b"", b"").unwrap();
    a.insert(vec![b'k'; max], b"max".to_vec());
    a.insert(Vec::new(), Vec::new());
    w.commit().unwrap();
    check_both(&env, &a, &b, "after commit");
    let r = env.read_txn().unwrap();
    match r.get(env.main_db(), &vec![b'k'; max + 1]) {
        Ok(None) | Err(Error::KeyTooLarge { .. }) => {}
        other => panic!("get with a too-large key: {other:?}"),
    }
    assert_eq!(r.get(env.main_db(), b"").unwrap(), Some(&b""[..]));
}

#[test]
fn value_too_large() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(
        dir.path(),
        opts(4096, Durability::NoSync).max_size(64 << 20),
    );
    let (a, b, named) = populate(&env, 2);
    let max = env.max_value_size();
    assert_eq!(max, 0x7fff_ffff, "max_value_size (contract)");
    let len = max + 1;
    // A read-only, never-touched anonymous mapping: no memory is committed for it.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        eprintln!("SKIP value_too_large: cannot reserve {len} bytes of address space");
        return;
    }
    let huge: &[u8] = unsafe { std::slice::from_raw_parts(p as *const u8, len) };
    let mut w = env.write_txn().unwrap();
    for db in [env.main_db(), named] {
        match w.put(db, b"key-00001", huge) {
            Err(Error::ValueTooLarge { len: l, max: m }) => assert_eq!((l, m), (len, max)),
            other => panic!("put of a {len}-byte value: {other:?}"),
        }
    }
    check_db(&w, env.main_db(), &a, "in txn after ValueTooLarge", true);
    check_db(&w, named, &b, "in txn after ValueTooLarge", true);
    let mut a = a;
    w.put(env.main_db(), b"after", b"ok").unwrap();
    a.insert(b"after".to_vec(), b"ok".to_vec());
    w.commit().unwrap();
    unsafe { libc::munmap(p, len) };
    check_both(&env, &a, &b, "after commit");
}

#[test]
fn upper_bound_reached_then_recovers_after_freeing_space() {
    let max_size: u64 = 1 << 20;
    let dir = tempfile::tempdir().unwrap();
    let o = || {
        EnvOptions::new()
            .page_size(4096)
            .max_size(max_size)
            .growth_step(64 << 10)
            .durability(Durability::NoSync)
    };
    let env = open(dir.path(), o());
    assert_eq!(
        env.info().unwrap().geometry.upper,
        max_size,
        "geometry.upper = max_size"
    );
    let mut w = env.write_txn().unwrap();
    let da = w.create_db(Some("a")).unwrap();
    let db = w.create_db(Some("b")).unwrap();
    w.commit().unwrap();
    let (mut ma, mut mb) = (Map::new(), Map::new());
    let mut hit = None;
    'fill: for t in 0..10_000u32 {
        let mut w = env.write_txn().unwrap();
        let (mut pa, mut pb) = (ma.clone(), mb.clone());
        for j in 0..16u32 {
            let k = format!("{t:06}-{j:02}").into_bytes();
            let v = vec![(t % 256) as u8; 1000];
            let (h, m) = if t % 2 == 0 {
                (da, &mut pa)
            } else {
                (db, &mut pb)
            };
            if let Err(e) = w.put(h, &k, &v) {
                hit = Some((t, "put", e));
                break 'fill;
            }
            m.insert(k, v);
        }
        if let Err(e) = w.commit() {
            hit = Some((t, "commit", e));
            break;
        }
        ma = pa;
        mb = pb;
    }
    let (t, step, e) = hit.expect("1 MiB database never filled up");
    match e {
        Error::UpperBoundReached { upper } => {
            assert_eq!(upper, max_size, "UpperBoundReached.upper")
        }
        other => panic!("txn {t}: {step} failed with {other:?}, expected UpperBoundReached"),
    }
    let info = env.info().unwrap();
    let len = std::fs::metadata(dir.path().join("data.sdb"))
        .unwrap()
        .len();
    assert!(
        info.geometry.now <= max_size && len <= max_size,
        "file exceeds max_size: {info:?}, len {len}"
    );
    assert!(
        ma.len() + mb.len() > 100,
        "filled up after only {} entries",
        ma.len() + mb.len()
    );

    // previous commits intact and readable
    let check = |env: &Env, ma: &Map, mb: &Map, what: &str| {
        let r = env.read_txn().unwrap();
        let da = r.open_db(Some("a")).unwrap().unwrap();
        let db = r.open_db(Some("b")).unwrap().unwrap();
        check_db(&r, da, ma, &format!("{what}: a"), true);
        check_db(&r, db, mb, &format!("{what}: b"), true);
    };
    check(&env, &ma, &mb, "after UpperBoundReached");

    // free space, then the db is writable again
    let mut w = env.write_txn().unwrap();
    w.clear_db(db)
        .unwrap_or_else(|e| panic!("clear_db on a full database: {e:?}"));
    w.commit()
        .unwrap_or_else(|e| panic!("commit of clear_db on a full database: {e:?}"));
    mb.clear();
    check(&env, &ma, &mb, "after clearing b");
    for t in 0..20u32 {
        let mut w = env.write_txn().unwrap();
        for j in 0..10u32 {
            let k = format!("again-{t:03}-{j:02}").into_bytes();
            w.put(db, &k, &[7u8; 1000])
                .unwrap_or_else(|e| panic!("write after freeing space: {e:?}"));
            mb.insert(k, vec![7u8; 1000]);
        }
        w.commit()
            .unwrap_or_else(|e| panic!("commit after freeing space: {e:?}"));
    }
    check(&env, &ma, &mb, "after writing again");
    drop(env);
    let env = open(dir.path(), o());
    check(&env, &ma, &mb, "after reopen");
}

#[test]
fn read_only_env_refuses_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = {
        let env = open(dir.path(), opts(4096, Durability::Durable));
        let (a, b, _) = populate(&env, 3);
        (a, b)
    };
    {
        let env = open(dir.path(), EnvOptions::new().read_only(true));
        match env.write_txn() {
            Err(Error::ReadOnly) => {}
            Err(e) => panic!("write_txn on a read-only env: {e:?}"),
            Ok(_) => panic!("write_txn on a read-only env succeeded"),
        }
        check_both(&env, &a, &b, "read-only env");
        assert!(
            matches!(env.write_txn(), Err(Error::ReadOnly)),
            "second write_txn on a read-only env"
        );
        check_both(&env, &a, &b, "read-only env after second refusal");
    }
    // unchanged and writable when opened read-write again
    let env = open(dir.path(), EnvOptions::new());
    check_both(&env, &a, &b, "reopened read-write");
    let mut w = env.write_txn().unwrap();
    w.put(env.main_db(), b"new", b"entry").unwrap();
    w.commit().unwrap();

    // read-only open of a path that does not exist is an error (no panic, nothing created)
    let missing = dir.path().join("missing");
    assert!(unsafe { EnvOptions::new().read_only(true).open(&missing) }.is_err());
}

#[test]
fn unknown_and_dropped_databases() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path(), opts(4096, Durability::NoSync));
    let (a, b, named) = populate(&env, 4);
    let r = env.read_txn().unwrap();
    assert_eq!(
        r.open_db(Some("nope")).unwrap(),
        None,
        "open_db(unknown) in RoTxn"
    );
    drop(r);
    let mut w = env.write_txn().unwrap();
    assert_eq!(
        w.open_db(Some("nope")).unwrap(),
        None,
        "open_db(unknown) in RwTxn"
    );
    let x = w.create_db(Some("x")).unwrap();
    w.put(x, b"in-x", b"1").unwrap();
    w.commit().unwrap();
    assert_eq!(
        env.read_txn().unwrap().list_dbs().unwrap(),
        vec!["n".to_string(), "x".to_string()]
    );

    let expect_dnf = |r: sarsen::Result<()>, what: &str| match r {
        Err(Error::DbNotFound { name }) => assert_eq!(name, "x", "{what}: DbNotFound.name"),
        other => panic!("{what}: expected DbNotFound, got {other:?}"),
    };
    // drop x; the handle is dead in the same txn ...
    let mut w = env.write_txn().unwrap();
    w.drop_db(x).unwrap();
    expect_dnf(w.get(x, b"in-x").map(|_| ()), "get in the dropping txn");
    expect_dnf(w.put(x, b"k", b"v"), "put in the dropping txn");
    assert_eq!(w.open_db(Some("x")).unwrap(), None);
    w.commit().unwrap();
    // ... and in later transactions
    let mut w = env.write_txn().unwrap();
    expect_dnf(w.get(x, b"in-x").map(|_| ()), "get");
    expect_dnf(w.put(x, b"k", b"v"), "put");
    expect_dnf(w.delete(x, b"in-x").map(|_| ()), "delete");
    let long = vec![b'k'; env.max_key_size() + 1];
    expect_dnf(w.delete(x, &long).map(|_| ()), "delete of a too long key");
    assert!(!w.delete(env.main_db(), &long).unwrap(), "long key absent");
    expect_dnf(w.iter(x).map(|_| ()), "iter");
    expect_dnf(w.range(x, &b"a"[..]..).map(|_| ()), "range");
    expect_dnf(w.cursor(x).map(|_| ()), "cursor");
    expect_dnf(w.stat(x).map(|_| ()), "stat");
    expect_dnf(w.clear_db(x), "clear_db");
    expect_dnf(w.drop_db(x), "drop_db");
    check_db(&w, env.main_db(), &a, "rw main after DbNotFound", true);
    check_db(&w, named, &b, "rw n after DbNotFound", true);
    w.put(env.main_db(), b"still", b"writable").unwrap();
    w.commit().unwrap();
    let r = env.read_txn().unwrap();
    expect_dnf(r.get(x, b"in-x").map(|_| ()), "ro get");
    expect_dnf(r.iter(x).map(|_| ()), "ro iter");
    expect_dnf(r.stat(x).map(|_| ()), "ro stat");
    assert_eq!(r.list_dbs().unwrap(), vec!["n".to_string()]);
    assert_eq!(
        r.get(env.main_db(), b"still").unwrap(),
        Some(&b"writable"[..])
    );
    drop(r);
    let mut a = a;
    a.insert(b"still".to_vec(), b"writable".to_vec());
    check_both(&env, &a, &b, "after dropped-handle errors");

    // recreating "x" gives an empty database
    let mut w = env.write_txn().unwrap();
    let x2 = w.create_db(Some("x")).unwrap();
    assert_eq!(w.stat(x2).unwrap().entries, 0);
    assert_eq!(w.get(x2, b"in-x").unwrap(), None);
    w.commit().unwrap();
}

#[test]
fn invalid_page_size() {
    let dir = tempfile::tempdir().unwrap();
    for ps in [0u32, 1, 256, 511, 513, 1000, 3000, 4097, 131072, u32::MAX] {
        let p = dir.path().join(format!("ps{ps}"));
        match unsafe { EnvOptions::new().page_size(ps).open(&p) } {
            Err(Error::InvalidArgument(_)) => {}
            Err(e) => panic!("page_size {ps}: expected InvalidArgument, got {e:?}"),
            Ok(env) => panic!("page_size {ps}: opened with page size {}", env.page_size()),
        }
        // nothing half-created that would break a valid open
        let env = open(&p, EnvOptions::new().page_size(512));
        assert_eq!(env.page_size(), 512);
        let mut w = env.write_txn().unwrap();
        w.put(env.main_db(), b"k", b"v").unwrap();
        w.commit().unwrap();
    }
    // an existing env opened with an invalid page size: either the option is ignored or it is
    // refused; the data is untouched either way
    let p = dir.path().join("existing");
    let (a, b) = {
        let env = open(&p, opts(4096, Durability::Durable));
        let (a, b, _) = populate(&env, 5);
        (a, b)
    };
    match unsafe { EnvOptions::new().page_size(1000).open(&p) } {
        Ok(env) => {
            assert_eq!(env.page_size(), 4096);
            check_both(
                &env,
                &a,
                &b,
                "existing env, invalid page_size option ignored",
            );
        }
        Err(Error::InvalidArgument(_)) => {}
        Err(e) => panic!("existing env with page_size 1000: {e:?}"),
    }
    let env = open(&p, EnvOptions::new());
    assert_eq!(env.page_size(), 4096);
    check_both(&env, &a, &b, "existing env after invalid page size");
}

#[test]
fn dbs_full() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path(), opts(4096, Durability::NoSync).max_dbs(3));
    let mut w = env.write_txn().unwrap();
    let mut hs = Vec::new();
    for name in ["d1", "d2", "d3"] {
        let h = w.create_db(Some(name)).unwrap();
        w.put(h, name.as_bytes(), b"v").unwrap();
        hs.push(h);
    }
    match w.create_db(Some("d4")) {
        Err(Error::DbsFull { max }) => assert_eq!(max, 3),
        other => panic!("4th named db with max_dbs(3): {other:?}"),
    }
    assert_eq!(w.list_dbs().unwrap(), vec!["d1", "d2", "d3"]);
    w.put(hs[0], b"more", b"x").unwrap();
    w.commit().unwrap();
    let r = env.read_txn().unwrap();
    assert_eq!(r.list_dbs().unwrap(), vec!["d1", "d2", "d3"]);
    assert_eq!(r.get(hs[0], b"more").unwrap(), Some(&b"x"[..]));
    assert_eq!(r.stat(hs[2]).unwrap().entries, 1);
}

#[test]
fn readers_full() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path(), opts(4096, Durability::NoSync).max_readers(4));
    let (a, b, _) = populate(&env, 6);
    let slots = env.info().unwrap().max_readers;
    assert!(
        (4..=64).contains(&slots),
        "max_readers(4) gave {slots} slots"
    );
    let mut held = Vec::new();
    for _ in 0..slots {
        held.push(env.read_txn().unwrap());
    }
    match env.read_txn() {
        Err(Error::ReadersFull { max }) => assert_eq!(max, slots),
        Err(e) => panic!("reader beyond {slots} slots: {e:?}"),
        Ok(_) => panic!("reader beyond {slots} slots succeeded"),
    }
    // the writer does not need a reader slot
    let mut w = env.write_txn().unwrap();
    w.put(env.main_db(), b"while-full", b"1").unwrap();
    w.commit().unwrap();
    for r in &held {
        check_db(r, env.main_db(), &a, "held reader", false);
    }
    held.pop();
    let r = env.read_txn().expect("reader after a slot was freed");
    assert_eq!(
        r.get(env.main_db(), b"while-full").unwrap(),
        Some(&b"1"[..])
    );
    drop(r);
    drop(held);
    let mut a = a;
    a.insert(b"while-full".to_vec(), b"1".to_vec());
    check_both(&env, &a, &b, "after ReadersFull");
}

/// A file that is not a Sarsen database is refused and left untouched.
#[test]
fn foreign_file_is_refused_and_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    for (i, len) in [100usize, 4096, 3 * 4096, 64 * 1024]
        .into_iter()
        .enumerate()
    {
        let p = dir.path().join(format!("f{i}"));
        std::fs::create_dir(&p).unwrap();
        let mut junk = vec![0u8; len];
        rng.fill(&mut junk[..]);
        std::fs::write(p.join("data.sdb"), &junk).unwrap();
        match unsafe { Env::open(&p) } {
            Err(Error::Incompatible(_))
            | Err(Error::Corrupted { .. })
            | Err(Error::InvalidArgument(_)) => {}
            Err(e) => eprintln!("foreign file of {len} bytes refused with {e:?}"),
            Ok(_) => panic!("a {len}-byte random file opened as a database"),
        }
        assert_eq!(
            std::fs::read(p.join("data.sdb")).unwrap(),
            junk,
            "foreign file was modified"
        );
    }
}
