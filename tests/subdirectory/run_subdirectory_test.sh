#!/bin/sh
# ctest entry for package.subdirectory. Configures this folder's parent project, which adds the
# codeact source tree with add_subdirectory, and checks that codeact's paths are its own there:
#   1. the configure succeeds (a source named from the parent's tree would not be found) and
#      codeact's tests are off by default;
#   2. the generated build config names codeact's source tree and its binary dir, not the
#      parent's (src/common/data_dir.cpp finds the data, the launcher and the guard from them);
#   3. no compile flag names the parent's trees in place of codeact's (src/, include/, generated/).
#
# usage: run_subdirectory_test.sh CODEACT_SOURCE_DIR [cmake args...]
set -eu

source_dir=$(cd "$1" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/codeact-subdirectory.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
step() { echo "== $*"; }

build=$tmp/build
step "configure $here with add_subdirectory($source_dir)"
cmake -S "$here" -B "$build" -DCODEACT_SOURCE_DIR="$source_dir" "$@" >"$tmp/configure.log" 2>&1 ||
  { cat "$tmp/configure.log"; fail "configure"; }
test -f "$build/codeact/Makefile" -o -f "$build/build.ninja" || fail "no build files for codeact"
test ! -e "$build/codeact/tests" || fail "codeact's tests are configured inside a parent project"

step "generated build config"
config=$build/codeact/generated/codeact_build_config.hpp
test -f "$config" || fail "no $config"
grep -qF "kSourceDir = \"$source_dir\";" "$config" || { cat "$config"; fail "kSourceDir is not $source_dir"; }
grep -qF "kBinaryDir = \"$build/codeact\";" "$config" || { cat "$config"; fail "kBinaryDir is not $build/codeact"; }

step "compile flags"
for wrong in "$here/src" "$here/include" "$build/generated"; do
  found=$(grep -rlF "$wrong" "$build" --include=flags.make --include=build.ninja || true)
  test -z "$found" || fail "$wrong is named in: $found"
done

echo "PASS"
