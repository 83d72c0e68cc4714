//! Integers at the edge of SQL: the SQL stores hold times, durations, versions and attempts
//! in BIGINT columns, so a value above `i64::MAX` cannot be stored. SQLite and PostgreSQL
//! refuse such an input the same way — a `StoreError::Invalid` naming the value, and nothing
//! stored or changed — rather than clamping it into a different fact; a stored value that
//! does not fit the record (a negative time, an attempt beyond `u32`) is a
//! `StoreError::Corrupt` naming the task and the column.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use crate::support;

use tasklatch::contract::TaskRecord;
use tasklatch::contract::{Decision, Negotiated, TaskStatus};
use tasklatch::store::{
    CreateCommand, ListQuery, SqliteOptions, SqliteStore, StoreError, StoreOptions, Synchronous,
    TaskStore, TransitionCommand,
};

const CALLER: &str = "tenant-a/alice";
/// The smallest value a BIGINT cannot hold.
const TOO_BIG: u64 = i64::MAX as u64 + 1;

fn create_command(task_id: &str) -> tasklatch::store::CreateCommand {
    support::create_command(task_id, 10)
}

/// `result` is an `Invalid` error whose message names `words`.
fn assert_invalid<T: std::fmt::Debug>(
    store: &str,
    what: &str,
    result: Result<T, StoreError>,
    words: &[&str],
) {
    match result {
        Err(error @ StoreError::Invalid(_)) => {
            let message = error.to_string();
            for word in words {
                assert!(
                    message.contains(word),
                    "{store}: {what}: {message:?} lacks {word:?}"
                );
            }
        }
        other => panic!("{store}: {what}: expected an Invalid error, got {other:?}"),
    }
}

/// Every refusal of an input SQL cannot hold, on one store; `corrupt` runs SQL on its
/// database directly.
fn check_bounds(name: &str, store: &dyn TaskStore, corrupt: &dyn Fn(&str)) {
    check_unfit_creates_store_nothing(name, store);
    check_unfit_writes_leave_the_task_unchanged(name, store);
    check_unfit_outbox_calls_leave_the_entry(name, store);
    check_unfit_import_imports_nothing(name, store);
    check_unfit_stored_values_are_corrupt(name, store, corrupt);
}

/// Creates whose times, durations or sums a BIGINT cannot hold: refused, no task, no
/// outbox entry, nothing listed.
fn check_unfit_creates_store_nothing(name: &str, store: &dyn TaskStore) {
    let too_big = TOO_BIG.to_string();
    for (what, command, words) in [
        (
            "ttl_ms above i64::MAX",
            CreateCommand {
                ttl_ms: Some(u64::MAX),
                ..create_command("ttl")
            },
            ["ttl_ms", "18446744073709551615"],
        ),
        (
            "poll_interval_ms above i64::MAX",
            CreateCommand {
                poll_interval_ms: Some(TOO_BIG),
                ..create_command("poll")
            },
            ["poll_interval_ms", too_big.as_str()],
        ),
        (
            "now_ms above i64::MAX",
            CreateCommand {
                now_ms: TOO_BIG,
                ..create_command("now")
            },
            ["created_at_ms", too_big.as_str()],
        ),
        (
            "now_ms + ttl_ms above i64::MAX",
            CreateCommand {
                ttl_ms: Some(i64::MAX as u64),
                ..create_command("sum")
            },
            ["expires_at_ms", "9223372036854775817"],
        ),
        (
            "ttl_ms above i64::MAX, under an idempotency key",
            CreateCommand {
                ttl_ms: Some(TOO_BIG),
                idempotency_key: Some("k".into()),
                ..create_command("keyed")
            },
            ["ttl_ms", too_big.as_str()],
        ),
    ] {
        assert_invalid(name, what, store.create(&command), &words);
        assert_eq!(
            store.read(&command.task_id).unwrap(),
            None,
            "{name}: {what}: nothing stored"
        );
    }
    assert!(
        store.claim("w", 20, 100, 10).unwrap().is_empty(),
        "{name}: no outbox entry either"
    );
    let listed = store
        .list(&ListQuery {
            negotiated: Negotiated::FULL,
            caller: CALLER.into(),
            cursor: None,
            limit: 10,
            now_ms: 20,
        })
        .unwrap();
    assert!(listed.tasks.is_empty(), "{name}: {listed:?}");
}

/// Creates task `t`, then transitions, cancels and claims at times (or versions, leases) a
/// BIGINT cannot hold: each refused, the task unchanged.
fn check_unfit_writes_leave_the_task_unchanged(name: &str, store: &dyn TaskStore) {
    let too_big = TOO_BIG.to_string();
    // A task that fits, then writes at a time that does not: refused, the task unchanged
    // (SQLite used to clamp the time to i64::MAX and apply the write).
    assert_eq!(
        store.create(&create_command("t")).unwrap().decision,
        Decision::AcceptTask
    );
    let before = store.read("t").unwrap().unwrap();
    let transition = TransitionCommand {
        irreversible_effect: None,
        task_id: "t".into(),
        caller: CALLER.into(),
        expected_version: 1,
        next: TaskStatus::InputRequired,
        outcome: None,
        status_message: None,
        now_ms: TOO_BIG,
        input_requests: None,
    };
    assert_invalid(
        name,
        "transition at now_ms above i64::MAX",
        store.transition(&transition),
        &["now_ms", &too_big],
    );
    assert_invalid(
        name,
        "transition expecting a version above i64::MAX",
        store.transition(&TransitionCommand {
            now_ms: 20,
            expected_version: TOO_BIG,
            ..transition.clone()
        }),
        &["expected_version", &too_big],
    );
    assert_invalid(
        name,
        "cancel at now_ms above i64::MAX",
        store.cancel(Negotiated::FULL, CALLER, "t", TOO_BIG),
        &["now_ms", &too_big],
    );
    assert_invalid(
        name,
        "claim at now_ms above i64::MAX",
        store.claim("w", TOO_BIG, 1, 10),
        &["now_ms"],
    );
    assert_invalid(
        name,
        "claim with a lease ending above i64::MAX",
        store.claim("w", 20, i64::MAX as u64, 10),
        &["lease"],
    );
    assert_eq!(
        store.read("t").unwrap(),
        Some(before.clone()),
        "{name}: the task is unchanged"
    );
}

/// Task `t`'s outbox entry is still claimable after the refused claims, and an ack,
/// release or sweep at an unfit time is refused without touching it.
fn check_unfit_outbox_calls_leave_the_entry(name: &str, store: &dyn TaskStore) {
    let claims = store.claim("w", 20, 100, 10).unwrap();
    assert_eq!(
        claims.len(),
        1,
        "{name}: the entry was not leased by a refused claim"
    );
    assert_invalid(
        name,
        "ack at now_ms above i64::MAX",
        store.ack("t", claims[0].attempt, TOO_BIG),
        &["now_ms"],
    );
    assert!(
        store.ack("t", claims[0].attempt, 30).unwrap(),
        "{name}: the refused ack left the entry unacked"
    );
    assert_invalid(
        name,
        "release at now_ms above i64::MAX",
        store.release_expired_leases(TOO_BIG),
        &["now_ms"],
    );
    assert_invalid(
        name,
        "sweep at now_ms above i64::MAX",
        store.sweep_expired(TOO_BIG, 10),
        &["now_ms"],
    );
}

/// Import is all or nothing: one record that does not fit refuses the batch.
fn check_unfit_import_imports_nothing(name: &str, store: &dyn TaskStore) {
    let fits = admitted("imported-ok");
    let mut unfit = admitted("imported-unfit");
    unfit.ttl_ms = Some(TOO_BIG);
    unfit.expires_at_ms = Some(TOO_BIG.saturating_add(10));
    assert_invalid(
        name,
        "import of a ttl above i64::MAX",
        store.import(&[fits, unfit]),
        &["imported-unfit", "ttl_ms"],
    );
    assert_eq!(
        store.read("imported-ok").unwrap(),
        None,
        "{name}: nothing imported"
    );
}

/// Stored values the record cannot hold are corrupt, named, not clamped.
fn check_unfit_stored_values_are_corrupt(
    name: &str,
    store: &dyn TaskStore,
    corrupt: &dyn Fn(&str),
) {
    corrupt("UPDATE outbox SET attempt = 4294967295, acked_at_ms = NULL WHERE task_id = 't'");
    match store.claim("w", 40, 100, 10) {
        Err(StoreError::Corrupt {
            task_id,
            column,
            detail,
        }) => {
            assert_eq!(
                (task_id.as_str(), column),
                ("t", "outbox.attempt"),
                "{name}: {detail}"
            );
        }
        other => panic!("{name}: an attempt beyond u32::MAX: expected Corrupt, got {other:?}"),
    }
    corrupt("UPDATE tasks SET ttl_ms = -1 WHERE task_id = 't'");
    match store.read("t") {
        Err(StoreError::Corrupt {
            task_id,
            column,
            detail,
        }) => {
            assert_eq!(
                (task_id.as_str(), column),
                ("t", "ttl_ms"),
                "{name}: {detail}"
            );
        }
        other => panic!("{name}: a negative ttl: expected Corrupt, got {other:?}"),
    }
}

/// A record as a create admits it.
fn admitted(task_id: &str) -> TaskRecord {
    let command = create_command(task_id);
    command.admission_record(command.request.digest())
}

#[test]
fn sqlite_refuses_integers_it_cannot_store() {
    let scratch = support::Scratch::new("bounds");
    let path = scratch.join("bounds.db");
    let mut options = SqliteOptions::new(&path);
    options.synchronous = Synchronous::Normal;
    let store = SqliteStore::open(&options, &StoreOptions::default()).unwrap();
    let raw = rusqlite::Connection::open(&path).unwrap();
    check_bounds("sqlite", &store, &|sql| {
        raw.execute_batch(sql).unwrap();
    });
}

#[cfg(feature = "postgres")]
#[test]
fn postgres_refuses_integers_it_cannot_store() {
    let Some(pg) = support::Postgres::start("bounds") else {
        return;
    };
    let schema = pg.schema();
    let store =
        tasklatch::store::PostgresStore::open(&pg.url, Some(&schema), &StoreOptions::default())
            .unwrap();
    let raw = std::cell::RefCell::new(postgres::Client::connect(&pg.url, postgres::NoTls).unwrap());
    check_bounds("postgres", &store, &|sql| {
        raw.borrow_mut()
            .batch_execute(&format!("SET search_path TO {schema}; {sql}"))
            .unwrap();
    });
}

#[test]
fn a_negative_schema_version_is_corrupt_not_version_zero() {
    let scratch = support::Scratch::new("bounds");
    let path = scratch.join("negative.db");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(
            "CREATE TABLE tasklatch_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             INSERT INTO tasklatch_meta VALUES ('schema_version', '-1');",
        )
        .unwrap();
    let error = SqliteStore::open(&SqliteOptions::new(&path), &StoreOptions::default())
        .err()
        .unwrap();
    assert!(
        matches!(
            error,
            StoreError::Corrupt {
                column: "tasklatch_meta.schema_version",
                ..
            }
        ),
        "{error:?}"
    );
}
