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

Protocol: codeact_protocol.py (beside this file, which puts its own directory on sys.path):
a first frame "ready" (the SDK imported and a hypervisor is there) or "unavailable" (then exit
0); per run a "configure" frame answered by "configured" or "unavailable", then the runner's
request, tool_call and terminal frames exactly as runner.py speaks them.

The guest's stdout and stderr are written to fds 1 and 2 before the terminal frame, so the host's
pipe readers apply the output caps; anything the SDK itself prints goes to /dev/null.

The guest runs hyperlight_guest.py, sent as text behind codeact_convert.py's (both read from
this directory when the worker starts), so an output value becomes the same JSON as locally.

Sandboxes: one per config fingerprint (only the last one kept), built on its first configure: tools
registered as callbacks that forward over the bridge, network targets allowed (the host sends
them as the URLs the SDK parses), heap_size/stack_size from the run's memory limit, the VM
started by a warm-up run, then snapshotted. Every run restores that snapshot first, so nothing
the code did in one run is seen by the next. Each configure clears the output directory (files
persist there otherwise). When the SDK raises while a sandbox is built, restored or run, that
sandbox is dropped: the run ends with a "GuestError" error frame, on which the host also retires
this worker.

Start-up: the host gives XDG_CACHE_HOME (where the guest package writes its compiled module when
a sandbox is made) and a hard RLIMIT_FSIZE large enough for that module; the worker lowers the
soft limit to the run's max_file_size_bytes while the guest runs (it writes /output's files),
and raises it again for builds.
"""

import collections
import os
import sys

# The protocol and the guest's modules sit beside this file (-I puts nothing of ours on the path).
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(_HERE)
sys.dont_write_bytecode = True

from codeact_protocol import (COMPLETE_NO_OUTPUT, ProtocolError, check_required,  # noqa: E402
                              complete_frame, configured_frame, decode, encode, error_frame,
                              is_tool_result, limit_frame, request_code_and_tools, request_limit,
                              tool_answer, tool_call_frame, unavailable_frame, worker_ready_frame)
from hyperlight_guest import CALL_TOOL, OUTPUT_TOOL, REPORT_TOOL, TOOL_ERROR_KEY  # noqa: E402

# One warm sandbox per worker (that of its last fingerprint; the host keeps several idle workers
# and prefers the one whose last run had the same fingerprint): the worker's memory cgroup is
# sized for one guest and its snapshot.
_MAX_SANDBOXES = 1
_DEVICES = ("/dev/kvm", "/dev/mshv")
# The release the worker was checked against (docs/hyperlight.md).
_INSTALL_HINT = ("pip install hyperlight-sandbox==0.3.0 hyperlight-sandbox-backend-wasm==0.3.0 "
                 "hyperlight-sandbox-python-guest==0.3.0")

# The guest's own modules, as text (hyperlight_guest.py's docstring says how they fit together).
_GUEST_MODULES = ("codeact_convert.py", "hyperlight_guest.py")


def guest_source():
    """The text sent into the guest ahead of each run's call of _codeact_main."""
    parts = []
    for name in _GUEST_MODULES:
        with open(os.path.join(_HERE, name), encoding="utf-8") as f:
            parts.append(f.read())
    return "\n".join(parts)


class _Bridge:
    def __init__(self, rfd, wfd):
        self.rfd = rfd
        self.wfd = wfd
        self.buf = bytearray()

    def send(self, frame):
        """Writes one frame, the text a codeact_protocol builder made."""
        data = (frame + "\n").encode("ascii")
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
                    msg = decode(line.decode("utf-8"))
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


def _set_file_size_limit(soft):
    """RLIMIT_FSIZE's soft limit: `soft` bytes, or the hard limit for None."""
    try:
        import resource
        _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        if soft is None or (hard != resource.RLIM_INFINITY and soft > hard):
            soft = hard
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    except (ImportError, OSError, ValueError):
        pass


def _package_problem():
    """None when the SDK's Wasm backend imports and its Python guest package is there, else why
    not. The guest is only looked up: importing it writes its compiled module to the cache."""
    try:
        import hyperlight_sandbox_backend_wasm  # noqa: F401
        import importlib.util
        if importlib.util.find_spec("python_guest") is None:
            raise ImportError("No module named 'python_guest'")
    except BaseException as e:
        return ("the hyperlight_sandbox SDK is there but not its Wasm backend or Python guest "
                "(%s: %s); install them with `%s`" % (type(e).__name__, e, _INSTALL_HINT))
    return None


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
        self.output_parts = []
        self.output_size = 0
        self.max_output = 1 << 20
        self.next_id = 1
        self.max_frame = 1 << 20
        self.cpu_time_s = 0
        self.file_size = None
        self.guest_source = guest_source()

    # -- tools ------------------------------------------------------------------------------

    def call_host(self, name, kwargs):
        call_id = self.next_id
        self.next_id += 1
        try:
            frame = tool_call_frame(call_id, encode(name), encode(kwargs))
            size = len(frame) + 1
        except (TypeError, ValueError) as e:
            return {TOOL_ERROR_KEY: {"error_type": "ToolError",
                                      "message": "arguments are not JSON: %s" % e}}
        if size > self.max_frame:
            return {TOOL_ERROR_KEY: {"error_type": "FrameTooLarge",
                                      "message": "the call's %d bytes exceed the frame limit of %d"
                                                 % (size, self.max_frame)}}
        self.bridge.send(frame)
        while True:
            msg = self.bridge.read()
            if not is_tool_result(msg):
                continue
            try:
                answer_id, answer = tool_answer(msg)
            except ProtocolError as e:
                return {TOOL_ERROR_KEY: {"error_type": "BridgeError", "message": str(e)}}
            if answer_id == call_id:
                break
        if answer[0]:
            return answer[1]
        return {TOOL_ERROR_KEY: {"error_type": str(answer[1] or "ToolError"),
                                  "message": str(answer[2] or "")}}

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

    def take_output(self, chunk=""):
        """One piece of the output's JSON text; past the conversion's bound it is only counted."""
        self.output_size += len(chunk)
        if self.output_size <= 4 * self.max_output + 65536:
            self.output_parts.append(str(chunk))
        return True

    # -- sandboxes --------------------------------------------------------------------------

    def configure(self, msg):
        try:
            check_required(msg, "configure")
        except ProtocolError as e:
            return unavailable_frame(str(e))
        # /output starts empty for every run (the host captures what is there afterwards).
        if msg.get("output_dir"):
            _clear_directory(msg["output_dir"])
        self.cpu_time_s = int(msg.get("cpu_time_s") or 0)
        self.file_size = int(msg.get("max_file_size_bytes") or 0) or None
        fingerprint = str(msg.get("fingerprint", ""))
        entry = self.sandboxes.get(fingerprint)
        if entry is not None:
            self.sandboxes.move_to_end(fingerprint)
            self.current = entry
            return configured_frame(True)
        self.current = None
        # The guest package writes its .aot when the sandbox is made: under the hard limit.
        _set_file_size_limit(None)
        try:
            sandbox = self.sdk.Sandbox(input_dir=msg.get("input_dir") or None,
                                       output_dir=msg.get("output_dir") or None,
                                       heap_size=str(msg["heap_size"]),
                                       stack_size=str(msg["stack_size"]))
            for name in msg.get("tools") or []:
                sandbox.register_tool(str(name), self.forwarder(str(name)))
            sandbox.register_tool(REPORT_TOOL, self.take_report)
            sandbox.register_tool(OUTPUT_TOOL, self.take_output)
            sandbox.register_tool(CALL_TOOL, self.forward_any)
            for target in msg.get("network") or []:
                methods = target.get("methods")
                # The host sends URLs (common/egress_target.hpp): the SDK parses them when the
                # VM is built, by the warm-up below.
                sandbox.allow_domain(str(target["target"]), list(methods) if methods else None)
            # Starts the VM and loads what every run needs, so that the snapshot holds it.
            warm = sandbox.run(self.guest_source + "\n_codeact_warm_up()\n")
            if getattr(warm, "exit_code", 0) != 0:
                raise RuntimeError("the warm-up run exited with code %s: %s"
                                   % (warm.exit_code, (getattr(warm, "stderr", "") or "").strip()))
            snapshot = sandbox.snapshot()
        except BaseException as e:  # the SDK's errors are the reason the backend cannot run
            text = str(e).strip() or type(e).__name__
            return unavailable_frame("the hyperlight guest did not start: %s: %s"
                                     % (type(e).__name__, text))
        entry = [sandbox, snapshot, msg]
        self.sandboxes[fingerprint] = entry
        while len(self.sandboxes) > _MAX_SANDBOXES:
            self.sandboxes.popitem(last=False)
        self.current = entry
        return configured_frame(False)

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
            self.bridge.send(error_frame("BridgeError", "request before configure", ""))
            return
        sandbox, snapshot, config = self.current
        try:
            code, tools = request_code_and_tools(req)
            self.max_frame = request_limit(req, "max_frame_bytes")
            max_output = request_limit(req, "max_output_bytes")
        except ProtocolError as e:
            self.bridge.send(error_frame("BridgeError", "malformed request: %s" % e, ""))
            return
        self.report = None
        self.output_parts = []
        self.output_size = 0
        self.max_output = max_output
        self.next_id = 1
        self.limit_cpu()
        # The output is converted in the guest with the local runner's bound (runner_cold.py).
        guest_code = "%s\n_codeact_main(%r, %r, %r, %d, %r)\n" % (
            self.guest_source, code, [str(t) for t in tools],
            dict(config.get("environment") or {}), 4 * max_output + 65536,
            bool(config.get("network")))
        _set_file_size_limit(self.file_size)  # /output's files are written by this process
        try:
            sandbox.restore(snapshot)
            result = sandbox.run(guest_code)
        except BaseException as e:
            # Whatever state the SDK left this sandbox in, no later run may inherit it; the host
            # recycles this worker too (GuestError).
            self.drop_current()
            self.bridge.send(self.error_frame("GuestError", "the guest failed: %s: %s"
                                              % (type(e).__name__, e), ""))
            return
        finally:
            _set_file_size_limit(None)
        _write_all(self.out_fd, getattr(result, "stdout", ""))
        _write_all(self.err_fd, getattr(result, "stderr", ""))
        try:
            sandbox.get_output_files()  # lets the SDK copy /output out where it does so lazily
        except BaseException:
            pass
        self.bridge.send(self.terminal_frame(getattr(result, "exit_code", None), max_output))

    def drop_current(self):
        for key, entry in list(self.sandboxes.items()):
            if entry is self.current:
                del self.sandboxes[key]
        self.current = None

    def terminal_frame(self, exit_code, max_output):
        report = self.report
        if report is None:
            return self.error_frame("GuestError", "the guest ended without a result (exit code %s)"
                                    % exit_code, "")
        if report.get("kind") == "limit":
            return limit_frame("the output's %s or more bytes of JSON exceed the limit of %d bytes"
                               % (report.get("size"), max_output))
        if report.get("kind") == "complete":
            frame = self.complete_frame(report, max_output)
            note = report.get("note")
            if isinstance(note, str) and note and frame.startswith('{"type":"complete"'):
                # Tool coroutines the code never awaited: the result's message says so.
                frame = frame[:-1] + ',"note":%s}' % encode(note[:4096])
            return frame
        return self.error_frame(str(report.get("error_type") or "Error"),
                                str(report.get("message") or ""), str(report.get("traceback") or ""))

    def complete_frame(self, report, max_output):
        """The complete frame (or a limit or error frame) for a "complete" report."""
        if not report.get("output_present"):
            return COMPLETE_NO_OUTPUT
        if report.get("output_chunks"):
            if self.output_size > 4 * max_output + 65536:
                return limit_frame("the output's %d or more bytes of JSON exceed the limit of "
                                   "%d bytes" % (self.output_size, max_output))
            try:
                output = decode("".join(self.output_parts))
            except ValueError as e:
                return self.error_frame("GuestError", "the guest's output is not JSON: %s"
                                        % e, "")
        else:
            output = report.get("output")
        try:
            out = encode(output)
        except (TypeError, ValueError):
            out = encode(repr(output))
        if len(out) > max_output:
            return limit_frame("the output's %d bytes of JSON exceed the limit of %d bytes"
                               % (len(out), max_output))
        return complete_frame(out)

    def error_frame(self, error_type, message, traceback):
        quarter = max(self.max_frame // 4, 64)

        def cut(text):
            if len(text) <= quarter:
                return text
            return text[:quarter] + "... [truncated %d bytes]" % (len(text) - quarter)

        return error_frame(cut(error_type), cut(message), cut(traceback))

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
                    self.drop_current()
                    self.bridge.send(self.error_frame("GuestError", "the hyperlight worker failed: %s: %s"
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
        bridge.send(unavailable_frame("the hyperlight_sandbox SDK cannot be imported (%s: %s); "
                                      "install it with `%s`"
                                      % (type(e).__name__, e, _INSTALL_HINT)))
        os._exit(0)
    # The tests' fake SDK runs the code in this process and needs no hypervisor; it says so.
    if not getattr(sdk, "CODEACT_TEST_FAKE_NEEDS_NO_HYPERVISOR", False):
        problem = _package_problem()
        if problem:
            bridge.send(unavailable_frame(problem))
            os._exit(0)
        problem = _hypervisor_problem()
        if problem:
            bridge.send(unavailable_frame(problem))
            os._exit(0)
    worker = _Worker(bridge, sdk, out_fd, err_fd)
    bridge.send(worker_ready_frame())
    worker.serve()


if __name__ == "__main__":
    main()
