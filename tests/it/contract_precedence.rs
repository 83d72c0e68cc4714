//! The guards and the precedence of docs/design.md §3:
//! capability → not found / auth → expired → terminal → version → legality → apply.
//! Each test sets up several reasons to refuse at once and checks which one wins.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use tasklatch::contract::{
    Admission, CreateRequest, CursorCheck, Decision, Negotiated, RequestDigest, TaskRecord,
    TaskStatus, TaskSupport, TransitionRequest, guard_cancel, guard_create, guard_get, guard_list,
    guard_result, guard_transition, request_digest,
};

const ALICE: &str = "tenant-a/alice";
const BOB: &str = "tenant-b/bob";

fn digest(month: &str) -> RequestDigest {
    request_digest(
        "tools/call",
        "export",
        Some(&serde_json::json!({ "month": month })),
    )
}

fn record(status: TaskStatus, version: u64, expires_at_ms: Option<u64>) -> TaskRecord {
    let mut record = TaskRecord::admit(Admission {
        task_id: "t1".into(),
        auth_key: ALICE.into(),
        method: "tools/call".into(),
        tool_name: "export".into(),
        request_digest: digest("2026-06"),
        idempotency_key: Some("k1".into()),
        now_ms: 0,
        ttl_ms: expires_at_ms,
        poll_interval_ms: Some(1000),
        correlation_id: "c1".into(),
        era: tasklatch::contract::Era::Core2025,
        input_responses: None,
    });
    record.status = status;
    record.version = version;
    record
}

fn transition(caller: &str, expected_version: u64, next: TaskStatus) -> TransitionRequest<'_> {
    TransitionRequest {
        caller,
        expected_version,
        next,
        point_of_no_return: false,
    }
}

#[test]
fn admitted_records_start_working_at_version_one_with_ttl_from_creation() {
    let record = TaskRecord::admit(Admission {
        task_id: "t9".into(),
        auth_key: ALICE.into(),
        method: "tools/call".into(),
        tool_name: "export".into(),
        request_digest: digest("2026-06"),
        idempotency_key: None,
        now_ms: 1_000,
        ttl_ms: Some(60_000),
        poll_interval_ms: None,
        correlation_id: "c".into(),
        era: tasklatch::contract::Era::Core2025,
        input_responses: None,
    });
    assert_eq!((record.status, record.version), (TaskStatus::Working, 1));
    assert_eq!(record.expires_at_ms, Some(61_000));
    assert!(!record.is_expired(60_999));
    assert!(record.is_expired(61_000), "expired when now >= expires_at");
    let after = record.with_status(TaskStatus::Completed, 2_000);
    assert_eq!(
        (after.status, after.version, after.updated_at_ms),
        (TaskStatus::Completed, 2, 2_000)
    );
    let clock_went_back = record.with_status(TaskStatus::InputRequired, 500);
    assert_eq!(
        clock_went_back.updated_at_ms, 1_000,
        "lastUpdatedAt never runs backwards"
    );
}

#[test]
#[should_panic(expected = "illegal transition")]
fn applying_an_illegal_transition_is_a_bug_not_a_decision() {
    let _ = record(TaskStatus::Completed, 2, None).with_status(TaskStatus::Failed, 10);
}

#[test]
fn no_expiry_means_never_expired() {
    assert!(!record(TaskStatus::Working, 1, None).is_expired(u64::MAX));
}

#[test]
fn transition_precedence_not_found_first() {
    let request = transition(BOB, 99, TaskStatus::Working);
    assert_eq!(
        guard_transition(&request, None, 10),
        Decision::BlockNotFound
    );
}

#[test]
fn transition_auth_beats_expiry_terminal_and_version() {
    let expired_terminal = record(TaskStatus::Cancelled, 5, Some(100));
    let request = transition(BOB, 1, TaskStatus::Completed);
    assert_eq!(
        guard_transition(&request, Some(&expired_terminal), 1_000),
        Decision::BlockAuth
    );
}

#[test]
fn transition_expiry_beats_terminal_and_version() {
    let expired_terminal = record(TaskStatus::Completed, 5, Some(100));
    let request = transition(ALICE, 1, TaskStatus::Failed);
    assert_eq!(
        guard_transition(&request, Some(&expired_terminal), 100),
        Decision::BlockExpired
    );
    assert_ne!(
        guard_transition(&request, Some(&expired_terminal), 99),
        Decision::BlockExpired
    );
}

#[test]
fn transition_terminal_beats_version() {
    let completed = record(TaskStatus::Completed, 4, None);
    // A redelivered completion carries the version its worker saw: still the same fact.
    assert_eq!(
        guard_transition(
            &transition(ALICE, 3, TaskStatus::Completed),
            Some(&completed),
            10
        ),
        Decision::IdempotentTerminal
    );
    assert_eq!(
        guard_transition(
            &transition(ALICE, 3, TaskStatus::Failed),
            Some(&completed),
            10
        ),
        Decision::BlockTerminalRewrite
    );
    let cancelled = record(TaskStatus::Cancelled, 2, None);
    assert_eq!(
        guard_transition(
            &transition(ALICE, 2, TaskStatus::Completed),
            Some(&cancelled),
            10
        ),
        Decision::BlockTerminalRewrite,
        "cancel wins over a late completion even at the current version"
    );
}

#[test]
fn transition_version_beats_legality() {
    let working = record(TaskStatus::Working, 4, None);
    assert_eq!(
        guard_transition(
            &transition(ALICE, 3, TaskStatus::Working),
            Some(&working),
            10
        ),
        Decision::BlockStaleVersion
    );
    assert_eq!(
        guard_transition(
            &transition(ALICE, 4, TaskStatus::Working),
            Some(&working),
            10
        ),
        Decision::BlockIllegalTransition
    );
    assert_eq!(
        guard_transition(
            &transition(ALICE, 4, TaskStatus::Completed),
            Some(&working),
            10
        ),
        Decision::ApplyTransition
    );
}

#[test]
fn transitions_apply_exactly_the_legal_table_at_the_current_version() {
    for from in TaskStatus::ALL {
        for next in TaskStatus::ALL {
            let stored = record(from, 7, None);
            let decision = guard_transition(&transition(ALICE, 7, next), Some(&stored), 10);
            let expected = if from.is_terminal() {
                if from == next {
                    Decision::IdempotentTerminal
                } else {
                    Decision::BlockTerminalRewrite
                }
            } else if from.can_transition_to(next) {
                Decision::ApplyTransition
            } else {
                Decision::BlockIllegalTransition
            };
            assert_eq!(decision, expected, "{from} -> {next}");
        }
    }
}

fn create<'a>(
    negotiated: Negotiated,
    task_support: TaskSupport,
    task_requested: bool,
    idempotency_key: Option<&'a str>,
    digest: &'a RequestDigest,
) -> CreateRequest<'a> {
    CreateRequest {
        caller: ALICE,
        negotiated,
        task_support,
        task_requested,
        idempotency_key,
        digest,
    }
}

#[test]
fn create_capability_beats_task_support_and_idempotency() {
    let other = digest("2026-07");
    let bound = record(TaskStatus::Working, 1, None);
    let no_tasks = Negotiated {
        tools_call: false,
        ..Negotiated::FULL
    };
    let request = create(no_tasks, TaskSupport::Forbidden, true, Some("k1"), &other);
    assert_eq!(
        guard_create(&request, Some(&bound), 10),
        Decision::BlockCapability
    );
}

#[test]
fn create_task_support_beats_idempotency() {
    let other = digest("2026-07");
    let bound = record(TaskStatus::Working, 1, None);
    let forbidden = create(
        Negotiated::FULL,
        TaskSupport::Forbidden,
        true,
        Some("k1"),
        &other,
    );
    assert_eq!(
        guard_create(&forbidden, Some(&bound), 10),
        Decision::BlockTaskForbidden
    );
    let required = create(
        Negotiated::FULL,
        TaskSupport::Required,
        false,
        Some("k1"),
        &other,
    );
    assert_eq!(
        guard_create(&required, Some(&bound), 10),
        Decision::BlockTaskRequired
    );
}

#[test]
fn create_task_support_matrix() {
    let d = digest("2026-06");
    for (support, task, expected) in [
        (TaskSupport::Forbidden, false, Decision::AcceptNormal),
        (TaskSupport::Forbidden, true, Decision::BlockTaskForbidden),
        (TaskSupport::Optional, false, Decision::AcceptNormal),
        (TaskSupport::Optional, true, Decision::AcceptTask),
        (TaskSupport::Required, false, Decision::BlockTaskRequired),
        (TaskSupport::Required, true, Decision::AcceptTask),
    ] {
        let request = create(Negotiated::FULL, support, task, None, &d);
        assert_eq!(
            guard_create(&request, None, 10),
            expected,
            "{support:?} task={task}"
        );
    }
    assert_eq!(
        TaskSupport::from_wire(None),
        TaskSupport::Forbidden,
        "absent = forbidden"
    );
}

#[test]
fn create_idempotency_replays_same_digest_refuses_another_and_forgets_expired() {
    let same = digest("2026-06");
    let other = digest("2026-07");
    let bound = record(TaskStatus::Completed, 2, Some(1_000));
    let replay = create(
        Negotiated::FULL,
        TaskSupport::Optional,
        true,
        Some("k1"),
        &same,
    );
    assert_eq!(
        guard_create(&replay, Some(&bound), 10),
        Decision::ReplayTask
    );
    let collide = create(
        Negotiated::FULL,
        TaskSupport::Optional,
        true,
        Some("k1"),
        &other,
    );
    assert_eq!(
        guard_create(&collide, Some(&bound), 10),
        Decision::BlockIdempotencyCollision
    );
    assert_eq!(
        guard_create(&collide, Some(&bound), 1_000),
        Decision::AcceptTask,
        "an expired record no longer holds its key"
    );
    let sync = create(
        Negotiated::FULL,
        TaskSupport::Optional,
        false,
        Some("k1"),
        &other,
    );
    assert_eq!(
        guard_create(&sync, Some(&bound), 10),
        Decision::AcceptNormal
    );
}

#[test]
#[should_panic(expected = "another caller")]
fn create_refuses_a_bound_record_of_another_caller() {
    let d = digest("2026-06");
    let mut bound = record(TaskStatus::Working, 1, None);
    bound.auth_key = BOB.into();
    let request = create(
        Negotiated::FULL,
        TaskSupport::Optional,
        true,
        Some("k1"),
        &d,
    );
    let _ = guard_create(&request, Some(&bound), 10);
}

#[test]
fn reads_check_not_found_then_auth_then_expiry() {
    let expired = record(TaskStatus::Completed, 2, Some(100));
    for guard in [guard_get, guard_result] {
        assert_eq!(guard(ALICE, None, 10), Decision::BlockNotFound);
        assert_eq!(guard(BOB, Some(&expired), 500), Decision::BlockAuth);
        assert_eq!(guard(ALICE, Some(&expired), 500), Decision::BlockExpired);
    }
    assert_eq!(guard_get(ALICE, Some(&expired), 50), Decision::ReturnStatus);
}

#[test]
fn result_follows_the_status() {
    for (status, expected) in [
        (TaskStatus::Working, Decision::WaitTerminal),
        (TaskStatus::InputRequired, Decision::WaitInput),
        (TaskStatus::Completed, Decision::ReturnResult),
        (TaskStatus::Failed, Decision::ReturnResult),
        (TaskStatus::Cancelled, Decision::ReturnCancelled),
    ] {
        assert_eq!(
            guard_result(ALICE, Some(&record(status, 2, None)), 10),
            expected
        );
    }
}

#[test]
fn cancel_capability_first_then_lookup_then_terminal() {
    let no_cancel = Negotiated {
        cancel: false,
        ..Negotiated::FULL
    };
    assert_eq!(
        guard_cancel(no_cancel, BOB, None, 10),
        Decision::BlockCapability
    );
    assert_eq!(
        guard_cancel(Negotiated::FULL, ALICE, None, 10),
        Decision::BlockNotFound
    );
    let working = record(TaskStatus::Working, 1, Some(100));
    assert_eq!(
        guard_cancel(Negotiated::FULL, BOB, Some(&working), 10),
        Decision::BlockAuth
    );
    assert_eq!(
        guard_cancel(Negotiated::FULL, ALICE, Some(&working), 100),
        Decision::BlockExpired
    );
    assert_eq!(
        guard_cancel(Negotiated::FULL, ALICE, Some(&working), 10),
        Decision::ApplyCancel
    );
    for status in [
        TaskStatus::Completed,
        TaskStatus::Failed,
        TaskStatus::Cancelled,
    ] {
        let terminal = record(status, 2, None);
        assert_eq!(
            guard_cancel(Negotiated::FULL, ALICE, Some(&terminal), 10),
            Decision::AlreadyTerminal
        );
    }
}

#[test]
fn list_capability_beats_cursor() {
    let no_list = Negotiated {
        list: false,
        ..Negotiated::FULL
    };
    assert_eq!(
        guard_list(no_list, CursorCheck::Invalid),
        Decision::BlockCapability
    );
    assert_eq!(
        guard_list(Negotiated::FULL, CursorCheck::Invalid),
        Decision::BlockBadCursor
    );
    assert_eq!(
        guard_list(Negotiated::FULL, CursorCheck::Valid),
        Decision::ListTenantFiltered
    );
    assert_eq!(
        guard_list(Negotiated::FULL, CursorCheck::Absent),
        Decision::ListTenantFiltered
    );
}

#[test]
fn decision_codes_are_stable_and_cover_their_surfaces() {
    use tasklatch::contract::Surface;
    for decision in Decision::ALL {
        let json = serde_json::to_string(&decision).unwrap();
        assert_eq!(json, format!("\"{}\"", decision.code()));
        assert_eq!(serde_json::from_str::<Decision>(&json).unwrap(), decision);
        assert!(
            Surface::ALL
                .iter()
                .any(|surface| decision.belongs_to(*surface)),
            "{decision} belongs to no surface"
        );
        assert_eq!(decision.is_block(), decision.code().starts_with("BLOCK_"));
    }
    let per_surface: Vec<usize> = Surface::ALL
        .iter()
        .map(|surface| {
            Decision::ALL
                .iter()
                .filter(|d| d.belongs_to(*surface))
                .count()
        })
        .collect();
    assert_eq!(per_surface, [7, 8, 14, 3], "docs/design.md §3 table sizes");
}
