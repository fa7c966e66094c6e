"""codeact.smolagents through smolagents' CodeAgent loop with a scripted model: the agent's code
runs in a codeact session instead of LocalPythonExecutor, calls a host tool the smolagents way,
keeps a variable between steps, and ends with final_answer."""

import pytest

smolagents = pytest.importorskip("smolagents", reason="smolagents is not installed")

from smolagents import CodeAgent, tool  # noqa: E402
from smolagents.models import ChatMessage, Model  # noqa: E402

import codeact.smolagents  # noqa: E402


class ScriptedModel(Model):
    def __init__(self, replies):
        super().__init__(model_id="scripted")
        self.replies = list(replies)
        self.prompts = []

    def generate(self, messages, stop_sequences=None, response_format=None,
                 tools_to_call_from=None, **kwargs):
        self.prompts.append(messages)
        return ChatMessage(role="assistant", content=self.replies.pop(0))


def test_code_agent_runs_its_steps_in_codeact():
    calls = []

    @tool
    def get_order(order_id: int) -> dict:
        """Looks an order up.

        Args:
            order_id: The order's number.
        """
        calls.append(order_id)
        return {"id": order_id, "status": "shipped"}

    model = ScriptedModel([
        "Thought: look the order up.\n<code>\norder = get_order(7)\nprint(order['status'])\n</code>",
        "Thought: the state is kept.\n<code>\nfinal_answer(order['status'] + ' (order 7)')\n</code>",
    ])
    executor = codeact.smolagents.CodeActExecutor()
    agent = CodeAgent(tools=[get_order], model=model, executor=executor, max_steps=3)
    answer = agent.run("Where is order 7?")

    assert answer == "shipped (order 7)"
    assert calls == [7]
    observations = [getattr(s, "observations", None) for s in agent.memory.steps]
    assert any(o and "shipped" in o for o in observations), observations
    executor.cleanup()


def test_a_rejected_step_reaches_the_model_as_an_error():
    model = ScriptedModel([
        "<code>\nimport os\nos.system('id')\n</code>",
        "<code>\nfinal_answer('gave up')\n</code>",
    ])
    executor = codeact.smolagents.CodeActExecutor()
    agent = CodeAgent(tools=[], model=model, executor=executor, max_steps=3)
    assert agent.run("Run id") == "gave up"
    errors = [str(getattr(s, "error", "") or "") for s in agent.memory.steps]
    assert any("validation_failed" in e and "os.system" in e for e in errors), errors
    executor.cleanup()


def test_tool_calls_become_awaited_keyword_calls():
    code = codeact.smolagents.await_tool_calls(
        "x = f(1, b=2)\ny = await f(a=3)\nz = g(4)", {"f": ["a", "b"]})
    assert code == "x = await f(a=1, b=2)\ny = await f(a=3)\nz = g(4)"
