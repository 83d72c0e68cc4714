//! Restart recovery, for real: the HTTP server is SIGKILLed in the middle of an `export`
//! and restarted on the same SQLite file and port; the same client keeps polling the same
//! task id (opening a new session when the old one is gone, as the transport spec says)
//! until it sees the task completed — and exactly one export was committed.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tasklatch_testkit::http::{initialize, rpc};
use tasklatch_testkit::process::{Killed, spawn_listening_within};

const TOKEN: &str = "token-restart-1";

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// Starts `tasklatch serve --http` on `port` over `folder/tasks.db`; waits until it listens.
fn start(folder: &Path, port: u16) -> Killed {
    let tokens = folder.join("tokens.json");
    std::fs::write(
        &tokens,
        format!(r#"{{"tokens": {{"{TOKEN}": "tenant-a/alice"}}}}"#),
    )
    .expect("tokens");
    let command = || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tasklatch"));
        command
            .args(["serve", "--http", &format!("127.0.0.1:{port}"), "--tokens"])
            .arg(&tokens)
            .arg("--store")
            .arg(format!("sqlite:{}", folder.join("tasks.db").display()))
            // A killed server's leased task is delivered again after this.
            .args(["--lease-ms", "1000", "--workers", "2"])
            .stderr(Stdio::null());
        command
    };
    spawn_listening_within(command, Duration::from_secs(20))
        .unwrap_or_else(|error| panic!("port {port}: {error}"))
        .0
}

fn call(address: &str, session: &mut String, method: &str, params: Value) -> Option<Value> {
    let message = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let reply = rpc(address, TOKEN, Some(session), &message).ok()?;
    match reply.status {
        200 => Some(reply.json()),
        // The restarted server does not know the old session: open a new one.
        404 => {
            *session = initialize(address, TOKEN).ok()?;
            None
        }
        other => panic!("{method}: HTTP {other}: {}", reply.body),
    }
}

#[test]
fn a_killed_server_finishes_the_export_once_after_restart() {
    for (round, kill_after_ms) in [300u64, 800, 1_300].into_iter().enumerate() {
        let folder = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("restart-{round}"));
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder).expect("scratch");
        let exports = folder.join("tasks.db.exports");
        let port = free_port();
        let address = format!("127.0.0.1:{port}");
        let mut server = start(&folder, port);
        let mut session = initialize(&address, TOKEN).expect("initialize");
        let created = call(
            &address,
            &mut session,
            "tools/call",
            json!({ "name": "export", "arguments": { "name": "restart", "delay_ms": 1_500 }, "task": { "ttl": 600_000 } }),
        )
        .expect("created");
        let task_id = created["result"]["task"]["taskId"]
            .as_str()
            .expect("task id")
            .to_owned();
        std::thread::sleep(Duration::from_millis(kill_after_ms));
        let polled = call(
            &address,
            &mut session,
            "tasks/get",
            json!({ "taskId": task_id }),
        )
        .expect("polled");
        assert_eq!(
            polled["result"]["status"], "working",
            "round {round}: killed mid-export"
        );
        assert!(
            !exports.join(format!("{task_id}.json")).exists(),
            "round {round}: not yet exported"
        );

        server.kill_now();
        let mut server = start(&folder, port);

        let deadline = Instant::now() + Duration::from_secs(30);
        let mut seen = Vec::new();
        loop {
            assert!(
                Instant::now() < deadline,
                "round {round}: never completed; saw {seen:?}"
            );
            if let Some(answer) = call(
                &address,
                &mut session,
                "tasks/get",
                json!({ "taskId": task_id }),
            ) {
                let status = answer["result"]["status"]
                    .as_str()
                    .unwrap_or("?")
                    .to_owned();
                if seen.last() != Some(&status) {
                    seen.push(status.clone());
                }
                if status == "completed" {
                    break;
                }
                assert_eq!(status, "working", "round {round}: {answer}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let result = call(
            &address,
            &mut session,
            "tasks/result",
            json!({ "taskId": task_id }),
        )
        .expect("result");
        let text = result["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(
            text.contains(&format!("export-{task_id}")),
            "round {round}: {result}"
        );
        let files: Vec<String> = std::fs::read_dir(&exports)
            .expect("exports folder")
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| !name.starts_with('.'))
            .collect();
        assert_eq!(
            files,
            vec![format!("{task_id}.json")],
            "round {round}: exactly one export"
        );
        eprintln!(
            "round {round}: killed {kill_after_ms} ms into the export; after restart saw {seen:?}; one export"
        );
        server.kill_now();
    }
}
