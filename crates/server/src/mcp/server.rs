//! The MCP request handler: one [`Server`] per process (store, tools, clock), one
//! [`Session`] per connection (who is calling, what was negotiated, where notifications
//! go). Every transport feeds messages to [`Server::handle`] and writes back what it
//! returns; the simulation does the same in memory.
//!
//! Decisions come from the store (which enforces the contract atomically); this module
//! only maps them to the wire. "Not yours", "does not exist" and "expired for someone
//! else" are one answer, byte for byte: a task id proves nothing.
//!
//! Input in 2025-11-25 (docs/design.md §12): a `tasks/result` of the task's owner handled
//! with a stream ([`Server::handle_on`]) sends each open input request of an
//! `input_required` task there, once per call, as a JSON-RPC request with the related-task
//! `_meta` and a fresh id (`tasklatch-ask-…`), if the session's client declared the method's
//! capability in `initialize` (`elicitation`, `sampling`, `roots`). The client's response
//! on the same session is stored as the answer by `TaskStore::answer_input` (an error
//! response as `{action: "decline"}`); the task returns to `working`, the tool runs again.
//! At most [`ASKS_PER_SESSION_MAX`] wait per session; each is forgotten when answered,
//! when its call or session ends, or when its key is no longer open. A response nobody on
//! that session asked for is ignored.

use super::limits::{Budget, Limited, Limits, LimitsConfig};
use super::tools::{Catalog, ToolSpec};
use super::waits::{WaitRefused, Waits};
use super::wire::{self, Incoming, RpcError, code};
use crate::contract::{Decision, Era, Negotiated, TaskOutcome, TaskRecord, TaskStatus};
use crate::runtime::{Env, Notify, ToolStep};
use crate::store::{
    Change, ChangeFeed, CreateCommand, InputCommand, ListQuery, StoreError, TaskStore,
    WrappedRequest,
};
use crate::sync::Mutex;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The message of a `-32603` caused by the store (the operation did not happen).
pub const STORE_UNAVAILABLE: &str = "Internal error: the task store is unavailable";

/// Side requests (`elicitation/create`, …) sent on behalf of tasks and not yet answered,
/// per session, at most; a question beyond it waits until one is answered or forgotten.
pub const ASKS_PER_SESSION_MAX: usize = 64;

/// Sessions whose declared client capabilities are remembered, at most (HTTP keeps fewer
/// sessions open; past this, the least recently initialized is forgotten and its client is
/// no longer asked anything).
pub const CLIENTS_REMEMBERED_MAX: usize = 65_536;

/// The prefix of the ids of the requests this server sends to clients.
pub const ASK_ID_PREFIX: &str = "tasklatch-ask-";

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
    /// A blocked `tasks/result` re-reads the store at least this often: a safety net only.
    /// It is woken by the write that changes its task — in this process directly, from
    /// other processes through the store's change feed (PostgreSQL `LISTEN/NOTIFY`); a
    /// store without a feed (several processes on one SQLite file) relies on this re-read.
    pub result_recheck_ms: u64,
    /// What one caller may hold at once (see [`super::limits`]).
    pub limits: LimitsConfig,
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
            result_recheck_ms: 5_000,
            limits: LimitsConfig::default(),
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
    /// Blocked `tasks/result` calls, woken by their task's changes.
    waits: Waits,
    /// Every caller's budgets.
    limits: Limits,
    subscribers: Mutex<BTreeMap<String, Subscriber>>,
    progress: Mutex<BTreeMap<String, ProgressWatch>>,
    /// Open 2026-07-28 `subscriptions/listen` streams, by a counter.
    pub(super) listeners: Mutex<BTreeMap<u64, super::modern::Listener>>,
    pub(super) listen_ids: std::sync::atomic::AtomicU64,
    /// What each session's client declared in `initialize` (2025-11-25).
    clients: Mutex<BTreeMap<String, ClientAbilities>>,
    /// `initialize` requests handled, for forgetting the oldest client first.
    initialized: std::sync::atomic::AtomicU64,
    /// Side requests sent to clients and not yet answered.
    asks: Mutex<Asks>,
    /// Rung after each admission, to wake the runtime's dispatcher (see
    /// [`Server::ring_on_admission`]).
    admission_bell: std::sync::OnceLock<Arc<tokio::sync::Notify>>,
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
            waits: Waits::default(),
            limits: Limits::new(config.limits.clone()),
            config,
            subscribers: Mutex::new(BTreeMap::new()),
            progress: Mutex::new(BTreeMap::new()),
            listeners: Mutex::new(BTreeMap::new()),
            listen_ids: std::sync::atomic::AtomicU64::new(0),
            clients: Mutex::new(BTreeMap::new()),
            initialized: std::sync::atomic::AtomicU64::new(0),
            asks: Mutex::new(Asks::default()),
            admission_bell: std::sync::OnceLock::new(),
        }
    }

    /// Rings `bell` after each task admitted (the runtime's dispatcher waits on it). Set
    /// once; later calls are ignored.
    pub fn ring_on_admission(&self, bell: Arc<tokio::sync::Notify>) {
        let _ = self.admission_bell.set(bell);
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

    /// Forgets a closed session: its notification route, its progress watches, what its
    /// client declared and the side requests it was sent.
    pub fn unsubscribe(&self, session_id: &str) {
        self.subscribers
            .lock()
            .expect("subscribers")
            .remove(session_id);
        self.progress
            .lock()
            .expect("progress")
            .retain(|_, watch| watch.session != session_id);
        self.clients.lock().expect("clients").remove(session_id);
        self.asks.lock().expect("asks").remove_session(session_id);
    }

    /// Handles one raw message; returns the response to send, if any.
    pub async fn handle_text(&self, session: &Session, text: &str) -> Option<Value> {
        self.handle_text_on(session, text, None).await
    }

    /// [`Server::handle_text`] for a message whose answer goes out on `stream`, which can
    /// also carry requests to the client (see [`Server::handle_on`]).
    pub async fn handle_text_on(
        &self,
        session: &Session,
        text: &str,
        stream: Option<&Outbound>,
    ) -> Option<Value> {
        match wire::parse(text) {
            Ok(incoming) => self.handle_on(session, incoming, stream).await,
            Err(error) => Some(error),
        }
    }

    /// Handles one parsed message; returns the response to send, if any.
    pub async fn handle(&self, session: &Session, incoming: Incoming) -> Option<Value> {
        self.handle_on(session, incoming, None).await
    }

    /// Handles one parsed message whose answer goes out on `stream` (stdout over stdio, the
    /// SSE answer of the POST over HTTP; `None`: a stream that cannot carry requests to
    /// the client). A 2025-11-25 `tasks/result` blocked on an `input_required` task sends
    /// the task's open questions there as requests, and a client's response to one is an
    /// answer to the task (docs/design.md §12).
    pub async fn handle_on(
        &self,
        session: &Session,
        incoming: Incoming,
        stream: Option<&Outbound>,
    ) -> Option<Value> {
        match incoming {
            Incoming::Request { id, method, params }
                if super::modern::is_modern_request(&session.id, &params) =>
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
            Incoming::Request { id, method, params } => Some(
                match self.request(session, &method, &params, stream).await {
                    Ok(result) => wire::response(&id, result),
                    Err(error) => wire::error_response(&id, &error),
                },
            ),
            Incoming::Response { id, outcome } => {
                self.take_answer(session, &id, outcome);
                None
            }
            // notifications/initialized, notifications/cancelled (which the spec says
            // must not cancel tasks), anything else: nothing to answer.
            Incoming::Notification { .. } => None,
        }
    }

    async fn request(
        &self,
        session: &Session,
        method: &str,
        params: &Map<String, Value>,
        stream: Option<&Outbound>,
    ) -> Result<Value, RpcError> {
        match method {
            "initialize" => Ok(self.initialize(session, params)),
            "ping" => Ok(json!({})),
            "tools/list" => Ok(json!({
                "tools": self.specs.iter().map(ToolSpec::to_json).collect::<Vec<_>>()
            })),
            "tools/call" => {
                self.check_admitting()?;
                self.call_tool(session, params).await
            }
            "tasks/get" => {
                self.spend_poll(session)?;
                self.get(session, params)
            }
            "tasks/result" => self.result(session, params, stream).await,
            "tasks/cancel" => self.cancel(session, params),
            "tasks/list" => {
                self.spend_poll(session)?;
                self.list(session, params)
            }
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
        self.remember_client(
            &session.id,
            params.get("capabilities").and_then(Value::as_object),
        );
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
        let answer = self.admit(Admit {
            session,
            negotiated: session.negotiated,
            spec,
            arguments: &arguments,
            task_requested: task.is_some(),
            idempotency_key,
            requested_ttl_ms,
            era: crate::contract::Era::Core2025,
            input_responses: None,
        })?;
        match answer.decision {
            Decision::AcceptTask | Decision::ReplayTask => {
                let record = admitted(answer)?;
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
                    // A synchronous call has no task to decide: its tool publishes itself.
                    ToolStep::Finished(outcome)
                    | ToolStep::FinishedWithMessage { outcome, .. }
                    | ToolStep::Prepared { outcome, .. } => answer_of(outcome),
                    ToolStep::PointOfNoReturn { .. } => Err(sync_point_of_no_return(name)),
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
        stream: Option<&Outbound>,
    ) -> Result<Value, RpcError> {
        let task_id = wire::required_string(params, "taskId")?;
        let mut asked = AskedHere {
            server: self,
            ids: BTreeMap::new(),
        };
        // Opened before the first read, so a change after that read always wakes it; a
        // caller over its budget still gets the answer of a task that needs no wait.
        let waits_max = self.limits.config().waits_per_key_max;
        let opened = self.waits.enter(&session.auth_key, task_id, waits_max);
        loop {
            let record = self
                .store
                .read(task_id)
                .map_err(|error| self.internal(error))?;
            let now_ms = self.env.now_ms();
            let decision =
                crate::contract::guard_result(&session.auth_key, record.as_ref(), now_ms);
            asked.prune(record.as_ref());
            match decision {
                Decision::WaitTerminal | Decision::WaitInput => {
                    // Only the owner gets here: the guard refuses everyone else.
                    let open = match &opened {
                        Ok(open) => open,
                        Err(refused) => return Err(wait_refused(*refused, task_id)),
                    };
                    if open.draining() {
                        return Err(draining_error(Some(task_id)));
                    }
                    if decision == Decision::WaitInput
                        && let (Some(stream), Some(record)) = (stream, &record)
                    {
                        self.ask_open(session, record, stream, &mut asked);
                    }
                    // The safety re-read, or the task's expiry if that comes first.
                    let until_expiry_ms = record
                        .as_ref()
                        .and_then(|record| record.expires_at_ms)
                        .map_or(u64::MAX, |at_ms| at_ms.saturating_sub(now_ms) + 1);
                    let recheck = self
                        .env
                        .sleep(self.config.result_recheck_ms.min(until_expiry_ms));
                    // `biased`: no draw from tokio's generator (the simulation runs this).
                    tokio::select! {
                        biased;
                        () = open.woken() => {}
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
                    // The status message goes with it: past a point of no return it says
                    // what was set in motion before the cancel.
                    let message = record.and_then(|record| record.status_message);
                    let mut data = json!({ "taskId": task_id, "status": "cancelled" });
                    if let Some(message) = message {
                        data["statusMessage"] = Value::String(message);
                    }
                    return Err(RpcError::new(
                        code::INTERNAL_ERROR,
                        "Task was cancelled: a cancelled task has no result",
                    )
                    .with_data(data));
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

    /// Asks the store to admit a `tools/call` (either era): the command with fresh ids,
    /// the time, the TTL asked for (or the default, within the maximum) and the poll
    /// interval this server suggests.
    pub(super) fn admit(&self, call: Admit<'_>) -> Result<crate::store::Answer, RpcError> {
        let now_ms = self.env.now_ms();
        let command = CreateCommand {
            caller: call.session.auth_key.clone(),
            negotiated: call.negotiated,
            task_support: call.spec.task_support,
            task_requested: call.task_requested,
            idempotency_key: call.idempotency_key,
            request: WrappedRequest {
                method: "tools/call".into(),
                name: call.spec.name.into(),
                arguments: Some(Value::Object(call.arguments.clone())),
            },
            ttl_ms: call
                .requested_ttl_ms
                .or(self.config.ttl_ms_default)
                .map(|ttl| ttl.min(self.config.ttl_ms_max)),
            poll_interval_ms: Some(self.config.poll_interval_ms),
            task_id: self.new_task_id(now_ms),
            correlation_id: self.new_id(),
            now_ms,
            era: call.era,
            input_responses: call.input_responses,
        };
        let answer = self
            .store
            .create(&command)
            .map_err(|error| self.internal(error))?;
        if answer.decision == Decision::AcceptTask
            && let Some(bell) = self.admission_bell.get()
        {
            bell.notify_one();
        }
        Ok(answer)
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

    /// Blocked `tasks/result` calls open now (all callers): what the transports' tests and
    /// the flood test read to show no wait outlives its client.
    pub fn waits_open(&self) -> usize {
        self.waits.open()
    }

    /// Every caller's budgets, for the transports (requests, sessions).
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Whether [`Server::drain`] was called.
    pub fn is_draining(&self) -> bool {
        // One flag, kept where the waits it ends are.
        self.waits.is_draining()
    }

    /// Starts the drain (SIGTERM): no new `tools/call` is admitted, every blocked
    /// `tasks/result` ends with [`code::DRAINING`] and every 2026-07-28 listen stream with
    /// the same error. Tasks are untouched: their clients poll them, here or elsewhere.
    pub fn drain(&self) {
        self.waits.drain();
        let mut listeners = self.listeners.lock().expect("listeners");
        for listener in listeners.values() {
            let error = wire::error_response(&listener.subscription_id, &draining_error(None));
            let _ = listener.outbound.try_send(error);
        }
        listeners.clear();
    }

    /// A task another process sharing the store changed (its change feed said so): the
    /// waits on it re-read it, and this process's sessions and listeners are told.
    pub fn changed_elsewhere(&self, change: &Change) {
        match change {
            Change::Task(task_id) => match self.store.read(task_id) {
                Ok(Some(record)) => self.status_changed(&record),
                Ok(None) => self.waits.wake(task_id),
                Err(error) => {
                    self.internal(error);
                    self.waits.wake(task_id);
                }
            },
            Change::Unknown => self.waits.wake_all(),
        }
    }

    /// Follows the store's change feed, if it has one, for as long as the result is kept:
    /// the tasks other processes write reach [`Server::changed_elsewhere`].
    pub fn follow_store_changes(self: &Arc<Self>) -> Result<Option<ChangeFeed>, StoreError> {
        let server = Arc::downgrade(self);
        self.store.changes(Arc::new(move |change| {
            if let Some(server) = server.upgrade() {
                server.changed_elsewhere(&change);
            }
        }))
    }

    /// Whether `auth_key` could open one more wait now (a transport that must choose its
    /// answer's status before the call runs asks first: an SSE answer starts with `200`).
    pub fn check_wait_budget(&self, auth_key: &str) -> Result<(), RpcError> {
        let waits_max = self.limits.config().waits_per_key_max;
        match self.waits.admits(auth_key, waits_max) {
            Ok(()) => Ok(()),
            Err(WaitRefused::Draining) => Err(draining_error(None)),
            Err(refused) => Err(wait_refused(refused, "")),
        }
    }

    /// Spends one of the caller's polls (`tasks/get`, `tasks/list`).
    pub(super) fn spend_poll(&self, session: &Session) -> Result<(), RpcError> {
        self.limits
            .poll(&session.auth_key, self.env.now_ms())
            .map_err(Limited::to_rpc_error)
    }

    /// Refuses new work while draining.
    pub(super) fn check_admitting(&self) -> Result<(), RpcError> {
        if self.is_draining() {
            return Err(draining_error(None));
        }
        Ok(())
    }

    /// A store failure as the caller sees it; the cause goes to the log, not to the
    /// caller (it may name paths or hosts).
    pub(super) fn internal(&self, error: StoreError) -> RpcError {
        if self.config.log_store_errors {
            eprintln!("tasklatch: store error: {error}");
        }
        internal_message(STORE_UNAVAILABLE)
    }

    /// A fresh task id: 44 hex digits, the creation time's 48 low bits of milliseconds
    /// first, then 128 random bits, as unguessable as every other id the server draws.
    /// Ids in creation order keep a durable store's inserts at the right edge of its task
    /// and outbox keys: with random ids every admission and every completion dirtied a
    /// page of its own anywhere in the table, and SQLite's commits carried those pages
    /// (measured on bare creates: commits ~1.8× longer, a third fewer creates a second).
    pub(super) fn new_task_id(&self, now_ms: u64) -> String {
        const MS_BITS_MASK: u64 = (1 << 48) - 1;
        format!("{:012x}{}", now_ms & MS_BITS_MASK, self.new_id())
    }

    /// A fresh 128-bit random id, hex.
    pub(super) fn new_id(&self) -> String {
        format!(
            "{:016x}{:016x}",
            self.env.random_u64(),
            self.env.random_u64()
        )
    }

    /// Sends `message` to `auth_key`'s sessions (only `session_filter`, if given); the
    /// message is built only if one of them is subscribed (most status changes have no
    /// listener, and rendering a task is not free).
    fn send(&self, auth_key: &str, session_filter: Option<&str>, message: impl FnOnce() -> Value) {
        let subscribers = self.subscribers.lock().expect("subscribers");
        let mut message = Some(message);
        let mut built: Option<Value> = None;
        for (id, subscriber) in subscribers.iter() {
            if subscriber.auth_key != auth_key || session_filter.is_some_and(|only| only != id) {
                continue;
            }
            if built.is_none() {
                built = message.take().map(|make| make());
            }
            let Some(message) = &built else {
                return;
            };
            // Full or closed: dropped. Notifications are hints; polling is the truth.
            let _ = subscriber.outbound.try_send(message.clone());
        }
    }
}

impl Notify for Server {
    /// Wakes blocked `tasks/result` calls, tells the owner's sessions, and sends progress
    /// on the creating call's token until the task is terminal.
    fn status_changed(&self, record: &TaskRecord) {
        self.waits.wake(&record.task_id);
        self.tell_listeners(record);
        self.send(&record.auth_key, None, || {
            wire::notification("notifications/tasks/status", wire::task_json(record))
        });
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
            self.send(&record.auth_key, Some(&session), || message);
        }
    }
}

/// What a `tools/call` asks [`Server::admit`] to admit.
pub(super) struct Admit<'a> {
    pub(super) session: &'a Session,
    pub(super) negotiated: Negotiated,
    pub(super) spec: &'a ToolSpec,
    pub(super) arguments: &'a Map<String, Value>,
    pub(super) task_requested: bool,
    pub(super) idempotency_key: Option<String>,
    /// The TTL the request asked for; `None`: the server's default.
    pub(super) requested_ttl_ms: Option<u64>,
    pub(super) era: crate::contract::Era,
    pub(super) input_responses: Option<crate::contract::InputMap>,
}

/// The task an admitting answer (`ACCEPT_TASK`, `REPLAY_TASK`) carries.
pub(super) fn admitted(answer: crate::store::Answer) -> Result<TaskRecord, RpcError> {
    answer
        .record
        .ok_or_else(|| internal_message("the store admitted a task without returning it"))
}

/// A tool's outcome as a JSON-RPC answer: its result, or its error.
pub(super) fn answer_of(outcome: TaskOutcome) -> Result<Value, RpcError> {
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

/// A tool that declared a point of no return in a synchronous call (only a task's run
/// declares one: nothing can cancel a synchronous call before it answers).
pub(super) fn sync_point_of_no_return(name: &str) -> RpcError {
    internal_message(&format!(
        "tool {name} declared a point of no return in a synchronous call; only a task's run declares one"
    ))
}

pub(super) fn unexpected(decision: Decision) -> RpcError {
    internal_message(&format!("unexpected decision {}", decision.code()))
}

/// The error a call gets when its wait was not opened.
fn wait_refused(refused: WaitRefused, task_id: &str) -> RpcError {
    match refused {
        WaitRefused::Budget { waits_max } => Limited {
            budget: Budget::Waits,
            max: waits_max as u64,
            retry_after_ms: 1_000,
        }
        .to_rpc_error(),
        WaitRefused::Draining => draining_error(Some(task_id)),
    }
}

/// The error a call gets when the server drains: what ended, and that the task did not.
pub(super) fn draining_error(task_id: Option<&str>) -> RpcError {
    let error = RpcError::new(
        code::DRAINING,
        "Server shutting down: it admits no new work and ends blocked calls; tasks go on \
         (poll tasks/get, here after the restart or on another instance)",
    );
    match task_id {
        Some(task_id) => error.with_data(json!({ "taskId": task_id, "retryAfterMs": 1_000 })),
        None => error.with_data(json!({ "retryAfterMs": 1_000 })),
    }
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

mod asks;
use asks::*;
