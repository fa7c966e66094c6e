# The fork floor of `codeact bench`: the child interpreter, loaded as a fork server loads it (the
# runner and everything it preloads, then frozen), forking children that each run print(1) and
# exit. No sandbox, guard, bridge, validation or host: what one run per fork costs on this
# machine, at best. argv: the runner's directory, forkers, forks per forker, and optionally what
# each child is forked into as a run is, by the kernel and nothing of codeact's own (the isolation
# floors): LEVEL UID WORK_BYTES SCRATCH_BASE MAX_PROCESSES MEMORY_BYTES CGROUP_DIR..., where LEVEL is
#   namespaces: as a fork server in a user namespace of its own forks them (any uid): a pid
#     namespace of its own, then mount, network, IPC and cgroup namespaces and two tmpfs mounts
#     (its /tmp and working directory); UID and SCRATCH_BASE are "-" and WORK_BYTES 0;
#   process: as at the process level: a scratch directory of its own with work/ and tmp/ in
#     SCRATCH_BASE; with a UID other than "-", its own uid from UID on (one per child, the scratch
#     handed to it); with WORK_BYTES > 0, a mount namespace of its own with a tmpfs of that size
#     as its working directory;
# and at both a group of its own in each per-user cgroup subtree CGROUP_DIR (made and limited as a
# run's before the fork, joined by the child, removed after its exit).
# Prints forks per second, then the CPU per fork in microseconds (the forkers' and all their
# children's, without this program's own start). The first child of each forker checks that it got
# what it was forked into, else exits with an error.
import ctypes
import errno
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
level = sys.argv[4] if len(sys.argv) > 4 else None
namespaces, process = level == "namespaces", level == "process"
if level is not None:
    first_uid = None if sys.argv[5] == "-" else int(sys.argv[5])
    work_bytes = int(sys.argv[6])
    scratch_base = sys.argv[7]
    max_processes, memory_bytes = (int(a) for a in sys.argv[8:10])
    cgroup_dirs = sys.argv[10:]
code = compile("print(1)", "<code>", "exec")
null = posix.open("/dev/null", posix.O_WRONLY)

# <sched.h> and <sys/mount.h>; CPython 3.11 has no os.unshare or os.setns.
CLONE_NEWNS, CLONE_NEWCGROUP = 0x00020000, 0x02000000
CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x08000000, 0x10000000, 0x20000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x4000, 0x40000
libc = ctypes.CDLL(None, use_errno=True)


def fail(what):
    sys.stderr.write("fork floor: %s\n" % what)
    posix._exit(3)


def check(result, what):
    if result != 0:
        fail("%s: errno %d" % (what, ctypes.get_errno()))


def write(path, text):
    fd = posix.open(path, posix.O_WRONLY)
    posix.write(fd, text.encode())
    posix.close(fd)


if level is not None:
    # Named as codeact names its run groups (<owner pid>-<owner start time>-<n>): a later codeact
    # start removes those a floor that died left behind.
    with open("/proc/self/stat") as f:
        owner = "%d-%s" % (posix.getpid(), f.read().rsplit(")", 1)[1].split()[19])
    # The limits a run's group gets (RunCgroup::Create), by the files its hierarchy has.
    cgroups = [(parent, frozenset(posix.listdir(parent))) for parent in cgroup_dirs]


def make_run(n):
    """What the host makes for a run before it starts: its groups and, at the process level, its
    scratch directory with work/ and tmp/ (handed to its uid). Returns (uid, scratch, groups)."""
    uid = None if first_uid is None else first_uid + n
    scratch = tempfile.mkdtemp(dir=scratch_base) if process else None
    dirs = (scratch, scratch + "/work", scratch + "/tmp") if process else ()
    for d in dirs[1:]:
        posix.mkdir(d, 0o700)
    for d in dirs if uid is not None else ():
        posix.chown(d, uid, uid)
    groups = []
    for parent, files in cgroups:
        group = "%s/%s-%d" % (parent, owner, n)
        posix.mkdir(group, 0o755)
        groups.append((group, group + ("/tasks" if "tasks" in files else "/cgroup.procs")))
        limits = [("pids.max", max_processes)]
        if "memory.limit_in_bytes" in files:  # v1
            limits.append(("memory.limit_in_bytes", memory_bytes))
            limits.append(("memory.memsw.limit_in_bytes", memory_bytes)
                          if "memory.memsw.limit_in_bytes" in files else ("memory.swappiness", 0))
        else:
            limits += [("memory.max", memory_bytes), ("memory.swap.max", 0), ("memory.oom.group", 1)]
        for name, value in limits:
            if name in files:
                write(group + "/" + name, str(value))
    return uid, scratch, groups


def remove_run(run):
    _, scratch, groups = run
    for group, _ in groups:
        for _ in range(500):  # EBUSY while the exited child is still leaving the group
            try:
                posix.rmdir(group)
                break
            except OSError as e:
                if e.errno != errno.EBUSY:
                    raise
                time.sleep(0.002)
    for d in (scratch + "/tmp", scratch + "/work", scratch) if scratch else ():
        posix.rmdir(d)


def enter_run(run, verify):
    """The child's side of a run: its groups joined; at the process level its working directory (a
    tmpfs of its own with WORK_BYTES) and its uid."""
    uid, scratch, groups = run
    for _, join in groups:
        write(join, "0")
    work = scratch + "/work" if process else None
    if work_bytes > 0:
        check(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
        check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
        options = "size=%d,mode=0700,uid=%d,gid=%d" % (work_bytes, uid, uid)
        check(libc.mount(b"tmpfs", work.encode(), b"tmpfs", MS_NOSUID | MS_NODEV,
                         options.encode()), "mount tmpfs")
    if uid is not None:
        posix.setgroups([])
        posix.setresgid(uid, uid, uid)
        posix.setresuid(uid, uid, uid)
    if work:
        posix.chdir(work)
    if verify:
        if uid is not None and posix.getuid() != uid:
            fail("the child's uid is %d, not %d" % (posix.getuid(), uid))
        with open("/proc/self/cgroup") as f:
            mine = f.read()
        for group, _ in groups:
            if "/" + group.rsplit("/", 1)[1] + "\n" not in mine:
                fail("the child is not in %s: %s" % (group, mine))
        if work_bytes > 0 and posix.stat(".").st_dev == posix.stat(scratch).st_dev:
            fail("the child's working directory is not a mount of its own")


def run_child(mounts, run=None, verify=False):
    if run is not None:
        enter_run(run, verify)
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


def fork_children(mounts, forker):
    own_pid_ns = posix.open("/proc/self/ns/pid", posix.O_RDONLY) if namespaces else -1
    for i in range(per_forker):
        if namespaces:  # each child pid 1 of a pid namespace of its own
            check(libc.setns(own_pid_ns, CLONE_NEWPID), "setns(CLONE_NEWPID)")
            check(libc.unshare(CLONE_NEWPID), "unshare(CLONE_NEWPID)")
        run = make_run(forker * per_forker + i) if level else None
        try:
            child = posix.fork()
            if child == 0:
                try:
                    run_child(mounts, run, verify=i == 0)
                except BaseException as e:  # never back into the forker's loop
                    fail("a child: %r" % e)
            status = posix.waitpid(child, 0)[1]
        finally:
            if run is not None:
                remove_run(run)
        if status != 0:
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
for k in range(forkers):
    pid = posix.fork()
    if pid == 0:
        if namespaces:  # the forker is pid 1 of a pid namespace of the user namespace
            check(libc.unshare(CLONE_NEWPID), "unshare(CLONE_NEWPID)")
            forker = posix.fork()
            if forker == 0:
                fork_children(mounts, k)
            posix._exit(0 if posix.waitpid(forker, 0)[1] == 0 else 1)
        fork_children(mounts, k)
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
