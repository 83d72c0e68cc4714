//! `tasks/list` cursors are opaque, caller-bound and tamper-evident; pages are the caller's
//! own unexpired tasks in a stable order.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use tasklatch::contract::{
    Admission, ListPosition, TaskRecord, decode_cursor, encode_cursor, request_digest,
    visible_tasks,
};

const SECRET: &[u8] = b"test-secret";

fn position() -> ListPosition {
    ListPosition {
        created_at_ms: 1_234,
        task_id: "9f3c-task".into(),
    }
}

#[test]
fn a_cursor_round_trips_for_its_caller_only() {
    let cursor = encode_cursor(SECRET, "tenant-a/alice", &position());
    assert_eq!(
        decode_cursor(SECRET, "tenant-a/alice", &cursor),
        Some(position())
    );
    assert_eq!(
        decode_cursor(SECRET, "tenant-b/bob", &cursor),
        None,
        "another caller"
    );
    assert_eq!(
        decode_cursor(b"other-secret", "tenant-a/alice", &cursor),
        None,
        "another server secret"
    );
}

#[test]
fn tampered_and_garbage_cursors_are_refused() {
    let cursor = encode_cursor(SECRET, "tenant-a/alice", &position());
    let moved = cursor.replacen("1234", "1235", 1);
    assert_ne!(moved, cursor);
    assert_eq!(
        decode_cursor(SECRET, "tenant-a/alice", &moved),
        None,
        "position edited"
    );
    let mut flipped = cursor.clone();
    let last = flipped.pop().unwrap();
    flipped.push(if last == '0' { '1' } else { '0' });
    assert_eq!(
        decode_cursor(SECRET, "tenant-a/alice", &flipped),
        None,
        "tag edited"
    );
    let truncated = &cursor[..cursor.len() - 2];
    assert_eq!(
        decode_cursor(SECRET, "tenant-a/alice", truncated),
        None,
        "tag shortened"
    );
    for garbage in [
        "",
        "c1",
        "c1...",
        "c2.1.00.00",
        "not a cursor",
        &"x".repeat(5000),
    ] {
        assert_eq!(
            decode_cursor(SECRET, "tenant-a/alice", garbage),
            None,
            "{garbage:?}"
        );
    }
}

fn task(id: &str, owner: &str, created_at_ms: u64, ttl_ms: Option<u64>) -> TaskRecord {
    TaskRecord::admit(Admission {
        task_id: id.into(),
        auth_key: owner.into(),
        method: "tools/call".into(),
        tool_name: "export".into(),
        request_digest: request_digest("tools/call", "export", None),
        idempotency_key: None,
        now_ms: created_at_ms,
        ttl_ms,
        poll_interval_ms: None,
        correlation_id: id.into(),
        era: tasklatch::contract::Era::Core2025,
        input_responses: None,
    })
}

#[test]
fn pages_are_the_callers_unexpired_tasks_without_gaps_or_duplicates() {
    let mut records = Vec::new();
    for index in 0..60u64 {
        let owner = ["tenant-a/alice", "tenant-b/bob", "tenant-a/carol"][(index % 3) as usize];
        // Equal creation times on purpose: the task id breaks ties.
        let ttl = if index % 7 == 0 { Some(10) } else { None };
        records.push(task(&format!("t{index:03}"), owner, index / 4, ttl));
    }
    let now_ms = 100;
    let mut seen = Vec::new();
    let mut after: Option<ListPosition> = None;
    for _page in 0..100 {
        let page = visible_tasks("tenant-a/alice", &records, now_ms, after.as_ref(), 4);
        if page.is_empty() {
            break;
        }
        assert!(
            page.iter()
                .all(|record| record.auth_key == "tenant-a/alice")
        );
        // The cursor goes through its codec, as it would on the wire.
        let cursor = encode_cursor(
            SECRET,
            "tenant-a/alice",
            &ListPosition::of(page[page.len() - 1]),
        );
        after = decode_cursor(SECRET, "tenant-a/alice", &cursor);
        seen.extend(page.iter().map(|record| record.task_id.clone()));
    }
    let expected: Vec<String> = records
        .iter()
        .filter(|record| record.auth_key == "tenant-a/alice" && !record.is_expired(now_ms))
        .map(|record| record.task_id.clone())
        .collect();
    assert_eq!(seen, expected);
    assert!(!expected.is_empty());
}
