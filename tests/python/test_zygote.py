"""Tests of resources/runner_zygote.py, the zygote's side of the fork server, against a fake host
on the SOCK_SEQPACKET socket: its messages are codeact_protocol.py's, a malformed one from the
host is answered with fork_failed naming what is wrong, and a fork gives a child that says ready
on the bridge it was handed.

Run from the repository root:
    /usr/bin/python3.11 -m unittest discover -s tests/python -t tests/python -q
"""

import json
import os
import select
import signal
import socket
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(os.path.dirname(os.path.dirname(HERE)), "resources", "runner.py")
PYTHON = "/usr/bin/python3.11"
DEADLINE = 60.0


def receive(sock, timeout=DEADLINE):
    if not select.select([sock], [], [], timeout)[0]:
        raise AssertionError("no message from the zygote in time")
    return json.loads(sock.recv(65536))


class ZygoteTest(unittest.TestCase):
    def setUp(self):
        self.host, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # As the host starts it (src/process/fork_server.cpp): the socket at fds 3 and 4 both.
        fd = zygote_end.fileno()
        self.pid = os.posix_spawn(
            PYTHON, [PYTHON, "-I", "-S", "-u", RUNNER],
            {"CODEACT_ZYGOTE": "1", "CODEACT_CPU_LIMIT_S": "60", "CODEACT_RUN_TOKEN": "00000000"},
            file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                          (os.POSIX_SPAWN_DUP2, fd, 3), (os.POSIX_SPAWN_DUP2, fd, 4)],
            setsid=True)
        zygote_end.close()
        self.ready = receive(self.host)

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
        failed = receive(self.host)
        self.assertEqual(failed["type"], "fork_failed")
        self.assertTrue(failed["message"].startswith("malformed fork server message: Expecting"),
                        failed)
        self.host.send(b'{"type":"fork","token":"0123abcd","uid":"-1","workdir_bytes":0,'
                       b'"workdir":"/tmp"}')
        self.assertEqual(receive(self.host), {
            "type": "fork_failed", "message": "malformed fork server message: fork: 'uid' must be "
                                              "an integer"})
        self.host.send(b'{"type":"fork","token":"0123abcd","uid":-1,"workdir_bytes":0,'
                       b'"workdir":"/tmp"}')  # without the child's fds
        self.assertEqual(receive(self.host), {
            "type": "fork_failed", "message": "a fork message needs the child's 5 fds, got 0"})

    def test_a_fork_gives_a_child_that_says_ready_and_its_exit_is_reported(self):
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        null = os.open(os.devnull, os.O_RDWR)
        fds = [null, null, null, to_child_r, from_child_w]
        # The token has the length of the zygote's (it is written over it in place).
        message = {"type": "fork", "token": "abcdef01", "uid": -1, "workdir_bytes": 0,
                   "workdir": os.path.realpath("/tmp")}
        socket.send_fds(self.host, [json.dumps(message).encode()], fds)
        for fd in (null, to_child_r, from_child_w):
            os.close(fd)
        forked = receive(self.host)
        self.assertEqual(forked["type"], "forked", forked)
        self.assertTrue(select.select([from_child_r], [], [], DEADLINE)[0])
        self.assertEqual(json.loads(os.read(from_child_r, 65536))["type"], "ready")
        os.close(to_child_w)  # EOF before a request: the child exits 0
        exited = receive(self.host)
        self.assertEqual(exited["type"], "exited")
        self.assertEqual(exited["pid"], forked["pid"])
        self.assertEqual(exited["status"], 0)
        os.close(from_child_r)


if __name__ == "__main__":
    unittest.main()
