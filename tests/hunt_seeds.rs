//! The hunt's seed space and bounds: shards never overlap and cover the space, a
//! seed-bounded hunt runs exactly its seeds over every scenario, budgets parse, and an
//! unmutated hunt finds nothing.

use std::collections::BTreeSet;
use tasklatch::hunt::{self, HuntConfig, Shard};
use tasklatch::sim::Scenario;

fn config(shard: Shard, seeds: u64) -> HuntConfig {
    HuntConfig {
        first_seed: 5_000,
        shard,
        jobs: 2,
        keep_going: true,
        failures_max: 4,
        ..HuntConfig::memory(Scenario::all().expect("scenarios load"), seeds)
    }
}

#[test]
fn shards_split_the_seed_space_without_overlap() {
    let count = 4;
    let mut seen = BTreeSet::new();
    for index in 0..count {
        let config = config(Shard { index, count }, 25);
        let scenarios = config.scenarios.len() as u64;
        for run in 0..25 * scenarios {
            let (scenario, seed) = config.run_at(run);
            assert_eq!(seed % count, (5_000 + index) % count);
            assert!(
                seen.insert((scenario, seed)),
                "run {run} of shard {index} repeats"
            );
        }
    }
    // Together the shards ran seeds 5000..5100, every scenario on each.
    let seeds: BTreeSet<u64> = seen.iter().map(|(_, seed)| *seed).collect();
    assert_eq!(seeds, (5_000..5_100).collect());
}

#[test]
fn shard_and_budget_arguments_are_checked() {
    assert_eq!(Shard::parse("2/4"), Ok(Shard { index: 2, count: 4 }));
    for bad in ["4/4", "1", "a/2", "0/0", "-1/3"] {
        assert!(Shard::parse(bad).is_err(), "{bad}");
    }
    assert_eq!(tasklatch::report::parse_budget("90").unwrap().as_secs(), 90);
    assert_eq!(
        tasklatch::report::parse_budget("10m").unwrap().as_secs(),
        600
    );
    assert_eq!(
        tasklatch::report::parse_budget("1h 30m").unwrap().as_secs(),
        5_400
    );
    assert!(tasklatch::report::parse_budget("soon").is_err());
}

#[test]
fn a_seed_bounded_hunt_runs_its_seeds_and_finds_nothing_unmutated() {
    let config = config(Shard { index: 1, count: 3 }, 3);
    let mut calls = 0;
    let report = hunt::hunt(&config, &mut |_| calls += 1);
    assert_eq!(report.runs, 3 * config.scenarios.len() as u64);
    assert_eq!(
        report.failing(),
        0,
        "{:?}",
        report.failures.first().map(|f| &f.violations)
    );
    assert!(calls >= 1, "the progress display is told at least once");
    for (name, tally) in &report.tally {
        assert_eq!(tally.runs, 3, "{name}");
        assert_eq!(tally.seeds, Some((5_001, 5_007)), "{name}");
    }
}
