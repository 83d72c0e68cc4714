//! A database written by schema version 1 (before protocol eras) opens under this build:
//! the migrations add the era and input columns (version 2) and the point of no return
//! (version 3) and index the outbox's free and leased entries apart (version 4); its tasks
//! read back as 2025-11-25 tasks with every other field intact, its outbox entries are
//! claimed in order, and they take the new writes (input asked and answered, a point of no
//! return declared).
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use crate::support;

use rusqlite::Connection;
use serde_json::json;
use std::path::Path;
use tasklatch::contract::{Decision, Era, TaskStatus};
use tasklatch::store::{
    InputCommand, SqliteOptions, SqliteStore, StoreOptions, Synchronous, TaskStore,
    TransitionCommand,
};

/// Schema version 1, as tasklatch 0.1 created it (kept verbatim: it is history).
const SCHEMA_V1: &str = r#"
CREATE TABLE tasks (
    task_id          TEXT PRIMARY KEY,
    auth_key         TEXT NOT NULL,
    method           TEXT NOT NULL,
    tool_name        TEXT NOT NULL,
    request_digest   TEXT NOT NULL,
    idempotency_key  TEXT,
    status           TEXT NOT NULL CHECK (status IN
                       ('working', 'input_required', 'completed', 'failed', 'cancelled')),
    version          INTEGER NOT NULL CHECK (version >= 1),
    created_at_ms    INTEGER NOT NULL,
    updated_at_ms    INTEGER NOT NULL,
    expires_at_ms    INTEGER,
    ttl_ms           INTEGER,
    poll_interval_ms INTEGER,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    outcome          TEXT,
    status_message   TEXT,
    correlation_id   TEXT NOT NULL
) WITHOUT ROWID;
CREATE UNIQUE INDEX tasks_idempotency ON tasks (auth_key, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX tasks_owner_order ON tasks (auth_key, created_at_ms, task_id);
CREATE INDEX tasks_expiry ON tasks (expires_at_ms) WHERE expires_at_ms IS NOT NULL;
CREATE TABLE outbox (
    task_id             TEXT PRIMARY KEY REFERENCES tasks (task_id) ON DELETE CASCADE,
    auth_key            TEXT NOT NULL,
    request             TEXT NOT NULL,
    enqueued_at_ms      INTEGER NOT NULL,
    attempt             INTEGER NOT NULL DEFAULT 0,
    lease_owner         TEXT,
    lease_expires_at_ms INTEGER,
    acked_at_ms         INTEGER
) WITHOUT ROWID;
CREATE INDEX outbox_ready ON outbox (enqueued_at_ms, task_id) WHERE acked_at_ms IS NULL;
"#;

#[test]
fn a_version_1_database_migrates_and_its_tasks_read_as_2025_11_25() {
    let scratch = support::Scratch::new("migration");
    let path = scratch.join("v1.db");
    write_version_1_database(&path);
    let mut options = SqliteOptions::new(&path);
    options.synchronous = Synchronous::Normal;
    let store = SqliteStore::open(&options, &StoreOptions::default()).expect("migrates");
    check_outbox_claimed_in_order_and_fields_kept(&store);
    check_input_is_asked_and_answered(&store);
    check_a_point_of_no_return_is_declared(&store);
    drop(store);
    check_schema_is_version_4(&path);
}

/// A schema version 1 database at `path`, with three working tasks, two in the outbox.
fn write_version_1_database(path: &Path) {
    let connection = Connection::open(path).unwrap();
    connection.execute_batch(SCHEMA_V1).unwrap();
    connection
        .execute_batch(
            "CREATE TABLE tasklatch_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             INSERT INTO tasklatch_meta VALUES ('schema_version', '1');
             INSERT INTO tasks (task_id, auth_key, method, tool_name, request_digest,
                 idempotency_key, status, version, created_at_ms, updated_at_ms,
                 expires_at_ms, ttl_ms, poll_interval_ms, cancel_requested, outcome,
                 status_message, correlation_id)
             VALUES ('old-1', 'tenant-a/alice', 'tools/call', 'export',
                 'sha256:0000000000000000000000000000000000000000000000000000000000000000',
                 'k1', 'working', 1, 1000, 1000, NULL, NULL, 500, 0, NULL, NULL, 'c1');
             INSERT INTO tasks (task_id, auth_key, method, tool_name, request_digest,
                 idempotency_key, status, version, created_at_ms, updated_at_ms,
                 expires_at_ms, ttl_ms, poll_interval_ms, cancel_requested, outcome,
                 status_message, correlation_id)
             VALUES ('old-2', 'tenant-a/alice', 'tools/call', 'export',
                 'sha256:0000000000000000000000000000000000000000000000000000000000000000',
                 NULL, 'working', 1, 1500, 1500, NULL, NULL, 500, 0, NULL, NULL, 'c2'),
                    ('old-3', 'tenant-a/alice', 'tools/call', 'export',
                 'sha256:0000000000000000000000000000000000000000000000000000000000000000',
                 NULL, 'working', 1, 1100, 1100, NULL, NULL, 500, 0, NULL, NULL, 'c3');
             INSERT INTO outbox (task_id, auth_key, request, enqueued_at_ms, attempt,
                 lease_owner, lease_expires_at_ms, acked_at_ms)
             VALUES ('old-2', 'tenant-a/alice', '{\"method\":\"tools/call\",\"name\":\"export\"}', 1500, 0, NULL, NULL, NULL),
                    ('old-3', 'tenant-a/alice', '{\"method\":\"tools/call\",\"name\":\"export\"}', 1100, 1, 'w-old', 1800, NULL);",
        )
        .unwrap();
}

/// The migrated outbox is claimed in order; a migrated task reads as a 2025-11-25 task.
fn check_outbox_claimed_in_order_and_fields_kept(store: &SqliteStore) {
    // Version 4 re-indexes the outbox: an entry leased before the upgrade is claimed again
    // once its lease ends, before a younger unleased one.
    let claims: Vec<(String, u32)> = store
        .claim("w-new", 2_000, 1_000, 10)
        .unwrap()
        .into_iter()
        .map(|claim| (claim.task_id, claim.attempt))
        .collect();
    assert_eq!(claims, [("old-3".to_owned(), 2), ("old-2".to_owned(), 1)]);
    let old = store.read("old-1").unwrap().expect("kept");
    assert_eq!(old.era, Era::Core2025);
    assert_eq!(
        (old.input_requests.clone(), old.input_responses.clone()),
        (None, None)
    );
    assert_eq!(
        (
            old.version,
            old.poll_interval_ms,
            old.idempotency_key.as_deref()
        ),
        (1, Some(500), Some("k1"))
    );
}

/// A migrated task takes the new writes: input asked, then answered.
fn check_input_is_asked_and_answered(store: &SqliteStore) {
    let mut asked = serde_json::Map::new();
    asked.insert(
        "confirm".into(),
        json!({ "method": "elicitation/create", "params": {} }),
    );
    let applied = store
        .transition(&TransitionCommand {
            irreversible_effect: None,
            task_id: "old-1".into(),
            caller: "tenant-a/alice".into(),
            expected_version: 1,
            next: TaskStatus::InputRequired,
            outcome: None,
            status_message: Some("asking".into()),
            input_requests: Some(asked.clone()),
            now_ms: 2000,
        })
        .unwrap();
    assert_eq!(applied.decision, Decision::ApplyTransition);
    assert_eq!(
        store.read("old-1").unwrap().unwrap().input_requests,
        Some(asked)
    );
    let mut answers = serde_json::Map::new();
    answers.insert("confirm".into(), json!({ "action": "accept" }));
    let answered = store
        .answer_input(&InputCommand {
            task_id: "old-1".into(),
            caller: "tenant-a/alice".into(),
            responses: answers.clone(),
            now_ms: 3000,
        })
        .unwrap();
    assert_eq!(answered.decision, Decision::ApplyInput);
    let after = store.read("old-1").unwrap().unwrap();
    assert_eq!((after.status, after.version), (TaskStatus::Working, 3));
    assert_eq!(
        (after.input_requests, after.input_responses),
        (None, Some(answers))
    );
}

/// A migrated task takes a declared point of no return.
fn check_a_point_of_no_return_is_declared(store: &SqliteStore) {
    let declared = store
        .transition(&TransitionCommand {
            irreversible_effect: Some("POST https://hooks.example/".into()),
            task_id: "old-1".into(),
            caller: "tenant-a/alice".into(),
            expected_version: 3,
            next: TaskStatus::Working,
            outcome: None,
            status_message: None,
            input_requests: None,
            now_ms: 4000,
        })
        .unwrap();
    assert_eq!(declared.decision, Decision::ApplyTransition);
    assert_eq!(
        store
            .read("old-1")
            .unwrap()
            .unwrap()
            .irreversible_effect
            .as_deref(),
        Some("POST https://hooks.example/")
    );
}

/// The outbox has the version 4 indexes and the database says it is version 4.
fn check_schema_is_version_4(path: &Path) {
    let connection = Connection::open(path).unwrap();
    let outbox_indexes: Vec<String> = connection
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'outbox' AND sql IS NOT NULL ORDER BY name")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(outbox_indexes, ["outbox_leased", "outbox_unleased"]);
    let version: String = connection
        .query_row(
            "SELECT value FROM tasklatch_meta WHERE key = 'schema_version'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(version, "4");
}
