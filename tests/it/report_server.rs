//! A server built on `tasklatch-server` with tools of its own — the example's
//! (`examples/report_server/tools.rs`) through `Toolbox` and `Assembly::with_tools`,
//! in-process on a memory store and the real runtime: a completed report is published
//! once, a cancelled one leaves no file, a webhook cancelled before its point of no return
//! is never called and one that runs is called once; the builder refuses what it cannot
//! serve, naming it. (CI also probes the example as a process, killed:
//! tests/probe/report_server.sh.)
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

#[path = "../../examples/report_server/tools.rs"]
mod tools;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tasklatch::builder::{ServeError, ServerBuilder};
use tasklatch::contract::Negotiated;
use tasklatch::mcp::{Assembly, Server, ServerConfig, Session};
use tasklatch::runtime::{NoProbe, RuntimeConfig, TokioEnv};
use tasklatch::store::{MemoryStore, StoreOptions, TaskStore};
use tasklatch::tool::Toolbox;

struct World {
    server: Arc<Server>,
    dir: PathBuf,
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn world(name: &str) -> World {
    let dir = std::env::temp_dir().join(format!("tasklatch-report-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store: Arc<dyn TaskStore> =
        Arc::new(MemoryStore::open(&StoreOptions::default()).expect("memory store"));
    let toolbox = Toolbox::new()
        .with(tools::PublishReport::new(dir.clone()))
        .with(tools::CallWebhook::new(dir.clone()));
    let env = Arc::new(TokioEnv);
    let Assembly { server, runtime } = Assembly::with_tools(
        store.clone(),
        Arc::new(toolbox.bind(store, env.clone())),
        env,
        ServerConfig::default(),
        RuntimeConfig {
            idle_ms: 5,
            ..RuntimeConfig::default()
        },
        Arc::new(NoProbe),
    );
    runtime.start(2);
    World { server, dir }
}

fn alice() -> Session {
    Session {
        id: "a".into(),
        auth_key: "tenant-a/alice".into(),
        negotiated: Negotiated::FULL,
        idempotency_header: None,
    }
}

async fn rpc(server: &Server, method: &str, params: Value) -> Value {
    let request = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    server
        .handle_text(&alice(), &request.to_string())
        .await
        .expect("answered")
}

async fn create(server: &Server, tool: &str, arguments: Value) -> String {
    let params = json!({ "name": tool, "arguments": arguments, "task": { "ttl": 60_000 } });
    let answer = rpc(server, "tools/call", params).await;
    answer["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {answer}"))
        .to_owned()
}

/// Polls until the task is terminal (at most 10 s); its status.
async fn terminal(server: &Server, task_id: &str) -> String {
    for _ in 0..1_000 {
        let answer = rpc(server, "tasks/get", json!({ "taskId": task_id })).await;
        let status = answer["result"]["status"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if ["completed", "failed", "cancelled"].contains(&status.as_str()) {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{task_id} never ended");
}

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completed_report_is_published_once_and_a_cancelled_one_leaves_no_file() {
    let world = world("publish");
    let done = create(
        &world.server,
        "publish_report",
        json!({"title": "q3", "delay_ms": 20}),
    )
    .await;
    assert_eq!(terminal(&world.server, &done).await, "completed");
    let published = format!("{done}.md");
    assert_eq!(
        files(&world.dir),
        std::slice::from_ref(&published),
        "published, nothing prepared left"
    );
    let text = std::fs::read_to_string(world.dir.join(&published)).expect("the report");
    assert!(text.starts_with("# q3"), "{text}");

    let cancelled = create(
        &world.server,
        "publish_report",
        json!({"title": "q4", "delay_ms": 2_000}),
    )
    .await;
    let answer = rpc(
        &world.server,
        "tasks/cancel",
        json!({ "taskId": cancelled }),
    )
    .await;
    assert_eq!(answer["result"]["status"], "cancelled", "{answer}");
    // The run notices its cancel within one 100-ms slice and stops; give it three.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        files(&world.dir),
        [published],
        "a cancelled report left a file"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_is_called_once_and_never_after_a_cancel_before_its_point_of_no_return() {
    let world = world("webhook");
    let called = create(
        &world.server,
        "call_webhook",
        json!({"url": "https://hooks.example/a", "delay_ms": 0}),
    )
    .await;
    assert_eq!(terminal(&world.server, &called).await, "completed");
    let stopped = create(
        &world.server,
        "call_webhook",
        json!({"url": "https://hooks.example/b", "delay_ms": 2_000}),
    )
    .await;
    rpc(&world.server, "tasks/cancel", json!({ "taskId": stopped })).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let log = std::fs::read_to_string(world.dir.join("webhooks.jsonl")).expect("the call log");
    let calls: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON"))
        .collect();
    assert_eq!(
        calls,
        [json!({"call": called, "url": "https://hooks.example/a"})]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_are_refused_before_admission_naming_the_tool() {
    let world = world("validate");
    let params = json!({ "name": "publish_report", "arguments": {"title": ""}, "task": {} });
    let answer = rpc(&world.server, "tools/call", params).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("publish_report: title must be"),
        "{message}"
    );
    let listed = rpc(&world.server, "tasks/list", json!({})).await;
    assert_eq!(
        listed["result"]["tasks"],
        json!([]),
        "nothing admitted: {listed}"
    );
}

#[test]
#[should_panic(expected = "a tool named \"call_webhook\" is already in the toolbox")]
fn two_tools_cannot_share_a_name() {
    let dir = PathBuf::from("unused");
    let _ = Toolbox::new()
        .with(tools::CallWebhook::new(dir.clone()))
        .with(tools::CallWebhook::new(dir));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_builder_names_what_it_cannot_serve() {
    let refused = |served: Result<_, ServeError>| match served {
        Ok(_) => panic!("served"),
        Err(error) => (error.is_bad_input(), error.to_string()),
    };
    let no_callers = ServerBuilder::new("memory:").bind_http("127.0.0.1:0").await;
    let (bad_input, said) = refused(no_callers);
    assert!(bad_input && said.contains("tokens or anonymous"), "{said}");
    let bad_store = ServerBuilder::new("mysql://x")
        .anonymous(true)
        .bind_http("127.0.0.1:0")
        .await;
    let (bad_input, said) = refused(bad_store);
    assert!(bad_input && said.starts_with("store: "), "{said}");
    let no_workers = ServerBuilder::new("memory:")
        .anonymous(true)
        .workers(0)
        .bind_http("127.0.0.1:0")
        .await;
    let (bad_input, said) = refused(no_workers);
    assert!(bad_input && said.starts_with("workers must be"), "{said}");
    let taken = ServerBuilder::new("memory:")
        .anonymous(true)
        .bind_http("127.0.0.1:0")
        .await;
    let address = taken
        .as_ref()
        .map(|serving| serving.local_addr().to_string())
        .expect("bound");
    let twice = ServerBuilder::new("memory:")
        .anonymous(true)
        .bind_http(&address)
        .await;
    let (bad_input, said) = refused(twice);
    assert!(
        bad_input && said.starts_with(&format!("listen on {address}")),
        "{said}"
    );
}
