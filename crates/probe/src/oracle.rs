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
//! - **kept until TTL**: no task reads as unknown before its TTL has run (from the moment
//!   its create was sent) — across a kill too when the server claims durability
//!   (`--durable`);
//! - **liveness**: by the end of the liveness phase every task is terminal or gone;
//! - **answered**: every request got an answer, except those in flight while the probe had
//!   the server killed;
//! - **updates acknowledged** (2026-07-28): every `tasks/update` of the client's own task
//!   is the empty acknowledgement (`resultType: "complete"`) — answers to questions never
//!   asked included, which the server must ignore — or `-32602` for a task gone.

use super::outcomes::Outcomes;
use super::peer::{RELATED_TASK, TaskView, code};
use super::shapes::status_name;
use super::transport::Exchange;
use super::workload::{Kill, Op, OpKind};
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
        OpKind::Result | OpKind::Update => Vec::new(),
        OpKind::Get | OpKind::ForeignGet | OpKind::Cancel | OpKind::Settle => {
            TaskView::read(result, era).into_iter().collect()
        }
    }
}

/// Judges `ops` (recorded in `era`); `owners` maps each task to the identity that created
/// it; `kills` are the restarts the probe caused; `durable`: the server claims its tasks
/// survive them.
pub fn judge(
    ops: &[Op],
    owners: &[(String, String)],
    era: Era,
    kills: &[Kill],
    durable: bool,
) -> Vec<CheckOutcome> {
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
    kept_until_ttl(ops, era, &reads, kills, durable, &mut out);
    liveness(ops, &reads, &owner_of, &mut out);
    answered(ops, kills, &mut out);
    if era == Era::Extension2026 {
        updates_acknowledged(ops, &mut out);
    }
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
    if payloads.is_empty() {
        let asked = ops.iter().filter(|op| op.kind == OpKind::Result).count();
        let unserved = ops
            .iter()
            .filter(|op| {
                op.kind == OpKind::Result
                    && op.exchange.error_code() == Some(code::METHOD_NOT_FOUND)
            })
            .count();
        out.not_applicable(
            "workload.one-result",
            Level::Must,
            &format!(
                "n/a: no result was read, so none could be compared ({asked} tasks/result \
                 calls, {unserved} answered -32601{})",
                if era == Era::Extension2026 {
                    "; no tasks/get inlined one"
                } else {
                    ""
                }
            ),
        );
        return;
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

/// Whether `exchange` was in flight while the server was down.
fn during_kill(exchange: &Exchange, kills: &[Kill]) -> bool {
    kills
        .iter()
        .any(|kill| exchange.invoked_ms <= kill.ready_ms && exchange.completed_ms >= kill.killed_ms)
}

fn kept_until_ttl(
    ops: &[Op],
    era: Era,
    reads: &BTreeMap<String, Vec<Read>>,
    kills: &[Kill],
    durable: bool,
    out: &mut Outcomes,
) {
    let mut problem = None;
    let mut evidence = Vec::new();
    let mut excused = 0;
    'creates: for op in ops.iter().filter(|op| op.kind == OpKind::Create) {
        for view in shown(op, era) {
            let Some(list) = reads.get(&view.task_id) else {
                continue;
            };
            // The task expires no earlier than its TTL after the create was sent.
            let expires_ms = view
                .fields
                .ttl_ms
                .map_or(u64::MAX, |ttl| op.exchange.invoked_ms.saturating_add(ttl));
            for read in list.iter().filter(|read| read.status.is_none()) {
                if read.invoked_ms >= expires_ms {
                    continue;
                }
                let killed_between = kills.iter().any(|kill| {
                    kill.killed_ms > op.exchange.invoked_ms && kill.killed_ms < read.completed_ms
                });
                if killed_between && !durable {
                    excused += 1;
                    continue;
                }
                problem = Some(format!(
                    "{} read as unknown {} ms after its create was sent, before its TTL ({}){}",
                    view.task_id,
                    read.invoked_ms - op.exchange.invoked_ms,
                    view.fields
                        .ttl_ms
                        .map_or("unlimited".to_owned(), |ttl| format!("{ttl} ms")),
                    if killed_between {
                        " (lost across a restart, and the server claims durability)"
                    } else {
                        ""
                    }
                ));
                evidence = vec![&op.exchange, &ops[read.op].exchange];
                break 'creates;
            }
        }
    }
    let passed = match (kills.len(), durable) {
        (0, _) => "no task read as unknown before its TTL".to_owned(),
        (n, true) => format!("no task lost before its TTL, across {n} kill(s) (--durable)"),
        (n, false) => format!(
            "no task lost before its TTL except across the {n} kill(s) ({excused} reads excused: \
             the server does not claim durability)"
        ),
    };
    out.judge(
        "workload.kept-until-ttl",
        Level::Must,
        &passed,
        problem,
        &evidence,
    );
}

fn answered(ops: &[Op], kills: &[Kill], out: &mut Outcomes) {
    let lost: Vec<&Op> = ops
        .iter()
        .filter(|op| op.exchange.response.is_none() && !during_kill(&op.exchange, kills))
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

fn updates_acknowledged(ops: &[Op], out: &mut Outcomes) {
    let updates: Vec<&Op> = ops.iter().filter(|op| op.kind == OpKind::Update).collect();
    if updates
        .iter()
        .any(|op| op.exchange.error_code() == Some(code::METHOD_NOT_FOUND))
    {
        out.not_applicable(
            "workload.updates-acknowledged",
            Level::Must,
            "n/a: tasks/update answered -32601, served to no one (the finding is \
             shapes.methods.advertised-served)",
        );
        return;
    }
    let refused = updates.iter().find(|op| {
        let acked = op
            .exchange
            .result()
            .is_some_and(|result| result["resultType"] == "complete");
        let gone = op.exchange.error_code() == Some(code::INVALID_PARAMS);
        op.exchange.response.is_some() && !acked && !gone
    });
    out.judge(
        "workload.updates-acknowledged",
        Level::Must,
        &format!(
            "{} tasks/update of the client's own tasks, each acknowledged",
            updates.len()
        ),
        refused.map(|op| {
            format!(
                "tasks/update of {}'s own task {} was not acknowledged",
                op.identity,
                op.task_id.as_deref().unwrap_or("")
            )
        }),
        &refused
            .map(|op| &op.exchange)
            .into_iter()
            .collect::<Vec<_>>(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn op(kind: OpKind, task: &str, response: Value) -> Op {
        let mut exchange = Exchange::begin("a", "{}", 0);
        exchange.response = Some(response);
        Op {
            client: 0,
            identity: "a".to_owned(),
            kind,
            task_id: Some(task.to_owned()),
            exchange,
        }
    }

    /// `tasks/result` served by no one: "0 results compared" is not a pass.
    #[test]
    fn no_result_read_is_no_result_compared() {
        let unserved = json!({"jsonrpc": "2.0", "id": 1,
            "error": {"code": -32601, "message": "Method not found"}});
        let ops = vec![op(OpKind::Result, "t1", unserved)];
        let mut out = Outcomes::new(Era::Core2025);
        one_result(&ops, Era::Core2025, &BTreeMap::new(), &mut out);
        let check = &out.list[0];
        assert_eq!(check.verdict, crate::Verdict::NotApplicable, "{check:?}");
        assert!(
            check.detail.contains("1 answered -32601"),
            "{}",
            check.detail
        );

        let served = json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [],
            "_meta": {RELATED_TASK: {"taskId": "t1"}}}});
        let ops = vec![op(OpKind::Result, "t1", served)];
        let mut out = Outcomes::new(Era::Core2025);
        one_result(&ops, Era::Core2025, &BTreeMap::new(), &mut out);
        assert_eq!(out.list[0].verdict, crate::Verdict::Pass);
    }
}
