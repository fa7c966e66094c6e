"""FAKE `hyperlight_sandbox` SDK for codeact's tests. It is NOT a sandbox.

It implements the slice of the public hyperlight-sandbox Python API (0.8-0.10) that
resources/hyperlight_worker.py uses -- Sandbox(input_dir, output_dir, ...), register_tool,
allow_domain, run -> (stdout, stderr, exit_code), snapshot/restore, get_output_files, output_path
-- on top of plain `exec` in the worker's own process, so that the whole C++ path of the
hyperlight backend can be exercised where no SDK or hypervisor exists. The worker only ever
imports it when the host points CODEACT_HYPERLIGHT_SDK_PATH at tests/fakes explicitly.

What the fake models, for tests to observe through extra builtins in the "guest":
  fake_guest_memory     a dict standing for the guest's memory: snapshot() copies it and
                        restore() puts the copy back, so a value set in one run and seen in the
                        next means the worker did not restore
  fake_sandbox_id       which Sandbox object ran the code (a new one per configuration)
  fake_allowed_domains  [[target, methods or None], ...] as given to allow_domain
  open()                /input/... maps to input_dir (read-only), /output/... to output_dir
Like the real SDK: register_tool/allow_domain only before the first run(), the VM is "built"
lazily by the first run(), call_tool(name, **kwargs) is synchronous and JSON-only, and snapshot()
needs a built VM. A guest start fails with the text of input_dir/fake-guest-start-fails when
that file exists (the tests' stand-in for a hypervisor that refuses the guest).
"""

import builtins as _builtins
import contextlib
import copy
import inspect
import io
import json
import os
import traceback

# Read by the worker: this module runs code in-process and needs no /dev/kvm or /dev/mshv.
CODEACT_TEST_FAKE_NEEDS_NO_HYPERVISOR = True

__version__ = "0.0.0+codeact-test-fake"


class ExecutionResult:
    def __init__(self, stdout, stderr, exit_code):
        self.stdout = stdout
        self.stderr = stderr
        self.exit_code = exit_code


class Snapshot:
    def __init__(self, memory):
        self._memory = memory


class Sandbox:
    _count = 0

    def __init__(self, input_dir=None, output_dir=None, temp_output=False, backend="wasm",
                 module="python_guest.path", module_path=None, heap_size="25Mi",
                 stack_size="35Mi"):
        Sandbox._count += 1
        self._id = Sandbox._count
        self._input_dir = input_dir
        self._output_dir = output_dir
        self._tools = {}
        self._domains = []
        self._built = False
        self._memory = {}

    def register_tool(self, name, fn):
        if self._built:
            raise RuntimeError("register_tool must be called before the first run()")
        inspect.signature(fn)  # the real SDK reads the signature too
        self._tools[str(name)] = fn

    def allow_domain(self, target, methods=None):
        if self._built:
            raise RuntimeError("allow_domain must be called before the first run()")
        self._domains.append([str(target), list(methods) if methods else None])

    def snapshot(self):
        if not self._built:
            raise RuntimeError("snapshot() needs a started sandbox: call run() first")
        return Snapshot(copy.deepcopy(self._memory))

    def restore(self, snap):
        self._memory = copy.deepcopy(snap._memory)

    def output_path(self):
        return self._output_dir

    def get_output_files(self):
        if not self._output_dir:
            return []
        return sorted(os.listdir(self._output_dir))

    # -- the "guest" ----------------------------------------------------------------------------

    def _start(self):
        marker = os.path.join(self._input_dir, "fake-guest-start-fails") if self._input_dir else None
        if marker and os.path.exists(marker):
            with _builtins.open(marker) as f:
                raise RuntimeError(f.read().strip())
        self._built = True

    def _call_tool(self, name, **kwargs):
        fn = self._tools.get(name)
        if fn is None:
            raise RuntimeError("no tool named %r" % name)
        kwargs = json.loads(json.dumps(kwargs))
        return json.loads(json.dumps(fn(**kwargs)))

    def _guest_path(self, path, mode):
        text = os.fspath(path)
        if not isinstance(text, str):
            return path
        for root, host, writable in (("/input", self._input_dir, False),
                                     ("/output", self._output_dir, True)):
            if text == root or text.startswith(root + "/"):
                if host is None:
                    raise FileNotFoundError(text)
                if not writable and any(c in mode for c in "wax+"):
                    raise PermissionError("%s is read-only" % text)
                return os.path.join(host, text[len(root) + 1:])
        return path

    def _open(self, file, mode="r", *args, **kwargs):
        return _builtins.open(self._guest_path(file, mode), mode, *args, **kwargs)

    def run(self, code):
        if not self._built:
            self._start()
        guest_builtins = dict(_builtins.__dict__)
        guest_builtins.update(open=self._open, fake_guest_memory=self._memory,
                              fake_sandbox_id=self._id,
                              fake_allowed_domains=copy.deepcopy(self._domains))
        namespace = {"__name__": "__main__", "__builtins__": guest_builtins,
                     "call_tool": self._call_tool}
        out, err = io.StringIO(), io.StringIO()
        exit_code = 0
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                exec(compile(code, "<guest>", "exec"), namespace)
            except SystemExit as e:
                exit_code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except BaseException:
                traceback.print_exc()
                exit_code = 1
        return ExecutionResult(out.getvalue(), err.getvalue(), exit_code)
