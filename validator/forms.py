"""The accepted forms of otherwise refused builtins, imports and attributes (README "Accepted
forms"): what ordinary model code writes first, accepted in the shape that the runner's guarded
forms enforce at run time as well (resources/runner.py, resources/runner_cold.py).

    getattr(obj, "name"[, default]), hasattr(obj, "name")
        a literal public name: checked as the attribute `obj.name`, by every attribute rule
    vars(obj), obj.__dict__ (read)
        a read-only copy of the instance's public attributes; `obj` is checked as a value that
        is passed on (so a module is refused); writing through it is refused
    import sys, from sys import name
        a read-only view; only its fields (SYS_FIELDS) may be read
    import numpy (not allowed, not blocked) in `try:` with an `except ImportError` handler
        raises ModuleNotFoundError at run time, so the fallback runs

prepare() runs before the checker's walk: it rewrites the accepted calls and reads in place
into the expressions they are checked as (the tree is the validator's own parse) and returns
the findings for the refused shapes. The rewrite happens only when the code's text names one of
the forms, so other code pays a few substring tests.
"""

from . import nodes as ast
from . import report as R

# What `import sys` gives (resources/runner_cold.py builds the view).
SYS_FIELDS = frozenset({
    "version", "version_info", "platform", "maxsize", "byteorder", "float_info", "int_info",
    "argv", "stdout", "stderr", "getsizeof", "getrecursionlimit",
})
SYS_STREAM_FIELDS = frozenset({"write", "flush"})

_HINT_SYS = ("sys is a read-only view here with %s; print() writes to stdout, "
             "print(..., file=sys.stderr) to stderr, and raising an exception reports failure"
             % ", ".join(sorted(SYS_FIELDS)))
SYS_ATTRIBUTE_HINTS = {
    "exit": "let the program end, or raise an exception to report failure",
    "modules": "import the modules you need (allowed ones only)",
    "path": "import the modules you need (allowed ones only)",
    "stdin": "stdin is closed; pass data as literals or fetch it with `await call_tool(...)`",
    "setrecursionlimit": "write the recursion as a loop with your own stack",
    "exc_info": "use `except Exception as e:` and read e",
}

_HINT_GETATTR = ("write the name as a string literal: getattr(obj, \"name\", default) or "
                 "hasattr(obj, \"name\"); for names chosen at run time keep the values in a dict "
                 "(d.get(key, default), `key in d`)")
_HINT_GETATTR_PRIVATE = ("read public attributes only: getattr(obj, \"name\", default); for the "
                         "type use type(obj).__name__ or isinstance()")
HINT_VARS = ("vars(obj) and obj.__dict__ give a read-only copy of an instance's public "
             "attributes; use dataclasses.asdict(obj) for a dataclass, or write a to_dict() "
             "method that returns a dict")
_HINT_DICT_WRITE = ("assign attributes directly (obj.name = value); vars(obj) and obj.__dict__ "
                    "are a read-only copy (copy it with dict(vars(obj)) to change the copy)")

# Methods of the copy that only read it.
_DICT_READ_METHODS = frozenset({"get", "keys", "values", "items", "copy"})

_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError"})


def _at(new, old):
    new.lineno = getattr(old, "lineno", 1)
    new.col_offset = getattr(old, "col_offset", 0)
    new.end_lineno = getattr(old, "end_lineno", None)
    new.end_col_offset = getattr(old, "end_col_offset", None)
    return new


def _passed_on(value, at):
    """An expression the checker sees as `value` passed to a function (`repr(value)`): the
    module-value rule then refuses a module."""
    func = _at(ast.Name(id="repr", ctx=ast.Load()), at)
    return _at(ast.Call(func=func, args=[value], keywords=[]), at)


def _literal_name(node):
    if node.__class__ is ast.Constant and type(node.value) is str:
        return node.value
    return None


def _is_environ(node):
    cls = node.__class__
    return (cls is ast.Attribute and node.attr == "environ") or (
        cls is ast.Name and node.id == "environ")


def _loc(node):
    return getattr(node, "lineno", 0) or 0, getattr(node, "col_offset", 0) or 0


class _Rewriter:
    __slots__ = ("found", "writes", "cp")

    def __init__(self, cp):
        self.found = []
        self.writes = set()   # id of `.__dict__` Attribute nodes written through
        self.cp = cp

    def add(self, node, message, hint, rule=R.BUILTIN_BLOCKED):
        line, col = _loc(node)
        self.found.append((line, col, rule, message, hint))

    def call(self, node):
        """The replacement of a getattr/hasattr/vars Call, or None to keep it."""
        func = node.func
        if func.__class__ is not ast.Name or func.id not in ("getattr", "hasattr", "vars"):
            return None
        name = func.id
        args = node.args
        if node.keywords or any(a.__class__ is ast.Starred for a in args):
            return None     # the builtin-blocked rule refuses it, with its hint
        if args and _is_environ(args[0]):
            return None     # os.environ is a mapping only (rule os-attribute)
        if name == "vars":
            if len(args) != 1:
                self.add(node, "vars() needs exactly one argument: the object whose attributes "
                               "it copies", HINT_VARS)
                return _at(ast.Tuple(elts=list(args), ctx=ast.Load()), node)
            return _passed_on(args[0], node)
        wanted = (2, 3) if name == "getattr" else (2,)
        if len(args) not in wanted:
            return None
        attr = _literal_name(args[1])
        if attr is None:
            self.add(args[1], "%s() with an attribute name that is not a string literal is not "
                              "allowed" % name, _HINT_GETATTR)
            return _at(ast.Tuple(elts=list(args), ctx=ast.Load()), node)
        if attr.startswith("_"):
            self.add(args[1], "%s() with the name %r is not allowed: getattr and hasattr read "
                              "public attributes only (no leading underscore)" % (name, attr),
                     _HINT_GETATTR_PRIVATE)
            return _at(ast.Tuple(elts=list(args), ctx=ast.Load()), node)
        if not attr.isidentifier() or not attr.isascii():
            self.add(args[1], "%s() with the name %r: it is not an attribute name" % (name, attr),
                     _HINT_GETATTR)
            return _at(ast.Tuple(elts=list(args), ctx=ast.Load()), node)
        read = _at(ast.Attribute(value=args[0], attr=attr, ctx=ast.Load()), node)
        if len(args) == 3:
            return _at(ast.Tuple(elts=[read, args[2]], ctx=ast.Load()), node)
        return read

    def dict_read(self, node):
        """The replacement of an `x.__dict__` Attribute, or None to keep it (a write through
        it: reported here, and kept out of the dunder rule's second report)."""
        if _is_environ(node.value):
            return None     # os.environ is a mapping only: the dunder rule refuses it
        if node.ctx.__class__ is not ast.Load:
            verb = "deleting" if node.ctx.__class__ is ast.Del else "assigning"
            self.add(node, "%s .__dict__ is not allowed" % verb, _HINT_DICT_WRITE,
                     R.ATTRIBUTE_DUNDER)
            # Still a store of an attribute of the object (the module rules apply).
            return _at(ast.Attribute(value=node.value, attr="codeact_dict", ctx=node.ctx), node)
        if id(node) in self.writes:
            self.add(node, "writing through .__dict__ is not allowed", _HINT_DICT_WRITE,
                     R.ATTRIBUTE_DUNDER)
        return _passed_on(node.value, node)


def _mark_dict_writes(tree, rewriter):
    """Records the `.__dict__` reads whose copy is written to: `x.__dict__[k] = v`,
    `del x.__dict__[k]`, `x.__dict__[k] += 1`, `x.__dict__.update(...)`."""
    for node in ast.walk(tree):
        cls = node.__class__
        if cls is ast.Subscript or cls is ast.Attribute:
            value = node.value
            if value.__class__ is ast.Attribute and value.attr == "__dict__":
                if cls is ast.Subscript and node.ctx.__class__ is not ast.Load:
                    rewriter.writes.add(id(value))
                elif cls is ast.Attribute and node.attr not in _DICT_READ_METHODS:
                    rewriter.writes.add(id(value))


def _rewrite(tree, rewriter, calls, dicts):
    todo = [tree]
    while todo:
        node = todo.pop()
        for field in node._fields:
            value = getattr(node, field, None)
            if value.__class__ is list:
                for i, item in enumerate(value):
                    new = _replacement(item, rewriter, calls, dicts)
                    if new is not None:
                        value[i] = item = new
                    if isinstance(item, ast.AST):
                        todo.append(item)
            elif isinstance(value, ast.AST):
                new = _replacement(value, rewriter, calls, dicts)
                if new is not None:
                    setattr(node, field, new)
                    value = new
                todo.append(value)


def _replacement(node, rewriter, calls, dicts):
    # A replacement may itself hold a form (`getattr(vars(x), "a")`): replaced until stable.
    out = None
    while True:
        cls = node.__class__
        new = None
        if calls and cls is ast.Call:
            new = rewriter.call(node)
        elif dicts and cls is ast.Attribute and node.attr == "__dict__":
            new = rewriter.dict_read(node)
        if new is None:
            return out
        out = node = new


def prepare(tree, code, cp):
    """Rewrites the accepted forms of `tree` in place (see the module's comment); returns the
    findings for their refused shapes."""
    calls = "getattr" in code or "hasattr" in code or "vars" in code
    dicts = "__dict__" in code
    if not calls and not dicts:
        return []
    rewriter = _Rewriter(cp)
    if dicts:
        _mark_dict_writes(tree, rewriter)
    _rewrite(tree, rewriter, calls, dicts)
    return rewriter.found


def guarded_imports(tree, code):
    """ids of the Import / ImportFrom nodes inside the body of a `try` that has an
    `except ImportError` (or ModuleNotFoundError, or a tuple with one) handler."""
    if "ImportError" not in code and "ModuleNotFoundError" not in code:
        return frozenset()
    out = set()
    for node in ast.walk(tree):
        cls = node.__class__
        if cls is not ast.Try and cls is not getattr(ast, "TryStar", None):
            continue
        if not any(_catches_import_error(h.type) for h in node.handlers):
            continue
        todo = list(node.body)
        while todo:
            stmt = todo.pop()
            scls = stmt.__class__
            if scls is ast.Import or scls is ast.ImportFrom:
                out.add(id(stmt))
            elif scls in (ast.If, ast.With, ast.Try):
                # Nested blocks of the same body: their imports raise into this try too.
                for field in ("body", "orelse", "finalbody"):
                    todo.extend(getattr(stmt, field, ()) or ())
    return frozenset(out)


def _catches_import_error(handler_type):
    if handler_type is None:
        return False
    if handler_type.__class__ is ast.Name:
        return handler_type.id in _IMPORT_ERRORS
    if handler_type.__class__ is ast.Tuple:
        return any(e.__class__ is ast.Name and e.id in _IMPORT_ERRORS for e in handler_type.elts)
    return False


def sys_problem(attr):
    """Why `sys.<attr>` is refused (message, hint), or None."""
    if attr in SYS_FIELDS:
        return None
    return ("sys.%s is not available: sys is a read-only view" % attr,
            SYS_ATTRIBUTE_HINTS.get(attr, _HINT_SYS))


def sys_stream_problem(stream, attr):
    if attr in SYS_STREAM_FIELDS:
        return None
    return ("sys.%s.%s is not available: sys.%s has write() and flush() only"
            % (stream, attr, stream),
            "call sys.%s.write(text) and sys.%s.flush(), or print(..., file=sys.%s)"
            % (stream, stream, stream))
