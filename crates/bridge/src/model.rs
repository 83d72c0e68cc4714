//! The reference model: what the contract allows each operation to answer, given what came
//! before. It holds what the store was told and what it said (ids, the TTL it reported),
//! never what it stores; each answer is judged against the rules the interface can express:
//!
//! - **latch** — a terminal task takes no write, its status never changes, its result never
//!   changes, and a cancelled task serves no completion payload;
//! - **isolation** — a call reaches only tasks of its own session: not another session's,
//!   and a call without a session not a session's task, nor a session a task made without
//!   one (the TypeScript interface; Python's has no owner to check);
//! - **expiry** — a task is kept until its reported TTL from creation, gone after it, and a
//!   write after it is refused;
//! - **results** — only a terminal task has one, a completed task serves its own payload;
//! - **list** — pages show every task of the caller once and nothing else, a made-up cursor
//!   is refused;
//! - **cas** — a non-terminal write from a writer whose last read is stale overwrites what
//!   another wrote in between (neither interface carries an expected status);
//! - **status** — a status outside the five is refused; a store reads back what it was
//!   written; a legal write is accepted.

use crate::ops::{BOGUS_STATUS, Op, Session};
use crate::shim::Answer;
use serde_json::Value;
use std::collections::BTreeMap;

/// A rule an answer broke, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The rule's name (`latch.terminal-write-accepted`).
    pub rule: &'static str,
    /// What happened, in words.
    pub detail: String,
}

/// What a case's tasks are, as far as the model knows.
#[derive(Clone, Debug, Default)]
pub struct Model {
    /// Sessions are carried on calls (TypeScript), so isolation is checked.
    pub sessions: bool,
    /// The store's clock, in ms since the case began.
    pub now_ms: u64,
    /// The tasks, in the order created.
    pub tasks: Vec<ModelTask>,
}

/// One task as the model knows it.
#[derive(Clone, Debug)]
pub struct ModelTask {
    /// Its id, as the store gave it.
    pub id: String,
    /// The session that created it.
    pub owner: Session,
    /// Its status: one of the five.
    pub status: String,
    /// When it was created.
    pub created_ms: u64,
    /// The TTL the store reported (none: unlimited).
    pub ttl_ms: Option<u64>,
    /// Its terminal result (the payload of the write that ended it).
    pub result: Option<Value>,
    /// The status each session last read or wrote.
    pub seen: BTreeMap<Session, String>,
    /// A status outside the five was written to it (refused or not).
    pub unknown_status_tried: bool,
}

/// Whether a task is alive at a moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Alive {
    Yes,
    /// Exactly at its TTL: either answer is allowed.
    Edge,
    No,
}

fn terminal(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "cancelled")
}

impl ModelTask {
    fn alive(&self, now_ms: u64) -> Alive {
        match self.ttl_ms {
            None => Alive::Yes,
            Some(ttl) if now_ms < self.created_ms + ttl => Alive::Yes,
            Some(ttl) if now_ms == self.created_ms + ttl => Alive::Edge,
            Some(_) => Alive::No,
        }
    }
}

impl Model {
    /// A model for a case; `sessions` when the interface carries them.
    pub fn new(sessions: bool) -> Model {
        Model {
            sessions,
            ..Model::default()
        }
    }

    /// Whether `session` may reach `task`.
    fn visible(&self, task: &ModelTask, session: Session) -> bool {
        !self.sessions || task.owner == session
    }

    /// The isolation rule a call by `session` on `task` that it may not reach broke.
    fn isolation_rule(task: &ModelTask, session: Session) -> &'static str {
        match (task.owner, session) {
            (Session::None, _) => "isolation.session-reaches-unowned-task",
            (_, Session::None) => "isolation.sessionless-call-reaches-owned-task",
            _ => "isolation.foreign-session-reaches-task",
        }
    }

    /// Records a create the store answered with `task` (its Task object).
    pub fn created(&mut self, session: Session, task: &Value) -> Result<(), Violation> {
        let Some(id) = task["taskId"].as_str() else {
            return Err(Violation {
                rule: "accepts.legal-write",
                detail: format!("the create answered no taskId: {task}"),
            });
        };
        if self.tasks.iter().any(|known| known.id == id) {
            return Err(Violation {
                rule: "status.unique-ids",
                detail: format!("the create answered the id of an earlier task, {id}"),
            });
        }
        self.tasks.push(ModelTask {
            id: id.to_owned(),
            owner: session,
            status: "working".to_owned(),
            created_ms: self.now_ms,
            ttl_ms: task["ttl"].as_u64(),
            result: None,
            seen: BTreeMap::from([(session, "working".to_owned())]),
            unknown_status_tried: false,
        });
        Ok(())
    }

    /// Judges the answers to `op` (one per call the interface made of it, in order; a
    /// refused call ends the op) and updates the model.
    pub fn judge(&mut self, op: &Op, answers: &[Answer]) -> Vec<Violation> {
        match *op {
            Op::Get { task, session } => self.judge_get(task, session, &answers[0]),
            Op::Result { task, session } => self.judge_result(task, session, &answers[0]),
            Op::Working { task, session }
            | Op::Resume { task, session }
            | Op::AskInput { task, session }
            | Op::Message { task, session }
            | Op::BogusStatus { task, session }
            | Op::Cancel { task, session }
            | Op::Fail { task, session } => self.judge_write(op, task, session, answers),
            Op::Complete { task, session, .. } => self.judge_write(op, task, session, answers),
            Op::Create { .. } | Op::ListAll { .. } | Op::BadCursor { .. } | Op::Advance { .. } => {
                Vec::new()
            }
        }
    }

    /// Why `task` is out of `session`'s reach now, if it is: the rule a reach breaks, and
    /// whether the edge of its TTL makes either answer fine.
    fn out_of_reach(&self, index: usize, session: Session) -> Option<(&'static str, bool)> {
        let task = &self.tasks[index];
        if !self.visible(task, session) {
            return Some((Self::isolation_rule(task, session), false));
        }
        match task.alive(self.now_ms) {
            Alive::Yes => None,
            Alive::Edge => Some(("expiry.gone-after-ttl", true)),
            Alive::No => Some(("expiry.gone-after-ttl", false)),
        }
    }

    fn judge_get(&mut self, index: usize, session: Session, answer: &Answer) -> Vec<Violation> {
        let shown = match answer {
            Answer::Returned(value) if value.is_object() => Some(value),
            _ => None,
        };
        let reach = self.out_of_reach(index, session);
        let now_ms = self.now_ms;
        let task = &mut self.tasks[index];
        match (reach, shown) {
            (Some((_, true)), _) | (Some(_), None) => Vec::new(),
            (Some((rule, false)), Some(value)) => vec![Violation {
                rule,
                detail: reached(task, session, "read", value),
            }],
            (None, None) if task.unknown_status_tried && matches!(answer, Answer::Thrown(_)) => {
                vec![Violation {
                    rule: "status.unknown-refused",
                    detail: poisoned(task, answer),
                }]
            }
            (None, None) => vec![Violation {
                rule: if matches!(answer, Answer::Thrown(_)) {
                    "status.reads-what-was-written"
                } else {
                    "expiry.kept-until-ttl"
                },
                detail: format!(
                    "task {} (ttl {}, {} ms old) read as {}",
                    task.id,
                    task.ttl_ms
                        .map_or("unlimited".to_owned(), |ttl| format!("{ttl} ms")),
                    now_ms - task.created_ms,
                    describe(answer)
                ),
            }],
            (None, Some(value)) => {
                let status = value["status"].as_str().unwrap_or("(none)").to_owned();
                task.seen.insert(session, status.clone());
                (status != task.status)
                    .then(|| Violation {
                        rule: if terminal(&task.status) {
                            "latch.status-changed"
                        } else {
                            "status.reads-what-was-written"
                        },
                        detail: format!("task {} was {} and read {status}", task.id, task.status),
                    })
                    .into_iter()
                    .collect()
            }
        }
    }

    fn judge_result(&mut self, index: usize, session: Session, answer: &Answer) -> Vec<Violation> {
        let payload = match answer {
            Answer::Returned(value) if value.is_object() => Some(value),
            _ => None,
        };
        let reach = self.out_of_reach(index, session);
        let task = &self.tasks[index];
        let problem = match (reach, payload) {
            (Some((_, true)), _) | (Some(_), None) => None,
            (Some((rule, false)), Some(value)) => {
                Some((rule, reached(task, session, "got the result of", value)))
            }
            (None, payload) => result_problem(task, payload),
        };
        problem
            .map(|(rule, detail)| Violation { rule, detail })
            .into_iter()
            .collect()
    }

    fn judge_write(
        &mut self,
        op: &Op,
        index: usize,
        session: Session,
        answers: &[Answer],
    ) -> Vec<Violation> {
        let accepted = answers
            .iter()
            .all(|answer| matches!(answer, Answer::Returned(_)));
        let reach = self.out_of_reach(index, session);
        let task = &mut self.tasks[index];
        if matches!(op, Op::BogusStatus { .. }) {
            task.unknown_status_tried = true;
        }
        let target = target_status(op, &task.status).to_owned();
        let target = target.as_str();
        let refusal = answers.iter().find_map(|answer| match answer {
            Answer::Thrown(thrown) => Some(format!("{}: {}", thrown.kind, thrown.message)),
            Answer::Returned(_) => None,
        });
        let violation = write_violation(op, task, session, reach, accepted, target, refusal);
        if accepted && reach.is_none() && !terminal(&task.status) && target != BOGUS_STATUS {
            task.status = target.to_owned();
            task.seen.insert(session, target.to_owned());
            if let Op::Complete { payload: tag, .. } = op {
                task.result = Some(crate::ops::payload(*tag));
            }
        }
        violation.into_iter().collect()
    }

    /// Moves the clock.
    pub fn advance(&mut self, ms: u64) {
        self.now_ms += ms;
    }

    /// The tasks `session` may list now, and those at the edge of their TTL (either way).
    pub fn listable(&self, session: Session) -> (Vec<&str>, Vec<&str>) {
        let mut sure = Vec::new();
        let mut edge = Vec::new();
        for task in &self.tasks {
            if !self.visible(task, session) {
                continue;
            }
            match task.alive(self.now_ms) {
                Alive::Yes => sure.push(task.id.as_str()),
                Alive::Edge => edge.push(task.id.as_str()),
                Alive::No => {}
            }
        }
        (sure, edge)
    }

    /// The rule a listed task out of `session`'s reach breaks.
    pub fn listed_rule(&self, id: &str, session: Session) -> Option<&'static str> {
        let task = self.tasks.iter().find(|task| task.id == id)?;
        if !self.visible(task, session) {
            return Some("isolation.list-shows-foreign-task");
        }
        (task.alive(self.now_ms) == Alive::No).then_some("expiry.gone-after-ttl")
    }
}

/// The rule a write broke, given whether its task was in reach (`reach`, as
/// [`Model::out_of_reach`] says) and whether every call of it was accepted.
fn write_violation(
    op: &Op,
    task: &ModelTask,
    session: Session,
    reach: Option<(&'static str, bool)>,
    accepted: bool,
    target: &str,
    refusal: Option<String>,
) -> Option<Violation> {
    let what = op_words(op);
    match (reach, accepted) {
        (Some((_, true)), _) => None,
        (Some((rule, false)), true) => Some(Violation {
            rule: if rule == "expiry.gone-after-ttl" {
                "expiry.late-write-accepted"
            } else {
                rule
            },
            detail: format!(
                "{what} of task {} by session {} was accepted{}",
                task.id,
                session.name(),
                if rule.starts_with("expiry") {
                    " after its TTL"
                } else {
                    ""
                }
            ),
        }),
        (Some(_), false) => None,
        (None, _) if terminal(&task.status) => accepted.then(|| Violation {
            rule: "latch.terminal-write-accepted",
            detail: format!(
                "{what} of task {}, already {}, was accepted",
                task.id, task.status
            ),
        }),
        (None, true) if target == BOGUS_STATUS => Some(Violation {
            rule: "status.unknown-refused",
            detail: format!(
                "the status {BOGUS_STATUS:?} was accepted for task {}",
                task.id
            ),
        }),
        (None, false) if target == BOGUS_STATUS => None,
        (None, false) => Some(Violation {
            rule: "accepts.legal-write",
            detail: format!(
                "{what} of task {} ({}) was refused: {}",
                task.id,
                task.status,
                refusal.unwrap_or_default()
            ),
        }),
        (None, true) if matches!(op, Op::Resume { .. }) => {
            (task.status != "working").then(|| Violation {
                rule: "cas.stale-write-accepted",
                detail: format!(
                    "{what} of task {} by a worker that last saw it working overwrote {} \
                     (the interface carries no expected status or version)",
                    task.id, task.status
                ),
            })
        }
        (None, true) => stale(task, session, target, &what),
    }
}

/// The status a write moves a task to.
fn target_status<'a>(op: &Op, current: &'a str) -> &'a str {
    match op {
        Op::Working { .. } | Op::Resume { .. } => "working",
        Op::AskInput { .. } => "input_required",
        Op::Message { .. } => current,
        Op::BogusStatus { .. } => BOGUS_STATUS,
        Op::Cancel { .. } => "cancelled",
        Op::Complete { .. } => "completed",
        Op::Fail { .. } => "failed",
        _ => current,
    }
}

/// `cas.stale-write-accepted`: a non-terminal status written by a writer that last saw
/// another status than the task's.
fn stale(task: &ModelTask, session: Session, target: &str, what: &str) -> Option<Violation> {
    let seen = task.seen.get(&session)?;
    (matches!(target, "working" | "input_required")
        && *seen != task.status
        && target != task.status)
        .then(|| Violation {
            rule: "cas.stale-write-accepted",
            detail: format!(
                "{what} of task {} by a writer that last saw it {seen} overwrote {} (the \
                 interface carries no expected status or version)",
                task.id, task.status
            ),
        })
}

fn result_problem(task: &ModelTask, payload: Option<&Value>) -> Option<(&'static str, String)> {
    let is_completion = |value: &Value| {
        value["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.starts_with("payload-"))
    };
    match (task.status.as_str(), payload) {
        ("completed", None) => Some((
            "results.completed-serves-its-payload",
            format!("completed task {} served no result", task.id),
        )),
        ("completed", Some(value)) if Some(value) != task.result.as_ref() => Some((
            "latch.result-changed",
            format!(
                "completed task {} served {value}, not the payload it completed with, {}",
                task.id,
                task.result
                    .as_ref()
                    .map_or("none".to_owned(), Value::to_string)
            ),
        )),
        ("cancelled", Some(value)) if is_completion(value) => Some((
            "latch.cancelled-with-payload",
            format!(
                "cancelled task {} served a completion payload: {value}",
                task.id
            ),
        )),
        (status, Some(value)) if !terminal(status) => Some((
            "results.only-when-terminal",
            format!("task {}, still {status}, served a result: {value}", task.id),
        )),
        _ => None,
    }
}

/// Why a task that was written an unknown status no longer reads.
pub fn poisoned(task: &ModelTask, answer: &Answer) -> String {
    format!(
        "an unknown status written to task {} was refused, yet stored: the task now fails \
         every read ({})",
        task.id,
        describe(answer).lines().next().unwrap_or("")
    )
}

fn reached(task: &ModelTask, session: Session, verb: &str, value: &Value) -> String {
    format!(
        "session {} {verb} task {} of session {}: {value}",
        session.name(),
        task.id,
        task.owner.name()
    )
}

/// An answer in words.
pub fn describe(answer: &Answer) -> String {
    match answer {
        Answer::Returned(value) => format!("{value}"),
        Answer::Thrown(thrown) => format!("a throw ({}: {})", thrown.kind, thrown.message),
    }
}

/// An op in words, for details.
pub fn op_words(op: &Op) -> String {
    match op {
        Op::Working { .. } => "setting working".to_owned(),
        Op::Resume { .. } => "a stale worker setting working".to_owned(),
        Op::AskInput { .. } => "setting input_required".to_owned(),
        Op::Message { .. } => "a status-message rewrite".to_owned(),
        Op::BogusStatus { .. } => format!("setting {BOGUS_STATUS:?}"),
        Op::Cancel { .. } => "a cancel".to_owned(),
        Op::Complete { payload, .. } => format!("a completion (payload-{payload})"),
        Op::Fail { .. } => "a failure".to_owned(),
        Op::Get { session, .. } => format!("a read by session {}", session.name()),
        Op::Result { session, .. } => format!("the result, read by session {}", session.name()),
        other => format!("{other:?}"),
    }
}
