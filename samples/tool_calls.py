# Agent-style code: several host tool calls in one execute_code block, so the model gets every
# answer in one round trip instead of one per call, and a failed call does not lose the others.
# Run: codeact run --tools samples/tools/tools.json samples/tool_calls.py
import asyncio

# Independent calls run concurrently; `add(...)` and `call_tool("add", ...)` are the same call.
sums = await asyncio.gather(add(a=1, b=2), add(a=10, b=20), call_tool("add", a=0.5, b=0.25))
print("sums:", sums)

# A dependent call passes an earlier result explicitly.
total = await add(a=sums[0], b=sums[1])
print("total:", total)

# A failed call raises ToolError; catching it lets the block report the failure and go on.
try:
    await add(a=1)  # "b" is missing: the bridge checks the arguments against add's schema
except ToolError as e:
    # The error names the field; a command tool's own failure would carry its stderr.
    print("add failed:", e.error_type, "-", e.message.splitlines()[-1])

{"sums": sums, "total": total}
