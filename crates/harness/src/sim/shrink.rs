//! Minimisation of a failing run: its fault schedule and workload are shrunk to the
//! smallest that still breaks the same invariant (with the same seed or a neighbour).
//!
//! The failing run's drawn knobs and faults are first pinned into a copy of its scenario
//! ([`Scenario::plan`]); the supervisor draws them anyway, so the pinned copy replays the
//! run exactly (same trace hash) and the shrink starts from the failure itself. Then, greedily
//! and until nothing more can go: drop every fault, fewer clients, fewer tasks, fewer
//! workers, drop one fault, turn one knob off, drop one crash point, a fault later, a fault
//! shorter. A candidate is kept when it still violates the same invariant with the current
//! seed or one of the next few (`SEEDS_PER_CANDIDATE`). Every candidate makes the
//! schedule strictly smaller, so the search ends; `runs_max` bounds it anyway.
//!
//! A change to the schedule changes what the seeded generator is asked for afterwards, so
//! a shrunk run is a different interleaving that fails the same way, not a subsequence of
//! the original; hence neighbouring seeds are tried too. That is what a reader wants: the
//! fewest moving parts that still fail, and the seed that shows it.

use super::outcome::SimOutcome;
use super::scenario::{Plan, Scenario};
use super::world::Sim;
use crate::store::StoreFactory;
use serde::{Deserialize, Serialize};

/// Seeds tried per candidate: its own first, then the next ones. A smaller schedule
/// shifts every later draw, so the same seed rarely hits the same race again; a neighbour
/// often does, and the minimal scenario records the seed that did.
const SEEDS_PER_CANDIDATE: u64 = 32;

/// How big a run is, before and after.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub struct Size {
    /// Faults in the schedule.
    pub faults: usize,
    /// Clients (one per tenant).
    pub clients: usize,
    /// Tasks in the workload (tenants × tasks per tenant).
    pub tasks: usize,
    /// Worker nodes.
    pub workers: usize,
    /// Knobs that are on: non-zero chances and delays, plus crash points while point
    /// crashes are on.
    pub knobs_on: usize,
    /// Events the run recorded.
    pub events: usize,
}

impl Size {
    fn of(scenario: &Scenario, plan: &Plan, outcome: &SimOutcome) -> Size {
        let mut knobs = plan.knobs.clone();
        let points = if knobs.point_crash_percent > 0 {
            knobs.crash_points.len()
        } else {
            0
        };
        let delays = [knobs.probe_delay_ms_max, knobs.delivery_delay_ms_max]
            .iter()
            .filter(|delay| **delay > 0)
            .count();
        let chances = knobs
            .percents_mut()
            .into_iter()
            .filter(|(_, percent)| **percent > 0)
            .count();
        Size {
            faults: plan.faults.len(),
            clients: scenario.tenants,
            tasks: scenario.tenants * scenario.tasks_per_tenant,
            workers: scenario.workers,
            knobs_on: points + delays + chances,
            events: outcome.history.len(),
        }
    }
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} faults, {} clients, {} tasks, {} workers, {} knobs on, {} events",
            self.faults, self.clients, self.tasks, self.workers, self.knobs_on, self.events
        )
    }
}

/// The result of a minimisation.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The smallest failing scenario found: the plan pinned, its failing seed as its
    /// default (`outcome.seed`, possibly a neighbour of the original).
    pub scenario: Scenario,
    /// Its run (fails with the same invariant).
    pub outcome: SimOutcome,
    /// The failing run's size.
    pub before: Size,
    /// The minimal run's size.
    pub after: Size,
    /// Simulations run, the pinning replay included.
    pub runs: usize,
    /// Candidates kept.
    pub steps: usize,
}

/// Shrinks `failing` (a run of `scenario`) to the smallest schedule that still breaks
/// `invariant`, in at most `runs_max` simulations.
pub fn shrink(
    scenario: &Scenario,
    failing: &SimOutcome,
    invariant: &str,
    runs_max: usize,
    store: &dyn StoreFactory,
) -> Result<Shrunk, String> {
    let run_seed = |scenario: &Scenario, seed: u64| Sim::new(scenario).store(store).run(seed);
    assert!(runs_max > 0, "a shrink needs at least the pinning run");
    let seed = failing.seed;
    let plan = failing.plan.clone().ok_or_else(|| {
        format!(
            "{} seed {seed} panicked before drawing its plan: nothing to pin",
            scenario.name
        )
    })?;
    let breaks = |outcome: &SimOutcome| {
        outcome
            .violations
            .iter()
            .any(|violation| violation.invariant == invariant)
    };
    let before = Size::of(scenario, &plan, failing);
    let mut current = scenario.clone();
    current.plan = Some(plan);
    let pinned = run_seed(&current, seed);
    if pinned.trace_hash != failing.trace_hash || !breaks(&pinned) {
        return Err(format!(
            "{} seed {seed}: the pinned plan did not replay the run (trace {} then {}): the simulation is not deterministic",
            scenario.name, failing.trace_hash, pinned.trace_hash
        ));
    }
    // Renamed, the run differs only in its first line (the name is printed, never drawn
    // on); it is run again so the outcome kept is the saved scenario's own.
    current.name = format!("{}-minimal-{seed}", scenario.name);
    current.description = format!(
        "{} seed {seed} shrunk by `tasklatch hunt` to the smallest schedule that still breaks {invariant}.",
        scenario.name
    );
    current.default_seeds = [seed, seed + 1];
    current.marks = Vec::new();
    let mut outcome = run_seed(&current, seed);
    let mut runs = 2;
    if !breaks(&outcome) {
        return Err(format!(
            "{} seed {seed}: renaming the scenario changed the run",
            scenario.name
        ));
    }
    let mut steps = 0;
    let mut seed = seed;
    'search: loop {
        for mut candidate in candidates(&current) {
            for tried_seed in (0..SEEDS_PER_CANDIDATE).map(|offset| seed.wrapping_add(offset)) {
                if runs >= runs_max {
                    break 'search;
                }
                let tried = run_seed(&candidate, tried_seed);
                runs += 1;
                if breaks(&tried) {
                    candidate.default_seeds = [tried_seed, tried_seed.wrapping_add(1)];
                    current = candidate;
                    outcome = tried;
                    seed = tried_seed;
                    steps += 1;
                    continue 'search;
                }
            }
        }
        break;
    }
    let plan = current.plan.as_ref().expect("pinned above");
    let after = Size::of(&current, plan, &outcome);
    Ok(Shrunk {
        after,
        scenario: current,
        outcome,
        before,
        runs,
        steps,
    })
}

/// Every one-step smaller schedule, the biggest cuts first: all faults, then the workload
/// (fewer moving parts is what a reader wants most), then single faults and knobs.
fn candidates(scenario: &Scenario) -> Vec<Scenario> {
    let plan = scenario.plan.as_ref().expect("shrinking a pinned scenario");
    let mut out = Vec::new();
    let with_plan = |change: &dyn Fn(&mut Plan)| {
        let mut next = scenario.clone();
        change(next.plan.as_mut().expect("pinned"));
        next
    };
    if plan.faults.len() > 1 {
        out.push(with_plan(&|plan| plan.faults.clear()));
    }
    for fewer in smaller(scenario.tenants) {
        let mut next = scenario.clone();
        next.tenants = fewer;
        // The plan names one era per tenant: the dropped tenants' go with them.
        next.plan
            .as_mut()
            .expect("pinned")
            .client_eras
            .truncate(fewer);
        out.push(next);
    }
    for fewer in smaller(scenario.tasks_per_tenant) {
        let mut next = scenario.clone();
        next.tasks_per_tenant = fewer;
        out.push(next);
    }
    if scenario.workers > 1 {
        let mut next = scenario.clone();
        next.workers -= 1;
        // The last worker goes, and the faults aimed at it with it.
        let workers = next.workers;
        next.plan
            .as_mut()
            .expect("pinned")
            .faults
            .retain(|fault| !fault.kind.has_victim() || fault.node <= workers);
        out.push(next);
    }
    for index in 0..plan.faults.len() {
        out.push(with_plan(&|plan| {
            plan.faults.remove(index);
        }));
    }
    let mut knobs = plan.knobs.clone();
    for (field, percent) in knobs.percents_mut() {
        if *percent > 0 {
            out.push(with_plan(&|plan| {
                for (name, value) in plan.knobs.percents_mut() {
                    if name == field {
                        *value = 0;
                    }
                }
            }));
        }
    }
    if plan.knobs.probe_delay_ms_max > 0 {
        out.push(with_plan(&|plan| plan.knobs.probe_delay_ms_max = 0));
    }
    if plan.knobs.delivery_delay_ms_max > 0 {
        out.push(with_plan(&|plan| plan.knobs.delivery_delay_ms_max = 0));
    }
    if plan.knobs.point_crash_percent > 0 && plan.knobs.crash_points.len() > 1 {
        for index in 0..plan.knobs.crash_points.len() {
            out.push(with_plan(&|plan| {
                plan.knobs.crash_points.remove(index);
            }));
        }
    }
    for index in 0..plan.faults.len() {
        let fault = &plan.faults[index];
        let later_ms = fault.at_ms + (scenario.safety_ms - fault.at_ms) / 2;
        if later_ms > fault.at_ms {
            out.push(with_plan(&|plan| plan.faults[index].at_ms = later_ms));
        }
        if fault.duration_ms > 1 {
            let shorter_ms = fault.duration_ms / 2;
            out.push(with_plan(&|plan| {
                plan.faults[index].duration_ms = shorter_ms
            }));
        }
    }
    out
}

/// Smaller counts worth trying, smallest first: 1, half, one less.
fn smaller(count: usize) -> Vec<usize> {
    let mut out: Vec<usize> = [1, count / 2, count.saturating_sub(1)]
        .into_iter()
        .filter(|fewer| *fewer >= 1 && *fewer < count)
        .collect();
    out.dedup();
    out
}
