//! The LMDB differential test of `sarsen-bench`
//! (`crates/sarsen-bench/tests/lmdb_differential.rs`) driven through the C
//! ABI: its seeded random programs run twice through the same LMDB executor
//! and the same wrapper over LMDB's C functions, once on real LMDB and once
//! on this crate's `liblmdb.so`. Every outcome must be equal.
//!
//! Both libraries export the `mdb_*` symbols, and this test binary links
//! this crate's rlib, so both are loaded with `dlopen` (`RTLD_LOCAL`): real
//! LMDB compiled by the test with `cc` from the sources of `lmdb-master-sys`
//! in the cargo registry (`-Bsymbolic`: its own calls stay inside it), and
//! the `liblmdb.so` of `cargo build -p sarsen-lmdb`. The test prints a
//! message and passes when there is no `cc` or no LMDB source, as
//! `c_programs.rs`. (`lmdb-master-sys` itself gives the shared files their
//! types and constants only; its functions are not called here.)
//!
//! The programs, their executor and the report are `sarsen-bench`'s files,
//! included here. The executor compares only what LMDB defines (see that
//! test's module doc); both runs here make the same calls.
//!
//! Every case runs, those with 4-byte integer keys or values
//! (`MDB_INTEGERKEY`/`MDB_INTEGERDUP` of `unsigned int`) too: this library
//! gives a database one integer width when it is created, re-creates an
//! empty named database for the width of its first put, and opens an empty
//! main database with the width of its first key and value (see the
//! README's differences).
//!
//! Knobs as `lmdb_differential`: `SARSEN_DIFF_CASES=<n>` (default 32),
//! `SARSEN_DIFF_SEED=<u64>` replays one case, `SARSEN_DIFF_SHRINK_SECS`.

// The shared files hold items only `lmdb_differential` uses (its Sarsen
// executor's helpers, the real-LMDB-only `Env::open`, constants).
#![allow(dead_code, unused_imports)]

mod common;

#[path = "../../sarsen-bench/tests/lmdb_differential/generate.rs"]
mod generate;
#[path = "../../sarsen-bench/tests/lmdb_differential/report.rs"]
mod report;

use std::ffi::c_void;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::OnceLock;

use generate::{gen_case, mix, Case, Order, Val, B};
use report::{compare, report};

/// LMDB's map: address space only, plenty for a case.
const MAP_SIZE: usize = 64 << 20;
/// LMDB's default (and this build's) longest key.
const LMDB_MAX_KEY: usize = 511;

include!("../../sarsen-bench/tests/lmdb_differential/program.rs");
include!("../../sarsen-bench/tests/lmdb_differential/lmdb.rs");

/// The LMDB functions of the shared library at `path`, loaded (and never
/// unloaded).
fn load(path: &Path) -> &'static lmdb::Api {
    // SAFETY: loading runs the library's initializers: LMDB and this
    // crate's cdylib have none with side effects.
    let lib = unsafe { libloading::Library::new(path) }.expect("load the library");
    let lib: &'static libloading::Library = Box::leak(Box::new(lib));
    let sym = |name: &str| {
        // SAFETY: the address of a function symbol, read as a pointer.
        unsafe { lib.get::<*mut c_void>(name.as_bytes()) }
            .ok()
            .map(|s| *s)
    };
    // SAFETY: both libraries implement LMDB 0.9's functions under their
    // names and signatures (LMDB's lmdb.h, include/lmdb.h), and `lib` is
    // never unloaded.
    let api = unsafe { lmdb::Api::load(sym) }.expect("every LMDB function");
    Box::leak(Box::new(api))
}

/// Real LMDB, compiled into a shared library from the registry's sources;
/// `None` without `cc` or sources.
fn real() -> Option<&'static lmdb::Api> {
    static API: OnceLock<Option<&'static lmdb::Api>> = OnceLock::new();
    *API.get_or_init(|| {
        let src = common::lmdb_src()?;
        let dir = Box::leak(Box::new(tempfile::tempdir().expect("tempdir")));
        let so = dir.path().join("libreal_lmdb.so");
        let o = std::process::Command::new("cc")
            .args([
                "-shared",
                "-fPIC",
                "-O1",
                "-pthread",
                "-Wl,-Bsymbolic",
                "-o",
            ])
            .arg(&so)
            .arg(src.join("mdb.c"))
            .arg(src.join("midl.c"))
            .output()
            .ok()?;
        assert!(
            o.status.success(),
            "cc mdb.c failed:\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        Some(load(&so))
    })
}

/// This crate's `liblmdb.so`.
fn capi() -> &'static lmdb::Api {
    static API: OnceLock<&'static lmdb::Api> = OnceLock::new();
    API.get_or_init(|| load(&common::lib_dir().join("liblmdb.so")))
}

/// The "LMDB" side of `report`'s comparison and shrinking.
fn run_lmdb(case: &Case) -> Vec<Outcome> {
    run_lib(real().expect("real LMDB"), case)
}

/// The "Sarsen" side: the program on this crate's library.
fn run_sarsen(case: &Case) -> Vec<Outcome> {
    run_lib(capi(), case)
}

/// Whether the main database of `case` has 4-byte integer keys
/// (`keys`) or values.
fn narrow_main(case: &Case, keys: bool) -> bool {
    case.dbs.iter().any(|d| {
        d.0.is_none()
            && if keys {
                d.1 == Order::U32
            } else {
                d.2.is_some_and(|x| x.order == Order::U32)
            }
    })
}

fn seeds() -> Vec<u64> {
    let var = |v: &str| std::env::var(v).ok().map(|s| s.trim().parse().expect(v));
    if let Some(seed) = var("SARSEN_DIFF_SEED") {
        return vec![seed];
    }
    (0..var("SARSEN_DIFF_CASES").unwrap_or(32))
        .map(|i| mix(0x5a25_e11d_1ff0 + i))
        .collect()
}

#[test]
fn capi_matches_lmdb() {
    if real().is_none() {
        common::skip("skipping: no C compiler (cc) or no LMDB sources (lmdb-master-sys)");
        return;
    }
    let (mut run, mut narrow_keys, mut narrow_vals) = (0, 0, 0);
    for seed in seeds() {
        let case = gen_case(seed);
        narrow_keys += usize::from(narrow_main(&case, true));
        narrow_vals += usize::from(narrow_main(&case, false));
        run += 1;
        let lmdb = run_lmdb(&case);
        if let Some(m) = compare(&lmdb, &run_sarsen(&case)) {
            panic!("through liblmdb.so: {}", report(&case, &m));
        }
        let stopped = matches!(lmdb.last(), Some(Outcome::Error(_)));
        let (n, last) = (lmdb.len(), lmdb.last());
        assert!(
            !stopped && n == case.prog.len(),
            "seed {seed}: both stopped after {n} instructions: {last:?}"
        );
    }
    eprintln!(
        "{run} cases through liblmdb.so: {narrow_keys} with a main database of 4-byte integer \
         keys, {narrow_vals} of 4-byte integer values"
    );
}
