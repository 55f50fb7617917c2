//! A small valid database damaged as the input says, then opened, read,
//! checked, written and reopened (`sarsen_fuzz::hostile`): errors are
//! fine, panics, hangs and crashes are not, nor wrong data that `check`
//! does not report.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(
    init: {
        sarsen_fuzz::hostile::warm_up();
    },
    |data: &[u8]| {
        sarsen_fuzz::hostile::exercise_bytes(data);
    }
);
