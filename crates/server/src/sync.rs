//! The one place synchronisation primitives come from (tokio's `src/loom/` pattern).
//!
//! Product code that shares memory between threads takes its locks from here, never from
//! `std::sync` directly; `clippy.toml` disallows `std::sync::{Mutex, RwLock, Condvar}` and
//! clock reads everywhere else. The loom models compile the in-memory store's source
//! against a `sync` module of the same shape backed by `loom::sync`, so the same source is
//! model-checked without a `--cfg loom` that would break madsim's dependencies.
//!
//! A thread that blocks on a [`Condvar`] bounds its wait by a [`Deadline`]: the monotonic
//! clock read here is for real threads only (the SQL stores' writers and pool), never for
//! what a task's record says about time, which comes through `runtime::Env`.

// The facade is where the disallowed primitives are allowed.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::time::{Duration, Instant};

pub(crate) use std::sync::{LockResult, MutexGuard, WaitTimeoutResult};

/// A mutual-exclusion lock: `std::sync::Mutex`, reached only through this facade.
#[derive(Debug, Default)]
pub(crate) struct Mutex<T: ?Sized>(std::sync::Mutex<T>);

impl<T> Mutex<T> {
    /// A lock around `value`.
    pub(crate) const fn new(value: T) -> Mutex<T> {
        Mutex(std::sync::Mutex::new(value))
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Blocks until the lock is held; `Err` if a holder panicked.
    pub(crate) fn lock(&self) -> LockResult<MutexGuard<'_, T>> {
        self.0.lock()
    }
}

/// A condition variable: `std::sync::Condvar`, reached only through this facade.
#[derive(Debug, Default)]
pub(crate) struct Condvar(std::sync::Condvar);

impl Condvar {
    /// A condition variable nobody waits on yet.
    pub(crate) const fn new() -> Condvar {
        Condvar(std::sync::Condvar::new())
    }

    /// Wakes one waiter (the PostgreSQL pool's).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn notify_one(&self) {
        self.0.notify_one();
    }

    /// Wakes every waiter.
    pub(crate) fn notify_all(&self) {
        self.0.notify_all();
    }

    /// Releases `guard` and waits for a notification, at most until `deadline`.
    pub(crate) fn wait_until<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        deadline: &Deadline,
    ) -> LockResult<(MutexGuard<'a, T>, WaitTimeoutResult)> {
        self.0.wait_timeout(guard, deadline.left())
    }
}

/// When a blocked thread stops waiting, on the monotonic clock.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Deadline(Instant);

impl Deadline {
    /// `ms` milliseconds from now.
    pub(crate) fn after_ms(ms: u64) -> Deadline {
        Deadline(Instant::now() + Duration::from_millis(ms))
    }

    /// What is left of the wait; zero once it has passed.
    pub(crate) fn left(&self) -> Duration {
        self.0.saturating_duration_since(Instant::now())
    }

    /// Whether the wait has run out.
    pub(crate) fn passed(&self) -> bool {
        self.left().is_zero()
    }
}
