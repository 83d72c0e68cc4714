//! `check_store`: every engine against one store, each reported apart, with what the
//! interface cannot express counted and listed, never passed.

use crate::explore::{self, Explored};
use crate::fixture;
use crate::races::{self, Raced};
use crate::restart::{self, Restarted};
use crate::shim::{BridgeError, Shim};
use crate::snippet;
use crate::spec::{Interface, StoreSpec};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;

/// The schema name of a check-store report.
pub const REPORT_FORMAT: &str = "tasklatch.check-store/v1";

/// How to run the engines.
#[derive(Clone, Debug)]
pub struct Options {
    /// Time per engine.
    pub budget: Duration,
    /// Cases per engine, at most.
    pub cases_max: usize,
    /// The first case's seed.
    pub seed: u64,
    /// How long one store call may take before the store is called hung.
    pub call_timeout: Duration,
    /// Where the stores' data lives (a directory per case).
    pub work: PathBuf,
    /// The store claims its data survives a restart: run the restart engine.
    pub durable: bool,
}

/// Rules no store of an interface can keep, because the interface cannot say what they
/// need (an owner, an expected status): reported every run, not counted against the store.
pub const INTERFACE_RULES: &[&str] = &["cas.stale-write-accepted", "isolation.owner-carried"];

/// One rule an engine found broken.
#[derive(Clone, Debug)]
pub struct Found {
    /// The rule.
    pub rule: String,
    /// The interface breaks it, whatever the store does ([`INTERFACE_RULES`]).
    pub interface: bool,
    /// What the shortest case showed.
    pub detail: String,
    /// Cases that broke it.
    pub cases: usize,
    /// The seed of the first.
    pub seed: Option<u64>,
    /// The shortest case as a program in the store's language.
    pub snippet: Option<String>,
}

/// One engine's run.
#[derive(Clone, Debug)]
pub struct EngineReport {
    /// `explore`, `races`, `restart`.
    pub engine: &'static str,
    /// Cases run.
    pub cases: usize,
    /// Store calls made (ops for `explore`).
    pub ops: usize,
    /// Seconds it ran.
    pub seconds: f64,
    /// What it found.
    pub findings: Vec<Found>,
    /// The contract's rules this engine cannot express through the interface.
    pub not_expressible: Vec<String>,
    /// Why it did not run, if it did not.
    pub skipped: Option<String>,
}

impl EngineReport {
    /// Cases per second.
    pub fn rate(&self) -> f64 {
        if self.seconds > 0.0 {
            self.cases as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// A whole check.
#[derive(Clone, Debug)]
pub struct CheckReport {
    /// The store, as `node ./x.mjs#createStore (ts-sdk)`.
    pub store: String,
    /// The shim's runtime.
    pub runtime: String,
    /// Each engine.
    pub engines: Vec<EngineReport>,
}

impl CheckReport {
    /// Every finding of every engine.
    pub fn findings(&self) -> impl Iterator<Item = (&'static str, &Found)> {
        self.engines.iter().flat_map(|engine| {
            engine
                .findings
                .iter()
                .map(move |found| (engine.engine, found))
        })
    }

    /// The findings against the store itself (not its interface's).
    pub fn store_findings(&self) -> impl Iterator<Item = (&'static str, &Found)> {
        self.findings().filter(|(_, found)| !found.interface)
    }

    /// The report as JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "format": REPORT_FORMAT,
            "store": self.store,
            "runtime": self.runtime,
            "engines": self.engines.iter().map(|engine| json!({
                "engine": engine.engine,
                "cases": engine.cases,
                "ops": engine.ops,
                "seconds": engine.seconds,
                "cases_per_second": engine.rate(),
                "skipped": engine.skipped,
                "not_expressible": engine.not_expressible,
                "findings": engine.findings.iter().map(|found| json!({
                    "rule": found.rule,
                    "interface": found.interface,
                    "detail": found.detail,
                    "cases": found.cases,
                    "seed": found.seed,
                    "snippet": found.snippet,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })
    }
}

/// What the contract says that `interface` cannot: counted and listed by every engine.
pub fn not_expressible(interface: Interface) -> Vec<String> {
    let mut rules = vec![
        "versions and compare-and-swap: no write carries an expected status or version".to_owned(),
        "idempotent creation bound to a request digest: a create carries no key".to_owned(),
        "the admission record and its outbox entry: the interface has no outbox".to_owned(),
    ];
    if interface == Interface::PyMcp {
        rules.push(
            "isolation by owner or session: no method carries one (reported as \
             isolation.owner-carried)"
                .to_owned(),
        );
    }
    rules
}

/// Findings the interface's shape alone shows.
fn interface_findings(interface: Interface) -> Vec<Found> {
    match interface {
        Interface::PyMcp => vec![Found {
            rule: "isolation.owner-carried".to_owned(),
            interface: true,
            detail: "no method of the interface carries an owner or session: any caller that \
                     knows a task id reads, completes or cancels it, and the store cannot \
                     refuse"
                .to_owned(),
            cases: 0,
            seed: None,
            snippet: None,
        }],
        Interface::TsSdk => Vec::new(),
    }
}

/// Runs every engine against `spec`'s store.
pub fn check_store(
    spec: &StoreSpec,
    options: &Options,
    mut progress: impl FnMut(&str, usize, usize),
) -> Result<CheckReport, BridgeError> {
    let mut shim = Shim::start(spec)?;
    let runtime = shim.hello.runtime.clone();
    let replayed = fixture::replay(&mut shim, &options.work, options.call_timeout)?;
    progress("fixture", replayed.cases.len(), 0);
    let mut engines = vec![fixture_report(&replayed)];
    let explored = explore::explore(
        &mut shim,
        &options.work,
        options.seed,
        options.budget,
        options.cases_max,
        options.call_timeout,
        |explored: &Explored| progress("explore", explored.cases, explored.findings.len()),
    )?;
    engines.push(explore_report(spec, &explored));
    let raced = races::race(
        &mut shim,
        &options.work,
        options.budget,
        options.cases_max,
        options.call_timeout,
    )?;
    progress("races", raced.rounds, raced.findings.len());
    engines.push(races_report(spec, &raced));
    engines.push(if options.durable {
        let restarted = restart::restart(
            &mut shim,
            spec,
            &options.work,
            options.seed,
            options.budget,
            options.cases_max,
            options.call_timeout,
        )?;
        progress("restart", restarted.cases, restarted.findings.len());
        restart_report(spec, &restarted)
    } else {
        EngineReport {
            engine: "restart",
            cases: 0,
            ops: 0,
            seconds: 0.0,
            findings: Vec::new(),
            not_expressible: Vec::new(),
            skipped: Some(
                "the store does not claim its data survives a restart (give --durable)".to_owned(),
            ),
        }
    });
    Ok(CheckReport {
        store: spec.describe(),
        runtime,
        engines,
    })
}

fn fixture_report(replayed: &fixture::Replayed) -> EngineReport {
    let mut findings = Vec::new();
    let mut not_expressible = Vec::new();
    let mut ran = 0;
    for (id, title, decision, outcome) in &replayed.cases {
        match outcome {
            fixture::Outcome::Passed => ran += 1,
            fixture::Outcome::Failed(what) => {
                ran += 1;
                findings.push(Found {
                    rule: format!("fixture.{id}"),
                    interface: false,
                    detail: format!("{title} ({decision}): {what}"),
                    cases: 0,
                    seed: None,
                    snippet: None,
                });
            }
            fixture::Outcome::NotExpressible(why) => {
                not_expressible.push(format!("{id} ({decision}): {why}"));
            }
        }
    }
    EngineReport {
        engine: "fixture",
        cases: ran,
        ops: replayed.cases.len(),
        seconds: replayed.elapsed.as_secs_f64(),
        findings,
        not_expressible,
        skipped: None,
    }
}

fn explore_report(spec: &StoreSpec, explored: &Explored) -> EngineReport {
    let mut findings = interface_findings(spec.interface);
    findings.extend(explored.findings.values().map(|finding| Found {
        rule: finding.rule.to_owned(),
        interface: INTERFACE_RULES.contains(&finding.rule),
        detail: finding.detail.clone(),
        cases: finding.cases,
        seed: Some(finding.seed),
        snippet: Some(snippet::render(spec, finding.rule, &finding.ops)),
    }));
    EngineReport {
        engine: "explore",
        cases: explored.cases,
        ops: explored.ops,
        seconds: explored.elapsed.as_secs_f64(),
        findings,
        not_expressible: not_expressible(spec.interface),
        skipped: None,
    }
}

fn restart_report(spec: &StoreSpec, restarted: &Restarted) -> EngineReport {
    EngineReport {
        engine: "restart",
        cases: restarted.cases,
        ops: restarted.kills,
        seconds: restarted.elapsed.as_secs_f64(),
        findings: restarted
            .findings
            .iter()
            .map(|finding| Found {
                rule: finding.rule.to_owned(),
                interface: INTERFACE_RULES.contains(&finding.rule),
                detail: finding.detail.clone(),
                cases: finding.cases,
                seed: Some(finding.seed),
                snippet: None,
            })
            .collect(),
        not_expressible: not_expressible(spec.interface),
        skipped: None,
    }
}

fn races_report(spec: &StoreSpec, raced: &Raced) -> EngineReport {
    let session = if crate::ops::has_sessions(spec.interface) {
        crate::ops::Session::A
    } else {
        crate::ops::Session::None
    };
    EngineReport {
        engine: "races",
        cases: raced.rounds,
        ops: raced.calls,
        seconds: raced.elapsed.as_secs_f64(),
        findings: raced
            .findings
            .iter()
            .map(|finding| Found {
                rule: finding.rule.to_owned(),
                interface: INTERFACE_RULES.contains(&finding.rule),
                detail: format!("{} ({})", finding.detail, finding.race.name()),
                cases: finding.rounds,
                seed: None,
                snippet: Some(snippet::race(
                    spec,
                    finding.rule,
                    &finding.race.writers(session),
                )),
            })
            .collect(),
        not_expressible: not_expressible(spec.interface),
        skipped: None,
    }
}

/// The report as the terminal shows it.
pub fn text(report: &CheckReport) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "{} on {}", report.store, report.runtime);
    for engine in &report.engines {
        let _ = writeln!(
            out,
            "\n{}: {} cases, {} {} in {:.1} s ({:.0} cases/s)",
            engine.engine,
            engine.cases,
            engine.ops,
            match engine.engine {
                "restart" => "kills",
                "fixture" => "in the fixture",
                _ => "calls",
            },
            engine.seconds,
            engine.rate()
        );
        if let Some(why) = &engine.skipped {
            let _ = writeln!(out, "  not run: {why}");
        }
        for found in &engine.findings {
            let _ = writeln!(
                out,
                "  {} {}: {}{}",
                if found.interface { "interface" } else { "fail" },
                found.rule,
                found.detail,
                match (found.cases, found.seed) {
                    (0, _) => String::new(),
                    (cases, Some(seed)) => format!(" ({cases} case(s); first seed {seed})"),
                    (cases, None) => format!(" ({cases} round(s))"),
                }
            );
        }
        let _ = writeln!(out, "  not expressible ({}):", engine.not_expressible.len());
        for rule in &engine.not_expressible {
            let _ = writeln!(out, "    {rule}");
        }
    }
    let count = report.store_findings().count();
    let of_interface = report.findings().count() - count;
    let _ = writeln!(
        out,
        "\n{} — {}{}",
        report.store,
        if count == 0 {
            "no findings".to_owned()
        } else {
            format!("{count} finding(s)")
        },
        if of_interface == 0 {
            String::new()
        } else {
            format!(" (and {of_interface} of its interface, which no store of it can avoid)")
        }
    );
    out
}

/// The JUnit document: a suite per engine, a case per finding (and one passing case for an
/// engine that found nothing).
pub fn junit(report: &CheckReport) -> String {
    use std::fmt::Write as _;
    let escape = |text: &str| {
        text.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(out, "<testsuites name=\"tasklatch check-store\">");
    for engine in &report.engines {
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\">",
            engine.engine,
            engine.findings.len().max(1),
            engine.findings.len()
        );
        if engine.findings.is_empty() {
            let _ = writeln!(
                out,
                "    <testcase classname=\"check-store.{}\" name=\"no-findings\"/>",
                engine.engine
            );
        }
        for found in &engine.findings {
            let _ = writeln!(
                out,
                "    <testcase classname=\"check-store.{}\" name=\"{}\">\n      <failure message=\"{}\">{}</failure>\n    </testcase>",
                engine.engine,
                escape(&found.rule),
                escape(&found.detail),
                escape(found.snippet.as_deref().unwrap_or(""))
            );
        }
        let _ = writeln!(out, "  </testsuite>");
    }
    let _ = writeln!(out, "</testsuites>");
    out
}
