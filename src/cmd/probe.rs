//! `tasklatch probe`: a live MCP tasks server checked from outside. This module turns
//! the flags into the probe's `Config` and its report into exit status and files.

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
    /// A shared log where each task's side effect is a line (the same check as
    /// --effect-path): the line of a task is the one containing --effect-match.
    #[arg(long, value_name = "FILE")]
    effect_log: Option<String>,
    /// What a task's line in --effect-log contains: `{taskId}` is its id, `{tag}` a unique
    /// tag the probe writes into each `{tag}` of --args (for a log that names only what the
    /// call was given, e.g. --args '{"name": "{tag}"}' --effect-match 'exported {tag}').
    #[arg(
        long,
        value_name = "PATTERN",
        requires = "effect_log",
        default_value = "{taskId}"
    )]
    effect_match: String,
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

/// The server the flags name: `--http URL` with its tokens, or `--stdio -- CMD ARGS…`.
fn target(args: &ProbeArgs) -> Result<Target, String> {
    Ok(match (&args.http, args.stdio) {
        (Some(url), _) => {
            if !args.command.is_empty() {
                return Err("--http takes no command after `--` (that is --stdio's)".into());
            }
            let tokens = named_tokens(&args.tokens)?;
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
    })
}

/// `--token NAME=TOKEN` pairs, each name once.
fn named_tokens(pairs: &[String]) -> Result<Vec<(String, String)>, String> {
    let mut tokens = Vec::new();
    for pair in pairs {
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
    Ok(tokens)
}

fn config(args: &ProbeArgs) -> Result<Config, String> {
    let target = target(args)?;
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
    config.effect_log = effect_log(args)?;
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
            "--kill needs a server the probe owns: --stdio, or --http with --start \"CMD\"".into(),
        );
    }
    if args.durable && !args.kill {
        return Err("--durable is a claim about restarts: give --kill too".into());
    }
    Ok(config)
}

/// `--effect-log` with its pattern, which must name the task (by id or by tag), and a
/// tag must reach the call through --args.
fn effect_log(args: &ProbeArgs) -> Result<Option<probe::effects::EffectLog>, String> {
    let Some(path) = &args.effect_log else {
        return Ok(None);
    };
    let pattern = &args.effect_match;
    if !pattern.contains("{taskId}") && !pattern.contains("{tag}") {
        return Err(format!(
            "--effect-match {pattern:?}: must contain {{taskId}} or {{tag}}, so a line names \
             one task"
        ));
    }
    if pattern.contains("{tag}") && !args.args.as_deref().unwrap_or("").contains("{tag}") {
        return Err(format!(
            "--effect-match {pattern:?} uses {{tag}}, but --args puts no {{tag}} in the call \
             (e.g. --args '{{\"name\": \"{{tag}}\"}}')"
        ));
    }
    Ok(Some(probe::effects::EffectLog {
        path: path.clone(),
        pattern: pattern.clone(),
    }))
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
    if config.progress {
        eprintln!("{}", probe::plan(&config, args.reruns));
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ProbeArgs,
    }

    fn config_of(line: &[&str]) -> Result<Config, String> {
        let mut argv = vec!["probe"];
        argv.extend(line);
        config(
            &Cli::try_parse_from(argv)
                .map_err(|error| error.to_string())?
                .args,
        )
    }

    #[test]
    fn an_effect_log_pattern_must_name_one_task() {
        let http = ["--http", "http://127.0.0.1:1/mcp", "--effect-log", "x.log"];
        let log = config_of(&http).unwrap().effect_log.unwrap();
        assert_eq!(
            (log.path.as_str(), log.pattern.as_str()),
            ("x.log", "{taskId}")
        );
        let fixed = config_of(&[&http[..], &["--effect-match", "exported"]].concat());
        assert!(
            fixed
                .unwrap_err()
                .contains("must contain {taskId} or {tag}")
        );
        let untagged = config_of(&[&http[..], &["--effect-match", "done {tag}"]].concat());
        assert!(untagged.unwrap_err().contains("--args puts no {tag}"));
        let tagged = [&http[..], &["--effect-match", "done {tag}"]].concat();
        let tagged = config_of(&[&tagged[..], &["--args", r#"{"name": "{tag}"}"#]].concat());
        assert_eq!(tagged.unwrap().effect_log.unwrap().pattern, "done {tag}");
    }

    #[test]
    fn the_plan_says_budgets_are_per_era_and_reruns_repeat_all() {
        let config = config_of(&["--http", "http://127.0.0.1:1/mcp", "--budget", "30s"]).unwrap();
        let plan = probe::plan(&config, 1);
        assert!(plan.contains("up to 2"), "{plan}");
        assert!(plan.contains("per era"), "{plan}");
        assert!(plan.contains("the workload for 30s"), "{plan}");
        assert!(plan.contains("the whole run again"), "{plan}");
    }
}
