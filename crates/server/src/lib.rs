//! # tasklatch-server
//!
//! Durable MCP tasks for your tools: what a server runs. A `tools/call` accepted as a task
//! is persisted with its outbox entry before anything runs, created once per idempotency
//! key and request digest, moved by compare-and-swap behind a terminal latch, readable
//! only by its owner, and expired on time; a worker's effect is prepared, decided and only
//! then published, so a cancelled task leaves none.
//!
//! - [`contract`] — the pure policy core (`tasklatch-contract`), re-exported: statuses, the
//!   transition table, the admission record, the [`Decision`](contract::Decision)
//!   vocabulary, the guards, the request digest and caller-bound list cursors.
//! - [`store`] — the [`TaskStore`](store::TaskStore) port, its adapters (memory, SQLite,
//!   PostgreSQL with the `postgres` feature), the helpers an adapter of yours shares, and
//!   [`StoreFactory`](store::StoreFactory), what every engine of the harness takes.
//! - [`runtime`] — the outbox → queue → worker runtime, written once against the
//!   [`Env`](runtime::env::Env) facade (tokio for real; the harness supplies madsim's).
//! - [`mcp`] — the MCP tasks server for both protocol eras (2025-11-25 core tasks and the
//!   2026-07-28 extension `io.modelcontextprotocol/tasks`): JSON-RPC mapping, stdio and
//!   Streamable HTTP.
//! - [`tool`] — your tools as durable tasks: the [`Tool`](tool::Tool) trait (prepare →
//!   decide → publish, the point of no return) and the [`Toolbox`](tool::Toolbox).
//! - [`builder`] — [`ServerBuilder`](builder::ServerBuilder): a store URL, your toolbox,
//!   limits and tokens, then stdio or Streamable HTTP, with a drain on SIGTERM.
//! - [`load`] — reading JSON files with `PATH:LINE:COLUMN: FIELD: message` errors.
//!
//! What is deliberately absent: nothing here judges. The oracle, the engines and the probe
//! are other crates (`tasklatch-oracle`, `tasklatch-harness`, `tasklatch-probe`), and the
//! compiler keeps them out: this crate depends on none of them.
//!
//! ## Features
//!
//! - `postgres` — the PostgreSQL adapter (`postgres://` store URLs).
//! - `mutants` — the named hostile mutants' hooks (`tasklatch-mutants`); off, every hook is
//!   a constant `false` and folds away.

#![warn(missing_docs)]

pub use tasklatch_contract as contract;
// The mutant switch under the name the hooks have always used.
use tasklatch_mutants as mutants;

pub mod builder;
pub mod load;
pub mod mcp;
pub mod runtime;
pub mod store;
mod sync;
pub mod tool;
