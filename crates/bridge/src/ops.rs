//! The operations the engines speak, and how each interface expresses them.
//!
//! An [`Op`] is what a server does with its store (admit a task, read it, move it, finish
//! it, cancel it, list); [`calls`] turns it into the method calls an interface offers, as
//! its SDK's own server makes them (the TypeScript SDK cancels with `updateTaskStatus(id,
//! 'cancelled', …)`; Python's `TaskContext.complete` is `store_result` then
//! `update_task(status="completed")`). What an interface cannot say (a session, in Python's)
//! is left out of the call, and the engines count what that leaves unchecked.

use crate::spec::Interface;
use serde_json::{Value, json};

/// Who makes a call: a session (TypeScript's `sessionId`), or none. Python's interface has
/// no owner parameter: there the session only names the writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Session {
    /// No session (stdio, or an unscoped call).
    None,
    /// Session `a`.
    A,
    /// Session `b`.
    B,
    /// Session `c` (a third identity, as the contract fixture's list case has).
    C,
}

impl Session {
    /// The `sessionId` argument: absent for [`Session::None`].
    fn argument(self) -> Value {
        match self {
            Session::None => undefined(),
            Session::A => json!("session-a"),
            Session::B => json!("session-b"),
            Session::C => json!("session-c"),
        }
    }

    /// As a snippet writes it.
    pub fn name(self) -> &'static str {
        match self {
            Session::None => "none",
            Session::A => "a",
            Session::B => "b",
            Session::C => "c",
        }
    }
}

/// One operation on a store. Tasks are named by their index among the case's creates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Admit a task, asking `ttl_ms` (none: unlimited).
    Create {
        /// The caller.
        session: Session,
        /// The TTL asked for.
        ttl_ms: Option<u64>,
    },
    /// Read a task.
    Get {
        /// The task.
        task: usize,
        /// The caller.
        session: Session,
    },
    /// Set `working` (a worker resuming, or one writing from a stale read).
    Working {
        /// The task.
        task: usize,
        /// The caller.
        session: Session,
    },
    /// A worker that claimed the task while it was `working`, and read nothing since,
    /// writes `working` again (a stale writer, if another wrote in between).
    Resume {
        /// The task.
        task: usize,
        /// The caller.
        session: Session,
    },
    /// Set `input_required` with a message.
    AskInput {
        /// The task.
        task: usize,
        /// The caller.
        session: Session,
    },
    /// Rewrite the status message, keeping the status the task last read.
    Message {
        /// The task.
        task: usize,
        /// The caller.
        session: Session,
    },
    /// Complete with payload `payload` (a tag the result carries).
    Complete {
        /// The task.
        task: usize,
        /// The caller.
        session: Session,
        /// The payload's tag.
        payload: u32,
    },
    /// Fail.
    Fail {
        /// The task.
        task: usize,
        /// The caller.
        session: Session,
    },
    /// Cancel.
    Cancel {
        /// The task.
        task: usize,
        /// The caller.
        session: Session,
    },
    /// Read the result.
    Result {
        /// The task.
        task: usize,
        /// The caller.
        session: Session,
    },
    /// Walk every page of the list.
    ListAll {
        /// The caller.
        session: Session,
    },
    /// List from a cursor no page gave.
    BadCursor {
        /// The caller.
        session: Session,
    },
    /// Write a status that is none of the five.
    BogusStatus {
        /// The task.
        task: usize,
        /// The caller.
        session: Session,
    },
    /// Move the store's clock.
    Advance {
        /// By this much.
        ms: u64,
    },
}

impl Op {
    /// The task it names, if it names one.
    pub fn task(&self) -> Option<usize> {
        self.clone().task_mut().copied()
    }

    /// The session that makes it (none for an op without a caller).
    pub fn session(&self) -> Session {
        match *self {
            Op::Create { session, .. }
            | Op::Get { session, .. }
            | Op::Working { session, .. }
            | Op::Resume { session, .. }
            | Op::AskInput { session, .. }
            | Op::Message { session, .. }
            | Op::Complete { session, .. }
            | Op::Fail { session, .. }
            | Op::Cancel { session, .. }
            | Op::Result { session, .. }
            | Op::ListAll { session }
            | Op::BadCursor { session }
            | Op::BogusStatus { session, .. } => session,
            Op::Advance { .. } => Session::None,
        }
    }

    /// The task it names, to renumber.
    pub fn task_mut(&mut self) -> Option<&mut usize> {
        match self {
            Op::Get { task, .. }
            | Op::Working { task, .. }
            | Op::Resume { task, .. }
            | Op::AskInput { task, .. }
            | Op::Message { task, .. }
            | Op::Complete { task, .. }
            | Op::Fail { task, .. }
            | Op::Cancel { task, .. }
            | Op::Result { task, .. }
            | Op::BogusStatus { task, .. } => Some(task),
            Op::Create { .. } | Op::ListAll { .. } | Op::BadCursor { .. } | Op::Advance { .. } => {
                None
            }
        }
    }
}

/// One method call of an interface.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// The method.
    pub method: &'static str,
    /// Its arguments.
    pub args: Vec<Value>,
}

/// JavaScript's `undefined` on the wire.
pub fn undefined() -> Value {
    json!({ "$undefined": true })
}

/// A completion payload carrying `tag`.
pub fn payload(tag: u32) -> Value {
    json!({ "content": [{ "type": "text", "text": format!("payload-{tag}") }] })
}

/// The failure payload.
pub fn failure() -> Value {
    json!({ "content": [{ "type": "text", "text": "failed" }], "isError": true })
}

/// The status message an `AskInput` writes.
pub const ASK_MESSAGE: &str = "need input";
/// The status message a `Message` writes.
pub const REWRITTEN_MESSAGE: &str = "rewritten";
/// The status that is none of the five.
pub const BOGUS_STATUS: &str = "bogus";

/// The calls that express `op` on `interface` for task id `id` (the task's id as the store
/// gave it; empty for ops without a task) whose status was last read as `status`. `None`:
/// the op is not one calls express ([`Op::ListAll`], [`Op::BadCursor`] and
/// [`Op::Advance`] are driven by the engine).
pub fn calls(interface: Interface, op: &Op, id: &str, status: &str) -> Option<Vec<Call>> {
    match interface {
        Interface::TsSdk => ts_sdk(op, id, status),
        Interface::PyMcp => py_mcp(op, id, status),
    }
}

fn call(method: &'static str, args: Vec<Value>) -> Call {
    Call { method, args }
}

fn ts_sdk(op: &Op, id: &str, status: &str) -> Option<Vec<Call>> {
    let update = |status: &str, message: Value, session: Session| {
        call(
            "updateTaskStatus",
            vec![json!(id), json!(status), message, session.argument()],
        )
    };
    Some(vec![match *op {
        Op::Create { session, ttl_ms } => call(
            "createTask",
            vec![
                json!({ "ttl": ttl_ms }),
                json!("request-1"),
                json!({ "method": "tools/call", "params": { "name": "job", "arguments": {} } }),
                session.argument(),
            ],
        ),
        Op::Get { session, .. } => call("getTask", vec![json!(id), session.argument()]),
        Op::Working { session, .. } | Op::Resume { session, .. } => {
            update("working", undefined(), session)
        }
        Op::AskInput { session, .. } => update("input_required", json!(ASK_MESSAGE), session),
        Op::Message { session, .. } => update(status, json!(REWRITTEN_MESSAGE), session),
        Op::BogusStatus { session, .. } => update(BOGUS_STATUS, undefined(), session),
        Op::Cancel { session, .. } => update(
            "cancelled",
            json!("Client cancelled task execution."),
            session,
        ),
        Op::Complete {
            session,
            payload: tag,
            ..
        } => call(
            "storeTaskResult",
            vec![
                json!(id),
                json!("completed"),
                payload(tag),
                session.argument(),
            ],
        ),
        Op::Fail { session, .. } => call(
            "storeTaskResult",
            vec![json!(id), json!("failed"), failure(), session.argument()],
        ),
        Op::Result { session, .. } => call("getTaskResult", vec![json!(id), session.argument()]),
        Op::ListAll { .. } | Op::BadCursor { .. } | Op::Advance { .. } => return None,
    }])
}

fn py_mcp(op: &Op, id: &str, _status: &str) -> Option<Vec<Call>> {
    let update =
        |status: Value, message: Value| call("update_task", vec![json!(id), status, message]);
    Some(match *op {
        Op::Create { ttl_ms, .. } => vec![call("create_task", vec![json!({ "ttl": ttl_ms })])],
        Op::Get { .. } => vec![call("get_task", vec![json!(id)])],
        Op::Working { .. } | Op::Resume { .. } => vec![update(json!("working"), Value::Null)],
        Op::AskInput { .. } => vec![update(json!("input_required"), json!(ASK_MESSAGE))],
        Op::Message { .. } => vec![update(Value::Null, json!(REWRITTEN_MESSAGE))],
        Op::BogusStatus { .. } => vec![update(json!(BOGUS_STATUS), Value::Null)],
        // `helpers.cancel_task` reads, refuses a terminal task, then writes `cancelled`;
        // the store-level write is the update.
        Op::Cancel { .. } => vec![update(
            json!("cancelled"),
            json!("Client cancelled task execution."),
        )],
        // `TaskContext.complete`: the result, then the status.
        Op::Complete { payload: tag, .. } => vec![
            call("store_result", vec![json!(id), payload(tag)]),
            update(json!("completed"), Value::Null),
        ],
        Op::Fail { .. } => vec![
            call("store_result", vec![json!(id), failure()]),
            update(json!("failed"), json!("failed")),
        ],
        Op::Result { .. } => vec![call("get_result", vec![json!(id)])],
        Op::ListAll { .. } | Op::BadCursor { .. } | Op::Advance { .. } => return None,
    })
}

/// The call that reads one page of the list from `cursor`.
pub fn list_call(interface: Interface, session: Session, cursor: Option<&str>) -> Call {
    let cursor = cursor.map_or(Value::Null, |cursor| json!(cursor));
    match interface {
        Interface::TsSdk => call(
            "listTasks",
            vec![
                if cursor.is_null() {
                    undefined()
                } else {
                    cursor
                },
                session.argument(),
            ],
        ),
        Interface::PyMcp => call("list_tasks", vec![cursor]),
    }
}

/// A page's tasks and next cursor, as `interface` returns them.
pub fn page_of(interface: Interface, value: &Value) -> Option<(Vec<Value>, Option<String>)> {
    let (tasks, next) = match interface {
        Interface::TsSdk => (value["tasks"].as_array()?, &value["nextCursor"]),
        Interface::PyMcp => (
            value.get(0)?.as_array()?,
            value.get(1).unwrap_or(&Value::Null),
        ),
    };
    Some((tasks.clone(), next.as_str().map(str::to_owned)))
}

/// Whether the interface carries the caller's session on its calls.
pub fn has_sessions(interface: Interface) -> bool {
    interface == Interface::TsSdk
}
