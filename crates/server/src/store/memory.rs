//! `MemoryStore`: the contract enforced under one lock.
//!
//! The whole state sits behind one mutex taken once per operation, so every guard and its
//! write happen in one critical section (check-then-write split over two sections is the
//! TOCTOU bug the loom models look for). Listing walks a per-owner index, so the caller is
//! applied in the "query", as the SQL adapters do in their `WHERE`.
//!
//! Everything this file uses from the store and from synchronisation comes through
//! `super::` (the store module, which re-exports `crate::sync`): the loom models compile
//! this same source inside a module whose `sync` is loom's.

use super::sync::{Mutex, MutexGuard};
use super::{
    Answer, CLAIM_BATCH_MAX, CreateCommand, InputCommand, ListPage, ListQuery, OutboxClaim,
    StoreError, StoreOptions, TaskStore, TransitionCommand, WrappedRequest, applied_transition,
    cancelled_record, check_transition_command, input_decision, list_page, list_preamble,
    page_limit, random_secret,
};
use crate::contract::{self, Decision, Negotiated, TaskRecord};
use crate::mutants::{Mutant, on};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

#[derive(Default)]
struct State {
    tasks: BTreeMap<String, TaskRecord>,
    /// (auth key, idempotency key) → task id.
    by_key: BTreeMap<(String, String), String>,
    /// (auth key, created_at_ms, task id): the list index.
    by_owner: BTreeSet<(String, u64, String)>,
    outbox: BTreeMap<String, OutboxRow>,
}

struct OutboxRow {
    auth_key: String,
    request: WrappedRequest,
    enqueued_at_ms: u64,
    attempt: u32,
    lease_expires_at_ms: Option<u64>,
}

impl State {
    fn insert(&mut self, record: TaskRecord) {
        if let Some(key) = &record.idempotency_key {
            self.by_key.insert(
                (record.auth_key.clone(), key.clone()),
                record.task_id.clone(),
            );
        }
        self.by_owner.insert((
            record.auth_key.clone(),
            record.created_at_ms,
            record.task_id.clone(),
        ));
        self.tasks.insert(record.task_id.clone(), record);
    }

    fn remove(&mut self, task_id: &str) {
        if let Some(record) = self.tasks.remove(task_id) {
            if let Some(key) = &record.idempotency_key {
                self.by_key.remove(&(record.auth_key.clone(), key.clone()));
            }
            self.by_owner
                .remove(&(record.auth_key, record.created_at_ms, record.task_id));
        }
        self.outbox.remove(task_id);
    }

    fn bound(&self, caller: &str, key: Option<&str>) -> Option<&TaskRecord> {
        let task_id = self.by_key.get(&(caller.to_owned(), key?.to_owned()))?;
        self.tasks.get(task_id)
    }
}

/// The in-memory adapter: for tests, the simulation and single-process use.
pub struct MemoryStore {
    state: Mutex<State>,
    cursor_secret: Vec<u8>,
}

impl MemoryStore {
    /// A store whose cursors are bound with `options.cursor_secret`, or a fresh secret.
    pub fn open(options: &StoreOptions) -> Result<MemoryStore, StoreError> {
        let cursor_secret = match &options.cursor_secret {
            Some(secret) => secret.clone(),
            None => random_secret()?,
        };
        Ok(MemoryStore {
            state: Mutex::new(State::default()),
            cursor_secret,
        })
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>, StoreError> {
        // A panic while holding the lock may have left a half-applied change: refuse to
        // serve from it rather than guess.
        self.state.lock().map_err(|_| StoreError::Backend {
            operation: "lock the memory store",
            cause: "a thread panicked while holding it".into(),
        })
    }
}

impl TaskStore for MemoryStore {
    fn create(&self, command: &CreateCommand) -> Result<Answer, StoreError> {
        let digest = command.request.digest();
        let mut state = self.lock()?;
        let bound = state.bound(&command.caller, command.idempotency_key.as_deref());
        let decision =
            contract::guard_create(&command.contract_request(&digest), bound, command.now_ms);
        match decision {
            Decision::AcceptTask => {
                if let Some(existing) = state.tasks.get(&command.task_id) {
                    let duplicate = StoreError::Duplicate {
                        task_id: command.task_id.clone(),
                    };
                    return crate::store::collided(duplicate, || Ok(Some(existing.clone())));
                }
                // An expired task no longer holds its key: release it before rebinding.
                if let Some(expired_id) = bound.map(|record| record.task_id.clone()) {
                    let key = (
                        command.caller.clone(),
                        command.idempotency_key.clone().unwrap_or_default(),
                    );
                    state.by_key.remove(&key);
                    if let Some(expired) = state.tasks.get_mut(&expired_id) {
                        expired.idempotency_key = None;
                    }
                }
                let record = command.admission_record(digest);
                state.outbox.insert(
                    record.task_id.clone(),
                    OutboxRow {
                        auth_key: record.auth_key.clone(),
                        request: command.request.clone(),
                        enqueued_at_ms: command.now_ms,
                        attempt: 0,
                        lease_expires_at_ms: None,
                    },
                );
                state.insert(record.clone());
                Ok(Answer::new(decision, Some(record)))
            }
            Decision::ReplayTask => super::replay(bound.cloned()),
            _ => Ok(Answer::bare(decision)),
        }
    }

    fn transition(&self, command: &TransitionCommand) -> Result<Answer, StoreError> {
        check_transition_command(command)?;
        let mut state = self.lock()?;
        let current = state.tasks.get(&command.task_id);
        let decision =
            contract::guard_transition(&command.contract_request(), current, command.now_ms);
        if decision != Decision::ApplyTransition {
            return Ok(Answer::new(decision, current.cloned()));
        }
        let current = current.expect("apply implies found");
        crate::store::check_questions_are_new(current, command)?;
        let after = applied_transition(current, command);
        state.tasks.insert(after.task_id.clone(), after.clone());
        Ok(Answer::new(decision, Some(after)))
    }

    fn read(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        Ok(self.lock()?.tasks.get(task_id).cloned())
    }

    fn cancel(
        &self,
        negotiated: Negotiated,
        caller: &str,
        task_id: &str,
        now_ms: u64,
    ) -> Result<Answer, StoreError> {
        let mut state = self.lock()?;
        let current = state.tasks.get(task_id);
        let decision = contract::guard_cancel(negotiated, caller, current, now_ms);
        if decision != Decision::ApplyCancel {
            return Ok(Answer::new(decision, current.cloned()));
        }
        let after = cancelled_record(current.expect("apply implies found"), now_ms);
        state.tasks.insert(after.task_id.clone(), after.clone());
        Ok(Answer::new(decision, Some(after)))
    }

    fn answer_input(&self, command: &InputCommand) -> Result<Answer, StoreError> {
        let mut state = self.lock()?;
        let current = state.tasks.get(&command.task_id);
        let (decision, after) = input_decision(command, current);
        let Some(after) = after else {
            return Ok(Answer::new(decision, current.cloned()));
        };
        state.tasks.insert(after.task_id.clone(), after.clone());
        Ok(Answer::new(decision, Some(after)))
    }

    fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        let after = match list_preamble(&self.cursor_secret, query) {
            Ok(after) => after,
            Err(refused) => return Ok(refused),
        };
        let limit = page_limit(query.limit);
        let state = self.lock()?;
        if on(Mutant::ListUnfiltered) {
            // The mutant forgets the index's owner prefix and walks every tenant's tasks.
            let tasks = contract::visible_tasks(
                &query.caller,
                state.tasks.values(),
                query.now_ms,
                after.as_ref(),
                limit + 1,
            );
            let tasks = tasks.into_iter().cloned().collect();
            return Ok(list_page(&self.cursor_secret, &query.caller, tasks, limit));
        }
        let start = match after {
            Some(after) => {
                Bound::Excluded((query.caller.clone(), after.created_at_ms, after.task_id))
            }
            None => Bound::Included((query.caller.clone(), 0, String::new())),
        };
        // The per-owner index is the "query": no other tenant's entry is visited.
        let tasks: Vec<TaskRecord> = state
            .by_owner
            .range((start, Bound::Unbounded))
            .take_while(|(owner, _, _)| *owner == query.caller)
            .filter_map(|(_, _, task_id)| state.tasks.get(task_id))
            .filter(|record| !record.is_expired(query.now_ms))
            .take(limit + 1)
            .cloned()
            .collect();
        Ok(list_page(&self.cursor_secret, &query.caller, tasks, limit))
    }

    fn claim(
        &self,
        worker: &str,
        now_ms: u64,
        lease_ms: u64,
        max: usize,
    ) -> Result<Vec<OutboxClaim>, StoreError> {
        let _ = worker; // The memory store keeps no lease owner: the attempt fences acks.
        let mut state = self.lock()?;
        let mut ready: Vec<(u64, String)> = state
            .outbox
            .iter()
            .filter(|(_, row)| {
                row.lease_expires_at_ms
                    .is_none_or(|expires| expires <= now_ms)
            })
            .map(|(task_id, row)| (row.enqueued_at_ms, task_id.clone()))
            .collect();
        ready.sort();
        ready.truncate(max.min(CLAIM_BATCH_MAX));
        let mut claims = Vec::with_capacity(ready.len());
        for (_, task_id) in ready {
            let Some((version, status)) = state
                .tasks
                .get(&task_id)
                .map(|task| (task.version, task.status))
            else {
                continue;
            };
            let row = state.outbox.get_mut(&task_id).expect("listed above");
            row.attempt += 1;
            let lease_expires_at_ms = now_ms.saturating_add(lease_ms);
            row.lease_expires_at_ms = Some(lease_expires_at_ms);
            claims.push(OutboxClaim {
                task_id,
                auth_key: row.auth_key.clone(),
                request: row.request.clone(),
                attempt: row.attempt,
                lease_expires_at_ms,
                task_version: version,
                task_status: crate::store::claim_status(status),
            });
        }
        Ok(claims)
    }

    fn ack(&self, task_id: &str, attempt: u32, now_ms: u64) -> Result<bool, StoreError> {
        let _ = now_ms; // Nothing keeps an acked entry: a later ack finds it gone (false).
        let mut state = self.lock()?;
        // An acked entry is removed, not marked: the outbox holds only what is owed, so a
        // claim walks no history and a long-lived store does not grow by every task.
        match state.outbox.get(task_id) {
            Some(row) if row.attempt == attempt => {
                state.outbox.remove(task_id);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn release_expired_leases(&self, now_ms: u64) -> Result<usize, StoreError> {
        let mut state = self.lock()?;
        let mut released = 0;
        for row in state.outbox.values_mut() {
            if row.lease_expires_at_ms.is_some_and(|at| at <= now_ms) {
                row.lease_expires_at_ms = None;
                released += 1;
            }
        }
        Ok(released)
    }

    fn sweep_expired(&self, now_ms: u64, max: usize) -> Result<usize, StoreError> {
        let mut state = self.lock()?;
        let mut expired: Vec<(u64, String)> = state
            .tasks
            .values()
            .filter(|record| record.is_expired(now_ms))
            .map(|record| (record.expires_at_ms.unwrap_or(0), record.task_id.clone()))
            .collect();
        expired.sort();
        expired.truncate(crate::store::sweep_bound(max));
        for (_, task_id) in &expired {
            state.remove(task_id);
        }
        Ok(expired.len())
    }

    fn import(&self, records: &[TaskRecord]) -> Result<(), StoreError> {
        let mut state = self.lock()?;
        let mut ids = BTreeSet::new();
        let mut keys = BTreeSet::new();
        for record in records {
            if let Some(violation) = record.invariant_violation() {
                return Err(StoreError::Invalid(format!(
                    "task {}: {violation}",
                    record.task_id
                )));
            }
            if state.tasks.contains_key(&record.task_id) || !ids.insert(record.task_id.as_str()) {
                return Err(StoreError::Duplicate {
                    task_id: record.task_id.clone(),
                });
            }
            let key = record.idempotency_key.as_deref();
            if state.bound(&record.auth_key, key).is_some()
                || key.is_some_and(|key| !keys.insert((record.auth_key.as_str(), key)))
            {
                return Err(StoreError::Invalid(format!(
                    "task {}: idempotency key already bound for {}",
                    record.task_id, record.auth_key
                )));
            }
        }
        for record in records {
            state.insert(record.clone());
        }
        Ok(())
    }
}
