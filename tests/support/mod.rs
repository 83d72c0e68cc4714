//! Test support shared by the store tests: scratch directories and a throwaway
//! PostgreSQL cluster.
//!
//! Environment variables read here:
//! - `TASKLATCH_PG_URL` — use this PostgreSQL server instead of starting one. Tests
//!   create their own uniquely named schemas in it and drop them afterwards.
//! - `TASKLATCH_REQUIRE_PG=1` — fail, instead of skipping loudly, when no PostgreSQL is
//!   reachable. `.ci/run` sets it, so CI never skips the PostgreSQL tests.

#![allow(dead_code)] // each test binary uses a different part of this module

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

static SCRATCH: AtomicU64 = AtomicU64::new(0);

/// A directory removed on drop.
pub struct Scratch {
    pub path: PathBuf,
}

impl Scratch {
    pub fn new(label: &str) -> Scratch {
        let n = SCRATCH.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("tasklatch-{label}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create scratch dir");
        Scratch { path }
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A PostgreSQL server for one test: either `TASKLATCH_PG_URL`, or a cluster started with
/// initdb and pg_ctl on a free loopback port in a temporary directory, stopped on drop.
pub struct Postgres {
    pub url: String,
    cluster: Option<(PathBuf, PathBuf)>, // (bin dir, data dir)
    schema_prefix: String,
}

fn pg_bin_dir() -> Option<PathBuf> {
    let from_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .find(|dir| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file())
    });
    from_path.or_else(|| {
        let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|entry| entry.ok().map(|entry| entry.path().join("bin")))
            .filter(|bin| bin.join("initdb").is_file())
            .collect();
        versions.sort();
        versions.pop()
    })
}

fn is_root() -> bool {
    // The uid of /proc/self is the effective uid; avoids a libc dependency.
    std::fs::metadata("/proc/self")
        .map(|meta| std::os::unix::fs::MetadataExt::uid(&meta) == 0)
        .unwrap_or(false)
}

/// Runs a PostgreSQL tool, as the `postgres` user when we are root (initdb refuses root).
fn run_pg_tool(bin: &Path, tool: &str, args: &[&str]) -> Result<(), String> {
    let program = bin.join(tool);
    let mut command = if is_root() {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(&program);
        command
    } else {
        Command::new(&program)
    };
    let output = command
        .args(args)
        .output()
        .map_err(|error| format!("{tool}: {error}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{tool} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

impl Postgres {
    /// `None` (after saying so loudly) when no PostgreSQL is available and none is required.
    pub fn start(label: &str) -> Option<Postgres> {
        let schema_prefix = format!("tl_{}_{}", label, std::process::id());
        if let Ok(url) = std::env::var("TASKLATCH_PG_URL") {
            eprintln!("postgres: using TASKLATCH_PG_URL");
            return Some(Postgres {
                url,
                cluster: None,
                schema_prefix,
            });
        }
        match Self::start_cluster(label) {
            Ok((url, bin, data)) => Some(Postgres {
                url,
                cluster: Some((bin, data)),
                schema_prefix,
            }),
            Err(reason) => {
                let banner = format!(
                    "\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
                     !!! PostgreSQL tests NOT RUN: {reason}\n\
                     !!! Install PostgreSQL (apt-get install postgresql) or set TASKLATCH_PG_URL.\n\
                     !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n"
                );
                eprintln!("{banner}");
                println!("{banner}");
                if std::env::var("TASKLATCH_REQUIRE_PG").is_ok_and(|v| v == "1") {
                    panic!("TASKLATCH_REQUIRE_PG=1 but PostgreSQL is unavailable: {reason}");
                }
                None
            }
        }
    }

    fn start_cluster(label: &str) -> Result<(String, PathBuf, PathBuf), String> {
        let bin = pg_bin_dir().ok_or("no initdb/pg_ctl on PATH or under /usr/lib/postgresql")?;
        let data =
            std::env::temp_dir().join(format!("tasklatch-pg-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&data);
        std::fs::create_dir_all(&data).map_err(|e| e.to_string())?;
        if is_root() {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&data)
                .status()
                .map_err(|e| e.to_string())?;
            if !status.success() {
                return Err("chown of the data directory failed".into());
            }
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let data_str = data.to_str().ok_or("temp path is not UTF-8")?;
        let cluster = format!("{data_str}/cluster");
        run_pg_tool(
            &bin,
            "initdb",
            &[
                "-D",
                &cluster,
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
            ],
        )?;
        // A throwaway cluster: durability settings off, since no test kills PostgreSQL.
        let options = format!(
            "-p {port} -k {data_str} -c listen_addresses=127.0.0.1 -c fsync=off \
             -c synchronous_commit=off -c full_page_writes=off -c max_connections=60"
        );
        run_pg_tool(
            &bin,
            "pg_ctl",
            &[
                "-D",
                &cluster,
                "-l",
                &format!("{data_str}/log"),
                "-o",
                &options,
                "-w",
                "start",
            ],
        )?;
        eprintln!(
            "postgres: started a throwaway cluster on 127.0.0.1:{port} ({})",
            bin.display()
        );
        Ok((
            format!("postgres://postgres@127.0.0.1:{port}/postgres"),
            bin,
            data,
        ))
    }

    /// A fresh schema name for one store.
    pub fn schema(&self) -> String {
        let n = SCRATCH.fetch_add(1, Ordering::Relaxed);
        format!("{}_{n}", self.schema_prefix)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        match &self.cluster {
            Some((bin, data)) => {
                let cluster = data.join("cluster");
                let _ = run_pg_tool(
                    bin,
                    "pg_ctl",
                    &[
                        "-D",
                        cluster.to_str().unwrap_or(""),
                        "-m",
                        "immediate",
                        "-w",
                        "stop",
                    ],
                );
                let _ = std::fs::remove_dir_all(data);
            }
            None => {
                // A shared server: drop the schemas this test made.
                if let Ok(mut client) = postgres::Client::connect(&self.url, postgres::NoTls) {
                    let like = format!("{}\\_%", self.schema_prefix.replace('_', "\\_"));
                    if let Ok(rows) = client.query(
                        "SELECT nspname FROM pg_namespace WHERE nspname LIKE $1",
                        &[&like],
                    ) {
                        for row in rows {
                            let name: String = row.get(0);
                            let _ = client.batch_execute(&format!("DROP SCHEMA {name} CASCADE"));
                        }
                    }
                }
            }
        }
    }
}

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

/// A child process, killed and reaped on drop.
pub struct Killed(pub std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Spawns `command`, whose first stdout line must be `listening PORT`; returns the process
/// and the port.
pub fn spawn_listening(command: &mut Command) -> (Killed, u16) {
    use std::io::BufRead as _;
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("{command:?}: {error}"));
    let stdout = child.stdout.take().expect("stdout");
    let child = Killed(child);
    let mut line = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .expect("a line");
    let port = line
        .trim()
        .strip_prefix("listening ")
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("expected `listening PORT`, got {line:?}"));
    (child, port)
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
