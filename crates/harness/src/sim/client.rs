//! A client node: speaks MCP to the server through the same handler `tasklatch serve`
//! runs, and records what it asked and what it was told.

use super::SimEnv;
use super::answers::{
    ack_answer, cancel_answer, detailed_answer, get_answer, result_answer, revealed_of,
    revealed_of_wire, version_meta,
};
use super::streams::{self, Stream};
use super::world::Shared;
use crate::check::{ClientOp, ClientResult, Event, Opening, Revealed};
use crate::contract::{Decision, Era, Negotiated, TaskStatus};
use crate::mcp::modern;
use crate::mcp::server::{Outbound, STORE_UNAVAILABLE};
use crate::mcp::wire::{self, Incoming};
use crate::mcp::{Server, Session};
use crate::runtime::Env;
use crate::store::{TaskStore, TransitionCommand};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// What the server answered a client's request.
pub(super) enum Reply {
    Result(serde_json::Value),
    Error {
        code: i64,
        message: String,
        data: serde_json::Value,
    },
    /// `-32603` because the store could not be reached: nothing happened.
    Unavailable,
    /// No answer: the server process was down or died with the request in flight (a
    /// dropped connection); it may or may not have happened.
    Lost,
}

/// One JSON-RPC request through the MCP handler `tasklatch serve` runs, handed over as
/// the transports' parser yields it (that parser is fuzzed and tested on its own; writing
/// each request as text and parsing it back cost a tenth of a seed), answered as the JSON
/// a transport would write. `stream`: where the call may send requests to the client (a
/// 2025-11-25 `tasks/result`'s questions).
pub(super) async fn rpc(
    server: &Server,
    session: &Session,
    method: &str,
    params: serde_json::Value,
    stream: Option<&Outbound>,
) -> Reply {
    let serde_json::Value::Object(params) = params else {
        unreachable!("a client's params are an object");
    };
    let request = Incoming::Request {
        id: json!(1),
        method: method.to_owned(),
        params,
    };
    let mut answer = server
        .handle_on(session, request, stream)
        .await
        .expect("a request is answered");
    if let Some(result) = answer
        .as_object_mut()
        .and_then(|answer| answer.remove("result"))
    {
        return Reply::Result(result);
    }
    let error = &answer["error"];
    let code = error["code"].as_i64().unwrap_or_default();
    let message = error["message"].as_str().unwrap_or_default().to_owned();
    if code == wire::code::INTERNAL_ERROR && message == STORE_UNAVAILABLE {
        return Reply::Unavailable;
    }
    Reply::Error {
        code,
        message,
        data: error.get("data").cloned().unwrap_or_default(),
    }
}

/// A client: speaks MCP to the server (JSON-RPC in memory, through the same handler
/// `tasklatch serve` runs), in the protocol era the plan gave it. It creates its tenant's
/// tasks (retrying lost answers with the same idempotency key), polls them at their poll
/// interval with jitter, sometimes cancels, answers their questions and reads their
/// outcomes:
///
/// - 2025-11-25: `tools/call` with `task`, `tasks/get`, `tasks/result`, `tasks/list`
///   (adopting tasks it never heard of). It answers a task's question as an
///   `elicitation/create` on a blocked `tasks/result` ([`questions`]), where the scenario
///   has clients hold streams, three times in four; otherwise off the wire, as the
///   server-side effect of an elicitation answer applied to the store directly.
/// - 2026-07-28: the `_meta` envelope on every request, server-directed creation,
///   outcomes inlined in `tasks/get`, questions answered by `tasks/update`, no list (its
///   last create attempt is never lost: it could not find the task otherwise).
///
/// Every random draw happens in the order the steps below make it: the steps are the
/// client's behaviour, and a seed replays it exactly.
pub(super) async fn client(shared: Arc<Shared>, tenant: usize, era: Era) {
    let mut client = Client::new(shared, tenant, era);
    if era == Era::Extension2026 {
        client.mark("modern-client");
    }
    client.tend_streams().await;
    for n in 0..client.shared.scenario.tasks_per_tenant {
        let key = format!("{}#{n}", client.caller);
        client.choose_ttl();
        let arguments = match &client.shared.author {
            Some(author) => author.arguments(tenant, n),
            None => json!({ "tenant": tenant, "n": n }),
        };
        client.create_with_retry(&key, &arguments).await;
        // A buggy client reuses the key for another request: it must be refused.
        if madsim::rand::random::<u64>() % 100 < client.shared.knobs.key_reuse_percent {
            let altered = match &client.shared.author {
                Some(author) => author.arguments(tenant, usize::MAX - n),
                None => json!({ "tenant": tenant, "n": n, "altered": true }),
            };
            client.reuse_key(&key, &altered).await;
        }
    }
    client.tend_streams().await;
    // Poll each known task; then list, and adopt any own task the client never heard of
    // (every create answer lost): anything it can get, it can find by listing.
    let mut pending: std::collections::VecDeque<String> = client.mine.iter().cloned().collect();
    let mut adopted = false;
    loop {
        while let Some(task_id) = pending.pop_front() {
            client.follow(&task_id).await;
        }
        if adopted || client.era == Era::Extension2026 {
            break;
        }
        adopted = true;
        pending.extend(client.adopt_from_list().await);
        if pending.is_empty() {
            break;
        }
    }
    if client.era == Era::Core2025 {
        client.list().await;
    }
    client.drain_streams();
}

mod questions;

/// Bounds on a client's loops.
const CREATE_ATTEMPTS_MAX: usize = 5;
/// A 2026-07-28 client's create retries (each after a poll interval while the store is
/// down): enough to outlast any scenario's outages.
const CREATE_ATTEMPTS_MODERN_MAX: usize = 200;
const CANCEL_ATTEMPTS_MAX: usize = 3;
const POLLS_PER_TASK_MAX: usize = 2_000;
const LIST_ATTEMPTS_MAX: usize = 50;
/// Pages a client follows through `nextCursor` (a tenant has a few tasks; page size 1 at
/// the least).
const LIST_PAGES_MAX: usize = 64;

/// One client's state between its steps.
struct Client {
    shared: Arc<Shared>,
    server: Arc<Server>,
    session: Session,
    caller: String,
    name: String,
    /// The protocol era it speaks.
    era: Era,
    /// The `task` parameter of its creates (the scenario's TTL, if any).
    task_params: serde_json::Value,
    /// The server process it speaks to (an in-process queue's deployment).
    process: Option<usize>,
    /// Connections it opened after its first (each a new session).
    reconnects: u32,
    /// The history's length when its last request was sent (the next record's
    /// `sent_after`).
    sent_after: std::sync::Mutex<Option<usize>>,
    /// The tasks its creates were answered with, in order.
    mine: Vec<String>,
    /// Its streams, where the scenario has clients hold them.
    streams: std::sync::Mutex<Streams>,
    /// Whether it also holds a second, listening session (every other tenant's client:
    /// enough to see progress go astray, at half the messages).
    watches: bool,
    /// The last status each task showed this client (what a `tasks/result` answer is for).
    last_status: BTreeMap<String, TaskStatus>,
    /// The server incarnation its session declared its capabilities to (2025-11-25; see
    /// [`questions`]); a restarted process knows the session no more.
    initialized_on: Option<std::sync::Weak<Server>>,
}

impl Client {
    fn new(shared: Arc<Shared>, tenant: usize, era: Era) -> Client {
        let caller = format!("tenant-{tenant}/user");
        let name = format!("client-{tenant}");
        Client {
            server: shared.server.clone(),
            session: Session {
                id: name.clone(),
                auth_key: caller.clone(),
                negotiated: Negotiated::FULL,
                idempotency_header: None,
            },
            task_params: match shared.scenario.ttl_ms {
                Some(ttl) => json!({ "ttl": ttl }),
                None => json!({}),
            },
            process: (!shared.processes.is_empty()).then(|| tenant % shared.processes.len()),
            sent_after: std::sync::Mutex::new(None),
            reconnects: 0,
            shared,
            caller,
            name,
            era,
            mine: Vec::new(),
            last_status: BTreeMap::new(),
            initialized_on: None,
            streams: std::sync::Mutex::new(Streams::default()),
            watches: tenant.is_multiple_of(2),
        }
    }

    fn record(&self, op: ClientOp, result: ClientResult) {
        self.shared.history.push(Event::Client {
            client: self.name.clone(),
            caller: self.caller.clone(),
            op,
            result,
            at_ms: SimEnv.now_ms(),
            sent_after: self.sent_after.lock().expect("sent_after").take(),
        });
    }

    fn answered(&self, op: ClientOp, decision: Decision, revealed: Vec<Revealed>) {
        self.record(op, ClientResult::Ok { decision, revealed });
    }

    fn mark(&self, name: &str) {
        self.shared.history.mark(name);
    }

    /// The TTL of the next task, where the scenario offers choices (2025-11-25 clients
    /// only: a 2026-07-28 client cannot ask for one); drawn once per task, so its retries
    /// ask for the same.
    fn choose_ttl(&mut self) {
        let choices = &self.shared.scenario.faults.client_ttl_ms;
        if choices.is_empty() || self.era != Era::Core2025 {
            return;
        }
        let ttl = choices[super::faults::roll(choices.len() as u64) as usize];
        self.task_params = match ttl {
            Some(ttl) => {
                self.mark("client-ttl");
                if ttl == 0 {
                    self.mark("ttl-zero");
                }
                if ttl > self.shared.server_facts.ttl_ms_max {
                    self.mark("ttl-clamped");
                }
                json!({ "ttl": ttl })
            }
            None => json!({}),
        };
    }

    /// A new connection under the same identity: a new session, as a client that lost its
    /// connection (or its patience) opens one and retries there. One key of one caller is
    /// one task whichever session sends it.
    fn reconnect(&mut self) {
        self.reconnects += 1;
        self.session.id = format!("{}~{}", self.name, self.reconnects);
        self.mark("reconnected");
        // The old connection's stream and what it declared went with it.
        self.streams.lock().expect("streams").main = None;
        self.initialized_on = None;
    }

    /// Whether this answer is lost on its way back (the knob's chance).
    fn answer_lost(&self) -> bool {
        madsim::rand::random::<u64>() % 100 < self.shared.knobs.lost_response_percent
    }

    /// One request in the client's era: a 2026-07-28 client puts its envelope (version,
    /// capabilities with the tasks extension) in `_meta`.
    async fn rpc(&self, method: &str, params: serde_json::Value) -> Reply {
        self.rpc_on(method, params, None).await
    }

    /// [`Client::rpc`] whose call may send requests to the client on `stream`.
    async fn rpc_on(
        &self,
        method: &str,
        mut params: serde_json::Value,
        stream: Option<Outbound>,
    ) -> Reply {
        if self.era == Era::Extension2026 {
            let meta = params
                .as_object_mut()
                .expect("params are an object")
                .entry("_meta")
                .or_insert_with(|| json!({}));
            meta[modern::META_PROTOCOL_VERSION] = json!(modern::VERSION);
            meta[modern::META_CLIENT_CAPABILITIES] =
                json!({ "extensions": { modern::TASKS_EXTENSION: {} } });
        }
        self.drain_streams();
        *self.sent_after.lock().expect("sent_after") = Some(self.shared.history.len());
        let Some(mut process) = self.process else {
            return rpc(&self.server, &self.session, method, params, stream.as_ref()).await;
        };
        // A 2026-07-28 request has no session: a balancer may send it to any process.
        let processes = self.shared.processes.len();
        if self.era == Era::Extension2026 && processes > 1 {
            process = super::faults::roll(processes as u64) as usize;
        }
        let reply = self.shared.processes[process]
            .call(&self.session, method, params, stream)
            .await;
        if matches!(reply, Reply::Lost) {
            self.mark("connection-lost");
        }
        reply
    }

    /// The task a create answer shows: nested under `task` (2025-11-25) or flat.
    fn created_task(&self, result: &serde_json::Value) -> Option<Revealed> {
        let task = match self.era {
            Era::Core2025 => &result["task"],
            Era::Extension2026 => result,
        };
        revealed_of_wire(task, version_meta(result), self.era)
    }

    /// A task-augmented `tools/call` of `export` under `key`, and the operation the oracle
    /// sees (the digest is the server's own: what `WrappedRequest::digest` computes).
    fn create_request(
        &self,
        key: &str,
        arguments: &serde_json::Value,
    ) -> (ClientOp, serde_json::Value) {
        let tool = match &self.shared.author {
            Some(author) => author.tool.as_str(),
            None => "export",
        };
        let digest = crate::contract::request_digest("tools/call", tool, Some(arguments));
        let op = ClientOp::Create {
            idempotency_key: Some(key.to_owned()),
            digest: digest.as_str().to_owned(),
            ttl_ms: match self.era {
                Era::Core2025 => self.task_params["ttl"].as_u64(),
                Era::Extension2026 => None,
            },
            era: self.era,
        };
        let mut params = match self.era {
            Era::Core2025 => json!({
                "name": tool,
                "arguments": arguments,
                "task": self.task_params,
                "_meta": { wire::IDEMPOTENCY_KEY: key },
            }),
            // The server directs creation (and picks the TTL: the scenario's default).
            Era::Extension2026 => json!({
                "name": tool,
                "arguments": arguments,
                "_meta": { wire::IDEMPOTENCY_KEY: key },
            }),
        };
        if self.era == Era::Core2025 && self.shared.scenario.streams {
            // Progress on this token is for this session alone.
            let token = format!("{}/{key}", self.session.id);
            self.shared.history.push(Event::Opened {
                client: self.name.clone(),
                session: self.session.id.clone(),
                what: Opening::ProgressToken {
                    token: token.clone(),
                },
                at_ms: SimEnv.now_ms(),
            });
            params["_meta"]["progressToken"] = json!(token);
        }
        (op, params)
    }

    /// Creates a task, retrying a lost or failed answer with the same key (bounded).
    async fn create_with_retry(&mut self, key: &str, arguments: &serde_json::Value) {
        // A 2026-07-28 client cannot list its tasks: it must learn what its create did, so
        // it retries (same key) through store outages until answered, and its last
        // attempt's answer is never lost.
        let attempts = match self.era {
            Era::Core2025 => CREATE_ATTEMPTS_MAX,
            Era::Extension2026 => CREATE_ATTEMPTS_MODERN_MAX,
        };
        for attempt in 0..attempts {
            madsim::time::sleep(Duration::from_millis(
                1 + madsim::rand::random::<u64>() % 20,
            ))
            .await;
            self.tend_streams().await;
            let (op, params) = self.create_request(key, arguments);
            let reply = self.rpc("tools/call", params).await;
            let lost =
                self.answer_lost() && !(self.era == Era::Extension2026 && attempt + 1 == attempts);
            match reply {
                Reply::Unavailable | Reply::Lost => {
                    let result = match reply {
                        Reply::Lost => {
                            self.reconnect();
                            ClientResult::Indeterminate
                        }
                        _ => ClientResult::Fail { unavailable: true },
                    };
                    self.record(op, result);
                    if self.era == Era::Extension2026 || matches!(reply, Reply::Lost) {
                        let interval = self.shared.scenario.poll_interval_ms;
                        madsim::time::sleep(Duration::from_millis(interval)).await;
                    }
                }
                _ if lost => {
                    self.mark("lost-response");
                    self.record(op, ClientResult::Indeterminate);
                    // A client that timed out drops its connection and retries on a new one.
                    self.reconnect();
                }
                Reply::Result(result) => {
                    let revealed: Vec<Revealed> = self.created_task(&result).into_iter().collect();
                    for task in &revealed {
                        self.mine.push(task.task_id.clone());
                        self.shared
                            .known
                            .lock()
                            .expect("known tasks")
                            .push(task.task_id.clone());
                    }
                    self.answered(op, Decision::AcceptTask, revealed);
                    return;
                }
                Reply::Error { .. } => {
                    self.record(op, ClientResult::Fail { unavailable: false });
                    return;
                }
            }
        }
    }

    /// Sends another request under a key already used: the server must refuse it.
    async fn reuse_key(&self, key: &str, altered: &serde_json::Value) {
        let (op, params) = self.create_request(key, altered);
        match self.rpc("tools/call", params).await {
            Reply::Result(result) => self.answered(
                op,
                Decision::AcceptTask,
                self.created_task(&result).into_iter().collect(),
            ),
            Reply::Error { code, message, .. }
                if code == wire::code::INVALID_PARAMS && message.starts_with("Idempotency key") =>
            {
                self.mark("idempotency-collision-refused");
                self.answered(op, Decision::BlockIdempotencyCollision, Vec::new());
            }
            Reply::Error { .. } => self.record(op, ClientResult::Fail { unavailable: false }),
            Reply::Unavailable => self.record(op, ClientResult::Fail { unavailable: true }),
            Reply::Lost => self.record(op, ClientResult::Indeterminate),
        }
    }

    /// Follows one task until it is gone or terminal (bounded): at each poll interval
    /// (with jitter) maybe cancel it, maybe probe another tenant's task, then poll it,
    /// answer its question, fetch its result.
    async fn follow(&mut self, task_id: &str) {
        let interval = self.shared.scenario.poll_interval_ms;
        for _poll in 0..POLLS_PER_TASK_MAX {
            madsim::time::sleep(Duration::from_millis(
                interval + madsim::rand::random::<u64>() % (interval / 2 + 1),
            ))
            .await;
            self.tend_streams().await;
            let cancel_now = madsim::rand::random::<u64>() % 100 < self.shared.knobs.cancel_percent;
            if cancel_now {
                self.cancel_with_retry(task_id).await;
            }
            if madsim::rand::random::<u64>() % 100 < self.shared.knobs.cross_tenant_percent {
                self.probe_foreign().await;
            }
            let reply = self.rpc("tasks/get", json!({ "taskId": task_id })).await;
            let (op, asked) = match (self.era, &reply) {
                (Era::Extension2026, Reply::Result(task)) => (
                    ClientOp::GetModern {
                        task_id: task_id.to_owned(),
                    },
                    task["inputRequests"].as_object().cloned(),
                ),
                (Era::Extension2026, _) => (
                    ClientOp::GetModern {
                        task_id: task_id.to_owned(),
                    },
                    None,
                ),
                (Era::Core2025, _) => (
                    ClientOp::Get {
                        task_id: task_id.to_owned(),
                    },
                    None,
                ),
            };
            let answer = match self.era {
                Era::Core2025 => get_answer(reply),
                Era::Extension2026 => detailed_answer(reply),
            };
            let Some((decision, revealed)) = answer else {
                continue;
            };
            let shown = revealed.first().map(|seen| (seen.status, seen.version));
            self.answered(op, decision, revealed);
            let Some((status, version)) = shown else {
                return; // gone: expired, or never the client's
            };
            self.last_status.insert(task_id.to_owned(), status);
            if status == TaskStatus::InputRequired
                && let Some(version) = version
            {
                match asked {
                    Some(asked) => self.update_input(task_id, &asked).await,
                    None if self.elicits() => {
                        if self.result_answering(task_id).await {
                            return;
                        }
                    }
                    None => self.provide_input(task_id, version),
                }
            }
            if status.is_terminal() {
                // 2026-07-28 has no tasks/result: the outcome came inlined in that read.
                if self.era == Era::Core2025 {
                    self.fetch_result(task_id).await;
                }
                return;
            }
        }
    }

    /// Cancels a task; a cancel whose answer is lost is sent again at once (bounded).
    async fn cancel_with_retry(&self, task_id: &str) {
        for attempt in 0..CANCEL_ATTEMPTS_MAX {
            if attempt > 0 {
                self.mark("cancel-retried");
                madsim::time::sleep(Duration::from_millis(
                    1 + madsim::rand::random::<u64>() % 20,
                ))
                .await;
            }
            let reply = self.rpc("tasks/cancel", json!({ "taskId": task_id })).await;
            let op = ClientOp::Cancel {
                task_id: task_id.to_owned(),
            };
            let answer = match self.era {
                Era::Core2025 => cancel_answer(reply),
                Era::Extension2026 => ack_answer(reply, task_id, Decision::ApplyCancel),
            };
            let Some((decision, revealed)) = answer else {
                continue;
            };
            if self.answer_lost() {
                self.mark("lost-response");
                self.record(op, ClientResult::Indeterminate);
                continue;
            }
            self.answered(op, decision, revealed);
            return;
        }
    }

    /// Pokes a task some other client was given, with a read, a result or a cancel: each
    /// must be refused as if the task did not exist.
    async fn probe_foreign(&self) {
        let known = self.shared.known.lock().expect("known tasks").clone();
        let foreign: Vec<&String> = known.iter().filter(|id| !self.mine.contains(id)).collect();
        if foreign.is_empty() {
            return;
        }
        let target =
            foreign[(madsim::rand::random::<u64>() % foreign.len() as u64) as usize].clone();
        let params = json!({ "taskId": target });
        let draw = madsim::rand::random::<u64>() % 3;
        let (op, answer) = match (self.era, draw) {
            (Era::Core2025, 0) => (
                ClientOp::Cancel {
                    task_id: target.clone(),
                },
                cancel_answer(self.rpc("tasks/cancel", params).await),
            ),
            (Era::Core2025, 1) => (
                ClientOp::Result {
                    task_id: target.clone(),
                },
                result_answer(self.rpc("tasks/result", params).await, &target, None),
            ),
            (Era::Core2025, _) => (
                ClientOp::Get {
                    task_id: target.clone(),
                },
                get_answer(self.rpc("tasks/get", params).await),
            ),
            (Era::Extension2026, 0) => (
                ClientOp::Cancel {
                    task_id: target.clone(),
                },
                ack_answer(
                    self.rpc("tasks/cancel", params).await,
                    &target,
                    Decision::ApplyCancel,
                ),
            ),
            (Era::Extension2026, 1) => {
                let params = json!({
                    "taskId": target,
                    "inputResponses": { "columns": { "action": "accept", "content": { "columns": "stolen" } } },
                });
                (
                    ClientOp::ProvideInput {
                        task_id: target.clone(),
                        responses: params["inputResponses"].as_object().cloned(),
                    },
                    ack_answer(
                        self.rpc("tasks/update", params).await,
                        &target,
                        Decision::ApplyInput,
                    ),
                )
            }
            (Era::Extension2026, _) => (
                ClientOp::GetModern {
                    task_id: target.clone(),
                },
                detailed_answer(self.rpc("tasks/get", params).await),
            ),
        };
        if let Some((decision, revealed)) = answer {
            if decision == Decision::BlockNotFound {
                self.mark(match op {
                    ClientOp::Cancel { .. } => "cross-tenant-cancel-refused",
                    _ => "cross-tenant-refused",
                });
            }
            self.answered(op, decision, revealed);
        }
    }

    /// The requestor answers a task's question: the server moves it back to working at
    /// the version the client saw (off the wire; see [`client`]).
    fn provide_input(&self, task_id: &str, version: u64) {
        let Ok(reply) = self.shared.store.transition(&TransitionCommand {
            irreversible_effect: None,
            task_id: task_id.to_owned(),
            caller: self.caller.clone(),
            expected_version: version,
            next: TaskStatus::Working,
            outcome: None,
            status_message: Some("input provided".into()),
            now_ms: SimEnv.now_ms(),
            input_requests: None,
        }) else {
            return;
        };
        self.mark("input-provided");
        self.answered(
            ClientOp::ProvideInput {
                task_id: task_id.to_owned(),
                responses: None,
            },
            reply.decision,
            reply.record.iter().map(revealed_of).collect(),
        );
    }

    /// The requestor answers a 2026-07-28 task's open questions over the wire
    /// (`tasks/update`); the acknowledgement's version says whether the answer applied.
    async fn update_input(
        &self,
        task_id: &str,
        asked: &serde_json::Map<String, serde_json::Value>,
    ) {
        let responses: serde_json::Map<String, serde_json::Value> = asked
            .keys()
            .map(|key| {
                let answer = json!({ "action": "accept", "content": { "columns": "id,total" } });
                (key.clone(), answer)
            })
            .collect();
        let params = json!({ "taskId": task_id, "inputResponses": responses });
        let reply = self.rpc("tasks/update", params).await;
        if let Some((decision, revealed)) = ack_answer(reply, task_id, Decision::ApplyInput) {
            if decision == Decision::ApplyInput {
                self.mark("input-provided-by-update");
            }
            let op = ClientOp::ProvideInput {
                task_id: task_id.to_owned(),
                responses: Some(responses),
            };
            self.answered(op, decision, revealed);
        }
    }

    /// `tasks/result` of a task seen terminal.
    async fn fetch_result(&self, task_id: &str) {
        let reply = self.rpc("tasks/result", json!({ "taskId": task_id })).await;
        let status = self.last_status.get(task_id).copied();
        if let Some((decision, revealed)) = result_answer(reply, task_id, status) {
            let op = ClientOp::Result {
                task_id: task_id.to_owned(),
            };
            self.answered(op, decision, revealed);
        }
    }

    /// Lists its tasks (retrying while the store is down, bounded; following every
    /// `nextCursor`) and returns the live ones it never heard of.
    async fn adopt_from_list(&self) -> Vec<String> {
        let mut pages = Vec::new();
        let mut cursor: Option<String> = None;
        'pages: for _page in 0..LIST_PAGES_MAX {
            let mut params = json!({});
            if let Some(cursor) = &cursor {
                params["cursor"] = json!(cursor);
            }
            for _attempt in 0..LIST_ATTEMPTS_MAX {
                match self.rpc("tasks/list", params.clone()).await {
                    Reply::Result(page) => {
                        cursor = page["nextCursor"].as_str().map(str::to_owned);
                        pages.push(page);
                        if cursor.is_none() {
                            break 'pages;
                        }
                        continue 'pages;
                    }
                    _ => {
                        let interval = self.shared.scenario.poll_interval_ms;
                        madsim::time::sleep(Duration::from_millis(interval)).await
                    }
                }
            }
            break;
        }
        let mut adopted = Vec::new();
        for task in pages
            .iter()
            .flat_map(|page| page["tasks"].as_array())
            .flatten()
        {
            if let Some(seen) = revealed_of_wire(task, None, Era::Core2025)
                && !self.mine.contains(&seen.task_id)
                && !seen.status.is_terminal()
            {
                self.mark("task-adopted-from-list");
                adopted.push(seen.task_id);
            }
        }
        adopted
    }

    /// A final `tasks/list`, every page recorded for the oracle (I4: only its own tasks;
    /// I14: each page exactly what follows the last).
    async fn list(&self) {
        let mut cursor: Option<String> = None;
        let mut after: Option<String> = None;
        for page_number in 0..LIST_PAGES_MAX {
            let mut params = json!({});
            if let Some(cursor) = &cursor {
                params["cursor"] = json!(cursor);
            }
            let Reply::Result(page) = self.rpc("tasks/list", params).await else {
                return;
            };
            let revealed: Vec<Revealed> = page["tasks"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|task| revealed_of_wire(task, None, Era::Core2025))
                .collect();
            cursor = page["nextCursor"].as_str().map(str::to_owned);
            self.mark_page(page_number, revealed.len(), cursor.is_some());
            let op = ClientOp::List {
                after: after.clone(),
                next_cursor: cursor.is_some(),
            };
            after = revealed.last().map(|seen| seen.task_id.clone());
            self.answered(op, Decision::ListTenantFiltered, revealed);
            if cursor.is_none() {
                return;
            }
        }
    }

    /// Coverage of a list page: the page size asked, pages followed, a full last page.
    fn mark_page(&self, page_number: usize, shown: usize, more: bool) {
        let asked = self.shared.server_facts.list_page;
        let limit = asked.clamp(1, crate::store::LIST_LIMIT_MAX);
        if page_number == 0 {
            match asked {
                0 => self.mark("list-page:zero"),
                1 => self.mark("list-page:1"),
                crate::store::LIST_LIMIT_MAX => self.mark("list-page:max"),
                over if over > crate::store::LIST_LIMIT_MAX => self.mark("list-page:over-max"),
                _ => {}
            }
        }
        if page_number > 0 {
            self.mark("list-multi-page");
        }
        if !more && shown == limit {
            self.mark("list-exact-boundary");
        }
    }
}

/// A client's open streams (see [`streams`]).
#[derive(Default)]
struct Streams {
    /// The stream of its current session (2025-11-25) or its listen stream (2026-07-28).
    main: Option<Stream>,
    /// Its second, listening session (2025-11-25).
    watcher: Option<Stream>,
    /// Streams opened so far, for fresh session and subscription ids.
    opened: u32,
}

impl Client {
    /// Records what its streams received.
    fn drain_streams(&self) {
        if !self.shared.scenario.streams {
            return;
        }
        let history = &self.shared.history;
        let mut guard = self.streams.lock().expect("streams");
        let streams = &mut *guard;
        // The watcher records what only it can show (progress meant for another session,
        // another caller's tasks); its copies of its client's own statuses the session's
        // stream records already.
        let own: &[String] = &[];
        for (slot, known) in [
            (&mut streams.main, own),
            (&mut streams.watcher, &self.mine[..]),
        ] {
            if let Some(stream) = slot
                && !stream.drain(history, known)
            {
                history.mark("stream-closed");
                *slot = None;
            }
        }
    }

    /// Reads its streams and opens what is missing (first, or after the process holding
    /// it died): a 2025-11-25 client's session stream (on a new session: the old one died
    /// with its process) and its watcher; a 2026-07-28 client's listen, while it has
    /// tasks it has not seen end.
    async fn tend_streams(&mut self) {
        if !self.shared.scenario.streams {
            return;
        }
        self.drain_streams();
        let (main_open, reopened) = {
            let streams = self.streams.lock().expect("streams");
            (streams.main.is_some(), streams.opened > 0)
        };
        match self.era {
            Era::Core2025 => {
                let Some(server) = streams::server_of(&self.shared, self.process) else {
                    return;
                };
                if !main_open && reopened {
                    self.reconnect();
                }
                let mut streams = self.streams.lock().expect("streams");
                if !main_open {
                    streams.main = Some(Stream::open(&server, &self.name, &self.session));
                    streams.opened += 1;
                }
                if streams.watcher.is_none() && self.watches {
                    let mut watcher = self.session.clone();
                    watcher.id = format!("{}/watch~{}", self.name, streams.opened);
                    streams.watcher = Some(Stream::open(&server, &self.name, &watcher));
                    streams.opened += 1;
                }
            }
            Era::Extension2026 if !main_open => {
                // About the tasks it has not yet seen end: a listen of ended tasks only
                // would end as it opened.
                let live: Vec<String> = self
                    .mine
                    .iter()
                    .filter(|task_id| {
                        !self
                            .last_status
                            .get(*task_id)
                            .is_some_and(|status| status.is_terminal())
                    })
                    .cloned()
                    .collect();
                if !live.is_empty() {
                    self.listen(&live).await;
                }
            }
            Era::Extension2026 => {}
        }
    }

    /// Opens a 2026-07-28 listen stream about `task_ids` on one process (any: a balancer
    /// picks), on its session there.
    async fn listen(&mut self, task_ids: &[String]) {
        let process = match self.shared.processes.len() {
            0 => None,
            processes => Some(super::faults::roll(processes as u64) as usize),
        };
        let Some(server) = streams::server_of(&self.shared, process) else {
            return;
        };
        let opened = {
            let mut streams = self.streams.lock().expect("streams");
            streams.opened += 1;
            streams.opened
        };
        let subscription = format!("{}/listen-{opened}", self.session.id);
        let stream = streams::listen(
            &server,
            &self.shared.history,
            &self.name,
            &self.session,
            &subscription,
            task_ids,
        )
        .await;
        self.streams.lock().expect("streams").main = stream;
    }
}
