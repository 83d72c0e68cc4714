//! Regression seeds: every failure record in `fixtures/seeds/` (a hunt's `failure.json`,
//! kept) is replayed on each `cargo test --features sim`, its original scenario and seed
//! and its minimised scenario both. The build under test must pass them all.
//!
//! With `--features mutants` each record's mutant is turned on as well, and the seed must
//! still break the recorded invariant: a seed that no longer catches its bug has stopped
//! guarding anything (the simulation changed under it), and the test says so. Trace hashes
//! are compared and a drift is printed, not failed: the hash pins one build of the
//! simulation; the seed pins the bug.

use std::path::Path;
use tasklatch::hunt::artifact::FailureRecord;
use tasklatch::sim::{Scenario, SimOutcome, run_seed};

fn records() -> Vec<(std::path::PathBuf, FailureRecord)> {
    let directory = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/seeds");
    let records = FailureRecord::load_all(&directory).unwrap_or_else(|error| panic!("{error}"));
    assert!(
        !records.is_empty(),
        "{}: no regression seeds: the test would prove nothing",
        directory.display()
    );
    records
}

/// The record's runs: the original scenario and seed, and the minimised one.
fn runs(record: &FailureRecord) -> Vec<(String, Scenario, u64)> {
    let original = Scenario::by_name(&record.scenario)
        .unwrap_or_else(|error| panic!("seed record names scenario {}: {error}", record.scenario));
    let mut runs = vec![(
        format!("{} seed {}", record.scenario, record.seed),
        original,
        record.seed,
    )];
    if let Some(minimised) = &record.minimised {
        runs.push((
            format!("{} seed {}", minimised.scenario.name, minimised.seed),
            minimised.scenario.clone(),
            minimised.seed,
        ));
    }
    runs
}

fn describe(outcome: &SimOutcome) -> String {
    outcome
        .violations
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

/// One test, so nothing runs beside the mutant selection (process-wide) it changes.
#[test]
fn regression_seeds() {
    every_regression_seed_passes_on_this_build();
    #[cfg(feature = "mutants")]
    every_regression_seed_still_catches_its_mutant();
}

fn every_regression_seed_passes_on_this_build() {
    #[cfg(feature = "mutants")]
    tasklatch::mutants::select(None);
    let mut problems = Vec::new();
    let mut replayed = 0;
    for (path, record) in records() {
        for (name, scenario, seed) in runs(&record) {
            let outcome = run_seed(&scenario, seed);
            replayed += 1;
            if !outcome.violations.is_empty() {
                problems.push(format!(
                    "{}: {name} fails again: {}\n  reproduce: {}",
                    path.display(),
                    describe(&outcome),
                    outcome.repro_command()
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    eprintln!("{replayed} regression runs passed");
}

#[cfg(feature = "mutants")]
fn every_regression_seed_still_catches_its_mutant() {
    use tasklatch::mutants::{self, Mutant};
    let mut problems = Vec::new();
    for (path, record) in records() {
        let Some(name) = &record.mutant else {
            continue;
        };
        let mutant =
            Mutant::parse(name).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        mutants::select(Some(mutant));
        for (index, (label, scenario, seed)) in runs(&record).into_iter().enumerate() {
            let outcome = run_seed(&scenario, seed);
            if !outcome
                .violations
                .iter()
                .any(|v| v.invariant == record.invariant)
            {
                problems.push(format!(
                    "{}: {label} with {name} no longer breaks {} (got: {})",
                    path.display(),
                    record.invariant,
                    describe(&outcome)
                ));
            }
            let recorded = match (index, &record.minimised) {
                (0, _) => &record.trace_hash,
                (_, Some(minimised)) => &minimised.trace_hash,
                (_, None) => unreachable!("a second run comes from the minimisation"),
            };
            if &outcome.trace_hash != recorded {
                eprintln!(
                    "note: {}: {label}: trace {} differs from the recorded {recorded} (the simulation changed since)",
                    path.display(),
                    outcome.trace_hash
                );
            }
        }
    }
    mutants::select(None);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
