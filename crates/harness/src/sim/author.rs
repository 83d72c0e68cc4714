//! An author's tools in the simulated world: a [`Toolbox`] run by the simulated runtime in
//! place of the built-in `export`, through the very [`Tool`](crate::tool::Tool) trait a
//! server built on `tasklatch-server` uses. Workers running it are killed, paused and cut
//! off from the store as in any scenario; the clients call it by name with the arguments
//! the author gives; the oracle judges the effects it prepares and publishes.
//!
//! What the tools must do to be simulated is what they must do to be safe
//! (docs/build-a-server.md): take time, sleep and randomness from `ToolCall::env` (here
//! madsim's, so a seed replays them), start no thread or timer of their own, and keep
//! their effects idempotent per task id. Each world gets a fresh folder for the tools'
//! files, removed when the world ends.

use super::SimEnv;
use super::history::History;
use super::tools::Sink;
use crate::check::{Event, Violation};
use crate::contract::{TaskOutcome, TaskStatus};
use crate::runtime::{BoxFuture, Effects, Env, Invocation, ToolStep, Tools};
use crate::store::TaskStore;
use crate::tool::{BoundToolbox, Toolbox};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Builds a world's toolbox over its folder.
type BuildToolbox = dyn Fn(&Path) -> Toolbox + Send + Sync;
/// The arguments of a tenant's n-th create.
type Arguments = dyn Fn(usize, usize) -> Value + Send + Sync;
/// Where a task's effect shows in a world's folder.
type EffectPath = dyn Fn(&Path, &str) -> PathBuf + Send + Sync;

/// An author's tools for [`Sim::tools`](super::Sim::tools).
#[derive(Clone)]
pub struct WorldTools {
    build: Arc<BuildToolbox>,
    tool: String,
    arguments: Arc<Arguments>,
    effect_path: Option<Arc<EffectPath>>,
}

impl WorldTools {
    /// `build` makes a world's toolbox over a fresh folder; the clients create tasks of
    /// `tool` with `arguments(tenant, n)` for a tenant's `n`-th task (an object the tool's
    /// `validate` accepts). A client that reuses an idempotency key for another request
    /// sends `arguments(tenant, usize::MAX - n)`: make it differ from `arguments(tenant,
    /// n)` and the server must refuse it.
    pub fn new(
        build: impl Fn(&Path) -> Toolbox + Send + Sync + 'static,
        tool: impl Into<String>,
        arguments: impl Fn(usize, usize) -> Value + Send + Sync + 'static,
    ) -> WorldTools {
        WorldTools {
            build: Arc::new(build),
            tool: tool.into(),
            arguments: Arc::new(arguments),
            effect_path: None,
        }
    }

    /// Where a task's effect shows in the world's folder (`dir`), for a tool whose effect
    /// is a file: at the end of each run the world itself is judged — a completed task's
    /// file exists, a failed or cancelled task's does not (I17, observed rather than
    /// recorded: it catches a tool whose effect escapes `publish`).
    pub fn effect_shows_at(
        mut self,
        path: impl Fn(&Path, &str) -> PathBuf + Send + Sync + 'static,
    ) -> WorldTools {
        self.effect_path = Some(Arc::new(path));
        self
    }
}

/// One world's instance of the author's tools.
pub(super) struct AuthorWorld {
    pub(super) bound: Arc<BoundToolbox>,
    pub(super) tool: String,
    arguments: Arc<Arguments>,
    effect_path: Option<Arc<EffectPath>>,
    dir: PathBuf,
}

impl AuthorWorld {
    /// The toolbox over a folder of this world's own (`scenario` and `seed` name it, so a
    /// hunt's parallel worlds never share one), bound to the world's store.
    pub(super) fn open(
        tools: &WorldTools,
        scenario: &str,
        seed: u64,
        store: Arc<dyn TaskStore>,
    ) -> AuthorWorld {
        let dir = std::env::temp_dir().join(format!(
            "tasklatch-sim-tools-{}-{scenario}-{seed}",
            std::process::id()
        ));
        // What an interrupted run of the same seed left behind.
        let _ = std::fs::remove_dir_all(&dir);
        let bound = (tools.build)(&dir).bind(store, Arc::new(SimEnv));
        AuthorWorld {
            bound: Arc::new(bound),
            tool: tools.tool.clone(),
            arguments: tools.arguments.clone(),
            effect_path: tools.effect_path.clone(),
            dir,
        }
    }

    /// The arguments of a tenant's `n`-th create.
    pub(super) fn arguments(&self, tenant: usize, n: usize) -> Value {
        (self.arguments)(tenant, n)
    }

    /// The world as it is at the end, judged against the store: every task the history
    /// wrote, by its stored status, against whether its effect's file exists.
    pub(super) fn world_violations(
        &self,
        history: &[Event],
        store: &dyn TaskStore,
    ) -> Vec<Violation> {
        let Some(effect_path) = &self.effect_path else {
            return Vec::new();
        };
        let task_ids: BTreeSet<&str> = history
            .iter()
            .filter_map(|event| match event {
                Event::Applied { task_id, .. } => Some(task_id.as_str()),
                _ => None,
            })
            .collect();
        let mut violations = Vec::new();
        for task_id in task_ids {
            let Ok(Some(record)) = store.read(task_id) else {
                continue;
            };
            let shows = effect_path(&self.dir, task_id).exists();
            let wrong = match record.status {
                TaskStatus::Completed => !shows,
                TaskStatus::Failed | TaskStatus::Cancelled => shows,
                _ => false,
            };
            if wrong {
                violations.push(Violation {
                    invariant: "I17",
                    task_id: task_id.to_owned(),
                    detail: format!(
                        "the world: a {} task's effect {}",
                        record.status.as_str(),
                        if shows { "exists" } else { "is missing" }
                    ),
                    events: Vec::new(),
                });
            }
        }
        violations
    }
}

impl Drop for AuthorWorld {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The author's tools as the runtime sees them, every prepare, publish and discard
/// recorded in the world's sink and history as the built-in export's are, so the oracle
/// holds them to the same invariants (I6: one effect for a completed task, and the one its
/// result names; I17: none for any other, and what was prepared discarded).
pub(super) struct RecordedTools {
    pub(super) inner: Arc<BoundToolbox>,
    pub(super) sink: Arc<Mutex<Sink>>,
    pub(super) history: Arc<History>,
}

impl Tools for RecordedTools {
    fn run(&self, invocation: Invocation) -> BoxFuture<'static, ToolStep> {
        let task_id = invocation.task.task_id.clone();
        if invocation.task.irreversible_effect.is_some() {
            self.history.mark("irreversible-effect-performed");
        }
        let run = self.inner.run(invocation);
        let (sink, history) = (self.sink.clone(), self.history.clone());
        Box::pin(async move {
            let step = run.await;
            let ToolStep::Prepared {
                mut outcome,
                message,
            } = step
            else {
                return step;
            };
            {
                let mut sink = sink.lock().expect("sink");
                if sink.published.contains_key(&task_id) || sink.prepared.contains_key(&task_id) {
                    history.mark("effect-reused");
                } else {
                    sink.prepared.insert(task_id.clone(), task_id.clone());
                    history.push(Event::EffectPrepared {
                        task_id: task_id.clone(),
                        effect_id: task_id.clone(),
                        at_ms: SimEnv.now_ms(),
                    });
                }
            }
            // The result names its effect (the task id), so I6 holds a completed task to
            // having published exactly that one.
            if let TaskOutcome::Result { result } = &mut outcome
                && let Some(fields) = result.as_object_mut()
            {
                fields.insert("effect".into(), Value::String(task_id));
            }
            ToolStep::Prepared { outcome, message }
        })
    }
}

impl Effects for RecordedTools {
    fn publish(&self, task_id: &str) -> Result<bool, String> {
        let published = self.inner.publish(task_id)?;
        let mut sink = self.sink.lock().expect("sink");
        sink.prepared.remove(task_id);
        if published {
            sink.published
                .insert(task_id.to_owned(), task_id.to_owned());
            self.history.push(Event::Effect {
                task_id: task_id.to_owned(),
                effect_id: task_id.to_owned(),
                at_ms: SimEnv.now_ms(),
            });
        }
        Ok(published)
    }

    fn discard(&self, task_id: &str) -> Result<bool, String> {
        let discarded = self.inner.discard(task_id)?;
        self.sink.lock().expect("sink").prepared.remove(task_id);
        if discarded {
            self.history.push(Event::EffectDiscarded {
                task_id: task_id.to_owned(),
                at_ms: SimEnv.now_ms(),
            });
        }
        Ok(discarded)
    }

    fn prepared(&self, limit_max: usize) -> Result<Vec<String>, String> {
        self.inner.prepared(limit_max)
    }
}
