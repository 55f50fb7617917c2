//! kill -9 of a writer process at random moments.
//!
//! A child process (this test binary, re-run with `SARSEN_KILL9_DIR` set)
//! opens the database in `Durable` mode and commits transactions as fast
//! as it can, printing `ack <txnid> <seed>` after each commit returns. The
//! changes of commit `t` are derived from the seed `mix(base ^ t)` alone,
//! so the parent can rebuild every state. The parent kills the child with
//! SIGKILL after a random delay, reopens the database (every other cycle as
//! after a reboot, so the newest one-sync commit is verified), runs
//! `Env::check`, and checks that the database holds every acknowledged
//! commit: it is at the last acknowledged one, or at the one after it
//! (committed, killed before it was reported), with exactly the model's
//! contents. Then the next cycle starts on the same file.
//!
//! `SARSEN_TEST_CASES` sets the number of cycles (default 30).

mod common;
mod crash_common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crash_common::{apply_model, changes, contents, diff, Change, Model};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sarsen::{Env, EnvOptions};

/// The changes of commit `txnid`: random ones, plus a put that makes sure
/// the commit is never empty.
fn changes_of(base: u64, txnid: u64) -> Vec<Change> {
    let seed = common::mix(base ^ txnid);
    let n = 1 + (seed % 200) as usize;
    let mut c = changes(seed, 4096, n);
    c.push(Change::Put(
        0,
        b"last".to_vec(),
        txnid.to_le_bytes().to_vec(),
    ));
    c
}

/// Child side: commits until it is killed.
#[test]
#[ignore = "helper: run by kill9_writer_cycles in a child process"]
fn kill9_child() {
    let (Some(dir), Some(base)) = (
        std::env::var_os("SARSEN_KILL9_DIR"),
        std::env::var("SARSEN_KILL9_BASE").ok(),
    ) else {
        return;
    };
    let base: u64 = base.parse().unwrap();
    // SAFETY: the parent's temporary directory; only Sarsen maps it.
    let env = unsafe { EnvOptions::new().open(Path::new(&dir)) }.unwrap();
    println!("ready");
    loop {
        let mut w = env.write_txn().unwrap();
        let t = w.txnid();
        crash_common::apply_txn(&mut w, &changes_of(base, t)).unwrap();
        w.commit().unwrap();
        println!("ack {t} {}", common::mix(base ^ t));
    }
}

/// One cycle: starts the child, kills it after `delay`, returns the txnids
/// it acknowledged.
fn run_child(dir: &Path, base: u64, delay: Duration) -> Vec<u64> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["kill9_child", "--exact", "--ignored", "--nocapture"])
        .env("SARSEN_KILL9_DIR", dir)
        .env("SARSEN_KILL9_BASE", base.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // The test harness prints its own lines first.
    let ready = loop {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(l) if l.trim() == "ready" => break true,
            Ok(_) => {}
            Err(_) => break false,
        }
    };
    if !ready {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the child did not start");
    }
    std::thread::sleep(delay);
    child.kill().unwrap(); // SIGKILL: nothing of the child runs after it
    child.wait().unwrap();
    reader.join().unwrap();
    rx.try_iter()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            (f.next() == Some("ack")).then(|| {
                let t: u64 = f.next().unwrap().parse().unwrap();
                let seed: u64 = f.next().unwrap().parse().unwrap();
                assert_eq!(seed, common::mix(base ^ t), "seed of {t}");
                t
            })
        })
        .collect()
}

#[test]
fn kill9_writer_cycles() {
    let (base, _) = common::base_seed("kill9");
    let _f = common::OnFail(format!("SEED={base}"));
    let cycles = common::cases(30);
    let mut rng = StdRng::seed_from_u64(base);
    let dir = tempfile::tempdir().unwrap();
    let mut model = Model::default();
    let mut at = 1; // the txnid `model` is at
    let (mut acked, mut unreported) = (0, 0);
    for cycle in 0..cycles {
        let delay = Duration::from_micros(rng.random_range(0..60_000));
        let acks = run_child(dir.path(), base, delay);
        for (i, t) in acks.iter().enumerate() {
            assert_eq!(*t, at + 1 + i as u64, "cycle {cycle}: acks {acks:?}");
        }
        let last_ack = acks.last().copied().unwrap_or(at);
        acked += acks.len();
        let mut o = EnvOptions::new();
        if cycle % 2 == 1 {
            o = o.assume_boot_id([cycle as u8; 16]);
        }
        // SAFETY: the test's own directory; the child is dead.
        let env: Env = unsafe { o.open(dir.path()) }.unwrap();
        let when = format!("cycle {cycle} (delay {delay:?}, {} acks)", acks.len());
        common::assert_check(&env, &when);
        let (t, got) = contents(&env);
        assert!(
            t == last_ack || t == last_ack + 1,
            "{when}: opened at {t}, last acknowledged {last_ack}"
        );
        unreported += usize::from(t > last_ack);
        while at < t {
            at += 1;
            apply_model(&mut model, &changes_of(base, at));
        }
        assert!(got == model, "{when}: txnid {t}: {}", diff(&got, &model));
    }
    eprintln!(
        "kill9: {cycles} cycles, {acked} acknowledged commits, {unreported} committed but unreported, last txnid {at}"
    );
    assert!(acked > 0, "no commit was ever acknowledged");
}
