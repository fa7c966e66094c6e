#!/bin/sh
# ctest entry for container.namespaces_fallbacks: the two container steps of the namespaces level
# (docs/containers.md), reproduced on this host without a container runtime.
#   1. a masked /proc: in a private mount namespace /proc/keys is covered by /dev/null, as a
#      container runtime covers it, so the kernel refuses the sandbox a new proc (EPERM); the run
#      must still end ok at namespaces, with an empty /proc, and see no process through /proc/N;
#   2. a root without CAP_SYS_ADMIN (dropped from the bounding set, as in a container's default
#      capabilities): open_tree is refused; the run must end ok at namespaces through the
#      unprivileged path, with a read-only mount read, a read-write mount written, and a 0600 file
#      outside every mount left 0600 by a chmod.
# Needs root (a mount namespace, the capability drop): elsewhere a skip, exit 77.
#
# usage: run_fallbacks_test.sh CODEACT SOURCE_DIR
set -eu

codeact=$1 fixtures=$2/tests/container/fixtures
fail() {
  echo "FAIL: $*"
  exit 1
}
[ "$(id -u)" = 0 ] || { echo "SKIPPED: the mount namespace and the capability drop need root"; exit 77; }
command -v unshare >/dev/null 2>&1 || { echo "SKIPPED: unshare not found"; exit 77; }
command -v setpriv >/dev/null 2>&1 || { echo "SKIPPED: setpriv not found"; exit 77; }
[ -e /proc/keys ] || { echo "SKIPPED: this kernel has no /proc/keys to mask"; exit 77; }

tmp=$(mktemp -d /tmp/codeact-fallbacks.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
chmod 755 "$tmp"
export HOME="$tmp"  # the per-user cache (a passed probe) stays the test's own

field() {
  python3 -c '
import json, sys
try:
    print(json.load(open(sys.argv[1]))[sys.argv[2]])
except ValueError:
    print("<no result JSON>")' "$1" "$2"
}
expect() {  # FILE FIELD VALUE (compared without trailing newlines)
  got=$(field "$1" "$2")
  [ "$got" = "$3" ] || { cat "$1"; echo; fail "$2 is '$got', not '$3'"; }
}

echo "== 1. a masked /proc"
unshare -m sh -c 'mount --make-rprivate / && mount --bind /dev/null /proc/keys && exec "$@"' sh \
  "$codeact" run --isolation namespaces --no-validate "$fixtures/proc_state.py" >"$tmp/proc.json" || true
expect "$tmp/proc.json" outcome ok
expect "$tmp/proc.json" isolation namespaces
expect "$tmp/proc.json" stdout "proc dir True self False"
unshare -m sh -c 'mount --make-rprivate / && mount --bind /dev/null /proc/keys && exec "$@"' sh \
  "$codeact" run --isolation namespaces --no-validate "$fixtures/see_processes.py" >"$tmp/seen.json" || true
expect "$tmp/seen.json" outcome ok
expect "$tmp/seen.json" stdout "seen []"

echo "== 2. root without CAP_SYS_ADMIN"
mkdir "$tmp/in" "$tmp/out"
echo "from the host" >"$tmp/in/in.txt"
chmod 644 "$tmp/in/in.txt"
chmod 1777 "$tmp/out"  # a plain bind: the run's uid writes by the directory's permissions
echo "private key" >"$tmp/secret"
chmod 600 "$tmp/secret"
drop="setpriv --bounding-set -sys_admin --inh-caps -sys_admin"
$drop "$codeact" run --isolation namespaces --no-validate --mount "$tmp/in:/in:ro" \
  --mount "$tmp/out:/out:rw" --env IN=/in --env OUT=/out "$fixtures/mounts_rw.py" >"$tmp/mounts.json" || true
expect "$tmp/mounts.json" outcome ok
expect "$tmp/mounts.json" isolation namespaces
expect "$tmp/mounts.json" stdout "from the host
wrote"
[ "$(cat "$tmp/out/made.txt")" = made ] || fail "the read-write mount's file is not on the host"
# Owned by the run's uid, not by the directory's owner (root): a plain bind, no idmap, so the
# launcher really took the unprivileged path.
[ "$(stat -c %u "$tmp/out/made.txt")" != 0 ] || fail "made.txt is root's: not the unprivileged path"
$drop "$codeact" run --isolation namespaces --no-validate --env "TARGET=$tmp/secret" \
  "$fixtures/chmod_outside.py" >"$tmp/chmod.json" || true
expect "$tmp/chmod.json" outcome error
expect "$tmp/chmod.json" isolation namespaces
[ "$(stat -c %a "$tmp/secret")" = 600 ] || fail "the chmod outside every mount changed $tmp/secret"
echo "PASS"
