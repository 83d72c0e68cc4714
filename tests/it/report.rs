//! The plain report helpers (no simulation needed): budgets parse or say why not, XML text
//! is escaped (and control characters XML cannot carry are replaced), whole-file writes
//! leave no partial file and name the path they could not write.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use tasklatch::report::{parse_budget, write_whole, xml_escape};

#[test]
fn budgets_parse_or_say_why_not() {
    assert_eq!(parse_budget("90").unwrap().as_secs(), 90);
    assert_eq!(parse_budget("60s").unwrap().as_secs(), 60);
    assert_eq!(parse_budget("1h 30m").unwrap().as_secs(), 5_400);
    let error = parse_budget("soon").unwrap_err();
    assert!(error.contains("\"soon\""), "{error}");
}

#[test]
fn xml_text_is_escaped() {
    assert_eq!(
        xml_escape("a<b>&\"c\" 'd'\u{1}\n"),
        "a&lt;b&gt;&amp;&quot;c&quot; &apos;d&apos;?\n"
    );
}

#[test]
fn whole_writes_leave_nothing_half_written() {
    let folder = std::env::temp_dir().join(format!("tasklatch-report-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join("report.txt");
    write_whole(&path, "first").unwrap();
    write_whole(&path, "second").unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "second");
    let names: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["report.txt"], "no partial file is left");
    let error = write_whole(&folder.join("missing/report.txt"), "x").unwrap_err();
    assert!(error.contains("missing/report.txt"), "{error}");
    std::fs::remove_dir_all(&folder).unwrap();
}
