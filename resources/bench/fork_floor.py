# The fork floor of `codeact bench`: the child interpreter, loaded as a fork server loads it (the
# runner and everything it preloads, then frozen), forking children that each run print(1) and
# exit. No sandbox, guard, bridge, validation or host: what one run per fork costs on this
# machine, at best. argv: the runner's directory, forkers, forks per forker. Prints forks per
# second.
import gc
import posix
import sys
import time

sys.path.append(sys.argv[1])
import runner

for name in runner._PRELOAD:
    runner._preload(name)
gc.collect()
gc.freeze()
forkers, per_forker = int(sys.argv[2]), int(sys.argv[3])
code = compile("print(1)", "<code>", "exec")
null = posix.open("/dev/null", posix.O_WRONLY)
start = time.perf_counter()
pids = []
for _ in range(forkers):
    pid = posix.fork()
    if pid == 0:
        for _ in range(per_forker):
            child = posix.fork()
            if child == 0:
                posix.dup2(null, 1)
                exec(code, {"__builtins__": __builtins__})
                sys.stdout.flush()
                posix._exit(0)
            if posix.waitpid(child, 0)[1] != 0:
                posix._exit(1)
        posix._exit(0)
    pids.append(pid)
failed = sum(posix.waitpid(pid, 0)[1] != 0 for pid in pids)
print(forkers * per_forker / (time.perf_counter() - start) if not failed else 0)
