//! # tasklatch-harness
//!
//! The white-box engines that prove a task store or server: what a store or server author
//! puts in dev-dependencies. Each engine takes a [`StoreFactory`](tasklatch_server::store::StoreFactory),
//! so tasklatch's own stores and yours go through the same checks; every verdict comes
//! from `tasklatch-oracle`, which links none of the system under test.
//!
//! - [`verify`] — **check a store you wrote**: [`check_store`](verify::check_store) runs the
//!   conformance suite, the proptest machine and a simulation hunt on your factory.
//! - [`conformance`] — the store conformance suite.
//! - [`fixture`] — contract fixtures (`tasklatch.contract-fixture/v1`): load, replay.
//! - [`interleave`] — the proptest state machine (feature `proptest`) and the loom models
//!   (feature `loom`).
//! - `sim` (feature `sim`) — the deterministic simulation: scenarios, the world built with
//!   a store (`sim::Sim`), and `sim::shrink`, the minimiser of a failing run.
//! - `hunt` (feature `sim`) — `tasklatch hunt`: sharded, budgeted race hunting; failures
//!   minimised and kept as artifacts (record, timeline, SVG swimlane) and JUnit.
//! - `matrix` (feature `mutants`) — the kill matrix: every engine, a column per store and
//!   the probe's, against every named mutant.
//! - [`bench`](mod@bench) — `tasklatch bench store`.
//!
//! ## Features
//!
//! - `sim` — compiles madsim in simulation mode. It relies on `--cfg madsim` from the
//!   workspace's `.cargo/config.toml`; a `RUSTFLAGS` you set replaces that, so include
//!   `--cfg madsim` in it.
//! - `postgres` — the PostgreSQL store in every engine's columns.
//! - `proptest`, `loom` — the interleaving engines.
//! - `mutants` — the named hostile mutants and the kill matrix; implies every engine.

#![warn(missing_docs)]

#[cfg(all(feature = "sim", not(madsim)))]
compile_error!(
    "feature `sim` needs `--cfg madsim`. The repository's .cargo/config.toml sets it, but a \
     RUSTFLAGS or CARGO_ENCODED_RUSTFLAGS in your environment replaces those flags: add \
     `--cfg madsim` to it (e.g. RUSTFLAGS=\"-D warnings --cfg madsim\") or unset it."
);

// The layers below, under the names the engines' code has always used.
use tasklatch_contract as contract;
use tasklatch_oracle as check;
use tasklatch_server::{load, store};
// Only the simulation, the hunt and the kill matrix reach these.
#[cfg(all(feature = "sim", madsim))]
use tasklatch_mutants as mutants;
#[cfg(all(feature = "sim", madsim))]
use tasklatch_oracle::report;
#[cfg(feature = "mutants")]
use tasklatch_probe as probe;
#[cfg(all(feature = "sim", madsim))]
use tasklatch_server::{mcp, tool};
// The proptest machine settles effects through the runtime's `effect` module too.
#[cfg(any(all(feature = "sim", madsim), feature = "proptest"))]
use tasklatch_server::runtime;

pub mod bench;
pub mod conformance;
pub mod fixture;
#[cfg(all(feature = "sim", madsim))]
pub mod hunt;
pub mod interleave;
#[cfg(feature = "mutants")]
pub mod matrix;
#[cfg(all(feature = "sim", madsim))]
pub mod sim;
pub mod verify;
