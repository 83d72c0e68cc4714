//! The probe's shape checks (phase 1): against tasklatch over stdio and over HTTP they find
//! nothing; against a deliberately broken server (tests/probe/broken_server.py, one defect
//! per check) every check of each era fails — so each one is shown able to fail.

mod support;

use std::collections::BTreeSet;
use std::time::Duration;
use tasklatch::contract::Era;
use tasklatch::probe::{self, Config, EraChoice, Report, Target, Verdict};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio")
}

fn export_config(target: Target) -> Config {
    let mut config = Config::new(target);
    config.tool = Some("export".to_owned());
    config.args = Some(serde_json::json!({ "delay_ms": 1000 }));
    config.request_timeout = Duration::from_secs(5);
    config.task_timeout = Duration::from_secs(30);
    config
}

fn checks_with(report: &Report, verdict: Verdict) -> BTreeSet<String> {
    report
        .checks
        .iter()
        .filter(|check| check.verdict == verdict)
        .map(|check| format!("{} {}", check.era, check.check))
        .collect()
}

fn assert_no_findings(report: &Report) {
    let findings: Vec<String> = report
        .findings()
        .map(|check| {
            let evidence: Vec<String> = check.evidence.iter().map(|e| e.summary()).collect();
            format!(
                "{} {}: {}\n  {}",
                check.era,
                check.check,
                check.detail,
                evidence.join("\n  ")
            )
        })
        .collect();
    assert!(
        findings.is_empty(),
        "findings against tasklatch (a probe bug or a server bug):\n{}",
        findings.join("\n")
    );
}

#[test]
fn tasklatch_over_stdio_has_no_findings_in_either_era() {
    let scratch = support::Scratch::new("probe-stdio");
    let config = export_config(Target::Stdio {
        program: env!("CARGO_BIN_EXE_tasklatch").to_owned(),
        args: vec![
            "serve".into(),
            "--stdio".into(),
            "--store".into(),
            format!("sqlite:{}", scratch.join("tasks.db").display()),
            "--exports".into(),
            scratch.join("exports").display().to_string(),
        ],
    });
    let report = runtime()
        .block_on(probe::run(&config))
        .expect("the probe reaches the server");
    assert_eq!(report.eras, ["2025-11-25", "2026-07-28"]);
    assert_no_findings(&report);
    // stdio cannot tell callers apart, so tasks.list is not offered: its checks say n/a.
    assert_eq!(
        checks_with(&report, Verdict::NotApplicable),
        BTreeSet::from([
            "2025-11-25 shapes.list.bad-cursor".to_owned(),
            "2025-11-25 shapes.list.page-shape".to_owned(),
            "2025-11-25 shapes.list.reaches-own-task".to_owned(),
        ])
    );
}

#[test]
fn tasklatch_over_http_has_no_findings_in_either_era() {
    let scratch = support::Scratch::new("probe-http");
    let store = tasklatch::SqliteStore::open(
        &tasklatch::store::SqliteOptions::new(scratch.join("tasks.db")),
        &tasklatch::store::StoreOptions::default(),
    )
    .expect("sqlite store");
    let address = support::serve_fixture_tools(std::sync::Arc::new(store), scratch.join("exports"));
    let config = export_config(Target::Http {
        url: format!("http://{address}/mcp"),
        tokens: vec![
            ("alice".to_owned(), support::ALICE.to_owned()),
            ("bob".to_owned(), support::BOB.to_owned()),
        ],
    });
    let report = runtime()
        .block_on(probe::run(&config))
        .expect("the probe reaches the server");
    assert_eq!(report.eras, ["2025-11-25", "2026-07-28"]);
    assert_no_findings(&report);
    assert_eq!(
        checks_with(&report, Verdict::NotApplicable),
        BTreeSet::new()
    );
}

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

/// Every check ran (none n/a) and none passed: each met its defect.
fn assert_every_check_failed(report: &Report, checks_min: usize) {
    assert!(
        report.checks.len() >= checks_min,
        "{} checks",
        report.checks.len()
    );
    assert_eq!(
        checks_with(report, Verdict::Pass),
        BTreeSet::new(),
        "checks that missed their defect"
    );
    assert_eq!(checks_with(report, Verdict::NotApplicable), BTreeSet::new());
}

#[test]
fn every_2025_shape_check_fails_on_its_defect() {
    assert_every_check_failed(&broken(Era::Core2025, &[]), 21);
}

#[test]
fn every_2026_shape_check_fails_on_its_defect() {
    assert_every_check_failed(&broken(Era::Extension2026, &["2026"]), 16);
}

#[test]
fn a_server_that_cannot_start_is_unreachable_with_the_reason() {
    let config = Config::new(Target::Stdio {
        program: "/nonexistent/tasklatch-probe-target".to_owned(),
        args: Vec::new(),
    });
    let error = runtime()
        .block_on(probe::run(&config))
        .expect_err("nothing to probe");
    assert!(error.0.contains("cannot start"), "{error}");
    let config = Config::new(Target::Http {
        url: "http://127.0.0.1:1/mcp".to_owned(),
        tokens: Vec::new(),
    });
    let error = runtime()
        .block_on(probe::run(&config))
        .expect_err("nothing listens");
    assert!(error.0.contains("connecting to 127.0.0.1:1"), "{error}");
}
