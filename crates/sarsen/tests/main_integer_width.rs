//! An empty main database recorded with integer keys of one width takes
//! the other width when opened with it (LMDB's `MDB_INTEGERKEY` compares
//! integers of the size it is given; `sarsen-lmdb` opens the main database
//! with the width of its first put), also once emptied by deletes; one
//! that holds keys, or records another order, keeps its order. The same
//! holds for the width of integer duplicate values (`MDB_INTEGERDUP`).

use std::path::Path;

use sarsen::{DbOptions, DupMode, Env, EnvOptions, Error, KeyOrder};

fn open(dir: &Path) -> Env {
    // SAFETY: the test's own temporary directory; nothing else maps it.
    unsafe { EnvOptions::new().page_size(512).open(dir) }.unwrap()
}

fn by(o: KeyOrder) -> DbOptions {
    DbOptions::new().key_order(o)
}

fn is_mismatch<T: std::fmt::Debug>(r: sarsen::Result<T>) -> bool {
    matches!(r, Err(Error::KeyOrderMismatch { .. }))
}

/// The main database's recorded order, read in a fresh read transaction.
fn recorded(env: &Env) -> KeyOrder {
    env.read_txn().unwrap().key_order(env.main_db()).unwrap()
}

#[test]
fn empty_main_database_takes_the_other_integer_width() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path());
    let main = env.main_db();
    let mut w = env.write_txn().unwrap();
    w.open_db_with(None, &by(KeyOrder::U64)).unwrap();
    w.commit().unwrap();
    assert!(matches!(recorded(&env), KeyOrder::U64));

    // A reader may open it with either width while it is empty.
    let r = env.read_txn().unwrap();
    assert_eq!(
        r.open_db_with(None, &by(KeyOrder::U32)).unwrap(),
        Some(main)
    );
    drop(r);

    // A writer records the other width, and its puts take it.
    let mut w = env.write_txn().unwrap();
    assert_eq!(
        w.open_db_with(None, &by(KeyOrder::U32)).unwrap(),
        Some(main)
    );
    assert!(matches!(w.key_order(main).unwrap(), KeyOrder::U32));
    for i in [7u32, 1 << 20, 2] {
        w.put(main, &i.to_ne_bytes(), b"v").unwrap();
    }
    assert!(w.put(main, &9u64.to_ne_bytes(), b"v").is_err());
    w.commit().unwrap();
    drop(env);
    let env = open(dir.path());
    assert!(matches!(recorded(&env), KeyOrder::U32));
    let r = env.read_txn().unwrap();
    let keys: Vec<u32> = r
        .iter(main)
        .unwrap()
        .map(|e| u32::from_ne_bytes(e.unwrap().0.try_into().unwrap()))
        .collect();
    assert_eq!(keys, [2, 7, 1 << 20]);
    drop(r);

    // Holding keys, it keeps its width.
    let mut w = env.write_txn().unwrap();
    assert!(is_mismatch(w.open_db_with(None, &by(KeyOrder::U64))));
    // Emptied by deletes, it takes the other width again.
    for i in [7u32, 1 << 20, 2] {
        assert!(w.delete(main, &i.to_ne_bytes()).unwrap());
    }
    w.commit().unwrap();
    let mut w = env.write_txn().unwrap();
    assert_eq!(
        w.open_db_with(None, &by(KeyOrder::U64)).unwrap(),
        Some(main)
    );
    w.put(main, &(1u64 << 40).to_ne_bytes(), b"v").unwrap();
    w.put(main, &3u64.to_ne_bytes(), b"v").unwrap();
    w.commit().unwrap();
    assert!(matches!(recorded(&env), KeyOrder::U64));
    let r = env.read_txn().unwrap();
    let first = r.iter(main).unwrap().next().unwrap().unwrap().0.to_vec();
    assert_eq!(first, 3u64.to_ne_bytes());
}

#[test]
fn empty_main_database_in_another_order_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path());
    let mut w = env.write_txn().unwrap();
    w.open_db_with(None, &by(KeyOrder::ReverseBytewise))
        .unwrap();
    w.commit().unwrap();
    let mut w = env.write_txn().unwrap();
    assert!(is_mismatch(w.open_db_with(None, &by(KeyOrder::U32))));
    assert!(is_mismatch(w.open_db_with(None, &by(KeyOrder::U64))));
    drop(w);
    assert!(matches!(recorded(&env), KeyOrder::ReverseBytewise));
}

/// Only an integer order changes a recorded integer width: asking an
/// empty integer-keyed main database for bytes, or for a reverse order,
/// is a mismatch (in a read and in a write transaction), and the recorded
/// width stays.
#[test]
fn empty_integer_main_database_refuses_other_kinds_of_order() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path());
    let mut w = env.write_txn().unwrap();
    w.open_db_with(None, &by(KeyOrder::U32)).unwrap();
    w.commit().unwrap();
    for o in [KeyOrder::Bytewise, KeyOrder::ReverseBytewise] {
        let r = env.read_txn().unwrap();
        assert!(is_mismatch(r.open_db_with(None, &by(o.clone()))));
        drop(r);
        let mut w = env.write_txn().unwrap();
        assert!(is_mismatch(w.open_db_with(None, &by(o))));
        drop(w);
        assert!(matches!(recorded(&env), KeyOrder::U32));
    }
}

/// `U64` keys whose values are fixed-size integers of `width` (as
/// `sarsen-lmdb` opens an `MDB_INTEGERKEY | MDB_DUPSORT | MDB_INTEGERDUP`
/// main database).
fn int_dups(width: KeyOrder) -> DbOptions {
    by(KeyOrder::U64).dup_sort(width).dup_fixed()
}

fn is_dup_mismatch<T: std::fmt::Debug>(r: sarsen::Result<T>) -> bool {
    matches!(r, Err(Error::DupModeMismatch { .. }))
}

/// The main database's recorded duplicate mode: the order of values and
/// whether they are fixed-size.
fn recorded_dups(env: &Env) -> (KeyOrder, bool) {
    let d: DupMode = env
        .read_txn()
        .unwrap()
        .dup_mode(env.main_db())
        .unwrap()
        .unwrap();
    (d.order, d.fixed)
}

#[test]
fn empty_main_database_takes_the_other_width_of_integer_values() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path());
    let main = env.main_db();
    let key = 5u64.to_ne_bytes();
    let mut w = env.write_txn().unwrap();
    w.open_db_with(None, &int_dups(KeyOrder::U64)).unwrap();
    w.commit().unwrap();
    assert!(matches!(recorded_dups(&env), (KeyOrder::U64, true)));

    // A reader may open it with either width while it is empty.
    let r = env.read_txn().unwrap();
    assert_eq!(
        r.open_db_with(None, &int_dups(KeyOrder::U32)).unwrap(),
        Some(main)
    );
    drop(r);

    // A writer records the other width, and its puts take it.
    let mut w = env.write_txn().unwrap();
    assert_eq!(
        w.open_db_with(None, &int_dups(KeyOrder::U32)).unwrap(),
        Some(main)
    );
    for v in [7u32, 1 << 20, 2] {
        w.put(main, &key, &v.to_ne_bytes()).unwrap();
    }
    assert!(w.put(main, &key, &9u64.to_ne_bytes()).is_err());
    w.commit().unwrap();
    drop(env);
    let env = open(dir.path());
    assert!(matches!(recorded_dups(&env), (KeyOrder::U32, true)));
    let r = env.read_txn().unwrap();
    let vals: Vec<u32> = r
        .iter(main)
        .unwrap()
        .map(|e| u32::from_ne_bytes(e.unwrap().1.try_into().unwrap()))
        .collect();
    assert_eq!(vals, [2, 7, 1 << 20]);
    drop(r);

    // Holding values, it keeps their width.
    let mut w = env.write_txn().unwrap();
    assert!(is_dup_mismatch(
        w.open_db_with(None, &int_dups(KeyOrder::U64))
    ));
    // Emptied by deletes, it takes the other width again.
    for v in [7u32, 1 << 20, 2] {
        assert!(w.delete_dup(main, &key, &v.to_ne_bytes()).unwrap());
    }
    w.commit().unwrap();
    let mut w = env.write_txn().unwrap();
    assert_eq!(
        w.open_db_with(None, &int_dups(KeyOrder::U64)).unwrap(),
        Some(main)
    );
    w.put(main, &key, &(1u64 << 40).to_ne_bytes()).unwrap();
    w.put(main, &key, &3u64.to_ne_bytes()).unwrap();
    w.commit().unwrap();
    assert!(matches!(recorded_dups(&env), (KeyOrder::U64, true)));
    let r = env.read_txn().unwrap();
    let first = r.iter(main).unwrap().next().unwrap().unwrap().1.to_vec();
    assert_eq!(first, 3u64.to_ne_bytes());
}

/// Only the width of integer values changes: an empty main database
/// recorded with integer values refuses bytewise or reverse values, and
/// values of the other width without `dup_fixed`, in a read and in a write
/// transaction; one recorded with bytewise values refuses integer ones.
#[test]
fn empty_main_database_keeps_other_duplicate_modes() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path());
    let mut w = env.write_txn().unwrap();
    w.open_db_with(None, &int_dups(KeyOrder::U32)).unwrap();
    w.commit().unwrap();
    let others = [
        by(KeyOrder::U64).dup_sort(KeyOrder::Bytewise).dup_fixed(),
        by(KeyOrder::U64)
            .dup_sort(KeyOrder::ReverseBytewise)
            .dup_fixed(),
        by(KeyOrder::U64).dup_sort(KeyOrder::U64),
    ];
    for o in &others {
        let r = env.read_txn().unwrap();
        assert!(is_dup_mismatch(r.open_db_with(None, o)), "{o:?}");
        drop(r);
        let mut w = env.write_txn().unwrap();
        assert!(is_dup_mismatch(w.open_db_with(None, o)), "{o:?}");
        drop(w);
        assert!(matches!(recorded_dups(&env), (KeyOrder::U32, true)));
    }

    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path());
    let mut w = env.write_txn().unwrap();
    w.open_db_with(
        None,
        &by(KeyOrder::U64).dup_sort(KeyOrder::Bytewise).dup_fixed(),
    )
    .unwrap();
    w.commit().unwrap();
    let mut w = env.write_txn().unwrap();
    assert!(is_dup_mismatch(
        w.open_db_with(None, &int_dups(KeyOrder::U32))
    ));
}
