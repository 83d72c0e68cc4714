//! The contract fixture's cases (`fixtures/contract/tasks-2025-11-25.json`, the same cases
//! every tasklatch store replays) mapped onto an SDK interface where it can express them.
//! Each case's stored records are made through the interface — created at their creation
//! instant on the fake clock, by their owner's session, with their TTL, and moved to their
//! status by the calls a server makes — then the clock goes to the case's instant and its
//! one operation runs. A case the interface cannot express (versions, idempotency keys,
//! tools and capabilities, an owner where the interface has none) is counted and listed with
//! the reason, never passed.

use crate::driver::Driver;
use crate::ops::{self, Op, Session};
use crate::shim::{Answer, BridgeError, Shim};
use crate::spec::Interface;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// The fixture, as the harness replays it.
pub const FIXTURE: &str = include_str!("../../../fixtures/contract/tasks-2025-11-25.json");
/// Where it lives in the repository, for messages.
pub const FIXTURE_PATH: &str = "fixtures/contract/tasks-2025-11-25.json";

/// One case's outcome.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// The store did what the case expects.
    Passed,
    /// It did not: what happened.
    Failed(String),
    /// The interface cannot express the case: why.
    NotExpressible(String),
}

/// Every case's outcome, by id.
#[derive(Clone, Debug, Default)]
pub struct Replayed {
    /// `(case id, title, decision, outcome)`, in the fixture's order.
    pub cases: Vec<(String, String, String, Outcome)>,
    /// How long it took.
    pub elapsed: Duration,
}

/// Why `case` cannot be expressed through `interface`, if it cannot.
fn inexpressible(case: &Value, interface: Interface, fake_clock: bool) -> Option<String> {
    let op = &case["op"];
    let decision = case["expect"]["decision"].as_str().unwrap_or("");
    let kind = op["kind"].as_str().unwrap_or("");
    let negotiated = &case["negotiated"];
    if ["tools_call", "cancel", "list"]
        .iter()
        .any(|capability| negotiated[*capability] == false)
    {
        return Some("capabilities are negotiated above the store interface".to_owned());
    }
    if kind == "tools/call" {
        if !op["idempotency_key"].is_null() {
            return Some("a create carries no idempotency key".to_owned());
        }
        if decision != "ACCEPT_TASK" {
            return Some("tools and their task support are decided above the store".to_owned());
        }
    }
    if decision == "BLOCK_STALE_VERSION" {
        return Some("no write carries an expected version".to_owned());
    }
    let owners: Vec<&str> = owners(case);
    if interface == Interface::PyMcp && owners.iter().any(|owner| *owner != owners[0]) {
        return Some(
            "the interface carries no owner, so another tenant cannot be told apart".to_owned(),
        );
    }
    if owners.len() > 3 {
        return Some("more than three identities".to_owned());
    }
    let timed = case["stored"].as_array().is_some_and(|stored| {
        stored
            .iter()
            .any(|record| !record["expires_at_ms"].is_null())
    });
    if timed && !fake_clock && decision == "BLOCK_EXPIRED" {
        return Some("expiry needs the fake clock (--real-clock was given)".to_owned());
    }
    None
}

/// The case's identities, the caller first.
fn owners(case: &Value) -> Vec<&str> {
    let mut owners = vec![case["caller"].as_str().unwrap_or("")];
    for record in case["stored"].as_array().into_iter().flatten() {
        let owner = record["auth_key"].as_str().unwrap_or("");
        if !owners.contains(&owner) {
            owners.push(owner);
        }
    }
    owners
}

/// The session an identity maps to (none where the interface carries none).
fn session_of(case: &Value, interface: Interface, identity: &str) -> Session {
    if !ops::has_sessions(interface) {
        return Session::None;
    }
    match owners(case).iter().position(|owner| *owner == identity) {
        Some(0) => Session::A,
        Some(1) => Session::B,
        _ => Session::C,
    }
}

/// A stored record made through the interface: its store id, owner and status.
struct Made {
    fixture_id: String,
    id: String,
    session: Session,
    status: String,
    expires_ms: Option<u64>,
}

/// The ops that move a fresh task to `status`.
fn ops_to(status: &str, session: Session) -> Vec<Op> {
    let task = 0;
    match status {
        "input_required" => vec![Op::AskInput { task, session }],
        "completed" => vec![Op::Complete {
            task,
            session,
            payload: 0,
        }],
        "failed" => vec![Op::Fail { task, session }],
        "cancelled" => vec![Op::Cancel { task, session }],
        _ => Vec::new(),
    }
}

/// Makes the case's stored records, oldest first; the clock ends at the last creation.
fn seed(
    driver: &mut Driver<'_>,
    case: &Value,
    now_ms: &mut u64,
) -> Result<Result<Vec<Made>, String>, BridgeError> {
    let mut records: Vec<&Value> = case["stored"].as_array().into_iter().flatten().collect();
    records.sort_by_key(|record| record["created_at_ms"].as_u64().unwrap_or(0));
    let mut made = Vec::new();
    for record in records {
        let created_ms = record["created_at_ms"].as_u64().unwrap_or(0);
        if created_ms > *now_ms {
            driver.advance(created_ms - *now_ms)?;
            *now_ms = created_ms;
        }
        let owner = record["auth_key"].as_str().unwrap_or("");
        let session = session_of(case, driver.interface, owner);
        let expires_ms = record["expires_at_ms"].as_u64();
        let create = Op::Create {
            session,
            ttl_ms: expires_ms.map(|expires| expires.saturating_sub(created_ms)),
        };
        let calls = ops::calls(driver.interface, &create, "", "").unwrap_or_default();
        let Answer::Returned(task) = driver.call(&calls[0])? else {
            return Ok(Err(format!(
                "the create of stored record {} was refused",
                record["task_id"]
            )));
        };
        let id = task["taskId"].as_str().unwrap_or("").to_owned();
        let status = record["status"].as_str().unwrap_or("working").to_owned();
        for op in ops_to(&status, session) {
            for call in ops::calls(driver.interface, &op, &id, "working").unwrap_or_default() {
                if let Answer::Thrown(thrown) = driver.call(&call)? {
                    return Ok(Err(format!(
                        "stored record {} could not be moved to {status}: {}",
                        record["task_id"], thrown.message
                    )));
                }
            }
        }
        made.push(Made {
            fixture_id: record["task_id"].as_str().unwrap_or("").to_owned(),
            id,
            session,
            status,
            expires_ms,
        });
    }
    Ok(Ok(made))
}

/// Runs one expressible case on a fresh store in `dir`.
fn run_case(
    shim: &mut Shim,
    dir: &Path,
    case: &Value,
    call_timeout: Duration,
) -> Result<Outcome, BridgeError> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)
        .map_err(|error| BridgeError(format!("{}: cannot create: {error}", dir.display())))?;
    let mut driver = Driver::open(shim, dir, call_timeout)?;
    let mut now_ms = 0;
    let made = match seed(&mut driver, case, &mut now_ms)? {
        Ok(made) => made,
        Err(why) => {
            driver.close()?;
            return Ok(Outcome::Failed(why));
        }
    };
    let case_ms = case["now_ms"].as_u64().unwrap_or(0);
    if case_ms > now_ms {
        driver.advance(case_ms - now_ms)?;
    }
    let caller = session_of(
        case,
        driver.interface,
        case["caller"].as_str().unwrap_or(""),
    );
    let outcome = apply(&mut driver, case, &made, caller, case_ms)?;
    driver.close()?;
    Ok(outcome)
}

/// The case's operation, and its expectation judged.
fn apply(
    driver: &mut Driver<'_>,
    case: &Value,
    made: &[Made],
    caller: Session,
    now_ms: u64,
) -> Result<Outcome, BridgeError> {
    let op = &case["op"];
    let decision = case["expect"]["decision"].as_str().unwrap_or("");
    let target = made
        .iter()
        .find(|record| op["task_id"].as_str() == Some(record.fixture_id.as_str()));
    let kind = op["kind"].as_str().unwrap_or("");
    if kind == "tasks/list" {
        return list(driver, made, caller, now_ms);
    }
    if kind == "tools/call" {
        return create(driver, made, caller);
    }
    let Some(target) = target else {
        return Ok(Outcome::NotExpressible(
            "the case names no stored task".to_owned(),
        ));
    };
    let task_op = task_op(kind, op, caller);
    let mut answers = Vec::new();
    for call in
        ops::calls(driver.interface, &task_op, &target.id, &target.status).unwrap_or_default()
    {
        let answer = driver.call(&call)?;
        let refused = matches!(answer, Answer::Thrown(_));
        answers.push(answer);
        if refused {
            break;
        }
    }
    let accepted = answers
        .iter()
        .all(|answer| matches!(answer, Answer::Returned(_)));
    let after = read_status(driver, target)?;
    Ok(judge(
        decision,
        &task_op,
        target,
        accepted,
        &answers,
        after.as_deref(),
    ))
}

/// The op a fixture operation on a task is, made by `caller`.
fn task_op(kind: &str, op: &Value, caller: Session) -> Op {
    let session = caller;
    let task = 0;
    match kind {
        "tasks/get" => Op::Get { task, session },
        "tasks/result" => Op::Result { task, session },
        "tasks/cancel" => Op::Cancel { task, session },
        _ => match op["next"].as_str().unwrap_or("") {
            "working" => Op::Working { task, session },
            "input_required" => Op::AskInput { task, session },
            "completed" => Op::Complete {
                task,
                session,
                payload: 1,
            },
            "failed" => Op::Fail { task, session },
            _ => Op::Cancel { task, session },
        },
    }
}

/// `ACCEPT_TASK`: a create is accepted with an id no stored task has.
fn create(driver: &mut Driver<'_>, made: &[Made], caller: Session) -> Result<Outcome, BridgeError> {
    let op = Op::Create {
        session: caller,
        ttl_ms: Some(60_000),
    };
    let calls = ops::calls(driver.interface, &op, "", "").unwrap_or_default();
    let answer = driver.call(&calls[0])?;
    Ok(
        match answer.returned().and_then(|task| task["taskId"].as_str()) {
            Some(id) if made.iter().all(|record| record.id != id) => Outcome::Passed,
            Some(id) => Outcome::Failed(format!("the create answered an existing task's id, {id}")),
            None => Outcome::Failed(format!(
                "the create was refused: {}",
                crate::model::describe(&answer)
            )),
        },
    )
}

/// The target's status as its owner reads it now (`None`: gone).
fn read_status(driver: &mut Driver<'_>, target: &Made) -> Result<Option<String>, BridgeError> {
    let read = Op::Get {
        task: 0,
        session: target.session,
    };
    let calls = ops::calls(driver.interface, &read, &target.id, &target.status).unwrap_or_default();
    Ok(driver
        .call(&calls[0])?
        .returned()
        .and_then(|task| task["status"].as_str())
        .map(str::to_owned))
}

fn judge(
    decision: &str,
    op: &Op,
    target: &Made,
    accepted: bool,
    answers: &[Answer],
    after: Option<&str>,
) -> Outcome {
    let first = answers
        .first()
        .map(crate::model::describe)
        .unwrap_or_default();
    let shown = answers
        .first()
        .and_then(Answer::returned)
        .filter(|value| value.is_object());
    let problem = match decision {
        "APPLY_TRANSITION" | "APPLY_CANCEL" => {
            let wanted = match op {
                Op::Working { .. } => "working",
                Op::AskInput { .. } => "input_required",
                Op::Complete { .. } => "completed",
                Op::Fail { .. } => "failed",
                _ => "cancelled",
            };
            (!accepted || after != Some(wanted)).then(|| {
                format!(
                    "the write was {}; the task reads {after:?}, not {wanted}",
                    if accepted { "accepted" } else { "refused" }
                )
            })
        }
        "BLOCK_TERMINAL_REWRITE" | "ALREADY_TERMINAL" | "BLOCK_AUTH" | "BLOCK_EXPIRED"
            if !matches!(op, Op::Get { .. }) =>
        {
            let kept = if decision == "BLOCK_EXPIRED" {
                after.is_none()
            } else {
                after == Some(target.status.as_str())
            };
            (accepted || !kept).then(|| {
                format!(
                    "the write was {}; the task reads {after:?} (stored {}, expires {:?})",
                    if accepted { "accepted" } else { "refused" },
                    target.status,
                    target.expires_ms
                )
            })
        }
        "IDEMPOTENT_TERMINAL" => (after != Some(target.status.as_str()))
            .then(|| format!("the task reads {after:?}, not {} as stored", target.status)),
        "RETURN_STATUS" => match shown {
            Some(task) if task["status"] == target.status.as_str() => None,
            _ => Some(format!(
                "the read answered {first}, not the task {}",
                target.status
            )),
        },
        "BLOCK_AUTH" => shown.map(|task| format!("another tenant read the task: {task}")),
        "WAIT_TERMINAL" | "WAIT_INPUT" => shown
            .map(|payload| format!("a task still {} served a result: {payload}", target.status)),
        "RETURN_RESULT" => match shown {
            Some(payload) if *payload == ops::payload(0) => None,
            _ => Some(format!(
                "the completed task's result read {first}, not its payload"
            )),
        },
        other => Some(format!("decision {other} is not mapped onto the interface")),
    };
    problem.map_or(Outcome::Passed, Outcome::Failed)
}

/// `LIST_TENANT_FILTERED`: the caller's live tasks, every page, and nothing else.
fn list(
    driver: &mut Driver<'_>,
    made: &[Made],
    caller: Session,
    now_ms: u64,
) -> Result<Outcome, BridgeError> {
    let (listed, failed) = driver.list_pages(caller)?;
    if let Some(answer) = failed {
        return Ok(Outcome::Failed(format!(
            "the list answered {}",
            crate::model::describe(&answer)
        )));
    }
    let expected: Vec<&Made> = made
        .iter()
        .filter(|record| {
            record.session == caller && record.expires_ms.is_none_or(|expires| now_ms < expires)
        })
        .collect();
    let wrong: Vec<String> = listed
        .iter()
        .filter(|id| !expected.iter().any(|record| record.id == **id))
        .filter_map(|id| made.iter().find(|record| record.id == *id))
        .map(|record| record.fixture_id.clone())
        .collect();
    let missing: Vec<String> = expected
        .iter()
        .filter(|record| !listed.contains(&record.id))
        .map(|record| record.fixture_id.clone())
        .collect();
    Ok(if wrong.is_empty() && missing.is_empty() {
        Outcome::Passed
    } else {
        Outcome::Failed(format!(
            "the caller's list showed {wrong:?} it must not and left out {missing:?}"
        ))
    })
}

/// Replays every case of the fixture through the shim's interface.
pub fn replay(
    shim: &mut Shim,
    work: &Path,
    call_timeout: Duration,
) -> Result<Replayed, BridgeError> {
    let started = Instant::now();
    let fixture: Value = serde_json::from_str(FIXTURE)
        .map_err(|error| BridgeError(format!("{FIXTURE_PATH}: {error}")))?;
    let interface = shim.spec().interface;
    let fake_clock = shim.hello.fake_clock;
    let dir = work.join("fixture");
    let mut replayed = Replayed::default();
    for case in fixture["cases"].as_array().into_iter().flatten() {
        let outcome = match inexpressible(case, interface, fake_clock) {
            Some(why) => Outcome::NotExpressible(why),
            None => run_case(shim, &dir, case, call_timeout)?,
        };
        replayed.cases.push((
            case["id"].as_str().unwrap_or("").to_owned(),
            case["title"].as_str().unwrap_or("").to_owned(),
            case["expect"]["decision"].as_str().unwrap_or("").to_owned(),
            outcome,
        ));
    }
    replayed.elapsed = started.elapsed();
    Ok(replayed)
}
