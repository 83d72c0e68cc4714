//! I14 on hand-written histories: a `tasks/list` page is exactly the caller's unexpired
//! tasks after the previous page, cut at the page size, with a cursor iff more follow.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use crate::histories;

use histories::*;
use tasklatch::check::{
    AppliedKind, CheckContext, ClientOp, ClientResult, Event, Revealed, ServerFacts, check,
};
use tasklatch::contract::{Decision, TaskStatus};

fn page(after: Option<&str>, shown: &[&str], next_cursor: bool, at_ms: u64) -> Event {
    Event::Client {
        client: "c".into(),
        caller: "a".into(),
        op: ClientOp::List {
            after: after.map(Into::into),
            next_cursor,
        },
        result: ClientResult::Ok {
            decision: Decision::ListTenantFiltered,
            revealed: shown
                .iter()
                .map(|task_id| Revealed {
                    task_id: (*task_id).into(),
                    auth_key: String::new(),
                    status: TaskStatus::Working,
                    version: None,
                    outcome: None,
                    fields: None,
                })
                .collect(),
        },
        at_ms,
        sent_after: None,
    }
}

fn pages(list_page: usize, tail: &[Event]) -> Vec<&'static str> {
    let server = ServerFacts {
        ttl_ms_default: None,
        ttl_ms_max: u64::MAX,
        poll_interval_ms: 100,
        list_page,
    };
    let mut history = vec![
        applied("t1", AppliedKind::Create, None, 1, TaskStatus::Working, 10),
        applied("t2", AppliedKind::Create, None, 1, TaskStatus::Working, 20),
        applied("t3", AppliedKind::Create, None, 1, TaskStatus::Working, 30),
    ];
    history.extend_from_slice(tail);
    check(
        &consistent(&history),
        &CheckContext {
            server: Some(server),
            ..CheckContext::default()
        },
    )
    .iter()
    .map(|v| v.invariant)
    .collect()
}

#[test]
fn pages_walk_every_task_once_and_end_without_a_cursor() {
    let walk = [
        page(None, &["t1", "t2"], true, 40),
        page(Some("t2"), &["t3"], false, 40),
    ];
    assert_eq!(pages(2, &walk), Vec::<&str>::new());
    // Page size 0 is clamped to 1 by the store.
    let ones = [
        page(None, &["t1"], true, 40),
        page(Some("t1"), &["t2"], true, 40),
        page(Some("t2"), &["t3"], false, 40),
    ];
    assert_eq!(pages(0, &ones), Vec::<&str>::new());
    assert_eq!(
        pages(3, &[page(None, &["t1", "t2", "t3"], false, 40)]),
        Vec::<&str>::new()
    );
}

#[test]
fn a_cursor_on_an_exact_page_a_skipped_task_and_an_expired_one_are_i14() {
    assert_eq!(
        pages(3, &[page(None, &["t1", "t2", "t3"], true, 40)]),
        ["I14"],
        "exact page"
    );
    assert_eq!(
        pages(2, &[page(Some("t1"), &["t3"], false, 40)]),
        ["I14"],
        "t2 skipped"
    );
    assert_eq!(
        pages(2, &[page(None, &["t1", "t2"], false, 40)]),
        ["I14"],
        "no cursor, t3 left"
    );
    // At 1,000 ms every task has expired (the helper's expiry): nothing may be listed.
    assert_eq!(
        pages(5, &[page(None, &["t1"], false, 1_000)]),
        ["I14"],
        "expired"
    );
    assert_eq!(
        pages(5, &[page(None, &[], false, 1_000)]),
        Vec::<&str>::new()
    );
}
