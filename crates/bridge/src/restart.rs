//! The restart engine, for a store that claims durability (`--durable`): a case's
//! operations run on one data directory while the shim is SIGKILLed — between two calls,
//! or with a write in flight — and started again, the store reopened by its factory on the
//! same directory and the clock put back where it was. After each restart the owner reads
//! every task: nothing acknowledged is lost, and nothing changes (a task reads the status
//! it was last acknowledged in, or, for the write in flight at the kill, the one it asked
//! for). Then the case goes on, every answer judged by the model as in `explore`.

use crate::driver::Driver;
use crate::explore::{Draw, case};
use crate::model::{Model, Violation};
use crate::ops::{self, Op, has_sessions};
use crate::shim::{Answer, BridgeError, Shim};
use crate::spec::StoreSpec;
use std::path::Path;
use std::time::{Duration, Instant};

/// Kills in a case, at most.
const KILLS_MAX: u64 = 2;

/// A restart that lost or changed what was acknowledged.
#[derive(Clone, Debug)]
pub struct RestartFinding {
    /// The rule.
    pub rule: &'static str,
    /// What the first case showed.
    pub detail: String,
    /// The seed of that case.
    pub seed: u64,
    /// Cases that broke it.
    pub cases: usize,
}

/// What the engine did.
#[derive(Clone, Debug, Default)]
pub struct Restarted {
    /// Cases run.
    pub cases: usize,
    /// Kills made.
    pub kills: usize,
    /// Each rule broken.
    pub findings: Vec<RestartFinding>,
    /// How long it took.
    pub elapsed: Duration,
}

/// Where and how a case kills the shim.
#[derive(Clone, Copy, Debug)]
struct Kill {
    /// Before the op at this index.
    at: usize,
    /// With that op's first call sent and unanswered.
    in_flight: bool,
}

fn kills_of(seed: u64, length: usize) -> Vec<Kill> {
    let mut draw = Draw::new(seed ^ 0x00C0_FFEE);
    let mut kills: Vec<Kill> = (0..1 + draw.below(KILLS_MAX))
        .map(|_| Kill {
            at: 1 + draw.below(length.saturating_sub(1).max(1) as u64) as usize,
            in_flight: draw.below(2) == 0,
        })
        .collect();
    kills.sort_by_key(|kill| kill.at);
    kills.dedup_by_key(|kill| kill.at);
    kills
}

/// Starts the shim again and reopens the store on `dir`, its clock put back to `clock_ms`,
/// the instant the killed shim's clock showed (a new shim's starts at its epoch again; the
/// store's data remembers the later instants its tasks were made at).
fn restart_store<'a>(
    shim: &'a mut Shim,
    spec: &StoreSpec,
    dir: &Path,
    clock_ms: Option<u64>,
    call_timeout: Duration,
) -> Result<Driver<'a>, BridgeError> {
    shim.kill();
    *shim = Shim::start(spec)?;
    let mut driver = Driver::open(shim, dir, call_timeout)?;
    if let Some(clock_ms) = clock_ms {
        let started_ms = driver.advance(0)?;
        driver.advance(clock_ms.saturating_sub(started_ms))?;
    }
    Ok(driver)
}

/// The write in flight at a kill: its task, the status it asked for, and the result a
/// completion stores with it.
type Pending = (usize, String, Option<serde_json::Value>);

/// After a restart: every task the model knows, read by its owner. `pending` is the write
/// that was in flight at the kill, which may have landed whole or not at all.
fn verify(
    driver: &mut Driver<'_>,
    model: &mut Model,
    pending: Option<Pending>,
) -> Result<Option<Violation>, BridgeError> {
    for index in 0..model.tasks.len() {
        let (id, owner, status, alive) = {
            let task = &model.tasks[index];
            let alive = task
                .ttl_ms
                .is_none_or(|ttl| model.now_ms < task.created_ms + ttl);
            (task.id.clone(), task.owner, task.status.clone(), alive)
        };
        if !alive {
            continue;
        }
        let read = Op::Get {
            task: index,
            session: owner,
        };
        let calls = ops::calls(driver.interface, &read, &id, &status).unwrap_or_default();
        let answer = driver.call(&calls[0])?;
        let shown = match &answer {
            Answer::Returned(value) if value.is_object() => {
                value["status"].as_str().map(str::to_owned)
            }
            _ => None,
        };
        let landed = pending.as_ref().filter(|(task, _, _)| *task == index);
        let asked = landed.map(|(_, asked, _)| asked.clone());
        match shown {
            None => {
                return Ok(Some(Violation {
                    rule: "restart.acknowledged-kept",
                    detail: format!(
                        "task {id}, acknowledged {status}, is gone after the restart ({})",
                        crate::model::describe(&answer)
                    ),
                }));
            }
            Some(shown) if shown == status => {}
            Some(shown) if asked.as_deref() == Some(shown.as_str()) => {
                // The write in flight landed: the model takes it, and its result.
                model.tasks[index].status = shown;
                if let Some((_, _, Some(result))) = landed {
                    model.tasks[index].result = Some(result.clone());
                }
            }
            Some(shown) => {
                return Ok(Some(Violation {
                    rule: "restart.nothing-changes",
                    detail: format!(
                        "task {id}, acknowledged {status}, reads {shown} after the restart"
                    ),
                }));
            }
        }
    }
    Ok(None)
}

/// The status a write asks for, if `op` is one (`Message` keeps the status).
fn asked_status(op: &Op, current: &str) -> Option<String> {
    Some(
        match op {
            Op::Working { .. } | Op::Resume { .. } => "working",
            Op::AskInput { .. } => "input_required",
            Op::Complete { .. } => "completed",
            Op::Fail { .. } => "failed",
            Op::Cancel { .. } => "cancelled",
            Op::Message { .. } => current,
            _ => return None,
        }
        .to_owned(),
    )
}

/// One case with its kills: the first rule broken, and the kills made.
fn run_case(
    shim: &mut Shim,
    spec: &StoreSpec,
    dir: &Path,
    seed: u64,
    call_timeout: Duration,
) -> Result<(Option<Violation>, usize), BridgeError> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)
        .map_err(|error| BridgeError(format!("{}: cannot create: {error}", dir.display())))?;
    let ops = case(seed, has_sessions(spec.interface));
    let kills = kills_of(seed, ops.len());
    let mut model = Model::new(has_sessions(spec.interface));
    let mut driver = Driver::open(shim, dir, call_timeout)?;
    let mut made = 0;
    for (index, op) in ops.iter().enumerate() {
        let Some(kill) = kills.iter().find(|kill| kill.at == index) else {
            if let Some(violation) = driver.run(op, &mut model)?.into_iter().next() {
                driver.close()?;
                return Ok((Some(violation), made));
            }
            continue;
        };
        let mut pending = None;
        if kill.in_flight
            && let Some(task) = op.task()
            && model.tasks[task].owner == op.session()
        {
            let current = model.tasks[task].status.clone();
            if let Some(asked) = asked_status(op, &current) {
                let calls = ops::calls(driver.interface, op, &model.tasks[task].id, &current)
                    .unwrap_or_default();
                // Only a one-call write can land whole: a composite one is judged by its
                // first call alone, so leave it out.
                if calls.len() == 1 {
                    let request = driver.request_of(&calls[0]);
                    driver.shim.send(request)?;
                    let result = match op {
                        Op::Complete { payload, .. } => Some(ops::payload(*payload)),
                        _ => None,
                    };
                    pending = Some((task, asked, result));
                }
            }
        }
        let clock_ms = if driver.shim.hello.fake_clock {
            Some(driver.advance(0)?)
        } else {
            None
        };
        made += 1;
        driver = restart_store(driver.shim, spec, dir, clock_ms, call_timeout)?;
        if let Some(violation) = verify(&mut driver, &mut model, pending.clone())? {
            driver.close()?;
            return Ok((Some(violation), made));
        }
        if pending.is_none()
            && let Some(violation) = driver.run(op, &mut model)?.into_iter().next()
        {
            driver.close()?;
            return Ok((Some(violation), made));
        }
    }
    driver.close()?;
    Ok((None, made))
}

/// Runs cases with kills until `budget` passes or `cases_max` are run.
pub fn restart(
    shim: &mut Shim,
    spec: &StoreSpec,
    work: &Path,
    seed: u64,
    budget: Duration,
    cases_max: usize,
    call_timeout: Duration,
) -> Result<Restarted, BridgeError> {
    let started = Instant::now();
    let dir = work.join("restart");
    let mut restarted = Restarted::default();
    while restarted.cases < cases_max && started.elapsed() < budget {
        let case_seed = seed.wrapping_add(restarted.cases as u64);
        let (violation, kills) = run_case(shim, spec, &dir, case_seed, call_timeout)?;
        restarted.cases += 1;
        restarted.kills += kills;
        if let Some(violation) = violation {
            match restarted
                .findings
                .iter_mut()
                .find(|known| known.rule == violation.rule)
            {
                Some(known) => known.cases += 1,
                None => restarted.findings.push(RestartFinding {
                    rule: violation.rule,
                    detail: violation.detail,
                    seed: case_seed,
                    cases: 1,
                }),
            }
        }
    }
    restarted.elapsed = started.elapsed();
    Ok(restarted)
}
