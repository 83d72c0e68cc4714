//! Simulation scenarios (`tasklatch sim --scenario FILE`): any text loads and passes the
//! scenario's checks, or is refused with an error naming the file and field, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = tasklatch::sim::Scenario::parse(std::path::Path::new("fuzz.json"), text);
});
