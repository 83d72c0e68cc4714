//! Fidelity: every field a store writes and a client reads is judged, not only status and
//! version. I11 holds the record a store answered to each write to the oracle's own
//! construction from the record before and the command given; I12 holds every field a
//! client was shown to the record the last applied write left; I13 holds each admission to
//! what the client asked and the server's settings.
//!
//! The construction rules are restated here, never taken from the contract's helpers: a
//! bug planted in those helpers would otherwise be agreed with (docs/design.md §5).

use super::{
    AppliedKind, Asked, CheckContext, ClientOp, ClientResult, Event, Revealed, Stored, TaskFacts,
    Violation, WireFields, violation,
};
use crate::contract::{Era, InputMap, TaskOutcome, TaskStatus};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Debug;

/// The message a requestor's cancel leaves on the task (restated).
const CANCEL_MESSAGE: &str = "cancelled by the requestor";
/// What a 2025-11-25 read shows for a `cancelled` task with no message of its own.
const CANCELLED_DEFAULT_2025: &str = "Cancelled by requestor";
/// What a 2025-11-25 read shows for a `failed` task with no message of its own.
const FAILED_DEFAULT_2025: &str = "The tool reported an error; tasks/result returns it";
/// The `_meta` key a 2025-11-25 `tasks/result` adds to name its task.
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// A whole record as the oracle sees it: what an `Applied` event carries.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Record<'h> {
    pub(super) status: TaskStatus,
    pub(super) version: u64,
    pub(super) outcome: Option<&'h TaskOutcome>,
    pub(super) expires_at_ms: Option<u64>,
    pub(super) stored: Stored,
}

/// Builds the record a write must leave: from the record before it (`None` for an
/// admission) and the command, at `at_ms`.
fn construct<'h>(before: Option<&Record<'h>>, asked: &'h Asked, at_ms: u64) -> Option<Record<'h>> {
    let moved = |before: &Record<'h>, next: TaskStatus| {
        let mut after = before.clone();
        after.status = next;
        after.version = before.version + 1;
        after.stored.updated_at_ms = before.stored.updated_at_ms.max(at_ms);
        if next == TaskStatus::Working {
            after.stored.input_requests = None;
        }
        after
    };
    Some(match asked {
        Asked::Create {
            ttl_ms,
            poll_interval_ms,
            era,
            input_responses,
            ..
        } => Record {
            status: TaskStatus::Working,
            version: 1,
            outcome: None,
            expires_at_ms: ttl_ms.map(|ttl| at_ms.saturating_add(ttl)),
            stored: Stored {
                irreversible_effect: None,
                created_at_ms: at_ms,
                updated_at_ms: at_ms,
                ttl_ms: *ttl_ms,
                poll_interval_ms: *poll_interval_ms,
                status_message: None,
                era: *era,
                cancel_requested: false,
                input_requests: None,
                input_responses: input_responses.clone().filter(|given| !given.is_empty()),
            },
        },
        Asked::Transition {
            next,
            outcome,
            status_message,
            input_requests,
            irreversible_effect,
        } => {
            let mut after = moved(before?, *next);
            if irreversible_effect.is_some() {
                after.stored.irreversible_effect = irreversible_effect.clone();
            }
            if next.is_terminal() {
                after.outcome = outcome.as_ref();
            }
            if status_message.is_some() {
                after.stored.status_message = status_message.clone();
            }
            if *next == TaskStatus::InputRequired {
                after.stored.input_requests = input_requests.clone();
            }
            after
        }
        Asked::Cancel => {
            let mut after = moved(before?, TaskStatus::Cancelled);
            after.stored.cancel_requested = true;
            // Past its point of no return, the cancel names the effect already started.
            after.stored.status_message = Some(match &after.stored.irreversible_effect {
                None => CANCEL_MESSAGE.into(),
                Some(effect) => format!(
                    "{CANCEL_MESSAGE} past its point of no return: {effect} was started and is not undone"
                ),
            });
            after
        }
        Asked::Input { responses } => {
            let before = before?;
            let open = before.stored.input_requests.clone().unwrap_or_default();
            let mut after = before.clone();
            after.version = before.version + 1;
            after.stored.updated_at_ms = before.stored.updated_at_ms.max(at_ms);
            let mut still_open = open.clone();
            for (key, answer) in responses.iter().filter(|(key, _)| open.contains_key(*key)) {
                still_open.remove(key);
                after
                    .stored
                    .input_responses
                    .get_or_insert_with(InputMap::new)
                    .insert(key.clone(), answer.clone());
            }
            if still_open.is_empty() {
                after.status = TaskStatus::Working;
                after.stored.input_requests = None;
            } else {
                after.stored.input_requests = Some(still_open);
            }
            after
        }
    })
}

/// The fields of two records that differ: `name: expected …, actual …`.
fn differences(expected: &Record<'_>, actual: &Record<'_>) -> Vec<String> {
    let mut out = Vec::new();
    let mut field = |name: &str, want: &dyn Debug, got: &dyn Debug, same: bool| {
        if !same {
            out.push(format!("{name}: constructed {want:?}, stored {got:?}"));
        }
    };
    let (e, a) = (&expected.stored, &actual.stored);
    field(
        "status",
        &expected.status,
        &actual.status,
        expected.status == actual.status,
    );
    field(
        "version",
        &expected.version,
        &actual.version,
        expected.version == actual.version,
    );
    field(
        "outcome",
        &expected.outcome,
        &actual.outcome,
        expected.outcome == actual.outcome,
    );
    field(
        "expiresAt",
        &expected.expires_at_ms,
        &actual.expires_at_ms,
        expected.expires_at_ms == actual.expires_at_ms,
    );
    field(
        "createdAt",
        &e.created_at_ms,
        &a.created_at_ms,
        e.created_at_ms == a.created_at_ms,
    );
    field(
        "lastUpdatedAt",
        &e.updated_at_ms,
        &a.updated_at_ms,
        e.updated_at_ms == a.updated_at_ms,
    );
    field("ttl", &e.ttl_ms, &a.ttl_ms, e.ttl_ms == a.ttl_ms);
    field(
        "pollInterval",
        &e.poll_interval_ms,
        &a.poll_interval_ms,
        e.poll_interval_ms == a.poll_interval_ms,
    );
    field(
        "statusMessage",
        &e.status_message,
        &a.status_message,
        e.status_message == a.status_message,
    );
    field("era", &e.era, &a.era, e.era == a.era);
    field(
        "cancelRequested",
        &e.cancel_requested,
        &a.cancel_requested,
        e.cancel_requested == a.cancel_requested,
    );
    field(
        "inputRequests",
        &e.input_requests,
        &a.input_requests,
        e.input_requests == a.input_requests,
    );
    field(
        "inputResponses",
        &e.input_responses,
        &a.input_responses,
        e.input_responses == a.input_responses,
    );
    out
}

/// A task's applied changes: event index, the record after it, what was asked, when.
pub(super) type Records<'h> = Vec<(usize, Record<'h>, &'h Asked, AppliedKind, u64)>;

/// A task's applied changes, read once for I11, I12 and I16.
pub(super) fn records<'h>(history: &'h [Event], facts: &TaskFacts) -> Records<'h> {
    facts
        .applied
        .iter()
        .filter_map(|&index| match &history[index] {
            Event::Applied {
                kind,
                version,
                status,
                outcome,
                expires_at_ms,
                asked,
                stored,
                at_ms,
                ..
            } => Some((
                index,
                Record {
                    status: *status,
                    version: *version,
                    outcome: outcome.as_ref(),
                    expires_at_ms: *expires_at_ms,
                    stored: (**stored).clone(),
                },
                &**asked,
                *kind,
                *at_ms,
            )),
            _ => None,
        })
        .collect()
}

/// I11 and I12 for one task.
pub(super) fn check_task(
    history: &[Event],
    task_id: &str,
    facts: &TaskFacts,
    records: &Records<'_>,
    out: &mut Vec<Violation>,
) {
    // I11: each answered record is the construction from the one before (as stored: one
    // wrong field is reported where it was written, not again at every later write).
    let mut before: Option<&Record<'_>> = None;
    for (index, actual, asked, kind, at_ms) in records {
        let base = if *kind == AppliedKind::Create {
            None
        } else {
            before
        };
        if let Some(expected) = construct(base, asked, *at_ms) {
            let wrong = differences(&expected, actual);
            if !wrong.is_empty() {
                out.push(violation(
                    "I11",
                    task_id,
                    format!("a {kind:?} stored {}", wrong.join("; ")),
                    vec![*index],
                ));
            }
        }
        before = Some(actual);
    }
    // I12: every read shows the record at the version it names (or as of the read).
    for &index in &facts.reads {
        let Event::Client {
            op,
            result: ClientResult::Ok { revealed, .. },
            ..
        } = &history[index]
        else {
            continue;
        };
        for seen in revealed.iter().filter(|seen| seen.task_id == task_id) {
            let state = match seen.version {
                Some(version) => records
                    .iter()
                    .rev()
                    .find(|(_, record, ..)| record.version == version),
                None => records.iter().rev().find(|(at, ..)| *at < index),
            };
            let Some((written, record, ..)) = state else {
                continue;
            };
            let wrong = shown_differences(op, seen, record);
            if !wrong.is_empty() {
                out.push(violation(
                    "I12",
                    task_id,
                    format!("a read of v{} showed {}", record.version, wrong.join("; ")),
                    vec![*written, index],
                ));
            }
        }
    }
}

/// What a read showed that the record it names does not hold.
fn shown_differences(op: &ClientOp, seen: &Revealed, record: &Record<'_>) -> Vec<String> {
    let mut out = Vec::new();
    if seen.version.is_some() && seen.status != record.status {
        out.push(format!("status {} (stored {})", seen.status, record.status));
    }
    if let Some(fields) = &seen.fields {
        wire_differences(fields, record, &mut out);
    }
    let shown_outcome = match op {
        ClientOp::Result { .. } => seen.outcome.as_ref().map(|o| (o, Era::Core2025)),
        ClientOp::GetModern { .. } => seen.outcome.as_ref().map(|o| (o, Era::Extension2026)),
        _ => None,
    };
    if let Some((shown, era)) = shown_outcome {
        let same = record
            .outcome
            .is_some_and(|stored| same_outcome(shown, stored, era));
        if !same {
            out.push(format!("outcome {shown:?} (stored {:?})", record.outcome));
        }
    }
    out
}

pub(super) fn wire_differences(fields: &WireFields, record: &Record<'_>, out: &mut Vec<String>) {
    if let Some(malformed) = &fields.malformed {
        out.push(format!("a malformed task: {malformed}"));
        return;
    }
    let stored = &record.stored;
    let message = match (fields.era, &stored.status_message, record.status) {
        (_, Some(message), _) => Some(message.as_str()),
        (Era::Core2025, None, TaskStatus::Cancelled) => Some(CANCELLED_DEFAULT_2025),
        (Era::Core2025, None, TaskStatus::Failed) => Some(FAILED_DEFAULT_2025),
        _ => None,
    };
    if fields.status_message.as_deref() != message {
        out.push(format!(
            "statusMessage {:?} (stored {message:?})",
            fields.status_message
        ));
    }
    let pairs = [
        ("ttl", fields.ttl_ms, stored.ttl_ms),
        (
            "pollInterval",
            fields.poll_interval_ms,
            stored.poll_interval_ms,
        ),
        (
            "createdAt",
            Some(fields.created_at_ms),
            Some(stored.created_at_ms),
        ),
        (
            "lastUpdatedAt",
            Some(fields.updated_at_ms),
            Some(stored.updated_at_ms),
        ),
    ];
    for (name, shown, held) in pairs {
        if shown != held {
            out.push(format!("{name} {shown:?} (stored {held:?})"));
        }
    }
    // 2026-07-28 `tasks/get` inlines the open questions of an `input_required` task.
    let questions = match (fields.era, record.status, record.outcome) {
        (Era::Extension2026, TaskStatus::InputRequired, None) => {
            Some(stored.input_requests.clone().unwrap_or_default())
        }
        _ => None,
    };
    if fields.input_requests.is_some() && fields.input_requests != questions {
        out.push(format!(
            "inputRequests {:?} (stored {:?})",
            fields.input_requests, stored.input_requests
        ));
    }
}

/// Whether a shown outcome is the stored one, allowing what the era's wire adds: the
/// related-task `_meta` of a 2025-11-25 `tasks/result`, the `resultType` of 2026-07-28.
pub(super) fn same_outcome(shown: &TaskOutcome, stored: &TaskOutcome, era: Era) -> bool {
    match (shown, stored) {
        (TaskOutcome::Result { result: shown }, TaskOutcome::Result { result: stored }) => {
            let mut shown = shown.clone();
            if let Some(object) = shown.as_object_mut() {
                match era {
                    Era::Core2025 => {
                        let emptied = object
                            .get_mut("_meta")
                            .and_then(Value::as_object_mut)
                            .is_some_and(|meta| {
                                meta.remove(RELATED_TASK);
                                meta.is_empty()
                            });
                        if emptied && stored.get("_meta").is_none() {
                            object.remove("_meta");
                        }
                    }
                    Era::Extension2026 => {
                        if stored.get("resultType").is_none() {
                            object.remove("resultType");
                        }
                    }
                }
            }
            shown == *stored
        }
        (
            TaskOutcome::RpcError {
                code,
                message,
                data,
            },
            TaskOutcome::RpcError {
                code: stored_code,
                message: stored_message,
                data: stored_data,
            },
        ) => {
            let present = |data: &Option<Value>| data.clone().filter(|data| !data.is_null());
            code == stored_code
                && message == stored_message
                && present(data) == present(stored_data)
        }
        _ => false,
    }
}

/// I13: each admission carries what its client asked for: the requested TTL clamped to the
/// server's maximum (the server's default when none was asked, always so for a 2026-07-28
/// client), the server's poll interval, the client's era. Needs the server's settings.
pub(super) fn i13_admitted_as_asked(
    history: &[Event],
    context: &CheckContext,
    out: &mut Vec<Violation>,
) {
    let Some(server) = context.server else {
        return;
    };
    let admissions: BTreeMap<&str, (usize, &Asked)> = history
        .iter()
        .enumerate()
        .filter_map(|(index, event)| match event {
            Event::Applied {
                task_id,
                kind: AppliedKind::Create,
                asked,
                ..
            } => Some((task_id.as_str(), (index, &**asked))),
            _ => None,
        })
        .collect();
    for (index, event) in history.iter().enumerate() {
        let Event::Client {
            op: ClientOp::Create { ttl_ms, era, .. },
            result: ClientResult::Ok { revealed, .. },
            ..
        } = event
        else {
            continue;
        };
        for seen in revealed {
            let Some((
                created,
                Asked::Create {
                    ttl_ms: granted,
                    poll_interval_ms,
                    era: admitted_era,
                    ..
                },
            )) = admissions.get(seen.task_id.as_str()).copied()
            else {
                continue;
            };
            let ttl_expected = ttl_ms
                .or(server.ttl_ms_default)
                .map(|ttl| ttl.min(server.ttl_ms_max));
            let mut wrong = Vec::new();
            if *granted != ttl_expected {
                wrong.push(format!(
                    "ttl {granted:?} (asked {ttl_ms:?}, expected {ttl_expected:?})"
                ));
            }
            if *poll_interval_ms != Some(server.poll_interval_ms) {
                wrong.push(format!(
                    "pollInterval {poll_interval_ms:?} (the server's is {})",
                    server.poll_interval_ms
                ));
            }
            if admitted_era != era {
                wrong.push(format!("era {admitted_era:?} (the client spoke {era:?})"));
            }
            if !wrong.is_empty() {
                out.push(violation(
                    "I13",
                    &seen.task_id,
                    format!("admitted with {}", wrong.join("; ")),
                    vec![created, index],
                ));
            }
        }
    }
}

/// I15: an id names one task: no second creation fact for an id (an admission given an id
/// the store holds must be refused, never answered with the existing record).
pub(super) fn i15_one_creation_per_id(history: &[Event], out: &mut Vec<Violation>) {
    let mut first: BTreeMap<&str, usize> = BTreeMap::new();
    for (index, event) in history.iter().enumerate() {
        if let Event::Applied {
            task_id,
            kind: AppliedKind::Create,
            ..
        } = event
        {
            if let Some(&earlier) = first.get(task_id.as_str()) {
                out.push(violation(
                    "I15",
                    task_id,
                    "a second admission under an id already holding a task".into(),
                    vec![earlier, index],
                ));
            } else {
                first.insert(task_id, index);
            }
        }
    }
}

/// I16: the answers reach the tool: a completed result that names an effect echoes
/// (`answers`) exactly the answers stored at the version its completion expected.
pub(super) fn i16_answers_reach_the_tool(
    task_id: &str,
    records: &Records<'_>,
    out: &mut Vec<Violation>,
) {
    for (position, (index, record, ..)) in records.iter().enumerate() {
        let Some(TaskOutcome::Result { result }) = record.outcome else {
            continue;
        };
        if record.status != TaskStatus::Completed || result.get("effect").is_none() {
            continue;
        }
        let Some((_, before, ..)) = position.checked_sub(1).map(|at| &records[at]) else {
            continue;
        };
        let stored = before.stored.input_responses.clone().map(Value::Object);
        if result.get("answers") != stored.as_ref() {
            out.push(violation(
                "I16",
                task_id,
                format!(
                    "the tool's result echoes answers {:?}, the task held {stored:?}",
                    result.get("answers")
                ),
                vec![*index],
            ));
        }
    }
}
