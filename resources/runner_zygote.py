"""The zygote's side of the fork server (src/process/fork_server.hpp for the guarantees): runner.py
with CODEACT_ZYGOTE=1 (or =namespaces: a root host's zygote inside the sandbox) loads everything,
then calls serve(), which returns only in a forked child, set up for its run, which goes on as any
pooled child.

The loop itself is the guard module's serve_forks (src/guard/zygote_loop.hpp), loaded from
CODEACT_ZYGOTE_MODULE whether or not the children arm the guard (CODEACT_GUARD): it forks with
fork(2) and sets each child up in C++, because every object Python code touches after a fork is
a page copied, in the child and in the zygote. So this side does only what a child needs of the
interpreter: its token in os.environ and random reseeded (os.fork's at-fork handler would have);
warm_up() walks the hot path once while the child is idle.
"""

import builtins
import gc
import posix
import sys

from codeact_protocol import decode, encode
from runner_state import HIDDEN_OUTPUT, compile_user_code, environ_pop, load_guard, state


def serve(namespaces=False):
    # The host names the module whether or not the children arm the guard; RuntimeError: the
    # zygote ends before it says ready.
    guard = load_guard(environ_pop("CODEACT_ZYGOTE_MODULE"))
    cpu_limit = int(environ_pop("CODEACT_CPU_LIMIT_S"))
    # Everything loaded so far is the children's shared, copy-on-write memory: keep the cyclic
    # collector from walking it in every child (each object it visits is a page copied).
    gc.collect()
    gc.freeze()
    state.heap_frozen = True
    token = guard.serve_forks(state.rfd, cpu_limit, namespaces)
    posix.environ[b"CODEACT_RUN_TOKEN"] = token
    random = sys.modules.get("random")
    if random is not None:
        random._inst.seed()


def warm_up():
    """Walks the hot path once, while the child waits in the pool with no request yet: the pages
    a run writes to (reference counts of the objects it uses) are copied from the zygote then,
    rather than one page fault at a time during the run. Under load the request comes first, and
    the run copies only what it uses itself."""
    code_obj, _ = compile_user_code("x = [1, 2.5, 'a']\nstr(x)\n{'k': x}\n")
    g = {"__builtins__": builtins}
    eval(code_obj, g)
    encode(g.get(HIDDEN_OUTPUT))
    decode('{"type":"request","code":"print(1)","tools":["t"],"max_output_bytes":1,'
           '"guard":"armed","await_verdict":true}')
