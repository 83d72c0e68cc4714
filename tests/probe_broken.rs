//! Every probe check can fail: against tests/probe/broken_server.py, a server with one
//! defect per check (its docstring lists them), each check of each era fails at least once
//! — none passes where its defect is planted.

mod support;

use std::collections::BTreeSet;
use std::time::Duration;
use tasklatch::contract::Era;
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

/// Every check of the phase (`prefix`) ran (none n/a) and none passed: each met its defect.
fn assert_every_check_failed(report: &Report, prefix: &str, checks_min: usize) {
    let phase = |set: BTreeSet<String>| -> BTreeSet<String> {
        set.into_iter()
            .filter(|name| {
                name.split(' ')
                    .nth(1)
                    .is_some_and(|check| check.starts_with(prefix))
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
    config.target = Target::Http {
        url: format!("http://127.0.0.1:{port}/mcp"),
        tokens: vec![
            ("a".to_owned(), "token-a".to_owned()),
            ("b".to_owned(), "token-b".to_owned()),
        ],
    };
    config.era = EraChoice::Auto;
    let http = runtime()
        .block_on(probe::run(&config))
        .expect("http mode reached");
    drop(server);

    let hostile = |set: BTreeSet<String>| -> BTreeSet<String> {
        set.into_iter()
            .filter(|name| name.contains(" hostile."))
            .collect()
    };
    let mut seen = BTreeSet::new();
    let mut caught = BTreeSet::new();
    for report in [&stdio, &http] {
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
