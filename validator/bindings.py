"""What binds each name of the program: the kinds of binding, program-wide.

Class rules ask "is this base class a class statement, an import, or something computed at
run time?" and "is `int` here the builtin?". The answer is per name, over the whole program
and across scopes: a name counts as a class statement only when EVERY binding of it anywhere
is one. That is deliberately conservative (a loop variable named like a class makes the class
unknown) and cannot be fooled by scoping: code cannot make a name mean two things to the
checker.

Kinds: "import" (import statements), "alias" (`x = name` / `x = a.b`, whose origins the checker
tracks), "call" (`x = f(...)`, the Call kept for the namedtuple rule), "class", "def", "param",
"assign" (any other target: assignment, loop, with, walrus, comprehension) and "other" (except
... as, match captures). A name with no binding is a builtin or a global the runner provides.
"""

from . import nodes as ast  # the ast module's nodes and walkers, without its import cost

_Store = ast.Store


class Bindings:
    __slots__ = ("kinds", "calls")

    def __init__(self, checker):
        kinds = {}
        calls = {}
        alias_targets = checker.alias_targets
        call_targets = checker.call_targets
        annotation_only = checker.annotation_only
        for node in [n for n in checker.names if n.ctx.__class__ is _Store]:
            key = id(node)
            if key in annotation_only:
                continue    # `x: int` in a class body binds nothing
            if key in alias_targets:
                kind = "alias"
            elif key in call_targets:
                kind = "call"
                calls.setdefault(node.id, []).append(call_targets[key])
            else:
                kind = "assign"
            kinds.setdefault(node.id, set()).add(kind)
        for names, kind in ((checker.params, "param"), (checker.defs, "def"),
                            (checker.classes, "class"), (checker.import_names, "import"),
                            (checker.others, "other")):
            for name in names:
                kinds.setdefault(name, set()).add(kind)
        self.kinds = kinds
        self.calls = calls

    def of(self, name):
        """The set of binding kinds of `name` (empty: a builtin or a runner global)."""
        return self.kinds.get(name, _EMPTY)


_EMPTY = frozenset()
