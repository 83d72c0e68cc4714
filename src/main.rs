//! The `tasklatch` command line.
//!
//! Exit status: 0 success; 1 a check ran and failed (a mismatch); 2 bad input (a malformed
//! fixture, an unreadable file, bad arguments).

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use tasklatch::fixture::{self, ContractEvaluator, Summary};

#[derive(Parser)]
#[command(
    name = "tasklatch",
    version,
    about = "The MCP 2025-11-25 task state contract and its proving harness"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Replay contract fixture files through the pure contract and compare decisions.
    Replay {
        /// Fixture files (format tasklatch.contract-fixture/v1).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print a machine-readable JSON report instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Run a simulation scenario over a seed range (needs `--features sim`).
    #[cfg(all(feature = "sim", madsim))]
    Sim {
        #[arg(long, default_value = "baseline")]
        scenario: String,
        /// Seed range `a..b` (half-open).
        #[arg(long, default_value = "0..100")]
        seeds: String,
        /// Sweep mode: crash the node that is the `--arrival`-th to reach this point
        /// (after-outbox-claim, after-publish, after-claim, after-effect, after-prepare,
        /// after-decide, after-completion).
        #[arg(long)]
        kill_at: Option<String>,
        #[arg(long, default_value_t = 1)]
        arrival: u64,
        /// The store under test, fresh per seed: `memory:` or `sqlite:DIR`.
        #[arg(long, default_value = "memory:")]
        store: String,
    },
    /// Replay one seed deterministically and print its timeline and trace hash.
    #[cfg(all(feature = "sim", madsim))]
    Repro {
        /// A scenario name, or a scenario file (a hunt's `minimal.scenario.json`, say).
        #[arg(long)]
        scenario: String,
        #[arg(long)]
        seed: u64,
        /// The store the run used: `memory:` or `sqlite:DIR`.
        #[arg(long, default_value = "memory:")]
        store: String,
    },
    /// Hunt races: run scenarios over fresh seeds until the budget or seed count is spent;
    /// write each failure's artifacts, minimise its fault schedule. Exit 1 on any failure.
    #[cfg(all(feature = "sim", madsim))]
    Hunt(hunting::HuntArgs),
    /// Run every engine against every named mutant and print the kill matrix (needs
    /// `--features mutants`). Exit 1 when an engine misses a mutant it must kill or fails
    /// without one.
    #[cfg(feature = "mutants")]
    Mutants {
        /// Only these mutants (repeatable; default: all, plus the unmutated build).
        #[arg(long = "mutant")]
        mutants: Vec<String>,
        /// Only these engines (repeatable): fixture, conformance, simulation, proptest, loom,
        /// probe (`tasklatch serve` of this binary with each mutant, probed from outside).
        #[arg(long = "engine")]
        engines: Vec<String>,
        /// Print the matrix as a Markdown table too.
        #[arg(long)]
        markdown: bool,
        /// Also run the conformance engine on PostgreSQL at this URL (with
        /// `--features postgres`). Every store is a fresh schema `tl_matrix_<pid>_<n>`, left
        /// behind: use a throwaway database.
        #[arg(long)]
        postgres: Option<String>,
    },
    /// Serve MCP 2025-11-25 tasks with the built-in example tools (`export`, `archive`,
    /// `echo`), running the outbox dispatcher, workers and sweeper in-process.
    Serve(serving::ServeArgs),
    /// Check a live MCP tasks server, in any language, from the outside: the wire shapes of
    /// each protocol era it advertises. Exit 1 on any finding, 2 when the server cannot be
    /// reached or initialized.
    Probe(Box<probing::ProbeArgs>),
    /// Benchmarks.
    Bench {
        #[command(subcommand)]
        what: BenchCommand,
    },
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Store throughput as a ratio to bare `UPDATE … WHERE id = ?` through the same driver.
    Store {
        /// SQLite store URL to measure (default: a scratch file, synchronous=normal).
        #[arg(long)]
        sqlite: Option<String>,
        /// PostgreSQL URL to measure as well (needs a build with `--features postgres`).
        #[arg(long)]
        postgres: Option<String>,
        /// Tasks per create+complete trial.
        #[arg(long, default_value_t = 2_000)]
        tasks: usize,
        /// Concurrent writers in the contended workload.
        #[arg(long, default_value_t = 8)]
        writers: usize,
        /// Transition attempts per writer per contended trial.
        #[arg(long, default_value_t = 1_000)]
        attempts: usize,
        /// Trials per side (the median is reported).
        #[arg(long, default_value_t = 3)]
        trials: usize,
    },
    /// Load a live MCP tasks server (either era, over Streamable HTTP), or several side by
    /// side (--targets), and report throughput and p50/p99/p99.9 latency per method, with
    /// the server's and the generator's own CPU.
    Http(Box<BenchHttpArgs>),
}

#[derive(clap::Args)]
struct BenchHttpArgs {
    /// The server's endpoint, e.g. http://127.0.0.1:8931/mcp.
    #[arg(long, value_name = "URL", required_unless_present = "targets")]
    http: Option<String>,
    /// Instead of --http: a JSON file naming several servers (URL, era, pids, tokens,
    /// tool) and the reference; every workload runs against each, rounds alternating, and
    /// the report gives each figure as a ratio to the reference's.
    #[arg(long, value_name = "FILE", conflicts_with = "http")]
    targets: Option<PathBuf>,
    /// With --targets: rounds per workload (each cell is the median).
    #[arg(long, default_value_t = 3, requires = "targets")]
    rounds: usize,
    /// With --http: the protocol era spoken, 2025-11-25 or 2026-07-28.
    #[arg(long, default_value = "2025-11-25", conflicts_with = "targets")]
    era: String,
    /// With --http: a bearer token (repeatable: connections are dealt out to the tokens
    /// round-robin).
    #[arg(long = "token", conflicts_with = "targets")]
    tokens: Vec<String>,
    /// create-poll-result, poll-heavy, cancel-heavy or create (repeatable; default:
    /// create-poll-result with --http, all four with --targets).
    #[arg(long = "workload")]
    workloads: Vec<String>,
    /// Clients, each with one keep-alive connection (2025-11-25: and one session).
    #[arg(long, default_value_t = 16)]
    connections: usize,
    /// How long requests are counted.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// How long requests run uncounted first.
    #[arg(long, default_value_t = 2)]
    warmup_seconds: u64,
    /// Open loop at this many workload steps a second (default: closed loop).
    #[arg(long)]
    rate: Option<u64>,
    /// Fixes every draw the workload makes.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// With --http: the tool the tasks run.
    #[arg(long, default_value = "export", conflicts_with = "targets")]
    tool: String,
    /// With --http: its arguments for a short task, as JSON.
    #[arg(
        long,
        default_value = r#"{"name": "bench", "delay_ms": 0}"#,
        conflicts_with = "targets"
    )]
    args: String,
    /// With --http: its arguments for the long task cancel-heavy cancels, as JSON.
    #[arg(
        long,
        default_value = r#"{"name": "bench", "delay_ms": 600000}"#,
        conflicts_with = "targets"
    )]
    long_args: String,
}

const EXIT_MISMATCH: u8 = 1;
const EXIT_BAD_INPUT: u8 = 2;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return if error.use_stderr() {
                ExitCode::from(EXIT_BAD_INPUT)
            } else {
                ExitCode::SUCCESS // --help, --version
            };
        }
    };
    match cli.command {
        Command::Replay { files, json } => replay(&files, json),
        Command::Serve(args) => serving::serve(args),
        Command::Probe(args) => probing::probe(*args),
        #[cfg(all(feature = "sim", madsim))]
        Command::Sim {
            scenario,
            seeds,
            kill_at,
            arrival,
            store,
        } => sim::run(&scenario, &seeds, kill_at.as_deref(), arrival, &store),
        #[cfg(all(feature = "sim", madsim))]
        Command::Repro {
            scenario,
            seed,
            store,
        } => sim::repro(&scenario, seed, &store),
        #[cfg(all(feature = "sim", madsim))]
        Command::Hunt(args) => hunting::hunt(args),
        #[cfg(feature = "mutants")]
        Command::Mutants {
            mutants,
            engines,
            markdown,
            postgres,
        } => mutants::run(&mutants, &engines, markdown, postgres),
        Command::Bench {
            what: BenchCommand::Http(args),
        } => bench_http(*args),
        Command::Bench {
            what:
                BenchCommand::Store {
                    sqlite,
                    postgres,
                    tasks,
                    writers,
                    attempts,
                    trials,
                },
        } => {
            let config = tasklatch::bench::BenchConfig {
                tasks: tasks.max(1),
                writers: writers.max(1),
                attempts: attempts.max(1),
                trials: trials.max(1),
                ..tasklatch::bench::BenchConfig::default()
            };
            match bench_store(sqlite, postgres, &config) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("error: {error}");
                    ExitCode::from(EXIT_BAD_INPUT)
                }
            }
        }
    }
}

/// A multi-threaded tokio runtime, or the exit code after saying why there is none.
fn async_runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| {
            eprintln!("error: cannot start the async runtime: {error}");
            ExitCode::FAILURE
        })
}

fn bench_http(args: BenchHttpArgs) -> ExitCode {
    use tasklatch::bench::compare::{self, CompareConfig, Targets};
    use tasklatch::bench::http::{self, HttpBenchConfig, Workload};
    let json_arg = |flag: &str, text: &str| -> Result<serde_json::Value, String> {
        match serde_json::from_str::<serde_json::Value>(text) {
            Ok(value) if value.is_object() => Ok(value),
            Ok(_) => Err(format!("{flag}: expected a JSON object")),
            Err(error) => Err(format!("{flag}: not JSON: {error}")),
        }
    };
    let workloads: Result<Vec<Workload>, String> = if args.workloads.is_empty() {
        Ok(match args.targets {
            Some(_) => Workload::ALL.to_vec(),
            None => vec![Workload::CreatePollResult],
        })
    } else {
        args.workloads
            .iter()
            .map(|name| Workload::parse(name))
            .collect()
    };
    let era = tasklatch::contract::Era::parse(&args.era)
        .ok_or_else(|| format!("--era {:?}: expected 2025-11-25 or 2026-07-28", args.era));
    let config = match (
        workloads,
        era,
        json_arg("--args", &args.args),
        json_arg("--long-args", &args.long_args),
    ) {
        (Ok(workloads), Ok(era), Ok(short_arguments), Ok(long_arguments)) => {
            let config = HttpBenchConfig {
                url: args.http.clone().unwrap_or_default(),
                era,
                tokens: args.tokens,
                workload: workloads[0],
                connections: args.connections,
                duration_ms: args.seconds.saturating_mul(1_000),
                warmup_ms: args.warmup_seconds.saturating_mul(1_000),
                rate_per_s: args.rate,
                seed: args.seed,
                tool: args.tool,
                short_arguments,
                long_arguments,
                ..HttpBenchConfig::default()
            };
            CompareConfig {
                workloads,
                rounds: args.rounds,
                settle_ms_max: compare::SETTLE_MS_MAX,
                base: config,
            }
        }
        (Err(error), ..) | (_, Err(error), ..) | (.., Err(error), _) | (.., Err(error)) => {
            eprintln!("error: {error}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let targets = match &args.targets {
        Some(path) => match Targets::load(path) {
            Ok(targets) => Some(targets),
            Err(error) => {
                eprintln!("error: --targets {error}");
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        },
        None => None,
    };
    // The URL is each target's; the other settings are checked with each.
    let checked = match &targets {
        Some(targets) => targets.targets.iter().try_for_each(|target| {
            let config = HttpBenchConfig {
                url: target.url.clone(),
                ..config.base.clone()
            };
            http::check(&config)
                .map(|_| ())
                .map_err(|error| format!("{}: {error}", target.name))
        }),
        None => http::check(&config.base).map(|_| ()),
    };
    if let Err(error) = checked {
        eprintln!("error: {error}");
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    let tokio = match async_runtime() {
        Ok(tokio) => tokio,
        Err(code) => return code,
    };
    let outcome = tokio.block_on(async {
        match &targets {
            Some(targets) => {
                let comparison = compare::compare(targets, &config, |name, run| {
                    eprintln!(
                        "{name}: {} {:.0} requests/s, server {} cores, generator {} cores",
                        run.report.workload.as_str(),
                        run.report.requests_per_s,
                        run.server_cores.map_or("?".into(), |c| format!("{c:.2}")),
                        run.report
                            .generator_cores
                            .map_or("?".into(), |c| format!("{c:.2}")),
                    );
                })
                .await?;
                Ok(compare::render(&comparison))
            }
            None => {
                let mut out = String::new();
                for &workload in &config.workloads {
                    let report = http::run(HttpBenchConfig {
                        workload,
                        ..config.base.clone()
                    })
                    .await?;
                    out.push_str(&http::render(&report));
                }
                Ok::<_, String>(out)
            }
        }
    });
    match outcome {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        // A server that cannot be reached or refuses the load: the URL or the targets file
        // named the wrong thing.
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

fn replay(files: &[PathBuf], json: bool) -> ExitCode {
    let mut reports = Vec::new();
    let mut errors = Vec::new();
    for path in files {
        match fixture::load_fixture(path) {
            Ok(loaded) => reports.push(fixture::replay(&loaded, &mut ContractEvaluator)),
            Err(error) => errors.push(error),
        }
    }
    let mut total = Summary::default();
    for report in &reports {
        total.add(report.summary);
    }
    if json {
        let document = serde_json::json!({
            "files": reports,
            "errors": errors.iter().map(|error| serde_json::json!({
                "path": error.path.display().to_string(),
                "line": error.line,
                "column": error.column,
                "case_id": error.case_id,
                "field": error.field,
                "message": error.message,
                "display": error.to_string(),
            })).collect::<Vec<_>>(),
            "summary": total,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&document).expect("a JSON value always serialises")
        );
    } else {
        for (index, report) in reports.iter().enumerate() {
            if index > 0 {
                println!();
            }
            print!("{}", fixture::render_text(report));
        }
        if reports.len() > 1 {
            println!("\ntotal: {total}");
        }
    }
    for error in &errors {
        eprintln!("error: {error}");
    }
    if !errors.is_empty() {
        ExitCode::from(EXIT_BAD_INPUT)
    } else if total.mismatched > 0 {
        ExitCode::from(EXIT_MISMATCH)
    } else {
        ExitCode::SUCCESS
    }
}

fn bench_store(
    sqlite: Option<String>,
    postgres: Option<String>,
    config: &tasklatch::bench::BenchConfig,
) -> Result<(), String> {
    use tasklatch::bench::{SqliteTarget, bench_target, render};
    use tasklatch::store::StoreUrl;
    let run_id = format!("run{}", std::process::id());
    let scratch = std::env::temp_dir().join(format!("tasklatch-bench-{}", std::process::id()));
    let url = match sqlite {
        Some(url) => url,
        None => {
            std::fs::create_dir_all(&scratch).map_err(|error| error.to_string())?;
            format!(
                "sqlite:{}?synchronous=normal",
                scratch.join("bench.db").display()
            )
        }
    };
    let StoreUrl::Sqlite(options) = StoreUrl::parse(&url).map_err(|error| error.to_string())?
    else {
        return Err(format!("--sqlite wants a sqlite: URL, not {url:?}"));
    };
    let mut rows = Vec::new();
    eprintln!("measuring sqlite ({url}) …");
    rows.extend(
        bench_target(&SqliteTarget { options }, config, &run_id)
            .map_err(|error| error.to_string())?,
    );
    if let Some(url) = postgres {
        #[cfg(feature = "postgres")]
        {
            eprintln!("measuring postgres …");
            let target = tasklatch::bench::PostgresTarget {
                url,
                schema: format!("tasklatch_bench_{}", std::process::id()),
            };
            rows.extend(bench_target(&target, config, &run_id).map_err(|error| error.to_string())?);
        }
        #[cfg(not(feature = "postgres"))]
        return Err(format!(
            "--postgres {url:?}: this build has no PostgreSQL adapter (build with --features postgres)"
        ));
    }
    let _ = std::fs::remove_dir_all(&scratch);
    print!("{}", render(&rows, config));
    Ok(())
}

mod serving {
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
}

#[cfg(all(feature = "sim", madsim))]
mod sim {
    use super::{EXIT_BAD_INPUT, EXIT_MISMATCH};
    use std::process::ExitCode;
    use tasklatch::runtime::Point;
    use tasklatch::sim::{Scenario, Sim, Sweep, parse_seed_range, store_for};

    pub fn run(
        name: &str,
        seeds: &str,
        kill_at: Option<&str>,
        arrival: u64,
        store: &str,
    ) -> ExitCode {
        let store = match store_for(store) {
            Ok(store) => store,
            Err(error) => {
                eprintln!("error: {error}");
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        };
        let sweep = match kill_at {
            None => None,
            Some(point) => match Point::parse(point) {
                Ok(point) => Some(Sweep {
                    point,
                    arrival: arrival.max(1),
                }),
                Err(error) => {
                    eprintln!("error: --kill-at: {error}");
                    return ExitCode::from(EXIT_BAD_INPUT);
                }
            },
        };
        let (scenario, range) = match (load_scenario(name), parse_seed_range(seeds)) {
            (Ok(scenario), Ok(range)) => (scenario, range),
            (Err(error), _) | (_, Err(error)) => {
                eprintln!("error: {error}");
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        };
        let (first, end) = (range.start, range.end);
        let started = std::time::Instant::now();
        let mut failing = 0u64;
        let mut marks = std::collections::BTreeMap::<String, u64>::new();
        for seed in first..end {
            let mut sim = Sim::new(&scenario).store(store.as_ref());
            if let Some(sweep) = sweep {
                sim = sim.sweep(sweep);
            }
            let outcome = sim.run(seed);
            for (mark, count) in &outcome.marks {
                *marks.entry(mark.clone()).or_default() += count;
            }
            if let Some(first) = outcome.violations.first() {
                failing += 1;
                println!(
                    "seed {seed}: {first}\n  reproduce: {}",
                    outcome.repro_command()
                );
            }
        }
        let seconds = started.elapsed().as_secs_f64();
        println!(
            "scenario {name}: {} seeds, {failing} with violations, {:.0} seeds/s",
            end - first,
            (end - first) as f64 / seconds.max(1e-9)
        );
        for (mark, count) in marks {
            println!("  mark {mark:<28} {count}");
        }
        if failing == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(EXIT_MISMATCH)
        }
    }

    /// A scenario by name, or from a file when `name` looks like a path.
    pub fn load_scenario(name: &str) -> Result<Scenario, String> {
        if name.ends_with(".json") || name.contains('/') {
            Scenario::load(std::path::Path::new(name))
        } else {
            Scenario::by_name(name)
        }
    }

    pub fn repro(name: &str, seed: u64, store: &str) -> ExitCode {
        let (scenario, store) = match (load_scenario(name), store_for(store)) {
            (Ok(scenario), Ok(store)) => (scenario, store),
            (Err(error), _) | (_, Err(error)) => {
                eprintln!("error: {error}");
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        };
        let outcome = Sim::new(&scenario).store(store.as_ref()).run(seed);
        for line in outcome.timeline() {
            println!("{line}");
        }
        for violation in &outcome.violations {
            println!("VIOLATION {violation}");
        }
        println!(
            "scenario {} seed {seed}: {} events, {} violations, trace {}",
            scenario.name,
            outcome.history.len(),
            outcome.violations.len(),
            outcome.trace_hash
        );
        if outcome.violations.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(EXIT_MISMATCH)
        }
    }
}

#[cfg(all(feature = "sim", madsim))]
mod hunting {
    use super::{EXIT_BAD_INPUT, EXIT_MISMATCH};
    use std::io::IsTerminal as _;
    use std::path::PathBuf;
    use std::process::ExitCode;
    use tasklatch::hunt::{self, HuntConfig, Keep, Progress, Shard};
    use tasklatch::sim::{KNOWN_MARKS, Scenario};

    #[derive(clap::Args)]
    pub struct HuntArgs {
        /// Scenario names or files (repeatable; default: every scenario in ./scenarios).
        #[arg(long = "scenario")]
        scenarios: Vec<String>,
        /// Stop starting runs after this long: `60s`, `10m`, `2h`. Default 60s, unless
        /// `--seeds` bounds the hunt instead.
        #[arg(long)]
        budget: Option<String>,
        /// Stop after this many seeds (each runs every scenario).
        #[arg(long)]
        seeds: Option<u64>,
        /// First seed of the seed space (default: drawn from the OS and printed). Shards of
        /// one hunt must share it.
        #[arg(long)]
        from: Option<u64>,
        /// Simulations side by side (default: every core).
        #[arg(long)]
        jobs: Option<usize>,
        /// Run slice `i` of `n` of the seed space (seeds ≡ i mod n): `0/4` … `3/4`.
        #[arg(long, default_value = "0/1")]
        shard: String,
        /// Keep hunting after a failure and collect them (up to --failures-max).
        #[arg(long)]
        keep_going: bool,
        #[arg(long, default_value_t = 16)]
        failures_max: usize,
        /// Folder for failure artifacts.
        #[arg(long, default_value = "hunt-artifacts")]
        out: PathBuf,
        /// Also write a JUnit XML report here.
        #[arg(long)]
        junit: Option<PathBuf>,
        /// Skip minimising failures.
        #[arg(long)]
        no_minimise: bool,
        /// Simulations a minimisation may spend per failure.
        #[arg(long, default_value_t = 3_000)]
        shrink_runs: usize,
        /// The store under test, fresh per run: `memory:` or `sqlite:DIR` (a database file
        /// per run in DIR, removed after it).
        #[arg(long, default_value = "memory:")]
        store: String,
        /// Hunt with this mutant on (a build with `--features mutants`; the same as
        /// `TASKLATCH_MUTANT`).
        #[cfg(feature = "mutants")]
        #[arg(long)]
        mutant: Option<String>,
    }

    fn bad(message: impl std::fmt::Display) -> ExitCode {
        eprintln!("error: {message}");
        ExitCode::from(EXIT_BAD_INPUT)
    }

    pub fn hunt(args: HuntArgs) -> ExitCode {
        #[cfg(feature = "mutants")]
        if let Some(name) = &args.mutant {
            match tasklatch::mutants::Mutant::parse(name) {
                Ok(mutant) => tasklatch::mutants::select(Some(mutant)),
                Err(error) => return bad(format_args!("--mutant: {error}")),
            }
        }
        let scenarios = if args.scenarios.is_empty() {
            Scenario::all()
        } else {
            args.scenarios
                .iter()
                .map(|name| super::sim::load_scenario(name))
                .collect()
        };
        let scenarios = match scenarios {
            Ok(scenarios) if scenarios.is_empty() => return bad("no scenarios to hunt"),
            Ok(scenarios) => scenarios,
            Err(error) => return bad(error),
        };
        let shard = match Shard::parse(&args.shard) {
            Ok(shard) => shard,
            Err(error) => return bad(format_args!("--shard {error}")),
        };
        let budget = match (&args.budget, args.seeds) {
            (Some(text), _) => match tasklatch::report::parse_budget(text) {
                Ok(budget) => Some(budget),
                Err(error) => return bad(format_args!("--budget {error}")),
            },
            (None, Some(_)) => None,
            (None, None) => Some(std::time::Duration::from_secs(60)),
        };
        if args.failures_max == 0 || args.shrink_runs == 0 {
            return bad("--failures-max and --shrink-runs must be positive");
        }
        let first_seed = match args.from {
            Some(seed) => seed,
            None => {
                let mut bytes = [0u8; 8];
                if let Err(error) = getrandom::fill(&mut bytes) {
                    return bad(format_args!("drawing a first seed: {error}"));
                }
                // Small enough to read and paste; wide enough never to repeat by chance.
                u64::from_le_bytes(bytes) % 1_000_000_000_000
            }
        };
        let jobs = args.jobs.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        });
        let store = match tasklatch::sim::store_for(&args.store) {
            Ok(store) => std::sync::Arc::from(store),
            Err(error) => return bad(error),
        };
        let config = HuntConfig {
            scenarios,
            store,
            first_seed,
            shard,
            budget,
            seeds: args.seeds,
            jobs: jobs.clamp(1, 256),
            keep_going: args.keep_going,
            failures_max: args.failures_max,
        };
        let mutant = tasklatch::mutants::active_name();
        let names: Vec<&str> = config.scenarios.iter().map(|s| s.name.as_str()).collect();
        eprintln!(
            "hunting {} from seed {first_seed}, shard {}/{}, {} jobs, {}{}",
            names.join(", "),
            shard.index,
            shard.count,
            config.jobs,
            match (budget, args.seeds) {
                (Some(budget), _) => format!("budget {}", humantime::format_duration(budget)),
                (None, Some(seeds)) => format!("{seeds} seeds"),
                (None, None) => unreachable!("a default budget is set above"),
            },
            mutant.map(|m| format!(", mutant {m}")).unwrap_or_default()
        );
        let keep = Keep {
            out: args.out,
            minimise: !args.no_minimise,
            shrink_runs: args.shrink_runs,
            junit: args.junit,
        };
        let finished = match hunt::hunt_and_keep(&config, &keep, &mut progress_display(&config)) {
            Ok(finished) => finished,
            Err(error) => return bad(error),
        };
        for warning in &finished.warnings {
            eprintln!("warning: {warning}");
        }
        print!("{}", finished.summary(&config, &keep));
        if finished.report.failing() == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(EXIT_MISMATCH)
        }
    }

    /// A progress bar on a terminal; elsewhere (CI logs) a line every ten seconds.
    fn progress_display(config: &HuntConfig) -> impl FnMut(&Progress) + use<> {
        let terminal = std::io::stderr().is_terminal();
        let length = match (config.budget, config.seeds) {
            (Some(budget), _) => budget.as_millis() as u64,
            (None, Some(seeds)) => seeds * config.scenarios.len() as u64,
            (None, None) => 0,
        };
        let by_time = config.budget.is_some();
        let bar = indicatif::ProgressBar::new(length.max(1));
        if terminal {
            bar.set_style(
                indicatif::ProgressStyle::with_template("{bar:30} {elapsed_precise} {msg}")
                    .expect("a valid template"),
            );
        } else {
            bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        }
        let mut logged_at = std::time::Instant::now();
        move |progress: &Progress| {
            let message = format!(
                "{} runs, {:.0}/s, {} failing, marks {}/{}",
                progress.runs,
                progress.runs_per_second(),
                progress.failing,
                progress.marks_hit,
                KNOWN_MARKS.len()
            );
            if terminal {
                bar.set_position(if by_time {
                    progress.elapsed.as_millis() as u64
                } else {
                    progress.runs
                });
                bar.set_message(message);
            } else if logged_at.elapsed() >= std::time::Duration::from_secs(10) {
                eprintln!("{:>6.0} s  {message}", progress.elapsed.as_secs_f64());
                logged_at = std::time::Instant::now();
            }
        }
    }
}

#[cfg(feature = "mutants")]
mod mutants {
    use super::EXIT_BAD_INPUT;
    use std::process::ExitCode;
    use tasklatch::matrix::{self, Engine, Plan};
    use tasklatch::mutants::Mutant;

    pub fn run(
        mutants: &[String],
        engines: &[String],
        markdown: bool,
        postgres: Option<String>,
    ) -> ExitCode {
        if postgres.is_some() && !cfg!(feature = "postgres") {
            eprintln!("error: --postgres needs a build with `--features postgres`");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
        let scratch =
            std::env::temp_dir().join(format!("tasklatch-mutants-{}", std::process::id()));
        if let Err(error) = std::fs::create_dir_all(&scratch) {
            eprintln!("error: {}: {error}", scratch.display());
            return ExitCode::from(EXIT_BAD_INPUT);
        }
        let mut plan = Plan::full(&scratch);
        plan.postgres_url = postgres;
        // The probe column serves each mutant with this very binary.
        plan.probe_server = std::env::current_exe().ok();
        if !mutants.is_empty() {
            match mutants
                .iter()
                .map(|name| match name.as_str() {
                    "none" | "unmutated" => Ok(None),
                    name => Mutant::parse(name).map(Some),
                })
                .collect::<Result<Vec<_>, _>>()
            {
                Ok(chosen) => plan.mutants = chosen,
                Err(error) => {
                    eprintln!("error: --mutant: {error}");
                    return ExitCode::from(EXIT_BAD_INPUT);
                }
            }
        }
        if !engines.is_empty() {
            let mut chosen = Vec::new();
            for name in engines {
                match Engine::ALL.into_iter().find(|engine| engine.name() == name) {
                    Some(engine) => chosen.push(engine),
                    None => {
                        let known: Vec<&str> = Engine::ALL.iter().map(|e| e.name()).collect();
                        eprintln!("error: --engine {name:?}: known: {}", known.join(", "));
                        return ExitCode::from(EXIT_BAD_INPUT);
                    }
                }
            }
            plan.engines = chosen;
        }
        let matrix = matrix::run(&plan, &mut |mutant, column, cell| {
            eprintln!(
                "{mutant:<28} {:<22} {}",
                column.name(),
                if cell.killed { "killed" } else { "survived" }
            );
        });
        let _ = std::fs::remove_dir_all(&scratch);
        println!("{}", matrix.render_text());
        println!("first failures:\n{}", matrix.render_details());
        if markdown {
            println!("{}", matrix.render_markdown());
        }
        let shortfalls = matrix.shortfalls();
        if shortfalls.is_empty() {
            println!("every engine kills what it must; the unmutated build passes every engine");
            ExitCode::SUCCESS
        } else {
            for shortfall in &shortfalls {
                println!("SHORTFALL: {shortfall}");
            }
            ExitCode::FAILURE
        }
    }
}

// A `sim` build (never shipped) spends a third of its time in glibc's allocator: each run
// builds and drops a whole world. mimalloc halves that; allocation order never reaches a
// run's behaviour, so traces are unchanged.
#[cfg(all(feature = "sim", madsim))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod probing {
    use super::{EXIT_BAD_INPUT, EXIT_MISMATCH};
    use std::path::PathBuf;
    use std::process::ExitCode;
    use tasklatch::contract::Era;
    use tasklatch::probe::workload::Workload;
    use tasklatch::probe::{self, Config, EraChoice, Target, render};
    use tasklatch::report::{parse_budget, write_whole};

    #[derive(clap::Args)]
    pub struct ProbeArgs {
        /// Spawn the server given after `--` and speak over its stdin and stdout (one
        /// process is one requestor).
        #[arg(long, conflicts_with = "http", required_unless_present = "http")]
        stdio: bool,
        /// Speak Streamable HTTP to URL (`http://HOST:PORT/PATH`).
        #[arg(long, value_name = "URL")]
        http: Option<String>,
        /// With --http: an identity, `NAME=TOKEN` (sent as `Authorization: Bearer TOKEN`;
        /// repeatable). None: one identity without a token.
        #[arg(long = "token", value_name = "NAME=TOKEN", requires = "http")]
        tokens: Vec<String>,
        /// The protocol era: `2025-11-25`, `2026-07-28`, or `auto` (each one the server
        /// advertises).
        #[arg(long, default_value = "auto")]
        era: String,
        /// The tool the checks create tasks with (default: the first that can run as one).
        #[arg(long)]
        tool: Option<String>,
        /// Its arguments, a JSON object laid over the ones sampled from its input schema
        /// (each required property: its default, first enum value, or a plain value).
        #[arg(long, value_name = "JSON")]
        args: Option<String>,
        /// A tool whose tasks ask for input: in the 2026-07-28 era a quarter of the
        /// workload's creates use it and `tasks/update` answers its questions.
        #[arg(long, value_name = "NAME")]
        input_tool: Option<String>,
        /// Its arguments, laid over the sampled ones as with --args.
        #[arg(long, value_name = "JSON", requires = "input_tool")]
        input_args: Option<String>,
        /// Where a task's side effect shows, `{taskId}` standing for its id (e.g.
        /// `exports/{taskId}.json`): cancels aimed at the completion moment, and a task
        /// that ends cancelled with its effect present is a finding.
        #[arg(long, value_name = "TEMPLATE")]
        effect_path: Option<String>,
        /// How long one request may wait for its answer.
        #[arg(long, default_value = "10s")]
        request_timeout: String,
        /// How long a task the checks created may take to end.
        #[arg(long, default_value = "60s")]
        task_timeout: String,
        /// The longest TTL the expiry check waits out (it asks for 1 s; a server that
        /// grants more than this makes the check n/a).
        #[arg(long, default_value = "15s")]
        expiry_wait: String,
        /// Phase 3: how long the clients issue operations, per era (`0` skips the workload).
        #[arg(long, default_value = "10s")]
        budget: String,
        /// The seed of the workload's choices and of the aimed cancels (default: drawn, and
        /// printed in the rerun command).
        #[arg(long)]
        seed: Option<u64>,
        /// Workload clients per identity.
        #[arg(long, default_value_t = 2)]
        clients: usize,
        /// With --http: the command that starts the server (run through `sh -c`); the probe
        /// waits until the URL's address accepts connections, owns the process, and stops
        /// it at the end.
        #[arg(long, value_name = "CMD", requires = "http")]
        start: Option<String>,
        /// SIGKILL and restart the server at seeded times during the workload (about one
        /// kill per 4 s of budget); needs a server the probe owns (--stdio, or --start).
        #[arg(long)]
        kill: bool,
        /// The server claims its tasks survive a restart: a task lost at a kill is a finding.
        #[arg(long)]
        durable: bool,
        /// After the run, run the same probe (same seed) this many times more and report how
        /// often each finding recurred.
        #[arg(long, default_value_t = 0)]
        reruns: usize,
        /// Write the report (`probe.json`) and one record per finding (`findings/`) here.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Write a JUnit file here (a case per check; n/a is skipped).
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
        /// Print the report as JSON instead of the table.
        #[arg(long)]
        json: bool,
        /// With --stdio: the server's command and arguments.
        #[arg(last = true, value_name = "CMD")]
        command: Vec<String>,
    }

    /// `text` (the value of `flag`) as a JSON object.
    fn json_object(flag: &str, text: Option<&str>) -> Result<Option<serde_json::Value>, String> {
        match text.map(serde_json::from_str::<serde_json::Value>) {
            None => Ok(None),
            Some(Ok(value)) if value.is_object() => Ok(Some(value)),
            Some(Ok(_)) => Err(format!(
                "{flag} {:?}: must be a JSON object",
                text.unwrap_or("")
            )),
            Some(Err(error)) => Err(format!(
                "{flag} {:?}: not JSON: {error}",
                text.unwrap_or("")
            )),
        }
    }

    fn config(args: &ProbeArgs) -> Result<Config, String> {
        let target = match (&args.http, args.stdio) {
            (Some(url), _) => {
                if !args.command.is_empty() {
                    return Err("--http takes no command after `--` (that is --stdio's)".into());
                }
                let mut tokens = Vec::new();
                for pair in &args.tokens {
                    let Some((name, token)) = pair.split_once('=') else {
                        return Err(format!("--token {pair:?}: expected NAME=TOKEN"));
                    };
                    if name.is_empty() || token.is_empty() {
                        return Err(format!(
                            "--token {pair:?}: NAME and TOKEN must not be empty"
                        ));
                    }
                    if tokens
                        .iter()
                        .any(|(known, _): &(String, String)| known == name)
                    {
                        return Err(format!(
                            "--token {pair:?}: the name {name:?} is given twice"
                        ));
                    }
                    tokens.push((name.to_owned(), token.to_owned()));
                }
                Target::Http {
                    url: url.clone(),
                    tokens,
                    start: args.start.clone(),
                }
            }
            (None, _) => {
                let Some((program, rest)) = args.command.split_first() else {
                    return Err("--stdio needs the server's command after `--`: \
                         tasklatch probe --stdio -- CMD ARGS…"
                        .into());
                };
                Target::Stdio {
                    program: program.clone(),
                    args: rest.to_vec(),
                }
            }
        };
        let mut config = Config::new(target);
        config.era = match args.era.as_str() {
            "auto" => EraChoice::Auto,
            "2025-11-25" => EraChoice::Only(Era::Core2025),
            "2026-07-28" => EraChoice::Only(Era::Extension2026),
            other => {
                return Err(format!(
                    "--era {other:?}: expected 2025-11-25, 2026-07-28 or auto"
                ));
            }
        };
        config.tool = args.tool.clone();
        config.progress = !args.json;
        if args.reruns > 100 {
            return Err(format!("--reruns {}: at most 100", args.reruns));
        }
        config.args = json_object("--args", args.args.as_deref())?;
        config.input_tool = args.input_tool.clone();
        config.input_args = json_object("--input-args", args.input_args.as_deref())?;
        config.effect_path = args.effect_path.clone();
        if let Some(template) = &config.effect_path
            && !template.contains("{taskId}")
        {
            return Err(format!(
                "--effect-path {template:?}: must contain {{taskId}}, where the task's id goes"
            ));
        }
        config.seed = args.seed.unwrap_or_else(drawn_seed);
        config.request_timeout = parse_budget(&args.request_timeout)
            .map_err(|error| format!("--request-timeout {error}"))?;
        config.task_timeout =
            parse_budget(&args.task_timeout).map_err(|error| format!("--task-timeout {error}"))?;
        config.expiry_wait =
            parse_budget(&args.expiry_wait).map_err(|error| format!("--expiry-wait {error}"))?;
        let budget = parse_budget(&args.budget).map_err(|error| format!("--budget {error}"))?;
        if !(1..=64).contains(&args.clients) {
            return Err(format!("--clients {}: expected 1 to 64", args.clients));
        }
        if !budget.is_zero() {
            config.workload = Some(Workload {
                budget,
                seed: config.seed,
                clients_per_identity: args.clients,
                kill: args.kill,
                durable: args.durable,
            });
        } else if args.kill {
            return Err("--kill needs the workload: a --budget above 0".into());
        }
        if args.kill && args.http.is_some() && args.start.is_none() {
            return Err(
                "--kill needs a server the probe owns: --stdio, or --http with --start \"CMD\""
                    .into(),
            );
        }
        if args.durable && !args.kill {
            return Err("--durable is a claim about restarts: give --kill too".into());
        }
        Ok(config)
    }

    /// A seed from the OS (a probe run is not deterministic anyway; the seed fixes the
    /// clients' choices, and the rerun command carries it).
    fn drawn_seed() -> u64 {
        let mut bytes = [0u8; 8];
        let _ = getrandom::fill(&mut bytes);
        u64::from_le_bytes(bytes) >> 16
    }

    /// The command line that reruns this probe with the same workload seed.
    fn rerun_line(config: &Config) -> String {
        let mut args: Vec<String> = std::env::args().collect();
        if !args
            .iter()
            .any(|arg| arg == "--seed" || arg.starts_with("--seed="))
        {
            let at = args
                .iter()
                .position(|arg| arg == "--")
                .unwrap_or(args.len());
            args.insert(at, config.seed.to_string());
            args.insert(at, "--seed".to_owned());
        }
        render::shell_line(&args)
    }

    pub fn probe(args: ProbeArgs) -> ExitCode {
        let config = match config(&args) {
            Ok(config) => config,
            Err(error) => {
                eprintln!("error: {error}");
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        };
        let runtime = match tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime,
            Err(error) => {
                eprintln!("error: cannot start the async runtime: {error}");
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        };
        let report = match runtime.block_on(probe::run_with_reruns(&config, args.reruns)) {
            Ok(report) => report,
            Err(unreachable) => {
                eprintln!("error: {unreachable}");
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        };
        let rerun = rerun_line(&config);
        if args.json {
            match serde_json::to_string_pretty(&report) {
                Ok(text) => println!("{text}"),
                Err(error) => eprintln!("error: {error}"),
            }
        } else {
            print!("{}", render::text(&report));
        }
        let written = args
            .out
            .as_ref()
            .map(|directory| render::write_out(&report, directory, &rerun))
            .transpose()
            .and_then(|_| {
                args.junit
                    .as_ref()
                    .map(|path| write_whole(path, &render::junit(&report)))
                    .transpose()
            });
        if let Err(error) = written {
            eprintln!("error: {error}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
        if report.findings().next().is_some() {
            ExitCode::from(EXIT_MISMATCH)
        } else {
            ExitCode::SUCCESS
        }
    }
}
