//! Pinned plans: a scenario whose `plan` holds the knobs and faults a seed drew replays
//! that seed exactly (the minimiser starts from this), and a malformed plan is refused
//! with the file and field named.

use std::path::Path;
use tasklatch::sim::{FaultKind, Scenario, run_seed};

fn baseline() -> Scenario {
    Scenario::by_name("baseline").expect("baseline loads")
}

#[test]
fn a_pinned_plan_replays_the_drawn_run_exactly() {
    let scenario = baseline();
    let mut with_faults = 0;
    for seed in 0..12 {
        let drawn = run_seed(&scenario, seed);
        let plan = drawn
            .plan
            .clone()
            .expect("an unpanicked run reports its plan");
        with_faults += usize::from(!plan.faults.is_empty());
        let mut pinned = scenario.clone();
        pinned.plan = Some(plan);
        // Through the file format too: what the minimiser writes is what replays.
        let text = serde_json::to_string_pretty(&pinned).expect("serialises");
        let reread = Scenario::parse(Path::new("pinned.json"), &text).expect("re-reads");
        let replayed = run_seed(&reread, seed);
        assert_eq!(drawn.trace_hash, replayed.trace_hash, "seed {seed}");
    }
    assert!(
        with_faults > 0,
        "no seed drew a fault: the check proved nothing"
    );
}

#[test]
fn a_changed_plan_changes_the_run() {
    let scenario = baseline();
    let seed = (0..32)
        .find(|seed| {
            run_seed(&scenario, *seed)
                .plan
                .is_some_and(|plan| !plan.faults.is_empty())
        })
        .expect("a seed with faults");
    let drawn = run_seed(&scenario, seed);
    let mut pinned = scenario.clone();
    let mut plan = drawn.plan.clone().expect("plan");
    plan.faults.clear();
    pinned.plan = Some(plan);
    assert_ne!(drawn.trace_hash, run_seed(&pinned, seed).trace_hash);
}

#[test]
fn malformed_plans_are_refused_with_the_field_named() {
    let scenario = baseline();
    let mut pinned = scenario.clone();
    pinned.plan = run_seed(&scenario, 1).plan;
    let good = serde_json::to_value(&pinned).expect("serialises");
    type Change = Box<dyn Fn(&mut serde_json::Value)>;
    let cases: Vec<(&str, Change, &str)> = vec![
        (
            "victim out of range",
            Box::new(|v| {
                v["plan"]["faults"] = serde_json::json!([
                    {"at_ms": 10, "kind": "kill", "node": 99, "duration_ms": 100}
                ])
            }),
            "plan.faults: [0].node 99 names no runtime node",
        ),
        (
            "after the safety phase",
            Box::new(|v| {
                v["plan"]["faults"] = serde_json::json!([
                    {"at_ms": 999999, "kind": "pause", "node": 0, "duration_ms": 100}
                ])
            }),
            "[0].at_ms 999999 is after the safety phase",
        ),
        (
            "unknown kind",
            Box::new(|v| {
                v["plan"]["faults"] = serde_json::json!([
                    {"at_ms": 1, "kind": "meteor", "node": 1, "duration_ms": 1}
                ])
            }),
            "plan.faults[0].kind: unknown variant `meteor`",
        ),
        (
            "unknown crash point",
            Box::new(|v| v["plan"]["knobs"]["crash_points"] = serde_json::json!(["after-lunch"])),
            "plan.knobs.crash_points[0]: unknown point \"after-lunch\"",
        ),
        (
            "percent above 100",
            Box::new(|v| v["plan"]["knobs"]["cancel_percent"] = serde_json::json!(101)),
            "plan.knobs: cancel_percent: 101 is above 100",
        ),
        (
            "unknown field",
            Box::new(
                |v| v["plan"]["faults"][0] = serde_json::json!({"at_ms": 1, "kind": "kill", "node": 0, "duration_ms": 1, "when": 3}),
            ),
            "unknown field `when`",
        ),
    ];
    for (name, change, expected) in cases {
        let mut value = good.clone();
        change(&mut value);
        let text = serde_json::to_string_pretty(&value).expect("serialises");
        let error = Scenario::parse(Path::new("scenarios/broken.json"), &text).expect_err(name);
        assert!(
            error.starts_with("scenarios/broken.json"),
            "{name}: {error}"
        );
        assert!(error.contains(expected), "{name}: {error}");
    }
    // The good one still parses (the cases above fail for their own reason).
    let text = serde_json::to_string(&good).expect("serialises");
    Scenario::parse(Path::new("good.json"), &text).expect("the unbroken plan parses");
    assert!(FaultKind::Kill.has_victim() && !FaultKind::StoreOutage.has_victim());
}
