//! The decision vocabulary (docs/design.md §3): every guarded operation returns exactly one code.
//! The codes are stable strings, used in fixtures, logs and reports; never rename one.

use serde::{Deserialize, Serialize};

/// One verdict of the contract. Serialised as the exact upper-case code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Decision {
    // create (`tools/call`)
    /// A call without a task: the tool runs synchronously and nothing is stored.
    AcceptNormal,
    /// A new task is admitted: the record and its outbox entry are written together.
    AcceptTask,
    /// Same caller, idempotency key and digest as an unexpired task: that task is returned.
    ReplayTask,
    /// The caller's idempotency key is held by a task with another request digest.
    BlockIdempotencyCollision,
    /// The tool's `taskSupport` is `required` and the call carries no task.
    BlockTaskRequired,
    /// The tool's `taskSupport` is `forbidden` and the call asks for a task.
    BlockTaskForbidden,
    // shared by create, cancel and list
    /// The session did not negotiate the capability the request needs.
    BlockCapability,
    // transition (worker or sweeper write)
    /// The write is legal at the expected version: the status changes and the version bumps.
    ApplyTransition,
    /// The task already holds this same terminal status: nothing changes.
    IdempotentTerminal,
    /// The writer's expected version is not the stored one.
    BlockStaleVersion,
    /// The task is terminal and the write asks for another status: the latch holds.
    BlockTerminalRewrite,
    /// The status table forbids this step (e.g. `working` → `working`).
    BlockIllegalTransition,
    // shared by transition, read and cancel
    /// The task has expired (`now_ms >= expires_at_ms`).
    BlockExpired,
    /// The task belongs to another caller; indistinguishable from not found on the wire.
    BlockAuth,
    /// No task with this id.
    BlockNotFound,
    // read / cancel
    /// `tasks/get`: the task as stored.
    ReturnStatus,
    /// `tasks/result` on a `working` task: wait for a terminal status.
    WaitTerminal,
    /// `tasks/result` on an `input_required` task: wait until it ends.
    WaitInput,
    /// `tasks/result` on a `completed` or `failed` task: its stored result or error.
    ReturnResult,
    /// `tasks/result` on a `cancelled` task: the cancelled error.
    ReturnCancelled,
    /// `tasks/cancel` on a live task: it becomes `cancelled`.
    ApplyCancel,
    /// `tasks/cancel` on a 2026-07-28 task past its point of no return: acknowledged,
    /// nothing changes, the task runs to its end (cancellation there is cooperative).
    PastPointOfNoReturn,
    /// `tasks/cancel` on a terminal task: refused, nothing changes. (`tasks/update` on one
    /// too; in 2026-07-28 both are acknowledged on the wire all the same.)
    AlreadyTerminal,
    /// `tasks/update` answered at least one open input request: the answers are stored,
    /// and once none is open the task is `working` again.
    ApplyInput,
    /// `tasks/update` answered nothing that is open: nothing changes.
    IgnoreInput,
    // list
    /// `tasks/list`: a page of the caller's own unexpired tasks.
    ListTenantFiltered,
    /// The list cursor is not one this server issued to this caller (edited, foreign or garbage).
    BlockBadCursor,
}

/// The four surfaces of the contract; each owns a subset of the vocabulary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Surface {
    /// `tools/call`: creation and negotiation.
    Create,
    /// A worker or sweeper writing a status.
    Transition,
    /// `tasks/get`, `tasks/result`, `tasks/cancel`, `tasks/update`: the requestor's operations on one task.
    Read,
    /// `tasks/list`.
    List,
}

impl Surface {
    /// Every surface, in declaration order.
    pub const ALL: [Surface; 4] = [
        Surface::Create,
        Surface::Transition,
        Surface::Read,
        Surface::List,
    ];

    /// The lower-case name used in fixtures and reports (`"create"`, …).
    pub const fn as_str(self) -> &'static str {
        match self {
            Surface::Create => "create",
            Surface::Transition => "transition",
            Surface::Read => "read",
            Surface::List => "list",
        }
    }
}

impl Decision {
    /// Every code, in declaration order.
    pub const ALL: [Decision; 27] = [
        Decision::AcceptNormal,
        Decision::AcceptTask,
        Decision::ReplayTask,
        Decision::BlockIdempotencyCollision,
        Decision::BlockTaskRequired,
        Decision::BlockTaskForbidden,
        Decision::BlockCapability,
        Decision::ApplyTransition,
        Decision::IdempotentTerminal,
        Decision::BlockStaleVersion,
        Decision::BlockTerminalRewrite,
        Decision::BlockIllegalTransition,
        Decision::BlockExpired,
        Decision::BlockAuth,
        Decision::BlockNotFound,
        Decision::ReturnStatus,
        Decision::WaitTerminal,
        Decision::WaitInput,
        Decision::ReturnResult,
        Decision::ReturnCancelled,
        Decision::ApplyCancel,
        Decision::PastPointOfNoReturn,
        Decision::AlreadyTerminal,
        Decision::ApplyInput,
        Decision::IgnoreInput,
        Decision::ListTenantFiltered,
        Decision::BlockBadCursor,
    ];

    /// The stable code, e.g. `"BLOCK_STALE_VERSION"`.
    pub const fn code(self) -> &'static str {
        use Decision::*;
        match self {
            AcceptNormal => "ACCEPT_NORMAL",
            AcceptTask => "ACCEPT_TASK",
            ReplayTask => "REPLAY_TASK",
            BlockIdempotencyCollision => "BLOCK_IDEMPOTENCY_COLLISION",
            BlockTaskRequired => "BLOCK_TASK_REQUIRED",
            BlockTaskForbidden => "BLOCK_TASK_FORBIDDEN",
            BlockCapability => "BLOCK_CAPABILITY",
            ApplyTransition => "APPLY_TRANSITION",
            IdempotentTerminal => "IDEMPOTENT_TERMINAL",
            BlockStaleVersion => "BLOCK_STALE_VERSION",
            BlockTerminalRewrite => "BLOCK_TERMINAL_REWRITE",
            BlockIllegalTransition => "BLOCK_ILLEGAL_TRANSITION",
            BlockExpired => "BLOCK_EXPIRED",
            BlockAuth => "BLOCK_AUTH",
            BlockNotFound => "BLOCK_NOT_FOUND",
            ReturnStatus => "RETURN_STATUS",
            WaitTerminal => "WAIT_TERMINAL",
            WaitInput => "WAIT_INPUT",
            ReturnResult => "RETURN_RESULT",
            ReturnCancelled => "RETURN_CANCELLED",
            ApplyCancel => "APPLY_CANCEL",
            PastPointOfNoReturn => "PAST_POINT_OF_NO_RETURN",
            AlreadyTerminal => "ALREADY_TERMINAL",
            ApplyInput => "APPLY_INPUT",
            IgnoreInput => "IGNORE_INPUT",
            ListTenantFiltered => "LIST_TENANT_FILTERED",
            BlockBadCursor => "BLOCK_BAD_CURSOR",
        }
    }

    /// A refusal: the operation did not take effect and revealed nothing.
    pub const fn is_block(self) -> bool {
        use Decision::*;
        matches!(
            self,
            BlockIdempotencyCollision
                | BlockTaskRequired
                | BlockTaskForbidden
                | BlockCapability
                | BlockStaleVersion
                | BlockTerminalRewrite
                | BlockIllegalTransition
                | BlockExpired
                | BlockAuth
                | BlockNotFound
                | BlockBadCursor
        )
    }

    /// Whether this code belongs to `surface`'s vocabulary (docs/design.md §3 table).
    pub const fn belongs_to(self, surface: Surface) -> bool {
        use Decision::*;
        match surface {
            Surface::Create => matches!(
                self,
                AcceptNormal
                    | AcceptTask
                    | ReplayTask
                    | BlockIdempotencyCollision
                    | BlockTaskRequired
                    | BlockTaskForbidden
                    | BlockCapability
            ),
            Surface::Transition => matches!(
                self,
                ApplyTransition
                    | IdempotentTerminal
                    | BlockStaleVersion
                    | BlockTerminalRewrite
                    | BlockIllegalTransition
                    | BlockExpired
                    | BlockAuth
                    | BlockNotFound
            ),
            Surface::Read => matches!(
                self,
                ReturnStatus
                    | WaitTerminal
                    | WaitInput
                    | ReturnResult
                    | ReturnCancelled
                    | ApplyCancel
                    | PastPointOfNoReturn
                    | AlreadyTerminal
                    | ApplyInput
                    | IgnoreInput
                    | BlockCapability
                    | BlockAuth
                    | BlockNotFound
                    | BlockExpired
            ),
            Surface::List => matches!(self, ListTenantFiltered | BlockCapability | BlockBadCursor),
        }
    }
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}

impl std::fmt::Display for Surface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
