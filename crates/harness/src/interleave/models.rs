//! loom models of the in-memory store.
//!
//! `crates/server/src/store/memory.rs` is compiled a second time here, inside this module, whose `sync`
//! is loom's: the file takes its locks and store helpers through `super::`, so the same
//! source runs on `std` in the library and on loom here. (A cargo feature, not
//! `--cfg loom`: that cfg switches loom code on in madsim's dependencies and breaks them.)
//!
//! loom then runs each model under every interleaving of its threads' lock acquisitions,
//! up to a preemption bound: `LOOM_MAX_PREEMPTIONS` (read by loom; 2 when unset, which
//! explores every model here exhaustively in well under a second). Also read by loom:
//! `LOOM_MAX_BRANCHES`, `LOOM_MAX_DURATION`, `LOOM_LOG`, `LOOM_LOCATION`.
//!
//! Models, each asserting the contract's facts after every thread joined:
//! - [`Model::CompleteCancelStale`] — a worker completing at the current version, a client
//!   cancelling (twice: a retry after a lost answer), and a stale worker completing at an
//!   older version, on one task: exactly one terminal write, the stale one never.
//! - [`Model::SameKeyCreates`] — two creates with one idempotency key: exactly one task.
//! - [`Model::CreateVersusList`] — a create of one tenant against another tenant's list:
//!   no leak.

mod sync {
    pub(crate) use loom::sync::{Mutex, MutexGuard};
}

// The loom copy needs only what the models call; loading the file twice is the point.
#[allow(dead_code, clippy::duplicate_mod)]
#[path = "../../../server/src/store/memory.rs"]
mod memory;

// What `memory.rs` takes from `super::` besides `sync`.
use crate::store::{
    Answer, CLAIM_BATCH_MAX, CreateCommand, InputCommand, ListPage, ListQuery, OutboxClaim,
    StoreError, StoreOptions, TaskStore, TransitionCommand, WrappedRequest, applied_transition,
    cancelled_record, check_transition_command, input_decision, list_page, list_preamble,
    page_limit, random_secret, replay,
};

use crate::contract::{Decision, Negotiated, TaskOutcome, TaskStatus, TaskSupport};
use loom::sync::Arc;
use loom::thread;
use memory::MemoryStore;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The preemption bound when `LOOM_MAX_PREEMPTIONS` is unset.
pub const PREEMPTIONS_DEFAULT: usize = 2;

/// A loom model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// A completing worker, a cancelling client (twice) and a stale worker on one task:
    /// exactly one terminal write, the stale one never.
    CompleteCancelStale,
    /// Two creates with one idempotency key and one request: exactly one task.
    SameKeyCreates,
    /// One tenant creates while another lists: the lister never sees the new task.
    CreateVersusList,
}

impl Model {
    /// Every model, in documentation order.
    pub const ALL: [Model; 3] = [
        Model::CompleteCancelStale,
        Model::SameKeyCreates,
        Model::CreateVersusList,
    ];

    /// The model's kebab-case name (`complete-cancel-stale`), as reports show it.
    pub fn name(self) -> &'static str {
        match self {
            Model::CompleteCancelStale => "complete-cancel-stale",
            Model::SameKeyCreates => "same-key-creates",
            Model::CreateVersusList => "create-versus-list",
        }
    }
}

/// What one model's exploration found.
#[derive(Clone, Debug)]
pub struct ModelRun {
    /// The model explored.
    pub model: Model,
    /// Interleavings explored (up to and including a failing one).
    pub iterations: usize,
    /// The first failed assertion, if any.
    pub failure: Option<String>,
}

/// Explores `model` exhaustively up to the preemption bound.
///
/// A failed assertion inside the model is caught and returned, not propagated, so a
/// caller can run every model against every mutant; loom's own diagnostics still print.
pub fn run(model: Model) -> ModelRun {
    let iterations = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = iterations.clone();
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(PREEMPTIONS_DEFAULT);
    }
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        builder.check(move || {
            counter.fetch_add(1, Ordering::Relaxed);
            match model {
                Model::CompleteCancelStale => complete_cancel_stale(),
                Model::SameKeyCreates => same_key_creates(),
                Model::CreateVersusList => create_versus_list(),
            }
        })
    }));
    let failure = outcome.err().map(|panic| {
        panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "the model panicked".into())
    });
    ModelRun {
        model,
        iterations: iterations.load(Ordering::Relaxed),
        failure,
    }
}

fn store() -> MemoryStore {
    MemoryStore::open(&StoreOptions {
        cursor_secret: Some(b"loom".to_vec()),
    })
    .expect("a memory store opens")
}

fn create(caller: &str, key: Option<&str>, task_id: &str) -> CreateCommand {
    CreateCommand {
        caller: caller.into(),
        negotiated: Negotiated::FULL,
        task_support: TaskSupport::Optional,
        task_requested: true,
        idempotency_key: key.map(str::to_owned),
        request: WrappedRequest {
            method: "tools/call".into(),
            name: "export".into(),
            arguments: Some(json!({ "n": 1 })),
        },
        ttl_ms: None,
        poll_interval_ms: None,
        task_id: task_id.into(),
        correlation_id: task_id.into(),
        now_ms: 0,
        era: crate::contract::Era::Core2025,
        input_responses: None,
    }
}

fn write(task_id: &str, expected_version: u64, next: TaskStatus) -> TransitionCommand {
    TransitionCommand {
        irreversible_effect: None,
        task_id: task_id.into(),
        caller: "tenant-a".into(),
        expected_version,
        next,
        outcome: next.is_terminal().then(|| TaskOutcome::Result {
            result: json!({ "content": [], "isError": next == TaskStatus::Failed }),
        }),
        status_message: None,
        now_ms: 1,
        input_requests: None,
    }
}

/// One task at `input_required` (version 2). Three threads: a worker completes at
/// version 2, a client cancels twice, a stale worker fails the task at version 1.
fn complete_cancel_stale() {
    let store = Arc::new(store());
    let admitted = store
        .create(&create("tenant-a", None, "t1"))
        .expect("create");
    assert_eq!(admitted.decision, Decision::AcceptTask);
    let asked = store
        .transition(&write("t1", 1, TaskStatus::InputRequired))
        .expect("ask for input");
    assert_eq!(asked.decision, Decision::ApplyTransition);

    let worker = {
        let store = store.clone();
        thread::spawn(move || {
            store
                .transition(&write("t1", 2, TaskStatus::Completed))
                .expect("complete")
                .decision
        })
    };
    let client = {
        let store = store.clone();
        thread::spawn(move || {
            [0, 1].map(|_| {
                store
                    .cancel(Negotiated::FULL, "tenant-a", "t1", 1)
                    .expect("cancel")
                    .decision
            })
        })
    };
    let stale = {
        let store = store.clone();
        thread::spawn(move || {
            store
                .transition(&write("t1", 1, TaskStatus::Failed))
                .expect("stale write")
                .decision
        })
    };
    let completed = worker.join().expect("worker") == Decision::ApplyTransition;
    let cancels = client.join().expect("client");
    let stale = stale.join().expect("stale worker");
    let cancelled = cancels
        .iter()
        .filter(|decision| **decision == Decision::ApplyCancel)
        .count();
    let record = store.read("t1").expect("read").expect("the task exists");

    assert_ne!(
        stale,
        Decision::ApplyTransition,
        "a stale worker's write at version 1 applied over version 2"
    );
    assert_eq!(
        usize::from(completed) + cancelled,
        1,
        "terminal writes applied: completion {completed}, cancels {cancelled} (cancel answers \
         {cancels:?}); exactly one may win"
    );
    assert_eq!(record.version, 3, "one terminal write moves version 2 to 3");
    let winner = if completed {
        TaskStatus::Completed
    } else {
        TaskStatus::Cancelled
    };
    assert_eq!(record.status, winner, "the stored status is the winner's");
}

/// Two creates with one idempotency key and one request: exactly one task, both answers
/// name it.
fn same_key_creates() {
    let store = Arc::new(store());
    let spawn = |task_id: &'static str| {
        let store = store.clone();
        thread::spawn(move || {
            store
                .create(&create("tenant-a", Some("k"), task_id))
                .expect("create")
        })
    };
    let first = spawn("t1");
    let second = spawn("t2");
    let answers = [first.join().expect("first"), second.join().expect("second")];
    let accepted = answers
        .iter()
        .filter(|answer| answer.decision == Decision::AcceptTask)
        .count();
    assert_eq!(accepted, 1, "creates admitted: {answers:?}");
    let named: Vec<&str> = answers
        .iter()
        .map(|answer| {
            answer
                .record
                .as_ref()
                .expect("both name the task")
                .task_id
                .as_str()
        })
        .collect();
    assert_eq!(named[0], named[1], "both answers name one task");
    let stored = ["t1", "t2"]
        .iter()
        .filter(|id| store.read(id).expect("read").is_some())
        .count();
    assert_eq!(stored, 1, "tasks stored for one key");
}

/// Tenant A creates a task while tenant B (which owns one task) lists: B never sees A's.
fn create_versus_list() {
    let store = Arc::new(store());
    store
        .create(&create("tenant-b", None, "b1"))
        .expect("tenant-b's task");
    let creator = {
        let store = store.clone();
        thread::spawn(move || {
            store
                .create(&create("tenant-a", None, "a1"))
                .expect("create")
                .decision
        })
    };
    let lister = {
        let store = store.clone();
        thread::spawn(move || {
            store
                .list(&ListQuery {
                    negotiated: Negotiated::FULL,
                    caller: "tenant-b".into(),
                    cursor: None,
                    limit: 10,
                    now_ms: 1,
                })
                .expect("list")
        })
    };
    assert_eq!(creator.join().expect("creator"), Decision::AcceptTask);
    let page = lister.join().expect("lister");
    let ids: Vec<&str> = page
        .tasks
        .iter()
        .map(|task| task.task_id.as_str())
        .collect();
    assert_eq!(ids, ["b1"], "tenant-b's page");
}
