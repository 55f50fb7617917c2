//! The `hostile_file` fuzz target's stable, bounded version: seeded random
//! inputs decoded as the fuzz target decodes libFuzzer's bytes, each run in
//! a child process, so a crash (SIGSEGV, SIGBUS, abort) or a hang is
//! reported with its case number and seed.
//!
//! Replay: `SARSEN_SEED=<base> SARSEN_CASE=<i> cargo test -p sarsen-fuzz --test hostile_file`.
//! More cases: `SARSEN_FUZZ_ITERS=5000` (or `SARSEN_TEST_CASES`).

use std::time::Duration;

use sarsen_fuzz::child::{child_main, run_in_children};
use sarsen_fuzz::hostile::{self, HostileInput, Mutation, OpenFlags};
use sarsen_fuzz::{base_seed, input_bytes, iterations};

fn case(_i: usize, seed: u64) -> Result<String, String> {
    // 4 to 100 bytes: up to about a dozen mutations.
    let data = input_bytes(seed, 4 + (seed % 97) as usize);
    hostile::exercise(&HostileInput::from_bytes(&data))
}

#[test]
#[ignore = "helper: run by hostile_file_seeded in a child process"]
fn hostile_child() {
    hostile::warm_up();
    child_main("hostile", Duration::from_secs(60), case);
}

#[test]
fn hostile_file_seeded() {
    let base = base_seed("hostile_file");
    let (from, to) = match std::env::var("SARSEN_CASE") {
        Ok(i) => {
            let i: usize = i.trim().parse().expect("SARSEN_CASE");
            (i, i + 1)
        }
        Err(_) => (0, iterations(1000)),
    };
    let sum = run_in_children(
        "hostile",
        "hostile_child",
        base,
        from,
        to,
        Duration::from_secs(120),
    );
    eprintln!("[hostile_file] {} cases passed; outcomes:", sum.passed);
    for (k, n) in &sum.outcomes {
        eprintln!("  {n:5} x {k}");
    }
    assert!(
        sum.failures.is_empty(),
        "{} of {} damaged files failed (replay one: SARSEN_SEED={base} SARSEN_CASE=<i> cargo test -p sarsen-fuzz --test hostile_file):\n  {}",
        sum.failures.len(),
        to - from,
        sum.failures.join("\n  ")
    );
    assert_eq!(sum.passed, to - from);
}

/// The oracle works: a damaged value that reads return without an error
/// (reads do not verify checksums) is reported by `check`, and the
/// undamaged template passes.
#[test]
fn oracle_sees_silent_damage() {
    let flags = OpenFlags {
        write_map: false,
        foreign_boot: false,
        read_only: true,
    };
    let clean = HostileInput {
        big_pages: false,
        open: flags,
        mutations: vec![],
    };
    let s = hostile::exercise(&clean).expect("the template itself");
    assert!(s.contains("data=a-commit") && s.contains("check:ok"), "{s}");
    // Flip a byte inside a value of the main database, in every place the
    // value's bytes occur (freed copies of its page too).
    let t = hostile::template(false);
    let v = t.history.last().unwrap()[""]
        .iter()
        .map(|(_, v)| v)
        .find(|v| v.len() > 20 && v.len() < 100)
        .expect("a short value");
    let mutations: Vec<Mutation> = t
        .bytes
        .windows(v.len())
        .enumerate()
        .filter(|(_, w)| *w == v.as_slice())
        .map(|(pos, _)| Mutation::FlipByte {
            pos: pos as u32 + 3,
            xor: 1,
        })
        .collect();
    assert!((1..=32).contains(&mutations.len()), "{}", mutations.len());
    let bad = HostileInput { mutations, ..clean };
    let s = hostile::exercise(&bad).expect("damage reported by check");
    assert!(
        s.contains("wrong-data(reported)") && s.contains("check:problems"),
        "{s}"
    );
}
