//! Every class of malformed fixture is reported with the file, the position or case id,
//! and the field, and the CLI exits 2 without panicking.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use std::path::{Path, PathBuf};
use std::process::Command;
use tasklatch::fixture::{FixtureError, parse_fixture};

const FIXTURE: &str = "fixtures/contract/tasks-2025-11-25.json";

fn committed() -> String {
    std::fs::read_to_string(FIXTURE).unwrap()
}

/// The committed fixture with the first `from` replaced by `to` (which must exist).
fn edited(from: &str, to: &str) -> String {
    let text = committed();
    assert!(text.contains(from), "test setup: {from:?} not in fixture");
    text.replacen(from, to, 1)
}

fn error_of(text: &str) -> Box<FixtureError> {
    parse_fixture(Path::new("bad.json"), text.as_bytes()).expect_err("must be refused")
}

#[test]
fn bad_json_names_line_and_column() {
    let text = edited(
        "\"hostile\": false,\n      \"title\": \"optional tool called with a task",
        "\"hostile\": false,,\n      \"title\": \"x",
    );
    let error = error_of(&text);
    assert_eq!((error.line, error.column), (Some(8), Some(24)), "{error}");
    assert!(error.to_string().starts_with("bad.json:8:24: "), "{error}");
    let truncated = error_of(&committed()[..500]);
    assert!(
        truncated.line.is_some() && truncated.message.contains("EOF"),
        "{truncated}"
    );
}

#[test]
fn unknown_op_kind_names_the_case_and_field() {
    let error = error_of(&edited(
        "\"kind\": \"tasks/get\"",
        "\"kind\": \"tasks/peek\"",
    ));
    assert_eq!(error.case_id.as_deref(), Some("R01"), "{error}");
    assert!(
        error.field.as_deref().unwrap().starts_with("cases[22].op"),
        "{error}"
    );
    assert!(error.message.contains("tasks/peek"), "{error}");
    assert!(error.line.is_some());
}

#[test]
fn unknown_status_names_the_case_and_field() {
    let error = error_of(&edited(
        "\"next\": \"input_required\"",
        "\"next\": \"paused\"",
    ));
    assert_eq!(error.case_id.as_deref(), Some("T01"), "{error}");
    assert!(error.field.as_deref().unwrap().contains("op"), "{error}");
    assert!(error.message.contains("paused"), "{error}");
    let stored = error_of(&edited("\"status\": \"completed\"", "\"status\": \"done\""));
    assert_eq!(stored.case_id.as_deref(), Some("T07"), "{stored}");
    assert_eq!(
        stored.field.as_deref(),
        Some("cases[16].stored[0].status"),
        "{stored}"
    );
}

#[test]
fn unknown_decision_names_the_case_and_field() {
    let error = error_of(&edited(
        "\"decision\": \"WAIT_INPUT\"",
        "\"decision\": \"WAIT_FOREVER\"",
    ));
    assert_eq!(error.case_id.as_deref(), Some("R03"), "{error}");
    assert_eq!(
        error.field.as_deref(),
        Some("cases[24].expect.decision"),
        "{error}"
    );
    assert!(error.message.contains("WAIT_FOREVER"), "{error}");
}

#[test]
fn missing_field_names_the_case_and_field() {
    let error = error_of(&edited("\"now_ms\": 5000,", ""));
    assert_eq!(error.case_id.as_deref(), Some("C01"), "{error}");
    assert!(error.message.contains("missing field `now_ms`"), "{error}");
    let expiry = error_of(&edited("\"expires_at_ms\": 60000, ", ""));
    assert!(
        expiry.message.contains("missing field `expires_at_ms`"),
        "{expiry}"
    );
    assert_eq!(expiry.case_id.as_deref(), Some("C05"), "{expiry}");
}

#[test]
fn unknown_field_is_refused() {
    let error = error_of(&edited(
        "\"expect\": {\"decision\": \"ACCEPT_TASK\"}",
        "\"expcet\": {\"decision\": \"ACCEPT_TASK\"}",
    ));
    assert_eq!(error.case_id.as_deref(), Some("C01"), "{error}");
    assert!(error.message.contains("expcet"), "{error}");
}

#[test]
fn duplicate_case_id_names_the_id_and_its_first_use() {
    let error = error_of(&edited("\"id\": \"C02\"", "\"id\": \"C01\""));
    assert_eq!(error.case_id.as_deref(), Some("C01"), "{error}");
    assert_eq!(error.field.as_deref(), Some("cases[1].id"), "{error}");
    assert!(
        error.message.contains("duplicate") && error.message.contains("cases[0]"),
        "{error}"
    );
    assert_eq!(
        error.line,
        Some(19),
        "the second C01, not the first: {error}"
    );
}

#[test]
fn semantic_errors_name_the_case_and_field() {
    for (from, to, id, field, words) in [
        (
            "\"surface\": \"list\"",
            "\"surface\": \"read\"",
            "L01",
            "op.kind",
            "belongs to surface",
        ),
        (
            "\"decision\": \"RETURN_STATUS\"",
            "\"decision\": \"APPLY_TRANSITION\"",
            "R01",
            "expect.decision",
            "not a decision of the read surface",
        ),
        (
            "\"version\": 4,",
            "\"version\": 0,",
            "T05",
            "stored[0].version",
            "start at 1",
        ),
        (
            "\"schema\": \"tasklatch.contract-fixture/v1\"",
            "\"schema\": \"v2\"",
            "",
            "schema",
            "unsupported schema",
        ),
    ] {
        let error = error_of(&edited(from, to));
        if !id.is_empty() {
            assert_eq!(error.case_id.as_deref(), Some(id), "{error}");
        }
        assert!(error.field.as_deref().unwrap().ends_with(field), "{error}");
        assert!(error.message.contains(words), "{error}");
        assert!(error.line.is_some(), "{error}");
    }
}

fn write_temp(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tasklatch-malformed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn cli_exits_two_with_a_one_line_error_and_no_panic() {
    let bad = write_temp("dup.json", &edited("\"id\": \"C02\"", "\"id\": \"C01\""));
    let output = Command::new(env!("CARGO_BIN_EXE_tasklatch"))
        .args(["replay", bad.to_str().unwrap(), FIXTURE])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("dup.json:19:"), "{stderr}");
    assert!(
        stderr.contains("case C01: cases[1].id: duplicate case id"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    // The good file is still replayed and reported.
    assert!(String::from_utf8_lossy(&output.stdout).contains("32 matched"));
    let missing = Command::new(env!("CARGO_BIN_EXE_tasklatch"))
        .args(["replay", "no/such/file.json"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no/such/file.json: cannot read"));
}
