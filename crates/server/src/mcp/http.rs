//! The Streamable HTTP transport (MCP 2025-11-25), on axum/hyper.
//!
//! One endpoint, `/mcp`:
//! - `POST` one JSON-RPC message. A request is answered with `application/json`, except a
//!   `tasks/result` from a client that accepts `text/event-stream`: that answer is an SSE
//!   stream that carries the session's notifications while the task works, the task's
//!   questions (`elicitation/create` requests) while it is `input_required`, and ends with
//!   the response. Notifications and responses get `202 Accepted`; a response answers a
//!   question asked on one of its session's streams (routed by `Mcp-Session-Id`). A
//!   `tasks/result` that accepts only JSON has no stream: its client cannot be asked.
//! - `GET` opens the session's notification stream (SSE): `notifications/tasks/status` and
//!   progress for its caller's tasks.
//! - `DELETE` ends the session.
//!
//! `initialize` creates a session (`Mcp-Session-Id`, 128 random bits); every later request
//! must carry it (`400` without, `404` for one that is unknown or ended). At most
//! [`HttpConfig::sessions_max`] are open; one more ends the least recently used. Every request
//! needs `Authorization: Bearer <token>`; tokens map to authorization keys in the tokens
//! file, and a session stays bound to the key that opened it (`401` without a known token,
//! `403` for another key's session). `Origin`, when sent, must be a loopback origin or one
//! of the allowed ones (`403`), against DNS rebinding. Bodies above the limit get `413`,
//! a content type other than JSON `415`; each with a JSON-RPC error body. An
//! `Idempotency-Key` header works like `_meta["dev.tasklatch/idempotency-key"]`.

use super::modern;
use super::server::{Server, Session};
use super::wire::{self, Incoming, RpcError, code};
use crate::contract::Negotiated;
use crate::sync::Mutex;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::Value;
use sha2::Digest as _;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// Default largest request body.
pub const BODY_BYTES_MAX: usize = 1024 * 1024;
/// Default sessions open at once; opening one more ends the least recently used (its client
/// is told `404` and opens a new one; tasks are bound to callers, not sessions, and survive).
pub const SESSIONS_MAX: usize = 10_000;

/// Bearer tokens and the authorization keys they stand for, keyed by SHA-256 of the token
/// (a lookup whose timing says nothing about how much of a guess matched).
#[derive(Clone, Debug, Default)]
pub struct Tokens {
    by_digest: BTreeMap<[u8; 32], String>,
}

impl Tokens {
    /// Whether no token is known.
    pub fn is_empty(&self) -> bool {
        self.by_digest.is_empty()
    }

    /// Reads a tokens file: `{"tokens": {"<token>": "<authorization key>", …}}`.
    pub fn load(path: &Path) -> Result<Tokens, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("{}: cannot read: {error}", path.display()))?;
        Tokens::parse(path, &text)
    }

    /// Parses a tokens file's `text` (`path` only names it in errors). Tokens are at least
    /// 8 characters; authorization keys 1 to 256 bytes.
    pub fn parse(path: &Path, text: &str) -> Result<Tokens, String> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            tokens: BTreeMap<String, String>,
        }
        let file: File = crate::load::from_json_at(path, text)?;
        if file.tokens.is_empty() {
            return Err(format!("{}: tokens: no token given", path.display()));
        }
        let mut tokens = Tokens::default();
        for (token, key) in file.tokens {
            if token.len() < 8 {
                return Err(format!(
                    "{}: tokens: a token must be at least 8 characters (one for {key:?} is not)",
                    path.display()
                ));
            }
            if key.is_empty() || key.len() > 256 {
                return Err(format!(
                    "{}: tokens: authorization keys must be 1 to 256 bytes",
                    path.display()
                ));
            }
            tokens.insert(&token, &key);
        }
        Ok(tokens)
    }

    /// Accepts `token` as a bearer token for `auth_key`; only its SHA-256 is kept.
    pub fn insert(&mut self, token: &str, auth_key: &str) {
        self.by_digest.insert(
            sha2::Sha256::digest(token.as_bytes()).into(),
            auth_key.into(),
        );
    }

    fn auth_key(&self, token: &str) -> Option<&str> {
        let digest: [u8; 32] = sha2::Sha256::digest(token.as_bytes()).into();
        self.by_digest.get(&digest).map(String::as_str)
    }
}

/// Transport settings.
#[derive(Clone, Debug)]
pub struct HttpConfig {
    /// The bearer tokens accepted, each naming its caller's authorization key.
    pub tokens: Tokens,
    /// Origins allowed besides loopback ones (`https://app.example.com`).
    pub allowed_origins: Vec<String>,
    /// Largest request body accepted, in bytes.
    pub body_bytes_max: usize,
    /// Sessions open at once (see [`SESSIONS_MAX`]).
    pub sessions_max: usize,
    /// The authorization key requests without an `Authorization` header are bound to
    /// (`serve --anonymous`); `None`: such requests are refused with `401`. A token that
    /// is sent must still be a known one.
    pub anonymous: Option<String>,
}

struct Shared {
    server: Arc<Server>,
    config: HttpConfig,
    /// Open sessions by id.
    sessions: Mutex<BTreeMap<String, OpenSession>>,
    /// Requests seen, for least-recently-used eviction.
    requests: std::sync::atomic::AtomicU64,
}

/// One open 2025-11-25 session.
struct OpenSession {
    /// The authorization key that opened it; only that key may use it.
    owner: String,
    /// When it was last used, on the request counter (least recently used goes first).
    used: u64,
    /// Ended when the session is deleted or evicted: its calls still blocked end too.
    life: Arc<SessionLife>,
}

/// Whether a session still exists, as something a blocked call can wait on.
#[derive(Default)]
struct SessionLife {
    ended: std::sync::atomic::AtomicBool,
    notify: tokio::sync::Notify,
}

impl SessionLife {
    fn end(&self) {
        self.ended.store(true, std::sync::atomic::Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    /// Resolves once the session has ended (at once if it already has).
    async fn ended(&self) {
        let notified = self.notify.notified();
        tokio::pin!(notified);
        // Registered before the flag is read, so an end in between is not missed.
        notified.as_mut().enable();
        if self.ended.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        notified.await;
    }
}

impl Shared {
    /// Forgets session `id` (deleted or evicted): its blocked calls end, its budget place
    /// is freed, the server forgets its routes.
    fn end_session(&self, sessions: &mut BTreeMap<String, OpenSession>, id: &str) {
        if let Some(open) = sessions.remove(id) {
            open.life.end();
            self.server.limits().close_session(&open.owner);
        }
        self.server.unsubscribe(id);
    }
}

/// The status and `Retry-After` seconds a JSON-RPC error code asks for, if any.
fn retry_status(answer: &Value) -> Option<(StatusCode, u64)> {
    let error = answer.get("error")?;
    let status = match error.get("code")?.as_i64()? {
        code::LIMITED => StatusCode::TOO_MANY_REQUESTS,
        code::DRAINING => StatusCode::SERVICE_UNAVAILABLE,
        _ => return None,
    };
    let retry_after_ms = error
        .get("data")
        .and_then(|data| data.get("retryAfterMs"))
        .and_then(Value::as_u64)
        .unwrap_or(1_000);
    Some((status, retry_after_ms.div_ceil(1_000).max(1)))
}

/// A JSON answer: `200`, or the status [`retry_status`] asks for with `Retry-After`.
fn json_answer(answer: &Value, status: StatusCode) -> Response {
    let (status, retry_after_s) = match retry_status(answer) {
        Some((refused, seconds)) => (refused, Some(seconds)),
        None => (status, None),
    };
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        answer.to_string(),
    )
        .into_response();
    if let Some(seconds) = retry_after_s {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// What a call blocked on a session gets when the session is deleted under it.
fn session_ended() -> RpcError {
    RpcError::new(
        code::INVALID_REQUEST,
        "Session ended while the call was blocked (deleted or evicted): its tasks go on; \
         initialize again to follow them",
    )
}

/// The `/mcp` router.
pub fn router(server: Arc<Server>, config: HttpConfig) -> axum::Router {
    let body_bytes_max = config.body_bytes_max;
    let shared = Arc::new(Shared {
        server,
        config,
        sessions: Mutex::new(BTreeMap::new()),
        requests: std::sync::atomic::AtomicU64::new(0),
    });
    axum::Router::new()
        .route("/mcp", post(on_post).get(on_get).delete(on_delete))
        .layer(DefaultBodyLimit::max(body_bytes_max))
        .with_state(shared)
}

/// How [`serve_with`] holds connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Listening {
    /// Connections open at once, whoever opened them; one more is closed as soon as it is
    /// accepted (callers are not known before a request, so this bound is not per caller:
    /// it keeps the process within its descriptors).
    pub connections_max: usize,
    /// A connection that has sent no complete request head for this long is closed: a
    /// keep-alive connection left idle after its last answer, or a client slow to send.
    /// A call being answered (a blocked `tasks/result`, an SSE stream) is not idle.
    pub idle_ms: u64,
}

impl Default for Listening {
    fn default() -> Listening {
        Listening {
            connections_max: CONNECTIONS_MAX,
            idle_ms: IDLE_MS,
        }
    }
}

/// Default connections open at once (see [`Listening::connections_max`]).
pub const CONNECTIONS_MAX: usize = 16_384;
/// Default idle time before a connection is closed (see [`Listening::idle_ms`]).
pub const IDLE_MS: u64 = 30_000;
/// The pause after a failed `accept` (out of descriptors, a reset): the listener is fine.
const ACCEPT_BACKOFF_MS: u64 = 10;

/// Serves `router` on `listener` until the process ends, with the default [`Listening`].
pub async fn serve(listener: tokio::net::TcpListener, router: axum::Router) -> std::io::Result<()> {
    serve_with(listener, router, Listening::default()).await
}

/// Serves `router` on `listener` until the process ends: HTTP/1.1, one task per connection,
/// at most `listening.connections_max` open, idle ones closed after `listening.idle_ms`.
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    listening: Listening,
) -> std::io::Result<()> {
    let open = Arc::new(tokio::sync::Semaphore::new(
        listening.connections_max.max(1),
    ));
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(std::time::Duration::from_millis(listening.idle_ms.max(1)));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                tokio::time::sleep(std::time::Duration::from_millis(ACCEPT_BACKOFF_MS)).await;
                continue;
            }
        };
        let Ok(place) = open.clone().try_acquire_owned() else {
            // Full: closed at once, so the descriptor is back before the next accept.
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let connection = builder.serve_connection(
            hyper_util::rt::TokioIo::new(stream),
            hyper_util::service::TowerToHyperService::new(router.clone()),
        );
        tokio::spawn(async move {
            // An error here is the connection's own (a reset, a malformed head, the idle
            // timeout): nothing to do but let it go.
            let _ = connection.await;
            drop(place);
        });
    }
}

/// Whether header `name` is present and contains `needle` (an `Accept` list).
fn header_has(headers: &HeaderMap, name: header::HeaderName, needle: &str) -> bool {
    headers
        .get(name)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.contains(needle))
}

fn rpc_error(status: StatusCode, code: i64, message: &str) -> Response {
    let body = wire::error_response(&Value::Null, &RpcError::new(code, message));
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// Who is calling, checked: origin, token, and (after initialize) the session.
struct Caller {
    auth_key: String,
    session_id: Option<String>,
    /// The session's life (after initialize): a blocked call ends with it.
    life: Option<Arc<SessionLife>>,
}

/// A request refused before it reaches the handler.
struct Refused {
    status: StatusCode,
    message: &'static str,
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        let mut response = rpc_error(self.status, code::INVALID_REQUEST, self.message);
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

fn refused(status: StatusCode, message: &'static str) -> Refused {
    Refused { status, message }
}

fn check_origin(shared: &Shared, headers: &HeaderMap) -> Result<(), Refused> {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin.to_str().unwrap_or("");
    let host = origin
        .split_once("://")
        .map(|(_, rest)| rest)
        .unwrap_or("")
        .trim_end_matches('/');
    let host_only = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.split(':').next().unwrap_or(""),
    };
    let loopback = matches!(host_only, "localhost" | "127.0.0.1" | "::1");
    if loopback
        || shared
            .config
            .allowed_origins
            .iter()
            .any(|allowed| allowed == origin)
    {
        Ok(())
    } else {
        Err(refused(StatusCode::FORBIDDEN, "Origin not allowed"))
    }
}

/// The caller's authorization key: its bearer token's, or the anonymous key when no
/// `Authorization` header was sent and `--anonymous` is on.
fn authorization_key<'s>(shared: &'s Shared, headers: &HeaderMap) -> Option<&'s str> {
    match headers.get(header::AUTHORIZATION) {
        None => shared.config.anonymous.as_deref(),
        Some(value) => {
            let token = value.to_str().ok()?.strip_prefix("Bearer ")?.trim();
            shared.config.tokens.auth_key(token)
        }
    }
}

fn check_caller(
    shared: &Shared,
    headers: &HeaderMap,
    initializing: bool,
) -> Result<Caller, Refused> {
    check_origin(shared, headers)?;
    let Some(auth_key) = authorization_key(shared, headers) else {
        return Err(refused(
            StatusCode::UNAUTHORIZED,
            "Unauthorized: send Authorization: Bearer <token>",
        ));
    };
    let session_id = headers
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    if initializing {
        return Ok(Caller {
            auth_key: auth_key.to_owned(),
            session_id: None,
            life: None,
        });
    }
    let Some(session_id) = session_id else {
        return Err(refused(
            StatusCode::BAD_REQUEST,
            "Bad request: Mcp-Session-Id header is required (initialize first)",
        ));
    };
    let now = shared
        .requests
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let found = shared
        .sessions
        .lock()
        .expect("sessions")
        .get_mut(&session_id)
        .map(|open| {
            open.used = now;
            (open.owner.clone(), open.life.clone())
        });
    match found {
        None => Err(refused(
            StatusCode::NOT_FOUND,
            // Several instances behind one balancer: a session lives in the process that
            // opened it, while tasks live in the store every instance shares.
            "Session not found: it ended, or another server instance opened it (sessions are \
             per instance; tasks are not): initialize again",
        )),
        Some((owner, _)) if owner != auth_key => Err(refused(
            StatusCode::FORBIDDEN,
            "Forbidden: this session belongs to another caller",
        )),
        Some((_, life)) => Ok(Caller {
            auth_key: auth_key.to_owned(),
            session_id: Some(session_id),
            life: Some(life),
        }),
    }
}

/// The `Idempotency-Key` header, if it is a usable key (1 to 256 bytes).
fn idempotency_header(headers: &HeaderMap) -> Option<String> {
    headers
        .get("idempotency-key")
        .and_then(|value| value.to_str().ok())
        .filter(|key| !key.is_empty() && key.len() <= 256)
        .map(str::to_owned)
}

fn session_of(caller: &Caller, session_id: &str, headers: &HeaderMap) -> Session {
    Session {
        id: session_id.to_owned(),
        auth_key: caller.auth_key.clone(),
        negotiated: Negotiated::FULL,
        idempotency_header: idempotency_header(headers),
    }
}

/// The body of a POST as one JSON-RPC message, or the refusal to send: too large, not
/// JSON, or malformed (a JSON-RPC error with HTTP 400, after the caller is checked).
fn parse_post(
    shared: &Shared,
    headers: &HeaderMap,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Incoming, Box<Response>> {
    let body = match body {
        Ok(body) => body,
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return Err(Box::new(rpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                code::INVALID_REQUEST,
                &format!(
                    "Request body larger than {} bytes",
                    shared.config.body_bytes_max
                ),
            )));
        }
        Err(rejection) => {
            return Err(Box::new(rpc_error(
                rejection.status(),
                code::INVALID_REQUEST,
                &rejection.body_text(),
            )));
        }
    };
    let json_content = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    if !json_content {
        return Err(Box::new(rpc_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            code::INVALID_REQUEST,
            "Content-Type must be application/json",
        )));
    }
    match std::str::from_utf8(&body)
        .map_err(|_| {
            wire::error_response(
                &Value::Null,
                &RpcError::new(code::PARSE_ERROR, "Parse error: the body is not UTF-8"),
            )
        })
        .and_then(wire::parse)
    {
        Ok(incoming) => Ok(incoming),
        // Malformed messages are JSON-RPC errors (HTTP 400), before any authentication
        // detail is revealed beyond that.
        Err(error) => {
            if let Err(refusal) = check_caller(shared, headers, true) {
                return Err(Box::new(refusal.into_response()));
            }
            Err(Box::new(
                (
                    StatusCode::BAD_REQUEST,
                    [(header::CONTENT_TYPE, "application/json")],
                    error.to_string(),
                )
                    .into_response(),
            ))
        }
    }
}

/// A new session for `caller` (the oldest idle one ends when the server is full), or the
/// refusal of a caller over its session budget.
fn open_session(
    shared: &Shared,
    caller: &Caller,
    now_ms: u64,
    request_id: &Value,
) -> Result<(String, Arc<SessionLife>), Box<Response>> {
    if let Err(limited) = shared
        .server
        .limits()
        .open_session(&caller.auth_key, now_ms)
    {
        let answer = wire::error_response(request_id, &limited.to_rpc_error());
        return Err(Box::new(json_answer(&answer, StatusCode::OK)));
    }
    let mut sessions = shared.sessions.lock().expect("sessions");
    if sessions.len() >= shared.config.sessions_max.max(1)
        && let Some(oldest) = sessions
            .iter()
            .min_by_key(|(_, open)| open.used)
            .map(|(id, _)| id.clone())
    {
        shared.end_session(&mut sessions, &oldest);
    }
    let id = format!(
        "{:016x}{:016x}",
        shared.server.env.random_u64(),
        shared.server.env.random_u64()
    );
    let now = shared
        .requests
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let life = Arc::new(SessionLife::default());
    sessions.insert(
        id.clone(),
        OpenSession {
            owner: caller.auth_key.clone(),
            used: now,
            life: life.clone(),
        },
    );
    Ok((id, life))
}

async fn on_post(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Response {
    let incoming = match parse_post(&shared, &headers, body) {
        Ok(incoming) => incoming,
        Err(refusal) => return *refusal,
    };
    if is_modern(&headers, &incoming) {
        return modern_post(&shared, &headers, incoming).await;
    }
    let initializing =
        matches!(&incoming, Incoming::Request { method, .. } if method == "initialize");
    let caller = match check_caller(&shared, &headers, initializing) {
        Ok(caller) => caller,
        Err(refusal) => return refusal.into_response(),
    };
    let request_id = match &incoming {
        Incoming::Request { id, .. } => id.clone(),
        _ => Value::Null,
    };
    let now_ms = shared.server.env.now_ms();
    let _in_flight = match shared
        .server
        .limits()
        .begin_request(&caller.auth_key, now_ms)
    {
        Ok(in_flight) => in_flight,
        Err(limited) => {
            let answer = wire::error_response(&request_id, &limited.to_rpc_error());
            return json_answer(&answer, StatusCode::OK);
        }
    };
    let (session_id, life) = match (&caller.session_id, &caller.life) {
        (Some(id), Some(life)) => (id.clone(), life.clone()),
        _ => match open_session(&shared, &caller, now_ms, &request_id) {
            Ok(opened) => opened,
            Err(refusal) => return *refusal,
        },
    };
    let session = session_of(&caller, &session_id, &headers);
    let streams = header_has(&headers, header::ACCEPT, "text/event-stream")
        && matches!(&incoming, Incoming::Request { method, .. } if method == "tasks/result");
    let mut response = match incoming {
        // A response answers a request the server sent on one of this session's streams.
        Incoming::Notification { .. } | Incoming::Response { .. } => {
            shared.server.handle(&session, incoming).await;
            StatusCode::ACCEPTED.into_response()
        }
        incoming if streams => match shared.server.check_wait_budget(&session.auth_key) {
            // Refused before the stream starts, while the status can still say so.
            Err(error) => json_answer(&wire::error_response(&request_id, &error), StatusCode::OK),
            Ok(()) => result_stream(shared.clone(), session, incoming, life),
        },
        incoming => {
            // A client that disconnects drops this future (hyper stops polling it); a
            // session deleted meanwhile ends it here.
            let answer = tokio::select! {
                biased;
                answer = shared.server.handle(&session, incoming) => answer.unwrap_or(Value::Null),
                () = life.ended() => wire::error_response(&request_id, &session_ended()),
            };
            json_answer(&answer, StatusCode::OK)
        }
    };
    if let Ok(value) = HeaderValue::from_str(&session_id) {
        response.headers_mut().insert("mcp-session-id", value);
    }
    response
}

/// An SSE answer to `tasks/result`: the session's notifications while the task works, the
/// task's questions as requests to the client while it is `input_required` (their
/// responses come back as POSTs on the session), then the response, then the end of the
/// stream. A client that goes away ends the call.
fn result_stream(
    shared: Arc<Shared>,
    session: Session,
    incoming: Incoming,
    life: Arc<SessionLife>,
) -> Response {
    let (send, receive) =
        tokio::sync::mpsc::channel::<Value>(shared.server.config.notifications_queued_max);
    // A per-request subscription, so this stream sees its session's notifications.
    let stream_session = Session {
        id: format!(
            "{}/result-{:016x}",
            session.id,
            shared.server.env.random_u64()
        ),
        ..session.clone()
    };
    shared.server.subscribe(&stream_session, send.clone());
    let server = shared.server.clone();
    let request_id = match &incoming {
        Incoming::Request { id, .. } => id.clone(),
        _ => Value::Null,
    };
    let in_flight = shared.clone();
    tokio::spawn(async move {
        // The stream holds the caller's in-flight place until it ends.
        let _in_flight = in_flight
            .server
            .limits()
            .begin_request(&session.auth_key, in_flight.server.env.now_ms());
        let answered = tokio::select! {
            biased;
            answer = server.handle_on(&session, incoming, Some(&send)) => Some(answer),
            // The client went away: the call ends, and the questions it sent are forgotten.
            () = send.closed() => None,
            () = life.ended() => Some(Some(wire::error_response(&request_id, &session_ended()))),
        };
        server.unsubscribe(&stream_session.id);
        if let Some(answer) = answered {
            // The receiver may be gone (client disconnected): nothing to do then.
            let _ = send.send(answer.unwrap_or(Value::Null)).await;
        }
    });
    sse_response(receive, true)
}

/// Frames messages from `receive` as SSE events; with `until_response`, the stream ends
/// after the first message that is a response (an `id` and no `method`: a request the
/// server sends has both).
fn sse_response(receive: tokio::sync::mpsc::Receiver<Value>, until_response: bool) -> Response {
    let stream =
        futures_util::stream::unfold((receive, false), move |(mut receive, done)| async move {
            if done {
                return None;
            }
            let message = receive.recv().await?;
            let last =
                until_response && message.get("id").is_some() && message.get("method").is_none();
            let event = format!("event: message\ndata: {message}\n\n");
            Some((
                Ok::<_, std::convert::Infallible>(Bytes::from(event)),
                (receive, last),
            ))
        });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(stream))
        .expect("a valid response")
}

async fn on_get(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if modern_version_header(&headers).is_some() {
        return modern_method_not_allowed();
    }
    let caller = match check_caller(&shared, &headers, false) {
        Ok(caller) => caller,
        Err(refusal) => return refusal.into_response(),
    };
    if !header_has(&headers, header::ACCEPT, "text/event-stream") {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            code::INVALID_REQUEST,
            "GET opens an event stream: Accept: text/event-stream",
        );
    }
    let session_id = caller.session_id.clone().expect("checked above");
    let (send, receive) =
        tokio::sync::mpsc::channel::<Value>(shared.server.config.notifications_queued_max);
    // One notification stream per session: a new GET replaces the old one.
    shared
        .server
        .subscribe(&session_of(&caller, &session_id, &headers), send);
    sse_response(receive, false)
}

async fn on_delete(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if modern_version_header(&headers).is_some() {
        return modern_method_not_allowed();
    }
    let caller = match check_caller(&shared, &headers, false) {
        Ok(caller) => caller,
        Err(refusal) => return refusal.into_response(),
    };
    let session_id = caller.session_id.expect("checked above");
    let mut sessions = shared.sessions.lock().expect("sessions");
    shared.end_session(&mut sessions, &session_id);
    StatusCode::NO_CONTENT.into_response()
}

// ---------------------------------------------------------------------------------------
// The 2026-07-28 era: no sessions; every request says who it is in `_meta` and headers.
// ---------------------------------------------------------------------------------------

/// The `MCP-Protocol-Version` header, when it names a version after the 2025-11-25 era
/// (an unknown one included: it is answered `-32022`, not served as legacy).
fn modern_version_header(headers: &HeaderMap) -> Option<&str> {
    let version = headers.get("mcp-protocol-version")?.to_str().ok()?.trim();
    (!wire::SUPPORTED_VERSIONS.contains(&version)).then_some(version)
}

/// A request of the 2026-07-28 era: its version header says so, or (header missing) its
/// params carry that era's envelope — in a session, its version key
/// ([`modern::is_modern_request`]). Everything else is 2025-11-25, session by session.
fn is_modern(headers: &HeaderMap, incoming: &Incoming) -> bool {
    if modern_version_header(headers).is_some() {
        return true;
    }
    let session_id = headers
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    headers.get("mcp-protocol-version").is_none()
        && matches!(incoming, Incoming::Request { params, .. } if modern::is_modern_request(session_id, params))
}

fn modern_method_not_allowed() -> Response {
    rpc_error(
        StatusCode::METHOD_NOT_ALLOWED,
        code::INVALID_REQUEST,
        "Method not allowed: protocol version 2026-07-28 has no sessions and no GET stream",
    )
}

/// A header value as sent, trimmed; `=?base64?…?=` values decoded.
fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    let raw = headers.get(name)?.to_str().ok()?.trim();
    match raw
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    {
        Some(encoded) => {
            use base64::Engine as _;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()?;
            String::from_utf8(bytes).ok()
        }
        None => Some(raw.to_owned()),
    }
}

/// The routing headers must say what the body says (`-32020` otherwise).
fn check_routing_headers(
    headers: &HeaderMap,
    envelope: &modern::Envelope,
    method: &str,
    params: &serde_json::Map<String, Value>,
) -> Result<(), RpcError> {
    let mismatch = |message: String| RpcError::new(modern::error_code::HEADER_MISMATCH, message);
    let expect = |name: &str, body: &str| match header_text(headers, name) {
        None => Err(mismatch(format!(
            "Header mismatch: {name} header is required"
        ))),
        Some(value) if value == body => Ok(()),
        Some(value) => Err(mismatch(format!(
            "Header mismatch: {name} header value {value:?} does not match body value {body:?}"
        ))),
    };
    expect("mcp-protocol-version", &envelope.version)?;
    expect("mcp-method", method)?;
    let name_field = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    };
    if let Some(field) = name_field
        && let Some(body) = params.get(field).and_then(Value::as_str)
    {
        expect("mcp-name", body)?;
    }
    Ok(())
}

async fn modern_post(shared: &Arc<Shared>, headers: &HeaderMap, incoming: Incoming) -> Response {
    if let Err(refusal) = check_origin(shared, headers) {
        return refusal.into_response();
    }
    let Some(auth_key) = authorization_key(shared, headers) else {
        return Refused {
            status: StatusCode::UNAUTHORIZED,
            message: "Unauthorized: send Authorization: Bearer <token>",
        }
        .into_response();
    };
    let Incoming::Request { id, method, params } = incoming else {
        // This era defines no client notifications over HTTP: accepted, nothing to do.
        return StatusCode::ACCEPTED.into_response();
    };
    let _in_flight = match shared
        .server
        .limits()
        .begin_request(auth_key, shared.server.env.now_ms())
    {
        Ok(in_flight) => in_flight,
        Err(limited) => {
            return json_answer(
                &wire::error_response(&id, &limited.to_rpc_error()),
                StatusCode::OK,
            );
        }
    };
    let session = Session {
        id: String::new(),
        auth_key: auth_key.to_owned(),
        negotiated: Negotiated::FULL,
        idempotency_header: idempotency_header(headers),
    };
    let answer = match modern::envelope(&params) {
        Err(error) => Err(error),
        Ok(envelope) => match check_routing_headers(headers, &envelope, &method, &params) {
            Err(error) => Err(error),
            Ok(()) if method == "subscriptions/listen" => {
                let (send, receive) = tokio::sync::mpsc::channel::<Value>(
                    shared.server.config.notifications_queued_max,
                );
                match shared
                    .server
                    .listen(&session, &envelope, &id, &params, send)
                {
                    // The SSE answer: acknowledgement, notifications, then the answer.
                    Ok(()) => return sse_response(receive, true),
                    Err(error) => Err(error),
                }
            }
            Ok(()) => {
                shared
                    .server
                    .handle_modern(&session, &envelope, &method, &params)
                    .await
            }
        },
    };
    let status = StatusCode::from_u16(modern::http_status(answer.as_ref().err()))
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = match answer {
        Ok(result) => wire::response(&id, result),
        Err(error) => wire::error_response(&id, &error),
    };
    json_answer(&body, status)
}
