//! The row shape shared by the SQL adapters, and its checked decoding: a corrupted row
//! becomes a [`StoreError::Corrupt`] naming the task and the column, never a panic.

use super::StoreError;
use crate::contract::{RequestDigest, TaskOutcome, TaskRecord, TaskStatus, latched};
use crate::mutants::{Mutant, on};

/// The task columns, in the order [`RawRow`] reads them.
pub(crate) const TASK_COLUMNS: &str = "task_id, auth_key, method, tool_name, request_digest, \
    idempotency_key, status, version, created_at_ms, updated_at_ms, expires_at_ms, ttl_ms, \
    poll_interval_ms, cancel_requested, outcome, status_message, correlation_id";

/// A task row as the driver hands it over, before any checking.
pub(crate) struct RawRow {
    pub task_id: String,
    pub auth_key: String,
    pub method: String,
    pub tool_name: String,
    pub request_digest: String,
    pub idempotency_key: Option<String>,
    pub status: String,
    pub version: i64,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    pub expires_at_ms: Option<i64>,
    pub ttl_ms: Option<i64>,
    pub poll_interval_ms: Option<i64>,
    pub cancel_requested: bool,
    pub outcome: Option<String>,
    pub status_message: Option<String>,
    pub correlation_id: String,
}

pub(crate) fn parse_status(text: &str) -> Option<TaskStatus> {
    TaskStatus::ALL
        .into_iter()
        .find(|status| status.as_str() == text)
}

impl RawRow {
    pub(crate) fn decode(self) -> Result<TaskRecord, StoreError> {
        let task_id = self.task_id;
        let corrupt = |column: &'static str, detail: String| StoreError::Corrupt {
            task_id: task_id.clone(),
            column,
            detail,
        };
        let unsigned = |column: &'static str, value: i64| {
            u64::try_from(value).map_err(|_| corrupt(column, format!("negative value {value}")))
        };
        let optional = |column: &'static str, value: Option<i64>| {
            value.map(|v| unsigned(column, v)).transpose()
        };
        let record = TaskRecord {
            auth_key: self.auth_key,
            method: self.method,
            tool_name: self.tool_name,
            request_digest: RequestDigest::parse(&self.request_digest).ok_or_else(|| {
                corrupt(
                    "request_digest",
                    format!("not a sha256 digest: {:?}", self.request_digest),
                )
            })?,
            idempotency_key: self.idempotency_key,
            status: parse_status(&self.status)
                .ok_or_else(|| corrupt("status", format!("unknown status {:?}", self.status)))?,
            version: unsigned("version", self.version)?,
            created_at_ms: unsigned("created_at_ms", self.created_at_ms)?,
            updated_at_ms: unsigned("updated_at_ms", self.updated_at_ms)?,
            expires_at_ms: optional("expires_at_ms", self.expires_at_ms)?,
            ttl_ms: optional("ttl_ms", self.ttl_ms)?,
            poll_interval_ms: optional("poll_interval_ms", self.poll_interval_ms)?,
            cancel_requested: self.cancel_requested,
            outcome: self
                .outcome
                .map(|text| serde_json::from_str::<TaskOutcome>(&text))
                .transpose()
                .map_err(|error| corrupt("outcome", format!("not a stored outcome: {error}")))?,
            status_message: self.status_message,
            correlation_id: self.correlation_id,
            task_id: task_id.clone(),
        };
        if let Some(violation) = record.invariant_violation() {
            return Err(corrupt("*", violation.to_owned()));
        }
        Ok(record)
    }
}

/// u64 → SQL BIGINT, refusing values SQL cannot hold.
pub(crate) fn sql_int(value: u64, what: &str) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| StoreError::Invalid(format!("{what} {value} exceeds i64")))
}

pub(crate) fn sql_opt_int(value: Option<u64>, what: &str) -> Result<Option<i64>, StoreError> {
    value.map(|value| sql_int(value, what)).transpose()
}

pub(crate) fn encode_outcome(outcome: &Option<TaskOutcome>) -> Option<String> {
    outcome
        .as_ref()
        .map(|outcome| serde_json::to_string(outcome).expect("a TaskOutcome always serialises"))
}

/// `'a', 'b'` — statuses as a SQL list. Built only from the closed status enum, never
/// from input, so it is safe to splice into SQL text.
fn status_list(statuses: &[TaskStatus]) -> String {
    statuses
        .iter()
        .map(|status| format!("'{}'", status.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The placeholders of a compare-and-swap statement, spelled in the adapter's dialect with
/// their types (`$6::TEXT`): a clause a mutant drops must still mention its parameter, or
/// the statement's parameter count changes.
pub(crate) struct CasParams<'a> {
    pub auth_key: &'a str,
    /// `None` when the statement does not pin a version (PostgreSQL's cancel).
    pub version: Option<&'a str>,
    pub now_ms: &'a str,
}

/// The guards of a transition or cancel, as `AND`ed clauses after `task_id = …`: the
/// caller owns the task, it is at the expected version, its status may move to `next`
/// (legal sources only, so terminal statuses are latched), and it has not expired. The same
/// rules as `contract::guard_transition`; each clause is dropped by exactly one mutant.
pub(crate) fn cas_predicate(next: TaskStatus, params: &CasParams<'_>) -> String {
    let kept = |guard: bool, clause: String, param: &str| {
        if guard {
            clause
        } else {
            format!("{param} IS NOT NULL")
        }
    };
    let sources: Vec<TaskStatus> = TaskStatus::ALL
        .into_iter()
        .filter(|from| from.can_transition_to(next) || (from.is_terminal() && !latched(*from)))
        .collect();
    let mut clauses = vec![kept(
        !on(Mutant::TransitionTenantUnchecked),
        format!("auth_key = {}", params.auth_key),
        params.auth_key,
    )];
    if let Some(version) = params.version {
        clauses.push(kept(
            !on(Mutant::VersionUnchecked),
            format!("version = {version}"),
            version,
        ));
    }
    clauses.push(format!("status IN ({})", status_list(&sources)));
    clauses.push(kept(
        !on(Mutant::TransitionExpiryUnchecked),
        format!(
            "(expires_at_ms IS NULL OR expires_at_ms > {})",
            params.now_ms
        ),
        params.now_ms,
    ));
    clauses.join(" AND ")
}

/// The tenant clause of a list query (dropped by the `list-unfiltered` mutant).
pub(crate) fn owner_clause(auth_key: &str) -> String {
    if on(Mutant::ListUnfiltered) {
        format!("{auth_key} IS NOT NULL")
    } else {
        format!("auth_key = {auth_key}")
    }
}
