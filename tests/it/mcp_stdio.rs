//! The stdio transport on an in-memory pipe: an overlong line is refused without being
//! buffered whole and the session goes on; garbage lines get parse errors; a blocked
//! `tasks/result` does not hold up the polls behind it; answers are one line each. And the
//! 2025-11-25 input round trip: a `tasks/result` blocked on an `input_required` task sends
//! its question to the client as an `elicitation/create` request on stdout, and the
//! client's response line answers it.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use serde_json::{Value, json};
use std::sync::Arc;
use tasklatch::mcp::server::stdio_negotiated;
use tasklatch::mcp::stdio::{LINE_BYTES_MAX, serve};
use tasklatch::mcp::{Assembly, ServerConfig, Session};
use tasklatch::runtime::{RuntimeConfig, TokioEnv};
use tasklatch::store::{MemoryStore, StoreOptions};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// A server and its runtime (`workers` workers) over a fresh memory store, served over an
/// in-memory pipe on this runtime; its exports folder and the client's end of the pipe.
fn stdio_world(
    label: &str,
    workers: usize,
) -> (
    Arc<tasklatch::mcp::Server>,
    Arc<tasklatch::runtime::Runtime>,
    tokio::task::JoinHandle<()>,
    std::path::PathBuf,
    tokio::io::DuplexStream,
) {
    let exports = std::env::temp_dir().join(format!("tasklatch-{label}-{}", std::process::id()));
    let store = Arc::new(MemoryStore::open(&StoreOptions::default()).expect("store"));
    let Assembly { server, runtime } = Assembly::new(
        store,
        exports.clone(),
        Arc::new(TokioEnv),
        ServerConfig::default(),
        RuntimeConfig {
            idle_ms: 5,
            retry_after_ms: 20,
            ..RuntimeConfig::default()
        },
    );
    runtime.start(workers);
    let (client, server_end) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_end);
    let session = Session {
        id: "stdio".into(),
        auth_key: "stdio/requestor".into(),
        negotiated: stdio_negotiated(),
        idempotency_header: None,
    };
    let served = tokio::spawn(serve(
        server.clone(),
        session,
        BufReader::new(server_read),
        server_write,
    ));
    (server, runtime, served, exports, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_survives_overlong_and_garbage_lines_and_answers_concurrently() {
    let (_server, _runtime, served, exports, client) = stdio_world("stdio", 2);
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut lines = BufReader::new(client_read).lines();

    // An overlong line, written in pieces while the server reads.
    let writer = tokio::spawn(async move {
        let chunk = vec![b'x'; 64 * 1024];
        let mut sent = 0;
        while sent <= LINE_BYTES_MAX {
            client_write.write_all(&chunk).await.expect("written");
            sent += chunk.len();
        }
        client_write
            .write_all(b"\nnot json\n")
            .await
            .expect("written");
        client_write
    });
    let first: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(first["error"]["code"], -32700);
    assert!(
        first["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than")
    );
    let second: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(second["error"]["code"], -32700);
    let mut client_write = writer.await.expect("writer");

    // A slow task; its blocked tasks/result must not hold up a ping sent after it.
    let send = |message: Value| format!("{message}\n");
    client_write
        .write_all(send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"export","arguments":{"name":"s","delay_ms":1500},"task":{}}})).as_bytes())
        .await
        .unwrap();
    let created: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    let task_id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    client_write
        .write_all(
            send(
                json!({"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":task_id}}),
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    client_write
        .write_all(send(json!({"jsonrpc":"2.0","id":3,"method":"ping"})).as_bytes())
        .await
        .unwrap();
    // The ping answers first; then the status notification; then the result.
    let mut order = Vec::new();
    while order.len() < 3 {
        let line = lines.next_line().await.unwrap().unwrap();
        let message: Value = serde_json::from_str(&line).unwrap();
        order.push(match (message.get("id"), message.get("method")) {
            (Some(id), _) => format!("answer {id}"),
            (None, Some(method)) => method.as_str().unwrap().to_owned(),
            _ => panic!("{line}"),
        });
    }
    assert_eq!(order[0], "answer 3", "{order:?}");
    assert!(order.contains(&"answer 2".to_owned()), "{order:?}");
    // End of input (a closed stdin).
    client_write.shutdown().await.expect("shut down");
    tokio::time::timeout(std::time::Duration::from_secs(10), served)
        .await
        .expect("the transport ends at end of input")
        .expect("joined");
    let _ = std::fs::remove_dir_all(&exports);
}

/// The client end of an in-memory stdio session: writes lines, reads lines, and keeps
/// what it read but was not yet looking for.
struct Peer {
    lines: tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    stash: Vec<Value>,
}

impl Peer {
    async fn send(&mut self, message: Value) {
        self.write
            .write_all(format!("{message}\n").as_bytes())
            .await
            .expect("written");
    }

    async fn read(&mut self) -> Value {
        let line = tokio::time::timeout(std::time::Duration::from_secs(20), self.lines.next_line())
            .await
            .expect("a line within 20 s")
            .expect("readable")
            .expect("not the end");
        serde_json::from_str(&line).unwrap_or_else(|error| panic!("{error}: {line}"))
    }

    /// The first message (stashed or new) that `wanted` accepts.
    async fn until(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        if let Some(at) = self.stash.iter().position(&wanted) {
            return self.stash.remove(at);
        }
        loop {
            let message = self.read().await;
            if wanted(&message) {
                return message;
            }
            self.stash.push(message);
        }
    }

    /// The response to request `id`.
    async fn response(&mut self, id: Value) -> Value {
        self.until(|message| message["id"] == id && message.get("method").is_none())
            .await
    }

    async fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
        self.response(json!(id)).await
    }

    /// Polls `tasks/get` until the task shows `status`.
    async fn wait_status(&mut self, task_id: &str, status: &str) -> Value {
        for poll in 0..400 {
            let got = self
                .call(1_000 + poll, "tasks/get", json!({ "taskId": task_id }))
                .await;
            if got["result"]["status"] == status {
                return got["result"].clone();
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        panic!("task {task_id} never showed {status}");
    }

    /// The server's requests among the stashed messages.
    fn stashed_requests(&self) -> usize {
        self.stash
            .iter()
            .filter(|message| message.get("method").is_some() && message.get("id").is_some())
            .count()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_asks_the_requestor_during_tasks_result_and_takes_its_response() {
    let (_server, _runtime, served, exports, client) = stdio_world("stdio-input", 2);
    let (client_read, client_write) = tokio::io::split(client);
    let mut peer = Peer {
        lines: BufReader::new(client_read).lines(),
        write: client_write,
        stash: Vec::new(),
    };
    let initialized = peer
        .call(
            1,
            "initialize",
            json!({ "protocolVersion": "2025-11-25", "capabilities": { "elicitation": {} },
                    "clientInfo": { "name": "test", "version": "1" } }),
        )
        .await;
    assert_eq!(initialized["result"]["protocolVersion"], "2025-11-25");

    an_accepted_question_is_asked_once_and_exports(&mut peer, &exports).await;
    a_declined_question_fails_the_task(&mut peer, &exports).await;

    peer.write.shutdown().await.expect("shut down");
    tokio::time::timeout(std::time::Duration::from_secs(10), served)
        .await
        .expect("the transport ends at end of input")
        .expect("joined");
    let _ = std::fs::remove_dir_all(&exports);
}

/// Accepted: the question arrives on the blocked tasks/result's stream, once.
async fn an_accepted_question_is_asked_once_and_exports(
    peer: &mut Peer,
    exports: &std::path::Path,
) {
    let created = peer
        .call(
            2,
            "tools/call",
            json!({ "name": "export", "arguments": { "name": "kept", "delay_ms": 0, "confirm": true }, "task": {} }),
        )
        .await;
    let task_id = created["result"]["task"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();
    let waiting = peer.wait_status(&task_id, "input_required").await;
    assert!(
        waiting["statusMessage"]
            .as_str()
            .is_some_and(|text| text.contains("confirm")),
        "{waiting}"
    );
    peer.send(json!({ "jsonrpc": "2.0", "id": 100, "method": "tasks/result", "params": { "taskId": task_id } }))
        .await;
    let ask = peer
        .until(|message| message["method"] == "elicitation/create")
        .await;
    assert_eq!(
        ask["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        task_id.as_str(),
        "{ask}"
    );
    assert_eq!(
        ask["params"]["requestedSchema"]["properties"]["confirm"]["type"], "boolean",
        "{ask}"
    );
    assert!(ask["id"].is_string(), "{ask}");
    // Responses nobody asked for: ignored, the task still waits.
    peer.send(json!({ "jsonrpc": "2.0", "id": "tasklatch-ask-nobody", "result": { "action": "accept", "content": { "confirm": true } } }))
        .await;
    peer.send(json!({ "jsonrpc": "2.0", "id": 4242, "error": { "code": -1, "message": "no" } }))
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let still = peer
        .call(3, "tasks/get", json!({ "taskId": task_id }))
        .await;
    assert_eq!(still["result"]["status"], "input_required", "{still}");
    peer.send(json!({ "jsonrpc": "2.0", "id": ask["id"], "result": { "action": "accept", "content": { "confirm": true } } }))
        .await;
    let answer = peer.response(json!(100)).await;
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(
        answer["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        task_id.as_str()
    );
    assert_eq!(peer.stashed_requests(), 0, "asked once: {:?}", peer.stash);
    assert!(exports.join(format!("{task_id}.json")).is_file());
    // The same response again: nobody waits for it any more.
    peer.send(json!({ "jsonrpc": "2.0", "id": ask["id"], "result": { "action": "decline" } }))
        .await;
}

/// Declined (a JSON-RPC error response counts as a decline): no file, an isError result.
async fn a_declined_question_fails_the_task(peer: &mut Peer, exports: &std::path::Path) {
    let created = peer
        .call(
            4,
            "tools/call",
            json!({ "name": "export", "arguments": { "name": "dropped", "delay_ms": 0, "confirm": true }, "task": {} }),
        )
        .await;
    let declined_id = created["result"]["task"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();
    peer.wait_status(&declined_id, "input_required").await;
    peer.send(json!({ "jsonrpc": "2.0", "id": 200, "method": "tasks/result", "params": { "taskId": declined_id } }))
        .await;
    let ask = peer
        .until(|message| message["method"] == "elicitation/create")
        .await;
    assert_eq!(
        ask["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        declined_id.as_str()
    );
    peer.send(json!({ "jsonrpc": "2.0", "id": ask["id"], "error": { "code": -32603, "message": "the user closed the form" } }))
        .await;
    let answer = peer.response(json!(200)).await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"],
        "export cancelled by the requestor"
    );
    let failed = peer
        .call(5, "tasks/get", json!({ "taskId": declined_id }))
        .await;
    assert_eq!(failed["result"]["status"], "failed", "{failed}");
    assert!(!exports.join(format!("{declined_id}.json")).exists());
    assert_eq!(peer.stashed_requests(), 0, "asked once: {:?}", peer.stash);
}

/// A `tasks/result` blocked on a task that goes on ends with its client: once stdin ends
/// and the grace for answers on their way has passed, the transport returns and no wait
/// is left in the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocked_calls_end_when_stdin_ends() {
    let (server, runtime, served, _exports, client) = stdio_world("stdio-end", 1);
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut lines = BufReader::new(client_read).lines();
    let create = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "export", "arguments": { "name": "long", "delay_ms": 600_000 }, "task": {} } });
    client_write
        .write_all(format!("{create}\n").as_bytes())
        .await
        .expect("written");
    let created: Value = loop {
        let line = lines.next_line().await.expect("read").expect("a line");
        let message: Value = serde_json::from_str(&line).expect("json");
        if message["id"] == 1 {
            break message;
        }
    };
    let task_id = created["result"]["task"]["taskId"]
        .as_str()
        .expect("id")
        .to_owned();
    let result = json!({ "jsonrpc": "2.0", "id": 2, "method": "tasks/result", "params": { "taskId": task_id } });
    client_write
        .write_all(format!("{result}\n").as_bytes())
        .await
        .expect("written");
    let started = std::time::Instant::now();
    while server.waits_open() != 1 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "never blocked"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    // The client goes away: stdin ends (and nobody reads stdout any more).
    drop(client_write);
    drop(lines);
    tokio::time::timeout(std::time::Duration::from_secs(5), served)
        .await
        .expect("the transport returns after its grace")
        .expect("served");
    assert_eq!(server.waits_open(), 0, "a wait outlived its client");
    runtime.shut_down();
}
