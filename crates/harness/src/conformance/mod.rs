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

mod edges;
mod identity;
mod lifecycle;
mod round_trip;
use edges::*;
use identity::*;
use lifecycle::*;
use round_trip::*;

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
pub const CONTRACT_FIXTURE: &str =
    include_str!("../../../../fixtures/contract/tasks-2025-11-25.json");
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
                    .create(&case_create(case, name, arguments, task, idempotency_key))
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

/// The create a fixture case's `tools/call` asks for, with the task id the store must use.
fn case_create(
    case: &Case,
    name: &str,
    arguments: &Option<serde_json::Value>,
    task: &Option<serde_json::Value>,
    idempotency_key: &Option<String>,
) -> CreateCommand {
    CreateCommand {
        caller: case.caller.clone(),
        negotiated: case.negotiated,
        task_support: case.tools.get(name).copied().unwrap_or_default(),
        task_requested: task.as_ref().is_some_and(|task| task.is_object()),
        idempotency_key: idempotency_key.clone(),
        request: WrappedRequest {
            method: "tools/call".into(),
            name: name.to_owned(),
            arguments: arguments.clone(),
        },
        ttl_ms: task
            .as_ref()
            .and_then(|task| task.get("ttl"))
            .and_then(|ttl| ttl.as_u64()),
        poll_interval_ms: None,
        task_id: format!("{}-new-task", case.id),
        correlation_id: case.id.clone(),
        now_ms: case.now_ms,
        era: crate::contract::Era::Core2025,
        input_responses: None,
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
