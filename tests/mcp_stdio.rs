//! The stdio transport on an in-memory pipe: an overlong line is refused without being
//! buffered whole and the session goes on; garbage lines get parse errors; a blocked
//! `tasks/result` does not hold up the polls behind it; answers are one line each.

use serde_json::{Value, json};
use std::sync::Arc;
use tasklatch::mcp::server::stdio_negotiated;
use tasklatch::mcp::stdio::{LINE_BYTES_MAX, serve};
use tasklatch::mcp::{Assembly, ServerConfig, Session};
use tasklatch::runtime::{RuntimeConfig, TokioEnv};
use tasklatch::store::{MemoryStore, StoreOptions};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_survives_overlong_and_garbage_lines_and_answers_concurrently() {
    let exports = std::env::temp_dir().join(format!("tasklatch-stdio-{}", std::process::id()));
    let store = Arc::new(MemoryStore::open(&StoreOptions::default()).expect("store"));
    let Assembly { server, runtime } = Assembly::new(
        store,
        exports.clone(),
        Arc::new(TokioEnv),
        ServerConfig::default(),
        RuntimeConfig {
            idle_ms: 5,
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
