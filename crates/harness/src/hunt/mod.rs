//! Race hunting: scenarios over fresh seeds until a time budget or a seed count is spent,
//! on several cores, each failure kept as artifacts a person can read and a command that
//! replays it.
//!
//! The seed space is split so that machines never overlap: with `--shard i/n` and a common
//! first seed `f`, shard `i` runs seeds `f + i`, `f + i + n`, `f + i + 2n`, …, and every
//! seed runs every selected scenario. Which seeds a budgeted hunt reaches depends on the
//! machine's speed; what each seed does never does (the run is deterministic).
//!
//! Each seed is one deterministic simulation ([`crate::sim::Sim`]); the hunt's own
//! threads, clock and channel only schedule them, outside any simulation.
//! [`artifact`] writes what a failure leaves behind, [`swimlane`] draws it, and
//! [`crate::sim::shrink`] minimises its fault schedule; [`tally`] counts a shard's runs
//! in a file and adds shards up.

pub mod artifact;
pub mod swimlane;
pub mod tally;

use crate::sim::{KNOWN_MARKS, Scenario, Sim, SimOutcome};
use crate::store::{MemoryFactory, StoreFactory};
use artifact::FailureRecord;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One slice `index` of `count` of the seed space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This shard's position, `0..count`.
    pub index: u64,
    /// How many shards the seed space is split into (at least 1).
    pub count: u64,
}

impl Shard {
    /// The whole seed space: shard 0 of 1.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Parses `i/n` with `i < n`.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let (index, count) = text
            .split_once('/')
            .ok_or_else(|| format!("{text:?}: expected i/n, e.g. 0/4"))?;
        let index: u64 = index
            .parse()
            .map_err(|_| format!("{text:?}: bad shard index"))?;
        let count: u64 = count
            .parse()
            .map_err(|_| format!("{text:?}: bad shard count"))?;
        if count == 0 || index >= count {
            return Err(format!("{text:?}: need 0 <= i < n"));
        }
        Ok(Shard { index, count })
    }
}

/// What to hunt and for how long.
#[derive(Clone)]
pub struct HuntConfig {
    /// The scenarios every seed runs.
    pub scenarios: Vec<Scenario>,
    /// The store every run opens fresh ([`HuntConfig::memory`]'s default: memory).
    pub store: Arc<dyn StoreFactory>,
    /// The seed space starts here; shards of one hunt must share it.
    pub first_seed: u64,
    /// This machine's slice of the seed space.
    pub shard: Shard,
    /// Stop starting runs after this long.
    pub budget: Option<Duration>,
    /// Stop after this many seeds (each runs every scenario).
    pub seeds: Option<u64>,
    /// Simulations run side by side (OS threads, one simulation each).
    pub jobs: usize,
    /// Collect failures instead of stopping at the first.
    pub keep_going: bool,
    /// Stop anyway once this many failures are in hand.
    pub failures_max: usize,
}

impl HuntConfig {
    /// A hunt of `scenarios` on the memory store, one job, from seed 0, until `seeds`
    /// seeds have run; set the other fields as needed.
    pub fn memory(scenarios: Vec<Scenario>, seeds: u64) -> HuntConfig {
        HuntConfig {
            scenarios,
            store: Arc::new(MemoryFactory),
            first_seed: 0,
            shard: Shard::WHOLE,
            budget: None,
            seeds: Some(seeds),
            jobs: 1,
            keep_going: false,
            failures_max: 1,
        }
    }

    /// The `index`-th run of this shard: which scenario, which seed.
    pub fn run_at(&self, index: u64) -> (usize, u64) {
        let scenarios = self.scenarios.len() as u64;
        let round = index / scenarios;
        let seed = self
            .first_seed
            .wrapping_add(self.shard.index)
            .wrapping_add(round.wrapping_mul(self.shard.count));
        ((index % scenarios) as usize, seed)
    }

    /// Runs in this shard when bounded by a seed count.
    fn runs_max(&self) -> Option<u64> {
        self.seeds
            .map(|seeds| seeds.saturating_mul(self.scenarios.len() as u64))
    }
}

/// Where a hunt stands, for the progress display.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    /// Runs finished (scenario × seed).
    pub runs: u64,
    /// Runs that broke an invariant.
    pub failing: u64,
    /// Distinct coverage marks hit so far, of [`KNOWN_MARKS`].
    pub marks_hit: usize,
    /// Wall-clock time since the hunt started.
    pub elapsed: Duration,
}

impl Progress {
    /// Runs finished per wall-clock second.
    pub fn runs_per_second(&self) -> f64 {
        self.runs as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// How one scenario fared.
#[derive(Clone, Debug, Default)]
pub struct ScenarioTally {
    /// Runs of this scenario finished.
    pub runs: u64,
    /// Runs of this scenario that broke an invariant.
    pub failing: u64,
    /// Lowest and highest seed run.
    pub seeds: Option<(u64, u64)>,
}

/// What a hunt found.
#[derive(Debug, Default)]
pub struct HuntReport {
    /// Runs finished, every scenario.
    pub runs: u64,
    /// Per scenario name, how it fared.
    pub tally: BTreeMap<String, ScenarioTally>,
    /// Failing runs, in the order they were found (capped at `failures_max`).
    pub failures: Vec<SimOutcome>,
    /// Coverage marks over every run: mark name → times hit.
    pub marks: BTreeMap<String, u64>,
    /// Wall-clock time the hunt took.
    pub elapsed: Duration,
}

impl HuntReport {
    /// Failing runs over every scenario (may exceed `failures.len()`, which is capped).
    pub fn failing(&self) -> u64 {
        self.tally.values().map(|tally| tally.failing).sum()
    }

    /// Known marks no run hit.
    pub fn marks_missed(&self) -> Vec<&'static str> {
        KNOWN_MARKS
            .iter()
            .copied()
            .filter(|mark| !self.marks.contains_key(*mark))
            .collect()
    }
}

/// Hunts. `progress` is called from this thread a few times a second and once at the end.
pub fn hunt(config: &HuntConfig, progress: &mut dyn FnMut(&Progress)) -> HuntReport {
    assert!(!config.scenarios.is_empty(), "a hunt needs a scenario");
    assert!(config.jobs > 0, "a hunt needs a job");
    assert!(config.failures_max > 0, "a hunt keeps at least one failure");
    let started = Instant::now();
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let runs_max = config.runs_max();
    let mut report = HuntReport::default();
    // Bounded: a job waits when the collector falls behind.
    let (send, receive) = std::sync::mpsc::sync_channel::<(usize, SimOutcome)>(config.jobs * 4);
    std::thread::scope(|scope| {
        for _ in 0..config.jobs {
            let send = send.clone();
            let (next, stop) = (&next, &stop);
            scope.spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    if config
                        .budget
                        .is_some_and(|budget| started.elapsed() >= budget)
                    {
                        break;
                    }
                    let index = next.fetch_add(1, Ordering::AcqRel);
                    if runs_max.is_some_and(|max| index >= max) {
                        break;
                    }
                    let (scenario, seed) = config.run_at(index);
                    let outcome = Sim::new(&config.scenarios[scenario])
                        .store(config.store.as_ref())
                        .without_passing_hashes()
                        .run(seed);
                    if send.send((scenario, outcome)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(send);
        let mut shown_at = Instant::now();
        loop {
            let received = receive.recv_timeout(Duration::from_millis(250));
            match received {
                Ok((scenario, outcome)) => {
                    report.runs += 1;
                    let tally = report
                        .tally
                        .entry(config.scenarios[scenario].name.clone())
                        .or_default();
                    tally.runs += 1;
                    tally.seeds = Some(match tally.seeds {
                        None => (outcome.seed, outcome.seed),
                        Some((low, high)) => (low.min(outcome.seed), high.max(outcome.seed)),
                    });
                    for (mark, count) in &outcome.marks {
                        *report.marks.entry(mark.clone()).or_default() += count;
                    }
                    if !outcome.violations.is_empty() {
                        tally.failing += 1;
                        if report.failures.len() < config.failures_max {
                            report.failures.push(outcome);
                        }
                        if !config.keep_going || report.failures.len() >= config.failures_max {
                            stop.store(true, Ordering::Release);
                        }
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            }
            if shown_at.elapsed() >= Duration::from_millis(250) {
                progress(&snapshot(&report, started));
                shown_at = Instant::now();
            }
        }
    });
    report.elapsed = started.elapsed();
    progress(&snapshot(&report, started));
    report
}

fn snapshot(report: &HuntReport, started: Instant) -> Progress {
    Progress {
        runs: report.runs,
        failing: report.failing(),
        marks_hit: KNOWN_MARKS
            .iter()
            .filter(|mark| report.marks.contains_key(**mark))
            .count(),
        elapsed: started.elapsed(),
    }
}

/// What a hunt keeps of its failures.
#[derive(Clone, Debug)]
pub struct Keep {
    /// Folder for failure artifacts.
    pub out: PathBuf,
    /// Minimise each failure's fault schedule.
    pub minimise: bool,
    /// Simulations a minimisation may spend per failure.
    pub shrink_runs: usize,
    /// Also write a JUnit XML report here.
    pub junit: Option<PathBuf>,
}

/// A hunt with its failures minimised and written.
pub struct Finished {
    /// What the hunt found.
    pub report: HuntReport,
    /// Each failure's artifact folder and record.
    pub written: Vec<(PathBuf, FailureRecord)>,
    /// What could not be done but did not stop the hunt (a failure not minimised).
    pub warnings: Vec<String>,
}

/// The whole pipeline: [`hunt`] → minimise each failure ([`crate::sim::shrink`]) → write
/// its artifacts ([`artifact::write_failure`]) → the JUnit report. Errors are failures to
/// write; failures found are in [`Finished::report`].
pub fn hunt_and_keep(
    config: &HuntConfig,
    keep: &Keep,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Finished, String> {
    assert!(
        keep.shrink_runs > 0,
        "a minimisation needs at least one run"
    );
    let report = hunt(config, progress);
    let mutant = crate::mutants::active_name();
    let commit = crate::report::commit();
    let mut written = Vec::new();
    let mut warnings = Vec::new();
    for failure in &report.failures {
        let scenario = config
            .scenarios
            .iter()
            .find(|s| s.name == failure.scenario)
            .expect("a failure comes from a hunted scenario");
        let invariant = failure.violations[0].invariant;
        let shrunk = if keep.minimise {
            crate::sim::shrink::shrink(
                scenario,
                failure,
                invariant,
                keep.shrink_runs,
                config.store.as_ref(),
            )
            .map_err(|error| warnings.push(format!("not minimised: {error}")))
            .ok()
        } else {
            None
        };
        written.push(artifact::write_failure(
            &keep.out,
            failure,
            &commit,
            mutant,
            shrunk.as_ref(),
        )?);
    }
    if let Some(path) = &keep.junit {
        crate::report::write_whole_creating(path, &artifact::junit(&report, &written))?;
    }
    Ok(Finished {
        report,
        written,
        warnings,
    })
}

impl Finished {
    /// The hunt's closing lines: totals, one line per scenario, marks, and per failure its
    /// artifacts and the commands that replay it.
    pub fn summary(&self, config: &HuntConfig, keep: &Keep) -> String {
        use std::fmt::Write as _;
        let report = &self.report;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "hunt: {} runs in {:.1} s ({:.0} runs/s on {} jobs), seeds from {} shard {}/{}, {} failing",
            report.runs,
            report.elapsed.as_secs_f64(),
            report.runs as f64 / report.elapsed.as_secs_f64().max(1e-9),
            config.jobs,
            config.first_seed,
            config.shard.index,
            config.shard.count,
            report.failing()
        );
        for (scenario, tally) in &report.tally {
            let (low, high) = tally.seeds.unwrap_or_default();
            let _ = writeln!(
                out,
                "  {scenario:<20} {:>7} runs  seeds {low}..={high}  {} failing",
                tally.runs, tally.failing
            );
        }
        let missed = report.marks_missed();
        let _ = writeln!(
            out,
            "  marks hit {}/{}{}",
            KNOWN_MARKS.len() - missed.len(),
            KNOWN_MARKS.len(),
            if missed.is_empty() {
                String::new()
            } else {
                format!(" (missed: {})", missed.join(", "))
            }
        );
        for (folder, record) in &self.written {
            let _ = writeln!(
                out,
                "FAILURE {} seed {}: {}",
                record.scenario,
                record.seed,
                record.violations.first().map_or("", String::as_str)
            );
            let _ = writeln!(
                out,
                "  artifacts: {}/ (failure.json, timeline.txt, swimlane.svg)",
                folder.display()
            );
            let _ = writeln!(out, "  reproduce: {}", record.repro);
            let _ = writeln!(out, "  trace:     {}", record.trace_hash);
            if let Some(minimised) = &record.minimised {
                let _ = writeln!(
                    out,
                    "  minimised in {} runs ({} steps kept): {} -> {}",
                    minimised.runs, minimised.steps, minimised.before, minimised.after
                );
                let _ = writeln!(out, "  reproduce minimal: {}", minimised.repro);
                let _ = writeln!(out, "  minimal trace:     {}", minimised.trace_hash);
            }
        }
        if let Some(path) = &keep.junit {
            let _ = writeln!(out, "  junit: {}", path.display());
        }
        out
    }
}
