//! The probe's MCP client, in either protocol era: it builds each request the way the
//! era's spec shows it, sends it through a [`Connection`], and reads answers into
//! [`TaskView`]s.
//!
//! The spec's strings are restated here rather than taken from tasklatch's server, so that
//! a mistake in the server cannot be agreed with by the probe that judges it.

use super::sse::Listening;
use super::transport::{Connection, Exchange};
use crate::check::WireFields;
use crate::contract::{Era, TaskStatus};
use serde_json::{Map, Value, json};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The 2025-11-25 protocol version.
pub const VERSION_2025: &str = "2025-11-25";
/// The 2026-07-28 protocol version.
pub const VERSION_2026: &str = "2026-07-28";
/// The 2025-11-25 related-task `_meta` key.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
/// The 2026-07-28 tasks extension.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// The 2026-07-28 envelope's `_meta` keys.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The 2026-07-28 envelope's client capabilities key.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// tasklatch's own idempotency key (a private extension; other servers ignore it).
pub const IDEMPOTENCY_META: &str = "dev.tasklatch/idempotency-key";
/// How long the first answer of a freshly started server may take (an interpreter that
/// imports its SDK on a loaded machine takes seconds), whatever `--request-timeout` says.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Pages of `tools/list` or `tasks/list` the probe follows at most.
pub const PAGES_MAX: usize = 100;

/// JSON-RPC error codes the checks expect.
pub mod code {
    /// Malformed JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// Unknown method (and a tool called in the wrong mode, 2025-11-25).
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Bad params, unknown task.
    pub const INVALID_PARAMS: i64 = -32602;
    /// A required client capability was not declared (2026-07-28).
    pub const MISSING_CAPABILITY: i64 = -32021;
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What the server said about itself when the probe opened the era.
#[derive(Clone, Debug)]
pub struct Facts {
    /// The era opened.
    pub era: Era,
    /// `capabilities` (2025-11-25 `initialize`, 2026-07-28 `server/discover`).
    pub capabilities: Value,
    /// `serverInfo` (2025-11-25) or the `_meta` server info (2026-07-28), for the report.
    pub server_info: Value,
}

impl Facts {
    /// The server accepts `tools/call` as a task (2025-11-25:
    /// `capabilities.tasks.requests.tools.call`; 2026-07-28: the extension).
    pub fn tool_tasks(&self) -> bool {
        match self.era {
            Era::Core2025 => self.capabilities["tasks"]["requests"]["tools"]["call"].is_object(),
            Era::Extension2026 => self.capabilities["extensions"][TASKS_EXTENSION].is_object(),
        }
    }

    /// `tasks.list` declared (2025-11-25; the extension has no list).
    pub fn list(&self) -> bool {
        self.era == Era::Core2025 && self.capabilities["tasks"]["list"].is_object()
    }

    /// `tasks.cancel` declared (2025-11-25); the extension always has `tasks/cancel`.
    pub fn cancel(&self) -> bool {
        match self.era {
            Era::Core2025 => self.capabilities["tasks"]["cancel"].is_object(),
            Era::Extension2026 => self.tool_tasks(),
        }
    }
}

/// One tool as `tools/list` showed it.
#[derive(Clone, Debug)]
pub struct ToolInfo {
    /// Its name.
    pub name: String,
    /// `execution.taskSupport` as sent (2025-11-25; absent means `forbidden`).
    pub task_support: Option<Value>,
    /// `inputSchema`.
    pub input_schema: Value,
}

impl ToolInfo {
    /// `execution.taskSupport`, absent read as `forbidden`; `None` if it is not one of the
    /// three values.
    pub fn support(&self) -> Option<&str> {
        match &self.task_support {
            None => Some("forbidden"),
            Some(Value::String(value))
                if matches!(value.as_str(), "forbidden" | "optional" | "required") =>
            {
                Some(value.as_str())
            }
            Some(_) => None,
        }
    }
}

/// A task object read off an answer (a create, `tasks/get`, `tasks/cancel`, a list entry).
#[derive(Clone, Debug)]
pub struct TaskView {
    /// `taskId`.
    pub task_id: String,
    /// `status`, if it is one of the five.
    pub status: Option<TaskStatus>,
    /// The other fields, read in the era's shape.
    pub fields: WireFields,
}

impl TaskView {
    /// Reads `task` (the task object itself) in `era`'s shape; `None` without a string
    /// `taskId`.
    pub fn read(task: &Value, era: Era) -> Option<TaskView> {
        Some(TaskView {
            task_id: task.get("taskId")?.as_str()?.to_owned(),
            status: serde_json::from_value(task.get("status")?.clone()).ok(),
            fields: WireFields::parse(task, era),
        })
    }
}

/// A client of one identity in one era, over one connection.
pub struct Peer {
    /// The era every request is built in.
    pub era: Era,
    connection: Arc<Connection>,
    /// Request ids, shared with its siblings: ids must be unique on a connection (stdio
    /// routes answers by id).
    next_id: Arc<AtomicU64>,
    /// How long one request may wait for its answer.
    pub timeout: Duration,
    /// `MCP-Protocol-Version` to send over HTTP once the era is open (2025-11-25).
    negotiated: Mutex<Option<String>>,
    /// The client capabilities its `initialize` declares (2025-11-25; none by default).
    declares: Value,
}

impl Peer {
    /// A new connection of this peer's identity (over HTTP; a stdio connection is its
    /// process, so `None`).
    pub fn reconnected(&self) -> Option<Connection> {
        match &*self.connection {
            Connection::Http(http) => Some(Connection::Http(http.sibling())),
            Connection::Stdio(_) => None,
        }
    }

    /// A peer for `era` over `connection`.
    pub fn new(era: Era, connection: Arc<Connection>, timeout: Duration) -> Peer {
        Peer {
            era,
            connection,
            next_id: Arc::new(AtomicU64::new(1)),
            timeout,
            negotiated: Mutex::new(None),
            declares: json!({}),
        }
    }

    /// This peer, declaring `capabilities` in its `initialize` (`{"elicitation": {}}`).
    pub fn declaring(mut self, capabilities: Value) -> Peer {
        self.declares = capabilities;
        self
    }

    /// Another client of the same identity, era and connection; request ids stay unique
    /// on the connection (they are shared).
    pub fn sibling(&self) -> Peer {
        Peer {
            era: self.era,
            connection: self.connection.clone(),
            next_id: self.next_id.clone(),
            timeout: self.timeout,
            negotiated: Mutex::new(lock(&self.negotiated).clone()),
            declares: self.declares.clone(),
        }
    }

    /// The identity it sends as.
    pub fn identity(&self) -> &str {
        self.connection.identity()
    }

    /// The connection it sends over.
    pub fn connection(&self) -> &Arc<Connection> {
        &self.connection
    }

    /// Sends `method` with `params` in the era's shape (2026-07-28: the envelope, declaring
    /// the tasks extension) and returns the exchange.
    pub async fn request(&self, method: &str, params: Value) -> Exchange {
        self.request_declaring(method, params, true).await
    }

    /// As [`Peer::request`]; in 2026-07-28 `declare_extension` says whether the envelope
    /// declares the tasks extension (ignored in 2025-11-25).
    pub async fn request_declaring(
        &self,
        method: &str,
        params: Value,
        declare_extension: bool,
    ) -> Exchange {
        self.request_within(method, params, declare_extension, self.timeout)
            .await
    }

    async fn request_within(
        &self,
        method: &str,
        params: Value,
        declare_extension: bool,
        timeout: Duration,
    ) -> Exchange {
        // A stdio server that died on its own is spawned again (its death is a finding the
        // run reports), so the checks after it still run.
        if let Connection::Stdio(slot) = self.connection.as_ref()
            && !matches!(method, "initialize" | "server/discover")
            && let Ok(true) = slot.revive_if_dead()
        {
            let _ = Box::pin(self.open()).await;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let params = self.enveloped(params, declare_extension);
        let message = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let headers = self.headers(method, &message["params"]);
        self.connection
            .send(&message, &headers, true, timeout)
            .await
    }

    /// Opens a 2026-07-28 `subscriptions/listen` about `task_ids`, its request id
    /// `subscription` (each message of the stream names it), and reads the stream it is
    /// answered with; over HTTP only (an error says why not, or what the server answered).
    pub async fn subscribe(
        &self,
        subscription: &str,
        task_ids: &[String],
    ) -> Result<Listening, String> {
        let params = self.enveloped(json!({ "notifications": { "taskIds": task_ids } }), true);
        self.streamed(json!(subscription), "subscriptions/listen", params)
            .await
    }

    /// A 2025-11-25 `tasks/result` whose answer is read as a stream (over HTTP): what the
    /// server asks the client while the call waits arrives there, then the answer.
    pub async fn result_stream(&self, task_id: &str) -> Result<(Value, Listening), String> {
        let id = json!(self.next_id.fetch_add(1, Ordering::Relaxed));
        let stream = self
            .streamed(id.clone(), "tasks/result", json!({ "taskId": task_id }))
            .await?;
        Ok((id, stream))
    }

    /// The request `id` of `method` POSTed with its answer read as an event stream.
    async fn streamed(&self, id: Value, method: &str, params: Value) -> Result<Listening, String> {
        let message = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let headers = self.headers(method, &message["params"]);
        match &*self.connection {
            Connection::Http(http) => http.listen_to(&message.to_string(), &headers).await,
            Connection::Stdio(_) => Err(format!(
                "over stdio the answer of {method} is not a stream of its own"
            )),
        }
    }

    /// This session's GET stream (2025-11-25 over HTTP: what the server sends unasked).
    pub async fn session_stream(&self) -> Result<Listening, String> {
        let headers = [("mcp-protocol-version", VERSION_2025.to_owned())];
        match &*self.connection {
            Connection::Http(http) => http.listen(&headers).await,
            Connection::Stdio(_) => {
                Err("over stdio one connection is one session, with no second".to_owned())
            }
        }
    }

    /// Answers the server's request `id` with `result` (no answer awaited).
    pub async fn respond(&self, id: &Value, result: Value) -> Exchange {
        let message = json!({ "jsonrpc": "2.0", "id": id, "result": result });
        let headers = self.headers("", &message);
        self.connection
            .send(&message, &headers, false, self.timeout)
            .await
    }

    /// Sends a notification (no answer awaited).
    pub async fn notify(&self, method: &str, params: Value) -> Exchange {
        let message = json!({ "jsonrpc": "2.0", "method": method, "params": params });
        let headers = self.headers(method, &message["params"]);
        self.connection
            .send(&message, &headers, false, self.timeout)
            .await
    }

    /// Sends `text` as it is: malformed JSON, a wrong type.
    pub async fn send_raw(&self, text: &str) -> Exchange {
        if let Connection::Stdio(slot) = self.connection.as_ref()
            && let Ok(true) = slot.revive_if_dead()
        {
            let _ = self.open().await;
        }
        self.connection.send_raw(text, self.timeout).await
    }

    fn enveloped(&self, params: Value, declare_extension: bool) -> Value {
        if self.era == Era::Core2025 {
            return params;
        }
        let mut params = match params {
            Value::Object(object) => object,
            _ => Map::new(),
        };
        let extensions = if declare_extension {
            json!({ TASKS_EXTENSION: {} })
        } else {
            json!({})
        };
        let meta = params
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert(META_PROTOCOL_VERSION.into(), json!(VERSION_2026));
            meta.insert(
                META_CLIENT_CAPABILITIES.into(),
                json!({ "extensions": extensions }),
            );
        }
        Value::Object(params)
    }

    fn headers(&self, method: &str, params: &Value) -> Vec<(&'static str, String)> {
        match self.era {
            Era::Core2025 => lock(&self.negotiated)
                .clone()
                .map(|version| vec![("mcp-protocol-version", version)])
                .unwrap_or_default(),
            Era::Extension2026 => {
                let mut headers = vec![
                    ("mcp-protocol-version", VERSION_2026.to_owned()),
                    ("mcp-method", method.to_owned()),
                ];
                let name = match method {
                    "tools/call" => params["name"].as_str(),
                    "tasks/get" | "tasks/update" | "tasks/cancel" => params["taskId"].as_str(),
                    _ => None,
                };
                if let Some(name) = name {
                    headers.push(("mcp-name", name.to_owned()));
                }
                headers
            }
        }
    }

    /// Opens the era: 2025-11-25 `initialize` (then `notifications/initialized`), 2026-07-28
    /// `server/discover`. The error is the exchange that failed, for the report.
    pub async fn open(&self) -> Result<Facts, Box<Exchange>> {
        match self.era {
            Era::Core2025 => {
                let exchange = self
                    .request_within(
                        "initialize",
                        json!({
                            "protocolVersion": VERSION_2025,
                            "capabilities": self.declares,
                            "clientInfo": { "name": "tasklatch-probe", "version": env!("CARGO_PKG_VERSION") },
                        }),
                        true,
                        self.timeout.max(STARTUP_TIMEOUT),
                    )
                    .await;
                let Some(result) = exchange.result().cloned() else {
                    return Err(Box::new(exchange));
                };
                if let Some(version) = result["protocolVersion"].as_str() {
                    *lock(&self.negotiated) = Some(version.to_owned());
                }
                self.notify("notifications/initialized", json!({})).await;
                Ok(Facts {
                    era: self.era,
                    capabilities: result["capabilities"].clone(),
                    server_info: result["serverInfo"].clone(),
                })
            }
            Era::Extension2026 => {
                let exchange = self
                    .request_within(
                        "server/discover",
                        json!({}),
                        true,
                        self.timeout.max(STARTUP_TIMEOUT),
                    )
                    .await;
                let Some(result) = exchange.result().cloned() else {
                    return Err(Box::new(exchange));
                };
                Ok(Facts {
                    era: self.era,
                    capabilities: result["capabilities"].clone(),
                    server_info: result["_meta"]["io.modelcontextprotocol/serverInfo"].clone(),
                })
            }
        }
    }

    /// Every tool, following `nextCursor` (at most [`PAGES_MAX`] pages).
    pub async fn tools(&self) -> Result<Vec<ToolInfo>, Box<Exchange>> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..PAGES_MAX {
            let params = match &cursor {
                Some(cursor) => json!({ "cursor": cursor }),
                None => json!({}),
            };
            let exchange = self.request("tools/list", params).await;
            let Some(listed) = exchange
                .result()
                .and_then(|result| result["tools"].as_array())
            else {
                return Err(Box::new(exchange));
            };
            for tool in listed {
                let Some(name) = tool["name"].as_str() else {
                    continue;
                };
                tools.push(ToolInfo {
                    name: name.to_owned(),
                    task_support: tool["execution"].get("taskSupport").cloned(),
                    input_schema: tool["inputSchema"].clone(),
                });
            }
            cursor = exchange
                .result()
                .and_then(|result| result["nextCursor"].as_str().map(str::to_owned));
            if cursor.is_none() {
                break;
            }
        }
        Ok(tools)
    }

    /// `tools/call` of `tool` as a task: 2025-11-25 with `task` (and `ttl_ms` if given),
    /// 2026-07-28 declaring the extension (the server decides).
    pub async fn create(&self, tool: &str, arguments: &Value, ttl_ms: Option<u64>) -> Exchange {
        let mut params = json!({ "name": tool, "arguments": arguments });
        if self.era == Era::Core2025 {
            params["task"] = match ttl_ms {
                Some(ttl) => json!({ "ttl": ttl }),
                None => json!({}),
            };
        }
        self.request("tools/call", params).await
    }

    /// [`Peer::create`] with `meta` as the request's `_meta` (an idempotency key, say).
    pub async fn create_with_meta(&self, tool: &str, arguments: &Value, meta: Value) -> Exchange {
        let mut params = json!({ "name": tool, "arguments": arguments, "_meta": meta });
        if self.era == Era::Core2025 {
            params["task"] = json!({});
        }
        self.request("tools/call", params).await
    }

    /// `tools/call` of `tool` without a task (2026-07-28: without declaring the extension).
    pub async fn call_plain(&self, tool: &str, arguments: &Value) -> Exchange {
        self.request_declaring(
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
            false,
        )
        .await
    }

    /// `tasks/get`.
    pub async fn get(&self, task_id: &str) -> Exchange {
        self.request("tasks/get", json!({ "taskId": task_id }))
            .await
    }

    /// `tasks/result` (2025-11-25; removed in 2026-07-28).
    pub async fn result(&self, task_id: &str) -> Exchange {
        self.request("tasks/result", json!({ "taskId": task_id }))
            .await
    }

    /// `tasks/cancel`.
    pub async fn cancel(&self, task_id: &str) -> Exchange {
        self.request("tasks/cancel", json!({ "taskId": task_id }))
            .await
    }

    /// `tasks/list`, one page.
    pub async fn list(&self, cursor: Option<&str>) -> Exchange {
        let params = match cursor {
            Some(cursor) => json!({ "cursor": cursor }),
            None => json!({}),
        };
        self.request("tasks/list", params).await
    }

    /// `tasks/update` (2026-07-28).
    pub async fn update(&self, task_id: &str, responses: Value) -> Exchange {
        self.request(
            "tasks/update",
            json!({ "taskId": task_id, "inputResponses": responses }),
        )
        .await
    }

    /// The task a create answered with, in this era's shape: 2025-11-25 `result.task`,
    /// 2026-07-28 the flat result with `resultType: "task"`.
    pub fn created(&self, exchange: &Exchange) -> Option<TaskView> {
        let result = exchange.result()?;
        match self.era {
            Era::Core2025 => TaskView::read(result.get("task")?, self.era),
            Era::Extension2026 => {
                (result["resultType"] == "task").then_some(())?;
                TaskView::read(result, self.era)
            }
        }
    }

    /// The task a `tasks/get` or `tasks/cancel` answered with (flat in both eras).
    pub fn shown(&self, exchange: &Exchange) -> Option<TaskView> {
        TaskView::read(exchange.result()?, self.era)
    }

    /// Polls `tasks/get` until the task is terminal or `deadline_ms` (on the run's clock)
    /// passes; returns the last answer. The pause follows the task's `pollInterval`,
    /// bounded to 20..=1,000 ms.
    pub async fn wait_terminal(
        &self,
        task_id: &str,
        clock: super::transport::Clock,
        deadline_ms: u64,
    ) -> Exchange {
        loop {
            let exchange = self.get(task_id).await;
            let view = self.shown(&exchange);
            let terminal = view
                .as_ref()
                .and_then(|view| view.status)
                .is_some_and(TaskStatus::is_terminal);
            if terminal || view.is_none() || clock.now_ms() >= deadline_ms {
                return exchange;
            }
            let pause_ms = view
                .and_then(|view| view.fields.poll_interval_ms)
                .unwrap_or(100)
                .clamp(20, 1_000);
            tokio::time::sleep(Duration::from_millis(pause_ms)).await;
        }
    }
}

/// Arguments that satisfy `schema` as plainly as possible: each required property given
/// its default, its first enum value, or a simple value of its type. Users with tools
/// that need real arguments pass `--args`.
pub fn sample_arguments(schema: &Value) -> Value {
    let mut arguments = Map::new();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for name in required {
        let property = &schema["properties"][name];
        arguments.insert(name.to_owned(), sample_value(property, 0));
    }
    Value::Object(arguments)
}

fn sample_value(schema: &Value, depth: usize) -> Value {
    if let Some(default) = schema.get("default") {
        return default.clone();
    }
    if let Some(first) = schema["enum"].as_array().and_then(|values| values.first()) {
        return first.clone();
    }
    let kind = match &schema["type"] {
        Value::Array(kinds) => kinds.first().and_then(Value::as_str).unwrap_or("string"),
        Value::String(kind) => kind.as_str(),
        _ => "string",
    };
    match kind {
        "integer" | "number" => schema.get("minimum").cloned().unwrap_or(json!(1)),
        "boolean" => json!(false),
        "array" => json!([]),
        "null" => Value::Null,
        "object" if depth < 4 => {
            let mut inner = sample_arguments(schema);
            if let Value::Object(object) = &mut inner
                && depth > 0
            {
                object.retain(|_, value| !value.is_null());
            }
            inner
        }
        "object" => json!({}),
        _ => json!("probe"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_arguments_fill_required_properties_only() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": { "type": "string" },
                "count": { "type": "integer", "minimum": 3 },
                "mode": { "enum": ["fast", "slow"] },
                "delay_ms": { "type": "integer", "default": 10 },
                "optional": { "type": "string" },
            },
            "required": ["name", "count", "mode", "delay_ms"],
        });
        assert_eq!(
            sample_arguments(&schema),
            json!({ "name": "probe", "count": 3, "mode": "fast", "delay_ms": 10 })
        );
        assert_eq!(sample_arguments(&json!({})), json!({}));
    }

    #[test]
    fn task_support_absent_means_forbidden() {
        let tool = |support: Option<Value>| ToolInfo {
            name: "t".into(),
            task_support: support,
            input_schema: json!({}),
        };
        assert_eq!(tool(None).support(), Some("forbidden"));
        assert_eq!(tool(Some(json!("required"))).support(), Some("required"));
        assert_eq!(tool(Some(json!(true))).support(), None);
    }
}
