//! Retried calls, as real clients retry them: an identical call sent again, a keyed call
//! replayed (and the key reused with other arguments), and a keyed call retried from a new
//! connection — a new session of the same identity, as a client opens after it lost its
//! connection or its answer. One key of one caller is one task whichever session sends it.

use super::Level;
use super::Verdict;
use super::outcomes::Outcomes;
use super::peer::{IDEMPOTENCY_META, TaskView};
use super::shapes::{Context, chosen_tool};
use super::transport::Exchange;
use crate::contract::Era;
use serde_json::{Value, json};
use std::sync::Arc;

pub(super) async fn retried_call(context: &Context<'_>, out: &mut Outcomes) {
    let (tool, arguments) = match chosen_tool(context) {
        Ok(chosen) => chosen,
        Err(why) => {
            out.not_applicable("hostile.retried-call", Level::Should, &why);
            out.not_applicable(
                "hostile.idempotency-key.bound-to-request",
                Level::Must,
                &why,
            );
            return;
        }
    };
    unkeyed_retry(context, out, &tool, &arguments).await;
    let replays = keyed_retry(context, out, &tool, &arguments).await;
    // 2026-07-28 has no session: every request is already a new connection.
    if context.opened.peer.era != Era::Core2025 {
        return;
    }
    // Only a key that replays on one session can be judged across two.
    if replays {
        keyed_retry_after_reconnect(context, out, &tool, &arguments).await;
    } else {
        out.not_applicable(RECONNECT_CHECK, Level::Must, &no_key());
    }
}

/// Why the key checks do not apply to a server that does not replay a keyed call.
fn no_key() -> String {
    format!(
        "n/a: the server offers no idempotency key (tried _meta[\"{IDEMPOTENCY_META}\"], tasklatch's)"
    )
}

const RECONNECT_CHECK: &str = "hostile.keyed-retry-after-reconnect";

/// A keyed call retried from a new connection of the same identity (over HTTP a new
/// session: what a client opens after it lost its connection or its answer) replays the
/// task the first made.
async fn keyed_retry_after_reconnect(
    context: &Context<'_>,
    out: &mut Outcomes,
    tool: &str,
    arguments: &Value,
) {
    let peer = &context.opened.peer;
    let Some(fresh) = peer.reconnected() else {
        let why = "n/a: over stdio the connection is the process; a new one is a restart \
                   (--kill --durable covers retries across it)";
        out.not_applicable(RECONNECT_CHECK, Level::Must, why);
        return;
    };
    let reopened = match super::open(peer.era, Arc::new(fresh), context.config).await {
        Ok(reopened) => reopened,
        Err(why) => {
            let why = format!("n/a: a second connection could not be opened: {why}");
            out.not_applicable(RECONNECT_CHECK, Level::Must, &why);
            return;
        }
    };
    let ids = |exchange: &Exchange| peer.created(exchange).map(|view: TaskView| view.task_id);
    let key = format!(
        "tasklatch-probe-reconnect-{}-{}",
        std::process::id(),
        context.clock.now_ms()
    );
    let meta = json!({ IDEMPOTENCY_META: key });
    let first = peer.create_with_meta(tool, arguments, meta.clone()).await;
    let retried = reopened.peer.create_with_meta(tool, arguments, meta).await;
    let evidence = [&first, &retried];
    match (ids(&first), ids(&retried)) {
        (Some(a), Some(b)) if a == b => out.add(
            RECONNECT_CHECK,
            Level::Must,
            Verdict::Pass,
            format!("the same keyed call from a new connection of the same identity replayed {a}"),
            &evidence,
        ),
        (Some(a), Some(b)) => out.add(
            RECONNECT_CHECK,
            Level::Must,
            Verdict::Fail,
            format!(
                "the keyed call created task {a}; the same call with the same key from a new \
                 connection of the same identity created {b}: the key is bound to the \
                 session, and a client that reconnects after a lost answer runs the work twice"
            ),
            &evidence,
        ),
        (Some(a), None) => out.add(
            RECONNECT_CHECK,
            Level::Must,
            Verdict::Fail,
            format!(
                "the keyed call created task {a}; its retry from a new connection of the \
                 same identity failed instead of replaying it: {}",
                retried.summary()
            ),
            &evidence,
        ),
        _ => out.not_applicable(RECONNECT_CHECK, Level::Must, &no_key()),
    }
}

/// An identical `tools/call` sent twice: one task (a risk when two).
async fn unkeyed_retry(context: &Context<'_>, out: &mut Outcomes, tool: &str, arguments: &Value) {
    let peer = &context.opened.peer;
    let first = peer.create(tool, arguments, None).await;
    let second = peer.create(tool, arguments, None).await;
    let ids = |exchange: &Exchange| peer.created(exchange).map(|view: TaskView| view.task_id);
    match (ids(&first), ids(&second)) {
        (Some(a), Some(b)) if a != b => out.add(
            "hostile.retried-call",
            Level::Should,
            Verdict::Risk,
            format!(
                "a retried identical tools/call created a second task ({a}, then {b}): a client \
                 that lost the first answer runs the work twice (2025-11-25 and 2026-07-28 \
                 define no idempotency key)"
            ),
            &[&first, &second],
        ),
        (Some(_), Some(_)) => out.add(
            "hostile.retried-call",
            Level::Should,
            Verdict::Pass,
            "the retry was answered with the same task",
            &[&first, &second],
        ),
        _ => out.not_applicable(
            "hostile.retried-call",
            Level::Should,
            "n/a: no task was created",
        ),
    }
}

/// A keyed call retried replays its task; the key reused with other arguments is refused.
/// Whether the retry replayed it (the key works on one session).
async fn keyed_retry(
    context: &Context<'_>,
    out: &mut Outcomes,
    tool: &str,
    arguments: &Value,
) -> bool {
    let peer = &context.opened.peer;
    let ids = |exchange: &Exchange| peer.created(exchange).map(|view: TaskView| view.task_id);
    let key = format!(
        "tasklatch-probe-{}-{}",
        std::process::id(),
        context.clock.now_ms()
    );
    let meta = json!({ IDEMPOTENCY_META: key });
    let keyed = peer.create_with_meta(tool, arguments, meta.clone()).await;
    let replay = peer.create_with_meta(tool, arguments, meta.clone()).await;
    match (ids(&keyed), ids(&replay)) {
        // A server without the key would have made a second task; failing the very request
        // that just succeeded is the key's replay going wrong.
        (Some(a), None) => {
            out.add(
                "hostile.idempotency-key.bound-to-request",
                Level::Must,
                Verdict::Fail,
                format!(
                    "the keyed call created task {a}, and its identical retry (same \
                 _meta[\"{IDEMPOTENCY_META}\"]) failed instead of replaying it"
                ),
                &[&keyed, &replay],
            );
            false
        }
        (Some(a), Some(b)) if a == b => {
            let altered = altered_arguments(arguments);
            let reused = peer.create_with_meta(tool, &altered, meta).await;
            out.judge(
                "hostile.idempotency-key.bound-to-request",
                Level::Must,
                &format!(
                    "_meta[\"{IDEMPOTENCY_META}\"] replays its task, and reused with other \
                     arguments is refused"
                ),
                match ids(&reused) {
                    Some(id) if id == a => {
                        Some("the key answered the first task for a different request".to_owned())
                    }
                    Some(id) => Some(format!(
                        "the key reused with other arguments created another task {id}"
                    )),
                    // 2026-07-28 answers bad arguments as a tool error: refused too.
                    None if reused.error().is_some()
                        || reused
                            .result()
                            .is_some_and(|result| result["isError"] == true) =>
                    {
                        None
                    }
                    None => Some(format!("neither refused nor a task: {}", reused.summary())),
                },
                &[&keyed, &reused],
            );
            true
        }
        _ => {
            let why = no_key();
            out.not_applicable(
                "hostile.idempotency-key.bound-to-request",
                Level::Must,
                &why,
            );
            false
        }
    }
}

/// The same request with one argument changed: the first string gets a suffix, else the
/// first number grows by one, else an extra property is added.
fn altered_arguments(arguments: &Value) -> Value {
    let mut altered = arguments.clone();
    let Value::Object(object) = &mut altered else {
        return json!({ "tasklatchProbeAltered": true });
    };
    if let Some(text) = object.values_mut().find_map(|value| match value {
        Value::String(text) => Some(text),
        _ => None,
    }) {
        text.push_str("-altered");
    } else if let Some(number) = object.values_mut().find(|value| value.is_u64()) {
        *number = json!(number.as_u64().unwrap_or(0) + 1);
    } else {
        object.insert("tasklatchProbeAltered".to_owned(), json!(true));
    }
    altered
}
