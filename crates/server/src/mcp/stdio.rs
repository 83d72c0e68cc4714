//! The stdio transport: newline-delimited JSON-RPC on stdin and stdout, one requestor.
//!
//! Each request is handled on its own tokio task, so a `tasks/result` blocked on a working
//! task never holds up the `tasks/get` polls behind it; responses and notifications leave
//! through one writer, one line each. A line longer than [`LINE_BYTES_MAX`] is answered
//! with a parse error and skipped, without buffering it whole. At end of input the
//! transport stops reading and answers what is in flight for at most
//! [`DRAIN_MS_MAX`] milliseconds; what is still blocked then (a `tasks/result` on a task
//! that goes on) ends with it: its client is gone.
//!
//! Stdout is also the stream a blocked `tasks/result` asks on: the questions of an
//! `input_required` task go out as `elicitation/create` requests (to a client that
//! declared `capabilities.elicitation`), and the client's response lines answer them.

use super::server::{Server, Session};
use serde_json::Value;
use std::sync::Arc;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

/// The longest message accepted.
pub const LINE_BYTES_MAX: usize = 4 * 1024 * 1024;
/// Requests handled at once; more wait for a slot (backpressure on the reader).
pub const IN_FLIGHT_MAX: usize = 256;
/// After end of input, how long in-flight requests may still answer.
pub const DRAIN_MS_MAX: u64 = 2_000;

/// Serves one session over a reader and a writer until the reader ends.
pub async fn serve<R, W>(server: Arc<Server>, session: Session, input: R, output: W)
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (send, mut receive) =
        tokio::sync::mpsc::channel::<Value>(server.config.notifications_queued_max);
    server.subscribe(&session, send.clone());
    let writer = tokio::spawn(async move {
        let mut output = output;
        while let Some(message) = receive.recv().await {
            let mut line = serde_json::to_vec(&message).expect("a JSON value serialises");
            line.push(b'\n');
            if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
    });
    let slots = Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT_MAX));
    // Every handler, so the ones still blocked when the client is gone are ended with it.
    let mut handlers = tokio::task::JoinSet::new();
    let mut input = input;
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line_bounded(&mut input, &mut line).await {
            Ok(Line::End) => break,
            Ok(Line::TooLong) => {
                let error = super::wire::error_response(
                    &Value::Null,
                    &super::wire::RpcError::new(
                        super::wire::code::PARSE_ERROR,
                        format!("Parse error: message longer than {LINE_BYTES_MAX} bytes"),
                    ),
                );
                if send.send(error).await.is_err() {
                    break;
                }
                continue;
            }
            Ok(Line::Text) => {}
            Err(_) => break,
        }
        let text = String::from_utf8_lossy(&line).trim().to_owned();
        if text.is_empty() {
            continue;
        }
        let Ok(permit) = slots.clone().acquire_owned().await else {
            break;
        };
        let (server, session, send) = (server.clone(), session.clone(), send.clone());
        // Finished handlers are reaped as the session goes, so the set stays bounded.
        while handlers.try_join_next().is_some() {}
        handlers.spawn(async move {
            // The answer goes out on stdout, which can also carry the requests a blocked
            // tasks/result sends to the client (their responses come back as lines).
            if let Some(answer) = server.handle_text_on(&session, &text, Some(&send)).await {
                let _ = send.send(answer).await;
            }
            drop(permit);
        });
    }
    // Let in-flight answers out, but not forever (a blocked tasks/result may never end).
    let _ = tokio::time::timeout(
        std::time::Duration::from_millis(DRAIN_MS_MAX),
        slots.acquire_many(IN_FLIGHT_MAX as u32),
    )
    .await;
    handlers.shutdown().await;
    server.unsubscribe(&session.id);
    drop(send);
    let _ = tokio::time::timeout(std::time::Duration::from_millis(DRAIN_MS_MAX), writer).await;
}

enum Line {
    Text,
    TooLong,
    End,
}

/// Reads one line into `line` (without its newline), refusing to hold more than
/// [`LINE_BYTES_MAX`] bytes: the rest of an overlong line is skipped.
async fn read_line_bounded<R: AsyncBufRead + Unpin>(
    input: &mut R,
    line: &mut Vec<u8>,
) -> std::io::Result<Line> {
    let mut too_long = false;
    loop {
        let buffer = input.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(if too_long {
                Line::TooLong
            } else if line.is_empty() {
                Line::End
            } else {
                Line::Text
            });
        }
        let (chunk, found) = match buffer.iter().position(|b| *b == b'\n') {
            Some(at) => (&buffer[..at], Some(at + 1)),
            None => (buffer, None),
        };
        if !too_long {
            if line.len() + chunk.len() > LINE_BYTES_MAX {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = found.unwrap_or(buffer.len());
        input.consume(used);
        if found.is_some() {
            return Ok(if too_long { Line::TooLong } else { Line::Text });
        }
    }
}
