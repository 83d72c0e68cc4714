//! `tasklatch bench http --targets FILE`: the same workloads against several live servers
//! in one run, rounds alternating, each figure set beside the reference server's as a
//! ratio.
//!
//! Round `r` runs the targets starting from target `r mod n`, so no server always runs
//! first on a cooler machine or last on a warmer one; each cell of the report is the median
//! over the rounds. Before each run the generator waits for the machine to settle: every
//! target with `pids` under [`SETTLED_CORES_MAX`] cores for a quarter second (at most
//! [`SETTLE_MS_MAX`]), so tasks a server admitted in the last run and still runs (a
//! backlog of creates) are not billed to the next server. A target's CPU is read from `/proc` for its `pids` and every process
//! descending from them (a PostgreSQL postmaster's backends count for the server that uses
//! them), so "CPU per request" is the whole server's cost, and the generator's own share
//! stands beside it: a generator near its cores' limit says the comparison measured the
//! generator.
//!
//! The targets file (JSON; an error names the field):
//!
//! ```json
//! { "reference": "ts-reference",
//!   "targets": [
//!     { "name": "ts-reference", "url": "http://127.0.0.1:9001/mcp", "era": "2025-11-25",
//!       "pids": [4242], "tokens": [], "tool": "export",
//!       "args": { "name": "bench", "delay_ms": 0 },
//!       "long_args": { "name": "bench", "delay_ms": 600000 } } ] }
//! ```
//!
//! `era` is `2025-11-25` (the default) or `2026-07-28`; `pids`, `tokens`, `tool`, `args`
//! and `long_args` may be left out (no CPU figures; no `Authorization`; the `bench http`
//! defaults).

use super::http::{HttpBenchConfig, HttpBenchReport, MethodFigures, Workload, run, tree_cpu_s};
use crate::contract::Era;
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;

/// Targets in one file, at most.
pub const TARGETS_MAX: usize = 16;
/// Rounds at most.
pub const ROUNDS_MAX: usize = 50;
/// A server using less than this is settled.
pub const SETTLED_CORES_MAX: f64 = 0.05;
/// How long the generator waits at most for the servers to settle before a run.
pub const SETTLE_MS_MAX: u64 = 60_000;
const SETTLE_WINDOW_MS: u64 = 250;

/// One server to load.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    /// Its name in the report.
    pub name: String,
    /// Its endpoint.
    pub url: String,
    /// The era spoken to it.
    #[serde(default, deserialize_with = "era")]
    pub era: Era,
    /// The processes whose CPU (with their descendants') is the server's.
    #[serde(default)]
    pub pids: Vec<u32>,
    /// Bearer tokens, dealt round-robin.
    #[serde(default)]
    pub tokens: Vec<String>,
    /// The tool its tasks run (default: the `bench http` default).
    #[serde(default)]
    pub tool: Option<String>,
    /// The tool's arguments for a short task.
    #[serde(default)]
    pub args: Option<Value>,
    /// The tool's arguments for the long task `cancel-heavy` cancels.
    #[serde(default)]
    pub long_args: Option<Value>,
}

fn era<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Era, D::Error> {
    let text = String::deserialize(deserializer)?;
    Era::parse(&text).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "{text:?}: expected {} or {}",
            Era::Core2025.as_str(),
            Era::Extension2026.as_str()
        ))
    })
}

/// A targets file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Targets {
    /// The target every ratio is taken against.
    pub reference: String,
    /// The servers, in the order the report lists them.
    pub targets: Vec<Target>,
}

impl Targets {
    /// Reads and checks a targets file; the error names the file and the field.
    pub fn load(path: &Path) -> Result<Targets, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("{}: {error}", path.display()))?;
        let deserializer = &mut serde_json::Deserializer::from_str(&text);
        let targets: Targets = serde_path_to_error::deserialize(deserializer)
            .map_err(|error| format!("{}: {}: {}", path.display(), error.path(), error.inner()))?;
        targets
            .check()
            .map_err(|error| format!("{}: {error}", path.display()))?;
        Ok(targets)
    }

    /// Names unique, the reference among them, arguments objects, within the limits.
    pub fn check(&self) -> Result<(), String> {
        if self.targets.is_empty() || self.targets.len() > TARGETS_MAX {
            return Err(format!("targets: expected 1 to {TARGETS_MAX}"));
        }
        for (index, target) in self.targets.iter().enumerate() {
            if self.targets[..index].iter().any(|t| t.name == target.name) {
                return Err(format!("targets[{index}].name: {:?} twice", target.name));
            }
            for (field, value) in [("args", &target.args), ("long_args", &target.long_args)] {
                if value.as_ref().is_some_and(|value| !value.is_object()) {
                    return Err(format!("targets[{index}].{field}: expected a JSON object"));
                }
            }
        }
        if !self.targets.iter().any(|t| t.name == self.reference) {
            return Err(format!(
                "reference: {:?} is not one of the targets",
                self.reference
            ));
        }
        Ok(())
    }
}

/// What is the same for every target.
#[derive(Clone, Debug)]
pub struct CompareConfig {
    /// Workloads, each run over every target and round before the next.
    pub workloads: Vec<Workload>,
    /// Rounds per workload.
    pub rounds: usize,
    /// How long to wait at most, before each run, for the servers to settle (0: not at
    /// all; the default is [`SETTLE_MS_MAX`]).
    pub settle_ms_max: u64,
    /// Connections, duration, warm-up, rate and seed; its URL, era, tokens, tool and
    /// arguments are each target's.
    pub base: HttpBenchConfig,
}

/// One target's run in one round.
#[derive(Clone, Debug)]
pub struct Run {
    /// What the generator counted.
    pub report: HttpBenchReport,
    /// The server's CPU over the run (warm-up included), in cores.
    pub server_cores: Option<f64>,
    /// The server's CPU per counted request, in microseconds (the warm-up's requests are
    /// not counted, so the warm-up's CPU is taken out in proportion to its time).
    pub server_cpu_us_per_request: Option<f64>,
}

/// One workload's runs, by target, in the targets' order.
#[derive(Clone, Debug)]
pub struct WorkloadRuns {
    /// The workload.
    pub workload: Workload,
    /// `(target name, its era, its runs in round order)`.
    pub by_target: Vec<(String, Era, Vec<Run>)>,
}

/// The comparison.
#[derive(Clone, Debug)]
pub struct Comparison {
    /// The reference target's name.
    pub reference: String,
    /// Rounds per workload.
    pub rounds: usize,
    /// Connections per run.
    pub connections: usize,
    /// Seconds counted per run.
    pub measured_s: f64,
    /// Per workload.
    pub workloads: Vec<WorkloadRuns>,
}

/// Runs every workload against every target, rounds alternating; `progress` hears each
/// run as it ends.
pub async fn compare(
    targets: &Targets,
    config: &CompareConfig,
    mut progress: impl FnMut(&str, &Run),
) -> Result<Comparison, String> {
    targets.check()?;
    if config.rounds == 0 || config.rounds > ROUNDS_MAX {
        return Err(format!(
            "--rounds {}: expected 1 to {ROUNDS_MAX}",
            config.rounds
        ));
    }
    let count = targets.targets.len();
    let mut workloads = Vec::new();
    for &workload in &config.workloads {
        let mut by_target: Vec<(String, Era, Vec<Run>)> = targets
            .targets
            .iter()
            .map(|target| (target.name.clone(), target.era, Vec::new()))
            .collect();
        for round in 0..config.rounds {
            for offset in 0..count {
                let index = (round + offset) % count;
                let target = &targets.targets[index];
                settle(&targets.targets, config.settle_ms_max).await;
                let run = run_one(target, workload, &config.base).await?;
                progress(&target.name, &run);
                by_target[index].2.push(run);
            }
        }
        workloads.push(WorkloadRuns {
            workload,
            by_target,
        });
    }
    Ok(Comparison {
        reference: targets.reference.clone(),
        rounds: config.rounds,
        connections: config.base.connections,
        measured_s: config.base.duration_ms as f64 / 1_000.0,
        workloads,
    })
}

async fn run_one(
    target: &Target,
    workload: Workload,
    base: &HttpBenchConfig,
) -> Result<Run, String> {
    let defaults = HttpBenchConfig::default();
    let config = HttpBenchConfig {
        url: target.url.clone(),
        era: target.era,
        tokens: target.tokens.clone(),
        workload,
        tool: target.tool.clone().unwrap_or(defaults.tool),
        short_arguments: target.args.clone().unwrap_or(defaults.short_arguments),
        long_arguments: target.long_args.clone().unwrap_or(defaults.long_arguments),
        ..base.clone()
    };
    let total_ms = (config.warmup_ms + config.duration_ms) as f64;
    let counted_share = config.duration_ms as f64 / total_ms;
    let before = tree_cpu_s(&target.pids);
    let started = std::time::Instant::now();
    let report = run(config)
        .await
        .map_err(|error| format!("{} ({}): {error}", target.name, workload.as_str()))?;
    let elapsed_s = started.elapsed().as_secs_f64();
    let server_s = match (before, tree_cpu_s(&target.pids)) {
        (Some(before), Some(after)) => Some((after - before).max(0.0)),
        _ => None,
    };
    let requests = report.requests_per_s * report.measured_s;
    Ok(Run {
        server_cores: server_s.map(|s| s / elapsed_s.max(f64::MIN_POSITIVE)),
        server_cpu_us_per_request: server_s
            .filter(|_| requests >= 1.0)
            .map(|s| s * counted_share * 1e6 / requests),
        report,
    })
}

/// Waits (at most `settle_ms_max`) until every target with pids is under
/// [`SETTLED_CORES_MAX`].
async fn settle(targets: &[Target], settle_ms_max: u64) {
    let pids: Vec<u32> = targets
        .iter()
        .flat_map(|t| t.pids.iter().copied())
        .collect();
    if pids.is_empty() || settle_ms_max == 0 {
        return;
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(settle_ms_max);
    while std::time::Instant::now() < deadline {
        let before = tree_cpu_s(&pids);
        tokio::time::sleep(std::time::Duration::from_millis(SETTLE_WINDOW_MS)).await;
        match (before, tree_cpu_s(&pids)) {
            (Some(before), Some(after))
                if (after - before) * 1_000.0 / (SETTLE_WINDOW_MS as f64) >= SETTLED_CORES_MAX => {}
            _ => return,
        }
    }
}

/// The median of what `figure` gives for each run (`None` if no run gives it).
fn median(runs: &[Run], figure: impl Fn(&Run) -> Option<f64>) -> Option<f64> {
    let mut values: Vec<f64> = runs.iter().filter_map(figure).collect();
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(values[values.len() / 2])
}

fn method<'a>(run: &'a Run, name: &str) -> Option<&'a MethodFigures> {
    run.report.methods.iter().find(|m| m.method == name)
}

/// One target's medians for one workload.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Medians {
    /// All counted requests a second.
    pub requests_per_s: Option<f64>,
    /// `tools/call` (creates) a second.
    pub creates_per_s: Option<f64>,
    /// `tasks/get` a second.
    pub gets_per_s: Option<f64>,
    /// p99 of `tools/call`, in milliseconds.
    pub create_p99_ms: Option<f64>,
    /// p99 of `tasks/get`, in milliseconds.
    pub get_p99_ms: Option<f64>,
    /// The server's CPU, in cores.
    pub server_cores: Option<f64>,
    /// The server's CPU per request, in microseconds.
    pub server_cpu_us_per_request: Option<f64>,
    /// The generator's CPU, in cores.
    pub generator_cores: Option<f64>,
    /// Errors over all rounds.
    pub errors: u64,
}

/// The medians of `runs`.
pub fn medians(runs: &[Run]) -> Medians {
    let per_s = |name: &'static str| move |run: &Run| method(run, name).map(|m| m.per_s);
    let p99 =
        |name: &'static str| move |run: &Run| method(run, name).map(|m| m.p99_us as f64 / 1e3);
    Medians {
        requests_per_s: median(runs, |run| Some(run.report.requests_per_s)),
        creates_per_s: median(runs, per_s("tools/call")),
        gets_per_s: median(runs, per_s("tasks/get")),
        create_p99_ms: median(runs, p99("tools/call")),
        get_p99_ms: median(runs, p99("tasks/get")),
        server_cores: median(runs, |run| run.server_cores),
        server_cpu_us_per_request: median(runs, |run| run.server_cpu_us_per_request),
        generator_cores: median(runs, |run| run.report.generator_cores),
        errors: runs
            .iter()
            .flat_map(|run| run.report.methods.iter().map(|m| m.errors))
            .sum(),
    }
}

fn ratio(value: Option<f64>, reference: Option<f64>) -> Option<f64> {
    match (value, reference) {
        (Some(value), Some(reference)) if reference > 0.0 => Some(value / reference),
        _ => None,
    }
}

/// `value (×ratio)`, or `–` for a figure the run does not have.
fn cell(value: Option<f64>, decimals: usize, against: Option<f64>) -> String {
    match (value, ratio(value, against)) {
        (Some(value), Some(ratio)) => format!("{value:.decimals$} (×{ratio:.2})"),
        (Some(value), None) => format!("{value:.decimals$}"),
        (None, _) => "–".into(),
    }
}

/// The comparison as Markdown: a table per workload, every figure with its ratio to the
/// reference's (throughput above 1 is faster; p99 and CPU per request below 1 are).
pub fn render(comparison: &Comparison) -> String {
    let mut out = format!(
        "{} connections, {:.0} s counted per run, median of {} rounds (alternating); ratios are to {}.\n",
        comparison.connections, comparison.measured_s, comparison.rounds, comparison.reference
    );
    for workload in &comparison.workloads {
        let reference = workload
            .by_target
            .iter()
            .find(|(name, _, _)| *name == comparison.reference)
            .map(|(_, _, runs)| medians(runs))
            .unwrap_or_default();
        out.push_str(&format!("\n### {}\n\n", workload.workload.as_str()));
        out.push_str("| server | era | requests/s | tools/call/s | tasks/get/s | p99 tools/call ms | p99 tasks/get ms | server cores | server CPU µs/request | generator cores | errors |\n");
        out.push_str("|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (name, era, runs) in &workload.by_target {
            let m = medians(runs);
            out.push_str(&format!(
                "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                era.as_str(),
                cell(m.requests_per_s, 0, reference.requests_per_s),
                cell(m.creates_per_s, 0, reference.creates_per_s),
                cell(m.gets_per_s, 0, reference.gets_per_s),
                cell(m.create_p99_ms, 2, reference.create_p99_ms),
                cell(m.get_p99_ms, 2, reference.get_p99_ms),
                cell(m.server_cores, 2, None),
                cell(
                    m.server_cpu_us_per_request,
                    0,
                    reference.server_cpu_us_per_request
                ),
                cell(m.generator_cores, 2, None),
                m.errors,
            ));
        }
    }
    out
}
