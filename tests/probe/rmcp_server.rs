//! A 2026-07-28 task server on the official Rust SDK, rmcp 3.11.0, written the way its
//! examples write one (`examples/servers/src/common/task_demo.rs`, and its conformance
//! server for the tool that asks for input): the SDK's in-memory `TaskManager` behind a
//! hand-written `ServerHandler`, served by its Streamable HTTP service in this process.
//! One manager is shared by every request, as the SDK's HTTP conformance server shares
//! it: 2026-07-28 requests are served statelessly (a handler per request), so a manager
//! per handler would lose every task.
//!
//! Tools: `greet {name}` (synchronous), `slow_compute {seconds}` (a task when the request
//! declares the extension; cancellable), `confirm_delete {filename}` (a task that asks its
//! requestor to confirm, answered by `tasks/update`).

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ContentBlock, CreateTaskResult, ElicitRequest, ElicitRequestParams, GetTaskParams,
    GetTaskResult, Implementation, InputRequest, JsonObject, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskExit, TaskManager, TaskOptions};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};
use std::time::Duration;

#[derive(Clone)]
struct TaskServer {
    tasks: TaskManager,
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

fn tools() -> Vec<Tool> {
    let schema = |name: &str, kind: &str| {
        object(json!({
            "type": "object",
            "properties": { name: { "type": kind } },
            "required": [name],
        }))
    };
    vec![
        Tool::new("greet", "Says hello at once", schema("name", "string")),
        Tool::new(
            "slow_compute",
            "Sleeps `seconds`, as a task when the request declares the tasks extension",
            schema("seconds", "number"),
        ),
        Tool::new(
            "confirm_delete",
            "A task that asks its requestor to confirm",
            schema("filename", "string"),
        ),
    ]
}

fn options() -> TaskOptions {
    TaskOptions::new()
        .with_ttl_ms(60_000u64)
        .with_poll_interval_ms(100)
}

fn text(text: String) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

impl ServerHandler for TaskServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("rmcp-task-server", "0.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let tasks = context
            .client_capabilities()
            .is_some_and(|capabilities| capabilities.supports_tasks());
        let arguments = request.arguments.clone().unwrap_or_default();
        match request.name.as_ref() {
            "greet" => {
                let name = arguments.get("name").and_then(Value::as_str).unwrap_or("");
                Ok(text(format!("Hello, {name}!")).into())
            }
            "slow_compute" => {
                let seconds = arguments
                    .get("seconds")
                    .and_then(Value::as_f64)
                    .ok_or_else(|| McpError::invalid_params("seconds: a number", None))?
                    .clamp(0.0, 120.0);
                if !tasks {
                    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
                    return Ok(text(format!("slept {seconds} s")).into());
                }
                let task = self.tasks.spawn(options(), move |context| {
                    Box::pin(async move {
                        tokio::select! {
                            _ = context.cancelled() => Err(TaskExit::Cancelled),
                            _ = tokio::time::sleep(Duration::from_secs_f64(seconds)) => {
                                Ok(text(format!("slept {seconds} s")))
                            }
                        }
                    })
                });
                Ok(CreateTaskResult::new(task).into())
            }
            "confirm_delete" => {
                if !tasks {
                    return Err(McpError::missing_required_client_capability(
                        ClientCapabilities::builder().enable_tasks().build(),
                    ));
                }
                let filename = arguments
                    .get("filename")
                    .and_then(Value::as_str)
                    .unwrap_or("file.txt")
                    .to_owned();
                let task = self.tasks.spawn(options(), move |context| {
                    Box::pin(async move {
                        let schema = serde_json::from_value(json!({
                            "type": "object",
                            "properties": { "confirm": { "type": "boolean" } },
                            "required": ["confirm"],
                        }))
                        .map_err(|error| McpError::internal_error(error.to_string(), None))?;
                        let question = InputRequest::Elicitation(ElicitRequest::new(
                            ElicitRequestParams::FormElicitationParams {
                                meta: None,
                                message: format!("Delete {filename}?"),
                                requested_schema: schema,
                            },
                        ));
                        let answer = context.request_input("confirm", question).await?;
                        let confirmed = answer.get("action").and_then(Value::as_str)
                            == Some("accept")
                            && answer.pointer("/content/confirm") == Some(&Value::Bool(true));
                        Ok::<CallToolResult, TaskExit>(text(if confirmed {
                            format!("deleted {filename}")
                        } else {
                            format!("kept {filename}")
                        }))
                    })
                });
                Ok(CreateTaskResult::new(task).into())
            }
            other => Err(McpError::invalid_params(
                format!("unknown tool: {other}"),
                None,
            )),
        }
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        Ok(GetTaskResult::new(self.tasks.get_task(&request.task_id)?))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks.cancel_task(&request.task_id)
    }
}

/// Serves the task server at `http://ADDRESS/mcp` on a thread of its own (its own tokio
/// runtime, so the probe's runtime cannot starve it), bound to `bind` (`127.0.0.1:0`: a
/// free port); returns the address.
pub fn start(bind: &str) -> std::net::SocketAddr {
    let bind = bind.to_owned();
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio");
        runtime.block_on(async move {
            let server = TaskServer {
                tasks: TaskManager::new(),
            };
            let config = StreamableHttpServerConfig::default()
                .with_json_response(true)
                .with_sse_keep_alive(None);
            let service: StreamableHttpService<TaskServer, LocalSessionManager> =
                StreamableHttpService::new(move || Ok(server.clone()), Default::default(), config);
            let router = axum::Router::new().nest_service("/mcp", service);
            let listener = tokio::net::TcpListener::bind(bind.as_str())
                .await
                .expect("bind");
            send.send(listener.local_addr().expect("address"))
                .expect("sent");
            let _ = axum::serve(listener, router).await;
        });
    });
    receive.recv().expect("the rmcp server started")
}
