"""smolagents adapter: a PythonExecutor for CodeAgent, so the agent's code runs in codeact instead
of smolagents' in-process LocalPythonExecutor.

    agent = CodeAgent(tools=[...], model=model, executor=codeact.smolagents.CodeActExecutor())

The steps of one agent share a codeact session (include/codeact/session.hpp), as the steps of
LocalPythonExecutor share its state: a variable from one step is there in the next. smolagents'
code calls tools as plain functions (`get_weather("Oslo")`, `final_answer(x)`); codeact's host
tools are coroutines called by keyword (`await get_weather(city="Oslo")`), so each call of a
tool by name becomes that form before the code is sent (a syntax-only step: the validation and
the run are codeact's, unchanged).
"""

import ast
import asyncio
import json

from smolagents.local_python_executor import CodeOutput, PythonExecutor

from ._provider import LocalCodeActProvider, Tool

FINAL_ANSWER = "final_answer"
_TYPES = {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean",
          "array": "array", "object": "object", "null": "null"}


class CodeActExecutionError(RuntimeError):
    """A step whose run did not end `ok`: the message is what the model is shown."""


def _schema(smol_tool):
    properties, required = {}, []
    for name, spec in (getattr(smol_tool, "inputs", None) or {}).items():
        prop = {}
        if spec.get("type") in _TYPES:
            prop["type"] = _TYPES[spec["type"]]
        if spec.get("description"):
            prop["description"] = spec["description"]
        if spec.get("nullable"):
            prop = {"anyOf": [prop, {"type": "null"}]} if "type" in prop else prop
        else:
            required.append(name)
        properties[name] = prop
    schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


class _AwaitToolCalls(ast.NodeTransformer):
    """`name(a, b=c)` -> `await name(p1=a, b=c)` for each tool name (positional arguments named
    in the tool's input order)."""

    def __init__(self, params):
        self.params = params

    def _keywords(self, call):
        names = self.params[call.func.id]
        if call.args and len(call.args) <= len(names) and \
                not any(isinstance(a, ast.Starred) for a in call.args):
            call.keywords = [ast.keyword(arg=n, value=a) for n, a in zip(names, call.args)] + \
                call.keywords
            call.args = []
        return call

    def _is_tool_call(self, node):
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id in self.params

    def visit_Await(self, node):
        if self._is_tool_call(node.value):
            self.generic_visit(node.value)
            node.value = self._keywords(node.value)
            return node
        return self.generic_visit(node)

    def visit_Call(self, node):
        self.generic_visit(node)
        if self._is_tool_call(node):
            return ast.Await(value=self._keywords(node))
        return node


def await_tool_calls(code, params):
    """`code` with its tool calls in codeact's form; unchanged when it does not parse (codeact's
    validator then reports the syntax error)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    tree = ast.fix_missing_locations(_AwaitToolCalls(params).visit(tree))
    return ast.unparse(tree)


class CodeActExecutor(PythonExecutor):
    def __init__(self, provider=None, **provider_options):
        self._provider = provider
        self._provider_options = provider_options
        self._session = None
        self._tool_names = None
        self._params = {}
        self._pending_variables = {}
        self._final = []

    # -- PythonExecutor --
    def send_tools(self, tools):
        names = sorted(set(tools) | {FINAL_ANSWER})
        if names == self._tool_names:
            return
        if self._provider is None:
            self._provider = LocalCodeActProvider(**self._provider_options)
        for name in (self._tool_names or []):
            self._provider.remove_tool(name)
        host_tools = []
        for name, smol_tool in tools.items():
            if name == FINAL_ANSWER:
                continue
            self._params[name] = list((getattr(smol_tool, "inputs", None) or {}))
            host_tools.append(Tool(_call_smol_tool(smol_tool), name=name,
                                   description=getattr(smol_tool, "description", "") or "",
                                   parameters=_schema(smol_tool)))
        self._params[FINAL_ANSWER] = ["answer"]
        host_tools.append(Tool(self._take_final_answer, name=FINAL_ANSWER,
                               description="Provides the final answer to the task."))
        self._provider.add_tools(host_tools)
        self._tool_names = names
        self._close_session()  # a session keeps the tools it opened with

    def send_variables(self, variables):
        for name, value in variables.items():
            try:
                self._pending_variables[name] = json.dumps(value)
            except (TypeError, ValueError):
                raise TypeError(f"variable {name!r} is not JSON: codeact's runs get data, "
                                "not host objects") from None

    def __call__(self, code_action):
        if self._provider is None:
            self.send_tools({})
        if self._session is None:
            self._session = self._provider._native.open_session("")
        prelude = ""
        if self._pending_variables:
            prelude = "import json as _codeact_json\n" + "".join(
                f"{name} = _codeact_json.loads({text!r})\n"
                for name, text in self._pending_variables.items())
            self._pending_variables = {}
        self._final.clear()
        code = prelude + await_tool_calls(code_action, self._params)
        from ._provider import ExecutionResult
        result = ExecutionResult.from_json(
            self._session.execute(code, None, self._provider._approve))
        logs = result.stdout + (result.stderr if result.stderr else "")
        if result.outcome != "ok":
            raise CodeActExecutionError(_failure_text(result, logs))
        if self._final:
            return CodeOutput(output=self._final[-1], logs=logs, is_final_answer=True)
        return CodeOutput(output=result.output if result.output_present else None, logs=logs,
                          is_final_answer=False)

    def cleanup(self):
        self._close_session()

    # -- helpers --
    def _take_final_answer(self, answer=None):
        self._final.append(answer)
        return answer

    def _close_session(self):
        if self._session is not None:
            self._session.close()
            self._session = None


def _call_smol_tool(smol_tool):
    def call(**kwargs):
        value = smol_tool(**kwargs, sanitize_inputs_outputs=True)
        if asyncio.iscoroutine(value):
            value = asyncio.run(value)
        return value
    return call


def _failure_text(result, logs):
    lines = [f"Code execution failed ({result.outcome})."]
    if result.error:
        lines.append(result.error.get("traceback") or
                     f"{result.error.get('type')}: {result.error.get('message')}")
    for v in result.violations or []:
        lines.append(f"line {v['line']}: {v['message']} ({v['rule']}); {v['hint']}")
    if result.message:
        lines.append(result.message)
    if logs:
        lines.append("Execution logs:\n" + logs)
    return "\n".join(lines)
