#![no_main]
// libFuzzer's own harness writes what it finds (crash files, the corpus)
// where `cargo fuzz` tells it; Gantry's code under test writes nothing.
#![allow(clippy::disallowed_methods)]

libfuzzer_sys::fuzz_target!(|data: &[u8]| gantry_fuzz::http(data));
