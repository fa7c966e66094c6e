# The selftest's probe: change another process's limits or priority (each set to what it was).
import os, resource
p = os.getppid()
done = []
for name, f in [('prlimit', lambda: resource.prlimit(p, resource.RLIMIT_NOFILE, resource.prlimit(p, resource.RLIMIT_NOFILE))), ('setpriority', lambda: os.setpriority(os.PRIO_PROCESS, p, os.getpriority(os.PRIO_PROCESS, p))), ('sched_setaffinity', lambda: os.sched_setaffinity(p, os.sched_getaffinity(p)))]:
    try:
        f()
        done.append(name)
    except OSError:
        pass
print('changed:', *done)
