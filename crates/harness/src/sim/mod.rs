//! The deterministic simulation: the real runtime, store and tools run as madsim nodes,
//! with kills injected at the runtime's named points, judged by [`crate::check`]. Its
//! clients speak MCP to the same [`crate::mcp::Server`] handler `tasklatch serve` runs.
//!
//! Only built with `--features sim` (which needs `--cfg madsim`, see the crate docs).
//! Everything here is deterministic for a seed: madsim's clock and generator, BTreeMaps,
//! no OS threads inside the simulation, no process-global state. [`run_seed`] runs one
//! seed on the calling thread and returns its outcome and trace hash; the same seed gives
//! the same hash, whatever ran on the thread before it.

mod answers;
mod author;
mod client;
mod deployment;
mod faults;
mod history;
mod outcome;
mod recording;
mod render;
mod scenario;
pub mod shrink;
mod streams;
mod tools;
mod world;

pub use author::WorldTools;
pub use outcome::{
    SimOutcome, offset_ms, parse_seed_range, repro_command, seeds_from_env, store_for,
};
pub use scenario::{
    Breadth, Deployment, FaultKind, Faults, KNOWN_MARKS, Knobs, Plan, PlannedFault, QueueHome,
    SCENARIO_SCHEMA, Scenario,
};
pub use world::{Sim, Sweep, run_seed, run_seed_with};

use crate::runtime::{BoxFuture, Env};
use std::time::Duration;

/// Simulated wall clock at time zero: 2026-01-01T00:00:00Z, so timestamps look real.
pub const SIM_EPOCH_MS: u64 = 1_767_225_600_000;

/// The madsim backend of [`Env`]: virtual time, node-local spawning, the seeded generator.
#[derive(Clone, Copy, Debug, Default)]
pub struct SimEnv;

impl Env for SimEnv {
    fn now_ms(&self) -> u64 {
        SIM_EPOCH_MS + madsim::time::TimeHandle::current().elapsed().as_millis() as u64
    }

    fn sleep(&self, ms: u64) -> BoxFuture<'static, ()> {
        Box::pin(madsim::time::sleep(Duration::from_millis(ms)))
    }

    fn spawn(&self, task: BoxFuture<'static, ()>) {
        drop(madsim::task::spawn(task));
    }

    fn random_u64(&self) -> u64 {
        madsim::rand::random::<u64>()
    }
}
