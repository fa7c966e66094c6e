#!/bin/sh
# ctest entry for package.relocated: an installed tree moved to another prefix runs on its own.
#   1. `cmake --install` into a temporary prefix, then the whole tree is moved (mv) elsewhere;
#   2. in a private mount namespace (unshare -m) the source tree and the build tree are covered
#      by empty tmpfs mounts, so nothing can be found there, and every variable is cleared
#      (env -i: no CODEACT_DATA_DIR, CODEACT_SANDBOX_LAUNCHER or CODEACT_GUARD_MODULE);
#   3. there, the moved `codeact run --isolation namespaces` must end with outcome ok at the
#      namespaces level, and `--isolation auto` must either run at namespaces or say in
#      `message` why it did not;
#   4. there, the first C++ example of docs/cpp-api.md is configured and built against the moved
#      prefix (find_package(codeact) bakes the moved location into it: docs/cpp-api.md) and must
#      print the doubled price, 19.98;
#   5. with the moved tree's runner.py taken away, both the CLI and the example fail and name that
#      file: they really use the moved tree, not another installation (/usr/local) by chance.
# Needs root for the mount namespace (ctest runs the suite as root; elsewhere: a skip, exit 77).
#
# usage: run_relocated_test.sh SOURCE_DIR BUILD_DIR BINDIR [consumer cmake args...]
set -eu

source_dir=$(cd "$1" && pwd) build_dir=$(cd "$2" && pwd) bindir=$3
shift 3
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
step() { echo "== $*"; }

if [ "$(id -u)" != 0 ]; then
  echo "SKIPPED: hiding the source and build trees needs a mount namespace, which needs root"
  exit 77
fi
command -v unshare >/dev/null 2>&1 || { echo "SKIPPED: unshare not found"; exit 77; }

tmp=$(mktemp -d /tmp/codeact-relocated.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
case "$tmp/" in "$source_dir"/* | "$build_dir"/*) fail "$tmp lies inside the trees it must hide" ;; esac
chmod 755 "$tmp"  # the namespaces level runs the child as another uid on a root host

step "install into $tmp/installed, then move it to $tmp/moved/somewhere"
cmake --install "$build_dir" --prefix "$tmp/installed" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; fail "cmake --install"; }
mkdir -p "$tmp/moved"
mv "$tmp/installed" "$tmp/moved/somewhere"
prefix=$tmp/moved/somewhere
test ! -e "$tmp/installed" || fail "the installed tree is still at its first prefix"

awk '/^```cpp$/ { inside = 1; next } inside && /^```$/ { exit } inside { print }' \
  "$source_dir/docs/cpp-api.md" >"$tmp/readme_example.cpp"
test -s "$tmp/readme_example.cpp" || fail "no \`\`\`cpp block in docs/cpp-api.md"
cp -r "$source_dir/tests/consumer/readme" "$tmp/readme-src"
printf 'print(6 * 7)\n' >"$tmp/block.py"

# The part that runs with the trees hidden, as a script of its own: sh -c with the paths as
# arguments, never pasted into its text.
cat >"$tmp/hidden.sh" <<'SCRIPT'
set -eu
tmp=$1 prefix=$2 bindir=$3 source_dir=$4 build_dir=$5
shift 5
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
mount --make-rprivate /
mount -t tmpfs -o size=1m,mode=755 codeact-hidden "$source_dir"
if [ -d "$build_dir" ]; then mount -t tmpfs -o size=1m,mode=755 codeact-hidden "$build_dir"; fi
test -z "$(ls -A "$source_dir")" || fail "the source tree is still visible"
# A build tree inside the source tree is gone with it; one elsewhere is covered by its own tmpfs.
if [ -e "$build_dir" ]; then test -z "$(ls -A "$build_dir")" || fail "the build tree is still visible"; fi
env | grep '^CODEACT_' && fail "a CODEACT_ variable is set"
cd "$tmp"

echo "== codeact run --isolation namespaces, from the moved tree"
"$prefix/$bindir/codeact" run --isolation namespaces block.py >run.json 2>run.err ||
  { cat run.json run.err; fail "codeact run --isolation namespaces failed"; }
cat run.json
grep -q '"outcome":"ok"' run.json || fail "outcome is not ok"
grep -q '"isolation":"namespaces"' run.json || fail "not at the namespaces level"
grep -q '"stdout":"42\\n"' run.json || fail "stdout is not 42"

echo "== codeact run --isolation auto: namespaces, or the reason in message"
"$prefix/$bindir/codeact" run --isolation auto block.py >auto.json 2>auto.err ||
  { cat auto.json auto.err; fail "codeact run --isolation auto failed"; }
cat auto.json
if ! grep -q '"isolation":"namespaces"' auto.json; then
  grep -q '"message":"[^"]' auto.json || fail "auto fell back without a reason in message"
fi

echo "== the first C++ example of docs/cpp-api.md, built against the moved tree"
cmake -S readme-src -B readme-build -DCMAKE_PREFIX_PATH="$prefix" \
  -DREADME_EXAMPLE="$tmp/readme_example.cpp" "$@" >configure.log 2>&1 ||
  { cat configure.log; fail "C++ example: configure"; }
grep -F "$prefix" readme-build/codeact_generated/codeact_installed_location.cpp ||
  fail "the moved prefix was not baked into the consumer"
cmake --build readme-build >build.log 2>&1 || { cat build.log; fail "C++ example: build"; }
example=$(find readme-build -type f -name readme_example -perm -u+x | head -n 1)
"$example" >readme.out 2>&1 || { cat readme.out; fail "C++ example exited $?"; }
cat readme.out
test "$(tail -n 1 readme.out)" = "19.98" || fail "C++ example: not 19.98"

echo "== both use the moved tree: without its runner.py they fail and name it"
runner=$(find "$prefix" -path "*/codeact/resources/runner.py" | head -n 1)
test -n "$runner" || fail "no runner.py in the moved tree"
mv "$runner" "$tmp/runner.py"
for program in "$prefix/$bindir/codeact run block.py" "$example"; do
  if $program >out.txt 2>&1; then cat out.txt; fail "$program ran without the moved runner.py"; fi
  grep -qF "$runner" out.txt || { cat out.txt; fail "$program did not name $runner"; }
done
mv "$tmp/runner.py" "$runner"
SCRIPT

step "with the source and build trees hidden and no environment variables"
unshare -m env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$tmp" LANG=C.UTF-8 \
  sh "$tmp/hidden.sh" "$tmp" "$prefix" "$bindir" "$source_dir" "$build_dir" "$@" ||
  fail "the moved tree did not run on its own"
echo "PASS"
