"""FAKE `hyperlight_sandbox` SDK for codeact's tests. It is NOT a sandbox.

It implements the public hyperlight-sandbox Python API that resources/hyperlight_worker.py uses
-- Sandbox(*, input_dir, output_dir, heap_size, stack_size, ...), register_tool, allow_domain,
run -> (stdout, stderr, exit_code), snapshot/restore, get_output_files, output_path -- on top of
plain `exec` in the worker's own process, so that the whole C++ path of the hyperlight backend
can be exercised where no SDK or hypervisor exists. The worker only ever imports it when the host
points CODEACT_HYPERLIGHT_SDK_PATH at tests/fakes explicitly.

It is written from the real SDK's source (hyperlight-sandbox 0.3.0: core __init__.py,
wasm_backend/src/lib.rs, pyo3_common, tools.rs, network.rs, cap_fs.rs and the Python guest's
sandbox_executor.py) and is as strict as that wherever codeact could get it wrong:
  - Sandbox() takes keyword arguments only; heap_size/stack_size use the SDK's size syntax.
  - register_tool/allow_domain only before the first run(); the VM is built by the first run(),
    which only then parses the network targets: a target that is not a URL with a host
    ("api.example.com") or an unknown method fails that run with the SDK's text, and, as in the
    real backend, the targets are consumed, so a sandbox reused after that has no network.
  - the guest's globals are exactly __builtins__, call_tool, http_get and http_post (no
    __name__); an exception escaping the code prints "Type: message" to stderr (no traceback)
    and exits 1; SystemExit with a non-int code exits 1.
  - call_tool(name, **kwargs) is synchronous; its arguments travel as JSON and over 1 MiB
    (the SDK's estimate) fail with RuntimeError("Tool 'name' failed: ..."), like any error of
    the host callback; integers outside int64 arrive as floats, both ways; a result nested
    deeper than 64 levels fails; a tuple or another object comes back as its str().
  - http_get(url) / http_post(url, body, content_type) return {"status", "body"} for a URL an
    allowed target matches (scheme, host, port, path prefix, method; CONNECT/TRACE never) and
    raise otherwise. The fake reaches loopback addresses only, without following redirects.
  - /input/NAME (read-only) and /output/NAME through open(): flat, a '/' in NAME is refused.
  - snapshot(), restore(), get_output_files() and output_path() need a built sandbox.
  - the guest's memory is bounded by heap_size (RLIMIT_AS is lowered around each run()).
  - Sandbox() materialises the guest's module under $XDG_CACHE_HOME (else ~/.cache) like the
    guest package, as a sparse file of 70 MiB: it fails where the cache is not writable or
    RLIMIT_FSIZE is below that.
  - the guest's os.environ is its own: the worker's is put back after each run().

What the fake models, for tests to observe through extra builtins in the "guest":
  fake_guest_memory     a dict standing for the guest's memory: snapshot() copies it and
                        restore() puts the copy back, so a value set in one run and seen in the
                        next means the worker did not restore
  fake_sandbox_id       which Sandbox object ran the code (a new one per configuration)
  fake_allowed_domains  [[url, methods or None], ...] as parsed when the VM was built
  fake_sizes            {"heap_size": bytes, "stack_size": bytes} as given to Sandbox()
  fake_cache_file       the module file Sandbox() wrote in the cache
  fake_write_later(name, text, delay_s)  writes /output/NAME from the host's side after the run
                        has ended, as a file the SDK's filesystem flushes late would appear
  fake_input_dir        the host directory Sandbox() was given as input_dir
Markers in input_dir (the tests' stand-ins for hosts that differ):
  fake-guest-start-fails     the VM does not start; the first run() raises the file's text
  fake-guest-minimal-stdlib  the guest's standard library lacks asyncio and traceback
  fake-guest-restore-fails   restore() raises once (the file is removed), as a broken VM would
"""

import builtins as _builtins
import contextlib
import copy
import errno
import inspect
import io
import json
import os
import urllib.error
import urllib.parse
import urllib.request

# Read by the worker: this module runs code in-process and needs no /dev/kvm or /dev/mshv.
CODEACT_TEST_FAKE_NEEDS_NO_HYPERVISOR = True

__version__ = "0.3.0+codeact-test-fake"

_MAX_ARGS_SIZE = 1024 * 1024
_MAX_JSON_DEPTH = 64
_MAX_CODE_SIZE = 10 * 1024 * 1024
_INT64 = (-(1 << 63), (1 << 63) - 1)
_METHODS = ("GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "CONNECT", "TRACE")
_MISSING_IN_MINIMAL_STDLIB = ("asyncio", "traceback")
_GUEST_MODULE_BYTES = 70 << 20  # the size of the fake's guest module (a real .aot is tens of MiB)


def _materialize_guest_module():
    """python_guest.path's _materialize, with a sparse stand-in for the .aot."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    cache = os.path.join(root, "hyperlight_sandbox_guests", "python_guest")
    os.makedirs(cache, mode=0o700, exist_ok=True)
    target = os.path.join(cache, "python-sandbox.aot")
    if not os.path.exists(target):
        import tempfile
        fd, tmp = tempfile.mkstemp(dir=cache)
        try:
            os.lseek(fd, _GUEST_MODULE_BYTES - 1, os.SEEK_SET)
            os.write(fd, b"\0")
            os.close(fd)
            fd = -1
            os.replace(tmp, target)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    return target


class ExecutionResult:
    def __init__(self, stdout, stderr, exit_code):
        self.stdout = stdout
        self.stderr = stderr
        self.exit_code = exit_code

    @property
    def success(self):
        return self.exit_code == 0


class Snapshot:
    def __init__(self, memory):
        self._memory = memory


class Err(Exception):
    """What the guest's WASI-HTTP binding raises for an error result (componentize-py's Err)."""


def _parse_size(size):
    text = str(size).strip()
    for suffix, mult in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if text.endswith(suffix):
            text, multiplier = text[:-len(suffix)], mult
            break
    else:
        multiplier = 1
    if not text.isdigit():
        raise RuntimeError("invalid size: invalid digit found in string")
    return int(text) * multiplier


def _parse_target(target):
    """The permission url crate-style, or the SDK's RuntimeError text."""
    scheme, sep, _ = target.partition(":")
    if not sep or not scheme or not (scheme[0].isalpha() and all(
            c.isalnum() or c in "+-." for c in scheme)):
        raise RuntimeError("invalid URL for network permission: relative URL without a base")
    if not target[len(scheme) + 1:].startswith("//"):
        raise RuntimeError("URL has no host: %s" % target)
    parts = urllib.parse.urlsplit(target)
    try:
        port = parts.port
    except ValueError:
        raise RuntimeError("invalid URL for network permission: invalid port number") from None
    if not parts.hostname:
        raise RuntimeError("invalid URL for network permission: empty host")
    scheme = parts.scheme.lower()
    if port == {"https": 443, "http": 80}.get(scheme):
        port = None
    return {"scheme": scheme, "host": parts.hostname.lower(), "port": port,
            "path": parts.path.rstrip("/")}


def _parse_methods(methods):
    if methods is None:
        return None
    if len(methods) > 16:
        raise RuntimeError("too many HTTP methods (%d, max 16)" % len(methods))
    out = []
    for m in methods:
        if str(m).upper() not in _METHODS:
            raise RuntimeError("invalid HTTP method: %s" % m)
        out.append(str(m).upper())
    return out


def _estimate_json_size(v, depth=0):
    """tools.rs's estimate_json_size."""
    if depth > _MAX_JSON_DEPTH:
        return 0
    if v is None:
        return 4
    if v is True:
        return 4
    if v is False:
        return 5
    if isinstance(v, (int, float)):
        return len(json.dumps(v))
    if isinstance(v, str):
        return len(v.encode("utf-8", "surrogatepass")) + 2
    if isinstance(v, list):
        return 2 + sum(_estimate_json_size(x, depth + 1) for x in v) + max(len(v) - 1, 0)
    return 2 + sum(len(k.encode("utf-8", "surrogatepass")) + 3 + _estimate_json_size(x, depth + 1)
                   for k, x in v.items()) + max(len(v) - 1, 0)


def _json_to_py(v):
    """pyo3_common's json_to_py: an integer outside int64 becomes a float."""
    if isinstance(v, bool) or v is None or isinstance(v, (str, float)):
        return v
    if isinstance(v, int):
        return v if _INT64[0] <= v <= _INT64[1] else float(v)
    if isinstance(v, list):
        return [_json_to_py(x) for x in v]
    return {k: _json_to_py(x) for k, x in v.items()}


def _py_to_json(obj, depth=0):
    """pyo3_common's py_to_json."""
    if depth > _MAX_JSON_DEPTH:
        raise RuntimeError("py_to_json: maximum nesting depth (%d) exceeded" % _MAX_JSON_DEPTH)
    if obj is None or isinstance(obj, bool):
        return obj
    if isinstance(obj, int):
        return int(obj) if _INT64[0] <= obj <= _INT64[1] else float(obj)
    if isinstance(obj, float):
        return float(obj)
    if isinstance(obj, str):
        return str(obj)
    if isinstance(obj, list):
        return [_py_to_json(x, depth + 1) for x in obj]
    if isinstance(obj, dict):
        out = {}
        for k, x in obj.items():
            if not isinstance(k, str):
                raise TypeError("'%s' object cannot be converted to 'PyString'" % type(k).__name__)
            out[k] = _py_to_json(x, depth + 1)
        return out
    return str(obj)


def _is_loopback(host):
    return host in ("localhost", "::1", "[::1]") or host.startswith("127.")


class Sandbox:
    _count = 0
    MAX_CODE_SIZE = _MAX_CODE_SIZE

    def __init__(self, *, input_dir=None, output_dir=None, temp_output=False, backend="wasm",
                 module="python_guest.path", module_path=None, heap_size=None, stack_size=None):
        if backend != "wasm":
            raise ValueError("the fake has the wasm backend only")
        Sandbox._count += 1
        self._id = Sandbox._count
        self._input_dir = input_dir
        self._output_dir = output_dir
        self._module_file = _materialize_guest_module()
        self._heap = _parse_size(heap_size if heap_size is not None else "25Mi")
        self._stack = _parse_size(stack_size if stack_size is not None else "35Mi")
        self._tools = {}
        self._pending_domains = []
        self._permissions = []
        self._built = False
        self._memory = {}

    def _marker(self, name):
        return os.path.join(self._input_dir, name) if self._input_dir else None

    def register_tool(self, name_or_tool, callback=None):
        if self._built:
            raise RuntimeError("Cannot register tools after sandbox has been initialized. "
                               "Register all tools before the first run() call.")
        if callback is None:
            raise TypeError("register_tool() expects (name, callable) or a Tool object")
        self._tools[str(name_or_tool)] = callback

    def allow_domain(self, target, methods=None):
        if self._built:
            self._permissions.append((_parse_target(target), _parse_methods(methods), target))
        else:
            self._pending_domains.append((str(target), list(methods) if methods else None))

    def snapshot(self):
        if not self._built:
            raise RuntimeError("Sandbox not initialized")
        return Snapshot(copy.deepcopy(self._memory))

    def restore(self, snap):
        if not self._built:
            raise RuntimeError("Sandbox not initialized")
        marker = self._marker("fake-guest-restore-fails")
        if marker and os.path.exists(marker):
            os.unlink(marker)
            raise RuntimeError("Restore failed: the fake's stand-in for a broken VM")
        self._memory = copy.deepcopy(snap._memory)

    def output_path(self):
        if not self._built:
            raise RuntimeError("Sandbox not initialized")
        return self._output_dir

    def get_output_files(self):
        if not self._built:
            raise RuntimeError("Sandbox not initialized")
        if not self._output_dir:
            return []
        return sorted(e.name for e in os.scandir(self._output_dir) if e.is_file())

    # -- the "guest" ----------------------------------------------------------------------------

    def _build(self):
        marker = self._marker("fake-guest-start-fails")
        if marker and os.path.exists(marker):
            with _builtins.open(marker) as f:
                raise RuntimeError("Failed to create sandbox: " + f.read().strip())
        for name, fn in self._tools.items():
            try:
                inspect.signature(fn)  # the real SDK infers a schema from the signature
            except (TypeError, ValueError):
                raise RuntimeError("Cannot initialize sandbox: unable to infer argument schema "
                                   "for tool '%s'." % name) from None
        pending, self._pending_domains = self._pending_domains, []  # consumed, as in lib.rs
        permissions = []
        for target, methods in pending:
            permissions.append((_parse_target(target), _parse_methods(methods), target))
        self._permissions = permissions
        self._built = True

    def _dispatch(self, name, args_json):
        """The host side of tools.dispatch: size cap, lookup, JSON conversions both ways."""
        args = json.loads(args_json)
        size = _estimate_json_size(args)
        if size > _MAX_ARGS_SIZE:
            raise RuntimeError("tool '%s': argument payload too large (%d bytes, max %d)"
                               % (name, size, _MAX_ARGS_SIZE))
        fn = self._tools.get(name)
        if fn is None:
            raise RuntimeError("unknown tool: %s" % name)
        result = fn(**_json_to_py(args))
        if inspect.isawaitable(result):
            import asyncio
            result = asyncio.run(result)
        return json.dumps(_py_to_json(result))

    def _call_tool(self, tool_name, **kwargs):
        """The guest's call_tool (sandbox_executor.py)."""
        try:
            result_json = self._dispatch(tool_name, json.dumps(kwargs))
        except Exception as e:
            raise RuntimeError("Tool '%s' failed: %s" % (tool_name, e))
        return json.loads(result_json)

    def _allowed(self, url, method):
        if method in ("CONNECT", "TRACE"):
            return False
        for perm, methods, _ in self._permissions:
            if (perm["host"], perm["scheme"], perm["port"]) != (url["host"], url["scheme"],
                                                                url["port"]):
                continue
            path = url["path"] or "/"
            if perm["path"] and not (path == perm["path"] or path.startswith(perm["path"] + "/")):
                continue
            if methods is not None and method not in methods:
                continue
            return True
        return False

    def _http(self, method, url, body="", content_type=""):
        text = url if "://" in url else "https://" + url
        try:
            parsed = _parse_target(text)
        except RuntimeError as e:
            raise OSError("HTTP request failed: %s" % e) from None
        parsed["path"] = urllib.parse.urlsplit(text).path
        if not self._allowed(parsed, method):
            raise Err("Err(value=ErrorCode_HttpRequestDenied())")
        if not _is_loopback(parsed["host"]):
            raise Err("Err(value=ErrorCode_InternalError(value='the fake SDK reaches loopback "
                      "addresses only'))")

        class _NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):
                return None

        headers = {"user-agent": "hyperlight-sandbox/0.1"}
        if content_type:
            headers["content-type"] = content_type
        request = urllib.request.Request(text, data=body.encode() if body else None,
                                         headers=headers, method=method)
        opener = urllib.request.build_opener(_NoRedirect, urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=10) as response:
                status, data = response.status, response.read()
        except urllib.error.HTTPError as e:
            status, data = e.code, e.read()
        except OSError as e:
            raise Err("Err(value=ErrorCode_InternalError(value=%r))" % str(e)) from None
        return {"status": status, "body": data.decode("utf-8", errors="replace")}

    def _http_get(self, url):
        return self._http("GET", url)

    def _http_post(self, url, body="", content_type="application/json"):
        return self._http("POST", url, body=body, content_type=content_type)

    def _guest_path(self, path, mode):
        text = os.fspath(path)
        if not isinstance(text, str):
            return path
        for root, host, writable in (("/input", self._input_dir, False),
                                     ("/output", self._output_dir, True)):
            if text == root or text.startswith(root + "/"):
                name = text[len(root) + 1:]
                if host is None:
                    raise FileNotFoundError(errno.ENOENT, "No such file or directory", text)
                if not name or name in (".", "..") or "/" in name or "\\" in name:
                    raise OSError(errno.EINVAL, "Invalid argument", text)  # cap_fs: InvalidPath
                if not writable and any(c in mode for c in "wax+"):
                    raise PermissionError(errno.EPERM, "Operation not permitted", text)
                return os.path.join(host, name)
        return path

    def _write_later(self, name, text, delay_s):
        import threading
        path = os.path.join(self._output_dir, str(name))

        def write():
            with _builtins.open(path, "w") as f:
                f.write(str(text))
        timer = threading.Timer(float(delay_s), write)
        timer.daemon = True
        timer.start()

    def _open(self, file, mode="r", *args, **kwargs):
        return _builtins.open(self._guest_path(file, mode), mode, *args, **kwargs)

    def _guest_builtins(self):
        guest = dict(_builtins.__dict__)
        guest.update(open=self._open, fake_guest_memory=self._memory, fake_sandbox_id=self._id,
                     fake_allowed_domains=[[t, m] for _, m, t in self._permissions],
                     fake_sizes={"heap_size": self._heap, "stack_size": self._stack},
                     fake_cache_file=self._module_file, fake_write_later=self._write_later,
                     fake_input_dir=self._input_dir)
        marker = self._marker("fake-guest-minimal-stdlib")
        if marker and os.path.exists(marker):
            real_import = _builtins.__import__

            def guest_import(name, *args, **kwargs):
                if name.split(".")[0] in _MISSING_IN_MINIMAL_STDLIB:
                    raise ModuleNotFoundError("No module named %r" % name)
                return real_import(name, *args, **kwargs)
            guest["__import__"] = guest_import
        return guest

    @contextlib.contextmanager
    def _heap_bound(self):
        """The guest's memory is its heap: RLIMIT_AS is lowered to what is mapped + heap_size."""
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        with _builtins.open("/proc/self/statm") as f:
            mapped = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        want = mapped + self._heap
        if hard != resource.RLIM_INFINITY:
            want = min(want, hard)
        resource.setrlimit(resource.RLIMIT_AS, (want, hard))
        try:
            yield
        finally:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))

    def run(self, code):
        if len(code) > self.MAX_CODE_SIZE:
            raise ValueError("code exceeds maximum size (%d > %d bytes)"
                             % (len(code), self.MAX_CODE_SIZE))
        if not self._built:
            self._build()
        namespace = {"__builtins__": self._guest_builtins(), "call_tool": self._call_tool,
                     "http_get": self._http_get, "http_post": self._http_post}
        out, err = io.StringIO(), io.StringIO()
        exit_code = 0
        environ = dict(os.environ)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                with self._heap_bound():
                    exec(compile(code, "<guest>", "exec"), namespace)
            except SystemExit as e:
                exit_code = e.code if isinstance(e.code, int) else 1
            except Exception as e:
                print("%s: %s" % (type(e).__name__, e), file=err)
                exit_code = 1
            except BaseException as e:  # a trap of the guest: the run itself fails
                raise RuntimeError("Execution failed: %s" % type(e).__name__) from None
            finally:
                os.environ.clear()
                os.environ.update(environ)
        return ExecutionResult(out.getvalue(), err.getvalue(), exit_code)
