//! The probe against servers we did not write: the TypeScript SDK 1.32.2 task server
//! (`tests/interop/ts/reference-server.mjs`: `McpServer`, `InMemoryTaskStore`, the SDK's
//! stdio and Streamable HTTP transports, as its docs show) and the Python SDK 1.30.0 one
//! (`tests/probe/python_sdk_server.py`: `enable_tasks()`, `run_task`), both installed
//! from pinned lock files, and a 2026-07-28 one on the Rust SDK rmcp 3.11.0
//! (`tests/probe/rmcp_server.rs`: its `TaskManager`; a dev-dependency). Each probe is
//! rerun once with the same seed and its findings must recur: a finding is the server's
//! behaviour, reproduced, not a flake of the probe (the same checks find nothing against
//! tasklatch: tests/it/probe_tasklatch.rs).
//!
//! Environment variables read here:
//! - `TASKLATCH_REQUIRE_INTEROP=1` — fail, instead of skipping loudly, when an SDK is not
//!   installed (`.ci/run` installs both and sets this).
//! - `TASKLATCH_INTEROP_PYTHON` — the Python that has `mcp==1.30.0` (default:
//!   `target/interop-venv/bin/python`, where `.ci/run` installs the lock file).
//!
//! Plain builds only: the probe does not change with features, and the README's second
//! test command (`--all-features`) would only repeat these slow tests.
#![cfg(not(feature = "mutants"))]

use crate::support;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;
use tasklatch::probe::{self, Config, Target, Verdict};

fn ts_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/interop/ts")
}

/// Skips loudly, or fails under `TASKLATCH_REQUIRE_INTEROP=1`.
fn installed() -> bool {
    if ts_dir()
        .join("node_modules/@modelcontextprotocol/sdk/package.json")
        .is_file()
    {
        return true;
    }
    let what = "the TypeScript SDK is not installed (npm ci --prefix tests/interop/ts)";
    if std::env::var("TASKLATCH_REQUIRE_INTEROP").is_ok_and(|v| v == "1") {
        panic!("TASKLATCH_REQUIRE_INTEROP=1 but {what}");
    }
    eprintln!("\n*** probe interop test NOT RUN: {what} ***\n");
    false
}

fn probe_twice(target: Target) -> BTreeSet<String> {
    let mut config = Config::new(target);
    config.tool = Some("export".to_owned());
    config.args = Some(serde_json::json!({ "delay_ms": 1000 }));
    config.request_timeout = Duration::from_secs(3);
    config.task_timeout = Duration::from_secs(30);
    config.workload = Some(tasklatch::probe::workload::Workload {
        budget: Duration::from_secs(3),
        seed: 11,
        clients_per_identity: 2,
        kill: false,
        durable: false,
    });
    let runtime = support::tokio_runtime();
    let first = runtime
        .block_on(probe::run_with_reruns(&config, 1))
        .expect("reached");
    let failing = support::probe_checks(&first, Verdict::Fail);
    // Every finding failed again in the rerun (same seed).
    assert_eq!(recurred(&first), failing, "a finding that did not recur");
    failing
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|item| (*item).to_owned()).collect()
}

#[test]
fn typescript_sdk_task_server_over_stdio() {
    if !installed() {
        return;
    }
    let findings = probe_twice(Target::Stdio {
        program: "node".to_owned(),
        args: vec![
            ts_dir().join("reference-server.mjs").display().to_string(),
            "--stdio".to_owned(),
            "--quiet".to_owned(),
        ],
    });
    // The SDK's stdio transport drops an unparsable line without answering; its schema
    // validation answers a wrong or missing taskId as an internal error (-32603), where
    // the spec asks -32602; a `required` tool called without a task answers a successful
    // CallToolResult with isError (the spec: -32601), a `forbidden` one called as a task
    // -32602 (the spec: SHOULD -32601); and it serves tasks/list where the server did not
    // declare tasks.list.
    assert_eq!(
        findings,
        set(&[
            "2025-11-25 hostile.forbidden-tool-called-as-task",
            "2025-11-25 hostile.list-served-undeclared",
            "2025-11-25 hostile.required-tool-called-without-task",
            "2025-11-25 shapes.get.task-id-missing",
            "2025-11-25 shapes.get.task-id-wrong-type",
            "2025-11-25 shapes.jsonrpc.malformed-json",
        ])
    );
}

#[test]
fn typescript_sdk_task_server_over_http() {
    if !installed() {
        return;
    }
    let (server, port) = support::spawn_listening(
        Command::new("node")
            .arg(ts_dir().join("reference-server.mjs"))
            .args(["--port", "0", "--quiet"]),
    );
    let findings = probe_twice(Target::Http {
        url: format!("http://127.0.0.1:{port}/mcp"),
        // The server ignores tokens; its tasks are scoped by session, and each identity
        // opens its own: the cross-identity checks hold.
        tokens: vec![
            ("a".to_owned(), "token-a".to_owned()),
            ("b".to_owned(), "token-b".to_owned()),
        ],
        start: None,
    });
    drop(server);
    assert_eq!(
        findings,
        set(&[
            "2025-11-25 hostile.forbidden-tool-called-as-task",
            "2025-11-25 hostile.required-tool-called-without-task",
            "2025-11-25 shapes.get.task-id-missing",
            "2025-11-25 shapes.get.task-id-wrong-type",
        ])
    );
}

fn python() -> Option<PathBuf> {
    support::interop_python()
}

/// The Python SDK 1.30.0 task server as its docs show it (`enable_tasks`, `run_task`).
/// Some findings depend on timing (what a dying process takes with it); these recur every
/// time: Task objects without `ttl`, a made-up list cursor accepted, a `forbidden` tool run
/// as if the task param were absent, malformed JSON unanswered, and the process dying
/// when a cancelled task's work finishes (`ValueError: Cannot transition from terminal
/// status 'cancelled'` escapes `run_task`).
#[test]
fn python_sdk_task_server_over_stdio() {
    let Some(python) = python() else {
        return;
    };
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/probe/python_sdk_server.py");
    let mut config = Config::new(Target::Stdio {
        program: python.display().to_string(),
        args: vec![script.display().to_string()],
    });
    config.tool = Some("export".to_owned());
    config.args = Some(serde_json::json!({ "delay_ms": 500 }));
    config.request_timeout = Duration::from_secs(3);
    config.task_timeout = Duration::from_secs(20);
    let report = support::tokio_runtime()
        .block_on(probe::run_with_reruns(&config, 1))
        .expect("reached");
    let recurred = recurred(&report);
    let always = set(&[
        "2025-11-25 hostile.forbidden-tool-called-as-task",
        "2025-11-25 process.stayed-up",
        "2025-11-25 shapes.create.task-fields",
        "2025-11-25 shapes.get.task-fields",
        "2025-11-25 shapes.jsonrpc.malformed-json",
        "2025-11-25 shapes.list.bad-cursor",
        "2025-11-25 shapes.list.page-shape",
    ]);
    assert_recurred(&always, &recurred);
}

/// The same Python server over Streamable HTTP (`StreamableHTTPSessionManager`, stateful
/// sessions under uvicorn), two identities (tokens are ignored; sessions keep them apart).
/// Beyond the stdio findings: an unknown method answers `-32602`, malformed JSON an HTTP 400
/// without a JSON-RPC body, and a cancelled task's `tasks/result` a success.
#[test]
fn python_sdk_task_server_over_http() {
    let Some(python) = python() else {
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/probe/python_sdk_server.py");
    let server = support::Killed(
        Command::new(&python)
            .arg(&script)
            .args(["--http", &port.to_string()])
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("python starts"),
    );
    let ready = (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(ready, "the Python server did not listen on {port}");
    let mut config = Config::new(Target::Http {
        // Starlette's Mount answers /mcp with a redirect to /mcp/.
        url: format!("http://127.0.0.1:{port}/mcp/"),
        tokens: vec![
            ("a".to_owned(), "token-a".to_owned()),
            ("b".to_owned(), "token-b".to_owned()),
        ],
        start: None,
    });
    config.tool = Some("export".to_owned());
    config.args = Some(serde_json::json!({ "delay_ms": 500 }));
    config.request_timeout = Duration::from_secs(3);
    config.task_timeout = Duration::from_secs(20);
    let report = support::tokio_runtime()
        .block_on(probe::run_with_reruns(&config, 1))
        .expect("reached");
    drop(server);
    let recurred = recurred(&report);
    let always = set(&[
        "2025-11-25 hostile.forbidden-tool-called-as-task",
        "2025-11-25 shapes.create.task-fields",
        "2025-11-25 shapes.get.task-fields",
        "2025-11-25 shapes.jsonrpc.malformed-json",
        "2025-11-25 shapes.jsonrpc.unknown-method",
        "2025-11-25 shapes.list.bad-cursor",
    ]);
    assert_recurred(&always, &recurred);
    // Sessions keep the two identities apart.
    assert!(
        support::probe_checks(&report, Verdict::Pass)
            .contains("2025-11-25 hostile.foreign-identity.get")
    );
}

/// The findings of `report` that failed again in its one rerun (each printed).
fn recurred(report: &tasklatch::probe::Report) -> BTreeSet<String> {
    for check in report.findings() {
        eprintln!("finding: {} {}: {}", check.era, check.check, check.detail);
    }
    report
        .recurrence
        .iter()
        .filter(|(_, counts)| **counts == (1, 1))
        .map(|(name, _)| name.clone())
        .collect()
}

/// Every finding in `always` recurred.
fn assert_recurred(always: &BTreeSet<String>, recurred: &BTreeSet<String>) {
    let missing: Vec<&String> = always.difference(recurred).collect();
    assert!(
        missing.is_empty(),
        "findings that did not recur: {missing:?}"
    );
}

#[path = "../probe/rmcp_server.rs"]
mod rmcp_server;

/// A 2026-07-28 task server on the Rust SDK rmcp 3.11.0 (`tests/probe/rmcp_server.rs`:
/// its in-memory `TaskManager`, as its examples use it), over Streamable HTTP in this
/// process, two identities, `--era auto` (rmcp 3.11 serves no 2025-11-25 tasks: that era
/// is skipped). The SDK's `TaskManager` keys tasks by id alone, with no owner, so every
/// caller that learns an id reads, answers and cancels the task (the extension: servers
/// must authorize every task request); a `tasks/get` with a missing or non-string
/// `taskId` fails its typed parse and falls through to `-32601` (the spec: `-32602`);
/// malformed JSON is an HTTP 415 without a JSON-RPC body (the spec: `-32700`). The state
/// contract otherwise holds under the workload (latch, one result, updates acknowledged,
/// liveness).
#[test]
fn rust_sdk_task_server_over_http() {
    let address = rmcp_server::start("127.0.0.1:0");
    let mut config = Config::new(Target::Http {
        url: format!("http://{address}/mcp"),
        tokens: vec![
            ("a".to_owned(), "token-a".to_owned()),
            ("b".to_owned(), "token-b".to_owned()),
        ],
        start: None,
    });
    config.tool = Some("slow_compute".to_owned());
    config.args = Some(serde_json::json!({ "seconds": 1 }));
    config.input_tool = Some("confirm_delete".to_owned());
    config.request_timeout = Duration::from_secs(3);
    config.task_timeout = Duration::from_secs(20);
    config.workload = Some(tasklatch::probe::workload::Workload {
        budget: Duration::from_secs(3),
        seed: 11,
        clients_per_identity: 2,
        kill: false,
        durable: false,
    });
    let report = support::tokio_runtime()
        .block_on(probe::run_with_reruns(&config, 1))
        .expect("reached");
    assert_eq!(report.eras, ["2026-07-28"]);
    let expected = set(&[
        "2026-07-28 hostile.foreign-identity.cancel",
        "2026-07-28 hostile.foreign-identity.cancel-had-no-effect",
        "2026-07-28 hostile.foreign-identity.get",
        "2026-07-28 hostile.foreign-identity.update",
        "2026-07-28 shapes.get.task-id-missing",
        "2026-07-28 shapes.get.task-id-wrong-type",
        "2026-07-28 shapes.jsonrpc.malformed-json",
        "2026-07-28 workload.isolation",
    ]);
    assert_eq!(support::probe_checks(&report, Verdict::Fail), expected);
    assert_recurred(&expected, &recurred(&report));
    // The workload answered confirm_delete's questions by tasks/update, acknowledged.
    assert!(support::probe_questions_answered(&report, "confirm") > 0);
}

/// A forced era the server does not advertise is refused up front (the command's exit 2),
/// not a page of findings: rmcp 3.11 offers no 2025-11-25 tasks.
#[test]
fn a_forced_era_the_server_does_not_offer_is_refused() {
    let address = rmcp_server::start("127.0.0.1:0");
    let mut config = Config::new(Target::Http {
        url: format!("http://{address}/mcp"),
        tokens: vec![("a".to_owned(), "token-a".to_owned())],
        start: None,
    });
    config.era = tasklatch::probe::EraChoice::Only(tasklatch::contract::Era::Core2025);
    config.request_timeout = Duration::from_secs(3);
    let refused = support::tokio_runtime()
        .block_on(probe::run(&config))
        .expect_err("a forced era the server does not offer");
    assert!(
        refused.to_string().contains("--era 2025-11-25 was forced"),
        "{refused}"
    );
}
