"""The prelude that runs inside the Hyperlight guest, before the user's code.

hyperlight_worker.py reads this file at run time and sends its text into the guest behind the
text of codeact_convert.py, followed by one call of _codeact_main with the code (a string
literal), the tool names, the environment and the output's size bound. So this file uses, without
defining them, codeact_convert's functions (jsonable, OutputTooLarge, safe_str) and the guest's
own synchronous call_tool, which the SDK puts in the guest's globals.

_codeact_main compiles the code with top-level await allowed, returns a final bare expression as
the output, made JSON data exactly as the local runner does (codeact_convert.jsonable), and
reports the end of the run through the internal report tool. The code sees the same
`await call_tool(...)`, tool functions and ToolError as on the local backend.
"""

# Internal callbacks registered in every sandbox besides the host's tools (the host refuses tool
# names starting with "__codeact_"): the end-of-run report, and the generic forwarder that the
# code's `await call_tool(...)` uses, so that unknown names and the budget are the host's to judge
# exactly as on the local backend. The worker imports these names from here.
REPORT_TOOL = "__codeact_report__"
CALL_TOOL = "__codeact_call__"
TOOL_ERROR_KEY = "__codeact_tool_error__"
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


def _report(**fields):
    import sys
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    call_tool(REPORT_TOOL, **fields)  # noqa: F821 (the guest's own)


def _make_call_tool(sync_call):
    async def call_tool_async(name, /, *args, **kwargs):
        if args:
            raise TypeError("call_tool takes keyword arguments only")
        result = sync_call(CALL_TOOL, tool=name, kwargs=kwargs)
        if isinstance(result, dict) and TOOL_ERROR_KEY in result:
            err = result[TOOL_ERROR_KEY]
            raise ToolError(err.get("error_type", "ToolError"), err.get("message", ""), name)
        return result
    return call_tool_async


def _make_tool(name, call):
    async def tool(*args, **kwargs):
        if args:
            raise TypeError("%s() takes keyword arguments only" % name)
        return await call(name, **kwargs)
    tool.__name__ = tool.__qualname__ = name
    return tool


def _report_error(exc, src):
    import linecache
    import traceback
    linecache.cache["<code>"] = (len(src), None, src.splitlines(True), "<code>")
    frames = traceback.extract_tb(exc.__traceback__)
    first = next((i for i, f in enumerate(frames) if f.filename == "<code>"), len(frames))
    text = "".join(traceback.format_list(frames[first:]))
    if text:
        text = "Traceback (most recent call last):\n" + text
    text += "".join(traceback.format_exception_only(type(exc), exc))
    _report(kind="error", error_type=type(exc).__name__, message=safe_str(exc),  # noqa: F821
            traceback=text)


def _user_globals(tool_names, env):
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
         "ToolError": ToolError}
    for name in tool_names:
        if name.isidentifier() and name not in _KEYWORDS and name not in names and name not in g:
            g[name] = _make_tool(name, call)
    return g


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
    raise RuntimeError("only call_tool can be awaited in this guest (no asyncio)")


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
    _report(kind="complete", output_present=True, output=data)


def _codeact_warm_up():
    """The worker's first run in a new sandbox, before its snapshot: what every run imports."""
    import ast  # noqa: F401
    import linecache  # noqa: F401
    import traceback  # noqa: F401


def _codeact_main(src, tool_names, env, size_limit):
    g = _user_globals(tool_names, env)
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
