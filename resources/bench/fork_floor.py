# The fork floor of `codeact bench`: the child interpreter, loaded as a fork server loads it (the
# runner and everything it preloads, then frozen), forking children that each run print(1) and
# exit. No sandbox, guard, bridge, validation or host: what one run per fork costs on this
# machine, at best. argv: the runner's directory, forkers, forks per forker, and optionally
# "namespaces": each child is then forked into the namespaces a run at the namespaces level gets
# (the isolation floor), as a fork server in a user namespace of its own forks them: a pid
# namespace of its own, then mount, network, IPC and cgroup namespaces and two tmpfs mounts (its
# /tmp and working directory). Prints forks per second, then the CPU per fork in microseconds (the
# forkers' and all their children's, without this program's own start).
import ctypes
import gc
import os
import posix
import sys
import tempfile
import time

sys.path.append(sys.argv[1])
import runner

for name in runner._PRELOAD:
    runner._preload(name)
gc.collect()
gc.freeze()
forkers, per_forker = int(sys.argv[2]), int(sys.argv[3])
namespaces = sys.argv[4:] == ["namespaces"]
code = compile("print(1)", "<code>", "exec")
null = posix.open("/dev/null", posix.O_WRONLY)

# <sched.h> and <sys/mount.h>; CPython 3.11 has no os.unshare or os.setns.
CLONE_NEWNS, CLONE_NEWCGROUP = 0x00020000, 0x02000000
CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x08000000, 0x10000000, 0x20000000, 0x40000000
MS_REC, MS_PRIVATE = 0x4000, 0x40000
libc = ctypes.CDLL(None, use_errno=True)


def check(result, what):
    if result != 0:
        sys.stderr.write("fork floor: %s: errno %d\n" % (what, ctypes.get_errno()))
        posix._exit(3)


def write(path, text):
    fd = posix.open(path, posix.O_WRONLY)
    posix.write(fd, text.encode())
    posix.close(fd)


def run_child(mounts):
    if namespaces:
        check(libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC), "unshare")
        check(libc.unshare(CLONE_NEWCGROUP), "unshare(CLONE_NEWCGROUP)")
        check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
        for target in mounts:
            check(libc.mount(b"tmpfs", target.encode(), b"tmpfs", 0, b"size=1m"), "mount tmpfs")
    posix.dup2(null, 1)
    exec(code, {"__builtins__": __builtins__})
    sys.stdout.flush()
    posix._exit(0)


def fork_children(mounts):
    own_pid_ns = posix.open("/proc/self/ns/pid", posix.O_RDONLY) if namespaces else -1
    for _ in range(per_forker):
        if namespaces:  # each child pid 1 of a pid namespace of its own
            check(libc.setns(own_pid_ns, CLONE_NEWPID), "setns(CLONE_NEWPID)")
            check(libc.unshare(CLONE_NEWPID), "unshare(CLONE_NEWPID)")
        child = posix.fork()
        if child == 0:
            run_child(mounts)
        if posix.waitpid(child, 0)[1] != 0:
            posix._exit(1)
    posix._exit(0)


if namespaces:
    uid, gid = posix.getuid(), posix.getgid()
    check(libc.unshare(CLONE_NEWUSER), "unshare(CLONE_NEWUSER)")
    write("/proc/self/setgroups", "deny")
    write("/proc/self/uid_map", "0 %d 1" % uid)
    write("/proc/self/gid_map", "0 %d 1" % gid)
scratch = tempfile.mkdtemp()
mounts = [scratch + "/tmp", scratch + "/work"]
for target in mounts:
    posix.mkdir(target)
start = time.perf_counter()
cpu = os.times()
pids = []
for _ in range(forkers):
    pid = posix.fork()
    if pid == 0:
        if namespaces:  # the forker is pid 1 of a pid namespace of the user namespace
            check(libc.unshare(CLONE_NEWPID), "unshare(CLONE_NEWPID)")
            forker = posix.fork()
            if forker == 0:
                fork_children(mounts)
            posix._exit(0 if posix.waitpid(forker, 0)[1] == 0 else 1)
        fork_children(mounts)
    pids.append(pid)
failed = sum(posix.waitpid(pid, 0)[1] != 0 for pid in pids)
elapsed = time.perf_counter() - start
after = os.times()
children_cpu = after.children_user + after.children_system - cpu.children_user - cpu.children_system
for target in mounts:
    posix.rmdir(target)
posix.rmdir(scratch)
if failed:
    sys.exit("fork floor: %d of %d forkers failed (the reason above)" % (failed, forkers))
print(forkers * per_forker / elapsed, children_cpu * 1e6 / (forkers * per_forker))
