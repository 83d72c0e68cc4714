//! SIGTERM drains `tasklatch serve --http`, with real processes on SQLite: the server stops
//! admitting (`tools/call` answers `-32030`, HTTP 503) and ends its blocked calls with the
//! same error at once, still answers polls, lets the tools it is running reach their
//! completion write for up to `--drain-ms`, then exits 0; what it could not finish is
//! delivered again after the lease, and a restarted server completes it, once.
// Once per CI run is enough: the plain command runs it, `--all-features` (mutants) skips it.
#![cfg(not(feature = "mutants"))]

use crate::support;

use support::serve_process;

use support::http_client;

use serde_json::json;
use serve_process::{ServeClient, ServeProcess, stored_status};
use std::path::Path;
use std::time::{Duration, Instant};
use tasklatch::contract::TaskStatus;

const TOKEN: &str = "token-drain-0001";
const DRAIN_MS: u64 = 3_000;

fn start(store: &str, exports: &Path, folder: &Path) -> ServeProcess {
    let drain_ms = DRAIN_MS.to_string();
    ServeProcess::start(
        support::TASKLATCH,
        store,
        exports,
        folder,
        &[(TOKEN, "tenant-a/alice")],
        &[
            "--workers",
            "2",
            "--lease-ms",
            "1000",
            "--drain-ms",
            &drain_ms,
        ],
    )
}

fn export_files(exports: &Path, task_id: &str) -> usize {
    std::fs::read_dir(exports)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|entry| entry.file_name().to_string_lossy() == format!("{task_id}.json"))
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn sigterm_drains_within_its_bound_and_a_restart_finishes_the_rest() {
    let scratch = support::Scratch::new("serve-drain");
    let store = format!("sqlite:{}", scratch.join("tasks.db").display());
    let exports = scratch.join("exports");
    let mut serve = start(&store, &exports, &scratch.path);
    let client = ServeClient::of(&serve.address, TOKEN);
    // One export that finishes inside the drain, one that cannot.
    let short = client.export(1_500);
    let long = client.export(DRAIN_MS + 3_000);
    let blocked = std::thread::spawn({
        let (address, session, long) =
            (client.address.clone(), client.session.clone(), long.clone());
        move || {
            // A JSON answer: its status is chosen when the call ends (an SSE answer's is
            // 200 from the start, and the same error comes as its last event).
            let message = json!({ "jsonrpc": "2.0", "id": 1, "method": "tasks/result", "params": { "taskId": long } });
            let reply = http_client::rpc_accepting(
                &address,
                TOKEN,
                Some(&session),
                &message,
                "application/json",
                &[],
            )
            .expect("answered");
            (Instant::now(), reply.status, reply.json())
        }
    });
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(client.status(&short), "working");
    assert_eq!(client.status(&long), "working");

    let signalled = Instant::now();
    serve.terminate();
    let (answered, status, answer) = blocked.join().expect("the blocked call");
    assert_eq!(
        (status, answer["error"]["code"].as_i64()),
        (503, Some(-32030)),
        "{answer}"
    );
    assert_eq!(answer["error"]["data"]["taskId"], long.as_str());
    let ended_ms = answered.duration_since(signalled).as_millis();
    assert!(
        ended_ms < 1_000,
        "the blocked call ended {ended_ms} ms after SIGTERM"
    );
    // Nothing new is admitted; polls still answer.
    let refused = client.reply(
        "tools/call",
        json!({ "name": "export", "arguments": { "name": "late" }, "task": {} }),
    );
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert_eq!(refused.header("retry-after"), Some("1"));
    assert_eq!(client.status(&short), "working");

    let exit = serve
        .exited(Duration::from_millis(DRAIN_MS + 3_000))
        .expect("the drain is bounded");
    let drained_ms = signalled.elapsed().as_millis();
    assert!(exit.success(), "{exit:?}: {}", serve.said());
    let said = serve.said();
    assert!(said.contains("SIGTERM: draining"), "{said}");
    assert!(said.contains("drained; 1 tool runs unfinished"), "{said}");
    assert!(
        drained_ms >= u128::from(DRAIN_MS) - 500,
        "exited after {drained_ms} ms: it waited for nothing"
    );
    // The short export reached its completion write during the drain; the long one is
    // still working, its outbox entry leased.
    assert_eq!(stored_status(&store, &short), TaskStatus::Completed);
    assert_eq!(export_files(&exports, &short), 1);
    assert_eq!(stored_status(&store, &long), TaskStatus::Working);
    serve_process::report(
        "drain",
        &format!(
            "drain: blocked call ended {ended_ms} ms after SIGTERM, process exited after {drained_ms} ms (bound {DRAIN_MS} ms)"
        ),
    );

    // The restart picks up the rest.
    let serve = start(&store, &exports, &scratch.path);
    let client = ServeClient::of(&serve.address, TOKEN);
    let status = client.terminal_within(&long, Duration::from_millis(100), Duration::from_secs(30));
    assert_eq!(status, "completed");
    assert_eq!(export_files(&exports, &long), 1, "exported once");
    assert_eq!(export_files(&exports, &short), 1, "not exported again");
}

#[test]
fn an_idle_server_exits_at_once_on_sigterm() {
    let scratch = support::Scratch::new("serve-drain-idle");
    let store = format!("sqlite:{}", scratch.join("tasks.db").display());
    let mut serve = start(&store, &scratch.join("exports"), &scratch.path);
    let signalled = Instant::now();
    serve.terminate();
    let exit = serve.exited(Duration::from_secs(5)).expect("exits");
    assert!(exit.success(), "{exit:?}");
    let took = signalled.elapsed();
    assert!(took < Duration::from_secs(2), "an idle drain took {took:?}");
}
