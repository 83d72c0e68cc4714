#!/usr/bin/env python3
"""Stand-in for `tasklatch serve --stdio`, built on the Python SDK's low-level
server with experimental tasks (`mcp==1.30.0`). Only for checking client.py
without the Rust server:  python client.py -- python fake_server.py

Mirrors tasklatch's stdio contract:
- capabilities.tasks = {cancel: {}, requests: {tools: {call: {}}}} (the default
  tasks/list handler that enable_tasks() installs is removed, so no `list` and
  tasks/list answers -32601 "Method not found");
- tools export (optional), archive (required), echo (forbidden);
- required without task / forbidden with task -> -32601 (a raw tools/call
  handler is installed because the SDK's @server.call_tool() decorator turns
  any exception, McpError included, into a CallToolResult with isError=true).
"""

from __future__ import annotations

import sys
import warnings

warnings.filterwarnings("ignore", message="The experimental tasks API is deprecated")

import anyio  # noqa: E402
import mcp.types as types  # noqa: E402
from mcp.server.experimental.task_context import ServerTaskContext  # noqa: E402
from mcp.server.lowlevel import Server  # noqa: E402
from mcp.server.stdio import stdio_server  # noqa: E402
from mcp.shared.exceptions import McpError  # noqa: E402

TOOLS = [
    types.Tool(
        name="export",
        description="Long-running export (default 2000 ms).",
        inputSchema={
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "rows": {"type": "integer"},
                "delay_ms": {"type": "integer"},
            },
            "required": ["name"],
        },
        execution=types.ToolExecution(taskSupport="optional"),
    ),
    types.Tool(
        name="archive",
        description="Archive items; must be called as a task.",
        inputSchema={"type": "object", "properties": {"items": {"type": "array", "items": {"type": "string"}}}},
        execution=types.ToolExecution(taskSupport="required"),
    ),
    types.Tool(
        name="echo",
        description="Synchronous echo; never a task.",
        inputSchema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        execution=types.ToolExecution(taskSupport="forbidden"),
    ),
]
TOOL_BY_NAME = {t.name: t for t in TOOLS}

server = Server("tasklatch-fake")
support = server.experimental.enable_tasks()
# No requestor identity over stdio -> do not serve tasks/list (and so no tasks.list capability).
server.request_handlers.pop(types.ListTasksRequest, None)


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    return TOOLS


def text_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def sleep_unless_cancelled(task: ServerTaskContext, delay_ms: int) -> bool:
    """Sleep in small steps; return False if the task got cancelled meanwhile."""
    deadline = anyio.current_time() + delay_ms / 1000
    while anyio.current_time() < deadline:
        await anyio.sleep(min(0.05, max(0.0, deadline - anyio.current_time())))
        current = await support.store.get_task(task.task_id)
        if current is None or current.status == "cancelled":
            # Refresh the context's view of the task (update_task returns the stored
            # state) so run_task() does not try to complete a cancelled task, which
            # the in-memory store would reject.
            if current is not None:
                await task.update_status(current.statusMessage or "cancelled by requestor")
            return False
    return True


async def call_tool(req: types.CallToolRequest) -> types.ServerResult:
    name = req.params.name
    args = req.params.arguments or {}
    tool = TOOL_BY_NAME.get(name)
    if tool is None:
        raise McpError(types.ErrorData(code=types.INVALID_PARAMS, message=f"Unknown tool: {name}"))
    ctx = server.request_context
    # -32601 for required-without-task / forbidden-with-task (raises McpError).
    ctx.experimental.validate_for_tool(tool)

    if name == "echo":
        return types.ServerResult(text_result(str(args.get("text", ""))))

    if name == "export":
        export_name = str(args.get("name", "unnamed"))
        rows = int(args.get("rows", 100))
        delay_ms = int(args.get("delay_ms", 2000))

        async def export_work(task: ServerTaskContext) -> types.CallToolResult:
            if not await sleep_unless_cancelled(task, delay_ms):
                return text_result("cancelled")  # ignored: task already terminal
            return text_result(f"export {export_name!r} finished: {rows} rows")

        if not ctx.experimental.is_task:
            await anyio.sleep(delay_ms / 1000)
            return types.ServerResult(text_result(f"export {export_name!r} finished: {rows} rows"))
        return types.ServerResult(await ctx.experimental.run_task(export_work))

    # archive (required -> always a task here)
    items = [str(i) for i in args.get("items", [])]

    async def archive_work(task: ServerTaskContext) -> types.CallToolResult:
        if not await sleep_unless_cancelled(task, 100):
            return text_result("cancelled")
        return text_result(f"archived {len(items)} item(s): {', '.join(items)}")

    return types.ServerResult(await ctx.experimental.run_task(archive_work))


server.request_handlers[types.CallToolRequest] = call_tool


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    try:
        anyio.run(main)
    except KeyboardInterrupt:
        sys.exit(130)
