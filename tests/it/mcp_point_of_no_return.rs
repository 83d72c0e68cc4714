//! The point of no return, on the wire of both eras: the `notify` tool (an effect that
//! cannot be deferred or undone) declares it before it appends its notification.
//!
//! - Before the declaration a cancel wins in both eras, and no notification is sent.
//! - After it, a 2026-07-28 cancel is acknowledged (`_meta` says the task is still
//!   `working`) and the task completes; a 2025-11-25 cancel answers `cancelled`, and the
//!   task's status message — in `tasks/get`, the cancel's answer and `tasks/result`'s error
//!   data — says which effect was already started. The notification is sent once either way.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use crate::support;

use support::http_client;

use http_client::{initialize, request, rpc};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::ALICE;
use tasklatch::store::{MemoryStore, StoreOptions};

const PAST_POINT: &str = "past its point of no return: ";

fn start(label: &str) -> (String, PathBuf) {
    let store = Arc::new(MemoryStore::open(&StoreOptions::default()).expect("store"));
    let exports =
        std::env::temp_dir().join(format!("tasklatch-point-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&exports);
    (
        support::serve_fixture_tools(store, exports.clone()),
        exports,
    )
}

/// The notification lines `notify` appended for `task_id`.
fn sent(exports: &Path, task_id: &str) -> usize {
    let log = std::fs::read_to_string(exports.join("notifications.jsonl")).unwrap_or_default();
    log.lines()
        .filter(|line| serde_json::from_str::<Value>(line).expect("a JSON line")["task"] == task_id)
        .count()
}

/// A client of one era: 2025-11-25 over a session, or 2026-07-28 with its envelope.
enum Client<'a> {
    Core { address: &'a str, session: String },
    Extension { address: &'a str },
}

impl Client<'_> {
    fn answer(&self, method: &str, mut params: Value) -> Value {
        match self {
            Client::Core { address, session } => {
                let message =
                    json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
                rpc(address, ALICE, Some(session), &message)
                    .expect("answered")
                    .json()
            }
            Client::Extension { address } => {
                params["_meta"] = json!({
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {
                        "extensions": { "io.modelcontextprotocol/tasks": {} }
                    },
                });
                let name = params
                    .get("name")
                    .or_else(|| params.get("taskId"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let bearer = format!("Bearer {ALICE}");
                let headers = [
                    ("Content-Type", "application/json"),
                    ("Accept", "application/json, text/event-stream"),
                    ("MCP-Protocol-Version", "2026-07-28"),
                    ("Mcp-Method", method),
                    ("Mcp-Name", name.as_str()),
                    ("Authorization", bearer.as_str()),
                ];
                let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
                request(
                    address,
                    "POST",
                    "/mcp",
                    &headers,
                    body.to_string().as_bytes(),
                )
                .expect("answered")
                .json()
            }
        }
    }

    fn ok(&self, method: &str, params: Value) -> Value {
        let answer = self.answer(method, params);
        assert!(answer["result"].is_object(), "{method}: {answer}");
        answer["result"].clone()
    }

    fn notify(&self, message: &str, delay_ms: u64, call_ms: u64) -> String {
        let arguments = json!({ "message": message, "delay_ms": delay_ms, "call_ms": call_ms });
        let created = match self {
            Client::Core { .. } => self.ok(
                "tools/call",
                json!({ "name": "notify", "arguments": arguments, "task": {} }),
            )["task"]
                .clone(),
            Client::Extension { .. } => self.ok(
                "tools/call",
                json!({ "name": "notify", "arguments": arguments }),
            ),
        };
        created["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("a task: {created}"))
            .to_owned()
    }

    fn wait_for(&self, task_id: &str, done: impl Fn(&Value) -> bool) -> Value {
        let started = Instant::now();
        loop {
            let task = self.ok("tasks/get", json!({ "taskId": task_id }));
            if done(&task) {
                return task;
            }
            assert!(started.elapsed() < Duration::from_secs(10), "stuck: {task}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

fn terminal(task: &Value) -> bool {
    matches!(
        task["status"].as_str(),
        Some("completed" | "failed" | "cancelled")
    )
}

fn past_point(task: &Value) -> bool {
    task["statusMessage"]
        .as_str()
        .is_some_and(|message| message.starts_with(PAST_POINT))
}

#[test]
fn a_cancel_before_the_point_of_no_return_wins_and_nothing_is_sent() {
    let (address, exports) = start("before");
    let clients = [
        Client::Core {
            address: &address,
            session: initialize(&address, ALICE).expect("initialize"),
        },
        Client::Extension { address: &address },
    ];
    for client in &clients {
        let task_id = client.notify("never", 400, 0);
        client.ok("tasks/cancel", json!({ "taskId": task_id }));
        let done = client.wait_for(&task_id, terminal);
        assert_eq!(done["status"], "cancelled", "{done}");
        assert!(!past_point(&done), "{done}");
        // Long past the point it would have reached: still nothing sent.
        std::thread::sleep(Duration::from_millis(800));
        assert_eq!(sent(&exports, &task_id), 0, "{task_id}");
        assert_eq!(
            client.ok("tasks/get", json!({ "taskId": task_id }))["status"],
            "cancelled"
        );
    }
}

#[test]
fn past_the_point_2026_acknowledges_the_cancel_and_completes() {
    let (address, exports) = start("ext");
    let client = Client::Extension { address: &address };
    let task_id = client.notify("hello-ext", 0, 1_500);
    let declared = client.wait_for(&task_id, past_point);
    assert_eq!(declared["status"], "working", "{declared}");
    assert!(
        declared["statusMessage"]
            .as_str()
            .is_some_and(|message| message.contains("hello-ext")),
        "{declared}"
    );
    let ack = client.ok("tasks/cancel", json!({ "taskId": task_id }));
    assert_eq!(ack["resultType"], "complete", "{ack}");
    assert_eq!(ack["_meta"]["dev.tasklatch/status"], "working", "{ack}");
    let done = client.wait_for(&task_id, terminal);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"], "notified: hello-ext",
        "{done}"
    );
    assert_eq!(sent(&exports, &task_id), 1);
}

#[test]
fn past_the_point_2025_cancels_and_says_what_was_started() {
    let (address, exports) = start("core");
    let client = Client::Core {
        address: &address,
        session: initialize(&address, ALICE).expect("initialize"),
    };
    let task_id = client.notify("hello-core", 0, 1_500);
    client.wait_for(&task_id, past_point);
    let cancelled = client.ok("tasks/cancel", json!({ "taskId": task_id }));
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    let message = cancelled["statusMessage"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.starts_with("cancelled by the requestor past its point of no return: ")
            && message.contains("hello-core")
            && message.ends_with("was started and is not undone"),
        "{cancelled}"
    );
    let result = client.answer("tasks/result", json!({ "taskId": task_id }));
    assert_eq!(result["error"]["data"]["status"], "cancelled", "{result}");
    assert_eq!(
        result["error"]["data"]["statusMessage"],
        message.as_str(),
        "{result}"
    );
    // The effect was under way: it is sent, once, and the task stays cancelled.
    let started = Instant::now();
    while sent(&exports, &task_id) == 0 {
        assert!(started.elapsed() < Duration::from_secs(10), "never sent");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(1_700));
    assert_eq!(sent(&exports, &task_id), 1);
    let stored = client.ok("tasks/get", json!({ "taskId": task_id }));
    assert_eq!(
        (stored["status"].as_str(), stored["statusMessage"].as_str()),
        (Some("cancelled"), Some(message.as_str()))
    );
}

#[test]
fn notify_arguments_are_checked_before_anything_is_admitted() {
    let (address, exports) = start("args");
    let client = Client::Core {
        address: &address,
        session: initialize(&address, ALICE).expect("initialize"),
    };
    for (arguments, names) in [
        (json!({}), "arguments.message"),
        (json!({ "message": "" }), "arguments.message"),
        (
            json!({ "message": "m", "call_ms": 60_001 }),
            "arguments.call_ms",
        ),
        (
            json!({ "message": "m", "delay_ms": -1 }),
            "arguments.delay_ms",
        ),
        (
            json!({ "message": "m", "to": "x" }),
            "unknown argument \"to\"",
        ),
    ] {
        let answer = client.answer(
            "tools/call",
            json!({ "name": "notify", "arguments": arguments, "task": {} }),
        );
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(names), "{message}");
    }
    assert!(!exports.join("notifications.jsonl").exists());
}
