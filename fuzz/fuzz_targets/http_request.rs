//! The HTTP request path (`serve --http`): the `/mcp` router of one server over the memory
//! store, fed a short conversation of requests built from the input. Each request is a
//! method line, header lines and, after a blank line, the body; requests are separated by
//! a line `===`. A header value `$SESSION` stands for the session id the last answer
//! issued, so the fuzzer reaches the 2025-11-25 session paths as well as the session-free
//! 2026-07-28 ones. Every request must be answered (or time out while held open, as a
//! blocked call or an event stream may), never panic.
#![no_main]

#[path = "common.rs"]
mod common;

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Method, Request};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use std::time::Duration;
use tasklatch::mcp::http::{HttpConfig, SESSIONS_MAX, Tokens, router};
use tower::ServiceExt;

/// Requests one input may make: a conversation, not a flood.
const REQUESTS_MAX: usize = 8;
/// How long one request (its answer, then its body) may take: an event stream or a
/// blocked call is held open until then, so it bounds what such an input costs.
const REQUEST_MS_MAX: u64 = 10;
/// The most of an answer's body that is read.
const ANSWER_BYTES_MAX: usize = 1 << 20;

struct World {
    tokio: tokio::runtime::Runtime,
    router: axum::Router,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let server = common::server("http");
        let mut tokens = Tokens::default();
        tokens.insert("fuzz-token-alice", "tenant-fuzz/alice");
        tokens.insert("fuzz-token-bob", "tenant-fuzz/bob");
        let router = router(
            server,
            HttpConfig {
                tokens,
                allowed_origins: vec!["https://app.example".into()],
                body_bytes_max: 64 * 1024,
                sessions_max: SESSIONS_MAX,
                anonymous: None,
            },
        );
        World {
            tokio: common::tokio(),
            router,
        }
    })
}

/// One request from its text, or `None` where the text cannot be a request at all (a
/// method or header HTTP itself would refuse before the router sees it).
fn request(text: &str, session: Option<&str>) -> Option<Request<Body>> {
    let (head, body) = text.split_once("\n\n").unwrap_or((text, ""));
    let mut lines = head.lines();
    let method = Method::from_bytes(lines.next()?.trim().as_bytes()).ok()?;
    let mut builder = Request::builder().method(method).uri("/mcp");
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let value = match (value, session) {
            ("$SESSION", Some(id)) => id,
            _ => value,
        };
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.trim().as_bytes()),
            HeaderValue::from_str(value),
        ) else {
            continue;
        };
        builder = builder.header(name, value);
    }
    builder.body(Body::from(body.to_owned())).ok()
}

fuzz_target!(|text: &str| {
    let world = world();
    world.tokio.block_on(async {
        let mut session: Option<String> = None;
        for part in text.split("\n===\n").take(REQUESTS_MAX) {
            let Some(request) = request(part, session.as_deref()) else {
                continue;
            };
            let answered = tokio::time::timeout(
                Duration::from_millis(REQUEST_MS_MAX),
                world.router.clone().oneshot(request),
            )
            .await;
            let Ok(Ok(response)) = answered else {
                continue;
            };
            if let Some(id) = response
                .headers()
                .get("mcp-session-id")
                .and_then(|id| id.to_str().ok())
            {
                session = Some(id.to_owned());
            }
            let _ = tokio::time::timeout(
                Duration::from_millis(REQUEST_MS_MAX),
                axum::body::to_bytes(response.into_body(), ANSWER_BYTES_MAX),
            )
            .await;
        }
    });
});
