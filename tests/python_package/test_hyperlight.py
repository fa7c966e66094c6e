"""The real Hyperlight SDK from PyPI: import and construction, the API codeact's worker
(resources/hyperlight_worker.py) uses checked against the installed release, starting a micro-VM
through the SDK, and how the hyperlight backend reports that none starts on this machine.

Two releases: 0.3.0, the one the backend is checked against (docs/hyperlight.md;
python/requirements-hyperlight-sdk.txt, installed by .ci/setup into build/hyperlight-sdk), and
0.8.0 in the venv (agent-framework-hyperlight needs it). Each is imported in a child interpreter
of its own (two releases cannot share a process)."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

import codeact

VENV_SDK = "0.8.0"  # python/requirements-test.txt
BACKEND_SDK = "0.3.0"  # python/requirements-hyperlight-sdk.txt

PROBE = r'''
import inspect, json, sys
sys.path.insert(0, sys.argv[1])
import hyperlight_sandbox as sdk
import importlib.util
out = {"version": sdk.__version__, "file": sdk.__file__}
sandbox = sdk.Sandbox()  # builds nothing yet: the VM starts with the first run
params = inspect.signature(sdk.Sandbox.__init__).parameters
out["keyword_only"] = sorted(n for n, p in params.items() if p.kind == p.KEYWORD_ONLY)
out["arity"] = {m: len([p for p in list(inspect.signature(getattr(sdk.Sandbox, m)).parameters.values())[1:]
                        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])
                for m in ("register_tool", "allow_domain", "run", "snapshot", "restore")}
out["result_fields"] = sorted(sdk.ExecutionResult.__dataclass_fields__)
import hyperlight_sandbox_backend_wasm
out["guest"] = importlib.util.find_spec("python_guest") is not None
if sys.argv[2] == "run":
    try:
        r = sandbox.run("print(1)")
        out["run"] = {"ok": True, "stdout": r.stdout}
    except BaseException as e:
        out["run"] = {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}
print(json.dumps(out))
'''


def kvm_usable():
    return any(os.path.exists(d) and os.access(d, os.R_OK | os.W_OK)
               for d in ("/dev/kvm", "/dev/mshv"))


def sdk_dirs():
    venv = importlib.util.find_spec("hyperlight_sandbox")
    backend = os.path.join(os.environ.get("CODEACT_BUILD_DIR", ""), "hyperlight-sdk")
    return [
        pytest.param(os.path.dirname(list(venv.submodule_search_locations)[0]) if venv else None,
                     VENV_SDK, id=VENV_SDK),
        pytest.param(backend if os.path.isdir(backend) else None, BACKEND_SDK, id=BACKEND_SDK),
    ]


def probe(sdk_dir, mode):
    done = subprocess.run([sys.executable, "-c", PROBE, sdk_dir, mode], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("sdk_dir,version", sdk_dirs())
def test_the_sdk_imports_constructs_and_has_the_workers_api(sdk_dir, version):
    if sdk_dir is None:
        pytest.skip(f"hyperlight-sandbox {version} is not installed (.ci/setup installs it)")
    found = probe(sdk_dir, "api")
    assert found["version"] == version and found["file"].startswith(sdk_dir)
    # hyperlight_worker.py: Sandbox(input_dir=, output_dir=, heap_size=, stack_size=), then
    # register_tool(name, fn), allow_domain(target, methods), run(code) -> stdout/stderr/
    # exit_code, snapshot(), restore(snapshot); and its package check (_package_problem).
    assert {"input_dir", "output_dir", "heap_size", "stack_size"} <= set(found["keyword_only"])
    assert found["arity"] == {"register_tool": 2, "allow_domain": 2, "run": 1, "snapshot": 0,
                              "restore": 1}
    assert {"stdout", "stderr", "exit_code"} <= set(found["result_fields"])
    assert found["guest"]


@pytest.mark.parametrize("sdk_dir,version", sdk_dirs())
def test_starting_a_micro_vm_through_the_sdk_fails_here_with_its_reason(sdk_dir, version):
    if sdk_dir is None:
        pytest.skip(f"hyperlight-sandbox {version} is not installed (.ci/setup installs it)")
    if not kvm_usable():
        pytest.skip("no usable hypervisor device here; the worker reports that before the SDK runs")
    run = probe(sdk_dir, "run")["run"]
    if run["ok"]:
        pytest.skip("a micro-VM starts on this host: there is no failure to report")
    print(f"hyperlight-sandbox {version}: {run['error']}")
    assert run["error"].startswith("RuntimeError: Failed to create sandbox"), run


@pytest.mark.parametrize("sdk_dir,version", sdk_dirs())
async def test_the_backend_reports_unavailable_with_the_sdks_reason(sdk_dir, version):
    if sdk_dir is None:
        pytest.skip(f"hyperlight-sandbox {version} is not installed (.ci/setup installs it)")
    r = await codeact.HyperlightCodeActProvider(sdk_path=sdk_dir).execute("print(1)")
    assert (r.backend, r.isolation) == ("hyperlight", "microvm")
    if r.outcome == "ok":
        pytest.skip("a micro-VM runs on this host")
    print(f"hyperlight-sandbox {version}: {r.message}")
    assert r.outcome == "unavailable", r
    if kvm_usable():
        assert r.message.startswith(
            "the hyperlight guest did not start: RuntimeError: Failed to create sandbox"), r.message
    else:
        assert "no usable hypervisor device" in r.message


@pytest.mark.parametrize("sdk_dir,version", sdk_dirs())
async def test_the_backends_reason_is_the_vm_start_not_the_guest_size(sdk_dir, version):
    """The guest sizing the backend derives from memory_bytes passes the SDK's own checks, so what
    is reported is the SDK's failure to start the VM, not a refusal of the sizes."""
    if sdk_dir is None:
        pytest.skip(f"hyperlight-sandbox {version} is not installed (.ci/setup installs it)")
    if not kvm_usable():
        pytest.skip("no usable hypervisor device here; the worker reports that before the SDK runs")
    for memory_mb in (64, 128, 1024):
        r = await codeact.HyperlightCodeActProvider(
            sdk_path=sdk_dir, limits={"memory_bytes": memory_mb << 20}).execute("print(1)")
        if r.outcome == "ok":
            pytest.skip("a micro-VM runs on this host")
        assert r.outcome == "unavailable", r
        assert "Memory requested" not in r.message, (memory_mb, r.message)
        assert "failed to load Wasm runtime" in r.message, (memory_mb, r.message)
