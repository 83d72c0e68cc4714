//! # tasklatch
//!
//! The state contract underneath MCP tasks, implemented, and the harness that proves it:
//! the whole kit, one crate per layer, re-exported here under one name for the
//! `tasklatch` command line, its tests and anyone who wants everything.
//!
//! MCP lets a server accept a `tools/call` as a durable *task* that the client polls
//! (`tasks/get`), collects (`tasks/result`), cancels and lists. The protocol is only an
//! envelope; what keeps it honest is underneath: an admission record persisted before
//! dispatch, idempotent creation bound to a digest of the request, compare-and-swap
//! transitions with a terminal latch, the tenant checked in every query, and expiry.
//!
//! ## The layers
//!
//! Each is a crate, so the compiler keeps the layering (ARCHITECTURE.md has the map):
//!
//! | crate | modules here | depends on |
//! |---|---|---|
//! | `tasklatch-mutants` | [`mutants`] | nothing |
//! | `tasklatch-contract` | [`contract`] | mutants |
//! | `tasklatch-server` | [`store`], [`runtime`], [`mcp`], [`load`] | contract |
//! | `tasklatch-oracle` | [`check`], [`report`] | contract |
//! | `tasklatch-probe` | [`probe`], [`bench::http`], [`bench::compare`] | contract, oracle |
//! | `tasklatch-bridge` | [`bridge`] | contract |
//! | `tasklatch-harness` | [`verify`], [`conformance`], [`fixture`], [`interleave`], `sim`, `hunt`, `matrix`, [`bench`](mod@bench) | server, oracle, probe |
//!
//! A server author depends on `tasklatch-server` alone and carries none of the machinery
//! that judges it; a store or server author puts `tasklatch-harness` in dev-dependencies.
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

pub use tasklatch_bridge as bridge;
pub use tasklatch_contract as contract;
pub use tasklatch_mutants as mutants;
pub use tasklatch_oracle as check;
pub use tasklatch_oracle::report;
pub use tasklatch_probe as probe;
pub use tasklatch_server::{builder, load, mcp, runtime, store, tool};

#[cfg(feature = "mutants")]
pub use tasklatch_harness::matrix;
pub use tasklatch_harness::{conformance, fixture, interleave, verify};
#[cfg(all(feature = "sim", madsim))]
pub use tasklatch_harness::{hunt, sim};

/// Benchmarks: `tasklatch bench store` (the harness's) and `tasklatch bench http` (the
/// probe's load generator, [`http`](tasklatch_probe::bench::http), and its side-by-side comparison,
/// [`compare`](tasklatch_probe::bench::compare)).
pub mod bench {
    pub use tasklatch_harness::bench::*;
    pub use tasklatch_probe::bench::{compare, http};
}

// The chosen surface: what a server author and a store author reach for first.
pub use contract::{Decision, Negotiated, TaskOutcome, TaskRecord, TaskStatus, TaskSupport};
pub use store::{
    MemoryFactory, MemoryStore, SqliteFactory, SqliteStore, StoreError, StoreFactory, TaskStore,
    factory_for, open_store,
};
#[cfg(feature = "postgres")]
pub use store::{PostgresFactory, PostgresStore};
pub use verify::{Budget, Report, check_store};

// The README's Rust blocks compile: `cargo test --doc` builds them as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

#[cfg(doctest)]
#[doc = include_str!("../docs/check-a-store.md")]
pub struct CheckAStoreDoctests;
