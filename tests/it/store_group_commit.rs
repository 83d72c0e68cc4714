//! Group commit: in the SQLite store concurrent writes share commits, each write stays
//! atomic on its own, and nothing answered is lost to a crash.
//!
//! - 32 threads admitting at once take fewer commits than admissions, and every admission
//!   is there with its outbox entry;
//! - an import that fails (an id already taken) in the middle of groups of admissions
//!   leaves nothing of itself and takes no admission with it;
//! - a process admitting from 16 threads with `synchronous=full` is SIGKILLed at random
//!   moments, again and again: every admission it reported is in the store, and no task is
//!   without its outbox entry nor an entry without its task. The child is this test binary
//!   re-executed (`group_commit_child`, ignored otherwise) with `TASKLATCH_GROUP_DB` naming
//!   the file; `TASKLATCH_GROUP_KILLS=N` changes the number of kills (default 12);
//! - on PostgreSQL (which groups commits that arrive together by itself), 16 threads
//!   admitting at once run on several of the store's pooled connections, and lose nothing.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use crate::support;

use rusqlite::Connection;
use serde_json::json;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;
use tasklatch::contract::{Decision, Negotiated, TaskSupport};
use tasklatch::store::{
    CreateCommand, SqliteOptions, SqliteStore, StoreOptions, Synchronous, TaskStore, WrappedRequest,
};

const OWNER: &str = "tenant-a/alice";

fn open(path: &Path) -> SqliteStore {
    let mut options = SqliteOptions::new(path);
    options.synchronous = Synchronous::Full;
    SqliteStore::open(&options, &StoreOptions::default()).expect("open store")
}

fn admission(task_id: &str) -> CreateCommand {
    CreateCommand {
        caller: OWNER.into(),
        negotiated: Negotiated::FULL,
        task_support: TaskSupport::Optional,
        task_requested: true,
        idempotency_key: Some(format!("key-{task_id}")),
        request: WrappedRequest {
            method: "tools/call".into(),
            name: "export".into(),
            arguments: Some(json!({ "id": task_id })),
        },
        ttl_ms: None,
        poll_interval_ms: None,
        task_id: task_id.into(),
        correlation_id: task_id.into(),
        now_ms: 1_000,
        era: tasklatch::contract::Era::Core2025,
        input_responses: None,
    }
}

/// Tasks without an outbox entry, and entries without a task, read straight from the file.
fn orphans(path: &Path) -> (i64, i64) {
    let connection = Connection::open(path).expect("open the file");
    let count = |sql: &str| -> i64 { connection.query_row(sql, [], |row| row.get(0)).expect(sql) };
    (
        count("SELECT count(*) FROM tasks WHERE task_id NOT IN (SELECT task_id FROM outbox)"),
        count("SELECT count(*) FROM outbox WHERE task_id NOT IN (SELECT task_id FROM tasks)"),
    )
}

/// `threads` threads, released together, each admitting `each` tasks named
/// `{prefix}{thread}-{n}`; every admission must be accepted.
fn admit_from_threads<S: TaskStore + 'static>(
    store: &Arc<S>,
    threads: usize,
    each: usize,
    prefix: &'static str,
) {
    let start = Arc::new(std::sync::Barrier::new(threads));
    let spawned: Vec<_> = (0..threads)
        .map(|thread| {
            let (store, start) = (store.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                for n in 0..each {
                    let answer = store
                        .create(&admission(&format!("{prefix}{thread}-{n}")))
                        .expect("admitted");
                    assert_eq!(answer.decision, Decision::AcceptTask);
                }
            })
        })
        .collect();
    for thread in spawned {
        thread.join().expect("no panic");
    }
}

#[test]
fn concurrent_admissions_share_commits_and_all_are_there() {
    let scratch = support::Scratch::new("group-commit-share");
    let path = scratch.join("tasks.db");
    let store = Arc::new(open(&path));
    admit_from_threads(&store, 32, 40, "t");
    let figures = store.group_figures();
    println!("1280 admissions: {figures:?}");
    assert_eq!(figures.writes, 1_280);
    assert!(
        figures.commits < figures.writes,
        "32 threads at once must share commits: {figures:?}"
    );
    for thread in 0..32 {
        for n in 0..40 {
            assert!(
                store
                    .read(&format!("t{thread}-{n}"))
                    .expect("read")
                    .is_some()
            );
        }
    }
    assert_eq!(orphans(&path), (0, 0));
}

#[test]
fn a_failing_write_leaves_nothing_and_takes_no_other_write_with_it() {
    let scratch = support::Scratch::new("group-commit-failure");
    let path = scratch.join("tasks.db");
    let store = Arc::new(open(&path));
    store.create(&admission("taken")).expect("admitted");
    let template = store.read("taken").expect("read").expect("there");
    let threads: Vec<_> = (0..16)
        .map(|thread| {
            let store = store.clone();
            let template = template.clone();
            std::thread::spawn(move || {
                for n in 0..30 {
                    if thread % 2 == 0 {
                        let answer = store
                            .create(&admission(&format!("t{thread}-{n}")))
                            .expect("admitted");
                        assert_eq!(answer.decision, Decision::AcceptTask);
                    } else {
                        // A new record, then one whose id is taken: all or nothing.
                        let mut fresh = template.clone();
                        fresh.task_id = format!("import-{thread}-{n}");
                        fresh.idempotency_key = None;
                        store
                            .import(&[fresh, template.clone()])
                            .expect_err("the second id is taken");
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("no panic");
    }
    let figures = store.group_figures();
    println!("240 admissions and 240 failing imports: {figures:?}");
    assert!(figures.commits < figures.writes, "{figures:?}");
    for thread in 0..16 {
        for n in 0..30 {
            let admitted = store.read(&format!("t{thread}-{n}")).expect("read");
            let imported = store.read(&format!("import-{thread}-{n}")).expect("read");
            if thread % 2 == 0 {
                assert!(admitted.is_some(), "t{thread}-{n} was answered admitted");
            } else {
                assert!(
                    imported.is_none(),
                    "import-{thread}-{n} was refused, yet kept"
                );
            }
        }
    }
    assert_eq!(orphans(&path), (0, 0));
}

/// The child: admits from 16 threads until killed, printing each admission once answered.
#[test]
#[ignore = "the crash test's child process"]
fn group_commit_child() {
    let Ok(path) = std::env::var("TASKLATCH_GROUP_DB") else {
        return;
    };
    let run = std::env::var("TASKLATCH_GROUP_RUN").unwrap_or_default();
    let store = Arc::new(open(Path::new(&path)));
    let out = Arc::new(std::sync::Mutex::new(std::io::stdout()));
    let threads: Vec<_> = (0..16)
        .map(|thread| {
            let (store, out, run) = (store.clone(), out.clone(), run.clone());
            std::thread::spawn(move || {
                for n in 0.. {
                    let task_id = format!("r{run}-t{thread}-{n}");
                    if store.create(&admission(&task_id)).is_ok() {
                        let mut out = out.lock().unwrap_or_else(|p| p.into_inner());
                        let _ = writeln!(out, "admitted {task_id}");
                        let _ = out.flush();
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        let _ = thread.join();
    }
}

#[test]
fn nothing_answered_is_lost_to_a_kill_mid_group() {
    let scratch = support::Scratch::new("group-commit-kill");
    let path = scratch.join("tasks.db");
    let kills: u64 = std::env::var("TASKLATCH_GROUP_KILLS")
        .ok()
        .and_then(|kills| kills.parse().ok())
        .unwrap_or(12);
    let mut answered = BTreeSet::new();
    for run in 0..kills {
        let mut child = Command::new(std::env::current_exe().expect("test binary"))
            .args(["--ignored", "--exact", "--nocapture"])
            .arg(support::test_path(module_path!(), "group_commit_child"))
            .env("TASKLATCH_GROUP_DB", &path)
            .env("TASKLATCH_GROUP_RUN", run.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("child started");
        let stdout = child.stdout.take().expect("piped");
        let reader = std::thread::spawn(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .filter_map(|line| line.strip_prefix("admitted ").map(str::to_owned))
                .collect::<Vec<_>>()
        });
        // The child needs ~100 ms to start; kill it 150-450 ms in, at a spot that moves.
        std::thread::sleep(Duration::from_millis(150 + (run * 97) % 300));
        child.kill().expect("SIGKILL");
        let _ = child.wait();
        answered.extend(reader.join().expect("reader"));
        let store = open(&path);
        for task_id in &answered {
            assert!(
                store.read(task_id).expect("read").is_some(),
                "run {run}: {task_id} was answered admitted, then lost"
            );
        }
        drop(store);
        assert_eq!(
            orphans(&path),
            (0, 0),
            "run {run}: a half-written admission"
        );
    }
    println!(
        "{kills} kills, {} admissions answered, none lost",
        answered.len()
    );
    assert!(
        answered.len() > 100,
        "the children admitted too little to test anything"
    );
}

/// PostgreSQL groups commits itself once they arrive together: the store lends each
/// concurrent operation a connection of its own (up to `CONNECTIONS_MAX`), opened on
/// demand. 16 threads admitting at once open more than one; every admission is there
/// with its outbox entry; one thread at a time then opens no more.
#[cfg(feature = "postgres")]
#[test]
fn postgres_concurrent_admissions_run_on_several_connections() {
    use tasklatch::store::{PG_CONNECTIONS_MAX as CONNECTIONS_MAX, PostgresStore};
    let Some(pg) = support::Postgres::start("group_pool") else {
        return;
    };
    let schema = pg.schema();
    let store = Arc::new(
        PostgresStore::open(&pg.url, Some(&schema), &StoreOptions::default()).expect("open"),
    );
    assert_eq!(
        store.connections_opened(),
        1,
        "the one the store migrated on"
    );
    admit_from_threads(&store, 16, 20, "p");
    let opened = store.connections_opened();
    println!("16 threads x 20 admissions on PostgreSQL: {opened} connections");
    assert!(
        (2..=CONNECTIONS_MAX).contains(&opened),
        "16 concurrent admitters must spread over 2..={CONNECTIONS_MAX} connections, opened {opened}"
    );
    let mut client = postgres::Client::connect(&pg.url, postgres::NoTls).expect("connect");
    let count = |client: &mut postgres::Client, sql: &str| -> i64 {
        client
            .query_one(&sql.replace("$S", &schema), &[])
            .expect(sql)
            .get(0)
    };
    assert_eq!(count(&mut client, "SELECT count(*) FROM $S.tasks"), 320);
    assert_eq!(
        count(
            &mut client,
            "SELECT count(*) FROM $S.tasks t JOIN $S.outbox o USING (task_id)"
        ),
        320
    );
    for n in 0..20 {
        store
            .create(&admission(&format!("serial-{n}")))
            .expect("admitted");
    }
    assert_eq!(store.connections_opened(), opened, "one thread reuses one");
}

/// A commit that fails fails every write of its group — the waiters learn it as surely as
/// the writer that committed — and the next group commits as if nothing happened. A fake
/// connection whose first commit fails, eight writers queued behind a slow first write.
#[test]
fn a_failed_commit_fails_every_write_of_its_group_and_only_those() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use tasklatch::store::group::{GroupCommit, Grouped};

    struct Fake {
        in_group: usize,
        fail_next_commit: bool,
        failed_group_size: Arc<AtomicUsize>,
    }
    impl Grouped for Fake {
        fn begin(&mut self) -> Result<(), String> {
            self.in_group = 0;
            Ok(())
        }
        fn savepoint(&mut self) -> Result<(), String> {
            self.in_group += 1;
            Ok(())
        }
        fn release(&mut self) -> Result<(), String> {
            Ok(())
        }
        fn rollback_to_savepoint(&mut self) -> Result<(), String> {
            Ok(())
        }
        fn commit(&mut self) -> Result<(), String> {
            if std::mem::take(&mut self.fail_next_commit) {
                self.failed_group_size
                    .store(self.in_group, Ordering::SeqCst);
                return Err("disk full".into());
            }
            Ok(())
        }
        fn rollback(&mut self) {}
    }

    let failed_group_size = Arc::new(AtomicUsize::new(0));
    let group = Arc::new(GroupCommit::new(Fake {
        in_group: 0,
        fail_next_commit: true,
        failed_group_size: failed_group_size.clone(),
    }));
    let first_holds = Arc::new(AtomicBool::new(true));
    let start = Arc::new(std::sync::Barrier::new(8));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (group, start, first_holds) = (group.clone(), start.clone(), first_holds.clone());
            std::thread::spawn(move || {
                start.wait();
                group.write("fake write", |_| {
                    // The first write in holds the connection while the others queue.
                    if first_holds.swap(false, Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    Ok(())
                })
            })
        })
        .collect();
    let outcomes: Vec<_> = threads
        .into_iter()
        .map(|thread| thread.join().expect("no panic"))
        .collect();
    let failed = outcomes.iter().filter(|outcome| outcome.is_err()).count();
    let size = failed_group_size.load(Ordering::SeqCst);
    assert!(size > 1, "the failed group held waiters: {size}");
    assert_eq!(failed, size, "exactly the failed group's writes fail");
    for outcome in outcomes.iter().filter_map(|outcome| outcome.as_ref().err()) {
        assert!(outcome.to_string().contains("disk full"), "{outcome}");
    }
    assert_eq!(group.figures().writes, (8 - size) as u64);
    group
        .write("after", |_| Ok(()))
        .expect("the next group commits");
}

/// A pooled connection the server closed (a restart, an administrator's
/// `pg_terminate_backend`) is dropped, not lent again: the operation that finds it closed
/// fails (the driver may notice the close only after the next one also tried it), then
/// operations run on a fresh connection.
#[cfg(feature = "postgres")]
#[test]
fn postgres_a_lost_connection_is_replaced() {
    use tasklatch::store::PostgresStore;
    let Some(pg) = support::Postgres::start("group_lost") else {
        return;
    };
    let name = format!("tl_lost_{}", std::process::id());
    let separator = if pg.url.contains('?') { '&' } else { '?' };
    let url = format!("{}{separator}application_name={name}", pg.url);
    let store =
        PostgresStore::open(&url, Some(&pg.schema()), &StoreOptions::default()).expect("open");
    store.create(&admission("before")).expect("admitted");
    let mut admin = postgres::Client::connect(&pg.url, postgres::NoTls).expect("connect");
    let terminated: i64 = admin
        .query_one(
            "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE application_name = $1) t",
            &[&name],
        )
        .expect("terminate")
        .get(0);
    assert_eq!(terminated, 1, "the store's one connection");
    let mut outcomes = Vec::new();
    for attempt in 0..5 {
        outcomes.push(
            store
                .create(&admission(&format!("after-{attempt}")))
                .is_ok(),
        );
    }
    println!("admissions after the connection was terminated: {outcomes:?}");
    assert!(
        outcomes[2..].iter().all(|ok| *ok) && outcomes.iter().filter(|ok| !**ok).count() >= 1,
        "the closed connection fails an admission, then admissions run again: {outcomes:?}"
    );
    assert!(store.read("before").expect("read").is_some());
}
