#!/bin/sh
# ctest format.clang_format: every C++ file of the repository is formatted as .clang-format says
# (clang-format --dry-run -Werror). A skip (exit 77) where clang-format is not installed
# (.ci/setup installs it). Lists the files that differ and how to fix them.
root=$1
if ! command -v clang-format >/dev/null 2>&1; then
  echo "SKIPPED: clang-format not found"
  exit 77
fi
cd "$root" || exit 1
files=$(find include src tests samples -name node_modules -prune -o \( -name '*.cpp' -o -name '*.hpp' \) -print | sort)
bad=""
for f in $files; do
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad="$bad $f"
done
if [ -n "$bad" ]; then
  echo "not formatted (run: clang-format -i FILE):"
  for f in $bad; do echo "  $f"; done
  exit 1
fi
echo "$(echo "$files" | wc -l) files formatted ($(clang-format --version))"
