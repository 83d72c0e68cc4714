//! Every named kill point, reached on purpose: for each point and a few seeds, the node
//! that is the n-th to reach the point crashes exactly there, and the oracle still finds
//! nothing wrong (while the sweep mark proves the crash happened) — in both deployments:
//! a `serve` process dying whole (`baseline`), one node of an external queue's
//! (`duplicate-delivery`).

use tasklatch::runtime::Point;
use tasklatch::sim::{Scenario, Sweep, run_seed_with};

#[test]
fn a_crash_at_each_named_point_breaks_nothing() {
    // A process runs all its workers: fewer arrivals at a point before one kills them all.
    for (name, arrival) in [("baseline", 2), ("duplicate-delivery", 3)] {
        sweep_every_point(&Scenario::by_name(name).expect(name), arrival);
    }
}

/// Seeds each point's crash must be seen in, and the seeds tried to find them (a seed
/// whose clients keep the tasks from the point until the faults stop reaches it too late).
const SEEDS_CRASHED: usize = 6;
const SEEDS_TRIED_MAX: u64 = 24;

fn sweep_every_point(scenario: &Scenario, arrival: u64) {
    for point in Point::ALL {
        let mark = format!("sweep:{}", point.name());
        let mut crashed = 0;
        for seed in 0..SEEDS_TRIED_MAX {
            let outcome = run_seed_with(scenario, seed, Some(Sweep { point, arrival }));
            match outcome.marks.get(&mark) {
                None => continue,
                Some(&1) => crashed += 1,
                Some(times) => panic!(
                    "{} seed {seed}: crashed {times} times at {}",
                    scenario.name,
                    point.name()
                ),
            }
            assert!(
                outcome.violations.is_empty(),
                "{} seed {seed}, crash at {}: {}\n  timeline tail:\n{}",
                scenario.name,
                point.name(),
                outcome.violations[0],
                outcome
                    .timeline()
                    .iter()
                    .rev()
                    .take(20)
                    .rev()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            if crashed == SEEDS_CRASHED {
                break;
            }
        }
        assert_eq!(
            crashed,
            SEEDS_CRASHED,
            "{}: a crash at {} in only {crashed} of seeds 0..{SEEDS_TRIED_MAX}",
            scenario.name,
            point.name()
        );
    }
}
