"""Child side of the codeact bridge: runs one block of AI-generated Python code (CodeAct).

Started by the host as ``python3.11 -I -u -X frozen_modules=on /abs/path/runner.py`` with stdin on
/dev/null, stdout/stderr on capped pipes, a fresh working directory, and the environment variables
``CODEACT_BRIDGE_FDS=<read fd>,<write fd>`` (default ``3,4``; removed from ``os.environ`` before
the user's code runs), ``CODEACT_GUARD=<path of _codeact_guard.so>`` when the host wants the
runtime guard (removed likewise) and ``CODEACT_RUN_TOKEN`` (left alone: the host finds escaped
descendants by it). Stdlib only. ``-I`` puts nothing of ours on ``sys.path``: the runner appends
its own directory, where its modules are (the host compiles them all to .pyc beside it):

  codeact_protocol.py  every frame, built and checked (the exchange is documented there)
  runner_state.py      the state the modules share, the frames to the host, the end of a run
  runner_cold.py       tool calls, errors, outputs, the curated forms: imported on first need
  codeact_convert.py   output values -> JSON (the hyperlight guest runs the same code)
  runner_zygote.py     the fork server's side (CODEACT_ZYGOTE=1)
  runner_session.py    a session's loop: request after request, globals kept (CODEACT_SESSION=1)
  runner_verdict.py    the validator run in the child before any code (a request's "validate")

Frames travel only on the bridge fds; whatever the user's code prints goes to fds 1 and 2. A
tool_call frame over max_frame_bytes is not sent: the code gets ToolError "FrameTooLarge"; past
max_tool_calls it gets "ToolBudgetExceeded"; if the host closed the bridge, "BridgeError". Error
frames are cut to fit max_frame_bytes (message and traceback to a quarter of it each, marked
"... [truncated N bytes]"). The output size checked against max_output_bytes is that of its
compact JSON. After the terminal frame the runner exits: 0 after complete, 1 after error, limit
or guard_error. A malformed host frame ends the run with an error frame of error_type
"BridgeError". EOF on the read fd before a request: exit 0 without a word (the host shut a
pooled child down). A request with "await_verdict" is compiled, then waits for the host's
"verdict" frame: EOF or a verdict other than "ok": true ends the process with none of the code
run. A failed write to the host: exit 3 at once. The process ends with os._exit:
no atexit handlers, no finalizers of user objects, pending tasks are dropped; what the code
wrote to files it left open is flushed first, as an interpreter's exit would. The write fd is
non-blocking: while the host is not reading, the runner keeps reading its answers, so a host
that answers each call before reading the next cannot deadlock with it. The terminal frame is
the last thing on the bridge: the host ends a run whose bridge carries anything after its first
terminal frame as a BridgeError (what the code forges on the bridge fds gains it nothing it
could not print or raise, and a second terminal frame gives it away).

Runtime guard (src/guard, docs/threat-model.md): with a "guard" field in the request, the
runner arms it after its own preload and before any user code, or ends the run with
guard_error; it never runs the code unguarded. arm: no_new_privs, Landlock over the spec's
"exec", "read" and "write" paths, the seccomp filters, a C audit hook that also refuses to open
the "bridge_fds"; TMPDIR = "tmp". limit_imports: a guarded __import__ that checks the user's own
imports against "imports" (validator/runtime_policy.py). A pooled or forked child arms with the
guard frame while it waits, and the request's other fields must then be the same; a request
whose "guard" is "armed" takes the frame's "imports" too (the frame must have had them). The zygote
loads the module, whose loop forks the children (runner_zygote.py), and never arms it.

Execution: the code is parsed with top-level ``await`` allowed; a final bare expression becomes an
assignment to a hidden name (same line numbers) and its value the output (None: no output). Code
that awaits at top level runs on a fresh asyncio event loop; code that does not is executed
directly, so the common ``asyncio.run(main())`` style works too: ``call_tool`` answers on whatever
asyncio loop is running. The runner starts no threads (RLIMIT_AS counts every thread's stack).

SystemExit with code 0 or None is a success without output; any other code is an error frame
with error_type "SystemExit". error_type is the exception class's __name__; tracebacks keep the
frames from the first "<code>" frame on, minus the runner's own, with the submitted source lines.

Start-up cost (2-core test VM): importing asyncio costs more than a whole interpreter start, the
json package ~8 ms, os ~2.5 ms (posix serves instead). So only the hot path is here and in
codeact_protocol.py (ready frame, request, running the code, simple outputs); the rest is
runner_cold.py, imported on first need. A child still idle 10 ms after its ready frame imports
that, then traceback and asyncio piece by piece, checking for its request between pieces.
"""

import builtins
import gc
import posix  # os without its import (~2.5 ms of a cold start: _collections_abc, posixpath, ...)
import sys

# The runner's other modules sit beside it (-I puts nothing of ours on sys.path); at the end of
# the path, so that none of them can shadow a module of the standard library. Nothing is written
# beside them: the host's directory may be read-only, and no child should leave a trace.
sys.dont_write_bytecode = True
sys.path.append(__file__.rpartition("/")[0] if __file__.startswith("/") else posix.getcwd())
# The runner is kept by this name also when it runs as __main__ (whose entry in sys.modules the
# user's code gets).
sys.modules.setdefault("runner", sys.modules[__name__])

from codeact_protocol import (  # noqa: E402 (after the path is set)
    COMPLETE_NO_OUTPUT, GUARD_AS_ARMED, ProtocolError, complete_frame, encode, guard_error_frame,
    guard_system_part, parse_host_frame, ready_frame, request_code_and_tools, request_limit)
from runner_state import (  # noqa: E402
    CODE_NAME, HIDDEN_OUTPUT, ToolError, abort_bridge, compile_user_code, environ_pop, finish,
    finish_oom, load_cold, load_guard, read_frames, register_source, reserve, send_text, state)


_CO_COROUTINE = 0x80

_IDLE_BEFORE_PRELOAD_S = 0.010
# What an idle child loads, one piece at a time ("" is runner_cold.py). Not ssl (4 MiB of every
# warm child's RSS): _import_asyncio() hides it while asyncio loads, so asyncio's TLS support is
# off in the sandbox; `import ssl` itself still works where the policy allows it.
_PRELOAD = ("", "linecache", "traceback", "typing", "inspect", "logging", "concurrent.futures",
            "socket", "subprocess", "selectors", "asyncio")
_KEYWORDS = frozenset((
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
    "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if",
    "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try",
    "while", "with", "yield"))

# Private references, taken before any user code runs (the code may patch modules).
_gc_freeze = gc.freeze
_exit = posix._exit





# ---------------------------------------------------------------------------------------------
# What the user's code sees besides the builtins



def call_tool(name, /, *args, **kwargs):
    """Calls the host tool ``name`` with keyword arguments only: ``await`` it for its JSON result
    (or ToolError). A coroutine of it that is never awaited is reported in the result's
    message."""
    if args:
        raise TypeError("call_tool takes keyword arguments only")
    return _tool_call(name, kwargs, _note_created(name))


def _note_created(name):
    """Remembers a tool coroutine and the line of the user's code that made it, until it runs."""
    st = state
    st.created += 1
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename != CODE_NAME:
        frame = frame.f_back
    st.unawaited[st.created] = (name, frame.f_lineno if frame is not None else 0)
    return st.created


async def _tool_call(name, kwargs, token):
    state.unawaited.pop(token, None)
    return await load_cold().call_tool(name, kwargs)


def _make_tool_function(name):
    def tool(*args, **kwargs):
        if args:  # only the egress tools take any (runner_cold.positional_kwargs)
            kwargs = load_cold().positional_kwargs(name, args, kwargs)
        return _tool_call(name, kwargs, _note_created(name))

    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = "Calls the host tool %r: await %s(param=...)." % (name, name)
    return tool


def _add_tool(g, name):
    """Binds host tool ``name`` in ``g``: an identifier as a function, "server.tool" as an
    attribute of namespace ``server`` (an upstream MCP server's, runner_cold.add_to_namespace);
    what would shadow a keyword, a builtin or a bound name is left to ``call_tool``."""
    if type(name) is not str:
        return
    server, dot, tool = name.partition(".")
    ok = lambda n: n.isidentifier() and n not in _KEYWORDS and n not in builtins.__dict__  # noqa
    if not dot:
        if ok(name) and name not in g:
            g[name] = _make_tool_function(name)
    elif ok(server) and tool.isidentifier() and tool not in _KEYWORDS:
        load_cold().add_to_namespace(g, server, tool, _make_tool_function(name))


def _user_globals(tool_names):
    """A fresh __main__ module for the code: builtins, call_tool, ToolError, one function per
    tool name that is an identifier and does not shadow a builtin or one of those two, and one
    namespace per upstream MCP server ("server.tool" names)."""
    module = state.session_module or type(sys)("__main__")
    if state.session:
        state.session_module = module  # the next run of the session finds its globals here
    g = module.__dict__
    g["__builtins__"] = builtins
    g["call_tool"] = call_tool
    g["ToolError"] = ToolError
    state.curated and load_cold().bind_curated(g)  # the guarded getattr, the sys view ...
    for name in tool_names:
        _add_tool(g, name)
    # ``import __main__`` finds the user's namespace, not the runner's (kept alive as "runner").
    sys.modules["__main__"] = module
    return g


# ---------------------------------------------------------------------------------------------
# The request


def _wait_readable(fd, timeout):
    import select
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    except (OSError, ValueError):
        return True  # let the read report it


def _parse_host_frame(line):
    try:
        return parse_host_frame(line)
    except ProtocolError as e:
        abort_bridge(str(e))


def _import_asyncio():
    if "asyncio" in sys.modules:
        return sys.modules["asyncio"]
    hidden = "ssl" not in sys.modules
    if hidden:
        sys.modules["ssl"] = None  # asyncio falls back to ssl = None
    try:
        import asyncio
    finally:
        if hidden:
            del sys.modules["ssl"]
    return asyncio


def _preload(name):
    """Imports one piece of _PRELOAD, or calls `name` (a forked child's warm-up)."""
    try:
        if callable(name):
            name()
        elif name == "asyncio":
            _import_asyncio()
        elif name:
            __import__(name)
        else:
            load_cold()
    except BaseException:
        pass


def _read_request(todo, kind="request"):
    """Returns the request frame (or the first frame of type `kind`). While nothing has arrived,
    an idle child preloads `todo`."""
    fd = state.rfd
    buf = state.buf
    waited = False
    posix.set_blocking(fd, False)
    blocking = False
    while True:
        end = buf.find(b"\n")
        if end >= 0:
            line = bytes(buf[:end])
            del buf[:end + 1]
            if line.strip():
                msg = _parse_host_frame(line)
                if msg.get("type") == kind:
                    return msg
            continue  # blank lines and unknown frame types are ignored
        if not blocking and not buf and todo:
            ready = _wait_readable(fd, 0 if waited else _IDLE_BEFORE_PRELOAD_S)
            waited = True
            if not ready:
                _preload(todo.pop(0))
                continue
        if not blocking and (buf or not todo):
            posix.set_blocking(fd, True)
            blocking = True
        try:
            got = read_frames(fd)
        except BlockingIOError:
            continue
        except OSError:
            got = 0
        if not got:
            rest = bytes(buf).strip()
            del buf[:]
            if rest:  # a last frame without its newline
                msg = _parse_host_frame(rest)
                if msg.get("type") == kind:
                    return msg
            _exit(0)
        if len(buf) > 64 * state.max_frame:
            abort_bridge("request frame larger than %d bytes" % len(buf))


def _await_verdict():
    """A request with "await_verdict": the host prepares the run and validates the code while
    this child compiles it, and none of it runs before the host's verdict. The host kills a
    rejected run's child; a verdict other than "ok": true ends it here as well, with nothing
    run."""
    if _read_request([], "verdict").get("ok") is not True:
        _exit(1)


def _request_fields(req):
    """(code, tool names) of the request, with its limits in state."""
    st = state
    try:
        st.max_frame = request_limit(req, "max_frame_bytes")
        st.max_output = request_limit(req, "max_output_bytes")
        st.max_calls = request_limit(req, "max_tool_calls")
        return request_code_and_tools(req)
    except ProtocolError as e:
        abort_bridge(str(e))


# ---------------------------------------------------------------------------------------------
# The runtime guard (src/guard/guard_module.cpp): armed after the preload, before any user code.


def _arm_system(spec):
    """Everything but the import check: no_new_privs, Landlock, the seccomp filters, the audit
    hook; TMPDIR for the code."""
    import _thread
    if _thread._count():  # Landlock binds the calling thread (and those it starts) only
        raise RuntimeError("codeact guard: the runner has threads before arming")
    if type(spec) is not dict:
        raise RuntimeError("codeact guard: the guard spec must be an object")
    tmp = spec.get("tmp")
    if tmp:
        posix.putenv("TMPDIR", tmp)  # os.environ["TMPDIR"] = tmp
        posix.environ[b"TMPDIR"] = tmp.encode("utf-8", "surrogateescape")
        if "tempfile" in sys.modules:
            sys.modules["tempfile"].tempdir = None
    load_guard().arm(spec)
    state.guard_system = guard_system_part(spec)


def _guard_failed(exc):
    if isinstance(exc, RuntimeError):
        message = str(exc)
    else:
        message = "codeact guard: %s: %s" % (type(exc).__name__, exc)
    if not message.startswith("codeact guard:"):
        message = "codeact guard: " + message
    finish(guard_error_frame(message), 1)


def _arm_ahead():
    """A pooled or forked child: arms all but the import check with the host's guard frame, sent
    before its ready frame, so that the run it serves does not wait for it. The frame's imports,
    when it has them, are kept for a request that names them ("guard":"armed")."""
    spec = _read_request([], "guard")
    try:
        _arm_system(spec)
        state.imports_ahead = spec.get("imports")
    except BaseException as e:
        _guard_failed(e)


def _arm_guard(req):
    """Arms whatever of the guard the request asks for and is not armed yet; on failure the run
    ends with a guard_error frame, before any user code."""
    spec = req.get("guard")
    if spec is None:
        return
    try:
        if spec == GUARD_AS_ARMED:
            if "validate" in req:
                raise RuntimeError("codeact guard: a request the child validates carries the "
                                   "guard's imports itself, not \"%s\"" % GUARD_AS_ARMED)
            imports = state.imports_ahead
            if state.guard_system is None or imports is None:
                raise RuntimeError("codeact guard: the request names the guard armed ahead with "
                                   "its imports, and no guard frame with imports came")
        elif type(spec) is not dict:
            raise RuntimeError("codeact guard: request field 'guard' must be an object or \"%s\""
                               % GUARD_AS_ARMED)
        else:
            if state.guard_system is None:
                _arm_system(spec)
            elif guard_system_part(spec) != state.guard_system:
                raise RuntimeError("codeact guard: the request's paths differ from those armed "
                                   "ahead of it")
            imports = spec.get("imports")
        state.imports = imports  # "sys" in it: the real one (runner_cold)
        if not state.imports_limited:  # a session's later runs: on since its first
            load_guard().limit_imports(imports if type(imports) is list else [])
            state.imports_limited = True
    except BaseException as e:
        _guard_failed(e)


# ---------------------------------------------------------------------------------------------
# Running the code



def _fail(exc, user_globals):
    """Ends the run for an exception from the user's code or its compilation."""
    if isinstance(exc, MemoryError):
        reserve.clear()
    try:
        sys.setrecursionlimit(max(state.recursion_limit, sys.getrecursionlimit()))
        load_cold().report_exception(exc, user_globals)  # does not return
    except MemoryError:
        pass
    finish_oom()


def _complete(value):
    """Ends the run with its output: simple values here, everything else in the cold part."""
    if value is None:
        finish(COMPLETE_NO_OUTPUT, 0)
    t = type(value)
    if ((t is int and -(1 << 63) <= value < (1 << 64)) or t is bool
            or (t is float and value - value == 0.0) or (t is str and value.isascii())):
        out = encode(value)
        if len(out) <= state.max_output and len(out) + 64 <= state.max_frame:
            finish(complete_frame(out), 0)
    finish(*load_cold().output_frame(value))


def _run(req):
    st = state
    code, tools = _request_fields(req)
    if "validate" in req:  # the validator's verdict first (runner_verdict.py)
        __import__("runner_verdict").check(req, code)
    _arm_guard(req)

    st.code_lines = code.splitlines(True)
    # Source lines for tracebacks and warnings the code itself prints. Importing linecache costs
    # a cold start several ms (it pulls in re), so only when loaded already or likely needed.
    if "linecache" in sys.modules or "traceback" in code or "logging" in code or "warn" in code:
        register_source(st.code_lines)
    st.recursion_limit = sys.getrecursionlimit()

    g = None
    try:
        code_obj, has_output = compile_user_code(code)
        g = _user_globals(tools)
        if req.get("await_verdict") is True:
            _await_verdict()
        if not st.session:
            if not st.heap_frozen:  # a fork server's child has a frozen heap already
                _gc_freeze()  # what flush_std walks: the objects the code makes
            st.flush_files = True
        if code_obj.co_flags & _CO_COROUTINE:
            asyncio = _import_asyncio()
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(eval(code_obj, g))
            finally:
                if st.session:  # its selector's fds would pile up run after run
                    sys.modules["runner_session"].close_loop(loop)
        else:
            eval(code_obj, g)
    except SystemExit as e:
        if e.code is None or (isinstance(e.code, int) and e.code == 0):
            finish(COMPLETE_NO_OUTPUT, 0)
        _fail(e, g)
    except BaseException as e:
        _fail(e, g)
    sys.setrecursionlimit(max(st.recursion_limit, sys.getrecursionlimit()))
    _complete(g.pop(HIDDEN_OUTPUT, None) if has_output else None)


def _main():
    fds = environ_pop("CODEACT_BRIDGE_FDS", "3,4")
    state.guard_path = environ_pop("CODEACT_GUARD")
    # CODEACT_RUN_TOKEN stays: processes the code starts inherit it, and the host's sweep of /proc
    # finds those that left the process group by it.
    try:
        rfd, wfd = (int(x) for x in fds.split(","))
        posix.set_inheritable(rfd, False)  # not for processes the user's code may start
        posix.set_inheritable(wfd, False)
    except (ValueError, OSError) as e:
        sys.stderr.write("runner: bad CODEACT_BRIDGE_FDS %r: %s\n" % (fds, e))
        _exit(2)
    state.rfd = rfd
    state.wfd = wfd
    posix.set_blocking(wfd, False)  # see runner_cold.wait_to_write

    sys.dont_write_bytecode = True
    sys.argv = [CODE_NAME]
    for stream in (sys.stdout, sys.stderr):  # -u does this already; in case it was left out
        try:
            if not stream.write_through:
                stream.reconfigure(write_through=True)
        except BaseException:
            pass

    # A pooled child (CODEACT_WARM=1) loads everything before it says ready, so no run waits for
    # an import; a child started for a waiting run loads lazily while no request has come; one
    # started ahead of a run still being validated (CODEACT_WARM=arm) arms its guard, loads
    # nothing (a validation in the host needs the CPU). A fork server (CODEACT_ZYGOTE=1) loads all;
    # its child, idle, walks the hot path once.
    todo = list(_PRELOAD)
    ahead = False
    zygote = environ_pop("CODEACT_ZYGOTE")
    if zygote in ("1", "namespaces"):
        while todo:
            _preload(todo.pop(0))
        import runner_zygote
        runner_zygote.serve(zygote == "namespaces")  # returns only in a forked child
        todo = [runner_zygote.warm_up]
        ahead = True
    elif environ_pop("CODEACT_SESSION") == "1":
        import runner_session
        runner_session.serve(_run, _read_request, _arm_ahead)  # never returns
    else:
        warm = environ_pop("CODEACT_WARM")
        while warm == "1" and todo:
            _preload(todo.pop(0))
        todo = [] if warm == "arm" else todo
        ahead = warm in ("1", "arm")
    if ahead and state.guard_path:
        _arm_ahead()
    send_text(ready_frame(sys.version_info, posix.getpid()))
    req = _read_request(todo)
    try:
        _run(req)  # ends the process itself
    except BaseException as e:  # a failure of the runner itself
        try:
            cold = load_cold()
            frame = cold.error_frame_text("RunnerError", "runner failure: %s: %s" % (
                type(e).__name__, cold.safe_str(e)), cold.format_runner_traceback(e),
                state.max_frame)
        except BaseException:
            finish_oom()
        finish(frame, 1)


# ---------------------------------------------------------------------------------------------
# The cold half (runner_cold.py), imported on first need by runner_state.load_cold


def _import_cold():
    import runner_cold
    return runner_cold


state.import_cold = _import_cold


if __name__ == "__main__":
    _main()
