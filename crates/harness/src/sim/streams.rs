//! What the server pushes to a client's sessions, received and recorded for the oracle
//! (I19, and I4 for pushed messages). A 2025-11-25 client holds its session's stream (the
//! GET stream of Streamable HTTP) and, every other tenant, a second session of its
//! identity that only listens (a second tab): status notifications are for every session
//! of the caller, progress only for the session whose create sent the token. A 2026-07-28
//! client listens to its tasks (`subscriptions/listen`). A stream dies with the server
//! process that holds it; the client notices (its queue closes) and opens another on a new
//! session.
//!
//! Streams are read between the client's steps, never by a task of their own: the
//! client's behaviour (and so a seed's trace) does not depend on when a message arrives,
//! only on what the server sent by then.

use super::SimEnv;
use super::answers::{inlined_outcome, revealed_of_wire};
use super::history::History;
use super::world::Shared;
use crate::check::{Event, Opening, Push};
use crate::contract::Era;
use crate::mcp::modern::{self, META_SUBSCRIPTION_ID};
use crate::mcp::wire;
use crate::mcp::{Server, Session};
use crate::runtime::Env;
use serde_json::{Value, json};
use std::sync::Arc;

/// Messages a session's queue holds before the server drops more (notifications are
/// hints: a full queue loses them, as a slow reader would).
pub(super) const QUEUED_MAX: usize = 256;

/// One session's stream, as its client reads it.
pub(super) struct Stream {
    client: String,
    session: String,
    caller: String,
    queue: tokio::sync::mpsc::Receiver<Value>,
}

impl Stream {
    /// Subscribes `session` to what `server` pushes for its caller.
    pub(super) fn open(server: &Server, client: &str, session: &Session) -> Stream {
        let (outbound, queue) = tokio::sync::mpsc::channel(QUEUED_MAX);
        server.subscribe(session, outbound);
        Stream {
            client: client.to_owned(),
            session: session.id.clone(),
            caller: session.auth_key.clone(),
            queue,
        }
    }

    /// Records every message that arrived, but a status of a task in `known` (a watcher's
    /// copy of what its client's own stream records); `false` once the server that held
    /// the stream is gone (its process died).
    pub(super) fn drain(&mut self, history: &History, known: &[String]) -> bool {
        loop {
            match self.queue.try_recv() {
                Ok(message) if is_status_of(&message, known) => {}
                Ok(message) => self.record(history, &message),
                Err(tokio::sync::mpsc::error::TryRecvError::Empty) => return true,
                Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => return false,
            }
        }
    }

    fn record(&self, history: &History, message: &Value) {
        if let Some(message) = read_push(history, message) {
            record_pushed(history, &self.client, &self.session, &self.caller, message);
        }
    }
}

/// Records what `client` read on a stream of `session` (authenticated as `caller`).
pub(super) fn record_pushed(
    history: &History,
    client: &str,
    session: &str,
    caller: &str,
    message: Push,
) {
    history.push(Event::Pushed {
        client: client.to_owned(),
        session: session.to_owned(),
        caller: caller.to_owned(),
        message,
        at_ms: SimEnv.now_ms(),
    });
}

fn is_status_of(message: &Value, known: &[String]) -> bool {
    !known.is_empty()
        && message["method"] == "notifications/tasks/status"
        && message["params"]["taskId"]
            .as_str()
            .is_some_and(|task_id| known.iter().any(|id| id == task_id))
}

/// What a pushed message says; `None` for what the oracle has no rule for (the answer
/// that ends a listen stream).
fn read_push(history: &History, message: &Value) -> Option<Push> {
    let method = message["method"].as_str().unwrap_or_default();
    let params = &message["params"];
    let unreadable = |detail: &str| Push::Unreadable {
        method: method.to_owned(),
        detail: detail.to_owned(),
    };
    Some(match method {
        "notifications/tasks/status" => {
            history.mark("pushed-status");
            match revealed_of_wire(params, None, Era::Core2025) {
                Some(seen) => Push::Status {
                    seen,
                    subscription: None,
                },
                None => unreadable("not a task"),
            }
        }
        "notifications/tasks" => {
            history.mark("pushed-listen");
            let subscription = params["_meta"][META_SUBSCRIPTION_ID].as_str();
            match (
                revealed_of_wire(params, None, Era::Extension2026),
                subscription,
            ) {
                (Some(mut seen), Some(subscription)) => {
                    seen.outcome = inlined_outcome(params);
                    Push::Status {
                        seen,
                        subscription: Some(subscription.to_owned()),
                    }
                }
                _ => unreadable("not a task with its subscription id"),
            }
        }
        "notifications/progress" => {
            history.mark("pushed-progress");
            match params["progressToken"].as_str() {
                Some(token) => Push::Progress {
                    token: token.to_owned(),
                },
                None => unreadable("no string progressToken"),
            }
        }
        // The listen's acknowledgement, and the answer that ends it: nothing to judge.
        "notifications/subscriptions/acknowledged" => return None,
        "" if message.get("id").is_some() => return None,
        _ if message.get("id").is_some() => return read_ask(message, None),
        _ => unreadable("a message no client asked for"),
    })
}

/// A request the server sent a client (on a `tasks/result` call's stream: `call` names
/// its task) as the question of the task its related-task `_meta` names; `None` for what
/// is not a request.
pub(super) fn read_ask(message: &Value, call: Option<&str>) -> Option<Push> {
    let method = message["method"].as_str()?;
    message.get("id")?;
    let mut params = message.get("params").cloned().unwrap_or_else(|| json!({}));
    let task_id = params["_meta"][wire::RELATED_TASK]["taskId"]
        .as_str()
        .map(str::to_owned);
    let Some(task_id) = task_id else {
        return Some(Push::Unreadable {
            method: method.to_owned(),
            detail: "a request naming no related task".to_owned(),
        });
    };
    if let Some(meta) = params.get_mut("_meta").and_then(Value::as_object_mut) {
        meta.remove(wire::RELATED_TASK);
        if meta.is_empty() {
            params.as_object_mut().map(|params| params.remove("_meta"));
        }
    }
    Some(Push::Ask {
        task_id,
        method: method.to_owned(),
        params,
        call: call.map(str::to_owned),
    })
}

/// The server a client's streams go to: its process's current incarnation, or the one
/// MCP handler of an external queue's deployment. `None` while the process is down.
pub(super) fn server_of(shared: &Shared, process: Option<usize>) -> Option<Arc<Server>> {
    match process {
        None => Some(shared.server.clone()),
        Some(index) => shared.processes[index].server(),
    }
}

/// Opens a 2026-07-28 listen stream on `server` for `session` about `task_ids`, recorded
/// as opened before it is sent; `None` when the server refused it.
pub(super) async fn listen(
    server: &Server,
    history: &History,
    client: &str,
    session: &Session,
    subscription: &str,
    task_ids: &[String],
) -> Option<Stream> {
    let stream = Stream::open(server, client, session);
    history.push(Event::Opened {
        client: client.to_owned(),
        session: session.id.clone(),
        what: Opening::Listen {
            subscription: subscription.to_owned(),
            task_ids: task_ids.to_vec(),
        },
        at_ms: SimEnv.now_ms(),
    });
    let request = json!({
        "jsonrpc": "2.0",
        "id": subscription,
        "method": "subscriptions/listen",
        "params": {
            "notifications": { "taskIds": task_ids },
            "_meta": {
                modern::META_PROTOCOL_VERSION: modern::VERSION,
                modern::META_CLIENT_CAPABILITIES: { "extensions": { modern::TASKS_EXTENSION: {} } },
            },
        },
    });
    // Accepted, it answers nothing now: its answer ends the stream.
    match server.handle_text(session, &request.to_string()).await {
        None => Some(stream),
        Some(_refused) => None,
    }
}
