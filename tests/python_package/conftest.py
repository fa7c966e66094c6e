"""The pytest suites of the Python package against the test build's native module.

ctest (tests/CMakeLists.txt, python.package) runs them with the build's venv and
PYTHONPATH=<source>/python:<build>/python_module, and CODEACT_BUILD_DIR=<build>: the library
finds its launcher there (a Python process is not one of the build's programs, which is how it
finds it otherwise: src/common/data_dir.cpp).
"""

import os

import pytest

build_dir = os.environ.get("CODEACT_BUILD_DIR")
if build_dir:
    os.environ.setdefault("CODEACT_SANDBOX_LAUNCHER", os.path.join(build_dir, "codeact-sandbox"))

# Deadlines for waiting on events: generous, never a sleep.
DEADLINE_S = 60


@pytest.fixture
def deadline():
    return DEADLINE_S
