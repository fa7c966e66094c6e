"""The AST checker: one iterative pass over CPython's own ast, then a few cheap resolutions.

Why not ast.NodeVisitor: NodeVisitor recurses (a deep tree would raise RecursionError inside
the host) and its getattr-per-node dispatch costs more than parsing. This walker goes level
by level (so the depth is known per level and too-deep is decided before any recursive code
could run), dispatches on the node's class through a dict to a small function generated from
the class's field list (its handler call and its children, with no per-field dispatch), and
never descends into ctx/operator nodes. Name nodes are only collected during the walk; the
checks on them run afterwards on the set of their ids.

Checks that need the whole program (is this name an alias of os? is this template name bound
only to string literals? does this `input` name a local parameter? see scopes.py) are recorded
during the walk and resolved afterwards; the extra walks run only when such a record exists.
"""

from . import nodes as ast  # the ast module's nodes and walkers, without its import cost
from _operator import attrgetter  # operator's own, without operator.py (~0.6 ms to import)
import time

from . import bindings
from . import classes
from . import forms
from . import policy as P
from . import report as R
from . import scopes
from .awaits import find_unawaited

_Name = ast.Name
_Attribute = ast.Attribute
_Constant = ast.Constant
_Load = ast.Load
_Call = ast.Call
_Starred = ast.Starred
_Tuple = ast.Tuple
_List = ast.List
_Subscript = ast.Subscript
_BinOp = ast.BinOp
_get_id = attrgetter("id")

_PARSE_FLAGS = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT

# Fields that never hold a node we need to visit: identifiers and flags (str / int / bool),
# expression contexts and operators (singletons without children), and import aliases
# (handled by the Import / ImportFrom handlers).
_SKIP_FIELDS = frozenset({
    "ctx", "op", "ops", "id", "attr", "name", "names", "arg", "asname", "module", "level",
    "kind", "type_comment", "type_ignores", "conversion", "is_async", "kwd_attrs", "rest",
    "simple", "tag",
})

# ASDL types of fields that never hold a node we need to visit (see _SKIP_FIELDS).
_SKIP_TYPES = frozenset({
    "identifier", "int", "string", "constant", "expr_context", "operator", "cmpop", "boolop",
    "unaryop", "type_ignore", "alias",
})

# node class -> its walker function or None, made on first use (_walker_for). None is what an
# empty optional field hands to the walk.
_walkers = {type(None): None}


def _fields_of(cls):
    """The names of the fields of `cls` that can hold child nodes."""
    if cls is _Constant or cls is ast.MatchSingleton:
        return ()
    return tuple(f for f in cls._fields if f not in _SKIP_FIELDS)


def _field_kinds(cls):
    """{field: "*" (list), "?" (node or None) or "" (node)} from the ASDL signature that
    CPython puts in the class docstring (`Call(expr func, expr* args, keyword* keywords)`), or
    None when the docstring does not have that shape."""
    doc = (cls.__doc__ or "").strip()
    head, sep, rest = doc.partition("(")
    if head != cls.__name__ or not sep or not rest.endswith(")"):
        return None
    kinds = {}
    names = []
    for part in rest[:-1].split(","):
        words = part.split()
        if not words:
            continue
        if len(words) != 2:
            return None
        typ, name = words
        names.append(name)
        if typ.rstrip("*?") not in _SKIP_TYPES:
            kinds[name] = typ[-1] if typ[-1] in "*?" else ""
    if tuple(names) != tuple(cls._fields):
        return None
    return kinds


def _walker_for(cls):
    """Makes the walker of node class `cls`: a function (checker, node, push, extend) that
    runs the class's handler, if any, and hands the node's children to push (one node, or
    None for an empty optional field) and extend (a list of them; list items may be None).
    Generated from the field list so that the walk does no per-field dispatch; None when the
    class has neither children nor a handler (Constant, contexts, operators). The fields are
    read before anything else happens, so a node without some field (built by hand, not by the
    parser) raises AttributeError before any side effect and goes to _walk_slowly instead."""
    handler = _HANDLERS.get(cls)
    kinds = _field_kinds(cls)
    reads = []
    hands = []
    for i, field in enumerate(_fields_of(cls)):
        kind = kinds.get(field) if kinds is not None else "unknown"
        if kind is None:
            continue   # an identifier, operator, ... field (by its type)
        reads.append("    f%d = node.%s" % (i, field))
        if kind == "*":
            hands.append("    if f%d:\n        extend(f%d)" % (i, i))    # often empty
        elif kind == "?":
            hands.append("    if f%d is not None:\n        push(f%d)" % (i, i))
        elif kind == "":
            hands.append("    push(f%d)" % i)
        else:   # no usable signature: decide at run time
            hands.append("    if f%d.__class__ is list:\n        extend(f%d)\n    else:\n"
                         "        push(f%d)" % (i, i, i))
    if handler is not None:
        guard = _HANDLER_GUARDS.get(cls)
        if guard is None:
            reads.append("    handler(checker, node)")
        else:   # a handler for few nodes of a common class: test inline, call only then
            reads.append("    if %s:\n        handler(checker, node)" % guard)
    walker = None
    if reads:
        source = "def walk(checker, node, push, extend):\n%s\n" % "\n".join(reads + hands)
        namespace = {"handler": handler, "Name": _Name}
        exec(compile(source, "<walker %s>" % cls.__name__, "exec"), namespace)
        walker = namespace["walk"]
    _walkers[cls] = walker
    return walker


def _walk_slowly(checker, node, push, extend):
    """A walker for a node that lacks some field (built by hand, not by the parser)."""
    handler = _HANDLERS.get(node.__class__)
    if handler is not None:
        handler(checker, node)
    for field in _fields_of(node.__class__):
        value = getattr(node, field, None)
        if value.__class__ is list:
            extend(value)
        else:
            push(value)


def _loc(node):
    return (getattr(node, "lineno", 0) or 0), (getattr(node, "col_offset", 0) or 0)


def _attr_loc(node):
    """Where the attribute NAME starts (the Attribute node itself starts at its object)."""
    end_line = getattr(node, "end_lineno", None)
    end_col = getattr(node, "end_col_offset", None)
    if end_line is None or end_col is None:
        return _loc(node)
    attr = node.attr
    width = len(attr) if attr.isascii() else len(attr.encode("utf-8", "surrogatepass"))
    return end_line, max(end_col - width, 0)


def _too_deep(node, max_depth):
    line, col = _loc(node)
    return (line, col, R.TOO_DEEP,
            "the code is nested more than %d levels deep (syntax tree depth)" % max_depth,
            "flatten the nesting: use intermediate variables, loops or helper functions")


def _first_too_deep(level):
    """The first child, in depth-first order, of a node of `level` (the deepest allowed
    level), or None when those nodes have no children."""
    for node in reversed(level):
        if node is None:
            continue
        for field in _fields_of(node.__class__):
            value = getattr(node, field, None)
            if value is None:
                continue
            if value.__class__ is list:
                for child in value:
                    if child is not None:
                        return child
            else:
                return value
    return None


def _is_dunder(name):
    return len(name) > 4 and name[:2] == "__" and name[-2:] == "__"


def _short(text, limit=60):
    return text if len(text) <= limit else text[:limit - 3] + "..."


_HINT_PROCESS = ("processes cannot be started; use `await call_tool(...)` to reach host "
                 "capabilities")
_HINT_OS = ("os is limited to os.environ and os.path: use os.environ.get(name) instead of "
            "os.getenv, pathlib.Path for files (Path.cwd, Path.iterdir, Path.mkdir, "
            "Path.unlink), and `await call_tool(...)` to reach host capabilities")
_HINT_DUNDER = ("use isinstance(), type(x).__name__ or the object's public API; vars(obj) copies "
                "an instance's public attributes; readable dunder attributes: %s")
_HINT_PRIVATE = "use the module's public API"
_HINT_PIVOT = ("import the modules you need directly (allowed ones only); reaching a module "
               "through another module is not allowed")
_HINT_INTERNAL = "frame, code and generator internals are not available; print() what you need"
_HINT_FORMAT_ATTR = ("format the value yourself: pass it as an argument "
                     "(\"{}\".format(obj.public_attr)) or use an f-string")
_HINT_FORMAT_DYNAMIC = ("write the template as a string literal (\"Hello {name}\".format(...)) "
                        "or use an f-string")
_HINT_MATCH = "match on public attributes only"
_HINT_MODULE_VALUE = ("use the module's attributes directly (json.loads(...)) and pass the "
                      "functions or values you need, not the module; if a variable of yours "
                      "has the module's name, rename the variable")
_HINT_ENVIRON = ("use os.environ as a mapping: os.environ.get(name, default), os.environ[name], "
                 "`name in os.environ`, .keys(), .items(), .values(), .copy(), .setdefault(), "
                 ".pop(), .update()")
_HINT_NONASCII = "write identifiers in plain ASCII letters"


def _attribute_problem(name, cp, private_is_bad):
    """Why reading attribute `name` of an unknown object is not allowed, or None. Used for
    fields of format templates and keyword patterns of match classes."""
    if name.startswith("_"):
        if private_is_bad:
            return "the private attribute .%s" % name
        if _is_dunder(name) and name not in cp.safe_dunders:
            return "the dunder attribute .%s" % name
    if name in P.INTERNAL_ATTRIBUTES:
        return "the interpreter internal .%s" % name
    if name in P.PIVOT_ATTRIBUTES_ANYWHERE:
        return "the module attribute .%s" % name
    if name in P.MODULE_ATTRIBUTES_ANYWHERE:
        return "the blocked attribute .%s" % name
    if name in P.NETWORK_ATTRIBUTES or _network_private(name):
        return "the network API .%s" % name
    if "subprocess" in name.lower():
        return "the attribute .%s" % name
    return None


def _network_private(name):
    """`sock_*`, or an underscore spelling of the loop's network API and internals."""
    if name.startswith(P.NETWORK_PREFIX):
        return True
    if name[:1] != "_":
        return False
    bare = name.lstrip("_")
    return bare in P.NETWORK_PRIVATE_ATTRIBUTES or bare.startswith(P.NETWORK_PREFIX)


def _pattern_name_problem(name, cp):
    """Why a class pattern may not read attribute `name` (a keyword of the pattern, or a name
    of the class's __match_args__), or None."""
    if _is_dunder(name):
        return "the dunder attribute .%s" % name
    return _attribute_problem(name, cp, False)


def _template_problems(template, cp):
    """(field, reason) for each field of a str.format template that reaches a disallowed
    attribute or a private key. Uses CPython's own template parser, so it reads the template
    exactly as str.format will; a malformed tail stops str.format too, after the fields
    before it were already evaluated, and those were checked."""
    import _string
    out = []
    todo = [(template, 0)]
    while todo:
        text, level = todo.pop()
        try:
            for _literal, field, spec, _conversion in _string.formatter_parser(text):
                if field is not None:
                    _first, rest = _string.formatter_field_name_split(field)
                    for is_attr, key in rest:
                        if is_attr:
                            why = _attribute_problem(key, cp, True)
                            if why:
                                out.append((field, why))
                        elif isinstance(key, str) and key.startswith("_"):
                            out.append((field, "the private key [%s]" % key))
                if spec and "{" in spec and level < 4:
                    todo.append((spec, level + 1))
        except ValueError:
            pass
    return out


class Checker:
    """Checks one tree under one CompiledPolicy. Not shared between threads or calls."""

    # Slots: a checker is made per validation, and its forty fields would otherwise build and
    # grow a dict each time.
    __slots__ = (
        "cp", "nesting", "found", "names", "name_ids", "name_attributes", "alias_sources",
        "edges", "bound", "module_chains", "builtin_names", "format_names", "unbound_formats",
        "tree", "_calls", "chain_values", "module_candidates", "attribute_stores",
        "environ_uses", "class_scope_values", "decorator_uses", "decorator_binds",
        "class_decorators", "function_decorators", "import_names", "import_tops", "params",
        "defs", "others", "module_binds", "class_with_bases",
        "alias_targets", "alias_sources_of", "call_targets", "annotation_only", "classes",
        "class_infos", "positional_patterns", "dataclass_positions", "guarded_imports",
    )

    def __init__(self, cp, nesting=0, guarded_imports=frozenset()):
        self.cp = cp
        # id of the imports inside `try:` with an `except ImportError` (forms.guarded_imports)
        self.guarded_imports = guarded_imports
        self.nesting = nesting      # > 0 inside a string annotation
        self.found = []             # (line, col, rule, message, hint)
        self.names = []             # every Name node
        self.name_ids = None        # the set of their ids, once the walk is done
        self.name_attributes = []   # every Attribute whose object is a Name
        self.alias_sources = set()  # id(Name) that is the whole right side of `x = name`
        self.edges = []             # (target, source, ".attr" suffix) of `target = source...`
        self.bound = {}             # name -> set of dotted origins, from import statements
        self.module_chains = []     # Attribute nodes to check if rooted at a module
        self.builtin_names = []     # Name nodes spelling a blocked builtin
        self.format_names = []      # (name, Attribute) for `NAME.format(...)`
        self.unbound_formats = []   # `str.format` / `str.format_map` Attribute nodes
        self.tree = None
        self._calls = None          # id(func) -> Call, built only when a message needs it
        # Modules as values, module attributes written (resolved after the walk).
        self.chain_values = set()   # id(Attribute) that is the object of another Attribute
        self.module_candidates = [] # `x.<submodule name>` Attribute nodes
        self.attribute_stores = []  # Attribute nodes assigned or deleted
        self.environ_uses = []      # `<x>.environ.<attr>` Attribute nodes
        self.class_scope_values = set()  # id of `name = <value>` values in class bodies
        # Decorator-only callables: where they are used and where they may be.
        self.decorator_uses = []    # `.dataclass` / `.wraps` Attribute nodes
        self.decorator_binds = {}   # name -> "dataclass" / "wraps", from import statements
        self.class_decorators = {}  # id of class decorator (or its func) -> (class, index)
        self.dataclass_positions = []     # (class, index) of each @dataclass
        self.function_decorators = set()  # id(func) of `@f(one_argument)` on a def
        # What binds each name (bindings.py) and the classes (classes.py).
        self.import_names = set()
        self.import_tops = set()    # top-level modules named by the import statements
        self.module_binds = {}      # name -> module, from import statements
        self.class_with_bases = False  # a class statement has bases or keywords
        self.params = set()
        self.defs = set()
        self.others = set()
        self.alias_targets = set()  # id(Name) bound by `x = name` / `x = a.b`
        self.alias_sources_of = {}  # x -> the root names of the values bound to it by alias
        self.call_targets = {}      # id(Name) bound by `x = f(...)` -> the Call
        self.annotation_only = set()  # id(Name) of `x: T` without a value in a class body
        self.classes = set()
        self.class_infos = {}       # class name -> [ClassInfo]
        self.positional_patterns = []  # MatchClass nodes with positional sub-patterns

    def add(self, line, col, rule, message, hint):
        self.found.append((line, col, rule, message, hint))

    # --- the walk -------------------------------------------------------------------------

    def check(self, tree, deadline=None):
        """Returns the findings as (line, col, rule, message, hint) tuples."""
        self.tree = tree
        walkers = _walkers
        max_depth = self.cp.max_ast_depth
        names = self.names
        add_name = names.append
        Name = _Name
        # Level by level: every node of `level` is at depth `depth` (the tree is at depth 1),
        # so the depth limit is checked once per level, before the children of the deepest
        # allowed level are walked. A level also holds the None of empty optional fields.
        level = [tree]
        depth = 1
        next_clock = 1024
        count = 0
        while level:
            if depth >= max_depth:
                deep = _first_too_deep(level)
                if deep is not None:
                    return [_too_deep(deep, max_depth)]
            nxt = []
            push = nxt.append
            extend = nxt.extend
            for node in level:
                cls = node.__class__
                if cls is Name:     # a quarter of a typical tree: resolved after the walk
                    add_name(node)
                    continue
                try:
                    walker = walkers[cls]
                except KeyError:
                    walker = _walker_for(cls)
                if walker is not None:
                    try:
                        walker(self, node, push, extend)
                    except AttributeError:
                        _walk_slowly(self, node, push, extend)
            if deadline is not None:
                # The clock is read once per level, at most every 1024 nodes.
                count += len(level)
                if count >= next_clock:
                    next_clock = count + 1024
                    if time.perf_counter() > deadline:
                        return [(0, 0, R.TOO_COMPLEX,
                                 "validation took longer than %d ms"
                                 % self.cp.policy.validation_timeout_ms,
                                 "split the work into smaller execute_code calls")]
            level = nxt
            depth += 1
        ids = self.name_ids = set(map(_get_id, names))
        flagged = self.cp.flagged_names
        if not flagged.isdisjoint(ids):
            for node in names:
                if node.id in flagged:
                    self._flagged_name(node)
        if "__annotations__" in ids:
            for node in names:
                if node.id == "__annotations__":
                    line, col = _loc(node)
                    self.add(line, col, R.ANNOTATION_DYNAMIC,
                             "__annotations__ may not be used: the interpreter builds it from "
                             "the annotations you write, and typing and dataclasses read it "
                             "as code and field names", "write annotations (x: int) instead")
        self._finish(tree)
        return self.found

    # --- handlers (called before the node's children are visited) ------------------------

    def _flagged_name(self, node):
        name = node.id
        if name in P.ALWAYS_BLOCKED_NAMES:
            line, col = _loc(node)
            self.add(line, col, R.BUILTIN_BLOCKED,
                     "the name %s is not allowed" % name, P.BUILTIN_HINTS[name])
        else:
            self.builtin_names.append(node)

    def _attribute(self, node):
        attr = node.attr
        value = node.value
        vcls = value.__class__
        if vcls is _Name:
            self.name_attributes.append(node)
        elif vcls is _Attribute:
            self.chain_values.add(id(value))
            if value.attr == "environ":
                self.environ_uses.append(node)
        if node.ctx.__class__ is not _Load:
            self.attribute_stores.append(node)
        cp = self.cp
        if attr in cp.watched_attributes:
            self._watched_attribute(node, attr, value)
        if attr[0] == "_":
            if _is_dunder(attr):
                if attr not in cp.safe_dunders:
                    line, col = _attr_loc(node)
                    self.add(line, col, R.ATTRIBUTE_DUNDER,
                             "access to the dunder attribute .%s is not allowed" % attr,
                             _HINT_DUNDER % ", ".join(sorted(cp.safe_dunders)))
                elif attr not in _MODULE_DUNDERS:
                    self.module_chains.append(node)     # readable, but not on a module
            else:
                self.module_chains.append(node)
                bare = attr.lstrip("_")
                if bare in P.NETWORK_PRIVATE_ATTRIBUTES or bare.startswith(P.NETWORK_PREFIX):
                    self._network(node)
        elif attr[0] == "s" and attr.startswith(P.NETWORK_PREFIX):
            self._network(node)
        if len(attr) >= 10 and "subprocess" in attr.lower():
            line, col = _attr_loc(node)
            self.add(line, col, R.ATTRIBUTE_SUBPROCESS,
                     "the attribute .%s belongs to the process-spawning API" % attr,
                     _HINT_PROCESS)

    def _network(self, node):
        line, col = _attr_loc(node)
        self.add(line, col, R.ATTRIBUTE_NETWORK,
                 "the attribute .%s belongs to asyncio's network API" % node.attr,
                 self.cp.network_hint)

    def _watched_attribute(self, node, attr, value):
        cp = self.cp
        if attr in P.INTERNAL_ATTRIBUTES:
            line, col = _attr_loc(node)
            self.add(line, col, R.ATTRIBUTE_INTERNAL,
                     "access to the interpreter internal .%s is not allowed" % attr,
                     _HINT_INTERNAL)
        if attr in P.PIVOT_ATTRIBUTES_ANYWHERE:
            line, col = _attr_loc(node)
            self.add(line, col, R.ATTRIBUTE_MODULE_PIVOT,
                     "access to the attribute .%s is not allowed: it names the blocked module "
                     "%s" % (attr, attr.lstrip("_")), _HINT_PIVOT)
        if attr in cp.pivot_on_modules:
            self.module_chains.append(node)
        gadget = P.GADGET_ATTRIBUTES.get(attr)
        if gadget is not None:
            line, col = _attr_loc(node)
            self.add(line, col, R.MODULE_ATTRIBUTE_BLOCKED,
                     "%s is not allowed (also as .%s of any object)" % (gadget[0], attr),
                     gadget[1])
        elif attr in _EXCEPTION_ATTRS:
            self.module_chains.append(node)
        if attr in P.NETWORK_ATTRIBUTES:
            self._network(node)
        if attr in P.DECORATOR_ONLY:
            self.decorator_uses.append(node)
        if attr in cp.submodule_attributes:
            self.module_candidates.append(node)
        if attr in P.FORMAT_METHODS:
            if value.__class__ is _Name and value.id == "str":
                self.unbound_formats.append(node)
            else:
                self._template(value, node)

    def _unbound_format(self, calls_by_func):
        """`str.format(template, ...)`: the template is the first argument of the call; taken
        as a value (`f = str.format`) the template is unknown."""
        for at in self.unbound_formats:
            call = calls_by_func.get(id(at))
            if call is None:
                self._dynamic_format(at)
            elif call.args:
                first = call.args[0]
                if first.__class__ is _Starred:
                    self._dynamic_format(at)
                else:
                    self._template(first, at)

    def _template(self, expr, at):
        cls = expr.__class__
        if cls is _Constant:
            if isinstance(expr.value, str):
                self._literal_template(expr.value, at)
        elif cls is _Name:
            self.format_names.append((expr.id, at))
        else:
            self._dynamic_format(at)

    def _literal_template(self, template, at):
        if "{" not in template:
            return
        problems = _template_problems(template, self.cp)
        if problems:
            line, col = _attr_loc(at)
            for field, why in problems:
                self.add(line, col, R.FORMAT_ATTRIBUTE,
                         "the format field {%s} reads %s" % (_short(field), why),
                         _HINT_FORMAT_ATTR)

    def _dynamic_format(self, at):
        if not self.cp.allow_dynamic_format:
            line, col = _attr_loc(at)
            self.add(line, col, R.FORMAT_DYNAMIC,
                     ".%s is called on a template that is not a string literal" % at.attr,
                     _HINT_FORMAT_DYNAMIC)

    def _import(self, node):
        cp = self.cp
        for alias in node.names:
            name = alias.name
            why = self._import_refused(node, name)
            if why:
                line, col = _loc(alias)
                self.add(line, col, R.IMPORT_BLOCKED,
                         "import of %s is not allowed (%s)" % (name, why),
                         _import_hint(name, cp))
            top = name.split(".", 1)[0]
            if alias.asname:
                self._bind(alias.asname, name)
            else:
                self._bind(top, top)

    def _import_from(self, node):
        cp = self.cp
        if node.level:
            line, col = _loc(node)
            self.add(line, col, R.IMPORT_RELATIVE,
                     "relative import (from %s%s import ...) is not allowed"
                     % ("." * node.level, node.module or ""),
                     "import allowed modules by their absolute name; the code is not part of "
                     "a package")
            return
        module = node.module or ""
        why = self._import_refused(node, module)
        if why:
            line, col = _loc(node)
            self.add(line, col, R.IMPORT_BLOCKED,
                     "import from %s is not allowed (%s)" % (module, why),
                     _import_hint(module, cp))
        memo = cp.from_import_memo
        bind = self._bind
        for alias in node.names:
            name = alias.name
            if name == "*":
                aline, acol = _loc(alias)
                self.add(aline, acol, R.IMPORT_STAR,
                         "from %s import * is not allowed" % module,
                         "import the names you need: from %s import a, b" % module)
                continue
            if module == "sys" and not why and cp.import_allowed("sys"):  # the view
                problem = forms.sys_problem(name)
                if problem is not None:
                    aline, acol = _loc(alias)
                    self.add(aline, acol, R.IMPORT_BLOCKED, "from sys import %s: %s"
                             % (name, problem[0]), problem[1])
            elif module != "__future__":
                problems = memo.get((module, name))
                if problems is None:
                    problems = _from_name_problems(module, name, cp)
                    if len(memo) < 4096:
                        memo[(module, name)] = problems
                if problems:
                    aline, acol = _loc(alias)
                    for rule, message, hint in problems:
                        self.add(aline, acol, rule, message, hint)
            bind(alias.asname or name, module + "." + name)

    def _import_refused(self, node, dotted):
        """import_allowed(dotted), less the accepted forms: `sys` (the read-only view) and a
        module that is not available imported inside `try:` with an `except ImportError`."""
        cp = self.cp
        why = cp.import_allowed(dotted)
        if not why:
            return None
        if dotted == "sys" and "sys" not in cp.blocked_user:
            return None
        if id(node) in self.guarded_imports and cp.import_unavailable(dotted):
            return None
        return why

    def _bind(self, name, origin):
        self.import_names.add(name)
        memo = self.cp.origin_memo
        facts = memo.get(origin)
        if facts is None:
            facts = (origin.partition(".")[0], self.cp.is_module(origin),
                     _DECORATOR_ONLY_BY_ORIGIN.get(origin))
            if len(memo) < 4096:
                memo[origin] = facts
        self.import_tops.add(facts[0])
        if facts[1]:
            self.module_binds[name] = origin
        elif facts[2] is not None:
            self.decorator_binds[name] = facts[2]
        origins = self.bound.get(name)
        if origins is None:
            self.bound[name] = {origin}
        else:
            origins.add(origin)

    def _assign(self, node):
        value = node.value
        vcls = value.__class__
        if vcls is _Call:
            # `Point = namedtuple(...)`: the call is kept for the class rules (bindings.py).
            for target in node.targets:
                if target.__class__ is _Name:
                    self.call_targets[id(target)] = value
            return
        if vcls is not _Name and vcls is not _Attribute and vcls is not _Tuple \
                and vcls is not _List:
            return
        for target in node.targets:
            self._pair(target, value)

    def _pair(self, target, value):
        """Records `name = name` bindings, through tuple unpacking of equal length."""
        todo = [(target, value)]
        class_scope = self.class_scope_values
        while todo:
            t, v = todo.pop()
            tcls = t.__class__
            if tcls is _Name:
                vcls = v.__class__
                if vcls is _Name:
                    self.edges.append((t.id, v.id, ""))
                    self.alias_targets.add(id(t))
                    self.alias_sources_of.setdefault(t.id, set()).add(v.id)
                    if id(v) not in class_scope:
                        self.alias_sources.add(id(v))
                elif vcls is _Attribute:
                    # `x = asyncio.base_events` makes x a module too.
                    self.alias_targets.add(id(t))
                    if id(v) not in class_scope:
                        self.alias_sources.add(id(v))
                    parts = []
                    while vcls is _Attribute and len(parts) < 6:
                        parts.append(v.attr)
                        v = v.value
                        vcls = v.__class__
                    if vcls is _Name:
                        parts.reverse()
                        self.edges.append((t.id, v.id, "." + ".".join(parts)))
                        self.alias_sources_of.setdefault(t.id, set()).add(v.id)
                    else:   # `x = f().a`: an alias of nothing the checker knows
                        self.alias_sources_of.setdefault(t.id, set()).add("")
            elif (tcls is _Tuple or tcls is _List) and v.__class__ in (_Tuple, _List):
                te, ve = t.elts, v.elts
                if (len(te) == len(ve) and not any(e.__class__ is _Starred for e in te)
                        and not any(e.__class__ is _Starred for e in ve)):
                    todo.extend(zip(te, ve))

    def _ann_assign(self, node):
        self._annotation(node.annotation)
        if node.value is not None:
            self._pair(node.target, node.value)

    def _named_expr(self, node):
        # `(w := os)` binds w AND yields os to the enclosing expression, so the source is not
        # marked as a pure alias source: `(w := os).system` must still be caught at `os`.
        target = node.target
        if node.value.__class__ is _Name and target.__class__ is _Name:
            self.edges.append((target.id, node.value.id, ""))
        if target.__class__ is _Name and _is_dunder(target.id):
            # In a class body a walrus binds a class attribute (`(__instancecheck__ := f)`);
            # classes.scan_body does not enter expressions, so it is refused everywhere.
            line, col = _loc(target)
            self.add(line, col, R.CLASS_HOOK,
                     "the walrus binds the dunder name %s" % target.id,
                     "bind ordinary names with :=")

    def _function(self, node):
        self.defs.add(node.name)
        if node.returns is not None:
            self._annotation(node.returns)
        for dec in node.decorator_list:
            # `@functools.wraps(fn)`: one plain argument. Its `assigned`/`updated` arguments
            # name the attributes it copies, so any other shape is refused (decorator-only).
            if (dec.__class__ is _Call and len(dec.args) == 1 and not dec.keywords
                    and dec.args[0].__class__ is not _Starred):
                self.function_decorators.add(id(dec.func))

    def _class_def(self, node):
        self.classes.add(node.name)
        if node.bases or node.keywords:
            self.class_with_bases = True
        for index, dec in enumerate(node.decorator_list):
            self.class_decorators[id(dec)] = (node, index)
            if dec.__class__ is _Call and not dec.args:
                self.class_decorators[id(dec.func)] = (node, index)  # @dataclass(frozen=True)
        for k in node.keywords:
            if k.arg is None:
                line, col = _loc(k)
                self.add(line, col, R.CLASS_METACLASS,
                         "class %s takes keyword arguments from **%s, which may name a "
                         "metaclass" % (node.name, classes.source_text(k.value)),
                         "write the class keywords out (total=False, metaclass=abc.ABCMeta)")
        info = classes.scan_body(node, self)
        self.class_infos.setdefault(node.name, []).append(info)

    def _arg(self, node):
        self.params.add(node.arg)
        if node.annotation is not None:
            self._annotation(node.annotation)

    def _capture(self, node):
        # except ... as e, case [*rest], case x, case _ as x
        if node.name:
            self.others.add(node.name)

    def _call(self, node):
        # Called for `type(...)` only (_HANDLER_GUARDS).
        func = node.func
        if func.__class__ is _Name and func.id == "type":
            args = node.args
            if (len(args) + len(node.keywords) > 1
                    or any(a.__class__ is _Starred for a in args)):
                line, col = _loc(node)
                self.add(line, col, R.CLASS_DYNAMIC,
                         "type() with more than one argument builds a class at run time",
                         "write a class statement; type(x) with one argument is fine")

    def _match_class(self, node):
        if node.patterns:
            self.positional_patterns.append(node)
        patterns = node.kwd_patterns
        for i, name in enumerate(node.kwd_attrs):
            # Any dunder, even a readable one: a class pattern is a getattr() in disguise.
            why = _pattern_name_problem(name, self.cp)
            if why:
                line, col = _loc(patterns[i] if i < len(patterns) else node)
                self.add(line, col, R.MATCH_DUNDER,
                         "the class pattern keyword %s= reads %s" % (name, why), _HINT_MATCH)

    def _match_mapping(self, node):
        if node.rest:
            self.others.add(node.rest)
        for key in node.keys:
            if (key.__class__ is _Constant and isinstance(key.value, str)
                    and _is_dunder(key.value)):
                line, col = _loc(key)
                self.add(line, col, R.MATCH_DUNDER,
                         "the mapping pattern key %r is a dunder name" % key.value, _HINT_MATCH)

    # --- string annotations -----------------------------------------------------------------

    def _annotation(self, ann):
        """An annotation must be a type expression: names, X.Y, X[...], X | Y, None, `...`
        and string forms of those. typing.get_type_hints, functools.singledispatch and friends
        eval() string annotations, so a string in an annotation is code: it is parsed and
        checked the same way. Anything else (a call, an f-string, `"a" + b`) computes the
        annotation at run time and is rejected (annotation-dynamic)."""
        if ann.__class__ is _Name:
            return
        todo = [ann]
        while todo:
            node = todo.pop()
            cls = node.__class__
            if cls is _Name:
                continue
            if cls is _Attribute:
                root = node.value
                while root.__class__ is _Attribute:
                    root = root.value
                if root.__class__ is not _Name:
                    self._dynamic_annotation(node)
            elif cls is _Constant:
                value = node.value
                if isinstance(value, str):
                    self._string_annotation(node)
                elif value is not None and value is not Ellipsis:
                    self._dynamic_annotation(node)
            elif cls is _Subscript:
                base = node.value
                todo.append(base)
                base_name = (base.id if base.__class__ is _Name
                             else base.attr if base.__class__ is _Attribute else None)
                if base_name == "Annotated":
                    # Annotated[T, metadata...]: only T is a type; metadata is data.
                    sl = node.slice
                    todo.append(sl.elts[0] if sl.__class__ is _Tuple and sl.elts else sl)
                elif base_name != "Literal":    # Literal["eval"] holds data, not a type
                    todo.append(node.slice)
            elif cls is _Tuple or cls is _List:
                todo.extend(node.elts)
            elif cls is _BinOp and node.op.__class__ is ast.BitOr:
                todo.append(node.left)
                todo.append(node.right)
            elif cls is _Starred:       # *Ts (a TypeVarTuple)
                todo.append(node.value)
            else:
                self._dynamic_annotation(node)

    def _dynamic_annotation(self, node):
        line, col = _loc(node)
        self.add(line, col, R.ANNOTATION_DYNAMIC,
                 "the annotation computes a value at run time (%s); annotations must be type "
                 "expressions" % _short(classes.source_text(node)),
                 "write the type itself (int, list[str], Optional[Path], \"Node\"); compute "
                 "values outside annotations")

    def _string_annotation(self, const):
        text = const.value
        line, col = _loc(const)
        if self.nesting >= 3:
            self.add(line, col, R.TOO_DEEP, "string annotations are nested too deeply",
                     "write annotations without quotes, or one level of quotes")
            return
        tree = None
        for wrapped, source in ((False, text), (True, "(%s,)[0]" % text)):
            # typing compiles "*Ts" as "(*Ts,)[0]"
            try:
                tree = compile(source, "<annotation>", "eval", ast.PyCF_ONLY_AST,
                               dont_inherit=True)
                break
            except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
                continue
        if tree is None:
            return  # typing cannot compile it either, so it is never evaluated
        sub = Checker(self.cp, self.nesting + 1)
        sub._annotation(tree.body.value if wrapped else tree.body)
        for _l, _c, rule, message, hint in sub.check(tree):
            self.add(line, col, rule,
                     "in the string annotation %r: %s" % (_short(text, 40), message), hint)

    # --- resolution after the walk ----------------------------------------------------------

    def _finish(self, tree):
        cp = self.cp
        known = cp.known_modules
        edges = self.edges
        origins = self.bound    # not needed afterwards: extended in place
        if edges:
            # Worklist propagation of origins along `target = source[.suffix]`. `x = x.a` would
            # grow forever, so dotted origins stop at 8 parts.
            outgoing = {}
            for target, source, suffix in edges:
                outgoing.setdefault(source, []).append((target, suffix))
                if source in known:
                    origins.setdefault(source, set()).add(source)
            todo = [name for name in origins if name in outgoing]
            while todo:
                source = todo.pop()
                src = origins[source]
                for target, suffix in outgoing.get(source, ()):
                    add = {o + suffix for o in src if o.count(".") < 8} if suffix else src
                    dst = origins.setdefault(target, set())
                    if not add <= dst:
                        dst |= add
                        todo.append(target)

        ids = self.name_ids
        if ids and "subprocess" in "\n".join(ids).lower():
            self._subprocess_names()

        os_aliases = {name for name, o in origins.items() if "os" in o}
        os_aliases.add("os")
        self._check_os(os_aliases)
        if self.module_chains:
            self._check_module_chains(origins, known)
        if self.builtin_names:
            self._check_builtins(tree)
        if self.unbound_formats:
            self._unbound_format(self._calls_by_func())
        if self.format_names:
            self._check_format_names(tree)

        # Origins that come from an import statement (not from a variable that happens to be
        # named like a module: `code = "x"; y = code`).
        imported = self.import_tops
        modules, decorators = self._bound_names(origins, os_aliases)
        # One pass over the Name nodes for both rules: usually every mention of a module is
        # `module.name` and every mention of `dataclass` is a decorator.
        wanted = ids.intersection(modules.keys() | decorators.keys())
        mentions = [node for node in self.names if node.id in wanted] if wanted else ()
        if modules and mentions:
            self._check_module_values(modules, mentions)
        if imported:
            if self.module_candidates:
                self._check_module_chain_values(origins, imported)
            if self.attribute_stores:
                self._check_attribute_stores(origins, imported)
        if self.decorator_uses or decorators:
            self._check_decorator_only(decorators, mentions)
        if self.environ_uses or "os" in imported:
            self._check_environ(os_aliases, origins)
        if self.positional_patterns or self.dataclass_positions or self.class_with_bases:
            self._check_classes()
        if "sys" in imported and cp.import_allowed("sys"):  # the view, not an allowed sys
            self._check_sys(origins)

    def _check_sys(self, origins):
        """`import sys` is a read-only view (forms.SYS_FIELDS): its other attributes, and those
        of sys.stdout / sys.stderr but write and flush, are refused. Underscore attributes are
        the module-chain rule's (attribute-private)."""
        views = {name for name, o in origins.items() if "sys" in o}
        streams = {}
        for name, o in origins.items():
            for stream in ("stdout", "stderr"):
                if "sys." + stream in o:
                    streams[name] = stream
        if not views and not streams:
            return
        for node in ast.walk(self.tree):
            if node.__class__ is not _Attribute or node.attr[:1] == "_":
                continue
            value = node.value
            problem = None
            if value.__class__ is _Name:
                if value.id in views:
                    problem = forms.sys_problem(node.attr)
                elif value.id in streams:
                    problem = forms.sys_stream_problem(streams[value.id], node.attr)
            elif (value.__class__ is _Attribute and value.attr in ("stdout", "stderr")
                    and value.value.__class__ is _Name and value.value.id in views):
                problem = forms.sys_stream_problem(value.attr, node.attr)
            if problem is not None:
                line, col = _attr_loc(node)
                self.add(line, col, R.IMPORT_BLOCKED, problem[0], problem[1])

    # --- modules as values ----------------------------------------------------------------

    def _chain_origins(self, node, origins, imported):
        """The dotted origins of Attribute chain `node` (its own attribute included) when it
        is rooted at an imported name, else None; and the chain's text."""
        parts = [node.attr]
        value = node.value
        while value.__class__ is _Attribute and len(parts) < 8:
            parts.append(value.attr)
            value = value.value
        if value.__class__ is not _Name:
            return None, None
        root = origins.get(value.id)
        if not root:
            return None, None
        parts.reverse()
        suffix = "." + ".".join(parts)
        found = {o + suffix for o in root if o.partition(".")[0] in imported}
        return found or None, value.id + suffix

    def _bound_names(self, origins, os_aliases):
        """({name: module}, {name: "dataclass"/"wraps"}) for the names bound to a module or
        to a decorator-only callable by an import, or by an alias of one (`m = json`). os has
        its own rule (os-attribute)."""
        modules = self.module_binds
        decorators = self.decorator_binds
        if self.edges:
            modules = dict(modules)
            decorators = dict(decorators)
            cp = self.cp
            imported = self.import_tops
            for target in {t for t, _, _ in self.edges}:
                for o in origins.get(target, ()):
                    if cp.is_module(o) and o.partition(".")[0] in imported:
                        modules[target] = o
                        break
                    if o in _DECORATOR_ONLY_BY_ORIGIN:
                        decorators[target] = _DECORATOR_ONLY_BY_ORIGIN[o]
        if not os_aliases.isdisjoint(modules):
            modules = {k: v for k, v in modules.items() if k not in os_aliases}
        return modules, decorators

    def _attribute_objects(self):
        """ids of the Name nodes that are the object of an attribute (`json` in json.loads)."""
        return {id(a.value) for a in self.name_attributes}

    def _check_module_values(self, modules, mentions):
        """A module may be used as `module.name` and bound to another name (tracked); as any
        other value (an argument, a container item, a return value, a match subject, a class
        attribute) it leaves the checker's sight, and its private attributes and the modules
        it imports would be reachable through the new name."""
        named = [node for node in mentions if node.id in modules]
        if not named:
            return
        objects = self._attribute_objects()
        aliases = self.alias_sources
        uses = [node for node in named if node.ctx.__class__ is _Load
                and id(node) not in objects and id(node) not in aliases]
        if not uses:
            return
        # `def wait(time): return time` names a parameter, not the module: a module reaches a
        # function-local name only through an import or an alias assignment there, or through
        # a value use this rule rejects where it happens.
        exempt = scopes.locally_bound(self.tree, {id(n) for n in uses}, plain_only=True)
        for node in uses:
            if id(node) not in exempt:
                name = node.id
                module = modules[name]
                label = name if name == module else "%s (the module %s)" % (name, module)
                line, col = _loc(node)
                self.add(line, col, R.MODULE_VALUE,
                         "the module %s is used as a value; a module may only be used as "
                         "%s.name" % (label, name), _HINT_MODULE_VALUE)

    def _check_module_chain_values(self, origins, imported):
        cp = self.cp
        skip = self.chain_values
        aliases = self.alias_sources
        for node in self.module_candidates:
            key = id(node)
            if key in skip or key in aliases or node.ctx.__class__ is not _Load:
                continue
            found, text = self._chain_origins(node, origins, imported)
            if not found:
                continue
            modules = sorted(o for o in found if o in cp.module_dotted)
            if modules:
                line, col = _attr_loc(node)
                label = text if text == modules[0] else "%s (the module %s)" % (text, modules[0])
                self.add(line, col, R.MODULE_VALUE,
                         "the module %s is used as a value; a module may only be used as "
                         "%s.name" % (label, text), _HINT_MODULE_VALUE)

    def _check_attribute_stores(self, origins, imported):
        """Assigning or deleting an attribute of an imported module (or of a class or
        function imported from one) changes the standard library for every later caller:
        `functools.WRAPPER_ASSIGNMENTS = ...` would turn every @wraps into a gadget."""
        for node in self.attribute_stores:
            value = node.value
            while value.__class__ is _Attribute:
                value = value.value
            if value.__class__ is not _Name:
                continue
            found = [o for o in origins.get(value.id, ()) if o.partition(".")[0] in imported]
            if not found:
                continue
            line, col = _attr_loc(node)
            verb = "deleting" if node.ctx.__class__ is ast.Del else "assigning"
            self.add(line, col, R.MODULE_ATTRIBUTE_WRITE,
                     "%s .%s of %s (imported from %s) is not allowed"
                     % (verb, node.attr, classes.source_text(node.value), sorted(found)[0]),
                     "imported modules, classes and functions are read-only; keep your own "
                     "values in your own variables, dicts or objects")

    def _check_environ(self, os_aliases, origins):
        """os.environ is a mapping; its other attributes are internals (rule os-attribute)."""
        allowed = P.OS_ENVIRON_ALLOWED_ATTRIBUTES
        bad = []
        for node in self.environ_uses:
            root = node.value.value
            if (root.__class__ is _Name and root.id in os_aliases
                    and node.attr not in allowed):
                bad.append(node)
        names = {name for name, o in origins.items() if "os.environ" in o}
        if names:
            bad.extend(a for a in self.name_attributes
                       if a.value.id in names and a.attr not in allowed)
        for node in bad:
            line, col = _attr_loc(node)
            self.add(line, col, R.OS_ATTRIBUTE,
                     "os.environ.%s is not allowed: os.environ may only be used as a mapping"
                     % node.attr, _HINT_ENVIRON)

    # --- decorators and classes ---------------------------------------------------------------

    def _check_decorator_only(self, decorators, mentions):
        uses = [(node, node.attr) for node in self.decorator_uses]
        uses.extend((node, decorators[node.id]) for node in mentions
                    if node.id in decorators and node.ctx.__class__ is _Load)
        for node, short in uses:
            if short == "dataclass":
                position = self.class_decorators.get(id(node))
                if position is not None:
                    if position[1] + 1 < len(position[0].decorator_list):
                        self.dataclass_positions.append(position)
                    continue
                message = ("dataclasses.dataclass may only decorate a class statement "
                           "(@dataclass, or @dataclass(...) with keyword arguments)")
                hint = "write `@dataclass` above a class statement"
            else:
                if id(node) in self.function_decorators:
                    continue
                message = ("functools.wraps may only decorate a function, as "
                           "@functools.wraps(fn) with one argument")
                hint = ("write `@functools.wraps(fn)` above the wrapper's def; its "
                        "assigned/updated arguments are not available")
            line, col = _attr_loc(node) if node.__class__ is _Attribute else _loc(node)
            self.add(line, col, R.DECORATOR_ONLY, message, hint)

    def _check_classes(self):
        cp = self.cp
        resolver = classes.Resolver(self, bindings.Bindings(self),
                                    lambda name: _pattern_name_problem(name, cp))
        for infos in self.class_infos.values():
            for info in infos:
                if info.node.bases or info.node.keywords:
                    resolver.check_class(info)
        for node, index in self.dataclass_positions:
            resolver.check_dataclass_position(node, index)
        for pattern in self.positional_patterns:
            why = resolver.positional_problem(pattern)
            if why:
                line, col = _loc(pattern)
                self.add(line, col, R.MATCH_POSITIONAL,
                         "the class pattern %s(...) has positional sub-patterns, which read "
                         "the attributes named by its __match_args__: %s"
                         % (_short(classes.source_text(pattern.cls)), why), classes.HINT_POSITIONAL)

    def _subprocess_names(self):
        for node in self.names:
            name = node.id
            if "subprocess" in name.lower():
                line, col = _loc(node)
                self.add(line, col, R.ATTRIBUTE_SUBPROCESS,
                         "the name %s refers to process spawning" % name, _HINT_PROCESS)

    def _calls_by_func(self):
        if self._calls is None:
            self._calls = {id(n.func): n for n in ast.walk(self.tree) if n.__class__ is _Call}
        return self._calls

    def _check_os(self, os_aliases):
        if os_aliases.isdisjoint(self.name_ids):
            return
        uses = [n for n in self.names if n.id in os_aliases and n.ctx.__class__ is _Load
                and id(n) not in self.alias_sources]
        if not uses:
            return
        attr_on_name = {id(a.value): a for a in self.name_attributes}
        for node in uses:
            name = node.id
            attr_node = attr_on_name.get(id(node))
            if attr_node is None:
                line, col = _loc(node)
                what = "os" if name == "os" else "%s (an alias of os)" % name
                self.add(line, col, R.OS_ATTRIBUTE,
                         "%s is used as a value; os may only be used as os.environ or os.path"
                         % what, _HINT_OS)
                continue
            attr = attr_node.attr
            if attr in P.OS_ALLOWED_ATTRIBUTES:
                continue
            label = "os.%s" % attr if name == "os" else "%s.%s (os.%s)" % (name, attr, attr)
            verb = "call to" if id(attr_node) in self._calls_by_func() else "use of"
            line, col = _attr_loc(attr_node)
            self.add(line, col, R.OS_ATTRIBUTE, "%s %s is not allowed" % (verb, label), _HINT_OS)

    def _check_module_chains(self, origins, known):
        cp = self.cp
        roots = {}   # id(Attribute) -> root Name node or None, shared by the chain
        for node in self.module_chains:
            path = []
            value = node.value
            while True:
                vcls = value.__class__
                if vcls is _Name:
                    root = value
                    break
                if vcls is not _Attribute:
                    root = None
                    break
                cached = roots.get(id(value), False)
                if cached is not False:
                    root = cached
                    break
                path.append(value)
                value = value.value
            for p in path:
                roots[id(p)] = root
            if root is None:
                continue
            root_origins = origins.get(root.id)
            if not root_origins:
                if root.id not in known:
                    continue
                root_origins = {root.id}
            attr = node.attr
            if (node.value is root and root_origins == _SYS_ORIGIN
                    and attr in forms.SYS_FIELDS):
                continue    # sys.platform: a field of the view, not the module platform
            # The dotted text of the object, for messages and the exception table.
            parts = []
            value = node.value
            while value.__class__ is _Attribute and len(parts) < 8:
                parts.append(value.attr)
                value = value.value
            parts.reverse()
            if value.__class__ is _Attribute:   # a longer chain: show its ends only
                shown = root.id + "..." + ".".join(parts)
                parts = None
            else:
                shown = ".".join([root.id] + parts)
            line, col = _attr_loc(node)
            if attr[0] == "_":
                if not _is_dunder(attr):
                    self.add(line, col, R.ATTRIBUTE_PRIVATE,
                             "access to the private attribute %s.%s is not allowed: %s comes "
                             "from an imported module" % (shown, attr, root.id), _HINT_PRIVATE)
                elif parts is not None and any(
                        cp.is_module(".".join([o] + parts)) for o in root_origins):
                    # A readable dunder (__init__, __iter__ ...) is still a module internal.
                    self.add(line, col, R.ATTRIBUTE_PRIVATE,
                             "access to %s.%s is not allowed: the underscore attributes of a "
                             "module are its internals" % (shown, attr), _HINT_PRIVATE)
            if attr in cp.pivot_on_modules:
                self.add(line, col, R.ATTRIBUTE_MODULE_PIVOT,
                         "access to %s.%s is not allowed: it reaches the blocked module %s"
                         % (shown, attr, attr), _HINT_PIVOT)
            if (parts is not None and attr in _EXCEPTION_ATTRS
                    and attr not in P.MODULE_ATTRIBUTES_ANYWHERE):
                for origin in sorted(root_origins):
                    module = ".".join([origin] + parts)
                    hint = P.MODULE_ATTRIBUTE_EXCEPTIONS.get((module, attr))
                    if hint is not None:
                        self.add(line, col, R.MODULE_ATTRIBUTE_BLOCKED,
                                 "%s.%s is not allowed" % (module, attr), hint)

    def _check_builtins(self, tree):
        candidates = {id(n) for n in self.builtin_names}
        exempt = scopes.locally_bound(tree, candidates)
        for node in self.builtin_names:
            if id(node) in exempt:
                continue
            name = node.id
            line, col = _loc(node)
            if id(node) in self._calls_by_func():
                message = "call to %s() is not allowed" % name
            elif node.ctx.__class__ is _Load:
                message = "use of the builtin %s is not allowed (also as a value)" % name
            else:
                message = "binding the builtin name %s is not allowed" % name
            self.add(line, col, R.BUILTIN_BLOCKED, message,
                     P.BUILTIN_HINTS.get(name, "this builtin is not available in the sandbox"))

    def _check_format_names(self, tree):
        constants = scopes.constant_strings(tree, {name for name, _ in self.format_names})
        for name, at in self.format_names:
            values = constants.get(name)
            if values is None:
                self._dynamic_format(at)
            else:
                for text in values:
                    self._literal_template(text, at)


def _from_name_problems(module, name, cp):
    """`from module import name` reads module.name: the attribute rules apply. Returns the
    (rule, message, hint) of each problem; they depend on the policy only, so the caller
    memoizes them on it."""
    out = []
    add = out.append
    full = module + "." + name
    explicitly = full in cp.allowed_exact or name in cp.allowed_exact
    if not explicitly and (name in cp.blocked_default or name in cp.blocked_user
                           or full in cp.blocked_default or full in cp.blocked_user):
        add((R.IMPORT_BLOCKED,
             "from %s import %s is not allowed: %s is a blocked module" % (module, name, name),
             _import_hint(name, cp)))
    elif name in P.PIVOT_ATTRIBUTES_ANYWHERE or name in cp.pivot_on_modules:
        add((R.ATTRIBUTE_MODULE_PIVOT,
             "from %s import %s is not allowed: it names a blocked module" % (module, name),
             _HINT_PIVOT))
    if module == "os" and name not in P.OS_ALLOWED_ATTRIBUTES:
        add((R.OS_ATTRIBUTE, "import of os.%s is not allowed" % name, _HINT_OS))
    if name.startswith("_"):
        if _is_dunder(name):
            if name not in cp.safe_dunders:
                add((R.ATTRIBUTE_DUNDER, "from %s import %s is not allowed" % (module, name),
                     _HINT_DUNDER % ", ".join(sorted(cp.safe_dunders))))
        else:
            add((R.ATTRIBUTE_PRIVATE,
                 "from %s import %s is not allowed: it is private" % (module, name),
                 _HINT_PRIVATE))
    if name in P.INTERNAL_ATTRIBUTES:
        add((R.ATTRIBUTE_INTERNAL, "from %s import %s is not allowed" % (module, name),
             _HINT_INTERNAL))
    exception = P.MODULE_ATTRIBUTE_EXCEPTIONS.get((module, name))
    if exception is None and name in P.GADGET_ATTRIBUTES:
        exception = P.GADGET_ATTRIBUTES[name][1]
    if exception is not None:
        add((R.MODULE_ATTRIBUTE_BLOCKED, "import of %s is not allowed" % full, exception))
    if name in P.NETWORK_ATTRIBUTES or _network_private(name):
        add((R.ATTRIBUTE_NETWORK, "import of %s is not allowed: it belongs to asyncio's "
             "network API" % full, cp.network_hint))
    if "subprocess" in name.lower():
        add((R.ATTRIBUTE_SUBPROCESS, "import of %s is not allowed" % full, _HINT_PROCESS))
    return tuple(out)


_EXCEPTION_ATTRS = frozenset(a for _, a in P.MODULE_ATTRIBUTE_EXCEPTIONS)

_SYS_ORIGIN = {"sys"}

_DECORATOR_ONLY_BY_ORIGIN = {dotted: short for short, dotted in P.DECORATOR_ONLY.items()}

# The dunders a module may show: plain strings. Every other underscore attribute of a module
# is internal (rule attribute-private).
_MODULE_DUNDERS = frozenset({"__name__", "__doc__"})

# Conditions (on `node`) under which the walker of a class calls its handler at all. A Call
# is a tenth of a typical tree and only `type(...)` calls concern the handler.
_HANDLER_GUARDS = {
    ast.Call: "node.func.__class__ is Name and node.func.id == 'type'",
}

_HANDLERS = {
    ast.Attribute: Checker._attribute,
    ast.Import: Checker._import,
    ast.ImportFrom: Checker._import_from,
    ast.Assign: Checker._assign,
    ast.AnnAssign: Checker._ann_assign,
    ast.NamedExpr: Checker._named_expr,
    ast.FunctionDef: Checker._function,
    ast.AsyncFunctionDef: Checker._function,
    ast.ClassDef: Checker._class_def,
    ast.Call: Checker._call,
    ast.arg: Checker._arg,
    ast.ExceptHandler: Checker._capture,
    ast.MatchAs: Checker._capture,
    ast.MatchStar: Checker._capture,
    ast.MatchClass: Checker._match_class,
    ast.MatchMapping: Checker._match_mapping,
}


def _import_hint(name, cp):
    top = name.split(".", 1)[0]
    if top in P.NETWORK_MODULES:
        return cp.network_hint + "; " + cp.import_hint
    specific = P.MODULE_HINTS.get(name) or P.MODULE_HINTS.get(top)
    if specific:
        return specific + "; " + cp.import_hint
    if cp.import_unavailable(name):
        return P.UNAVAILABLE_MODULE_HINT % name + "; " + cp.import_hint
    return cp.import_hint


# --- identifiers spelled with non-ASCII characters ---------------------------------------------


def _nonascii_findings(code, cp):
    """Python NFKC-normalises identifiers, so `ｅｖａｌ` IS eval: the tree already holds the
    normalised name (and the rules above fire on it). This reports the disguise itself, with
    the spelling the model wrote."""
    import io
    import re
    import tokenize
    import unicodedata
    out = []

    def flag(raw, line, col):
        norm = unicodedata.normalize("NFKC", raw)
        if norm == raw:
            return
        if (norm in cp.nonascii_sensitive or norm in cp.known_modules or norm.startswith("_")
                or "subprocess" in norm.lower()):
            out.append((line, col, R.NAME_NONASCII_BLOCKED,
                        "the identifier %s is read by Python as %s, which is blocked"
                        % (raw, norm), _HINT_NONASCII))

    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            text = tok.string
            if text.isascii():
                continue
            line, char_col = tok.start
            col = len(tok.line[:char_col].encode("utf-8", "surrogatepass"))
            if tok.type == tokenize.NAME:
                flag(text, line, col)
            elif tok.type == tokenize.STRING:
                prefix = text[:3].lower()
                quote = min((i for i in (prefix.find("'"), prefix.find('"')) if i >= 0),
                            default=0)
                if "f" in prefix[:quote]:
                    # 3.11 tokenizes an f-string as one STRING token: look at its words.
                    for word in re.findall(r"\w+", text):
                        if not word.isascii():
                            flag(word, line, col)
    except Exception:
        pass  # tokenize disagrees with the parser on some inputs; the tree checks still ran
    return out


# --- entry point --------------------------------------------------------------------------------

_VERSION = None


def _syntax_hint():
    global _VERSION
    if _VERSION is None:
        import sys
        _VERSION = "%d.%d" % sys.version_info[:2]
    return "fix the syntax: the code must be valid Python %s" % _VERSION


def _position_of(code, index):
    """(line, byte col) of character `index` of `code`."""
    index = max(0, min(index, len(code)))
    line = code.count("\n", 0, index) + 1
    start = code.rfind("\n", 0, index) + 1
    return line, len(code[start:index].encode("utf-8", "surrogatepass"))


def _syntax_error(code, e):
    line = e.lineno or 0
    col = 0
    offset = e.offset or 0
    text = e.text
    if offset > 0:
        if isinstance(text, str) and offset - 1 <= len(text):
            col = len(text[:offset - 1].encode("utf-8", "surrogatepass"))
        else:
            col = offset - 1
    message = "syntax error: %s" % (e.msg or "invalid syntax")
    return (line, col, R.SYNTAX_ERROR, message, _syntax_hint())


def check_code(code, cp, started=None):
    """Findings for `code` (a str) under CompiledPolicy `cp`. May raise; validate() wraps it."""
    if started is None:
        started = time.perf_counter()
    limit = cp.max_code_bytes
    if len(code) * 4 > limit:  # cheap bound first: a character is at most 4 UTF-8 bytes
        size = len(code.encode("utf-8", "surrogatepass"))
        if size > limit:
            return [(0, 0, R.CODE_TOO_LARGE,
                     "the code is %d bytes; the limit is %d bytes" % (size, limit),
                     "split the work into several smaller execute_code calls, or move data "
                     "into files and tool calls")]
    try:
        tree = compile(code, "<code>", "exec", _PARSE_FLAGS, dont_inherit=True)
    except SyntaxError as e:
        return [_syntax_error(code, e)]
    except (RecursionError, MemoryError) as e:
        return [(0, 0, R.TOO_COMPLEX,
                 "the code is nested too deeply or is too complex to parse (%s)"
                 % (str(e) or type(e).__name__),
                 "flatten the nesting: use intermediate variables, loops or helper functions")]
    except ValueError as e:
        # Null bytes, lone surrogates: the code cannot be compiled at all.
        index = code.find("\x00")
        if index < 0 and isinstance(e, UnicodeError):
            index = getattr(e, "start", -1)
        line, col = _position_of(code, index) if index >= 0 else (0, 0)
        return [(line, col, R.SYNTAX_ERROR, "the code cannot be compiled: %s" % e,
                 _syntax_hint())]
    deadline = started + cp.timeout_s if cp.timeout_s else None
    guarded = forms.guarded_imports(tree, code)
    early = forms.prepare(tree, code, cp)
    found = Checker(cp, guarded_imports=guarded).check(tree, deadline)
    if early:
        found = early + found
    unawaited = find_unawaited(tree, code, cp.policy.tool_names)
    if unawaited:
        found = found + unawaited
    if not code.isascii():
        found = found + _nonascii_findings(code, cp)
    return found
