//! Operations decoded from the input, run against Sarsen and a `BTreeMap`
//! model (`sarsen_fuzz::api`): any disagreement panics, and `Env::check`
//! must be clean after every commit.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sarsen_fuzz::api::run_bytes(data);
});
