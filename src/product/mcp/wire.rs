//! JSON-RPC 2.0 framing and the exact MCP 2025-11-25 shapes tasklatch speaks: parsing an
//! incoming message into a request or notification (or a precise error), building
//! responses, and rendering a task record as the wire's `Task` object.

use crate::contract::{TaskRecord, TaskStatus};
use serde_json::{Map, Value, json};

/// The protocol version this server speaks (and answers with when a client asks for one
/// it does not know).
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// Versions a client may ask for; the answer echoes the one asked.
pub const SUPPORTED_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// `_meta` key tying a message to its task (`tasks/result` answers carry it).
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// `_meta` key carrying the task's version on `tasks/get`, `tasks/cancel` and
/// `CreateTaskResult` answers (a result's `_meta` is open): it grows by one per change, so
/// a reader can order what it saw (the simulation's oracle does).
pub const VERSION_META: &str = "dev.tasklatch/version";

/// `_meta` key of tasklatch's idempotency key (the protocol has none of its own).
pub const IDEMPOTENCY_KEY: &str = "dev.tasklatch/idempotency-key";

/// The JSON-RPC error codes the tasks spec names.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
}

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> RpcError {
        self.data = Some(data);
        self
    }

    pub fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(code::INVALID_PARAMS, message)
    }

    pub fn to_json(&self) -> Value {
        let mut error = json!({ "code": self.code, "message": self.message });
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }
}

/// One parsed incoming message.
#[derive(Clone, Debug, PartialEq)]
pub enum Incoming {
    Request {
        id: Value,
        method: String,
        /// Always an object (absent params read as `{}`).
        params: Map<String, Value>,
    },
    Notification {
        method: String,
        params: Map<String, Value>,
    },
    /// A response to a request this server sent; tasklatch sends none, so it is ignored.
    Response,
}

/// Parses one message. On failure, returns the error response to send (with the request's
/// id when it could be read, else `null`).
pub fn parse(text: &str) -> Result<Incoming, Value> {
    let value: Value = serde_json::from_str(text).map_err(|error| {
        error_response(
            &Value::Null,
            &RpcError::new(code::PARSE_ERROR, format!("Parse error: {error}")),
        )
    })?;
    classify(value)
}

/// Classifies an already-parsed JSON value as a JSON-RPC message.
pub fn classify(value: Value) -> Result<Incoming, Value> {
    let invalid = |id: &Value, message: &str| {
        error_response(
            id,
            &RpcError::new(code::INVALID_REQUEST, format!("Invalid request: {message}")),
        )
    };
    let Value::Object(mut object) = value else {
        let message = if value.is_array() {
            "batches are not part of MCP 2025-11-25; send one message at a time"
        } else {
            "a message must be a JSON object"
        };
        return Err(invalid(&Value::Null, message));
    };
    // The id, if readable, goes into any error answer.
    let id = match object.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(id.clone()),
        Some(Value::Null) | None => None,
        Some(_) => return Err(invalid(&Value::Null, "id must be a string or a number")),
    };
    let error_id = id.clone().unwrap_or(Value::Null);
    if object.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return Err(invalid(&error_id, "jsonrpc must be \"2.0\""));
    }
    let method = match object.remove("method") {
        Some(Value::String(method)) => method,
        Some(_) => return Err(invalid(&error_id, "method must be a string")),
        None => {
            if object.contains_key("result") || object.contains_key("error") {
                return Ok(Incoming::Response);
            }
            return Err(invalid(&error_id, "method is missing"));
        }
    };
    let params = match object.remove("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(params)) => params,
        Some(_) => return Err(invalid(&error_id, "params must be an object")),
    };
    Ok(match id {
        Some(id) => Incoming::Request { id, method, params },
        None if object.contains_key("id") => {
            return Err(invalid(&Value::Null, "id must not be null"));
        }
        None => Incoming::Notification { method, params },
    })
}

pub fn response(id: &Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

pub fn error_response(id: &Value, error: &RpcError) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": error.to_json() })
}

pub fn notification(method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "method": method, "params": params })
}

/// Milliseconds since the Unix epoch as RFC 3339 UTC with milliseconds.
pub fn rfc3339(ms: u64) -> String {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
    humantime::format_rfc3339_millis(at).to_string()
}

/// The wire's `Task` object for a record: `ttl` always present (`null`: unlimited).
pub fn task_json(record: &TaskRecord) -> Value {
    let mut task = json!({
        "taskId": record.task_id,
        "status": record.status.as_str(),
        "createdAt": rfc3339(record.created_at_ms),
        "lastUpdatedAt": rfc3339(record.updated_at_ms),
        "ttl": record.ttl_ms,
    });
    if let Some(message) = status_message(record) {
        task["statusMessage"] = Value::String(message);
    }
    if let Some(poll) = record.poll_interval_ms {
        task["pollInterval"] = json!(poll);
    }
    task
}

/// A `tasks/get` or `tasks/cancel` result: the task flattened, with its version in `_meta`.
pub fn task_result_json(record: &TaskRecord) -> Value {
    let mut task = task_json(record);
    task["_meta"] = json!({ VERSION_META: record.version });
    task
}

/// A `CreateTaskResult`: the task nested under `task`, its version in `_meta`.
pub fn create_task_result_json(record: &TaskRecord) -> Value {
    json!({ "task": task_json(record), "_meta": { VERSION_META: record.version } })
}

/// The record's message, or a default one for statuses a reader should be told about.
fn status_message(record: &TaskRecord) -> Option<String> {
    if let Some(message) = &record.status_message {
        return Some(message.clone());
    }
    match record.status {
        TaskStatus::Cancelled => Some("Cancelled by requestor".into()),
        TaskStatus::Failed => Some("The tool reported an error; tasks/result returns it".into()),
        _ => None,
    }
}

/// The `_meta` object naming the task an answer belongs to.
pub fn related_task_meta(task_id: &str) -> Value {
    json!({ RELATED_TASK: { "taskId": task_id } })
}

/// Reads an optional string param.
pub fn optional_string<'p>(
    params: &'p Map<String, Value>,
    name: &str,
) -> Result<Option<&'p str>, RpcError> {
    match params.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(RpcError::invalid_params(format!(
            "params.{name} must be a string"
        ))),
    }
}

/// Reads a required string param.
pub fn required_string<'p>(
    params: &'p Map<String, Value>,
    name: &str,
) -> Result<&'p str, RpcError> {
    optional_string(params, name)?
        .ok_or_else(|| RpcError::invalid_params(format!("params.{name} is required")))
}
