#!/bin/sh
# ctest entry for nonroot.suites: the key suites again as an unprivileged user, with a private
# TMPDIR and HOME, on a host where root uses codeact too (the rest of the suite runs as root).
#
#   run_suites.sh CODEACT INTEGRATION_TESTS MCP_CLIENT_DIR
#
# The user is $CODEACT_TEST_USER (.ci/run makes one), else nobody. Run as a non-root user
# already, there is nothing to switch to: the whole suite ran as that user (exit 77, a skip).
# Asserts: the CLI, namespaces, identity, probe, guard, pool, MCP (upstream servers included),
# single-file mount (Levels/SingleFileMountTest, SingleFileMountProviderTest) and hyperlight
# (fake SDK) tests
# pass as that user;
# `codeact run` at the default level succeeds; `codeact selftest` exits 0 for the level that
# runs; an explicit `--isolation namespaces` runs or is refused up front (exit 2); the MCP
# TypeScript SDK client test passes; nothing is left in the private TMPDIR.
set -u
codeact=$1 tests=$2 mcp_client=$3

if [ "$(id -u)" != 0 ]; then
  echo "SKIPPED: already unprivileged ($(id -un)): the whole suite ran as this user"
  exit 77
fi
user=${CODEACT_TEST_USER:-nobody}
uid=$(id -u "$user") && gid=$(id -g "$user") || { echo "no user $user"; exit 1; }
if [ "$uid" = 0 ]; then echo "$user is root"; exit 1; fi

home=$(mktemp -d) tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$home" "$tmp"' EXIT
chown "$uid:$gid" "$home" "$tmp" && chmod 700 "$home" "$tmp" || exit 1
as_user() {
  setpriv --reuid="$uid" --regid="$gid" --clear-groups \
    env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$home" TMPDIR="$tmp" LANG=C.UTF-8 "$@"
}

# The checkout must be reachable: a clone under a 0700 home is not, for any other user.
for f in "$codeact" "$tests" "$mcp_client/client_test.mjs"; do
  if ! as_user test -r "$f"; then
    echo "$user cannot reach $f (a parent directory is not searchable for it)"
    # Insisting (CI names its user): a failure. Otherwise a skip that says why.
    [ -n "${CODEACT_TEST_USER:-}" ] && exit 1
    echo "SKIPPED"
    exit 77
  fi
done

failed=0
step() {
  echo "== $*"
}
fail() {
  echo "FAILED: $*"
  failed=1
}

step "integration suites as $user (uid $uid)"
as_user "$tests" --gtest_brief=1 \
  --gtest_filter='CliTest.*:CliInputTest.*:NamespacesTest.*:IdentityTest.*:Probes/*:Levels/*:McpStdioTest.*:McpLifecycleTest.*:LocalExecutorTest.*:WarmPoolTest.*:FileCaptureTest.*:ToolBridgeTest.*:ToolLifecycleTest.*:SessionTest.*:McpSessionTest.*:HyperlightExecutorTest.*:HyperlightContractTest.*:HyperlightCliTest.*:EgressCliTest.*:McpUpstreamTest.*:HyperlightInputsTest.*:MafCliTest.*:ServeHttpTest.*:ServeOwnServerTest.*:ServeStartTest.*:SingleFileMountProviderTest.*:ProcessLevelOnTmpfsTest.*' ||
  fail "integration suites"

step "codeact run at the default level"
out=$(printf 'print(6 * 7)\n' | as_user "$codeact" run -)
echo "$out"
level=$(printf '%s' "$out" | python3 -c 'import json, sys
r = json.load(sys.stdin)
print(r["isolation"] if r["outcome"] == "ok" and r["stdout"] == "42\n" else "")')
[ -n "$level" ] || { fail "codeact run"; level=auto; }

step "codeact selftest for the level that ran ($level)"
as_user "$codeact" selftest --isolation "$level" || fail "selftest --isolation $level"

step "codeact selftest --isolation namespaces: runs, or is refused up front"
as_user "$codeact" selftest --isolation namespaces
rc=$?
[ "$rc" = 0 ] || [ "$rc" = 2 ] || fail "selftest --isolation namespaces exited $rc"

step "the MCP TypeScript SDK client"
as_user sh "$mcp_client/run_client_test.sh" "$codeact"
rc=$?
[ "$rc" = 0 ] || [ "$rc" = 77 ] || fail "MCP client test exited $rc"

step "nothing left in the private TMPDIR"
left=$(ls -A "$tmp")
[ -z "$left" ] || fail "left in TMPDIR: $left"

[ "$failed" = 0 ] && echo "every suite passed as $user"
exit "$failed"
