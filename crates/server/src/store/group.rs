//! Group commit: concurrent writes to one connection share one transaction and one commit
//! (one fsync), each write still atomic on its own.
//!
//! A writer takes the connection, opens the group's transaction if none is open, and runs
//! its write inside a savepoint: a write that fails rolls back to its savepoint, so it
//! leaves nothing behind and takes nothing with it. Then, if another writer is already
//! queued for the connection (and the group is under [`GROUP_WRITES_MAX`]), it leaves the
//! transaction open for that writer and waits; the last writer of the group, the one that
//! finds nobody queued, commits for all and wakes them. No write's answer is given before
//! its group committed: a commit that fails fails every write of its group (none of them
//! is durable, none is reported done), and a write that returned is on disk as any single
//! commit would be.
//!
//! A waiter learns how its group ended from a record kept apart from the connection's
//! lock (`Ends`), so when a group commits, its woken waiters do not stand between the
//! connection and the writers of the next group.
//!
//! A lone writer never waits (nobody queued: it commits at once), so a single client pays
//! one commit per write, as before; under concurrency, the writers that queued while a
//! commit was on the disk form the next group. Reads must not share the connection: they
//! would see a group's writes before its commit (the stores read on a connection of their
//! own).

use super::StoreError;
use crate::sync::{Condvar, Deadline, Mutex, MutexGuard};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Writes in one group at most: a commit is forced at this size even with writers queued,
/// so a write's wait is bounded under any load.
pub const GROUP_WRITES_MAX: usize = 128;
/// How long a write waits for its group's commit before it reports an error (a commit
/// that takes this long means the disk or the database is stuck).
const GROUP_WAIT_MS_MAX: u64 = 120_000;

/// The transaction statements of one database connection.
pub trait Grouped {
    /// Opens the group's transaction.
    fn begin(&mut self) -> Result<(), String>;
    /// Marks where one write starts.
    fn savepoint(&mut self) -> Result<(), String>;
    /// Keeps one write's changes (in the group's transaction).
    fn release(&mut self) -> Result<(), String>;
    /// Undoes one write's changes back to its savepoint.
    fn rollback_to_savepoint(&mut self) -> Result<(), String>;
    /// Commits the group.
    fn commit(&mut self) -> Result<(), String>;
    /// Abandons the group (best effort: the commit or a savepoint already failed).
    fn rollback(&mut self);
}

struct State<C> {
    connection: C,
    /// The group's transaction is open.
    open: bool,
    /// The open group's number (groups are numbered from 1).
    group: u64,
    /// Writes in the open group.
    writes: usize,
    /// Writes in the open group waiting for its commit.
    waiting_in_group: usize,
}

/// How groups ended, apart from the connection's lock: a waiter learns its group's outcome
/// here, so the writers of the next group do not queue behind the woken waiters of the
/// last one for the connection.
#[derive(Default)]
struct Ends {
    /// The last group with waiters that ended (committed or failed).
    ended: u64,
    /// Groups that failed, with the cause and how many of their waiters have yet to read
    /// it (removed when the last has).
    failed: BTreeMap<u64, (String, usize)>,
}

/// One connection, written in groups.
pub struct GroupCommit<C> {
    state: Mutex<State<C>>,
    ends: Mutex<Ends>,
    group_ended: Condvar,
    /// Writers that asked for the connection and do not have it yet.
    queued: AtomicUsize,
    /// Groups committed, and the writes they held: the figures that show grouping.
    groups_committed: AtomicU64,
    writes_committed: AtomicU64,
}

/// How much grouping happened: commits made and the writes they carried.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupFigures {
    /// Groups committed.
    pub commits: u64,
    /// Writes those groups held (a write rolled back to its savepoint counts: it was
    /// answered by that commit).
    pub writes: u64,
}

impl<C: Grouped> GroupCommit<C> {
    /// Groups the writes to `connection`.
    pub fn new(connection: C) -> GroupCommit<C> {
        GroupCommit {
            state: Mutex::new(State {
                connection,
                open: false,
                group: 0,
                writes: 0,
                waiting_in_group: 0,
            }),
            ends: Mutex::new(Ends::default()),
            group_ended: Condvar::new(),
            queued: AtomicUsize::new(0),
            groups_committed: AtomicU64::new(0),
            writes_committed: AtomicU64::new(0),
        }
    }

    /// Commits so far and the writes they carried.
    pub fn figures(&self) -> GroupFigures {
        GroupFigures {
            commits: self.groups_committed.load(Ordering::Relaxed),
            writes: self.writes_committed.load(Ordering::Relaxed),
        }
    }

    fn lock(&self) -> Result<MutexGuard<'_, State<C>>, StoreError> {
        self.state.lock().map_err(|_| StoreError::Backend {
            operation: "lock the store's connection",
            cause: "a thread panicked while holding it".into(),
        })
    }

    /// Runs `write` atomically in the current group and answers once the group committed
    /// (see the module docs). `operation` names it in errors.
    pub fn write<R>(
        &self,
        operation: &'static str,
        write: impl FnOnce(&mut C) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        let failed = |cause: String| StoreError::Backend { operation, cause };
        self.queued.fetch_add(1, Ordering::SeqCst);
        let state = self.lock();
        self.queued.fetch_sub(1, Ordering::SeqCst);
        let mut state = state?;
        if !state.open {
            state.connection.begin().map_err(&failed)?;
            state.open = true;
            state.group += 1;
            state.writes = 0;
            state.waiting_in_group = 0;
        }
        let group = state.group;
        state.writes += 1;
        let outcome = match state.connection.savepoint() {
            Err(cause) => Err(cause),
            Ok(()) => {
                let connection = &mut state.connection;
                let ran =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| write(connection)));
                match ran {
                    Ok(Ok(answer)) => connection.release().map(|()| Ok(answer)),
                    Ok(Err(error)) => connection
                        .rollback_to_savepoint()
                        .and_then(|()| connection.release())
                        .map(|()| Err(error)),
                    Err(panic) => {
                        // Fail the whole group (its waiters must not hang), then go on
                        // unwinding.
                        let _ = self.end_group(&mut state, Err("a write panicked".into()));
                        std::panic::resume_unwind(panic);
                    }
                }
            }
        };
        let answer = match outcome {
            Ok(answer) => answer,
            // A savepoint statement failed: the transaction's state is unknown; end the
            // group as failed.
            Err(cause) => {
                let _ = self.end_group(&mut state, Err(cause.clone()));
                return Err(failed(cause));
            }
        };
        let queued = self.queued.load(Ordering::SeqCst);
        if queued == 0 || state.writes >= GROUP_WRITES_MAX {
            let committed = state.connection.commit();
            return match self.end_group(&mut state, committed) {
                Ok(()) => answer,
                Err(cause) => Err(failed(cause)),
            };
        }
        // Someone is queued: it joins this group; whoever is last commits. The group
        // cannot end before the connection is let go, so it is still open here, and its
        // end is recorded in `ends` before anyone is woken.
        state.waiting_in_group += 1;
        drop(state);
        let poisoned = || failed("a thread panicked while holding the group's ends".into());
        let mut ends = self.ends.lock().map_err(|_| poisoned())?;
        let deadline = Deadline::after_ms(GROUP_WAIT_MS_MAX);
        while ends.ended < group {
            if deadline.passed() {
                return Err(failed(format!(
                    "the group's commit did not end within {GROUP_WAIT_MS_MAX} ms"
                )));
            }
            ends = self
                .group_ended
                .wait_until(ends, &deadline)
                .map_err(|_| poisoned())?
                .0;
        }
        let cause = match ends.failed.get_mut(&group) {
            None => None,
            Some((cause, readers_left)) => {
                let cause = cause.clone();
                *readers_left -= 1;
                if *readers_left == 0 {
                    ends.failed.remove(&group);
                }
                Some(cause)
            }
        };
        match cause {
            None => answer,
            Some(cause) => Err(failed(cause)),
        }
    }

    /// Ends the open group with `outcome` (rolling back on failure) and wakes its waiters.
    fn end_group(&self, state: &mut State<C>, outcome: Result<(), String>) -> Result<(), String> {
        debug_assert!(state.open);
        if outcome.is_ok() {
            self.groups_committed.fetch_add(1, Ordering::Relaxed);
            self.writes_committed
                .fetch_add(state.writes as u64, Ordering::Relaxed);
        } else {
            state.connection.rollback();
        }
        state.open = false;
        if state.waiting_in_group > 0 {
            // A poisoned `ends` means a waiter panicked reading it; the others still
            // need their answer, so the data is used as it is.
            let mut ends = self
                .ends
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Err(cause) = &outcome {
                ends.failed
                    .insert(state.group, (cause.clone(), state.waiting_in_group));
            }
            ends.ended = state.group;
            drop(ends);
            self.group_ended.notify_all();
        }
        // A group nobody waits for need not be recorded: waiters wait for their own
        // group's number, and groups end in order.
        outcome
    }
}
