"""codeact for Python: the C++ runtime's provider, sessions and host tools (docs/python.md).

    import asyncio, codeact

    async def add(a: int, b: int) -> int:
        return a + b

    provider = codeact.LocalCodeActProvider(tools=[add])
    result = asyncio.run(provider.execute("print(await add(a=1, b=2))"))
    print(result.outcome, result.stdout)

Everything that runs, validates and describes is the native module (codeact._native, the C++
library bound with pybind11); this package adds the type-hint-to-schema step and the adapters
(codeact.maf, codeact.langchain, codeact.smolagents, codeact.pydantic_ai, codeact.openai_agents).
"""

import os as _os
import pkgutil as _pkgutil

# A build tree's native module (<build>/python_module/codeact) joins this package when that
# directory is on sys.path too (the test build's pytest suites).
__path__ = _pkgutil.extend_path(__path__, __name__)

# An installed wheel carries the runtime under _runtime/: the library finds it through its own
# variables (src/common/data_dir.cpp), unless the caller set them already.
_runtime = _os.path.join(_os.path.dirname(__file__), "_runtime")
if _os.path.isdir(_runtime):
    for _name, _path in (
        ("CODEACT_DATA_DIR", "share"),
        ("CODEACT_SANDBOX_LAUNCHER", "libexec/codeact-sandbox"),
        ("CODEACT_GUARD_MODULE", "libexec/_codeact_guard.so"),
        ("CODEACT_PYTHON_MODULE", "libexec/codeact_python.so"),
        ("CODEACT_EGRESS_MODULE", "libexec/codeact_egress.so"),
    ):
        _os.environ.setdefault(_name, _os.path.join(_runtime, _path))

from ._provider import (  # noqa: E402
    CapturedFile,
    CodeActError,
    CodeActProvider,
    ExecutionResult,
    HyperlightCodeActProvider,
    LocalCodeActProvider,
    Session,
    StreamEvent,
    Tool,
    tool,
)
from ._schema import schema_from_callable  # noqa: E402

try:
    from importlib.metadata import version as _version

    __version__ = _version("codeact")
except Exception:  # a build tree, not an installed distribution
    __version__ = "0+build"

__all__ = [
    "CapturedFile",
    "CodeActError",
    "CodeActProvider",
    "ExecutionResult",
    "HyperlightCodeActProvider",
    "LocalCodeActProvider",
    "Session",
    "StreamEvent",
    "Tool",
    "schema_from_callable",
    "tool",
]
