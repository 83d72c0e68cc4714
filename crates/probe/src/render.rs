//! What a probe run leaves behind: the verdict table on the terminal, and with `--out DIR`
//! the whole report (`probe.json`), each era's workload history (`history-ERA.jsonl`, one
//! operation a line) and its swimlane (`swimlane-ERA.svg`: a lane per client and one for
//! the server with its kills), one `tasklatch.probe/v1` record per finding
//! (`findings/NNN-<check>.json`, each with the command that reruns it) and, with
//! `--junit`, a JUnit file (a test case per check: n/a is skipped).

use super::{CheckOutcome, Level, REPORT_FORMAT, Report, Verdict};
use crate::report::{write_whole, xml_escape};
use serde_json::json;
use std::fmt::Write as _;
use std::path::Path;

/// The verdict table and the summary line, as the terminal shows them.
pub fn text(report: &Report) -> String {
    let mut out = String::new();
    for era in &report.eras {
        let _ = writeln!(out, "\n{era}:");
        for check in report.checks.iter().filter(|check| check.era == *era) {
            let level = match check.level {
                Level::Must => "",
                Level::Should => " (SHOULD)",
            };
            let _ = writeln!(
                out,
                "  {:<4} {}{level}: {}",
                check.verdict.as_str(),
                check.check,
                check.detail
            );
            if matches!(check.verdict, Verdict::Fail | Verdict::Risk) {
                for exchange in check.evidence.iter().take(3) {
                    let _ = writeln!(out, "         {}", exchange.summary());
                }
            }
        }
    }
    if !report.recurrence.is_empty() {
        let _ = writeln!(out, "\nfindings recurring in the reruns (same seed):");
        for (name, (count, of)) in &report.recurrence {
            let _ = writeln!(out, "  {name}: {count} of {of}");
        }
    }
    for skipped in &report.skipped {
        let _ = writeln!(out, "\nnot probed: {skipped}");
    }
    let not_run = not_run(report);
    if !not_run.is_empty() {
        let _ = writeln!(out, "\nchecks not run, by reason:");
        for (reason, checks) in not_run {
            let _ = writeln!(out, "  {reason}\n    {}", checks.join(", "));
        }
    }
    for note in &report.notes {
        let _ = writeln!(out, "\nnote: {note}");
    }
    if let Some(seed) = report.seed {
        let _ = writeln!(out, "\nworkload seed {seed}");
    }
    let _ = writeln!(out, "\n{}", summary(report));
    out
}

/// The n/a checks grouped by their reason (`ERA CHECK` each), in the order first met.
pub fn not_run(report: &Report) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for check in report
        .checks
        .iter()
        .filter(|check| check.verdict == Verdict::NotApplicable)
    {
        let detail = check.detail.as_str();
        let reason = detail
            .strip_prefix("n/a: ")
            .or_else(|| detail.strip_prefix("n/a "))
            .unwrap_or(detail)
            .to_owned();
        let name = format!("{} {}", check.era, check.check);
        match groups.iter_mut().find(|(known, _)| *known == reason) {
            Some((_, names)) => names.push(name),
            None => groups.push((reason, vec![name])),
        }
    }
    groups
}

/// `N checks: P pass, F fail, X n/a, R risks — verdict`.
pub fn summary(report: &Report) -> String {
    let counts = report.counts();
    let should = report
        .findings()
        .filter(|check| check.level == Level::Should)
        .count();
    let verdict = if counts.fail == 0 {
        "no findings".to_owned()
    } else {
        format!(
            "{} finding{} ({} MUST, {should} SHOULD)",
            counts.fail,
            if counts.fail == 1 { "" } else { "s" },
            counts.fail - should
        )
    };
    format!(
        "{} checks in {}: {} pass, {} fail, {} n/a, {} risk{} — {verdict}",
        report.checks.len(),
        report.eras.join(" and "),
        counts.pass,
        counts.fail,
        counts.not_applicable,
        counts.risk,
        if counts.risk == 1 { "" } else { "s" },
    )
}

/// One finding as its own record.
pub fn finding_record(
    check: &CheckOutcome,
    recurrence: Option<(usize, usize)>,
    rerun: &str,
    commit: &str,
) -> serde_json::Value {
    json!({
        "recurred": recurrence.map(|(count, of)| json!({ "reruns": of, "failed_again": count })),
        "format": REPORT_FORMAT,
        "check": check.check,
        "era": check.era,
        "level": check.level,
        "detail": check.detail,
        "evidence": check.evidence,
        "rerun": rerun,
        "probe_commit": commit,
    })
}

/// Writes `probe.json` and `findings/NNN-<check>.json` under `directory`.
pub fn write_out(report: &Report, directory: &Path, rerun: &str) -> Result<(), String> {
    let findings = directory.join("findings");
    std::fs::create_dir_all(&findings)
        .map_err(|error| format!("{}: cannot create: {error}", findings.display()))?;
    let commit = crate::report::commit();
    let mut whole = serde_json::to_value(report).map_err(|error| error.to_string())?;
    whole["rerun"] = json!(rerun);
    whole["probe_commit"] = json!(commit);
    write_whole(
        &directory.join("probe.json"),
        &serde_json::to_string_pretty(&whole).map_err(|error| error.to_string())?,
    )?;
    for history in &report.histories {
        let lines: Vec<String> = history
            .ops
            .iter()
            .filter_map(|op| serde_json::to_string(op).ok())
            .collect();
        write_whole(
            &directory.join(format!("history-{}.jsonl", history.era)),
            &(lines.join("\n") + "\n"),
        )?;
        let checks: Vec<CheckOutcome> = report
            .checks
            .iter()
            .filter(|check| check.era == history.era)
            .cloned()
            .collect();
        write_whole(
            &directory.join(format!("swimlane-{}.svg", history.era)),
            &super::swimlane::render(history.era, &history.ops, &history.kills, &checks),
        )?;
    }
    for (index, check) in report.findings().enumerate() {
        let name = format!("{:03}-{}.json", index + 1, check.check.replace('/', "-"));
        let recurrence = report
            .recurrence
            .get(&format!("{} {}", check.era, check.check))
            .copied();
        let record = finding_record(check, recurrence, rerun, &commit);
        write_whole(
            &findings.join(name),
            &serde_json::to_string_pretty(&record).map_err(|error| error.to_string())?,
        )?;
    }
    Ok(())
}

/// The JUnit document: a suite per era, a case per check.
pub fn junit(report: &Report) -> String {
    let counts = report.counts();
    let (fail, na) = (counts.fail, counts.not_applicable);
    let mut out = String::new();
    let _ = writeln!(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    let _ = writeln!(
        out,
        "<testsuites name=\"tasklatch probe\" tests=\"{}\" failures=\"{fail}\" skipped=\"{na}\">",
        report.checks.len()
    );
    for era in &report.eras {
        let checks: Vec<&CheckOutcome> = report
            .checks
            .iter()
            .filter(|check| check.era == *era)
            .collect();
        let failures = checks
            .iter()
            .filter(|check| check.verdict == Verdict::Fail)
            .count();
        let _ = writeln!(
            out,
            "  <testsuite name=\"probe {era}\" tests=\"{}\" failures=\"{failures}\">",
            checks.len()
        );
        for check in checks {
            let _ = write!(
                out,
                "    <testcase classname=\"probe.{}\" name=\"{}\"",
                xml_escape(era),
                xml_escape(&check.check)
            );
            match check.verdict {
                Verdict::Pass => {
                    let _ = writeln!(out, "/>");
                }
                Verdict::Risk => {
                    let _ = writeln!(
                        out,
                        ">\n      <system-out>risk: {}</system-out>\n    </testcase>",
                        xml_escape(&check.detail)
                    );
                }
                Verdict::NotApplicable => {
                    let _ = writeln!(
                        out,
                        ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                        xml_escape(&check.detail)
                    );
                }
                Verdict::Fail => {
                    let evidence: Vec<String> = check
                        .evidence
                        .iter()
                        .map(|exchange| exchange.summary())
                        .collect();
                    let _ = writeln!(
                        out,
                        ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>",
                        xml_escape(&check.detail),
                        xml_escape(&evidence.join("\n"))
                    );
                }
            }
        }
        let _ = writeln!(out, "  </testsuite>");
    }
    let _ = writeln!(out, "</testsuites>");
    out
}

/// `args` as one shell command line, each argument quoted where it needs to be.
pub fn shell_line(args: &[String]) -> String {
    args.iter()
        .map(|arg| {
            let plain = !arg.is_empty()
                && arg
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c));
            if plain {
                arg.clone()
            } else {
                format!("'{}'", arg.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_line_quotes_what_needs_it() {
        let args = ["tasklatch", "probe", "--args", "{\"a\": 1}", "it's"].map(String::from);
        assert_eq!(
            shell_line(&args),
            r#"tasklatch probe --args '{"a": 1}' 'it'\''s'"#
        );
    }
}
