//! `tasklatch bench http`: a load generator for live MCP tasks servers over Streamable
//! HTTP, in either era, native, so that the server is what runs out first.
//!
//! Each of `connections` clients holds one keep-alive HTTP/1.1 connection (2025-11-25: and
//! a session of its own; 2026-07-28 requests carry their own envelope and need none;
//! tokens are dealt out round-robin, so a load can be spread over identities) and runs the
//! workload step after step:
//!
//! | workload | one step |
//! |---|---|
//! | `create-poll-result` | create a task, `tasks/get` until terminal, then (2025-11-25 only: 2026-07-28 inlines the result) `tasks/result` |
//! | `poll-heavy` | `tasks/get` of one of the client's four tasks, drawn |
//! | `cancel-heavy` | create a task (a long one), 0–2 `tasks/get`, `tasks/cancel` |
//! | `create` | create a task, nothing more (admission alone) |
//!
//! Creating a task is a `tools/call` with `task` (2025-11-25) or declaring the tasks
//! extension (2026-07-28, where the server decides).
//!
//! Closed loop (the default): each client starts its next step when the last ends. Open
//! loop (`rate_per_s`): steps are scheduled at a fixed rate over all clients, and a step a
//! client starts late (its previous step took too long) has its first request timed from
//! when it was *scheduled*, so a server that falls behind shows it in the latency (no
//! coordinated omission). Requests during the warm-up are not
//! counted. The seed fixes every draw (which task is polled, how many polls before a
//! cancel). Latency is kept per method (up to [`SAMPLES_PER_METHOD_MAX`] samples each) and
//! reported as p50 / p99 / p99.9; the generator's own CPU share is read from `/proc` so a
//! report says whether the generator or the server was the limit.

use crate::contract::Era;
use crate::peer::{META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, TASKS_EXTENSION, VERSION_2025};
use crate::transport::HttpUrl;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Latency samples kept per method, at most (later requests are counted, not timed).
pub const SAMPLES_PER_METHOD_MAX: usize = 2_000_000;
/// Clients at most.
pub const CONNECTIONS_MAX: usize = 1_024;
/// `tasks/get` calls one `create-poll-result` step makes before giving up on its task.
const POLLS_PER_TASK_MAX: usize = 10_000;
/// Tasks each `poll-heavy` client creates and then polls.
const POLLED_TASKS: usize = 4;

/// What each client does, step after step (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Create, poll to the end, collect.
    CreatePollResult,
    /// Poll.
    PollHeavy,
    /// Create, poll a little, cancel.
    CancelHeavy,
    /// Create, nothing more.
    Create,
}

impl Workload {
    /// Every workload, in the order `--workload` lists them.
    pub const ALL: [Workload; 4] = [
        Workload::CreatePollResult,
        Workload::PollHeavy,
        Workload::CancelHeavy,
        Workload::Create,
    ];

    /// Its name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Workload::CreatePollResult => "create-poll-result",
            Workload::PollHeavy => "poll-heavy",
            Workload::CancelHeavy => "cancel-heavy",
            Workload::Create => "create",
        }
    }

    /// Parses a name; the error lists the names.
    pub fn parse(name: &str) -> Result<Workload, String> {
        Workload::ALL
            .into_iter()
            .find(|workload| workload.as_str() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Workload::ALL.iter().map(|w| w.as_str()).collect();
                format!("--workload {name:?}: expected one of {}", names.join(", "))
            })
    }
}

/// One run's settings.
#[derive(Clone, Debug)]
pub struct HttpBenchConfig {
    /// The server's endpoint, `http://HOST:PORT/mcp`.
    pub url: String,
    /// The protocol era spoken.
    pub era: Era,
    /// Bearer tokens, dealt out to the clients round-robin; none: no `Authorization`.
    pub tokens: Vec<String>,
    /// The workload every client runs.
    pub workload: Workload,
    /// Clients, each with one connection and one session.
    pub connections: usize,
    /// How long requests are counted, after the warm-up.
    pub duration_ms: u64,
    /// How long requests run uncounted first.
    pub warmup_ms: u64,
    /// Open loop at this many steps a second over all clients; `None`: closed loop.
    pub rate_per_s: Option<u64>,
    /// Fixes every draw.
    pub seed: u64,
    /// The tool the tasks run and its arguments for a short task (`create-poll-result`,
    /// `poll-heavy`).
    pub tool: String,
    /// See `tool`.
    pub short_arguments: Value,
    /// The arguments of the long task `cancel-heavy` cancels.
    pub long_arguments: Value,
    /// A request not answered within this is an error (and ends its client's step).
    pub request_timeout_ms: u64,
}

impl Default for HttpBenchConfig {
    fn default() -> HttpBenchConfig {
        HttpBenchConfig {
            url: "http://127.0.0.1:8931/mcp".into(),
            era: Era::Core2025,
            tokens: Vec::new(),
            workload: Workload::CreatePollResult,
            connections: 16,
            duration_ms: 10_000,
            warmup_ms: 2_000,
            rate_per_s: None,
            seed: 1,
            tool: "export".into(),
            short_arguments: json!({ "name": "bench", "delay_ms": 0 }),
            long_arguments: json!({ "name": "bench", "delay_ms": 600_000 }),
            request_timeout_ms: 10_000,
        }
    }
}

/// One method's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct MethodFigures {
    /// The JSON-RPC method.
    pub method: String,
    /// Requests counted (after the warm-up).
    pub count: u64,
    /// Of those, answered with a JSON-RPC error, an HTTP error or not at all.
    pub errors: u64,
    /// Counted requests per second.
    pub per_s: f64,
    /// Latency percentiles, in microseconds.
    pub p50_us: u64,
    /// See `p50_us`.
    pub p99_us: u64,
    /// See `p50_us`.
    pub p999_us: u64,
}

/// A run's report.
#[derive(Clone, Debug, PartialEq)]
pub struct HttpBenchReport {
    /// The workload run.
    pub workload: Workload,
    /// The era spoken.
    pub era: Era,
    /// Clients.
    pub connections: usize,
    /// The open-loop rate, if any.
    pub rate_per_s: Option<u64>,
    /// How long requests were counted, in seconds.
    pub measured_s: f64,
    /// Every method seen, by name.
    pub methods: Vec<MethodFigures>,
    /// Counted requests per second, all methods.
    pub requests_per_s: f64,
    /// The generator's own CPU over the counted window, in cores (`None` off Linux).
    pub generator_cores: Option<f64>,
    /// The first error message seen, if any (the rest are counted).
    pub first_error: Option<String>,
}

/// Checks `config`, naming the first bad field.
pub fn check(config: &HttpBenchConfig) -> Result<HttpUrl, String> {
    if config.connections == 0 || config.connections > CONNECTIONS_MAX {
        return Err(format!(
            "--connections {}: expected 1 to {CONNECTIONS_MAX}",
            config.connections
        ));
    }
    if config.duration_ms == 0 {
        return Err("--seconds: must be positive".into());
    }
    if config.rate_per_s == Some(0) {
        return Err("--rate: must be positive".into());
    }
    if config.request_timeout_ms == 0 {
        return Err("--request-timeout: must be positive".into());
    }
    HttpUrl::parse(&config.url)
}

/// What the clients share: the clock's origin, the windows, the open-loop ticket counter
/// and the figures.
struct Shared {
    config: HttpBenchConfig,
    url: HttpUrl,
    started: Instant,
    counted_from: Duration,
    ends_at: Duration,
    tickets: AtomicU64,
    figures: std::sync::Mutex<Figures>,
}

#[derive(Default)]
struct Figures {
    by_method: BTreeMap<String, Samples>,
    first_error: Option<String>,
}

#[derive(Default)]
struct Samples {
    count: u64,
    errors: u64,
    latencies_us: Vec<u32>,
}

impl Shared {
    fn now(&self) -> Duration {
        self.started.elapsed()
    }

    fn over(&self) -> bool {
        self.now() >= self.ends_at
    }

    /// Records one request that started at `sent` (since `started`) and took `took`.
    fn record(&self, method: &str, sent: Duration, took: Duration, error: Option<String>) {
        if sent < self.counted_from || sent >= self.ends_at {
            return;
        }
        let mut figures = self.figures.lock().unwrap_or_else(|p| p.into_inner());
        let samples = figures.by_method.entry(method.to_owned()).or_default();
        samples.count += 1;
        if samples.latencies_us.len() < SAMPLES_PER_METHOD_MAX {
            samples
                .latencies_us
                .push(u32::try_from(took.as_micros()).unwrap_or(u32::MAX));
        }
        if let Some(error) = error {
            samples.errors += 1;
            figures.first_error.get_or_insert(error);
        }
    }
}

/// Runs the load and reports what was counted.
pub async fn run(config: HttpBenchConfig) -> Result<HttpBenchReport, String> {
    let url = check(&config)?;
    let cpu_before = cpu_s(std::process::id());
    let shared = Arc::new(Shared {
        counted_from: Duration::from_millis(config.warmup_ms),
        ends_at: Duration::from_millis(config.warmup_ms + config.duration_ms),
        url,
        started: Instant::now(),
        tickets: AtomicU64::new(0),
        figures: std::sync::Mutex::new(Figures::default()),
        config,
    });
    let mut clients = tokio::task::JoinSet::new();
    for index in 0..shared.config.connections {
        clients.spawn(client(shared.clone(), index));
    }
    let mut setup_error = None;
    while let Some(joined) = clients.join_next().await {
        match joined {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                setup_error.get_or_insert(error);
            }
            Err(error) => {
                setup_error.get_or_insert(format!("a client panicked: {error}"));
            }
        }
    }
    if let Some(error) = setup_error {
        return Err(error);
    }
    let cpu_cores = match (cpu_before, cpu_s(std::process::id())) {
        (Some(before), Some(after)) => Some((after - before) / shared.now().as_secs_f64()),
        _ => None,
    };
    // Positive: `check` refused a zero duration.
    let measured_s = shared.config.duration_ms as f64 / 1_000.0;
    let mut figures = shared.figures.lock().unwrap_or_else(|p| p.into_inner());
    let methods: Vec<MethodFigures> = figures
        .by_method
        .iter_mut()
        .map(|(method, samples)| {
            samples.latencies_us.sort_unstable();
            MethodFigures {
                method: method.clone(),
                count: samples.count,
                errors: samples.errors,
                per_s: samples.count as f64 / measured_s,
                p50_us: percentile(&samples.latencies_us, 0.5),
                p99_us: percentile(&samples.latencies_us, 0.99),
                p999_us: percentile(&samples.latencies_us, 0.999),
            }
        })
        .collect();
    let total: u64 = methods.iter().map(|method| method.count).sum();
    Ok(HttpBenchReport {
        workload: shared.config.workload,
        era: shared.config.era,
        connections: shared.config.connections,
        rate_per_s: shared.config.rate_per_s,
        measured_s,
        requests_per_s: total as f64 / measured_s,
        methods,
        generator_cores: cpu_cores,
        first_error: figures.first_error.take(),
    })
}

fn percentile(sorted_us: &[u32], p: f64) -> u64 {
    if sorted_us.is_empty() {
        return 0;
    }
    let at = ((sorted_us.len() as f64 * p).ceil() as usize).clamp(1, sorted_us.len()) - 1;
    u64::from(sorted_us[at])
}

/// The fields of `/proc/PID/stat` after the command name (Linux), from `state` on.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.get(stat.rfind(')')? + 2..)?;
    Some(after.split_whitespace().map(str::to_owned).collect())
}

/// A process's CPU time so far (user + system), in seconds, and its parent (Linux
/// `/proc/PID/stat`, 100 ticks a second as the kernel reports them to user space).
fn cpu_and_parent(pid: u32) -> Option<(f64, u32)> {
    let fields = stat_fields(pid)?;
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some((ticks as f64 / 100.0, fields.get(1)?.parse().ok()?))
}

/// A process's CPU time so far (user + system), in seconds.
pub fn cpu_s(pid: u32) -> Option<f64> {
    cpu_and_parent(pid).map(|(cpu_s, _)| cpu_s)
}

/// The CPU time so far of `roots` and every live process descending from them, in seconds
/// (`None` if no root is alive): a server's own and its database's (a PostgreSQL
/// postmaster's backends), say. A descendant that exited is not counted (its time went to
/// a parent's `cutime`, which is not read: the parent may not have waited for it yet).
pub fn tree_cpu_s(roots: &[u32]) -> Option<f64> {
    if roots.is_empty() {
        // Nothing to find: spare the read of every process's stat.
        return None;
    }
    // One read of each process's stat: its CPU and its parent.
    let mut processes = BTreeMap::new();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some(process) = cpu_and_parent(pid) {
            processes.insert(pid, process);
        }
    }
    let mut total_s = 0.0;
    let mut seen_root = false;
    for (&pid, &(cpu_s, _)) in &processes {
        // Walk up at most 64 generations (a process tree deeper than that is not a server).
        let mut at = pid;
        for _ in 0..64 {
            if roots.contains(&at) {
                seen_root |= roots.contains(&pid);
                total_s += cpu_s;
                break;
            }
            match processes.get(&at) {
                Some(&(_, parent)) if parent != 0 && parent != at => at = parent,
                _ => break,
            }
        }
    }
    seen_root.then_some(total_s)
}

/// A small deterministic generator (splitmix64): the seed fixes every draw.
struct Draws(u64);

impl Draws {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// One keep-alive connection and session.
struct Connection {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    token: Option<String>,
    session: Option<String>,
    next_id: u64,
}

impl Connection {
    async fn open(shared: &Shared, token: Option<String>) -> Result<Connection, String> {
        let authority = &shared.url.authority;
        let stream = tokio::net::TcpStream::connect(authority)
            .await
            .map_err(|error| format!("connecting to {authority}: {error}"))?;
        let _ = stream.set_nodelay(true);
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|error| format!("HTTP handshake with {authority}: {error}"))?;
        tokio::spawn(connection);
        let mut connection = Connection {
            sender,
            token,
            session: None,
            next_id: 0,
        };
        if shared.config.era == Era::Extension2026 {
            // No handshake: every request carries its own envelope.
            return Ok(connection);
        }
        let initialized = connection
            .call(
                shared,
                "initialize",
                json!({
                    "protocolVersion": VERSION_2025,
                    "capabilities": {},
                    "clientInfo": { "name": "tasklatch-bench", "version": env!("CARGO_PKG_VERSION") },
                }),
            )
            .await?;
        if initialized.get("result").is_none() {
            return Err(format!("initialize was refused: {initialized}"));
        }
        connection
            .send(
                shared,
                json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
            )
            .await?;
        Ok(connection)
    }

    /// Sends one message; the parsed body (`Null` for an empty one) and the HTTP status.
    async fn send(&mut self, shared: &Shared, message: Value) -> Result<(u16, Value), String> {
        let mut request = Request::post(shared.url.path.as_str())
            .header("host", shared.url.authority.as_str())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session.as_str());
        }
        if shared.config.era == Era::Extension2026 {
            // The 2026-07-28 routing headers mirror the body, so a server can route unread.
            let method = message["method"].as_str().unwrap_or("");
            request = request
                .header("mcp-protocol-version", shared.config.era.as_str())
                .header("mcp-method", method);
            let name = match method {
                "tools/call" => message["params"]["name"].as_str(),
                _ => message["params"]["taskId"].as_str(),
            };
            if let Some(name) = name {
                request = request.header("mcp-name", name);
            }
        }
        let request = request
            .body(Full::new(Bytes::from(message.to_string())))
            .map_err(|error| format!("building a request: {error}"))?;
        let timeout = Duration::from_millis(shared.config.request_timeout_ms);
        let exchange = async {
            self.sender
                .ready()
                .await
                .map_err(|error| format!("the connection closed: {error}"))?;
            let response = self
                .sender
                .send_request(request)
                .await
                .map_err(|error| format!("HTTP request: {error}"))?;
            let status = response.status().as_u16();
            let session = response
                .headers()
                .get("mcp-session-id")
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned);
            let event_stream = response
                .headers()
                .get("content-type")
                .and_then(|value| value.to_str().ok())
                .is_some_and(|value| value.starts_with("text/event-stream"));
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|error| format!("reading an answer: {error}"))?
                .to_bytes();
            Ok::<_, String>((status, session, event_stream, body))
        };
        let (status, session, event_stream, body) = tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| format!("no answer within {timeout:?}"))??;
        if session.is_some() {
            self.session = session;
        }
        let value = if body.is_empty() {
            Value::Null
        } else if event_stream {
            // A server may answer as a stream (both kinds are accepted, as the transport
            // asks a client to): the answer is the last `data:` event that is a response.
            last_response_event(&body).ok_or_else(|| {
                format!(
                    "HTTP {status}: an event stream with no response in it: {}",
                    String::from_utf8_lossy(&body[..body.len().min(200)])
                )
            })?
        } else {
            serde_json::from_slice(&body).map_err(|error| {
                format!(
                    "HTTP {status}: not JSON ({error}): {}",
                    String::from_utf8_lossy(&body[..body.len().min(200)])
                )
            })?
        };
        Ok((status, value))
    }

    /// A request; its answer, or an error naming what went wrong.
    async fn call(
        &mut self,
        shared: &Shared,
        method: &str,
        params: Value,
    ) -> Result<Value, String> {
        self.next_id += 1;
        let params = enveloped(shared.config.era, params);
        let message =
            json!({ "jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params });
        let (status, answer) = self.send(shared, message).await?;
        if status != 200 {
            return Err(format!("{method}: HTTP {status}: {answer}"));
        }
        Ok(answer)
    }

    /// A timed task-creating `tools/call`, recorded; the new task's id.
    async fn create_task(
        &mut self,
        shared: &Shared,
        arguments: &Value,
        scheduled: Option<Duration>,
    ) -> Option<String> {
        let params = task_call(&shared.config, arguments);
        let created = self.timed(shared, "tools/call", params, scheduled).await;
        created.as_ref().and_then(task_id_of)
    }

    /// A timed request, recorded; its `result` (`None` on any error).
    async fn timed(
        &mut self,
        shared: &Shared,
        method: &str,
        params: Value,
        scheduled: Option<Duration>,
    ) -> Option<Value> {
        let sent = scheduled.unwrap_or_else(|| shared.now());
        let answered = self.call(shared, method, params).await;
        let took = shared.now().saturating_sub(sent);
        let (result, error) = match answered {
            Ok(answer) => match answer.get("result") {
                Some(result) => (Some(result.clone()), None),
                None => (None, Some(format!("{method}: {answer}"))),
            },
            Err(error) => (None, Some(error)),
        };
        shared.record(method, sent, took, error);
        result
    }
}

/// The last `data:` line of an SSE body that parses as a JSON-RPC response.
fn last_response_event(body: &[u8]) -> Option<Value> {
    String::from_utf8_lossy(body)
        .lines()
        .rev()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message.get("result").is_some() || message.get("error").is_some())
}

/// A task-creating `tools/call`'s params: 2025-11-25 asks with `task`; 2026-07-28 declares
/// the extension in the envelope ([`enveloped`]) and lets the server decide.
fn task_call(config: &HttpBenchConfig, arguments: &Value) -> Value {
    match config.era {
        Era::Core2025 => {
            json!({ "name": config.tool, "arguments": arguments, "task": { "ttl": 600_000 } })
        }
        Era::Extension2026 => json!({ "name": config.tool, "arguments": arguments }),
    }
}

/// 2026-07-28: `params` with the envelope every request carries (protocol version, and the
/// tasks extension declared). 2025-11-25: `params` as they are.
fn enveloped(era: Era, params: Value) -> Value {
    let Era::Extension2026 = era else {
        return params;
    };
    let mut params = match params {
        Value::Object(object) => object,
        _ => serde_json::Map::new(),
    };
    params.insert(
        "_meta".into(),
        json!({
            META_PROTOCOL_VERSION: era.as_str(),
            META_CLIENT_CAPABILITIES: { "extensions": { TASKS_EXTENSION: {} } },
        }),
    );
    Value::Object(params)
}

/// The new task's id: `task.taskId` (2025-11-25) or a flat `taskId` (2026-07-28).
fn task_id_of(created: &Value) -> Option<String> {
    created
        .pointer("/task/taskId")
        .or_else(|| created.get("taskId"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn terminal(task: &Value) -> bool {
    matches!(
        task.get("status").and_then(Value::as_str),
        Some("completed" | "failed" | "cancelled")
    )
}

/// Tasks made for poll-heavy to poll, before the run counts anything.
async fn polled_tasks(shared: &Shared, connection: &mut Connection) -> Result<Vec<String>, String> {
    let mut polled = Vec::new();
    for _ in 0..POLLED_TASKS {
        let created = connection
            .call(
                shared,
                "tools/call",
                task_call(&shared.config, &shared.config.short_arguments),
            )
            .await?;
        let task_id = created
            .get("result")
            .and_then(task_id_of)
            .ok_or_else(|| format!("tools/call did not create a task: {created}"))?;
        polled.push(task_id);
    }
    Ok(polled)
}

/// Open loop: waits for the client's next ticket, and says when the step should have
/// started if it is late (`None` inside: time it from when it is sent); `None` when the
/// run ends first. Closed loop: at once.
async fn next_step_at(shared: &Shared) -> Option<Option<Duration>> {
    let Some(rate_per_s) = shared.config.rate_per_s else {
        return Some(None);
    };
    let ticket = shared.tickets.fetch_add(1, Ordering::Relaxed);
    let at = Duration::from_secs_f64(ticket as f64 / rate_per_s as f64);
    if at >= shared.ends_at {
        return None;
    }
    match at.checked_sub(shared.now()) {
        // Early: wait, and time the step from when it is sent (the timer's own lateness is
        // the generator's, not the server's).
        Some(wait) => {
            tokio::time::sleep(wait).await;
            Some(None)
        }
        // Late, because this client's last step took too long: time it from when it
        // should have started.
        None => Some(Some(at)),
    }
}

/// One client: its connection, then steps until the run ends.
async fn client(shared: Arc<Shared>, index: usize) -> Result<(), String> {
    let tokens = &shared.config.tokens;
    let token = (!tokens.is_empty()).then(|| tokens[index % tokens.len()].clone());
    let mut connection = Connection::open(&shared, token).await?;
    let mut draws = Draws(shared.config.seed ^ (index as u64).wrapping_mul(0xa076_1d64_78bd_642f));
    // poll-heavy polls tasks of its own, made before the run counts anything.
    let polled = if shared.config.workload == Workload::PollHeavy {
        polled_tasks(&shared, &mut connection).await?
    } else {
        Vec::new()
    };
    while !shared.over() {
        let Some(scheduled) = next_step_at(&shared).await else {
            break;
        };
        match shared.config.workload {
            Workload::CreatePollResult => {
                let created = connection
                    .create_task(&shared, &shared.config.short_arguments, scheduled)
                    .await;
                let Some(task_id) = created else {
                    continue;
                };
                for _ in 0..POLLS_PER_TASK_MAX {
                    let task = connection
                        .timed(&shared, "tasks/get", json!({ "taskId": task_id }), None)
                        .await;
                    if task.as_ref().is_none_or(terminal) || shared.over() {
                        break;
                    }
                }
                if shared.config.era == Era::Core2025 {
                    connection
                        .timed(&shared, "tasks/result", json!({ "taskId": task_id }), None)
                        .await;
                }
            }
            Workload::PollHeavy => {
                let task_id = &polled[draws.below(polled.len() as u64) as usize];
                connection
                    .timed(
                        &shared,
                        "tasks/get",
                        json!({ "taskId": task_id }),
                        scheduled,
                    )
                    .await;
            }
            Workload::CancelHeavy => {
                let created = connection
                    .create_task(&shared, &shared.config.long_arguments, scheduled)
                    .await;
                let Some(task_id) = created else {
                    continue;
                };
                for _ in 0..draws.below(3) {
                    connection
                        .timed(&shared, "tasks/get", json!({ "taskId": task_id }), None)
                        .await;
                }
                connection
                    .timed(&shared, "tasks/cancel", json!({ "taskId": task_id }), None)
                    .await;
            }
            Workload::Create => {
                connection
                    .create_task(&shared, &shared.config.short_arguments, scheduled)
                    .await;
            }
        }
    }
    Ok(())
}

/// The report as a table, one row per method, the generator's CPU beside.
pub fn render(report: &HttpBenchReport) -> String {
    let mut out = format!(
        "{} ({}) over {} connections, {}, {:.1} s counted: {:.0} requests/s{}\n",
        report.workload.as_str(),
        report.era.as_str(),
        report.connections,
        report
            .rate_per_s
            .map_or("closed loop".to_owned(), |rate| format!(
                "open loop at {rate} steps/s"
            )),
        report.measured_s,
        report.requests_per_s,
        report
            .generator_cores
            .map_or(String::new(), |cores| format!(
                " (the generator used {cores:.2} cores)"
            )),
    );
    out.push_str("method        requests      /s   errors   p50 ms   p99 ms  p99.9 ms\n");
    for method in &report.methods {
        out.push_str(&format!(
            "{:<12} {:>9} {:>7.0} {:>8} {:>8.2} {:>8.2} {:>9.2}\n",
            method.method,
            method.count,
            method.per_s,
            method.errors,
            method.p50_us as f64 / 1_000.0,
            method.p99_us as f64 / 1_000.0,
            method.p999_us as f64 / 1_000.0,
        ));
    }
    if let Some(error) = &report.first_error {
        out.push_str(&format!("first error: {error}\n"));
    }
    out
}
