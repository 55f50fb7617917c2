//! The public error contract against real behaviour: for every error a
//! test can provoke, what [`Error::recovery`] and
//! [`Error::leaves_txn_usable`] say must be what the write transaction
//! then does.
//!
//! Each case opens a fresh environment, prepares it, begins a write
//! transaction and makes some writes (the earlier writes, kept in a
//! `BTreeMap` model of the main database), provokes one error, and then:
//!
//! - if the error leaves the transaction usable, its view of every
//!   database must be what it was just before the failing call, a further
//!   write must work, and the commit must succeed and hold the earlier
//!   writes and the further one;
//! - if not, the further write and the commit must give `BadTxn`, and the
//!   committed state must be what it was before the transaction.
//!
//! The answer of `recovery` is also compared with the contract as
//! `error.rs` documents it, written out again here, so that a change of
//! the method that its documentation does not follow fails too.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::path::Path;

use sarsen::merge::{Max, Uint64Add};
use sarsen::{Comparator, DbOptions, Env, EnvOptions, Error, KeyOrder, Recovery, RoTxn, RwTxn};

/// Entries of the main database.
type Model = BTreeMap<Vec<u8>, Vec<u8>>;
/// Every database's pairs in order, by name ("" for the main database).
type View = BTreeMap<String, Vec<(Vec<u8>, Vec<u8>)>>;

/// The contract as `Error`'s documentation states it, variant by variant.
fn documented(e: &Error) -> Recovery {
    match e {
        Error::Busy
        | Error::Incompatible(_)
        | Error::ReadOnly
        | Error::ReadersFull { .. }
        | Error::DbNotFound { .. }
        | Error::DbsFull { .. }
        | Error::KeyOrderMismatch { .. }
        | Error::NoComparator { .. }
        | Error::DupModeMismatch { .. }
        | Error::MergeOperatorMismatch { .. }
        | Error::KeyTooLarge { .. }
        | Error::ValueTooLarge { .. }
        | Error::BadKeySize { .. }
        | Error::BadValueSize { .. }
        | Error::KeyNotGreater
        | Error::WrongDupMode { .. }
        | Error::NoMergeOperator { .. }
        | Error::Merge { .. }
        | Error::InvalidArgument(_)
        | Error::UpperBoundReached { .. } => Recovery::Continue,
        Error::BadTxn | Error::DiskFull { .. } | Error::Io { .. } | Error::Corrupted { .. } => {
            Recovery::AbortTxn
        }
        Error::SyncFailed | Error::Forked => Recovery::ReopenEnv,
        e => panic!("{e:?}: a variant the contract does not document"),
    }
}

/// Case-insensitive ASCII, ties bytewise.
struct NoCase;

impl Comparator for NoCase {
    fn name(&self) -> &str {
        "nocase"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        a.to_ascii_lowercase()
            .cmp(&b.to_ascii_lowercase())
            .then_with(|| a.cmp(b))
    }
}

fn open(path: &Path, o: &EnvOptions) -> Env {
    unsafe { o.open(path) }.unwrap_or_else(|e| panic!("open {}: {e}", path.display()))
}

/// The pairs of an iteration; a database that cannot be read (a damaged
/// page, no comparator attached) as one marker pair naming the error.
fn pairs(it: sarsen::Result<sarsen::Iter<'_>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let got: sarsen::Result<Vec<_>> = it.and_then(|it| {
        it.map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())))
            .collect()
    });
    got.unwrap_or_else(unreadable)
}

fn unreadable(e: Error) -> Vec<(Vec<u8>, Vec<u8>)> {
    vec![(b"unreadable".to_vec(), format!("{e:?}").into_bytes())]
}

/// Every database as the write transaction `w` sees it.
fn txn_view(w: &mut RwTxn<'_>) -> View {
    let mut v = View::new();
    let main = w_main(w);
    v.insert(String::new(), pairs(w.iter(main)));
    for name in w.list_dbs().unwrap() {
        let got = match w.open_db(Some(&name)) {
            Ok(Some(db)) => pairs(w.iter(db)),
            Ok(None) => panic!("{name} listed but not found"),
            Err(e) => unreadable(e),
        };
        v.insert(name, got);
    }
    v
}

/// Every database as the read transaction `r` sees it.
fn snapshot_view(r: &RoTxn<'_>) -> View {
    let mut v = View::new();
    v.insert(
        String::new(),
        pairs(r.iter(r.open_db(None).unwrap().unwrap())),
    );
    for name in r.list_dbs().unwrap() {
        let got = match r.open_db(Some(&name)) {
            Ok(Some(db)) => pairs(r.iter(db)),
            Ok(None) => panic!("{name} listed but not found"),
            Err(e) => unreadable(e),
        };
        v.insert(name, got);
    }
    v
}

fn w_main(w: &mut RwTxn<'_>) -> sarsen::Database {
    w.open_db(None).unwrap().unwrap()
}

/// The result's error; panics on success.
fn err<T>(what: &str, r: sarsen::Result<T>) -> Error {
    match r {
        Ok(_) => panic!("{what}: succeeded, an error was expected"),
        Err(e) => e,
    }
}

/// One case: `setup` prepares the environment at the path (opening its
/// own `Env`), `prepare` makes writes in the transaction under test after
/// the earlier writes of the model, and `provoke` makes the failing call.
/// Returns the error, after checking the contract on it.
fn case(
    what: &str,
    o: EnvOptions,
    setup: impl FnOnce(&Path, &EnvOptions),
    prepare: impl FnOnce(&Env, &mut RwTxn<'_>),
    provoke: impl FnOnce(&Env, &mut RwTxn<'_>) -> Error,
) -> Error {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("env");
    setup(&path, &o);
    let env = open(&path, &o);
    let committed = snapshot_view(&env.read_txn().unwrap());
    let mut w = env.write_txn().unwrap();
    let db = w_main(&mut w);
    let mut model: Model = committed[""].iter().cloned().collect();
    for i in 0..40u32 {
        let (k, v) = (format!("early-{i:03}"), format!("value {i}"));
        w.put(db, k.as_bytes(), v.as_bytes()).unwrap();
        model.insert(k.into_bytes(), v.into_bytes());
    }
    let main: Model = txn_view(&mut w)[""].iter().cloned().collect();
    assert!(
        main == model,
        "{what}: the earlier writes are not in the view"
    );
    prepare(&env, &mut w);
    let before = txn_view(&mut w);

    let e = provoke(&env, &mut w);
    check(what, &env, w, &e, &before, &committed);
    e
}

/// Checks the contract of `e`, which a call on `w` just returned.
/// `before` is `w`'s view before the call, `committed` the committed state
/// before `w` began.
fn check(what: &str, env: &Env, w: RwTxn<'_>, e: &Error, before: &View, committed: &View) {
    let what = format!("{what} ({e:?})");
    assert_eq!(e.recovery(), documented(e), "{what}: recovery()");
    assert_eq!(
        e.leaves_txn_usable(),
        e.recovery() == Recovery::Continue,
        "{what}: leaves_txn_usable()"
    );
    if e.leaves_txn_usable() {
        check_usable(&what, env, w, before);
    } else {
        check_broken(&what, env, w, committed);
    }
}

/// `w` must show `before`, take a further write and commit both.
fn check_usable(what: &str, env: &Env, mut w: RwTxn<'_>, before: &View) {
    assert!(
        txn_view(&mut w) == *before,
        "{what}: said usable, but the failed call changed the transaction's view"
    );
    let db = w_main(&mut w);
    w.put(db, b"probe", b"after the error")
        .unwrap_or_else(|x| panic!("{what}: said usable, but a write gave {x:?}"));
    w.commit()
        .unwrap_or_else(|x| panic!("{what}: said usable, but the commit gave {x:?}"));
    let mut want = before.clone();
    let main = want.get_mut("").unwrap();
    main.push((b"probe".to_vec(), b"after the error".to_vec()));
    main.sort();
    let got = snapshot_view(&env.read_txn().unwrap());
    assert!(
        got == want,
        "{what}: said usable, but the commit does not hold the earlier writes"
    );
}

/// `w` must refuse a further write and its commit with `BadTxn`, and
/// leave `committed` as it was.
fn check_broken(what: &str, env: &Env, mut w: RwTxn<'_>, committed: &View) {
    let db = w_main(&mut w);
    let probe = w.put(db, b"probe", b"after the error");
    assert!(
        matches!(probe, Err(Error::BadTxn)),
        "{what}: said unusable, but a write gave {probe:?}"
    );
    let c = w.commit();
    assert!(
        matches!(c, Err(Error::BadTxn)),
        "{what}: said unusable, but the commit gave {c:?}"
    );
    let got = snapshot_view(&env.read_txn().unwrap());
    assert!(got == *committed, "{what}: the committed state changed");
}

fn no_setup(_: &Path, _: &EnvOptions) {}

fn no_prepare(_: &Env, _: &mut RwTxn<'_>) {}

/// `setup` that runs `f` in one committed write transaction.
fn committed_setup(f: impl FnOnce(&mut RwTxn<'_>)) -> impl FnOnce(&Path, &EnvOptions) {
    move |path, o| {
        let env = open(path, o);
        let mut w = env.write_txn().unwrap();
        f(&mut w);
        w.commit().unwrap();
    }
}

fn small() -> EnvOptions {
    EnvOptions::new().page_size(512)
}

#[test]
fn append_out_of_order() {
    case(
        "append",
        small(),
        committed_setup(|w| {
            let log = w.create_db(Some("log")).unwrap();
            for i in 0..100u32 {
                w.append(log, &i.to_be_bytes(), b"committed").unwrap();
            }
        }),
        |_, w| {
            let log = w.open_db(Some("log")).unwrap().unwrap();
            for i in 100..300u32 {
                w.append(log, &i.to_be_bytes(), b"in this transaction")
                    .unwrap();
            }
        },
        |_, w| {
            let log = w.open_db(Some("log")).unwrap().unwrap();
            err("append", w.append(log, &150u32.to_be_bytes(), b"late"))
        },
    );
    case(
        "append_dup",
        small(),
        committed_setup(|w| {
            w.create_db_with(Some("m"), &DbOptions::new().dup_sort(KeyOrder::Bytewise))
                .unwrap();
        }),
        |_, w| {
            let m = w.open_db(Some("m")).unwrap().unwrap();
            for v in [b"1", b"2", b"3"] {
                w.append_dup(m, b"k", v).unwrap();
            }
        },
        |_, w| {
            let m = w.open_db(Some("m")).unwrap().unwrap();
            err("append_dup", w.append_dup(m, b"k", b"2"))
        },
    );
}

#[test]
fn upper_bound() {
    // 64 pages of 512 bytes: room for the earlier writes, not for a 40 KiB
    // value.
    let o = small().max_size(64 * 512).growth_step(512);
    let e = case(
        "put at the upper bound",
        o.clone(),
        no_setup,
        no_prepare,
        |env, w| err("put", w.put(env.main_db(), b"huge", &vec![7u8; 40 << 10])),
    );
    assert!(matches!(e, Error::UpperBoundReached { .. }), "{e:?}");
    let append = || DbOptions::new().merge_operator(sarsen::merge::Append::new());
    let e = case(
        "merge at the upper bound",
        o,
        no_setup,
        |_, w| {
            let db = w.open_db_with(None, &append()).unwrap().unwrap();
            w.put(db, b"grows", &vec![1u8; 20 << 10]).unwrap();
        },
        |_, w| {
            let db = w.open_db_with(None, &append()).unwrap().unwrap();
            err("merge", w.merge(db, b"grows", &vec![2u8; 40 << 10]))
        },
    );
    assert!(matches!(e, Error::UpperBoundReached { .. }), "{e:?}");
}

#[test]
fn sizes() {
    let e = case("long key", small(), no_setup, no_prepare, |env, w| {
        let long = vec![b'k'; env.max_key_size() + 1];
        err("put", w.put(env.main_db(), &long, b"v"))
    });
    assert!(matches!(e, Error::KeyTooLarge { .. }), "{e:?}");
    let e = case("long value", small(), no_setup, no_prepare, |env, w| {
        err(
            "put_reserve",
            w.put_reserve(env.main_db(), b"k", env.max_value_size() + 1, |_| {}),
        )
    });
    assert!(matches!(e, Error::ValueTooLarge { .. }), "{e:?}");
    let dups = || {
        committed_setup(|w| {
            w.create_db_with(Some("m"), &DbOptions::new().dup_sort(KeyOrder::Bytewise))
                .unwrap();
        })
    };
    // Documented: 52 bytes less than max_key_size.
    let e = case(
        "DUPSORT key",
        small(),
        dups(),
        |env, w| {
            let m = w.open_db(Some("m")).unwrap().unwrap();
            w.put(m, &vec![b'k'; env.max_key_size() - 52], b"v")
                .unwrap();
        },
        |env, w| {
            let m = w.open_db(Some("m")).unwrap().unwrap();
            err("put", w.put(m, &vec![b'k'; env.max_key_size() - 51], b"v"))
        },
    );
    let max = env_max_key(512) - 52;
    assert!(
        matches!(e, Error::KeyTooLarge { max: m, .. } if m == max),
        "{e:?}"
    );
    let e = case("DUPSORT value", small(), dups(), no_prepare, |env, w| {
        let m = w.open_db(Some("m")).unwrap().unwrap();
        err("put", w.put(m, b"k", &vec![b'v'; env.max_key_size() + 1]))
    });
    assert!(matches!(e, Error::ValueTooLarge { .. }), "{e:?}");
    let ids = || {
        committed_setup(|w| {
            w.create_db_with(Some("ids"), &DbOptions::new().key_order(KeyOrder::U64))
                .unwrap();
        })
    };
    let e = case(
        "integer key",
        small(),
        ids(),
        |_, w| {
            let ids = w.open_db(Some("ids")).unwrap().unwrap();
            w.put(ids, &7u64.to_ne_bytes(), b"v").unwrap();
        },
        |_, w| {
            let ids = w.open_db(Some("ids")).unwrap().unwrap();
            err("put", w.put(ids, b"abc", b"v"))
        },
    );
    assert!(matches!(e, Error::BadKeySize { .. }), "{e:?}");
    let fixed = committed_setup(|w| {
        let f = w
            .create_db_with(Some("f"), &DbOptions::new().dup_fixed())
            .unwrap();
        w.put(f, b"k", b"abcd").unwrap();
    });
    let e = case(
        "DUPFIXED value",
        small(),
        fixed,
        |_, w| {
            let f = w.open_db(Some("f")).unwrap().unwrap();
            w.put(f, b"k", b"efgh").unwrap();
        },
        |_, w| {
            let f = w.open_db(Some("f")).unwrap().unwrap();
            err("put", w.put(f, b"k", b"xyz"))
        },
    );
    assert!(matches!(e, Error::BadValueSize { .. }), "{e:?}");
}

/// `Env::max_key_size` at `page_size`.
fn env_max_key(page_size: u32) -> usize {
    let dir = tempfile::tempdir().unwrap();
    open(dir.path(), &EnvOptions::new().page_size(page_size)).max_key_size()
}

#[test]
fn merges() {
    let counters = || {
        committed_setup(|w| {
            let c = w
                .create_db_with(Some("c"), &DbOptions::new().merge_operator(Uint64Add))
                .unwrap();
            w.merge(c, b"n", &5u64.to_le_bytes()).unwrap();
        })
    };
    let add = || DbOptions::new().merge_operator(Uint64Add);
    let e = case(
        "refused merge",
        small(),
        counters(),
        |_, w| {
            let c = w.open_db_with(Some("c"), &add()).unwrap().unwrap();
            w.merge(c, b"n", &2u64.to_le_bytes()).unwrap();
        },
        |_, w| {
            let c = w.open_db_with(Some("c"), &add()).unwrap().unwrap();
            err("merge", w.merge(c, b"n", b"four"))
        },
    );
    assert!(matches!(e, Error::Merge { .. }), "{e:?}");
    let e = case("no operator", small(), no_setup, no_prepare, |env, w| {
        err("merge", w.merge(env.main_db(), b"n", &1u64.to_le_bytes()))
    });
    assert!(matches!(e, Error::NoMergeOperator { .. }), "{e:?}");
    let e = case("other operator", small(), counters(), no_prepare, |_, w| {
        err(
            "open_db_with",
            w.open_db_with(Some("c"), &DbOptions::new().merge_operator(Max)),
        )
    });
    assert!(matches!(e, Error::MergeOperatorMismatch { .. }), "{e:?}");
    let e = case(
        "merge without operands",
        small(),
        counters(),
        no_prepare,
        |_, w| {
            let c = w.open_db_with(Some("c"), &add()).unwrap().unwrap();
            err("merge_many", w.merge_many(c, b"n", &[]))
        },
    );
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
}

#[test]
fn database_options() {
    let ids = || {
        committed_setup(|w| {
            let ids = w
                .create_db_with(Some("ids"), &DbOptions::new().key_order(KeyOrder::U64))
                .unwrap();
            w.put(ids, &1u64.to_ne_bytes(), b"one").unwrap();
        })
    };
    let e = case("other key order", small(), ids(), no_prepare, |_, w| {
        err(
            "create_db_with",
            w.create_db_with(Some("ids"), &DbOptions::new().key_order(KeyOrder::U32)),
        )
    });
    assert!(matches!(e, Error::KeyOrderMismatch { .. }), "{e:?}");
    let e = case(
        "other duplicate mode",
        small(),
        ids(),
        no_prepare,
        |_, w| {
            err(
                "create_db_with",
                w.create_db_with(Some("ids"), &DbOptions::new().dup_sort(KeyOrder::Bytewise)),
            )
        },
    );
    assert!(matches!(e, Error::DupModeMismatch { .. }), "{e:?}");
    let nocase = committed_setup(|w| {
        let db = w
            .create_db_with(
                Some("nocase"),
                &DbOptions::new().key_order(KeyOrder::custom(NoCase)),
            )
            .unwrap();
        w.put(db, b"Apple", b"1").unwrap();
    });
    // A new `Env`, so no comparator is attached to the handle.
    let e = case("no comparator", small(), nocase, no_prepare, |_, w| {
        err("open_db", w.open_db(Some("nocase")))
    });
    assert!(matches!(e, Error::NoComparator { .. }), "{e:?}");
    let e = case(
        "too many databases",
        small().max_dbs(1),
        committed_setup(|w| {
            w.create_db(Some("one")).unwrap();
        }),
        no_prepare,
        |_, w| err("create_db", w.create_db(Some("two"))),
    );
    assert!(matches!(e, Error::DbsFull { .. }), "{e:?}");
    let e = case("empty name", small(), no_setup, no_prepare, |_, w| {
        err("create_db", w.create_db(Some("")))
    });
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    let e = case(
        "dropped database",
        small(),
        committed_setup(|w| {
            let gone = w.create_db(Some("gone")).unwrap();
            w.put(gone, b"k", b"v").unwrap();
        }),
        |_, w| {
            let gone = w.open_db(Some("gone")).unwrap().unwrap();
            w.drop_db(gone).unwrap();
        },
        |env, w| {
            // The handle outlives the database.
            let gone = env
                .read_txn()
                .unwrap()
                .open_db(Some("gone"))
                .unwrap()
                .unwrap();
            err("put", w.put(gone, b"k", b"v"))
        },
    );
    assert!(matches!(e, Error::DbNotFound { .. }), "{e:?}");
}

/// The documented exception of `create_db_with`: options refused after
/// the database was created leave it created, in a usable transaction.
#[test]
fn create_db_with_refused_options_keeps_the_database() {
    struct Nameless;
    impl sarsen::MergeOperator for Nameless {
        fn name(&self) -> &str {
            ""
        }
        fn full_merge(
            &self,
            _: &[u8],
            _: Option<&[u8]>,
            _: &[&[u8]],
            _: &mut Vec<u8>,
        ) -> Result<(), sarsen::MergeError> {
            Ok(())
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path(), &small());
    let mut w = env.write_txn().unwrap();
    let e = err(
        "create_db_with",
        w.create_db_with(Some("new"), &DbOptions::new().merge_operator(Nameless)),
    );
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    assert!(e.leaves_txn_usable());
    assert_eq!(w.list_dbs().unwrap(), ["new"]);
    w.commit().unwrap();
}

#[test]
fn duplicate_modes() {
    let plain = || {
        committed_setup(|w| {
            let p = w.create_db(Some("plain")).unwrap();
            w.put(p, b"k", b"v").unwrap();
        })
    };
    let e = case(
        "delete_dup without DUPSORT",
        small(),
        plain(),
        no_prepare,
        |_, w| {
            let p = w.open_db(Some("plain")).unwrap().unwrap();
            err("delete_dup", w.delete_dup(p, b"k", b"v"))
        },
    );
    assert!(matches!(e, Error::WrongDupMode { .. }), "{e:?}");
    let e = case(
        "seek_both without DUPSORT",
        small(),
        plain(),
        no_prepare,
        |_, w| {
            let p = w.open_db(Some("plain")).unwrap().unwrap();
            let mut c = w.cursor_mut(p).unwrap();
            c.seek(b"k").unwrap();
            err("seek_both", c.seek_both(b"k", b"v"))
        },
    );
    assert!(matches!(e, Error::WrongDupMode { .. }), "{e:?}");
    let dups = committed_setup(|w| {
        let m = w
            .create_db_with(Some("m"), &DbOptions::new().dup_sort(KeyOrder::Bytewise))
            .unwrap();
        w.put(m, b"k", b"1").unwrap();
    });
    let e = case(
        "replace on DUPSORT",
        small(),
        dups,
        |_, w| {
            let m = w.open_db(Some("m")).unwrap().unwrap();
            w.put(m, b"k", b"2").unwrap();
        },
        |_, w| {
            let m = w.open_db(Some("m")).unwrap().unwrap();
            err("replace", w.replace(m, b"k", b"3"))
        },
    );
    assert!(matches!(e, Error::WrongDupMode { .. }), "{e:?}");
}

#[test]
fn invalid_arguments() {
    let e = case(
        "sequence overflow",
        small(),
        no_setup,
        |env, w| {
            w.next_sequence(env.main_db(), 5).unwrap();
        },
        |env, w| err("next_sequence", w.next_sequence(env.main_db(), u64::MAX)),
    );
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    let e = case(
        "write cursor on no pair",
        small(),
        no_setup,
        |env, w| {
            let mut c = w.cursor_mut(env.main_db()).unwrap();
            c.put(b"zz cursor", b"put").unwrap();
        },
        |env, w| {
            let mut c = w.cursor_mut(env.main_db()).unwrap();
            c.last().unwrap();
            assert!(c.next().unwrap().is_none());
            err("put_current", c.put_current(b"v"))
        },
    );
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
}

/// Errors of other calls made while the write transaction is open: they
/// leave it alone.
#[test]
fn errors_beside_the_write_transaction() {
    let e = case(
        "reader slots",
        small().max_readers(1),
        no_setup,
        no_prepare,
        |env, _| {
            let r = env.read_txn().unwrap();
            let e = err("read_txn", env.read_txn());
            drop(r);
            e
        },
    );
    assert!(matches!(e, Error::ReadersFull { .. }), "{e:?}");
    let e = case(
        "exclusive",
        small().exclusive(true),
        no_setup,
        no_prepare,
        |env, _| err("open", unsafe { EnvOptions::new().open(env.path()) }),
    );
    assert!(matches!(e, Error::Busy), "{e:?}");
    let e = case("read-only", small(), no_setup, no_prepare, |env, _| {
        let ro = open(env.path(), &EnvOptions::new().read_only(true));
        err("write_txn", ro.write_txn())
    });
    assert!(matches!(e, Error::ReadOnly), "{e:?}");
}

/// Whether `page` is a leaf whose first node is a 6-byte key starting
/// with `v` and a value starting with `marker` (the layout of
/// `page/node.rs`: the slot array at byte 20, a node's key length at 2,
/// its key at 8).
fn is_victim_leaf(page: &[u8], marker: &[u8]) -> bool {
    let u16_at = |o: usize| usize::from(u16::from_le_bytes([page[o], page[o + 1]]));
    if page[4] != 2 || u16_at(6) == 0 {
        return false;
    }
    let node = u16_at(20);
    if node + 8 + 6 + marker.len() > page.len() || u16_at(node + 2) != 6 {
        return false;
    }
    page[node + 8] == b'v' && page[node + 14..].starts_with(marker)
}

/// Zeroes the leaves of the database "victim" in the closed environment
/// at `path`.
fn damage(path: &Path, page_size: usize, marker: &[u8]) {
    let file = path.join("data.sdb");
    let mut bytes = std::fs::read(&file).unwrap();
    let mut n = 0;
    for page in bytes.chunks_mut(page_size).skip(3) {
        if is_victim_leaf(page, marker) {
            page.fill(0);
            n += 1;
        }
    }
    assert!(n > 2, "{n} pages damaged");
    std::fs::write(&file, &bytes).unwrap();
}

const MARKER: &[u8] = b"VICTIM-0123456789";

fn damaged_victim(path: &Path, o: &EnvOptions) {
    {
        let env = open(path, o);
        let mut w = env.write_txn().unwrap();
        let v = w.create_db(Some("victim")).unwrap();
        for i in 0..200u32 {
            w.put(v, format!("v{i:05}").as_bytes(), MARKER).unwrap();
        }
        w.commit().unwrap();
        let mut w = env.write_txn().unwrap();
        w.put(env.main_db(), b"after the victim", b"1").unwrap();
        w.commit().unwrap();
    }
    damage(path, 512, MARKER);
}

/// A write that meets a damaged page breaks the transaction; the
/// `BadTxn` of the next write says the same.
#[test]
fn damaged_page() {
    for write_map in [false, true] {
        let o = small().write_map(write_map);
        let e = case(
            "damaged page",
            o.clone(),
            damaged_victim,
            no_prepare,
            |_, w| {
                // The handle needs no read of the damaged pages: the catalog
                // is intact.
                let v = w.open_db(Some("victim")).unwrap().unwrap();
                err("put", w.put(v, b"v00100", b"x"))
            },
        );
        assert!(matches!(e, Error::Corrupted { .. }), "{e:?}");
        let e = case(
            "after a damaged page",
            o,
            damaged_victim,
            no_prepare,
            |_, w| {
                let v = w.open_db(Some("victim")).unwrap().unwrap();
                err("put", w.put(v, b"v00100", b"x"));
                err("put", w.put(v, b"v00101", b"x"))
            },
        );
        assert!(matches!(e, Error::BadTxn), "{e:?}");
    }
}

/// In a nested transaction, an error that breaks it is ended by aborting
/// the child: the parent is as it was when the child began, and usable.
#[test]
fn damaged_page_in_a_child() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("env");
    let o = small();
    damaged_victim(&path, &o);
    let env = open(&path, &o);
    let committed = snapshot_view(&env.read_txn().unwrap());
    let mut w = env.write_txn().unwrap();
    let db = env.main_db();
    w.put(db, b"parent", b"1").unwrap();
    let before = txn_view(&mut w);
    let v = w.open_db(Some("victim")).unwrap().unwrap();
    let mut child = w.nested().unwrap();
    child.put(db, b"child", b"lost").unwrap();
    let e = err("put", child.put(v, b"v00100", b"x"));
    assert_eq!(e.recovery(), Recovery::AbortTxn, "{e:?}");
    assert!(matches!(child.put(db, b"k", b"v"), Err(Error::BadTxn)));
    child.abort();
    check_usable("the parent of an aborted broken child", &env, w, &before);
    // Nothing else was committed.
    assert!(committed.len() == 2, "{committed:?}");
}

/// Commit failures (cargo feature `fault-injection`): the transaction is
/// gone, the environment stays usable, and after a failed sync it asks to
/// be opened again, as `Recovery::ReopenEnv` says.
#[cfg(feature = "fault-injection")]
#[test]
fn failed_commits() {
    use sarsen::fault::{Fault, FaultPlan, OpKind};
    for (kind, errno) in [(OpKind::Write, libc::ENOSPC), (OpKind::Sync, libc::EIO)] {
        let dir = tempfile::tempdir().unwrap();
        let plan = FaultPlan::new();
        let o = small().fault_plan(plan.clone());
        let env = open(dir.path(), &o);
        let db = env.main_db();
        let mut w = env.write_txn().unwrap();
        w.put(db, b"committed", b"1").unwrap();
        w.commit().unwrap();
        let committed = snapshot_view(&env.read_txn().unwrap());
        let mut w = env.write_txn().unwrap();
        w.put(db, b"lost", b"2").unwrap();
        plan.fail(Fault {
            kind,
            nth: 0,
            errno,
            torn: false,
            sticky: false,
        });
        let e = err("commit", w.commit());
        assert_eq!(e.recovery(), documented(&e), "{e:?}");
        assert_eq!(e.recovery(), Recovery::AbortTxn, "{e:?}");
        assert!(snapshot_view(&env.read_txn().unwrap()) == committed);
        match kind {
            OpKind::Write => {
                assert!(matches!(e, Error::DiskFull { .. }), "{e:?}");
                let mut w = env.write_txn().unwrap();
                w.put(db, b"next", b"3").unwrap();
                w.commit().unwrap();
            }
            OpKind::Sync => {
                assert!(matches!(e, Error::Io { .. }), "{e:?}");
                let e = err("write_txn", env.write_txn());
                assert!(matches!(e, Error::SyncFailed), "{e:?}");
                assert_eq!(e.recovery(), Recovery::ReopenEnv);
                assert!(!e.leaves_txn_usable());
                drop(env);
                let env = open(dir.path(), &small());
                let mut w = env.write_txn().unwrap();
                w.put(db, b"next", b"3").unwrap();
                w.commit().unwrap();
            }
        }
    }
}
