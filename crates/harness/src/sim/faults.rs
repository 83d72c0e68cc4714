//! The faults of a run: its knobs and fault schedule drawn from the scenario (swarm
//! testing), the queue that duplicates and delays deliveries, and the probe that crashes a
//! node at the runtime's named points.

use super::SimEnv;
use super::scenario::{Breadth, FaultKind, Knobs, PlannedFault, Scenario};
use super::{history::History, world::Sweep};
use crate::check::{Event, RuntimeNote};
use crate::runtime::{
    BoxFuture, Delivery, Env, MemoryQueue, Message, Point, Probe, Queue, QueueError, Receipt,
};
use madsim::runtime::Handle;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Draws the knobs of one run from the scenario's choices (swarm testing).
pub(super) fn draw_knobs(scenario: &Scenario) -> Knobs {
    let pick = |choices: &[u64]| choices[roll(choices.len() as u64) as usize];
    let faults = &scenario.faults;
    let allowed = scenario.crash_points().unwrap_or_default();
    // Swarm: each run turns on a random subset of the allowed crash points.
    let mut crash_points: Vec<Point> = allowed.iter().copied().filter(|_| roll(3) != 0).collect();
    if crash_points.is_empty() && !allowed.is_empty() {
        crash_points.push(allowed[roll(allowed.len() as u64) as usize]);
    }
    Knobs {
        point_crash_percent: pick(&faults.point_crash_percent),
        crash_points,
        probe_delay_ms_max: pick(&faults.probe_delay_ms_max),
        lost_response_percent: pick(&faults.lost_response_percent),
        cancel_percent: pick(&faults.cancel_percent),
        duplicate_percent: pick(&faults.duplicate_percent),
        delivery_delay_ms_max: pick(&faults.delivery_delay_ms_max),
        cross_tenant_percent: pick(&faults.cross_tenant_percent),
        key_reuse_percent: pick(&faults.key_reuse_percent),
    }
}

/// Draws the breadth knobs of one run: after every other draw, and only from lists with a
/// choice to make (a single choice is taken without a draw, an absent list is off), so a
/// scenario that offers none draws nothing and replays as before they existed.
pub(super) fn draw_breadth(scenario: &Scenario) -> Breadth {
    fn choose<T: Copy>(choices: &[T]) -> Option<T> {
        match choices.len() {
            0 => None,
            1 => Some(choices[0]),
            n => Some(choices[roll(n as u64) as usize]),
        }
    }
    let faults = &scenario.faults;
    Breadth {
        tool_error_percent: choose(&faults.tool_error_percent).unwrap_or(0),
        protocol_error_percent: choose(&faults.protocol_error_percent).unwrap_or(0),
        status_message_percent: choose(&faults.status_message_percent).unwrap_or(0),
        id_collision_percent: choose(&faults.id_collision_percent).unwrap_or(0),
        server_poll_interval_ms: choose(&faults.server_poll_interval_ms),
        list_page: choose(&faults.list_page),
        sweep_batch: choose(&faults.sweep_batch),
        irreversible_percent: choose(&faults.irreversible_percent).unwrap_or(0),
        input_unasked_percent: choose(&faults.input_unasked_percent).unwrap_or(0),
    }
}

/// The era each tenant's client speaks: drawn only where the scenario offers more than
/// one (so single-era scenarios draw nothing and replay as before eras existed). Empty
/// for scenarios of 2025-11-25 clients only, whose plans read as before eras.
pub(super) fn draw_eras(scenario: &Scenario) -> Vec<crate::contract::Era> {
    let eras = &scenario.client_eras;
    if eras.as_slice() == [crate::contract::Era::Core2025] {
        return Vec::new();
    }
    (0..scenario.tenants)
        .map(|_| match eras.len() {
            1 => eras[0],
            n => eras[roll(n as u64) as usize],
        })
        .collect()
}

/// A draw in `0..bound` from the simulation's seeded generator.
pub(super) fn roll(bound: u64) -> u64 {
    madsim::rand::random::<u64>() % bound.max(1)
}

/// Draws the safety phase's fault schedule: how many of each fault (up to the scenario's
/// budgets), in a random order, spread over the phase, against random runtime nodes.
pub(super) fn draw_faults(scenario: &Scenario) -> Vec<PlannedFault> {
    let faults = &scenario.faults;
    let mut kinds: Vec<FaultKind> = Vec::new();
    for (kind, max) in [
        (FaultKind::Kill, faults.kills_max),
        (FaultKind::Pause, faults.pauses_max),
        (FaultKind::ClockJump, faults.clock_jumps_max),
        (FaultKind::StoreOutage, faults.store_outages_max),
    ] {
        kinds.extend(std::iter::repeat_n(kind, roll(max as u64 + 1) as usize));
    }
    for at in (1..kinds.len()).rev() {
        kinds.swap(at, roll(at as u64 + 1) as usize);
    }
    let gap_ms = scenario.safety_ms / (kinds.len() as u64 + 1);
    let span = |range: [u64; 2]| range[0] + roll(range[1] - range[0] + 1);
    let mut at_ms = 0;
    kinds
        .into_iter()
        .map(|kind| {
            at_ms += 1 + roll(gap_ms);
            let node = roll(scenario.deployment.victims(scenario.workers) as u64) as usize;
            let duration_ms = match kind {
                FaultKind::Kill => 50 + roll(500),
                // Long enough to outlive leases: a paused worker wakes with a stale view.
                FaultKind::Pause => 500 + roll(2_000),
                FaultKind::ClockJump => span(faults.clock_jump_ms),
                FaultKind::StoreOutage => span(faults.store_outage_ms),
            };
            let fault = PlannedFault {
                at_ms: at_ms.min(scenario.safety_ms),
                kind,
                node,
                duration_ms,
            };
            at_ms += duration_ms;
            fault
        })
        .collect()
}

/// The queue as the simulation sees it: the real `MemoryQueue`, with duplicated and
/// delayed deliveries injected on publish.
pub(super) struct FaultyQueue {
    pub(super) inner: MemoryQueue,
    pub(super) history: Arc<History>,
    pub(super) knobs: Knobs,
    pub(super) faults_on: Arc<std::sync::atomic::AtomicBool>,
}

impl Queue for FaultyQueue {
    fn publish(&self, message: Message, now_ms: u64) -> Result<(), QueueError> {
        let faults_on = self.faults_on.load(std::sync::atomic::Ordering::SeqCst);
        let delay_ms = match self.knobs.delivery_delay_ms_max {
            max if faults_on && max > 0 => madsim::rand::random::<u64>() % max,
            _ => 0,
        };
        if delay_ms > 0 {
            self.history.mark("delayed-delivery");
        }
        let duplicate =
            faults_on && madsim::rand::random::<u64>() % 100 < self.knobs.duplicate_percent;
        if duplicate {
            self.history.mark("duplicate-published");
            self.inner.publish(message.clone(), now_ms + delay_ms)?;
        }
        self.inner.publish(message, now_ms + delay_ms)
    }

    fn receive(&self, now_ms: u64, lease_ms: u64) -> Result<Option<Delivery>, QueueError> {
        self.inner.receive(now_ms, lease_ms)
    }

    fn ack(&self, receipt: Receipt) -> Result<bool, QueueError> {
        self.inner.ack(receipt)
    }

    fn nack(&self, receipt: Receipt, visible_at_ms: u64) -> Result<bool, QueueError> {
        self.inner.nack(receipt, visible_at_ms)
    }

    fn len(&self) -> Result<usize, QueueError> {
        self.inner.len()
    }
}

/// Crash and delay at the runtime's named points.
pub(super) struct SimProbe {
    pub(super) history: Arc<History>,
    pub(super) knobs: Knobs,
    /// This node's id, to restart it from inside (a crash exactly at the point).
    pub(super) node: Arc<Mutex<Option<madsim::task::NodeId>>>,
    pub(super) faults_on: Arc<std::sync::atomic::AtomicBool>,
    pub(super) sweep: Option<Sweep>,
    /// Arrivals at the sweep's point so far, across all nodes and restarts.
    pub(super) arrivals: Arc<std::sync::atomic::AtomicU64>,
}

impl Probe for SimProbe {
    fn observe(&self, what: &'static str, task_id: &str) {
        self.history.mark(what);
        let note = match what {
            "duplicate-absorbed" => RuntimeNote::DuplicateAbsorbed,
            "expired-before-run" => RuntimeNote::ExpiredBeforeRun,
            _ => return,
        };
        self.history.push(Event::Runtime {
            what: note,
            task_id: task_id.to_owned(),
            at_ms: crate::runtime::Env::now_ms(&SimEnv),
        });
    }

    fn at(&self, point: Point, task_id: &str) -> BoxFuture<'static, ()> {
        self.history.mark_point("point", point);
        let faults_on = self.faults_on.load(std::sync::atomic::Ordering::SeqCst);
        let swept = faults_on
            && self.sweep.is_some_and(|sweep| {
                sweep.point == point
                    && self
                        .arrivals
                        .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
                        + 1
                        == sweep.arrival
            });
        if swept {
            self.history.mark_point("sweep", point);
        }
        let crash = swept
            || (faults_on
                && self.knobs.crash_points.contains(&point)
                && madsim::rand::random::<u64>() % 100 < self.knobs.point_crash_percent);
        let delay_ms = match self.knobs.probe_delay_ms_max {
            0 => 0,
            max => madsim::rand::random::<u64>() % max,
        };
        let node = *self.node.lock().expect("node slot");
        let history = self.history.clone();
        // Only a crash names the task.
        let task_id = if crash {
            task_id.to_owned()
        } else {
            String::new()
        };
        Box::pin(async move {
            if crash && let Some(node) = node {
                history.mark_point("kill", point);
                history.push(Event::Fault {
                    what: format!("crash node {node} at {} for {task_id}", point.name()),
                    at_ms: SimEnv.now_ms(),
                });
                // Restarting ourselves kills this incarnation at its next await.
                Handle::current().restart(node);
                std::future::pending::<()>().await;
            }
            if delay_ms > 0 {
                madsim::time::sleep(Duration::from_millis(delay_ms)).await;
            }
        })
    }
}
