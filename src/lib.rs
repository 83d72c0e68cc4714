//! # tasklatch
//!
//! The state contract underneath MCP 2025-11-25 tasks, implemented, and the harness that
//! proves it.
//!
//! MCP lets a server accept a `tools/call` as a durable *task* that the client polls
//! (`tasks/get`), collects (`tasks/result`), cancels and lists. The protocol is only an
//! envelope; what keeps it honest is underneath: an admission record persisted before
//! dispatch, idempotent creation bound to a digest of the request, compare-and-swap
//! transitions with a terminal latch, the tenant checked in every query, and expiry.
//!
//! ## Two layers
//!
//! The **product** (`src/product/`) is what a server runs; the **harness**
//! (`src/harness/`) is what proves it. The harness imports the product, never the reverse
//! (`tests/layers.rs` checks the imports), so a server built on tasklatch carries none of
//! the machinery that judges it.
//!
//! Product:
//! - [`contract`] — the pure policy core: statuses, the transition table, the admission
//!   record, the [`Decision`] vocabulary, the guards and their precedence, the request
//!   digest (RFC 8785 + SHA-256) and caller-bound list cursors. No IO, clock or randomness.
//! - [`store`] — the [`TaskStore`] port, its adapters (memory, SQLite, PostgreSQL), the
//!   helpers an adapter of yours shares, and [`StoreFactory`], what every engine takes.
//! - [`runtime`] — the outbox → queue → worker runtime, written once against the `Env`
//!   facade (tokio for real, madsim in simulation).
//! - [`mcp`] — the MCP 2025-11-25 tasks server: JSON-RPC mapping, stdio and Streamable HTTP.
//! - [`mutants`] — the switch of the named hostile mutants: a leaf, constant `false`
//!   without the `mutants` feature.
//! - [`load`] — reading JSON files with `PATH:LINE:COLUMN: FIELD: message` errors.
//!
//! Harness:
//! - [`verify`] — **check a store you wrote**: [`check_store`] runs the conformance suite,
//!   the proptest machine and a simulation hunt on your [`StoreFactory`] and reports.
//! - [`conformance`] — the store conformance suite.
//! - [`fixture`] — contract fixtures (`tasklatch.contract-fixture/v1`): load, replay.
//! - [`check`] — the oracle: invariants I1–I17, fault accounting F1–F3 and counter rules
//!   C1–C4 over a recorded history, one function each.
//! - [`interleave`] — the proptest state machine and the loom models.
//! - [`probe`] — `tasklatch probe`: checks a live MCP tasks server from the outside (stdio
//!   or Streamable HTTP, both eras).
//! - [`report`] — plain report helpers: whole-file writes, the commit named, XML escaping,
//!   budgets (the hunt writes through them; commands without the simulation can too).
//! - `sim` (feature `sim`) — the deterministic simulation: scenarios, the world built with
//!   a store ([`sim::Sim`]), and `sim::shrink`, the minimiser of a failing run.
//! - `hunt` (feature `sim`) — `tasklatch hunt`: sharded, budgeted race hunting; failures
//!   minimised and kept as artifacts (record, timeline, SVG swimlane) and JUnit.
//! - `matrix` (feature `mutants`) — the kill matrix: every engine, a column per store,
//!   against every named mutant.
//! - [`bench`](mod@bench) — `tasklatch bench store`.
//!
//! The crate root re-exports the few names most users start from (below).
//!
//! ## Features
//!
//! - `sim` — compiles madsim in simulation mode for the deterministic crash simulation.
//!   It relies on `--cfg madsim` from the committed `.cargo/config.toml`; a `RUSTFLAGS`
//!   you set replaces that, so include `--cfg madsim` in it.
//! - `postgres` — the PostgreSQL adapter.
//! - `proptest` — the proptest state machine (`interleave::prop`).
//! - `loom` — the loom models of the in-memory store (`interleave::models`).
//! - `mutants` — the named hostile mutants ([`mutants`]) and the kill matrix; implies
//!   `sim`, `proptest` and `loom`. Off, every mutant hook is a constant `false`.

#![warn(missing_docs)]

#[cfg(all(feature = "sim", not(madsim)))]
compile_error!(
    "feature `sim` needs `--cfg madsim`. The repository's .cargo/config.toml sets it, but a \
     RUSTFLAGS or CARGO_ENCODED_RUSTFLAGS in your environment replaces those flags: add \
     `--cfg madsim` to it (e.g. RUSTFLAGS=\"-D warnings --cfg madsim\") or unset it."
);

// The product: what a server runs. Nothing under `src/product/` imports the harness
// (`tests/layers.rs` checks it); module paths stay short (`tasklatch::store`).
#[path = "product/contract/mod.rs"]
pub mod contract;
#[path = "product/load.rs"]
pub mod load;
#[path = "product/mcp/mod.rs"]
pub mod mcp;
#[path = "product/mutants.rs"]
pub mod mutants;
#[path = "product/runtime/mod.rs"]
pub mod runtime;
#[path = "product/store/mod.rs"]
pub mod store;
#[path = "product/sync.rs"]
mod sync;

// The harness: what proves the product. It imports the product, never the reverse.
#[path = "harness/bench/mod.rs"]
pub mod bench;
#[path = "harness/check/mod.rs"]
pub mod check;
#[path = "harness/conformance.rs"]
pub mod conformance;
#[path = "harness/fixture/mod.rs"]
pub mod fixture;
#[cfg(all(feature = "sim", madsim))]
#[path = "harness/hunt/mod.rs"]
pub mod hunt;
#[path = "harness/interleave/mod.rs"]
pub mod interleave;
#[cfg(feature = "mutants")]
#[path = "harness/matrix.rs"]
pub mod matrix;
#[path = "harness/probe/mod.rs"]
pub mod probe;
#[path = "harness/report.rs"]
pub mod report;
#[cfg(all(feature = "sim", madsim))]
#[path = "harness/sim/mod.rs"]
pub mod sim;
#[path = "harness/verify.rs"]
pub mod verify;

// The chosen surface: what a server author and a store author reach for first.
pub use contract::{Decision, Negotiated, TaskOutcome, TaskRecord, TaskStatus, TaskSupport};
pub use store::{
    MemoryFactory, MemoryStore, SqliteFactory, SqliteStore, StoreError, StoreFactory, TaskStore,
    factory_for, open_store,
};
#[cfg(feature = "postgres")]
pub use store::{PostgresFactory, PostgresStore};
pub use verify::{Budget, Report, check_store};
