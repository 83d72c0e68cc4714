//! The one place synchronisation primitives come from (tokio's `src/loom/` pattern).
//!
//! Code that shares memory between threads — today the in-memory store — imports its
//! locks from here, never from `std::sync` directly. The loom models compile that code's
//! source against a `sync` module of the same shape backed by `loom::sync`, so the same
//! source is model-checked without a `--cfg loom` that would break madsim's dependencies.

pub(crate) use std::sync::{Mutex, MutexGuard};
