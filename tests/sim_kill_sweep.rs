//! Every named kill point, reached on purpose: for each point and a few seeds, the node
//! that is the third to reach the point crashes exactly there, and the oracle still finds
//! nothing wrong (while the sweep mark proves the crash happened).

use tasklatch::runtime::Point;
use tasklatch::sim::{Scenario, Sweep, run_seed_with};

#[test]
fn a_crash_at_each_named_point_breaks_nothing() {
    let scenario = Scenario::by_name("baseline").expect("baseline scenario");
    for point in Point::ALL {
        for seed in 0..6 {
            let outcome = run_seed_with(&scenario, seed, Some(Sweep { point, arrival: 3 }));
            let mark = format!("sweep:{}", point.name());
            assert_eq!(
                outcome.marks.get(&mark),
                Some(&1),
                "seed {seed}: no crash at {}",
                point.name()
            );
            assert!(
                outcome.violations.is_empty(),
                "seed {seed}, crash at {}: {}\n  timeline tail:\n{}",
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
        }
    }
}
