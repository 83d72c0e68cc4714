//! One function per invariant of docs/design.md §5. The per-task ones read a
//! [`TaskView`]: the task's events and what its applied changes established.

use super::{
    AppliedKind, Asked, CheckContext, ClientOp, ClientResult, Event, Push, Revealed, TaskFacts,
    Violation, violation,
};
use crate::contract::{Decision, Era, TaskOutcome, TaskStatus};
use std::collections::BTreeMap;

/// A per-task invariant.
type PerTask = fn(&TaskView<'_>, &CheckContext, &mut Vec<Violation>);

/// The per-task invariants, in the order their violations are reported.
pub(super) const PER_TASK: [PerTask; 10] = [
    i1_one_terminal,
    i2_cancel_wins,
    i3_no_stale_write,
    i6_effect_once,
    i17_effect_iff_completed,
    i18_point_of_no_return_holds,
    i7_expiry,
    i8_liveness,
    i9_result_shape,
    i10_record_wins,
];

/// One task's events, and what its applied changes established.
pub(super) struct TaskView<'h> {
    history: &'h [Event],
    task_id: &'h str,
    facts: &'h TaskFacts,
    /// The last terminal change applied: its event, status and outcome.
    terminal: Option<(usize, TaskStatus, Option<&'h TaskOutcome>)>,
    /// The expiry its creation set.
    expires_at_ms: Option<u64>,
    /// The version of its last applied change.
    last_version: u64,
    /// Whether its creation was applied (a task only read, e.g. probed, was not).
    created: bool,
}

impl<'h> TaskView<'h> {
    pub(super) fn new(history: &'h [Event], task_id: &'h str, facts: &'h TaskFacts) -> Self {
        let mut view = TaskView {
            history,
            task_id,
            facts,
            terminal: None,
            expires_at_ms: None,
            last_version: 0,
            created: false,
        };
        for (index, change) in applied(history, facts) {
            if change.kind == AppliedKind::Create {
                view.created = true;
                view.expires_at_ms = change.expires_at_ms;
            }
            view.last_version = change.version;
            if change.status.is_terminal() {
                view.terminal = Some((index, change.status, change.outcome));
            }
        }
        view
    }

    /// The applied changes, in order.
    fn applied(&self) -> impl Iterator<Item = (usize, Change<'h>)> + 'h {
        applied(self.history, self.facts)
    }

    /// Every successful client answer that showed this task: the event, the operation,
    /// the decision and what it showed of the task.
    /// Where the request of the client event at `index` was sent: the first history
    /// position its answer may reflect.
    fn sent(&self, index: usize) -> usize {
        match &self.history[index] {
            Event::Client {
                sent_after: Some(position),
                ..
            } => (*position).min(index),
            _ => index,
        }
    }

    fn reads(&self) -> impl Iterator<Item = (usize, &'h ClientOp, Decision, &'h Revealed)> + '_ {
        let (history, task_id) = (self.history, self.task_id);
        self.facts.reads.iter().flat_map(move |&index| {
            let shown = match &history[index] {
                Event::Client {
                    op,
                    result: ClientResult::Ok { decision, revealed },
                    ..
                } => Some((op, *decision, revealed)),
                _ => None,
            };
            shown.into_iter().flat_map(move |(op, decision, revealed)| {
                revealed
                    .iter()
                    .filter(move |seen| seen.task_id == task_id)
                    .map(move |seen| (index, op, decision, seen))
            })
        })
    }
}

/// A task's applied changes, in order.
fn applied<'h>(
    history: &'h [Event],
    facts: &'h TaskFacts,
) -> impl Iterator<Item = (usize, Change<'h>)> + 'h {
    facts.applied.iter().filter_map(move |&index| {
        let Event::Applied {
            kind,
            expected_version,
            version,
            status,
            outcome,
            expires_at_ms,
            at_ms,
            ..
        } = &history[index]
        else {
            return None;
        };
        Some((
            index,
            Change {
                kind: *kind,
                expected_version: *expected_version,
                version: *version,
                status: *status,
                outcome: outcome.as_ref(),
                expires_at_ms: *expires_at_ms,
                at_ms: *at_ms,
            },
        ))
    })
}

/// An applied change, borrowed from its event.
struct Change<'h> {
    kind: AppliedKind,
    expected_version: Option<u64>,
    version: u64,
    status: TaskStatus,
    outcome: Option<&'h TaskOutcome>,
    expires_at_ms: Option<u64>,
    at_ms: u64,
}

/// I1: a task reaches at most one terminal status; after it, no change applies and no read
/// shows another status.
fn i1_one_terminal(task: &TaskView<'_>, _: &CheckContext, out: &mut Vec<Violation>) {
    let mut terminal: Option<(usize, TaskStatus)> = None;
    for (index, change) in task.applied() {
        if let Some((first, first_status)) = terminal {
            out.push(violation(
                "I1",
                task.task_id,
                format!("{first_status} was rewritten as {}", change.status),
                vec![first, index],
            ));
        }
        if change.status.is_terminal() {
            terminal = Some((index, change.status));
        }
    }
    let Some((first, first_status, _)) = task.terminal else {
        return;
    };
    // A read sent before the terminal write may answer with what it read then.
    for (index, _, _, seen) in task.reads() {
        if first < task.sent(index) && seen.status != first_status {
            out.push(violation(
                "I1",
                task.task_id,
                format!("read {} after terminal {first_status}", seen.status),
                vec![first, index],
            ));
        }
    }
}

/// I2: once a cancel is acknowledged, no read shows `completed` or `failed`.
fn i2_cancel_wins(task: &TaskView<'_>, _: &CheckContext, out: &mut Vec<Violation>) {
    let mut acknowledged: Option<usize> = None;
    for (index, op, decision, seen) in task.reads() {
        if decision == Decision::ApplyCancel
            && matches!(op, ClientOp::Cancel { task_id } if task_id == task.task_id)
        {
            acknowledged = Some(index);
        }
        if let Some(cancel) = acknowledged
            && cancel < index
            && matches!(seen.status, TaskStatus::Completed | TaskStatus::Failed)
        {
            out.push(violation(
                "I2",
                task.task_id,
                format!("read {} after an acknowledged cancel", seen.status),
                vec![cancel, index],
            ));
        }
    }
}

/// I3: every applied change was made against the version it expected, and versions grow
/// by exactly one per change.
fn i3_no_stale_write(task: &TaskView<'_>, _: &CheckContext, out: &mut Vec<Violation>) {
    let mut last_version = 0u64;
    for (index, change) in task.applied() {
        if change.version != last_version + 1 {
            out.push(violation(
                "I3",
                task.task_id,
                format!("version {last_version} -> {}", change.version),
                vec![index],
            ));
        }
        if let Some(expected) = change.expected_version
            && expected != last_version
        {
            out.push(violation(
                "I3",
                task.task_id,
                format!("applied at expected version {expected}, stored was {last_version}"),
                vec![index],
            ));
        }
        last_version = change.version;
    }
}

/// I6: at most one committed effect, and a completed result that names an effect names
/// the committed one.
fn i6_effect_once(task: &TaskView<'_>, _: &CheckContext, out: &mut Vec<Violation>) {
    let effects = &task.facts.effects;
    if effects.len() > 1 {
        out.push(violation(
            "I6",
            task.task_id,
            format!("{} committed effects", effects.len()),
            effects.clone(),
        ));
    }
    if let Some((index, TaskStatus::Completed, Some(TaskOutcome::Result { result }))) =
        task.terminal
    {
        let named = result["effect"].as_str();
        let committed = effects.first().and_then(|&e| match &task.history[e] {
            Event::Effect { effect_id, .. } => Some(effect_id.as_str()),
            _ => None,
        });
        if named.is_some() && named != committed {
            out.push(violation(
                "I6",
                task.task_id,
                format!("result names effect {named:?}, the sink holds {committed:?}"),
                vec![index],
            ));
        }
    }
}

/// I18: a 2026-07-28 task past its point of no return is never cancelled by its requestor
/// (cancellation is cooperative there: the cancel is acknowledged and the task runs on).
/// That a 2025-11-25 cancel past the point names the effect is I11's construction rule.
fn i18_point_of_no_return_holds(task: &TaskView<'_>, _: &CheckContext, out: &mut Vec<Violation>) {
    let mut declared: Option<usize> = None;
    for &index in &task.facts.applied {
        let Event::Applied { kind, stored, .. } = &task.history[index] else {
            continue;
        };
        if *kind == AppliedKind::Cancel
            && let Some(point) = declared
        {
            out.push(violation(
                "I18",
                task.task_id,
                "a 2026-07-28 task past its point of no return was cancelled by its requestor"
                    .into(),
                vec![point, index],
            ));
        }
        if stored.irreversible_effect.is_some() && stored.era == Era::Extension2026 {
            declared = declared.or(Some(index));
        }
    }
}

/// I17: a task's effect is published only if the task completed, and never before its
/// completion was applied; by the liveness deadline, a task unexpired then that ended any
/// other way has had everything it prepared discarded. (That a completed task's effect is
/// published, once, is I6.)
fn i17_effect_iff_completed(task: &TaskView<'_>, context: &CheckContext, out: &mut Vec<Violation>) {
    let completed_at = task
        .applied()
        .find(|(_, change)| change.status == TaskStatus::Completed)
        .map(|(index, _)| index);
    let final_status = task.terminal.map(|(_, status, _)| status);
    for &effect in &task.facts.effects {
        match (final_status, completed_at) {
            (Some(TaskStatus::Completed), Some(decided)) if effect > decided => {}
            (Some(TaskStatus::Completed), Some(decided)) => out.push(violation(
                "I17",
                task.task_id,
                "effect published before the completion was decided".into(),
                vec![effect, decided],
            )),
            (status, _) => out.push(violation(
                "I17",
                task.task_id,
                format!(
                    "effect published for a task that is {}",
                    status.map_or("not terminal", TaskStatus::as_str)
                ),
                vec![effect],
            )),
        }
    }
    let Some(deadline) = context.liveness_deadline_ms else {
        return;
    };
    if task
        .expires_at_ms
        .is_some_and(|expires| expires <= deadline)
    {
        return;
    }
    // (A completed task whose effect is missing at the end is I6's: its result names one.)
    match task.terminal {
        Some((index, status, _)) if status != TaskStatus::Completed => {
            // Settled by a discard, or (wrongly, reported above) by a publish.
            let last_prepared = task.facts.prepared.last();
            let last_settled = task.facts.discarded.last().max(task.facts.effects.last());
            if last_prepared.is_some() && last_prepared > last_settled {
                let mut events = task.facts.prepared.clone();
                events.push(index);
                out.push(violation(
                    "I17",
                    task.task_id,
                    format!(
                        "{}, a prepared effect still not discarded by the liveness deadline {deadline} ms",
                        status.as_str()
                    ),
                    events,
                ));
            }
        }
        _ => {}
    }
}

/// I7: no change applies at or after the expiry the task's creation set.
fn i7_expiry(task: &TaskView<'_>, _: &CheckContext, out: &mut Vec<Violation>) {
    let mut expires_at_ms: Option<u64> = None;
    for (index, change) in task.applied() {
        if change.kind == AppliedKind::Create {
            expires_at_ms = change.expires_at_ms;
        } else if let Some(expires) = expires_at_ms
            && change.at_ms >= expires
        {
            out.push(violation(
                "I7",
                task.task_id,
                format!(
                    "a change applied at {} ms, at or after expiry {expires} ms",
                    change.at_ms
                ),
                vec![index],
            ));
        }
    }
}

/// I8: after the faults healed, every accepted task unexpired at the liveness deadline is
/// terminal by then.
fn i8_liveness(task: &TaskView<'_>, context: &CheckContext, out: &mut Vec<Violation>) {
    let Some(deadline) = context.liveness_deadline_ms else {
        return;
    };
    let unexpired = task.expires_at_ms.is_none_or(|expires| expires > deadline);
    if task.created && unexpired && task.terminal.is_none() {
        out.push(violation(
            "I8",
            task.task_id,
            format!(
                "not terminal by the liveness deadline {deadline} ms (last version {})",
                task.last_version
            ),
            task.facts.applied.clone(),
        ));
    }
}

/// I9: `tasks/result` returns the wrapped request's result type, matching the status —
/// a `CallToolResult` for `completed`, an `isError` one or a JSON-RPC error for `failed` —
/// and, on the wire, the related-task `_meta` naming its task.
fn i9_result_shape(task: &TaskView<'_>, context: &CheckContext, out: &mut Vec<Violation>) {
    let is_error = |result: &serde_json::Value| result["isError"] == serde_json::Value::Bool(true);
    i9_inlined_shape(task, out);
    for (index, op, decision, seen) in task.reads() {
        if !matches!(op, ClientOp::Result { .. }) || decision != Decision::ReturnResult {
            continue;
        }
        let well_formed = match (&seen.status, &seen.outcome) {
            (TaskStatus::Completed, Some(TaskOutcome::Result { result })) => {
                result["content"].is_array() && !is_error(result)
            }
            (TaskStatus::Failed, Some(TaskOutcome::Result { result })) => is_error(result),
            (TaskStatus::Failed, Some(TaskOutcome::RpcError { .. })) => true,
            _ => false,
        };
        if !well_formed {
            out.push(violation(
                "I9",
                task.task_id,
                format!(
                    "RETURN_RESULT for a {} task carried {:?}",
                    seen.status, seen.outcome
                ),
                vec![index],
            ));
        }
        if context.wire
            && let Some(TaskOutcome::Result { result }) = &seen.outcome
            && result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"]
                != serde_json::Value::String(task.task_id.to_owned())
        {
            out.push(violation(
                "I9",
                task.task_id,
                "tasks/result answered without the related-task _meta naming its task".into(),
                vec![index],
            ));
        }
    }
}

/// I9 in the 2026-07-28 era, where `tasks/get` inlines the outcome: a `completed` task
/// carries a `CallToolResult` (an `isError` one included) and no related-task `_meta`, a
/// `failed` one a JSON-RPC error and no result, any other status no outcome.
fn i9_inlined_shape(task: &TaskView<'_>, out: &mut Vec<Violation>) {
    for (index, op, _decision, seen) in task.reads() {
        if !matches!(op, ClientOp::GetModern { .. }) {
            continue;
        }
        let well_formed = match (&seen.status, &seen.outcome) {
            (TaskStatus::Completed, Some(TaskOutcome::Result { result })) => {
                result["content"].is_array()
                    && result["_meta"]
                        .get("io.modelcontextprotocol/related-task")
                        .is_none()
            }
            (TaskStatus::Failed, Some(TaskOutcome::RpcError { .. })) => true,
            (TaskStatus::Completed | TaskStatus::Failed, _) => false,
            (_, outcome) => outcome.is_none(),
        };
        if !well_formed {
            out.push(violation(
                "I9",
                task.task_id,
                format!(
                    "a 2026-07-28 tasks/get of a {} task inlined {:?}",
                    seen.status, seen.outcome
                ),
                vec![index],
            ));
        }
    }
}

/// I10: no notification contradicts a later read: a later read is at least as new and, at
/// the same version, shows the same status. (Reads that carry no version are skipped.)
fn i10_record_wins(task: &TaskView<'_>, _: &CheckContext, out: &mut Vec<Violation>) {
    for &notice in &task.facts.notified {
        let Event::Notified {
            status, version, ..
        } = &task.history[notice]
        else {
            continue;
        };
        let later = |index: usize| task.sent(index) > notice;
        for (index, _, _, seen) in task.reads().filter(|(index, ..)| later(*index)) {
            let Some(seen_version) = seen.version else {
                continue;
            };
            if seen_version < *version || (seen_version == *version && seen.status != *status) {
                out.push(violation(
                    "I10",
                    task.task_id,
                    format!(
                        "notified {status} v{version}, later read {} v{seen_version}",
                        seen.status
                    ),
                    vec![notice, index],
                ));
            }
        }
    }
}

/// Each task's owner: the store's creation fact.
fn owners(history: &[Event]) -> BTreeMap<&str, &str> {
    history
        .iter()
        .filter_map(|event| match event {
            Event::Applied {
                task_id,
                auth_key,
                kind: AppliedKind::Create,
                ..
            } => Some((task_id.as_str(), auth_key.as_str())),
            _ => None,
        })
        .collect()
}

/// I4: no answer to caller A, and no message pushed to a session of A, reveals a task of
/// caller B. The owner is the store's creation fact; an answer's own claim only where no
/// fact exists.
pub(super) fn i4_tenant_isolation(history: &[Event], out: &mut Vec<Violation>) {
    let owners = owners(history);
    for (index, event) in history.iter().enumerate() {
        let (caller, shown, session): (&str, &[Revealed], Option<&str>) = match event {
            Event::Client {
                caller,
                result: ClientResult::Ok { revealed, .. },
                ..
            } => (caller, revealed, None),
            Event::Pushed {
                caller,
                session,
                message: Push::Status { seen, .. },
                ..
            } => (caller, std::slice::from_ref(seen), Some(session)),
            Event::Pushed {
                caller,
                session,
                message: Push::Ask { task_id, .. },
                ..
            } => {
                if let Some(owner) = owners.get(task_id.as_str())
                    && owner != caller
                {
                    let detail = format!(
                        "{caller}'s session {session} was asked a question of a task of {owner}"
                    );
                    out.push(violation("I4", task_id, detail, vec![index]));
                }
                continue;
            }
            _ => continue,
        };
        for seen in shown {
            let owner = owners
                .get(seen.task_id.as_str())
                .copied()
                .unwrap_or(seen.auth_key.as_str());
            if owner.is_empty() || owner == caller {
                continue;
            }
            let detail = match session {
                None => format!("{caller} was shown a task of {owner}"),
                Some(session) => {
                    format!("{caller}'s session {session} was pushed a task of {owner}")
                }
            };
            out.push(violation("I4", &seen.task_id, detail, vec![index]));
        }
    }
}

/// F1: no store error goes unexplained. The world injects outages by refusing calls
/// itself (never reaching the store); the simulation runs on one thread, so no store has a
/// transient (busy, timeout) to report either. An error from the store under test is a
/// bug the client would only ever see as "store unavailable".
pub(super) fn f1_explained_store_errors(history: &[Event], out: &mut Vec<Violation>) {
    for (index, event) in history.iter().enumerate() {
        if let Event::StoreError {
            op, task_id, error, ..
        } = event
        {
            out.push(violation(
                "F1",
                task_id,
                format!("the store failed {op} with no fault to explain it: {error}"),
                vec![index],
            ));
        }
    }
}

/// I5 as the store saw it: one caller's keyed request (its admissions matched by digest,
/// whatever key the server bound) admits one task while that task lives. A retry from a new
/// session — after a lost answer, a dropped connection, a restart — must find the first;
/// answered admissions alone cannot show it when the first answer never arrived.
pub(super) fn i5_one_admission_per_key(history: &[Event], out: &mut Vec<Violation>) {
    // (caller, digest) → the key a client sent it under, answered or not.
    let mut keys: BTreeMap<(&str, &str), &str> = BTreeMap::new();
    for event in history {
        if let Event::Client {
            caller,
            op:
                ClientOp::Create {
                    idempotency_key: Some(key),
                    digest,
                    ..
                },
            ..
        } = event
        {
            keys.entry((caller.as_str(), digest.as_str()))
                .or_insert(key.as_str());
        }
    }
    // (caller, key) → (task, its expiry, event) of the admission holding the key.
    let mut holders: BTreeMap<(&str, &str), (&str, Option<u64>, usize)> = BTreeMap::new();
    for (index, event) in history.iter().enumerate() {
        let Event::Applied {
            task_id,
            auth_key,
            kind: AppliedKind::Create,
            asked,
            expires_at_ms,
            at_ms,
            ..
        } = event
        else {
            continue;
        };
        let Asked::Create { digest, .. } = &**asked else {
            continue;
        };
        let Some(&key) = keys.get(&(auth_key.as_str(), digest.as_str())) else {
            continue;
        };
        let slot = (auth_key.as_str(), key);
        match holders.get(&slot) {
            Some(&(holder, expiry, first)) if expiry.is_none_or(|expires| *at_ms < expires) => {
                out.push(violation(
                    "I5",
                    task_id,
                    format!("key {key} admitted tasks {holder} and {task_id} for one request"),
                    vec![first, index],
                ));
            }
            _ => {
                holders.insert(slot, (task_id, *expires_at_ms, index));
            }
        }
    }
}

/// I5: per (caller, idempotency key) one task while it lives: the same digest replays it,
/// another digest is never admitted under it. A key's binding lives as long as its task
/// (docs/design.md §3): after the task expires, a new task under the key is a fresh
/// admission, not a second one.
pub(super) fn i5_idempotent_admission(history: &[Event], out: &mut Vec<Violation>) {
    let expiry: BTreeMap<&str, Option<u64>> = history
        .iter()
        .filter_map(|event| match event {
            Event::Applied {
                task_id,
                kind: AppliedKind::Create,
                expires_at_ms,
                ..
            } => Some((task_id.as_str(), *expires_at_ms)),
            _ => None,
        })
        .collect();
    // (caller, key) → (digest, task id, event) of the admission currently holding the key.
    let mut admitted: BTreeMap<(&str, &str), (&str, &str, usize)> = BTreeMap::new();
    for (index, event) in history.iter().enumerate() {
        let Event::Client {
            caller,
            op:
                ClientOp::Create {
                    idempotency_key: Some(key),
                    digest,
                    ..
                },
            result: ClientResult::Ok { decision, revealed },
            at_ms,
            ..
        } = event
        else {
            continue;
        };
        let Some(task) = revealed.first() else {
            continue;
        };
        if !matches!(decision, Decision::AcceptTask | Decision::ReplayTask) {
            continue;
        }
        let slot = (caller.as_str(), key.as_str());
        let holder_expired = admitted.get(&slot).is_some_and(|(_, holder, _)| {
            expiry
                .get(holder)
                .copied()
                .flatten()
                .is_some_and(|expires_at_ms| *at_ms >= expires_at_ms)
        });
        match admitted.get(&slot) {
            Some((first_digest, first_id, first)) if !holder_expired => {
                if first_digest != digest {
                    out.push(violation(
                        "I5",
                        &task.task_id,
                        format!("key {key} admitted two digests"),
                        vec![*first, index],
                    ));
                } else if *first_id != task.task_id {
                    out.push(violation(
                        "I5",
                        &task.task_id,
                        format!("key {key} gave tasks {first_id} and {}", task.task_id),
                        vec![*first, index],
                    ));
                }
            }
            _ => {
                admitted.insert(slot, (digest, &task.task_id, index));
            }
        }
    }
}
