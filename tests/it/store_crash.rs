//! A real crash test: a worker process runs claim → side effect → completion write → ack
//! over a SQLite store, and is SIGKILLed at random moments — at least a third of the kills
//! between the side effect and the completion write — then restarted, over and over.
//!
//! The side effect goes to an effect ledger in a *separate* SQLite file (an external
//! system: no transaction spans it and the store), written idempotently: the worker
//! checks for the task's effect and inserts one only if absent. At the end every task must
//! be terminal exactly once, no task may have two effects, every completed result must
//! name its task's one effect, no outbox entry may be lost, and the recovered count must
//! equal the created count.
//!
//! The worker is this test binary re-executed (`crash_worker_child`, ignored otherwise)
//! with `TASKLATCH_CRASH_*` variables naming the files. `TASKLATCH_CRASH_KILLS=N` changes
//! the number of kills (default 120) and `TASKLATCH_CRASH_SEED=S` the kill schedule.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use crate::support;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tasklatch::contract::{Decision, Negotiated, TaskOutcome, TaskStatus, TaskSupport};
use tasklatch::store::{
    CreateCommand, SqliteOptions, SqliteStore, StoreOptions, Synchronous, TaskStore,
    TransitionCommand, WrappedRequest,
};

const OWNER: &str = "tenant-a/alice";
const LEASE_MS: u64 = 100;
/// How long the worker holds a committed effect before writing the completion: the
/// crash window the parent aims at.
const WINDOW_MS: u64 = 25;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as u64
}

fn open_store(path: &Path) -> SqliteStore {
    let mut options = SqliteOptions::new(path);
    // A process kill loses nothing committed in WAL mode with synchronous=NORMAL; only a
    // power loss could, and that is not what this test simulates.
    options.synchronous = Synchronous::Normal;
    SqliteStore::open(&options, &StoreOptions::default()).expect("open store")
}

fn open_ledger(path: &Path) -> Connection {
    let ledger = Connection::open(path).expect("open ledger");
    ledger
        .execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 10000;
             CREATE TABLE IF NOT EXISTS effects (task_id TEXT NOT NULL, effect_id TEXT NOT NULL, written_at_ms INTEGER NOT NULL);",
        )
        .expect("ledger schema");
    ledger
}

/// The worker process. Runs only when re-executed by the parent.
#[test]
#[ignore = "the crash test's worker process; run by crash_kill_restart_recovers_every_task"]
fn crash_worker_child() {
    let (Ok(store_path), Ok(ledger_path)) = (
        std::env::var("TASKLATCH_CRASH_STORE"),
        std::env::var("TASKLATCH_CRASH_LEDGER"),
    ) else {
        return;
    };
    let store = open_store(Path::new(&store_path));
    let mut ledger = open_ledger(Path::new(&ledger_path));
    let worker = format!("worker-{}", std::process::id());
    let mut out = std::io::stdout();
    writeln!(out, "READY").unwrap();
    out.flush().unwrap();
    loop {
        let claims = store.claim(&worker, now_ms(), LEASE_MS, 1).expect("claim");
        let Some(claim) = claims.into_iter().next() else {
            std::thread::sleep(Duration::from_millis(3));
            continue;
        };
        if claim.task_status.is_terminal() {
            store
                .ack(&claim.task_id, claim.attempt, now_ms())
                .expect("ack");
            continue;
        }
        // The side effect, idempotently: at most one effect per task, whatever the retries.
        let transaction = ledger
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .unwrap();
        let existing: Option<String> = transaction
            .query_row(
                "SELECT effect_id FROM effects WHERE task_id = ?1",
                [&claim.task_id],
                |row| row.get(0),
            )
            .optional()
            .unwrap();
        let effect_id = match existing {
            Some(effect_id) => effect_id,
            None => {
                let effect_id = format!("{}#{}", claim.task_id, claim.attempt);
                transaction
                    .execute(
                        "INSERT INTO effects (task_id, effect_id, written_at_ms) VALUES (?1, ?2, ?3)",
                        rusqlite::params![claim.task_id, effect_id, now_ms() as i64],
                    )
                    .unwrap();
                effect_id
            }
        };
        transaction.commit().unwrap();
        writeln!(out, "EFFECT {}", claim.task_id).unwrap();
        out.flush().unwrap();
        std::thread::sleep(Duration::from_millis(WINDOW_MS));
        let answer = store
            .transition(&TransitionCommand {
                irreversible_effect: None,
                task_id: claim.task_id.clone(),
                caller: claim.auth_key.clone(),
                expected_version: claim.task_version,
                next: TaskStatus::Completed,
                outcome: Some(TaskOutcome::Result {
                    result: json!({ "effect": effect_id }),
                }),
                status_message: None,
                now_ms: now_ms(),
                input_requests: None,
            })
            .expect("complete");
        writeln!(out, "DONE {} {}", claim.task_id, answer.decision).unwrap();
        out.flush().unwrap();
        store
            .ack(&claim.task_id, claim.attempt, now_ms())
            .expect("ack");
    }
}

/// A tiny seeded generator for the kill schedule (xorshift64*).
struct Schedule(u64);

impl Schedule {
    fn next(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) % bound
    }
}

struct Worker {
    child: Child,
    lines: mpsc::Receiver<String>,
}

fn spawn_worker(store: &Path, ledger: &Path) -> Worker {
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            &support::test_path(module_path!(), "crash_worker_child"),
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("TASKLATCH_CRASH_STORE", store)
        .env("TASKLATCH_CRASH_LEDGER", ledger)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn worker");
    let stdout = child.stdout.take().expect("piped stdout");
    let (send, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                break;
            }
        }
    });
    Worker { child, lines }
}

fn create_tasks(store: &SqliteStore, from: usize, count: usize) {
    for n in from..from + count {
        let task_id = format!("task-{n:04}");
        let answer = store
            .create(&CreateCommand {
                caller: OWNER.into(),
                negotiated: Negotiated::FULL,
                task_support: TaskSupport::Optional,
                task_requested: true,
                idempotency_key: Some(format!("key-{n}")),
                request: WrappedRequest {
                    method: "tools/call".into(),
                    name: "export".into(),
                    arguments: Some(json!({ "n": n })),
                },
                ttl_ms: None,
                poll_interval_ms: None,
                task_id: task_id.clone(),
                correlation_id: task_id,
                now_ms: now_ms(),
                era: tasklatch::contract::Era::Core2025,
                input_responses: None,
            })
            .expect("create");
        assert_eq!(answer.decision, Decision::AcceptTask);
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(default)
}

#[test]
fn crash_kill_restart_recovers_every_task() {
    let kills_wanted = env_number("TASKLATCH_CRASH_KILLS", 120);
    let seed = env_number("TASKLATCH_CRASH_SEED", 0x5eed_c0de);
    let scratch = support::Scratch::new("crash");
    let (store_path, ledger_path) = (scratch.join("store.db"), scratch.join("ledger.db"));
    let store = open_store(&store_path);
    drop(open_ledger(&ledger_path));
    let mut created = 0;
    create_tasks(&store, created, 40);
    created += 40;
    let mut schedule = Schedule(seed | 1);
    let started = Instant::now();
    let (mut kills, mut kills_in_window, mut restarts) = (0u64, 0u64, 0u64);
    let mut kills_by_aim = [0u64; 3]; // [effect marker, done marker, random moment]
    while kills < kills_wanted {
        assert!(
            started.elapsed() < Duration::from_secs(240),
            "crash test ran out of time after {kills} kills"
        );
        let mut worker = spawn_worker(&store_path, &ledger_path);
        restarts += 1;
        // Half the kills aim at the window (on an EFFECT marker the worker then sleeps),
        // a quarter land right after a completion write (before its ack), a quarter at a
        // random moment (startup, claim, effect, anywhere).
        let aim = match schedule.next(4) {
            0 | 1 => 0,
            2 => 1,
            _ => 2,
        };
        let deadline = Instant::now()
            + Duration::from_millis(if aim == 2 { schedule.next(150) } else { 2_000 });
        let last_effect = read_until_aim(&worker, aim, deadline);
        worker.child.kill().expect("SIGKILL the worker");
        worker.child.wait().expect("reap the worker");
        kills += 1;
        kills_by_aim[aim] += 1;
        if landed_in_window(&store, &ledger_path, last_effect) {
            kills_in_window += 1;
        }
        keep_work_available(&store, &mut created);
    }
    drain_with_one_last_worker(&store, &store_path, &ledger_path, created);
    let tasks_with_effects = check_every_task_completed_exactly_once(&store, &ledger_path, created);
    let (entries, acked, redelivered, attempts_max) =
        check_no_outbox_entry_lost(&store_path, created);
    assert!(
        kills_in_window * 3 >= kills,
        "only {kills_in_window} of {kills} kills landed in the window"
    );
    println!(
        "crash test: {kills} SIGKILLs ({} on an effect marker, {} after a completion write, {} at random moments; \
         {kills_in_window} landed between effect and completion), {restarts} worker starts; {created} tasks created, \
         {created} recovered completed exactly once, {} effects (max 1 per task), {redelivered} entries redelivered \
         (max attempt {attempts_max}), outbox {acked}/{entries} acked, 0 lost; {:.1}s",
        kills_by_aim[0],
        kills_by_aim[1],
        kills_by_aim[2],
        tasks_with_effects,
        started.elapsed().as_secs_f64()
    );
}

/// Reads the worker's markers until the one `aim` waits for (0: an EFFECT, 1: a DONE) or
/// `deadline`; returns the task of the last EFFECT seen.
fn read_until_aim(worker: &Worker, aim: usize, deadline: Instant) -> Option<String> {
    let mut last_effect: Option<String> = None;
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        match worker.lines.recv_timeout(remaining) {
            Ok(line) => {
                if let Some(task_id) = line.strip_prefix("EFFECT ") {
                    last_effect = Some(task_id.to_owned());
                    if aim == 0 {
                        break;
                    }
                } else if line.starts_with("DONE ") && aim == 1 {
                    break;
                }
            }
            Err(_) => break, // deadline reached (or the worker died)
        }
    }
    last_effect
}

/// Whether a kill after the EFFECT marker of `last_effect` landed between side effect and
/// completion write.
fn landed_in_window(store: &SqliteStore, ledger_path: &Path, last_effect: Option<String>) -> bool {
    // Did this kill land between side effect and completion write? Judge by the
    // stored facts, not by intent: the effect is committed, the task still working.
    if let Some(task_id) = last_effect {
        let ledger = Connection::open(ledger_path).unwrap();
        let has_effect: i64 = ledger
            .query_row(
                "SELECT count(*) FROM effects WHERE task_id = ?1",
                [&task_id],
                |row| row.get(0),
            )
            .unwrap();
        let record = store.read(&task_id).unwrap().expect("task exists");
        has_effect > 0 && !record.status.is_terminal()
    } else {
        false
    }
}

/// Keep work available for the next worker.
fn keep_work_available(store: &SqliteStore, created: &mut usize) {
    let live = (0..*created)
        .filter(|n| {
            store
                .read(&format!("task-{n:04}"))
                .unwrap()
                .is_some_and(|r| !r.status.is_terminal())
        })
        .count();
    if live < 10 {
        create_tasks(store, *created, 20);
        *created += 20;
    }
}

/// Liveness: faults stop; one last worker must finish everything.
fn drain_with_one_last_worker(
    store: &SqliteStore,
    store_path: &Path,
    ledger_path: &Path,
    created: usize,
) {
    let mut worker = spawn_worker(store_path, ledger_path);
    let drained_by = Instant::now() + Duration::from_secs(60);
    let inspector = Connection::open(store_path).unwrap();
    loop {
        let done = (0..created).all(|n| {
            store
                .read(&format!("task-{n:04}"))
                .unwrap()
                .is_some_and(|r| r.status.is_terminal())
        });
        let unacked: i64 = inspector
            .query_row(
                "SELECT count(*) FROM outbox WHERE acked_at_ms IS NULL",
                [],
                |row| row.get(0),
            )
            .unwrap();
        if done && unacked == 0 {
            break;
        }
        assert!(
            Instant::now() < drained_by,
            "tasks did not all complete after the faults stopped"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    worker.child.kill().ok();
    worker.child.wait().ok();
}

/// Every task completed once, with exactly one effect that its result names, and no
/// effect for a task that does not exist; returns the number of tasks with effects.
fn check_every_task_completed_exactly_once(
    store: &SqliteStore,
    ledger_path: &Path,
    created: usize,
) -> usize {
    // The checks, from the stored facts alone.
    let ledger = Connection::open(ledger_path).unwrap();
    let mut statement = ledger
        .prepare("SELECT task_id, count(*), min(effect_id) FROM effects GROUP BY task_id")
        .unwrap();
    let effects: std::collections::BTreeMap<String, (i64, String)> = statement
        .query_map([], |row| Ok((row.get(0)?, (row.get(1)?, row.get(2)?))))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    // Every task below is checked or the test panics: all `created` are recovered.
    for n in 0..created {
        let task_id = format!("task-{n:04}");
        let record = store.read(&task_id).unwrap().expect("no task lost");
        assert_eq!(
            record.status,
            TaskStatus::Completed,
            "{task_id} is not completed"
        );
        assert_eq!(
            record.version, 2,
            "{task_id}: exactly one transition (working → completed)"
        );
        let (count, effect_id) = effects
            .get(&task_id)
            .unwrap_or_else(|| panic!("{task_id} has no effect"));
        assert_eq!(*count, 1, "{task_id} has {count} committed effects");
        let named = match &record.outcome {
            Some(TaskOutcome::Result { result }) => result["effect"].as_str().map(str::to_owned),
            _ => None,
        };
        assert_eq!(
            named.as_deref(),
            Some(effect_id.as_str()),
            "{task_id}: result must name its one effect"
        );
    }
    assert_eq!(
        effects.len(),
        created,
        "effects for tasks that do not exist"
    );
    effects.len()
}

/// Every task has one outbox entry, all acked; returns (entries, acked, entries
/// redelivered, highest attempt).
fn check_no_outbox_entry_lost(store_path: &Path, created: usize) -> (i64, i64, i64, i64) {
    let outbox = Connection::open(store_path).unwrap();
    let (entries, acked): (i64, i64) = outbox
        .query_row(
            "SELECT count(*), count(acked_at_ms) FROM outbox",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    let (redelivered, attempts_max): (i64, i64) = outbox
        .query_row(
            "SELECT count(*) FILTER (WHERE attempt > 1), max(attempt) FROM outbox",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        (entries, acked),
        (created as i64, created as i64),
        "outbox entries lost or unacked"
    );
    (entries, acked, redelivered, attempts_max)
}
