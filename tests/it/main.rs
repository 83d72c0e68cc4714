//! The plain tests, one module per concern, gathered into one test binary (as
//! rust-analyzer and TiKV do): one link instead of 46, and a slow test of one concern
//! waits beside the others rather than before them. `cargo test --test it store_race::`
//! runs one concern.
//!
//! The tests that need a feature (`sim`, `proptest`, `loom`, `mutants`) are binaries of
//! their own beside this directory, each naming its feature in `Cargo.toml`; those that
//! select a mutant must be (the selection is process-wide).

#[path = "../support/mod.rs"]
mod support;

#[cfg(not(feature = "mutants"))]
mod histories;

mod bench_http;
mod bench_smoke;
mod check_accounting;
mod check_fields;
mod check_oracle;
mod check_pages;
mod check_pushed;
mod check_store_bridge;
mod check_store_stores;
mod conformance_bugs;
mod contract_precedence;
mod contract_table;
mod digest_vectors;
mod example_store;
mod fixture_malformed;
mod fixture_replay;
mod interop_clients;
mod interop_ext_tasks;
mod interop_rmcp;
mod layers;
mod list_cursor;
mod mcp_cancel_effect;
mod mcp_http;
mod mcp_modern;
mod mcp_point_of_no_return;
mod mcp_restart;
mod mcp_restart_modern;
mod mcp_stdio;
mod mcp_stdio_modern;
mod mcp_waits;
mod mcp_wire;
mod probe_broken;
mod probe_tasklatch;
mod probe_third_party;
mod report;
mod report_server;
mod runtime_idle;
mod runtime_queue;
mod runtime_tokio;
mod serve_drain;
mod serve_flood;
mod serve_scale_out;
mod store_bad_input;
mod store_conformance;
mod store_crash;
mod store_group_commit;
mod store_integer_bounds;
mod store_migration;
mod store_race;
mod tidy;
