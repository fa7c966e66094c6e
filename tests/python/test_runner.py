"""Tests of resources/runner.py against a fake host.

Run from the repository root:
    /usr/bin/python3.11 -m unittest discover -s tests/python -t tests/python -q

The fake host starts the runner the way the C++ host does (no shell, stdin /dev/null, stdout and
stderr on pipes, a private working directory, a scrubbed environment, its own session) with two
pipes for the bridge, answers tool calls and reads the terminal frame. Every wait has a deadline;
there are no fixed sleeps.
"""

import json
import os
import resource
import select
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
RUNNER = os.path.join(REPO, "resources", "runner.py")
PYTHON = "/usr/bin/python3.11"
DEADLINE = 30.0
TERMINAL = ("complete", "error", "limit")

# Puts the bridge pipes at fds 3 and 4 exactly, as the C++ host does, then execs the runner.
TRAMPOLINE = """
import fcntl, os, sys
r, w = int(sys.argv[1]), int(sys.argv[2])
r2, w2 = fcntl.fcntl(r, fcntl.F_DUPFD, 10), fcntl.fcntl(w, fcntl.F_DUPFD, 10)
os.close(r); os.close(w)
os.dup2(r2, 3); os.dup2(w2, 4)
os.close(r2); os.close(w2)
os.execv(sys.argv[3], sys.argv[3:])
"""


def default_tools(name, kwargs):
    """(ok, result-or-(error_type, message)) for the fake host's tools."""
    if name == "add":
        return True, kwargs["a"] + kwargs["b"]
    if name == "echo":
        return True, kwargs
    if name == "fail":
        return False, ("ValueError", "it failed")
    return False, ("UnknownTool", "no tool named %r" % name)


class Child:
    """One runner process and the host side of its bridge."""

    def __init__(self, fixed_fds=False, extra_env=None, runner=RUNNER):
        self.tmp = tempfile.mkdtemp(prefix="runner-test-")
        child_r, self.to_child = os.pipe()
        self.from_child, child_w = os.pipe()
        argv = [PYTHON, "-I", "-u", "-X", "frozen_modules=on", runner]
        env = {"LANG": "C.UTF-8", "CODEACT_RUN_TOKEN": "0123abcd",
               "CODEACT_BRIDGE_FDS": "%d,%d" % (child_r, child_w)}
        env.update(extra_env or {})
        self.child_rfd = child_r
        if fixed_fds:
            argv = [PYTHON, "-I", "-c", TRAMPOLINE, str(child_r), str(child_w)] + argv
            env["CODEACT_BRIDGE_FDS"] = "3,4"
            self.child_rfd = 3
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            pass_fds=(child_r, child_w), env=env, cwd=self.tmp, start_new_session=True)
        os.close(child_r)
        os.close(child_w)
        os.set_blocking(self.to_child, False)  # see send_raw
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.lines = []          # raw frame lines from the child, in order
        self.frames = []         # frames not yet consumed
        self._buf = bytearray()
        self._open = {self.proc.stdout.fileno(): self.stdout,
                      self.proc.stderr.fileno(): self.stderr,
                      self.from_child: self._buf}

    # -- plumbing ----------------------------------------------------------------------------

    def _pump(self, deadline):
        """Reads whatever is available on the three pipes; False once all are at EOF."""
        if not self._open:
            return False
        timeout = deadline - time.monotonic()
        if timeout <= 0:
            raise AssertionError("deadline passed waiting for the runner; stderr=%r"
                                 % bytes(self.stderr[-2000:]))
        ready, _, _ = select.select(list(self._open), [], [], timeout)
        for fd in ready:
            data = os.read(fd, 1 << 20)
            if not data:
                del self._open[fd]
                continue
            self._open[fd].extend(data)
            if fd == self.from_child:
                while True:
                    end = self._buf.find(b"\n")
                    if end < 0:
                        break
                    line = bytes(self._buf[:end])
                    del self._buf[:end + 1]
                    self.lines.append(line)
                    self.frames.append(json.loads(line))
        return True

    def read_frame(self, timeout=DEADLINE):
        """The next frame from the child, or None at EOF."""
        deadline = time.monotonic() + timeout
        while not self.frames:
            if self.from_child not in self._open:
                return None
            self._pump(deadline)
        return self.frames.pop(0)

    def send(self, obj):
        self.send_raw((json.dumps(obj, separators=(",", ":")) + "\n").encode())

    def send_raw(self, data, timeout=DEADLINE):
        """Writes like a naive host: no reading meanwhile, but with a deadline."""
        deadline = time.monotonic() + timeout
        view = memoryview(data)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([], [self.to_child], [], remaining)[1]:
                raise AssertionError("deadline passed writing to the runner")
            try:
                view = view[os.write(self.to_child, view):]
            except BlockingIOError:
                pass

    def wait_until_idle(self, timeout=DEADLINE):
        """Waits until the child blocks reading its bridge fd, i.e. has finished preloading."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                with open("/proc/%d/syscall" % self.proc.pid) as f:
                    fields = f.read().split()
            except OSError:
                fields = []
            # While blocked: "<syscall number> <first argument> ..."; readv() is 19 on x86-64.
            if len(fields) > 1 and fields[0] == "19" and int(fields[1], 16) == self.child_rfd:
                return
            if time.monotonic() > deadline:
                raise AssertionError("the child never went idle: %r" % fields)
            select.select([], [], [], 0.005)

    def ready(self):
        frame = self.read_frame()
        assert frame is not None and frame["type"] == "ready", frame
        return frame

    def request(self, code, tools=("add", "echo", "fail"), **fields):
        req = {"type": "request", "code": code, "tools": list(tools)}
        req.update(fields)
        self.send(req)

    def serve(self, handler=default_tools):
        """Answers tool calls until the terminal frame; returns (terminal frame, calls)."""
        calls = []
        while True:
            frame = self.read_frame()
            if frame is None:
                raise AssertionError("runner ended without a terminal frame; stderr=%r"
                                     % bytes(self.stderr[-2000:]))
            if frame["type"] in TERMINAL:
                return frame, calls
            assert frame["type"] == "tool_call", frame
            calls.append(frame)
            self.answer(frame, *handler(frame["name"], frame["kwargs"]))

    def answer(self, call, ok, value):
        if ok:
            self.send({"type": "tool_result", "id": call["id"], "ok": True, "result": value})
        else:
            self.send({"type": "tool_result", "id": call["id"], "ok": False,
                       "error_type": value[0], "message": value[1]})

    def finish(self, timeout=DEADLINE):
        """Closes the host's side, reads the pipes to the end, returns the exit code."""
        deadline = time.monotonic() + timeout
        self.close_request_side()
        while self._pump(deadline):
            pass
        return self.proc.wait(max(0.1, deadline - time.monotonic()))

    def stop_reading_frames(self):
        """Closes the host's end of the child's frame pipe: the child's next write fails."""
        del self._open[self.from_child]
        os.close(self.from_child)
        self.from_child = None

    def close_request_side(self):
        if self.to_child is not None:
            os.close(self.to_child)
            self.to_child = None

    def close(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        self.close_request_side()
        if self.from_child is not None:
            os.close(self.from_child)
        self.proc.stdout.close()
        self.proc.stderr.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


class RunnerTestCase(unittest.TestCase):

    def child(self, **kw):
        c = Child(**kw)
        self.addCleanup(c.close)
        return c

    def run_code(self, code, handler=default_tools, **request):
        """Runs code to the end; returns (terminal frame, calls, exit code, stdout, stderr)."""
        c = self.child()
        c.ready()
        c.request(code, **request)
        frame, calls = c.serve(handler)
        rc = c.finish()
        return frame, calls, rc, bytes(c.stdout).decode(), bytes(c.stderr).decode()

    def assertComplete(self, frame, rc=None):
        self.assertEqual(frame["type"], "complete", frame)
        if rc is not None:
            self.assertEqual(rc, 0)

    def output_of(self, code, **request):
        frame, _, rc, _, stderr = self.run_code(code, **request)
        self.assertComplete(frame, rc)
        return frame["output_present"], frame["output"]


class StartupAndShutdownTest(RunnerTestCase):

    def test_ready_frame(self):
        c = self.child()
        frame = c.ready()
        self.assertEqual(frame, {"type": "ready", "python": [3, 11], "pid": c.proc.pid})

    def test_eof_before_request_exits_zero_quietly(self):
        c = self.child()
        c.ready()
        self.assertEqual(c.finish(), 0)
        self.assertEqual(c.frames, [])
        self.assertEqual(bytes(c.stdout), b"")
        self.assertEqual(bytes(c.stderr), b"")

    def test_request_sent_before_ready_runs_without_preloading(self):
        c = self.child()
        c.request("sys = __import__('sys')\nprint('hi')\n'asyncio' in sys.modules")
        c.ready()
        frame, _ = c.serve()
        self.assertEqual(frame, {"type": "complete", "output_present": True, "output": False})
        self.assertEqual(c.finish(), 0)
        self.assertEqual(bytes(c.stdout), b"hi\n")

    def test_idle_child_preloads_then_serves(self):
        c = self.child()
        c.ready()
        c.wait_until_idle()
        with open("/proc/%d/maps" % c.proc.pid) as f:
            self.assertIn("_asyncio", f.read())  # asyncio's C part: the last preload step
        c.request("print(await add(a=2, b=3))\nsys = __import__('sys')\n'asyncio' in sys.modules")
        frame, calls = c.serve()
        self.assertEqual(frame["output"], True)
        self.assertEqual(len(calls), 1)
        self.assertEqual(c.finish(), 0)
        self.assertEqual(bytes(c.stdout), b"5\n")

    def test_unknown_host_frames_before_request_are_ignored(self):
        c = self.child()
        c.ready()
        c.send({"type": "ping"})
        c.send_raw(b"\n")
        c.request("1")
        frame, _ = c.serve()
        self.assertEqual(frame["output"], 1)

    def test_malformed_request_is_a_bridge_error(self):
        c = self.child()
        c.ready()
        c.send_raw(b'{"type":"request","code":\n')
        frame = c.read_frame()
        self.assertEqual(frame["type"], "error")
        self.assertEqual(frame["error_type"], "BridgeError")
        self.assertIn("malformed", frame["message"])
        self.assertEqual(c.finish(), 1)

    def test_request_without_code_is_a_bridge_error(self):
        c = self.child()
        c.ready()
        c.send({"type": "request", "tools": []})
        frame = c.read_frame()
        self.assertEqual(frame["error_type"], "BridgeError")

    def test_host_gone_exits_3(self):
        c = self.child()
        c.ready()
        c.stop_reading_frames()
        c.request("print('x')")
        self.assertEqual(c.finish(), 3)

    def test_fds_are_exactly_0_to_4_with_the_bridge_at_3_and_4(self):
        c = self.child(fixed_fds=True)
        c.ready()
        # Without top-level await: an event loop has fds of its own (epoll, self-pipe).
        c.request("import asyncio, os\n"
                  "fds = sorted(int(f) for f in os.listdir('/proc/self/fd')\n"
                  "             if os.path.exists('/proc/self/fd/' + f))\n"
                  "r = asyncio.run(echo(x=1))\n"
                  "[fds, r]")
        frame, calls = c.serve()
        self.assertEqual(frame["output"], [[0, 1, 2, 3, 4], {"x": 1}])
        self.assertEqual(c.finish(), 0)

    def test_atexit_handler_does_not_run(self):
        frame, _, rc, out, err = self.run_code(
            "import atexit\n"
            "atexit.register(lambda: [0 for _ in iter(int, 1)])\n"
            "atexit.register(print, 'atexit ran')\n"
            "'done'")
        self.assertEqual(frame["output"], "done")
        self.assertEqual(rc, 0)
        self.assertNotIn("atexit ran", out)

    def test_finalizers_do_not_run(self):
        frame, _, rc, out, _ = self.run_code(
            "class C:\n"
            "    def __del__(self):\n"
            "        print('finalizer ran')\n"
            "c = C()\n")
        self.assertComplete(frame, rc)
        self.assertEqual(out, "")

    def test_files_left_open_are_flushed_before_the_terminal_frame(self):
        # The runner ends with os._exit. What the code wrote to files it never closed reaches
        # them before the terminal frame (after which the host captures them), as an
        # interpreter's exit would flush them: after a result, an exception or sys.exit; text,
        # binary and read-write files, named or held in a container. One whose fd the code
        # closed itself cannot be flushed, and costs the others nothing.
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        endings = ("'done'", "raise ValueError('late')", "sys = __import__('sys')\nsys.exit(3)")
        for i, ending in enumerate(endings):
            base = os.path.join(d, "f%d" % i)
            frame, _, rc, _, _ = self.run_code(
                "import os\n"
                "lost = open(%r, 'w'); lost.write('gone')\n"
                "t = open(%r, 'w'); t.write('text %d')\n"
                "b = open(%r, 'wb'); b.write(b'bytes')\n"
                "r = open(%r, 'w+b'); r.write(b'read-write')\n"
                "kept = {'f': open(%r, 'a')}; kept['f'].write('nested')\n"
                "os.close(lost.fileno())\n%s\n"
                % (base + ".lost", base + ".txt", i, base + ".bin", base + ".rw", base + ".nested",
                   ending))
            self.assertEqual((frame["type"], rc), [("complete", 0), ("error", 1), ("error", 1)][i],
                             frame)
            for suffix, content in ((".txt", b"text %d" % i), (".bin", b"bytes"),
                                    (".rw", b"read-write"), (".nested", b"nested"), (".lost", b"")):
                with open(base + suffix, "rb") as f:
                    self.assertEqual(f.read(), content, (ending, suffix))


class OutputTest(RunnerTestCase):

    def test_print_and_complete(self):
        frame, calls, rc, out, err = self.run_code("print('hello')\nsys = __import__('sys')\n"
                                                   "print('oops', file=sys.stderr)")
        self.assertEqual(frame, {"type": "complete", "output_present": False, "output": None})
        self.assertEqual((rc, out, err, calls), (0, "hello\n", "oops\n", []))

    def test_final_expression_values(self):
        cases = [
            ("41 + 1", 42),
            ("{1: 'a', 'b': 2, None: 3, (1, 2): 4}", {"1": "a", "b": 2, "None": 3, "(1, 2)": 4}),
            ("(1, 'x', [2, (3,)])", [1, "x", [2, [3]]]),
            ("float('nan')", None),
            ("[float('inf'), -float('inf'), 1.5]", [None, None, 1.5]),
            ("{3, 1, 2}", [1, 2, 3]),
            ("frozenset({'b', 'a'})", ["a", "b"]),
            ("b'ab'", "b'ab'"),
            ("2 ** 100", repr(2 ** 100)),
            ("True", True),
            ("'h\u00e9llo \U0001f600'", "h\u00e9llo \U0001f600"),
            ("class C:\n    def __repr__(self):\n        return 'C!'\nC()", "C!"),
            ("class Bad:\n    def __repr__(self):\n        raise ValueError\nBad()",
             "<unrepresentable Bad object>"),
            ("import enum\nclass E(enum.IntEnum):\n    A = 7\nE.A", 7),
            ("a = [1]\na.append(a)\na", [1, "[...]"]),
            ("sys = __import__('sys')\nsys.set_int_max_str_digits(640)\n10 ** 1000",
             "<int of 3322 bits>"),
            ("class L(list):\n    def __iter__(self):\n        raise RuntimeError\n"
             "L([1, 2])", "[1, 2]"),
        ]
        for code, expected in cases:
            with self.subTest(code=code):
                self.assertEqual(self.output_of(code), (True, expected))

    def test_none_and_statements_are_not_output(self):
        for code in ("None", "print(1)", "x = 5", "", "def f():\n    return 1\n",
                     "if True:\n    7"):
            with self.subTest(code=code):
                self.assertEqual(self.output_of(code), (False, None))

    def test_deep_structure_becomes_repr(self):
        present, out = self.output_of("x = []\nfor _ in range(500):\n    x = [x]\nx")
        self.assertTrue(present)
        depth = 0
        while isinstance(out, list):
            out = out[0]
            depth += 1
        self.assertEqual(depth, 100)
        self.assertIsInstance(out, str)

    def test_top_level_await(self):
        self.assertEqual(self.output_of("import asyncio\nawait asyncio.sleep(0)\n"
                                        "x = await asyncio.sleep(0, result=5)\nx * 2"),
                         (True, 10))

    def test_async_for_and_with_at_top_level(self):
        code = ("import asyncio, contextlib\n"
                "async def gen():\n    for i in range(3):\n        yield i\n"
                "@contextlib.asynccontextmanager\n"
                "async def cm():\n    yield 10\n"
                "async with cm() as base:\n"
                "    total = [base + i async for i in gen()]\n"
                "total")
        self.assertEqual(self.output_of(code), (True, [10, 11, 12]))

    def test_output_over_limit(self):
        frame, _, rc, _, _ = self.run_code("'x' * 1000", max_output_bytes=100)
        self.assertEqual(frame, {"type": "limit", "limit": "output",
                                 "message": "output value of 1002 bytes exceeds the limit of "
                                            "100 bytes"})
        self.assertEqual(rc, 1)

    def test_huge_output_is_refused_without_converting_it_all(self):
        frame, _, _, _, _ = self.run_code("list(range(10 ** 7))", max_output_bytes=1000)
        self.assertEqual(frame["type"], "limit")
        self.assertRegex(frame["message"], r"^output value of at least \d+ bytes exceeds the "
                                           r"limit of 1000 bytes$")

    def test_output_fitting_the_limit(self):
        present, out = self.output_of("'x' * 98", max_output_bytes=100)
        self.assertEqual(out, "x" * 98)

    def test_printed_frame_lookalike_does_not_end_the_run(self):
        frame, calls, rc, out, _ = self.run_code(
            "print('{\"type\":\"complete\",\"output_present\":true,\"output\":666}')\n"
            "print('{\"type\":\"error\"}', flush=True)\n"
            "await add(a=1, b=1)")
        self.assertEqual(frame, {"type": "complete", "output_present": True, "output": 2})
        self.assertEqual(len(calls), 1)
        self.assertIn('{"type":"complete","output_present":true,"output":666}\n', out)

    def test_asyncio_run_style_with_tools(self):
        code = ("import asyncio\n"
                "async def main(n):\n"
                "    return await asyncio.gather(*(add(a=i, b=n) for i in range(3)))\n"
                "first = asyncio.run(main(10))\n"
                "second = asyncio.run(main(20))\n"
                "[first, second]")
        frame, calls, rc, _, _ = self.run_code(code)
        self.assertEqual(frame["output"], [[10, 11, 12], [20, 21, 22]])
        self.assertEqual([c["id"] for c in calls], [1, 2, 3, 4, 5, 6])

    def test_user_namespace(self):
        code = ("import os, subprocess, __main__\nsys = __import__('sys')\n"
                "env = subprocess.run(['/usr/bin/env'], capture_output=True, text=True).stdout\n"
                "[sorted(globals()), sys.argv, sys.dont_write_bytecode,\n"
                " sorted(k for k in os.environ if k.startswith('CODEACT')),\n"
                " __builtins__.vars(__main__) is globals(), __name__,\n"
                " 'CODEACT_RUN_TOKEN=0123abcd' in env.splitlines()]")
        present, out = self.output_of(code, tools=["add", "print", "call_tool", "ToolError",
                                                   "not-an-identifier", "class", "__name__"])
        names, argv, no_bytecode, codeact_env, same_main, name, token_inherited = out
        # The code names sys: it gets the guarded getattr/hasattr/vars too (runner_curated).
        self.assertEqual(names, ["ToolError", "__builtins__", "__codeact_vars__", "__doc__",
                                 "__loader__", "__main__", "__name__", "__package__", "__spec__",
                                 "add", "call_tool", "env", "getattr", "hasattr", "os",
                                 "subprocess", "sys", "vars"])
        self.assertEqual(argv, ["<code>"])
        self.assertTrue(no_bytecode)
        # The bridge fds are internal; the run token must reach processes the code starts.
        self.assertEqual(codeact_env, ["CODEACT_RUN_TOKEN"])
        self.assertTrue(token_inherited)
        self.assertTrue(same_main)
        self.assertEqual(name, "__main__")

    def test_print_is_not_shadowed_and_odd_names_work_through_call_tool(self):
        code = ("print('still the builtin')\n"
                "await call_tool('not-an-identifier', v=1)")
        frame, calls, _, out, _ = self.run_code(
            code, tools=["print", "not-an-identifier"],
            handler=lambda name, kw: (True, [name, kw]))
        self.assertEqual(out, "still the builtin\n")
        self.assertEqual(frame["output"], ["not-an-identifier", {"v": 1}])

    def test_upstream_server_tools_are_a_namespace(self):
        # "srv.tool" names (an upstream MCP server's tools) become attributes of a namespace
        # `srv`; one that would shadow a builtin (`len.x`) or a bound name is left to call_tool.
        code = ("a = await srv.add(a=1)\n"
                "b = await srv.get_weather(city='x')\n"
                "c = await call_tool('len.x')\n"
                "[a, b, c, srv.add.__name__,"
                " sorted(k for k in __builtins__.vars(srv) if k != '__name__'),"
                " type(len).__name__]")
        frame, calls, _, _, _ = self.run_code(
            code, tools=["srv.add", "srv.get_weather", "len.x", "srv.for", "a.b.c"],
            handler=lambda name, kw: (True, name))
        self.assertEqual(frame.get("type"), "complete", frame)
        self.assertEqual(frame["output"], ["srv.add", "srv.get_weather", "len.x", "srv.add",
                                           ["add", "get_weather"], "builtin_function_or_method"])
        self.assertEqual([c["name"] for c in calls], ["srv.add", "srv.get_weather", "len.x"])


class ToolCallTest(RunnerTestCase):

    def test_round_trip_both_forms(self):
        frame, calls, rc, _, _ = self.run_code(
            "r1 = await call_tool('add', a=1, b=2)\n"
            "r2 = await add(a=3, b=4)\n"
            "r3 = await echo(data={'k': [1, 2.5, None, 'x\\ny']}, name='n')\n"
            "[r1, r2, r3]")
        self.assertEqual(frame["output"], [3, 7, {"data": {"k": [1, 2.5, None, "x\ny"]},
                                                  "name": "n"}])
        self.assertEqual([(c["id"], c["name"]) for c in calls],
                         [(1, "add"), (2, "add"), (3, "echo")])
        self.assertEqual(calls[0]["kwargs"], {"a": 1, "b": 2})
        self.assertEqual(rc, 0)

    def test_frames_are_compact_ascii_json(self):
        c = self.child()
        c.ready()
        c.request("await echo(s='\u00e9\\n\U0001f600', bad='\\udcff')")
        frame, calls = c.serve()
        # Lone surrogates are not valid UTF-8, and strict JSON parsers refuse them.
        self.assertEqual(frame["output"], {"s": "\u00e9\n\U0001f600", "bad": "?"})
        for line in c.lines:
            line.decode("ascii")
            self.assertNotIn(b": ", line)
            self.assertNotIn(b", ", line)

    def test_gather_of_20_answered_out_of_order(self):
        c = self.child()
        c.ready()
        c.request("import asyncio\n"
                  "res = await asyncio.gather(*(echo(i=i) for i in range(20)))\n"
                  "[r['i'] for r in res]")
        calls = [c.read_frame() for _ in range(20)]
        self.assertEqual(sorted(call["id"] for call in calls), list(range(1, 21)))
        order = calls[::2][::-1] + calls[1::2]
        for call in order:
            c.answer(call, True, call["kwargs"])
        frame, more = c.serve()
        self.assertEqual(more, [])
        self.assertEqual(frame["output"], list(range(20)))

    def test_answers_in_one_write_and_split_across_writes(self):
        c = self.child()
        c.ready()
        c.request("import asyncio\n"
                  "await asyncio.gather(*(add(a=i, b=1) for i in range(5)))")
        calls = [c.read_frame() for _ in range(5)]
        data = b"".join((json.dumps({"type": "tool_result", "id": call["id"], "ok": True,
                                     "result": call["kwargs"]["a"] + 1}) + "\n").encode()
                        for call in calls)
        c.send_raw(data[:7])
        c.send_raw(data[7:50])
        c.send_raw(data[50:])
        frame, _ = c.serve()
        self.assertEqual(frame["output"], [1, 2, 3, 4, 5])

    def test_result_without_type_and_unknown_frames(self):
        c = self.child()
        c.ready()
        c.request("await add(a=1, b=2)")
        call = c.read_frame()
        c.send({"type": "something_new", "id": call["id"], "ok": True, "result": 99})
        c.send({"id": call["id"], "ok": True, "result": 3})
        frame, _ = c.serve()
        self.assertEqual(frame["output"], 3)

    def test_failed_call_caught_as_tool_error(self):
        present, out = self.output_of(
            "try:\n"
            "    await fail(x=1)\n"
            "except ToolError as e:\n"
            "    out = [e.error_type, e.message, e.tool, str(e), isinstance(e, Exception)]\n"
            "out")
        self.assertEqual(out, ["ValueError", "it failed", "fail", "ValueError: it failed", True])

    def test_unknown_tool_uncaught(self):
        frame, calls, rc, _, _ = self.run_code("x = 1\nawait call_tool('nope', a=1)\n")
        self.assertEqual(frame["type"], "error")
        self.assertEqual(frame["error_type"], "ToolError")
        self.assertEqual(frame["message"], "UnknownTool: no tool named 'nope'")
        self.assertIn('File "<code>", line 2, in <module>', frame["traceback"])
        self.assertNotIn("runner.py", frame["traceback"])
        self.assertEqual(rc, 1)

    def test_positional_arguments_are_a_type_error(self):
        for code, message in (("await call_tool('add', 1, 2)",
                               "call_tool takes keyword arguments only"),
                              ("await add(1, b=2)", "add() takes keyword arguments only")):
            with self.subTest(code=code):
                frame, calls, _, _, _ = self.run_code(code)
                self.assertEqual((frame["error_type"], frame["message"]), ("TypeError", message))
                self.assertEqual(calls, [])
                self.assertNotIn("runner.py", frame["traceback"])

    def test_egress_tools_take_their_arguments_positionally_too(self):
        echo = lambda name, kwargs: (True, {"tool": name, **kwargs})  # noqa: E731
        code = ("a = await http_get('http://x.test/', {'A': 'b'})\n"
                "b = await http_post('http://x.test/', 'body')\n"
                "c = await http_request('PUT', 'http://x.test/', body='x')\n"
                "[a, b, c]\n")
        frame, calls, rc, _, _ = self.run_code(code, handler=echo,
                                               tools=["http_get", "http_post", "http_request"])
        self.assertComplete(frame, rc)
        self.assertEqual(frame["output"], [
            {"tool": "http_get", "url": "http://x.test/", "headers": {"A": "b"}},
            {"tool": "http_post", "url": "http://x.test/", "body": "body"},
            {"tool": "http_request", "method": "PUT", "url": "http://x.test/", "body": "x"}])
        for code, message in (
                ("await http_get('u', {}, 3)",
                 "http_get() takes at most 2 positional arguments (url, headers)"),
                ("await http_get('u', url='v')",
                 "http_get() got multiple values for argument 'url'")):
            with self.subTest(code=code):
                frame, calls, _, _, _ = self.run_code(code, tools=["http_get"])
                self.assertEqual((frame["error_type"], frame["message"]), ("TypeError", message))
                self.assertEqual(calls, [])

    def test_non_json_kwargs_are_a_tool_error(self):
        for code, bad in (("await echo(ok=1, bad={1, 2})", "bad"),
                          ("await echo(f=float('nan'))", "f"),
                          ("x = []\nx.append(x)\nawait echo(x=x)", "x"),
                          ("await echo(o=object())", "o")):
            with self.subTest(code=code):
                frame, calls, _, _, _ = self.run_code(code)
                self.assertEqual(frame["error_type"], "ToolError")
                self.assertIn("InvalidArguments: argument %r of tool 'echo' is not "
                              "JSON-serialisable" % bad, frame["message"])
                self.assertEqual(calls, [])
        # Caught like any failed call, with its error_type.
        present, out = self.output_of(
            "try:\n    await echo(s={1})\n"
            "except ToolError as e:\n    r = (e.error_type, e.tool)\nr")
        self.assertEqual(out, ["InvalidArguments", "echo"])

    def test_unawaited_tool_coroutine_is_reported_in_the_note(self):
        frame, calls, rc, _, _ = self.run_code(
            "r = add(a=1, b=2)\n"
            "print(r)\n"
            "c = call_tool('add', a=1, b=2)\n"
            "ok = await add(a=2, b=2)\n"
            "ok")
        self.assertComplete(frame, rc)
        self.assertEqual(frame["output"], 4)
        self.assertEqual([c["id"] for c in calls], [1])
        self.assertEqual(frame["note"],
                         "2 tool call(s) never ran because their coroutine was not awaited: "
                         "add on line 1, add on line 3; add await")

    def test_awaited_and_gathered_calls_leave_no_note(self):
        frame, calls, rc, _, _ = self.run_code(
            "import asyncio\n"
            "coros = [add(a=i, b=1) for i in range(3)]\n"
            "t = asyncio.create_task(call_tool('add', a=5, b=5))\n"
            "[await asyncio.gather(*coros), await t]")
        self.assertComplete(frame, rc)
        self.assertEqual(frame["output"], [[1, 2, 3], 10])
        self.assertNotIn("note", frame)

    def test_oversized_argument_frame(self):
        frame, calls, _, _, _ = self.run_code(
            "try:\n"
            "    await echo(s='x' * 5000)\n"
            "except ToolError as e:\n"
            "    out = [e.error_type, e.message]\n"
            "out",
            max_frame_bytes=1000)
        error_type, message = frame["output"]
        self.assertEqual(error_type, "FrameTooLarge")
        self.assertRegex(message, r"^argument frame of \d+ bytes exceeds the limit of 1000 bytes$")
        self.assertEqual(calls, [])

    def test_budget_is_enforced_locally(self):
        frame, calls, _, _, _ = self.run_code(
            "done = []\n"
            "for i in range(5):\n"
            "    try:\n"
            "        done.append(await add(a=i, b=0))\n"
            "    except ToolError as e:\n"
            "        done.append(e.error_type)\n"
            "done",
            max_tool_calls=3)
        self.assertEqual(frame["output"], [0, 1, 2, "ToolBudgetExceeded",
                                           "ToolBudgetExceeded"])
        self.assertEqual(len(calls), 3)

    def test_host_closing_the_bridge_fails_pending_calls(self):
        c = self.child()
        c.ready()
        c.request("try:\n    await add(a=1, b=1)\nexcept ToolError as e:\n"
                  "    out = e.error_type\nout")
        c.read_frame()
        c.close_request_side()
        frame, _ = c.serve()
        self.assertEqual(frame["output"], "BridgeError")

    def test_malformed_host_frame_is_a_bridge_error(self):
        c = self.child()
        c.ready()
        c.request("await add(a=1, b=1)")
        c.read_frame()
        c.send_raw(b"{this is not json\n")
        frame, _ = c.serve()
        self.assertEqual(frame["type"], "error")
        self.assertEqual(frame["error_type"], "BridgeError")
        self.assertEqual(c.finish(), 1)

    def test_tool_result_without_ok_is_a_bridge_error(self):
        c = self.child()
        c.ready()
        c.request("await add(a=1, b=1)")
        call = c.read_frame()
        c.send({"type": "tool_result", "id": call["id"], "result": 2})
        frame, _ = c.serve()
        self.assertEqual(frame["error_type"], "BridgeError")

    def test_no_threads_and_calls_survive_a_full_pipe(self):
        # 300 calls in flight: about 160 KiB of frames each way, answered one at a time by a
        # host that writes each answer before it reads the next call.
        code = ("import asyncio, os\n"
                "r = await asyncio.gather(*(echo(pad='p' * 500, i=i) for i in range(300)))\n"
                "[len(os.listdir('/proc/self/task')), [x['i'] for x in r] == list(range(300))]")
        frame, calls, _, _, _ = self.run_code(code, max_tool_calls=1000)
        self.assertEqual(frame["output"], [1, True])
        self.assertEqual(len(calls), 300)

    def test_tool_call_on_a_single_loop_without_top_level_await(self):
        frame, calls, _, _, _ = self.run_code(
            "import asyncio\n"
            "loop = asyncio.new_event_loop()\n"
            "loop.run_until_complete(add(a=40, b=2))")
        self.assertEqual(frame["output"], 42)


class ErrorTest(RunnerTestCase):

    def test_exception_line_numbers_and_source(self):
        frame, _, rc, _, _ = self.run_code("x = 1\ny = 0\nz = x / y\nprint('unreached')\n")
        self.assertEqual(frame["type"], "error")
        self.assertEqual(frame["error_type"], "ZeroDivisionError")
        self.assertEqual(frame["message"], "division by zero")
        tb = frame["traceback"]
        self.assertTrue(tb.startswith("Traceback (most recent call last):\n"
                                      '  File "<code>", line 3, in <module>\n'
                                      "    z = x / y\n"), tb)
        self.assertTrue(tb.endswith("ZeroDivisionError: division by zero\n"), tb)
        self.assertNotIn("runner.py", tb)
        self.assertEqual(rc, 1)

    def test_nested_frames_and_stdlib_frames(self):
        frame, _, _, _, _ = self.run_code(
            "import json\n"
            "def parse(s):\n"
            "    return json.loads(s)\n"
            "\n"
            "parse('{')\n")
        tb = frame["traceback"]
        self.assertEqual(frame["error_type"], "JSONDecodeError")
        lines = tb.splitlines()
        self.assertEqual(lines[1], '  File "<code>", line 5, in <module>')
        self.assertEqual(lines[2], "    parse('{')")
        self.assertIn('  File "<code>", line 3, in parse', lines)
        self.assertIn("json/decoder.py", tb)
        self.assertNotIn("runner.py", tb)

    def test_trimmed_traceback_with_top_level_await(self):
        frame, _, _, _, _ = self.run_code(
            "import asyncio\n"
            "async def boom():\n"
            "    await asyncio.sleep(0)\n"
            "    raise KeyError('k')\n"
            "await boom()\n")
        tb = frame["traceback"]
        self.assertEqual(frame["error_type"], "KeyError")
        self.assertEqual(frame["message"], "'k'")
        lines = tb.splitlines()
        self.assertEqual(lines[1], '  File "<code>", line 5, in <module>')
        self.assertIn('  File "<code>", line 4, in boom', lines)
        self.assertNotIn("runner.py", tb)
        self.assertNotIn("base_events.py", tb)

    def test_chained_exception(self):
        frame, _, _, _, _ = self.run_code(
            "try:\n"
            "    await fail()\n"
            "except ToolError as e:\n"
            "    raise RuntimeError('wrapped') from e\n")
        tb = frame["traceback"]
        self.assertEqual((frame["error_type"], frame["message"]), ("RuntimeError", "wrapped"))
        self.assertIn("ToolError: ValueError: it failed", tb)
        self.assertIn("The above exception was the direct cause", tb)
        self.assertNotIn("runner.py", tb)

    def test_syntax_error(self):
        frame, _, rc, _, _ = self.run_code("x = 1\ny = (\n")
        self.assertEqual(frame["error_type"], "SyntaxError")
        self.assertIn('File "<code>", line 2', frame["traceback"])
        self.assertNotIn("runner.py", frame["traceback"])
        self.assertEqual(rc, 1)

    def test_huge_exception_message_is_truncated(self):
        c = self.child()
        c.ready()
        c.request("raise ValueError('x' * 10_000_000)")
        frame, _ = c.serve()
        self.assertEqual(frame["error_type"], "ValueError")
        self.assertLessEqual(len(c.lines[-1]) + 1, 1 << 20)  # frame sizes count the newline
        self.assertRegex(frame["message"], r"^x+\.\.\. \[truncated \d+ bytes\]$")
        self.assertIn("[truncated", frame["traceback"])
        self.assertEqual(c.finish(), 1)

    def test_huge_non_ascii_message_with_a_small_frame_limit(self):
        c = self.child()
        c.ready()
        c.request("raise ValueError('\u00e9\U0001f600' * 100_000)", max_frame_bytes=10_000)
        frame, _ = c.serve()
        self.assertLessEqual(len(c.lines[-1]) + 1, 10_000)
        self.assertIn("[truncated", frame["message"])

    def test_system_exit_zero_is_success(self):
        for code in ("print('a')\nsys = __import__('sys')\nsys.exit(0)\nprint('b')",
                     "print('a')\nexit()\n7",
                     "print('a')\nraise SystemExit(None)",
                     "print('a')\nimport asyncio\nawait asyncio.sleep(0)\nraise SystemExit"):
            with self.subTest(code=code):
                frame, _, rc, out, _ = self.run_code(code)
                self.assertEqual(frame, {"type": "complete", "output_present": False,
                                         "output": None})
                self.assertEqual((rc, out), (0, "a\n"))

    def test_system_exit_nonzero_is_an_error(self):
        frame, _, rc, _, _ = self.run_code("sys = __import__('sys')\nsys.exit(2)")
        self.assertEqual((frame["type"], frame["error_type"], frame["message"]),
                         ("error", "SystemExit", "2"))
        self.assertIn('File "<code>", line 2', frame["traceback"])
        self.assertEqual(rc, 1)
        frame, _, _, _, _ = self.run_code("sys = __import__('sys')\nsys.exit('bad input')")
        self.assertEqual((frame["error_type"], frame["message"]), ("SystemExit", "bad input"))

    def test_keyboard_interrupt(self):
        frame, _, rc, _, _ = self.run_code("raise KeyboardInterrupt")
        self.assertEqual(frame["error_type"], "KeyboardInterrupt")
        self.assertEqual(rc, 1)

    def test_recursion_error(self):
        frame, _, _, _, _ = self.run_code("def f(n):\n    return f(n + 1)\nf(0)")
        self.assertEqual(frame["error_type"], "RecursionError")
        self.assertIn("Previous line repeated", frame["traceback"])

    def test_memory_error(self):
        frame, _, rc, _, _ = self.run_code("x = 1\nbytearray(1 << 62)")
        self.assertEqual(frame["error_type"], "MemoryError")
        self.assertIn('File "<code>", line 2', frame["traceback"])
        self.assertEqual(rc, 1)

    def test_memory_error_under_a_real_address_space_limit(self):
        c = self.child()
        c.ready()
        with open("/proc/%d/status" % c.proc.pid) as f:
            vm_kib = next(int(line.split()[1]) for line in f if line.startswith("VmSize:"))
        limit = (vm_kib << 10) + (64 << 20)
        resource.prlimit(c.proc.pid, resource.RLIMIT_AS, (limit, limit))
        c.request("chunks = []\nwhile True:\n    chunks.append(bytearray(1 << 20))\n")
        frame, _ = c.serve()
        self.assertEqual(frame["type"], "error")
        self.assertEqual(frame["error_type"], "MemoryError")
        self.assertEqual(c.finish(), 1)

    def test_tracebacks_printed_by_the_code_show_its_source(self):
        frame, _, _, _, err = self.run_code(
            "import traceback\n"
            "try:\n"
            "    {}['missing']\n"
            "except KeyError:\n"
            "    traceback.print_exc()\n")
        self.assertComplete(frame)
        self.assertIn('File "<code>", line 3, in <module>\n    {}[\'missing\']', err)

    def test_exception_with_failing_str(self):
        frame, _, _, _, _ = self.run_code(
            "class E(Exception):\n    def __str__(self):\n        raise RuntimeError\n"
            "raise E()")
        self.assertEqual(frame["error_type"], "E")
        self.assertEqual(frame["message"], "<exception str() failed>")

    def test_exception_group(self):
        frame, _, _, _, _ = self.run_code(
            "import asyncio\n"
            "async def bad(i):\n    raise ValueError(i)\n"
            "async with asyncio.TaskGroup() as tg:\n"
            "    tg.create_task(bad(1))\n"
            "    tg.create_task(bad(2))\n")
        self.assertEqual(frame["error_type"], "ExceptionGroup")
        self.assertIn("ValueError: 1", frame["traceback"])
        self.assertNotIn("runner.py", frame["traceback"])



FIXTURES = os.path.join(HERE, "fixtures")


def _fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
        return f.read()


class GuardedFormsTest(RunnerTestCase):
    """The accepted forms (validator/forms.py) hold at run time with the validator off: the
    runner binds the guarded getattr/hasattr/vars and rewrites `import sys` and `.__dict__`
    reads whether or not anything validated the code."""

    def run_fixture(self, name):
        frame, _, rc, stdout, stderr = self.run_code(_fixture(name))
        self.assertComplete(frame, rc)
        return stdout, stderr

    def test_getattr_and_hasattr_refuse_underscore_and_internal_names(self):
        stdout, _ = self.run_fixture("guarded_getattr.py")
        self.assertEqual(stdout.splitlines(), [
            "public: 1 default: fallback has: True False",
            "getattr __class__: PermissionError: getattr(): the name '__class__' starts with an "
            "underscore; getattr and hasattr read public attributes only (codeact rule "
            "builtin-blocked)",
            "getattr _private: PermissionError: getattr(): the name '_private' starts with an "
            "underscore; getattr and hasattr read public attributes only (codeact rule "
            "builtin-blocked)",
            "getattr default: PermissionError: getattr(): the name '__globals__' starts with an "
            "underscore; getattr and hasattr read public attributes only (codeact rule "
            "builtin-blocked)",
            "hasattr __dict__: PermissionError: hasattr(): the name '__dict__' starts with an "
            "underscore; getattr and hasattr read public attributes only (codeact rule "
            "builtin-blocked)",
            "getattr gi_frame: PermissionError: getattr(): 'gi_frame' is an interpreter internal "
            "or a module; getattr and hasattr read public attributes only (codeact rule "
            "builtin-blocked)",
            "getattr sys: PermissionError: getattr(): 'sys' is an interpreter internal or a "
            "module; getattr and hasattr read public attributes only (codeact rule "
            "builtin-blocked)",
            "str subclass: TypeError: getattr(): the attribute name must be a str, not S",
        ])

    def test_import_sys_is_the_read_only_view(self):
        stdout, stderr = self.run_fixture("sys_view.py")
        import sys as real
        self.assertEqual(stdout.splitlines(), [
            "written", "type: _Sys",
            "fields: %s %s %s %s" % (real.version, real.platform, real.maxsize, real.byteorder),
            "argv: []",
            "modules: AttributeError: sys.modules is not available in the sandbox: import the "
            "modules you need (allowed ones only)",
            "_getframe: AttributeError",
            "buffer: AttributeError: sys.stdout has write() and flush() only here; print() what "
            "you need (print(..., file=sys.stdout) works too)",
            "setattr: AttributeError: sys is read-only in the sandbox; keep your own values in "
            "your own variables",
            "from sys import modules: AttributeError",
            "alias: True",
            "getsizeof: True True",
            # Only what the code's own __builtins__ gives as well: the builtins module (the
            # __self__ of print) and io (of open); no sys, no frame, no runner module.
            "reachable modules: ['module builtins', 'module io']",
        ])
        self.assertEqual(stderr, "to stderr\nprinted to stderr\n")

    def test_vars_and_dict_reads_are_read_only_public_copies(self):
        stdout, _ = self.run_fixture("guarded_vars.py")
        self.assertEqual(stdout.splitlines(), [
            "vars: {'a': 1, 'b': [2]}",
            "__dict__: {'a': 1, 'b': [2]}",
            "json: {\"a\": 1, \"b\": [2]}",
            "write: TypeError: vars(obj) and obj.__dict__ give a read-only copy of the public "
            "attributes: assign attributes directly (obj.name = value), or copy it with "
            "dict(...)",
            "update: TypeError",
            "object unchanged: 1 False",
            "vars(): PermissionError: vars() without an argument is not available: keep shared "
            "values in your own dict",
            "vars(module): TypeError: vars() and .__dict__ read an instance's attributes, not "
            "those of a module: use the documented attributes directly",
            "vars(class): TypeError",
            "copy: {'a': 1, 'b': [2], 'c': 3}",
        ])


# The runtime guard's module, as ctest names it (tests/CMakeLists.txt); absent when run by hand.
GUARD_MODULE = os.environ.get("CODEACT_GUARD_MODULE", "")


def guard_spec(workdir, imports=("math",)):
    return {"exec": ["/usr", os.path.dirname(RUNNER)], "read": [], "write": [workdir, "/dev/null"],
            "bridge_fds": [3, 4], "imports": list(imports)}


class RuntimeGuardTest(RunnerTestCase):
    """The runner's side of the guard: loading, arming before any code, failing clearly."""

    def guarded_child(self, **env):
        if not GUARD_MODULE:
            self.skipTest("CODEACT_GUARD_MODULE is not set (ctest sets it to the built module)")
        return self.child(fixed_fds=True, extra_env=dict(CODEACT_GUARD=GUARD_MODULE, **env))

    def test_a_request_for_the_guard_without_its_module_ends_with_guard_error(self):
        c = self.child()
        c.ready()
        c.request("open('ran.txt', 'w').write('x')", guard=guard_spec(c.tmp))
        frame = c.read_frame()
        self.assertEqual(frame, {"type": "guard_error", "message": "codeact guard: the host asked for "
                                 "the guard but named no module (CODEACT_GUARD)"})
        self.assertEqual(c.finish(), 1)
        self.assertFalse(os.path.exists(os.path.join(c.tmp, "ran.txt")))

    def test_a_module_that_does_not_load_ends_with_guard_error(self):
        c = self.child(extra_env={"CODEACT_GUARD": os.path.join(HERE, "no_such_module.so")})
        c.ready()
        c.request("print('ran')", guard=guard_spec(c.tmp))
        frame = c.read_frame()
        self.assertEqual(frame["type"], "guard_error")
        self.assertIn("codeact guard: cannot load " + os.path.join(HERE, "no_such_module.so"),
                      frame["message"])
        self.assertEqual(c.finish(), 1)
        self.assertEqual(bytes(c.stdout), b"")

    def test_files_left_open_are_flushed_however_the_code_opened_them(self):
        # Armed, the runner walks the code's objects for open files only when the guard's audit
        # hook saw an "open" that may write: each way of opening one must count.
        opens = ("open('a', 'w')", "open('b', 'a')", "open('c', 'x')", "open('d', 'wb')",
                 "open(os.open('e', os.O_WRONLY | os.O_CREAT), 'w')",
                 "os.fdopen(os.open('f', os.O_RDWR | os.O_CREAT), 'r+')",
                 "pathlib.Path('g').open('w')", "io.open('h', 'w')")
        for i, opened in enumerate(opens):
            c = self.guarded_child()
            c.ready()
            c.request("import io, os, pathlib\nf = %s\nf.write('data' if 'b' not in f.mode "
                      "else b'data')\n" % opened, guard=guard_spec(c.tmp, ("io", "os", "pathlib")))
            frame, _ = c.serve()
            self.assertComplete(frame)
            self.assertEqual(c.finish(), 0)
            with open(os.path.join(c.tmp, "abcdefgh"[i]), "rb") as f:
                self.assertEqual(f.read(), b"data", opened)

    def test_armed_before_the_code_and_the_module_path_is_gone(self):
        c = self.guarded_child()
        c.ready()
        c.request("import os\nprint('CODEACT_GUARD' in os.environ)\n"
                  "try:\n    os.fork()\nexcept PermissionError as e:\n    print(e)\n"
                  "try:\n    import socket\nexcept PermissionError as e:\n    print(e)\n",
                  guard=guard_spec(c.tmp, imports=("os", "!socket")))
        frame, _ = c.serve()
        self.assertComplete(frame)
        self.assertEqual(bytes(c.stdout).decode(),
                         "False\ncodeact guard: process creation: os.fork is not allowed\n"
                         "codeact guard: import: socket is not allowed by the policy\n")

    def test_an_import_no_pattern_names_is_a_module_not_found_and_the_fallback_runs(self):
        # With the validator off: what `try: import numpy / except ImportError:` relies on. A
        # module the patterns refuse ("!name", as the host sends every blocked one) is still a
        # PermissionError, which `except ImportError` does not catch.
        c = self.guarded_child()
        c.ready()
        c.request(_fixture("try_import_fallback.py"),
                  guard=guard_spec(c.tmp, imports=("math", "!socket", "!sys", "!ctypes")))
        frame, _ = c.serve()
        self.assertComplete(frame)
        self.assertEqual(bytes(c.stdout).decode(),
                         "numpy: ModuleNotFoundError: No module named 'numpy' (name numpy)\n"
                         "fallback ran: 6\n"
                         "from pandas: ModuleNotFoundError: No module named 'pandas'\n"
                         "socket: PermissionError: codeact guard: import: socket is not allowed "
                         "by the policy\n"
                         "__import__ sys: PermissionError: codeact guard: import: sys is not "
                         "allowed by the policy\n"
                         "ctypes.util: PermissionError: codeact guard: import: ctypes.util is not "
                         "allowed by the policy\n"
                         "subprocess: PermissionError: codeact guard: import: subprocess is not "
                         "allowed by the policy\n")

    def test_a_policy_that_allows_sys_gets_the_real_module_else_the_view(self):
        for imports, printed in ((("sys",), "module True\n"), ((), "_Sys False\n")):
            c = self.guarded_child()
            c.ready()
            c.request("import sys\nprint(type(sys).__name__, 'modules' in dir(sys))\n",
                      guard=guard_spec(c.tmp, imports=imports))
            frame, _ = c.serve()
            self.assertComplete(frame)
            self.assertEqual(bytes(c.stdout).decode(), printed)

    def test_a_pooled_child_arms_with_the_guard_frame_before_ready(self):
        c = self.guarded_child(CODEACT_WARM="1")
        spec = guard_spec(c.tmp)
        c.send(dict({k: v for k, v in spec.items() if k != "imports"}, type="guard"))
        c.ready()
        with open("/proc/%d/status" % c.proc.pid) as f:
            status = f.read()
        self.assertIn("NoNewPrivs:\t1", status)
        self.assertIn("Seccomp:\t2", status)
        c.request("print(1)", guard=spec)
        frame, _ = c.serve()
        self.assertComplete(frame)
        self.assertEqual(c.finish(), 0)

    def test_a_request_can_name_the_guard_frame_with_its_imports(self):
        # The host sends the latest run's imports ahead; a request whose spec is that frame's says
        # "armed", and the import check is the frame's.
        c = self.guarded_child(CODEACT_WARM="1")
        spec = guard_spec(c.tmp, imports=("math", "!socket"))
        c.send(dict(spec, type="guard"))
        c.ready()
        c.request("import math\nprint(math.floor(2.5))\ntry:\n    import socket\n"
                  "except PermissionError as e:\n    print(e)\n", guard="armed")
        frame, _ = c.serve()
        self.assertComplete(frame)
        self.assertEqual(bytes(c.stdout).decode(),
                         "2\ncodeact guard: import: socket is not allowed by the policy\n")
        self.assertEqual(c.finish(), 0)

    def test_armed_without_imports_ahead_ends_with_guard_error(self):
        # Never unguarded: a request that names a guard frame that did not come, or came without
        # the imports, runs none of the code.
        for ahead in (None, "without imports"):
            with self.subTest(ahead=ahead):
                c = self.guarded_child(CODEACT_WARM="1") if ahead else self.guarded_child()
                spec = guard_spec(c.tmp)
                if ahead:
                    c.send(dict({k: v for k, v in spec.items() if k != "imports"}, type="guard"))
                c.ready()
                c.request("open('ran.txt', 'w').write('x')", guard="armed")
                frame = c.read_frame()
                self.assertEqual(frame["type"], "guard_error", frame)
                self.assertIn("codeact guard: ", frame["message"])
                self.assertEqual(c.finish(), 1)
                self.assertFalse(os.path.exists(os.path.join(c.tmp, "ran.txt")))

    def test_a_request_whose_paths_differ_from_those_armed_ahead_is_refused(self):
        c = self.guarded_child(CODEACT_WARM="1")
        spec = guard_spec(c.tmp)
        c.send(dict({k: v for k, v in spec.items() if k != "imports"}, type="guard"))
        c.ready()
        c.request("print('ran')", guard=dict(spec, write=["/"]))
        frame = c.read_frame()
        self.assertEqual(frame["type"], "guard_error")
        self.assertIn("differ from those armed ahead", frame["message"])
        self.assertEqual(c.finish(), 1)
        self.assertEqual(bytes(c.stdout), b"")


def staged_runner_dir():
    """A directory laid out as the host stages it for a child that validates its code: the
    runner's modules with the validator package beside them (runner_files.hpp)."""
    staged = tempfile.mkdtemp(prefix="runner-staged-")
    for name in os.listdir(os.path.dirname(RUNNER)):
        if name.endswith(".py"):
            shutil.copy(os.path.join(os.path.dirname(RUNNER), name), staged)
    shutil.copytree(os.path.join(REPO, "validator"), os.path.join(staged, "validator"),
                    ignore=shutil.ignore_patterns("tests", "__pycache__", "__main__.py"))
    os.chmod(staged, 0o755)
    return staged


class ChildValidationTest(RunnerTestCase):
    """A request with "validate": the verdict first, before any of the code runs."""

    @classmethod
    def setUpClass(cls):
        cls.staged = staged_runner_dir()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.staged, ignore_errors=True)

    def validating_child(self, **kw):
        return self.child(runner=os.path.join(self.staged, "runner.py"), **kw)

    def test_a_rejection_comes_first_and_nothing_of_the_code_runs(self):
        c = self.validating_child()
        c.ready()
        c.request("open('ran.txt', 'w').write('x')\nprint('ran')\nimport subprocess\n",
                  validate={"tool_names": []})
        frame = c.read_frame()
        self.assertEqual(frame["type"], "validated", frame)
        self.assertIs(frame["ok"], False)
        self.assertEqual([v["rule"] for v in frame["violations"]], ["import-blocked"])
        self.assertEqual(frame["violations"][0]["line"], 3)
        self.assertNotIn("violations_dropped", frame)
        self.assertEqual(c.finish(), 1)
        self.assertIsNone(c.read_frame())
        self.assertEqual(bytes(c.stdout), b"")
        self.assertFalse(os.path.exists(os.path.join(c.tmp, "ran.txt")))

    def test_the_verdict_is_the_validators_under_the_policy_sent(self):
        import sys
        sys.path.insert(0, REPO)
        try:
            import validator
        finally:
            sys.path.remove(REPO)
        code = "import json\nx = eval('1')\nprint(json.dumps(x))\nf'{x.__class__}'\n"
        for policy in ({}, {"extra_blocked_imports": ["json"]}, {"allowed_builtins": ["print"]}):
            with self.subTest(policy=policy):
                c = self.validating_child()
                c.ready()
                c.request(code, validate=policy)
                frame = c.read_frame()
                expected = validator.validate(code, policy)
                self.assertFalse(expected["ok"])
                self.assertEqual(frame, {"type": "validated", "ok": False,
                                         "violations": expected["violations"]})
                self.assertEqual(c.finish(), 1)

    def test_a_pass_comes_first_and_then_the_run(self):
        c = self.validating_child()
        c.ready()
        c.request("import json\nprint(json.dumps([1]))\n", validate={})
        self.assertEqual(c.read_frame(), {"type": "validated", "ok": True})
        frame, _ = c.serve()
        self.assertComplete(frame)
        self.assertEqual(c.finish(), 0)
        self.assertEqual(bytes(c.stdout), b"[1]\n")

    def test_violations_that_do_not_fit_in_a_frame_are_cut_and_counted(self):
        c = self.validating_child()
        c.ready()
        c.request("".join("import subprocess as s%d\n" % i for i in range(40)),
                  validate={}, max_frame_bytes=2000)
        c._pump(time.monotonic() + DEADLINE)
        while c._pump(time.monotonic() + DEADLINE):
            pass
        self.assertEqual(len(c.lines), 2)  # ready, then the verdict alone
        self.assertLessEqual(len(c.lines[1]) + 1, 2000)
        frame = c.read_frame()
        self.assertIs(frame["ok"], False)
        self.assertGreater(frame["violations_dropped"], 0)
        self.assertEqual(len(frame["violations"]) + frame["violations_dropped"], 40)
        self.assertEqual(frame["violations"][0]["line"], 1)

    def test_a_validator_that_cannot_run_rejects_and_says_why(self):
        c = self.child()  # the runner's sources alone: no validator package beside them
        c.ready()
        c.request("print('ran')", validate={})
        frame = c.read_frame()
        self.assertIs(frame["ok"], False)
        self.assertEqual(frame["violations"][0]["rule"], "internal-error")
        self.assertIn("ModuleNotFoundError", frame["violations"][0]["message"])
        self.assertEqual(c.finish(), 1)
        self.assertEqual(bytes(c.stdout), b"")
        c = self.validating_child()
        c.ready()
        c.request("print('ran')", validate={"no_such_key": 1})
        frame = c.read_frame()
        self.assertEqual(frame["violations"][0]["rule"], "internal-error")
        self.assertEqual(c.finish(), 1)

    def test_the_guard_imports_are_computed_from_the_policy(self):
        if not GUARD_MODULE:
            self.skipTest("CODEACT_GUARD_MODULE is not set (ctest sets it to the built module)")
        c = self.validating_child(fixed_fds=True, extra_env={"CODEACT_GUARD": GUARD_MODULE})
        c.ready()
        spec = dict(guard_spec(c.tmp, imports=()), exec=["/usr", self.staged])
        # The host sends no list of its own; json is on the default policy's.
        c.request("import json\nprint(json.dumps(1))\n", guard=spec, validate={})
        self.assertEqual(c.read_frame(), {"type": "validated", "ok": True})
        frame, _ = c.serve()
        self.assertComplete(frame)
        self.assertEqual(bytes(c.stdout), b"1\n")

    def test_a_child_that_validates_takes_no_imports_armed_ahead(self):
        # Its imports are its own, from the policy: a request that names those of the guard frame
        # instead runs none of the code.
        if not GUARD_MODULE:
            self.skipTest("CODEACT_GUARD_MODULE is not set (ctest sets it to the built module)")
        c = self.validating_child(fixed_fds=True, extra_env={"CODEACT_GUARD": GUARD_MODULE,
                                                             "CODEACT_WARM": "1"})
        spec = dict(guard_spec(c.tmp, imports=("os",)), exec=["/usr", self.staged])
        c.send(dict(spec, type="guard"))
        c.ready()
        c.request("open('ran.txt', 'w').write('x')", guard="armed", validate={})
        self.assertEqual(c.read_frame(), {"type": "validated", "ok": True})
        frame = c.read_frame()
        self.assertEqual(frame["type"], "guard_error", frame)
        self.assertIn("carries the guard's imports itself", frame["message"])
        self.assertEqual(c.finish(), 1)
        self.assertFalse(os.path.exists(os.path.join(c.tmp, "ran.txt")))


if __name__ == "__main__":
    unittest.main()
