#!/bin/sh
# ctest entry for mcp.typescript_sdk_http: runs http_client_test.mjs (the SDK's
# StreamableHTTPClientTransport against `codeact serve`'s /mcp) with node, or reports a skip
# (exit 77) when node is not installed.
if ! command -v node >/dev/null 2>&1; then
  echo "SKIPPED: node not found"
  exit 77
fi
exec node "$(dirname "$0")/http_client_test.mjs" "$@"
