//! Check a store you wrote, from your own tests: the conformance suite, the proptest state
//! machine and a simulation hunt, through one call.
//!
//! ```no_run
//! use tasklatch_harness::verify::{Budget, check_store};
//! # let my_factory = tasklatch_server::store::MemoryFactory;
//! let report = check_store(&my_factory, &Budget::quick());
//! assert!(report.passed(), "{report}");
//! ```
//!
//! Give it a [`StoreFactory`] that opens fresh, empty stores of yours. Each engine sees the
//! store differently:
//!
//! - **conformance** — every check of [`crate::conformance::CHECKS`], single-threaded: the
//!   contract fixture replayed through your store, versions, idempotency, the outbox and
//!   its leases, pages of 1,000 tasks, cursors, expiry, cancellation, tenants, import;
//! - **proptest** (feature `proptest`) — interleaved client, worker, sweeper and clock steps
//!   compared after every step with a reference model; a failure shrinks to a few steps;
//! - **simulation** (feature `sim`) — every scenario's clients, dispatcher, workers and
//!   sweeper under madsim with kills, pauses, clock jumps and outages, judged by the oracle
//!   over the recorded history. The store runs inside the simulation on its one thread:
//!   it must be in-process and deterministic (no threads, clocks or sockets of its own; time
//!   arrives as `now_ms`). Each call runs whole, so the simulation finds races between your
//!   operations, not inside one.
//!
//! An engine a build lacks is reported as not run, never as passed.

use crate::conformance::{self, CheckOutcome};
use crate::store::StoreFactory;
use std::fmt;

/// How much each engine spends.
#[derive(Clone, Debug)]
pub struct Budget {
    /// Proptest cases (0 skips the engine).
    pub proptest_cases: u32,
    /// The proptest RNG seed: the same seed generates the same cases.
    pub proptest_seed: u64,
    /// Seeds per simulation scenario (0 skips the engine).
    pub sim_seeds: u64,
    /// The first simulation seed.
    pub sim_first_seed: u64,
}

impl Budget {
    /// A few seconds: 64 proptest cases, 8 seeds of every scenario.
    pub fn quick() -> Budget {
        Budget {
            proptest_cases: 64,
            proptest_seed: 0x7a5c_1a7c,
            sim_seeds: 8,
            sim_first_seed: 0,
        }
    }

    /// What tasklatch runs on its own stores every day: 256 cases, 48 seeds per scenario.
    pub fn everyday() -> Budget {
        Budget {
            proptest_cases: 256,
            sim_seeds: 48,
            ..Budget::quick()
        }
    }
}

/// One engine's verdict.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Nothing found in `spent` units (checks, cases, runs).
    Passed {
        /// Units run: proptest cases, or simulation runs.
        spent: u64,
    },
    /// The first failure, after `spent` units, with how to see it again.
    Failed {
        /// Units run up to and including the failing one.
        spent: u64,
        /// The failure, as the engine worded it (the shrunk steps, the violations).
        detail: String,
        /// A command or call that replays the failure.
        reproduce: String,
    },
    /// Not run, and why (a feature this build lacks, or a zero budget).
    NotRun(String),
}

impl Verdict {
    fn failed(&self) -> bool {
        matches!(self, Verdict::Failed { .. })
    }
}

/// What [`check_store`] found.
#[derive(Clone, Debug)]
pub struct Report {
    /// The factory's name.
    pub store: String,
    /// Every conformance check's outcome.
    pub conformance: Vec<CheckOutcome>,
    /// The proptest state machine's verdict.
    pub proptest: Verdict,
    /// The simulation's verdict, over every scenario.
    pub simulation: Verdict,
}

impl Report {
    /// No engine failed (an engine not run does not fail).
    pub fn passed(&self) -> bool {
        self.failed_engines().is_empty()
    }

    /// The engines that found something: `conformance`, `proptest`, `simulation`.
    pub fn failed_engines(&self) -> Vec<&'static str> {
        let mut failed = Vec::new();
        if self.conformance.iter().any(|check| !check.passed) {
            failed.push("conformance");
        }
        if self.proptest.failed() {
            failed.push("proptest");
        }
        if self.simulation.failed() {
            failed.push("simulation");
        }
        failed
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let failed = self.failed_engines();
        if failed.is_empty() {
            writeln!(f, "store {}: passed", self.store)?;
        } else {
            writeln!(f, "store {}: FAILED ({})", self.store, failed.join(", "))?;
        }
        let broken: Vec<&CheckOutcome> = self.conformance.iter().filter(|c| !c.passed).collect();
        if broken.is_empty() {
            writeln!(f, "  conformance  ok    {} checks", self.conformance.len())?;
        } else {
            writeln!(
                f,
                "  conformance  FAIL  {} of {} checks",
                broken.len(),
                self.conformance.len()
            )?;
            for check in broken {
                writeln!(f, "      {}: {}", check.name, check.detail)?;
            }
        }
        for (engine, verdict, unit) in [
            ("proptest", &self.proptest, "cases"),
            ("simulation", &self.simulation, "runs"),
        ] {
            match verdict {
                Verdict::Passed { spent } => writeln!(f, "  {engine:<11}  ok    {spent} {unit}")?,
                Verdict::Failed {
                    spent,
                    detail,
                    reproduce,
                } => {
                    writeln!(f, "  {engine:<11}  FAIL  after {spent} {unit}")?;
                    writeln!(f, "      {detail}")?;
                    writeln!(f, "      reproduce: {reproduce}")?;
                }
                Verdict::NotRun(why) => writeln!(f, "  {engine:<11}  not run: {why}")?,
            }
        }
        Ok(())
    }
}

/// Runs every engine this build has against stores from `factory`.
pub fn check_store(factory: &dyn StoreFactory, budget: &Budget) -> Report {
    Report {
        store: factory.name().to_owned(),
        conformance: conformance::run_all(factory),
        proptest: proptest_engine(factory, budget),
        simulation: simulation_engine(factory, budget),
    }
}

#[cfg(feature = "proptest")]
fn proptest_engine(factory: &dyn StoreFactory, budget: &Budget) -> Verdict {
    use crate::interleave::prop;
    if budget.proptest_cases == 0 {
        return Verdict::NotRun("a budget of 0 cases".into());
    }
    match prop::search(factory, budget.proptest_cases, budget.proptest_seed) {
        Ok(()) => Verdict::Passed {
            spent: u64::from(budget.proptest_cases),
        },
        Err(found) => Verdict::Failed {
            spent: u64::from(found.cases_to_fail),
            detail: format!(
                "shrank to {} steps: {}\n      steps: {:?}",
                found.steps.len(),
                found.message,
                found.steps
            ),
            reproduce: format!(
                "tasklatch_harness::interleave::prop::run_steps(&factory, &steps, None) with the steps above, or search(&factory, {}, {:#x})",
                budget.proptest_cases, budget.proptest_seed
            ),
        },
    }
}

#[cfg(not(feature = "proptest"))]
fn proptest_engine(_factory: &dyn StoreFactory, _budget: &Budget) -> Verdict {
    Verdict::NotRun("tasklatch was built without the `proptest` feature".into())
}

#[cfg(all(feature = "sim", madsim))]
fn simulation_engine(factory: &dyn StoreFactory, budget: &Budget) -> Verdict {
    use crate::sim::{Scenario, Sim};
    if budget.sim_seeds == 0 {
        return Verdict::NotRun("a budget of 0 seeds".into());
    }
    let scenarios = match Scenario::all() {
        Ok(scenarios) => scenarios,
        Err(error) => return Verdict::NotRun(format!("the scenarios do not load: {error}")),
    };
    let mut spent = 0;
    for offset in 0..budget.sim_seeds {
        let seed = budget.sim_first_seed.wrapping_add(offset);
        for scenario in &scenarios {
            spent += 1;
            let outcome = Sim::new(scenario).store(factory).run(seed);
            if let Some(violation) = outcome.violations.first() {
                return Verdict::Failed {
                    spent,
                    detail: format!("{} seed {seed}: {violation}", scenario.name),
                    reproduce: match outcome.store_url {
                        Some(_) => outcome.repro_command(),
                        None => format!(
                            "Sim::new(&Scenario::by_name({:?})?).store(&factory).run({seed}).timeline()",
                            scenario.name
                        ),
                    },
                };
            }
        }
    }
    Verdict::Passed { spent }
}

#[cfg(not(all(feature = "sim", madsim)))]
fn simulation_engine(_factory: &dyn StoreFactory, _budget: &Budget) -> Verdict {
    Verdict::NotRun("tasklatch was built without the `sim` feature (and `--cfg madsim`)".into())
}
