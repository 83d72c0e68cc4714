//! The guard functions: the one place where the precedence of docs/design.md §3 is applied.
//!
//! Precedence, first match wins:
//! capability → not found / auth → expired → terminal → version → legality → apply.
//!
//! Every store adapter, the MCP layer and the simulation ask these functions; none decides
//! policy on its own. They are pure: the record is looked up by the caller, and the time
//! is an argument.

use super::decision::Decision;
use super::digest::RequestDigest;
use super::era::Era;
use super::negotiation::{Negotiated, TaskSupport};
use super::record::TaskRecord;
use super::status::TaskStatus;
use crate::mutants::{Mutant, on};

/// A `tools/call` as the contract sees it.
#[derive(Clone, Copy, Debug)]
pub struct CreateRequest<'a> {
    /// The authorization key of the requestor; the task is bound to it.
    pub caller: &'a str,
    /// What this session negotiated.
    pub negotiated: Negotiated,
    /// `execution.taskSupport` of the named tool (absent or unknown tool: forbidden).
    pub task_support: TaskSupport,
    /// The request carried a `task` param.
    pub task_requested: bool,
    /// The caller's idempotency key, if the request carried one; scoped to `caller`.
    pub idempotency_key: Option<&'a str>,
    /// Digest of the request (tool name and arguments), compared on replay.
    pub digest: &'a RequestDigest,
}

/// Decides a `tools/call`.
///
/// `bound` is the record already bound to `(caller, idempotency_key)`, if any; the caller
/// looks it up (in the same transaction as the insert, for a store). Order:
/// capability → task support → idempotency → accept.
///
/// - Capability: a task requested without `tasks.requests.tools.call` creates nothing and
///   dispatches nothing.
/// - Idempotency binds only task creation: a synchronous call creates no task to replay.
/// - An expired bound record no longer holds its key (the binding lives as long as the
///   task record), so the call is admitted as new and the store rebinds the key.
pub fn guard_create(
    request: &CreateRequest<'_>,
    bound: Option<&TaskRecord>,
    now_ms: u64,
) -> Decision {
    if let Some(record) = bound {
        assert_eq!(
            record.auth_key, request.caller,
            "bound record of another caller passed to guard_create"
        );
        assert_eq!(
            record.idempotency_key.as_deref(),
            request.idempotency_key,
            "bound record with another idempotency key passed to guard_create"
        );
    }
    if request.task_requested
        && !request.negotiated.tools_call
        && !on(Mutant::CreateWithoutCapability)
    {
        return Decision::BlockCapability;
    }
    match (request.task_support, request.task_requested) {
        (TaskSupport::Required, false) if !on(Mutant::RequiredSyncAccepted) => {
            return Decision::BlockTaskRequired;
        }
        (TaskSupport::Forbidden, true) if !on(Mutant::ForbiddenTaskAccepted) => {
            return Decision::BlockTaskForbidden;
        }
        (_, false) => return Decision::AcceptNormal,
        (_, true) => {}
    }
    match bound {
        Some(record) if !record.is_expired(now_ms) => {
            if record.request_digest == *request.digest || on(Mutant::IdempotencyUnbound) {
                Decision::ReplayTask
            } else {
                Decision::BlockIdempotencyCollision
            }
        }
        _ => Decision::AcceptTask,
    }
}

/// Not found → auth → expired: the shared preamble of every operation on one task.
fn locate<'r>(
    caller: &str,
    record: Option<&'r TaskRecord>,
    now_ms: u64,
) -> Result<&'r TaskRecord, Decision> {
    locate_for(Access::Read, caller, record, now_ms)
}

/// What an operation does to the task it locates (the mutants remove checks per access).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Write,
}

fn locate_for<'r>(
    access: Access,
    caller: &str,
    record: Option<&'r TaskRecord>,
    now_ms: u64,
) -> Result<&'r TaskRecord, Decision> {
    let record = record.ok_or(Decision::BlockNotFound)?;
    let tenant_unchecked = match access {
        Access::Read => on(Mutant::ReadTenantUnchecked),
        Access::Write => on(Mutant::TransitionTenantUnchecked),
    };
    if record.auth_key != caller && !tenant_unchecked {
        return Err(Decision::BlockAuth);
    }
    let expiry_unchecked = access == Access::Write && on(Mutant::TransitionExpiryUnchecked);
    if record.is_expired(now_ms) && !expiry_unchecked {
        return Err(Decision::BlockExpired);
    }
    Ok(record)
}

/// Whether a status is latched: every terminal status, except under the mutant that
/// removes its latch.
pub fn latched(status: TaskStatus) -> bool {
    match status {
        TaskStatus::Cancelled => !on(Mutant::CancelledRewritable),
        TaskStatus::Completed => !on(Mutant::CompletedRewritable),
        TaskStatus::Failed => true,
        TaskStatus::Working | TaskStatus::InputRequired => false,
    }
}

/// A worker's (or the sweeper's) write: "move this task from `expected_version` to `next`".
#[derive(Clone, Copy, Debug)]
pub struct TransitionRequest<'a> {
    /// The authorization key the write acts for (a worker carries the task's own).
    pub caller: &'a str,
    /// The record version the writer read; the write applies only at this version.
    pub expected_version: u64,
    /// The status to move to.
    pub next: TaskStatus,
    /// The write declares the task's point of no return (`working` → `working`, once).
    pub point_of_no_return: bool,
}

/// Decides a transition: not found / auth → expired → terminal → version → legality.
///
/// Terminal comes before version so that a redelivered completion of an already completed
/// task is recognised as the same fact (`IDEMPOTENT_TERMINAL`) whatever version it saw,
/// and a late completion of a cancelled task is a rewrite, not merely stale.
pub fn guard_transition(
    request: &TransitionRequest<'_>,
    record: Option<&TaskRecord>,
    now_ms: u64,
) -> Decision {
    let record = match locate_for(Access::Write, request.caller, record, now_ms) {
        Ok(record) => record,
        Err(decision) => return decision,
    };
    if latched(record.status) {
        return if record.status == request.next {
            Decision::IdempotentTerminal
        } else {
            Decision::BlockTerminalRewrite
        };
    }
    if record.version != request.expected_version && !on(Mutant::VersionUnchecked) {
        return Decision::BlockStaleVersion;
    }
    // A terminal status past the latch is one a mutant unlatched: written over like a
    // live one.
    let from_ok = |live_ok: bool| live_ok || record.status.is_terminal();
    let legal = if request.point_of_no_return {
        // Declared while working, once: the run is about to do what cannot be undone.
        from_ok(record.status == TaskStatus::Working)
            && request.next == TaskStatus::Working
            && record.irreversible_effect.is_none()
    } else {
        from_ok(record.status.can_transition_to(request.next))
    };
    if !legal {
        return Decision::BlockIllegalTransition;
    }
    Decision::ApplyTransition
}

/// `tasks/get`. It has no capability flag of its own in 2025-11-25: it comes with any task
/// support, and a caller must be able to poll a task it holds.
pub fn guard_get(caller: &str, record: Option<&TaskRecord>, now_ms: u64) -> Decision {
    match locate(caller, record, now_ms) {
        Ok(_) => Decision::ReturnStatus,
        Err(decision) => decision,
    }
}

/// `tasks/result`: wait while live, return the stored outcome once terminal.
pub fn guard_result(caller: &str, record: Option<&TaskRecord>, now_ms: u64) -> Decision {
    let record = match locate(caller, record, now_ms) {
        Ok(record) => record,
        Err(decision) => return decision,
    };
    match record.status {
        TaskStatus::Working => Decision::WaitTerminal,
        TaskStatus::InputRequired => Decision::WaitInput,
        TaskStatus::Completed | TaskStatus::Failed => Decision::ReturnResult,
        TaskStatus::Cancelled => Decision::ReturnCancelled,
    }
}

/// `tasks/cancel`: capability → not found / auth → expired → terminal → point of no
/// return (2026-07-28 only) → apply.
///
/// Cancellation is cooperative in 2026-07-28: a task past its point of no return
/// acknowledges the cancel and runs to its end. In 2025-11-25 a cancel must answer
/// `cancelled`, so it applies, and the status message says what was already under way.
pub fn guard_cancel(
    negotiated: Negotiated,
    caller: &str,
    record: Option<&TaskRecord>,
    now_ms: u64,
) -> Decision {
    if !negotiated.cancel && !on(Mutant::CancelWithoutCapability) {
        return Decision::BlockCapability;
    }
    let record = match locate_for(Access::Write, caller, record, now_ms) {
        Ok(record) => record,
        Err(decision) => return decision,
    };
    if latched(record.status) {
        return Decision::AlreadyTerminal;
    }
    if record.irreversible_effect.is_some()
        && record.era == Era::Extension2026
        && !on(Mutant::PointOfNoReturnIgnored)
    {
        return Decision::PastPointOfNoReturn;
    }
    Decision::ApplyCancel
}

/// `tasks/update` (2026-07-28): answers to a task's open input requests.
/// Not found / auth → expired → terminal → nothing open answered → apply.
///
/// Answers are eventually consistent: an answer to a key that is not open (never asked,
/// already answered, or the task is not waiting) is ignored, not refused.
pub fn guard_input<'k>(
    caller: &str,
    record: Option<&TaskRecord>,
    answered: impl IntoIterator<Item = &'k String>,
    now_ms: u64,
) -> Decision {
    let record = match locate_for(Access::Write, caller, record, now_ms) {
        Ok(record) => record,
        Err(decision) => return decision,
    };
    if latched(record.status) {
        return Decision::AlreadyTerminal;
    }
    let open = match (&record.status, &record.input_requests) {
        (TaskStatus::InputRequired, Some(open)) => open,
        _ => return Decision::IgnoreInput,
    };
    if answered.into_iter().any(|key| open.contains_key(key)) {
        Decision::ApplyInput
    } else {
        Decision::IgnoreInput
    }
}

/// What the list guard knows about the request's cursor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CursorCheck {
    /// No cursor: the first page.
    Absent,
    /// A cursor this caller was issued, untampered.
    Valid,
    /// Another caller's cursor, a tampered one, or garbage.
    Invalid,
}

/// `tasks/list`: capability → cursor → list (the filter is [`visible_tasks`]).
pub fn guard_list(negotiated: Negotiated, cursor: CursorCheck) -> Decision {
    if !negotiated.list && !on(Mutant::ListWithoutCapability) {
        return Decision::BlockCapability;
    }
    match cursor {
        CursorCheck::Invalid => Decision::BlockBadCursor,
        CursorCheck::Absent | CursorCheck::Valid => Decision::ListTenantFiltered,
    }
}

/// Where a page ends: keyset position `(created_at_ms, task_id)`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ListPosition {
    /// `created_at_ms` of the last task of the page (ms since the Unix epoch).
    pub created_at_ms: u64,
    /// Id of the last task of the page; breaks ties between equal creation times.
    pub task_id: String,
}

impl ListPosition {
    /// The position just after `record`: the next page starts strictly beyond it.
    pub fn of(record: &TaskRecord) -> ListPosition {
        ListPosition {
            created_at_ms: record.created_at_ms,
            task_id: record.task_id.clone(),
        }
    }
}

/// The reference semantics of one list page: the caller's own unexpired tasks (exactly
/// what the caller could `tasks/get`), ordered by `(created_at_ms, task_id)`, strictly
/// after `after`, at most `limit`. Stores must return exactly this, filtering in their
/// query.
pub fn visible_tasks<'r>(
    caller: &str,
    records: impl IntoIterator<Item = &'r TaskRecord>,
    now_ms: u64,
    after: Option<&ListPosition>,
    limit: usize,
) -> Vec<&'r TaskRecord> {
    let mut visible: Vec<&TaskRecord> = records
        .into_iter()
        .filter(|record| list_shows(caller, record, now_ms))
        .filter(|record| after.is_none_or(|after| ListPosition::of(record) > *after))
        .collect();
    visible.sort_by_key(|record| (record.created_at_ms, record.task_id.clone()));
    visible.truncate(limit);
    visible
}

/// The list filter: the caller's own, unexpired. Stores apply the same in their query.
pub(crate) fn list_shows(caller: &str, record: &TaskRecord, now_ms: u64) -> bool {
    (record.auth_key == caller || on(Mutant::ListUnfiltered)) && !record.is_expired(now_ms)
}
