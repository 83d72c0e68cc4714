//! I19: every message the server pushes to a session is meant for that session — a
//! progress token's notifications go where the token was sent, a listen stream's to the
//! session that opened it, about the tasks it named — and says what some stored version
//! of its task said before the client read it. That the session's caller owns the task is
//! I4's, checked with every answer's (`invariants.rs`).

use super::fields::{self, Records};
use super::{Event, Opening, Push, Revealed, TaskFacts, Violation, violation};
use crate::contract::Era;
use std::collections::BTreeMap;

/// What the clients opened: by client and token (or subscription id), the session and
/// the tasks named.
type Openings<'h> = BTreeMap<(&'h str, &'h str), (&'h str, &'h [String])>;

/// I19's addressing over the whole history.
pub(super) fn i19_pushed_as_meant(history: &[Event], out: &mut Vec<Violation>) {
    if !history
        .iter()
        .any(|event| matches!(event, Event::Pushed { .. }))
    {
        return;
    }
    let mut opened: Openings<'_> = BTreeMap::new();
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
        }
    }
}

/// One pushed message's address, and what the client had opened.
struct Meant<'a, 'h> {
    index: usize,
    client: &'h str,
    session: &'h str,
    opened: &'a Openings<'h>,
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
        if let Event::Pushed {
            message: Push::Status { seen, .. },
            ..
        } = &history[index]
        {
            said_before(index, seen, records, out);
        }
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
