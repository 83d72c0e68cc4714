//! The official MCP conformance suite's fixture tools (`serve --conformance-tools`), so
//! the suite's task scenarios can run against tasklatch as they run against the SDKs'
//! reference servers:
//!
//! - `greet` (`forbidden`): `Hello, {name}!` at once.
//! - `slow_compute` (`optional`): sleeps `seconds` (at most [`SLOW_COMPUTE_SECONDS_MAX`]),
//!   stopping early once its task is cancelled.
//! - `failing_job` (`required`): after a second, a tool error (`isError: true`).
//! - `protocol_error_job` (`required`): a JSON-RPC error, so its task ends `failed`.
//! - `confirm_delete` (`required`): asks its requestor to confirm (`input_required`,
//!   one elicitation), then reports what it did.
//! - `multi_input` (`required`): asks two questions at once; each may be answered alone.
//! - `test_tool_with_task` (`required`): asks for a name before it is admitted (a
//!   2026-07-28 multi round-trip request), then greets that name from its task.
//!
//! - `test_missing_capability` (`forbidden`): needs the client capability `sampling`;
//!   called without it, `-32021`.
//! - `test_streaming_elicitation` (`forbidden`): asks a question as a 2026-07-28
//!   `input_required` result (never as a request on the response stream).
//! - `test_logging_tool` (`forbidden`): answers without logging (no `logLevel` asked).
//! - `test_input_required_result_elicitation` (`forbidden`): a synchronous multi
//!   round-trip tool: asks for a name (`user_name`) until an accepted answer carries one.
//!
//! Nothing here has a side effect outside the task: the suite checks the wire, not work.

use super::tools::ToolSpec;
use super::wire::RpcError;
use crate::contract::{InputMap, TaskOutcome, TaskSupport};
use crate::runtime::{Env, InputAsk, ToolStep};
use crate::store::TaskStore;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The longest `slow_compute` sleeps, in seconds.
pub const SLOW_COMPUTE_SECONDS_MAX: u64 = 600;
/// How often a sleeping `slow_compute` looks for its cancellation.
const SLICE_MS: u64 = 50;

/// The suite's tool names, in `tools/list` order.
pub const NAMES: [&str; 11] = [
    "greet",
    "slow_compute",
    "failing_job",
    "protocol_error_job",
    "confirm_delete",
    "multi_input",
    "test_tool_with_task",
    "test_missing_capability",
    "test_streaming_elicitation",
    "test_logging_tool",
    "test_input_required_result_elicitation",
];

/// The client capability a tool needs declared on the request, if any.
pub fn required_capability(name: &str) -> Option<&'static str> {
    (name == "test_missing_capability").then_some("sampling")
}

/// The tools as `tools/list` shows them.
pub fn specs() -> Vec<ToolSpec> {
    let object = |properties: Value| json!({ "type": "object", "properties": properties });
    vec![
        ToolSpec {
            name: "greet",
            description: "Greets by name, at once (conformance fixture).",
            input_schema: object(json!({ "name": { "type": "string" } })),
            task_support: TaskSupport::Forbidden,
        },
        ToolSpec {
            name: "slow_compute",
            description: "Sleeps `seconds`, then reports `label` (conformance fixture).",
            input_schema: object(json!({
                "seconds": { "type": "number", "minimum": 0 },
                "label": { "type": "string" },
            })),
            task_support: TaskSupport::Optional,
        },
        ToolSpec {
            name: "failing_job",
            description: "Ends with a tool error after a second; only as a task (conformance fixture).",
            input_schema: object(json!({})),
            task_support: TaskSupport::Required,
        },
        ToolSpec {
            name: "protocol_error_job",
            description: "Ends with a JSON-RPC error; only as a task (conformance fixture).",
            input_schema: object(json!({})),
            task_support: TaskSupport::Required,
        },
        ToolSpec {
            name: "confirm_delete",
            description: "Asks to confirm deleting `filename`; only as a task (conformance fixture).",
            input_schema: object(json!({ "filename": { "type": "string" } })),
            task_support: TaskSupport::Required,
        },
        ToolSpec {
            name: "multi_input",
            description: "Asks two questions at once; only as a task (conformance fixture).",
            input_schema: object(json!({})),
            task_support: TaskSupport::Required,
        },
        ToolSpec {
            name: "test_tool_with_task",
            description: "Asks for a name before it starts, then greets it from a task (conformance fixture).",
            input_schema: object(json!({})),
            task_support: TaskSupport::Required,
        },
        ToolSpec {
            name: "test_missing_capability",
            description: "Needs the client's sampling capability (conformance diagnostic).",
            input_schema: object(json!({})),
            task_support: TaskSupport::Forbidden,
        },
        ToolSpec {
            name: "test_streaming_elicitation",
            description: "Asks a question as an input_required result (conformance diagnostic).",
            input_schema: object(json!({})),
            task_support: TaskSupport::Forbidden,
        },
        ToolSpec {
            name: "test_input_required_result_elicitation",
            description: "Asks for a name until it has one, then greets it (conformance fixture).",
            input_schema: object(json!({})),
            task_support: TaskSupport::Forbidden,
        },
        ToolSpec {
            name: "test_logging_tool",
            description: "Answers without logging (conformance diagnostic).",
            input_schema: object(json!({})),
            task_support: TaskSupport::Forbidden,
        },
    ]
}

/// Checks arguments by type only (the suite sends extra fields it does not describe).
pub fn validate(name: &str, arguments: &Map<String, Value>) -> Result<(), RpcError> {
    let string_or_absent = |field: &str| match arguments.get(field) {
        None | Some(Value::String(_)) => Ok(()),
        Some(_) => Err(RpcError::invalid_params(format!(
            "{name}: arguments.{field} must be a string"
        ))),
    };
    match name {
        "greet" => string_or_absent("name"),
        "confirm_delete" => string_or_absent("filename"),
        "slow_compute" => {
            string_or_absent("label")?;
            match arguments.get("seconds") {
                None => Ok(()),
                Some(seconds) if seconds.as_f64().is_some_and(|s| s >= 0.0) => Ok(()),
                Some(_) => Err(RpcError::invalid_params(
                    "slow_compute: arguments.seconds must be a non-negative number",
                )),
            }
        }
        _ => Ok(()),
    }
}

fn elicitation(message: String, properties: Value) -> Value {
    json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": { "type": "object", "properties": properties },
        },
    })
}

/// The accepted answer's `content.<field>`, if the requestor accepted.
fn accepted<'a>(responses: &'a InputMap, key: &str, field: &str) -> Option<&'a Value> {
    let response = responses.get(key)?;
    (response.get("action").and_then(Value::as_str) == Some("accept"))
        .then(|| response.get("content")?.get(field))
        .flatten()
}

/// What `test_tool_with_task` needs before it is admitted: a name.
pub fn prepare(name: &str, responses: &InputMap) -> Option<InputAsk> {
    if name == "test_streaming_elicitation" && !responses.contains_key("confirm") {
        let mut requests = Map::new();
        requests.insert(
            "confirm".into(),
            elicitation("Go on?".into(), json!({ "confirm": { "type": "boolean" } })),
        );
        return Some(InputAsk {
            message: "asking to go on".into(),
            requests,
        });
    }
    let asks_name = matches!(
        name,
        "test_tool_with_task" | "test_input_required_result_elicitation"
    );
    let named = accepted(responses, "user_name", "name").is_some_and(Value::is_string);
    if !asks_name || named {
        return None;
    }
    let mut requests = Map::new();
    requests.insert(
        "user_name".into(),
        elicitation(
            "What is your name?".into(),
            json!({ "name": { "type": "string" } }),
        ),
    );
    Some(InputAsk {
        message: "asking for a name".into(),
        requests,
    })
}

fn text(text: String, is_error: bool) -> ToolStep {
    ToolStep::Finished(TaskOutcome::Result {
        result: json!({ "content": [{ "type": "text", "text": text }], "isError": is_error }),
    })
}

/// Works for `seconds` (at most [`SLOW_COMPUTE_SECONDS_MAX`]), stopping when cancelled.
async fn slow_compute(
    arguments: &Map<String, Value>,
    task_id: Option<&str>,
    store: &dyn TaskStore,
    env: &dyn Env,
) -> ToolStep {
    let seconds = arguments
        .get("seconds")
        .and_then(Value::as_f64)
        .unwrap_or(0.0)
        .min(SLOW_COMPUTE_SECONDS_MAX as f64);
    let total_ms = (seconds * 1000.0) as u64;
    let worked = super::tools::work_unless_cancelled(env, store, task_id, total_ms, SLICE_MS).await;
    if !worked {
        return text("slow_compute stopped: cancelled".into(), true);
    }
    text(
        format!(
            "computed {} after {seconds} s",
            arguments
                .get("label")
                .and_then(Value::as_str)
                .unwrap_or_default()
        ),
        false,
    )
}

/// Asks to confirm, then deletes (in words) or keeps the file.
fn confirm_delete(filename: &str, responses: &InputMap) -> ToolStep {
    let Some(confirm) = responses.get("confirm") else {
        let mut requests = Map::new();
        requests.insert(
            "confirm".into(),
            elicitation(
                format!("Delete {filename}?"),
                json!({ "confirm": { "type": "boolean" } }),
            ),
        );
        return ToolStep::NeedsInput(InputAsk {
            message: format!("waiting for confirmation to delete {filename}"),
            requests,
        });
    };
    let confirmed = confirm.get("action").and_then(Value::as_str) == Some("accept")
        && confirm.pointer("/content/confirm") == Some(&Value::Bool(true));
    if confirmed {
        text(format!("Deleted {filename}"), false)
    } else {
        text(format!("Kept {filename}"), false)
    }
}

/// Asks for two answers, then names both.
fn multi_input(responses: &InputMap) -> ToolStep {
    let missing: Vec<&str> = ["first", "second"]
        .into_iter()
        .filter(|key| !responses.contains_key(*key))
        .collect();
    if !missing.is_empty() {
        let properties = json!({
            "name": { "type": "string" },
            "confirm": { "type": "boolean" },
        });
        let requests = missing
            .iter()
            .map(|key| {
                let question = elicitation(format!("The {key} answer?"), properties.clone());
                ((*key).to_owned(), question)
            })
            .collect();
        return ToolStep::NeedsInput(InputAsk {
            message: "waiting for two answers".into(),
            requests,
        });
    }
    let name_of = |key: &str| {
        accepted(responses, key, "name")
            .and_then(Value::as_str)
            .unwrap_or("(declined)")
            .to_owned()
    };
    text(
        format!("got {} and {}", name_of("first"), name_of("second")),
        false,
    )
}

/// Runs a suite tool, synchronously (`task_id: None`) or for a task, with the answers its
/// requestor gave so far (a task's stored ones, or a synchronous call's `inputResponses`).
pub async fn run(
    name: &str,
    arguments: Map<String, Value>,
    task_id: Option<String>,
    responses: InputMap,
    store: Arc<dyn TaskStore>,
    env: Arc<dyn Env>,
) -> ToolStep {
    let argument = |field: &str| {
        arguments
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    match name {
        "greet" => text(format!("Hello, {}!", argument("name")), false),
        "slow_compute" => slow_compute(&arguments, task_id.as_deref(), &*store, &*env).await,
        "failing_job" => {
            env.sleep(1_000).await;
            text("failing_job failed, as it always does".into(), true)
        }
        "protocol_error_job" => ToolStep::Finished(TaskOutcome::RpcError {
            code: -32603,
            message: "protocol_error_job: the job ended with a protocol error".into(),
            data: None,
        }),
        "confirm_delete" => confirm_delete(&argument("filename"), &responses),
        "multi_input" => multi_input(&responses),
        "test_tool_with_task" => {
            let name = accepted(&responses, "user_name", "name")
                .and_then(Value::as_str)
                .unwrap_or("stranger");
            text(format!("Hello, {name}, from a task!"), false)
        }
        "test_missing_capability" => text("sampling is declared".into(), false),
        "test_streaming_elicitation" => text("answered".into(), false),
        "test_logging_tool" => text("nothing logged: no logLevel was asked for".into(), false),
        "test_input_required_result_elicitation" => {
            // Only reached with an accepted name (`prepare` asks until then).
            let name = accepted(&responses, "user_name", "name")
                .and_then(Value::as_str)
                .unwrap_or("stranger");
            text(format!("Hello, {name}!"), false)
        }
        other => text(format!("{other} is not a conformance fixture"), true),
    }
}
