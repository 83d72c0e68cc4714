//! Blocked calls that end with their client, wake on their task's write, and stay within
//! their caller's budget; the drain that ends them. In-process `serve --http` servers:
//!
//! - a blocked `tasks/result` (JSON and SSE answers) whose client disconnects is gone from
//!   the server at once; one whose session is deleted answers and is gone;
//! - a blocked call is woken by the completion of its task, not by the safety re-read
//!   (set here to ten minutes); with `--features postgres`, by a write another process
//!   makes to the shared PostgreSQL store, through `LISTEN/NOTIFY`;
//! - waits, requests in flight, sessions and polls over a caller's budget are refused with
//!   `-32029` and HTTP 429 with `Retry-After`, and never spend another caller's budget;
//! - a drain ends blocked calls with `-32030` (503) and refuses new work, while polls
//!   still answer;
//! - an idle keep-alive connection is closed after the idle timeout, and a connection past
//!   the cap is closed as soon as it is accepted.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use crate::support;

use support::http_client;

use http_client::{initialize, post_and_hold, request, rpc, rpc_accepting};
use serde_json::{Value, json};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tasklatch::mcp::http::{HttpConfig, Listening, Tokens};
use tasklatch::mcp::limits::LimitsConfig;
use tasklatch::mcp::{Server, ServerConfig};
use tasklatch::runtime::RuntimeConfig;
use tasklatch::store::{MemoryStore, StoreOptions};

const ALICE: &str = "token-alice-0001";
const BOB: &str = "token-bob-00002";
/// The safety re-read in these servers: far longer than any test waits, so whatever ends a
/// wait here is a wake.
const RECHECK_MS: u64 = 600_000;

fn tokens() -> Tokens {
    let mut tokens = Tokens::default();
    tokens.insert(ALICE, "tenant-a/alice");
    tokens.insert(BOB, "tenant-b/bob");
    tokens
}

fn http_config() -> HttpConfig {
    HttpConfig {
        tokens: tokens(),
        allowed_origins: Vec::new(),
        body_bytes_max: 64 * 1024,
        sessions_max: 1_000,
        anonymous: None,
    }
}

/// A server over a fresh memory store with these budgets.
fn start(label: &str, limits: LimitsConfig) -> (String, Arc<Server>, support::Scratch) {
    start_listening(label, limits, Listening::default())
}

fn start_listening(
    label: &str,
    limits: LimitsConfig,
    listening: Listening,
) -> (String, Arc<Server>, support::Scratch) {
    let scratch = support::Scratch::new(label);
    let (address, server) = support::serve_http_server(
        Arc::new(MemoryStore::open(&StoreOptions::default()).expect("store")),
        scratch.join("exports"),
        ServerConfig {
            result_recheck_ms: RECHECK_MS,
            limits,
            ..ServerConfig::default()
        },
        RuntimeConfig {
            idle_ms: 5,
            ..RuntimeConfig::default()
        },
        http_config(),
        listening,
    );
    (address, server, scratch)
}

fn message(method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params })
}

fn call(
    address: &str,
    token: &str,
    session: &str,
    method: &str,
    params: Value,
) -> http_client::Reply {
    rpc(address, token, Some(session), &message(method, params)).expect("answered")
}

/// Creates an export task running `delay_ms`; returns its id.
fn export(address: &str, token: &str, session: &str, delay_ms: u64) -> String {
    let reply = call(
        address,
        token,
        session,
        "tools/call",
        json!({ "name": "export", "arguments": { "name": "w", "delay_ms": delay_ms }, "task": {} }),
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.json()["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {}", reply.body))
        .to_owned()
}

/// A blocked `tasks/result` on `task_id`, answered as JSON or as SSE.
fn hold_result(address: &str, token: &str, session: &str, task_id: &str, sse: bool) -> TcpStream {
    let accept = if sse {
        "application/json, text/event-stream"
    } else {
        "application/json"
    };
    post_and_hold(
        address,
        token,
        &[("Accept", accept), ("Mcp-Session-Id", session)],
        &message("tasks/result", json!({ "taskId": task_id })),
    )
    .expect("sent")
}

/// Waits up to `within` for `server`'s open waits to be `expected`; returns how long it took.
fn await_waits(server: &Server, expected: usize, within: Duration) -> Duration {
    let started = Instant::now();
    while server.waits_open() != expected {
        assert!(
            started.elapsed() < within,
            "{} waits open after {within:?}, expected {expected}",
            server.waits_open()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    started.elapsed()
}

/// The error of a refused answer, its HTTP status and `Retry-After`.
fn refusal(reply: &http_client::Reply) -> (u16, Option<String>, Value) {
    (
        reply.status,
        reply.header("retry-after").map(str::to_owned),
        reply.json()["error"].clone(),
    )
}

#[test]
fn abandoned_waits_end_with_their_clients() {
    let (address, server, _scratch) = start("waits-abandoned", LimitsConfig::default());
    let session = initialize(&address, ALICE).expect("initialized");
    let task = export(&address, ALICE, &session, 600_000);
    for sse in [false, true] {
        let held: Vec<TcpStream> = (0..40)
            .map(|_| hold_result(&address, ALICE, &session, &task, sse))
            .collect();
        await_waits(&server, 40, Duration::from_secs(10));
        drop(held);
        let gone = await_waits(&server, 0, Duration::from_secs(5));
        eprintln!(
            "40 abandoned waits ({}) gone in {gone:?}",
            if sse { "SSE" } else { "JSON" }
        );
    }
    // The task itself goes on: abandoning its waits is not cancelling it.
    let task_now = call(
        &address,
        ALICE,
        &session,
        "tasks/get",
        json!({ "taskId": task }),
    );
    assert_eq!(
        task_now.json()["result"]["status"],
        "working",
        "{}",
        task_now.body
    );
}

#[test]
fn a_deleted_session_ends_its_blocked_calls() {
    let (address, server, _scratch) = start("waits-deleted", LimitsConfig::default());
    let session = initialize(&address, ALICE).expect("initialized");
    let task = export(&address, ALICE, &session, 600_000);
    let held = hold_result(&address, ALICE, &session, &task, false);
    await_waits(&server, 1, Duration::from_secs(10));
    let bearer = format!("Bearer {ALICE}");
    let deleted = request(
        &address,
        "DELETE",
        "/mcp",
        &[("Authorization", &bearer), ("Mcp-Session-Id", &session)],
        b"",
    )
    .expect("deleted");
    assert_eq!(deleted.status, 204);
    await_waits(&server, 0, Duration::from_secs(5));
    // The blocked call was answered, saying why.
    let mut answer = String::new();
    let mut held = held;
    held.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let _ = std::io::Read::read_to_string(&mut held, &mut answer);
    assert!(
        answer.contains("Session ended while the call was blocked"),
        "{answer}"
    );
}

#[test]
fn a_blocked_call_is_woken_by_its_tasks_completion() {
    let (address, server, _scratch) = start("waits-woken", LimitsConfig::default());
    let session = initialize(&address, ALICE).expect("initialized");
    let task = export(&address, ALICE, &session, 300);
    let started = Instant::now();
    let reply = call(
        &address,
        ALICE,
        &session,
        "tasks/result",
        json!({ "taskId": task }),
    );
    let took = started.elapsed();
    assert_eq!(reply.status, 200);
    assert!(
        reply.json()["result"]["content"].is_array(),
        "{}",
        reply.body
    );
    // The re-read is ten minutes away: only the completion's wake answers this soon.
    assert!(took < Duration::from_secs(10), "answered after {took:?}");
    assert_eq!(server.waits_open(), 0);
}

#[test]
fn waits_over_the_budget_are_refused_and_budgets_are_per_caller() {
    let limits = LimitsConfig {
        waits_per_key_max: 3,
        ..LimitsConfig::default()
    };
    let (address, server, _scratch) = start("waits-budget", limits);
    let alice = initialize(&address, ALICE).expect("alice");
    let bob = initialize(&address, BOB).expect("bob");
    let task = export(&address, ALICE, &alice, 600_000);
    let bobs = export(&address, BOB, &bob, 600_000);
    let held: Vec<TcpStream> = (0..3)
        .map(|_| hold_result(&address, ALICE, &alice, &task, false))
        .collect();
    await_waits(&server, 3, Duration::from_secs(10));
    let refused = call(
        &address,
        ALICE,
        &alice,
        "tasks/result",
        json!({ "taskId": task }),
    );
    let (status, retry_after, error) = refusal(&refused);
    assert_eq!(
        (status, retry_after.as_deref()),
        (429, Some("1")),
        "{}",
        refused.body
    );
    assert_eq!(error["code"], -32029);
    assert_eq!(error["data"]["limit"], "waits");
    assert_eq!(error["data"]["max"], 3);
    // Bob's budget is his own.
    let bobs_wait = hold_result(&address, BOB, &bob, &bobs, false);
    await_waits(&server, 4, Duration::from_secs(10));
    // A wait freed is a wait available.
    drop(held);
    drop(bobs_wait);
    await_waits(&server, 0, Duration::from_secs(5));
    let again = hold_result(&address, ALICE, &alice, &task, false);
    await_waits(&server, 1, Duration::from_secs(10));
    drop(again);
}

#[test]
fn polls_over_the_rate_are_refused_in_both_eras() {
    let limits = LimitsConfig {
        polls_per_key_per_s: 1,
        polls_per_key_burst: 5,
        ..LimitsConfig::default()
    };
    let (address, _server, _scratch) = start("waits-polls", limits);
    let alice = initialize(&address, ALICE).expect("alice");
    let bob = initialize(&address, BOB).expect("bob");
    let task = export(&address, ALICE, &alice, 600_000);
    for _ in 0..5 {
        let reply = call(
            &address,
            ALICE,
            &alice,
            "tasks/get",
            json!({ "taskId": task }),
        );
        assert_eq!(reply.status, 200, "{}", reply.body);
    }
    let refused = call(&address, ALICE, &alice, "tasks/list", json!({}));
    let (status, retry_after, error) = refusal(&refused);
    assert_eq!(
        (status, retry_after.is_some()),
        (429, true),
        "{}",
        refused.body
    );
    assert_eq!(error["code"], -32029);
    assert_eq!(error["data"]["limit"], "polls");
    assert!(
        error["data"]["retryAfterMs"]
            .as_u64()
            .is_some_and(|ms| ms <= 1_000)
    );
    // The 2026-07-28 tasks/get draws from the same bucket.
    let body = json!({ "jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {
        "taskId": task,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": { "extensions": { "io.modelcontextprotocol/tasks": {} } },
        },
    }});
    let modern = rpc_accepting(
        &address,
        ALICE,
        None,
        &body,
        "application/json",
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tasks/get"),
            ("Mcp-Name", &task),
        ],
    )
    .expect("answered");
    let (status, retry_after, error) = refusal(&modern);
    assert_eq!(
        (status, retry_after.is_some()),
        (429, true),
        "{}",
        modern.body
    );
    assert_eq!(error["data"]["limit"], "polls");
    // Bob polls on his own budget.
    let bobs = call(&address, BOB, &bob, "tasks/list", json!({}));
    assert_eq!(bobs.status, 200, "{}", bobs.body);
    // The bucket refills (one a second).
    std::thread::sleep(Duration::from_millis(1_100));
    let refilled = call(
        &address,
        ALICE,
        &alice,
        "tasks/get",
        json!({ "taskId": task }),
    );
    assert_eq!(refilled.status, 200, "{}", refilled.body);
}

#[test]
fn requests_in_flight_and_sessions_are_bounded_per_caller() {
    let limits = LimitsConfig {
        requests_per_key_max: 2,
        sessions_per_key_max: 2,
        ..LimitsConfig::default()
    };
    let (address, server, _scratch) = start("waits-requests", limits);
    let alice = initialize(&address, ALICE).expect("alice");
    let task = export(&address, ALICE, &alice, 600_000);
    let held: Vec<TcpStream> = (0..2)
        .map(|_| hold_result(&address, ALICE, &alice, &task, false))
        .collect();
    await_waits(&server, 2, Duration::from_secs(10));
    let refused = call(
        &address,
        ALICE,
        &alice,
        "tasks/get",
        json!({ "taskId": task }),
    );
    let (status, _, error) = refusal(&refused);
    assert_eq!(status, 429, "{}", refused.body);
    assert_eq!(error["data"]["limit"], "requests");
    let bob = initialize(&address, BOB).expect("bob is not held up");
    drop(held);
    await_waits(&server, 0, Duration::from_secs(5));
    // Sessions: alice has one; a second is fine, a third is refused until one is deleted.
    let second = initialize(&address, ALICE).expect("second session");
    let third = rpc(
        &address,
        ALICE,
        None,
        &message(
            "initialize",
            json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }),
        ),
    )
    .expect("answered");
    let (status, retry_after, error) = refusal(&third);
    assert_eq!(
        (status, retry_after.as_deref()),
        (429, Some("1")),
        "{}",
        third.body
    );
    assert_eq!(error["data"]["limit"], "sessions");
    assert!(third.header("mcp-session-id").is_none());
    let bearer = format!("Bearer {ALICE}");
    let deleted = request(
        &address,
        "DELETE",
        "/mcp",
        &[("Authorization", &bearer), ("Mcp-Session-Id", &second)],
        b"",
    )
    .expect("deleted");
    assert_eq!(deleted.status, 204);
    initialize(&address, ALICE).expect("a session freed is a session available");
    assert!(!bob.is_empty());
}

#[test]
fn a_drain_ends_blocked_calls_and_refuses_new_work_while_polls_answer() {
    let (address, server, _scratch) = start("waits-drain", LimitsConfig::default());
    let session = initialize(&address, ALICE).expect("initialized");
    let task = export(&address, ALICE, &session, 600_000);
    let mut held = hold_result(&address, ALICE, &session, &task, false);
    await_waits(&server, 1, Duration::from_secs(10));
    server.drain();
    await_waits(&server, 0, Duration::from_secs(5));
    let mut answer = String::new();
    held.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let _ = std::io::Read::read_to_string(&mut held, &mut answer);
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("retry-after: 1"),
        "{answer}"
    );
    assert!(
        answer.contains("-32030") && answer.contains(&task),
        "{answer}"
    );
    let created = call(
        &address,
        ALICE,
        &session,
        "tools/call",
        json!({ "name": "export", "arguments": { "name": "late" }, "task": {} }),
    );
    let (status, _, error) = refusal(&created);
    assert_eq!(
        (status, error["code"].as_i64()),
        (503, Some(-32030)),
        "{}",
        created.body
    );
    let blocked = call(
        &address,
        ALICE,
        &session,
        "tasks/result",
        json!({ "taskId": task }),
    );
    assert_eq!(blocked.status, 503, "no new wait opens: {}", blocked.body);
    let polled = call(
        &address,
        ALICE,
        &session,
        "tasks/get",
        json!({ "taskId": task }),
    );
    assert_eq!(
        polled.json()["result"]["status"],
        "working",
        "{}",
        polled.body
    );
}

/// Two servers on one PostgreSQL schema, as two processes would be: a task written by one
/// store connection wakes a call blocked in the other server, through `LISTEN/NOTIFY`.
#[cfg(feature = "postgres")]
#[test]
fn a_write_by_another_process_wakes_a_blocked_call() {
    use tasklatch::contract::{TaskOutcome, TaskStatus};
    use tasklatch::store::{PostgresStore, TaskStore, TransitionCommand};
    let Some(pg) = support::Postgres::start("waits_feed") else {
        return;
    };
    let schema = pg.schema();
    let open = || PostgresStore::open(&pg.url, Some(&schema), &StoreOptions::default());
    let here: Arc<dyn TaskStore> = Arc::new(tasklatch::store::OffRuntime(open().expect("store")));
    let elsewhere = open().expect("another connection");
    let scratch = support::Scratch::new("waits-feed");
    // No runtime: nothing in this server runs the task; only the other connection ends it.
    let (address, _server) = serve_without_runtime(here, scratch.join("exports"));
    let created = elsewhere
        .create(&support::create_command("fed-1", 1))
        .expect("created");
    assert!(created.record.is_some());
    let session = initialize(&address, ALICE).expect("initialized");
    let answered = std::thread::spawn({
        let (address, session) = (address.clone(), session.clone());
        move || {
            let started = Instant::now();
            let reply = call(
                &address,
                ALICE,
                &session,
                "tasks/result",
                json!({ "taskId": "fed-1" }),
            );
            (started.elapsed(), reply.body)
        }
    });
    std::thread::sleep(Duration::from_millis(500));
    let version = elsewhere
        .read("fed-1")
        .expect("read")
        .expect("there")
        .version;
    let completed = elsewhere
        .transition(&TransitionCommand {
            irreversible_effect: None,
            task_id: "fed-1".into(),
            caller: "tenant-a/alice".into(),
            expected_version: version,
            next: TaskStatus::Completed,
            outcome: Some(TaskOutcome::Result {
                result: json!({ "content": [{ "type": "text", "text": "done elsewhere" }] }),
            }),
            status_message: None,
            now_ms: 2,
            input_requests: None,
        })
        .expect("completed");
    assert!(completed.record.is_some());
    let (took, body) = answered.join().expect("the call");
    assert!(body.contains("done elsewhere"), "{body}");
    // Woken by the notification; the re-read is ten minutes away.
    assert!(took < Duration::from_secs(5), "answered after {took:?}");
}

#[cfg(feature = "postgres")]
fn serve_without_runtime(
    store: Arc<dyn tasklatch::store::TaskStore>,
    exports: std::path::PathBuf,
) -> (String, Arc<Server>) {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let tokio = support::tokio_runtime();
        tokio.block_on(async move {
            let tasklatch::mcp::Assembly { server, runtime: _ } = tasklatch::mcp::Assembly::new(
                store,
                exports,
                Arc::new(tasklatch::runtime::TokioEnv),
                ServerConfig {
                    result_recheck_ms: RECHECK_MS,
                    ..ServerConfig::default()
                },
                RuntimeConfig::default(),
            );
            let _feed = server.follow_store_changes().expect("the feed starts");
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            send.send((
                listener.local_addr().expect("address").to_string(),
                server.clone(),
            ))
            .expect("sent");
            let router = tasklatch::mcp::http::router(server, http_config());
            tasklatch::mcp::http::serve(listener, router)
                .await
                .expect("served");
        });
    });
    receive.recv().expect("started")
}

#[test]
fn idle_connections_are_closed_and_connections_are_capped() {
    let listening = Listening {
        connections_max: 4,
        idle_ms: 1_000,
    };
    let (address, _server, _scratch) =
        start_listening("waits-connections", LimitsConfig::default(), listening);
    let session = initialize(&address, ALICE).expect("initialized");
    let mut kept = http_client::KeepAlive::connect(&address).expect("connect");
    let ping = message("ping", json!({}));
    assert_eq!(
        kept.rpc(ALICE, Some(&session), &ping).expect("ping").status,
        200
    );
    // Left idle past the timeout, the server closes it.
    std::thread::sleep(Duration::from_millis(1_600));
    assert!(
        kept.rpc(ALICE, Some(&session), &ping).is_err(),
        "an idle connection stays open"
    );
    // Four idle connections fill the server; a fifth is closed at once.
    let idle: Vec<TcpStream> = (0..4)
        .map(|_| TcpStream::connect(&address).expect("connect"))
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    let mut fifth = TcpStream::connect(&address).expect("accepted, then closed");
    fifth
        .set_read_timeout(Some(Duration::from_secs(2)))
        .expect("timeout");
    let started = Instant::now();
    let mut byte = [0u8; 1];
    let read = std::io::Read::read(&mut fifth, &mut byte);
    assert!(
        matches!(read, Ok(0)) || read.is_err() && started.elapsed() < Duration::from_secs(1),
        "the fifth connection was served: {read:?}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(700),
        "closed after {:?}",
        started.elapsed()
    );
    // Once the idle ones are closed (1 s), there is room again.
    drop(idle);
    std::thread::sleep(Duration::from_millis(1_200));
    let reply = rpc(&address, ALICE, Some(&session), &ping).expect("room again");
    assert_eq!(reply.status, 200);
}
