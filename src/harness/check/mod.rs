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
        client: String,
        caller: String,
        op: ClientOp,
        result: ClientResult,
        at_ms: u64,
    },
    /// The store applied a change (creation, transition, cancel), with the record after it.
    Applied {
        task_id: String,
        auth_key: String,
        kind: AppliedKind,
        expected_version: Option<u64>,
        version: u64,
        status: TaskStatus,
        outcome: Option<TaskOutcome>,
        expires_at_ms: Option<u64>,
        at_ms: u64,
    },
    /// The effect sink committed an effect.
    Effect {
        task_id: String,
        effect_id: String,
        at_ms: u64,
    },
    /// The runtime announced a status change (`notifications/tasks/status`).
    Notified {
        task_id: String,
        status: TaskStatus,
        version: u64,
        at_ms: u64,
    },
    /// A fault the supervisor injected, or a phase change.
    Fault { what: String, at_ms: u64 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppliedKind {
    Create,
    Transition,
    Cancel,
}

/// A client operation, as invoked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientOp {
    Create {
        idempotency_key: Option<String>,
        digest: String,
    },
    Get {
        task_id: String,
    },
    Result {
        task_id: String,
    },
    Cancel {
        task_id: String,
    },
    /// The requestor answered an `input_required` task (the server moves it to `working`).
    ProvideInput {
        task_id: String,
    },
    List,
}

/// What the client got back.
#[derive(Clone, Debug, PartialEq)]
pub enum ClientResult {
    /// The answer arrived.
    Ok {
        decision: Decision,
        /// Task ids and statuses the answer revealed (one, or a list page), with owners.
        revealed: Vec<Revealed>,
    },
    /// The request failed before reaching the store (nothing happened).
    Fail,
    /// The answer was lost: the operation may or may not have happened.
    Indeterminate,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Revealed {
    pub task_id: String,
    /// The owner, when the answer says (a store answer does; the MCP wire never does).
    /// Empty otherwise: the oracle takes the owner from the store's creation fact anyway.
    pub auth_key: String,
    pub status: TaskStatus,
    /// `None` when the answer carries no version (a `tasks/list` entry on the wire).
    pub version: Option<u64>,
    /// For `tasks/result`: the payload returned.
    pub outcome: Option<TaskOutcome>,
}

/// A broken invariant, with the events that show it.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    pub invariant: &'static str,
    pub task_id: String,
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
