//! `tasklatch bench http` against a live in-process `serve --http` (memory store, budgets
//! lifted): every workload reports each of its methods with counts and ordered
//! percentiles and no errors, closed and open loop; with the default budgets the poll
//! refusals are counted as errors and the first is shown; bad flags exit 2 naming the flag.

mod support;

use std::process::Command;
use std::sync::Arc;
use tasklatch::bench::http::{HttpBenchConfig, HttpBenchReport, Workload, render, run};
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
    let config = HttpBenchConfig {
        url: format!("http://{address}/mcp"),
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
    ] {
        let report = bench(&address, workload, None);
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
    // Open loop: about the asked rate, no faster.
    let report = bench(&address, Workload::PollHeavy, Some(100));
    let polls = &report.methods[0];
    assert!(
        (70..=101).contains(&polls.count),
        "100 steps/s for 1 s: {}",
        render(&report)
    );
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
            "--workload \"nope\": expected one of create-poll-result, poll-heavy, cancel-heavy",
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
