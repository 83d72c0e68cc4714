//! What the server pushes, judged as the simulation judges it, from outside: over
//! Streamable HTTP in 2025-11-25, the probe opens the GET stream of three sessions — the
//! first identity's, a second session of that identity, and another identity's — and runs
//! one task of the first identity with a progress token to its end. Then: no message on
//! the other identity's stream names the task (tenant isolation holds for every byte the
//! server sends, not only for answers); progress on the token reaches only the session
//! whose call sent it; and a status notification never says a terminal status the task
//! did not end in (the stored record wins).

use super::peer::TaskView;
use super::shapes::{Context, Outcomes, chosen_tool, status_name};
use super::transport::{Connection, Listening};
use super::{Level, Verdict};
use crate::contract::{Era, TaskStatus};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const ISOLATION: &str = "hostile.pushed.tenant-isolation";
const PROGRESS: &str = "hostile.pushed.progress-to-its-session";
const STORED: &str = "hostile.pushed.says-what-was-stored";
const CHECKS: [(&str, Level); 3] = [
    (ISOLATION, Level::Must),
    (PROGRESS, Level::Must),
    (STORED, Level::Must),
];
/// How long the streams are read after the task ended, for late notifications.
const SETTLE_MS: u64 = 300;

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
        return;
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
    let deadline_ms = context.clock.now_ms() + context.config.task_timeout.as_millis() as u64;
    let ended = peer
        .wait_terminal(&view.task_id, context.clock, deadline_ms)
        .await;
    let last = peer.shown(&ended).and_then(|view: TaskView| view.status);
    tokio::time::sleep(Duration::from_millis(SETTLE_MS)).await;
    judge_isolation(&streams, &view.task_id, out);
    judge_progress(&streams, &token, out);
    judge_stored(&streams, &view.task_id, last, out);
}

/// The GET streams of the first identity's session, of a second session of it, and of
/// the second identity's session (if the run has one).
async fn open_streams(context: &Context<'_>) -> Result<Streams, String> {
    let own = listen(context.opened)
        .await
        .map_err(|why| format!("n/a: the session's stream could not be opened: {why}"))?;
    let fresh = context
        .opened
        .peer
        .reconnected()
        .ok_or("n/a: over stdio one connection is one session, with no second")?;
    let second = super::open(Era::Core2025, Arc::new(fresh), context.config)
        .await
        .map_err(|why| format!("n/a: a second session could not be opened: {why}"))?;
    let sibling = listen(&second)
        .await
        .map_err(|why| format!("n/a: a second session's stream could not be opened: {why}"))?;
    let foreign = match context.others.first() {
        Some(other) => listen(other)
            .await
            .ok()
            .map(|stream| (other.peer.identity().to_owned(), stream)),
        None => None,
    };
    Ok(Streams {
        own,
        sibling,
        foreign,
    })
}

/// The GET stream of `opened`'s session.
async fn listen(opened: &super::Opened) -> Result<Listening, String> {
    let headers = [("mcp-protocol-version", "2025-11-25".to_owned())];
    match &**opened.peer.connection() {
        Connection::Http(http) => http.listen(&headers).await,
        Connection::Stdio(_) => {
            Err("over stdio one connection is one session, with no second".to_owned())
        }
    }
}

fn names(message: &Value, text: &str) -> bool {
    message.to_string().contains(text)
}

fn judge_isolation(streams: &Streams, task_id: &str, out: &mut Outcomes) {
    let Some((identity, foreign)) = &streams.foreign else {
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
    let heard = streams.own.messages().len() + streams.sibling.messages().len();
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

fn judge_stored(streams: &Streams, task_id: &str, last: Option<TaskStatus>, out: &mut Outcomes) {
    let Some(last) = last.filter(|status| status.is_terminal()) else {
        let why = "n/a: the task did not end within the task timeout";
        out.not_applicable(STORED, Level::Must, why);
        return;
    };
    let said: Vec<TaskStatus> = streams
        .own
        .messages()
        .into_iter()
        .chain(streams.sibling.messages())
        .filter(|message| {
            message["method"] == "notifications/tasks/status"
                && message["params"]["taskId"] == task_id
        })
        .filter_map(|message| serde_json::from_value(message["params"]["status"].clone()).ok())
        .collect();
    if said.is_empty() {
        let why = "n/a: the server pushed no status notification of the task";
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
                "a notification said the task was {}, but it ended {}",
                status_name(Some(*status)),
                status_name(Some(last))
            ),
        ),
        None => (
            Verdict::Pass,
            format!(
                "{} status notification(s), none contradicting the task's end ({})",
                said.len(),
                status_name(Some(last))
            ),
        ),
    };
    out.add(STORED, Level::Must, verdict, detail, &[]);
}
