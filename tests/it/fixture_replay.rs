//! The committed contract fixture replayed through the pure contract, and through the CLI.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use std::path::Path;
use std::process::Command;
use tasklatch::contract::Surface;
use tasklatch::fixture::{ContractEvaluator, load_fixture, replay};

const FIXTURE: &str = "fixtures/contract/tasks-2025-11-25.json";
/// Changing the fixture is a conscious act: update this pin in the same commit.
const FIXTURE_SHA256: &str = "42d140e036d3daf255eca8342e3c90d3319e0683d73fc6ce0d768946112e6c5d";

#[test]
fn the_committed_fixture_is_pinned() {
    let loaded = load_fixture(Path::new(FIXTURE)).expect("fixture loads");
    assert_eq!(
        loaded.sha256, FIXTURE_SHA256,
        "fixture changed: update the pin consciously"
    );
}

#[test]
fn all_32_cases_match_and_all_12_hostile_cases_are_blocked() {
    let loaded = load_fixture(Path::new(FIXTURE)).expect("fixture loads");
    let report = replay(&loaded, &mut ContractEvaluator);
    let mismatches: Vec<_> = report.cases.iter().filter(|row| !row.matched).collect();
    assert!(mismatches.is_empty(), "mismatches: {mismatches:#?}");
    assert_eq!(
        report.summary.to_string(),
        "32 cases: 32 matched, 0 mismatched; 12 hostile, 12 blocked"
    );
    let per_surface: Vec<usize> = Surface::ALL
        .iter()
        .map(|surface| {
            loaded
                .file
                .cases
                .iter()
                .filter(|case| case.surface == *surface)
                .count()
        })
        .collect();
    assert_eq!(
        per_surface,
        [10, 12, 8, 2],
        "create, transition, read, list"
    );
}

#[test]
fn a_wrong_expectation_is_reported_as_a_mismatch() {
    let mut loaded = load_fixture(Path::new(FIXTURE)).expect("fixture loads");
    let stale = loaded
        .file
        .cases
        .iter_mut()
        .find(|case| case.id == "T08")
        .unwrap();
    stale.expect.decision = tasklatch::contract::Decision::ApplyTransition;
    let list = loaded
        .file
        .cases
        .iter_mut()
        .find(|case| case.id == "L01")
        .unwrap();
    list.expect.visible_task_ids = Some(vec!["t1".into(), "t2".into(), "t3".into()]);
    let report = replay(&loaded, &mut ContractEvaluator);
    let failed: Vec<&str> = report
        .cases
        .iter()
        .filter(|row| !row.matched)
        .map(|row| row.id.as_str())
        .collect();
    assert_eq!(failed, ["T08", "L01"]);
    assert!(report.cases.iter().any(|row| {
        row.detail
            .as_deref()
            .is_some_and(|d| d.contains("visible_task_ids"))
    }));
    assert_eq!(report.summary.mismatched, 2);
}

fn tasklatch(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tasklatch"))
        .args(args)
        .output()
        .expect("run tasklatch")
}

#[test]
fn cli_replay_prints_the_sha_rows_and_summary_and_exits_zero() {
    let output = tasklatch(&["replay", FIXTURE]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains(FIXTURE_SHA256));
    assert!(stdout.contains("32 cases: 32 matched, 0 mismatched; 12 hostile, 12 blocked"));
    assert_eq!(
        stdout.lines().filter(|line| line.ends_with(" ok")).count(),
        32
    );
    assert!(stdout.contains("T08    transition yes     BLOCK_STALE_VERSION"));
}

#[test]
fn cli_replay_json_is_machine_readable() {
    let output = tasklatch(&["replay", "--json", FIXTURE]);
    assert!(output.status.success());
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON report");
    assert_eq!(report["summary"]["matched"], 32);
    assert_eq!(report["summary"]["blocked"], 12);
    assert_eq!(report["files"][0]["sha256"], FIXTURE_SHA256);
    assert_eq!(report["files"][0]["cases"].as_array().unwrap().len(), 32);
    assert_eq!(
        report["files"][0]["cases"][7]["actual"],
        "BLOCK_TASK_REQUIRED"
    );
    assert_eq!(report["errors"].as_array().unwrap().len(), 0);
}

#[test]
fn cli_replay_exits_one_on_a_mismatch() {
    let text = std::fs::read_to_string(FIXTURE).unwrap();
    let wrong = text.replacen(
        "\"expect\": {\"decision\": \"BLOCK_STALE_VERSION\"}",
        "\"expect\": {\"decision\": \"APPLY_TRANSITION\"}",
        1,
    );
    assert_ne!(wrong, text);
    let dir = std::env::temp_dir().join(format!("tasklatch-mismatch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("wrong.json");
    std::fs::write(&path, wrong).unwrap();
    let output = tasklatch(&["replay", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("32 cases: 31 matched, 1 mismatched; 12 hostile, 12 blocked"),
        "{stdout}"
    );
    assert!(stdout.contains("MISMATCH"));
    let _ = std::fs::remove_dir_all(dir);
}
