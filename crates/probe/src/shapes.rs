//! Phase 1: the wire shapes of each era, one check at a time. Each check names the spec's
//! strength (MUST / SHOULD) and keeps the exchanges that decided it.

use super::outcomes::Outcomes;
use super::peer::{self, Facts, Peer, RELATED_TASK, TaskView, code};
use super::transport::{Clock, Exchange};
use super::{CheckOutcome, Config, Level, Opened};
use crate::contract::{Era, TaskStatus};
use serde_json::{Value, json};

/// An id no server has issued (the probe never creates one like it).
pub const UNKNOWN_TASK_ID: &str = "tasklatch-probe-unknown-4b1d7c2e-0000-4000-8000-000000000000";
/// Tools the probe tries, at most, to find one a 2026-07-28 server runs as a task.
const TOOL_TRIES_MAX: usize = 10;

/// What the checks of one era work with.
pub struct Context<'a> {
    /// The era opened, its facts and tools, as the first identity.
    pub opened: &'a Opened,
    /// The same era opened as each other identity (HTTP with several tokens).
    pub others: &'a [Opened],
    /// The run's settings.
    pub config: &'a Config,
    /// The run's clock.
    pub clock: Clock,
}

/// Runs every shape check of the context's era.
pub async fn run(context: &Context<'_>) -> Vec<CheckOutcome> {
    let mut out = Outcomes::new(context.opened.peer.era);
    match context.opened.peer.era {
        Era::Core2025 => core_2025(context, &mut out).await,
        Era::Extension2026 => extension_2026(context, &mut out).await,
    }
    common(context, &mut out).await;
    out.judge_served(&context.opened.facts);
    out.list
}

/// The task tool the checks create tasks with, and its arguments: `--tool`/`--args`, else
/// the first tool whose `taskSupport` allows a task (2025-11-25) or the first tool the
/// server answers with a task (2026-07-28, found by [`create_task`]).
pub fn chosen_tool(context: &Context<'_>) -> Result<(String, Value), String> {
    let tools = &context.opened.tools;
    let tool = match &context.config.tool {
        Some(name) => tools
            .iter()
            .find(|tool| &tool.name == name)
            .ok_or_else(|| format!("n/a (no such tool): `--tool {name}` is not in tools/list"))?,
        None => tools
            .iter()
            .find(|tool| {
                context.opened.peer.era == Era::Extension2026
                    || matches!(tool.support(), Some("optional" | "required"))
            })
            .ok_or("n/a (no such tool): no tool can run as a task")?,
    };
    Ok((
        tool.name.clone(),
        arguments_for(context, &tool.input_schema),
    ))
}

/// A new 2025-11-25 session of the first identity (over HTTP: stdio's connection is its
/// one session) whose `initialize` declares `capabilities`; the error is the n/a reason.
pub async fn fresh_session(context: &Context<'_>, capabilities: Value) -> Result<Peer, String> {
    let fresh = context
        .opened
        .peer
        .reconnected()
        .ok_or("n/a: over stdio one connection is one session, with no second")?;
    let peer = Peer::new(
        Era::Core2025,
        std::sync::Arc::new(fresh),
        context.config.request_timeout,
    )
    .declaring(capabilities);
    peer.open().await.map_err(|exchange| {
        format!("n/a: a session could not be opened: {}", exchange.summary())
    })?;
    Ok(peer)
}

/// The tool `name` of `tools/list` with arguments sampled from its schema and `given`
/// laid over them.
pub fn named_tool(
    context: &Context<'_>,
    name: &str,
    given: Option<&Value>,
) -> Option<(String, Value)> {
    let tool = context.opened.tools.iter().find(|tool| tool.name == name)?;
    Some((tool.name.clone(), overlay(&tool.input_schema, given)))
}

/// Arguments sampled from `schema` (its required properties), with `--args` laid over them.
fn arguments_for(context: &Context<'_>, schema: &Value) -> Value {
    overlay(schema, context.config.args.as_ref())
}

/// Arguments sampled from `schema` with `given` laid over them.
pub(super) fn overlay(schema: &Value, given: Option<&Value>) -> Value {
    let mut arguments = peer::sample_arguments(schema);
    if let (Value::Object(sampled), Some(Value::Object(given))) = (&mut arguments, given) {
        for (name, value) in given {
            sampled.insert(name.clone(), value.clone());
        }
    }
    arguments
}

/// Creates a task with the chosen tool. 2026-07-28 without `--tool`: tries the tools in
/// order (at most ten) until one is answered with a task.
pub async fn create_task(context: &Context<'_>) -> Result<(Exchange, TaskView), String> {
    create_task_tagged(context, None).await
}

/// As [`create_task`], each `{tag}` in the arguments' strings replaced by `tag` (the
/// effect checks find a task's line in a shared log by it).
pub async fn create_task_tagged(
    context: &Context<'_>,
    tag: Option<&str>,
) -> Result<(Exchange, TaskView), String> {
    let peer = &context.opened.peer;
    let (first, arguments) = chosen_tool(context)?;
    let mut candidates = vec![(first, arguments)];
    if peer.era == Era::Extension2026 && context.config.tool.is_none() {
        for tool in context.opened.tools.iter().skip(1).take(TOOL_TRIES_MAX - 1) {
            candidates.push((
                tool.name.clone(),
                arguments_for(context, &tool.input_schema),
            ));
        }
    }
    let mut last = None;
    for (tool, arguments) in candidates {
        let arguments = match tag {
            Some(tag) => with_tag(&arguments, tag),
            None => arguments,
        };
        let exchange = peer.create(&tool, &arguments, None).await;
        if let Some(view) = peer.created(&exchange) {
            return Ok((exchange, view));
        }
        last = Some(exchange);
    }
    Err(match last {
        Some(exchange) => format!("no task was created (the last try: {})", exchange.summary()),
        None => "no tool to try".to_owned(),
    })
}

/// `value` with `{tag}` in each of its strings replaced by `tag`.
pub fn with_tag(value: &Value, tag: &str) -> Value {
    match value {
        Value::String(text) => Value::String(text.replace("{tag}", tag)),
        Value::Array(items) => Value::Array(items.iter().map(|item| with_tag(item, tag)).collect()),
        Value::Object(members) => Value::Object(
            members
                .iter()
                .map(|(name, item)| (name.clone(), with_tag(item, tag)))
                .collect(),
        ),
        other => other.clone(),
    }
}

async fn core_2025(context: &Context<'_>, out: &mut Outcomes) {
    let opened = context.opened;
    let peer = &opened.peer;
    let facts = &opened.facts;

    capability_checks_2025(facts, out);

    tool_support_checks(opened, facts, out);

    unknown_id_checks(peer, facts, out).await;

    let created = create_task(context).await;
    let (create, view) = match created {
        Ok(created) => created,
        Err(why) => {
            for check in [
                "shapes.create.task-fields",
                "shapes.get.task-fields",
                "shapes.get.no-related-task-meta",
                "shapes.get.unknown-params-tolerated",
                "shapes.result.waits-for-terminal",
                "shapes.result.related-task-meta",
                "shapes.cancel.answers-cancelled",
                "shapes.cancel.terminal-refused",
            ] {
                out.not_applicable(check, Level::Must, &why);
            }
            list_checks(context, out, Err(&why)).await;
            return;
        }
    };
    out.judge(
        "shapes.create.task-fields",
        Level::Must,
        "result.task carries taskId, status, createdAt, lastUpdatedAt and ttl",
        task_problem(&view, "result.task"),
        &[&create],
    );

    get_checks_2025(peer, &create, &view, out).await;

    result_checks_2025(context, &view, out).await;

    list_checks(context, out, Ok(&view)).await;

    if facts.cancel() {
        cancel_checks(context, out, &view).await;
    } else {
        for check in [
            "shapes.cancel.answers-cancelled",
            "shapes.cancel.terminal-refused",
        ] {
            out.not_applicable(check, Level::Must, "n/a: tasks.cancel is not declared");
        }
    }
}

/// `capabilities.tasks` and each member an object (the schema types them so; `true` is
/// not one).
fn capability_checks_2025(facts: &Facts, out: &mut Outcomes) {
    let tasks = &facts.capabilities["tasks"];
    let mut problems = Vec::new();
    if !tasks.is_object() {
        problems.push(format!("capabilities.tasks is {tasks}, not an object"));
    } else {
        for path in [
            &["list"][..],
            &["cancel"],
            &["requests"],
            &["requests", "tools"],
            &["requests", "tools", "call"],
        ] {
            let mut value = tasks;
            for key in path {
                value = &value[*key];
            }
            if !value.is_null() && !value.is_object() {
                problems.push(format!(
                    "capabilities.tasks.{} is {value}, not an object",
                    path.join(".")
                ));
            }
        }
        if tasks["requests"]["tools"].is_object() && !facts.tool_tasks() {
            problems.push(
                "capabilities.tasks.requests.tools has no `call` object: clients (VS Code \
                 among them) then never create tool tasks"
                    .to_owned(),
            );
        }
    }
    out.judge(
        "shapes.capabilities.tasks-nesting",
        Level::Must,
        "capabilities.tasks and its members are objects",
        (!problems.is_empty()).then(|| problems.join("; ")),
        &[],
    );
}

/// Every `execution.taskSupport` one of the three values, and task-capable tools declared
/// with the capability clients need to create tasks.
fn tool_support_checks(opened: &Opened, facts: &Facts, out: &mut Outcomes) {
    let wrong: Vec<String> = opened
        .tools
        .iter()
        .filter(|tool| tool.support().is_none())
        .map(|tool| {
            let shown = tool
                .task_support
                .as_ref()
                .map_or("absent".to_owned(), Value::to_string);
            format!("{}: {shown}", tool.name)
        })
        .collect();
    out.judge(
        "shapes.tools.task-support-values",
        Level::Must,
        "every execution.taskSupport is forbidden, optional or required (or absent)",
        (!wrong.is_empty()).then(|| format!("not one of the three values: {}", wrong.join(", "))),
        &[],
    );

    let tasky: Vec<&str> = opened
        .tools
        .iter()
        .filter(|tool| matches!(tool.support(), Some("optional" | "required")))
        .map(|tool| tool.name.as_str())
        .collect();
    if tasky.is_empty() {
        out.not_applicable(
            "shapes.tools.task-support-needs-capability",
            Level::Should,
            "n/a (no such tool): no tool declares optional or required",
        );
    } else {
        out.judge(
            "shapes.tools.task-support-needs-capability",
            Level::Should,
            "tools that may run as tasks come with capabilities.tasks.requests.tools.call",
            (!facts.tool_tasks()).then(|| {
                format!(
                    "tools {} declare task support but the server does not declare \
                     tasks.requests.tools.call, so clients must not create tasks",
                    tasky.join(", ")
                )
            }),
            &[],
        );
    }
}

/// `tasks/get`, `tasks/result` and `tasks/cancel` of an id nobody was given.
async fn unknown_id_checks(peer: &Peer, facts: &Facts, out: &mut Outcomes) {
    for (check, method) in [
        ("shapes.get.unknown-id", "tasks/get"),
        ("shapes.result.unknown-id", "tasks/result"),
        ("shapes.cancel.unknown-id", "tasks/cancel"),
    ] {
        if method == "tasks/cancel" && !facts.cancel() {
            out.not_applicable(
                check,
                Level::Must,
                "n/a: tasks.cancel is not declared (hostile.cancel-served-undeclared checks it)",
            );
            continue;
        }
        let exchange = peer
            .request(method, json!({ "taskId": UNKNOWN_TASK_ID }))
            .await;
        if out.served(facts, method, &exchange) {
            out.expect_error(check, Level::Must, code::INVALID_PARAMS, &exchange);
        } else {
            out.not_served(check, Level::Must, method);
        }
    }
}

/// The created task as `tasks/get` shows it: its fields, no related-task `_meta`, and an
/// unknown param tolerated.
async fn get_checks_2025(peer: &Peer, create: &Exchange, view: &TaskView, out: &mut Outcomes) {
    let get = peer.get(&view.task_id).await;
    let shown = peer.shown(&get);
    out.judge(
        "shapes.get.task-fields",
        Level::Must,
        "the Task's fields at the top level of the result, same id and createdAt",
        match &shown {
            None => Some(format!("no Task at the top level: {}", get.summary())),
            Some(shown) if shown.task_id != view.task_id => Some(format!(
                "asked for {}, answered {}",
                view.task_id, shown.task_id
            )),
            Some(shown)
                if shown.fields.malformed.is_none()
                    && view.fields.malformed.is_none()
                    && shown.fields.created_at_ms != view.fields.created_at_ms =>
            {
                Some("createdAt differs between the create and tasks/get".to_owned())
            }
            Some(shown) => task_problem(shown, "tasks/get result"),
        },
        &[create, &get],
    );
    out.judge(
        "shapes.get.no-related-task-meta",
        Level::Should,
        "tasks/get carries no related-task _meta",
        get.result()
            .and_then(|result| result["_meta"].get(RELATED_TASK))
            .map(|meta| format!("tasks/get result carries _meta[{RELATED_TASK}] = {meta}")),
        &[&get],
    );

    let tolerant = peer
        .request(
            "tasks/get",
            json!({ "taskId": view.task_id, "tasklatchProbeUnknownParam": true }),
        )
        .await;
    out.judge(
        "shapes.get.unknown-params-tolerated",
        Level::Must,
        "an unknown param is ignored",
        match peer.shown(&tolerant) {
            Some(shown) if shown.task_id == view.task_id => None,
            _ => Some(format!("refused an unknown param: {}", tolerant.summary())),
        },
        &[&tolerant],
    );
}

/// `tasks/result` blocks until the task is terminal, then answers with the related task.
async fn result_checks_2025(context: &Context<'_>, view: &TaskView, out: &mut Outcomes) {
    let peer = &context.opened.peer;
    let mut result_peer = peer.sibling();
    result_peer.timeout = context.config.task_timeout;
    let result = result_peer.result(&view.task_id).await;
    if !out.served(&context.opened.facts, "tasks/result", &result) {
        for check in [
            "shapes.result.waits-for-terminal",
            "shapes.result.related-task-meta",
        ] {
            out.not_served(check, Level::Must, "tasks/result");
        }
        return;
    }
    let after = peer.get(&view.task_id).await;
    let after_status = peer.shown(&after).and_then(|shown| shown.status);
    out.judge(
        "shapes.result.waits-for-terminal",
        Level::Must,
        "tasks/result answered once the task was terminal",
        match (&result.response, after_status) {
            (None, _) => Some(format!(
                "tasks/result did not answer within {:?}: {}",
                context.config.task_timeout,
                result.failure.as_deref().unwrap_or("")
            )),
            (Some(_), Some(status)) if !status.is_terminal() => Some(format!(
                "tasks/result answered while the task was still {} (a tasks/get after it says so)",
                status_name(Some(status))
            )),
            (Some(_), None) => Some(format!(
                "the task could not be read after tasks/result: {}",
                after.summary()
            )),
            _ => None,
        },
        &[&result, &after],
    );
    match result.result() {
        Some(payload) => out.judge(
            "shapes.result.related-task-meta",
            Level::Must,
            "tasks/result carries _meta[related-task].taskId of its task",
            match payload["_meta"][RELATED_TASK]["taskId"].as_str() {
                Some(id) if id == view.task_id => None,
                Some(other) => Some(format!("related-task names {other}, not {}", view.task_id)),
                None => Some(format!(
                    "no _meta[\"{RELATED_TASK}\"].taskId in the tasks/result answer"
                )),
            },
            &[&result],
        ),
        None => out.not_applicable(
            "shapes.result.related-task-meta",
            Level::Must,
            "n/a: tasks/result answered with an error (an error object has no _meta)",
        ),
    }
}

/// `tasks/list`: page shape, the caller's own task reachable (`own`, or why there is none),
/// a made-up cursor refused.
async fn list_checks(context: &Context<'_>, out: &mut Outcomes, own: Result<&TaskView, &str>) {
    let peer = &context.opened.peer;
    if context.opened.facts.list() {
        let mut pages = Vec::new();
        let mut cursor: Option<String> = None;
        let mut problems = Vec::new();
        let mut found = false;
        for _ in 0..peer::PAGES_MAX {
            let page = peer.list(cursor.as_deref()).await;
            if !out.served(&context.opened.facts, "tasks/list", &page) {
                for check in [
                    "shapes.list.page-shape",
                    "shapes.list.reaches-own-task",
                    "shapes.list.bad-cursor",
                ] {
                    out.not_served(check, Level::Must, "tasks/list");
                }
                return;
            }
            let result = page.result().cloned();
            pages.push(page);
            let Some(result) = result else {
                problems.push("tasks/list answered an error".to_owned());
                break;
            };
            let Some(tasks) = result["tasks"].as_array() else {
                problems.push("no `tasks` array".to_owned());
                break;
            };
            for task in tasks {
                match TaskView::read(task, peer.era) {
                    Some(listed) => {
                        found |= own.is_ok_and(|own| listed.task_id == own.task_id);
                        if let Some(problem) = task_problem(&listed, "a listed task") {
                            problems.push(problem);
                        }
                    }
                    None => problems.push(format!("a listed task without taskId: {task}")),
                }
            }
            cursor = match &result["nextCursor"] {
                Value::Null => None,
                Value::String(next) => Some(next.clone()),
                other => {
                    problems.push(format!("nextCursor is {other}, not a string"));
                    None
                }
            };
            if cursor.is_none() || found {
                break;
            }
        }
        let evidence: Vec<&Exchange> = pages.iter().collect();
        out.judge(
            "shapes.list.page-shape",
            Level::Must,
            "tasks: Task[], nextCursor a string when present",
            problems.first().cloned(),
            &evidence,
        );
        match own {
            Ok(own) => out.judge(
                "shapes.list.reaches-own-task",
                Level::Must,
                "the task tasks/get can get is reachable through tasks/list",
                (!found).then(|| format!("{} is not in any page", own.task_id)),
                &evidence,
            ),
            Err(why) => out.not_applicable("shapes.list.reaches-own-task", Level::Must, why),
        }
        let bad = peer.list(Some("tasklatch-probe-not-a-cursor")).await;
        out.expect_error(
            "shapes.list.bad-cursor",
            Level::Must,
            code::INVALID_PARAMS,
            &bad,
        );
    } else {
        for check in [
            "shapes.list.page-shape",
            "shapes.list.reaches-own-task",
            "shapes.list.bad-cursor",
        ] {
            out.not_applicable(check, Level::Must, "n/a: tasks.list is not declared");
        }
    }
}

async fn cancel_checks(context: &Context<'_>, out: &mut Outcomes, ended: &TaskView) {
    let peer = &context.opened.peer;
    match create_task(context).await {
        Err(why) => out.not_applicable("shapes.cancel.answers-cancelled", Level::Must, &why),
        Ok((create, view)) => {
            let cancel = peer.cancel(&view.task_id).await;
            match (peer.shown(&cancel), cancel.error_code()) {
                _ if !out.served(&context.opened.facts, "tasks/cancel", &cancel) => {
                    out.not_served(
                        "shapes.cancel.answers-cancelled",
                        Level::Must,
                        "tasks/cancel",
                    );
                }
                (_, Some(code::INVALID_PARAMS)) => out.not_applicable(
                    "shapes.cancel.answers-cancelled",
                    Level::Must,
                    "n/a: the task ended before the cancel reached it (give --args that \
                     make the tool run for a second or more)",
                ),
                (shown, _) => out.judge(
                    "shapes.cancel.answers-cancelled",
                    Level::Must,
                    "tasks/cancel answers the Task, already cancelled",
                    match shown {
                        None => Some(format!("no Task in the answer: {}", cancel.summary())),
                        Some(shown) if shown.status != Some(TaskStatus::Cancelled) => {
                            Some(format!(
                                "the answer says {}, not cancelled",
                                status_name(shown.status)
                            ))
                        }
                        Some(shown) => task_problem(&shown, "tasks/cancel result"),
                    },
                    &[&create, &cancel],
                ),
            }
        }
    }
    terminal_refused(context, out, ended).await;
}

/// A cancel of a terminal task is refused -32602. The premise, that the task is terminal,
/// is read first: `tasks/result` may have answered early, so its answer proves nothing.
async fn terminal_refused(context: &Context<'_>, out: &mut Outcomes, ended: &TaskView) {
    const CHECK: &str = "shapes.cancel.terminal-refused";
    let peer = &context.opened.peer;
    let deadline_ms = context.clock.now_ms() + context.config.task_timeout.as_millis() as u64;
    let last = peer
        .wait_terminal(&ended.task_id, context.clock, deadline_ms)
        .await;
    let status = peer.shown(&last).and_then(|shown| shown.status);
    if !status.is_some_and(TaskStatus::is_terminal) {
        out.not_applicable(
            CHECK,
            Level::Must,
            &format!(
                "n/a: the task to cancel was not terminal within --task-timeout {:?} ({})",
                context.config.task_timeout,
                last.summary()
            ),
        );
        return;
    }
    let again = peer.cancel(&ended.task_id).await;
    if out.served(&context.opened.facts, "tasks/cancel", &again) {
        out.expect_error(CHECK, Level::Must, code::INVALID_PARAMS, &again);
    } else {
        out.not_served(CHECK, Level::Must, "tasks/cancel");
    }
}

async fn extension_2026(context: &Context<'_>, out: &mut Outcomes) {
    extension_refusals(context, out).await;
    let (create, view) = match create_task(context).await {
        Ok(created) => created,
        Err(why) => {
            for check in [
                "shapes.create.flat-task",
                "shapes.get.detailed-task",
                "shapes.get.inlined-outcome",
                "shapes.cancel.ack",
                "shapes.cancel.terminal-ack",
            ] {
                out.not_applicable(check, Level::Must, &why);
            }
            return;
        }
    };
    extension_task_shapes(context, out, &create, &view).await;
    extension_outcome_and_cancel(context, out, &view).await;
}

/// Discovery, the removed methods, the undeclared extension and unknown task ids.
async fn extension_refusals(context: &Context<'_>, out: &mut Outcomes) {
    let peer = &context.opened.peer;
    out.judge(
        "shapes.discover.extension",
        Level::Must,
        "server/discover declares capabilities.extensions[\"io.modelcontextprotocol/tasks\"]",
        (!context.opened.facts.tool_tasks()).then(|| {
            format!(
                "capabilities.extensions is {}",
                context.opened.facts.capabilities["extensions"]
            )
        }),
        &[],
    );

    for (check, method) in [
        ("shapes.removed.tasks-result", "tasks/result"),
        ("shapes.removed.tasks-list", "tasks/list"),
    ] {
        let params = if method == "tasks/list" {
            json!({})
        } else {
            json!({ "taskId": UNKNOWN_TASK_ID })
        };
        let exchange = peer.request(method, params).await;
        out.expect_error(check, Level::Must, code::METHOD_NOT_FOUND, &exchange);
    }
    let undeclared = peer
        .request_declaring("tasks/get", json!({ "taskId": UNKNOWN_TASK_ID }), false)
        .await;
    out.expect_error(
        "shapes.extension.required-for-tasks-methods",
        Level::Must,
        code::MISSING_CAPABILITY,
        &undeclared,
    );
    let facts = &context.opened.facts;
    for (check, method, level, exchange) in [
        (
            "shapes.get.unknown-id",
            "tasks/get",
            Level::Must,
            peer.get(UNKNOWN_TASK_ID).await,
        ),
        (
            "shapes.cancel.unknown-id",
            "tasks/cancel",
            Level::Should,
            peer.cancel(UNKNOWN_TASK_ID).await,
        ),
        (
            "shapes.update.unknown-id",
            "tasks/update",
            Level::Should,
            peer.update(UNKNOWN_TASK_ID, json!({})).await,
        ),
    ] {
        if out.served(facts, method, &exchange) {
            out.expect_error(check, level, code::INVALID_PARAMS, &exchange);
        } else {
            out.not_served(check, level, method);
        }
    }
}

/// The create's flat Task and `tasks/get`'s detailed one.
async fn extension_task_shapes(
    context: &Context<'_>,
    out: &mut Outcomes,
    create: &Exchange,
    view: &TaskView,
) {
    let peer = &context.opened.peer;
    let result = create.result().cloned().unwrap_or(Value::Null);
    let mut problems = Vec::new();
    for stale in ["task", "ttl", "pollInterval"] {
        if result.get(stale).is_some() {
            problems.push(format!("carries the 2025-11-25 field `{stale}`"));
        }
    }
    if let Some(problem) = task_problem(view, "CreateTaskResult") {
        problems.push(problem);
    }
    out.judge(
        "shapes.create.flat-task",
        Level::Must,
        "resultType \"task\" with the Task fields flat (ttlMs, no nested task)",
        problems.first().cloned(),
        &[create],
    );

    let get = peer.get(&view.task_id).await;
    out.judge(
        "shapes.get.detailed-task",
        Level::Must,
        "resultType \"complete\" and the Task's fields",
        match (get.result(), peer.shown(&get)) {
            (Some(result), _) if result["resultType"] != "complete" => Some(format!(
                "resultType is {}, not \"complete\"",
                result["resultType"]
            )),
            (_, None) => Some(format!("no Task in the answer: {}", get.summary())),
            (_, Some(shown)) if shown.task_id != view.task_id => Some(format!(
                "asked for {}, answered {}",
                view.task_id, shown.task_id
            )),
            (_, Some(shown)) => task_problem(&shown, "tasks/get result"),
        },
        &[&get],
    );
}

/// The terminal task's inlined outcome, and cancel acknowledged before and after the end.
async fn extension_outcome_and_cancel(context: &Context<'_>, out: &mut Outcomes, view: &TaskView) {
    let peer = &context.opened.peer;
    let deadline_ms = context.clock.now_ms() + context.config.task_timeout.as_millis() as u64;
    let last = peer
        .wait_terminal(&view.task_id, context.clock, deadline_ms)
        .await;
    let inlined = last.result().cloned().unwrap_or(Value::Null);
    let status = peer.shown(&last).and_then(|shown| shown.status);
    out.judge(
        "shapes.get.inlined-outcome",
        Level::Must,
        "a completed task inlines result, a failed one error {code, message}",
        match status {
            Some(TaskStatus::Completed) if !inlined["result"].is_object() => {
                Some("completed, but no `result` object inlined".to_owned())
            }
            Some(TaskStatus::Failed)
                if !(inlined["error"]["code"].is_i64()
                    && inlined["error"]["message"].is_string()) =>
            {
                Some("failed, but no `error {code, message}` inlined".to_owned())
            }
            Some(TaskStatus::Failed) if inlined.get("result").is_some() => {
                Some("failed, and yet a `result` is inlined".to_owned())
            }
            Some(status) if status.is_terminal() => None,
            _ => Some(format!(
                "the task did not end within {:?} ({})",
                context.config.task_timeout,
                last.summary()
            )),
        },
        &[&last],
    );

    let ack_problem = |exchange: &Exchange| match exchange.result() {
        Some(result) if result["resultType"] == "complete" => None,
        Some(result) => Some(format!(
            "resultType is {}, not \"complete\"",
            result["resultType"]
        )),
        None => Some(format!("not an acknowledgement: {}", exchange.summary())),
    };
    match create_task(context).await {
        Ok((_, fresh)) => {
            let cancel = peer.cancel(&fresh.task_id).await;
            out.judge(
                "shapes.cancel.ack",
                Level::Must,
                "tasks/cancel answers {resultType: \"complete\"}",
                ack_problem(&cancel),
                &[&cancel],
            );
        }
        Err(why) => out.not_applicable("shapes.cancel.ack", Level::Must, &why),
    }
    let terminal = peer.cancel(&view.task_id).await;
    out.judge(
        "shapes.cancel.terminal-ack",
        Level::Must,
        "tasks/cancel of a terminal task is acknowledged the same way",
        ack_problem(&terminal),
        &[&terminal],
    );
}

/// Checks both eras share: the JSON-RPC base protocol.
async fn common(context: &Context<'_>, out: &mut Outcomes) {
    let peer = &context.opened.peer;
    let malformed = peer
        .send_raw("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ")
        .await;
    out.judge(
        "shapes.jsonrpc.malformed-json",
        Level::Must,
        "malformed JSON answered -32700 with id null",
        match (malformed.error_code(), malformed.response.as_ref()) {
            (Some(code::PARSE_ERROR), Some(response)) if response["id"].is_null() => None,
            (Some(code::PARSE_ERROR), Some(response)) => {
                Some(format!("-32700, but with id {}", response["id"]))
            }
            _ => Some(format!("expected -32700: {}", malformed.summary())),
        },
        &[&malformed],
    );
    let unknown = peer
        .request("tasklatch/probe-no-such-method", json!({}))
        .await;
    out.expect_error(
        "shapes.jsonrpc.unknown-method",
        Level::Must,
        code::METHOD_NOT_FOUND,
        &unknown,
    );
    let wrong = peer.request("tasks/get", json!({ "taskId": 42 })).await;
    out.expect_error(
        "shapes.get.task-id-wrong-type",
        Level::Must,
        code::INVALID_PARAMS,
        &wrong,
    );
    let missing = peer.request("tasks/get", json!({})).await;
    out.expect_error(
        "shapes.get.task-id-missing",
        Level::Must,
        code::INVALID_PARAMS,
        &missing,
    );
}

/// What is wrong with a Task object's required fields, if anything.
fn task_problem(view: &TaskView, what: &str) -> Option<String> {
    if view.status.is_none() {
        return Some(format!("{what}: status is not one of the five statuses"));
    }
    if let Some(malformed) = &view.fields.malformed {
        return Some(format!("{what}: {malformed}"));
    }
    (view.fields.updated_at_ms < view.fields.created_at_ms)
        .then(|| format!("{what}: lastUpdatedAt is before createdAt"))
}

/// A status as the wire writes it.
pub(super) fn status_name(status: Option<TaskStatus>) -> String {
    status.map_or("no known status".to_owned(), |status| {
        serde_json::to_value(status)
            .ok()
            .and_then(|value| value.as_str().map(str::to_owned))
            .unwrap_or_default()
    })
}
