//! `tasklatch sim` and `tasklatch repro`: a scenario over a seed range, and one seed
//! replayed with its timeline.

use super::{EXIT_BAD_INPUT, EXIT_MISMATCH};
use std::process::ExitCode;
use tasklatch::runtime::Point;
use tasklatch::sim::{Scenario, Sim, Sweep, parse_seed_range, store_for};

#[derive(clap::Args)]
pub struct SimArgs {
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
    /// Print every seed's trace hash (`seed N trace HASH`), to compare two builds run for
    /// run. Off by default: hashing every event is a seventh of a seed.
    #[arg(long)]
    hashes: bool,
}

#[derive(clap::Args)]
pub struct ReproArgs {
    /// A scenario name, or a scenario file (a hunt's `minimal.scenario.json`, say).
    #[arg(long)]
    scenario: String,
    #[arg(long)]
    seed: u64,
    /// The store the run used: `memory:` or `sqlite:DIR`.
    #[arg(long, default_value = "memory:")]
    store: String,
}

pub fn run(args: SimArgs) -> ExitCode {
    let SimArgs {
        scenario: name,
        seeds,
        kill_at,
        arrival,
        store,
        hashes,
    } = args;
    let (name, seeds, kill_at, store) = (
        name.as_str(),
        seeds.as_str(),
        kill_at.as_deref(),
        store.as_str(),
    );
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
        if !hashes {
            sim = sim.without_passing_hashes();
        }
        if let Some(sweep) = sweep {
            sim = sim.sweep(sweep);
        }
        let outcome = sim.run(seed);
        if hashes {
            println!("seed {seed} trace {}", outcome.trace_hash);
        }
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

pub fn repro(args: ReproArgs) -> ExitCode {
    let (name, seed, store) = (args.scenario.as_str(), args.seed, args.store.as_str());
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
