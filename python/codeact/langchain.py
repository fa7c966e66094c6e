"""LangChain / LangGraph adapter: execute_code as a LangChain BaseTool, and a LangGraph ToolNode.

    tool = codeact.langchain.CodeActTool(provider=provider)
    model = chat_model.bind_tools([tool])
    node = codeact.langchain.tool_node(provider)   # langgraph.prebuilt.ToolNode
"""

import asyncio
from typing import Any

from langchain_core.tools import BaseTool
from pydantic import BaseModel, ConfigDict, Field

from . import _adapter


class ExecuteCodeInput(BaseModel):
    code: str = Field(description="Python code to execute.")


class CodeActTool(BaseTool):
    """Runs the model's Python in codeact; returns codeact's result JSON (docs/result.md)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    name: str = _adapter.EXECUTE_CODE
    description: str = ""
    args_schema: Any = ExecuteCodeInput
    provider: Any = None
    session: Any = None

    def __init__(self, *, provider, session=None, **kwargs):
        super().__init__(provider=provider, session=session,
                         description=kwargs.pop("description", None)
                         or _adapter.description(provider), **kwargs)

    def _run(self, code: str, **kwargs) -> str:
        if self.session is not None:
            return asyncio.run(_adapter.run(self.provider, code, self.session))
        return self.provider.execute_sync(code).to_json()

    async def _arun(self, code: str, **kwargs) -> str:
        return await _adapter.run(self.provider, code, self.session)


def tool_node(provider, **kwargs):
    """A LangGraph ToolNode holding the execute_code tool."""
    from langgraph.prebuilt import ToolNode

    return ToolNode([CodeActTool(provider=provider)], **kwargs)
