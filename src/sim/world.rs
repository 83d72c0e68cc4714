//! One simulated world: a store, a queue, an effect sink, a dispatcher node, worker
//! nodes, a sweeper node and one client node per tenant, driven by a supervisor that
//! injects faults during a safety phase and then lets the system heal (liveness phase).

use super::{SIM_EPOCH_MS, SimEnv};
use crate::check::{
    self, AppliedKind, CheckContext, ClientOp, ClientResult, Event, Revealed, Violation,
};
use crate::contract::{
    Decision, Negotiated, TaskOutcome, TaskRecord, TaskStatus, TaskSupport, sha256_hex,
};
use crate::runtime::{
    BoxFuture, Env, Invocation, MemoryQueue, Point, Probe, Runtime, RuntimeConfig, Tools,
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

/// What a run simulates: its workload, timing and fault budget.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: String,
    /// One client node per tenant.
    pub tenants: usize,
    pub tasks_per_tenant: usize,
    pub workers: usize,
    /// A tool run takes between these many milliseconds.
    pub tool_ms: (u64, u64),
    /// Requested task TTL (`None`: never expires).
    pub ttl_ms: Option<u64>,
    pub poll_interval_ms: u64,
    /// Node kills the supervisor injects during the safety phase (upper bound; the
    /// seed's knobs draw the actual number).
    pub kills_max: usize,
    pub safety_ms: u64,
    pub liveness_ms: u64,
}

impl Scenario {
    /// 20 tasks, 3 workers, 3 tenants, up to 3 kills.
    pub fn baseline() -> Scenario {
        Scenario {
            name: "baseline".into(),
            tenants: 3,
            tasks_per_tenant: 7,
            workers: 3,
            tool_ms: (20, 200),
            ttl_ms: Some(600_000),
            poll_interval_ms: 100,
            kills_max: 3,
            safety_ms: 3_000,
            liveness_ms: 20_000,
        }
    }
}

/// Fault knobs of one run, drawn from its seed (swarm testing) and printed at its start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Knobs {
    pub kills: usize,
    /// Chance (percent) that reaching a named point crashes the node right there.
    pub point_crash_percent: u64,
    /// The points such crashes may hit this run.
    pub crash_points: Vec<Point>,
    /// Longest pause a probe inserts at a point (a window for timed kills).
    pub probe_delay_ms_max: u64,
    /// Chance (percent) that a client loses the answer to a create and retries it.
    pub lost_response_percent: u64,
    /// Chance (percent) that a client cancels a task it is polling.
    pub cancel_percent: u64,
}

impl Knobs {
    fn draw(scenario: &Scenario) -> Knobs {
        let roll = |bound: u64| madsim::rand::random::<u64>() % bound.max(1);
        let crash_points: Vec<Point> = Point::ALL.into_iter().filter(|_| roll(2) == 0).collect();
        Knobs {
            kills: roll(scenario.kills_max as u64 + 1) as usize,
            point_crash_percent: [0, 2, 5, 10][roll(4) as usize],
            crash_points,
            probe_delay_ms_max: [0, 5, 30][roll(3) as usize],
            lost_response_percent: [0, 10, 30][roll(3) as usize],
            cancel_percent: [0, 5, 20][roll(3) as usize],
        }
    }
}

/// The outcome of one seed.
#[derive(Clone, Debug)]
pub struct SimOutcome {
    pub scenario: String,
    pub seed: u64,
    /// `None` when the run panicked before reporting them.
    pub knobs: Option<Knobs>,
    /// Broken invariants; a panic inside the simulation (an assertion of the system
    /// under test, say) is reported as the pseudo-invariant `panic`.
    pub violations: Vec<Violation>,
    /// Coverage marks: how often each interesting path happened.
    pub marks: BTreeMap<String, u64>,
    /// SHA-256 of the whole history: equal for equal seeds.
    pub trace_hash: String,
    pub events: usize,
    /// The history, one line per event.
    pub timeline: Vec<String>,
}

impl SimOutcome {
    /// The line a user pastes to replay this run.
    pub fn repro_command(&self) -> String {
        format!(
            "cargo run --features sim -- repro --scenario {} --seed {}",
            self.scenario, self.seed
        )
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
        let (a, b) = range
            .split_once("..")
            .ok_or_else(|| format!("SIM_SEEDS={range:?}: expected a..b"))?;
        let (a, b): (u64, u64) = (
            a.parse()
                .map_err(|_| format!("SIM_SEEDS={range:?}: bad start"))?,
            b.parse()
                .map_err(|_| format!("SIM_SEEDS={range:?}: bad end"))?,
        );
        if a >= b {
            return Err(format!("SIM_SEEDS={range:?} is empty"));
        }
        return Ok(a..b);
    }
    Ok(default)
}

/// Runs one seed of `scenario` on a fresh OS thread (madsim keeps per-thread state).
pub fn run_seed(scenario: &Scenario, seed: u64) -> SimOutcome {
    let name = scenario.name.clone();
    let scenario = scenario.clone();
    let joined = std::thread::spawn(move || {
        let mut runtime =
            madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
        // Simulated time; a run that does not finish by then is a hang, reported as one.
        runtime.set_time_limit(Duration::from_secs(3_600));
        runtime.block_on(simulate(scenario, seed))
    })
    .join();
    joined.unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|text| (*text).to_owned()))
            .unwrap_or_else(|| "a non-text panic".into());
        SimOutcome {
            scenario: name,
            seed,
            knobs: None,
            violations: vec![Violation {
                invariant: "panic",
                task_id: String::new(),
                detail: message,
                events: Vec::new(),
            }],
            marks: BTreeMap::new(),
            trace_hash: String::new(),
            events: 0,
            timeline: Vec::new(),
        }
    })
}

/// The shared, append-only record the oracle reads.
#[derive(Default)]
struct History {
    events: Mutex<Vec<Event>>,
    marks: Mutex<BTreeMap<String, u64>>,
}

impl History {
    fn push(&self, event: Event) {
        self.events.lock().expect("history").push(event);
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
}

impl RecordingStore {
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
        self.inner.read(task_id)
    }

    fn cancel(
        &self,
        negotiated: Negotiated,
        caller: &str,
        task_id: &str,
        now_ms: u64,
    ) -> Result<Answer, StoreError> {
        let answer = self.inner.cancel(negotiated, caller, task_id, now_ms)?;
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
        self.inner.list(query)
    }

    fn claim(
        &self,
        worker: &str,
        now_ms: u64,
        lease_ms: u64,
        max: usize,
    ) -> Result<Vec<OutboxClaim>, StoreError> {
        let claims = self.inner.claim(worker, now_ms, lease_ms, max)?;
        for claim in &claims {
            if claim.attempt > 1 {
                self.history.mark("outbox-republished");
            }
        }
        Ok(claims)
    }

    fn ack(&self, task_id: &str, attempt: u32, now_ms: u64) -> Result<bool, StoreError> {
        self.inner.ack(task_id, attempt, now_ms)
    }

    fn release_expired_leases(&self, now_ms: u64) -> Result<usize, StoreError> {
        self.inner.release_expired_leases(now_ms)
    }

    fn sweep_expired(&self, now_ms: u64, max: usize) -> Result<usize, StoreError> {
        self.inner.sweep_expired(now_ms, max)
    }

    fn import(&self, records: &[TaskRecord]) -> Result<(), StoreError> {
        self.inner.import(records)
    }
}

/// The export tool: works a while, then commits one effect per task into the sink.
struct Export {
    sink: Arc<Mutex<BTreeMap<String, String>>>,
    history: Arc<History>,
    tool_ms: (u64, u64),
}

impl Tools for Export {
    fn run(&self, invocation: Invocation) -> BoxFuture<'static, TaskOutcome> {
        let sink = self.sink.clone();
        let history = self.history.clone();
        let (low, high) = self.tool_ms;
        let task_id = invocation.task.task_id;
        Box::pin(async move {
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
            TaskOutcome::Result {
                result: json!({
                    "content": [{ "type": "text", "text": format!("exported as {effect_id}") }],
                    "effect": effect_id,
                    "isError": false,
                }),
            }
        })
    }
}

/// Crash and delay at the runtime's named points.
struct SimProbe {
    history: Arc<History>,
    knobs: Knobs,
    /// This node's id, to restart it from inside (a crash exactly at the point).
    node: Arc<Mutex<Option<madsim::task::NodeId>>>,
    faults_on: Arc<std::sync::atomic::AtomicBool>,
}

impl Probe for SimProbe {
    fn at(&self, point: Point, task_id: &str) -> BoxFuture<'static, ()> {
        self.history.mark(format!("point:{}", point.name()));
        let faults_on = self.faults_on.load(std::sync::atomic::Ordering::SeqCst);
        let crash = faults_on
            && self.knobs.crash_points.contains(&point)
            && madsim::rand::random::<u64>() % 100 < self.knobs.point_crash_percent;
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
    queue: Arc<MemoryQueue>,
    sink: Arc<Mutex<BTreeMap<String, String>>>,
    history: Arc<History>,
    faults_on: Arc<std::sync::atomic::AtomicBool>,
}

impl Shared {
    fn runtime(&self, node: Arc<Mutex<Option<madsim::task::NodeId>>>) -> Arc<Runtime> {
        Arc::new(Runtime::new(
            self.store.clone(),
            self.queue.clone(),
            Arc::new(Export {
                sink: self.sink.clone(),
                history: self.history.clone(),
                tool_ms: self.scenario.tool_ms,
            }),
            Arc::new(SimEnv),
            Arc::new(SimProbe {
                history: self.history.clone(),
                knobs: self.knobs.clone(),
                node,
                faults_on: self.faults_on.clone(),
            }),
            RuntimeConfig {
                republish_after_ms: 1_000,
                queue_lease_ms: 1_000,
                idle_ms: 10,
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
    let revealed = |answer: &Answer| -> Vec<Revealed> {
        answer
            .record
            .iter()
            .map(|record| Revealed {
                task_id: record.task_id.clone(),
                auth_key: record.auth_key.clone(),
                status: record.status,
                version: record.version,
            })
            .collect()
    };
    let mut mine: Vec<String> = Vec::new();
    for n in 0..shared.scenario.tasks_per_tenant {
        let key = format!("{caller}#{n}");
        let request = WrappedRequest {
            method: "tools/call".into(),
            name: "export".into(),
            arguments: Some(json!({ "tenant": tenant, "n": n })),
        };
        // Create, retrying a lost answer with the same key (bounded).
        for _attempt in 0..5 {
            madsim::time::sleep(Duration::from_millis(
                1 + madsim::rand::random::<u64>() % 20,
            ))
            .await;
            let task_id = format!("{:032x}", madsim::rand::random::<u128>());
            let answer = shared.store.create(&CreateCommand {
                caller: caller.clone(),
                negotiated: Negotiated::FULL,
                task_support: TaskSupport::Optional,
                task_requested: true,
                idempotency_key: Some(key.clone()),
                request: request.clone(),
                ttl_ms: shared.scenario.ttl_ms,
                poll_interval_ms: Some(shared.scenario.poll_interval_ms),
                task_id,
                correlation_id: key.clone(),
                now_ms: SimEnv.now_ms(),
            });
            let op = ClientOp::Create {
                idempotency_key: Some(key.clone()),
                digest: request.digest().as_str().to_owned(),
            };
            let lost = madsim::rand::random::<u64>() % 100 < shared.knobs.lost_response_percent;
            match answer {
                Ok(_) if lost => record(op, ClientResult::Indeterminate),
                Ok(answer) => {
                    if let Some(record) = &answer.record {
                        mine.push(record.task_id.clone());
                    }
                    record(
                        op,
                        ClientResult::Ok {
                            decision: answer.decision,
                            revealed: revealed(&answer),
                        },
                    );
                    break;
                }
                Err(_) => record(op, ClientResult::Fail),
            }
        }
    }
    mine.dedup();
    // Poll each task until terminal (or expired), with the poll interval and jitter.
    let interval = shared.scenario.poll_interval_ms;
    for task_id in mine {
        for _poll in 0..2_000 {
            madsim::time::sleep(Duration::from_millis(
                interval + madsim::rand::random::<u64>() % (interval / 2 + 1),
            ))
            .await;
            let cancel_now = madsim::rand::random::<u64>() % 100 < shared.knobs.cancel_percent;
            if cancel_now
                && let Ok(answer) =
                    shared
                        .store
                        .cancel(Negotiated::FULL, &caller, &task_id, SimEnv.now_ms())
            {
                record(
                    ClientOp::Cancel {
                        task_id: task_id.clone(),
                    },
                    ClientResult::Ok {
                        decision: answer.decision,
                        revealed: revealed(&answer),
                    },
                );
            }
            let Ok(answer) = shared.store.get(&caller, &task_id, SimEnv.now_ms()) else {
                continue;
            };
            let terminal = answer
                .record
                .as_ref()
                .is_some_and(|r| r.status.is_terminal());
            let gone = answer.decision != Decision::ReturnStatus;
            record(
                ClientOp::Get {
                    task_id: task_id.clone(),
                },
                ClientResult::Ok {
                    decision: answer.decision,
                    revealed: revealed(&answer),
                },
            );
            if terminal {
                if let Ok(result) = shared.store.result(&caller, &task_id, SimEnv.now_ms()) {
                    record(
                        ClientOp::Result {
                            task_id: task_id.clone(),
                        },
                        ClientResult::Ok {
                            decision: result.decision,
                            revealed: revealed(&result),
                        },
                    );
                }
                break;
            }
            if gone {
                break;
            }
        }
    }
    if let Ok(page) = shared.store.list(&ListQuery {
        negotiated: Negotiated::FULL,
        caller: caller.clone(),
        cursor: None,
        limit: 100,
        now_ms: SimEnv.now_ms(),
    }) {
        let revealed = page
            .tasks
            .iter()
            .map(|record| Revealed {
                task_id: record.task_id.clone(),
                auth_key: record.auth_key.clone(),
                status: record.status,
                version: record.version,
            })
            .collect();
        record(
            ClientOp::List,
            ClientResult::Ok {
                decision: page.decision,
                revealed,
            },
        );
    }
}

/// The supervisor (node 0): builds the world, injects faults, heals, checks.
async fn simulate(scenario: Scenario, seed: u64) -> SimOutcome {
    let handle = Handle::current();
    let knobs = Knobs::draw(&scenario);
    let history = Arc::new(History::default());
    history.push(Event::Fault {
        what: format!("start {} seed {seed} knobs {knobs:?}", scenario.name),
        at_ms: SimEnv.now_ms(),
    });
    let store = Arc::new(RecordingStore {
        inner: MemoryStore::open(&StoreOptions {
            cursor_secret: Some(b"simulation".to_vec()),
        })
        .expect("a memory store with a given secret opens"),
        history: history.clone(),
    });
    let shared = Arc::new(Shared {
        scenario: scenario.clone(),
        knobs: knobs.clone(),
        store,
        queue: Arc::new(MemoryQueue::default()),
        sink: Arc::default(),
        history: history.clone(),
        faults_on: Arc::new(std::sync::atomic::AtomicBool::new(true)),
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
            let shared = shared.clone();
            handle
                .create_node()
                .name(format!("client-{tenant}"))
                .build()
                .spawn(client(shared, tenant))
        })
        .collect();

    // Safety phase: kills and restarts at random moments.
    for _ in 0..knobs.kills {
        let at = madsim::rand::random::<u64>() % scenario.safety_ms.max(1);
        madsim::time::sleep(Duration::from_millis(at / knobs.kills.max(1) as u64 + 1)).await;
        let victim = &killable[(madsim::rand::random::<u64>() % killable.len() as u64) as usize];
        history.mark("kill:random");
        history.push(Event::Fault {
            what: format!("kill node {}", victim.id()),
            at_ms: SimEnv.now_ms(),
        });
        handle.kill(victim.id());
        madsim::time::sleep(Duration::from_millis(
            50 + madsim::rand::random::<u64>() % 500,
        ))
        .await;
        handle.restart(victim.id());
    }
    madsim::time::sleep(Duration::from_millis(scenario.safety_ms)).await;
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
    madsim::time::sleep(Duration::from_millis(remaining.min(2_000))).await;
    let liveness_deadline_ms = SimEnv.now_ms();

    let events = history.events.lock().expect("history").clone();
    let violations = check::check(
        &events,
        &CheckContext {
            liveness_deadline_ms: Some(liveness_deadline_ms),
        },
    );
    let timeline: Vec<String> = events
        .iter()
        .map(|event| {
            let at = match event {
                Event::Client { at_ms, .. }
                | Event::Applied { at_ms, .. }
                | Event::Effect { at_ms, .. }
                | Event::Fault { at_ms, .. } => at_ms - SIM_EPOCH_MS,
            };
            format!("{at:>8} ms  {event:?}")
        })
        .collect();
    let trace_hash = sha256_hex(timeline.join("\n").as_bytes());
    let marks = history.marks.lock().expect("marks").clone();
    SimOutcome {
        scenario: scenario.name,
        seed,
        knobs: Some(knobs),
        violations,
        marks,
        trace_hash,
        events: events.len(),
        timeline,
    }
}
