"""The LangChain/LangGraph, pydantic-ai and OpenAI Agents SDK adapters, each through the
framework's own agent loop with its scripted or test model and no network: the model "writes" a
program that calls a host tool, and the framework hands codeact's result back to the model."""

import json

import pytest

import codeact

PROGRAM = "order = await get_order(order_id=7)\nprint(order['status'])"


def make_provider(calls):
    async def get_order(order_id: int) -> dict:
        """Looks an order up."""
        calls.append(order_id)
        return {"id": order_id, "status": "shipped"}

    return codeact.LocalCodeActProvider(tools=[get_order])


def assert_shipped(result_json, calls):
    result = json.loads(result_json)
    assert result["outcome"] == "ok", result
    assert result["stdout"] == "shipped\n" and result["tool_calls"] == 1
    assert calls == [7]


# ---- LangChain / LangGraph ------------------------------------------------------------------


# langchain (create_agent) is not among the pins: LangGraph's own prebuilt loop is the one tested.
@pytest.mark.filterwarnings("ignore:create_react_agent has been moved")
async def test_langgraph_react_agent_runs_execute_code():
    pytest.importorskip("langchain_core", reason="langchain-core is not installed")
    prebuilt = pytest.importorskip("langgraph.prebuilt", reason="langgraph is not installed")
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, ToolMessage

    import codeact.langchain

    class ScriptedChatModel(GenericFakeChatModel):
        def bind_tools(self, tools, **kwargs):
            self.__dict__["bound"] = [t.name for t in tools]
            return self

    calls = []
    provider = make_provider(calls)
    model = ScriptedChatModel(messages=iter([
        AIMessage(content="", tool_calls=[
            {"name": "execute_code", "args": {"code": PROGRAM}, "id": "call-1"}]),
        AIMessage(content="Your order has shipped."),
    ]))
    agent = prebuilt.create_react_agent(model, codeact.langchain.tool_node(provider))
    state = await agent.ainvoke({"messages": [("user", "Where is order 7?")]})

    assert model.__dict__["bound"] == ["execute_code"]
    tool_messages = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert len(tool_messages) == 1 and tool_messages[0].tool_call_id == "call-1"
    assert_shipped(tool_messages[0].content, calls)
    assert state["messages"][-1].content == "Your order has shipped."


def test_langchain_tool_runs_synchronously_too():
    pytest.importorskip("langchain_core", reason="langchain-core is not installed")
    import codeact.langchain

    calls = []
    tool = codeact.langchain.CodeActTool(provider=make_provider(calls))
    assert tool.name == "execute_code" and "get_order(" in tool.description
    assert_shipped(tool.invoke({"code": PROGRAM}), calls)


# ---- pydantic-ai --------------------------------------------------------------------------------


async def test_pydantic_ai_agent_with_a_function_model():
    pydantic_ai = pytest.importorskip("pydantic_ai", reason="pydantic-ai-slim is not installed")
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    import codeact.pydantic_ai

    calls = []
    seen = {}

    def model(messages, info):
        seen.setdefault("tools", [t.name for t in info.function_tools])
        returns = [p for m in messages for p in getattr(m, "parts", [])
                   if isinstance(p, ToolReturnPart)]
        if not returns:
            return ModelResponse(parts=[ToolCallPart("execute_code", {"code": PROGRAM}, "call-1")])
        seen["result"] = returns[0].content
        return ModelResponse(parts=[TextPart("Your order has shipped.")])

    agent = pydantic_ai.Agent(FunctionModel(model),
                              toolsets=[codeact.pydantic_ai.toolset(make_provider(calls))])
    run = await agent.run("Where is order 7?")
    assert run.output == "Your order has shipped."
    assert seen["tools"] == ["execute_code"]
    assert_shipped(seen["result"], calls)


async def test_pydantic_ai_test_model_calls_the_tool():
    pydantic_ai = pytest.importorskip("pydantic_ai", reason="pydantic-ai-slim is not installed")
    from pydantic_ai.models.test import TestModel

    import codeact.pydantic_ai

    # TestModel calls every tool with generated arguments: a string that is not a program.
    agent = pydantic_ai.Agent(TestModel(), tools=[
        codeact.pydantic_ai.execute_code_tool(make_provider([]))])
    run = await agent.run("anything")
    results = json.loads(json.loads(run.output)["execute_code"])
    assert results["outcome"] in ("ok", "error", "validation_failed"), results


# ---- OpenAI Agents SDK ------------------------------------------------------------------------


async def test_openai_agents_runner_with_a_fake_model():
    agents = pytest.importorskip("agents", reason="openai-agents is not installed")
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText)

    import codeact.openai_agents

    agents.set_tracing_disabled(True)
    seen = {}

    class FakeModel(Model):
        async def get_response(self, system_instructions, input, model_settings, tools,
                               output_schema, handoffs, tracing, **kwargs):
            seen.setdefault("tools", [t.name for t in tools])
            outputs = [i for i in input if isinstance(i, dict)
                       and i.get("type") == "function_call_output"] if isinstance(input, list) else []
            if not outputs:
                out = [ResponseFunctionToolCall(type="function_call", call_id="call-1",
                                                name="execute_code",
                                                arguments=json.dumps({"code": PROGRAM}))]
            else:
                seen["result"] = outputs[0]["output"]
                out = [ResponseOutputMessage(
                    id="msg-1", type="message", role="assistant", status="completed",
                    content=[ResponseOutputText(type="output_text", text="Your order has shipped.",
                                                annotations=[])])]
            return ModelResponse(output=out, usage=Usage(), response_id=None)

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError

    calls = []
    agent = agents.Agent(name="support", model=FakeModel(),
                         tools=[codeact.openai_agents.execute_code_tool(make_provider(calls))])
    run = await agents.Runner.run(agent, "Where is order 7?")
    assert run.final_output == "Your order has shipped."
    assert seen["tools"] == ["execute_code"]
    assert_shipped(seen["result"], calls)
