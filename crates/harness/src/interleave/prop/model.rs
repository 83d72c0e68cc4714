//! The reference model: the contract's rules restated plainly, and what each step must
//! answer ([`Expect`]).

use super::*;

/// The model's record of one task.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelTask {
    /// The owning tenant.
    pub owner: u8,
    /// The idempotency key it holds; `None` without one or once rebound by a later call.
    pub key: Option<u8>,
    /// The argument set it was created with ([`CreateStep::args`]).
    pub args: u8,
    /// The correlation id it was admitted with.
    pub correlation_id: String,
    /// The era it was created in.
    pub era: Era,
    /// Its current status.
    pub status: TaskStatus,
    /// Its current version (1 at creation, +1 per applied change).
    pub version: u64,
    /// Creation time on the model clock, in ms.
    pub created_at_ms: u64,
    /// Time of the last applied change, in ms.
    pub updated_at_ms: u64,
    /// The granted lifetime, in ms; `None`: unlimited.
    pub ttl_ms: Option<u64>,
    /// Expiry instant on the model clock, in ms; `None` without a TTL.
    pub expires_at_ms: Option<u64>,
    /// The suggested poll interval, in ms.
    pub poll_interval_ms: Option<u64>,
    /// The status message, if any.
    pub status_message: Option<String>,
    /// The stored outcome, if any.
    pub outcome: Option<TaskOutcome>,
    /// The open questions; `None` when none is open.
    pub input_requests: Option<Answers>,
    /// Every answer kept; `None` when none was ever kept.
    pub input_responses: Option<Answers>,
    /// The requestor cancelled it.
    pub cancel_requested: bool,
    /// The irreversible effect declared at its point of no return, if any.
    pub irreversible_effect: Option<String>,
    /// Its outbox entry.
    pub outbox: ModelOutbox,
}

impl ModelTask {
    /// The record a store must hold for this task.
    pub fn view(&self, task_id: &str) -> TaskRecord {
        TaskRecord {
            irreversible_effect: self.irreversible_effect.clone(),
            task_id: task_id.to_owned(),
            auth_key: caller_of(self.owner),
            method: "tools/call".into(),
            tool_name: TOOL.into(),
            request_digest: request_of(self.args).digest(),
            idempotency_key: self.key.map(key_of),
            status: self.status,
            version: self.version,
            created_at_ms: self.created_at_ms,
            updated_at_ms: self.updated_at_ms,
            expires_at_ms: self.expires_at_ms,
            ttl_ms: self.ttl_ms,
            poll_interval_ms: self.poll_interval_ms,
            cancel_requested: self.cancel_requested,
            outcome: self.outcome.clone(),
            status_message: self.status_message.clone(),
            correlation_id: self.correlation_id.clone(),
            era: self.era,
            input_requests: self.input_requests.as_ref().map(input_map),
            input_responses: self.input_responses.as_ref().map(input_map),
        }
    }

    /// A change applied at `now_ms`: version + 1, the update time never running back.
    pub(super) fn touch(&mut self, now_ms: u64) {
        self.version += 1;
        self.updated_at_ms = self.updated_at_ms.max(now_ms);
    }

    /// Whether the task holds an answer to `key`.
    pub(super) fn answered(&self, key: &str) -> bool {
        self.input_responses
            .as_ref()
            .is_some_and(|answers| answers.contains_key(key))
    }
}

/// The model's outbox entry of one task.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelOutbox {
    /// Claims so far (0: never claimed).
    pub attempt: u32,
    /// When the current claim's lease lapses, in ms; `None` when unclaimed, released or
    /// acked.
    pub lease_expires_at_ms: Option<u64>,
    /// A worker acked it: never delivered again.
    pub acked: bool,
}

/// A claim a worker holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Held {
    /// The task claimed.
    pub task_id: String,
    /// The task's owning tenant.
    pub owner: u8,
    /// The claim's attempt number; an ack from an older attempt is refused.
    pub attempt: u32,
    /// The task version the worker saw when it claimed, or made by its last applied write.
    pub version: u64,
}

/// What the store must answer to the step just applied.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Expect {
    /// No answer to compare (a crash, a clock advance).
    #[default]
    Nothing,
    /// A decision, and the record the answer carries, if any.
    Answer {
        /// The decision expected.
        decision: Decision,
        /// The record shown, in full; `None` when nothing is shown.
        record: Option<TaskRecord>,
    },
    /// A create refused with `StoreError::Duplicate`: the id exists.
    Duplicate {
        /// The id refused.
        task_id: String,
    },
    /// A list page: the decision, the tasks in order, whether a next cursor comes.
    Page {
        /// The decision expected.
        decision: Decision,
        /// The tasks on the page, in order, in full.
        tasks: Vec<TaskRecord>,
        /// Whether the page ends with a next-page cursor.
        more: bool,
    },
    /// A claim: the entries claimed, in order.
    Claim(Vec<OutboxClaim>),
    /// A write, then (when terminal) the worker's ack result.
    Write {
        /// The decision expected.
        decision: Decision,
        /// The record shown, in full; `None` when nothing is shown.
        record: Option<TaskRecord>,
        /// For a terminal write: whether the ack took (`false`: a stale attempt); `None`
        /// otherwise.
        acked: Option<bool>,
    },
    /// A finish: the decision, the record shown, how the effect was settled, and (once
    /// terminal) whether the ack took.
    Finish {
        /// The decision expected.
        decision: Decision,
        /// The record shown, in full; `None` when nothing is shown.
        record: Option<TaskRecord>,
        /// What settling the effect did; `None` when a stale or illegal write leaves it
        /// prepared for the run that decides.
        settled: Option<Settled>,
        /// Whether the ack took, for a task found terminal; `None` otherwise.
        acked: Option<bool>,
    },
    /// A lease release: how many leases it freed.
    Released(usize),
    /// A sweep: how many tasks it deleted.
    Swept(usize),
}

fn same_task_ids(t1: &[TaskRecord], t2: &[TaskRecord]) -> bool {
    t1.iter()
        .map(|task| &task.task_id)
        .eq(t2.iter().map(|task| &task.task_id))
}

/// Claims of the same tasks that differ, and pages of other tasks under the same
/// decision: worded whole (their records cannot be compared pairwise).
fn listing_mismatch(got: &Expect, want: &Expect) -> Option<String> {
    match (got, want) {
        (Expect::Claim(c1), Expect::Claim(c2))
            if c1
                .iter()
                .map(|claim| &claim.task_id)
                .eq(c2.iter().map(|claim| &claim.task_id)) =>
        {
            let differing: Vec<String> = c1
                .iter()
                .zip(c2)
                .filter(|(got, want)| got != want)
                .map(|(got, want)| format!("{}: {}", got.task_id, claim_differences(got, want)))
                .collect();
            Some(format!("the claim differs: {}", differing.join(" | ")))
        }
        (
            Expect::Page {
                decision: d1,
                tasks: t1,
                more: m1,
            },
            Expect::Page {
                decision: d2,
                tasks: t2,
                more: m2,
            },
        ) if d1 == d2 && !same_task_ids(t1, t2) => {
            let ids = |tasks: &[TaskRecord]| -> Vec<String> {
                tasks.iter().map(|task| task.task_id.clone()).collect()
            };
            Some(format!(
                "{} as expected, but the page holds {:?} (next cursor: {m1}), the model's {:?} \
                 (next cursor: {m2})",
                d2.code(),
                ids(t1),
                ids(t2)
            ))
        }
        _ => None,
    }
}

/// Where two answers differ, worded for a failure: with the same decision, the fields that
/// differ (of the record, of each task on a page, the ack, the next cursor); else both
/// answers whole.
pub(super) fn mismatch(got: &Expect, want: &Expect) -> String {
    if let Some(whole) = listing_mismatch(got, want) {
        return whole;
    }
    let mut differing: Vec<String> = Vec::new();
    let mut records: Vec<(&TaskRecord, &TaskRecord)> = Vec::new();
    let decision = match (got, want) {
        (
            Expect::Answer {
                decision: d1,
                record: Some(r1),
            },
            Expect::Answer {
                decision: d2,
                record: Some(r2),
            },
        ) if d1 == d2 => {
            records.push((r1, r2));
            d2
        }
        (
            Expect::Write {
                decision: d1,
                record: Some(r1),
                acked: a1,
            },
            Expect::Write {
                decision: d2,
                record: Some(r2),
                acked: a2,
            },
        ) if d1 == d2 => {
            if a1 != a2 {
                differing.push(format!("ack: store {a1:?}, model {a2:?}"));
            }
            records.push((r1, r2));
            d2
        }
        (
            Expect::Page {
                decision: d1,
                tasks: t1,
                more: m1,
            },
            Expect::Page {
                decision: d2,
                tasks: t2,
                more: m2,
            },
        ) if d1 == d2 && same_task_ids(t1, t2) => {
            if m1 != m2 {
                differing.push(format!("next cursor: store {m1}, model {m2}"));
            }
            records.extend(t1.iter().zip(t2));
            d2
        }
        _ => return format!("the store answered {got:?}, the model expects {want:?}"),
    };
    differing.extend(
        records
            .into_iter()
            .filter(|(got, want)| got != want)
            .map(|(got, want)| format!("{}: {}", got.task_id, record_differences(got, want))),
    );
    format!(
        "{} as expected, but {}",
        decision.code(),
        differing.join(" | ")
    )
}

/// The reference model.
#[derive(Clone, Debug, Default)]
pub struct Model {
    /// The model clock, in ms (starts at 0).
    pub now_ms: u64,
    /// Create steps so far; the next fresh id is `t{created:04}`, its correlation id
    /// `c{created:04}`.
    pub created: u32,
    /// Live tasks by id (swept ones removed).
    pub tasks: BTreeMap<String, ModelTask>,
    /// Every id admitted, in order (an id admitted again after a sweep appears again):
    /// steps address tasks through it.
    pub ids: Vec<String>,
    /// `(tenant, idempotency key)` → the task the key is bound to.
    pub keys: BTreeMap<(u8, u8), String>,
    /// Per worker, the claim it holds.
    pub held: BTreeMap<u8, Held>,
    /// Per tenant, where its next page starts, if its last page said more follow.
    pub cursors: BTreeMap<u8, (u64, String)>,
    /// The id the last create step sent.
    pub next_task_id: String,
    /// The correlation id the last create step sent.
    pub next_correlation_id: String,
    /// For a list step: whose cursor it sent, if any.
    pub sent_cursor_of: Option<u8>,
    /// For a write step: the claim it wrote with (the model may have dropped it since).
    pub wrote_with: Option<Held>,
    /// For a write step to `input_required`: the questions it asked.
    pub asked: Option<Answers>,
    /// Effects prepared and not yet settled, by task id (a finish prepares its task's).
    pub prepared: BTreeSet<String>,
    /// Effects published, by task id.
    pub published: BTreeSet<String>,
    /// What the store must answer to the last step.
    pub expect: Expect,
}

impl Model {
    pub(super) fn address(&self, task: u8) -> String {
        if task == 7 || self.ids.is_empty() {
            return MISSING_TASK.into();
        }
        // Recent tasks are addressed most.
        self.ids[self.ids.len() - 1 - usize::from(task) % self.ids.len()].clone()
    }

    pub(super) fn expired(&self, task: &ModelTask) -> bool {
        task.expires_at_ms.is_some_and(|at| self.now_ms >= at)
    }

    pub(super) fn shown(&self, task_id: &str) -> Option<TaskRecord> {
        self.tasks.get(task_id).map(|task| task.view(task_id))
    }

    /// Not found → not yours → expired, the preamble of every one-task operation.
    pub(super) fn locate(&self, tenant: u8, task_id: &str) -> Result<&ModelTask, Decision> {
        let task = self.tasks.get(task_id).ok_or(Decision::BlockNotFound)?;
        if task.owner != tenant {
            return Err(Decision::BlockAuth);
        }
        if self.expired(task) {
            return Err(Decision::BlockExpired);
        }
        Ok(task)
    }

    /// A read (`tasks/get`, `tasks/result`): refused as `locate` says, else `decide`s.
    pub(super) fn read(&self, tenant: u8, task: u8, decide: fn(&ModelTask) -> Decision) -> Expect {
        let task_id = self.address(task);
        match self.locate(tenant, &task_id) {
            Ok(found) => Expect::Answer {
                decision: decide(found),
                record: Some(found.view(&task_id)),
            },
            Err(decision) => Expect::Answer {
                decision,
                record: None,
            },
        }
    }

    pub(super) fn visible(&self, tenant: u8) -> Vec<(u64, String)> {
        let mut visible: Vec<(u64, String)> = self
            .tasks
            .iter()
            .filter(|(_, task)| task.owner == tenant && !self.expired(task))
            .map(|(id, task)| (task.created_at_ms, id.clone()))
            .collect();
        visible.sort();
        visible
    }

    /// The questions a write to `input_required` by `worker` asks: `q0` and `q1` less
    /// those its task holds answers to. `None` when it holds no claim; empty when both are
    /// answered (such a write is not generated).
    pub(super) fn questions_for(&self, worker: u8) -> Option<Answers> {
        let held = self.held.get(&worker)?;
        let task = self.tasks.get(&held.task_id);
        Some(
            QUESTIONS
                .into_iter()
                .filter(|key| !task.is_some_and(|task| task.answered(key)))
                .map(|key| (key.to_owned(), question_of(key)))
                .collect(),
        )
    }

    pub(super) fn create(&mut self, step: &CreateStep) -> Expect {
        let CreateStep {
            tenant,
            key,
            args,
            support,
            task,
            negotiated,
            ttl,
            poll,
            era,
            responses,
            collide,
        } = *step;
        self.created += 1;
        self.next_task_id = match collide {
            Some(pick) if !self.ids.is_empty() => self.address(pick % 7),
            _ => format!("t{:04}", self.created),
        };
        self.next_correlation_id = format!("c{:04}", self.created);
        let negotiated = negotiated_of(negotiated);
        let bare = |decision| Expect::Answer {
            decision,
            record: None,
        };
        if task && !negotiated.tools_call {
            return bare(Decision::BlockCapability);
        }
        match (support_of(support), task) {
            (TaskSupport::Required, false) => return bare(Decision::BlockTaskRequired),
            (TaskSupport::Forbidden, true) => return bare(Decision::BlockTaskForbidden),
            (_, false) => return bare(Decision::AcceptNormal),
            (_, true) => {}
        }
        // The task the key is bound to, if it has expired (it gives the key up).
        let mut rebind_from = None;
        if let Some(key) = key
            && let Some(bound_id) = self.keys.get(&(tenant, key)).cloned()
        {
            let bound = &self.tasks[&bound_id];
            if !self.expired(bound) {
                return if bound.args == args {
                    Expect::Answer {
                        decision: Decision::ReplayTask,
                        record: Some(bound.view(&bound_id)),
                    }
                } else {
                    bare(Decision::BlockIdempotencyCollision)
                };
            }
            rebind_from = Some((key, bound_id));
        }
        let task_id = self.next_task_id.clone();
        if self.tasks.contains_key(&task_id) {
            // The id exists (expired or not): refused, nothing changes.
            return Expect::Duplicate { task_id };
        }
        if let Some((key, bound_id)) = rebind_from {
            self.tasks.get_mut(&bound_id).expect("bound task").key = None;
            self.keys.remove(&(tenant, key));
        }
        let now = self.now_ms;
        let ttl_ms = ttl_of(ttl);
        let record = ModelTask {
            owner: tenant,
            key,
            args,
            correlation_id: self.next_correlation_id.clone(),
            era,
            status: TaskStatus::Working,
            version: 1,
            created_at_ms: now,
            updated_at_ms: now,
            ttl_ms,
            expires_at_ms: ttl_ms.map(|ttl| now.saturating_add(ttl)),
            poll_interval_ms: poll_of(poll),
            status_message: None,
            outcome: None,
            input_requests: None,
            // An empty set of answers is no answer.
            input_responses: admission_answers(responses).filter(|answers| !answers.is_empty()),
            cancel_requested: false,
            irreversible_effect: None,
            outbox: ModelOutbox {
                attempt: 0,
                lease_expires_at_ms: None,
                acked: false,
            },
        };
        if let Some(key) = key {
            self.keys.insert((tenant, key), task_id.clone());
        }
        let shown = record.view(&task_id);
        self.tasks.insert(task_id.clone(), record);
        self.ids.push(task_id);
        Expect::Answer {
            decision: Decision::AcceptTask,
            record: Some(shown),
        }
    }

    pub(super) fn write(
        &mut self,
        worker: u8,
        next: TaskStatus,
        foreign: bool,
        message: Option<&str>,
        outcome: u8,
    ) -> Expect {
        let held = self
            .held
            .get(&worker)
            .cloned()
            .expect("precondition: holds");
        self.wrote_with = Some(held.clone());
        self.asked =
            (next == TaskStatus::InputRequired).then(|| self.questions_for(worker).expect("holds"));
        let caller = if foreign {
            (held.owner + 1) % TENANTS
        } else {
            held.owner
        };
        let decision = match self.locate(caller, &held.task_id) {
            Err(decision) => decision,
            Ok(task) if task.status.is_terminal() => {
                if task.status == next {
                    Decision::IdempotentTerminal
                } else {
                    Decision::BlockTerminalRewrite
                }
            }
            Ok(task) if task.version != held.version => Decision::BlockStaleVersion,
            Ok(task) if !legal(task.status, next) => Decision::BlockIllegalTransition,
            Ok(_) => Decision::ApplyTransition,
        };
        if decision == Decision::ApplyTransition {
            let now = self.now_ms;
            let asked = self.asked.clone();
            let task = self.tasks.get_mut(&held.task_id).expect("located");
            task.status = next;
            task.touch(now);
            if next.is_terminal() {
                task.outcome = Some(outcome_of(outcome));
            }
            if let Some(message) = message {
                task.status_message = Some(message.to_owned());
            }
            match next {
                TaskStatus::InputRequired => task.input_requests = asked,
                TaskStatus::Working => task.input_requests = None,
                _ => {}
            }
            // The worker goes on from the version its own write made.
            let version = task.version;
            self.held.get_mut(&worker).expect("holds").version = version;
        }
        let record = match decision {
            Decision::BlockNotFound | Decision::BlockAuth => None,
            _ => self.shown(&held.task_id),
        };
        // A worker acks once the task is terminal (its own write or one already there).
        let acked = if matches!(
            decision,
            Decision::ApplyTransition | Decision::IdempotentTerminal
        ) && next.is_terminal()
        {
            Some(self.ack(worker, &held))
        } else {
            None
        };
        Expect::Write {
            decision,
            record,
            acked,
        }
    }

    /// A worker declares its point of no return: located as the owner, then the latch (a
    /// terminal task refuses it as a rewrite), the version held, and only a `working` task
    /// that declared nothing yet; applied, version + 1, the effect named, the message
    /// `past its point of no return: EFFECT`, and the worker goes on from that version.
    pub(super) fn declare(&mut self, worker: u8) -> Expect {
        let held = self
            .held
            .get(&worker)
            .cloned()
            .expect("precondition: holds");
        self.wrote_with = Some(held.clone());
        let decision = match self.locate(held.owner, &held.task_id) {
            Err(decision) => decision,
            Ok(task) if task.status.is_terminal() => Decision::BlockTerminalRewrite,
            Ok(task) if task.version != held.version => Decision::BlockStaleVersion,
            Ok(task)
                if task.status != TaskStatus::Working || task.irreversible_effect.is_some() =>
            {
                Decision::BlockIllegalTransition
            }
            Ok(_) => Decision::ApplyTransition,
        };
        if decision == Decision::ApplyTransition {
            let now = self.now_ms;
            let effect = declared_effect(&held.task_id);
            let task = self.tasks.get_mut(&held.task_id).expect("located");
            task.touch(now);
            task.status_message = Some(format!("past its point of no return: {effect}"));
            task.irreversible_effect = Some(effect);
            let version = task.version;
            self.held.get_mut(&worker).expect("holds").version = version;
        }
        let record = match decision {
            Decision::BlockNotFound | Decision::BlockAuth => None,
            _ => self.shown(&held.task_id),
        };
        Expect::Write {
            decision,
            record,
            acked: None,
        }
    }

    /// A worker's run prepared its effect; it decides completion and settles the effect
    /// (the rules restated: completed publishes it, once; any other terminal status, or a
    /// task gone or expired before it ended, discards it; a stale write leaves it).
    pub(super) fn finish(&mut self, worker: u8, outcome: u8) -> Expect {
        let held = self
            .held
            .get(&worker)
            .cloned()
            .expect("precondition: holds");
        // The tool reuses a published effect rather than prepare it again.
        if !self.published.contains(&held.task_id) {
            self.prepared.insert(held.task_id.clone());
        }
        let Expect::Write {
            decision,
            record,
            mut acked,
        } = self.write(worker, TaskStatus::Completed, false, None, outcome)
        else {
            unreachable!("a write answers as a write")
        };
        let settled = match decision {
            Decision::BlockStaleVersion | Decision::BlockIllegalTransition => None,
            _ => {
                let expired = self
                    .tasks
                    .get(&held.task_id)
                    .is_some_and(|task| self.expired(task));
                let status = match &record {
                    Some(record) if record.status.is_terminal() || !expired => Some(record.status),
                    _ => None,
                };
                Some(self.settle(&held.task_id, status))
            }
        };
        // `write` acked an applied or idempotent completion; a worker also retires a task
        // some other way ended (the cancel won the latch).
        if decision == Decision::BlockTerminalRewrite {
            acked = Some(self.ack(worker, &held));
        }
        Expect::Finish {
            decision,
            record,
            settled,
            acked,
        }
    }

    /// The worker acks its claim of a terminal task and lets it go: `true` when the ack
    /// took (the claim is the entry's latest and the entry was not acked yet).
    pub(super) fn ack(&mut self, worker: u8, held: &Held) -> bool {
        let outbox = &mut self.tasks.get_mut(&held.task_id).expect("located").outbox;
        let fresh = outbox.attempt == held.attempt && !outbox.acked;
        if fresh {
            outbox.acked = true;
            outbox.lease_expires_at_ms = None;
        }
        self.held.remove(&worker);
        fresh
    }

    /// The effect of `task_id` settled by its status (`None`: gone, or expired unfinished).
    pub(super) fn settle(&mut self, task_id: &str, status: Option<TaskStatus>) -> Settled {
        match status {
            Some(TaskStatus::Completed) => {
                let was_prepared = self.prepared.remove(task_id);
                Settled::Published(was_prepared && self.published.insert(task_id.to_owned()))
            }
            Some(status) if !status.is_terminal() => Settled::Pending,
            _ => Settled::Discarded(self.prepared.remove(task_id)),
        }
    }

    pub(super) fn cancel(&mut self, tenant: u8, task: u8, negotiated: u8) -> Expect {
        let task_id = self.address(task);
        let decision = if !negotiated_of(negotiated).cancel {
            Decision::BlockCapability
        } else {
            match self.locate(tenant, &task_id) {
                Err(decision) => decision,
                Ok(task) if task.status.is_terminal() => Decision::AlreadyTerminal,
                // Cancellation is cooperative in 2026-07-28: past the point, acknowledged.
                Ok(task)
                    if task.irreversible_effect.is_some() && task.era == Era::Extension2026 =>
                {
                    Decision::PastPointOfNoReturn
                }
                Ok(_) => Decision::ApplyCancel,
            }
        };
        if decision == Decision::ApplyCancel {
            let now = self.now_ms;
            let task = self.tasks.get_mut(&task_id).expect("located");
            task.status = TaskStatus::Cancelled;
            task.touch(now);
            task.cancel_requested = true;
            // Past its point of no return, a 2025-11-25 cancel says what was started.
            task.status_message = Some(match &task.irreversible_effect {
                None => CANCEL_MESSAGE.to_owned(),
                Some(effect) => format!(
                    "{CANCEL_MESSAGE} past its point of no return: {effect} was started and is not undone"
                ),
            });
        }
        let record = match decision {
            Decision::BlockCapability | Decision::BlockNotFound | Decision::BlockAuth => None,
            _ => self.shown(&task_id),
        };
        Expect::Answer { decision, record }
    }

    pub(super) fn answer_input(&mut self, tenant: u8, task: u8, keys: u8) -> Expect {
        let task_id = self.address(task);
        let keys = answered_keys(keys);
        let decision = match self.locate(tenant, &task_id) {
            Err(decision) => decision,
            Ok(task) if task.status.is_terminal() => Decision::AlreadyTerminal,
            Ok(task) => match (task.status, &task.input_requests) {
                (TaskStatus::InputRequired, Some(open))
                    if keys.iter().any(|key| open.contains_key(*key)) =>
                {
                    Decision::ApplyInput
                }
                _ => Decision::IgnoreInput,
            },
        };
        if decision == Decision::ApplyInput {
            let now = self.now_ms;
            let task = self.tasks.get_mut(&task_id).expect("located");
            let mut open = task.input_requests.take().expect("open questions");
            let kept = task.input_responses.get_or_insert_with(Answers::new);
            for key in keys {
                if open.remove(key).is_some() {
                    kept.insert(key.to_owned(), answer_of(key, now));
                }
            }
            task.touch(now);
            if open.is_empty() {
                task.status = TaskStatus::Working;
            } else {
                task.input_requests = Some(open);
            }
        }
        let record = match decision {
            Decision::BlockNotFound | Decision::BlockAuth => None,
            _ => self.shown(&task_id),
        };
        Expect::Answer { decision, record }
    }

    pub(super) fn list(
        &mut self,
        tenant: u8,
        negotiated: u8,
        cursor: CursorUse,
        limit: usize,
    ) -> Expect {
        let holder = match cursor {
            CursorUse::First => None,
            CursorUse::Resume => Some(tenant),
            CursorUse::Foreign => Some((tenant + 1) % TENANTS),
        }
        .filter(|holder| self.cursors.contains_key(holder));
        self.sent_cursor_of = holder;
        let refused = |decision| Expect::Page {
            decision,
            tasks: vec![],
            more: false,
        };
        if !negotiated_of(negotiated).list {
            return refused(Decision::BlockCapability);
        }
        if holder.is_some_and(|holder| holder != tenant) {
            return refused(Decision::BlockBadCursor);
        }
        // The store serves at least one task and at most LIST_LIMIT_MAX per page.
        let limit = limit.clamp(1, LIST_LIMIT_MAX);
        let after = holder.and_then(|holder| self.cursors.get(&holder).cloned());
        let rest: Vec<(u64, String)> = self
            .visible(tenant)
            .into_iter()
            .filter(|position| after.as_ref().is_none_or(|after| position > after))
            .collect();
        let page: Vec<(u64, String)> = rest.iter().take(limit).cloned().collect();
        let more = rest.len() > limit;
        match (more, page.last()) {
            (true, Some(last)) => {
                self.cursors.insert(tenant, last.clone());
            }
            _ => {
                self.cursors.remove(&tenant);
            }
        }
        Expect::Page {
            decision: Decision::ListTenantFiltered,
            tasks: page.iter().map(|(_, id)| self.tasks[id].view(id)).collect(),
            more,
        }
    }

    pub(super) fn claim(&mut self, worker: u8, max: usize) -> Expect {
        let now = self.now_ms;
        let mut ready: Vec<(u64, String)> = self
            .tasks
            .iter()
            .filter(|(_, task)| {
                !task.outbox.acked && task.outbox.lease_expires_at_ms.is_none_or(|at| at <= now)
            })
            .map(|(id, task)| (task.created_at_ms, id.clone()))
            .collect();
        ready.sort();
        ready.truncate(max);
        let mut claims = Vec::new();
        for (_, task_id) in ready {
            let task = self.tasks.get_mut(&task_id).expect("ready");
            task.outbox.attempt += 1;
            let lease_expires_at_ms = now.saturating_add(LEASE_MS);
            task.outbox.lease_expires_at_ms = Some(lease_expires_at_ms);
            claims.push(OutboxClaim {
                task_id: task_id.clone(),
                auth_key: caller_of(task.owner),
                request: request_of(task.args),
                attempt: task.outbox.attempt,
                lease_expires_at_ms,
                task_version: task.version,
                task_status: task.status,
            });
        }
        // The worker holds the first entry it got (with `max` ≤ 1, the only one).
        if let Some(first) = claims.first() {
            self.held.insert(
                worker,
                Held {
                    task_id: first.task_id.clone(),
                    owner: self.tasks[&first.task_id].owner,
                    attempt: first.attempt,
                    version: first.task_version,
                },
            );
        }
        Expect::Claim(claims)
    }

    pub(super) fn release(&mut self) -> Expect {
        let now = self.now_ms;
        let mut released = 0;
        for task in self.tasks.values_mut() {
            let outbox = &mut task.outbox;
            if !outbox.acked && outbox.lease_expires_at_ms.is_some_and(|at| at <= now) {
                outbox.lease_expires_at_ms = None;
                released += 1;
            }
        }
        Expect::Released(released)
    }

    pub(super) fn sweep(&mut self, max: usize) -> Expect {
        let mut expired: Vec<(u64, String)> = self
            .tasks
            .iter()
            .filter(|(_, task)| self.expired(task))
            .map(|(id, task)| (task.expires_at_ms.expect("expired"), id.clone()))
            .collect();
        expired.sort();
        expired.truncate(max);
        for (_, id) in &expired {
            let task = self.tasks.remove(id).expect("listed");
            if let Some(key) = task.key {
                self.keys.remove(&(task.owner, key));
            }
        }
        Expect::Swept(expired.len())
    }
}

/// The transition table, stated again (not `TaskStatus::can_transition_to`).
pub(super) fn legal(from: TaskStatus, to: TaskStatus) -> bool {
    use TaskStatus::*;
    matches!(
        (from, to),
        (Working, InputRequired)
            | (InputRequired, Working)
            | (Working, Completed | Failed | Cancelled)
            | (InputRequired, Completed | Failed | Cancelled)
    )
}
