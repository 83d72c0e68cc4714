//! The oracle: invariants I1–I10 of docs/design.md §5 checked over a recorded history, apart
//! from the system under test.
//!
//! The simulation records what clients invoked and what they got back (or that the answer
//! was lost), what the store applied, and what the effect sink committed. The checker
//! reads only that history: it never asks the store what it thinks of itself.
//!
//! One function per invariant (`invariants.rs`): I1 one terminal, I2 cancel wins, I3 no
//! stale write, I4 tenant isolation, I5 idempotent admission, I6 effect once, I7 expiry,
//! I8 liveness, I9 result shape (a returned result is the wrapped request's
//! `CallToolResult` or its error, matching the status; when the clients spoke MCP, it also
//! carries the related-task `_meta` naming its task), I10 the stored record wins over
//! notifications.

mod invariants;

use crate::contract::{Decision, TaskOutcome, TaskStatus};
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
        /// Simulated time of the change, in ms since the epoch.
        at_ms: u64,
    },
    /// The effect sink committed an effect.
    Effect {
        /// The task whose work produced the effect.
        task_id: String,
        /// The effect's identity; a completed result names it (I6).
        effect_id: String,
        /// Simulated time of the commit, in ms since the epoch.
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
    /// A fault the supervisor injected, or a phase change.
    Fault {
        /// What happened, in words (`crash node 2 at …`, a phase name).
        what: String,
        /// Simulated time of the fault, in ms since the epoch.
        at_ms: u64,
    },
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
    },
    /// `tasks/list`, one page.
    List,
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
    Fail,
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
}

/// Checks every invariant; returns all violations found (empty: the history is clean):
/// per task in task-id order, its violations by invariant (I1 … I10); then the clients'
/// (I4, I5) in history order.
pub fn check(history: &[Event], context: &CheckContext) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut tasks: BTreeMap<&str, TaskFacts> = BTreeMap::new();
    for (index, event) in history.iter().enumerate() {
        match event {
            Event::Applied { task_id, .. } => tasks.entry(task_id).or_default().applied.push(index),
            Event::Effect { task_id, .. } => tasks.entry(task_id).or_default().effects.push(index),
            Event::Notified { task_id, .. } => {
                tasks.entry(task_id).or_default().notified.push(index)
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
    }
    invariants::i4_tenant_isolation(history, &mut violations);
    invariants::i5_idempotent_admission(history, &mut violations);
    invariants::f1_explained_store_errors(history, &mut violations);
    violations
}

/// The events that concern one task, by kind (indices into the history).
#[derive(Default)]
struct TaskFacts {
    applied: Vec<usize>,
    effects: Vec<usize>,
    reads: Vec<usize>,
    notified: Vec<usize>,
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
