#!/usr/bin/env python3
"""A deliberately broken MCP tasks server for the probe's hostile checks
(tests/it/probe_broken.rs). Standard library only. Its wire shapes are right; its state
contract is not. Two modes:

  hostile_server.py stdio    2025-11-25 over stdio, declaring neither tasks.list,
                             tasks.cancel nor tasks.requests.tools.call:
    tool `must` (required) runs without a task   -> hostile.required-tool-called-without-task
    tool `never` (forbidden) accepted as a task  -> hostile.forbidden-tool-called-as-task
    a task param honoured without the capability -> hostile.task-param-without-capability
    tasks/list served though not declared        -> hostile.list-served-undeclared
    tasks/cancel served though not declared      -> hostile.cancel-served-undeclared

  hostile_server.py http     both eras over Streamable HTTP on a free loopback port
                             (prints `listening PORT`), every capability declared; each
                             bearer token is an identity, and:
    tasks are not scoped to their identity       -> hostile.foreign-identity.* (get, result,
                                                    cancel, list, update; and the owner then
                                                    reads its task cancelled)
    a cancelled task's work still completes it   -> hostile.cancelled-never-completes
    a terminal task's lastUpdatedAt moves        -> hostile.terminal-never-changes
    an expired task reads as gone for a second,
      then comes back                            -> hostile.expired-stays-gone
    an idempotency key answers its task for any
      arguments                                  -> hostile.idempotency-key.bound-to-request
    an idempotency key is bound to the session
      that sent it (2025-11-25 sessions)         -> hostile.keyed-retry-after-reconnect
    a tools/call that does not declare the 2026
      extension still gets a task                -> hostile.no-task-without-extension
    every retried tools/call a new task          -> hostile.retried-call (a risk)
    what a create pushes goes to every session's
      GET stream, whoever's                      -> hostile.pushed.tenant-isolation,
                                                    hostile.pushed.progress-to-its-session
    a create pushes "failed" for a task that will
      complete                                   -> hostile.pushed.says-what-was-stored
    tool `ask` (2025-11-25) asks its question on a
      blocked tasks/result and on every GET stream,
      whoever's, declared or not                 -> hostile.pushed.asks-only-who-can-answer
    a 2025-11-25 session that declared the tasks
      extension at initialize, or a request that
      declares it in _meta, gets 2026-07-28 shapes -> hostile.era.extension-at-initialize,
                                                    hostile.era.extension-in-meta
    a 2026-07-28 tools/call with the legacy task
      parameter is refused                       -> hostile.legacy-task-param-ignored
    a subscriptions/listen (2026-07-28) is told of
      every task, whoever's and whatever it named,
      first as "failed"                          -> hostile.pushed.tenant-isolation,
                                                    hostile.pushed.listen-as-asked,
                                                    hostile.pushed.says-what-was-stored
    and under a workload (tasklatch probe --budget) the same defects break
    workload.isolation, workload.terminal-latch, workload.gone-stays-gone and
    workload.one-result.

  hostile_server.py http-workload   as `http`, and also:
    every 5th create answers the previous task's id -> workload.unique-task-ids
    every 7th task never ends                        -> workload.liveness
    a tasks/get of such a task hangs for 5 s         -> workload.every-request-answered
    a tasks/update answering a question never asked
      is refused (the spec: ignored)                 -> workload.updates-acknowledged

  hostile_server.py http-effects DIR   as `http`, except that a cancel holds on the wire,
                                       and:
    every task's work writes DIR/<task id>.json when
      it is done, cancelled or not                   -> hostile.cancelled-without-effect

  hostile_server.py http-log FILE      as `http-effects`, except that:
    every task's work appends `done label=<its label
      argument>` to the shared log FILE, cancelled
      or not (the line names no task id)             -> hostile.cancelled-without-effect
                                                        (--effect-log FILE)
    tasks/result (2025-11-25) and tasks/update
      (2026-07-28) are advertised but answered
      -32601 at once                                 -> shapes.methods.advertised-served
    a task ends at once unless `delay_ms` (at most
      600) makes it last                             (the probe raises it: a note)
"""

import http.server
import json
import os
import sys
import threading
import time
import uuid

TASK_SECONDS = 0.5
LISTEN_SECONDS = 1.5
SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"
CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
# 2025-11-25 sessions whose initialize declared the tasks extension.
declared_sessions = set()
GONE_SECONDS = 1.0
KEY_META = "dev.tasklatch/idempotency-key"
ENVELOPE_VERSION = "io.modelcontextprotocol/protocolVersion"
RELATED = "io.modelcontextprotocol/related-task"
MODE = sys.argv[1] if len(sys.argv) > 1 else "stdio"
EFFECTS = sys.argv[2] if MODE == "http-effects" else None
EFFECT_LOG = sys.argv[2] if MODE == "http-log" else None
effect_log_lock = threading.Lock()
# A cancel the work does not overwrite (the effect modes: the cancel "wins", the effect
# happens anyway).
KEEPS_CANCEL = MODE in ("http-effects", "http-log")
tasks = {}
keys = {}
creates = []
# The questions asked and not yet answered: request id -> (task id, answered event).
asking = {}
asking_lock = threading.Lock()
# Every open GET stream (its socket's writer), whoever opened it.
streams = []
streams_lock = threading.Lock()


def event(message):
    """`message` as one server-sent event."""
    return ("data: %s\n\n" % json.dumps(message)).encode()


def push(message):
    """Sends `message` on every open GET stream: no owner, no session looked at."""
    data = event(message)
    with streams_lock:
        for stream in list(streams):
            try:
                stream.write(data)
                stream.flush()
            except OSError:
                streams.remove(stream)


def pushed_on_create(task_id, params, modern):
    if modern:
        return
    fields = dict(task_fields(task_id, False), status="failed")
    push({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": fields})
    token = (params.get("_meta") or {}).get("progressToken")
    if token is not None:
        push({"jsonrpc": "2.0", "method": "notifications/progress",
              "params": {"progressToken": token, "progress": 1}})


class RpcError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def stamp(seconds):
    whole = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return "%s.%03dZ" % (whole, int(seconds * 1000) % 1000)


def status_of(task):
    if task.get("stuck"):
        return "working"
    if task.get("asks"):
        return "input_required"
    elapsed = time.monotonic() - task["started"]
    if KEEPS_CANCEL and task["status"] == "cancelled":
        return "cancelled"
    # The work does not look at the cancel: once it is done, it overwrites it.
    if elapsed > task["seconds"]:
        return "completed"
    return task["status"]


def task_fields(task_id, modern):
    task = tasks[task_id]
    elapsed = time.monotonic() - task["started"]
    ttl_s = task["ttl"] / 1000.0
    if ttl_s <= elapsed < ttl_s + GONE_SECONDS:
        raise RpcError(-32602, "Task has expired")
    status = status_of(task)
    # A finished task is "updated" at every read.
    updated = time.time() if status == "completed" else task["created"]
    fields = {
        "taskId": task_id,
        "status": status,
        "createdAt": stamp(task["created"]),
        "lastUpdatedAt": stamp(updated),
    }
    if modern:
        fields["ttlMs"] = task["ttl"]
    else:
        fields["ttl"] = task["ttl"]
    return fields


def create(owner, params, modern, session=None):
    meta = params.get("_meta") or {}
    key = meta.get(KEY_META)
    if key is not None and not modern:
        key = (session, key)
    if key is not None and key in keys:
        return keys[key]
    if MODE == "http-workload" and len(creates) % 5 == 4:
        creates.append(creates[-1])
        return creates[-1]
    task_id = str(uuid.uuid4())
    asked = (params.get("task") or {}).get("ttl")
    seconds = TASK_SECONDS
    if MODE == "http-log":
        delay_ms = (params.get("arguments") or {}).get("delay_ms")
        seconds = min(delay_ms, 600) / 1000.0 if isinstance(delay_ms, int) else 0.02
    tasks[task_id] = {
        "seconds": seconds,
        "owner": owner,
        "status": "working",
        "started": time.monotonic(),
        "created": time.time(),
        "ttl": asked if isinstance(asked, int) else (1000 if modern else 60000),
    }
    if MODE == "http-workload" and len(creates) % 7 == 6:
        tasks[task_id]["stuck"] = True
        tasks[task_id]["ttl"] = 3600000
    creates.append(task_id)
    if key is not None:
        keys[key] = task_id
    if EFFECTS is not None:
        # The work performs its effect when done, whether or not its task was cancelled.
        path = os.path.join(EFFECTS, task_id + ".json")
        threading.Timer(TASK_SECONDS, lambda: open(path, "w").write("{}")).start()
    if EFFECT_LOG is not None:
        label = (params.get("arguments") or {}).get("label")
        threading.Timer(seconds, lambda: log_effect("done label=%s\n" % label)).start()
    return task_id


def log_effect(line):
    with effect_log_lock, open(EFFECT_LOG, "a") as log:
        log.write(line)


def find(params):
    task_id = params.get("taskId")
    if not isinstance(task_id, str) or task_id not in tasks:
        raise RpcError(-32602, "Task not found")
    return task_id


def handle_stdio(method, params):
    if method == "initialize":
        return {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "tasks": {}},
            "serverInfo": {"name": "hostile", "version": "0"},
        }
    if method == "tools/list":
        return {"tools": [
            {"name": "job", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}},
            {"name": "must", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}},
            {"name": "never", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "forbidden"}},
        ]}
    if method == "tools/call":
        if "task" in params:
            task_id = create("stdio", params, False)
            return {"task": task_fields(task_id, False)}
        return {"content": [{"type": "text", "text": "ran"}]}
    if method == "tasks/get":
        return task_fields(find(params), False)
    if method == "tasks/cancel":
        task_id = find(params)
        tasks[task_id]["status"] = "cancelled"
        tasks[task_id]["started"] = time.monotonic() + 3600
        return task_fields(task_id, False)
    if method == "tasks/list":
        return {"tasks": [task_fields(task_id, False) for task_id in tasks]}
    if method == "tasks/result":
        find(params)
        return {"content": [{"type": "text", "text": "done"}], "_meta": {RELATED: {"taskId": params["taskId"]}}}
    raise RpcError(-32601, "Method not found")


def declares_tasks(capabilities):
    extensions = (capabilities or {}).get("extensions") if isinstance(capabilities, dict) else None
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


def handle_http(owner, method, params, session=None):
    meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    # The extension "enables" 2026-07-28 shapes in any session that declares it.
    modern = (ENVELOPE_VERSION in meta or session in declared_sessions
              or declares_tasks(meta.get(CAPABILITIES)))
    if method == "initialize":
        return {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}},
            "serverInfo": {"name": "hostile", "version": "0"},
        }
    if method == "server/discover":
        return {"resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}}
    if method == "tools/list":
        tool = {"name": "job", "inputSchema": {"type": "object", "properties": {
            "label": {"type": "string"}, "delay_ms": {"type": "integer", "maximum": 600}}}}
        if modern:
            return {"tools": [tool]}
        tool["execution"] = {"taskSupport": "optional"}
        ask = {"name": "ask", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}}
        return {"tools": [tool, ask]}
    if method == "tools/call":
        if modern and "task" in params and ENVELOPE_VERSION in meta:
            raise RpcError(-32602, "params.task is not a 2026-07-28 parameter")
        task_id = create(owner, params, modern, session)
        if params.get("name") == "ask" and not modern:
            tasks[task_id]["asks"] = True
        pushed_on_create(task_id, params, modern)
        if modern:
            return dict(task_fields(task_id, True), resultType="task")
        return {"task": task_fields(task_id, False)}
    if method == "tasks/get":
        task_id = find(params)
        if tasks[task_id].get("stuck"):
            time.sleep(5)
        fields = task_fields(task_id, modern)
        if modern:
            fields["resultType"] = "complete"
            if fields["status"] == "completed":
                fields["result"] = {"content": [{"type": "text", "text": "done"}]}
        return fields
    if method == "tasks/cancel":
        task_id = find(params)
        if status_of(tasks[task_id]) == "completed":
            if modern:
                return {"resultType": "complete"}
            raise RpcError(-32602, "Cannot cancel task: already in terminal status 'completed'")
        tasks[task_id]["status"] = "cancelled"
        return {"resultType": "complete"} if modern else task_fields(task_id, False)
    if method == "tasks/update" and MODE != "http-log":
        find(params)
        if MODE == "http-workload" and params.get("inputResponses"):
            raise RpcError(-32600, "no such input request")
        return {"resultType": "complete"}
    if method == "tasks/list" and not modern:
        return {"tasks": [task_fields(task_id, False) for task_id in list(tasks)
                          if not is_gone(task_id)]}
    if method == "tasks/result" and not modern and MODE != "http-log":
        task_id = find(params)
        while status_of(tasks[task_id]) != "completed":
            time.sleep(0.05)
        return {"content": [{"type": "text", "text": "done"}], "_meta": {RELATED: {"taskId": task_id}}}
    raise RpcError(-32601, "Method not found")


def is_gone(task_id):
    try:
        task_fields(task_id, False)
        return False
    except RpcError:
        return True


def answer(message, handler):
    if not isinstance(message, dict) or "id" not in message:
        return None
    try:
        result = handler(message.get("method"), message.get("params") or {})
        return {"jsonrpc": "2.0", "id": message["id"], "result": result}
    except RpcError as error:
        return {"jsonrpc": "2.0", "id": message["id"], "error": {"code": error.code, "message": error.message}}


def serve_stdio():
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            reply = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
        else:
            reply = answer(message, handle_stdio)
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        if "text/event-stream" not in (self.headers.get("accept") or ""):
            self.send_response(405)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        self.wfile.flush()
        with streams_lock:
            streams.append(self.wfile)
        # Held open until the client goes away (a write fails) or the server stops.
        while True:
            time.sleep(0.2)
            with streams_lock:
                if self.wfile not in streams:
                    return

    def listen(self, message):
        """A subscriptions/listen: every task, whoever's, named or not, first as failed."""
        subscription = message.get("id")
        asked = ((message.get("params") or {}).get("notifications") or {}).get("taskIds") or []
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()

        def send(method, params):
            params = dict(params, _meta={SUBSCRIPTION: subscription})
            data = {"jsonrpc": "2.0", "method": method, "params": params}
            self.wfile.write(event(data))
            self.wfile.flush()

        def tell(failed):
            for task_id in list(tasks):
                try:
                    fields = task_fields(task_id, True)
                except RpcError:
                    continue
                if failed:
                    fields["status"] = "failed"
                send("notifications/tasks", fields)

        try:
            send("notifications/subscriptions/acknowledged", {"notifications": {"taskIds": asked}})
            tell(True)
            deadline = time.monotonic() + LISTEN_SECONDS
            while time.monotonic() < deadline:
                time.sleep(0.1)
                tell(False)
            closing = {"jsonrpc": "2.0", "id": subscription, "result": {"resultType": "complete"}}
            self.wfile.write(event(closing))
        except OSError:
            pass
        self.close_connection = True

    def ask(self, message):
        """A blocked tasks/result of an asking task: its question goes on this call's stream
        and on every GET stream; the task goes on once the question is answered."""
        task_id = (message.get("params") or {}).get("taskId")
        question_id = "hostile-ask-" + str(uuid.uuid4())
        answered = threading.Event()
        with asking_lock:
            asking[question_id] = (task_id, answered)
        question = {"jsonrpc": "2.0", "id": question_id, "method": "elicitation/create",
                    "params": {"message": "Go on?", "requestedSchema": {
                        "type": "object", "properties": {"go": {"type": "boolean"}}, "required": ["go"]},
                        "_meta": {RELATED: {"taskId": task_id}}}}
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        try:
            self.wfile.write(event(question))
            self.wfile.flush()
            push(question)
            if answered.wait(10):
                while status_of(tasks[task_id]) != "completed":
                    time.sleep(0.05)
                done = {"jsonrpc": "2.0", "id": message.get("id"), "result": {
                    "content": [{"type": "text", "text": "done"}], "_meta": {RELATED: {"taskId": task_id}}}}
                self.wfile.write(event(done))
        except OSError:
            pass
        self.close_connection = True

    def answered(self, message):
        """A client's response to a question: its task goes on."""
        with asking_lock:
            task_id, answered = asking.pop(message.get("id"), (None, None))
        if task_id in tasks:
            tasks[task_id]["asks"] = False
            tasks[task_id]["started"] = time.monotonic()
            answered.set()
        self.send_response(202)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        owner = self.headers.get("authorization") or "anonymous"
        session = self.headers.get("mcp-session-id")
        issued = None
        try:
            message = json.loads(body)
        except ValueError:
            reply = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
        else:
            method = message.get("method") if isinstance(message, dict) else None
            if method == "subscriptions/listen":
                return self.listen(message)
            if isinstance(message, dict) and method is None and "id" in message:
                return self.answered(message)
            params = message.get("params") if isinstance(message, dict) else None
            task_id = params.get("taskId") if isinstance(params, dict) else None
            task = tasks.get(task_id) if isinstance(task_id, str) else None
            if method == "tasks/result" and task is not None and task.get("asks"):
                return self.ask(message)
            if isinstance(message, dict) and message.get("method") == "initialize":
                issued = session = str(uuid.uuid4())
                if declares_tasks((message.get("params") or {}).get("capabilities")):
                    declared_sessions.add(issued)
            reply = answer(message, lambda method, params: handle_http(owner, method, params, session))
        if reply is None:
            self.send_response(202)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        data = json.dumps(reply).encode()
        self.send_response(200)
        if issued is not None:
            self.send_header("mcp-session-id", issued)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def serve_http():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # A client that gave up on a hung answer closes its socket: not worth a traceback.
    server.handle_error = lambda request, client_address: None
    print("listening %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    serve_http() if MODE.startswith("http") else serve_stdio()
