//! Bad input to the stores: URLs that do not parse, databases that cannot be opened, a
//! schema from a newer tasklatch, corrupted rows. Each gets an error naming its cause, and
//! nothing stored is lost or half-written.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use crate::support;

use rusqlite::Connection;
use tasklatch::contract::{InputMap, TaskStatus};
use tasklatch::store::{
    SqliteOptions, SqliteStore, StoreError, StoreOptions, StoreUrl, Synchronous, TaskStore,
    TransitionCommand, open_store,
};

fn create_command(task_id: &str) -> tasklatch::store::CreateCommand {
    support::create_command(task_id, 1)
}

fn url_error(url: &str) -> String {
    match StoreUrl::parse(url) {
        Err(error @ StoreError::Url { .. }) => error.to_string(),
        other => panic!("{url:?}: expected a URL error, got {other:?}"),
    }
}

#[test]
fn store_urls_parse_or_say_why_not() {
    assert_eq!(StoreUrl::parse("memory:").unwrap(), StoreUrl::Memory);
    match StoreUrl::parse("sqlite:/var/lib/x.db?synchronous=normal&busy_timeout_ms=250").unwrap() {
        StoreUrl::Sqlite(options) => {
            assert_eq!(options.path.to_str(), Some("/var/lib/x.db"));
            assert_eq!(
                (options.synchronous, options.busy_timeout_ms),
                (Synchronous::Normal, 250)
            );
        }
        other => panic!("{other:?}"),
    }
    match StoreUrl::parse("sqlite://relative/x.db").unwrap() {
        StoreUrl::Sqlite(options) => assert_eq!(options.path.to_str(), Some("relative/x.db")),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        StoreUrl::parse("postgresql://u@h/db").unwrap(),
        StoreUrl::Postgres(_)
    ));
    for (url, words) in [
        ("", "expected `memory:`"),
        ("mysql://localhost/db", "expected `memory:`"),
        ("sqlite:", "path is empty"),
        ("sqlite:x.db?synchronous=sometimes", "use full or normal"),
        ("sqlite:x.db?busy_timeout_ms=-1", "busy_timeout_ms"),
        ("sqlite:x.db?journal=wal", "unknown parameter \"journal\""),
        ("sqlite:x.db?synchronous", "has no `=`"),
    ] {
        let message = url_error(url);
        assert!(message.contains(words), "{url:?}: {message}");
        assert!(
            message.contains(&format!("{url:?}")),
            "the URL is named: {message}"
        );
    }
}

#[test]
fn unopenable_databases_are_named() {
    let error = open_store(
        "sqlite:/nonexistent-dir/tasklatch/x.db",
        &StoreOptions::default(),
    )
    .err()
    .unwrap();
    assert!(matches!(error, StoreError::Open { .. }), "{error:?}");
    assert!(
        error
            .to_string()
            .contains("/nonexistent-dir/tasklatch/x.db"),
        "{error}"
    );
    let scratch = support::Scratch::new("bad-input");
    let garbage = scratch.join("garbage.db");
    std::fs::write(
        &garbage,
        b"this is not a database, just some bytes that are long enough ......",
    )
    .unwrap();
    let error = open_store(
        &format!("sqlite:{}", garbage.display()),
        &StoreOptions::default(),
    )
    .err()
    .unwrap();
    assert!(
        error.to_string().contains("garbage.db") && error.to_string().contains("not a database"),
        "{error}"
    );
    assert_eq!(
        std::fs::read(&garbage).unwrap()[..12],
        *b"this is not ",
        "the file is left alone"
    );
}

#[cfg(feature = "postgres")]
#[test]
fn unreachable_postgres_is_named_without_its_password() {
    let error = open_store(
        "postgres://user:hunter2@127.0.0.1:1/db",
        &StoreOptions::default(),
    )
    .err()
    .unwrap();
    let message = error.to_string();
    assert!(matches!(error, StoreError::Open { .. }), "{error:?}");
    assert!(
        message.contains("127.0.0.1:1") && !message.contains("hunter2"),
        "{message}"
    );
}

#[test]
fn a_newer_schema_is_refused_and_left_untouched() {
    let scratch = support::Scratch::new("bad-input");
    let path = scratch.join("future.db");
    {
        let connection = Connection::open(&path).unwrap();
        connection
            .execute_batch(
                "CREATE TABLE tasklatch_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                 INSERT INTO tasklatch_meta VALUES ('schema_version', '99');
                 CREATE TABLE future_things (x INTEGER);",
            )
            .unwrap();
    }
    let mut options = SqliteOptions::new(&path);
    options.synchronous = Synchronous::Normal;
    let error = SqliteStore::open(&options, &StoreOptions::default())
        .err()
        .unwrap();
    assert_eq!(
        error,
        StoreError::SchemaTooNew {
            found: 99,
            supported: 4
        }
    );
    assert!(error.to_string().contains("nothing was changed"), "{error}");
    let connection = Connection::open(&path).unwrap();
    let tables: Vec<String> = connection
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        tables,
        ["future_things", "tasklatch_meta"],
        "no v1 tables were created"
    );
}

#[test]
fn reopening_keeps_data_and_cursor_secret() {
    let scratch = support::Scratch::new("bad-input");
    let url = format!(
        "sqlite:{}?synchronous=normal",
        scratch.join("reopen.db").display()
    );
    let command = create_command("t");
    let query = |cursor| tasklatch::store::ListQuery {
        negotiated: tasklatch::contract::Negotiated::FULL,
        caller: "tenant-a/alice".into(),
        cursor,
        limit: 1,
        now_ms: 5,
    };
    let cursor = {
        let store = open_store(&url, &StoreOptions::default()).unwrap();
        store.create(&command).unwrap();
        store
            .create(&tasklatch::store::CreateCommand {
                task_id: "u".into(),
                now_ms: 2,
                ..command.clone()
            })
            .unwrap();
        store
            .list(&query(None))
            .unwrap()
            .next_cursor
            .expect("two tasks, page of one")
    };
    let store = open_store(&url, &StoreOptions::default()).unwrap();
    let page = store.list(&query(Some(cursor))).unwrap();
    assert_eq!(
        page.decision,
        tasklatch::contract::Decision::ListTenantFiltered,
        "a cursor survives a restart"
    );
    assert_eq!(
        page.tasks
            .iter()
            .map(|t| t.task_id.as_str())
            .collect::<Vec<_>>(),
        ["u"]
    );
}

#[test]
fn corrupted_rows_name_task_and_column_and_spare_the_rest() {
    let scratch = support::Scratch::new("bad-input");
    let path = scratch.join("corrupt.db");
    let url = format!("sqlite:{}?synchronous=normal", path.display());
    let store = open_store(&url, &StoreOptions::default()).unwrap();
    let base = create_command("good");
    store.create(&base).unwrap();
    for id in ["bad-digest", "bad-outcome", "bad-time"] {
        store
            .create(&tasklatch::store::CreateCommand {
                task_id: id.into(),
                ..base.clone()
            })
            .unwrap();
    }
    let raw = Connection::open(&path).unwrap();
    raw.execute_batch(
        "UPDATE tasks SET request_digest = 'md5:123' WHERE task_id = 'bad-digest';
         UPDATE tasks SET status = 'completed', outcome = '{not json' WHERE task_id = 'bad-outcome';
         UPDATE tasks SET created_at_ms = -5 WHERE task_id = 'bad-time';",
    )
    .unwrap();
    for (id, column) in [
        ("bad-digest", "request_digest"),
        ("bad-outcome", "outcome"),
        ("bad-time", "created_at_ms"),
    ] {
        match store.get("tenant-a/alice", id, 10) {
            Err(StoreError::Corrupt {
                task_id,
                column: named,
                detail,
            }) => {
                assert_eq!((task_id.as_str(), named), (id, column), "{detail}");
            }
            other => panic!("{id}: expected a Corrupt error, got {other:?}"),
        }
    }
    let good = store.get("tenant-a/alice", "good", 10).unwrap();
    assert_eq!(
        good.decision,
        tasklatch::contract::Decision::ReturnStatus,
        "other rows still serve"
    );
}

#[test]
fn input_requests_and_points_of_no_return_are_checked_before_anything_is_written() {
    use tasklatch::store::MemoryStore;
    let scratch = support::Scratch::new("bad-input");
    let mut options = SqliteOptions::new(scratch.join("input.db"));
    options.synchronous = Synchronous::Normal;
    #[allow(unused_mut)] // PostgreSQL joins only with its feature
    let mut stores: Vec<(&str, Box<dyn TaskStore>)> = vec![
        (
            "memory",
            Box::new(MemoryStore::open(&StoreOptions::default()).unwrap()),
        ),
        (
            "sqlite",
            Box::new(SqliteStore::open(&options, &StoreOptions::default()).unwrap()),
        ),
    ];
    #[cfg(feature = "postgres")]
    let pg = support::Postgres::start("bad_input");
    #[cfg(feature = "postgres")]
    if let Some(pg) = &pg {
        use tasklatch::store::StoreFactory;
        let factory = tasklatch::store::PostgresFactory::new(&pg.url, &pg.schema()).unwrap();
        stores.push(("postgres", factory.open(&StoreOptions::default()).unwrap()));
    }
    let mut asked = serde_json::Map::new();
    asked.insert(
        "confirm".into(),
        serde_json::json!({ "method": "elicitation/create" }),
    );
    for (name, store) in stores {
        store.create(&create_command("t")).unwrap();
        let before = store.read("t").unwrap();
        check_bad_input_requests_are_refused(name, &*store, &asked);
        check_bad_points_of_no_return_are_refused(name, &*store);
        assert_eq!(store.read("t").unwrap(), before, "{name}: nothing changed");
        check_an_answered_question_is_not_asked_again(name, &*store, &asked);
    }
}

/// A transition of task `t` at version 1, asking `input_requests`.
fn write(next: TaskStatus, input_requests: Option<InputMap>) -> TransitionCommand {
    TransitionCommand {
        irreversible_effect: None,
        task_id: "t".into(),
        caller: "tenant-a/alice".into(),
        expected_version: 1,
        next,
        outcome: None,
        status_message: None,
        input_requests,
        now_ms: 20,
    }
}

/// Questions on a task that is not asking, or no questions at all: refused as invalid.
fn check_bad_input_requests_are_refused(name: &str, store: &dyn TaskStore, asked: &InputMap) {
    for (what, command) in [
        (
            "questions on a working task",
            write(TaskStatus::Completed, Some(asked.clone())),
        ),
        (
            "an empty set of questions",
            write(TaskStatus::InputRequired, Some(serde_json::Map::new())),
        ),
    ] {
        match store.transition(&command) {
            Err(StoreError::Invalid(reason)) => {
                assert!(reason.contains("input"), "{name}: {what}: {reason}")
            }
            other => panic!("{name}: {what} must be refused as invalid, got {other:?}"),
        }
    }
}

/// Points of no return with a completion, naming nothing or past the bound: refused.
fn check_bad_points_of_no_return_are_refused(name: &str, store: &dyn TaskStore) {
    let declare = |next, effect: &str| TransitionCommand {
        irreversible_effect: Some(effect.to_owned()),
        outcome: tasklatch::conformance::outcome_for(next, "t"),
        ..write(next, None)
    };
    let too_long = "x".repeat(tasklatch::store::IRREVERSIBLE_EFFECT_BYTES_MAX + 1);
    for (what, command) in [
        (
            "a point of no return with a completion",
            declare(TaskStatus::Completed, "POST /x"),
        ),
        (
            "a point of no return that names nothing",
            declare(TaskStatus::Working, ""),
        ),
        (
            "a point of no return past the bound",
            declare(TaskStatus::Working, &too_long),
        ),
    ] {
        match store.transition(&command) {
            Err(StoreError::Invalid(reason)) => {
                assert!(
                    reason.contains("point of no return"),
                    "{name}: {what}: {reason}"
                )
            }
            other => panic!("{name}: {what} must be refused as invalid, got {other:?}"),
        }
    }
}

/// Asks and answers a question on task `t`, then asks it again: refused, `t` unchanged.
fn check_an_answered_question_is_not_asked_again(
    name: &str,
    store: &dyn TaskStore,
    asked: &InputMap,
) {
    // A question already answered may not be asked again (the record would hold it
    // both open and answered): refused, and the store goes on serving.
    let ask = write(TaskStatus::InputRequired, Some(asked.clone()));
    assert!(
        store.transition(&ask).unwrap().record.is_some(),
        "{name}: asked"
    );
    let answer = tasklatch::store::InputCommand {
        task_id: "t".into(),
        caller: "tenant-a/alice".into(),
        responses: asked.clone(),
        now_ms: 30,
    };
    let answered = store.answer_input(&answer).unwrap().record.unwrap();
    let again = TransitionCommand {
        expected_version: answered.version,
        now_ms: 40,
        ..write(TaskStatus::InputRequired, Some(asked.clone()))
    };
    match store.transition(&again) {
        Err(StoreError::Invalid(reason)) => {
            assert!(reason.contains("already answered"), "{name}: {reason}")
        }
        other => {
            panic!("{name}: re-asking an answered question must be refused, got {other:?}")
        }
    }
    assert_eq!(
        store.read("t").unwrap(),
        Some(answered),
        "{name}: nothing changed"
    );
}
