//! Interop with the official SDK clients, pinned in `tests/interop/`: the TypeScript
//! `@modelcontextprotocol/sdk` 1.32.2 (`tests/interop/ts/client.mjs`) and Python `mcp`
//! 1.30.0 (`tests/interop/python/client.py`), each driving `tasklatch serve` through its
//! real experimental tasks API. Each client prints one JSON line per scenario and exits
//! non-zero if any failed; this test runs it and fails with its output.
//!
//! Environment (read here):
//! - `TASKLATCH_REQUIRE_INTEROP=1` — fail, instead of skipping loudly, when a client is not
//!   installed (`.ci/run` installs both and sets it).
//! - `TASKLATCH_INTEROP_PYTHON` — the Python that has `mcp==1.30.0` (default:
//!   `target/interop-venv/bin/python`, where `.ci/run` installs the lock file).
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use std::path::{Path, PathBuf};
use std::process::Command;
use tasklatch_testkit::{Killed, spawn_listening};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn scratch(name: &str) -> PathBuf {
    let folder = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("interop-{name}"));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).expect("scratch folder");
    folder
}

/// Skips loudly, or fails under `TASKLATCH_REQUIRE_INTEROP=1`.
fn unavailable(what: &str) {
    if std::env::var("TASKLATCH_REQUIRE_INTEROP").is_ok_and(|v| v == "1") {
        panic!("TASKLATCH_REQUIRE_INTEROP=1 but {what}");
    }
    eprintln!("\n*** interop test NOT RUN: {what} (see tests/interop/*/README.md) ***\n");
}

fn run_client(mut command: Command, label: &str) {
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("{label}: {error}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with('{'))
        .collect();
    let passed = lines
        .iter()
        .filter(|line| line.contains("\"ok\":true") || line.contains("\"ok\": true"))
        .count();
    eprintln!("{label}: {passed}/{} scenarios passed", lines.len());
    assert!(
        output.status.success() && !lines.is_empty() && passed == lines.len(),
        "{label} failed ({}):\n{stdout}\n--- stderr ---\n{stderr}",
        output.status
    );
}

fn serve_stdio(store: &Path) -> Vec<String> {
    vec![
        env!("CARGO_BIN_EXE_tasklatch").into(),
        "serve".into(),
        "--stdio".into(),
        "--store".into(),
        format!("sqlite:{}", store.display()),
    ]
}

fn typescript() -> Option<PathBuf> {
    let folder = root().join("tests/interop/ts");
    let node = Command::new("node").arg("--version").output();
    if !node.is_ok_and(|output| output.status.success()) {
        unavailable("node is not installed");
        return None;
    }
    if !folder
        .join("node_modules/@modelcontextprotocol/sdk/package.json")
        .is_file()
    {
        unavailable("the TypeScript SDK is not installed (npm ci --prefix tests/interop/ts)");
        return None;
    }
    Some(folder.join("client.mjs"))
}

fn python() -> Option<PathBuf> {
    crate::support::interop_python()
}

#[test]
fn typescript_sdk_over_stdio() {
    let Some(client) = typescript() else { return };
    let folder = scratch("ts-stdio");
    let mut command = Command::new("node");
    command
        .arg(&client)
        .arg("stdio")
        .arg("--")
        .args(serve_stdio(&folder.join("tasks.db")));
    run_client(command, "TypeScript SDK 1.32.2 over stdio");
}

#[test]
fn python_sdk_over_stdio() {
    let Some(python) = python() else { return };
    let folder = scratch("py-stdio");
    let mut command = Command::new(python);
    command
        .arg(root().join("tests/interop/python/client.py"))
        .arg("--")
        .args(serve_stdio(&folder.join("tasks.db")));
    run_client(command, "Python mcp 1.30.0 over stdio");
}

/// `tasklatch serve --http` on a free loopback port, killed on drop.
struct HttpServer {
    _process: Killed,
    url: String,
}

impl HttpServer {
    fn start(folder: &Path) -> HttpServer {
        let tokens = folder.join("tokens.json");
        std::fs::write(
            &tokens,
            r#"{"tokens": {"token-a-interop": "tenant-a/alice", "token-b-interop": "tenant-b/bob"}}"#,
        )
        .expect("tokens written");
        let mut command = Command::new(env!("CARGO_BIN_EXE_tasklatch"));
        command
            .args(["serve", "--http", "127.0.0.1:0", "--tokens"])
            .arg(&tokens)
            .arg("--store")
            .arg(format!("sqlite:{}", folder.join("tasks.db").display()));
        let (process, url) =
            spawn_listening(&mut command).unwrap_or_else(|error| panic!("{error}"));
        HttpServer {
            _process: process,
            url,
        }
    }
}

#[test]
fn typescript_sdk_over_streamable_http_with_two_tokens() {
    let Some(client) = typescript() else { return };
    let folder = scratch("ts-http");
    let server = HttpServer::start(&folder);
    let mut command = Command::new("node");
    command.arg(&client).args([
        "http",
        "--url",
        &server.url,
        "--token",
        "token-a-interop",
        "--other-token",
        "token-b-interop",
    ]);
    run_client(command, "TypeScript SDK 1.32.2 over Streamable HTTP");
}
