//! One store opened through a shim, driven an [`Op`] at a time and judged by the [`Model`].

use crate::model::{Model, Violation};
use crate::ops::{self, Op, Session};
use crate::shim::{Answer, BridgeError, Shim};
use crate::spec::Interface;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

/// Pages a list walk reads at most.
const PAGES_MAX: usize = 64;
/// A cursor no page gave.
pub const BAD_CURSOR: &str = "tasklatch-no-such-cursor";

/// A store of the shim, open for one case.
pub struct Driver<'a> {
    /// The shim.
    pub shim: &'a mut Shim,
    /// The store's handle in the shim.
    pub store: u64,
    /// Its interface.
    pub interface: Interface,
    /// How long one call may take.
    pub call_timeout: Duration,
}

impl<'a> Driver<'a> {
    /// Opens a fresh store whose data lives in `dir`.
    pub fn open(
        shim: &'a mut Shim,
        dir: &Path,
        call_timeout: Duration,
    ) -> Result<Driver<'a>, BridgeError> {
        let interface = shim.spec().interface;
        let answer = shim.request(
            json!({ "op": "open", "dir": dir.display().to_string() }),
            call_timeout,
        )?;
        let store = match answer {
            Answer::Returned(value) => value["store"].as_u64(),
            Answer::Thrown(thrown) => {
                return Err(BridgeError(format!(
                    "{}: the factory threw: {}: {}",
                    shim.spec().describe(),
                    thrown.kind,
                    thrown.message
                )));
            }
        };
        let store = store.ok_or_else(|| BridgeError("open answered no store handle".into()))?;
        Ok(Driver {
            shim,
            store,
            interface,
            call_timeout,
        })
    }

    /// Closes the store (its `cleanup`, `close` or `dispose`, if it has one).
    pub fn close(self) -> Result<(), BridgeError> {
        self.shim
            .request(
                json!({ "op": "close", "store": self.store }),
                self.call_timeout,
            )
            .map(|_| ())
    }

    /// The request that calls `call` on this store.
    pub fn request_of(&self, call: &ops::Call) -> Value {
        json!({ "op": "call", "store": self.store, "method": call.method, "args": call.args })
    }

    /// Calls `call` and waits for its answer.
    pub fn call(&mut self, call: &ops::Call) -> Result<Answer, BridgeError> {
        let request = self.request_of(call);
        self.shim.request(request, self.call_timeout)
    }

    /// Moves the store's clock by `ms`; the instant it shows then, in ms since the epoch.
    pub fn advance(&mut self, ms: u64) -> Result<u64, BridgeError> {
        match self.shim.request(
            json!({ "op": "clock", "advance_ms": ms }),
            self.call_timeout,
        )? {
            Answer::Returned(value) => Ok(value["now_ms"].as_u64().unwrap_or(0)),
            Answer::Thrown(thrown) => Err(BridgeError(format!("the clock: {}", thrown.message))),
        }
    }

    /// Runs `op`, judged by `model`; the violations it showed.
    pub fn run(&mut self, op: &Op, model: &mut Model) -> Result<Vec<Violation>, BridgeError> {
        match *op {
            Op::Advance { ms } => {
                let _ = self.advance(ms)?;
                model.advance(ms);
                Ok(Vec::new())
            }
            Op::ListAll { session } => self.list_all(session, model),
            Op::BadCursor { session } => {
                let answer =
                    self.call(&ops::list_call(self.interface, session, Some(BAD_CURSOR)))?;
                Ok(match answer {
                    Answer::Thrown(_) => Vec::new(),
                    Answer::Returned(value) => vec![Violation {
                        rule: "list.cursor-pages",
                        detail: format!("a made-up cursor was accepted: {value}"),
                    }],
                })
            }
            Op::Create { session, .. } => {
                let calls = ops::calls(self.interface, op, "", "").unwrap_or_default();
                match self.call(&calls[0])? {
                    Answer::Returned(task) => {
                        Ok(model.created(session, &task).err().into_iter().collect())
                    }
                    Answer::Thrown(thrown) => Ok(vec![Violation {
                        rule: "accepts.legal-write",
                        detail: format!(
                            "a create was refused: {}: {}",
                            thrown.kind, thrown.message
                        ),
                    }]),
                }
            }
            _ => self.run_on_task(op, model),
        }
    }

    fn run_on_task(&mut self, op: &Op, model: &mut Model) -> Result<Vec<Violation>, BridgeError> {
        let index = op.task().expect("every other op names a task");
        let (id, status) = {
            let task = &model.tasks[index];
            (task.id.clone(), task.status.clone())
        };
        let calls = ops::calls(self.interface, op, &id, &status).unwrap_or_default();
        let mut answers = Vec::new();
        for call in &calls {
            let answer = self.call(call)?;
            let refused = matches!(answer, Answer::Thrown(_));
            answers.push(answer);
            if refused {
                break;
            }
        }
        let violations = model.judge(op, &answers);
        violations
            .into_iter()
            .map(|violation| self.attribute(model, index, violation))
            .collect()
    }

    /// A legal write refused, a completed task without its result, a live task left out of
    /// a list: if the task is gone when its owner reads it, the store dropped it before its
    /// TTL, and that is the finding (the rest follows from it).
    fn attribute(
        &mut self,
        model: &Model,
        index: usize,
        violation: Violation,
    ) -> Result<Violation, BridgeError> {
        if !matches!(
            violation.rule,
            "accepts.legal-write" | "results.completed-serves-its-payload" | "list.shows-own-tasks"
        ) {
            return Ok(violation);
        }
        let task = &model.tasks[index];
        let read = Op::Get {
            task: index,
            session: task.owner,
        };
        let calls = ops::calls(self.interface, &read, &task.id, &task.status).unwrap_or_default();
        let answer = self.call(&calls[0])?;
        if task.unknown_status_tried && matches!(answer, Answer::Thrown(_)) {
            return Ok(Violation {
                rule: "status.unknown-refused",
                detail: crate::model::poisoned(task, &answer),
            });
        }
        if !matches!(answer, Answer::Returned(Value::Null)) {
            return Ok(violation);
        }
        Ok(Violation {
            rule: "expiry.kept-until-ttl",
            detail: format!(
                "task {} (ttl {}) is gone {} ms after its creation, so {}",
                task.id,
                task.ttl_ms
                    .map_or("unlimited".to_owned(), |ttl| format!("{ttl} ms")),
                model.now_ms - task.created_ms,
                violation.detail
            ),
        })
    }

    /// Every task id `session`'s list shows, page by page (`PAGES_MAX` pages at most), in
    /// order and with any repeats; and the answer that was not a page, if one was not.
    pub fn list_pages(
        &mut self,
        session: Session,
    ) -> Result<(Vec<String>, Option<Answer>), BridgeError> {
        let mut listed = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..PAGES_MAX {
            let answer = self.call(&ops::list_call(self.interface, session, cursor.as_deref()))?;
            let page = answer
                .returned()
                .and_then(|value| ops::page_of(self.interface, value));
            let Some((tasks, next)) = page else {
                return Ok((listed, Some(answer)));
            };
            listed.extend(
                tasks
                    .iter()
                    .map(|task| task["taskId"].as_str().unwrap_or("").to_owned()),
            );
            match next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        Ok((listed, None))
    }

    fn list_all(&mut self, session: Session, model: &Model) -> Result<Vec<Violation>, BridgeError> {
        let (listed, failed) = self.list_pages(session)?;
        if let Some(answer) = failed {
            if let Some(task) = model.tasks.iter().find(|task| task.unknown_status_tried) {
                return Ok(vec![Violation {
                    rule: "status.unknown-refused",
                    detail: format!(
                        "{}; every list fails too",
                        crate::model::poisoned(task, &answer)
                    ),
                }]);
            }
            return Ok(vec![Violation {
                rule: "list.cursor-pages",
                detail: format!("a list page was not a page: {answer:?}"),
            }]);
        }
        if let Some((_, id)) = listed
            .iter()
            .enumerate()
            .find(|(at, id)| listed[..*at].contains(id))
        {
            return Ok(vec![Violation {
                rule: "list.cursor-pages",
                detail: format!("task {id} was listed twice across the pages"),
            }]);
        }
        let (sure, edge) = model.listable(session);
        let mut violations = Vec::new();
        for id in &listed {
            if sure.contains(&id.as_str()) || edge.contains(&id.as_str()) {
                continue;
            }
            if let Some(rule) = model.listed_rule(id, session) {
                violations.push(Violation {
                    rule,
                    detail: format!("session {}'s list showed task {id}", session.name()),
                });
            }
        }
        let missing: Vec<usize> = sure
            .iter()
            .filter(|id| !listed.iter().any(|known| known == *id))
            .filter_map(|id| model.tasks.iter().position(|task| task.id == *id))
            .collect();
        for index in missing {
            let violation = Violation {
                rule: "list.shows-own-tasks",
                detail: format!(
                    "session {}'s list left out its live task {}",
                    session.name(),
                    model.tasks[index].id
                ),
            };
            violations.push(self.attribute(model, index, violation)?);
        }
        Ok(violations)
    }
}
