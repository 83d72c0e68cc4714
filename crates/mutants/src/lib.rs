//! # tasklatch-mutants
//!
//! Named hostile mutants: each removes exactly one guard, everywhere it is enforced.
//!
//! A harness is only as good as the bugs it catches. Every mutant here is a bug class seen
//! in real task stores, planted in the contract's guard
//! *and* in each store adapter's predicate that enforces the same rule (the SQL adapters
//! re-check tenant, version, status and expiry in their `WHERE`), so no second line of
//! defence hides it. The mutants of a store's own work ([`Mutant::in_store`]: what a write
//! stores, what a claim reports, replays, pages, sweeps, id collisions) are planted at the
//! one shared helper every adapter goes through. The kill matrix (`tasklatch::matrix`,
//! `tasklatch mutants`) runs every engine against every mutant.
//!
//! This module is a leaf: it depends on nothing in the crate, so the product can carry its
//! hooks while the harness that judges them stays outside the product.
//!
//! Without the `mutants` cargo feature, `on` is a constant `false` and every hook folds
//! away: a normal build carries no mutant code path. With it, one build runs them all: the
//! active mutant is chosen at run time by [`select`] or, when nothing was selected, by the
//! environment variable `TASKLATCH_MUTANT` (a name from [`Mutant::name`], read once).
//!
//! The selection is the one piece of process-wide state in the crate. It exists only in
//! mutant builds, is set before an engine starts and never changes while one runs, so
//! runs stay deterministic; engines run one after another, never side by side.

#![warn(missing_docs)]

use std::fmt;

/// One removed guard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mutant {
    /// A `required` tool called without a task runs synchronously.
    RequiredSyncAccepted,
    /// A `forbidden` tool called with a task becomes a task.
    ForbiddenTaskAccepted,
    /// A task is created without the negotiated `tasks.requests.tools.call`.
    CreateWithoutCapability,
    /// An idempotency key replays its task whatever the request digest.
    IdempotencyUnbound,
    /// A transition does not compare the expected version.
    VersionUnchecked,
    /// The terminal latch lets a cancelled task be written again.
    CancelledRewritable,
    /// The terminal latch lets a completed task be written again.
    CompletedRewritable,
    /// A transition or cancel does not check the caller owns the task.
    TransitionTenantUnchecked,
    /// A transition or cancel does not check the task has expired.
    TransitionExpiryUnchecked,
    /// `tasks/get` and `tasks/result` do not check the caller owns the task.
    ReadTenantUnchecked,
    /// `tasks/cancel` is accepted without the negotiated `tasks.cancel`.
    CancelWithoutCapability,
    /// `tasks/list` is accepted without the negotiated `tasks.list`.
    ListWithoutCapability,
    /// `tasks/list` is not filtered by tenant (a thirteenth: distinct from the read check,
    /// because stores filter lists in their query, not through `tasks/get`'s guard).
    ListUnfiltered,
    /// A store answers an idempotent replay with an error instead of the bound task (a
    /// store bug, not a contract one: the client sees "store unavailable").
    ReplayErrs,
    /// A claim of an outbox entry reports the task as `working` whatever is stored, so a
    /// finished task is published to a worker again (which drops it as a duplicate).
    ClaimStatusStale,
    /// A transition to `failed` with a JSON-RPC error stores it without its `data`.
    RpcErrorDataDropped,
    /// A transition's new status message is ignored: the old one is kept.
    StatusMessageKept,
    /// An admission stores no poll interval.
    PollIntervalDropped,
    /// An admission stores its TTL cut to whole seconds (and expires by it).
    TtlTruncated,
    /// An admission stores its creation time cut to whole seconds.
    CreatedAtTruncated,
    /// An answer to an open question closes it but is not kept for the tool.
    InputResponsesDropped,
    /// A list page that ends exactly at the caller's last task still carries a cursor.
    CursorOnExactPage,
    /// A sweep deletes one more expired task than it is allowed to.
    SweepOverMax,
    /// An admission whose id the store already holds is answered with the existing record
    /// instead of being refused.
    IdCollisionAnswered,
    /// A worker publishes its task's prepared side effect before the completion
    /// compare-and-swap, so a cancel that wins the latch leaves an effect behind.
    PublishBeforeDecide,
    /// A cancel ignores the task's point of no return: a 2026-07-28 task whose effect is
    /// under way is cancelled anyway, and a 2025-11-25 one is cancelled without a word
    /// about the effect (silence).
    PointOfNoReturnIgnored,
}

impl Mutant {
    /// Every mutant, in matrix order.
    pub const ALL: [Mutant; 26] = [
        Mutant::RequiredSyncAccepted,
        Mutant::ForbiddenTaskAccepted,
        Mutant::CreateWithoutCapability,
        Mutant::IdempotencyUnbound,
        Mutant::VersionUnchecked,
        Mutant::CancelledRewritable,
        Mutant::CompletedRewritable,
        Mutant::TransitionTenantUnchecked,
        Mutant::TransitionExpiryUnchecked,
        Mutant::ReadTenantUnchecked,
        Mutant::CancelWithoutCapability,
        Mutant::ListWithoutCapability,
        Mutant::ListUnfiltered,
        Mutant::ReplayErrs,
        Mutant::ClaimStatusStale,
        Mutant::RpcErrorDataDropped,
        Mutant::StatusMessageKept,
        Mutant::PollIntervalDropped,
        Mutant::TtlTruncated,
        Mutant::CreatedAtTruncated,
        Mutant::InputResponsesDropped,
        Mutant::CursorOnExactPage,
        Mutant::SweepOverMax,
        Mutant::IdCollisionAnswered,
        Mutant::PublishBeforeDecide,
        Mutant::PointOfNoReturnIgnored,
    ];

    /// The mutant's name, as `TASKLATCH_MUTANT` and the matrix spell it.
    pub fn name(self) -> &'static str {
        match self {
            Mutant::RequiredSyncAccepted => "required-sync-accepted",
            Mutant::ForbiddenTaskAccepted => "forbidden-task-accepted",
            Mutant::CreateWithoutCapability => "create-without-capability",
            Mutant::IdempotencyUnbound => "idempotency-unbound",
            Mutant::VersionUnchecked => "version-unchecked",
            Mutant::CancelledRewritable => "cancelled-rewritable",
            Mutant::CompletedRewritable => "completed-rewritable",
            Mutant::TransitionTenantUnchecked => "transition-tenant-unchecked",
            Mutant::TransitionExpiryUnchecked => "transition-expiry-unchecked",
            Mutant::ReadTenantUnchecked => "read-tenant-unchecked",
            Mutant::CancelWithoutCapability => "cancel-without-capability",
            Mutant::ListWithoutCapability => "list-without-capability",
            Mutant::ListUnfiltered => "list-unfiltered",
            Mutant::ReplayErrs => "replay-errs",
            Mutant::ClaimStatusStale => "claim-status-stale",
            Mutant::RpcErrorDataDropped => "rpc-error-data-dropped",
            Mutant::StatusMessageKept => "status-message-kept",
            Mutant::PollIntervalDropped => "poll-interval-dropped",
            Mutant::TtlTruncated => "ttl-truncated",
            Mutant::CreatedAtTruncated => "created-at-truncated",
            Mutant::InputResponsesDropped => "input-responses-dropped",
            Mutant::CursorOnExactPage => "cursor-on-exact-page",
            Mutant::SweepOverMax => "sweep-over-max",
            Mutant::IdCollisionAnswered => "id-collision-answered",
            Mutant::PublishBeforeDecide => "publish-before-decide",
            Mutant::PointOfNoReturnIgnored => "point-of-no-return-ignored",
        }
    }

    /// The mutant named `name` (as [`Mutant::name`] spells it); the error lists the known ones.
    pub fn parse(name: &str) -> Result<Mutant, String> {
        Mutant::ALL
            .into_iter()
            .find(|mutant| mutant.name() == name)
            .ok_or_else(|| {
                let known: Vec<&str> = Mutant::ALL.iter().map(|m| m.name()).collect();
                format!("unknown mutant {name:?}; known: {}", known.join(", "))
            })
    }

    /// Whether the mutant concerns state, concurrency, expiry or tenancy — what the
    /// simulation and the proptest model must kill on their own — rather than only the
    /// capability and task-support checks of negotiation.
    pub fn concerns_state(self) -> bool {
        !matches!(
            self,
            Mutant::RequiredSyncAccepted
                | Mutant::ForbiddenTaskAccepted
                | Mutant::CreateWithoutCapability
                | Mutant::CancelWithoutCapability
                | Mutant::ListWithoutCapability
        )
    }

    /// Whether the mutant removes a guard of the contract (the fixture, which replays the
    /// contract's cases against the guards, must kill it) rather than breaking a store's
    /// own work around them, which only engines that run a store can see.
    pub fn in_contract(self) -> bool {
        !self.in_store() && !self.in_runtime()
    }

    /// Whether the mutant breaks the handling of side effects (the order of decide and
    /// publish, the point of no return): engines whose workers run effects over a store see
    /// it — the simulation, and the proptest model, whose finish and declare steps go
    /// through the same helpers. (The contract fixture, of 2025-11-25 tasks that declare
    /// nothing, cannot.)
    pub fn in_runtime(self) -> bool {
        matches!(
            self,
            Mutant::PublishBeforeDecide | Mutant::PointOfNoReturnIgnored
        )
    }

    /// Whether the mutant breaks what a store writes, answers or reports beyond the
    /// contract's decisions (fields, claims, replays): engines that run a store see it.
    pub fn in_store(self) -> bool {
        matches!(
            self,
            Mutant::ReplayErrs
                | Mutant::ClaimStatusStale
                | Mutant::RpcErrorDataDropped
                | Mutant::StatusMessageKept
                | Mutant::PollIntervalDropped
                | Mutant::TtlTruncated
                | Mutant::CreatedAtTruncated
                | Mutant::InputResponsesDropped
                | Mutant::CursorOnExactPage
                | Mutant::SweepOverMax
                | Mutant::IdCollisionAnswered
        )
    }

    /// Whether the black-box probe must kill it: a defect a client of `tasklatch serve` can
    /// see on the wire. The others cannot be seen there: `serve` always declares
    /// `tasks.requests.tools.call` and `tasks.cancel` (the capability mutants' requests
    /// never arise); the version check and the cancelled latch each hide the other's
    /// removal unless two deliveries of one task interleave, which the wire cannot time;
    /// a stale claim, a sweep over its batch and an id collision happen inside the server;
    /// and a dropped `data`, a kept status message, a dropped poll interval, timestamps
    /// and TTLs cut to whole seconds and a cursor on an exactly full last page are all
    /// answers the spec allows (or tools `serve` lacks would show).
    pub fn seen_on_the_wire(self) -> bool {
        matches!(
            self,
            Mutant::RequiredSyncAccepted
                | Mutant::ForbiddenTaskAccepted
                | Mutant::IdempotencyUnbound
                | Mutant::CompletedRewritable
                | Mutant::TransitionTenantUnchecked
                | Mutant::TransitionExpiryUnchecked
                | Mutant::ReadTenantUnchecked
                | Mutant::ListWithoutCapability
                | Mutant::ListUnfiltered
                | Mutant::ReplayErrs
                | Mutant::InputResponsesDropped
        )
    }

    /// Whether loom's models must kill it: the version check and the terminal latch.
    pub fn concerns_interleaving(self) -> bool {
        matches!(
            self,
            Mutant::VersionUnchecked | Mutant::CancelledRewritable | Mutant::CompletedRewritable
        )
    }
}

impl fmt::Display for Mutant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether `mutant` is the active one. Constant `false` without the `mutants` feature.
#[inline(always)]
pub fn on(mutant: Mutant) -> bool {
    #[cfg(feature = "mutants")]
    {
        active() == Some(mutant)
    }
    #[cfg(not(feature = "mutants"))]
    {
        let _ = mutant;
        false
    }
}

#[cfg(feature = "mutants")]
mod selection {
    use super::Mutant;
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU8, Ordering};

    /// 0: not selected through the API (fall back to the environment); 1: none; 2 + i:
    /// `Mutant::ALL[i]`.
    static SELECTED: AtomicU8 = AtomicU8::new(0);
    static FROM_ENV: OnceLock<Option<Mutant>> = OnceLock::new();

    pub fn active() -> Option<Mutant> {
        match SELECTED.load(Ordering::Acquire) {
            0 => *FROM_ENV.get_or_init(|| {
                // TASKLATCH_MUTANT: the mutant a mutant build runs with when no code
                // selected one (a child process inherits it). Unknown names are fatal:
                // silently testing the unmutated build would report a false "killed".
                let name = std::env::var("TASKLATCH_MUTANT").ok()?;
                match Mutant::parse(&name) {
                    Ok(mutant) => Some(mutant),
                    Err(message) => panic!("TASKLATCH_MUTANT: {message}"),
                }
            }),
            1 => None,
            n => Some(Mutant::ALL[usize::from(n - 2)]),
        }
    }

    pub fn select(mutant: Option<Mutant>) {
        let code = match mutant {
            None => 1,
            Some(mutant) => {
                2 + Mutant::ALL
                    .iter()
                    .position(|m| *m == mutant)
                    .expect("every mutant is in ALL") as u8
            }
        };
        SELECTED.store(code, Ordering::Release);
    }
}

/// The active mutant: the last [`select`]ed, else `TASKLATCH_MUTANT`, else none.
#[cfg(feature = "mutants")]
pub fn active() -> Option<Mutant> {
    selection::active()
}

/// The active mutant's name; always `None` without the `mutants` feature. Failure records
/// carry it, so a repro command turns the same mutant on.
pub fn active_name() -> Option<&'static str> {
    #[cfg(feature = "mutants")]
    {
        active().map(Mutant::name)
    }
    #[cfg(not(feature = "mutants"))]
    {
        None
    }
}

/// Makes `mutant` the active one (or none) for the whole process until the next call.
#[cfg(feature = "mutants")]
pub fn select(mutant: Option<Mutant>) {
    selection::select(mutant)
}
