//! rmcp 3.11, the official Rust SDK, as a 2026-07-28 tasks client of a real tasklatch
//! server (in process, SQLite store, the conformance fixture tools): `server/discover`
//! with the tasks extension declared, then every step of the extension through rmcp's typed
//! API — `call_tool_once` creating tasks, `tasks/get` polled to each terminal status with
//! the outcome inlined, `input_required` answered by `tasks/update`, `tasks/cancel`, a
//! synchronous tool, and tokens refused. Every call is bounded: rmcp sets no request
//! timeout of its own.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use crate::support;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ClientConfig, CreateTaskResult, ErrorCode, ExtensionCapabilities, GetTaskParams, GetTaskResult,
    Implementation, InputRequest, InputResponses, JsonObject, ProtocolVersion, ResultType,
    TASKS_EXTENSION_ID, TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceError};
use serde_json::{Value, json};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tasklatch::store::{SqliteOptions, SqliteStore, StoreOptions, TaskStore};

use support::{ALICE, BOB};

type Client = RunningService<RoleClient, ClientConfig>;

/// A server on its own thread and runtime (as `tasklatch serve --http` runs one), over a
/// SQLite file in a scratch folder that lives as long as this value.
struct Served {
    url: String,
    store: Arc<SqliteStore>,
    _scratch: support::Scratch,
}

fn start() -> Served {
    let scratch = support::Scratch::new("interop-rmcp");
    let store = Arc::new(
        SqliteStore::open(
            &SqliteOptions::new(scratch.join("tasks.db")),
            &StoreOptions::default(),
        )
        .expect("store"),
    );
    let exports = scratch.join("exports");
    let address = support::serve_fixture_tools(store.clone(), exports);
    Served {
        url: format!("http://{address}/mcp"),
        store,
        _scratch: scratch,
    }
}

/// Fails the test instead of hanging when tasklatch does not answer.
async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(15), future)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within 15 s"))
}

fn capabilities() -> ClientCapabilities {
    let mut extensions = ExtensionCapabilities::new();
    extensions.insert(TASKS_EXTENSION_ID.to_owned(), JsonObject::new());
    let mut capabilities = ClientCapabilities::default();
    capabilities.extensions = Some(extensions);
    capabilities
}

/// `server/discover` (2026-07-28: no `initialize`, no session), declaring the tasks
/// extension; `token` as `Authorization: Bearer`.
async fn discover(url: &str, token: Option<&str>) -> Result<Client, String> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    let started = ClientConfig::new(
        capabilities(),
        Implementation::new("tasklatch-interop-rmcp", "0"),
    )
    .serve_with_lifecycle(
        StreamableHttpClientTransport::from_config(config),
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    );
    match bounded("server/discover", started).await {
        Ok(client) => Ok(client),
        Err(error) => Err(format!(
            "{error:?} (authorization required: {})",
            error.is_authorization_required()
        )),
    }
}

async fn connect(url: &str, token: &str) -> Client {
    let client = discover(url, Some(token)).await.expect("server/discover");
    let peer = client.peer_info().expect("the server's discover result");
    assert_eq!(peer.protocol_version, ProtocolVersion::V_2026_07_28);
    // rmcp sends tasks/* whether or not the server declared the extension: check it here.
    assert!(
        peer.capabilities.supports_tasks(),
        "tasklatch declares {TASKS_EXTENSION_ID}: {:?}",
        peer.capabilities
    );
    assert_eq!(
        peer.server_info.as_ref().map(|info| info.name.as_str()),
        Some("tasklatch"),
        "{peer:?}"
    );
    client
}

async fn call(client: &Client, tool: &str, arguments: Value) -> CallToolResponse {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    bounded(
        tool,
        client
            .call_tool_once(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments)),
    )
    .await
    .unwrap_or_else(|error| panic!("tools/call {tool}: {error:?}"))
}

async fn create(client: &Client, tool: &str, arguments: Value) -> CreateTaskResult {
    match call(client, tool, arguments).await {
        CallToolResponse::Task(created) => {
            assert_eq!(created.result_type, ResultType::TASK, "{created:?}");
            created
        }
        other => panic!("{tool}: expected a task, got {other:?}"),
    }
}

async fn get(client: &Client, task_id: &str) -> Result<GetTaskResult, ServiceError> {
    bounded(
        "tasks/get",
        client
            .peer()
            .get_task(GetTaskParams::new(task_id.to_owned())),
    )
    .await
}

/// Polls `tasks/get` until `done` holds (at most 20 s); returns the answer and every status
/// seen on the way, in order, without repeats.
async fn poll_until(
    client: &Client,
    task_id: &str,
    done: impl Fn(TaskStatus) -> bool,
) -> (GetTaskResult, Vec<TaskStatus>) {
    let started = Instant::now();
    let mut seen = Vec::new();
    loop {
        let got = get(client, task_id).await.expect("tasks/get");
        assert_eq!(got.task.task.task_id, task_id, "{got:?}");
        assert_eq!(got.result_type, ResultType::COMPLETE, "{got:?}");
        let status = got.task.status();
        if seen.last() != Some(&status) {
            seen.push(status);
        }
        if done(status) {
            return (got, seen);
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "task {task_id} stuck; saw {seen:?}"
        );
        let wait = got.task.task.poll_interval_ms.unwrap_or(50).clamp(10, 200);
        tokio::time::sleep(Duration::from_millis(wait)).await;
    }
}

fn terminal(status: TaskStatus) -> bool {
    status.is_terminal()
}

/// A completed task's inlined `CallToolResult`.
fn tool_result(got: &GetTaskResult) -> CallToolResult {
    let TaskPayload::Completed { result } = &got.task.payload else {
        panic!("expected completed, got {:?}", got.task.payload)
    };
    serde_json::from_value(Value::Object(result.clone())).expect("a CallToolResult")
}

fn text(result: &CallToolResult) -> &str {
    &result
        .content
        .first()
        .and_then(|block| block.as_text())
        .expect("a text block")
        .text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_created_polled_and_completes_with_its_result_inlined() {
    let served = start();
    let client = connect(&served.url, ALICE).await;

    let created = create(
        &client,
        "slow_compute",
        json!({ "seconds": 1, "label": "pi" }),
    )
    .await;
    assert_eq!(created.task.status, TaskStatus::Working, "{created:?}");
    assert!(
        created.task.ttl_ms.is_some_and(|ttl| ttl > 0),
        "{created:?}"
    );
    let id = created.task.task_id.clone();
    let started = Instant::now();

    let (done, seen) = poll_until(&client, &id, terminal).await;
    assert_eq!(
        seen.last(),
        Some(&TaskStatus::Completed),
        "{:?}",
        done.task.payload
    );
    assert!(
        seen.iter()
            .all(|status| matches!(status, TaskStatus::Working | TaskStatus::Completed)),
        "working, then completed: {seen:?}"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "slow_compute slept its second before completing"
    );
    let result = tool_result(&done);
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(text(&result), "computed pi after 1 s");

    let record = served.store.read(&id).expect("read").expect("stored");
    assert_eq!(record.era.as_str(), "2026-07-28");
    bounded("close", client.cancel()).await.expect("closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_required_is_answered_by_tasks_update() {
    let served = start();
    let client = connect(&served.url, ALICE).await;

    let created = create(
        &client,
        "confirm_delete",
        json!({ "filename": "notes.txt" }),
    )
    .await;
    let id = created.task.task_id.clone();
    let (asked, _) = poll_until(&client, &id, |status| {
        status == TaskStatus::InputRequired || status.is_terminal()
    })
    .await;
    let TaskPayload::InputRequired { input_requests } = &asked.task.payload else {
        panic!("expected input_required, got {:?}", asked.task.payload)
    };
    assert_eq!(
        input_requests.keys().collect::<Vec<_>>(),
        ["confirm"],
        "{input_requests:?}"
    );
    let request = &input_requests["confirm"];
    assert!(
        matches!(request, InputRequest::Elicitation(_)),
        "{request:?}"
    );
    let wire = serde_json::to_value(request).expect("serializes");
    assert_eq!(wire["method"], "elicitation/create", "{wire}");
    assert_eq!(wire["params"]["message"], "Delete notes.txt?", "{wire}");
    assert_eq!(
        wire["params"]["requestedSchema"]["properties"]["confirm"]["type"], "boolean",
        "{wire}"
    );

    let mut answers = InputResponses::new();
    answers.insert(
        "confirm".to_owned(),
        json!({ "action": "accept", "content": { "confirm": true } }),
    );
    bounded(
        "tasks/update",
        client
            .peer()
            .update_task(UpdateTaskParams::new(id.clone(), answers)),
    )
    .await
    .expect("tasks/update");
    // The answer is stored and the task is back to work at once (compare-and-swap).
    let after = get(&client, &id).await.expect("tasks/get");
    assert_ne!(
        after.task.status(),
        TaskStatus::InputRequired,
        "{:?}",
        after.task.payload
    );

    let (done, seen) = poll_until(&client, &id, terminal).await;
    assert_eq!(seen.last(), Some(&TaskStatus::Completed), "{seen:?}");
    let result = tool_result(&done);
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(text(&result), "Deleted notes.txt");
    bounded("close", client.cancel()).await.expect("closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_error_completes_and_a_protocol_error_fails() {
    let served = start();
    let client = connect(&served.url, ALICE).await;

    // A tool error (`isError: true`) is an outcome: the task is `completed` in this era.
    let failing = create(&client, "failing_job", json!({})).await;
    // A JSON-RPC error is not: the task is `failed`, the error inlined.
    let protocol = create(&client, "protocol_error_job", json!({})).await;

    let (done, _) = poll_until(&client, &failing.task.task_id, terminal).await;
    assert_eq!(
        done.task.status(),
        TaskStatus::Completed,
        "{:?}",
        done.task.payload
    );
    let result = tool_result(&done);
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert_eq!(text(&result), "failing_job failed, as it always does");

    let (failed, _) = poll_until(&client, &protocol.task.task_id, terminal).await;
    let TaskPayload::Failed { error } = &failed.task.payload else {
        panic!("expected failed, got {:?}", failed.task.payload)
    };
    assert_eq!(error.get("code"), Some(&json!(-32603)), "{error:?}");
    assert_eq!(
        error.get("message"),
        Some(&json!(
            "protocol_error_job: the job ended with a protocol error"
        )),
        "{error:?}"
    );
    bounded("close", client.cancel()).await.expect("closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_task_ends_cancelled() {
    let served = start();
    let client = connect(&served.url, ALICE).await;

    let created = create(&client, "slow_compute", json!({ "seconds": 60 })).await;
    let id = created.task.task_id.clone();
    let started = Instant::now();
    bounded(
        "tasks/cancel",
        client.peer().cancel_task(CancelTaskParams::new(id.clone())),
    )
    .await
    .expect("tasks/cancel");
    let (cancelled, seen) = poll_until(&client, &id, terminal).await;
    assert_eq!(
        cancelled.task.status(),
        TaskStatus::Cancelled,
        "{:?}",
        cancelled.task.payload
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "cancelled long before its 60 s were up; saw {seen:?}"
    );
    // Cancelling a terminal task is acknowledged too, and changes nothing.
    let before = served.store.read(&id).expect("read").expect("stored");
    bounded(
        "tasks/cancel",
        client.peer().cancel_task(CancelTaskParams::new(id.clone())),
    )
    .await
    .expect("tasks/cancel of a terminal task");
    assert_eq!(
        served.store.read(&id).expect("read").expect("stored"),
        before
    );
    assert_eq!(
        get(&client, &id).await.expect("tasks/get").task.status(),
        TaskStatus::Cancelled
    );
    bounded("close", client.cancel()).await.expect("closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_synchronous_tool_answers_at_once() {
    let served = start();
    let client = connect(&served.url, ALICE).await;
    match call(&client, "greet", json!({ "name": "x" })).await {
        CallToolResponse::Complete(result) => {
            assert_eq!(result.is_error, Some(false), "{result:?}");
            assert_eq!(text(&result), "Hello, x!");
        }
        other => panic!("greet is forbidden as a task: expected Complete, got {other:?}"),
    }
    bounded("close", client.cancel()).await.expect("closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_and_foreign_tasks_are_not_found() {
    let served = start();
    let alice = connect(&served.url, ALICE).await;
    let bob = connect(&served.url, BOB).await;
    let created = create(&alice, "slow_compute", json!({ "seconds": 60 })).await;
    let id = created.task.task_id.clone();
    let before = served.store.read(&id).expect("read").expect("stored");

    for (who, client, task_id) in [
        ("alice", &alice, "no-such-task"),
        ("bob", &bob, id.as_str()),
    ] {
        match get(client, task_id).await {
            Err(ServiceError::McpError(error)) => {
                assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{who}: {error:?}");
                assert_eq!(error.message, "Failed to retrieve task: Task not found");
            }
            other => panic!("{who}: expected -32602, got {other:?}"),
        }
    }
    match bounded(
        "tasks/cancel",
        bob.peer().cancel_task(CancelTaskParams::new(id.clone())),
    )
    .await
    {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{error:?}")
        }
        other => panic!("bob cancelling alice's task: expected -32602, got {other:?}"),
    }
    assert_eq!(
        served.store.read(&id).expect("read").expect("stored"),
        before,
        "refused requests change nothing"
    );
    bounded(
        "tasks/cancel",
        alice.peer().cancel_task(CancelTaskParams::new(id.clone())),
    )
    .await
    .expect("tasks/cancel");
    bounded("close", alice.cancel()).await.expect("closed");
    bounded("close", bob.cancel()).await.expect("closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_or_unknown_token_is_refused() {
    let served = start();
    for token in [None, Some("token-nobody-999")] {
        let error = match discover(&served.url, token).await {
            Ok(_) => panic!("token {token:?}: server/discover must be refused"),
            Err(error) => error,
        };
        // tasklatch answers 401 with `WWW-Authenticate: Bearer`, which rmcp reports as such.
        assert!(
            error.ends_with("(authorization required: true)"),
            "token {token:?}: {error}"
        );
    }
}
