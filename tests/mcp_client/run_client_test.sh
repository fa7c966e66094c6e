#!/bin/sh
# ctest entry for mcp.typescript_sdk: runs client_test.mjs with node, or reports a skip
# (exit 77, the test's SKIP_RETURN_CODE) when node is not installed.
if ! command -v node >/dev/null 2>&1; then
  echo "SKIPPED: node not found"
  exit 77
fi
exec node "$(dirname "$0")/client_test.mjs" "$@"
