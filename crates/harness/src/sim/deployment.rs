//! The deployment `tasklatch serve` is, simulated (`"deployment": {"queue": "in-process"}`):
//! each server process is one node running the MCP server, its in-process queue, a
//! dispatcher, the workers and a sweeper, wired as `mcp::Assembly` wires them (admissions
//! ring the dispatcher, status changes wake blocked calls). A kill takes all of them at
//! once and only the store survives: what the queue held is gone, and only the outbox
//! brings it back. Clients reach a process by running their request on its node, so a
//! request in flight when the process dies is answered by nothing, as a dropped
//! connection is. With several processes and a change feed (PostgreSQL's
//! `LISTEN/NOTIFY`), each process hears what the others wrote.

use super::SimEnv;
use super::client::{Reply, rpc};
use super::faults::FaultyQueue;
use super::history::History;
use super::tools::SimNotify;
use super::world::Shared;
use crate::check::Event;
use crate::contract::TaskRecord;
use crate::mcp::server::Outbound;
use crate::mcp::wire::Incoming;
use crate::mcp::{Server, Session};
use crate::runtime::{MemoryQueue, Notify};
use crate::store::{Change, ChangeFeed, ChangeSink, TaskStore};
use madsim::runtime::{Handle, NodeHandle};
use madsim::task::NodeId;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A message on its way to a process.
enum Request {
    /// A request, with where its answer goes and the stream its call may carry requests to
    /// the client on (a 2025-11-25 `tasks/result`'s questions).
    Call {
        session: Session,
        method: String,
        params: serde_json::Value,
        stream: Option<Outbound>,
        answer: tokio::sync::oneshot::Sender<Reply>,
    },
    /// A client's response to a request the server sent it.
    Response {
        session: Session,
        id: serde_json::Value,
        outcome: Result<serde_json::Value, serde_json::Value>,
    },
}

/// One server process as the clients find it: the inbox of its current incarnation (its
/// listening socket), replaced when it restarts.
#[derive(Default)]
pub(super) struct ProcessSlot {
    inbox: Mutex<Option<tokio::sync::mpsc::UnboundedSender<Request>>>,
    /// The current incarnation's server, for opening streams: held weakly, so it dies
    /// with its process and closes every stream it held.
    server: Mutex<std::sync::Weak<Server>>,
}

impl ProcessSlot {
    /// The current incarnation's server; `None` while the process is down.
    pub(super) fn server(&self) -> Option<Arc<Server>> {
        self.server.lock().expect("process server").upgrade()
    }

    /// `method` sent to this process's server, handled on its node: [`Reply::Lost`] when
    /// the process is down or dies before it answers (the request may or may not have
    /// happened).
    pub(super) async fn call(
        &self,
        session: &Session,
        method: &str,
        params: serde_json::Value,
        stream: Option<Outbound>,
    ) -> Reply {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let request = Request::Call {
            session: session.clone(),
            method: method.to_owned(),
            params,
            stream,
            answer,
        };
        if !self.send(request) {
            return Reply::Lost;
        }
        answered.await.unwrap_or(Reply::Lost)
    }

    /// A client's response to the server's request `id`, sent on `session` (lost with
    /// nothing said if the process is down: the connection it would go on is gone).
    pub(super) fn respond(
        &self,
        session: &Session,
        id: serde_json::Value,
        outcome: Result<serde_json::Value, serde_json::Value>,
    ) {
        let response = Request::Response {
            session: session.clone(),
            id,
            outcome,
        };
        self.send(response);
    }

    fn send(&self, request: Request) -> bool {
        let inbox = self.inbox.lock().expect("process inbox").clone();
        inbox.is_some_and(|inbox| inbox.send(request).is_ok())
    }
}

/// The processes' change feed: each live process's listener, by its node.
#[derive(Default)]
pub(super) struct Feed {
    listeners: Mutex<Vec<(NodeId, tokio::sync::mpsc::UnboundedSender<Change>)>>,
}

impl Feed {
    /// Tells every other live process that `task_id` changed (a listener whose process
    /// died is dropped). Only a process's writes are announced: a client node's direct
    /// write (a 2025-11-25 answer to a question) is not a process's.
    pub(super) fn announce(&self, from: NodeId, task_id: &str, history: &History) {
        let mut listeners = self.listeners.lock().expect("feed listeners");
        if !listeners.iter().any(|(node, _)| *node == from) {
            return;
        }
        listeners.retain(|(node, listener)| {
            *node == from || listener.send(Change::Task(task_id.to_owned())).is_ok()
        });
        if listeners.iter().any(|(node, _)| *node != from) {
            history.mark("change-fed");
        }
    }

    /// Listens for `node`: a task of that node (the caller's) hands each change to `sink`,
    /// and dies with its process.
    pub(super) fn listen(&self, node: NodeId, sink: ChangeSink) -> ChangeFeed {
        let (listener, mut changes) = tokio::sync::mpsc::unbounded_channel();
        self.listeners
            .lock()
            .expect("feed listeners")
            .push((node, listener));
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        drop(madsim::task::spawn(async move {
            while let Some(change) = changes.recv().await {
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                sink(change);
            }
        }));
        ChangeFeed::new(stop)
    }
}

/// The runtime's status changes reach the process's server (waits, notifications) and
/// the history (what the oracle's I10 reads).
struct Told {
    server: Arc<Server>,
    recorded: SimNotify,
}

impl Notify for Told {
    fn status_changed(&self, record: &TaskRecord) {
        self.recorded.status_changed(record);
        self.server.status_changed(record);
    }
}

/// Starts server process `index`: a node whose every incarnation builds a fresh server,
/// queue and runtime on the world's store, and runs them until it is killed.
pub(super) fn process_node(handle: &Handle, shared: &Arc<Shared>, index: usize) -> NodeHandle {
    let name = format!("process-{index}");
    let node_id: Arc<Mutex<Option<NodeId>>> = Arc::default();
    let (init_shared, init_node_id) = (shared.clone(), node_id.clone());
    let node = handle
        .create_node()
        .name(name.clone())
        .init(move || {
            let shared = init_shared.clone();
            let node_id = init_node_id.clone();
            async move { run_process(shared, index, node_id).await }
        })
        .build();
    *node_id.lock().expect("node slot") = Some(node.id());
    shared.history.name(node.id(), &name);
    node
}

/// One incarnation of a server process, on its node.
async fn run_process(shared: Arc<Shared>, index: usize, node_id: Arc<Mutex<Option<NodeId>>>) {
    let store: Arc<dyn TaskStore> = shared.store.clone();
    let server = Arc::new(shared.server_on(store.clone()));
    let admitted = Arc::new(tokio::sync::Notify::new());
    server.ring_on_admission(admitted.clone());
    let queue = Arc::new(FaultyQueue {
        inner: MemoryQueue::default(),
        history: shared.history.clone(),
        knobs: shared.knobs.clone(),
        faults_on: shared.faults_on.clone(),
    });
    let told = Arc::new(Told {
        server: server.clone(),
        recorded: SimNotify {
            history: shared.history.clone(),
        },
    });
    let runtime = Arc::new(
        shared
            .runtime_with(node_id, store, queue, told)
            .with_bells(admitted),
    );
    // Held for the incarnation's life: dropped (the feed stopped) when the process dies.
    let _feed = server
        .follow_store_changes()
        .expect("the simulated feed starts");
    let (inbox, mut requests) = tokio::sync::mpsc::unbounded_channel();
    *shared.processes[index].inbox.lock().expect("process inbox") = Some(inbox);
    *shared.processes[index]
        .server
        .lock()
        .expect("process server") = Arc::downgrade(&server);
    shared.history.push(Event::Fault {
        what: format!("process-{index} serving"),
        at_ms: crate::runtime::Env::now_ms(&SimEnv),
    });
    runtime.start(shared.scenario.workers);
    // Each request handled by a task of this node, as a connection's: all die with it.
    while let Some(request) = requests.recv().await {
        let server = server.clone();
        drop(madsim::task::spawn(async move {
            match request {
                Request::Call {
                    session,
                    method,
                    params,
                    stream,
                    mut answer,
                } => {
                    // A client that stopped waiting (its connection closed) ends the call,
                    // as a transport does when its stream's client goes away.
                    let reply = {
                        let call = rpc(&server, &session, &method, params, stream.as_ref());
                        tokio::select! {
                            biased;
                            reply = call => Some(reply),
                            () = answer.closed() => None,
                        }
                    };
                    if let Some(reply) = reply {
                        let _ = answer.send(reply);
                    }
                }
                Request::Response {
                    session,
                    id,
                    outcome,
                } => {
                    let response = Incoming::Response { id, outcome };
                    let _ = server.handle(&session, response).await;
                }
            }
        }));
    }
}
