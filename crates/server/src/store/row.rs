//! What the SQL adapters share about rows: the task columns, reading a row into a
//! [`TaskRecord`] or an [`OutboxClaim`] (a corrupted row becomes a [`StoreError::Corrupt`]
//! naming the task and the column, never a panic or a clamp), the checked integer
//! conversions into SQL, and the predicates the mutants reach into.

use super::{OutboxClaim, StoreError};
use crate::contract::{Era, InputMap, RequestDigest, TaskOutcome, TaskRecord, TaskStatus, latched};
use crate::mutants::{Mutant, on};
use serde::de::DeserializeOwned;

/// The task columns, in the order [`task_from_row`] reads them.
pub(crate) const TASK_COLUMNS: &str = "task_id, auth_key, method, tool_name, request_digest, \
    idempotency_key, status, version, created_at_ms, updated_at_ms, expires_at_ms, ttl_ms, \
    poll_interval_ms, cancel_requested, outcome, status_message, correlation_id, era, \
    input_requests, input_responses, irreversible_effect";

/// A result row of either driver: column `at` as the driver decodes it (`None` for NULL),
/// or the driver's reason it cannot.
pub(crate) trait SqlRow {
    fn text(&self, at: usize) -> Result<Option<String>, String>;
    fn int(&self, at: usize) -> Result<Option<i64>, String>;
    fn flag(&self, at: usize) -> Result<Option<bool>, String>;
}

/// The columns of a row whose column 0 is a task id: a value that does not decode is a
/// [`StoreError::Corrupt`] naming the task and the column (`name`).
pub(crate) struct Columns<'r, R: ?Sized> {
    row: &'r R,
    pub task_id: String,
}

impl<'r, R: SqlRow + ?Sized> Columns<'r, R> {
    pub fn new(row: &'r R, name: &'static str) -> Result<Self, StoreError> {
        let unread = Columns {
            row,
            task_id: "?".into(),
        };
        Ok(Columns {
            task_id: unread.text(0, name)?,
            row,
        })
    }

    pub fn corrupt(&self, name: &'static str, detail: String) -> StoreError {
        let task_id = self.task_id.clone();
        StoreError::Corrupt {
            task_id,
            column: name,
            detail,
        }
    }

    fn some<T>(&self, name: &'static str, value: Option<T>) -> Result<T, StoreError> {
        value.ok_or_else(|| self.corrupt(name, "NULL in a NOT NULL column".into()))
    }

    pub fn opt_text(&self, at: usize, name: &'static str) -> Result<Option<String>, StoreError> {
        self.row
            .text(at)
            .map_err(|detail| self.corrupt(name, detail))
    }

    pub fn text(&self, at: usize, name: &'static str) -> Result<String, StoreError> {
        self.some(name, self.opt_text(at, name)?)
    }

    /// The record holds times, durations and versions unsigned: a negative one is corrupt.
    pub fn opt_u64(&self, at: usize, name: &'static str) -> Result<Option<u64>, StoreError> {
        let value = self
            .row
            .int(at)
            .map_err(|detail| self.corrupt(name, detail))?;
        value
            .map(|v| {
                u64::try_from(v).map_err(|_| self.corrupt(name, format!("negative value {v}")))
            })
            .transpose()
    }

    pub fn u64(&self, at: usize, name: &'static str) -> Result<u64, StoreError> {
        self.some(name, self.opt_u64(at, name)?)
    }

    pub fn flag(&self, at: usize, name: &'static str) -> Result<bool, StoreError> {
        let value = self
            .row
            .flag(at)
            .map_err(|detail| self.corrupt(name, detail))?;
        self.some(name, value)
    }

    pub fn status(&self, at: usize, name: &'static str) -> Result<TaskStatus, StoreError> {
        let text = self.text(at, name)?;
        let status = TaskStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == text);
        status.ok_or_else(|| self.corrupt(name, format!("unknown status {text:?}")))
    }

    pub fn era(&self, at: usize, name: &'static str) -> Result<Era, StoreError> {
        let text = self.text(at, name)?;
        Era::parse(&text).ok_or_else(|| self.corrupt(name, format!("unknown era {text:?}")))
    }

    pub fn opt_json<T: DeserializeOwned>(
        &self,
        at: usize,
        name: &'static str,
    ) -> Result<Option<T>, StoreError> {
        let decode = |text: String| serde_json::from_str(&text);
        let value = self.opt_text(at, name)?.map(decode).transpose();
        value.map_err(|error| self.corrupt(name, format!("does not decode: {error}")))
    }
}

/// Decodes a row selected with [`TASK_COLUMNS`], checking the record's invariants.
pub(crate) fn task_from_row(row: &(impl SqlRow + ?Sized)) -> Result<TaskRecord, StoreError> {
    let columns = Columns::new(row, "task_id")?;
    let digest = columns.text(4, "request_digest")?;
    let record = TaskRecord {
        auth_key: columns.text(1, "auth_key")?,
        method: columns.text(2, "method")?,
        tool_name: columns.text(3, "tool_name")?,
        request_digest: RequestDigest::parse(&digest).ok_or_else(|| {
            columns.corrupt("request_digest", format!("not a sha256 digest: {digest:?}"))
        })?,
        idempotency_key: columns.opt_text(5, "idempotency_key")?,
        status: columns.status(6, "status")?,
        version: columns.u64(7, "version")?,
        created_at_ms: columns.u64(8, "created_at_ms")?,
        updated_at_ms: columns.u64(9, "updated_at_ms")?,
        expires_at_ms: columns.opt_u64(10, "expires_at_ms")?,
        ttl_ms: columns.opt_u64(11, "ttl_ms")?,
        poll_interval_ms: columns.opt_u64(12, "poll_interval_ms")?,
        cancel_requested: columns.flag(13, "cancel_requested")?,
        outcome: columns.opt_json::<TaskOutcome>(14, "outcome")?,
        status_message: columns.opt_text(15, "status_message")?,
        correlation_id: columns.text(16, "correlation_id")?,
        era: columns.era(17, "era")?,
        input_requests: columns.opt_json::<InputMap>(18, "input_requests")?,
        input_responses: columns.opt_json::<InputMap>(19, "input_responses")?,
        irreversible_effect: columns.opt_text(20, "irreversible_effect")?,
        task_id: columns.task_id.clone(),
    };
    match record.invariant_violation() {
        Some(violation) => Err(columns.corrupt("*", violation.to_owned())),
        None => Ok(record),
    }
}

/// The outbox half of a claim, from a row that starts `task_id, auth_key, request,
/// attempt`; the caller fills in the task's version and status.
pub(crate) fn claim_from_row<R: SqlRow + ?Sized>(
    columns: &Columns<'_, R>,
    lease_expires_at_ms: u64,
) -> Result<OutboxClaim, StoreError> {
    let attempt = columns.u64(3, "outbox.attempt")?;
    let request = columns.opt_json(2, "outbox.request")?;
    Ok(OutboxClaim {
        task_id: columns.task_id.clone(),
        auth_key: columns.text(1, "outbox.auth_key")?,
        request: columns.some("outbox.request", request)?,
        attempt: u32::try_from(attempt).map_err(|_| {
            columns.corrupt("outbox.attempt", format!("{attempt} is beyond u32::MAX"))
        })?,
        lease_expires_at_ms,
        task_version: 0,
        task_status: TaskStatus::Working,
    })
}

/// u64 → SQL BIGINT, refusing a value SQL cannot hold (never clamping it: a time or
/// version stored as another number would be a different fact).
pub(crate) fn sql_int(value: u64, what: &str) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| {
        StoreError::Invalid(format!(
            "{what} {value} is too large to store (at most {})",
            i64::MAX
        ))
    })
}

/// A `LIMIT` bound: a count beyond BIGINT asks for everything, so it clamps (on purpose,
/// unlike [`sql_int`]: no stored fact changes).
pub(crate) fn sql_limit(count: usize) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// A task record as the parameters of an insert in [`TASK_COLUMNS`] order, checked: a
/// record that breaks its invariants, or whose integers SQL cannot hold, is refused
/// (`Invalid`) before the database is touched.
pub(crate) struct TaskParams<'a> {
    pub record: &'a TaskRecord,
    pub request_digest: &'a str,
    pub status: &'static str,
    pub version: i64,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    pub expires_at_ms: Option<i64>,
    pub ttl_ms: Option<i64>,
    pub poll_interval_ms: Option<i64>,
    pub outcome: Option<String>,
    pub era: &'static str,
    pub input_requests: Option<String>,
    pub input_responses: Option<String>,
}

impl<'a> TaskParams<'a> {
    pub(crate) fn of(record: &'a TaskRecord) -> Result<TaskParams<'a>, StoreError> {
        if let Some(violation) = record.invariant_violation() {
            let id = &record.task_id;
            return Err(StoreError::Invalid(format!("task {id}: {violation}")));
        }
        let int = |value: u64, column: &str| {
            sql_int(value, &format!("task {}: {column}", record.task_id))
        };
        let opt =
            |value: Option<u64>, column: &str| value.map(|value| int(value, column)).transpose();
        // The caller's own inputs first, so a too-large TTL is named as such rather than
        // as the expiry computed from it.
        let ttl_ms = opt(record.ttl_ms, "ttl_ms")?;
        let poll_interval_ms = opt(record.poll_interval_ms, "poll_interval_ms")?;
        Ok(TaskParams {
            record,
            request_digest: record.request_digest.as_str(),
            status: record.status.as_str(),
            created_at_ms: int(record.created_at_ms, "created_at_ms")?,
            updated_at_ms: int(record.updated_at_ms, "updated_at_ms")?,
            expires_at_ms: opt(record.expires_at_ms, "expires_at_ms")?,
            version: int(record.version, "version")?,
            ttl_ms,
            poll_interval_ms,
            outcome: encode_outcome(&record.outcome),
            era: record.era.as_str(),
            input_requests: encode_input(&record.input_requests),
            input_responses: encode_input(&record.input_responses),
        })
    }
}

pub(crate) fn encode_outcome(outcome: &Option<TaskOutcome>) -> Option<String> {
    outcome
        .as_ref()
        .map(|outcome| serde_json::to_string(outcome).expect("a TaskOutcome always serialises"))
}

pub(crate) fn encode_input(input: &Option<InputMap>) -> Option<String> {
    input
        .as_ref()
        .map(|input| serde_json::to_string(input).expect("a JSON map always serialises"))
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
    /// The write declares a point of no return (`working` → `working`, once).
    pub point_of_no_return: bool,
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
    let legal = |from: TaskStatus| {
        if params.point_of_no_return {
            from == TaskStatus::Working && next == TaskStatus::Working
        } else {
            from.can_transition_to(next)
        }
    };
    let sources: Vec<TaskStatus> = TaskStatus::ALL
        .into_iter()
        .filter(|from| legal(*from) || (from.is_terminal() && !latched(*from)))
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
    if params.point_of_no_return {
        clauses.push("irreversible_effect IS NULL".to_owned());
    }
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
