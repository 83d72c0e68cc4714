//! What a client's answers come to for the oracle: each MCP answer read back into a
//! decision and the tasks it showed, independently of how the server rendered them.

use super::client::Reply;
use crate::check::{Revealed, WireFields};
use crate::contract::{Decision, Era, TaskOutcome, TaskRecord, TaskStatus};
use crate::mcp::modern;
use crate::mcp::wire;
use serde_json::json;

/// A wire `Task` object as the oracle reads it, in the shape of `era`. The wire never
/// names the owner; the version comes from tasklatch's `_meta` where the answer carries it.
pub(super) fn revealed_of_wire(
    task: &serde_json::Value,
    version: Option<u64>,
    era: Era,
) -> Option<Revealed> {
    Some(Revealed {
        task_id: task["taskId"].as_str()?.to_owned(),
        auth_key: String::new(),
        status: serde::Deserialize::deserialize(&task["status"]).ok()?,
        version,
        outcome: None,
        fields: Some(Box::new(WireFields::parse(task, era))),
    })
}

pub(super) fn version_meta(value: &serde_json::Value) -> Option<u64> {
    value["_meta"][wire::VERSION_META].as_u64()
}

/// What an answer came to for the oracle: a decision and what it showed; `None` when the
/// store was unreachable (nothing happened).
pub(super) type Shown = Option<(Decision, Vec<Revealed>)>;

/// A `tasks/get` answer as a decision and what it showed.
pub(super) fn get_answer(reply: Reply) -> Shown {
    match reply {
        Reply::Result(task) => Some((
            Decision::ReturnStatus,
            revealed_of_wire(&task, version_meta(&task), Era::Core2025)
                .into_iter()
                .collect(),
        )),
        // Not found, another tenant's, expired: one answer on the wire.
        Reply::Error { .. } => Some((Decision::BlockNotFound, Vec::new())),
        Reply::Unavailable | Reply::Lost => None,
    }
}

/// A 2026-07-28 `tasks/get` answer: the task, its outcome inlined once terminal.
pub(super) fn detailed_answer(reply: Reply) -> Shown {
    match reply {
        Reply::Result(task) => {
            let mut seen = revealed_of_wire(&task, version_meta(&task), Era::Extension2026);
            if let Some(seen) = &mut seen {
                seen.outcome = inlined_outcome(&task);
            }
            Some((Decision::ReturnStatus, seen.into_iter().collect()))
        }
        Reply::Error { .. } => Some((Decision::BlockNotFound, Vec::new())),
        Reply::Unavailable | Reply::Lost => None,
    }
}

/// A 2026-07-28 acknowledgement (`tasks/cancel`, `tasks/update`): the same empty answer
/// whether the write applied or not, except tasklatch's `_meta` version, present when it
/// applied (`applied`: the decision that means). Without it: `ALREADY_TERMINAL` for a
/// cancel, `IGNORE_INPUT` for an update. A cancel whose `_meta` status is still live was
/// acknowledged past the task's point of no return.
pub(super) fn ack_answer(reply: Reply, task_id: &str, applied: Decision) -> Shown {
    match reply {
        Reply::Result(ack) => match version_meta(&ack) {
            Some(version) => {
                let said = ack["_meta"][modern::STATUS_META]
                    .as_str()
                    .and_then(|status| serde::Deserialize::deserialize(&json!(status)).ok());
                let (applied, status) = match (applied, said) {
                    (Decision::ApplyCancel, Some(live)) if !TaskStatus::is_terminal(live) => {
                        (Decision::PastPointOfNoReturn, Some(live))
                    }
                    (Decision::ApplyCancel, _) => (applied, Some(TaskStatus::Cancelled)),
                    (_, said) => (applied, said),
                };
                let seen = status.map(|status| Revealed {
                    task_id: task_id.to_owned(),
                    auth_key: String::new(),
                    status,
                    version: Some(version),
                    outcome: None,
                    fields: None,
                });
                Some((applied, seen.into_iter().collect()))
            }
            None if applied == Decision::ApplyCancel => {
                Some((Decision::AlreadyTerminal, Vec::new()))
            }
            None => Some((Decision::IgnoreInput, Vec::new())),
        },
        Reply::Error { .. } => Some((Decision::BlockNotFound, Vec::new())),
        Reply::Unavailable | Reply::Lost => None,
    }
}

/// A `tasks/cancel` answer as a decision and what it showed.
pub(super) fn cancel_answer(reply: Reply) -> Shown {
    match reply {
        Reply::Result(task) => Some((
            Decision::ApplyCancel,
            revealed_of_wire(&task, version_meta(&task), Era::Core2025)
                .into_iter()
                .collect(),
        )),
        Reply::Error { message, .. } if message.starts_with("Cannot cancel task") => {
            Some((Decision::AlreadyTerminal, Vec::new()))
        }
        Reply::Error { .. } => Some((Decision::BlockNotFound, Vec::new())),
        Reply::Unavailable | Reply::Lost => None,
    }
}

/// A `tasks/result` answer as a decision and what it showed: the payload, for a task whose
/// status the client last saw as `status` (a payload names no status on the wire).
pub(super) fn result_answer(reply: Reply, task_id: &str, status: Option<TaskStatus>) -> Shown {
    let shown = |status: TaskStatus, outcome: TaskOutcome| Revealed {
        task_id: task_id.to_owned(),
        auth_key: String::new(),
        status,
        version: None,
        outcome: Some(outcome),
        fields: None,
    };
    match reply {
        Reply::Result(result) => {
            let failed = result["isError"] == serde_json::Value::Bool(true);
            let status = status.unwrap_or(if failed {
                TaskStatus::Failed
            } else {
                TaskStatus::Completed
            });
            Some((
                Decision::ReturnResult,
                vec![shown(status, TaskOutcome::Result { result })],
            ))
        }
        Reply::Error { data, .. } if data["status"] == "cancelled" => {
            Some((Decision::ReturnCancelled, Vec::new()))
        }
        Reply::Error { code, .. } if code == wire::code::INVALID_PARAMS => {
            Some((Decision::BlockNotFound, Vec::new()))
        }
        // The wrapped request's own JSON-RPC error, stored when the task failed.
        Reply::Error {
            code,
            message,
            data,
        } => Some((
            Decision::ReturnResult,
            vec![shown(
                TaskStatus::Failed,
                TaskOutcome::RpcError {
                    code,
                    message,
                    data: (!data.is_null()).then_some(data),
                },
            )],
        )),
        Reply::Unavailable | Reply::Lost => None,
    }
}

/// What an answer shows a client of one record (its payload is added for `tasks/result`).
pub(super) fn revealed_of(record: &TaskRecord) -> Revealed {
    Revealed {
        task_id: record.task_id.clone(),
        auth_key: record.auth_key.clone(),
        status: record.status,
        version: Some(record.version),
        outcome: None,
        fields: None,
    }
}

/// The outcome a 2026-07-28 task object inlines once terminal (`result` or `error`).
pub(super) fn inlined_outcome(task: &serde_json::Value) -> Option<TaskOutcome> {
    if let Some(result) = task.get("result") {
        return Some(TaskOutcome::Result {
            result: result.clone(),
        });
    }
    task.get("error").map(|error| TaskOutcome::RpcError {
        code: error["code"].as_i64().unwrap_or_default(),
        message: error["message"].as_str().unwrap_or_default().to_owned(),
        data: error.get("data").cloned(),
    })
}
