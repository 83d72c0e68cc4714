//! The two wire eras a task can be created in. The contract's decisions are the same in
//! both; what differs is how they reach the wire (docs/design.md §12), and one policy the
//! runtime applies at completion: what a tool's `isError` result means.

use serde::{Deserialize, Serialize};

/// The protocol era a task was admitted in; it is stored with the task, and the task is
/// served in that era's shapes for its whole life.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub enum Era {
    /// MCP 2025-11-25: the core protocol's experimental tasks (`task` param,
    /// `tasks/result`, `tasks/list`). Records written before eras existed are this.
    #[default]
    #[serde(rename = "2025-11-25")]
    Core2025,
    /// MCP 2026-07-28 with the `io.modelcontextprotocol/tasks` extension: server-directed
    /// creation, results inlined in `tasks/get`, input answered by `tasks/update`.
    #[serde(rename = "2026-07-28")]
    Extension2026,
}

impl Era {
    /// Both eras, oldest first.
    pub const ALL: [Era; 2] = [Era::Core2025, Era::Extension2026];

    /// The protocol version string (`"2025-11-25"`, `"2026-07-28"`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Era::Core2025 => "2025-11-25",
            Era::Extension2026 => "2026-07-28",
        }
    }

    /// The era a protocol version string names, if any.
    pub fn parse(text: &str) -> Option<Era> {
        Era::ALL.into_iter().find(|era| era.as_str() == text)
    }

    /// Whether this is the default era (records serialise without it then, as before eras).
    pub fn is_default(&self) -> bool {
        *self == Era::Core2025
    }

    /// Whether a tool result with `isError: true` ends the task `failed` (2025-11-25, as
    /// SDKs of that era map it) or `completed` (2026-07-28: `failed` is for protocol
    /// errors only).
    pub const fn tool_error_fails_task(self) -> bool {
        matches!(self, Era::Core2025)
    }
}

impl std::fmt::Display for Era {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
