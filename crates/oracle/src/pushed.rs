//! I19: every message the server pushes to a session is meant for that session — a
//! progress token's notifications go where the token was sent, a listen stream's to the
//! session that opened it, about the tasks it named, a question only to a session whose
//! client declared it can be asked one (and on a `tasks/result` call's stream, only that
//! call's task's) — and says what some stored version of its task said before the client
//! read it. That the session's caller owns the task is I4's, checked with every answer's
//! (`invariants.rs`).

use super::fields::{self, Records};
use super::{Event, Opening, Push, Revealed, TaskFacts, Violation, violation};
use crate::contract::Era;
use std::collections::BTreeMap;

/// What the clients opened: by client and token (or subscription id), the session and
/// the tasks named.
type Openings<'h> = BTreeMap<(&'h str, &'h str), (&'h str, &'h [String])>;

/// What each client declared it can be asked, by client and session.
type Declared<'h> = BTreeMap<(&'h str, &'h str), &'h [String]>;

/// I19's addressing over the whole history.
pub(super) fn i19_pushed_as_meant(history: &[Event], out: &mut Vec<Violation>) {
    if !history
        .iter()
        .any(|event| matches!(event, Event::Pushed { .. }))
    {
        return;
    }
    let mut opened: Openings<'_> = BTreeMap::new();
    let mut declared: Declared<'_> = BTreeMap::new();
    for event in history {
        if let Event::Opened {
            client,
            session,
            what,
            ..
        } = event
        {
            let (name, task_ids): (&str, &[String]) = match what {
                Opening::ProgressToken { token } => (token, &[]),
                Opening::Listen {
                    subscription,
                    task_ids,
                } => (subscription, task_ids),
                Opening::Initialized { methods } => {
                    declared.insert((client, session), methods);
                    continue;
                }
            };
            opened.insert((client, name), (session, task_ids));
        }
    }
    for (index, event) in history.iter().enumerate() {
        let Event::Pushed {
            client,
            session,
            message,
            ..
        } = event
        else {
            continue;
        };
        let meant = Meant {
            index,
            client,
            session,
            opened: &opened,
            declared: &declared,
        };
        match message {
            Push::Unreadable { method, detail } => out.push(violation(
                "I19",
                "",
                format!("session {session} was pushed an unreadable {method:?}: {detail}"),
                vec![index],
            )),
            Push::Progress { token } => meant.progress(token, out),
            Push::Status {
                seen,
                subscription: Some(subscription),
            } => meant.listened(subscription, &seen.task_id, out),
            Push::Status { .. } => {}
            Push::Ask {
                task_id,
                method,
                call,
                ..
            } => meant.asked(task_id, method, call.as_deref(), out),
        }
    }
}

/// One pushed message's address, and what the client had opened.
struct Meant<'a, 'h> {
    index: usize,
    client: &'h str,
    session: &'h str,
    opened: &'a Openings<'h>,
    declared: &'a Declared<'h>,
}

impl Meant<'_, '_> {
    /// Progress on `token` reaches only the session whose create sent it.
    fn progress(&self, token: &str, out: &mut Vec<Violation>) {
        match self.opened.get(&(self.client, token)) {
            Some((sent_on, _)) if *sent_on == self.session => {}
            Some((sent_on, _)) => out.push(violation(
                "I19",
                "",
                format!(
                    "progress on token {token:?} reached session {}; the token was sent on session {sent_on}",
                    self.session
                ),
                vec![self.index],
            )),
            None => out.push(violation(
                "I19",
                "",
                format!(
                    "progress on token {token:?} reached session {}, whose client sent no such token",
                    self.session
                ),
                vec![self.index],
            )),
        }
    }

    /// A listen stream's message reaches the session that opened it, about a task it named.
    fn listened(&self, subscription: &str, task_id: &str, out: &mut Vec<Violation>) {
        let problem = match self.opened.get(&(self.client, subscription)) {
            None => format!("names subscription {subscription:?}, which its client never opened"),
            Some((opened_on, _)) if *opened_on != self.session => {
                format!("names subscription {subscription:?}, opened on session {opened_on}")
            }
            Some((_, task_ids))
                if !task_ids.is_empty() && !task_ids.iter().any(|id| id == task_id) =>
            {
                format!("tells of a task subscription {subscription:?} did not name")
            }
            Some(_) => return,
        };
        out.push(violation(
            "I19",
            task_id,
            format!("a message pushed to session {} {problem}", self.session),
            vec![self.index],
        ));
    }

    /// A question reaches only a session whose client declared the method in `initialize`;
    /// on a `tasks/result` call's stream, only a question of that call's task.
    fn asked(&self, task_id: &str, method: &str, call: Option<&str>, out: &mut Vec<Violation>) {
        let declared = self
            .declared
            .get(&(self.client, self.session))
            .is_some_and(|methods| methods.iter().any(|declared| declared == method));
        let problem = match call {
            _ if !declared => {
                format!("was asked {method:?}, which its client never declared it can answer there")
            }
            Some(call) if call != task_id => {
                format!("was asked a question of its task on a tasks/result call of task {call}")
            }
            _ => return,
        };
        out.push(violation(
            "I19",
            task_id,
            format!("session {} {problem}", self.session),
            vec![self.index],
        ));
    }
}

/// I19 for one task: each pushed status of it says what a version stored before it was
/// read said (`records`: the task's applied changes, as I11 and I12 read them).
pub(super) fn i19_said_as_stored(
    history: &[Event],
    facts: &TaskFacts,
    records: &Records<'_>,
    out: &mut Vec<Violation>,
) {
    for &index in &facts.pushed {
        match &history[index] {
            Event::Pushed {
                message: Push::Status { seen, .. },
                ..
            } => said_before(index, seen, records, out),
            Event::Pushed {
                message:
                    Push::Ask {
                        task_id,
                        method,
                        params,
                        ..
                    },
                ..
            } => asked_before(index, task_id, method, params, records, out),
            _ => {}
        }
    }
}

/// The question is one a version stored before it was read held open: `input_required`,
/// with a question of that method and those params.
fn asked_before(
    index: usize,
    task_id: &str,
    method: &str,
    params: &serde_json::Value,
    records: &Records<'_>,
    out: &mut Vec<Violation>,
) {
    let empty = serde_json::Value::Object(serde_json::Map::new());
    let held = |question: &serde_json::Value| {
        let stored_params = match question.get("params") {
            None | Some(serde_json::Value::Null) => &empty,
            Some(stored) => stored,
        };
        question["method"] == method && stored_params == params
    };
    let asked = records.iter().any(|(at, record, ..)| {
        *at < index
            && record.status == crate::contract::TaskStatus::InputRequired
            && record
                .stored
                .input_requests
                .as_ref()
                .is_some_and(|open| open.values().any(held))
    });
    if !asked {
        out.push(violation(
            "I19",
            task_id,
            format!("asked {method:?} with params no stored version of the task held open"),
            vec![index],
        ));
    }
}

/// The pushed task's status and fields are those of a version stored before it was read.
fn said_before(index: usize, seen: &Revealed, records: &Records<'_>, out: &mut Vec<Violation>) {
    let before = records.iter().filter(|(at, ..)| *at < index);
    let mut latest = None;
    for (at, record, ..) in before {
        latest = Some((*at, record));
        if record.status != seen.status {
            continue;
        }
        let mut wrong = Vec::new();
        if let Some(fields) = &seen.fields {
            fields::wire_differences(fields, record, &mut wrong);
        }
        let outcome_held = match (&seen.outcome, record.outcome) {
            (None, _) => true,
            (Some(shown), Some(stored)) => fields::same_outcome(shown, stored, Era::Extension2026),
            (Some(_), None) => false,
        };
        if wrong.is_empty() && outcome_held {
            return;
        }
    }
    let (events, stored) = match latest {
        Some((at, record)) => (
            vec![at, index],
            format!("v{} {}", record.version, record.status),
        ),
        None => (vec![index], "nothing".to_owned()),
    };
    out.push(violation(
        "I19",
        &seen.task_id,
        format!(
            "pushed {} as no stored version said it (stored by then: {stored})",
            seen.status
        ),
        events,
    ));
}
