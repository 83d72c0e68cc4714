//! Interop with a second 2026-07-28 tasks client: `@modelcontextprotocol/ext-tasks` 0.2.2
//! on `@modelcontextprotocol/client` 2.4.0, pinned in `tests/interop/ts-ext/`
//! (`client.mjs`). It drives `tasklatch serve --http --conformance-tools` through the
//! package's task session (discover, sync tool, task lifecycle, tool and protocol errors,
//! input, partial input, cancel, a second token), prints one JSON line per scenario and
//! exits non-zero if any failed; this test runs it and fails with its output.
//!
//! Environment (read here): `TASKLATCH_REQUIRE_INTEROP=1` — fail, instead of skipping
//! loudly, when Node ≥ 20 or the package is not installed (`.ci/run` installs it with
//! `npm ci --prefix tests/interop/ts-ext` and sets it).
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use std::path::{Path, PathBuf};
use std::process::Command;
use tasklatch_testkit::{Killed, spawn_listening};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Skips loudly, or fails under `TASKLATCH_REQUIRE_INTEROP=1`.
fn unavailable(what: &str) {
    if std::env::var("TASKLATCH_REQUIRE_INTEROP").is_ok_and(|v| v == "1") {
        panic!("TASKLATCH_REQUIRE_INTEROP=1 but {what}");
    }
    eprintln!("\n*** interop test NOT RUN: {what} (see tests/interop/ts-ext/README.md) ***\n");
}

/// The client script, if Node ≥ 20 (what `@modelcontextprotocol/client` 2.x needs) and
/// the pinned packages are installed.
fn client() -> Option<PathBuf> {
    let folder = root().join("tests/interop/ts-ext");
    let major = Command::new("node")
        .arg("--version")
        .output()
        .ok()
        .filter(|output| output.status.success())
        .and_then(|output| {
            let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
            version
                .strip_prefix('v')
                .and_then(|rest| rest.split('.').next())
                .and_then(|major| major.parse::<u32>().ok())
        });
    match major {
        None => {
            unavailable("node is not installed");
            return None;
        }
        Some(major) if major < 20 => {
            unavailable(&format!(
                "node is v{major}, and @modelcontextprotocol/client 2.x needs 20 or newer"
            ));
            return None;
        }
        Some(_) => {}
    }
    if !folder
        .join("node_modules/@modelcontextprotocol/ext-tasks/package.json")
        .is_file()
    {
        unavailable("ext-tasks is not installed (npm ci --prefix tests/interop/ts-ext)");
        return None;
    }
    Some(folder.join("client.mjs"))
}

/// `tasklatch serve --http --conformance-tools` on a free loopback port with two tokens,
/// killed on drop.
struct HttpServer {
    _process: Killed,
    url: String,
}

impl HttpServer {
    fn start(folder: &Path) -> HttpServer {
        let tokens = folder.join("tokens.json");
        std::fs::write(
            &tokens,
            r#"{"tokens": {"token-a-ext-tasks": "tenant-a/alice", "token-b-ext-tasks": "tenant-b/bob"}}"#,
        )
        .expect("tokens written");
        let mut command = Command::new(env!("CARGO_BIN_EXE_tasklatch"));
        command
            .args([
                "serve",
                "--http",
                "127.0.0.1:0",
                "--conformance-tools",
                "--tokens",
            ])
            .arg(&tokens)
            .arg("--store")
            .arg(format!("sqlite:{}", folder.join("tasks.db").display()))
            .arg("--exports")
            .arg(folder.join("exports"));
        let (process, url) =
            spawn_listening(&mut command).unwrap_or_else(|error| panic!("{error}"));
        HttpServer {
            _process: process,
            url,
        }
    }
}

#[test]
fn ext_tasks_client_over_streamable_http_with_two_tokens() {
    let Some(client) = client() else { return };
    let folder = Path::new(env!("CARGO_TARGET_TMPDIR")).join("interop-ts-ext");
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).expect("scratch folder");
    let server = HttpServer::start(&folder);
    let output = Command::new("node")
        .arg(&client)
        .args([
            "--url",
            &server.url,
            "--token",
            "token-a-ext-tasks",
            "--other-token",
            "token-b-ext-tasks",
        ])
        .output()
        .expect("node runs");
    let label = "ext-tasks 0.2.2 (2026-07-28) over Streamable HTTP";
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with('{'))
        .collect();
    let passed = lines
        .iter()
        .filter(|line| line.contains("\"ok\":true"))
        .count();
    eprintln!("{label}: {passed}/{} scenarios passed", lines.len());
    assert!(
        output.status.success() && !lines.is_empty() && passed == lines.len(),
        "{label} failed ({}):\n{stdout}\n--- stderr ---\n{stderr}",
        output.status
    );
}
