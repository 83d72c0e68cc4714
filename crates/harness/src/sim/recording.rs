//! The store under test as the simulation sees it: every applied change recorded, and
//! the store node's outages.

use super::history::History;
use crate::check::{AppliedKind, Asked, Event, Injection, Stored};
use crate::contract::{Decision, Negotiated, TaskRecord, TaskStatus};
use crate::store::{
    Answer, ChangeFeed, ChangeSink, CreateCommand, InputCommand, ListPage, ListQuery, OutboxClaim,
    StoreError, TaskStore, TransitionCommand,
};
use std::sync::Arc;

/// The store as the simulation sees it: the store under test, with every applied change
/// recorded into the history. (The oracle uses these as facts of what was written; it
/// never asks the store to judge itself.)
pub(super) struct RecordingStore {
    pub(super) inner: Box<dyn TaskStore>,
    pub(super) history: Arc<History>,
    /// The world's effects: a cancel that finds a completion decided but its effect not
    /// yet published is the narrow window prepare → decide → publish must get right.
    pub(super) sink: Arc<std::sync::Mutex<super::tools::Sink>>,
    /// False while the store node is down: every operation fails before touching state
    /// (a transaction in flight is lost whole; committed state survives).
    pub(super) up: std::sync::atomic::AtomicBool,
    /// Chance (percent) that an admission is given the id of a task already issued: the
    /// store must refuse it (`Duplicate`), never answer with the existing record.
    pub(super) id_collision_percent: u64,
    /// Ids of the tasks admitted so far, in order.
    pub(super) issued: std::sync::Mutex<Vec<String>>,
    /// The server processes' change feed (PostgreSQL's `LISTEN/NOTIFY`), when the
    /// deployment has one: a write is announced to every process but the writer's.
    pub(super) feed: Option<Arc<super::deployment::Feed>>,
}

impl RecordingStore {
    /// Tells the other processes that `task_id` changed (a transition, a cancel, an
    /// answer: what PostgreSQL notifies), if there is a feed.
    fn announce(&self, task_id: &str) {
        if let Some(feed) = &self.feed {
            feed.announce(madsim::plugin::node(), task_id, &self.history);
        }
    }

    /// Records an error of the store under test (F1 judges it), and passes it on.
    fn failed<T>(
        &self,
        op: &'static str,
        task_id: &str,
        result: Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if let Err(error) = &result {
            self.history.push(Event::StoreError {
                op,
                task_id: task_id.to_owned(),
                error: error.to_string(),
                at_ms: crate::runtime::Env::now_ms(&super::SimEnv),
            });
        }
        result
    }

    /// The command with the id of a task the store holds, at the knob's chance (the draws
    /// are made only when the knob is on and an id was issued), recorded as an injected
    /// fault.
    fn collide(&self, command: &CreateCommand) -> Option<CreateCommand> {
        if self.id_collision_percent == 0 {
            return None;
        }
        let issued = self.issued.lock().expect("issued ids");
        if issued.is_empty() || super::faults::roll(100) >= self.id_collision_percent {
            return None;
        }
        let task_id = issued[super::faults::roll(issued.len() as u64) as usize].clone();
        // Only an id the store still holds (expired or not): a swept one is free again.
        if !matches!(self.inner.read(&task_id), Ok(Some(_))) {
            return None;
        }
        self.history.push(Event::Injected {
            what: Injection::IdCollision {
                task_id: task_id.clone(),
            },
            at_ms: command.now_ms,
        });
        Some(CreateCommand {
            task_id,
            ..command.clone()
        })
    }

    pub(super) fn available(&self) -> Result<(), StoreError> {
        if self.up.load(std::sync::atomic::Ordering::SeqCst) {
            Ok(())
        } else {
            Err(StoreError::Backend {
                operation: "reach the store node",
                cause: "the store node is down".into(),
            })
        }
    }

    pub(super) fn applied(
        &self,
        kind: AppliedKind,
        expected: Option<u64>,
        asked: Asked,
        record: &TaskRecord,
        at_ms: u64,
    ) {
        let stored = Stored {
            created_at_ms: record.created_at_ms,
            updated_at_ms: record.updated_at_ms,
            ttl_ms: record.ttl_ms,
            poll_interval_ms: record.poll_interval_ms,
            status_message: record.status_message.clone(),
            era: record.era,
            cancel_requested: record.cancel_requested,
            input_requests: record.input_requests.clone(),
            input_responses: record.input_responses.clone(),
            irreversible_effect: record.irreversible_effect.clone(),
        };
        self.history.push(Event::Applied {
            task_id: record.task_id.clone(),
            auth_key: record.auth_key.clone(),
            kind,
            expected_version: expected,
            version: record.version,
            status: record.status,
            outcome: record.outcome.clone(),
            expires_at_ms: record.expires_at_ms,
            asked: Box::new(asked),
            stored: Box::new(stored),
            at_ms,
        });
    }
}

impl TaskStore for RecordingStore {
    fn create(&self, command: &CreateCommand) -> Result<Answer, StoreError> {
        self.available()?;
        let collided = self.collide(command);
        let command = collided.as_ref().unwrap_or(command);
        let result = self.inner.create(command);
        if collided.is_some()
            && let Err(StoreError::Duplicate { .. }) = &result
        {
            self.history.mark("id-collision-refused");
            return result;
        }
        let answer = self.failed("create", &command.task_id, result)?;
        // Ids are kept only for the collisions they feed.
        if answer.decision == Decision::AcceptTask && self.id_collision_percent > 0 {
            let mut issued = self.issued.lock().expect("issued ids");
            issued.push(command.task_id.clone());
        }
        match (answer.decision, &answer.record) {
            (Decision::AcceptTask, Some(record)) => {
                let asked = Asked::Create {
                    ttl_ms: command.ttl_ms,
                    poll_interval_ms: command.poll_interval_ms,
                    era: command.era,
                    input_responses: command.input_responses.clone(),
                    digest: record.request_digest.as_str().to_owned(),
                };
                self.applied(AppliedKind::Create, None, asked, record, command.now_ms)
            }
            (Decision::ReplayTask, _) => self.history.mark("replay"),
            _ => {}
        }
        Ok(answer)
    }

    fn transition(&self, command: &TransitionCommand) -> Result<Answer, StoreError> {
        self.available()?;
        let answer = self.failed(
            "transition",
            &command.task_id,
            self.inner.transition(command),
        )?;
        match (answer.decision, &answer.record) {
            (Decision::ApplyTransition, Some(record)) => self.applied(
                AppliedKind::Transition,
                Some(command.expected_version),
                Asked::Transition {
                    next: command.next,
                    outcome: command.outcome.clone(),
                    status_message: command.status_message.clone(),
                    input_requests: command.input_requests.clone(),
                    irreversible_effect: command.irreversible_effect.clone(),
                },
                record,
                command.now_ms,
            ),
            (Decision::BlockStaleVersion, _) => self.history.mark("stale-write-refused"),
            (Decision::BlockTerminalRewrite, Some(record))
                if record.status == TaskStatus::Cancelled =>
            {
                self.history.mark("cancel-beat-completion")
            }
            (Decision::BlockExpired, _) => self.history.mark("expired-work-refused"),
            (Decision::IdempotentTerminal, _) => self.history.mark("idempotent-terminal"),
            _ => {}
        }
        if answer.decision != Decision::ApplyTransition {
            if command.outcome.is_some() {
                // A worker's completion, refused: I20 judges what follows it.
                self.history.mark(match answer.decision {
                    Decision::BlockStaleVersion => "completion-refused-stale",
                    _ => "completion-refused",
                });
            }
            self.history.push(Event::Refused {
                task_id: command.task_id.clone(),
                caller: command.caller.clone(),
                kind: AppliedKind::Transition,
                expected_version: Some(command.expected_version),
                next: Some(command.next),
                answered: Vec::new(),
                decision: answer.decision,
                at_ms: command.now_ms,
            });
        }
        self.announce(&command.task_id);
        Ok(answer)
    }

    fn read(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.available()?;
        self.failed("read", task_id, self.inner.read(task_id))
    }

    fn answer_input(&self, command: &InputCommand) -> Result<Answer, StoreError> {
        self.available()?;
        let answer = self.failed(
            "answer_input",
            &command.task_id,
            self.inner.answer_input(command),
        )?;
        if let (Decision::ApplyInput, Some(record)) = (answer.decision, &answer.record) {
            // The version before is the one the swap pinned: one less than after.
            let expected = record.version - 1;
            let asked = Asked::Input {
                responses: command.responses.clone(),
            };
            self.applied(
                AppliedKind::Input,
                Some(expected),
                asked,
                record,
                command.now_ms,
            );
        } else {
            self.history.push(Event::Refused {
                task_id: command.task_id.clone(),
                caller: command.caller.clone(),
                kind: AppliedKind::Input,
                expected_version: None,
                next: None,
                answered: command.responses.keys().cloned().collect(),
                decision: answer.decision,
                at_ms: command.now_ms,
            });
        }
        self.announce(&command.task_id);
        Ok(answer)
    }

    fn cancel(
        &self,
        negotiated: Negotiated,
        caller: &str,
        task_id: &str,
        now_ms: u64,
    ) -> Result<Answer, StoreError> {
        self.available()?;
        let answer = self.failed(
            "cancel",
            task_id,
            self.inner.cancel(negotiated, caller, task_id, now_ms),
        )?;
        if let (Decision::AlreadyTerminal, Some(record)) = (answer.decision, &answer.record)
            && record.status == TaskStatus::Completed
        {
            self.history.mark("completion-beat-cancel");
            if self
                .sink
                .lock()
                .expect("sink")
                .prepared
                .contains_key(task_id)
            {
                self.history.mark("decide-beat-cancel");
            }
        }
        match (answer.decision, &answer.record) {
            (Decision::PastPointOfNoReturn, _) => {
                self.history.mark("cancel-acknowledged-past-point")
            }
            (Decision::ApplyCancel, Some(record)) if record.irreversible_effect.is_some() => {
                self.history.mark("cancelled-past-point")
            }
            _ => {}
        }
        if let (Decision::ApplyCancel, Some(record)) = (answer.decision, &answer.record) {
            self.applied(
                AppliedKind::Cancel,
                Some(record.version - 1),
                Asked::Cancel,
                record,
                now_ms,
            );
        } else {
            self.history.push(Event::Refused {
                task_id: task_id.to_owned(),
                caller: caller.to_owned(),
                kind: AppliedKind::Cancel,
                expected_version: None,
                next: None,
                answered: Vec::new(),
                decision: answer.decision,
                at_ms: now_ms,
            });
        }
        self.announce(task_id);
        Ok(answer)
    }

    fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        self.available()?;
        self.failed("list", "", self.inner.list(query))
    }

    fn claim(
        &self,
        worker: &str,
        now_ms: u64,
        lease_ms: u64,
        max: usize,
    ) -> Result<Vec<OutboxClaim>, StoreError> {
        self.available()?;
        let claims = self.failed("claim", "", self.inner.claim(worker, now_ms, lease_ms, max))?;
        for claim in &claims {
            if claim.attempt > 1 {
                self.history.mark("outbox-republished");
            }
            if claim.task_status.is_terminal() {
                self.history.mark("claim-of-finished-task");
            }
            self.history.push(Event::Claimed {
                task_id: claim.task_id.clone(),
                attempt: claim.attempt,
                status: claim.task_status,
                version: claim.task_version,
                at_ms: now_ms,
            });
        }
        Ok(claims)
    }

    fn ack(&self, task_id: &str, attempt: u32, now_ms: u64) -> Result<bool, StoreError> {
        self.available()?;
        let retired = self.failed("ack", task_id, self.inner.ack(task_id, attempt, now_ms))?;
        self.history.push(Event::Acked {
            task_id: task_id.to_owned(),
            attempt,
            retired,
            at_ms: now_ms,
        });
        Ok(retired)
    }

    fn release_expired_leases(&self, now_ms: u64) -> Result<usize, StoreError> {
        self.available()?;
        self.failed(
            "release_expired_leases",
            "",
            self.inner.release_expired_leases(now_ms),
        )
    }

    fn sweep_expired(&self, now_ms: u64, max: usize) -> Result<usize, StoreError> {
        self.available()?;
        let swept = self.failed("sweep_expired", "", self.inner.sweep_expired(now_ms, max))?;
        if swept > 0 {
            if swept == max {
                self.history.mark("sweep-full-batch");
            }
            self.history.push(Event::Swept {
                max,
                swept,
                at_ms: now_ms,
            });
        }
        Ok(swept)
    }

    fn import(&self, records: &[TaskRecord]) -> Result<(), StoreError> {
        self.failed("import", "", self.inner.import(records))
    }

    /// The feed, heard from the calling node (a server process), when there is one.
    fn changes(&self, sink: ChangeSink) -> Result<Option<ChangeFeed>, StoreError> {
        Ok(self
            .feed
            .as_ref()
            .map(|feed| feed.listen(madsim::plugin::node(), sink)))
    }
}
