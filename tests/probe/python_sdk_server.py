#!/usr/bin/env python3
"""An MCP 2025-11-25 task server written the way the Python SDK `mcp` 1.30.0 shows it
(`server.experimental.enable_tasks()`, `@server.call_tool()`, `ctx.experimental.run_task`),
for tests/it/probe_third_party.rs. Over stdio, or with `--http PORT` Streamable HTTP
(`StreamableHTTPSessionManager` under uvicorn, stateful sessions). Tools:

  export  taskSupport optional   {name, delay_ms?}  sleeps delay_ms (default 1000), then
                                                    returns a text result
  echo    taskSupport forbidden  {text}             answers at once
"""

import sys
import warnings

warnings.filterwarnings("ignore", message="The experimental tasks API is deprecated")

import anyio  # noqa: E402
import mcp.types as types  # noqa: E402
from mcp.server.lowlevel import Server  # noqa: E402

server = Server("python-sdk-tasks")
server.experimental.enable_tasks()


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    return [
        types.Tool(
            name="export",
            description="A long-running export.",
            inputSchema={
                "type": "object",
                "properties": {"name": {"type": "string"}, "delay_ms": {"type": "integer"}},
                "required": ["name"],
            },
            execution=types.ToolExecution(taskSupport="optional"),
        ),
        types.Tool(
            name="echo",
            description="Answers at once.",
            inputSchema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            execution=types.ToolExecution(taskSupport="forbidden"),
        ),
    ]


@server.call_tool()
async def call_tool(name: str, arguments: dict):
    if name == "echo":
        return [types.TextContent(type="text", text=str(arguments.get("text", "")))]
    delay = int(arguments.get("delay_ms", 1000)) / 1000
    label = str(arguments.get("name", "export"))
    ctx = server.request_context

    async def work(task):
        await anyio.sleep(delay)
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"exported {label}")])

    if ctx.experimental.is_task:
        return await ctx.experimental.run_task(work)
    await anyio.sleep(delay)
    return [types.TextContent(type="text", text=f"exported {label}")]


async def stdio() -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def http(port: int) -> None:
    import contextlib

    import uvicorn
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.applications import Starlette
    from starlette.routing import Mount

    manager = StreamableHTTPSessionManager(app=server, json_response=True)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        async with manager.run():
            yield

    async def handle(scope, receive, send):
        await manager.handle_request(scope, receive, send)

    app = Starlette(routes=[Mount("/mcp", app=handle)], lifespan=lifespan)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:
        http(int(sys.argv[2]))
    else:
        anyio.run(stdio)
