//! Restart recovery in the 2026-07-28 era, for real, as `tests/it/mcp_restart.rs` does it for
//! 2025-11-25: a `tasklatch serve --http` process is SIGKILLed and restarted on the same
//! SQLite file and port, and the client, which has no session in this era, keeps asking
//! `tasks/get` for the same task id:
//!
//! - an `export` killed 300, 800 and 1,300 ms into its 1.5 s of work is `working`, then
//!   `completed` with its result inlined, exported exactly once, and still a task of its era;
//! - a `confirm_delete` killed while it waits for input still asks the same question after
//!   the restart (and after its outbox entry's lease ran out), and `tasks/update` answers it.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tasklatch::contract::TaskStatus;
use tasklatch::store::{SqliteOptions, SqliteStore, StoreOptions, TaskStore};
use tasklatch_testkit::http::request;
use tasklatch_testkit::process::{Killed, spawn_listening_within};

const TOKEN: &str = "token-restart-1";
const LEASE_MS: u64 = 1_000;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// A running `tasklatch serve`, SIGKILLed when dropped (so a failing test leaves none).
/// Starts `tasklatch serve --http` on `port` over `folder/tasks.db` with `extra` arguments;
/// waits until it listens.
fn start(folder: &Path, port: u16, extra: &[&str]) -> Killed {
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
            .args(["--lease-ms", &LEASE_MS.to_string(), "--workers", "2"])
            .args(extra)
            .stderr(Stdio::null());
        command
    };
    spawn_listening_within(command, Duration::from_secs(20))
        .unwrap_or_else(|error| panic!("port {port}: {error}"))
        .0
}

fn scratch(name: &str) -> PathBuf {
    let folder = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).expect("scratch");
    folder
}

/// A 2026-07-28 request as a conforming client sends it (envelope in `params._meta`,
/// routing headers); its `result`, which must be there.
fn modern(address: &str, method: &str, params: Value) -> Value {
    let mut params = params;
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
        .expect("tools/call and tasks/* name their target")
        .to_owned();
    let bearer = format!("Bearer {TOKEN}");
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
        ("Mcp-Name", name.as_str()),
        ("Authorization", bearer.as_str()),
    ];
    let body = json!({ "jsonrpc": "2.0", "id": 7, "method": method, "params": params });
    let reply = request(
        address,
        "POST",
        "/mcp",
        &headers,
        body.to_string().as_bytes(),
    )
    .expect("answered");
    assert_eq!(reply.status, 200, "{method}: {}", reply.body);
    let answer = reply.json();
    assert_eq!(answer["id"], 7, "{answer}");
    answer["result"].clone()
}

fn get(address: &str, task_id: &str) -> Value {
    let task = modern(address, "tasks/get", json!({ "taskId": task_id }));
    assert_eq!(task["taskId"], task_id, "{task}");
    assert_eq!(task["resultType"], "complete", "{task}");
    task
}

/// Polls `tasks/get` until the task is terminal (at most 30 s); every status seen on the
/// way must be `working`. Returns the terminal task and the statuses seen, without repeats.
fn poll_to_terminal(address: &str, task_id: &str, what: &str) -> (Value, Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen: Vec<String> = Vec::new();
    loop {
        let task = get(address, task_id);
        let status = task["status"].as_str().unwrap_or("?").to_owned();
        if seen.last() != Some(&status) {
            seen.push(status.clone());
        }
        match status.as_str() {
            "working" => {}
            "completed" | "failed" | "cancelled" => return (task, seen),
            _ => panic!("{what}: {task}"),
        }
        assert!(
            Instant::now() < deadline,
            "{what}: never terminal; saw {seen:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The task as stored, read from the database once no server holds it.
fn stored(folder: &Path, task_id: &str) -> tasklatch::contract::TaskRecord {
    let store = SqliteStore::open(
        &SqliteOptions::new(folder.join("tasks.db")),
        &StoreOptions::default(),
    )
    .expect("the store opens");
    store
        .read(task_id)
        .expect("read")
        .expect("the task is kept")
}

#[test]
fn a_killed_server_finishes_a_2026_export_once_after_restart() {
    for (round, kill_after_ms) in [300u64, 800, 1_300].into_iter().enumerate() {
        let folder = scratch(&format!("restart-modern-{round}"));
        let exports = folder.join("tasks.db.exports");
        let port = free_port();
        let address = format!("127.0.0.1:{port}");
        let mut server = start(&folder, port, &[]);
        let created = modern(
            &address,
            "tools/call",
            json!({ "name": "export", "arguments": { "name": "restart", "delay_ms": 1_500 } }),
        );
        assert_eq!(created["resultType"], "task", "round {round}: {created}");
        assert_eq!(created["status"], "working", "round {round}: {created}");
        let task_id = created["taskId"].as_str().expect("taskId").to_owned();

        std::thread::sleep(Duration::from_millis(kill_after_ms));
        let polled = get(&address, &task_id);
        assert_eq!(
            polled["status"], "working",
            "round {round}: killed mid-export: {polled}"
        );
        assert!(
            polled.get("result").is_none() && polled.get("error").is_none(),
            "round {round}: {polled}"
        );
        assert!(
            !exports.join(format!("{task_id}.json")).exists(),
            "round {round}: not yet exported"
        );

        server.kill_now();
        let mut server = start(&folder, port, &[]);

        let (done, seen) = poll_to_terminal(&address, &task_id, &format!("round {round}"));
        assert_eq!(done["status"], "completed", "round {round}: {done}");
        assert_eq!(seen.first().map(String::as_str), Some("working"));
        let result = &done["result"];
        assert_eq!(result["isError"], false, "round {round}: {done}");
        assert_eq!(
            result["structuredContent"]["export"],
            format!("export-{task_id}"),
            "round {round}: {done}"
        );
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(
            text.contains(&format!("export-{task_id}")),
            "round {round}: {done}"
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

        server.kill_now();
        let record = stored(&folder, &task_id);
        assert_eq!(record.era.as_str(), "2026-07-28", "round {round}");
        assert_eq!(record.status, TaskStatus::Completed, "round {round}");
        eprintln!(
            "round {round}: killed {kill_after_ms} ms into the export; after restart saw {seen:?}; one export"
        );
    }
}

#[test]
fn a_task_waiting_for_input_keeps_its_question_across_a_restart() {
    let folder = scratch("restart-modern-input");
    let port = free_port();
    let address = format!("127.0.0.1:{port}");
    let mut server = start(&folder, port, &["--conformance-tools"]);
    let created = modern(
        &address,
        "tools/call",
        json!({ "name": "confirm_delete", "arguments": { "filename": "restart.txt" } }),
    );
    assert_eq!(created["resultType"], "task", "{created}");
    let task_id = created["taskId"].as_str().expect("taskId").to_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    let asked = loop {
        let task = get(&address, &task_id);
        if task["status"] == "input_required" {
            break task;
        }
        assert_eq!(task["status"], "working", "{task}");
        assert!(Instant::now() < deadline, "never asked: {task}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        asked["inputRequests"]["confirm"]["params"]["message"], "Delete restart.txt?",
        "{asked}"
    );

    server.kill_now();
    let mut server = start(&folder, port, &["--conformance-tools"]);

    // The same question, the same task (version, timestamps), right after the restart and
    // after the killed server's lease ran out and the task was delivered again.
    let watched = Instant::now();
    let mut looks = 0;
    while looks == 0 || watched.elapsed() < Duration::from_millis(2 * LEASE_MS + 500) {
        let task = get(&address, &task_id);
        assert_eq!(task, asked, "after the restart, look {looks}");
        looks += 1;
        std::thread::sleep(Duration::from_millis(100));
    }

    let ack = modern(
        &address,
        "tasks/update",
        json!({ "taskId": task_id, "inputResponses": {
            "confirm": { "action": "accept", "content": { "confirm": true } } } }),
    );
    assert_eq!(ack["resultType"], "complete", "{ack}");
    let (done, seen) = poll_to_terminal(&address, &task_id, "after tasks/update");
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"], "Deleted restart.txt",
        "{done}"
    );
    assert_eq!(done["result"]["isError"], false, "{done}");

    server.kill_now();
    let record = stored(&folder, &task_id);
    assert_eq!(record.era.as_str(), "2026-07-28");
    assert_eq!(
        record
            .input_responses
            .as_ref()
            .and_then(|answers| answers.get("confirm")),
        Some(&json!({ "action": "accept", "content": { "confirm": true } }))
    );
    eprintln!(
        "input_required across a restart: {looks} looks unchanged, then {seen:?} after tasks/update"
    );
}
