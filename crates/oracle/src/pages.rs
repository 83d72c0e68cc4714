//! I14: every `tasks/list` page is exactly the caller's unexpired tasks after the previous
//! page's last, in `(createdAt, taskId)` order, cut at the page size the store clamps to,
//! with a next cursor if and only if more follow. Evaluated at the page's position in the
//! history (a store call and its record are atomic in the simulation).

use super::{AppliedKind, CheckContext, ClientOp, ClientResult, Event, Violation, violation};
use crate::contract::LIST_LIMIT_MAX;
use std::collections::BTreeMap;

/// A task as its creation fact set it.
struct Created<'h> {
    index: usize,
    owner: &'h str,
    created_at_ms: u64,
    expires_at_ms: Option<u64>,
}

pub(super) fn i14_list_pages(history: &[Event], context: &CheckContext, out: &mut Vec<Violation>) {
    let Some(server) = context.server else {
        return;
    };
    let limit = server.list_page.clamp(1, LIST_LIMIT_MAX);
    let created: BTreeMap<&str, Created<'_>> = history
        .iter()
        .enumerate()
        .filter_map(|(index, event)| match event {
            Event::Applied {
                task_id,
                auth_key,
                kind: AppliedKind::Create,
                expires_at_ms,
                stored,
                ..
            } => Some((
                task_id.as_str(),
                Created {
                    index,
                    owner: auth_key,
                    created_at_ms: stored.created_at_ms,
                    expires_at_ms: *expires_at_ms,
                },
            )),
            _ => None,
        })
        .collect();
    for (index, event) in history.iter().enumerate() {
        let Event::Client {
            caller,
            op: ClientOp::List { after, next_cursor },
            result: ClientResult::Ok { revealed, .. },
            at_ms,
            ..
        } = event
        else {
            continue;
        };
        let from = match after {
            Some(task_id) => match created.get(task_id.as_str()) {
                Some(task) => Some((task.created_at_ms, task_id.as_str())),
                None => continue, // a position the oracle cannot place (I4 judges it)
            },
            None => None,
        };
        let mut visible: Vec<(u64, &str)> = created
            .iter()
            .filter(|(_, task)| {
                task.index < index
                    && task.owner == caller
                    && task.expires_at_ms.is_none_or(|expires| expires > *at_ms)
            })
            .map(|(task_id, task)| (task.created_at_ms, *task_id))
            .filter(|position| from.is_none_or(|from| *position > from))
            .collect();
        visible.sort();
        let more = visible.len() > limit;
        visible.truncate(limit);
        let expected: Vec<&str> = visible.iter().map(|(_, task_id)| *task_id).collect();
        let shown: Vec<&str> = revealed.iter().map(|seen| seen.task_id.as_str()).collect();
        if shown != expected || *next_cursor != more {
            let cursor = |present: bool| if present { "a cursor" } else { "no cursor" };
            out.push(violation(
                "I14",
                shown.first().or(expected.first()).copied().unwrap_or(""),
                format!(
                    "a page of {caller}'s tasks after {after:?} (size {limit}) showed {shown:?} \
                     with {}, expected {expected:?} with {}",
                    cursor(*next_cursor),
                    cursor(more)
                ),
                vec![index],
            ));
        }
    }
}
