"""Whole-program name resolution, run only when the checker recorded something to resolve.

locally_bound: `def walk(dir): ...` or `def run(input): ...` name a parameter, not the builtin;
rejecting them would be a false positive. The module-value rule asks the same question for
`import time` ... `def wait(time): return time * 2`. A name is exempt only where Python resolves it
statically to a function-local binding: parameters and names bound anywhere in the function
body, not declared global. Class bodies resolve names dynamically (class dict, then globals,
then builtins), so a binding there never exempts, and module level never exempts.

constant_strings: `TEMPLATE = "Hello {name}"` ... `TEMPLATE.format(...)` is a literal template
when every binding of the name in the program is a string literal.
"""

from . import nodes as ast  # the ast module's nodes and walkers, without its import cost

_Name = ast.Name
_Load = ast.Load
_FunctionDef = ast.FunctionDef
_AsyncFunctionDef = ast.AsyncFunctionDef
_Lambda = ast.Lambda
_ClassDef = ast.ClassDef
_Constant = ast.Constant
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


class _Scope:
    __slots__ = ("kind", "node", "parent")

    def __init__(self, kind, node, parent):
        self.kind = kind
        self.node = node
        self.parent = parent


def _param_names(args):
    names = {a.arg for a in args.posonlyargs}
    names.update(a.arg for a in args.args)
    names.update(a.arg for a in args.kwonlyargs)
    if args.vararg is not None:
        names.add(args.vararg.arg)
    if args.kwarg is not None:
        names.add(args.kwarg.arg)
    return names


def _outer_parts(node):
    """The parts of a def / lambda evaluated in the ENCLOSING scope."""
    args = node.args
    parts = list(args.defaults) + [d for d in args.kw_defaults if d is not None]
    if node.__class__ is not _Lambda:
        parts.extend(node.decorator_list)
        if node.returns is not None:
            parts.append(node.returns)
        every = args.posonlyargs + args.args + args.kwonlyargs
        every += [a for a in (args.vararg, args.kwarg) if a is not None]
        parts.extend(a.annotation for a in every if a.annotation is not None)
    return parts


def _body_bindings(nodes):
    """(locals, globals, nonlocals) of a scope whose body is `nodes`."""
    bound, declared_global, declared_nonlocal = set(), set(), set()
    todo = [(n, False) for n in nodes]
    while todo:
        node, in_comprehension = todo.pop()
        cls = node.__class__
        if cls is _Name:
            if not in_comprehension and node.ctx.__class__ is not _Load:
                bound.add(node.id)
            continue
        if cls is ast.NamedExpr:
            if node.target.__class__ is _Name:
                bound.add(node.target.id)   # walrus binds here, even inside a comprehension
            todo.append((node.value, in_comprehension))
            continue
        if cls is _FunctionDef or cls is _AsyncFunctionDef or cls is _Lambda:
            if cls is not _Lambda:
                bound.add(node.name)
            todo.extend((p, in_comprehension) for p in _outer_parts(node))
            continue
        if cls is _ClassDef:
            bound.add(node.name)
            todo.extend((p, in_comprehension)
                        for p in node.decorator_list + node.bases
                        + [k.value for k in node.keywords])
            continue
        if cls in _COMPREHENSIONS:
            in_comprehension = True
        elif cls is ast.Global:
            declared_global.update(node.names)
            continue
        elif cls is ast.Nonlocal:
            declared_nonlocal.update(node.names)
            continue
        elif cls is ast.Import or cls is ast.ImportFrom:
            for alias in node.names:
                if alias.name != "*":
                    bound.add(alias.asname or alias.name.split(".", 1)[0])
            continue
        elif cls is ast.ExceptHandler or cls is ast.MatchAs or cls is ast.MatchStar:
            if node.name:
                bound.add(node.name)
        elif cls is ast.MatchMapping:
            if node.rest:
                bound.add(node.rest)
        todo.extend((c, in_comprehension) for c in ast.iter_child_nodes(node))
    bound -= declared_global
    bound -= declared_nonlocal
    return bound, declared_global, declared_nonlocal


def _scope_bindings(scope, cache):
    result = cache.get(scope.node)
    if result is None:
        node = scope.node
        if scope.kind == "comprehension":
            targets = set()
            for gen in node.generators:
                for sub in ast.walk(gen.target):
                    if sub.__class__ is _Name:
                        targets.add(sub.id)
            result = (targets, set(), set())
        elif scope.kind == "class":
            result = _body_bindings(node.body)
        elif node.__class__ is _Lambda:
            bound, g, n = _body_bindings([node.body])
            result = (bound | _param_names(node.args), g, n)
        else:
            bound, g, n = _body_bindings(node.body)
            result = ((bound | _param_names(node.args)) - g - n, g, n)
        cache[node] = result
    return result


def _carrying_names(node):
    """Names a function body binds by import or by plain assignment of a name / attribute
    (`m = json`, `a, m = 1, json`): the two ways a module reaches a local variable without an
    expression the module-value rule rejects."""
    names = set()
    todo = list(node.body) if node.__class__ is not _Lambda else []
    while todo:
        n = todo.pop()
        cls = n.__class__
        if cls is _FunctionDef or cls is _AsyncFunctionDef or cls is _ClassDef \
                or cls is _Lambda or cls in _COMPREHENSIONS:
            continue
        if cls is ast.Import or cls is ast.ImportFrom:
            names.update(a.asname or a.name.split(".", 1)[0] for a in n.names)
            continue
        if cls is ast.Assign or cls is ast.AnnAssign:
            targets = n.targets if cls is ast.Assign else [n.target]
            if n.value is not None and n.value.__class__ in _PLAIN_VALUES:
                for t in targets:
                    names.update(sub.id for sub in ast.walk(t) if sub.__class__ is _Name)
        todo.extend(ast.iter_child_nodes(n))
    return names


_PLAIN_VALUES = (ast.Name, ast.Attribute, ast.Tuple, ast.List)


def _resolves_locally(name, scope, cache, carrying=None):
    innermost = True
    while scope is not None:
        bound, declared_global, declared_nonlocal = _scope_bindings(scope, cache)
        if scope.kind == "class":
            # Only the class body itself looks at the class namespace; a function nested in
            # the class skips it.
            if innermost and (name in bound or name in declared_global):
                return False
        else:
            if name in declared_global:
                return False
            if name in bound:
                if carrying is None or scope.kind != "function":
                    return True
                names = carrying.get(scope.node)
                if names is None:
                    names = carrying[scope.node] = _carrying_names(scope.node)
                return name not in names
        innermost = False
        scope = scope.parent
    return False


def locally_bound(tree, candidates, plain_only=False):
    """ids of the Name nodes in `candidates` that resolve to a function-local binding. With
    plain_only, a binding by import or by `x = name` in that function does not count (see
    _carrying_names)."""
    exempt = set()
    cache = {}
    carrying = {} if plain_only else None
    todo = [(tree, None)]
    while todo:
        node, scope = todo.pop()
        cls = node.__class__
        if cls is _Name:
            if id(node) in candidates and _resolves_locally(node.id, scope, cache, carrying):
                exempt.add(id(node))
            continue
        if cls is _FunctionDef or cls is _AsyncFunctionDef or cls is _Lambda:
            todo.extend((p, scope) for p in _outer_parts(node))
            inner = _Scope("function", node, scope)
            body = [node.body] if cls is _Lambda else node.body
            todo.extend((b, inner) for b in body)
            continue
        if cls is _ClassDef:
            todo.extend((p, scope) for p in node.decorator_list + node.bases
                        + [k.value for k in node.keywords])
            inner = _Scope("class", node, scope)
            todo.extend((b, inner) for b in node.body)
            continue
        if cls in _COMPREHENSIONS:
            inner = _Scope("comprehension", node, scope)
            generators = node.generators
            todo.append((generators[0].iter, scope))  # evaluated in the enclosing scope
            for i, gen in enumerate(generators):
                todo.append((gen.target, inner))
                if i:
                    todo.append((gen.iter, inner))
                todo.extend((c, inner) for c in gen.ifs)
            if cls is ast.DictComp:
                todo.append((node.key, inner))
                todo.append((node.value, inner))
            else:
                todo.append((node.elt, inner))
            continue
        todo.extend((c, scope) for c in ast.iter_child_nodes(node))
    return exempt


def constant_strings(tree, names):
    """{name: [str, ...]} for each name in `names` bound only by `name = "literal"` (or an
    annotated assignment of a literal) anywhere in the program; None when any other binding
    exists, so the template is treated as dynamic."""
    values = {name: [] for name in names}
    bad = set()
    literal_targets = set()
    for node in ast.walk(tree):
        cls = node.__class__
        if cls is ast.Assign or cls is ast.AnnAssign:
            value = node.value
            if value.__class__ is _Constant and isinstance(value.value, str):
                targets = node.targets if cls is ast.Assign else [node.target]
                for t in targets:
                    if t.__class__ is _Name and t.id in values:
                        values[t.id].append(value.value)
                        literal_targets.add(id(t))
        elif cls is _Name:
            if (node.id in values and node.ctx.__class__ is not _Load
                    and id(node) not in literal_targets):
                bad.add(node.id)
        elif cls is ast.arg:
            if node.arg in values:
                bad.add(node.arg)
        elif cls is _FunctionDef or cls is _AsyncFunctionDef or cls is _ClassDef:
            if node.name in values:
                bad.add(node.name)
        elif cls is ast.Import or cls is ast.ImportFrom:
            for alias in node.names:
                bad.add(alias.asname or alias.name.split(".", 1)[0])
        elif cls is ast.ExceptHandler or cls is ast.MatchAs or cls is ast.MatchStar:
            if node.name:
                bad.add(node.name)
        elif cls is ast.MatchMapping:
            if node.rest:
                bad.add(node.rest)
    return {name: (v if v and name not in bad else None) for name, v in values.items()}
