//! A `tasklatch serve --http` process and a client of it: for the tests that kill, signal,
//! restart or flood servers.

use crate::process::{Killed, http_address, spawn_listening};
use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// One `tasklatch serve --http` process, its address and its stderr lines; killed (and
/// reaped) on drop.
pub struct ServeProcess {
    process: Killed,
    /// `host:port`.
    pub address: String,
    /// In a mutex so that clients on several threads may share the server.
    stderr: std::sync::Mutex<Receiver<String>>,
}

impl ServeProcess {
    /// Starts `BINARY serve --http 127.0.0.1:0 --store STORE --exports EXPORTS` with a
    /// tokens file in `folder` holding `tokens` (`(token, authorization key)`), plus `extra`
    /// arguments; returns once it listens.
    pub fn start(
        binary: &str,
        store: &str,
        exports: &Path,
        folder: &Path,
        tokens: &[(&str, &str)],
        extra: &[&str],
    ) -> ServeProcess {
        let tokens_file = folder.join("tokens.json");
        let map: serde_json::Map<String, Value> = tokens
            .iter()
            .map(|(token, key)| ((*token).to_owned(), json!(key)))
            .collect();
        std::fs::write(&tokens_file, json!({ "tokens": map }).to_string()).expect("tokens");
        let mut command = Command::new(binary);
        command
            .args([
                "serve",
                "--http",
                "127.0.0.1:0",
                "--store",
                store,
                "--tokens",
            ])
            .arg(&tokens_file)
            .arg("--exports")
            .arg(exports)
            .args(extra)
            .stderr(Stdio::piped());
        let (mut process, announced) =
            spawn_listening(&mut command).unwrap_or_else(|error| panic!("{error}"));
        let address = http_address(&announced)
            .unwrap_or_else(|| panic!("expected `listening http://ADDR/mcp`, got {announced:?}"))
            .to_owned();
        let stderr = process.0.stderr.take().expect("stderr is piped");
        let (send, receive) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        ServeProcess {
            process,
            address,
            stderr: std::sync::Mutex::new(receive),
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.process.0.id()
    }

    /// Waits up to `within` for a stderr line `wanted` accepts; returns it.
    pub fn line(&self, within: Duration, wanted: impl Fn(&str) -> bool) -> Option<String> {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.lock().expect("stderr").recv_timeout(left) {
                Ok(line) if wanted(&line) => return Some(line),
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    /// Waits for a worker to say it holds `task_id` at `point` (`serve --hold-at`).
    pub fn held(&self, point: &str, task_id: &str) {
        let wanted = format!("hold {point} {task_id}");
        if self
            .line(Duration::from_secs(20), |line| line == wanted)
            .is_none()
        {
            panic!("no worker held {task_id} at {point}");
        }
    }

    /// What the server wrote on stderr so far (not yet read).
    pub fn said(&self) -> String {
        let lines = self.stderr.lock().expect("stderr");
        std::iter::from_fn(|| lines.try_recv().ok())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Sends SIGTERM (through `kill`, no libc binding needed).
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -TERM {}", self.pid());
    }

    /// Waits up to `within` for the process to exit; its status, or `None` if it is still
    /// running.
    pub fn exited(&mut self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            if let Ok(Some(status)) = self.process.0.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGKILL, and reaped.
    pub fn kill(self) {
        drop(self);
    }
}

/// A client of one server over HTTP: its token and session.
pub struct ServeClient {
    pub address: String,
    pub token: String,
    pub session: String,
}

impl ServeClient {
    /// A new session of `token` on the server at `address`.
    pub fn of(address: &str, token: &str) -> ServeClient {
        let session = crate::http::initialize(address, token).expect("initialize");
        ServeClient {
            address: address.to_owned(),
            token: token.to_owned(),
            session,
        }
    }

    /// The HTTP reply to a request.
    pub fn reply(&self, method: &str, params: Value) -> crate::http::Reply {
        let message = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        crate::http::rpc(&self.address, &self.token, Some(&self.session), &message)
            .unwrap_or_else(|error| panic!("{method}: {error}"))
    }

    /// The JSON-RPC answer to a request.
    pub fn answer(&self, method: &str, params: Value) -> Value {
        self.reply(method, params).json()
    }

    /// The `result` of a request, which must come.
    pub fn call(&self, method: &str, params: Value) -> Value {
        let answer = self.answer(method, params);
        assert!(answer["result"].is_object(), "{method}: {answer}");
        answer["result"].clone()
    }

    /// Creates an export task taking `delay_ms`; its id.
    pub fn export(&self, delay_ms: u64) -> String {
        let created = self.call(
            "tools/call",
            json!({
                "name": "export",
                "arguments": { "name": "effect", "delay_ms": delay_ms },
                "task": { "ttl": 600_000 },
            }),
        );
        created["task"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("a task: {created}"))
            .to_owned()
    }

    /// The task's status.
    pub fn status(&self, task_id: &str) -> String {
        self.call("tasks/get", json!({ "taskId": task_id }))["status"]
            .as_str()
            .unwrap_or("?")
            .to_owned()
    }

    /// `tasks/cancel`'s result, which must come.
    pub fn cancel(&self, task_id: &str) -> Value {
        self.call("tasks/cancel", json!({ "taskId": task_id }))
    }

    /// Polls every `every` until the task is terminal (at most `within`); its status.
    pub fn terminal_within(&self, task_id: &str, every: Duration, within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            let status = self.status(task_id);
            if matches!(status.as_str(), "completed" | "failed" | "cancelled") {
                return status;
            }
            assert!(Instant::now() < deadline, "{task_id} stayed {status}");
            std::thread::sleep(every);
        }
    }
}
