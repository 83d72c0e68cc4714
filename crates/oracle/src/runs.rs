//! I20: what workers do is owed. A tool run starts only for a task that was live (not
//! terminal, not expired) when its worker read it; every write a worker makes from a run
//! (a terminal outcome, a question, a point of no return), applied or refused, names the
//! version that run was given, so a write refused as stale is never re-aimed blindly at
//! the version now stored; and an outcome written is one the tool returned at that
//! version, for the inputs that version held (a run whose tool returned no outcome may
//! end in the runtime's own failure).

use super::{AppliedKind, Asked, Event, Violation, violation};
use crate::contract::{TaskOutcome, TaskStatus};
use std::collections::BTreeMap;

/// A task's runs so far: by version, the event that started each and what each returned.
#[derive(Default)]
struct Runs<'h> {
    started: BTreeMap<u64, usize>,
    returned: BTreeMap<u64, Vec<Option<&'h TaskOutcome>>>,
}

/// A task's last record of each version: status and expiry.
type Versions = BTreeMap<u64, (TaskStatus, Option<u64>)>;

/// I20 over the whole history, in history order; only where the history records tool
/// runs (an engine that does not record them is not judged by what it cannot show).
pub(super) fn i20_runs_owed(history: &[Event], out: &mut Vec<Violation>) {
    if !history
        .iter()
        .any(|event| matches!(event, Event::ToolRun { .. }))
    {
        return;
    }
    let mut versions: BTreeMap<&str, Versions> = BTreeMap::new();
    let mut runs: BTreeMap<&str, Runs<'_>> = BTreeMap::new();
    for (index, event) in history.iter().enumerate() {
        match event {
            Event::Applied {
                task_id,
                kind,
                expected_version,
                version,
                status,
                expires_at_ms,
                asked,
                ..
            } => {
                if let Some(next) = worker_write(*kind, asked) {
                    let ran = runs.entry(task_id).or_default();
                    written_from_run(index, task_id, next, *expected_version, asked, ran, out);
                }
                versions
                    .entry(task_id)
                    .or_default()
                    .insert(*version, (*status, *expires_at_ms));
            }
            Event::Refused {
                task_id,
                kind: AppliedKind::Transition,
                expected_version,
                next: Some(next),
                ..
            } if next.is_terminal() || *next == TaskStatus::InputRequired => {
                let ran = runs.entry(task_id).or_default();
                if !expected_version.is_some_and(|version| ran.started.contains_key(&version)) {
                    out.push(violation(
                        "I20",
                        task_id,
                        format!(
                            "a worker's {next} write was refused at {}, a version no run of it was given",
                            shown(*expected_version)
                        ),
                        vec![index],
                    ));
                }
            }
            Event::ToolRun {
                task_id,
                version,
                read_at_ms,
                ..
            } => {
                let record = versions.get(task_id.as_str()).and_then(|v| v.get(version));
                run_was_owed(index, task_id, *version, *read_at_ms, record, out);
                runs.entry(task_id)
                    .or_default()
                    .started
                    .insert(*version, index);
            }
            Event::ToolReturned {
                task_id,
                version,
                outcome,
                ..
            } => runs
                .entry(task_id)
                .or_default()
                .returned
                .entry(*version)
                .or_default()
                .push(outcome.as_ref()),
            _ => {}
        }
    }
}

/// The status a worker's write moves to, if the write is one only a run makes.
fn worker_write(kind: AppliedKind, asked: &Asked) -> Option<TaskStatus> {
    let Asked::Transition {
        next,
        outcome,
        irreversible_effect,
        ..
    } = asked
    else {
        return None;
    };
    let from_run = (next.is_terminal() && outcome.is_some())
        || *next == TaskStatus::InputRequired
        || irreversible_effect.is_some();
    (kind == AppliedKind::Transition && from_run).then_some(*next)
}

fn shown(version: Option<u64>) -> String {
    version.map_or_else(|| "no version".to_owned(), |version| format!("v{version}"))
}

/// An applied worker write names a version a run was given, and writes what it returned.
fn written_from_run(
    index: usize,
    task_id: &str,
    next: TaskStatus,
    expected_version: Option<u64>,
    asked: &Asked,
    runs: &Runs<'_>,
    out: &mut Vec<Violation>,
) {
    let Some(version) = expected_version.filter(|version| runs.started.contains_key(version))
    else {
        out.push(violation(
            "I20",
            task_id,
            format!(
                "a worker wrote {next} at {}, a version no run of it was given",
                shown(expected_version)
            ),
            vec![index],
        ));
        return;
    };
    let Asked::Transition {
        outcome: Some(written),
        ..
    } = asked
    else {
        return;
    };
    let returned: Vec<&TaskOutcome> = runs
        .returned
        .get(&version)
        .into_iter()
        .flatten()
        .flatten()
        .copied()
        .collect();
    if !returned.is_empty() && !returned.contains(&written) {
        out.push(violation(
            "I20",
            task_id,
            format!(
                "the outcome written at v{version} is none its tool returned at v{version}: {written:?}"
            ),
            vec![runs.started[&version], index],
        ));
    }
}

/// A run starts only for a version that was live when its worker read it.
fn run_was_owed(
    index: usize,
    task_id: &str,
    version: u64,
    read_at_ms: u64,
    record: Option<&(TaskStatus, Option<u64>)>,
    out: &mut Vec<Violation>,
) {
    let problem = match record {
        None => format!("no store wrote v{version}"),
        Some((status, _)) if status.is_terminal() => format!("v{version} is {status}"),
        Some((_, Some(expires_at_ms))) if read_at_ms >= *expires_at_ms => format!(
            "v{version} expired at {expires_at_ms} ms, before its worker read it at {read_at_ms} ms"
        ),
        Some(_) => return,
    };
    out.push(violation(
        "I20",
        task_id,
        format!("a tool run started for a task not owed one: {problem}"),
        vec![index],
    ));
}
