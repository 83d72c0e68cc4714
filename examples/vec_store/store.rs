//! `VecStore`: a task store written outside tasklatch, through its public API only — the
//! kind of adapter a team writes for its own database. Its data structure is its own: one
//! vector of rows in admission order, each task beside its outbox entry, scanned linearly.
//! The policy is not its own: every decision comes from `tasklatch::contract`'s guards,
//! and the shared adapter helpers in `tasklatch::store` build the records and list pages.
//!
//! `VecStore::with_bug` plants one realistic bug, so the example can show what each engine
//! of the harness reports when a store is wrong.

use std::sync::{Mutex, MutexGuard};
use tasklatch::contract::{self, Decision, Negotiated, TaskRecord};
use tasklatch::store::{
    self, Answer, CLAIM_BATCH_MAX, CreateCommand, InputCommand, ListPage, ListQuery, OutboxClaim,
    StoreError, StoreFactory, StoreOptions, TaskStore, TransitionCommand, WrappedRequest,
};

/// A bug `VecStore` can be built with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bug {
    /// `tasks/list` forgets the tenant filter: every caller sees every caller's tasks.
    ListsEveryTenant,
}

struct Outbox {
    request: WrappedRequest,
    enqueued_at_ms: u64,
    attempt: u32,
    lease_expires_at_ms: Option<u64>,
    acked: bool,
}

struct Row {
    record: TaskRecord,
    outbox: Option<Outbox>,
}

/// The store: rows in admission order behind one lock.
pub struct VecStore {
    rows: Mutex<Vec<Row>>,
    cursor_secret: Vec<u8>,
    bug: Option<Bug>,
}

impl VecStore {
    pub fn open(options: &StoreOptions) -> Result<VecStore, StoreError> {
        Ok(VecStore {
            rows: Mutex::new(Vec::new()),
            cursor_secret: match &options.cursor_secret {
                Some(secret) => secret.clone(),
                None => store::random_secret()?,
            },
            bug: None,
        })
    }

    pub fn with_bug(mut self, bug: Bug) -> VecStore {
        self.bug = Some(bug);
        self
    }

    fn rows(&self) -> Result<MutexGuard<'_, Vec<Row>>, StoreError> {
        self.rows.lock().map_err(|_| StoreError::Backend {
            operation: "lock the vec store",
            cause: "a thread panicked while holding it".into(),
        })
    }
}

fn find<'r>(rows: &'r [Row], task_id: &str) -> Option<&'r Row> {
    rows.iter().find(|row| row.record.task_id == task_id)
}

fn find_mut<'r>(rows: &'r mut [Row], task_id: &str) -> Option<&'r mut Row> {
    rows.iter_mut().find(|row| row.record.task_id == task_id)
}

/// The task `(caller, key)` is bound to, expired or not (the guard decides).
fn bound<'r>(rows: &'r [Row], caller: &str, key: Option<&str>) -> Option<&'r TaskRecord> {
    let key = key?;
    rows.iter()
        .map(|row| &row.record)
        .find(|record| record.auth_key == caller && record.idempotency_key.as_deref() == Some(key))
}

impl TaskStore for VecStore {
    fn create(&self, command: &CreateCommand) -> Result<Answer, StoreError> {
        let digest = command.request.digest();
        let mut rows = self.rows()?;
        let existing = bound(&rows, &command.caller, command.idempotency_key.as_deref());
        let decision =
            contract::guard_create(&command.contract_request(&digest), existing, command.now_ms);
        match decision {
            Decision::AcceptTask => {
                if find(&rows, &command.task_id).is_some() {
                    return Err(StoreError::Duplicate {
                        task_id: command.task_id.clone(),
                    });
                }
                // An expired task no longer holds its key.
                if let Some(expired_id) = existing.map(|record| record.task_id.clone())
                    && let Some(row) = find_mut(&mut rows, &expired_id)
                {
                    row.record.idempotency_key = None;
                }
                let record = command.admission_record(digest);
                rows.push(Row {
                    record: record.clone(),
                    outbox: Some(Outbox {
                        request: command.request.clone(),
                        enqueued_at_ms: command.now_ms,
                        attempt: 0,
                        lease_expires_at_ms: None,
                        acked: false,
                    }),
                });
                Ok(Answer::new(decision, Some(record)))
            }
            Decision::ReplayTask => Ok(Answer::new(decision, existing.cloned())),
            _ => Ok(Answer::bare(decision)),
        }
    }

    fn transition(&self, command: &TransitionCommand) -> Result<Answer, StoreError> {
        store::check_transition_command(command)?;
        let mut rows = self.rows()?;
        let current = find(&rows, &command.task_id).map(|row| &row.record);
        let decision =
            contract::guard_transition(&command.contract_request(), current, command.now_ms);
        if decision != Decision::ApplyTransition {
            return Ok(Answer::new(decision, current.cloned()));
        }
        let after = store::applied_transition(current.expect("apply implies found"), command);
        find_mut(&mut rows, &command.task_id)
            .expect("found above")
            .record = after.clone();
        Ok(Answer::new(decision, Some(after)))
    }

    fn read(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        Ok(find(&self.rows()?, task_id).map(|row| row.record.clone()))
    }

    fn cancel(
        &self,
        negotiated: Negotiated,
        caller: &str,
        task_id: &str,
        now_ms: u64,
    ) -> Result<Answer, StoreError> {
        let mut rows = self.rows()?;
        let current = find(&rows, task_id).map(|row| &row.record);
        let decision = contract::guard_cancel(negotiated, caller, current, now_ms);
        if decision != Decision::ApplyCancel {
            return Ok(Answer::new(decision, current.cloned()));
        }
        let after = store::cancelled_record(current.expect("apply implies found"), now_ms);
        find_mut(&mut rows, task_id).expect("found above").record = after.clone();
        Ok(Answer::new(decision, Some(after)))
    }

    fn answer_input(&self, command: &InputCommand) -> Result<Answer, StoreError> {
        let mut rows = self.rows()?;
        let current = find(&rows, &command.task_id).map(|row| &row.record);
        let (decision, after) = store::input_decision(command, current);
        let Some(after) = after else {
            return Ok(Answer::new(decision, current.cloned()));
        };
        find_mut(&mut rows, &command.task_id)
            .expect("found above")
            .record = after.clone();
        Ok(Answer::new(decision, Some(after)))
    }

    fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        let after = match store::list_preamble(&self.cursor_secret, query) {
            Ok(after) => after,
            Err(refused) => return Ok(refused),
        };
        let limit = store::page_limit(query.limit);
        let rows = self.rows()?;
        let mut mine: Vec<&TaskRecord> = rows
            .iter()
            .map(|row| &row.record)
            .filter(|record| {
                (self.bug == Some(Bug::ListsEveryTenant) || record.auth_key == query.caller)
                    && !record.is_expired(query.now_ms)
            })
            .collect();
        mine.sort_by(|a, b| (a.created_at_ms, &a.task_id).cmp(&(b.created_at_ms, &b.task_id)));
        let tasks = mine
            .into_iter()
            .filter(|record| {
                after.as_ref().is_none_or(|after| {
                    (record.created_at_ms, &record.task_id) > (after.created_at_ms, &after.task_id)
                })
            })
            .take(limit + 1)
            .cloned()
            .collect();
        Ok(store::list_page(
            &self.cursor_secret,
            &query.caller,
            tasks,
            limit,
        ))
    }

    fn claim(
        &self,
        _worker: &str,
        now_ms: u64,
        lease_ms: u64,
        max: usize,
    ) -> Result<Vec<OutboxClaim>, StoreError> {
        let mut rows = self.rows()?;
        let mut ready: Vec<(u64, String)> = rows
            .iter()
            .filter_map(|row| {
                let outbox = row.outbox.as_ref()?;
                let free = !outbox.acked
                    && outbox
                        .lease_expires_at_ms
                        .is_none_or(|expires| expires <= now_ms);
                free.then(|| (outbox.enqueued_at_ms, row.record.task_id.clone()))
            })
            .collect();
        ready.sort();
        ready.truncate(max.min(CLAIM_BATCH_MAX));
        let mut claims = Vec::with_capacity(ready.len());
        for (_, task_id) in ready {
            let row = find_mut(&mut rows, &task_id).expect("listed above");
            let outbox = row.outbox.as_mut().expect("listed above");
            outbox.attempt += 1;
            let lease_expires_at_ms = now_ms.saturating_add(lease_ms);
            outbox.lease_expires_at_ms = Some(lease_expires_at_ms);
            claims.push(OutboxClaim {
                task_id,
                auth_key: row.record.auth_key.clone(),
                request: outbox.request.clone(),
                attempt: outbox.attempt,
                lease_expires_at_ms,
                task_version: row.record.version,
                task_status: row.record.status,
            });
        }
        Ok(claims)
    }

    fn ack(&self, task_id: &str, attempt: u32, _now_ms: u64) -> Result<bool, StoreError> {
        let mut rows = self.rows()?;
        let outbox = find_mut(&mut rows, task_id).and_then(|row| row.outbox.as_mut());
        match outbox {
            Some(outbox) if outbox.attempt == attempt && !outbox.acked => {
                outbox.acked = true;
                outbox.lease_expires_at_ms = None;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn release_expired_leases(&self, now_ms: u64) -> Result<usize, StoreError> {
        let mut rows = self.rows()?;
        let mut released = 0;
        for outbox in rows.iter_mut().filter_map(|row| row.outbox.as_mut()) {
            if !outbox.acked && outbox.lease_expires_at_ms.is_some_and(|at| at <= now_ms) {
                outbox.lease_expires_at_ms = None;
                released += 1;
            }
        }
        Ok(released)
    }

    fn sweep_expired(&self, now_ms: u64, max: usize) -> Result<usize, StoreError> {
        let mut rows = self.rows()?;
        let mut expired: Vec<(u64, String)> = rows
            .iter()
            .map(|row| &row.record)
            .filter(|record| record.is_expired(now_ms))
            .map(|record| (record.expires_at_ms.unwrap_or(0), record.task_id.clone()))
            .collect();
        expired.sort();
        expired.truncate(max);
        rows.retain(|row| {
            !expired
                .iter()
                .any(|(_, task_id)| *task_id == row.record.task_id)
        });
        Ok(expired.len())
    }

    fn import(&self, records: &[TaskRecord]) -> Result<(), StoreError> {
        let mut rows = self.rows()?;
        for (at, record) in records.iter().enumerate() {
            if let Some(violation) = record.invariant_violation() {
                return Err(StoreError::Invalid(format!(
                    "task {}: {violation}",
                    record.task_id
                )));
            }
            let earlier = &records[..at];
            if find(&rows, &record.task_id).is_some()
                || earlier.iter().any(|other| other.task_id == record.task_id)
            {
                return Err(StoreError::Duplicate {
                    task_id: record.task_id.clone(),
                });
            }
            let key = record.idempotency_key.as_deref();
            let taken = bound(&rows, &record.auth_key, key).is_some()
                || earlier.iter().any(|other| {
                    key.is_some()
                        && other.auth_key == record.auth_key
                        && other.idempotency_key.as_deref() == key
                });
            if taken {
                return Err(StoreError::Invalid(format!(
                    "task {}: idempotency key already bound for {}",
                    record.task_id, record.auth_key
                )));
            }
        }
        rows.extend(records.iter().map(|record| Row {
            record: record.clone(),
            outbox: None,
        }));
        Ok(())
    }
}

/// Fresh `VecStore`s, optionally with a planted bug: what the harness's engines take.
#[derive(Clone, Copy, Debug, Default)]
pub struct VecStoreFactory {
    pub bug: Option<Bug>,
}

impl StoreFactory for VecStoreFactory {
    fn name(&self) -> &str {
        match self.bug {
            None => "vec-store",
            Some(Bug::ListsEveryTenant) => "vec-store (lists every tenant)",
        }
    }

    fn open(&self, options: &StoreOptions) -> Result<Box<dyn TaskStore>, StoreError> {
        let store = VecStore::open(options)?;
        Ok(Box::new(match self.bug {
            Some(bug) => store.with_bug(bug),
            None => store,
        }))
    }
}
