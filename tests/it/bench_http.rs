//! `tasklatch bench http` against a live in-process `serve --http` (memory store, budgets
//! lifted): every workload reports each of its methods with counts and ordered
//! percentiles and no errors, closed and open loop; with the default budgets the poll
//! refusals are counted as errors and the first is shown; bad flags exit 2 naming the flag.
//! Both eras; and `--targets`, several servers compared, rounds alternating, with ratios to
//! the reference and a targets file's errors naming its field.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use crate::support;

use std::process::Command;
use std::sync::Arc;
use tasklatch::bench::compare::{self, CompareConfig, Targets};
use tasklatch::bench::http::{HttpBenchConfig, HttpBenchReport, Workload, render, run};
use tasklatch::contract::Era;
use tasklatch::mcp::ServerConfig;
use tasklatch::mcp::http::{HttpConfig, Tokens};
use tasklatch::mcp::limits::LimitsConfig;
use tasklatch::runtime::RuntimeConfig;
use tasklatch::store::{MemoryStore, StoreOptions};

const TOKENS: [&str; 2] = ["bench-token-0001", "bench-token-0002"];

fn start(label: &str, limits: LimitsConfig) -> (String, support::Scratch) {
    let scratch = support::Scratch::new(label);
    let mut tokens = Tokens::default();
    tokens.insert(TOKENS[0], "tenant-bench/a");
    tokens.insert(TOKENS[1], "tenant-bench/b");
    let address = support::serve_http(
        Arc::new(MemoryStore::open(&StoreOptions::default()).expect("store")),
        scratch.join("exports"),
        ServerConfig {
            limits,
            ..ServerConfig::default()
        },
        RuntimeConfig {
            idle_ms: 5,
            ..RuntimeConfig::default()
        },
        HttpConfig {
            tokens,
            allowed_origins: Vec::new(),
            body_bytes_max: 64 * 1024,
            sessions_max: 1_000,
            anonymous: None,
        },
    );
    (address, scratch)
}

fn bench(address: &str, workload: Workload, rate_per_s: Option<u64>) -> HttpBenchReport {
    bench_in(Era::Core2025, address, workload, rate_per_s)
}

fn bench_in(
    era: Era,
    address: &str,
    workload: Workload,
    rate_per_s: Option<u64>,
) -> HttpBenchReport {
    let config = HttpBenchConfig {
        url: format!("http://{address}/mcp"),
        era,
        tokens: TOKENS.iter().map(|token| (*token).to_owned()).collect(),
        workload,
        connections: 4,
        duration_ms: 1_000,
        warmup_ms: 300,
        rate_per_s,
        ..HttpBenchConfig::default()
    };
    support::tokio_runtime()
        .block_on(run(config))
        .unwrap_or_else(|error| panic!("{}: {error}", workload.as_str()))
}

fn methods(report: &HttpBenchReport) -> Vec<&str> {
    report
        .methods
        .iter()
        .map(|method| method.method.as_str())
        .collect()
}

#[test]
fn every_workload_reports_its_methods_without_errors() {
    let (address, _scratch) = start("bench-http", LimitsConfig::unlimited());
    // Open loop: about the asked rate, no faster. (First: `create` leaves a backlog of
    // tasks behind that slows what follows.)
    let report = bench(&address, Workload::PollHeavy, Some(100));
    let polls = &report.methods[0];
    assert!(
        (70..=101).contains(&polls.count),
        "100 steps/s for 1 s: {}",
        render(&report)
    );
    for (workload, expected) in [
        (
            Workload::CreatePollResult,
            vec!["tasks/get", "tasks/result", "tools/call"],
        ),
        (Workload::PollHeavy, vec!["tasks/get"]),
        (
            Workload::CancelHeavy,
            vec!["tasks/cancel", "tasks/get", "tools/call"],
        ),
        (Workload::Create, vec!["tools/call"]),
    ] {
        let report = bench(&address, workload, None);
        if workload != Workload::CancelHeavy {
            assert_eq!(methods(&report), expected, "{}", render(&report));
        }
        println!("{}", render(&report));
        assert_eq!(report.first_error, None, "{}", render(&report));
        // cancel-heavy polls 0-2 times a step: tasks/get may be absent only by chance.
        for method in &expected {
            if workload == Workload::CancelHeavy && *method == "tasks/get" {
                continue;
            }
            assert!(methods(&report).contains(method), "{}", render(&report));
        }
        for figures in &report.methods {
            assert!(figures.count > 0 && figures.errors == 0, "{figures:?}");
            assert!(figures.p50_us <= figures.p99_us && figures.p99_us <= figures.p999_us);
        }
        assert!(report.requests_per_s > 0.0);
    }
}

#[test]
fn the_2026_era_creates_by_declaring_the_extension_and_reads_results_inline() {
    let (address, _scratch) = start("bench-http-2026", LimitsConfig::unlimited());
    let report = bench_in(
        Era::Extension2026,
        &address,
        Workload::CreatePollResult,
        None,
    );
    println!("{}", render(&report));
    assert_eq!(report.first_error, None, "{}", render(&report));
    // No session, no tasks/result: the terminal tasks/get carries the result.
    assert_eq!(
        methods(&report),
        ["tasks/get", "tools/call"],
        "{}",
        render(&report)
    );
    assert!(render(&report).contains("(2026-07-28)"));
    let report = bench_in(Era::Extension2026, &address, Workload::CancelHeavy, None);
    assert_eq!(report.first_error, None, "{}", render(&report));
    assert!(methods(&report).contains(&"tasks/cancel"));
}

#[test]
fn targets_are_compared_in_alternating_rounds_with_ratios_to_the_reference() {
    let (address, _scratch) = start("bench-http-compare", LimitsConfig::unlimited());
    let url = format!("http://{address}/mcp");
    let me = std::process::id();
    let targets: Targets = serde_json::from_value(serde_json::json!({
        "reference": "old",
        "targets": [
            { "name": "old", "url": url, "tokens": [TOKENS[0]], "pids": [me] },
            { "name": "new", "url": url, "era": "2026-07-28", "tokens": [TOKENS[1]] },
        ],
    }))
    .expect("targets");
    let config = CompareConfig {
        workloads: vec![Workload::PollHeavy, Workload::Create],
        rounds: 2,
        // The reference's pid is this busy test process: it never settles.
        settle_ms_max: 0,
        base: HttpBenchConfig {
            connections: 2,
            duration_ms: 400,
            warmup_ms: 100,
            ..HttpBenchConfig::default()
        },
    };
    let mut heard = Vec::new();
    let comparison = support::tokio_runtime()
        .block_on(compare::compare(&targets, &config, |name, _| {
            heard.push(name.to_owned())
        }))
        .expect("compared");
    // Round 0 starts with the first target, round 1 with the second.
    assert_eq!(
        heard,
        ["old", "new", "new", "old", "old", "new", "new", "old"]
    );
    let table = compare::render(&comparison);
    println!("{table}");
    assert!(
        table.contains("### poll-heavy") && table.contains("### create"),
        "{table}"
    );
    let old_row = table
        .lines()
        .find(|l| l.starts_with("| old |"))
        .expect("old");
    assert!(
        old_row.contains("(×1.00)"),
        "the reference is 1.00 of itself: {old_row}"
    );
    let new_row = table
        .lines()
        .find(|l| l.starts_with("| new | 2026-07-28 |"))
        .expect("new");
    // The reference's CPU is this process's (pids: [me]); the other target names none.
    let medians = compare::medians(&comparison.workloads[0].by_target[0].2);
    assert!(medians.server_cpu_us_per_request.is_some_and(|us| us > 0.0));
    assert!(medians.gets_per_s.is_some_and(|per_s| per_s > 0.0));
    assert!(new_row.contains("| – |"), "no pids, no CPU: {new_row}");
    assert_eq!(medians.errors, 0);
}

#[test]
fn a_bad_targets_file_is_refused_naming_the_field() {
    let scratch = support::Scratch::new("bench-http-targets");
    for (text, expected) in [
        ("{", "EOF while parsing"),
        (
            r#"{"reference": "a", "targets": []}"#,
            "targets: expected 1 to 16",
        ),
        (
            r#"{"reference": "a", "targets": [{"name": "a", "url": "http://x/mcp", "era": "2024"}]}"#,
            "targets[0].era",
        ),
        (
            r#"{"reference": "b", "targets": [{"name": "a", "url": "http://x/mcp"}]}"#,
            "reference: \"b\" is not one of the targets",
        ),
        (
            r#"{"reference": "a", "targets": [{"name": "a", "url": "http://x/mcp"}, {"name": "a", "url": "http://y/mcp"}]}"#,
            "targets[1].name: \"a\" twice",
        ),
        (
            r#"{"reference": "a", "targets": [{"name": "a", "url": "http://x/mcp", "args": 3}]}"#,
            "targets[0].args: expected a JSON object",
        ),
        (
            r#"{"reference": "a", "targets": [{"name": "a", "url": "http://x/mcp", "colour": 3}]}"#,
            "unknown field `colour`",
        ),
    ] {
        let path = scratch.join("targets.json");
        std::fs::write(&path, text).expect("written");
        let error = Targets::load(&path).expect_err(text);
        assert!(error.contains("targets.json"), "{error}");
        assert!(error.contains(expected), "{text}: {error}");
    }
    let output = Command::new(env!("CARGO_BIN_EXE_tasklatch"))
        .args(["bench", "http", "--targets"])
        .arg(scratch.join("targets.json"))
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--targets"));
}

#[test]
fn refusals_are_counted_as_errors_and_the_first_is_shown() {
    let limits = LimitsConfig {
        polls_per_key_per_s: 10,
        polls_per_key_burst: 10,
        ..LimitsConfig::default()
    };
    let (address, _scratch) = start("bench-http-limited", limits);
    let report = bench(&address, Workload::PollHeavy, None);
    let polls = &report.methods[0];
    assert!(polls.errors > 0, "{}", render(&report));
    let first = report.first_error.as_deref().unwrap_or_default();
    assert!(first.contains("429") && first.contains("-32029"), "{first}");
}

#[test]
fn bad_flags_exit_2_naming_the_flag() {
    for (args, expected) in [
        (
            vec!["--http", "ftp://127.0.0.1:1/mcp"],
            "must start with http://",
        ),
        (
            vec!["--http", "http://127.0.0.1:1/mcp", "--workload", "nope"],
            "--workload \"nope\": expected one of create-poll-result, poll-heavy, cancel-heavy, create",
        ),
        (
            vec!["--http", "http://127.0.0.1:1/mcp", "--args", "[1]"],
            "--args: expected a JSON object",
        ),
        (
            vec!["--http", "http://127.0.0.1:1/mcp", "--connections", "0"],
            "--connections 0: expected 1 to 1024",
        ),
        (
            vec!["--http", "http://127.0.0.1:1/mcp", "--seconds", "1"],
            "connecting to 127.0.0.1:1",
        ),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_tasklatch"))
            .args(["bench", "http"])
            .args(&args)
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}
