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

/// The record an answer shows.
fn shown(answer: &crate::store::Answer) -> Option<TaskRecord> {
    answer.record.as_ref().cloned()
}

// After the macros above: the modules use them.
mod model;
mod strategy;
mod sut;
pub use model::*;
pub use strategy::*;
pub use sut::*;
