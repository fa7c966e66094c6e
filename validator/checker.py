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

import ast
import operator
import time

from . import policy as P
from . import report as R
from . import scopes

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
_get_id = operator.attrgetter("id")

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
        reads.append("    handler(checker, node)")
    walker = None
    if reads:
        source = "def walk(checker, node, push, extend):\n%s\n" % "\n".join(reads + hands)
        namespace = {"handler": handler}
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
_HINT_DUNDER = ("use isinstance(), type(x).__name__ or the object's public API; readable dunder "
                "attributes: %s")
_HINT_PRIVATE = "use the module's public API"
_HINT_PIVOT = ("import the modules you need directly (allowed ones only); reaching a module "
               "through another module is not allowed")
_HINT_INTERNAL = "frame, code and generator internals are not available; print() what you need"
_HINT_FORMAT_ATTR = ("format the value yourself: pass it as an argument "
                     "(\"{}\".format(obj.public_attr)) or use an f-string")
_HINT_FORMAT_DYNAMIC = ("write the template as a string literal (\"Hello {name}\".format(...)) "
                        "or use an f-string")
_HINT_MATCH = "match on public attributes only"
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
    if "subprocess" in name.lower():
        return "the attribute .%s" % name
    return None


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

    def __init__(self, cp, nesting=0):
        self.cp = cp
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
        if value.__class__ is _Name:
            self.name_attributes.append(node)
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
            else:
                self.module_chains.append(node)
        if len(attr) >= 10 and "subprocess" in attr.lower():
            line, col = _attr_loc(node)
            self.add(line, col, R.ATTRIBUTE_SUBPROCESS,
                     "the attribute .%s belongs to the process-spawning API" % attr,
                     _HINT_PROCESS)

    def _watched_attribute(self, node, attr, value):
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
        if attr in self.cp.pivot_on_modules:
            self.module_chains.append(node)
        if attr in P.MODULE_ATTRIBUTES_ANYWHERE:
            line, col = _attr_loc(node)
            module = [m for m, a in P.MODULE_ATTRIBUTE_EXCEPTIONS if a == attr][0]
            self.add(line, col, R.MODULE_ATTRIBUTE_BLOCKED,
                     "%s.%s is not allowed" % (module, attr),
                     P.MODULE_ATTRIBUTE_EXCEPTIONS[(module, attr)])
        elif attr in _EXCEPTION_ATTRS:
            self.module_chains.append(node)
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
            why = cp.import_allowed(name)
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
        why = cp.import_allowed(module)
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
            if module != "__future__":
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

    def _bind(self, name, origin):
        origins = self.bound.get(name)
        if origins is None:
            self.bound[name] = {origin}
        else:
            origins.add(origin)

    def _assign(self, node):
        value = node.value
        vcls = value.__class__
        if vcls is not _Name and vcls is not _Attribute and vcls is not _Tuple \
                and vcls is not _List:
            return
        for target in node.targets:
            self._pair(target, value)

    def _pair(self, target, value):
        """Records `name = name` bindings, through tuple unpacking of equal length."""
        todo = [(target, value)]
        while todo:
            t, v = todo.pop()
            tcls = t.__class__
            if tcls is _Name:
                vcls = v.__class__
                if vcls is _Name:
                    self.edges.append((t.id, v.id, ""))
                    self.alias_sources.add(id(v))
                elif vcls is _Attribute:
                    # `x = asyncio.base_events` makes x a module too.
                    parts = []
                    while vcls is _Attribute and len(parts) < 6:
                        parts.append(v.attr)
                        v = v.value
                        vcls = v.__class__
                    if vcls is _Name:
                        parts.reverse()
                        self.edges.append((t.id, v.id, "." + ".".join(parts)))
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
        if node.value.__class__ is _Name and node.target.__class__ is _Name:
            self.edges.append((node.target.id, node.value.id, ""))

    def _function(self, node):
        if node.returns is not None:
            self._annotation(node.returns)

    def _arg(self, node):
        if node.annotation is not None:
            self._annotation(node.annotation)

    def _match_class(self, node):
        patterns = node.kwd_patterns
        for i, name in enumerate(node.kwd_attrs):
            # Any dunder, even a readable one: a class pattern is a getattr() in disguise.
            if _is_dunder(name):
                why = "the dunder attribute .%s" % name
            else:
                why = _attribute_problem(name, self.cp, False)
            if why:
                line, col = _loc(patterns[i] if i < len(patterns) else node)
                self.add(line, col, R.MATCH_DUNDER,
                         "the class pattern keyword %s= reads %s" % (name, why), _HINT_MATCH)

    def _match_mapping(self, node):
        for key in node.keys:
            if (key.__class__ is _Constant and isinstance(key.value, str)
                    and _is_dunder(key.value)):
                line, col = _loc(key)
                self.add(line, col, R.MATCH_DUNDER,
                         "the mapping pattern key %r is a dunder name" % key.value, _HINT_MATCH)

    # --- string annotations -----------------------------------------------------------------

    def _annotation(self, ann):
        """typing.get_type_hints, functools.singledispatch and friends eval() string
        annotations, so a string in an annotation is code: parse it and check it."""
        if ann.__class__ is _Name:
            return
        todo = [ann]
        while todo:
            node = todo.pop()
            cls = node.__class__
            if cls is _Constant:
                if isinstance(node.value, str):
                    self._string_annotation(node)
            elif cls is _Subscript:
                base = node.value
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
            elif cls is _BinOp:
                todo.append(node.left)
                todo.append(node.right)

    def _string_annotation(self, const):
        text = const.value
        line, col = _loc(const)
        if self.nesting >= 3:
            self.add(line, col, R.TOO_DEEP, "string annotations are nested too deeply",
                     "write annotations without quotes, or one level of quotes")
            return
        tree = None
        for source in (text, "(%s,)[0]" % text):   # typing compiles "*Ts" as "(*Ts,)[0]"
            try:
                tree = compile(source, "<annotation>", "eval", ast.PyCF_ONLY_AST,
                               dont_inherit=True)
                break
            except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
                continue
        if tree is None:
            return  # typing cannot compile it either, so it is never evaluated
        sub = Checker(self.cp, self.nesting + 1)
        sub._annotation(tree.body)
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
            if attr[0] == "_" and not _is_dunder(attr):
                self.add(line, col, R.ATTRIBUTE_PRIVATE,
                         "access to the private attribute %s.%s is not allowed: %s comes from "
                         "an imported module" % (shown, attr, root.id), _HINT_PRIVATE)
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
    if exception is None and name in P.MODULE_ATTRIBUTES_ANYWHERE:
        exception = "this attribute is a gadget for dynamic attribute access"
    if exception is not None:
        add((R.MODULE_ATTRIBUTE_BLOCKED, "import of %s is not allowed" % full, exception))
    if "subprocess" in name.lower():
        add((R.ATTRIBUTE_SUBPROCESS, "import of %s is not allowed" % full, _HINT_PROCESS))
    return tuple(out)


_EXCEPTION_ATTRS = frozenset(a for _, a in P.MODULE_ATTRIBUTE_EXCEPTIONS)

_HANDLERS = {
    ast.Attribute: Checker._attribute,
    ast.Import: Checker._import,
    ast.ImportFrom: Checker._import_from,
    ast.Assign: Checker._assign,
    ast.AnnAssign: Checker._ann_assign,
    ast.NamedExpr: Checker._named_expr,
    ast.FunctionDef: Checker._function,
    ast.AsyncFunctionDef: Checker._function,
    ast.arg: Checker._arg,
    ast.MatchClass: Checker._match_class,
    ast.MatchMapping: Checker._match_mapping,
}


def _import_hint(name, cp):
    top = name.split(".", 1)[0]
    specific = P.MODULE_HINTS.get(top)
    if specific:
        return specific + "; " + cp.import_hint
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
    found = Checker(cp).check(tree, deadline)
    if not code.isascii():
        found = found + _nonascii_findings(code, cp)
    return found
