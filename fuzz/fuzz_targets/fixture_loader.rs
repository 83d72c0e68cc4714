//! Contract fixtures (`tasklatch replay FILE`): any bytes load or are refused with an
//! error naming the file, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let _ = tasklatch::fixture::parse_fixture(std::path::Path::new("fuzz.json"), bytes);
});
