//! The oracle of the probe's workload: invariants over a black-box history, each one
//! function, apart from the code that made the history.
//!
//! What the wire lets it judge is less than the simulation's oracle (`check`) sees: no
//! versions, no store, real clocks. So orders come from real time only — a read that
//! *completed* before another was *invoked* happened before it — and concurrent reads are
//! never compared. The invariants:
//!
//! - **unique ids**: no two creates are answered with the same task id;
//! - **isolation**: no identity is ever shown a task another identity created (a read, a
//!   list entry, a result);
//! - **terminal latch**: once a read showed a task terminal, every read invoked after it
//!   shows the same status (this is also the legal-transitions rule: from a terminal status
//!   nothing is legal, and the non-terminal ones can reach each other);
//! - **gone stays gone**: once the owner's read says unknown (`-32602`), no later read
//!   shows the task;
//! - **one result**: every `tasks/result` payload and every inlined outcome of a task is
//!   the same, and a task seen cancelled never yields a completion payload;
//! - **liveness**: by the end of the liveness phase every task is terminal or gone;
//! - **answered**: every request got an answer (no kills yet, so none may be lost).

use super::peer::{RELATED_TASK, TaskView, code};
use super::shapes::{Outcomes, status_name};
use super::transport::Exchange;
use super::workload::{Op, OpKind};
use super::{CheckOutcome, Level};
use crate::contract::{Era, TaskStatus};
use serde_json::Value;
use std::collections::BTreeMap;

/// Reads one task may contribute to the pairwise checks (a bound on their cost).
const READS_PER_TASK_MAX: usize = 2_000;

/// One observation of a task's status.
#[derive(Clone, Debug)]
struct Read {
    op: usize,
    invoked_ms: u64,
    completed_ms: u64,
    /// `None`: the owner was told the task is unknown.
    status: Option<TaskStatus>,
}

/// The tasks an answer shows, each with its status: a create, a flat Task, list entries.
fn shown(op: &Op, era: Era) -> Vec<TaskView> {
    let Some(result) = op.exchange.result() else {
        return Vec::new();
    };
    match op.kind {
        OpKind::Create => match era {
            Era::Core2025 => result
                .get("task")
                .and_then(|task| TaskView::read(task, era))
                .into_iter()
                .collect(),
            Era::Extension2026 if result["resultType"] == "task" => {
                TaskView::read(result, era).into_iter().collect()
            }
            Era::Extension2026 => Vec::new(),
        },
        OpKind::List => result["tasks"]
            .as_array()
            .map(|tasks| {
                tasks
                    .iter()
                    .filter_map(|task| TaskView::read(task, era))
                    .collect()
            })
            .unwrap_or_default(),
        OpKind::Result => Vec::new(),
        OpKind::Get | OpKind::ForeignGet | OpKind::Cancel | OpKind::Settle => {
            TaskView::read(result, era).into_iter().collect()
        }
    }
}

/// Judges `ops` (recorded in `era`); `owners` maps each task to the identity that created it.
pub fn judge(ops: &[Op], owners: &[(String, String)], era: Era) -> Vec<CheckOutcome> {
    let mut out = Outcomes::new(era);
    let owner_of: BTreeMap<&str, &str> = owners
        .iter()
        .map(|(task, owner)| (task.as_str(), owner.as_str()))
        .collect();
    unique_ids(ops, era, &mut out);
    isolation(ops, era, &owner_of, &mut out);
    let reads = reads_by_task(ops, era, &owner_of);
    terminal_latch(ops, &reads, &mut out);
    gone_stays_gone(ops, &reads, &mut out);
    one_result(ops, era, &reads, &mut out);
    liveness(ops, &reads, &owner_of, &mut out);
    answered(ops, &mut out);
    out.list
}

fn unique_ids(ops: &[Op], era: Era, out: &mut Outcomes) {
    let mut first: BTreeMap<String, usize> = BTreeMap::new();
    let mut problem = None;
    let mut evidence = Vec::new();
    let mut creates = 0;
    for (index, op) in ops.iter().enumerate() {
        if op.kind != OpKind::Create {
            continue;
        }
        for view in shown(op, era) {
            creates += 1;
            if let Some(&earlier) = first.get(&view.task_id) {
                if problem.is_none() {
                    problem = Some(format!(
                        "two creates answered the same task id {}",
                        view.task_id
                    ));
                    evidence = vec![&ops[earlier].exchange, &op.exchange];
                }
            } else {
                first.insert(view.task_id, index);
            }
        }
    }
    out.judge(
        "workload.unique-task-ids",
        Level::Must,
        &format!("{creates} creates, {creates} distinct ids"),
        problem,
        &evidence,
    );
}

fn isolation(ops: &[Op], era: Era, owner_of: &BTreeMap<&str, &str>, out: &mut Outcomes) {
    let mut problem = None;
    let mut evidence = Vec::new();
    let mut foreign_reads = 0;
    for op in ops {
        foreign_reads += usize::from(op.kind == OpKind::ForeignGet);
        for view in shown(op, era) {
            if let Some(owner) = owner_of.get(view.task_id.as_str())
                && *owner != op.identity
                && problem.is_none()
            {
                problem = Some(format!(
                    "{} was shown {owner}'s task {} ({:?})",
                    op.identity, view.task_id, op.kind
                ));
                evidence.push(&op.exchange);
            }
        }
        if op.kind == OpKind::ForeignGet && op.exchange.result().is_some() && problem.is_none() {
            problem = Some(format!(
                "{} read another identity's task {}",
                op.identity,
                op.task_id.as_deref().unwrap_or("")
            ));
            evidence.push(&op.exchange);
        }
    }
    out.judge(
        "workload.isolation",
        Level::Must,
        &format!("no identity shown another's task ({foreign_reads} foreign reads refused)"),
        problem,
        &evidence,
    );
}

/// The owner's reads of each task, in invocation order.
fn reads_by_task(
    ops: &[Op],
    era: Era,
    owner_of: &BTreeMap<&str, &str>,
) -> BTreeMap<String, Vec<Read>> {
    let mut reads: BTreeMap<String, Vec<Read>> = BTreeMap::new();
    for (index, op) in ops.iter().enumerate() {
        let read = |status| Read {
            op: index,
            invoked_ms: op.exchange.invoked_ms,
            completed_ms: op.exchange.completed_ms,
            status,
        };
        for view in shown(op, era) {
            if owner_of.get(view.task_id.as_str()) == Some(&op.identity.as_str())
                && let Some(status) = view.status
            {
                reads
                    .entry(view.task_id)
                    .or_default()
                    .push(read(Some(status)));
            }
        }
        if matches!(op.kind, OpKind::Get | OpKind::Settle)
            && op.exchange.error_code() == Some(code::INVALID_PARAMS)
            && let Some(task) = &op.task_id
        {
            reads.entry(task.clone()).or_default().push(read(None));
        }
    }
    for list in reads.values_mut() {
        list.sort_by_key(|read| (read.invoked_ms, read.op));
        list.truncate(READS_PER_TASK_MAX);
    }
    reads
}

fn terminal_latch(ops: &[Op], reads: &BTreeMap<String, Vec<Read>>, out: &mut Outcomes) {
    let mut problem = None;
    let mut evidence = Vec::new();
    let mut count = 0;
    'tasks: for (task, list) in reads {
        count += list.len();
        for (at, earlier) in list.iter().enumerate() {
            let Some(ended) = earlier.status.filter(|status| status.is_terminal()) else {
                continue;
            };
            for later in &list[at + 1..] {
                if later.invoked_ms > earlier.completed_ms
                    && let Some(status) = later.status
                    && status != ended
                {
                    problem = Some(format!(
                        "{task} read {} (answered at {} ms), then {} (asked at {} ms)",
                        status_name(Some(ended)),
                        earlier.completed_ms,
                        status_name(Some(status)),
                        later.invoked_ms
                    ));
                    evidence = vec![&ops[earlier.op].exchange, &ops[later.op].exchange];
                    break 'tasks;
                }
            }
        }
    }
    out.judge(
        "workload.terminal-latch",
        Level::Must,
        &format!(
            "{count} reads of {} tasks: no terminal status ever changed",
            reads.len()
        ),
        problem,
        &evidence,
    );
}

fn gone_stays_gone(ops: &[Op], reads: &BTreeMap<String, Vec<Read>>, out: &mut Outcomes) {
    let mut problem = None;
    let mut evidence = Vec::new();
    let mut gone = 0;
    'tasks: for (task, list) in reads {
        let Some(first_gone) = list.iter().find(|read| read.status.is_none()) else {
            continue;
        };
        gone += 1;
        for later in list {
            if later.invoked_ms > first_gone.completed_ms && later.status.is_some() {
                problem = Some(format!(
                    "{task} read as unknown (answered at {} ms), then shown again (asked at {} ms)",
                    first_gone.completed_ms, later.invoked_ms
                ));
                evidence = vec![&ops[first_gone.op].exchange, &ops[later.op].exchange];
                break 'tasks;
            }
        }
    }
    out.judge(
        "workload.gone-stays-gone",
        Level::Must,
        &format!("{gone} tasks read as unknown, none shown again"),
        problem,
        &evidence,
    );
}

/// A result payload as compared across reads: the result without `_meta`.
fn payload(result: &Value) -> Value {
    let mut result = result.clone();
    if let Value::Object(object) = &mut result {
        object.remove("_meta");
        object.remove("resultType");
    }
    result
}

fn one_result(ops: &[Op], era: Era, reads: &BTreeMap<String, Vec<Read>>, out: &mut Outcomes) {
    let mut payloads: BTreeMap<String, Vec<(Value, &Exchange)>> = BTreeMap::new();
    for op in ops {
        let Some(task) = &op.task_id else { continue };
        match (op.kind, era) {
            (OpKind::Result, _) => {
                if let Some(result) = op.exchange.result()
                    && result["_meta"][RELATED_TASK]["taskId"] == task.as_str()
                {
                    payloads
                        .entry(task.clone())
                        .or_default()
                        .push((payload(result), &op.exchange));
                }
            }
            (OpKind::Get | OpKind::Settle, Era::Extension2026) => {
                if let Some(result) = op.exchange.result().and_then(|result| result.get("result")) {
                    payloads
                        .entry(task.clone())
                        .or_default()
                        .push((payload(result), &op.exchange));
                }
            }
            _ => {}
        }
    }
    let mut problem = None;
    let mut evidence = Vec::new();
    for (task, list) in &payloads {
        if let Some((_, other)) = list.iter().find(|(value, _)| *value != list[0].0) {
            problem = Some(format!("{task} yielded two different results"));
            evidence = vec![list[0].1, *other];
            break;
        }
        let cancelled = reads.get(task).is_some_and(|reads| {
            reads
                .iter()
                .any(|read| read.status == Some(TaskStatus::Cancelled))
        });
        if cancelled
            && let Some((_, exchange)) = list.iter().find(|(value, _)| value["isError"] != true)
        {
            problem = Some(format!(
                "{task} was read cancelled, yet yielded a completion payload"
            ));
            evidence = vec![*exchange];
            break;
        }
    }
    out.judge(
        "workload.one-result",
        Level::Must,
        &format!(
            "{} tasks' results compared: one each, none for a cancelled task",
            payloads.len()
        ),
        problem,
        &evidence,
    );
}

fn liveness(
    ops: &[Op],
    reads: &BTreeMap<String, Vec<Read>>,
    owner_of: &BTreeMap<&str, &str>,
    out: &mut Outcomes,
) {
    let mut stuck = Vec::new();
    let mut evidence = Vec::new();
    for task in owner_of.keys() {
        let last = reads.get(*task).and_then(|list| {
            list.iter()
                .rfind(|read| ops[read.op].kind == OpKind::Settle)
        });
        let ended = last.is_some_and(|read| read.status.is_none_or(TaskStatus::is_terminal));
        if !ended {
            stuck.push(*task);
            if let Some(read) = last
                && evidence.len() < 3
            {
                evidence.push(&ops[read.op].exchange);
            }
        }
    }
    out.judge(
        "workload.liveness",
        Level::Must,
        &format!("all {} tasks ended (terminal or gone)", owner_of.len()),
        (!stuck.is_empty()).then(|| {
            format!(
                "{} of {} tasks never ended: {}",
                stuck.len(),
                owner_of.len(),
                stuck.iter().take(5).copied().collect::<Vec<_>>().join(", ")
            )
        }),
        &evidence,
    );
}

fn answered(ops: &[Op], out: &mut Outcomes) {
    let lost: Vec<&Op> = ops
        .iter()
        .filter(|op| op.exchange.response.is_none())
        .collect();
    let evidence: Vec<&Exchange> = lost.iter().take(3).map(|op| &op.exchange).collect();
    out.judge(
        "workload.every-request-answered",
        Level::Must,
        &format!("{} requests, every one answered", ops.len()),
        (!lost.is_empty())
            .then(|| format!("{} of {} requests got no answer", lost.len(), ops.len())),
        &evidence,
    );
}
