//! `tasklatch hunt`: sharded, budgeted race hunting with a progress bar on a terminal.

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
    /// Also write the runs per scenario here, as JSON, for `hunt-total` to add up.
    #[arg(long)]
    tally: Option<PathBuf>,
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
    report(&finished, &config, &keep, args.tally.as_deref())
}

/// The hunt's warnings and summary, its tally written if asked, and its exit code.
fn report(
    finished: &hunt::Finished,
    config: &HuntConfig,
    keep: &Keep,
    tally: Option<&std::path::Path>,
) -> ExitCode {
    for warning in &finished.warnings {
        eprintln!("warning: {warning}");
    }
    print!("{}", finished.summary(config, keep));
    if let Some(path) = tally {
        let tally = hunt::tally::Tally::of(&finished.report, config);
        let json = serde_json::to_string_pretty(&tally).expect("a tally serialises");
        if let Err(error) = tasklatch::report::write_whole_creating(path, &json) {
            return bad(format_args!("--tally {error}"));
        }
    }
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

#[derive(clap::Args)]
pub struct TotalArgs {
    /// The shards' tally files (`hunt --tally FILE`).
    #[arg(required = true)]
    tallies: Vec<PathBuf>,
    /// The night's goal in runs; the last line says whether it was reached.
    #[arg(long)]
    goal: Option<u64>,
}

/// `tasklatch hunt-total`: the shards' tallies added up, as a Markdown table.
pub fn total(args: TotalArgs) -> ExitCode {
    let tallies: Result<Vec<_>, String> = args
        .tallies
        .iter()
        .map(|path| hunt::tally::Tally::read(path))
        .collect();
    let total = match tallies.and_then(hunt::tally::Total::of) {
        Ok(total) => total,
        Err(error) => return bad(error),
    };
    print!("{}", total.markdown(args.goal));
    if total.failing == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_MISMATCH)
    }
}
