//! `tasklatch check-store`: the harness's engines against a task store written for an MCP
//! SDK, in its own language, through the store bridge (`tasklatch-bridge`). This module
//! turns the flags into the bridge's spec and options, and its report into exit status and
//! files.

use super::{EXIT_BAD_INPUT, EXIT_MISMATCH};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use tasklatch::bridge::{self, Interface, Options, StoreSpec};
use tasklatch::report::{parse_budget, write_whole};

#[derive(clap::Args)]
pub struct CheckStoreArgs {
    /// A Node store module and its factory export (default `createStore`): a function
    /// that returns a store, or a class; it is given `{ dir }`, its data directory.
    #[arg(
        long,
        value_name = "PATH[#FACTORY]",
        conflicts_with = "python",
        required_unless_present = "python"
    )]
    node: Option<String>,
    /// A Python store module (a dotted name importable from here, or a .py file) and its
    /// factory (default `create_store`), given `dir=` if it takes it.
    #[arg(long, value_name = "MODULE[:FACTORY]")]
    python: Option<String>,
    /// The store interface: ts-sdk (the TypeScript SDK 1.x TaskStore) or py-mcp (the
    /// Python SDK's TaskStore); default: the one of the module's language.
    #[arg(long)]
    interface: Option<String>,
    /// The program that runs the shim (default `node` or `python3`).
    #[arg(long, value_name = "PROGRAM")]
    runtime: Option<String>,
    /// How long each engine runs.
    #[arg(long, default_value = "20s")]
    budget: String,
    /// Cases per engine, at most.
    #[arg(long, default_value_t = 1_000_000)]
    cases: usize,
    /// The first case's seed (the report names each finding's).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// How long one store call may take before the store is reported hung (exit 2).
    #[arg(long, default_value = "10s")]
    call_timeout: String,
    /// Give the store the real clock instead of the shim's fake one (expiry cases then
    /// wait for nothing: a store on its own clock sees no time pass).
    #[arg(long)]
    real_clock: bool,
    /// The store claims its data survives a restart: the restart engine kills the shim
    /// between and during calls and reopens the store on the same data.
    #[arg(long)]
    durable: bool,
    /// Write `report.json` and each finding's snippet (`findings/NNN-RULE.mjs|.py`) here.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Write a JUnit file here (a case per engine and rule).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
}

fn spec_of(args: &CheckStoreArgs) -> Result<StoreSpec, String> {
    let mut spec = match (&args.node, &args.python) {
        (Some(node), _) => StoreSpec::node(node)?,
        (None, Some(python)) => StoreSpec::python(python)?,
        (None, None) => {
            return Err("give --node PATH[#FACTORY] or --python MODULE[:FACTORY]".into());
        }
    };
    if let Some(name) = &args.interface {
        spec = spec.with_interface(Interface::parse(name)?)?;
    }
    spec.runtime = args.runtime.clone();
    spec.fake_clock = !args.real_clock;
    Ok(spec)
}

fn options_of(args: &CheckStoreArgs) -> Result<Options, String> {
    let work = std::env::temp_dir().join(format!("tasklatch-check-store-{}", std::process::id()));
    Ok(Options {
        budget: parse_budget(&args.budget).map_err(|error| format!("--budget {error}"))?,
        cases_max: args.cases.max(1),
        seed: args.seed,
        call_timeout: parse_budget(&args.call_timeout)
            .map_err(|error| format!("--call-timeout {error}"))?,
        work,
        durable: args.durable,
    })
}

pub fn check_store(args: CheckStoreArgs) -> ExitCode {
    let (spec, options) = match spec_of(&args).and_then(|spec| Ok((spec, options_of(&args)?))) {
        Ok(both) => both,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let bar = std::io::stderr()
        .is_terminal()
        .then(|| indicatif::ProgressBar::new(3 * options.budget.as_millis() as u64));
    let started = std::time::Instant::now();
    let result = bridge::check_store(&spec, &options, |engine, cases, findings| {
        if let Some(bar) = &bar {
            bar.set_position(started.elapsed().as_millis() as u64);
            bar.set_message(format!("{engine}: {cases} cases, {findings} findings"));
        }
    });
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let _ = std::fs::remove_dir_all(&options.work);
    let report = match result {
        Ok(report) => report,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    print!("{}", bridge::check::text(&report));
    if let Err(error) = write_files(&args, &spec, &report) {
        eprintln!("error: {error}");
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    if report.store_findings().next().is_some() {
        ExitCode::from(EXIT_MISMATCH)
    } else {
        ExitCode::SUCCESS
    }
}

fn write_files(
    args: &CheckStoreArgs,
    spec: &StoreSpec,
    report: &bridge::CheckReport,
) -> Result<(), String> {
    if let Some(directory) = &args.out {
        let findings = directory.join("findings");
        std::fs::create_dir_all(&findings)
            .map_err(|error| format!("{}: cannot create: {error}", findings.display()))?;
        let text =
            serde_json::to_string_pretty(&report.to_json()).map_err(|error| error.to_string())?;
        write_whole(&directory.join("report.json"), &text)?;
        let extension = match spec.language {
            bridge::Language::Node => "mjs",
            bridge::Language::Python => "py",
        };
        for (index, (engine, found)) in report.findings().enumerate() {
            if let Some(snippet) = &found.snippet {
                let name = format!("{:03}-{engine}-{}.{extension}", index + 1, found.rule);
                write_whole(&findings.join(name), snippet)?;
            }
        }
    }
    if let Some(path) = &args.junit {
        write_whole(path, &bridge::check::junit(report))?;
    }
    Ok(())
}
