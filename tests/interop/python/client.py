#!/usr/bin/env python3
"""Interop client: drives an MCP 2025-11-25 tasks server over stdio with the
official Python SDK (`mcp==1.30.0`, experimental tasks API).

Usage:
    python client.py [--trace FILE] [--timeout SECONDS] -- <server command and args...>

Each scenario prints one JSON line on stdout:
    {"scenario": ..., "ok": bool, "detail": ...}
Exit status is 1 if any scenario failed (or the run timed out), else 0.

Expectations (tasklatch over stdio):
- capabilities.tasks = {cancel: {}, requests: {tools: {call: {}}}}, no `list`;
- tools: export (taskSupport optional), archive (required), echo (forbidden);
- tasks/list -> -32601; unknown task id -> -32602; cancel of a terminal task -> -32602;
- required tool without task / forbidden tool with task -> -32601.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
import warnings
from datetime import timedelta
from typing import Any

# The SDK marks the whole experimental tasks API as deprecated in 1.30.0
# ("will be removed in mcp 2.0"); that is expected here, keep stderr clean.
warnings.filterwarnings("ignore", message="The experimental tasks API is deprecated")

import anyio  # noqa: E402
import mcp.types as types  # noqa: E402
from mcp import ClientSession, McpError, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.shared.message import SessionMessage  # noqa: E402

try:
    BaseExceptionGroup  # noqa: B018  (builtin from 3.11)
except NameError:  # pragma: no cover  (3.10: anyio depends on the backport)
    from exceptiongroup import BaseExceptionGroup  # type: ignore[no-redef]

PROTOCOL_VERSION = "2025-11-25"
RELATED_TASK_KEY = "io.modelcontextprotocol/related-task"
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602

REQUEST_TIMEOUT_S = 10.0  # per JSON-RPC request (session read timeout)
SCENARIO_TIMEOUT_S = 15.0  # per scenario
DEFAULT_TOTAL_TIMEOUT_S = 60.0

EXPECTED_TASK_SUPPORT = {"export": "optional", "archive": "required", "echo": "forbidden"}

RESULTS: list[dict[str, Any]] = []


def report(scenario: str, ok: bool, detail: Any) -> None:
    line = {"scenario": scenario, "ok": bool(ok), "detail": detail}
    RESULTS.append(line)
    print(json.dumps(line, default=str, sort_keys=False), flush=True)


def describe_exc(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, BaseExceptionGroup):
        return {"error": type(exc).__name__, "message": str(exc), "sub": [describe_exc(e) for e in exc.exceptions]}
    if isinstance(exc, McpError):
        return {"error": "McpError", "code": exc.error.code, "message": exc.error.message, "data": exc.error.data}
    return {"error": type(exc).__name__, "message": str(exc)[:500]}


def error_code(exc: BaseException) -> int | None:
    return exc.error.code if isinstance(exc, McpError) else None


async def expect_error(awaitable: Any, code: int) -> tuple[bool, dict[str, Any]]:
    """Await a request that must fail with JSON-RPC error `code`."""
    try:
        res = await awaitable
    except Exception as exc:  # noqa: BLE001
        d = describe_exc(exc)
        d["expected_code"] = code
        return error_code(exc) == code, d
    return False, {"expected_code": code, "unexpected_success": dump(res)}


def dump(model: Any) -> Any:
    if hasattr(model, "model_dump"):
        return model.model_dump(by_alias=True, mode="json", exclude_none=True)
    return model


def texts(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


# --------------------------------------------------------------------------- wire tap


class WireTap:
    """Sits between stdio_client and ClientSession; records every JSON-RPC message."""

    def __init__(self, trace_path: str | None) -> None:
        self.sent: list[dict[str, Any]] = []
        self.received: list[dict[str, Any]] = []
        self.transport_errors: list[str] = []
        self.invalid_notifications: list[dict[str, Any]] = []
        self._trace = open(trace_path, "w", encoding="utf-8") if trace_path else None  # noqa: SIM115
        self._t0 = time.monotonic()

    def _log(self, direction: str, payload: Any) -> None:
        if self._trace:
            self._trace.write(
                json.dumps({"t": round(time.monotonic() - self._t0, 3), "dir": direction, "msg": payload}, default=str)
                + "\n"
            )
            self._trace.flush()

    async def pump_out(self, src: Any, dst: Any) -> None:
        try:
            async with src, dst:
                async for msg in src:
                    payload = dump(msg.message.root)
                    self.sent.append(payload)
                    self._log(">>", payload)
                    await dst.send(msg)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            # server gone: the session sees "Connection closed" on its own
            self.transport_errors.append(f"write side closed: {type(exc).__name__}")

    async def pump_in(self, src: Any, dst: Any) -> None:
        async with dst:
            async for msg in src:
                if isinstance(msg, Exception):
                    self.transport_errors.append(f"{type(msg).__name__}: {str(msg)[:300]}")
                    self._log("<<!", str(msg))
                elif isinstance(msg, SessionMessage):
                    payload = dump(msg.message.root)
                    self.received.append(payload)
                    self._log("<<", payload)
                    if "method" in payload and "id" not in payload:
                        try:
                            types.ServerNotification.model_validate(payload)
                        except Exception as exc:  # noqa: BLE001
                            self.invalid_notifications.append({"msg": payload, "error": str(exc)[:300]})
                await dst.send(msg)

    def sent_requests(self, method: str) -> list[dict[str, Any]]:
        return [m for m in self.sent if m.get("method") == method and "id" in m]


# --------------------------------------------------------------------------- scenarios


async def sc_initialize(init: types.InitializeResult) -> None:
    caps = init.capabilities
    tasks = caps.tasks
    problems = []
    if init.protocolVersion != PROTOCOL_VERSION:
        problems.append(f"protocolVersion {init.protocolVersion!r} != {PROTOCOL_VERSION!r}")
    if tasks is None:
        problems.append("capabilities.tasks absent")
    else:
        if tasks.requests is None or tasks.requests.tools is None or tasks.requests.tools.call is None:
            problems.append("capabilities.tasks.requests.tools.call absent")
        if tasks.list is not None:
            problems.append("capabilities.tasks.list present (stdio has no requestor identity)")
        if tasks.cancel is None:
            problems.append("capabilities.tasks.cancel absent")
    if caps.tools is None:
        problems.append("capabilities.tools absent")
    report(
        "initialize",
        not problems,
        {
            "protocolVersion": init.protocolVersion,
            "serverInfo": dump(init.serverInfo),
            "capabilities": dump(caps),
            "problems": problems,
        },
    )


async def sc_tools_list(session: ClientSession) -> None:
    res = await session.list_tools()
    seen = {t.name: (t.execution.taskSupport if t.execution else None) for t in res.tools}
    problems = []
    for name, want in EXPECTED_TASK_SUPPORT.items():
        if name not in seen:
            problems.append(f"tool {name} missing")
            continue
        got = seen[name]
        # absent execution/taskSupport means "forbidden" per spec
        if (got or "forbidden") != want:
            problems.append(f"tool {name}: taskSupport {got!r}, want {want!r}")
    report("tools_list", not problems, {"taskSupport": seen, "problems": problems})


async def poll_to_terminal(exp: Any, task_id: str, limit_s: float) -> tuple[list[dict[str, Any]], types.GetTaskResult]:
    """Use the SDK's poll_task (honours pollInterval, default 500 ms) with a hard bound."""
    seen: list[dict[str, Any]] = []
    last: types.GetTaskResult | None = None
    with anyio.fail_after(limit_s):
        async for st in exp.poll_task(task_id):
            last = st
            seen.append({"status": st.status, "pollInterval": st.pollInterval})
    assert last is not None
    return seen, last


def compress(seen: list[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    for s in seen:
        if not out or out[-1] != s["status"]:
            out.append(s["status"])
    return out


async def sc_export_task(session: ClientSession, exp: Any, tap: WireTap) -> None:
    export_name = f"interop-{uuid.uuid4().hex[:8]}"
    t0 = time.monotonic()
    created = await exp.call_tool_as_task("export", {"name": export_name, "delay_ms": 300})
    task = created.task
    wire = [m for m in tap.sent_requests("tools/call") if m.get("params", {}).get("name") == "export"]
    detail: dict[str, Any] = {
        "export_name": export_name,
        "created": dump(created),
        "wire_task_param": wire[-1]["params"].get("task") if wire else None,
    }
    problems = []
    if task.status != "working":
        problems.append(f"CreateTaskResult status {task.status!r}, expected 'working'")
    seen, last = await poll_to_terminal(exp, task.taskId, SCENARIO_TIMEOUT_S - 3)
    detail["polls"] = len(seen)
    detail["statuses"] = compress(seen)
    detail["pollIntervals"] = sorted({s["pollInterval"] for s in seen if s["pollInterval"] is not None})
    detail["elapsed_s"] = round(time.monotonic() - t0, 3)
    if last.status != "completed":
        problems.append(f"final status {last.status!r} ({last.statusMessage!r})")
    detail["final"] = dump(last)
    result = await exp.get_task_result(task.taskId, types.CallToolResult)
    text = texts(result)
    detail["result_text"] = text
    detail["result_isError"] = result.isError
    if result.isError:
        problems.append("tasks/result isError=true")
    if export_name not in text:
        problems.append("result text does not name the export")
    detail["problems"] = problems
    report("task_export_completes", not problems, detail)

    meta = result.meta or {}
    related = meta.get(RELATED_TASK_KEY)
    report(
        "task_result_related_task_meta",
        isinstance(related, dict) and related.get("taskId") == task.taskId,
        {"_meta": meta, "expected": {RELATED_TASK_KEY: {"taskId": task.taskId}}},
    )


async def sc_cancel(session: ClientSession, exp: Any) -> None:
    created = await exp.call_tool_as_task("export", {"name": f"cancel-{uuid.uuid4().hex[:8]}", "delay_ms": 5000})
    tid = created.task.taskId
    problems = []
    detail: dict[str, Any] = {"taskId": tid, "created_status": created.task.status}
    cancelled = await exp.cancel_task(tid)
    detail["cancel_result"] = dump(cancelled)
    if cancelled.status != "cancelled":
        problems.append(f"tasks/cancel returned status {cancelled.status!r}")
    got = await exp.get_task(tid)
    detail["get_after_cancel"] = got.status
    if got.status != "cancelled":
        problems.append(f"tasks/get after cancel: {got.status!r}")
    ok2, d2 = await expect_error(exp.cancel_task(tid), INVALID_PARAMS)
    detail["second_cancel"] = d2
    if not ok2:
        problems.append("second tasks/cancel did not fail with -32602")
    # Informational only (spec leaves it undefined, modelcontextprotocol#1956):
    # what does tasks/result answer for a cancelled task?
    try:
        with anyio.fail_after(3):
            r = await exp.get_task_result(tid, types.GetTaskPayloadResult)
        detail["tasks_result_on_cancelled_info"] = {"result": dump(r)}
    except TimeoutError:
        detail["tasks_result_on_cancelled_info"] = {"error": "no answer within 3 s"}
    except Exception as exc:  # noqa: BLE001
        detail["tasks_result_on_cancelled_info"] = describe_exc(exc)
    detail["problems"] = problems
    report("task_cancel", not problems, detail)


async def sc_list_tasks(session: ClientSession, exp: Any, tap: WireTap) -> None:
    before = len(tap.sent_requests("tasks/list"))
    ok, d = await expect_error(exp.list_tasks(), METHOD_NOT_FOUND)
    # The SDK does not gate list_tasks() on capabilities.tasks.list: it sends
    # tasks/list anyway and surfaces the server's error as McpError.
    d["sdk_sent_tasks_list_on_wire"] = len(tap.sent_requests("tasks/list")) > before
    report("list_tasks_not_served", ok, d)


async def sc_archive(session: ClientSession, exp: Any) -> None:
    created = await exp.call_tool_as_task("archive", {"items": ["alpha", "beta"]})
    tid = created.task.taskId
    seen, last = await poll_to_terminal(exp, tid, SCENARIO_TIMEOUT_S - 3)
    detail: dict[str, Any] = {"taskId": tid, "statuses": compress(seen), "final": dump(last)}
    ok = last.status == "completed"
    if ok:
        result = await exp.get_task_result(tid, types.CallToolResult)
        detail["result_text"] = texts(result)
        detail["result_isError"] = result.isError
        ok = not result.isError
    report("archive_required_as_task", ok, detail)


async def sc_archive_plain(session: ClientSession) -> None:
    ok, d = await expect_error(session.call_tool("archive", {"items": ["alpha"]}), METHOD_NOT_FOUND)
    report("archive_required_plain_call_rejected", ok, d)


async def sc_echo_plain(session: ClientSession) -> None:
    token = f"hello-{uuid.uuid4().hex[:8]}"
    res = await session.call_tool("echo", {"text": token})
    text = texts(res)
    report("echo_forbidden_plain_call", (token in text) and not res.isError, {"sent": token, "result": dump(res)})


async def sc_echo_task(session: ClientSession, exp: Any) -> None:
    ok, d = await expect_error(exp.call_tool_as_task("echo", {"text": "x"}), METHOD_NOT_FOUND)
    report("echo_forbidden_as_task_rejected", ok, d)


async def sc_unknown_task(session: ClientSession, exp: Any) -> None:
    bogus = f"no-such-task-{uuid.uuid4().hex}"
    ok, d = await expect_error(exp.get_task(bogus), INVALID_PARAMS)
    d["taskId"] = bogus
    report("unknown_task_get", ok, d)
    # Same MUST for tasks/result and tasks/cancel.
    ok_r, d_r = await expect_error(exp.get_task_result(bogus, types.CallToolResult), INVALID_PARAMS)
    ok_c, d_c = await expect_error(exp.cancel_task(bogus), INVALID_PARAMS)
    report("unknown_task_result_and_cancel", ok_r and ok_c, {"tasks/result": d_r, "tasks/cancel": d_c})


def sc_wire(tap: WireTap) -> None:
    methods: dict[str, int] = {}
    for m in tap.received:
        if "method" in m:
            methods[m["method"]] = methods.get(m["method"], 0) + 1
    sent_task_related_meta = [
        m["method"]
        for m in tap.sent
        if m.get("method", "").startswith("tasks/") and RELATED_TASK_KEY in (m.get("params", {}).get("_meta") or {})
    ]
    report(
        "wire_messages_valid",
        not tap.transport_errors and not tap.invalid_notifications,
        {
            "messages_sent": len(tap.sent),
            "messages_received": len(tap.received),
            "server_initiated_methods": methods,
            "transport_errors": tap.transport_errors[:10],
            "invalid_notifications": tap.invalid_notifications[:5],
            "client_sent_related_task_meta_on": sent_task_related_meta,
        },
    )


# --------------------------------------------------------------------------- driver


async def run_scenario(name: str, fn: Any, *args: Any) -> None:
    n_before = len(RESULTS)
    try:
        with anyio.fail_after(SCENARIO_TIMEOUT_S):
            await fn(*args)
    except TimeoutError:
        report(name, False, {"error": f"scenario timed out after {SCENARIO_TIMEOUT_S} s"})
    except Exception as exc:  # noqa: BLE001
        report(name, False, describe_exc(exc))
    if len(RESULTS) == n_before:  # defensive: every scenario must say something
        report(name, False, {"error": "scenario reported nothing"})


async def main_async(server_argv: list[str], trace: str | None) -> None:
    params = StdioServerParameters(command=server_argv[0], args=server_argv[1:], env=dict(os.environ))
    tap = WireTap(trace)
    async with stdio_client(params) as (read_stream, write_stream):
        c2s_send, c2s_recv = anyio.create_memory_object_stream[SessionMessage](16)
        s2c_send, s2c_recv = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        async with anyio.create_task_group() as tg:
            tg.start_soon(tap.pump_out, c2s_recv, write_stream)
            tg.start_soon(tap.pump_in, read_stream, s2c_send)
            async with ClientSession(
                s2c_recv, c2s_send, read_timeout_seconds=timedelta(seconds=REQUEST_TIMEOUT_S)
            ) as session:
                try:
                    with anyio.fail_after(SCENARIO_TIMEOUT_S):
                        init = await session.initialize()
                except Exception as exc:  # noqa: BLE001
                    d = describe_exc(exc) if not isinstance(exc, TimeoutError) else {"error": "initialize timed out"}
                    report("initialize", False, d)
                    tg.cancel_scope.cancel()
                    return
                await sc_initialize(init)
                exp = session.experimental  # deprecated property in 1.30.0, still the API
                await run_scenario("tools_list", sc_tools_list, session)
                await run_scenario("task_export_completes", sc_export_task, session, exp, tap)
                await run_scenario("task_cancel", sc_cancel, session, exp)
                await run_scenario("list_tasks_not_served", sc_list_tasks, session, exp, tap)
                await run_scenario("archive_required_as_task", sc_archive, session, exp)
                await run_scenario("archive_required_plain_call_rejected", sc_archive_plain, session)
                await run_scenario("echo_forbidden_plain_call", sc_echo_plain, session)
                await run_scenario("echo_forbidden_as_task_rejected", sc_echo_task, session, exp)
                await run_scenario("unknown_task_get", sc_unknown_task, session, exp)
                sc_wire(tap)
            tg.cancel_scope.cancel()


def parse_args(argv: list[str]) -> tuple[list[str], str | None, float]:
    if "--" not in argv:
        sys.exit("usage: client.py [--trace FILE] [--timeout SECONDS] -- <server command and args...>")
    i = argv.index("--")
    opts, server = argv[:i], argv[i + 1 :]
    if not server:
        sys.exit("client.py: no server command after --")
    trace, total = None, DEFAULT_TOTAL_TIMEOUT_S
    it = iter(opts)
    for o in it:
        if o == "--trace":
            trace = next(it, None)
        elif o == "--timeout":
            total = float(next(it, DEFAULT_TOTAL_TIMEOUT_S))
        else:
            sys.exit(f"client.py: unknown option {o}")
    return server, trace, total


def main() -> int:
    server, trace, total = parse_args(sys.argv[1:])

    async def bounded() -> None:
        with anyio.fail_after(total):
            await main_async(server, trace)

    try:
        anyio.run(bounded)
    except TimeoutError:
        report("overall", False, {"error": f"run exceeded {total} s"})
    except BaseException as exc:  # noqa: BLE001  (ExceptionGroup from task groups, spawn failure, ...)
        if isinstance(exc, KeyboardInterrupt):
            raise
        report("overall", False, describe_exc(exc))
        if os.environ.get("INTEROP_DEBUG"):
            import traceback

            traceback.print_exception(exc)
    failed = [r["scenario"] for r in RESULTS if not r["ok"]]
    print(f"{len(RESULTS) - len(failed)} passed, {len(failed)} failed", file=sys.stderr)
    return 1 if failed or not RESULTS else 0


if __name__ == "__main__":
    sys.exit(main())
