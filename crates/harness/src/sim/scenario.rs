//! Declarative scenarios (`scenarios/*.json`, format `tasklatch.scenario/v1`): a workload
//! (tenants, tasks, workers, tool durations, TTLs, poll interval), fault budgets and the
//! choices each seed draws its knobs from (swarm testing), phase budgets, the default seed
//! range, and the coverage marks the default seeds must hit.

use crate::contract::Era;
use crate::runtime::Point;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The only schema string a scenario file carries.
pub const SCENARIO_SCHEMA: &str = "tasklatch.scenario/v1";

/// Every coverage mark the simulation can record; a scenario may require any of them.
pub const KNOWN_MARKS: &[&str] = &[
    "kill:after-outbox-claim",
    "kill:after-publish",
    "kill:after-claim",
    "kill:after-effect",
    "kill:after-prepare",
    "kill:after-decide",
    "kill:after-completion",
    "kill:random",
    "pause",
    "store-outage",
    "clock-jump",
    "duplicate-published",
    "delayed-delivery",
    "duplicate-absorbed",
    "effect-reused",
    "outbox-republished",
    "replay",
    "idempotent-terminal",
    "cancel-beat-completion",
    "completion-beat-cancel",
    "stale-write-refused",
    "expired-work-refused",
    "expired-before-run",
    "lost-response",
    "cross-tenant-refused",
    "cross-tenant-cancel-refused",
    "idempotency-collision-refused",
    "cancel-retried",
    "input-provided",
    "input-provided-by-update",
    "modern-client",
    "task-adopted-from-list",
    "tool-error",
    "protocol-error",
    "status-message-set",
    "input-asked",
    "client-ttl",
    "ttl-clamped",
    "ttl-zero",
    "server-poll-interval",
    "list-page:1",
    "list-page:max",
    "list-page:over-max",
    "list-page:zero",
    "list-multi-page",
    "list-exact-boundary",
    "sweep-full-batch",
    "id-collision-refused",
    "claim-of-finished-task",
    "answers-echoed",
    "cancel-beat-decide",
    "decide-beat-cancel",
    "effect-published-on-redelivery",
    "effect-discarded-on-redelivery",
    "effect-settled-by-sweeper",
    "irreversible-effect-performed",
    "cancel-beat-point-of-no-return",
    "cancel-acknowledged-past-point",
    "cancelled-past-point",
    "connection-lost",
    "change-fed",
    "reconnected",
    "completion-refused",
    "input-unasked",
    "completion-refused-stale",
    "pushed-status",
    "pushed-progress",
    "pushed-listen",
    "stream-closed",
    "result-call-blocked",
    "question-answered",
    "question-declined",
    "result-after-questions",
];

/// One scenario file: a workload, its faults and phases, the default seeds and the
/// marks they must hit.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// The format tag; [`SCENARIO_SCHEMA`].
    pub schema: String,
    /// The scenario's name; `by_name` loads `scenarios/<name>.json`.
    pub name: String,
    /// What the scenario exercises, in words.
    pub description: String,
    /// One client node per tenant.
    pub tenants: usize,
    /// Tasks each tenant's client creates.
    pub tasks_per_tenant: usize,
    /// Workers consuming the queue: worker nodes beside the dispatcher with an external
    /// queue, workers in each process with an in-process one.
    pub workers: usize,
    /// A tool run takes between these many milliseconds.
    pub tool_ms: [u64; 2],
    /// Requested TTL of every task; `null`: never expires.
    pub ttl_ms: Option<u64>,
    /// The longest TTL the server grants (requests are clamped to it); absent: no bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms_max: Option<u64>,
    /// How often clients poll a task, in ms (plus up to half again of jitter); also the
    /// `pollInterval` the server answers with.
    pub poll_interval_ms: u64,
    /// Length of the safety phase (faults on).
    pub safety_ms: u64,
    /// Budget of the liveness phase (faults off): every accepted, unexpired task must be
    /// terminal within it.
    pub liveness_ms: u64,
    /// `[first, end)` of the seeds `cargo test --features sim` runs.
    pub default_seeds: [u64; 2],
    /// Fault budgets and the knob choices seeds draw from.
    pub faults: Faults,
    /// Marks the default seeds must hit between them (a fault never injected is a test
    /// that cannot fail).
    pub marks: Vec<String>,
    /// The protocol eras clients speak; each client draws one per run (recorded in the
    /// plan). Absent: `["2025-11-25"]`, the only era before there were two.
    #[serde(default = "core_era_only", skip_serializing_if = "is_core_era_only")]
    pub client_eras: Vec<Era>,
    /// What runs where, and what a kill takes with it; absent: an external queue.
    #[serde(default, skip_serializing_if = "Deployment::is_external_queue")]
    pub deployment: Deployment,
    /// Whether clients hold streams and the oracle judges what the server pushes on them
    /// (`notifications/tasks/status`, progress, `subscriptions/listen`); absent: off, as
    /// in plans written before streams. Only an in-process deployment's workers tell the
    /// server of changes, so only there do the streams carry anything.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub streams: bool,
    /// A pinned run: these knobs and this fault schedule instead of the ones each seed
    /// draws. The minimiser writes it; absent in hand-written scenarios.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
}

/// The deployment a scenario simulates.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Deployment {
    /// Where the queue between the dispatcher and the workers lives.
    pub queue: QueueHome,
    /// Server processes sharing the store (an in-process queue only): each runs the MCP
    /// server, its queue, a dispatcher, `workers` workers and a sweeper, and dies whole.
    #[serde(default = "one_process")]
    pub processes: usize,
    /// Whether the store tells each process what the others wrote (PostgreSQL's
    /// `LISTEN/NOTIFY`); without it a blocked call in one process learns of another's write
    /// only by its safety re-read, as on one SQLite file.
    #[serde(default)]
    pub change_feed: bool,
}

/// Where the queue lives.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum QueueHome {
    /// A durable queue outside every node (a broker): it outlives the kills, and the
    /// dispatcher, each worker and the sweeper are nodes of their own; the clients speak to
    /// one MCP handler no kill reaches.
    #[default]
    External,
    /// What `tasklatch serve` runs: the queue is memory of the server process, and dies
    /// with it; only the store survives a kill.
    InProcess,
}

fn one_process() -> usize {
    1
}

impl Default for Deployment {
    fn default() -> Deployment {
        Deployment {
            queue: QueueHome::External,
            processes: 1,
            change_feed: false,
        }
    }
}

impl Deployment {
    /// Whether this is the default deployment (an external queue), written by no file.
    pub fn is_external_queue(&self) -> bool {
        *self == Deployment::default()
    }

    /// The nodes a kill or pause may hit: the dispatcher and the workers, or the processes.
    pub fn victims(&self, workers: usize) -> usize {
        match self.queue {
            QueueHome::External => workers + 1,
            QueueHome::InProcess => self.processes,
        }
    }

    fn validate(&self) -> Result<(), (&'static str, String)> {
        let fail = |message: &str| Err(("deployment", message.to_owned()));
        match self.queue {
            QueueHome::External if self.processes != 1 || self.change_feed => {
                fail("processes and change_feed need queue \"in-process\"")
            }
            QueueHome::InProcess if self.processes == 0 || self.processes > 8 => {
                fail("processes must be 1..=8")
            }
            QueueHome::InProcess if self.change_feed && self.processes == 1 => {
                fail("change_feed needs several processes")
            }
            _ => Ok(()),
        }
    }
}

fn core_era_only() -> Vec<Era> {
    vec![Era::Core2025]
}

fn is_core_era_only(eras: &[Era]) -> bool {
    eras == [Era::Core2025]
}

/// The knobs and fault schedule of one run.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// The run's knobs.
    pub knobs: Knobs,
    /// In the order they run; one at a time.
    pub faults: Vec<PlannedFault>,
    /// The era each tenant's client speaks, by tenant; empty: every client 2025-11-25
    /// (plans written before eras).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client_eras: Vec<Era>,
    /// The run's breadth knobs (failing tools, page and sweep sizes, id collisions); all
    /// off in plans written before they existed.
    #[serde(default, skip_serializing_if = "Breadth::is_off")]
    pub breadth: Breadth,
}

/// Knobs that widen what a run exercises rather than break it: tools that fail or leave
/// a message, the server's poll interval and list page, the sweeper's batch, admissions
/// given an id already issued. Drawn from the scenario's `faults` choices, after every
/// other draw and only where a scenario offers them, so older scenarios replay as before.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Breadth {
    /// Chance (percent, by task id) that the export tool ends in a tool error.
    #[serde(default)]
    pub tool_error_percent: u64,
    /// Chance (percent, by task id) that the export tool ends in a JSON-RPC error.
    #[serde(default)]
    pub protocol_error_percent: u64,
    /// Chance (percent, by task id) that a completed export leaves a status message.
    #[serde(default)]
    pub status_message_percent: u64,
    /// Chance (percent) that an admission is given the id of a task already issued.
    #[serde(default)]
    pub id_collision_percent: u64,
    /// The server's `pollInterval`; absent: the scenario's `poll_interval_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_poll_interval_ms: Option<u64>,
    /// The server's `tasks/list` page size asked of the store (0 and sizes past the
    /// store's maximum included: the store clamps); absent: 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_page: Option<usize>,
    /// The sweeper's batch; absent: 64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_batch: Option<usize>,
    /// Chance (percent, by task id) that the export tool's effect cannot be deferred: it
    /// declares a point of no return, then performs the effect and completes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub irreversible_percent: u64,
    /// Chance (percent, per run) that a run of a task that asks its requestor finds it
    /// need not ask this time (what it asks depends on data that changes between runs):
    /// two runs of one version then disagree, and one run's completion may arrive after
    /// the other's question was answered.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub input_unasked_percent: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl Breadth {
    /// Whether every knob is off (what plans before breadth existed mean).
    pub fn is_off(&self) -> bool {
        *self == Breadth::default()
    }

    /// The percentages, by field name, for validation and shrinking.
    pub(crate) fn percents_mut(&mut self) -> [(&'static str, &mut u64); 6] {
        [
            ("input_unasked_percent", &mut self.input_unasked_percent),
            ("tool_error_percent", &mut self.tool_error_percent),
            ("protocol_error_percent", &mut self.protocol_error_percent),
            ("status_message_percent", &mut self.status_message_percent),
            ("id_collision_percent", &mut self.id_collision_percent),
            ("irreversible_percent", &mut self.irreversible_percent),
        ]
    }
}

/// One fault the supervisor injects during the safety phase.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PlannedFault {
    /// When it begins, in simulated milliseconds after the safety phase began (a clock
    /// jump moves that clock too); never before the previous fault has ended.
    pub at_ms: u64,
    /// What the fault does.
    pub kind: FaultKind,
    /// The victim of a kill or pause: 0 is the dispatcher, `1..=workers` the workers (an
    /// external queue); the process, from 0 (an in-process one).
    pub node: usize,
    /// How long a kill keeps the node down, a pause holds it, the store stays down; how
    /// far a clock jump moves the clock.
    pub duration_ms: u64,
}

/// What a planned fault does.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// The node crashes and restarts after `duration_ms` (its memory lost, the store kept).
    Kill,
    /// The node stops running for `duration_ms`, then resumes where it was.
    Pause,
    /// The simulated clock jumps forward by `duration_ms`.
    ClockJump,
    /// The store node is unreachable for `duration_ms` (every call fails).
    StoreOutage,
}

impl FaultKind {
    /// The kind's kebab-case name, as the JSON and coverage marks write it.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Kill => "kill",
            FaultKind::Pause => "pause",
            FaultKind::ClockJump => "clock-jump",
            FaultKind::StoreOutage => "store-outage",
        }
    }

    /// Whether the fault strikes one runtime node (the others strike the store or clock).
    pub fn has_victim(self) -> bool {
        matches!(self, FaultKind::Kill | FaultKind::Pause)
    }
}

/// Fault knobs of one run, drawn from its seed and the scenario's choices (swarm
/// testing), recorded as the first event of its history, or pinned by a [`Plan`].
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Knobs {
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
    /// Chance (percent) that a published message is delivered twice.
    pub duplicate_percent: u64,
    /// Longest delay before a published message becomes visible.
    pub delivery_delay_ms_max: u64,
    /// Chance (percent) that a client also asks about another tenant's task.
    pub cross_tenant_percent: u64,
    /// Chance (percent) that a client reuses a key for a different request.
    pub key_reuse_percent: u64,
}

impl Knobs {
    /// The percentages, by field name, for validation and shrinking.
    pub(crate) fn percents_mut(&mut self) -> [(&'static str, &mut u64); 6] {
        [
            ("point_crash_percent", &mut self.point_crash_percent),
            ("lost_response_percent", &mut self.lost_response_percent),
            ("cancel_percent", &mut self.cancel_percent),
            ("duplicate_percent", &mut self.duplicate_percent),
            ("cross_tenant_percent", &mut self.cross_tenant_percent),
            ("key_reuse_percent", &mut self.key_reuse_percent),
        ]
    }
}

/// Fault budgets, and the choices a seed draws its knobs from.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Faults {
    /// Most node kills a run schedules (each run draws `0..=kills_max`).
    pub kills_max: usize,
    /// Most node pauses a run schedules (`0..=pauses_max`).
    pub pauses_max: usize,
    /// Named points where a node may crash (`after-effect`, …, or `all`).
    pub crash_points: Vec<String>,
    /// Choices of [`Knobs::point_crash_percent`]; a seed picks one.
    pub point_crash_percent: Vec<u64>,
    /// Choices of [`Knobs::probe_delay_ms_max`], in ms; a seed picks one.
    pub probe_delay_ms_max: Vec<u64>,
    /// Choices of [`Knobs::lost_response_percent`]; a seed picks one.
    pub lost_response_percent: Vec<u64>,
    /// Choices of [`Knobs::cancel_percent`]; a seed picks one.
    pub cancel_percent: Vec<u64>,
    /// Choices of [`Knobs::duplicate_percent`]; a seed picks one.
    pub duplicate_percent: Vec<u64>,
    /// Choices of [`Knobs::delivery_delay_ms_max`], in ms; a seed picks one.
    pub delivery_delay_ms_max: Vec<u64>,
    /// Most clock jumps a run schedules (`0..=clock_jumps_max`).
    pub clock_jumps_max: usize,
    /// `[min, max]` of a clock jump, in ms.
    pub clock_jump_ms: [u64; 2],
    /// Most store outages a run schedules (`0..=store_outages_max`).
    pub store_outages_max: usize,
    /// `[min, max]` of a store outage, in ms.
    pub store_outage_ms: [u64; 2],
    /// Chance (percent) that a client also pokes at another tenant's task (a get, a
    /// result or a cancel).
    pub cross_tenant_percent: Vec<u64>,
    /// Chance (percent) that a client reuses an idempotency key for a different request
    /// (the store must refuse it as a collision).
    pub key_reuse_percent: Vec<u64>,
    /// Choices of [`Breadth::tool_error_percent`]; absent: never.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_error_percent: Vec<u64>,
    /// Choices of [`Breadth::protocol_error_percent`]; absent: never.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protocol_error_percent: Vec<u64>,
    /// Choices of [`Breadth::status_message_percent`]; absent: never.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub status_message_percent: Vec<u64>,
    /// Choices of [`Breadth::id_collision_percent`]; absent: never.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub id_collision_percent: Vec<u64>,
    /// Choices of [`Breadth::server_poll_interval_ms`]; absent: the scenario's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_poll_interval_ms: Vec<u64>,
    /// Choices of [`Breadth::list_page`]; absent: 100.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub list_page: Vec<usize>,
    /// Choices of [`Breadth::sweep_batch`]; absent: 64.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sweep_batch: Vec<usize>,
    /// Choices of [`Breadth::irreversible_percent`]; absent: never.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub irreversible_percent: Vec<u64>,
    /// Choices of [`Breadth::input_unasked_percent`]; absent: never.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input_unasked_percent: Vec<u64>,
    /// The TTL a 2025-11-25 client asks for, drawn per task (`null`: none, the server's
    /// default); absent: the scenario's `ttl_ms`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client_ttl_ms: Vec<Option<u64>>,
}

impl Scenario {
    /// The directory scenarios are read from: `./scenarios`, else the workspace's.
    pub fn directory() -> PathBuf {
        let local = PathBuf::from("scenarios");
        if local.is_dir() {
            local
        } else {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
        }
    }

    /// Loads `scenarios/NAME.json`.
    pub fn by_name(name: &str) -> Result<Scenario, String> {
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(format!(
                "scenario name {name:?}: use letters, digits, - and _"
            ));
        }
        Scenario::load(&Scenario::directory().join(format!("{name}.json")))
    }

    /// Every scenario in the directory, by name.
    pub fn all() -> Result<Vec<Scenario>, String> {
        let directory = Scenario::directory();
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&directory)
            .map_err(|error| format!("{}: {error}", directory.display()))?
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
            .collect();
        paths.sort();
        paths.iter().map(|path| Scenario::load(path)).collect()
    }

    /// Loads and checks one scenario file; errors name the file, position and field.
    pub fn load(path: &Path) -> Result<Scenario, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("{}: cannot read: {error}", path.display()))?;
        Scenario::parse(path, &text)
    }

    /// Parses and checks scenario `text`; `path` only names the file in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Scenario, String> {
        let scenario: Scenario = crate::load::from_json_at(path, text)?;
        scenario
            .validate()
            .map_err(|(field, message)| format!("{}: {field}: {message}", path.display()))?;
        Ok(scenario)
    }

    /// Checks a scenario built or read by other means (embedded in a failure record, say);
    /// the error names the field.
    pub fn check(&self) -> Result<(), String> {
        self.validate()
            .map_err(|(field, message)| format!("{field}: {message}"))
    }

    /// The sizes, times and eras: every field outside `faults`, `plan` and `marks`.
    fn validate_shape(&self) -> Result<(), (&'static str, String)> {
        let fail = |field: &'static str, message: String| Err((field, message));
        if self.schema != SCENARIO_SCHEMA {
            return fail(
                "schema",
                format!("expected {SCENARIO_SCHEMA:?}, got {:?}", self.schema),
            );
        }
        if self.tenants == 0 || self.tenants > 64 {
            return fail("tenants", "must be 1..=64".into());
        }
        if self.workers == 0 || self.workers > 64 {
            return fail("workers", "must be 1..=64".into());
        }
        if self.tasks_per_tenant == 0 || self.tasks_per_tenant > 1_000 {
            return fail("tasks_per_tenant", "must be 1..=1000".into());
        }
        if self.tool_ms[0] > self.tool_ms[1] {
            return fail("tool_ms", "must be [low, high] with low <= high".into());
        }
        if self.poll_interval_ms == 0 {
            return fail("poll_interval_ms", "must be positive".into());
        }
        if self.client_eras.is_empty()
            || (1..self.client_eras.len())
                .any(|at| self.client_eras[..at].contains(&self.client_eras[at]))
        {
            return fail(
                "client_eras",
                "must name at least one era, each once (\"2025-11-25\", \"2026-07-28\")".into(),
            );
        }
        if self.default_seeds[0] >= self.default_seeds[1] {
            return fail(
                "default_seeds",
                "must be [first, end) with first < end".into(),
            );
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), (&'static str, String)> {
        let fail = |field: &'static str, message: String| Err((field, message));
        self.validate_shape()?;
        self.deployment.validate()?;
        self.validate_faults()?;
        self.crash_points()
            .map_err(|message| ("faults.crash_points", message))?;
        if let Some(plan) = &self.plan {
            self.validate_plan(plan)?;
        }
        if let Some(unknown) = self
            .marks
            .iter()
            .find(|mark| !KNOWN_MARKS.contains(&mark.as_str()))
        {
            return fail(
                "marks",
                format!(
                    "unknown mark {unknown:?} (known: {})",
                    KNOWN_MARKS.join(", ")
                ),
            );
        }
        Ok(())
    }

    /// Every fault's choices: present where a draw needs one, each within its bound.
    fn validate_faults(&self) -> Result<(), (&'static str, String)> {
        let fail = |field: &'static str, message: String| Err((field, message));
        let faults = &self.faults;
        for (field, choices, max) in [
            (
                "faults.point_crash_percent",
                &faults.point_crash_percent,
                100,
            ),
            (
                "faults.probe_delay_ms_max",
                &faults.probe_delay_ms_max,
                60_000,
            ),
            (
                "faults.lost_response_percent",
                &faults.lost_response_percent,
                100,
            ),
            ("faults.cancel_percent", &faults.cancel_percent, 100),
            ("faults.duplicate_percent", &faults.duplicate_percent, 100),
            (
                "faults.delivery_delay_ms_max",
                &faults.delivery_delay_ms_max,
                60_000,
            ),
            (
                "faults.cross_tenant_percent",
                &faults.cross_tenant_percent,
                100,
            ),
            ("faults.key_reuse_percent", &faults.key_reuse_percent, 100),
        ] {
            if choices.is_empty() {
                return fail(field, "needs at least one choice".into());
            }
            if let Some(bad) = choices.iter().find(|choice| **choice > max) {
                return fail(field, format!("{bad} is above {max}"));
            }
        }
        validate_breadth_choices(faults)?;
        // Page and batch sizes may be 0 or past the store's maximum: the store and the
        // runtime clamp them, and that is the edge a scenario means to reach.
        for (field, choices) in [
            ("faults.list_page", &faults.list_page),
            ("faults.sweep_batch", &faults.sweep_batch),
        ] {
            if let Some(bad) = choices.iter().find(|choice| **choice > 100_000) {
                return fail(field, format!("{bad} is above 100000"));
            }
        }
        if let Some(Some(bad)) = faults
            .client_ttl_ms
            .iter()
            .find(|ttl| ttl.is_some_and(|ttl| ttl > 1_000_000_000_000))
        {
            return fail("faults.client_ttl_ms", format!("{bad} is above 10^12"));
        }
        for (field, range) in [
            ("faults.clock_jump_ms", faults.clock_jump_ms),
            ("faults.store_outage_ms", faults.store_outage_ms),
        ] {
            if range[0] > range[1] {
                return fail(field, "must be [low, high] with low <= high".into());
            }
        }
        Ok(())
    }

    fn validate_plan(&self, plan: &Plan) -> Result<(), (&'static str, String)> {
        if !plan.client_eras.is_empty()
            && (plan.client_eras.len() != self.tenants
                || plan
                    .client_eras
                    .iter()
                    .any(|era| !self.client_eras.contains(era)))
        {
            return Err((
                "plan.client_eras",
                format!(
                    "must name one of the scenario's client_eras for each of the {} tenants",
                    self.tenants
                ),
            ));
        }
        let mut knobs = plan.knobs.clone();
        for (field, percent) in knobs.percents_mut() {
            if *percent > 100 {
                return Err(("plan.knobs", format!("{field}: {percent} is above 100")));
            }
        }
        let mut breadth = plan.breadth.clone();
        for (field, percent) in breadth.percents_mut() {
            if *percent > 100 {
                return Err(("plan.breadth", format!("{field}: {percent} is above 100")));
            }
        }
        for (index, fault) in plan.faults.iter().enumerate() {
            let victims = self.deployment.victims(self.workers);
            if fault.kind.has_victim() && fault.node >= victims {
                let nodes = match self.deployment.queue {
                    QueueHome::External => {
                        format!("0 is the dispatcher, 1..={} the workers", self.workers)
                    }
                    QueueHome::InProcess => format!("0..{victims} are the processes"),
                };
                return Err((
                    "plan.faults",
                    format!(
                        "[{index}].node {} names no runtime node ({nodes})",
                        fault.node
                    ),
                ));
            }
            if fault.at_ms > self.safety_ms {
                return Err((
                    "plan.faults",
                    format!(
                        "[{index}].at_ms {} is after the safety phase ({} ms)",
                        fault.at_ms, self.safety_ms
                    ),
                ));
            }
            if fault.duration_ms > 3_600_000 {
                return Err((
                    "plan.faults",
                    format!(
                        "[{index}].duration_ms {} is above an hour",
                        fault.duration_ms
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The crash points named by `faults.crash_points`.
    pub fn crash_points(&self) -> Result<Vec<Point>, String> {
        let mut points = Vec::new();
        for name in &self.faults.crash_points {
            if name == "all" {
                points.extend(Point::ALL);
                continue;
            }
            points.push(Point::parse(name).map_err(|error| format!("{error}, or all"))?);
        }
        points.sort();
        points.dedup();
        Ok(points)
    }

    /// The `default_seeds` field, `[first, end)`, as a range.
    pub fn default_seeds(&self) -> std::ops::Range<u64> {
        self.default_seeds[0]..self.default_seeds[1]
    }
}

/// The breadth choices (optional: an empty list is off) are within their bounds.
fn validate_breadth_choices(faults: &Faults) -> Result<(), (&'static str, String)> {
    for (field, choices, max) in [
        ("faults.tool_error_percent", &faults.tool_error_percent, 100),
        (
            "faults.protocol_error_percent",
            &faults.protocol_error_percent,
            100,
        ),
        (
            "faults.status_message_percent",
            &faults.status_message_percent,
            100,
        ),
        (
            "faults.id_collision_percent",
            &faults.id_collision_percent,
            100,
        ),
        (
            "faults.irreversible_percent",
            &faults.irreversible_percent,
            100,
        ),
        (
            "faults.input_unasked_percent",
            &faults.input_unasked_percent,
            100,
        ),
        (
            "faults.server_poll_interval_ms",
            &faults.server_poll_interval_ms,
            3_600_000,
        ),
    ] {
        if let Some(bad) = choices.iter().find(|choice| **choice > max) {
            return Err((field, format!("{bad} is above {max}")));
        }
    }
    Ok(())
}
