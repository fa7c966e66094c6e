"""Unit tests of resources/hyperlight_worker.py's pieces that the C++ suite cannot reach here:
the hypervisor-device check (this machine has a /dev/kvm), the clearing of /output without
following links, and the guest prelude on its own, against a stand-in for the guest's
synchronous call_tool.

Run from the repository root:
    /usr/bin/python3.11 -m unittest discover -s tests/python -t tests/python -q
"""

import importlib.util
import json
import os
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(REPO, "resources", "hyperlight_worker.py")


def load_worker():
    spec = importlib.util.spec_from_file_location("hyperlight_worker_under_test", WORKER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # main() runs only as __main__
    return module


worker = load_worker()
import hyperlight_guest  # noqa: E402 (on sys.path once the worker is loaded)


class HypervisorCheckTest(unittest.TestCase):
    def test_names_every_device_it_tried(self):
        saved = worker._DEVICES
        worker._DEVICES = ("/nonexistent/kvm", "/nonexistent/mshv")
        try:
            problem = worker._hypervisor_problem()
        finally:
            worker._DEVICES = saved
        self.assertEqual(problem, "no usable hypervisor device (/nonexistent/kvm: No such file or "
                                  "directory; /nonexistent/mshv: No such file or directory)")

    def test_a_device_that_opens_is_enough(self):
        saved = worker._DEVICES
        worker._DEVICES = ("/nonexistent/kvm", "/dev/null")
        try:
            self.assertIsNone(worker._hypervisor_problem())
        finally:
            worker._DEVICES = saved


class PackageCheckTest(unittest.TestCase):
    """The real SDK without its Wasm backend or Python guest is unavailable at start, by name."""

    def test_a_missing_backend_is_named_with_the_pinned_install_line(self):
        problem = worker._package_problem()
        self.assertIn("No module named 'hyperlight_sandbox_backend_wasm'", problem)
        self.assertIn("pip install hyperlight-sandbox==0.3.0 hyperlight-sandbox-backend-wasm==0.3.0 "
                      "hyperlight-sandbox-python-guest==0.3.0", problem)

    def test_a_missing_guest_is_named_and_the_guest_is_not_imported(self):
        import sys
        import types
        sys.modules["hyperlight_sandbox_backend_wasm"] = types.ModuleType("backend")
        try:
            problem = worker._package_problem()
        finally:
            del sys.modules["hyperlight_sandbox_backend_wasm"]
        self.assertIn("ImportError: No module named 'python_guest'", problem)


class ClearOutputTest(unittest.TestCase):
    def test_removes_everything_inside_but_never_follows_links(self):
        with tempfile.TemporaryDirectory() as root:
            out = os.path.join(root, "output")
            keep = os.path.join(root, "keep")
            os.makedirs(os.path.join(out, "sub", "deeper"))
            os.makedirs(keep)
            open(os.path.join(keep, "precious.txt"), "w").close()
            open(os.path.join(out, "sub", "deeper", "f.txt"), "w").close()
            open(os.path.join(out, "top.txt"), "w").close()
            os.symlink(keep, os.path.join(out, "link"))
            worker._clear_directory(out)
            self.assertEqual(os.listdir(out), [])
            self.assertTrue(os.path.exists(os.path.join(keep, "precious.txt")))


class GuestPreludeTest(unittest.TestCase):
    """Runs the prelude as the real guest would (globals: __builtins__, call_tool, http_get,
    http_post; no __name__), with call_tool answering like the worker does."""

    def run_guest(self, src, tools=None, env=None, size_limit=1 << 20, http=False,
                  http_get=None, builtins=None, call_error=None):
        reports = []
        calls = []
        chunks = []

        def call_tool(name, **kwargs):
            if name == worker.REPORT_TOOL:
                if kwargs.get("output_chunks"):
                    kwargs = dict(kwargs, output=json.loads("".join(chunks)))
                reports.append(kwargs)
                return True
            if name == worker.OUTPUT_TOOL:
                self.assertLess(len(kwargs["chunk"].encode("utf-8")), hyperlight_guest.GUEST_ARGS_CAP)
                chunks.append(kwargs["chunk"])
                return True
            self.assertEqual(name, worker.CALL_TOOL)
            calls.append(kwargs)
            if call_error is not None:
                raise call_error
            if kwargs["tool"] == "fail":
                return {worker.TOOL_ERROR_KEY: {"error_type": "Boom", "message": "no"}}
            return sum(kwargs["kwargs"].values())

        guest = {"__builtins__": builtins if builtins is not None else __builtins__,
                 "call_tool": call_tool, "http_get": http_get or (lambda url: {"url": url}),
                 "http_post": lambda url, body="", content_type="": {"posted": body}}
        exec(worker.guest_source() + "\n_codeact_main(%r, %r, %r, %d, %r)\n"
             % (src, tools or [], env or {}, size_limit, http), guest)
        self.assertEqual(len(reports), 1, reports)
        self.report_chunks = len(chunks)
        return reports[0], calls

    def test_final_expression_is_the_json_safe_output(self):
        report, _ = self.run_guest("x = 2\n(x, float('inf'))")
        self.assertEqual(report, {"kind": "complete", "output_present": True,
                                  "output_chunks": True, "output": [2, None]})

    def test_unawaited_tool_coroutine_is_noted_in_the_report(self):
        report, calls = self.run_guest(
            "r = add(a=1, b=2)\nc = call_tool('add', a=5)\nok = await add(a=2, b=2)\nok",
            tools=["add"])
        self.assertEqual(report["output"], 4)
        self.assertEqual(len(calls), 1)
        self.assertEqual(report["note"],
                         "2 tool call(s) never ran because their coroutine was not awaited: "
                         "add on line 1, add on line 2; add await")
        report, _ = self.run_guest("import asyncio\n"
                                   "await asyncio.gather(add(a=1), call_tool('add', b=2))",
                                   tools=["add"])
        self.assertNotIn("note", report)

    def test_output_is_converted_as_the_local_runner_converts_it(self):
        # One implementation for both backends (resources/codeact_convert.py): a set becomes a
        # sorted list, non-str keys their str, NaN null, ints beyond 64 bits their repr.
        import sys
        sys.path.insert(0, os.path.dirname(WORKER))
        try:
            import codeact_convert
        finally:
            sys.path.remove(os.path.dirname(WORKER))
        value = "{1: (1, 2), 'nan': float('nan'), 'set': {3, 1, 2}, 'big': 1 << 70}"
        report, _ = self.run_guest(value)
        self.assertEqual(report["output"], {"1": [1, 2], "nan": None, "set": [1, 2, 3],
                                            "big": "1180591620717411303424"})
        self.assertEqual(report["output"], codeact_convert.jsonable(eval(value), 1 << 20))

    def test_an_output_over_the_bound_is_reported_as_a_limit(self):
        report, _ = self.run_guest("'x' * 5000", size_limit=1000)
        self.assertEqual(report["kind"], "limit")
        self.assertGreater(report["size"], 1000)

    def test_tools_are_awaitable_and_errors_are_tool_errors(self):
        report, calls = self.run_guest(
            "r = await add(a=1, b=2)\n"
            "try:\n    await call_tool('fail')\nexcept ToolError as e:\n    r = (r, e.error_type, e.message)\n"
            "r", tools=["add"])
        self.assertEqual(report["output"], [3, "Boom", "no"])
        self.assertEqual(calls[0], {"tool": "add", "kwargs": {"a": 1, "b": 2}})

    def test_an_exception_is_reported_with_its_code_frames(self):
        report, _ = self.run_guest("def f():\n    raise KeyError('k')\nf()\n")
        self.assertEqual(report["kind"], "error")
        self.assertEqual(report["error_type"], "KeyError")
        self.assertIn('File "<code>", line 2, in f', report["traceback"])
        self.assertNotIn("_codeact_main", report["traceback"])

    def test_the_environment_is_exactly_the_configured_one(self):
        saved = dict(os.environ)
        try:
            report, _ = self.run_guest("import os\ndict(os.environ)", env={"ONLY": "this"})
        finally:
            os.environ.clear()
            os.environ.update(saved)
        self.assertEqual(report["output"], {"ONLY": "this"})


    def test_an_output_beyond_the_guests_argument_cap_travels_in_chunks(self):
        report, _ = self.run_guest("['\u00e9' * 1000] * 900 + [1 << 63]", size_limit=8 << 20)
        self.assertEqual(report["output"], ["\u00e9" * 1000] * 900 + [1 << 63])
        self.assertGreater(self.report_chunks, 1)

    def test_integers_beyond_int64_are_refused_before_the_call(self):
        report, calls = self.run_guest(
            "try:\n    await add(a=1 << 63, b=[1, -(1 << 63)])\n"
            "except ToolError as e:\n    r = (e.error_type, e.message)\n"
            "r2 = await add(a=(1 << 63) - 1, b=-(1 << 63))\n(r, r2)", tools=["add"])
        self.assertEqual(calls, [{"tool": "add", "kwargs": {"a": (1 << 63) - 1, "b": -(1 << 63)}}])
        (error_type, message), total = report["output"]
        self.assertEqual(error_type, "IntegerOutOfRange")
        self.assertIn("an argument at ['a'] is an integer outside the signed 64-bit range", message)
        self.assertEqual(total, -1)

    def test_arguments_over_the_guests_cap_are_a_tool_error(self):
        report, calls = self.run_guest(
            "try:\n    await add(a='x' * (2 << 20))\nexcept ToolError as e:\n"
            "    r = (e.error_type, e.message)\nr", tools=["add"])
        self.assertEqual(calls, [])
        self.assertEqual(report["output"][0], "ArgumentsTooLarge")
        self.assertIn("exceed the hyperlight guest's limit of 1048576 bytes", report["output"][1])

    def test_lone_surrogates_in_arguments_become_question_marks(self):
        _, calls = self.run_guest("await call_tool('echo', s='x\\ud800y')\n")
        self.assertEqual(calls[-1], {"tool": "echo", "kwargs": {"s": "x?y"}})

    def test_the_sdks_own_refusal_is_a_tool_error(self):
        report, _ = self.run_guest(
            "try:\n    await add(a=1)\nexcept ToolError as e:\n    r = (e.error_type, e.message)\nr",
            tools=["add"], call_error=RuntimeError("Tool '__codeact_call__' failed: boom"))
        self.assertEqual(report["output"], ["GuestCallFailed",
                                            "Tool '__codeact_call__' failed: boom"])

    def test_http_functions_are_awaited_and_only_there_with_targets(self):
        report, _ = self.run_guest("[await http_get('https://a.org/x'), await http_post("
                                   "'https://a.org/y', body='{}')]", http=True)
        self.assertEqual(report["output"], [{"url": "https://a.org/x"}, {"posted": "{}"}])
        report, _ = self.run_guest("http_get", http=False)
        self.assertEqual(report["error_type"], "NameError")

        def refused(url):
            raise OSError("HTTP request denied")
        report, _ = self.run_guest(
            "try:\n    await http_get('https://b.org')\nexcept ToolError as e:\n"
            "    r = (e.error_type, e.message)\nr", http=True, http_get=refused)
        self.assertEqual(report["output"], ["HttpError", "OSError: HTTP request denied"])

    def test_nested_paths_under_input_and_output_get_a_clear_error(self):
        report, _ = self.run_guest("open('/output/sub/a.txt', 'w')")
        self.assertEqual(report["error_type"], "FileNotFoundError")
        self.assertIn("/input and /output are flat in this sandbox: no subdirectories (use "
                      "/output/NAME)", report["message"])

    def test_errors_are_reported_without_the_traceback_module(self):
        import builtins
        names = dict(builtins.__dict__)
        real_import = builtins.__import__

        def no_traceback(name, *args, **kwargs):
            if name in ("traceback", "asyncio"):
                raise ModuleNotFoundError("No module named %r" % name)
            return real_import(name, *args, **kwargs)
        names["__import__"] = no_traceback
        report, _ = self.run_guest("def f():\n    raise KeyError('k')\nf()\n", builtins=names)
        self.assertEqual(report["error_type"], "KeyError")
        self.assertEqual(report["traceback"],
                         'Traceback (most recent call last):\n'
                         '  File "<code>", line 3, in <module>\n    f()\n'
                         '  File "<code>", line 2, in f\n    raise KeyError(\'k\')\n'
                         "KeyError: 'k'\n")
        # Without asyncio, awaiting tools still works; anything else needing a loop says why.
        report, _ = self.run_guest("await add(a=1, b=2)", tools=["add"], builtins=names)
        self.assertEqual(report["output"], 3)


if __name__ == "__main__":
    unittest.main()
