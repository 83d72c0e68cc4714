//! `tasklatch serve`: the MCP tasks server over stdio or Streamable HTTP, with the
//! example tools, the runtime in-process, and a drain on SIGTERM: the flags made into a
//! [`ServerBuilder`].

use super::EXIT_BAD_INPUT;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use tasklatch::builder::ServerBuilder;
use tasklatch::mcp::http::{self, Tokens};
use tasklatch::mcp::limits::LimitsConfig;
use tasklatch::runtime::{BoxFuture, Env as _, NoProbe, Point, Probe, TokioEnv};
use tasklatch::store::StoreUrl;

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
    let (builder, address) = match configured(&args, exports.clone()) {
        Ok(configured) => configured,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let tokio = match super::async_runtime() {
        Ok(tokio) => tokio,
        Err(code) => return code,
    };
    let said = format!(
        "store {}, exports {}, {} workers",
        args.store,
        exports.display(),
        args.workers
    );
    let served = tokio.block_on(async move {
        let Some(address) = address else {
            eprintln!("tasklatch serve: stdio, {said}");
            return builder.serve_stdio().await;
        };
        let serving = builder.bind_http(&address).await?;
        let bound = serving.local_addr();
        // The line a supervisor (or a test) waits for.
        println!("listening http://{bound}/mcp");
        eprintln!("tasklatch serve: http://{bound}/mcp, {said}");
        serving.run().await
    });
    // Workers blocked in a tool are abandoned: their tasks stay leased in the store and
    // are delivered again after --lease-ms by the next server.
    tokio.shutdown_timeout(std::time::Duration::from_millis(500));
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            match error.is_bad_input() {
                true => ExitCode::from(EXIT_BAD_INPUT),
                false => ExitCode::FAILURE,
            }
        }
    }
}

/// The builder the flags describe, and the HTTP address (`None`: stdio).
fn configured(
    args: &ServeArgs,
    exports: PathBuf,
) -> Result<(ServerBuilder, Option<String>), String> {
    let mut builder = ServerBuilder::new(&args.store)
        .example_tools(exports, args.conformance_tools)
        .workers(args.workers)
        .lease_ms(args.lease_ms)
        .drain_ms(args.drain_ms)
        .limits(LimitsConfig {
            waits_per_key_max: args.waits_per_caller,
            requests_per_key_max: args.requests_per_caller,
            sessions_per_key_max: args.sessions_per_caller,
            polls_per_key_per_s: args.polls_per_second,
            polls_per_key_burst: args.poll_burst,
        })
        .probe(hold_probe(args.hold_at.as_deref()).map_err(|error| format!("--hold-at {error}"))?);
    if args.http.is_some() {
        if args.tokens.is_none() && !args.anonymous {
            return Err(
                "--http needs --tokens FILE or --anonymous (every caller must be identified)"
                    .into(),
            );
        }
        if let Some(path) = &args.tokens {
            builder =
                builder.tokens(Tokens::load(path).map_err(|error| format!("--tokens {error}"))?);
        }
        builder = builder
            .anonymous(args.anonymous)
            .body_bytes_max(args.body_limit_bytes)
            .connections(args.connections_max, args.idle_timeout_ms);
        for origin in &args.allowed_origins {
            builder = builder.allow_origin(origin);
        }
    }
    Ok((builder, args.http.clone()))
}
