"""deploy.nginx_affinity: samples/nginx/codeact.conf in front of two `codeact serve` replicas.

usage: python3 nginx_affinity.py CODEACT SAMPLE_CONF

Starts two replicas on loopback (--listen 127.0.0.1:0, each its port from its "listening" line)
and nginx (from the distribution) with the sample's server block, the addresses replaced, then:
  1. a session created through nginx with an X-Codeact-Session header keeps its variables over
     five calls, and all of them reach the replica that made it (the other's executions counter,
     read from its own /metrics, does not move);
  2. 40 stateless /v1/execute calls through nginx (no header) reach both replicas.
Exits 77 (a skip, with the reason) where nginx is not installed.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

CODEACT, SAMPLE = sys.argv[1], sys.argv[2]
DEADLINE_S = 60


def fail(message):
    print(f"FAIL: {message}", flush=True)
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(port, method, path, body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=DEADLINE_S) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def executions(port):
    """The replica's codeact_executions_total, all outcomes summed (read from it directly)."""
    status, text = request(port, "GET", "/metrics")
    if status != 200:
        fail(f"GET /metrics on {port}: {status}")
    return sum(float(m) for m in re.findall(r"^codeact_executions_total\{[^}]*\} (\S+)$", text,
                                            re.M))


def start_replica():
    p = subprocess.Popen([CODEACT, "serve", "--listen", "127.0.0.1:0", "--isolation", "process",
                          "--quiet", "--log-level", "error"], stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()  # the server prints it once it accepts connections
    m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
    if not m:
        p.kill()
        fail(f"a replica did not start: {line!r}")
    return p, int(m.group(1))


def wait_for_port(port, proc):
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            fail(f"nginx exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)  # polling a connect, bounded by the deadline
    fail(f"nginx did not listen on {port} within {DEADLINE_S} s")


def main():
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx")
                                      else None)
    if nginx is None:
        print("SKIPPED: nginx not found (.ci/setup installs it)")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="codeact-nginx-")
    procs = []
    try:
        replicas = [start_replica() for _ in range(2)]
        procs += [p for p, _ in replicas]
        ports = [port for _, port in replicas]
        front = free_port()
        with open(SAMPLE) as f:
            conf = f.read()
        conf = conf.replace("127.0.0.1:8081", f"127.0.0.1:{ports[0]}")
        conf = conf.replace("127.0.0.1:8082", f"127.0.0.1:{ports[1]}")
        conf = conf.replace("listen 127.0.0.1:8080;", f"listen 127.0.0.1:{front};")
        for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
            os.mkdir(os.path.join(tmp, name))
        with open(os.path.join(tmp, "nginx.conf"), "w") as f:
            f.write(f"""worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
{conf}
}}
""")
        ng = subprocess.Popen([nginx, "-p", tmp, "-c", os.path.join(tmp, "nginx.conf"), "-g",
                               "daemon off;"], stderr=subprocess.PIPE, text=True)
        procs.append(ng)
        wait_for_port(front, ng)
        print(f"== replicas on {ports}, nginx on {front}", flush=True)

        # 1. A session through nginx, with the affinity header on every request.
        key = {"X-Codeact-Session": "conversation-7f3a"}
        status, body = request(front, "POST", "/v1/sessions", {}, key)
        if status != 201:
            fail(f"POST /v1/sessions through nginx: {status} {body}")
        session = json.loads(body)["session"]
        before = [executions(p) for p in ports]
        status, body = request(front, "POST", f"/v1/sessions/{session}/execute",
                               {"code": "x = 41"}, key)
        if status != 200 or json.loads(body)["outcome"] != "ok":
            fail(f"x = 41 in the session: {status} {body}")
        for i in range(5):
            status, body = request(front, "POST", f"/v1/sessions/{session}/execute",
                                   {"code": "x += 1\nprint(x)"}, key)
            result = json.loads(body) if status == 200 else {}
            if result.get("stdout") != f"{42 + i}\n" or result.get("session_state") != "kept":
                fail(f"call {i + 1} in the session lost its variables: {status} {body[:400]}")
        after = [executions(p) for p in ports]
        moved = [a - b for a, b in zip(after, before)]
        print(f"session {session}: 6 calls, executions per replica {moved}", flush=True)
        if sorted(moved) != [0, 6]:
            fail(f"the session's calls did not all reach one replica: {moved}")

        # 2. Stateless calls spread over both replicas.
        before = after
        for i in range(40):
            status, body = request(front, "POST", "/v1/execute", {"code": f"print({i})"})
            if status != 200 or json.loads(body).get("stdout") != f"{i}\n":
                fail(f"stateless call {i}: {status} {body[:400]}")
        after = [executions(p) for p in ports]
        moved = [a - b for a, b in zip(after, before)]
        print(f"40 stateless calls, executions per replica {moved}", flush=True)
        if sum(moved) != 40 or min(moved) == 0:
            fail(f"stateless calls did not reach both replicas: {moved}")
        print("PASS")
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=DEADLINE_S)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
