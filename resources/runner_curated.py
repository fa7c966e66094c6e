"""What the user's code gets for the accepted forms (validator/README.md "Accepted forms"), with
the validator on or off: the guarded getattr, hasattr and vars, and the read-only view that
`import sys` gives (runner_cold.rewrite_user_tree turns the import into a read of `view`).

This module imports nothing, and runner_cold loads it once, takes it out of sys.modules and
drops its loader and spec: the globals of its functions (which the code reaches through
`__globals__`, with the validator off) hold no module, frame or function of the runner, so
nothing reachable from what the code gets leads to the real sys. init() gives it the values of
sys it shows.
"""

_getattr = getattr
_hasattr = hasattr
_vars = vars
_MISSING = object()
_ModuleType = None      # init()
_stderr = None          # the process's stderr stream (init()); it reaches no module
_RECURSION_LIMIT = 1000
_POINTER = 8            # bytes of a pointer (init())

# The names the guarded getattr/hasattr refuse besides those starting with an underscore: the
# interpreter internals that the guard's audit hook refuses on `x.name` (the hook looks at the
# innermost frame, which would be this module's) and the attributes that hand out a module
# (validator/policy.py INTERNAL_ATTRIBUTES and _PIVOTS; a test checks they are covered).
_INTERNAL_NAMES = frozenset((
    "gi_frame", "gi_code", "gi_yieldfrom", "gi_running", "gi_suspended",
    "cr_frame", "cr_code", "cr_await", "cr_origin", "cr_running", "cr_suspended",
    "ag_frame", "ag_code", "ag_await", "ag_running",
    "f_globals", "f_locals", "f_builtins", "f_back", "f_code", "f_lasti", "f_trace",
    "f_trace_lines", "f_trace_opcodes", "tb_frame", "tb_next", "tb_lasti",
    "co_code", "co_consts", "co_names", "co_varnames", "co_cellvars", "co_freevars",
    "co_filename", "co_lnotab", "co_linetable", "co_exceptiontable", "co_positions",
    "co_lines", "co_qualname", "co_flags", "func_globals", "func_code", "func_closure",
    "func_defaults", "func_dict", "im_func", "im_self", "im_class", "cell_contents", "mro",
    "sys", "os", "builtins", "bltns", "subprocess", "importlib", "ctypes", "posix", "nt", "pty",
    "marshal", "pickle", "multiprocessing", "threading", "runpy", "pkgutil", "zipimport",
    "sysconfig", "shutil", "concurrent", "fcntl", "gc", "msvcrt"))


def init(module_type, stderr, recursion_limit, values):
    global _ModuleType, _stderr, _RECURSION_LIMIT, _POINTER
    _ModuleType = module_type
    _stderr = stderr
    _RECURSION_LIMIT = recursion_limit
    _POINTER = 8 if values["maxsize"] > 2 ** 32 else 4
    for key, value in values.items():
        setattr(_Sys, key, value)


# --- getattr, hasattr, vars ---------------------------------------------------------------------

def _public_name(function, name):
    if type(name) is not str:
        raise TypeError("%s(): the attribute name must be a str, not %s"
                        % (function, type(name).__name__))
    if name[:1] == "_":
        raise PermissionError("%s(): the name %r starts with an underscore; getattr and hasattr "
                              "read public attributes only (codeact rule builtin-blocked)"
                              % (function, name))
    if name in _INTERNAL_NAMES:
        raise PermissionError("%s(): %r is an interpreter internal or a module; getattr and "
                              "hasattr read public attributes only (codeact rule "
                              "builtin-blocked)" % (function, name))
    return name


def user_getattr(obj, name, default=_MISSING, /):
    """getattr(obj, "name"[, default]) for a public attribute name."""
    name = _public_name("getattr", name)
    if default is _MISSING:
        return _getattr(obj, name)
    return _getattr(obj, name, default)


def user_hasattr(obj, name, /):
    """hasattr(obj, "name") for a public attribute name."""
    return _hasattr(obj, _public_name("hasattr", name))


_READ_ONLY_COPY = ("vars(obj) and obj.__dict__ give a read-only copy of the public attributes: "
                   "assign attributes directly (obj.name = value), or copy it with dict(...)")


class AttributesCopy(dict):
    """What vars(obj) and obj.__dict__ return to the code: a read-only copy."""

    __slots__ = ()

    def _refuse(self, *args, **kwargs):
        raise TypeError(_READ_ONLY_COPY)

    __setitem__ = __delitem__ = __ior__ = update = pop = popitem = setdefault = clear = _refuse


def user_vars(*args):
    """vars(obj): a read-only copy of the instance's own public attributes (no names starting
    with an underscore or refused by getattr, no callables, no modules). vars() without an
    argument is refused."""
    if len(args) != 1:
        if not args:
            raise PermissionError("vars() without an argument is not available: keep shared "
                                  "values in your own dict")
        raise TypeError("vars() takes one argument (%d given)" % len(args))
    obj = args[0]
    if isinstance(obj, (type, _ModuleType)):
        raise TypeError("vars() and .__dict__ read an instance's attributes, not those of a %s: "
                        "use the documented attributes directly"
                        % ("class" if isinstance(obj, type) else "module"))
    public = AttributesCopy()
    for key, value in _vars(obj).items():
        if (type(key) is str and key[:1] != "_" and key not in _INTERNAL_NAMES
                and not callable(value) and type(value) is not _ModuleType):
            dict.__setitem__(public, key, value)
    return public


user_getattr.__name__ = user_getattr.__qualname__ = "getattr"
user_hasattr.__name__ = user_hasattr.__qualname__ = "hasattr"
user_vars.__name__ = user_vars.__qualname__ = "vars"


# --- the sys view -------------------------------------------------------------------------------

_FIELDS = ("version", "version_info", "platform", "maxsize", "byteorder", "float_info",
           "int_info", "argv", "stdout", "stderr", "getsizeof", "getrecursionlimit")
_HINTS = {
    "exit": "let the program end, or raise an exception to report failure",
    "modules": "import the modules you need (allowed ones only)",
    "path": "import the modules you need (allowed ones only)",
    "stdin": "stdin is closed; pass data as literals or fetch it with `await call_tool(...)`",
    "environ": "use os.environ.get(name)",
    "executable": "processes cannot be started; use `await call_tool(...)` to reach host "
                  "capabilities",
    "setrecursionlimit": "write the recursion as a loop with your own stack",
    "exc_info": "use `except Exception as e:` and read e",
}


class _Stream:
    """sys.stdout / sys.stderr of the view: write and flush only. stdout writes through print()
    (the current sys.stdout, so contextlib.redirect_stdout applies)."""
    __slots__ = ("_name",)

    def __init__(self, name):
        object.__setattr__(self, "_name", name)

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError("write() argument must be str, not %s" % type(text).__name__)
        if self._name == "stdout":
            print(text, end="")
        else:
            _stderr.write(text)
        return len(text)

    def flush(self):
        if self._name == "stdout":
            print(end="", flush=True)
        else:
            _stderr.flush()

    def __getattr__(self, name):
        raise AttributeError("sys.%s has write() and flush() only here; print() what you need "
                             "(print(..., file=sys.%s) works too)" % (self._name, self._name))

    def __setattr__(self, name, value):
        raise AttributeError("sys.%s is read-only" % self._name)

    def __repr__(self):
        return "<sys.%s: write and flush only>" % self._name


class _Sys:
    """A read-only view of sys: version, version_info, platform, maxsize, byteorder,
    float_info, int_info, argv, stdout and stderr (write and flush), getsizeof and
    getrecursionlimit."""
    __slots__ = ()
    __module__ = "sys"
    stdout = _Stream("stdout")
    stderr = _Stream("stderr")

    def __getattr__(self, name):
        hint = _HINTS.get(name)
        if hint is None:
            hint = "it has %s only" % ", ".join(_FIELDS)
        raise AttributeError("sys.%s is not available in the sandbox: %s" % (name, hint))

    def __setattr__(self, name, value):
        raise AttributeError("sys is read-only in the sandbox; keep your own values in your "
                             "own variables")

    def __delattr__(self, name):
        raise AttributeError("sys is read-only in the sandbox")

    def __repr__(self):
        return "<sys: a read-only view (codeact)>"

    @property
    def argv(self):
        return []

    def getsizeof(self, obj, default=_MISSING):
        tp = type(obj)
        try:
            size = tp.__sizeof__(obj)
        except Exception:
            if default is _MISSING:
                raise
            return default
        if type(size) is not int or size < 0:
            raise ValueError("__sizeof__() should return >= 0")
        # What sys.getsizeof adds (3.11): the GC header and a managed dict's two pointers.
        if tp.__flags__ & (1 << 14):
            size += 2 * _POINTER
        if tp.__flags__ & (1 << 4):
            size += 2 * _POINTER
        return size

    def getrecursionlimit(self):
        return _RECURSION_LIMIT


_Stream.__module__ = "sys"
view = _Sys()
