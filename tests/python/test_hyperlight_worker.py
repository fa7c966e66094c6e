"""Unit tests of resources/hyperlight_worker.py's pieces that the C++ suite cannot reach here:
the hypervisor-device check (this machine has a /dev/kvm), the clearing of /output without
following links, and the guest prelude on its own, against a stand-in for the guest's
synchronous call_tool.

Run from the repository root:
    /usr/bin/python3.11 -m unittest discover -s tests/python -t tests/python -q
"""

import importlib.util
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
    """Runs the prelude as the guest would, with call_tool answering like the worker does."""

    def run_guest(self, src, tools=None, env=None, size_limit=1 << 20):
        reports = []
        calls = []

        def call_tool(name, **kwargs):
            if name == worker.REPORT_TOOL:
                reports.append(kwargs)
                return True
            self.assertEqual(name, worker.CALL_TOOL)
            calls.append(kwargs)
            if kwargs["tool"] == "fail":
                return {worker.TOOL_ERROR_KEY: {"error_type": "Boom", "message": "no"}}
            return sum(kwargs["kwargs"].values())

        guest = {"__name__": "__main__", "call_tool": call_tool}
        exec(worker.guest_source() + "\n_codeact_main(%r, %r, %r, %d)\n"
             % (src, tools or [], env or {}, size_limit), guest)
        self.assertEqual(len(reports), 1, reports)
        return reports[0], calls

    def test_final_expression_is_the_json_safe_output(self):
        report, _ = self.run_guest("x = 2\n(x, float('inf'))")
        self.assertEqual(report, {"kind": "complete", "output_present": True, "output": [2, None]})

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


if __name__ == "__main__":
    unittest.main()
