//! What the tests share that knows tasklatch: the in-process server, store commands, the
//! `tasklatch` binary, probe report helpers. The rest (scratch directories, the throwaway
//! PostgreSQL, processes, the HTTP client) is `tasklatch-testkit`'s, re-exported here.

#![allow(dead_code, unused_imports)] // each test binary uses a different part of this module

use std::path::PathBuf;
use std::process::Command;

pub use tasklatch_testkit::http as http_client;
pub use tasklatch_testkit::{Killed, Postgres, Scratch};

/// The `tasklatch` binary of this build.
pub const TASKLATCH: &str = env!("CARGO_BIN_EXE_tasklatch");

/// A task-creating `tools/call` of `export` for tenant-a/alice at `now_ms`, no key, no TTL.
pub fn create_command(task_id: &str, now_ms: u64) -> tasklatch::store::CreateCommand {
    tasklatch::store::CreateCommand {
        caller: "tenant-a/alice".into(),
        negotiated: tasklatch::contract::Negotiated::FULL,
        task_support: tasklatch::contract::TaskSupport::Optional,
        task_requested: true,
        idempotency_key: None,
        request: tasklatch::store::WrappedRequest {
            method: "tools/call".into(),
            name: "export".into(),
            arguments: None,
        },
        ttl_ms: None,
        poll_interval_ms: None,
        task_id: task_id.into(),
        correlation_id: "c".into(),
        now_ms,
        era: tasklatch::contract::Era::Core2025,
        input_responses: None,
    }
}

/// Starts `tasklatch serve --http` in-process on a loopback port: the runtime (four
/// workers) and the router over `store`, on a tokio runtime of their own in a background
/// thread that lives as long as the test process. Returns the `host:port` it listens on.
pub fn serve_http(
    store: std::sync::Arc<dyn tasklatch::store::TaskStore>,
    exports: PathBuf,
    server: tasklatch::mcp::ServerConfig,
    runtime: tasklatch::runtime::RuntimeConfig,
    http: tasklatch::mcp::http::HttpConfig,
) -> String {
    serve_http_server(
        store,
        exports,
        server,
        runtime,
        http,
        tasklatch::mcp::http::Listening::default(),
    )
    .0
}

/// [`serve_http`], also returning the server (its open waits, its drain) and following the
/// store's change feed if it has one, holding connections as `listening` says.
pub fn serve_http_server(
    store: std::sync::Arc<dyn tasklatch::store::TaskStore>,
    exports: PathBuf,
    server: tasklatch::mcp::ServerConfig,
    runtime: tasklatch::runtime::RuntimeConfig,
    http: tasklatch::mcp::http::HttpConfig,
    listening: tasklatch::mcp::http::Listening,
) -> (String, std::sync::Arc<tasklatch::mcp::Server>) {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let tokio = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio");
        tokio.block_on(async move {
            let tasklatch::mcp::Assembly { server, runtime } = tasklatch::mcp::Assembly::new(
                store,
                exports,
                std::sync::Arc::new(tasklatch::runtime::TokioEnv),
                server,
                runtime,
            );
            let _feed = server
                .follow_store_changes()
                .expect("the change feed starts");
            // Four workers: the probe's workload leaves a hundred one-second exports to
            // finish within its liveness phase.
            runtime.start(4);
            let router = tasklatch::mcp::http::router(server.clone(), http);
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            send.send((listener.local_addr().expect("address").to_string(), server))
                .expect("sent");
            tasklatch::mcp::http::serve_with(listener, router, listening)
                .await
                .expect("served");
        });
    });
    receive.recv().expect("the server starts")
}

/// Alice's bearer token in [`serve_fixture_tools`]'s server (key `tenant-a/alice`).
pub const ALICE: &str = "token-alice-0001";
/// Bob's bearer token there (key `tenant-b/bob`).
pub const BOB: &str = "token-bob-00002";

/// [`serve_http`] with the conformance fixture tools, tokens [`ALICE`] and [`BOB`], and a
/// runtime that retries a task waiting for input every 20 ms: the server the 2026-07-28
/// wire tests and interop clients talk to.
pub fn serve_fixture_tools(
    store: std::sync::Arc<dyn tasklatch::store::TaskStore>,
    exports: PathBuf,
) -> String {
    let mut tokens = tasklatch::mcp::http::Tokens::default();
    tokens.insert(ALICE, "tenant-a/alice");
    tokens.insert(BOB, "tenant-b/bob");
    serve_http(
        store,
        exports,
        tasklatch::mcp::ServerConfig {
            conformance_tools: true,
            ..tasklatch::mcp::ServerConfig::default()
        },
        tasklatch::runtime::RuntimeConfig {
            idle_ms: 5,
            retry_after_ms: 20,
            ..tasklatch::runtime::RuntimeConfig::default()
        },
        tasklatch::mcp::http::HttpConfig {
            tokens,
            allowed_origins: Vec::new(),
            body_bytes_max: 64 * 1024,
            sessions_max: 16,
            anonymous: None,
        },
    )
}

/// A tokio runtime (two workers) for tests that drive the library's async code.
pub fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio")
}

/// Spawns `command`, whose first stdout line must be `listening PORT`; returns the process
/// and the port.
pub fn spawn_listening(command: &mut Command) -> (Killed, u16) {
    let (child, place) =
        tasklatch_testkit::spawn_listening(command).unwrap_or_else(|error| panic!("{error}"));
    let port = place
        .parse()
        .unwrap_or_else(|_| panic!("expected `listening PORT`, got `listening {place}`"));
    (child, port)
}

/// `tasklatch serve --http` as a process of this build's binary, and its client.
pub mod serve_process {
    pub use tasklatch_testkit::serve::{ServeClient, ServeProcess};

    /// The status the store at `store` (a store URL) holds for `task_id`, read directly.
    pub fn stored_status(store: &str, task_id: &str) -> tasklatch::contract::TaskStatus {
        tasklatch::store::open_store(store, &tasklatch::store::StoreOptions::default())
            .expect("the store opens")
            .read(task_id)
            .expect("read")
            .expect("the task is kept")
            .status
    }

    /// Prints a test's figures and keeps them in `target/tmp/server-figures/NAME.txt`,
    /// which CI prints after the test commands (libtest shows nothing a passing test
    /// printed).
    pub fn report(name: &str, figures: &str) {
        println!("{figures}");
        let folder = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("server-figures");
        let written = std::fs::create_dir_all(&folder).and_then(|()| {
            std::fs::write(folder.join(format!("{name}.txt")), format!("{figures}\n"))
        });
        if let Err(error) = written {
            eprintln!("{name}: figures not kept: {error}");
        }
    }
}

/// The probe checks that ended `verdict`, each as `ERA CHECK`.
pub fn probe_checks(
    report: &tasklatch::probe::Report,
    verdict: tasklatch::probe::Verdict,
) -> std::collections::BTreeSet<String> {
    report
        .checks
        .iter()
        .filter(|check| check.verdict == verdict)
        .map(|check| format!("{} {}", check.era, check.check))
        .collect()
}

/// The 2026-07-28 workload's `tasks/update`s that answered a question the task asked
/// (`key`, as in `{"confirm": {"action": …}}`) and were acknowledged.
pub fn probe_questions_answered(report: &tasklatch::probe::Report, key: &str) -> usize {
    let answer = format!("\"{key}\":{{\"action\"");
    report
        .histories
        .iter()
        .filter(|history| history.era == "2026-07-28")
        .flat_map(|history| &history.ops)
        .filter(|op| op.kind == tasklatch::probe::workload::OpKind::Update)
        .filter(|op| op.exchange.request.contains(&answer))
        .filter(|op| {
            op.exchange
                .result()
                .is_some_and(|result| result["resultType"] == "complete")
        })
        .count()
}

/// The name libtest knows a test by, for running this test binary again on that one test
/// (`--exact`): `module_path!()` of the test's module without the crate, then `function`.
pub fn test_path(module: &str, function: &str) -> String {
    match module.split_once("::") {
        Some((_crate, path)) => format!("{path}::{function}"),
        None => function.to_owned(),
    }
}

/// Skips loudly — or, under `TASKLATCH_REQUIRE_INTEROP=1` (`.ci/run` sets it), fails —
/// because `what` is not installed.
pub fn interop_unavailable(what: &str) {
    if std::env::var("TASKLATCH_REQUIRE_INTEROP").is_ok_and(|v| v == "1") {
        panic!("TASKLATCH_REQUIRE_INTEROP=1 but {what}");
    }
    eprintln!("\n*** interop test NOT RUN: {what} ***\n");
}

/// The Python that has `mcp==1.30.0`: `TASKLATCH_INTEROP_PYTHON`, else
/// `target/interop-venv/bin/python` (where `.ci/run` installs the lock file).
pub fn interop_python() -> Option<std::path::PathBuf> {
    let python = std::env::var_os("TASKLATCH_INTEROP_PYTHON")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("target/interop-venv/bin/python")
        });
    let has_mcp = Command::new(&python)
        .args([
            "-c",
            "import importlib.metadata as m; assert m.version('mcp') == '1.30.0'",
        ])
        .output()
        .is_ok_and(|output| output.status.success());
    if !has_mcp {
        interop_unavailable(&format!("{} has no mcp 1.30.0", python.display()));
        return None;
    }
    Some(python)
}
