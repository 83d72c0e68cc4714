//! Deferred side effects: **prepare → decide → publish**.
//!
//! A tool whose effect can wait (a file, a staged row, a queued request) does not make it
//! visible while it runs. It *prepares* the effect under its task id, invisibly, and answers
//! [`ToolStep::Prepared`](super::ToolStep::Prepared). The runtime then *decides*: the
//! completion compare-and-swap, which a concurrent `tasks/cancel` can still win. Only then
//! does it *settle* the effect by what the store holds — [`Effects::publish`] when the task
//! completed, [`Effects::discard`] when it ended any other way or is gone — and only after
//! that acknowledges the outbox entry. So:
//!
//! - a cancel that wins the latch leaves nothing visible (a cancelled task has no effect);
//! - a crash between decide and publish is finished by the entry's redelivery (the worker
//!   that absorbs the terminal task, or the dispatcher retiring its entry, settles first);
//! - what a dead worker prepared for a task that ended otherwise is discarded by the next
//!   delivery, or by the sweeper's backstop ([`Effects::prepared`]).
//!
//! Publish and discard are idempotent by task id: any number of settlers may race, the
//! outcome is one published effect for a completed task and none for any other.
//!
//! Effects that cannot wait (a call to an outside API) are outside this protocol: see the
//! docs/serve.md's "Side effects" section for the guarantee each kind gets.

use crate::contract::{TaskRecord, TaskStatus};
use crate::mutants::{Mutant, on};
use crate::store::{Answer, StoreError, TaskStore, TransitionCommand};
use crate::sync::Mutex;
use std::collections::BTreeSet;

/// Where a runtime publishes and discards what its tools prepared. Every method is
/// idempotent per task id and may be called for a task that prepared nothing.
pub trait Effects: Send + Sync {
    /// Makes the effect prepared for `task_id` visible. `Ok(true)` when this call published
    /// it; `Ok(false)` when it was already published or nothing was prepared.
    fn publish(&self, task_id: &str) -> Result<bool, String>;

    /// Drops what was prepared for `task_id`; never touches a published effect. `Ok(true)`
    /// when something was dropped.
    fn discard(&self, task_id: &str) -> Result<bool, String>;

    /// Task ids with a prepared, unpublished effect, at most `limit_max` of them: the
    /// sweeper settles those whose task ended or is gone (a worker died holding them).
    fn prepared(&self, _limit_max: usize) -> Result<Vec<String>, String> {
        Ok(Vec::new())
    }
}

/// For tools that prepare nothing: every settle is a no-op.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoEffects;

impl Effects for NoEffects {
    fn publish(&self, _task_id: &str) -> Result<bool, String> {
        Ok(false)
    }

    fn discard(&self, _task_id: &str) -> Result<bool, String> {
        Ok(false)
    }
}

/// Effects kept in memory as two sets of task ids, prepared and published: for tests, and
/// for tools whose effect is a flag another part of the process reads.
#[derive(Debug, Default)]
pub struct MemoryEffects(Mutex<(BTreeSet<String>, BTreeSet<String>)>);

impl MemoryEffects {
    /// Prepares `task_id`'s effect, unless it is published already (a redelivery reuses it).
    pub fn prepare(&self, task_id: &str) {
        let mut sets = self.0.lock().expect("effects lock");
        if !sets.1.contains(task_id) {
            sets.0.insert(task_id.to_owned());
        }
    }

    /// The prepared and the published task ids.
    pub fn sets(&self) -> (BTreeSet<String>, BTreeSet<String>) {
        self.0.lock().expect("effects lock").clone()
    }
}

impl Effects for MemoryEffects {
    fn publish(&self, task_id: &str) -> Result<bool, String> {
        let mut sets = self.0.lock().expect("effects lock");
        Ok(sets.0.remove(task_id) && sets.1.insert(task_id.to_owned()))
    }

    fn discard(&self, task_id: &str) -> Result<bool, String> {
        Ok(self.0.lock().expect("effects lock").0.remove(task_id))
    }

    fn prepared(&self, limit_max: usize) -> Result<Vec<String>, String> {
        let sets = self.0.lock().expect("effects lock");
        Ok(sets.0.iter().take(limit_max).cloned().collect())
    }
}

/// What [`settle`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settled {
    /// The task completed: its effect was published (`true`: by this call).
    Published(bool),
    /// The task ended otherwise, or is gone: what it prepared was dropped (`true`: by this
    /// call).
    Discarded(bool),
    /// The task is not terminal: its effect is left as it is (a worker still owns it).
    Pending,
}

/// The decide step: the completion compare-and-swap. A cancel may still win it; nothing
/// the tool prepared is visible before it answers.
pub fn decide(
    store: &dyn TaskStore,
    effects: &dyn Effects,
    command: &TransitionCommand,
) -> Result<Answer, StoreError> {
    if on(Mutant::PublishBeforeDecide) {
        // The defect: the effect is made visible before the completion is decided, so a
        // cancel that wins the latch leaves a cancelled task with a published effect.
        effects
            .publish(&command.task_id)
            .map_err(|cause| effect_error("publish a side effect", cause))?;
    }
    store.transition(command)
}

/// Settles `task_id`'s effect by its stored status: `Completed` publishes (even once
/// expired: readers were told it completed), any other terminal status or `None` (the task
/// is gone, or expired before it ended) discards, a live task is left alone. Callers get
/// the status from [`status_to_settle`].
pub fn settle(
    effects: &dyn Effects,
    task_id: &str,
    status: Option<TaskStatus>,
) -> Result<Settled, StoreError> {
    match status {
        Some(TaskStatus::Completed) => effects
            .publish(task_id)
            .map(Settled::Published)
            .map_err(|cause| effect_error("publish a side effect", cause)),
        Some(status) if !status.is_terminal() => Ok(Settled::Pending),
        _ => effects
            .discard(task_id)
            .map(Settled::Discarded)
            .map_err(|cause| effect_error("discard a side effect", cause)),
    }
}

/// The status [`settle`] goes by for a stored record (`None`: gone): a terminal status as
/// stored, expiry aside; `None` for a live task past its expiry (it can never complete);
/// the live status otherwise.
pub fn status_to_settle(record: Option<&TaskRecord>, now_ms: u64) -> Option<TaskStatus> {
    match record {
        Some(record) if record.status.is_terminal() || !record.is_expired(now_ms) => {
            Some(record.status)
        }
        _ => None,
    }
}

pub(super) fn effect_error(operation: &'static str, cause: String) -> StoreError {
    StoreError::Backend { operation, cause }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settle_publishes_only_a_completed_task_and_only_once() {
        let ledger = MemoryEffects::default();
        for id in ["a", "b", "c"] {
            ledger.prepare(id);
        }
        let done = Some(TaskStatus::Completed);
        assert_eq!(settle(&ledger, "a", done), Ok(Settled::Published(true)));
        assert_eq!(settle(&ledger, "a", done), Ok(Settled::Published(false)));
        let cancelled = Some(TaskStatus::Cancelled);
        assert_eq!(
            settle(&ledger, "b", cancelled),
            Ok(Settled::Discarded(true))
        );
        assert_eq!(
            settle(&ledger, "b", cancelled),
            Ok(Settled::Discarded(false))
        );
        assert_eq!(
            settle(&ledger, "c", Some(TaskStatus::Working)),
            Ok(Settled::Pending)
        );
        assert_eq!(settle(&ledger, "c", None), Ok(Settled::Discarded(true)));
        let (prepared, published) = ledger.sets();
        assert!(prepared.is_empty());
        assert_eq!(published.iter().collect::<Vec<_>>(), ["a"]);
    }
}
