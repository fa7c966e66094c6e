"""Class statements and class patterns: hooks, metaclasses, bases and __match_args__.

Why these rules exist. A class pattern `case C(a, b)` first calls isinstance(subject, C) and
then reads the subject's attributes named by the STRINGS in C.__match_args__: a getattr()
whose names the code chooses. With a class that claims every object as an instance (a
metaclass __instancecheck__, an ABC's __subclasshook__, or simply `C.register(type(f))`) and
`__match_args__ = ("__globals__",)`, `case C(g)` reads any function's globals. The isinstance
side cannot be closed (ABC.register is ordinary API), so the names are: a positional
sub-pattern is allowed only on a class whose __match_args__ the validator can read in the
program (a class statement with literal __match_args__ or dataclass fields, a namedtuple with
literal fields, an imported class, a self-matching builtin), and every name it may read is
checked like a keyword pattern. Keyword patterns `case C(x=v)` name their attribute in the
source and are checked where they are written.

Metaclasses and class hooks run code with a class's namespace while it is built. A metaclass
(or `__prepare__`, `__init_subclass__`, `__set_name__` ...) can put any string into a class's
__annotations__, and @dataclass pastes annotation names into the source of the __init__ it
generates and exec()s: code injection. So a class body may bind only ordinary special methods
(policy.CLASS_BODY_DUNDERS), `metaclass=` may name only the standard library's ABCMeta /
EnumMeta, a base class must be something the validator can see (a class statement, an import,
a builtin, a literal namedtuple), and @dataclass may only decorate class statements (checker,
rule decorator-only).
"""

from . import nodes as ast  # the ast module's nodes and walkers, without its import cost

from . import policy as P
from . import report as R

_Name = ast.Name
_Attribute = ast.Attribute
_Subscript = ast.Subscript
_Call = ast.Call
_Constant = ast.Constant
_Tuple = ast.Tuple
_List = ast.List
_Store = ast.Store
_Assign = ast.Assign
_AnnAssign = ast.AnnAssign
_FunctionDef = ast.FunctionDef
_AsyncFunctionDef = ast.AsyncFunctionDef
_ClassDef = ast.ClassDef
_TryStar = getattr(ast, "TryStar", ast.Try)    # `except*` (3.11)
_PLAIN_VALUES = (ast.Name, ast.Attribute, ast.Tuple, ast.List)

_HINT_HOOK = ("define ordinary methods and the usual special methods (__init__, __repr__, "
              "__eq__, __lt__, __iter__, __enter__, ...); class hooks are not available")
_HINT_ANNOTATED_DUNDER = "annotate ordinary field names (x: int) in the class body"
_HINT_METACLASS = ("derive from abc.ABC or enum.Enum (or use metaclass=abc.ABCMeta) instead of "
                   "writing a metaclass")
_HINT_BASE = ("derive directly from a class statement, an imported class, a builtin class or "
              "a namedtuple with literal field names")
HINT_POSITIONAL = ("use keyword patterns (`case Point(x=px, y=py)`), or give the class "
                    "literal __match_args__ / make it a @dataclass defined in this program")
_HINT_CLASS_VALUE = ("import modules at module level and use them as module.name; a class body "
                     "may not hold a module")


def _is_dunder(name):
    return len(name) > 4 and name[:2] == "__" and name[-2:] == "__"


def _loc(node):
    return (getattr(node, "lineno", 0) or 0), (getattr(node, "col_offset", 0) or 0)


class ClassInfo:
    """What the checker needs to know about one class statement after the walk."""

    __slots__ = ("node", "match_args", "fields")

    def __init__(self, node, match_args, fields):
        self.node = node
        self.match_args = match_args   # None: not bound; tuple: literal names; False: computed
        self.fields = fields           # names annotated in the class body, in order


def _literal_names(value):
    """The strings of a literal tuple / list of string constants, else None."""
    if value.__class__ is not _Tuple and value.__class__ is not _List:
        return None
    names = []
    for elt in value.elts:
        if elt.__class__ is not _Constant or not isinstance(elt.value, str):
            return None
        names.append(elt.value)
    return tuple(names)


def scan_body(node, checker):
    """Checks the bindings of class statement `node`'s namespace and returns its ClassInfo.

    Visits the statements of the class body and the blocks nested in them (if, for, while,
    with, try, match), not the bodies of nested functions and classes (their own scopes).
    Expressions are not entered: the only binding an expression can make is a walrus, and a
    walrus that binds a dunder name is rejected wherever it is (checker._named_expr)."""
    literal_match_args = []     # names of each `__match_args__ = (literal, ...)`
    computed_match_args = False  # any other binding of __match_args__
    fields = []
    cp = checker.cp
    blocks = [node.body]     # statement lists of the class namespace still to visit
    while blocks:
        for n in blocks.pop():
            cls = n.__class__
            # The common statements of a class body first: defs, annotations, assignments.
            if cls is _FunctionDef or cls is _AsyncFunctionDef or cls is _ClassDef:
                if n.name[:2] == "__":
                    _check_binding(checker, n.name, n, False)
            elif cls is _AnnAssign:
                target = n.target
                value = n.value
                if target.__class__ is _Name:
                    name = target.id
                    fields.append(name)
                    if name[:2] == "__":
                        _check_binding(checker, name, target, True)
                        if name == "__match_args__":
                            computed_match_args = True
                    if value is None:
                        checker.annotation_only.add(id(target))
                if value is not None and value.__class__ in _PLAIN_VALUES:
                    _class_scope_value(checker, value)
            elif cls is _Assign:
                targets = n.targets
                value = n.value
                if (len(targets) == 1 and targets[0].__class__ is _Name
                        and targets[0].id == "__match_args__"):
                    names = _literal_names(value)
                    if names is None:
                        computed_match_args = True
                    else:
                        literal_match_args.extend(names)
                    continue
                for target in targets:
                    if _bind_targets(checker, target):
                        computed_match_args = True
                if value.__class__ in _PLAIN_VALUES:
                    _class_scope_value(checker, value)
            elif cls is ast.AugAssign:
                if _bind_targets(checker, n.target):
                    computed_match_args = True
            elif cls is ast.For or cls is ast.AsyncFor:
                if _bind_targets(checker, n.target):
                    computed_match_args = True
                blocks.append(n.body)
                blocks.append(n.orelse)
            elif cls is ast.If or cls is ast.While:
                blocks.append(n.body)
                blocks.append(n.orelse)
            elif cls is ast.With or cls is ast.AsyncWith:
                for item in n.items:
                    if item.optional_vars is not None and _bind_targets(checker,
                                                                        item.optional_vars):
                        computed_match_args = True
                blocks.append(n.body)
            elif cls is ast.Try or cls is _TryStar:
                blocks.append(n.body)
                for handler in n.handlers:
                    if handler.name:
                        _check_binding(checker, handler.name, handler, False)
                    blocks.append(handler.body)
                blocks.append(n.orelse)
                blocks.append(n.finalbody)
            elif cls is ast.Match:
                for case in n.cases:
                    for sub in ast.walk(case.pattern):
                        name = getattr(sub, "name", None) or getattr(sub, "rest", None)
                        if name:
                            _check_binding(checker, name, sub, False)
                            if name == "__match_args__":
                                computed_match_args = True
                    blocks.append(case.body)
            elif cls is ast.Import or cls is ast.ImportFrom:
                for alias in n.names:
                    if alias.name == "*":
                        continue
                    bound = alias.asname or alias.name.split(".", 1)[0]
                    _check_binding(checker, bound, alias, False)
                    if cls is ast.Import:
                        dotted = alias.name if alias.asname else bound
                    else:
                        dotted = "%s.%s" % (n.module or "", alias.name)
                    if cp.is_module(dotted):
                        line, col = _loc(alias)
                        checker.add(line, col, R.MODULE_VALUE,
                                    "the class body imports the module %s: it becomes a class "
                                    "attribute" % dotted, _HINT_CLASS_VALUE)
    if computed_match_args:
        match_args = False
    elif literal_match_args:
        match_args = tuple(literal_match_args)
    else:
        match_args = None
    return ClassInfo(node, match_args, tuple(fields))


def _bind_targets(checker, target):
    """Checks the names an assignment target binds; True when one is __match_args__."""
    found = False
    todo = [target]
    while todo:
        t = todo.pop()
        cls = t.__class__
        if cls is _Name:
            if t.id[:2] == "__":
                _check_binding(checker, t.id, t, False)
                found = found or t.id == "__match_args__"
        elif cls is _Tuple or cls is _List:
            todo.extend(t.elts)
        elif cls is ast.Starred:
            todo.append(t.value)
    return found


def _class_scope_value(checker, value):
    """`m = json` (or `a, m = 1, json`) in a class body makes the module a class attribute,
    `K.m`, out of reach of the module rules: such a value is not a tracked alias."""
    todo = [value]
    while todo:
        v = todo.pop()
        if v.__class__ is _Name or v.__class__ is _Attribute:
            checker.class_scope_values.add(id(v))
        elif v.__class__ is _Tuple or v.__class__ is _List:
            todo.extend(v.elts)


def _check_binding(checker, name, node, annotated):
    if not _is_dunder(name) or (name in P.CLASS_BODY_DUNDERS and not annotated):
        return
    line, col = _loc(node)
    if name == "__annotations__":
        checker.add(line, col, R.CLASS_HOOK,
                    "the class body binds __annotations__: the interpreter builds it from the "
                    "annotations, and dataclasses paste its names into generated code",
                    _HINT_ANNOTATED_DUNDER)
    elif annotated:
        checker.add(line, col, R.CLASS_HOOK,
                    "the class body annotates the dunder name %s: annotated names become "
                    "dataclass fields and __match_args__" % name, _HINT_ANNOTATED_DUNDER)
    else:
        checker.add(line, col, R.CLASS_HOOK,
                    "the class body defines %s, a hook the interpreter or the standard library "
                    "calls or reads on its own" % name, _HINT_HOOK)


class Resolver:
    """Post-walk class rules, given the checker's records and the program's Bindings."""

    def __init__(self, checker, bindings, name_problem):
        self.checker = checker
        self.bindings = bindings
        self.origins = checker.bound
        self.name_problem = name_problem   # attribute name -> why a pattern may not read it
        self._known = {}                   # class name -> None (known) or the reason not

    # --- what an expression is ----------------------------------------------------------------

    def imported(self, name, _depth=0):
        """The dotted origins of `name` when it is bound only by imports and by aliases whose
        sources are themselves such names, else None. (An alias of anything else would lend
        the name the import's origins while holding another object.)"""
        kinds = self.bindings.of(name)
        if not kinds or not kinds <= _IMPORT_KINDS:
            return None
        if "alias" in kinds:
            if _depth > 8:
                return None
            for source in self.checker.alias_sources_of.get(name, ()):
                if self.imported(source, _depth + 1) is None:
                    return None
        return self.origins.get(name) or None

    def dotted(self, expr):
        """The dotted origins of a name or attribute chain rooted at an import, else None."""
        parts = []
        while expr.__class__ is _Attribute:
            parts.append(expr.attr)
            expr = expr.value
        if expr.__class__ is not _Name:
            return None
        origins = self.imported(expr.id)
        if origins is None:
            return None
        if not parts:
            return origins
        suffix = "." + ".".join(reversed(parts))
        return {o + suffix for o in origins}

    def namedtuple_fields(self, call):
        """The literal field names of `namedtuple(...)` / `NamedTuple(...)`, else None."""
        origins = self.dotted(call.func)
        if not origins or not origins <= P.NAMEDTUPLE_FACTORIES:
            return None
        spec = call.args[1] if len(call.args) >= 2 else None
        kw_fields = []
        for k in call.keywords:
            if k.arg in ("field_names", "fields"):
                spec = k.value
            elif k.arg is None:
                return None
            elif k.arg not in ("rename", "defaults", "module"):
                kw_fields.append(k.arg)     # NamedTuple("P", x=int)
        if spec is None:
            return tuple(kw_fields)
        if spec.__class__ is _Constant and isinstance(spec.value, str):
            return tuple(spec.value.replace(",", " ").split())
        if spec.__class__ is not _List and spec.__class__ is not _Tuple:
            return None
        names = []
        for elt in spec.elts:
            if elt.__class__ is _Tuple and elt.elts:   # NamedTuple("P", [("x", int)])
                elt = elt.elts[0]
            if elt.__class__ is not _Constant or not isinstance(elt.value, str):
                return None
            names.append(elt.value)
        return tuple(names)

    # --- class statements -----------------------------------------------------------------------

    def check_class(self, info):
        node = info.node
        add = self.checker.add
        for k in node.keywords:
            if k.arg != "metaclass":
                continue
            origins = self.dotted(k.value)
            if not origins or not origins <= P.SAFE_METACLASSES:
                line, col = _loc(k.value)
                add(line, col, R.CLASS_METACLASS,
                    "class %s names a metaclass (metaclass=%s); only abc.ABCMeta and enum's "
                    "EnumMeta are allowed" % (node.name, source_text(k.value)), _HINT_METACLASS)
        for base in node.bases:
            problem = self.base_problem(base)
            if problem is not None:
                rule, message, hint = problem
                line, col = _loc(base)
                add(line, col, rule, "class %s: %s" % (node.name, message), hint)

    def base_problem(self, base):
        """(rule, message, hint) when `base` may not be a base class, else None."""
        cls = base.__class__
        if cls is _Subscript:       # Generic[T], Protocol[T], dict[str, int]
            return self._generic_problem(base)
        if cls is _Call:
            if self.namedtuple_fields(base) is not None:
                return None
            return (R.CLASS_BASE, "the base class %s is computed by a call" % source_text(base),
                    _HINT_BASE)
        if cls is _Name or cls is _Attribute:
            last = base.id if cls is _Name else base.attr
            origins = self.dotted(base)
            if origins is not None:
                if any(o.rsplit(".", 1)[-1] in P.METACLASS_NAMES for o in origins):
                    return self._metaclass_base(base)
                return None
            if cls is _Name:
                kinds = self.bindings.of(last)
                if not kinds:   # a builtin, or a name the runner provides
                    if last in P.METACLASS_NAMES:
                        return self._metaclass_base(base)
                    return None
                if kinds == _CLASS_KIND:
                    return None
                if kinds == _CALL_KIND and all(self.namedtuple_fields(c) is not None
                                               for c in self.bindings.calls.get(last, ())):
                    return None
                return (R.CLASS_BASE, "the base class %s is bound at run time (%s), not by a "
                        "class statement or an import" % (last, ", ".join(sorted(kinds))),
                        _HINT_BASE)
            return (R.CLASS_BASE, "the base class %s is an attribute of something other than "
                    "an imported module" % source_text(base), _HINT_BASE)
        return (R.CLASS_BASE, "the base class expression %s is computed at run time"
                % source_text(base), _HINT_BASE)

    def _generic_problem(self, base):
        """A subscripted base must subscript a generic class. Subscripting anything else (a
        dict a module holds, `json.decoder.BACKSLASH[k]`) could hand over any object the code
        put there, including a class with a run-time metaclass."""
        value = base.value
        if value.__class__ is _Name:
            kinds = self.bindings.of(value.id)
            if not kinds and value.id in P.GENERIC_BUILTINS:
                return None
            if kinds == _CLASS_KIND:
                return None     # a generic class statement: Stack[int]
        origins = self.dotted(value)
        # A name in capitals is a constant by convention, not a class: typing's one mutable
        # public container, EXCLUDED_ATTRIBUTES, is spelled that way.
        if origins and all(o.startswith(P.GENERIC_MODULES) and not o.rsplit(".", 1)[1].isupper()
                           for o in origins):
            return self.base_problem(value)
        return (R.CLASS_BASE, "the base class %s subscripts something that is not a generic "
                "class (Generic, Protocol, typing, collections.abc, a builtin or a class "
                "statement)" % source_text(base), _HINT_BASE)

    def _metaclass_base(self, base):
        return (R.CLASS_METACLASS, "deriving from %s defines a metaclass" % source_text(base),
                _HINT_METACLASS)

    # --- class patterns -----------------------------------------------------------------------

    def positional_problem(self, pattern):
        """Why the positional sub-patterns of class pattern `pattern` may not be used, or
        None."""
        cls = pattern.cls
        if cls.__class__ is _Attribute:
            if self.dotted(cls) is not None:
                return None     # a class of an imported module: its names are not ours
            return "%s is not an attribute of an imported module" % source_text(cls)
        if cls.__class__ is not _Name:
            return "the class is not a plain name"
        return self.class_problem(cls.id)

    def class_problem(self, name):
        """None when every __match_args__ name of the class bound to `name` is known and
        readable, else the reason."""
        if name in self._known:
            return self._known[name]
        self._known[name] = None    # a cycle cannot add names: assume known while resolving
        result = self._class_problem(name)
        self._known[name] = result
        return result

    def _class_problem(self, name):
        kinds = self.bindings.of(name)
        if not kinds:
            if name in P.SELF_MATCHING_BUILTINS:
                return None
            return "%s is not a class defined or imported in this program" % name
        if self.imported(name) is not None:
            return None
        if kinds == _CALL_KIND:
            for call in self.bindings.calls.get(name, ()):
                names = self.namedtuple_fields(call)
                if names is None:
                    return "%s is bound to the result of a call" % name
                why = self._names_problem(name, names)
                if why:
                    return why
            return None
        if kinds != _CLASS_KIND:
            return "%s is bound at run time (%s)" % (name, ", ".join(sorted(kinds)))
        for info in self.checker.class_infos.get(name, ()):
            why = self._info_problem(info)
            if why:
                return why
        return None

    def unsafe_decorator(self, decorators):
        """The first of `decorators` that may return something other than the class it is
        given, or None."""
        for dec in decorators:
            target = dec.func if dec.__class__ is _Call and not dec.args else dec
            origins = self.dotted(target)
            if not origins or not origins <= P.SAFE_CLASS_DECORATORS:
                return dec
        return None

    def check_dataclass_position(self, node, index):
        """@dataclass at `index` of class `node`'s decorators is applied to what the
        decorators below it return: they must return the class statement's class."""
        dec = self.unsafe_decorator(node.decorator_list[index + 1:])
        if dec is not None:
            line, col = _loc(dec)
            self.checker.add(line, col, R.DECORATOR_ONLY,
                             "class %s: @dataclass is applied to what %s returns, which may "
                             "be another class" % (node.name, source_text(dec)),
                             "put @dataclass directly above the class statement (below any "
                             "other decorator)")

    def _info_problem(self, info):
        node = info.node
        name = node.name
        dec = self.unsafe_decorator(node.decorator_list)
        if dec is not None:
            return ("class %s is decorated with %s, which may replace the class"
                    % (name, source_text(dec)))
        for k in node.keywords:
            if k.arg == "metaclass":
                origins = self.dotted(k.value)
                if not origins or not origins <= P.SAFE_METACLASSES:
                    return "class %s has a metaclass" % name
        if info.match_args is False:
            return "class %s computes its __match_args__" % name
        why = self._names_problem(name, (info.match_args or ()) + info.fields)
        if why:
            return why
        for base in node.bases:
            why = self._base_names_problem(name, base)
            if why:
                return why
        return None

    def _base_names_problem(self, name, base):
        cls = base.__class__
        if cls is _Subscript:
            if self._generic_problem(base) is not None:
                return "class %s derives from %s" % (name, source_text(base))
            return self._base_names_problem(name, base.value)
        if cls is _Call:
            names = self.namedtuple_fields(base)
            if names is None:
                return "class %s derives from a class computed by a call" % name
            return self._names_problem(name, names)
        if cls is _Name:
            if not self.bindings.of(base.id):
                return None     # builtin classes define no __match_args__ names
            why = self.class_problem(base.id)
            return None if why is None else "class %s derives from %s: %s" % (
                name, base.id, why)
        if cls is _Attribute and self.dotted(base) is not None:
            return None
        return "class %s derives from %s" % (name, source_text(base))

    def _names_problem(self, name, names):
        for attr in names:
            why = self.name_problem(attr)
            if why:
                return "%s's __match_args__ would read %s" % (name, why)
        return None


_IMPORT_KINDS = frozenset({"import", "alias"})
_CLASS_KIND = frozenset({"class"})
_CALL_KIND = frozenset({"call"})


def source_text(node, limit=40):
    """The source of `node` for a message, shortened."""
    try:
        text = ast.unparse(node)
    except Exception:
        return "<expression>"
    return text if len(text) <= limit else text[:limit - 3] + "..."
