//! The runtime (dispatcher, workers, sweeper) on real tokio over a real SQLite store:
//! every task reaches one terminal status, each completed task has exactly one effect,
//! cancelled tasks stay cancelled, expired tasks never run, a tool's completion message is
//! kept.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use crate::support;

use serde_json::json;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tasklatch::contract::{Decision, Negotiated, TaskOutcome, TaskStatus, TaskSupport};
use tasklatch::runtime::{
    BoxFuture, Env, Invocation, MemoryQueue, NoNotify, NoProbe, Runtime, RuntimeConfig, TokioEnv,
    ToolStep, Tools,
};
use tasklatch::store::{
    CreateCommand, SqliteOptions, SqliteStore, StoreOptions, Synchronous, TaskStore, WrappedRequest,
};

/// An export: writes one effect per task into a sink, idempotently.
#[derive(Default)]
pub(super) struct Export {
    /// task id → effect ids written (more than one would be a double effect).
    sink: Mutex<BTreeMap<String, Vec<String>>>,
}

impl Tools for Export {
    fn run(&self, invocation: Invocation) -> BoxFuture<'static, ToolStep> {
        let task_id = invocation.task.task_id.clone();
        let effect_id = {
            let mut sink = self.sink.lock().unwrap();
            let effects = sink.entry(task_id.clone()).or_default();
            if effects.is_empty() {
                effects.push(format!("export-{task_id}"));
            }
            effects[0].clone()
        };
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(3)).await;
            let outcome = TaskOutcome::Result {
                result: json!({ "content": [{ "type": "text", "text": effect_id }], "isError": false }),
            };
            if leaves_a_message(&task_id) {
                return ToolStep::FinishedWithMessage {
                    outcome,
                    message: format!("wrote {effect_id}"),
                };
            }
            ToolStep::Finished(outcome)
        })
    }
}

/// Every twelfth task's tool leaves a status message with its outcome.
fn leaves_a_message(task_id: &str) -> bool {
    task_id
        .strip_prefix("task-")
        .and_then(|n| n.parse::<usize>().ok())
        .is_some_and(|n| n % 12 == 2)
}

pub(super) fn create(store: &dyn TaskStore, n: usize, ttl_ms: Option<u64>, now_ms: u64) -> String {
    let tenants = ["tenant-a/alice", "tenant-b/bob", "tenant-c/carol"];
    let task_id = format!("task-{n:03}");
    let answer = store
        .create(&CreateCommand {
            caller: tenants[n % 3].into(),
            negotiated: Negotiated::FULL,
            task_support: TaskSupport::Optional,
            task_requested: true,
            idempotency_key: Some(format!("k{n}")),
            request: WrappedRequest {
                method: "tools/call".into(),
                name: "export".into(),
                arguments: Some(json!({ "n": n })),
            },
            ttl_ms,
            poll_interval_ms: Some(100),
            task_id: task_id.clone(),
            correlation_id: task_id.clone(),
            now_ms,
            era: tasklatch::contract::Era::Core2025,
            input_responses: None,
        })
        .unwrap();
    assert_eq!(answer.decision, Decision::AcceptTask);
    task_id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_carries_every_task_to_one_terminal_status() {
    let scratch = support::Scratch::new("runtime");
    let mut options = SqliteOptions::new(scratch.join("store.db"));
    options.synchronous = Synchronous::Normal;
    let store: Arc<dyn TaskStore> =
        Arc::new(SqliteStore::open(&options, &StoreOptions::default()).unwrap());
    let env = Arc::new(TokioEnv);
    let now = env.now_ms();
    let (normal, cancelled, expired) = create_normal_cancelled_and_expired(&*store, now);
    let export = Arc::new(Export::default());
    let runtime = Arc::new(Runtime::new(
        store.clone(),
        Arc::new(MemoryQueue::default()),
        export.clone(),
        env.clone(),
        Arc::new(NoProbe),
        Arc::new(NoNotify),
        RuntimeConfig {
            republish_after_ms: 400,
            queue_lease_ms: 400,
            idle_ms: 5,
            sweep_every_ms: 50,
            ..RuntimeConfig::default()
        },
    ));
    runtime.start(3);
    every_normal_task_ends(&*store, &normal).await;
    // Let the sweeper and dispatcher retire what is left, then stop.
    tokio::time::sleep(Duration::from_millis(600)).await;
    runtime.shut_down();

    let sink = export.sink.lock().unwrap();
    check_every_task(&*store, &sink, &normal, &cancelled, &expired);
    let counters = &runtime.counters;
    let applied = counters
        .completions_applied
        .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(applied as usize, normal.len());
    println!(
        "runtime: {} tasks completed, {} cancelled, {} expired and swept; {} published, {} effects run",
        normal.len(),
        cancelled.len(),
        expired.len(),
        counters
            .published
            .load(std::sync::atomic::Ordering::Relaxed),
        counters
            .effects_run
            .load(std::sync::atomic::Ordering::Relaxed),
    );
}

/// 60 tasks, every twelfth created already expired and the one after it cancelled before
/// any dispatch: (normal, cancelled, expired) ids.
fn create_normal_cancelled_and_expired(
    store: &dyn TaskStore,
    now: u64,
) -> (Vec<String>, Vec<String>, Vec<String>) {
    let mut normal = Vec::new();
    let mut cancelled = Vec::new();
    let mut expired = Vec::new();
    for n in 0..60 {
        match n % 12 {
            0 => expired.push(create(store, n, Some(1), now.saturating_sub(10))),
            1 => {
                let id = create(store, n, None, now);
                let owner = store.read(&id).unwrap().unwrap().auth_key;
                assert_eq!(
                    store
                        .cancel(Negotiated::FULL, &owner, &id, now)
                        .unwrap()
                        .decision,
                    Decision::ApplyCancel
                );
                cancelled.push(id);
            }
            _ => normal.push(create(store, n, Some(600_000), now)),
        }
    }
    (normal, cancelled, expired)
}

/// Waits up to 30 s for every one of `normal` to reach a terminal status.
async fn every_normal_task_ends(store: &dyn TaskStore, normal: &[String]) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let done = normal.iter().all(|id| {
            store
                .read(id)
                .unwrap()
                .is_some_and(|task| task.status.is_terminal())
        });
        if done {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "tasks still running after 30 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Each completed once with one effect its result names (and the tool's message when it
/// left one); the cancelled stay cancelled and never ran; the expired never ran and were
/// swept.
fn check_every_task(
    store: &dyn TaskStore,
    sink: &BTreeMap<String, Vec<String>>,
    normal: &[String],
    cancelled: &[String],
    expired: &[String],
) {
    for id in normal {
        let task = store.read(id).unwrap().unwrap();
        assert_eq!(
            (task.status, task.version),
            (TaskStatus::Completed, 2),
            "{id}"
        );
        assert_eq!(sink.get(id).map(Vec::len), Some(1), "{id}: one effect");
        let named = match &task.outcome {
            Some(TaskOutcome::Result { result }) => {
                result["content"][0]["text"].as_str().map(str::to_owned)
            }
            _ => None,
        };
        assert_eq!(
            named.as_deref(),
            Some(sink[id][0].as_str()),
            "{id}: the result names its effect"
        );
        let message = leaves_a_message(id).then(|| format!("wrote {}", sink[id][0]));
        assert_eq!(
            task.status_message, message,
            "{id}: the tool's message is kept"
        );
    }
    for id in cancelled {
        let task = store.read(id).unwrap().unwrap();
        assert_eq!(task.status, TaskStatus::Cancelled, "{id} stays cancelled");
        assert!(
            !sink.contains_key(id),
            "{id}: a task cancelled before dispatch never runs"
        );
    }
    for id in expired {
        assert!(!sink.contains_key(id), "{id}: expired work never runs");
        assert_eq!(store.read(id).unwrap(), None, "{id} swept");
    }
}

/// The dispatcher claims no more outbox entries than the queue has room for: with room
/// for 2 and 5 tasks admitted, it publishes 2 and leaves 3 unleased (claimable at once by
/// anyone, not leased to a queue that cannot take them until `republish_after_ms`); with
/// the queue full it claims nothing.
#[tokio::test(flavor = "current_thread")]
async fn the_dispatcher_claims_only_what_the_queue_takes() {
    let store: Arc<dyn TaskStore> = Arc::new(
        tasklatch::store::MemoryStore::open(&StoreOptions::default()).expect("memory store"),
    );
    let now = TokioEnv.now_ms();
    for n in 0..5 {
        create(&*store, n, None, now);
    }
    let queue = Arc::new(MemoryQueue::new(2));
    let runtime = Runtime::new(
        store.clone(),
        queue.clone(),
        Arc::new(Export::default()),
        Arc::new(TokioEnv),
        Arc::new(NoProbe),
        Arc::new(NoNotify),
        RuntimeConfig::default(),
    );
    assert_eq!(runtime.dispatch_once("d").await.unwrap(), 2);
    assert_eq!(runtime.dispatch_once("d").await.unwrap(), 0, "queue full");
    assert_eq!(tasklatch::runtime::Queue::len(&*queue).unwrap(), 2);
    let left: Vec<(String, u32)> = store
        .claim("other", now, 1_000, 10)
        .unwrap()
        .into_iter()
        .map(|claim| (claim.task_id, claim.attempt))
        .collect();
    assert_eq!(
        left,
        ["task-002", "task-003", "task-004"].map(|id| (id.to_owned(), 1)),
        "the three the queue could not take were never claimed"
    );
}
