"""tools/call of print(1) through `codeact mcp` over real stdio pipes, as an MCP client sees it.

  /usr/bin/python3.11 tests/bench/mcp_stdio_latency.py ./build/codeact [RUNS] [-- extra mcp flags]

The server warms its pool at start-up; calls are spaced (GAP_S, default 0.2 s) as an agent's turns
are, so every call finds a ready child. Prints p50/p95/p99 in microseconds.
"""
import json
import os
import subprocess
import sys
import time


def main():
    binary = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2] != "--" else 100
    extra = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    gap = float(os.environ.get("GAP_S", "0.2"))
    server = subprocess.Popen([binary, "mcp", "--quiet"] + extra, stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def call(message):
        server.stdin.write((json.dumps(message) + "\n").encode())
        server.stdin.flush()
        return json.loads(server.stdout.readline())

    call({"jsonrpc": "2.0", "id": 0, "method": "initialize",
          "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                     "clientInfo": {"name": "bench", "version": "1"}}})
    server.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    server.stdin.flush()
    time.sleep(1.0)
    latencies = []
    for i in range(runs):
        start = time.perf_counter()
        reply = call({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                      "params": {"name": "execute_code", "arguments": {"code": "print(1)"}}})
        latencies.append((time.perf_counter() - start) * 1e6)
        if reply.get("result", {}).get("isError") is not False:
            sys.exit("the call failed: %r" % reply)
        time.sleep(gap)
    server.stdin.close()
    server.wait()
    latencies.sort()

    def pct(p):
        rank = max(1, min(len(latencies), -(-p * len(latencies) // 100)))
        return latencies[rank - 1]

    print("MCP tools/call print(1) over stdio: p50 %.0f us  p95 %.0f us  p99 %.0f us  (%d calls)"
          % (pct(50), pct(95), pct(99), len(latencies)))


if __name__ == "__main__":
    main()
