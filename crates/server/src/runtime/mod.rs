//! The outbox → queue → worker runtime, written once: tokio runs it for real, madsim runs
//! the same code in the simulation.
//!
//! - The **dispatcher** claims outbox entries under a lease and publishes them to the
//!   queue. It never acknowledges an entry: the entry stays until its task is terminal,
//!   and its lease expiring republishes it. So a lost message, a killed dispatcher or a
//!   wiped queue costs time, never a task (no orphans).
//! - A **worker** receives a message under a queue lease, reads the task (the version it
//!   sees is the one its completion write will expect), runs the tool — the side effect —
//!   and writes the terminal status by compare-and-swap. Then it acknowledges the outbox
//!   entry (with the attempt that published it) and the message. Redelivery is expected:
//!   a worker that finds the task terminal just acknowledges; a stale or late write is
//!   refused by the store, never applied twice.
//! - The **sweeper** deletes expired tasks and frees expired outbox leases.
//!
//! The worker is disposable; the record is not. Every loop is bounded per iteration and
//! stops when the shutdown flag is set (or its node is killed, in the simulation).
//! [`Probe`] marks the named points of docs/design.md §7 so the simulation can kill there.

pub mod effect;
pub mod env;
pub mod queue;

pub use effect::{Effects, MemoryEffects, NoEffects, Settled};
pub use env::{BoxFuture, Env, TokioEnv};
pub use queue::{Delivery, MemoryQueue, Message, Queue, QueueError, Receipt};

use crate::contract::{Decision, InputMap, TaskOutcome, TaskRecord, TaskStatus};
use crate::store::{Answer, StoreError, TaskStore, TransitionCommand, WrappedRequest};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The named points of the runtime where a crash matters (docs/design.md §7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Point {
    /// Dispatcher: outbox entry claimed (leased), not yet published.
    AfterOutboxClaim,
    /// Dispatcher: published to the queue; the entry is only leased, not acknowledged.
    AfterPublish,
    /// Worker: message received and task read, side effect not yet run.
    AfterClaim,
    /// Worker: the tool ran (a deferred effect is prepared, an immediate one done),
    /// completion not yet written.
    AfterEffect,
    /// Worker: the tool prepared a deferred effect (invisible); completion not yet decided.
    /// Passed only by runs that answered [`ToolStep::Prepared`].
    AfterPrepare,
    /// Worker: the completion compare-and-swap answered (whoever won); the prepared effect
    /// is neither published nor discarded, the outbox entry not acknowledged.
    AfterDecide,
    /// Worker: completion written and effect settled; outbox and message not yet
    /// acknowledged.
    AfterCompletion,
}

/// Scenario files name points as [`Point::name`] spells them.
impl serde::Serialize for Point {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Point {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Point, D::Error> {
        let name = String::deserialize(deserializer)?;
        Point::parse(&name).map_err(serde::de::Error::custom)
    }
}

impl Point {
    /// Every point, in the order a task passes them.
    pub const ALL: [Point; 7] = [
        Point::AfterOutboxClaim,
        Point::AfterPublish,
        Point::AfterClaim,
        Point::AfterEffect,
        Point::AfterPrepare,
        Point::AfterDecide,
        Point::AfterCompletion,
    ];

    /// The point named `name` (as [`Point::name`] spells it).
    pub fn parse(name: &str) -> Result<Point, String> {
        Point::ALL
            .into_iter()
            .find(|point| point.name() == name)
            .ok_or_else(|| {
                let known: Vec<&str> = Point::ALL.iter().map(|point| point.name()).collect();
                format!("unknown point {name:?} (known: {})", known.join(", "))
            })
    }

    /// The kebab-case name scenario files and the command line use (`"after-effect"`, …).
    pub const fn name(self) -> &'static str {
        match self {
            Point::AfterOutboxClaim => "after-outbox-claim",
            Point::AfterPublish => "after-publish",
            Point::AfterClaim => "after-claim",
            Point::AfterEffect => "after-effect",
            Point::AfterPrepare => "after-prepare",
            Point::AfterDecide => "after-decide",
            Point::AfterCompletion => "after-completion",
        }
    }
}

/// Observes the runtime passing a [`Point`]. In production it does nothing; the
/// simulation awaits there (an await is where madsim can kill a node) or crashes.
pub trait Probe: Send + Sync {
    /// Called as the runtime passes `point` for `task_id`; the runtime awaits the future.
    fn at(&self, point: Point, task_id: &str) -> BoxFuture<'static, ()>;

    /// Notes that something worth counting happened to `task_id` (e.g.
    /// `duplicate-absorbed`); the simulation turns these into coverage marks and facts
    /// its oracle holds to a rule.
    fn observe(&self, _what: &'static str, _task_id: &str) {}
}

/// The production probe: returns at once.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProbe;

impl Probe for NoProbe {
    fn at(&self, _point: Point, _task_id: &str) -> BoxFuture<'static, ()> {
        Box::pin(std::future::ready(()))
    }
}

/// One tool invocation for a task.
#[derive(Clone, Debug)]
pub struct Invocation {
    /// The task as the worker read it (its version is the one the completion will expect).
    pub task: TaskRecord,
    /// The `tools/call` the task wraps.
    pub request: WrappedRequest,
    /// When the worker read the task and found it live (ms since the epoch): the run is
    /// owed only if it was neither terminal nor expired then.
    pub read_at_ms: u64,
}

/// What a tool run came to.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolStep {
    /// The request's final outcome (an `isError` result or an RPC error means `failed`).
    Finished(TaskOutcome),
    /// The final outcome, with a status message the task keeps (e.g. "exported 1,204
    /// rows"); synchronous calls have no task to keep it and answer as [`Finished`].
    ///
    /// [`Finished`]: ToolStep::Finished
    FinishedWithMessage {
        /// The outcome, as in [`ToolStep::Finished`].
        outcome: TaskOutcome,
        /// The task's `statusMessage` from now on.
        message: String,
    },
    /// The final outcome of a run that *prepared* its side effect under the task id
    /// without making it visible: the runtime publishes it once the completion is decided
    /// and discards it if the task ends any other way ([`effect`]). Only a task's run
    /// prepares; a synchronous call makes its effect visible itself.
    Prepared {
        /// The outcome, as in [`ToolStep::Finished`].
        outcome: TaskOutcome,
        /// The task's `statusMessage` from now on, if the tool sets one.
        message: Option<String>,
    },
    /// The tool needs the requestor first: the task moves to `input_required` with these
    /// questions, and runs again (with the answers in `Invocation::task.input_responses`)
    /// once they are answered.
    NeedsInput(InputAsk),
    /// The tool is about to do what it cannot defer or undo (a call to an outside API):
    /// its **point of no return**. The runtime declares it on the task (a compare-and-swap
    /// that a cancel can still win, in which case the tool is not run again and the effect
    /// never starts) and, once declared, runs the tool again with
    /// `Invocation::task.irreversible_effect` set: that run performs the effect. From the
    /// declaration on, a 2026-07-28 cancel is acknowledged and the task runs to its end; a
    /// 2025-11-25 cancel still ends it `cancelled`, with a status message naming `effect`.
    /// Return it only while `irreversible_effect` is `None`, and only from a task's run.
    PointOfNoReturn {
        /// What is about to happen, for the requestor (e.g. `POST https://hooks.example/`);
        /// 1 to [`crate::store::IRREVERSIBLE_EFFECT_BYTES_MAX`] bytes.
        effect: String,
    },
}

/// What a tool asks of its requestor before it can go on.
#[derive(Clone, Debug, PartialEq)]
pub struct InputAsk {
    /// The task's `statusMessage` while it waits.
    pub message: String,
    /// The questions by key (e.g. `{"confirm": {"method": "elicitation/create", …}}`);
    /// at least one, each key new for the task (keys already answered are dropped).
    pub requests: InputMap,
}

/// Runs tools: the side effect. Must be idempotent per task id (a task may be delivered
/// again after a crash between its effect and its completion write). A tool whose effect
/// can wait prepares it and answers [`ToolStep::Prepared`]; the runtime's [`Effects`]
/// publishes or discards it.
pub trait Tools: Send + Sync {
    /// Runs the tool the invocation names, to its outcome or to a request for input.
    fn run(&self, invocation: Invocation) -> BoxFuture<'static, ToolStep>;
}

/// Told of every status change the runtime applies, with the record after it: where a
/// server sends `notifications/tasks/status`. It must never be the only copy of anything.
pub trait Notify: Send + Sync {
    /// `record` is the task just after the change; called after the store applied it.
    fn status_changed(&self, record: &TaskRecord);
}

/// Tells no one.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoNotify;

impl Notify for NoNotify {
    fn status_changed(&self, _record: &TaskRecord) {}
}

/// Timing of the runtime's loops.
#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    /// How long a published outbox entry waits before it is republished (if its task is
    /// still not terminal). Longer than a tool normally runs.
    pub republish_after_ms: u64,
    /// How long a received message is leased to its worker.
    pub queue_lease_ms: u64,
    /// Sleep when a loop finds nothing to do.
    pub idle_ms: u64,
    /// Entries the dispatcher claims per round.
    pub dispatch_batch: usize,
    /// Time between two sweeper rounds.
    pub sweep_every_ms: u64,
    /// Expired tasks deleted per sweeper round, at most (expired outbox leases are all freed).
    pub sweep_batch: usize,
    /// Delay before a message whose task changed under the worker is tried again.
    pub retry_after_ms: u64,
}

impl Default for RuntimeConfig {
    fn default() -> RuntimeConfig {
        RuntimeConfig {
            republish_after_ms: 30_000,
            queue_lease_ms: 30_000,
            idle_ms: 20,
            dispatch_batch: 32,
            sweep_every_ms: 1_000,
            sweep_batch: 256,
            retry_after_ms: 50,
        }
    }
}

/// Counters a runtime keeps (monotonic; for tests, benchmarks and the simulation's marks).
#[derive(Debug, Default)]
pub struct Counters {
    /// Messages the dispatcher published to the queue (republications included).
    pub published: AtomicU64,
    /// Tool runs workers finished (a redelivered task may run again).
    pub effects_run: AtomicU64,
    /// Completion writes the store applied.
    pub completions_applied: AtomicU64,
    /// Deliveries whose task was already terminal (duplicates absorbed).
    pub duplicates_absorbed: AtomicU64,
    /// Completion writes the store refused as stale or as a terminal rewrite.
    pub writes_refused: AtomicU64,
    /// Loop steps that failed on a store error (the loop backs off and tries again).
    pub store_errors: AtomicU64,
}

/// The runtime: store, queue, tools and environment, and the loops over them.
pub struct Runtime {
    store: Arc<dyn TaskStore>,
    queue: Arc<dyn Queue>,
    tools: Arc<dyn Tools>,
    effects: Arc<dyn Effects>,
    env: Arc<dyn Env>,
    probe: Arc<dyn Probe>,
    notify: Arc<dyn Notify>,
    config: RuntimeConfig,
    /// What the loops have done so far.
    pub counters: Counters,
    shutdown: AtomicBool,
    /// Worker loops not yet returned (a drain waits for them).
    workers_running: std::sync::atomic::AtomicUsize,
    /// Wake-ups, if the runtime was given them ([`Runtime::with_bells`]).
    bells: Option<Bells>,
    /// Worker loops started (how many the dispatcher may wake at once).
    workers_started: std::sync::atomic::AtomicUsize,
}

/// Wake-ups that cut the idle sleeps short: the dispatcher's when a task was admitted
/// (rung by the server), a worker's when the dispatcher published. The sleeps stay, as the
/// fallback a missed ring costs (a ring while the loop is busy is kept for its next idle).
struct Bells {
    dispatch: Arc<tokio::sync::Notify>,
    work: tokio::sync::Notify,
}

/// What one worker step did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkStep {
    /// No message was due: nothing happened.
    Idle,
    /// The task was terminal, gone or expired: acknowledged without running anything.
    Absorbed,
    /// The tool ran and the completion write returned this decision.
    Ran(Decision),
    /// The task changed under the worker (e.g. `input_required`): tried again later.
    Retried,
}

impl Runtime {
    /// A runtime over these parts; nothing runs until [`Runtime::start`] (or a `run_*` loop).
    pub fn new(
        store: Arc<dyn TaskStore>,
        queue: Arc<dyn Queue>,
        tools: Arc<dyn Tools>,
        env: Arc<dyn Env>,
        probe: Arc<dyn Probe>,
        notify: Arc<dyn Notify>,
        config: RuntimeConfig,
    ) -> Runtime {
        Runtime {
            store,
            queue,
            tools,
            effects: Arc::new(NoEffects),
            env,
            probe,
            notify,
            config,
            counters: Counters::default(),
            shutdown: AtomicBool::new(false),
            workers_running: std::sync::atomic::AtomicUsize::new(0),
            bells: None,
            workers_started: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// The runtime with its loops woken instead of waiting out `idle_ms`: the dispatcher
    /// by `admitted` (which the server rings after each admission), the workers by the
    /// dispatcher when it published; while nothing comes, their sleeps lengthen (see
    /// `idle`). Without bells, the loops poll every `idle_ms`, as a runtime in another
    /// process than its server must.
    pub fn with_bells(mut self, admitted: Arc<tokio::sync::Notify>) -> Runtime {
        self.bells = Some(Bells {
            dispatch: admitted,
            work: tokio::sync::Notify::new(),
        });
        self
    }

    /// Sleeps `idle_ms`, or less if `bell` rings first. A loop with a bell doubles its
    /// sleep for each idle round before (`idle_rounds`), up to [`IDLE_DOUBLINGS_MAX`] times:
    /// new work rings it at once, so the sleep bounds only what comes unrung (an expired
    /// lease, a ring lost while it was busy), and an idle server wakes less often.
    async fn idle(&self, bell: Option<&tokio::sync::Notify>, idle_rounds: u32) {
        let idle_ms = match bell {
            None => self.config.idle_ms,
            Some(_) => self.config.idle_ms << idle_rounds.min(IDLE_DOUBLINGS_MAX),
        };
        let sleep = self.env.sleep(idle_ms);
        match bell {
            None => sleep.await,
            Some(bell) => {
                tokio::select! {
                    biased;
                    () = bell.notified() => {}
                    () = sleep => {}
                }
            }
        }
    }

    /// The runtime with `effects` publishing and discarding what its tools prepare
    /// ([`ToolStep::Prepared`]); without one, nothing prepared is ever published.
    pub fn with_effects(mut self, effects: Arc<dyn Effects>) -> Runtime {
        self.effects = effects;
        self
    }

    /// Asks every loop to stop after its current step.
    pub fn shut_down(&self) {
        self.shutdown.store(true, Ordering::SeqCst);
    }

    /// Whether [`Runtime::shut_down`] was called; loops check it between steps.
    pub fn is_shut_down(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst)
    }

    /// One dispatcher round: claim due outbox entries and publish them. Returns how many
    /// were published.
    pub async fn dispatch_once(&self, dispatcher: &str) -> Result<usize, StoreError> {
        let now_ms = self.env.now_ms();
        // Claim no more than the queue takes: an entry claimed but not published would sit
        // leased until `republish_after_ms`, and under a backlog every round would lease
        // another batch it cannot publish.
        let batch = match self.queue.room().map_err(queue_error)? {
            Some(room) => self.config.dispatch_batch.min(room),
            None => self.config.dispatch_batch,
        };
        if batch == 0 {
            return Ok(0);
        }
        let claims = self
            .store
            .claim(dispatcher, now_ms, self.config.republish_after_ms, batch)?;
        let mut published = 0;
        for claim in claims {
            if claim.task_status.is_terminal() {
                // Finished (its worker died before acking): settle its effect, which that
                // worker may have left undone, then retire the entry.
                let settled =
                    effect::settle(&*self.effects, &claim.task_id, Some(claim.task_status))?;
                self.observe_late_settle(settled, &claim.task_id);
                self.store
                    .ack(&claim.task_id, claim.attempt, self.env.now_ms())?;
                continue;
            }
            self.probe.at(Point::AfterOutboxClaim, &claim.task_id).await;
            let message = Message {
                task_id: claim.task_id.clone(),
                auth_key: claim.auth_key,
                request: claim.request,
                outbox_attempt: claim.attempt,
            };
            // A full queue is not an error for the entry: its lease expires and it is
            // published again later.
            if self.queue.publish(message, self.env.now_ms()).is_ok() {
                published += 1;
                self.counters.published.fetch_add(1, Ordering::Relaxed);
            }
            self.probe.at(Point::AfterPublish, &claim.task_id).await;
        }
        Ok(published)
    }

    /// One worker step: receive a message and carry its task to a terminal status.
    pub async fn work_once(&self) -> Result<WorkStep, StoreError> {
        let now_ms = self.env.now_ms();
        let Some(delivery) = self
            .queue
            .receive(now_ms, self.config.queue_lease_ms)
            .map_err(queue_error)?
        else {
            return Ok(WorkStep::Idle);
        };
        let Some(task) = self.task_to_run(&delivery, now_ms)? else {
            return Ok(WorkStep::Absorbed);
        };
        if task.status == TaskStatus::InputRequired {
            // Waiting for the requestor: look again later.
            return self.retry_later(&delivery);
        }
        self.probe.at(Point::AfterClaim, &task.task_id).await;
        let request = &delivery.message.request;
        let mut task = task;
        let mut step = self.run_tool(&task, request, now_ms).await;
        if let ToolStep::PointOfNoReturn { effect } = step {
            // The declaration's write finds the task live (or is refused) at this time.
            let declared_at_ms = self.env.now_ms();
            match self.declare_point(&delivery, task, effect).await? {
                ControlFlow::Break(done) => return Ok(done),
                ControlFlow::Continue(declared) => {
                    task = declared;
                    step = self.run_tool(&task, request, declared_at_ms).await;
                }
            }
        }
        let (outcome, message, prepared) = match step {
            ToolStep::PointOfNoReturn { .. } => {
                let outcome = tool_declared_twice(&task.task_id);
                return self.complete(&delivery, &task, outcome, None, false).await;
            }
            ToolStep::Finished(outcome) => (outcome, None, false),
            ToolStep::FinishedWithMessage { outcome, message } => (outcome, Some(message), false),
            ToolStep::Prepared { outcome, message } => {
                self.probe.at(Point::AfterPrepare, &task.task_id).await;
                (outcome, message, true)
            }
            ToolStep::NeedsInput(ask) => return self.ask_requestor(&delivery, &task, ask).await,
        };
        self.complete(&delivery, &task, outcome, message, prepared)
            .await
    }

    /// The delivered task as stored now (the version its completion write will expect), or
    /// `None` when there is nothing to run: a terminal task (a duplicate delivery, its
    /// settle finished here) or a task gone or expired.
    fn task_to_run(
        &self,
        delivery: &Delivery,
        now_ms: u64,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let message = &delivery.message;
        let answer = self
            .store
            .get(&message.auth_key, &message.task_id, now_ms)?;
        match (answer.decision, answer.record) {
            (Decision::ReturnStatus, Some(task)) if !task.status.is_terminal() => Ok(Some(task)),
            (Decision::ReturnStatus, Some(terminal)) => {
                self.counters
                    .duplicates_absorbed
                    .fetch_add(1, Ordering::Relaxed);
                self.probe.observe("duplicate-absorbed", &message.task_id);
                // Its worker may have died between decide and publish: finish the settle.
                let settled =
                    effect::settle(&*self.effects, &message.task_id, Some(terminal.status))?;
                self.observe_late_settle(settled, &message.task_id);
                self.finish(delivery)?;
                Ok(None)
            }
            (_, record) => {
                // Gone or expired: nothing to run; what it prepared follows its stored
                // status; the sweeper retires what is left.
                self.probe.observe("expired-before-run", &message.task_id);
                let status = effect::status_to_settle(record.as_ref(), now_ms);
                effect::settle(&*self.effects, &message.task_id, status)?;
                self.queue.ack(delivery.receipt).map_err(queue_error)?;
                Ok(None)
            }
        }
    }

    /// Declares the tool's point of no return at the version the worker read: the task
    /// after it, to run the tool again past the point, or the step that ends the delivery
    /// (a second declaration is a tool bug; a refused one, a cancel that won).
    async fn declare_point(
        &self,
        delivery: &Delivery,
        task: TaskRecord,
        effect: String,
    ) -> Result<ControlFlow<WorkStep, TaskRecord>, StoreError> {
        if task.irreversible_effect.is_some() {
            // Declared already (this run or one before a crash): a tool bug, which must not
            // loop or strand the task.
            let outcome = tool_declared_twice(&task.task_id);
            let done = self.complete(delivery, &task, outcome, None, false).await?;
            return Ok(ControlFlow::Break(done));
        }
        let declared = self.store.transition(&TransitionCommand {
            task_id: task.task_id.clone(),
            caller: task.auth_key.clone(),
            expected_version: task.version,
            next: TaskStatus::Working,
            outcome: None,
            status_message: Some(crate::store::point_of_no_return_message(&effect)),
            input_requests: None,
            irreversible_effect: Some(effect),
            now_ms: self.env.now_ms(),
        })?;
        match (declared.decision, declared.record) {
            (Decision::ApplyTransition, Some(record)) => {
                self.notify.status_changed(&record);
                Ok(ControlFlow::Continue(record))
            }
            (decision, record) => {
                // A cancel won the point of no return: the effect never starts.
                if record.as_ref().map(|record| record.status) == Some(TaskStatus::Cancelled) {
                    self.probe
                        .observe("cancel-beat-point-of-no-return", &task.task_id);
                }
                let refused = Answer::new(decision, record);
                let done = self
                    .after_refused_write(delivery, &task, refused, false)
                    .await?;
                Ok(ControlFlow::Break(done))
            }
        }
    }

    /// Moves the task to `input_required` with the questions not yet answered, and looks
    /// again later; a tool that asks nothing new fails its task instead.
    async fn ask_requestor(
        &self,
        delivery: &Delivery,
        task: &TaskRecord,
        ask: InputAsk,
    ) -> Result<WorkStep, StoreError> {
        let mut requests = ask.requests;
        if let Some(answered) = &task.input_responses {
            requests.retain(|key, _| !answered.contains_key(key));
        }
        if requests.is_empty() {
            // Nothing new to ask: a tool bug, which must not strand the task.
            let outcome = tool_asked_nothing(&task.task_id);
            return self.complete(delivery, task, outcome, None, false).await;
        }
        let asked = self.store.transition(&TransitionCommand {
            irreversible_effect: None,
            task_id: task.task_id.clone(),
            caller: task.auth_key.clone(),
            expected_version: task.version,
            next: TaskStatus::InputRequired,
            outcome: None,
            status_message: Some(ask.message),
            input_requests: Some(requests),
            now_ms: self.env.now_ms(),
        })?;
        if let (Decision::ApplyTransition, Some(record)) = (asked.decision, &asked.record) {
            self.notify.status_changed(record);
        }
        // Whatever happened, look again later: the task answers for itself.
        self.retry_later(delivery)
    }

    /// Writes a run's outcome as the task's terminal status, at the version the worker
    /// read (the decide step), settles what the run `prepared` by what the store then holds,
    /// and settles the delivery.
    async fn complete(
        &self,
        delivery: &Delivery,
        task: &TaskRecord,
        outcome: TaskOutcome,
        status_message: Option<String>,
        prepared: bool,
    ) -> Result<WorkStep, StoreError> {
        let next = match &outcome {
            TaskOutcome::Result { result }
                if result["isError"] == serde_json::Value::Bool(true)
                    && task.era.tool_error_fails_task() =>
            {
                TaskStatus::Failed
            }
            TaskOutcome::Result { .. } => TaskStatus::Completed,
            TaskOutcome::RpcError { .. } => TaskStatus::Failed,
        };
        let written = effect::decide(
            &*self.store,
            &*self.effects,
            &TransitionCommand {
                irreversible_effect: None,
                task_id: task.task_id.clone(),
                caller: task.auth_key.clone(),
                expected_version: task.version,
                next,
                outcome: Some(outcome),
                status_message,
                now_ms: self.env.now_ms(),
                input_requests: None,
            },
        )?;
        self.probe.at(Point::AfterDecide, &task.task_id).await;
        let stored = written.record.as_ref().map(|record| record.status);
        match written.decision {
            Decision::ApplyTransition => {
                self.counters
                    .completions_applied
                    .fetch_add(1, Ordering::Relaxed);
                // Published before anyone is told, so a reader told `completed` finds it.
                effect::settle(&*self.effects, &task.task_id, stored)?;
                if let Some(record) = &written.record {
                    self.notify.status_changed(record);
                }
                self.probe.at(Point::AfterCompletion, &task.task_id).await;
                self.finish(delivery)?;
            }
            _ => {
                return self
                    .after_refused_write(delivery, task, written, prepared)
                    .await;
            }
        }
        Ok(WorkStep::Ran(Decision::ApplyTransition))
    }

    /// Runs the task's tool once, on the task as read live at `read_at_ms`.
    async fn run_tool(
        &self,
        task: &TaskRecord,
        request: &WrappedRequest,
        read_at_ms: u64,
    ) -> ToolStep {
        let step = self
            .tools
            .run(Invocation {
                task: task.clone(),
                request: request.clone(),
                read_at_ms,
            })
            .await;
        self.counters.effects_run.fetch_add(1, Ordering::Relaxed);
        self.probe.at(Point::AfterEffect, &task.task_id).await;
        step
    }

    /// After a worker's write (a completion, or a point of no return) was refused: the
    /// stored fact stands, what the run `prepared` follows it, and the delivery is retired
    /// or retried.
    async fn after_refused_write(
        &self,
        delivery: &Delivery,
        task: &TaskRecord,
        written: Answer,
        prepared: bool,
    ) -> Result<WorkStep, StoreError> {
        let stored = written.record.as_ref().map(|record| record.status);
        match written.decision {
            Decision::IdempotentTerminal | Decision::BlockTerminalRewrite => {
                // Someone else finished it (or it was cancelled): the stored fact stands,
                // and the effect follows it.
                self.counters.writes_refused.fetch_add(1, Ordering::Relaxed);
                if prepared && stored == Some(TaskStatus::Cancelled) {
                    self.probe.observe("cancel-beat-decide", &task.task_id);
                }
                effect::settle(&*self.effects, &task.task_id, stored)?;
                self.probe.at(Point::AfterCompletion, &task.task_id).await;
                self.finish(delivery)?;
            }
            Decision::BlockStaleVersion | Decision::BlockIllegalTransition => {
                // Still live (e.g. answered input meanwhile): what this run prepared waits
                // for the run that decides; that run prepares again, idempotently.
                self.counters.writes_refused.fetch_add(1, Ordering::Relaxed);
                return self.retry_later(delivery);
            }
            _ => {
                // Expired, gone or not ours: nothing more to do for this message.
                self.counters.writes_refused.fetch_add(1, Ordering::Relaxed);
                let status = effect::status_to_settle(written.record.as_ref(), self.env.now_ms());
                effect::settle(&*self.effects, &task.task_id, status)?;
                self.queue.ack(delivery.receipt).map_err(queue_error)?;
            }
        }
        Ok(WorkStep::Ran(written.decision))
    }

    /// Makes a delivery visible again after `retry_after_ms`: its task changed under the
    /// worker, or waits for its requestor.
    fn retry_later(&self, delivery: &Delivery) -> Result<WorkStep, StoreError> {
        self.queue
            .nack(
                delivery.receipt,
                self.env.now_ms() + self.config.retry_after_ms,
            )
            .map_err(queue_error)?;
        Ok(WorkStep::Retried)
    }

    /// Retires a delivery whose task is terminal: the outbox entry, then the message.
    fn finish(&self, delivery: &Delivery) -> Result<(), StoreError> {
        let message = &delivery.message;
        // False when the entry was republished meanwhile; that delivery will retire it.
        self.store
            .ack(&message.task_id, message.outbox_attempt, self.env.now_ms())?;
        self.queue.ack(delivery.receipt).map_err(queue_error)?;
        Ok(())
    }

    /// Marks a settle done on behalf of a worker that died before it.
    fn observe_late_settle(&self, settled: Settled, task_id: &str) {
        match settled {
            Settled::Published(true) => self
                .probe
                .observe("effect-published-on-redelivery", task_id),
            Settled::Discarded(true) => self
                .probe
                .observe("effect-discarded-on-redelivery", task_id),
            _ => {}
        }
    }

    /// One sweeper round: the prepared effects of tasks that ended or are gone settled (a
    /// worker died holding them after its entry was retired, or before its task expired),
    /// then expired tasks deleted — only once every prepared effect was looked at, so a
    /// completed task's effect is published while its record still says so — and expired
    /// outbox leases freed.
    pub fn sweep_once(&self) -> Result<(usize, usize), StoreError> {
        let now_ms = self.env.now_ms();
        let prepared = self
            .effects
            .prepared(SETTLES_PER_SWEEP_MAX + 1)
            .map_err(|cause| effect::effect_error("list prepared side effects", cause))?;
        for task_id in prepared.iter().take(SETTLES_PER_SWEEP_MAX) {
            let status = effect::status_to_settle(self.store.read(task_id)?.as_ref(), now_ms);
            if let Settled::Published(true) | Settled::Discarded(true) =
                effect::settle(&*self.effects, task_id, status)?
            {
                self.probe.observe("effect-settled-by-sweeper", task_id);
            }
        }
        // More prepared than one round settles: deleting now could take a completed task
        // whose effect is still unpublished. The next round goes on.
        let swept = if prepared.len() > SETTLES_PER_SWEEP_MAX {
            0
        } else {
            self.store.sweep_expired(now_ms, self.config.sweep_batch)?
        };
        let released = self.store.release_expired_leases(now_ms)?;
        Ok((swept, released))
    }

    /// The dispatcher loop, until shutdown.
    pub async fn run_dispatcher(self: Arc<Self>, name: String) {
        let mut idle_rounds = 0u32;
        while !self.is_shut_down() {
            match self.dispatch_once(&name).await {
                Ok(0) => {
                    let bell = self.bells.as_ref().map(|b| &*b.dispatch);
                    self.idle(bell, idle_rounds).await;
                    idle_rounds = idle_rounds.saturating_add(1);
                }
                Ok(published) => {
                    idle_rounds = 0;
                    if let Some(bells) = &self.bells {
                        let idle_at_most = self.workers_started.load(Ordering::Relaxed);
                        for _ in 0..published.min(idle_at_most) {
                            bells.work.notify_one();
                        }
                    }
                }
                Err(_) => {
                    idle_rounds = 0;
                    self.backoff().await
                }
            }
        }
    }

    /// A worker loop, until shutdown.
    pub async fn run_worker(self: Arc<Self>) {
        self.workers_running.fetch_add(1, Ordering::SeqCst);
        let _running = WorkerRunning(&self.workers_running);
        let mut idle_rounds = 0u32;
        while !self.is_shut_down() {
            match self.work_once().await {
                Ok(WorkStep::Idle) => {
                    let bell = self.bells.as_ref().map(|b| &b.work);
                    self.idle(bell, idle_rounds).await;
                    idle_rounds = idle_rounds.saturating_add(1);
                }
                Ok(_) => idle_rounds = 0,
                Err(_) => {
                    idle_rounds = 0;
                    self.backoff().await
                }
            }
        }
    }

    /// The sweeper loop, until shutdown.
    pub async fn run_sweeper(self: Arc<Self>) {
        while !self.is_shut_down() {
            if self.sweep_once().is_err() {
                self.counters.store_errors.fetch_add(1, Ordering::Relaxed);
            }
            self.env.sleep(self.config.sweep_every_ms).await;
        }
    }

    /// Shuts down and waits up to `drain_ms` for every worker to finish the task it is
    /// running (a tool run ends in its completion write, a durable point). Returns how
    /// many were still running at the deadline: their tasks stay leased in the store and
    /// are delivered again after the lease, to this server restarted or to another.
    pub async fn drain(&self, drain_ms: u64) -> usize {
        self.shut_down();
        let deadline_ms = self.env.now_ms().saturating_add(drain_ms);
        // Bounded: at most drain_ms / DRAIN_POLL_MS looks.
        loop {
            let running = self.workers_running.load(Ordering::SeqCst);
            if running == 0 || self.env.now_ms() >= deadline_ms {
                return running;
            }
            self.env.sleep(DRAIN_POLL_MS).await;
        }
    }

    /// Worker loops that have not returned yet.
    pub fn workers_running(&self) -> usize {
        self.workers_running.load(Ordering::SeqCst)
    }

    /// Starts a dispatcher, `workers` workers and a sweeper on the environment.
    pub fn start(self: &Arc<Self>, workers: usize) {
        self.env
            .spawn(Box::pin(self.clone().run_dispatcher("dispatcher".into())));
        for _ in 0..workers {
            self.workers_started.fetch_add(1, Ordering::Relaxed);
            self.env.spawn(Box::pin(self.clone().run_worker()));
        }
        self.env.spawn(Box::pin(self.clone().run_sweeper()));
    }

    async fn backoff(&self) {
        self.counters.store_errors.fetch_add(1, Ordering::Relaxed);
        let jitter_ms = self.env.random_u64() % self.config.idle_ms.max(1);
        self.env.sleep(self.config.idle_ms + jitter_ms).await;
    }
}

/// How many times an idle loop with a bell doubles its sleep: at most `idle_ms × 8`
/// between looks (160 ms at `serve`'s 20, 320 ms in the simulation's 40).
const IDLE_DOUBLINGS_MAX: u32 = 3;

/// How often a drain looks whether the workers have finished.
const DRAIN_POLL_MS: u64 = 10;

/// Counts a worker loop out when it returns (or is dropped with its runtime).
struct WorkerRunning<'c>(&'c std::sync::atomic::AtomicUsize);

impl Drop for WorkerRunning<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Prepared effects the sweeper settles per round, at most.
const SETTLES_PER_SWEEP_MAX: usize = 1_024;

fn queue_error(error: QueueError) -> StoreError {
    StoreError::Backend {
        operation: "use the queue",
        cause: error.to_string(),
    }
}

/// The outcome of a run that asked only what was already answered: the task fails with a
/// protocol error rather than wait for answers that will never come.
fn tool_declared_twice(task_id: &str) -> TaskOutcome {
    TaskOutcome::RpcError {
        code: -32603,
        message: format!(
            "Internal error: the tool of task {task_id} declared its point of no return twice"
        ),
        data: None,
    }
}

fn tool_asked_nothing(task_id: &str) -> TaskOutcome {
    TaskOutcome::RpcError {
        code: -32603,
        message: format!(
            "Internal error: the tool of task {task_id} asked again for input it was already given"
        ),
        data: None,
    }
}
