//! `hostile.cancelled-without-effect`: a task that ends cancelled must not have performed
//! its side effect. The probe sees effects where the user says they show: a file per task
//! (`--effect-path exports/{taskId}.json`) or a line in a shared log (`--effect-log FILE`
//! with `--effect-match PATTERN`, where `{taskId}` is the task's id and `{tag}` a unique
//! tag the probe writes into each `{tag}` of the call's `--args`).
//!
//! The premise is read before any verdict: the first task runs to the end, and a completed
//! task's effect must show where the probe looks, or the check could never fail (a pattern
//! that matches nothing passes everything) and is n/a.

use super::hostile::{peer_status, poll_to_end};
use super::outcomes::Outcomes;
use super::shapes::{Context, create_task_tagged};
use super::transport::one_line;
use super::{Config, Level};
use crate::contract::TaskStatus;
use std::time::Duration;

/// Rounds of [`cancel_at_completion`] at most, and the time they may take in all.
const AIMED_ROUNDS_MAX: u64 = 100;
const AIMED_ROUNDS_MS_MAX: u64 = 30_000;
/// How long a write already under way may take to land before the probe looks, in ms.
const SETTLE_MS: u64 = 100;
const CHECK: &str = "hostile.cancelled-without-effect";

/// Where a task's effect shows as a line of a shared log.
#[derive(Clone, Debug)]
pub struct EffectLog {
    /// The log file.
    pub path: String,
    /// What a task's line contains: `{taskId}` and `{tag}` are replaced.
    pub pattern: String,
}

/// A tag no other call of this process carries: the log is shared by every era, round
/// and rerun, so the tag is drawn from the wall clock (the probe's clock is real anyway).
fn fresh_tag(round: u64) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    format!("tl{nanos:x}r{round}")
}

/// Where the effect of `task_id` (created with `tag`) shows, if it does.
fn effect_seen(config: &Config, task_id: &str, tag: &str) -> Option<String> {
    if let Some(template) = &config.effect_path {
        let path = template.replace("{taskId}", task_id);
        if std::path::Path::new(&path).exists() {
            return Some(format!("its effect {path} exists"));
        }
    }
    let log = config.effect_log.as_ref()?;
    let needle = log
        .pattern
        .replace("{taskId}", task_id)
        .replace("{tag}", tag);
    let text = std::fs::read_to_string(&log.path).ok()?;
    let line = text.lines().find(|line| line.contains(&needle))?;
    Some(format!(
        "its effect is in {}: {}",
        log.path,
        one_line(line, 160)
    ))
}

/// Where the probe looks, in words.
fn looked_at(config: &Config) -> String {
    let mut places = Vec::new();
    if let Some(template) = &config.effect_path {
        places.push(format!("--effect-path {template}"));
    }
    if let Some(log) = &config.effect_log {
        places.push(format!(
            "--effect-log {} --effect-match {:?}",
            log.path, log.pattern
        ));
    }
    places.join(" and ")
}

/// Cancels aimed at the moment a task completes, with its effect observed: one task is
/// run to the end to learn how long the tool takes (and that its effect shows); then each
/// round creates a task, cancels it at a seeded point of 90–110 % of that time, waits for
/// its end and looks for its effect.
pub async fn cancel_at_completion(context: &Context<'_>, out: &mut Outcomes) {
    let config = context.config;
    if config.effect_path.is_none() && config.effect_log.is_none() {
        out.not_applicable(
            CHECK,
            Level::Must,
            "n/a: the probe sees no effects (give --effect-path 'exports/{taskId}.json', or \
             --effect-log FILE with --effect-match)",
        );
        return;
    }
    if !context.opened.facts.cancel() {
        out.not_applicable(CHECK, Level::Must, "n/a: tasks.cancel is not declared");
        return;
    }
    let Some(duration_ms) = first_task(context, out).await else {
        return;
    };
    aimed_rounds(context, out, duration_ms).await;
}

/// Runs the first task to the end: how long it took, or `None` with the check n/a.
async fn first_task(context: &Context<'_>, out: &mut Outcomes) -> Option<u64> {
    let peer = &context.opened.peer;
    let task_ms = context.config.task_timeout.as_millis() as u64;
    let tag = fresh_tag(0);
    let (create, view) = match create_task_tagged(context, Some(&tag)).await {
        Ok(created) => created,
        Err(why) => {
            out.not_applicable(CHECK, Level::Must, &why);
            return None;
        }
    };
    let Some(end) = poll_to_end(peer, &view.task_id, context, task_ms).await else {
        out.not_applicable(
            CHECK,
            Level::Must,
            &format!("n/a: the first task did not end within --task-timeout {task_ms} ms"),
        );
        return None;
    };
    if peer_status(peer, &end) == Some(TaskStatus::Completed) {
        tokio::time::sleep(Duration::from_millis(SETTLE_MS)).await;
        if effect_seen(context.config, &view.task_id, &tag).is_none() {
            out.not_applicable(
                CHECK,
                Level::Must,
                &format!(
                    "n/a: task {} completed, yet its effect did not show at {}: the probe \
                     would see no effect of a cancelled one either",
                    view.task_id,
                    looked_at(context.config)
                ),
            );
            return None;
        }
    }
    Some(end.invoked_ms.saturating_sub(create.invoked_ms))
}

/// The aimed rounds, judged.
async fn aimed_rounds(context: &Context<'_>, out: &mut Outcomes, duration_ms: u64) {
    let peer = &context.opened.peer;
    let task_ms = context.config.task_timeout.as_millis() as u64;
    let mut draw = super::workload::Draw::new(context.config.seed, 18);
    let started_ms = context.clock.now_ms();
    let (mut rounds, mut cancelled, mut completed) = (0, 0, 0);
    let mut problem = None;
    let mut evidence = Vec::new();
    while rounds < AIMED_ROUNDS_MAX
        && context.clock.now_ms() < started_ms + AIMED_ROUNDS_MS_MAX
        && problem.is_none()
    {
        rounds += 1;
        let tag = fresh_tag(rounds);
        let Ok((create, task)) = create_task_tagged(context, Some(&tag)).await else {
            break;
        };
        let aim_ms = create.invoked_ms + duration_ms * 9 / 10 + draw.below(duration_ms / 5 + 1);
        let now_ms = context.clock.now_ms();
        tokio::time::sleep(Duration::from_millis(aim_ms.saturating_sub(now_ms))).await;
        let cancel = peer.cancel(&task.task_id).await;
        let last = match poll_to_end(peer, &task.task_id, context, task_ms).await {
            Some(last) => last,
            None => peer.get(&task.task_id).await,
        };
        match peer_status(peer, &last) {
            Some(TaskStatus::Cancelled) => {
                cancelled += 1;
                tokio::time::sleep(Duration::from_millis(SETTLE_MS)).await;
                if let Some(seen) = effect_seen(context.config, &task.task_id, &tag) {
                    problem = Some(format!(
                        "task {} ends cancelled, yet {seen} (round {rounds}, cancel sent {} ms \
                         after the create, the tool takes about {duration_ms} ms)",
                        task.task_id,
                        cancel.invoked_ms.saturating_sub(create.invoked_ms)
                    ));
                    evidence = vec![create, cancel, last];
                }
            }
            Some(TaskStatus::Completed) => completed += 1,
            _ => {}
        }
    }
    out.judge(
        CHECK,
        Level::Must,
        &format!(
            "{rounds} cancels aimed at the completion moment (the tool takes about \
             {duration_ms} ms): {cancelled} ended cancelled, none with its effect; \
             {completed} completed"
        ),
        problem,
        &evidence.iter().collect::<Vec<_>>(),
    );
}
