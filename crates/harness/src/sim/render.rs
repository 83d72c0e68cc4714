//! The timeline line of an event, written straight into a buffer: byte for byte what
//! `format!("{:>8} ms  {:<10}  {:?}", offset, lane, event)` writes (the derived `Debug` of
//! the history's types), without `core::fmt`'s per-field machinery. The trace hash is taken
//! over these lines for every event of every run, so they are on the simulation's hot path;
//! the unit test below holds them equal to the `Debug` rendering for whole histories.
//!
//! Leaves whose `Debug` is not rewritten here (enums of the contract, JSON numbers, strings
//! that need escaping) still go through their own `Debug`.

use crate::check::{AppliedKind, ClientOp, ClientResult, Event, Push, Revealed, WireFields};
use crate::contract::TaskOutcome;
use std::fmt::{Debug, Write as _};

/// Appends the timeline line of `event` on `lane`, `offset_ms` into the run.
pub(super) fn write_line(out: &mut String, offset_ms: u64, lane: &str, event: &Event) {
    // `{:>8}`: right-aligned in eight columns.
    let mut digits = itoa_buffer();
    let offset = format_u64(&mut digits, offset_ms);
    for _ in offset.len()..8 {
        out.push(' ');
    }
    out.push_str(offset);
    out.push_str(" ms  ");
    // `{:<10}`: left-aligned in ten columns (counted in chars, as `fmt` does).
    out.push_str(lane);
    for _ in lane.chars().count()..10 {
        out.push(' ');
    }
    out.push_str("  ");
    write_event(out, event);
}

fn write_event(out: &mut String, event: &Event) {
    match event {
        Event::Client {
            client,
            caller,
            op,
            result,
            at_ms,
            sent_after,
        } => {
            out.push_str("Client { client: ");
            write_str(out, client);
            out.push_str(", caller: ");
            write_str(out, caller);
            out.push_str(", op: ");
            write_op(out, op);
            out.push_str(", result: ");
            write_result(out, result);
            out.push_str(", at_ms: ");
            write_u64(out, *at_ms);
            out.push_str(", sent_after: ");
            match sent_after {
                Some(position) => {
                    out.push_str("Some(");
                    write_u64(out, *position as u64);
                    out.push(')');
                }
                None => out.push_str("None"),
            }
            out.push_str(" }");
        }
        Event::Applied {
            task_id,
            auth_key,
            kind,
            expected_version,
            version,
            status,
            outcome,
            expires_at_ms,
            asked,
            stored,
            at_ms,
        } => {
            out.push_str("Applied { task_id: ");
            write_str(out, task_id);
            out.push_str(", auth_key: ");
            write_str(out, auth_key);
            out.push_str(", kind: ");
            out.push_str(match kind {
                AppliedKind::Create => "Create",
                AppliedKind::Transition => "Transition",
                AppliedKind::Cancel => "Cancel",
                AppliedKind::Input => "Input",
            });
            out.push_str(", expected_version: ");
            write_option_u64(out, *expected_version);
            out.push_str(", version: ");
            write_u64(out, *version);
            out.push_str(", status: ");
            write_debug(out, status);
            out.push_str(", outcome: ");
            write_option_outcome(out, outcome.as_ref());
            out.push_str(", expires_at_ms: ");
            write_option_u64(out, *expires_at_ms);
            out.push_str(", asked: ");
            write_debug(out, asked);
            out.push_str(", stored: ");
            write_debug(out, stored);
            out.push_str(", at_ms: ");
            write_u64(out, *at_ms);
            out.push_str(" }");
        }
        _ => write_runtime_event(out, event),
    }
}

/// Effects, notifications, store errors and faults; the rest goes on.
fn write_runtime_event(out: &mut String, event: &Event) {
    match event {
        Event::Effect {
            task_id,
            effect_id,
            at_ms,
        } => {
            out.push_str("Effect { task_id: ");
            write_str(out, task_id);
            out.push_str(", effect_id: ");
            write_str(out, effect_id);
            out.push_str(", at_ms: ");
            write_u64(out, *at_ms);
            out.push_str(" }");
        }
        Event::Notified {
            task_id,
            status,
            version,
            at_ms,
        } => {
            out.push_str("Notified { task_id: ");
            write_str(out, task_id);
            out.push_str(", status: ");
            write_debug(out, status);
            out.push_str(", version: ");
            write_u64(out, *version);
            out.push_str(", at_ms: ");
            write_u64(out, *at_ms);
            out.push_str(" }");
        }
        Event::StoreError {
            op,
            task_id,
            error,
            at_ms,
        } => {
            out.push_str("StoreError { op: ");
            write_str(out, op);
            out.push_str(", task_id: ");
            write_str(out, task_id);
            out.push_str(", error: ");
            write_str(out, error);
            out.push_str(", at_ms: ");
            write_u64(out, *at_ms);
            out.push_str(" }");
        }
        Event::Fault { what, at_ms } => {
            out.push_str("Fault { what: ");
            write_str(out, what);
            out.push_str(", at_ms: ");
            write_u64(out, *at_ms);
            out.push_str(" }");
        }
        _ => write_outbox_event(out, event),
    }
}

/// Claims and acks, and the rarer events.
fn write_outbox_event(out: &mut String, event: &Event) {
    match event {
        Event::Claimed {
            task_id,
            attempt,
            status,
            version,
            at_ms,
        } => {
            out.push_str("Claimed { task_id: ");
            write_str(out, task_id);
            out.push_str(", attempt: ");
            write_u64(out, u64::from(*attempt));
            out.push_str(", status: ");
            write_debug(out, status);
            out.push_str(", version: ");
            write_u64(out, *version);
            out.push_str(", at_ms: ");
            write_u64(out, *at_ms);
            out.push_str(" }");
        }
        Event::Acked {
            task_id,
            attempt,
            retired,
            at_ms,
        } => {
            out.push_str("Acked { task_id: ");
            write_str(out, task_id);
            out.push_str(", attempt: ");
            write_u64(out, u64::from(*attempt));
            out.push_str(if *retired {
                ", retired: true, at_ms: "
            } else {
                ", retired: false, at_ms: "
            });
            write_u64(out, *at_ms);
            out.push_str(" }");
        }
        _ => write_run_event(out, event),
    }
}

/// Tool runs and pushed messages (several per task), and the rarer events.
fn write_run_event(out: &mut String, event: &Event) {
    match event {
        Event::ToolRun {
            task_id,
            version,
            read_at_ms,
            at_ms,
        } => {
            out.push_str("ToolRun { task_id: ");
            write_str(out, task_id);
            out.push_str(", version: ");
            write_u64(out, *version);
            out.push_str(", read_at_ms: ");
            write_u64(out, *read_at_ms);
            out.push_str(", at_ms: ");
            write_u64(out, *at_ms);
            out.push_str(" }");
        }
        Event::ToolReturned {
            task_id,
            version,
            outcome,
            at_ms,
        } => {
            out.push_str("ToolReturned { task_id: ");
            write_str(out, task_id);
            out.push_str(", version: ");
            write_u64(out, *version);
            out.push_str(", outcome: ");
            write_option_outcome(out, outcome.as_ref());
            out.push_str(", at_ms: ");
            write_u64(out, *at_ms);
            out.push_str(" }");
        }
        Event::Pushed {
            client,
            session,
            caller,
            message: Push::Status { seen, subscription },
            at_ms,
        } => {
            out.push_str("Pushed { client: ");
            write_str(out, client);
            out.push_str(", session: ");
            write_str(out, session);
            out.push_str(", caller: ");
            write_str(out, caller);
            out.push_str(", message: Status { seen: ");
            write_revealed(out, seen);
            out.push_str(", subscription: ");
            match subscription {
                Some(subscription) => {
                    out.push_str("Some(");
                    write_str(out, subscription);
                    out.push(')');
                }
                None => out.push_str("None"),
            }
            out.push_str(" }, at_ms: ");
            write_u64(out, *at_ms);
            out.push_str(" }");
        }
        // Rarer events (refusals, sweeps, injections, prepared and discarded effects,
        // runtime notes, progress, openings): their derived `Debug` is fast enough.
        _ => write_debug(out, event),
    }
}

fn write_op(out: &mut String, op: &ClientOp) {
    let (name, task_id) = match op {
        ClientOp::Create {
            idempotency_key,
            digest,
            ttl_ms,
            era,
        } => {
            out.push_str("Create { idempotency_key: ");
            match idempotency_key {
                Some(key) => {
                    out.push_str("Some(");
                    write_str(out, key);
                    out.push(')');
                }
                None => out.push_str("None"),
            }
            out.push_str(", digest: ");
            write_str(out, digest);
            out.push_str(", ttl_ms: ");
            write_option_u64(out, *ttl_ms);
            out.push_str(", era: ");
            write_debug(out, era);
            out.push_str(" }");
            return;
        }
        ClientOp::List { .. } | ClientOp::ProvideInput { .. } => {
            write_debug(out, op);
            return;
        }
        ClientOp::Get { task_id } => ("Get", task_id),
        ClientOp::Result { task_id } => ("Result", task_id),
        ClientOp::GetModern { task_id } => ("GetModern", task_id),
        ClientOp::Cancel { task_id } => ("Cancel", task_id),
    };
    out.push_str(name);
    out.push_str(" { task_id: ");
    write_str(out, task_id);
    out.push_str(" }");
}

fn write_result(out: &mut String, result: &ClientResult) {
    match result {
        ClientResult::Ok { decision, revealed } => {
            out.push_str("Ok { decision: ");
            write_debug(out, decision);
            out.push_str(", revealed: [");
            for (index, seen) in revealed.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                write_revealed(out, seen);
            }
            out.push_str("] }");
        }
        ClientResult::Fail { unavailable: true } => out.push_str("Fail { unavailable: true }"),
        ClientResult::Fail { unavailable: false } => out.push_str("Fail { unavailable: false }"),
        ClientResult::Indeterminate => out.push_str("Indeterminate"),
    }
}

fn write_revealed(out: &mut String, seen: &Revealed) {
    out.push_str("Revealed { task_id: ");
    write_str(out, &seen.task_id);
    out.push_str(", auth_key: ");
    write_str(out, &seen.auth_key);
    out.push_str(", status: ");
    write_debug(out, &seen.status);
    out.push_str(", version: ");
    write_option_u64(out, seen.version);
    out.push_str(", outcome: ");
    write_option_outcome(out, seen.outcome.as_ref());
    out.push_str(", fields: ");
    match &seen.fields {
        Some(fields) => {
            out.push_str("Some(");
            write_fields(out, fields);
            out.push(')');
        }
        None => out.push_str("None"),
    }
    out.push_str(" }");
}

fn write_fields(out: &mut String, fields: &WireFields) {
    out.push_str("WireFields { era: ");
    write_debug(out, &fields.era);
    out.push_str(", status_message: ");
    match &fields.status_message {
        Some(message) => {
            out.push_str("Some(");
            write_str(out, message);
            out.push(')');
        }
        None => out.push_str("None"),
    }
    out.push_str(", poll_interval_ms: ");
    write_option_u64(out, fields.poll_interval_ms);
    out.push_str(", ttl_ms: ");
    write_option_u64(out, fields.ttl_ms);
    out.push_str(", created_at_ms: ");
    write_u64(out, fields.created_at_ms);
    out.push_str(", updated_at_ms: ");
    write_u64(out, fields.updated_at_ms);
    out.push_str(", input_requests: ");
    write_debug(out, &fields.input_requests);
    out.push_str(", malformed: ");
    write_debug(out, &fields.malformed);
    out.push_str(" }");
}

fn write_option_outcome(out: &mut String, outcome: Option<&TaskOutcome>) {
    match outcome {
        Some(outcome) => {
            out.push_str("Some(");
            write_outcome(out, outcome);
            out.push(')');
        }
        None => out.push_str("None"),
    }
}

fn write_outcome(out: &mut String, outcome: &TaskOutcome) {
    match outcome {
        TaskOutcome::Result { result } => {
            out.push_str("Result { result: ");
            write_value(out, result);
            out.push_str(" }");
        }
        TaskOutcome::RpcError {
            code,
            message,
            data,
        } => {
            out.push_str("RpcError { code: ");
            write_debug(out, code);
            out.push_str(", message: ");
            write_str(out, message);
            out.push_str(", data: ");
            match data {
                Some(data) => {
                    out.push_str("Some(");
                    write_value(out, data);
                    out.push(')');
                }
                None => out.push_str("None"),
            }
            out.push_str(" }");
        }
    }
}

/// A JSON value as `serde_json::Value`'s `Debug` writes it (numbers still through theirs).
fn write_value(out: &mut String, value: &serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Null => out.push_str("Null"),
        Value::Bool(true) => out.push_str("Bool(true)"),
        Value::Bool(false) => out.push_str("Bool(false)"),
        Value::Number(number) => write_debug(out, number),
        Value::String(text) => {
            out.push_str("String(");
            write_str(out, text);
            out.push(')');
        }
        Value::Array(items) => {
            out.push_str("Array [");
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(members) => {
            out.push_str("Object {");
            for (index, (name, member)) in members.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                write_str(out, name);
                out.push_str(": ");
                write_value(out, member);
            }
            out.push('}');
        }
    }
}

fn write_option_u64(out: &mut String, value: Option<u64>) {
    match value {
        Some(value) => {
            out.push_str("Some(");
            write_u64(out, value);
            out.push(')');
        }
        None => out.push_str("None"),
    }
}

/// A string as `Debug` writes it: quoted, escaped. Printable ASCII other than `"` and `\`
/// is written as is; anything else takes `str`'s own `Debug`.
fn write_str(out: &mut String, text: &str) {
    if text
        .bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
    {
        out.push('"');
        out.push_str(text);
        out.push('"');
    } else {
        write_debug(out, text);
    }
}

fn write_debug(out: &mut String, value: &(impl Debug + ?Sized)) {
    // Writing into a String cannot fail.
    let _ = write!(out, "{value:?}");
}

fn write_u64(out: &mut String, value: u64) {
    let mut digits = itoa_buffer();
    out.push_str(format_u64(&mut digits, value));
}

fn itoa_buffer() -> [u8; 20] {
    [0; 20]
}

/// `value` in decimal, in the tail of `buffer`.
fn format_u64(buffer: &mut [u8; 20], mut value: u64) -> &str {
    let mut at = buffer.len();
    loop {
        at -= 1;
        buffer[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    std::str::from_utf8(&buffer[at..]).expect("ASCII digits")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{Asked, Injection, RuntimeNote, Stored, WireFields};
    use crate::contract::{Decision, Era, TaskStatus};
    use serde_json::json;

    fn reference(offset_ms: u64, lane: &str, event: &Event) -> String {
        format!("{offset_ms:>8} ms  {lane:<10}  {event:?}")
    }

    fn fast(offset_ms: u64, lane: &str, event: &Event) -> String {
        let mut out = String::new();
        write_line(&mut out, offset_ms, lane, event);
        out
    }

    /// A result with every JSON oddity, an RPC error with data and one without.
    fn sample_outcomes() -> [TaskOutcome; 3] {
        let outcome = TaskOutcome::Result {
            result: json!({
                "content": [{ "type": "text", "text": "é\n\"x\"" }, [], {}, [null, true, -3]],
                "isError": false,
                "n": 1.5,
                "big": u64::MAX,
                "neg": i64::MIN,
                "tiny": 1e-300,
                "k\u{1}ey": "\t",
            }),
        };
        let error = TaskOutcome::RpcError {
            code: -32603,
            message: "boom".into(),
            data: Some(json!({ "taskId": "t" })),
        };
        let bare_error = TaskOutcome::RpcError {
            code: 7,
            message: "\"quoted\"".into(),
            data: None,
        };
        [outcome, error, bare_error]
    }

    fn outcome_for_push() -> TaskOutcome {
        sample_outcomes()[0].clone()
    }

    fn revealed(outcome: Option<TaskOutcome>, version: Option<u64>) -> Revealed {
        Revealed {
            task_id: "0123abcd".into(),
            auth_key: String::new(),
            status: TaskStatus::InputRequired,
            version,
            outcome,
            fields: version.map(|at| {
                Box::new(WireFields {
                    era: Era::Extension2026,
                    status_message: Some("ü\"".into()),
                    poll_interval_ms: Some(at),
                    ttl_ms: None,
                    created_at_ms: 1,
                    updated_at_ms: 2,
                    input_requests: Some(
                        json!({ "q": { "method": "x" } })
                            .as_object()
                            .cloned()
                            .expect("object"),
                    ),
                    malformed: Some("createdAt".into()),
                })
            }),
        }
    }

    /// One of each event but the applied writes and the client steps.
    fn plain_events() -> Vec<Event> {
        vec![
            Event::Claimed {
                task_id: "t".into(),
                attempt: 2,
                status: TaskStatus::Working,
                version: 1,
                at_ms: 3,
            },
            Event::Acked {
                task_id: "t".into(),
                attempt: 2,
                retired: true,
                at_ms: 4,
            },
            Event::Acked {
                task_id: "t".into(),
                attempt: 1,
                retired: false,
                at_ms: 4,
            },
            Event::Refused {
                task_id: "t".into(),
                caller: "c".into(),
                kind: AppliedKind::Transition,
                expected_version: Some(1),
                next: Some(TaskStatus::Completed),
                answered: vec!["q".into()],
                decision: Decision::BlockStaleVersion,
                at_ms: 5,
            },
            Event::Swept {
                max: 2,
                swept: 1,
                at_ms: 6,
            },
            Event::Injected {
                what: Injection::IdCollision {
                    task_id: "t".into(),
                },
                at_ms: 7,
            },
            Event::Runtime {
                what: RuntimeNote::DuplicateAbsorbed,
                task_id: "t".into(),
                at_ms: 8,
            },
            Event::Fault {
                what: "start baseline seed 7 knobs Knobs { a: [1, 2] } sweep None".into(),
                at_ms: 0,
            },
            Event::Fault {
                what: "tab\there \\ quote\" and \u{7f} \u{301} ünïcode".into(),
                at_ms: u64::MAX,
            },
            Event::EffectPrepared {
                task_id: "t".into(),
                effect_id: "export-t".into(),
                at_ms: 11,
            },
            Event::Effect {
                task_id: "t".into(),
                effect_id: "export-t".into(),
                at_ms: 12,
            },
            Event::EffectDiscarded {
                task_id: "t".into(),
                at_ms: 13,
            },
            Event::Notified {
                task_id: "t".into(),
                status: TaskStatus::Cancelled,
                version: 3,
                at_ms: 99,
            },
        ]
    }

    /// Tool runs, progress, an opened listen.
    fn run_events() -> Vec<Event> {
        vec![
            Event::ToolRun {
                task_id: "t".into(),
                version: 2,
                read_at_ms: 40,
                at_ms: 41,
            },
            Event::ToolReturned {
                task_id: "t".into(),
                version: 2,
                outcome: None,
                at_ms: 42,
            },
            Event::Pushed {
                client: "c".into(),
                session: "c~1".into(),
                caller: "tenant-0/user".into(),
                message: crate::check::Push::Progress {
                    token: "c/k".into(),
                },
                at_ms: 43,
            },
            Event::Opened {
                client: "c".into(),
                session: "c".into(),
                what: crate::check::Opening::Listen {
                    subscription: "c/listen-1".into(),
                    task_ids: vec!["t".into(), "u".into()],
                },
                at_ms: 44,
            },
        ]
    }

    /// Each kind of applied write, with each kind of outcome.
    fn applied_events(outcomes: &[TaskOutcome; 3], events: &mut Vec<Event>) {
        let [outcome, error, bare_error] = outcomes.clone();
        for (kind, expected, outcome) in [
            (AppliedKind::Create, None, None),
            (AppliedKind::Transition, Some(1), Some(outcome.clone())),
            (AppliedKind::Cancel, Some(2), Some(error.clone())),
            (AppliedKind::Cancel, Some(3), Some(bare_error)),
        ] {
            events.push(Event::Applied {
                task_id: "t".into(),
                auth_key: "tenant-0/user".into(),
                kind,
                expected_version: expected,
                version: 2,
                status: TaskStatus::Completed,
                outcome,
                expires_at_ms: expected.map(|at| at * 1_000),
                asked: Box::new(Asked::Transition {
                    irreversible_effect: None,
                    next: TaskStatus::Failed,
                    outcome: Some(error.clone()),
                    status_message: None,
                    input_requests: None,
                }),
                stored: Box::new(Stored {
                    irreversible_effect: None,
                    created_at_ms: 1,
                    updated_at_ms: 2,
                    ttl_ms: expected,
                    poll_interval_ms: None,
                    status_message: Some("m".into()),
                    era: Era::Core2025,
                    cancel_requested: true,
                    input_requests: None,
                    input_responses: None,
                }),
                at_ms: 1_767_225_600_000,
            });
        }
    }

    /// Every client operation with every kind of result.
    fn client_events(outcomes: &[TaskOutcome; 3], events: &mut Vec<Event>) {
        let [outcome, error, _] = outcomes.clone();
        let ops = [
            ClientOp::Create {
                idempotency_key: Some("tenant-0/user#3".into()),
                digest: "sha256:00ff".into(),
                ttl_ms: Some(7),
                era: Era::Core2025,
            },
            ClientOp::Create {
                idempotency_key: None,
                digest: String::new(),
                ttl_ms: None,
                era: Era::Extension2026,
            },
            ClientOp::Get {
                task_id: "a".into(),
            },
            ClientOp::Result {
                task_id: "b".into(),
            },
            ClientOp::Cancel {
                task_id: "c".into(),
            },
            ClientOp::ProvideInput {
                task_id: "d".into(),
                responses: None,
            },
            ClientOp::GetModern {
                task_id: "e".into(),
            },
            ClientOp::List {
                after: Some("x".into()),
                next_cursor: true,
            },
        ];
        let results = [
            ClientResult::Fail { unavailable: true },
            ClientResult::Fail { unavailable: false },
            ClientResult::Indeterminate,
            ClientResult::Ok {
                decision: Decision::ListTenantFiltered,
                revealed: Vec::new(),
            },
            ClientResult::Ok {
                decision: Decision::ReturnResult,
                revealed: vec![revealed(Some(outcome), None), revealed(None, Some(4))],
            },
            ClientResult::Ok {
                decision: Decision::ReturnResult,
                revealed: vec![revealed(Some(error), Some(1))],
            },
        ];
        for (seen, subscription) in [
            (
                revealed(Some(outcome_for_push()), Some(4)),
                Some("c/listen-1"),
            ),
            (revealed(None, None), None),
        ] {
            events.push(Event::Pushed {
                client: "client-0".into(),
                session: "client-0/watch~1".into(),
                caller: "tenant-0/user".into(),
                message: Push::Status {
                    seen,
                    subscription: subscription.map(String::from),
                },
                at_ms: 6,
            });
        }
        events.push(Event::ToolReturned {
            task_id: "t".into(),
            version: 1,
            outcome: Some(outcome_for_push()),
            at_ms: 7,
        });
        for op in &ops {
            for result in &results {
                events.push(Event::Client {
                    client: "client-0".into(),
                    caller: "tenant-0/user".into(),
                    op: op.clone(),
                    result: result.clone(),
                    at_ms: 5,
                    sent_after: Some(3),
                });
            }
        }
    }

    #[test]
    fn lines_equal_the_debug_rendering() {
        let outcomes = sample_outcomes();
        let mut events = plain_events();
        events.extend(run_events());
        applied_events(&outcomes, &mut events);
        client_events(&outcomes, &mut events);
        for event in &events {
            for (offset, lane) in [
                (0, "client-0"),
                (12_345_678, "supervisor"),
                (123_456_789, "a-lane-longer-than-ten"),
                (7, "wörker"),
                (3, ""),
            ] {
                assert_eq!(fast(offset, lane, event), reference(offset, lane, event));
            }
        }
    }
}
