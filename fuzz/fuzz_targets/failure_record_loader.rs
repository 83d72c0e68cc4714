//! Failure records (the `failure.json` a hunt writes, the regression seeds in fixtures/seeds/):
//! any text loads, its minimised scenario checked, or is refused naming the file and
//! field, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ =
        tasklatch::hunt::artifact::FailureRecord::parse(std::path::Path::new("fuzz.json"), text);
});
