//! Each era keeps its own shapes, whatever a client adds from the other (SEP-2663: the
//! extension does not enable tasks for 2025-11-25, and a 2026-07-28 server ignores the
//! legacy `task` parameter):
//!
//! - `hostile.era.extension-at-initialize` (2025-11-25 over HTTP): a new session whose
//!   `initialize` declares the tasks extension still gets the nested `CreateTaskResult`.
//! - `hostile.era.extension-in-meta` (2025-11-25): a task-augmented call whose `_meta`
//!   declares the extension (capabilities only) still gets it.
//! - `hostile.legacy-task-param-ignored` (2026-07-28): a `tools/call` with a `task`
//!   parameter, valid or malformed, is answered as the same call without one.
//!
//! Each first makes the plain call (once for both 2025-11-25 checks): if that is not
//! answered with a task, the check is n/a.

use super::outcomes::Outcomes;
use super::peer::{META_CLIENT_CAPABILITIES, Peer, TASKS_EXTENSION};
use super::shapes::{Context, chosen_tool, fresh_session};
use super::transport::{Exchange, compact};
use super::{Level, Verdict};
use crate::contract::Era;
use serde_json::{Value, json};

const AT_INITIALIZE: &str = "hostile.era.extension-at-initialize";
const IN_META: &str = "hostile.era.extension-in-meta";
const LEGACY_PARAM: &str = "hostile.legacy-task-param-ignored";

pub(super) async fn era_confusion(context: &Context<'_>, out: &mut Outcomes) {
    let (tool, arguments) = match chosen_tool(context) {
        Ok(chosen) => chosen,
        Err(why) => {
            let checks: &[&str] = match context.opened.peer.era {
                Era::Core2025 => &[AT_INITIALIZE, IN_META],
                Era::Extension2026 => &[LEGACY_PARAM],
            };
            for check in checks {
                out.not_applicable(check, Level::Must, &why);
            }
            return;
        }
    };
    match context.opened.peer.era {
        Era::Core2025 => {
            // One premise for both: the plain task-augmented call is answered with a task.
            if let Err(why) = premise(&context.opened.peer, &tool, &arguments).await {
                for check in [AT_INITIALIZE, IN_META] {
                    out.not_applicable(check, Level::Must, &why);
                }
                return;
            }
            let verdict = at_initialize(context, &tool, &arguments).await;
            add(out, AT_INITIALIZE, verdict);
            let answer = in_meta(&context.opened.peer, &tool, &arguments).await;
            let what = "a call declaring the tasks extension in _meta (capabilities only)";
            add(out, IN_META, Ok(judged(&answer, what)));
        }
        Era::Extension2026 => {
            let verdict = legacy_param(context, &tool, &arguments).await;
            add(out, LEGACY_PARAM, verdict);
        }
    }
}

fn add(out: &mut Outcomes, check: &str, verdict: Result<(Verdict, String), String>) {
    match verdict {
        Ok((verdict, detail)) => out.add(check, Level::Must, verdict, detail, &[]),
        Err(why) => out.not_applicable(check, Level::Must, &why),
    }
}

/// The nested 2025-11-25 `CreateTaskResult` (`task.taskId`, no `resultType`), or what the
/// answer was instead.
fn nested_task(exchange: &Exchange) -> Result<(), String> {
    match exchange.result() {
        Some(result)
            if result["task"]["taskId"].is_string() && result.get("resultType").is_none() =>
        {
            Ok(())
        }
        Some(result) => Err(format!("answered {}", compact(result, 300))),
        None => Err(exchange.summary()),
    }
}

fn judged(answer: &Exchange, what: &str) -> (Verdict, String) {
    match nested_task(answer) {
        Ok(()) => (
            Verdict::Pass,
            format!("{what}: still the nested 2025-11-25 CreateTaskResult"),
        ),
        Err(instead) => (
            Verdict::Fail,
            format!("{what}: not the 2025-11-25 CreateTaskResult, {instead}"),
        ),
    }
}

/// The plain 2025-11-25 create on `peer` answered with the nested task (the premise).
async fn premise(peer: &Peer, tool: &str, arguments: &Value) -> Result<(), String> {
    let plain = peer.create(tool, arguments, None).await;
    nested_task(&plain).map_err(|instead| {
        format!("n/a: a plain task-augmented call is not answered with a task either: {instead}")
    })
}

async fn at_initialize(
    context: &Context<'_>,
    tool: &str,
    arguments: &Value,
) -> Result<(Verdict, String), String> {
    let declared = json!({ "extensions": { TASKS_EXTENSION: {} } });
    let peer = fresh_session(context, declared).await?;
    let answer = peer.create(tool, arguments, None).await;
    let what = "a session that declared the tasks extension in initialize";
    Ok(judged(&answer, what))
}

/// The task-augmented call on `peer`'s session, its `_meta` declaring the extension.
async fn in_meta(peer: &Peer, tool: &str, arguments: &Value) -> Exchange {
    let meta = json!({ META_CLIENT_CAPABILITIES: { "extensions": { TASKS_EXTENSION: {} } } });
    let params = json!({ "name": tool, "arguments": arguments, "task": {}, "_meta": meta });
    peer.request("tools/call", params).await
}

async fn legacy_param(
    context: &Context<'_>,
    tool: &str,
    arguments: &Value,
) -> Result<(Verdict, String), String> {
    let peer = &context.opened.peer;
    let plain = peer.create(tool, arguments, None).await;
    let kind = |exchange: &Exchange| {
        exchange
            .result()
            .and_then(|result| result["resultType"].as_str().map(str::to_owned))
    };
    let Some(expected) = kind(&plain) else {
        return Err(format!(
            "n/a: the call without a task parameter was not answered: {}",
            plain.summary()
        ));
    };
    for (legacy, what) in [
        (json!({ "ttl": 60_000 }), "a valid legacy task parameter"),
        (json!("not an object"), "a malformed legacy task parameter"),
    ] {
        let params = json!({ "name": tool, "arguments": arguments, "task": legacy });
        let answer = peer.request("tools/call", params).await;
        if kind(&answer).as_deref() != Some(expected.as_str()) {
            return Ok((
                Verdict::Fail,
                format!(
                    "{what} changed the answer (without it: resultType {expected:?}): {}",
                    answer.summary()
                ),
            ));
        }
    }
    Ok((
        Verdict::Pass,
        format!(
            "a valid and a malformed legacy task parameter were ignored (resultType {expected:?} each)"
        ),
    ))
}
