"""What every framework adapter shares: the execute_code tool's name, description and schema as
the library describes them, and one call that runs the model's code and returns the result JSON
(docs/result.md). The adapters only wrap this in each framework's tool type."""

EXECUTE_CODE = "execute_code"
CODE_SCHEMA = {
    "type": "object",
    "properties": {"code": {"type": "string", "description": "Python code to execute."}},
    "required": ["code"],
    "additionalProperties": False,
}


def description(provider):
    """The library's execute_code description for the provider's current configuration."""
    return provider.describe("openai")["definition"]["function"]["description"]


async def run(provider, code, session=None):
    """Runs `code` (in `session` when given) and returns the result JSON text."""
    result = await (session.execute(code) if session is not None else provider.execute(code))
    return result.to_json()
