//! Tokens files (`serve --tokens FILE`): any text loads or is refused with an error
//! naming the file, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = tasklatch::mcp::http::Tokens::parse(std::path::Path::new("tokens.json"), text);
});
