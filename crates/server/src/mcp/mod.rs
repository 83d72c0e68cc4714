//! The MCP tasks server: JSON-RPC over stdio and Streamable HTTP, speaking the exact shapes
//! of both protocol eras — the 2025-11-25 experimental tasks utility (this page) and the
//! 2026-07-28 extension `io.modelcontextprotocol/tasks` ([`modern`]) — with the contract's
//! decisions mapped to each era's wire. A request is served in the era it speaks
//! (docs/design.md §12).
//!
//! No Rust SDK serves 2025-11-25 tasks (rmcp 3.x moved to the later tasks extension and
//! drops the `task` param), so tasklatch carries its own small JSON-RPC layer:
//!
//! - [`wire`] — framing, error codes, the `Task` object, timestamps.
//! - [`server`] — [`server::Server`], the handler every transport and the simulation call.
//! - [`modern`] — the 2026-07-28 era: envelope, `server/discover`, the extension's shapes.
//! - [`tools`] — the [`tools::Catalog`] a server offers.
//! - `examples` — the built-in example tools (`export`, `archive`, `echo`, `notify`) and
//!   `suite_tools`, the official conformance suite's fixture tools
//!   (`--conformance-tools`): both behind the feature `example-tools`, which
//!   `tasklatch serve` turns on and a server of your own leaves off.
//! - [`stdio`] — the stdio transport.
//! - [`http`] — the Streamable HTTP transport (sessions, bearer tokens, SSE).
//! - [`waits`] — blocked calls: woken by their task's writes, ended with their client.
//! - [`limits`] — per-caller budgets (waits, requests, sessions, poll rate).
//!
//! What the wire promises, and where it is decided:
//!
//! | situation | answer |
//! |---|---|
//! | malformed JSON | `-32700` |
//! | not a JSON-RPC request (wrong `jsonrpc`, id, method or params type; a batch) | `-32600` |
//! | unknown method | `-32601` |
//! | `required` tool without `task`, `forbidden` tool with `task` | `-32601` |
//! | unknown tool, bad arguments, missing `taskId`, bad cursor, reused idempotency key | `-32602` |
//! | unknown task, another caller's task | `-32602 "Failed to retrieve task: Task not found"`, byte for byte the same |
//! | the caller's own expired task | `-32602 "Failed to retrieve task: Task has expired"` |
//! | `tasks/cancel` on a terminal task | `-32602 "Cannot cancel task: already in terminal status '<status>'"` |
//! | `tasks/result` on a cancelled task | `-32603 "Task was cancelled: a cancelled task has no result"`, `data: {taskId, status}` (the spec leaves it open, modelcontextprotocol#1956) |
//! | `tasks/list` where callers cannot be identified (stdio) | `-32601`, and `tasks.list` is not offered |
//! | store unavailable | `-32603` (the cause is logged, not sent) |
//! | `tasks/result` of the owner blocked on an `input_required` task | each open question sent on that call's stream as a request (`elicitation/create`, …) with the related-task `_meta`, once per call, if the client declared the capability in `initialize` |
//! | the client's response to such a request | stored as the answer (`answer_input`); an error response as `{action: "decline"}`; nothing is answered back |
//! | a response whose id this session was not asked | ignored |
//!
//! Unknown params are tolerated (the TypeScript client repeats `task` on `tasks/get`).
//! `tasks/result` blocks until the task is terminal, then returns the stored
//! `CallToolResult` (an `isError: true` one as a successful response) with
//! `_meta["io.modelcontextprotocol/related-task"]`, or the stored JSON-RPC error. While it
//! blocks on an `input_required` task it asks the task's questions on its own stream and
//! takes the client's responses as the answers (docs/design.md §12; [`server`]).
//! Idempotent creation: `_meta["dev.tasklatch/idempotency-key"]` (or the HTTP
//! `Idempotency-Key` header) binds a key to the request's digest, per caller.
//! `tasks/get`, `tasks/cancel` and `CreateTaskResult` answers carry the task's version as
//! `_meta["dev.tasklatch/version"]` (+1 per change), so a reader can order what it saw.
//!
//! The simulation's clients speak to [`server::Server`] too (JSON-RPC text, in memory), so
//! every madsim run also exercises this layer and its oracle judges what the wire showed.

#[cfg(feature = "example-tools")]
pub mod examples;
pub mod http;
pub mod limits;
pub mod modern;
pub mod server;
pub mod stdio;
#[cfg(feature = "example-tools")]
pub mod suite_tools;
pub mod tools;
pub mod waits;
pub mod wire;

pub use server::{Server, ServerConfig, Session};

use crate::runtime::{Env, MemoryQueue, Probe, Runtime, RuntimeConfig};
use crate::store::TaskStore;
use std::sync::Arc;
/// A server and the runtime that runs its tasks, wired together: the runtime's status
/// changes wake blocked `tasks/result` calls and become notifications.
pub struct Assembly {
    /// The request handler to give the transports.
    pub server: Arc<Server>,
    /// The runtime that dispatches and runs admitted tasks; start it to run anything.
    pub runtime: Arc<Runtime>,
}

impl Assembly {
    /// Builds both over `store`, with the example tools committing exports to `exports`.
    /// Nothing runs until [`Runtime::start`].
    #[cfg(feature = "example-tools")]
    pub fn new(
        store: Arc<dyn TaskStore>,
        exports: std::path::PathBuf,
        env: Arc<dyn Env>,
        config: ServerConfig,
        runtime_config: RuntimeConfig,
    ) -> Assembly {
        Assembly::with_probe(
            store,
            exports,
            env,
            config,
            runtime_config,
            Arc::new(crate::runtime::NoProbe),
        )
    }

    /// [`Assembly::new`] with a [`Probe`] the runtime passes its named points through
    /// (`serve --hold-at` uses one to stop a worker where a crash test kills it).
    #[cfg(feature = "example-tools")]
    pub fn with_probe(
        store: Arc<dyn TaskStore>,
        exports: std::path::PathBuf,
        env: Arc<dyn Env>,
        config: ServerConfig,
        runtime_config: RuntimeConfig,
        probe: Arc<dyn Probe>,
    ) -> Assembly {
        let tools = Arc::new(examples::ExampleTools {
            exports,
            store: store.clone(),
            env: env.clone(),
            conformance_tools: config.conformance_tools,
        });
        Assembly::with_tools(store, tools, env, config, runtime_config, probe)
    }

    /// Builds both over `store` with `tools` — a [`crate::tool::BoundToolbox`] of your
    /// own, or any set that is the server's [`tools::Catalog`], the runtime's
    /// [`Tools`](crate::runtime::Tools) and its [`Effects`](crate::runtime::Effects) at once.
    /// Nothing runs until [`Runtime::start`].
    pub fn with_tools<T>(
        store: Arc<dyn TaskStore>,
        tools: Arc<T>,
        env: Arc<dyn Env>,
        config: ServerConfig,
        runtime_config: RuntimeConfig,
        probe: Arc<dyn Probe>,
    ) -> Assembly
    where
        T: tools::Catalog + crate::runtime::Tools + crate::runtime::Effects + 'static,
    {
        let server = Arc::new(Server::new(
            store.clone(),
            tools.clone(),
            env.clone(),
            config,
        ));
        // The server and its runtime share a process: admissions wake the dispatcher.
        let admitted = Arc::new(tokio::sync::Notify::new());
        server.ring_on_admission(admitted.clone());
        let runtime = Arc::new(
            Runtime::new(
                store,
                Arc::new(MemoryQueue::default()),
                tools.clone(),
                env,
                probe,
                server.clone(),
                runtime_config,
            )
            .with_effects(tools)
            .with_bells(admitted),
        );
        Assembly { server, runtime }
    }
}
