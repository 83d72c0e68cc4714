//! The 2026-07-28 era over stdio, beside 2025-11-25 on the same connection: the era is
//! each request's (its `_meta` envelope), never the connection's; a task created in one
//! era is answered in that era's shapes; `subscriptions/listen` streams on stdout.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use serde_json::{Value, json};
use std::sync::Arc;
use tasklatch::mcp::server::stdio_negotiated;
use tasklatch::mcp::stdio::serve;
use tasklatch::mcp::{Assembly, ServerConfig, Session};
use tasklatch::runtime::{RuntimeConfig, TokioEnv};
use tasklatch::store::{MemoryStore, StoreOptions};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

fn envelope(params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": { "io.modelcontextprotocol/tasks": {} }
        },
    });
    params
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_eras_on_one_stdio_connection() {
    let (_runtime, served, mut client) = serve_with_conformance_tools();
    let (modern_id, legacy_id) = one_task_in_each_era(&mut client).await;
    a_listen_streams_only_its_eras_task(&mut client, &modern_id, &legacy_id).await;
    each_task_answers_in_its_eras_shapes(&mut client, &modern_id, &legacy_id).await;
    client.write.shutdown().await.expect("end of input");
    tokio::time::timeout(std::time::Duration::from_secs(10), served)
        .await
        .expect("the end of input ends the session")
        .expect("served");
}

/// The client end of the stdio connection.
struct Client {
    lines: tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
}

impl Client {
    async fn send(&mut self, message: Value) {
        self.write
            .write_all(format!("{message}\n").as_bytes())
            .await
            .expect("written");
    }

    /// Reads lines until the answer to `id` (notifications met on the way are returned too).
    async fn next(&mut self, id: i64) -> (Value, Vec<Value>) {
        let mut seen = Vec::new();
        loop {
            let line =
                tokio::time::timeout(std::time::Duration::from_secs(10), self.lines.next_line())
                    .await
                    .expect("an answer within 10 s")
                    .expect("readable")
                    .expect("a line");
            let message: Value = serde_json::from_str(&line).expect("one JSON message per line");
            if message["id"] == id && message.get("method").is_none() {
                return (message, seen);
            }
            seen.push(message);
        }
    }
}

/// A server with the conformance tools and its runtime, served over an in-memory pipe;
/// the runtime, the serving task and the client's end.
fn serve_with_conformance_tools() -> (
    Arc<tasklatch::runtime::Runtime>,
    tokio::task::JoinHandle<()>,
    Client,
) {
    let exports =
        std::env::temp_dir().join(format!("tasklatch-stdio-modern-{}", std::process::id()));
    let store = Arc::new(MemoryStore::open(&StoreOptions::default()).expect("store"));
    let Assembly { server, runtime } = Assembly::new(
        store,
        exports,
        Arc::new(TokioEnv),
        ServerConfig {
            conformance_tools: true,
            ..ServerConfig::default()
        },
        RuntimeConfig {
            idle_ms: 5,
            retry_after_ms: 20,
            ..RuntimeConfig::default()
        },
    );
    runtime.start(2);
    let (client, server_end) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_end);
    let session = Session {
        id: "stdio".into(),
        auth_key: "stdio/requestor".into(),
        negotiated: stdio_negotiated(),
        idempotency_header: None,
    };
    let served = tokio::spawn(serve(
        server,
        session,
        BufReader::new(server_read),
        server_write,
    ));
    let (client_read, client_write) = tokio::io::split(client);
    let client = Client {
        lines: BufReader::new(client_read).lines(),
        write: client_write,
    };
    (runtime, served, client)
}

/// Creates a task in each era; returns the 2026-07-28 id and the 2025-11-25 id.
async fn one_task_in_each_era(client: &mut Client) -> (String, String) {
    // 2026-07-28: server-directed creation, flat result.
    client
        .send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
                "params": envelope(json!({"name":"failing_job","arguments":{}}))}))
        .await;
    let (created, _) = client.next(1).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let modern_id = created["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    // 2025-11-25 on the same connection: the `task` param, the nested result.
    client
        .send(json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
                "params":{"name":"failing_job","arguments":{},"task":{}}}))
        .await;
    let (legacy, _) = client.next(2).await;
    let legacy_id = legacy["result"]["task"]["taskId"]
        .as_str()
        .expect("nested task")
        .to_owned();
    assert!(legacy["result"].get("resultType").is_none(), "{legacy}");
    (modern_id, legacy_id)
}

/// A listen on stdout: acknowledged, then notifications, then its answer.
async fn a_listen_streams_only_its_eras_task(
    client: &mut Client,
    modern_id: &str,
    legacy_id: &str,
) {
    client
        .send(
            json!({"jsonrpc":"2.0","id":3,"method":"subscriptions/listen",
                "params": envelope(json!({"notifications":{"taskIds":[modern_id, legacy_id]}}))}),
        )
        .await;
    let (closing, notices) = client.next(3).await;
    assert_eq!(closing["result"]["resultType"], "complete", "{closing}");
    assert_eq!(
        notices[0]["method"],
        "notifications/subscriptions/acknowledged"
    );
    assert_eq!(
        notices[0]["params"]["notifications"]["taskIds"],
        json!([modern_id]),
        "the 2025-11-25 task is not this era's"
    );
    let last = notices
        .iter()
        .rev()
        .find(|n| n["method"] == "notifications/tasks")
        .expect("a task notice");
    assert_eq!(
        last["params"]["status"], "completed",
        "a tool error completes a 2026-07-28 task: {last}"
    );
    assert_eq!(last["params"]["result"]["isError"], true);
}

async fn each_task_answers_in_its_eras_shapes(
    client: &mut Client,
    modern_id: &str,
    legacy_id: &str,
) {
    client.send(json!({"jsonrpc":"2.0","id":4,"method":"tasks/get","params": envelope(json!({"taskId": modern_id}))})).await;
    let (got, _) = client.next(4).await;
    assert_eq!(
        (
            got["result"]["status"].as_str(),
            got["result"]["resultType"].as_str()
        ),
        (Some("completed"), Some("complete")),
        "{got}"
    );
    client
        .send(
            json!({"jsonrpc":"2.0","id":5,"method":"tasks/result","params":{"taskId": legacy_id}}),
        )
        .await;
    let (result, _) = client.next(5).await;
    assert_eq!(result["result"]["isError"], true, "{result}");
    client
        .send(json!({"jsonrpc":"2.0","id":6,"method":"tasks/get","params":{"taskId": legacy_id}}))
        .await;
    let (legacy_done, _) = client.next(6).await;
    assert_eq!(
        legacy_done["result"]["status"], "failed",
        "a tool error fails a 2025-11-25 task: {legacy_done}"
    );
    // A 2026-07-28 request does not see the 2025-11-25 task.
    client.send(json!({"jsonrpc":"2.0","id":7,"method":"tasks/get","params": envelope(json!({"taskId": legacy_id}))})).await;
    let (hidden, _) = client.next(7).await;
    assert_eq!(hidden["error"]["code"], -32602, "{hidden}");
}
