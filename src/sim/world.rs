//! One simulated world: a store, a queue, an effect sink, a dispatcher node, worker
//! nodes, a sweeper node and one client node per tenant, driven by a supervisor that
//! injects faults during a safety phase and then lets the system heal (liveness phase).

use super::scenario::{FaultKind, Knobs, Plan, PlannedFault, Scenario};
use super::{SIM_EPOCH_MS, SimEnv};
use crate::check::{
    self, AppliedKind, CheckContext, ClientOp, ClientResult, Event, Revealed, Violation,
};
use crate::contract::{Decision, Negotiated, TaskOutcome, TaskRecord, TaskStatus, TaskSupport};
use crate::runtime::{
    BoxFuture, Delivery, Env, Invocation, MemoryQueue, Message, Notify, Point, Probe, Queue,
    QueueError, Receipt, Runtime, RuntimeConfig, ToolStep, Tools,
};
use crate::store::{
    Answer, CreateCommand, ListPage, ListQuery, MemoryStore, OutboxClaim, StoreError, StoreOptions,
    TaskStore, TransitionCommand, WrappedRequest,
};
use madsim::runtime::{Handle, NodeHandle};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Draws the knobs of one run from the scenario's choices (swarm testing).
fn draw_knobs(scenario: &Scenario) -> Knobs {
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

/// A draw in `0..bound` from the simulation's seeded generator.
fn roll(bound: u64) -> u64 {
    madsim::rand::random::<u64>() % bound.max(1)
}

/// Draws the safety phase's fault schedule: how many of each fault (up to the scenario's
/// budgets), in a random order, spread over the phase, against random runtime nodes.
fn draw_faults(scenario: &Scenario) -> Vec<PlannedFault> {
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
            let node = roll(scenario.workers as u64 + 1) as usize;
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

/// The outcome of one seed.
#[derive(Clone, Debug)]
pub struct SimOutcome {
    pub scenario: String,
    pub seed: u64,
    /// The knobs and fault schedule the run drew (or was given); `None` when it
    /// panicked before drawing them.
    pub plan: Option<Plan>,
    /// Broken invariants; a panic inside the simulation (an assertion of the system
    /// under test, say) is reported as the pseudo-invariant `panic`.
    pub violations: Vec<Violation>,
    /// Coverage marks: how often each interesting path happened.
    pub marks: BTreeMap<String, u64>,
    /// SHA-256 of the whole history: equal for equal seeds.
    pub trace_hash: String,
    /// The recorded history; [`SimOutcome::timeline`] renders it.
    pub history: Vec<Event>,
    /// For each event of the history, the lane it happened on: the node that recorded
    /// it (`client-0`, `worker-1`, `dispatcher`, …), or the victim of a fault.
    pub lanes: Vec<String>,
    /// Every node of the world by name, whether or not it recorded anything.
    pub nodes: Vec<String>,
}

impl SimOutcome {
    /// The history, one line per event with its simulated time.
    pub fn timeline(&self) -> Vec<String> {
        self.history
            .iter()
            .zip(&self.lanes)
            .map(|(event, lane)| TimelineLine(event, lane).to_string())
            .collect()
    }

    /// The line a user pastes to replay this run (with the active mutant, if any).
    pub fn repro_command(&self) -> String {
        repro_command(&self.scenario, self.seed, crate::mutants::active_name())
    }
}

/// The line a user pastes to replay `seed` of `scenario` (a name, or a scenario file) with
/// `mutant` on; it prints the run's timeline and trace hash.
pub fn repro_command(scenario: &str, seed: u64, mutant: Option<&str>) -> String {
    let quoted = if scenario
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b))
    {
        scenario.to_owned()
    } else {
        format!("'{}'", scenario.replace('\'', r"'\''"))
    };
    match mutant {
        None => format!("cargo run --features sim -- repro --scenario {quoted} --seed {seed}"),
        Some(mutant) => format!(
            "TASKLATCH_MUTANT={mutant} cargo run --features mutants -- repro --scenario {quoted} --seed {seed}"
        ),
    }
}

/// Seeds from `SIM_SEED=n` or `SIM_SEEDS=a..b`, else `default`.
///
/// Environment: `SIM_SEED` (one seed) and `SIM_SEEDS` (a half-open range `a..b`) override
/// the default range of the seed tests and of `tasklatch sim`.
pub fn seeds_from_env(default: std::ops::Range<u64>) -> Result<std::ops::Range<u64>, String> {
    if let Ok(one) = std::env::var("SIM_SEED") {
        let seed: u64 = one
            .parse()
            .map_err(|_| format!("SIM_SEED={one:?} is not a number"))?;
        return Ok(seed..seed + 1);
    }
    if let Ok(range) = std::env::var("SIM_SEEDS") {
        return parse_seed_range(&range).map_err(|error| format!("SIM_SEEDS: {error}"));
    }
    Ok(default)
}

/// Parses a half-open seed range `a..b` (non-empty).
pub fn parse_seed_range(text: &str) -> Result<std::ops::Range<u64>, String> {
    let (a, b) = text
        .split_once("..")
        .ok_or_else(|| format!("{text:?}: expected a..b"))?;
    let (a, b): (u64, u64) = (
        a.parse().map_err(|_| format!("{text:?}: bad start"))?,
        b.parse().map_err(|_| format!("{text:?}: bad end"))?,
    );
    if a >= b {
        return Err(format!("{text:?} is empty"));
    }
    Ok(a..b)
}

/// Runs one seed of `scenario` on a fresh OS thread (madsim keeps per-thread state).
pub fn run_seed(scenario: &Scenario, seed: u64) -> SimOutcome {
    run_seed_with(scenario, seed, None)
}

/// A planned crash: the node that is the `arrival`-th (1-based) to reach `point` during
/// the safety phase crashes right there. Sweeping every point makes each crash window
/// reachable on purpose, not only by chance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sweep {
    pub point: Point,
    pub arrival: u64,
}

/// [`run_seed`] with an optional planned crash.
pub fn run_seed_with(scenario: &Scenario, seed: u64, sweep: Option<Sweep>) -> SimOutcome {
    let name = scenario.name.clone();
    let scenario = scenario.clone();
    // Kept outside the simulation thread, so a panicking run still leaves its history.
    let history = Arc::new(History::default());
    let recorded = history.clone();
    let joined = std::thread::spawn(move || {
        let mut runtime =
            madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
        // Simulated time; a run that does not finish by then is a hang, reported as one.
        runtime.set_time_limit(Duration::from_secs(3_600));
        runtime.block_on(simulate(scenario, seed, recorded, sweep))
    })
    .join();
    joined.unwrap_or_else(|panic| {
        let (events, lanes) = history.take();
        let plan = match history.plan.lock() {
            Ok(plan) => plan.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };

        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|text| (*text).to_owned()))
            .unwrap_or_else(|| "a non-text panic".into());
        SimOutcome {
            scenario: name,
            seed,
            plan,
            violations: vec![Violation {
                invariant: "panic",
                task_id: String::new(),
                detail: message,
                events: Vec::new(),
            }],
            marks: BTreeMap::new(),
            trace_hash: trace_hash(&events, &lanes),
            history: events,
            lanes,
            nodes: history.node_names(),
        }
    })
}

/// Simulated milliseconds since the start of the run at which `event` happened.
pub fn offset_ms(event: &Event) -> u64 {
    match event {
        Event::Client { at_ms, .. }
        | Event::Applied { at_ms, .. }
        | Event::Effect { at_ms, .. }
        | Event::Notified { at_ms, .. }
        | Event::Fault { at_ms, .. } => at_ms - SIM_EPOCH_MS,
    }
}

/// One timeline line: the offset, the lane, then the event. The trace hash is taken over
/// exactly these.
struct TimelineLine<'e>(&'e Event, &'e str);

impl std::fmt::Display for TimelineLine<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:>8} ms  {:<10}  {:?}",
            offset_ms(self.0),
            self.1,
            self.0
        )
    }
}

/// SHA-256 over the timeline's lines joined by newlines, streamed: no line is built.
fn trace_hash(events: &[Event], lanes: &[String]) -> String {
    use sha2::Digest as _;
    use std::fmt::Write as _;
    struct Hashing(sha2::Sha256);
    impl std::fmt::Write for Hashing {
        fn write_str(&mut self, text: &str) -> std::fmt::Result {
            self.0.update(text.as_bytes());
            Ok(())
        }
    }
    let mut hashing = Hashing(sha2::Sha256::new());
    for (index, (event, lane)) in events.iter().zip(lanes).enumerate() {
        if index > 0 {
            hashing.0.update(b"\n");
        }
        // Writing into a hasher cannot fail.
        let _ = write!(hashing, "{}", TimelineLine(event, lane));
    }
    crate::contract::hex_lower(&hashing.0.finalize())
}

/// The shared, append-only record the oracle reads.
#[derive(Default)]
struct History {
    /// Each event with its lane.
    events: Mutex<Vec<(Event, String)>>,
    marks: Mutex<BTreeMap<String, u64>>,
    /// Node names by id, for lanes; unnamed nodes (the supervisor) are `supervisor`.
    names: Mutex<BTreeMap<madsim::task::NodeId, String>>,
    /// The run's knobs and faults, once drawn.
    plan: Mutex<Option<Plan>>,
}

impl History {
    /// Records `event` on the lane of the node recording it.
    fn push(&self, event: Event) {
        self.push_on(self.lane_of(madsim::plugin::node()), event);
    }

    fn lane_of(&self, node: madsim::task::NodeId) -> String {
        self.names
            .lock()
            .expect("names")
            .get(&node)
            .cloned()
            .unwrap_or_else(|| "supervisor".into())
    }

    /// Records `event` on `lane` (a fault's victim).
    fn push_on(&self, lane: impl Into<String>, event: Event) {
        self.events
            .lock()
            .expect("history")
            .push((event, lane.into()));
    }

    fn node_names(&self) -> Vec<String> {
        match self.names.lock() {
            Ok(names) => names.values().cloned().collect(),
            Err(poisoned) => poisoned.into_inner().values().cloned().collect(),
        }
    }

    fn name(&self, node: madsim::task::NodeId, name: &str) {
        self.names.lock().expect("names").insert(node, name.into());
    }

    /// The history so far, split into events and lanes (a poisoned lock still yields it:
    /// the run that panicked is the one worth reading).
    fn take(&self) -> (Vec<Event>, Vec<String>) {
        let mut events = match self.events.lock() {
            Ok(events) => events,
            Err(poisoned) => poisoned.into_inner(),
        };
        std::mem::take(&mut *events).into_iter().unzip()
    }

    fn mark(&self, name: impl Into<String>) {
        *self
            .marks
            .lock()
            .expect("marks")
            .entry(name.into())
            .or_default() += 1;
    }
}

/// The store as the simulation sees it: the real `MemoryStore`, with every applied change
/// recorded into the history. (The oracle uses these as facts of what was written; it
/// never asks the store to judge itself.)
struct RecordingStore {
    inner: MemoryStore,
    history: Arc<History>,
    /// False while the store node is down: every operation fails before touching state
    /// (a transaction in flight is lost whole; committed state survives).
    up: std::sync::atomic::AtomicBool,
}

impl RecordingStore {
    fn available(&self) -> Result<(), StoreError> {
        if self.up.load(std::sync::atomic::Ordering::SeqCst) {
            Ok(())
        } else {
            Err(StoreError::Backend {
                operation: "reach the store node",
                cause: "the store node is down".into(),
            })
        }
    }

    fn applied(&self, kind: AppliedKind, expected: Option<u64>, record: &TaskRecord, at_ms: u64) {
        self.history.push(Event::Applied {
            task_id: record.task_id.clone(),
            auth_key: record.auth_key.clone(),
            kind,
            expected_version: expected,
            version: record.version,
            status: record.status,
            outcome: record.outcome.clone(),
            expires_at_ms: record.expires_at_ms,
            at_ms,
        });
    }
}

impl TaskStore for RecordingStore {
    fn create(&self, command: &CreateCommand) -> Result<Answer, StoreError> {
        self.available()?;
        let answer = self.inner.create(command)?;
        match (answer.decision, &answer.record) {
            (Decision::AcceptTask, Some(record)) => {
                self.applied(AppliedKind::Create, None, record, command.now_ms)
            }
            (Decision::ReplayTask, _) => self.history.mark("replay"),
            _ => {}
        }
        Ok(answer)
    }

    fn transition(&self, command: &TransitionCommand) -> Result<Answer, StoreError> {
        self.available()?;
        let answer = self.inner.transition(command)?;
        match (answer.decision, &answer.record) {
            (Decision::ApplyTransition, Some(record)) => self.applied(
                AppliedKind::Transition,
                Some(command.expected_version),
                record,
                command.now_ms,
            ),
            (Decision::BlockStaleVersion, _) => self.history.mark("stale-write-refused"),
            (Decision::BlockTerminalRewrite, Some(record))
                if record.status == TaskStatus::Cancelled =>
            {
                self.history.mark("cancel-beat-completion")
            }
            (Decision::BlockExpired, _) => self.history.mark("expired-work-refused"),
            (Decision::IdempotentTerminal, _) => self.history.mark("idempotent-terminal"),
            _ => {}
        }
        Ok(answer)
    }

    fn read(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.available()?;
        self.inner.read(task_id)
    }

    fn cancel(
        &self,
        negotiated: Negotiated,
        caller: &str,
        task_id: &str,
        now_ms: u64,
    ) -> Result<Answer, StoreError> {
        self.available()?;
        let answer = self.inner.cancel(negotiated, caller, task_id, now_ms)?;
        if let (Decision::AlreadyTerminal, Some(record)) = (answer.decision, &answer.record)
            && record.status == TaskStatus::Completed
        {
            self.history.mark("completion-beat-cancel");
        }
        if let (Decision::ApplyCancel, Some(record)) = (answer.decision, &answer.record) {
            self.applied(
                AppliedKind::Cancel,
                Some(record.version - 1),
                record,
                now_ms,
            );
        }
        Ok(answer)
    }

    fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        self.available()?;
        self.inner.list(query)
    }

    fn claim(
        &self,
        worker: &str,
        now_ms: u64,
        lease_ms: u64,
        max: usize,
    ) -> Result<Vec<OutboxClaim>, StoreError> {
        self.available()?;
        let claims = self.inner.claim(worker, now_ms, lease_ms, max)?;
        for claim in &claims {
            if claim.attempt > 1 {
                self.history.mark("outbox-republished");
            }
        }
        Ok(claims)
    }

    fn ack(&self, task_id: &str, attempt: u32, now_ms: u64) -> Result<bool, StoreError> {
        self.available()?;
        self.inner.ack(task_id, attempt, now_ms)
    }

    fn release_expired_leases(&self, now_ms: u64) -> Result<usize, StoreError> {
        self.available()?;
        self.inner.release_expired_leases(now_ms)
    }

    fn sweep_expired(&self, now_ms: u64, max: usize) -> Result<usize, StoreError> {
        self.available()?;
        self.inner.sweep_expired(now_ms, max)
    }

    fn import(&self, records: &[TaskRecord]) -> Result<(), StoreError> {
        self.inner.import(records)
    }
}

/// The queue as the simulation sees it: the real `MemoryQueue`, with duplicated and
/// delayed deliveries injected on publish.
struct FaultyQueue {
    inner: MemoryQueue,
    history: Arc<History>,
    knobs: Knobs,
    faults_on: Arc<std::sync::atomic::AtomicBool>,
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

/// The export tool: works a while, then commits one effect per task into the sink.
struct Export {
    sink: Arc<Mutex<BTreeMap<String, String>>>,
    history: Arc<History>,
    tool_ms: (u64, u64),
}

impl Tools for Export {
    fn run(&self, invocation: Invocation) -> BoxFuture<'static, ToolStep> {
        let sink = self.sink.clone();
        let history = self.history.clone();
        let (low, high) = self.tool_ms;
        // One task in four asks its requestor for input first (on its first run: the
        // version moves past 1 once asked), exercising working <-> input_required.
        let asks_for_input = invocation.task.version == 1
            && invocation.task.task_id.bytes().map(u64::from).sum::<u64>() % 4 == 0;
        let task_id = invocation.task.task_id;
        Box::pin(async move {
            if asks_for_input {
                madsim::time::sleep(Duration::from_millis(low.max(1))).await;
                return ToolStep::NeedsInput("which columns should the export hold?".into());
            }
            let work_ms = low + madsim::rand::random::<u64>() % (high - low + 1);
            madsim::time::sleep(Duration::from_millis(work_ms)).await;
            // Idempotent per task: a redelivered task finds its effect and reuses it.
            let effect_id = {
                let mut sink = sink.lock().expect("sink");
                match sink.get(&task_id) {
                    Some(existing) => {
                        history.mark("effect-reused");
                        existing.clone()
                    }
                    None => {
                        let effect_id = format!("export-{task_id}");
                        sink.insert(task_id.clone(), effect_id.clone());
                        history.push(Event::Effect {
                            task_id: task_id.clone(),
                            effect_id: effect_id.clone(),
                            at_ms: SimEnv.now_ms(),
                        });
                        effect_id
                    }
                }
            };
            ToolStep::Finished(TaskOutcome::Result {
                result: json!({
                    "content": [{ "type": "text", "text": format!("exported as {effect_id}") }],
                    "effect": effect_id,
                    "isError": false,
                }),
            })
        })
    }
}

/// Records the runtime's status notifications, for I10.
struct SimNotify {
    history: Arc<History>,
}

impl Notify for SimNotify {
    fn status_changed(&self, record: &TaskRecord) {
        self.history.push(Event::Notified {
            task_id: record.task_id.clone(),
            status: record.status,
            version: record.version,
            at_ms: SimEnv.now_ms(),
        });
    }
}

/// Crash and delay at the runtime's named points.
struct SimProbe {
    history: Arc<History>,
    knobs: Knobs,
    /// This node's id, to restart it from inside (a crash exactly at the point).
    node: Arc<Mutex<Option<madsim::task::NodeId>>>,
    faults_on: Arc<std::sync::atomic::AtomicBool>,
    sweep: Option<Sweep>,
    /// Arrivals at the sweep's point so far, across all nodes and restarts.
    arrivals: Arc<std::sync::atomic::AtomicU64>,
}

impl Probe for SimProbe {
    fn observe(&self, what: &'static str) {
        self.history.mark(what);
    }

    fn at(&self, point: Point, task_id: &str) -> BoxFuture<'static, ()> {
        self.history.mark(format!("point:{}", point.name()));
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
            self.history.mark(format!("sweep:{}", point.name()));
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
        let task_id = task_id.to_owned();
        Box::pin(async move {
            if crash && let Some(node) = node {
                history.mark(format!("kill:{}", point.name()));
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

struct Shared {
    scenario: Scenario,
    knobs: Knobs,
    store: Arc<RecordingStore>,
    queue: Arc<FaultyQueue>,
    sink: Arc<Mutex<BTreeMap<String, String>>>,
    history: Arc<History>,
    faults_on: Arc<std::sync::atomic::AtomicBool>,
    sweep: Option<Sweep>,
    sweep_arrivals: Arc<std::sync::atomic::AtomicU64>,
    /// Task ids clients were given, for cross-tenant probing.
    known: Mutex<Vec<String>>,
}

impl Shared {
    fn runtime(&self, node: Arc<Mutex<Option<madsim::task::NodeId>>>) -> Arc<Runtime> {
        Arc::new(Runtime::new(
            self.store.clone(),
            self.queue.clone(),
            Arc::new(Export {
                sink: self.sink.clone(),
                history: self.history.clone(),
                tool_ms: (self.scenario.tool_ms[0], self.scenario.tool_ms[1]),
            }),
            Arc::new(SimEnv),
            Arc::new(SimProbe {
                history: self.history.clone(),
                knobs: self.knobs.clone(),
                node,
                faults_on: self.faults_on.clone(),
                sweep: self.sweep,
                arrivals: self.sweep_arrivals.clone(),
            }),
            Arc::new(SimNotify {
                history: self.history.clone(),
            }),
            RuntimeConfig {
                republish_after_ms: 1_000,
                queue_lease_ms: 1_000,
                idle_ms: 40,
                dispatch_batch: 8,
                sweep_every_ms: 500,
                sweep_batch: 64,
                retry_after_ms: 50,
            },
        ))
    }
}

/// Which loop a runtime node runs.
#[derive(Clone, Copy)]
enum Role {
    Dispatcher,
    Worker,
    Sweeper,
}

fn runtime_node(handle: &Handle, shared: &Arc<Shared>, name: String, role: Role) -> NodeHandle {
    let slot: Arc<Mutex<Option<madsim::task::NodeId>>> = Arc::new(Mutex::new(None));
    let init_shared = shared.clone();
    let init_slot = slot.clone();
    let lane = name.clone();
    let node = handle
        .create_node()
        .name(name.clone())
        .init(move || {
            let runtime = init_shared.runtime(init_slot.clone());
            let name = name.clone();
            async move {
                match role {
                    Role::Dispatcher => runtime.run_dispatcher(name).await,
                    Role::Worker => runtime.run_worker().await,
                    Role::Sweeper => runtime.run_sweeper().await,
                }
            }
        })
        .build();
    *slot.lock().expect("node slot") = Some(node.id());
    shared.history.name(node.id(), &lane);
    node
}

/// A client: creates its tenant's tasks (retrying lost answers with the same key), polls
/// them at their poll interval with jitter, sometimes cancels, fetches results, lists.
async fn client(shared: Arc<Shared>, tenant: usize) {
    let caller = format!("tenant-{tenant}/user");
    let client_name = format!("client-{tenant}");
    let record = |op: ClientOp, result: ClientResult| {
        shared.history.push(Event::Client {
            client: client_name.clone(),
            caller: caller.clone(),
            op,
            result,
            at_ms: SimEnv.now_ms(),
        });
    };
    let revealed =
        |answer: &Answer| -> Vec<Revealed> { answer.record.iter().map(revealed_of).collect() };
    // What a `tasks/result` answer shows: the record with its stored outcome.
    let revealed_result = |answer: &Answer| -> Vec<Revealed> {
        let mut shown = revealed(answer);
        for (seen, record) in shown.iter_mut().zip(&answer.record) {
            seen.outcome = record.outcome.clone();
        }
        shown
    };
    // Records an answered operation with what the answer showed.
    let answered = |op: ClientOp, answer: &Answer| {
        let revealed = match op {
            ClientOp::Result { .. } => revealed_result(answer),
            _ => revealed(answer),
        };
        record(
            op,
            ClientResult::Ok {
                decision: answer.decision,
                revealed,
            },
        );
    };
    // A task-augmented `tools/call` under `key`, as this client sends it; `digest` is the
    // request's, taken once by the caller (a create may be retried several times).
    let create = |request: &WrappedRequest, digest: &str, key: &str| {
        let task_id = format!("{:032x}", madsim::rand::random::<u128>());
        let answer = shared.store.create(&CreateCommand {
            caller: caller.clone(),
            negotiated: Negotiated::FULL,
            task_support: TaskSupport::Optional,
            task_requested: true,
            idempotency_key: Some(key.to_owned()),
            request: request.clone(),
            ttl_ms: shared.scenario.ttl_ms,
            poll_interval_ms: Some(shared.scenario.poll_interval_ms),
            task_id,
            correlation_id: key.to_owned(),
            now_ms: SimEnv.now_ms(),
        });
        let op = ClientOp::Create {
            idempotency_key: Some(key.to_owned()),
            digest: digest.to_owned(),
        };
        (op, answer)
    };
    let mut mine: Vec<String> = Vec::new();
    for n in 0..shared.scenario.tasks_per_tenant {
        let key = format!("{caller}#{n}");
        let request = WrappedRequest {
            method: "tools/call".into(),
            name: "export".into(),
            arguments: Some(json!({ "tenant": tenant, "n": n })),
        };
        let digest = request.digest();
        // Create, retrying a lost answer with the same key (bounded).
        for _attempt in 0..5 {
            madsim::time::sleep(Duration::from_millis(
                1 + madsim::rand::random::<u64>() % 20,
            ))
            .await;
            let (op, answer) = create(&request, digest.as_str(), &key);
            let lost = madsim::rand::random::<u64>() % 100 < shared.knobs.lost_response_percent;
            match answer {
                Ok(_) if lost => {
                    shared.history.mark("lost-response");
                    record(op, ClientResult::Indeterminate);
                }
                Ok(answer) => {
                    if let Some(record) = &answer.record {
                        mine.push(record.task_id.clone());
                        shared
                            .known
                            .lock()
                            .expect("known tasks")
                            .push(record.task_id.clone());
                    }
                    answered(op, &answer);
                    break;
                }
                Err(_) => record(op, ClientResult::Fail),
            }
        }
        // A buggy client reuses the key for another request: it must be refused.
        if madsim::rand::random::<u64>() % 100 < shared.knobs.key_reuse_percent {
            let altered = WrappedRequest {
                arguments: Some(json!({ "tenant": tenant, "n": n, "altered": true })),
                ..request.clone()
            };
            if let (op, Ok(answer)) = create(&altered, altered.digest().as_str(), &key) {
                if answer.decision == Decision::BlockIdempotencyCollision {
                    shared.history.mark("idempotency-collision-refused");
                }
                answered(op, &answer);
            }
        }
    }
    let mine_set: std::collections::BTreeSet<String> = mine.iter().cloned().collect();
    // Poll each task until terminal (or expired), with the poll interval and jitter.
    let interval = shared.scenario.poll_interval_ms;
    // Poll each known task; then list, and adopt any own task the client never heard
    // of (every create answer lost): anything it can get, it can find by listing.
    let mut pending: std::collections::VecDeque<String> = mine.iter().cloned().collect();
    let mut adopted = false;
    loop {
        while let Some(task_id) = pending.pop_front() {
            for _poll in 0..2_000 {
                madsim::time::sleep(Duration::from_millis(
                    interval + madsim::rand::random::<u64>() % (interval / 2 + 1),
                ))
                .await;
                let cancel_now = madsim::rand::random::<u64>() % 100 < shared.knobs.cancel_percent;
                // A cancel whose answer is lost is sent again at once (bounded).
                for attempt in 0..3 {
                    if !cancel_now {
                        break;
                    }
                    if attempt > 0 {
                        shared.history.mark("cancel-retried");
                        madsim::time::sleep(Duration::from_millis(
                            1 + madsim::rand::random::<u64>() % 20,
                        ))
                        .await;
                    }
                    let Ok(answer) =
                        shared
                            .store
                            .cancel(Negotiated::FULL, &caller, &task_id, SimEnv.now_ms())
                    else {
                        continue;
                    };
                    let op = ClientOp::Cancel {
                        task_id: task_id.clone(),
                    };
                    if madsim::rand::random::<u64>() % 100 < shared.knobs.lost_response_percent {
                        shared.history.mark("lost-response");
                        record(op, ClientResult::Indeterminate);
                        continue;
                    }
                    answered(op, &answer);
                    break;
                }
                if madsim::rand::random::<u64>() % 100 < shared.knobs.cross_tenant_percent {
                    let known = shared.known.lock().expect("known tasks").clone();
                    let foreign: Vec<&String> =
                        known.iter().filter(|id| !mine_set.contains(*id)).collect();
                    if !foreign.is_empty() {
                        let target = foreign
                            [(madsim::rand::random::<u64>() % foreign.len() as u64) as usize]
                            .clone();
                        // Poke with a read, a result or a cancel: each must be refused alike.
                        let now_ms = SimEnv.now_ms();
                        let (op, answer) = match madsim::rand::random::<u64>() % 3 {
                            0 => (
                                ClientOp::Cancel {
                                    task_id: target.clone(),
                                },
                                shared
                                    .store
                                    .cancel(Negotiated::FULL, &caller, &target, now_ms),
                            ),
                            1 => (
                                ClientOp::Result {
                                    task_id: target.clone(),
                                },
                                shared.store.result(&caller, &target, now_ms),
                            ),
                            _ => (
                                ClientOp::Get {
                                    task_id: target.clone(),
                                },
                                shared.store.get(&caller, &target, now_ms),
                            ),
                        };
                        if let Ok(answer) = answer {
                            if answer.decision == Decision::BlockAuth {
                                shared.history.mark(match op {
                                    ClientOp::Cancel { .. } => "cross-tenant-cancel-refused",
                                    _ => "cross-tenant-refused",
                                });
                            }
                            answered(op, &answer);
                        }
                    }
                }
                let Ok(answer) = shared.store.get(&caller, &task_id, SimEnv.now_ms()) else {
                    continue;
                };
                let terminal = answer
                    .record
                    .as_ref()
                    .is_some_and(|r| r.status.is_terminal());
                let gone = answer.decision != Decision::ReturnStatus;
                answered(
                    ClientOp::Get {
                        task_id: task_id.clone(),
                    },
                    &answer,
                );
                // The requestor answers a question: the server moves the task back to working.
                if let Some(asking) = answer
                    .record
                    .as_ref()
                    .filter(|record| record.status == TaskStatus::InputRequired)
                    && let Ok(reply) = shared.store.transition(&TransitionCommand {
                        task_id: task_id.clone(),
                        caller: caller.clone(),
                        expected_version: asking.version,
                        next: TaskStatus::Working,
                        outcome: None,
                        status_message: Some("input provided".into()),
                        now_ms: SimEnv.now_ms(),
                    })
                {
                    shared.history.mark("input-provided");
                    answered(
                        ClientOp::ProvideInput {
                            task_id: task_id.clone(),
                        },
                        &reply,
                    );
                }
                if terminal {
                    if let Ok(result) = shared.store.result(&caller, &task_id, SimEnv.now_ms()) {
                        answered(
                            ClientOp::Result {
                                task_id: task_id.clone(),
                            },
                            &result,
                        );
                    }
                    break;
                }
                if gone {
                    break;
                }
            }
        }
        if adopted {
            break;
        }
        adopted = true;
        {
            // The store may be down: retry the listing a bounded number of times.
            let mut listed = None;
            for _attempt in 0..50 {
                match shared.store.list(&ListQuery {
                    negotiated: Negotiated::FULL,
                    caller: caller.clone(),
                    cursor: None,
                    limit: 100,
                    now_ms: SimEnv.now_ms(),
                }) {
                    Ok(page) => {
                        listed = Some(page);
                        break;
                    }
                    Err(_) => madsim::time::sleep(Duration::from_millis(interval)).await,
                }
            }
            if let Some(page) = listed {
                for task in page.tasks {
                    if !mine_set.contains(&task.task_id) && !task.status.is_terminal() {
                        shared.history.mark("task-adopted-from-list");
                        pending.push_back(task.task_id);
                    }
                }
            }
        }
        if pending.is_empty() {
            break;
        }
    }
    if let Ok(page) = shared.store.list(&ListQuery {
        negotiated: Negotiated::FULL,
        caller: caller.clone(),
        cursor: None,
        limit: 100,
        now_ms: SimEnv.now_ms(),
    }) {
        let revealed = page.tasks.iter().map(revealed_of).collect();
        record(
            ClientOp::List,
            ClientResult::Ok {
                decision: page.decision,
                revealed,
            },
        );
    }
}

/// What an answer shows a client of one record (its payload is added for `tasks/result`).
fn revealed_of(record: &TaskRecord) -> Revealed {
    Revealed {
        task_id: record.task_id.clone(),
        auth_key: record.auth_key.clone(),
        status: record.status,
        version: record.version,
        outcome: None,
    }
}

/// The supervisor (node 0): builds the world, injects faults, heals, checks.
async fn simulate(
    scenario: Scenario,
    seed: u64,
    history: Arc<History>,
    sweep: Option<Sweep>,
) -> SimOutcome {
    let handle = Handle::current();
    // Drawn even when pinned, so a pinned copy of a drawn run replays it exactly.
    let drawn = Plan {
        knobs: draw_knobs(&scenario),
        faults: draw_faults(&scenario),
    };
    let plan = scenario.plan.clone().unwrap_or(drawn);
    let knobs = plan.knobs.clone();
    *history.plan.lock().expect("plan") = Some(plan.clone());
    history.push(Event::Fault {
        what: format!(
            "start {} seed {seed} knobs {knobs:?} faults {} sweep {sweep:?}",
            scenario.name,
            plan.faults.len()
        ),
        at_ms: SimEnv.now_ms(),
    });
    let store = Arc::new(RecordingStore {
        inner: MemoryStore::open(&StoreOptions {
            cursor_secret: Some(b"simulation".to_vec()),
        })
        .expect("a memory store with a given secret opens"),
        history: history.clone(),
        up: std::sync::atomic::AtomicBool::new(true),
    });
    let faults_on = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let shared = Arc::new(Shared {
        scenario: scenario.clone(),
        knobs: knobs.clone(),
        store: store.clone(),
        queue: Arc::new(FaultyQueue {
            inner: MemoryQueue::default(),
            history: history.clone(),
            knobs: knobs.clone(),
            faults_on: faults_on.clone(),
        }),
        sink: Arc::default(),
        history: history.clone(),
        faults_on,
        sweep,
        sweep_arrivals: Arc::default(),
        known: Mutex::new(Vec::new()),
    });
    let mut killable = vec![runtime_node(
        &handle,
        &shared,
        "dispatcher".into(),
        Role::Dispatcher,
    )];
    for worker in 0..scenario.workers {
        killable.push(runtime_node(
            &handle,
            &shared,
            format!("worker-{worker}"),
            Role::Worker,
        ));
    }
    let _sweeper = runtime_node(&handle, &shared, "sweeper".into(), Role::Sweeper);
    let clients: Vec<_> = (0..scenario.tenants)
        .map(|tenant| {
            let name = format!("client-{tenant}");
            let node = handle.create_node().name(name.clone()).build();
            history.name(node.id(), &name);
            node.spawn(client(shared.clone(), tenant))
        })
        .collect();

    // Safety phase: the planned faults, one at a time.
    let safety_started = SimEnv.now_ms();
    for fault in &plan.faults {
        let begin_ms = safety_started + fault.at_ms;
        let now_ms = SimEnv.now_ms();
        if begin_ms > now_ms {
            madsim::time::sleep(Duration::from_millis(begin_ms - now_ms)).await;
        }
        let victim = &killable[fault.node.min(killable.len() - 1)];
        let lane = match fault.kind {
            FaultKind::Kill | FaultKind::Pause => history.lane_of(victim.id()),
            FaultKind::StoreOutage => "store".into(),
            FaultKind::ClockJump => "supervisor".into(),
        };
        let name = fault.kind.name();
        history.mark(match fault.kind {
            FaultKind::Kill => "kill:random",
            _ => name,
        });
        history.push_on(
            lane.clone(),
            Event::Fault {
                what: format!("{name} begins"),
                at_ms: SimEnv.now_ms(),
            },
        );
        let held = Duration::from_millis(fault.duration_ms);
        let what = match fault.kind {
            FaultKind::Kill => {
                handle.kill(victim.id());
                madsim::time::sleep(held).await;
                handle.restart(victim.id());
                format!("node {} restarted", victim.id())
            }
            FaultKind::Pause => {
                handle.pause(victim.id());
                madsim::time::sleep(held).await;
                handle.resume(victim.id());
                format!("node {} resumed", victim.id())
            }
            FaultKind::ClockJump => {
                madsim::time::advance(held);
                format!("clock moved {} ms", fault.duration_ms)
            }
            FaultKind::StoreOutage => {
                store.up.store(false, std::sync::atomic::Ordering::SeqCst);
                madsim::time::sleep(held).await;
                store.up.store(true, std::sync::atomic::Ordering::SeqCst);
                "store node back".into()
            }
        };
        history.push_on(
            lane,
            Event::Fault {
                what: format!("{name} ends: {what}"),
                at_ms: SimEnv.now_ms(),
            },
        );
    }
    let elapsed_ms = SimEnv.now_ms() - safety_started;
    madsim::time::sleep(Duration::from_millis(
        scenario.safety_ms.saturating_sub(elapsed_ms).max(1),
    ))
    .await;
    // Liveness phase: no more faults; everything accepted and unexpired must finish.
    shared
        .faults_on
        .store(false, std::sync::atomic::Ordering::SeqCst);
    history.push(Event::Fault {
        what: "faults stop: liveness phase".into(),
        at_ms: SimEnv.now_ms(),
    });
    let deadline_ms = SimEnv.now_ms() + scenario.liveness_ms;
    for joined in clients {
        let _ = madsim::time::timeout(Duration::from_millis(scenario.liveness_ms), joined).await;
    }
    let remaining = deadline_ms.saturating_sub(SimEnv.now_ms());
    madsim::time::sleep(Duration::from_millis(remaining.min(500))).await;
    let liveness_deadline_ms = SimEnv.now_ms();

    // The run is over: take the history rather than copy it.
    let (events, lanes) = history.take();
    let violations = check::check(
        &events,
        &CheckContext {
            liveness_deadline_ms: Some(liveness_deadline_ms),
        },
    );
    let trace_hash = trace_hash(&events, &lanes);
    let marks = std::mem::take(&mut *history.marks.lock().expect("marks"));
    SimOutcome {
        scenario: scenario.name,
        seed,
        plan: Some(plan),
        violations,
        marks,
        trace_hash,
        history: events,
        lanes,
        nodes: history.node_names(),
    }
}
