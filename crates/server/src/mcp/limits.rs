//! Per-caller budgets: what one authorization key may hold of the server at once.
//!
//! Every budget is counted per authorization key (the key a bearer token stands for), so
//! one caller spending all of its own never touches another's. A request over a budget
//! is refused at once, before it reaches the store, with [`code::LIMITED`] (`-32029`) and
//! `data: {limit, max, retryAfterMs}`; over HTTP with status `429` and `Retry-After`.
//!
//! | budget | default | counted |
//! |---|---|---|
//! | `waits_per_key_max` | 256 | blocked `tasks/result` calls (see [`super::waits`]) |
//! | `requests_per_key_max` | 512 | HTTP requests being handled (a blocked call included) |
//! | `sessions_per_key_max` | 256 | open 2025-11-25 HTTP sessions (`DELETE` frees one) |
//! | `polls_per_key_per_s`, `polls_per_key_burst` | 500 /s, 1,000 | `tasks/get` and `tasks/list`, both eras: a token bucket |
//!
//! The poll rate is far above what a client following `pollInterval` (500 ms) needs for a
//! few hundred tasks at once; it stops a loop that polls as fast as it can. The bucket
//! refills on the server's clock (the simulation's virtual one there).
//!
//! The table of callers is bounded: past [`KEYS_TRACKED_MAX`] keys, callers holding
//! nothing are forgotten (their bucket starts full again).

use super::wire::{RpcError, code};
use crate::sync::{Mutex, MutexGuard};
use serde_json::json;
use std::collections::BTreeMap;

/// Callers whose budgets are tracked at once, at most (see the module docs).
pub const KEYS_TRACKED_MAX: usize = 65_536;

/// The budgets, per authorization key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitsConfig {
    /// Blocked `tasks/result` calls open at once.
    pub waits_per_key_max: usize,
    /// HTTP requests in flight at once.
    pub requests_per_key_max: usize,
    /// 2025-11-25 HTTP sessions open at once.
    pub sessions_per_key_max: usize,
    /// `tasks/get` and `tasks/list` calls per second, sustained.
    pub polls_per_key_per_s: u64,
    /// `tasks/get` and `tasks/list` calls allowed in a burst.
    pub polls_per_key_burst: u64,
}

impl Default for LimitsConfig {
    fn default() -> LimitsConfig {
        LimitsConfig {
            waits_per_key_max: 256,
            requests_per_key_max: 512,
            sessions_per_key_max: 256,
            polls_per_key_per_s: 500,
            polls_per_key_burst: 1_000,
        }
    }
}

impl LimitsConfig {
    /// No budget at all (the simulation, whose clients are the system under test's peers).
    pub fn unlimited() -> LimitsConfig {
        LimitsConfig {
            waits_per_key_max: usize::MAX,
            requests_per_key_max: usize::MAX,
            sessions_per_key_max: usize::MAX,
            polls_per_key_per_s: u64::MAX / 4_000,
            polls_per_key_burst: u64::MAX / 4_000,
        }
    }

    /// Checks every budget is usable (positive); names the first that is not.
    pub fn check(&self) -> Result<(), String> {
        let zero = [
            ("waits_per_key_max", self.waits_per_key_max as u64),
            ("requests_per_key_max", self.requests_per_key_max as u64),
            ("sessions_per_key_max", self.sessions_per_key_max as u64),
            ("polls_per_key_per_s", self.polls_per_key_per_s),
            ("polls_per_key_burst", self.polls_per_key_burst),
        ]
        .into_iter()
        .find(|(_, value)| *value == 0);
        match zero {
            Some((name, _)) => Err(format!("{name} must be positive")),
            None => Ok(()),
        }
    }
}

/// Which budget refused a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budget {
    /// Blocked `tasks/result` calls.
    Waits,
    /// Requests in flight.
    Requests,
    /// Open sessions.
    Sessions,
    /// `tasks/get` / `tasks/list` rate.
    Polls,
}

impl Budget {
    /// The name in `data.limit`.
    pub fn as_str(self) -> &'static str {
        match self {
            Budget::Waits => "waits",
            Budget::Requests => "requests",
            Budget::Sessions => "sessions",
            Budget::Polls => "polls",
        }
    }
}

/// A refusal: which budget, its size, and when trying again may succeed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limited {
    /// The budget spent.
    pub budget: Budget,
    /// Its size (per second for [`Budget::Polls`]).
    pub max: u64,
    /// When a retry may succeed, in milliseconds from now.
    pub retry_after_ms: u64,
}

impl Limited {
    /// The JSON-RPC error a refused request gets.
    pub fn to_rpc_error(self) -> RpcError {
        let what = match self.budget {
            Budget::Waits => format!(
                "at most {} blocked tasks/result calls per caller (poll tasks/get instead)",
                self.max
            ),
            Budget::Requests => format!("at most {} requests in flight per caller", self.max),
            Budget::Sessions => format!(
                "at most {} open sessions per caller (DELETE the ones no longer used)",
                self.max
            ),
            Budget::Polls => format!(
                "at most {} tasks/get and tasks/list calls per second per caller (follow pollInterval)",
                self.max
            ),
        };
        RpcError::new(
            code::LIMITED,
            format!(
                "Too many requests: {what}; retry after {} ms",
                self.retry_after_ms
            ),
        )
        .with_data(json!({
            "limit": self.budget.as_str(),
            "max": self.max,
            "retryAfterMs": self.retry_after_ms,
        }))
    }

    /// The `Retry-After` header's value: whole seconds, at least one.
    pub fn retry_after_s(self) -> u64 {
        self.retry_after_ms.div_ceil(1_000).max(1)
    }
}

/// One caller's holdings.
#[derive(Clone, Copy, Debug)]
struct Holdings {
    requests: usize,
    sessions: usize,
    /// Poll tokens, in thousandths.
    poll_tokens_milli: u64,
    refilled_at_ms: u64,
}

impl Holdings {
    fn idle(&self) -> bool {
        self.requests == 0 && self.sessions == 0
    }
}

/// Every caller's holdings against the configured budgets.
pub struct Limits {
    config: LimitsConfig,
    callers: Mutex<BTreeMap<String, Holdings>>,
}

/// A request being handled; dropping it frees its place in the caller's budget.
pub struct InFlight<'l> {
    limits: &'l Limits,
    auth_key: String,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut callers = self.limits.lock();
        if let Some(holdings) = callers.get_mut(&self.auth_key) {
            holdings.requests -= 1;
        }
    }
}

impl Limits {
    /// Budgets per `config`.
    pub fn new(config: LimitsConfig) -> Limits {
        Limits {
            config,
            callers: Mutex::new(BTreeMap::new()),
        }
    }

    /// The budgets in force.
    pub fn config(&self) -> &LimitsConfig {
        &self.config
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Holdings>> {
        // Counters only: a poisoned table is still whole.
        self.callers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The caller's holdings, created with a full bucket; the table stays bounded.
    fn holdings<'m>(
        &self,
        callers: &'m mut BTreeMap<String, Holdings>,
        auth_key: &str,
        now_ms: u64,
    ) -> &'m mut Holdings {
        if !callers.contains_key(auth_key) {
            if callers.len() >= KEYS_TRACKED_MAX {
                callers.retain(|_, holdings| !holdings.idle());
            }
            callers.insert(
                auth_key.to_owned(),
                Holdings {
                    requests: 0,
                    sessions: 0,
                    poll_tokens_milli: self.config.polls_per_key_burst.saturating_mul(1_000),
                    refilled_at_ms: now_ms,
                },
            );
        }
        callers.get_mut(auth_key).expect("inserted above")
    }

    /// Takes one more of a counted budget (`requests` or `sessions`) for `auth_key`, or
    /// refuses it.
    fn take(
        &self,
        auth_key: &str,
        now_ms: u64,
        (budget, max): (Budget, usize),
        counter: fn(&mut Holdings) -> &mut usize,
    ) -> Result<(), Limited> {
        let mut callers = self.lock();
        let held = counter(self.holdings(&mut callers, auth_key, now_ms));
        if *held >= max {
            return Err(Limited {
                budget,
                max: max as u64,
                retry_after_ms: 1_000,
            });
        }
        *held += 1;
        Ok(())
    }

    /// Admits one more request of `auth_key`, or refuses it.
    pub fn begin_request(&self, auth_key: &str, now_ms: u64) -> Result<InFlight<'_>, Limited> {
        let budget = (Budget::Requests, self.config.requests_per_key_max);
        self.take(auth_key, now_ms, budget, |holdings| &mut holdings.requests)?;
        Ok(InFlight {
            limits: self,
            auth_key: auth_key.to_owned(),
        })
    }

    /// Counts one more open session of `auth_key`, or refuses it.
    pub fn open_session(&self, auth_key: &str, now_ms: u64) -> Result<(), Limited> {
        let budget = (Budget::Sessions, self.config.sessions_per_key_max);
        self.take(auth_key, now_ms, budget, |holdings| &mut holdings.sessions)
    }

    /// One session of `auth_key` ended (deleted or evicted).
    pub fn close_session(&self, auth_key: &str) {
        if let Some(holdings) = self.lock().get_mut(auth_key) {
            holdings.sessions = holdings.sessions.saturating_sub(1);
        }
    }

    /// Spends one poll of `auth_key` at `now_ms`, or refuses it with the time until the
    /// bucket holds one again.
    pub fn poll(&self, auth_key: &str, now_ms: u64) -> Result<(), Limited> {
        let (rate_per_s, burst) = (
            self.config.polls_per_key_per_s,
            self.config.polls_per_key_burst,
        );
        let mut callers = self.lock();
        let holdings = self.holdings(&mut callers, auth_key, now_ms);
        // rate_per_s tokens a second is rate_per_s thousandths of a token a millisecond.
        let elapsed_ms = now_ms.saturating_sub(holdings.refilled_at_ms);
        holdings.poll_tokens_milli = holdings
            .poll_tokens_milli
            .saturating_add(elapsed_ms.saturating_mul(rate_per_s))
            .min(burst.saturating_mul(1_000));
        holdings.refilled_at_ms = holdings.refilled_at_ms.max(now_ms);
        if holdings.poll_tokens_milli < 1_000 {
            let missing_milli = 1_000 - holdings.poll_tokens_milli;
            return Err(Limited {
                budget: Budget::Polls,
                max: rate_per_s,
                retry_after_ms: missing_milli.div_ceil(rate_per_s).max(1),
            });
        }
        holdings.poll_tokens_milli -= 1_000;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Limits {
        Limits::new(LimitsConfig {
            waits_per_key_max: 1,
            requests_per_key_max: 2,
            sessions_per_key_max: 1,
            polls_per_key_per_s: 10,
            polls_per_key_burst: 3,
        })
    }

    #[test]
    fn requests_are_counted_per_caller_and_freed_on_drop() {
        let limits = small();
        let first = limits.begin_request("a", 0).expect("1");
        let _second = limits.begin_request("a", 0).expect("2");
        let refused = limits.begin_request("a", 0).err().expect("3 refused");
        assert_eq!((refused.budget, refused.max), (Budget::Requests, 2));
        let _other = limits.begin_request("b", 0).expect("b's own budget");
        drop(first);
        limits.begin_request("a", 0).expect("a place freed");
    }

    #[test]
    fn sessions_are_counted_until_closed() {
        let limits = small();
        limits.open_session("a", 0).expect("1");
        assert_eq!(
            limits.open_session("a", 0).err().map(|l| l.budget),
            Some(Budget::Sessions)
        );
        limits.open_session("b", 0).expect("b's own budget");
        limits.close_session("a");
        limits.open_session("a", 0).expect("freed");
    }

    #[test]
    fn polls_refill_at_the_configured_rate() {
        let limits = small();
        for _ in 0..3 {
            limits.poll("a", 1_000).expect("the burst");
        }
        let refused = limits.poll("a", 1_000).expect_err("bucket empty");
        // 10 a second: one token every 100 ms.
        assert_eq!(refused.retry_after_ms, 100);
        assert_eq!(refused.retry_after_s(), 1);
        limits.poll("b", 1_000).expect("b's bucket is full");
        limits.poll("a", 1_099).expect_err("not yet");
        limits.poll("a", 1_100).expect("refilled");
        // A clock going backwards never mints tokens.
        limits.poll("a", 500).expect_err("still empty");
        let error = refused.to_rpc_error();
        assert_eq!(error.code, code::LIMITED);
        assert_eq!(error.data.expect("data")["limit"], "polls");
    }

    #[test]
    fn a_zero_budget_is_named() {
        let config = LimitsConfig {
            polls_per_key_burst: 0,
            ..LimitsConfig::default()
        };
        assert_eq!(
            config.check(),
            Err("polls_per_key_burst must be positive".into())
        );
        LimitsConfig::default().check().expect("defaults");
        LimitsConfig::unlimited().check().expect("unlimited");
    }
}
