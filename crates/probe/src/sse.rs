//! Server-sent event streams over Streamable HTTP: a session's GET stream (2025-11-25:
//! what the server sends unasked) and the streamed answer of a POST that stays open (a
//! 2026-07-28 `subscriptions/listen`), each read in the background into a [`Listening`].

use crate::transport::{HttpPeer, MESSAGE_BYTES_MAX, lock};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// An event stream read in the background (a session's GET stream, or the answer of a
/// `subscriptions/listen`): every message the server pushed on it so far. Dropping it
/// closes the stream.
pub struct Listening {
    messages: Arc<Mutex<Vec<Value>>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Listening {
    /// What arrived so far.
    pub fn messages(&self) -> Vec<Value> {
        lock(&self.messages).clone()
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Messages a listening stream keeps, at most (the probe's tasks are few).
const LISTENED_MAX: usize = 4_096;

impl HttpPeer {
    /// Opens this session's GET stream (Streamable HTTP's channel for what the server
    /// sends unasked), with `headers`; an error names what the server answered instead.
    pub async fn listen(&self, headers: &[(&str, String)]) -> Result<Listening, String> {
        let request = self
            .request(Request::get(self.url_path()), headers)
            .header("accept", "text/event-stream")
            .body(Full::new(Bytes::new()))
            .map_err(|error| format!("building the request: {error}"))?;
        self.stream_of(request, "GET").await
    }

    /// POSTs `text` (a request whose answer is a stream: `subscriptions/listen`) with
    /// `headers`, and reads the event stream that answers it; an error names what the
    /// server answered instead.
    pub async fn listen_to(
        &self,
        text: &str,
        headers: &[(&str, String)],
    ) -> Result<Listening, String> {
        let request = self
            .request(Request::post(self.url_path()), headers)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(Full::new(Bytes::from(text.to_owned())))
            .map_err(|error| format!("building the request: {error}"))?;
        self.stream_of(request, "POST").await
    }

    async fn stream_of(
        &self,
        request: Request<Full<Bytes>>,
        verb: &str,
    ) -> Result<Listening, String> {
        let (mut sender, driver) = self.connect().await?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|error| format!("{verb} {}: {error}", self.url_path()))?;
        let streamed = response
            .headers()
            .get("content-type")
            .and_then(|value| value.to_str().ok())
            .is_some_and(|kind| kind.starts_with("text/event-stream"));
        if response.status() != 200 || !streamed {
            let status = response.status().as_u16();
            let excerpt = body_excerpt(response.into_body()).await;
            driver.abort();
            return Err(format!(
                "{verb} answered HTTP {status} ({}){excerpt}",
                if streamed {
                    "an event stream"
                } else {
                    "not an event stream"
                }
            ));
        }
        let messages = Arc::new(Mutex::new(Vec::new()));
        let kept = messages.clone();
        let reader = tokio::spawn(async move {
            let mut body = response.into_body();
            let mut buffer: Vec<u8> = Vec::new();
            while let Some(Ok(frame)) = body.frame().await {
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                buffer.extend_from_slice(&data);
                let events = take_sse_events(&mut buffer);
                let mut kept = lock(&kept);
                let room = LISTENED_MAX.saturating_sub(kept.len());
                kept.extend(events.into_iter().take(room));
                if buffer.len() > MESSAGE_BYTES_MAX {
                    break;
                }
            }
            driver.abort();
        });
        Ok(Listening { messages, reader })
    }
}

/// The start of a body that was not a stream (a JSON-RPC error, say), for the error.
async fn body_excerpt(body: hyper::body::Incoming) -> String {
    const EXCERPT_CHARS_MAX: usize = 200;
    let read = tokio::time::timeout(std::time::Duration::from_secs(2), body.collect()).await;
    match read {
        Ok(Ok(collected)) => {
            let bytes = collected.to_bytes();
            let text: String = String::from_utf8_lossy(&bytes)
                .chars()
                .take(EXCERPT_CHARS_MAX)
                .collect();
            if text.is_empty() {
                String::new()
            } else {
                format!(": {text}")
            }
        }
        _ => String::new(),
    }
}

/// Removes the complete SSE events from the front of `buffer` and returns the JSON of
/// each event's data (events whose data is not JSON, priming events say, are skipped).
pub(crate) fn take_sse_events(buffer: &mut Vec<u8>) -> Vec<Value> {
    // A raw CR only ever ends a line here: JSON escapes it inside strings, and it is never
    // part of a multi-byte UTF-8 sequence, so dropping it normalizes CRLF safely.
    buffer.retain(|byte| *byte != b'\r');
    let mut events = Vec::new();
    while let Some(end) = buffer.windows(2).position(|pair| pair == b"\n\n") {
        let event = String::from_utf8_lossy(&buffer[..end]).into_owned();
        buffer.drain(..end + 2);
        let data: Vec<&str> = event
            .lines()
            .filter_map(|line| {
                line.strip_prefix("data:")
                    .map(|rest| rest.strip_prefix(' ').unwrap_or(rest))
            })
            .collect();
        if !data.is_empty()
            && let Ok(message) = serde_json::from_str::<Value>(&data.join("\n"))
        {
            events.push(message);
        }
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_are_split_and_kept_whole() {
        let mut buffer = b"id: 1\ndata: {\"a\":1}\n\n: comment\n\ndata: {\"b\":".to_vec();
        let events = take_sse_events(&mut buffer);
        assert_eq!(events, vec![serde_json::json!({"a": 1})]);
        assert_eq!(buffer, b"data: {\"b\":");
        buffer.extend_from_slice(b"2}\r\n\r\n");
        assert_eq!(
            take_sse_events(&mut buffer),
            vec![serde_json::json!({"b": 2})]
        );
        assert!(buffer.is_empty());
    }
}
