//! Real races, not simulated: two threads, each with its own store connection, released
//! together by a barrier, 1,000 rounds per race. Every round must have exactly one winner
//! and one stored terminal fact, and every loser must get the precise decision.
//!
//! `TASKLATCH_RACE_ROUNDS=N` changes the rounds per race (default 1,000).
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use crate::support;

use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Barrier;
use tasklatch::conformance::outcome_for;
use tasklatch::contract::{Decision, Negotiated, TaskOutcome, TaskRecord, TaskStatus, TaskSupport};
use tasklatch::store::{
    Answer, CreateCommand, MemoryStore, SqliteOptions, SqliteStore, StoreOptions, Synchronous,
    TaskStore, TransitionCommand, WrappedRequest,
};

const OWNER: &str = "tenant-a/alice";

fn rounds() -> usize {
    std::env::var("TASKLATCH_RACE_ROUNDS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(1_000)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Race {
    CompleteVsCancel,
    CompleteVsStaleComplete,
    CompleteVsFail,
    CreateSameKeySameDigest,
    CreateSameKeyOtherDigest,
}

const RACES: [Race; 5] = [
    Race::CompleteVsCancel,
    Race::CompleteVsStaleComplete,
    Race::CompleteVsFail,
    Race::CreateSameKeySameDigest,
    Race::CreateSameKeyOtherDigest,
];

impl Race {
    fn name(self) -> &'static str {
        match self {
            Race::CompleteVsCancel => "complete vs cancel",
            Race::CompleteVsStaleComplete => "complete vs stale complete",
            Race::CompleteVsFail => "complete vs fail",
            Race::CreateSameKeySameDigest => "create vs create, same digest",
            Race::CreateSameKeyOtherDigest => "create vs create, other digest",
        }
    }
}

#[derive(Default)]
struct Tally {
    rounds: usize,
    a_wins: usize,
    b_wins: usize,
    loser: BTreeMap<Decision, usize>,
    violations: Vec<String>,
}

fn create(task_id: &str, key: &str, month: &str) -> CreateCommand {
    CreateCommand {
        caller: OWNER.into(),
        negotiated: Negotiated::FULL,
        task_support: TaskSupport::Optional,
        task_requested: true,
        idempotency_key: Some(key.into()),
        request: WrappedRequest {
            method: "tools/call".into(),
            name: "export".into(),
            arguments: Some(json!({ "month": month })),
        },
        ttl_ms: None,
        poll_interval_ms: None,
        task_id: task_id.into(),
        correlation_id: task_id.into(),
        now_ms: 1,
        era: tasklatch::contract::Era::Core2025,
        input_responses: None,
    }
}

fn write(
    task_id: &str,
    expected_version: u64,
    next: TaskStatus,
    writer: &str,
) -> TransitionCommand {
    let outcome = outcome_for(next, task_id).map(|outcome| match outcome {
        TaskOutcome::Result { mut result } => {
            result["writer"] = json!(writer);
            TaskOutcome::Result { result }
        }
        other => other,
    });
    TransitionCommand {
        irreversible_effect: None,
        task_id: task_id.into(),
        caller: OWNER.into(),
        expected_version,
        next,
        outcome,
        status_message: None,
        now_ms: 10,
        input_requests: None,
    }
}

fn writer_of(store: &dyn TaskStore, task_id: &str) -> Option<String> {
    let record = store.read(task_id).ok()??;
    match record.outcome? {
        TaskOutcome::Result { result } => result["writer"].as_str().map(str::to_owned),
        TaskOutcome::RpcError { .. } => None,
    }
}

/// Runs both operations released together; returns their answers.
fn together(
    a_store: &dyn TaskStore,
    b_store: &dyn TaskStore,
    a: impl FnOnce(&dyn TaskStore) -> Answer + Send,
    b: impl FnOnce(&dyn TaskStore) -> Answer + Send,
) -> (Answer, Answer) {
    let barrier = Barrier::new(2);
    std::thread::scope(|scope| {
        let a = scope.spawn(|| {
            barrier.wait();
            a(a_store)
        });
        let b = scope.spawn(|| {
            barrier.wait();
            b(b_store)
        });
        (a.join().expect("thread A"), b.join().expect("thread B"))
    })
}

fn round(
    race: Race,
    n: usize,
    setup: &dyn TaskStore,
    a_store: &dyn TaskStore,
    b_store: &dyn TaskStore,
    tally: &mut Tally,
) {
    let id = format!("{race:?}-{n}");
    let key = format!("key-{race:?}-{n}");
    let mut problems = Vec::new();
    let (a_won, b_won, loser) = match race {
        Race::CompleteVsCancel | Race::CompleteVsFail | Race::CompleteVsStaleComplete => {
            terminal_round(race, &id, &key, setup, a_store, b_store, &mut problems)
        }
        Race::CreateSameKeySameDigest | Race::CreateSameKeyOtherDigest => {
            create_round(race, &id, &key, setup, a_store, b_store, &mut problems)
        }
    };
    tally.rounds += 1;
    tally.a_wins += usize::from(a_won);
    tally.b_wins += usize::from(b_won && !a_won);
    *tally.loser.entry(loser).or_default() += 1;
    if !problems.is_empty() {
        tally
            .violations
            .push(format!("{id}: {}", problems.join("; ")));
    }
}

/// One round of a race between two writes to the same working task: sets it up, races
/// the writes, and returns (A won, B won, the loser's decision).
fn terminal_round(
    race: Race,
    id: &str,
    key: &str,
    setup: &dyn TaskStore,
    a_store: &dyn TaskStore,
    b_store: &dyn TaskStore,
    problems: &mut Vec<String>,
) -> (bool, bool, Decision) {
    let ok = |answer: Result<Answer, tasklatch::store::StoreError>| {
        answer.unwrap_or_else(|error| panic!("{id}: store error: {error}"))
    };
    ok(setup.create(&create(id, key, "m")));
    let a_version = if race == Race::CompleteVsStaleComplete {
        ok(setup.transition(&write(id, 1, TaskStatus::InputRequired, "setup")));
        2
    } else {
        1
    };
    let (a, b) = together(
        a_store,
        b_store,
        |s| ok(s.transition(&write(id, a_version, TaskStatus::Completed, "A"))),
        |s| match race {
            Race::CompleteVsCancel => ok(s.cancel(Negotiated::FULL, OWNER, id, 10)),
            Race::CompleteVsFail => ok(s.transition(&write(id, 1, TaskStatus::Failed, "B"))),
            _ => ok(s.transition(&write(id, 1, TaskStatus::Completed, "B"))),
        },
    );
    check_terminal_round(race, id, setup, a_version, a, b, problems)
}

/// Exactly one terminal write won, the loser got the expected decision, and the stored
/// task holds the winner's status, version, outcome and cancellation intent.
fn check_terminal_round(
    race: Race,
    id: &str,
    setup: &dyn TaskStore,
    a_version: u64,
    a: Answer,
    b: Answer,
    problems: &mut Vec<String>,
) -> (bool, bool, Decision) {
    let a_won = a.decision == Decision::ApplyTransition;
    let b_won = matches!(
        b.decision,
        Decision::ApplyTransition | Decision::ApplyCancel
    );
    let stored = setup
        .read(id)
        .ok()
        .flatten()
        .unwrap_or_else(|| panic!("{id} vanished"));
    let terminal_writes = usize::from(a_won) + usize::from(b_won);
    if terminal_writes != 1 {
        problems.push(format!(
            "{terminal_writes} winners: A {} / B {}",
            a.decision, b.decision
        ));
    }
    let (winner_status, expected_loser) = match (race, a_won) {
        (Race::CompleteVsCancel, true) => (TaskStatus::Completed, vec![Decision::AlreadyTerminal]),
        (Race::CompleteVsCancel, false) => {
            (TaskStatus::Cancelled, vec![Decision::BlockTerminalRewrite])
        }
        (Race::CompleteVsFail, true) => {
            (TaskStatus::Completed, vec![Decision::BlockTerminalRewrite])
        }
        (Race::CompleteVsFail, false) => (TaskStatus::Failed, vec![Decision::BlockTerminalRewrite]),
        // The stale writer loses whichever way round: refused as stale before the
        // completion lands, or recognised as the same terminal fact after it.
        (_, _) => (
            TaskStatus::Completed,
            vec![Decision::BlockStaleVersion, Decision::IdempotentTerminal],
        ),
    };
    let loser = if a_won { b.decision } else { a.decision };
    if !expected_loser.contains(&loser) {
        problems.push(format!(
            "loser got {loser}, expected one of {expected_loser:?}"
        ));
    }
    if race == Race::CompleteVsStaleComplete && !a_won {
        problems.push(format!("the stale writer won: B {}", b.decision));
    }
    check_stored_winner(
        setup,
        id,
        &stored,
        winner_status,
        a_won,
        a_version,
        problems,
    );
    (a_won, b_won, loser)
}

/// The stored task holds the winner's status and version, its outcome (written by the
/// winner, none for a cancellation) and a cancellation intent only if cancelled.
fn check_stored_winner(
    setup: &dyn TaskStore,
    id: &str,
    stored: &TaskRecord,
    winner_status: TaskStatus,
    a_won: bool,
    a_version: u64,
    problems: &mut Vec<String>,
) {
    if stored.status != winner_status || stored.version != a_version + 1 {
        problems.push(format!(
            "stored {} v{}, expected {winner_status} v{}",
            stored.status,
            stored.version,
            a_version + 1
        ));
    }
    let expected_writer = match (winner_status, a_won) {
        (TaskStatus::Cancelled, _) => None,
        (_, true) => Some("A".to_owned()),
        (_, false) => Some("B".to_owned()),
    };
    if writer_of(setup, id) != expected_writer {
        problems.push(format!(
            "stored outcome by {:?}, expected {expected_writer:?}",
            writer_of(setup, id)
        ));
    }
    if stored.cancel_requested != (winner_status == TaskStatus::Cancelled) {
        problems.push("cancellation intent does not match the status".into());
    }
}

/// One round of a race between two creates under the same idempotency key: returns
/// (A won, B won, the loser's decision).
fn create_round(
    race: Race,
    id: &str,
    key: &str,
    setup: &dyn TaskStore,
    a_store: &dyn TaskStore,
    b_store: &dyn TaskStore,
    problems: &mut Vec<String>,
) -> (bool, bool, Decision) {
    let ok = |answer: Result<Answer, tasklatch::store::StoreError>| {
        answer.unwrap_or_else(|error| panic!("{id}: store error: {error}"))
    };
    let (a_id, b_id) = (format!("{id}-a"), format!("{id}-b"));
    let b_month = if race == Race::CreateSameKeySameDigest {
        "m"
    } else {
        "other"
    };
    let (a, b) = together(
        a_store,
        b_store,
        |s| ok(s.create(&create(&a_id, key, "m"))),
        |s| ok(s.create(&create(&b_id, key, b_month))),
    );
    let a_won = a.decision == Decision::AcceptTask;
    let b_won = b.decision == Decision::AcceptTask;
    if usize::from(a_won) + usize::from(b_won) != 1 {
        problems.push(format!("A {} / B {}", a.decision, b.decision));
    }
    let (winner_id, loser) = if a_won { (&a_id, &b) } else { (&b_id, &a) };
    let expected_loser = if race == Race::CreateSameKeySameDigest {
        Decision::ReplayTask
    } else {
        Decision::BlockIdempotencyCollision
    };
    if loser.decision != expected_loser {
        problems.push(format!(
            "loser got {}, expected {expected_loser}",
            loser.decision
        ));
    }
    if expected_loser == Decision::ReplayTask
        && loser.record.as_ref().map(|r| &r.task_id) != Some(winner_id)
    {
        problems.push("the replay did not return the winner's task".into());
    }
    let stored: Vec<bool> = [&a_id, &b_id]
        .iter()
        .map(|id| setup.read(id).ok().flatten().is_some())
        .collect();
    if stored.iter().filter(|exists| **exists).count() != 1 {
        problems.push(format!("tasks stored (A, B): {stored:?}"));
    }
    (a_won, b_won, loser.decision)
}

fn run_races(label: &str, open: &dyn Fn() -> Box<dyn TaskStore>) {
    let (setup, a_store, b_store) = (open(), open(), open());
    let rounds = rounds();
    let mut violations = Vec::new();
    // Printed as one block at the end, so parallel tests do not interleave their tables.
    let mut table = vec![format!(
        "{label:<9} {:<32} {:>6} {:>6} {:>6}  {:<58} violations",
        "race", "rounds", "A won", "B won", "loser decisions"
    )];
    for race in RACES {
        let mut tally = Tally::default();
        for n in 0..rounds {
            round(race, n, &*setup, &*a_store, &*b_store, &mut tally);
        }
        let losers: Vec<String> = tally
            .loser
            .iter()
            .map(|(decision, count)| format!("{decision}={count}"))
            .collect();
        table.push(format!(
            "{label:<9} {:<32} {:>6} {:>6} {:>6}  {:<58} {}",
            race.name(),
            tally.rounds,
            tally.a_wins,
            tally.b_wins,
            losers.join(" "),
            tally.violations.len()
        ));
        violations.extend(tally.violations.into_iter().take(5));
    }
    println!("{}", table.join("\n"));
    assert!(
        violations.is_empty(),
        "{label}: race violations:\n{}",
        violations.join("\n")
    );
}

#[test]
fn memory_races() {
    let store = std::sync::Arc::new(MemoryStore::open(&StoreOptions::default()).unwrap());
    run_races("memory", &|| Box::new(store.clone()) as Box<dyn TaskStore>);
}

#[test]
fn sqlite_races() {
    let scratch = support::Scratch::new("race");
    let mut options = SqliteOptions::new(scratch.join("race.db"));
    options.synchronous = Synchronous::Normal;
    run_races("sqlite", &|| {
        Box::new(SqliteStore::open(&options, &StoreOptions::default()).expect("open SQLite"))
            as Box<dyn TaskStore>
    });
}

#[cfg(feature = "postgres")]
#[test]
fn postgres_races() {
    let Some(pg) = support::Postgres::start("race") else {
        return;
    };
    let schema = pg.schema();
    run_races("postgres", &|| {
        Box::new(
            tasklatch::store::PostgresStore::open(&pg.url, Some(&schema), &StoreOptions::default())
                .expect("open PostgreSQL"),
        ) as Box<dyn TaskStore>
    });
}
