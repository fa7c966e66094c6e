#!/bin/sh
# ctest entry for package.consumer. Installs this build into a temporary prefix and checks that
# the installation stands on its own:
#   1. the layout: exactly the CLI, the library, the launcher and the guard's module in
#      libexec/codeact, the CMake package (beside the headers), and share/codeact holding the
#      validator (without its tests) and resources; no internal library (server, selftest);
#   2. the library's installed link interface and the package config: neither names libseccomp,
#      spdlog or pybind11 (the launcher, the guard and the CLI use those, the library does not);
#   3. the installed `codeact run`, started from another directory with $CODEACT_DATA_DIR unset;
#   4. this folder's CMake project finds the package, links codeact::core (and so neither
#      libseccomp nor spdlog) and runs a code block that calls a C++ host tool;
#   5. the first C++ example of docs/cpp-api.md, cut out of that file itself, builds against the
#      prefix with -Wall -Wextra -Werror (readme/CMakeLists.txt) and prints the doubled price;
#   6. that the installed binaries really use <prefix>/share/codeact and not the source tree:
#      with the installed runner.py removed, both must fail and name the installed path.
# The consumer run from its build dir (4) finds its data in the prefix it was configured against
# (find_package bakes that in); package.relocated (run_relocated_test.sh) moves the tree first.
#
# usage: run_consumer_test.sh BUILD_DIR BINDIR LIBDIR LIBEXECDIR INCLUDEDIR DATADIR
#                             [consumer cmake args...]
set -eu

build_dir=$1 bindir=$2 libdir=$3 libexecdir=$4 includedir=$5 datadir=$6
shift 6
here=$(cd "$(dirname "$0")" && pwd)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/codeact-consumer.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
unset CODEACT_DATA_DIR

prefix=$tmp/prefix
data=$prefix/$datadir/codeact
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
step() { echo "== $*"; }
# Runs a program that must fail, naming the installed runner.py, while that file is missing.
fails_naming_installed_runner() {
  if "$@" >out.txt 2>&1; then
    cat out.txt
    fail "$* succeeded without the installed runner.py"
  fi
  grep -qF "$data/resources/runner.py" out.txt || { cat out.txt; fail "$*: installed path not named"; }
}

step "install into $prefix"
cmake --install "$build_dir" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; fail "cmake --install"; }

step "layout"
test -x "$prefix/$bindir/codeact" || fail "no $bindir/codeact"
test -x "$prefix/$libexecdir/codeact/codeact-sandbox" || fail "no $libexecdir/codeact/codeact-sandbox"
for f in "$libdir/libcodeact.a" "$includedir/codeact/provider.hpp" \
         "$libdir/cmake/codeact/codeactConfig.cmake" \
         "$libdir/cmake/codeact/codeactConfigVersion.cmake" \
         "$libdir/cmake/codeact/codeactTargets.cmake" \
         "$libexecdir/codeact/_codeact_guard.so" "$libexecdir/codeact/codeact_python.so" \
         "$libexecdir/codeact/codeact_egress.so" \
         "$datadir/codeact/validator/__init__.py" "$datadir/codeact/validator/README.md" \
         "$datadir/codeact/resources/runner.py"; do
  test -f "$prefix/$f" || fail "not installed: $f"
done
# Outside the headers and the data dir, exactly these (the per-configuration targets file named
# by its pattern): an internal library or a test program installed by mistake shows here.
expected=$(printf '%s\n' "$bindir/codeact" "$libdir/libcodeact.a" \
  "$libdir/cmake/codeact/codeactConfig.cmake" "$libdir/cmake/codeact/codeactConfigVersion.cmake" \
  "$libdir/cmake/codeact/codeactTargets.cmake" "$libdir/cmake/codeact/codeactTargets-*.cmake" \
  "$libexecdir/codeact/_codeact_guard.so" "$libexecdir/codeact/codeact_python.so" \
  "$libexecdir/codeact/codeact_egress.so" "$libexecdir/codeact/codeact-sandbox" | sort)
installed=$(cd "$prefix" && find . \( -path "./$includedir/codeact" -o -path "./$datadir/codeact" \) -prune \
  -o ! -type d -print | sed 's|^\./||; s|codeactTargets-[a-z]*\.cmake$|codeactTargets-*.cmake|' | sort)
test "$installed" = "$expected" ||
  fail "installed files differ from the expected set:$(printf '\n--- expected\n%s\n--- installed\n%s' "$expected" "$installed")"
test ! -e "$data/validator/tests" || fail "validator/tests was installed"
stray=$(find "$data" -name __pycache__ -o -name '*.pyc')
test -z "$stray" || fail "compiled Python was installed: $stray"

step "link interface of codeact::core"
# The property as written in the installed export, e.g.
#   INTERFACE_LINK_LIBRARIES "\$<LINK_ONLY:Boost::json>;...;Threads::Threads"
targets=$prefix/$libdir/cmake/codeact/codeactTargets.cmake
interface=$(sed -n '/^set_target_properties(codeact::core PROPERTIES/,/^)/s/^ *INTERFACE_LINK_LIBRARIES //p' "$targets")
echo "codeact::core INTERFACE_LINK_LIBRARIES $interface"
test -n "$interface" || fail "no INTERFACE_LINK_LIBRARIES for codeact::core in $targets"
for dep in seccomp spdlog pybind11 python openssl; do
  if printf '%s\n' "$interface" | grep -qi "$dep"; then fail "codeact::core's link interface names $dep"; fi
  if grep -qi "$dep" "$prefix/$libdir/cmake/codeact/codeactConfig.cmake"; then
    fail "codeactConfig.cmake names $dep"
  fi
done

mkdir "$tmp/work"
cd "$tmp/work"
printf 'print(6 * 7)\n' >block.py

step "installed codeact run, from $tmp/work"
"$prefix/$bindir/codeact" run block.py >run.json || { cat run.json; fail "codeact run failed"; }
cat run.json
grep -q '"stdout":"42\\n"' run.json || fail "codeact run: stdout is not 42"
grep -q '"success":true' run.json || fail "codeact run: not successful"

step "consumer: configure and build against $prefix"
cmake -S "$here" -B "$tmp/consumer-build" -DCMAKE_PREFIX_PATH="$prefix" "$@" \
  >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; fail "consumer configure"; }
cmake --build "$tmp/consumer-build" >"$tmp/build.log" 2>&1 ||
  { cat "$tmp/build.log"; fail "consumer build"; }
consumer=$(find "$tmp/consumer-build" -type f -name codeact_consumer -perm -u+x | head -n 1)
test -n "$consumer" || fail "consumer binary not found"

step "consumer's shared libraries"
if command -v readelf >/dev/null 2>&1; then
  needed=$(readelf -d "$consumer" | grep NEEDED || true)
  if printf '%s\n' "$needed" | grep -qiE 'seccomp|spdlog|libfmt|libpython|libssl|libcrypto'; then
    printf '%s\n' "$needed"
    fail "the consumer links libseccomp, spdlog, fmt, libpython or OpenSSL (modules load those two at run time)"
  fi
else
  echo "readelf not found: not checked"
fi

step "consumer from its build dir"
"$consumer" || fail "consumer exited $?"

step "consumer installed beside codeact in $prefix/$bindir"
cp "$consumer" "$prefix/$bindir/"
"$prefix/$bindir/codeact_consumer" || fail "installed consumer exited $?"

step "the first C++ example of docs/cpp-api.md"
readme=$here/../../docs/cpp-api.md
awk '/^```cpp$/ { inside = 1; next } inside && /^```$/ { exit } inside { print }' "$readme" \
  >"$tmp/readme_example.cpp"
test -s "$tmp/readme_example.cpp" || fail "no \`\`\`cpp block in $readme"
cmake -S "$here/readme" -B "$tmp/readme-build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DREADME_EXAMPLE="$tmp/readme_example.cpp" "$@" >"$tmp/readme-configure.log" 2>&1 ||
  { cat "$tmp/readme-configure.log"; fail "C++ example: configure"; }
cmake --build "$tmp/readme-build" >"$tmp/readme-build.log" 2>&1 ||
  { cat "$tmp/readme-build.log"; fail "C++ example: build (warnings are errors)"; }
example=$(find "$tmp/readme-build" -type f -name readme_example -perm -u+x | head -n 1)
"$example" >readme.out 2>&1 || { cat readme.out; fail "C++ example exited $?"; }
test "$(tail -n 1 readme.out)" = "19.98" || { cat readme.out; fail "C++ example: not 19.98"; }
grep -q '"strict":true' readme.out || { cat readme.out; fail "C++ example: no definition"; }

step "both use $data: without its runner.py they fail and name it"
mv "$data/resources/runner.py" "$tmp/runner.py"
fails_naming_installed_runner "$prefix/$bindir/codeact" run block.py
fails_naming_installed_runner "$prefix/$bindir/codeact_consumer"
mv "$tmp/runner.py" "$data/resources/runner.py"

echo "PASS"
