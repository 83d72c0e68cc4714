//! JSON-RPC framing (`mcp::wire::parse`, both eras' messages): any text is a message or a
//! JSON-RPC error answer, never a panic; an error answer is itself well-formed JSON-RPC.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Err(answer) = tasklatch::mcp::wire::parse(text) {
        assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
        assert!(answer["error"]["code"].is_i64(), "{answer}");
    }
});
