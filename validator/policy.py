"""Validator policy: the default lists (the single source of truth) and their compiled form.

The C++ host (include/codeact/policy.hpp) passes a plain dict whose keys are POLICY_KEYS. A list
given under allowed_imports / blocked_builtins / allowed_dunder_attributes REPLACES the default
list; extra_allowed_imports / extra_blocked_imports adjust whichever import list is in force,
and a blocked import always wins over an allowed one.

Everything else in this file is fixed policy that a dict cannot change: names that are never
allowed (`__builtins__`), frame and code internals, module pivots and the `os` restriction.
Those protect the meaning of the configurable lists (an allowed module must not hand out a
blocked one) rather than express a preference.
"""

from . import modules


# --- Imports -------------------------------------------------------------------------------

# Pure, side-effect-free modules that agent code really uses. An entry allows
# exactly that dotted name. A submodule needs its own entry (`collections.abc`), or a wildcard
# entry `pkg.*` that allows `pkg` and every public submodule below it. The defaults use no
# wildcard on purpose: a new submodule is a new review.
DEFAULT_ALLOWED_IMPORTS = (
    "math", "cmath", "statistics", "json", "csv", "io", "re", "string", "textwrap",
    "datetime", "zoneinfo", "time", "calendar", "collections", "itertools", "functools",
    "operator", "typing", "dataclasses", "enum", "abc", "contextlib", "copy", "pprint",
    "decimal", "fractions", "numbers", "random", "heapq", "bisect", "array", "base64",
    "binascii", "hashlib", "hmac", "uuid", "zlib", "difflib", "unicodedata", "asyncio",
    "pathlib", "os", "secrets",
    # Pure submodules of the above.
    "collections.abc", "os.path", "json.decoder", "json.encoder",
)

# Process, network, introspection, serialisation and native modules. These stay blocked when
# a wildcard or a parent package would otherwise allow them; naming one exactly in an allow
# list (e.g. extra_allowed_imports=["threading"]) allows it. `os` is listed although it is
# allowed by default: its use is then limited to os.environ and os.path (rule os-attribute).
DEFAULT_BLOCKED_MODULES = (
    "sys", "subprocess", "socket", "ssl", "ctypes", "importlib", "builtins",
    "multiprocessing", "threading", "signal", "resource", "pty", "shutil", "pickle",
    "marshal", "shelve", "gc", "inspect", "code", "codeop", "types", "ast", "dis", "os",
    "posix", "nt", "pwd", "grp", "fcntl", "mmap", "select", "selectors",
    "asyncio.subprocess", "_thread", "_io", "_posixsubprocess", "concurrent", "runpy",
    "pkgutil", "zipimport", "sysconfig", "tempfile", "webbrowser", "urllib", "http",
    "ftplib", "smtplib", "telnetlib", "xmlrpc", "socketserver", "bltns",
)

# The child's own modules beside the runner (resources/) and the validator staged there: they
# are importable in the child, so an import of one is never "not available".
RUNNER_MODULES = frozenset({
    "runner", "runner_cold", "runner_session", "runner_state", "runner_verdict", "runner_zygote",
    "codeact_protocol", "codeact_convert", "hyperlight_guest", "hyperlight_worker", "validator",
})


def _stdlib_modules():
    import sys
    return frozenset(getattr(sys, "stdlib_module_names", ()))


_STDLIB_MODULES = _stdlib_modules()

# `from __future__ import ...` is a compiler directive, not a module the code can use.
ALWAYS_ALLOWED_IMPORTS = frozenset({"__future__"})

# Shown in the hint of import-blocked for the modules agents reach for most often.
MODULE_HINTS = {
    "sys": "`import sys` gives a read-only view (version, version_info, platform, maxsize, "
           "byteorder, float_info, int_info, argv, stdout/stderr write and flush, getsizeof, "
           "getrecursionlimit); its submodules and internals are not available",
    "subprocess": "processes cannot be started; use `await call_tool(...)` to reach host "
                  "capabilities",
    "threading": "use asyncio (asyncio.gather, asyncio.create_task) for concurrency",
    "multiprocessing": "use asyncio (asyncio.gather, asyncio.create_task) for concurrency",
    "concurrent": "use asyncio (asyncio.gather, asyncio.create_task) for concurrency",
    "pickle": "use json to serialise data",
    "marshal": "use json to serialise data",
    "shelve": "use json to serialise data",
    "shutil": "use pathlib (Path.read_text, Path.write_text, Path.unlink) for files",
    "tempfile": "write files under the working directory or a mounted folder with pathlib",
    "importlib": "use a plain import statement of an allowed module",
    "ctypes": "native code is not available; compute in Python or use struct/array",
    "socket": "there is no network; use the host's tools through `await call_tool(...)`",
    "signal": "use asyncio.wait_for(...) for timeouts",
    "inspect": "use isinstance(), type(x).__name__ and the object's public attributes",
    "types": "use isinstance() and collections.abc; types.SimpleNamespace: write a small class "
             "or a dataclass",
    "gc": "memory is managed for you; delete references with `del name`",
    "resource": "the sandbox sets the limits; the description lists them",
    "builtins": "use the builtins directly by name",
    "code": "write the code directly instead of building it as a string",
    "codeop": "write the code directly instead of building it as a string",
    "ast": "parse data with json.loads, int(), float() or re",
    "dis": "there is no bytecode access; print() what you need to see",
    "os.path": "use pathlib.Path",
}

# The hint for a module that is not available (a third-party package, a module off the list).
UNAVAILABLE_MODULE_HINT = ("%s is not available here: write the code with the allowed modules, "
                           "or import it inside `try:` with an `except ImportError:` fallback "
                           "that does without it")

# --- Builtins and names ----------------------------------------------------------------------

DEFAULT_BLOCKED_BUILTINS = (
    "eval", "exec", "compile", "__import__", "globals", "locals", "vars", "dir", "getattr",
    "setattr", "delattr", "hasattr", "breakpoint", "help", "input", "memoryview",
    "__build_class__", "exit", "quit",
)

# Never allowed, whatever the policy says: they hand out the builtins or the import machinery.
ALWAYS_BLOCKED_NAMES = frozenset({"__builtins__", "__loader__", "__spec__"})

BUILTIN_HINTS = {
    "eval": "write the expression directly; to parse data use json.loads or int()/float()",
    "exec": "write the code directly instead of building it as a string",
    "compile": "write the code directly instead of building it as a string",
    "__import__": "use a plain import statement of an allowed module",
    "globals": "keep shared values in your own dict",
    "locals": "keep shared values in your own dict",
    "vars": "vars(obj) (one argument) gives a read-only copy of an instance's public "
            "attributes; dataclasses.asdict(obj) for a dataclass, or a to_dict() method",
    "dir": "use the documented attributes directly; vars(obj) copies an instance's public "
           "attributes",
    "getattr": "call getattr(obj, \"name\", default) with the name as a string literal, or "
               "keep values in a dict (d.get(key, default))",
    "setattr": "assign attributes directly (obj.name = value) or keep values in a dict",
    "delattr": "delete attributes directly (del obj.name) or keep values in a dict",
    "hasattr": "call hasattr(obj, \"name\") with the name as a string literal, or keep "
               "values in a dict and test `key in d`",
    "breakpoint": "there is no debugger; print() what you need to see",
    "help": "there is no interactive help; the tool description lists what is available",
    "input": "stdin is closed; pass data as literals or fetch it with `await call_tool(...)`",
    "memoryview": "use bytes or bytearray",
    "__build_class__": "write a class statement (classes, dataclasses and Enum work)",
    "exit": "let the program end, or raise an exception to report failure",
    "quit": "let the program end, or raise an exception to report failure",
    "__builtins__": "use the builtins directly by name",
    "__loader__": "use a plain import statement of an allowed module",
    "__spec__": "use a plain import statement of an allowed module",
}

# --- Attributes ------------------------------------------------------------------------------

# Dunder attributes an ordinary class needs to read. Defining any dunder method in a class body
# is fine; only attribute ACCESS `x.__foo__` is checked.
DEFAULT_ALLOWED_DUNDER_ATTRIBUTES = (
    "__name__", "__doc__", "__init__", "__str__", "__repr__", "__eq__", "__hash__",
    "__len__", "__iter__", "__next__", "__enter__", "__exit__", "__aenter__", "__aexit__",
)

# Frame, code, generator and traceback internals: each is a step of a frame walk to globals.
INTERNAL_ATTRIBUTES = frozenset({
    "gi_frame", "gi_code", "gi_yieldfrom", "gi_running", "gi_suspended",
    "cr_frame", "cr_code", "cr_await", "cr_origin", "cr_running", "cr_suspended",
    "ag_frame", "ag_code", "ag_await", "ag_running",
    "f_globals", "f_locals", "f_builtins", "f_back", "f_code", "f_lasti", "f_trace",
    "f_trace_lines", "f_trace_opcodes",
    "tb_frame", "tb_next", "tb_lasti",
    "co_code", "co_consts", "co_names", "co_varnames", "co_cellvars", "co_freevars",
    "co_filename", "co_lnotab", "co_linetable", "co_exceptiontable", "co_positions",
    "co_lines", "co_qualname", "co_flags",
    "func_globals", "func_code", "func_closure", "func_defaults", "func_dict",
    "im_func", "im_self", "im_class", "cell_contents", "mro",
})

# Attribute names that hand out a blocked module, rejected on ANY object: CPython 3.11 modules
# expose what they import (`datetime.sys`, `enum.bltns`, `uuid.os`, `random._os`,
# `asyncio.base_events.threading`). None of these is an ordinary attribute name, so checking
# every object costs ordinary code nothing. The `_name` spelling of each is included.
_PIVOTS = (
    "sys", "os", "builtins", "bltns", "subprocess", "importlib", "ctypes", "posix", "nt",
    "_thread", "_io", "_posixsubprocess", "pty", "marshal", "pickle", "multiprocessing",
    "threading", "runpy", "pkgutil", "zipimport", "sysconfig", "shutil", "concurrent",
    "fcntl", "gc", "_imp", "_bootstrap", "_bootstrap_external", "_signal", "_socket", "_ssl",
    "_types", "_posixshmem", "_winapi", "msvcrt",
)
PIVOT_ATTRIBUTES_ANYWHERE = frozenset(_PIVOTS) | frozenset("_" + p.lstrip("_") for p in _PIVOTS)

# Blocked module names that are also common attribute names (`err.code`, `schema.types`,
# `conn.ssl`, `self.signal`): rejected only on a module or a chain of attributes rooted at one
# (`asyncio.base_events.socket`, `dataclasses.inspect`). The blocked import list in force is
# added to this set.
PIVOT_ATTRIBUTES_ON_MODULES = frozenset({
    "code", "codeop", "types", "ast", "dis", "signal", "resource", "select", "selectors",
    "socket", "ssl", "inspect", "http", "urllib", "ftplib", "smtplib", "telnetlib", "xmlrpc",
    "socketserver", "tempfile", "webbrowser", "shelve", "pwd", "grp", "mmap", "traceback",
    "linecache", "platform", "atexit", "logging", "tokenize", "weakref", "copyreg",
})

# Module-level attributes of allowed modules that are gadgets, checked where the object is known
# to be that module (a name bound by import, an alias of one, a chain of attributes from one).
# Keyed by (module, attribute).
_HINT_NO_PROCESS = ("processes cannot be started; use `await call_tool(...)` to reach host "
                    "capabilities")
MODULE_ATTRIBUTE_EXCEPTIONS = {
    ("asyncio", "create_subprocess_exec"): _HINT_NO_PROCESS,
    ("asyncio", "create_subprocess_shell"): _HINT_NO_PROCESS,
    ("asyncio", "subprocess"): _HINT_NO_PROCESS,
}

# Gadgets rejected under ANY spelling: as an attribute of any object (so that moving the module
# through a container, `[operator][0].attrgetter`, does not help), as `from m import name [as
# alias]`, as a class-pattern keyword and as a format field. Each either reads or writes
# attributes named by a run-time string, hands out a module's globals, or evaluates a string
# as code, and none is an ordinary attribute name of agent code (a method of your own named
# `_evaluate` must be renamed). name -> (what it is, hint).
GADGET_ATTRIBUTES = {
    # Attribute access by a run-time string.
    "attrgetter": ("operator.attrgetter", "use a lambda: `lambda o: o.name`"),
    "methodcaller": ("operator.methodcaller", "use a lambda: `lambda o: o.method(arg)`"),
    "Formatter": ("string.Formatter", "use an f-string or str.format with a literal template"),
    # Copies attributes named by its `assigned`/`updated` arguments, and a module's whole
    # namespace when handed a module. `@functools.wraps(fn)` stays allowed (rule decorator-only).
    "update_wrapper": ("functools.update_wrapper",
                       "decorate the wrapper with `@functools.wraps(fn)` instead"),
    # String annotations are evaluated as code: get_type_hints directly, singledispatch's
    # register() through get_type_hints, a ForwardRef through _evaluate.
    "get_type_hints": ("typing.get_type_hints",
                       "read the annotations you wrote, or use dataclasses.fields()"),
    "singledispatch": ("functools.singledispatch",
                       "dispatch with `match` / isinstance(), or a dict of handlers keyed by "
                       "type"),
    "singledispatchmethod": ("functools.singledispatchmethod",
                             "dispatch with `match` / isinstance(), or a dict of handlers keyed "
                             "by type"),
    "ForwardRef": ("typing.ForwardRef", "write the type itself, or its name as a string "
                                        "annotation"),
    "_evaluate": ("typing.ForwardRef._evaluate", "write the type itself"),
    "_eval_type": ("typing._eval_type", "write the type itself"),
    # A class whose fields (and so its generated source and __match_args__) come from run-time
    # strings.
    "make_dataclass": ("dataclasses.make_dataclass",
                       "write a `@dataclass` class statement with the fields spelled out"),
    # os.environ's internals: functions whose globals are the os module's.
    "encodekey": ("os.environ.encodekey", "use os.environ.get(name) and os.environ[name]"),
    "decodekey": ("os.environ.decodekey", "use os.environ.get(name) and os.environ[name]"),
    "encodevalue": ("os.environ.encodevalue", "use os.environ.get(name) and os.environ[name]"),
    "decodevalue": ("os.environ.decodevalue", "use os.environ.get(name) and os.environ[name]"),
}
MODULE_ATTRIBUTES_ANYWHERE = frozenset(GADGET_ATTRIBUTES)

# asyncio's network and process API. They are methods of the event loop (`loop.getaddrinfo`,
# `asyncio.get_running_loop().create_connection`) as well as asyncio functions, so the name is
# rejected on any object; none is an ordinary attribute name. Any `sock_*` name too (the loop's
# socket methods: sock_connect, sock_recv, sock_sendall, ...), and each name with leading
# underscores: the loop's private helpers open sockets and resolve names themselves
# (`loop._connect_sock`, `loop._ensure_resolved`, `loop._sock_connect`), and its self-pipe
# sockets (`loop._ssock`, `loop._selector`'s keys) are socket objects whose class makes new
# sockets.
NETWORK_ATTRIBUTES = frozenset({
    "open_connection", "start_server", "open_unix_connection", "start_unix_server",
    "create_connection", "create_datagram_endpoint", "create_server",
    "create_unix_connection", "create_unix_server", "getaddrinfo", "getnameinfo",
    "connect_read_pipe", "connect_write_pipe", "connect_accepted_socket",
    "subprocess_exec", "subprocess_shell",
})
# The event loop's internals, rejected in their underscore spelling only (`self.selector` is
# an ordinary name; `loop._selector` hands out the self-pipe socket through its keys).
NETWORK_PRIVATE_ATTRIBUTES = frozenset({
    "connect_sock", "ensure_resolved", "create_server_getaddrinfo", "getaddrinfo_debug",
    "create_connection_transport", "make_socket_transport", "make_ssl_transport",
    "make_datagram_transport", "make_read_pipe_transport", "make_write_pipe_transport",
    "accept_connection", "start_serving", "ssock", "csock", "selector",
}) | NETWORK_ATTRIBUTES
NETWORK_PREFIX = "sock_"
NETWORK_HINT = ("there is no network; use the host's tools through `await call_tool(...)` "
                "(or the tool functions it provides)")

# The network modules, whose hint says how the run reaches the network: not at all (no
# network_tools in the policy), or through the functions the backend serves its targets with.
NETWORK_MODULES = frozenset({"socket", "ssl", "urllib", "http", "ftplib", "smtplib", "telnetlib",
                             "xmlrpc", "socketserver", "webbrowser", "select", "selectors"})

# How each network function is called, for the hint (the egress tools of both backends).
_NETWORK_TOOL_CALLS = {
    "http_get": "`await http_get(url)`",
    "http_post": "`await http_post(url, body)`",
    "http_request": "`await http_request(method, url, headers=None, body=None)`",
}


def network_hint(network_tools):
    """The hint for a rejected network module or API: "there is no network" without network
    tools, else the tools to use instead (the only way to the listed targets)."""
    if not network_tools:
        return NETWORK_HINT
    calls = [_NETWORK_TOOL_CALLS.get(t, "`await %s(...)`" % t) for t in network_tools]
    return ("the code has no network of its own; the listed network targets are reached through "
            "the host with %s" % (", ".join(calls[:-1]) + " or " + calls[-1]
                                  if len(calls) > 1 else calls[0]))

# `os` may only be used as os.environ and os.path (and aliases of os the same way).
OS_ALLOWED_ATTRIBUTES = frozenset({"environ", "path"})

# os.environ is a MutableMapping whose attributes include functions with the os module's
# globals (encodekey ...) and the raw dict (_data): only its public mapping API is allowed.
# `in`, indexing, iteration and len() need no attribute.
OS_ENVIRON_ALLOWED_ATTRIBUTES = frozenset({
    "get", "keys", "items", "values", "copy", "setdefault", "pop", "update",
})

# --- Classes ---------------------------------------------------------------------------------

# The dunder names a class body may bind (def, assignment, annotation): the special methods of
# the language reference's data model that ordinary classes define, plus __slots__,
# __match_args__ (its names are checked where a class pattern uses them: rule
# match-positional), __doc__ and dataclasses' __post_init__. Everything else is a hook that the
# interpreter or the standard library reads from a class: metaclass and subclass hooks
# (__instancecheck__, __subclasscheck__, __subclasshook__, __init_subclass__, __set_name__,
# __class_getitem__, __mro_entries__, __prepare__), __annotations__ (the source of dataclass
# field names, pasted into generated code), __dataclass_fields__, __module__, the pickle hooks
# __reduce__/__reduce_ex__ ...
_NUMERIC = ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "divmod", "pow",
            "lshift", "rshift", "and", "xor", "or")
CLASS_BODY_DUNDERS = frozenset(
    ["__%s__" % n for n in (
        "new", "init", "del", "repr", "str", "bytes", "format", "lt", "le", "eq", "ne", "gt",
        "ge", "hash", "bool", "getattr", "getattribute", "setattr", "delattr", "dir", "get",
        "set", "delete", "call", "len", "length_hint", "getitem", "setitem", "delitem",
        "missing", "iter", "next", "reversed", "contains", "neg", "pos", "abs", "invert",
        "complex", "int", "float", "index", "round", "trunc", "floor", "ceil", "enter", "exit",
        "await", "aiter", "anext", "aenter", "aexit", "copy", "deepcopy", "getstate",
        "setstate", "getnewargs", "getnewargs_ex", "sizeof", "fspath", "slots", "match_args",
        "doc", "post_init")]
    + ["__%s%s__" % (p, n) for n in _NUMERIC for p in ("", "r", "i")])

# Metaclasses a class statement may name with `metaclass=` (dotted origins): the ones the
# standard library's own base classes use, so `class Base(metaclass=ABCMeta)` works. A class
# deriving from type (or from one of these) is a new metaclass and is rejected.
SAFE_METACLASSES = frozenset({"abc.ABCMeta", "enum.EnumMeta", "enum.EnumType"})
METACLASS_NAMES = frozenset({"type", "Type", "ABCMeta", "EnumMeta", "EnumType"})

# Class decorators that return the class they are given (dotted origins). A class pattern can
# read a decorated class's __match_args__ only when every decorator is one of these.
SAFE_CLASS_DECORATORS = frozenset({
    "dataclasses.dataclass", "functools.total_ordering", "enum.unique", "typing.final",
    "typing.runtime_checkable",
})

# Built-in classes whose class pattern takes one positional sub-pattern: the subject itself.
SELF_MATCHING_BUILTINS = frozenset({
    "bool", "bytearray", "bytes", "dict", "float", "frozenset", "int", "list", "set", "str",
    "tuple",
})

# What a subscripted base class may subscript (besides a class statement): builtin generic
# classes, and the generic classes of these modules (dotted-origin prefixes).
GENERIC_BUILTINS = frozenset({"list", "dict", "tuple", "set", "frozenset"})
GENERIC_MODULES = ("typing.", "collections.")

# Factories whose classes may be bases and class patterns: their field names are literal
# strings in the call (checked like attribute names) and the factory validates them.
NAMEDTUPLE_FACTORIES = frozenset({"collections.namedtuple", "typing.NamedTuple"})

# Usable only as decorators: `@dataclass` / `@dataclass(...)` on a class statement (applied to
# any other class it pastes that class's annotation names into generated source) and
# `@functools.wraps(fn)` on a def (its other arguments name the attributes it copies).
DECORATOR_ONLY = {
    "dataclass": "dataclasses.dataclass",
    "wraps": "functools.wraps",
}

# Methods whose receiver is a str.format template.
FORMAT_METHODS = frozenset({"format", "format_map"})

POLICY_KEYS = (
    "allowed_imports", "blocked_builtins", "allowed_dunder_attributes",
    "extra_allowed_imports", "extra_blocked_imports", "allow_dynamic_format",
    "max_code_bytes", "max_ast_depth", "validation_timeout_ms", "network_tools", "tool_names",
    "blocked_imports", "allowed_builtins",
)

DEFAULT_MAX_CODE_BYTES = 64 * 1024
DEFAULT_MAX_AST_DEPTH = 100
# 0 disables the time check. Parsing itself cannot be interrupted; the walk checks the clock.
DEFAULT_VALIDATION_TIMEOUT_MS = 10_000


class Policy:
    """A validated, immutable policy. Build it with Policy.from_dict(d) (raises ValueError on
    unknown keys or wrong types); `None` in a list field means "the default list"."""

    __slots__ = POLICY_KEYS

    def __init__(self, allowed_imports=None, blocked_builtins=None,
                 allowed_dunder_attributes=None, extra_allowed_imports=(),
                 extra_blocked_imports=(), allow_dynamic_format=False,
                 max_code_bytes=DEFAULT_MAX_CODE_BYTES, max_ast_depth=DEFAULT_MAX_AST_DEPTH,
                 validation_timeout_ms=DEFAULT_VALIDATION_TIMEOUT_MS, network_tools=(),
                 tool_names=(), blocked_imports=None, allowed_builtins=None):
        set_ = object.__setattr__
        set_(self, "allowed_imports", _names("allowed_imports", allowed_imports, True))
        set_(self, "blocked_builtins", _names("blocked_builtins", blocked_builtins, True))
        set_(self, "allowed_dunder_attributes",
             _names("allowed_dunder_attributes", allowed_dunder_attributes, True))
        set_(self, "extra_allowed_imports",
             _names("extra_allowed_imports", extra_allowed_imports, False))
        set_(self, "extra_blocked_imports",
             _names("extra_blocked_imports", extra_blocked_imports, False))
        if type(allow_dynamic_format) is not bool:
            raise ValueError("policy key 'allow_dynamic_format' must be a bool")
        set_(self, "allow_dynamic_format", allow_dynamic_format)
        set_(self, "max_code_bytes", _positive("max_code_bytes", max_code_bytes, 1))
        set_(self, "max_ast_depth", _positive("max_ast_depth", max_ast_depth, 1))
        set_(self, "validation_timeout_ms",
             _positive("validation_timeout_ms", validation_timeout_ms, 0))
        # Set by the host from its backend when the run has network targets (policy.hpp).
        set_(self, "network_tools", _names("network_tools", network_tools, False))
        # The host's tool names: a call of one must be awaited (rule tool-not-awaited).
        set_(self, "tool_names", _names("tool_names", tool_names, False))
        # Replaces DEFAULT_BLOCKED_MODULES as the list that beats parents and wildcards.
        set_(self, "blocked_imports", _names("blocked_imports", blocked_imports, True))
        # An allow-list of builtins: every other builtin is blocked too (the blocked list in
        # force still wins over it).
        set_(self, "allowed_builtins", _names("allowed_builtins", allowed_builtins, True))

    def __setattr__(self, name, value):
        raise AttributeError("Policy is immutable")

    @classmethod
    def from_dict(cls, d):
        if d is None:
            return cls()
        if not isinstance(d, dict):
            raise ValueError("policy must be a dict or None, not %s" % type(d).__name__)
        unknown = sorted(str(k) for k in d if k not in POLICY_KEYS)
        if unknown:
            raise ValueError("unknown policy key(s): %s (known: %s)"
                             % (", ".join(unknown), ", ".join(POLICY_KEYS)))
        # None means "the default" for every key (what an unset std::optional becomes).
        return cls(**{k: v for k, v in d.items() if v is not None})

    def to_dict(self):
        """The policy with every default spelled out (lists as lists)."""
        d = {}
        for key in POLICY_KEYS:
            value = getattr(self, key)
            if value is None:
                value = _DEFAULT_LISTS[key]
            d[key] = list(value) if isinstance(value, tuple) else value
        return d

    def key(self):
        return tuple(getattr(self, k) for k in POLICY_KEYS)

    def __eq__(self, other):
        return isinstance(other, Policy) and self.key() == other.key()

    def __hash__(self):
        return hash(self.key())

    def __repr__(self):
        return "Policy(%s)" % ", ".join(
            "%s=%r" % (k, getattr(self, k)) for k in POLICY_KEYS if getattr(self, k) is not None)


_DEFAULT_LISTS = {
    "allowed_imports": DEFAULT_ALLOWED_IMPORTS,
    "blocked_imports": DEFAULT_BLOCKED_MODULES,
    "allowed_builtins": None,
    "blocked_builtins": DEFAULT_BLOCKED_BUILTINS,
    "allowed_dunder_attributes": DEFAULT_ALLOWED_DUNDER_ATTRIBUTES,
}


def _names(key, value, optional):
    if value is None and optional:
        return None
    if not isinstance(value, (list, tuple)):
        raise ValueError("policy key %r must be a list of strings" % key)
    for item in value:
        if not isinstance(item, str) or not item:
            raise ValueError("policy key %r must contain only non-empty strings, got %r"
                             % (key, item))
    return tuple(value)


def _positive(key, value, minimum):
    if type(value) is not int or value < minimum:
        raise ValueError("policy key %r must be an int >= %d, got %r" % (key, minimum, value))
    return value


DEFAULT_POLICY = Policy().to_dict()
"""The defaults as a plain dict (a copy: changing it changes nothing)."""


class CompiledPolicy:
    """Lookup sets built once per distinct policy and shared by every validation using it."""

    __slots__ = (
        "policy", "allowed_exact", "allowed_wildcards", "blocked_user", "blocked_default",
        "blocked_builtins", "flagged_names", "safe_dunders", "pivot_on_modules",
        "watched_attributes", "allow_dynamic_format", "max_code_bytes", "max_ast_depth",
        "timeout_s", "import_hint", "network_hint", "nonascii_sensitive", "known_modules", "_import_memo",
        "from_import_memo", "module_dotted", "submodule_attributes", "origin_memo",
    )

    def __init__(self, policy):
        self.policy = policy
        self._import_memo = {}
        # (module, name) -> problems of `from module import name`, filled by the checker.
        self.from_import_memo = {}
        # dotted origin of an import binding -> (top-level module, is a module, decorator-only
        # short name or None), filled by the checker.
        self.origin_memo = {}
        allowed = policy.allowed_imports
        if allowed is None:
            allowed = DEFAULT_ALLOWED_IMPORTS
        allowed = tuple(allowed) + policy.extra_allowed_imports
        self.allowed_exact = frozenset(a for a in allowed if not a.endswith(".*"))
        self.allowed_wildcards = frozenset(a[:-2] for a in allowed if a.endswith(".*"))
        self.blocked_user = frozenset(policy.extra_blocked_imports)
        blocked_modules = policy.blocked_imports
        if blocked_modules is None:
            blocked_modules = DEFAULT_BLOCKED_MODULES
        self.blocked_default = frozenset(blocked_modules)
        builtins = policy.blocked_builtins
        if builtins is None:
            builtins = DEFAULT_BLOCKED_BUILTINS
        builtins = frozenset(builtins)
        if policy.allowed_builtins is not None:
            import builtins as _builtins_module
            every = frozenset(n for n in vars(_builtins_module) if not n.startswith("_"))
            builtins |= every - frozenset(policy.allowed_builtins)
        self.blocked_builtins = builtins
        self.flagged_names = self.blocked_builtins | ALWAYS_BLOCKED_NAMES
        dunders = policy.allowed_dunder_attributes
        if dunders is None:
            dunders = DEFAULT_ALLOWED_DUNDER_ATTRIBUTES
        self.safe_dunders = frozenset(dunders)
        # The default block list stays in what is recognised as a module and as a pivot: a
        # replaced block list changes which imports are allowed, not what a module is.
        known_blocked = self.blocked_default | frozenset(DEFAULT_BLOCKED_MODULES)
        tops = frozenset(m.split(".")[0] for m in known_blocked | self.blocked_user)
        self.pivot_on_modules = (PIVOT_ATTRIBUTES_ON_MODULES | tops) - PIVOT_ATTRIBUTES_ANYWHERE
        self.known_modules = frozenset(
            m.split(".")[0] for m in self.allowed_exact | self.allowed_wildcards
            | known_blocked | self.blocked_user | frozenset(DEFAULT_ALLOWED_IMPORTS))
        # Dotted names of modules below a top-level one: the lists' own entries and the
        # submodules found on disk (modules.py). `asyncio.base_events` is a module, so passing
        # it as a value is rejected like passing `asyncio`.
        listed = (self.allowed_exact | self.allowed_wildcards | known_blocked
                  | self.blocked_user | frozenset(DEFAULT_ALLOWED_IMPORTS))
        self.module_dotted = frozenset(
            {m for m in listed if "." in m} | modules.discover(self.known_modules))
        self.submodule_attributes = frozenset(m.rsplit(".", 1)[1] for m in self.module_dotted)
        self.watched_attributes = (
            INTERNAL_ATTRIBUTES | PIVOT_ATTRIBUTES_ANYWHERE | self.pivot_on_modules
            | MODULE_ATTRIBUTES_ANYWHERE | FORMAT_METHODS | NETWORK_ATTRIBUTES
            | frozenset(DECORATOR_ONLY) | self.submodule_attributes
            | frozenset(a for _, a in MODULE_ATTRIBUTE_EXCEPTIONS))
        self.allow_dynamic_format = policy.allow_dynamic_format
        self.max_code_bytes = policy.max_code_bytes
        self.max_ast_depth = policy.max_ast_depth
        self.timeout_s = policy.validation_timeout_ms / 1000.0
        shown = sorted((self.allowed_exact | {w + ".*" for w in self.allowed_wildcards})
                       - self.blocked_user)
        self.network_hint = network_hint(policy.network_tools)
        self.import_hint = ("allowed modules: %s; reach host capabilities with "
                            "`await call_tool(\"name\", ...)`" % ", ".join(shown))
        self.nonascii_sensitive = (
            self.flagged_names | frozenset(DEFAULT_BLOCKED_MODULES) | self.blocked_user
            | INTERNAL_ATTRIBUTES | PIVOT_ATTRIBUTES_ANYWHERE | MODULE_ATTRIBUTES_ANYWHERE
            | NETWORK_ATTRIBUTES | frozenset(a for _, a in MODULE_ATTRIBUTE_EXCEPTIONS))

    def import_unavailable(self, dotted):
        """Whether module `dotted`, which import_allowed() refuses, is merely not available
        (a third-party package) rather than refused: not in the standard library (whose
        modules off the allow-list exist in the child and stay refused: pydoc starts
        processes), not one of the runner's own modules, on no block list, no private part,
        not a module pivot, not "subprocess". The runtime guard raises ModuleNotFoundError for
        such an import (runtime_policy.py), and a child without site-packages (-S, the
        default) has none of them anyway."""
        if "subprocess" in dotted.lower():
            return False
        parts = dotted.split(".")
        if (any(part.startswith("_") for part in parts) or parts[0] in PIVOT_ATTRIBUTES_ANYWHERE
                or parts[0] in _STDLIB_MODULES or parts[0] in RUNNER_MODULES):
            return False
        prefixes = [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
        blocked = self.blocked_user | self.blocked_default | frozenset(DEFAULT_BLOCKED_MODULES)
        return not any(p in blocked for p in prefixes)

    def is_module(self, dotted):
        """Whether the dotted origin `dotted` (`json`, `os.path`, `json.loads`) names a
        module. A one-part origin always does: only import statements make one."""
        return "." not in dotted or dotted in self.module_dotted

    def import_allowed(self, dotted):
        """None when module `dotted` may be imported, else the reason (a short phrase)."""
        memo = self._import_memo
        try:
            return memo[dotted]
        except KeyError:
            pass
        result = self._import_allowed(dotted)
        if len(memo) < 4096:
            memo[dotted] = result
        return result

    def _import_allowed(self, dotted):
        if dotted in ALWAYS_ALLOWED_IMPORTS:
            return None
        parts = dotted.split(".")
        prefixes = [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
        for p in prefixes:
            if p in self.blocked_user:
                return "%s is on the policy's block list" % p
        if "subprocess" in dotted.lower():
            return "starting processes is never allowed"
        if dotted in self.allowed_exact:
            return None
        wildcard = None
        for p in prefixes:
            if p in self.allowed_wildcards:
                wildcard = p
        blocked = [p for p in prefixes if p in self.blocked_default]
        # A wildcard at or below a blocked package is an explicit allow; one above it is not
        # (`asyncio.*` does not allow asyncio.subprocess).
        if blocked and (wildcard is None or len(blocked[-1]) > len(wildcard)):
            return "%s is blocked" % blocked[-1]
        if wildcard is not None:
            below = parts[wildcard.count(".") + 1:]
            if any(part.startswith("_") for part in below):
                return "private submodules are not allowed"
            return None
        if parts[0] in self.allowed_exact:
            return "submodule %s is not on the allow-list" % dotted
        return "%s is not on the allow-list" % parts[0]


_cache = {}
_CACHE_LIMIT = 64
_DEFAULT_COMPILED = None


def compiled(policy):
    """The CompiledPolicy for a dict / Policy / None, cached by the policy's content."""
    global _DEFAULT_COMPILED
    if policy is None or (type(policy) is dict and not policy):
        if _DEFAULT_COMPILED is None:
            _DEFAULT_COMPILED = CompiledPolicy(Policy())
        return _DEFAULT_COMPILED
    if isinstance(policy, Policy):
        key = policy
    else:
        key = _dict_key(policy)
    hit = _cache.get(key) if key is not None else None
    if hit is not None:
        return hit
    pol = policy if isinstance(policy, Policy) else Policy.from_dict(policy)
    result = CompiledPolicy(pol)
    if key is not None:
        if len(_cache) >= _CACHE_LIMIT:
            _cache.clear()
        _cache[key] = result
    return result


def _dict_key(d):
    # Types are part of the key so that {"allow_dynamic_format": 1} is not served the entry of
    # {"allow_dynamic_format": True} (1 == True) and still gets its ValueError. The key follows
    # the dict's order: the host builds its dicts in one order, and another order only costs a
    # second cache entry for the same policy.
    if type(d) is not dict:
        return None
    try:
        key = tuple([(k, tuple, tuple(zip(map(type, v), v))) if type(v) in _SEQUENCES
                     else (k, type(v), v) for k, v in d.items()])
        hash(key)
        return key
    except Exception:
        return None


_SEQUENCES = (list, tuple)
