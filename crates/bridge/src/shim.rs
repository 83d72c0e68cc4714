//! The shim process and the bridge protocol, tasklatch's side (docs/store-bridge.md).
//!
//! One shim serves one store module: tasklatch writes one JSON request a line to its stdin
//! and reads one JSON answer a line from its stdout, matched by `id`. A reader thread turns
//! stdout into lines; requests may overlap ([`Shim::send`] then [`Shim::wait`]), which
//! is how the race engine puts many calls on one task in flight. What the store throws is
//! an [`Answer::Thrown`]: data, judged by the engines. What breaks the bridge itself — a
//! module that does not load, a line that is not protocol, a call that does not answer
//! within the per-call timeout, a shim that exits — is a [`BridgeError`], and the command
//! exits 2 naming it.

use crate::spec::{Language, StoreSpec};
use serde_json::{Value, json};
use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The protocol version both sides speak.
pub const PROTOCOL: u64 = 1;
const NODE_SHIM: &str = include_str!("../shims/node-shim.mjs");
const PYTHON_SHIM: &str = include_str!("../shims/python_shim.py");
/// How long a shim may take to load the module and say hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(30);
/// The stderr lines kept for error messages.
const STDERR_LINES_MAX: usize = 40;

/// Why the bridge broke (not what the store did: that is an [`Answer`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BridgeError(pub String);

impl std::fmt::Display for BridgeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BridgeError {}

/// What a store call came to.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// It returned this value (`{"$undefined": true}` for JavaScript's `undefined`).
    Returned(Value),
    /// It threw or raised.
    Thrown(Thrown),
}

impl Answer {
    /// The value returned, if it returned.
    pub fn returned(&self) -> Option<&Value> {
        match self {
            Answer::Returned(value) => Some(value),
            Answer::Thrown(_) => None,
        }
    }
}

/// An error a store threw, as the shim saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Thrown {
    /// Its class (`Error`, `ValueError`).
    pub kind: String,
    /// Its message.
    pub message: String,
}

/// What the shim said about itself.
#[derive(Clone, Debug)]
pub struct Hello {
    /// `node v20.20.2`, `python 3.11.7`.
    pub runtime: String,
    /// Whether the store's clock is the shim's fake one.
    pub fake_clock: bool,
}

/// One line of the shim's stdout.
enum Line {
    Message(Value),
    NotProtocol(String),
    Closed,
}

/// A running shim and its store module.
pub struct Shim {
    spec: StoreSpec,
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Line>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    next_id: u64,
    arrived: BTreeMap<u64, Answer>,
    /// The rejections no call awaited (Node's `unhandledRejection`), as the shim reported.
    pub unhandled: Vec<Thrown>,
    /// What it said at start.
    pub hello: Hello,
    _scripts: Scripts,
}

/// The shim scripts, written where the runtime can run them; removed on drop.
struct Scripts(PathBuf);

impl Drop for Scripts {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Scripts {
    fn write() -> Result<Scripts, BridgeError> {
        let dir = std::env::temp_dir().join(format!(
            "tasklatch-bridge-{}-{}",
            std::process::id(),
            SCRIPT_DIRS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let write = |name: &str, text: &str| {
            std::fs::create_dir_all(&dir)
                .and_then(|()| std::fs::write(dir.join(name), text))
                .map_err(|error| BridgeError(format!("{}: cannot write: {error}", dir.display())))
        };
        write("node-shim.mjs", NODE_SHIM)?;
        write("python_shim.py", PYTHON_SHIM)?;
        Ok(Scripts(dir))
    }
}

/// Script directories made by this process (each shim gets its own).
static SCRIPT_DIRS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Shim {
    /// Starts the shim for `spec` and waits for its hello.
    pub fn start(spec: &StoreSpec) -> Result<Shim, BridgeError> {
        let scripts = Scripts::write()?;
        let mut command = command_for(spec, &scripts.0);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().map_err(|error| {
            BridgeError(format!(
                "cannot start `{}` for {}: {error}",
                spec.runtime_program(),
                spec.describe()
            ))
        })?;
        let stdin = child.stdin.take().expect("stdin was piped");
        let stdout = child.stdout.take().expect("stdout was piped");
        let stderr_pipe = child.stderr.take().expect("stderr was piped");
        let lines = spawn_reader(stdout);
        let stderr = spawn_stderr(stderr_pipe);
        let mut shim = Shim {
            spec: spec.clone(),
            child,
            stdin,
            lines,
            stderr,
            next_id: 1,
            arrived: BTreeMap::new(),
            unhandled: Vec::new(),
            hello: Hello {
                runtime: String::new(),
                fake_clock: false,
            },
            _scripts: scripts,
        };
        shim.hello = shim.read_hello()?;
        Ok(shim)
    }

    fn read_hello(&mut self) -> Result<Hello, BridgeError> {
        let message = match self.lines.recv_timeout(HELLO_TIMEOUT) {
            Ok(Line::Message(message)) => message,
            Ok(Line::NotProtocol(line)) => return Err(self.not_protocol(&line)),
            Ok(Line::Closed) | Err(RecvTimeoutError::Disconnected) => {
                return Err(self.exited("before it said hello"));
            }
            Err(RecvTimeoutError::Timeout) => {
                return Err(BridgeError(format!(
                    "{}: the shim did not say hello within {HELLO_TIMEOUT:?} (a module that \
                     hangs while loading?){}",
                    self.spec.describe(),
                    self.stderr_tail()
                )));
            }
        };
        if let Some(fatal) = message.get("fatal") {
            return Err(BridgeError(format!(
                "{}: {} failed: {}{}",
                self.spec.describe(),
                fatal["stage"].as_str().unwrap_or("start"),
                fatal["message"].as_str().unwrap_or("(no message)"),
                self.stderr_tail()
            )));
        }
        let hello = &message["hello"];
        if hello["bridge"] != PROTOCOL {
            return Err(BridgeError(format!(
                "{}: the shim's first line is not a protocol {PROTOCOL} hello: {message}",
                self.spec.describe()
            )));
        }
        Ok(Hello {
            runtime: format!(
                "{} {}",
                hello["language"].as_str().unwrap_or("?"),
                hello["runtime"].as_str().unwrap_or("?")
            ),
            fake_clock: hello["clock"] == "fake",
        })
    }

    /// Sends `request` (an object without `id`) and returns its id; the answer is
    /// collected by [`Shim::wait`].
    pub fn send(&mut self, mut request: Value) -> Result<u64, BridgeError> {
        let id = self.next_id;
        self.next_id += 1;
        request["id"] = json!(id);
        let line = request.to_string() + "\n";
        self.stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.flush())
            .map_err(|error| self.exited(&format!("when sent a request ({error})")))?;
        Ok(id)
    }

    /// The answer to request `id`, within `timeout`.
    pub fn wait(&mut self, id: u64, timeout: Duration) -> Result<Answer, BridgeError> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(answer) = self.arrived.remove(&id) {
                return Ok(answer);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(Line::Message(message)) => self.sort(message)?,
                Ok(Line::NotProtocol(line)) => return Err(self.not_protocol(&line)),
                Ok(Line::Closed) | Err(RecvTimeoutError::Disconnected) => {
                    return Err(self.exited("while a call was in flight"));
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(BridgeError(format!(
                        "{}: request {id} got no answer within {timeout:?} (a store call that \
                         hangs?){}",
                        self.spec.describe(),
                        self.stderr_tail()
                    )));
                }
            }
        }
    }

    fn sort(&mut self, message: Value) -> Result<(), BridgeError> {
        if let Some(unhandled) = message.get("unhandled") {
            self.unhandled.push(thrown_of(unhandled));
            return Ok(());
        }
        if let Some(problem) = message.get("bridge_error") {
            return Err(BridgeError(format!(
                "{}: the shim refused a request: {problem}",
                self.spec.describe()
            )));
        }
        let Some(id) = message["id"].as_u64() else {
            return Err(self.not_protocol(&message.to_string()));
        };
        let answer = match (message.get("ok"), message.get("thrown")) {
            (Some(value), None) => Answer::Returned(value.clone()),
            (None, Some(thrown)) => Answer::Thrown(thrown_of(thrown)),
            _ => return Err(self.not_protocol(&message.to_string())),
        };
        self.arrived.insert(id, answer);
        Ok(())
    }

    /// Sends `request` and waits for its answer.
    pub fn request(&mut self, request: Value, timeout: Duration) -> Result<Answer, BridgeError> {
        let id = self.send(request)?;
        self.wait(id, timeout)
    }

    /// The shim's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILLs the shim (the restart engine's crash).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The language's runtime and the spec it serves.
    pub fn spec(&self) -> &StoreSpec {
        &self.spec
    }

    fn not_protocol(&self, line: &str) -> BridgeError {
        let shown: String = line.chars().take(200).collect();
        BridgeError(format!(
            "{}: the shim printed a line that is not the bridge protocol (does the store \
             write to stdout?): {shown}",
            self.spec.describe()
        ))
    }

    fn exited(&mut self, when: &str) -> BridgeError {
        let status = self
            .child
            .wait()
            .map_or("?".to_owned(), |status| status.to_string());
        BridgeError(format!(
            "{}: the shim exited ({status}) {when}{}",
            self.spec.describe(),
            self.stderr_tail()
        ))
    }

    fn stderr_tail(&self) -> String {
        // Let the stderr thread catch the last lines of a shim that just died.
        std::thread::sleep(Duration::from_millis(50));
        let lines = self
            .stderr
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let relevant: Vec<&String> = lines
            .iter()
            .filter(|line| {
                !line.contains("ExperimentalWarning") && !line.contains("--trace-warnings")
            })
            .collect();
        if relevant.is_empty() {
            String::new()
        } else {
            let start = relevant.len().saturating_sub(8);
            let shown: Vec<&str> = relevant[start..].iter().map(|line| line.as_str()).collect();
            format!("; its stderr ends:\n  {}", shown.join("\n  "))
        }
    }
}

impl Drop for Shim {
    fn drop(&mut self) {
        self.kill();
    }
}

fn thrown_of(value: &Value) -> Thrown {
    Thrown {
        kind: value["type"].as_str().unwrap_or("?").to_owned(),
        message: value["message"].as_str().unwrap_or("").to_owned(),
    }
}

fn command_for(spec: &StoreSpec, scripts: &Path) -> Command {
    let clock = if spec.fake_clock { "fake" } else { "real" };
    match spec.language {
        Language::Node => {
            let mut command = Command::new(spec.runtime_program());
            command
                .arg(scripts.join("node-shim.mjs"))
                .arg(&spec.module)
                .arg(&spec.factory)
                .arg(spec.interface.name())
                .arg(clock);
            command
        }
        Language::Python => {
            let mut command = Command::new(spec.runtime_program());
            command
                .arg(scripts.join("python_shim.py"))
                .arg(format!("{}:{}", spec.module, spec.factory))
                .arg(spec.interface.name())
                .arg(clock);
            command
        }
    }
}

fn spawn_reader(stdout: std::process::ChildStdout) -> Receiver<Line> {
    let (sender, receiver) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line.trim().is_empty() {
                continue;
            }
            let parsed = match serde_json::from_str::<Value>(&line) {
                Ok(value) if value.is_object() => Line::Message(value),
                _ => Line::NotProtocol(line),
            };
            if sender.send(parsed).is_err() {
                return;
            }
        }
        let _ = sender.send(Line::Closed);
    });
    receiver
}

fn spawn_stderr(stderr: std::process::ChildStderr) -> Arc<Mutex<VecDeque<String>>> {
    let lines = Arc::new(Mutex::new(VecDeque::new()));
    let kept = lines.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let mut kept = kept
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if kept.len() == STDERR_LINES_MAX {
                kept.pop_front();
            }
            kept.push_back(line);
        }
    });
    lines
}
