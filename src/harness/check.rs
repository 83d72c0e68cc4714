//! The oracle: invariants I1–I10 of docs/design.md §5 checked over a recorded history, apart
//! from the system under test.
//!
//! The simulation records what clients invoked and what they got back (or that the answer
//! was lost), what the store applied, and what the effect sink committed. The checker
//! reads only that history: it never asks the store what it thinks of itself.
//!
//! Checked here: I1 one terminal, I2 cancel wins, I3 no stale write, I4 tenant isolation,
//! I5 idempotent admission, I6 effect once, I7 expiry, I8 liveness, I9 result shape (at
//! the store boundary: a returned result is the wrapped request's `CallToolResult` or its
//! error; the related-task `_meta` belongs to the MCP layer and is checked there), I10 the
//! stored record wins over notifications.

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

#[derive(Clone, Debug, PartialEq, Eq)]
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

/// Checks every invariant; returns all violations found (empty: the history is clean).
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
        check_task(history, task_id, facts, context, &mut violations);
    }
    check_clients(history, &mut violations);
    violations
}

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

fn check_task(
    history: &[Event],
    task_id: &str,
    facts: &TaskFacts,
    context: &CheckContext,
    out: &mut Vec<Violation>,
) {
    let mut last_version = 0u64;
    let mut terminal: Option<(usize, TaskStatus, Option<&TaskOutcome>)> = None;
    let mut expires_at: Option<u64> = None;
    for &index in &facts.applied {
        let Event::Applied {
            kind,
            expected_version,
            version,
            status,
            outcome,
            expires_at_ms,
            at_ms,
            ..
        } = &history[index]
        else {
            continue;
        };
        if *kind == AppliedKind::Create {
            expires_at = *expires_at_ms;
        } else if let Some(expires) = expires_at
            && *at_ms >= expires
        {
            out.push(violation(
                "I7",
                task_id,
                format!("a change applied at {at_ms} ms, at or after expiry {expires} ms"),
                vec![index],
            ));
        }
        // I3: every change against the version it expected; versions grow by exactly one.
        if *version != last_version + 1 {
            out.push(violation(
                "I3",
                task_id,
                format!("version {last_version} -> {version}"),
                vec![index],
            ));
        }
        if let Some(expected) = expected_version
            && *expected != last_version
        {
            out.push(violation(
                "I3",
                task_id,
                format!("applied at expected version {expected}, stored was {last_version}"),
                vec![index],
            ));
        }
        last_version = *version;
        // I1: at most one terminal, after which nothing changes.
        if let Some((first, first_status, _)) = terminal {
            out.push(violation(
                "I1",
                task_id,
                format!("{first_status} was rewritten as {status}"),
                vec![first, index],
            ));
        }
        if status.is_terminal() {
            terminal = Some((index, *status, outcome.as_ref()));
        }
    }
    // Reads must agree with the applied history: nothing after a terminal status differs.
    let mut cancel_acknowledged: Option<usize> = None;
    for &index in &facts.reads {
        let Event::Client {
            op,
            result: ClientResult::Ok { decision, revealed },
            ..
        } = &history[index]
        else {
            continue;
        };
        if *decision == Decision::ApplyCancel
            && matches!(op, ClientOp::Cancel { task_id: t } if t == task_id)
        {
            cancel_acknowledged = Some(index);
        }
        for seen in revealed.iter().filter(|seen| seen.task_id == task_id) {
            if let Some((first, first_status, _)) = terminal
                && first < index
                && seen.status != first_status
            {
                out.push(violation(
                    "I1",
                    task_id,
                    format!("read {} after terminal {first_status}", seen.status),
                    vec![first, index],
                ));
            }
            // I2: once a cancel is acknowledged, no read shows completed or failed.
            if let Some(cancel) = cancel_acknowledged
                && cancel < index
                && matches!(seen.status, TaskStatus::Completed | TaskStatus::Failed)
            {
                out.push(violation(
                    "I2",
                    task_id,
                    format!("read {} after an acknowledged cancel", seen.status),
                    vec![cancel, index],
                ));
            }
        }
    }
    // I9: a returned result is the wrapped request's result type, matching the status.
    for &index in &facts.reads {
        let Event::Client {
            op: ClientOp::Result { .. },
            result:
                ClientResult::Ok {
                    decision: Decision::ReturnResult,
                    revealed,
                },
            ..
        } = &history[index]
        else {
            continue;
        };
        for seen in revealed.iter().filter(|seen| seen.task_id == task_id) {
            let is_error =
                |result: &serde_json::Value| result["isError"] == serde_json::Value::Bool(true);
            let well_formed = match (&seen.status, &seen.outcome) {
                (TaskStatus::Completed, Some(TaskOutcome::Result { result })) => {
                    result["content"].is_array() && !is_error(result)
                }
                (TaskStatus::Failed, Some(TaskOutcome::Result { result })) => is_error(result),
                (TaskStatus::Failed, Some(TaskOutcome::RpcError { .. })) => true,
                _ => false,
            };
            if !well_formed {
                out.push(violation(
                    "I9",
                    task_id,
                    format!(
                        "RETURN_RESULT for a {} task carried {:?}",
                        seen.status, seen.outcome
                    ),
                    vec![index],
                ));
            }
            if context.wire
                && let Some(TaskOutcome::Result { result }) = &seen.outcome
                && result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"]
                    != serde_json::Value::String(task_id.to_owned())
            {
                out.push(violation(
                    "I9",
                    task_id,
                    "tasks/result answered without the related-task _meta naming its task".into(),
                    vec![index],
                ));
            }
        }
    }
    // I10: no notification contradicts a later read: a later read is at least as new, and
    // at the same version shows the same status.
    for &notice in &facts.notified {
        let Event::Notified {
            status, version, ..
        } = &history[notice]
        else {
            continue;
        };
        for &index in facts.reads.iter().filter(|&&index| index > notice) {
            let Event::Client {
                result: ClientResult::Ok { revealed, .. },
                ..
            } = &history[index]
            else {
                continue;
            };
            for seen in revealed.iter().filter(|seen| seen.task_id == task_id) {
                let Some(seen_version) = seen.version else {
                    continue;
                };
                if seen_version < *version || (seen_version == *version && seen.status != *status) {
                    out.push(violation(
                        "I10",
                        task_id,
                        format!(
                            "notified {status} v{version}, later read {} v{seen_version}",
                            seen.status
                        ),
                        vec![notice, index],
                    ));
                }
            }
        }
    }
    // I6: at most one committed effect, and a completed result names it.
    if facts.effects.len() > 1 {
        out.push(violation(
            "I6",
            task_id,
            format!("{} committed effects", facts.effects.len()),
            facts.effects.clone(),
        ));
    }
    if let Some((index, TaskStatus::Completed, Some(TaskOutcome::Result { result }))) = terminal {
        let named = result["effect"].as_str();
        let committed = facts.effects.first().and_then(|&e| match &history[e] {
            Event::Effect { effect_id, .. } => Some(effect_id.as_str()),
            _ => None,
        });
        if named.is_some() && named != committed {
            out.push(violation(
                "I6",
                task_id,
                format!("result names effect {named:?}, the sink holds {committed:?}"),
                vec![index],
            ));
        }
    }
    // I8: after the faults healed, every accepted, unexpired task is terminal.
    if let Some(deadline) = context.liveness_deadline_ms {
        let created = facts.applied.iter().any(|&i| {
            matches!(
                &history[i],
                Event::Applied {
                    kind: AppliedKind::Create,
                    ..
                }
            )
        });
        let unexpired = expires_at.is_none_or(|expires| expires > deadline);
        if created && unexpired && terminal.is_none() {
            out.push(violation("I8", task_id, format!("not terminal by the liveness deadline {deadline} ms (last version {last_version})"), facts.applied.clone()));
        }
    }
}

/// I4 and I5, per client and caller.
fn check_clients(history: &[Event], out: &mut Vec<Violation>) {
    // When each task expires: a key's binding lives as long as its task (docs/design.md §3), so
    // after that a new task under the same key is a fresh admission, not a second one.
    let expiry: BTreeMap<&str, Option<u64>> = history
        .iter()
        .filter_map(|event| match event {
            Event::Applied {
                task_id,
                kind: AppliedKind::Create,
                expires_at_ms,
                ..
            } => Some((task_id.as_str(), *expires_at_ms)),
            _ => None,
        })
        .collect();
    let owners: BTreeMap<&str, &str> = history
        .iter()
        .filter_map(|event| match event {
            Event::Applied {
                task_id,
                auth_key,
                kind: AppliedKind::Create,
                ..
            } => Some((task_id.as_str(), auth_key.as_str())),
            _ => None,
        })
        .collect();
    // (caller, key) → (digest, task id, event) of the admission currently holding the key.
    let mut admitted: BTreeMap<(&str, &str), (&str, &str, usize)> = BTreeMap::new();
    for (index, event) in history.iter().enumerate() {
        let Event::Client {
            caller,
            op,
            result: ClientResult::Ok { decision, revealed },
            at_ms,
            ..
        } = event
        else {
            continue;
        };
        // I4: nothing another tenant owns is ever revealed to this caller. The owner is
        // the store's creation fact; an answer's own claim only where no fact exists.
        for seen in revealed {
            let owner = owners
                .get(seen.task_id.as_str())
                .copied()
                .unwrap_or(seen.auth_key.as_str());
            if !owner.is_empty() && owner != caller {
                out.push(violation(
                    "I4",
                    &seen.task_id,
                    format!("{caller} was shown a task of {owner}"),
                    vec![index],
                ));
            }
        }
        // I5: per (caller, key) one task while it lives; same digest replays it; another
        // digest is never admitted under it.
        let ClientOp::Create {
            idempotency_key: Some(key),
            digest,
        } = op
        else {
            continue;
        };
        let Some(task) = revealed.first() else {
            continue;
        };
        if !matches!(decision, Decision::AcceptTask | Decision::ReplayTask) {
            continue;
        }
        let slot = (caller.as_str(), key.as_str());
        let holder_expired = admitted.get(&slot).is_some_and(|(_, holder, _)| {
            expiry
                .get(holder)
                .copied()
                .flatten()
                .is_some_and(|expires_at_ms| *at_ms >= expires_at_ms)
        });
        match admitted.get(&slot) {
            Some((first_digest, first_id, first)) if !holder_expired => {
                if first_digest != digest {
                    out.push(violation(
                        "I5",
                        &task.task_id,
                        format!("key {key} admitted two digests"),
                        vec![*first, index],
                    ));
                } else if *first_id != task.task_id {
                    out.push(violation(
                        "I5",
                        &task.task_id,
                        format!("key {key} gave tasks {first_id} and {}", task.task_id),
                        vec![*first, index],
                    ));
                }
            }
            _ => {
                admitted.insert(slot, (digest, &task.task_id, index));
            }
        }
    }
}
