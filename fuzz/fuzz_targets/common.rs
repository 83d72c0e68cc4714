//! What the server-driving targets share: one server over the memory store with the
//! conformance tools, its runtime never started (a tool never runs: what is fuzzed is
//! parsing and dispatch), and a current-thread tokio to drive it.

use std::sync::Arc;
use tasklatch::mcp::{Assembly, Server, ServerConfig};
use tasklatch::runtime::{RuntimeConfig, TokioEnv};
use tasklatch::store::{MemoryStore, StoreOptions};

/// The server; `label` names its (never written) exports directory.
pub fn server(label: &str) -> Arc<Server> {
    let store = Arc::new(MemoryStore::open(&StoreOptions::default()).expect("memory store"));
    let exports =
        std::env::temp_dir().join(format!("tasklatch-fuzz-{label}-{}", std::process::id()));
    let Assembly { server, .. } = Assembly::new(
        store,
        exports,
        Arc::new(TokioEnv),
        ServerConfig {
            conformance_tools: true,
            ..ServerConfig::default()
        },
        RuntimeConfig::default(),
    );
    server
}

pub fn tokio() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio")
}
