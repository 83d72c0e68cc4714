//! A minimal HTTP/1.1 client for the transport tests: one request per connection
//! (`Connection: close`), the raw status, headers and body back. No client crate: the
//! tests need malformed and oversized requests that a well-behaved client refuses to send.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The body as JSON; an SSE body yields its last event's data.
    pub fn json(&self) -> serde_json::Value {
        let text = if self
            .header("content-type")
            .is_some_and(|kind| kind.starts_with("text/event-stream"))
        {
            self.body
                .lines()
                .rev()
                .find_map(|line| line.strip_prefix("data: "))
                .unwrap_or("")
                .to_owned()
        } else {
            self.body.clone()
        };
        serde_json::from_str(&text).unwrap_or_else(|error| panic!("{error}: {text:?}"))
    }
}

/// Sends `method path` with `headers` and `body` to `address` (host:port).
pub fn request(
    address: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<Reply> {
    let mut stream = TcpStream::connect(address)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    // A server may answer (413) and close before reading a large body: not an error here.
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(key, value)| (key.trim().to_owned(), value.trim().to_owned()))
        .collect();
    let chunked = headers.iter().any(|(key, value)| {
        key.eq_ignore_ascii_case("transfer-encoding") && value.contains("chunked")
    });
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Ok(Reply {
        status,
        headers,
        body,
    })
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

/// A JSON-RPC POST to `/mcp` with a bearer token and, after initialize, a session.
pub fn rpc(
    address: &str,
    token: &str,
    session: Option<&str>,
    message: &serde_json::Value,
) -> std::io::Result<Reply> {
    rpc_accepting(
        address,
        token,
        session,
        message,
        "application/json, text/event-stream",
        &[],
    )
}

/// [`rpc`] with this `Accept` header (`application/json` alone: an answer whose status is
/// chosen when the call ends) and `extra` headers.
pub fn rpc_accepting(
    address: &str,
    token: &str,
    session: Option<&str>,
    message: &serde_json::Value,
    accept: &str,
    extra: &[(&str, &str)],
) -> std::io::Result<Reply> {
    let bearer = format!("Bearer {token}");
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", accept),
        ("Authorization", bearer.as_str()),
    ];
    if let Some(session) = session {
        headers.push(("Mcp-Session-Id", session));
    }
    headers.extend_from_slice(extra);
    request(
        address,
        "POST",
        "/mcp",
        &headers,
        message.to_string().as_bytes(),
    )
}

/// Initializes a session; returns its id.
pub fn initialize(address: &str, token: &str) -> std::io::Result<String> {
    let reply = rpc(
        address,
        token,
        None,
        &serde_json::json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "test", "version": "1" } }
        }),
    )?;
    reply
        .header("mcp-session-id")
        .map(str::to_owned)
        .ok_or_else(|| {
            std::io::Error::other(format!("no session id: {} {}", reply.status, reply.body))
        })
}

/// A POST whose SSE answer is read event by event while it is still open (a blocked
/// `tasks/result` that sends requests to the client before it answers).
pub struct EventStream {
    reader: std::io::BufReader<TcpStream>,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    chunked: bool,
    /// Body text read but not yet split into events.
    pending: String,
    ended: bool,
}

impl EventStream {
    /// Sends a JSON-RPC POST to `/mcp` (bearer `token`, `session`) and reads the head.
    pub fn post(
        address: &str,
        token: &str,
        session: &str,
        message: &serde_json::Value,
    ) -> std::io::Result<EventStream> {
        let mut stream = TcpStream::connect(address)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        let body = message.to_string();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nContent-Length: {}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Authorization: Bearer {token}\r\nMcp-Session-Id: {session}\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes())?;
        stream.write_all(body.as_bytes())?;
        let mut reader = std::io::BufReader::new(stream);
        let (status, headers) = read_head(&mut reader)?;
        let chunked = headers.iter().any(|(key, value)| {
            key.eq_ignore_ascii_case("transfer-encoding") && value.contains("chunked")
        });
        Ok(EventStream {
            reader,
            status,
            headers,
            chunked,
            pending: String::new(),
            ended: false,
        })
    }

    /// The next SSE event's data as JSON; `None` at the end of the stream.
    pub fn next_message(&mut self) -> Option<serde_json::Value> {
        loop {
            if let Some(at) = self.pending.find("\n\n") {
                let event: String = self.pending.drain(..at + 2).collect();
                let data: String = event
                    .lines()
                    .filter_map(|line| line.strip_prefix("data: "))
                    .collect();
                if data.is_empty() {
                    continue;
                }
                return Some(
                    serde_json::from_str(&data).unwrap_or_else(|error| panic!("{error}: {data}")),
                );
            }
            if self.ended || !self.read_more() {
                self.ended = true;
                return None;
            }
        }
    }

    /// Reads one chunk (or whatever is there) into `pending`; false at the end.
    fn read_more(&mut self) -> bool {
        use std::io::BufRead as _;
        if self.chunked {
            let mut size = String::new();
            if self.reader.read_line(&mut size).unwrap_or(0) == 0 {
                return false;
            }
            let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
                return false;
            };
            if size == 0 {
                return false;
            }
            let mut chunk = vec![0; size + 2];
            if self.reader.read_exact(&mut chunk).is_err() {
                return false;
            }
            chunk.truncate(size);
            self.pending.push_str(&String::from_utf8_lossy(&chunk));
            true
        } else {
            let mut buffer = [0; 4096];
            match self.reader.read(&mut buffer) {
                Ok(0) | Err(_) => false,
                Ok(read) => {
                    self.pending
                        .push_str(&String::from_utf8_lossy(&buffer[..read]));
                    true
                }
            }
        }
    }
}

/// Initializes a session whose client declares `capabilities`; returns its id.
pub fn initialize_with(
    address: &str,
    token: &str,
    capabilities: serde_json::Value,
) -> std::io::Result<String> {
    let reply = rpc(
        address,
        token,
        None,
        &serde_json::json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": { "protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": { "name": "test", "version": "1" } }
        }),
    )?;
    reply
        .header("mcp-session-id")
        .map(str::to_owned)
        .ok_or_else(|| {
            std::io::Error::other(format!("no session id: {} {}", reply.status, reply.body))
        })
}

/// Sends a JSON-RPC POST to `/mcp` and reads nothing back: the caller keeps the connection
/// for as long as it wants the call, and drops it to walk away from it (an abandoned
/// blocking call). `headers` go after the bearer token.
pub fn post_and_hold(
    address: &str,
    token: &str,
    headers: &[(&str, &str)],
    message: &serde_json::Value,
) -> std::io::Result<TcpStream> {
    let mut stream = TcpStream::connect(address)?;
    let body = message.to_string();
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Length: {}\r\n\
         Content-Type: application/json\r\nAuthorization: Bearer {token}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    Ok(stream)
}

/// One keep-alive HTTP/1.1 connection carrying request after request, as a real client's
/// connection pool does. JSON answers only (they carry `Content-Length`).
pub struct KeepAlive {
    reader: std::io::BufReader<TcpStream>,
    address: String,
}

impl KeepAlive {
    pub fn connect(address: &str) -> std::io::Result<KeepAlive> {
        let stream = TcpStream::connect(address)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        stream.set_nodelay(true)?;
        Ok(KeepAlive {
            reader: std::io::BufReader::new(stream),
            address: address.to_owned(),
        })
    }

    /// A JSON-RPC POST to `/mcp` on this connection, answered as JSON.
    pub fn rpc(
        &mut self,
        token: &str,
        session: Option<&str>,
        message: &serde_json::Value,
    ) -> std::io::Result<Reply> {
        let body = message.to_string();
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json\r\nAuthorization: Bearer {token}\r\n",
            self.address,
            body.len()
        );
        if let Some(session) = session {
            head.push_str(&format!("Mcp-Session-Id: {session}\r\n"));
        }
        head.push_str("\r\n");
        head.push_str(&body);
        self.reader.get_mut().write_all(head.as_bytes())?;
        let (status, headers) = read_head(&mut self.reader)?;
        if status == 0 {
            return Err(std::io::Error::other("connection closed before an answer"));
        }
        let length: usize = headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, value)| value.parse().ok())
            .ok_or_else(|| std::io::Error::other("no Content-Length"))?;
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body)?;
        Ok(Reply {
            status,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        })
    }
}

/// Reads a response's status line and headers (up to the blank line); status 0 when the
/// connection ended first.
fn read_head(
    reader: &mut std::io::BufReader<TcpStream>,
) -> std::io::Result<(u16, Vec<(String, String)>)> {
    use std::io::BufRead as _;
    let mut status_line = String::new();
    reader.read_line(&mut status_line)?;
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((key, value)) = line.split_once(':') {
            headers.push((key.trim().to_owned(), value.trim().to_owned()));
        }
    }
    Ok((status, headers))
}
