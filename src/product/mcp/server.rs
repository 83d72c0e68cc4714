//! The MCP request handler: one [`Server`] per process (store, tools, clock), one
//! [`Session`] per connection (who is calling, what was negotiated, where notifications
//! go). Every transport feeds messages to [`Server::handle`] and writes back what it
//! returns; the simulation does the same in memory.
//!
//! Decisions come from the store (which enforces the contract atomically); this module
//! only maps them to the wire. "Not yours", "does not exist" and "expired for someone
//! else" are one answer, byte for byte: a task id proves nothing.

use super::tools::{Catalog, ToolSpec};
use super::wire::{self, Incoming, RpcError, code};
use crate::contract::{Decision, Negotiated, TaskOutcome, TaskRecord};
use crate::runtime::{Env, Notify, ToolStep};
use crate::store::{CreateCommand, ListQuery, StoreError, TaskStore, WrappedRequest};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The message of a `-32603` caused by the store (the operation did not happen).
pub const STORE_UNAVAILABLE: &str = "Internal error: the task store is unavailable";

/// Server-wide settings.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// `serverInfo.name` in the `initialize` answer.
    pub name: String,
    /// `serverInfo.version` in the `initialize` answer.
    pub version: String,
    /// TTL of a task whose request names none; `None`: unlimited.
    pub ttl_ms_default: Option<u64>,
    /// Requested TTLs are clamped to this.
    pub ttl_ms_max: u64,
    /// The `pollInterval` tasks suggest.
    pub poll_interval_ms: u64,
    /// A blocked `tasks/result` re-reads the store at least this often (another replica's
    /// worker may finish the task; no wake-up reaches this process then).
    pub result_recheck_ms: u64,
    /// Page size of `tasks/list`.
    pub list_page: usize,
    /// Notifications queued per session before new ones are dropped (they are hints: the
    /// store is the truth, and clients poll).
    pub notifications_queued_max: usize,
    /// Write store errors to stderr (the caller only ever sees a generic `-32603`).
    pub log_store_errors: bool,
    /// Offer the conformance suite's fixture tools too (`serve --conformance-tools`).
    pub conformance_tools: bool,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            name: "tasklatch".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            ttl_ms_default: Some(3_600_000),
            ttl_ms_max: 86_400_000,
            poll_interval_ms: 500,
            result_recheck_ms: 250,
            list_page: 50,
            notifications_queued_max: 1_024,
            log_store_errors: true,
            conformance_tools: false,
        }
    }
}

/// Where a session's notifications go (a bounded queue the transport drains).
pub type Outbound = tokio::sync::mpsc::Sender<Value>;

/// One connection's view: the caller's authorization key, what the server offers it, and
/// its notification queue.
#[derive(Clone, Debug)]
pub struct Session {
    /// Stable per session, for notification routing.
    pub id: String,
    /// The authorization context tasks are bound to.
    pub auth_key: String,
    /// The task capabilities this session is offered.
    pub negotiated: Negotiated,
    /// From the `Idempotency-Key` header of the HTTP request being handled, if any.
    pub idempotency_header: Option<String>,
}

struct Subscriber {
    auth_key: String,
    outbound: Outbound,
}

/// A progress token a task-augmented call brought, kept until the task is terminal.
struct ProgressWatch {
    session: String,
    token: Value,
    sent: u64,
}

/// The handler shared by every session and transport.
pub struct Server {
    /// Where tasks live; every decision is the store's.
    pub store: Arc<dyn TaskStore>,
    /// The tools `tools/list` shows and `tools/call` runs.
    pub tools: Arc<dyn Catalog>,
    /// Clock and randomness (transports draw session ids from it).
    pub env: Arc<dyn Env>,
    /// The settings the server was built with.
    pub config: ServerConfig,
    pub(super) specs: Vec<ToolSpec>,
    /// Woken on every status change this process applies.
    changed: tokio::sync::Notify,
    subscribers: Mutex<BTreeMap<String, Subscriber>>,
    progress: Mutex<BTreeMap<String, ProgressWatch>>,
    /// Open 2026-07-28 `subscriptions/listen` streams, by a counter.
    pub(super) listeners: Mutex<BTreeMap<u64, super::modern::Listener>>,
    pub(super) listen_ids: std::sync::atomic::AtomicU64,
}

impl Server {
    /// A server over `store` serving `tools`; it reads the tool specs once, here.
    pub fn new(
        store: Arc<dyn TaskStore>,
        tools: Arc<dyn Catalog>,
        env: Arc<dyn Env>,
        config: ServerConfig,
    ) -> Server {
        Server {
            specs: tools.specs(),
            store,
            tools,
            env,
            config,
            changed: tokio::sync::Notify::new(),
            subscribers: Mutex::new(BTreeMap::new()),
            progress: Mutex::new(BTreeMap::new()),
            listeners: Mutex::new(BTreeMap::new()),
            listen_ids: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Routes `notifications/*` for tasks of `session.auth_key` to `outbound`.
    pub fn subscribe(&self, session: &Session, outbound: Outbound) {
        self.subscribers.lock().expect("subscribers").insert(
            session.id.clone(),
            Subscriber {
                auth_key: session.auth_key.clone(),
                outbound,
            },
        );
    }

    /// Forgets a closed session: its notification route and its progress watches.
    pub fn unsubscribe(&self, session_id: &str) {
        self.subscribers
            .lock()
            .expect("subscribers")
            .remove(session_id);
        self.progress
            .lock()
            .expect("progress")
            .retain(|_, watch| watch.session != session_id);
    }

    /// Handles one raw message; returns the response to send, if any.
    pub async fn handle_text(&self, session: &Session, text: &str) -> Option<Value> {
        match wire::parse(text) {
            Ok(incoming) => self.handle(session, incoming).await,
            Err(error) => Some(error),
        }
    }

    /// Handles one parsed message; returns the response to send, if any.
    pub async fn handle(&self, session: &Session, incoming: Incoming) -> Option<Value> {
        match incoming {
            Incoming::Request { id, method, params }
                if super::modern::carries_envelope(&params) =>
            {
                let answer = match super::modern::envelope(&params) {
                    Ok(envelope) if method == "subscriptions/listen" => {
                        // The stream is the session's outbound (stdio: stdout); its
                        // answer comes when it ends.
                        let outbound = self
                            .subscribers
                            .lock()
                            .expect("subscribers")
                            .get(&session.id)
                            .map(|subscriber| subscriber.outbound.clone());
                        match outbound {
                            Some(outbound) => {
                                match self.listen(session, &envelope, &id, &params, outbound) {
                                    Ok(()) => return None,
                                    Err(error) => Err(error),
                                }
                            }
                            None => Err(RpcError::new(
                                code::METHOD_NOT_FOUND,
                                "Method not found: subscriptions/listen needs a stream this connection does not have",
                            )),
                        }
                    }
                    Ok(envelope) => {
                        self.handle_modern(session, &envelope, &method, &params)
                            .await
                    }
                    Err(error) => Err(error),
                };
                Some(match answer {
                    Ok(result) => wire::response(&id, result),
                    Err(error) => wire::error_response(&id, &error),
                })
            }
            Incoming::Request { id, method, params } => {
                Some(match self.request(session, &method, &params).await {
                    Ok(result) => wire::response(&id, result),
                    Err(error) => wire::error_response(&id, &error),
                })
            }
            // notifications/initialized, notifications/cancelled (which the spec says
            // must not cancel tasks), anything else: nothing to answer.
            Incoming::Notification { .. } | Incoming::Response => None,
        }
    }

    async fn request(
        &self,
        session: &Session,
        method: &str,
        params: &Map<String, Value>,
    ) -> Result<Value, RpcError> {
        match method {
            "initialize" => Ok(self.initialize(session, params)),
            "ping" => Ok(json!({})),
            "tools/list" => Ok(json!({
                "tools": self.specs.iter().map(ToolSpec::to_json).collect::<Vec<_>>()
            })),
            "tools/call" => self.call_tool(session, params).await,
            "tasks/get" => self.get(session, params),
            "tasks/result" => self.result(session, params).await,
            "tasks/cancel" => self.cancel(session, params),
            "tasks/list" => self.list(session, params),
            other => Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                format!("Method not found: {other}"),
            )),
        }
    }

    /// The capabilities this session is offered: `tasks.list` only where callers are
    /// identified (never over stdio).
    pub fn capabilities(negotiated: Negotiated) -> Value {
        let mut tasks = Map::new();
        if negotiated.list {
            tasks.insert("list".into(), json!({}));
        }
        if negotiated.cancel {
            tasks.insert("cancel".into(), json!({}));
        }
        if negotiated.tools_call {
            // The nested `call: {}` is what real clients test for.
            tasks.insert("requests".into(), json!({ "tools": { "call": {} } }));
        }
        json!({ "tools": { "listChanged": false }, "tasks": tasks })
    }

    fn initialize(&self, session: &Session, params: &Map<String, Value>) -> Value {
        let asked = params.get("protocolVersion").and_then(Value::as_str);
        let version = match asked {
            Some(asked) if wire::SUPPORTED_VERSIONS.contains(&asked) => asked,
            _ => wire::PROTOCOL_VERSION,
        };
        json!({
            "protocolVersion": version,
            "capabilities": Server::capabilities(session.negotiated),
            "serverInfo": { "name": self.config.name, "version": self.config.version },
        })
    }

    async fn call_tool(
        &self,
        session: &Session,
        params: &Map<String, Value>,
    ) -> Result<Value, RpcError> {
        let (name, spec, arguments) = self.tool_call_target(params)?;
        let task = match params.get("task") {
            None | Some(Value::Null) => None,
            Some(Value::Object(task)) => Some(task),
            Some(_) => return Err(RpcError::invalid_params("params.task must be an object")),
        };
        let requested_ttl_ms = match task.and_then(|task| task.get("ttl")) {
            None | Some(Value::Null) => None,
            Some(ttl) => Some(ttl.as_u64().ok_or_else(|| {
                RpcError::invalid_params("params.task.ttl must be a non-negative integer")
            })?),
        };
        let meta = params.get("_meta").and_then(Value::as_object);
        let idempotency_key = self.idempotency_key(session, meta)?;
        self.tools.validate(name, &arguments)?;
        let now_ms = self.env.now_ms();
        let ttl_ms = requested_ttl_ms
            .or(self.config.ttl_ms_default)
            .map(|ttl| ttl.min(self.config.ttl_ms_max));
        let command = CreateCommand {
            caller: session.auth_key.clone(),
            negotiated: session.negotiated,
            task_support: spec.task_support,
            task_requested: task.is_some(),
            idempotency_key,
            request: WrappedRequest {
                method: "tools/call".into(),
                name: name.into(),
                arguments: Some(Value::Object(arguments.clone())),
            },
            ttl_ms,
            poll_interval_ms: Some(self.config.poll_interval_ms),
            task_id: self.new_id(),
            correlation_id: self.new_id(),
            now_ms,
            era: crate::contract::Era::Core2025,
            input_responses: None,
        };
        let answer = self
            .store
            .create(&command)
            .map_err(|error| self.internal(error))?;
        match answer.decision {
            Decision::AcceptTask | Decision::ReplayTask => {
                let record = answer.record.ok_or_else(|| {
                    internal_message("the store admitted a task without returning it")
                })?;
                if let Some(token) = meta.and_then(|meta| meta.get("progressToken"))
                    && !record.status.is_terminal()
                {
                    self.progress.lock().expect("progress").insert(
                        record.task_id.clone(),
                        ProgressWatch {
                            session: session.id.clone(),
                            token: token.clone(),
                            sent: 0,
                        },
                    );
                }
                Ok(wire::create_task_result_json(&record))
            }
            Decision::AcceptNormal => {
                match self.tools.call(name, arguments, None).await {
                    ToolStep::Finished(outcome) => answer_of(outcome),
                    // Input can only be asked of a task's requestor.
                    ToolStep::NeedsInput(ask) => Ok(json!({
                        "content": [{ "type": "text", "text": ask.message }],
                        "isError": true,
                    })),
                }
            }
            Decision::BlockTaskRequired => Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                format!(
                    "Tool {name} requires task augmentation (execution.taskSupport is \"required\"): send params.task"
                ),
            )),
            Decision::BlockTaskForbidden => Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                format!(
                    "Tool {name} does not support task augmentation (execution.taskSupport is \"{}\"): call it without params.task",
                    spec.task_support.as_str()
                ),
            )),
            Decision::BlockCapability => Err(RpcError::new(
                code::INVALID_REQUEST,
                "Task augmentation is not offered on this session",
            )),
            Decision::BlockIdempotencyCollision => Err(RpcError::invalid_params(
                "Idempotency key already used for a different request",
            )),
            other => Err(unexpected(other)),
        }
    }

    fn get(&self, session: &Session, params: &Map<String, Value>) -> Result<Value, RpcError> {
        let task_id = wire::required_string(params, "taskId")?;
        let record = self
            .store
            .read(task_id)
            .map_err(|error| self.internal(error))?;
        let now_ms = self.env.now_ms();
        match crate::contract::guard_get(&session.auth_key, record.as_ref(), now_ms) {
            Decision::ReturnStatus => Ok(wire::task_result_json(record.as_ref().expect("located"))),
            other => Err(refusal(other)),
        }
    }

    async fn result(
        &self,
        session: &Session,
        params: &Map<String, Value>,
    ) -> Result<Value, RpcError> {
        let task_id = wire::required_string(params, "taskId")?;
        loop {
            // Registered before reading, so a change between the read and the wait wakes it.
            let changed = self.changed.notified();
            let record = self
                .store
                .read(task_id)
                .map_err(|error| self.internal(error))?;
            let now_ms = self.env.now_ms();
            match crate::contract::guard_result(&session.auth_key, record.as_ref(), now_ms) {
                Decision::WaitTerminal | Decision::WaitInput => {
                    let recheck = self.env.sleep(self.config.result_recheck_ms);
                    // `biased`: no draw from tokio's generator (the simulation runs this).
                    tokio::select! {
                        biased;
                        () = changed => {}
                        () = recheck => {}
                    }
                }
                Decision::ReturnResult => {
                    let record = record.expect("located");
                    return match record.outcome {
                        Some(outcome) => answer_of(outcome)
                            .map(|result| with_related_task(result, &record.task_id)),
                        None => Err(internal_message("a terminal task has no stored outcome")),
                    };
                }
                Decision::ReturnCancelled => {
                    return Err(RpcError::new(
                        code::INTERNAL_ERROR,
                        "Task was cancelled: a cancelled task has no result",
                    )
                    .with_data(json!({ "taskId": task_id, "status": "cancelled" })));
                }
                other => return Err(refusal(other)),
            }
        }
    }

    fn cancel(&self, session: &Session, params: &Map<String, Value>) -> Result<Value, RpcError> {
        let task_id = wire::required_string(params, "taskId")?;
        let now_ms = self.env.now_ms();
        let answer = self
            .store
            .cancel(session.negotiated, &session.auth_key, task_id, now_ms)
            .map_err(|error| self.internal(error))?;
        match (answer.decision, answer.record) {
            (Decision::ApplyCancel, Some(record)) => {
                self.status_changed(&record);
                Ok(wire::task_result_json(&record))
            }
            (Decision::AlreadyTerminal, Some(record)) => Err(RpcError::invalid_params(format!(
                "Cannot cancel task: already in terminal status '{}'",
                record.status.as_str()
            ))),
            (Decision::BlockCapability, _) => Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                "Method not found: tasks/cancel is not offered on this session",
            )),
            (other, _) => Err(refusal(other)),
        }
    }

    fn list(&self, session: &Session, params: &Map<String, Value>) -> Result<Value, RpcError> {
        let cursor = wire::optional_string(params, "cursor")?.map(str::to_owned);
        let page = self
            .store
            .list(&ListQuery {
                negotiated: session.negotiated,
                caller: session.auth_key.clone(),
                cursor,
                limit: self.config.list_page,
                now_ms: self.env.now_ms(),
            })
            .map_err(|error| self.internal(error))?;
        match page.decision {
            Decision::ListTenantFiltered => {
                // A map, not `json!`, which would copy the page once more.
                let mut result = Map::new();
                let tasks = page.tasks.iter().map(wire::task_json).collect();
                result.insert("tasks".into(), Value::Array(tasks));
                if let Some(cursor) = page.next_cursor {
                    result.insert("nextCursor".into(), Value::String(cursor));
                }
                Ok(Value::Object(result))
            }
            Decision::BlockCapability => Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                "Method not found: tasks/list is not offered on this session (its tasks cannot be bound to an identity)",
            )),
            Decision::BlockBadCursor => Err(RpcError::invalid_params("Invalid cursor")),
            other => Err(unexpected(other)),
        }
    }

    /// The tool a `tools/call` names (`-32602` if unknown) and its arguments object.
    pub(super) fn tool_call_target<'p>(
        &self,
        params: &'p Map<String, Value>,
    ) -> Result<(&'p str, &ToolSpec, Map<String, Value>), RpcError> {
        let name = wire::required_string(params, "name")?;
        let spec = self
            .specs
            .iter()
            .find(|spec| spec.name == name)
            .ok_or_else(|| RpcError::invalid_params(format!("Unknown tool: {name}")))?;
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(arguments)) => arguments.clone(),
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "params.arguments must be an object",
                ));
            }
        };
        Ok((name, spec, arguments))
    }

    /// The request's idempotency key: `_meta["dev.tasklatch/idempotency-key"]`, else the
    /// HTTP `Idempotency-Key` header.
    pub(super) fn idempotency_key(
        &self,
        session: &Session,
        meta: Option<&Map<String, Value>>,
    ) -> Result<Option<String>, RpcError> {
        match meta.and_then(|meta| meta.get(wire::IDEMPOTENCY_KEY)) {
            None | Some(Value::Null) => Ok(session.idempotency_header.clone()),
            Some(Value::String(key)) if !key.is_empty() && key.len() <= 256 => {
                Ok(Some(key.clone()))
            }
            Some(_) => Err(RpcError::invalid_params(format!(
                "_meta[\"{}\"] must be a string of 1 to 256 bytes",
                wire::IDEMPOTENCY_KEY
            ))),
        }
    }

    /// A store failure as the caller sees it; the cause goes to the log, not to the
    /// caller (it may name paths or hosts).
    pub(super) fn internal(&self, error: StoreError) -> RpcError {
        if self.config.log_store_errors {
            eprintln!("tasklatch: store error: {error}");
        }
        internal_message(STORE_UNAVAILABLE)
    }

    /// A fresh 128-bit random id, hex.
    pub(super) fn new_id(&self) -> String {
        format!(
            "{:016x}{:016x}",
            self.env.random_u64(),
            self.env.random_u64()
        )
    }

    fn send(&self, auth_key: &str, session_filter: Option<&str>, message: Value) {
        let subscribers = self.subscribers.lock().expect("subscribers");
        for (id, subscriber) in subscribers.iter() {
            if subscriber.auth_key != auth_key || session_filter.is_some_and(|only| only != id) {
                continue;
            }
            // Full or closed: dropped. Notifications are hints; polling is the truth.
            let _ = subscriber.outbound.try_send(message.clone());
        }
    }
}

impl Notify for Server {
    /// Wakes blocked `tasks/result` calls, tells the owner's sessions, and sends progress
    /// on the creating call's token until the task is terminal.
    fn status_changed(&self, record: &TaskRecord) {
        self.changed.notify_waiters();
        self.tell_listeners(record);
        self.send(
            &record.auth_key,
            None,
            wire::notification("notifications/tasks/status", wire::task_json(record)),
        );
        let mut progress = self.progress.lock().expect("progress");
        if let Some(watch) = progress.get_mut(&record.task_id) {
            watch.sent += 1;
            let message = wire::notification(
                "notifications/progress",
                json!({
                    "progressToken": watch.token,
                    "progress": watch.sent,
                    "message": format!("task {}", record.status.as_str()),
                }),
            );
            let session = watch.session.clone();
            if record.status.is_terminal() {
                progress.remove(&record.task_id);
            }
            drop(progress);
            // Progress stops at the terminal status: that change is the last one sent.
            self.send(&record.auth_key, Some(&session), message);
        }
    }
}

/// A tool's outcome as a JSON-RPC answer: its result, or its error.
fn answer_of(outcome: TaskOutcome) -> Result<Value, RpcError> {
    match outcome {
        TaskOutcome::Result { result } => Ok(result),
        TaskOutcome::RpcError {
            code,
            message,
            data,
        } => Err(RpcError {
            code,
            message,
            data,
        }),
    }
}

/// A result with the related-task `_meta` merged in.
fn with_related_task(result: Value, task_id: &str) -> Value {
    let mut result = match result {
        Value::Object(object) => object,
        other => {
            let mut object = Map::new();
            object.insert("result".into(), other);
            object
        }
    };
    let meta = result
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert(wire::RELATED_TASK.into(), json!({ "taskId": task_id }));
    }
    Value::Object(result)
}

/// The answer to a refused read or cancel. Not found, another tenant's, and expired for
/// someone else are one and the same answer.
pub(super) fn refusal(decision: Decision) -> RpcError {
    match decision {
        Decision::BlockNotFound | Decision::BlockAuth => {
            RpcError::invalid_params("Failed to retrieve task: Task not found")
        }
        Decision::BlockExpired => {
            RpcError::invalid_params("Failed to retrieve task: Task has expired")
        }
        other => unexpected(other),
    }
}

pub(super) fn unexpected(decision: Decision) -> RpcError {
    internal_message(&format!("unexpected decision {}", decision.code()))
}

fn internal_message(message: &str) -> RpcError {
    RpcError::new(code::INTERNAL_ERROR, message)
}

/// The negotiated capabilities of a transport: stdio cannot identify its caller.
pub fn stdio_negotiated() -> Negotiated {
    Negotiated {
        tools_call: true,
        cancel: true,
        list: false,
    }
}
