//! Fault accounting (F2, F3) and the runtime's counters (C1–C4): every error, refusal and
//! redelivery a run shows must have a reason in what the world injected or what the store
//! applied before it. One pass in history order keeps each task's applied state, so every
//! event is judged against the state at its own position (the simulation's store calls
//! are atomic: nothing interleaves between a store call and its record).

use super::{
    AppliedKind, ClientOp, ClientResult, Event, Injection, RuntimeNote, Violation, violation,
};
use crate::contract::TaskStatus;
use std::collections::{BTreeMap, BTreeSet};

/// One task's state as its applied changes left it, and its outbox entry's claims.
#[derive(Default)]
struct TaskState<'h> {
    owner: &'h str,
    status: Option<TaskStatus>,
    version: u64,
    expires_at_ms: Option<u64>,
    /// The keys of the questions still open.
    open: BTreeSet<&'h str>,
    /// A 2026-07-28 task past its point of no return (a cancel is acknowledged, not
    /// applied).
    past_point: bool,
    /// The entry's last claim (its attempt) and whether an acknowledgement retired it.
    attempt: u32,
    retired: Option<usize>,
}

impl TaskState<'_> {
    fn expired(&self, at_ms: u64) -> bool {
        self.expires_at_ms.is_some_and(|expires| at_ms >= expires)
    }

    fn terminal(&self) -> bool {
        self.status.is_some_and(TaskStatus::is_terminal)
    }
}

/// The spec's transition table, restated (the oracle does not ask the contract).
fn legal(from: TaskStatus, to: TaskStatus) -> bool {
    use TaskStatus::*;
    matches!(
        (from, to),
        (Working, InputRequired)
            | (InputRequired, Working)
            | (Working | InputRequired, Completed | Failed | Cancelled)
    )
}

/// Violations of each rule, reported rule by rule (F2, F3, C1, C2, C3, C4), each in
/// history order.
#[derive(Default)]
struct Found {
    f2: Vec<Violation>,
    f3: Vec<Violation>,
    c1: Vec<Violation>,
    c2: Vec<Violation>,
    c3: Vec<Violation>,
    c4: Vec<Violation>,
}

/// F2 explained client failures, F3 explained refusals, C1 duplicates absorbed only for
/// terminal tasks, C2 claims report the stored state and are never made of a retired
/// entry, C3 deliveries dropped as gone only for gone or expired tasks, C4 sweeps take
/// exactly what is due up to their bound (docs/design.md §5).
pub(super) fn check(history: &[Event], out: &mut Vec<Violation>) {
    let mut tasks: BTreeMap<&str, TaskState<'_>> = BTreeMap::new();
    let mut found = Found::default();
    let outages = outages(history);
    // When the world gave an admission an id the store holds (the client sees "store
    // unavailable" at that instant).
    let collision_at: BTreeSet<u64> = history
        .iter()
        .filter_map(|event| match event {
            Event::Injected {
                what: Injection::IdCollision { .. },
                at_ms,
            } => Some(*at_ms),
            _ => None,
        })
        .collect();
    // Tasks created, with their expiry, and how many sweeps deleted so far (C4).
    let mut swept_total = 0usize;
    for (index, event) in history.iter().enumerate() {
        match event {
            Event::Applied {
                task_id,
                auth_key,
                kind,
                version,
                status,
                expires_at_ms,
                stored,
                ..
            } => {
                let task = tasks.entry(task_id).or_default();
                if *kind == AppliedKind::Create {
                    task.owner = auth_key;
                    task.expires_at_ms = *expires_at_ms;
                }
                task.status = Some(*status);
                task.version = *version;
                task.past_point = stored.irreversible_effect.is_some()
                    && stored.era == crate::contract::Era::Extension2026;
                task.open = stored
                    .input_requests
                    .iter()
                    .flat_map(|asked| asked.keys())
                    .map(String::as_str)
                    .collect();
            }
            Event::Client { .. } => {
                client_failed(event, index, &outages, &collision_at, &mut found)
            }
            Event::Refused { .. } => refused(event, index, &tasks, &mut found),
            Event::Runtime { .. } => runtime_note(event, index, &tasks, &mut found),
            Event::Claimed { .. } => claimed(event, index, &mut tasks, &mut found),
            Event::Acked {
                task_id,
                retired: true,
                ..
            } => {
                tasks.entry(task_id).or_default().retired = Some(index);
            }
            Event::Swept { max, swept, at_ms } => {
                let due = tasks
                    .values()
                    .filter(|task| task.status.is_some() && task.expired(*at_ms))
                    .count()
                    .saturating_sub(swept_total);
                if *swept != due.min(*max) {
                    found.c4.push(violation(
                        "C4",
                        "",
                        format!(
                            "a sweep bounded to {max} deleted {swept}, with {due} expired \
                             tasks due"
                        ),
                        vec![index],
                    ));
                }
                swept_total += swept;
            }
            _ => {}
        }
    }
    let Found {
        f2,
        f3,
        c1,
        c2,
        c3,
        c4,
    } = found;
    for rule in [f2, f3, c1, c2, c3, c4] {
        out.extend(rule);
    }
}

/// F2: a client's create answered with a failure that no injected fault explains.
fn client_failed(
    event: &Event,
    index: usize,
    outages: &[(u64, Option<u64>)],
    collision_at: &BTreeSet<u64>,
    found: &mut Found,
) {
    let Event::Client {
        client,
        op: ClientOp::Create { .. },
        result: ClientResult::Fail { unavailable },
        at_ms,
        ..
    } = event
    else {
        return;
    };
    let explained = *unavailable
        && (outages
            .iter()
            .any(|(down, up)| *down <= *at_ms && up.is_none_or(|up| *at_ms <= up))
            || collision_at.contains(at_ms));
    if !explained {
        let answer = if *unavailable {
            "store unavailable with the store node up"
        } else {
            "an error"
        };
        found.f2.push(violation(
            "F2",
            "",
            format!("{client}'s create was answered {answer}, and no injected fault explains it"),
            vec![index],
        ));
    }
}

/// F3: a write refused with nothing applied before to explain it.
fn refused(event: &Event, index: usize, tasks: &BTreeMap<&str, TaskState<'_>>, found: &mut Found) {
    let Event::Refused {
        task_id,
        caller,
        kind,
        expected_version,
        next,
        answered,
        decision,
        at_ms,
    } = event
    else {
        return;
    };
    let task = tasks.get(task_id.as_str());
    let reason = match task {
        None => true,
        Some(task) if task.owner != caller || task.expired(*at_ms) => true,
        Some(task) if task.terminal() => true,
        Some(task) => match kind {
            AppliedKind::Transition => {
                *expected_version != Some(task.version)
                    || next.is_none_or(|next| task.status.is_none_or(|status| !legal(status, next)))
            }
            AppliedKind::Input => {
                task.status != Some(TaskStatus::InputRequired)
                    || !answered.iter().any(|key| task.open.contains(key.as_str()))
            }
            AppliedKind::Cancel => task.past_point,
            AppliedKind::Create => false,
        },
    };
    if !reason {
        let state = task.map_or(String::new(), |task| {
            format!(
                " (stored {:?} v{}, owner {})",
                task.status, task.version, task.owner
            )
        });
        found.f3.push(violation(
            "F3",
            task_id,
            format!(
                "a {kind:?} by {caller} was refused with {decision:?}, and \
                     nothing applied before explains it{state}"
            ),
            vec![index],
        ));
    }
}

/// C1 and C3: a delivery dropped as a duplicate of a finished task, or as gone or
/// expired, only when it is.
fn runtime_note(
    event: &Event,
    index: usize,
    tasks: &BTreeMap<&str, TaskState<'_>>,
    found: &mut Found,
) {
    let Event::Runtime {
        what,
        task_id,
        at_ms,
    } = event
    else {
        return;
    };
    let task = tasks.get(task_id.as_str());
    match what {
        RuntimeNote::DuplicateAbsorbed if !task.is_some_and(TaskState::terminal) => {
            found.c1.push(violation(
                "C1",
                task_id,
                format!(
                    "a worker dropped a delivery as a duplicate of a finished \
                         task, but the task is {:?}",
                    task.and_then(|task| task.status)
                ),
                vec![index],
            ));
        }
        RuntimeNote::ExpiredBeforeRun if task.is_some_and(|task| !task.expired(*at_ms)) => {
            found.c3.push(violation(
                "C3",
                task_id,
                "a worker dropped a delivery as gone or expired, but the task \
                     is live"
                    .into(),
                vec![index],
            ));
        }
        _ => {}
    }
}

/// C2: a claim reports the stored state, counts its attempts, and never takes a retired
/// entry.
fn claimed<'a>(
    event: &'a Event,
    index: usize,
    tasks: &mut BTreeMap<&'a str, TaskState<'a>>,
    found: &mut Found,
) {
    let Event::Claimed {
        task_id,
        attempt,
        status,
        version,
        ..
    } = event
    else {
        return;
    };
    let task = tasks.entry(task_id).or_default();
    let mut wrong = Vec::new();
    if task.status != Some(*status) || task.version != *version {
        wrong.push(format!(
            "reported {status} v{version}, stored is {:?} v{}",
            task.status, task.version
        ));
    }
    if *attempt != task.attempt + 1 {
        wrong.push(format!("attempt {attempt} after attempt {}", task.attempt));
    }
    let mut events = vec![index];
    if let Some(acked) = task.retired {
        wrong.push("claimed after an acknowledgement retired the entry".into());
        events.insert(0, acked);
    }
    task.attempt = *attempt;
    for detail in wrong {
        found
            .c2
            .push(violation("C2", task_id, detail, events.clone()));
    }
}

/// The store node's outages: (down at, back at), in ms; an open one has no end.
fn outages(history: &[Event]) -> Vec<(u64, Option<u64>)> {
    let mut windows: Vec<(u64, Option<u64>)> = Vec::new();
    for event in history {
        match event {
            Event::Injected {
                what: Injection::StoreDown,
                at_ms,
            } => windows.push((*at_ms, None)),
            Event::Injected {
                what: Injection::StoreUp,
                at_ms,
            } => {
                if let Some(open) = windows.last_mut().filter(|window| window.1.is_none()) {
                    open.1 = Some(*at_ms);
                }
            }
            _ => {}
        }
    }
    windows
}
