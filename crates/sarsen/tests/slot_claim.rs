//! The reader-slot claim race, made deterministic with the test hook
//! `EnvOptions::pause_in_slot_claim`: thread A claims a slot and is
//! "preempted" once the slot's owner token is visible; thread B of the same
//! environment starts a read transaction meanwhile. B must not take A's
//! slot: if both read through one slot, the first to end clears it and the
//! other's snapshot is no longer protected, so a writer overwrites its
//! pages. Modelled against the committed contents (a `BTreeMap`).
//!
//! `tests/slot_race.rs` stresses the same protocol across processes
//! without the hook.

#![cfg(feature = "fault-injection")]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use sarsen::{Durability, Env, EnvOptions, RoTxn};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn open(dir: &Path, o: EnvOptions) -> Env {
    // SAFETY: the test's own temporary directory, used only by Sarsen
    // environments of this test.
    unsafe { o.durability(Durability::NoSync).open(dir) }.unwrap()
}

fn contents(env: &Env, r: &RoTxn) -> sarsen::Result<Model> {
    r.iter(env.main_db())?
        .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())))
        .collect()
}

/// Rewrites every key `rounds` times, so freed pages are reused.
fn overwrite(env: &Env, tag: u8, rounds: u32) {
    for round in 0..rounds {
        let mut w = env.write_txn().unwrap();
        for i in 0..200u32 {
            let v = vec![tag ^ round as u8; 40];
            w.put(env.main_db(), &i.to_be_bytes(), &v).unwrap();
        }
        w.commit().unwrap();
    }
}

#[test]
fn a_slot_being_claimed_is_not_taken_by_another_thread() {
    let dir = tempfile::tempdir().unwrap();
    // Slot 0 is used and freed, so it lies below the high-water mark,
    // where a starting reader looks for an idle slot of its own (the
    // keeper holds the environment open, so the table is not reset).
    let _keeper = open(dir.path(), EnvOptions::new());
    let first = open(dir.path(), EnvOptions::new());
    overwrite(&first, 1, 1);
    let committed = contents(&first, &first.read_txn().unwrap()).unwrap();
    drop(first);
    let env = open(dir.path(), EnvOptions::new().pause_in_slot_claim(400));
    let (a_began, a_began_rx) = mpsc::channel();
    let (end_a, end_a_rx) = mpsc::channel::<()>();
    let (b_began, b_began_rx) = mpsc::channel();
    let (b_check, b_check_rx) = mpsc::channel::<()>();
    let (b_done, b_done_rx) = mpsc::channel();
    std::thread::scope(|s| {
        let env = &env;
        s.spawn(move || {
            let r = env.read_txn().unwrap();
            a_began.send(()).unwrap();
            end_a_rx.recv().unwrap();
            drop(r);
        });
        std::thread::sleep(Duration::from_millis(100));
        s.spawn(move || {
            let r = env.read_txn().unwrap();
            let before = contents(env, &r);
            b_began.send(()).unwrap();
            b_check_rx.recv().unwrap();
            b_done.send((before, contents(env, &r))).unwrap();
        });
        let wait = Duration::from_secs(20);
        a_began_rx.recv_timeout(wait).expect("reader A began");
        b_began_rx.recv_timeout(wait).expect("reader B began");
        let active = env
            .readers()
            .unwrap()
            .iter()
            .filter(|r| r.txnid.is_some())
            .count();
        // A ends; B's snapshot must stay protected through the rewrites.
        end_a.send(()).unwrap();
        overwrite(env, 2, 30);
        b_check.send(()).unwrap();
        let (before, after) = b_done_rx.recv_timeout(wait).expect("reader B ended");
        assert!(
            before.as_ref().ok() == Some(&committed),
            "reader B's snapshot at its start"
        );
        assert!(
            after.as_ref().ok() == Some(&committed),
            "reader B's snapshot after reader A ended and a writer rewrote every key: {:?}",
            after.map(|m| m.len())
        );
        assert_eq!(active, 2, "two live readers, two slots in use");
    });
}
