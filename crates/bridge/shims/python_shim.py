"""tasklatch store bridge, the Python side (protocol: docs/store-bridge.md).

Loads the user's module, resolves its factory, and answers one JSON request per stdin line
with one JSON answer per stdout line. Every request runs as its own asyncio task, so calls
overlap when tasklatch sends several before reading (the race engine). What a store raises
is an answer (`thrown`), never a crash of the shim. The store's clock: `datetime.now()`,
`datetime.utcnow()` and `time.time()` as the store's modules see them are replaced by a
clock that starts at a fixed instant and moves only on `clock` requests (unless `real`).

    python python_shim.py SPEC INTERFACE CLOCK
      SPEC       module:factory, the module a dotted name (imported from the working
                 directory) or a path to a .py file; the factory a function or a class
      INTERFACE  py-mcp (the Python SDK's `mcp.shared.experimental.tasks.store.TaskStore`)
      CLOCK      fake | real
"""

import asyncio
import datetime as _datetime
import importlib
import importlib.util
import inspect
import json
import os
import sys
import time as _time
import typing

PROTOCOL = 1
FAKE_EPOCH_MS = 1_700_000_000_000
METHODS = {
    "py-mcp": ["create_task", "get_task", "update_task", "store_result", "get_result",
               "list_tasks", "delete_task"],
}

# The protocol owns the real stdout; the user's prints go to stderr.
_protocol = os.fdopen(os.dup(1), "w", buffering=1)
sys.stdout = sys.stderr


def say(message):
    _protocol.write(json.dumps(message, default=str) + "\n")
    _protocol.flush()


def describe(error):
    return {"type": type(error).__name__, "message": str(error),
            "code": getattr(error, "code", None) if isinstance(getattr(error, "code", None), (int, str)) else None}


def fatal(stage, error):
    say({"fatal": {"stage": stage, "message": "%s: %s" % (type(error).__name__, error)}})
    sys.exit(2)


class FakeClock:
    now_ms = FAKE_EPOCH_MS


_RealDatetime = _datetime.datetime
_real_time = _time.time


class FakeDatetime(_RealDatetime):
    """`datetime` whose `now`/`utcnow` read the bridge's clock."""

    @classmethod
    def now(cls, tz=None):
        moment = _RealDatetime.fromtimestamp(FakeClock.now_ms / 1000, tz=_datetime.timezone.utc)
        if tz is None:
            return moment.astimezone().replace(tzinfo=None)
        return moment.astimezone(tz)

    @classmethod
    def utcnow(cls):
        return _RealDatetime.fromtimestamp(FakeClock.now_ms / 1000, tz=_datetime.timezone.utc).replace(tzinfo=None)


def fake_time():
    return FakeClock.now_ms / 1000


def install_fake_clock():
    """Every loaded module's `datetime` class and `time` function, as its globals hold them."""
    for module in list(sys.modules.values()):
        names = getattr(module, "__dict__", None)
        if not isinstance(names, dict) or module is sys.modules[__name__]:
            continue
        for name, value in list(names.items()):
            if value is _RealDatetime:
                setattr(module, name, FakeDatetime)
            elif value is _real_time and module is not _time:
                setattr(module, name, fake_time)
    _time.time = fake_time


def load(spec):
    module_part, _, factory_name = spec.rpartition(":")
    if not module_part or not factory_name:
        raise ValueError("expected MODULE:FACTORY, got %r" % spec)
    sys.path.insert(0, os.getcwd())
    if module_part.endswith(".py") or os.sep in module_part:
        path = os.path.abspath(module_part)
        sys.path.insert(0, os.path.dirname(path))
        loader_spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
        if loader_spec is None:
            raise ImportError("cannot load %s" % path)
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[loader_spec.name] = module
        loader_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_part)
    return module, factory_name


def encode(value):
    """A store's answer as JSON: pydantic models dumped by alias, tuples as lists."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, (list, tuple)):
        return [encode(item) for item in value]
    if isinstance(value, dict):
        return {key: encode(item) for key, item in value.items()}
    if isinstance(value, _RealDatetime):
        return value.isoformat()
    return value


def decode(method, args):
    """Arguments as the method's annotations ask: a pydantic model parameter is validated
    from its JSON (`TaskMetadata`, `Result`), the rest passed as they are."""
    try:
        hints = typing.get_type_hints(method)
    except Exception:
        hints = {}
    params = [p for p in inspect.signature(method).parameters.values()]
    decoded = []
    for index, value in enumerate(args):
        hint = hints.get(params[index].name) if index < len(params) else None
        if value is not None and hasattr(hint, "model_validate"):
            value = hint.model_validate(value)
        decoded.append(value)
    return decoded


class Shim:
    def __init__(self, factory, interface, clock):
        self.factory = factory
        self.interface = interface
        self.clock = clock
        self.stores = {}
        self.next_store = 1

    async def open(self, request):
        options = {"dir": request.get("dir")}
        store = self.factory(**options) if _takes_dir(self.factory) else self.factory()
        if inspect.isawaitable(store):
            store = await store
        missing = [name for name in METHODS[self.interface] if not callable(getattr(store, name, None))]
        if missing:
            raise TypeError("the store the factory made lacks %s of the %s interface"
                            % (", ".join(missing), self.interface))
        store_id = self.next_store
        self.next_store += 1
        self.stores[store_id] = store
        return {"store": store_id}

    async def call(self, request):
        store = self.stores.get(request.get("store"))
        if store is None:
            raise LookupError("bridge: no open store %r" % request.get("store"))
        name = request.get("method")
        if name not in METHODS[self.interface]:
            raise LookupError("bridge: %s is not in %s" % (name, self.interface))
        method = getattr(store, name)
        result = method(*decode(method, request.get("args") or []))
        if inspect.isawaitable(result):
            result = await result
        return encode(result)

    async def close(self, request):
        store = self.stores.pop(request.get("store"), None)
        for name in ("cleanup", "close", "aclose"):
            closer = getattr(store, name, None)
            if callable(closer):
                done = closer()
                if inspect.isawaitable(done):
                    await done
                break
        return None

    async def clock_op(self, request):
        if self.clock != "fake":
            raise RuntimeError("bridge: the clock is real (--clock real)")
        FakeClock.now_ms += max(0, int(request.get("advance_ms") or 0))
        return {"now_ms": FakeClock.now_ms}

    async def answer(self, line):
        try:
            request = json.loads(line)
        except ValueError as error:
            say({"id": None, "bridge_error": "not JSON: %s" % error})
            return
        handler = {"open": self.open, "call": self.call, "close": self.close,
                   "clock": self.clock_op}.get(request.get("op"))
        if handler is None:
            say({"id": request.get("id"), "bridge_error": "unknown op %r" % request.get("op")})
            return
        try:
            say({"id": request.get("id"), "ok": await handler(request)})
        except Exception as error:  # an error is data: the shim serves on
            say({"id": request.get("id"), "thrown": describe(error)})


def _takes_dir(factory):
    try:
        return "dir" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False


async def serve(shim):
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    pending = set()
    while True:
        line = await reader.readline()
        if not line:
            break
        if line.strip():
            task = asyncio.ensure_future(shim.answer(line.decode()))
            pending.add(task)
            task.add_done_callback(pending.discard)
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)


def main():
    if len(sys.argv) != 4:
        fatal("usage", ValueError("python_shim.py MODULE:FACTORY INTERFACE CLOCK"))
    spec, interface, clock = sys.argv[1:]
    if interface not in METHODS:
        fatal("interface", ValueError("unknown interface %s (Python knows: %s)" % (interface, ", ".join(METHODS))))
    try:
        module, factory_name = load(spec)
    except BaseException as error:  # a module that does not load is named, never a traceback
        fatal("load", error)
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        fatal("factory", LookupError("%s has no callable `%s`" % (spec.rpartition(":")[0], factory_name)))
    if clock == "fake":
        install_fake_clock()
    say({"hello": {"bridge": PROTOCOL, "language": "python", "runtime": sys.version.split()[0],
                   "interface": interface, "module": spec.rpartition(":")[0], "factory": factory_name,
                   "clock": clock, "clock_start_ms": FAKE_EPOCH_MS if clock == "fake" else None}})
    asyncio.run(serve(Shim(factory, interface, clock)))


if __name__ == "__main__":
    main()
