//! The store conformance suite: checks any [`TaskStore`] against the contract.
//!
//! Give it a factory that opens a fresh, empty store for the options it passes, and it
//! runs every [`CHECKS`] entry: the 32-case contract fixture replayed through the store
//! (each decision compared with the fixture *and* with the pure contract), versions,
//! outbox atomicity and leases, pagination of 1,000 tasks across 3 callers, cursor
//! binding, expiry, cancellation and tenant isolation.
//!
//! The fidelity and edge checks compare every field a store returns with what the
//! contract itself constructs — [`CreateCommand::admission_record`] after a create,
//! [`applied_transition`] and [`cancelled_record`] after a write, the records given to
//! `import` — through every view (`create`'s answer, `read`, `get`, `result`, `list`, and
//! the outbox claim with its exact request; [`input_decision`] after an answer), and probe
//! each bound at its edge: list limits
//! 0, 1, N, N+1 and past [`LIST_LIMIT_MAX`]; expiry at exactly `now == expires_at`; claim
//! `max` 0, 1 and past [`CLAIM_BATCH_MAX`]; leases at exactly their end; sweep `max` 0, 1
//! and `usize::MAX`; an idempotency key's lifetime (bound while its task lives, terminal
//! or not, per caller, released at expiry and by the sweep); task id collisions on
//! create and import. A failure names the task, the view, the field, expected and got.
//!
//! ```no_run
//! use tasklatch_harness::conformance;
//! use tasklatch_server::store::MemoryFactory;
//! let outcomes = conformance::run_all(&MemoryFactory);
//! assert!(outcomes.iter().all(|outcome| outcome.passed), "{outcomes:#?}");
//! ```
//!
//! Any [`StoreFactory`] will do, a closure included:
//! `conformance::run_all(&|options: &StoreOptions| Ok(Box::new(MyStore::open(options)?) as Box<dyn TaskStore>))`.

use crate::contract::{
    self, Decision, Negotiated, TaskOutcome, TaskRecord, TaskStatus, TaskSupport,
};
use crate::fixture::{
    self, Case, ContractEvaluator, Evaluation, Evaluator, FIXTURE_CURSOR_SECRET,
    LIST_LIMIT_DEFAULT, Op, record_of,
};
pub use crate::store::StoreFactory;
use crate::store::{
    CLAIM_BATCH_MAX, CreateCommand, InputCommand, LIST_LIMIT_MAX, ListQuery, OutboxClaim,
    StoreError, StoreOptions, TaskStore, TransitionCommand, WrappedRequest, applied_transition,
    cancelled_record, input_decision,
};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::fmt::Debug;
use std::path::Path;

/// One named check. `run` returns a one-line summary on success, the failure otherwise.
pub struct Check {
    /// The check's name (`idempotent_creation`, …), as reports show it.
    pub name: &'static str,
    /// Runs the check against stores from the factory.
    pub run: fn(&dyn StoreFactory) -> Result<String, String>,
}

/// The result of one check against one store.
#[derive(Clone, Debug)]
pub struct CheckOutcome {
    /// The check's name ([`Check::name`]).
    pub name: &'static str,
    /// Whether the store passed.
    pub passed: bool,
    /// The one-line summary on success; the failure otherwise.
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
    Check {
        name: "created_records_round_trip",
        run: created_records_round_trip,
    },
    Check {
        name: "transitions_round_trip",
        run: transitions_round_trip,
    },
    Check {
        name: "imports_round_trip",
        run: imports_round_trip,
    },
    Check {
        name: "list_page_edges",
        run: list_page_edges,
    },
    Check {
        name: "input_round_trip",
        run: input_round_trip,
    },
    Check {
        name: "claims_carry_what_was_stored",
        run: claims_carry_what_was_stored,
    },
    Check {
        name: "claim_and_sweep_bounds",
        run: claim_and_sweep_bounds,
    },
    Check {
        name: "claims_merge_free_and_expired_in_order",
        run: claims_merge_free_and_expired_in_order,
    },
    Check {
        name: "idempotency_key_lifetime",
        run: idempotency_key_lifetime,
    },
    Check {
        name: "task_id_collisions",
        run: task_id_collisions,
    },
    Check {
        name: "point_of_no_return",
        run: point_of_no_return,
    },
];

/// A claim takes the oldest entries by enqueue time among the unleased and the expired
/// alike, whichever way a store finds each: here the three oldest claimable are two that
/// were released (unleased again) and one whose lease ran out, interleaved.
fn claims_merge_free_and_expired_in_order(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    for (n, id) in ["m0", "m1", "m2", "m3", "m4", "m5"].iter().enumerate() {
        create_ok(
            &*store,
            &command(ALICE, id, None, "2026-06", 1_000 + n as u64),
            Decision::AcceptTask,
        )?;
    }
    let claimed = |now_ms: u64, lease_ms: u64, max: usize| -> Result<Vec<(String, u32)>, String> {
        Ok(store
            .claim("w", now_ms, lease_ms, max)
            .map_err(store_err("claim"))?
            .into_iter()
            .map(|claim| (claim.task_id, claim.attempt))
            .collect())
    };
    let owned = |pairs: &[(&str, u32)]| -> Vec<(String, u32)> {
        pairs.iter().map(|(id, n)| ((*id).to_owned(), *n)).collect()
    };
    // m0 and m2 leased until 2,100, m1 and m3 until 2,500; m4 and m5 never claimed.
    for (id, lease_ms) in [("m0", 100), ("m1", 500), ("m2", 100), ("m3", 500)] {
        same(
            &format!("claim max 1 at 2000 (lease {lease_ms} ms)"),
            claimed(2_000, lease_ms, 1)?,
            owned(&[(id, 1)]),
        )?;
    }
    same(
        "release_expired_leases(2100): m0 and m2 unleased again",
        store
            .release_expired_leases(2_100)
            .map_err(store_err("release"))?,
        2,
    )?;
    same(
        "claim max 3 at 2500: released m0, expired m1, released m2 (enqueue order)",
        claimed(2_500, 1_000, 3)?,
        owned(&[("m0", 2), ("m1", 2), ("m2", 2)]),
    )?;
    same(
        "claim max 10 at 2500: expired m3, then the never-claimed m4, m5",
        claimed(2_500, 1_000, 10)?,
        owned(&[("m3", 2), ("m4", 1), ("m5", 1)]),
    )?;
    same(
        "claim at 3499: every lease runs",
        claimed(3_499, 1_000, 10)?,
        vec![],
    )?;
    Ok("released, expired and never-claimed entries claimed oldest first".into())
}

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
pub const CONTRACT_FIXTURE: &str = include_str!("../../../fixtures/contract/tasks-2025-11-25.json");
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
        era: crate::contract::Era::Core2025,
        input_responses: None,
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
        irreversible_effect: None,
        task_id: task_id.into(),
        caller: caller.into(),
        expected_version,
        next,
        outcome: outcome_for(next, task_id),
        status_message: None,
        now_ms,
        input_requests: None,
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
    /// Opens the fresh store each case runs on.
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
                        era: crate::contract::Era::Core2025,
                        input_responses: None,
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
    // Keys as clients write them: a tenant path and a counter.
    let hashed = create_ok(
        &*store,
        &command(ALICE, "i8", Some("tenant-a/alice#3"), "2026-06", 17),
        Decision::AcceptTask,
    )?;
    let hashed_replay = create_ok(
        &*store,
        &command(ALICE, "i9", Some("tenant-a/alice#3"), "2026-06", 18),
        Decision::ReplayTask,
    )?;
    same(
        "a key with '#' and '/' replays its task",
        hashed_replay.record,
        hashed.record,
    )?;
    for (id, exists) in [
        ("i1", true),
        ("i2", false),
        ("i3", false),
        ("i4", true),
        ("i5", true),
        ("i6", true),
        ("i7", false),
        ("i8", true),
        ("i9", false),
    ] {
        same(
            &format!("{id} stored"),
            store.read(id).map_err(store_err("read"))?.is_some(),
            exists,
        )?;
    }
    Ok(
        "replay, collision, per-caller keys, keys with '#' and '/', keyless and synchronous calls"
            .into(),
    )
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

// ---------------------------------------------------------------------------------------
// Fidelity and edges: every field a store returns is compared with what the contract
// itself constructs (`CreateCommand::admission_record`, `store::applied_transition`,
// `store::cancelled_record`, imported records), at every edge of the store's bounds.
// ---------------------------------------------------------------------------------------

/// The first field in which `got` differs from `expected`, named with both values.
fn record_diff(expected: &TaskRecord, got: &TaskRecord) -> Option<String> {
    crate::check::record_differences(expected, got)
        .into_iter()
        .next()
        .map(|(field, expected, got)| format!("field {field}: expected {expected}, got {got}"))
}

/// `got` is `expected`, field by field; the failure names the task, the view and the field.
fn same_record(what: &str, expected: &TaskRecord, got: Option<&TaskRecord>) -> Result<(), String> {
    match got {
        None => Err(format!(
            "task {}: {what}: expected the record, got none",
            expected.task_id
        )),
        Some(got) => match record_diff(expected, got) {
            None => Ok(()),
            Some(diff) => Err(format!("task {}: {what}: {diff}", expected.task_id)),
        },
    }
}

/// Every page of `caller`'s list at `now_ms`, followed to the end.
fn list_everything(
    store: &dyn TaskStore,
    caller: &str,
    now_ms: u64,
) -> Result<Vec<TaskRecord>, String> {
    let mut tasks = Vec::new();
    let mut cursor = None;
    for _ in 0..10_000 {
        let page = store
            .list(&ListQuery {
                negotiated: Negotiated::FULL,
                caller: caller.into(),
                cursor: cursor.take(),
                limit: LIST_LIMIT_MAX,
                now_ms,
            })
            .map_err(store_err("list"))?;
        same(
            &format!("list of {caller}: decision"),
            page.decision,
            Decision::ListTenantFiltered,
        )?;
        tasks.extend(page.tasks);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(tasks),
        }
    }
    Err(format!("list of {caller}: the cursors never end"))
}

/// Compares every view of a task with `expected`: `read`, and for its owner at `now_ms`
/// `get`, `result` and `list` (decisions as the pure contract gives them for `expected`).
fn every_view(
    store: &dyn TaskStore,
    expected: &TaskRecord,
    now_ms: u64,
    when: &str,
) -> Result<(), String> {
    let id = expected.task_id.as_str();
    let owner = expected.auth_key.as_str();
    let read = store.read(id).map_err(store_err("read"))?;
    same_record(&format!("{when}: read"), expected, read.as_ref())?;
    let get = store.get(owner, id, now_ms).map_err(store_err("get"))?;
    same(
        &format!("task {id}: {when}: get decision"),
        get.decision,
        contract::guard_get(owner, Some(expected), now_ms),
    )?;
    same_record(&format!("{when}: get"), expected, get.record.as_ref())?;
    let result = store
        .result(owner, id, now_ms)
        .map_err(store_err("result"))?;
    same(
        &format!("task {id}: {when}: result decision"),
        result.decision,
        contract::guard_result(owner, Some(expected), now_ms),
    )?;
    same_record(&format!("{when}: result"), expected, result.record.as_ref())?;
    let listed = list_everything(store, owner, now_ms)?;
    let found = listed.iter().find(|task| task.task_id == id);
    if expected.is_expired(now_ms) {
        if found.is_some() {
            return Err(format!(
                "task {id}: {when}: listed at {now_ms} although it expired at {:?}",
                expected.expires_at_ms
            ));
        }
    } else {
        same_record(&format!("{when}: list"), expected, found)?;
    }
    Ok(())
}

/// Arguments that punish a lossy encoding: nesting, nulls beside absent keys, unicode,
/// escapes, integers beyond 2^53 and at the edges of i64/u64, floats, a long string.
fn hostile_arguments() -> Value {
    let mut deep = json!({ "bottom": [null, 0, "", {}] });
    for level in 0..40 {
        deep = json!({ format!("level{level}"): deep, "null_here": null });
    }
    json!({
        "month": "2026-06",
        "nested": { "a": { "b": [1, { "x": null, "y": [true, false, null] }, [], {}] } },
        "explicit_null": null,
        "unicode": "Grüße, 世界, 🚀 — \"quoted\" \\ back\nline\ttab \u{1b}",
        "ключ 🔑": "значение",
        "u64_max": u64::MAX,
        "i64_min": i64::MIN,
        "beyond_2_53": 9_007_199_254_740_993u64,
        "float": 0.1,
        "huge_float": 1.5e300,
        "tiny_float": 5e-324,
        "negative": -42,
        "empty_string": "",
        "empty_array": [],
        "empty_object": {},
        "long": "x".repeat(10_000),
        "deep": deep,
    })
}

/// The creates of the fidelity checks: every optional field both set and unset.
fn varied_commands(base_ms: u64) -> Vec<CreateCommand> {
    let mut rich = command(ALICE, "f-rich", Some("key ü/1 🔑"), "2026-06", base_ms);
    rich.request.arguments = Some(hostile_arguments());
    rich.ttl_ms = Some(86_400_000);
    rich.poll_interval_ms = Some(1_234);
    rich.correlation_id = "corr-Ω-😀-…".into();
    let mut bare = command(BOB, "f-bare", None, "unused", base_ms + 1);
    bare.request = WrappedRequest {
        method: "tools/call".into(),
        name: "noop_tool-ä".into(),
        arguments: None,
    };
    bare.ttl_ms = None;
    bare.poll_interval_ms = None;
    let mut scalar = command(ALICE, "f-scalar", Some("k2"), "unused", base_ms + 2);
    scalar.request.arguments = Some(json!([1, "two", null, 3.5]));
    scalar.ttl_ms = Some(1);
    scalar.poll_interval_ms = Some(0);
    scalar.correlation_id = String::new();
    let mut empty = command(CAROL, "f-empty", Some("k3"), "unused", base_ms + 2);
    empty.request.arguments = Some(json!({}));
    empty.ttl_ms = Some(u64::from(u32::MAX) * 4);
    empty.poll_interval_ms = Some(u64::from(u32::MAX) + 1);
    // 2026-07-28: answers given at admission (multi round-trip input) are kept; an empty
    // set of answers is none.
    let mut modern = command(BOB, "f-modern", Some("m#1"), "2026-06", base_ms + 2);
    modern.era = crate::contract::Era::Extension2026;
    modern.ttl_ms = Some(1_234);
    modern.poll_interval_ms = Some(250);
    modern.input_responses =
        json!({ "confirm": { "action": "accept", "content": { "ok": true } } })
            .as_object()
            .cloned();
    let mut modern_empty = command(CAROL, "f-modern-empty", None, "2026-06", base_ms + 1);
    modern_empty.era = crate::contract::Era::Extension2026;
    modern_empty.poll_interval_ms = Some(7);
    modern_empty.input_responses = Some(serde_json::Map::new());
    vec![rich, bare, scalar, empty, modern, modern_empty]
}

fn created_records_round_trip(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    let base_ms = 1_700_000_000_000;
    let commands = varied_commands(base_ms);
    let mut expected = Vec::new();
    for cmd in &commands {
        let want = cmd.admission_record(cmd.request.digest());
        let answer = create_ok(&*store, cmd, Decision::AcceptTask)?;
        same_record("create answer", &want, answer.record.as_ref())?;
        expected.push(want);
    }
    let view_ms = base_ms + 2;
    for want in &expected {
        every_view(&*store, want, view_ms, "after create")?;
    }
    for (cmd, want) in commands.iter().zip(&expected) {
        if cmd.idempotency_key.is_none() {
            continue;
        }
        let mut again = cmd.clone();
        again.task_id = format!("{}-again", cmd.task_id);
        again.now_ms = view_ms;
        let replay = store.create(&again).map_err(store_err("replay"))?;
        same(
            &format!("task {}: replay decision", want.task_id),
            replay.decision,
            Decision::ReplayTask,
        )?;
        same_record("replay answer", want, replay.record.as_ref())?;
    }
    let claims = store
        .claim("w-fidelity", view_ms, 30_000, 10)
        .map_err(store_err("claim"))?;
    same("claimed entries", claims.len(), commands.len())?;
    for (cmd, want) in commands.iter().zip(&expected) {
        let claim = claims
            .iter()
            .find(|claim| claim.task_id == want.task_id)
            .ok_or_else(|| format!("task {}: no outbox claim after create", want.task_id))?;
        same_claim(
            claim,
            &OutboxClaim {
                task_id: want.task_id.clone(),
                auth_key: want.auth_key.clone(),
                request: cmd.request.clone(),
                attempt: 1,
                lease_expires_at_ms: view_ms + 30_000,
                task_version: 1,
                task_status: TaskStatus::Working,
            },
        )?;
    }
    Ok(format!(
        "{} creates: answer, read, get, result, list, replay and claim equal the admission record",
        commands.len()
    ))
}

/// `got` is `expected`, field by field.
fn same_claim(got: &OutboxClaim, expected: &OutboxClaim) -> Result<(), String> {
    let id = &expected.task_id;
    same(&format!("claim of {id}: field task_id"), &got.task_id, id)?;
    same(
        &format!("claim of {id}: field auth_key"),
        &got.auth_key,
        &expected.auth_key,
    )?;
    same(
        &format!("claim of {id}: field request.method"),
        &got.request.method,
        &expected.request.method,
    )?;
    same(
        &format!("claim of {id}: field request.name"),
        &got.request.name,
        &expected.request.name,
    )?;
    if got.request.arguments != expected.request.arguments {
        return Err(format!(
            "claim of {id}: field request.arguments: {}",
            value_diff(
                "arguments",
                expected.request.arguments.as_ref(),
                got.request.arguments.as_ref()
            )
        ));
    }
    same(
        &format!("claim of {id}: field attempt"),
        got.attempt,
        expected.attempt,
    )?;
    same(
        &format!("claim of {id}: field lease_expires_at_ms"),
        got.lease_expires_at_ms,
        expected.lease_expires_at_ms,
    )?;
    same(
        &format!("claim of {id}: field task_version"),
        got.task_version,
        expected.task_version,
    )?;
    same(
        &format!("claim of {id}: field task_status"),
        got.task_status,
        expected.task_status,
    )
}

/// Where two JSON values first differ, as a path with both values (long values cut).
fn value_diff(path: &str, expected: Option<&Value>, got: Option<&Value>) -> String {
    let cut = |value: Option<&Value>| {
        let text = value.map_or("(absent)".to_owned(), Value::to_string);
        if text.len() > 120 {
            format!("{}…", &text[..text.floor_char_boundary(120)])
        } else {
            text
        }
    };
    match (expected, got) {
        (Some(Value::Object(want)), Some(Value::Object(have))) => {
            for (key, value) in want {
                if have.get(key) != Some(value) {
                    return value_diff(&format!("{path}.{key}"), Some(value), have.get(key));
                }
            }
            for (key, value) in have {
                if !want.contains_key(key) {
                    return value_diff(&format!("{path}.{key}"), None, Some(value));
                }
            }
            format!("at {path}: objects differ")
        }
        (Some(Value::Array(want)), Some(Value::Array(have))) if want.len() == have.len() => {
            for (at, (want, have)) in want.iter().zip(have).enumerate() {
                if want != have {
                    return value_diff(&format!("{path}[{at}]"), Some(want), Some(have));
                }
            }
            format!("at {path}: arrays differ")
        }
        _ => format!("at {path}: expected {}, got {}", cut(expected), cut(got)),
    }
}

/// A transition command with an explicit outcome and status message.
fn step(
    task_id: &str,
    expected_version: u64,
    next: TaskStatus,
    outcome: Option<TaskOutcome>,
    status_message: Option<&str>,
    now_ms: u64,
) -> TransitionCommand {
    TransitionCommand {
        irreversible_effect: None,
        task_id: task_id.into(),
        caller: ALICE.into(),
        expected_version,
        next,
        outcome,
        status_message: status_message.map(str::to_owned),
        now_ms,
        input_requests: None,
    }
}

/// Applies `command`, expecting `APPLY_TRANSITION` and exactly the record
/// [`store::applied_transition`](crate::store::applied_transition) constructs, in the
/// answer and in every view. Returns that record.
fn apply_exactly(
    store: &dyn TaskStore,
    before: &TaskRecord,
    command: &TransitionCommand,
    view_ms: u64,
) -> Result<TaskRecord, String> {
    let want = applied_transition(before, command);
    let when = format!(
        "after {} -> {} (v{})",
        before.status, command.next, command.expected_version
    );
    let answer = store.transition(command).map_err(store_err("transition"))?;
    same(
        &format!("task {}: {when}: decision", before.task_id),
        answer.decision,
        Decision::ApplyTransition,
    )?;
    same_record(&format!("{when}: answer"), &want, answer.record.as_ref())?;
    every_view(store, &want, view_ms, &when)?;
    Ok(want)
}

fn rich_outcome() -> TaskOutcome {
    TaskOutcome::Result {
        result: json!({
            "content": [{ "type": "text", "text": "fertig ✓ — 完成" }],
            "structuredContent": hostile_arguments(),
            "isError": false,
        }),
    }
}

fn transitions_round_trip(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    let base_ms = 1_700_000_000_000;
    let mut admitted = Vec::new();
    for (at, id) in [
        "t-complete",
        "t-rpc-data",
        "t-rpc-bare",
        "t-rpc-null",
        "t-failed-result",
        "t-worker-cancel",
        "t-completed-bare",
        "t-cancel",
        "t-cancel-input",
        "t-input-message",
        "t-failed-input",
        "t-completed-input",
    ]
    .into_iter()
    .enumerate()
    {
        let mut cmd = command(ALICE, id, Some(id), "2026-06", base_ms + at as u64);
        cmd.ttl_ms = Some(3_600_000);
        cmd.request.arguments = Some(hostile_arguments());
        let answer = create_ok(&*store, &cmd, Decision::AcceptTask)?;
        let record = answer.record.ok_or("ACCEPT_TASK without a record")?;
        admitted.push(record);
    }
    let view_ms = base_ms + 1_000;
    let by_id = |id: &str| {
        admitted
            .iter()
            .find(|record| record.task_id == id)
            .cloned()
            .expect("admitted above")
    };
    let mut steps = 0;
    // working -> input_required (message) -> working (no message: kept; a clock running
    // backwards: updated_at stays) -> completed (rich outcome, new message).
    let mut record = by_id("t-complete");
    for command in [
        step(
            "t-complete",
            1,
            TaskStatus::InputRequired,
            None,
            Some("waiting for the user: ✋ «ok?»"),
            base_ms + 500,
        ),
        step(
            "t-complete",
            2,
            TaskStatus::Working,
            None,
            None,
            base_ms + 400,
        ),
        step(
            "t-complete",
            3,
            TaskStatus::Completed,
            Some(rich_outcome()),
            Some("done"),
            base_ms + 600,
        ),
    ] {
        record = apply_exactly(&*store, &record, &command, view_ms)?;
        steps += 1;
    }
    let terminal = [
        step(
            "t-rpc-data",
            1,
            TaskStatus::Failed,
            Some(TaskOutcome::RpcError {
                code: -32_603,
                message: "internal error: ünïcödé ⚠".into(),
                data: Some(json!({ "trace": ["a", "b"], "n": u64::MAX, "none": null })),
            }),
            Some("the tool crashed"),
            base_ms + 700,
        ),
        step(
            "t-rpc-bare",
            1,
            TaskStatus::Failed,
            Some(TaskOutcome::RpcError {
                code: i64::MIN,
                message: String::new(),
                data: None,
            }),
            None,
            base_ms + 701,
        ),
        // `data: null` is no data: written, answered and read back as none everywhere.
        step(
            "t-rpc-null",
            1,
            TaskStatus::Failed,
            Some(TaskOutcome::RpcError {
                code: -32_000,
                message: "no detail".into(),
                data: Some(Value::Null),
            }),
            None,
            base_ms + 701,
        ),
        step(
            "t-failed-result",
            1,
            TaskStatus::Failed,
            outcome_for(TaskStatus::Failed, "t-failed-result"),
            Some("isError"),
            base_ms + 702,
        ),
        step(
            "t-worker-cancel",
            1,
            TaskStatus::Cancelled,
            None,
            Some("the worker gave up"),
            base_ms + 703,
        ),
        step(
            "t-completed-bare",
            1,
            TaskStatus::Completed,
            Some(TaskOutcome::Result {
                result: Value::Null,
            }),
            None,
            base_ms + 704,
        ),
    ];
    for command in &terminal {
        apply_exactly(&*store, &by_id(&command.task_id), command, view_ms)?;
        steps += 1;
    }
    // Questions: hostile ones asked, then working again with a new message (questions
    // cleared); failed from input_required; completed from input_required (questions kept).
    let questions = |id: &str| {
        let mut ask = step(
            id,
            1,
            TaskStatus::InputRequired,
            None,
            Some("¿columnas? «\"ü\"»"),
            base_ms + 900,
        );
        ask.input_requests = json!({
            "columns": { "method": "elicitation/create", "params": hostile_arguments() },
            "ключ 🔑": { "method": "sampling/createMessage", "params": { "n": u64::MAX } },
        })
        .as_object()
        .cloned();
        ask
    };
    for (id, next, outcome, message) in [
        (
            "t-input-message",
            TaskStatus::Working,
            None,
            Some("answered: going on"),
        ),
        (
            "t-failed-input",
            TaskStatus::Failed,
            Some(TaskOutcome::RpcError {
                code: -32_000,
                message: "gave up waiting".into(),
                data: Some(json!({ "disk": "full", "n": 1_u64 << 60 })),
            }),
            None,
        ),
        (
            "t-completed-input",
            TaskStatus::Completed,
            Some(rich_outcome()),
            Some("finished without an answer"),
        ),
    ] {
        let asked = apply_exactly(&*store, &by_id(id), &questions(id), view_ms)?;
        apply_exactly(
            &*store,
            &asked,
            &step(id, 2, next, outcome, message, base_ms + 901),
            view_ms,
        )?;
        steps += 2;
    }
    // Requestor cancels, from working and from input_required with a message.
    let input = apply_exactly(
        &*store,
        &by_id("t-cancel-input"),
        &step(
            "t-cancel-input",
            1,
            TaskStatus::InputRequired,
            None,
            Some("need a file"),
            base_ms + 800,
        ),
        view_ms,
    )?;
    for (before, now_ms) in [(by_id("t-cancel"), base_ms + 801), (input, base_ms + 802)] {
        let want = cancelled_record(&before, now_ms);
        let answer = store
            .cancel(Negotiated::FULL, ALICE, &before.task_id, now_ms)
            .map_err(store_err("cancel"))?;
        same(
            &format!("task {}: cancel decision", before.task_id),
            answer.decision,
            Decision::ApplyCancel,
        )?;
        same_record("cancel answer", &want, answer.record.as_ref())?;
        every_view(&*store, &want, view_ms, "after cancel")?;
        steps += 1;
    }
    Ok(format!(
        "{steps} applied writes: answer, read, get, result and list equal applied_transition / cancelled_record"
    ))
}

/// Answers to a task's questions (`answer_input`), each compared with the contract's
/// [`input_decision`] through every view: partial then full answers (merged with the
/// answers given at admission), an unknown key ignored, a clock running backwards, a
/// task no longer waiting, a terminal task, another caller's and an expired task.
fn input_round_trip(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    let base_ms = 1_700_000_000_000;
    let view_ms = base_ms + 1_000;
    let map = |value: Value| value.as_object().cloned().expect("an object");
    let mut admitted = Vec::new();
    for (at, id) in ["u-main", "u-done", "u-short"].into_iter().enumerate() {
        let mut cmd = command(ALICE, id, Some(id), "2026-06", base_ms + at as u64);
        cmd.era = crate::contract::Era::Extension2026;
        cmd.ttl_ms = Some(if id == "u-short" { 500 } else { 3_600_000 });
        cmd.input_responses = Some(map(json!({ "given": { "action": "accept" } })));
        let answer = create_ok(&*store, &cmd, Decision::AcceptTask)?;
        admitted.push(answer.record.ok_or("ACCEPT_TASK without a record")?);
    }
    let ask = |record: &TaskRecord, now_ms: u64| {
        let mut ask = step(
            &record.task_id,
            record.version,
            TaskStatus::InputRequired,
            None,
            Some("two questions"),
            now_ms,
        );
        ask.input_requests = Some(map(json!({
            "q0": { "method": "elicitation/create", "params": { "message": "ü?" } },
            "q1": { "method": "elicitation/create", "params": hostile_arguments() },
        })));
        apply_exactly(&*store, record, &ask, view_ms)
    };
    let mut answers = 0;
    let mut answer = |record: &TaskRecord,
                      caller: &str,
                      responses: Value,
                      now_ms: u64,
                      decision: Decision|
     -> Result<TaskRecord, String> {
        let command = InputCommand {
            task_id: record.task_id.clone(),
            caller: caller.into(),
            responses: map(responses),
            now_ms,
        };
        let keys: Vec<&String> = command.responses.keys().collect();
        let when = format!("answer {keys:?} by {caller} at {now_ms}");
        let (want_decision, want) = input_decision(&command, Some(record));
        same(
            &format!("task {}: {when}: the contract decides", record.task_id),
            want_decision,
            decision,
        )?;
        let got = store
            .answer_input(&command)
            .map_err(store_err("answer_input"))?;
        same(
            &format!("task {}: {when}: decision", record.task_id),
            got.decision,
            decision,
        )?;
        answers += 1;
        match want {
            Some(after) => {
                same_record(&format!("{when}: answer"), &after, got.record.as_ref())?;
                every_view(&*store, &after, view_ms, &when)?;
                Ok(after)
            }
            None => {
                let stored = store.read(&record.task_id).map_err(store_err("read"))?;
                same_record(&format!("{when}: unchanged"), record, stored.as_ref())?;
                Ok(record.clone())
            }
        }
    };
    let accept = |text: &str| json!({ "action": "accept", "content": { "text": text } });
    let main = ask(&admitted[0], base_ms + 100)?;
    let main = answer(
        &main,
        ALICE,
        json!({ "zz": accept("?") }),
        base_ms + 110,
        Decision::IgnoreInput,
    )?;
    let main = answer(
        &main,
        ALICE,
        json!({ "q0": accept("erste ✓"), "zz": accept("ignored") }),
        base_ms + 120,
        Decision::ApplyInput,
    )?;
    same(
        "after a partial answer, status",
        main.status,
        TaskStatus::InputRequired,
    )?;
    // The clock runs backwards: lastUpdatedAt stays; the last answer moves to working.
    let main = answer(
        &main,
        ALICE,
        json!({ "q1": accept("zweite") }),
        base_ms + 50,
        Decision::ApplyInput,
    )?;
    same(
        "after every answer, status",
        main.status,
        TaskStatus::Working,
    )?;
    answer(
        &main,
        ALICE,
        json!({ "q0": accept("again") }),
        base_ms + 130,
        Decision::IgnoreInput,
    )?;
    answer(
        &main,
        BOB,
        json!({ "q0": accept("stolen") }),
        base_ms + 140,
        Decision::BlockAuth,
    )?;
    // A terminal task keeps its open questions and takes no answer.
    let done = ask(&admitted[1], base_ms + 100)?;
    let done = apply_exactly(
        &*store,
        &done,
        &step(
            "u-done",
            done.version,
            TaskStatus::Completed,
            outcome_for(TaskStatus::Completed, "u-done"),
            None,
            base_ms + 150,
        ),
        view_ms,
    )?;
    answer(
        &done,
        ALICE,
        json!({ "q0": accept("late") }),
        base_ms + 160,
        Decision::AlreadyTerminal,
    )?;
    // An expired task takes no answer either (it expires at base + 2 + 500).
    let short = ask(&admitted[2], base_ms + 100)?;
    answer(
        &short,
        ALICE,
        json!({ "q0": accept("late") }),
        base_ms + 502,
        Decision::BlockExpired,
    )?;
    Ok(format!(
        "{answers} answers: partial, full, unknown key, backwards clock, not waiting, foreign, terminal, expired; answer, read, get, result and list equal input_decision"
    ))
}

/// Records as a backup holds them: every status, outcomes of each kind, odd versions.
fn imported_records(base_ms: u64) -> Vec<TaskRecord> {
    let admit = |caller: &str, id: &str, key: Option<&str>, at: u64| {
        let mut cmd = command(caller, id, key, "2026-06", at);
        cmd.request.arguments = Some(hostile_arguments());
        cmd.ttl_ms = Some(3_600_000);
        cmd.admission_record(cmd.request.digest())
    };
    let mut input = admit(ALICE, "r-input", Some("rk1"), base_ms);
    input = input.with_status(TaskStatus::InputRequired, base_ms + 5);
    input.status_message = Some("waiting ✋".into());
    let mut completed = admit(ALICE, "r-completed", None, base_ms + 1);
    completed = completed.with_status(TaskStatus::Completed, base_ms + 9);
    completed.version = 7;
    completed.outcome = Some(rich_outcome());
    completed.status_message = Some("done".into());
    let cancelled = cancelled_record(
        &admit(BOB, "r-cancelled", Some("rk2"), base_ms + 2),
        base_ms + 3,
    );
    let mut failed = admit(BOB, "r-failed", None, base_ms + 2);
    failed = failed.with_status(TaskStatus::Failed, base_ms + 4);
    failed.outcome = Some(TaskOutcome::RpcError {
        code: 42,
        message: "nope".into(),
        data: Some(json!([null, { "k": "ü" }])),
    });
    let mut plain = admit(CAROL, "r-plain", Some("rk3"), base_ms + 3);
    plain.ttl_ms = None;
    plain.expires_at_ms = None;
    plain.poll_interval_ms = None;
    let mut expired = admit(CAROL, "r-expired", None, base_ms);
    expired.ttl_ms = Some(10);
    expired.expires_at_ms = Some(base_ms + 10);
    vec![input, completed, cancelled, failed, plain, expired]
}

fn imports_round_trip(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    let base_ms = 1_700_000_000_000;
    let records = imported_records(base_ms);
    store.import(&records).map_err(store_err("import"))?;
    store.import(&[]).map_err(store_err("import of nothing"))?;
    let view_ms = base_ms + 100;
    for record in &records {
        every_view(&*store, record, view_ms, "after import")?;
    }
    same(
        "an import writes no outbox entries",
        store
            .claim("w", view_ms, 100, 100)
            .map_err(store_err("claim"))?
            .len(),
        0,
    )?;
    // An imported record holds its idempotency key.
    let mut replay = command(ALICE, "r-input-again", Some("rk1"), "2026-06", view_ms);
    replay.request.arguments = Some(hostile_arguments());
    replay.ttl_ms = Some(3_600_000);
    let answer = create_ok(&*store, &replay, Decision::ReplayTask)?;
    same_record(
        "replay of an imported key",
        &records[0],
        answer.record.as_ref(),
    )?;
    Ok(format!(
        "{} records of every status: read, get, result and list equal what was imported",
        records.len()
    ))
}

/// One list call, failing on a store error or a decision other than `LIST_TENANT_FILTERED`.
fn list_once(
    store: &dyn TaskStore,
    caller: &str,
    cursor: Option<String>,
    limit: usize,
    now_ms: u64,
) -> Result<crate::store::ListPage, String> {
    let page = store
        .list(&ListQuery {
            negotiated: Negotiated::FULL,
            caller: caller.into(),
            cursor,
            limit,
            now_ms,
        })
        .map_err(store_err("list"))?;
    same(
        &format!("list of {caller}, limit {limit}: decision"),
        page.decision,
        Decision::ListTenantFiltered,
    )?;
    Ok(page)
}

/// Walks `caller`'s list with `limit` and compares every page with `pages` (task ids),
/// every listed record with the stored one, and the cursors: one after every page but
/// the last, none after the last.
fn pages_are(
    store: &dyn TaskStore,
    caller: &str,
    limit: usize,
    now_ms: u64,
    pages: &[&[&str]],
) -> Result<(), String> {
    let mut cursor = None;
    for (number, want) in pages.iter().enumerate() {
        let what = format!("list of {caller} at {now_ms}, limit {limit}, page {number}");
        let page = list_once(store, caller, cursor.take(), limit, now_ms)?;
        let got: Vec<&str> = page
            .tasks
            .iter()
            .map(|task| task.task_id.as_str())
            .collect();
        if got != *want {
            let at = got
                .iter()
                .zip(want.iter())
                .take_while(|(g, w)| g == w)
                .count();
            return Err(format!(
                "{what}: expected {} tasks, got {}; first difference at position {at}: \
                 expected {:?}, got {:?}",
                want.len(),
                got.len(),
                want.get(at),
                got.get(at)
            ));
        }
        for task in &page.tasks {
            let stored = store.read(&task.task_id).map_err(store_err("read"))?;
            match stored {
                Some(stored) => {
                    same_record(&format!("{what}: listed record"), &stored, Some(task))?
                }
                None => {
                    return Err(format!(
                        "{what}: lists {}, which is not stored",
                        task.task_id
                    ));
                }
            }
        }
        let last = number + 1 == pages.len();
        match (&page.next_cursor, last) {
            (Some(_), true) => {
                return Err(format!(
                    "{what}: the last page ({} tasks) has a next cursor",
                    page.tasks.len()
                ));
            }
            (None, false) => {
                return Err(format!(
                    "{what}: no next cursor, but {} more page(s) follow",
                    pages.len() - number - 1
                ));
            }
            _ => cursor = page.next_cursor,
        }
    }
    Ok(())
}

fn list_page_edges(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    let admit = |caller: &str, id: &str, at: u64, ttl_ms: Option<u64>| {
        let mut cmd = command(caller, id, None, "2026-06", at);
        cmd.ttl_ms = ttl_ms;
        cmd.admission_record(cmd.request.digest())
    };
    // Listed order is (created_at_ms, task_id): a0 a1 a2 ax a3 a4; ax expires at 300.
    let mut records = vec![
        admit(ALICE, "a3", 102, None),
        admit(ALICE, "a1", 100, None),
        admit(ALICE, "ax", 101, Some(199)),
        admit(ALICE, "a0", 100, None),
        admit(ALICE, "a4", 103, None),
        admit(ALICE, "a2", 101, None),
        admit(BOB, "b0", 100, None),
        admit(BOB, "b1", 100, None),
        // Last in order, expires at 300: at 300 a page ending at b1 is the last one.
        admit(BOB, "bx", 101, Some(199)),
    ];
    // One more than a page can ever hold, for the clamp.
    records.extend((0..=LIST_LIMIT_MAX).map(|n| admit(CAROL, &format!("c{n:04}"), 50, None)));
    store.import(&records).map_err(store_err("import"))?;
    let alive: &[&str] = &["a0", "a1", "a2", "a3", "a4"];
    let with_ax: &[&str] = &["a0", "a1", "a2", "ax", "a3", "a4"];
    // At 300 ax has expired (now == expires_at); at 299 it has not.
    pages_are(
        &*store,
        ALICE,
        0,
        300,
        &[&["a0"], &["a1"], &["a2"], &["a3"], &["a4"]],
    )?;
    pages_are(
        &*store,
        ALICE,
        1,
        300,
        &[&["a0"], &["a1"], &["a2"], &["a3"], &["a4"]],
    )?;
    pages_are(
        &*store,
        ALICE,
        2,
        300,
        &[&["a0", "a1"], &["a2", "a3"], &["a4"]],
    )?;
    pages_are(
        &*store,
        ALICE,
        4,
        300,
        &[&["a0", "a1", "a2", "a3"], &["a4"]],
    )?;
    pages_are(&*store, ALICE, 5, 300, &[alive])?;
    pages_are(&*store, ALICE, 6, 300, &[alive])?;
    pages_are(&*store, ALICE, 6, 299, &[with_ax])?;
    pages_are(
        &*store,
        ALICE,
        3,
        299,
        &[&["a0", "a1", "a2"], &["ax", "a3", "a4"]],
    )?;
    pages_are(
        &*store,
        ALICE,
        2,
        299,
        &[&["a0", "a1"], &["a2", "ax"], &["a3", "a4"]],
    )?;
    pages_are(&*store, BOB, 2, 300, &[&["b0", "b1"]])?;
    pages_are(&*store, BOB, 1, 300, &[&["b0"], &["b1"]])?;
    pages_are(&*store, BOB, 2, 299, &[&["b0", "b1"], &["bx"]])?;
    pages_are(&*store, BOB, 3, 299, &[&["b0", "b1", "bx"]])?;
    pages_are(&*store, "tenant-d/dave", 10, 300, &[&[]])?;
    pages_are(&*store, "tenant-d/dave", 0, 300, &[&[]])?;
    // The clamp: LIST_LIMIT_MAX at most, whatever is asked; the one left over follows.
    let carol: Vec<String> = (0..=LIST_LIMIT_MAX).map(|n| format!("c{n:04}")).collect();
    let carol: Vec<&str> = carol.iter().map(String::as_str).collect();
    for limit in [LIST_LIMIT_MAX, LIST_LIMIT_MAX + 1, usize::MAX] {
        pages_are(
            &*store,
            CAROL,
            limit,
            300,
            &[&carol[..LIST_LIMIT_MAX], &carol[LIST_LIMIT_MAX..]],
        )?;
    }
    pages_are(
        &*store,
        CAROL,
        LIST_LIMIT_MAX - 1,
        300,
        &[&carol[..LIST_LIMIT_MAX - 1], &carol[LIST_LIMIT_MAX - 1..]],
    )?;
    Ok("limits 0, 1, 2, 4, N, N+1, MAX-1, MAX, MAX+1, usize::MAX; empty list; expiry at now == expires_at, mid-list and at a page's tail".into())
}

fn claims_carry_what_was_stored(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    let base_ms = 1_700_000_000_000;
    let mut rich = command(ALICE, "q-rich", Some("k"), "2026-06", base_ms);
    rich.request.arguments = Some(hostile_arguments());
    let mut other = command(BOB, "q-other", None, "2026-07", base_ms + 1);
    other.request.name = "другой-tool".into();
    other.request.arguments = None;
    let mut moved = command(ALICE, "q-moved", None, "2026-08", base_ms + 2);
    moved.request.arguments = Some(json!({ "list": [null, { "n": i64::MIN }], "s": "ü" }));
    // `arguments: null` is a request of its own (its digest differs from absent arguments):
    // a claim must carry it as null, not drop it.
    let mut null = command(CAROL, "q-null", None, "2026-09", base_ms + 3);
    null.request.arguments = Some(serde_json::Value::Null);
    let commands = [rich, other, moved, null];
    for cmd in &commands {
        create_ok(&*store, cmd, Decision::AcceptTask)?;
    }
    // q-moved changes before its first claim: a claim carries the task as it is now.
    let moved_record = store
        .read("q-moved")
        .map_err(store_err("read"))?
        .ok_or("task vanished")?;
    let moved_record = apply_exactly(
        &*store,
        &moved_record,
        &step(
            "q-moved",
            1,
            TaskStatus::InputRequired,
            None,
            None,
            base_ms + 3,
        ),
        base_ms + 3,
    )?;
    let mut stored: Vec<TaskRecord> = Vec::new();
    for cmd in &commands {
        stored.push(
            store
                .read(&cmd.task_id)
                .map_err(store_err("read"))?
                .ok_or("task vanished")?,
        );
    }
    let expect =
        |at: usize, attempt: u32, now_ms: u64, lease_ms: u64, record: &TaskRecord| OutboxClaim {
            task_id: record.task_id.clone(),
            auth_key: commands[at].caller.clone(),
            request: commands[at].request.clone(),
            attempt,
            lease_expires_at_ms: now_ms + lease_ms,
            task_version: record.version,
            task_status: record.status,
        };
    let claim_all = |now_ms: u64, lease_ms: u64| {
        store
            .claim("w-data", now_ms, lease_ms, 10)
            .map_err(store_err("claim"))
    };
    let check_round = |claims: &[OutboxClaim], want: &[OutboxClaim]| -> Result<(), String> {
        let mut ids: Vec<_> = claims.iter().map(|c| c.task_id.as_str()).collect();
        ids.sort_unstable();
        let mut want_ids: Vec<_> = want.iter().map(|c| c.task_id.as_str()).collect();
        want_ids.sort_unstable();
        same("claimed task ids", ids, want_ids)?;
        for want in want {
            let got = claims
                .iter()
                .find(|claim| claim.task_id == want.task_id)
                .expect("ids compared above");
            same_claim(got, want)?;
        }
        Ok(())
    };
    // Attempt 1.
    let now_ms = base_ms + 10;
    let first = claim_all(now_ms, 50)?;
    check_round(
        &first,
        &(0..commands.len())
            .map(|at| expect(at, 1, now_ms, 50, &stored[at]))
            .collect::<Vec<_>>(),
    )?;
    same(
        "a leased entry is not claimed one millisecond before its lease ends",
        claim_all(now_ms + 49, 50)?.len(),
        0,
    )?;
    // Attempt 2, at exactly the lease's end; q-rich completed meanwhile.
    let rich_done = apply_exactly(
        &*store,
        &stored[0],
        &step(
            "q-rich",
            1,
            TaskStatus::Completed,
            Some(rich_outcome()),
            None,
            now_ms + 20,
        ),
        now_ms + 20,
    )?;
    stored[0] = rich_done;
    let now_ms = now_ms + 50;
    let second = claim_all(now_ms, 1_000)?;
    check_round(
        &second,
        &(0..commands.len())
            .map(|at| expect(at, 2, now_ms, 1_000, &stored[at]))
            .collect::<Vec<_>>(),
    )?;
    // Attempt 3 after release_expired_leases at exactly the lease's end; q-moved back to
    // working; q-other acked by its current attempt, so it is not redelivered (q-rich,
    // q-moved and q-null are).
    same(
        "ack q-other, attempt 2",
        store
            .ack("q-other", 2, now_ms + 1)
            .map_err(store_err("ack"))?,
        true,
    )?;
    stored[2] = apply_exactly(
        &*store,
        &moved_record,
        &step(
            "q-moved",
            2,
            TaskStatus::Working,
            None,
            Some("resumed"),
            now_ms + 2,
        ),
        now_ms + 2,
    )?;
    same(
        "leases released at exactly their end",
        store
            .release_expired_leases(now_ms + 1_000)
            .map_err(store_err("release"))?,
        3,
    )?;
    let now_ms = now_ms + 1_000;
    let third = claim_all(now_ms, 7)?;
    check_round(
        &third,
        &[0, 2, 3]
            .into_iter()
            .map(|at| expect(at, 3, now_ms, 7, &stored[at]))
            .collect::<Vec<_>>(),
    )?;
    same(
        "an old attempt cannot ack",
        store
            .ack("q-rich", 2, now_ms + 1)
            .map_err(store_err("ack"))?,
        false,
    )?;
    Ok("every claim field over attempts 1, 2, 3, with transitions between claims".into())
}

fn claim_and_sweep_bounds(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    let count = CLAIM_BATCH_MAX + 1;
    let ids: Vec<String> = (0..count).map(|n| format!("cb{n:03}")).collect();
    for (n, id) in ids.iter().enumerate() {
        create_ok(
            &*store,
            &command(ALICE, id, None, "2026-06", 1_000 + n as u64),
            Decision::AcceptTask,
        )?;
    }
    let claimed_ids = |claims: &[OutboxClaim]| {
        let mut ids: Vec<String> = claims.iter().map(|c| c.task_id.clone()).collect();
        ids.sort_unstable();
        ids
    };
    same(
        "claim with max 0",
        claimed_ids(
            &store
                .claim("w", 2_000, 100, 0)
                .map_err(store_err("claim"))?,
        ),
        Vec::<String>::new(),
    )?;
    let one = store
        .claim("w", 2_000, 100, 1)
        .map_err(store_err("claim"))?;
    same(
        "claim with max 1: the oldest entry, first attempt (max 0 consumed nothing)",
        one.iter()
            .map(|c| (c.task_id.as_str(), c.attempt))
            .collect::<Vec<_>>(),
        vec![("cb000", 1)],
    )?;
    let batch = store
        .claim("w", 2_000, 100, CLAIM_BATCH_MAX + 10)
        .map_err(store_err("claim"))?;
    same(
        &format!(
            "claim with max {} (CLAIM_BATCH_MAX + 10)",
            CLAIM_BATCH_MAX + 10
        ),
        claimed_ids(&batch),
        ids[1..].to_vec(),
    )?;
    same(
        "every entry leased: claim with max usize::MAX",
        store
            .claim("w", 2_099, 100, usize::MAX)
            .map_err(store_err("claim"))?
            .len(),
        0,
    )?;
    same(
        "release one millisecond before the leases end",
        store
            .release_expired_leases(2_099)
            .map_err(store_err("release"))?,
        0,
    )?;
    let again = store
        .claim("w", 2_100, 100, usize::MAX)
        .map_err(store_err("claim"))?;
    same(
        "redelivery at the lease's end with max usize::MAX: capped at CLAIM_BATCH_MAX",
        again.len(),
        CLAIM_BATCH_MAX,
    )?;
    if let Some(claim) = again.iter().find(|claim| claim.attempt != 2) {
        return Err(format!(
            "claim of {}: field attempt: expected 2, got {}",
            claim.task_id, claim.attempt
        ));
    }

    // Sweeping: bounds, order and the expiry edge.
    let sweep = fresh(factory)?;
    for (id, at, ttl_ms) in [
        ("s2", 0, Some(600)),
        ("s0", 0, Some(500)),
        ("s1", 10, Some(490)),
        ("s3", 0, None),
        ("s4", 0, Some(700)),
    ] {
        let mut cmd = command(ALICE, id, None, "2026-06", at);
        cmd.ttl_ms = ttl_ms;
        create_ok(&*sweep, &cmd, Decision::AcceptTask)?;
    }
    let expiry = |id: &str| match id {
        "s0" | "s1" => Some(500),
        "s2" => Some(600),
        "s4" => Some(700),
        _ => None,
    };
    let present = |sweep: &dyn TaskStore| -> Result<BTreeSet<&'static str>, String> {
        let mut left = BTreeSet::new();
        for id in ["s0", "s1", "s2", "s3", "s4"] {
            if sweep.read(id).map_err(store_err("read"))?.is_some() {
                left.insert(id);
            }
        }
        Ok(left)
    };
    // (now, max, how many it must sweep); which of two equally due tasks goes first is
    // the store's choice.
    let steps: [(u64, usize, usize); 6] = [
        (499, 10, 0),
        (500, 0, 0),
        (500, 1, 1),
        (600, 1, 1),
        (600, usize::MAX, 1),
        (u64::from(u32::MAX), usize::MAX, 1),
    ];
    let mut before = present(&*sweep)?;
    for (now_ms, max, swept) in steps {
        let what = format!("sweep_expired({now_ms}, {max})");
        same(
            &format!("{what}: swept"),
            sweep
                .sweep_expired(now_ms, max)
                .map_err(store_err("sweep"))?,
            swept,
        )?;
        let after = present(&*sweep)?;
        let removed: Vec<_> = before.difference(&after).copied().collect();
        same(&format!("{what}: tasks removed"), removed.len(), swept)?;
        if let Some(live) = removed
            .iter()
            .find(|id| expiry(id).is_none_or(|at| at > now_ms))
        {
            return Err(format!(
                "{what}: removed task {live}, which expires at {:?}",
                expiry(live)
            ));
        }
        before = after;
    }
    same(
        "after every sweep, tasks left",
        before.into_iter().collect::<Vec<_>>(),
        vec!["s3"],
    )?;
    // A bounded sweep with more due than it may take: exactly its bound, then the rest.
    let crowded = fresh(factory)?;
    for id in ["d0", "d1", "d2"] {
        let mut cmd = command(ALICE, id, None, "2026-06", 0);
        cmd.ttl_ms = Some(100);
        create_ok(&*crowded, &cmd, Decision::AcceptTask)?;
    }
    for (max, swept) in [(2, 2), (2, 1), (2, 0)] {
        same(
            &format!("sweep_expired(200, {max}) with 3 due at first"),
            crowded
                .sweep_expired(200, max)
                .map_err(store_err("sweep"))?,
            swept,
        )?;
    }
    same(
        "only the unexpired task's outbox entry is left",
        claimed_ids(
            &sweep
                .claim("w", 10_000, 10, 10)
                .map_err(store_err("claim"))?,
        ),
        vec!["s3".to_owned()],
    )?;
    Ok(format!(
        "claim max 0, 1, {}, usize::MAX over {count} entries; leases at their end; sweep max 0, 1, 2 (3 due), usize::MAX in expiry order",
        CLAIM_BATCH_MAX + 10
    ))
}

fn idempotency_key_lifetime(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    let keyed = |caller: &str, id: &str, key: &str, month: &str, now_ms: u64| {
        let mut cmd = command(caller, id, Some(key), month, now_ms);
        cmd.ttl_ms = Some(1_000);
        cmd
    };
    let replays = |cmd: &CreateCommand, holder: &str| -> Result<(), String> {
        let answer = store.create(cmd).map_err(store_err("create"))?;
        let what = format!(
            "{} with key {:?} at {} (task {} holds it)",
            cmd.caller,
            cmd.idempotency_key.as_deref().unwrap_or_default(),
            cmd.now_ms,
            holder
        );
        same(
            &format!("{what}: decision"),
            answer.decision,
            Decision::ReplayTask,
        )?;
        let stored = store.read(holder).map_err(store_err("read"))?;
        same_record(
            &format!("{what}: replayed record"),
            stored.as_ref().ok_or(format!("{what}: holder vanished"))?,
            answer.record.as_ref(),
        )?;
        same(
            &format!("{what}: the replay stored nothing"),
            store.read(&cmd.task_id).map_err(store_err("read"))?,
            None,
        )
    };
    // k1: bound while the task lives, terminal or not.
    create_ok(
        &*store,
        &keyed(ALICE, "k1-a", "k1", "m", 0),
        Decision::AcceptTask,
    )?;
    replays(&keyed(ALICE, "k1-r1", "k1", "m", 10), "k1-a")?;
    create_ok(
        &*store,
        &keyed(ALICE, "k1-x", "k1", "other", 11),
        Decision::BlockIdempotencyCollision,
    )?;
    store
        .transition(&transition("k1-a", ALICE, 1, TaskStatus::Completed, 20))
        .map_err(store_err("transition"))?;
    replays(&keyed(ALICE, "k1-r2", "k1", "m", 30), "k1-a")?;
    create_ok(
        &*store,
        &keyed(ALICE, "k1-x2", "k1", "other", 31),
        Decision::BlockIdempotencyCollision,
    )?;
    // Per caller: Bob's k1 is his own, with the same request or another.
    create_ok(
        &*store,
        &keyed(BOB, "k1-b", "k1", "m", 40),
        Decision::AcceptTask,
    )?;
    create_ok(
        &*store,
        &keyed(CAROL, "k1-c", "k1", "other", 41),
        Decision::AcceptTask,
    )?;
    replays(&keyed(BOB, "k1-b-r", "k1", "m", 50), "k1-b")?;
    replays(&keyed(ALICE, "k1-r3", "k1", "m", 51), "k1-a")?;
    replays(&keyed(CAROL, "k1-c-r", "k1", "other", 52), "k1-c")?;
    // k2: cancelled by the requestor, still bound.
    create_ok(
        &*store,
        &keyed(ALICE, "k2-a", "k2", "m", 100),
        Decision::AcceptTask,
    )?;
    store
        .cancel(Negotiated::FULL, ALICE, "k2-a", 110)
        .map_err(store_err("cancel"))?;
    replays(&keyed(ALICE, "k2-r", "k2", "m", 120), "k2-a")?;
    // The last millisecond of k1-a's life: still bound.
    replays(&keyed(ALICE, "k1-r4", "k1", "m", 999), "k1-a")?;
    // At expiry (now == expires_at) the key is released: a new task, and the expired
    // record, still stored until swept, no longer claims the key.
    let old = store
        .read("k1-a")
        .map_err(store_err("read"))?
        .ok_or("k1-a vanished before its sweep")?;
    let renewed = keyed(ALICE, "k1-new", "k1", "other", 1_000);
    let answer = create_ok(&*store, &renewed, Decision::AcceptTask)?;
    same_record(
        "the create after the key's task expired",
        &renewed.admission_record(renewed.request.digest()),
        answer.record.as_ref(),
    )?;
    let mut released = old.clone();
    released.idempotency_key = None;
    same_record(
        "the expired holder after its key was taken",
        &released,
        store.read("k1-a").map_err(store_err("read"))?.as_ref(),
    )?;
    replays(&keyed(ALICE, "k1-r5", "k1", "other", 1_001), "k1-new")?;
    // Bob's k1 (expires at 1040) is untouched by Alice's release.
    replays(&keyed(BOB, "k1-b-r2", "k1", "m", 1_001), "k1-b")?;
    // k2-a expires at 1100 and is swept: its key is free, the new task owns it.
    same(
        "sweep at 1100",
        store
            .sweep_expired(1_100, usize::MAX)
            .map_err(store_err("sweep"))?,
        4,
    )?;
    same(
        "k2-a swept",
        store.read("k2-a").map_err(store_err("read"))?,
        None,
    )?;
    let after_sweep = keyed(ALICE, "k2-new", "k2", "another", 1_200);
    let answer = create_ok(&*store, &after_sweep, Decision::AcceptTask)?;
    same_record(
        "the create after the key's task was swept",
        &after_sweep.admission_record(after_sweep.request.digest()),
        answer.record.as_ref(),
    )?;
    replays(&keyed(ALICE, "k2-r2", "k2", "another", 1_201), "k2-new")?;
    // Bob's k1 was swept too: his key is free again, for a different request.
    create_ok(
        &*store,
        &keyed(BOB, "k1-b2", "k1", "changed", 1_202),
        Decision::AcceptTask,
    )?;
    Ok(
        "keys bound through terminal states, per caller, released at expiry and by the sweep"
            .into(),
    )
}

fn task_id_collisions(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    let original = command(ALICE, "dup", None, "2026-06", 10);
    let original_record = create_ok(&*store, &original, Decision::AcceptTask)?
        .record
        .ok_or("ACCEPT_TASK without a record")?;
    let mut expiring = command(ALICE, "holder", Some("ke"), "2026-06", 0);
    expiring.ttl_ms = Some(100);
    let holder = create_ok(&*store, &expiring, Decision::AcceptTask)?
        .record
        .ok_or("ACCEPT_TASK without a record")?;
    let mut colliding = Vec::new();
    let mut same_caller = command(ALICE, "dup", None, "2026-07", 20);
    same_caller.request.name = "other-tool".into();
    colliding.push(("Alice, no key", same_caller));
    colliding.push(("Bob, no key", command(BOB, "dup", None, "2026-06", 21)));
    colliding.push((
        "Bob, new key",
        command(BOB, "dup", Some("kx"), "2026-06", 22),
    ));
    // An expired holder's key would be released by an admission: not by a refused one.
    colliding.push((
        "Alice, expired holder's key",
        command(ALICE, "dup", Some("ke"), "2026-07", 200),
    ));
    for (who, cmd) in &colliding {
        match store.create(cmd) {
            Err(StoreError::Duplicate { task_id }) => same(
                &format!("create of an existing id ({who}): Duplicate names"),
                task_id.as_str(),
                "dup",
            )?,
            other => {
                return Err(format!(
                    "create of existing task id dup ({who}): expected Err(Duplicate), got {other:?}"
                ));
            }
        }
        same_record(
            &format!("after a colliding create ({who})"),
            &original_record,
            store.read("dup").map_err(store_err("read"))?.as_ref(),
        )?;
    }
    same_record(
        "the expired holder after a refused create with its key",
        &holder,
        store.read("holder").map_err(store_err("read"))?.as_ref(),
    )?;
    // The refused creates bound no key: Bob's kx is free for any request.
    create_ok(
        &*store,
        &command(BOB, "kx-task", Some("kx"), "2026-12", 30),
        Decision::AcceptTask,
    )?;
    // The original's outbox entry is intact, with its own request.
    let claims = store.claim("w", 300, 100, 10).map_err(store_err("claim"))?;
    let claim = claims
        .iter()
        .find(|claim| claim.task_id == "dup")
        .ok_or("task dup: its outbox entry is gone after colliding creates")?;
    same_claim(
        claim,
        &OutboxClaim {
            task_id: "dup".into(),
            auth_key: ALICE.into(),
            request: original.request.clone(),
            attempt: 1,
            lease_expires_at_ms: 400,
            task_version: 1,
            task_status: TaskStatus::Working,
        },
    )?;
    same(
        "one outbox entry per task",
        claims.iter().filter(|claim| claim.task_id == "dup").count(),
        1,
    )?;
    // Import: a colliding id anywhere in the batch refuses all of it.
    let fresh_one = command(CAROL, "imp-1", None, "2026-06", 40).admission_record(
        crate::contract::request_digest("tools/call", "export", None),
    );
    let fresh_two = command(CAROL, "imp-2", Some("ki"), "2026-06", 41).admission_record(
        crate::contract::request_digest("tools/call", "export", None),
    );
    let mut impostor = original_record.clone();
    impostor.auth_key = CAROL.into();
    impostor.status_message = Some("overwritten".into());
    let batches: [(&str, Vec<TaskRecord>); 3] = [
        (
            "existing id last",
            vec![fresh_one.clone(), fresh_two.clone(), impostor.clone()],
        ),
        (
            "existing id first",
            vec![impostor.clone(), fresh_one.clone(), fresh_two.clone()],
        ),
        (
            "the same id twice",
            vec![fresh_one.clone(), fresh_two.clone(), fresh_one.clone()],
        ),
    ];
    for (what, batch) in &batches {
        if store.import(batch).is_ok() {
            return Err(format!("import ({what}): accepted a colliding task id"));
        }
        for id in ["imp-1", "imp-2"] {
            if let Some(written) = store.read(id).map_err(store_err("read"))? {
                return Err(format!(
                    "import ({what}) refused, yet task {id} was written: {written:?}"
                ));
            }
        }
        same_record(
            &format!("after a refused import ({what})"),
            &original_record,
            store.read("dup").map_err(store_err("read"))?.as_ref(),
        )?;
    }
    // Nothing of the refused batches lingers: the same records import cleanly, and the
    // key they carry was not left bound.
    store
        .import(&[fresh_one.clone(), fresh_two.clone()])
        .map_err(store_err("import after refusals"))?;
    same_record(
        "imported after refusals",
        &fresh_two,
        store.read("imp-2").map_err(store_err("read"))?.as_ref(),
    )?;
    Ok("creates (any caller, with or without a key) and imports of existing ids refused; nothing changed".into())
}

/// A declaration of the point of no return, as the runtime writes it.
fn declare(task_id: &str, expected_version: u64, effect: &str, now_ms: u64) -> TransitionCommand {
    TransitionCommand {
        irreversible_effect: Some(effect.into()),
        status_message: Some(crate::store::point_of_no_return_message(effect)),
        ..transition(
            task_id,
            ALICE,
            expected_version,
            TaskStatus::Working,
            now_ms,
        )
    }
}

/// The point of no return: declared once, on a working task, at its version, and a cancel
/// after it acknowledged (2026-07-28, the task then completes at the next version) or
/// applied with a message naming the effect (2025-11-25); a cancel before it wins.
fn point_of_no_return(factory: &dyn StoreFactory) -> Result<String, String> {
    use crate::contract::Era;
    let store = fresh(factory)?;
    let effect = "POST https://hooks.example/notify";
    for (task_id, era) in [("p-core", Era::Core2025), ("p-ext", Era::Extension2026)] {
        create_ok(
            &*store,
            &CreateCommand {
                era,
                ..command(ALICE, task_id, None, "2026-06", 10)
            },
            Decision::AcceptTask,
        )?;
        let write =
            |command: &TransitionCommand| store.transition(command).map_err(store_err("declare"));
        same(
            "stale declaration",
            write(&declare(task_id, 2, effect, 11))?.decision,
            Decision::BlockStaleVersion,
        )?;
        let declared = write(&declare(task_id, 1, effect, 12))?;
        same("declaration", declared.decision, Decision::ApplyTransition)?;
        let record = declared
            .record
            .ok_or("APPLY_TRANSITION without the record after it")?;
        same(
            "after the declaration",
            (
                record.status,
                record.version,
                record.irreversible_effect.as_deref(),
                record.updated_at_ms,
            ),
            (TaskStatus::Working, 2, Some(effect), 12),
        )?;
        same(
            "its status message",
            record.status_message.clone(),
            Some(crate::store::point_of_no_return_message(effect)),
        )?;
        same(
            "the reply is the stored record",
            store.read(task_id).map_err(store_err("read"))?,
            Some(record),
        )?;
        same(
            "a second declaration",
            write(&declare(task_id, 2, effect, 13))?.decision,
            Decision::BlockIllegalTransition,
        )?;
        let cancelled = store
            .cancel(Negotiated::FULL, ALICE, task_id, 14)
            .map_err(store_err("cancel"))?;
        let stored = store
            .read(task_id)
            .map_err(store_err("read"))?
            .ok_or("the task vanished")?;
        match era {
            Era::Extension2026 => {
                same(
                    "cancel past the point",
                    cancelled.decision,
                    Decision::PastPointOfNoReturn,
                )?;
                same(
                    "still working at version 2",
                    (stored.status, stored.version),
                    (TaskStatus::Working, 2),
                )?;
                let done = store
                    .transition(&transition(task_id, ALICE, 2, TaskStatus::Completed, 15))
                    .map_err(store_err("complete"))?;
                same(
                    "completion after the acknowledged cancel",
                    done.decision,
                    Decision::ApplyTransition,
                )?;
            }
            Era::Core2025 => {
                same(
                    "cancel past the point",
                    cancelled.decision,
                    Decision::ApplyCancel,
                )?;
                same(
                    "the cancelled task says what was started",
                    stored.status_message.as_deref(),
                    Some(format!("cancelled by the requestor past its point of no return: {effect} was started and is not undone").as_str()),
                )?;
                same(
                    "the reply is the stored record",
                    cancelled.record.as_ref(),
                    Some(&stored),
                )?;
            }
        }
    }
    // A cancel before the point wins it: the declaration finds the latch.
    create_ok(
        &*store,
        &command(ALICE, "p-late", None, "2026-06", 20),
        Decision::AcceptTask,
    )?;
    store
        .cancel(Negotiated::FULL, ALICE, "p-late", 21)
        .map_err(store_err("cancel"))?;
    let late = store
        .transition(&declare("p-late", 1, effect, 22))
        .map_err(store_err("declare"))?;
    same(
        "declaration after a cancel",
        late.decision,
        Decision::BlockTerminalRewrite,
    )?;
    // Only a working task declares; another caller's declaration is refused.
    create_ok(
        &*store,
        &command(ALICE, "p-ask", None, "2026-06", 30),
        Decision::AcceptTask,
    )?;
    store
        .transition(&TransitionCommand {
            status_message: Some("which columns?".into()),
            input_requests: Some(
                serde_json::from_value(json!({ "columns": { "method": "elicitation/create" } }))
                    .expect("a map"),
            ),
            ..transition("p-ask", ALICE, 1, TaskStatus::InputRequired, 31)
        })
        .map_err(store_err("ask"))?;
    let asked = store
        .transition(&declare("p-ask", 2, effect, 32))
        .map_err(store_err("declare"))?;
    same(
        "declaration while input_required",
        asked.decision,
        Decision::BlockIllegalTransition,
    )?;
    let foreign = store
        .transition(&TransitionCommand {
            caller: BOB.into(),
            ..declare("p-late", 1, effect, 33)
        })
        .map_err(store_err("declare"))?;
    same(
        "another caller's declaration",
        foreign.decision,
        Decision::BlockAuth,
    )?;
    Ok("declared once at its version; 2026-07-28 cancel acknowledged, 2025-11-25 cancel names the effect".into())
}
