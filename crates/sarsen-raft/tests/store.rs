//! The log store and the state machine against in-memory models: random
//! operations, compared after every step and after reopening; snapshots
//! built while the state machine applies, installed whole or not at all.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use openraft::storage::{RaftLogStorage, RaftLogStorageExt, RaftStateMachine};
use openraft::{
    CommittedLeaderId, EntryPayload, LogId, Membership, RaftLogReader, RaftSnapshotBuilder,
    StoredMembership, Vote,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sarsen::merge::Append;
use sarsen_raft::{Command, LogStore, Reply, StateMachine, StateMachineOptions, TypeConfig};
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

type Entry = openraft::Entry<TypeConfig>;
type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn log_id(term: u64, index: u64) -> LogId<u64> {
    LogId::new(CommittedLeaderId::new(term, 1), index)
}

fn entry(term: u64, index: u64, payload: EntryPayload<TypeConfig>) -> Entry {
    Entry {
        log_id: log_id(term, index),
        payload,
    }
}

fn open_sm(dir: &Path) -> StateMachine {
    StateMachine::open(
        dir,
        StateMachineOptions::new().merge_operator(Append::new()),
    )
    .unwrap()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().unwrap()
}

/// A random command over a small key space, with the model's reply.
fn random_command(rng: &mut StdRng, model: &mut Model) -> (Command, Reply) {
    let key = format!("k{}", rng.random_range(0..20)).into_bytes();
    match rng.random_range(0..100) {
        0..=44 => {
            let value = vec![b'a' + rng.random_range(0..26u8); rng.random_range(0..40)];
            model.insert(key.clone(), value.clone());
            (Command::Put { key, value }, Reply::Done)
        }
        45..=69 => {
            let existed = model.remove(&key).is_some();
            (Command::Delete { key }, Reply::Deleted(existed))
        }
        70..=94 => {
            let operand = vec![b'0' + rng.random_range(0..10u8); rng.random_range(1..4)];
            let v = model.entry(key.clone()).or_default();
            v.extend_from_slice(&operand);
            (Command::Merge { key, operand }, Reply::Merged(v.clone()))
        }
        95..=96 => (
            Command::Put {
                key: Vec::new(),
                value: b"x".to_vec(),
            },
            Reply::Refused("empty key".into()),
        ),
        _ => {
            // Over any page size's key limit: refused, nothing changes.
            let cmd = Command::Put {
                key: vec![b'k'; 70_000],
                value: b"x".to_vec(),
            };
            (cmd, Reply::Refused(String::new()))
        }
    }
}

fn same_reply(got: &Reply, want: &Reply) -> bool {
    match (got, want) {
        // The refusal's wording is Sarsen's; that it is a refusal is ours.
        (Reply::Refused(_), Reply::Refused(w)) if w.is_empty() => true,
        (Reply::Batch(g), Reply::Batch(w)) => {
            g.len() == w.len() && g.iter().zip(w).all(|(g, w)| same_reply(g, w))
        }
        _ => got == want,
    }
}

#[test]
fn state_machine_follows_a_model_and_reopens_at_the_same_state() {
    let dir = tempfile::tempdir().unwrap();
    let rt = rt();
    let mut rng = StdRng::seed_from_u64(21);
    let mut model = Model::new();
    let mut index = 0;
    let mut members = StoredMembership::default();
    let mut sm = open_sm(dir.path());
    rt.block_on(async {
        for _ in 0..150 {
            let mut batch = Vec::new();
            let mut want = Vec::new();
            for _ in 0..rng.random_range(1..8) {
                index += 1;
                match rng.random_range(0..20) {
                    0 => {
                        batch.push(entry(2, index, EntryPayload::Blank));
                        want.push(Reply::Done);
                    }
                    1 => {
                        let m = Membership::new(
                            vec![BTreeSet::from([1, rng.random_range(2..9)])],
                            None,
                        );
                        members = StoredMembership::new(Some(log_id(2, index)), m.clone());
                        batch.push(entry(2, index, EntryPayload::Membership(m)));
                        want.push(Reply::Done);
                    }
                    2 | 3 => {
                        // A batch: its commands in order, a nested batch refused.
                        let mut cmds = Vec::new();
                        let mut replies = Vec::new();
                        for _ in 0..rng.random_range(1..5) {
                            let (c, r) = random_command(&mut rng, &mut model);
                            cmds.push(c);
                            replies.push(r);
                        }
                        cmds.insert(
                            1,
                            Command::Batch(vec![Command::Delete {
                                key: b"k1".to_vec(),
                            }]),
                        );
                        replies.insert(1, Reply::Refused("a batch inside a batch".into()));
                        batch.push(entry(2, index, EntryPayload::Normal(Command::Batch(cmds))));
                        want.push(Reply::Batch(replies));
                    }
                    _ => {
                        let (cmd, reply) = random_command(&mut rng, &mut model);
                        batch.push(entry(2, index, EntryPayload::Normal(cmd)));
                        want.push(reply);
                    }
                }
            }
            let got = sm.apply(batch).await.unwrap();
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                assert!(same_reply(g, w), "reply {g:?}, model says {w:?}");
            }
            let (applied, dump) = sm.reader().dump().unwrap();
            assert_eq!(applied, Some(log_id(2, index)));
            assert_eq!(dump, model.clone().into_iter().collect::<Vec<_>>());
            assert_eq!(
                sm.applied_state().await.unwrap(),
                (Some(log_id(2, index)), members.clone())
            );
        }
    });
    drop(sm);
    let mut sm = open_sm(dir.path());
    let (applied, dump) = sm.reader().dump().unwrap();
    assert_eq!(applied, Some(log_id(2, index)));
    assert_eq!(dump, model.into_iter().collect::<Vec<_>>());
    assert_eq!(rt.block_on(sm.applied_state()).unwrap().1, members);
}

#[test]
fn a_state_machine_with_another_merge_operator_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut sm = open_sm(dir.path());
    let put = Command::Merge {
        key: b"k".to_vec(),
        operand: b"v".to_vec(),
    };
    rt().block_on(sm.apply([entry(1, 1, EntryPayload::Normal(put))]))
        .unwrap();
    drop(sm);
    let other = StateMachine::open(
        dir.path(),
        StateMachineOptions::new().merge_operator(sarsen::merge::Max),
    );
    assert!(matches!(
        other,
        Err(sarsen_raft::StoreError::Sarsen(
            sarsen::Error::MergeOperatorMismatch { .. }
        ))
    ));
}

#[test]
fn snapshot_is_one_state_while_applying_and_installs_atomically() {
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let rt = rt();
    let mut a = open_sm(da.path());
    let mut b = open_sm(db.path());
    let mut rng = StdRng::seed_from_u64(7);
    let mut model = Model::new();
    // The model's state after each applied index.
    let mut history: BTreeMap<u64, Model> = BTreeMap::new();
    let mut index = 0;
    let mut next_batch =
        |rng: &mut StdRng, model: &mut Model, history: &mut BTreeMap<u64, Model>| {
            let mut batch = Vec::new();
            for _ in 0..20 {
                index += 1;
                let (cmd, _) = random_command(rng, model);
                batch.push(entry(3, index, EntryPayload::Normal(cmd)));
                history.insert(index, model.clone());
            }
            batch
        };
    rt.block_on(async {
        for _ in 0..20 {
            a.apply(next_batch(&mut rng, &mut model, &mut history))
                .await
                .unwrap();
        }
        // Build while the state machine goes on applying.
        let mut builder = a.get_snapshot_builder().await;
        let build = tokio::spawn(async move { builder.build_snapshot().await });
        for _ in 0..30 {
            a.apply(next_batch(&mut rng, &mut model, &mut history))
                .await
                .unwrap();
        }
        let snap = build.await.unwrap().unwrap();
        let at = snap
            .meta
            .last_log_id
            .expect("a snapshot of applied entries")
            .index;
        let want: Vec<_> = history[&at].clone().into_iter().collect();

        // The snapshot's bytes, as a follower would receive them.
        let mut bytes = Vec::new();
        let mut data = snap.snapshot;
        data.seek(std::io::SeekFrom::Start(0)).await.unwrap();
        data.read_to_end(&mut bytes).await.unwrap();

        let mut rx = b.begin_receiving_snapshot().await.unwrap();
        for chunk in bytes.chunks(1000) {
            rx.write_all(chunk).await.unwrap();
        }
        rx.shutdown().await.unwrap();
        b.install_snapshot(&snap.meta, rx).await.unwrap();
        let (applied, dump) = b.reader().dump().unwrap();
        assert_eq!(applied, snap.meta.last_log_id);
        assert_eq!(dump, want, "the follower holds the state at index {at}");
        assert_eq!(
            b.get_current_snapshot().await.unwrap().unwrap().meta,
            snap.meta
        );

        // A damaged copy of a newer snapshot is refused and changes nothing.
        let newer = a
            .get_snapshot_builder()
            .await
            .build_snapshot()
            .await
            .unwrap();
        let mut bytes = Vec::new();
        let mut data = newer.snapshot;
        data.read_to_end(&mut bytes).await.unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 1;
        let mut rx = b.begin_receiving_snapshot().await.unwrap();
        rx.write_all(&bytes).await.unwrap();
        rx.shutdown().await.unwrap();
        assert!(b.install_snapshot(&newer.meta, rx).await.is_err());
        assert_eq!(
            b.reader().dump().unwrap(),
            (snap.meta.last_log_id, want.clone())
        );
        assert_eq!(
            b.get_current_snapshot().await.unwrap().unwrap().meta,
            snap.meta
        );

        // The same bytes under another snapshot's meta are refused too.
        bytes[mid] ^= 1;
        let mut rx = b.begin_receiving_snapshot().await.unwrap();
        rx.write_all(&bytes).await.unwrap();
        rx.shutdown().await.unwrap();
        assert!(b.install_snapshot(&snap.meta, rx).await.is_err());
        assert_eq!(b.reader().dump().unwrap(), (snap.meta.last_log_id, want));
    });
    // The installed snapshot survives a restart.
    drop(b);
    let mut b = open_sm(db.path());
    let cur = rt.block_on(b.get_current_snapshot()).unwrap().unwrap();
    assert_eq!(
        Some(cur.meta.last_log_id),
        Some(rt.block_on(b.applied_state()).unwrap().0)
    );
}

#[test]
fn log_store_follows_a_model_and_reopens_at_the_same_state() {
    let dir = tempfile::tempdir().unwrap();
    let rt = rt();
    let mut rng = StdRng::seed_from_u64(3);
    let mut model: BTreeMap<u64, Entry> = BTreeMap::new();
    let mut purged: Option<LogId<u64>> = None;
    let mut vote = None;
    let mut log = LogStore::open(dir.path()).unwrap();
    let mut term = 1;
    let check = |log: &mut LogStore, model: &BTreeMap<u64, Entry>, purged: Option<LogId<u64>>| {
        rt.block_on(async {
            let state = log.get_log_state().await.unwrap();
            assert_eq!(state.last_purged_log_id, purged);
            assert_eq!(
                state.last_log_id,
                model.values().last().map(|e| e.log_id).or(purged)
            );
            let all = log.try_get_log_entries(..).await.unwrap();
            assert_eq!(all, model.values().cloned().collect::<Vec<_>>());
            if let (Some(&lo), Some(&hi)) = (model.keys().next(), model.keys().last()) {
                let a = rng_free_mid(lo, hi);
                let part = log
                    .get_log_reader()
                    .await
                    .try_get_log_entries(a..=hi)
                    .await
                    .unwrap();
                assert_eq!(
                    part,
                    model
                        .range(a..=hi)
                        .map(|(_, e)| e.clone())
                        .collect::<Vec<_>>()
                );
            }
        })
    };
    for step in 0..300 {
        let last = model.keys().last().copied().or(purged.map(|p| p.index));
        match rng.random_range(0..10) {
            0..=5 => {
                let start = last.map_or(0, |l| l + 1);
                let n = rng.random_range(1..10);
                let batch: Vec<Entry> = (start..start + n)
                    .map(|i| {
                        let cmd = Command::Put {
                            key: format!("k{i}").into_bytes(),
                            value: vec![step as u8; 10],
                        };
                        entry(term, i, EntryPayload::Normal(cmd))
                    })
                    .collect();
                for e in &batch {
                    model.insert(e.log_id.index, e.clone());
                }
                rt.block_on(log.blocking_append(batch)).unwrap();
            }
            6 | 7 if !model.is_empty() => {
                // A new leader's entries replace a suffix.
                let lo = *model.keys().next().unwrap();
                let at = rng.random_range(lo..=last.unwrap());
                let id = model[&at].log_id;
                model.split_off(&at);
                rt.block_on(log.truncate(id)).unwrap();
                term += 1;
            }
            8 if !model.is_empty() => {
                let lo = *model.keys().next().unwrap();
                let at = rng.random_range(lo..=last.unwrap());
                let id = model[&at].log_id;
                model = model.split_off(&(at + 1));
                purged = Some(id);
                rt.block_on(log.purge(id)).unwrap();
            }
            _ => {
                let v = Vote::new(term, rng.random_range(1..4));
                rt.block_on(log.save_vote(&v)).unwrap();
                vote = Some(v);
            }
        }
        check(&mut log, &model, purged);
        assert_eq!(rt.block_on(log.read_vote()).unwrap(), vote);
    }
    rt.block_on(log.save_committed(Some(log_id(1, 5)))).unwrap();
    drop(log);
    let mut log = LogStore::open(dir.path()).unwrap();
    check(&mut log, &model, purged);
    assert_eq!(rt.block_on(log.read_vote()).unwrap(), vote);
    assert_eq!(
        rt.block_on(log.read_committed()).unwrap(),
        Some(log_id(1, 5))
    );
}

fn rng_free_mid(lo: u64, hi: u64) -> u64 {
    lo + (hi - lo) / 2
}

#[test]
fn a_store_in_use_is_not_opened_twice() {
    let dir = tempfile::tempdir().unwrap();
    let _log = LogStore::open(dir.path()).unwrap();
    assert!(LogStore::open(dir.path()).is_err());
}
