"""The prelude that runs inside the Hyperlight guest, before the user's code.

hyperlight_worker.py reads this file at run time and sends its text into the guest behind the
text of codeact_convert.py, followed by one call of _codeact_main with the code (a string
literal), the tool names, the environment, the output's size bound and whether network targets
exist. So this file uses, without defining them, codeact_convert's functions (jsonable,
OutputTooLarge, safe_str, big_int_path, ...) and what the SDK's guest puts in the globals it
executes the text in: a synchronous call_tool(name, **kwargs), http_get(url) and
http_post(url, body, content_type) -- and nothing else: no __name__, and modules such as
traceback or asyncio may be missing from the guest's standard library.

_codeact_main compiles the code with top-level await allowed, returns a final bare expression as
the output, made JSON data exactly as the local runner does (codeact_convert.jsonable), and
reports the end of the run through the internal report tools. The code sees the same
`await call_tool(...)`, tool functions and ToolError as on the local backend, and, when network
targets exist, `await http_get(...)` / `await http_post(...)`.

What the SDK's guest imposes, and how it surfaces (read from the SDK's source, pyo3_common and
tools.rs): a tool call's JSON arguments over 1 MiB raise RuntimeError in the guest, so larger
ones end here as ToolError("ArgumentsTooLarge") before the call; integers outside int64 become
floats on the way, so they end as ToolError("IntegerOutOfRange"); the report's arguments are
capped the same way, so the output travels as JSON text in chunks well under the cap; /input and
/output are flat (a '/' in a file name is refused), so nested paths end as a clear OSError.
"""

# Internal callbacks registered in every sandbox besides the host's tools (the host refuses tool
# names starting with "__codeact_"): the end-of-run report, and the generic forwarder that the
# code's `await call_tool(...)` uses, so that unknown names and the budget are the host's to judge
# exactly as on the local backend. The worker imports these names from here.
REPORT_TOOL = "__codeact_report__"
CALL_TOOL = "__codeact_call__"
OUTPUT_TOOL = "__codeact_output__"  # one chunk of the output's JSON text
TOOL_ERROR_KEY = "__codeact_tool_error__"
# The SDK refuses a tool call whose JSON arguments exceed 1 MiB (tools.rs, counted roughly as
# compact JSON); output chunks stay far below it (a character is at most 4 bytes of UTF-8).
GUEST_ARGS_CAP = 1 << 20
OUTPUT_CHUNK_CHARS = 200_000
_FLAT_ROOTS = ("/input/", "/output/")
_KEYWORDS = frozenset((
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
    "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if",
    "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try",
    "while", "with", "yield"))


class ToolError(Exception):
    """A host tool call failed. str(e) is "<error_type>: <message>"."""

    def __init__(self, error_type="ToolError", message="", tool=None):
        self.error_type = error_type
        self.message = message
        self.tool = tool
        super().__init__("%s: %s" % (error_type, message) if message else str(error_type))


# Tool coroutines made by the code and not started yet: token -> (tool name, line). What is
# left when the run completes is reported in the result's message (as runner.py does).
_UNAWAITED = {}


def _track(name, make):
    """A coroutine running `make()`'s, with its tool and the line of the code that made it
    remembered until it starts (the inner one is made only then: one warning if never awaited)."""
    import sys
    token = object()
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename != "<code>":
        frame = frame.f_back
    _UNAWAITED[token] = (name, frame.f_lineno if frame is not None else 0)

    async def started():
        _UNAWAITED.pop(token, None)
        return await make()
    return started()


def _unawaited_note():
    if not _UNAWAITED:
        return None
    seen = sorted(set(_UNAWAITED.values()), key=lambda item: (item[1], str(item[0])))
    where = ", ".join("%s on line %d" % (n, line) if line else str(n) for n, line in seen[:8])
    more = "" if len(seen) <= 8 else " and %d more" % (len(seen) - 8)
    return ("%d tool call(s) never ran because their coroutine was not awaited: %s%s; add await"
            % (len(_UNAWAITED), where, more))


def _report(**fields):
    import sys
    note = _unawaited_note() if fields.get("kind") == "complete" else None
    if note:
        fields["note"] = note
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    call_tool(REPORT_TOOL, **fields)  # noqa: F821 (the guest's own)


def _args_size(payload):
    """The compact JSON size of a call's arguments, roughly as the SDK counts them; raises
    UnicodeEncodeError for a lone surrogate, which the SDK's JSON parser would refuse."""
    import json
    return len(json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _make_call_tool(sync_call):
    def call_tool_tracked(name, /, *args, **kwargs):
        if args:
            raise TypeError("call_tool takes keyword arguments only")
        return _track(str(name), lambda: call_tool_async(name, **kwargs))

    async def call_tool_async(name, /, **kwargs):
        where = big_int_path(kwargs)  # noqa: F821 (codeact_convert's)
        if where is not None:
            raise ToolError("IntegerOutOfRange",
                            big_int_message("an argument", where), name)  # noqa: F821
        payload = {"tool": name, "kwargs": kwargs}
        try:
            try:
                size = _args_size(payload)
            except UnicodeEncodeError:  # lone surrogates become '?', as on the local backend
                payload = clean_json(payload)  # noqa: F821 (codeact_convert's)
                size = _args_size(payload)
        except (TypeError, ValueError, RecursionError) as e:
            raise ToolError("InvalidArguments",  # noqa: F821 (as on the local backend)
                            "arguments of tool %r are not JSON-serialisable: %s" % (
                                name, safe_str(e)), name) from None  # noqa: F821
        if size > GUEST_ARGS_CAP:
            raise ToolError("ArgumentsTooLarge",
                            "the call's %d bytes of JSON arguments exceed the hyperlight guest's "
                            "limit of %d bytes" % (size, GUEST_ARGS_CAP), name)
        try:
            result = sync_call(CALL_TOOL, **payload)
        except Exception as e:  # the SDK's own refusal (RuntimeError), never the host tool's
            raise ToolError("GuestCallFailed", safe_str(e), name) from None  # noqa: F821
        if isinstance(result, dict) and TOOL_ERROR_KEY in result:
            err = result[TOOL_ERROR_KEY]
            raise ToolError(err.get("error_type", "ToolError"), err.get("message", ""), name)
        return result
    return call_tool_tracked


def _make_http(name, fn):
    """The guest's synchronous http_get/http_post, awaited like a tool; failures are ToolErrors."""
    async def http(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # the SDK's denial or transport error, whatever its class
            raise ToolError("HttpError", "%s: %s" % (type(e).__name__, safe_str(e)),  # noqa: F821
                            name) from None
    http.__name__ = http.__qualname__ = name
    return http


def _make_flat_open(real_open):
    """open() that explains, for the model, why /input/a/b or /output/a/b cannot work."""
    def open(file, *args, **kwargs):  # noqa: A001 (shadows the builtin on purpose)
        if isinstance(file, str):
            for root in _FLAT_ROOTS:
                if file.startswith(root) and "/" in file[len(root):].strip("/"):
                    raise FileNotFoundError(
                        2, "%s and %s are flat in this sandbox: no subdirectories (use %sNAME)"
                        % (_FLAT_ROOTS[0][:-1], _FLAT_ROOTS[1][:-1], root), file)
        return real_open(file, *args, **kwargs)
    return open


def _make_tool(name, call):
    def tool(*args, **kwargs):
        if args:
            raise TypeError("%s() takes keyword arguments only" % name)
        return call(name, **kwargs)
    tool.__name__ = tool.__qualname__ = name
    return tool


def _format_traceback(exc, src):
    """The traceback from the code's first frame on, with the traceback module where the guest
    has it, else built from the frames (the guest's standard library may lack it)."""
    try:
        import linecache
        import traceback
    except ImportError:
        traceback = None
    if traceback is not None:
        linecache.cache["<code>"] = (len(src), None, src.splitlines(True), "<code>")
        frames = traceback.extract_tb(exc.__traceback__)
        first = next((i for i, f in enumerate(frames) if f.filename == "<code>"), len(frames))
        text = "".join(traceback.format_list(frames[first:]))
        if text:
            text = "Traceback (most recent call last):\n" + text
        return text + "".join(traceback.format_exception_only(type(exc), exc))
    lines = src.splitlines()
    entries = []
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename == "<code>" or entries:
            entry = '  File "%s", line %d, in %s\n' % (code.co_filename, tb.tb_lineno, code.co_name)
            if code.co_filename == "<code>" and 0 < tb.tb_lineno <= len(lines):
                entry += "    %s\n" % lines[tb.tb_lineno - 1].strip()
            entries.append(entry)
        tb = tb.tb_next
    text = "Traceback (most recent call last):\n" + "".join(entries) if entries else ""
    message = safe_str(exc)  # noqa: F821 (codeact_convert's)
    return text + type(exc).__name__ + (": " + message if message else "") + "\n"


def _report_error(exc, src):
    # Cut well below the SDK's 1 MiB argument cap, or the report itself would fail.
    _report(kind="error", error_type=truncate(type(exc).__name__, 1000),  # noqa: F821
            message=truncate(safe_str(exc), 200_000),  # noqa: F821
            traceback=truncate_middle(_format_traceback(exc, src), 200_000))  # noqa: F821


def _user_globals(tool_names, env, http):
    try:
        import os
        os.environ.clear()
        os.environ.update(env)
    except BaseException:
        pass
    builtins = __builtins__  # the guest's own (a module, or a dict where exec gave one)
    names = builtins if isinstance(builtins, dict) else builtins.__dict__
    call = _make_call_tool(call_tool)  # noqa: F821 (the guest's own)
    g = {"__name__": "__main__", "__builtins__": builtins, "call_tool": call,
         "ToolError": ToolError, "open": _make_flat_open(names["open"])}
    if http:
        for name in ("http_get", "http_post"):
            fn = globals().get(name)  # the guest's own, where its SDK has them
            if fn is not None:
                g[name] = _make_http(name, fn)
    for name in tool_names:
        server, dot, tool = name.partition(".")
        if not dot:
            if (name.isidentifier() and name not in _KEYWORDS and name not in names
                    and name not in g):
                g[name] = _make_tool(name, call)
        elif (server.isidentifier() and tool.isidentifier() and server not in _KEYWORDS
              and tool not in _KEYWORDS and server not in names and tool != "__name__"):
            # An upstream MCP server's tool "server.tool": an attribute of a namespace.
            namespace = g.get(server)
            if namespace is None:
                namespace = g[server] = _ToolNamespace(server)
            if type(namespace) is _ToolNamespace:
                setattr(namespace, tool, _make_tool(name, call))
    return g


class _ToolNamespace:
    """An upstream MCP server's tools: ``await server.tool(arg=value)``."""

    def __init__(self, server):
        self.__name__ = server


def _compile(src):
    """(code object, whether a final bare expression is the output)."""
    import ast
    tree = ast.parse(src, "<code>", "exec")
    has_output = bool(tree.body) and isinstance(tree.body[-1], ast.Expr)
    if has_output:
        last = tree.body[-1]
        tree.body[-1] = ast.copy_location(
            ast.Assign(targets=[ast.Name("__codeact_output__", ast.Store())], value=last.value),
            last)
        ast.fix_missing_locations(tree)
    return compile(tree, "<code>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT), has_output


def _run_coroutine(coro):
    try:
        import asyncio
        loop = asyncio.new_event_loop()
    except Exception:
        loop = None
    if loop is not None:
        try:
            loop.run_until_complete(coro)
        finally:
            loop.close()
        return
    try:
        coro.send(None)
    except StopIteration:
        return
    coro.close()
    raise RuntimeError("this guest has no asyncio: only the tools, call_tool, http_get and "
                       "http_post can be awaited")


def _report_output(output, size_limit):
    if output is None:
        _report(kind="complete", output_present=False, output=None)
        return
    try:
        data = jsonable(output, size_limit)  # noqa: F821 (codeact_convert's)
    except OutputTooLarge as e:  # noqa: F821 (codeact_convert's)
        _report(kind="limit", size=e.args[0])
        return
    except MemoryError:
        raise
    except BaseException:  # RecursionError, or a container whose own methods raise
        data = safe_repr(output)  # noqa: F821 (codeact_convert's)
    import json
    # As text: the SDK would turn an int between 2**63 and 2**64 into a float, and cap the size.
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    for start in range(0, len(text), OUTPUT_CHUNK_CHARS):
        call_tool(OUTPUT_TOOL, chunk=text[start:start + OUTPUT_CHUNK_CHARS])  # noqa: F821
    _report(kind="complete", output_present=True, output_chunks=True)


def _codeact_warm_up():
    """The worker's first run in a new sandbox, before its snapshot: what every run imports,
    where the guest has it."""
    import ast  # noqa: F401
    import json  # noqa: F401
    for name in ("linecache", "traceback", "asyncio"):
        try:
            __import__(name)
        except ImportError:
            pass


def _codeact_main(src, tool_names, env, size_limit, http=False):
    g = _user_globals(tool_names, env, http)
    try:
        code, has_output = _compile(src)
        if code.co_flags & 0x80:  # CO_COROUTINE: the code awaits at top level
            _run_coroutine(eval(code, g))
        else:
            exec(code, g)
        _report_output(g.get("__codeact_output__") if has_output else None, size_limit)
    except SystemExit as e:
        if e.code is None or e.code == 0:
            _report(kind="complete", output_present=False, output=None)
        else:
            _report_error(e, src)
    except BaseException as e:
        _report_error(e, src)
