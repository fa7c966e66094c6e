"""`pip install .` into a fresh venv, then the package as a user meets it (ctest python.pip_install).

    check_pip_install.py SOURCE_DIR BUILD_DIR WHEELHOUSE

The venv is made from /usr/bin/python3.11 (the embedded libpython's interpreter). Offline:
scikit-build-core comes from WHEELHOUSE (.ci/setup downloads it), and the wheel is laid out from
BUILD_DIR's finished tree (src/python_module/prebuilt), so nothing is compiled again. Then, from
a directory outside the source tree: `import codeact`, a run prints, an async function
registered as a host tool is called from the code, and a session keeps a variable.
"""

import os
import subprocess
import sys
import tempfile
import time

source_dir, build_dir, wheelhouse = (os.path.abspath(a) for a in sys.argv[1:4])
if not os.path.isdir(wheelhouse):
    print(f"SKIP: no wheelhouse at {wheelhouse} (.ci/setup downloads scikit-build-core there)")
    sys.exit(77)

SCRIPT = r'''
import asyncio, sys, codeact
assert codeact.__file__.startswith(sys.prefix), codeact.__file__
calls = []

async def lookup(city: str) -> dict:
    """The weather in a city."""
    await asyncio.sleep(0)
    calls.append(city)
    return {"city": city, "temp_c": 21}

async def main():
    provider = codeact.LocalCodeActProvider(tools=[lookup])
    r = await provider.execute("print('hello from codeact')")
    assert r.outcome == "ok" and r.stdout == "hello from codeact\n", r
    r = await provider.execute("w = await lookup(city='Oslo')\nprint(w['temp_c'])")
    assert r.outcome == "ok" and r.stdout == "21\n" and calls == ["Oslo"], (r, calls)
    session = await provider.create_session()
    r1 = await session.execute("kept = 6 * 7")
    r2 = await session.execute("print(kept)")
    await session.close()
    assert r1.outcome == "ok" and r2.stdout == "42\n" and r2.session_state == "kept", (r1, r2)
    print("installed package ok:", codeact.__version__, r2.isolation)

asyncio.run(main())
'''


def run(*args, **kwargs):
    print("+", " ".join(a if "\n" not in a else "<script>" for a in args), flush=True)
    subprocess.run(args, check=True, **kwargs)


with tempfile.TemporaryDirectory(prefix="codeact-pip-") as tmp:
    venv = os.path.join(tmp, "venv")
    py = os.path.join(venv, "bin", "python")
    run("/usr/bin/python3.11", "-m", "venv", venv)
    started = time.monotonic()
    run(py, "-m", "pip", "install", "-q", "--no-index", "--find-links", wheelhouse,
        "scikit-build-core")
    run(py, "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation",
        "--config-settings", "cmake.source-dir=src/python_module/prebuilt",
        "--config-settings", f"cmake.define.CODEACT_PREBUILT_DIR={build_dir}",
        "--config-settings", f"build-dir={os.path.join(tmp, 'wheel-build')}",
        source_dir, cwd=tmp)
    print(f"pip install took {time.monotonic() - started:.1f} s", flush=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CODEACT_") and k != "PYTHONPATH"}
    run(py, "-c", SCRIPT, cwd=tmp, env=env)
