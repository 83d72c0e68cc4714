//! Fault accounting and counter rules on hand-written histories: F2 (client failures),
//! F3 (refusals), C1–C4 (absorbed duplicates, claims, dropped deliveries, sweeps). Each
//! rule passes what has a reason and names what has none.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use crate::histories;

use histories::*;
use tasklatch::check::{AppliedKind, CheckContext, Event, Injection, RuntimeNote, check};
use tasklatch::contract::{Decision, TaskStatus};

fn rules(history: &[Event]) -> Vec<&'static str> {
    check(&consistent(history), &CheckContext::default())
        .iter()
        .map(|v| v.invariant)
        .collect()
}

fn created(at_ms: u64) -> Event {
    applied(
        "t1",
        AppliedKind::Create,
        None,
        1,
        TaskStatus::Working,
        at_ms,
    )
}

fn completed(at_ms: u64) -> Event {
    applied(
        "t1",
        AppliedKind::Transition,
        Some(1),
        2,
        TaskStatus::Completed,
        at_ms,
    )
}

#[test]
fn f2_a_failure_is_explained_only_by_an_outage() {
    let during = [
        injected(Injection::StoreDown, 10),
        create_failed(true, 10),
        create_failed(true, 20),
        injected(Injection::StoreUp, 20),
    ];
    assert_eq!(rules(&during), Vec::<&str>::new());
    assert_eq!(rules(&[create_failed(true, 30)]), ["F2"], "store up");
    let after = [
        injected(Injection::StoreDown, 10),
        injected(Injection::StoreUp, 20),
        create_failed(true, 21),
    ];
    assert_eq!(rules(&after), ["F2"]);
    let other_error = [injected(Injection::StoreDown, 10), create_failed(false, 11)];
    assert_eq!(
        rules(&other_error),
        ["F2"],
        "only 'unavailable' is an outage"
    );
    let collided = [
        injected(
            Injection::IdCollision {
                task_id: "t1".into(),
            },
            40,
        ),
        create_failed(true, 40),
    ];
    assert_eq!(rules(&collided), Vec::<&str>::new());
}

#[test]
fn f3_a_refusal_needs_a_reason_in_what_was_applied() {
    let transition = |expected, next, at_ms| {
        refused(
            "t1",
            "a",
            AppliedKind::Transition,
            Some(expected),
            Some(next),
            Decision::BlockStaleVersion,
            at_ms,
        )
    };
    // Each has a reason: stale version, illegal move, terminal, expired, foreign, unknown.
    let explained = [
        created(10),
        transition(7, TaskStatus::Completed, 20),
        transition(1, TaskStatus::Working, 20),
        refused(
            "t1",
            "b",
            AppliedKind::Cancel,
            None,
            None,
            Decision::BlockNotFound,
            20,
        ),
        refused(
            "t9",
            "a",
            AppliedKind::Cancel,
            None,
            None,
            Decision::BlockNotFound,
            20,
        ),
        transition(1, TaskStatus::Completed, 1_000),
        completed(30),
        transition(2, TaskStatus::Failed, 40),
        refused(
            "t1",
            "a",
            AppliedKind::Cancel,
            None,
            None,
            Decision::AlreadyTerminal,
            40,
        ),
    ];
    assert_eq!(rules(&explained), Vec::<&str>::new());
    let unexplained = [created(10), transition(1, TaskStatus::Completed, 20)];
    assert_eq!(rules(&unexplained), ["F3"]);
    let cancel = [
        created(10),
        refused(
            "t1",
            "a",
            AppliedKind::Cancel,
            None,
            None,
            Decision::AlreadyTerminal,
            20,
        ),
    ];
    assert_eq!(rules(&cancel), ["F3"], "a live task's cancel applies");
}

#[test]
fn c1_and_c3_a_dropped_delivery_needs_a_finished_or_gone_task() {
    let absorbed = [
        created(10),
        completed(20),
        runtime(RuntimeNote::DuplicateAbsorbed, "t1", 30),
    ];
    assert_eq!(rules(&absorbed), Vec::<&str>::new());
    let live = [
        created(10),
        runtime(RuntimeNote::DuplicateAbsorbed, "t1", 30),
    ];
    assert_eq!(rules(&live), ["C1"]);
    let gone = [
        created(10),
        runtime(RuntimeNote::ExpiredBeforeRun, "t1", 1_000),
        runtime(RuntimeNote::ExpiredBeforeRun, "t9", 30),
    ];
    assert_eq!(rules(&gone), Vec::<&str>::new());
    let dropped_live = [
        created(10),
        runtime(RuntimeNote::ExpiredBeforeRun, "t1", 30),
    ];
    assert_eq!(rules(&dropped_live), ["C3"]);
}

#[test]
fn c2_a_claim_reports_the_stored_state_and_never_follows_a_retiring_ack() {
    let good = [
        created(10),
        claimed("t1", 1, TaskStatus::Working, 1, 11),
        claimed("t1", 2, TaskStatus::Working, 1, 500),
        acked("t1", 1, false, 501),
        completed(502),
        claimed("t1", 3, TaskStatus::Completed, 2, 900),
        acked("t1", 3, true, 900),
    ];
    assert_eq!(rules(&good), Vec::<&str>::new());
    let stale = [
        created(10),
        completed(20),
        claimed("t1", 1, TaskStatus::Working, 1, 30),
    ];
    assert_eq!(rules(&stale), ["C2"]);
    let skipped = [created(10), claimed("t1", 2, TaskStatus::Working, 1, 30)];
    assert_eq!(rules(&skipped), ["C2"]);
    let after_ack = [
        created(10),
        claimed("t1", 1, TaskStatus::Working, 1, 11),
        acked("t1", 1, true, 12),
        claimed("t1", 2, TaskStatus::Working, 1, 900),
    ];
    assert_eq!(rules(&after_ack), ["C2"]);
}

#[test]
fn c4_a_sweep_takes_what_is_due_up_to_its_bound() {
    let two = |at_ms| {
        [
            created(at_ms),
            applied(
                "t2",
                AppliedKind::Create,
                None,
                1,
                TaskStatus::Working,
                at_ms,
            ),
        ]
    };
    let [a, b] = two(10);
    assert_eq!(
        rules(&[a.clone(), b.clone(), swept(1, 1, 1_000), swept(5, 1, 1_000)]),
        Vec::<&str>::new()
    );
    assert_eq!(
        rules(&[a.clone(), b.clone(), swept(5, 1, 1_000)]),
        ["C4"],
        "one left behind"
    );
    assert_eq!(
        rules(&[a.clone(), b.clone(), swept(1, 2, 1_000)]),
        ["C4"],
        "over the bound"
    );
    assert_eq!(
        rules(&[a, b, swept(5, 1, 999)]),
        ["C4"],
        "nothing was due yet"
    );
}
