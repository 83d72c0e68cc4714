//! The built-in example tools `tasklatch serve` offers, one per `taskSupport` value:
//!
//! - `export` (`optional`): a long-running side effect, deferred (prepare → decide →
//!   publish, [`crate::runtime::effect`]). It works for `delay_ms`, checking between slices
//!   whether its task was cancelled, then *prepares* its file whole and invisible as
//!   `<exports>/.<task id>.json.tmp`. The runtime publishes it (a rename to
//!   `<exports>/<task id>.json`) only once the task's completion is decided, and removes it
//!   if a cancel won instead: a cancelled export leaves no file. Everything is idempotent by
//!   task id: a redelivered task finds its file (or its prepared file) and reuses it, so a
//!   crash anywhere never exports twice. Called without a task it runs synchronously under
//!   a fresh random id and publishes at once. With
//!   `confirm: true` it first asks its requestor (`input_required`, one
//!   `elicitation/create` with `requestedSchema` `{confirm: boolean}`, under the key
//!   `confirm`): accepted with `confirm: true`, it exports; anything else (declined,
//!   cancelled, `false`) ends the task with the `isError` result "export cancelled by the
//!   requestor" and writes no file. Only a task can ask: a synchronous call with
//!   `confirm: true` is an `isError` result saying so.
//! - `archive` (`required`): a short task; an item named `poison` makes it report
//!   `isError: true`, so the task ends `failed` and `tasks/result` returns that result.
//! - `echo` (`forbidden`): answers at once with its text.
//! - `notify` (`optional`): an effect that cannot be deferred or undone — it stands for a
//!   call to an outside API, and appends `{"task": ID, "message": M}` to
//!   `<exports>/notifications.jsonl`. It works for `delay_ms` (cancellable, like an
//!   export), then declares its **point of no return** ([`ToolStep::PointOfNoReturn`]);
//!   once the runtime has declared it on the task, the run appends the line and waits
//!   `call_ms` for the "response". A cancel before the declaration stops it with no line
//!   written; after it, a 2026-07-28 cancel is acknowledged and the task completes, and a
//!   2025-11-25 cancel ends the task `cancelled` with a status message naming the
//!   notification. Not idempotent: a worker killed after the append and before the
//!   completion write sends it again when its task is redelivered.
//!
//! Arguments are checked before anything is admitted: a bad argument is a `-32602`, not a
//! failed task.

use super::tools::{Catalog, ToolSpec, work_unless_cancelled};
use super::wire::RpcError;
use crate::contract::{InputMap, TaskOutcome, TaskSupport};
use crate::runtime::{BoxFuture, Effects, Env, InputAsk, Invocation, ToolStep, Tools};
use crate::store::TaskStore;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Longest an export may be asked to work.
pub const EXPORT_DELAY_MS_MAX: u64 = 600_000;
/// How often a working export looks for its cancellation.
const EXPORT_SLICE_MS: u64 = 100;

/// The example tools, over the exports folder and the store (to see cancellations).
pub(crate) struct ExampleTools {
    /// Folder the export files are committed to.
    pub(crate) exports: PathBuf,
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) env: Arc<dyn Env>,
    /// Also offer the conformance suite's fixture tools ([`super::suite_tools`]).
    pub(crate) conformance_tools: bool,
}

impl ExampleTools {
    fn is_suite_tool(&self, name: &str) -> bool {
        self.conformance_tools && super::suite_tools::NAMES.contains(&name)
    }
}

impl Catalog for ExampleTools {
    fn specs(&self) -> Vec<ToolSpec> {
        let mut specs = self.own_specs();
        if self.conformance_tools {
            specs.extend(super::suite_tools::specs());
        }
        specs
    }

    fn required_capability(&self, name: &str) -> Option<&'static str> {
        if self.is_suite_tool(name) {
            super::suite_tools::required_capability(name)
        } else {
            None
        }
    }

    fn prepare(
        &self,
        name: &str,
        _arguments: &Map<String, Value>,
        responses: &crate::contract::InputMap,
    ) -> Option<crate::runtime::InputAsk> {
        if self.is_suite_tool(name) {
            super::suite_tools::prepare(name, responses)
        } else {
            None
        }
    }

    /// Checks a call's arguments against the tool; the error names the argument.
    fn validate(&self, name: &str, arguments: &Map<String, Value>) -> Result<(), RpcError> {
        if self.is_suite_tool(name) {
            super::suite_tools::validate(name, arguments)
        } else {
            self.validate_own(name, arguments)
        }
    }

    fn call(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        task_id: Option<String>,
    ) -> BoxFuture<'static, ToolStep> {
        if self.is_suite_tool(name) {
            let (name, store, env) = (name.to_owned(), self.store.clone(), self.env.clone());
            let responses = task_id
                .as_deref()
                .and_then(|task_id| self.store.read(task_id).ok().flatten())
                .and_then(|task| task.input_responses)
                .unwrap_or_default();
            return Box::pin(async move {
                super::suite_tools::run(&name, arguments, task_id, responses, store, env).await
            });
        }
        self.call_own(name, arguments, task_id, InputMap::new(), false)
    }

    fn call_with_input(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        responses: &InputMap,
    ) -> BoxFuture<'static, ToolStep> {
        if self.is_suite_tool(name) {
            let (name, store, env) = (name.to_owned(), self.store.clone(), self.env.clone());
            let responses = responses.clone();
            return Box::pin(async move {
                super::suite_tools::run(&name, arguments, None, responses, store, env).await
            });
        }
        self.call(name, arguments, None)
    }
}

impl ExampleTools {
    fn own_specs(&self) -> Vec<ToolSpec> {
        vec![
            ToolSpec {
                name: "export",
                description: "Exports rows to a file: a long-running side effect, committed once per task.",
                input_schema: json!({
                    "type": "object",
                    "properties": {
                        "name": { "type": "string", "minLength": 1, "maxLength": 128 },
                        "rows": { "type": "integer", "minimum": 0, "maximum": 1_000_000 },
                        "delay_ms": { "type": "integer", "minimum": 0, "maximum": EXPORT_DELAY_MS_MAX },
                        "confirm": {
                            "type": "boolean",
                            "description": "Ask the requestor to confirm before writing (only as a task)."
                        }
                    },
                    "required": ["name"],
                    "additionalProperties": false
                }),
                task_support: TaskSupport::Optional,
            },
            ToolSpec {
                name: "archive",
                description: "Archives items; only as a task. An item named \"poison\" makes it fail.",
                input_schema: json!({
                    "type": "object",
                    "properties": {
                        "items": { "type": "array", "items": { "type": "string" }, "maxItems": 1000 }
                    },
                    "additionalProperties": false
                }),
                task_support: TaskSupport::Required,
            },
            ToolSpec {
                name: "echo",
                description: "Echoes its text at once; never as a task.",
                input_schema: json!({
                    "type": "object",
                    "properties": { "text": { "type": "string", "maxLength": 65536 } },
                    "required": ["text"],
                    "additionalProperties": false
                }),
                task_support: TaskSupport::Forbidden,
            },
            ToolSpec {
                name: "notify",
                description: "Sends a notification (an effect that cannot be undone): cancellable until its point of no return, then it runs to its end.",
                input_schema: json!({
                    "type": "object",
                    "properties": {
                        "message": { "type": "string", "minLength": 1, "maxLength": NOTIFY_MESSAGE_CHARS_MAX },
                        "delay_ms": { "type": "integer", "minimum": 0, "maximum": EXPORT_DELAY_MS_MAX },
                        "call_ms": { "type": "integer", "minimum": 0, "maximum": NOTIFY_CALL_MS_MAX }
                    },
                    "required": ["message"],
                    "additionalProperties": false
                }),
                task_support: TaskSupport::Optional,
            },
        ]
    }

    fn validate_own(&self, name: &str, arguments: &Map<String, Value>) -> Result<(), RpcError> {
        let bad = |message: String| Err(RpcError::invalid_params(message));
        let allowed: &[&str] = match name {
            "export" => &["name", "rows", "delay_ms", "confirm"],
            "archive" => &["items"],
            "notify" => &["message", "delay_ms", "call_ms"],
            "echo" => &["text"],
            other => return bad(format!("Unknown tool: {other}")),
        };
        if let Some(extra) = arguments
            .keys()
            .find(|key| !allowed.contains(&key.as_str()))
        {
            return bad(format!("{name}: unknown argument {extra:?}"));
        }
        match name {
            "export" => {
                match arguments.get("name") {
                    Some(Value::String(text))
                        if !text.is_empty() && text.chars().count() <= 128 => {}
                    _ => {
                        return bad(
                            "export: arguments.name must be a string of 1 to 128 characters".into(),
                        );
                    }
                }
                if !matches!(arguments.get("confirm"), None | Some(Value::Bool(_))) {
                    return bad("export: arguments.confirm must be a boolean".into());
                }
                check_bounded(
                    name,
                    arguments,
                    &[("rows", 1_000_000), ("delay_ms", EXPORT_DELAY_MS_MAX)],
                )?;
            }
            "notify" => {
                match arguments.get("message") {
                    Some(Value::String(text))
                        if !text.is_empty() && text.chars().count() <= NOTIFY_MESSAGE_CHARS_MAX => {
                    }
                    _ => {
                        return bad(format!(
                            "notify: arguments.message must be a string of 1 to {NOTIFY_MESSAGE_CHARS_MAX} characters"
                        ));
                    }
                }
                check_bounded(
                    name,
                    arguments,
                    &[
                        ("delay_ms", EXPORT_DELAY_MS_MAX),
                        ("call_ms", NOTIFY_CALL_MS_MAX),
                    ],
                )?;
            }
            "archive" => match arguments.get("items") {
                None => {}
                Some(Value::Array(items))
                    if items.len() <= 1000 && items.iter().all(Value::is_string) => {}
                Some(_) => {
                    return bad("archive: arguments.items must be at most 1000 strings".into());
                }
            },
            _ => match arguments.get("text") {
                Some(Value::String(text)) if text.len() <= 65_536 => {}
                _ => return bad("echo: arguments.text must be a string of at most 64 KiB".into()),
            },
        }
        Ok(())
    }

    /// `declared`: the task already passed its point of no return (`notify` then performs
    /// its effect).
    fn call_own(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        task_id: Option<String>,
        responses: InputMap,
        declared: bool,
    ) -> BoxFuture<'static, ToolStep> {
        let name = name.to_owned();
        let exports = self.exports.clone();
        let store = self.store.clone();
        let env = self.env.clone();
        Box::pin(async move {
            match name.as_str() {
                "export" => export(exports, store, env, arguments, task_id, responses).await,
                "notify" => notify(exports, store, env, arguments, task_id, declared).await,
                "archive" => {
                    env.sleep(200).await;
                    let items: Vec<&str> = arguments
                        .get("items")
                        .and_then(Value::as_array)
                        .map(|items| items.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    let poisoned = items.contains(&"poison");
                    let text = if poisoned {
                        "archive refused: an item is named \"poison\"".to_owned()
                    } else {
                        format!("archived {} items", items.len())
                    };
                    ToolStep::Finished(TaskOutcome::Result {
                        result: json!({
                            "content": [{ "type": "text", "text": text }],
                            "isError": poisoned,
                        }),
                    })
                }
                _ => {
                    let text = arguments
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    ToolStep::Finished(TaskOutcome::Result {
                        result: json!({ "content": [{ "type": "text", "text": text }], "isError": false }),
                    })
                }
            }
        })
    }
}

impl Tools for ExampleTools {
    fn run(&self, invocation: Invocation) -> BoxFuture<'static, ToolStep> {
        let arguments = match invocation.request.arguments {
            Some(Value::Object(arguments)) => arguments,
            _ => Map::new(),
        };
        if self.is_suite_tool(&invocation.request.name) {
            let (store, env) = (self.store.clone(), self.env.clone());
            return Box::pin(async move {
                let name = invocation.request.name;
                let (task_id, responses) = (
                    invocation.task.task_id,
                    invocation.task.input_responses.unwrap_or_default(),
                );
                super::suite_tools::run(&name, arguments, Some(task_id), responses, store, env)
                    .await
            });
        }
        let declared = invocation.task.irreversible_effect.is_some();
        let responses = invocation.task.input_responses.unwrap_or_default();
        self.call_own(
            &invocation.request.name,
            arguments,
            Some(invocation.task.task_id),
            responses,
            declared,
        )
    }
}

async fn export(
    exports: PathBuf,
    store: Arc<dyn TaskStore>,
    env: Arc<dyn Env>,
    arguments: Map<String, Value>,
    task_id: Option<String>,
    responses: InputMap,
) -> ToolStep {
    let name = arguments
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("export")
        .to_owned();
    let rows = arguments.get("rows").and_then(Value::as_u64).unwrap_or(100);
    let delay_ms = arguments
        .get("delay_ms")
        .and_then(Value::as_u64)
        .unwrap_or(2_000)
        .min(EXPORT_DELAY_MS_MAX);
    if arguments.get("confirm") == Some(&Value::Bool(true)) {
        if task_id.is_none() {
            return failed(
                "export: confirm: true asks the requestor, which only a task can do: call export as a task"
                    .into(),
            );
        }
        match responses.get(EXPORT_CONFIRM_KEY) {
            None => return ToolStep::NeedsInput(confirm_export(&name, rows)),
            Some(answer) if confirmed(answer) => {}
            Some(_) => return failed(EXPORT_CANCELLED.into()),
        }
    }
    let id = match &task_id {
        Some(task_id) => task_id.clone(),
        None => format!("sync-{:016x}{:016x}", env.random_u64(), env.random_u64()),
    };
    if !work_unless_cancelled(
        &*env,
        &*store,
        task_id.as_deref(),
        delay_ms,
        EXPORT_SLICE_MS,
    )
    .await
    {
        return failed(format!("export {id} stopped: its task was cancelled"));
    }
    let written = prepare_export(&exports, &id, &name, rows, &*env).and_then(|()| {
        if task_id.is_none() {
            // Nothing can cancel a synchronous call: publish at once.
            publish_export(&exports, &id)?;
        }
        Ok(())
    });
    if let Err(error) = written {
        return failed(format!("export {id} could not be written: {error}"));
    }
    let path = export_path(&exports, &id);
    let outcome = TaskOutcome::Result {
        result: json!({
            "content": [{
                "type": "text",
                "text": format!("exported {rows} rows of {name} as export-{id} ({})", path.display()),
            }],
            "structuredContent": { "export": format!("export-{id}"), "rows": rows },
            "isError": false,
        }),
    };
    match task_id {
        Some(_) => ToolStep::Prepared {
            outcome,
            message: None,
        },
        None => ToolStep::Finished(outcome),
    }
}

/// Each of `fields` present in `arguments` is an integer from 0 to its bound.
fn check_bounded(
    tool: &str,
    arguments: &Map<String, Value>,
    fields: &[(&str, u64)],
) -> Result<(), RpcError> {
    for &(field, max) in fields {
        match arguments.get(field) {
            None => {}
            Some(value) if value.as_u64().is_some_and(|n| n <= max) => {}
            Some(_) => {
                return Err(RpcError::invalid_params(format!(
                    "{tool}: arguments.{field} must be an integer from 0 to {max}"
                )));
            }
        }
    }
    Ok(())
}

/// Longest a `notify` message may be, in characters.
pub const NOTIFY_MESSAGE_CHARS_MAX: usize = 256;
/// Longest `notify`'s outside call may be asked to take.
pub const NOTIFY_CALL_MS_MAX: u64 = 60_000;
/// The file `notify` appends to, in the exports folder.
pub const NOTIFICATIONS_FILE: &str = "notifications.jsonl";

/// `notify`: cancellable work, the point of no return, then the irreversible append.
async fn notify(
    exports: PathBuf,
    store: Arc<dyn TaskStore>,
    env: Arc<dyn Env>,
    arguments: Map<String, Value>,
    task_id: Option<String>,
    declared: bool,
) -> ToolStep {
    let message = arguments
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let arg_ms = |field: &str, default_ms: u64, max_ms: u64| {
        arguments
            .get(field)
            .and_then(Value::as_u64)
            .unwrap_or(default_ms)
            .min(max_ms)
    };
    let (delay_ms, call_ms) = (
        arg_ms("delay_ms", 0, EXPORT_DELAY_MS_MAX),
        arg_ms("call_ms", 200, NOTIFY_CALL_MS_MAX),
    );
    let log = exports.join(NOTIFICATIONS_FILE);
    if task_id.is_some() && !declared {
        if !work_unless_cancelled(
            &*env,
            &*store,
            task_id.as_deref(),
            delay_ms,
            EXPORT_SLICE_MS,
        )
        .await
        {
            return failed("notify stopped before sending: its task was cancelled".into());
        }
        return ToolStep::PointOfNoReturn {
            effect: format!(
                "the notification {message:?} (appended to {})",
                log.display()
            ),
        };
    }
    if task_id.is_none() {
        env.sleep(delay_ms).await;
    }
    let id = task_id.unwrap_or_else(|| "sync".to_owned());
    let line = json!({ "task": id, "message": message }).to_string();
    if let Err(error) = append_line(&exports, &log, &line) {
        return failed(format!("notify {id}: {}: {error}", log.display()));
    }
    env.sleep(call_ms).await;
    ToolStep::Finished(TaskOutcome::Result {
        result: json!({
            "content": [{ "type": "text", "text": format!("notified: {message}") }],
            "isError": false,
        }),
    })
}

/// Appends one line and makes it durable (the "outside call" has happened once this
/// returns).
fn append_line(folder: &Path, file: &Path, line: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    std::fs::create_dir_all(folder)?;
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)?;
    log.write_all(format!("{line}\n").as_bytes())?;
    log.sync_data()
}

/// The input request key of `export`'s question.
pub const EXPORT_CONFIRM_KEY: &str = "confirm";
/// The text of the result of an export its requestor did not confirm.
pub const EXPORT_CANCELLED: &str = "export cancelled by the requestor";

/// `export`'s question: an `elicitation/create` (form) asking for `{confirm: boolean}`.
fn confirm_export(name: &str, rows: u64) -> InputAsk {
    let mut requests = Map::new();
    requests.insert(
        EXPORT_CONFIRM_KEY.into(),
        json!({
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": format!("Export {rows} rows of {name}?"),
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "confirm": {
                            "type": "boolean",
                            "title": "Export",
                            "description": "true to write the export file",
                        },
                    },
                    "required": ["confirm"],
                },
            },
        }),
    );
    InputAsk {
        message: format!("waiting for the requestor to confirm exporting {name}"),
        requests,
    }
}

/// Whether an `ElicitResult` accepts with `confirm: true`.
fn confirmed(answer: &Value) -> bool {
    answer.get("action").and_then(Value::as_str) == Some("accept")
        && answer.pointer("/content/confirm") == Some(&Value::Bool(true))
}

fn failed(text: String) -> ToolStep {
    ToolStep::Finished(TaskOutcome::Result {
        result: json!({ "content": [{ "type": "text", "text": text }], "isError": true }),
    })
}

/// The published export of `id`.
fn export_path(exports: &Path, id: &str) -> PathBuf {
    exports.join(format!("{id}.json"))
}

/// The prepared, unpublished export of `id` (a dot-file: hidden from listings).
fn prepared_path(exports: &Path, id: &str) -> PathBuf {
    exports.join(format!(".{id}{PREPARED_SUFFIX}"))
}

/// How a prepared export's file name ends, after `.<id>`.
const PREPARED_SUFFIX: &str = ".json.tmp";

/// Prepares `<exports>/.<id>.json.tmp`, whole (written under a name of its own, fsynced,
/// renamed), unless the export is already published or prepared (a redelivery). The file's
/// content follows from the arguments alone, so two racing deliveries prepare the same.
fn prepare_export(
    exports: &Path,
    id: &str,
    name: &str,
    rows: u64,
    env: &dyn Env,
) -> std::io::Result<()> {
    use std::io::Write as _;
    let prepared = prepared_path(exports, id);
    if export_path(exports, id).exists() || prepared.exists() {
        return Ok(());
    }
    std::fs::create_dir_all(exports)?;
    let partial = exports.join(format!(".{id}.{:016x}.part", env.random_u64()));
    let written = (|| {
        let mut file = std::fs::File::create(&partial)?;
        file.write_all(
            serde_json::to_string(&json!({ "export": id, "name": name, "rows": rows }))
                .expect("a JSON value serialises")
                .as_bytes(),
        )?;
        file.sync_all()?;
        std::fs::rename(&partial, &prepared)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written
}

/// Publishes `id`'s prepared export (rename, then fsync of the folder so the rename is
/// durable before the outbox entry is acknowledged). `Ok(true)` when this call published.
fn publish_export(exports: &Path, id: &str) -> std::io::Result<bool> {
    let (prepared, path) = (prepared_path(exports, id), export_path(exports, id));
    if path.exists() {
        // Published already; a late duplicate may have prepared a second copy.
        remove_if_present(&prepared)?;
        return Ok(false);
    }
    match std::fs::rename(&prepared, &path) {
        Ok(()) => {
            std::fs::File::open(exports)?.sync_all()?;
            Ok(true)
        }
        // Nothing prepared, or a racing settler published it first.
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(error),
    }
}

fn remove_if_present(path: &Path) -> std::io::Result<bool> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(error),
    }
}

/// The example tools' deferred effects are the exports: publish renames a prepared file
/// into place, discard removes it, and the sweeper finds prepared files by name.
impl Effects for ExampleTools {
    fn publish(&self, task_id: &str) -> Result<bool, String> {
        publish_export(&self.exports, task_id)
            .map_err(|error| format!("{}: {error}", self.exports.display()))
    }

    fn discard(&self, task_id: &str) -> Result<bool, String> {
        remove_if_present(&prepared_path(&self.exports, task_id))
            .map_err(|error| format!("{}: {error}", self.exports.display()))
    }

    fn prepared(&self, limit_max: usize) -> Result<Vec<String>, String> {
        let entries = match std::fs::read_dir(&self.exports) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(format!("{}: {error}", self.exports.display())),
        };
        let mut ids = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let id = name
                .to_str()
                .and_then(|name| name.strip_prefix('.'))
                .and_then(|name| name.strip_suffix(PREPARED_SUFFIX));
            if let Some(id) = id {
                ids.push(id.to_owned());
            }
        }
        // Directory order is the file system's: sort, so a capped batch is stable.
        ids.sort();
        ids.truncate(limit_max);
        Ok(ids)
    }
}
