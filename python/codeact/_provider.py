"""LocalCodeActProvider, HyperlightCodeActProvider and Session over the native module.

Each method is one call of the C++ library (include/codeact/provider.hpp, session.hpp): the
result is the library's result JSON (docs/result.md) read into ExecutionResult, field for field.
"""

import asyncio
import base64
import dataclasses
import functools
import inspect
import json
import os
import sys
import threading
import typing

from . import _native
from ._schema import description_from_callable, schema_from_callable

CodeActError = _native.CodeActError

# ---- The result contract ------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class StreamEvent:
    """One event of stream(): kind "stdout" or "stderr" with a chunk of text as `data`, or the
    last one, kind "result", with the ExecutionResult as `data`."""

    kind: str
    data: typing.Any

    @property
    def result(self):
        return self.data if self.kind == "result" else None


@dataclasses.dataclass(frozen=True)
class CapturedFile:
    path: str
    media_type: str
    size: int
    data: bytes


@dataclasses.dataclass(frozen=True)
class ExecutionResult:
    """One run's result: the fields of docs/result.md (`raw` is the JSON object itself)."""

    schema_version: int
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    exit_code: int
    success: bool
    outcome: str
    output_present: bool
    output: typing.Any
    error: typing.Optional[dict]
    violations: list
    files: list
    omitted_files: list
    tool_calls: int
    duration_ms: int
    backend: str
    isolation: str
    interpreter: typing.Optional[str]
    message: str
    usage: dict
    session: typing.Optional[str]
    session_state: typing.Optional[str]
    raw: dict = dataclasses.field(repr=False, compare=False)

    @classmethod
    def from_json(cls, text):
        raw = json.loads(text)
        values = {}
        for field in dataclasses.fields(cls):
            if field.name == "raw":
                continue
            values[field.name] = raw.get(field.name)
        values["files"] = [
            CapturedFile(f["path"], f.get("media_type", ""), f.get("size", 0),
                         base64.b64decode(f.get("data_base64", "")))
            for f in raw.get("files") or []
        ]
        return cls(raw=raw, **values)

    def to_json(self):
        """The result JSON as the library wrote it."""
        return json.dumps(self.raw)


# ---- Host tools ---------------------------------------------------------------------------


@dataclasses.dataclass
class Tool:
    """A Python callable as a host tool. The schema comes from its type hints unless given."""

    fn: typing.Callable
    name: str = ""
    description: str = ""
    parameters: typing.Optional[dict] = None
    requires_approval: bool = False

    def __post_init__(self):
        self.name = self.name or self.fn.__name__
        self.description = self.description or description_from_callable(self.fn)
        if self.parameters is None:
            self.parameters = schema_from_callable(self.fn)


def tool(fn=None, *, name="", description="", requires_approval=False):
    """Decorator form of Tool: `@codeact.tool(requires_approval=True)`."""
    if fn is None:
        return functools.partial(tool, name=name, description=description,
                                 requires_approval=requires_approval)
    return Tool(fn, name=name, description=description, requires_approval=requires_approval)


def _encode(value):
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    try:
        return (True, json.dumps(value, ensure_ascii=False), "")
    except (TypeError, ValueError) as e:
        return (False, "TypeError", f"the tool's result is not JSON: {e}")


async def _stream_run(owner, call):
    """The events of one run of `call(cancel, on_output=...)` through `owner._wait`: the chunks
    as the library's delivery thread hands them over (onto this loop), then the result."""
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    def on_output(kind, data):  # the library's thread, with the GIL
        event = StreamEvent(kind, data.decode("utf-8", "replace"))
        loop.call_soon_threadsafe(queue.put_nowait, event)

    run = asyncio.ensure_future(owner._wait(functools.partial(call, on_output=on_output)))
    getter = None
    try:
        while True:
            getter = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({getter, run}, return_when=asyncio.FIRST_COMPLETED)
            if getter in done:
                yield getter.result()
                continue
            getter.cancel()
            break
        # Every chunk was handed over before the run returned, so it is queued already.
        while not queue.empty():
            yield queue.get_nowait()
        yield StreamEvent("result", run.result())
    finally:
        if getter is not None and not getter.done():
            getter.cancel()
        if not run.done():
            run.cancel()  # _wait cancels the run and waits for its end
            try:
                await run
            except BaseException:  # noqa: B036 - the run's own end, cancelled or not
                pass


async def _call_async(fn, kwargs):
    try:
        value = fn(**kwargs)
        if inspect.isawaitable(value):
            value = await value
    except asyncio.CancelledError:
        raise
    except Exception as e:  # the code gets it as ToolError
        return (False, type(e).__name__, str(e))
    return _encode(value)


def _make_handler(fn, loop_of):
    """The callable the native module calls in a tool thread: a result tuple, or (async) a
    concurrent Future of one running on the provider's event loop."""
    is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None))

    def handler(kwargs_json):
        try:
            kwargs = json.loads(kwargs_json)
        except ValueError as e:
            return (False, "ValueError", f"arguments are not JSON: {e}")
        if not isinstance(kwargs, dict):
            return (False, "TypeError", "arguments must be a JSON object")
        if not is_async:
            try:
                value = fn(**kwargs)
            except Exception as e:
                return (False, type(e).__name__, str(e))
            if not inspect.isawaitable(value):
                return _encode(value)

            async def awaited():
                return await _call_async(lambda: value, {})
            coro = awaited()
        else:
            coro = _call_async(fn, kwargs)
        loop = loop_of()
        if loop is None or loop.is_closed() or not loop.is_running():
            return asyncio.run(coro)  # no loop is waiting for this run: one of its own
        return asyncio.run_coroutine_threadsafe(coro, loop)

    return handler


def _as_tool(item):
    if isinstance(item, Tool):
        return item
    if callable(item):
        return Tool(item)
    raise TypeError(f"a host tool is a callable or a codeact.Tool, not {type(item).__name__}")


# ---- Providers ------------------------------------------------------------------------------

_validator_lock = threading.Lock()
_validator_started = False


def _start_validator():
    """Starts the library's validator in this interpreter, from the runtime's data directory.

    The embedded validator joins a running interpreter instead of starting one (an interpreter
    cannot be started twice in a process): it imports the validator package (validator/) as the
    top-level package `validator` from the data directory. The directory leaves sys.path again
    at once (the package's submodules import through its own __path__); `validator` stays
    taken in sys.modules, which docs/python.md lists as a limitation.
    """
    global _validator_started
    with _validator_lock:
        if _validator_started:
            return
        data_dir = os.environ.get("CODEACT_DATA_DIR") or _source_data_dir()
        existing = sys.modules.get("validator")
        if existing is not None and not (getattr(existing, "__file__", "") or "").startswith(
                os.path.join(data_dir, "validator")):
            raise CodeActError(
                "the module name `validator` is taken in this process by "
                f"{getattr(existing, '__file__', existing)!r}; codeact's validator package needs it")
        before = list(sys.path)
        try:
            _native.start_validator(data_dir)
        finally:
            sys.path[:] = [p for p in sys.path if p != data_dir or p in before]
        _validator_started = True


def _source_data_dir():
    # A build tree: the source tree holds validator/ and resources/ (python/codeact/../..).
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class CodeActProvider:
    """The provider (include/codeact/provider.hpp). Use LocalCodeActProvider or
    HyperlightCodeActProvider to make one.

    Options (each maps to the C++ ProviderOptions field of the same meaning; docs/python.md):
      tools        callables (sync or async) or codeact.Tool: host tools, called from the code
                   as `await name(...)`; their schema comes from the type hints.
      mounts       dicts {"host_path", "mount_path", "mode": "rw"|"ro", ...} (FileMount).
      limits       dict of ExecutionLimits fields, e.g. {"wall_timeout_ms": 10000}.
      isolation    "auto" | "process" | "namespaces" (local) ; "microvm" (hyperlight).
      approval     "never_require" | "always_require" | a callable(request: dict) -> bool,
                   asked when a run references a tool marked requires_approval.
      policy       dict of ValidationPolicy fields (codeact's PolicyFromJson keys).
      network_targets, environment, working_directory, python_path, warm_pool_size,
      validate, validate_in_child, runtime_guard, site_packages, accept_weaker_limits,
      sessions     dict {"idle_expiry_ms", "max_sessions", "total_memory_bytes"}.
    """

    _backend = "local"

    def __init__(self, tools=(), mounts=(), limits=None, isolation="auto", approval="never_require",
                 *, policy=None, network_targets=(), environment=None, working_directory="",
                 python_path="", warm_pool_size=2, validate=True, validate_in_child=False,
                 runtime_guard=True, site_packages=False, accept_weaker_limits=False,
                 sessions=None, hyperlight_inputs=(), hyperlight_sdk_path=""):
        _start_validator()
        config = _native.ProviderConfig()
        config.backend = self._backend
        config.isolation = isolation
        config.limits = dict(limits or {})
        config.policy_json = json.dumps(policy) if policy else ""
        if callable(approval):
            self._approve = approval
        elif approval in ("never_require", "always_require"):
            self._approve = None
            config.always_require_approval = approval == "always_require"
        else:
            raise ValueError("approval must be never_require, always_require or a callable")
        config.validate = validate
        config.working_directory = str(working_directory or "")
        if environment is not None:
            config.environment = dict(environment)
        config.python_path = str(python_path or "")
        config.warm_pool_size = warm_pool_size
        config.validate_in_child = validate_in_child
        config.runtime_guard = runtime_guard
        config.site_packages = site_packages
        config.accept_weaker_limits = accept_weaker_limits
        sessions = sessions or {}
        if "idle_expiry_ms" in sessions:
            config.session_idle_expiry_ms = sessions["idle_expiry_ms"]
        if "max_sessions" in sessions:
            config.max_sessions = sessions["max_sessions"]
        if "total_memory_bytes" in sessions:
            config.sessions_total_memory_bytes = sessions["total_memory_bytes"]
        config.hyperlight_inputs = [str(p) for p in hyperlight_inputs]
        config.hyperlight_sdk_path = str(hyperlight_sdk_path or "")
        self._native = _native.Provider(config)
        self._loop = None
        self._tools = {}
        self.add_tools(tools)
        for mount in mounts:
            self.add_mount(mount)
        for target in network_targets:
            self._native.add_network_target(target)

    # -- registries --
    def add_tools(self, tools):
        for item in ([tools] if callable(tools) or isinstance(tools, Tool) else tools):
            t = _as_tool(item)
            self._native.add_tool(t.name, t.description, json.dumps(t.parameters),
                                  t.requires_approval, _make_handler(t.fn, self._current_loop))
            self._tools[t.name] = t

    add_tool = add_tools

    def remove_tool(self, name):
        self._tools.pop(name, None)
        return self._native.remove_tool(name)

    def get_tools(self):
        return [self._tools[n] for n in self._native.tool_names() if n in self._tools]

    def add_mount(self, mount):
        if isinstance(mount, (tuple, list)):
            mount = {"host_path": str(mount[0]), "mount_path": mount[1],
                     **({"mode": mount[2]} if len(mount) > 2 else {})}
        self._native.add_mount(dict(mount))

    def remove_mount(self, mount_path):
        return self._native.remove_mount(mount_path)

    def get_mounts(self):
        return self._native.mounts()

    def add_network_target(self, target):
        self._native.add_network_target(target)

    def remove_network_target(self, target):
        return self._native.remove_network_target(target)

    def get_network_targets(self):
        return self._native.network_targets()

    def set_limits(self, **limits):
        self._native.set_limits(limits)

    @property
    def backend(self):
        return self._native.backend

    @property
    def isolation(self):
        return self._native.isolation

    # -- the model's side --
    def describe(self, format="openai", *, tools_visible_to_model=False):
        """{"definition": the execute_code tool in `format`'s shape ("openai",
        "openai-responses", "anthropic", "mcp"), "instructions": the agent's instructions}."""
        d = self._native.describe(format, tools_visible_to_model)
        return {"definition": json.loads(d["definition"]), "instructions": d["instructions"]}

    def instructions(self, *, tools_visible_to_model=False):
        return self.describe("mcp", tools_visible_to_model=tools_visible_to_model)["instructions"]

    # -- runs --
    def _current_loop(self):
        return self._loop

    async def _wait(self, call):
        """Runs `call(cancel)` in a thread (the native side releases the GIL) and awaits it; the
        awaiting task's cancellation cancels the run, whose end is awaited before it propagates."""
        self._loop = asyncio.get_running_loop()
        cancel = _native.Cancellation()
        future = self._loop.run_in_executor(None, call, cancel)
        try:
            return ExecutionResult.from_json(await asyncio.shield(future))
        except asyncio.CancelledError:
            cancel.cancel("the awaiting task was cancelled")
            try:
                await asyncio.shield(future)
            except Exception:
                pass
            raise

    async def execute(self, code, *, approved=None):
        """Runs `code` once (a fresh interpreter) and returns its ExecutionResult."""
        return await self._wait(functools.partial(self._native.execute, code, approved,
                                                  self._approve))

    def execute_sync(self, code, *, approved=None):
        """execute() for callers without an event loop; async tools run on a loop of their own."""
        return ExecutionResult.from_json(self._native.execute(code, approved, self._approve))

    async def stream(self, code, *, approved=None):
        """Runs `code` once and yields its StreamEvents while it runs: "stdout" and "stderr"
        chunks (`data` is text; together they are the result's stdout and stderr), then one
        "result" event whose `data` is the ExecutionResult. Cancelling the consuming task, or
        leaving the loop early, cancels the run (docs/python.md, Streaming)."""
        async for event in _stream_run(self, functools.partial(
                self._native.execute, code, approved, self._approve)):
            yield event

    async def create_session(self, name=""):
        """A session (include/codeact/session.hpp): one interpreter whose globals persist."""
        self._loop = asyncio.get_running_loop()
        native = await self._loop.run_in_executor(None, self._native.open_session, name)
        return Session(self, native)


class LocalCodeActProvider(CodeActProvider):
    """The local backend: the code runs in a sandboxed child process (isolation "process" or
    "namespaces"; "auto" picks namespaces where the kernel allows it)."""

    _backend = "local"


class HyperlightCodeActProvider(CodeActProvider):
    """The hyperlight backend: the code runs in a Hyperlight micro-VM through the
    hyperlight-sandbox package (docs/hyperlight.md). Where no micro-VM can start, every run's
    outcome is `unavailable` with the SDK's reason."""

    _backend = "hyperlight"

    def __init__(self, tools=(), inputs=(), limits=None, approval="never_require", *,
                 sdk_path=None, **kwargs):
        kwargs.setdefault("isolation", "auto")
        super().__init__(tools=tools, limits=limits, approval=approval, hyperlight_inputs=inputs,
                         hyperlight_sdk_path=_installed_sdk_dir() if sdk_path is None else sdk_path,
                         **kwargs)


def _installed_sdk_dir():
    """Where this interpreter has hyperlight_sandbox (a venv's site-packages, say): the library's
    worker runs under the system interpreter and is pointed there (HyperlightOptions::sdk_path).
    "" where it is not installed: the worker then reports `unavailable` with the reason."""
    import importlib.util
    spec = importlib.util.find_spec("hyperlight_sandbox")
    if spec is None or not spec.submodule_search_locations:
        return ""
    return os.path.dirname(list(spec.submodule_search_locations)[0])


class Session:
    """A provider's session: execute / pause / resume / close (include/codeact/session.hpp)."""

    def __init__(self, provider, native):
        self._provider = provider
        self._native = native

    @property
    def id(self):
        return self._native.id

    @property
    def name(self):
        return self._native.name

    @property
    def paused(self):
        return self._native.paused

    @property
    def closed(self):
        return self._native.closed

    async def execute(self, code, *, approved=None):
        return await self._provider._wait(functools.partial(
            self._native.execute, code, approved, self._provider._approve))

    async def pause(self):
        await asyncio.get_running_loop().run_in_executor(None, self._native.pause)

    async def resume(self):
        await asyncio.get_running_loop().run_in_executor(None, self._native.resume)

    async def close(self):
        await asyncio.get_running_loop().run_in_executor(None, self._native.close)

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()
