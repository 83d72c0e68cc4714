//! The outcomes of one era's checks, as they are decided; and the premise most checks
//! share, that a method the server advertises is served at all. A method that answers
//! -32601 though advertised is one finding of its own (`shapes.methods.advertised-served`),
//! and the checks that needed its answers are n/a, never findings of what follows.

use super::peer::{Facts, code};
use super::transport::Exchange;
use super::{CheckOutcome, Level, Verdict, era_name};
use crate::contract::Era;

/// The check that reports advertised methods answered -32601.
pub const ADVERTISED_SERVED: &str = "shapes.methods.advertised-served";

/// Collects the outcomes of one era's checks.
pub struct Outcomes {
    era: &'static str,
    /// What was decided so far.
    pub(super) list: Vec<CheckOutcome>,
    /// Methods the server advertises that answered -32601, each with its first answer.
    unserved: Vec<(&'static str, Exchange)>,
}

impl Outcomes {
    /// Outcomes of checks in `era`.
    pub fn new(era: Era) -> Outcomes {
        Outcomes {
            era: era_name(era),
            list: Vec::new(),
            unserved: Vec::new(),
        }
    }

    pub(super) fn add(
        &mut self,
        check: &str,
        level: Level,
        verdict: Verdict,
        detail: impl Into<String>,
        evidence: &[&Exchange],
    ) {
        self.list.push(CheckOutcome {
            check: check.to_owned(),
            era: self.era,
            level,
            verdict,
            detail: detail.into(),
            evidence: evidence
                .iter()
                .map(|exchange| (*exchange).clone())
                .collect(),
        });
    }

    /// Pass when `problem` is `None`, else fail with it.
    pub(super) fn judge(
        &mut self,
        check: &str,
        level: Level,
        passed: &str,
        problem: Option<String>,
        evidence: &[&Exchange],
    ) {
        match problem {
            None => self.add(check, level, Verdict::Pass, passed, evidence),
            Some(problem) => self.add(check, level, Verdict::Fail, problem, evidence),
        }
    }

    pub(super) fn not_applicable(&mut self, check: &str, level: Level, why: &str) {
        self.add(check, level, Verdict::NotApplicable, why, &[]);
    }

    /// The answer must be a JSON-RPC error with `expected`.
    pub(super) fn expect_error(
        &mut self,
        check: &str,
        level: Level,
        expected: i64,
        exchange: &Exchange,
    ) {
        let problem = match exchange.error_code() {
            Some(found) if found == expected => None,
            Some(found) => Some(format!("expected error {expected}, got error {found}")),
            None if exchange.response.is_some() => {
                Some(format!("expected error {expected}, got a success"))
            }
            None => Some(format!(
                "expected error {expected}, got no response ({})",
                exchange.failure.as_deref().unwrap_or("nothing came")
            )),
        };
        self.judge(
            check,
            level,
            &format!("answered {expected}"),
            problem,
            &[exchange],
        );
    }
}

impl Outcomes {
    /// Whether `exchange`, an answer to `method`, shows the method served: false for a
    /// -32601 from a method `facts` advertise, which is noted for [`ADVERTISED_SERVED`].
    pub(super) fn served(
        &mut self,
        facts: &Facts,
        method: &'static str,
        exchange: &Exchange,
    ) -> bool {
        if exchange.error_code() != Some(code::METHOD_NOT_FOUND)
            || !advertised_methods(facts).contains(&method)
        {
            return true;
        }
        if !self.unserved.iter().any(|(known, _)| *known == method) {
            self.unserved.push((method, exchange.clone()));
        }
        false
    }

    /// `check` is n/a: its premise, `method` served, failed.
    pub(super) fn not_served(&mut self, check: &str, level: Level, method: &str) {
        self.not_applicable(
            check,
            level,
            &format!(
                "n/a: {method} is advertised but answered -32601, so this premise failed \
                 (the finding is {ADVERTISED_SERVED})"
            ),
        );
    }

    /// [`ADVERTISED_SERVED`], from the methods noted so far.
    pub(super) fn judge_served(&mut self, facts: &Facts) {
        let advertised = advertised_methods(facts);
        if advertised.is_empty() {
            return;
        }
        let unserved = std::mem::take(&mut self.unserved);
        let names: Vec<&str> = unserved.iter().map(|(method, _)| *method).collect();
        let evidence: Vec<&Exchange> = unserved.iter().map(|(_, exchange)| exchange).collect();
        self.judge(
            ADVERTISED_SERVED,
            Level::Must,
            &format!(
                "each method the server advertises was served ({})",
                advertised.join(", ")
            ),
            (!names.is_empty()).then(|| {
                format!(
                    "advertised, yet answered -32601 (method not found): {}",
                    names.join(", ")
                )
            }),
            &evidence,
        );
    }
}

/// The task methods `facts` advertise: 2025-11-25 `tasks/get` and `tasks/result` with the
/// tasks capability, `tasks/list` and `tasks/cancel` where declared; 2026-07-28 `tasks/get`,
/// `tasks/update` and `tasks/cancel` with the extension.
pub fn advertised_methods(facts: &Facts) -> Vec<&'static str> {
    match facts.era {
        Era::Core2025 if facts.capabilities["tasks"].is_object() => {
            let mut methods = vec!["tasks/get", "tasks/result"];
            if facts.list() {
                methods.push("tasks/list");
            }
            if facts.cancel() {
                methods.push("tasks/cancel");
            }
            methods
        }
        Era::Extension2026 if facts.tool_tasks() => {
            vec!["tasks/get", "tasks/update", "tasks/cancel"]
        }
        _ => Vec::new(),
    }
}
