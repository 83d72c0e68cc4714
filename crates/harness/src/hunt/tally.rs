//! A hunt's count of runs as a file (`hunt --tally FILE`), and the sum of many such files
//! (`hunt-total`): how a sharded nightly hunt says how many runs its night reached.
//!
//! Each shard writes one [`Tally`]; a summary job reads them all and prints one table,
//! runs per scenario per shard and the total, against the night's goal. A tally that
//! cannot be read is an error naming the file, never skipped: a missing shard would make
//! the night's figure a lie.

use super::{HuntConfig, HuntReport};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// The `schema` field every tally carries.
pub const TALLY_SCHEMA: &str = "tasklatch-hunt-tally/1";

/// One hunt's (one shard's) runs, written as JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tally {
    /// Always [`TALLY_SCHEMA`].
    pub schema: String,
    /// `i/n`.
    pub shard: String,
    /// The seed space's first seed, shared by every shard of one hunt.
    pub first_seed: u64,
    /// Simulations side by side (OS threads).
    pub jobs: usize,
    /// Wall-clock seconds the hunt took.
    pub elapsed_s: f64,
    /// Runs finished, every scenario.
    pub runs: u64,
    /// Runs that broke an invariant.
    pub failing: u64,
    /// Per scenario: runs finished and runs failing.
    pub scenarios: BTreeMap<String, ScenarioRuns>,
}

/// One scenario's runs in a tally.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioRuns {
    /// Runs finished.
    pub runs: u64,
    /// Runs that broke an invariant.
    pub failing: u64,
}

impl Tally {
    /// The tally of a finished hunt.
    pub fn of(report: &HuntReport, config: &HuntConfig) -> Tally {
        Tally {
            schema: TALLY_SCHEMA.into(),
            shard: format!("{}/{}", config.shard.index, config.shard.count),
            first_seed: config.first_seed,
            jobs: config.jobs,
            elapsed_s: report.elapsed.as_secs_f64(),
            runs: report.runs,
            failing: report.failing(),
            scenarios: report
                .tally
                .iter()
                .map(|(name, tally)| {
                    let runs = ScenarioRuns {
                        runs: tally.runs,
                        failing: tally.failing,
                    };
                    (name.clone(), runs)
                })
                .collect(),
        }
    }

    /// Reads and checks one tally file; the error names the file and what is wrong.
    pub fn read(path: &Path) -> Result<Tally, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("{}: cannot read: {error}", path.display()))?;
        let tally: Tally = crate::load::from_json_at(path, &text)?;
        if tally.schema != TALLY_SCHEMA {
            return Err(format!(
                "{}: schema {:?}, expected {TALLY_SCHEMA:?}",
                path.display(),
                tally.schema
            ));
        }
        let summed: u64 = tally.scenarios.values().map(|s| s.runs).sum();
        if summed != tally.runs {
            return Err(format!(
                "{}: runs is {} but the scenarios' runs add up to {summed}",
                path.display(),
                tally.runs
            ));
        }
        Ok(tally)
    }
}

/// The sum of several shards' tallies.
#[derive(Debug, Default, PartialEq)]
pub struct Total {
    /// Runs over every shard and scenario.
    pub runs: u64,
    /// Failing runs over every shard.
    pub failing: u64,
    /// Per scenario, summed over the shards.
    pub scenarios: BTreeMap<String, ScenarioRuns>,
    /// Each shard's tally, by shard name.
    pub shards: BTreeMap<String, Tally>,
}

impl Total {
    /// Adds `tallies` up. Two tallies of one shard, or shards of different seed spaces or
    /// shard counts, are an error: they would count seeds twice.
    pub fn of(tallies: Vec<Tally>) -> Result<Total, String> {
        let mut total = Total::default();
        let mut space: Option<(u64, String)> = None;
        for tally in tallies {
            let count = tally.shard.split_once('/').map(|(_, n)| n.to_owned());
            let this = (tally.first_seed, count.unwrap_or_default());
            match &space {
                Some(seen) if *seen != this => {
                    return Err(format!(
                        "shard {} hunts seeds from {} of {} shards, the others from {} of {}",
                        tally.shard, this.0, this.1, seen.0, seen.1
                    ));
                }
                _ => space = Some(this),
            }
            total.runs += tally.runs;
            total.failing += tally.failing;
            for (name, runs) in &tally.scenarios {
                let sum = total.scenarios.entry(name.clone()).or_default();
                sum.runs += runs.runs;
                sum.failing += runs.failing;
            }
            if let Some(twice) = total.shards.insert(tally.shard.clone(), tally) {
                return Err(format!("shard {} is tallied twice", twice.shard));
            }
        }
        Ok(total)
    }

    /// A Markdown table: runs per scenario per shard, each shard's rate, the totals, and
    /// the total against `goal_runs`.
    pub fn markdown(&self, goal_runs: Option<u64>) -> String {
        let mut out = String::new();
        let shards: Vec<&Tally> = self.shards.values().collect();
        let _ = write!(out, "| scenario |");
        for tally in &shards {
            let _ = write!(out, " shard {} |", tally.shard);
        }
        let _ = writeln!(out, " total | failing |");
        let _ = writeln!(out, "|---|{}---:|---:|", "---:|".repeat(shards.len()));
        for (name, sum) in &self.scenarios {
            let _ = write!(out, "| {name} |");
            for tally in &shards {
                let runs = tally.scenarios.get(name).map_or(0, |s| s.runs);
                let _ = write!(out, " {} |", group(runs));
            }
            let _ = writeln!(out, " {} | {} |", group(sum.runs), sum.failing);
        }
        let _ = write!(out, "| **all** |");
        for tally in &shards {
            let _ = write!(out, " {} |", group(tally.runs));
        }
        let _ = writeln!(out, " **{}** | {} |", group(self.runs), self.failing);
        let _ = write!(out, "| runs/s (jobs) |");
        for tally in &shards {
            let rate = tally.runs as f64 / tally.elapsed_s.max(1e-9);
            let _ = write!(out, " {rate:.0} ({}) |", tally.jobs);
        }
        let _ = writeln!(out, " | |");
        let _ = writeln!(
            out,
            "\n{} runs over {} shards, {} failing{}",
            group(self.runs),
            self.shards.len(),
            self.failing,
            match goal_runs {
                Some(goal) if self.runs >= goal => format!("; goal {} reached", group(goal)),
                Some(goal) => format!(
                    "; goal {} NOT reached ({:.0}%)",
                    group(goal),
                    100.0 * self.runs as f64 / goal as f64
                ),
                None => String::new(),
            }
        );
        out
    }
}

/// `1234567` as `1,234,567`.
fn group(number: u64) -> String {
    let digits = number.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(shard: &str, first_seed: u64, runs: &[(&str, u64, u64)]) -> Tally {
        Tally {
            schema: TALLY_SCHEMA.into(),
            shard: shard.into(),
            first_seed,
            jobs: 4,
            elapsed_s: 10.0,
            runs: runs.iter().map(|r| r.1).sum(),
            failing: runs.iter().map(|r| r.2).sum(),
            scenarios: runs
                .iter()
                .map(|&(name, runs, failing)| (name.into(), ScenarioRuns { runs, failing }))
                .collect(),
        }
    }

    #[test]
    fn shards_add_up_per_scenario() {
        let total = Total::of(vec![
            tally("0/2", 7, &[("baseline", 10, 0), ("store-crash", 5, 1)]),
            tally("1/2", 7, &[("baseline", 12, 0), ("store-crash", 4, 0)]),
        ])
        .unwrap();
        assert_eq!(total.runs, 31);
        assert_eq!(total.failing, 1);
        assert_eq!(total.scenarios["baseline"].runs, 22);
        let table = total.markdown(Some(30));
        assert!(table.contains("| baseline | 10 | 12 | 22 | 0 |"), "{table}");
        assert!(
            table.contains("| **all** | 15 | 16 | **31** | 1 |"),
            "{table}"
        );
        assert!(table.contains("goal 30 reached"), "{table}");
        assert!(total.markdown(Some(1_000)).contains("NOT reached (3%)"));
    }

    #[test]
    fn a_shard_counted_twice_or_from_another_space_is_refused() {
        let twice = Total::of(vec![
            tally("0/2", 7, &[("baseline", 1, 0)]),
            tally("0/2", 7, &[("baseline", 1, 0)]),
        ]);
        assert_eq!(twice.unwrap_err(), "shard 0/2 is tallied twice");
        let other = Total::of(vec![
            tally("0/2", 7, &[("baseline", 1, 0)]),
            tally("1/2", 8, &[("baseline", 1, 0)]),
        ]);
        assert!(other.unwrap_err().contains("seeds from 8 of 2 shards"));
    }

    #[test]
    fn a_bad_tally_file_names_itself_and_the_field() {
        let dir = std::env::temp_dir().join(format!("tally-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("shard.json");
        let mut good = serde_json::to_value(tally("0/1", 1, &[("baseline", 3, 0)])).unwrap();
        good["runs"] = serde_json::json!(4);
        std::fs::write(&path, good.to_string()).unwrap();
        let error = Tally::read(&path).unwrap_err();
        assert!(
            error.contains("shard.json") && error.contains("add up to 3"),
            "{error}"
        );
        good["scenarios"]["baseline"]["runs"] = serde_json::json!("many");
        std::fs::write(&path, good.to_string()).unwrap();
        let error = Tally::read(&path).unwrap_err();
        assert!(error.contains("scenarios.baseline.runs"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1_000), "1,000");
        assert_eq!(group(100_000_000), "100,000,000");
    }
}
