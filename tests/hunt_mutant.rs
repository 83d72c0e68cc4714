//! The hunt proves itself on a mutant: with `version-unchecked` on, a hunt finds a
//! failure, writes its artifacts, minimises its schedule, and the repro commands it prints
//! (run through the real binary) replay the same trace hashes.

use std::path::Path;
use std::process::Command;
use tasklatch::hunt::artifact::FailureRecord;
use tasklatch::hunt::{self, HuntConfig, Keep};
use tasklatch::mutants::{self, Mutant};
use tasklatch::sim::Scenario;

/// Runs the arguments after ` -- ` of a printed repro command through the built binary,
/// with the command's `TASKLATCH_MUTANT=` prefix as its environment.
fn run_printed(command: &str) -> (i32, String) {
    let (prefix, arguments) = command
        .split_once(" -- ")
        .expect("a cargo run … -- … command");
    let mutant = prefix
        .strip_prefix("TASKLATCH_MUTANT=")
        .and_then(|rest| rest.split_whitespace().next());
    let mut binary = Command::new(env!("CARGO_BIN_EXE_tasklatch"));
    binary
        .args(arguments.split_whitespace())
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    match mutant {
        Some(name) => binary.env("TASKLATCH_MUTANT", name),
        None => binary.env_remove("TASKLATCH_MUTANT"),
    };
    let output = binary.output().expect("the binary runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[test]
fn a_mutant_is_hunted_minimised_and_reproduced() {
    mutants::select(Some(Mutant::VersionUnchecked));
    let scenario = Scenario::by_name("duplicate-delivery").expect("scenario");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hunt-mutant");
    let _ = std::fs::remove_dir_all(&out);
    let config = HuntConfig {
        first_seed: 1_000,
        jobs: 2,
        ..HuntConfig::memory(vec![scenario.clone()], 400)
    };
    let keep = Keep {
        out: out.clone(),
        minimise: true,
        shrink_runs: 3_000,
        junit: Some(out.join("junit.xml")),
    };
    // The pipeline the CLI runs: hunt, minimise, write artifacts and JUnit.
    let finished = hunt::hunt_and_keep(&config, &keep, &mut |_| {}).expect("artifacts written");
    let report = &finished.report;
    assert_eq!(report.failures.len(), 1, "the mutant survived 400 seeds");
    assert!(finished.warnings.is_empty(), "{:?}", finished.warnings);
    let failure = &report.failures[0];
    let invariant = failure.violations[0].invariant;
    assert_eq!(invariant, "I3", "a blind version write shows as I3");
    let (folder, record) = &finished.written[0];
    let minimised = record.minimised.as_ref().expect("minimised");
    let (before, after) = (&minimised.before, &minimised.after);
    assert!(
        after.faults <= before.faults && after.tasks <= before.tasks,
        "{before} -> {after}"
    );
    assert!(
        after.events < before.events,
        "nothing shrank: {before} -> {after}"
    );
    let summary = finished.summary(&config, &keep);
    // Two jobs may each find a failing seed before the hunt stops (a loaded machine makes
    // it likelier); the summary counts every failing run, the record keeps the first.
    assert!(report.failing() >= 1, "{summary}");
    assert!(
        summary.contains(&format!("{} failing", report.failing())),
        "{summary}"
    );
    assert!(summary.contains(&record.repro), "{summary}");
    for file in [
        "failure.json",
        "timeline.txt",
        "swimlane.svg",
        "minimal.scenario.json",
        "minimal.timeline.txt",
        "minimal.swimlane.svg",
    ] {
        assert!(folder.join(file).is_file(), "{file} missing");
    }
    let reread = FailureRecord::load(&folder.join("failure.json")).expect("the record re-reads");
    assert_eq!(reread.trace_hash, failure.trace_hash);
    assert_eq!(reread.mutant.as_deref(), Some("version-unchecked"));
    let svg = std::fs::read_to_string(folder.join("minimal.swimlane.svg")).expect("svg");
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(
        svg.contains("I3 violated"),
        "the headline names the invariant"
    );
    assert!(svg.contains("r=\"8\""), "the conflicting writes are ringed");
    let junit = std::fs::read_to_string(out.join("junit.xml")).expect("junit written");
    assert!(junit.contains("<failure type=\"I3\""), "{junit}");
    assert!(
        std::fs::read_to_string(folder.join("minimal.timeline.txt"))
            .expect("minimal timeline")
            .contains("I3 violated"),
        "the minimal run breaks the same invariant"
    );

    // The commands the hunt printed replay the same traces, through the real binary.
    let (status, stdout) = run_printed(&record.repro);
    assert_eq!(status, 1, "a reproduced violation exits 1\n{stdout}");
    assert!(stdout.contains(&failure.trace_hash), "{}", record.repro);
    let (status, stdout) = run_printed(&minimised.repro);
    assert_eq!(status, 1, "{stdout}");
    assert!(
        stdout.contains(&minimised.trace_hash),
        "{}",
        minimised.repro
    );
    assert!(stdout.contains("VIOLATION I3"));

    // Without the mutant the same seed passes: the failure was the mutant's.
    mutants::select(None);
    let clean = tasklatch::sim::run_seed(&scenario, failure.seed);
    assert!(clean.violations.is_empty(), "{:?}", clean.violations);
}
