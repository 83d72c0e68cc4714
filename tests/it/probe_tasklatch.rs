//! No false positives: the probe's checks (shapes, hostile cases and a 3-second workload
//! judged by the oracle, both eras; cancels aimed at the moment an export completes, its
//! file observed) find nothing
//! against tasklatch over stdio and over HTTP with two identities, on SQLite; a server that
//! cannot be reached is exit-2 material with the reason. (tests/it/probe_broken.rs shows each
//! check able to fail.)
//!
//! Plain builds only: the probe does not change with features, and the README's second
//! test command (`--all-features`) would only repeat these slow tests.
#![cfg(not(feature = "mutants"))]

use crate::support;

use std::collections::BTreeSet;
use std::time::Duration;
use tasklatch::probe::workload::Workload;
use tasklatch::probe::{self, Config, Report, Target, Verdict};

use support::{probe_checks as checks_with, tokio_runtime as runtime};

fn export_config(target: Target) -> Config {
    let mut config = Config::new(target);
    config.tool = Some("export".to_owned());
    config.args = Some(serde_json::json!({ "delay_ms": 1000 }));
    // 2026-07-28: a quarter of the tasks ask their requestor to confirm, answered by
    // tasks/update.
    config.input_tool = Some("export".to_owned());
    config.input_args = Some(serde_json::json!({ "delay_ms": 300, "confirm": true }));
    config.request_timeout = Duration::from_secs(5);
    config.task_timeout = Duration::from_secs(30);
    config.workload = Some(Workload {
        budget: Duration::from_secs(3),
        seed: 7,
        clients_per_identity: 2,
        kill: false,
        durable: false,
    });
    config
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
    // Its tokens are checked and `--args` makes tasks last: nothing to note.
    assert_eq!(report.notes, Vec::<String>::new());
}

#[test]
fn tasklatch_over_stdio_has_no_findings_in_either_era() {
    let scratch = support::Scratch::new("probe-stdio");
    let mut config = export_config(Target::Stdio {
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
    config.effect_path = Some(effect_path(&scratch));
    let report = runtime()
        .block_on(probe::run(&config))
        .expect("the probe reaches the server");
    assert_eq!(report.eras, ["2025-11-25", "2026-07-28"]);
    assert_no_findings(&report);
    // stdio cannot tell callers apart: tasks.list is not offered and there is no second
    // identity (nor a second connection or session stream: its connection is its process); 2026-07-28 grants
    // a TTL of an hour (clients cannot ask for less).
    assert_eq!(
        checks_with(&report, Verdict::NotApplicable),
        set(&[
            "2025-11-25 hostile.cancel-served-undeclared",
            "2025-11-25 hostile.era.extension-at-initialize",
            "2025-11-25 hostile.keyed-retry-after-reconnect",
            "2025-11-25 hostile.pushed.asks-only-who-can-answer",
            "2025-11-25 hostile.pushed.progress-to-its-session",
            "2025-11-25 hostile.pushed.says-what-was-stored",
            "2025-11-25 hostile.pushed.tenant-isolation",
            "2025-11-25 hostile.foreign-identity.cancel",
            "2025-11-25 hostile.foreign-identity.get",
            "2025-11-25 hostile.foreign-identity.list",
            "2025-11-25 hostile.foreign-identity.result",
            "2025-11-25 hostile.task-param-without-capability",
            "2025-11-25 shapes.list.bad-cursor",
            "2025-11-25 shapes.list.page-shape",
            "2025-11-25 shapes.list.reaches-own-task",
            "2026-07-28 hostile.expired-stays-gone",
            "2026-07-28 hostile.foreign-identity.cancel",
            "2026-07-28 hostile.foreign-identity.get",
            "2026-07-28 hostile.foreign-identity.update",
            "2026-07-28 hostile.pushed.listen-as-asked",
            "2026-07-28 hostile.pushed.says-what-was-stored",
            "2026-07-28 hostile.pushed.tenant-isolation",
        ])
    );
    assert_eq!(checks_with(&report, Verdict::Risk), retried_call_risks());
    assert!(
        support::probe_questions_answered(&report, "confirm") > 0,
        "no tasks/update answered a question"
    );
}

/// Where tasklatch's `export` publishes a task's file: the aimed cancels look there
/// (`hostile.cancelled-without-effect`).
fn effect_path(scratch: &support::Scratch) -> String {
    format!("{}/{{taskId}}.json", scratch.join("exports").display())
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|item| (*item).to_owned()).collect()
}

/// Neither era has an idempotency key, so a plain retried call is a second task: shown as a
/// risk (tasklatch's own key is checked, and passes).
fn retried_call_risks() -> BTreeSet<String> {
    set(&[
        "2025-11-25 hostile.retried-call",
        "2026-07-28 hostile.retried-call",
    ])
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
    let mut config = export_config(Target::Http {
        url: format!("http://{address}/mcp"),
        tokens: vec![
            ("alice".to_owned(), support::ALICE.to_owned()),
            ("bob".to_owned(), support::BOB.to_owned()),
        ],
        start: None,
    });
    config.effect_path = Some(effect_path(&scratch));
    let report = runtime()
        .block_on(probe::run(&config))
        .expect("the probe reaches the server");
    assert_eq!(report.eras, ["2025-11-25", "2026-07-28"]);
    assert_no_findings(&report);
    // Over HTTP tasklatch declares list and cancel, and tool tasks; 2026-07-28 grants an
    // hour; the probe does not see the process of a server it did not start.
    assert_eq!(
        checks_with(&report, Verdict::NotApplicable),
        set(&[
            "2025-11-25 hostile.cancel-served-undeclared",
            "2025-11-25 hostile.list-served-undeclared",
            "2025-11-25 hostile.task-param-without-capability",
            "2025-11-25 process.stayed-up",
            "2026-07-28 hostile.expired-stays-gone",
            "2026-07-28 process.stayed-up",
        ])
    );
    assert_eq!(checks_with(&report, Verdict::Risk), retried_call_risks());
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
        start: None,
    });
    let error = runtime()
        .block_on(probe::run(&config))
        .expect_err("nothing listens");
    assert!(error.0.contains("connecting to 127.0.0.1:1"), "{error}");
    // A server the probe starts and that ends at once: its stderr says why.
    let config = Config::new(Target::Http {
        url: "http://127.0.0.1:1/mcp".to_owned(),
        tokens: Vec::new(),
        start: Some("sh -c 'echo tokens.json: no such file >&2; exit 3'".to_owned()),
    });
    let error = runtime()
        .block_on(probe::run(&config))
        .expect_err("the server ends");
    assert!(error.0.contains("exited"), "{error}");
    assert!(error.0.contains("tokens.json: no such file"), "{error}");
}

fn kill_config(target: Target) -> Config {
    let mut config = export_config(target);
    config.args = Some(serde_json::json!({ "delay_ms": 300 }));
    config.workload = Some(Workload {
        budget: Duration::from_secs(6),
        seed: 13,
        clients_per_identity: 2,
        kill: true,
        durable: true,
    });
    config
}

/// `serve` on SQLite keeps every task across SIGKILLs: the probe kills and restarts it
/// during the workload (stdio: a new process; HTTP: `--start`), claims durability, and
/// finds nothing — in both eras.
#[test]
fn tasklatch_survives_kills_over_stdio_and_http() {
    let scratch = support::Scratch::new("probe-kill");
    let serve = |transport: &[&str], name: &str| -> Vec<String> {
        let mut args: Vec<String> = vec!["serve".into()];
        args.extend(transport.iter().map(|arg| (*arg).to_owned()));
        args.extend([
            "--store".to_owned(),
            format!("sqlite:{}", scratch.join(&format!("{name}.db")).display()),
            "--exports".to_owned(),
            scratch
                .join(&format!("{name}-exports"))
                .display()
                .to_string(),
            // A restarted server picks up unfinished tasks once their lease runs out.
            "--lease-ms".to_owned(),
            "1000".to_owned(),
        ]);
        args
    };
    let binary = env!("CARGO_BIN_EXE_tasklatch");
    let stdio = runtime()
        .block_on(probe::run(&kill_config(Target::Stdio {
            program: binary.to_owned(),
            args: serve(&["--stdio"], "stdio"),
        })))
        .expect("reached");
    assert_no_findings(&stdio);

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    std::fs::write(
        scratch.join("tokens.json"),
        r#"{"tokens": {"probe-token-alice": "tenant-a/alice", "probe-token-bob": "tenant-b/bob"}}"#,
    )
    .expect("tokens file");
    let mut command = vec![binary.to_owned()];
    command.extend(serve(
        &[
            "--http",
            &format!("127.0.0.1:{port}"),
            "--tokens",
            &scratch.join("tokens.json").display().to_string(),
        ],
        "http",
    ));
    let http = runtime()
        .block_on(probe::run(&kill_config(Target::Http {
            url: format!("http://127.0.0.1:{port}/mcp"),
            tokens: vec![
                ("alice".to_owned(), "probe-token-alice".to_owned()),
                ("bob".to_owned(), "probe-token-bob".to_owned()),
            ],
            start: Some(command.join(" ")),
        })))
        .expect("reached");
    assert_no_findings(&http);
    // The artifacts: the report, each era's history and its swimlane with the kills drawn.
    let out = scratch.join("out");
    tasklatch::probe::render::write_out(&http, &out, "tasklatch probe …").expect("written");
    for era in ["2025-11-25", "2026-07-28"] {
        let svg = std::fs::read_to_string(out.join(format!("swimlane-{era}.svg"))).expect("svg");
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("SIGKILL at"), "the kills are drawn");
        let history =
            std::fs::read_to_string(out.join(format!("history-{era}.jsonl"))).expect("history");
        assert!(
            history.lines().count() > 10,
            "{} operations",
            history.lines().count()
        );
    }
    assert!(out.join("probe.json").is_file());
    for report in [&stdio, &http] {
        let restarts: Vec<&str> = report
            .checks
            .iter()
            .filter(|check| check.check == "workload.restarts")
            .map(|check| check.detail.as_str())
            .collect();
        assert_eq!(
            restarts.len(),
            2,
            "one restarts check per era: {restarts:?}"
        );
    }
}
