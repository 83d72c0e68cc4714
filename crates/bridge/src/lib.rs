//! # tasklatch-bridge
//!
//! `tasklatch check-store`: the harness's engines run against task stores written for the
//! MCP SDKs, in their own language. Teams write their durable task store (Redis,
//! PostgreSQL, SQLite) against their SDK's store interface, not tasklatch's `TaskStore`;
//! the bridge reaches it where it lives.
//!
//! A small shim process in the store's language ([`shim`]: Node for the TypeScript SDK's
//! `TaskStore`, Python for `mcp`'s) loads the user's module, calls its factory for a fresh
//! store per case, and maps each call of a line-delimited JSON protocol onto the store's
//! methods (docs/store-bridge.md). What the store throws is data, never a crash of the
//! shim; the store's clock is the shim's fake one, moved by the engines, so expiry is
//! checked without waiting.
//!
//! The interfaces are not the contract: neither has versions or a compare-and-swap, the
//! Python one has no owner. What the contract says that an interface cannot express is
//! counted and listed as "not expressible", never passed.
//!
//! This crate links the contract's vocabulary and nothing of the server or the harness: it
//! judges stores it did not write (its dependencies show it).

#![warn(missing_docs)]

pub mod check;
pub mod driver;
pub mod explore;
pub mod fixture;
pub mod model;
pub mod ops;
pub mod races;
pub mod restart;
pub mod shim;
pub mod snippet;
pub mod spec;

pub use check::{CheckReport, Options, check_store};
pub use shim::{Answer, BridgeError, Shim, Thrown};
pub use spec::{Interface, Language, StoreSpec};
