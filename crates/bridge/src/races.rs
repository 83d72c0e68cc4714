//! The race engine: many calls in flight at once on one task, against the real backend,
//! repeated for the budget. Each round creates a task and runs two writers on it; a writer
//! is the calls its SDK's server makes (Python's completion is `store_result` then
//! `update_task`), and the writers' last calls — the ones that end the task — are sent
//! together, after their earlier calls. Then the owner reads the task and its result:
//! exactly one terminal fact per task, the winner's, with the winner's payload.

use crate::driver::Driver;
use crate::model::Violation;
use crate::ops::{self, Call, Op, Session};
use crate::shim::{Answer, BridgeError, Shim};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// Rounds on one store before a fresh one is opened.
const ROUNDS_PER_STORE: usize = 50;

/// The races run, in turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Race {
    /// A completion against a cancel.
    CompleteCancel,
    /// Two completions with different payloads.
    CompleteComplete,
    /// A completion against a failure.
    CompleteFail,
    /// Two non-terminal status writes.
    StatusStatus,
    /// A create against a list of the same session.
    CreateList,
}

/// Every race.
pub const RACES: [Race; 5] = [
    Race::CompleteCancel,
    Race::CompleteComplete,
    Race::CompleteFail,
    Race::StatusStatus,
    Race::CreateList,
];

impl Race {
    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Race::CompleteCancel => "complete-vs-cancel",
            Race::CompleteComplete => "complete-vs-complete",
            Race::CompleteFail => "complete-vs-fail",
            Race::StatusStatus => "status-vs-status",
            Race::CreateList => "create-vs-list",
        }
    }

    /// The two writers' ops on task 0 by its owner.
    pub fn writers(self, session: Session) -> [Op; 2] {
        let complete = |payload| Op::Complete {
            task: 0,
            session,
            payload,
        };
        match self {
            Race::CompleteCancel => [complete(1), Op::Cancel { task: 0, session }],
            Race::CompleteComplete => [complete(1), complete(2)],
            Race::CompleteFail => [complete(1), Op::Fail { task: 0, session }],
            Race::StatusStatus => [
                Op::Working { task: 0, session },
                Op::AskInput { task: 0, session },
            ],
            Race::CreateList => [
                Op::Create {
                    session,
                    ttl_ms: None,
                },
                Op::ListAll { session },
            ],
        }
    }
}

/// A race that broke a rule, and how often.
#[derive(Clone, Debug)]
pub struct RaceFinding {
    /// The rule.
    pub rule: &'static str,
    /// The race.
    pub race: Race,
    /// What the first breaking round showed.
    pub detail: String,
    /// Rounds of that race that broke it.
    pub rounds: usize,
}

/// What the engine did.
#[derive(Clone, Debug, Default)]
pub struct Raced {
    /// Rounds run.
    pub rounds: usize,
    /// Store calls made.
    pub calls: usize,
    /// Each rule broken, with its race.
    pub findings: Vec<RaceFinding>,
    /// How long it took.
    pub elapsed: Duration,
}

/// The end status an op's success means.
fn end_status(op: &Op) -> &'static str {
    match op {
        Op::Complete { .. } => "completed",
        Op::Cancel { .. } => "cancelled",
        Op::Fail { .. } => "failed",
        Op::AskInput { .. } => "input_required",
        _ => "working",
    }
}

/// Runs both writers on `id`, their last calls in flight together; whether each wrote
/// every call.
fn race_writers(
    driver: &mut Driver<'_>,
    writers: &[Op; 2],
    id: &str,
    flip: bool,
) -> Result<[bool; 2], BridgeError> {
    let scripts: Vec<Vec<Call>> = writers
        .iter()
        .map(|op| script_of(driver.interface, op, id))
        .collect();
    let steps = scripts.iter().map(Vec::len).max().unwrap_or(0);
    let mut alive = [true, true];
    for step in 0..steps {
        let mut sent = Vec::new();
        // Which writer's call goes first alternates by round: a store that serves calls in
        // arrival order still meets both orders.
        let order: [usize; 2] = if flip { [1, 0] } else { [0, 1] };
        for writer in order {
            let script = &scripts[writer];
            // Right-aligned: each writer's last call is in the last step.
            let Some(index) = (step + script.len()).checked_sub(steps) else {
                continue;
            };
            if alive[writer] {
                let request = driver.request_of(&script[index]);
                sent.push((writer, driver.shim.send(request)?));
            }
        }
        for (writer, id) in sent {
            if matches!(
                driver.shim.wait(id, driver.call_timeout)?,
                Answer::Thrown(_)
            ) {
                alive[writer] = false;
            }
        }
    }
    Ok(alive)
}

/// One round: create, race, read back; the rule broken, if any.
fn round(
    driver: &mut Driver<'_>,
    race: Race,
    flip: bool,
) -> Result<(Option<Violation>, usize), BridgeError> {
    let session = if ops::has_sessions(driver.interface) {
        Session::A
    } else {
        Session::None
    };
    let create = ops::calls(
        driver.interface,
        &Op::Create {
            session,
            ttl_ms: None,
        },
        "",
        "",
    )
    .unwrap_or_default();
    let task = match driver.call(&create[0])? {
        Answer::Returned(task) => task,
        Answer::Thrown(thrown) => {
            return Ok((
                Some(Violation {
                    rule: "accepts.legal-write",
                    detail: format!("a create was refused: {}", thrown.message),
                }),
                1,
            ));
        }
    };
    let id = task["taskId"].as_str().unwrap_or_default().to_owned();
    if race == Race::CreateList {
        return create_vs_list(driver, session, flip, &id);
    }
    let writers = race.writers(session);
    let won = race_writers(driver, &writers, &id, flip)?;
    let read = |op: Op| ops::calls(driver.interface, &op, &id, "working").unwrap_or_default();
    let get = read(Op::Get { task: 0, session });
    let result = read(Op::Result { task: 0, session });
    let status_answer = driver.call(&get[0])?;
    let result_answer = driver.call(&result[0])?;
    let status = status_answer
        .returned()
        .and_then(|task| task["status"].as_str())
        .unwrap_or("(unreadable)")
        .to_owned();
    let payload = result_answer
        .returned()
        .filter(|value| value.is_object())
        .cloned();
    let calls = 3 + writers.len();
    Ok((
        judge(race, &writers, won, &status, payload.as_ref(), &id),
        calls,
    ))
}

/// The calls of one writer: a list is its first page.
pub fn script_of(interface: crate::spec::Interface, op: &Op, id: &str) -> Vec<Call> {
    match op {
        Op::ListAll { session } => vec![ops::list_call(interface, *session, None)],
        _ => ops::calls(interface, op, id, "working").unwrap_or_default(),
    }
}

/// A create and a list in flight together, after task `first` was made: the list answers
/// a page without repeats, and a list after both shows both tasks.
fn create_vs_list(
    driver: &mut Driver<'_>,
    session: Session,
    flip: bool,
    first: &str,
) -> Result<(Option<Violation>, usize), BridgeError> {
    let writers = Race::CreateList.writers(session);
    let requests: Vec<_> = writers
        .iter()
        .map(|op| driver.request_of(&script_of(driver.interface, op, "")[0]))
        .collect();
    let order: [usize; 2] = if flip { [1, 0] } else { [0, 1] };
    let mut ids = [0; 2];
    for writer in order {
        ids[writer] = driver.shim.send(requests[writer].clone())?;
    }
    let created = driver.shim.wait(ids[0], driver.call_timeout)?;
    let listed = driver.shim.wait(ids[1], driver.call_timeout)?;
    let what = format!("create-vs-list after task {first}");
    let Some(new_id) = created.returned().and_then(|task| task["taskId"].as_str()) else {
        return Ok((
            Some(Violation {
                rule: "accepts.legal-write",
                detail: format!(
                    "{what}: the create was refused: {}",
                    crate::model::describe(&created)
                ),
            }),
            2,
        ));
    };
    let page = listed
        .returned()
        .and_then(|value| ops::page_of(driver.interface, value));
    let Some((tasks, _)) = page else {
        return Ok((
            Some(Violation {
                rule: "race.create-list",
                detail: format!(
                    "{what}: the list during the create answered {}",
                    crate::model::describe(&listed)
                ),
            }),
            2,
        ));
    };
    let mut seen: Vec<&str> = tasks
        .iter()
        .filter_map(|task| task["taskId"].as_str())
        .collect();
    let before = seen.len();
    seen.sort_unstable();
    seen.dedup();
    if seen.len() != before {
        return Ok((
            Some(Violation {
                rule: "race.create-list",
                detail: format!("{what}: the list during the create repeated a task"),
            }),
            2,
        ));
    }
    let (shown, _) = driver.list_pages(session)?;
    let missing: Vec<&str> = [first, new_id]
        .into_iter()
        .filter(|id| !shown.iter().any(|known| known == id))
        .collect();
    Ok((
        (!missing.is_empty()).then(|| Violation {
            rule: "race.create-list",
            detail: format!("{what}: a list after both left out {missing:?}"),
        }),
        3,
    ))
}

fn judge(
    race: Race,
    writers: &[Op; 2],
    won: [bool; 2],
    status: &str,
    payload: Option<&Value>,
    id: &str,
) -> Option<Violation> {
    let terminal = race != Race::StatusStatus;
    let winners: Vec<&Op> = writers
        .iter()
        .zip(won)
        .filter(|(_, won)| *won)
        .map(|(op, _)| op)
        .collect();
    let what = format!("{} on task {id}", race.name());
    if terminal && winners.len() == 2 {
        return Some(Violation {
            rule: "race.one-terminal-fact",
            detail: format!("{what}: both writers succeeded; the task reads {status}"),
        });
    }
    let Some(winner) = winners.first() else {
        return Some(Violation {
            rule: "accepts.legal-write",
            detail: format!("{what}: both writers were refused; the task reads {status}"),
        });
    };
    let expected = if terminal {
        end_status(winner)
    } else if winners.len() == 2 {
        // Both non-terminal writes landed: either may be last.
        if matches!(status, "working" | "input_required") {
            return None;
        }
        "working or input_required"
    } else {
        end_status(winner)
    };
    if status != expected {
        return Some(Violation {
            rule: "race.one-terminal-fact",
            detail: format!(
                "{what}: the writer of {expected} alone succeeded, yet the task reads {status}"
            ),
        });
    }
    let completion = |value: &Value| {
        value["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.starts_with("payload-"))
    };
    match (winner, payload) {
        (Op::Complete { payload: tag, .. }, Some(value)) if *value != ops::payload(*tag) => {
            Some(Violation {
                rule: "latch.result-changed",
                detail: format!("{what}: completion payload-{tag} won, yet the result is {value}"),
            })
        }
        (Op::Cancel { .. } | Op::Fail { .. }, Some(value)) if completion(value) => {
            Some(Violation {
                rule: "latch.cancelled-with-payload",
                detail: format!(
                    "{what}: the {} won, yet the task serves the losing completion's payload {value}",
                    end_status(winner)
                ),
            })
        }
        _ => None,
    }
}

/// Runs the races in turn until `budget` passes or `rounds_max` are run.
pub fn race(
    shim: &mut Shim,
    work: &Path,
    budget: Duration,
    rounds_max: usize,
    call_timeout: Duration,
) -> Result<Raced, BridgeError> {
    let started = Instant::now();
    let dir = work.join("races");
    let mut raced = Raced::default();
    while raced.rounds < rounds_max && started.elapsed() < budget {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .map_err(|error| BridgeError(format!("{}: cannot create: {error}", dir.display())))?;
        let mut driver = Driver::open(shim, &dir, call_timeout)?;
        for _ in 0..ROUNDS_PER_STORE {
            if raced.rounds >= rounds_max || started.elapsed() >= budget {
                break;
            }
            let race = RACES[raced.rounds % RACES.len()];
            let flip = (raced.rounds / RACES.len()) % 2 == 1;
            let (violation, calls) = round(&mut driver, race, flip)?;
            raced.rounds += 1;
            raced.calls += calls;
            if let Some(violation) = violation {
                match raced
                    .findings
                    .iter_mut()
                    .find(|known| known.rule == violation.rule && known.race == race)
                {
                    Some(known) => known.rounds += 1,
                    None => raced.findings.push(RaceFinding {
                        rule: violation.rule,
                        race,
                        detail: violation.detail,
                        rounds: 1,
                    }),
                }
            }
        }
        driver.close()?;
    }
    raced.elapsed = started.elapsed();
    Ok(raced)
}
