//! The oracle on hand-written histories: it flags what it must and nothing else.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use crate::histories;

use histories::{applied, consistent, create, invariants, refused};
use tasklatch::check::{
    AppliedKind, Asked, CheckContext, ClientOp, ClientResult, Event, Revealed, check,
};
use tasklatch::contract::{Decision, Era, TaskOutcome, TaskStatus};

#[test]
fn a_clean_history_has_no_violations() {
    let history = [
        applied("t1", AppliedKind::Create, None, 1, TaskStatus::Working, 10),
        create("t1", "k", "d1", Decision::AcceptTask, 10),
        create("t1", "k", "d1", Decision::ReplayTask, 20),
        applied(
            "t1",
            AppliedKind::Transition,
            Some(1),
            2,
            TaskStatus::Completed,
            30,
        ),
    ];
    assert_eq!(invariants(&history), Vec::<&str>::new());
}

#[test]
fn one_key_two_live_tasks_is_i5_but_not_after_expiry() {
    let live = [
        applied("t1", AppliedKind::Create, None, 1, TaskStatus::Working, 10),
        create("t1", "k", "d1", Decision::AcceptTask, 10),
        applied("t2", AppliedKind::Create, None, 1, TaskStatus::Working, 20),
        create("t2", "k", "d1", Decision::AcceptTask, 20),
    ];
    assert_eq!(invariants(&live), ["I5"]);
    let after_expiry = [
        applied("t1", AppliedKind::Create, None, 1, TaskStatus::Working, 10),
        create("t1", "k", "d1", Decision::AcceptTask, 10),
        applied(
            "t2",
            AppliedKind::Create,
            None,
            1,
            TaskStatus::Working,
            1_000,
        ),
        create("t2", "k", "d1", Decision::AcceptTask, 1_000),
    ];
    assert_eq!(
        invariants(&after_expiry),
        Vec::<&str>::new(),
        "t1 expired at 1000: its key is free"
    );
    let other_digest = [
        applied("t1", AppliedKind::Create, None, 1, TaskStatus::Working, 10),
        create("t1", "k", "d1", Decision::AcceptTask, 10),
        create("t1", "k", "d2", Decision::ReplayTask, 20),
    ];
    assert_eq!(invariants(&other_digest), ["I5"]);
}

/// t's admission, its request digest `digest`, at `at_ms`.
fn admitted(task_id: &str, digest: &str, at_ms: u64) -> Event {
    let mut event = applied(
        task_id,
        AppliedKind::Create,
        None,
        1,
        TaskStatus::Working,
        at_ms,
    );
    if let Event::Applied { asked, .. } = &mut event
        && let Asked::Create { digest: asked, .. } = &mut **asked
    {
        *asked = digest.to_owned();
    }
    event
}

#[test]
fn a_keyed_retry_that_admits_a_second_task_is_i5_even_unanswered() {
    let mut lost = create("t1", "k", "d1", Decision::AcceptTask, 10);
    if let Event::Client { result, .. } = &mut lost {
        *result = ClientResult::Indeterminate;
    }
    // The first answer lost; the retry (a new session) admitted another task.
    let twice = [
        admitted("t1", "d1", 10),
        lost.clone(),
        admitted("t2", "d1", 20),
        create("t2", "k", "d1", Decision::AcceptTask, 20),
    ];
    assert_eq!(invariants(&twice), ["I5"]);
    // The retry found the first: one task.
    let once = [
        admitted("t1", "d1", 10),
        lost,
        create("t1", "k", "d1", Decision::ReplayTask, 20),
    ];
    assert_eq!(invariants(&once), Vec::<&str>::new());
}

#[test]
fn rewrites_stale_writes_late_writes_and_leaks_are_named() {
    let rewrite = [
        applied("t1", AppliedKind::Create, None, 1, TaskStatus::Working, 10),
        applied(
            "t1",
            AppliedKind::Cancel,
            Some(1),
            2,
            TaskStatus::Cancelled,
            20,
        ),
        applied(
            "t1",
            AppliedKind::Transition,
            Some(2),
            3,
            TaskStatus::Completed,
            30,
        ),
    ];
    assert_eq!(invariants(&rewrite), ["I1"]);
    let stale = [
        applied("t1", AppliedKind::Create, None, 1, TaskStatus::Working, 10),
        applied(
            "t1",
            AppliedKind::Transition,
            Some(1),
            2,
            TaskStatus::InputRequired,
            20,
        ),
        applied(
            "t1",
            AppliedKind::Transition,
            Some(1),
            3,
            TaskStatus::Completed,
            30,
        ),
    ];
    assert_eq!(invariants(&stale), ["I3"]);
    let late = [
        applied("t1", AppliedKind::Create, None, 1, TaskStatus::Working, 10),
        applied(
            "t1",
            AppliedKind::Transition,
            Some(1),
            2,
            TaskStatus::Completed,
            1_000,
        ),
    ];
    assert_eq!(invariants(&late), ["I7"]);
    let mut leak = create("t9", "k", "d", Decision::AcceptTask, 10);
    if let Event::Client { caller, .. } = &mut leak {
        *caller = "b".into();
    }
    assert_eq!(invariants(&[leak]), ["I4"]);
}

/// A `tasks/get` of t1 answered `working` v1 at 40 ms, sent when the history held
/// `sent_after` events.
fn late_working_read(sent_after: Option<usize>) -> Event {
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
                status: TaskStatus::Working,
                version: Some(1),
                outcome: None,
                fields: None,
            }],
        },
        at_ms: 40,
        sent_after,
    }
}

#[test]
fn a_read_answered_late_may_show_what_was_true_when_it_was_sent() {
    let with = |sent_after| {
        [
            applied("t1", AppliedKind::Create, None, 1, TaskStatus::Working, 10),
            create("t1", "k", "d1", Decision::AcceptTask, 10),
            applied(
                "t1",
                AppliedKind::Transition,
                Some(1),
                2,
                TaskStatus::Completed,
                30,
            ),
            late_working_read(sent_after),
        ]
    };
    // Sent before the completion (a server paused with the request in hand): truthful.
    assert_eq!(invariants(&with(Some(2))), Vec::<&str>::new());
    // Sent after it, or with no send position (judged as sent when answered): stale.
    assert_eq!(invariants(&with(Some(3))), ["I1"]);
    assert_eq!(invariants(&with(None)), ["I1"]);
}

#[test]
fn liveness_names_tasks_left_unfinished() {
    let history = [applied(
        "t1",
        AppliedKind::Create,
        None,
        1,
        TaskStatus::Working,
        10,
    )];
    let context = CheckContext {
        liveness_deadline_ms: Some(500),
        wire: false,
        server: None,
    };
    let violations = check(&consistent(&history), &context);
    assert_eq!(
        violations.iter().map(|v| v.invariant).collect::<Vec<_>>(),
        ["I8"]
    );
    assert_eq!(violations[0].task_id, "t1");
}

/// A `tasks/result` answer of `payload` for task t1, completed, as the wire showed it.
fn result_read(payload: serde_json::Value) -> Event {
    Event::Client {
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
                status: TaskStatus::Completed,
                version: None,
                outcome: Some(TaskOutcome::Result { result: payload }),
                fields: None,
            }],
        },
        at_ms: 40,
        sent_after: None,
    }
}

#[test]
fn on_the_wire_a_result_must_name_its_task() {
    let wire = CheckContext {
        liveness_deadline_ms: None,
        wire: true,
        server: None,
    };
    let content = serde_json::json!([{ "type": "text", "text": "done" }]);
    let payload = serde_json::json!({ "content": content, "isError": false });
    let mut done = applied(
        "t1",
        AppliedKind::Transition,
        Some(1),
        2,
        TaskStatus::Completed,
        30,
    );
    if let Event::Applied { outcome, asked, .. } = &mut done {
        *outcome = Some(TaskOutcome::Result {
            result: payload.clone(),
        });
        if let Asked::Transition { outcome, .. } = &mut **asked {
            *outcome = Some(TaskOutcome::Result { result: payload });
        }
    }
    let base = [
        applied("t1", AppliedKind::Create, None, 1, TaskStatus::Working, 10),
        done,
    ];
    let named = serde_json::json!({
        "content": content, "isError": false,
        "_meta": { "io.modelcontextprotocol/related-task": { "taskId": "t1" } }
    });
    let unnamed = serde_json::json!({ "content": content, "isError": false });
    let misnamed = serde_json::json!({
        "content": content, "isError": false,
        "_meta": { "io.modelcontextprotocol/related-task": { "taskId": "t2" } }
    });
    let judge = |payload: serde_json::Value, context: &CheckContext| {
        let mut history = base.to_vec();
        history.push(result_read(payload));
        check(&consistent(&history), context)
            .iter()
            .map(|v| v.invariant)
            .collect::<Vec<_>>()
    };
    assert_eq!(judge(named, &wire), Vec::<&str>::new());
    assert_eq!(judge(unnamed.clone(), &wire), vec!["I9"]);
    assert_eq!(judge(misnamed, &wire), vec!["I9"]);
    // At the store boundary (no wire) the payload carries no _meta, and that is fine.
    assert_eq!(judge(unnamed, &CheckContext::default()), Vec::<&str>::new());
}

#[test]
fn the_owner_is_the_creation_fact_not_the_answer() {
    // The wire names no owner; the creation fact says t1 is a's, and b was shown it.
    let mut shown_to_b = create("t1", "k", "d1", Decision::AcceptTask, 20);
    if let Event::Client {
        caller,
        result: ClientResult::Ok { revealed, .. },
        ..
    } = &mut shown_to_b
    {
        *caller = "b".into();
        revealed[0].auth_key = String::new();
    }
    let history = [
        applied("t1", AppliedKind::Create, None, 1, TaskStatus::Working, 10),
        shown_to_b,
    ];
    assert!(
        invariants(&history).contains(&"I4"),
        "{:?}",
        invariants(&history)
    );
}

#[test]
fn a_store_error_no_fault_explains_is_f1() {
    let created = applied("t1", AppliedKind::Create, None, 1, TaskStatus::Working, 10);
    assert!(invariants(std::slice::from_ref(&created)).is_empty());
    let failed = Event::StoreError {
        op: "create",
        task_id: "t1".into(),
        error: "cannot replay a task: disk on fire".into(),
        at_ms: 20,
    };
    assert_eq!(invariants(&[created, failed]), ["F1"]);
}

fn prepared(task_id: &str, at_ms: u64) -> Event {
    Event::EffectPrepared {
        task_id: task_id.into(),
        effect_id: format!("export-{task_id}"),
        at_ms,
    }
}

fn published(task_id: &str, at_ms: u64) -> Event {
    Event::Effect {
        task_id: task_id.into(),
        effect_id: format!("export-{task_id}"),
        at_ms,
    }
}

fn discarded(task_id: &str, at_ms: u64) -> Event {
    Event::EffectDiscarded {
        task_id: task_id.into(),
        at_ms,
    }
}

fn ended(status: TaskStatus, at_ms: u64) -> Event {
    let kind = match status {
        TaskStatus::Cancelled => AppliedKind::Cancel,
        _ => AppliedKind::Transition,
    };
    applied("t1", kind, Some(1), 2, status, at_ms)
}

/// I17 over a history ending at a liveness deadline of 500 ms (the task expires at 1000).
fn at_deadline(history: &[Event]) -> Vec<&'static str> {
    let context = CheckContext {
        liveness_deadline_ms: Some(500),
        wire: false,
        server: None,
    };
    check(&consistent(history), &context)
        .iter()
        .map(|v| v.invariant)
        .collect()
}

#[test]
fn an_effect_is_published_only_after_its_task_completed() {
    let created = applied("t1", AppliedKind::Create, None, 1, TaskStatus::Working, 10);
    let decided_then_published = [
        created.clone(),
        prepared("t1", 20),
        ended(TaskStatus::Completed, 30),
        published("t1", 31),
    ];
    assert_eq!(at_deadline(&decided_then_published), Vec::<&str>::new());
    let cancelled_and_discarded = [
        created.clone(),
        prepared("t1", 20),
        ended(TaskStatus::Cancelled, 25),
        discarded("t1", 31),
    ];
    assert_eq!(at_deadline(&cancelled_and_discarded), Vec::<&str>::new());

    let published_before_decide = [
        created.clone(),
        prepared("t1", 20),
        published("t1", 25),
        ended(TaskStatus::Completed, 30),
    ];
    assert_eq!(at_deadline(&published_before_decide), ["I17"]);
    let cancelled_with_effect = [
        created.clone(),
        prepared("t1", 20),
        ended(TaskStatus::Cancelled, 25),
        published("t1", 30),
    ];
    assert_eq!(at_deadline(&cancelled_with_effect), ["I17"]);
    let live_with_effect = [created.clone(), prepared("t1", 20), published("t1", 30)];
    assert_eq!(
        invariants(&live_with_effect),
        ["I17"],
        "no deadline: liveness aside"
    );
    let cancelled_left_prepared = [
        created.clone(),
        prepared("t1", 20),
        ended(TaskStatus::Cancelled, 25),
    ];
    assert_eq!(at_deadline(&cancelled_left_prepared), ["I17"]);
    assert_eq!(
        invariants(&cancelled_left_prepared),
        Vec::<&str>::new(),
        "without a liveness deadline a discard may still come"
    );
    let prepared_again_after_discard = [
        created,
        prepared("t1", 20),
        ended(TaskStatus::Failed, 25),
        discarded("t1", 26),
        prepared("t1", 27),
    ];
    assert_eq!(at_deadline(&prepared_again_after_discard), ["I17"]);
}

/// A task of `era` that declared its point of no return at version 2 (at 20 ms).
fn declared_history(era: Era) -> Vec<Event> {
    let in_era = |mut event: Event| {
        if let Event::Applied { stored, asked, .. } = &mut event {
            stored.era = era;
            if let Asked::Create { era: asked, .. } = &mut **asked {
                *asked = era;
            }
        }
        event
    };
    let mut declared = in_era(applied(
        "t1",
        AppliedKind::Transition,
        Some(1),
        2,
        TaskStatus::Working,
        20,
    ));
    if let Event::Applied { stored, asked, .. } = &mut declared {
        stored.irreversible_effect = Some("notify-t1".into());
        stored.status_message = Some("past its point of no return: notify-t1".into());
        **asked = Asked::Transition {
            next: TaskStatus::Working,
            outcome: None,
            status_message: stored.status_message.clone(),
            input_requests: None,
            irreversible_effect: Some("notify-t1".into()),
        };
    }
    vec![
        in_era(applied(
            "t1",
            AppliedKind::Create,
            None,
            1,
            TaskStatus::Working,
            10,
        )),
        declared,
    ]
}

#[test]
fn a_2026_task_past_its_point_of_no_return_is_never_cancelled() {
    let cancelled = |era: Era| {
        let mut history = declared_history(era);
        let mut cancel = applied(
            "t1",
            AppliedKind::Cancel,
            Some(2),
            3,
            TaskStatus::Cancelled,
            30,
        );
        if let Event::Applied { stored, .. } = &mut cancel {
            stored.era = era;
            stored.irreversible_effect = Some("notify-t1".into());
        }
        history.push(cancel);
        invariants(&history)
    };
    assert!(
        cancelled(Era::Extension2026).contains(&"I18"),
        "{:?}",
        cancelled(Era::Extension2026)
    );
    assert!(
        !cancelled(Era::Core2025).contains(&"I18"),
        "2025-11-25 cancels apply past the point"
    );
    let mut not_declared = declared_history(Era::Extension2026);
    not_declared.truncate(1);
    not_declared.push(applied(
        "t1",
        AppliedKind::Cancel,
        Some(1),
        2,
        TaskStatus::Cancelled,
        30,
    ));
    assert!(!invariants(&not_declared).contains(&"I18"));
}

#[test]
fn a_cancel_acknowledged_past_the_point_is_explained_only_by_a_declaration() {
    let acknowledged = refused(
        "t1",
        "a",
        AppliedKind::Cancel,
        None,
        None,
        Decision::PastPointOfNoReturn,
        30,
    );
    let mut history = declared_history(Era::Extension2026);
    history.push(acknowledged.clone());
    assert!(
        !invariants(&history).contains(&"F3"),
        "{:?}",
        invariants(&history)
    );
    let mut undeclared = declared_history(Era::Extension2026);
    undeclared.truncate(1);
    undeclared.push(acknowledged);
    assert!(
        invariants(&undeclared).contains(&"F3"),
        "{:?}",
        invariants(&undeclared)
    );
}
