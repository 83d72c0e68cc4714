//! Interleaving search: the engines that look for orderings a test author did not write.
//!
//! - [`prop`] (feature `proptest`) — a proptest-state-machine model: clients, workers, the
//!   sweeper and the clock interleaved at store-operation granularity against a reference
//!   model of the contract, on [`MemoryStore`](crate::store::MemoryStore) and
//!   [`SqliteStore`](crate::store::SqliteStore).
//! - [`models`] (feature `loom`) — loom models of the in-memory store's own source,
//!   compiled here against loom's `sync` types: every interleaving of a few threads inside
//!   the store's critical sections, exhaustively up to a preemption bound.
//!
//! The simulation (`sim`) covers what neither can: time, crashes and the whole runtime.

#[cfg(feature = "loom")]
pub mod models;
#[cfg(feature = "proptest")]
pub mod prop;
