//! Hand-written histories for the oracle's tests: events built the way the simulation
//! records them, consistent unless a test breaks one on purpose.

#![allow(dead_code)] // each test binary uses a different part of this module

use tasklatch::check::{
    AppliedKind, Asked, CheckContext, ClientOp, ClientResult, Event, Injection, Revealed,
    RuntimeNote, Stored, check,
};
use tasklatch::contract::{Decision, Era, TaskStatus};

/// A change the store applied to task `task_id` of owner `a`, expiring at 1,000 ms.
pub fn applied(
    task_id: &str,
    kind: AppliedKind,
    expected: Option<u64>,
    version: u64,
    status: TaskStatus,
    at_ms: u64,
) -> Event {
    Event::Applied {
        task_id: task_id.into(),
        auth_key: "a".into(),
        kind,
        expected_version: expected,
        version,
        status,
        outcome: None,
        expires_at_ms: Some(1_000),
        asked: Box::new(match kind {
            AppliedKind::Create => Asked::Create {
                ttl_ms: Some(1_000u64.saturating_sub(at_ms)),
                poll_interval_ms: None,
                era: Era::Core2025,
                input_responses: None,
                digest: String::new(),
            },
            AppliedKind::Cancel => Asked::Cancel,
            _ => Asked::Transition {
                irreversible_effect: None,
                next: status,
                outcome: None,
                status_message: None,
                input_requests: None,
            },
        }),
        stored: Box::new(Stored {
            irreversible_effect: None,
            created_at_ms: at_ms,
            updated_at_ms: at_ms,
            ttl_ms: Some(1_000u64.saturating_sub(at_ms)),
            poll_interval_ms: None,
            status_message: None,
            era: Era::Core2025,
            cancel_requested: kind == AppliedKind::Cancel,
            input_requests: None,
            input_responses: None,
        }),
        at_ms,
    }
}

pub fn create(task_id: &str, key: &str, digest: &str, decision: Decision, at_ms: u64) -> Event {
    Event::Client {
        client: "c".into(),
        caller: "a".into(),
        op: ClientOp::Create {
            idempotency_key: Some(key.into()),
            digest: digest.into(),
            ttl_ms: None,
            era: Era::Core2025,
        },
        result: ClientResult::Ok {
            decision,
            revealed: vec![Revealed {
                task_id: task_id.into(),
                auth_key: "a".into(),
                status: TaskStatus::Working,
                version: Some(1),
                outcome: None,
                fields: None,
            }],
        },
        at_ms,
        sent_after: None,
    }
}

/// Claim number `attempt` of the task's outbox entry, reporting `status` v`version`.
pub fn claimed(task_id: &str, attempt: u32, status: TaskStatus, version: u64, at_ms: u64) -> Event {
    Event::Claimed {
        task_id: task_id.into(),
        attempt,
        status,
        version,
        at_ms,
    }
}

/// An acknowledgement of claim `attempt`.
pub fn acked(task_id: &str, attempt: u32, retired: bool, at_ms: u64) -> Event {
    Event::Acked {
        task_id: task_id.into(),
        attempt,
        retired,
        at_ms,
    }
}

/// A write by `caller` the store refused with `decision`.
pub fn refused(
    task_id: &str,
    caller: &str,
    kind: AppliedKind,
    expected_version: Option<u64>,
    next: Option<TaskStatus>,
    decision: Decision,
    at_ms: u64,
) -> Event {
    Event::Refused {
        task_id: task_id.into(),
        caller: caller.into(),
        kind,
        expected_version,
        next,
        answered: Vec::new(),
        decision,
        at_ms,
    }
}

/// The runtime noting `what` for a task.
pub fn runtime(what: RuntimeNote, task_id: &str, at_ms: u64) -> Event {
    Event::Runtime {
        what,
        task_id: task_id.into(),
        at_ms,
    }
}

/// A fault the world injected.
pub fn injected(what: Injection, at_ms: u64) -> Event {
    Event::Injected { what, at_ms }
}

/// A sweep that deleted `swept` of at most `max`.
pub fn swept(max: usize, swept: usize, at_ms: u64) -> Event {
    Event::Swept { max, swept, at_ms }
}

/// A create of client `c` (owner `a`) that failed.
pub fn create_failed(unavailable: bool, at_ms: u64) -> Event {
    Event::Client {
        client: "c".into(),
        caller: "a".into(),
        op: ClientOp::Create {
            idempotency_key: Some("k".into()),
            digest: "d".into(),
            ttl_ms: None,
            era: Era::Core2025,
        },
        result: ClientResult::Fail { unavailable },
        at_ms,
        sent_after: None,
    }
}

/// The history with every applied record carrying what its task's creation set (creation
/// time, TTL, poll interval, era), a time that never runs backwards, and a cancel's intent
/// and message, so a test breaks only the rule it means to: `applied` alone cannot know
/// the task's creation.
pub fn consistent(history: &[Event]) -> Vec<Event> {
    let mut last: std::collections::BTreeMap<String, Stored> = Default::default();
    let mut history = history.to_vec();
    for event in &mut history {
        let Event::Applied {
            task_id,
            kind,
            asked,
            stored,
            at_ms,
            ..
        } = event
        else {
            continue;
        };
        if let (false, Some(before)) = (*kind == AppliedKind::Create, last.get(task_id.as_str())) {
            stored.created_at_ms = before.created_at_ms;
            stored.updated_at_ms = before.updated_at_ms.max(*at_ms);
            stored.ttl_ms = before.ttl_ms;
            stored.poll_interval_ms = before.poll_interval_ms;
            stored.era = before.era;
            stored.cancel_requested = before.cancel_requested;
            if matches!(
                &**asked,
                Asked::Transition {
                    status_message: None,
                    ..
                }
            ) {
                stored.status_message = before.status_message.clone();
            }
            if *kind == AppliedKind::Cancel {
                stored.cancel_requested = true;
                stored.status_message = Some("cancelled by the requestor".into());
            }
        }
        last.insert(task_id.clone(), (**stored).clone());
    }
    history
}

/// The invariants `history` (made [`consistent`]) breaks, in the order they are reported.
pub fn invariants(history: &[Event]) -> Vec<&'static str> {
    check(&consistent(history), &CheckContext::default())
        .iter()
        .map(|v| v.invariant)
        .collect()
}
