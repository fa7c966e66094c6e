"""pydantic-ai adapter: execute_code as a pydantic_ai Tool, or a toolset holding it.

    agent = Agent(model, tools=[codeact.pydantic_ai.execute_code_tool(provider)])
    agent = Agent(model, toolsets=[codeact.pydantic_ai.toolset(provider)])
"""

from pydantic_ai import Tool
from pydantic_ai.toolsets import FunctionToolset

from . import _adapter


def execute_code_tool(provider, session=None):
    async def execute_code(code: str) -> str:
        """Runs Python code; returns codeact's result JSON."""
        return await _adapter.run(provider, code, session)

    return Tool(execute_code, name=_adapter.EXECUTE_CODE,
                description=_adapter.description(provider), takes_ctx=False)


def toolset(provider, session=None):
    return FunctionToolset([execute_code_tool(provider, session)])
