//! The oracle on pushed messages (I19, I4) and tool runs (I20): each rule flags the
//! history that breaks it, and the clean history beside it passes.
#![cfg(not(feature = "mutants"))]

use crate::histories;

use histories::{applied, invariants, refused};
use tasklatch::check::{AppliedKind, Asked, Event, Opening, Push, Revealed, WireFields};
use tasklatch::contract::{Decision, Era, TaskOutcome, TaskStatus};

/// `notifications/tasks/status` of task `t1` saying `status`, on `session` of `caller`.
fn status_pushed(session: &str, caller: &str, status: TaskStatus, updated_at_ms: u64) -> Event {
    let fields = WireFields {
        era: Era::Core2025,
        status_message: None,
        poll_interval_ms: None,
        ttl_ms: Some(990),
        created_at_ms: 10,
        updated_at_ms,
        input_requests: None,
        malformed: None,
    };
    Event::Pushed {
        client: "c".into(),
        session: session.into(),
        caller: caller.into(),
        message: Push::Status {
            seen: Revealed {
                task_id: "t1".into(),
                auth_key: String::new(),
                status,
                version: None,
                outcome: None,
                fields: Some(Box::new(fields)),
            },
            subscription: None,
        },
        at_ms: 60,
    }
}

fn opened(session: &str, what: Opening) -> Event {
    Event::Opened {
        client: "c".into(),
        session: session.into(),
        what,
        at_ms: 5,
    }
}

fn created() -> Event {
    applied("t1", AppliedKind::Create, None, 1, TaskStatus::Working, 10)
}

#[test]
fn a_pushed_status_is_the_owners_and_was_stored() {
    let told = [created(), status_pushed("s", "a", TaskStatus::Working, 10)];
    assert_eq!(invariants(&told), Vec::<&str>::new());
    // Another tenant's session hears of it: I4.
    let leaked = [created(), status_pushed("s", "b", TaskStatus::Working, 10)];
    assert_eq!(invariants(&leaked), ["I4"]);
    // A status no stored version had (or not yet, when it was read): I19.
    let invented = [
        created(),
        status_pushed("s", "a", TaskStatus::Completed, 10),
    ];
    assert_eq!(invariants(&invented), ["I19"]);
    let early = [
        created(),
        status_pushed("s", "a", TaskStatus::Completed, 30),
        applied(
            "t1",
            AppliedKind::Transition,
            Some(1),
            2,
            TaskStatus::Completed,
            30,
        ),
    ];
    assert_eq!(invariants(&early), ["I19"]);
    // A field the stored version did not hold: I19.
    let wrong_time = [created(), status_pushed("s", "a", TaskStatus::Working, 11)];
    assert_eq!(invariants(&wrong_time), ["I19"]);
}

#[test]
fn progress_reaches_only_the_session_that_sent_its_token() {
    let token = || Opening::ProgressToken {
        token: "s/k".into(),
    };
    let progress = |session: &str| Event::Pushed {
        client: "c".into(),
        session: session.into(),
        caller: "a".into(),
        message: Push::Progress {
            token: "s/k".into(),
        },
        at_ms: 50,
    };
    assert_eq!(
        invariants(&[opened("s", token()), progress("s")]),
        Vec::<&str>::new()
    );
    assert_eq!(
        invariants(&[opened("s", token()), progress("watch")]),
        ["I19"]
    );
    assert_eq!(invariants(&[progress("s")]), ["I19"]);
}

#[test]
fn a_listen_message_goes_to_its_stream_about_a_task_it_named() {
    let listen = |task_ids: Vec<String>| Opening::Listen {
        subscription: "l1".into(),
        task_ids,
    };
    let on = |session: &str| {
        let mut event = status_pushed(session, "a", TaskStatus::Working, 10);
        if let Event::Pushed {
            message: Push::Status { subscription, .. },
            ..
        } = &mut event
        {
            *subscription = Some("l1".into());
        }
        event
    };
    let named = vec!["t1".to_owned()];
    let good = [created(), opened("s", listen(named.clone())), on("s")];
    assert_eq!(invariants(&good), Vec::<&str>::new());
    let elsewhere = [created(), opened("s", listen(named)), on("other")];
    assert_eq!(invariants(&elsewhere), ["I19"]);
    let unnamed = [created(), opened("s", listen(vec!["t2".into()])), on("s")];
    assert_eq!(invariants(&unnamed), ["I19"]);
    let never = [created(), on("s")];
    assert_eq!(invariants(&never), ["I19"]);
}

/// `t1` moved to `input_required` at version 2, asking `{"confirm": elicitation "ok?"}`.
fn input_required() -> Event {
    let mut event = applied(
        "t1",
        AppliedKind::Transition,
        Some(1),
        2,
        TaskStatus::InputRequired,
        20,
    );
    let question = serde_json::json!({
        "method": "elicitation/create",
        "params": { "message": "ok?" },
    });
    let open: serde_json::Map<String, serde_json::Value> =
        [("confirm".to_owned(), question)].into_iter().collect();
    if let Event::Applied { asked, stored, .. } = &mut event {
        stored.input_requests = Some(open.clone());
        if let Asked::Transition { input_requests, .. } = &mut **asked {
            *input_requests = Some(open);
        }
    }
    event
}

/// An `elicitation/create` about `task_id` saying `message`, on `session` of `caller`
/// (on a `tasks/result` call of `call`, if any).
fn ask(session: &str, caller: &str, task_id: &str, call: Option<&str>, message: &str) -> Event {
    Event::Pushed {
        client: "c".into(),
        session: session.into(),
        caller: caller.into(),
        message: Push::Ask {
            task_id: task_id.into(),
            method: "elicitation/create".into(),
            params: serde_json::json!({ "message": message }),
            call: call.map(str::to_owned),
        },
        at_ms: 60,
    }
}

#[test]
fn a_question_goes_where_it_can_be_answered_and_was_stored() {
    let declared = || {
        opened(
            "s",
            Opening::Initialized {
                methods: vec!["elicitation/create".into()],
            },
        )
    };
    let with = |asked: Event| [created(), input_required(), declared(), asked];
    let good = with(ask("s", "a", "t1", Some("t1"), "ok?"));
    assert_eq!(invariants(&good), Vec::<&str>::new());
    let on_the_session = with(ask("s", "a", "t1", None, "ok?"));
    assert_eq!(invariants(&on_the_session), Vec::<&str>::new());
    // A session whose client never declared elicitation: I19.
    let undeclared = with(ask("watch", "a", "t1", None, "ok?"));
    assert_eq!(invariants(&undeclared), ["I19"]);
    // On the tasks/result call of another task: I19.
    let other_call = with(ask("s", "a", "t1", Some("t2"), "ok?"));
    assert_eq!(invariants(&other_call), ["I19"]);
    // Another tenant's session asked about the task: I4.
    let foreign = with(ask("s", "b", "t1", Some("t1"), "ok?"));
    assert_eq!(invariants(&foreign), ["I4"]);
    // A question no stored version held open, or not yet when it was read: I19.
    let invented = with(ask("s", "a", "t1", Some("t1"), "delete everything?"));
    assert_eq!(invariants(&invented), ["I19"]);
    let early = [
        created(),
        declared(),
        ask("s", "a", "t1", Some("t1"), "ok?"),
        input_required(),
    ];
    assert_eq!(invariants(&early), ["I19"]);
}

fn run(version: u64, read_at_ms: u64, at_ms: u64) -> Event {
    Event::ToolRun {
        task_id: "t1".into(),
        version,
        read_at_ms,
        at_ms,
    }
}

fn returned(version: u64, outcome: Option<TaskOutcome>, at_ms: u64) -> Event {
    Event::ToolReturned {
        task_id: "t1".into(),
        version,
        outcome,
        at_ms,
    }
}

fn outcome(rows: u64) -> TaskOutcome {
    TaskOutcome::Result {
        result: serde_json::json!({ "content": [], "rows": rows }),
    }
}

/// The worker's completion of `t1` at `expected`, writing `written`.
fn completed(expected: u64, written: TaskOutcome, at_ms: u64) -> Event {
    let mut event = applied(
        "t1",
        AppliedKind::Transition,
        Some(expected),
        expected + 1,
        TaskStatus::Completed,
        at_ms,
    );
    if let Event::Applied { outcome, asked, .. } = &mut event {
        *outcome = Some(written.clone());
        if let Asked::Transition { outcome, .. } = &mut **asked {
            *outcome = Some(written);
        }
    }
    event
}

/// A worker's completion of `t1` at v1, refused as stale.
fn completion_refused_at_v1() -> Event {
    refused(
        "t1",
        "a",
        AppliedKind::Transition,
        Some(1),
        Some(TaskStatus::Completed),
        Decision::BlockStaleVersion,
        30,
    )
}

#[test]
fn a_worker_writes_what_a_run_of_that_version_returned() {
    let good = [
        created(),
        run(1, 20, 20),
        returned(1, Some(outcome(1)), 30),
        completed(1, outcome(1), 30),
    ];
    assert_eq!(invariants(&good), Vec::<&str>::new());
    // No run was given v2: a refused write re-aimed blindly.
    let blind = [
        created(),
        applied(
            "t1",
            AppliedKind::Transition,
            Some(1),
            2,
            TaskStatus::Working,
            15,
        ),
        run(1, 12, 12),
        returned(1, Some(outcome(1)), 30),
        completion_refused_at_v1(),
        completed(2, outcome(1), 31),
    ];
    assert_eq!(invariants(&blind), ["I20"]);
    // A run of v1 that returned something else.
    let other = [
        created(),
        run(1, 20, 20),
        returned(1, Some(outcome(1)), 30),
        completed(1, outcome(2), 30),
    ];
    assert_eq!(invariants(&other), ["I20"]);
    // A refused write at a version no run was given.
    let refused_blind = [
        created(),
        applied(
            "t1",
            AppliedKind::Transition,
            Some(1),
            2,
            TaskStatus::Working,
            15,
        ),
        run(2, 20, 20),
        completion_refused_at_v1(),
    ];
    assert_eq!(invariants(&refused_blind), ["I20"]);
}

#[test]
fn a_run_starts_only_for_a_task_live_when_read() {
    // `applied` sets every task to expire at 1,000 ms.
    assert_eq!(
        invariants(&[created(), run(1, 999, 999)]),
        Vec::<&str>::new()
    );
    assert_eq!(invariants(&[created(), run(1, 1_000, 1_000)]), ["I20"]);
    let finished = [
        created(),
        applied(
            "t1",
            AppliedKind::Cancel,
            Some(1),
            2,
            TaskStatus::Cancelled,
            20,
        ),
        run(2, 30, 30),
    ];
    assert_eq!(invariants(&finished), ["I20"]);
    assert_eq!(invariants(&[created(), run(5, 30, 30)]), ["I20"]);
}
