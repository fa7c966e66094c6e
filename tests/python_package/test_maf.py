"""codeact.maf through Microsoft Agent Framework's own agent loop (Agent + FunctionInvocationLayer),
with a scripted ChatClient: the model "writes" a program that calls a host tool, MAF runs the
execute_code tool, and the next model turn receives codeact's result."""

import inspect
import json

import pytest

af = pytest.importorskip("agent_framework", reason="agent-framework-core is not installed")
afh = pytest.importorskip("agent_framework_hyperlight",
                          reason="agent-framework-hyperlight is not installed")

from agent_framework import (  # noqa: E402
    Agent, BaseChatClient, ChatResponse, Content, FunctionInvocationLayer, FunctionTool, Message)

import codeact.maf  # noqa: E402


class ScriptedClient(FunctionInvocationLayer, BaseChatClient):
    """Each turn answers with the next scripted reply; it records what it was sent."""

    def __init__(self, replies):
        super().__init__()
        self.replies = list(replies)
        self.seen = []

    def _inner_get_response(self, *, messages, stream, options, **kwargs):
        assert not stream

        async def respond():
            self.seen.append({"messages": list(messages), "options": dict(options)})
            reply = self.replies.pop(0)
            return ChatResponse(messages=[reply(messages) if callable(reply) else reply])

        return respond()


def call_execute_code(code):
    return Message(role="assistant", contents=[
        Content.from_function_call(call_id="call-1", name="execute_code",
                                   arguments=json.dumps({"code": code}))])


def function_results(messages):
    return [c for m in messages for c in m.contents if c.type == "function_result"]


async def test_maf_agent_runs_codeact_and_the_model_gets_the_tool_result():
    calls = []

    async def get_weather(city: str) -> dict:
        """The weather in a city."""
        calls.append(city)
        return {"city": city, "temp_c": 18}

    provider = codeact.maf.CodeActProvider(tools=[get_weather])
    client = ScriptedClient([
        call_execute_code("w = await get_weather(city='Bergen')\nprint(w['temp_c'])"),
        lambda messages: Message(role="assistant", contents=["It is 18 degrees."]),
    ])
    agent = Agent(client, instructions="Be brief.", context_providers=[provider])
    response = await agent.run("Weather in Bergen?")

    assert response.text == "It is 18 degrees."
    assert calls == ["Bergen"]
    # The first model call was offered execute_code with codeact's description and instructions.
    first = client.seen[0]
    offered = [t.name for t in first["options"].get("tools", [])]
    assert offered == ["execute_code"]
    assert "get_weather(" in first["options"]["tools"][0].description
    assert "execute_code" in (first["options"].get("instructions") or "") or any(
        "execute_code" in str(m.text) for m in first["messages"] if m.role == "system")
    # The second model call received codeact's result for the call.
    results = function_results(client.seen[1]["messages"])
    assert len(results) == 1 and results[0].call_id == "call-1"
    payload = results[0].result
    if not isinstance(payload, str):
        payload = "".join(getattr(c, "text", "") or "" for c in payload)
    result = json.loads(payload)
    assert result["outcome"] == "ok" and result["stdout"] == "18\n" and result["tool_calls"] == 1


async def test_a_maf_function_tool_is_a_host_tool_and_its_approval_gates_execute_code():
    def delete_file(path: str) -> str:
        return f"deleted {path}"

    gated = FunctionTool(func=delete_file, name="delete_file", description="Deletes a file.",
                         approval_mode="always_require")
    provider = codeact.maf.CodeActProvider(tools=[gated])
    tool = provider.execute_code_tool
    assert tool.approval_mode == "always_require"
    provider.remove_tool("delete_file")
    assert tool.approval_mode == "never_require"
    provider.add_tools(FunctionTool(func=delete_file, name="delete_file"))
    text = await tool._run_code("print(await delete_file(path='/tmp/x'))")
    assert json.loads(text)["stdout"] == "deleted /tmp/x\n"


async def test_files_written_to_output_come_back(tmp_path):
    (tmp_path / "data.txt").write_text("input data")
    provider = codeact.maf.CodeActProvider(workspace_root=tmp_path)
    result = json.loads(await provider.execute_code_tool._run_code(
        "text = open('/input/data.txt').read()\nopen('/output/copy.txt', 'w').write(text.upper())"))
    assert result["outcome"] == "ok", result
    assert [f["path"] for f in result["files"]] == ["/output/copy.txt"]


def test_every_agent_framework_hyperlight_option_is_accepted_by_name():
    theirs = inspect.signature(afh.HyperlightCodeActProvider.__init__).parameters
    ours = inspect.signature(codeact.maf.CodeActProvider.__init__).parameters
    missing = [n for n in theirs if n not in ours and n not in ("_registry",)]
    assert missing == [], missing
    # source_id differs on purpose: "codeact" (docs/python.md).
    for name in ("tool_description_format", "max_output_files", "max_output_file_bytes",
                 "max_output_total_bytes", "backend", "module", "module_path"):
        assert ours[name].default == theirs[name].default, name
    their_tool = inspect.signature(afh.HyperlightExecuteCodeTool.__init__).parameters
    our_tool = inspect.signature(codeact.maf.CodeActExecuteCodeTool.__init__).parameters
    assert [n for n in their_tool if n not in our_tool and n != "_registry"] == []
    methods = [m for m in dir(afh.HyperlightCodeActProvider)
               if not m.startswith("_") and callable(getattr(afh.HyperlightCodeActProvider, m))]
    assert [m for m in methods if not hasattr(codeact.maf.CodeActProvider, m)] == []


def test_options_codeact_cannot_honour_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="compact"):
        codeact.maf.CodeActProvider(tool_description_format="json")
    with pytest.raises(ValueError, match="guest"):
        codeact.maf.CodeActProvider(module_path="/opt/guest.wasm")
    with pytest.raises(TypeError, match="_registry"):
        codeact.maf.CodeActProvider(_registry=object())


def test_the_output_directory_is_removed_with_the_tool_and_at_the_interpreters_exit():
    # Removed when the tool goes, and at the exit of an interpreter that still holds it (a
    # module-level provider).
    import gc
    import os
    import subprocess
    import sys

    provider = codeact.maf.CodeActProvider()
    output = provider.execute_code_tool._output_dir
    assert os.path.isdir(output)
    del provider
    gc.collect()
    assert not os.path.exists(output)

    kept = subprocess.run(
        [sys.executable, "-c", "import codeact.maf\n"
         "provider = codeact.maf.CodeActProvider()\n"
         "print(provider.execute_code_tool._output_dir)\n"],
        capture_output=True, text=True, timeout=120, check=True)
    output = kept.stdout.strip()
    assert output.startswith("/"), kept.stderr
    assert not os.path.exists(output)
