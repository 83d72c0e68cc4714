//! `tasklatch serve`: the MCP tasks server over stdio or Streamable HTTP, with the
//! example tools, the runtime in-process, and a drain on SIGTERM.

use super::EXIT_BAD_INPUT;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use tasklatch::mcp::http::{self, HttpConfig, Tokens};
use tasklatch::mcp::limits::LimitsConfig;
use tasklatch::mcp::server::stdio_negotiated;
use tasklatch::mcp::{Assembly, ServerConfig, Session};
use tasklatch::runtime::{BoxFuture, Env as _, NoProbe, Point, Probe, RuntimeConfig, TokioEnv};
use tasklatch::store::{StoreOptions, StoreUrl, TaskStore, open_store};

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Serve one requestor over stdin/stdout (newline-delimited JSON-RPC).
    #[arg(long, conflicts_with = "http", required_unless_present = "http")]
    stdio: bool,
    /// Serve Streamable HTTP at ADDR (e.g. 127.0.0.1:8931), endpoint `/mcp`.
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// With --http: the tokens file, `{"tokens": {"<bearer token>": "<authorization
    /// key>"}}`; each token's tasks are bound to its key.
    #[arg(long, requires = "http")]
    tokens: Option<PathBuf>,
    /// With --http: bind requests that send no `Authorization` header to the
    /// authorization key `anonymous` instead of refusing them (off by default: every
    /// such caller shares that one key, so they can read each other's tasks). Known
    /// tokens keep their own keys; an unknown token is still refused.
    #[arg(long, requires = "http")]
    anonymous: bool,
    /// Also offer the official conformance suite's fixture tools (`greet`,
    /// `slow_compute`, `failing_job`, `protocol_error_job`, `confirm_delete`,
    /// `multi_input`, `test_tool_with_task`) next to `export`, `archive` and `echo`.
    #[arg(long)]
    conformance_tools: bool,
    /// With --http: an origin allowed besides loopback ones (repeatable).
    #[arg(long = "allow-origin", requires = "http")]
    allowed_origins: Vec<String>,
    /// With --http: the largest request body accepted.
    #[arg(long, default_value_t = tasklatch::mcp::http::BODY_BYTES_MAX)]
    body_limit_bytes: usize,
    /// The task store: `sqlite:PATH[?synchronous=full|normal]`, `postgres://…` (with
    /// `--features postgres`) or `memory:`.
    #[arg(long, default_value = "sqlite:tasklatch.db")]
    store: String,
    /// Folder the `export` tool commits its files to (default: `<sqlite file>.exports`,
    /// else `./tasklatch-exports`).
    #[arg(long)]
    exports: Option<PathBuf>,
    /// Worker loops running tools in this process.
    #[arg(long, default_value_t = 4)]
    workers: usize,
    /// How long a dispatched task's outbox entry and queue message stay leased before
    /// they are delivered again (a restarted server picks up unfinished tasks after it).
    #[arg(long, default_value_t = 30_000)]
    lease_ms: u64,
    /// For crash tests: a worker reaching the named point (`after-prepare`,
    /// `after-decide`, … as `sim --kill-at` names them) prints `hold POINT TASK_ID` on
    /// stderr and waits MS there, so a test can kill the process at that moment.
    #[arg(long, value_name = "POINT:MS", hide = true)]
    hold_at: Option<String>,
    /// On SIGTERM or SIGINT: how long running tools may take to reach their completion
    /// write before the process exits anyway (their tasks are delivered again after
    /// --lease-ms). Meanwhile nothing new is admitted and blocked calls end.
    #[arg(long, default_value_t = 10_000)]
    drain_ms: u64,
    /// Blocked `tasks/result` calls one caller (authorization key) may hold at once.
    #[arg(long, default_value_t = LimitsConfig::default().waits_per_key_max)]
    waits_per_caller: usize,
    /// HTTP requests one caller may have in flight at once.
    #[arg(long, default_value_t = LimitsConfig::default().requests_per_key_max)]
    requests_per_caller: usize,
    /// 2025-11-25 HTTP sessions one caller may hold open at once.
    #[arg(long, default_value_t = LimitsConfig::default().sessions_per_key_max)]
    sessions_per_caller: usize,
    /// `tasks/get` and `tasks/list` calls per second one caller may make, sustained.
    #[arg(long, default_value_t = LimitsConfig::default().polls_per_key_per_s)]
    polls_per_second: u64,
    /// ... and in a burst.
    #[arg(long, default_value_t = LimitsConfig::default().polls_per_key_burst)]
    poll_burst: u64,
    /// With --http: connections open at once, all callers (one more is closed at once).
    #[arg(long, default_value_t = http::CONNECTIONS_MAX)]
    connections_max: usize,
    /// With --http: a connection that sends no complete request for this long is closed
    /// (an idle keep-alive connection, a slow client).
    #[arg(long, default_value_t = http::IDLE_MS)]
    idle_timeout_ms: u64,
}

/// Resolves once a SIGTERM or SIGINT was received and the drain finished: the server
/// stopped admitting and ended its blocked calls at once, then the workers had up to
/// `drain_ms` to finish the tools they were running. A second signal ends the drain.
///
/// The handlers are installed here, synchronously, before the future is first polled:
/// a SIGTERM sent as soon as the server says it listens must already be caught.
fn drain_on_signal(
    server: Arc<tasklatch::mcp::Server>,
    runtime: Arc<tasklatch::runtime::Runtime>,
    drain_ms: u64,
) -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let handlers = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    );
    async move {
        let (Ok(term), Ok(interrupt)) = handlers else {
            eprintln!(
                "tasklatch serve: cannot listen for SIGTERM; it will end the process at once"
            );
            return std::future::pending().await;
        };
        drained(term, interrupt, server, runtime, drain_ms).await;
    }
}

async fn drained(
    mut term: tokio::signal::unix::Signal,
    mut interrupt: tokio::signal::unix::Signal,
    server: Arc<tasklatch::mcp::Server>,
    runtime: Arc<tasklatch::runtime::Runtime>,
    drain_ms: u64,
) {
    let mut signalled = async || {
        tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = interrupt.recv() => "SIGINT",
        }
    };
    let name = signalled().await;
    eprintln!(
        "tasklatch serve: {name}: draining (admitting nothing, blocked calls ended, up to {drain_ms} ms for running tools)"
    );
    server.drain();
    let left = tokio::select! {
        left = runtime.drain(drain_ms) => left,
        name = signalled() => {
            eprintln!("tasklatch serve: {name} again: stopping now");
            runtime.workers_running()
        }
    };
    eprintln!(
        "tasklatch serve: drained; {left} tool runs unfinished (delivered again after the lease)"
    );
}

/// Stops a worker at one named point for a while, saying so on stderr first.
struct HoldProbe {
    point: Point,
    hold_ms: u64,
}

impl Probe for HoldProbe {
    fn at(&self, point: Point, task_id: &str) -> BoxFuture<'static, ()> {
        if point != self.point {
            return Box::pin(std::future::ready(()));
        }
        eprintln!("hold {} {task_id}", point.name());
        Box::pin(TokioEnv.sleep(self.hold_ms))
    }
}

fn hold_probe(hold_at: Option<&str>) -> Result<Arc<dyn Probe>, String> {
    let Some(hold_at) = hold_at else {
        return Ok(Arc::new(NoProbe));
    };
    let (point, hold_ms) = hold_at
        .split_once(':')
        .ok_or_else(|| format!("{hold_at:?}: expected POINT:MS"))?;
    Ok(Arc::new(HoldProbe {
        point: Point::parse(point)?,
        hold_ms: hold_ms
            .parse()
            .map_err(|_| format!("{hold_ms:?}: expected milliseconds"))?,
    }))
}

pub fn serve(args: ServeArgs) -> ExitCode {
    let store: Arc<dyn TaskStore> = match open_store(&args.store, &StoreOptions::default()) {
        Ok(store) => Arc::from(store),
        Err(error) => {
            eprintln!("error: --store: {error}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let exports = args
        .exports
        .clone()
        .unwrap_or_else(|| match StoreUrl::parse(&args.store) {
            Ok(StoreUrl::Sqlite(options)) => {
                let mut name = options.path.as_os_str().to_owned();
                name.push(".exports");
                PathBuf::from(name)
            }
            _ => PathBuf::from("tasklatch-exports"),
        });
    let anonymous = args.anonymous.then(|| "anonymous".to_owned());
    let http = match (&args.http, &args.tokens) {
        (None, _) => None,
        (Some(_), None) if anonymous.is_none() => {
            eprintln!(
                "error: --http needs --tokens FILE or --anonymous (every caller must be identified)"
            );
            return ExitCode::from(EXIT_BAD_INPUT);
        }
        (Some(address), tokens) => {
            let tokens = match tokens.as_deref().map(Tokens::load).transpose() {
                Ok(tokens) => tokens.unwrap_or_default(),
                Err(error) => {
                    eprintln!("error: --tokens {error}");
                    return ExitCode::from(EXIT_BAD_INPUT);
                }
            };
            Some((
                address.clone(),
                HttpConfig {
                    tokens,
                    allowed_origins: args.allowed_origins.clone(),
                    body_bytes_max: args.body_limit_bytes.max(1024),
                    sessions_max: http::SESSIONS_MAX,
                    anonymous,
                },
            ))
        }
    };
    if args.workers == 0
        || args.workers > 256
        || args.lease_ms == 0
        || args.connections_max == 0
        || args.idle_timeout_ms == 0
    {
        eprintln!(
            "error: --workers must be 1..=256, and --lease-ms, --connections-max and --idle-timeout-ms positive"
        );
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    let limits = LimitsConfig {
        waits_per_key_max: args.waits_per_caller,
        requests_per_key_max: args.requests_per_caller,
        sessions_per_key_max: args.sessions_per_caller,
        polls_per_key_per_s: args.polls_per_second,
        polls_per_key_burst: args.poll_burst,
    };
    if let Err(error) = limits.check() {
        eprintln!("error: per-caller limits: {error}");
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    let probe = match hold_probe(args.hold_at.as_deref()) {
        Ok(probe) => probe,
        Err(error) => {
            eprintln!("error: --hold-at {error}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let tokio = match super::async_runtime() {
        Ok(tokio) => tokio,
        Err(code) => return code,
    };
    let code = tokio.block_on(async move {
        let Assembly { server, runtime } = Assembly::with_probe(
            store,
            exports.clone(),
            Arc::new(TokioEnv),
            ServerConfig {
                conformance_tools: args.conformance_tools,
                limits,
                ..ServerConfig::default()
            },
            RuntimeConfig {
                republish_after_ms: args.lease_ms,
                queue_lease_ms: args.lease_ms,
                ..RuntimeConfig::default()
            },
            probe,
        );
        // Other processes on the same store wake this one's blocked calls (PostgreSQL).
        let _feed = match server.follow_store_changes() {
            Ok(feed) => feed,
            Err(error) => {
                eprintln!("error: --store: {error}");
                return ExitCode::FAILURE;
            }
        };
        runtime.start(args.workers);
        let drained = drain_on_signal(server.clone(), runtime.clone(), args.drain_ms);
        if let Some((address, config)) = http {
            let listener = match tokio::net::TcpListener::bind(&address).await {
                Ok(listener) => listener,
                Err(error) => {
                    eprintln!("error: --http {address}: {error}");
                    return ExitCode::from(EXIT_BAD_INPUT);
                }
            };
            let bound = listener
                .local_addr()
                .map_or(address.clone(), |at| at.to_string());
            // The line a supervisor (or a test) waits for.
            println!("listening http://{bound}/mcp");
            eprintln!(
                "tasklatch serve: http://{bound}/mcp, store {}, exports {}, {} workers",
                args.store,
                exports.display(),
                args.workers
            );
            // Requests are still served while draining (polls, cancels), until it ends.
            let listening = http::Listening {
                connections_max: args.connections_max,
                idle_ms: args.idle_timeout_ms,
            };
            let router = http::router(server, config);
            let served = tokio::select! {
                served = http::serve_with(listener, router, listening) => served,
                () = drained => Ok(()),
            };
            runtime.shut_down();
            return match served {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("error: http server: {error}");
                    ExitCode::FAILURE
                }
            };
        }
        eprintln!(
            "tasklatch serve: stdio, store {}, exports {}, {} workers",
            args.store,
            exports.display(),
            args.workers
        );
        let session = Session {
            id: "stdio".into(),
            auth_key: "stdio/requestor".into(),
            negotiated: stdio_negotiated(),
            idempotency_header: None,
        };
        let input = tokio::io::BufReader::new(tokio::io::stdin());
        tokio::select! {
            () = tasklatch::mcp::stdio::serve(server, session, input, tokio::io::stdout()) => {}
            () = drained => {}
        }
        runtime.shut_down();
        ExitCode::SUCCESS
    });
    // Workers blocked in a tool are abandoned: their tasks stay leased in the store and
    // are delivered again after --lease-ms by the next server.
    tokio.shutdown_timeout(std::time::Duration::from_millis(500));
    code
}
