"""The runner's cold half: what a run needs only when it calls a tool, raises, or ends with an
output that is not a simple value, and the curated forms of code that names them (the rewrite
here; what the code gets is runner_curated.py). runner.py imports it on first need (a warm
child while it waits for its request), so that a cold start compiles and loads none of it. It shares the
runner's state and frame writers (runner_state.py); the frames themselves are codeact_protocol.py's.
"""

import os

from codeact_convert import (OutputTooLarge, big_int_message, big_int_path, clean_json, clean_str,
                             jsonable, may_hold_big_int, safe_repr, safe_str, truncate,
                             truncate_middle)
from codeact_protocol import (ProtocolError, complete_frame, encode, error_frame, is_tool_result,
                              limit_frame, parse_host_frame, tool_answer, tool_call_frame)
from runner_state import (CODE_NAME, READ_CHUNK, ToolError, abort_bridge, finish, is_runner_file,
                          read_frames, register_source, reserve, send_text, state)

ERROR_TYPE_MAX = 200


# Error reports --------------------------------------------------------------------------------

def error_frame_text(error_type, message, traceback_text, max_frame):
    """An error frame that fits in max_frame: message and traceback are cut to a quarter of it
    each, then halved again while the frame is still too large."""
    error_type = truncate(clean_str(error_type), ERROR_TYPE_MAX)
    message = clean_str(message)
    traceback_text = clean_str(traceback_text)

    def build(m, t):
        return error_frame(error_type, m, t)

    frame = build(message, traceback_text)
    budget = max_frame // 4
    while len(frame) + 1 > max_frame and budget > 0:  # + 1: the newline
        frame = build(truncate(message, budget), truncate_middle(traceback_text, budget))
        budget //= 2
    return frame


def _trim_stack(stack, traceback_mod):
    """The user's frames: from the first <code> frame on, without the runner's own."""
    frames = list(stack)
    for i, fs in enumerate(frames):
        if fs.filename == CODE_NAME:
            return traceback_mod.StackSummary.from_list(
                [f for f in frames[i:] if not is_runner_file(f.filename)])
    return traceback_mod.StackSummary()


def _format_traceback(exc):
    import traceback
    if state.code_lines is not None:
        register_source(state.code_lines)
    te = traceback.TracebackException(type(exc), exc, exc.__traceback__, compact=True)
    todo = [te]
    seen = set()
    while todo:  # every exception of the chain and of exception groups
        cur = todo.pop()
        if cur is None or id(cur) in seen:
            continue
        seen.add(id(cur))
        cur.stack = _trim_stack(cur.stack, traceback)
        todo.append(cur.__cause__)
        todo.append(cur.__context__)
        todo.extend(getattr(cur, "exceptions", None) or ())
    return "".join(te.format())


def format_runner_traceback(exc):
    try:
        import traceback
        return "".join(traceback.format_exception(exc))
    except BaseException:
        return ""


def _exception_frame(exc):
    if isinstance(exc, SystemExit):
        error_type = "SystemExit"
        message = exc.code if isinstance(exc.code, str) else safe_repr(exc.code)
    else:
        try:
            error_type = type(exc).__name__
        except BaseException:
            error_type = "Exception"
        message = safe_str(exc)
    try:
        tb_text = _format_traceback(exc)
    except MemoryError:
        raise
    except BaseException:
        tb_text = "%s: %s\n" % (error_type, message)
    return error_frame_text(error_type, message, tb_text, state.max_frame)


def report_exception(exc, user_globals):
    """Sends the error frame for exc and ends the process."""
    try:
        frame = _exception_frame(exc)
    except MemoryError:
        if user_globals is None:
            raise
        try:
            user_globals.clear()  # drop what the code allocated, then try once more
        except BaseException:
            pass
        frame = _exception_frame(exc)
    finish(frame, 1)


# Output value -> JSON -------------------------------------------------------------------------
def output_frame(value):
    """(frame, exit code) for an output value that is present: complete, or limit."""
    max_output = state.max_output
    max_frame = state.max_frame
    try:
        try:
            data = jsonable(value, 4 * max_output + 65536)
        except (OutputTooLarge, MemoryError):
            raise
        except BaseException:  # RecursionError, or a container whose own methods raise
            data = safe_repr(value)
        out = encode(data)
    except OutputTooLarge as e:
        return limit_frame("output value of at least %d bytes exceeds the limit of %d bytes"
                            % (e.args[0], max_output)), 1
    except MemoryError:
        reserve.clear()
        return limit_frame("output value too large to serialise (out of memory)"), 1
    if len(out) > max_output:
        return limit_frame("output value of %d bytes exceeds the limit of %d bytes"
                            % (len(out), max_output)), 1
    frame = complete_frame(out)
    if len(frame) + 1 > max_frame:
        return limit_frame("output value of %d bytes exceeds the frame limit of %d bytes"
                            % (len(out), max_frame)), 1
    return frame, 0


# Tool calls -----------------------------------------------------------------------------------
# One reader of the host's frames, attached to whichever asyncio loop is running when a call is
# made (asyncio.run() in the user's code makes a new loop each time); a dict id -> Future.

_get_running_loop = None


def _attach_reader(loop):
    st = state
    if st.loop is loop:
        return
    old = st.loop
    if old is not None and not st.eof:
        try:
            if not old.is_closed():
                old.remove_reader(st.rfd)
        except BaseException:
            pass
    st.loop = loop
    if not st.eof:
        os.set_blocking(st.rfd, False)
        loop.add_reader(st.rfd, _on_readable)
    if st.buf:
        loop.call_soon(dispatch_buffer)


def _on_readable():
    st = state
    while True:
        try:
            got = read_frames(st.rfd)
        except BlockingIOError:
            break
        except OSError:
            got = 0
        if not got:
            dispatch_buffer()
            _on_eof()
            return
        if got < READ_CHUNK:
            break
    dispatch_buffer()


def wait_to_write(watch_reads):
    """The host is not reading our frames just now (runner.py's write fd is non-blocking).
    Meanwhile, read its frames into state.buf: a host that writes one answer before it reads the
    next call would otherwise deadlock with us once both pipes are full (a gather of many calls)."""
    import select
    st = state
    rlist = [st.rfd] if watch_reads[0] and not st.eof else []
    readable = select.select(rlist, [st.wfd], [])[0]
    if not readable:
        return
    try:
        got = read_frames(st.rfd)
    except BlockingIOError:
        return
    except OSError:
        got = 0
    if not got:
        watch_reads[0] = False  # EOF stays readable; the normal reader will see it
        return
    if st.loop is not None and not st.loop.is_closed():
        st.loop.call_soon(dispatch_buffer)  # the loop's reader will not fire for these


def dispatch_buffer():
    buf = state.buf
    start = 0
    try:
        while True:
            end = buf.find(b"\n", start)
            if end < 0:
                break
            line = bytes(buf[start:end])
            start = end + 1
            _dispatch(line)
    finally:
        del buf[:start]
    if len(buf) > state.max_frame + 1:
        abort_bridge("frame from host exceeds the limit of %d bytes" % state.max_frame)


def _dispatch(line):
    if not line.strip():
        return
    if len(line) > state.max_frame + 1:
        abort_bridge("frame from host exceeds the limit of %d bytes" % state.max_frame)
    try:
        msg = parse_host_frame(line)
        if not is_tool_result(msg):
            return  # unknown frame types are ignored
        call_id, answer = tool_answer(msg)
    except ProtocolError as e:
        abort_bridge(str(e))
    fut = state.pending.get(call_id)
    if fut is None or fut.done():
        return  # a late answer to a call nobody waits for any more
    try:
        fut.set_result(answer)
    except RuntimeError:  # that future's loop is closed
        pass


def _on_eof():
    st = state
    st.eof = True
    if st.loop is not None:
        try:
            st.loop.remove_reader(st.rfd)
        except BaseException:
            pass
    for fut in list(st.pending.values()):
        if not fut.done():
            try:
                fut.set_result((False, "BridgeError", "the host closed the bridge"))
            except RuntimeError:
                pass


def with_unawaited_note(frame_text, unawaited):
    """The complete frame with a "note" naming the tool coroutines that never ran (token ->
    (tool name, line)): the result's message then says to add await."""
    try:
        seen = sorted(set(unawaited.values()), key=lambda item: (item[1], str(item[0])))
        names = [(clean_str(str(n)), line) for n, line in seen[:8]]
        where = ", ".join("%s on line %d" % (n, line) if line else n for n, line in names)
        more = "" if len(seen) <= 8 else " and %d more" % (len(seen) - 8)
        note = ("%d tool call(s) never ran because their coroutine was not awaited: %s%s; add "
                "await" % (len(unawaited), where, more))
        return frame_text[:-1] + ',"note":%s}' % encode(note)
    except MemoryError:
        return frame_text


# The egress tools' parameters, in the order the code may also pass them positionally
# (`await http_get(url)`), as the hyperlight guest's http_get/http_post take them. The host
# serves these names only in runs with network targets, and refuses host tools named so there.
_POSITIONAL = {
    "http_get": ("url", "headers"),
    "http_post": ("url", "body", "headers"),
    "http_request": ("method", "url", "headers", "body"),
}


def positional_kwargs(name, args, kwargs):
    """A tool call's keyword arguments with its positional ones bound by name (runner.py's tool
    functions: every other tool takes keyword arguments only)."""
    params = _POSITIONAL.get(name, ())
    if len(args) > len(params):
        raise TypeError("%s() takes keyword arguments only" % name if not params else
                        "%s() takes at most %d positional arguments (%s)"
                        % (name, len(params), ", ".join(params)))
    for key, value in zip(params, args):
        if key in kwargs:
            raise TypeError("%s() got multiple values for argument %r" % (name, key))
        kwargs[key] = value
    return kwargs


class ToolNamespace:
    """An upstream MCP server's tools: ``await server.tool(...)`` calls host tool "server.tool"."""


def add_to_namespace(g, server, tool, function):
    """Binds ``function`` as ``server.tool`` in ``g``, unless ``server`` names something else."""
    namespace = g.setdefault(server, ToolNamespace())
    if type(namespace) is ToolNamespace:
        setattr(namespace, tool, function)


def _bad_kwargs_error(name, kwargs, err):
    """ToolError "InvalidArguments" naming the argument that JSON cannot carry: the call never
    left the sandbox, and the code catches it like any other failed call."""
    hint = "; pass JSON values (str, int, float, bool, None, lists and dicts of them)"
    for key, value in kwargs.items():
        try:
            encode(value)
        except (TypeError, ValueError, RecursionError) as e:
            return ToolError("InvalidArguments", "argument %r of tool %r is not JSON-serialisable: "
                             "%s%s" % (key, name, e, hint), name)
    return ToolError("InvalidArguments", "arguments of tool %r are not JSON-serialisable: %s%s"
                     % (name, err, hint), name)


def _all_tasks(loop):
    global _all_tasks_fn
    if _all_tasks_fn is None:
        from asyncio import all_tasks
        _all_tasks_fn = all_tasks
    return _all_tasks_fn(loop)


_all_tasks_fn = None


def _wait_for_answer(fut):
    """The one call in flight, awaited by the only task: read the host's frames right here until
    its answer is in (a round trip through the event loop's selector costs more than the call).
    It reads before it selects, unlike _on_readable: measured, that order is what makes it fast
    (~12,000 calls/s against ~7,000 for select-then-_on_readable on the benchmark VM)."""
    import select
    st = state
    while not fut.done() and not st.eof:
        try:
            got = read_frames(st.rfd)
        except BlockingIOError:
            select.select([st.rfd], [], [])
            continue
        except OSError:
            got = 0
        if not got:
            dispatch_buffer()
            _on_eof()
            return
        dispatch_buffer()


async def call_tool(name, kwargs):
    """Sends one tool call and returns its result, or raises ToolError."""
    global _get_running_loop
    st = state
    if type(name) is not str:
        raise TypeError("call_tool: the tool name must be a str, not %s" % type(name).__name__)
    if st.calls >= st.max_calls:
        raise ToolError("ToolBudgetExceeded",
                        "the run may make at most %d tool calls" % st.max_calls, name)
    try:
        kw = encode(kwargs)
    except (TypeError, ValueError, RecursionError) as e:
        raise _bad_kwargs_error(name, kwargs, e) from None
    if may_hold_big_int(kw):  # JSON parsers on the way would make it a float
        where = big_int_path(kwargs)
        if where is not None:
            raise ToolError("IntegerOutOfRange", big_int_message("an argument", where), name)
    if "\\ud" in kw:  # astral characters, or lone surrogates the host's JSON parser would refuse
        kw = encode(clean_json(kwargs))
    call_id = st.next_id
    frame = tool_call_frame(call_id, encode(clean_str(name)), kw)
    if len(frame) + 1 > st.max_frame:  # frame sizes count the newline
        raise ToolError("FrameTooLarge", "argument frame of %d bytes exceeds the limit of %d bytes"
                        % (len(frame) + 1, st.max_frame), name)
    if st.eof:
        raise ToolError("BridgeError", "the host closed the bridge", name)
    if _get_running_loop is None:
        from asyncio import get_running_loop
        _get_running_loop = get_running_loop
    loop = _get_running_loop()
    _attach_reader(loop)
    st.next_id = call_id + 1
    st.calls += 1
    fut = loop.create_future()
    alone = not st.pending and len(_all_tasks(loop)) == 1
    st.pending[call_id] = fut
    try:
        send_text(frame)
        if alone:
            _wait_for_answer(fut)  # nothing else could run meanwhile: skip the event loop
        answer = fut.result() if fut.done() else await fut
    finally:
        st.pending.pop(call_id, None)
    if answer[0]:
        return answer[1]
    error_type = answer[1] if type(answer[1]) is str and answer[1] else "ToolError"
    message = answer[2]
    if type(message) is not str:
        message = "" if message is None else safe_str(message)
    raise ToolError(error_type, message, name)


# The curated forms of the code (validator/README.md "Accepted forms") ----------------------------

import _ast  # noqa: E402

# What `import sys` and `obj.__dict__` are rewritten to read.
_SYS_NAME = "__codeact_sys__"
_VARS_NAME = "__codeact_vars__"
_uses_sys = [False]   # the code of the run being compiled imports sys
_POSITION = ("lineno", "col_offset", "end_lineno", "end_col_offset")


def _at(new, old):
    for field in _POSITION:
        setattr(new, field, getattr(old, field, None) or 0)
    return new


def _sys_name(at):
    return _at(_ast.Name(id=_SYS_NAME, ctx=_ast.Load()), at)


def _replaced_statement(node):
    """The statements that stand for `import sys [as s]` / `from sys import a [as b]`, or None
    when `node` is neither: assignments from the curated view (sys_view) instead of the module,
    so that the view is what the code holds whether or not the validator ran. Other imports of
    the same statement stay imports, in their order."""
    cls = node.__class__
    if cls is _ast.Import:
        if not any(a.name == "sys" for a in node.names):
            return None
        out = []
        for alias in node.names:
            if alias.name == "sys":
                target = _at(_ast.Name(id=alias.asname or "sys", ctx=_ast.Store()), alias)
                out.append(_at(_ast.Assign(targets=[target], value=_sys_name(alias),
                                           type_comment=None), node))
            else:
                out.append(_at(_ast.Import(names=[alias]), node))
        return out
    if cls is _ast.ImportFrom and node.module == "sys" and not node.level \
            and all(a.name != "*" for a in node.names):
        out = []
        for alias in node.names:
            target = _at(_ast.Name(id=alias.asname or alias.name, ctx=_ast.Store()), alias)
            value = _at(_ast.Attribute(value=_sys_name(alias), attr=alias.name,
                                       ctx=_ast.Load()), alias)
            out.append(_at(_ast.Assign(targets=[target], value=value, type_comment=None), node))
        return out
    return None


def _replaced_expression(node):
    """`obj.__dict__` read: the guarded vars(obj) (runner._user_vars), a read-only copy."""
    if (node.__class__ is _ast.Attribute and node.attr == "__dict__"
            and node.ctx.__class__ is _ast.Load):
        func = _at(_ast.Name(id=_VARS_NAME, ctx=_ast.Load()), node)
        return _at(_ast.Call(func=func, args=[node.value], keywords=[]), node)
    return None


def rewrite_user_tree(tree):
    """Rewrites, in place, the imports of sys into reads of the curated view and the reads of
    `.__dict__` into the guarded vars(); returns True (the run's globals get the curated forms:
    bind_curated), and remembers whether the code imports sys (they get the view under
    _SYS_NAME). Iterative: a deep tree does not recurse here."""
    uses_sys = False
    # A policy that allows sys itself (the guard's patterns name it) gives the real module.
    imports = getattr(state, "imports", None)
    real_sys = type(imports) is list and "sys" in imports
    todo = [tree]
    while todo:
        node = todo.pop()
        for field in node._fields:
            value = getattr(node, field, None)
            if value.__class__ is list:
                changed = False
                items = []
                for item in value:
                    if not isinstance(item, _ast.AST):
                        items.append(item)
                        continue
                    statements = None if real_sys else _replaced_statement(item)
                    if statements is not None:
                        uses_sys = changed = True
                        items.extend(statements)
                        todo.extend(statements)
                        continue
                    expression = _replaced_expression(item)
                    if expression is not None:
                        changed = True
                        item = expression
                    items.append(item)
                    todo.append(item)
                if changed:
                    setattr(node, field, items)
            elif isinstance(value, _ast.AST):
                expression = _replaced_expression(value)
                if expression is not None:
                    setattr(node, field, expression)
                    value = expression
                todo.append(value)
    _uses_sys[0] = uses_sys
    return True


def bind_curated(g):
    """Binds the guarded getattr/hasattr/vars (runner_curated) in the code's globals `g`, over
    the builtins of those names, and the sys view when the code imports sys. Only code that
    names one of them gets them (runner_state.compile_user_code): other code can call them only
    by reaching for the builtins module itself, which is not a form the validator accepts."""
    curated = _curated()
    g["getattr"] = curated.user_getattr
    g["hasattr"] = curated.user_hasattr
    g["vars"] = g[_VARS_NAME] = curated.user_vars
    if _uses_sys[0]:
        g[_SYS_NAME] = curated.view


def _curated():
    """runner_curated, loaded once and cut off from the import system: out of sys.modules and
    without its loader, spec and file, so that its functions' globals hold no module and no
    path to one (nothing reachable from what the code gets leads to the real sys)."""
    module = _curated_module[0]
    if module is None:
        import sys
        import runner_curated as module
        sys.modules.pop("runner_curated", None)
        for name in ("__loader__", "__spec__", "__file__", "__cached__", "__package__"):
            module.__dict__.pop(name, None)
        module.init(type(sys), sys.stderr, sys.getrecursionlimit(), {
            "version": sys.version, "version_info": sys.version_info, "platform": sys.platform,
            "maxsize": sys.maxsize, "byteorder": sys.byteorder, "float_info": sys.float_info,
            "int_info": sys.int_info})
        _curated_module[0] = module
    return module


_curated_module = [None]
