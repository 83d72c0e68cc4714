//! Fidelity on hand-written histories: I11 (a store's answer to a write is the record the
//! write constructs), I12 (a client is shown the record as written), I13 (an admission
//! carries what the client asked and the server's settings). Each names the field.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use crate::histories;

use histories::*;
use tasklatch::check::{
    AppliedKind, Asked, CheckContext, ClientOp, ClientResult, Event, Revealed, ServerFacts,
    WireFields, check,
};
use tasklatch::contract::{Decision, Era, TaskOutcome, TaskStatus};

fn violations(history: &[Event], context: &CheckContext) -> Vec<String> {
    check(&consistent(history), context)
        .iter()
        .map(|v| format!("{}: {}", v.invariant, v.detail))
        .collect()
}

fn rules(history: &[Event]) -> Vec<String> {
    violations(history, &CheckContext::default())
}

fn created() -> Event {
    applied("t1", AppliedKind::Create, None, 1, TaskStatus::Working, 10)
}

/// A transition of t1 to `next` at v`version`, asked with `message`, stored with `kept`.
fn moved(version: u64, next: TaskStatus, message: Option<&str>, kept: Option<&str>) -> Event {
    let mut event = applied(
        "t1",
        AppliedKind::Transition,
        Some(version - 1),
        version,
        next,
        20,
    );
    if let Event::Applied { asked, .. } = &mut event {
        **asked = Asked::Transition {
            irreversible_effect: None,
            next,
            outcome: None,
            status_message: message.map(Into::into),
            input_requests: (next == TaskStatus::InputRequired).then(|| {
                serde_json::json!({ "q": {} })
                    .as_object()
                    .cloned()
                    .expect("map")
            }),
        };
    }
    if let Event::Applied { stored, .. } = &mut event {
        stored.status_message = kept.map(Into::into);
        if next == TaskStatus::InputRequired {
            stored.input_requests = serde_json::json!({ "q": {} }).as_object().cloned();
        }
    }
    event
}

#[test]
fn i11_a_write_stores_what_it_constructs() {
    let asked = [
        created(),
        moved(2, TaskStatus::InputRequired, Some("which?"), Some("which?")),
    ];
    assert_eq!(rules(&asked), Vec::<String>::new());
    let dropped = [
        created(),
        moved(2, TaskStatus::InputRequired, Some("which?"), None),
    ];
    let found = rules(&dropped);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("I11: a Transition stored statusMessage"),
        "{found:?}"
    );
    // An admission: the creation time and the TTL are the command's.
    let mut late = created();
    if let Event::Applied { stored, .. } = &mut late {
        stored.created_at_ms = 0;
    }
    let found = check(&[late], &CheckContext::default());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0]
            .detail
            .contains("createdAt: constructed 10, stored 0"),
        "{found:?}"
    );
}

/// A 2025-11-25 `tasks/get` of t1 at v`version` showing `fields`.
fn get(version: u64, status: TaskStatus, fields: WireFields) -> Event {
    Event::Client {
        client: "c".into(),
        caller: "a".into(),
        op: ClientOp::Get {
            task_id: "t1".into(),
        },
        result: ClientResult::Ok {
            decision: Decision::ReturnStatus,
            revealed: vec![Revealed {
                task_id: "t1".into(),
                auth_key: String::new(),
                status,
                version: Some(version),
                outcome: None,
                fields: Some(Box::new(fields)),
            }],
        },
        at_ms: 50,
        sent_after: None,
    }
}

fn shown() -> WireFields {
    WireFields {
        era: Era::Core2025,
        status_message: None,
        poll_interval_ms: None,
        ttl_ms: Some(990),
        created_at_ms: 10,
        updated_at_ms: 10,
        input_requests: None,
        malformed: None,
    }
}

#[test]
fn i12_a_read_shows_the_record_as_written() {
    assert_eq!(
        rules(&[created(), get(1, TaskStatus::Working, shown())]),
        Vec::<String>::new()
    );
    let ttl = WireFields {
        ttl_ms: Some(1_000),
        ..shown()
    };
    let found = rules(&[created(), get(1, TaskStatus::Working, ttl)]);
    assert_eq!(
        found,
        ["I12: a read of v1 showed ttl Some(1000) (stored Some(990))"]
    );
    let malformed = WireFields {
        malformed: Some("createdAt missing".into()),
        ..shown()
    };
    let found = rules(&[created(), get(1, TaskStatus::Working, malformed)]);
    assert_eq!(
        found,
        ["I12: a read of v1 showed a malformed task: createdAt missing"]
    );
    // 2025-11-25 shows a default message for a cancelled task that has none of its own;
    // a cancel stores "cancelled by the requestor", which is what must be shown.
    let cancelled = applied(
        "t1",
        AppliedKind::Cancel,
        Some(1),
        2,
        TaskStatus::Cancelled,
        20,
    );
    let cancelled_read = WireFields {
        status_message: Some("cancelled by the requestor".into()),
        updated_at_ms: 20,
        ..shown()
    };
    let history = [
        created(),
        cancelled.clone(),
        get(2, TaskStatus::Cancelled, cancelled_read),
    ];
    assert_eq!(rules(&history), Vec::<String>::new());
    let defaulted = WireFields {
        status_message: Some("Cancelled by requestor".into()),
        updated_at_ms: 20,
        ..shown()
    };
    let found = rules(&[
        created(),
        cancelled,
        get(2, TaskStatus::Cancelled, defaulted),
    ]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("I12: a read of v2 showed statusMessage"),
        "{found:?}"
    );
}

#[test]
fn i12_an_outcome_is_shown_as_stored() {
    let error = TaskOutcome::RpcError {
        code: -32000,
        message: "disk".into(),
        data: Some(serde_json::json!({ "n": 2 })),
    };
    let mut failed = applied(
        "t1",
        AppliedKind::Transition,
        Some(1),
        2,
        TaskStatus::Failed,
        20,
    );
    if let Event::Applied { outcome, asked, .. } = &mut failed {
        *outcome = Some(error.clone());
        if let Asked::Transition { outcome, .. } = &mut **asked {
            *outcome = Some(error.clone());
        }
    }
    let read = |outcome: TaskOutcome| Event::Client {
        client: "c".into(),
        caller: "a".into(),
        op: ClientOp::Result {
            task_id: "t1".into(),
        },
        result: ClientResult::Ok {
            decision: Decision::ReturnResult,
            revealed: vec![Revealed {
                task_id: "t1".into(),
                auth_key: String::new(),
                status: TaskStatus::Failed,
                version: None,
                outcome: Some(outcome),
                fields: None,
            }],
        },
        at_ms: 60,
        sent_after: None,
    };
    assert_eq!(
        rules(&[created(), failed.clone(), read(error)]),
        Vec::<String>::new()
    );
    let bare = TaskOutcome::RpcError {
        code: -32000,
        message: "disk".into(),
        data: None,
    };
    let found = rules(&[created(), failed, read(bare)]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("I12: a read of v2 showed outcome"),
        "{found:?}"
    );
}

#[test]
fn i13_an_admission_is_what_the_client_asked() {
    let server = ServerFacts {
        ttl_ms_default: Some(990),
        ttl_ms_max: 5_000,
        poll_interval_ms: 7,
        list_page: 10,
    };
    let context = CheckContext {
        server: Some(server),
        ..CheckContext::default()
    };
    let with_poll = |event: Event, poll: Option<u64>| {
        let mut event = event;
        if let Event::Applied { asked, .. } = &mut event
            && let Asked::Create {
                poll_interval_ms, ..
            } = &mut **asked
        {
            *poll_interval_ms = poll;
        }
        if let Event::Applied { stored, .. } = &mut event {
            stored.poll_interval_ms = poll;
        }
        event
    };
    let client = create("t1", "k", "d", Decision::AcceptTask, 10);
    assert_eq!(
        violations(&[with_poll(created(), Some(7)), client.clone()], &context),
        Vec::<String>::new()
    );
    let found = violations(&[with_poll(created(), None), client.clone()], &context);
    assert_eq!(
        found,
        ["I13: admitted with pollInterval None (the server's is 7)"]
    );
    // A client that asked for a TTL over the maximum is granted the maximum.
    let mut asked_long = client;
    if let Event::Client {
        op: ClientOp::Create { ttl_ms, .. },
        ..
    } = &mut asked_long
    {
        *ttl_ms = Some(60_000);
    }
    let found = violations(&[with_poll(created(), Some(7)), asked_long], &context);
    assert_eq!(
        found,
        ["I13: admitted with ttl Some(990) (asked Some(60000), expected Some(5000))"]
    );
}

#[test]
fn i15_an_id_names_one_task() {
    let twice = [
        created(),
        applied("t1", AppliedKind::Create, None, 1, TaskStatus::Working, 30),
    ];
    let found: Vec<&str> = check(&consistent(&twice), &CheckContext::default())
        .iter()
        .map(|v| v.invariant)
        .collect();
    assert_eq!(
        found,
        ["I3", "I15"],
        "the second creation also restarts the versions"
    );
}

#[test]
fn i16_a_completed_export_echoes_the_answers_it_was_given() {
    let answers = serde_json::json!({ "q": { "action": "accept" } });
    let mut asked = moved(2, TaskStatus::InputRequired, Some("which?"), Some("which?"));
    let mut answered = applied(
        "t1",
        AppliedKind::Input,
        Some(2),
        3,
        TaskStatus::Working,
        30,
    );
    if let Event::Applied {
        asked: command,
        stored,
        ..
    } = &mut answered
    {
        **command = Asked::Input {
            responses: answers.as_object().cloned().expect("map"),
        };
        stored.status_message = Some("which?".into());
        stored.input_responses = answers.as_object().cloned();
    }
    if let Event::Applied { stored, .. } = &mut asked {
        stored.status_message = Some("which?".into());
    }
    let done = |echo: Option<serde_json::Value>| {
        let mut result = serde_json::json!({ "content": [], "effect": "export-t1" });
        if let Some(echo) = echo {
            result["answers"] = echo;
        }
        let outcome = TaskOutcome::Result { result };
        let mut event = applied(
            "t1",
            AppliedKind::Transition,
            Some(3),
            4,
            TaskStatus::Completed,
            40,
        );
        if let Event::Applied {
            outcome: stored_outcome,
            asked,
            stored,
            ..
        } = &mut event
        {
            *stored_outcome = Some(outcome.clone());
            **asked = Asked::Transition {
                irreversible_effect: None,
                next: TaskStatus::Completed,
                outcome: Some(outcome),
                status_message: None,
                input_requests: None,
            };
            stored.status_message = Some("which?".into());
            stored.input_responses = answers.as_object().cloned();
        }
        event
    };
    // Published once the completion is decided (I17).
    let effect = Event::Effect {
        task_id: "t1".into(),
        effect_id: "export-t1".into(),
        at_ms: 41,
    };
    let history = |echo| {
        vec![
            created(),
            asked.clone(),
            answered.clone(),
            done(echo),
            effect.clone(),
        ]
    };
    assert_eq!(rules(&history(Some(answers.clone()))), Vec::<String>::new());
    let found = rules(&history(None));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("I16: the tool's result echoes answers None"),
        "{found:?}"
    );
}
