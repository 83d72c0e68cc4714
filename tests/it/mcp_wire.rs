//! The MCP handler end to end in-process (memory store, real runtime on tokio): the task
//! lifecycle in the exact 2025-11-25 shapes, and hostile wire input — each a clear
//! JSON-RPC error, the server still answering, nothing stored changed.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use serde_json::{Value, json};
use std::sync::Arc;
use tasklatch::contract::Negotiated;
use tasklatch::mcp::server::stdio_negotiated;
use tasklatch::mcp::{Assembly, Server, ServerConfig, Session};
use tasklatch::runtime::{RuntimeConfig, TokioEnv};
use tasklatch::store::{MemoryStore, StoreOptions};

struct World {
    server: Arc<Server>,
    _exports: tempdir::Scratch,
}

mod tempdir {
    /// A scratch folder removed on drop.
    pub struct Scratch(pub std::path::PathBuf);
    impl Scratch {
        pub fn new(name: &str) -> Scratch {
            let path =
                std::env::temp_dir().join(format!("tasklatch-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&path);
            std::fs::create_dir_all(&path).expect("scratch");
            Scratch(path)
        }
    }
    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn world(name: &str) -> World {
    let exports = tempdir::Scratch::new(name);
    let store = Arc::new(MemoryStore::open(&StoreOptions::default()).expect("memory store"));
    let Assembly { server, runtime } = Assembly::new(
        store,
        exports.0.join("exports"),
        Arc::new(TokioEnv),
        ServerConfig {
            list_page: 2,
            ..ServerConfig::default()
        },
        RuntimeConfig {
            idle_ms: 5,
            ..RuntimeConfig::default()
        },
    );
    runtime.start(2);
    World {
        server,
        _exports: exports,
    }
}

fn session(id: &str, auth_key: &str, negotiated: Negotiated) -> Session {
    Session {
        id: id.into(),
        auth_key: auth_key.into(),
        negotiated,
        idempotency_header: None,
    }
}

fn alice() -> Session {
    session("a", "tenant-a/alice", Negotiated::FULL)
}

fn bob() -> Session {
    session("b", "tenant-b/bob", Negotiated::FULL)
}

async fn send_text(server: &Server, who: &Session, text: &str) -> Value {
    server
        .handle_text(who, text)
        .await
        .expect("a request is answered")
}

async fn rpc(server: &Server, who: &Session, method: &str, params: Value) -> Value {
    let request = json!({ "jsonrpc": "2.0", "id": 7, "method": method, "params": params });
    send_text(server, who, &request.to_string()).await
}

fn result(answer: &Value) -> &Value {
    assert!(answer.get("error").is_none(), "expected a result: {answer}");
    &answer["result"]
}

fn error(answer: &Value) -> (i64, String) {
    let error = answer
        .get("error")
        .unwrap_or_else(|| panic!("expected an error: {answer}"));
    (
        error["code"].as_i64().expect("code"),
        error["message"].as_str().expect("message").to_owned(),
    )
}

async fn create(server: &Server, who: &Session, arguments: Value) -> String {
    let answer = rpc(
        server,
        who,
        "tools/call",
        json!({ "name": "export", "arguments": arguments, "task": { "ttl": 60_000 } }),
    )
    .await;
    result(&answer)["task"]["taskId"]
        .as_str()
        .expect("a task id")
        .to_owned()
}

async fn wait_status(server: &Server, who: &Session, task_id: &str, status: &str) -> Value {
    for _ in 0..500 {
        let answer = rpc(server, who, "tasks/get", json!({ "taskId": task_id })).await;
        if result(&answer)["status"] == status {
            return answer["result"].clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("task {task_id} never reached {status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_runs_its_lifecycle_in_the_exact_shapes() {
    let World { server, .. } = &world("lifecycle");
    let a = alice();
    initialize_and_tools_list_show_task_support(server, &a).await;
    let task_id = a_created_task_blocks_its_result_then_completes(server, &a).await;
    let (archive_id, slow) = terminal_tasks_answer_in_their_shapes(server, &a, &task_id).await;
    synchronous_calls_answer_directly(server, &a).await;
    let seen = every_listed_task(server, &a).await;
    let mut expected = vec![task_id, archive_id, slow];
    expected.sort();
    assert_eq!(seen, expected);
}

async fn initialize_and_tools_list_show_task_support(server: &Server, a: &Session) {
    let init = rpc(
        server,
        a,
        "initialize",
        json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }),
    )
    .await;
    let init = result(&init);
    assert_eq!(init["protocolVersion"], "2025-11-25");
    assert_eq!(
        init["capabilities"]["tasks"],
        json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } })
    );
    let tools = rpc(server, a, "tools/list", json!({})).await;
    let support: Vec<(String, String)> = result(&tools)["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|tool| {
            (
                tool["name"].as_str().unwrap().to_owned(),
                tool["execution"]["taskSupport"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            )
        })
        .collect();
    assert_eq!(
        support,
        [
            ("export", "optional"),
            ("archive", "required"),
            ("echo", "forbidden"),
            ("notify", "optional")
        ]
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
    );
}

/// A task id is 44 lowercase hex digits: the creation time's 48 low bits of ms (so ids
/// come in key order), then 128 random bits.
fn assert_id_is_time_then_random(task_id: &str) {
    assert_eq!(
        task_id.len(),
        44,
        "{task_id}: 12 hex digits of ms, 32 of random bits"
    );
    assert!(
        task_id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "{task_id}: lowercase hex"
    );
    let created_ms = u64::from_str_radix(&task_id[..12], 16).unwrap();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let since_ms = now_ms.wrapping_sub(created_ms) & ((1 << 48) - 1);
    assert!(
        since_ms < 60_000,
        "{task_id}: created {since_ms} ms ago by its id"
    );
}

/// Creates an export task and follows it to completion; its id.
async fn a_created_task_blocks_its_result_then_completes(
    server: &Arc<Server>,
    a: &Session,
) -> String {
    // Created: nested under `task`, working, ttl as asked, both timestamps equal.
    let created = rpc(
        server,
        a,
        "tools/call",
        json!({ "name": "export", "arguments": { "name": "q3", "delay_ms": 200 }, "task": { "ttl": 60_000 } }),
    )
    .await;
    let task = &result(&created)["task"];
    assert_eq!(task["status"], "working");
    assert_eq!(task["ttl"], 60_000);
    assert_eq!(task["createdAt"], task["lastUpdatedAt"]);
    let task_id = task["taskId"].as_str().unwrap().to_owned();
    assert_id_is_time_then_random(&task_id);

    // tasks/result blocks while working, then returns the CallToolResult with _meta.
    let blocked = {
        let server = server.clone();
        let (a, task_id) = (a.clone(), task_id.clone());
        tokio::spawn(
            async move { rpc(&server, &a, "tasks/result", json!({ "taskId": task_id })).await },
        )
    };
    // The TypeScript client repeats `task` on follow-ups: tolerated.
    let polled = rpc(
        server,
        a,
        "tasks/get",
        json!({ "taskId": task_id, "task": { "ttl": 30_000 } }),
    )
    .await;
    assert!(result(&polled)["ttl"].is_number());
    let payload = blocked.await.expect("joined");
    let payload = result(&payload);
    assert_eq!(payload["isError"], false);
    assert!(
        payload["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("exported 100 rows of q3")
    );
    assert_eq!(
        payload["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        task_id.as_str()
    );
    let done = wait_status(server, a, &task_id, "completed").await;
    assert!(
        done["_meta"]
            .get("io.modelcontextprotocol/related-task")
            .is_none(),
        "tasks/get carries no related-task _meta"
    );
    assert_eq!(
        done["_meta"]["dev.tasklatch/version"], 2,
        "created, then completed"
    );
    task_id
}

/// A completed task refuses a cancel, a failed one and a cancelled one answer
/// `tasks/result` as documented; the ids of the failed and the cancelled task.
async fn terminal_tasks_answer_in_their_shapes(
    server: &Server,
    a: &Session,
    task_id: &str,
) -> (String, String) {
    // Cancelling a terminal task is refused with its status named.
    let again = rpc(server, a, "tasks/cancel", json!({ "taskId": task_id })).await;
    assert_eq!(
        error(&again),
        (
            -32602,
            "Cannot cancel task: already in terminal status 'completed'".into()
        )
    );

    // A failing tool: the task ends failed, tasks/result returns the isError result.
    let archive = rpc(
        server,
        a,
        "tools/call",
        json!({ "name": "archive", "arguments": { "items": ["poison"] }, "task": {} }),
    )
    .await;
    let archive_id = result(&archive)["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let failed = wait_status(server, a, &archive_id, "failed").await;
    assert!(failed["statusMessage"].is_string());
    let payload = rpc(server, a, "tasks/result", json!({ "taskId": archive_id })).await;
    assert_eq!(result(&payload)["isError"], true);

    // A cancel: answered with the task already cancelled; its result is a documented error.
    let slow = create(server, a, json!({ "name": "slow", "delay_ms": 5_000 })).await;
    let cancelled = rpc(server, a, "tasks/cancel", json!({ "taskId": slow })).await;
    assert_eq!(result(&cancelled)["status"], "cancelled");
    let payload = rpc(server, a, "tasks/result", json!({ "taskId": slow })).await;
    assert_eq!(error(&payload).0, -32603);
    assert_eq!(payload["error"]["data"]["status"], "cancelled");
    (archive_id, slow)
}

/// Synchronous calls: an optional tool without a task, a forbidden one.
async fn synchronous_calls_answer_directly(server: &Server, a: &Session) {
    let echo = rpc(
        server,
        a,
        "tools/call",
        json!({ "name": "echo", "arguments": { "text": "hi" } }),
    )
    .await;
    assert_eq!(result(&echo)["content"][0]["text"], "hi");
    let sync_export = rpc(
        server,
        a,
        "tools/call",
        json!({ "name": "export", "arguments": { "name": "now", "delay_ms": 0 } }),
    )
    .await;
    assert_eq!(result(&sync_export)["isError"], false);
    // Only a task can ask its requestor: a synchronous export that would ask says so.
    let sync_confirm = rpc(
        server,
        a,
        "tools/call",
        json!({ "name": "export", "arguments": { "name": "now", "delay_ms": 0, "confirm": true } }),
    )
    .await;
    assert_eq!(result(&sync_confirm)["isError"], true, "{sync_confirm}");
}

/// Pages through every task of the caller (page size 2 here); their ids, sorted.
async fn every_listed_task(server: &Server, a: &Session) -> Vec<String> {
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..10 {
        let params = match &cursor {
            Some(cursor) => json!({ "cursor": cursor }),
            None => json!({}),
        };
        let page = rpc(server, a, "tasks/list", params).await;
        let page = result(&page);
        for task in page["tasks"].as_array().unwrap() {
            seen.push(task["taskId"].as_str().unwrap().to_owned());
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    seen.sort();
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotency_keys_replay_or_refuse() {
    let World { server, .. } = &world("idempotency");
    let a = alice();
    let call = |arguments: Value| {
        json!({
            "name": "export",
            "arguments": arguments,
            "task": {},
            "_meta": { "dev.tasklatch/idempotency-key": "k-1" }
        })
    };
    let first = rpc(
        server,
        &a,
        "tools/call",
        call(json!({ "name": "x", "delay_ms": 0 })),
    )
    .await;
    let replay = rpc(
        server,
        &a,
        "tools/call",
        call(json!({ "name": "x", "delay_ms": 0 })),
    )
    .await;
    assert_eq!(
        result(&first)["task"]["taskId"],
        result(&replay)["task"]["taskId"]
    );
    let other = rpc(
        server,
        &a,
        "tools/call",
        call(json!({ "name": "y", "delay_ms": 0 })),
    )
    .await;
    assert_eq!(
        error(&other),
        (
            -32602,
            "Idempotency key already used for a different request".into()
        )
    );
    // The same key is another caller's own.
    let theirs = rpc(
        server,
        &bob(),
        "tools/call",
        call(json!({ "name": "y", "delay_ms": 0 })),
    )
    .await;
    assert_ne!(
        result(&theirs)["task"]["taskId"],
        result(&first)["task"]["taskId"]
    );
}

/// Everything both tenants can see: every listed task, as `tasks/get` shows it.
async fn snapshot(server: &Server) -> Vec<Value> {
    let mut all = Vec::new();
    for who in [alice(), bob()] {
        let mut cursor: Option<String> = None;
        for _ in 0..100 {
            let params = match &cursor {
                Some(cursor) => json!({ "cursor": cursor }),
                None => json!({}),
            };
            let page = rpc(server, &who, "tasks/list", params).await;
            let page = result(&page).clone();
            for task in page["tasks"].as_array().unwrap() {
                let id = task["taskId"].as_str().unwrap();
                all.push(
                    result(&rpc(server, &who, "tasks/get", json!({ "taskId": id })).await).clone(),
                );
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) => cursor = Some(next.to_owned()),
                None => break,
            }
        }
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_input_gets_clear_errors_and_changes_nothing() {
    let World { server, .. } = &world("hostile");
    let (a, b) = (alice(), bob());
    let bobs = create(server, &b, json!({ "name": "bob", "delay_ms": 0 })).await;
    let bobs_slow = create(
        server,
        &b,
        json!({ "name": "bob-slow", "delay_ms": 60_000 }),
    )
    .await;
    let _alices = create(server, &a, json!({ "name": "alice", "delay_ms": 0 })).await;
    for extra in 0..3 {
        create(
            server,
            &b,
            json!({ "name": format!("b{extra}"), "delay_ms": 0 }),
        )
        .await;
    }
    wait_status(server, &b, &bobs, "completed").await;
    let bobs_page = rpc(server, &b, "tasks/list", json!({})).await;
    let bobs_cursor = result(&bobs_page)["nextCursor"]
        .as_str()
        .expect("bob has more than a page")
        .to_owned();
    // Let the quick tasks settle, so the snapshot only moves if a hostile call moves it.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let before = snapshot(server).await;

    malformed_requests_get_clear_errors(server, &a, &bobs_cursor).await;
    anothers_task_looks_made_up(server, &a, &bobs, &bobs_slow).await;
    a_poll_flood_is_refused_then_limited(server, &bobs).await;
    // Nothing changed, and the server still answers.
    assert_eq!(snapshot(server).await, before);
    let ping = rpc(server, &a, "ping", json!({})).await;
    assert_eq!(result(&ping), &json!({}));
    // Bob's slow task is still his and still working.
    let still = rpc(server, &b, "tasks/get", json!({ "taskId": bobs_slow })).await;
    assert_eq!(result(&still)["status"], "working");
}

/// Each malformed or ill-typed request: its JSON-RPC error code, in a 2.0 envelope.
async fn malformed_requests_get_clear_errors(server: &Server, a: &Session, bobs_cursor: &str) {
    let long_name = "x".repeat(129);
    let cases: Vec<(&str, String, i64)> = vec![
        ("malformed JSON", "{\"jsonrpc\": \"2.0\", \"id\": 1,".into(), -32700),
        ("not JSON at all", "hello".into(), -32700),
        ("a batch", "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]".into(), -32600),
        ("a bare string", "\"ping\"".into(), -32600),
        ("wrong jsonrpc", json!({"jsonrpc": "1.0", "id": 1, "method": "ping"}).to_string(), -32600),
        ("object id", json!({"jsonrpc": "2.0", "id": {}, "method": "ping"}).to_string(), -32600),
        ("numeric method", json!({"jsonrpc": "2.0", "id": 1, "method": 5}).to_string(), -32600),
        ("array params", json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": ["x"]}).to_string(), -32600),
        ("unknown method", json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/delete", "params": {}}).to_string(), -32601),
        ("tool name a number", json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": 3}}).to_string(), -32602),
        ("unknown tool", json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "rm"}}).to_string(), -32602),
        ("arguments a string", json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "export", "arguments": "x"}}).to_string(), -32602),
        ("argument too long", json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "export", "arguments": {"name": long_name}, "task": {}}}).to_string(), -32602),
        ("unknown argument", json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "export", "arguments": {"name": "x", "sudo": true}, "task": {}}}).to_string(), -32602),
        ("confirm not a boolean", json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "export", "arguments": {"name": "x", "confirm": "yes"}, "task": {}}}).to_string(), -32602),
        ("ttl a string", json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "export", "arguments": {"name": "x"}, "task": {"ttl": "long"}}}).to_string(), -32602),
        ("task not an object", json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "export", "arguments": {"name": "x"}, "task": true}}).to_string(), -32602),
        ("required tool without task", json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "archive", "arguments": {}}}).to_string(), -32601),
        ("forbidden tool with task", json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}, "task": {}}}).to_string(), -32601),
        ("tasks/get without taskId", json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {}}).to_string(), -32602),
        ("taskId a number", json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": 5}}).to_string(), -32602),
        ("forged cursor", json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/list", "params": {"cursor": "AAAA"}}).to_string(), -32602),
        ("another tenant's cursor", json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/list", "params": {"cursor": bobs_cursor}}).to_string(), -32602),
        ("bad idempotency key", json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "export", "arguments": {"name": "x"}, "task": {}, "_meta": {"dev.tasklatch/idempotency-key": 7}}}).to_string(), -32602),
    ];
    for (name, text, expected) in &cases {
        let answer = send_text(server, a, text).await;
        assert_eq!(error(&answer).0, *expected, "{name}: {answer}");
        assert_eq!(answer["jsonrpc"], "2.0", "{name}");
    }
}

/// Another tenant's task and a made-up id: the same answer, byte for byte.
async fn anothers_task_looks_made_up(server: &Server, a: &Session, bobs: &str, bobs_slow: &str) {
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        for target in [bobs, bobs_slow] {
            let theirs = rpc(server, a, method, json!({ "taskId": target })).await;
            let made_up = rpc(
                server,
                a,
                method,
                json!({ "taskId": "0123456789abcdef0123456789abcdef" }),
            )
            .await;
            assert_eq!(
                theirs["error"].to_string(),
                made_up["error"].to_string(),
                "{method}"
            );
            assert_eq!(error(&theirs).0, -32602, "{method}");
        }
    }
}

/// A flood of polls for ids that are not the caller's, from a third caller: every one
/// refused — not found while its poll budget lasts, then rate-limited — and the server
/// still up, with everyone else's budget untouched (the snapshot after it polls as them).
async fn a_poll_flood_is_refused_then_limited(server: &Server, bobs: &str) {
    let mallory = session("m", "tenant-c/mallory", Negotiated::FULL);
    let (mut not_found, mut limited) = (0, 0);
    for n in 0..2_000u32 {
        let id = if n % 2 == 0 {
            bobs.to_owned()
        } else {
            format!("{n:032x}")
        };
        let answer = rpc(server, &mallory, "tasks/get", json!({ "taskId": id })).await;
        match error(&answer).0 {
            -32602 => not_found += 1,
            -32029 => limited += 1,
            other => panic!("a flood poll answered {other}: {answer}"),
        }
    }
    assert!(
        not_found >= 1_000 && limited > 0,
        "{not_found} not found, {limited} limited"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_sessions_offer_no_list() {
    let World { server, .. } = &world("stdio-caps");
    let one = session("s", "stdio/requestor", stdio_negotiated());
    let init = rpc(
        server,
        &one,
        "initialize",
        json!({ "protocolVersion": "2099-01-01" }),
    )
    .await;
    let init = result(&init);
    assert_eq!(
        init["protocolVersion"], "2025-11-25",
        "an unknown version gets ours"
    );
    assert!(init["capabilities"]["tasks"].get("list").is_none());
    assert_eq!(
        init["capabilities"]["tasks"]["requests"]["tools"]["call"],
        json!({})
    );
    let list = rpc(server, &one, "tasks/list", json!({})).await;
    assert_eq!(error(&list).0, -32601);
    // Notifications get no answer.
    let quiet = server
        .handle_text(
            &one,
            &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }).to_string(),
        )
        .await;
    assert!(quiet.is_none());
}
