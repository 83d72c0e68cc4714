//! What a session negotiated, and what each tool allows (`execution.taskSupport`).

use serde::{Deserialize, Serialize};

/// The task capabilities the *server* declared and the session negotiated
/// (`capabilities.tasks` of MCP 2025-11-25). Only the receiver side matters here:
/// tasklatch is the receiver of `tools/call` tasks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Negotiated {
    /// `tasks.requests.tools.call`: a `tools/call` may be task-augmented.
    pub tools_call: bool,
    /// `tasks.cancel`: `tasks/cancel` is served.
    pub cancel: bool,
    /// `tasks.list`: `tasks/list` is served (only where callers are identifiable).
    pub list: bool,
}

impl Negotiated {
    /// Everything on: an HTTP session with an identified caller.
    pub const FULL: Negotiated = Negotiated {
        tools_call: true,
        cancel: true,
        list: true,
    };
}

/// `Tool.execution.taskSupport`. An absent value means [`TaskSupport::Forbidden`]
/// (spec, server/tools.mdx), which is why this is the `Default`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum TaskSupport {
    /// The tool must be called without a `task` (the default when absent).
    #[default]
    Forbidden,
    /// The caller chooses: plain `tools/call` or a task.
    Optional,
    /// The tool must be called as a task; a plain call is refused.
    Required,
}

impl TaskSupport {
    /// Reads `Tool.execution.taskSupport` from the wire, where absence means forbidden.
    pub fn from_wire(value: Option<TaskSupport>) -> TaskSupport {
        value.unwrap_or_default()
    }

    /// The wire string (`"forbidden"`, `"optional"`, `"required"`).
    pub const fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}
