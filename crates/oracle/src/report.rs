//! Writing reports: whole-file writes a reader never sees half of, the commit a report
//! names, XML escaping (JUnit, SVG) and budgets such as `60s`. Plain-build helpers of the
//! harness's report writers (the race hunt today), kept apart from the simulation so that
//! commands built without it can write the same artifacts.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Writes `text` to `path` under a temporary name first, so a reader never sees half.
pub fn write_whole(path: &Path, text: &str) -> Result<(), String> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".partial");
    let temporary = PathBuf::from(temporary);
    std::fs::write(&temporary, text)
        .and_then(|()| std::fs::rename(&temporary, path))
        .map_err(|error| format!("{}: cannot write: {error}", path.display()))
}

/// [`write_whole`] into a folder that may not exist yet: its folders are made first (a
/// report path a workflow names, such as `tally/shard-0.json`).
pub fn write_whole_creating(path: &Path, text: &str) -> Result<(), String> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|error| format!("{}: {error}", parent.display()))?;
    }
    write_whole(path, text)
}

/// The commit a report names: `git rev-parse HEAD` (with `-dirty` when tracked files
/// changed), else `GITHUB_SHA`, else `unknown`.
///
/// Environment: `GITHUB_SHA` names the commit when `git` cannot (a CI checkout without
/// history, say).
pub fn commit() -> String {
    let git = |args: &[&str]| std::process::Command::new("git").args(args).output().ok();
    match git(&["rev-parse", "HEAD"]) {
        Some(output) if output.status.success() => {
            let mut commit = String::from_utf8_lossy(&output.stdout).trim().to_owned();
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|status| !status.stdout.is_empty());
            if dirty {
                commit.push_str("-dirty");
            }
            commit
        }
        _ => std::env::var("GITHUB_SHA").unwrap_or_else(|_| "unknown".into()),
    }
}

/// Parses a budget such as `60s`, `10m`, `1h30m` or `90` (seconds).
pub fn parse_budget(text: &str) -> Result<Duration, String> {
    let bare: Result<u64, _> = text.parse();
    if let Ok(seconds) = bare {
        return Ok(Duration::from_secs(seconds));
    }
    humantime::parse_duration(text).map_err(|error| format!("{text:?}: {error}"))
}

/// Escapes text for XML attributes and content.
pub fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 cannot carry most control characters, even escaped.
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\r' | '\t') => out.push('?'),
            c => out.push(c),
        }
    }
    out
}
