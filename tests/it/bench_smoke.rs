//! `tasklatch bench store` runs end to end at a tiny size (a benchmark is not a timed
//! test: this checks the command works and reports ratios, not how fast anything is).
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use std::process::Command;

#[test]
fn bench_store_reports_ratios_for_sqlite() {
    let output = Command::new(env!("CARGO_BIN_EXE_tasklatch"))
        .args([
            "bench",
            "store",
            "--tasks",
            "20",
            "--writers",
            "2",
            "--attempts",
            "20",
            "--trials",
            "1",
        ])
        .output()
        .expect("run tasklatch bench store");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with("| sqlite |"))
        .collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    assert!(
        rows[0].contains("create+complete") && rows[1].contains("contended transitions"),
        "{stdout}"
    );
    for row in rows {
        // Every percentage cell is a real, positive ratio (not NaN%, inf% or 0%).
        let ratios: Vec<f64> = row
            .split('|')
            .filter_map(|cell| cell.trim().strip_suffix('%'))
            .map(|number| number.parse::<f64>().unwrap_or(f64::NAN))
            .collect();
        assert!(
            ratios.len() >= 2 && ratios.iter().all(|ratio| ratio.is_finite() && *ratio > 0.0),
            "ratios reported: {row}"
        );
    }
}

#[test]
fn bench_store_refuses_a_non_sqlite_url() {
    let output = Command::new(env!("CARGO_BIN_EXE_tasklatch"))
        .args(["bench", "store", "--sqlite", "memory:"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("wants a sqlite: URL"));
}
