//! How the probe reaches a server: a spawned process over stdio (newline-delimited
//! JSON-RPC, one requestor) or Streamable HTTP (one POST per message, JSON or SSE answers,
//! a bearer token per identity). Every message sent and received is kept as evidence.
//!
//! Plain HTTP only: TLS would pull a TLS stack into every build for a tool that mostly
//! runs next to the server it checks. Put a TLS-terminating proxy in front otherwise.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::Stdio as Piped;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::oneshot;

/// Longest line or SSE event the probe reads from a server, in bytes: a server that never
/// ends a line cannot make the probe buffer without bound.
pub const MESSAGE_BYTES_MAX: usize = 16 * 1024 * 1024;
/// Lines of a server's stderr kept for the report (the last ones).
const STDERR_LINES_MAX: usize = 200;

/// One message the probe sent and what came back for it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Exchange {
    /// Who sent it: `stdio` or the token's name.
    pub identity: String,
    /// The text sent, exactly.
    pub request: String,
    /// The HTTP status of the answer (HTTP only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// The JSON-RPC response to the request, if one came.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response: Option<Value>,
    /// Other messages that came with it (notifications, the server's own requests).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<Value>,
    /// Why no response came: a transport failure or a timeout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// When it was sent, in ms since the probe started.
    pub invoked_ms: u64,
    /// When the answer (or the failure) came, in ms since the probe started.
    pub completed_ms: u64,
}

impl Exchange {
    /// `text` sent by `identity` at `invoked_ms`, nothing back yet.
    pub fn begin(identity: &str, text: &str, invoked_ms: u64) -> Exchange {
        Exchange {
            identity: identity.to_owned(),
            request: text.to_owned(),
            http_status: None,
            response: None,
            messages: Vec::new(),
            failure: None,
            invoked_ms,
            completed_ms: invoked_ms,
        }
    }

    /// The response's `result`, if it was a success.
    pub fn result(&self) -> Option<&Value> {
        self.response.as_ref()?.get("result")
    }

    /// The response's `error`, if it was one.
    pub fn error(&self) -> Option<&Value> {
        self.response.as_ref()?.get("error")
    }

    /// The error's code, if the response was an error.
    pub fn error_code(&self) -> Option<i64> {
        self.error()?.get("code")?.as_i64()
    }

    /// One line for a report: the method, and what came back.
    pub fn summary(&self) -> String {
        let method = serde_json::from_str::<Value>(&self.request)
            .ok()
            .and_then(|request| request["method"].as_str().map(str::to_owned))
            .unwrap_or_else(|| "(raw)".to_owned());
        let answer = match (&self.response, &self.failure) {
            (Some(response), _) => compact(response, 300),
            (None, Some(failure)) => one_line(failure, 300),
            (None, None) => "no answer".to_owned(),
        };
        format!("{} {method} -> {answer}", self.identity)
    }
}

/// `text` as one line of at most about `chars_max` characters: markup tags dropped (an
/// HTML error page reads as its words), runs of whitespace one space.
pub fn one_line(text: &str, chars_max: usize) -> String {
    let mut plain = String::with_capacity(text.len().min(4 * chars_max));
    let mut in_tag = false;
    let markup = text.trim_start().starts_with('<');
    for c in text.chars() {
        match c {
            '<' if markup => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                plain.push(' ');
            }
            _ if in_tag => {}
            c => plain.push(c),
        }
    }
    let words: Vec<&str> = plain.split_whitespace().collect();
    let line = words.join(" ");
    if line.chars().count() <= chars_max {
        return line;
    }
    let cut: String = line.chars().take(chars_max).collect();
    format!("{cut}…")
}

/// `value` as one line of JSON, cut to about `chars_max` characters.
pub fn compact(value: &Value, chars_max: usize) -> String {
    let text = value.to_string();
    if text.chars().count() <= chars_max {
        return text;
    }
    let cut: String = text.chars().take(chars_max).collect();
    format!("{cut}…")
}

/// The probe's clock: ms since it started. Real time: black-box runs are not
/// deterministic, and the report says so.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    start: Instant,
}

impl Clock {
    /// A clock starting now.
    pub fn start() -> Clock {
        Clock {
            start: Instant::now(),
        }
    }

    /// ms since the start.
    pub fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }
}

/// Why a server could not be reached at all (exit 2).
#[derive(Debug)]
pub struct Unreachable(pub String);

impl std::fmt::Display for Unreachable {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        out.write_str(&self.0)
    }
}

/// A connection to the server for one identity: sends a message and waits for its
/// response (matched by id), up to a timeout.
pub enum Connection {
    /// A spawned server process over stdio (replaced when the probe restarts it).
    Stdio(StdioSlot),
    /// Streamable HTTP.
    Http(HttpPeer),
}

/// The stdio server the probe spawned, and how to spawn it again after a kill.
pub struct StdioSlot {
    program: String,
    args: Vec<String>,
    clock: Clock,
    current: Mutex<Arc<StdioServer>>,
    deaths: Mutex<Vec<Death>>,
    /// Set while the probe itself kills and restarts the process: not a death.
    restarting: std::sync::atomic::AtomicBool,
}

/// A server process that ended without the probe killing it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Death {
    /// When the probe noticed, ms since it started.
    pub noticed_ms: u64,
    /// Why the connection ended.
    pub reason: String,
    /// The last lines the process wrote to stderr.
    pub stderr_tail: Vec<String>,
}

impl StdioSlot {
    /// Spawns `program args…`.
    pub fn spawn(program: &str, args: &[String], clock: Clock) -> Result<StdioSlot, Unreachable> {
        Ok(StdioSlot {
            program: program.to_owned(),
            args: args.to_vec(),
            clock,
            current: Mutex::new(StdioServer::spawn(program, args, clock)?),
            deaths: Mutex::new(Vec::new()),
            restarting: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// If the process ended on its own, records its death and spawns it again; `true` when
    /// it did (the caller then opens the era again).
    pub fn revive_if_dead(&self) -> Result<bool, Unreachable> {
        if self.restarting.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(false);
        }
        let current = self.current();
        let Some(reason) = current.closed() else {
            return Ok(false);
        };
        lock(&self.deaths).push(Death {
            noticed_ms: self.clock.now_ms(),
            reason,
            stderr_tail: current.stderr_tail(),
        });
        *lock(&self.current) = StdioServer::spawn(&self.program, &self.args, self.clock)?;
        Ok(true)
    }

    /// The deaths recorded since the last call.
    pub fn take_deaths(&self) -> Vec<Death> {
        std::mem::take(&mut *lock(&self.deaths))
    }

    /// The process running now.
    pub fn current(&self) -> Arc<StdioServer> {
        lock(&self.current).clone()
    }

    /// Kills the process (SIGKILL) and spawns it again; messages go to the new one.
    pub async fn restart(&self) -> Result<(), Unreachable> {
        use std::sync::atomic::Ordering::SeqCst;
        self.restarting.store(true, SeqCst);
        self.current().kill().await;
        let fresh = StdioServer::spawn(&self.program, &self.args, self.clock);
        if let Ok(fresh) = &fresh {
            *lock(&self.current) = fresh.clone();
        }
        self.restarting.store(false, SeqCst);
        fresh.map(|_| ())
    }
}

/// `command` run by `sh -c` in the shell's place (so a kill reaches the server, not a
/// shell), whether or not it already begins with `exec`.
fn exec_line(command: &str) -> String {
    let command = command.trim_start();
    let already = command
        .strip_prefix("exec")
        .is_some_and(|rest| rest.starts_with(char::is_whitespace));
    if already {
        command.to_owned()
    } else {
        format!("exec {command}")
    }
}

/// An HTTP server the probe owns (`--start "CMD"`): started through `sh -c`, ready once its
/// address accepts connections, killed (SIGKILL) and started again on demand.
pub struct OwnedHttp {
    command: String,
    authority: String,
    ready_timeout: Duration,
    child: tokio::sync::Mutex<Option<Child>>,
}

impl OwnedHttp {
    /// Starts `command` and waits until `authority` (HOST:PORT) accepts connections.
    pub async fn start(
        command: &str,
        authority: &str,
        ready_timeout: Duration,
    ) -> Result<OwnedHttp, Unreachable> {
        let owned = OwnedHttp {
            command: command.to_owned(),
            authority: authority.to_owned(),
            ready_timeout,
            child: tokio::sync::Mutex::new(None),
        };
        owned.launch().await?;
        Ok(owned)
    }

    async fn launch(&self) -> Result<(), Unreachable> {
        let mut child = Command::new("sh")
            .args(["-c", &exec_line(&self.command)])
            .stdin(Piped::null())
            .stdout(Piped::null())
            .stderr(Piped::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| Unreachable(format!("--start {:?}: {error}", self.command)))?;
        // Kept to say why a server that will not start did not.
        let stderr = Arc::new(Mutex::new(Vec::new()));
        if let Some(pipe) = child.stderr.take() {
            tokio::spawn(keep_stderr(pipe, stderr.clone()));
        }
        *self.child.lock().await = Some(child);
        let started = Instant::now();
        loop {
            if tokio::net::TcpStream::connect(&self.authority)
                .await
                .is_ok()
            {
                return Ok(());
            }
            if let Some(child) = self.child.lock().await.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                // Let the reader take what the process wrote before it ended.
                tokio::time::sleep(Duration::from_millis(50)).await;
                let tail = lock(&stderr).join("\n  ");
                return Err(Unreachable(format!(
                    "--start {:?} exited ({status}) before {} accepted connections{}",
                    self.command,
                    self.authority,
                    if tail.is_empty() {
                        String::new()
                    } else {
                        format!("; its stderr ends:\n  {tail}")
                    }
                )));
            }
            if started.elapsed() > self.ready_timeout {
                return Err(Unreachable(format!(
                    "--start {:?}: {} did not accept connections within {:?}",
                    self.command, self.authority, self.ready_timeout
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Kills the server (SIGKILL) and waits for it.
    pub async fn kill(&self) {
        if let Some(mut child) = self.child.lock().await.take() {
            let _ = child.kill().await;
        }
    }

    /// Kills it and starts it again, waiting until it is ready.
    pub async fn restart(&self) -> Result<(), Unreachable> {
        self.kill().await;
        self.launch().await
    }
}

/// A server the probe can kill and restart: one it spawned over stdio, or one it started
/// over HTTP.
#[derive(Clone)]
pub enum Owned {
    /// The stdio connection whose process is replaced.
    Stdio(Arc<Connection>),
    /// The HTTP server started with `--start`.
    Http(Arc<OwnedHttp>),
}

impl Owned {
    /// SIGKILLs the server and starts it again; `Ok` once it is ready for requests.
    pub async fn restart(&self) -> Result<(), Unreachable> {
        match self {
            Owned::Stdio(connection) => match connection.as_ref() {
                Connection::Stdio(slot) => slot.restart().await,
                Connection::Http(_) => Ok(()),
            },
            Owned::Http(server) => server.restart().await,
        }
    }

    /// Stops it for good (the end of the run).
    pub async fn stop(&self) {
        match self {
            Owned::Stdio(connection) => {
                if let Connection::Stdio(slot) = connection.as_ref() {
                    slot.current().kill().await;
                }
            }
            Owned::Http(server) => server.kill().await,
        }
    }
}

impl Connection {
    /// Sends one JSON-RPC message (`message` must carry `id` unless `expect_answer` is
    /// false) and waits up to `timeout` for the response with the same id.
    pub async fn send(
        &self,
        message: &Value,
        headers: &[(&str, String)],
        expect_answer: bool,
        timeout: Duration,
    ) -> Exchange {
        let text = message.to_string();
        match self {
            Connection::Stdio(slot) => {
                slot.current()
                    .send(&text, message.get("id").cloned(), expect_answer, timeout)
                    .await
            }
            Connection::Http(peer) => peer.post(&text, headers, expect_answer, timeout).await,
        }
    }

    /// Sends `text` as it is (malformed JSON, say) and waits for a response with a null id.
    pub async fn send_raw(&self, text: &str, timeout: Duration) -> Exchange {
        match self {
            Connection::Stdio(slot) => {
                slot.current()
                    .send(text, Some(Value::Null), true, timeout)
                    .await
            }
            Connection::Http(peer) => peer.post(text, &[], true, timeout).await,
        }
    }

    /// Forgets what a restarted server no longer knows (the HTTP session).
    pub fn reset(&self) {
        if let Connection::Http(peer) = self {
            peer.forget_session();
        }
    }

    /// The identity messages go out as.
    pub fn identity(&self) -> &str {
        match self {
            Connection::Stdio(_) => "stdio",
            Connection::Http(peer) => &peer.identity,
        }
    }
}

// ---------------------------------------------------------------------------------------
// stdio

type Waiter = oneshot::Sender<(Value, Vec<Value>)>;

#[derive(Default)]
struct Routing {
    /// Responses awaited, by the request id's JSON text.
    waiting: BTreeMap<String, Waiter>,
    /// Messages that answered nothing awaited (notifications, server requests), kept until
    /// the next response is handed out, which carries them as evidence.
    loose: Vec<Value>,
    /// Set when stdout ended: the reason every later send fails.
    closed: Option<String>,
}

/// A server process the probe spawned, speaking newline-delimited JSON-RPC on its stdin
/// and stdout. Its stderr is kept (the last lines) for the report.
pub struct StdioServer {
    clock: Clock,
    stdin: tokio::sync::Mutex<ChildStdin>,
    routing: Arc<Mutex<Routing>>,
    stderr: Arc<Mutex<Vec<String>>>,
    child: Mutex<Option<Child>>,
}

impl StdioServer {
    /// Spawns `program args…` with piped stdin, stdout and stderr.
    pub fn spawn(program: &str, args: &[String], clock: Clock) -> Result<Arc<Self>, Unreachable> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Piped::piped())
            .stdout(Piped::piped())
            .stderr(Piped::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| Unreachable(format!("cannot start `{program}`: {error}")))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(Unreachable(format!("`{program}`: no pipes")));
        };
        let routing = Arc::new(Mutex::new(Routing::default()));
        let kept_stderr = Arc::new(Mutex::new(Vec::new()));
        tokio::spawn(read_stdout(stdout, routing.clone()));
        tokio::spawn(keep_stderr(stderr, kept_stderr.clone()));
        Ok(Arc::new(StdioServer {
            clock,
            stdin: tokio::sync::Mutex::new(stdin),
            routing,
            stderr: kept_stderr,
            child: Mutex::new(Some(child)),
        }))
    }

    async fn send(
        &self,
        text: &str,
        id: Option<Value>,
        expect_answer: bool,
        timeout: Duration,
    ) -> Exchange {
        let mut exchange = Exchange::begin("stdio", text, self.clock.now_ms());
        let answer = match (expect_answer, id) {
            (true, Some(id)) => {
                let (sender, receiver) = oneshot::channel();
                let mut routing = lock(&self.routing);
                if let Some(reason) = &routing.closed {
                    exchange.failure = Some(reason.clone());
                    return exchange;
                }
                routing.waiting.insert(id.to_string(), sender);
                Some((id.to_string(), receiver))
            }
            _ => None,
        };
        let written = {
            let mut stdin = self.stdin.lock().await;
            let mut line = text.replace('\n', " ");
            line.push('\n');
            match stdin.write_all(line.as_bytes()).await {
                Ok(()) => stdin.flush().await,
                Err(error) => Err(error),
            }
        };
        if let Err(error) = written {
            exchange.failure = Some(format!("writing to the server's stdin: {error}"));
        } else if let Some((key, receiver)) = answer {
            match tokio::time::timeout(timeout, receiver).await {
                Ok(Ok((response, messages))) => {
                    exchange.response = Some(response);
                    exchange.messages = messages;
                }
                Ok(Err(_)) => {
                    exchange.failure = Some(
                        lock(&self.routing)
                            .closed
                            .clone()
                            .unwrap_or_else(|| "the server's stdout closed".to_owned()),
                    )
                }
                Err(_) => {
                    lock(&self.routing).waiting.remove(&key);
                    exchange.failure = Some(format!("no response within {timeout:?}"));
                }
            }
        }
        exchange.completed_ms = self.clock.now_ms();
        exchange
    }

    /// Why its stdout ended, once it has.
    pub fn closed(&self) -> Option<String> {
        lock(&self.routing).closed.clone()
    }

    /// The last lines the server wrote to stderr.
    pub fn stderr_tail(&self) -> Vec<String> {
        lock(&self.stderr).clone()
    }

    /// Kills the process (SIGKILL) and waits for it.
    pub async fn kill(&self) {
        let child = lock(&self.child).take();
        if let Some(mut child) = child {
            let _ = child.kill().await;
        }
    }
}

async fn read_stdout(stdout: tokio::process::ChildStdout, routing: Arc<Mutex<Routing>>) {
    let mut lines = BufReader::new(stdout);
    let mut line = Vec::new();
    let reason = loop {
        line.clear();
        match (&mut lines)
            .take(MESSAGE_BYTES_MAX as u64)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) => break "the server's stdout closed (the process ended?)".to_owned(),
            Ok(_) if !line.ends_with(b"\n") && line.len() >= MESSAGE_BYTES_MAX => {
                break format!("the server wrote a line longer than {MESSAGE_BYTES_MAX} bytes");
            }
            Ok(_) => {}
            Err(error) => break format!("reading the server's stdout: {error}"),
        }
        let Ok(message) = serde_json::from_slice::<Value>(&line) else {
            // Not JSON on stdout is a finding for the shape checks, which see it as a
            // missing response; keep it as a loose message.
            let text = String::from_utf8_lossy(&line).trim_end().to_owned();
            if !text.is_empty() {
                lock(&routing)
                    .loose
                    .push(serde_json::json!({ "notJson": text }));
            }
            continue;
        };
        let is_response = message.get("method").is_none()
            && (message.get("result").is_some() || message.get("error").is_some());
        let mut routing = lock(&routing);
        if is_response {
            let key = message
                .get("id")
                .cloned()
                .unwrap_or(Value::Null)
                .to_string();
            if let Some(waiter) = routing.waiting.remove(&key) {
                let loose = std::mem::take(&mut routing.loose);
                let _ = waiter.send((message, loose));
                continue;
            }
        }
        routing.loose.push(message);
    };
    let mut routing = lock(&routing);
    routing.closed = Some(reason);
    routing.waiting.clear();
}

async fn keep_stderr(stderr: tokio::process::ChildStderr, kept: Arc<Mutex<Vec<String>>>) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let mut kept = lock(&kept);
        if kept.len() == STDERR_LINES_MAX {
            kept.remove(0);
        }
        kept.push(line);
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

// ---------------------------------------------------------------------------------------
// Streamable HTTP

/// Where an HTTP server listens: `http://HOST:PORT/PATH`.
#[derive(Clone, Debug)]
pub struct HttpUrl {
    /// `HOST:PORT`, what the TCP connection dials.
    pub authority: String,
    /// The path and query, `/mcp` say.
    pub path: String,
}

impl HttpUrl {
    /// Parses `url`; only `http://` (see the module docs).
    pub fn parse(url: &str) -> Result<HttpUrl, String> {
        let uri: hyper::Uri = url
            .parse()
            .map_err(|error| format!("--http {url:?}: not a URL: {error}"))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some("https") => {
                return Err(format!(
                    "--http {url:?}: https is not supported; probe the server over plain \
                     HTTP (or through a TLS-terminating proxy)"
                ));
            }
            _ => return Err(format!("--http {url:?}: must start with http://")),
        }
        let host = uri
            .host()
            .ok_or_else(|| format!("--http {url:?}: no host"))?;
        let port = uri.port_u16().unwrap_or(80);
        let path = uri
            .path_and_query()
            .map_or("/".to_owned(), |path| path.as_str().to_owned());
        Ok(HttpUrl {
            authority: format!("{host}:{port}"),
            path,
        })
    }
}

/// One identity's view of an HTTP server: its bearer token and, once initialized, its
/// session id.
pub struct HttpPeer {
    clock: Clock,
    url: HttpUrl,
    /// The token's name (for reports; never the token itself).
    pub identity: String,
    token: Option<String>,
    session: Mutex<Option<String>>,
}

impl HttpPeer {
    /// A peer sending as `identity` with `token` (none: no `Authorization` header).
    pub fn new(url: HttpUrl, identity: String, token: Option<String>, clock: Clock) -> Self {
        HttpPeer {
            clock,
            url,
            identity,
            token,
            session: Mutex::new(None),
        }
    }

    /// A new connection of the same identity, with no session yet.
    pub fn sibling(&self) -> HttpPeer {
        HttpPeer::new(
            self.url.clone(),
            self.identity.clone(),
            self.token.clone(),
            self.clock,
        )
    }

    /// The session id the server gave at `initialize`, if any.
    pub fn session(&self) -> Option<String> {
        lock(&self.session).clone()
    }

    /// The path requests go to (`/mcp`).
    pub(crate) fn url_path(&self) -> &str {
        self.url.path.as_str()
    }

    /// Forgets the session (after a server restart, say).
    pub fn forget_session(&self) {
        *lock(&self.session) = None;
    }

    async fn post(
        &self,
        text: &str,
        headers: &[(&str, String)],
        expect_answer: bool,
        timeout: Duration,
    ) -> Exchange {
        let mut exchange = Exchange::begin(&self.identity, text, self.clock.now_ms());
        let id = serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|message| message.get("id").cloned())
            .unwrap_or(Value::Null);
        let outcome =
            tokio::time::timeout(timeout, self.exchange(text, headers, &id, expect_answer)).await;
        match outcome {
            Ok(Ok(answer)) => {
                exchange.http_status = Some(answer.status);
                exchange.response = answer.response;
                exchange.messages = answer.messages;
                if exchange.response.is_none() && expect_answer {
                    exchange.failure = Some(format!(
                        "HTTP {}: no JSON-RPC response in the body{}",
                        answer.status,
                        if answer.body_excerpt.is_empty() {
                            String::new()
                        } else {
                            format!(": {}", answer.body_excerpt)
                        }
                    ));
                }
            }
            Ok(Err(error)) => exchange.failure = Some(error),
            Err(_) => exchange.failure = Some(format!("no response within {timeout:?}")),
        }
        exchange.completed_ms = self.clock.now_ms();
        exchange
    }

    async fn exchange(
        &self,
        text: &str,
        headers: &[(&str, String)],
        id: &Value,
        expect_answer: bool,
    ) -> Result<HttpAnswer, String> {
        let (mut sender, driver) = self.connect().await?;
        let request = self
            .request(Request::post(self.url.path.as_str()), headers)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(Full::new(Bytes::from(text.to_owned())))
            .map_err(|error| format!("building the request: {error}"))?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|error| format!("HTTP request to {}: {error}", self.url.authority))?;
        let status = response.status().as_u16();
        if let Some(session) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
        {
            *lock(&self.session) = Some(session.to_owned());
        }
        let streamed = response
            .headers()
            .get("content-type")
            .and_then(|value| value.to_str().ok())
            .is_some_and(|kind| kind.starts_with("text/event-stream"));
        let mut body = response.into_body();
        let mut answer = HttpAnswer {
            status,
            response: None,
            messages: Vec::new(),
            body_excerpt: String::new(),
        };
        let mut buffer: Vec<u8> = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|error| format!("reading the HTTP body: {error}"))?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            buffer.extend_from_slice(&data);
            if buffer.len() > MESSAGE_BYTES_MAX {
                return Err(format!("an answer longer than {MESSAGE_BYTES_MAX} bytes"));
            }
            if streamed {
                for message in crate::sse::take_sse_events(&mut buffer) {
                    sort_message(message, id, &mut answer);
                }
                if answer.response.is_some() || !expect_answer {
                    break;
                }
            }
        }
        if streamed {
            buffer.extend_from_slice(b"\n\n");
            for message in crate::sse::take_sse_events(&mut buffer) {
                sort_message(message, id, &mut answer);
            }
        } else if !buffer.is_empty() {
            match serde_json::from_slice::<Value>(&buffer) {
                Ok(message) => sort_message(message, id, &mut answer),
                Err(_) => {
                    answer.body_excerpt = one_line(&String::from_utf8_lossy(&buffer), 200);
                }
            }
        }
        driver.abort();
        Ok(answer)
    }
}

impl HttpPeer {
    /// A fresh HTTP/1 connection to the server, and the task that drives it.
    pub(crate) async fn connect(
        &self,
    ) -> Result<
        (
            hyper::client::conn::http1::SendRequest<Full<Bytes>>,
            tokio::task::JoinHandle<Result<(), hyper::Error>>,
        ),
        String,
    > {
        let stream = tokio::net::TcpStream::connect(&self.url.authority)
            .await
            .map_err(|error| format!("connecting to {}: {error}", self.url.authority))?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|error| format!("HTTP handshake with {}: {error}", self.url.authority))?;
        Ok((sender, tokio::spawn(connection)))
    }

    /// `request` with the host, this identity's token, its session and `headers`.
    pub(crate) fn request(
        &self,
        mut request: hyper::http::request::Builder,
        headers: &[(&str, String)],
    ) -> hyper::http::request::Builder {
        request = request.header("host", self.url.authority.as_str());
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        if let Some(session) = self.session() {
            request = request.header("mcp-session-id", session);
        }
        for (name, value) in headers {
            request = request.header(*name, value.as_str());
        }
        request
    }
}

struct HttpAnswer {
    status: u16,
    response: Option<Value>,
    messages: Vec<Value>,
    body_excerpt: String,
}

fn sort_message(message: Value, id: &Value, answer: &mut HttpAnswer) {
    let is_response = message.get("method").is_none()
        && (message.get("result").is_some() || message.get("error").is_some());
    // One POST carries one request, so a response with a null id (a server that could
    // not read the id) answers it too.
    let message_id = message.get("id").unwrap_or(&Value::Null);
    let matches = message_id == id || message_id.is_null();
    if is_response && matches && answer.response.is_none() {
        answer.response = Some(message);
    } else {
        answer.messages.push(message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_command_runs_in_the_shells_place_once() {
        assert_eq!(exec_line("srv --port 1"), "exec srv --port 1");
        assert_eq!(exec_line("exec srv --port 1"), "exec srv --port 1");
        assert_eq!(exec_line("  exec\tsrv"), "exec\tsrv");
        assert_eq!(exec_line("executor --x"), "exec executor --x");
    }

    #[test]
    fn an_error_page_reads_as_one_line_of_its_words() {
        let page = "<!DOCTYPE html>\n<html><head><title>500 Internal</title></head>\n\
                    <body>\n  <h1>Oops</h1>\n  <p>a b</p></body></html>";
        assert_eq!(one_line(page, 200), "500 Internal Oops a b");
        assert_eq!(one_line("x <y> z\n\n w", 200), "x <y> z w");
        assert_eq!(one_line("abcdef", 3), "abc…");
    }

    #[test]
    fn urls_name_what_is_wrong() {
        let url = HttpUrl::parse("http://127.0.0.1:8931/mcp").unwrap();
        assert_eq!(
            (url.authority.as_str(), url.path.as_str()),
            ("127.0.0.1:8931", "/mcp")
        );
        assert!(
            HttpUrl::parse("https://x/mcp")
                .unwrap_err()
                .contains("https")
        );
        assert!(HttpUrl::parse("ftp://x/").unwrap_err().contains("http://"));
        assert!(HttpUrl::parse("::").unwrap_err().contains("not a URL"));
    }
}
