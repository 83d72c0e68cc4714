//! The report server's two tools, each a [`Tool`]: one effect that can wait, one that
//! cannot. Both keep to what the trait asks: idempotent per task id (a redelivered task
//! finds what its earlier run did), time and cancellation through the [`ToolCall`], and
//! settle methods that are harmless for a task they never saw.

use serde_json::{Map, Value, json};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use tasklatch::contract::{InputMap, TaskOutcome, TaskSupport};
use tasklatch::mcp::tools::ToolSpec;
use tasklatch::runtime::{BoxFuture, InputAsk, ToolStep};
use tasklatch::tool::{Tool, ToolCall};

/// Longest a tool may be asked to work.
const DELAY_MS_MAX: u64 = 60_000;
/// A prepared, unpublished report: `.<id>` + this.
const PREPARED_SUFFIX: &str = ".md.tmp";
/// The reviewer's answer's key.
const APPROVE_KEY: &str = "approve";

/// Writes a report file: prepared as `<dir>/.<id>.md.tmp`, published as `<dir>/<id>.md`.
pub struct PublishReport {
    dir: PathBuf,
}

impl PublishReport {
    pub fn new(dir: PathBuf) -> PublishReport {
        PublishReport { dir }
    }

    fn published(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.md"))
    }

    fn prepared_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!(".{id}{PREPARED_SUFFIX}"))
    }

    /// Prepares the report whole (written aside, then renamed), unless a redelivery finds
    /// it prepared or published already. Its content follows from the arguments alone.
    fn prepare(&self, id: &str, title: &str, nonce: u64) -> std::io::Result<()> {
        let prepared = self.prepared_path(id);
        if self.published(id).exists() || prepared.exists() {
            return Ok(());
        }
        std::fs::create_dir_all(&self.dir)?;
        let partial = self.dir.join(format!(".{id}.{nonce:016x}.part"));
        let written = (|| {
            let mut file = std::fs::File::create(&partial)?;
            file.write_all(format!("# {title}\n\nReport {id}.\n").as_bytes())?;
            file.sync_all()?;
            std::fs::rename(&partial, &prepared)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&partial);
        }
        written
    }

    async fn run_call(&self, call: ToolCall) -> ToolStep {
        let (title, delay_ms) = text_and_delay(&call, "title");
        if call.arguments.get("review") == Some(&Value::Bool(true)) {
            if call.task.is_none() {
                return text_result(
                    "review: true asks a reviewer, which only a task can do",
                    true,
                );
            }
            match call.answers.get(APPROVE_KEY) {
                None => return ToolStep::NeedsInput(ask_approval(&title)),
                Some(answer) if approved(answer) => {}
                Some(_) => return text_result("the reviewer did not approve the report", true),
            }
        }
        if !call.work_ms(delay_ms).await {
            return text_result("stopped: the task was cancelled", true);
        }
        let id = call.effect_id().to_owned();
        if let Err(error) = self.prepare(&id, &title, call.env().random_u64()) {
            return text_result(&format!("report {id} could not be written: {error}"), true);
        }
        let outcome = TaskOutcome::Result {
            result: json!({
                "content": [{"type": "text", "text": format!("published report {id}: {title}")}],
                "structuredContent": {"report": id},
                "isError": false,
            }),
        };
        if call.task.is_none() {
            // Nothing can cancel a synchronous call: publish at once.
            return match self.publish(&id) {
                Ok(_) => ToolStep::Finished(outcome),
                Err(error) => text_result(&error, true),
            };
        }
        ToolStep::Prepared {
            outcome,
            message: Some(format!("report {id} written, publishing")),
        }
    }
}

impl Tool for PublishReport {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "publish_report",
            description: "Writes a report file; a cancelled report leaves no file.",
            input_schema: json!({
                "type": "object",
                "properties": {
                    "title": {"type": "string", "minLength": 1, "maxLength": 128},
                    "delay_ms": {"type": "integer", "minimum": 0, "maximum": DELAY_MS_MAX},
                    "review": {"type": "boolean", "description": "ask a reviewer to approve first"},
                },
                "required": ["title"],
                "additionalProperties": false,
            }),
            task_support: TaskSupport::Optional,
        }
    }

    fn validate(&self, arguments: &Map<String, Value>) -> Result<(), String> {
        only(arguments, &["title", "delay_ms", "review"])?;
        match arguments.get("title") {
            Some(Value::String(title)) if (1..=128).contains(&title.chars().count()) => {}
            _ => return Err("title must be a string of 1 to 128 characters".into()),
        }
        delay_ms_valid(arguments)?;
        match arguments.get("review") {
            None | Some(Value::Bool(_)) => Ok(()),
            Some(_) => Err("review must be a boolean".into()),
        }
    }

    fn run(&self, call: ToolCall) -> BoxFuture<'static, ToolStep> {
        let tool = PublishReport::new(self.dir.clone());
        Box::pin(async move { tool.run_call(call).await })
    }

    /// Renames the prepared report into place, then syncs the folder, so the rename is
    /// durable before the task's outbox entry is acknowledged.
    fn publish(&self, task_id: &str) -> Result<bool, String> {
        let (prepared, published) = (self.prepared_path(task_id), self.published(task_id));
        if published.exists() {
            // A late duplicate may have prepared a second copy.
            discard_file(&prepared)?;
            return Ok(false);
        }
        match std::fs::rename(&prepared, &published) {
            Ok(()) => std::fs::File::open(&self.dir)
                .and_then(|dir| dir.sync_all())
                .map(|()| true)
                .map_err(|error| format!("{}: {error}", self.dir.display())),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(error) => Err(format!("{}: {error}", prepared.display())),
        }
    }

    fn discard(&self, task_id: &str) -> Result<bool, String> {
        discard_file(&self.prepared_path(task_id))
    }

    fn prepared(&self, limit_max: usize) -> Result<Vec<String>, String> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(format!("{}: {error}", self.dir.display())),
        };
        let mut ids: Vec<String> = entries
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name();
                let id = name
                    .to_str()?
                    .strip_prefix('.')?
                    .strip_suffix(PREPARED_SUFFIX)?;
                Some(id.to_owned())
            })
            .collect();
        // Directory order is the file system's: sort, so a capped batch is stable.
        ids.sort();
        ids.truncate(limit_max);
        Ok(ids)
    }
}

/// Calls a webhook — here, appends `{"call": ID, "url": URL}` to `<dir>/webhooks.jsonl`,
/// standing for a POST that cannot be taken back.
pub struct CallWebhook {
    dir: PathBuf,
}

impl CallWebhook {
    pub fn new(dir: PathBuf) -> CallWebhook {
        CallWebhook { dir }
    }

    /// The call, made at most once per id: a redelivered task finds its line and does
    /// not call again (a real webhook would send the id as its idempotency key).
    fn call_once(&self, id: &str, url: &str) -> std::io::Result<bool> {
        let log = self.dir.join("webhooks.jsonl");
        let line = json!({"call": id, "url": url}).to_string();
        let made = match std::fs::read_to_string(&log) {
            Ok(text) => text.lines().any(|seen| {
                serde_json::from_str::<Value>(seen).is_ok_and(|seen| seen["call"] == id)
            }),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => false,
            Err(error) => return Err(error),
        };
        if made {
            return Ok(false);
        }
        std::fs::create_dir_all(&self.dir)?;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)?;
        file.write_all(format!("{line}\n").as_bytes())?;
        file.sync_all()?;
        Ok(true)
    }

    async fn run_call(&self, call: ToolCall) -> ToolStep {
        let (url, delay_ms) = text_and_delay(&call, "url");
        if !call.past_point_of_no_return() {
            if !call.work_ms(delay_ms).await {
                return text_result("stopped before calling: the task was cancelled", true);
            }
            if call.task.is_some() {
                // Declared on the task first; a cancel may still win, and then this tool
                // is not run again and nothing is called.
                return ToolStep::PointOfNoReturn {
                    effect: format!("POST {url}"),
                };
            }
        }
        let id = call.effect_id().to_owned();
        match self.call_once(&id, &url) {
            Ok(_) => text_result(&format!("called {url} ({id})"), false),
            Err(error) => text_result(&format!("calling {url} failed: {error}"), true),
        }
    }
}

impl Tool for CallWebhook {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "call_webhook",
            description: "POSTs to a webhook: cancellable until the call starts, not after.",
            input_schema: json!({
                "type": "object",
                "properties": {
                    "url": {"type": "string", "minLength": 1, "maxLength": 2048},
                    "delay_ms": {"type": "integer", "minimum": 0, "maximum": DELAY_MS_MAX},
                },
                "required": ["url"],
                "additionalProperties": false,
            }),
            task_support: TaskSupport::Optional,
        }
    }

    fn validate(&self, arguments: &Map<String, Value>) -> Result<(), String> {
        only(arguments, &["url", "delay_ms"])?;
        match arguments.get("url") {
            Some(Value::String(url)) if (1..=2048).contains(&url.len()) => {}
            _ => return Err("url must be a string of 1 to 2048 bytes".into()),
        }
        delay_ms_valid(arguments)
    }

    fn run(&self, call: ToolCall) -> BoxFuture<'static, ToolStep> {
        let tool = CallWebhook::new(self.dir.clone());
        Box::pin(async move { tool.run_call(call).await })
    }
}

fn only(arguments: &Map<String, Value>, allowed: &[&str]) -> Result<(), String> {
    match arguments
        .keys()
        .find(|key| !allowed.contains(&key.as_str()))
    {
        Some(extra) => Err(format!("unknown argument {extra:?}")),
        None => Ok(()),
    }
}

/// A validated string argument and `delay_ms` (default 1 s).
fn text_and_delay(call: &ToolCall, field: &str) -> (String, u64) {
    let text = call.arguments[field]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let delay_ms = call.arguments.get("delay_ms").and_then(Value::as_u64);
    (text, delay_ms.unwrap_or(1_000))
}

fn delay_ms_valid(arguments: &Map<String, Value>) -> Result<(), String> {
    match arguments.get("delay_ms") {
        None => Ok(()),
        Some(delay) if delay.as_u64().is_some_and(|ms| ms <= DELAY_MS_MAX) => Ok(()),
        Some(_) => Err(format!(
            "delay_ms must be an integer from 0 to {DELAY_MS_MAX}"
        )),
    }
}

fn discard_file(path: &Path) -> Result<bool, String> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(format!("{}: {error}", path.display())),
    }
}

fn text_result(text: &str, is_error: bool) -> ToolStep {
    ToolStep::Finished(TaskOutcome::Result {
        result: json!({"content": [{"type": "text", "text": text}], "isError": is_error}),
    })
}

fn ask_approval(title: &str) -> InputAsk {
    let mut requests = InputMap::new();
    requests.insert(
        APPROVE_KEY.into(),
        json!({
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": format!("Publish the report {title:?}?"),
                "requestedSchema": {
                    "type": "object",
                    "properties": {"approve": {"type": "boolean", "title": "Publish"}},
                    "required": ["approve"],
                },
            },
        }),
    );
    InputAsk {
        message: format!("waiting for a reviewer to approve {title:?}"),
        requests,
    }
}

/// Whether an `ElicitResult` accepts with `approve: true`.
fn approved(answer: &Value) -> bool {
    answer.get("action").and_then(Value::as_str) == Some("accept")
        && answer.pointer("/content/approve") == Some(&Value::Bool(true))
}
