//! The JSON-RPC handler, both eras (a 2026-07-28 envelope in `params._meta` routes a
//! message to the extension's handlers): one server over the memory store, fed every input
//! as one message of an HTTP caller's session. It must answer or stay silent, never panic.
//! The runtime is not started (a tool never runs): what is fuzzed is the handler's
//! parsing and dispatch.
#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, OnceLock};
use tasklatch::contract::Negotiated;
use tasklatch::mcp::{Server, Session};

struct World {
    tokio: tokio::runtime::Runtime,
    server: Arc<Server>,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| World {
        tokio: common::tokio(),
        server: common::server("handler"),
    })
}

fuzz_target!(|text: &str| {
    let world = world();
    let session = Session {
        id: "fuzz".into(),
        auth_key: "tenant-fuzz/caller".into(),
        negotiated: Negotiated::FULL,
        idempotency_header: None,
    };
    // A blocked tasks/result would wait for a task that never runs: bound every input.
    let _ = world.tokio.block_on(async {
        tokio::time::timeout(
            std::time::Duration::from_millis(50),
            world.server.handle_text(&session, text),
        )
        .await
    });
});
