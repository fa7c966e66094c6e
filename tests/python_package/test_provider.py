"""LocalCodeActProvider against real runs: the result contract, host tools (sync and async, schema
from type hints), errors, validation, approval, limits, mounts, cancellation and the GIL."""

import asyncio
import base64
import json
import os
import threading
import typing

import pytest

import codeact
from codeact import _native


async def add(a: int, b: int) -> int:
    """Adds two integers."""
    await asyncio.sleep(0)
    return a + b


def scale(values: list[float], factor: float = 2.0) -> list[float]:
    """Multiplies each value."""
    return [v * factor for v in values]


@pytest.fixture
def provider():
    return codeact.LocalCodeActProvider(tools=[add, scale])


async def test_a_run_prints_and_returns_the_contracts_fields(provider):
    r = await provider.execute("print('hi')\n6 * 7")
    assert (r.outcome, r.exit_code, r.success) == ("ok", 0, True)
    assert r.stdout == "hi\n" and r.stderr == ""
    assert r.output_present and r.output == 42
    assert r.backend == "local" and r.isolation in ("process", "namespaces")
    assert r.interpreter == "/usr/bin/python3.11"
    assert r.schema_version == _native.RESULT_SCHEMA_VERSION == 1
    assert r.session is None and r.session_state is None
    assert set(r.usage) == {"cpu_ms", "peak_memory_bytes", "workdir_bytes"}
    assert json.loads(r.to_json())["stdout"] == "hi\n"


async def test_user_exception_is_outcome_error(provider):
    r = await provider.execute("raise ValueError('bad input')")
    assert r.outcome == "error" and r.exit_code == 1 and not r.success
    assert r.error["type"] == "ValueError" and r.error["message"] == "bad input"


async def test_validation_is_the_librarys(provider):
    r = await provider.execute("import os\nos.system('id')")
    assert r.outcome == "validation_failed"
    assert [v["rule"] for v in r.violations] == ["os-attribute"]
    assert r.interpreter is None  # nothing ran


async def test_async_and_sync_python_tools_are_called_with_await(provider):
    r = await provider.execute(
        "s = await add(a=2, b=3)\nprint(s, await scale(values=[1.5, 2], factor=3))")
    assert r.outcome == "ok", r
    # 6.0 crosses the bridge as the JSON number 6.
    assert r.stdout == "5 [4.5, 6]\n" and r.tool_calls == 2


async def test_tool_exception_reaches_the_code_as_tool_error():
    def fails(reason: str) -> None:
        raise PermissionError(reason)

    p = codeact.LocalCodeActProvider(tools=[fails])
    r = await p.execute(
        "try:\n    await fails(reason='no')\nexcept ToolError as e:\n    print(e.error_type, e)")
    assert r.outcome == "ok", r
    assert r.stdout.startswith("PermissionError"), r.stdout
    assert "no" in r.stdout


async def test_the_schema_comes_from_type_hints():
    def search(query: str, limit: int = 10, tags: typing.Optional[list[str]] = None,
               mode: typing.Literal["fast", "exact"] = "fast") -> list[dict]:
        """Searches the index.

        More text that is not the description."""
        return []

    schema = codeact.schema_from_callable(search)
    assert schema == {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer", "default": 10},
            "tags": {"anyOf": [{"type": "array", "items": {"type": "string"}},
                               {"type": "null"}], "default": None},
            "mode": {"enum": ["fast", "exact"], "default": "fast"},
        },
        "required": ["query"],
    }
    t = codeact.Tool(search)
    assert t.description == "Searches the index."
    p = codeact.LocalCodeActProvider(tools=[t])
    # The library checks arguments against the schema before the handler runs.
    r = await p.execute("await search(query=3)")
    assert r.outcome == "error" and r.error["type"] == "ToolError", r
    description = p.describe("openai")["definition"]["function"]["description"]
    assert "search(" in description and "Searches the index." in description


async def test_describe_gives_each_format_and_the_instructions(provider):
    openai = provider.describe("openai")
    assert openai["definition"]["type"] == "function"
    assert openai["definition"]["function"]["name"] == "execute_code"
    anthropic = provider.describe("anthropic")["definition"]
    assert anthropic["name"] == "execute_code" and "input_schema" in anthropic
    mcp = provider.describe("mcp")["definition"]
    assert mcp["name"] == "execute_code" and "outputSchema" in mcp
    assert "add(" in mcp["description"]
    assert "execute_code" in openai["instructions"]
    with pytest.raises(ValueError, match="format must be"):
        provider.describe("yaml")


def test_a_malformed_network_target_is_refused_when_added(provider):
    with pytest.raises(ValueError, match='network target "api.example.com:GTE": unknown HTTP'):
        provider.add_network_target("api.example.com:GTE")
    assert provider.get_network_targets() == []
    provider.add_network_target("api.example.com:GET")
    assert provider.get_network_targets() == ["api.example.com:GET"]


async def test_approval_callable_decides_for_gated_tools():
    asked = []

    def delete_all() -> str:
        return "deleted"

    def approve(request):
        asked.append(request["tools_requiring_approval"])
        return len(asked) > 1

    p = codeact.LocalCodeActProvider(
        tools=[codeact.Tool(delete_all, requires_approval=True)], approval=approve)
    denied = await p.execute("print(await delete_all())")
    assert denied.outcome == "approval_required" and "approval denied" in denied.message
    allowed = await p.execute("print(await delete_all())")
    assert allowed.outcome == "ok" and allowed.stdout == "deleted\n"
    assert asked == [["delete_all"], ["delete_all"]]


async def test_limits_apply():
    p = codeact.LocalCodeActProvider(limits={"wall_timeout_ms": 1500})
    r = await p.execute("while True:\n    pass")
    assert r.outcome == "timeout", r
    with pytest.raises(ValueError, match="unknown limit"):
        codeact.LocalCodeActProvider(limits={"wall_timeout": 1})


async def test_files_written_to_a_mount_come_back(tmp_path):
    p = codeact.LocalCodeActProvider(mounts=[{"host_path": str(tmp_path), "mount_path": "/out"}])
    r = await p.execute("open('/out/report.txt', 'w').write('done')")
    assert r.outcome == "ok", r
    assert [(f.path, f.data) for f in r.files] == [("/out/report.txt", b"done")]


async def test_bad_configuration_raises():
    with pytest.raises(ValueError, match="isolation"):
        codeact.LocalCodeActProvider(isolation="vm")

    def sum():  # noqa: A001 - a builtin's name on purpose
        return 0

    with pytest.raises(Exception, match="sum"):
        codeact.LocalCodeActProvider(tools=[sum])


async def test_the_gil_is_released_while_a_run_waits(provider, deadline):
    # The code waits on a tool that waits on an event this loop sets: with the GIL held by the
    # waiting run, neither the loop nor the tool could proceed.
    gate = asyncio.Event()

    async def wait_for_gate() -> str:
        await gate.wait()
        return "through"

    provider.add_tools([wait_for_gate])
    run = asyncio.create_task(provider.execute("print(await wait_for_gate())"))
    ticks = 0
    while ticks < 3:  # the loop keeps running Python while the run is in flight
        await asyncio.sleep(0)
        ticks += 1
    gate.set()
    r = await asyncio.wait_for(run, deadline)
    assert r.outcome == "ok" and r.stdout == "through\n"


async def test_cancelling_the_awaiting_task_cancels_the_run_and_its_tool_call(deadline):
    started = asyncio.Event()
    tool_saw_cancel = asyncio.Event()

    async def hang() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            tool_saw_cancel.set()
            raise

    p = codeact.LocalCodeActProvider(tools=[hang], limits={"wall_timeout_ms": 300_000})
    run = asyncio.create_task(p.execute("await hang()"))
    await asyncio.wait_for(started.wait(), deadline)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(run, deadline)
    await asyncio.wait_for(tool_saw_cancel.wait(), deadline)


async def test_a_cancelled_run_ends_as_cancelled(deadline):
    p = codeact.LocalCodeActProvider(limits={"wall_timeout_ms": 300_000})
    started = threading.Event()
    p.add_tools([codeact.Tool(lambda: started.set(), name="mark_started")])
    cancel = _native.Cancellation()
    loop = asyncio.get_running_loop()
    future = loop.run_in_executor(
        None, p._native.execute, "await mark_started()\nwhile True:\n    pass", None, None, cancel)
    assert await loop.run_in_executor(None, started.wait, deadline)
    assert cancel.cancel("the test cancelled it")
    r = codeact.ExecutionResult.from_json(await asyncio.wait_for(future, deadline))
    assert r.outcome == "cancelled" and r.message == "cancelled: the test cancelled it"


THREE_LINES_APART = """
import time
for i in range(3):
    print(f"line {i}", flush=True)
    time.sleep(0.4)
"""


async def test_stream_yields_chunks_while_the_run_goes_on_then_the_result(provider):
    events = []
    seen_at = []
    async for event in provider.stream(THREE_LINES_APART):
        events.append(event)
        seen_at.append(asyncio.get_running_loop().time())
    assert [e.kind for e in events][-1] == "result"
    chunks = [e for e in events[:-1] if e.kind == "stdout"]
    assert len(chunks) >= 2, events
    result = events[-1].result
    assert result.outcome == "ok"
    assert "".join(c.data for c in chunks) == result.stdout == "line 0\nline 1\nline 2\n"
    # The first chunk came while the run went on: the last line is printed 0.8 s after it.
    assert seen_at[-1] - seen_at[0] >= 0.5


async def test_stream_of_a_quiet_run_is_only_its_result(provider):
    events = [e async for e in provider.stream("1 + 1")]
    assert [e.kind for e in events] == ["result"]
    assert events[0].data.output == 2


async def test_cancelling_the_consuming_task_cancels_the_streamed_run(deadline):
    started = asyncio.Event()
    p = codeact.LocalCodeActProvider(limits={"wall_timeout_ms": 300_000})

    async def consume():
        async for event in p.stream("print('started', flush=True)\nwhile True:\n    pass"):
            if event.kind == "stdout":
                started.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), deadline)
    task.cancel()
    # The stream waits for its run's end before the cancellation propagates: the task ends
    # within the deadline only because the run (300 s of wall clock) was cancelled.
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, deadline)


def test_execute_sync_runs_async_tools_without_a_loop(provider):
    r = provider.execute_sync("print(await add(a=1, b=1))")
    assert r.outcome == "ok" and r.stdout == "2\n"
