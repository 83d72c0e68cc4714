//! Phase 3: the workload, Jepsen-style. Clients of every identity issue seeded random
//! operations (create, get, result, cancel, list, `tasks/update` in the 2026-07-28 era, a
//! read of another identity's task) for the budget, each recorded with its invocation
//! time, completion time and full answer; then a bounded liveness phase polls every task
//! until it ends. [`super::oracle`] judges the history. With `kill`, the probe SIGKILLs
//! and restarts the server (one it owns) at seeded times while the clients keep polling the
//! same task ids.
//!
//! The seed fixes each client's choices (operation, task, pause); the server's timing is
//! real, so a rerun replays the schedule, not the interleaving.

use super::peer::{Peer, code};
use super::transport::{Clock, Exchange, Owned};
use crate::contract::{Era, TaskStatus};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Tasks one client creates at most (a bound on the history, whatever the budget).
pub const TASKS_PER_CLIENT_MAX: usize = 64;
/// Operations one client issues at most.
pub const OPS_PER_CLIENT_MAX: usize = 5_000;
/// The longest pause between a client's operations, in ms.
const PAUSE_MS_MAX: u64 = 40;

/// The workload's settings.
#[derive(Clone, Debug)]
pub struct Workload {
    /// How long clients issue operations.
    pub budget: Duration,
    /// The seed of every client's choices.
    pub seed: u64,
    /// Clients per identity.
    pub clients_per_identity: usize,
    /// SIGKILL and restart the server at seeded times (it must be one the probe owns).
    pub kill: bool,
    /// The server claims its tasks survive a restart: a task lost at a kill is a finding.
    pub durable: bool,
}

/// Kills at most per era, whatever the budget.
pub const KILLS_MAX: u64 = 32;

/// One kill: when the probe sent SIGKILL, and when the restarted server was ready again.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Kill {
    /// SIGKILL sent, ms since the probe started.
    pub killed_ms: u64,
    /// The restarted server ready (and re-initialized), ms.
    pub ready_ms: u64,
}

/// What one operation did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OpKind {
    /// `tools/call` as a task.
    Create,
    /// `tasks/get` of the client's own task.
    Get,
    /// `tasks/result` (2025-11-25).
    Result,
    /// `tasks/cancel`.
    Cancel,
    /// `tasks/list` (2025-11-25, where declared).
    List,
    /// `tasks/get` of another identity's task.
    ForeignGet,
    /// A read in the liveness phase.
    Settle,
    /// `tasks/update` of the client's own task (2026-07-28): the answers to the questions
    /// it last saw the task ask, or a key the task never asked (which must be ignored).
    Update,
}

/// One recorded operation.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Op {
    /// The client (index over all identities).
    pub client: usize,
    /// Its identity.
    pub identity: String,
    /// What it did.
    pub kind: OpKind,
    /// The task it named (a create: the one answered).
    pub task_id: Option<String>,
    /// The exchange: request, answer, times.
    pub exchange: Exchange,
}

/// A seeded generator (SplitMix64): the schedule's only source of choices.
#[derive(Clone, Debug)]
pub struct Draw(u64);

impl Draw {
    /// A generator for `seed` and stream `stream` (a client).
    pub fn new(seed: u64, stream: u64) -> Draw {
        let mut draw = Draw(seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        draw.next_u64();
        draw
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `bound` (`bound` > 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        assert!(bound > 0, "an empty range");
        self.next_u64() % bound
    }
}

/// The history being recorded, shared by the clients.
#[derive(Default)]
pub struct History {
    ops: Mutex<Vec<Op>>,
    /// Every task created, with its owner's identity.
    owned: Mutex<Vec<(String, String)>>,
    kills: Mutex<Vec<Kill>>,
    /// Why a restart failed, if one did (the run then stops killing).
    pub restart_failure: Mutex<Option<String>>,
}

impl History {
    fn record(&self, op: Op) {
        lock(&self.ops).push(op);
    }

    /// Everything recorded, in completion order.
    pub fn ops(&self) -> Vec<Op> {
        lock(&self.ops).clone()
    }

    /// The kills, in order.
    pub fn kills(&self) -> Vec<Kill> {
        lock(&self.kills).clone()
    }

    /// `(task id, owner identity)` of every task created.
    pub fn owned(&self) -> Vec<(String, String)> {
        lock(&self.owned).clone()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One client's place in the run.
pub struct ClientSpec {
    /// Its peer (its identity's connection, opened in the era).
    pub peer: Arc<Peer>,
    /// The same, waiting as long as a task may take: `tasks/result` blocks until the end.
    pub waiting_peer: Arc<Peer>,
    /// The tool and arguments it creates tasks with.
    pub tool: (String, Value),
    /// A tool whose tasks ask their requestor for input (2026-07-28: a quarter of the
    /// creates use it, and `tasks/update` answers its questions).
    pub input_tool: Option<(String, Value)>,
    /// `tasks/list` declared.
    pub list: bool,
    /// `tasks/cancel` served.
    pub cancel: bool,
}

/// Runs the clients for the budget, then the liveness phase (`settle`: how long every task
/// may take to end), reporting to `progress` as it goes. Returns the history.
pub async fn run(
    clients: Vec<ClientSpec>,
    workload: &Workload,
    owned: Option<Owned>,
    clock: Clock,
    settle: Duration,
    progress: &super::progress::Progress,
) -> Arc<History> {
    let history = Arc::new(History::default());
    let start_ms = clock.now_ms();
    let deadline_ms = start_ms + workload.budget.as_millis() as u64;
    let mut handles = Vec::new();
    let clients: Vec<Arc<ClientSpec>> = clients.into_iter().map(Arc::new).collect();
    // The display ticks apart from the clients: a bar on a terminal, lines elsewhere.
    let tick = |history: &History| {
        let now_ms = clock.now_ms();
        progress.workload(
            now_ms as f64 / 1000.0,
            now_ms.saturating_sub(start_ms),
            deadline_ms - start_ms,
            &format!(
                "{} operations, {} tasks, {} kill(s)",
                lock(&history.ops).len(),
                lock(&history.owned).len(),
                lock(&history.kills).len()
            ),
        );
    };
    if let (true, Some(owned)) = (workload.kill, owned) {
        // One peer per identity re-opens the era after each restart.
        let mut reopen: Vec<Arc<Peer>> = Vec::new();
        for client in &clients {
            if !reopen
                .iter()
                .any(|peer| peer.identity() == client.peer.identity())
            {
                reopen.push(client.peer.clone());
            }
        }
        let history = history.clone();
        let draw = Draw::new(workload.seed, u64::MAX);
        handles.push(tokio::spawn(async move {
            killer(owned, reopen, draw, &history, clock, start_ms, deadline_ms).await;
        }));
    }
    for (index, client) in clients.iter().enumerate() {
        let client = client.clone();
        let history = history.clone();
        let draw = Draw::new(workload.seed, index as u64);
        handles.push(tokio::spawn(async move {
            client_loop(index, &client, draw, &history, clock, deadline_ms).await;
        }));
    }
    let every = progress.every();
    let is_bar = progress.is_bar();
    let mut all = futures_util::future::join_all(handles);
    if is_bar {
        tick(&history);
    }
    loop {
        tokio::select! {
            _ = &mut all => break,
            _ = tokio::time::sleep(every) => {
                // Lines: one per 10 s while the budget runs; the bar: always.
                if is_bar || clock.now_ms() <= deadline_ms {
                    tick(&history);
                }
            }
        }
    }
    let draw = Draw::new(workload.seed, u64::MAX - 1);
    settle_all(&clients, &history, draw, clock, settle).await;
    history
}

/// SIGKILLs and restarts the server at seeded times, one kill per ~4 s of budget (at least
/// one, at most [`KILLS_MAX`]), each at a drawn point of its slot; after each, every
/// identity opens the era again (a new process or a new session).
async fn killer(
    owned: Owned,
    reopen: Vec<Arc<Peer>>,
    mut draw: Draw,
    history: &History,
    clock: Clock,
    start_ms: u64,
    deadline_ms: u64,
) {
    let budget_ms = deadline_ms.saturating_sub(start_ms).max(1);
    let kills = (budget_ms / 4_000).clamp(1, KILLS_MAX);
    let slot_ms = budget_ms / kills;
    for kill in 0..kills {
        let at_ms = start_ms + kill * slot_ms + slot_ms / 4 + draw.below(slot_ms / 2 + 1);
        let now_ms = clock.now_ms();
        if at_ms >= deadline_ms {
            break;
        }
        tokio::time::sleep(Duration::from_millis(at_ms.saturating_sub(now_ms))).await;
        let killed_ms = clock.now_ms();
        if let Err(failure) = owned.restart().await {
            *lock(&history.restart_failure) = Some(failure.0);
            return;
        }
        for peer in &reopen {
            peer.connection().reset();
            let _ = peer.open().await;
        }
        lock(&history.kills).push(Kill {
            killed_ms,
            ready_ms: clock.now_ms(),
        });
    }
}

async fn client_loop(
    index: usize,
    client: &ClientSpec,
    mut draw: Draw,
    history: &History,
    clock: Clock,
    deadline_ms: u64,
) {
    let peer = &client.peer;
    let identity = peer.identity().to_owned();
    let mut mine: Vec<String> = Vec::new();
    // The questions each of its tasks last showed it (2026-07-28 `inputRequests`).
    let mut asked: BTreeMap<String, Value> = BTreeMap::new();
    for _ in 0..OPS_PER_CLIENT_MAX {
        if clock.now_ms() >= deadline_ms {
            break;
        }
        let roll = draw.below(100);
        let pick = |draw: &mut Draw, tasks: &[String]| -> Option<String> {
            (!tasks.is_empty()).then(|| tasks[draw.below(tasks.len() as u64) as usize].clone())
        };
        let (kind, task_id, exchange) =
            if mine.is_empty() || (roll < 20 && mine.len() < TASKS_PER_CLIENT_MAX) {
                let tool = match &client.input_tool {
                    Some(input_tool) if peer.era == Era::Extension2026 && draw.below(4) == 0 => {
                        input_tool
                    }
                    _ => &client.tool,
                };
                let exchange = peer.create(&tool.0, &tool.1, None).await;
                let created = peer.created(&exchange).map(|view| view.task_id);
                if let Some(task_id) = &created {
                    mine.push(task_id.clone());
                    lock(&history.owned).push((task_id.clone(), identity.clone()));
                }
                (OpKind::Create, created, exchange)
            } else if roll < 60 {
                let task = pick(&mut draw, &mine);
                let exchange = peer.get(task.as_deref().unwrap_or_default()).await;
                note_questions(peer, &exchange, task.as_deref(), &mut asked);
                (OpKind::Get, task, exchange)
            } else if roll < 70 && peer.era == Era::Extension2026 {
                let task = pick(&mut draw, &mine).unwrap_or_default();
                let responses = match asked.remove(&task) {
                    Some(questions) => answers(&questions, &mut draw),
                    None => {
                        let mut unasked = serde_json::Map::new();
                        unasked.insert(UNASKED_KEY.to_owned(), json!({ "action": "decline" }));
                        Value::Object(unasked)
                    }
                };
                let exchange = peer.update(&task, responses).await;
                (OpKind::Update, Some(task), exchange)
            } else if roll < 70 && peer.era == Era::Core2025 {
                let task = pick(&mut draw, &mine);
                let exchange = client
                    .waiting_peer
                    .result(task.as_deref().unwrap_or_default())
                    .await;
                (OpKind::Result, task, exchange)
            } else if roll < 80 && client.cancel {
                let task = pick(&mut draw, &mine);
                let exchange = peer.cancel(task.as_deref().unwrap_or_default()).await;
                (OpKind::Cancel, task, exchange)
            } else if roll < 90 && client.list {
                (OpKind::List, None, peer.list(None).await)
            } else {
                let foreign: Vec<String> = lock(&history.owned)
                    .iter()
                    .filter(|(_, owner)| *owner != identity)
                    .map(|(task, _)| task.clone())
                    .collect();
                match pick(&mut draw, &foreign) {
                    Some(task) => {
                        let exchange = peer.get(&task).await;
                        (OpKind::ForeignGet, Some(task), exchange)
                    }
                    None => {
                        let task = pick(&mut draw, &mine);
                        let exchange = peer.get(task.as_deref().unwrap_or_default()).await;
                        note_questions(peer, &exchange, task.as_deref(), &mut asked);
                        (OpKind::Get, task, exchange)
                    }
                }
            };
        history.record(Op {
            client: index,
            identity: identity.clone(),
            kind,
            task_id,
            exchange,
        });
        tokio::time::sleep(Duration::from_millis(draw.below(PAUSE_MS_MAX + 1))).await;
    }
}

/// The key of a `tasks/update` answer to a question never asked: the server must ignore it.
pub const UNASKED_KEY: &str = "tasklatch-probe-never-asked";

/// Keeps the questions a 2026-07-28 `tasks/get` of `task` shows (`input_required` with
/// `inputRequests`); any other answer clears them.
fn note_questions(
    peer: &Peer,
    exchange: &Exchange,
    task: Option<&str>,
    asked: &mut BTreeMap<String, Value>,
) {
    let Some(task) = task else { return };
    match questions_in(peer, exchange) {
        Some(questions) => asked.insert(task.to_owned(), questions.clone()),
        None => asked.remove(task),
    };
}

/// The questions a 2026-07-28 `tasks/get` answer shows (`input_required` with a non-empty
/// `inputRequests`).
fn questions_in<'a>(peer: &Peer, exchange: &'a Exchange) -> Option<&'a Value> {
    exchange
        .result()
        .filter(|_| peer.era == Era::Extension2026)
        .filter(|result| result["status"] == "input_required")
        .and_then(|result| result.get("inputRequests"))
        .filter(|questions| questions.as_object().is_some_and(|map| !map.is_empty()))
}

/// Answers to every question in `questions` (2026-07-28 `inputRequests`): an elicitation
/// is accepted (its form filled from the schema, each boolean drawn) three times in four,
/// else declined; any other kind of request is declined.
fn answers(questions: &Value, draw: &mut Draw) -> Value {
    let mut responses = serde_json::Map::new();
    for (key, question) in questions.as_object().into_iter().flatten() {
        let schema = &question["params"]["requestedSchema"];
        let response = if question["method"] == "elicitation/create" && draw.below(4) != 0 {
            let mut content = serde_json::Map::new();
            for (name, property) in schema["properties"].as_object().into_iter().flatten() {
                let value = if property["type"] == "boolean" {
                    json!(draw.below(2) == 0)
                } else {
                    super::peer::sample_arguments(&json!({
                        "properties": { name: property }, "required": [name],
                    }))[name]
                        .clone()
                };
                content.insert(name.clone(), value);
            }
            json!({ "action": "accept", "content": content })
        } else {
            json!({ "action": "decline" })
        };
        responses.insert(key.clone(), response);
    }
    Value::Object(responses)
}

/// The liveness phase: every task is read by its owner until it is terminal or gone, for
/// at most `settle`; a 2026-07-28 task waiting for input is answered (each question
/// accepted or declined), since no client would otherwise ever end it.
async fn settle_all(
    clients: &[Arc<ClientSpec>],
    history: &History,
    mut draw: Draw,
    clock: Clock,
    settle: Duration,
) {
    let deadline_ms = clock.now_ms() + settle.as_millis() as u64;
    let owned = history.owned();
    let mut open: Vec<(String, usize)> = owned
        .iter()
        .filter_map(|(task, owner)| {
            clients
                .iter()
                .position(|client| client.peer.identity() == owner)
                .map(|client| (task.clone(), client))
        })
        .collect();
    while !open.is_empty() {
        let mut still = Vec::new();
        for (task, client) in open {
            let peer = &clients[client].peer;
            let exchange = peer.get(&task).await;
            let ended = exchange.error_code() == Some(code::INVALID_PARAMS)
                || peer
                    .shown(&exchange)
                    .and_then(|shown| shown.status)
                    .is_some_and(TaskStatus::is_terminal);
            let questions = questions_in(peer, &exchange).cloned();
            history.record(Op {
                client,
                identity: peer.identity().to_owned(),
                kind: OpKind::Settle,
                task_id: Some(task.clone()),
                exchange,
            });
            if let Some(questions) = questions {
                let exchange = peer.update(&task, answers(&questions, &mut draw)).await;
                history.record(Op {
                    client,
                    identity: peer.identity().to_owned(),
                    kind: OpKind::Update,
                    task_id: Some(task.clone()),
                    exchange,
                });
            }
            if !ended {
                still.push((task, client));
            }
        }
        open = still;
        if clock.now_ms() >= deadline_ms {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_a_function_of_seed_and_stream() {
        let take = |seed, stream| {
            let mut draw = Draw::new(seed, stream);
            (0..4).map(|_| draw.below(1000)).collect::<Vec<_>>()
        };
        assert_eq!(take(7, 1), take(7, 1));
        assert_ne!(take(7, 1), take(7, 2));
        assert_ne!(take(7, 1), take(8, 1));
    }
}
