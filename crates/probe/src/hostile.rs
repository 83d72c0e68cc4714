//! Phase 2: the hostile cases, as far as a client can express them. Each names how the probe
//! judged it: the probe sees only the wire, so "the tool's body ran" means its result came
//! back, and "the task is gone" means the server answered it as unknown.

use super::outcomes::Outcomes;
use super::peer::{self, Peer, TaskView, code};
use super::shapes::{Context, UNKNOWN_TASK_ID, chosen_tool, create_task, status_name};
use super::transport::Exchange;
use super::{Level, Verdict};
use crate::contract::{Era, TaskStatus};
use serde_json::{Value, json};
use std::time::Duration;

/// The TTL the probe asks for when it checks expiry (2025-11-25; the server may grant more).
pub const EXPIRY_TTL_ASKED_MS: u64 = 1_000;
/// How often the expiry and latch checks read a task, in ms.
const READ_EVERY_MS: u64 = 250;

/// Runs every hostile check of the context's era.
pub async fn run(context: &Context<'_>) -> Vec<super::CheckOutcome> {
    let mut out = Outcomes::new(context.opened.peer.era);
    match context.opened.peer.era {
        Era::Core2025 => {
            required_tool_called_plainly(context, &mut out).await;
            forbidden_tool_called_as_task(context, &mut out).await;
            task_without_capability(context, &mut out).await;
            undeclared_methods(context, &mut out).await;
        }
        Era::Extension2026 => no_task_without_extension(context, &mut out).await,
    }
    foreign_identity(context, &mut out).await;
    cancelled_never_completes(context, &mut out).await;
    super::effects::cancel_at_completion(context, &mut out).await;
    terminal_never_changes(context, &mut out).await;
    expired_stays_gone(context, &mut out).await;
    super::retry::retried_call(context, &mut out).await;
    super::pushed::pushed(context, &mut out).await;
    super::asked::asked(context, &mut out).await;
    super::era::era_confusion(context, &mut out).await;
    out.list
}

fn tool_with_support<'a>(context: &'a Context<'_>, support: &str) -> Option<&'a peer::ToolInfo> {
    context
        .opened
        .tools
        .iter()
        .find(|tool| tool.support() == Some(support))
}

async fn required_tool_called_plainly(context: &Context<'_>, out: &mut Outcomes) {
    const CHECK: &str = "hostile.required-tool-called-without-task";
    let Some(tool) = tool_with_support(context, "required") else {
        out.not_applicable(
            CHECK,
            Level::Must,
            "n/a (no such tool): no tool declares taskSupport required",
        );
        return;
    };
    let peer = &context.opened.peer;
    let exchange = peer
        .call_plain(&tool.name, &peer::sample_arguments(&tool.input_schema))
        .await;
    let problem = match (exchange.error_code(), exchange.result()) {
        (Some(code::METHOD_NOT_FOUND), _) => None,
        (Some(other), _) => Some(format!("expected error -32601, got error {other}")),
        (None, Some(result)) if result["isError"] == true => Some(
            "answered a successful CallToolResult with isError: true instead of the error -32601"
                .to_owned(),
        ),
        (None, Some(_)) => Some(format!(
            "the required tool `{}` ran without a task (its result came back)",
            tool.name
        )),
        (None, None) => Some(format!("no answer: {}", exchange.summary())),
    };
    out.judge(
        CHECK,
        Level::Must,
        "answered -32601; no result came back",
        problem,
        &[&exchange],
    );
}

async fn forbidden_tool_called_as_task(context: &Context<'_>, out: &mut Outcomes) {
    const CHECK: &str = "hostile.forbidden-tool-called-as-task";
    let Some(tool) = tool_with_support(context, "forbidden") else {
        out.not_applicable(
            CHECK,
            Level::Should,
            "n/a (no such tool): no tool is forbidden to run as a task",
        );
        return;
    };
    let peer = &context.opened.peer;
    let exchange = create_sampled(peer, tool).await;
    let problem = if peer.created(&exchange).is_some() {
        Some(format!("`{}` was accepted as a task", tool.name))
    } else {
        match (exchange.error_code(), exchange.result()) {
            (Some(code::METHOD_NOT_FOUND), _) => None,
            (Some(other), _) => Some(format!("expected error -32601, got error {other}")),
            (None, Some(_)) => Some(format!(
                "`{}` ran synchronously, the task param ignored (judged by the answer: its \
                 result came back; the probe sees no other effect)",
                tool.name
            )),
            (None, None) => Some(format!("no answer: {}", exchange.summary())),
        }
    };
    out.judge(
        CHECK,
        Level::Should,
        "answered -32601; no result came back, so by the wire the body did not run",
        problem,
        &[&exchange],
    );
}

async fn task_without_capability(context: &Context<'_>, out: &mut Outcomes) {
    const CHECK: &str = "hostile.task-param-without-capability";
    if context.opened.facts.tool_tasks() {
        out.not_applicable(
            CHECK,
            Level::Must,
            "n/a: the server declares tasks.requests.tools.call (a task param is then honoured)",
        );
        return;
    }
    let Some(tool) = context.opened.tools.first() else {
        out.not_applicable(
            CHECK,
            Level::Must,
            "n/a (no such tool): tools/list is empty",
        );
        return;
    };
    let peer = &context.opened.peer;
    let exchange = create_sampled(peer, tool).await;
    out.judge(
        CHECK,
        Level::Must,
        "without the capability the task param is ignored: no CreateTaskResult",
        peer.created(&exchange)
            .map(|view| format!("a task {} was created anyway", view.task_id)),
        &[&exchange],
    );
}

async fn no_task_without_extension(context: &Context<'_>, out: &mut Outcomes) {
    const CHECK: &str = "hostile.no-task-without-extension";
    let (tool, arguments) = match chosen_tool(context) {
        Ok(chosen) => chosen,
        Err(why) => {
            out.not_applicable(CHECK, Level::Must, &why);
            return;
        }
    };
    let exchange = context.opened.peer.call_plain(&tool, &arguments).await;
    let problem = match exchange.result() {
        Some(result) if result["resultType"] == "task" => Some(format!(
            "a request that did not declare the extension got a task ({})",
            result["taskId"]
        )),
        Some(_) => None,
        None => match exchange.error_code() {
            Some(code::MISSING_CAPABILITY) => None,
            Some(other) => Some(format!(
                "expected a synchronous result or -32021, got error {other}"
            )),
            None => Some(format!("no answer: {}", exchange.summary())),
        },
    };
    out.judge(
        CHECK,
        Level::Must,
        "without the extension declared: a synchronous result or -32021, never a task",
        problem,
        &[&exchange],
    );
}

async fn undeclared_methods(context: &Context<'_>, out: &mut Outcomes) {
    let facts = &context.opened.facts;
    let peer = &context.opened.peer;
    if facts.list() {
        out.not_applicable(
            "hostile.list-served-undeclared",
            Level::Should,
            "n/a: tasks.list is declared",
        );
    } else {
        let exchange = peer.list(None).await;
        out.expect_error(
            "hostile.list-served-undeclared",
            Level::Should,
            code::METHOD_NOT_FOUND,
            &exchange,
        );
    }
    if facts.cancel() {
        out.not_applicable(
            "hostile.cancel-served-undeclared",
            Level::Should,
            "n/a: tasks.cancel is declared",
        );
        return;
    }
    match create_task(context).await {
        Err(why) => out.not_applicable("hostile.cancel-served-undeclared", Level::Should, &why),
        Ok((_, view)) => {
            let cancel = peer.cancel(&view.task_id).await;
            let after = peer.get(&view.task_id).await;
            let cancelled =
                peer.shown(&after).and_then(|shown| shown.status) == Some(TaskStatus::Cancelled);
            let problem = match cancel.error_code() {
                _ if cancelled => {
                    Some("tasks/cancel is not declared, yet it cancelled the task".to_owned())
                }
                Some(code::METHOD_NOT_FOUND) => None,
                Some(other) => Some(format!("expected error -32601, got error {other}")),
                None => Some(format!("served: {}", cancel.summary())),
            };
            out.judge(
                "hostile.cancel-served-undeclared",
                Level::Should,
                "answered -32601 and the task went on",
                problem,
                &[&cancel, &after],
            );
        }
    }
}

/// An error as a caller could compare it: code, message and data with `task_id` blanked.
fn error_shape(exchange: &Exchange, task_id: &str) -> Option<String> {
    let error = exchange.error()?;
    Some(
        json!({ "code": error["code"], "message": error["message"], "data": error["data"] })
            .to_string()
            .replace(task_id, "<id>"),
    )
}

/// Why a stranger's refusal of `method` on the owner's task differs from its refusal of
/// an unknown id, if it does (or why it was not refused at all).
fn foreign_refusal_problem(
    context: &Context<'_>,
    stranger: &Peer,
    method: &str,
    view: &TaskView,
    foreign: &Exchange,
    unknown: &Exchange,
) -> Option<String> {
    match (
        error_shape(foreign, &view.task_id),
        error_shape(unknown, UNKNOWN_TASK_ID),
    ) {
        (None, _) => Some(format!(
            "{} {method} of {}'s task was served: {}",
            stranger.identity(),
            context.opened.peer.identity(),
            foreign.summary()
        )),
        (Some(foreign_error), Some(unknown_error)) if foreign_error != unknown_error => Some(
            format!("told apart from an unknown id: {foreign_error} vs {unknown_error}"),
        ),
        (Some(_), None) => Some(format!(
            "an unknown id was not refused ({}), so the refusal of the foreign one tells it apart",
            unknown.summary()
        )),
        _ => None,
    }
}

/// 2025-11-25: another identity's `tasks/list`, page by page, never shows the task.
async fn foreign_list(
    context: &Context<'_>,
    out: &mut Outcomes,
    other: &super::Opened,
    create: &Exchange,
    view: &TaskView,
) {
    let stranger = &other.peer;
    if !other.facts.list() {
        out.not_applicable(
            "hostile.foreign-identity.list",
            Level::Must,
            "n/a: tasks.list is not declared",
        );
    } else {
        let mut pages = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = false;
        for _ in 0..peer::PAGES_MAX {
            let page = stranger.list(cursor.as_deref()).await;
            seen |= page
                .result()
                .and_then(|result| result["tasks"].as_array())
                .is_some_and(|tasks| {
                    tasks
                        .iter()
                        .any(|task| task["taskId"] == view.task_id.as_str())
                });
            cursor = page
                .result()
                .and_then(|result| result["nextCursor"].as_str().map(str::to_owned));
            pages.push(page);
            if cursor.is_none() || seen {
                break;
            }
        }
        let evidence: Vec<&Exchange> = std::iter::once(create).chain(pages.iter()).collect();
        out.judge(
            "hostile.foreign-identity.list",
            Level::Must,
            "another identity's tasks/list never shows the task",
            seen.then(|| {
                format!(
                    "{} listed {}'s task {}",
                    stranger.identity(),
                    context.opened.peer.identity(),
                    view.task_id
                )
            }),
            &evidence,
        );
    }
}

async fn foreign_identity(context: &Context<'_>, out: &mut Outcomes) {
    let era = context.opened.peer.era;
    let methods: &[&str] = match era {
        // The cancel before the blocking result: the owner's task is still running then.
        Era::Core2025 => &["tasks/get", "tasks/cancel", "tasks/result"],
        Era::Extension2026 => &["tasks/get", "tasks/cancel", "tasks/update"],
    };
    let check = |method: &str| {
        format!(
            "hostile.foreign-identity.{}",
            method.trim_start_matches("tasks/")
        )
    };
    let Some(other) = context.others.first() else {
        let why = "n/a: one identity only (give --http with two or more --token NAME=TOKEN)";
        for method in methods {
            out.not_applicable(&check(method), Level::Must, why);
        }
        if era == Era::Core2025 {
            out.not_applicable("hostile.foreign-identity.list", Level::Must, why);
        }
        return;
    };
    let (create, view) = match create_task(context).await {
        Ok(created) => created,
        Err(why) => {
            for method in methods {
                out.not_applicable(&check(method), Level::Must, &why);
            }
            return;
        }
    };
    let stranger = &other.peer;
    for method in methods {
        let params = |task_id: &str| match *method {
            "tasks/update" => json!({ "taskId": task_id, "inputResponses": {} }),
            _ => json!({ "taskId": task_id }),
        };
        let foreign = stranger.request(method, params(&view.task_id)).await;
        let unknown = stranger.request(method, params(UNKNOWN_TASK_ID)).await;
        if !out.served(&other.facts, method, &unknown) {
            // Refused alike because served to no one: nothing told about identities.
            out.not_served(&check(method), Level::Must, method);
            continue;
        }
        let problem = foreign_refusal_problem(context, stranger, method, &view, &foreign, &unknown);
        out.judge(
            &check(method),
            Level::Must,
            "refused exactly as an unknown id",
            problem,
            &[&create, &foreign, &unknown],
        );
        if *method == "tasks/cancel" {
            // The owner's task must not have been touched by the stranger's cancel.
            let owner = context.opened.peer.get(&view.task_id).await;
            out.judge(
                "hostile.foreign-identity.cancel-had-no-effect",
                Level::Must,
                "after another identity's cancel the owner's task is not cancelled",
                (peer_status(&context.opened.peer, &owner) == Some(TaskStatus::Cancelled)).then(
                    || {
                        "the owner reads its task cancelled after only another identity \
                         cancelled it"
                            .to_owned()
                    },
                ),
                &[&foreign, &owner],
            );
        }
    }
    if era == Era::Core2025 {
        foreign_list(context, out, other, &create, &view).await;
    }
}

/// Polls `task_id` every 10 ms (finer than [`Peer::wait_terminal`], which follows the
/// task's poll interval: the aim needs the moment) until it is terminal or `wait_ms` pass;
/// the first read that showed it terminal.
pub(super) async fn poll_to_end(
    peer: &Peer,
    task_id: &str,
    context: &Context<'_>,
    wait_ms: u64,
) -> Option<Exchange> {
    let deadline_ms = context.clock.now_ms() + wait_ms;
    while context.clock.now_ms() < deadline_ms {
        let read = peer.get(task_id).await;
        if peer_status(peer, &read).is_some_and(TaskStatus::is_terminal) {
            return Some(read);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    None
}

pub(super) fn peer_status(peer: &Peer, exchange: &Exchange) -> Option<TaskStatus> {
    peer.shown(exchange).and_then(|shown| shown.status)
}

/// Reads `task_id` with `tasks/get` every [`READ_EVERY_MS`] for `duration_ms`.
async fn read_for(peer: &Peer, task_id: &str, duration_ms: u64) -> Vec<Exchange> {
    let mut reads = Vec::new();
    for _ in 0..duration_ms.div_ceil(READ_EVERY_MS).max(1) {
        reads.push(peer.get(task_id).await);
        tokio::time::sleep(Duration::from_millis(READ_EVERY_MS)).await;
    }
    reads
}

/// The task's duration the checks wait out: the task timeout, bounded to 5 s (the checks
/// want the work to have had time to finish, not to wait for a task that never ends).
fn work_window_ms(context: &Context<'_>) -> u64 {
    (context.config.task_timeout.as_millis() as u64).min(5_000)
}

async fn cancelled_never_completes(context: &Context<'_>, out: &mut Outcomes) {
    const CHECK: &str = "hostile.cancelled-never-completes";
    let peer = &context.opened.peer;
    if !context.opened.facts.cancel() {
        out.not_applicable(CHECK, Level::Must, "n/a: tasks.cancel is not declared");
        return;
    }
    let (create, view) = match create_task(context).await {
        Ok(created) => created,
        Err(why) => {
            out.not_applicable(CHECK, Level::Must, &why);
            return;
        }
    };
    let cancel = peer.cancel(&view.task_id).await;
    let first = peer.get(&view.task_id).await;
    if peer_status(peer, &first) != Some(TaskStatus::Cancelled) {
        let why = match peer.era {
            Era::Core2025 => {
                "n/a: the task ended before the cancel reached it (give --args that make the tool run longer)"
            }
            Era::Extension2026 => {
                "n/a: the server let the task go on (cancellation is cooperative in 2026-07-28)"
            }
        };
        out.not_applicable(CHECK, Level::Must, why);
        return;
    }
    // The work would have finished by now, had it not been cancelled.
    let reads = read_for(peer, &view.task_id, work_window_ms(context)).await;
    let result = match peer.era {
        Era::Core2025 => Some(peer.result(&view.task_id).await),
        Era::Extension2026 => None,
    };
    let mut problem = None;
    for read in &reads {
        match peer.shown(read) {
            Some(shown) if shown.status != Some(TaskStatus::Cancelled) => {
                problem.get_or_insert(format!(
                    "read cancelled, then {} (the latch broke)",
                    status_name(shown.status)
                ));
            }
            _ if read
                .result()
                .is_some_and(|result| result.get("result").is_some()) =>
            {
                problem.get_or_insert("a cancelled task inlines a result".to_owned());
            }
            _ => {}
        }
    }
    if let Some(payload) = result.as_ref().and_then(Exchange::result)
        && payload["isError"] != true
    {
        problem.get_or_insert(format!(
            "tasks/result of a cancelled task served a completion payload: {}",
            super::transport::compact(payload, 200)
        ));
    }
    let mut evidence: Vec<&Exchange> = vec![&create, &cancel, &first];
    evidence.extend(
        reads
            .iter()
            .filter(|read| peer_status(peer, read) != Some(TaskStatus::Cancelled))
            .take(2),
    );
    evidence.extend(result.iter());
    out.judge(
        CHECK,
        Level::Must,
        "stayed cancelled while its work would have finished, and served no completion",
        problem,
        &evidence,
    );
}

async fn terminal_never_changes(context: &Context<'_>, out: &mut Outcomes) {
    const CHECK: &str = "hostile.terminal-never-changes";
    let peer = &context.opened.peer;
    let (create, view) = match create_task(context).await {
        Ok(created) => created,
        Err(why) => {
            out.not_applicable(CHECK, Level::Must, &why);
            return;
        }
    };
    let deadline_ms = context.clock.now_ms() + context.config.task_timeout.as_millis() as u64;
    let ended = peer
        .wait_terminal(&view.task_id, context.clock, deadline_ms)
        .await;
    let Some(first) = peer
        .shown(&ended)
        .filter(|shown| shown.status.is_some_and(TaskStatus::is_terminal))
    else {
        out.not_applicable(
            CHECK,
            Level::Must,
            "n/a: the task did not end within the task timeout",
        );
        return;
    };
    let cancel = peer.cancel(&view.task_id).await;
    let mut reads = read_for(peer, &view.task_id, 1_000).await;
    if peer.era == Era::Core2025 {
        reads.push(peer.result(&view.task_id).await);
        reads.push(peer.result(&view.task_id).await);
    }
    let mut problem = None;
    for read in &reads {
        if let Some(shown) = peer.shown(read)
            && (shown.status != first.status
                || shown.fields.updated_at_ms != first.fields.updated_at_ms)
        {
            problem.get_or_insert(format!(
                "ended {} (lastUpdatedAt {} ms), later read {} (lastUpdatedAt {} ms)",
                status_name(first.status),
                first.fields.updated_at_ms,
                status_name(shown.status),
                shown.fields.updated_at_ms
            ));
        }
    }
    if peer.era == Era::Core2025 {
        let payloads: Vec<Value> = reads[reads.len() - 2..].iter().map(payload_of).collect();
        if payloads[0] != payloads[1] {
            problem.get_or_insert("two tasks/result calls answered different payloads".to_owned());
        }
    } else {
        let inlined: Vec<Value> = std::iter::once(&ended)
            .chain(reads.iter())
            .filter_map(|read| {
                read.result()
                    .map(|result| json!([result["result"], result["error"]]))
            })
            .collect();
        if inlined.windows(2).any(|pair| pair[0] != pair[1]) {
            problem.get_or_insert("the inlined outcome changed between reads".to_owned());
        }
    }
    let mut evidence = vec![&create, &ended, &cancel];
    evidence.extend(reads.iter().rev().take(2));
    out.judge(
        CHECK,
        Level::Must,
        "status, lastUpdatedAt and the outcome stayed as they ended, a cancel notwithstanding",
        problem,
        &evidence,
    );
}

/// A `tasks/result` answer as compared across calls: the result without `_meta`, or the error.
fn payload_of(exchange: &Exchange) -> Value {
    match exchange.result() {
        Some(result) => {
            let mut result = result.clone();
            if let Value::Object(object) = &mut result {
                object.remove("_meta");
            }
            result
        }
        None => exchange.error().cloned().unwrap_or(Value::Null),
    }
}

async fn expired_stays_gone(context: &Context<'_>, out: &mut Outcomes) {
    const CHECK: &str = "hostile.expired-stays-gone";
    let peer = &context.opened.peer;
    let (tool, arguments) = match chosen_tool(context) {
        Ok(chosen) => chosen,
        Err(why) => {
            out.not_applicable(CHECK, Level::Must, &why);
            return;
        }
    };
    let create = peer
        .create(&tool, &arguments, Some(EXPIRY_TTL_ASKED_MS))
        .await;
    let Some(view) = peer.created(&create) else {
        out.not_applicable(
            CHECK,
            Level::Must,
            &format!("n/a: no task was created: {}", create.summary()),
        );
        return;
    };
    let wait_max_ms = context.config.expiry_wait.as_millis() as u64;
    let ttl_ms = match view.fields.ttl_ms {
        Some(ttl) if ttl <= wait_max_ms => ttl,
        granted => {
            let granted = granted.map_or("unlimited (null)".to_owned(), |ttl| format!("{ttl} ms"));
            out.not_applicable(
                CHECK,
                Level::Must,
                &format!("n/a: the shortest TTL the server grants is {granted}, over --expiry-wait {wait_max_ms} ms"),
            );
            return;
        }
    };
    // Read through expiry and past the end of the work: once the task reads as gone, no
    // later read (a late completion write, say) may bring it back. The moment it first
    // reads gone (before a sweep may delete it) it is also cancelled: an expired task is
    // unknown to a write as to a read.
    let duration_ms = ttl_ms + work_window_ms(context) + 1_000;
    let mut reads = Vec::new();
    let mut cancel = None;
    let mut gone_at = None;
    let mut problem = None;
    for index in 0..duration_ms.div_ceil(READ_EVERY_MS).max(1) as usize {
        let read = peer.get(&view.task_id).await;
        let gone = read.error_code() == Some(code::INVALID_PARAMS);
        match (gone, gone_at) {
            (true, None) => {
                gone_at = Some(index);
                if context.opened.facts.cancel() {
                    let answer = peer.cancel(&view.task_id).await;
                    if peer.shown(&answer).is_some() {
                        problem.get_or_insert(
                            "read as gone, then a tasks/cancel of it was applied and answered \
                             with the task: an expired task written to"
                                .to_owned(),
                        );
                    }
                    cancel = Some(answer);
                }
            }
            (false, Some(at)) if peer.shown(&read).is_some() => {
                problem.get_or_insert(format!(
                    "read as gone (read {at}), then shown again (read {index}): revived"
                ));
            }
            _ => {}
        }
        reads.push(read);
        tokio::time::sleep(Duration::from_millis(READ_EVERY_MS)).await;
    }
    let mut evidence = vec![&create];
    if let Some(at) = gone_at {
        evidence.push(&reads[at]);
    }
    evidence.extend(cancel.as_ref());
    evidence.extend(reads.last());
    match (problem, gone_at) {
        (Some(problem), _) => out.add(CHECK, Level::Must, Verdict::Fail, problem, &evidence),
        (None, Some(_)) => out.add(CHECK, Level::Must, Verdict::Pass, format!("granted ttl {ttl_ms} ms; gone after it, a cancel refused, and stayed gone"), &evidence),
        (None, None) => out.add(
            CHECK,
            Level::Must,
            Verdict::Pass,
            format!("granted ttl {ttl_ms} ms; the server still serves the task after it (allowed: it MAY delete)"),
            &evidence,
        ),
    }
}

/// `tool` called as a task with arguments sampled from its schema.
async fn create_sampled(peer: &Peer, tool: &peer::ToolInfo) -> Exchange {
    peer.create(
        &tool.name,
        &peer::sample_arguments(&tool.input_schema),
        None,
    )
    .await
}
