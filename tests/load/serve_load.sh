#!/bin/sh
# Starts `codeact serve` on an ephemeral port with a throwaway token and runs serve_load.mjs
# against it; prints its JSON line. Extra arguments go to `codeact serve` (after --) or to the
# load client (before --), e.g.
#
#   tests/load/serve_load.sh build/codeact --clients 8 --requests 400 -- --max-concurrent 4 --pool 4
set -eu
codeact=$1
shift
client_args=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do client_args="$client_args $1"; shift; done
[ $# -gt 0 ] && shift
dir=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
token=load-test-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
echo "$token" > "$dir/tokens"
"$codeact" serve --listen 127.0.0.1:0 --token-file "$dir/tokens" --quiet "$@" >"$dir/out" 2>"$dir/err" &
pid=$!
i=0
until grep -q 'listening on' "$dir/out" 2>/dev/null; do
  i=$((i + 1))
  if [ $i -gt 600 ] || ! kill -0 "$pid" 2>/dev/null; then cat "$dir/err"; exit 1; fi
  sleep 0.1
done
url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$dir/out")
# shellcheck disable=SC2086
node "$(dirname "$0")/serve_load.mjs" --url "$url" --token "$token" $client_args
kill -TERM "$pid"
wait "$pid"
