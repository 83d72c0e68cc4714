//! The 2026-07-28 era over Streamable HTTP, beside the 2025-11-25 era on the same server
//! and store: the extension's shapes, input answered by `tasks/update`, and the hostile
//! cases of the new surface (routing headers, undeclared capabilities, unknown input keys,
//! updates and cancels of terminal or foreign tasks, removed methods) — each a clear error,
//! nothing stored changed.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use crate::support;

use support::http_client;

use http_client::{initialize, request, rpc};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tasklatch::store::{MemoryStore, StoreOptions, TaskStore};

use support::{ALICE, BOB};
const TASKS: &str = "io.modelcontextprotocol/tasks";

/// Starts a server with the conformance fixture tools; returns its address and store.
fn start() -> (String, Arc<MemoryStore>) {
    let store = Arc::new(MemoryStore::open(&StoreOptions::default()).expect("store"));
    let address = support::serve_fixture_tools(
        store.clone(),
        std::env::temp_dir().join(format!("tasklatch-modern-{}", std::process::id())),
    );
    (address, store)
}

/// A 2026-07-28 request: envelope in `_meta`, routing headers as a conforming client sends
/// them, unless `headers` overrides one.
struct Modern<'a> {
    address: &'a str,
    token: Option<&'a str>,
    declares_tasks: bool,
}

impl Modern<'_> {
    fn send(&self, method: &str, params: Value, overrides: &[(&str, &str)]) -> http_client::Reply {
        let mut params = params;
        let capabilities = if self.declares_tasks {
            json!({ "extensions": { TASKS: {} } })
        } else {
            json!({})
        };
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        });
        let name = params
            .get("name")
            .or_else(|| params.get("taskId"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let bearer = self.token.map(|token| format!("Bearer {token}"));
        let mut headers: Vec<(&str, &str)> = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", method),
        ];
        if let Some(name) = &name {
            headers.push(("Mcp-Name", name));
        }
        if let Some(bearer) = &bearer {
            headers.push(("Authorization", bearer));
        }
        for (key, value) in overrides {
            headers.retain(|(name, _)| !name.eq_ignore_ascii_case(key));
            if !value.is_empty() {
                headers.push((key, value));
            }
        }
        let body = json!({ "jsonrpc": "2.0", "id": 7, "method": method, "params": params });
        request(
            self.address,
            "POST",
            "/mcp",
            &headers,
            body.to_string().as_bytes(),
        )
        .expect("answered")
    }

    fn ok(&self, method: &str, params: Value) -> Value {
        let reply = self.send(method, params, &[]);
        assert_eq!(reply.status, 200, "{method}: {}", reply.body);
        let body = reply.json();
        assert_eq!(body["id"], 7, "{body}");
        body["result"].clone()
    }

    fn refused(&self, method: &str, params: Value, overrides: &[(&str, &str)]) -> (u16, Value) {
        let reply = self.send(method, params, overrides);
        let body = reply.json();
        assert_eq!(body["id"], 7, "errors echo the request id: {body}");
        assert!(
            body.get("result").is_none(),
            "{method} must be refused: {body}"
        );
        (reply.status, body["error"].clone())
    }

    fn wait_for(&self, task_id: &str, done: impl Fn(&Value) -> bool) -> Value {
        let started = Instant::now();
        loop {
            let task = self.ok("tasks/get", json!({ "taskId": task_id }));
            if done(&task) {
                return task;
            }
            assert!(started.elapsed() < Duration::from_secs(10), "stuck: {task}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn terminal(task: &Value) -> bool {
    matches!(
        task["status"].as_str(),
        Some("completed" | "failed" | "cancelled")
    )
}

#[test]
fn both_eras_use_one_server_and_store_each_in_its_own_shapes() {
    let (address, store) = start();
    let modern = Modern {
        address: &address,
        token: Some(ALICE),
        declares_tasks: true,
    };

    // 2025-11-25: a session, the `task` param, the nested CreateTaskResult.
    let session = initialize(&address, ALICE).expect("initialize");
    let legacy = rpc(
        &address,
        ALICE,
        Some(&session),
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                 "params": { "name": "failing_job", "arguments": {}, "task": {} } }),
    )
    .expect("answered")
    .json();
    let legacy_id = legacy["result"]["task"]["taskId"]
        .as_str()
        .expect("nested task")
        .to_owned();
    assert!(legacy["result"]["task"].get("ttl").is_some(), "{legacy}");

    // 2026-07-28, same caller, same store: the flat CreateTaskResult.
    let created = modern.ok(
        "tools/call",
        json!({ "name": "failing_job", "arguments": {} }),
    );
    assert_eq!(created["resultType"], "task", "{created}");
    assert!(
        created.get("task").is_none() && created.get("ttl").is_none(),
        "{created}"
    );
    assert!(
        created["ttlMs"].as_u64().is_some_and(|ttl| ttl > 0),
        "{created}"
    );
    let modern_id = created["taskId"].as_str().expect("taskId").to_owned();

    // A tool error: `completed` in 2026-07-28, `failed` in 2025-11-25 — each as its era says.
    let done = modern.wait_for(&modern_id, terminal);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], true, "{done}");
    assert_eq!(done["resultType"], "complete");
    assert!(
        done["result"]["_meta"]
            .get("io.modelcontextprotocol/related-task")
            .is_none()
    );
    let started = Instant::now();
    let legacy_done = loop {
        let reply = rpc(
            &address,
            ALICE,
            Some(&session),
            &json!({ "jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": { "taskId": legacy_id } }),
        )
        .expect("answered")
        .json();
        if terminal(&reply["result"]) {
            break reply["result"].clone();
        }
        assert!(started.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(legacy_done["status"], "failed", "{legacy_done}");
    assert!(legacy_done.get("resultType").is_none(), "{legacy_done}");

    // The stored records remember their eras.
    let era = |id: &str| store.read(id).unwrap().unwrap().era.as_str();
    assert_eq!(era(&legacy_id), "2025-11-25");
    assert_eq!(era(&modern_id), "2026-07-28");

    // A 2025-11-25 task is not visible to 2026-07-28 requests (its `failed` may be a tool
    // error, which that era cannot say): the same answer as an unknown task.
    let (status, error) = modern.refused("tasks/get", json!({ "taskId": legacy_id }), &[]);
    assert_eq!(
        (status, error["code"].as_i64()),
        (400, Some(-32602)),
        "{error}"
    );
    assert_eq!(error["message"], "Failed to retrieve task: Task not found");
}

/// SEP-2663: the extension does not enable tasks for the 2025-11-25 era. A 2025-11-25
/// session whose request declares the extension in `_meta` (capabilities only, no version
/// key) is served 2025-11-25 shapes, not refused as a half envelope.
#[test]
fn a_2025_session_declaring_the_extension_in_meta_keeps_its_shapes() {
    let (address, _store) = start();
    let session = initialize(&address, ALICE).expect("initialize");
    let meta =
        json!({ "io.modelcontextprotocol/clientCapabilities": { "extensions": { TASKS: {} } } });
    let call = |id: u64, method: &str, params: Value| {
        let mut params = params;
        params["_meta"] = meta.clone();
        rpc(
            &address,
            ALICE,
            Some(&session),
            &json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }),
        )
        .expect("answered")
        .json()
    };
    let created = call(
        1,
        "tools/call",
        json!({ "name": "failing_job", "arguments": {}, "task": {} }),
    );
    let task = &created["result"]["task"];
    assert!(
        task["taskId"].is_string() && task.get("ttl").is_some(),
        "{created}"
    );
    assert!(created["result"].get("resultType").is_none(), "{created}");
    let task_id = task["taskId"].as_str().expect("taskId");
    let read = call(2, "tasks/get", json!({ "taskId": task_id }));
    assert!(read["result"].get("ttl").is_some(), "{read}");
    assert!(
        read["result"].get("ttlMs").is_none() && read["result"].get("resultType").is_none(),
        "{read}"
    );
}

#[test]
fn input_is_asked_in_tasks_get_and_answered_by_tasks_update() {
    let (address, store) = start();
    let alice = Modern {
        address: &address,
        token: Some(ALICE),
        declares_tasks: true,
    };
    let bob = Modern {
        address: &address,
        token: Some(BOB),
        declares_tasks: true,
    };

    let created = alice.ok(
        "tools/call",
        json!({ "name": "multi_input", "arguments": {} }),
    );
    let id = created["taskId"].as_str().expect("taskId").to_owned();
    let asked = alice.wait_for(&id, |task| task["status"] == "input_required");
    let keys: Vec<String> = asked["inputRequests"]
        .as_object()
        .expect("inputRequests")
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys, ["first", "second"], "{asked}");
    assert_eq!(
        asked["inputRequests"]["first"]["method"],
        "elicitation/create"
    );

    // Another caller's answer: refused as if the task did not exist; nothing changes.
    let before = store.read(&id).unwrap().unwrap();
    let (status, error) = bob.refused(
        "tasks/update",
        json!({ "taskId": id, "inputResponses": { "first": { "action": "accept", "content": { "name": "mallory" } } } }),
        &[],
    );
    assert_eq!(
        (status, error["code"].as_i64()),
        (400, Some(-32602)),
        "{error}"
    );
    // An answer to a key that is not open: acknowledged, ignored.
    let ack = alice.ok(
        "tasks/update",
        json!({ "taskId": id, "inputResponses": { "unknown-key": { "ignored": true } } }),
    );
    assert_eq!(
        ack,
        json!({ "resultType": "complete", "_meta": ack["_meta"] }),
        "{ack}"
    );
    assert_eq!(
        store.read(&id).unwrap().unwrap(),
        before,
        "ignored and refused answers change nothing"
    );

    // A partial answer: the answered key is gone at once, the task still waits.
    alice.ok("tasks/update", json!({ "taskId": id, "inputResponses": { "first": { "action": "accept", "content": { "name": "ada" } } } }));
    let partial = alice.ok("tasks/get", json!({ "taskId": id }));
    assert_eq!(partial["status"], "input_required", "{partial}");
    assert_eq!(
        partial["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["second"]
    );
    alice.ok("tasks/update", json!({ "taskId": id, "inputResponses": { "second": { "action": "accept", "content": { "name": "grace" } } } }));
    let done = alice.wait_for(&id, terminal);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "got ada and grace");
    // The answers are stored with the task (they survive a restart with the store).
    let stored = store.read(&id).unwrap().unwrap();
    assert_eq!(
        stored.input_responses.as_ref().map(|answers| answers.len()),
        Some(2)
    );

    // Updating or cancelling a terminal task: the same empty acknowledgement, no change.
    let terminal_before = store.read(&id).unwrap().unwrap();
    alice.ok(
        "tasks/update",
        json!({ "taskId": id, "inputResponses": { "first": {} } }),
    );
    let ack = alice.ok("tasks/cancel", json!({ "taskId": id }));
    assert_eq!(ack["resultType"], "complete");
    assert!(
        ack.get("status").is_none() && ack.get("taskId").is_none(),
        "{ack}"
    );
    assert_eq!(store.read(&id).unwrap().unwrap(), terminal_before);
}

#[test]
fn export_asks_for_confirmation_in_tasks_get_and_takes_it_from_tasks_update() {
    let (address, _store) = start();
    let exports = std::env::temp_dir().join(format!("tasklatch-modern-{}", std::process::id()));
    let alice = Modern {
        address: &address,
        token: Some(ALICE),
        declares_tasks: true,
    };
    for (name, answer, exported) in [
        (
            "modern-kept",
            json!({ "action": "accept", "content": { "confirm": true } }),
            true,
        ),
        ("modern-dropped", json!({ "action": "decline" }), false),
    ] {
        let created = alice.ok(
            "tools/call",
            json!({ "name": "export", "arguments": { "name": name, "delay_ms": 0, "confirm": true } }),
        );
        assert_eq!(created["resultType"], "task", "{created}");
        let id = created["taskId"].as_str().expect("taskId").to_owned();
        let asked = alice.wait_for(&id, |task| task["status"] == "input_required");
        let question = &asked["inputRequests"]["confirm"];
        assert_eq!(question["method"], "elicitation/create", "{asked}");
        assert_eq!(
            question["params"]["requestedSchema"]["properties"]["confirm"]["type"],
            "boolean"
        );
        alice.ok(
            "tasks/update",
            json!({ "taskId": id, "inputResponses": { "confirm": answer } }),
        );
        let done = alice.wait_for(&id, terminal);
        // A tool error completes a task of this era.
        assert_eq!(done["status"], "completed", "{done}");
        assert_eq!(done["result"]["isError"], !exported, "{done}");
        if !exported {
            assert_eq!(
                done["result"]["content"][0]["text"],
                "export cancelled by the requestor"
            );
        }
        assert_eq!(exports.join(format!("{id}.json")).is_file(), exported);
    }
}

#[test]
fn the_new_surface_refuses_hostile_requests_clearly() {
    let (address, store) = start();
    let alice = Modern {
        address: &address,
        token: Some(ALICE),
        declares_tasks: true,
    };
    let undeclared = Modern {
        address: &address,
        token: Some(ALICE),
        declares_tasks: false,
    };
    let anonymous = Modern {
        address: &address,
        token: None,
        declares_tasks: true,
    };
    let created = alice.ok(
        "tools/call",
        json!({ "name": "slow_compute", "arguments": { "seconds": 60 } }),
    );
    let id = created["taskId"].as_str().expect("a task").to_owned();
    let before = store.read(&id).unwrap().unwrap();

    routing_headers_must_say_what_the_body_says(&alice, &id);
    the_envelope_is_required_in_a_served_version(&address, &alice);
    capabilities_are_declared_per_request(&undeclared, &id);
    legacy_removed_and_bad_requests_get_this_eras_answers(&alice, &id);
    // No sessions, no GET stream in this era; unauthenticated callers are refused here.
    let get = request(
        &address,
        "GET",
        "/mcp",
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Accept", "text/event-stream"),
        ],
        b"",
    )
    .unwrap();
    assert_eq!(get.status, 405);
    let reply = anonymous.send("tools/list", json!({}), &[]);
    assert_eq!(reply.status, 401, "{}", reply.body);

    assert_eq!(
        store.read(&id).unwrap().unwrap(),
        before,
        "no refused request changed the task"
    );
    let ack = alice.ok("tasks/cancel", json!({ "taskId": id }));
    assert_eq!(ack["resultType"], "complete");
    assert_eq!(alice.wait_for(&id, terminal)["status"], "cancelled");
}

/// A refusal's HTTP status and JSON-RPC code.
fn code_of((status, error): (u16, Value)) -> (u16, i64) {
    (status, error["code"].as_i64().unwrap_or(0))
}

fn routing_headers_must_say_what_the_body_says(alice: &Modern<'_>, id: &str) {
    assert_eq!(
        code_of(alice.refused(
            "tools/call",
            json!({ "name": "greet", "arguments": {} }),
            &[("Mcp-Method", "tasks/get")]
        )),
        (400, -32020)
    );
    assert_eq!(
        code_of(alice.refused(
            "tasks/get",
            json!({ "taskId": id }),
            &[("Mcp-Name", "someone-elses-task")]
        )),
        (400, -32020)
    );
    assert_eq!(
        code_of(alice.refused(
            "tools/call",
            json!({ "name": "greet", "arguments": {} }),
            &[("Mcp-Name", "")]
        )),
        (400, -32020)
    );
    assert_eq!(
        code_of(alice.refused("tools/list", json!({}), &[("Mcp-Method", "TOOLS/LIST")])),
        (400, -32020)
    );
}

fn the_envelope_is_required_in_a_served_version(address: &str, alice: &Modern<'_>) {
    let reply = request(
        address,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Authorization", &format!("Bearer {ALICE}")),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/list"),
        ],
        json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {} })
            .to_string()
            .as_bytes(),
    )
    .unwrap();
    assert_eq!(
        (reply.status, reply.json()["error"]["code"].as_i64()),
        (400, Some(-32602)),
        "{}",
        reply.body
    );
    let (status, error) = alice.refused(
        "tools/list",
        json!({}),
        &[("MCP-Protocol-Version", "2099-01-01")],
    );
    assert_eq!(
        (status, error["code"].as_i64()),
        (400, Some(-32020)),
        "header and _meta disagree: {error}"
    );
}

/// Undeclared tasks/* and required tools are -32021; optional tools run synchronously.
fn capabilities_are_declared_per_request(undeclared: &Modern<'_>, id: &str) {
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let (status, error) =
            undeclared.refused(method, json!({ "taskId": id, "inputResponses": {} }), &[]);
        assert_eq!(
            (status, error["code"].as_i64()),
            (400, Some(-32021)),
            "{method}: {error}"
        );
        assert!(
            error["data"]["requiredCapabilities"]["extensions"][TASKS].is_object(),
            "{error}"
        );
    }
    let (_, error) = undeclared.refused(
        "tools/call",
        json!({ "name": "failing_job", "arguments": {} }),
        &[],
    );
    assert_eq!(error["code"], -32021, "{error}");
    let sync = undeclared.ok(
        "tools/call",
        json!({ "name": "slow_compute", "arguments": { "seconds": 0 } }),
    );
    assert_eq!(
        sync["resultType"], "complete",
        "optional tools run synchronously: {sync}"
    );
}

fn legacy_removed_and_bad_requests_get_this_eras_answers(alice: &Modern<'_>, id: &str) {
    // A legacy `task` param never makes a synchronous tool a task.
    let greeted = alice.ok(
        "tools/call",
        json!({ "name": "greet", "arguments": { "name": "x" }, "task": { "ttl": 1000 } }),
    );
    assert_eq!(greeted["content"][0]["text"], "Hello, x!", "{greeted}");
    // Removed and unknown methods: 404 / -32601.
    for method in ["tasks/result", "tasks/list", "initialize", "ping"] {
        assert_eq!(
            code_of(alice.refused(method, json!({ "taskId": id }), &[])),
            (404, -32601),
            "{method}"
        );
    }
    // Bad arguments are a tool error, not a protocol error.
    let bad = alice.ok(
        "tools/call",
        json!({ "name": "slow_compute", "arguments": { "seconds": "soon" } }),
    );
    assert_eq!(bad["isError"], true, "{bad}");
}

#[test]
fn subscriptions_listen_streams_the_callers_own_tasks_until_they_end() {
    let (address, _store) = start();
    let alice = Modern {
        address: &address,
        token: Some(ALICE),
        declares_tasks: true,
    };
    let bob = Modern {
        address: &address,
        token: Some(BOB),
        declares_tasks: true,
    };
    let undeclared = Modern {
        address: &address,
        token: Some(ALICE),
        declares_tasks: false,
    };
    let mine = alice.ok(
        "tools/call",
        json!({ "name": "slow_compute", "arguments": { "seconds": 1 } }),
    );
    let mine = mine["taskId"].as_str().expect("a task").to_owned();
    let theirs = bob.ok(
        "tools/call",
        json!({ "name": "slow_compute", "arguments": { "seconds": 60 } }),
    );
    let theirs = theirs["taskId"].as_str().expect("a task").to_owned();

    let filter = json!({ "notifications": { "taskIds": [mine, theirs, "made-up"] } });
    let (status, error) = undeclared.refused("subscriptions/listen", filter.clone(), &[]);
    assert_eq!(
        (status, error["code"].as_i64()),
        (400, Some(-32021)),
        "{error}"
    );

    // The stream ends by itself once every agreed task is terminal.
    let reply = alice.send("subscriptions/listen", filter, &[]);
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(
        reply
            .header("content-type")
            .is_some_and(|kind| kind.starts_with("text/event-stream"))
    );
    let messages: Vec<Value> = reply
        .body
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).expect("one JSON message per event"))
        .collect();
    let (first, last) = (&messages[0], messages.last().expect("messages"));
    assert_eq!(
        first["method"], "notifications/subscriptions/acknowledged",
        "{first}"
    );
    assert_eq!(
        first["params"]["notifications"]["taskIds"],
        json!([mine]),
        "only its own task is agreed: {first}"
    );
    assert_eq!(
        last["id"], 7,
        "the listen request's answer ends the stream: {last}"
    );
    assert_eq!(last["result"]["resultType"], "complete");
    let notices: Vec<&Value> = messages[1..messages.len() - 1].iter().collect();
    for message in messages.iter().take(messages.len() - 1) {
        assert_eq!(
            message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7,
            "{message}"
        );
    }
    assert!(
        notices
            .iter()
            .all(|notice| notice["method"] == "notifications/tasks"
                && notice["params"]["taskId"] == mine.as_str())
    );
    let statuses: Vec<&str> = notices
        .iter()
        .filter_map(|notice| notice["params"]["status"].as_str())
        .collect();
    assert_eq!(statuses.first(), Some(&"working"), "{statuses:?}");
    assert_eq!(statuses.last(), Some(&"completed"), "{statuses:?}");
    let done = notices.last().expect("a final notice");
    assert!(
        done["params"]["result"]["content"].is_array(),
        "the DetailedTask, result inlined: {done}"
    );
    assert!(
        done["params"].get("resultType").is_none(),
        "a notification is not a result: {done}"
    );
    assert!(
        !reply.body.contains(&theirs),
        "another caller's task never appears"
    );
    bob.ok("tasks/cancel", json!({ "taskId": theirs }));
}
