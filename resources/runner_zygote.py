"""The zygote's side of the fork server (src/process/fork_server.hpp for the guarantees, the
messages in codeact_protocol.py): runner.py with CODEACT_ZYGOTE=1 loads everything, then calls
serve(), which forks one child per "fork" message and returns only in such a child, set up for
its run, which goes on as any pooled child. End of input: the host is gone; the zygote exits
(its children have PDEATHSIG on it).

CODEACT_ZYGOTE=namespaces: a root host's zygote inside the sandbox (codeact-sandbox
--zygote-uids), uid 0 of the sandbox's user namespace. Each child is forked into a new pid
namespace and contains itself with the guard module's contain_zygote_child
(src/sandbox/zygote_child.hpp) before it runs anything else.
"""

import builtins
import ctypes
import os
import select
import signal
import socket

from codeact_protocol import (ProtocolError, decode, encode, exited_message, fork_failed_message,
                              forked_message, parse_fork_server_message, zygote_ready_message)
from runner import _HIDDEN_OUTPUT, _compile_user_code, _exit, _state


_CLONE_NEWPID = 0x20000000


def serve(namespaces=False):
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl
    # Nothing may read this process's memory or environment through /proc (a root zygote's
    # children run as other uids; a non-root host's runs share its uid).
    if prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE
        _exit(125)
    cpu_limit = int(os.environ.pop("CODEACT_CPU_LIMIT_S"))
    zygote = os.getpid()
    children = set()
    rsig, wsig = os.pipe()
    os.set_blocking(rsig, False)
    os.set_blocking(wsig, False)
    signal.set_wakeup_fd(wsig)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, 0, fileno=_state.rfd)
    sock.setblocking(True)
    # Everything loaded so far is the children's shared, copy-on-write memory: keep the cyclic
    # collector from walking it in every child (each object it visits is a page copied).
    import gc
    gc.collect()
    gc.freeze()
    # A namespaces zygote forks each child into a new pid namespace: it enters one for its next
    # child before each fork, coming back to its own first (a second unshare would fail).
    own_pid_ns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC) if namespaces else -1
    sock.send(zygote_ready_message(zygote))
    while True:
        readable = select.select([sock, rsig], [], [])[0]
        if rsig in readable:
            try:
                os.read(rsig, 512)
            except OSError:
                pass
            _zygote_reap(children, sock)
        if sock not in readable:
            continue
        try:
            data, fds, _flags, _addr = socket.recv_fds(sock, 65536, 5 + 8)  # the run fds and cgroup.procs fds
        except (BlockingIOError, InterruptedError):
            continue
        except OSError:
            _exit(0)
        if not data:
            _exit(0)  # the host is gone
        if _serve_one(data, fds, children, libc, zygote, sock, cpu_limit, own_pid_ns):
            return  # in the forked child
        for fd in fds:
            os.close(fd)


def _serve_one(data, fds, children, libc, zygote, sock, cpu_limit, own_pid_ns):
    """Acts on one message of the host; True only in a child forked for it."""
    try:
        message = parse_fork_server_message(data)
    except ProtocolError as e:
        sock.send(fork_failed_message(str(e)))  # the host waits for an answer to a fork
        return False
    if message[0] == "kill":
        if message[1] in children:
            try:
                os.killpg(message[1], signal.SIGKILL)
            except OSError:
                pass
        return False
    _, token, uid, workdir_bytes, workdir, tmp_bytes, cgroup_fds = message
    if len(fds) != 5 + cgroup_fds:
        sock.send(fork_failed_message("a fork message needs the child's %d fds, got %d"
                                      % (5 + cgroup_fds, len(fds))))
        return False
    if (own_pid_ns >= 0) != (tmp_bytes > 0) or (own_pid_ns >= 0 and uid <= 0):
        sock.send(fork_failed_message("a fork message for another kind of zygote"))
        return False
    try:
        if own_pid_ns >= 0:
            _enter_new_pid_namespace(libc, own_pid_ns)
        pid = os.fork()
    except OSError as e:
        sock.send(fork_failed_message(str(e)[:200]))
        return False
    if pid == 0:
        if own_pid_ns >= 0:
            _become_namespaced_child(fds, token, uid, workdir_bytes, tmp_bytes, cpu_limit, sock)
        else:
            _become_run_child(fds, token, uid, workdir_bytes, workdir, libc, zygote, sock,
                              cpu_limit)
        return True
    children.add(pid)
    try:
        os.setpgid(pid, pid)  # also here, so the group exists once the host knows the pid
    except OSError:
        pass
    sock.send(forked_message(pid))
    return False


def _zygote_reap(children, sock):
    while True:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        except InterruptedError:
            continue
        if pid == 0:
            return
        children.discard(pid)
        cpu_us = int((usage.ru_utime + usage.ru_stime) * 1e6)
        sock.send(exited_message(pid, status, cpu_us))


def _become_run_child(fds, token, uid, workdir_bytes, workdir, libc, zygote, sock, cpu_limit):
    """In a freshly forked child: the per-run setup a cold start gets from the host's launcher.
    Any failure ends the child before it says ready (the host then starts one itself)."""
    import signal
    try:
        # The runs' CPU limit (the zygote runs under a larger one); the count starts at the fork.
        _leave_zygote(token, cpu_limit, cpu_limit + 1)
        if uid >= 0:
            _become_uid(libc, uid, workdir_bytes, workdir)
        # Dumpable again, as a cold child is after exec: its /proc files are its own uid's (the
        # zygote's stay root's).
        if libc.prctl(4, 1, 0, 0, 0) != 0:  # PR_SET_DUMPABLE
            _exit(125)
        if libc.prctl(1, signal.SIGKILL, 0, 0, 0) != 0:  # PR_SET_PDEATHSIG, after the uid change
            _exit(125)
        if os.getppid() != zygote:  # the zygote died before prctl: the signal would never come
            _exit(125)
        os.chdir(workdir)
        _take_run_fds(sock, fds)
        _await_request()
    except BaseException:
        _exit(125)


def _enter_new_pid_namespace(libc, own_pid_ns):
    if libc.setns(own_pid_ns, _CLONE_NEWPID) != 0:
        raise OSError(_ctypes_errno(), "setns(own pid namespace)")
    if libc.unshare(_CLONE_NEWPID) != 0:
        raise OSError(_ctypes_errno(), "unshare(CLONE_NEWPID)")


def _become_namespaced_child(fds, token, uid, work_bytes, tmp_bytes, cpu_limit, sock):
    """A namespaces zygote's child (pid 1 of its own pid namespace): its fds, then
    contain_zygote_child (src/sandbox/zygote_child.hpp), which ends the process with a
    setup_error frame on the bridge if a step fails."""
    try:
        # pid 1 ignores SIGXCPU (no handler): the limit is the hard one, SIGKILL, at the limit.
        _leave_zygote(token, cpu_limit, cpu_limit)
        _take_run_fds(sock, fds[:5])
        _state.guard.contain_zygote_child(uid, tmp_bytes, work_bytes, fds[5:])
        _await_request()
    except BaseException:
        _exit(125)


def _leave_zygote(token, cpu_soft, cpu_hard):
    """A forked child's first steps: the runs' CPU limit, default signal handling, a process
    group of its own, and its run token (while it may still write its own memory through
    /proc)."""
    import resource
    import signal
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_soft, cpu_hard))
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.setpgid(0, 0)
    _set_run_token(token)


def _take_run_fds(sock, run_fds):
    sock.detach()  # fd 3 is about to become the bridge
    for target, fd in enumerate(run_fds):
        os.dup2(fd, target, inheritable=target < 3)


def _await_request():
    """Every fd but the run's closed, then the hot path walked once (_warm_up)."""
    os.closerange(5, max(5, os.sysconf("SC_OPEN_MAX")))
    os.set_blocking(_state.wfd, False)  # see _wait_to_write
    _warm_up()


def _become_uid(libc, uid, workdir_bytes, workdir):
    """A root zygote's child gives up root for its run's own uid, as launch.cpp does for a cold
    child: first a private mount namespace with the working directory a sized tmpfs of its own."""
    if workdir_bytes > 0:
        if libc.unshare(0x00020000) != 0:  # CLONE_NEWNS
            raise OSError(_ctypes_errno(), "unshare(CLONE_NEWNS)")
        if libc.mount(None, b"/", None, 0x4000 | 0x40000, None) != 0:  # MS_REC | MS_PRIVATE
            raise OSError(_ctypes_errno(), "mount(/, MS_PRIVATE)")
        options = b"size=%d,mode=0700,uid=%d,gid=%d" % (workdir_bytes, uid, uid)
        if libc.mount(b"tmpfs", workdir, b"tmpfs", 2 | 4, options) != 0:  # MS_NOSUID | MS_NODEV
            raise OSError(_ctypes_errno(), "mount the working directory's tmpfs")
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def _ctypes_errno():
    import ctypes
    return ctypes.get_errno()


def _warm_up():
    """Walks the hot path once before saying ready: the pages a run writes to (reference counts
    of the objects it uses) are copied from the zygote now, while the child waits in the pool,
    rather than one page fault at a time during the run."""
    code_obj, _ = _compile_user_code("x = [1, 2.5, 'a']\nstr(x)\n{'k': x}\n")
    g = {"__builtins__": builtins}
    eval(code_obj, g)
    encode(g.get(_HIDDEN_OUTPUT))
    decode('{"type":"request","code":"print(1)","tools":[],"max_output_bytes":1,"guard":{'
            '"exec":["/usr","/opt/codeact"],"write":["/work","/tmp","/dev/null"],'
            '"bridge_fds":[3,4],"imports":["json","math"]}}')


def _set_run_token(token):
    """Writes the run's token over the zygote's in this process's environment block, which is
    what /proc/<pid>/environ shows (and what children forked from here inherit), and into
    os.environ for programs the code may exec."""
    key = b"CODEACT_RUN_TOKEN="
    with open("/proc/self/stat", "rb") as f:
        stat = f.read()
    fields = stat[stat.rindex(b")") + 2:].split()
    start, end = int(fields[47]), int(fields[48])  # env_start, env_end (fields 50 and 51)
    fd = os.open("/proc/self/mem", os.O_RDWR | os.O_CLOEXEC)
    try:
        block = os.pread(fd, end - start, start)
        at = 0 if block.startswith(key) else block.find(b"\0" + key) + 1
        if at == 0 and not block.startswith(key):
            raise RuntimeError("no run token in the environment")
        at += len(key)
        if block[at + len(token):at + len(token) + 1] != b"\0":
            raise RuntimeError("the run token has another length")
        os.pwrite(fd, token, start + at)
    finally:
        os.close(fd)
    os.environ["CODEACT_RUN_TOKEN"] = token.decode("ascii")


# ---------------------------------------------------------------------------------------------
# The cold part: compiled by _load_cold() on first need, with the line numbers of this file.

