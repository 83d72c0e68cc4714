//! Durable task stores: the [`TaskStore`] port and its adapters.
//!
//! The protocol supplies no transaction, outbox, tenant boundary or compare-and-swap; the
//! store does. Every adapter enforces the [`contract`](crate::contract) atomically and
//! returns exactly the decisions its guards define — one policy, several enforcements:
//!
//! - create looks up `(caller, idempotency key)`, compares the request digest, and inserts
//!   the admission record **and its outbox entry** atomically;
//! - a transition is a compare-and-swap whose predicate covers task id, authorization key,
//!   expected version, a legal (hence non-terminal) current status and an unexpired
//!   record; when it changes nothing, the stored fact is re-read and classified by the
//!   contract, never blindly retried;
//! - cancel sets status and cancellation intent in one write and answers with the record
//!   after it;
//! - list applies the caller **in the query** and pages with a caller-bound cursor;
//! - the outbox is claimed with a lease and an attempt number, acknowledged only by the
//!   current attempt, and redelivered once a lease expires.
//!
//! The store reads no clock: `now_ms` is an argument of every operation, so the same
//! store runs under real time, simulated time and tests alike.
//!
//! Store addresses are URLs ([`StoreUrl`]): `memory:`, `sqlite:PATH`, `postgres://…`.

mod error;
mod factory;
pub mod group;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
mod row;
mod schema;
mod sqlite;
mod url;

pub use error::StoreError;
#[cfg(feature = "postgres")]
pub use factory::PostgresFactory;
pub use factory::{MemoryFactory, SqliteFactory, StoreFactory, factory_for};
pub use memory::MemoryStore;
#[cfg(feature = "postgres")]
pub use postgres::{CONNECTIONS_MAX as PG_CONNECTIONS_MAX, PostgresStore};
pub use sqlite::{SqliteStore, Synchronous};
pub use url::{SqliteOptions, StoreUrl};

/// Re-exported for `memory.rs`, which takes its locks through `super::sync` so that the
/// loom models can compile it against loom's.
use crate::sync;

use crate::contract::{
    Decision, Negotiated, RequestDigest, TaskOutcome, TaskRecord, TaskStatus, TaskSupport,
};
use serde_json::Value;

/// A `tools/call` to admit. The task id and correlation id are drawn by the caller (the
/// store draws no randomness) and used only if a new task is admitted.
#[derive(Clone, Debug)]
pub struct CreateCommand {
    /// The requestor's authorization key; a new task is bound to it.
    pub caller: String,
    /// What the requestor's session negotiated.
    pub negotiated: Negotiated,
    /// `execution.taskSupport` of the named tool.
    pub task_support: TaskSupport,
    /// The call carried a `task` param (asks to run as a task).
    pub task_requested: bool,
    /// The caller's idempotency key; `None`: every call admits a new task.
    pub idempotency_key: Option<String>,
    /// The wrapped request; the digest is computed from it.
    pub request: WrappedRequest,
    /// Lifetime of a new task in ms, already clamped by the server; `None`: unlimited.
    pub ttl_ms: Option<u64>,
    /// `pollInterval` a new task suggests, in ms.
    pub poll_interval_ms: Option<u64>,
    /// Id of the task if one is admitted (≥128 random bits).
    pub task_id: String,
    /// Correlation id of the task if one is admitted.
    pub correlation_id: String,
    /// The time of the call, ms since the Unix epoch.
    pub now_ms: u64,
    /// The protocol era of the request; the task remembers it.
    pub era: crate::contract::Era,
    /// Answers the request brought with it (input a tool asked for before it could be
    /// admitted); they become the task's first `input_responses`.
    pub input_responses: Option<crate::contract::InputMap>,
}

/// The request a task wraps, as its outbox entry carries it to a worker.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WrappedRequest {
    /// The JSON-RPC method (`tools/call`).
    pub method: String,
    /// The tool called.
    pub name: String,
    /// Absent and `null` are different requests (their digests differ), so a stored
    /// `null` reads back as `Some(Value::Null)`, never as absent.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_even_if_null"
    )]
    pub arguments: Option<Value>,
}

/// Deserialises a present field as `Some`, `null` included (serde's `Option` would read
/// `null` as `None`); an absent field stays `None` through `default`.
fn present_even_if_null<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Value>, D::Error> {
    <Value as serde::Deserialize>::deserialize(deserializer).map(Some)
}

impl WrappedRequest {
    /// The request digest an idempotent replay is compared by (method, name, arguments).
    pub fn digest(&self) -> RequestDigest {
        crate::contract::request_digest(&self.method, &self.name, self.arguments.as_ref())
    }
}

impl CreateCommand {
    /// The contract's view of this command.
    pub fn contract_request<'a>(
        &'a self,
        digest: &'a RequestDigest,
    ) -> crate::contract::CreateRequest<'a> {
        crate::contract::CreateRequest {
            caller: &self.caller,
            negotiated: self.negotiated,
            task_support: self.task_support,
            task_requested: self.task_requested,
            idempotency_key: self.idempotency_key.as_deref(),
            digest,
        }
    }

    /// The record this command admits, if the contract accepts it as a new task.
    pub fn admission_record(&self, digest: RequestDigest) -> TaskRecord {
        TaskRecord::admit(crate::contract::Admission {
            task_id: self.task_id.clone(),
            auth_key: self.caller.clone(),
            method: self.request.method.clone(),
            tool_name: self.request.name.clone(),
            request_digest: digest,
            idempotency_key: self.idempotency_key.clone(),
            now_ms: mutated_admission_time(self.now_ms),
            ttl_ms: self.ttl_ms.map(mutated_ttl),
            poll_interval_ms: self
                .poll_interval_ms
                .filter(|_| !crate::mutants::on(crate::mutants::Mutant::PollIntervalDropped)),
            correlation_id: self.correlation_id.clone(),
            era: self.era,
            input_responses: self.input_responses.clone(),
        })
    }
}

/// The admission time every adapter stores (the `created-at-truncated` mutant cuts it to
/// whole seconds).
fn mutated_admission_time(now_ms: u64) -> u64 {
    if crate::mutants::on(crate::mutants::Mutant::CreatedAtTruncated) {
        return now_ms / 1_000 * 1_000;
    }
    now_ms
}

/// The TTL every adapter stores (the `ttl-truncated` mutant cuts it to whole seconds).
fn mutated_ttl(ttl_ms: u64) -> u64 {
    if crate::mutants::on(crate::mutants::Mutant::TtlTruncated) {
        return ttl_ms / 1_000 * 1_000;
    }
    ttl_ms
}

/// A worker's or the sweeper's write.
#[derive(Clone, Debug)]
pub struct TransitionCommand {
    /// The task to change.
    pub task_id: String,
    /// The authorization key the write acts for (a worker carries the task's own).
    pub caller: String,
    /// The version the writer read; the write applies only if it is still current.
    pub expected_version: u64,
    /// The status to move to.
    pub next: TaskStatus,
    /// The outcome to store with a terminal status (`None` for `working`/`input_required`).
    pub outcome: Option<TaskOutcome>,
    /// The new `statusMessage`; `None` keeps the stored one.
    pub status_message: Option<String>,
    /// With `next = input_required`: the questions the task asks (non-empty, keys not
    /// answered before). `None` otherwise. Moving to `working` closes any open ones.
    pub input_requests: Option<crate::contract::InputMap>,
    /// With `next = working` on a `working` task: declares the task's point of no return,
    /// naming the irreversible effect the run is about to perform (non-empty, at most
    /// [`IRREVERSIBLE_EFFECT_BYTES_MAX`]). Once per task. `None` for every other write.
    pub irreversible_effect: Option<String>,
    /// The time of the write, ms since the Unix epoch.
    pub now_ms: u64,
}

/// Bound on a declared irreversible effect's description, in bytes (it is stored with the
/// task and repeated in a cancelled task's status message).
pub const IRREVERSIBLE_EFFECT_BYTES_MAX: usize = 1_024;

/// `tasks/update`: the requestor's answers to a task's open input requests.
#[derive(Clone, Debug)]
pub struct InputCommand {
    /// The task answered.
    pub task_id: String,
    /// The requestor's authorization key; only the task's owner may answer.
    pub caller: String,
    /// Answers by input request key; keys that are not open are ignored.
    pub responses: crate::contract::InputMap,
    /// The time of the write, ms since the Unix epoch.
    pub now_ms: u64,
}

impl TransitionCommand {
    /// The contract's view of this command.
    pub fn contract_request(&self) -> crate::contract::TransitionRequest<'_> {
        crate::contract::TransitionRequest {
            caller: &self.caller,
            expected_version: self.expected_version,
            next: self.next,
            point_of_no_return: self.irreversible_effect.is_some(),
        }
    }
}

/// A store's answer: the decision, and the record when the caller may see it.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    /// The contract's verdict on the operation.
    pub decision: Decision,
    /// The record after the operation. `None` when the task does not exist or is not the
    /// caller's (nothing about it may leak), and for decisions that concern no task.
    pub record: Option<TaskRecord>,
}

impl Answer {
    /// Builds an answer, withholding the record from anyone but its owner, and from a
    /// refusal that never looked at the task (capability).
    pub fn new(decision: Decision, record: Option<TaskRecord>) -> Answer {
        let record = match decision {
            Decision::BlockNotFound | Decision::BlockAuth | Decision::BlockCapability => None,
            _ => record,
        };
        Answer { decision, record }
    }

    /// An answer that carries no record (the decision concerns no visible task).
    pub fn bare(decision: Decision) -> Answer {
        Answer {
            decision,
            record: None,
        }
    }
}

/// A `tasks/list` request.
#[derive(Clone, Debug)]
pub struct ListQuery {
    /// What the caller's session negotiated (`tasks.list` must be on).
    pub negotiated: Negotiated,
    /// The caller's authorization key: only its own tasks are listed.
    pub caller: String,
    /// The previous page's `next_cursor`; `None`: the first page.
    pub cursor: Option<String>,
    /// Page size, at least 1 and at most [`LIST_LIMIT_MAX`].
    pub limit: usize,
    /// The time of the request, ms since the Unix epoch (expired tasks are not listed).
    pub now_ms: u64,
}

pub use crate::contract::LIST_LIMIT_MAX;

/// One page of the caller's tasks.
#[derive(Clone, Debug, PartialEq)]
pub struct ListPage {
    /// `LIST_TENANT_FILTERED`, or the refusal (`BLOCK_CAPABILITY`, `BLOCK_BAD_CURSOR`).
    pub decision: Decision,
    /// The page, ordered by `(created_at_ms, task_id)`; empty on a refusal.
    pub tasks: Vec<TaskRecord>,
    /// Present when more tasks follow; opaque and bound to the caller.
    pub next_cursor: Option<String>,
}

/// An outbox entry claimed by a worker under a lease.
#[derive(Clone, Debug, PartialEq)]
pub struct OutboxClaim {
    /// The task the entry dispatches.
    pub task_id: String,
    /// The task's authorization key.
    pub auth_key: String,
    /// The `tools/call` the task wraps.
    pub request: WrappedRequest,
    /// 1 for the first delivery, +1 per redelivery. Only this attempt may ack.
    pub attempt: u32,
    /// When the lease lapses (ms since the Unix epoch) and the entry may be claimed again.
    pub lease_expires_at_ms: u64,
    /// The task's version and status when claimed: the completion write expects this
    /// version, so a worker whose lease was overtaken cannot overwrite newer state.
    pub task_version: u64,
    /// See `task_version`; a terminal status means the entry only needs retiring.
    pub task_status: TaskStatus,
}

/// Bounds on one claim call.
pub const CLAIM_BATCH_MAX: usize = 256;

/// Options every adapter takes.
#[derive(Clone, Debug, Default)]
pub struct StoreOptions {
    /// The secret list cursors are bound with. `None`: SQL stores use the secret persisted
    /// in their database (drawn when the schema is created, so cursors survive restarts);
    /// the memory store draws one.
    pub cursor_secret: Option<Vec<u8>>,
}

/// What a store's change feed reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// Another process wrote this task (a transition, a cancel, an answer).
    Task(String),
    /// Changes may have been missed (the feed reconnected): any task may have changed.
    Unknown,
}

/// Where a change feed delivers, from a thread of the feed's own.
pub type ChangeSink = std::sync::Arc<dyn Fn(Change) + Send + Sync>;

/// A running change feed ([`TaskStore::changes`]); dropping it stops it.
pub struct ChangeFeed {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl ChangeFeed {
    /// A feed that stops when `stop` is set (its thread checks it between reads).
    pub fn new(stop: std::sync::Arc<std::sync::atomic::AtomicBool>) -> ChangeFeed {
        ChangeFeed { stop }
    }
}

impl Drop for ChangeFeed {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

impl std::fmt::Debug for ChangeFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChangeFeed")
    }
}

/// The store port. All operations are atomic; none reads a clock.
pub trait TaskStore: Send + Sync {
    /// Admits a `tools/call`: `ACCEPT_TASK` (record and outbox entry inserted atomically),
    /// `REPLAY_TASK` (the existing record), `ACCEPT_NORMAL` (nothing stored), or a refusal.
    fn create(&self, command: &CreateCommand) -> Result<Answer, StoreError>;

    /// Compare-and-swap of status (and outcome) at `expected_version`.
    fn transition(&self, command: &TransitionCommand) -> Result<Answer, StoreError>;

    /// The stored record, whoever owns it, or `None`. The building block of
    /// [`get`](TaskStore::get) and [`result`](TaskStore::result); callers outside the
    /// store should use those, which apply the contract.
    fn read(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError>;

    /// `tasks/get`.
    fn get(&self, caller: &str, task_id: &str, now_ms: u64) -> Result<Answer, StoreError> {
        let record = self.read(task_id)?;
        let decision = crate::contract::guard_get(caller, record.as_ref(), now_ms);
        Ok(Answer::new(decision, record))
    }

    /// `tasks/result`: the decision says whether to wait or return the stored outcome.
    fn result(&self, caller: &str, task_id: &str, now_ms: u64) -> Result<Answer, StoreError> {
        let record = self.read(task_id)?;
        let decision = crate::contract::guard_result(caller, record.as_ref(), now_ms);
        Ok(Answer::new(decision, record))
    }

    /// `tasks/cancel`: status `cancelled` and cancellation intent in one write; the
    /// answer carries the record after the change.
    fn cancel(
        &self,
        negotiated: Negotiated,
        caller: &str,
        task_id: &str,
        now_ms: u64,
    ) -> Result<Answer, StoreError>;

    /// `tasks/update`: stores the answers to open input requests and, once none is open,
    /// moves the task back to `working` (`APPLY_INPUT`), as one compare-and-swap; or
    /// `IGNORE_INPUT`, `ALREADY_TERMINAL`, or a refusal. The answer carries the record
    /// after the change.
    fn answer_input(&self, command: &InputCommand) -> Result<Answer, StoreError>;

    /// `tasks/list`: the caller's own unexpired tasks, filtered in the query.
    fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError>;

    /// Claims up to `max` outbox entries whose lease is free or expired, leasing them to
    /// `worker` until `now_ms + lease_ms`.
    fn claim(
        &self,
        worker: &str,
        now_ms: u64,
        lease_ms: u64,
        max: usize,
    ) -> Result<Vec<OutboxClaim>, StoreError>;

    /// Acknowledges an entry; only the current attempt may. `false` if it was not (already
    /// acked, redelivered to someone else, or gone).
    fn ack(&self, task_id: &str, attempt: u32, now_ms: u64) -> Result<bool, StoreError>;

    /// Frees leases that expired at or before `now_ms`; returns how many.
    fn release_expired_leases(&self, now_ms: u64) -> Result<usize, StoreError>;

    /// Deletes up to `max` tasks expired at `now_ms`, with their outbox entries; returns
    /// how many.
    fn sweep_expired(&self, now_ms: u64, max: usize) -> Result<usize, StoreError>;

    /// Inserts records exactly as given, without outbox entries: for restoring backups
    /// and for seeding the conformance suite. Refuses ids that exist; all or nothing.
    fn import(&self, records: &[TaskRecord]) -> Result<(), StoreError>;

    /// Starts delivering to `sink` the tasks that *other processes* sharing this store
    /// write, so a blocked call here wakes when a worker there finishes its task. `None`:
    /// the store has no feed (memory: no other process can write it; SQLite: a blocked
    /// call falls back to its safety re-read). The feed runs until the result is dropped.
    fn changes(&self, sink: ChangeSink) -> Result<Option<ChangeFeed>, StoreError> {
        drop(sink);
        Ok(None)
    }
}

/// Implements [`TaskStore`] for a wrapper by forwarding every operation to the store
/// `$inner` evaluates to (with `$this` bound to `&self`), each call made inside `$around`
/// (a function taking the call as a closure; by default it just calls it).
macro_rules! delegate_task_store {
    ([$($generics:tt)*] $ty:ty, |$this:ident| $inner:expr, around $around:path) => {
        impl<$($generics)*> $crate::store::TaskStore for $ty {
            fn create(
                &self,
                command: &$crate::store::CreateCommand,
            ) -> Result<$crate::store::Answer, $crate::store::StoreError> {
                let $this = self;
                $around(|| $inner.create(command))
            }
            fn transition(
                &self,
                command: &$crate::store::TransitionCommand,
            ) -> Result<$crate::store::Answer, $crate::store::StoreError> {
                let $this = self;
                $around(|| $inner.transition(command))
            }
            fn read(
                &self,
                task_id: &str,
            ) -> Result<Option<$crate::contract::TaskRecord>, $crate::store::StoreError> {
                let $this = self;
                $around(|| $inner.read(task_id))
            }
            fn get(
                &self,
                caller: &str,
                task_id: &str,
                now_ms: u64,
            ) -> Result<$crate::store::Answer, $crate::store::StoreError> {
                let $this = self;
                $around(|| $inner.get(caller, task_id, now_ms))
            }
            fn result(
                &self,
                caller: &str,
                task_id: &str,
                now_ms: u64,
            ) -> Result<$crate::store::Answer, $crate::store::StoreError> {
                let $this = self;
                $around(|| $inner.result(caller, task_id, now_ms))
            }
            fn cancel(
                &self,
                negotiated: $crate::contract::Negotiated,
                caller: &str,
                task_id: &str,
                now_ms: u64,
            ) -> Result<$crate::store::Answer, $crate::store::StoreError> {
                let $this = self;
                $around(|| $inner.cancel(negotiated, caller, task_id, now_ms))
            }
            fn answer_input(
                &self,
                command: &$crate::store::InputCommand,
            ) -> Result<$crate::store::Answer, $crate::store::StoreError> {
                let $this = self;
                $around(|| $inner.answer_input(command))
            }
            fn list(
                &self,
                query: &$crate::store::ListQuery,
            ) -> Result<$crate::store::ListPage, $crate::store::StoreError> {
                let $this = self;
                $around(|| $inner.list(query))
            }
            fn claim(
                &self,
                worker: &str,
                now_ms: u64,
                lease_ms: u64,
                max: usize,
            ) -> Result<Vec<$crate::store::OutboxClaim>, $crate::store::StoreError> {
                let $this = self;
                $around(|| $inner.claim(worker, now_ms, lease_ms, max))
            }
            fn ack(
                &self,
                task_id: &str,
                attempt: u32,
                now_ms: u64,
            ) -> Result<bool, $crate::store::StoreError> {
                let $this = self;
                $around(|| $inner.ack(task_id, attempt, now_ms))
            }
            fn release_expired_leases(
                &self,
                now_ms: u64,
            ) -> Result<usize, $crate::store::StoreError> {
                let $this = self;
                $around(|| $inner.release_expired_leases(now_ms))
            }
            fn sweep_expired(
                &self,
                now_ms: u64,
                max: usize,
            ) -> Result<usize, $crate::store::StoreError> {
                let $this = self;
                $around(|| $inner.sweep_expired(now_ms, max))
            }
            fn import(
                &self,
                records: &[$crate::contract::TaskRecord],
            ) -> Result<(), $crate::store::StoreError> {
                let $this = self;
                $around(|| $inner.import(records))
            }
            fn changes(
                &self,
                sink: $crate::store::ChangeSink,
            ) -> Result<Option<$crate::store::ChangeFeed>, $crate::store::StoreError> {
                let $this = self;
                $around(|| $inner.changes(sink))
            }
        }
    };
    ([$($generics:tt)*] $ty:ty, |$this:ident| $inner:expr) => {
        $crate::store::delegate_task_store!(
            [$($generics)*] $ty, |$this| $inner, around $crate::store::call_now
        );
    };
    ($ty:ty, |$this:ident| $inner:expr) => {
        $crate::store::delegate_task_store!([] $ty, |$this| $inner);
    };
}
pub(crate) use delegate_task_store;

/// Calls `call`: the default `around` of [`delegate_task_store`].
#[doc(hidden)]
pub fn call_now<T>(call: impl FnOnce() -> T) -> T {
    call()
}

/// A store whose operations block their thread on their own I/O runtime (the synchronous
/// `postgres` client drives a private tokio runtime), made callable from async code: on a
/// worker thread of a multi-threaded tokio runtime each operation runs in
/// `tokio::task::block_in_place` (which hands the thread's other tasks to other workers
/// and lets the client start its own runtime); anywhere else it is called as it is.
/// `open_store` wraps every PostgreSQL and SQLite store in one; `tasklatch serve` needs it.
pub struct OffRuntime<S>(pub S);

/// Runs `call` where it may block and start a runtime of its own (see [`OffRuntime`]).
#[doc(hidden)]
pub fn off_runtime<T>(call: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(call)
        }
        _ => call(),
    }
}

delegate_task_store!([S: TaskStore] OffRuntime<S>, |this| (this.0), around off_runtime);

// A shared store is a store: several handles (threads, nodes) on one `Arc`; a boxed one
// too. Both forward `get` and `result` as well, so a store's own versions of those are kept.
delegate_task_store!([S: TaskStore + ?Sized] std::sync::Arc<S>, |this| (**this));
delegate_task_store!([S: TaskStore + ?Sized] Box<S>, |this| (**this));

/// Opens the store a URL names (see [`StoreUrl`]).
pub fn open_store(url: &str, options: &StoreOptions) -> Result<Box<dyn TaskStore>, StoreError> {
    match StoreUrl::parse(url)? {
        StoreUrl::Memory => Ok(Box::new(MemoryStore::open(options)?)),
        // Off the runtime too: a write waits for its group's commit (an fsync), and a
        // worker thread blocked there would stall every request it also serves; with the
        // thread handed off, concurrent writes queue on the group and share its commit.
        StoreUrl::Sqlite(sqlite) => Ok(Box::new(OffRuntime(SqliteStore::open(&sqlite, options)?))),
        #[cfg(feature = "postgres")]
        StoreUrl::Postgres(url) => Ok(Box::new(OffRuntime(off_runtime(|| {
            PostgresStore::open(&url, None, options)
        })?))),
        #[cfg(not(feature = "postgres"))]
        StoreUrl::Postgres(_) => Err(StoreError::Url {
            url: url.to_owned(),
            reason: "this build has no PostgreSQL adapter (build with `--features postgres`)"
                .into(),
        }),
    }
}

/// A fresh 32-byte secret from the OS (or from madsim's seeded generator in simulation).
pub fn random_secret() -> Result<Vec<u8>, StoreError> {
    let mut secret = vec![0u8; 32];
    getrandom::fill(&mut secret).map_err(|error| StoreError::Backend {
        operation: "draw a cursor secret",
        cause: error.to_string(),
    })?;
    Ok(secret)
}

/// Decodes a persisted cursor secret (64 hex digits).
pub(crate) fn decode_hex_secret(hex: &str) -> Result<Vec<u8>, StoreError> {
    let corrupt = || StoreError::Corrupt {
        task_id: String::new(),
        column: "tasklatch_meta.cursor_secret",
        detail: "not 64 hex digits".into(),
    };
    if hex.len() != 64 {
        return Err(corrupt());
    }
    (0..64)
        .step_by(2)
        .map(|at| u8::from_str_radix(&hex[at..at + 2], 16).map_err(|_| corrupt()))
        .collect()
}

/// The contract's half of a list, shared by every adapter: decode the cursor for this
/// caller and ask the guard. `Err(page)`: refused, answer with it. `Ok(after)`: fetch the
/// caller's tasks strictly after `after`, in `(created_at_ms, task_id)` order, `limit + 1`
/// of them, and hand them to [`list_page`].
pub fn list_preamble(
    secret: &[u8],
    query: &ListQuery,
) -> Result<Option<crate::contract::ListPosition>, ListPage> {
    let (check, position) =
        crate::contract::check_cursor(secret, &query.caller, query.cursor.as_deref());
    let decision = crate::contract::guard_list(query.negotiated, check);
    if decision == Decision::ListTenantFiltered {
        Ok(position)
    } else {
        Err(ListPage {
            decision,
            tasks: Vec::new(),
            next_cursor: None,
        })
    }
}

/// Cuts `limit + 1` fetched tasks to a page and, if one was left over, a cursor after it.
pub fn list_page(
    secret: &[u8],
    caller: &str,
    mut tasks: Vec<TaskRecord>,
    limit: usize,
) -> ListPage {
    // The `cursor-on-exact-page` mutant also gives an exactly full last page a cursor.
    let more = if crate::mutants::on(crate::mutants::Mutant::CursorOnExactPage) {
        tasks.len() >= limit
    } else {
        tasks.len() > limit
    };
    let next_cursor = if more {
        tasks.truncate(limit);
        tasks.last().map(|last| {
            crate::contract::encode_cursor(secret, caller, &crate::contract::ListPosition::of(last))
        })
    } else {
        None
    };
    ListPage {
        decision: Decision::ListTenantFiltered,
        tasks,
        next_cursor,
    }
}

/// The most one sweep deletes: `max`. Every adapter sweeps through here (the
/// `sweep-over-max` mutant deletes one more).
pub fn sweep_bound(max: usize) -> usize {
    if crate::mutants::on(crate::mutants::Mutant::SweepOverMax) {
        return max.saturating_add(1);
    }
    max
}

/// Clamps a requested page size into `1..=LIST_LIMIT_MAX`.
pub fn page_limit(limit: usize) -> usize {
    limit.clamp(1, LIST_LIMIT_MAX)
}

/// After a compare-and-swap changed nothing: classify the re-read fact with the contract.
/// The contract cannot say "apply" here, or the predicate and the guard disagree.
pub fn classify_refused_transition(
    command: &TransitionCommand,
    current: Option<TaskRecord>,
) -> Result<Answer, StoreError> {
    let decision = crate::contract::guard_transition(
        &command.contract_request(),
        current.as_ref(),
        command.now_ms,
    );
    if decision == Decision::ApplyTransition {
        return Err(StoreError::Inconsistent(format!(
            "task {}: the compare-and-swap refused a transition the contract allows",
            command.task_id
        )));
    }
    Ok(Answer::new(decision, current))
}

/// The same for cancel.
pub fn classify_refused_cancel(
    negotiated: Negotiated,
    caller: &str,
    task_id: &str,
    now_ms: u64,
    current: Option<TaskRecord>,
) -> Result<Answer, StoreError> {
    let decision = crate::contract::guard_cancel(negotiated, caller, current.as_ref(), now_ms);
    if decision == Decision::ApplyCancel {
        return Err(StoreError::Inconsistent(format!(
            "task {task_id}: the cancel update refused a cancel the contract allows"
        )));
    }
    Ok(Answer::new(decision, current))
}

/// Bound on an optimistic cancel's read → swap retries (each retry means the task changed
/// between the two, which only a live task's working ↔ input_required flips can cause).
pub const CANCEL_ATTEMPTS_MAX: usize = 8;

/// The status message a requestor's cancel leaves on the task.
pub const CANCEL_MESSAGE: &str = "cancelled by the requestor";

/// The record after an applied transition: status, version, time, outcome and message.
pub fn applied_transition(current: &TaskRecord, command: &TransitionCommand) -> TaskRecord {
    let mut after = match &command.irreversible_effect {
        Some(effect) => current.with_irreversible_effect(effect, command.now_ms),
        None => current.with_status(command.next, command.now_ms),
    };
    if command.next.is_terminal() {
        after.outcome = written_outcome(command);
    }
    if let Some(message) = written_message(command) {
        after.status_message = Some(message.clone());
    }
    if command.next == TaskStatus::InputRequired {
        after.input_requests = command.input_requests.clone();
    }
    after.assert_invariants();
    after
}

/// The outcome a transition writes: the command's, with an error's `data: null` written as
/// no data (a stored row cannot tell them apart, so no adapter may answer otherwise).
/// Every adapter writes its row and builds its answer through here (the
/// `rpc-error-data-dropped` mutant loses an error's `data`).
pub fn written_outcome(command: &TransitionCommand) -> Option<TaskOutcome> {
    let mut outcome = command.outcome.clone();
    if let Some(TaskOutcome::RpcError { data, .. }) = &mut outcome
        && data.as_ref().is_some_and(Value::is_null)
    {
        *data = None;
    }
    if crate::mutants::on(crate::mutants::Mutant::RpcErrorDataDropped)
        && let Some(TaskOutcome::RpcError { data, .. }) = &mut outcome
    {
        *data = None;
    }
    outcome
}

/// The status message a transition writes (`None` keeps the stored one). Every adapter
/// writes through here (the `status-message-kept` mutant ignores a new message).
pub fn written_message(command: &TransitionCommand) -> Option<&String> {
    if crate::mutants::on(crate::mutants::Mutant::StatusMessageKept) {
        return None;
    }
    command.status_message.as_ref()
}

/// An admission whose id the store already holds: refused with the insert's `Duplicate`.
/// Every adapter answers through here (the `id-collision-answered` mutant answers with
/// the existing record as if it had been admitted; `existing` reads it).
pub fn collided(
    error: StoreError,
    existing: impl FnOnce() -> Result<Option<TaskRecord>, StoreError>,
) -> Result<Answer, StoreError> {
    if crate::mutants::on(crate::mutants::Mutant::IdCollisionAnswered)
        && matches!(error, StoreError::Duplicate { .. })
    {
        return Ok(Answer::new(Decision::AcceptTask, existing()?));
    }
    Err(error)
}

/// The answer to an idempotent replay: the bound task. Every adapter answers through here
/// (the `replay-errs` mutant breaks it for all of them).
pub fn replay(bound: Option<TaskRecord>) -> Result<Answer, StoreError> {
    if crate::mutants::on(crate::mutants::Mutant::ReplayErrs) {
        return Err(StoreError::Backend {
            operation: "replay a task",
            cause: "the replay-errs mutant".into(),
        });
    }
    Ok(Answer::new(Decision::ReplayTask, bound))
}

/// The task status a claim reports, as read with the entry. Every adapter reports through
/// here (the `claim-status-stale` mutant reports `working` whatever is stored, for all).
pub fn claim_status(stored: TaskStatus) -> TaskStatus {
    if crate::mutants::on(crate::mutants::Mutant::ClaimStatusStale) {
        return TaskStatus::Working;
    }
    stored
}

/// The contract's half of `tasks/update`, shared by every adapter: the decision on the
/// record as read, and the record after the change when it applies (`APPLY_INPUT`).
pub fn input_decision(
    command: &InputCommand,
    current: Option<&TaskRecord>,
) -> (Decision, Option<TaskRecord>) {
    let decision = crate::contract::guard_input(
        &command.caller,
        current,
        command.responses.keys(),
        command.now_ms,
    );
    if decision != Decision::ApplyInput {
        return (decision, None);
    }
    let current = current.expect("apply implies found");
    match current.with_input(&command.responses, command.now_ms) {
        Some(after) => (decision, Some(after)),
        None => unreachable!("guard_input applies only when an open request is answered"),
    }
}

/// The record after an applied requestor cancel: `cancelled`, intent set, version + 1.
/// (A worker that writes `cancelled` itself records no requestor intent.)
pub fn cancelled_record(current: &TaskRecord, now_ms: u64) -> TaskRecord {
    let mut after = current.with_status(TaskStatus::Cancelled, now_ms);
    after.cancel_requested = true;
    after.status_message = Some(cancel_message(current));
    after
}

/// The status message a requestor's cancel leaves: [`CANCEL_MESSAGE`], and for a task past
/// its point of no return (a 2025-11-25 cancel must still answer `cancelled`) what was
/// already set in motion, so the requestor is never told less than what happened.
pub fn cancel_message(current: &TaskRecord) -> String {
    if crate::mutants::on(crate::mutants::Mutant::PointOfNoReturnIgnored) {
        return CANCEL_MESSAGE.to_owned();
    }
    match &current.irreversible_effect {
        Some(effect) => {
            format!("{CANCEL_MESSAGE}{CANCEL_PAST_POINT_BEFORE}{effect}{CANCEL_PAST_POINT_AFTER}")
        }
        None => CANCEL_MESSAGE.to_owned(),
    }
}

/// The words [`cancel_message`] puts before and after the effect's description (a SQL
/// adapter that builds the message in its `UPDATE` splices these same words).
pub const CANCEL_PAST_POINT_BEFORE: &str = " past its point of no return: ";
/// See [`CANCEL_PAST_POINT_BEFORE`].
pub const CANCEL_PAST_POINT_AFTER: &str = " was started and is not undone";

/// The status message a declared point of no return leaves on the task while it runs.
pub fn point_of_no_return_message(effect: &str) -> String {
    format!("past its point of no return: {effect}")
}

/// A question may be asked only once: a transition that asks a key the task already has
/// an answer for is refused (the record it would leave breaks the record invariants, and
/// a store must say so instead of panicking or storing it). Stores call this with the
/// record the contract allowed the transition on.
pub fn check_questions_are_new(
    current: &TaskRecord,
    command: &TransitionCommand,
) -> Result<(), StoreError> {
    let (Some(asked), Some(answered)) = (&command.input_requests, &current.input_responses) else {
        return Ok(());
    };
    match asked.keys().find(|key| answered.contains_key(*key)) {
        Some(key) => Err(StoreError::Invalid(format!(
            "task {}: input request {key:?} was already answered; ask a new key",
            command.task_id
        ))),
        None => Ok(()),
    }
}

/// Preconditions of a transition command that no store should ever see broken.
pub fn check_transition_command(command: &TransitionCommand) -> Result<(), StoreError> {
    if let Some(effect) = &command.irreversible_effect {
        if command.next != TaskStatus::Working || command.outcome.is_some() {
            return Err(StoreError::Invalid(format!(
                "task {}: a point of no return is declared with next = working and no \
                 outcome, not {}",
                command.task_id, command.next
            )));
        }
        if effect.is_empty() || effect.len() > IRREVERSIBLE_EFFECT_BYTES_MAX {
            return Err(StoreError::Invalid(format!(
                "task {}: a point of no return names its effect in 1 to \
                 {IRREVERSIBLE_EFFECT_BYTES_MAX} bytes, not {}",
                command.task_id,
                effect.len()
            )));
        }
    }
    if command.outcome.is_some() && !command.next.is_terminal() {
        return Err(StoreError::Invalid(format!(
            "task {}: an outcome may only be stored with a terminal status, not {}",
            command.task_id, command.next
        )));
    }
    match (&command.input_requests, command.next) {
        (Some(asked), TaskStatus::InputRequired) if asked.is_empty() => {
            Err(StoreError::Invalid(format!(
                "task {}: input_required with an empty set of input requests",
                command.task_id
            )))
        }
        (Some(_), next) if next != TaskStatus::InputRequired => Err(StoreError::Invalid(format!(
            "task {}: input requests may only be stored with input_required, not {next}",
            command.task_id
        ))),
        _ => Ok(()),
    }
}
