//! One simulated world: a store, a queue, an effect sink, a dispatcher node, worker
//! nodes, a sweeper node and one client node per tenant, driven by a supervisor that
//! injects faults during a safety phase and then lets the system heal (liveness phase).

use super::render;
use super::scenario::{FaultKind, Knobs, Plan, PlannedFault, Scenario};
use super::{SIM_EPOCH_MS, SimEnv};
use crate::check::{
    self, AppliedKind, CheckContext, ClientOp, ClientResult, Event, Revealed, Violation,
};
use crate::contract::{Decision, Negotiated, TaskOutcome, TaskRecord, TaskStatus, TaskSupport};
use crate::mcp::server::STORE_UNAVAILABLE;
use crate::mcp::tools::{Catalog, ToolSpec};
use crate::mcp::wire::{self, RpcError};
use crate::mcp::{Server, ServerConfig, Session};
use crate::runtime::{
    BoxFuture, Delivery, Env, Invocation, MemoryQueue, Message, Notify, Point, Probe, Queue,
    QueueError, Receipt, Runtime, RuntimeConfig, ToolStep, Tools,
};
use crate::store::{
    Answer, CreateCommand, ListPage, ListQuery, MemoryFactory, OutboxClaim, StoreError,
    StoreFactory, StoreOptions, TaskStore, TransitionCommand,
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
    /// The store the run used: its factory's name (`memory`, `sqlite`, yours).
    pub store: String,
    /// The URL that reopens that kind of store (`--store`); `None` for the default memory
    /// store and for stores the CLI cannot name.
    pub store_url: Option<String>,
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

    /// The line a user pastes to replay this run (with the active mutant and the store,
    /// if any).
    pub fn repro_command(&self) -> String {
        repro_command(
            &self.scenario,
            self.seed,
            crate::mutants::active_name(),
            self.store_url.as_deref(),
        )
    }
}

/// The line a user pastes to replay `seed` of `scenario` (a name, or a scenario file) with
/// `mutant` on, on the store `store_url` names (the memory store when `None`); it prints
/// the run's timeline and trace hash.
pub fn repro_command(
    scenario: &str,
    seed: u64,
    mutant: Option<&str>,
    store_url: Option<&str>,
) -> String {
    let quote = |text: &str| {
        if text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:".contains(&b))
        {
            text.to_owned()
        } else {
            format!("'{}'", text.replace('\'', r"'\''"))
        }
    };
    let quoted = quote(scenario);
    let store = store_url
        .map(|url| format!(" --store {}", quote(url)))
        .unwrap_or_default();
    match mutant {
        None => {
            format!("cargo run --features sim -- repro --scenario {quoted} --seed {seed}{store}")
        }
        Some(mutant) => format!(
            "TASKLATCH_MUTANT={mutant} cargo run --features mutants -- repro --scenario {quoted} --seed {seed}{store}"
        ),
    }
}

/// The factory for a `--store` URL the simulation can run: `memory:` or `sqlite:DIR`.
/// A networked store (PostgreSQL) is refused: it would run outside the simulation's
/// control — its own threads, sockets and clock — so no seed could replay.
pub fn store_for(url: &str) -> Result<Box<dyn StoreFactory>, String> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Err(format!(
            "--store {url:?}: the simulation runs its store in-process on one deterministic \
             thread; a networked store (PostgreSQL) cannot replay a seed. Check PostgreSQL \
             with the conformance suite and the proptest machine instead"
        ));
    }
    crate::store::factory_for(url).map_err(|error| format!("--store: {error}"))
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

/// Runs one seed of `scenario` on the memory store: `Sim::new(scenario).run(seed)`.
pub fn run_seed(scenario: &Scenario, seed: u64) -> SimOutcome {
    Sim::new(scenario).run(seed)
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
    let mut sim = Sim::new(scenario);
    sim.sweep = sweep;
    sim.run(seed)
}

/// A simulated world, built: a scenario, the store under test, an optional planned crash.
///
/// ```no_run
/// # use tasklatch::{sim::{Scenario, Sim}, store::SqliteFactory};
/// let scenario = Scenario::by_name("baseline").unwrap();
/// let sqlite = SqliteFactory::default();
/// let outcome = Sim::new(&scenario).store(&sqlite).run(7);
/// assert!(outcome.violations.is_empty(), "{}", outcome.repro_command());
/// ```
///
/// The store runs inside the simulation, on its one thread, so it must be in-process and
/// deterministic: no threads or runtimes of its own, no clock (time comes in as `now_ms`),
/// no network, no unseeded randomness. Each call then runs whole between two simulated
/// steps: the simulation finds races *between* the store's operations (and what crashes and
/// outages do to them), never inside one — that is loom's job and the real race tests'.
pub struct Sim<'a> {
    scenario: &'a Scenario,
    store: &'a dyn StoreFactory,
    sweep: Option<Sweep>,
}

impl<'a> Sim<'a> {
    /// `scenario` on a fresh [`MemoryStore`](crate::store::MemoryStore) per seed.
    pub fn new(scenario: &'a Scenario) -> Sim<'a> {
        Sim {
            scenario,
            store: &MemoryFactory,
            sweep: None,
        }
    }

    /// Runs every seed on a fresh store from `factory`.
    pub fn store(mut self, factory: &'a dyn StoreFactory) -> Sim<'a> {
        self.store = factory;
        self
    }

    /// Crashes the `arrival`-th node to reach `point`.
    pub fn sweep(mut self, sweep: Sweep) -> Sim<'a> {
        self.sweep = Some(sweep);
        self
    }

    /// Runs one seed on the calling thread (madsim keeps per-thread state; a run leaves
    /// none behind), a panic caught and reported as a violation.
    pub fn run(&self, seed: u64) -> SimOutcome {
        let store = match self.store.open(&StoreOptions {
            cursor_secret: Some(b"simulation".to_vec()),
        }) {
            Ok(store) => store,
            Err(error) => {
                let mut outcome = SimOutcome::unfinished(
                    self.scenario,
                    seed,
                    "store",
                    format!("cannot open a fresh {} store: {error}", self.store.name()),
                );
                outcome.store = self.store.name().to_owned();
                outcome.store_url = self.store.url();
                return outcome;
            }
        };
        let mut outcome = run_world(self.scenario, seed, self.sweep, store);
        outcome.store = self.store.name().to_owned();
        outcome.store_url = self.store.url();
        outcome
    }
}

impl SimOutcome {
    /// A run that ended before its checks, with one pseudo-violation saying why.
    fn unfinished(
        scenario: &Scenario,
        seed: u64,
        invariant: &'static str,
        detail: String,
    ) -> SimOutcome {
        SimOutcome {
            scenario: scenario.name.clone(),
            seed,
            plan: None,
            violations: vec![Violation {
                invariant,
                task_id: String::new(),
                detail,
                events: Vec::new(),
            }],
            marks: BTreeMap::new(),
            trace_hash: trace_hash(&[], &[]),
            history: Vec::new(),
            lanes: Vec::new(),
            nodes: Vec::new(),
            store: String::new(),
            store_url: None,
        }
    }
}

fn run_world(
    scenario: &Scenario,
    seed: u64,
    sweep: Option<Sweep>,
    store: Box<dyn TaskStore>,
) -> SimOutcome {
    let name = scenario.name.clone();
    let scenario = scenario.clone();
    // Kept outside the simulation, so a panicking run still leaves its history.
    let history = Arc::new(History::default());
    let recorded = history.clone();
    let joined = on_sim_thread(move || {
        let mut runtime =
            madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
        // Simulated time; a run that does not finish by then is a hang, reported as one.
        runtime.set_time_limit(Duration::from_secs(3_600));
        runtime.block_on(simulate(scenario, seed, recorded, sweep, store))
    });
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
            store: String::new(),
            store_url: None,
        }
    })
}

/// Runs `run` (one whole simulation) on the calling thread and returns what it returned or
/// how it panicked, as joining a thread of its own would.
///
/// madsim keeps its runtime context per thread, but enters and leaves it per runtime
/// (guards restore it, on unwinding too), and each run builds its world anew: nothing of
/// one run survives into the next, so a seed's trace is the same whatever ran before it on
/// the thread. Running here rather than on a fresh thread per seed saves the thread, the
/// first-touch faults of its stack and arena, and freeing the outcome across arenas.
fn on_sim_thread<T>(run: impl FnOnce() -> T) -> std::thread::Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
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

/// SHA-256 over the timeline's lines joined by newlines. Each line is rendered into one
/// reused buffer (by [`render::write_line`], byte for byte a [`TimelineLine`]) and hashed
/// whole (many tiny hasher updates cost more than the copy).
fn trace_hash(events: &[Event], lanes: &[String]) -> String {
    use sha2::Digest as _;
    let mut hasher = sha2::Sha256::new();
    let mut line = String::with_capacity(512);
    for (index, (event, lane)) in events.iter().zip(lanes).enumerate() {
        line.clear();
        if index > 0 {
            line.push('\n');
        }
        render::write_line(&mut line, offset_ms(event), lane, event);
        hasher.update(line.as_bytes());
    }
    crate::contract::hex_lower(&hasher.finalize())
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

    fn mark(&self, name: impl AsRef<str> + Into<String>) {
        let mut marks = self.marks.lock().expect("marks");
        // Counted in place once seen: most marks repeat, and a key costs an allocation.
        match marks.get_mut(name.as_ref()) {
            Some(count) => *count += 1,
            None => {
                marks.insert(name.into(), 1);
            }
        }
    }

    /// Marks `{prefix}:{point}` without building the name when it was seen before.
    fn mark_point(&self, prefix: &str, point: Point) {
        let name = point.name();
        let length = prefix.len() + 1 + name.len();
        let mut buffer = [0u8; 64];
        if length > buffer.len() {
            return self.mark(format!("{prefix}:{name}"));
        }
        buffer[..prefix.len()].copy_from_slice(prefix.as_bytes());
        buffer[prefix.len()] = b':';
        buffer[prefix.len() + 1..length].copy_from_slice(name.as_bytes());
        self.mark(std::str::from_utf8(&buffer[..length]).expect("two names and a colon"));
    }
}

/// The store as the simulation sees it: the store under test, with every applied change
/// recorded into the history. (The oracle uses these as facts of what was written; it
/// never asks the store to judge itself.)
struct RecordingStore {
    inner: Box<dyn TaskStore>,
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
    /// The MCP handler the clients speak to.
    server: Arc<Server>,
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

/// What the server answered a client's request.
enum Reply {
    Result(serde_json::Value),
    Error {
        code: i64,
        message: String,
        data: serde_json::Value,
    },
    /// `-32603` because the store could not be reached: nothing happened.
    Unavailable,
}

/// One JSON-RPC request through the MCP handler `tasklatch serve` runs, sent as text (the
/// handler parses it as a transport would hand it over), answered as the JSON a transport
/// would write.
async fn rpc(server: &Server, session: &Session, method: &str, params: serde_json::Value) -> Reply {
    /// The request as `json!` would render it (keys in order), without building a tree.
    #[derive(serde::Serialize)]
    struct Request<'a> {
        id: u8,
        jsonrpc: &'static str,
        method: &'a str,
        params: &'a serde_json::Value,
    }
    let request = serde_json::to_string(&Request {
        id: 1,
        jsonrpc: "2.0",
        method,
        params: &params,
    })
    .expect("a JSON value serialises");
    let mut answer = server
        .handle_text(session, &request)
        .await
        .expect("a request is answered");
    if let Some(result) = answer
        .as_object_mut()
        .and_then(|answer| answer.remove("result"))
    {
        return Reply::Result(result);
    }
    let error = &answer["error"];
    let code = error["code"].as_i64().unwrap_or_default();
    let message = error["message"].as_str().unwrap_or_default().to_owned();
    if code == wire::code::INTERNAL_ERROR && message == STORE_UNAVAILABLE {
        return Reply::Unavailable;
    }
    Reply::Error {
        code,
        message,
        data: error.get("data").cloned().unwrap_or_default(),
    }
}

/// A wire `Task` object as the oracle reads it. The wire never names the owner; the
/// version comes from tasklatch's `_meta` where the answer carries it.
fn revealed_of_wire(task: &serde_json::Value, version: Option<u64>) -> Option<Revealed> {
    Some(Revealed {
        task_id: task["taskId"].as_str()?.to_owned(),
        auth_key: String::new(),
        status: serde::Deserialize::deserialize(&task["status"]).ok()?,
        version,
        outcome: None,
    })
}

fn version_meta(value: &serde_json::Value) -> Option<u64> {
    value["_meta"][wire::VERSION_META].as_u64()
}

/// A client: speaks MCP to the server (JSON-RPC in memory, through the same handler
/// `tasklatch serve` runs). It creates its tenant's tasks (retrying lost answers with the
/// same idempotency key), polls them at their poll interval with jitter, sometimes cancels,
/// fetches results, lists. Answering a task's question is the one step outside the wire:
/// the server-side effect of an elicitation answer, applied to the store directly.
async fn client(shared: Arc<Shared>, tenant: usize) {
    let caller = format!("tenant-{tenant}/user");
    let client_name = format!("client-{tenant}");
    let session = Session {
        id: client_name.clone(),
        auth_key: caller.clone(),
        negotiated: Negotiated::FULL,
        idempotency_header: None,
    };
    let server = shared.server.clone();
    let record = |op: ClientOp, result: ClientResult| {
        shared.history.push(Event::Client {
            client: client_name.clone(),
            caller: caller.clone(),
            op,
            result,
            at_ms: SimEnv.now_ms(),
        });
    };
    let answered = |op: ClientOp, decision: Decision, revealed: Vec<Revealed>| {
        record(op, ClientResult::Ok { decision, revealed });
    };
    // The last status each task showed this client (what a `tasks/result` answer is for).
    let mut last_status: BTreeMap<String, TaskStatus> = BTreeMap::new();
    let task_params = match shared.scenario.ttl_ms {
        Some(ttl) => json!({ "ttl": ttl }),
        None => json!({}),
    };
    let mut mine: Vec<String> = Vec::new();
    for n in 0..shared.scenario.tasks_per_tenant {
        let key = format!("{caller}#{n}");
        let arguments = json!({ "tenant": tenant, "n": n });
        // A task-augmented `tools/call` under `key`; the digest is the server's own.
        let create = |arguments: &serde_json::Value| {
            // What `WrappedRequest::digest` computes, without copying the arguments.
            let digest = crate::contract::request_digest("tools/call", "export", Some(arguments));
            let op = ClientOp::Create {
                idempotency_key: Some(key.clone()),
                digest: digest.as_str().to_owned(),
            };
            let params = json!({
                "name": "export",
                "arguments": arguments,
                "task": task_params,
                "_meta": { wire::IDEMPOTENCY_KEY: key },
            });
            (op, params)
        };
        // Create, retrying a lost answer with the same key (bounded).
        for _attempt in 0..5 {
            madsim::time::sleep(Duration::from_millis(
                1 + madsim::rand::random::<u64>() % 20,
            ))
            .await;
            let (op, params) = create(&arguments);
            let reply = rpc(&server, &session, "tools/call", params).await;
            let lost = madsim::rand::random::<u64>() % 100 < shared.knobs.lost_response_percent;
            match reply {
                Reply::Unavailable => record(op, ClientResult::Fail),
                _ if lost => {
                    shared.history.mark("lost-response");
                    record(op, ClientResult::Indeterminate);
                }
                Reply::Result(result) => {
                    let revealed: Vec<Revealed> =
                        revealed_of_wire(&result["task"], version_meta(&result))
                            .into_iter()
                            .collect();
                    for task in &revealed {
                        mine.push(task.task_id.clone());
                        shared
                            .known
                            .lock()
                            .expect("known tasks")
                            .push(task.task_id.clone());
                    }
                    answered(op, Decision::AcceptTask, revealed);
                    break;
                }
                Reply::Error { .. } => {
                    record(op, ClientResult::Fail);
                    break;
                }
            }
        }
        // A buggy client reuses the key for another request: it must be refused.
        if madsim::rand::random::<u64>() % 100 < shared.knobs.key_reuse_percent {
            let altered = json!({ "tenant": tenant, "n": n, "altered": true });
            let (op, params) = create(&altered);
            match rpc(&server, &session, "tools/call", params).await {
                Reply::Result(result) => answered(
                    op,
                    Decision::AcceptTask,
                    revealed_of_wire(&result["task"], version_meta(&result))
                        .into_iter()
                        .collect(),
                ),
                Reply::Error { code, message, .. }
                    if code == wire::code::INVALID_PARAMS
                        && message.starts_with("Idempotency key") =>
                {
                    shared.history.mark("idempotency-collision-refused");
                    answered(op, Decision::BlockIdempotencyCollision, Vec::new());
                }
                Reply::Error { .. } | Reply::Unavailable => record(op, ClientResult::Fail),
            }
        }
    }
    let mine_set: std::collections::BTreeSet<String> = mine.iter().cloned().collect();
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
                    let reply = rpc(
                        &server,
                        &session,
                        "tasks/cancel",
                        json!({ "taskId": task_id }),
                    )
                    .await;
                    let op = ClientOp::Cancel {
                        task_id: task_id.clone(),
                    };
                    let Some((decision, revealed)) = cancel_answer(reply) else {
                        continue;
                    };
                    if madsim::rand::random::<u64>() % 100 < shared.knobs.lost_response_percent {
                        shared.history.mark("lost-response");
                        record(op, ClientResult::Indeterminate);
                        continue;
                    }
                    answered(op, decision, revealed);
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
                        let params = json!({ "taskId": target });
                        let (op, answer) = match madsim::rand::random::<u64>() % 3 {
                            0 => (
                                ClientOp::Cancel {
                                    task_id: target.clone(),
                                },
                                cancel_answer(rpc(&server, &session, "tasks/cancel", params).await),
                            ),
                            1 => (
                                ClientOp::Result {
                                    task_id: target.clone(),
                                },
                                result_answer(
                                    rpc(&server, &session, "tasks/result", params).await,
                                    &target,
                                    None,
                                ),
                            ),
                            _ => (
                                ClientOp::Get {
                                    task_id: target.clone(),
                                },
                                get_answer(rpc(&server, &session, "tasks/get", params).await),
                            ),
                        };
                        if let Some((decision, revealed)) = answer {
                            if decision == Decision::BlockNotFound {
                                shared.history.mark(match op {
                                    ClientOp::Cancel { .. } => "cross-tenant-cancel-refused",
                                    _ => "cross-tenant-refused",
                                });
                            }
                            answered(op, decision, revealed);
                        }
                    }
                }
                let reply = rpc(&server, &session, "tasks/get", json!({ "taskId": task_id })).await;
                let Some((decision, revealed)) = get_answer(reply) else {
                    continue;
                };
                let shown = revealed.first().map(|seen| (seen.status, seen.version));
                answered(
                    ClientOp::Get {
                        task_id: task_id.clone(),
                    },
                    decision,
                    revealed,
                );
                let Some((status, version)) = shown else {
                    break; // gone: expired, or never the client's
                };
                last_status.insert(task_id.clone(), status);
                // The requestor answers a question: the server moves the task back to working.
                if status == TaskStatus::InputRequired
                    && let Some(version) = version
                    && let Ok(reply) = shared.store.transition(&TransitionCommand {
                        task_id: task_id.clone(),
                        caller: caller.clone(),
                        expected_version: version,
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
                        reply.decision,
                        reply.record.iter().map(revealed_of).collect(),
                    );
                }
                if status.is_terminal() {
                    let reply = rpc(
                        &server,
                        &session,
                        "tasks/result",
                        json!({ "taskId": task_id }),
                    )
                    .await;
                    if let Some((decision, revealed)) =
                        result_answer(reply, &task_id, last_status.get(&task_id).copied())
                    {
                        answered(
                            ClientOp::Result {
                                task_id: task_id.clone(),
                            },
                            decision,
                            revealed,
                        );
                    }
                    break;
                }
            }
        }
        if adopted {
            break;
        }
        adopted = true;
        // The store may be down: retry the listing a bounded number of times.
        let mut listed = None;
        for _attempt in 0..50 {
            match rpc(&server, &session, "tasks/list", json!({})).await {
                Reply::Result(page) => {
                    listed = Some(page);
                    break;
                }
                _ => madsim::time::sleep(Duration::from_millis(interval)).await,
            }
        }
        if let Some(page) = listed {
            for task in page["tasks"].as_array().into_iter().flatten() {
                if let Some(seen) = revealed_of_wire(task, None)
                    && !mine_set.contains(&seen.task_id)
                    && !seen.status.is_terminal()
                {
                    shared.history.mark("task-adopted-from-list");
                    pending.push_back(seen.task_id);
                }
            }
        }
        if pending.is_empty() {
            break;
        }
    }
    if let Reply::Result(page) = rpc(&server, &session, "tasks/list", json!({})).await {
        let revealed = page["tasks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|task| revealed_of_wire(task, None))
            .collect();
        answered(ClientOp::List, Decision::ListTenantFiltered, revealed);
    }
}

/// What an answer came to for the oracle: a decision and what it showed; `None` when the
/// store was unreachable (nothing happened).
type Shown = Option<(Decision, Vec<Revealed>)>;

/// A `tasks/get` answer as a decision and what it showed.
fn get_answer(reply: Reply) -> Shown {
    match reply {
        Reply::Result(task) => Some((
            Decision::ReturnStatus,
            revealed_of_wire(&task, version_meta(&task))
                .into_iter()
                .collect(),
        )),
        // Not found, another tenant's, expired: one answer on the wire.
        Reply::Error { .. } => Some((Decision::BlockNotFound, Vec::new())),
        Reply::Unavailable => None,
    }
}

/// A `tasks/cancel` answer as a decision and what it showed.
fn cancel_answer(reply: Reply) -> Shown {
    match reply {
        Reply::Result(task) => Some((
            Decision::ApplyCancel,
            revealed_of_wire(&task, version_meta(&task))
                .into_iter()
                .collect(),
        )),
        Reply::Error { message, .. } if message.starts_with("Cannot cancel task") => {
            Some((Decision::AlreadyTerminal, Vec::new()))
        }
        Reply::Error { .. } => Some((Decision::BlockNotFound, Vec::new())),
        Reply::Unavailable => None,
    }
}

/// A `tasks/result` answer as a decision and what it showed: the payload, for a task whose
/// status the client last saw as `status` (a payload names no status on the wire).
fn result_answer(reply: Reply, task_id: &str, status: Option<TaskStatus>) -> Shown {
    let shown = |status: TaskStatus, outcome: TaskOutcome| Revealed {
        task_id: task_id.to_owned(),
        auth_key: String::new(),
        status,
        version: None,
        outcome: Some(outcome),
    };
    match reply {
        Reply::Result(result) => {
            let failed = result["isError"] == serde_json::Value::Bool(true);
            let status = status.unwrap_or(if failed {
                TaskStatus::Failed
            } else {
                TaskStatus::Completed
            });
            Some((
                Decision::ReturnResult,
                vec![shown(status, TaskOutcome::Result { result })],
            ))
        }
        Reply::Error { data, .. } if data["status"] == "cancelled" => {
            Some((Decision::ReturnCancelled, Vec::new()))
        }
        Reply::Error { code, .. } if code == wire::code::INVALID_PARAMS => {
            Some((Decision::BlockNotFound, Vec::new()))
        }
        // The wrapped request's own JSON-RPC error, stored when the task failed.
        Reply::Error {
            code,
            message,
            data,
        } => Some((
            Decision::ReturnResult,
            vec![shown(
                TaskStatus::Failed,
                TaskOutcome::RpcError {
                    code,
                    message,
                    data: (!data.is_null()).then_some(data),
                },
            )],
        )),
        Reply::Unavailable => None,
    }
}

/// The simulation's tool list, as the server shows it: one `export`, only as a task (the
/// runtime's workers run it through [`Export`]).
struct SimCatalog;

impl Catalog for SimCatalog {
    fn specs(&self) -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "export",
            description: "Exports rows; its effect is committed once per task.",
            input_schema: json!({ "type": "object" }),
            task_support: TaskSupport::Required,
        }]
    }

    fn validate(
        &self,
        _name: &str,
        _arguments: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<(), RpcError> {
        Ok(())
    }

    fn call(
        &self,
        _name: &str,
        _arguments: serde_json::Map<String, serde_json::Value>,
        _task_id: Option<String>,
    ) -> BoxFuture<'static, ToolStep> {
        // Reached only when the contract lets a `required` tool run without a task (the
        // `required-sync-accepted` mutant): the simulation's export has no synchronous form.
        Box::pin(async {
            ToolStep::Finished(TaskOutcome::RpcError {
                code: wire::code::METHOD_NOT_FOUND,
                message: "export runs only as a task".into(),
                data: None,
            })
        })
    }
}

/// What an answer shows a client of one record (its payload is added for `tasks/result`).
fn revealed_of(record: &TaskRecord) -> Revealed {
    Revealed {
        task_id: record.task_id.clone(),
        auth_key: record.auth_key.clone(),
        status: record.status,
        version: Some(record.version),
        outcome: None,
    }
}

/// The supervisor (node 0): builds the world, injects faults, heals, checks.
async fn simulate(
    scenario: Scenario,
    seed: u64,
    history: Arc<History>,
    sweep: Option<Sweep>,
    inner: Box<dyn TaskStore>,
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
        inner,
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
        server: Arc::new(Server::new(
            store.clone(),
            Arc::new(SimCatalog),
            Arc::new(SimEnv),
            ServerConfig {
                ttl_ms_default: scenario.ttl_ms,
                ttl_ms_max: u64::MAX,
                poll_interval_ms: scenario.poll_interval_ms,
                list_page: 100,
                log_store_errors: false,
                ..ServerConfig::default()
            },
        )),
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
            wire: true,
        },
    );
    let trace_hash = trace_hash(&events, &lanes);
    let marks = std::mem::take(&mut *history.marks.lock().expect("marks"));
    let outcome = SimOutcome {
        scenario: scenario.name,
        seed,
        plan: Some(plan),
        violations,
        marks,
        trace_hash,
        history: events,
        lanes,
        nodes: history.node_names(),
        store: String::new(),
        store_url: None,
    };
    tear_down(&handle, &history);
    outcome
}

/// Kills every node once the outcome is taken, so the executor drops their tasks as this
/// supervisor returns. Left alone, the runtime nodes' endless loops (and their timers) keep
/// the world alive through reference cycles after the runtime is gone: every seed leaked
/// its whole world, and the next one paid page faults for fresh memory. Nothing recorded
/// after this point is read.
fn tear_down(handle: &Handle, history: &History) {
    let nodes: Vec<madsim::task::NodeId> = history
        .names
        .lock()
        .expect("names")
        .keys()
        .copied()
        .collect();
    for node in nodes {
        handle.kill(node);
    }
}

#[cfg(test)]
mod tests {
    use super::{TimelineLine, on_sim_thread, run_seed, trace_hash};
    use crate::sim::Scenario;

    /// The trace hash as it was first defined: SHA-256 over the `Display` of each line.
    fn reference_hash(outcome: &crate::sim::SimOutcome) -> String {
        use sha2::Digest as _;
        let lines: Vec<String> = outcome
            .history
            .iter()
            .zip(&outcome.lanes)
            .map(|(event, lane)| TimelineLine(event, lane).to_string())
            .collect();
        crate::contract::hex_lower(&sha2::Sha256::digest(lines.join("\n").as_bytes()))
    }

    #[test]
    fn the_trace_hash_is_the_hash_of_the_timeline() {
        for scenario in Scenario::all().expect("scenarios load") {
            for seed in 0..3 {
                let outcome = run_seed(&scenario, seed);
                assert!(outcome.history.len() > 20);
                assert_eq!(outcome.trace_hash, reference_hash(&outcome));
                assert_eq!(
                    trace_hash(&outcome.history, &outcome.lanes),
                    outcome.trace_hash
                );
            }
        }
    }

    #[test]
    fn a_panicking_run_is_returned_and_the_thread_runs_on() {
        // A panic inside a running simulation, as an assertion of the system under test.
        let panicked = on_sim_thread(|| {
            let runtime =
                madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default());
            runtime.block_on(async {
                madsim::time::sleep(std::time::Duration::from_millis(5)).await;
                panic!("a run that panics")
            })
        });
        let message = panicked.expect_err("the panic is returned");
        assert_eq!(message.downcast_ref::<&str>(), Some(&"a run that panics"));
        let scenario = Scenario::by_name("baseline").expect("baseline loads");
        let first = run_seed(&scenario, 3).trace_hash;
        let fresh = std::thread::spawn(move || run_seed(&scenario, 3).trace_hash)
            .join()
            .expect("a run");
        assert_eq!(first, fresh, "a thread that saw a panic runs seeds alike");
    }
}
