"""Tests of the zygote (resources/runner_zygote.py and its loop in the guard module,
src/guard/zygote_loop.hpp) against a fake host on the SOCK_SEQPACKET socket: a malformed message
from the host is answered with fork_failed naming what is wrong, and a fork gives a child that
says ready on the bridge it was handed, runs a request with its own run token and its own random
state, and whose exit is reported.

Run from the repository root:
    /usr/bin/python3.11 -m unittest discover -s tests/python -t tests/python -q
"""

import json
import os
import select
import signal
import socket
import unittest
import unittest.mock

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(os.path.dirname(os.path.dirname(HERE)), "resources", "runner.py")
PYTHON = "/usr/bin/python3.11"
DEADLINE = 60.0
GUARD = os.environ.get("CODEACT_GUARD_MODULE", "")


def receive(sock, timeout=DEADLINE):
    if not select.select([sock], [], [], timeout)[0]:
        raise AssertionError("no message from the zygote in time")
    return json.loads(sock.recv(65536))


@unittest.skipUnless(GUARD, "CODEACT_GUARD_MODULE names no guard module (the zygote's loop)")
class ZygoteTest(unittest.TestCase):
    def setUp(self):
        self.host, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # As the host starts it (src/process/fork_server.cpp): the socket at fds 3 and 4 both.
        fd = zygote_end.fileno()
        self.pid = os.posix_spawn(
            PYTHON, [PYTHON, "-I", "-S", "-u", RUNNER],
            dict({"CODEACT_ZYGOTE": "1", "CODEACT_CPU_LIMIT_S": "60",
                  "CODEACT_RUN_TOKEN": "00000000", "CODEACT_ZYGOTE_MODULE": GUARD},
                 **self.guard_env()),
            file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                          (os.POSIX_SPAWN_DUP2, fd, 3), (os.POSIX_SPAWN_DUP2, fd, 4)],
            setsid=True)
        zygote_end.close()
        self.ready = receive(self.host)

    def guard_env(self):
        return {"CODEACT_GUARD": GUARD}  # its children arm the guard before they say ready

    def tearDown(self):
        self.host.close()  # the zygote exits at the end of its input
        pidfd = os.pidfd_open(self.pid)
        try:
            exited = select.select([pidfd], [], [], DEADLINE)[0]
        finally:
            os.close(pidfd)
        if not exited:
            os.killpg(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        self.assertTrue(exited, "the zygote did not exit at the end of its input")

    def test_ready_then_malformed_messages_are_answered_by_name(self):
        self.assertEqual(self.ready, {"type": "zygote_ready", "pid": self.pid})
        self.host.send(b"F 0123abcd -1 0 /tmp")  # the fork server's message before it was typed
        self.assertEqual(receive(self.host), {
            "type": "fork_failed", "message": "malformed fork server message: not a JSON object"})
        self.host.send(b'{"type":"fork","token":"0123abcd","uid":"-1","workdir_bytes":0,'
                       b'"workdir":"/tmp"}')
        self.assertEqual(receive(self.host), {
            "type": "fork_failed", "message": "malformed fork server message: fork: \"uid\" must "
                                              "be an integer"})
        self.host.send(b'{"type":"fork","token":"0123abcd","uid":-1,"workdir_bytes":0,'
                       b'"workdir":"/tmp"}')  # without the child's fds
        self.assertEqual(receive(self.host), {
            "type": "fork_failed", "message": "a fork message needs the child's 5 fds, got 0"})

    def fork(self, token):
        """A child forked for a run with `token`: (pid, bridge to it, bridge from it, stdout)."""
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        out_r, out_w = os.pipe()
        null = os.open(os.devnull, os.O_RDWR)
        message = {"type": "fork", "token": token, "uid": -1, "workdir_bytes": 0,
                   "workdir": os.path.realpath("/tmp")}
        socket.send_fds(self.host, [json.dumps(message).encode()],
                        [null, out_w, null, to_child_r, from_child_w])
        for fd in (null, out_w, to_child_r, from_child_w):
            os.close(fd)
        forked = receive(self.host)
        self.assertEqual(forked["type"], "forked", forked)
        if self.guard_env():
            # The guard's system part, which a forked child arms before it says ready.
            guard = {"type": "guard", "exec": ["/usr", os.path.dirname(RUNNER),
                                               os.path.dirname(GUARD)],
                     "read": [], "write": ["/tmp", "/dev/null"], "bridge_fds": [3, 4]}
            os.write(to_child_w, (json.dumps(guard) + "\n").encode())
        self.assertTrue(select.select([from_child_r], [], [], DEADLINE)[0])
        self.assertEqual(json.loads(os.read(from_child_r, 65536))["type"], "ready")
        return forked["pid"], to_child_w, from_child_r, out_r

    def run_in(self, child, code):
        """Runs `code` in a forked child: (its stdout, the zygote's exit report)."""
        _pid, to_child, from_child, out = child
        os.write(to_child, (json.dumps({"type": "request", "code": code}) + "\n").encode())
        self.assertTrue(select.select([from_child], [], [], DEADLINE)[0])
        self.assertEqual(json.loads(os.read(from_child, 65536))["type"], "complete")
        exited = receive(self.host)
        stdout = os.read(out, 65536).decode()
        for fd in (to_child, from_child, out):
            os.close(fd)
        return stdout, exited

    def test_a_fork_gives_a_child_that_says_ready_and_its_exit_is_reported(self):
        pid, to_child, from_child, out = self.fork("abcdef01")
        os.close(to_child)  # EOF before a request: the child exits 0
        self.assertEqual(receive(self.host), {"type": "exited", "pid": pid, "status": 0,
                                              "cpu_us": unittest.mock.ANY})
        os.close(from_child)
        os.close(out)

    def test_each_child_has_its_own_token_and_random_state(self):
        code = "import os, random\nprint(os.environ['CODEACT_RUN_TOKEN'], random.random())"
        seen = []
        for token in ("abcdef01", "abcdef02"):
            child = self.fork(token)
            with open("/proc/%d/environ" % child[0], "rb") as f:  # what the host's sweep reads
                self.assertIn(b"CODEACT_RUN_TOKEN=" + token.encode(), f.read().split(b"\0"))
            stdout, exited = self.run_in(child, code)
            self.assertEqual((exited["pid"], exited["status"]), (child[0], 0))
            environ_token, number = stdout.split()
            self.assertEqual(environ_token, token)
            seen.append(number)
        self.assertNotEqual(seen[0], seen[1], "random was not reseeded in the children")

    def test_a_kill_ends_an_unreaped_child(self):
        pid, to_child, from_child, out = self.fork("abcdef03")
        self.host.send(json.dumps({"type": "kill", "pid": pid}).encode())
        exited = receive(self.host)
        self.assertEqual((exited["pid"], os.WIFSIGNALED(exited["status"]),
                          os.WTERMSIG(exited["status"])), (pid, True, signal.SIGKILL))
        for fd in (to_child, from_child, out):
            os.close(fd)


class UnguardedZygoteTest(ZygoteTest):
    """A zygote whose children do not arm the guard (ExecutorOptions::runtime_guard off) loads
    the module for its loop all the same: its children say ready without a guard frame."""

    def guard_env(self):
        return {}


if __name__ == "__main__":
    unittest.main()
