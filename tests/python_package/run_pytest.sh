#!/bin/sh
# The Python package's pytest suites (ctest python.package), with the venv .ci/setup makes in the
# build dir and the native module this build made (no second build): skipped, with the reason,
# where there is no venv.
#   run_pytest.sh SOURCE_DIR BUILD_DIR [pytest arguments]
source_dir=$1
build_dir=$2
shift 2
python=$build_dir/venv/bin/python
if [ ! -x "$python" ]; then
  echo "SKIP: no venv at $build_dir/venv (.ci/setup makes it, with python/requirements-test.txt)"
  exit 77
fi
cd "$source_dir/tests/python_package" || exit 1
CODEACT_BUILD_DIR=$build_dir PYTHONPATH=$source_dir/python:$build_dir/python_module \
  exec "$python" -m pytest "$@"
