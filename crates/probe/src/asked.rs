//! Questions asked where they can be answered (2025-11-25 over Streamable HTTP, with
//! `--input-tool`): the probe opens a session of the first identity that declares
//! `elicitation`, runs the input tool there until its task is `input_required`, and
//! waits on its `tasks/result` as a stream, answering each question that arrives on it.
//! Meanwhile it reads the GET streams of a second session of that identity (which declared
//! nothing) and of the second identity's session: a request sent there asks a client
//! that never said it could answer (the spec: a server sends no request for a capability
//! the client did not declare), or another caller.

use super::outcomes::Outcomes;
use super::peer::{Peer, sample_arguments};
use super::pushed::{foreign_stream, second_session_stream};
use super::shapes::{Context, fresh_session, named_tool};
use super::sse::Listening;
use super::{Level, Verdict};
use crate::contract::{Era, TaskStatus};
use serde_json::{Value, json};
use std::time::Duration;

const ASKED: &str = "hostile.pushed.asks-only-who-can-answer";
/// How often the probe looks at the streams while it waits.
const LOOK_MS: u64 = 50;
/// Questions the probe answers on one call, at most.
const ANSWERS_MAX: usize = 16;

/// The sessions a run opens: the one that may be asked, and the streams that may not.
struct Sessions {
    asker: Peer,
    silent: Listening,
    foreign: Option<Listening>,
}

pub(super) async fn asked(context: &Context<'_>, out: &mut Outcomes) {
    let peer = &context.opened.peer;
    // 2026-07-28 has no side requests: its questions are read in tasks/get.
    if peer.era != Era::Core2025 {
        return;
    }
    match run(context).await {
        Ok((verdict, detail)) => out.add(ASKED, Level::Must, verdict, detail, &[]),
        Err(why) => out.not_applicable(ASKED, Level::Must, &why),
    }
}

async fn run(context: &Context<'_>) -> Result<(Verdict, String), String> {
    let config = context.config;
    let name = config
        .input_tool
        .as_deref()
        .ok_or("n/a: no --input-tool (a tool that asks its requestor a question)")?;
    let (tool, arguments) = named_tool(context, name, config.input_args.as_ref())
        .ok_or_else(|| format!("n/a (no such tool): `--input-tool {name}` is not in tools/list"))?;
    let sessions = open_sessions(context).await?;
    let asker = &sessions.asker;
    let created = asker.create(&tool, &arguments, None).await;
    let view = asker
        .created(&created)
        .ok_or_else(|| format!("n/a: no task was created: {}", created.summary()))?;
    wait_for_question(context, asker, &view.task_id).await?;
    let (id, call) = asker
        .result_stream(&view.task_id)
        .await
        .map_err(|why| format!("n/a: tasks/result could not be read as a stream: {why}"))?;
    let answered = answer_until_done(context, asker, &id, &call).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stray: Vec<Value> = sessions
        .silent
        .messages()
        .into_iter()
        .chain(sessions.foreign.iter().flat_map(Listening::messages))
        .filter(is_request)
        .collect();
    if let Some(first) = stray.first() {
        return Ok((
            Verdict::Fail,
            format!(
                "{} request(s) reached a session that declared no capability, or another caller's, e.g. {}",
                stray.len(),
                super::transport::compact(first, 300)
            ),
        ));
    }
    if answered == 0 {
        return Err("n/a: no question arrived on the tasks/result stream".to_owned());
    }
    Ok((
        Verdict::Pass,
        format!(
            "{answered} question(s) on the tasks/result stream of the session that declared elicitation, none elsewhere"
        ),
    ))
}

/// A session of the first identity declaring `elicitation`, the GET stream of a second
/// that declares nothing, and the second identity's GET stream (if the run has one).
async fn open_sessions(context: &Context<'_>) -> Result<Sessions, String> {
    Ok(Sessions {
        asker: fresh_session(context, json!({ "elicitation": {} })).await?,
        silent: second_session_stream(context).await?,
        foreign: foreign_stream(context).await.map(|(_, stream)| stream),
    })
}

/// Polls the task until it is `input_required`; n/a if it ends (or the task timeout
/// passes) first.
async fn wait_for_question(
    context: &Context<'_>,
    asker: &Peer,
    task_id: &str,
) -> Result<(), String> {
    let deadline_ms = context.clock.now_ms() + context.config.task_timeout.as_millis() as u64;
    while context.clock.now_ms() < deadline_ms {
        let shown = asker.shown(&asker.get(task_id).await);
        match shown.and_then(|view| view.status) {
            Some(TaskStatus::InputRequired) => return Ok(()),
            Some(status) if status.is_terminal() => {
                return Err(format!(
                    "n/a: the --input-tool task ended {} without asking",
                    super::shapes::status_name(Some(status))
                ));
            }
            _ => tokio::time::sleep(Duration::from_millis(LOOK_MS * 2)).await,
        }
    }
    Err("n/a: the --input-tool task never became input_required".to_owned())
}

/// Answers each request on the call's stream (accepting, with content sampled from its
/// `requestedSchema`) until the call's answer arrives or the task timeout passes; returns
/// how many it answered.
async fn answer_until_done(
    context: &Context<'_>,
    asker: &Peer,
    id: &Value,
    call: &Listening,
) -> usize {
    let deadline_ms = context.clock.now_ms() + context.config.task_timeout.as_millis() as u64;
    let mut answered = 0;
    while context.clock.now_ms() < deadline_ms {
        let messages = call.messages();
        for question in messages
            .iter()
            .filter(|message| is_request(message))
            .skip(answered)
        {
            if answered == ANSWERS_MAX {
                break;
            }
            let content = sample_arguments(&question["params"]["requestedSchema"]);
            let answer = json!({ "action": "accept", "content": content });
            asker.respond(&question["id"], answer).await;
            answered += 1;
        }
        if messages
            .iter()
            .any(|message| message.get("method").is_none() && message["id"] == *id)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(LOOK_MS)).await;
    }
    answered
}

/// A request of the server's (a method and an id), not a notification or a response.
fn is_request(message: &Value) -> bool {
    message.get("method").is_some() && message.get("id").is_some_and(|id| !id.is_null())
}
