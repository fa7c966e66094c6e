"""Microsoft Agent Framework (Python) adapter: a context provider and an execute_code tool with
the option names of agent-framework-hyperlight's HyperlightCodeActProvider, so that switching is
one line:

    from agent_framework_hyperlight import HyperlightCodeActProvider   # before
    from codeact.maf import CodeActProvider as HyperlightCodeActProvider  # after

docs/python.md has the table of every option and its codeact counterpart. An option codeact
cannot honour is refused with the reason, never dropped.
"""

import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from agent_framework import ContextProvider, FunctionTool

from ._provider import CodeActProvider as _CoreProvider
from ._provider import LocalCodeActProvider, HyperlightCodeActProvider as _HyperlightProvider
from ._provider import Tool

DEFAULT_MAX_OUTPUT_FILES = 20
DEFAULT_MAX_OUTPUT_FILE_BYTES = 5 * 1024 * 1024
DEFAULT_MAX_OUTPUT_TOTAL_BYTES = 20 * 1024 * 1024
# agent-framework-hyperlight's defaults for its SDK's guest: accepted (they describe what
# codeact's hyperlight backend runs too); any other value is refused.
_HYPERLIGHT_BACKEND = "wasm"
_HYPERLIGHT_MODULE = "python_guest.path"

EXECUTE_CODE_INPUT_SCHEMA = {
    "type": "object",
    "properties": {"code": {"type": "string", "description": "Python code to execute."}},
    "required": ["code"],
}


class FileMount(NamedTuple):
    """A host file or directory, read-only under /input (agent-framework-hyperlight's FileMount)."""

    host_path: "str | Path"
    mount_path: str


class AllowedDomain(NamedTuple):
    """One outbound target, optionally limited to some HTTP methods."""

    target: str
    methods: "tuple[str, ...] | None" = None


def _as_list(value):
    if value is None:
        return []
    if isinstance(value, (str, bytes, FileMount, AllowedDomain, FunctionTool)) or callable(value):
        return [value]
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], str) and \
            not isinstance(value[0], tuple):
        return [value]
    return list(value)


def _input_path(mount_path):
    parts = [p for p in mount_path.strip().replace("\\", "/").split("/") if p not in ("", ".")]
    if parts and parts[0] == "input":
        parts = parts[1:]
    if not parts or ".." in parts:
        raise ValueError("mount_path must point to a concrete path under /input.")
    return "/input/" + "/".join(parts)


def _file_mount(item):
    if isinstance(item, FileMount):
        return FileMount(str(item.host_path), _input_path(item.mount_path))
    if isinstance(item, (str, Path)):
        path = Path(item)
        return FileMount(str(path), _input_path(path.name))
    host, mount = item
    return FileMount(str(host), _input_path(mount))


def _allowed_domain(item):
    if isinstance(item, str):
        return AllowedDomain(item.strip(), None)
    target, methods = (item.target, item.methods) if isinstance(item, AllowedDomain) else item
    if isinstance(methods, str):
        methods = (methods,)
    return AllowedDomain(target.strip(),
                         tuple(sorted({m.upper() for m in methods})) if methods else None)


def _host_tool(item):
    """A MAF FunctionTool (or a plain callable) as a codeact host tool."""
    if not isinstance(item, FunctionTool):
        return Tool(item), False
    tool = item

    async def call(**kwargs):
        result = await tool.invoke(arguments=kwargs)
        return _plain(result)

    schema = tool.parameters() if callable(getattr(tool, "parameters", None)) else None
    gated = getattr(tool, "approval_mode", None) == "always_require"
    return Tool(call, name=tool.name, description=tool.description or "",
                parameters=schema or {"type": "object", "properties": {}},
                requires_approval=gated), gated


def _plain(value):
    """A FunctionTool's result as JSON-able data (MAF may hand back Content items)."""
    if isinstance(value, list):  # invoke() gives Content items: one is the value itself
        return _plain(value[0]) if len(value) == 1 else [_plain(v) for v in value]
    text = getattr(value, "text", None)
    if text is not None and getattr(value, "type", None) == "text":
        try:
            return json.loads(text)
        except ValueError:
            return text
    if hasattr(value, "to_dict") and not isinstance(value, dict):
        return value.to_dict()
    return value


class CodeActExecuteCodeTool(FunctionTool):
    """The execute_code FunctionTool over a codeact provider (HyperlightExecuteCodeTool's
    counterpart, with its keyword arguments). Its result is codeact's result JSON
    (docs/result.md): stdout, stderr, exit_code and success as in Hyperlight CodeAct, plus the
    rest of the contract; files written to /output are in `files`."""

    def __init__(
        self,
        *,
        tools=None,
        tool_description_format="compact",
        approval_mode=None,
        workspace_root=None,
        file_mounts=None,
        allowed_domains=None,
        max_output_files=DEFAULT_MAX_OUTPUT_FILES,
        max_output_file_bytes=DEFAULT_MAX_OUTPUT_FILE_BYTES,
        max_output_total_bytes=DEFAULT_MAX_OUTPUT_TOTAL_BYTES,
        backend=_HYPERLIGHT_BACKEND,
        module=_HYPERLIGHT_MODULE,
        module_path=None,
        codeact_backend="local",
        **codeact_options,
    ):
        if tool_description_format != "compact":
            raise ValueError(
                "tool_description_format: codeact describes host tools as Python signatures "
                "(the library's description, the same on every surface); only \"compact\" applies")
        if backend != _HYPERLIGHT_BACKEND or module != _HYPERLIGHT_MODULE or module_path is not None:
            raise ValueError(
                "backend/module/module_path choose agent-framework-hyperlight's guest; codeact's "
                "hyperlight backend runs its own (docs/hyperlight.md): use codeact_backend="
                "\"hyperlight\" and leave these at their defaults")
        for name, value in (("max_output_files", max_output_files),
                            ("max_output_file_bytes", max_output_file_bytes),
                            ("max_output_total_bytes", max_output_total_bytes)):
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive integer.")
        if approval_mode not in (None, "never_require", "always_require"):
            raise ValueError("approval_mode must be never_require or always_require")
        if workspace_root is not None and not Path(workspace_root).is_dir():
            raise ValueError("workspace_root must point to an existing directory.")
        self._default_approval_mode = approval_mode or "never_require"
        self._lock = threading.RLock()
        self._tools = {}
        self._gated = set()
        self._file_mounts = {}
        self._allowed_domains = {}
        self._output_dir = tempfile.mkdtemp(prefix="codeact-maf-output-")
        limits = dict(codeact_options.pop("limits", None) or {})
        limits.update(max_capture_files=max_output_files,
                      max_capture_file_bytes=max_output_file_bytes,
                      max_capture_total_bytes=max_output_total_bytes)
        provider_type = {"local": LocalCodeActProvider,
                         "hyperlight": _HyperlightProvider}.get(codeact_backend)
        if provider_type is None:
            raise ValueError("codeact_backend must be local or hyperlight")
        self._codeact_backend = codeact_backend
        self._provider: _CoreProvider = provider_type(limits=limits, **codeact_options)
        if codeact_backend == "local":
            self._provider.add_mount({"host_path": self._output_dir, "mount_path": "/output",
                                      "write_bytes_limit": max_output_total_bytes})
            if workspace_root is not None:
                self._provider.add_mount({"host_path": str(Path(workspace_root).resolve()),
                                          "mount_path": "/input", "mode": "ro"})
        elif workspace_root is not None or file_mounts:
            raise ValueError("codeact's hyperlight backend takes its inputs as codeact options "
                             "(hyperlight inputs), not as mounts")
        self._workspace_root = workspace_root
        super().__init__(name="execute_code", description="", approval_mode="never_require",
                         func=self._run_code, input_model=EXECUTE_CODE_INPUT_SCHEMA)
        if tools is not None:
            self.add_tools(tools)
        if file_mounts is not None:
            self.add_file_mounts(file_mounts)
        if allowed_domains is not None:
            self.add_allowed_domains(allowed_domains)
        self._refresh_approval_mode()

    def __del__(self):
        shutil.rmtree(getattr(self, "_output_dir", ""), ignore_errors=True)

    # -- the description the model sees is the library's --
    @property
    def description(self):
        provider = self.__dict__.get("_provider")
        if provider is None:
            return self.__dict__.get("_description_text", "")
        return provider.describe("openai")["definition"]["function"]["description"]

    @description.setter
    def description(self, value):
        self.__dict__["_description_text"] = value

    def build_instructions(self, *, tools_visible_to_model):
        return self._provider.instructions(tools_visible_to_model=tools_visible_to_model)

    def create_run_tool(self):
        """The tool for one agent run: this one (the library binds each run to a snapshot)."""
        return self

    def build_serializable_state(self):
        return {"tools": sorted(self._tools), "file_mounts": sorted(self._file_mounts),
                "allowed_domains": sorted(self._allowed_domains),
                "backend": self._codeact_backend}

    @property
    def codeact_provider(self):
        """The codeact provider underneath (sessions, describe, limits)."""
        return self._provider

    # -- runs --
    async def _run_code(self, code: str) -> str:
        with self._lock:
            _clear(self._output_dir)
        # MAF asked for approval (this tool's approval_mode) before calling it.
        result = await self._provider.execute(code, approved=True)
        return result.to_json()

    def _refresh_approval_mode(self):
        gated = self._default_approval_mode == "always_require" or bool(self._gated)
        self.approval_mode = "always_require" if gated else "never_require"

    # -- tools --
    def add_tools(self, tools):
        with self._lock:
            for item in _as_list(tools):
                tool, gated = _host_tool(item)
                self._provider.add_tools([tool])
                self._tools[tool.name] = item
                (self._gated.add if gated else self._gated.discard)(tool.name)
            self._refresh_approval_mode()

    def get_tools(self):
        with self._lock:
            return [t if isinstance(t, FunctionTool) else FunctionTool(func=t, name=n)
                    for n, t in sorted(self._tools.items())]

    def remove_tool(self, name):
        with self._lock:
            self._provider.remove_tool(name)
            self._tools.pop(name, None)
            self._gated.discard(name)
            self._refresh_approval_mode()

    def clear_tools(self):
        with self._lock:
            for name in list(self._tools):
                self.remove_tool(name)

    # -- file mounts (read-only under /input) --
    def add_file_mounts(self, file_mounts):
        with self._lock:
            for item in _as_list(file_mounts):
                mount = _file_mount(item)
                self._provider.add_mount({"host_path": str(Path(mount.host_path).resolve()),
                                          "mount_path": mount.mount_path, "mode": "ro"})
                self._file_mounts[mount.mount_path] = mount

    def get_file_mounts(self):
        with self._lock:
            return [self._file_mounts[k] for k in sorted(self._file_mounts)]

    def remove_file_mount(self, mount_path):
        with self._lock:
            path = _input_path(mount_path)
            self._provider.remove_mount(path)
            self._file_mounts.pop(path, None)

    def clear_file_mounts(self):
        with self._lock:
            for path in list(self._file_mounts):
                self.remove_file_mount(path)

    # -- outbound targets --
    def add_allowed_domains(self, domains):
        with self._lock:
            for item in _as_list(domains):
                domain = _allowed_domain(item)
                target = domain.target + (":" + ",".join(domain.methods) if domain.methods else "")
                self._provider.add_network_target(target)
                self._allowed_domains[domain.target] = (domain, target)

    def get_allowed_domains(self):
        with self._lock:
            return [d for d, _ in (self._allowed_domains[k] for k in sorted(self._allowed_domains))]

    def remove_allowed_domain(self, domain):
        with self._lock:
            entry = self._allowed_domains.pop(domain.strip(), None)
            if entry is not None:
                self._provider.remove_network_target(entry[1])

    def clear_allowed_domains(self):
        with self._lock:
            for domain in list(self._allowed_domains):
                self.remove_allowed_domain(domain)


def _clear(directory):
    for entry in os.scandir(directory):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            os.unlink(entry.path)


class CodeActProvider(ContextProvider):
    """MAF context provider that gives each agent run codeact's instructions and its
    execute_code tool (HyperlightCodeActProvider's counterpart, same keyword arguments; the
    codeact-only ones are `codeact_backend` and any LocalCodeActProvider option, e.g. `limits`,
    `isolation`)."""

    DEFAULT_SOURCE_ID = "codeact"

    def __init__(
        self,
        source_id: str = DEFAULT_SOURCE_ID,
        *,
        tools: "FunctionTool | Callable[..., Any] | Sequence[FunctionTool | Callable[..., Any]] | None" = None,
        tool_description_format="compact",
        approval_mode=None,
        workspace_root=None,
        file_mounts=None,
        allowed_domains=None,
        max_output_files: int = DEFAULT_MAX_OUTPUT_FILES,
        max_output_file_bytes: int = DEFAULT_MAX_OUTPUT_FILE_BYTES,
        max_output_total_bytes: int = DEFAULT_MAX_OUTPUT_TOTAL_BYTES,
        backend: str = _HYPERLIGHT_BACKEND,
        module: "str | None" = _HYPERLIGHT_MODULE,
        module_path: "str | None" = None,
        **codeact_options,
    ) -> None:
        if "_registry" in codeact_options:
            raise TypeError("_registry is agent-framework-hyperlight's test hook; codeact has none")
        super().__init__(source_id)
        self._execute_code_tool = CodeActExecuteCodeTool(
            tools=tools, tool_description_format=tool_description_format,
            approval_mode=approval_mode, workspace_root=workspace_root, file_mounts=file_mounts,
            allowed_domains=allowed_domains, max_output_files=max_output_files,
            max_output_file_bytes=max_output_file_bytes,
            max_output_total_bytes=max_output_total_bytes, backend=backend, module=module,
            module_path=module_path, **codeact_options)

    @property
    def execute_code_tool(self):
        return self._execute_code_tool

    def add_tools(self, tools):
        self._execute_code_tool.add_tools(tools)

    def get_tools(self):
        return self._execute_code_tool.get_tools()

    def remove_tool(self, name):
        self._execute_code_tool.remove_tool(name)

    def clear_tools(self):
        self._execute_code_tool.clear_tools()

    def add_file_mounts(self, file_mounts):
        self._execute_code_tool.add_file_mounts(file_mounts)

    def get_file_mounts(self):
        return self._execute_code_tool.get_file_mounts()

    def remove_file_mount(self, mount_path):
        self._execute_code_tool.remove_file_mount(mount_path)

    def clear_file_mounts(self):
        self._execute_code_tool.clear_file_mounts()

    def add_allowed_domains(self, domains):
        self._execute_code_tool.add_allowed_domains(domains)

    def get_allowed_domains(self):
        return self._execute_code_tool.get_allowed_domains()

    def remove_allowed_domain(self, domain):
        self._execute_code_tool.remove_allowed_domain(domain)

    def clear_allowed_domains(self):
        self._execute_code_tool.clear_allowed_domains()

    async def before_run(self, *, agent, session, context, state) -> None:
        """Adds codeact's instructions and the execute_code tool to the run."""
        run_tool = self._execute_code_tool.create_run_tool()
        state[self.source_id] = run_tool.build_serializable_state()
        context.extend_instructions(
            self.source_id, run_tool.build_instructions(tools_visible_to_model=False))
        context.extend_tools(self.source_id, [run_tool])


# The names agent-framework-hyperlight exports, for a one-line switch of the import.
HyperlightCodeActProvider = CodeActProvider
HyperlightExecuteCodeTool = CodeActExecuteCodeTool

__all__ = ["AllowedDomain", "CodeActExecuteCodeTool", "CodeActProvider", "FileMount",
           "HyperlightCodeActProvider", "HyperlightExecuteCodeTool"]
