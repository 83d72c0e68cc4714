//! Task statuses and the legal transition table of MCP 2025-11-25 (`tasks.mdx` §"Task Status").

use serde::{Deserialize, Serialize};

/// The five statuses of the spec. Every task starts in [`TaskStatus::Working`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// `working`: admitted and being processed; the initial status.
    Working,
    /// `input_required`: waiting for the requestor to answer an elicitation.
    InputRequired,
    /// `completed` (terminal): the tool returned; `tasks/result` serves its result.
    Completed,
    /// `failed` (terminal): execution failed; `tasks/result` serves the error.
    Failed,
    /// `cancelled` (terminal): stopped by `tasks/cancel` before it finished.
    Cancelled,
}

impl TaskStatus {
    /// All statuses, in declaration order (for exhaustive tests and tables).
    pub const ALL: [TaskStatus; 5] = [
        TaskStatus::Working,
        TaskStatus::InputRequired,
        TaskStatus::Completed,
        TaskStatus::Failed,
        TaskStatus::Cancelled,
    ];

    /// `completed`, `failed` and `cancelled` are terminal: no transition leaves them, ever.
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }

    /// The spec's table: `working` ↔ `input_required`, both → any terminal status.
    /// A status never "transitions" to itself (that is not a change, and would bump the
    /// version for nothing); terminal statuses go nowhere.
    pub const fn can_transition_to(self, next: TaskStatus) -> bool {
        use TaskStatus::*;
        matches!(
            (self, next),
            (Working, InputRequired)
                | (InputRequired, Working)
                | (Working | InputRequired, Completed | Failed | Cancelled)
        )
    }

    /// The wire string (`"input_required"`, …), as in the schema's `TaskStatus`.
    pub const fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
