//! The Streamable HTTP transport, hostile: missing and wrong tokens, foreign origins,
//! other callers' sessions, unknown sessions, wrong content types, huge bodies, malformed
//! JSON, a flood of polls for another tenant's task — each a clear HTTP status with a
//! JSON-RPC error body, the server still up, nothing stored changed. Plus the SSE answer of
//! a blocking `tasks/result`, and sessions ending.

mod http_client;

use http_client::{initialize, request, rpc};
use serde_json::{Value, json};
use std::sync::Arc;
use tasklatch::mcp::http::{self, HttpConfig, Tokens};
use tasklatch::mcp::{Assembly, ServerConfig};
use tasklatch::runtime::{RuntimeConfig, TokioEnv};
use tasklatch::store::{MemoryStore, StoreOptions};

const ALICE: &str = "token-alice-0001";
const BOB: &str = "token-bob-00002";

/// Starts a server on a loopback port in a background runtime; returns its address.
fn start(exports: std::path::PathBuf) -> String {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio");
        runtime.block_on(async move {
            let store = Arc::new(MemoryStore::open(&StoreOptions::default()).expect("store"));
            let Assembly { server, runtime } = Assembly::new(
                store,
                exports,
                Arc::new(TokioEnv),
                ServerConfig::default(),
                RuntimeConfig {
                    idle_ms: 5,
                    ..RuntimeConfig::default()
                },
            );
            runtime.start(2);
            let mut tokens = Tokens::default();
            tokens.insert(ALICE, "tenant-a/alice");
            tokens.insert(BOB, "tenant-b/bob");
            let router = http::router(
                server,
                HttpConfig {
                    tokens,
                    allowed_origins: vec!["https://app.example.com".into()],
                    body_bytes_max: 64 * 1024,
                    sessions_max: 3,
                    anonymous: None,
                },
            );
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            send.send(listener.local_addr().expect("address").to_string())
                .expect("sent");
            http::serve(listener, router).await.expect("served");
        });
    });
    receive.recv().expect("the server starts")
}

fn call(address: &str, token: &str, session: &str, method: &str, params: Value) -> Value {
    let reply = rpc(
        address,
        token,
        Some(session),
        &json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }),
    )
    .expect("answered");
    assert_eq!(reply.status, 200, "{method}: {}", reply.body);
    reply.json()
}

fn snapshot(address: &str, token: &str, session: &str) -> Value {
    call(address, token, session, "tasks/list", json!({}))["result"].clone()
}

#[test]
fn hostile_http_gets_clear_statuses_and_changes_nothing() {
    let scratch = std::env::temp_dir().join(format!("tasklatch-http-{}", std::process::id()));
    let address = start(scratch.join("exports"));
    let alice = initialize(&address, ALICE).expect("alice initializes");
    let bob = initialize(&address, BOB).expect("bob initializes");
    assert_ne!(alice, bob);
    let created = call(
        &address,
        BOB,
        &bob,
        "tools/call",
        json!({ "name": "export", "arguments": { "name": "b", "delay_ms": 60_000 }, "task": {} }),
    );
    let bobs = created["result"]["task"]["taskId"]
        .as_str()
        .expect("id")
        .to_owned();
    call(
        &address,
        ALICE,
        &alice,
        "tools/call",
        json!({ "name": "export", "arguments": { "name": "a", "delay_ms": 0 }, "task": {} }),
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    let before = (
        snapshot(&address, ALICE, &alice),
        snapshot(&address, BOB, &bob),
    );

    let ping = json!({ "jsonrpc": "2.0", "id": 9, "method": "ping" }).to_string();
    let json_headers = |extra: &[(&'static str, &'static str)]| {
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        headers.extend_from_slice(extra);
        headers
    };
    let alice_bearer = format!("Bearer {ALICE}");
    let with_alice: Vec<(&str, &str)> = vec![
        ("Content-Type", "application/json"),
        ("Authorization", alice_bearer.as_str()),
        ("Mcp-Session-Id", alice.as_str()),
    ];
    // (what, method, headers, body, expected status, expected JSON-RPC code)
    let huge = vec![b' '; 200 * 1024];
    type Case<'a> = (
        &'a str,
        &'a str,
        Vec<(&'a str, &'a str)>,
        Vec<u8>,
        u16,
        Option<i64>,
    );
    let mut cases: Vec<Case> = vec![
        (
            "no token",
            "POST",
            json_headers(&[]),
            ping.clone().into_bytes(),
            401,
            Some(-32600),
        ),
        (
            "unknown token",
            "POST",
            json_headers(&[("Authorization", "Bearer guess-guess")]),
            ping.clone().into_bytes(),
            401,
            Some(-32600),
        ),
        (
            "foreign origin",
            "POST",
            json_headers(&[("Origin", "https://evil.example")]),
            ping.clone().into_bytes(),
            403,
            Some(-32600),
        ),
    ];
    let alice_with = |extra: &[(&'static str, &'static str)]| {
        let mut headers = with_alice.clone();
        headers.extend_from_slice(extra);
        headers
    };
    cases.push((
        "wrong content type",
        "POST",
        {
            let mut h = alice_with(&[]);
            h[0] = ("Content-Type", "text/plain");
            h
        },
        ping.clone().into_bytes(),
        415,
        Some(-32600),
    ));
    cases.push((
        "huge body",
        "POST",
        alice_with(&[]),
        huge,
        413,
        Some(-32600),
    ));
    cases.push((
        "malformed JSON",
        "POST",
        alice_with(&[]),
        b"{\"jsonrpc\": \"2.0\",".to_vec(),
        400,
        Some(-32700),
    ));
    cases.push((
        "a batch",
        "POST",
        alice_with(&[]),
        format!("[{ping}]").into_bytes(),
        400,
        Some(-32600),
    ));
    cases.push((
        "GET without Accept: text/event-stream",
        "GET",
        alice_with(&[]),
        Vec::new(),
        406,
        Some(-32600),
    ));
    for (what, method, headers, body, status, code) in &cases {
        let reply = request(&address, method, "/mcp", headers, body).expect("answered");
        assert_eq!(reply.status, *status, "{what}: {}", reply.body);
        if let Some(code) = code {
            assert_eq!(
                reply.json()["error"]["code"],
                *code,
                "{what}: {}",
                reply.body
            );
        }
    }
    // Sessions: none, unknown, another caller's.
    let reply = rpc(
        &address,
        ALICE,
        None,
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }),
    )
    .unwrap();
    assert_eq!(reply.status, 400, "{}", reply.body);
    let reply = rpc(
        &address,
        ALICE,
        Some("0123456789abcdef0123456789abcdef"),
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }),
    )
    .unwrap();
    assert_eq!(reply.status, 404, "{}", reply.body);
    let reply = rpc(
        &address,
        ALICE,
        Some(&bob),
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "tasks/list" }),
    )
    .unwrap();
    assert_eq!(reply.status, 403, "{}", reply.body);
    // A notification is accepted without a body.
    let reply = rpc(
        &address,
        ALICE,
        Some(&alice),
        &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
    )
    .unwrap();
    assert_eq!(reply.status, 202);
    // Bob's task through Alice's session: the same answer as a made-up id, every time.
    let made_up = call(
        &address,
        ALICE,
        &alice,
        "tasks/get",
        json!({ "taskId": "f".repeat(32) }),
    );
    for _ in 0..300 {
        let theirs = call(
            &address,
            ALICE,
            &alice,
            "tasks/get",
            json!({ "taskId": bobs }),
        );
        assert_eq!(theirs["error"], made_up["error"]);
    }
    let cancel = call(
        &address,
        ALICE,
        &alice,
        "tasks/cancel",
        json!({ "taskId": bobs }),
    );
    assert_eq!(cancel["error"], made_up["error"]);
    // Nothing changed; still up.
    assert_eq!(
        (
            snapshot(&address, ALICE, &alice),
            snapshot(&address, BOB, &bob)
        ),
        before
    );
    assert_eq!(
        call(&address, ALICE, &alice, "ping", json!({}))["result"],
        json!({})
    );
    // A loopback origin is fine.
    let reply = request(
        &address,
        "POST",
        "/mcp",
        &alice_with(&[("Origin", "http://localhost:5173")]),
        ping.as_bytes(),
    )
    .unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
    let _ = std::fs::remove_dir_all(&scratch);
}

#[test]
fn a_blocking_result_streams_and_sessions_end() {
    let scratch = std::env::temp_dir().join(format!("tasklatch-http-sse-{}", std::process::id()));
    let address = start(scratch.join("exports"));
    let alice = initialize(&address, ALICE).expect("initialize");
    let created = call(
        &address,
        ALICE,
        &alice,
        "tools/call",
        json!({ "name": "export", "arguments": { "name": "sse", "delay_ms": 400 }, "task": {}, "_meta": { "progressToken": "p-1" } }),
    );
    let task_id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    // tasks/result while working: an SSE stream whose last event is the response.
    let reply = rpc(
        &address,
        ALICE,
        Some(&alice),
        &json!({ "jsonrpc": "2.0", "id": 5, "method": "tasks/result", "params": { "taskId": task_id } }),
    )
    .unwrap();
    assert_eq!(reply.status, 200);
    assert!(
        reply
            .header("content-type")
            .unwrap()
            .starts_with("text/event-stream")
    );
    let answer = reply.json();
    assert_eq!(answer["id"], 5);
    assert_eq!(
        answer["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        task_id.as_str()
    );
    // The stream carried the status notification before the response.
    assert!(
        reply.body.contains("notifications/tasks/status"),
        "{}",
        reply.body
    );
    // A client that only accepts JSON gets JSON.
    let reply = request(
        &address,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json"),
            ("Authorization", &format!("Bearer {ALICE}")),
            ("Mcp-Session-Id", &alice),
        ],
        json!({ "jsonrpc": "2.0", "id": 6, "method": "tasks/result", "params": { "taskId": task_id } }).to_string().as_bytes(),
    )
    .unwrap();
    assert!(
        reply
            .header("content-type")
            .unwrap()
            .starts_with("application/json")
    );
    assert_eq!(reply.json()["result"]["isError"], false);
    // DELETE ends the session.
    let bearer = format!("Bearer {ALICE}");
    let reply = request(
        &address,
        "DELETE",
        "/mcp",
        &[("Authorization", &bearer), ("Mcp-Session-Id", &alice)],
        b"",
    )
    .unwrap();
    assert_eq!(reply.status, 204);
    let reply = rpc(
        &address,
        ALICE,
        Some(&alice),
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }),
    )
    .unwrap();
    assert_eq!(reply.status, 404);
    // Tasks outlive sessions: a new session of the same caller still sees the task.
    let again = initialize(&address, ALICE).unwrap();
    let got = call(
        &address,
        ALICE,
        &again,
        "tasks/get",
        json!({ "taskId": task_id }),
    );
    assert_eq!(got["result"]["status"], "completed");
    let _ = std::fs::remove_dir_all(&scratch);
}

#[test]
fn tokens_files_are_checked() {
    let path = std::path::Path::new("tokens.json");
    assert!(
        Tokens::parse(path, "{\"tokens\": {}}")
            .unwrap_err()
            .contains("no token")
    );
    assert!(
        Tokens::parse(path, "{\"tokens\": {\"short\": \"a\"}}")
            .unwrap_err()
            .contains("at least 8")
    );
    let error = Tokens::parse(path, "{\"tokens\": [1]}").unwrap_err();
    assert!(error.starts_with("tokens.json:1:"), "{error}");
    assert!(
        Tokens::parse(
            path,
            "{\"tokens\": {\"long-enough\": \"tenant\"}, \"x\": 1}"
        )
        .unwrap_err()
        .contains("unknown field")
    );
    assert!(Tokens::parse(path, "{\"tokens\": {\"long-enough\": \"tenant\"}}").is_ok());
}

#[test]
fn the_least_recently_used_session_makes_room() {
    let scratch = std::env::temp_dir().join(format!("tasklatch-http-lru-{}", std::process::id()));
    let address = start(scratch.join("exports"));
    let ping = json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" });
    let first = initialize(&address, ALICE).unwrap();
    let second = initialize(&address, ALICE).unwrap();
    let third = initialize(&address, BOB).unwrap();
    // Using the first makes the second the least recently used.
    assert_eq!(
        rpc(&address, ALICE, Some(&first), &ping).unwrap().status,
        200
    );
    let fourth = initialize(&address, BOB).unwrap();
    assert_eq!(
        rpc(&address, ALICE, Some(&second), &ping).unwrap().status,
        404,
        "evicted"
    );
    for (token, session) in [(ALICE, &first), (BOB, &third), (BOB, &fourth)] {
        assert_eq!(
            rpc(&address, token, Some(session), &ping).unwrap().status,
            200
        );
    }
    let _ = std::fs::remove_dir_all(&scratch);
}
