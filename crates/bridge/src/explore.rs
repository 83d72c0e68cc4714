//! The model-based engine: seeded random sequences of operations on a fresh store each,
//! every answer judged by the [`Model`]; the first case that breaks a rule is shrunk to the
//! shortest sequence that still breaks it (ops removed one at a time, a create with every
//! op on its task), and kept with a runnable snippet in the store's language.

use crate::driver::Driver;
use crate::model::{Model, Violation};
use crate::ops::{Op, Session, has_sessions};
use crate::shim::{BridgeError, Shim};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Ops in a case, at most.
const CASE_OPS_MAX: usize = 24;
/// Tasks a case creates, at most.
const CASE_TASKS_MAX: usize = 3;
/// Runs a shrink may spend, at most.
const SHRINK_RUNS_MAX: usize = 400;
/// The TTLs cases ask for: unlimited, zero, short, long, and one past a 32-bit timer.
const TTLS_MS: [Option<u64>; 5] = [
    None,
    Some(0),
    Some(1_000),
    Some(60_000),
    Some(2_147_483_648),
];
/// How far cases move the clock: to an edge of a short TTL, and past it.
const ADVANCES_MS: [u64; 5] = [1, 500, 999, 1_001, 3_000];

/// A seeded generator (SplitMix64): a case is a function of its seed.
pub struct Draw(u64);

impl Draw {
    /// The generator of `seed`.
    pub fn new(seed: u64) -> Draw {
        Draw(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `bound` (> 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

/// The case of `seed`: creates first among the ops, every op on a task created before it.
pub fn case(seed: u64, sessions: bool) -> Vec<Op> {
    let mut draw = Draw::new(seed);
    let length = 4 + draw.below((CASE_OPS_MAX - 3) as u64) as usize;
    let callers: &[Session] = if sessions {
        &[
            Session::A,
            Session::A,
            Session::A,
            Session::B,
            Session::None,
        ]
    } else {
        &[Session::A, Session::B]
    };
    let mut owners: Vec<Session> = Vec::new();
    let mut ops = Vec::new();
    while ops.len() < length {
        if owners.is_empty() || (owners.len() < CASE_TASKS_MAX && draw.below(6) == 0) {
            let session = draw.pick(callers);
            owners.push(session);
            ops.push(Op::Create {
                session,
                ttl_ms: draw.pick(&TTLS_MS),
            });
            continue;
        }
        let task = draw.below(owners.len() as u64) as usize;
        // Mostly the owner; sometimes whoever.
        let session = if draw.below(4) == 0 {
            draw.pick(callers)
        } else {
            owners[task]
        };
        ops.push(match draw.below(13) {
            0 | 1 => Op::Get { task, session },
            2 => match draw.below(2) {
                0 => Op::Working { task, session },
                _ => Op::Resume { task, session },
            },
            3 => Op::AskInput { task, session },
            4 => Op::Message { task, session },
            5 | 6 => Op::Complete {
                task,
                session,
                payload: draw.below(1_000) as u32,
            },
            7 => Op::Fail { task, session },
            8 => Op::Cancel { task, session },
            9 => Op::Result { task, session },
            10 => Op::ListAll { session },
            11 => match draw.below(4) {
                0 => Op::BadCursor { session },
                1 => Op::BogusStatus { task, session },
                _ => Op::Get { task, session },
            },
            _ => Op::Advance {
                ms: draw.pick(&ADVANCES_MS),
            },
        });
    }
    ops
}

/// A broken rule, with the shortest sequence found that breaks it.
#[derive(Clone, Debug)]
pub struct Finding {
    /// The rule.
    pub rule: &'static str,
    /// What the shortest sequence showed.
    pub detail: String,
    /// The shortest sequence.
    pub ops: Vec<Op>,
    /// The seed of the case it was shrunk from.
    pub seed: u64,
    /// Cases that broke it.
    pub cases: usize,
}

/// What the engine did.
#[derive(Clone, Debug, Default)]
pub struct Explored {
    /// Cases run.
    pub cases: usize,
    /// Ops run, in all.
    pub ops: usize,
    /// Each rule broken, by name.
    pub findings: BTreeMap<&'static str, Finding>,
    /// How long it took.
    pub elapsed: Duration,
}

/// Runs `ops` on a fresh store in `dir`: the first violation, if any, and the ops run.
pub fn run_case(
    shim: &mut Shim,
    dir: &Path,
    ops: &[Op],
    call_timeout: Duration,
) -> Result<(Option<Violation>, usize), BridgeError> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)
        .map_err(|error| BridgeError(format!("{}: cannot create: {error}", dir.display())))?;
    let mut driver = Driver::open(shim, dir, call_timeout)?;
    let mut model = Model::new(has_sessions(driver.interface));
    let mut first = None;
    let mut ran = 0;
    for op in ops {
        ran += 1;
        if let Some(violation) = driver.run(op, &mut model)?.into_iter().next() {
            first = Some(violation);
            break;
        }
    }
    driver.close()?;
    Ok((first, ran))
}

/// `ops` without the op at `at`: a create takes every op on its task with it, and later
/// tasks are renumbered.
pub fn without(ops: &[Op], at: usize) -> Vec<Op> {
    let Op::Create { .. } = ops[at] else {
        let mut kept = ops.to_vec();
        kept.remove(at);
        return kept;
    };
    let removed = ops[..at]
        .iter()
        .filter(|op| matches!(op, Op::Create { .. }))
        .count();
    ops.iter()
        .enumerate()
        .filter(|(index, op)| *index != at && op.task() != Some(removed))
        .map(|(_, op)| renumbered(op, removed))
        .collect()
}

fn renumbered(op: &Op, removed: usize) -> Op {
    let mut op = op.clone();
    if let Some(task) = op.task_mut()
        && *task > removed
    {
        *task -= 1;
    }
    op
}

/// The shortest sequence found that still breaks `rule`, and what it showed.
pub fn shrink(
    shim: &mut Shim,
    dir: &Path,
    ops: Vec<Op>,
    violation: Violation,
    call_timeout: Duration,
) -> Result<(Vec<Op>, Violation), BridgeError> {
    let mut best = (ops, violation);
    let mut runs = 0;
    'outer: while runs < SHRINK_RUNS_MAX {
        for at in (0..best.0.len()).rev() {
            runs += 1;
            if runs > SHRINK_RUNS_MAX {
                break 'outer;
            }
            let candidate = without(&best.0, at);
            if candidate.is_empty() {
                continue;
            }
            if let (Some(found), _) = run_case(shim, dir, &candidate, call_timeout)?
                && found.rule == best.1.rule
            {
                best = (candidate, found);
                continue 'outer;
            }
        }
        break;
    }
    Ok(best)
}

/// Runs cases from `seed` on until `budget` passes or `cases_max` are run; each rule's
/// first breaking case is shrunk.
pub fn explore(
    shim: &mut Shim,
    work: &Path,
    seed: u64,
    budget: Duration,
    cases_max: usize,
    call_timeout: Duration,
    mut progress: impl FnMut(&Explored),
) -> Result<Explored, BridgeError> {
    let started = Instant::now();
    let sessions = has_sessions(shim.spec().interface);
    let dir: PathBuf = work.join("explore");
    let mut explored = Explored::default();
    while explored.cases < cases_max && started.elapsed() < budget {
        let case_seed = seed.wrapping_add(explored.cases as u64);
        let ops = case(case_seed, sessions);
        let (violation, ran) = run_case(shim, &dir, &ops, call_timeout)?;
        explored.cases += 1;
        explored.ops += ran;
        if let Some(violation) = violation {
            if let Some(known) = explored.findings.get_mut(violation.rule) {
                known.cases += 1;
            } else {
                let rule = violation.rule;
                let (ops, shown) =
                    shrink(shim, &dir, ops[..ran].to_vec(), violation, call_timeout)?;
                explored.findings.insert(
                    rule,
                    Finding {
                        rule,
                        detail: shown.detail,
                        ops,
                        seed: case_seed,
                        cases: 1,
                    },
                );
            }
        }
        progress(&explored);
    }
    explored.elapsed = started.elapsed();
    Ok(explored)
}
