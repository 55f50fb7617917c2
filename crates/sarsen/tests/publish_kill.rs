//! A writer killed half-way through publishing a commit (review defect 5;
//! needs the `fault-injection` feature for `EnvOptions::die_in_publish`).
//!
//! A child process commits transactions whose changes are derived from a
//! seed and the txnid alone, acknowledging each on stdout; its `k`-th
//! publish (random `k`) stops with the seqlock counter odd and the fields
//! half-written, and the child kills itself with SIGKILL. This process
//! holds the environment open throughout, so it is not a fresh first
//! opener that would rebuild the lock file. The old engine spun forever in
//! every later `read_txn`/`write_txn` of every process. Now:
//!
//! * this process's `read_txn()` and `write_txn()` (in either order) must
//!   finish within a timeout;
//! * they must see a committed state: exactly the model after the child's
//!   first `k - 1` commits (the acknowledged ones) or `k` (the one whose
//!   meta was written before the publish died), with the matching txnid;
//! * this process's own commit must then land and be read back;
//! * a read-only `Env` in a third process must not hang either, and must
//!   read one of the model's states.
//!
//! `SARSEN_TEST_CASES` sets the number of cases (default 3); `SARSEN_SEED`
//! replays one.

mod common;
mod procs_common;

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::sync::Arc;

use procs_common::{self as pc, Kid, WAIT};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sarsen::{Env, EnvOptions};

type Map = BTreeMap<Vec<u8>, Vec<u8>>;
/// A committed state as read: (txnid, digest of its entries).
type State = (u64, u64);

/// Keys the commits draw from.
const KEY_SPACE: u32 = 300;

/// One change of a commit: a put, or a delete when the value is `None`.
type Change = (Vec<u8>, Option<Vec<u8>>);

/// The changes of commit `txnid` of a case with seed `seed`.
fn changes(seed: u64, txnid: u64) -> Vec<Change> {
    let mut rng = StdRng::seed_from_u64(common::mix(seed ^ txnid));
    let n = rng.random_range(1..60);
    let mut c: Vec<Change> = (0..n)
        .map(|_| {
            let k = pc::key(rng.random_range(0..KEY_SPACE));
            if rng.random_range(0..5) == 0 {
                (k, None)
            } else {
                let len = rng.random_range(1..300);
                let mut v = format!("t{txnid}-").into_bytes();
                v.resize(len.max(v.len()), rng.random());
                (k, Some(v))
            }
        })
        .collect();
    c.push((b"last".to_vec(), Some(txnid.to_le_bytes().to_vec())));
    c
}

fn apply(model: &mut Map, changes: &[Change]) {
    for (k, v) in changes {
        match v {
            Some(v) => model.insert(k.clone(), v.clone()),
            None => model.remove(k),
        };
    }
}

/// FNV-1a digest of a state, to compare across processes.
fn digest<'a>(entries: impl IntoIterator<Item = (&'a Vec<u8>, &'a Vec<u8>)>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (k, v) in entries {
        for b in k.iter().chain(v).chain(&[0xff]) {
            h = (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    h
}

/// `(txnid, digest)` of the newest commit as `env` reads it.
fn read_state(env: &Env) -> Result<(u64, u64), String> {
    let r = env.read_txn().map_err(|e| format!("read_txn: {e}"))?;
    let c = pc::contents(&r, env.main_db())?;
    Ok((r.txnid(), digest(c.iter().map(|(k, v)| (k, v)))))
}

/// Child side: `committer` commits with `die_in_publish(K)`, saying `ack
/// <txnid>` after each commit; `reader` opens read-only and says `read
/// <txnid> <digest>`.
#[test]
#[ignore = "helper: run by the publish-kill test in a child process"]
fn publish_kill_child() {
    let Some((role, dir)) = pc::role() else {
        return;
    };
    match role.as_str() {
        "committer" => {
            let (k, seed) = (pc::param("K"), pc::param("SEED"));
            let env = pc::open_with(&dir, EnvOptions::new().die_in_publish(k)).unwrap();
            for _ in 0..k + 3 {
                let mut w = env.write_txn().unwrap();
                let t = w.txnid();
                for (key, v) in changes(seed, t) {
                    match v {
                        Some(v) => w.put(env.main_db(), &key, &v).unwrap(),
                        None => {
                            w.delete(env.main_db(), &key).unwrap();
                        }
                    }
                }
                w.commit().unwrap();
                pc::say(&format!("ack {t}"));
            }
            pc::say("survived");
        }
        "reader" => {
            let env = pc::open_with(&dir, EnvOptions::new().read_only(true)).unwrap();
            let (t, d) = read_state(&env).unwrap();
            pc::say(&format!("read {t} {d}"));
        }
        other => panic!("unknown role {other}"),
    }
}

/// Runs the read-only third process; a problem if it hangs or reads a
/// state that is not the model's at its txnid (or older than `newest`).
fn third_process_reads(dir: &Path, models: &BTreeMap<u64, u64>, newest: u64) -> Option<String> {
    let mut kid = Kid::spawn(
        pc::child_cmd("publish_kill_child", "reader", dir),
        "read-only process",
    );
    let l = match kid.expect("read", WAIT) {
        Ok(l) => l,
        Err(e) => return Some(format!("HARM: a read-only Env in another process: {e}")),
    };
    let f: Vec<u64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
    let (t, d) = (f[0], f[1]);
    (t < newest || models.get(&t) != Some(&d)).then(|| {
        format!(
            "the read-only process read txnid {t} (digest {d:x}), not a model state >= {newest}"
        )
    })
}

/// Whether `(txnid, digest)` is the model after `k - 1` or `k` commits.
fn committed_state(got: (u64, u64), models: &BTreeMap<u64, u64>, t0: u64, k: u64) -> bool {
    (got.0 == t0 + k - 1 || got.0 == t0 + k) && models.get(&got.0) == Some(&got.1)
}

/// One case. Returns its problems and whether a call hung (the remaining
/// cases are then skipped: the hung thread cannot be stopped).
fn case(seed: u64, order: u64) -> (Vec<String>, bool) {
    let mut rng = StdRng::seed_from_u64(seed);
    let k = rng.random_range(1..=6u64);
    let what = format!("case seed {seed} k {k} order {order}");
    let mut problems = Vec::new();
    let dir = tempfile::tempdir().unwrap();
    let env = Arc::new(pc::open(dir.path()));
    pc::write_round(&env, 200, 0);
    let mut model = Map::new();
    for i in 0..200 {
        model.insert(pc::key(i), pc::value(i, 0));
    }
    let t0 = env.read_txn().unwrap().txnid();
    let mut models = BTreeMap::from([(t0, digest(&model))]);
    for t in t0 + 1..=t0 + k {
        apply(&mut model, &changes(seed, t));
        models.insert(t, digest(&model));
    }

    let mut c = pc::child_cmd("publish_kill_child", "committer", dir.path());
    c.env("SARSEN_PROCS_K", k.to_string())
        .env("SARSEN_PROCS_SEED", seed.to_string());
    let mut kid = Kid::spawn(c, "committer");
    match kid.wait(WAIT) {
        Ok(s) if s.signal() == Some(libc::SIGKILL) => {}
        Ok(s) => problems.push(format!(
            "{what}: the committer ended with {s:?}, not SIGKILL"
        )),
        Err(e) => problems.push(format!("{what}: {e}")),
    }
    let acks = kid.drain();
    let want: Vec<String> = (t0 + 1..t0 + k).map(|t| format!("ack {t}")).collect();
    if acks != want {
        problems.push(format!("{what}: acks {acks:?}, expected {want:?}"));
    }

    if order == 2 {
        problems.extend(third_process_reads(dir.path(), &models, t0 + k - 1));
    }
    let steps: [&str; 2] = if order == 1 {
        ["write", "read"]
    } else {
        ["read", "write"]
    };
    let mut parent_commit = None;
    for step in steps {
        let e = Arc::clone(&env);
        let r = if step == "read" {
            pc::bounded(WAIT, move || read_state(&e).map(|s| (s, (0, 0))))
        } else {
            pc::bounded(WAIT, move || parent_write(&e))
        };
        match r {
            None => {
                problems.push(format!(
                    "HARM ({what}): {step}_txn() in this process did not finish within \
                     {WAIT:?} after the writer died mid-publish"
                ));
                return (problems, true);
            }
            Some(Err(e)) => problems.push(format!("{what}: {step}: {e}")),
            Some(Ok((seen, written))) => {
                // After this process's own commit a read must see exactly it.
                let own = parent_commit.filter(|_| step == "read");
                let ok = match own {
                    Some(t) => seen == (t, models[&t]),
                    None => committed_state(seen, &models, t0, k),
                };
                if !ok {
                    problems.push(format!(
                        "{what}: {step} saw txnid {} digest {:x}: not the model after \
                         {} or {k} commits (txnids {}..={}), nor this process's commit {:?}",
                        seen.0,
                        seen.1,
                        k - 1,
                        t0 + k - 1,
                        t0 + k,
                        own
                    ));
                }
                if step == "write" {
                    let (t, d) = written;
                    // The parent's commit: key "parent" = its txnid.
                    let mut m = model_at(seed, t0, seen.0);
                    m.insert(b"parent".to_vec(), t.to_le_bytes().to_vec());
                    models.insert(t, digest(&m));
                    parent_commit = Some(t);
                    if t != seen.0 + 1 || d != models[&t] {
                        problems.push(format!("{what}: the parent's commit {t} reads back wrong"));
                    }
                }
            }
        }
    }
    let newest = *models.keys().last().unwrap();
    eprintln!("{what}: committed {acks:?}, then this process's steps ran; newest {newest}");
    problems.extend(third_process_reads(dir.path(), &models, newest));
    (problems, false)
}

/// The model state at `txnid` (the base round and the child's commits).
fn model_at(seed: u64, t0: u64, txnid: u64) -> Map {
    let mut m: Map = (0..200).map(|i| (pc::key(i), pc::value(i, 0))).collect();
    for t in t0 + 1..=txnid {
        apply(&mut m, &changes(seed, t));
    }
    m
}

/// A write transaction in this process: what it sees (txnid of its base,
/// digest), then it commits key `parent` and reads the result back:
/// ((base txnid, base digest), (new txnid, new digest)).
fn parent_write(env: &Env) -> Result<(State, State), String> {
    let mut w = env.write_txn().map_err(|e| format!("write_txn: {e}"))?;
    let base = w.txnid() - 1;
    let mut seen = Vec::new();
    for e in w.iter(env.main_db()).map_err(|e| format!("iter: {e}"))? {
        let (k, v) = e.map_err(|e| format!("iteration: {e}"))?;
        seen.push((k.to_vec(), v.to_vec()));
    }
    let d = digest(seen.iter().map(|(k, v)| (k, v)));
    let t = w.txnid();
    w.put(env.main_db(), b"parent", &t.to_le_bytes())
        .map_err(|e| format!("put: {e}"))?;
    w.commit().map_err(|e| format!("commit: {e}"))?;
    Ok(((base, d), read_state(env)?))
}

#[test]
fn a_writer_killed_mid_publish_blocks_no_one() {
    let seeds = common::case_seeds("publish_kill", 3);
    let mut problems = Vec::new();
    for (i, seed) in seeds.into_iter().enumerate() {
        let (p, hung) = case(seed, i as u64 % 3);
        problems.extend(p);
        if hung {
            problems.push("(remaining cases skipped after a hang)".into());
            break;
        }
    }
    pc::report("writer killed mid-publish", &problems);
}
