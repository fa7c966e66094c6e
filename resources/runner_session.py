"""A session's runner loop (CODEACT_SESSION=1; the host's side: src/backends/local/session_child.hpp).

The child of a session serves run after run on one bridge: it arms the runtime guard with the
host's guard frame (as a pooled child does), says ready with "session": true, then reads a
request, runs it exactly as runner.py runs a one-shot request (same frames, same checks, same
limits), sends the one terminal frame and reads the next request. What the code leaves behind
stays for the next run: its globals (one __main__ module for the whole session), its imports, the
files in its working directory and /tmp, and any thread or process it started. Per run: the tool
budget starts again at zero, the limits of the request apply, the asyncio loop a run made is
closed at its end.

The interpreter ends (and the host starts a new one for the next run) when the host closes the
bridge (exit 0), when the host breaks the protocol (a BridgeError frame, then exit 1), when the
code ends the process itself, or when the host kills it for a limit.
"""

import posix
import sys

import runner_state
from codeact_protocol import session_ready_frame


def close_loop(loop):
    """Closes the asyncio loop a run made, and the runner's reader on it."""
    st = runner_state.state
    try:
        if st.loop is loop:
            if not st.eof:
                loop.remove_reader(st.rfd)
            st.loop = None
        loop.close()
    except BaseException:
        pass


def serve(run, read_request, arm_ahead):
    """Serves run after run; never returns. `run`, `read_request` and `arm_ahead` are runner.py's
    own steps, as it takes them for a one-shot request."""
    st = runner_state.state
    st.session = True
    if st.guard_path:
        arm_ahead()  # the guard frame, before the ready frame
    runner_state.send_text(session_ready_frame(sys.version_info, posix.getpid()))
    while True:
        req = read_request([])  # the host closed the bridge: exit 0
        st.calls = 0
        st.pending.clear()
        st.unawaited.clear()
        if not runner_state.reserve:  # spent on a MemoryError report
            try:
                runner_state.reserve.append(bytes(4 << 20))
            except MemoryError:
                pass
        try:
            run(req)
        except runner_state.RunEnded:
            continue
        except BaseException as e:  # a failure of the runner itself ends the interpreter
            st.session = False
            try:
                cold = runner_state.load_cold()
                frame = cold.error_frame_text("RunnerError", "runner failure: %s: %s" % (
                    type(e).__name__, cold.safe_str(e)), cold.format_runner_traceback(e),
                    st.max_frame)
            except BaseException:
                runner_state.finish_oom()
            runner_state.finish(frame, 1)
