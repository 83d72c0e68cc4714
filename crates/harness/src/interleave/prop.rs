//! The proptest state machine: a store driven by interleaved `(actor, operation)` steps and
//! compared, step by step and field by field, with a reference model of the contract.
//!
//! Actors are clients of [`TENANTS`] tenants and [`WORKERS`] workers, plus the sweeper, the
//! lease reaper and clock advances:
//!
//! - clients create (with or without an idempotency key; the TTL, `pollInterval`, era and
//!   answers given at admission drawn; sometimes with an id already issued, which the store
//!   must refuse with `StoreError::Duplicate` while that task exists and admit afresh once
//!   it was swept), get, result, cancel, answer input requests (`tasks/update`: open keys,
//!   answered ones, a key never asked), and list (page sizes from 0 to past
//!   [`LIST_LIMIT_MAX`], with no cursor, their own, or another tenant's);
//! - workers claim outbox entries (0 or 1 per call), write a status with the version they
//!   saw at the claim or made with their last write — possibly stale — or with another
//!   tenant's key (a status message of four kinds; an outcome of four shapes on a terminal
//!   status; questions on `input_required`), ack a terminal write, finish a run that
//!   prepared a deferred effect (decide, settle, ack: `runtime::effect`, whose helpers the
//!   step calls, so the order of decide and publish is under test), declare their run's
//!   point of no return, or crash;
//! - the sweeper deletes at most `max` expired tasks, in `(expires_at, task id)` order;
//!   the reaper frees lapsed leases.
//!
//! Steps are aimed where they tell something: a step on one task mostly addresses a task
//! that exists and comes from its owner; answers come often, and mostly to a task that
//! asks, while one does; a worker whose task asks often goes back to work unanswered.
//! Creates are the most frequent step, so a case holds several tasks per tenant.
//!
//! Interleaving happens at store-operation granularity, which is where stale versions,
//! broken latches and cross-tenant reads live; inside one operation is loom's job, timing
//! and crashes the simulation's.
//!
//! The model is written apart from `contract::guard_*` and from the record builders
//! (`CreateCommand::admission_record`, `store::applied_transition`,
//! `store::cancelled_record`, `TaskRecord::with_input`, `store::input_decision`): it states
//! the rules again, plainly, so a mutant planted in a guard or a builder is caught by the
//! disagreement. Every answer that carries a record is compared in full, every
//! `TaskRecord` field ([`TaskRecord`]); a list page task by task; a claim with every
//! `OutboxClaim` field; refusals, sweeps and lease releases by their counts. After every
//! step the whole store is read back and every live task compared in full, so a store that
//! answered right but wrote wrong is caught too. A mismatch names the fields that differ;
//! a failure shrinks (proptest-state-machine drops and simplifies steps) to a short
//! sequence.
//!
//! The rules, as the model restates them (the contract's, read from `store` and
//! `contract::record`):
//!
//! - **admission**: `working`, version 1, `created_at = updated_at = now`, `ttl` and
//!   `pollInterval` as asked, `expires_at = now + ttl` (saturating; none without a TTL),
//!   the era as asked, the answers given at admission only if there is at least one, no
//!   message, outcome or questions, no cancellation intent; the correlation id and
//!   idempotency key as sent. An id that exists (expired or not) is refused as a duplicate
//!   and nothing changes — the expired task whose key the call would rebind keeps it.
//! - **transition**: status `next`, version + 1, `updated_at = max(updated_at, now)`; the
//!   outcome is the command's on a terminal status (`cancelled` included); a new message
//!   replaces the old one (`""` included), none keeps it; the questions are the command's
//!   on `input_required`, none on `working`, and kept otherwise (a task that ends while it
//!   asks keeps its open questions); answers are kept.
//! - **cancel**: a transition to `cancelled` that sets the cancellation intent and the
//!   message `store::CANCEL_MESSAGE` (past a point of no return, followed by `past its
//!   point of no return: EFFECT was started and is not undone`); outcome and questions
//!   untouched. A 2026-07-28 task past its point of no return acknowledges the cancel
//!   (`PAST_POINT_OF_NO_RETURN`) and nothing changes.
//! - **declare** (the point of no return): located as a write, then a terminal task is a
//!   rewrite, a version other than the one held is stale, a task not `working` or that
//!   declared already is illegal; applied, version + 1, `updated_at = max(updated_at, now)`,
//!   the effect named and the message `past its point of no return: EFFECT`.
//! - **answer input**: located like a write (not found → not yours → expired), then a
//!   terminal task is `ALREADY_TERMINAL`; a task not in `input_required` with open
//!   questions, or an answer with no open key, is `IGNORE_INPUT` (nothing changes); else
//!   `APPLY_INPUT`: each answered open key leaves the questions and joins the answers
//!   (other keys are ignored), version + 1, `updated_at = max(updated_at, now)`, and once
//!   no question is open the task is `working` with none.
//! - **list**: the page size is clamped to `1..=LIST_LIMIT_MAX`; a next cursor comes only
//!   when more tasks follow the page.
//! - **finish**: the effect is prepared (unless published), then a transition to
//!   `completed` as the owner at the held version; a completed task publishes the effect
//!   once, any other terminal status and a task gone or expired unfinished discard it, a
//!   stale or illegal write leaves it prepared; the entry is acked once the task is
//!   terminal (whoever ended it). The prepared and published sets are compared after every
//!   step.
//! - **claim**: the ready entries (unacked, lease free or lapsed) oldest first by
//!   `(created_at, task id)`, at most `max`; **release** frees every unacked lease lapsed
//!   at `now` and counts them; **sweep** deletes the `max` first expired tasks by
//!   `(expires_at, task id)`, with their keys and outbox entries.
//!
//! A worker never asks a question the task holds an answer to (the store's precondition,
//! which it does not check: the record's invariants would panic), so a write to
//! `input_required` asks `q0` and `q1` less those answered, and is not generated when both
//! are.

use crate::contract::{
    Decision, Era, InputMap, Negotiated, TaskOutcome, TaskRecord, TaskStatus, TaskSupport,
};
use crate::runtime::effect::{self, MemoryEffects, Settled};
use crate::store::{
    CANCEL_MESSAGE, CreateCommand, InputCommand, LIST_LIMIT_MAX, ListQuery, OutboxClaim,
    StoreError, StoreFactory, StoreOptions, TaskStore, TransitionCommand, WrappedRequest,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// Tenants (clients) in a case.
pub const TENANTS: u8 = 3;
/// Workers in a case.
pub const WORKERS: u8 = 2;
/// Steps per case at most (the everyday run; shrinking only shortens).
pub const STEPS_MAX: usize = 40;
/// How long a claim's lease lasts.
pub const LEASE_MS: u64 = 400;
/// The fixed seed of the everyday run (`PROPTEST_RNG_SEED` overrides it in the tests).
pub const EVERYDAY_SEED: u64 = 0x7a5c_1a7c;
/// An address no task ever has.
const MISSING_TASK: &str = "t-missing";
/// The time-to-live a create asks for, by the step's choice.
const TTL_CHOICES_MS: [Option<u64>; 5] = [None, Some(0), Some(300), Some(1_234), Some(3_000)];
/// The `pollInterval` a create suggests, by the step's choice.
const POLL_CHOICES_MS: [Option<u64>; 4] = [None, Some(0), Some(250), Some(1 << 40)];
/// The status message a write carries, by the step's choice.
const MESSAGE_CHOICES: [Option<&str>; 4] = [None, Some(""), Some("m"), Some("ü✓")];
/// Page sizes a list asks for: 0 and past the maximum are clamped by the store.
const LIST_LIMITS: [usize; 6] = [0, 1, 2, 3, LIST_LIMIT_MAX, LIST_LIMIT_MAX + 1];
/// How many tasks a sweep may delete.
const SWEEP_MAXES: [usize; 4] = [0, 1, 2, usize::MAX];
/// The questions a write to `input_required` asks (less those the task holds answers to).
const QUESTIONS: [&str; 2] = ["q0", "q1"];
/// An answer key no write ever asks.
const UNASKED: &str = "q-unasked";
/// The tool every create calls.
const TOOL: &str = "export";

/// One step: an actor and what it does.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// A client calls `tools/call` ([`CreateStep`]).
    Create(CreateStep),
    /// A client polls a task with `tasks/get`.
    Get {
        /// The client's tenant, `0..TENANTS`.
        tenant: u8,
        /// Which task: the `task`-th most recent admitted (modulo their count); 7 addresses
        /// a task that does not exist.
        task: u8,
    },
    /// A client fetches a task's result with `tasks/result`.
    Result {
        /// The client's tenant, `0..TENANTS`.
        tenant: u8,
        /// Which task, as for [`Step::Get`].
        task: u8,
    },
    /// A client cancels a task with `tasks/cancel`.
    Cancel {
        /// The client's tenant, `0..TENANTS`.
        tenant: u8,
        /// Which task, as for [`Step::Get`].
        task: u8,
        /// Negotiated capability bits (1 tools/call, 2 cancel, 4 list).
        negotiated: u8,
    },
    /// A client answers a task's input requests with `tasks/update`.
    AnswerInput {
        /// The client's tenant, `0..TENANTS`.
        tenant: u8,
        /// Which task, as for [`Step::Get`].
        task: u8,
        /// Which keys it answers: bit 0 `q0`, bit 1 `q1`, bit 2 a key never asked (0: an
        /// empty answer).
        keys: u8,
    },
    /// A client lists its tasks, one page.
    List {
        /// The client's tenant, `0..TENANTS`.
        tenant: u8,
        /// Negotiated capability bits (1 tools/call, 2 cancel, 4 list).
        negotiated: u8,
        /// Which cursor the request carries.
        cursor: CursorUse,
        /// The page size asked for (the store clamps it to `1..=LIST_LIMIT_MAX`).
        limit: usize,
    },
    /// A worker claims the oldest ready outbox entries (unacked, lease free or lapsed).
    Claim {
        /// The worker, `0..WORKERS`.
        worker: u8,
        /// At most this many (0 or 1); the worker holds the one it got.
        max: usize,
    },
    /// The worker writes `next` with the version it claimed at; `foreign` writes with
    /// another tenant's key instead of the task's own.
    Write {
        /// The worker, `0..WORKERS`; it must hold a claim.
        worker: u8,
        /// Index (mod 5) into completed, failed, input_required, working, cancelled.
        next: u8,
        /// Write as the next tenant instead of the task's owner.
        foreign: bool,
        /// The status message sent (`None` keeps the stored one).
        message: Option<&'static str>,
        /// With a terminal `next`, the outcome sent: index (mod 4) into a result, an
        /// `isError` result, a JSON-RPC error with data and one without.
        outcome: u8,
    },
    /// The worker finishes a run that prepared a deferred effect: decide (the completion
    /// compare-and-swap at the version it holds, as the task's owner), settle the effect by
    /// what the store then holds (`runtime::effect`), and ack once the task is terminal.
    Finish {
        /// The worker, `0..WORKERS`; it must hold a claim.
        worker: u8,
        /// The outcome sent: index (mod 4) as for [`Step::Write`].
        outcome: u8,
    },
    /// The worker declares its run's point of no return (`working` → `working` at the
    /// version it holds, naming the effect), as the runtime does before an irreversible
    /// effect.
    Declare {
        /// The worker, `0..WORKERS`; it must hold a claim.
        worker: u8,
    },
    /// A worker crashes: its claim is dropped unacked, the lease left to lapse.
    Crash {
        /// The worker, `0..WORKERS`; it must hold a claim.
        worker: u8,
    },
    /// The reaper frees every lapsed lease.
    Release,
    /// The sweeper deletes expired tasks.
    Sweep {
        /// At most this many.
        max: usize,
    },
    /// The clock moves forward.
    Advance {
        /// How far, in ms.
        ms: u16,
    },
}

/// A client's `tools/call`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CreateStep {
    /// The caller's tenant, `0..TENANTS`.
    pub tenant: u8,
    /// The idempotency key (`0..3`); `None` sends none.
    pub key: Option<u8>,
    /// Which of two argument sets the call carries: same key, other args is a collision.
    pub args: u8,
    /// Index into optional, required, forbidden.
    pub support: u8,
    /// The call asks for a task.
    pub task: bool,
    /// Negotiated capability bits: tools/call, cancel, list.
    pub negotiated: u8,
    /// Index into `TTL_CHOICES_MS`.
    pub ttl: u8,
    /// Index into `POLL_CHOICES_MS`.
    pub poll: u8,
    /// The era of the request.
    pub era: Era,
    /// The answers the request brings: index (mod 4) into none, an empty set, one key no
    /// question uses, and `q1` (which no write then asks).
    pub responses: u8,
    /// Reuse an id already issued (the `collide`-th most recent, as [`Step::Get`] counts)
    /// instead of a fresh one; `None` (or no id issued yet): a fresh id.
    pub collide: Option<u8>,
}

/// Which cursor a list step sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CursorUse {
    /// No cursor: the first page.
    First,
    /// The tenant's own next-page cursor from its last page (first page if none).
    Resume,
    /// The next tenant's cursor (first page if it holds none).
    Foreign,
}

const WRITE_TARGETS: [TaskStatus; 5] = [
    TaskStatus::Completed,
    TaskStatus::Failed,
    TaskStatus::InputRequired,
    TaskStatus::Working,
    TaskStatus::Cancelled,
];

/// The irreversible effect a [`Step::Declare`] names.
fn declared_effect(task_id: &str) -> String {
    format!("POST https://hooks.example/{task_id}")
}

fn write_target(next: u8) -> TaskStatus {
    WRITE_TARGETS[usize::from(next) % WRITE_TARGETS.len()]
}

fn negotiated_of(bits: u8) -> Negotiated {
    Negotiated {
        tools_call: bits & 1 != 0,
        cancel: bits & 2 != 0,
        list: bits & 4 != 0,
    }
}

fn support_of(choice: u8) -> TaskSupport {
    [
        TaskSupport::Optional,
        TaskSupport::Required,
        TaskSupport::Forbidden,
    ][usize::from(choice % 3)]
}

fn caller_of(tenant: u8) -> String {
    format!("tenant-{tenant}")
}

fn key_of(key: u8) -> String {
    format!("key-{key}")
}

fn ttl_of(choice: u8) -> Option<u64> {
    TTL_CHOICES_MS[usize::from(choice) % TTL_CHOICES_MS.len()]
}

fn poll_of(choice: u8) -> Option<u64> {
    POLL_CHOICES_MS[usize::from(choice) % POLL_CHOICES_MS.len()]
}

/// The request a create with argument set `args` wraps.
fn request_of(args: u8) -> WrappedRequest {
    WrappedRequest {
        method: "tools/call".into(),
        name: TOOL.into(),
        arguments: Some(json!({ "n": args })),
    }
}

/// Answers by key, as the model keeps them (ordered, whatever `InputMap` is).
pub type Answers = BTreeMap<String, Value>;

fn input_map(answers: &Answers) -> InputMap {
    answers
        .iter()
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

/// The answers a create brings, by [`CreateStep::responses`].
fn admission_answers(choice: u8) -> Option<Answers> {
    match choice % 4 {
        0 => None,
        1 => Some(Answers::new()),
        2 => Some(Answers::from([("region".to_owned(), json!("eu"))])),
        _ => Some(Answers::from([(
            QUESTIONS[1].to_owned(),
            json!({ "early": true }),
        )])),
    }
}

/// The outcome a terminal write sends, by the `outcome` of a [`Step::Write`].
fn outcome_of(choice: u8) -> TaskOutcome {
    match choice % 4 {
        0 => TaskOutcome::Result {
            result: json!({ "content": [{ "type": "text", "text": "done" }], "isError": false }),
        },
        1 => TaskOutcome::Result {
            result: json!({ "content": [], "isError": true }),
        },
        2 => TaskOutcome::RpcError {
            code: -32603,
            message: "tool crashed".into(),
            data: Some(json!({ "detail": "ü✓", "retry": false })),
        },
        _ => TaskOutcome::RpcError {
            code: -32602,
            message: "bad arguments".into(),
            data: None,
        },
    }
}

/// The question a write asks under `key`.
fn question_of(key: &str) -> Value {
    json!({ "method": "elicitation/create", "ask": key })
}

/// The answer a client gives to `key` at `now_ms`.
fn answer_of(key: &str, now_ms: u64) -> Value {
    json!({ "answer": key, "at": now_ms })
}

/// The keys a [`Step::AnswerInput`] answers, in order.
fn answered_keys(keys: u8) -> Vec<&'static str> {
    [QUESTIONS[0], QUESTIONS[1], UNASKED]
        .into_iter()
        .enumerate()
        .filter(|(bit, _)| keys & (1 << bit) != 0)
        .map(|(_, key)| key)
        .collect()
}

/// `field: store …, model …` for every named field in which `$got` and `$want` differ,
/// joined with `; `.
macro_rules! field_differences {
    ($got:expr, $want:expr, $($field:ident),* $(,)?) => {{
        let mut out: Vec<String> = Vec::new();
        $(
            if $got.$field != $want.$field {
                out.push(format!(
                    "{}: store {:?}, model {:?}",
                    stringify!($field),
                    $got.$field,
                    $want.$field
                ));
            }
        )*
        out.join("; ")
    }};
}

/// `field: store …, model …` for every field in which a store's record differs from the
/// model's, joined with `; `.
fn record_differences(got: &TaskRecord, want: &TaskRecord) -> String {
    crate::check::record_differences(got, want)
        .into_iter()
        .map(|(field, got, want)| format!("{field}: store {got}, model {want}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The same for a claim ([`OutboxClaim`], every field named: a field added there does not
/// compile here until the model states it too).
fn claim_differences(got: &OutboxClaim, want: &OutboxClaim) -> String {
    let OutboxClaim {
        task_id: _,
        auth_key: _,
        request: _,
        attempt: _,
        lease_expires_at_ms: _,
        task_version: _,
        task_status: _,
    } = got;
    field_differences!(
        got,
        want,
        task_id,
        auth_key,
        request,
        attempt,
        lease_expires_at_ms,
        task_version,
        task_status,
    )
}

/// The model's record of one task.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelTask {
    /// The owning tenant.
    pub owner: u8,
    /// The idempotency key it holds; `None` without one or once rebound by a later call.
    pub key: Option<u8>,
    /// The argument set it was created with ([`CreateStep::args`]).
    pub args: u8,
    /// The correlation id it was admitted with.
    pub correlation_id: String,
    /// The era it was created in.
    pub era: Era,
    /// Its current status.
    pub status: TaskStatus,
    /// Its current version (1 at creation, +1 per applied change).
    pub version: u64,
    /// Creation time on the model clock, in ms.
    pub created_at_ms: u64,
    /// Time of the last applied change, in ms.
    pub updated_at_ms: u64,
    /// The granted lifetime, in ms; `None`: unlimited.
    pub ttl_ms: Option<u64>,
    /// Expiry instant on the model clock, in ms; `None` without a TTL.
    pub expires_at_ms: Option<u64>,
    /// The suggested poll interval, in ms.
    pub poll_interval_ms: Option<u64>,
    /// The status message, if any.
    pub status_message: Option<String>,
    /// The stored outcome, if any.
    pub outcome: Option<TaskOutcome>,
    /// The open questions; `None` when none is open.
    pub input_requests: Option<Answers>,
    /// Every answer kept; `None` when none was ever kept.
    pub input_responses: Option<Answers>,
    /// The requestor cancelled it.
    pub cancel_requested: bool,
    /// The irreversible effect declared at its point of no return, if any.
    pub irreversible_effect: Option<String>,
    /// Its outbox entry.
    pub outbox: ModelOutbox,
}

impl ModelTask {
    /// The record a store must hold for this task.
    pub fn view(&self, task_id: &str) -> TaskRecord {
        TaskRecord {
            irreversible_effect: self.irreversible_effect.clone(),
            task_id: task_id.to_owned(),
            auth_key: caller_of(self.owner),
            method: "tools/call".into(),
            tool_name: TOOL.into(),
            request_digest: request_of(self.args).digest(),
            idempotency_key: self.key.map(key_of),
            status: self.status,
            version: self.version,
            created_at_ms: self.created_at_ms,
            updated_at_ms: self.updated_at_ms,
            expires_at_ms: self.expires_at_ms,
            ttl_ms: self.ttl_ms,
            poll_interval_ms: self.poll_interval_ms,
            cancel_requested: self.cancel_requested,
            outcome: self.outcome.clone(),
            status_message: self.status_message.clone(),
            correlation_id: self.correlation_id.clone(),
            era: self.era,
            input_requests: self.input_requests.as_ref().map(input_map),
            input_responses: self.input_responses.as_ref().map(input_map),
        }
    }

    /// A change applied at `now_ms`: version + 1, the update time never running back.
    fn touch(&mut self, now_ms: u64) {
        self.version += 1;
        self.updated_at_ms = self.updated_at_ms.max(now_ms);
    }

    /// Whether the task holds an answer to `key`.
    fn answered(&self, key: &str) -> bool {
        self.input_responses
            .as_ref()
            .is_some_and(|answers| answers.contains_key(key))
    }
}

/// The model's outbox entry of one task.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelOutbox {
    /// Claims so far (0: never claimed).
    pub attempt: u32,
    /// When the current claim's lease lapses, in ms; `None` when unclaimed, released or
    /// acked.
    pub lease_expires_at_ms: Option<u64>,
    /// A worker acked it: never delivered again.
    pub acked: bool,
}

/// A claim a worker holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Held {
    /// The task claimed.
    pub task_id: String,
    /// The task's owning tenant.
    pub owner: u8,
    /// The claim's attempt number; an ack from an older attempt is refused.
    pub attempt: u32,
    /// The task version the worker saw when it claimed, or made by its last applied write.
    pub version: u64,
}

/// What the store must answer to the step just applied.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Expect {
    /// No answer to compare (a crash, a clock advance).
    #[default]
    Nothing,
    /// A decision, and the record the answer carries, if any.
    Answer {
        /// The decision expected.
        decision: Decision,
        /// The record shown, in full; `None` when nothing is shown.
        record: Option<TaskRecord>,
    },
    /// A create refused with `StoreError::Duplicate`: the id exists.
    Duplicate {
        /// The id refused.
        task_id: String,
    },
    /// A list page: the decision, the tasks in order, whether a next cursor comes.
    Page {
        /// The decision expected.
        decision: Decision,
        /// The tasks on the page, in order, in full.
        tasks: Vec<TaskRecord>,
        /// Whether the page ends with a next-page cursor.
        more: bool,
    },
    /// A claim: the entries claimed, in order.
    Claim(Vec<OutboxClaim>),
    /// A write, then (when terminal) the worker's ack result.
    Write {
        /// The decision expected.
        decision: Decision,
        /// The record shown, in full; `None` when nothing is shown.
        record: Option<TaskRecord>,
        /// For a terminal write: whether the ack took (`false`: a stale attempt); `None`
        /// otherwise.
        acked: Option<bool>,
    },
    /// A finish: the decision, the record shown, how the effect was settled, and (once
    /// terminal) whether the ack took.
    Finish {
        /// The decision expected.
        decision: Decision,
        /// The record shown, in full; `None` when nothing is shown.
        record: Option<TaskRecord>,
        /// What settling the effect did; `None` when a stale or illegal write leaves it
        /// prepared for the run that decides.
        settled: Option<Settled>,
        /// Whether the ack took, for a task found terminal; `None` otherwise.
        acked: Option<bool>,
    },
    /// A lease release: how many leases it freed.
    Released(usize),
    /// A sweep: how many tasks it deleted.
    Swept(usize),
}

/// Where two answers differ, worded for a failure: with the same decision, the fields that
/// differ (of the record, of each task on a page, the ack, the next cursor); else both
/// answers whole.
fn mismatch(got: &Expect, want: &Expect) -> String {
    let same_ids = |t1: &[TaskRecord], t2: &[TaskRecord]| {
        t1.iter()
            .map(|task| &task.task_id)
            .eq(t2.iter().map(|task| &task.task_id))
    };
    let mut differing: Vec<String> = Vec::new();
    let mut records: Vec<(&TaskRecord, &TaskRecord)> = Vec::new();
    let decision = match (got, want) {
        (
            Expect::Answer {
                decision: d1,
                record: Some(r1),
            },
            Expect::Answer {
                decision: d2,
                record: Some(r2),
            },
        ) if d1 == d2 => {
            records.push((r1, r2));
            d2
        }
        (
            Expect::Write {
                decision: d1,
                record: Some(r1),
                acked: a1,
            },
            Expect::Write {
                decision: d2,
                record: Some(r2),
                acked: a2,
            },
        ) if d1 == d2 => {
            if a1 != a2 {
                differing.push(format!("ack: store {a1:?}, model {a2:?}"));
            }
            records.push((r1, r2));
            d2
        }
        (
            Expect::Page {
                decision: d1,
                tasks: t1,
                more: m1,
            },
            Expect::Page {
                decision: d2,
                tasks: t2,
                more: m2,
            },
        ) if d1 == d2 && same_ids(t1, t2) => {
            if m1 != m2 {
                differing.push(format!("next cursor: store {m1}, model {m2}"));
            }
            records.extend(t1.iter().zip(t2));
            d2
        }
        (Expect::Claim(c1), Expect::Claim(c2))
            if c1
                .iter()
                .map(|claim| &claim.task_id)
                .eq(c2.iter().map(|claim| &claim.task_id)) =>
        {
            let differing: Vec<String> = c1
                .iter()
                .zip(c2)
                .filter(|(got, want)| got != want)
                .map(|(got, want)| format!("{}: {}", got.task_id, claim_differences(got, want)))
                .collect();
            return format!("the claim differs: {}", differing.join(" | "));
        }
        (
            Expect::Page {
                decision: d1,
                tasks: t1,
                more: m1,
            },
            Expect::Page {
                decision: d2,
                tasks: t2,
                more: m2,
            },
        ) if d1 == d2 => {
            let ids = |tasks: &[TaskRecord]| -> Vec<String> {
                tasks.iter().map(|task| task.task_id.clone()).collect()
            };
            return format!(
                "{} as expected, but the page holds {:?} (next cursor: {m1}), the model's {:?} \
                 (next cursor: {m2})",
                d2.code(),
                ids(t1),
                ids(t2)
            );
        }
        _ => return format!("the store answered {got:?}, the model expects {want:?}"),
    };
    differing.extend(
        records
            .into_iter()
            .filter(|(got, want)| got != want)
            .map(|(got, want)| format!("{}: {}", got.task_id, record_differences(got, want))),
    );
    format!(
        "{} as expected, but {}",
        decision.code(),
        differing.join(" | ")
    )
}

/// The reference model.
#[derive(Clone, Debug, Default)]
pub struct Model {
    /// The model clock, in ms (starts at 0).
    pub now_ms: u64,
    /// Create steps so far; the next fresh id is `t{created:04}`, its correlation id
    /// `c{created:04}`.
    pub created: u32,
    /// Live tasks by id (swept ones removed).
    pub tasks: BTreeMap<String, ModelTask>,
    /// Every id admitted, in order (an id admitted again after a sweep appears again):
    /// steps address tasks through it.
    pub ids: Vec<String>,
    /// `(tenant, idempotency key)` → the task the key is bound to.
    pub keys: BTreeMap<(u8, u8), String>,
    /// Per worker, the claim it holds.
    pub held: BTreeMap<u8, Held>,
    /// Per tenant, where its next page starts, if its last page said more follow.
    pub cursors: BTreeMap<u8, (u64, String)>,
    /// The id the last create step sent.
    pub next_task_id: String,
    /// The correlation id the last create step sent.
    pub next_correlation_id: String,
    /// For a list step: whose cursor it sent, if any.
    pub sent_cursor_of: Option<u8>,
    /// For a write step: the claim it wrote with (the model may have dropped it since).
    pub wrote_with: Option<Held>,
    /// For a write step to `input_required`: the questions it asked.
    pub asked: Option<Answers>,
    /// Effects prepared and not yet settled, by task id (a finish prepares its task's).
    pub prepared: BTreeSet<String>,
    /// Effects published, by task id.
    pub published: BTreeSet<String>,
    /// What the store must answer to the last step.
    pub expect: Expect,
}

impl Model {
    fn address(&self, task: u8) -> String {
        if task == 7 || self.ids.is_empty() {
            return MISSING_TASK.into();
        }
        // Recent tasks are addressed most.
        self.ids[self.ids.len() - 1 - usize::from(task) % self.ids.len()].clone()
    }

    fn expired(&self, task: &ModelTask) -> bool {
        task.expires_at_ms.is_some_and(|at| self.now_ms >= at)
    }

    fn shown(&self, task_id: &str) -> Option<TaskRecord> {
        self.tasks.get(task_id).map(|task| task.view(task_id))
    }

    /// Not found → not yours → expired, the preamble of every one-task operation.
    fn locate(&self, tenant: u8, task_id: &str) -> Result<&ModelTask, Decision> {
        let task = self.tasks.get(task_id).ok_or(Decision::BlockNotFound)?;
        if task.owner != tenant {
            return Err(Decision::BlockAuth);
        }
        if self.expired(task) {
            return Err(Decision::BlockExpired);
        }
        Ok(task)
    }

    /// A read (`tasks/get`, `tasks/result`): refused as `locate` says, else `decide`s.
    fn read(&self, tenant: u8, task: u8, decide: fn(&ModelTask) -> Decision) -> Expect {
        let task_id = self.address(task);
        match self.locate(tenant, &task_id) {
            Ok(found) => Expect::Answer {
                decision: decide(found),
                record: Some(found.view(&task_id)),
            },
            Err(decision) => Expect::Answer {
                decision,
                record: None,
            },
        }
    }

    fn visible(&self, tenant: u8) -> Vec<(u64, String)> {
        let mut visible: Vec<(u64, String)> = self
            .tasks
            .iter()
            .filter(|(_, task)| task.owner == tenant && !self.expired(task))
            .map(|(id, task)| (task.created_at_ms, id.clone()))
            .collect();
        visible.sort();
        visible
    }

    /// The questions a write to `input_required` by `worker` asks: `q0` and `q1` less
    /// those its task holds answers to. `None` when it holds no claim; empty when both are
    /// answered (such a write is not generated).
    fn questions_for(&self, worker: u8) -> Option<Answers> {
        let held = self.held.get(&worker)?;
        let task = self.tasks.get(&held.task_id);
        Some(
            QUESTIONS
                .into_iter()
                .filter(|key| !task.is_some_and(|task| task.answered(key)))
                .map(|key| (key.to_owned(), question_of(key)))
                .collect(),
        )
    }

    fn create(&mut self, step: &CreateStep) -> Expect {
        let CreateStep {
            tenant,
            key,
            args,
            support,
            task,
            negotiated,
            ttl,
            poll,
            era,
            responses,
            collide,
        } = *step;
        self.created += 1;
        self.next_task_id = match collide {
            Some(pick) if !self.ids.is_empty() => self.address(pick % 7),
            _ => format!("t{:04}", self.created),
        };
        self.next_correlation_id = format!("c{:04}", self.created);
        let negotiated = negotiated_of(negotiated);
        let bare = |decision| Expect::Answer {
            decision,
            record: None,
        };
        if task && !negotiated.tools_call {
            return bare(Decision::BlockCapability);
        }
        match (support_of(support), task) {
            (TaskSupport::Required, false) => return bare(Decision::BlockTaskRequired),
            (TaskSupport::Forbidden, true) => return bare(Decision::BlockTaskForbidden),
            (_, false) => return bare(Decision::AcceptNormal),
            (_, true) => {}
        }
        // The task the key is bound to, if it has expired (it gives the key up).
        let mut rebind_from = None;
        if let Some(key) = key
            && let Some(bound_id) = self.keys.get(&(tenant, key)).cloned()
        {
            let bound = &self.tasks[&bound_id];
            if !self.expired(bound) {
                return if bound.args == args {
                    Expect::Answer {
                        decision: Decision::ReplayTask,
                        record: Some(bound.view(&bound_id)),
                    }
                } else {
                    bare(Decision::BlockIdempotencyCollision)
                };
            }
            rebind_from = Some((key, bound_id));
        }
        let task_id = self.next_task_id.clone();
        if self.tasks.contains_key(&task_id) {
            // The id exists (expired or not): refused, nothing changes.
            return Expect::Duplicate { task_id };
        }
        if let Some((key, bound_id)) = rebind_from {
            self.tasks.get_mut(&bound_id).expect("bound task").key = None;
            self.keys.remove(&(tenant, key));
        }
        let now = self.now_ms;
        let ttl_ms = ttl_of(ttl);
        let record = ModelTask {
            owner: tenant,
            key,
            args,
            correlation_id: self.next_correlation_id.clone(),
            era,
            status: TaskStatus::Working,
            version: 1,
            created_at_ms: now,
            updated_at_ms: now,
            ttl_ms,
            expires_at_ms: ttl_ms.map(|ttl| now.saturating_add(ttl)),
            poll_interval_ms: poll_of(poll),
            status_message: None,
            outcome: None,
            input_requests: None,
            // An empty set of answers is no answer.
            input_responses: admission_answers(responses).filter(|answers| !answers.is_empty()),
            cancel_requested: false,
            irreversible_effect: None,
            outbox: ModelOutbox {
                attempt: 0,
                lease_expires_at_ms: None,
                acked: false,
            },
        };
        if let Some(key) = key {
            self.keys.insert((tenant, key), task_id.clone());
        }
        let shown = record.view(&task_id);
        self.tasks.insert(task_id.clone(), record);
        self.ids.push(task_id);
        Expect::Answer {
            decision: Decision::AcceptTask,
            record: Some(shown),
        }
    }

    fn write(
        &mut self,
        worker: u8,
        next: TaskStatus,
        foreign: bool,
        message: Option<&str>,
        outcome: u8,
    ) -> Expect {
        let held = self
            .held
            .get(&worker)
            .cloned()
            .expect("precondition: holds");
        self.wrote_with = Some(held.clone());
        self.asked =
            (next == TaskStatus::InputRequired).then(|| self.questions_for(worker).expect("holds"));
        let caller = if foreign {
            (held.owner + 1) % TENANTS
        } else {
            held.owner
        };
        let decision = match self.locate(caller, &held.task_id) {
            Err(decision) => decision,
            Ok(task) if task.status.is_terminal() => {
                if task.status == next {
                    Decision::IdempotentTerminal
                } else {
                    Decision::BlockTerminalRewrite
                }
            }
            Ok(task) if task.version != held.version => Decision::BlockStaleVersion,
            Ok(task) if !legal(task.status, next) => Decision::BlockIllegalTransition,
            Ok(_) => Decision::ApplyTransition,
        };
        if decision == Decision::ApplyTransition {
            let now = self.now_ms;
            let asked = self.asked.clone();
            let task = self.tasks.get_mut(&held.task_id).expect("located");
            task.status = next;
            task.touch(now);
            if next.is_terminal() {
                task.outcome = Some(outcome_of(outcome));
            }
            if let Some(message) = message {
                task.status_message = Some(message.to_owned());
            }
            match next {
                TaskStatus::InputRequired => task.input_requests = asked,
                TaskStatus::Working => task.input_requests = None,
                _ => {}
            }
            // The worker goes on from the version its own write made.
            let version = task.version;
            self.held.get_mut(&worker).expect("holds").version = version;
        }
        let record = match decision {
            Decision::BlockNotFound | Decision::BlockAuth => None,
            _ => self.shown(&held.task_id),
        };
        // A worker acks once the task is terminal (its own write or one already there).
        let acked = if matches!(
            decision,
            Decision::ApplyTransition | Decision::IdempotentTerminal
        ) && next.is_terminal()
        {
            Some(self.ack(worker, &held))
        } else {
            None
        };
        Expect::Write {
            decision,
            record,
            acked,
        }
    }

    /// A worker declares its point of no return: located as the owner, then the latch (a
    /// terminal task refuses it as a rewrite), the version held, and only a `working` task
    /// that declared nothing yet; applied, version + 1, the effect named, the message
    /// `past its point of no return: EFFECT`, and the worker goes on from that version.
    fn declare(&mut self, worker: u8) -> Expect {
        let held = self
            .held
            .get(&worker)
            .cloned()
            .expect("precondition: holds");
        self.wrote_with = Some(held.clone());
        let decision = match self.locate(held.owner, &held.task_id) {
            Err(decision) => decision,
            Ok(task) if task.status.is_terminal() => Decision::BlockTerminalRewrite,
            Ok(task) if task.version != held.version => Decision::BlockStaleVersion,
            Ok(task)
                if task.status != TaskStatus::Working || task.irreversible_effect.is_some() =>
            {
                Decision::BlockIllegalTransition
            }
            Ok(_) => Decision::ApplyTransition,
        };
        if decision == Decision::ApplyTransition {
            let now = self.now_ms;
            let effect = declared_effect(&held.task_id);
            let task = self.tasks.get_mut(&held.task_id).expect("located");
            task.touch(now);
            task.status_message = Some(format!("past its point of no return: {effect}"));
            task.irreversible_effect = Some(effect);
            let version = task.version;
            self.held.get_mut(&worker).expect("holds").version = version;
        }
        let record = match decision {
            Decision::BlockNotFound | Decision::BlockAuth => None,
            _ => self.shown(&held.task_id),
        };
        Expect::Write {
            decision,
            record,
            acked: None,
        }
    }

    /// A worker's run prepared its effect; it decides completion and settles the effect
    /// (the rules restated: completed publishes it, once; any other terminal status, or a
    /// task gone or expired before it ended, discards it; a stale write leaves it).
    fn finish(&mut self, worker: u8, outcome: u8) -> Expect {
        let held = self
            .held
            .get(&worker)
            .cloned()
            .expect("precondition: holds");
        // The tool reuses a published effect rather than prepare it again.
        if !self.published.contains(&held.task_id) {
            self.prepared.insert(held.task_id.clone());
        }
        let Expect::Write {
            decision,
            record,
            mut acked,
        } = self.write(worker, TaskStatus::Completed, false, None, outcome)
        else {
            unreachable!("a write answers as a write")
        };
        let settled = match decision {
            Decision::BlockStaleVersion | Decision::BlockIllegalTransition => None,
            _ => {
                let expired = self
                    .tasks
                    .get(&held.task_id)
                    .is_some_and(|task| self.expired(task));
                let status = match &record {
                    Some(record) if record.status.is_terminal() || !expired => Some(record.status),
                    _ => None,
                };
                Some(self.settle(&held.task_id, status))
            }
        };
        // `write` acked an applied or idempotent completion; a worker also retires a task
        // some other way ended (the cancel won the latch).
        if decision == Decision::BlockTerminalRewrite {
            acked = Some(self.ack(worker, &held));
        }
        Expect::Finish {
            decision,
            record,
            settled,
            acked,
        }
    }

    /// The worker acks its claim of a terminal task and lets it go: `true` when the ack
    /// took (the claim is the entry's latest and the entry was not acked yet).
    fn ack(&mut self, worker: u8, held: &Held) -> bool {
        let outbox = &mut self.tasks.get_mut(&held.task_id).expect("located").outbox;
        let fresh = outbox.attempt == held.attempt && !outbox.acked;
        if fresh {
            outbox.acked = true;
            outbox.lease_expires_at_ms = None;
        }
        self.held.remove(&worker);
        fresh
    }

    /// The effect of `task_id` settled by its status (`None`: gone, or expired unfinished).
    fn settle(&mut self, task_id: &str, status: Option<TaskStatus>) -> Settled {
        match status {
            Some(TaskStatus::Completed) => {
                let was_prepared = self.prepared.remove(task_id);
                Settled::Published(was_prepared && self.published.insert(task_id.to_owned()))
            }
            Some(status) if !status.is_terminal() => Settled::Pending,
            _ => Settled::Discarded(self.prepared.remove(task_id)),
        }
    }

    fn cancel(&mut self, tenant: u8, task: u8, negotiated: u8) -> Expect {
        let task_id = self.address(task);
        let decision = if !negotiated_of(negotiated).cancel {
            Decision::BlockCapability
        } else {
            match self.locate(tenant, &task_id) {
                Err(decision) => decision,
                Ok(task) if task.status.is_terminal() => Decision::AlreadyTerminal,
                // Cancellation is cooperative in 2026-07-28: past the point, acknowledged.
                Ok(task)
                    if task.irreversible_effect.is_some() && task.era == Era::Extension2026 =>
                {
                    Decision::PastPointOfNoReturn
                }
                Ok(_) => Decision::ApplyCancel,
            }
        };
        if decision == Decision::ApplyCancel {
            let now = self.now_ms;
            let task = self.tasks.get_mut(&task_id).expect("located");
            task.status = TaskStatus::Cancelled;
            task.touch(now);
            task.cancel_requested = true;
            // Past its point of no return, a 2025-11-25 cancel says what was started.
            task.status_message = Some(match &task.irreversible_effect {
                None => CANCEL_MESSAGE.to_owned(),
                Some(effect) => format!(
                    "{CANCEL_MESSAGE} past its point of no return: {effect} was started and is not undone"
                ),
            });
        }
        let record = match decision {
            Decision::BlockCapability | Decision::BlockNotFound | Decision::BlockAuth => None,
            _ => self.shown(&task_id),
        };
        Expect::Answer { decision, record }
    }

    fn answer_input(&mut self, tenant: u8, task: u8, keys: u8) -> Expect {
        let task_id = self.address(task);
        let keys = answered_keys(keys);
        let decision = match self.locate(tenant, &task_id) {
            Err(decision) => decision,
            Ok(task) if task.status.is_terminal() => Decision::AlreadyTerminal,
            Ok(task) => match (task.status, &task.input_requests) {
                (TaskStatus::InputRequired, Some(open))
                    if keys.iter().any(|key| open.contains_key(*key)) =>
                {
                    Decision::ApplyInput
                }
                _ => Decision::IgnoreInput,
            },
        };
        if decision == Decision::ApplyInput {
            let now = self.now_ms;
            let task = self.tasks.get_mut(&task_id).expect("located");
            let mut open = task.input_requests.take().expect("open questions");
            let kept = task.input_responses.get_or_insert_with(Answers::new);
            for key in keys {
                if open.remove(key).is_some() {
                    kept.insert(key.to_owned(), answer_of(key, now));
                }
            }
            task.touch(now);
            if open.is_empty() {
                task.status = TaskStatus::Working;
            } else {
                task.input_requests = Some(open);
            }
        }
        let record = match decision {
            Decision::BlockNotFound | Decision::BlockAuth => None,
            _ => self.shown(&task_id),
        };
        Expect::Answer { decision, record }
    }

    fn list(&mut self, tenant: u8, negotiated: u8, cursor: CursorUse, limit: usize) -> Expect {
        let holder = match cursor {
            CursorUse::First => None,
            CursorUse::Resume => Some(tenant),
            CursorUse::Foreign => Some((tenant + 1) % TENANTS),
        }
        .filter(|holder| self.cursors.contains_key(holder));
        self.sent_cursor_of = holder;
        let refused = |decision| Expect::Page {
            decision,
            tasks: vec![],
            more: false,
        };
        if !negotiated_of(negotiated).list {
            return refused(Decision::BlockCapability);
        }
        if holder.is_some_and(|holder| holder != tenant) {
            return refused(Decision::BlockBadCursor);
        }
        // The store serves at least one task and at most LIST_LIMIT_MAX per page.
        let limit = limit.clamp(1, LIST_LIMIT_MAX);
        let after = holder.and_then(|holder| self.cursors.get(&holder).cloned());
        let rest: Vec<(u64, String)> = self
            .visible(tenant)
            .into_iter()
            .filter(|position| after.as_ref().is_none_or(|after| position > after))
            .collect();
        let page: Vec<(u64, String)> = rest.iter().take(limit).cloned().collect();
        let more = rest.len() > limit;
        match (more, page.last()) {
            (true, Some(last)) => {
                self.cursors.insert(tenant, last.clone());
            }
            _ => {
                self.cursors.remove(&tenant);
            }
        }
        Expect::Page {
            decision: Decision::ListTenantFiltered,
            tasks: page.iter().map(|(_, id)| self.tasks[id].view(id)).collect(),
            more,
        }
    }

    fn claim(&mut self, worker: u8, max: usize) -> Expect {
        let now = self.now_ms;
        let mut ready: Vec<(u64, String)> = self
            .tasks
            .iter()
            .filter(|(_, task)| {
                !task.outbox.acked && task.outbox.lease_expires_at_ms.is_none_or(|at| at <= now)
            })
            .map(|(id, task)| (task.created_at_ms, id.clone()))
            .collect();
        ready.sort();
        ready.truncate(max);
        let mut claims = Vec::new();
        for (_, task_id) in ready {
            let task = self.tasks.get_mut(&task_id).expect("ready");
            task.outbox.attempt += 1;
            let lease_expires_at_ms = now.saturating_add(LEASE_MS);
            task.outbox.lease_expires_at_ms = Some(lease_expires_at_ms);
            claims.push(OutboxClaim {
                task_id: task_id.clone(),
                auth_key: caller_of(task.owner),
                request: request_of(task.args),
                attempt: task.outbox.attempt,
                lease_expires_at_ms,
                task_version: task.version,
                task_status: task.status,
            });
        }
        // The worker holds the first entry it got (with `max` ≤ 1, the only one).
        if let Some(first) = claims.first() {
            self.held.insert(
                worker,
                Held {
                    task_id: first.task_id.clone(),
                    owner: self.tasks[&first.task_id].owner,
                    attempt: first.attempt,
                    version: first.task_version,
                },
            );
        }
        Expect::Claim(claims)
    }

    fn release(&mut self) -> Expect {
        let now = self.now_ms;
        let mut released = 0;
        for task in self.tasks.values_mut() {
            let outbox = &mut task.outbox;
            if !outbox.acked && outbox.lease_expires_at_ms.is_some_and(|at| at <= now) {
                outbox.lease_expires_at_ms = None;
                released += 1;
            }
        }
        Expect::Released(released)
    }

    fn sweep(&mut self, max: usize) -> Expect {
        let mut expired: Vec<(u64, String)> = self
            .tasks
            .iter()
            .filter(|(_, task)| self.expired(task))
            .map(|(id, task)| (task.expires_at_ms.expect("expired"), id.clone()))
            .collect();
        expired.sort();
        expired.truncate(max);
        for (_, id) in &expired {
            let task = self.tasks.remove(id).expect("listed");
            if let Some(key) = task.key {
                self.keys.remove(&(task.owner, key));
            }
        }
        Expect::Swept(expired.len())
    }
}

/// The transition table, stated again (not `TaskStatus::can_transition_to`).
fn legal(from: TaskStatus, to: TaskStatus) -> bool {
    use TaskStatus::*;
    matches!(
        (from, to),
        (Working, InputRequired)
            | (InputRequired, Working)
            | (Working, Completed | Failed | Cancelled)
            | (InputRequired, Completed | Failed | Cancelled)
    )
}

/// The reference state machine.
pub struct ModelMachine;

fn negotiated_strategy() -> impl Strategy<Value = u8> {
    prop_oneof![4 => Just(7u8), 1 => 0u8..8]
}

fn create_strategy() -> impl Strategy<Value = Step> {
    (
        0..TENANTS,
        prop::option::weighted(0.7, 0u8..3),
        0u8..2,
        prop_oneof![4 => Just(0u8), 1 => 1u8..3],
        prop::bool::weighted(0.85),
        negotiated_strategy(),
        // None, 0, 300, 1234, 3000 ms
        prop_oneof![3 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8), 2 => Just(3u8), 2 => Just(4u8)],
        0u8..4,
        prop_oneof![Just(Era::Core2025), Just(Era::Extension2026)],
        0u8..4,
        prop::option::weighted(0.15, 0u8..7),
    )
        .prop_map(
            |(tenant, key, args, support, task, negotiated, ttl, poll, era, responses, collide)| {
                Step::Create(CreateStep {
                    tenant,
                    key,
                    args,
                    support,
                    task,
                    negotiated,
                    ttl,
                    poll,
                    era,
                    responses,
                    collide,
                })
            },
        )
}

/// `(tenant, task)` for a step on one task: `tasks` picks the task (as `Model::address`
/// reads it); the tenant is mostly its owner (`owners`, by task index), else any.
fn aimed(tasks: BoxedStrategy<u8>, owners: [Option<u8>; 8]) -> impl Strategy<Value = (u8, u8)> {
    (tasks, prop::bool::weighted(0.75), 0..TENANTS).prop_map(
        move |(task, own, tenant)| match owners[usize::from(task % 8)] {
            Some(owner) if own => (owner, task),
            _ => (tenant, task),
        },
    )
}

impl ReferenceStateMachine for ModelMachine {
    type State = Model;
    type Transition = Step;

    fn init_state() -> BoxedStrategy<Model> {
        Just(Model::default()).boxed()
    }

    fn transitions(state: &Model) -> BoxedStrategy<Step> {
        // Steps on one task mostly come from its owner, and answers mostly go to tasks that
        // ask: a step that is refused at once tells little.
        let owners: [Option<u8>; 8] = std::array::from_fn(|task| {
            let task_id = state.address(task as u8);
            state.tasks.get(&task_id).map(|task| task.owner)
        });
        let picking = |wanted: fn(&ModelTask) -> bool| -> Vec<u8> {
            (0u8..7)
                .filter(|task| state.tasks.get(&state.address(*task)).is_some_and(wanted))
                .collect()
        };
        let live = picking(|_| true);
        let asking = picking(|task| task.status == TaskStatus::InputRequired);
        // Mostly a task that is there (or asks), sometimes any address.
        let among = |preferred: &[u8]| -> BoxedStrategy<u8> {
            if preferred.is_empty() {
                (0u8..8).boxed()
            } else {
                prop_oneof![3 => prop::sample::select(preferred.to_vec()), 1 => 0u8..8].boxed()
            }
        };
        let answered = among(if asking.is_empty() { &live } else { &asking });
        // Answers come often while a task asks.
        let answer_weight = if asking.is_empty() { 2 } else { 16 };
        // Per worker: the task it holds asks, at the version the worker knows.
        let held_asking: [bool; WORKERS as usize] = std::array::from_fn(|worker| {
            state.held.get(&(worker as u8)).is_some_and(|held| {
                state.tasks.get(&held.task_id).is_some_and(|task| {
                    task.status == TaskStatus::InputRequired && task.version == held.version
                })
            })
        });
        let worker = 0..WORKERS;
        prop_oneof![
            12 => create_strategy(),
            4 => aimed(among(&live), owners).prop_map(|(tenant, task)| Step::Get { tenant, task }),
            2 => aimed(among(&live), owners).prop_map(|(tenant, task)| Step::Result { tenant, task }),
            2 => (aimed(among(&live), owners), negotiated_strategy())
                .prop_map(|((tenant, task), negotiated)| Step::Cancel { tenant, task, negotiated }),
            // Mostly open keys (q0, q1, both), sometimes any mix with the unasked key.
            answer_weight => (aimed(answered, owners), prop_oneof![2 => 1u8..4, 1 => 0u8..8])
                .prop_map(|((tenant, task), keys)| Step::AnswerInput { tenant, task, keys }),
            3 => (
                0..TENANTS,
                negotiated_strategy(),
                prop_oneof![Just(CursorUse::First), Just(CursorUse::Resume), Just(CursorUse::Foreign)],
                prop_oneof![
                    1 => Just(LIST_LIMITS[0]),
                    3 => Just(LIST_LIMITS[1]),
                    3 => Just(LIST_LIMITS[2]),
                    1 => Just(LIST_LIMITS[3]),
                    1 => Just(LIST_LIMITS[4]),
                    1 => Just(LIST_LIMITS[5]),
                ],
            )
                .prop_map(|(tenant, negotiated, cursor, limit)| Step::List {
                    tenant,
                    negotiated,
                    cursor,
                    limit,
                }),
            6 => (worker.clone(), prop_oneof![1 => Just(0usize), 5 => Just(1usize)])
                .prop_map(|(worker, max)| Step::Claim { worker, max }),
            8 => (
                worker.clone(),
                // completed, failed, input_required, working, cancelled
                prop_oneof![3 => Just(0u8), 1 => Just(1u8), 3 => Just(2u8), 1 => Just(3u8), 1 => Just(4u8)],
                prop::bool::weighted(0.5),
                prop::bool::weighted(0.15),
                prop::sample::select(MESSAGE_CHOICES.to_vec()),
                0u8..4,
            )
                .prop_map(move |(worker, next, resume, foreign, message, outcome)| {
                    // A worker whose task asks often goes back to work without the answers.
                    let next = if resume && held_asking[usize::from(worker)] { 3 } else { next };
                    Step::Write {
                        worker,
                        next,
                        foreign,
                        message,
                        outcome,
                    }
                }),
            4 => (worker.clone(), 0u8..4).prop_map(|(worker, outcome)| Step::Finish { worker, outcome }),
            5 => worker.clone().prop_map(|worker| Step::Declare { worker }),
            1 => worker.prop_map(|worker| Step::Crash { worker }),
            1 => Just(Step::Release),
            2 => prop::sample::select(SWEEP_MAXES.to_vec()).prop_map(|max| Step::Sweep { max }),
            3 => (1u16..700).prop_map(|ms| Step::Advance { ms }),
        ]
        .boxed()
    }

    fn preconditions(state: &Model, step: &Step) -> bool {
        match step {
            // A worker asks only questions its task holds no answer to (never none).
            Step::Write { worker, next, .. }
                if write_target(*next) == TaskStatus::InputRequired =>
            {
                state
                    .questions_for(*worker)
                    .is_some_and(|asked| !asked.is_empty())
            }
            Step::Write { worker, .. }
            | Step::Finish { worker, .. }
            | Step::Declare { worker }
            | Step::Crash { worker } => state.held.contains_key(worker),
            _ => true,
        }
    }

    fn apply(mut state: Model, step: &Step) -> Model {
        state.sent_cursor_of = None;
        state.wrote_with = None;
        state.asked = None;
        state.expect = match *step {
            Step::Create(create) => state.create(&create),
            Step::Get { tenant, task } => state.read(tenant, task, |_| Decision::ReturnStatus),
            Step::Result { tenant, task } => state.read(tenant, task, |task| match task.status {
                TaskStatus::Working => Decision::WaitTerminal,
                TaskStatus::InputRequired => Decision::WaitInput,
                TaskStatus::Cancelled => Decision::ReturnCancelled,
                TaskStatus::Completed | TaskStatus::Failed => Decision::ReturnResult,
            }),
            Step::Cancel {
                tenant,
                task,
                negotiated,
            } => state.cancel(tenant, task, negotiated),
            Step::AnswerInput { tenant, task, keys } => state.answer_input(tenant, task, keys),
            Step::List {
                tenant,
                negotiated,
                cursor,
                limit,
            } => state.list(tenant, negotiated, cursor, limit),
            Step::Claim { worker, max } => state.claim(worker, max),
            Step::Write {
                worker,
                next,
                foreign,
                message,
                outcome,
            } => state.write(worker, write_target(next), foreign, message, outcome),
            Step::Finish { worker, outcome } => state.finish(worker, outcome),
            Step::Declare { worker } => state.declare(worker),
            Step::Crash { worker } => {
                state.held.remove(&worker);
                Expect::Nothing
            }
            Step::Release => state.release(),
            Step::Sweep { max } => state.sweep(max),
            Step::Advance { ms } => {
                state.now_ms += u64::from(ms);
                Expect::Nothing
            }
        };
        state
    }
}

/// The system under test: a store and what its actors hold between steps.
pub struct Sut {
    store: Box<dyn TaskStore>,
    /// The effects finishing workers prepare, publish and discard.
    effects: MemoryEffects,
    /// Per tenant, the next-page cursor its last page returned.
    cursors: BTreeMap<u8, String>,
}

impl Sut {
    /// A fresh store from `factory`, its cursors bound with the machine's secret.
    pub fn open(factory: &dyn StoreFactory) -> Result<Sut, StoreError> {
        let options = StoreOptions {
            cursor_secret: Some(b"proptest cursor secret".to_vec()),
        };
        Ok(Sut {
            store: factory.open(&options)?,
            effects: MemoryEffects::default(),
            cursors: BTreeMap::new(),
        })
    }

    /// Runs `step` against the store and compares the answer with `model.expect`
    /// (`model` is the state after the step).
    pub fn step(&mut self, model: &Model, step: &Step) -> Result<(), String> {
        let failed = |error: StoreError| format!("{step:?}: store error: {error}");
        let now_ms = model.now_ms;
        let shown = |answer: &crate::store::Answer| answer.record.as_ref().cloned();
        let got = match *step {
            Step::Create(create) => {
                let created = self.store.create(&CreateCommand {
                    caller: caller_of(create.tenant),
                    negotiated: negotiated_of(create.negotiated),
                    task_support: support_of(create.support),
                    task_requested: create.task,
                    idempotency_key: create.key.map(key_of),
                    request: request_of(create.args),
                    ttl_ms: ttl_of(create.ttl),
                    poll_interval_ms: poll_of(create.poll),
                    task_id: model.next_task_id.clone(),
                    correlation_id: model.next_correlation_id.clone(),
                    now_ms,
                    era: create.era,
                    input_responses: admission_answers(create.responses).as_ref().map(input_map),
                });
                match created {
                    Ok(answer) => Expect::Answer {
                        decision: answer.decision,
                        record: shown(&answer),
                    },
                    Err(StoreError::Duplicate { task_id }) => Expect::Duplicate { task_id },
                    Err(error) => return Err(failed(error)),
                }
            }
            Step::Get { tenant, task } | Step::Result { tenant, task } => {
                let task_id = model.address(task);
                let answer = if matches!(step, Step::Get { .. }) {
                    self.store.get(&caller_of(tenant), &task_id, now_ms)
                } else {
                    self.store.result(&caller_of(tenant), &task_id, now_ms)
                }
                .map_err(failed)?;
                let decision = answer.decision;
                // A refused read carries no record, whatever the store attached.
                let record = match decision {
                    Decision::ReturnStatus
                    | Decision::WaitTerminal
                    | Decision::WaitInput
                    | Decision::ReturnResult
                    | Decision::ReturnCancelled => shown(&answer),
                    _ => None,
                };
                Expect::Answer { decision, record }
            }
            Step::Cancel {
                tenant,
                task,
                negotiated,
            } => {
                let answer = self
                    .store
                    .cancel(
                        negotiated_of(negotiated),
                        &caller_of(tenant),
                        &model.address(task),
                        now_ms,
                    )
                    .map_err(failed)?;
                Expect::Answer {
                    decision: answer.decision,
                    record: shown(&answer),
                }
            }
            Step::AnswerInput { tenant, task, keys } => {
                let answer = self
                    .store
                    .answer_input(&InputCommand {
                        task_id: model.address(task),
                        caller: caller_of(tenant),
                        responses: answered_keys(keys)
                            .into_iter()
                            .map(|key| (key.to_owned(), answer_of(key, now_ms)))
                            .collect(),
                        now_ms,
                    })
                    .map_err(failed)?;
                Expect::Answer {
                    decision: answer.decision,
                    record: shown(&answer),
                }
            }
            Step::List {
                tenant,
                negotiated,
                limit,
                ..
            } => {
                let cursor = model
                    .sent_cursor_of
                    .and_then(|holder| self.cursors.get(&holder).cloned());
                let page = self
                    .store
                    .list(&ListQuery {
                        negotiated: negotiated_of(negotiated),
                        caller: caller_of(tenant),
                        cursor,
                        limit,
                        now_ms,
                    })
                    .map_err(failed)?;
                if page.decision == Decision::ListTenantFiltered {
                    match &page.next_cursor {
                        Some(next) => self.cursors.insert(tenant, next.clone()),
                        None => self.cursors.remove(&tenant),
                    };
                }
                Expect::Page {
                    decision: page.decision,
                    tasks: page.tasks,
                    more: page.next_cursor.is_some(),
                }
            }
            Step::Claim { worker, max } => {
                let claims = self
                    .store
                    .claim(&format!("worker-{worker}"), now_ms, LEASE_MS, max)
                    .map_err(failed)?;
                Expect::Claim(claims)
            }
            Step::Write {
                worker,
                next,
                foreign,
                message,
                outcome,
            } => {
                let held = model
                    .wrote_with
                    .clone()
                    .ok_or_else(|| format!("worker-{worker} writes without a claim"))?;
                let next = write_target(next);
                let caller = if foreign {
                    (held.owner + 1) % TENANTS
                } else {
                    held.owner
                };
                let answer = self
                    .store
                    .transition(&TransitionCommand {
                        irreversible_effect: None,
                        task_id: held.task_id.clone(),
                        caller: caller_of(caller),
                        expected_version: held.version,
                        next,
                        outcome: next.is_terminal().then(|| outcome_of(outcome)),
                        status_message: message.map(str::to_owned),
                        now_ms,
                        input_requests: model.asked.as_ref().map(input_map),
                    })
                    .map_err(failed)?;
                let acked = if matches!(
                    answer.decision,
                    Decision::ApplyTransition | Decision::IdempotentTerminal
                ) && next.is_terminal()
                {
                    Some(
                        self.store
                            .ack(&held.task_id, held.attempt, now_ms)
                            .map_err(failed)?,
                    )
                } else {
                    None
                };
                Expect::Write {
                    decision: answer.decision,
                    record: shown(&answer),
                    acked,
                }
            }
            Step::Declare { worker } => {
                let held = model
                    .wrote_with
                    .clone()
                    .ok_or_else(|| format!("worker-{worker} declares without a claim"))?;
                let effect = declared_effect(&held.task_id);
                let answer = self
                    .store
                    .transition(&TransitionCommand {
                        status_message: Some(crate::store::point_of_no_return_message(&effect)),
                        irreversible_effect: Some(effect),
                        task_id: held.task_id.clone(),
                        caller: caller_of(held.owner),
                        expected_version: held.version,
                        next: TaskStatus::Working,
                        outcome: None,
                        now_ms,
                        input_requests: None,
                    })
                    .map_err(failed)?;
                Expect::Write {
                    decision: answer.decision,
                    record: shown(&answer),
                    acked: None,
                }
            }
            Step::Finish { worker, outcome } => {
                let held = model
                    .wrote_with
                    .clone()
                    .ok_or_else(|| format!("worker-{worker} finishes without a claim"))?;
                self.effects.prepare(&held.task_id);
                let answer = effect::decide(
                    &*self.store,
                    &self.effects,
                    &TransitionCommand {
                        irreversible_effect: None,
                        task_id: held.task_id.clone(),
                        caller: caller_of(held.owner),
                        expected_version: held.version,
                        next: TaskStatus::Completed,
                        outcome: Some(outcome_of(outcome)),
                        status_message: None,
                        now_ms,
                        input_requests: None,
                    },
                )
                .map_err(failed)?;
                let settled = match answer.decision {
                    Decision::BlockStaleVersion | Decision::BlockIllegalTransition => None,
                    _ => Some(
                        effect::settle(
                            &self.effects,
                            &held.task_id,
                            effect::status_to_settle(answer.record.as_ref(), now_ms),
                        )
                        .map_err(failed)?,
                    ),
                };
                let acked = match answer.decision {
                    Decision::ApplyTransition
                    | Decision::IdempotentTerminal
                    | Decision::BlockTerminalRewrite => Some(
                        self.store
                            .ack(&held.task_id, held.attempt, now_ms)
                            .map_err(failed)?,
                    ),
                    _ => None,
                };
                Expect::Finish {
                    decision: answer.decision,
                    record: shown(&answer),
                    settled,
                    acked,
                }
            }
            Step::Release => {
                Expect::Released(self.store.release_expired_leases(now_ms).map_err(failed)?)
            }
            Step::Sweep { max } => {
                Expect::Swept(self.store.sweep_expired(now_ms, max).map_err(failed)?)
            }
            Step::Crash { .. } | Step::Advance { .. } => Expect::Nothing,
        };
        if got != model.expect {
            return Err(format!(
                "{step:?} at {now_ms} ms: {}",
                mismatch(&got, &model.expect)
            ));
        }
        self.compare_state(model)
    }

    /// The whole store read back: every live model task in full (every record field), and
    /// no swept task left behind.
    fn compare_state(&self, model: &Model) -> Result<(), String> {
        for (task_id, task) in &model.tasks {
            let stored = self
                .store
                .read(task_id)
                .map_err(|error| format!("read {task_id}: {error}"))?;
            let Some(stored) = stored else {
                return Err(format!("{task_id} is missing from the store"));
            };
            let want = task.view(task_id);
            if stored != want {
                return Err(format!(
                    "{task_id} is stored otherwise than the model has it: {}",
                    record_differences(&stored, &want)
                ));
            }
        }
        let (prepared, published) = self.effects.sets();
        if (&prepared, &published) != (&model.prepared, &model.published) {
            return Err(format!(
                "effects: prepared {prepared:?} and published {published:?}, the model has \
                 {:?} and {:?}",
                model.prepared, model.published
            ));
        }
        if let Some(extra) = model
            .ids
            .iter()
            .filter(|id| !model.tasks.contains_key(*id))
            .find(|id| matches!(self.store.read(id), Ok(Some(_))))
        {
            return Err(format!(
                "{extra} was swept in the model but the store kept it"
            ));
        }
        Ok(())
    }
}

/// Runs one case: every step through the model and the store, compared step by step.
///
/// `seen` counts the steps applied, as proptest-state-machine's shrinker needs (it first
/// drops the steps a failing case never reached).
pub fn run_steps(
    factory: &dyn StoreFactory,
    steps: &[Step],
    seen: Option<&std::sync::atomic::AtomicUsize>,
) -> Result<(), String> {
    let mut sut = Sut::open(factory).map_err(|error| format!("open the store: {error}"))?;
    let mut model = Model::default();
    for step in steps {
        if let Some(seen) = seen {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        if !ModelMachine::preconditions(&model, step) {
            continue;
        }
        model = ModelMachine::apply(model, step);
        sut.step(&model, step)?;
    }
    Ok(())
}

/// The proptest-state-machine binding, for `prop_state_machine!` tests: each case runs on
/// a fresh store from `F::default()` (e.g. `StoreMachine<MemoryFactory>`).
pub struct StoreMachine<F>(std::marker::PhantomData<F>);

impl<F: StoreFactory + Default> StateMachineTest for StoreMachine<F> {
    type SystemUnderTest = Sut;
    type Reference = ModelMachine;

    fn init_test(_model: &Model) -> Sut {
        Sut::open(&F::default()).expect("open the store under test")
    }

    fn apply(mut sut: Sut, model: &Model, step: Step) -> Sut {
        if let Err(message) = sut.step(model, &step) {
            panic!("{message}");
        }
        sut
    }
}

/// What a search found.
#[derive(Clone, Debug)]
pub struct Found {
    /// Cases run up to and including the first failing one.
    pub cases_to_fail: u32,
    /// The shrunk failing sequence.
    pub steps: Vec<Step>,
    /// The failure, as the comparison worded it.
    pub message: String,
}

/// Runs `cases` generated cases from `seed` against stores from `factory`; the first
/// failure is shrunk. No persistence: the matrix and tests that need it configure their own.
pub fn search(factory: &dyn StoreFactory, cases: u32, seed: u64) -> Result<(), Found> {
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        config,
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes),
    );
    let ran = std::cell::Cell::new(0u32);
    let first_fail = std::cell::Cell::new(None);
    let result = runner.run(
        &ModelMachine::sequential_strategy(1..STEPS_MAX),
        |(_, steps, seen)| {
            if first_fail.get().is_none() {
                ran.set(ran.get() + 1);
            }
            run_steps(factory, &steps, seen.as_deref()).map_err(|message| {
                if first_fail.get().is_none() {
                    first_fail.set(Some(ran.get()));
                }
                TestCaseError::fail(message)
            })
        },
    );
    match result {
        Ok(()) => Ok(()),
        Err(proptest::test_runner::TestError::Fail(reason, (_, steps, _))) => Err(Found {
            cases_to_fail: first_fail.get().unwrap_or(ran.get()),
            message: reason.message().to_owned(),
            steps,
        }),
        Err(proptest::test_runner::TestError::Abort(reason)) => Err(Found {
            cases_to_fail: ran.get(),
            steps: vec![],
            message: format!("aborted: {}", reason.message()),
        }),
    }
}
