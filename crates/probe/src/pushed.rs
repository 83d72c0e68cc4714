//! What the server pushes, judged as the simulation judges it, from outside: over
//! Streamable HTTP in 2025-11-25, the probe opens the GET stream of three sessions — the
//! first identity's, a second session of that identity, and another identity's — and runs
//! one task of the first identity with a progress token to its end. Then: no message on
//! the other identity's stream names the task (tenant isolation holds for every byte the
//! server sends, not only for answers); progress on the token reaches only the session
//! whose call sent it; and a status notification never says a terminal status the task
//! did not end in (the stored record wins).
//!
//! In 2026-07-28 the streams are `subscriptions/listen` answers: the first identity
//! listens to its task, and on a second listen to a made-up id only; the second identity
//! listens naming the first's task. Then: the second identity hears nothing of it; each
//! message on a listen names that listen's subscription and a task it named (the second
//! listen hears nothing of the task); and no message says a terminal status the task did
//! not end in.

use super::outcomes::Outcomes;
use super::peer::TaskView;
use super::shapes::{Context, chosen_tool, fresh_session, status_name};
use super::sse::Listening;
use super::{Level, Verdict};
use crate::contract::{Era, TaskStatus};
use serde_json::{Value, json};
use std::time::Duration;

/// The `_meta` key naming a listen's subscription on each of its messages.
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

const ISOLATION: &str = "hostile.pushed.tenant-isolation";
const PROGRESS: &str = "hostile.pushed.progress-to-its-session";
const STORED: &str = "hostile.pushed.says-what-was-stored";
const LISTEN: &str = "hostile.pushed.listen-as-asked";
const CHECKS: [(&str, Level); 3] = [
    (ISOLATION, Level::Must),
    (PROGRESS, Level::Must),
    (STORED, Level::Must),
];
/// How long the streams are read after the task ended, for late notifications.
const SETTLE_MS: u64 = 300;

const MODERN_CHECKS: [(&str, Level); 3] = [
    (ISOLATION, Level::Must),
    (LISTEN, Level::Must),
    (STORED, Level::Must),
];

/// The three streams a run reads.
struct Streams {
    own: Listening,
    sibling: Listening,
    foreign: Option<(String, Listening)>,
}

pub(super) async fn pushed(context: &Context<'_>, out: &mut Outcomes) {
    let not_applicable = |out: &mut Outcomes, why: &str| {
        for (check, level) in CHECKS {
            out.not_applicable(check, level, why);
        }
    };
    let peer = &context.opened.peer;
    // 2026-07-28 has no session stream: its streams are `subscriptions/listen` answers.
    if peer.era != Era::Core2025 {
        return listened(context, out).await;
    }
    let (tool, arguments) = match chosen_tool(context) {
        Ok(chosen) => chosen,
        Err(why) => return not_applicable(out, &why),
    };
    let streams = match open_streams(context).await {
        Ok(streams) => streams,
        Err(why) => return not_applicable(out, &why),
    };
    let token = format!(
        "tasklatch-probe-progress-{}-{}",
        std::process::id(),
        context.clock.now_ms()
    );
    let created = peer
        .create_with_meta(&tool, &arguments, json!({ "progressToken": token }))
        .await;
    let Some(view) = peer.created(&created) else {
        let why = format!("n/a: no task was created: {}", created.summary());
        return not_applicable(out, &why);
    };
    let last = ended_as(context, &view.task_id).await;
    let heard = streams.own.messages().len() + streams.sibling.messages().len();
    judge_isolation(streams.foreign.as_ref(), heard, &view.task_id, out);
    judge_progress(&streams, &token, out);
    let said = statuses_said(
        [&streams.own, &streams.sibling],
        "notifications/tasks/status",
        &view.task_id,
    );
    judge_stored(&said, last, out);
}

/// The listens of a 2026-07-28 run: the owner's about its task, the owner's about a
/// made-up id only, and the other identity's naming the owner's task.
struct Listens {
    own: (String, Listening),
    elsewhere: Option<(String, Listening)>,
    foreign: Option<(String, Listening)>,
}

/// The 2026-07-28 half: one task of the first identity, followed on `subscriptions/listen`
/// streams to its end.
async fn listened(context: &Context<'_>, out: &mut Outcomes) {
    let not_applicable = |out: &mut Outcomes, why: &str| {
        for (check, level) in MODERN_CHECKS {
            out.not_applicable(check, level, why);
        }
    };
    let peer = &context.opened.peer;
    let (tool, arguments) = match chosen_tool(context) {
        Ok(chosen) => chosen,
        Err(why) => return not_applicable(out, &why),
    };
    let created = peer.create(&tool, &arguments, None).await;
    let Some(view) = peer.created(&created) else {
        let why = format!("n/a: no task was created: {}", created.summary());
        return not_applicable(out, &why);
    };
    let stamp = format!(
        "tasklatch-probe-listen-{}-{}",
        std::process::id(),
        context.clock.now_ms()
    );
    let listens = match open_listens(context, &stamp, &view.task_id).await {
        Ok(listens) => listens,
        Err(why) => return not_applicable(out, &why),
    };
    let last = ended_as(context, &view.task_id).await;
    let heard = listens.own.1.messages().len();
    judge_isolation(listens.foreign.as_ref(), heard, &view.task_id, out);
    judge_listen(&listens, &view.task_id, out);
    let said = statuses_said([&listens.own.1], "notifications/tasks", &view.task_id);
    judge_stored(&said, last, out);
}

async fn open_listens(
    context: &Context<'_>,
    stamp: &str,
    task_id: &str,
) -> Result<Listens, String> {
    let peer = &context.opened.peer;
    let named = [task_id.to_owned()];
    let subscription = format!("{stamp}-own");
    let own = peer
        .subscribe(&subscription, &named)
        .await
        .map_err(|why| format!("n/a: a subscriptions/listen could not be opened: {why}"))?;
    let elsewhere_id = format!("{stamp}-elsewhere");
    let elsewhere = peer
        .subscribe(&elsewhere_id, &[format!("{stamp}-no-such-task")])
        .await
        .ok()
        .map(|stream| (elsewhere_id, stream));
    let foreign = match context.others.first() {
        Some(other) => other
            .peer
            .subscribe(&format!("{stamp}-foreign"), &named)
            .await
            .ok()
            .map(|stream| (other.peer.identity().to_owned(), stream)),
        None => None,
    };
    Ok(Listens {
        own: (subscription, own),
        elsewhere,
        foreign,
    })
}

/// How the task ended (as far as the task timeout), read once the streams settled.
async fn ended_as(context: &Context<'_>, task_id: &str) -> Option<TaskStatus> {
    let peer = &context.opened.peer;
    let deadline_ms = context.clock.now_ms() + context.config.task_timeout.as_millis() as u64;
    let ended = peer
        .wait_terminal(task_id, context.clock, deadline_ms)
        .await;
    tokio::time::sleep(Duration::from_millis(SETTLE_MS)).await;
    peer.shown(&ended).and_then(|view: TaskView| view.status)
}

/// The GET streams of the first identity's session, of a second session of it, and of
/// the second identity's session (if the run has one).
async fn open_streams(context: &Context<'_>) -> Result<Streams, String> {
    let own = context
        .opened
        .peer
        .session_stream()
        .await
        .map_err(|why| format!("n/a: the session's stream could not be opened: {why}"))?;
    Ok(Streams {
        own,
        sibling: second_session_stream(context).await?,
        foreign: foreign_stream(context).await,
    })
}

/// The GET stream of a new session of the first identity, which declares nothing.
pub(super) async fn second_session_stream(context: &Context<'_>) -> Result<Listening, String> {
    let second = fresh_session(context, json!({})).await?;
    second
        .session_stream()
        .await
        .map_err(|why| format!("n/a: a second session's stream could not be opened: {why}"))
}

/// The GET stream of the second identity's session, with its name, if the run has one and
/// it opens.
pub(super) async fn foreign_stream(context: &Context<'_>) -> Option<(String, Listening)> {
    let other = context.others.first()?;
    let stream = other.peer.session_stream().await.ok()?;
    Some((other.peer.identity().to_owned(), stream))
}

fn names(message: &Value, text: &str) -> bool {
    message.to_string().contains(text)
}

/// No message on the other identity's stream names the task (`heard`: what reached the
/// owner's streams, for the detail).
fn judge_isolation(
    foreign: Option<&(String, Listening)>,
    heard: usize,
    task_id: &str,
    out: &mut Outcomes,
) {
    let Some((identity, foreign)) = foreign else {
        out.not_applicable(
            ISOLATION,
            Level::Must,
            "n/a: one identity (give a second --token to judge what another caller hears)",
        );
        return;
    };
    let leaked: Vec<Value> = foreign
        .messages()
        .into_iter()
        .filter(|message| names(message, task_id))
        .collect();
    let (verdict, detail) = match leaked.first() {
        Some(first) => (
            Verdict::Fail,
            format!(
                "identity {identity}'s stream was pushed {} message(s) naming another caller's task {task_id}, e.g. {}",
                leaked.len(),
                super::transport::compact(first, 300)
            ),
        ),
        None => (
            Verdict::Pass,
            format!(
                "identity {identity}'s stream heard nothing of another caller's task ({heard} message(s) reached the owner's sessions)"
            ),
        ),
    };
    out.add(ISOLATION, Level::Must, verdict, detail, &[]);
}

fn is_progress(message: &Value, token: &str) -> bool {
    message["method"] == "notifications/progress" && message["params"]["progressToken"] == token
}

fn judge_progress(streams: &Streams, token: &str, out: &mut Outcomes) {
    let own = streams.own.messages();
    let stray: Vec<Value> = streams
        .sibling
        .messages()
        .into_iter()
        .chain(
            streams
                .foreign
                .iter()
                .flat_map(|(_, stream)| stream.messages()),
        )
        .filter(|message| is_progress(message, token))
        .collect();
    let delivered = own
        .iter()
        .filter(|message| is_progress(message, token))
        .count();
    let (verdict, detail) = match (stray.first(), delivered) {
        (Some(first), _) => (
            Verdict::Fail,
            format!(
                "progress on a token one session sent reached another session {} time(s), e.g. {}",
                stray.len(),
                super::transport::compact(first, 300)
            ),
        ),
        (None, 0) => {
            let why = "n/a: the server pushed no progress on the token to the session that sent it";
            out.not_applicable(PROGRESS, Level::Must, why);
            return;
        }
        (None, delivered) => (
            Verdict::Pass,
            format!("{delivered} progress message(s) reached the sending session, and only it"),
        ),
    };
    out.add(PROGRESS, Level::Must, verdict, detail, &[]);
}

/// The statuses the `method` messages on `streams` said of the task.
fn statuses_said<'s>(
    streams: impl IntoIterator<Item = &'s Listening>,
    method: &str,
    task_id: &str,
) -> Vec<TaskStatus> {
    streams
        .into_iter()
        .flat_map(Listening::messages)
        .filter(|message| message["method"] == method && message["params"]["taskId"] == task_id)
        .filter_map(|message| serde_json::from_value(message["params"]["status"].clone()).ok())
        .collect()
}

fn judge_stored(said: &[TaskStatus], last: Option<TaskStatus>, out: &mut Outcomes) {
    let Some(last) = last.filter(|status| status.is_terminal()) else {
        let why = "n/a: the task did not end within the task timeout";
        out.not_applicable(STORED, Level::Must, why);
        return;
    };
    if said.is_empty() {
        let why = "n/a: the server pushed no status of the task";
        out.not_applicable(STORED, Level::Must, why);
        return;
    }
    let contradicted = said
        .iter()
        .find(|status| status.is_terminal() && **status != last);
    let (verdict, detail) = match contradicted {
        Some(status) => (
            Verdict::Fail,
            format!(
                "a pushed message said the task was {}, but it ended {}",
                status_name(Some(*status)),
                status_name(Some(last))
            ),
        ),
        None => (
            Verdict::Pass,
            format!(
                "{} pushed status(es), none contradicting the task's end ({})",
                said.len(),
                status_name(Some(last))
            ),
        ),
    };
    out.add(STORED, Level::Must, verdict, detail, &[]);
}

/// Each task message on the owner's listen names its subscription and the task it asked
/// about; the listen naming only a made-up id hears nothing of the task.
fn judge_listen(listens: &Listens, task_id: &str, out: &mut Outcomes) {
    let (subscription, own) = &listens.own;
    let told: Vec<Value> = own
        .messages()
        .into_iter()
        .filter(|message| message["method"] == "notifications/tasks")
        .collect();
    let astray = told.iter().find(|message| {
        message["params"]["_meta"][SUBSCRIPTION_ID] != subscription.as_str()
            || message["params"]["taskId"] != task_id
    });
    let strayed = listens.elsewhere.as_ref().and_then(|(_, elsewhere)| {
        elsewhere
            .messages()
            .into_iter()
            .find(|message| names(message, task_id))
    });
    let (verdict, detail) = match (astray, strayed) {
        (Some(message), _) => (
            Verdict::Fail,
            format!(
                "a message on listen {subscription:?} about task {task_id} named another subscription or task: {}",
                super::transport::compact(message, 300)
            ),
        ),
        (None, Some(message)) => (
            Verdict::Fail,
            format!(
                "a listen naming only a made-up task id was told of task {task_id}: {}",
                super::transport::compact(&message, 300)
            ),
        ),
        (None, None) if told.is_empty() => {
            let why = "n/a: the server pushed no notifications/tasks on the listen";
            out.not_applicable(LISTEN, Level::Must, why);
            return;
        }
        (None, None) => (
            Verdict::Pass,
            format!(
                "{} message(s) on the listen, each naming it and its task; a listen of another id heard nothing of it",
                told.len()
            ),
        ),
    };
    out.add(LISTEN, Level::Must, verdict, detail, &[]);
}
