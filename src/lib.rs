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
//! ## Modules
//!
//! - [`contract`] — the pure policy core: statuses, the transition table, the admission
//!   record, the [`contract::Decision`] vocabulary, the guards and their precedence, the
//!   request digest (RFC 8785 + SHA-256) and caller-bound list cursors.
//! - [`fixture`] — contract fixtures (`fixtures/contract/*.json`, format
//!   `tasklatch.contract-fixture/v1`): loading with precise errors, and replay through the
//!   contract.
//! - [`store`] — the `TaskStore` port and its adapters (memory, SQLite, PostgreSQL) and
//!   [`conformance`], the suite every adapter passes.
//! - [`runtime`] — the outbox → queue → worker runtime, written once against the `Env`
//!   facade (tokio for real, madsim in simulation).
//! - [`check`] — the oracle: invariants I1–I10 over a recorded history.
//! - `sim` (feature `sim`) — the deterministic simulation: scenarios, the simulated world,
//!   `run_seed`, and `sim::shrink`, the minimiser of a failing run.
//! - `hunt` (feature `sim`) — `tasklatch hunt`: sharded, budgeted race hunting, failure
//!   artifacts (record, timeline, SVG swimlane) and JUnit reports.
//! - [`interleave`] — the proptest state machine and the loom models.
//! - [`mutants`] — the named hostile mutants and the kill matrix.
//! - [`bench`] — `tasklatch bench store`.
//!
//! ## Features
//!
//! - `sim` — compiles madsim in simulation mode for the deterministic crash simulation.
//!   It relies on `--cfg madsim` from the committed `.cargo/config.toml`; a `RUSTFLAGS`
//!   you set replaces that, so include `--cfg madsim` in it.
//! - `postgres` — the PostgreSQL adapter.
//! - `proptest` — the proptest state machine ([`interleave::prop`]).
//! - `loom` — the loom models of the in-memory store ([`interleave::models`]).
//! - `mutants` — the named hostile mutants and the kill matrix ([`mutants`]); implies
//!   `sim`, `proptest` and `loom`. Off, every mutant hook is a constant `false`.

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
#[path = "harness/bench.rs"]
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
#[cfg(all(feature = "sim", madsim))]
#[path = "harness/sim/mod.rs"]
pub mod sim;
#[path = "harness/verify.rs"]
pub mod verify;
