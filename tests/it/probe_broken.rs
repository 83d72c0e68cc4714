//! Every probe check can fail: against tests/probe/broken_server.py, a server with one
//! defect per check (its docstring lists them), each check of each era fails at least once
//! — none passes where its defect is planted.
//!
//! Plain builds only: the probe does not change with features, and the README's second
//! test command (`--all-features`) would only repeat these slow tests.
#![cfg(not(feature = "mutants"))]

use crate::support;

use std::collections::BTreeSet;
use std::time::Duration;
use tasklatch::contract::Era;
use tasklatch::probe::workload::Workload;
use tasklatch::probe::{self, Config, EraChoice, Report, Target, Verdict};

use support::{probe_checks as checks_with, tokio_runtime as runtime};

fn broken(era: Era, mode: &[&str]) -> Report {
    let mut args =
        vec![concat!(env!("CARGO_MANIFEST_DIR"), "/tests/probe/broken_server.py").to_owned()];
    args.extend(mode.iter().map(|arg| (*arg).to_owned()));
    let mut config = Config::new(Target::Stdio {
        program: "python3".to_owned(),
        args,
    });
    config.era = EraChoice::Only(era);
    // The broken server never answers malformed JSON: do not wait long for it.
    config.request_timeout = Duration::from_secs(2);
    config.task_timeout = Duration::from_secs(10);
    runtime()
        .block_on(probe::run(&config))
        .expect("the probe reaches the broken server")
}

/// Checks whose defect the broken server cannot carry without making others n/a (an
/// advertised method not served): `every_hostile_check_fails_on_its_defect` shows them
/// failing against the hostile server's `http-log` mode.
const SHOWN_ELSEWHERE: &[&str] = &["shapes.methods.advertised-served"];

/// Every check of the phase (`prefix`) ran (none n/a) and none passed: each met its defect.
fn assert_every_check_failed(report: &Report, prefix: &str, checks_min: usize) {
    let phase = |set: BTreeSet<String>| -> BTreeSet<String> {
        set.into_iter()
            .filter(|name| {
                name.split(' ').nth(1).is_some_and(|check| {
                    check.starts_with(prefix) && !SHOWN_ELSEWHERE.contains(&check)
                })
            })
            .collect()
    };
    let ran = report
        .checks
        .iter()
        .filter(|check| check.check.starts_with(prefix))
        .count();
    assert!(ran >= checks_min, "{ran} checks");
    assert_eq!(
        phase(checks_with(report, Verdict::Pass)),
        BTreeSet::new(),
        "checks that missed their defect"
    );
    assert_eq!(
        phase(checks_with(report, Verdict::NotApplicable)),
        BTreeSet::new()
    );
}

#[test]
fn every_2025_shape_check_fails_on_its_defect() {
    assert_every_check_failed(&broken(Era::Core2025, &[]), "shapes.", 21);
}

#[test]
fn every_2026_shape_check_fails_on_its_defect() {
    assert_every_check_failed(&broken(Era::Extension2026, &["2026"]), "shapes.", 16);
}

/// Every hostile check, in each era, fails (a retried call: is shown as a risk) against
/// tests/probe/hostile_server.py in one of its two modes: stdio (undeclared capabilities)
/// and HTTP with two identities (a broken state contract).
#[test]
fn every_hostile_check_fails_on_its_defect() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/probe/hostile_server.py");
    let mut config = Config::new(Target::Stdio {
        program: "python3".to_owned(),
        args: vec![script.to_owned(), "stdio".to_owned()],
    });
    config.era = EraChoice::Only(Era::Core2025);
    config.request_timeout = Duration::from_secs(3);
    config.task_timeout = Duration::from_secs(10);
    let stdio = runtime()
        .block_on(probe::run(&config))
        .expect("stdio mode reached");

    let (server, port) =
        support::spawn_listening(std::process::Command::new("python3").args([script, "http"]));
    config.target = two_identities(port);
    config.era = EraChoice::Auto;
    // `ask` puts its question on every GET stream (2025-11-25).
    config.input_tool = Some("ask".to_owned());
    config.workload = Some(Workload {
        budget: Duration::from_secs(3),
        seed: 5,
        clients_per_identity: 2,
        kill: false,
        durable: false,
    });
    let http = runtime()
        .block_on(probe::run(&config))
        .expect("http mode reached");
    drop(server);
    WORKLOAD_FAILED
        .lock()
        .unwrap()
        .extend(names_failed(&http, "workload."));

    // Effects the probe can see: a cancelled task's work still writes its file.
    let effects = support::Scratch::new("probe-effects");
    let (server, port) = support::spawn_listening(std::process::Command::new("python3").args([
        script,
        "http-effects",
        &effects.path.display().to_string(),
    ]));
    config.target = Target::Http {
        url: format!("http://127.0.0.1:{port}/mcp"),
        tokens: Vec::new(),
        start: None,
    };
    config.workload = None;
    config.era = EraChoice::Only(Era::Extension2026);
    config.effect_path = Some(format!("{}/{{taskId}}.json", effects.path.display()));
    let with_effects = runtime()
        .block_on(probe::run(&config))
        .expect("http-effects mode reached");
    drop(server);
    let effect_findings = |report: &Report| -> BTreeSet<String> {
        checks_with(report, Verdict::Fail)
            .into_iter()
            .filter(|name| name.ends_with("hostile.cancelled-without-effect"))
            .collect()
    };
    assert_eq!(
        effect_findings(&with_effects),
        BTreeSet::from(["2026-07-28 hostile.cancelled-without-effect".to_owned()])
    );
    let with_log = shared_log_and_early_refusals(script, config);
    assert_eq!(
        effect_findings(&with_log),
        BTreeSet::from([
            "2025-11-25 hostile.cancelled-without-effect".to_owned(),
            "2026-07-28 hostile.cancelled-without-effect".to_owned(),
        ])
    );

    let hostile = |set: BTreeSet<String>| -> BTreeSet<String> {
        set.into_iter()
            .filter(|name| name.contains(" hostile."))
            .collect()
    };
    let mut seen = BTreeSet::new();
    let mut caught = BTreeSet::new();
    for report in [&stdio, &http, &with_effects, &with_log] {
        for verdict in [
            Verdict::Pass,
            Verdict::Fail,
            Verdict::NotApplicable,
            Verdict::Risk,
        ] {
            seen.extend(hostile(checks_with(report, verdict)));
        }
        caught.extend(hostile(checks_with(report, Verdict::Fail)));
        caught.extend(hostile(checks_with(report, Verdict::Risk)));
    }
    let missed: BTreeSet<&String> = seen.difference(&caught).collect();
    assert!(
        missed.is_empty(),
        "hostile checks that never met their defect: {missed:?}"
    );
    assert!(seen.len() >= 25, "{} hostile checks: {seen:?}", seen.len());
}

/// Workload invariants failed by the hostile test's HTTP run, for the workload test.
static WORKLOAD_FAILED: std::sync::Mutex<BTreeSet<String>> = std::sync::Mutex::new(BTreeSet::new());

/// The checks under `prefix` that failed, by name (any era).
fn names_failed(report: &Report, prefix: &str) -> BTreeSet<String> {
    report
        .checks
        .iter()
        .filter(|check| check.verdict == Verdict::Fail && check.check.starts_with(prefix))
        .map(|check| check.check.clone())
        .collect()
}

/// Every workload invariant meets its defect: the state-contract defects of
/// hostile_server.py's `http` mode under a workload (isolation, latch, gone stays gone,
/// one result), and its `http-workload` mode's duplicate ids, tasks that never end, reads
/// that never answer and updates refused.
#[test]
fn every_workload_invariant_fails_on_its_defect() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/probe/hostile_server.py");
    let (server, port) = support::spawn_listening(
        std::process::Command::new("python3").args([script, "http-workload"]),
    );
    let mut config = Config::new(Target::Http {
        url: format!("http://127.0.0.1:{port}/mcp"),
        tokens: vec![
            ("a".to_owned(), "token-a".to_owned()),
            ("b".to_owned(), "token-b".to_owned()),
        ],
        start: None,
    });
    config.request_timeout = Duration::from_secs(2);
    config.task_timeout = Duration::from_secs(4);
    config.workload = Some(Workload {
        budget: Duration::from_secs(3),
        seed: 5,
        clients_per_identity: 2,
        kill: false,
        durable: false,
    });
    let report = runtime().block_on(probe::run(&config)).expect("reached");
    drop(server);
    // The `http` mode's workload runs in the hostile test (the tests of one file share a
    // process); run it here when this test runs alone.
    if WORKLOAD_FAILED.lock().unwrap().is_empty() {
        every_hostile_check_fails_on_its_defect();
    }
    let mut failed = names_failed(&report, "workload.");
    failed.extend(WORKLOAD_FAILED.lock().unwrap().iter().cloned());
    let all: BTreeSet<String> = report
        .checks
        .iter()
        .filter(|check| check.check.starts_with("workload."))
        .map(|check| check.check.clone())
        .collect();
    assert_eq!(all.len(), 9, "{all:?}");
    // kept-until-ttl meets its defect in tasks_lost_at_a_restart_break_the_durability_claim.
    failed.insert("workload.kept-until-ttl".to_owned());
    assert_eq!(
        failed, all,
        "workload invariants that never met their defect"
    );
}

/// A server that claims durability and loses its tasks at a restart: tasklatch itself on
/// the in-memory store, killed during the workload.
#[test]
fn tasks_lost_at_a_restart_break_the_durability_claim() {
    let scratch = support::Scratch::new("probe-forgets");
    let mut config = Config::new(Target::Stdio {
        program: env!("CARGO_BIN_EXE_tasklatch").to_owned(),
        args: vec![
            "serve".into(),
            "--stdio".into(),
            "--store".into(),
            "memory:".into(),
            "--exports".into(),
            scratch.join("exports").display().to_string(),
        ],
    });
    config.era = EraChoice::Only(Era::Core2025);
    config.tool = Some("export".to_owned());
    config.args = Some(serde_json::json!({ "delay_ms": 300 }));
    config.workload = Some(Workload {
        budget: Duration::from_secs(5),
        seed: 3,
        clients_per_identity: 2,
        kill: true,
        durable: true,
    });
    let report = runtime().block_on(probe::run(&config)).expect("reached");
    assert_eq!(
        names_failed(&report, "workload."),
        BTreeSet::from(["workload.kept-until-ttl".to_owned()])
    );
    // Without the claim, the same losses are excused.
    config.workload.as_mut().expect("set").durable = false;
    let report = runtime().block_on(probe::run(&config)).expect("reached");
    assert_eq!(names_failed(&report, "workload."), BTreeSet::new());
}

/// The hostile server's `http-log` mode: each task's effect is a line of one shared log
/// naming only the call's `label` (found by the tag the probe writes there); `tasks/result`
/// (2025-11-25) and `tasks/update` (2026-07-28) are advertised but answered -32601; tasks
/// end at once unless `delay_ms` says otherwise; and any token is accepted.
fn shared_log_and_early_refusals(script: &str, mut config: Config) -> Report {
    let effects = support::Scratch::new("probe-effect-log");
    let log = effects.path.join("effects.log").display().to_string();
    let (server, port) = support::spawn_listening(
        std::process::Command::new("python3").args([script, "http-log", &log]),
    );
    config.target = two_identities(port);
    config.era = EraChoice::Auto;
    config.effect_path = None;
    config.args = Some(serde_json::json!({ "label": "{tag}" }));
    config.effect_log = Some(probe::effects::EffectLog {
        path: log,
        pattern: "label={tag}".to_owned(),
    });
    let report = runtime()
        .block_on(probe::run(&config))
        .expect("http-log mode reached");
    drop(server);
    let failed = checks_with(&report, Verdict::Fail);
    for era in ["2025-11-25", "2026-07-28"] {
        assert!(failed.contains(&format!("{era} shapes.methods.advertised-served")));
    }
    // The premise read, not assumed: the unserved tasks/result proves nothing about the
    // task's end, so the cancel of a terminal task waits for it (no false finding).
    let passed = checks_with(&report, Verdict::Pass);
    assert!(passed.contains("2025-11-25 shapes.cancel.terminal-refused"));
    let not_run = checks_with(&report, Verdict::NotApplicable);
    for check in [
        "2025-11-25 shapes.result.waits-for-terminal",
        "2025-11-25 shapes.result.unknown-id",
        "2025-11-25 hostile.foreign-identity.result",
        "2026-07-28 shapes.update.unknown-id",
        "2026-07-28 hostile.foreign-identity.update",
    ] {
        assert!(not_run.contains(check), "{check} should be n/a");
    }
    let notes = report.notes.join("\n");
    assert!(notes.contains("checks no token"), "{notes}");
    assert_eq!(notes.matches("set `delay_ms` to 600").count(), 2, "{notes}");
    report
}

/// The hostile server on `port`, as identities `a` and `b`.
fn two_identities(port: u16) -> Target {
    Target::Http {
        url: format!("http://127.0.0.1:{port}/mcp"),
        tokens: vec![
            ("a".to_owned(), "token-a".to_owned()),
            ("b".to_owned(), "token-b".to_owned()),
        ],
        start: None,
    }
}
