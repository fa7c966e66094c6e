#!/usr/bin/env python3
"""Soak test: many mixed executions through one `codeact mcp`, then what was left behind.

Drives one server over stdio with CALLERS callers (each keeps one request in flight) for N
executions of a mix of programs: prints, user errors, tool calls, validation failures, output
floods, memory and wall-clock limits, and calls the client cancels. Samples the server's open fds,
threads and RSS as it goes, then closes stdin and reports the figures at the start, the peak and
the end, the outcomes, and the leftovers: scratch entries in its private TMPDIR and processes of
its runs still alive after it exited. Exit status 0 when every outcome was the expected one and
nothing was left behind.

Not part of ctest (it takes long). Example, from the repository root after a build:

    python3 tests/soak/soak.py -n 1000
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# (name, code, expected outcome, weight); None: the client cancels it and expects no reply.
PROGRAMS = [
    ("print", "print(sum(range(100)))", "ok", 40),
    ("tool", "print(await add(a=2, b=3))", "ok", 20),
    ("error", "raise ValueError('soak')", "error", 10),
    ("rejected", "import os\nos.system('id')", "validation_failed", 10),
    ("flood", "print('x' * 2_000_000)", "ok", 5),
    ("memory", "x = bytearray(3 << 30)", "memory_limit", 3),
    ("gather", "import asyncio\nr = await asyncio.gather(*(add(a=i, b=1) for i in range(5)))\nprint(r)", "ok", 5),
    ("timeout", "import time\ntime.sleep(30)", "timeout", 1),
    ("cancelled", "import time\ntime.sleep(30)", None, 1),
]


def schedule(n):
    """The program of each execution, in a fixed interleaved order."""
    slots = []
    for name, code, expected, weight in PROGRAMS:
        slots += [(name, code, expected)] * weight
    step = 37  # coprime with the 95 slots: neighbours differ
    return [slots[(i * step) % len(slots)] for i in range(n)]


def proc_figures(pid):
    try:
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        threads = rss_kib = 0
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Threads:"):
                    threads = int(line.split()[1])
                elif line.startswith("VmRSS:"):
                    rss_kib = int(line.split()[1])
        return {"fds": fds, "threads": threads, "rss_kib": rss_kib}
    except OSError:
        return None


def processes_mentioning(text):
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    found.append(int(entry))
        except OSError:
            pass
    return found


class Server:
    def __init__(self, argv, env):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.lock = threading.Lock()
        self.waiting = {}  # id -> [event, reply]
        self.unmatched = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            reply = json.loads(line)
            with self.lock:
                slot = self.waiting.pop(reply.get("id"), None)
            if slot is None:
                self.unmatched.append(reply)
            else:
                slot[1] = reply
                slot[0].set()

    def send(self, message):
        data = (json.dumps(message) + "\n").encode()
        with self.lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def request(self, request_id, method, params, timeout=120):
        slot = [threading.Event(), None]
        with self.lock:
            self.waiting[request_id] = slot
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        if not slot[0].wait(timeout):
            raise TimeoutError(f"no reply to request {request_id} within {timeout} s")
        return slot[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10_000, help="executions (default 10000)")
    parser.add_argument("--callers", type=int, default=2, help="concurrent callers (default 2)")
    parser.add_argument("--codeact", default=os.path.join(ROOT, "build", "codeact"))
    parser.add_argument("--timeout", default="10", help="the server's --timeout in seconds (default 10)")
    parser.add_argument("--json", help="also write the report here")
    parser.add_argument("server_args", nargs="*", help="more `codeact mcp` flags (after --)")
    args = parser.parse_args()

    tmpdir = tempfile.mkdtemp(prefix="soak-tmp-")
    env = dict(os.environ, TMPDIR=tmpdir)
    argv = [args.codeact, "mcp", "--quiet", "--timeout", args.timeout, "--memory-mb", "256",
            "--tools", os.path.join(ROOT, "samples", "tools", "tools.json")] + args.server_args
    server = Server(argv, env)
    init = server.request(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                            "clientInfo": {"name": "soak", "version": "1"}})
    assert "result" in init, init
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    plan = schedule(args.n)
    outcomes = collections.Counter()
    unexpected = []
    samples = []
    next_index = [0]
    index_lock = threading.Lock()
    start = time.monotonic()

    def caller():
        while True:
            with index_lock:
                i = next_index[0]
                next_index[0] += 1
            if i >= len(plan):
                return
            name, code, expected = plan[i]
            request_id = i + 1
            params = {"name": "execute_code", "arguments": {"code": code}}
            if expected is None:  # the client withdraws it: no reply is due
                server.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
                server.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                             "params": {"requestId": request_id, "reason": "soak"}})
                with index_lock:
                    outcomes[name + ": cancelled by the client"] += 1
                continue
            reply = server.request(request_id, "tools/call", params)
            outcome = reply.get("result", {}).get("structuredContent", {}).get("outcome", "protocol error")
            with index_lock:
                outcomes[f"{name}: {outcome}"] += 1
                if outcome != expected:
                    unexpected.append({"index": i, "program": name, "expected": expected, "reply": reply})
            if i % 100 == 0:
                figures = proc_figures(server.proc.pid)
                if figures:
                    figures["done"] = i
                    samples.append(figures)

    threads = [threading.Thread(target=caller) for _ in range(args.callers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    # The cancelled calls end by themselves; a ping after them shows the server still serves.
    assert "result" in server.request("last", "ping", {}), "the server stopped answering"
    end_figures = proc_figures(server.proc.pid)
    server.proc.stdin.close()
    exit_code = server.proc.wait(timeout=120)

    leftovers = sorted(os.listdir(tmpdir))
    alive = processes_mentioning(tmpdir)
    shutil.rmtree(tmpdir, ignore_errors=True)

    first = samples[0] if samples else {}
    peak = {k: max(s[k] for s in samples) for k in ("fds", "threads", "rss_kib")} if samples else {}
    report = {
        "executions": args.n, "callers": args.callers, "seconds": round(elapsed, 1),
        "per_second": round(args.n / elapsed, 1), "outcomes": dict(sorted(outcomes.items())),
        "unexpected": len(unexpected), "unmatched_replies": len(server.unmatched),
        "first_sample": first, "peak": peak, "end": end_figures, "exit_code": exit_code,
        "leftover_entries": leftovers, "leftover_processes": alive,
    }
    print(f"{args.n} executions by {args.callers} callers in {elapsed:.1f} s ({report['per_second']}/s)")
    for k, v in report["outcomes"].items():
        print(f"  {k:40} {v}")
    print(f"server          fds  threads  RSS (MiB)")
    for label, f in (("first sample", first), ("peak", peak), ("end", end_figures or {})):
        if f:
            print(f"  {label:12} {f['fds']:5} {f['threads']:8} {f['rss_kib'] / 1024:10.1f}")
    print(f"exit code {exit_code}; unexpected outcomes {len(unexpected)}; unmatched replies "
          f"{len(server.unmatched)}; leftover entries in TMPDIR {len(leftovers)}; leftover processes {len(alive)}")
    for u in unexpected[:5]:
        print("  unexpected:", json.dumps(u)[:400])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    ok = exit_code == 0 and not unexpected and not server.unmatched and not leftovers and not alive
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
