//! Fuzzing and stress logic for Sarsen, shared by the cargo-fuzz targets in
//! `fuzz/` (nightly, libFuzzer) and the stable tests of this crate, which run
//! a bounded, seeded version of each target in CI.
//!
//! - [`api`]: the `api_ops` target. Bytes decode (with `arbitrary`) into an
//!   [`api::ApiInput`], a sequence of [`api::Op`]s run against Sarsen and a
//!   `BTreeMap` model; any disagreement panics, and `Env::check` must be
//!   clean after every commit.
//! - [`hostile`]: the `hostile_file` target. A small valid database, built
//!   once in memory, is damaged by [`hostile::Mutation`]s, then opened, read
//!   through every read path, written, committed and checked. Errors are
//!   fine; panics, hangs and crashes are not, and data that differs from
//!   every commit of the template must be reported by `check`.
//! - [`child`]: runs seeded cases in child processes, so that a crash is
//!   reported with its seed instead of taking the test binary down.
//! - [`stress`]: the long stress run (one writer, several readers, merges,
//!   named databases, reopen, `check`), also the `sarsen-stress` binary.

pub mod api;
pub mod child;
pub mod hostile;
pub mod stress;

use std::path::PathBuf;

/// splitmix64: derives independent per-case seeds from a base seed.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `len` pseudo-random bytes from `seed`: the stand-in for a fuzzer's input
/// in the stable tests.
pub fn input_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 8);
    let mut s = mix(seed);
    while out.len() < len {
        s = mix(s);
        out.extend_from_slice(&s.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Number of seeded cases a stable test runs: `SARSEN_FUZZ_ITERS`, else
/// `SARSEN_TEST_CASES`, else `default`.
pub fn iterations(default: usize) -> usize {
    for var in ["SARSEN_FUZZ_ITERS", "SARSEN_TEST_CASES"] {
        if let Some(n) = std::env::var(var)
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
        {
            return n.max(1);
        }
    }
    default
}

/// The base seed of a seeded run: `SARSEN_SEED` (decimal or `0x` hex)
/// replays one, otherwise a fresh random seed. Printed either way.
pub fn base_seed(what: &str) -> u64 {
    let seed = match std::env::var("SARSEN_SEED") {
        Ok(s) => {
            let s = s.trim();
            match s.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16).expect("SARSEN_SEED: bad hex"),
                None => s.parse().expect("SARSEN_SEED: not a u64"),
            }
        }
        Err(_) => rand::random(),
    };
    eprintln!("[{what}] base SEED={seed}");
    seed
}

/// A directory for scratch databases: `/dev/shm` when it exists (no disk
/// syncs, so fuzzing runs faster), else the system's temp directory.
pub fn scratch_root() -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    }
}

/// A fresh scratch directory under [`scratch_root`], removed on drop.
pub fn scratch_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("sarsen-fuzz-")
        .tempdir_in(scratch_root())
        .or_else(|_| tempfile::tempdir())
        .expect("creating a scratch directory")
}
