//! The layering rules the compiler cannot keep.
//!
//! The crates are the layers (ARCHITECTURE.md): a crate can only name what its manifest
//! depends on, so "the server never imports the harness" is the compiler's job now. What is
//! left is what a manifest does not say on its face:
//! - a crate's whole normal dependency closure (every feature on): the contract links no
//!   async runtime, database, OS randomness or HTTP; the server none of the harness's
//!   engines, the command line's crates or the simulation; the oracle and the probe never
//!   the server they judge;
//! - the pure crates' sources read no clock, and the contract does no IO and draws no
//!   randomness (a `std::` path needs no manifest entry).
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use std::path::{Path, PathBuf};
use std::process::Command;

/// What each crate's normal dependency closure (all its features on) must not contain.
const FORBIDDEN: &[(&str, &[&str])] = &[
    (
        "tasklatch-mutants",
        &["serde", "serde_json", "tokio", "tasklatch-contract"],
    ),
    (
        "tasklatch-contract",
        &[
            "tokio",
            "rusqlite",
            "getrandom",
            "hyper",
            "axum",
            "postgres",
            "madsim",
            "mio",
            "humantime",
            "tasklatch-server",
            "tasklatch-oracle",
        ],
    ),
    (
        "tasklatch-server",
        &[
            "clap",
            "indicatif",
            "proptest",
            "proptest-state-machine",
            "loom",
            "madsim",
            "mimalloc",
            "tasklatch-oracle",
            "tasklatch-probe",
            "tasklatch-harness",
            "tasklatch-testkit",
        ],
    ),
    (
        "tasklatch-oracle",
        &[
            "tokio",
            "rusqlite",
            "getrandom",
            "hyper",
            "tasklatch-server",
            "tasklatch-probe",
        ],
    ),
    // The tests' support knows no tasklatch type: what does stays in tests/support/.
    (
        "tasklatch-testkit",
        &[
            "tasklatch-contract",
            "tasklatch-server",
            "tasklatch-oracle",
            "tasklatch-probe",
            "tasklatch-harness",
        ],
    ),
    // The bridge judges stores it did not write: no server, harness or async runtime.
    (
        "tasklatch-bridge",
        &[
            "tokio",
            "rusqlite",
            "madsim",
            "tasklatch-server",
            "tasklatch-harness",
            "tasklatch-probe",
        ],
    ),
    (
        "tasklatch-probe",
        &[
            "rusqlite",
            "axum",
            "postgres",
            "madsim",
            "tasklatch-server",
            "tasklatch-harness",
        ],
    ),
];

/// The package names in `cargo tree --prefix none --format {p}` output (`name vX.Y.Z …`).
fn packages_in(tree: &str) -> Vec<&str> {
    tree.lines()
        .filter_map(|line| line.split_whitespace().next())
        .collect()
}

/// Every forbidden package in `tree`, the closure of `krate`, named.
fn forbidden_in(krate: &str, tree: &str, forbidden: &[&str]) -> Vec<String> {
    let packages = packages_in(tree);
    let mut found: Vec<String> = forbidden
        .iter()
        .filter(|name| packages.contains(name))
        .map(|name| format!("{krate} links `{name}` (cargo tree -e normal -p {krate})"))
        .collect();
    found.sort();
    found
}

fn normal_closure(krate: &str) -> String {
    let output = Command::new(env!("CARGO"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
            "-p",
            krate,
            "--all-features",
        ])
        .args(["--prefix", "none", "--format", "{p}"])
        .output()
        .unwrap_or_else(|error| panic!("run cargo tree -p {krate}: {error}"));
    assert!(
        output.status.success(),
        "cargo tree -p {krate}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("cargo tree prints UTF-8")
}

#[test]
fn each_crate_links_only_what_its_layer_may() {
    let mut violations = Vec::new();
    for (krate, forbidden) in FORBIDDEN {
        let tree = normal_closure(krate);
        let packages = packages_in(&tree);
        assert!(
            packages.first() == Some(krate),
            "cargo tree -p {krate} starts with the crate itself: {tree}"
        );
        violations.extend(forbidden_in(krate, &tree, forbidden));
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

/// The check can fail: a forbidden package in a closure is named.
#[test]
fn a_forbidden_dependency_is_caught() {
    let tree = "tasklatch-contract v0.1.0 (/w/crates/contract)\nserde v1.0.1\ntokio v1.4.0\n";
    let found = forbidden_in("tasklatch-contract", tree, &["tokio", "rusqlite"]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("links `tokio`"), "{found:?}");
    assert!(forbidden_in("tasklatch-contract", tree, &["rusqlite"]).is_empty());
}

/// Source texts a pure crate must not contain: clock reads everywhere; and in the
/// contract, IO, threads and process state too.
const CLOCK: &[&str] = &["SystemTime::now", "Instant::now", "std::time::SystemTime"];
const IMPURE: &[&str] = &[
    "std::fs",
    "std::env",
    "std::net",
    "std::process",
    "std::thread",
    "std::io::stdin",
    "static mut",
    "thread_local!",
];

fn rust_files(dir: &Path, into: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("read {}: {error}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, into);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            into.push(path);
        }
    }
}

/// Every line of a source under `dir` that names one of `needles` outside a comment.
fn impure_lines(dir: &Path, needles: &[&str]) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    assert!(!files.is_empty(), "no sources under {}", dir.display());
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read a source");
        for (index, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for needle in needles.iter().filter(|needle| code.contains(*needle)) {
                found.push(format!("{}:{}: `{needle}`", file.display(), index + 1));
            }
        }
    }
    found
}

fn crate_sources(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates")
        .join(name)
        .join("src")
}

#[test]
fn the_contract_reads_no_clock_and_does_no_io() {
    let needles: Vec<&str> = CLOCK.iter().chain(IMPURE).copied().collect();
    let found = impure_lines(&crate_sources("contract"), &needles);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_oracle_reads_no_clock() {
    let found = impure_lines(&crate_sources("oracle"), CLOCK);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The check can fail: a clock read planted in a copy of the contract is reported.
#[test]
fn a_planted_clock_read_is_caught() {
    let scratch = std::env::temp_dir().join(format!("tasklatch-layers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).expect("mkdir");
    let source = crate_sources("contract").join("guard.rs");
    let text = std::fs::read_to_string(&source).expect("read guard.rs");
    let planted = scratch.join("guard.rs");
    std::fs::write(&planted, &text).expect("write");
    assert!(
        impure_lines(&scratch, CLOCK).is_empty(),
        "the copy is clean"
    );
    let clock =
        "\nfn now() -> u128 { std::time::SystemTime::now().elapsed().unwrap().as_millis() }\n";
    std::fs::write(
        &planted,
        format!("{text}{clock}// Instant::now in a comment\n"),
    )
    .expect("write");
    let found = impure_lines(&scratch, CLOCK);
    let _ = std::fs::remove_dir_all(&scratch);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found.iter().all(|line| line.contains("guard.rs:")),
        "{found:?}"
    );
}
