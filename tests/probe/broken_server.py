#!/usr/bin/env python3
"""A deliberately broken MCP 2025-11-25 tasks server over stdio, for tests/probe_shapes.rs.

Each defect below is one that real servers have; the test asserts that the probe reports
exactly these checks as failed, so every one of them is shown able to fail. Standard
library only.

  capabilities.tasks.requests.tools.call
    is `true`                              -> shapes.capabilities.tasks-nesting,
                                              shapes.tools.task-support-needs-capability (SHOULD)
  tool `flag` has taskSupport "sometimes"  -> shapes.tools.task-support-values
  Task objects carry no `ttl`              -> shapes.create.task-fields, shapes.get.task-fields
  tasks/get carries the related-task _meta -> shapes.get.no-related-task-meta (SHOULD)
  tasks/get refuses unknown params         -> shapes.get.unknown-params-tolerated
  tasks/result answers at once, without
    the related-task _meta                 -> shapes.result.waits-for-terminal,
                                              shapes.result.related-task-meta
  unknown task ids answered -32603         -> shapes.get.unknown-id, shapes.result.unknown-id,
                                              shapes.cancel.unknown-id
  tasks/list never lists a task, its
    nextCursor is a number, any cursor is
    taken                                  -> shapes.list.page-shape, shapes.list.reaches-own-task,
                                              shapes.list.bad-cursor
  tasks/cancel answers the Task `working`  -> shapes.cancel.answers-cancelled
  tasks/cancel of a terminal task succeeds -> shapes.cancel.terminal-refused
  malformed JSON gets no answer            -> shapes.jsonrpc.malformed-json
  unknown methods answered with {}         -> shapes.jsonrpc.unknown-method
  a taskId of the wrong type or missing
    answered -32603                        -> shapes.get.task-id-wrong-type,
                                              shapes.get.task-id-missing

With the argument `2026` it speaks the 2026-07-28 extension instead (probe it with
`--era 2026-07-28`), with these defects:

  the extension declared as `true`         -> shapes.discover.extension
  tasks/result and tasks/list still served -> shapes.removed.tasks-result, shapes.removed.tasks-list
  tasks/get served without the extension   -> shapes.extension.required-for-tasks-methods
  unknown ids: get -32603, cancel and
    update acknowledged                    -> shapes.get.unknown-id, shapes.cancel.unknown-id,
                                              shapes.update.unknown-id (both SHOULD)
  CreateTaskResult also carries `ttl`      -> shapes.create.flat-task
  tasks/get without resultType             -> shapes.get.detailed-task
  a completed task inlines no result       -> shapes.get.inlined-outcome
  tasks/cancel answers the task itself,
    and refuses a terminal one             -> shapes.cancel.ack, shapes.cancel.terminal-ack
  (and the four JSON-RPC defects above)
"""

import json
import sys
import time
import uuid

TASK_SECONDS = 0.5
MODERN = sys.argv[1:] == ["2026"]
tasks = {}


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def task_object(task_id):
    task = tasks[task_id]
    status = task["status"]
    if status == "working" and time.monotonic() - task["started"] > TASK_SECONDS:
        status = task["status"] = "completed"
    return {
        "taskId": task_id,
        "status": status,
        "createdAt": task["createdAt"],
        "lastUpdatedAt": task["createdAt"],
    }


def handle_2026(method, params):
    meta = params.get("_meta") or {}
    declared = "io.modelcontextprotocol/tasks" in (
        (meta.get("io.modelcontextprotocol/clientCapabilities") or {}).get("extensions") or {})
    del declared  # the defect: never asked for
    if method == "server/discover":
        return {"resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": True}}}
    if method == "tools/list":
        return {"resultType": "complete", "tools": [{"name": "job", "inputSchema": {"type": "object"}}]}
    if method == "tools/call":
        task_id = str(uuid.uuid4())
        tasks[task_id] = {"status": "working", "started": time.monotonic(), "createdAt": now()}
        task = task_object(task_id)
        task.update({"resultType": "task", "ttlMs": 60000, "ttl": 60000})
        return task
    if method == "tasks/result":
        return {"resultType": "complete"}
    if method == "tasks/list":
        return {"resultType": "complete", "tasks": []}
    task_id = params.get("taskId")
    if method == "tasks/get":
        if task_id not in tasks:
            raise RpcError(-32603, "no such task")
        task = task_object(task_id)
        task["ttlMs"] = 60000
        return task
    if method == "tasks/cancel":
        if task_id in tasks and task_object(task_id)["status"] != "working":
            raise RpcError(-32602, "already terminal")
        if task_id in tasks:
            tasks[task_id]["status"] = "cancelled"
            return task_object(task_id)
        return {"resultType": "complete"}
    if method == "tasks/update":
        return {"resultType": "complete"}
    return {}


def handle(method, params):
    if MODERN:
        return handle_2026(method, params)
    if method == "initialize":
        return {
            "protocolVersion": "2025-11-25",
            "capabilities": {
                "tools": {},
                "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": True}}},
            },
            "serverInfo": {"name": "broken", "version": "0"},
        }
    if method == "tools/list":
        return {
            "tools": [
                {"name": "job", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}},
                {"name": "flag", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "sometimes"}},
            ]
        }
    if method == "tools/call":
        task_id = str(uuid.uuid4())
        tasks[task_id] = {"status": "working", "started": time.monotonic(), "createdAt": now()}
        return {"task": task_object(task_id)}
    task_id = params.get("taskId")
    if method in ("tasks/get", "tasks/result", "tasks/cancel") and not isinstance(task_id, str):
        raise RpcError(-32603, "internal error: taskId")
    if method in ("tasks/get", "tasks/result", "tasks/cancel") and task_id not in tasks:
        raise RpcError(-32603, "no such task")
    if method == "tasks/get":
        if set(params) - {"taskId", "_meta"}:
            raise RpcError(-32602, "unknown params")
        result = task_object(task_id)
        result["_meta"] = {"io.modelcontextprotocol/related-task": {"taskId": task_id}}
        return result
    if method == "tasks/result":
        return {"content": [{"type": "text", "text": "done"}]}
    if method == "tasks/cancel":
        return task_object(task_id)
    if method == "tasks/list":
        return {"tasks": [], "nextCursor": 5}
    return {}


class RpcError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def main():
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if "id" not in message:
            continue
        try:
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": handle(message.get("method"), message.get("params") or {})}
        except RpcError as error:
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": error.code, "message": error.message}}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
