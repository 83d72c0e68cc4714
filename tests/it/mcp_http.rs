//! The Streamable HTTP transport, hostile: missing and wrong tokens, foreign origins,
//! other callers' sessions, unknown sessions, wrong content types, huge bodies, malformed
//! JSON, a flood of polls for another tenant's task — each a clear HTTP status with a
//! JSON-RPC error body, the server still up, nothing stored changed. Plus the SSE answer of
//! a blocking `tasks/result`, and sessions ending. And the 2025-11-25 input round trip: the
//! SSE answer of a `tasks/result` blocked on an `input_required` task carries the task's
//! `elicitation/create`, the client POSTs its response on its session, and the same stream
//! ends with the result; nobody else is asked or heard.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use crate::support;

use support::http_client;

use http_client::{EventStream, initialize, initialize_with, request, rpc};
use serde_json::{Value, json};
use std::sync::Arc;
use tasklatch::mcp::ServerConfig;
use tasklatch::mcp::http::{HttpConfig, Tokens};
use tasklatch::runtime::RuntimeConfig;
use tasklatch::store::{MemoryStore, StoreOptions};

const ALICE: &str = "token-alice-0001";
const BOB: &str = "token-bob-00002";

/// Starts a server on a loopback port in a background runtime; returns its address.
fn start(exports: std::path::PathBuf) -> String {
    let mut tokens = Tokens::default();
    tokens.insert(ALICE, "tenant-a/alice");
    tokens.insert(BOB, "tenant-b/bob");
    support::serve_http(
        Arc::new(MemoryStore::open(&StoreOptions::default()).expect("store")),
        exports,
        ServerConfig::default(),
        RuntimeConfig {
            idle_ms: 5,
            ..RuntimeConfig::default()
        },
        HttpConfig {
            tokens,
            allowed_origins: vec!["https://app.example.com".into()],
            body_bytes_max: 64 * 1024,
            sessions_max: 3,
            anonymous: None,
        },
    )
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

    bad_requests_get_clear_statuses(&address, &alice);
    sessions_must_exist_and_be_the_callers(&address, &bob);
    // A notification is accepted without a body.
    let reply = rpc(
        &address,
        ALICE,
        Some(&alice),
        &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
    )
    .unwrap();
    assert_eq!(reply.status, 202);
    anothers_task_looks_made_up(&address, &alice, &bobs);
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
    a_loopback_origin_is_fine(&address, &alice);
    let _ = std::fs::remove_dir_all(&scratch);
}

/// (what, method, headers, body, expected status, expected JSON-RPC code)
type Case<'a> = (
    &'a str,
    &'a str,
    Vec<(&'a str, &'a str)>,
    Vec<u8>,
    u16,
    Option<i64>,
);

fn ping_body() -> String {
    json!({ "jsonrpc": "2.0", "id": 9, "method": "ping" }).to_string()
}

/// JSON headers without a token or session, plus `extra`.
fn json_headers<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    headers.extend_from_slice(extra);
    headers
}

/// Alice's headers on her `session` (`bearer` is her Authorization value), plus `extra`.
fn alice_with<'a>(
    bearer: &'a str,
    session: &'a str,
    extra: &[(&'a str, &'a str)],
) -> Vec<(&'a str, &'a str)> {
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Authorization", bearer),
        ("Mcp-Session-Id", session),
    ];
    headers.extend_from_slice(extra);
    headers
}

fn bad_requests_get_clear_statuses(address: &str, alice: &str) {
    let ping = ping_body();
    let alice_bearer = format!("Bearer {ALICE}");
    let mut cases = cases_refused_before_any_session(&ping);
    cases.extend(cases_refused_on_alices_session(&ping, &alice_bearer, alice));
    for (what, method, headers, body, status, code) in &cases {
        let reply = request(address, method, "/mcp", headers, body).expect("answered");
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
}

fn cases_refused_before_any_session<'a>(ping: &str) -> Vec<Case<'a>> {
    vec![
        (
            "no token",
            "POST",
            json_headers(&[]),
            ping.to_owned().into_bytes(),
            401,
            Some(-32600),
        ),
        (
            "unknown token",
            "POST",
            json_headers(&[("Authorization", "Bearer guess-guess")]),
            ping.to_owned().into_bytes(),
            401,
            Some(-32600),
        ),
        (
            "foreign origin",
            "POST",
            json_headers(&[("Origin", "https://evil.example")]),
            ping.to_owned().into_bytes(),
            403,
            Some(-32600),
        ),
    ]
}

fn cases_refused_on_alices_session<'a>(
    ping: &str,
    bearer: &'a str,
    session: &'a str,
) -> Vec<Case<'a>> {
    let huge = vec![b' '; 200 * 1024];
    vec![
        (
            "wrong content type",
            "POST",
            {
                let mut h = alice_with(bearer, session, &[]);
                h[0] = ("Content-Type", "text/plain");
                h
            },
            ping.to_owned().into_bytes(),
            415,
            Some(-32600),
        ),
        (
            "huge body",
            "POST",
            alice_with(bearer, session, &[]),
            huge,
            413,
            Some(-32600),
        ),
        (
            "malformed JSON",
            "POST",
            alice_with(bearer, session, &[]),
            b"{\"jsonrpc\": \"2.0\",".to_vec(),
            400,
            Some(-32700),
        ),
        (
            "a batch",
            "POST",
            alice_with(bearer, session, &[]),
            format!("[{ping}]").into_bytes(),
            400,
            Some(-32600),
        ),
        (
            "GET without Accept: text/event-stream",
            "GET",
            alice_with(bearer, session, &[]),
            Vec::new(),
            406,
            Some(-32600),
        ),
    ]
}

/// Sessions: none, unknown, another caller's.
fn sessions_must_exist_and_be_the_callers(address: &str, bob: &str) {
    let reply = rpc(
        address,
        ALICE,
        None,
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }),
    )
    .unwrap();
    assert_eq!(reply.status, 400, "{}", reply.body);
    let reply = rpc(
        address,
        ALICE,
        Some("0123456789abcdef0123456789abcdef"),
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }),
    )
    .unwrap();
    assert_eq!(reply.status, 404, "{}", reply.body);
    let reply = rpc(
        address,
        ALICE,
        Some(bob),
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "tasks/list" }),
    )
    .unwrap();
    assert_eq!(reply.status, 403, "{}", reply.body);
}

/// Bob's task through Alice's session: the same answer as a made-up id, every time.
fn anothers_task_looks_made_up(address: &str, alice: &str, bobs: &str) {
    let made_up = call(
        address,
        ALICE,
        alice,
        "tasks/get",
        json!({ "taskId": "f".repeat(32) }),
    );
    for _ in 0..300 {
        let theirs = call(
            address,
            ALICE,
            alice,
            "tasks/get",
            json!({ "taskId": bobs }),
        );
        assert_eq!(theirs["error"], made_up["error"]);
    }
    let cancel = call(
        address,
        ALICE,
        alice,
        "tasks/cancel",
        json!({ "taskId": bobs }),
    );
    assert_eq!(cancel["error"], made_up["error"]);
}

fn a_loopback_origin_is_fine(address: &str, alice: &str) {
    let ping = ping_body();
    let alice_bearer = format!("Bearer {ALICE}");
    let reply = request(
        address,
        "POST",
        "/mcp",
        &alice_with(&alice_bearer, alice, &[("Origin", "http://localhost:5173")]),
        ping.as_bytes(),
    )
    .unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
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

/// Polls `tasks/get` until the task shows `status`; returns the task.
fn wait_status(address: &str, token: &str, session: &str, task_id: &str, status: &str) -> Value {
    for _ in 0..400 {
        let got = call(
            address,
            token,
            session,
            "tasks/get",
            json!({ "taskId": task_id }),
        );
        if got["result"]["status"] == status {
            return got["result"].clone();
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    panic!("task {task_id} never showed {status}");
}

/// Posts a JSON-RPC response (the client answering the server); the transport says 202.
fn respond(address: &str, token: &str, session: &str, response: Value) {
    let reply = rpc(address, token, Some(session), &response).expect("answered");
    assert_eq!(reply.status, 202, "{}", reply.body);
}

fn create_confirmed_export(address: &str, session: &str, name: &str) -> String {
    let created = call(
        address,
        ALICE,
        session,
        "tools/call",
        json!({ "name": "export", "arguments": { "name": name, "delay_ms": 0, "confirm": true }, "task": {} }),
    );
    created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_owned()
}

/// Reads `stream` up to its first `elicitation/create`, checking everything before it is a
/// notification.
fn next_question(stream: &mut EventStream) -> Value {
    loop {
        let message = stream.next_message().expect("a question before the end");
        if message["method"] == "elicitation/create" {
            return message;
        }
        assert!(
            message.get("id").is_none(),
            "only notifications before the question: {message}"
        );
    }
}

/// Reads `stream` to its end; returns the response and counts the requests before it.
fn final_answer(stream: &mut EventStream) -> (Value, usize) {
    let mut requests = 0;
    let mut answer = None;
    while let Some(message) = stream.next_message() {
        match (message.get("id"), message.get("method")) {
            (Some(_), Some(_)) => requests += 1,
            (Some(_), None) => answer = Some(message),
            _ => {}
        }
    }
    (answer.expect("the stream ends with the response"), requests)
}

#[test]
fn input_required_is_asked_on_the_result_stream_and_answered_by_a_post() {
    let scratch = std::env::temp_dir().join(format!("tasklatch-http-input-{}", std::process::id()));
    let exports = scratch.join("exports");
    let address = start(exports.clone());
    let alice = initialize_with(&address, ALICE, json!({ "elicitation": {} })).unwrap();
    let bob = initialize_with(&address, BOB, json!({ "elicitation": {} })).unwrap();

    an_accepted_answer_completes_on_the_same_stream(&address, &alice, &bob, &exports);
    a_declined_answer_fails_the_task(&address, &alice, &exports);
    a_dropped_stream_forgets_its_question(&address, &alice);
    a_client_without_elicitation_is_not_asked(&address, &exports);
    let _ = std::fs::remove_dir_all(&scratch);
}

fn an_accepted_answer_completes_on_the_same_stream(
    address: &str,
    alice: &str,
    bob: &str,
    exports: &std::path::Path,
) {
    let related = "io.modelcontextprotocol/related-task";
    let task_id = create_confirmed_export(address, alice, "kept");
    let waiting = wait_status(address, ALICE, alice, &task_id, "input_required");
    assert!(waiting["statusMessage"].is_string(), "{waiting}");
    another_tenant_is_neither_asked_nor_shown(address, bob, &task_id);
    let mut stream = EventStream::post(
        address,
        ALICE,
        alice,
        &json!({ "jsonrpc": "2.0", "id": 20, "method": "tasks/result", "params": { "taskId": task_id } }),
    )
    .unwrap();
    assert_eq!(stream.status, 200);
    let ask = next_question(&mut stream);
    assert_eq!(
        ask["params"]["_meta"][related]["taskId"],
        task_id.as_str(),
        "{ask}"
    );
    assert_eq!(
        ask["params"]["requestedSchema"]["properties"]["confirm"]["type"],
        "boolean"
    );
    let accept = json!({ "action": "accept", "content": { "confirm": true } });
    unasked_responses_are_ignored(address, alice, bob, &task_id, &ask, &accept);
    // The owner's answer: the same stream ends with the completed result.
    respond(
        address,
        ALICE,
        alice,
        json!({ "jsonrpc": "2.0", "id": ask["id"], "result": accept }),
    );
    let (answer, asked) = final_answer(&mut stream);
    assert_eq!(asked, 0, "each question is asked once per stream");
    assert_eq!(answer["id"], 20);
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(
        answer["result"]["_meta"][related]["taskId"],
        task_id.as_str()
    );
    assert!(exports.join(format!("{task_id}.json")).is_file());
    let done = call(
        address,
        ALICE,
        alice,
        "tasks/get",
        json!({ "taskId": task_id }),
    );
    assert_eq!(done["result"]["status"], "completed", "{done}");
}

/// Another tenant's tasks/result: the task does not exist for it, and nothing is asked.
fn another_tenant_is_neither_asked_nor_shown(address: &str, bob: &str, task_id: &str) {
    let mut theirs = EventStream::post(
        address,
        BOB,
        bob,
        &json!({ "jsonrpc": "2.0", "id": 30, "method": "tasks/result", "params": { "taskId": task_id } }),
    )
    .unwrap();
    let (refused, asked) = final_answer(&mut theirs);
    assert_eq!(asked, 0, "bob is never asked alice's question");
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
}

/// Responses nobody on that session asked for: accepted by the transport, ignored.
fn unasked_responses_are_ignored(
    address: &str,
    alice: &str,
    bob: &str,
    task_id: &str,
    ask: &Value,
    accept: &Value,
) {
    respond(
        address,
        ALICE,
        alice,
        json!({ "jsonrpc": "2.0", "id": "tasklatch-ask-nobody", "result": accept }),
    );
    respond(
        address,
        BOB,
        bob,
        json!({ "jsonrpc": "2.0", "id": ask["id"], "result": accept }),
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    let still = call(
        address,
        ALICE,
        alice,
        "tasks/get",
        json!({ "taskId": task_id }),
    );
    assert_eq!(still["result"]["status"], "input_required", "{still}");
}

/// Declined by a JSON-RPC error response: an isError result, no file.
fn a_declined_answer_fails_the_task(address: &str, alice: &str, exports: &std::path::Path) {
    let declined = create_confirmed_export(address, alice, "dropped");
    wait_status(address, ALICE, alice, &declined, "input_required");
    let mut stream = EventStream::post(
        address,
        ALICE,
        alice,
        &json!({ "jsonrpc": "2.0", "id": 21, "method": "tasks/result", "params": { "taskId": declined } }),
    )
    .unwrap();
    let ask = next_question(&mut stream);
    respond(
        address,
        ALICE,
        alice,
        json!({ "jsonrpc": "2.0", "id": ask["id"], "error": { "code": -32603, "message": "closed" } }),
    );
    let (answer, _) = final_answer(&mut stream);
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"],
        "export cancelled by the requestor"
    );
    assert!(!exports.join(format!("{declined}.json")).exists());
    let failed = call(
        address,
        ALICE,
        alice,
        "tasks/get",
        json!({ "taskId": declined }),
    );
    assert_eq!(failed["result"]["status"], "failed", "{failed}");
}

/// A stream whose client goes away forgets its question: the old id answers nothing, and
/// the next tasks/result asks again under a new id.
fn a_dropped_stream_forgets_its_question(address: &str, alice: &str) {
    let accept = json!({ "action": "accept", "content": { "confirm": true } });
    let reasked = create_confirmed_export(address, alice, "reasked");
    wait_status(address, ALICE, alice, &reasked, "input_required");
    let result_of = |id: u64| json!({ "jsonrpc": "2.0", "id": id, "method": "tasks/result", "params": { "taskId": reasked } });
    let mut stream = EventStream::post(address, ALICE, alice, &result_of(23)).unwrap();
    let first = next_question(&mut stream);
    drop(stream);
    std::thread::sleep(std::time::Duration::from_millis(500));
    respond(
        address,
        ALICE,
        alice,
        json!({ "jsonrpc": "2.0", "id": first["id"], "result": accept }),
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    let still = call(
        address,
        ALICE,
        alice,
        "tasks/get",
        json!({ "taskId": reasked }),
    );
    assert_eq!(still["result"]["status"], "input_required", "{still}");
    let mut stream = EventStream::post(address, ALICE, alice, &result_of(24)).unwrap();
    let second = next_question(&mut stream);
    assert_ne!(second["id"], first["id"]);
    respond(
        address,
        ALICE,
        alice,
        json!({ "jsonrpc": "2.0", "id": second["id"], "result": accept }),
    );
    let (answer, _) = final_answer(&mut stream);
    assert_eq!(answer["result"]["isError"], false, "{answer}");
}

/// A client that did not declare elicitation is not asked: its task waits until cancelled,
/// and the blocked call then ends without a question.
fn a_client_without_elicitation_is_not_asked(address: &str, exports: &std::path::Path) {
    let plain = initialize(address, ALICE).unwrap();
    let unasked = create_confirmed_export(address, &plain, "unasked");
    wait_status(address, ALICE, &plain, &unasked, "input_required");
    let mut stream = EventStream::post(
        address,
        ALICE,
        &plain,
        &json!({ "jsonrpc": "2.0", "id": 22, "method": "tasks/result", "params": { "taskId": unasked } }),
    )
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let cancelled = call(
        address,
        ALICE,
        &plain,
        "tasks/cancel",
        json!({ "taskId": unasked }),
    );
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    let (answer, asked) = final_answer(&mut stream);
    assert_eq!(asked, 0, "a client without elicitation is never asked");
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert!(!exports.join(format!("{unasked}.json")).exists());
}
