//! `tasklatch bench store` (a store's throughput as a ratio to its bare driver) and
//! `tasklatch bench http` (one live server, or several side by side).

use super::{EXIT_BAD_INPUT, async_runtime};
use clap::Subcommand;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Store throughput as a ratio to bare `UPDATE … WHERE id = ?` through the same driver.
    Store(StoreArgs),
    /// Load a live MCP tasks server (either era, over Streamable HTTP), or several side by
    /// side (--targets), and report throughput and p50/p99/p99.9 latency per method, with
    /// the server's and the generator's own CPU.
    Http(Box<BenchHttpArgs>),
}

#[derive(clap::Args)]
pub struct BenchHttpArgs {
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

#[derive(clap::Args)]
pub struct StoreArgs {
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
}

pub fn run(what: BenchCommand) -> ExitCode {
    match what {
        BenchCommand::Http(args) => bench_http(*args),
        BenchCommand::Store(args) => {
            let config = tasklatch::bench::BenchConfig {
                tasks: args.tasks.max(1),
                writers: args.writers.max(1),
                attempts: args.attempts.max(1),
                trials: args.trials.max(1),
                ..tasklatch::bench::BenchConfig::default()
            };
            match bench_store(args.sqlite, args.postgres, &config) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("error: {error}");
                    ExitCode::from(EXIT_BAD_INPUT)
                }
            }
        }
    }
}

fn bench_http(args: BenchHttpArgs) -> ExitCode {
    let targets_path = args.targets.clone();
    let prepared = http_config(args).and_then(|config| {
        let targets = http_targets(targets_path.as_deref(), &config)?;
        Ok((config, targets))
    });
    let (config, targets) = match prepared {
        Ok(prepared) => prepared,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let tokio = match async_runtime() {
        Ok(tokio) => tokio,
        Err(code) => return code,
    };
    match tokio.block_on(run_http(targets.as_ref(), &config)) {
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

/// The benchmark's settings from its flags; the error names the flag.
fn http_config(args: BenchHttpArgs) -> Result<tasklatch::bench::compare::CompareConfig, String> {
    use tasklatch::bench::compare::{self, CompareConfig};
    use tasklatch::bench::http::{HttpBenchConfig, Workload};
    let json_arg = |flag: &str, text: &str| -> Result<serde_json::Value, String> {
        match serde_json::from_str::<serde_json::Value>(text) {
            Ok(value) if value.is_object() => Ok(value),
            Ok(_) => Err(format!("{flag}: expected a JSON object")),
            Err(error) => Err(format!("{flag}: not JSON: {error}")),
        }
    };
    let workloads: Vec<Workload> = if args.workloads.is_empty() {
        match args.targets {
            Some(_) => Workload::ALL.to_vec(),
            None => vec![Workload::CreatePollResult],
        }
    } else {
        args.workloads
            .iter()
            .map(|name| Workload::parse(name))
            .collect::<Result<_, _>>()?
    };
    let era = tasklatch::contract::Era::parse(&args.era)
        .ok_or_else(|| format!("--era {:?}: expected 2025-11-25 or 2026-07-28", args.era))?;
    let short_arguments = json_arg("--args", &args.args)?;
    let long_arguments = json_arg("--long-args", &args.long_args)?;
    let base = HttpBenchConfig {
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
    Ok(CompareConfig {
        workloads,
        rounds: args.rounds,
        settle_ms_max: compare::SETTLE_MS_MAX,
        base,
    })
}

/// The `--targets` file, loaded, with the settings checked against each target (the URL
/// is each target's); without one, the settings checked as they are.
fn http_targets(
    path: Option<&std::path::Path>,
    config: &tasklatch::bench::compare::CompareConfig,
) -> Result<Option<tasklatch::bench::compare::Targets>, String> {
    use tasklatch::bench::compare::Targets;
    use tasklatch::bench::http::{self, HttpBenchConfig};
    let Some(path) = path else {
        http::check(&config.base)?;
        return Ok(None);
    };
    let targets = Targets::load(path).map_err(|error| format!("--targets {error}"))?;
    for target in &targets.targets {
        let config = HttpBenchConfig {
            url: target.url.clone(),
            ..config.base.clone()
        };
        http::check(&config).map_err(|error| format!("{}: {error}", target.name))?;
    }
    Ok(Some(targets))
}

/// Runs every workload against one server, or the comparison across the targets; the
/// report as text.
async fn run_http(
    targets: Option<&tasklatch::bench::compare::Targets>,
    config: &tasklatch::bench::compare::CompareConfig,
) -> Result<String, String> {
    use tasklatch::bench::compare;
    use tasklatch::bench::http::{self, HttpBenchConfig};
    if let Some(targets) = targets {
        let comparison = compare::compare(targets, config, |name, run| {
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
        return Ok(compare::render(&comparison));
    }
    let mut out = String::new();
    for &workload in &config.workloads {
        let report = http::run(HttpBenchConfig {
            workload,
            ..config.base.clone()
        })
        .await?;
        out.push_str(&http::render(&report));
    }
    Ok(out)
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
