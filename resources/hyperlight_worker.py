"""Worker side of codeact's hyperlight backend: runs AI-generated Python (CodeAct) inside a
Hyperlight micro-VM through the ``hyperlight_sandbox`` SDK, one run at a time, for many runs.

Started by the host as ``python3 -I -u /abs/path/hyperlight_worker.py`` under rlimits, in its own
process group, with stdin on /dev/null, stdout/stderr on the host's capped pipes and
``CODEACT_BRIDGE_FDS=<read fd>,<write fd>``. ``CODEACT_HYPERLIGHT_SDK_PATH``, when set, is put
first on ``sys.path`` before the SDK is imported (the tests point it at their fake SDK; nothing
else does). Stdlib only, apart from the SDK.

Why a separate process: the SDK has no execution timeout and its objects must stay on the thread
that created them, so the host enforces the wall clock by killing this process (and starts
another for the next run).

Protocol: newline-delimited compact JSON on the bridge fds, as ``runner.py`` speaks it.

  worker -> host  {"type":"ready"}                     the SDK imported and a hypervisor is there
                  {"type":"unavailable","message":str} the reason it cannot run; then exit 0
  host -> worker  {"type":"configure","fingerprint":str,"tools":[str],"input_dir":str|null,
                   "output_dir":str,"network":[{"target":str,"methods":[str]|null}],
                   "environment":{str:str},"cpu_time_s":N}
  worker -> host  {"type":"configured","reused":bool} or {"type":"unavailable","message":str}
  host -> worker  {"type":"request",...}               exactly runner.py's request frame
  worker -> host  tool_call frames, answered by tool_result frames, and one terminal frame
                  (complete / error / limit) as runner.py sends them

The guest's stdout and stderr are written to fds 1 and 2 before the terminal frame, so the host's
pipe readers apply the output caps; anything the SDK itself prints goes to /dev/null.

Sandboxes: one per config fingerprint (the last few kept), built on its first configure: tools
registered as callbacks that forward over the bridge, network targets allowed, the VM started by
a warm-up run, then snapshotted. Every run restores that snapshot first, so nothing the code did
in one run is seen by the next. Each configure clears the output directory (files persist there
otherwise).
"""

import collections
import json
import os
import sys

# Internal callbacks registered in every sandbox besides the host's tools (the host refuses tool
# names starting with "__codeact_"): the end-of-run report, and the generic forwarder that the
# code's `await call_tool(...)` uses, so that unknown names and the budget are the host's to judge
# exactly as on the local backend.
_REPORT_TOOL = "__codeact_report__"
_CALL_TOOL = "__codeact_call__"
_TOOL_ERROR_KEY = "__codeact_tool_error__"
_MAX_SANDBOXES = 4
_DEVICES = ("/dev/kvm", "/dev/mshv")
_INSTALL_HINT = ("pip install hyperlight-sandbox hyperlight-sandbox-backend-wasm "
                 "hyperlight-sandbox-python-guest")

# Runs inside the guest, before the user's code (which is passed as a string literal): compiles it
# with top-level await allowed, returns a final bare expression as the output, and reports the
# end of the run through the internal report tool. The guest's own call_tool is synchronous; the
# code sees the same `await call_tool(...)` and ToolError as on the local backend.
_GUEST_PRELUDE = r'''
def _codeact_main(src, tool_names, env):
    import sys
    sync_call = call_tool
    error_key = "__codeact_tool_error__"

    def report(**fields):
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        sync_call("__codeact_report__", **fields)

    class ToolError(Exception):
        def __init__(self, error_type="ToolError", message="", tool=None):
            self.error_type = error_type
            self.message = message
            self.tool = tool
            super().__init__("%s: %s" % (error_type, message) if message else str(error_type))

    async def call_tool_async(name, /, *args, **kwargs):
        if args:
            raise TypeError("call_tool takes keyword arguments only")
        result = sync_call("__codeact_call__", tool=name, kwargs=kwargs)
        if isinstance(result, dict) and error_key in result:
            err = result[error_key]
            raise ToolError(err.get("error_type", "ToolError"), err.get("message", ""), name)
        return result

    def make_tool(name):
        async def tool(*args, **kwargs):
            if args:
                raise TypeError("%s() takes keyword arguments only" % name)
            return await call_tool_async(name, **kwargs)
        tool.__name__ = tool.__qualname__ = name
        return tool

    def json_safe(value, depth=0):
        if value is None or isinstance(value, (bool, int, str)):
            return value
        if isinstance(value, float):
            return value if value == value and value not in (float("inf"), float("-inf")) else None
        if depth < 100 and isinstance(value, (list, tuple)):
            return [json_safe(v, depth + 1) for v in value]
        if depth < 100 and isinstance(value, dict):
            return {(k if isinstance(k, str) else str(k)): json_safe(v, depth + 1)
                    for k, v in value.items()}
        return repr(value)

    def report_error(exc):
        import linecache
        import traceback
        linecache.cache["<code>"] = (len(src), None, src.splitlines(True), "<code>")
        frames = traceback.extract_tb(exc.__traceback__)
        first = next((i for i, f in enumerate(frames) if f.filename == "<code>"), len(frames))
        text = "".join(traceback.format_list(frames[first:]))
        if text:
            text = "Traceback (most recent call last):\n" + text
        text += "".join(traceback.format_exception_only(type(exc), exc))
        report(kind="error", error_type=type(exc).__name__, message=str(exc), traceback=text)

    try:
        import os
        os.environ.clear()
        os.environ.update(env)
    except BaseException:
        pass
    builtins = __builtins__  # the guest's own (a module, or a dict where exec gave one)
    names = builtins if isinstance(builtins, dict) else builtins.__dict__
    g = {"__name__": "__main__", "__builtins__": builtins, "call_tool": call_tool_async,
         "ToolError": ToolError}
    keywords = {"False", "None", "True", "and", "as", "assert", "async", "await", "break",
                "class", "continue", "def", "del", "elif", "else", "except", "finally", "for",
                "from", "global", "if", "import", "in", "is", "lambda", "nonlocal", "not", "or",
                "pass", "raise", "return", "try", "while", "with", "yield"}
    for name in tool_names:
        if (name.isidentifier() and name not in keywords and name not in names
                and name not in g):
            g[name] = make_tool(name)
    try:
        import ast
        tree = ast.parse(src, "<code>", "exec")
        has_output = bool(tree.body) and isinstance(tree.body[-1], ast.Expr)
        if has_output:
            last = tree.body[-1]
            tree.body[-1] = ast.copy_location(
                ast.Assign(targets=[ast.Name("__codeact_output__", ast.Store())], value=last.value),
                last)
            ast.fix_missing_locations(tree)
        code = compile(tree, "<code>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        if code.co_flags & 0x80:
            coro = eval(code, g)
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
            else:
                try:
                    coro.send(None)
                except StopIteration:
                    pass
                else:
                    coro.close()
                    raise RuntimeError("only call_tool can be awaited in this guest (no asyncio)")
        else:
            exec(code, g)
        output = g.get("__codeact_output__") if has_output else None
        if output is None:
            report(kind="complete", output_present=False, output=None)
        else:
            report(kind="complete", output_present=True, output=json_safe(output))
    except SystemExit as e:
        if e.code is None or e.code == 0:
            report(kind="complete", output_present=False, output=None)
        else:
            report_error(e)
    except BaseException as e:
        report_error(e)
'''

# Run once when a sandbox is built: starts the VM and loads what every run needs, so that the
# snapshot taken afterwards already holds it.
_WARM_UP = "import ast, linecache, traceback\n"


def _dumps(value):
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False)


class _Bridge:
    def __init__(self, rfd, wfd):
        self.rfd = rfd
        self.wfd = wfd
        self.buf = bytearray()

    def send(self, frame):
        data = (_dumps(frame) + "\n").encode("ascii")
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.wfd, view):]
        except OSError:
            os._exit(3)  # the host is gone

    def read(self):
        """The next frame from the host; exits quietly when the host closed the bridge."""
        while True:
            end = self.buf.find(b"\n")
            if end >= 0:
                line = bytes(self.buf[:end])
                del self.buf[:end + 1]
                if not line.strip():
                    continue
                try:
                    msg = json.loads(line.decode("utf-8"))
                except ValueError:
                    os._exit(4)
                if type(msg) is dict:
                    return msg
                os._exit(4)
            try:
                data = os.read(self.rfd, 1 << 18)
            except OSError:
                data = b""
            if not data:
                os._exit(0)
            self.buf += data


def _write_all(fd, text):
    if text is None:
        return
    data = text if isinstance(text, (bytes, bytearray)) else str(text).encode("utf-8", "replace")
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError:
        pass


def _clear_directory(path):
    import shutil
    try:
        entries = list(os.scandir(path))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:
            pass


def _hypervisor_problem():
    """None when a hypervisor device opens, else why none does."""
    reasons = []
    for path in _DEVICES:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except OSError as e:
            reasons.append("%s: %s" % (path, e.strerror or e))
            continue
        os.close(fd)
        return None
    return "no usable hypervisor device (" + "; ".join(reasons) + ")"


class _Worker:
    def __init__(self, bridge, sdk, out_fd, err_fd):
        self.bridge = bridge
        self.sdk = sdk
        self.out_fd = out_fd
        self.err_fd = err_fd
        self.sandboxes = collections.OrderedDict()  # fingerprint -> [sandbox, snapshot, config]
        self.current = None
        self.report = None
        self.next_id = 1
        self.max_frame = 1 << 20
        self.cpu_time_s = 0

    # -- tools ------------------------------------------------------------------------------

    def call_host(self, name, kwargs):
        call_id = self.next_id
        self.next_id += 1
        try:
            frame = {"type": "tool_call", "id": call_id, "name": name, "kwargs": kwargs}
            size = len(_dumps(frame)) + 1
        except (TypeError, ValueError) as e:
            return {_TOOL_ERROR_KEY: {"error_type": "ToolError",
                                      "message": "arguments are not JSON: %s" % e}}
        if size > self.max_frame:
            return {_TOOL_ERROR_KEY: {"error_type": "FrameTooLarge",
                                      "message": "the call's %d bytes exceed the frame limit of %d"
                                                 % (size, self.max_frame)}}
        self.bridge.send(frame)
        while True:
            msg = self.bridge.read()
            if msg.get("type", "tool_result") == "tool_result" and msg.get("id") == call_id:
                break
        if msg.get("ok") is True:
            return msg.get("result")
        return {_TOOL_ERROR_KEY: {"error_type": str(msg.get("error_type") or "ToolError"),
                                  "message": str(msg.get("message") or "")}}

    def forwarder(self, name):
        def forward(**kwargs):
            return self.call_host(name, kwargs)
        forward.__name__ = "forward_" + "".join(c if c.isalnum() else "_" for c in name)
        return forward

    def forward_any(self, tool="", kwargs=None):
        if type(kwargs) is not dict:
            kwargs = {}
        return self.call_host(str(tool), kwargs)

    def take_report(self, **fields):
        self.report = fields
        return True

    # -- sandboxes --------------------------------------------------------------------------

    def configure(self, msg):
        # /output starts empty for every run (the host captures what is there afterwards).
        if msg.get("output_dir"):
            _clear_directory(msg["output_dir"])
        fingerprint = str(msg.get("fingerprint", ""))
        entry = self.sandboxes.get(fingerprint)
        if entry is not None:
            self.sandboxes.move_to_end(fingerprint)
            self.current = entry
            self.cpu_time_s = int(msg.get("cpu_time_s") or 0)
            return {"type": "configured", "reused": True}
        try:
            sandbox = self.sdk.Sandbox(input_dir=msg.get("input_dir") or None,
                                       output_dir=msg.get("output_dir") or None)
            for name in msg.get("tools") or []:
                sandbox.register_tool(str(name), self.forwarder(str(name)))
            sandbox.register_tool(_REPORT_TOOL, self.take_report)
            sandbox.register_tool(_CALL_TOOL, self.forward_any)
            for target in msg.get("network") or []:
                methods = target.get("methods")
                if methods:
                    sandbox.allow_domain(str(target["target"]), list(methods))
                else:
                    sandbox.allow_domain(str(target["target"]))
            warm = sandbox.run(_WARM_UP)
            if getattr(warm, "exit_code", 0) != 0:
                raise RuntimeError("the warm-up run exited with code %s: %s"
                                   % (warm.exit_code, (getattr(warm, "stderr", "") or "").strip()))
            snapshot = sandbox.snapshot()
        except BaseException as e:  # the SDK's errors are the reason the backend cannot run
            text = str(e).strip() or type(e).__name__
            return {"type": "unavailable",
                    "message": "the hyperlight guest did not start: %s: %s" % (type(e).__name__, text)}
        entry = [sandbox, snapshot, msg]
        self.sandboxes[fingerprint] = entry
        while len(self.sandboxes) > _MAX_SANDBOXES:
            self.sandboxes.popitem(last=False)
        self.current = entry
        self.cpu_time_s = int(msg.get("cpu_time_s") or 0)
        return {"type": "configured", "reused": False}

    # -- one run ----------------------------------------------------------------------------

    def limit_cpu(self):
        """RLIMIT_CPU counts the whole life of this process: give this run its own budget."""
        if self.cpu_time_s <= 0:
            return
        try:
            import resource
            usage = resource.getrusage(resource.RUSAGE_SELF)
            soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
            want = int(usage.ru_utime + usage.ru_stime) + 1 + self.cpu_time_s
            if hard != resource.RLIM_INFINITY:
                want = min(want, hard)
            resource.setrlimit(resource.RLIMIT_CPU, (want, hard))
        except (ImportError, OSError, ValueError):
            pass

    def run(self, req):
        if self.current is None:
            self.bridge.send({"type": "error", "error_type": "BridgeError",
                              "message": "request before configure", "traceback": ""})
            return
        sandbox, snapshot, config = self.current
        code = req.get("code")
        tools = req.get("tools") or []
        if type(code) is not str or type(tools) is not list:
            self.bridge.send({"type": "error", "error_type": "BridgeError",
                              "message": "malformed request", "traceback": ""})
            return
        self.max_frame = int(req.get("max_frame_bytes") or (1 << 20))
        max_output = int(req.get("max_output_bytes") or (1 << 20))
        self.report = None
        self.next_id = 1
        self.limit_cpu()
        guest_code = "%s\n_codeact_main(%r, %r, %r)\n" % (
            _GUEST_PRELUDE, code, [str(t) for t in tools], dict(config.get("environment") or {}))
        try:
            sandbox.restore(snapshot)
            result = sandbox.run(guest_code)
        except BaseException as e:
            self.bridge.send(self.error_frame("GuestError", "the guest failed: %s: %s"
                                              % (type(e).__name__, e), ""))
            return
        _write_all(self.out_fd, getattr(result, "stdout", ""))
        _write_all(self.err_fd, getattr(result, "stderr", ""))
        try:
            sandbox.get_output_files()  # lets the SDK copy /output out where it does so lazily
        except BaseException:
            pass
        self.bridge.send(self.terminal_frame(getattr(result, "exit_code", None), max_output))

    def terminal_frame(self, exit_code, max_output):
        report = self.report
        if report is None:
            return self.error_frame("GuestError", "the guest ended without a result (exit code %s)"
                                    % exit_code, "")
        if report.get("kind") == "complete":
            if not report.get("output_present"):
                return {"type": "complete", "output_present": False, "output": None}
            output = report.get("output")
            try:
                size = len(_dumps(output))
            except (TypeError, ValueError):
                output = repr(output)
                size = len(_dumps(output))
            if size > max_output:
                return {"type": "limit", "limit": "output",
                        "message": "the output's %d bytes of JSON exceed the limit of %d bytes"
                                   % (size, max_output)}
            return {"type": "complete", "output_present": True, "output": output}
        return self.error_frame(str(report.get("error_type") or "Error"),
                                str(report.get("message") or ""), str(report.get("traceback") or ""))

    def error_frame(self, error_type, message, traceback):
        quarter = max(self.max_frame // 4, 64)

        def cut(text):
            if len(text) <= quarter:
                return text
            return text[:quarter] + "... [truncated %d bytes]" % (len(text) - quarter)

        return {"type": "error", "error_type": cut(error_type), "message": cut(message),
                "traceback": cut(traceback)}

    def serve(self):
        while True:
            msg = self.bridge.read()
            kind = msg.get("type")
            if kind == "configure":
                self.bridge.send(self.configure(msg))
            elif kind == "request":
                try:
                    self.run(msg)
                except Exception as e:  # a bug here must end the run with a reason, not silently
                    import traceback
                    self.bridge.send(self.error_frame("WorkerError", "the hyperlight worker failed: %s: %s"
                                                      % (type(e).__name__, e), traceback.format_exc()))
            # unknown frame types are ignored


def main():
    fds = os.environ.pop("CODEACT_BRIDGE_FDS", "3,4").split(",")
    bridge = _Bridge(int(fds[0]), int(fds[1]))
    # The guest's output goes to the host's pipes; the SDK's own chatter must not.
    out_fd = os.dup(1)
    err_fd = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    sdk_path = os.environ.pop("CODEACT_HYPERLIGHT_SDK_PATH", "")
    if sdk_path:
        sys.path.insert(0, sdk_path)
    try:
        import hyperlight_sandbox as sdk
    except BaseException as e:
        bridge.send({"type": "unavailable",
                     "message": "the hyperlight_sandbox SDK cannot be imported (%s: %s); install it "
                                "with `%s`" % (type(e).__name__, e, _INSTALL_HINT)})
        os._exit(0)
    # The tests' fake SDK runs the code in this process and needs no hypervisor; it says so.
    if not getattr(sdk, "CODEACT_TEST_FAKE_NEEDS_NO_HYPERVISOR", False):
        problem = _hypervisor_problem()
        if problem:
            bridge.send({"type": "unavailable", "message": problem})
            os._exit(0)
    bridge.send({"type": "ready"})
    _Worker(bridge, sdk, out_fd, err_fd).serve()


if __name__ == "__main__":
    main()
