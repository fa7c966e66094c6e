"""Rule tool-not-awaited: a host tool call whose coroutine is used as if it were the result.

Tool functions and `call_tool(...)` are coroutine functions: `r = add(a=1, b=2)` gives a
coroutine, and the run would "succeed" printing `<coroutine object ...>`. Code written for
frameworks whose tools are synchronous (Microsoft Agent Framework's Hyperlight CodeAct) does
exactly that, so the call is refused here with the line and "add await".

A call is fine when its coroutine reaches something that runs it:
  * `await` (directly, or around a container, comprehension or fan-out holding it);
  * an argument of asyncio's fan-out and scheduling functions (FANOUT, by name: `gather`,
    `create_task`, `wait`, `TaskGroup.create_task` ...), directly or inside a list, tuple, set,
    comprehension or `*` argument;
  * a name (or a container the call is appended to or stored in) that is later awaited, passed
    to a fan-out, or iterated by a `for` loop whose variable is awaited;
  * `return` / `yield` / a lambda body: the coroutine is handed to the caller, whose use is
    checked where it is awaited (and at run time, where an un-awaited tool coroutine is reported
    in the result's message).
Anything else (a bare statement, an argument of print, an f-string, a name never awaited) is
refused. Names the code binds itself (`def add(...)`, `add = ...`, a parameter) are not tools.
Static and by name: a coroutine moved through other objects is left to the run-time report.
"""

from . import nodes as ast  # the ast module's nodes and walkers, without its import cost
import keyword

from . import report as R

# asyncio's functions that run or schedule the coroutines they are given, by attribute or name.
FANOUT = frozenset({
    "gather", "wait", "wait_for", "create_task", "ensure_future", "shield", "as_completed",
    "run", "run_until_complete", "run_coroutine_threadsafe",
})

# Container methods that store their argument in the receiver.
_STORE_METHODS = frozenset({"append", "add", "extend", "insert", "appendleft", "put_nowait"})

_CONTAINERS = (ast.List, ast.Tuple, ast.Set, ast.Starred, ast.Dict)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_HANDED_ON = (ast.Return, ast.Yield, ast.YieldFrom, ast.Lambda)

HINT = ("add await: `result = await {name}(...)`; to run calls concurrently pass them to "
        "`await asyncio.gather(...)`")


def _func_name(call):
    f = call.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return f.attr
    return None


def _names_in(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _target_names(target):
    """Names a value assigned to `target` ends up under: the name itself, or the container of
    a subscript store (`d[k] = call`)."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
        return {target.value.id}
    return set()


class _Facts:
    """One walk of the tree: each node's parent, the candidate calls, the names the code binds
    itself, and the names whose value reaches an await or a fan-out (`consumed`)."""

    def __init__(self, tree, names):
        self.parents = {}
        self.calls = []
        bound = self.bound = set()
        consumed = self.consumed = set()
        loops = []
        parents = self.parents
        Name, Call, Await = ast.Name, ast.Call, ast.Await
        defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        iter_fields = ast.iter_child_nodes
        stack = [tree]
        while stack:
            node = stack.pop()
            cls = node.__class__
            if cls is Name:
                if not isinstance(node.ctx, ast.Load):
                    bound.add(node.id)
                continue
            if cls is Call:
                fname = _func_name(node)
                if fname in FANOUT:
                    for a in node.args:
                        consumed |= _names_in(a)
                    for k in node.keywords:
                        consumed |= _names_in(k.value)
                if node.func.__class__ is Name and node.func.id in names:
                    self.calls.append(node)
            elif cls is Await:
                if node.value.__class__ is Name:  # `await c`; `await f(c)` awaits f's result
                    consumed.add(node.value.id)
            elif cls in defs:
                bound.add(node.name)
            elif cls is ast.arg:
                bound.add(node.arg)
            elif cls is ast.alias:
                bound.add(node.asname or node.name.split(".")[0])
            elif cls is ast.ExceptHandler or cls is ast.MatchAs or cls is ast.MatchStar:
                if node.name:
                    bound.add(node.name)
            elif cls is ast.MatchMapping and node.rest:
                bound.add(node.rest)
            elif cls in (ast.For, ast.AsyncFor, ast.comprehension):
                if node.iter.__class__ is Name:
                    loops.append((node.iter.id, _names_in(node.target)))
            for child in iter_fields(node):
                parents[child] = node
                stack.append(child)
        changed = True
        while changed:  # `for c in coros: await c` consumes coros; nested loops take passes
            changed = False
            for source, targets in loops:
                if source not in consumed and not consumed.isdisjoint(targets):
                    consumed.add(source)
                    changed = True


def find_unawaited(tree, code, tool_names):
    """(line, col, rule, message, hint) findings for tool calls whose coroutine is not awaited.
    `tool_names` are the host's tool names; `call_tool` is always one."""
    names = {"call_tool"}
    names.update(n for n in tool_names
                 if isinstance(n, str) and n.isidentifier() and not keyword.iskeyword(n))
    if not any(n in code for n in names):
        return []
    # The usual code awaits every call where it makes it: then no walk is needed. A textual
    # `name(` (whitespace or a line continuation between) not right after `await` needs one.
    import re  # here: importing the validator stays light (test_api.test_importing_is_light)
    pattern = re.compile(r"(await[\s\\]+)?\b(?:%s)[\s\\]*\("
                         % "|".join(re.escape(n) for n in sorted(names)))
    if all(m.group(1) for m in pattern.finditer(code)):
        return []
    facts = _Facts(tree, names)
    found = []
    for call in facts.calls:
        name = call.func.id
        if name in facts.bound:
            continue  # the code's own function or variable, not the tool
        if not _reaches_runner(call, facts.parents, facts.consumed):
            found.append((call.lineno, call.col_offset, R.TOOL_NOT_AWAITED,
                          "%s(...) on line %d is not awaited: its value is a coroutine, not "
                          "the tool's result; add await" % (name, call.lineno),
                          HINT.format(name=name)))
    return found


def _reaches_runner(call, parents, consumed):
    node = call
    while True:
        parent = parents.get(node)
        if parent is None:
            return False
        if isinstance(parent, ast.Await) or isinstance(parent, _HANDED_ON):
            return True
        if isinstance(parent, ast.keyword):
            node = parent
            continue
        if isinstance(parent, ast.Call):
            if node is parent.func:
                return False  # add(...)(...) calls the coroutine
            fname = _func_name(parent)
            if fname in FANOUT:
                return True
            if (fname in _STORE_METHODS and isinstance(parent.func, ast.Attribute)):
                return bool(_names_in(parent.func.value) & consumed)
            return False
        if isinstance(parent, _CONTAINERS):
            node = parent
            continue
        if isinstance(parent, _COMPREHENSIONS):
            # The element (or a dict comprehension's value), not the iterable or a condition.
            if node is getattr(parent, "elt", None) or node is getattr(parent, "value", None):
                node = parent
                continue
            return False
        if isinstance(parent, ast.IfExp) and node is not parent.test:
            node = parent
            continue
        if isinstance(parent, ast.Assign):
            targets = set()
            for t in parent.targets:
                targets |= _target_names(t)
            return bool(targets & consumed)
        if isinstance(parent, (ast.AnnAssign, ast.NamedExpr)):
            return bool(_target_names(parent.target) & consumed)
        return False
