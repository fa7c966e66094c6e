"""The state the runner's modules share, and what they all do with it (runner.py describes the
runner): the one `state` of the process and its run, the frames to the host and the end of a run
(`send_text`, `finish`, `abort_bridge`), the guard's module, compiling the code, and `ToolError`.

The other runner modules import this one and never each other's private names; it imports none of
them. runner_cold, the part of the runner loaded on first need, is reached through `load_cold`,
which calls `state.import_cold` (set by runner.py).
"""

import _ast
import _io
import gc
import posix
import sys

from codeact_protocol import error_frame

# The file name the code was compiled with: the source path also when the host runs a .pyc
# compiled from it (CompileToPyc keeps that name). The runner's modules share its directory,
# which is how their frames are recognised and left out of the user's tracebacks.
_RUNNER_FILE = sys._getframe().f_code.co_filename
_RUNNER_DIR = _RUNNER_FILE.rpartition("/")[0]
CODE_NAME = "<code>"
HIDDEN_OUTPUT = "__codeact_output__"

_PyCF_ONLY_AST = 0x400
_PyCF_ALLOW_TOP_LEVEL_AWAIT = 0x2000

# Sent when even building an error report runs out of memory.
_OOM_FRAME = (error_frame("MemoryError", "out of memory", "MemoryError: out of memory\n")
              + "\n").encode("ascii")
# Address space given back on MemoryError so that the report can be built. bytes(n) comes from
# calloc, i.e. untouched zero pages: it counts against RLIMIT_AS but not against RSS.
reserve = [bytes(4 << 20)]

# Private references, taken before any user code runs (the code may patch modules).
_write = posix.write
_gc_objects = gc.get_objects
_WRITERS = (_io.TextIOWrapper, _io.BufferedWriter, _io.BufferedRandom)
_readv = posix.readv
_exit = posix._exit


def environ_pop(name, default=""):  # os.environ.pop: posix.environ is the dict it wraps
    value = posix.environ.pop(name.encode(), None)
    if value is not None:
        posix.unsetenv(name)
    return default if value is None else value.decode("utf-8", "surrogateescape")


class State:
    """Everything one run needs to share (a single instance)."""
    rfd, wfd = 3, 4
    max_output = max_frame = 1 << 20
    max_calls = 256
    code_lines = None
    recursion_limit = 1000
    buf = None          # bytes from the host not yet dispatched
    eof = False         # the host closed its side
    loop = None         # the asyncio loop our reader is attached to
    pending = None      # call id -> asyncio.Future
    next_id = 1
    calls = 0
    guard_path = ""     # CODEACT_GUARD: the runtime guard's module; "" when the host wants none
    guard = None        # the loaded module
    guard_system = None  # the system part of the spec its OS layers were armed with
    imports_ahead = None  # the guard frame's "imports", for a request whose "guard" is "armed"
    imports_limited = False  # the guard's import check is on (once per process)
    session = False     # runner_session.py: a terminal frame ends the run, not the process
    flush_files = False  # the code ran, in a process it ends: flush_std flushes its files
    heap_frozen = False  # gc.freeze() was called (by a fork server, before forking this child)
    session_module = None  # a session's __main__, kept from run to run
    created = 0         # tool coroutines made by the run
    unawaited = None    # token -> (tool name, line) of those not started yet
    curated = False     # the code names getattr/hasattr/vars/__dict__/sys (runner_cold)
    import_cold = None  # imports runner_cold (runner.py sets it: runner_cold imports this module)


class RunEnded(BaseException):
    """A session's run sent its terminal frame (runner_session.py catches it)."""


state = State()
state.buf, state.pending, state.unawaited = bytearray(), {}, {}

# The bridge is read into one buffer kept for the process: a new bytes object per read,
# posix.read(fd, 256 KiB), is above malloc's mmap threshold, so each read cost an mmap, an mremap
# and a munmap (the verdict's read in a warm call 0.3 s apart on the test VM: 42-49 -> 24-28 us,
# medians of 30 calls).
READ_CHUNK = 1 << 18
_chunk = memoryview(bytearray(READ_CHUNK))


def read_frames(fd):
    """Appends what the host wrote on `fd` (up to READ_CHUNK bytes) to state.buf and returns how
    many bytes that was: 0 at EOF. Raises what os.readv raises (BlockingIOError: none yet)."""
    n = _readv(fd, [_chunk])
    state.buf += _chunk[:n]
    return n


# ---------------------------------------------------------------------------------------------
# Frames to the host


def send_bytes(data):
    """Writes one whole frame. If the host is gone nobody can be told anything: exit 3."""
    fd = state.wfd
    view = memoryview(data)
    watch_reads = [True]
    try:
        while view:
            try:
                n = _write(fd, view)
            except BlockingIOError:
                load_cold().wait_to_write(watch_reads)
                continue
            view = view[n:]
    except BaseException:
        _exit(3)


def send_text(text):
    send_bytes((text + "\n").encode("ascii"))


def flush_std():
    """Flushes the standard streams and, once the code of a run (not a session's) has run and
    opened something that may write (the guard's audit hook tells; without a guard, always), what
    it wrote to files it left open, as the interpreter's exit would: the built-in writers among
    the objects made since the heap was frozen."""
    streams = [sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__]
    st = state
    if st.flush_files and (st.guard_system is None or st.guard.opened_for_writing()):
        try:
            streams += [obj for obj in _gc_objects() if type(obj) in _WRITERS]
        except BaseException:  # MemoryError: those buffers are lost, as in a crash
            pass
    seen = set()
    for stream in streams:
        if stream is None or id(stream) in seen:
            continue
        seen.add(id(stream))
        try:
            stream.flush()
        except BaseException:
            pass


def finish(frame_text, exit_code):
    """Sends the terminal frame and ends the process (no atexit handlers, no finalizers)."""
    if state.unawaited and frame_text.startswith('{"type":"complete"'):
        frame_text = load_cold().with_unawaited_note(frame_text, state.unawaited)
    flush_std()
    send_text(frame_text)
    if state.session:
        raise RunEnded(exit_code)
    try:
        posix.close(state.wfd)
        # The exit (unmapping the memory, the namespaces' teardown) is ~1 ms of kernel work, and
        # the host thread that the frame woke is queued on this CPU behind it: at the lowest
        # priority the exit yields to it.
        posix.setpriority(posix.PRIO_PROCESS, 0, 19)
    except BaseException:
        pass
    _exit(exit_code)


def finish_oom():
    flush_std()
    send_bytes(_OOM_FRAME)
    _exit(1)


def abort_bridge(message):
    """The host broke the protocol: end the run with a BridgeError frame. A session's
    interpreter ends too: the bridge cannot be trusted for another run."""
    state.session = False
    finish(load_cold().error_frame_text("BridgeError", message, "", state.max_frame), 1)


class ToolError(Exception):
    """A host tool call failed. str(e) is "<error_type>: <message>"."""

    # The code's tracebacks name it as a class of the runner, which runs as __main__
    # ("ToolError: ...", not "runner_state.ToolError: ...").
    __module__ = "__main__"

    def __init__(self, error_type="ToolError", message="", tool=None):
        self.error_type = error_type
        self.message = message
        self.tool = tool
        super().__init__("%s: %s" % (error_type, message) if message else str(error_type))


class _ExtensionSpec:
    """What _imp.create_dynamic reads of a module spec."""
    __slots__ = ("name", "origin")

    def __init__(self, name, origin):
        self.name = name
        self.origin = origin


def load_guard(path=None):
    """The guard's module, from CODEACT_GUARD (or `path`: a zygote's loop is in it too)."""
    st = state
    if st.guard is None:
        path = path or st.guard_path
        if not path:
            raise RuntimeError("codeact guard: the host asked for the guard but named no module "
                               "(CODEACT_GUARD)")
        import _imp
        try:
            st.guard = _imp.create_dynamic(_ExtensionSpec("_codeact_guard", path))
        except Exception as e:
            raise RuntimeError("codeact guard: cannot load %s: %s" % (path, e)) from None
        finally:
            sys.modules.pop("_codeact_guard", None)  # not importable by the code
    return st.guard


def register_source(lines):
    import linecache
    linecache.cache[CODE_NAME] = (sum(map(len, lines)), None, lines, CODE_NAME)


def compile_user_code(code):
    """Compiles with top-level await allowed; a final bare expression is assigned to a hidden
    name instead (same positions, so line numbers stay those of the submitted code)."""
    tree = compile(code, CODE_NAME, "exec", _PyCF_ONLY_AST | _PyCF_ALLOW_TOP_LEVEL_AWAIT, True)
    body = tree.body
    state.curated = any(w in code for w in ("getattr", "hasattr", "vars", "__dict__", "sys")) \
        and load_cold().rewrite_user_tree(tree)  # validator/README.md "Accepted forms"
    has_output = bool(body) and type(body[-1]) is _ast.Expr
    if has_output:
        last = body[-1]
        pos = {"lineno": last.lineno, "col_offset": last.col_offset,
               "end_lineno": last.end_lineno, "end_col_offset": last.end_col_offset}
        target = _ast.Name(id=HIDDEN_OUTPUT, ctx=_ast.Store(), **pos)
        body[-1] = _ast.Assign(targets=[target], value=last.value, type_comment=None, **pos)
    return compile(tree, CODE_NAME, "exec", _PyCF_ALLOW_TOP_LEVEL_AWAIT, True), has_output


def load_cold():
    """runner_cold, imported on first need (a cold start that needs none of it loads none)."""
    cold = _cold[0]
    if cold is None:
        cold = state.import_cold()
        _cold[0] = cold
    return cold


_cold = [None]


def is_runner_file(filename):
    """Whether a code object's file is one of the runner's modules (they share its directory)."""
    return type(filename) is str and filename.rpartition("/")[0] == _RUNNER_DIR
