//! Crash fallback of one-sync durable commits and of unsynced commits,
//! simulated by damaging the file and reopening "after a reboot".

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::Path;

use sarsen::{Durability, EnvOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const OTHER_BOOT: [u8; 16] = [0xAB; 16];

fn open(dir: &Path, d: Durability, boot: Option<[u8; 16]>) -> sarsen::Env {
    let mut o = EnvOptions::new().durability(d);
    if let Some(b) = boot {
        o = o.assume_boot_id(b);
    }
    unsafe { o.open(dir) }.unwrap()
}

fn contents(env: &sarsen::Env) -> Model {
    let r = env.read_txn().unwrap();
    r.iter(env.main_db())
        .unwrap()
        .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
        .collect()
}

/// Pages of the data file whose header says they were written by `txnid`.
fn pages_of(dir: &Path, txnid: u64) -> Vec<u64> {
    let data = std::fs::read(dir.join("data.sdb")).unwrap();
    data.chunks(4096)
        .enumerate()
        .skip(3)
        .filter(|(_, p)| {
            p.len() >= 16 && u64::from_le_bytes(p[8..16].try_into().unwrap()) == txnid && p[4] != 0
        })
        .map(|(i, _)| i as u64)
        .collect()
}

fn write_two_commits(dir: &Path, d: Durability) -> (Model, Model, u64) {
    let env = open(dir, d, None);
    let db = env.main_db();
    let mut w = env.write_txn().unwrap();
    for i in 0..5000u32 {
        w.put(db, format!("key{i:06}").as_bytes(), &[i as u8; 50])
            .unwrap();
    }
    w.commit().unwrap();
    if d != Durability::Durable {
        env.sync().unwrap();
    }
    let first = contents(&env);
    let mut w = env.write_txn().unwrap();
    let second_txnid = w.txnid();
    for i in (0..5000u32).step_by(7) {
        w.put(db, format!("key{i:06}").as_bytes(), b"changed")
            .unwrap();
    }
    w.put(db, b"big", &vec![9u8; 20000]).unwrap();
    w.commit().unwrap();
    let second = contents(&env);
    assert_ne!(first, second);
    // Leave without a clean sync, as a crash would.
    std::mem::forget(env);
    (first, second, second_txnid)
}

#[test]
fn torn_durable_commit_falls_back_to_previous() {
    let dir = tempfile::tempdir().unwrap();
    let (first, _second, t2) = write_two_commits(dir.path(), Durability::Durable);
    let pages = pages_of(dir.path(), t2);
    assert!(!pages.is_empty());
    // Simulate a lost write: one page of the newest commit never hit the disk.
    let f = OpenOptions::new()
        .write(true)
        .open(dir.path().join("data.sdb"))
        .unwrap();
    f.write_all_at(&[0x5a; 4096], pages[pages.len() / 2] * 4096)
        .unwrap();
    drop(f);
    std::fs::remove_file(dir.path().join("lock.sdb")).unwrap();
    let env = open(dir.path(), Durability::Durable, Some(OTHER_BOOT));
    assert_eq!(
        contents(&env),
        first,
        "must roll back to the intact previous commit"
    );
    assert_eq!(env.info().unwrap().last_txnid, t2 - 1);
    // And it stays writable, and the rejected commit never comes back.
    let mut w = env.write_txn().unwrap();
    w.put(env.main_db(), b"after", b"crash").unwrap();
    w.commit().unwrap();
    drop(env);
    let env = open(dir.path(), Durability::Durable, Some([0xCD; 16]));
    let mut want = first.clone();
    want.insert(b"after".to_vec(), b"crash".to_vec());
    assert_eq!(contents(&env), want);
}

#[test]
fn intact_durable_commit_survives_reboot() {
    let dir = tempfile::tempdir().unwrap();
    let (_first, second, _) = write_two_commits(dir.path(), Durability::Durable);
    std::fs::remove_file(dir.path().join("lock.sdb")).unwrap();
    let env = open(dir.path(), Durability::Durable, Some(OTHER_BOOT));
    assert_eq!(contents(&env), second);
}

#[test]
fn safe_no_sync_rolls_back_to_last_sync_after_reboot_only() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second, _) = write_two_commits(dir.path(), Durability::SafeNoSync);
    // Same boot (a process crash): the OS kept the writes; nothing is lost.
    std::fs::remove_file(dir.path().join("lock.sdb")).unwrap();
    let env = open(dir.path(), Durability::SafeNoSync, None);
    assert_eq!(contents(&env), second);
    std::mem::forget(env);
    // After a reboot the unsynced commit is not trusted.
    std::fs::remove_file(dir.path().join("lock.sdb")).unwrap();
    let env = open(dir.path(), Durability::SafeNoSync, Some(OTHER_BOOT));
    assert_eq!(contents(&env), first);
}

/// Regression: a named database with catalog settings (here a merge
/// operator's name, making its catalog value longer than a bare record)
/// must be verified too. Its torn one-sync commit used to be trusted,
/// because the verification skipped catalog values that were not exactly
/// one record long.
#[test]
fn torn_commit_in_a_database_with_settings_falls_back() {
    use sarsen::{merge::Uint64Add, DbOptions};
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path(), Durability::Durable, None);
    let mut w = env.write_txn().unwrap();
    let db = w
        .create_db_with(
            Some("counters"),
            &DbOptions::new().merge_operator(Uint64Add),
        )
        .unwrap();
    for i in 0..3000u32 {
        w.put(db, format!("key{i:06}").as_bytes(), &1u64.to_le_bytes())
            .unwrap();
    }
    w.commit().unwrap();
    let mut w = env.write_txn().unwrap();
    let t2 = w.txnid();
    for i in (0..3000u32).step_by(3) {
        w.merge(db, format!("key{i:06}").as_bytes(), &1u64.to_le_bytes())
            .unwrap();
    }
    w.commit().unwrap();
    std::mem::forget(env);
    // Only the named database and the catalog changed in t2: lose one of
    // its leaves.
    let pages = pages_of(dir.path(), t2);
    let data = std::fs::read(dir.path().join("data.sdb")).unwrap();
    let leaf = *pages
        .iter()
        .find(|&&p| data[p as usize * 4096 + 4] == 2)
        .expect("a leaf written by the second commit");
    let f = OpenOptions::new()
        .write(true)
        .open(dir.path().join("data.sdb"))
        .unwrap();
    f.write_all_at(&[0x5a; 4096], leaf * 4096).unwrap();
    drop(f);
    std::fs::remove_file(dir.path().join("lock.sdb")).unwrap();
    let env = open(dir.path(), Durability::Durable, Some(OTHER_BOOT));
    assert_eq!(
        env.info().unwrap().last_txnid,
        t2 - 1,
        "the torn commit is rejected"
    );
    assert!(env.check().unwrap().is_ok());
}

/// A one-sync commit that grew the duplicate sub-trees of a DUPSORT
/// database must be verified through them: damage to any page it wrote
/// (main leaves, sub-tree branches and leaves) makes open fall back.
#[test]
fn torn_commit_in_duplicate_subtrees_falls_back() {
    use sarsen::{DbOptions, KeyOrder};
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path(), Durability::Durable, None);
    let mut w = env.write_txn().unwrap();
    let db = w
        .create_db_with(
            Some("multi"),
            &DbOptions::new().dup_sort(KeyOrder::Bytewise),
        )
        .unwrap();
    for i in 0..4000u32 {
        let k = format!("key{:02}", i % 8);
        w.put(db, k.as_bytes(), format!("value{i:06}").as_bytes())
            .unwrap();
    }
    w.commit().unwrap();
    let mut w = env.write_txn().unwrap();
    let t2 = w.txnid();
    for i in 4000..4400u32 {
        let k = format!("key{:02}", i % 8);
        w.put(db, k.as_bytes(), format!("value{i:06}").as_bytes())
            .unwrap();
    }
    w.commit().unwrap();
    std::mem::forget(env);
    let pages = pages_of(dir.path(), t2);
    // The sub-trees' new pages are most of what t2 wrote.
    assert!(pages.len() > 8, "t2 wrote {} pages", pages.len());
    let image = std::fs::read(dir.path().join("data.sdb")).unwrap();
    for p in pages {
        let d = tempfile::tempdir().unwrap();
        let mut bad = image.clone();
        bad[p as usize * 4096 + 100] ^= 0x40;
        std::fs::write(d.path().join("data.sdb"), &bad).unwrap();
        let env = open(d.path(), Durability::Durable, Some(OTHER_BOOT));
        assert_eq!(
            env.info().unwrap().last_txnid,
            t2 - 1,
            "damage to page {p} is caught"
        );
        assert!(env.check().unwrap().is_ok());
    }
}

/// Commits `pairs` into the main database with `asked` as the
/// transaction's durability (`None`: the environment's); returns the txnid.
fn commit_with(
    env: &sarsen::Env,
    m: &mut Model,
    asked: Option<Durability>,
    pairs: &[(&[u8], &[u8])],
) -> u64 {
    let mut w = env.write_txn().unwrap();
    if let Some(d) = asked {
        w.set_durability(d);
    }
    for (k, v) in pairs {
        w.put(env.main_db(), k, v).unwrap();
        m.insert(k.to_vec(), v.to_vec());
    }
    let t = w.txnid();
    w.commit().unwrap();
    t
}

/// `RwTxn::set_durability` in a `Durable` environment: commits asking for
/// `SafeNoSync` or `NoSync` are not synced and roll back after a reboot
/// (`NoSync` is made as `SafeNoSync`, so nothing is corrupt); the next
/// default commit makes everything durable; dropping the `Env` syncs the
/// unsynced ones.
#[test]
fn transactions_choose_their_durability() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path(), Durability::Durable, None);
    let mut m = Model::new();
    let a = commit_with(&env, &mut m, None, &[(b"a", b"1")]);
    let at_a = m.clone();
    assert_eq!(env.info().unwrap().durable_txnid, a);
    for (i, d) in [Durability::SafeNoSync, Durability::NoSync]
        .into_iter()
        .enumerate()
    {
        let k = [b'b', i as u8];
        commit_with(&env, &mut m, Some(d), &[(&k, b"2")]);
        assert_eq!(env.info().unwrap().durable_txnid, a, "{d:?} commit synced");
    }
    // A crash now: the unsynced commits are kept after a process crash
    // only, and are rolled back, not corrupt, after a reboot.
    std::mem::forget(env);
    std::fs::remove_file(dir.path().join("lock.sdb")).unwrap();
    let env = open(dir.path(), Durability::Durable, Some(OTHER_BOOT));
    assert_eq!(contents(&env), at_a);
    assert!(env.check().unwrap().is_ok());
    let mut m = at_a;
    commit_with(&env, &mut m, Some(Durability::SafeNoSync), &[(b"c", b"3")]);
    let d = commit_with(&env, &mut m, None, &[(b"d", b"4")]);
    assert_eq!(env.info().unwrap().durable_txnid, d);
    commit_with(&env, &mut m, Some(Durability::SafeNoSync), &[(b"e", b"5")]);
    // Dropping the environment syncs the last, unsynced commit.
    drop(env);
    std::fs::remove_file(dir.path().join("lock.sdb")).unwrap();
    let env = open(dir.path(), Durability::Durable, Some([0xCD; 16]));
    assert_eq!(contents(&env), m);
}

/// In a `NoSync` environment a transaction may ask for a durable commit.
#[test]
fn a_no_sync_environment_can_make_one_commit_durable() {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path(), Durability::NoSync, None);
    let mut m = Model::new();
    let a = commit_with(&env, &mut m, None, &[(b"a", b"1")]);
    assert!(env.info().unwrap().durable_txnid < a);
    let b = commit_with(&env, &mut m, Some(Durability::Durable), &[(b"b", b"2")]);
    assert_eq!(env.info().unwrap().durable_txnid, b);
    std::mem::forget(env);
    std::fs::remove_file(dir.path().join("lock.sdb")).unwrap();
    let env = open(dir.path(), Durability::NoSync, Some(OTHER_BOOT));
    assert_eq!(contents(&env), m);
}
