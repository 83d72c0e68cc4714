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
    /// The message is not valid JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Valid JSON, but not a JSON-RPC request; also a task asked of a session without it.
    pub const INVALID_REQUEST: i64 = -32600;
    /// Unknown method, a capability not offered for cancel or list, or a task support refusal.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Bad params, an unknown or foreign task, an idempotency collision, a bad cursor.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The store failed, or a `tasks/result` of a cancelled task.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// tasklatch's own, in the implementation-defined range: a caller's budget is spent
    /// (`mcp::limits`); HTTP `429` with `Retry-After`.
    pub const LIMITED: i64 = -32029;
    /// tasklatch's own: the server is draining (SIGTERM) and admits nothing new; blocked
    /// calls end with it. The task goes on: poll it, on this or another instance. HTTP
    /// `503` with `Retry-After`.
    pub const DRAINING: i64 = -32030;
}

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq)]
pub struct RpcError {
    /// The error code (see [`code`]).
    pub code: i64,
    /// The human-readable message.
    pub message: String,
    /// Extra detail for the client; omitted from the wire when `None`.
    pub data: Option<Value>,
}

impl RpcError {
    /// An error without `data`.
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The same error carrying `data`.
    pub fn with_data(mut self, data: Value) -> RpcError {
        self.data = Some(data);
        self
    }

    /// A `-32602` with this message.
    pub fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(code::INVALID_PARAMS, message)
    }

    /// The error object as it goes in a response's `error`.
    pub fn to_json(&self) -> Value {
        let mut error = Map::new();
        error.insert("code".into(), Value::from(self.code));
        error.insert("message".into(), Value::String(self.message.clone()));
        if let Some(data) = &self.data {
            error.insert("data".into(), data.clone());
        }
        Value::Object(error)
    }
}

/// One parsed incoming message.
#[derive(Clone, Debug, PartialEq)]
pub enum Incoming {
    /// A request: it gets exactly one response, with this `id`.
    Request {
        /// The request id (string or number), echoed in the response.
        id: Value,
        /// The JSON-RPC method (`tools/call`, `tasks/get`, …).
        method: String,
        /// Always an object (absent params read as `{}`).
        params: Map<String, Value>,
    },
    /// A notification: no `id`, never answered.
    Notification {
        /// The notification method (`notifications/initialized`, …).
        method: String,
        /// Always an object (absent params read as `{}`).
        params: Map<String, Value>,
    },
    /// A response to a request this server sent (an `elicitation/create` on behalf of a
    /// task, docs/design.md §12); one nobody is waiting for is ignored.
    Response {
        /// The id of the request answered (`null` when the peer could not read it).
        id: Value,
        /// Its `result`, or (`Err`) its `error` object.
        outcome: Result<Value, Value>,
    },
}

/// Parses one message. On failure, returns the error response to send (with the request's
/// id when it could be read, else `null`).
pub fn parse(text: &str) -> Result<Incoming, Value> {
    if let Some(request) = parse_plain_request(text) {
        return Ok(request);
    }
    parse_value(text)
}

/// The common case without a tree for the envelope: an object of exactly `jsonrpc: "2.0"`,
/// a string or number `id`, a string `method` and an object (or absent, or null) `params`,
/// each once. Anything else (invalid JSON included) is `None`, left to [`parse_value`],
/// which answers it as it always did; for what this accepts, both give the same request.
fn parse_plain_request(text: &str) -> Option<Incoming> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Plain<'a> {
        jsonrpc: &'a str,
        id: Value,
        method: String,
        #[serde(default)]
        params: Option<Map<String, Value>>,
    }
    // A derived struct also reads a JSON array; only objects are requests.
    if !text
        .trim_start_matches([' ', '\t', '\n', '\r'])
        .starts_with('{')
    {
        return None;
    }
    let plain: Plain = serde_json::from_str(text).ok()?;
    let id_readable = matches!(plain.id, Value::String(_) | Value::Number(_));
    (plain.jsonrpc == "2.0" && id_readable).then(|| Incoming::Request {
        id: plain.id,
        method: plain.method,
        params: plain.params.unwrap_or_default(),
    })
}

/// [`parse`] through a whole `Value`: every message, well-formed or not.
fn parse_value(text: &str) -> Result<Incoming, Value> {
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
            if let Some(result) = object.remove("result") {
                return Ok(Incoming::Response {
                    id: error_id,
                    outcome: Ok(result),
                });
            }
            if let Some(error) = object.remove("error") {
                return Ok(Incoming::Response {
                    id: error_id,
                    outcome: Err(error),
                });
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

// The envelopes below are built as maps, not with `json!`: `json!` serialises an embedded
// `Value` into a fresh copy, and a result can be a whole list page. Same values.

/// A success response to request `id`.
pub fn response(id: &Value, result: Value) -> Value {
    envelope(id, "result", result)
}

/// An error response to request `id` (`null` when the id could not be read).
pub fn error_response(id: &Value, error: &RpcError) -> Value {
    envelope(id, "error", error.to_json())
}

fn envelope(id: &Value, key: &str, body: Value) -> Value {
    let mut message = Map::new();
    message.insert("jsonrpc".into(), Value::String("2.0".into()));
    message.insert("id".into(), id.clone());
    message.insert(key.into(), body);
    Value::Object(message)
}

/// A notification message (no id) with these params.
pub fn notification(method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "method": method, "params": params })
}

/// Milliseconds since the Unix epoch as RFC 3339 UTC with milliseconds.
pub fn rfc3339(ms: u64) -> String {
    // Up to the end of year 9999 written here (every task's two timestamps are, on every
    // answer); beyond it, and as the reference the unit test holds this to, humantime.
    const YEAR_10000_MS: u64 = 253_402_300_800_000;
    if ms >= YEAR_10000_MS {
        return rfc3339_humantime(ms);
    }
    let (days, ms_of_day) = (ms / 86_400_000, ms % 86_400_000);
    let (year, month, day) = civil_from_days(days);
    let (hour, minute) = (ms_of_day / 3_600_000, ms_of_day / 60_000 % 60);
    let (second, milli) = (ms_of_day / 1_000 % 60, ms_of_day % 1_000);
    let mut text = String::with_capacity(24);
    for (value, width, after) in [
        (year, 4, '-'),
        (month, 2, '-'),
        (day, 2, 'T'),
        (hour, 2, ':'),
        (minute, 2, ':'),
        (second, 2, '.'),
        (milli, 3, 'Z'),
    ] {
        let mut divisor = 10u64.pow(width - 1);
        while divisor > 0 {
            text.push(char::from(b'0' + (value / divisor % 10) as u8));
            divisor /= 10;
        }
        text.push(after);
    }
    text
}

fn rfc3339_humantime(ms: u64) -> String {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
    humantime::format_rfc3339_millis(at).to_string()
}

/// (year, month, day) of the proleptic Gregorian calendar, `days` after 1970-01-01
/// (H. Hinnant's `civil_from_days`, for non-negative days).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
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
    let mut result = Map::new();
    result.insert("task".into(), task_json(record));
    result.insert("_meta".into(), json!({ VERSION_META: record.version }));
    Value::Object(result)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{Admission, TaskOutcome, request_digest};

    /// Records in every shape the wire renders: each status, with and without TTL, poll
    /// interval and message.
    pub(super) fn representative_records() -> Vec<TaskRecord> {
        let admitted = |ttl_ms, poll_interval_ms| {
            TaskRecord::admit(Admission {
                task_id: "0123456789abcdef0123456789abcdef".into(),
                auth_key: "tenant-0/user".into(),
                method: "tools/call".into(),
                tool_name: "export".into(),
                request_digest: request_digest("tools/call", "export", None),
                idempotency_key: Some("tenant-0/user#0".into()),
                now_ms: 1_767_225_600_123,
                ttl_ms,
                poll_interval_ms,
                correlation_id: "c0ffee".into(),
                era: crate::contract::Era::Core2025,
                input_responses: None,
            })
        };
        let mut records = vec![admitted(Some(600_000), Some(100)), admitted(None, None)];
        let base = records[0].clone();
        let mut asked = base.with_status(TaskStatus::InputRequired, 1_767_225_601_000);
        asked.status_message = Some("which \"columns\"?\n\u{e9}".into());
        records.push(asked);
        let mut done = base.with_status(TaskStatus::Completed, 1_767_225_602_999);
        done.outcome = Some(TaskOutcome::Result {
            result: json!({ "content": [{ "type": "text", "text": "ok" }], "isError": false }),
        });
        records.push(done);
        records.push(base.with_status(TaskStatus::Failed, 1_767_225_603_000));
        records.push(base.with_status(TaskStatus::Cancelled, 1_767_225_604_000));
        records
    }

    /// The envelopes as they were built before (with `json!`), for comparison.
    fn response_before(id: &Value, result: Value) -> Value {
        json!({ "jsonrpc": "2.0", "id": id, "result": result })
    }

    fn error_response_before(id: &Value, error: &RpcError) -> Value {
        let mut body = json!({ "code": error.code, "message": error.message });
        if let Some(data) = &error.data {
            body["data"] = data.clone();
        }
        json!({ "jsonrpc": "2.0", "id": id, "error": body })
    }

    fn create_task_result_before(record: &TaskRecord) -> Value {
        json!({ "task": task_json(record), "_meta": { VERSION_META: record.version } })
    }

    /// Same value, same bytes.
    fn same(now: &Value, before: &Value) {
        assert_eq!(now, before);
        assert_eq!(now.to_string(), before.to_string());
    }

    #[test]
    fn the_plain_request_path_parses_as_the_value_path() {
        let messages = [
            r#"{"id":1,"jsonrpc":"2.0","method":"tasks/get","params":{"taskId":"abc"}}"#,
            r#" {"jsonrpc":"2.0","id":"x\"y","method":"tools/call","params":{"name":"export","arguments":{"n":1.5e300,"t":[null,true]},"task":{"ttl":600000},"_meta":{"dev.tasklatch/idempotency-key":"k#1"}}}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"tasks/list"}"#,
            r#"{"jsonrpc":"2.0","id":-1.25,"method":"ping","params":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1,"a":2}}"#,
            // Left to the Value path:
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{},"extra":true}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}"#,
            r#"{"jsonrpc":"2\u002e0","id":1,"method":"m"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":[1],"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":true,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"["2.0",1,"m",{}]"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m"} trailing"#,
            r#"{"jsonrpc":"2.0","id":1,"#,
            "",
            "null",
        ];
        for text in messages {
            assert_eq!(parse(text), parse_value(text), "{text}");
        }
        assert!(parse_plain_request(messages[0]).is_some());
        assert!(
            parse_plain_request(messages[4]).is_some(),
            "later duplicate wins"
        );
        assert!(parse_plain_request(messages[5]).is_none());
    }

    #[test]
    fn responses_carry_their_id_and_outcome() {
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","id":"a-1","result":{"action":"accept"}}"#),
            Ok(Incoming::Response {
                id: json!("a-1"),
                outcome: Ok(json!({ "action": "accept" })),
            })
        );
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"no"}}"#),
            Ok(Incoming::Response {
                id: json!(7),
                outcome: Err(json!({ "code": -1, "message": "no" })),
            })
        );
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#),
            Ok(Incoming::Response {
                id: Value::Null,
                outcome: Err(json!({ "code": -32700, "message": "x" })),
            })
        );
        // A response with an unreadable id is still refused as before.
        assert!(parse(r#"{"jsonrpc":"2.0","id":{},"result":{}}"#).is_err());
    }

    #[test]
    fn timestamps_are_humantime_s() {
        let day = 86_400_000u64;
        let mut samples = vec![
            0,
            1,
            999,
            1_000,
            day - 1,
            day,
            951_782_400_000,     // 2000-02-29
            951_868_800_000 - 1, // 2000-02-29T23:59:59.999
            4_107_542_400_000,   // 2100-02-28
            4_107_628_800_000,   // 2100-03-01
            1_767_225_600_123,
            253_402_300_799_999, // 9999-12-31T23:59:59.999 (humantime refuses later years)
        ];
        // Every day of four centuries, at a moving time of day.
        let mut ms = 0u64;
        while ms < 146_097 * 4 * day {
            samples.push(ms);
            ms += day + 3_601_007;
        }
        for ms in samples {
            assert_eq!(rfc3339(ms), rfc3339_humantime(ms), "{ms}");
        }
    }

    #[test]
    fn envelopes_are_unchanged() {
        for id in [json!(1), json!("req-\"7\""), Value::Null] {
            for record in representative_records() {
                same(
                    &response(&id, task_result_json(&record)),
                    &response_before(&id, task_result_json(&record)),
                );
                same(
                    &create_task_result_json(&record),
                    &create_task_result_before(&record),
                );
            }
            for error in [
                RpcError::invalid_params("Failed to retrieve task: Task not found"),
                RpcError::new(code::INTERNAL_ERROR, "Task was cancelled")
                    .with_data(json!({ "taskId": "t", "status": "cancelled" })),
                RpcError::new(-1, "negative"),
            ] {
                same(
                    &error_response(&id, &error),
                    &error_response_before(&id, &error),
                );
            }
        }
    }
}
