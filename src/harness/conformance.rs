//! The store conformance suite: checks any [`TaskStore`] against the contract.
//!
//! Give it a factory that opens a fresh, empty store for the options it passes, and it
//! runs every [`CHECKS`] entry: the 32-case contract fixture replayed through the store
//! (each decision compared with the fixture *and* with the pure contract), versions,
//! outbox atomicity and leases, pagination of 1,000 tasks across 3 callers, cursor
//! binding, expiry, cancellation and tenant isolation.
//!
//! ```no_run
//! use tasklatch::{conformance, store::MemoryFactory};
//! let outcomes = conformance::run_all(&MemoryFactory);
//! assert!(outcomes.iter().all(|outcome| outcome.passed), "{outcomes:#?}");
//! ```
//!
//! Any [`StoreFactory`] will do, a closure included:
//! `conformance::run_all(&|options: &StoreOptions| Ok(Box::new(MyStore::open(options)?) as Box<dyn TaskStore>))`.

use crate::contract::{Decision, Negotiated, TaskOutcome, TaskStatus, TaskSupport};
use crate::fixture::{
    self, Case, ContractEvaluator, Evaluation, Evaluator, FIXTURE_CURSOR_SECRET,
    LIST_LIMIT_DEFAULT, Op, record_of,
};
pub use crate::store::StoreFactory;
use crate::store::{
    CreateCommand, ListQuery, StoreError, StoreOptions, TaskStore, TransitionCommand,
    WrappedRequest,
};
use serde_json::json;
use std::collections::BTreeSet;
use std::fmt::Debug;
use std::path::Path;

/// One named check. `run` returns a one-line summary on success, the failure otherwise.
pub struct Check {
    pub name: &'static str,
    pub run: fn(&dyn StoreFactory) -> Result<String, String>,
}

/// The result of one check against one store.
#[derive(Clone, Debug)]
pub struct CheckOutcome {
    pub name: &'static str,
    pub passed: bool,
    pub detail: String,
}

/// Every check, in the order `run_all` runs them.
pub const CHECKS: &[Check] = &[
    Check {
        name: "contract_fixture_replay",
        run: contract_fixture_replay,
    },
    Check {
        name: "versions_grow_by_one",
        run: versions_grow_by_one,
    },
    Check {
        name: "idempotent_creation",
        run: idempotent_creation,
    },
    Check {
        name: "outbox_written_with_task",
        run: outbox_written_with_task,
    },
    Check {
        name: "leases_redeliver_and_fence_acks",
        run: leases_redeliver_and_fence_acks,
    },
    Check {
        name: "pagination_1000_tasks_3_callers",
        run: pagination_1000_tasks_3_callers,
    },
    Check {
        name: "cursors_bound_to_caller",
        run: cursors_bound_to_caller,
    },
    Check {
        name: "expiry_blocks_late_work_and_sweeps",
        run: expiry_blocks_late_work_and_sweeps,
    },
    Check {
        name: "cancel_is_atomic_and_wins",
        run: cancel_is_atomic_and_wins,
    },
    Check {
        name: "tenants_are_isolated",
        run: tenants_are_isolated,
    },
    Check {
        name: "import_is_all_or_nothing",
        run: import_is_all_or_nothing,
    },
];

/// Runs every check against stores from `factory`.
pub fn run_all(factory: &dyn StoreFactory) -> Vec<CheckOutcome> {
    CHECKS
        .iter()
        .map(|check| match (check.run)(factory) {
            Ok(detail) => CheckOutcome {
                name: check.name,
                passed: true,
                detail,
            },
            Err(detail) => CheckOutcome {
                name: check.name,
                passed: false,
                detail,
            },
        })
        .collect()
}

/// The committed reference fixture, embedded so the suite runs outside this repository.
pub const CONTRACT_FIXTURE: &str = include_str!("../../fixtures/contract/tasks-2025-11-25.json");
const CONTRACT_FIXTURE_PATH: &str = "fixtures/contract/tasks-2025-11-25.json";

fn fresh(factory: &dyn StoreFactory) -> Result<Box<dyn TaskStore>, String> {
    factory
        .open(&StoreOptions {
            cursor_secret: Some(FIXTURE_CURSOR_SECRET.to_vec()),
        })
        .map_err(|error| format!("cannot open a fresh store: {error}"))
}

fn same<T: PartialEq + Debug>(what: &str, actual: T, expected: T) -> Result<(), String> {
    if actual == expected {
        Ok(())
    } else {
        Err(format!("{what}: expected {expected:?}, got {actual:?}"))
    }
}

fn store_err(what: &str) -> impl Fn(StoreError) -> String + '_ {
    move |error| format!("{what}: store error: {error}")
}

const ALICE: &str = "tenant-a/alice";
const BOB: &str = "tenant-b/bob";
const CAROL: &str = "tenant-c/carol";

fn command(
    caller: &str,
    task_id: &str,
    key: Option<&str>,
    month: &str,
    now_ms: u64,
) -> CreateCommand {
    CreateCommand {
        caller: caller.into(),
        negotiated: Negotiated::FULL,
        task_support: TaskSupport::Optional,
        task_requested: true,
        idempotency_key: key.map(str::to_owned),
        request: WrappedRequest {
            method: "tools/call".into(),
            name: "export".into(),
            arguments: Some(json!({ "month": month })),
        },
        ttl_ms: None,
        poll_interval_ms: Some(1_000),
        task_id: task_id.into(),
        correlation_id: format!("corr-{task_id}"),
        now_ms,
    }
}

fn transition(
    task_id: &str,
    caller: &str,
    expected_version: u64,
    next: TaskStatus,
    now_ms: u64,
) -> TransitionCommand {
    TransitionCommand {
        task_id: task_id.into(),
        caller: caller.into(),
        expected_version,
        next,
        outcome: outcome_for(next, task_id),
        status_message: None,
        now_ms,
    }
}

/// The outcome a worker stores with `next`: a result for completed, an `isError` result
/// for failed, none for the rest.
pub fn outcome_for(next: TaskStatus, task_id: &str) -> Option<TaskOutcome> {
    match next {
        TaskStatus::Completed => Some(TaskOutcome::Result {
            result: json!({ "content": [{ "type": "text", "text": format!("done {task_id}") }], "isError": false }),
        }),
        TaskStatus::Failed => Some(TaskOutcome::Result {
            result: json!({ "content": [{ "type": "text", "text": format!("failed {task_id}") }], "isError": true }),
        }),
        _ => None,
    }
}

fn create_ok(
    store: &dyn TaskStore,
    command: &CreateCommand,
    expected: Decision,
) -> Result<crate::store::Answer, String> {
    let answer = store.create(command).map_err(store_err("create"))?;
    same(
        &format!("create {}", command.task_id),
        answer.decision,
        expected,
    )?;
    Ok(answer)
}

/// Drives one fixture case through a fresh store.
pub struct StoreEvaluator<'f> {
    pub factory: &'f dyn StoreFactory,
}

impl Evaluator for StoreEvaluator<'_> {
    fn evaluate(&mut self, case: &Case) -> Result<Evaluation, String> {
        let store = fresh(self.factory)?;
        let records: Vec<_> = case.stored.iter().map(record_of).collect();
        store.import(&records).map_err(store_err("seed"))?;
        let caller = case.caller.as_str();
        let now_ms = case.now_ms;
        let bare = |answer: crate::store::Answer| Evaluation {
            decision: answer.decision,
            task_id: None,
            visible_task_ids: None,
        };
        let answer = match &case.op {
            Op::ToolsCall {
                name,
                arguments,
                task,
                idempotency_key,
            } => {
                let answer = store
                    .create(&CreateCommand {
                        caller: caller.into(),
                        negotiated: case.negotiated,
                        task_support: case.tools.get(name).copied().unwrap_or_default(),
                        task_requested: task.as_ref().is_some_and(|task| task.is_object()),
                        idempotency_key: idempotency_key.clone(),
                        request: WrappedRequest {
                            method: "tools/call".into(),
                            name: name.clone(),
                            arguments: arguments.clone(),
                        },
                        ttl_ms: task
                            .as_ref()
                            .and_then(|task| task.get("ttl"))
                            .and_then(|ttl| ttl.as_u64()),
                        poll_interval_ms: None,
                        task_id: format!("{}-new-task", case.id),
                        correlation_id: case.id.clone(),
                        now_ms,
                    })
                    .map_err(store_err("create"))?;
                let task_id = (answer.decision == Decision::ReplayTask)
                    .then(|| answer.record.as_ref().map(|record| record.task_id.clone()))
                    .flatten();
                Evaluation {
                    decision: answer.decision,
                    task_id,
                    visible_task_ids: None,
                }
            }
            Op::Transition {
                task_id,
                expected_version,
                next,
            } => bare(
                store
                    .transition(&transition(
                        task_id,
                        caller,
                        *expected_version,
                        *next,
                        now_ms,
                    ))
                    .map_err(store_err("transition"))?,
            ),
            Op::Get { task_id } => bare(
                store
                    .get(caller, task_id, now_ms)
                    .map_err(store_err("get"))?,
            ),
            Op::Result { task_id } => bare(
                store
                    .result(caller, task_id, now_ms)
                    .map_err(store_err("result"))?,
            ),
            Op::Cancel { task_id } => bare(
                store
                    .cancel(case.negotiated, caller, task_id, now_ms)
                    .map_err(store_err("cancel"))?,
            ),
            Op::List { cursor, limit } => {
                let page = store
                    .list(&ListQuery {
                        negotiated: case.negotiated,
                        caller: caller.into(),
                        cursor: cursor.clone(),
                        limit: limit.unwrap_or(LIST_LIMIT_DEFAULT),
                        now_ms,
                    })
                    .map_err(store_err("list"))?;
                let visible = (page.decision == Decision::ListTenantFiltered)
                    .then(|| page.tasks.iter().map(|task| task.task_id.clone()).collect());
                Evaluation {
                    decision: page.decision,
                    task_id: None,
                    visible_task_ids: visible,
                }
            }
        };
        Ok(answer)
    }
}

fn contract_fixture_replay(factory: &dyn StoreFactory) -> Result<String, String> {
    let loaded = fixture::parse_fixture(
        Path::new(CONTRACT_FIXTURE_PATH),
        CONTRACT_FIXTURE.as_bytes(),
    )
    .map_err(|error| error.to_string())?;
    let by_store = fixture::replay(&loaded, &mut StoreEvaluator { factory });
    let by_contract = fixture::replay(&loaded, &mut ContractEvaluator);
    let mut problems = Vec::new();
    for (store_row, contract_row) in by_store.cases.iter().zip(&by_contract.cases) {
        if !store_row.matched {
            problems.push(format!(
                "{}: fixture expects {}, store answered {}{}",
                store_row.id,
                store_row.expected,
                store_row.actual.map_or("(error)", Decision::code),
                store_row
                    .detail
                    .as_deref()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default()
            ));
        } else if store_row.actual != contract_row.actual {
            problems.push(format!(
                "{}: store answered {:?}, the pure contract {:?}",
                store_row.id, store_row.actual, contract_row.actual
            ));
        }
    }
    if problems.is_empty() {
        Ok(by_store.summary.to_string())
    } else {
        Err(problems.join("; "))
    }
}

fn versions_grow_by_one(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    let created = create_ok(
        &*store,
        &command(ALICE, "v1", None, "2026-06", 10),
        Decision::AcceptTask,
    )?;
    let record = created.record.ok_or("ACCEPT_TASK without a record")?;
    same(
        "initial status and version",
        (record.status, record.version),
        (TaskStatus::Working, 1),
    )?;
    let steps = [
        (1, TaskStatus::InputRequired, Decision::ApplyTransition),
        (1, TaskStatus::Working, Decision::BlockStaleVersion),
        (
            2,
            TaskStatus::InputRequired,
            Decision::BlockIllegalTransition,
        ),
        (2, TaskStatus::Working, Decision::ApplyTransition),
        (2, TaskStatus::Completed, Decision::BlockStaleVersion),
        (3, TaskStatus::Completed, Decision::ApplyTransition),
        (3, TaskStatus::Completed, Decision::IdempotentTerminal),
        (4, TaskStatus::Failed, Decision::BlockTerminalRewrite),
    ];
    let mut version = 1;
    for (at, (expected_version, next, decision)) in steps.into_iter().enumerate() {
        let now_ms = 20 + at as u64;
        let before = store.read("v1").map_err(store_err("read"))?;
        let answer = store
            .transition(&transition("v1", ALICE, expected_version, next, now_ms))
            .map_err(store_err("transition"))?;
        same(
            &format!("step {at}: {expected_version} -> {next}"),
            answer.decision,
            decision,
        )?;
        let after = store
            .read("v1")
            .map_err(store_err("read"))?
            .ok_or("task vanished")?;
        if decision == Decision::ApplyTransition {
            version += 1;
            same(&format!("step {at}: version"), after.version, version)?;
            same(
                &format!("step {at}: answer is the stored record"),
                answer.record.as_ref(),
                Some(&after),
            )?;
            same(
                &format!("step {at}: updated_at_ms"),
                after.updated_at_ms,
                now_ms,
            )?;
        } else {
            same(
                &format!("step {at}: a refused write changes nothing"),
                Some(after),
                before,
            )?;
        }
    }
    let stored = store
        .read("v1")
        .map_err(store_err("read"))?
        .ok_or("task vanished")?;
    same(
        "final outcome",
        stored.outcome,
        outcome_for(TaskStatus::Completed, "v1"),
    )?;
    Ok(format!("{} writes, final version {version}", steps.len()))
}

fn idempotent_creation(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    let first = create_ok(
        &*store,
        &command(ALICE, "i1", Some("k"), "2026-06", 10),
        Decision::AcceptTask,
    )?;
    let replay = create_ok(
        &*store,
        &command(ALICE, "i2", Some("k"), "2026-06", 11),
        Decision::ReplayTask,
    )?;
    same("replay returns the first task", replay.record, first.record)?;
    create_ok(
        &*store,
        &command(ALICE, "i3", Some("k"), "2026-07", 12),
        Decision::BlockIdempotencyCollision,
    )?;
    create_ok(
        &*store,
        &command(BOB, "i4", Some("k"), "2026-06", 13),
        Decision::AcceptTask,
    )?;
    create_ok(
        &*store,
        &command(ALICE, "i5", None, "2026-06", 14),
        Decision::AcceptTask,
    )?;
    create_ok(
        &*store,
        &command(ALICE, "i6", None, "2026-06", 15),
        Decision::AcceptTask,
    )?;
    let mut sync = command(ALICE, "i7", Some("k"), "2026-07", 16);
    sync.task_requested = false;
    create_ok(&*store, &sync, Decision::AcceptNormal)?;
    for (id, exists) in [
        ("i1", true),
        ("i2", false),
        ("i3", false),
        ("i4", true),
        ("i5", true),
        ("i6", true),
        ("i7", false),
    ] {
        same(
            &format!("{id} stored"),
            store.read(id).map_err(store_err("read"))?.is_some(),
            exists,
        )?;
    }
    Ok("replay, collision, per-caller keys, keyless and synchronous calls".into())
}

fn outbox_written_with_task(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    let accepted = command(ALICE, "o1", Some("k"), "2026-06", 10);
    create_ok(&*store, &accepted, Decision::AcceptTask)?;
    create_ok(
        &*store,
        &command(ALICE, "o2", Some("k"), "2026-06", 11),
        Decision::ReplayTask,
    )?;
    create_ok(
        &*store,
        &command(ALICE, "o3", Some("k"), "2026-07", 12),
        Decision::BlockIdempotencyCollision,
    )?;
    let mut forbidden = command(ALICE, "o4", None, "2026-06", 13);
    forbidden.task_support = TaskSupport::Forbidden;
    create_ok(&*store, &forbidden, Decision::BlockTaskForbidden)?;
    let mut no_capability = command(ALICE, "o5", None, "2026-06", 14);
    no_capability.negotiated.tools_call = false;
    create_ok(&*store, &no_capability, Decision::BlockCapability)?;
    let mut required_sync = command(ALICE, "o6", None, "2026-06", 15);
    required_sync.task_support = TaskSupport::Required;
    required_sync.task_requested = false;
    create_ok(&*store, &required_sync, Decision::BlockTaskRequired)?;
    let claims = store
        .claim("w1", 100, 1_000, 10)
        .map_err(store_err("claim"))?;
    same(
        "claimed entries",
        claims
            .iter()
            .map(|c| c.task_id.as_str())
            .collect::<Vec<_>>(),
        vec!["o1"],
    )?;
    let claim = &claims[0];
    same("claimed request", &claim.request, &accepted.request)?;
    same("claimed owner", claim.auth_key.as_str(), ALICE)?;
    same(
        "claimed attempt, version, status",
        (claim.attempt, claim.task_version, claim.task_status),
        (1, 1, TaskStatus::Working),
    )?;
    for id in ["o2", "o3", "o4", "o5", "o6"] {
        same(
            &format!("{id} stored"),
            store.read(id).map_err(store_err("read"))?,
            None,
        )?;
    }
    Ok("1 accepted task, 1 entry; 5 refusals and replays, none".into())
}

fn leases_redeliver_and_fence_acks(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    create_ok(
        &*store,
        &command(ALICE, "l1", None, "2026-06", 10),
        Decision::AcceptTask,
    )?;
    let first = store.claim("w1", 100, 50, 10).map_err(store_err("claim"))?;
    same(
        "first delivery",
        first
            .iter()
            .map(|c| (c.task_id.as_str(), c.attempt, c.lease_expires_at_ms))
            .collect::<Vec<_>>(),
        vec![("l1", 1, 150)],
    )?;
    same(
        "leased entry is not redelivered early",
        store
            .claim("w2", 149, 50, 10)
            .map_err(store_err("claim"))?
            .len(),
        0,
    )?;
    let second = store.claim("w2", 150, 50, 10).map_err(store_err("claim"))?;
    same(
        "redelivery at lease expiry",
        second
            .iter()
            .map(|c| (c.task_id.as_str(), c.attempt))
            .collect::<Vec<_>>(),
        vec![("l1", 2)],
    )?;
    same(
        "stale attempt cannot ack",
        store.ack("l1", 1, 160).map_err(store_err("ack"))?,
        false,
    )?;
    same(
        "current attempt acks",
        store.ack("l1", 2, 161).map_err(store_err("ack"))?,
        true,
    )?;
    same(
        "ack is once",
        store.ack("l1", 2, 162).map_err(store_err("ack"))?,
        false,
    )?;
    same(
        "acked entry never returns",
        store
            .claim("w3", 10_000, 50, 10)
            .map_err(store_err("claim"))?
            .len(),
        0,
    )?;
    create_ok(
        &*store,
        &command(ALICE, "l2", None, "2026-07", 200),
        Decision::AcceptTask,
    )?;
    store.claim("w1", 200, 10, 10).map_err(store_err("claim"))?;
    same(
        "release before expiry",
        store
            .release_expired_leases(209)
            .map_err(store_err("release"))?,
        0,
    )?;
    same(
        "release at expiry",
        store
            .release_expired_leases(210)
            .map_err(store_err("release"))?,
        1,
    )?;
    let third = store.claim("w2", 205, 10, 10).map_err(store_err("claim"))?;
    same(
        "released entry is claimable",
        third
            .iter()
            .map(|c| (c.task_id.as_str(), c.attempt))
            .collect::<Vec<_>>(),
        vec![("l2", 2)],
    )?;
    same(
        "ack l2",
        store.ack("l2", 2, 206).map_err(store_err("ack"))?,
        true,
    )?;
    let batch: Vec<_> = (0..5)
        .map(|i| command(BOB, &format!("b{i}"), None, &format!("m{i}"), 300 + i))
        .collect();
    for cmd in &batch {
        create_ok(&*store, cmd, Decision::AcceptTask)?;
    }
    let claims = store.claim("w4", 400, 100, 3).map_err(store_err("claim"))?;
    same(
        "batch bound and order",
        claims
            .iter()
            .map(|c| c.task_id.as_str())
            .collect::<Vec<_>>(),
        vec!["b0", "b1", "b2"],
    )?;
    Ok("lease, redelivery, fenced ack, release, batch order".into())
}

fn pagination_1000_tasks_3_callers(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    let callers = [ALICE, BOB, CAROL];
    let mut expected: [Vec<String>; 3] = Default::default();
    for index in 0..1_000u64 {
        let owner = (index % 3) as usize;
        // Several tasks share a creation time: the task id must break ties.
        let id = format!("p{:04}", (index * 7919) % 1_000);
        create_ok(
            &*store,
            &command(callers[owner], &id, None, "2026-06", index / 5),
            Decision::AcceptTask,
        )?;
        expected[owner].push(id);
    }
    let mut pages = 0;
    for (owner, caller) in callers.iter().enumerate() {
        let mut want: Vec<(u64, String)> = Vec::new();
        for id in &expected[owner] {
            let record = store
                .read(id)
                .map_err(store_err("read"))?
                .ok_or("task vanished")?;
            want.push((record.created_at_ms, id.clone()));
        }
        want.sort();
        let mut seen = Vec::new();
        let mut cursor = None;
        for _ in 0..1_000 {
            let page = store
                .list(&ListQuery {
                    negotiated: Negotiated::FULL,
                    caller: (*caller).into(),
                    cursor: cursor.clone(),
                    limit: 37,
                    now_ms: 500,
                })
                .map_err(store_err("list"))?;
            same("list decision", page.decision, Decision::ListTenantFiltered)?;
            pages += 1;
            if let Some(foreign) = page.tasks.iter().find(|task| task.auth_key != *caller) {
                return Err(format!(
                    "{caller}'s page holds {}'s task {}",
                    foreign.auth_key, foreign.task_id
                ));
            }
            seen.extend(page.tasks.iter().map(|task| task.task_id.clone()));
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        let unique: BTreeSet<&String> = seen.iter().collect();
        same(
            &format!("{caller}: no duplicates"),
            unique.len(),
            seen.len(),
        )?;
        same(
            &format!("{caller}: every task once, in order"),
            seen,
            want.into_iter().map(|(_, id)| id).collect::<Vec<_>>(),
        )?;
    }
    Ok(format!("1000 tasks, 3 callers, {pages} pages of 37"))
}

fn cursors_bound_to_caller(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    for index in 0..5 {
        create_ok(
            &*store,
            &command(ALICE, &format!("c{index}"), None, "2026-06", index),
            Decision::AcceptTask,
        )?;
        create_ok(
            &*store,
            &command(BOB, &format!("d{index}"), None, "2026-06", index),
            Decision::AcceptTask,
        )?;
    }
    let list = |caller: &str, cursor: Option<String>, negotiated: Negotiated| {
        store.list(&ListQuery {
            negotiated,
            caller: caller.into(),
            cursor,
            limit: 2,
            now_ms: 100,
        })
    };
    let first = list(ALICE, None, Negotiated::FULL).map_err(store_err("list"))?;
    let cursor = first
        .next_cursor
        .ok_or("a 2-task page of 5 must have a next cursor")?;
    let own = list(ALICE, Some(cursor.clone()), Negotiated::FULL).map_err(store_err("list"))?;
    same(
        "own cursor",
        own.tasks
            .iter()
            .map(|t| t.task_id.as_str())
            .collect::<Vec<_>>(),
        vec!["c2", "c3"],
    )?;
    let stolen = list(BOB, Some(cursor.clone()), Negotiated::FULL).map_err(store_err("list"))?;
    same(
        "another caller's cursor",
        (stolen.decision, stolen.tasks.len()),
        (Decision::BlockBadCursor, 0),
    )?;
    let tampered = cursor.replacen(".1.", ".0.", 1);
    let edited = list(ALICE, Some(tampered), Negotiated::FULL).map_err(store_err("list"))?;
    same("tampered cursor", edited.decision, Decision::BlockBadCursor)?;
    let garbage =
        list(ALICE, Some("garbage".into()), Negotiated::FULL).map_err(store_err("list"))?;
    same("garbage cursor", garbage.decision, Decision::BlockBadCursor)?;
    let no_list = Negotiated {
        list: false,
        ..Negotiated::FULL
    };
    let refused = list(ALICE, Some("garbage".into()), no_list).map_err(store_err("list"))?;
    same(
        "capability before cursor",
        (refused.decision, refused.tasks.len()),
        (Decision::BlockCapability, 0),
    )?;
    Ok("stolen, tampered and garbage cursors refused".into())
}

fn expiry_blocks_late_work_and_sweeps(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    let mut short = command(ALICE, "e1", Some("k"), "2026-06", 0);
    short.ttl_ms = Some(1_000);
    let created = create_ok(&*store, &short, Decision::AcceptTask)?;
    same(
        "expires_at_ms",
        created.record.and_then(|r| r.expires_at_ms),
        Some(1_000),
    )?;
    create_ok(
        &*store,
        &command(ALICE, "e0", None, "keep", 0),
        Decision::AcceptTask,
    )?;
    same(
        "get before expiry",
        store
            .get(ALICE, "e1", 999)
            .map_err(store_err("get"))?
            .decision,
        Decision::ReturnStatus,
    )?;
    same(
        "get at expiry",
        store
            .get(ALICE, "e1", 1_000)
            .map_err(store_err("get"))?
            .decision,
        Decision::BlockExpired,
    )?;
    same(
        "result at expiry",
        store
            .result(ALICE, "e1", 1_000)
            .map_err(store_err("result"))?
            .decision,
        Decision::BlockExpired,
    )?;
    let late = store
        .transition(&transition("e1", ALICE, 1, TaskStatus::Completed, 1_000))
        .map_err(store_err("transition"))?;
    same("late completion", late.decision, Decision::BlockExpired)?;
    same(
        "cancel at expiry",
        store
            .cancel(Negotiated::FULL, ALICE, "e1", 1_000)
            .map_err(store_err("cancel"))?
            .decision,
        Decision::BlockExpired,
    )?;
    let page = store
        .list(&ListQuery {
            negotiated: Negotiated::FULL,
            caller: ALICE.into(),
            cursor: None,
            limit: 10,
            now_ms: 1_000,
        })
        .map_err(store_err("list"))?;
    same(
        "expired task not listed",
        page.tasks
            .iter()
            .map(|t| t.task_id.as_str())
            .collect::<Vec<_>>(),
        vec!["e0"],
    )?;
    let mut again = command(ALICE, "e2", Some("k"), "2026-06", 1_000);
    again.ttl_ms = Some(1_000);
    create_ok(&*store, &again, Decision::AcceptTask)?;
    create_ok(
        &*store,
        &command(ALICE, "e3", Some("k"), "2026-06", 1_001),
        Decision::ReplayTask,
    )?;
    let stored = store
        .read("e1")
        .map_err(store_err("read"))?
        .ok_or("expired task swept too early")?;
    same(
        "expired task unchanged",
        (stored.status, stored.version),
        (TaskStatus::Working, 1),
    )?;
    same(
        "sweep",
        store
            .sweep_expired(1_000, 100)
            .map_err(store_err("sweep"))?,
        1,
    )?;
    same(
        "swept task gone",
        store.read("e1").map_err(store_err("read"))?,
        None,
    )?;
    let claims = store
        .claim("w", 1_500, 100, 10)
        .map_err(store_err("claim"))?;
    let mut claimed: Vec<_> = claims.iter().map(|c| c.task_id.as_str()).collect();
    claimed.sort_unstable();
    same("swept task's outbox entry gone", claimed, vec!["e0", "e2"])?;
    same(
        "second sweep at 2000",
        store
            .sweep_expired(2_000, 100)
            .map_err(store_err("sweep"))?,
        1,
    )?;
    Ok("late work refused at expires_at; key released; swept with outbox".into())
}

fn cancel_is_atomic_and_wins(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    create_ok(
        &*store,
        &command(ALICE, "x1", None, "2026-06", 10),
        Decision::AcceptTask,
    )?;
    store
        .transition(&transition("x1", ALICE, 1, TaskStatus::InputRequired, 11))
        .map_err(store_err("transition"))?;
    let cancelled = store
        .cancel(Negotiated::FULL, ALICE, "x1", 20)
        .map_err(store_err("cancel"))?;
    same("cancel decision", cancelled.decision, Decision::ApplyCancel)?;
    let record = cancelled
        .record
        .ok_or("APPLY_CANCEL without the record after it")?;
    same(
        "after cancel",
        (
            record.status,
            record.version,
            record.cancel_requested,
            record.updated_at_ms,
        ),
        (TaskStatus::Cancelled, 3, true, 20),
    )?;
    same(
        "the reply is the stored record",
        store.read("x1").map_err(store_err("read"))?,
        Some(record),
    )?;
    for expected_version in [2, 3] {
        let late = store
            .transition(&transition(
                "x1",
                ALICE,
                expected_version,
                TaskStatus::Completed,
                30,
            ))
            .map_err(store_err("transition"))?;
        same(
            "late completion after cancel",
            late.decision,
            Decision::BlockTerminalRewrite,
        )?;
    }
    same(
        "result after cancel",
        store
            .result(ALICE, "x1", 40)
            .map_err(store_err("result"))?
            .decision,
        Decision::ReturnCancelled,
    )?;
    same(
        "second cancel",
        store
            .cancel(Negotiated::FULL, ALICE, "x1", 41)
            .map_err(store_err("cancel"))?
            .decision,
        Decision::AlreadyTerminal,
    )?;
    // A worker may write `cancelled` itself: no requestor intent, and the answer is still
    // exactly the stored record.
    create_ok(
        &*store,
        &command(ALICE, "x2", None, "2026-07", 50),
        Decision::AcceptTask,
    )?;
    let by_worker = store
        .transition(&transition("x2", ALICE, 1, TaskStatus::Cancelled, 51))
        .map_err(store_err("transition"))?;
    same(
        "worker cancel",
        by_worker.decision,
        Decision::ApplyTransition,
    )?;
    let stored = store.read("x2").map_err(store_err("read"))?;
    same(
        "worker cancel: answer is the stored record",
        by_worker.record.as_ref(),
        stored.as_ref(),
    )?;
    same(
        "worker cancel: no requestor intent",
        stored.map(|r| r.cancel_requested),
        Some(false),
    )?;
    let no_cancel = Negotiated {
        cancel: false,
        ..Negotiated::FULL
    };
    same(
        "cancel without capability",
        store
            .cancel(no_cancel, ALICE, "x1", 42)
            .map_err(store_err("cancel"))?
            .decision,
        Decision::BlockCapability,
    )?;
    Ok("cancel applied atomically, late completions refused".into())
}

fn tenants_are_isolated(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    create_ok(
        &*store,
        &command(ALICE, "a1", Some("k"), "2026-06", 10),
        Decision::AcceptTask,
    )?;
    let answers = [
        ("get", store.get(BOB, "a1", 20).map_err(store_err("get"))?),
        (
            "result",
            store.result(BOB, "a1", 20).map_err(store_err("result"))?,
        ),
        (
            "cancel",
            store
                .cancel(Negotiated::FULL, BOB, "a1", 20)
                .map_err(store_err("cancel"))?,
        ),
        (
            "transition",
            store
                .transition(&transition("a1", BOB, 1, TaskStatus::Completed, 20))
                .map_err(store_err("transition"))?,
        ),
    ];
    for (what, answer) in answers {
        same(
            &format!("{what} by another tenant"),
            (answer.decision, answer.record),
            (Decision::BlockAuth, None),
        )?;
    }
    let missing = store
        .get(BOB, "no-such-task", 20)
        .map_err(store_err("get"))?;
    same(
        "unknown task",
        (missing.decision, missing.record),
        (Decision::BlockNotFound, None),
    )?;
    let page = store
        .list(&ListQuery {
            negotiated: Negotiated::FULL,
            caller: BOB.into(),
            cursor: None,
            limit: 10,
            now_ms: 20,
        })
        .map_err(store_err("list"))?;
    same("another tenant's list", page.tasks.len(), 0)?;
    let stored = store
        .read("a1")
        .map_err(store_err("read"))?
        .ok_or("task vanished")?;
    same(
        "task untouched",
        (stored.status, stored.version),
        (TaskStatus::Working, 1),
    )?;
    Ok("get, result, cancel, transition and list refused across tenants".into())
}

fn import_is_all_or_nothing(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    let one = command(ALICE, "m1", None, "2026-06", 10).admission_record(
        crate::contract::request_digest("tools/call", "export", None),
    );
    let two = command(ALICE, "m2", None, "2026-06", 10).admission_record(
        crate::contract::request_digest("tools/call", "export", None),
    );
    store
        .import(std::slice::from_ref(&one))
        .map_err(store_err("import"))?;
    match store.import(&[two.clone(), one.clone()]) {
        Err(StoreError::Duplicate { task_id }) => same("duplicate named", task_id.as_str(), "m1")?,
        other => {
            return Err(format!(
                "importing an existing id: expected Duplicate, got {other:?}"
            ));
        }
    }
    same(
        "nothing half-written",
        store.read("m2").map_err(store_err("read"))?,
        None,
    )?;
    Ok("duplicate refused, batch rolled back".into())
}
