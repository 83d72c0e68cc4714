//! The 2026-07-28 era ("modern" in that revision's words): stateless requests that carry
//! their protocol version and client capabilities in `params._meta`, and tasks as the
//! extension `io.modelcontextprotocol/tasks`.
//!
//! The contract is the same one the 2025-11-25 era uses (docs/design.md §12); this module
//! maps its decisions to the other era's wire:
//!
//! | situation | answer |
//! |---|---|
//! | `_meta` without `protocolVersion` or `clientCapabilities` | `-32602` |
//! | a version other than 2026-07-28 | `-32022`, `data: {supported, requested}` |
//! | unknown or removed method (`initialize`, `ping`, `tasks/result`, `tasks/list`, …) | `-32601` |
//! | `tasks/*` from a request that does not declare the extension | `-32021`, `data.requiredCapabilities` |
//! | a `required` tool called without the extension | `-32021` |
//! | an `optional` tool with the extension, a `required` one | a task: flat `CreateTaskResult`, `resultType: "task"` |
//! | a `forbidden` tool, an `optional` one without the extension | synchronous, `resultType: "complete"`; a legacy `task` param changes nothing |
//! | bad tool arguments | a tool result with `isError: true` (not a protocol error) |
//! | a tool that needs input before it can start (`Catalog::prepare`) | `resultType: "input_required"` with `inputRequests`; the retry's `inputResponses` go into the task |
//! | `tasks/get` | the task with `result`, `error` or `inputRequests` inlined, `resultType: "complete"` |
//! | `tasks/update` | `{resultType: "complete"}`: answers to open keys stored (`APPLY_INPUT`), others ignored |
//! | `tasks/cancel` | `{resultType: "complete"}`, also on a terminal task (`ALREADY_TERMINAL`) |
//! | an applied update or cancel | the same, with `_meta["dev.tasklatch/version"]` and `["dev.tasklatch/status"]` of the task after it (tasklatch's: an ignored write has neither) |
//! | unknown task, another caller's, one created in the 2025-11-25 era | `-32602 "Failed to retrieve task: Task not found"` |
//!
//! `subscriptions/listen` with `notifications.taskIds` opens a stream: first
//! `notifications/subscriptions/acknowledged` naming the task ids agreed (the caller's own
//! tasks of this era; others are left out, as if unknown), then each agreed task's current
//! state and every change as `notifications/tasks` (the `DetailedTask`), each message with
//! `_meta["io.modelcontextprotocol/subscriptionId"]`; once every agreed task is terminal,
//! the listen request's answer ends the stream. Over HTTP it is the request's SSE answer;
//! over stdio the messages go out on stdout. Notifications are hints: `tasks/get` is the
//! truth.
//!
//! A tool result with `isError: true` ends a task of this era `completed`; `failed` is for
//! protocol errors and carries `error`. A request of this era sees only tasks created in
//! it: a 2025-11-25 task's `failed` may be a tool error, which this era's shapes cannot
//! say, so such a task is answered as unknown. The other way round is allowed: a
//! 2025-11-25 request sees every task of its caller (`tasks/list` lists what `tasks/get`
//! can get), and its shapes can say what any task is — a 2026-07-28 `completed` task whose
//! result has `isError` is exactly that.

use super::server::{Admit, Outbound, Server, Session, admitted, refusal, unexpected};
use super::wire::{self, RpcError, code};
use crate::contract::{
    Decision, Era, InputMap, Negotiated, TaskOutcome, TaskRecord, TaskStatus, TaskSupport,
};
use crate::runtime::{Notify, ToolStep};
use crate::store::InputCommand;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// The protocol version of this era.
pub const VERSION: &str = "2026-07-28";
/// The tasks extension's identifier (capability key and method owner).
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// `_meta` key of a request's protocol version.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of a request's client capabilities.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of the server's name and version on every result.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// How long a client may cache `server/discover` and `tools/list` answers, in ms.
pub const LIST_TTL_MS: u64 = 60_000;

/// The error codes this era adds.
pub mod error_code {
    /// An HTTP routing header is missing or does not match the body.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// The request needs a client capability it did not declare.
    pub const MISSING_CAPABILITY: i64 = -32021;
    /// The request's protocol version is not served.
    pub const UNSUPPORTED_VERSION: i64 = -32022;
}

/// What a modern request says about itself in `params._meta`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    /// `io.modelcontextprotocol/protocolVersion`.
    pub version: String,
    /// Whether its client capabilities declare the tasks extension (this request only).
    pub declares_tasks: bool,
    /// The client capabilities this request declares.
    pub capabilities: Map<String, Value>,
}

/// Whether a request's params carry the per-request envelope of this era (either key).
pub fn carries_envelope(params: &Map<String, Value>) -> bool {
    params
        .get("_meta")
        .and_then(Value::as_object)
        .is_some_and(|meta| {
            meta.contains_key(META_PROTOCOL_VERSION) || meta.contains_key(META_CLIENT_CAPABILITIES)
        })
}

/// Whether a request handed to the server is of the 2026-07-28 era. Without a session (a
/// stateless HTTP request) any envelope key says so, and a half envelope is malformed. In a
/// session (stdio, or an initialized 2025-11-25 HTTP session) only the version key does:
/// client capabilities declared in a 2025-11-25 request's `_meta` do not enable the tasks
/// extension for that era (SEP-2663), so the request is served as 2025-11-25.
pub fn is_modern_request(session_id: &str, params: &Map<String, Value>) -> bool {
    if session_id.is_empty() {
        return carries_envelope(params);
    }
    params
        .get("_meta")
        .and_then(Value::as_object)
        .is_some_and(|meta| meta.contains_key(META_PROTOCOL_VERSION))
}

/// Reads the envelope; a request without both required keys is malformed (`-32602`).
pub fn envelope(params: &Map<String, Value>) -> Result<Envelope, RpcError> {
    let meta = params
        .get("_meta")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            RpcError::invalid_params(format!(
                "params._meta is required (with \"{META_PROTOCOL_VERSION}\" and \"{META_CLIENT_CAPABILITIES}\")"
            ))
        })?;
    let version = match meta.get(META_PROTOCOL_VERSION) {
        Some(Value::String(version)) => version.clone(),
        _ => {
            return Err(RpcError::invalid_params(format!(
                "params._meta[\"{META_PROTOCOL_VERSION}\"] must be a string"
            )));
        }
    };
    let capabilities = match meta.get(META_CLIENT_CAPABILITIES) {
        Some(Value::Object(capabilities)) => capabilities,
        _ => {
            return Err(RpcError::invalid_params(format!(
                "params._meta[\"{META_CLIENT_CAPABILITIES}\"] must be an object"
            )));
        }
    };
    let declares_tasks = capabilities
        .get("extensions")
        .and_then(Value::as_object)
        .and_then(|extensions| extensions.get(TASKS_EXTENSION))
        .is_some_and(Value::is_object);
    Ok(Envelope {
        version,
        declares_tasks,
        capabilities: capabilities.clone(),
    })
}

/// `-32021` for a request that needs the tasks extension and did not declare it.
pub fn missing_tasks_capability(what: &str) -> RpcError {
    RpcError::new(
        error_code::MISSING_CAPABILITY,
        format!("{what} needs the client capability extensions[\"{TASKS_EXTENSION}\"]"),
    )
    .with_data(json!({ "requiredCapabilities": { "extensions": { TASKS_EXTENSION: {} } } }))
}

/// The HTTP status a modern answer goes out with: 400 for malformed or refused requests,
/// 404 for an unknown method, 429 for a spent budget, 503 while draining, 200 otherwise
/// (a tool's own error is a result).
pub fn http_status(error: Option<&RpcError>) -> u16 {
    match error.map(|error| error.code) {
        None => 200,
        Some(code::METHOD_NOT_FOUND) => 404,
        Some(code::LIMITED) => 429,
        Some(code::DRAINING) => 503,
        Some(
            code::PARSE_ERROR
            | code::INVALID_REQUEST
            | code::INVALID_PARAMS
            | error_code::HEADER_MISMATCH
            | error_code::MISSING_CAPABILITY
            | error_code::UNSUPPORTED_VERSION,
        ) => 400,
        Some(_) => 500,
    }
}

/// The Task fields of this era (`ttlMs`, `pollIntervalMs`), with the task's version in
/// `_meta` as in the other era.
pub fn task_fields(record: &TaskRecord) -> Map<String, Value> {
    let mut task = Map::new();
    task.insert("taskId".into(), json!(record.task_id));
    task.insert("status".into(), json!(record.status.as_str()));
    if let Some(message) = &record.status_message {
        task.insert("statusMessage".into(), json!(message));
    }
    task.insert(
        "createdAt".into(),
        json!(wire::rfc3339(record.created_at_ms)),
    );
    task.insert(
        "lastUpdatedAt".into(),
        json!(wire::rfc3339(record.updated_at_ms)),
    );
    task.insert("ttlMs".into(), json!(record.ttl_ms));
    if let Some(poll) = record.poll_interval_ms {
        task.insert("pollIntervalMs".into(), json!(poll));
    }
    task.insert(
        "_meta".into(),
        json!({ wire::VERSION_META: record.version }),
    );
    task
}

/// `CreateTaskResult`: flat, `resultType: "task"`.
pub fn create_task_result(record: &TaskRecord) -> Value {
    let mut result = task_fields(record);
    result.insert("resultType".into(), json!("task"));
    Value::Object(result)
}

/// `tasks/get`'s `DetailedTask`: the outcome or the open questions inlined.
pub fn detailed_task(record: &TaskRecord) -> Value {
    let mut task = detailed_fields(record);
    task.insert("resultType".into(), json!("complete"));
    Value::Object(task)
}

/// The `DetailedTask` fields (a `notifications/tasks` payload; `tasks/get` adds its
/// `resultType`).
fn detailed_fields(record: &TaskRecord) -> Map<String, Value> {
    let mut task = task_fields(record);
    match (&record.outcome, record.status) {
        (Some(TaskOutcome::Result { result }), _) => {
            task.insert("result".into(), complete(result.clone()));
        }
        (
            Some(TaskOutcome::RpcError {
                code,
                message,
                data,
            }),
            _,
        ) => {
            let error = RpcError {
                code: *code,
                message: message.clone(),
                data: data.clone(),
            };
            task.insert("error".into(), error.to_json());
        }
        (None, TaskStatus::InputRequired) => {
            let open = record.input_requests.clone().unwrap_or_default();
            task.insert("inputRequests".into(), Value::Object(open));
        }
        (None, _) => {}
    }
    task
}

/// A result object with `resultType: "complete"` unless it names its own.
fn complete(result: Value) -> Value {
    match result {
        Value::Object(mut object) => {
            object
                .entry("resultType")
                .or_insert_with(|| json!("complete"));
            Value::Object(object)
        }
        other => json!({ "resultType": "complete", "result": other }),
    }
}

/// `_meta` key of the task's status after an applied `tasks/update` (beside its version).
pub const STATUS_META: &str = "dev.tasklatch/status";

/// The acknowledgement of `tasks/update` and `tasks/cancel` that changed nothing.
fn ack() -> Value {
    json!({ "resultType": "complete" })
}

/// The acknowledgement of an applied `tasks/update` or `tasks/cancel`: still empty, but
/// tasklatch's `_meta` carries the task's version (and status) after the write, so a client
/// can tell an applied write from an ignored one and order what it saw. A cancel past the
/// task's point of no return is acknowledged the same way: its status is still live.
fn ack_applied(record: &TaskRecord) -> Value {
    json!({
        "resultType": "complete",
        "_meta": { wire::VERSION_META: record.version, STATUS_META: record.status.as_str() },
    })
}

/// A tool result reporting an error to the model (this era's answer to bad arguments).
fn tool_error(message: &str) -> Value {
    json!({
        "resultType": "complete",
        "content": [{ "type": "text", "text": message }],
        "isError": true,
    })
}

impl Server {
    /// `-32022` unless the request speaks this era's version.
    fn check_version(envelope: &Envelope) -> Result<(), RpcError> {
        if envelope.version == VERSION {
            return Ok(());
        }
        Err(RpcError::new(
            error_code::UNSUPPORTED_VERSION,
            format!("Unsupported protocol version: {}", envelope.version),
        )
        .with_data(json!({ "supported": [VERSION], "requested": envelope.version })))
    }

    /// `subscriptions/listen`: sends the acknowledgement, then `notifications/tasks` for the
    /// agreed tasks, on `outbound`, where the answer that ends the stream goes too (see the
    /// module docs). `Err`: the request is refused and nothing was sent.
    pub fn listen(
        &self,
        session: &Session,
        envelope: &Envelope,
        id: &Value,
        params: &Map<String, Value>,
        outbound: Outbound,
    ) -> Result<(), RpcError> {
        Server::check_version(envelope)?;
        self.check_admitting()?;
        let asked = listen_task_ids(params)?;
        if !asked.is_empty() && !envelope.declares_tasks {
            return Err(missing_tasks_capability(
                "subscriptions/listen with taskIds",
            ));
        }
        let current = self.agreed_tasks(session, asked)?;
        let listener = Listener {
            auth_key: session.auth_key.clone(),
            subscription_id: id.clone(),
            open: current
                .iter()
                .filter(|record| !record.status.is_terminal())
                .map(|record| record.task_id.clone())
                .collect(),
            outbound,
        };
        let mut listeners = self.listeners.lock().expect("listeners");
        // A stream whose client went away holds no place.
        listeners.retain(|_, listener| !listener.outbound.is_closed());
        let mine = listeners
            .values()
            .filter(|other| other.auth_key == session.auth_key)
            .count();
        if mine >= LISTENS_PER_CALLER_MAX {
            return Err(RpcError::new(
                code::INVALID_REQUEST,
                format!("Too many open subscriptions: at most {LISTENS_PER_CALLER_MAX} per caller"),
            ));
        }
        let agreed: Vec<&str> = current
            .iter()
            .map(|record| record.task_id.as_str())
            .collect();
        let mut acknowledged = Map::new();
        acknowledged.insert("notifications".into(), json!({ "taskIds": agreed }));
        let mut sent =
            vec![listener.message("notifications/subscriptions/acknowledged", acknowledged)];
        // Each agreed task as it is now, so a change before the stream opened is not missed.
        for record in &current {
            sent.push(listener.message("notifications/tasks", detailed_fields(record)));
        }
        let finished = listener.open.is_empty();
        if finished {
            sent.push(listener.closing());
        }
        for message in sent {
            // Full or closed: the client reads `tasks/get` instead (hints, not truth).
            let _ = listener.outbound.try_send(message);
        }
        if !finished {
            let key = self
                .listen_ids
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            listeners.insert(key, listener);
        }
        Ok(())
    }

    /// Of the tasks a listen asks for, the ones it follows: the caller's own unexpired
    /// tasks of this era, each once (an id proves nothing).
    fn agreed_tasks(
        &self,
        session: &Session,
        asked: Vec<&str>,
    ) -> Result<Vec<TaskRecord>, RpcError> {
        let now_ms = self.env.now_ms();
        let mut current = Vec::new();
        for task_id in asked {
            let record = self.modern_record(task_id)?;
            if crate::contract::guard_get(&session.auth_key, record.as_ref(), now_ms)
                == Decision::ReturnStatus
                && let Some(record) = record
                && !current
                    .iter()
                    .any(|seen: &TaskRecord| seen.task_id == record.task_id)
            {
                current.push(record);
            }
        }
        Ok(current)
    }

    /// Tells the listeners following `record` of its change; a listener whose tasks are
    /// all terminal gets its closing answer and is dropped, one whose client is gone too.
    pub(super) fn tell_listeners(&self, record: &TaskRecord) {
        if record.era != Era::Extension2026 {
            return;
        }
        let mut listeners = self.listeners.lock().expect("listeners");
        listeners.retain(|_, listener| {
            if listener.auth_key != record.auth_key || !listener.open.contains(&record.task_id) {
                return !listener.outbound.is_closed();
            }
            let notice = listener.message("notifications/tasks", detailed_fields(record));
            if listener.outbound.try_send(notice).is_err() && listener.outbound.is_closed() {
                return false;
            }
            if record.status.is_terminal() {
                listener.open.remove(&record.task_id);
            }
            if listener.open.is_empty() {
                let _ = listener.outbound.try_send(listener.closing());
                return false;
            }
            true
        });
    }

    /// Handles one request of this era whose envelope was read; the transport checked
    /// whatever headers it has. Every result carries `resultType` and the server's info.
    pub async fn handle_modern(
        &self,
        session: &Session,
        envelope: &Envelope,
        method: &str,
        params: &Map<String, Value>,
    ) -> Result<Value, RpcError> {
        Server::check_version(envelope)?;
        let result = match method {
            "server/discover" => Ok(self.discover()),
            "tools/list" => Ok(json!({
                "resultType": "complete",
                "tools": self.specs.iter().map(|spec| spec.to_json_modern()).collect::<Vec<_>>(),
                "ttlMs": LIST_TTL_MS,
                "cacheScope": "private",
            })),
            "tools/call" => {
                self.check_admitting()?;
                self.call_tool_modern(session, envelope, params).await
            }
            "tasks/get" | "tasks/update" | "tasks/cancel" if !envelope.declares_tasks => {
                Err(missing_tasks_capability(method))
            }
            "tasks/get" => {
                self.spend_poll(session)?;
                self.get_modern(&session.auth_key, params)
            }
            "tasks/update" => self.update_modern(&session.auth_key, params),
            "tasks/cancel" => self.cancel_modern(&session.auth_key, params),
            other => Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                format!("Method not found: {other} (protocol version {VERSION})"),
            )),
        }?;
        Ok(self.with_server_info(result))
    }

    fn discover(&self) -> Value {
        json!({
            "resultType": "complete",
            "supportedVersions": [VERSION],
            "capabilities": {
                "tools": { "listChanged": false },
                "extensions": { TASKS_EXTENSION: {} },
            },
            "ttlMs": LIST_TTL_MS,
            "cacheScope": "private",
        })
    }

    fn with_server_info(&self, mut result: Value) -> Value {
        if let Value::Object(object) = &mut result {
            let meta = object
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(meta) = meta {
                meta.insert(
                    META_SERVER_INFO.into(),
                    json!({ "name": self.config.name, "version": self.config.version }),
                );
            }
        }
        result
    }

    async fn call_tool_modern(
        &self,
        session: &Session,
        envelope: &Envelope,
        params: &Map<String, Value>,
    ) -> Result<Value, RpcError> {
        let (name, spec, arguments) = self.tool_call_target(params)?;
        let responses: InputMap = match params.get("inputResponses") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(responses)) => responses.clone(),
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "params.inputResponses must be an object",
                ));
            }
        };
        let meta = params.get("_meta").and_then(Value::as_object);
        let idempotency_key = self.idempotency_key(session, meta)?;
        if let Some(capability) = self.tools.required_capability(name)
            && !envelope.capabilities.contains_key(capability)
        {
            return Err(RpcError::new(
                error_code::MISSING_CAPABILITY,
                format!("Tool {name} needs the client capability {capability}"),
            )
            .with_data(json!({ "requiredCapabilities": { capability: {} } })));
        }
        if let Err(error) = self.tools.validate(name, &arguments) {
            return Ok(tool_error(&error.message));
        }
        // Input the tool needs before anything is admitted: asked synchronously, answered
        // by the client's retry of the same call.
        if let Some(ask) = self.tools.prepare(name, &arguments, &responses) {
            return Ok(json!({ "resultType": "input_required", "inputRequests": ask.requests }));
        }
        let task_requested = envelope.declares_tasks && spec.task_support != TaskSupport::Forbidden;
        let answer = self.admit(Admit {
            session,
            negotiated: Negotiated::FULL,
            spec,
            arguments: &arguments,
            task_requested,
            idempotency_key,
            // Clients of this era cannot ask for a TTL: the server's default.
            requested_ttl_ms: None,
            era: Era::Extension2026,
            input_responses: (!responses.is_empty()).then(|| responses.clone()),
        })?;
        match answer.decision {
            Decision::AcceptTask | Decision::ReplayTask => {
                Ok(create_task_result(&admitted(answer)?))
            }
            Decision::AcceptNormal => match self
                .tools
                .call_with_input(name, arguments, &responses)
                .await
            {
                // A synchronous call has no task to decide: its tool publishes itself.
                ToolStep::Finished(outcome)
                | ToolStep::FinishedWithMessage { outcome, .. }
                | ToolStep::Prepared { outcome, .. } => {
                    super::server::answer_of(outcome).map(complete)
                }
                ToolStep::NeedsInput(ask) => {
                    Ok(json!({ "resultType": "input_required", "inputRequests": ask.requests }))
                }
                ToolStep::PointOfNoReturn { .. } => {
                    Err(super::server::sync_point_of_no_return(name))
                }
            },
            Decision::BlockTaskRequired => Err(missing_tasks_capability(&format!(
                "Tool {name} runs only as a task: it"
            ))),
            Decision::BlockIdempotencyCollision => Err(RpcError::invalid_params(
                "Idempotency key already used for a different request",
            )),
            other => Err(unexpected(other)),
        }
    }

    /// The caller's task of this era, as stored (`None`: unknown, or of the other era;
    /// the guards then answer as for an unknown task).
    fn modern_record(&self, task_id: &str) -> Result<Option<TaskRecord>, RpcError> {
        let record = self
            .store
            .read(task_id)
            .map_err(|error| self.internal(error))?;
        Ok(record.filter(|record| record.era == Era::Extension2026))
    }

    fn get_modern(&self, auth_key: &str, params: &Map<String, Value>) -> Result<Value, RpcError> {
        let task_id = wire::required_string(params, "taskId")?;
        let record = self.modern_record(task_id)?;
        match crate::contract::guard_get(auth_key, record.as_ref(), self.env.now_ms()) {
            Decision::ReturnStatus => Ok(detailed_task(record.as_ref().expect("located"))),
            other => Err(refusal(other)),
        }
    }

    fn update_modern(
        &self,
        auth_key: &str,
        params: &Map<String, Value>,
    ) -> Result<Value, RpcError> {
        let task_id = wire::required_string(params, "taskId")?;
        let responses = match params.get("inputResponses") {
            Some(Value::Object(responses)) => responses.clone(),
            _ => {
                return Err(RpcError::invalid_params(
                    "params.inputResponses must be an object",
                ));
            }
        };
        if self.modern_record(task_id)?.is_none() {
            return Err(refusal(Decision::BlockNotFound));
        }
        let answer = self
            .store
            .answer_input(&InputCommand {
                task_id: task_id.to_owned(),
                caller: auth_key.to_owned(),
                responses,
                now_ms: self.env.now_ms(),
            })
            .map_err(|error| self.internal(error))?;
        match answer.decision {
            Decision::ApplyInput => match &answer.record {
                Some(record) => {
                    if record.status == TaskStatus::Working {
                        self.status_changed(record);
                    }
                    Ok(ack_applied(record))
                }
                None => Ok(ack()),
            },
            Decision::IgnoreInput | Decision::AlreadyTerminal => Ok(ack()),
            other => Err(refusal(other)),
        }
    }

    fn cancel_modern(
        &self,
        auth_key: &str,
        params: &Map<String, Value>,
    ) -> Result<Value, RpcError> {
        let task_id = wire::required_string(params, "taskId")?;
        if self.modern_record(task_id)?.is_none() {
            return Err(refusal(Decision::BlockNotFound));
        }
        let answer = self
            .store
            .cancel(Negotiated::FULL, auth_key, task_id, self.env.now_ms())
            .map_err(|error| self.internal(error))?;
        match answer.decision {
            Decision::ApplyCancel => match &answer.record {
                Some(record) => {
                    self.status_changed(record);
                    Ok(ack_applied(record))
                }
                None => Ok(ack()),
            },
            // Cooperative cancellation: the task runs on; `_meta` says it is still live.
            Decision::PastPointOfNoReturn => {
                Ok(answer.record.as_ref().map_or_else(ack, ack_applied))
            }
            Decision::AlreadyTerminal => Ok(ack()),
            other => Err(refusal(other)),
        }
    }
}

// ---------------------------------------------------------------------------------------
// subscriptions/listen: notifications/tasks for the caller's own tasks of this era.
// ---------------------------------------------------------------------------------------

/// Open `subscriptions/listen` streams per caller, at most.
pub const LISTENS_PER_CALLER_MAX: usize = 16;
/// Task ids one listen may name, at most.
pub const LISTEN_TASKS_MAX: usize = 256;
/// `_meta` key tying a listen stream's messages to its request.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// One open `subscriptions/listen` stream.
pub(super) struct Listener {
    pub(super) auth_key: String,
    /// The listen request's id, echoed in every message's `_meta`.
    pub(super) subscription_id: Value,
    /// The tasks it follows that are not terminal yet.
    pub(super) open: BTreeSet<String>,
    pub(super) outbound: Outbound,
}

impl Listener {
    fn message(&self, method: &str, mut params: Map<String, Value>) -> Value {
        let meta = params
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert(META_SUBSCRIPTION_ID.into(), self.subscription_id.clone());
        }
        wire::notification(method, Value::Object(params))
    }

    /// The listen request's final answer: the stream ends with it.
    fn closing(&self) -> Value {
        wire::response(
            &self.subscription_id,
            json!({ "resultType": "complete", "_meta": { META_SUBSCRIPTION_ID: self.subscription_id } }),
        )
    }
}

/// The `taskIds` a `subscriptions/listen` names (none when absent or null).
fn listen_task_ids(params: &Map<String, Value>) -> Result<Vec<&str>, RpcError> {
    let filter = match params.get("notifications") {
        Some(Value::Object(filter)) => filter,
        _ => {
            return Err(RpcError::invalid_params(
                "params.notifications must be an object",
            ));
        }
    };
    match filter.get("taskIds") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(ids)) if ids.len() <= LISTEN_TASKS_MAX => ids
            .iter()
            .map(|id| id.as_str())
            .collect::<Option<_>>()
            .ok_or_else(|| {
                RpcError::invalid_params("params.notifications.taskIds must be strings")
            }),
        Some(_) => Err(RpcError::invalid_params(format!(
            "params.notifications.taskIds must be an array of at most {LISTEN_TASKS_MAX} strings"
        ))),
    }
}
