//! The `api_ops` fuzz target's stable, bounded version: seeded random
//! inputs, decoded as the fuzz target decodes libFuzzer's bytes, run against
//! the model.
//!
//! Replay a failure: `SARSEN_SEED=<base> SARSEN_CASE=<i> cargo test -p sarsen-fuzz --test api_ops`.
//! More cases: `SARSEN_FUZZ_ITERS=2000` (or `SARSEN_TEST_CASES`).

use std::panic::{catch_unwind, AssertUnwindSafe};

use sarsen_fuzz::api::{self, ApiStats, Op};
use sarsen_fuzz::child::case_seed;
use sarsen_fuzz::{base_seed, input_bytes, iterations};

fn cases() -> std::ops::Range<usize> {
    match std::env::var("SARSEN_CASE") {
        Ok(i) => {
            let i: usize = i.trim().parse().expect("SARSEN_CASE");
            i..i + 1
        }
        Err(_) => 0..iterations(100),
    }
}

#[test]
fn api_ops_seeded() {
    let base = base_seed("api_ops");
    let mut total = ApiStats::default();
    for i in cases() {
        let seed = case_seed(base, i);
        // 1 to 12 KiB of input: tens to hundreds of operations.
        let len = 1024 + (seed % (11 * 1024)) as usize;
        let data = input_bytes(seed, len);
        match catch_unwind(AssertUnwindSafe(|| api::run_bytes(&data))) {
            Ok(s) => total += s,
            Err(_) => panic!(
                "api_ops case {i} failed; replay: SARSEN_SEED={base} SARSEN_CASE={i} cargo test -p sarsen-fuzz --test api_ops"
            ),
        }
    }
    eprintln!("[api_ops] {total:?}");
    assert!(
        total.commits > 0 && total.checks > 0,
        "no commit ran: {total:?}"
    );
    assert!(
        total.moves > 0 && total.max_dup_pairs > 0,
        "no DUPSORT database filled, or no cursor walk: {total:?}"
    );
}

/// Inputs written as operations, and the runner's own oracle: run again
/// over the same directory, it accepts the file it left and refuses one
/// whose counter value was changed behind its back.
#[test]
fn runner_checks_what_it_claims() {
    use api::{DbSel, Key, Value};
    let k = |n| Key::Num(n);
    let words = |a, b| {
        [
            Value::Word(a),
            Value::Word(b),
            Value::Word(0),
            Value::Word(0),
        ]
    };
    let ops = vec![
        Op::CreateDb { db: DbSel(1) },
        Op::Fill {
            db: DbSel(0),
            start: 0,
            count: 200,
            step: 3,
            value: Value::Pattern { seed: 1, len: 700 },
        },
        Op::Merge {
            db: DbSel(1),
            key: k(5),
            count: 2,
            operands: words(2, 40),
        },
        // A 3-byte operand: uint64add refuses, the counter stays at 42.
        Op::Merge {
            db: DbSel(1),
            key: k(5),
            count: 1,
            operands: [0, 0, 0, 0].map(|_| Value::Short {
                len: 3,
                bytes: *b"bad12345",
            }),
        },
        Op::Snapshot,
        Op::Commit,
        Op::DeleteSome {
            db: DbSel(0),
            from: k(0),
            count: 63,
        },
        Op::VerifyHeld,
        Op::Commit,
        Op::Reopen {
            write_map: true,
            durability: 0,
        },
        Op::Get {
            db: DbSel(1),
            key: k(5),
        },
    ];
    let dir = tempfile::tempdir().unwrap();
    let (s, state) = api::run_ops_from(dir.path(), 512, &ops, Default::default());
    assert_eq!((s.commits, s.opens), (2, 2), "{s:?}");
    let path = dir.path().join("data.sdb");
    let good = std::fs::read(&path).unwrap();
    let (s, _) = api::run_ops_from(dir.path(), 512, &[Op::Commit], state.clone());
    assert_eq!(s.checks, 2, "{s:?}");
    // The counter 42 becomes 43 on disk: the next run must notice.
    let mut bad = good.clone();
    let pos = bad
        .windows(8)
        .position(|w| w == 42u64.to_le_bytes())
        .expect("the counter's bytes are in the file");
    bad[pos] = 43;
    std::fs::write(&path, &bad).unwrap();
    let r = catch_unwind(AssertUnwindSafe(|| {
        api::run_ops_from(dir.path(), 512, &[Op::Commit], state)
    }));
    assert!(r.is_err(), "a changed value went unnoticed");
}

/// The DUPSORT operations written out: sub-trees of 255 values in both
/// DUPSORT databases at 512-byte pages, walked with the duplicate moves
/// (the DUPFIXED batches together must be the key's values), written
/// through a write cursor, shrunk back to lists and to nothing, committed
/// and reopened; every result is checked against the model on the way.
#[test]
fn dupsort_ops_by_name() {
    use api::{decode_dmove, DKey, DMove, DVal, Target};
    let byte = |m: DMove| (0..19u8).find(|&b| decode_dmove(b).0 == m).unwrap();
    let walk: Vec<u8> = [
        DMove::First,
        DMove::AllMultiple,
        DMove::NextNodup,
        DMove::DupCount,
        DMove::LastDup,
        DMove::PrevDup,
        DMove::FirstDup,
        DMove::NextDup,
        DMove::GetMultiple,
        DMove::NextMultiple,
        DMove::SeekBoth,
        DMove::SeekBothRange,
        DMove::PrevNodup,
        DMove::Last,
        DMove::Prev,
    ]
    .map(byte)
    .to_vec();
    let mut moves = [0u8; 24];
    moves[..walk.len()].copy_from_slice(&walk);
    let mut ops = Vec::new();
    for t in [Target(0), Target(1)] {
        for key in [DKey::Small(1), DKey::Small(2)] {
            ops.push(Op::DupFill {
                t,
                key,
                start: 7,
                count: 255,
                step: 3,
                pad: 20,
            });
        }
        ops.push(Op::DupCursor {
            t,
            key: DKey::Small(1),
            value: DVal::Num(40),
            moves,
            count: walk.len() as u8,
        });
        ops.push(Op::Commit);
        ops.push(Op::WCursor {
            t,
            key: DKey::Small(2),
            value: DVal::Num(9),
            // seek, delete_current, next, put_current, next_dup, put.
            moves: [5, 16, 0, 15, 7, 14, 2, 13, 0, 0, 0, 0, 0, 0, 0, 0],
            count: 8,
        });
        ops.push(Op::DupDeleteSome {
            t,
            key: DKey::Small(1),
            count: 250,
            skip: 0,
            stride: 0,
        });
        ops.push(Op::DupDeleteSome {
            t,
            key: DKey::Small(1),
            count: 255,
            skip: 0,
            stride: 0,
        });
    }
    ops.push(Op::Commit);
    ops.push(Op::Reopen {
        write_map: false,
        durability: 0,
    });
    let dir = tempfile::tempdir().unwrap();
    let (s, _) = api::run_ops_from(dir.path(), 512, &ops, Default::default());
    assert_eq!(s.max_dup_pairs, 510, "{s:?}");
}
