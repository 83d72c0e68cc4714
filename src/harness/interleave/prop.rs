//! The proptest state machine: a store driven by interleaved `(actor, operation)` steps and
//! compared, step by step, with a reference model of the contract.
//!
//! Actors are clients of [`TENANTS`] tenants (create with or without an idempotency key,
//! get, result, cancel, list with and without a cursor, list with another tenant's cursor)
//! and [`WORKERS`] workers (claim an outbox entry, write a status with the version they
//! saw — possibly stale — or with another tenant's key, crash), plus the sweeper and clock
//! advances. Interleaving happens at store-operation granularity, which is where stale
//! versions, broken latches and cross-tenant reads live; inside one operation is loom's
//! job, timing and crashes the simulation's.
//!
//! The model is written apart from `contract::guard_*`: it states the rules again, plainly,
//! so a mutant planted in the guards is caught by the disagreement. After every step the
//! whole store is read back and compared with the model, so a store that answered right
//! but wrote wrong is caught too. A failure shrinks (proptest-state-machine drops and
//! simplifies steps) to a short sequence.

use crate::contract::{Decision, Negotiated, TaskOutcome, TaskStatus, TaskSupport};
use crate::store::{
    CreateCommand, ListQuery, StoreError, StoreFactory, StoreOptions, TaskStore, TransitionCommand,
    WrappedRequest,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest};
use serde_json::json;
use std::collections::BTreeMap;

/// Tenants (clients) in a case.
pub const TENANTS: u8 = 3;
/// Workers in a case.
pub const WORKERS: u8 = 2;
/// Steps per case at most (the everyday run; shrinking only shortens).
pub const STEPS_MAX: usize = 40;
/// A list page holds this many tasks, so cursors are exercised with few tasks.
pub const PAGE_LIMIT: usize = 2;
/// How long a claim's lease lasts.
pub const LEASE_MS: u64 = 400;
/// The fixed seed of the everyday run (`PROPTEST_RNG_SEED` overrides it in the tests).
pub const EVERYDAY_SEED: u64 = 0x7a5c_1a7c;
/// An address no task ever has.
const MISSING_TASK: &str = "t-missing";
/// The time-to-live a create asks for, by the step's choice.
const TTL_CHOICES_MS: [Option<u64>; 3] = [None, Some(300), Some(3_000)];

/// One step: an actor and what it does.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// A client calls `tools/call` ([`CreateStep`]).
    Create(CreateStep),
    /// A client polls a task with `tasks/get`.
    Get {
        /// The client's tenant, `0..TENANTS`.
        tenant: u8,
        /// Which task: the `task`-th most recent admitted (modulo their count); 7 addresses
        /// a task that does not exist.
        task: u8,
    },
    /// A client fetches a task's result with `tasks/result`.
    Result {
        /// The client's tenant, `0..TENANTS`.
        tenant: u8,
        /// Which task, as for [`Step::Get`].
        task: u8,
    },
    /// A client cancels a task with `tasks/cancel`.
    Cancel {
        /// The client's tenant, `0..TENANTS`.
        tenant: u8,
        /// Which task, as for [`Step::Get`].
        task: u8,
        /// Negotiated capability bits (1 tools/call, 2 cancel, 4 list).
        negotiated: u8,
    },
    /// A client lists its tasks, one page of [`PAGE_LIMIT`].
    List {
        /// The client's tenant, `0..TENANTS`.
        tenant: u8,
        /// Negotiated capability bits (1 tools/call, 2 cancel, 4 list).
        negotiated: u8,
        /// Which cursor the request carries.
        cursor: CursorUse,
    },
    /// A worker claims the oldest ready outbox entry (unacked, lease free or lapsed).
    Claim {
        /// The worker, `0..WORKERS`.
        worker: u8,
    },
    /// The worker writes `next` with the version it claimed at; `foreign` writes with
    /// another tenant's key instead of the task's own.
    Write {
        /// The worker, `0..WORKERS`; it must hold a claim.
        worker: u8,
        /// Index (mod 4) into completed, failed, input_required, working.
        next: u8,
        /// Write as the next tenant instead of the task's owner.
        foreign: bool,
    },
    /// A worker crashes: its claim is dropped unacked, the lease left to lapse.
    Crash {
        /// The worker, `0..WORKERS`; it must hold a claim.
        worker: u8,
    },
    /// The sweeper deletes every expired task.
    Sweep,
    /// The clock moves forward.
    Advance {
        /// How far, in ms.
        ms: u16,
    },
}

/// A client's `tools/call`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CreateStep {
    /// The caller's tenant, `0..TENANTS`.
    pub tenant: u8,
    /// The idempotency key (`0..3`); `None` sends none.
    pub key: Option<u8>,
    /// Which of two argument sets the call carries: same key, other args is a collision.
    pub args: u8,
    /// Index into optional, required, forbidden.
    pub support: u8,
    /// The call asks for a task.
    pub task: bool,
    /// Negotiated capability bits: tools/call, cancel, list.
    pub negotiated: u8,
    /// Index into `TTL_CHOICES_MS`.
    pub ttl: u8,
}

/// Which cursor a list step sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CursorUse {
    /// No cursor: the first page.
    First,
    /// The tenant's own next-page cursor from its last page (first page if none).
    Resume,
    /// The next tenant's cursor (first page if it holds none).
    Foreign,
}

const WRITE_TARGETS: [TaskStatus; 4] = [
    TaskStatus::Completed,
    TaskStatus::Failed,
    TaskStatus::InputRequired,
    TaskStatus::Working,
];

fn negotiated_of(bits: u8) -> Negotiated {
    Negotiated {
        tools_call: bits & 1 != 0,
        cancel: bits & 2 != 0,
        list: bits & 4 != 0,
    }
}

fn support_of(choice: u8) -> TaskSupport {
    [
        TaskSupport::Optional,
        TaskSupport::Required,
        TaskSupport::Forbidden,
    ][usize::from(choice % 3)]
}

fn caller_of(tenant: u8) -> String {
    format!("tenant-{tenant}")
}

/// The model's record of one task.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelTask {
    /// The owning tenant.
    pub owner: u8,
    /// The idempotency key it holds; `None` without one or once expired.
    pub key: Option<u8>,
    /// The argument set it was created with ([`CreateStep::args`]).
    pub args: u8,
    /// Its current status.
    pub status: TaskStatus,
    /// Its current version (1 at creation, +1 per applied write).
    pub version: u64,
    /// Creation time on the model clock, in ms.
    pub created_at_ms: u64,
    /// Expiry instant on the model clock, in ms; `None` without a TTL.
    pub expires_at_ms: Option<u64>,
    /// Its outbox entry.
    pub outbox: ModelOutbox,
}

/// The model's outbox entry of one task.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelOutbox {
    /// Claims so far (0: never claimed).
    pub attempt: u32,
    /// When the current claim's lease lapses, in ms; `None` when unclaimed or acked.
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
    /// The task version the worker saw when it claimed.
    pub version: u64,
}

/// What the store must answer to the step just applied.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Expect {
    /// No answer to compare (a crash, a clock advance).
    #[default]
    Nothing,
    /// A decision, and the `(task id, status, version)` the answer carries, if any.
    Answer {
        /// The decision expected.
        decision: Decision,
        /// The record shown, as `(task id, status, version)`; `None` when nothing is shown.
        record: Option<(String, TaskStatus, u64)>,
    },
    /// A list page: the decision, the ids in order, whether a next cursor comes.
    Page {
        /// The decision expected.
        decision: Decision,
        /// The task ids on the page, in order.
        ids: Vec<String>,
        /// Whether the page ends with a next-page cursor.
        more: bool,
    },
    /// A claim: `(task id, attempt, version, status)`, or nothing ready.
    Claim(Option<(String, u32, u64, TaskStatus)>),
    /// A write, then (when terminal) the worker's ack result.
    Write {
        /// The decision expected.
        decision: Decision,
        /// The record shown, as `(task id, status, version)`; `None` when nothing is shown.
        record: Option<(String, TaskStatus, u64)>,
        /// For a terminal write: whether the ack took (`false`: a stale attempt); `None`
        /// otherwise.
        acked: Option<bool>,
    },
    /// A sweep: how many tasks it deleted.
    Swept(usize),
}

/// The reference model.
#[derive(Clone, Debug, Default)]
pub struct Model {
    /// The model clock, in ms (starts at 0).
    pub now_ms: u64,
    /// Create steps so far; the next admitted id is `t{created:04}`.
    pub created: u32,
    /// Live tasks by id (swept ones removed).
    pub tasks: BTreeMap<String, ModelTask>,
    /// Every id ever admitted, in order: steps address tasks through it.
    pub ids: Vec<String>,
    /// `(tenant, idempotency key)` → the task the key is bound to.
    pub keys: BTreeMap<(u8, u8), String>,
    /// Per worker, the claim it holds.
    pub held: BTreeMap<u8, Held>,
    /// Per tenant, where its next page starts, if its last page said more follow.
    pub cursors: BTreeMap<u8, (u64, String)>,
    /// The id the last create step would admit.
    pub next_task_id: String,
    /// For a list step: whose cursor it sent, if any.
    pub sent_cursor_of: Option<u8>,
    /// For a write step: the claim it wrote with (the model may have dropped it since).
    pub wrote_with: Option<Held>,
    /// What the store must answer to the last step.
    pub expect: Expect,
}

impl Model {
    fn address(&self, task: u8) -> String {
        if task == 7 || self.ids.is_empty() {
            return MISSING_TASK.into();
        }
        // Recent tasks are addressed most.
        self.ids[self.ids.len() - 1 - usize::from(task) % self.ids.len()].clone()
    }

    fn expired(&self, task: &ModelTask) -> bool {
        task.expires_at_ms.is_some_and(|at| self.now_ms >= at)
    }

    fn shown(task_id: &str, task: &ModelTask) -> Option<(String, TaskStatus, u64)> {
        Some((task_id.to_owned(), task.status, task.version))
    }

    /// Not found → not yours → expired, the preamble of every one-task operation.
    fn locate(&self, tenant: u8, task_id: &str) -> Result<&ModelTask, Decision> {
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
    fn read(&self, tenant: u8, task: u8, decide: fn(&ModelTask) -> Decision) -> Expect {
        let task_id = self.address(task);
        match self.locate(tenant, &task_id) {
            Ok(task) => Expect::Answer {
                decision: decide(task),
                record: Model::shown(&task_id, task),
            },
            Err(decision) => Expect::Answer {
                decision,
                record: None,
            },
        }
    }

    fn visible(&self, tenant: u8) -> Vec<(u64, String)> {
        let mut visible: Vec<(u64, String)> = self
            .tasks
            .iter()
            .filter(|(_, task)| task.owner == tenant && !self.expired(task))
            .map(|(id, task)| (task.created_at_ms, id.clone()))
            .collect();
        visible.sort();
        visible
    }

    fn create(&mut self, step: &CreateStep) -> Expect {
        let CreateStep {
            tenant,
            key,
            args,
            support,
            task,
            negotiated,
            ttl,
        } = *step;
        self.created += 1;
        self.next_task_id = format!("t{:04}", self.created);
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
        if let Some(key) = key
            && let Some(bound_id) = self.keys.get(&(tenant, key)).cloned()
        {
            let bound = &self.tasks[&bound_id];
            if !self.expired(bound) {
                return if bound.args == args {
                    Expect::Answer {
                        decision: Decision::ReplayTask,
                        record: Model::shown(&bound_id, bound),
                    }
                } else {
                    bare(Decision::BlockIdempotencyCollision)
                };
            }
            // An expired task no longer holds its key.
            self.tasks.get_mut(&bound_id).expect("bound task").key = None;
            self.keys.remove(&(tenant, key));
        }
        let task_id = self.next_task_id.clone();
        let record = ModelTask {
            owner: tenant,
            key,
            args,
            status: TaskStatus::Working,
            version: 1,
            created_at_ms: self.now_ms,
            expires_at_ms: TTL_CHOICES_MS[usize::from(ttl % 3)].map(|ttl| self.now_ms + ttl),
            outbox: ModelOutbox {
                attempt: 0,
                lease_expires_at_ms: None,
                acked: false,
            },
        };
        if let Some(key) = key {
            self.keys.insert((tenant, key), task_id.clone());
        }
        let shown = Model::shown(&task_id, &record);
        self.tasks.insert(task_id.clone(), record);
        self.ids.push(task_id);
        Expect::Answer {
            decision: Decision::AcceptTask,
            record: shown,
        }
    }

    fn write(&mut self, worker: u8, next: TaskStatus, foreign: bool) -> Expect {
        let held = self
            .held
            .get(&worker)
            .cloned()
            .expect("precondition: holds");
        self.wrote_with = Some(held.clone());
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
            let task = self.tasks.get_mut(&held.task_id).expect("located");
            task.status = next;
            task.version += 1;
        }
        let record = match decision {
            Decision::BlockNotFound | Decision::BlockAuth => None,
            _ => self
                .tasks
                .get(&held.task_id)
                .and_then(|task| Model::shown(&held.task_id, task)),
        };
        // A worker acks once the task is terminal (its own write or one already there).
        let acked = if matches!(
            decision,
            Decision::ApplyTransition | Decision::IdempotentTerminal
        ) && next.is_terminal()
        {
            let outbox = &mut self.tasks.get_mut(&held.task_id).expect("located").outbox;
            let fresh = outbox.attempt == held.attempt && !outbox.acked;
            if fresh {
                outbox.acked = true;
                outbox.lease_expires_at_ms = None;
            }
            self.held.remove(&worker);
            Some(fresh)
        } else {
            None
        };
        Expect::Write {
            decision,
            record,
            acked,
        }
    }

    fn claim(&mut self, worker: u8) -> Expect {
        let now = self.now_ms;
        let ready = self
            .tasks
            .iter()
            .filter(|(_, task)| {
                !task.outbox.acked && task.outbox.lease_expires_at_ms.is_none_or(|at| at <= now)
            })
            .map(|(id, task)| (task.created_at_ms, id.clone()))
            .min();
        let Some((_, task_id)) = ready else {
            return Expect::Claim(None);
        };
        let task = self.tasks.get_mut(&task_id).expect("ready");
        task.outbox.attempt += 1;
        task.outbox.lease_expires_at_ms = Some(now + LEASE_MS);
        let claimed = (
            task_id.clone(),
            task.outbox.attempt,
            task.version,
            task.status,
        );
        self.held.insert(
            worker,
            Held {
                task_id,
                owner: task.owner,
                attempt: task.outbox.attempt,
                version: task.version,
            },
        );
        Expect::Claim(Some(claimed))
    }
}

/// The transition table, stated again (not `TaskStatus::can_transition_to`).
fn legal(from: TaskStatus, to: TaskStatus) -> bool {
    use TaskStatus::*;
    matches!(
        (from, to),
        (Working, InputRequired)
            | (InputRequired, Working)
            | (Working, Completed | Failed | Cancelled)
            | (InputRequired, Completed | Failed | Cancelled)
    )
}

/// The reference state machine.
pub struct ModelMachine;

fn negotiated_strategy() -> impl Strategy<Value = u8> {
    prop_oneof![4 => Just(7u8), 1 => 0u8..8]
}

impl ReferenceStateMachine for ModelMachine {
    type State = Model;
    type Transition = Step;

    fn init_state() -> BoxedStrategy<Model> {
        Just(Model::default()).boxed()
    }

    fn transitions(_state: &Model) -> BoxedStrategy<Step> {
        let tenant = 0..TENANTS;
        let worker = 0..WORKERS;
        prop_oneof![
            6 => (
                tenant.clone(),
                prop::option::weighted(0.7, 0u8..3),
                0u8..2,
                prop_oneof![4 => Just(0u8), 1 => 1u8..3],
                prop::bool::weighted(0.85),
                negotiated_strategy(),
                0u8..3,
            )
                .prop_map(|(tenant, key, args, support, task, negotiated, ttl)| {
                    Step::Create(CreateStep { tenant, key, args, support, task, negotiated, ttl })
                }),
            4 => (tenant.clone(), 0u8..8).prop_map(|(tenant, task)| Step::Get { tenant, task }),
            2 => (tenant.clone(), 0u8..8).prop_map(|(tenant, task)| Step::Result { tenant, task }),
            3 => (tenant.clone(), 0u8..8, negotiated_strategy())
                .prop_map(|(tenant, task, negotiated)| Step::Cancel { tenant, task, negotiated }),
            3 => (
                tenant.clone(),
                negotiated_strategy(),
                prop_oneof![Just(CursorUse::First), Just(CursorUse::Resume), Just(CursorUse::Foreign)],
            )
                .prop_map(|(tenant, negotiated, cursor)| Step::List { tenant, negotiated, cursor }),
            5 => worker.clone().prop_map(|worker| Step::Claim { worker }),
            6 => (worker.clone(), 0u8..4, prop::bool::weighted(0.15))
                .prop_map(|(worker, next, foreign)| Step::Write { worker, next, foreign }),
            1 => worker.prop_map(|worker| Step::Crash { worker }),
            1 => Just(Step::Sweep),
            3 => (1u16..700).prop_map(|ms| Step::Advance { ms }),
        ]
        .boxed()
    }

    fn preconditions(state: &Model, step: &Step) -> bool {
        match step {
            Step::Write { worker, .. } | Step::Crash { worker } => state.held.contains_key(worker),
            _ => true,
        }
    }

    fn apply(mut state: Model, step: &Step) -> Model {
        state.sent_cursor_of = None;
        state.wrote_with = None;
        state.expect = match *step {
            Step::Create(create) => state.create(&create),
            Step::Get { tenant, task } => state.read(tenant, task, |_| Decision::ReturnStatus),
            Step::Result { tenant, task } => state.read(tenant, task, |task| match task.status {
                TaskStatus::Working => Decision::WaitTerminal,
                TaskStatus::InputRequired => Decision::WaitInput,
                TaskStatus::Cancelled => Decision::ReturnCancelled,
                TaskStatus::Completed | TaskStatus::Failed => Decision::ReturnResult,
            }),
            Step::Cancel {
                tenant,
                task,
                negotiated,
            } => {
                let task_id = state.address(task);
                let decision = if !negotiated_of(negotiated).cancel {
                    Decision::BlockCapability
                } else {
                    match state.locate(tenant, &task_id) {
                        Err(decision) => decision,
                        Ok(task) if task.status.is_terminal() => Decision::AlreadyTerminal,
                        Ok(_) => Decision::ApplyCancel,
                    }
                };
                if decision == Decision::ApplyCancel {
                    let task = state.tasks.get_mut(&task_id).expect("located");
                    task.status = TaskStatus::Cancelled;
                    task.version += 1;
                }
                let record = match decision {
                    Decision::BlockCapability | Decision::BlockNotFound | Decision::BlockAuth => {
                        None
                    }
                    _ => Model::shown(&task_id, &state.tasks[&task_id]),
                };
                Expect::Answer { decision, record }
            }
            Step::List {
                tenant,
                negotiated,
                cursor,
            } => {
                let holder = match cursor {
                    CursorUse::First => None,
                    CursorUse::Resume => Some(tenant),
                    CursorUse::Foreign => Some((tenant + 1) % TENANTS),
                }
                .filter(|holder| state.cursors.contains_key(holder));
                state.sent_cursor_of = holder;
                if !negotiated_of(negotiated).list {
                    Expect::Page {
                        decision: Decision::BlockCapability,
                        ids: vec![],
                        more: false,
                    }
                } else if holder.is_some_and(|holder| holder != tenant) {
                    Expect::Page {
                        decision: Decision::BlockBadCursor,
                        ids: vec![],
                        more: false,
                    }
                } else {
                    let after = holder.and_then(|holder| state.cursors.get(&holder).cloned());
                    let rest: Vec<(u64, String)> = state
                        .visible(tenant)
                        .into_iter()
                        .filter(|position| after.as_ref().is_none_or(|after| position > after))
                        .collect();
                    let page: Vec<(u64, String)> = rest.iter().take(PAGE_LIMIT).cloned().collect();
                    let more = rest.len() > PAGE_LIMIT;
                    match (more, page.last()) {
                        (true, Some(last)) => {
                            state.cursors.insert(tenant, last.clone());
                        }
                        _ => {
                            state.cursors.remove(&tenant);
                        }
                    }
                    Expect::Page {
                        decision: Decision::ListTenantFiltered,
                        ids: page.into_iter().map(|(_, id)| id).collect(),
                        more,
                    }
                }
            }
            Step::Claim { worker } => state.claim(worker),
            Step::Write {
                worker,
                next,
                foreign,
            } => state.write(worker, WRITE_TARGETS[usize::from(next % 4)], foreign),
            Step::Crash { worker } => {
                state.held.remove(&worker);
                Expect::Nothing
            }
            Step::Sweep => {
                let expired: Vec<String> = state
                    .tasks
                    .iter()
                    .filter(|(_, task)| state.expired(task))
                    .map(|(id, _)| id.clone())
                    .collect();
                for id in &expired {
                    let task = state.tasks.remove(id).expect("listed");
                    if let Some(key) = task.key {
                        state.keys.remove(&(task.owner, key));
                    }
                }
                Expect::Swept(expired.len())
            }
            Step::Advance { ms } => {
                state.now_ms += u64::from(ms);
                Expect::Nothing
            }
        };
        state
    }
}

/// The system under test: a store and what its actors hold between steps.
pub struct Sut {
    store: Box<dyn TaskStore>,
    /// Per tenant, the next-page cursor its last page returned.
    cursors: BTreeMap<u8, String>,
}

impl Sut {
    /// A fresh store from `factory`, its cursors bound with the machine's secret.
    pub fn open(factory: &dyn StoreFactory) -> Result<Sut, StoreError> {
        let options = StoreOptions {
            cursor_secret: Some(b"proptest cursor secret".to_vec()),
        };
        Ok(Sut {
            store: factory.open(&options)?,
            cursors: BTreeMap::new(),
        })
    }

    /// Runs `step` against the store and compares the answer with `model.expect`
    /// (`model` is the state after the step).
    pub fn step(&mut self, model: &Model, step: &Step) -> Result<(), String> {
        let failed = |error: StoreError| format!("{step:?}: store error: {error}");
        let now_ms = model.now_ms;
        let shown = |answer: &crate::store::Answer| {
            answer
                .record
                .as_ref()
                .map(|record| (record.task_id.clone(), record.status, record.version))
        };
        let got = match *step {
            Step::Create(create) => {
                let answer = self
                    .store
                    .create(&CreateCommand {
                        caller: caller_of(create.tenant),
                        negotiated: negotiated_of(create.negotiated),
                        task_support: support_of(create.support),
                        task_requested: create.task,
                        idempotency_key: create.key.map(|key| format!("key-{key}")),
                        request: WrappedRequest {
                            method: "tools/call".into(),
                            name: "export".into(),
                            arguments: Some(json!({ "n": create.args })),
                        },
                        ttl_ms: TTL_CHOICES_MS[usize::from(create.ttl % 3)],
                        poll_interval_ms: None,
                        task_id: model.next_task_id.clone(),
                        correlation_id: model.next_task_id.clone(),
                        now_ms,
                        era: crate::contract::Era::Core2025,
                        input_responses: None,
                    })
                    .map_err(failed)?;
                Expect::Answer {
                    decision: answer.decision,
                    record: shown(&answer),
                }
            }
            Step::Get { tenant, task } | Step::Result { tenant, task } => {
                let task_id = model.address(task);
                let answer = if matches!(step, Step::Get { .. }) {
                    self.store.get(&caller_of(tenant), &task_id, now_ms)
                } else {
                    self.store.result(&caller_of(tenant), &task_id, now_ms)
                }
                .map_err(failed)?;
                let decision = answer.decision;
                // A refused read carries no record, whatever the store attached.
                let record = match decision {
                    Decision::ReturnStatus
                    | Decision::WaitTerminal
                    | Decision::WaitInput
                    | Decision::ReturnResult
                    | Decision::ReturnCancelled => shown(&answer),
                    _ => None,
                };
                Expect::Answer { decision, record }
            }
            Step::Cancel {
                tenant,
                task,
                negotiated,
            } => {
                let answer = self
                    .store
                    .cancel(
                        negotiated_of(negotiated),
                        &caller_of(tenant),
                        &model.address(task),
                        now_ms,
                    )
                    .map_err(failed)?;
                Expect::Answer {
                    decision: answer.decision,
                    record: shown(&answer),
                }
            }
            Step::List {
                tenant, negotiated, ..
            } => {
                let cursor = model
                    .sent_cursor_of
                    .and_then(|holder| self.cursors.get(&holder).cloned());
                let page = self
                    .store
                    .list(&ListQuery {
                        negotiated: negotiated_of(negotiated),
                        caller: caller_of(tenant),
                        cursor,
                        limit: PAGE_LIMIT,
                        now_ms,
                    })
                    .map_err(failed)?;
                if page.decision == Decision::ListTenantFiltered {
                    match &page.next_cursor {
                        Some(next) => self.cursors.insert(tenant, next.clone()),
                        None => self.cursors.remove(&tenant),
                    };
                }
                Expect::Page {
                    decision: page.decision,
                    ids: page.tasks.iter().map(|task| task.task_id.clone()).collect(),
                    more: page.next_cursor.is_some(),
                }
            }
            Step::Claim { worker } => {
                let claims = self
                    .store
                    .claim(&format!("worker-{worker}"), now_ms, LEASE_MS, 1)
                    .map_err(failed)?;
                Expect::Claim(claims.into_iter().next().map(|claim| {
                    (
                        claim.task_id,
                        claim.attempt,
                        claim.task_version,
                        claim.task_status,
                    )
                }))
            }
            Step::Write {
                worker,
                next,
                foreign,
            } => {
                let held = model
                    .wrote_with
                    .clone()
                    .ok_or_else(|| format!("worker-{worker} writes without a claim"))?;
                let next = WRITE_TARGETS[usize::from(next % 4)];
                let caller = if foreign {
                    (held.owner + 1) % TENANTS
                } else {
                    held.owner
                };
                let answer = self
                    .store
                    .transition(&TransitionCommand {
                        task_id: held.task_id.clone(),
                        caller: caller_of(caller),
                        expected_version: held.version,
                        next,
                        outcome: next.is_terminal().then(|| TaskOutcome::Result {
                            result: json!({ "content": [], "isError": next == TaskStatus::Failed }),
                        }),
                        status_message: None,
                        now_ms,
                        input_requests: None,
                    })
                    .map_err(failed)?;
                let acked = if matches!(
                    answer.decision,
                    Decision::ApplyTransition | Decision::IdempotentTerminal
                ) && next.is_terminal()
                {
                    Some(
                        self.store
                            .ack(&held.task_id, held.attempt, now_ms)
                            .map_err(failed)?,
                    )
                } else {
                    None
                };
                Expect::Write {
                    decision: answer.decision,
                    record: shown(&answer),
                    acked,
                }
            }
            Step::Sweep => Expect::Swept(self.store.sweep_expired(now_ms, 100).map_err(failed)?),
            Step::Crash { .. } | Step::Advance { .. } => Expect::Nothing,
        };
        if got != model.expect {
            return Err(format!(
                "{step:?} at {now_ms} ms: the store answered {got:?}, the model expects {:?}",
                model.expect
            ));
        }
        self.compare_state(model)
    }

    /// The whole store read back: every model task with its status and version, and no
    /// task the model does not know.
    fn compare_state(&self, model: &Model) -> Result<(), String> {
        for (task_id, task) in &model.tasks {
            let stored = self
                .store
                .read(task_id)
                .map_err(|error| format!("read {task_id}: {error}"))?;
            let Some(stored) = stored else {
                return Err(format!("{task_id} is missing from the store"));
            };
            if (stored.status, stored.version, stored.auth_key.as_str())
                != (task.status, task.version, caller_of(task.owner).as_str())
            {
                return Err(format!(
                    "{task_id} is stored as {} v{} of {}, the model has {} v{} of {}",
                    stored.status.as_str(),
                    stored.version,
                    stored.auth_key,
                    task.status.as_str(),
                    task.version,
                    caller_of(task.owner)
                ));
            }
        }
        if let Some(extra) = model
            .ids
            .iter()
            .filter(|id| !model.tasks.contains_key(*id))
            .find(|id| matches!(self.store.read(id), Ok(Some(_))))
        {
            return Err(format!(
                "{extra} was swept in the model but the store kept it"
            ));
        }
        Ok(())
    }
}

/// Runs one case: every step through the model and the store, compared step by step.
///
/// `seen` counts the steps applied, as proptest-state-machine's shrinker needs (it first
/// drops the steps a failing case never reached).
pub fn run_steps(
    factory: &dyn StoreFactory,
    steps: &[Step],
    seen: Option<&std::sync::atomic::AtomicUsize>,
) -> Result<(), String> {
    let mut sut = Sut::open(factory).map_err(|error| format!("open the store: {error}"))?;
    let mut model = Model::default();
    for step in steps {
        if let Some(seen) = seen {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        if !ModelMachine::preconditions(&model, step) {
            continue;
        }
        model = ModelMachine::apply(model, step);
        sut.step(&model, step)?;
    }
    Ok(())
}

/// The proptest-state-machine binding, for `prop_state_machine!` tests: each case runs on
/// a fresh store from `F::default()` (e.g. `StoreMachine<MemoryFactory>`).
pub struct StoreMachine<F>(std::marker::PhantomData<F>);

impl<F: StoreFactory + Default> StateMachineTest for StoreMachine<F> {
    type SystemUnderTest = Sut;
    type Reference = ModelMachine;

    fn init_test(_model: &Model) -> Sut {
        Sut::open(&F::default()).expect("open the store under test")
    }

    fn apply(mut sut: Sut, model: &Model, step: Step) -> Sut {
        if let Err(message) = sut.step(model, &step) {
            panic!("{message}");
        }
        sut
    }
}

/// What a search found.
#[derive(Clone, Debug)]
pub struct Found {
    /// Cases run up to and including the first failing one.
    pub cases_to_fail: u32,
    /// The shrunk failing sequence.
    pub steps: Vec<Step>,
    /// The failure, as the comparison worded it.
    pub message: String,
}

/// Runs `cases` generated cases from `seed` against stores from `factory`; the first
/// failure is shrunk. No persistence: the matrix and tests that need it configure their own.
pub fn search(factory: &dyn StoreFactory, cases: u32, seed: u64) -> Result<(), Found> {
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        config,
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes),
    );
    let ran = std::cell::Cell::new(0u32);
    let first_fail = std::cell::Cell::new(None);
    let result = runner.run(
        &ModelMachine::sequential_strategy(1..STEPS_MAX),
        |(_, steps, seen)| {
            if first_fail.get().is_none() {
                ran.set(ran.get() + 1);
            }
            run_steps(factory, &steps, seen.as_deref()).map_err(|message| {
                if first_fail.get().is_none() {
                    first_fail.set(Some(ran.get()));
                }
                TestCaseError::fail(message)
            })
        },
    );
    match result {
        Ok(()) => Ok(()),
        Err(proptest::test_runner::TestError::Fail(reason, (_, steps, _))) => Err(Found {
            cases_to_fail: first_fail.get().unwrap_or(ran.get()),
            message: reason.message().to_owned(),
            steps,
        }),
        Err(proptest::test_runner::TestError::Abort(reason)) => Err(Found {
            cases_to_fail: ran.get(),
            steps: vec![],
            message: format!("aborted: {}", reason.message()),
        }),
    }
}
