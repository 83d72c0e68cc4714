//! What a failing run leaves behind, in `<out>/<scenario>-seed<seed>/`:
//!
//! - `failure.json`: the record (format `tasklatch.failure/v1`): scenario, seed, commit,
//!   mutant, the violated invariant, trace hash, the one-line repro command, the drawn
//!   plan, and the minimisation with its figures and the minimal scenario inline. Copied
//!   into `fixtures/seeds/`, it becomes a regression seed `cargo test --features sim`
//!   replays.
//! - `timeline.txt`: the violations, the repro command, then every event with its lane.
//! - `swimlane.svg`: the run drawn one lane per node (see [`super::swimlane`]).
//! - `minimal.scenario.json`, `minimal.timeline.txt`, `minimal.swimlane.svg`: the same for
//!   the minimised run; the scenario file replays with `repro --scenario <that file>`.
//!
//! Files are written whole (to a temporary name, then renamed): a hunt stopped mid-write
//! leaves no half a record.

use super::HuntReport;
use super::swimlane;
use crate::report::{write_whole, xml_escape as escape};
use crate::sim::shrink::{Shrunk, Size};
use crate::sim::{Plan, Scenario, SimOutcome};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The only schema string a failure record carries.
pub const FAILURE_SCHEMA: &str = "tasklatch.failure/v1";

/// One failing run, as written to `failure.json` and kept in `fixtures/seeds/`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FailureRecord {
    /// The format tag; [`FAILURE_SCHEMA`].
    pub schema: String,
    /// The failing scenario's name.
    pub scenario: String,
    /// The failing seed.
    pub seed: u64,
    /// The commit the hunt ran (`-dirty` with uncommitted changes), or `unknown`.
    pub commit: String,
    /// The mutant that was on, if any (a mutant build's `TASKLATCH_MUTANT`).
    pub mutant: Option<String>,
    /// The first violated invariant (`I1`…`I10`, or `panic`).
    pub invariant: String,
    /// The task the first violation names; empty when there is none (a panic).
    pub task_id: String,
    /// The first violation's detail, in words.
    pub detail: String,
    /// Every violation, as the oracle words it.
    pub violations: Vec<String>,
    /// SHA-256 of the run's timeline (hex); a replay must reproduce it.
    pub trace_hash: String,
    /// Events the run recorded.
    pub events: usize,
    /// The command that replays this run and prints the same trace hash.
    pub repro: String,
    /// The knobs and faults the seed drew.
    pub plan: Option<Plan>,
    /// The minimisation; `None` when minimisation was off or did not finish.
    pub minimised: Option<Minimised>,
    /// The store URL the run used (`--store`); absent for the default memory store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
}

/// The minimised run of a failure.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Minimised {
    /// Where the minimal scenario was written, as the hunt named it.
    pub scenario_file: String,
    /// The seed the minimal scenario fails with (the original's, or a neighbour's).
    pub seed: u64,
    /// The command that replays the minimal run.
    pub repro: String,
    /// SHA-256 of the minimal run's timeline (hex).
    pub trace_hash: String,
    /// The original run's size.
    pub before: Size,
    /// The minimal run's size.
    pub after: Size,
    /// Simulations the minimisation spent, the pinning replay included.
    pub runs: usize,
    /// Smaller candidates kept on the way.
    pub steps: usize,
    /// The minimal scenario itself (its plan pinned), so the record stands alone.
    pub scenario: Scenario,
}

impl FailureRecord {
    /// The record of failing `outcome` at `commit`, with `mutant` on if any; `minimised`
    /// starts `None`.
    pub fn new(outcome: &SimOutcome, commit: &str, mutant: Option<&str>) -> FailureRecord {
        let first = outcome.violations.first();
        FailureRecord {
            schema: FAILURE_SCHEMA.into(),
            scenario: outcome.scenario.clone(),
            seed: outcome.seed,
            commit: commit.into(),
            mutant: mutant.map(str::to_owned),
            invariant: first.map_or("", |v| v.invariant).into(),
            task_id: first.map(|v| v.task_id.clone()).unwrap_or_default(),
            detail: first.map(|v| v.detail.clone()).unwrap_or_default(),
            violations: outcome.violations.iter().map(|v| v.to_string()).collect(),
            trace_hash: outcome.trace_hash.clone(),
            events: outcome.history.len(),
            repro: crate::sim::repro_command(
                &outcome.scenario,
                outcome.seed,
                mutant,
                outcome.store_url.as_deref(),
            ),
            store: outcome.store_url.clone(),
            plan: outcome.plan.clone(),
            minimised: None,
        }
    }

    /// Loads and checks a record; errors name the file, position and field.
    pub fn load(path: &Path) -> Result<FailureRecord, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("{}: cannot read: {error}", path.display()))?;
        FailureRecord::parse(path, &text)
    }

    /// Parses and checks record `text`; `path` only names the file in errors.
    pub fn parse(path: &Path, text: &str) -> Result<FailureRecord, String> {
        let record: FailureRecord = crate::load::from_json_at(path, text)?;
        if record.schema != FAILURE_SCHEMA {
            return Err(format!(
                "{}: schema: expected {FAILURE_SCHEMA:?}, got {:?}",
                path.display(),
                record.schema
            ));
        }
        if record.invariant.is_empty() {
            return Err(format!("{}: invariant: empty", path.display()));
        }
        if let Some(minimised) = &record.minimised {
            minimised
                .scenario
                .check()
                .map_err(|error| format!("{}: minimised.scenario.{error}", path.display()))?;
        }
        Ok(record)
    }

    /// Every record in `directory` (`*.json`), by file name.
    pub fn load_all(directory: &Path) -> Result<Vec<(PathBuf, FailureRecord)>, String> {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(directory)
            .map_err(|error| format!("{}: {error}", directory.display()))?
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
            .collect();
        paths.sort();
        paths
            .into_iter()
            .map(|path| FailureRecord::load(&path).map(|record| (path, record)))
            .collect()
    }
}

/// Writes a failure's artifacts into `out/<scenario>-seed<seed>/` and returns the folder
/// and the record written.
pub fn write_failure(
    out: &Path,
    outcome: &SimOutcome,
    commit: &str,
    mutant: Option<&str>,
    shrunk: Option<&Shrunk>,
) -> Result<(PathBuf, FailureRecord), String> {
    let folder = out.join(format!("{}-seed{}", outcome.scenario, outcome.seed));
    std::fs::create_dir_all(&folder)
        .map_err(|error| format!("{}: cannot create: {error}", folder.display()))?;
    let mut record = FailureRecord::new(outcome, commit, mutant);
    let title = |what: &str, run: &SimOutcome| {
        format!(
            "{what}: scenario {} seed {}{}",
            run.scenario,
            run.seed,
            mutant.map(|m| format!(", mutant {m}")).unwrap_or_default()
        )
    };
    write_whole(
        &folder.join("timeline.txt"),
        &timeline_text(outcome, &record.repro, commit, mutant),
    )?;
    write_whole(
        &folder.join("swimlane.svg"),
        &swimlane::render(outcome, &title("failing run", outcome)),
    )?;
    if let Some(shrunk) = shrunk {
        let file = folder.join("minimal.scenario.json");
        let file_name = file.display().to_string();
        let repro = crate::sim::repro_command(
            &file_name,
            shrunk.outcome.seed,
            mutant,
            shrunk.outcome.store_url.as_deref(),
        );
        write_whole(&file, &pretty(&shrunk.scenario))?;
        write_whole(
            &folder.join("minimal.timeline.txt"),
            &timeline_text(&shrunk.outcome, &repro, commit, mutant),
        )?;
        write_whole(
            &folder.join("minimal.swimlane.svg"),
            &swimlane::render(&shrunk.outcome, &title("minimised run", &shrunk.outcome)),
        )?;
        record.minimised = Some(Minimised {
            scenario_file: file_name,
            seed: shrunk.outcome.seed,
            repro,
            trace_hash: shrunk.outcome.trace_hash.clone(),
            before: shrunk.before,
            after: shrunk.after,
            runs: shrunk.runs,
            steps: shrunk.steps,
            scenario: shrunk.scenario.clone(),
        });
    }
    write_whole(&folder.join("failure.json"), &pretty(&record))?;
    Ok((folder, record))
}

fn pretty<T: Serialize>(value: &T) -> String {
    let mut text = serde_json::to_string_pretty(value).expect("records always serialise");
    text.push('\n');
    text
}

fn timeline_text(outcome: &SimOutcome, repro: &str, commit: &str, mutant: Option<&str>) -> String {
    let mut text = format!(
        "scenario {} seed {} commit {commit} mutant {}\n",
        outcome.scenario,
        outcome.seed,
        mutant.unwrap_or("none")
    );
    for violation in &outcome.violations {
        text.push_str(&format!("VIOLATION {violation}\n"));
    }
    text.push_str(&format!(
        "reproduce: {repro}\ntrace {} ({} events)\n\n  offset ms  lane        event\n",
        outcome.trace_hash,
        outcome.history.len()
    ));
    for (index, line) in outcome.timeline().into_iter().enumerate() {
        text.push_str(&format!("#{index:<5} {line}\n"));
    }
    text
}

/// A JUnit XML report: per scenario, one case for the seeds that passed and one per
/// failure (its message the violation, its text the repro command and timeline path).
pub fn junit(report: &HuntReport, failures: &[(PathBuf, FailureRecord)]) -> String {
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let cases: usize = report.tally.len() + failures.len();
    xml.push_str(&format!(
        "<testsuites name=\"tasklatch hunt\" tests=\"{cases}\" failures=\"{}\" time=\"{:.3}\">\n",
        failures.len(),
        report.elapsed.as_secs_f64()
    ));
    for (scenario, tally) in &report.tally {
        let mine: Vec<&(PathBuf, FailureRecord)> = failures
            .iter()
            .filter(|(_, record)| &record.scenario == scenario)
            .collect();
        xml.push_str(&format!(
            "  <testsuite name=\"hunt.{}\" tests=\"{}\" failures=\"{}\">\n",
            escape(scenario),
            1 + mine.len(),
            mine.len()
        ));
        let (low, high) = tally.seeds.unwrap_or_default();
        xml.push_str(&format!(
            "    <testcase classname=\"hunt.{}\" name=\"{} runs, seeds {low}..={high}, {} failing\"/>\n",
            escape(scenario),
            tally.runs,
            tally.failing
        ));
        for (folder, record) in mine {
            xml.push_str(&format!(
                "    <testcase classname=\"hunt.{}\" name=\"seed {}\">\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    </testcase>\n",
                escape(scenario),
                record.seed,
                escape(&record.invariant),
                escape(record.violations.first().map_or("", String::as_str)),
                escape(&format!(
                    "reproduce: {}\nartifacts: {}\ntrace {}",
                    record.repro,
                    folder.display(),
                    record.trace_hash
                ))
            ));
        }
        xml.push_str("  </testsuite>\n");
    }
    xml.push_str("</testsuites>\n");
    xml
}
