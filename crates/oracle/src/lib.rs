//! # tasklatch-oracle
//!
//! The oracle: the invariants of docs/design.md §5 checked over a recorded history, apart
//! from the system under test. It links the contract's vocabulary and nothing of a store,
//! runtime or server (its dependencies show it), so what judges cannot share a bug with
//! what is judged. [`report`] writes the verdicts: whole-file writes, the commit named,
//! XML escaping for JUnit and SVG, budgets.
//!
//! The simulation records what clients invoked and what they got back (or that the answer
//! was lost), what the store applied and refused, what the outbox claimed and retired,
//! what the world injected, and what the effect sink committed. The checker reads only
//! that history: it never asks the store what it thinks of itself.
//!
//! One function per invariant (`invariants.rs`): I1 one terminal, I2 cancel wins, I3 no
//! stale write, I4 tenant isolation, I5 idempotent admission, I6 effect once (I17: and
//! only for a completed task, never before its completion was decided), I7 expiry,
//! I8 liveness, I9 result shape (a returned result is the wrapped request's
//! `CallToolResult` or its error, matching the status; when the clients spoke MCP, it also
//! carries the related-task `_meta` naming its task), I10 the stored record wins over
//! notifications, I19 pushed messages go to their caller and session and say what was
//! stored (`pushed.rs`), I20 tool runs are owed and workers write what a run of that
//! version returned (`runs.rs`); F1 store errors, F2 client failures and F3 refusals each explained by
//! an injected fault or the applied facts; C1–C4 the runtime's counters (duplicates
//! absorbed, claims, deliveries dropped, sweeps) each held to a rule (`accounting.rs`).

#![warn(missing_docs)]

mod accounting;
mod fields;
mod invariants;
mod pages;
mod pushed;
pub mod report;
mod runs;

// The contract under the name the checks have always used.
use tasklatch_contract as contract;

use crate::contract::{Decision, Era, InputMap, TaskOutcome, TaskStatus};
use std::collections::BTreeMap;
use std::fmt;

/// One thing that happened, in simulation order.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A client finished an operation on its side.
    Client {
        /// The client's name (`client-0`, …): one sequential actor.
        client: String,
        /// The caller identity the client authenticated as (`tenant/user`).
        caller: String,
        /// What the client invoked.
        op: ClientOp,
        /// What came back, if anything.
        result: ClientResult,
        /// Simulated wall-clock time the operation finished, in ms since the Unix epoch.
        at_ms: u64,
        /// How many events the history held when the request was sent: an answer may show
        /// any state from that point on (a server paused with the request in hand answers
        /// late, and truthfully). `None`: judged as if sent when answered.
        sent_after: Option<usize>,
    },
    /// The store applied a change (creation, transition, cancel), with the record after it.
    Applied {
        /// The task the change applied to.
        task_id: String,
        /// The task's owner (the record's `auth_key`).
        auth_key: String,
        /// Which store operation applied it.
        kind: AppliedKind,
        /// The version the write was conditioned on; `None` for a creation.
        expected_version: Option<u64>,
        /// The record's version after the change.
        version: u64,
        /// The record's status after the change.
        status: TaskStatus,
        /// The record's outcome after the change (`None` until terminal).
        outcome: Option<TaskOutcome>,
        /// The record's expiry instant in ms since the epoch; `None` without a TTL.
        expires_at_ms: Option<u64>,
        /// The command the store was given, as far as it shapes the record (I11 builds
        /// the expected record from it).
        asked: Box<Asked>,
        /// The record's remaining fields after the change, as the store answered them.
        stored: Box<Stored>,
        /// Simulated time of the change, in ms since the epoch.
        at_ms: u64,
    },
    /// A dispatcher claimed a task's outbox entry (the store reported these).
    Claimed {
        /// The task whose entry was claimed.
        task_id: String,
        /// The entry's claim count, this one included.
        attempt: u32,
        /// The task's status the claim reported.
        status: TaskStatus,
        /// The task's version the claim reported.
        version: u64,
        /// Simulated time, in ms since the epoch.
        at_ms: u64,
    },
    /// A dispatcher or worker acknowledged a claim of an outbox entry.
    Acked {
        /// The task whose entry was acknowledged.
        task_id: String,
        /// The claim acknowledged.
        attempt: u32,
        /// Whether the store retired the entry (false: another claim holds it).
        retired: bool,
        /// Simulated time, in ms since the epoch.
        at_ms: u64,
    },
    /// The store refused a write that names a task (a transition, cancel or answer that
    /// did not apply); F3 asks what explains it.
    Refused {
        /// The task the write named.
        task_id: String,
        /// The caller the write was made for.
        caller: String,
        /// Which write it was.
        kind: AppliedKind,
        /// The version the write was conditioned on, if any.
        expected_version: Option<u64>,
        /// The transition's target status (`None` for a cancel or an answer).
        next: Option<TaskStatus>,
        /// The keys an answer named (empty for a transition or a cancel).
        answered: Vec<String>,
        /// The store's decision.
        decision: Decision,
        /// Simulated time, in ms since the epoch.
        at_ms: u64,
    },
    /// A sweep of expired tasks deleted some.
    Swept {
        /// The most the sweep was allowed to delete.
        max: usize,
        /// How many it deleted.
        swept: usize,
        /// Simulated time, in ms since the epoch.
        at_ms: u64,
    },
    /// A fault the world injected, typed (the oracle explains errors with these).
    Injected {
        /// What was injected.
        what: Injection,
        /// Simulated time, in ms since the epoch.
        at_ms: u64,
    },
    /// The runtime noted a decision the oracle has a rule for (C1, C3).
    Runtime {
        /// What it noted.
        what: RuntimeNote,
        /// The task it concerned.
        task_id: String,
        /// Simulated time, in ms since the epoch.
        at_ms: u64,
    },
    /// A tool prepared its task's effect, invisibly (prepare → decide → publish).
    EffectPrepared {
        /// The task whose work prepared it.
        task_id: String,
        /// The effect's identity.
        effect_id: String,
        /// Simulated time, in ms since the epoch.
        at_ms: u64,
    },
    /// The effect sink published (committed, made visible) an effect.
    Effect {
        /// The task whose work produced the effect.
        task_id: String,
        /// The effect's identity; a completed result names it (I6).
        effect_id: String,
        /// Simulated time of the commit, in ms since the epoch.
        at_ms: u64,
    },
    /// A prepared effect was dropped unpublished (its task ended otherwise, or is gone).
    EffectDiscarded {
        /// The task whose prepared effect was dropped.
        task_id: String,
        /// Simulated time, in ms since the epoch.
        at_ms: u64,
    },
    /// The runtime announced a status change (`notifications/tasks/status`).
    Notified {
        /// The task announced.
        task_id: String,
        /// The status the notification carried.
        status: TaskStatus,
        /// The record version the notification was sent for.
        version: u64,
        /// Simulated time of the notification, in ms since the epoch.
        at_ms: u64,
    },
    /// The store under test answered an operation with an error (the world's own outage
    /// refusals are not these: they are explained by the outage the world injected).
    StoreError {
        /// The operation (`create`, `transition`, …).
        op: &'static str,
        /// The task it concerned, or empty.
        task_id: String,
        /// The error, as the store worded it.
        error: String,
        /// Simulated time, in ms since the epoch.
        at_ms: u64,
    },
    /// A message the server pushed to a client's session, as the client received it
    /// (I19: for the session's caller, meant for that session, saying what was stored).
    Pushed {
        /// The client that received it.
        client: String,
        /// The session it arrived on.
        session: String,
        /// The caller that session authenticated as.
        caller: String,
        /// What it said.
        message: Push,
        /// Simulated time the client read it, in ms since the epoch.
        at_ms: u64,
    },
    /// A client opened something a pushed message may later name: a progress token sent
    /// with a create, or a `subscriptions/listen` stream.
    Opened {
        /// The client.
        client: String,
        /// The session it opened it on.
        session: String,
        /// What it opened.
        what: Opening,
        /// Simulated time, in ms since the epoch.
        at_ms: u64,
    },
    /// A worker started its task's tool (I20: only for a task live when read, at the
    /// version its writes will name).
    ToolRun {
        /// The task run.
        task_id: String,
        /// The task's version the run was given.
        version: u64,
        /// When the worker read the task it decided to run, in ms since the epoch.
        read_at_ms: u64,
        /// Simulated time the run started, in ms since the epoch.
        at_ms: u64,
    },
    /// A tool run returned (a run killed on the way returns nothing).
    ToolReturned {
        /// The task run.
        task_id: String,
        /// The task's version the run was given.
        version: u64,
        /// The outcome it returned; `None`: it asked for input or declared a point of no
        /// return instead.
        outcome: Option<TaskOutcome>,
        /// Simulated time, in ms since the epoch.
        at_ms: u64,
    },
    /// A fault the supervisor injected, or a phase change.
    Fault {
        /// What happened, in words (`crash node 2 at …`, a phase name).
        what: String,
        /// Simulated time of the fault, in ms since the epoch.
        at_ms: u64,
    },
}

/// What a pushed message said, as the client read it.
#[derive(Clone, Debug, PartialEq)]
pub enum Push {
    /// A task's state: `notifications/tasks/status` (2025-11-25) or `notifications/tasks`
    /// on a `subscriptions/listen` stream (2026-07-28, with the outcome inlined once
    /// terminal).
    Status {
        /// The task as the message showed it (no version: the wire carries none).
        seen: Revealed,
        /// The listen stream's subscription id; `None` for a 2025-11-25 notification.
        subscription: Option<String>,
    },
    /// `notifications/progress`.
    Progress {
        /// The progress token it named.
        token: String,
    },
    /// A side request asking a task's question (2025-11-25: `elicitation/create`, …, with
    /// the related-task `_meta`).
    Ask {
        /// The task its related-task `_meta` named.
        task_id: String,
        /// The request's method.
        method: String,
        /// Its params, the related-task `_meta` taken out (and `_meta` itself, if that
        /// left it empty): what the task's stored question said.
        params: serde_json::Value,
        /// The task of the `tasks/result` call whose stream carried it; `None` when it came
        /// on the session's own stream.
        call: Option<String>,
    },
    /// A message the client could not read as any of these.
    Unreadable {
        /// Its method, if it had one.
        method: String,
        /// What was wrong with it.
        detail: String,
    },
}

impl Push {
    /// The task a status or a question is about (`None` for progress and unreadables,
    /// which name none).
    pub fn task_id(&self) -> Option<&str> {
        match self {
            Push::Status { seen, .. } => Some(&seen.task_id),
            Push::Ask { task_id, .. } => Some(task_id),
            Push::Progress { .. } | Push::Unreadable { .. } => None,
        }
    }
}

/// What a client opened that pushed messages may name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Opening {
    /// A create sent with `_meta.progressToken`.
    ProgressToken {
        /// The token.
        token: String,
    },
    /// An `initialize` declaring what the client can be asked on that session.
    Initialized {
        /// The side-request methods its capabilities allow (`elicitation/create`, …).
        methods: Vec<String>,
    },
    /// A `subscriptions/listen` request.
    Listen {
        /// Its id (every message of the stream names it).
        subscription: String,
        /// The tasks it asked to hear about.
        task_ids: Vec<String>,
    },
}

/// The command a write was given, as far as it shapes the record it leaves.
#[derive(Clone, Debug, PartialEq)]
pub enum Asked {
    /// An admission.
    Create {
        /// The TTL granted by the server (the command's `ttl_ms`).
        ttl_ms: Option<u64>,
        /// The poll interval the server suggests.
        poll_interval_ms: Option<u64>,
        /// The request's protocol era.
        era: Era,
        /// Answers admitted with the task (2026-07-28 multi round-trip input).
        input_responses: Option<InputMap>,
        /// The request's digest, as a client's create names it: ties the admission to the
        /// request that asked for it, whatever key the server bound it to. Empty: unknown.
        digest: String,
    },
    /// A status transition.
    Transition {
        /// The target status.
        next: TaskStatus,
        /// The outcome written (terminal writes).
        outcome: Option<TaskOutcome>,
        /// The message written, if any (`None` keeps the stored one).
        status_message: Option<String>,
        /// The questions written (a move to `input_required`).
        input_requests: Option<InputMap>,
        /// The irreversible effect a point of no return declares (`working` → `working`).
        irreversible_effect: Option<String>,
    },
    /// A cancel.
    Cancel,
    /// Answers to open questions.
    Input {
        /// The answers given, by key.
        responses: InputMap,
    },
}

/// The fields of a record an [`Event::Applied`] does not carry on its own.
#[derive(Clone, Debug, PartialEq)]
pub struct Stored {
    /// `createdAt`, ms since the epoch.
    pub created_at_ms: u64,
    /// `lastUpdatedAt`, ms since the epoch.
    pub updated_at_ms: u64,
    /// The granted TTL; `None`: unlimited.
    pub ttl_ms: Option<u64>,
    /// The suggested poll interval.
    pub poll_interval_ms: Option<u64>,
    /// `statusMessage`.
    pub status_message: Option<String>,
    /// The era the task is served in.
    pub era: Era,
    /// Set with a cancel.
    pub cancel_requested: bool,
    /// The open questions.
    pub input_requests: Option<InputMap>,
    /// The answers given.
    pub input_responses: Option<InputMap>,
    /// The irreversible effect declared at the task's point of no return.
    pub irreversible_effect: Option<String>,
}

/// A fault the world injected, for the oracle's accounting (F1, F2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Injection {
    /// The store node went down: every store call fails until it is back.
    StoreDown,
    /// The store node is back.
    StoreUp,
    /// An admission was given the id of a task already issued (the store must refuse it).
    IdCollision {
        /// The id reused.
        task_id: String,
    },
}

/// A runtime decision the oracle holds to a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuntimeNote {
    /// A worker dropped a delivery because the task was already terminal (C1).
    DuplicateAbsorbed,
    /// A worker dropped a delivery because the task was gone or expired (C3).
    ExpiredBeforeRun,
}

/// Which store operation an [`Event::Applied`] records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppliedKind {
    /// A task was admitted (`Decision::AcceptTask`).
    Create,
    /// A compare-and-swap status transition applied.
    Transition,
    /// A cancel applied (`Decision::ApplyCancel`).
    Cancel,
    /// Answers to open input requests applied (`Decision::ApplyInput`).
    Input,
}

/// A client operation, as invoked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientOp {
    /// `tools/call` as a task.
    Create {
        /// The idempotency key sent; `None` when the client sent none.
        idempotency_key: Option<String>,
        /// The request digest (`sha256:<hex>`) of the call the client sent.
        digest: String,
        /// The TTL the client asked for; `None`: it asked for none.
        ttl_ms: Option<u64>,
        /// The protocol era the client spoke.
        era: Era,
    },
    /// `tasks/get`.
    Get {
        /// The task polled.
        task_id: String,
    },
    /// `tasks/get` in the 2026-07-28 era: the status, and once terminal the outcome
    /// inlined (judged like a `tasks/result` of that era by I9).
    GetModern {
        /// The task polled.
        task_id: String,
    },
    /// `tasks/result`.
    Result {
        /// The task whose result was fetched.
        task_id: String,
    },
    /// `tasks/cancel`.
    Cancel {
        /// The task cancelled.
        task_id: String,
    },
    /// The requestor answered an `input_required` task (the server moves it to `working`).
    ProvideInput {
        /// The task answered.
        task_id: String,
        /// The answers sent (`tasks/update`); `None` for the 2025-11-25 path, which
        /// moves the task back to `working` without answers.
        responses: Option<InputMap>,
    },
    /// `tasks/list`, one page.
    List {
        /// The last task of the previous page (the cursor's position); `None`: the first.
        after: Option<String>,
        /// Whether the answer carried a `nextCursor`.
        next_cursor: bool,
    },
}

/// What the client got back.
#[derive(Clone, Debug, PartialEq)]
pub enum ClientResult {
    /// The answer arrived.
    Ok {
        /// The store's decision, as the answer reported it.
        decision: Decision,
        /// Task ids and statuses the answer revealed (one, or a list page), with owners.
        revealed: Vec<Revealed>,
    },
    /// The request failed before reaching the store (nothing happened).
    Fail {
        /// Answered "store unavailable" (`-32603`), rather than another error.
        unavailable: bool,
    },
    /// The answer was lost: the operation may or may not have happened.
    Indeterminate,
}

/// One task as an answer showed it to a client.
#[derive(Clone, Debug, PartialEq)]
pub struct Revealed {
    /// The task shown.
    pub task_id: String,
    /// The owner, when the answer says (a store answer does; the MCP wire never does).
    /// Empty otherwise: the oracle takes the owner from the store's creation fact anyway.
    pub auth_key: String,
    /// The status shown.
    pub status: TaskStatus,
    /// `None` when the answer carries no version (a `tasks/list` entry on the wire).
    pub version: Option<u64>,
    /// For `tasks/result`: the payload returned.
    pub outcome: Option<TaskOutcome>,
    /// The task's other fields, when the answer showed a wire `Task` (I12 compares them).
    pub fields: Option<Box<WireFields>>,
}

/// A wire `Task` object's fields beyond id and status, in either era.
#[derive(Clone, Debug, PartialEq)]
pub struct WireFields {
    /// The era whose shape the answer had (`ttl` or `ttlMs`, …).
    pub era: Era,
    /// `statusMessage`.
    pub status_message: Option<String>,
    /// `pollInterval` / `pollIntervalMs`.
    pub poll_interval_ms: Option<u64>,
    /// `ttl` / `ttlMs`; `None`: `null` (unlimited).
    pub ttl_ms: Option<u64>,
    /// `createdAt`, parsed.
    pub created_at_ms: u64,
    /// `lastUpdatedAt`, parsed.
    pub updated_at_ms: u64,
    /// `inputRequests` (2026-07-28 `tasks/get`).
    pub input_requests: Option<InputMap>,
    /// A field missing or unreadable, named; the others are then not judged.
    pub malformed: Option<String>,
}

impl WireFields {
    /// The fields of a wire `Task` beyond id and status, read independently of the server's
    /// own rendering (timestamps through humantime, not `wire::rfc3339`).
    pub fn parse(task: &serde_json::Value, era: Era) -> WireFields {
        let (ttl, poll) = match era {
            Era::Core2025 => ("ttl", "pollInterval"),
            Era::Extension2026 => ("ttlMs", "pollIntervalMs"),
        };
        let mut malformed = None;
        let mut fail = |what: String| {
            malformed.get_or_insert(what);
        };
        let mut time = |name: &str| match task[name].as_str().map(humantime::parse_rfc3339) {
            Some(Ok(at)) => at
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |since| since.as_millis() as u64),
            _ => {
                fail(format!("{name} missing or not RFC 3339: {}", task[name]));
                0
            }
        };
        let (created_at_ms, updated_at_ms) = (time("createdAt"), time("lastUpdatedAt"));
        let ttl_ms = match &task.get(ttl) {
            Some(serde_json::Value::Null) => None,
            Some(value) if value.is_u64() => value.as_u64(),
            other => {
                fail(format!(
                    "{ttl} must be present, a number or null: {other:?}"
                ));
                None
            }
        };
        let poll_interval_ms = match task.get(poll) {
            None => None,
            Some(value) if value.is_u64() => value.as_u64(),
            Some(other) => {
                fail(format!("{poll} must be a number: {other}"));
                None
            }
        };
        let status_message = match task.get("statusMessage") {
            None => None,
            Some(serde_json::Value::String(text)) => Some(text.clone()),
            Some(other) => {
                fail(format!("statusMessage must be a string: {other}"));
                None
            }
        };
        WireFields {
            era,
            status_message,
            poll_interval_ms,
            ttl_ms,
            created_at_ms,
            updated_at_ms,
            input_requests: task["inputRequests"].as_object().cloned(),
            malformed,
        }
    }
}

/// A broken invariant, with the events that show it.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    /// The invariant broken (`"I1"` … `"I10"`).
    pub invariant: &'static str,
    /// The task it was broken for.
    pub task_id: String,
    /// What went wrong, in words.
    pub detail: String,
    /// Indices into the history.
    pub events: Vec<usize>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} violated for task {}: {} (events {:?})",
            self.invariant, self.task_id, self.detail, self.events
        )
    }
}

/// What the checker needs besides the history.
#[derive(Clone, Debug, Default)]
pub struct CheckContext {
    /// Set when the run had a liveness phase that ended at this time: every accepted,
    /// unexpired task must be terminal by then (I8).
    pub liveness_deadline_ms: Option<u64>,
    /// The clients spoke MCP: every `tasks/result` answer must carry
    /// `_meta["io.modelcontextprotocol/related-task"]` naming its task (I9).
    pub wire: bool,
    /// The server's settings, when the run had one (I13, I14); checks that need them
    /// are skipped without.
    pub server: Option<ServerFacts>,
}

/// What the server under test was configured with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerFacts {
    /// The TTL a task gets when the request asks for none.
    pub ttl_ms_default: Option<u64>,
    /// The longest TTL granted.
    pub ttl_ms_max: u64,
    /// The poll interval suggested.
    pub poll_interval_ms: u64,
    /// The `tasks/list` page size asked of the store.
    pub list_page: usize,
}

/// Checks every invariant; returns all violations found (empty: the history is clean):
/// per task in task-id order, its violations by invariant (I1 … I10, I17); then the clients'
/// (I4, I5) in history order; then F1, F2, F3, C1 … C4, each in history order.
pub fn check(history: &[Event], context: &CheckContext) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut tasks: BTreeMap<&str, TaskFacts> = BTreeMap::new();
    for (index, event) in history.iter().enumerate() {
        match event {
            Event::Applied { task_id, .. } => tasks.entry(task_id).or_default().applied.push(index),
            Event::Effect { task_id, .. } => tasks.entry(task_id).or_default().effects.push(index),
            Event::EffectPrepared { task_id, .. } => {
                tasks.entry(task_id).or_default().prepared.push(index)
            }
            Event::EffectDiscarded { task_id, .. } => {
                tasks.entry(task_id).or_default().discarded.push(index)
            }
            Event::Notified { task_id, .. } => {
                tasks.entry(task_id).or_default().notified.push(index)
            }
            Event::Pushed { message, .. } => {
                if let Some(task_id) = message.task_id() {
                    tasks.entry(task_id).or_default().pushed.push(index);
                }
            }
            Event::Client {
                result: ClientResult::Ok { revealed, .. },
                ..
            } => {
                for seen in revealed {
                    tasks.entry(&seen.task_id).or_default().reads.push(index);
                }
            }
            _ => {}
        }
    }
    for (task_id, facts) in &tasks {
        let task = invariants::TaskView::new(history, task_id, facts);
        for invariant in invariants::PER_TASK {
            invariant(&task, context, &mut violations);
        }
        let records = fields::records(history, facts);
        fields::check_task(history, task_id, facts, &records, &mut violations);
        fields::i16_answers_reach_the_tool(task_id, &records, &mut violations);
        pushed::i19_said_as_stored(history, facts, &records, &mut violations);
    }
    invariants::i4_tenant_isolation(history, &mut violations);
    invariants::i5_idempotent_admission(history, &mut violations);
    invariants::i5_one_admission_per_key(history, &mut violations);
    invariants::f1_explained_store_errors(history, &mut violations);
    accounting::check(history, &mut violations);
    fields::i13_admitted_as_asked(history, context, &mut violations);
    pages::i14_list_pages(history, context, &mut violations);
    fields::i15_one_creation_per_id(history, &mut violations);
    pushed::i19_pushed_as_meant(history, &mut violations);
    runs::i20_runs_owed(history, &mut violations);
    violations
}

/// The events that concern one task, by kind (indices into the history).
#[derive(Default)]
struct TaskFacts {
    applied: Vec<usize>,
    effects: Vec<usize>,
    prepared: Vec<usize>,
    discarded: Vec<usize>,
    reads: Vec<usize>,
    notified: Vec<usize>,
    /// Pushed status messages and questions about the task.
    pushed: Vec<usize>,
}

fn violation(
    invariant: &'static str,
    task_id: &str,
    detail: String,
    events: Vec<usize>,
) -> Violation {
    Violation {
        invariant,
        task_id: task_id.to_owned(),
        detail,
        events,
    }
}

/// The fields in which two records differ, each with both values (`Debug`), in
/// [`TaskRecord`](crate::contract::TaskRecord)'s field order. Every field is named, so a field added to the record does
/// not compile here until it is compared too. The store engines (conformance, proptest)
/// word their failures from it.
pub fn record_differences(
    left: &crate::contract::TaskRecord,
    right: &crate::contract::TaskRecord,
) -> Vec<(&'static str, String, String)> {
    // One list: the destructuring pattern is exhaustive, so the list cannot miss a field.
    macro_rules! compare_all {
        ($($field:ident),*) => {{
            let crate::contract::TaskRecord { $($field),* } = left;
            let mut out = Vec::new();
            $(
                if *$field != right.$field {
                    out.push((
                        stringify!($field),
                        format!("{:?}", $field),
                        format!("{:?}", right.$field),
                    ));
                }
            )*
            out
        }};
    }
    compare_all!(
        task_id,
        auth_key,
        method,
        tool_name,
        request_digest,
        idempotency_key,
        status,
        version,
        created_at_ms,
        updated_at_ms,
        expires_at_ms,
        ttl_ms,
        poll_interval_ms,
        cancel_requested,
        outcome,
        status_message,
        correlation_id,
        era,
        input_requests,
        input_responses,
        irreversible_effect
    )
}
