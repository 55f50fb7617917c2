//! A damaged tree in which one branch links the same child twice: freeing
//! the tree (clear_db) must report `Corrupted`, not free pages twice, and
//! the committed database must stay as it was.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;

use sarsen::{Env, Error};

#[test]
fn branch_linking_a_child_twice_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    {
        let env = unsafe { Env::open(dir.path()) }.unwrap();
        let mut w = env.write_txn().unwrap();
        for i in 0..20_000u32 {
            w.put(env.main_db(), format!("{i:08}").as_bytes(), &[1u8; 40])
                .unwrap();
        }
        w.commit().unwrap();
        assert!(env.read_txn().unwrap().stat(env.main_db()).unwrap().depth >= 2);
    }
    // Find a branch page (kind 1) and point its second node at the first
    // node's child.
    let path = dir.path().join("data.sdb");
    let data = std::fs::read(&path).unwrap();
    let ps = 4096;
    let (pgno, page) = data
        .chunks(ps)
        .enumerate()
        .skip(3)
        .find(|(_, p)| p[4] == 1 && u16::from_le_bytes([p[6], p[7]]) >= 2)
        .expect("a branch page with two children");
    let slot = |i: usize| u16::from_le_bytes([page[20 + 2 * i], page[21 + 2 * i]]) as usize;
    let first_child = &page[slot(0)..slot(0) + 4];
    let f = OpenOptions::new().write(true).open(&path).unwrap();
    f.write_all_at(first_child, (pgno * ps + slot(1)) as u64)
        .unwrap();
    drop(f);

    let env = unsafe { Env::open(dir.path()) }.unwrap();
    let db = env.main_db();
    let before = env.read_txn().unwrap().txnid();
    let mut w = env.write_txn().unwrap();
    match w.clear_db(db) {
        Err(Error::Corrupted { .. }) => {}
        other => panic!("expected Corrupted, got {other:?}"),
    }
    assert!(w.commit().is_err(), "a broken transaction must not commit");
    assert_eq!(env.read_txn().unwrap().txnid(), before);
}
