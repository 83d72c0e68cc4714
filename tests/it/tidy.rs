//! Tidy: the rules of size and naming that the compiler does not keep (in the spirit of
//! rust-analyzer's `tidy.rs` and TigerBeetle's `tidy.zig`).
//!
//! - No source file over [`FILE_LINES_MAX`] lines, but those in [`FILES_OVER_LIMIT`], each
//!   held to the size it has: the list may only shrink.
//! - No function longer than a ratchet, [`FN_LINES_MAX`], in the crates, `src/`,
//!   `examples/` and `tests/`. The ratchet may only go down: when the longest function gets
//!   shorter, the test asks for the constant to follow it. The goal is [`FN_LINES_GOAL`].
//! - Every crate and every module file is named in `ARCHITECTURE.md`, in its crate's
//!   section.
//!
//! A function is counted from its `fn` line to its closing brace at the same indentation
//! (rustfmt's layout), doc comments and attributes excluded.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use std::fs;
use std::path::{Path, PathBuf};

/// The longest a source file may be.
const FILE_LINES_MAX: usize = 1_000;
/// Files still over [`FILE_LINES_MAX`], each with the most lines it may have. Split one and
/// remove it; never add one.
const FILES_OVER_LIMIT: &[(&str, usize)] = &[];
/// Where the function ratchet is headed (TigerBeetle's 70 is the style's soft limit).
const FN_LINES_GOAL: usize = 100;
/// The longest function in the crates, `src/`, `examples/` and `tests/`: may only go down.
const FN_LINES_MAX: usize = 100;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`, relative to the root, sorted.
fn rust_files(dir: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![root().join(dir)];
    while let Some(at) = pending.pop() {
        let Ok(entries) = fs::read_dir(&at) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                let relative = path.strip_prefix(root()).expect("under the root");
                found.push(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    found.sort();
    found
}

fn crate_sources() -> Vec<String> {
    let mut files = Vec::new();
    for entry in fs::read_dir(root().join("crates"))
        .expect("crates/")
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        files.extend(rust_files(&format!("crates/{name}/src")));
    }
    files.extend(rust_files("src"));
    files.extend(rust_files("examples"));
    files.sort();
    files
}

/// `name` if `line` starts a function: `[pub[(…)]] [const] [async] [unsafe] fn name`.
fn fn_name(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    if let Some(after) = rest.strip_prefix("pub") {
        rest = match after.strip_prefix('(') {
            Some(scoped) => scoped.split_once(')')?.1,
            None => after,
        }
        .trim_start();
    }
    for qualifier in ["const ", "async ", "unsafe "] {
        rest = rest.strip_prefix(qualifier).unwrap_or(rest).trim_start();
    }
    let name = rest.strip_prefix("fn ")?;
    let end = name
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(name.len());
    (end > 0).then(|| &name[..end])
}

/// Every function with a body in `text`: (line of its `fn`, name, length in lines).
fn functions(text: &str) -> Vec<(usize, String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let Some(name) = fn_name(line) else {
            continue;
        };
        let indent = &line[..line.len() - line.trim_start().len()];
        let close = format!("{indent}}}");
        // The body opens at the first line ending in `{`; a `;` first means no body.
        let Some(open) = lines[at..].iter().position(|l| {
            let l = l.trim_end();
            l.ends_with('{') || l.ends_with(';') || l.ends_with('}')
        }) else {
            continue;
        };
        let opener = lines[at + open].trim_end();
        if opener.ends_with(';') {
            continue;
        }
        if opener.ends_with('}') {
            found.push((at + 1, name.to_owned(), open + 1));
            continue;
        }
        let end = lines[at + open + 1..]
            .iter()
            .position(|l| l.trim_end() == close)
            .map_or(lines.len() - 1, |offset| at + open + 1 + offset);
        found.push((at + 1, name.to_owned(), end - at + 1));
    }
    found
}

fn read(file: &str) -> String {
    fs::read_to_string(root().join(file)).unwrap_or_else(|error| panic!("{file}: {error}"))
}

#[test]
fn no_file_over_the_limit() {
    let mut problems = Vec::new();
    let mut all = crate_sources();
    all.extend(rust_files("tests"));
    for file in &all {
        let lines = read(file).lines().count();
        let allowance = FILES_OVER_LIMIT
            .iter()
            .find(|(listed, _)| listed == file)
            .map(|&(_, lines_max)| lines_max);
        match allowance {
            None if lines > FILE_LINES_MAX => problems.push(format!(
                "{file}: {lines} lines, over {FILE_LINES_MAX}: split it by what it owns"
            )),
            Some(lines_max) if lines > lines_max => problems.push(format!(
                "{file}: {lines} lines, more than its allowance of {lines_max}: it must shrink"
            )),
            Some(_) if lines <= FILE_LINES_MAX => problems.push(format!(
                "{file}: {lines} lines: under {FILE_LINES_MAX} now, remove it from FILES_OVER_LIMIT"
            )),
            _ => {}
        }
    }
    for (listed, _) in FILES_OVER_LIMIT {
        if !all.iter().any(|file| file == listed) {
            problems.push(format!("{listed}: listed in FILES_OVER_LIMIT but gone"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Fails for every function over `lines_max`, and when the longest is shorter than
/// `lines_max` (the ratchet must follow it down).
fn ratchet(files: &[String], lines_max: usize, constant: &str) {
    let mut longest = (0, String::new());
    let mut over = Vec::new();
    for file in files {
        for (line, name, length) in functions(&read(file)) {
            if length > lines_max {
                over.push(format!("{file}:{line}: fn {name} is {length} lines"));
            }
            if length > longest.0 {
                longest = (length, format!("{file}:{line}: fn {name}"));
            }
        }
    }
    assert!(
        over.is_empty(),
        "functions over {constant} = {lines_max} lines (the goal is {FN_LINES_GOAL}): split them\n{}",
        over.join("\n")
    );
    assert!(
        longest.0 == lines_max,
        "the longest function is now {} lines ({}): lower {constant} to {}",
        longest.0,
        longest.1,
        longest.0
    );
}

#[test]
fn functions_stay_under_the_ratchet() {
    let mut files = crate_sources();
    files.extend(rust_files("tests"));
    ratchet(&files, FN_LINES_MAX, "FN_LINES_MAX");
}

/// The text of `ARCHITECTURE.md`'s section about `heading` (up to the next `### `).
fn section<'a>(document: &'a str, heading: &str) -> Option<&'a str> {
    let start = document.find(heading)?;
    let rest = &document[start + heading.len()..];
    Some(&rest[..rest.find("\n### ").unwrap_or(rest.len())])
}

#[test]
fn every_crate_and_module_is_in_the_architecture_document() {
    let document = read("ARCHITECTURE.md");
    let mut missing = Vec::new();
    let mut roots = vec![("src".to_owned(), "### `src/`".to_owned())];
    for entry in fs::read_dir(root().join("crates"))
        .expect("crates/")
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        roots.push((format!("crates/{name}/src"), format!("### `crates/{name}`")));
    }
    for (dir, heading) in roots {
        let Some(text) = section(&document, &heading) else {
            missing.push(format!("{dir}: no section headed {heading}"));
            continue;
        };
        for file in rust_files(&dir) {
            let path = Path::new(&file);
            let stem = path.file_stem().unwrap_or_default().to_string_lossy();
            let module = match stem.as_ref() {
                "lib" | "main" => continue,
                "mod" => path.parent().and_then(Path::file_name),
                _ => path.file_name(),
            };
            let module = module.unwrap_or_default().to_string_lossy();
            let named = if stem == "mod" {
                format!("`{module}/`")
            } else {
                format!("`{module}`")
            };
            if !text.contains(&named) {
                missing.push(format!("{file}: {named} not named under {heading}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_counter_counts() {
    let text = "fn one() {}\n\npub(crate) async fn three() {\n    x();\n}\nfn decl();\n    fn nested(\n        a: u8,\n    ) -> u8 {\n        a\n    }\n";
    assert_eq!(
        functions(text),
        vec![
            (1, "one".to_owned(), 1),
            (3, "three".to_owned(), 3),
            (7, "nested".to_owned(), 5)
        ]
    );
}
