//! The house's one rule: the product (`src/product/`: contract, store, runtime, mcp, the
//! mutant switch) never imports the harness (`src/harness/`: fixture, conformance, check,
//! interleave, sim, hunt, matrix, bench). The harness imports the product, not the reverse,
//! so a server built on tasklatch carries none of the machinery that judges it.
//!
//! Checked from the sources, since both layers live in one crate: every path a product file
//! names through `crate::` (or `tasklatch::`) must lead to a product module, and the mutant
//! switch, a leaf, names nothing of the crate at all.

use std::path::{Path, PathBuf};

/// The crate's top-level modules, by layer (`lib.rs` declares each with its `#[path]`).
const PRODUCT: &[&str] = &[
    "contract", "load", "mcp", "mutants", "runtime", "store", "sync",
];
const HARNESS: &[&str] = &[
    "bench",
    "check",
    "conformance",
    "fixture",
    "hunt",
    "interleave",
    "matrix",
    "probe",
    "report",
    "sim",
    "verify",
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

/// Every top-level module a source names as `crate::NAME` or `tasklatch::NAME`, with its
/// line number. Comments are skipped: a doc line may mention the harness.
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        for prefix in ["crate::", "tasklatch::"] {
            let mut rest = code;
            while let Some(at) = rest.find(prefix) {
                let after = &rest[at + prefix.len()..];
                let name: String = after
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                // `crate::{a, b}` groups: take every name in the braces.
                if name.is_empty() && after.starts_with('{') {
                    let group = &after[1..after.find('}').unwrap_or(after.len())];
                    for item in group.split(',') {
                        let item: String = item
                            .trim()
                            .chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                            .collect();
                        if !item.is_empty() {
                            found.push((index + 1, item));
                        }
                    }
                } else if !name.is_empty() {
                    found.push((index + 1, name));
                }
                rest = after;
            }
        }
    }
    found
}

fn violations_in(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(&root.join("src/product"), &mut files);
    assert!(
        files.len() > 10,
        "too few product sources found under {}",
        root.display()
    );
    let mut violations = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read a product source");
        let leaf = file.ends_with("src/product/mutants.rs");
        for (line, module) in crate_paths(&text) {
            let shown = file.strip_prefix(root).unwrap_or(file).display();
            if leaf {
                violations.push(format!(
                    "{shown}:{line}: the mutant switch is a leaf, yet names crate::{module}"
                ));
            } else if HARNESS.contains(&module.as_str()) {
                violations.push(format!(
                    "{shown}:{line}: the product imports the harness module `{module}`"
                ));
            } else if !PRODUCT.contains(&module.as_str()) {
                violations.push(format!(
                    "{shown}:{line}: `{module}` is in neither layer's list (tests/layers.rs)"
                ));
            }
        }
    }
    violations
}

#[test]
fn the_product_never_imports_the_harness() {
    let violations = violations_in(Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

#[test]
fn every_top_level_module_is_in_one_layer() {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
        .expect("read src/lib.rs");
    let mut declared = Vec::new();
    let mut path = None;
    for line in lib.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("#[path = \"") {
            path = Some(rest.trim_end_matches("\"]").to_owned());
        }
        let name = line
            .strip_prefix("pub mod ")
            .or_else(|| line.strip_prefix("mod "))
            .map(|rest| rest.trim_end_matches(';').to_owned());
        if let Some(name) = name {
            let file = path
                .take()
                .unwrap_or_else(|| panic!("mod {name} has no #[path]"));
            let layer = if PRODUCT.contains(&name.as_str()) {
                "product/"
            } else if HARNESS.contains(&name.as_str()) {
                "harness/"
            } else {
                panic!("module {name} is in neither layer's list")
            };
            assert!(
                file.starts_with(layer),
                "module {name} lives at {file}, not under {layer}"
            );
            declared.push(name);
        }
    }
    declared.sort();
    let mut listed: Vec<String> = PRODUCT
        .iter()
        .chain(HARNESS)
        .map(|m| m.to_string())
        .collect();
    listed.sort();
    assert_eq!(declared, listed, "lib.rs and the layer lists disagree");
}

/// The check can fail: a planted harness import in a copy of the product is reported.
#[test]
fn a_planted_harness_import_is_caught() {
    let scratch = std::env::temp_dir().join(format!("tasklatch-layers-{}", std::process::id()));
    let product = scratch.join("src/product");
    let _ = std::fs::remove_dir_all(&scratch);
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/product");
    let mut files = Vec::new();
    rust_files(&source, &mut files);
    for file in &files {
        let target = product.join(file.strip_prefix(&source).expect("under product"));
        std::fs::create_dir_all(target.parent().expect("a parent")).expect("mkdir");
        std::fs::copy(file, &target).expect("copy");
    }
    assert!(
        violations_in(&scratch).is_empty(),
        "the unchanged copy is clean"
    );
    let planted = product.join("store/mod.rs");
    let text = std::fs::read_to_string(&planted).expect("read");
    std::fs::write(&planted, format!("{text}\nuse crate::{{contract, sim}};\n")).expect("write");
    let leaf = product.join("mutants.rs");
    let text = std::fs::read_to_string(&leaf).expect("read");
    std::fs::write(&leaf, format!("{text}\nuse crate::store::TaskStore;\n")).expect("write");
    let violations = violations_in(&scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    assert_eq!(violations.len(), 2, "{violations:?}");
    assert!(
        violations[0].contains("the mutant switch is a leaf"),
        "{violations:?}"
    );
    assert!(
        violations[1].contains("imports the harness module `sim`"),
        "{violations:?}"
    );
}
