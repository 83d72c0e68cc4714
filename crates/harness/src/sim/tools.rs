//! The simulated world's tools and notifications: the `export` tool with its effect sink,
//! the catalog the MCP server offers, status notifications into the history.

use super::SimEnv;
use super::history::History;
use super::scenario::Breadth;
use crate::check::Event;
use crate::contract::{TaskOutcome, TaskRecord, TaskSupport};
use crate::mcp::tools::{Catalog, ToolSpec};
use crate::mcp::wire::{self, RpcError};
use crate::runtime::{BoxFuture, Effects, Env, InputAsk, Invocation, Notify, ToolStep, Tools};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The simulated world's effects: what export runs prepared and what settles published.
#[derive(Debug, Default)]
pub(super) struct Sink {
    /// Prepared, not yet published or discarded: task id → effect id.
    pub(super) prepared: BTreeMap<String, String>,
    /// Published (visible to the world): task id → effect id.
    pub(super) published: BTreeMap<String, String>,
}

/// The export tool: works a while, then prepares one effect per task in the sink (the
/// runtime publishes or discards it, through [`SimEffects`]). With
/// the run's breadth knobs, some tasks (chosen by a hash of their id, so no draw is made)
/// end in a tool error or a JSON-RPC error instead, or leave a status message; a task
/// that was answered echoes the answers it was given in its result.
pub(super) struct Export {
    pub(super) sink: Arc<Mutex<Sink>>,
    pub(super) history: Arc<History>,
    pub(super) tool_ms: (u64, u64),
    pub(super) breadth: Breadth,
}

/// How a task's run ends, decided by its id.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ending {
    Done {
        with_message: bool,
    },
    ToolError,
    ProtocolError,
    /// An effect that cannot be deferred: declared at a point of no return, then done.
    Irreversible,
}

impl Export {
    /// One task in four asks its requestor for input first (on its first run: the version
    /// moves past 1 once asked), exercising working <-> input_required; with
    /// `input_unasked_percent`, a run of such a task sometimes finds it need not ask.
    fn asks_for_input(&self, task: &TaskRecord) -> bool {
        let asks = task.version == 1 && task.task_id.bytes().map(u64::from).sum::<u64>() % 4 == 0;
        let unasked = self.breadth.input_unasked_percent;
        if !asks || unasked == 0 {
            return asks;
        }
        let skipped = madsim::rand::random::<u64>() % 100 < unasked;
        if skipped {
            self.history.mark("input-unasked");
        }
        !skipped
    }

    fn ending(&self, task_id: &str) -> Ending {
        // FNV-1a: stable across runs and platforms, unlike the std hasher.
        let hash = task_id
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
                (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
            });
        let breadth = &self.breadth;
        if hash % 100 < breadth.tool_error_percent {
            Ending::ToolError
        } else if hash / 100 % 100 < breadth.protocol_error_percent {
            Ending::ProtocolError
        } else if hash / 1_000_000 % 100 < breadth.irreversible_percent {
            Ending::Irreversible
        } else {
            Ending::Done {
                with_message: hash / 10_000 % 100 < breadth.status_message_percent,
            }
        }
    }
}

impl Tools for Export {
    fn run(&self, invocation: Invocation) -> BoxFuture<'static, ToolStep> {
        let sink = self.sink.clone();
        let history = self.history.clone();
        let (low, high) = self.tool_ms;
        let asks_for_input = self.asks_for_input(&invocation.task);
        let ending = self.ending(&invocation.task.task_id);
        let declared = invocation.task.irreversible_effect.is_some();
        let answers = invocation.task.input_responses;
        let task_id = invocation.task.task_id;
        Box::pin(async move {
            if asks_for_input {
                madsim::time::sleep(Duration::from_millis(low.max(1))).await;
                history.mark("input-asked");
                return ToolStep::NeedsInput(columns_question());
            }
            let work_ms = low + madsim::rand::random::<u64>() % (high - low + 1);
            madsim::time::sleep(Duration::from_millis(work_ms)).await;
            let with_message = match ending {
                Ending::ToolError => {
                    history.mark("tool-error");
                    return ToolStep::Finished(TaskOutcome::Result {
                        result: json!({
                            "content": [{ "type": "text", "text": "export failed: the disk is full" }],
                            "isError": true,
                        }),
                    });
                }
                Ending::ProtocolError => {
                    history.mark("protocol-error");
                    return ToolStep::Finished(TaskOutcome::RpcError {
                        code: -32_000,
                        message: "export failed".into(),
                        data: Some(json!({ "disk": "full", "n": 1_u64 << 60 })),
                    });
                }
                Ending::Irreversible if !declared => {
                    return ToolStep::PointOfNoReturn {
                        effect: format!("notify-{task_id}"),
                    };
                }
                Ending::Irreversible => {
                    // The outside call: not deferred, not undone, not idempotent.
                    history.mark("irreversible-effect-performed");
                    return ToolStep::Finished(TaskOutcome::Result {
                        result: json!({
                            "content": [{ "type": "text", "text": format!("notified notify-{task_id}") }],
                            "isError": false,
                        }),
                    });
                }
                Ending::Done { with_message } => with_message,
            };
            // Idempotent per task: a redelivered task finds its effect (prepared or
            // published) and reuses it.
            let effect_id = {
                let mut sink = sink.lock().expect("sink");
                let existing = sink
                    .published
                    .get(&task_id)
                    .or_else(|| sink.prepared.get(&task_id))
                    .cloned();
                match existing {
                    Some(existing) => {
                        history.mark("effect-reused");
                        existing
                    }
                    None => {
                        let effect_id = format!("export-{task_id}");
                        sink.prepared.insert(task_id.clone(), effect_id.clone());
                        history.push(Event::EffectPrepared {
                            task_id: task_id.clone(),
                            effect_id: effect_id.clone(),
                            at_ms: SimEnv.now_ms(),
                        });
                        effect_id
                    }
                }
            };
            let mut result = json!({
                "content": [{ "type": "text", "text": format!("exported as {effect_id}") }],
                "effect": effect_id,
                "isError": false,
            });
            if let Some(answers) = answers {
                history.mark("answers-echoed");
                result["answers"] = serde_json::Value::Object(answers);
            }
            let outcome = TaskOutcome::Result { result };
            let message = with_message.then(|| {
                history.mark("status-message-set");
                format!("exported as {effect_id}")
            });
            ToolStep::Prepared { outcome, message }
        })
    }
}

/// Publishes and discards the sink's prepared effects, each change an event the oracle
/// reads (publish is [`Event::Effect`]: the effect became visible).
pub(super) struct SimEffects {
    pub(super) sink: Arc<Mutex<Sink>>,
    pub(super) history: Arc<History>,
}

impl Effects for SimEffects {
    fn publish(&self, task_id: &str) -> Result<bool, String> {
        let mut sink = self.sink.lock().expect("sink");
        let Some(effect_id) = sink.prepared.remove(task_id) else {
            return Ok(false);
        };
        if sink.published.contains_key(task_id) {
            return Ok(false);
        }
        sink.published.insert(task_id.to_owned(), effect_id.clone());
        self.history.push(Event::Effect {
            task_id: task_id.to_owned(),
            effect_id,
            at_ms: SimEnv.now_ms(),
        });
        Ok(true)
    }

    fn discard(&self, task_id: &str) -> Result<bool, String> {
        let mut sink = self.sink.lock().expect("sink");
        if sink.prepared.remove(task_id).is_none() {
            return Ok(false);
        }
        self.history.push(Event::EffectDiscarded {
            task_id: task_id.to_owned(),
            at_ms: SimEnv.now_ms(),
        });
        Ok(true)
    }

    fn prepared(&self, limit_max: usize) -> Result<Vec<String>, String> {
        let sink = self.sink.lock().expect("sink");
        Ok(sink.prepared.keys().take(limit_max).cloned().collect())
    }
}

/// The export's one question to its requestor.
fn columns_question() -> InputAsk {
    let mut requests = serde_json::Map::new();
    requests.insert(
        "columns".into(),
        json!({
            "method": "elicitation/create",
            "params": {
                "message": "Which columns should the export hold?",
                "requestedSchema": {
                    "type": "object",
                    "properties": { "columns": { "type": "string" } },
                    "required": ["columns"],
                },
            },
        }),
    );
    InputAsk {
        message: "which columns should the export hold?".into(),
        requests,
    }
}

/// Records each tool run: its start (task, version, when its worker read the task) and
/// what it returned, for I20. Wraps whichever tools the world runs.
pub(super) struct RunLog {
    pub(super) inner: Arc<dyn Tools>,
    pub(super) history: Arc<History>,
}

impl Tools for RunLog {
    fn run(&self, invocation: Invocation) -> BoxFuture<'static, ToolStep> {
        let (task_id, version) = (invocation.task.task_id.clone(), invocation.task.version);
        self.history.push(Event::ToolRun {
            task_id: task_id.clone(),
            version,
            read_at_ms: invocation.read_at_ms,
            at_ms: SimEnv.now_ms(),
        });
        let history = self.history.clone();
        let running = self.inner.run(invocation);
        Box::pin(async move {
            let step = running.await;
            let outcome = match &step {
                ToolStep::Finished(outcome)
                | ToolStep::FinishedWithMessage { outcome, .. }
                | ToolStep::Prepared { outcome, .. } => Some(outcome.clone()),
                ToolStep::NeedsInput(_) | ToolStep::PointOfNoReturn { .. } => None,
            };
            history.push(Event::ToolReturned {
                task_id,
                version,
                outcome,
                at_ms: SimEnv.now_ms(),
            });
            step
        })
    }
}

/// Records the runtime's status notifications, for I10.
pub(super) struct SimNotify {
    pub(super) history: Arc<History>,
}

impl Notify for SimNotify {
    fn status_changed(&self, record: &TaskRecord) {
        self.history.push(Event::Notified {
            task_id: record.task_id.clone(),
            status: record.status,
            version: record.version,
            at_ms: SimEnv.now_ms(),
        });
    }
}

/// The simulation's tool list, as the server shows it: one `export`, only as a task (the
/// runtime's workers run it through [`Export`]).
pub(super) struct SimCatalog;

impl Catalog for SimCatalog {
    fn specs(&self) -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "export",
            description: "Exports rows; its effect is committed once per task.",
            input_schema: json!({ "type": "object" }),
            task_support: TaskSupport::Required,
        }]
    }

    fn validate(
        &self,
        _name: &str,
        _arguments: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<(), RpcError> {
        Ok(())
    }

    fn call(
        &self,
        _name: &str,
        _arguments: serde_json::Map<String, serde_json::Value>,
        _task_id: Option<String>,
    ) -> BoxFuture<'static, ToolStep> {
        // Reached only when the contract lets a `required` tool run without a task (the
        // `required-sync-accepted` mutant): the simulation's export has no synchronous form.
        Box::pin(async {
            ToolStep::Finished(TaskOutcome::RpcError {
                code: wire::code::METHOD_NOT_FOUND,
                message: "export runs only as a task".into(),
                data: None,
            })
        })
    }
}
