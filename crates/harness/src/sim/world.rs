//! One simulated world: a store, a queue, an effect sink, a dispatcher node, worker
//! nodes, a sweeper node and one client node per tenant, driven by a supervisor that
//! injects faults during a safety phase and then lets the system heal (liveness phase).

use super::SimEnv;
use super::scenario::QueueHome;
use super::scenario::{Breadth, FaultKind, Knobs, Plan, Scenario};
use super::{
    author::{AuthorWorld, RecordedTools, WorldTools},
    client::client,
    deployment::{ProcessSlot, process_node},
    faults::{FaultyQueue, SimProbe, draw_breadth, draw_eras, draw_faults, draw_knobs},
    history::History,
    outcome::{SimOutcome, trace_hash},
    recording::RecordingStore,
    tools::{Export, RunLog, SimCatalog, SimEffects, SimNotify, Sink},
};
use crate::check::{self, CheckContext, Event, Injection, ServerFacts, Violation};
use crate::mcp::tools::Catalog;
use crate::mcp::{Server, ServerConfig};
use crate::runtime::{
    Effects, Env, MemoryQueue, Notify, Point, Queue, Runtime, RuntimeConfig, Tools,
};
use crate::store::{MemoryFactory, StoreFactory, StoreOptions, TaskStore};
use madsim::runtime::{Handle, NodeHandle};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Runs one seed of `scenario` on the memory store: `Sim::new(scenario).run(seed)`.
pub fn run_seed(scenario: &Scenario, seed: u64) -> SimOutcome {
    Sim::new(scenario).run(seed)
}

/// A planned crash: the node that is the `arrival`-th (1-based) to reach `point` during
/// the safety phase crashes right there. Sweeping every point makes each crash window
/// reachable on purpose, not only by chance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sweep {
    /// The named point the crash happens at.
    pub point: Point,
    /// Which arrival at `point` crashes, 1-based, counted over every node.
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
/// # use tasklatch_harness::sim::{Scenario, Sim};
/// # use tasklatch_server::store::SqliteFactory;
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
    pub(super) scenario: &'a Scenario,
    pub(super) store: &'a dyn StoreFactory,
    pub(super) sweep: Option<Sweep>,
    pub(super) tools: Option<&'a WorldTools>,
    /// Whether a run that passes gets its trace hash (a hunt reports only failures').
    pub(super) hash_passing: bool,
}

impl<'a> Sim<'a> {
    /// `scenario` on a fresh [`MemoryStore`](crate::store::MemoryStore) per seed.
    pub fn new(scenario: &'a Scenario) -> Sim<'a> {
        Sim {
            scenario,
            store: &MemoryFactory,
            sweep: None,
            tools: None,
            hash_passing: true,
        }
    }

    /// Leaves a passing run's `trace_hash` empty: hashing every event of every run is a
    /// tenth of a seed, and a hunt keeps only the failures (whose hashes it prints).
    pub fn without_passing_hashes(mut self) -> Sim<'a> {
        self.hash_passing = false;
        self
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

    /// Runs an author's tools (a [`Toolbox`](crate::tool::Toolbox) of a server built on
    /// `tasklatch-server`) in place of the built-in `export`: see [`WorldTools`].
    pub fn tools(mut self, tools: &'a WorldTools) -> Sim<'a> {
        self.tools = Some(tools);
        self
    }

    /// Runs one seed on the calling thread (madsim keeps per-thread state; a run leaves
    /// none behind), a panic caught and reported as a violation.
    pub fn run(&self, seed: u64) -> SimOutcome {
        let opened = self.store.open(&StoreOptions {
            cursor_secret: Some(b"simulation".to_vec()),
        });
        let mut outcome = match opened {
            Ok(store) => run_world(self.scenario, seed, self.sweep, self.tools, store),
            Err(error) => SimOutcome::unfinished(
                self.scenario,
                seed,
                "store",
                format!("cannot open a fresh {} store: {error}", self.store.name()),
            ),
        };
        outcome.store = self.store.name().to_owned();
        outcome.store_url = self.store.url();
        if self.hash_passing || !outcome.violations.is_empty() {
            outcome.trace_hash = trace_hash(&outcome.history, &outcome.lanes);
        }
        outcome
    }
}

pub(super) fn run_world(
    scenario: &Scenario,
    seed: u64,
    sweep: Option<Sweep>,
    tools: Option<&WorldTools>,
    store: Box<dyn TaskStore>,
) -> SimOutcome {
    let name = scenario.name.clone();
    let scenario = scenario.clone();
    let tools = tools.cloned();
    // Kept outside the simulation, so a panicking run still leaves its history.
    let history = Arc::new(History::default());
    let recorded = history.clone();
    let joined = on_sim_thread(move || {
        let mut runtime =
            madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
        // Simulated time; a run that does not finish by then is a hang, reported as one.
        runtime.set_time_limit(Duration::from_secs(3_600));
        runtime.block_on(simulate(scenario, seed, recorded, sweep, tools, store))
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
            // Taken by `Sim::run`, as every run's.
            trace_hash: String::new(),
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
pub(super) fn on_sim_thread<T>(run: impl FnOnce() -> T) -> std::thread::Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
}

pub(super) struct Shared {
    pub(super) scenario: Scenario,
    pub(super) knobs: Knobs,
    pub(super) breadth: Breadth,
    /// The server's settings, as the oracle is told them.
    pub(super) server_facts: ServerFacts,
    pub(super) store: Arc<RecordingStore>,
    pub(super) queue: Arc<FaultyQueue>,
    pub(super) sink: Arc<Mutex<Sink>>,
    pub(super) history: Arc<History>,
    pub(super) faults_on: Arc<std::sync::atomic::AtomicBool>,
    pub(super) sweep: Option<Sweep>,
    pub(super) sweep_arrivals: Arc<std::sync::atomic::AtomicU64>,
    /// Task ids clients were given, for cross-tenant probing.
    pub(super) known: Mutex<Vec<String>>,
    /// The MCP handler the clients speak to (an external queue's deployment).
    pub(super) server: Arc<Server>,
    /// The tools as the server lists them.
    pub(super) catalog: Arc<dyn Catalog>,
    /// An author's tools, run in place of the built-in export.
    pub(super) author: Option<AuthorWorld>,
    /// The server processes (an in-process queue's deployment); empty otherwise.
    pub(super) processes: Vec<ProcessSlot>,
}

impl Shared {
    /// The runtime of a node of its own, on the world's store and queue.
    pub(super) fn runtime(&self, node: Arc<Mutex<Option<madsim::task::NodeId>>>) -> Arc<Runtime> {
        let notify = Arc::new(SimNotify {
            history: self.history.clone(),
        });
        Arc::new(self.runtime_with(node, self.store.clone(), self.queue.clone(), notify))
    }

    /// A runtime on `node` over `store` and `queue`, telling `notify` of status changes.
    pub(super) fn runtime_with(
        &self,
        node: Arc<Mutex<Option<madsim::task::NodeId>>>,
        store: Arc<dyn TaskStore>,
        queue: Arc<dyn Queue>,
        notify: Arc<dyn Notify>,
    ) -> Runtime {
        let (tools, effects): (Arc<dyn Tools>, Arc<dyn Effects>) = match &self.author {
            Some(author) => {
                let recorded = Arc::new(RecordedTools {
                    inner: author.bound.clone(),
                    sink: self.sink.clone(),
                    history: self.history.clone(),
                });
                (recorded.clone(), recorded)
            }
            None => (
                Arc::new(Export {
                    sink: self.sink.clone(),
                    history: self.history.clone(),
                    tool_ms: (self.scenario.tool_ms[0], self.scenario.tool_ms[1]),
                    breadth: self.breadth.clone(),
                }),
                Arc::new(SimEffects {
                    sink: self.sink.clone(),
                    history: self.history.clone(),
                }),
            ),
        };
        let tools = Arc::new(RunLog {
            inner: tools,
            history: self.history.clone(),
        });
        Runtime::new(
            store,
            queue,
            tools,
            Arc::new(SimEnv),
            Arc::new(SimProbe {
                history: self.history.clone(),
                knobs: self.knobs.clone(),
                node,
                faults_on: self.faults_on.clone(),
                sweep: self.sweep,
                arrivals: self.sweep_arrivals.clone(),
            }),
            notify,
            RuntimeConfig {
                republish_after_ms: 1_000,
                queue_lease_ms: 1_000,
                idle_ms: 40,
                dispatch_batch: 8,
                sweep_every_ms: 500,
                sweep_batch: self.breadth.sweep_batch.unwrap_or(64),
                retry_after_ms: 50,
            },
        )
        .with_effects(effects)
    }

    /// An MCP server over `store`, configured as the oracle is told.
    pub(super) fn server_on(&self, store: Arc<dyn TaskStore>) -> Server {
        server_on(store, self.catalog.clone(), self.server_facts)
    }
}

fn server_on(store: Arc<dyn TaskStore>, catalog: Arc<dyn Catalog>, facts: ServerFacts) -> Server {
    Server::new(
        store,
        catalog,
        Arc::new(SimEnv),
        ServerConfig {
            ttl_ms_default: facts.ttl_ms_default,
            ttl_ms_max: facts.ttl_ms_max,
            poll_interval_ms: facts.poll_interval_ms,
            list_page: facts.list_page,
            log_store_errors: false,
            // The clients are the system under test's peers, not abusers: no budget.
            limits: crate::mcp::limits::LimitsConfig::unlimited(),
            ..ServerConfig::default()
        },
    )
}

/// Which loop a runtime node runs.
#[derive(Clone, Copy)]
pub(super) enum Role {
    Dispatcher,
    Worker,
    Sweeper,
}

pub(super) fn runtime_node(
    handle: &Handle,
    shared: &Arc<Shared>,
    name: String,
    role: Role,
) -> NodeHandle {
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

/// The supervisor (node 0): builds the world, injects faults, heals, checks.
pub(super) async fn simulate(
    scenario: Scenario,
    seed: u64,
    history: Arc<History>,
    sweep: Option<Sweep>,
    tools: Option<WorldTools>,
    inner: Box<dyn TaskStore>,
) -> SimOutcome {
    let handle = Handle::current();
    let plan = start_plan(&scenario, seed, &history, sweep);
    let world = World {
        scenario: &scenario,
        seed,
        history: &history,
        sweep,
        plan: &plan,
    };
    let shared = world.build(tools, inner);
    let (killable, _sweeper, clients) = start_nodes(&handle, &shared, &plan);
    let safety_started = SimEnv.now_ms();
    inject_faults(&handle, &shared, &plan, &killable, safety_started).await;
    let liveness_deadline_ms = heal(&scenario, &history, &shared, clients, safety_started).await;
    let outcome = judge(
        scenario,
        seed,
        plan,
        &history,
        &shared,
        liveness_deadline_ms,
    );
    tear_down(&handle, &history);
    outcome
}

/// The run's plan (drawn from the seed even when the scenario pins one, so a pinned copy
/// of a drawn run replays it exactly), recorded and announced in the history.
fn start_plan(scenario: &Scenario, seed: u64, history: &History, sweep: Option<Sweep>) -> Plan {
    // Drawn even when pinned, so a pinned copy of a drawn run replays it exactly.
    let drawn = Plan {
        knobs: draw_knobs(scenario),
        faults: draw_faults(scenario),
        client_eras: draw_eras(scenario),
        breadth: draw_breadth(scenario),
    };
    let mut plan = scenario.plan.clone().unwrap_or(drawn.clone());
    if plan.client_eras.is_empty() {
        plan.client_eras = drawn.client_eras;
    }
    let (knobs, breadth) = (&plan.knobs, &plan.breadth);
    *history.plan.lock().expect("plan") = Some(plan.clone());
    let breadth_words = if breadth.is_off() {
        String::new()
    } else {
        format!(" breadth {breadth:?}")
    };
    history.push(Event::Fault {
        what: format!(
            "start {} seed {seed} knobs {knobs:?}{breadth_words} faults {} sweep {sweep:?}",
            scenario.name,
            plan.faults.len()
        ),
        at_ms: SimEnv.now_ms(),
    });
    plan
}

/// What one world is built from.
struct World<'a> {
    scenario: &'a Scenario,
    seed: u64,
    history: &'a Arc<History>,
    sweep: Option<Sweep>,
    plan: &'a Plan,
}

impl World<'_> {
    /// The store, queue, sink, server and tools every node shares.
    fn build(&self, tools: Option<WorldTools>, inner: Box<dyn TaskStore>) -> Arc<Shared> {
        let World {
            scenario,
            seed,
            history,
            sweep,
            plan,
        } = *self;
        let (knobs, breadth) = (&plan.knobs, &plan.breadth);
        let server_facts = ServerFacts {
            ttl_ms_default: scenario.ttl_ms,
            ttl_ms_max: scenario.ttl_ms_max.unwrap_or(u64::MAX),
            poll_interval_ms: breadth
                .server_poll_interval_ms
                .unwrap_or(scenario.poll_interval_ms),
            list_page: breadth.list_page.unwrap_or(100),
        };
        if server_facts.poll_interval_ms != scenario.poll_interval_ms {
            history.mark("server-poll-interval");
        }
        let sink: Arc<Mutex<Sink>> = Arc::default();
        let store = Arc::new(RecordingStore {
            inner,
            history: history.clone(),
            sink: sink.clone(),
            up: std::sync::atomic::AtomicBool::new(true),
            id_collision_percent: breadth.id_collision_percent,
            issued: Mutex::new(Vec::new()),
            feed: scenario.deployment.change_feed.then(Arc::default),
        });
        let faults_on = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let author = tools.map(|tools| {
            AuthorWorld::open(
                &tools,
                &scenario.name,
                seed,
                store.clone() as Arc<dyn TaskStore>,
            )
        });
        let catalog: Arc<dyn Catalog> = match &author {
            Some(author) => author.bound.clone(),
            None => Arc::new(SimCatalog),
        };
        Arc::new(Shared {
            scenario: (*scenario).clone(),
            knobs: knobs.clone(),
            breadth: breadth.clone(),
            server_facts,
            store: store.clone(),
            queue: Arc::new(FaultyQueue {
                inner: MemoryQueue::default(),
                history: history.clone(),
                knobs: knobs.clone(),
                faults_on: faults_on.clone(),
            }),
            sink,
            history: history.clone(),
            faults_on,
            sweep,
            sweep_arrivals: Arc::default(),
            known: Mutex::new(Vec::new()),
            server: Arc::new(server_on(store.clone(), catalog.clone(), server_facts)),
            catalog,
            author,
            processes: match scenario.deployment.queue {
                QueueHome::External => Vec::new(),
                QueueHome::InProcess => (0..scenario.deployment.processes)
                    .map(|_| ProcessSlot::default())
                    .collect(),
            },
        })
    }
}

type Nodes = (
    Vec<NodeHandle>,
    Option<NodeHandle>,
    Vec<madsim::task::JoinHandle<()>>,
);

/// The nodes faults may hit (the dispatcher and the workers, or the server processes),
/// the sweeper (an external queue's), and one client node per tenant.
fn start_nodes(handle: &Handle, shared: &Arc<Shared>, plan: &Plan) -> Nodes {
    let (scenario, history) = (&shared.scenario, &shared.history);
    let (killable, sweeper) = match scenario.deployment.queue {
        QueueHome::External => runtime_nodes(handle, shared),
        QueueHome::InProcess => {
            let processes = (0..scenario.deployment.processes)
                .map(|index| process_node(handle, shared, index))
                .collect();
            (processes, None)
        }
    };
    let clients: Vec<_> = (0..scenario.tenants)
        .map(|tenant| {
            let name = format!("client-{tenant}");
            let node = handle.create_node().name(name.clone()).build();
            history.name(node.id(), &name);
            let era = plan.client_eras.get(tenant).copied().unwrap_or_default();
            node.spawn(client(shared.clone(), tenant, era))
        })
        .collect();

    (killable, sweeper, clients)
}

/// The dispatcher and the workers, each a node of its own, and the sweeper.
fn runtime_nodes(handle: &Handle, shared: &Arc<Shared>) -> (Vec<NodeHandle>, Option<NodeHandle>) {
    let scenario = &shared.scenario;
    let mut killable = vec![runtime_node(
        handle,
        shared,
        "dispatcher".into(),
        Role::Dispatcher,
    )];
    for worker in 0..scenario.workers {
        killable.push(runtime_node(
            handle,
            shared,
            format!("worker-{worker}"),
            Role::Worker,
        ));
    }
    let sweeper = runtime_node(handle, shared, "sweeper".into(), Role::Sweeper);
    (killable, Some(sweeper))
}

/// Safety phase: the planned faults, one at a time.
async fn inject_faults(
    handle: &Handle,
    shared: &Shared,
    plan: &Plan,
    killable: &[NodeHandle],
    safety_started: u64,
) {
    let (store, history) = (&shared.store, &shared.history);
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
                let injected = |what| Event::Injected {
                    what,
                    at_ms: SimEnv.now_ms(),
                };
                history.push_on("store", injected(Injection::StoreDown));
                madsim::time::sleep(held).await;
                store.up.store(true, std::sync::atomic::Ordering::SeqCst);
                history.push_on("store", injected(Injection::StoreUp));
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
}

/// Liveness phase: no more faults; everything accepted and unexpired must finish. The
/// liveness deadline the oracle judges by.
async fn heal(
    scenario: &Scenario,
    history: &History,
    shared: &Shared,
    clients: Vec<madsim::task::JoinHandle<()>>,
    safety_started: u64,
) -> u64 {
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
    // A worker killed between decide and publish leaves its effect to the entry's
    // redelivery, a lease later: give settles the rest of the liveness budget.
    while !shared.sink.lock().expect("sink").prepared.is_empty() && SimEnv.now_ms() < deadline_ms {
        madsim::time::sleep(Duration::from_millis(100)).await;
    }

    SimEnv.now_ms()
}

/// The oracle's verdict on the run, and the outcome that carries it.
fn judge(
    scenario: Scenario,
    seed: u64,
    plan: Plan,
    history: &History,
    shared: &Shared,
    liveness_deadline_ms: u64,
) -> SimOutcome {
    let server_facts = shared.server_facts;
    // The run is over: take the history rather than copy it.
    let (events, lanes) = history.take();
    let mut violations = check::check(
        &events,
        &CheckContext {
            liveness_deadline_ms: Some(liveness_deadline_ms),
            wire: true,
            server: Some(server_facts),
        },
    );
    if let Some(author) = &shared.author {
        violations.extend(author.world_violations(&events, &*shared.store));
    }
    let marks = std::mem::take(&mut *history.marks.lock().expect("marks"));
    SimOutcome {
        scenario: scenario.name,
        seed,
        plan: Some(plan),
        violations,
        marks,
        // Taken by `Sim::run`, which knows whether this run's hash is wanted.
        trace_hash: String::new(),
        history: events,
        lanes,
        nodes: history.node_names(),
        store: String::new(),
        store_url: None,
    }
}

/// Kills every node once the outcome is taken, so the executor drops their tasks as this
/// supervisor returns. Left alone, the runtime nodes' endless loops (and their timers) keep
/// the world alive through reference cycles after the runtime is gone: every seed leaked
/// its whole world, and the next one paid page faults for fresh memory. Nothing recorded
/// after this point is read.
pub(super) fn tear_down(handle: &Handle, history: &History) {
    let nodes = history.node_ids();
    for node in nodes {
        handle.kill(node);
    }
}

#[cfg(test)]
mod tests {
    use super::super::outcome::TimelineLine;
    use super::{on_sim_thread, run_seed, trace_hash};
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
