//! Store URLs (`--store`): any text is parsed or refused with an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = tasklatch::store::StoreUrl::parse(text);
});
