"""`python3 -m validator FILE|-`: exit codes and JSON shape, run as a real child process."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_cli(*args, stdin=b""):
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    return subprocess.run([sys.executable, "-m", "validator", *args], input=stdin,
                          capture_output=True, cwd=REPO_ROOT, env=env, timeout=60)


class CliTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, data):
        path = os.path.join(self.tmp.name, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def test_clean_file_exits_0(self):
        path = self.write("ok.py", b"import math\nprint(math.pi)\n")
        proc = run_cli(path)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(json.loads(proc.stdout), {"ok": True, "violations": []})

    def test_violations_on_stdin_exit_1(self):
        proc = run_cli("-", stdin=b"import os\nos.system('id')\n")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        report = json.loads(proc.stdout)
        self.assertIs(report["ok"], False)
        (v,) = report["violations"]
        self.assertEqual(set(v), {"line", "col", "rule", "message", "hint"})
        self.assertEqual((v["line"], v["col"], v["rule"]), (2, 3, "os-attribute"))
        self.assertIn("os.system", v["message"])

    def test_syntax_error_exits_1(self):
        proc = run_cli("-", stdin=b"def f(:\n")
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(json.loads(proc.stdout)["violations"][0]["rule"], "syntax-error")

    def test_policy_option(self):
        code = b"import json\n"
        proc = run_cli("--policy", '{"allowed_imports": ["math"]}', "-", stdin=code)
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(json.loads(proc.stdout)["violations"][0]["rule"], "import-blocked")
        policy = self.write("policy.json", b'{"extra_blocked_imports": []}')
        self.assertEqual(run_cli("--policy", "@" + policy, "-", stdin=code).returncode, 0)

    def test_bad_invocations_exit_2(self):
        missing = os.path.join(self.tmp.name, "missing.py")
        latin1 = self.write("latin1.py", b"s = '\xe9'\n")
        for args in ([], ["a.py", "b.py"], [missing], [latin1], ["--bogus"],
                     ["--policy", "{not json", "-"], ["--policy", '{"nope": 1}', "-"],
                     ["--policy", "@" + missing, "-"]):
            with self.subTest(args=args):
                proc = run_cli(*args)
                self.assertEqual(proc.returncode, 2, proc.stdout)
                self.assertEqual(proc.stdout, b"")
                self.assertIn(b"usage:", proc.stderr)


if __name__ == "__main__":
    unittest.main()
