//! Failure artifacts: records refuse bad input with the file, position and field named;
//! the swimlane and JUnit writers escape what they print; files are written whole.

use std::path::Path;
use tasklatch::hunt::artifact::{self, FailureRecord};
use tasklatch::hunt::{HuntReport, ScenarioTally, swimlane};
use tasklatch::sim::{Scenario, run_seed};

fn scratch(name: &str) -> std::path::PathBuf {
    let folder = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).expect("scratch folder");
    folder
}

fn a_record() -> FailureRecord {
    let scenario = Scenario::by_name("baseline").expect("baseline");
    let mut outcome = run_seed(&scenario, 3);
    outcome.violations.push(tasklatch::check::Violation {
        invariant: "I3",
        task_id: "t<1>".into(),
        detail: "a \"quoted\" & <angled> detail".into(),
        events: vec![1],
    });
    FailureRecord::new(&outcome, "abc", Some("version-unchecked"))
}

#[test]
fn malformed_records_are_refused_with_their_place_named() {
    let folder = scratch("bad-records");
    let good = serde_json::to_value(a_record()).expect("serialises");
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "truncated.json",
            "{\"schema\": ".into(),
            "truncated.json:1:",
        ),
        (
            "wrong-type.json",
            {
                let mut v = good.clone();
                v["seed"] = serde_json::json!("seven");
                v.to_string()
            },
            "seed: invalid type",
        ),
        (
            "unknown-field.json",
            {
                let mut v = good.clone();
                v["colour"] = serde_json::json!("red");
                v.to_string()
            },
            "unknown field `colour`",
        ),
        (
            "schema.json",
            {
                let mut v = good.clone();
                v["schema"] = serde_json::json!("tasklatch.failure/v0");
                v.to_string()
            },
            "schema: expected \"tasklatch.failure/v1\"",
        ),
        (
            "invariant.json",
            {
                let mut v = good.clone();
                v["invariant"] = serde_json::json!("");
                v.to_string()
            },
            "invariant: empty",
        ),
    ];
    for (file, text, expected) in cases {
        let path = folder.join(file);
        std::fs::write(&path, text).expect("written");
        let error = FailureRecord::load(&path).expect_err(file);
        assert!(error.contains(file), "{error}");
        assert!(error.contains(expected), "{file}: {error}");
    }
    let error = FailureRecord::load_all(&folder).expect_err("a folder with bad records");
    assert!(
        error.contains("invariant.json"),
        "the first bad file by name: {error}"
    );
}

#[test]
fn writers_escape_and_write_whole() {
    let record = a_record();
    let mut report = HuntReport::default();
    report.tally.insert(
        "baseline".into(),
        ScenarioTally {
            runs: 10,
            failing: 1,
            seeds: Some((0, 9)),
        },
    );
    let junit = artifact::junit(&report, &[("out/x".into(), record.clone())]);
    assert!(
        junit.contains("&quot;quoted&quot; &amp; &lt;angled&gt;"),
        "{junit}"
    );
    assert!(!junit.contains("<angled>"));
    assert_eq!(junit.matches("<testcase").count(), 2);

    let folder = scratch("whole");
    let path = folder.join("report.xml");
    tasklatch::report::write_whole(&path, &junit).expect("written");
    assert_eq!(std::fs::read_to_string(&path).expect("read"), junit);
    let leftovers: Vec<_> = std::fs::read_dir(&folder)
        .expect("listed")
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".partial"))
        .collect();
    assert!(leftovers.is_empty(), "a temporary file was left behind");
    let error = tasklatch::report::write_whole(&folder.join("missing/report.xml"), "x")
        .expect_err("no folder");
    assert!(error.contains("missing/report.xml"), "{error}");
}

#[test]
fn the_swimlane_has_a_lane_per_node_and_escapes_its_text() {
    // One server process (the shipped deployment), and an external queue's nodes.
    let cases: [(&str, &[&str]); 2] = [
        ("baseline", &["process-0"]),
        (
            "duplicate-delivery",
            &["dispatcher", "worker-0", "worker-2", "sweeper"],
        ),
    ];
    for (name, nodes) in cases {
        let scenario = Scenario::by_name(name).expect(name);
        let outcome = run_seed(&scenario, 3);
        let svg = swimlane::render(&outcome, "a <title> & more");
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("a &lt;title&gt; &amp; more"));
        let common = ["supervisor", "store", "client-0", "client-2"];
        for lane in common.iter().chain(nodes) {
            assert!(
                svg.contains(&format!(">{lane}</text>")),
                "{name}: lane {lane} missing"
            );
        }
        assert!(svg.contains("no violation"), "{name}");
    }
}

#[test]
fn shard_tallies_add_up_to_the_whole_hunts_runs() {
    use tasklatch::hunt::tally::{Tally, Total};
    use tasklatch::hunt::{HuntConfig, Shard, hunt};
    let scenarios = vec![
        Scenario::by_name("baseline").expect("baseline"),
        Scenario::by_name("tenant-mix").expect("tenant-mix"),
    ];
    let folder = scratch("tallies");
    let mut paths = Vec::new();
    for index in 0..2 {
        let mut config = HuntConfig::memory(scenarios.clone(), 3);
        config.shard = Shard { index, count: 2 };
        let report = hunt(&config, &mut |_| {});
        let path = folder.join(format!("shard-{index}.json"));
        let json = serde_json::to_string(&Tally::of(&report, &config)).expect("serialises");
        std::fs::write(&path, json).expect("written");
        paths.push(path);
    }
    let tallies = paths
        .iter()
        .map(|p| Tally::read(p))
        .collect::<Result<Vec<_>, _>>();
    let total = Total::of(tallies.expect("tallies read back")).expect("one seed space");
    assert_eq!(total.runs, 12, "3 seeds x 2 scenarios x 2 shards");
    assert_eq!(total.scenarios["baseline"].runs, 6);
    assert_eq!(total.failing, 0);
    assert!(total.markdown(Some(12)).contains("goal 12 reached"));
}

#[test]
fn the_cli_writes_a_tally_into_a_new_folder_and_adds_it_up() {
    use std::process::Command;
    let folder = scratch("tally-cli");
    let tally = folder.join("not/yet/there/shard-0.json");
    let binary = env!("CARGO_BIN_EXE_tasklatch");
    let hunted = Command::new(binary)
        .args([
            "hunt",
            "--seeds",
            "2",
            "--scenario",
            "baseline",
            "--from",
            "1",
            "--jobs",
            "1",
        ])
        .arg("--out")
        .arg(folder.join("out"))
        .arg("--tally")
        .arg(&tally)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the binary runs");
    assert!(hunted.status.success(), "{hunted:?}");
    let total = Command::new(binary)
        .args(["hunt-total", "--goal", "2"])
        .arg(&tally)
        .output()
        .expect("the binary runs");
    let table = String::from_utf8_lossy(&total.stdout);
    assert!(total.status.success(), "{total:?}");
    assert!(table.contains("| baseline | 2 | 2 | 0 |"), "{table}");
    assert!(table.contains("goal 2 reached"), "{table}");
    let broken = folder.join("broken.json");
    std::fs::write(&broken, "{\"schema\": ").expect("written");
    let refused = Command::new(binary)
        .args(["hunt-total"])
        .arg(&tally)
        .arg(&broken)
        .output()
        .expect("the binary runs");
    let error = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{error}");
    assert!(error.contains("broken.json"), "{error}");
}
