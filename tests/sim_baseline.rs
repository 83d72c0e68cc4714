//! The `baseline` scenario over its default seeds: no violations, deterministic traces,
//! and the interesting paths really happened.
//!
//! `SIM_SEED=n` / `SIM_SEEDS=a..b` narrow or widen the range (see `tasklatch::sim`).

use std::collections::BTreeMap;
use tasklatch::sim::{Scenario, SimOutcome, run_seed, seeds_from_env};

const DEFAULT_SEEDS: std::ops::Range<u64> = 0..48;

fn run_default() -> Vec<SimOutcome> {
    let seeds = seeds_from_env(DEFAULT_SEEDS).expect("seed range");
    seeds
        .map(|seed| run_seed(&Scenario::baseline(), seed))
        .collect()
}

#[test]
fn baseline_default_seeds_hold_every_invariant() {
    let started = std::time::Instant::now();
    let outcomes = run_default();
    let mut failures = Vec::new();
    let mut marks: BTreeMap<String, u64> = BTreeMap::new();
    for outcome in &outcomes {
        for (mark, count) in &outcome.marks {
            *marks.entry(mark.clone()).or_default() += count;
        }
        if let Some(first) = outcome.violations.first() {
            failures.push(format!(
                "seed {}: {first} ({} violations)\n  reproduce: {}",
                outcome.seed,
                outcome.violations.len(),
                outcome.repro_command()
            ));
        }
    }
    println!(
        "baseline: {} seeds in {:.2}s, {} failing; marks: {marks:?}",
        outcomes.len(),
        started.elapsed().as_secs_f64(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn same_seed_same_trace() {
    for seed in [3, 17, 41] {
        let first = run_seed(&Scenario::baseline(), seed);
        let second = run_seed(&Scenario::baseline(), seed);
        assert_eq!(
            first.trace_hash, second.trace_hash,
            "seed {seed} is not deterministic"
        );
        assert!(
            first.events > 50,
            "seed {seed} recorded only {} events",
            first.events
        );
    }
    let other = run_seed(&Scenario::baseline(), 4);
    assert_ne!(
        other.trace_hash,
        run_seed(&Scenario::baseline(), 3).trace_hash
    );
}
