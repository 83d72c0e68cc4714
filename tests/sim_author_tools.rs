//! An author's tools through the crash simulation: the example server's `publish_report`
//! (examples/report_server/tools.rs), run by the simulated runtime through the same
//! `Tool` trait the server uses, in scenarios that kill workers between effect and
//! completion, cancel at the decision and take the store down. The oracle judges what
//! the runs recorded, and the world itself at the end (a completed task's report exists,
//! a cancelled or failed task's does not). A hasty variant that writes its report at once
//! and ignores cancellation is caught, so the check can fail.
//!
//! `SIM_SEEDS=a..b` replaces the seed range (read by `tasklatch::sim::seeds_from_env`).

#[path = "../examples/report_server/tools.rs"]
mod tools;

use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use tasklatch::contract::{TaskOutcome, TaskSupport};
use tasklatch::mcp::tools::ToolSpec;
use tasklatch::runtime::{BoxFuture, ToolStep};
use tasklatch::sim::{Scenario, Sim, SimOutcome, WorldTools, seeds_from_env};
use tasklatch::tool::{Tool, ToolCall, Toolbox};

const SCENARIOS: [&str; 4] = [
    "baseline",
    "cancel-at-decide",
    "kill-after-effect",
    "store-crash",
];

fn report_path(dir: &Path, task_id: &str) -> PathBuf {
    dir.join(format!("{task_id}.md"))
}

fn world_tools(build: impl Fn(&Path) -> Toolbox + Send + Sync + 'static) -> WorldTools {
    WorldTools::new(
        build,
        "publish_report",
        |tenant, n| json!({ "title": format!("tenant {tenant} report {n}"), "delay_ms": 60 }),
    )
    .effect_shows_at(report_path)
}

fn run(tools: &WorldTools, scenario: &str, seeds: std::ops::Range<u64>) -> Vec<SimOutcome> {
    let scenario = Scenario::by_name(scenario).expect("scenario");
    let seeds = seeds_from_env(seeds).expect("seed range");
    seeds
        .map(|seed| Sim::new(&scenario).tools(tools).run(seed))
        .collect()
}

#[test]
fn the_example_server_s_reports_hold_every_invariant_through_crashes() {
    let tools = world_tools(|dir| {
        Toolbox::new()
            .with(tools::PublishReport::new(dir.to_path_buf()))
            .with(tools::CallWebhook::new(dir.to_path_buf()))
    });
    let mut failures = Vec::new();
    let (mut published, mut kills) = (0, 0);
    for scenario in SCENARIOS {
        for outcome in run(&tools, scenario, 0..40) {
            published += outcome
                .history
                .iter()
                .filter(|event| matches!(event, tasklatch::check::Event::Effect { .. }))
                .count();
            kills += outcome.marks.get("kill:random").copied().unwrap_or(0);
            if let Some(first) = outcome.violations.first() {
                failures.push(format!(
                    "{scenario} seed {}: {first}\n  rerun: SIM_SEEDS={}..{} cargo test --features sim --test sim_author_tools",
                    outcome.seed,
                    outcome.seed,
                    outcome.seed + 1
                ));
            }
        }
    }
    eprintln!(
        "author tools: {} scenarios x 40 seeds, {published} reports published, {kills} workers killed, {} failing",
        SCENARIOS.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Not vacuous: reports were published and workers were killed.
    assert!(
        published > 100 && kills > 10,
        "{published} published, {kills} kills"
    );
}

#[test]
fn a_seed_replays_the_same_trace_with_an_author_s_tools() {
    let tools =
        world_tools(|dir| Toolbox::new().with(tools::PublishReport::new(dir.to_path_buf())));
    let scenario = Scenario::by_name("kill-after-effect").expect("scenario");
    for seed in [3, 17] {
        let first = Sim::new(&scenario).tools(&tools).run(seed);
        let again = Sim::new(&scenario).tools(&tools).run(seed);
        assert_eq!(first.trace_hash, again.trace_hash, "seed {seed}");
    }
}

/// The bug the trait exists to prevent: the report written where everyone sees it at once,
/// and the work done whatever became of the task.
struct HastyReport {
    dir: PathBuf,
}

impl Tool for HastyReport {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "publish_report",
            description: "Writes a report file at once.",
            input_schema: json!({"type": "object"}),
            task_support: TaskSupport::Optional,
        }
    }

    fn run(&self, call: ToolCall) -> BoxFuture<'static, ToolStep> {
        let dir = self.dir.clone();
        Box::pin(async move {
            let delay_ms = call.arguments.get("delay_ms").and_then(Value::as_u64);
            call.env().sleep(delay_ms.unwrap_or(0)).await;
            let id = call.effect_id().to_owned();
            std::fs::create_dir_all(&dir).expect("the world's folder");
            std::fs::write(report_path(&dir, &id), "# hasty\n").expect("written");
            ToolStep::Finished(TaskOutcome::Result {
                result: json!({"content": [], "isError": false, "structuredContent": Map::new()}),
            })
        })
    }
}

#[test]
fn a_tool_whose_effect_escapes_publish_is_caught() {
    let tools = world_tools(|dir| {
        Toolbox::new().with(HastyReport {
            dir: dir.to_path_buf(),
        })
    });
    let caught: Vec<String> = run(&tools, "cancel-at-decide", 0..40)
        .iter()
        .flat_map(|outcome| &outcome.violations)
        .filter(|violation| {
            violation
                .detail
                .starts_with("the world: a cancelled task's effect exists")
        })
        .map(|violation| violation.to_string())
        .collect();
    eprintln!(
        "hasty report: {} cancelled reports left a file in 40 seeds",
        caught.len()
    );
    assert!(
        !caught.is_empty(),
        "a cancelled report that left its file went unseen"
    );
}
