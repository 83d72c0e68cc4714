//! The conformance suite can fail: a wrapper store (the public `TaskStore` API only,
//! delegating to a fresh `MemoryStore`) plants exactly one bug per variant of [`Bug`], and
//! `conformance::run_all` must fail on each — on the check the table names — while the
//! wrapper without a bug passes every check.
//!
//! The bugs are the kinds a store written from the trait's documentation gets wrong:
//! fields dropped or rewritten on the way out, page and batch edges, the data an outbox
//! claim carries, the lifetime of an idempotency key, and task id collisions. The last
//! eight are store bugs the simulation once passed blind (an error taken for an outage,
//! fields no scenario reached): the suite now reaches each of them too.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use tasklatch::conformance;
use tasklatch::contract::{Decision, Era, Negotiated, TaskOutcome, TaskRecord, TaskStatus};
use tasklatch::store::{
    Answer, CreateCommand, InputCommand, LIST_LIMIT_MAX, ListPage, ListQuery, MemoryStore,
    OutboxClaim, StoreError, StoreOptions, TaskStore, TransitionCommand, WrappedRequest,
    page_limit,
};

/// One planted bug each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bug {
    // Round-trip fidelity.
    DropsStatusMessage,
    DefaultsPollInterval,
    TruncatesCorrelationId,
    DropsRpcErrorData,
    UpdatedAtRunsBackwards,
    CancelKeepsOldMessage,
    ListServesCreationSnapshot,
    ImportResetsVersion,
    // Claim data.
    DropsNullArgumentsOnClaim,
    LosesNestedArgumentsOnClaim,
    BigIntegersAsFloatsOnClaim,
    AttemptNotIncremented,
    ClaimReportsEnqueuedVersion,
    LeaseOneTooLong,
    // Bounds and page edges.
    PageOneTooLong,
    NoCursorWhenOneLeft,
    LimitZeroListsNothing,
    LimitAboveMaxNotClamped,
    ExpiredListedAtExpiry,
    ClaimMaxZeroTakesOne,
    ClaimBatchUncapped,
    SweepIgnoresMax,
    // Idempotency key lifetime.
    ReleasesKeyWhenTerminal,
    KeepsKeyAfterSweep,
    ExpiredHolderKeepsKey,
    // Id collisions.
    OverwritesOnIdCollision,
    CollisionBindsKey,
    ImportPartialOnInnerDuplicate,
    // Found blind by the simulation before its fault accounting and field checks (each
    // passed the suite as it was then).
    ReplayErrsOnHashKey,
    FailedFromInputDropsOutcome,
    InputToWorkingKeepsMessage,
    PollIntervalOnlyWithTtl,
    ModernTtlDropped,
    AnswerKeepsUpdatedAt,
    CursorBeforeExpiredTail,
    SweepOneShort,
}

/// Each bug and the new check that must kill it.
const TABLE: &[(Bug, &str)] = &[
    (Bug::DropsStatusMessage, "transitions_round_trip"),
    (Bug::DefaultsPollInterval, "created_records_round_trip"),
    (Bug::TruncatesCorrelationId, "created_records_round_trip"),
    (Bug::DropsRpcErrorData, "transitions_round_trip"),
    (Bug::UpdatedAtRunsBackwards, "transitions_round_trip"),
    (Bug::CancelKeepsOldMessage, "transitions_round_trip"),
    (Bug::ListServesCreationSnapshot, "transitions_round_trip"),
    (Bug::ImportResetsVersion, "imports_round_trip"),
    (
        Bug::DropsNullArgumentsOnClaim,
        "claims_carry_what_was_stored",
    ),
    (
        Bug::LosesNestedArgumentsOnClaim,
        "claims_carry_what_was_stored",
    ),
    (
        Bug::BigIntegersAsFloatsOnClaim,
        "claims_carry_what_was_stored",
    ),
    (Bug::AttemptNotIncremented, "claims_carry_what_was_stored"),
    (
        Bug::ClaimReportsEnqueuedVersion,
        "claims_carry_what_was_stored",
    ),
    (Bug::LeaseOneTooLong, "claims_carry_what_was_stored"),
    (Bug::PageOneTooLong, "list_page_edges"),
    (Bug::NoCursorWhenOneLeft, "list_page_edges"),
    (Bug::LimitZeroListsNothing, "list_page_edges"),
    (Bug::LimitAboveMaxNotClamped, "list_page_edges"),
    (Bug::ExpiredListedAtExpiry, "list_page_edges"),
    (Bug::ClaimMaxZeroTakesOne, "claim_and_sweep_bounds"),
    (Bug::ClaimBatchUncapped, "claim_and_sweep_bounds"),
    (Bug::SweepIgnoresMax, "claim_and_sweep_bounds"),
    (Bug::ReleasesKeyWhenTerminal, "idempotency_key_lifetime"),
    (Bug::KeepsKeyAfterSweep, "idempotency_key_lifetime"),
    (Bug::ExpiredHolderKeepsKey, "idempotency_key_lifetime"),
    (Bug::OverwritesOnIdCollision, "task_id_collisions"),
    (Bug::CollisionBindsKey, "task_id_collisions"),
    (Bug::ImportPartialOnInnerDuplicate, "task_id_collisions"),
    (Bug::ReplayErrsOnHashKey, "idempotent_creation"),
    (Bug::FailedFromInputDropsOutcome, "transitions_round_trip"),
    (Bug::InputToWorkingKeepsMessage, "transitions_round_trip"),
    (Bug::PollIntervalOnlyWithTtl, "created_records_round_trip"),
    (Bug::ModernTtlDropped, "created_records_round_trip"),
    (Bug::AnswerKeepsUpdatedAt, "input_round_trip"),
    (Bug::CursorBeforeExpiredTail, "list_page_edges"),
    (Bug::SweepOneShort, "claim_and_sweep_bounds"),
];

/// What the wrapper remembers beside the inner store (for the bugs that need it).
#[derive(Default)]
struct Memo {
    /// Task id → the record as created.
    created: HashMap<String, TaskRecord>,
    /// (caller, key) → the task id that last took the key.
    holders: HashMap<(String, String), String>,
    /// Task id → the idempotency key to show instead of the stored one.
    shown_key: HashMap<String, Option<String>>,
    /// Task id → the updated_at to show.
    shown_updated: HashMap<String, u64>,
    /// Task id → the status message to show.
    shown_message: HashMap<String, Option<String>>,
    /// Task id → the record and request that "overwrote" it.
    overwritten: HashMap<String, (TaskRecord, WrappedRequest)>,
    /// (caller, key) of creates refused as duplicates.
    ghost_keys: HashMap<(String, String), String>,
    /// Task ids whose outcome is shown as none.
    dropped_outcome: BTreeSet<String>,
}

struct Buggy {
    inner: MemoryStore,
    bug: Option<Bug>,
    memo: Mutex<Memo>,
}

impl Buggy {
    fn is(&self, bug: Bug) -> bool {
        self.bug == Some(bug)
    }

    /// Every record on its way out.
    fn out(&self, mut record: TaskRecord) -> TaskRecord {
        let memo = self.memo.lock().unwrap();
        if let Some((overwritten, _)) = memo.overwritten.get(&record.task_id) {
            record = overwritten.clone();
        }
        if let Some(key) = memo.shown_key.get(&record.task_id) {
            record.idempotency_key = key.clone();
        }
        if let Some(updated) = memo.shown_updated.get(&record.task_id) {
            record.updated_at_ms = *updated;
        }
        if let Some(message) = memo.shown_message.get(&record.task_id) {
            record.status_message = message.clone();
        }
        match self.bug {
            Some(Bug::DropsStatusMessage) => record.status_message = None,
            Some(Bug::DefaultsPollInterval) => {
                record.poll_interval_ms = record.poll_interval_ms.or(Some(5_000))
            }
            Some(Bug::TruncatesCorrelationId) => {
                let cut = record.correlation_id.floor_char_boundary(8);
                record.correlation_id.truncate(cut);
            }
            Some(Bug::DropsRpcErrorData) => {
                if let Some(TaskOutcome::RpcError { data, .. }) = &mut record.outcome {
                    *data = None;
                }
            }
            Some(Bug::PollIntervalOnlyWithTtl) if record.ttl_ms.is_none() => {
                record.poll_interval_ms = None
            }
            Some(Bug::ModernTtlDropped) if record.era == Era::Extension2026 => record.ttl_ms = None,
            _ => {}
        }
        if memo.dropped_outcome.contains(&record.task_id) {
            record.outcome = None;
        }
        record
    }

    fn out_answer(&self, answer: Answer) -> Answer {
        Answer {
            decision: answer.decision,
            record: answer.record.map(|record| self.out(record)),
        }
    }
}

fn drop_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, value| !value.is_null());
            map.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

fn flatten_below(value: &mut Value, depth: usize) {
    match value {
        Value::Object(map) if depth == 0 => *map = Map::new(),
        Value::Object(map) => map.values_mut().for_each(|v| flatten_below(v, depth - 1)),
        Value::Array(items) => items.iter_mut().for_each(|v| flatten_below(v, depth)),
        _ => {}
    }
}

fn big_ints_as_floats(value: &mut Value) {
    match value {
        Value::Number(number) => {
            let big = number.as_u64().is_some_and(|n| n > 1 << 53)
                || number.as_i64().is_some_and(|n| n < -(1 << 53));
            if big {
                *value = Value::from(number.as_f64().expect("numbers convert"));
            }
        }
        Value::Object(map) => map.values_mut().for_each(big_ints_as_floats),
        Value::Array(items) => items.iter_mut().for_each(big_ints_as_floats),
        _ => {}
    }
}

impl TaskStore for Buggy {
    fn create(&self, command: &CreateCommand) -> Result<Answer, StoreError> {
        let key = command
            .idempotency_key
            .clone()
            .map(|key| (command.caller.clone(), key));
        let mut forwarded = command.clone();
        if let Some(key) = &key {
            let holder = self.memo.lock().unwrap().holders.get(key).cloned();
            if let Some(holder) = holder {
                let stored = self.inner.read(&holder)?;
                let digest = command.request.digest();
                match &stored {
                    Some(record)
                        if self.is(Bug::ReleasesKeyWhenTerminal)
                            && record.status.is_terminal()
                            && !record.is_expired(command.now_ms) =>
                    {
                        // The key is released with its task's end: bound no more.
                        forwarded.idempotency_key = None;
                        let mut memo = self.memo.lock().unwrap();
                        memo.shown_key
                            .insert(command.task_id.clone(), command.idempotency_key.clone());
                    }
                    None if self.is(Bug::KeepsKeyAfterSweep) => {
                        // The key table still names the swept task.
                        let memo = self.memo.lock().unwrap();
                        let old = memo.created.get(&holder).cloned();
                        return Ok(match old {
                            Some(old) if old.request_digest == digest => {
                                Answer::new(Decision::ReplayTask, Some(old))
                            }
                            _ => Answer::bare(Decision::BlockIdempotencyCollision),
                        });
                    }
                    _ => {}
                }
            }
            if self.is(Bug::CollisionBindsKey) {
                let ghost = self.memo.lock().unwrap().ghost_keys.get(key).cloned();
                if ghost.is_some_and(|digest| digest != command.request.digest().as_str()) {
                    return Ok(Answer::bare(Decision::BlockIdempotencyCollision));
                }
            }
        }
        let answer = match self.inner.create(&forwarded) {
            Ok(answer)
                if answer.decision == Decision::ReplayTask
                    && self.is(Bug::ReplayErrsOnHashKey)
                    && command
                        .idempotency_key
                        .as_ref()
                        .is_some_and(|key| key.contains('#')) =>
            {
                return Err(StoreError::Backend {
                    operation: "replay a task",
                    cause: "a key with '#' was looked up unescaped".into(),
                });
            }
            Err(StoreError::Duplicate { task_id }) => {
                if self.is(Bug::OverwritesOnIdCollision) {
                    let record = command.admission_record(command.request.digest());
                    self.memo
                        .lock()
                        .unwrap()
                        .overwritten
                        .insert(task_id.clone(), (record.clone(), command.request.clone()));
                    return Ok(Answer::new(Decision::AcceptTask, Some(record)));
                }
                if let Some(key) = key.filter(|_| self.is(Bug::CollisionBindsKey)) {
                    let digest = command.request.digest().as_str().to_owned();
                    self.memo.lock().unwrap().ghost_keys.insert(key, digest);
                }
                return Err(StoreError::Duplicate { task_id });
            }
            other => other?,
        };
        if answer.decision == Decision::AcceptTask {
            let record = answer.record.clone().expect("accepted with a record");
            let mut memo = self.memo.lock().unwrap();
            if let Some(key) = key {
                let previous = memo.holders.insert(key.clone(), record.task_id.clone());
                if let Some(previous) = previous.filter(|previous| {
                    self.is(Bug::ExpiredHolderKeepsKey) && *previous != record.task_id
                }) {
                    memo.shown_key.insert(previous, Some(key.1));
                }
            }
            memo.created.insert(record.task_id.clone(), record);
        }
        Ok(self.out_answer(answer))
    }

    fn transition(&self, command: &TransitionCommand) -> Result<Answer, StoreError> {
        let before = self.inner.read(&command.task_id)?;
        let answer = self.inner.transition(command)?;
        let from_input = before
            .as_ref()
            .is_some_and(|before| before.status == TaskStatus::InputRequired);
        if answer.decision == Decision::ApplyTransition && from_input {
            let mut memo = self.memo.lock().unwrap();
            if self.is(Bug::FailedFromInputDropsOutcome) && command.next == TaskStatus::Failed {
                memo.dropped_outcome.insert(command.task_id.clone());
            }
            if self.is(Bug::InputToWorkingKeepsMessage)
                && command.next == TaskStatus::Working
                && command.status_message.is_some()
            {
                let kept = before.and_then(|before| before.status_message);
                memo.shown_message.insert(command.task_id.clone(), kept);
            }
        }
        if answer.decision == Decision::ApplyTransition && self.is(Bug::UpdatedAtRunsBackwards) {
            self.memo
                .lock()
                .unwrap()
                .shown_updated
                .insert(command.task_id.clone(), command.now_ms);
        }
        Ok(self.out_answer(answer))
    }

    fn read(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        Ok(self.inner.read(task_id)?.map(|record| self.out(record)))
    }

    fn cancel(
        &self,
        negotiated: Negotiated,
        caller: &str,
        task_id: &str,
        now_ms: u64,
    ) -> Result<Answer, StoreError> {
        let before = self.inner.read(task_id)?;
        let answer = self.inner.cancel(negotiated, caller, task_id, now_ms)?;
        if answer.decision == Decision::ApplyCancel && self.is(Bug::CancelKeepsOldMessage) {
            let kept = before.and_then(|before| before.status_message);
            if kept.is_some() {
                self.memo
                    .lock()
                    .unwrap()
                    .shown_message
                    .insert(task_id.to_owned(), kept);
            }
        }
        Ok(self.out_answer(answer))
    }

    fn answer_input(&self, command: &InputCommand) -> Result<Answer, StoreError> {
        let before = self.inner.read(&command.task_id)?;
        let answer = self.inner.answer_input(command)?;
        if answer.decision == Decision::ApplyInput
            && self.is(Bug::AnswerKeepsUpdatedAt)
            && let Some(before) = before
        {
            self.memo
                .lock()
                .unwrap()
                .shown_updated
                .insert(command.task_id.clone(), before.updated_at_ms);
        }
        Ok(self.out_answer(answer))
    }

    fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        let mut query = query.clone();
        let limit = page_limit(query.limit);
        match self.bug {
            Some(Bug::LimitZeroListsNothing) if query.limit == 0 => {
                let page = self.inner.list(&query)?;
                return Ok(ListPage {
                    decision: page.decision,
                    tasks: Vec::new(),
                    next_cursor: None,
                });
            }
            Some(Bug::PageOneTooLong) => query.limit = limit + 1,
            Some(Bug::ExpiredListedAtExpiry) => query.now_ms = query.now_ms.saturating_sub(1),
            _ => {}
        }
        let mut page = self.inner.list(&query)?;
        if self.is(Bug::LimitAboveMaxNotClamped) && query.limit > LIST_LIMIT_MAX {
            while let Some(cursor) = page.next_cursor.take() {
                let next = self.inner.list(&ListQuery {
                    cursor: Some(cursor),
                    ..query.clone()
                })?;
                page.tasks.extend(next.tasks);
                page.next_cursor = next.next_cursor;
            }
        }
        if self.is(Bug::NoCursorWhenOneLeft)
            && let Some(cursor) = &page.next_cursor
        {
            let rest = self.inner.list(&ListQuery {
                cursor: Some(cursor.clone()),
                limit: 2,
                ..query.clone()
            })?;
            if rest.tasks.len() == 1 {
                page.next_cursor = None;
            }
        }
        if self.is(Bug::CursorBeforeExpiredTail) && page.next_cursor.is_none() {
            // Counts the caller's tasks as if none had expired: an expired tail keeps the
            // cursor of the page before it.
            let unexpired = self.inner.list(&ListQuery {
                now_ms: 0,
                ..query.clone()
            })?;
            page.next_cursor = unexpired.next_cursor;
        }
        page.tasks = page
            .tasks
            .into_iter()
            .map(|task| {
                if self.is(Bug::ListServesCreationSnapshot)
                    && let Some(created) = self.memo.lock().unwrap().created.get(&task.task_id)
                {
                    return created.clone();
                }
                self.out(task)
            })
            .collect();
        Ok(page)
    }

    fn claim(
        &self,
        worker: &str,
        now_ms: u64,
        lease_ms: u64,
        max: usize,
    ) -> Result<Vec<OutboxClaim>, StoreError> {
        let mut claims = match self.bug {
            Some(Bug::ClaimMaxZeroTakesOne) => {
                self.inner.claim(worker, now_ms, lease_ms, max.max(1))?
            }
            Some(Bug::ClaimBatchUncapped) => {
                let mut claims = Vec::new();
                while claims.len() < max {
                    let more = self
                        .inner
                        .claim(worker, now_ms, lease_ms, max - claims.len())?;
                    if more.is_empty() {
                        break;
                    }
                    claims.extend(more);
                }
                claims
            }
            _ => self.inner.claim(worker, now_ms, lease_ms, max)?,
        };
        let memo = self.memo.lock().unwrap();
        for claim in &mut claims {
            if let Some((record, request)) = memo.overwritten.get(&claim.task_id) {
                claim.auth_key = record.auth_key.clone();
                claim.request = request.clone();
            }
            let arguments = claim.request.arguments.as_mut();
            match (self.bug, arguments) {
                (Some(Bug::DropsNullArgumentsOnClaim), Some(arguments)) => drop_nulls(arguments),
                (Some(Bug::LosesNestedArgumentsOnClaim), Some(arguments)) => {
                    flatten_below(arguments, 3)
                }
                (Some(Bug::BigIntegersAsFloatsOnClaim), Some(arguments)) => {
                    big_ints_as_floats(arguments)
                }
                _ => {}
            }
            match self.bug {
                Some(Bug::AttemptNotIncremented) => claim.attempt = 1,
                Some(Bug::LeaseOneTooLong) => claim.lease_expires_at_ms += 1,
                Some(Bug::ClaimReportsEnqueuedVersion) => {
                    if let Some(created) = memo.created.get(&claim.task_id) {
                        claim.task_version = created.version;
                        claim.task_status = created.status;
                    }
                }
                _ => {}
            }
        }
        Ok(claims)
    }

    fn ack(&self, task_id: &str, attempt: u32, now_ms: u64) -> Result<bool, StoreError> {
        self.inner.ack(task_id, attempt, now_ms)
    }

    fn release_expired_leases(&self, now_ms: u64) -> Result<usize, StoreError> {
        self.inner.release_expired_leases(now_ms)
    }

    fn sweep_expired(&self, now_ms: u64, max: usize) -> Result<usize, StoreError> {
        if self.is(Bug::SweepIgnoresMax) {
            let mut swept = 0;
            loop {
                let more = self.inner.sweep_expired(now_ms, usize::MAX)?;
                if more == 0 {
                    return Ok(swept);
                }
                swept += more;
            }
        }
        if self.is(Bug::SweepOneShort) && (2..1_000).contains(&max) {
            return self.inner.sweep_expired(now_ms, max - 1);
        }
        self.inner.sweep_expired(now_ms, max)
    }

    fn import(&self, records: &[TaskRecord]) -> Result<(), StoreError> {
        match self.bug {
            Some(Bug::ImportResetsVersion) => {
                let reset: Vec<TaskRecord> = records
                    .iter()
                    .map(|record| TaskRecord {
                        version: 1,
                        ..record.clone()
                    })
                    .collect();
                self.inner.import(&reset)
            }
            Some(Bug::ImportPartialOnInnerDuplicate) => {
                // All or nothing against what is stored, then one record at a time.
                for record in records {
                    if self.inner.read(&record.task_id)?.is_some() {
                        return Err(StoreError::Duplicate {
                            task_id: record.task_id.clone(),
                        });
                    }
                }
                for record in records {
                    self.inner.import(std::slice::from_ref(record))?;
                }
                Ok(())
            }
            _ => self.inner.import(records),
        }
    }
}

/// The checks that fail on the wrapper with `bug`, with their details.
fn failures(bug: Option<Bug>) -> Vec<(&'static str, String)> {
    let factory = move |options: &StoreOptions| -> Result<Box<dyn TaskStore>, StoreError> {
        Ok(Box::new(Buggy {
            inner: MemoryStore::open(options)?,
            bug,
            memo: Mutex::default(),
        }))
    };
    conformance::run_all(&factory)
        .into_iter()
        .filter(|outcome| !outcome.passed)
        .map(|outcome| (outcome.name, outcome.detail))
        .collect()
}

#[test]
fn the_wrapper_without_a_bug_passes_every_check() {
    let failed = failures(None);
    assert!(failed.is_empty(), "{failed:#?}");
}

#[test]
fn every_planted_bug_is_killed_by_its_check() {
    let names: BTreeSet<&str> = conformance::CHECKS.iter().map(|check| check.name).collect();
    let mut survivors = Vec::new();
    for (bug, killer) in TABLE {
        assert!(
            names.contains(killer),
            "{killer} is not a conformance check"
        );
        let failed = failures(Some(*bug));
        let killed_by: Vec<&str> = failed.iter().map(|(name, _)| *name).collect();
        println!("{bug:?}: killed by {killed_by:?}");
        match failed.iter().find(|(name, _)| name == killer) {
            Some((_, detail)) => println!("    {killer}: {detail}"),
            None => survivors.push(format!("{bug:?}: {killer} passed (failed: {killed_by:?})")),
        }
    }
    assert!(survivors.is_empty(), "survivors:\n{}", survivors.join("\n"));
    assert!(TABLE.len() >= 15);
}
