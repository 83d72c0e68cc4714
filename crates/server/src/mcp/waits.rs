//! Blocked calls and what wakes them.
//!
//! A 2025-11-25 `tasks/result` on a task that is still working is a *wait*. Each one is
//! registered here under its task id and its caller's authorization key, and:
//!
//! - is woken by the write that changes its task, never by polling: in this process
//!   through [`Waits::wake`] (the runtime's and the handlers' status changes), from other
//!   processes sharing the store through its change feed ([`crate::store::TaskStore::changes`]:
//!   PostgreSQL `LISTEN/NOTIFY`). The only timer left is a slow safety re-read
//!   (`ServerConfig::result_recheck_ms`) and the task's own expiry;
//! - ends with its client: the transports drop a call's future when its client goes away
//!   (HTTP disconnect, session deleted, end of stdin), and dropping the [`Wait`]
//!   unregisters it — nothing is left re-reading the store for nobody;
//! - is bounded per caller: [`Waits::enter`] refuses one more than the caller's budget,
//!   and one caller's waits never count against another's;
//! - ends, with an error saying so, when the server drains ([`Waits::drain`], SIGTERM).
//!
//! Every wait has its own [`tokio::sync::Notify`]; a wake is `notify_one`, which stores a
//! permit when nobody is waiting yet, so a change between the call's read of the store
//! and its sleep is never lost.

use crate::sync::{Mutex, MutexGuard};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Every open wait, by id, task and caller.
#[derive(Default)]
pub struct Waits {
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    next_id: u64,
    by_id: BTreeMap<u64, Entry>,
    by_task: BTreeMap<String, BTreeSet<u64>>,
    per_key: BTreeMap<String, usize>,
    draining: bool,
}

impl Table {
    fn admits(&self, auth_key: &str, waits_max: usize) -> Result<(), WaitRefused> {
        if self.draining {
            return Err(WaitRefused::Draining);
        }
        if self.per_key.get(auth_key).copied().unwrap_or(0) >= waits_max {
            return Err(WaitRefused::Budget { waits_max });
        }
        Ok(())
    }
}

struct Entry {
    task_id: String,
    auth_key: String,
    wake: Arc<tokio::sync::Notify>,
}

/// Why a wait was not opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitRefused {
    /// The caller already has this many open: the budget.
    Budget {
        /// The caller's limit.
        waits_max: usize,
    },
    /// The server is draining: it opens no new waits.
    Draining,
}

/// One open wait; dropping it unregisters it.
pub struct Wait<'w> {
    waits: &'w Waits,
    id: u64,
    wake: Arc<tokio::sync::Notify>,
}

impl Wait<'_> {
    /// Resolves at the next wake of this wait's task (or of every wait), or at once if one
    /// came since the last.
    pub async fn woken(&self) {
        self.wake.notified().await;
    }

    /// Whether the server started draining: the call should end now.
    pub fn draining(&self) -> bool {
        self.waits.is_draining()
    }
}

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        let mut table = self.waits.lock();
        let Some(entry) = table.by_id.remove(&self.id) else {
            return;
        };
        if let Some(ids) = table.by_task.get_mut(&entry.task_id) {
            ids.remove(&self.id);
            if ids.is_empty() {
                table.by_task.remove(&entry.task_id);
            }
        }
        if let Some(count) = table.per_key.get_mut(&entry.auth_key) {
            *count -= 1;
            if *count == 0 {
                table.per_key.remove(&entry.auth_key);
            }
        }
        debug_assert_eq!(
            table.by_id.len(),
            table.per_key.values().sum::<usize>(),
            "every wait is counted against exactly one caller"
        );
    }
}

impl Waits {
    fn lock(&self) -> MutexGuard<'_, Table> {
        // Nothing held under this lock can panic half-way; a poisoned table is still whole.
        self.table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Opens a wait of `auth_key` on `task_id`, unless the caller already has `waits_max`
    /// open or the server is draining.
    pub fn enter(
        &self,
        auth_key: &str,
        task_id: &str,
        waits_max: usize,
    ) -> Result<Wait<'_>, WaitRefused> {
        let mut table = self.lock();
        table.admits(auth_key, waits_max)?;
        let id = table.next_id;
        table.next_id += 1;
        let wake = Arc::new(tokio::sync::Notify::new());
        table.by_id.insert(
            id,
            Entry {
                task_id: task_id.to_owned(),
                auth_key: auth_key.to_owned(),
                wake: wake.clone(),
            },
        );
        table
            .by_task
            .entry(task_id.to_owned())
            .or_default()
            .insert(id);
        *table.per_key.entry(auth_key.to_owned()).or_insert(0) += 1;
        Ok(Wait {
            waits: self,
            id,
            wake,
        })
    }

    /// Whether [`Waits::enter`] would open a wait of `auth_key` now (a transport that must
    /// choose its answer's status before the call runs asks first).
    pub fn admits(&self, auth_key: &str, waits_max: usize) -> Result<(), WaitRefused> {
        self.lock().admits(auth_key, waits_max)
    }

    /// Whether [`Waits::drain`] was called.
    pub fn is_draining(&self) -> bool {
        self.lock().draining
    }

    /// Wakes every wait on `task_id` (each re-reads its task).
    pub fn wake(&self, task_id: &str) {
        let table = self.lock();
        let Some(ids) = table.by_task.get(task_id) else {
            return;
        };
        for id in ids {
            if let Some(entry) = table.by_id.get(id) {
                entry.wake.notify_one();
            }
        }
    }

    /// Wakes every wait: what they wait for may have changed unseen (a change feed that
    /// reconnected, a drain).
    pub fn wake_all(&self) {
        for entry in self.lock().by_id.values() {
            entry.wake.notify_one();
        }
    }

    /// Stops opening waits and wakes every open one, which then ends.
    pub fn drain(&self) {
        self.lock().draining = true;
        self.wake_all();
    }

    /// Waits open now, all callers.
    pub fn open(&self) -> usize {
        self.lock().by_id.len()
    }

    /// Waits `auth_key` has open now.
    pub fn open_for(&self, auth_key: &str) -> usize {
        self.lock().per_key.get(auth_key).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_is_per_caller_and_freed_on_drop() {
        let waits = Waits::default();
        let first = waits.enter("a", "t1", 2).expect("first");
        let second = waits.enter("a", "t2", 2).expect("second");
        assert_eq!(
            waits.enter("a", "t3", 2).err(),
            Some(WaitRefused::Budget { waits_max: 2 })
        );
        // Another caller's budget is its own.
        let other = waits.enter("b", "t1", 2).expect("b's own budget");
        assert_eq!((waits.open(), waits.open_for("a")), (3, 2));
        drop(first);
        let third = waits.enter("a", "t3", 2).expect("a slot freed");
        drop((second, third, other));
        assert_eq!(waits.open(), 0);
        assert!(waits.lock().by_task.is_empty() && waits.lock().per_key.is_empty());
    }

    #[test]
    fn a_wake_before_the_sleep_is_kept() {
        let waits = Waits::default();
        let wait = waits.enter("a", "t1", 1).expect("open");
        waits.wake("t1");
        // The permit stored by the wake resolves the next `woken` at once.
        futures_util::FutureExt::now_or_never(wait.woken()).expect("woken");
        // A wake of another task does not.
        waits.wake("t2");
        assert!(futures_util::FutureExt::now_or_never(wait.woken()).is_none());
    }

    #[test]
    fn a_drain_wakes_every_wait_and_refuses_new_ones() {
        let waits = Waits::default();
        let wait = waits.enter("a", "t1", 4).expect("open");
        waits.drain();
        futures_util::FutureExt::now_or_never(wait.woken()).expect("woken");
        assert!(wait.draining());
        assert_eq!(waits.enter("a", "t2", 4).err(), Some(WaitRefused::Draining));
    }
}
