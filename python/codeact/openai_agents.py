"""OpenAI Agents SDK adapter: execute_code as an agents.FunctionTool.

    agent = Agent(name="coder", tools=[codeact.openai_agents.execute_code_tool(provider)])
"""

import json

from agents import FunctionTool

from . import _adapter


def execute_code_tool(provider, session=None):
    async def on_invoke(ctx, arguments_json: str) -> str:
        try:
            code = json.loads(arguments_json)["code"]
        except (ValueError, KeyError, TypeError):
            # The library's own answer to bad arguments (a validation_failed result).
            code = ""
        return await _adapter.run(provider, code, session)

    return FunctionTool(name=_adapter.EXECUTE_CODE, description=_adapter.description(provider),
                        params_json_schema=dict(_adapter.CODE_SCHEMA), on_invoke_tool=on_invoke,
                        strict_json_schema=True)
