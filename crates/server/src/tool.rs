//! Your tools, run as durable tasks: one [`Tool`] trait per tool, gathered in a [`Toolbox`].
//!
//! A tool says what it is ([`Tool::spec`]), checks its arguments before anything is
//! admitted ([`Tool::validate`]), and runs ([`Tool::run`]) — synchronously for a plain
//! `tools/call`, or in a worker for a task. What makes a task honest is what the run
//! returns, and the runtime does the rest:
//!
//! - **An effect that can wait** (a file, a staged row, a queued message): the run
//!   *prepares* it under the task id, invisibly, and returns [`ToolStep::Prepared`]. The
//!   runtime decides the completion by compare-and-swap (a cancel can still win) and only
//!   then calls [`Tool::publish`] — or [`Tool::discard`] if the task ended any other way. A
//!   cancelled task leaves no effect; a crash between decide and publish is finished by the
//!   next delivery; [`Tool::prepared`] lets the sweeper discard what a dead worker left.
//! - **An effect that cannot wait** (a call to an outside API): the run returns
//!   [`ToolStep::PointOfNoReturn`] first. The runtime declares it on the task (a
//!   compare-and-swap a cancel can still win, and then the run is not repeated) and runs the
//!   tool again with [`ToolCall::past_point_of_no_return`] true: that run does the effect.
//! - **Input from the requestor**: [`ToolStep::NeedsInput`]; the run is repeated with the
//!   answers in [`ToolCall::answers`].
//!
//! What a tool must do, in a server and in the simulation alike:
//!
//! - be idempotent per task id: a task is delivered again after a crash anywhere between
//!   its effect and its completion write, so a second run must find and reuse what the
//!   first one did (name the effect by [`ToolCall::effect_id`]);
//! - make `publish`, `discard` and `prepared` idempotent per task id and harmless for a task
//!   it prepared nothing for (they are called for every task, whichever tool ran it);
//! - take time, sleep and randomness from [`ToolCall::env`] and wait with
//!   [`ToolCall::work_ms`] (which stops when the task is cancelled), never from the OS
//!   clock or a thread: then a simulated world can run the tool deterministically.
//!
//! ```
//! use serde_json::{Map, Value, json};
//! use tasklatch_server::contract::{TaskOutcome, TaskSupport};
//! use tasklatch_server::mcp::tools::ToolSpec;
//! use tasklatch_server::runtime::{BoxFuture, ToolStep};
//! use tasklatch_server::tool::{Tool, ToolCall, Toolbox};
//!
//! struct Shout;
//!
//! impl Tool for Shout {
//!     fn spec(&self) -> ToolSpec {
//!         ToolSpec {
//!             name: "shout",
//!             description: "Answers with its text in capitals.",
//!             input_schema: json!({"type": "object", "properties": {"text": {"type": "string"}}}),
//!             task_support: TaskSupport::Optional,
//!         }
//!     }
//!
//!     fn validate(&self, arguments: &Map<String, Value>) -> Result<(), String> {
//!         match arguments.get("text") {
//!             Some(Value::String(_)) => Ok(()),
//!             _ => Err("text must be a string".into()),
//!         }
//!     }
//!
//!     fn run(&self, call: ToolCall) -> BoxFuture<'static, ToolStep> {
//!         Box::pin(async move {
//!             let text = call.arguments["text"].as_str().unwrap_or_default().to_uppercase();
//!             ToolStep::Finished(TaskOutcome::Result {
//!                 result: json!({"content": [{"type": "text", "text": text}], "isError": false}),
//!             })
//!         })
//!     }
//! }
//!
//! let toolbox = Toolbox::new().with(Shout);
//! assert_eq!(toolbox.names(), ["shout"]);
//! ```

use crate::contract::{InputMap, TaskRecord, TaskStatus};
use crate::mcp::tools::{Catalog, ToolSpec};
use crate::mcp::wire::RpcError;
use crate::runtime::{BoxFuture, Effects, Env, Invocation, ToolStep, Tools};
use crate::store::TaskStore;
use serde_json::{Map, Value};
use std::sync::Arc;

/// How often [`ToolCall::work_ms`] looks for its task's cancellation.
const WORK_SLICE_MS: u64 = 100;

/// One tool of yours. Only [`Tool::spec`] and [`Tool::run`] are required; the effect
/// methods matter only to a tool that answers [`ToolStep::Prepared`].
pub trait Tool: Send + Sync {
    /// What `tools/list` shows; read once when the server is built.
    fn spec(&self) -> ToolSpec;

    /// Checks a call's arguments before anything is admitted: an `Err` is answered as
    /// invalid params (`-32602`, or an `isError` result in 2026-07-28), naming what is
    /// wrong. Keep it pure: it runs on the request path.
    fn validate(&self, _arguments: &Map<String, Value>) -> Result<(), String> {
        Ok(())
    }

    /// Runs the tool to its outcome, to a request for input, or to its point of no
    /// return. Idempotent per task id (see the module docs).
    fn run(&self, call: ToolCall) -> BoxFuture<'static, ToolStep>;

    /// Makes the effect this tool prepared for `task_id` visible; `Ok(false)` when it was
    /// already published or this tool prepared nothing for it.
    fn publish(&self, _task_id: &str) -> Result<bool, String> {
        Ok(false)
    }

    /// Drops what this tool prepared for `task_id`, never a published effect; `Ok(false)`
    /// when there was nothing.
    fn discard(&self, _task_id: &str) -> Result<bool, String> {
        Ok(false)
    }

    /// Task ids this tool holds a prepared, unpublished effect for, at most `limit_max`.
    fn prepared(&self, _limit_max: usize) -> Result<Vec<String>, String> {
        Ok(Vec::new())
    }
}

/// One run of a tool: its arguments, its task (none for a synchronous call), the answers
/// it was given, and the world it runs in.
pub struct ToolCall {
    /// The call's arguments, as [`Tool::validate`] accepted them.
    pub arguments: Map<String, Value>,
    /// The task as the worker read it; `None` for a synchronous call.
    pub task: Option<TaskRecord>,
    /// The requestor's answers to what the tool asked, by key (empty until asked).
    pub answers: InputMap,
    env: Arc<dyn Env>,
    store: Arc<dyn TaskStore>,
    sync_id: String,
}

impl ToolCall {
    /// The task's id, or `None` for a synchronous call.
    pub fn task_id(&self) -> Option<&str> {
        self.task.as_ref().map(|task| task.task_id.as_str())
    }

    /// The name to give this run's effect: the task id (so a redelivered task finds what
    /// an earlier run did), or for a synchronous call a fresh `sync-…` id.
    pub fn effect_id(&self) -> &str {
        self.task_id().unwrap_or(&self.sync_id)
    }

    /// Whether the runtime has declared this task's point of no return: this run is the
    /// one that performs the effect that cannot wait.
    pub fn past_point_of_no_return(&self) -> bool {
        self.task
            .as_ref()
            .is_some_and(|task| task.irreversible_effect.is_some())
    }

    /// The world's time, sleep and randomness (real or simulated).
    pub fn env(&self) -> &Arc<dyn Env> {
        &self.env
    }

    /// Works for `total_ms` of the world's time, looking every 100 ms for the task's
    /// cancellation: `false` when it was cancelled (stop, and leave no effect). A
    /// synchronous call cannot be cancelled.
    pub async fn work_ms(&self, total_ms: u64) -> bool {
        crate::mcp::tools::work_unless_cancelled(
            &*self.env,
            &*self.store,
            self.task_id(),
            total_ms,
            WORK_SLICE_MS,
        )
        .await
    }

    /// Whether the task was cancelled (read from the store now); `false` for a
    /// synchronous call, and when the store cannot be read (the completion write will
    /// find out).
    pub fn cancelled(&self) -> bool {
        self.task_id().is_some_and(|task_id| {
            matches!(self.store.read(task_id), Ok(Some(record)) if record.status == TaskStatus::Cancelled)
        })
    }
}

/// Your tools, by name, in `tools/list` order.
#[derive(Clone, Default)]
pub struct Toolbox {
    tools: Vec<(ToolSpec, Arc<dyn Tool>)>,
}

impl Toolbox {
    /// No tools yet.
    pub fn new() -> Toolbox {
        Toolbox::default()
    }

    /// Adds `tool`.
    ///
    /// # Panics
    ///
    /// When a tool of the same name is already in the box: two tools cannot answer one
    /// name, and that is a mistake in the server's code, not in its input.
    pub fn with(mut self, tool: impl Tool + 'static) -> Toolbox {
        let spec = tool.spec();
        assert!(
            self.find(spec.name).is_none(),
            "a tool named {:?} is already in the toolbox",
            spec.name
        );
        self.tools.push((spec, Arc::new(tool)));
        self
    }

    /// The tools' names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|(spec, _)| spec.name).collect()
    }

    fn find(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools
            .iter()
            .find(|(spec, _)| spec.name == name)
            .map(|(_, tool)| tool)
    }

    /// The toolbox wired to a store and a world: what a server and its runtime call.
    pub fn bind(self, store: Arc<dyn TaskStore>, env: Arc<dyn Env>) -> BoundToolbox {
        BoundToolbox {
            toolbox: self,
            store,
            env,
        }
    }
}

/// A [`Toolbox`] over a store and a world: the server's [`Catalog`], the runtime's
/// [`Tools`] and its [`Effects`] (each settle asks every tool; each answers for its own).
pub struct BoundToolbox {
    toolbox: Toolbox,
    store: Arc<dyn TaskStore>,
    env: Arc<dyn Env>,
}

impl BoundToolbox {
    fn call(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        task: Option<TaskRecord>,
        answers: InputMap,
    ) -> BoxFuture<'static, ToolStep> {
        let Some(tool) = self.toolbox.find(name) else {
            // Unreachable through the server (it answers unknown names before calling);
            // a task stored by another build may still name a tool this one lacks.
            return Box::pin(std::future::ready(ToolStep::Finished(
                crate::contract::TaskOutcome::RpcError {
                    code: crate::mcp::wire::code::INVALID_PARAMS,
                    message: format!("Unknown tool: {name}"),
                    data: None,
                },
            )));
        };
        let sync_id = match task {
            Some(_) => String::new(),
            None => format!(
                "sync-{:016x}{:016x}",
                self.env.random_u64(),
                self.env.random_u64()
            ),
        };
        tool.run(ToolCall {
            arguments,
            task,
            answers,
            env: self.env.clone(),
            store: self.store.clone(),
            sync_id,
        })
    }

    /// Runs `settle` on every tool, in order; true when any of them acted. Every tool is
    /// asked even after an error, so one tool's broken store does not strand another's.
    fn settle_all(
        &self,
        settle: impl Fn(&dyn Tool) -> Result<bool, String>,
    ) -> Result<bool, String> {
        let mut acted = false;
        let mut errors = Vec::new();
        for (spec, tool) in &self.toolbox.tools {
            match settle(&**tool) {
                Ok(done) => acted |= done,
                Err(error) => errors.push(format!("{}: {error}", spec.name)),
            }
        }
        match errors.is_empty() {
            true => Ok(acted),
            false => Err(errors.join("; ")),
        }
    }
}

impl Catalog for BoundToolbox {
    fn specs(&self) -> Vec<ToolSpec> {
        self.toolbox
            .tools
            .iter()
            .map(|(spec, _)| spec.clone())
            .collect()
    }

    fn validate(&self, name: &str, arguments: &Map<String, Value>) -> Result<(), RpcError> {
        let tool = self
            .toolbox
            .find(name)
            .ok_or_else(|| RpcError::invalid_params(format!("Unknown tool: {name}")))?;
        tool.validate(arguments)
            .map_err(|error| RpcError::invalid_params(format!("{name}: {error}")))
    }

    fn call_with_input(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        responses: &InputMap,
    ) -> BoxFuture<'static, ToolStep> {
        self.call(name, arguments, None, responses.clone())
    }

    fn call(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        task_id: Option<String>,
    ) -> BoxFuture<'static, ToolStep> {
        // The server calls this for synchronous calls only; a task's runs come through
        // `Tools::run` with the record the worker read.
        let task = task_id.and_then(|task_id| self.store.read(&task_id).ok().flatten());
        let answers = task
            .as_ref()
            .and_then(|task| task.input_responses.clone())
            .unwrap_or_default();
        self.call(name, arguments, task, answers)
    }
}

impl Tools for BoundToolbox {
    fn run(&self, invocation: Invocation) -> BoxFuture<'static, ToolStep> {
        let arguments = match invocation.request.arguments {
            Some(Value::Object(arguments)) => arguments,
            _ => Map::new(),
        };
        let answers = invocation.task.input_responses.clone().unwrap_or_default();
        self.call(
            &invocation.request.name,
            arguments,
            Some(invocation.task),
            answers,
        )
    }
}

impl Effects for BoundToolbox {
    fn publish(&self, task_id: &str) -> Result<bool, String> {
        self.settle_all(|tool| tool.publish(task_id))
    }

    fn discard(&self, task_id: &str) -> Result<bool, String> {
        self.settle_all(|tool| tool.discard(task_id))
    }

    fn prepared(&self, limit_max: usize) -> Result<Vec<String>, String> {
        let mut ids = Vec::new();
        for (spec, tool) in &self.toolbox.tools {
            let left = limit_max.saturating_sub(ids.len());
            if left == 0 {
                break;
            }
            let mut more = tool
                .prepared(left)
                .map_err(|error| format!("{}: {error}", spec.name))?;
            more.truncate(left);
            ids.append(&mut more);
        }
        Ok(ids)
    }
}
