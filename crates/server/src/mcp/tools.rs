//! What a server offers as tools: [`ToolSpec`] (one tool as `tools/list` shows it) and the
//! [`Catalog`] trait the server asks, plus the work loop every long tool shares. The
//! built-in example tools are in `mcp::examples` (feature `example-tools`).

use super::wire::RpcError;
use crate::contract::{TaskStatus, TaskSupport};
use crate::runtime::{BoxFuture, Env, ToolStep};
use crate::store::TaskStore;
use serde_json::{Map, Value, json};

/// One tool as `tools/list` shows it.
#[derive(Clone, Debug)]
pub struct ToolSpec {
    /// The name `tools/call` uses.
    pub name: &'static str,
    /// What the tool does, for the model and the user.
    pub description: &'static str,
    /// JSON Schema of the arguments object.
    pub input_schema: Value,
    /// Whether the tool may, must or must not run as a task.
    pub task_support: TaskSupport,
}

impl ToolSpec {
    /// The `Tool` object of a `tools/list` answer.
    pub fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "execution": { "taskSupport": self.task_support.as_str() },
        })
    }

    /// The `Tool` object of a 2026-07-28 `tools/list`: no `execution` (the server alone
    /// decides what runs as a task there).
    pub fn to_json_modern(&self) -> Value {
        json!({
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
        })
    }
}

/// The tools a server offers: what `tools/list` shows, how arguments are checked before
/// anything is admitted, and how a tool runs when called without a task. (Tasks run in
/// the runtime's workers, through [`crate::runtime::Tools`].)
pub trait Catalog: Send + Sync {
    /// Every tool offered, in `tools/list` order; read once when the server is built.
    fn specs(&self) -> Vec<ToolSpec>;
    /// Checks a call's arguments; the error names the argument.
    fn validate(&self, name: &str, arguments: &Map<String, Value>) -> Result<(), RpcError>;
    /// Input a tool needs before it can be admitted at all (2026-07-28 multi round-trip
    /// requests): `Some` asks the client, whose retry of the call brings `responses`.
    /// Most tools need none.
    fn prepare(
        &self,
        _name: &str,
        _arguments: &Map<String, Value>,
        _responses: &crate::contract::InputMap,
    ) -> Option<crate::runtime::InputAsk> {
        None
    }
    /// The client capability (`"sampling"`, `"elicitation"`, …) a tool needs declared on
    /// the request (2026-07-28 asks it per request); `None` for most tools.
    fn required_capability(&self, _name: &str) -> Option<&'static str> {
        None
    }
    /// Runs a tool synchronously with the answers a 2026-07-28 call brought
    /// (`inputResponses`); tools that ask nothing ignore them.
    fn call_with_input(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        _responses: &crate::contract::InputMap,
    ) -> BoxFuture<'static, ToolStep> {
        self.call(name, arguments, None)
    }
    /// Runs a tool synchronously (`task_id: None`) or for a task.
    fn call(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        task_id: Option<String>,
    ) -> BoxFuture<'static, ToolStep>;
}

/// Works (sleeps) `total_ms` in slices of `slice_ms`, looking after each whether the task
/// was cancelled; `false` once it was (its completion write would be refused anyway, so the
/// tool stops early). A synchronous call (`task_id: None`) works the whole time.
pub(crate) async fn work_unless_cancelled(
    env: &dyn Env,
    store: &dyn TaskStore,
    task_id: Option<&str>,
    total_ms: u64,
    slice_ms: u64,
) -> bool {
    let mut worked_ms = 0;
    while worked_ms < total_ms {
        let slice_ms = slice_ms.max(1).min(total_ms - worked_ms);
        env.sleep(slice_ms).await;
        worked_ms += slice_ms;
        if let Some(task_id) = task_id
            && let Ok(Some(record)) = store.read(task_id)
            && record.status == TaskStatus::Cancelled
        {
            return false;
        }
    }
    true
}
