# The warm floor of `codeact bench`: a warm call 0.3 s apart at best on this machine. The child
# interpreter, loaded as a fork server loads it (the runner and everything it preloads, then
# frozen), forks each call's child ahead of it; the child walks the hot path once while it waits,
# as a pooled child does (runner_zygote.warm_up). 0.3 s later the parent writes it a request
# line; the child decodes it, compiles and runs its code (print(n), its output on a pipe), writes
# its terminal line and exits. No server, sandbox, guard, validation or cgroup: the round trip of
# the request to the output and the terminal line, read by the parent. argv: the runner's
# directory, calls. Prints each call's round trip in microseconds, one a line.
import gc
import posix
import sys
import time

sys.path.append(sys.argv[1])
import runner  # noqa: E402 (after the path is set)
import runner_zygote  # noqa: E402
from codeact_protocol import complete_frame, decode, encode  # noqa: E402
from runner_state import compile_user_code  # noqa: E402

for name in runner._PRELOAD:
    runner._preload(name)
gc.collect()
gc.freeze()


def read_line(fd):
    data = b""
    while not data.endswith(b"\n"):
        chunk = posix.read(fd, 1 << 16)
        if not chunk:
            raise SystemExit("warm floor: a pipe ended before its line")
        data += chunk
    return data


def serve(request_fd, frame_fd, out_fd):
    runner_zygote.warm_up()
    line = read_line(request_fd)
    code_obj, _ = compile_user_code(decode(line.decode())["code"])
    posix.dup2(out_fd, 1)
    exec(code_obj, {"__builtins__": __builtins__})
    sys.stdout.flush()
    posix.write(frame_fd, (complete_frame(encode(None)) + "\n").encode())
    posix._exit(0)


for n in range(int(sys.argv[2])):
    request, frames, out = posix.pipe(), posix.pipe(), posix.pipe()
    pid = posix.fork()
    if pid == 0:
        for fd in (request[1], frames[0], out[0]):  # so that the parent's end is the only one
            posix.close(fd)
        serve(request[0], frames[1], out[1])
    for fd in (request[0], frames[1], out[1]):
        posix.close(fd)
    time.sleep(0.3)
    start = time.perf_counter()
    posix.write(request[1], (encode({"type": "request", "code": "print(%d)" % n}) + "\n").encode())
    read_line(frames[0])
    if read_line(out[0]) != b"%d\n" % n:
        raise SystemExit("warm floor: the child's output is not print's")
    print(round((time.perf_counter() - start) * 1e6), flush=True)
    for fd in (request[1], frames[0], out[0]):
        posix.close(fd)
    if posix.waitpid(pid, 0)[1] != 0:
        raise SystemExit("warm floor: a child failed")
