//! Every scenario in `scenarios/` over its default seeds: no violations, and every mark
//! the scenario names was hit (a fault never injected is a test that cannot fail). Plus
//! the determinism self-check: a sample of seeds run twice gives the same trace hash.
//!
//! `SIM_SEED=n` / `SIM_SEEDS=a..b` replace each scenario's default range (read by
//! `tasklatch::sim::seeds_from_env`); marks are only enforced on the default range.

use std::collections::BTreeMap;
use tasklatch::sim::{Scenario, run_seed, seeds_from_env};

fn run_scenario(scenario: &Scenario) -> (usize, Vec<String>, BTreeMap<String, u64>) {
    let seeds = seeds_from_env(scenario.default_seeds()).expect("seed range");
    let mut failures = Vec::new();
    let mut marks: BTreeMap<String, u64> = BTreeMap::new();
    let mut runs = 0;
    for seed in seeds {
        let outcome = run_seed(scenario, seed);
        runs += 1;
        for (mark, count) in &outcome.marks {
            *marks.entry(mark.clone()).or_default() += count;
        }
        if let Some(first) = outcome.violations.first() {
            failures.push(format!(
                "{} seed {seed}: {first} ({} violations)\n  reproduce: {}",
                scenario.name,
                outcome.violations.len(),
                outcome.repro_command()
            ));
        }
    }
    (runs, failures, marks)
}

#[test]
fn every_scenario_holds_its_invariants_and_hits_its_marks() {
    let scenarios = Scenario::all().expect("scenarios load");
    assert!(scenarios.len() >= 7, "expected the 7 reference scenarios");
    let narrowed = std::env::var("SIM_SEED").is_ok() || std::env::var("SIM_SEEDS").is_ok();
    let mut problems = Vec::new();
    for scenario in &scenarios {
        let started = std::time::Instant::now();
        let (runs, failures, marks) = run_scenario(scenario);
        let missing: Vec<&String> = scenario
            .marks
            .iter()
            .filter(|mark| !marks.contains_key(*mark))
            .collect();
        println!(
            "{:<20} {runs:>4} seeds {:>6.2}s  {} failing  marks {:?}",
            scenario.name,
            started.elapsed().as_secs_f64(),
            failures.len(),
            marks
        );
        problems.extend(failures);
        if !narrowed && !missing.is_empty() {
            problems.push(format!(
                "{}: marks never hit on the default seeds: {missing:?}",
                scenario.name
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn same_seed_same_trace() {
    for scenario in Scenario::all().expect("scenarios load") {
        for seed in [scenario.default_seeds[0], scenario.default_seeds[0] + 7] {
            let first = run_seed(&scenario, seed);
            let second = run_seed(&scenario, seed);
            assert!(
                first.history.len() > 20,
                "{} seed {seed}: only {} events",
                scenario.name,
                first.history.len()
            );
            assert_eq!(
                first.trace_hash, second.trace_hash,
                "{} seed {seed} is not deterministic",
                scenario.name
            );
        }
    }
}

/// A seed's trace does not depend on what ran before it: seeds run one after another on
/// the calling thread, so run them in one order, then the other, then each on a fresh
/// thread, and compare.
#[test]
fn a_seed_does_not_depend_on_the_seeds_before_it() {
    for scenario in Scenario::all().expect("scenarios load") {
        let seeds: Vec<u64> = (0..4).collect();
        let forward: Vec<String> = seeds
            .iter()
            .map(|&seed| run_seed(&scenario, seed).trace_hash)
            .collect();
        let mut backward: Vec<String> = seeds
            .iter()
            .rev()
            .map(|&seed| run_seed(&scenario, seed).trace_hash)
            .collect();
        backward.reverse();
        let fresh: Vec<String> = seeds
            .iter()
            .map(|&seed| {
                let scenario = scenario.clone();
                std::thread::spawn(move || run_seed(&scenario, seed).trace_hash)
                    .join()
                    .expect("a run")
            })
            .collect();
        assert_eq!(
            forward, backward,
            "{}: order changed a trace",
            scenario.name
        );
        assert_eq!(
            forward, fresh,
            "{}: a used thread changed a trace",
            scenario.name
        );
    }
}

#[test]
fn malformed_scenarios_name_file_and_field() {
    let base = std::fs::read_to_string(Scenario::directory().join("baseline.json")).unwrap();
    for (from, to, words) in [
        ("\"workers\": 3", "\"workers\": \"three\"", "workers"),
        (
            "\"workers\": 3",
            "\"wrokers\": 3",
            "unknown field `wrokers`",
        ),
        (
            "\"crash_points\": [\n      \"all\"\n    ]",
            "\"crash_points\": [\"after-lunch\"]",
            "faults.crash_points: unknown point \"after-lunch\"",
        ),
        (
            "\"tool_ms\": [\n    20,\n    200\n  ]",
            "\"tool_ms\": [300, 200]",
            "tool_ms",
        ),
        ("\"replay\"", "\"replayed\"", "unknown mark \"replayed\""),
        (
            "\"default_seeds\": [\n    0,\n    96\n  ]",
            "\"default_seeds\": [5, 5]",
            "default_seeds",
        ),
        (
            "\"queue\": \"in-process\"",
            "\"queue\": \"in-memory\"",
            "deployment.queue: unknown variant `in-memory`",
        ),
        (
            "\"queue\": \"in-process\"",
            "\"queue\": \"in-process\", \"processes\": 9",
            "deployment: processes must be 1..=8",
        ),
        (
            "\"queue\": \"in-process\"",
            "\"queue\": \"in-process\", \"change_feed\": true",
            "deployment: change_feed needs several processes",
        ),
        (
            "\"queue\": \"in-process\"",
            "\"queue\": \"external\", \"processes\": 2",
            "deployment: processes and change_feed need queue \"in-process\"",
        ),
    ] {
        assert!(base.contains(from), "test setup: {from:?}");
        let error = Scenario::parse(
            std::path::Path::new("scenarios/bad.json"),
            &base.replacen(from, to, 1),
        )
        .expect_err("must be refused");
        assert!(error.starts_with("scenarios/bad.json"), "{error}");
        assert!(error.contains(words), "{error}");
    }
}
