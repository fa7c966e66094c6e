#!/bin/sh
# ctest entry for container.podman: the installed tree inside real containers (docs/containers.md).
#   1. `cmake --install` into a temporary prefix under the build tree (not /tmp, which the
#      restricted profile covers with its own tmpfs);
#   2. for each profile, one container: podman with runc (crun refuses cgroup v1 hybrid hosts),
#      no network, the host's root as an overlay (--rootfs /:O: no image is downloaded);
#        docker-root     root with Docker's default capabilities and seccomp profile;
#        restricted      uid 1000, every capability dropped, no-new-privileges, Docker's seccomp
#                        profile, a private /tmp (a Kubernetes "restricted" pod);
#        podman-default  uid 1000 under podman's own defaults, which allow user namespaces;
#        podman-root     root under podman's defaults (no CAP_SYS_ADMIN: open_tree is refused);
#   3. inside, inside.py: `codeact run` prints, the level `auto` chose, the result's message length,
#      MCP over stdio answers a tools/call, the limits (--memory-mb 256 runs; 512 MiB of bytearray
#      and of memfd stopped under it; --max-workdir-mb 16 stops 64 MiB to /tmp), `codeact selftest`
#      exits 0 with every probe promised; where the level is namespaces, its key attacks
#      (chmod of a 0600 file outside every mount, other processes seen through /proc);
#   4. podman-default and podman-root must run at namespaces.
# A check named in EXPECTED_TO_FAIL (PROFILE:CHECK) may fail; if it passes, the test fails so that
# the entry is removed. A skip (exit 77) only where podman cannot start a container here.
#
# usage: run_container_test.sh BUILD_DIR SOURCE_DIR
set -eu

# What is still not met, each with its reason (none today).
EXPECTED_TO_FAIL=""

build_dir=$(cd "$1" && pwd) source_dir=$(cd "$2" && pwd)
here=$source_dir/tests/container
seccomp=/usr/share/gocode/src/github.com/docker/docker/profiles/seccomp/default.json

skip() {
  echo "SKIPPED: $*"
  exit 77
}
command -v podman >/dev/null 2>&1 || skip "podman not found (.ci/setup installs it)"
command -v runc >/dev/null 2>&1 || skip "runc not found (.ci/setup installs it)"
test -r "$seccomp" || skip "Docker's seccomp profile $seccomp is missing (golang-github-docker-docker-dev)"

# Outside /tmp, which the restricted profile's --tmpfs /tmp hides (a checkout may live there): the
# installed tree and a copy of the harness.
tmp=$(mktemp -d /var/tmp/codeact-container-test.XXXXXX)
store=$(mktemp -d /tmp/codeact-podman.XXXXXX)  # podman wants a runroot of at most 50 characters
chmod 755 "$tmp"

# A storage of its own (nothing in the machine's podman store is touched or needed), the
# cgroupfs manager and a file events log (no systemd here), vfs (no image layers: --rootfs).
podman_cmd="podman --root $store/storage --runroot $store/run --tmpdir $store/tmp
  --storage-driver vfs --cgroup-manager cgroupfs --events-backend file --runtime runc"
cleanup() {
  $podman_cmd rm --all --force >/dev/null 2>&1 || true
  # The overlay of a container whose cleanup (conmon's, asynchronous) had not run yet: unmounted
  # before anything is removed, and the removal never crosses into a mount.
  awk -v s="$store/" 'index($2, s) == 1 { print $2 }' /proc/mounts | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
  rm -rf --one-file-system "$tmp" "$store" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM
common="run --rm -i --network none --ulimit nofile=4096:4096 --ulimit nproc=4096:4096"

if ! probe=$($podman_cmd $common --rootfs /:O /bin/true 2>&1); then
  skip "podman cannot start a container on this machine: $(printf "%s\n" "$probe" | tail -n 3)"
fi

cmake --install "$build_dir" --prefix "$tmp/installed" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; echo "FAIL: cmake --install"; exit 1; }
cp -R "$here/inside.py" "$here/fixtures" "$tmp/"
chmod -R a+rX "$tmp/installed" "$tmp/inside.py" "$tmp/fixtures"
codeact=$tmp/installed/bin/codeact

failures=0
report=""
run_profile() {
  name=$1
  shift
  echo "== $name: podman $*"
  # HOME: uid 1000 has no home directory on the host's root; its per-user cache goes there.
  out=$($podman_cmd $common -e HOME=/var/tmp "$@" --rootfs /:O \
    /usr/bin/python3 -I "$tmp/inside.py" "$codeact" "$tmp/fixtures" 2>&1) || true
  printf "%s\n" "$out"
  printf "%s\n" "$out" | grep -q '^CHECK ' || { echo "FAIL: $name: the checks did not run"; failures=$((failures + 1)); return; }
  level=$(printf "%s\n" "$out" | sed -n 's/^LEVEL //p')
  report="$report
  $name: auto runs at ${level:-?}"
  if [ "${name#podman-}" != "$name" ] && [ "$level" != namespaces ]; then
    echo "FAIL: $name: auto ran at '$level', not namespaces"
    failures=$((failures + 1))
  fi
  for line in $(printf "%s\n" "$out" | sed -n 's/^CHECK \([^ ]*\) \(PASS\|FAIL\).*/\1:\2/p'); do
    check=${line%:*} verdict=${line##*:}
    expected=no
    case "$EXPECTED_TO_FAIL" in *"
$name:$check
"*) expected=yes ;; esac
    if [ "$verdict" = FAIL ] && [ $expected = no ]; then
      echo "FAIL: $name:$check"
      failures=$((failures + 1))
    elif [ "$verdict" = PASS ] && [ $expected = yes ]; then
      echo "FAIL: $name:$check passes now: remove it from EXPECTED_TO_FAIL"
      failures=$((failures + 1))
    elif [ "$verdict" = FAIL ]; then
      echo "expected to fail: $name:$check"
    fi
  done
}

run_profile docker-root --security-opt seccomp="$seccomp"
run_profile restricted --security-opt seccomp="$seccomp" --user 1000:1000 --cap-drop ALL \
  --security-opt no-new-privileges --tmpfs /tmp:rw,notmpcopyup
run_profile podman-default --user 1000:1000
run_profile podman-root --user 0:0

echo "== levels:$report"
if [ $failures -ne 0 ]; then
  echo "FAIL: $failures check(s)"
  exit 1
fi
echo "PASS"
